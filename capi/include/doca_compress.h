/* doca-emu: DOCA Compress — DEFLATE compress and decompress tasks and LZ4 decompress tasks
 * over buffers of local memory maps, the functions of DOCA's doca_compress.h at each API
 * level: 40 at levels 25 and 26 (the LZ4 task takes a whole LZ4 frame; level 25 names the
 * pool query doca_compress_get_max_num_tasks), 56 at level 27 (the LZ4 task replaced by
 * LZ4 stream tasks, which take the blocks of an LZ4 frame without its header and footer, and
 * LZ4 block tasks, which take one block). The library exports every function at every level.
 *
 * The work happens inside doca_pe_progress, at most compress.bytes_per_pass source bytes
 * (1 MiB by default) per context per pass. Compress output is raw DEFLATE (no zlib or gzip
 * framing) that any inflater reads, not byte for byte what NVIDIA's hardware writes. The
 * output lands after the destination's data, whose data length grows by the output's length.
 * Checksums are of the uncompressed bytes: zlib's CRC-32 and Adler-32, xxHash-32 (seed 0)
 * byte-swapped (an LZ4 frame's stored content checksum read big-endian, as DOCA's
 * decompress_lz4_stream sample compares them).
 * doca_task_submit does not validate (a bad task completes through the error callback, and
 * the context stops); doca_task_try_submit validates first (DOCA_ERROR_INVALID_VALUE).
 * Statuses chosen here (DOCA documents none): corrupt or truncated input
 * DOCA_ERROR_INVALID_VALUE; an output larger than the destination's free room
 * DOCA_ERROR_TOO_BIG. */
#ifndef DOCA_EMU_COMPRESS_H_
#define DOCA_EMU_COMPRESS_H_

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>

#include "doca_buf.h"
#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_dev.h"
#include "doca_emu_api_level.h"
#include "doca_error.h"
#include "doca_pe.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_compress;
struct doca_compress_task_compress_deflate;
struct doca_compress_task_decompress_deflate;

/* On any device (host or DPU); DOCA_ERROR_NOT_SUPPORTED when the topology takes every task
 * type away (cap compress.<type> 0). */
DOCA_EXPERIMENTAL doca_error_t doca_compress_create(struct doca_dev *dev, struct doca_compress **compress);
/* Idle only (DOCA_ERROR_BAD_STATE otherwise). */
DOCA_EXPERIMENTAL doca_error_t doca_compress_destroy(struct doca_compress *compress);
DOCA_EXPERIMENTAL struct doca_ctx *doca_compress_as_ctx(struct doca_compress *compress);

/* The tasks of every type of one context together (cap compress.max_num_tasks). */
#if DOCA_EMU_API_LEVEL == 25
DOCA_EXPERIMENTAL doca_error_t doca_compress_get_max_num_tasks(struct doca_compress *compress,
							       uint32_t *max_num_tasks);
#else
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_get_max_num_tasks(struct doca_compress *compress,
								   uint32_t *max_num_tasks);
#endif

/* Compress deflate: the source compressed as raw DEFLATE (level 6). */
typedef void (*doca_compress_task_compress_deflate_completion_cb_t)(struct doca_compress_task_compress_deflate *task,
							union doca_data task_user_data,
							union doca_data ctx_user_data);
/* DOCA_ERROR_NOT_SUPPORTED when the topology takes the task type away (cap compress.compress_deflate 0). */
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_compress_deflate_is_supported(const struct doca_devinfo *devinfo);
/* The largest source (cap compress.max_buf_size) and source or destination list
 * (cap compress.max_buf_list_len); DOCA_ERROR_NOT_SUPPORTED without the task type. */
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_compress_deflate_get_max_buf_size(const struct doca_devinfo *devinfo,
									uint64_t *max_buffer_size);
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_compress_deflate_get_max_buf_list_len(const struct doca_devinfo *devinfo,
									    uint32_t *max_buf_list_len);
