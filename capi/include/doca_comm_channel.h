/* doca-emu: the legacy Comm Channel endpoint API (DOCA 2.x names). */
#ifndef DOCA_EMU_COMM_CHANNEL_H_
#define DOCA_EMU_COMM_CHANNEL_H_

#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_dev.h"
#include "doca_error.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

enum doca_comm_channel_msg_flags {
	DOCA_CC_MSG_FLAG_NONE = 0,
};

struct doca_comm_channel_ep_t;
struct doca_comm_channel_addr_t;

/* A file descriptor to sleep on (epoll/poll) after arming it. */
typedef doca_event_handle_t doca_event_channel_t;

DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_get_max_service_name_len(uint32_t *max_service_name_len);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_get_max_message_size(const struct doca_devinfo *devinfo,
								      uint32_t *max_message_size);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_get_max_send_queue_size(const struct doca_devinfo *devinfo,
									 uint32_t *max_send_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_get_max_recv_queue_size(const struct doca_devinfo *devinfo,
									 uint32_t *max_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_get_service_max_num_connections(const struct doca_devinfo *devinfo,
										 uint32_t *max_num_connections);

DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_create(struct doca_comm_channel_ep_t **ep);
/* Disconnects every peer; the peer addresses go with the endpoint. */
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_destroy(struct doca_comm_channel_ep_t *ep);
/* Settings: before listen or connect (DOCA_ERROR_BAD_STATE after). */
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_set_device(struct doca_comm_channel_ep_t *ep, struct doca_dev *device);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_set_device_rep(struct doca_comm_channel_ep_t *ep,
								   struct doca_dev_rep *device_rep);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_set_max_msg_size(struct doca_comm_channel_ep_t *ep, uint16_t max_msg_size);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_set_send_queue_size(struct doca_comm_channel_ep_t *ep, uint16_t send_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_set_recv_queue_size(struct doca_comm_channel_ep_t *ep, uint16_t recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_get_device(const struct doca_comm_channel_ep_t *ep, struct doca_dev **device);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_get_device_rep(const struct doca_comm_channel_ep_t *ep,
								   struct doca_dev_rep **device_rep);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_get_max_msg_size(const struct doca_comm_channel_ep_t *ep, uint16_t *max_msg_size);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_get_send_queue_size(const struct doca_comm_channel_ep_t *ep,
									uint16_t *send_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_get_recv_queue_size(const struct doca_comm_channel_ep_t *ep,
									uint16_t *recv_queue_size);

/* The service (DPU) side: needs the device and the representor. */
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_listen(struct doca_comm_channel_ep_t *ep, const char *name);
/* The client (host) side: the handshake ends asynchronously; poll
 * doca_comm_channel_peer_addr_update_info until it is not DOCA_ERROR_CONNECTION_INPROGRESS. */
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_connect(struct doca_comm_channel_ep_t *ep, const char *name,
							    struct doca_comm_channel_addr_t **peer_addr);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_sendto(struct doca_comm_channel_ep_t *ep, const void *msg, size_t len,
							   int flags, struct doca_comm_channel_addr_t *peer_addr);
/* *len: the buffer's size on entry, the message's on return. Nothing waiting: DOCA_ERROR_AGAIN. */
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_recvfrom(struct doca_comm_channel_ep_t *ep, void *msg, size_t *len,
							     int flags, struct doca_comm_channel_addr_t **peer_addr);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_disconnect(struct doca_comm_channel_ep_t *ep,
							       struct doca_comm_channel_addr_t *peer_addr);

DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_get_event_channel(struct doca_comm_channel_ep_t *ep,
								      doca_event_channel_t *send_event_channel,
								      doca_event_channel_t *recv_event_channel);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_get_service_event_channel(struct doca_comm_channel_ep_t *ep,
									      doca_event_channel_t *service_event_channel);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_event_handle_arm_send(struct doca_comm_channel_ep_t *ep);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_event_handle_arm_recv(struct doca_comm_channel_ep_t *ep);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_update_service_state_info(struct doca_comm_channel_ep_t *ep);
/* The array belongs to the library: valid until the next call. */
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_get_peer_addr_list(const struct doca_comm_channel_ep_t *ep,
								       struct doca_comm_channel_addr_t ***peer_addr_array,
								       uint32_t *peer_addr_array_len);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_ep_get_pending_connections(const struct doca_comm_channel_ep_t *ep,
									    uint32_t *pending_connections);

DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_peer_addr_update_info(struct doca_comm_channel_addr_t *peer_addr);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_peer_addr_set_user_data(struct doca_comm_channel_addr_t *peer_addr,
									 uint64_t user_context);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_peer_addr_get_user_data(const struct doca_comm_channel_addr_t *peer_addr,
									 uint64_t *user_data);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_peer_addr_get_send_messages(const struct doca_comm_channel_addr_t *peer_addr,
									     uint64_t *send_messages);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_peer_addr_get_send_bytes(const struct doca_comm_channel_addr_t *peer_addr,
									  uint64_t *send_bytes);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_peer_addr_get_recv_messages(const struct doca_comm_channel_addr_t *peer_addr,
									     uint64_t *recv_messages);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_peer_addr_get_recv_bytes(const struct doca_comm_channel_addr_t *peer_addr,
									  uint64_t *recv_bytes);
DOCA_EXPERIMENTAL doca_error_t doca_comm_channel_peer_addr_get_send_in_flight_messages(
	const struct doca_comm_channel_addr_t *peer_addr, uint64_t *send_in_flight_messages);

#ifdef __cplusplus
}
#endif

#endif
