/* doca-emu: the fast path's producer under the DOCA 2.7+ names (doca_comch_*): the doca_cc_* functions,
 * types and constants under their new names (the same implementation), plus what changed. */
#ifndef DOCA_EMU_COMCH_PRODUCER_H_
#define DOCA_EMU_COMCH_PRODUCER_H_

#include "doca_cc_producer.h"

#define doca_comch_connection doca_cc_connection
#define doca_comch_producer doca_cc_producer
#define doca_comch_producer_task_send doca_cc_producer_task_send
#define doca_comch_producer_task_send_completion_cb_t doca_cc_producer_task_send_completion_cb_t

#ifdef __cplusplus
extern "C" {
#endif

/* The doca_cc_* functions under their 2.7+ names (real symbols of this library). */
DOCA_EXPERIMENTAL struct doca_ctx *doca_comch_producer_as_ctx(struct doca_comch_producer *producer);
DOCA_EXPERIMENTAL doca_error_t doca_comch_producer_cap_get_max_buf_size(const struct doca_devinfo *devinfo, uint32_t *max_buf_size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_producer_cap_get_max_num_tasks(const struct doca_devinfo *devinfo, uint32_t *max_num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_comch_producer_cap_get_max_producers(const struct doca_devinfo *devinfo, uint32_t *max_producers);
DOCA_EXPERIMENTAL doca_error_t doca_comch_producer_cap_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_comch_producer_create(struct doca_comch_connection *cc_connection, struct doca_comch_producer **producer);
DOCA_EXPERIMENTAL doca_error_t doca_comch_producer_destroy(struct doca_comch_producer *producer);
DOCA_EXPERIMENTAL doca_error_t doca_comch_producer_get_id(const struct doca_comch_producer *producer, uint32_t *id);
DOCA_EXPERIMENTAL struct doca_task *doca_comch_producer_task_send_as_task(struct doca_comch_producer_task_send *task);
DOCA_EXPERIMENTAL struct doca_buf *doca_comch_producer_task_send_get_buf(const struct doca_comch_producer_task_send *task);
DOCA_EXPERIMENTAL uint32_t doca_comch_producer_task_send_get_consumer_id(const struct doca_comch_producer_task_send *task);
DOCA_EXPERIMENTAL void doca_comch_producer_task_send_set_buf(struct doca_comch_producer_task_send *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL doca_error_t doca_comch_producer_task_send_set_conf( struct doca_comch_producer *producer, doca_comch_producer_task_send_completion_cb_t task_completion_cb, doca_comch_producer_task_send_completion_cb_t task_error_cb, uint32_t num_send_tasks);
DOCA_EXPERIMENTAL void doca_comch_producer_task_send_set_consumer_id(struct doca_comch_producer_task_send *task, const uint32_t consumer_id);

/* With immediate data (NULL and 0 for none). */
DOCA_EXPERIMENTAL doca_error_t doca_comch_producer_task_send_alloc_init(struct doca_comch_producer *producer,
									const struct doca_buf *buf, uint8_t *imm_data,
									uint32_t imm_data_len, uint32_t consumer_id,
									struct doca_comch_producer_task_send **task);


#ifdef __cplusplus
}
#endif

#endif
