/* doca-emu: SHA hash and partial-hash tasks over buffers of local memory maps (the whole
 * doca_sha.h of DOCA 2.6 to 3.3, plus the three 2.5 spellings of renamed functions). The
 * digests are computed inside doca_pe_progress (RustCrypto sha1/sha2, byte-identical to
 * sha1sum/sha256sum/sha512sum), at most sha.bytes_per_pass bytes (1 MiB by default) per
 * context per pass. doca_task_submit does not validate (a bad task completes through the
 * error callback with its status); doca_task_try_submit validates first
 * (DOCA_ERROR_INVALID_VALUE). The digest lands after the destination's data, whose data
 * length grows by the digest length (20, 32 or 64 bytes). */
#ifndef DOCA_EMU_SHA_H_
#define DOCA_EMU_SHA_H_

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>

#include "doca_buf.h"
#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_dev.h"
#include "doca_error.h"
#include "doca_pe.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_sha;
struct doca_sha_task_hash;
struct doca_sha_task_partial_hash;

/* The same values as DOCA's. */
enum doca_sha_algorithm {
	DOCA_SHA_ALGORITHM_SHA1 = 0,
	DOCA_SHA_ALGORITHM_SHA256 = 1,
	DOCA_SHA_ALGORITHM_SHA512 = 2,
};

typedef void (*doca_sha_task_hash_completion_cb_t)(struct doca_sha_task_hash *task, union doca_data task_user_data,
						   union doca_data ctx_user_data);
typedef void (*doca_sha_task_partial_hash_completion_cb_t)(struct doca_sha_task_partial_hash *task,
							   union doca_data task_user_data,
							   union doca_data ctx_user_data);

/* On any device (host or DPU); DOCA_ERROR_NOT_SUPPORTED when the topology takes SHA away
 * (cap sha.hash 0 and sha.partial_hash 0, or sha.algorithms 0). */
DOCA_EXPERIMENTAL doca_error_t doca_sha_create(struct doca_dev *dev, struct doca_sha **sha);
/* Idle only (DOCA_ERROR_BAD_STATE otherwise). */
DOCA_EXPERIMENTAL doca_error_t doca_sha_destroy(struct doca_sha *sha);
DOCA_EXPERIMENTAL struct doca_ctx *doca_sha_as_ctx(struct doca_sha *sha);

/* Capabilities: cap sha.* lines of the topology (see the book). */
DOCA_EXPERIMENTAL doca_error_t doca_sha_cap_task_hash_get_supported(const struct doca_devinfo *devinfo,
								    enum doca_sha_algorithm algorithm);
DOCA_EXPERIMENTAL doca_error_t doca_sha_cap_task_partial_hash_get_supported(const struct doca_devinfo *devinfo,
									    enum doca_sha_algorithm algorithm);
DOCA_EXPERIMENTAL doca_error_t doca_sha_cap_get_max_list_buf_num_elem(const struct doca_devinfo *devinfo,
								      uint32_t *max_list_num_elem);
DOCA_EXPERIMENTAL doca_error_t doca_sha_cap_get_max_src_buf_size(const struct doca_devinfo *devinfo,
								 uint64_t *max_buf_size);
/* The digest length: 20 (SHA-1), 32 (SHA-256), 64 (SHA-512). */
DOCA_EXPERIMENTAL doca_error_t doca_sha_cap_get_min_dst_buf_size(const struct doca_devinfo *devinfo,
								 enum doca_sha_algorithm algorithm,
								 uint32_t *min_buf_size);
/* The block size: 64 (SHA-1, SHA-256), 128 (SHA-512). */
DOCA_EXPERIMENTAL doca_error_t doca_sha_cap_get_partial_hash_block_size(const struct doca_devinfo *devinfo,
									enum doca_sha_algorithm algorithm,
									uint32_t *partial_block_size);

/* Hash tasks. set_conf: Idle only; 1 << log_num_tasks tasks (at most cap sha.max_num_tasks). */
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_hash_set_conf(struct doca_sha *sha,
							   doca_sha_task_hash_completion_cb_t task_completion_cb,
							   doca_sha_task_hash_completion_cb_t task_error_cb,
							   uint8_t log_num_tasks);
