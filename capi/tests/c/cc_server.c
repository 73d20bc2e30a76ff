/* An echo server in the shape of DOCA's cc_ctrl_path server sample: on the DPU device
 * 03:00.0 for the host function b1:00.0, named argv[1]; answers every message with the same
 * bytes; stops after its client has gone (or after 60 s), then prints "served <n>". */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <doca_cc.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_pe.h>

#include "open.h"

static int served, gone, failed;

static void send_done(struct doca_cc_task_send *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	doca_task_free(doca_cc_task_send_as_task(task));
}

static void send_failed(struct doca_cc_task_send *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	fprintf(stderr, "send failed: %s\n", doca_error_get_name(doca_task_get_status(doca_cc_task_send_as_task(task))));
	doca_task_free(doca_cc_task_send_as_task(task));
}

static void on_msg(struct doca_cc_event_msg_recv *event, uint8_t *buf, uint32_t len, struct doca_cc_connection *conn)
{
	struct doca_cc_task_send *task;
	struct doca_cc_server *server = doca_cc_server_get_server_ctx(conn);
	doca_error_t res;

	(void)event;
	if (server == NULL) {
		failed = 1;
		return;
	}
	res = doca_cc_server_task_send_alloc_init(server, conn, buf, len, &task);
	if (res == DOCA_SUCCESS)
		res = doca_task_submit(doca_cc_task_send_as_task(task));
	if (res != DOCA_SUCCESS) {
		fprintf(stderr, "echo failed: %s\n", doca_error_get_name(res));
		failed = 1;
		return;
	}
	served++;
}

static void on_connect(struct doca_cc_event_connection_status_changed *event, struct doca_cc_connection *conn,
		       uint8_t ok)
{
	union doca_data d = {.u64 = 7};

	(void)event;
	if (!ok || doca_cc_connection_set_user_data(conn, d) != DOCA_SUCCESS)
		failed = 1;
}

static void on_disconnect(struct doca_cc_event_connection_status_changed *event, struct doca_cc_connection *conn,
			  uint8_t ok)
{
	(void)event;
	(void)ok;
	if (doca_cc_connection_get_user_data(conn).u64 != 7)
		failed = 1;
	gone = 1;
}

int main(int argc, char **argv)
{
	struct doca_dev *dev;
	struct doca_dev_rep *rep;
	struct doca_pe *pe;
	struct doca_cc_server *server;
	enum doca_ctx_states state;
	time_t end = time(NULL) + 60;
	doca_error_t res;

	if (argc < 2)
		return 2;
	res = open_dpu(&dev, &rep);
	if (res != DOCA_SUCCESS) {
		fprintf(stderr, "open: %s\n", doca_error_get_name(res));
		return 1;
	}
	if (doca_pe_create(&pe) != DOCA_SUCCESS || doca_cc_server_create(dev, rep, argv[1], &server) != DOCA_SUCCESS ||
	    doca_pe_connect_ctx(pe, doca_cc_server_as_ctx(server)) != DOCA_SUCCESS ||
	    doca_cc_server_task_send_set_conf(server, send_done, send_failed, 64) != DOCA_SUCCESS ||
	    doca_cc_server_event_msg_recv_register(server, on_msg) != DOCA_SUCCESS ||
	    doca_cc_server_event_connection_register(server, on_connect, on_disconnect) != DOCA_SUCCESS) {
		fprintf(stderr, "server setup failed\n");
		return 1;
	}
	{
		/* As the samples do: the capability, then the sizes. */
		uint32_t max, got;
		struct doca_dev *d;

		if (doca_cc_cap_get_max_msg_size(doca_dev_as_devinfo(dev), &max) != DOCA_SUCCESS || max < 4080 ||
		    doca_cc_cap_server_is_supported(doca_dev_as_devinfo(dev)) != DOCA_SUCCESS ||
		    doca_cc_server_set_max_msg_size(server, 4080) != DOCA_SUCCESS ||
		    doca_cc_server_set_recv_queue_size(server, 64) != DOCA_SUCCESS ||
		    doca_cc_server_get_max_msg_size(server, &got) != DOCA_SUCCESS || got != 4080 ||
		    doca_cc_server_set_max_msg_size(server, max + 1) != DOCA_ERROR_INVALID_VALUE ||
		    doca_cc_server_get_device(server, &d) != DOCA_SUCCESS || d != dev) {
			fprintf(stderr, "server sizes failed\n");
			return 1;
		}
	}
	res = doca_ctx_start(doca_cc_server_as_ctx(server));
	if (res != DOCA_SUCCESS) {
		fprintf(stderr, "start: %s\n", doca_error_get_name(res));
		return 1;
	}
	printf("running\n");
	fflush(stdout);
	while (!gone && !failed && time(NULL) < end)
		if (doca_pe_progress(pe) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
	res = doca_ctx_stop(doca_cc_server_as_ctx(server));
	do {
		doca_pe_progress(pe);
		doca_ctx_get_state(doca_cc_server_as_ctx(server), &state);
	} while (state != DOCA_CTX_STATE_IDLE && time(NULL) < end + 5);
	if (doca_cc_server_destroy(server) != DOCA_SUCCESS || doca_pe_destroy(pe) != DOCA_SUCCESS)
		failed = 1;
	doca_dev_rep_close(rep);
	doca_dev_close(dev);
	if (failed || !gone) {
		fprintf(stderr, "server: failed=%d gone=%d served=%d\n", failed, gone, served);
		return 1;
	}
	printf("served %d\n", served);
	return 0;
}
