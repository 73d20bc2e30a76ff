/* doca-emu: Comm Channel (2024 API, DOCA 2.6 names, and 2.5's), the control path. The
 * functions 2.6 reshaped are declared in the shapes of the API level (doca_emu_api_level.h):
 * at level 25 the receive callback takes a size_t length, the connection callback a bool, the
 * sizes are size_t; at 26 and 27 they are uint32_t and uint8_t. */
#ifndef DOCA_EMU_CC_H_
#define DOCA_EMU_CC_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_dev.h"
#include "doca_error.h"
#include "doca_pe.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_cc_server;
struct doca_cc_client;
struct doca_cc_connection;
struct doca_cc_task_send;
struct doca_cc_event_msg_recv;
struct doca_cc_event_connection_status_changed;
struct doca_cc_event_consumer;

typedef void (*doca_cc_task_send_completion_cb_t)(struct doca_cc_task_send *task, union doca_data task_user_data,
						   union doca_data ctx_user_data);
/* recv_buffer is valid during the call only. */
#if DOCA_EMU_API_LEVEL == 25
typedef void (*doca_cc_event_msg_recv_cb_t)(struct doca_cc_event_msg_recv *event, uint8_t *recv_buffer,
					     size_t msg_len, struct doca_cc_connection *cc_connection);
typedef void (*doca_cc_event_connection_status_changed_cb_t)(struct doca_cc_event_connection_status_changed *event,
							      struct doca_cc_connection *cc_connection,
							      bool change_successful);
#else
typedef void (*doca_cc_event_msg_recv_cb_t)(struct doca_cc_event_msg_recv *event, uint8_t *recv_buffer,
					     uint32_t msg_len, struct doca_cc_connection *cc_connection);
typedef void (*doca_cc_event_connection_status_changed_cb_t)(struct doca_cc_event_connection_status_changed *event,
							      struct doca_cc_connection *cc_connection,
							      uint8_t change_successful);
#endif

enum doca_cc_counter {
	DOCA_CC_COUNTER_SENT_MESSAGES = 1,
	DOCA_CC_COUNTER_SENT_BYTES = 2,
	DOCA_CC_COUNTER_RECV_MESSAGES = 3,
	DOCA_CC_COUNTER_RECV_BYTES = 4,
};

/* id: the peer's consumer that started (new) or was destroyed (expired). */
typedef void (*doca_cc_event_consumer_cb_t)(struct doca_cc_event_consumer *event, struct doca_cc_connection *cc_connection,
					    uint32_t id);

DOCA_EXPERIMENTAL doca_error_t doca_cc_server_create(struct doca_dev *dev, struct doca_dev_rep *repr, const char *name,
						     struct doca_cc_server **cc_server);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_destroy(struct doca_cc_server *cc_server);
