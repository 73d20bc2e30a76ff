/* The legacy endpoint API in the shape of DOCA's comm_channel samples, one program for both
 * roles: `legacy service NAME N [HOST]` on the DPU device 03:00.0 for the host function HOST
 * (b1:00.0 by default) answers N messages; `legacy client NAME N` on b1:00.0 sends N numbered
 * messages ("legacy message <i>") and checks each answer. Both sleep on the endpoint's event channels (epoll) when nothing is waiting, as the
 * samples do, and print "ok N". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include <doca_comm_channel.h>
#include <doca_dev.h>
#include <doca_error.h>

#include "check.h"
#include "open.h"

/* Sleeps until the receive event channel is readable (or 100 ms passed). */
static void wait_recv(struct doca_comm_channel_ep_t *ep, int epfd)
{
	struct epoll_event ev;

	if (doca_comm_channel_ep_event_handle_arm_recv(ep) == DOCA_SUCCESS)
		epoll_wait(epfd, &ev, 1, 100);
}

/* Receives one message into buf (len: its size; the message's on return), sleeping meanwhile. */
static doca_error_t recv_one(struct doca_comm_channel_ep_t *ep, int epfd, char *buf, size_t *len,
			     struct doca_comm_channel_addr_t **peer, time_t end)
{
	size_t cap = *len;
	doca_error_t res;

	for (;;) {
		*len = cap;
		res = doca_comm_channel_ep_recvfrom(ep, buf, len, DOCA_CC_MSG_FLAG_NONE, peer);
		if (res != DOCA_ERROR_AGAIN || time(NULL) > end)
			return res;
		wait_recv(ep, epfd);
	}
}

