/* AES-GCM from C: the capabilities (both spellings of the IV one), keys, an encrypt task on
 * test case 16 of the GCM specification (256-bit key, 96-bit IV, AAD) giving AAD, ciphertext
 * and tag, its decrypt task giving AAD and plaintext back, the 12-byte tag, the accessors,
 * and each failure with its status: a long IV or an odd tag size at alloc_init, a tag
 * mismatch (DOCA_ERROR_IO_FAILED, nothing written), a destroyed key, a destination too
 * small (each failure fatal to the context, as on DOCA's engine: freed, restarted); a
 * destination in a second map over the source's own bytes. Exits 0 and prints "ok" when
 * every check holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "open.h"
#include <doca_aes_gcm.h>
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_mmap.h>
#include <doca_pe.h>

static int done, failed;
static doca_error_t last_error = DOCA_SUCCESS;

static void enc_done(struct doca_aes_gcm_task_encrypt *task, union doca_data td, union doca_data cd)
{
	(void)task;
	(void)td;
	(void)cd;
	done++;
}

static void enc_error(struct doca_aes_gcm_task_encrypt *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_aes_gcm_task_encrypt_as_task(task));
	failed++;
}

static void dec_done(struct doca_aes_gcm_task_decrypt *task, union doca_data td, union doca_data cd)
{
	(void)task;
	(void)td;
	(void)cd;
	done++;
}

static void dec_error(struct doca_aes_gcm_task_decrypt *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_aes_gcm_task_decrypt_as_task(task));
	failed++;
}

static void wait_for(struct doca_pe *pe, int before)
{
	int spins;

	for (spins = 0; done + failed == before && spins < 10000000; spins++)
		doca_pe_progress(pe);
	CHECK(done + failed == before + 1);
}

static void restart(struct doca_pe *pe, struct doca_ctx *ctx)
{
	enum doca_ctx_states st = DOCA_CTX_STATE_RUNNING;
	int spins;

	for (spins = 0; st != DOCA_CTX_STATE_IDLE && spins < 1000000; spins++) {
		doca_pe_progress(pe);
		CHECK_CODE(doca_ctx_get_state(ctx, &st), DOCA_SUCCESS);
	}
	CHECK(st == DOCA_CTX_STATE_IDLE);
	CHECK_CODE(doca_ctx_start(ctx), DOCA_SUCCESS);
}

static size_t unhex(const char *s, uint8_t *out)
{
	size_t n = strlen(s) / 2, i;
	unsigned int b;

	for (i = 0; i < n; i++) {
		sscanf(s + 2 * i, "%2x", &b);
		out[i] = (uint8_t)b;
	}
	return n;
}

static size_t data_of(struct doca_buf *buf, uint8_t **data)
{
	size_t len = 0;

	CHECK_CODE(doca_buf_get_data(buf, (void **)data), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_data_len(buf, &len), DOCA_SUCCESS);
	return len;
}

int main(void)
{
	struct doca_dev *dev;
	struct doca_devinfo *info;
	struct doca_pe *pe;
	struct doca_aes_gcm *gcm;
	struct doca_ctx *ctx;
	struct doca_mmap *map;
	struct doca_buf_inventory *inv;
	struct doca_buf *src, *dst, *back, *small;
	struct doca_aes_gcm_key *key, *gone, *none = NULL;
	struct doca_aes_gcm_task_encrypt *enc;
	struct doca_aes_gcm_task_decrypt *dec;
	union doca_data ud = {.u64 = 0};
	uint8_t raw[32], iv[12], plain[60], aad[20], cipher[60], tag[16], want[96], *mem, *out;
	const uint8_t *got_iv;
	uint32_t n32, n25, max_tasks;
	uint64_t max_buf;
	size_t len;
	int before, i, failed_before = 0;
	struct doca_mmap *twin[2];
	struct doca_buf *src2, *dst2;
	uint8_t *mem2;

	/* Test case 16 (McGrew and Viega): the key is test case 3's twice. */
	unhex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308", raw);
	unhex("cafebabefacedbaddecaf888", iv);
	unhex("d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
	      plain);
	unhex("feedfacedeadbeeffeedfacedeadbeefabaddad2", aad);
	unhex("522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
	      cipher);
	unhex("76fc6ece0f4e1768cddf8853bb2d551b", tag);

	CHECK_CODE(open_dev("03:00.0", &dev), DOCA_SUCCESS);
	info = doca_dev_as_devinfo(dev);
	CHECK_CODE(doca_aes_gcm_cap_task_encrypt_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_cap_task_decrypt_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_cap_task_encrypt_get_max_iv_len(info, &n32), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_cap_task_decrypt_get_max_iv_length(info, &n25), DOCA_SUCCESS);
	CHECK(n32 == 12 && n25 == 12);
	CHECK_CODE(doca_aes_gcm_cap_task_encrypt_is_tag_96_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_cap_task_decrypt_is_tag_128_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_cap_task_encrypt_is_key_type_supported(info, DOCA_AES_GCM_KEY_128), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_cap_task_decrypt_is_key_type_supported(info, DOCA_AES_GCM_KEY_256), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_cap_task_encrypt_is_key_type_supported(info, (enum doca_aes_gcm_key_type)3),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_aes_gcm_cap_task_encrypt_get_max_buf_size(info, &max_buf), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_cap_task_decrypt_get_max_list_buf_num_elem(info, &n32), DOCA_SUCCESS);
	CHECK(max_buf >= 4096 && n32 >= 2);
	CHECK_CODE(doca_aes_gcm_cap_task_encrypt_get_max_iv_len(NULL, &n32), DOCA_ERROR_INVALID_VALUE);

	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_create(dev, &gcm), DOCA_SUCCESS);
	ctx = doca_aes_gcm_as_ctx(gcm);
	CHECK(ctx != NULL);
	CHECK_CODE(doca_aes_gcm_cap_get_max_num_tasks(gcm, &max_tasks), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_task_encrypt_set_conf(gcm, enc_done, enc_error, max_tasks), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_task_decrypt_set_conf(gcm, dec_done, dec_error, 2), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_aes_gcm_task_encrypt_set_conf(gcm, enc_done, enc_error, 2), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_task_decrypt_set_conf(gcm, dec_done, dec_error, 2), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_connect_ctx(pe, ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(ctx), DOCA_SUCCESS);

	/* Keys: 128 and 256 bits; another type is not supported. */
	CHECK_CODE(doca_aes_gcm_key_create(gcm, raw, (enum doca_aes_gcm_key_type)5, &key), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_aes_gcm_key_create(gcm, NULL, DOCA_AES_GCM_KEY_256, &key), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_aes_gcm_key_create(gcm, raw, DOCA_AES_GCM_KEY_128, &gone), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_key_create(gcm, raw, DOCA_AES_GCM_KEY_256, &key), DOCA_SUCCESS);

	/* One map: the source (AAD then plaintext) at 0, destinations at 256, 512 and 768. */
	mem = calloc(1, 1024);
	memcpy(mem, aad, 20);
	memcpy(mem + 20, plain, 60);
	CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, mem, 1024), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(map, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(map), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_create(8, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, map, mem, 80, &src), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, mem + 256, 256, &dst), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, mem + 512, 256, &back), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, mem + 768, 95, &small), DOCA_SUCCESS);

	/* alloc_init refuses an IV above 12 bytes and a tag of another size than 12 or 16. */
	CHECK_CODE(doca_aes_gcm_task_encrypt_alloc_init(gcm, src, dst, key, iv, 13, 16, 20, ud, &enc),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_aes_gcm_task_encrypt_alloc_init(gcm, src, dst, key, iv, 12, 8, 20, ud, &enc),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_aes_gcm_task_encrypt_alloc_init(gcm, src, dst, key, NULL, 12, 16, 20, ud, &enc),
		   DOCA_ERROR_INVALID_VALUE);

	/* Encrypt: AAD, ciphertext, tag after the destination's data. */
	CHECK_CODE(doca_aes_gcm_task_encrypt_alloc_init(gcm, src, dst, gone, iv, 12, 16, 0, ud, &enc), DOCA_SUCCESS);
	CHECK(doca_aes_gcm_task_encrypt_get_key(enc) == gone);
	doca_aes_gcm_task_encrypt_set_key(enc, key);
	doca_aes_gcm_task_encrypt_set_aad_size(enc, 20);
	CHECK(doca_aes_gcm_task_encrypt_get_key(enc) == key && doca_aes_gcm_task_encrypt_get_aad_size(enc) == 20 &&
	      doca_aes_gcm_task_encrypt_get_tag_size(enc) == 16);
	CHECK(doca_aes_gcm_task_encrypt_get_src(enc) == src && doca_aes_gcm_task_encrypt_get_dst(enc) == dst);
	got_iv = doca_aes_gcm_task_encrypt_get_iv(enc, &n32);
	CHECK(got_iv != NULL && n32 == 12 && memcmp(got_iv, iv, 12) == 0);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_aes_gcm_task_encrypt_as_task(enc)), DOCA_SUCCESS);
	CHECK(done == 0); /* the cipher is the engine's work, inside progress */
	wait_for(pe, before);
	CHECK(done == 1);
	memcpy(want, aad, 20);
	memcpy(want + 20, cipher, 60);
	memcpy(want + 80, tag, 16);
	len = data_of(dst, &out);
	CHECK(len == 96 && memcmp(out, want, 96) == 0);

	/* Decrypt it back: AAD and plaintext. */
	CHECK_CODE(doca_aes_gcm_task_decrypt_alloc_init(gcm, dst, back, key, iv, 12, 16, 20, ud, &dec), DOCA_SUCCESS);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_aes_gcm_task_decrypt_as_task(dec)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK(done == 2);
	len = data_of(back, &out);
	CHECK(len == 80 && memcmp(out, mem, 80) == 0);

	/* The 12-byte tag is the 16-byte one's first 12 bytes. */
	CHECK_CODE(doca_buf_reset_data_len(dst), DOCA_SUCCESS);
	doca_aes_gcm_task_encrypt_set_tag_size(enc, 12);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_aes_gcm_task_encrypt_as_task(enc)), DOCA_SUCCESS);
	wait_for(pe, before);
	len = data_of(dst, &out);
	CHECK(len == 92 && memcmp(out, want, 92) == 0);

	/* A changed ciphertext byte: the tag does not match; nothing is written. */
	out[30] ^= 1;
	CHECK_CODE(doca_buf_reset_data_len(back), DOCA_SUCCESS);
	doca_aes_gcm_task_decrypt_set_tag_size(dec, 12);
	CHECK_CODE(doca_task_try_submit(doca_aes_gcm_task_decrypt_as_task(dec)), DOCA_SUCCESS);
	wait_for(pe, done + failed);
	CHECK(failed == 1);
	CHECK_CODE(last_error, DOCA_ERROR_IO_FAILED);
	CHECK(data_of(back, &out) == 0);
	/* (Idle once every task is freed, the encrypt task too.) */
	doca_task_free(doca_aes_gcm_task_decrypt_as_task(dec));
	doca_task_free(doca_aes_gcm_task_encrypt_as_task(enc));
	restart(pe, ctx);
	CHECK_CODE(doca_aes_gcm_task_encrypt_alloc_init(gcm, src, dst, key, iv, 12, 16, 20, ud, &enc), DOCA_SUCCESS);

	/* A setter cannot refuse: try_submit does (a 13-byte IV, whose copy is NULL). */
	doca_aes_gcm_task_encrypt_set_iv(enc, iv, 13);
	CHECK(doca_aes_gcm_task_encrypt_get_iv(enc, &n32) == NULL);
	CHECK_CODE(doca_task_try_submit(doca_aes_gcm_task_encrypt_as_task(enc)), DOCA_ERROR_INVALID_VALUE);
	doca_aes_gcm_task_encrypt_set_iv(enc, iv, 8);
	got_iv = doca_aes_gcm_task_encrypt_get_iv(enc, &n32);
	CHECK(got_iv != NULL && n32 == 8);

	/* A destination one byte short of AAD, ciphertext and tag. */
	doca_aes_gcm_task_encrypt_set_dst(enc, small);
	CHECK_CODE(doca_task_try_submit(doca_aes_gcm_task_encrypt_as_task(enc)), DOCA_ERROR_INVALID_VALUE);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_aes_gcm_task_encrypt_as_task(enc)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK_CODE(last_error, DOCA_ERROR_INVALID_VALUE);
	doca_task_free(doca_aes_gcm_task_encrypt_as_task(enc));
	restart(pe, ctx);
	CHECK_CODE(doca_aes_gcm_task_encrypt_alloc_init(gcm, src, dst, key, iv, 12, 16, 20, ud, &enc), DOCA_SUCCESS);

	/* A destroyed key. */
	CHECK_CODE(doca_buf_reset_data_len(dst), DOCA_SUCCESS);
	doca_aes_gcm_task_encrypt_set_key(enc, gone);
	CHECK_CODE(doca_aes_gcm_key_destroy(gone), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_key_destroy(gone), DOCA_ERROR_INVALID_VALUE);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_aes_gcm_task_encrypt_as_task(enc)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK_CODE(last_error, DOCA_ERROR_BAD_STATE);
	doca_aes_gcm_task_encrypt_set_key(enc, none);
	CHECK(doca_aes_gcm_task_encrypt_get_key(enc) == NULL);
	doca_task_free(doca_aes_gcm_task_encrypt_as_task(enc));
	restart(pe, ctx);

	/* Two maps over the same bytes: the destination, in the second, starts 16 bytes into
	 * the source, in the first. The engine tells the overlap by address and reads the
	 * whole source before it writes: the same bytes as into a destination apart. */
	mem2 = calloc(1, 256);
	memcpy(mem2, aad, 20);
	memcpy(mem2 + 20, plain, 60);
	for (i = 0; i < 2; i++) {
		CHECK_CODE(doca_mmap_create(&twin[i]), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_set_memrange(twin[i], mem2, 256), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_set_permissions(twin[i], DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_add_dev(twin[i], dev), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_start(twin[i]), DOCA_SUCCESS);
	}
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, twin[0], mem2, 80, &src2), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, twin[1], mem2 + 16, 112, &dst2), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_task_encrypt_alloc_init(gcm, src2, dst2, key, iv, 12, 16, 20, ud, &enc), DOCA_SUCCESS);
	before = done + failed;
	failed_before = failed;
	CHECK_CODE(doca_task_submit(doca_aes_gcm_task_encrypt_as_task(enc)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK(failed == failed_before);
	len = data_of(dst2, &out);
	CHECK(len == 96 && memcmp(out, want, 96) == 0);
	doca_task_free(doca_aes_gcm_task_encrypt_as_task(enc));
	doca_buf_dec_refcount(src2, NULL);
	doca_buf_dec_refcount(dst2, NULL);
	for (i = 0; i < 2; i++)
		CHECK_CODE(doca_mmap_destroy(twin[i]), DOCA_SUCCESS);
	free(mem2);

	CHECK_CODE(doca_aes_gcm_destroy(gcm), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_ctx_stop(ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_destroy(gcm), DOCA_ERROR_IN_USE); /* a key of it lives */
	CHECK(doca_aes_gcm_as_ctx(gcm) == ctx); /* refused: the context and its handles stay */
	CHECK_CODE(doca_aes_gcm_key_destroy(key), DOCA_SUCCESS);
	CHECK_CODE(doca_aes_gcm_destroy(gcm), DOCA_SUCCESS);
	doca_buf_dec_refcount(src, NULL);
	doca_buf_dec_refcount(dst, NULL);
	doca_buf_dec_refcount(back, NULL);
	doca_buf_dec_refcount(small, NULL);
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dev), DOCA_SUCCESS);
	free(mem);
	return checks_result();
}
