/* SHA the way DOCA's file_integrity application uses it: a file read into the application's
 * memory, its SHA-256 computed once with a hash task and once with one partial-hash task
 * submitted segment by segment (whole blocks, the last segment final), both compared with
 * the hex digest sha256sum printed for the file (argv[2]); then DOCA's rules: a destination
 * below the digest length, a non-final segment that is not whole blocks, the session's fixed
 * destination, resubmission after the final segment (each failure fatal to the context, as on
 * DOCA's engine: freed, restarted), the 2.5 names. Exits 0 and prints "ok"
 * when every check holds. Usage: sha_hash FILE SHA256_HEX */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "open.h"
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_mmap.h>
#include <doca_pe.h>
#include <doca_sha.h>

#define DST_LEN 256

static int done, failed;
static doca_error_t last_error = DOCA_SUCCESS;

static void hash_done(struct doca_sha_task_hash *task, union doca_data td, union doca_data cd)
{
	(void)task;
	(void)td;
	(void)cd;
	done++;
}

static void hash_error(struct doca_sha_task_hash *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_sha_task_hash_as_task(task));
	failed++;
}

static void partial_done(struct doca_sha_task_partial_hash *task, union doca_data td, union doca_data cd)
{
	(void)task;
	(void)td;
	(void)cd;
	done++;
}

static void partial_error(struct doca_sha_task_partial_hash *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_sha_task_partial_hash_as_task(task));
	failed++;
}

/* Progress until a callback more than `before` came. */
static void wait_for(struct doca_pe *pe, int before)
{
	int spins;

	for (spins = 0; done + failed == before && spins < 10000000; spins++)
		doca_pe_progress(pe);
	CHECK(done + failed == before + 1);
}

/* As on DOCA's engine, a failed task stopped its context: once its tasks are freed it reaches
 * Idle, and is started again. */
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

/* The destination's data as lowercase hex. */
static void hex_of(struct doca_buf *buf, char *out)
{
	void *data;
	size_t len = 0, i;

	CHECK_CODE(doca_buf_get_data(buf, &data), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_data_len(buf, &len), DOCA_SUCCESS);
	CHECK(len == 32);
	for (i = 0; i < len && i < 32; i++)
		sprintf(out + 2 * i, "%02x", ((unsigned char *)data)[i]);
	out[2 * i] = 0;
}

