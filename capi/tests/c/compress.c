/* DOCA Compress from C, at the API level it is built for (25, 26 or 27): a file compressed
 * with a compress deflate task and decompressed back with a decompress deflate task (the
 * bytes and zlib's CRC-32 and Adler-32, given by the test, compared); then the failures: a
 * destination too small (DOCA_ERROR_TOO_BIG), corrupt input (DOCA_ERROR_INVALID_VALUE), a
 * task without a destination refused by try_submit; each failure fatal to the context, as on
 * DOCA's engine (freed, restarted). Levels 25/26: an LZ4 frame with the decompress LZ4 task.
 * Level 27: the frame's block sequence with the LZ4 stream task (its flags set and read
 * back, wrong flags refused) and one LZ4 block with the LZ4 block task (xxHash-32 compared).
 * Exits 0 and prints "ok" when every check holds.
 * Usage: compress DATA LZ4_FRAME LZ4_STREAM LZ4_BLOCK CRC ADLER XXH (checksums in hex) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "open.h"
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_compress.h>
#include <doca_ctx.h>
#include <doca_mmap.h>
#include <doca_pe.h>

static int done, failed;
static doca_error_t last_error = DOCA_SUCCESS;
static uint32_t last_crc, last_second;

static void deflate_done(struct doca_compress_task_compress_deflate *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_crc = doca_compress_task_compress_deflate_get_crc_cs(task);
	last_second = doca_compress_task_compress_deflate_get_adler_cs(task);
	done++;
}

static void deflate_error(struct doca_compress_task_compress_deflate *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_compress_task_compress_deflate_as_task(task));
	failed++;
}

static void inflate_done(struct doca_compress_task_decompress_deflate *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_crc = doca_compress_task_decompress_deflate_get_crc_cs(task);
	last_second = doca_compress_task_decompress_deflate_get_adler_cs(task);
	done++;
}

static void inflate_error(struct doca_compress_task_decompress_deflate *task, union doca_data td,
			  union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_compress_task_decompress_deflate_as_task(task));
	failed++;
}

#if DOCA_EMU_API_LEVEL < 27
static void lz4_done(struct doca_compress_task_decompress_lz4 *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_crc = doca_compress_task_decompress_lz4_get_crc_cs(task);
	last_second = doca_compress_task_decompress_lz4_get_adler_cs(task);
	done++;
}

static void lz4_error(struct doca_compress_task_decompress_lz4 *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_compress_task_decompress_lz4_as_task(task));
	failed++;
}
#else
static void stream_done(struct doca_compress_task_decompress_lz4_stream *task, union doca_data td,
			union doca_data cd)
{
	(void)td;
	(void)cd;
	last_crc = doca_compress_task_decompress_lz4_stream_get_crc_cs(task);
	last_second = doca_compress_task_decompress_lz4_stream_get_xxh_cs(task);
	done++;
}

static void stream_error(struct doca_compress_task_decompress_lz4_stream *task, union doca_data td,
			 union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_compress_task_decompress_lz4_stream_as_task(task));
	failed++;
}

static void block_done(struct doca_compress_task_decompress_lz4_block *task, union doca_data td,
		       union doca_data cd)
{
	(void)td;
	(void)cd;
	last_crc = doca_compress_task_decompress_lz4_block_get_crc_cs(task);
	last_second = doca_compress_task_decompress_lz4_block_get_xxh_cs(task);
	done++;
}

static void block_error(struct doca_compress_task_decompress_lz4_block *task, union doca_data td,
			union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_compress_task_decompress_lz4_block_as_task(task));
	failed++;
}
#endif

/* Progress until a callback more than `before` came. */
static void wait_for(struct doca_pe *pe, int before)
{
	int spins;

	for (spins = 0; done + failed == before && spins < 10000000; spins++)
		doca_pe_progress(pe);
	CHECK(done + failed == before + 1);
}

/* A failed task stopped its context: once its tasks are freed it reaches Idle; start it. */
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

/* A whole file in memory (NULL and a failed check when it cannot be read). */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p;

	CHECK(f != NULL);
	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	p = malloc(*len + 1);
	CHECK(fread(p, 1, *len, f) == *len);
	fclose(f);
	return p;
}

/* A started map over `mem`, added to `dev`. */
static struct doca_mmap *map_of(struct doca_dev *dev, void *mem, size_t len)
{
	struct doca_mmap *m;