/* Idle only; num_tasks 1 or more, with the other task types' at most cap compress.max_num_tasks. */
DOCA_EXPERIMENTAL doca_error_t
doca_compress_task_compress_deflate_set_conf(struct doca_compress *compress,
				doca_compress_task_compress_deflate_completion_cb_t task_completion_cb,
				doca_compress_task_compress_deflate_completion_cb_t task_error_cb, uint32_t num_tasks);
/* Running only; src_buff and dst_buff may be NULL (set them before submitting);
 * DOCA_ERROR_NO_MEMORY when every task is out. */
DOCA_EXPERIMENTAL doca_error_t doca_compress_task_compress_deflate_alloc_init(struct doca_compress *compress,
								 struct doca_buf const *src_buff,
								 struct doca_buf *dst_buff, union doca_data user_data,
								 struct doca_compress_task_compress_deflate **task);
DOCA_EXPERIMENTAL struct doca_task *doca_compress_task_compress_deflate_as_task(struct doca_compress_task_compress_deflate *task);
DOCA_EXPERIMENTAL void doca_compress_task_compress_deflate_set_src(struct doca_compress_task_compress_deflate *task,
						      struct doca_buf const *src_buff);
DOCA_EXPERIMENTAL struct doca_buf const *
doca_compress_task_compress_deflate_get_src(const struct doca_compress_task_compress_deflate *task);
DOCA_EXPERIMENTAL void doca_compress_task_compress_deflate_set_dst(struct doca_compress_task_compress_deflate *task,
						      struct doca_buf *dst_buff);
DOCA_EXPERIMENTAL struct doca_buf *doca_compress_task_compress_deflate_get_dst(const struct doca_compress_task_compress_deflate *task);
/* Checksums of the uncompressed bytes of the last completion (0 before one). */
DOCA_EXPERIMENTAL uint32_t doca_compress_task_compress_deflate_get_crc_cs(const struct doca_compress_task_compress_deflate *task);
DOCA_EXPERIMENTAL uint32_t doca_compress_task_compress_deflate_get_adler_cs(const struct doca_compress_task_compress_deflate *task);

/* Decompress deflate: one raw DEFLATE stream (bytes after its final block are ignored). */
typedef void (*doca_compress_task_decompress_deflate_completion_cb_t)(struct doca_compress_task_decompress_deflate *task,
							union doca_data task_user_data,
							union doca_data ctx_user_data);
/* DOCA_ERROR_NOT_SUPPORTED when the topology takes the task type away (cap compress.decompress_deflate 0). */
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_deflate_is_supported(const struct doca_devinfo *devinfo);
/* The largest source (cap compress.max_buf_size) and source or destination list
 * (cap compress.max_buf_list_len); DOCA_ERROR_NOT_SUPPORTED without the task type. */
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_deflate_get_max_buf_size(const struct doca_devinfo *devinfo,
									uint64_t *max_buffer_size);
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_deflate_get_max_buf_list_len(const struct doca_devinfo *devinfo,
									    uint32_t *max_buf_list_len);
/* Idle only; num_tasks 1 or more, with the other task types' at most cap compress.max_num_tasks. */
DOCA_EXPERIMENTAL doca_error_t
doca_compress_task_decompress_deflate_set_conf(struct doca_compress *compress,
				doca_compress_task_decompress_deflate_completion_cb_t task_completion_cb,
				doca_compress_task_decompress_deflate_completion_cb_t task_error_cb, uint32_t num_tasks);
/* Running only; src_buff and dst_buff may be NULL (set them before submitting);
 * DOCA_ERROR_NO_MEMORY when every task is out. */
DOCA_EXPERIMENTAL doca_error_t doca_compress_task_decompress_deflate_alloc_init(struct doca_compress *compress,
								 struct doca_buf const *src_buff,
								 struct doca_buf *dst_buff, union doca_data user_data,
								 struct doca_compress_task_decompress_deflate **task);
DOCA_EXPERIMENTAL struct doca_task *doca_compress_task_decompress_deflate_as_task(struct doca_compress_task_decompress_deflate *task);
DOCA_EXPERIMENTAL void doca_compress_task_decompress_deflate_set_src(struct doca_compress_task_decompress_deflate *task,
						      struct doca_buf const *src_buff);