int main(int argc, char **argv)
{
	struct doca_dev *dev;
	struct doca_devinfo *info;
	struct doca_pe *pe;
	struct doca_sha *sha;
	struct doca_ctx *ctx;
	struct doca_mmap *map, *dmap;
	struct doca_buf_inventory *inv;
	struct doca_buf *src, *seg, *dst, *small;
	struct doca_sha_task_hash *hash;
	struct doca_sha_task_partial_hash *partial;
	union doca_data ud = {.u64 = 0};
	uint32_t min_dst, block, max_list, min_dst25;
	uint64_t max_src, max_src25;
	char *contents, *dmem, hex[2 * 64 + 1];
	size_t len, off, seg_len;
	int before, segments = 0;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: sha_hash FILE SHA256_HEX\n");
		return 2;
	}
	/* The file's contents in memory, as file_integrity reads them. */
	f = fopen(argv[1], "rb");
	CHECK(f != NULL);
	if (f == NULL)
		return checks_result();
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	contents = malloc(len + 1);
	CHECK(fread(contents, 1, len, f) == len);
	fclose(f);
	dmem = calloc(1, DST_LEN);

	CHECK_CODE(open_dev("b1:00.0", &dev), DOCA_SUCCESS);
	info = doca_dev_as_devinfo(dev);
	CHECK_CODE(doca_sha_cap_task_hash_get_supported(info, DOCA_SHA_ALGORITHM_SHA256), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_cap_task_partial_hash_get_supported(info, DOCA_SHA_ALGORITHM_SHA256), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_cap_task_hash_get_supported(info, (enum doca_sha_algorithm)7), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_sha_cap_get_min_dst_buf_size(info, DOCA_SHA_ALGORITHM_SHA256, &min_dst), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_cap_get_min_dst_buffer_size(info, DOCA_SHA_ALGORITHM_SHA512, &min_dst25), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_cap_get_partial_hash_block_size(info, DOCA_SHA_ALGORITHM_SHA256, &block), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_cap_get_max_src_buf_size(info, &max_src), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_cap_get_max_src_buffer_size(info, &max_src25), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_cap_get_max_list_buf_num_elem(info, &max_list), DOCA_SUCCESS);
	CHECK(min_dst == 32 && min_dst25 == 64 && block == 64 && max_src >= len && max_src == max_src25 &&
	      max_list >= 1);

	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_create(dev, &sha), DOCA_SUCCESS);
	ctx = doca_sha_as_ctx(sha);
	CHECK(ctx != NULL);
	CHECK_CODE(doca_sha_task_hash_set_conf(sha, hash_done, hash_error, 2), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_task_partial_hash_set_conf(sha, partial_done, partial_error, 1), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_connect_ctx(pe, ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(ctx), DOCA_SUCCESS);

	CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, contents, len + 1), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(map, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_create(&dmap), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(dmap, dmem, DST_LEN), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(dmap, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(dmap, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(dmap), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_create(8, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);

	/* One hash task over the whole file. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, map, contents, len, &src), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, dmap, dmem, min_dst, &dst), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_task_hash_alloc_init(sha, DOCA_SHA_ALGORITHM_SHA1, src, dst, ud, &hash), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_task_hash_set_algorithm(hash, DOCA_SHA_ALGORITHM_SHA256), DOCA_SUCCESS);
	CHECK(doca_sha_task_hash_get_algorithm(hash) == DOCA_SHA_ALGORITHM_SHA256);
	CHECK(doca_sha_task_hash_get_src(hash) == src && doca_sha_task_hash_get_dst(hash) == dst);
	CHECK_CODE(doca_sha_task_hash_set_src(hash, src), DOCA_SUCCESS);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_sha_task_hash_as_task(hash)), DOCA_SUCCESS);
	CHECK(done == 0); /* the hash is the engine's work, inside progress */
	wait_for(pe, before);
	CHECK(done == 1);
	hex_of(dst, hex);
	CHECK(strcmp(hex, argv[2]) == 0);

	/* A destination below the digest: try_submit refuses, submit reports it. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, dmap, dmem + 128, min_dst - 1, &small), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_task_hash_set_dst(hash, small), DOCA_SUCCESS);
	CHECK_CODE(doca_task_try_submit(doca_sha_task_hash_as_task(hash)), DOCA_ERROR_INVALID_VALUE);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_sha_task_hash_as_task(hash)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK(failed == 1);
	CHECK_CODE(last_error, DOCA_ERROR_INVALID_VALUE);
	doca_task_free(doca_sha_task_hash_as_task(hash));
	restart(pe, ctx);

	/* The same file in segments of whole blocks with one partial-hash task. */
	CHECK_CODE(doca_buf_reset_data_len(dst), DOCA_SUCCESS);
	memset(dmem, 0, DST_LEN);
	CHECK_CODE(doca_sha_task_partial_hash_alloc_init(sha, DOCA_SHA_ALGORITHM_SHA256, NULL, dst, ud, &partial),
		   DOCA_SUCCESS);
	seg_len = (size_t)block * 1000;
	for (off = 0; off < len; off += seg_len) {
		size_t n = len - off < seg_len ? len - off : seg_len;

		CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, map, contents + off, n, &seg), DOCA_SUCCESS);
		CHECK_CODE(doca_sha_task_partial_hash_set_src(partial, seg), DOCA_SUCCESS);
		CHECK(doca_sha_task_partial_hash_get_src(partial) == seg);
		if (off + n == len)
			CHECK_CODE(doca_sha_task_partial_hash_set_is_final_buf(partial), DOCA_SUCCESS);
		before = done + failed;
		CHECK_CODE(doca_task_submit(doca_sha_task_partial_hash_as_task(partial)), DOCA_SUCCESS);
		if (off == 0) {
			/* In flight: the partial hash is in progress. */
			CHECK_CODE(doca_sha_task_partial_hash_set_dst(partial, dst), DOCA_ERROR_BAD_STATE);
			CHECK_CODE(doca_sha_task_partial_hash_set_algorithm(partial, DOCA_SHA_ALGORITHM_SHA256),
				   DOCA_ERROR_BAD_STATE);
			CHECK_CODE(doca_sha_task_partial_hash_set_is_final_buf(partial), DOCA_ERROR_BAD_STATE);
		}
		wait_for(pe, before);
		CHECK(failed == 1);
		if (off + n < len) {
			CHECK(doca_sha_task_partial_hash_get_has_result(partial) == 0);
			CHECK_CODE(doca_sha_task_partial_hash_set_dst(partial, small), DOCA_ERROR_BAD_STATE);
			CHECK_CODE(doca_sha_task_partial_hash_set_algorithm(partial, DOCA_SHA_ALGORITHM_SHA1),
				   DOCA_ERROR_BAD_STATE);
		}
		CHECK_CODE(doca_buf_dec_refcount(seg, NULL), DOCA_SUCCESS);
		segments++;
	}
	CHECK(segments >= 2);
	CHECK(doca_sha_task_partial_hash_get_is_final(partial) == 1);
	CHECK(doca_sha_task_partial_hash_get_has_result(partial) == 1);
	CHECK(doca_sha_task_partial_hash_get_dst(partial) == dst);
	CHECK(doca_sha_task_partial_hash_get_algorithm(partial) == DOCA_SHA_ALGORITHM_SHA256);
	hex_of(dst, hex);
	CHECK(strcmp(hex, argv[2]) == 0);

	/* Submitting again after the final segment: BAD_STATE until reset. */
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_sha_task_partial_hash_as_task(partial)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK_CODE(last_error, DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_sha_task_partial_hash_reset(partial), DOCA_SUCCESS);
	CHECK(doca_sha_task_partial_hash_get_has_result(partial) == 0);
	CHECK(doca_sha_task_partial_hash_get_is_final(partial) == 0);
	/* The failure stopped the context: held in Stopping by the task kept, Idle once freed. */
	doca_task_free(doca_sha_task_partial_hash_as_task(partial));
	restart(pe, ctx);
	CHECK_CODE(doca_sha_task_partial_hash_alloc_init(sha, DOCA_SHA_ALGORITHM_SHA256, NULL, dst, ud, &partial),
		   DOCA_SUCCESS);

	/* A non-final segment that is not whole blocks: the error callback. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, map, contents, block + 1, &seg), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_task_partial_hash_set_src(partial, seg), DOCA_SUCCESS);
	CHECK_CODE(doca_task_try_submit(doca_sha_task_partial_hash_as_task(partial)), DOCA_ERROR_INVALID_VALUE);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_sha_task_partial_hash_as_task(partial)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK_CODE(last_error, DOCA_ERROR_INVALID_VALUE);
	doca_task_free(doca_sha_task_partial_hash_as_task(partial));
	restart(pe, ctx);
	CHECK_CODE(doca_sha_task_partial_hash_alloc_init(sha, DOCA_SHA_ALGORITHM_SHA256, seg, dst, ud, &partial),
		   DOCA_SUCCESS);
	/* The same bytes as a final segment (2.5 name) are fine: the session had no segment. */
	CHECK_CODE(doca_sha_task_partial_hash_set_is_final_buffer(partial), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_reset_data_len(dst), DOCA_SUCCESS);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_sha_task_partial_hash_as_task(partial)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK(doca_sha_task_partial_hash_get_has_result(partial) == 1);
	doca_task_free(doca_sha_task_partial_hash_as_task(partial));
	CHECK_CODE(doca_buf_dec_refcount(seg, NULL), DOCA_SUCCESS);

	CHECK_CODE(doca_sha_destroy(sha), DOCA_ERROR_IN_USE);
	CHECK_CODE(doca_ctx_stop(ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_sha_destroy(sha), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(src, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(dst, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(small, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(dmap), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(dmap), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dev), DOCA_SUCCESS);
	free(contents);
	free(dmem);
	return checks_result();
}
