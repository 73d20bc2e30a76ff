/* doca-emu: the fast path's consumer under the DOCA 2.7+ names (doca_comch_*): the doca_cc_* functions,
 * types and constants under their new names (the same implementation), plus what changed. */
#ifndef DOCA_EMU_COMCH_CONSUMER_H_
#define DOCA_EMU_COMCH_CONSUMER_H_

#include "doca_cc_consumer.h"

#define doca_comch_connection doca_cc_connection
#define doca_comch_consumer doca_cc_consumer
#define doca_comch_consumer_as_ctx doca_cc_consumer_as_ctx
#define doca_comch_consumer_cap_get_max_buf_size doca_cc_consumer_cap_get_max_buf_size
#define doca_comch_consumer_cap_get_max_consumers doca_cc_consumer_cap_get_max_consumers
#define doca_comch_consumer_cap_get_max_num_tasks doca_cc_consumer_cap_get_max_num_tasks
#define doca_comch_consumer_cap_is_supported doca_cc_consumer_cap_is_supported
#define doca_comch_consumer_create doca_cc_consumer_create
#define doca_comch_consumer_destroy doca_cc_consumer_destroy
#define doca_comch_consumer_get_id doca_cc_consumer_get_id
#define doca_comch_consumer_task_post_recv doca_cc_consumer_task_post_recv
#define doca_comch_consumer_task_post_recv_alloc_init doca_cc_consumer_task_post_recv_alloc_init
#define doca_comch_consumer_task_post_recv_as_task doca_cc_consumer_task_post_recv_as_task
#define doca_comch_consumer_task_post_recv_completion_cb_t doca_cc_consumer_task_post_recv_completion_cb_t
#define doca_comch_consumer_task_post_recv_get_buf doca_cc_consumer_task_post_recv_get_buf
#define doca_comch_consumer_task_post_recv_get_producer_id doca_cc_consumer_task_post_recv_get_producer_id
#define doca_comch_consumer_task_post_recv_set_buf doca_cc_consumer_task_post_recv_set_buf
#define doca_comch_consumer_task_post_recv_set_conf doca_cc_consumer_task_post_recv_set_conf

#ifdef __cplusplus
extern "C" {
#endif

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