DOCA_EXPERIMENTAL struct doca_buf const *
doca_compress_task_decompress_deflate_get_src(const struct doca_compress_task_decompress_deflate *task);
DOCA_EXPERIMENTAL void doca_compress_task_decompress_deflate_set_dst(struct doca_compress_task_decompress_deflate *task,
						      struct doca_buf *dst_buff);
DOCA_EXPERIMENTAL struct doca_buf *doca_compress_task_decompress_deflate_get_dst(const struct doca_compress_task_decompress_deflate *task);
/* Checksums of the uncompressed bytes of the last completion (0 before one). */
DOCA_EXPERIMENTAL uint32_t doca_compress_task_decompress_deflate_get_crc_cs(const struct doca_compress_task_decompress_deflate *task);
DOCA_EXPERIMENTAL uint32_t doca_compress_task_decompress_deflate_get_adler_cs(const struct doca_compress_task_decompress_deflate *task);

#if DOCA_EMU_API_LEVEL < 27
struct doca_compress_task_decompress_lz4;

/* Decompress LZ4 (DOCA 2.5/2.6): one whole LZ4 frame (its content checksum, if any, is checked). */
typedef void (*doca_compress_task_decompress_lz4_completion_cb_t)(struct doca_compress_task_decompress_lz4 *task,
							union doca_data task_user_data,
							union doca_data ctx_user_data);
/* DOCA_ERROR_NOT_SUPPORTED when the topology takes the task type away (cap compress.decompress_lz4 0). */
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_lz4_is_supported(const struct doca_devinfo *devinfo);
/* The largest source (cap compress.max_buf_size) and source or destination list
 * (cap compress.max_buf_list_len); DOCA_ERROR_NOT_SUPPORTED without the task type. */
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_lz4_get_max_buf_size(const struct doca_devinfo *devinfo,
									uint64_t *max_buffer_size);
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_lz4_get_max_buf_list_len(const struct doca_devinfo *devinfo,
									    uint32_t *max_buf_list_len);
/* Idle only; num_tasks 1 or more, with the other task types' at most cap compress.max_num_tasks. */
DOCA_EXPERIMENTAL doca_error_t
doca_compress_task_decompress_lz4_set_conf(struct doca_compress *compress,
				doca_compress_task_decompress_lz4_completion_cb_t task_completion_cb,
				doca_compress_task_decompress_lz4_completion_cb_t task_error_cb, uint32_t num_tasks);
/* Running only; src_buff and dst_buff may be NULL (set them before submitting);
 * DOCA_ERROR_NO_MEMORY when every task is out. */
DOCA_EXPERIMENTAL doca_error_t doca_compress_task_decompress_lz4_alloc_init(struct doca_compress *compress,
								 struct doca_buf const *src_buff,
								 struct doca_buf *dst_buff, union doca_data user_data,
								 struct doca_compress_task_decompress_lz4 **task);
DOCA_EXPERIMENTAL struct doca_task *doca_compress_task_decompress_lz4_as_task(struct doca_compress_task_decompress_lz4 *task);
DOCA_EXPERIMENTAL void doca_compress_task_decompress_lz4_set_src(struct doca_compress_task_decompress_lz4 *task,
						      struct doca_buf const *src_buff);
DOCA_EXPERIMENTAL struct doca_buf const *
doca_compress_task_decompress_lz4_get_src(const struct doca_compress_task_decompress_lz4 *task);
DOCA_EXPERIMENTAL void doca_compress_task_decompress_lz4_set_dst(struct doca_compress_task_decompress_lz4 *task,
						      struct doca_buf *dst_buff);
DOCA_EXPERIMENTAL struct doca_buf *doca_compress_task_decompress_lz4_get_dst(const struct doca_compress_task_decompress_lz4 *task);
/* Checksums of the uncompressed bytes of the last completion (0 before one). */
DOCA_EXPERIMENTAL uint32_t doca_compress_task_decompress_lz4_get_crc_cs(const struct doca_compress_task_decompress_lz4 *task);
DOCA_EXPERIMENTAL uint32_t doca_compress_task_decompress_lz4_get_adler_cs(const struct doca_compress_task_decompress_lz4 *task);