int main(int argc, char **argv)
{
	struct doca_comm_channel_ep_t *ep;
	struct doca_comm_channel_addr_t *peer = NULL, *from;
	struct doca_dev *dev = NULL, *got_dev;
	struct doca_dev_rep *rep = NULL;
	struct epoll_event ev = {.events = EPOLLIN};
	doca_event_channel_t send_ch, recv_ch;
	char buf[256], want[64];
	size_t len;
	uint16_t size;
	uint64_t stat;
	uint32_t max;
	int service, count, i, epfd;
	time_t end = time(NULL) + 60;
	doca_error_t res;

	if (argc < 4)
		return 2;
	service = strcmp(argv[1], "service") == 0;
	count = atoi(argv[3]);
	res = service ? open_dpu_for(argc > 4 ? argv[4] : "b1:00.0", &dev, &rep) : open_dev("b1:00.0", &dev);
	CHECK_CODE(res, DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_ep_create(&ep), DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_get_max_message_size(doca_dev_as_devinfo(dev), &max), DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_ep_set_device(ep, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_ep_get_device(ep, &got_dev), DOCA_SUCCESS);
	CHECK(got_dev == dev);
	/* The device's maximum, as DOCA's samples set on both ends (the Rust client of the mixed
	 * test keeps the default, the same): two sizes do not connect. */
	CHECK_CODE(doca_comm_channel_ep_set_max_msg_size(ep, (uint16_t)max), DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_ep_set_send_queue_size(ep, 16), DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_ep_set_recv_queue_size(ep, 16), DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_ep_get_max_msg_size(ep, &size), DOCA_SUCCESS);
	CHECK(size == max);
	CHECK_CODE(doca_comm_channel_ep_get_event_channel(ep, &send_ch, &recv_ch), DOCA_ERROR_BAD_STATE);
	/* The header's codes for misuse: no peer NOT_CONNECTED; no message, an empty one, a flag
	 * (none is defined), a receive buffer of 0 bytes, no event channel asked for, a queue of 0
	 * INVALID_VALUE; an endpoint that does not exist NOT_CONNECTED. */
	CHECK_CODE(doca_comm_channel_ep_sendto(ep, "x", 1, DOCA_CC_MSG_FLAG_NONE, NULL), DOCA_ERROR_NOT_CONNECTED);
	CHECK_CODE(doca_comm_channel_ep_disconnect(ep, NULL), DOCA_ERROR_NOT_CONNECTED);
	CHECK_CODE(doca_comm_channel_ep_set_send_queue_size(ep, 0), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_comm_channel_ep_set_recv_queue_size(ep, 0), DOCA_ERROR_INVALID_VALUE);
	/* DOCA 2.5's library takes 8192 (the size less one against its maximum), not 8193. */
	CHECK_CODE(doca_comm_channel_ep_set_send_queue_size(ep, 8192), DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_ep_set_send_queue_size(ep, 8193), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_comm_channel_ep_get_send_queue_size(ep, &size), DOCA_SUCCESS);
	CHECK(size == 8192);
	CHECK_CODE(doca_comm_channel_ep_set_send_queue_size(ep, 16), DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_ep_destroy(NULL), DOCA_ERROR_NOT_CONNECTED);
	if (service) {
		CHECK_CODE(doca_comm_channel_ep_set_device_rep(ep, rep), DOCA_SUCCESS);
		CHECK_CODE(doca_comm_channel_ep_listen(ep, argv[2]), DOCA_SUCCESS);
		CHECK_CODE(doca_comm_channel_ep_listen(ep, argv[2]), DOCA_ERROR_NOT_PERMITTED);
		printf("listening\n");
		fflush(stdout);
	} else {
		CHECK_CODE(doca_comm_channel_ep_connect(ep, argv[2], &peer), DOCA_SUCCESS);
		do {
			res = peer == NULL ? DOCA_ERROR_NOT_CONNECTED : doca_comm_channel_peer_addr_update_info(peer);
			if (res == DOCA_ERROR_CONNECTION_INPROGRESS)
				nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
		} while (res == DOCA_ERROR_CONNECTION_INPROGRESS && time(NULL) < end);
		CHECK_CODE(res, DOCA_SUCCESS);
		CHECK_CODE(doca_comm_channel_peer_addr_set_user_data(peer, 77), DOCA_SUCCESS);
	}
	CHECK_CODE(doca_comm_channel_ep_get_event_channel(ep, &send_ch, &recv_ch), DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_ep_get_event_channel(ep, NULL, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_comm_channel_ep_set_max_msg_size(ep, 128), DOCA_ERROR_BAD_STATE);
	/* Active: the state is checked before the value. */
	CHECK_CODE(doca_comm_channel_ep_set_max_msg_size(ep, 65535), DOCA_ERROR_BAD_STATE);
	len = sizeof(buf);
	CHECK_CODE(doca_comm_channel_ep_recvfrom(ep, buf, &len, 0x40, &from), DOCA_ERROR_INVALID_VALUE);
	len = 0;
	CHECK_CODE(doca_comm_channel_ep_recvfrom(ep, buf, &len, DOCA_CC_MSG_FLAG_NONE, &from), DOCA_ERROR_INVALID_VALUE);
	if (!service) {
		CHECK_CODE(doca_comm_channel_ep_sendto(ep, "x", 0, DOCA_CC_MSG_FLAG_NONE, peer), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_comm_channel_ep_sendto(ep, NULL, 0, DOCA_CC_MSG_FLAG_NONE, peer), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_comm_channel_ep_sendto(ep, "x", 1, 0x100, peer), DOCA_ERROR_INVALID_VALUE);
	}
	epfd = epoll_create1(0);
	CHECK(epfd >= 0 && epoll_ctl(epfd, EPOLL_CTL_ADD, recv_ch, &ev) == 0);
	for (i = 0; i < count && !failures; i++) {
		snprintf(want, sizeof(want), "legacy message %d", i);
		if (!service)
			CHECK_CODE(doca_comm_channel_ep_sendto(ep, want, strlen(want), DOCA_CC_MSG_FLAG_NONE, peer),
				   DOCA_SUCCESS);
		len = sizeof(buf);
		res = recv_one(ep, epfd, buf, &len, &from, end);
		CHECK_CODE(res, DOCA_SUCCESS);
		if (res != DOCA_SUCCESS)
			break;
		CHECK(len == strlen(want) && memcmp(buf, want, len) == 0);
		if (service) {
			peer = from;
			CHECK_CODE(doca_comm_channel_ep_sendto(ep, buf, len, DOCA_CC_MSG_FLAG_NONE, from), DOCA_SUCCESS);
		} else {
			CHECK(from == peer);
		}
	}
	if (peer != NULL) {
		/* The client may be gone already: the snapshot is taken either way. */
		res = doca_comm_channel_peer_addr_update_info(peer);
		CHECK(res == DOCA_SUCCESS || (service && res == DOCA_ERROR_CONNECTION_ABORTED));
		CHECK_CODE(doca_comm_channel_peer_addr_get_recv_messages(peer, &stat), DOCA_SUCCESS);
		CHECK(stat == (uint64_t)count);
		CHECK_CODE(doca_comm_channel_peer_addr_get_user_data(peer, &stat), DOCA_SUCCESS);
		CHECK(stat == (service ? 0 : 77));
	}
	if (service && peer != NULL) {
		/* The client leaves: its address says so once the service notices. */
		uint32_t n = 1;

		do {
			doca_comm_channel_ep_update_service_state_info(ep);
			res = doca_comm_channel_peer_addr_update_info(peer);
			if (res == DOCA_SUCCESS)
				nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
		} while (res == DOCA_SUCCESS && time(NULL) < end);
		CHECK_CODE(res, DOCA_ERROR_CONNECTION_ABORTED);
		CHECK_CODE(doca_comm_channel_ep_get_pending_connections(ep, &n), DOCA_SUCCESS);
		CHECK(n == 0);
	}
	if (!service && peer != NULL) {
		/* Disconnected here: no connection any more. */
		CHECK_CODE(doca_comm_channel_ep_disconnect(ep, peer), DOCA_SUCCESS);
		CHECK_CODE(doca_comm_channel_ep_disconnect(ep, peer), DOCA_ERROR_NOT_CONNECTED);
		CHECK_CODE(doca_comm_channel_ep_sendto(ep, "x", 1, DOCA_CC_MSG_FLAG_NONE, peer), DOCA_ERROR_NOT_CONNECTED);
		CHECK_CODE(doca_comm_channel_peer_addr_update_info(peer), DOCA_ERROR_CONNECTION_ABORTED);
	}
	CHECK_CODE(doca_comm_channel_ep_destroy(ep), DOCA_SUCCESS);
	CHECK_CODE(doca_comm_channel_ep_destroy(ep), DOCA_ERROR_NOT_CONNECTED);
	if (rep != NULL)
		doca_dev_rep_close(rep);
	doca_dev_close(dev);
	if (failures) {
		fprintf(stderr, "%s: %d check(s) failed\n", argv[1], failures);
		return 1;
	}
	printf("ok %d\n", count);
	return 0;
}
