/* An echo server written against the DOCA 2.5 headers, in the shape of NVIDIA's 2.5
 * cc_ctrl_path_server sample (built against an API level 2.5 install, or with
 * DOCA_EMU_API_LEVEL=25): send tasks configured by a base-2 logarithm, size_t sizes read and
 * set, a receive callback taking a size_t length, connection callbacks taking a bool. On the
 * DPU device 03:00.0 for the host function b1:00.0, named argv[1]; answers every message with
 * the same bytes; stops after its client has gone (or after 60 s), then prints "served <n>".
 *
 * The size getters write a size_t: each is given one whose every bit is set, so a getter that
 * wrote 4 bytes (2.6's shape) would leave the upper half set and fail the check. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <doca_cc.h>
#include <doca_cc_consumer.h>
#include <doca_cc_producer.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_pe.h>

#include "check.h"
#include "open.h"

#if DOCA_EMU_API_LEVEL != 25
#error "server25.c is written against the DOCA 2.5 headers (API level 25)"
#endif

static int served, gone, connected;

static void send_done(struct doca_cc_send_task *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	doca_task_free(doca_cc_send_task_as_task(task));
}

/* The 2.5 receive callback: a size_t length. */
static void on_msg(struct doca_cc_event_msg_recv *event, uint8_t *buf, size_t len, struct doca_cc_connection *conn)
{
	struct doca_cc_send_task *task;
	struct doca_cc_server *server = doca_cc_server_get_server_ctx(conn);

	(void)event;
	CHECK(server != NULL && len > 0 && len <= 4080);
	if (server == NULL)
		return;
	CHECK_CODE(doca_cc_server_send_task_alloc_init(server, conn, buf, len, &task), DOCA_SUCCESS);
	if (failures == 0)
		CHECK_CODE(doca_task_submit(doca_cc_send_task_as_task(task)), DOCA_SUCCESS);
	served++;
}

/* The 2.5 connection callbacks: a bool. */
static void on_connect(struct doca_cc_event_connection_status_changed *event, struct doca_cc_connection *conn,
		       bool ok)
{
	(void)event;
	(void)conn;
	CHECK(ok == true);
	connected++;
}

static void on_disconnect(struct doca_cc_event_connection_status_changed *event, struct doca_cc_connection *conn,
			  bool ok)
{
	(void)event;
	(void)conn;
	(void)ok;
	gone = 1;
}

/* A size_t getter's value: set to all ones first, so a 4-byte write shows. */
#define WIDE(call, var) ((var) = SIZE_MAX, (call))

int main(int argc, char **argv)
{
	struct doca_dev *dev;
	struct doca_dev_rep *rep;
	struct doca_devinfo *info;
	struct doca_pe *pe;
	struct doca_cc_server *server;
	enum doca_ctx_states state;
	size_t max_msg, queue, clients, tasks, buf, got;
	time_t end = time(NULL) + 60;

	if (argc < 2)
		return 2;
	CHECK_CODE(open_dpu(&dev, &rep), DOCA_SUCCESS);
	if (failures)
		return checks_result();
	info = doca_dev_as_devinfo(dev);
	CHECK_CODE(WIDE(doca_cc_cap_get_max_msg_size(info, &max_msg), max_msg), DOCA_SUCCESS);
	CHECK(max_msg >= 4080 && max_msg <= UINT32_MAX);
	CHECK_CODE(WIDE(doca_cc_cap_get_max_recv_queue_size(info, &queue), queue), DOCA_SUCCESS);
	CHECK(queue >= 16 && queue <= UINT32_MAX);
	CHECK_CODE(WIDE(doca_cc_cap_get_max_clients(info, &clients), clients), DOCA_SUCCESS);
	CHECK(clients >= 1 && clients <= UINT32_MAX);
	CHECK_CODE(WIDE(doca_cc_cap_get_max_send_tasks(info, &tasks), tasks), DOCA_SUCCESS);
	CHECK(tasks >= 16 && tasks <= UINT32_MAX);
	CHECK_CODE(WIDE(doca_cc_consumer_cap_get_max_buf_size(info, &buf), buf), DOCA_SUCCESS);
	CHECK(buf >= 1 && buf <= UINT32_MAX);
	CHECK_CODE(WIDE(doca_cc_producer_cap_get_max_buf_size(info, &buf), buf), DOCA_SUCCESS);
	CHECK(buf >= 1 && buf <= UINT32_MAX);
	CHECK_CODE(doca_cc_cap_get_max_msg_size(info, NULL), DOCA_ERROR_INVALID_VALUE);

	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK_CODE(doca_cc_server_create(dev, rep, argv[1], &server), DOCA_SUCCESS);
	if (failures)
		return checks_result();
	CHECK_CODE(doca_pe_connect_ctx(pe, doca_cc_server_as_ctx(server)), DOCA_SUCCESS);
	CHECK_CODE(doca_cc_server_send_task_set_conf(server, send_done, send_done, 6), DOCA_SUCCESS); /* 64 tasks */
	CHECK_CODE(doca_cc_server_event_msg_recv_register(server, on_msg), DOCA_SUCCESS);
	CHECK_CODE(doca_cc_server_event_connection_register(server, on_connect, on_disconnect), DOCA_SUCCESS);
	/* size_t sizes: one above the 32-bit range is refused, not cut to its low half (4080). */
	CHECK_CODE(doca_cc_server_set_max_msg_size(server, ((size_t)1 << 32) | 4080), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_cc_server_set_recv_queue_size(server, ((size_t)1 << 32) | 64), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_cc_server_set_max_msg_size(server, 4080), DOCA_SUCCESS);
	CHECK_CODE(doca_cc_server_set_recv_queue_size(server, 64), DOCA_SUCCESS);
	CHECK_CODE(WIDE(doca_cc_server_get_max_msg_size(server, &got), got), DOCA_SUCCESS);
	CHECK(got == 4080);
	CHECK_CODE(WIDE(doca_cc_server_get_recv_queue_size(server, &got), got), DOCA_SUCCESS);
	CHECK(got == 64);
	CHECK_CODE(doca_ctx_start(doca_cc_server_as_ctx(server)), DOCA_SUCCESS);
	if (failures)
		return checks_result();
	printf("running\n");
	fflush(stdout);
	while (!gone && !failures && time(NULL) < end)
		if (doca_pe_progress(pe) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
	doca_ctx_stop(doca_cc_server_as_ctx(server));
	do {
		doca_pe_progress(pe);
		doca_ctx_get_state(doca_cc_server_as_ctx(server), &state);
	} while (state != DOCA_CTX_STATE_IDLE && time(NULL) < end + 5);
	CHECK_CODE(doca_cc_server_destroy(server), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	doca_dev_rep_close(rep);
	doca_dev_close(dev);
	CHECK(gone && connected == 1);
	if (failures) {
		fprintf(stderr, "server25: %d check(s) failed (served %d)\n", failures, served);
		return 1;
	}
	printf("served %d\n", served);
	return 0;
}
