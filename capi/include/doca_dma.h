/* doca-emu: DMA memcpy tasks between buffers of local memory maps (the whole doca_dma.h,
 * the same names from DOCA 2.5 to 3.3). The copy runs inside doca_pe_progress, at most
 * dma.bytes_per_pass bytes (1 MiB by default) per context per pass. doca_task_submit does
 * not validate (a bad task completes through the error callback with its status);
 * doca_task_try_submit validates first (DOCA_ERROR_INVALID_VALUE). The copied bytes land
 * after the destination's data, whose data length grows by the source's length. */
#ifndef DOCA_EMU_DMA_H_
#define DOCA_EMU_DMA_H_

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

struct doca_dma;
struct doca_dma_task_memcpy;

typedef void (*doca_dma_task_memcpy_completion_cb_t)(struct doca_dma_task_memcpy *task,
						     union doca_data task_user_data,
						     union doca_data ctx_user_data);

/* On any device (host or DPU); DOCA_ERROR_NOT_SUPPORTED when the topology says cap dma.memcpy 0. */
DOCA_STABLE doca_error_t doca_dma_create(struct doca_dev *dev, struct doca_dma **dma);
/* Idle only (DOCA_ERROR_BAD_STATE otherwise). */
DOCA_STABLE doca_error_t doca_dma_destroy(struct doca_dma *dma);
DOCA_STABLE doca_error_t doca_dma_cap_task_memcpy_is_supported(const struct doca_devinfo *devinfo);
DOCA_STABLE struct doca_ctx *doca_dma_as_ctx(struct doca_dma *dma);
DOCA_STABLE doca_error_t doca_dma_cap_get_max_num_tasks(struct doca_dma *dma, uint32_t *max_num_tasks);
DOCA_STABLE doca_error_t doca_dma_cap_task_memcpy_get_max_buf_list_len(const struct doca_devinfo *devinfo,
								       uint32_t *max_buf_list_len);
DOCA_STABLE doca_error_t doca_dma_cap_task_memcpy_get_max_buf_size(const struct doca_devinfo *devinfo,
								   uint64_t *buf_size);
/* Idle only; 1..max_num_tasks tasks. */
DOCA_STABLE doca_error_t doca_dma_task_memcpy_set_conf(struct doca_dma *dma,
						       doca_dma_task_memcpy_completion_cb_t task_completion_cb,
						       doca_dma_task_memcpy_completion_cb_t task_error_cb,
						       uint32_t num_memcpy_tasks);
/* src and dst may be NULL (set them before submitting); DOCA_ERROR_NO_MEMORY when every task is out. */
DOCA_STABLE doca_error_t doca_dma_task_memcpy_alloc_init(struct doca_dma *dma, const struct doca_buf *src,
							 struct doca_buf *dst, union doca_data user_data,
							 struct doca_dma_task_memcpy **task);
DOCA_STABLE struct doca_task *doca_dma_task_memcpy_as_task(struct doca_dma_task_memcpy *task);
DOCA_STABLE void doca_dma_task_memcpy_set_src(struct doca_dma_task_memcpy *task, const struct doca_buf *src);
DOCA_STABLE const struct doca_buf *doca_dma_task_memcpy_get_src(const struct doca_dma_task_memcpy *task);
DOCA_STABLE void doca_dma_task_memcpy_set_dst(struct doca_dma_task_memcpy *task, struct doca_buf *dst);
DOCA_STABLE struct doca_buf *doca_dma_task_memcpy_get_dst(const struct doca_dma_task_memcpy *task);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DOCA_EMU_DMA_H_ */
