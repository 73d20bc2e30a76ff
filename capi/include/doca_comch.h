/* doca-emu: Comm Channel under the DOCA 2.7+ names (doca_comch_*): the doca_cc_* functions,
 * types and constants under their new names (the same implementation), plus what changed. */
#ifndef DOCA_EMU_COMCH_H_
#define DOCA_EMU_COMCH_H_

#include "doca_cc.h"

#define DOCA_COMCH_COUNTER_RECV_BYTES DOCA_CC_COUNTER_RECV_BYTES
#define DOCA_COMCH_COUNTER_RECV_MESSAGES DOCA_CC_COUNTER_RECV_MESSAGES
#define DOCA_COMCH_COUNTER_SENT_BYTES DOCA_CC_COUNTER_SENT_BYTES
#define DOCA_COMCH_COUNTER_SENT_MESSAGES DOCA_CC_COUNTER_SENT_MESSAGES
#define doca_comch_client doca_cc_client
#define doca_comch_connection doca_cc_connection
#define doca_comch_counter doca_cc_counter
#define doca_comch_event_connection_status_changed doca_cc_event_connection_status_changed
#define doca_comch_event_connection_status_changed_cb_t doca_cc_event_connection_status_changed_cb_t
#define doca_comch_event_consumer doca_cc_event_consumer
#define doca_comch_event_consumer_cb_t doca_cc_event_consumer_cb_t
#define doca_comch_event_msg_recv doca_cc_event_msg_recv
#define doca_comch_event_msg_recv_cb_t doca_cc_event_msg_recv_cb_t
#define doca_comch_server doca_cc_server
#define doca_comch_task_send doca_cc_task_send
#define doca_comch_task_send_completion_cb_t doca_cc_task_send_completion_cb_t

#ifdef __cplusplus
extern "C" {
#endif

/* The doca_cc_* functions under their 2.7+ names (real symbols of this library). */
DOCA_EXPERIMENTAL doca_error_t doca_comch_cap_client_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_comch_cap_get_max_clients(const struct doca_devinfo *devinfo, uint32_t *max_clients);
DOCA_EXPERIMENTAL doca_error_t doca_comch_cap_get_max_msg_size(const struct doca_devinfo *devinfo, uint32_t *max_msg_size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_cap_get_max_name_len(const struct doca_devinfo *devinfo, uint32_t *max_name_len);
DOCA_EXPERIMENTAL doca_error_t doca_comch_cap_get_max_recv_queue_size(const struct doca_devinfo *devinfo, uint32_t *max_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_cap_get_max_send_tasks(const struct doca_devinfo *devinfo, uint32_t *max_send_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_comch_cap_server_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL struct doca_ctx *doca_comch_client_as_ctx(struct doca_comch_client *cc_client);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_create(struct doca_dev *dev, const char *name, struct doca_comch_client **cc_client);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_destroy(struct doca_comch_client *cc_client);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_event_consumer_register(struct doca_comch_client *cc_client, doca_comch_event_consumer_cb_t new_consumer_event_cb, doca_comch_event_consumer_cb_t expired_consumer_event_cb);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_event_msg_recv_register(struct doca_comch_client *cc_client, doca_comch_event_msg_recv_cb_t recv_event_cb);
DOCA_EXPERIMENTAL struct doca_comch_client *doca_comch_client_get_client_ctx(const struct doca_comch_connection *connection);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_get_connection(const struct doca_comch_client *cc_client, struct doca_comch_connection **connection);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_get_device(const struct doca_comch_client *cc_client, struct doca_dev **dev);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_get_max_msg_size(const struct doca_comch_client *cc_client, uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_get_recv_queue_size(const struct doca_comch_client *cc_client, uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_set_max_msg_size(struct doca_comch_client *cc_client, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_set_recv_queue_size(struct doca_comch_client *cc_client, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_task_send_alloc_init(struct doca_comch_client *cc_client, struct doca_comch_connection *peer, const void *msg, uint32_t len, struct doca_comch_task_send **task);
DOCA_EXPERIMENTAL doca_error_t doca_comch_client_task_send_set_conf(struct doca_comch_client *cc_client, doca_comch_task_send_completion_cb_t task_completion_cb, doca_comch_task_send_completion_cb_t task_error_cb, uint32_t num_send_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_comch_connection_get_counter(const struct doca_comch_connection *connection, enum doca_comch_counter counter, uint64_t *value);
DOCA_EXPERIMENTAL union doca_data doca_comch_connection_get_user_data(const struct doca_comch_connection *connection);
DOCA_EXPERIMENTAL doca_error_t doca_comch_connection_set_user_data(struct doca_comch_connection *connection, union doca_data user_data);
DOCA_EXPERIMENTAL doca_error_t doca_comch_connection_update_info(struct doca_comch_connection *connection);
DOCA_EXPERIMENTAL struct doca_ctx *doca_comch_server_as_ctx(struct doca_comch_server *cc_server);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_create(struct doca_dev *dev, struct doca_dev_rep *repr, const char *name, struct doca_comch_server **cc_server);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_destroy(struct doca_comch_server *cc_server);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_event_connection_register( struct doca_comch_server *cc_server, doca_comch_event_connection_status_changed_cb_t connect_event_cb, doca_comch_event_connection_status_changed_cb_t disconnect_event_cb);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_event_consumer_register(struct doca_comch_server *cc_server, doca_comch_event_consumer_cb_t new_consumer_event_cb, doca_comch_event_consumer_cb_t expired_consumer_event_cb);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_event_msg_recv_register(struct doca_comch_server *cc_server, doca_comch_event_msg_recv_cb_t recv_event_cb);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_get_device(const struct doca_comch_server *cc_server, struct doca_dev **dev);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_get_device_repr(const struct doca_comch_server *cc_server, struct doca_dev_rep **repr);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_get_max_msg_size(const struct doca_comch_server *cc_server, uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_get_recv_queue_size(const struct doca_comch_server *cc_server, uint32_t *size);
DOCA_EXPERIMENTAL struct doca_comch_server *doca_comch_server_get_server_ctx(const struct doca_comch_connection *connection);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_set_max_msg_size(struct doca_comch_server *cc_server, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_set_recv_queue_size(struct doca_comch_server *cc_server, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_task_send_alloc_init(struct doca_comch_server *cc_server, struct doca_comch_connection *peer, const void *msg, uint32_t len, struct doca_comch_task_send **task);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_task_send_set_conf(struct doca_comch_server *cc_server, doca_comch_task_send_completion_cb_t task_completion_cb, doca_comch_task_send_completion_cb_t task_error_cb, uint32_t num_send_tasks);
DOCA_EXPERIMENTAL struct doca_task *doca_comch_task_send_as_task(struct doca_comch_task_send *task);
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_event_connection_status_changed_register( struct doca_comch_server *cc_server, doca_comch_event_connection_status_changed_cb_t connect_event_cb, doca_comch_event_connection_status_changed_cb_t disconnect_event_cb);

/* Closes the connection; the disconnection callback follows on a later progress. */
DOCA_EXPERIMENTAL doca_error_t doca_comch_server_disconnect(struct doca_comch_server *server,
							   struct doca_comch_connection *connection);


#ifdef __cplusplus
}
#endif

#endif
