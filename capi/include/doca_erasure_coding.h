/* doca-emu: erasure coding (Reed-Solomon over GF(2^8), polynomial 0x11D as in ISA-L) over
 * buffers of local memory maps: the whole doca_erasure_coding.h of DOCA 2.5 to 3.3 (the same
 * 50 functions at every API level). Coding is done inside doca_pe_progress, in 32 KiB
 * stripes, at most ec.bytes_per_pass source bytes (1 MiB by default) per context per pass.
 * Every task reads equal input blocks (a multiple of 64 bytes, at least 64, at most
 * doca_ec_cap_get_max_block_size) from its source's data (a buffer or a list) and writes its
 * output blocks into its destination's free room after the data, whose data length grows by
 * what it received. doca_task_submit does not validate (a bad task completes through the
 * error callback with its status); doca_task_try_submit validates first. */
#ifndef DOCA_EMU_ERASURE_CODING_H_
#define DOCA_EMU_ERASURE_CODING_H_

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

struct doca_ec;
struct doca_ec_matrix;
struct doca_ec_task_create;
struct doca_ec_task_update;
struct doca_ec_task_recover;
struct doca_ec_task_galois_mul;

/* How doca_ec_matrix_create builds a coding matrix for k data and m redundancy blocks
 * (coefficient of data block i in redundancy block j, field arithmetic). */
enum doca_ec_matrix_type {
	/* 1 / (i + (k + j)): any k of the k + m blocks recover the rest. */
	DOCA_EC_MATRIX_TYPE_CAUCHY = 1,
	/* (i + 1)^j: some patterns of lost blocks cannot be recovered (create_recover says
	 * DOCA_ERROR_INVALID_VALUE). */
	DOCA_EC_MATRIX_TYPE_VANDERMONDE = 2,
};

typedef void (*doca_ec_task_create_completion_cb_t)(struct doca_ec_task_create *task, union doca_data task_user_data,
						    union doca_data ctx_user_data);
typedef void (*doca_ec_task_update_completion_cb_t)(struct doca_ec_task_update *task, union doca_data task_user_data,
						    union doca_data ctx_user_data);
typedef void (*doca_ec_task_recover_completion_cb_t)(struct doca_ec_task_recover *task,
						     union doca_data task_user_data,
						     union doca_data ctx_user_data);
typedef void (*doca_ec_task_galois_mul_completion_cb_t)(struct doca_ec_task_galois_mul *task,
							union doca_data task_user_data,
							union doca_data ctx_user_data);

/* The context. On any device (host or DPU); DOCA_ERROR_NOT_SUPPORTED when the topology takes
 * every EC task type away (cap ec.create/update/recover/galois_mul 0). Destroy: Idle only. */
DOCA_EXPERIMENTAL doca_error_t doca_ec_create(struct doca_dev *dev, struct doca_ec **ec);
DOCA_EXPERIMENTAL doca_error_t doca_ec_destroy(struct doca_ec *ec);
DOCA_EXPERIMENTAL struct doca_ctx *doca_ec_as_ctx(struct doca_ec *ec);

/* Capabilities: cap ec.* lines of the topology (see the book). */
DOCA_EXPERIMENTAL doca_error_t doca_ec_cap_get_max_block_size(const struct doca_devinfo *devinfo,
							      uint64_t *max_block_size);
DOCA_EXPERIMENTAL doca_error_t doca_ec_cap_get_max_buf_list_len(const struct doca_devinfo *devinfo,
								uint32_t *max_buf_list_len);
DOCA_EXPERIMENTAL doca_error_t doca_ec_cap_task_create_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_ec_cap_task_update_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_ec_cap_task_recover_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_ec_cap_task_galois_mul_is_supported(const struct doca_devinfo *devinfo);

/* Matrices. A coding matrix (by type, or k * m raw bytes where byte i * m + j is the
 * coefficient of data block i in redundancy block j) feeds create and Galois multiplication
 * tasks, and makes update and recover matrices. Recover: missing indices ascending, into the
 * sequence data_0..data_{k-1}, rdnc_0..rdnc_{m-1}, at most m of them; the task then reads the
 * first k blocks not missing, in order, and writes the missing ones, in order. Update: the
 * updated data block indices ascending; the task reads old/new pairs then the m old
 * redundancy blocks, and writes the m new ones. A task keeps its matrix alive: destroying
 * the handle while a task holds it is safe. */
