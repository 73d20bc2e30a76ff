/* doca-emu: DOCA MMAP advise (2.9+, the whole doca_mmap_advise.h): cache-invalidate tasks on
 * buffers. The emulated devices write memory through the CPU, so memory is coherent and the
 * task has nothing to drop: it is checked and completes inside doca_pe_progress, doing
 * nothing else. doca_task_submit does not validate (a bad task completes through the error
 * callback with its status: no buffer or one above the max size DOCA_ERROR_INVALID_VALUE, a
 * buffer of a map not added to the context's device DOCA_ERROR_NOT_PERMITTED, a stop with
 * tasks queued DOCA_ERROR_SHUTDOWN); doca_task_try_submit validates first
 * (DOCA_ERROR_INVALID_VALUE). Limits: the topology's cap mmap_advise.* lines. */
#ifndef DOCA_EMU_MMAP_ADVISE_H_
#define DOCA_EMU_MMAP_ADVISE_H_

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

struct doca_mmap_advise;
struct doca_mmap_advise_task_invalidate_cache;

typedef void (*doca_mmap_advise_task_invalidate_cache_completion_cb_t)(
	struct doca_mmap_advise_task_invalidate_cache *task, union doca_data task_user_data,
	union doca_data ctx_user_data);

/* On any device; DOCA_ERROR_NOT_SUPPORTED when the topology says cap mmap_advise.cache_invalidate 0. */
DOCA_EXPERIMENTAL doca_error_t doca_mmap_advise_create(struct doca_dev *dev, struct doca_mmap_advise **mmap_advise);
/* Idle only (DOCA_ERROR_BAD_STATE otherwise). */
DOCA_EXPERIMENTAL doca_error_t doca_mmap_advise_destroy(struct doca_mmap_advise *mmap_advise);
DOCA_EXPERIMENTAL struct doca_ctx *doca_mmap_advise_as_ctx(struct doca_mmap_advise *mmap_advise);
DOCA_EXPERIMENTAL doca_error_t doca_mmap_advise_cap_task_cache_invalidate_is_supported(const struct doca_devinfo *devinfo);
/* cap mmap_advise.max_buf_size (2 GiB by default): the largest buffer (its whole length). */
DOCA_EXPERIMENTAL doca_error_t doca_mmap_advise_task_cache_invalidate_get_max_buf_size(const struct doca_devinfo *devinfo,
										      uint64_t *buf_size);
/* Idle only; 1 to cap mmap_advise.max_num_tasks (16384) tasks. */
DOCA_EXPERIMENTAL doca_error_t doca_mmap_advise_task_invalidate_cache_set_conf(
	struct doca_mmap_advise *mmap_advise, doca_mmap_advise_task_invalidate_cache_completion_cb_t completion_cb,
	doca_mmap_advise_task_invalidate_cache_completion_cb_t error_cb, uint32_t num_tasks);
/* buf may be NULL (set before submission). Running only; every task out: DOCA_ERROR_NO_MEMORY. */
DOCA_EXPERIMENTAL doca_error_t
doca_mmap_advise_task_invalidate_cache_alloc_init(struct doca_mmap_advise *mmap_advise, struct doca_buf *buf,
						  union doca_data user_data,
						  struct doca_mmap_advise_task_invalidate_cache **task);
DOCA_EXPERIMENTAL struct doca_task *
doca_mmap_advise_task_invalidate_cache_as_doca_task(struct doca_mmap_advise_task_invalidate_cache *task);
DOCA_EXPERIMENTAL void doca_mmap_advise_task_invalidate_cache_set_buf(struct doca_mmap_advise_task_invalidate_cache *task,
								   struct doca_buf *buf);
DOCA_EXPERIMENTAL struct doca_buf *
doca_mmap_advise_task_invalidate_cache_get_buf(const struct doca_mmap_advise_task_invalidate_cache *task);

#ifdef __cplusplus
}
#endif

#endif