	CHECK_CODE(doca_mmap_create(&m), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(m, mem, len), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(m, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(m, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(m), DOCA_SUCCESS);
	return m;
}

/* The destination's data compared with `want`. */
static void same_data(struct doca_buf *buf, const char *want, size_t want_len)
{
	void *data;
	size_t len = 0;

	CHECK_CODE(doca_buf_get_data(buf, &data), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_data_len(buf, &len), DOCA_SUCCESS);
	CHECK(len == want_len);
	CHECK(len == want_len && memcmp(data, want, len) == 0);
}

int main(int argc, char **argv)
{
	struct doca_dev *dev;
	struct doca_devinfo *info;
	struct doca_pe *pe;
	struct doca_compress *cmp;
	struct doca_ctx *ctx;
	struct doca_mmap *smap, *zmap, *omap, *fmap;
	struct doca_buf_inventory *inv;
	struct doca_buf *src, *zdst, *zsrc, *odst, *small, *bad;
	struct doca_compress_task_compress_deflate *ctask;
	struct doca_compress_task_decompress_deflate *dtask;
	union doca_data ud = {.u64 = 0};
	uint32_t max_tasks = 0, max_list = 0, want_crc, want_adler, want_xxh;
	uint64_t max_size = 0;
	size_t len = 0, flen = 0, slen = 0, blen = 0, zlen = 0;
	char *data, *frame, *stream, *block, *zmem, *omem;
	static char junk[64];
	int before;

	if (argc != 8) {
		fprintf(stderr, "usage: compress DATA LZ4_FRAME LZ4_STREAM LZ4_BLOCK CRC ADLER XXH\n");
		return 2;
	}
	data = slurp(argv[1], &len);
	frame = slurp(argv[2], &flen);
	stream = slurp(argv[3], &slen);
	block = slurp(argv[4], &blen);
	if (data == NULL || frame == NULL || stream == NULL || block == NULL)
		return checks_result();
	want_crc = (uint32_t)strtoul(argv[5], NULL, 16);
	want_adler = (uint32_t)strtoul(argv[6], NULL, 16);
	want_xxh = (uint32_t)strtoul(argv[7], NULL, 16);
	zmem = calloc(1, len + 4096);
	omem = calloc(1, len + 4096);
	memset(junk, 0xff, sizeof(junk)); /* block type 3: not DEFLATE */

	CHECK_CODE(open_dev("03:00.0", &dev), DOCA_SUCCESS);
	info = doca_dev_as_devinfo(dev);
	CHECK_CODE(doca_compress_cap_task_compress_deflate_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_cap_task_decompress_deflate_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_cap_task_compress_deflate_get_max_buf_size(info, &max_size), DOCA_SUCCESS);
	CHECK(max_size >= len);
	CHECK_CODE(doca_compress_cap_task_decompress_deflate_get_max_buf_size(info, &max_size), DOCA_SUCCESS);
	CHECK(max_size >= len);
	CHECK_CODE(doca_compress_cap_task_compress_deflate_get_max_buf_list_len(info, &max_list), DOCA_SUCCESS);
	CHECK(max_list >= 1);
	CHECK_CODE(doca_compress_cap_task_decompress_deflate_get_max_buf_list_len(info, &max_list), DOCA_SUCCESS);
	CHECK(max_list >= 1);
	CHECK_CODE(doca_compress_cap_task_compress_deflate_is_supported(NULL), DOCA_ERROR_INVALID_VALUE);
#if DOCA_EMU_API_LEVEL < 27
	CHECK_CODE(doca_compress_cap_task_decompress_lz4_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_cap_task_decompress_lz4_get_max_buf_size(info, &max_size), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_cap_task_decompress_lz4_get_max_buf_list_len(info, &max_list), DOCA_SUCCESS);
#else
	CHECK_CODE(doca_compress_cap_task_decompress_lz4_stream_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_cap_task_decompress_lz4_stream_get_max_buf_size(info, &max_size), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_cap_task_decompress_lz4_stream_get_max_buf_list_len(info, &max_list), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_cap_task_decompress_lz4_block_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_cap_task_decompress_lz4_block_get_max_buf_size(info, &max_size), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_cap_task_decompress_lz4_block_get_max_buf_list_len(info, &max_list), DOCA_SUCCESS);
#endif
	CHECK(max_size >= len && max_list >= 1);

	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_create(dev, &cmp), DOCA_SUCCESS);
#if DOCA_EMU_API_LEVEL == 25
	CHECK_CODE(doca_compress_get_max_num_tasks(cmp, &max_tasks), DOCA_SUCCESS);
#else
	CHECK_CODE(doca_compress_cap_get_max_num_tasks(cmp, &max_tasks), DOCA_SUCCESS);
#endif
	CHECK(max_tasks >= 2);
	ctx = doca_compress_as_ctx(cmp);
	CHECK(ctx != NULL);
	CHECK_CODE(doca_compress_task_compress_deflate_set_conf(cmp, deflate_done, deflate_error, max_tasks + 1),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_compress_task_compress_deflate_set_conf(cmp, deflate_done, deflate_error, 2), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_task_decompress_deflate_set_conf(cmp, inflate_done, inflate_error, 2), DOCA_SUCCESS);
#if DOCA_EMU_API_LEVEL < 27
	CHECK_CODE(doca_compress_task_decompress_lz4_set_conf(cmp, lz4_done, lz4_error, 1), DOCA_SUCCESS);
#else
	CHECK_CODE(doca_compress_task_decompress_lz4_stream_set_conf(cmp, stream_done, stream_error, 1), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_task_decompress_lz4_block_set_conf(cmp, block_done, block_error, 1), DOCA_SUCCESS);
#endif
	CHECK_CODE(doca_pe_connect_ctx(pe, ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_task_decompress_deflate_set_conf(cmp, inflate_done, inflate_error, 2),
		   DOCA_ERROR_BAD_STATE);

	smap = map_of(dev, data, len + 1);
	zmap = map_of(dev, zmem, len + 4096);
	omap = map_of(dev, omem, len + 4096);
	fmap = map_of(dev, junk, sizeof(junk));
	CHECK_CODE(doca_buf_inventory_create(16, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);

	/* Compress the file. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, smap, data, len, &src), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, zmap, zmem, len + 4096, &zdst), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_task_compress_deflate_alloc_init(cmp, src, NULL, ud, &ctask), DOCA_SUCCESS);
	CHECK(doca_compress_task_compress_deflate_get_dst(ctask) == NULL);
	CHECK_CODE(doca_task_try_submit(doca_compress_task_compress_deflate_as_task(ctask)), DOCA_ERROR_INVALID_VALUE);
	doca_compress_task_compress_deflate_set_dst(ctask, zdst);
	CHECK(doca_compress_task_compress_deflate_get_src(ctask) == src);
	CHECK(doca_compress_task_compress_deflate_get_dst(ctask) == zdst);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_compress_task_compress_deflate_as_task(ctask)), DOCA_SUCCESS);
	CHECK(done == 0); /* the engine's work, inside progress */
	wait_for(pe, before);
	CHECK(done == 1 && last_crc == want_crc && last_second == want_adler);
	CHECK(doca_compress_task_compress_deflate_get_crc_cs(ctask) == want_crc);
	CHECK_CODE(doca_buf_get_data_len(zdst, &zlen), DOCA_SUCCESS);
	CHECK(zlen > 0 && zlen < len);
	doca_task_free(doca_compress_task_compress_deflate_as_task(ctask));

	/* Decompress it back. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, zmap, zmem, zlen, &zsrc), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, omap, omem, len + 4096, &odst), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_task_decompress_deflate_alloc_init(cmp, zsrc, odst, ud, &dtask), DOCA_SUCCESS);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_compress_task_decompress_deflate_as_task(dtask)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK(done == 2 && last_crc == want_crc && last_second == want_adler);
	same_data(odst, data, len);

	/* A destination too small for the output: DOCA_ERROR_TOO_BIG, fatal to the context. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, omap, omem, len / 2, &small), DOCA_SUCCESS);
	doca_compress_task_decompress_deflate_set_dst(dtask, small);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_compress_task_decompress_deflate_as_task(dtask)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK(failed == 1);
	CHECK_CODE(last_error, DOCA_ERROR_TOO_BIG);
	doca_task_free(doca_compress_task_decompress_deflate_as_task(dtask));
	restart(pe, ctx);

	/* Corrupt input: DOCA_ERROR_INVALID_VALUE. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, fmap, junk, sizeof(junk), &bad), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_reset_data_len(small), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_task_decompress_deflate_alloc_init(cmp, bad, small, ud, &dtask), DOCA_SUCCESS);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_compress_task_decompress_deflate_as_task(dtask)), DOCA_SUCCESS);
	wait_for(pe, before);
	CHECK(failed == 2);
	CHECK_CODE(last_error, DOCA_ERROR_INVALID_VALUE);
	doca_task_free(doca_compress_task_decompress_deflate_as_task(dtask));
	restart(pe, ctx);
	CHECK_CODE(doca_buf_dec_refcount(bad, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(zsrc, NULL), DOCA_SUCCESS);

	/* LZ4: the frame's bytes land in odst again. */
	CHECK_CODE(doca_buf_reset_data_len(odst), DOCA_SUCCESS);
	{
		struct doca_mmap *lmap;
		struct doca_buf *lsrc;
#if DOCA_EMU_API_LEVEL < 27
		struct doca_compress_task_decompress_lz4 *ltask;

		lmap = map_of(dev, frame, flen);

		CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, lmap, frame, flen, &lsrc), DOCA_SUCCESS);
		CHECK_CODE(doca_compress_task_decompress_lz4_alloc_init(cmp, lsrc, odst, ud, &ltask), DOCA_SUCCESS);
		CHECK(doca_compress_task_decompress_lz4_get_src(ltask) == lsrc);
		before = done + failed;
		CHECK_CODE(doca_task_submit(doca_compress_task_decompress_lz4_as_task(ltask)), DOCA_SUCCESS);
		wait_for(pe, before);
		CHECK(done == 3 && last_crc == want_crc && last_second == want_adler);
		same_data(odst, data, len);
		doca_task_free(doca_compress_task_decompress_lz4_as_task(ltask));
		(void)want_xxh;
		(void)block;
		(void)blen;
#else
		struct doca_compress_task_decompress_lz4_stream *stask;
		struct doca_compress_task_decompress_lz4_block *btask;
		struct doca_mmap *bmap;
		struct doca_buf *bsrc;

		(void)frame;
		lmap = map_of(dev, stream, slen);
		CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, lmap, stream, slen, &lsrc), DOCA_SUCCESS);
		/* The stream's blocks carry checksums and refer to each other: say so. */
		CHECK_CODE(doca_compress_task_decompress_lz4_stream_alloc_init(cmp, 0, 1, lsrc, odst, ud, &stask),
			   DOCA_SUCCESS);
		CHECK(doca_compress_task_decompress_lz4_stream_get_has_block_checksum(stask) == 0);
		CHECK(doca_compress_task_decompress_lz4_stream_get_are_blocks_independent(stask) == 1);
		doca_compress_task_decompress_lz4_stream_set_has_block_checksum(stask, 1);
		doca_compress_task_decompress_lz4_stream_set_are_blocks_independent(stask, 0);
		CHECK(doca_compress_task_decompress_lz4_stream_get_has_block_checksum(stask) == 1);
		CHECK(doca_compress_task_decompress_lz4_stream_get_are_blocks_independent(stask) == 0);
		CHECK(doca_compress_task_decompress_lz4_stream_get_src(stask) == lsrc);
		CHECK(doca_compress_task_decompress_lz4_stream_get_dst(stask) == odst);
		before = done + failed;
		CHECK_CODE(doca_task_submit(doca_compress_task_decompress_lz4_stream_as_task(stask)), DOCA_SUCCESS);
		wait_for(pe, before);
		CHECK(done == 3 && last_crc == want_crc && last_second == want_xxh);
		same_data(odst, data, len);
		/* Without the block checksums announced, a checksum is read as a block size. */
		CHECK_CODE(doca_buf_reset_data_len(odst), DOCA_SUCCESS);
		doca_compress_task_decompress_lz4_stream_set_has_block_checksum(stask, 0);
		before = done + failed;
		CHECK_CODE(doca_task_submit(doca_compress_task_decompress_lz4_stream_as_task(stask)), DOCA_SUCCESS);
		wait_for(pe, before);
		CHECK(failed == 3);
		CHECK_CODE(last_error, DOCA_ERROR_INVALID_VALUE);
		doca_task_free(doca_compress_task_decompress_lz4_stream_as_task(stask));
		restart(pe, ctx);

