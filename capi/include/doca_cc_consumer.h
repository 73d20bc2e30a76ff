/* doca-emu: Comm Channel fast path, the receiving end (DOCA 2.6 names). */
#ifndef DOCA_EMU_CC_CONSUMER_H_
#define DOCA_EMU_CC_CONSUMER_H_

#include <stddef.h>
#include <stdint.h>

#include "doca_buf.h"
#include "doca_cc.h"
#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_dev.h"
#include "doca_error.h"
#include "doca_mmap.h"
#include "doca_pe.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_cc_consumer;
struct doca_cc_consumer_task_post_recv;

typedef void (*doca_cc_consumer_task_post_recv_completion_cb_t)(struct doca_cc_consumer_task_post_recv *task,
								 union doca_data task_user_data,
								 union doca_data ctx_user_data);

/* On an established connection; the map needs DOCA_ACCESS_FLAG_PCI_READ_WRITE. Start is
 * asynchronous: Running once the peer registered the consumer. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_create(struct doca_cc_connection *cc_connection,
						       struct doca_mmap *buf_mmap, struct doca_cc_consumer **consumer);
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_destroy(struct doca_cc_consumer *consumer);
DOCA_EXPERIMENTAL struct doca_ctx *doca_cc_consumer_as_ctx(struct doca_cc_consumer *consumer);
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_get_id(const struct doca_cc_consumer *consumer, uint32_t *id);

DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_task_post_recv_set_conf(
	struct doca_cc_consumer *consumer, doca_cc_consumer_task_post_recv_completion_cb_t task_completion_cb,
	doca_cc_consumer_task_post_recv_completion_cb_t task_error_cb, uint32_t num_post_recv_tasks);
/* The task completes once a producer wrote into the buffer, after its data. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_task_post_recv_alloc_init(struct doca_cc_consumer *consumer,
									  struct doca_buf *buf,
									  struct doca_cc_consumer_task_post_recv **task);
DOCA_EXPERIMENTAL struct doca_buf *doca_cc_consumer_task_post_recv_get_buf(
	const struct doca_cc_consumer_task_post_recv *task);
DOCA_EXPERIMENTAL void doca_cc_consumer_task_post_recv_set_buf(struct doca_cc_consumer_task_post_recv *task,
							       struct doca_buf *buf);
DOCA_EXPERIMENTAL uint32_t doca_cc_consumer_task_post_recv_get_producer_id(
	const struct doca_cc_consumer_task_post_recv *task);
DOCA_EXPERIMENTAL struct doca_task *doca_cc_consumer_task_post_recv_as_task(
	struct doca_cc_consumer_task_post_recv *task);

DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_cap_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_cap_get_max_num_tasks(const struct doca_devinfo *devinfo,
								      uint32_t *max_num_tasks);
#if DOCA_EMU_API_LEVEL == 25
/* DOCA 2.5: a size_t (the library's doca_cc_consumer_cap_get_max_buf_size_v25). */
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_cap_get_max_buf_size(const struct doca_devinfo *devinfo,
								     size_t *max_buf_size)
	DOCA_EMU_V25(doca_cc_consumer_cap_get_max_buf_size);
#else
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_cap_get_max_buf_size(const struct doca_devinfo *devinfo,
								     uint32_t *max_buf_size);
#endif
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_cap_get_max_consumers(const struct doca_devinfo *devinfo,
								      uint32_t *max_consumers);

/* DOCA 2.5 names (task counts as base-2 logarithms). */
struct doca_cc_consumer_post_recv_task;
typedef void (*doca_cc_consumer_post_recv_task_comp_handler)(struct doca_cc_consumer_post_recv_task *task,
							     union doca_data task_user_data,
							     union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_cap_get_max_log_num_tasks(const struct doca_devinfo *devinfo,
									  size_t *max_log_num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_post_recv_task_set_conf(
	struct doca_cc_consumer *consumer, doca_cc_consumer_post_recv_task_comp_handler task_completion_cb,
	doca_cc_consumer_post_recv_task_comp_handler task_error_cb, size_t log_num_post_recv_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_cc_consumer_post_recv_task_alloc_init(struct doca_cc_consumer *consumer,
									  struct doca_buf *buf,
									  struct doca_cc_consumer_post_recv_task **task);
DOCA_EXPERIMENTAL struct doca_buf *doca_cc_consumer_post_recv_task_get_buf(
	struct doca_cc_consumer_post_recv_task *task);
DOCA_EXPERIMENTAL void doca_cc_consumer_post_recv_task_set_buf(struct doca_cc_consumer_post_recv_task *task,
							       struct doca_buf *buf);
DOCA_EXPERIMENTAL struct doca_task *doca_cc_consumer_post_recv_task_as_task(
	struct doca_cc_consumer_post_recv_task *task);

#ifdef __cplusplus
}
#endif

#endif