#else
struct doca_compress_task_decompress_lz4_stream;
struct doca_compress_task_decompress_lz4_block;

/* Decompress LZ4 stream: the blocks of an LZ4 frame, no frame header, end mark or content
 * checksum (an end mark ends the stream early). has_block_checksum: each block is followed by
 * its xxHash-32 (checked); are_blocks_independent 0: blocks refer to the 64 KiB before them. */
typedef void (*doca_compress_task_decompress_lz4_stream_completion_cb_t)(struct doca_compress_task_decompress_lz4_stream *task,
							union doca_data task_user_data,
							union doca_data ctx_user_data);
/* DOCA_ERROR_NOT_SUPPORTED when the topology takes the task type away (cap compress.decompress_lz4_stream 0). */
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_lz4_stream_is_supported(const struct doca_devinfo *devinfo);
/* The largest source (cap compress.max_buf_size) and source or destination list
 * (cap compress.max_buf_list_len); DOCA_ERROR_NOT_SUPPORTED without the task type. */
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_lz4_stream_get_max_buf_size(const struct doca_devinfo *devinfo,
									uint64_t *max_buffer_size);
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_lz4_stream_get_max_buf_list_len(const struct doca_devinfo *devinfo,
									    uint32_t *max_buf_list_len);
/* Idle only; num_tasks 1 or more, with the other task types' at most cap compress.max_num_tasks. */
DOCA_EXPERIMENTAL doca_error_t
doca_compress_task_decompress_lz4_stream_set_conf(struct doca_compress *compress,
				doca_compress_task_decompress_lz4_stream_completion_cb_t task_completion_cb,
				doca_compress_task_decompress_lz4_stream_completion_cb_t task_error_cb, uint32_t num_tasks);
/* Running only; src_buff and dst_buff may be NULL (set them before submitting);
 * DOCA_ERROR_NO_MEMORY when every task is out. */
DOCA_EXPERIMENTAL doca_error_t doca_compress_task_decompress_lz4_stream_alloc_init(struct doca_compress *compress,
								 uint8_t has_block_checksum, uint8_t are_blocks_independent,
								 struct doca_buf const *src_buff,
								 struct doca_buf *dst_buff, union doca_data user_data,
								 struct doca_compress_task_decompress_lz4_stream **task);
DOCA_EXPERIMENTAL struct doca_task *doca_compress_task_decompress_lz4_stream_as_task(struct doca_compress_task_decompress_lz4_stream *task);
DOCA_EXPERIMENTAL void doca_compress_task_decompress_lz4_stream_set_src(struct doca_compress_task_decompress_lz4_stream *task,
						      struct doca_buf const *src_buff);
DOCA_EXPERIMENTAL struct doca_buf const *
doca_compress_task_decompress_lz4_stream_get_src(const struct doca_compress_task_decompress_lz4_stream *task);
DOCA_EXPERIMENTAL void doca_compress_task_decompress_lz4_stream_set_dst(struct doca_compress_task_decompress_lz4_stream *task,
						      struct doca_buf *dst_buff);
DOCA_EXPERIMENTAL struct doca_buf *doca_compress_task_decompress_lz4_stream_get_dst(const struct doca_compress_task_decompress_lz4_stream *task);
/* Checksums of the uncompressed bytes of the last completion (0 before one). */
DOCA_EXPERIMENTAL uint32_t doca_compress_task_decompress_lz4_stream_get_crc_cs(const struct doca_compress_task_decompress_lz4_stream *task);
DOCA_EXPERIMENTAL uint32_t doca_compress_task_decompress_lz4_stream_get_xxh_cs(const struct doca_compress_task_decompress_lz4_stream *task);
/* The two flags of a stream task, 0 or 1. */
DOCA_EXPERIMENTAL void
doca_compress_task_decompress_lz4_stream_set_has_block_checksum(struct doca_compress_task_decompress_lz4_stream *task,
								uint8_t has_block_checksum);