DOCA_EXPERIMENTAL doca_error_t doca_ec_matrix_create(struct doca_ec *ec, enum doca_ec_matrix_type type,
						     size_t data_block_count, size_t rdnc_block_count,
						     struct doca_ec_matrix **matrix);
DOCA_EXPERIMENTAL doca_error_t doca_ec_matrix_create_from_raw(struct doca_ec *ec, uint8_t *data,
							      size_t data_block_count, size_t rdnc_block_count,
							      struct doca_ec_matrix **matrix);
DOCA_EXPERIMENTAL doca_error_t doca_ec_matrix_create_update(struct doca_ec *ec,
							    const struct doca_ec_matrix *coding_matrix,
							    uint32_t *update_indices, size_t n_updates,
							    struct doca_ec_matrix **matrix);
DOCA_EXPERIMENTAL doca_error_t doca_ec_matrix_create_recover(struct doca_ec *ec,
							     const struct doca_ec_matrix *coding_matrix,
							     uint32_t *missing_indices, size_t n_missing,
							     struct doca_ec_matrix **matrix);
DOCA_EXPERIMENTAL doca_error_t doca_ec_matrix_destroy(struct doca_ec_matrix *matrix);

/* Create (encode): k data blocks in, m redundancy blocks out. set_conf: Idle only, 1 to
 * ec.max_num_tasks tasks. allocate_init: the matrix and buffers may be NULL (set them before
 * submitting); DOCA_ERROR_NO_MEMORY when every task is out. */
