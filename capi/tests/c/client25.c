/* A control-path client written against the DOCA 2.5 headers (an API level 2.5 install, or
 * DOCA_EMU_API_LEVEL=25), in the shape of NVIDIA's 2.5 cc_ctrl_path_client sample: send tasks
 * configured by a base-2 logarithm, size_t lengths and sizes, a receive callback taking a
 * size_t length. On b1:00.0, for the server argv[1]: sends argv[2] numbered messages one at a
 * time, checks each echo, prints "ok <n>". Each size_t getter is given a value whose every bit
 * is set: a 4-byte write (2.6's shape) would leave the upper half set and fail the check. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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
#error "client25.c is written against the DOCA 2.5 headers (API level 25)"
#endif

static int echoed, running;
static char last[64];

static void send_done(struct doca_cc_send_task *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	doca_task_free(doca_cc_send_task_as_task(task));
}

/* The 2.5 callback shape: the length is a size_t. */
static void on_msg(struct doca_cc_event_msg_recv *event, uint8_t *buf, size_t len, struct doca_cc_connection *c)
{
	(void)event;
	(void)c;
	CHECK(len == strlen(last) && memcmp(buf, last, len) == 0);
	echoed++;
}

static void on_state(const union doca_data ud, struct doca_ctx *ctx, enum doca_ctx_states prev, enum doca_ctx_states next)
{
	(void)ud;
	(void)ctx;
	(void)prev;
	running = next == DOCA_CTX_STATE_RUNNING;
}

int main(int argc, char **argv)
{
	struct doca_dev *dev;
	struct doca_pe *pe;
	struct doca_cc_client *client;
	struct doca_cc_connection *conn = NULL;
	struct doca_cc_send_task *task;
	enum doca_ctx_states state;
	size_t log_max = SIZE_MAX, got;
	int count, i;
	time_t end = time(NULL) + 60;

	if (argc < 3)
		return 2;
	count = atoi(argv[2]);
	CHECK_CODE(open_dev("b1:00.0", &dev), DOCA_SUCCESS);
	CHECK_CODE(doca_cc_cap_is_consumer_supported(doca_dev_as_devinfo(dev)), DOCA_SUCCESS);
	CHECK_CODE(doca_cc_producer_cap_get_max_log_num_tasks(doca_dev_as_devinfo(dev), &log_max), DOCA_SUCCESS);
	CHECK(log_max >= 1 && log_max < 32);
	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	got = SIZE_MAX;
	CHECK_CODE(doca_cc_cap_get_max_msg_size(doca_dev_as_devinfo(dev), &got), DOCA_SUCCESS);
	CHECK(got >= 4080 && got <= UINT32_MAX);
	CHECK_CODE(doca_cc_client_create(dev, argv[1], &client), DOCA_SUCCESS);
	CHECK_CODE(doca_cc_client_set_max_msg_size(client, ((size_t)1 << 32) | 4080), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_cc_client_set_recv_queue_size(client, ((size_t)1 << 32) | 32), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_cc_client_set_max_msg_size(client, 4080), DOCA_SUCCESS);
	CHECK_CODE(doca_cc_client_set_recv_queue_size(client, 32), DOCA_SUCCESS);
	got = SIZE_MAX;
	CHECK_CODE(doca_cc_client_get_max_msg_size(client, &got), DOCA_SUCCESS);
	CHECK(got == 4080);
	got = SIZE_MAX;
	CHECK_CODE(doca_cc_client_get_recv_queue_size(client, &got), DOCA_SUCCESS);
	CHECK(got == 32);
	CHECK_CODE(doca_pe_connect_ctx(pe, doca_cc_client_as_ctx(client)), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_set_state_changed_cb(doca_cc_client_as_ctx(client), on_state), DOCA_SUCCESS);
	CHECK_CODE(doca_cc_client_send_task_set_conf(client, send_done, send_done, 40), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_cc_client_send_task_set_conf(client, send_done, send_done, 4), DOCA_SUCCESS); /* 16 tasks */
	CHECK_CODE(doca_cc_client_event_msg_recv_register(client, on_msg), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(doca_cc_client_as_ctx(client)), DOCA_ERROR_IN_PROGRESS);
	while (!running && time(NULL) < end)
		doca_pe_progress(pe);
	CHECK_CODE(doca_cc_client_get_connection(client, &conn), DOCA_SUCCESS);
	for (i = 0; i < count && !failures && conn != NULL; i++) {
		snprintf(last, sizeof(last), "2.5 message %d", i);
		CHECK_CODE(doca_cc_client_send_task_alloc_init(client, conn, last, strlen(last), &task), DOCA_SUCCESS);
		CHECK_CODE(doca_task_submit(doca_cc_send_task_as_task(task)), DOCA_SUCCESS);
		while (echoed <= i && time(NULL) < end)
			if (doca_pe_progress(pe) == 0)
				nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
	}
	doca_ctx_stop(doca_cc_client_as_ctx(client));
	do {
		doca_pe_progress(pe);
		doca_ctx_get_state(doca_cc_client_as_ctx(client), &state);
	} while (state != DOCA_CTX_STATE_IDLE && time(NULL) < end + 5);
	CHECK_CODE(doca_cc_client_destroy(client), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	doca_dev_close(dev);
	CHECK(echoed == count);
	if (failures) {
		fprintf(stderr, "client25: %d check(s) failed\n", failures);
		return 1;
	}
	printf("ok %d\n", count);
	return 0;
}