/* src_buf and dst_buf may be NULL (set them before submitting); DOCA_ERROR_NO_MEMORY when every task is out. */
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_hash_alloc_init(struct doca_sha *sha, enum doca_sha_algorithm algorithm,
							     const struct doca_buf *src_buf, struct doca_buf *dst_buf,
							     union doca_data user_data, struct doca_sha_task_hash **task);
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_hash_set_src(struct doca_sha_task_hash *task,
							  const struct doca_buf *src_buf);
DOCA_EXPERIMENTAL const struct doca_buf *doca_sha_task_hash_get_src(const struct doca_sha_task_hash *task);
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_hash_set_dst(struct doca_sha_task_hash *task, struct doca_buf *dst_buf);
DOCA_EXPERIMENTAL const struct doca_buf *doca_sha_task_hash_get_dst(const struct doca_sha_task_hash *task);
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_hash_set_algorithm(struct doca_sha_task_hash *task,
								enum doca_sha_algorithm algorithm);
DOCA_EXPERIMENTAL enum doca_sha_algorithm doca_sha_task_hash_get_algorithm(const struct doca_sha_task_hash *task);
DOCA_EXPERIMENTAL struct doca_task *doca_sha_task_hash_as_task(struct doca_sha_task_hash *task);

/* Partial hash tasks: one task submitted once per segment; non-final segments a multiple of
 * the block size (else the error callback with DOCA_ERROR_INVALID_VALUE, the session as it
 * was); the final segment writes the digest of all segments. After it, submitting again
 * needs doca_sha_task_partial_hash_reset (DOCA_ERROR_BAD_STATE otherwise). */
DOCA_EXPERIMENTAL doca_error_t
doca_sha_task_partial_hash_set_conf(struct doca_sha *sha, doca_sha_task_partial_hash_completion_cb_t task_completion_cb,
				    doca_sha_task_partial_hash_completion_cb_t task_error_cb, uint8_t log_num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_partial_hash_alloc_init(struct doca_sha *sha,
								     enum doca_sha_algorithm algorithm,
								     const struct doca_buf *src_buf,
								     struct doca_buf *dst_buf, union doca_data user_data,
								     struct doca_sha_task_partial_hash **task);
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_partial_hash_reset(struct doca_sha_task_partial_hash *task);
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_partial_hash_set_src(struct doca_sha_task_partial_hash *task,
								  const struct doca_buf *src_buf);
DOCA_EXPERIMENTAL const struct doca_buf *
doca_sha_task_partial_hash_get_src(const struct doca_sha_task_partial_hash *task);
/* DOCA_ERROR_BAD_STATE once a segment of the session completed (reset first). */
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_partial_hash_set_dst(struct doca_sha_task_partial_hash *task,
								  struct doca_buf *dst_buf);
DOCA_EXPERIMENTAL const struct doca_buf *
doca_sha_task_partial_hash_get_dst(const struct doca_sha_task_partial_hash *task);
/* DOCA_ERROR_BAD_STATE once a segment of the session completed (reset first). */
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_partial_hash_set_algorithm(struct doca_sha_task_partial_hash *task,
									enum doca_sha_algorithm algorithm);
DOCA_EXPERIMENTAL enum doca_sha_algorithm
doca_sha_task_partial_hash_get_algorithm(const struct doca_sha_task_partial_hash *task);
DOCA_EXPERIMENTAL doca_error_t doca_sha_task_partial_hash_set_is_final_buf(struct doca_sha_task_partial_hash *task);
DOCA_EXPERIMENTAL uint8_t doca_sha_task_partial_hash_get_is_final(const struct doca_sha_task_partial_hash *task);
DOCA_EXPERIMENTAL uint8_t doca_sha_task_partial_hash_get_has_result(const struct doca_sha_task_partial_hash *task);
DOCA_EXPERIMENTAL struct doca_task *doca_sha_task_partial_hash_as_task(struct doca_sha_task_partial_hash *task);

/* The DOCA 2.5 spellings of three of them. */
DOCA_EXPERIMENTAL doca_error_t doca_sha_cap_get_max_src_buffer_size(const struct doca_devinfo *devinfo,
								    uint64_t *max_buffer_size);
DOCA_EXPERIMENTAL doca_error_t doca_sha_cap_get_min_dst_buffer_size(const struct doca_devinfo *devinfo,
								    enum doca_sha_algorithm algorithm,
								    uint32_t *min_buffer_size);
DOCA_EXPERIMENTAL doca_error_t
doca_sha_task_partial_hash_set_is_final_buffer(struct doca_sha_task_partial_hash *task);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DOCA_EMU_SHA_H_ */
