/* doca-emu: Comm Channel fast path, the sending end (DOCA 2.6 names). */
#ifndef DOCA_EMU_CC_PRODUCER_H_
#define DOCA_EMU_CC_PRODUCER_H_

#include <stddef.h>
#include <stdint.h>

#include "doca_buf.h"
#include "doca_cc.h"
#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_dev.h"
#include "doca_error.h"
#include "doca_pe.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_cc_producer;
struct doca_cc_producer_task_send;

typedef void (*doca_cc_producer_task_send_completion_cb_t)(struct doca_cc_producer_task_send *task,
							    union doca_data task_user_data,
							    union doca_data ctx_user_data);

/* On an established connection; start is synchronous. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_create(struct doca_cc_connection *cc_connection,
						       struct doca_cc_producer **producer);
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_destroy(struct doca_cc_producer *producer);
DOCA_EXPERIMENTAL struct doca_ctx *doca_cc_producer_as_ctx(struct doca_cc_producer *producer);
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_get_id(const struct doca_cc_producer *producer, uint32_t *id);

DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_task_send_set_conf(
	struct doca_cc_producer *producer, doca_cc_producer_task_send_completion_cb_t task_completion_cb,
	doca_cc_producer_task_send_completion_cb_t task_error_cb, uint32_t num_send_tasks);
/* Copies the buffer's data into the next buffer the peer's consumer consumer_id posted. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_task_send_alloc_init(struct doca_cc_producer *producer,
								     struct doca_buf *buf, uint32_t consumer_id,
								     struct doca_cc_producer_task_send **task);
DOCA_EXPERIMENTAL struct doca_buf *doca_cc_producer_task_send_get_buf(const struct doca_cc_producer_task_send *task);
DOCA_EXPERIMENTAL void doca_cc_producer_task_send_set_buf(struct doca_cc_producer_task_send *task,
							  struct doca_buf *buf);
DOCA_EXPERIMENTAL uint32_t doca_cc_producer_task_send_get_consumer_id(const struct doca_cc_producer_task_send *task);
DOCA_EXPERIMENTAL void doca_cc_producer_task_send_set_consumer_id(struct doca_cc_producer_task_send *task,
								  const uint32_t consumer_id);
DOCA_EXPERIMENTAL struct doca_task *doca_cc_producer_task_send_as_task(struct doca_cc_producer_task_send *task);

DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_cap_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_cap_get_max_num_tasks(const struct doca_devinfo *devinfo,
								      uint32_t *max_num_tasks);
#if DOCA_EMU_API_LEVEL == 25
/* DOCA 2.5: a size_t (the library's doca_cc_producer_cap_get_max_buf_size_v25). */
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_cap_get_max_buf_size(const struct doca_devinfo *devinfo,
								     size_t *max_buf_size)
	DOCA_EMU_V25(doca_cc_producer_cap_get_max_buf_size);
#else
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_cap_get_max_buf_size(const struct doca_devinfo *devinfo,
								     uint32_t *max_buf_size);
#endif
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_cap_get_max_producers(const struct doca_devinfo *devinfo,
								      uint32_t *max_producers);

/* DOCA 2.5 names (task counts as base-2 logarithms, int consumer ids). */
struct doca_cc_producer_send_task;
typedef void (*doca_cc_producer_send_task_comp_handler)(struct doca_cc_producer_send_task *task,
							union doca_data task_user_data, union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_cap_get_max_log_num_tasks(const struct doca_devinfo *devinfo,
									  size_t *max_log_num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_send_task_set_conf(struct doca_cc_producer *producer,
								   doca_cc_producer_send_task_comp_handler task_completion_cb,
								   doca_cc_producer_send_task_comp_handler task_error_cb,
								   size_t log_num_send_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_cc_producer_send_task_alloc_init(struct doca_cc_producer *producer,
								     struct doca_buf *buf, int consumer_id,
								     struct doca_cc_producer_send_task **task);
DOCA_EXPERIMENTAL struct doca_buf *doca_cc_producer_send_task_get_buf(struct doca_cc_producer_send_task *task);
DOCA_EXPERIMENTAL void doca_cc_producer_send_task_set_buf(struct doca_cc_producer_send_task *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL int doca_cc_producer_send_task_get_consumer_id(struct doca_cc_producer_send_task *task);
DOCA_EXPERIMENTAL void doca_cc_producer_send_task_set_consumer_id(struct doca_cc_producer_send_task *task,
								  const int consumer_id);
DOCA_EXPERIMENTAL struct doca_task *doca_cc_producer_send_task_as_task(struct doca_cc_producer_send_task *task);

#ifdef __cplusplus
}
#endif

#endif