		/* One block. */
		CHECK_CODE(doca_buf_reset_data_len(odst), DOCA_SUCCESS);
		bmap = map_of(dev, block, blen);
		CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, bmap, block, blen, &bsrc), DOCA_SUCCESS);
		CHECK_CODE(doca_compress_task_decompress_lz4_block_alloc_init(cmp, NULL, odst, ud, &btask),
			   DOCA_SUCCESS);
		doca_compress_task_decompress_lz4_block_set_src(btask, bsrc);
		CHECK(doca_compress_task_decompress_lz4_block_get_src(btask) == bsrc);
		CHECK(doca_compress_task_decompress_lz4_block_get_dst(btask) == odst);
		before = done + failed;
		CHECK_CODE(doca_task_try_submit(doca_compress_task_decompress_lz4_block_as_task(btask)), DOCA_SUCCESS);
		wait_for(pe, before);
		CHECK(done == 4 && last_crc == want_crc && last_second == want_xxh);
		CHECK(doca_compress_task_decompress_lz4_block_get_xxh_cs(btask) == want_xxh);
		same_data(odst, data, len);
		doca_task_free(doca_compress_task_decompress_lz4_block_as_task(btask));
		CHECK_CODE(doca_buf_dec_refcount(bsrc, NULL), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_stop(bmap), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_destroy(bmap), DOCA_SUCCESS);
#endif
		CHECK_CODE(doca_buf_dec_refcount(lsrc, NULL), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_stop(lmap), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_destroy(lmap), DOCA_SUCCESS);
	}

	/* Tear down as the samples do. */
	CHECK_CODE(doca_ctx_stop(ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_compress_destroy(cmp), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(src, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(zdst, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(odst, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(small, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_stop(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(smap), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(smap), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(zmap), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(zmap), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(omap), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(omap), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(fmap), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(fmap), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dev), DOCA_SUCCESS);
	free(data);
	free(frame);
	free(stream);
	free(block);
	free(zmem);
	free(omem);
	return checks_result();
}
