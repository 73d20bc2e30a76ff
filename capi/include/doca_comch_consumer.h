/* doca-emu: the fast path's consumer under the DOCA 2.7+ names (doca_comch_*): the doca_cc_* functions,
 * types and constants under their new names (the same implementation), plus what changed. */
#ifndef DOCA_EMU_COMCH_CONSUMER_H_
#define DOCA_EMU_COMCH_CONSUMER_H_

#include "doca_cc_consumer.h"

#define doca_comch_connection doca_cc_connection
#define doca_comch_consumer doca_cc_consumer
#define doca_comch_consumer_task_post_recv doca_cc_consumer_task_post_recv
#define doca_comch_consumer_task_post_recv_completion_cb_t doca_cc_consumer_task_post_recv_completion_cb_t

#ifdef __cplusplus
extern "C" {
#endif

/* The doca_cc_* functions under their 2.7+ names (real symbols of this library). */
DOCA_EXPERIMENTAL struct doca_ctx *doca_comch_consumer_as_ctx(struct doca_comch_consumer *consumer);
DOCA_EXPERIMENTAL doca_error_t doca_comch_consumer_cap_get_max_buf_size(const struct doca_devinfo *devinfo, uint32_t *max_buf_size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_consumer_cap_get_max_consumers(const struct doca_devinfo *devinfo, uint32_t *max_consumers);
DOCA_EXPERIMENTAL doca_error_t doca_comch_consumer_cap_get_max_num_tasks(const struct doca_devinfo *devinfo, uint32_t *max_num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_comch_consumer_cap_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_comch_consumer_create(struct doca_comch_connection *cc_connection, struct doca_mmap *buf_mmap, struct doca_comch_consumer **consumer);
DOCA_EXPERIMENTAL doca_error_t doca_comch_consumer_destroy(struct doca_comch_consumer *consumer);
DOCA_EXPERIMENTAL doca_error_t doca_comch_consumer_get_id(const struct doca_comch_consumer *consumer, uint32_t *id);
DOCA_EXPERIMENTAL doca_error_t doca_comch_consumer_task_post_recv_alloc_init(struct doca_comch_consumer *consumer, struct doca_buf *buf, struct doca_comch_consumer_task_post_recv **task);
DOCA_EXPERIMENTAL struct doca_task *doca_comch_consumer_task_post_recv_as_task( struct doca_comch_consumer_task_post_recv *task);
DOCA_EXPERIMENTAL struct doca_buf *doca_comch_consumer_task_post_recv_get_buf( const struct doca_comch_consumer_task_post_recv *task);
DOCA_EXPERIMENTAL uint32_t doca_comch_consumer_task_post_recv_get_producer_id( const struct doca_comch_consumer_task_post_recv *task);
DOCA_EXPERIMENTAL void doca_comch_consumer_task_post_recv_set_buf(struct doca_comch_consumer_task_post_recv *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL doca_error_t doca_comch_consumer_task_post_recv_set_conf( struct doca_comch_consumer *consumer, doca_comch_consumer_task_post_recv_completion_cb_t task_completion_cb, doca_comch_consumer_task_post_recv_completion_cb_t task_error_cb, uint32_t num_post_recv_tasks);

/* The producer's immediate data: valid until the task is submitted again or freed. */
DOCA_EXPERIMENTAL const uint8_t *doca_comch_consumer_task_post_recv_get_imm_data(
	const struct doca_comch_consumer_task_post_recv *task);
DOCA_EXPERIMENTAL uint32_t doca_comch_consumer_task_post_recv_get_imm_data_len(
	const struct doca_comch_consumer_task_post_recv *task);
DOCA_EXPERIMENTAL doca_error_t doca_comch_consumer_cap_get_max_imm_data_len(const struct doca_devinfo *devinfo,
									    uint32_t *max_imm_data_len);


#ifdef __cplusplus
}
#endif

#endif