DOCA_EXPERIMENTAL struct doca_ctx *doca_cc_server_as_ctx(struct doca_cc_server *cc_server);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_task_send_set_conf(struct doca_cc_server *cc_server,
								 doca_cc_task_send_completion_cb_t task_completion_cb,
								 doca_cc_task_send_completion_cb_t task_error_cb,
								 uint32_t num_send_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_task_send_alloc_init(struct doca_cc_server *cc_server,
								   struct doca_cc_connection *peer, const void *msg,
								   uint32_t len, struct doca_cc_task_send **task);

DOCA_EXPERIMENTAL doca_error_t doca_cc_client_create(struct doca_dev *dev, const char *name,
						     struct doca_cc_client **cc_client);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_destroy(struct doca_cc_client *cc_client);
DOCA_EXPERIMENTAL struct doca_ctx *doca_cc_client_as_ctx(struct doca_cc_client *cc_client);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_task_send_set_conf(struct doca_cc_client *cc_client,
								 doca_cc_task_send_completion_cb_t task_completion_cb,
								 doca_cc_task_send_completion_cb_t task_error_cb,
								 uint32_t num_send_tasks);
/* Once Running (BAD_STATE before). */
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_get_connection(const struct doca_cc_client *cc_client,
							     struct doca_cc_connection **connection);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_task_send_alloc_init(struct doca_cc_client *cc_client,
								   struct doca_cc_connection *peer, const void *msg,
								   uint32_t len, struct doca_cc_task_send **task);

DOCA_EXPERIMENTAL doca_error_t doca_cc_server_get_device(const struct doca_cc_server *cc_server, struct doca_dev **dev);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_get_device_repr(const struct doca_cc_server *cc_server,
							      struct doca_dev_rep **repr);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_get_device(const struct doca_cc_client *cc_client, struct doca_dev **dev);

/* Capabilities of a device (the sizes: see the API level's block below). */
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_name_len(const struct doca_devinfo *devinfo, uint32_t *max_name_len);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_server_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_client_is_supported(const struct doca_devinfo *devinfo);

/* Idle only. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_event_consumer_register(struct doca_cc_server *cc_server,
								       doca_cc_event_consumer_cb_t new_consumer_event_cb,
								       doca_cc_event_consumer_cb_t expired_consumer_event_cb);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_event_consumer_register(struct doca_cc_client *cc_client,
								       doca_cc_event_consumer_cb_t new_consumer_event_cb,
								       doca_cc_event_consumer_cb_t expired_consumer_event_cb);

DOCA_EXPERIMENTAL struct doca_task *doca_cc_task_send_as_task(struct doca_cc_task_send *task);

DOCA_EXPERIMENTAL doca_error_t doca_cc_connection_set_user_data(struct doca_cc_connection *connection,
								union doca_data user_data);
DOCA_EXPERIMENTAL union doca_data doca_cc_connection_get_user_data(const struct doca_cc_connection *connection);
/* Snapshots the counters (DOCA_ERROR_CONNECTION_ABORTED once disconnected, after the snapshot). */
DOCA_EXPERIMENTAL doca_error_t doca_cc_connection_update_info(struct doca_cc_connection *connection);
/* The value at the last update_info. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_connection_get_counter(const struct doca_cc_connection *connection,
							      enum doca_cc_counter counter, uint64_t *value);
DOCA_EXPERIMENTAL struct doca_cc_server *doca_cc_server_get_server_ctx(const struct doca_cc_connection *connection);
DOCA_EXPERIMENTAL struct doca_cc_client *doca_cc_client_get_client_ctx(const struct doca_cc_connection *connection);

/* DOCA 2.5 names that 2.6 renamed (same implementation), at every level: they collide with
 * no 2.6 name. Task counts are base-2 logarithms there. */
struct doca_cc_send_task;
typedef void (*doca_cc_send_task_comp_handler)(struct doca_cc_send_task *task, union doca_data task_user_data,
					       union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_send_task_set_conf(struct doca_cc_server *cc_server,
								 doca_cc_send_task_comp_handler task_completion_cb,
								 doca_cc_send_task_comp_handler task_error_cb,
								 uint8_t log_num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_send_task_set_conf(struct doca_cc_client *cc_client,
								 doca_cc_send_task_comp_handler task_completion_cb,
								 doca_cc_send_task_comp_handler task_error_cb,
								 uint8_t log_num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_send_task_alloc_init(struct doca_cc_server *cc_server,
								   struct doca_cc_connection *peer, const void *msg,
								   size_t len, struct doca_cc_send_task **task);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_send_task_alloc_init(struct doca_cc_client *cc_client,
								   struct doca_cc_connection *peer, const void *msg,
								   size_t len, struct doca_cc_send_task **task);
DOCA_EXPERIMENTAL struct doca_task *doca_cc_send_task_as_task(struct doca_cc_send_task *task);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_is_consumer_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_is_producer_supported(const struct doca_devinfo *devinfo);

/* The functions DOCA 2.6 reshaped, in the shapes of the API level. */
#if DOCA_EMU_API_LEVEL == 25
/* DOCA 2.5: sizes are size_t; the callbacks take a size_t length and a bool. Each routed to
 * the library's 2.5 symbol (<name>_v25). Sizes: Idle only; 0, above the capability or above
 * the 32-bit range is DOCA_ERROR_INVALID_VALUE. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_event_msg_recv_register(struct doca_cc_server *cc_server,
								      doca_cc_event_msg_recv_cb_t recv_event_cb)
	DOCA_EMU_V25(doca_cc_server_event_msg_recv_register);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_event_msg_recv_register(struct doca_cc_client *cc_client,
								      doca_cc_event_msg_recv_cb_t recv_event_cb)
	DOCA_EMU_V25(doca_cc_client_event_msg_recv_register);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_event_connection_register(
	struct doca_cc_server *cc_server, doca_cc_event_connection_status_changed_cb_t connect_event_cb,
	doca_cc_event_connection_status_changed_cb_t disconnect_event_cb)
	DOCA_EMU_V25(doca_cc_server_event_connection_register);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_set_max_msg_size(struct doca_cc_server *cc_server, size_t size)
	DOCA_EMU_V25(doca_cc_server_set_max_msg_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_get_max_msg_size(const struct doca_cc_server *cc_server, size_t *size)
	DOCA_EMU_V25(doca_cc_server_get_max_msg_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_set_recv_queue_size(struct doca_cc_server *cc_server, size_t size)
	DOCA_EMU_V25(doca_cc_server_set_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_get_recv_queue_size(const struct doca_cc_server *cc_server, size_t *size)
	DOCA_EMU_V25(doca_cc_server_get_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_set_max_msg_size(struct doca_cc_client *cc_client, size_t size)
	DOCA_EMU_V25(doca_cc_client_set_max_msg_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_get_max_msg_size(const struct doca_cc_client *cc_client, size_t *size)
	DOCA_EMU_V25(doca_cc_client_get_max_msg_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_set_recv_queue_size(struct doca_cc_client *cc_client, size_t size)
	DOCA_EMU_V25(doca_cc_client_set_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_get_recv_queue_size(const struct doca_cc_client *cc_client, size_t *size)
	DOCA_EMU_V25(doca_cc_client_get_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_msg_size(const struct doca_devinfo *devinfo, size_t *size)
	DOCA_EMU_V25(doca_cc_cap_get_max_msg_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_recv_queue_size(const struct doca_devinfo *devinfo, size_t *size)
	DOCA_EMU_V25(doca_cc_cap_get_max_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_clients(const struct doca_devinfo *devinfo, size_t *num_clients)
	DOCA_EMU_V25(doca_cc_cap_get_max_clients);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_send_tasks(const struct doca_devinfo *devinfo,
							      size_t *max_send_tasks)
	DOCA_EMU_V25(doca_cc_cap_get_max_send_tasks);
#else
/* DOCA 2.6 and later. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_event_msg_recv_register(struct doca_cc_server *cc_server,
								      doca_cc_event_msg_recv_cb_t recv_event_cb);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_event_msg_recv_register(struct doca_cc_client *cc_client,
								      doca_cc_event_msg_recv_cb_t recv_event_cb);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_event_connection_register(
	struct doca_cc_server *cc_server, doca_cc_event_connection_status_changed_cb_t connect_event_cb,
	doca_cc_event_connection_status_changed_cb_t disconnect_event_cb);
/* Sizes: Idle only; 0 or above the capability is DOCA_ERROR_INVALID_VALUE. Server and client
 * must use the same max message size. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_set_max_msg_size(struct doca_cc_server *cc_server, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_get_max_msg_size(const struct doca_cc_server *cc_server, uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_set_recv_queue_size(struct doca_cc_server *cc_server, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_server_get_recv_queue_size(const struct doca_cc_server *cc_server,
								  uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_set_max_msg_size(struct doca_cc_client *cc_client, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_get_max_msg_size(const struct doca_cc_client *cc_client, uint32_t *size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_set_recv_queue_size(struct doca_cc_client *cc_client, uint32_t size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_client_get_recv_queue_size(const struct doca_cc_client *cc_client,
								  uint32_t *size);
/* Capabilities of a device. */
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_msg_size(const struct doca_devinfo *devinfo, uint32_t *max_msg_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_recv_queue_size(const struct doca_devinfo *devinfo,
								   uint32_t *max_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_clients(const struct doca_devinfo *devinfo, uint32_t *max_clients);
DOCA_EXPERIMENTAL doca_error_t doca_cc_cap_get_max_send_tasks(const struct doca_devinfo *devinfo,
							      uint32_t *max_send_tasks);
#endif

#ifdef __cplusplus
}
#endif

#endif