DOCA_EXPERIMENTAL uint8_t doca_compress_task_decompress_lz4_stream_get_has_block_checksum(
	const struct doca_compress_task_decompress_lz4_stream *task);
DOCA_EXPERIMENTAL void doca_compress_task_decompress_lz4_stream_set_are_blocks_independent(
	struct doca_compress_task_decompress_lz4_stream *task, uint8_t are_blocks_independent);
DOCA_EXPERIMENTAL uint8_t doca_compress_task_decompress_lz4_stream_get_are_blocks_independent(
	const struct doca_compress_task_decompress_lz4_stream *task);

/* Decompress LZ4 block: the source is one LZ4 block (no size header). */
typedef void (*doca_compress_task_decompress_lz4_block_completion_cb_t)(struct doca_compress_task_decompress_lz4_block *task,
							union doca_data task_user_data,
							union doca_data ctx_user_data);
/* DOCA_ERROR_NOT_SUPPORTED when the topology takes the task type away (cap compress.decompress_lz4_block 0). */
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_lz4_block_is_supported(const struct doca_devinfo *devinfo);
/* The largest source (cap compress.max_buf_size) and source or destination list
 * (cap compress.max_buf_list_len); DOCA_ERROR_NOT_SUPPORTED without the task type. */
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_lz4_block_get_max_buf_size(const struct doca_devinfo *devinfo,
									uint64_t *max_buffer_size);
DOCA_EXPERIMENTAL doca_error_t doca_compress_cap_task_decompress_lz4_block_get_max_buf_list_len(const struct doca_devinfo *devinfo,
									    uint32_t *max_buf_list_len);
/* Idle only; num_tasks 1 or more, with the other task types' at most cap compress.max_num_tasks. */
DOCA_EXPERIMENTAL doca_error_t
doca_compress_task_decompress_lz4_block_set_conf(struct doca_compress *compress,
				doca_compress_task_decompress_lz4_block_completion_cb_t task_completion_cb,
				doca_compress_task_decompress_lz4_block_completion_cb_t task_error_cb, uint32_t num_tasks);
/* Running only; src_buff and dst_buff may be NULL (set them before submitting);
 * DOCA_ERROR_NO_MEMORY when every task is out. */
DOCA_EXPERIMENTAL doca_error_t doca_compress_task_decompress_lz4_block_alloc_init(struct doca_compress *compress,
								 struct doca_buf const *src_buff,
								 struct doca_buf *dst_buff, union doca_data user_data,
								 struct doca_compress_task_decompress_lz4_block **task);
DOCA_EXPERIMENTAL struct doca_task *doca_compress_task_decompress_lz4_block_as_task(struct doca_compress_task_decompress_lz4_block *task);
DOCA_EXPERIMENTAL void doca_compress_task_decompress_lz4_block_set_src(struct doca_compress_task_decompress_lz4_block *task,
						      struct doca_buf const *src_buff);
DOCA_EXPERIMENTAL struct doca_buf const *
doca_compress_task_decompress_lz4_block_get_src(const struct doca_compress_task_decompress_lz4_block *task);
DOCA_EXPERIMENTAL void doca_compress_task_decompress_lz4_block_set_dst(struct doca_compress_task_decompress_lz4_block *task,
						      struct doca_buf *dst_buff);
DOCA_EXPERIMENTAL struct doca_buf *doca_compress_task_decompress_lz4_block_get_dst(const struct doca_compress_task_decompress_lz4_block *task);
/* Checksums of the uncompressed bytes of the last completion (0 before one). */
DOCA_EXPERIMENTAL uint32_t doca_compress_task_decompress_lz4_block_get_crc_cs(const struct doca_compress_task_decompress_lz4_block *task);
DOCA_EXPERIMENTAL uint32_t doca_compress_task_decompress_lz4_block_get_xxh_cs(const struct doca_compress_task_decompress_lz4_block *task);
#endif

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DOCA_EMU_COMPRESS_H_ */
