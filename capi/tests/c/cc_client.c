/* A client in the shape of DOCA's cc_ctrl_path client sample: on host function b1:00.0, for
 * the server argv[1]; sends argv[2] numbered messages one at a time, checks each echo, then
 * stops and prints "ok <n>". A connection that ends before (the context going Idle on its
 * own) is a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <doca_cc.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_pe.h>

#include "open.h"

static struct doca_cc_client *client;
static struct doca_cc_connection *conn;
static int echoed, failed, running, stopping;
static char last[64];

static void send_done(struct doca_cc_task_send *task, union doca_data td, union doca_data cd)
{
	(void)cd;
	if (td.u64 != 42)
		failed = 1;
	doca_task_free(doca_cc_task_send_as_task(task));
}

static void send_failed(struct doca_cc_task_send *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	fprintf(stderr, "send failed: %s\n", doca_error_get_name(doca_task_get_status(doca_cc_task_send_as_task(task))));
	doca_task_free(doca_cc_task_send_as_task(task));
	failed = 1;
}

static void on_msg(struct doca_cc_event_msg_recv *event, uint8_t *buf, uint32_t len, struct doca_cc_connection *c)
{
	(void)event;
	if (c != conn || len != strlen(last) || memcmp(buf, last, len) != 0 || doca_cc_client_get_client_ctx(c) != client) {
		fprintf(stderr, "bad echo\n");
		failed = 1;
	}
	echoed++;
}

static void on_state(const union doca_data ud, struct doca_ctx *ctx, enum doca_ctx_states prev, enum doca_ctx_states next)
{
	(void)ud;
	(void)ctx;
	(void)prev;
	if (next == DOCA_CTX_STATE_RUNNING)
		running = 1;
	/* Idle without our stop: the server went away (its connection ended). */
	if (next == DOCA_CTX_STATE_IDLE && running && !stopping) {
		fprintf(stderr, "client: the connection ended\n");
		failed = 1;
	}
}

static doca_error_t send_one(int i)
{
	struct doca_cc_task_send *task;
	union doca_data d = {.u64 = 42};
	doca_error_t res;

	snprintf(last, sizeof(last), "message %d from C", i);
	res = doca_cc_client_task_send_alloc_init(client, conn, last, (uint32_t)strlen(last), &task);
	if (res != DOCA_SUCCESS)
		return res;
	doca_task_set_user_data(doca_cc_task_send_as_task(task), d);
	return doca_task_submit(doca_cc_task_send_as_task(task));
}

int main(int argc, char **argv)
{
	struct doca_dev *dev = NULL;
	struct doca_pe *pe;
	enum doca_ctx_states state;
	int count, sent = 0;
	time_t end = time(NULL) + 60;
	doca_error_t res;

	if (argc < 3)
		return 2;
	count = atoi(argv[2]);
	if (open_dev("b1:00.0", &dev) != DOCA_SUCCESS || doca_pe_create(&pe) != DOCA_SUCCESS || doca_cc_client_create(dev, argv[1], &client) != DOCA_SUCCESS ||
	    doca_pe_connect_ctx(pe, doca_cc_client_as_ctx(client)) != DOCA_SUCCESS ||
	    doca_ctx_set_state_changed_cb(doca_cc_client_as_ctx(client), on_state) != DOCA_SUCCESS ||
	    doca_cc_client_task_send_set_conf(client, send_done, send_failed, 16) != DOCA_SUCCESS ||
	    doca_cc_client_event_msg_recv_register(client, on_msg) != DOCA_SUCCESS) {
		fprintf(stderr, "client setup failed\n");
		return 1;
	}
	if (doca_cc_client_set_max_msg_size(client, 4080) != DOCA_SUCCESS ||
	    doca_cc_cap_client_is_supported(doca_dev_as_devinfo(dev)) != DOCA_SUCCESS ||
	    doca_cc_cap_server_is_supported(doca_dev_as_devinfo(dev)) != DOCA_ERROR_NOT_SUPPORTED) {
		fprintf(stderr, "client sizes failed\n");
		return 1;
	}
	res = doca_ctx_start(doca_cc_client_as_ctx(client));
	if (res != DOCA_ERROR_IN_PROGRESS) {
		fprintf(stderr, "start: %s (a client starts asynchronously)\n", doca_error_get_name(res));
		return 1;
	}
	while (!running && time(NULL) < end)
		if (doca_pe_progress(pe) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
	if (doca_cc_client_get_connection(client, &conn) != DOCA_SUCCESS)
		return 1;
	{
		/* Above the message size: refused before a byte is read, logged as in Rust. */
		static char big[5000];
		struct doca_cc_task_send *task;

		if (doca_cc_client_task_send_alloc_init(client, conn, big, sizeof(big), &task) != DOCA_ERROR_INVALID_VALUE) {
			fprintf(stderr, "an oversized message was not refused\n");
			return 1;
		}
	}
	while (echoed < count && !failed && time(NULL) < end) {
		if (sent == echoed) {
			res = send_one(sent);
			if (res != DOCA_SUCCESS) {
				fprintf(stderr, "send: %s\n", doca_error_get_name(res));
				return 1;
			}
			sent++;
		}
		if (doca_pe_progress(pe) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
	}
	{
		/* The counters: every message and its echo. */
		uint64_t v = 0;

		if (doca_cc_connection_update_info(conn) != DOCA_SUCCESS ||
		    doca_cc_connection_get_counter(conn, DOCA_CC_COUNTER_SENT_MESSAGES, &v) != DOCA_SUCCESS ||
		    v != (uint64_t)count || doca_cc_connection_get_counter(conn, DOCA_CC_COUNTER_RECV_MESSAGES, &v) != DOCA_SUCCESS ||
		    v != (uint64_t)count || doca_cc_connection_get_counter(conn, 9, &v) != DOCA_ERROR_INVALID_VALUE) {
			fprintf(stderr, "client: counters wrong\n");
			failed = 1;
		}
	}
	stopping = 1;
	res = doca_ctx_stop(doca_cc_client_as_ctx(client));
	do {
		doca_pe_progress(pe);
		doca_ctx_get_state(doca_cc_client_as_ctx(client), &state);
	} while (state != DOCA_CTX_STATE_IDLE && time(NULL) < end + 5);
	if (doca_cc_client_destroy(client) != DOCA_SUCCESS || doca_pe_destroy(pe) != DOCA_SUCCESS)
		failed = 1;
	doca_dev_close(dev);
	if (failed || echoed != count) {
		fprintf(stderr, "client: failed=%d echoed=%d of %d\n", failed, echoed, count);
		return 1;
	}
	printf("ok %d\n", count);
	return 0;
}