DOCA_EXPERIMENTAL doca_error_t doca_ec_task_create_set_conf(struct doca_ec *ec,
							    doca_ec_task_create_completion_cb_t successful_task_completion_cb,
							    doca_ec_task_create_completion_cb_t error_task_completion_cb,
							    uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_ec_task_create_allocate_init(struct doca_ec *ec,
								 const struct doca_ec_matrix *coding_matrix,
								 const struct doca_buf *original_data_blocks,
								 struct doca_buf *rdnc_blocks, union doca_data user_data,
								 struct doca_ec_task_create **task);
DOCA_EXPERIMENTAL struct doca_task *doca_ec_task_create_as_task(struct doca_ec_task_create *task);
DOCA_EXPERIMENTAL void doca_ec_task_create_set_coding_matrix(struct doca_ec_task_create *task,
							     const struct doca_ec_matrix *coding_matrix);
DOCA_EXPERIMENTAL const struct doca_ec_matrix *
doca_ec_task_create_get_coding_matrix(const struct doca_ec_task_create *task);
DOCA_EXPERIMENTAL void doca_ec_task_create_set_original_data_blocks(struct doca_ec_task_create *task,
								    const struct doca_buf *original_data_blocks);
DOCA_EXPERIMENTAL const struct doca_buf *
doca_ec_task_create_get_original_data_blocks(const struct doca_ec_task_create *task);
DOCA_EXPERIMENTAL void doca_ec_task_create_set_rdnc_blocks(struct doca_ec_task_create *task,
							   struct doca_buf *rdnc_blocks);
DOCA_EXPERIMENTAL struct doca_buf *doca_ec_task_create_get_rdnc_blocks(const struct doca_ec_task_create *task);

/* Update: as create, with an update matrix (or a raw one). */
DOCA_EXPERIMENTAL doca_error_t doca_ec_task_update_set_conf(struct doca_ec *ec,
							    doca_ec_task_update_completion_cb_t successful_task_completion_cb,
							    doca_ec_task_update_completion_cb_t error_task_completion_cb,
							    uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_ec_task_update_allocate_init(struct doca_ec *ec,
								 const struct doca_ec_matrix *update_matrix,
								 const struct doca_buf *original_updated_and_rdnc_blocks,
								 struct doca_buf *updated_rdnc_blocks,
								 union doca_data user_data,
								 struct doca_ec_task_update **task);
DOCA_EXPERIMENTAL struct doca_task *doca_ec_task_update_as_task(struct doca_ec_task_update *task);
DOCA_EXPERIMENTAL void doca_ec_task_update_set_update_matrix(struct doca_ec_task_update *task,
							     const struct doca_ec_matrix *update_matrix);
DOCA_EXPERIMENTAL const struct doca_ec_matrix *
doca_ec_task_update_get_update_matrix(const struct doca_ec_task_update *task);
DOCA_EXPERIMENTAL void
doca_ec_task_update_set_original_updated_and_rdnc_blocks(struct doca_ec_task_update *task,
							 const struct doca_buf *original_updated_and_rdnc_blocks);
DOCA_EXPERIMENTAL const struct doca_buf *
doca_ec_task_update_get_original_updated_and_rdnc_blocks(const struct doca_ec_task_update *task);
DOCA_EXPERIMENTAL void doca_ec_task_update_set_updated_rdnc_blocks(struct doca_ec_task_update *task,
								   struct doca_buf *updated_rdnc_blocks);
DOCA_EXPERIMENTAL struct doca_buf *
doca_ec_task_update_get_updated_rdnc_blocks(const struct doca_ec_task_update *task);

/* Recover: as create, with a recover matrix (or a raw one). */
DOCA_EXPERIMENTAL doca_error_t
doca_ec_task_recover_set_conf(struct doca_ec *ec, doca_ec_task_recover_completion_cb_t successful_task_completion_cb,
			      doca_ec_task_recover_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_ec_task_recover_allocate_init(struct doca_ec *ec,
								  const struct doca_ec_matrix *recover_matrix,
								  const struct doca_buf *available_blocks,
								  struct doca_buf *recovered_data_blocks,
								  union doca_data user_data,
								  struct doca_ec_task_recover **task);
DOCA_EXPERIMENTAL struct doca_task *doca_ec_task_recover_as_task(struct doca_ec_task_recover *task);
DOCA_EXPERIMENTAL void doca_ec_task_recover_set_recover_matrix(struct doca_ec_task_recover *task,
							       const struct doca_ec_matrix *recover_matrix);
DOCA_EXPERIMENTAL const struct doca_ec_matrix *
doca_ec_task_recover_get_recover_matrix(const struct doca_ec_task_recover *task);
DOCA_EXPERIMENTAL void doca_ec_task_recover_set_available_blocks(struct doca_ec_task_recover *task,
								 const struct doca_buf *available_blocks);
DOCA_EXPERIMENTAL const struct doca_buf *
doca_ec_task_recover_get_available_blocks(const struct doca_ec_task_recover *task);
DOCA_EXPERIMENTAL void doca_ec_task_recover_set_recovered_data_blocks(struct doca_ec_task_recover *task,
								      struct doca_buf *recovered_data_blocks);
DOCA_EXPERIMENTAL struct doca_buf *doca_ec_task_recover_get_recovered_data(const struct doca_ec_task_recover *task);

/* Galois multiplication: as create (a coding matrix or a raw one, k blocks in, m out). */
DOCA_EXPERIMENTAL doca_error_t
doca_ec_task_galois_mul_set_conf(struct doca_ec *ec, doca_ec_task_galois_mul_completion_cb_t successful_task_completion_cb,
				 doca_ec_task_galois_mul_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_ec_task_galois_mul_allocate_init(struct doca_ec *ec,
								     const struct doca_ec_matrix *coding_matrix,
								     const struct doca_buf *src_buf,
								     struct doca_buf *dst_buf, union doca_data user_data,
								     struct doca_ec_task_galois_mul **task);
DOCA_EXPERIMENTAL struct doca_task *doca_ec_task_galois_mul_as_task(struct doca_ec_task_galois_mul *task);
DOCA_EXPERIMENTAL void doca_ec_task_galois_mul_set_coding_matrix(struct doca_ec_task_galois_mul *task,
								 const struct doca_ec_matrix *coding_matrix);
DOCA_EXPERIMENTAL const struct doca_ec_matrix *
doca_ec_task_galois_mul_get_coding_matrix(const struct doca_ec_task_galois_mul *task);
DOCA_EXPERIMENTAL void doca_ec_task_galois_mul_set_src_buf(struct doca_ec_task_galois_mul *task,
							   const struct doca_buf *src_buf);
DOCA_EXPERIMENTAL const struct doca_buf *
doca_ec_task_galois_mul_get_src_buf(const struct doca_ec_task_galois_mul *task);
DOCA_EXPERIMENTAL void doca_ec_task_galois_mul_set_dst_buf(struct doca_ec_task_galois_mul *task,
							   struct doca_buf *dst_buf);
DOCA_EXPERIMENTAL struct doca_buf *doca_ec_task_galois_mul_get_dst_buf(const struct doca_ec_task_galois_mul *task);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DOCA_EMU_ERASURE_CODING_H_ */
