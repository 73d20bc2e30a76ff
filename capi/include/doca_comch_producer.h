/* doca-emu: the fast path's producer under the DOCA 2.7+ names (doca_comch_*): the doca_cc_* functions,
 * types and constants under their new names (the same implementation), plus what changed. */
#ifndef DOCA_EMU_COMCH_PRODUCER_H_
#define DOCA_EMU_COMCH_PRODUCER_H_

#include "doca_cc_producer.h"

#define doca_comch_connection doca_cc_connection
#define doca_comch_producer doca_cc_producer
#define doca_comch_producer_as_ctx doca_cc_producer_as_ctx
#define doca_comch_producer_cap_get_max_buf_size doca_cc_producer_cap_get_max_buf_size
#define doca_comch_producer_cap_get_max_num_tasks doca_cc_producer_cap_get_max_num_tasks
#define doca_comch_producer_cap_get_max_producers doca_cc_producer_cap_get_max_producers
#define doca_comch_producer_cap_is_supported doca_cc_producer_cap_is_supported
#define doca_comch_producer_create doca_cc_producer_create
#define doca_comch_producer_destroy doca_cc_producer_destroy
#define doca_comch_producer_get_id doca_cc_producer_get_id
#define doca_comch_producer_task_send doca_cc_producer_task_send
#define doca_comch_producer_task_send_as_task doca_cc_producer_task_send_as_task
#define doca_comch_producer_task_send_completion_cb_t doca_cc_producer_task_send_completion_cb_t
#define doca_comch_producer_task_send_get_buf doca_cc_producer_task_send_get_buf
#define doca_comch_producer_task_send_get_consumer_id doca_cc_producer_task_send_get_consumer_id
#define doca_comch_producer_task_send_set_buf doca_cc_producer_task_send_set_buf
#define doca_comch_producer_task_send_set_conf doca_cc_producer_task_send_set_conf
#define doca_comch_producer_task_send_set_consumer_id doca_cc_producer_task_send_set_consumer_id

#ifdef __cplusplus
extern "C" {
#endif

/* With immediate data (NULL and 0 for none). */
DOCA_EXPERIMENTAL doca_error_t doca_comch_producer_task_send_alloc_init(struct doca_comch_producer *producer,
									const struct doca_buf *buf, uint8_t *imm_data,
									uint32_t imm_data_len, uint32_t consumer_id,
									struct doca_comch_producer_task_send **task);


#ifdef __cplusplus
}
#endif

#endif
