/* Sync events between two processes, in the shape of DOCA's samples: sync_event_host /
 * sync_event_dpu (2.5/2.6: the host exports with export_to_dpu, the value is waited on with
 * wait_gt) and sync_event_local_pci / sync_event_remote_pci (2.7+: either side exports with
 * export_to_remote_pci, waits with wait_eq). The export blob crosses over Comm Channel (the
 * DPU runs the server argv[1], the host the client), as the samples send it.
 *
 * argv: <server name> <host|dpu: this side> <host|dpu: the exporter> <25|29> <sync|async|die>
 *
 * sync:  doca_sync_event_start and the blocking calls (update_set, update_add, wait_*_yield
 *        on the exporter, wait_* on the importer);
 * async: doca_sync_event_as_ctx on a progress engine and the tasks (notify_set, notify_add,
 *        wait_gt/wait_eq); a waiting side sleeps on the engine's notification handle and
 *        must be woken by the other process's update;
 * die:   the exporter exits without cleaning up once the importer signalled; the importer's
 *        blocking wait and its get then answer DOCA_ERROR_NOT_FOUND.
 *
 * The exporter signals 1, the importer waits for it and adds 1, the exporter waits for 2.
 * Prints "ok". */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <doca_cc.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_pe.h>
#include <doca_sync_event.h>

#include "check.h"
#include "open.h"

static struct doca_cc_server *server;
static struct doca_cc_client *client;
static struct doca_cc_connection *conn;
static int running, peer_gone;
static uint8_t blob[256];
static uint32_t blob_len;

static struct doca_sync_event *se;
static struct doca_pe *se_pe;
static int v29, is_async;
static doca_error_t task_result;
static int task_done;

static void send_done(struct doca_cc_task_send *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	doca_task_free(doca_cc_task_send_as_task(task));
}

static void on_msg(struct doca_cc_event_msg_recv *event, uint8_t *buf, uint32_t len, struct doca_cc_connection *c)
{
	(void)event;
	(void)c;
	if (len <= sizeof(blob)) {
		memcpy(blob, buf, len);
		blob_len = len;
	}
}

static void on_connect(struct doca_cc_event_connection_status_changed *event, struct doca_cc_connection *c, uint8_t ok)
{
	(void)event;
	if (ok)
		conn = c;
}

static void on_disconnect(struct doca_cc_event_connection_status_changed *event, struct doca_cc_connection *c,
			  uint8_t ok)
{
	(void)event;
	(void)c;
	(void)ok;
	peer_gone = 1;
}

static void on_state(const union doca_data ud, struct doca_ctx *ctx, enum doca_ctx_states prev,
		     enum doca_ctx_states next)
{
	(void)ud;
	(void)ctx;
	(void)prev;
	if (next == DOCA_CTX_STATE_RUNNING)
		running = 1;
}

/* The sample's common task callbacks: one result for every task type. */
static void done_cb(struct doca_task *task)
{
	(void)task;
	task_result = DOCA_SUCCESS;
	task_done = 1;
}
static void err_cb(struct doca_task *task)
{
	task_result = doca_task_get_status(task);
	task_done = 1;
}
static void get_done(struct doca_sync_event_task_get *t, union doca_data a, union doca_data b)
{
	(void)a, (void)b;
	done_cb(doca_sync_event_task_get_as_doca_task(t));
}
static void get_err(struct doca_sync_event_task_get *t, union doca_data a, union doca_data b)
{
	(void)a, (void)b;
	err_cb(doca_sync_event_task_get_as_doca_task(t));
}
static void set_done(struct doca_sync_event_task_notify_set *t, union doca_data a, union doca_data b)
{
	(void)a, (void)b;
	done_cb(doca_sync_event_task_notify_set_as_doca_task(t));
}
static void set_err(struct doca_sync_event_task_notify_set *t, union doca_data a, union doca_data b)
{
	(void)a, (void)b;
	err_cb(doca_sync_event_task_notify_set_as_doca_task(t));
}
static void add_done(struct doca_sync_event_task_notify_add *t, union doca_data a, union doca_data b)
{
	(void)a, (void)b;
	done_cb(doca_sync_event_task_notify_add_as_doca_task(t));
}
static void add_err(struct doca_sync_event_task_notify_add *t, union doca_data a, union doca_data b)
{
	(void)a, (void)b;
	err_cb(doca_sync_event_task_notify_add_as_doca_task(t));
}
static void gt_done(struct doca_sync_event_task_wait_gt *t, union doca_data a, union doca_data b)
{
	(void)a, (void)b;
	done_cb(doca_sync_event_task_wait_gt_as_doca_task(t));
}
static void gt_err(struct doca_sync_event_task_wait_gt *t, union doca_data a, union doca_data b)
{
	(void)a, (void)b;
	err_cb(doca_sync_event_task_wait_gt_as_doca_task(t));
}
static void eq_done(struct doca_sync_event_task_wait_eq *t, union doca_data a, union doca_data b)
{
	(void)a, (void)b;
	done_cb(doca_sync_event_task_wait_eq_as_doca_task(t));
}
static void eq_err(struct doca_sync_event_task_wait_eq *t, union doca_data a, union doca_data b)
{
	(void)a, (void)b;
	err_cb(doca_sync_event_task_wait_eq_as_doca_task(t));
}

/* Submits `task` and runs the engine until its callback ran. A wait sleeps on the engine's
 * notification handle between passes: the other process's update must wake it (a 30 s
 * sleep that ends with nothing to do counts as a failure). sleep_between 2: the samples'
 * loop (sync_event_async_task_submit), progress until it returns non-zero once, then the
 * task must be done — so nothing else (a state change the program has no callback for) may
 * make doca_pe_progress report progress. */
static doca_error_t run_task(struct doca_task *task, int sleep_between)
{
	doca_notification_handle_t fd;
	time_t end = time(NULL) + 60;
	doca_error_t res;

	task_done = 0;
	res = doca_task_submit(task);
	if (res != DOCA_SUCCESS)
		return res;
	CHECK_CODE(doca_pe_get_notification_handle(se_pe, &fd), DOCA_SUCCESS);
	if (sleep_between == 2) {
		while (doca_pe_progress(se_pe) == 0 && time(NULL) < end)
			nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
		CHECK(task_done); /* the first non-zero progress was the task's completion */
	}
	while (!task_done && time(NULL) < end) {
		if (doca_pe_progress(se_pe) != 0)
			continue;
		if (!sleep_between) {
			nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
			continue;
		}
		CHECK_CODE(doca_pe_request_notification(se_pe), DOCA_SUCCESS);
		{
			struct pollfd p = {.fd = fd, .events = POLLIN};
			int n = poll(&p, 1, 30000);

			CHECK(n == 1); /* woken by the update, not by the timeout */
		}
		CHECK_CODE(doca_pe_clear_notification(se_pe, fd), DOCA_SUCCESS);
	}
	res = task_done ? task_result : DOCA_ERROR_TIME_OUT;
	doca_task_free(task);
	return res;
}

static void start_event(void)
{
	if (!is_async) {
		CHECK_CODE(doca_sync_event_start(se), DOCA_SUCCESS);
		CHECK(doca_sync_event_as_ctx(se) == NULL); /* standalone excludes context */
		return;
	}
	struct doca_ctx *ctx = doca_sync_event_as_ctx(se);

	CHECK(ctx != NULL);
	CHECK_CODE(doca_sync_event_start(se), DOCA_ERROR_NOT_PERMITTED);
	CHECK_CODE(doca_pe_create(&se_pe), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_connect_ctx(se_pe, ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_sync_event_task_get_set_conf(se, get_done, get_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_sync_event_task_notify_set_set_conf(se, set_done, set_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_sync_event_task_notify_add_set_conf(se, add_done, add_err, 4), DOCA_SUCCESS);
	if (v29)
		CHECK_CODE(doca_sync_event_task_wait_eq_set_conf(se, eq_done, eq_err, 4), DOCA_SUCCESS);
	else
		CHECK_CODE(doca_sync_event_task_wait_gt_set_conf(se, gt_done, gt_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(ctx), DOCA_SUCCESS);
	/* Configured before the start only: the header's code for a started event. */
	CHECK_CODE(doca_sync_event_task_get_set_conf(se, get_done, get_err, 4), DOCA_ERROR_NOT_PERMITTED);
	{
		/* Tasks of two types held at once (the remote_pci sample keeps its wait task while it
		 * allocates its notify task): each pool numbers its tasks from 0, yet each task has
		 * its own handle. */
		struct doca_sync_event_task_get *g;
		struct doca_sync_event_task_notify_set *n;
		union doca_data ud = {.u64 = 0};
		uint64_t out = 0;

		CHECK_CODE(doca_sync_event_task_get_alloc_init(se, &out, ud, &g), DOCA_SUCCESS);
		CHECK_CODE(doca_sync_event_task_notify_set_alloc_init(se, 5, ud, &n), DOCA_SUCCESS);
		CHECK(doca_sync_event_task_get_as_doca_task(g) != doca_sync_event_task_notify_set_as_doca_task(n));
		CHECK(doca_sync_event_task_get_get_ret_val_ptr(g) == &out);
		CHECK(doca_sync_event_task_notify_set_get_set_val(n) == 5);
		doca_task_free(doca_sync_event_task_notify_set_as_doca_task(n));
		CHECK(doca_sync_event_task_get_as_doca_task(g) != NULL); /* still live */
		/* Validation wants somewhere to put the value; the task stays the application's. */
		doca_sync_event_task_get_set_ret_val_ptr(g, NULL);
		CHECK_CODE(doca_task_try_submit(doca_sync_event_task_get_as_doca_task(g)), DOCA_ERROR_INVALID_VALUE);
		doca_task_free(doca_sync_event_task_get_as_doca_task(g));
	}
}

/* Signals: set to `value` (the exporter) or add 1 (the importer). */
static void signal_value(int set, uint64_t value)
{
	uint64_t fetched = 99;
	union doca_data ud = {.u64 = 0};

	if (!is_async) {
		if (set) {
			CHECK_CODE(doca_sync_event_update_set(se, value), DOCA_SUCCESS);
		} else {
			CHECK_CODE(doca_sync_event_update_add(se, 1, &fetched), DOCA_SUCCESS);
			CHECK(fetched == value - 1);
		}
		return;
	}
	if (set) {
		struct doca_sync_event_task_notify_set *t;

		CHECK_CODE(doca_sync_event_task_notify_set_alloc_init(se, value, ud, &t), DOCA_SUCCESS);
		CHECK(doca_sync_event_task_notify_set_get_set_val(t) == value);
		CHECK_CODE(run_task(doca_sync_event_task_notify_set_as_doca_task(t), 0), DOCA_SUCCESS);
	} else {
		struct doca_sync_event_task_notify_add *t;

		CHECK_CODE(doca_sync_event_task_notify_add_alloc_init(se, 1, &fetched, ud, &t), DOCA_SUCCESS);
		CHECK(doca_sync_event_task_notify_add_get_fetched_val_ptr(t) == &fetched);
		CHECK_CODE(run_task(doca_sync_event_task_notify_add_as_doca_task(t), 0), DOCA_SUCCESS);
		CHECK(fetched == value - 1);
	}
}

/* Waits until the value is `value` (2.7+: wait_eq) or above `value - 1` (2.5/2.6: wait_gt,
 * through a one-byte mask). */
static void wait_value(uint64_t value, int yield, int loop)
{
	union doca_data ud = {.u64 = 0};
	uint64_t got = 0;

	if (!is_async) {
		if (v29)
			CHECK_CODE(yield ? doca_sync_event_wait_eq_yield(se, value, UINT64_MAX) :
					   doca_sync_event_wait_eq(se, value, UINT64_MAX),
				   DOCA_SUCCESS);
		else
			CHECK_CODE(yield ? doca_sync_event_wait_gt_yield(se, value - 1, 0xFF) :
					   doca_sync_event_wait_gt(se, value - 1, 0xFF),
				   DOCA_SUCCESS);
		CHECK_CODE(doca_sync_event_get(se, &got), DOCA_SUCCESS);
		CHECK(got == value);
		return;
	}
	if (v29) {
		struct doca_sync_event_task_wait_eq *t;

		CHECK_CODE(doca_sync_event_task_wait_eq_alloc_init(se, value, UINT64_MAX, ud, &t), DOCA_SUCCESS);
		CHECK(doca_sync_event_task_wait_eq_get_wait_val(t) == value);
		CHECK(doca_sync_event_task_wait_eq_get_mask(t) == UINT64_MAX);
		CHECK_CODE(run_task(doca_sync_event_task_wait_eq_as_doca_task(t), loop), DOCA_SUCCESS);
	} else {
		struct doca_sync_event_task_wait_gt *t;

		CHECK_CODE(doca_sync_event_task_wait_gt_alloc_init(se, value - 1, 0xFF, ud, &t), DOCA_SUCCESS);
		CHECK_CODE(run_task(doca_sync_event_task_wait_gt_as_doca_task(t), loop), DOCA_SUCCESS);
	}
	{
		struct doca_sync_event_task_get *t;

		CHECK_CODE(doca_sync_event_task_get_alloc_init(se, &got, ud, &t), DOCA_SUCCESS);
		CHECK_CODE(run_task(doca_sync_event_task_get_as_doca_task(t), 0), DOCA_SUCCESS);
		CHECK(got == value);
	}
}

static void tear_down_event(void)
{
	if (is_async) {
		struct doca_ctx *ctx = doca_sync_event_as_ctx(se);
		enum doca_ctx_states state;

		CHECK_CODE(doca_ctx_stop(ctx), DOCA_SUCCESS);
		CHECK_CODE(doca_ctx_get_state(ctx, &state), DOCA_SUCCESS);
		CHECK(state == DOCA_CTX_STATE_IDLE);
	} else {
		CHECK_CODE(doca_sync_event_stop(se), DOCA_SUCCESS);
	}
	CHECK_CODE(doca_sync_event_destroy(se), DOCA_SUCCESS);
	if (se_pe)
		CHECK_CODE(doca_pe_destroy(se_pe), DOCA_SUCCESS);
}

int main(int argc, char **argv)
{
	struct doca_dev *dev = NULL;
	struct doca_dev_rep *rep = NULL;
	struct doca_pe *pe;
	struct doca_ctx *cc_ctx;
	time_t end = time(NULL) + 60;
	int dpu, exporter, die;

	if (argc < 6)
		return 2;
	dpu = strcmp(argv[2], "dpu") == 0;
	exporter = strcmp(argv[2], argv[3]) == 0;
	v29 = strcmp(argv[4], "29") == 0;
	is_async = strcmp(argv[5], "async") == 0;
	die = strcmp(argv[5], "die") == 0;

	/* Comm Channel: the DPU serves, the host connects (the samples' sync_event_cc_init). */
	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	if (dpu) {
		CHECK_CODE(open_dpu(&dev, &rep), DOCA_SUCCESS);
		CHECK_CODE(doca_cc_server_create(dev, rep, argv[1], &server), DOCA_SUCCESS);
		cc_ctx = doca_cc_server_as_ctx(server);
		CHECK_CODE(doca_cc_server_task_send_set_conf(server, send_done, send_done, 8), DOCA_SUCCESS);
		CHECK_CODE(doca_cc_server_event_msg_recv_register(server, on_msg), DOCA_SUCCESS);
		CHECK_CODE(doca_cc_server_event_connection_register(server, on_connect, on_disconnect), DOCA_SUCCESS);
	} else {
		CHECK_CODE(open_dev("b1:00.0", &dev), DOCA_SUCCESS);
		CHECK_CODE(doca_cc_client_create(dev, argv[1], &client), DOCA_SUCCESS);
		cc_ctx = doca_cc_client_as_ctx(client);
		CHECK_CODE(doca_cc_client_task_send_set_conf(client, send_done, send_done, 8), DOCA_SUCCESS);
		CHECK_CODE(doca_cc_client_event_msg_recv_register(client, on_msg), DOCA_SUCCESS);
		CHECK_CODE(doca_ctx_set_state_changed_cb(cc_ctx, on_state), DOCA_SUCCESS);
	}
	if (failures)
		return checks_result();
	CHECK_CODE(doca_pe_connect_ctx(pe, cc_ctx), DOCA_SUCCESS);
	doca_ctx_start(cc_ctx);
	if (dpu) {
		printf("running\n");
		fflush(stdout);
	}
	while (conn == NULL && time(NULL) < end) {
		if (!dpu && running)
			doca_cc_client_get_connection(client, &conn);
		if (doca_pe_progress(pe) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
	}
	CHECK(conn != NULL);
	if (failures)
		return checks_result();

	if (exporter) {
		const uint8_t *data = NULL;
		size_t sz = 0;
		struct doca_cc_task_send *task;

		CHECK_CODE(doca_sync_event_create(&se), DOCA_SUCCESS);
		if (v29) {
			CHECK_CODE(doca_sync_event_cap_is_export_to_remote_pci_supported(doca_dev_as_devinfo(dev)), DOCA_SUCCESS);
			CHECK_CODE(doca_sync_event_add_publisher_location_remote_pci(se), DOCA_SUCCESS);
		} else {
			CHECK_CODE(doca_sync_event_cap_is_export_to_dpu_supported(doca_dev_as_devinfo(dev)), DOCA_SUCCESS);
			CHECK_CODE(doca_sync_event_add_publisher_location_dpu(se), DOCA_SUCCESS);
		}
		CHECK_CODE(doca_sync_event_add_subscriber_location_cpu(se, dev), DOCA_SUCCESS);
		start_event();
		CHECK_CODE(doca_sync_event_add_subscriber_location_cpu(se, dev), DOCA_ERROR_BAD_STATE);
		if (v29)
			CHECK_CODE(doca_sync_event_export_to_remote_pci(se, dev, &data, &sz), DOCA_SUCCESS);
		else
			CHECK_CODE(doca_sync_event_export_to_dpu(se, dev, &data, &sz), DOCA_SUCCESS);
		CHECK(data != NULL && sz > 0);
		if (failures)
			return checks_result();
		if (dpu)
			CHECK_CODE(doca_cc_server_task_send_alloc_init(server, conn, data, (uint32_t)sz, &task), DOCA_SUCCESS);
		else
			CHECK_CODE(doca_cc_client_task_send_alloc_init(client, conn, data, (uint32_t)sz, &task), DOCA_SUCCESS);
		CHECK_CODE(doca_task_submit(doca_cc_task_send_as_task(task)), DOCA_SUCCESS);
		if (die) {
			/* Wait for the importer's signal, then vanish without destroying anything. */
			CHECK_CODE(doca_sync_event_wait_eq(se, 1, UINT64_MAX), DOCA_SUCCESS);
			if (failures)
				return checks_result();
			printf("ok\n");
			fflush(stdout);
			_exit(0);
		}
		/* Let the importer reach its wait first (its first engine pass then finds the value
		 * unset: see run_task's mode 2). */
		nanosleep(&(struct timespec){.tv_nsec = 300000000}, NULL);
		signal_value(1, 1);
		wait_value(2, 1, 1);
	} else {
		while (blob_len == 0 && time(NULL) < end)
			if (doca_pe_progress(pe) == 0)
				nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
		CHECK(blob_len > 0);
		CHECK_CODE(doca_sync_event_cap_is_create_from_export_supported(doca_dev_as_devinfo(dev)), DOCA_SUCCESS);
		CHECK_CODE(doca_sync_event_create_from_export(dev, blob, blob_len - 1, &se), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_sync_event_create_from_export(dev, blob, blob_len, &se), DOCA_SUCCESS);
		if (failures)
			return checks_result();
		CHECK_CODE(doca_sync_event_add_publisher_location_cpu(se, dev), DOCA_ERROR_NOT_PERMITTED);
		if (die) {
			uint64_t v = 0;

			CHECK_CODE(doca_sync_event_start(se), DOCA_SUCCESS);
			CHECK_CODE(doca_sync_event_update_set(se, 1), DOCA_SUCCESS);
			/* The exporter exits now: the wait ends with NOT_FOUND, as does every call. */
			CHECK_CODE(doca_sync_event_wait_eq(se, 5, UINT64_MAX), DOCA_ERROR_NOT_FOUND);
			CHECK_CODE(doca_sync_event_get(se, &v), DOCA_ERROR_NOT_FOUND);
			CHECK_CODE(doca_sync_event_update_add(se, 1, &v), DOCA_ERROR_NOT_FOUND);
			CHECK_CODE(doca_sync_event_stop(se), DOCA_SUCCESS);
			CHECK_CODE(doca_sync_event_destroy(se), DOCA_SUCCESS);
			return checks_result();
		}
		start_event();
		/* The importer's first pass of its engine is the remote_pci sample's wait loop. */
		wait_value(1, 0, 2);
		signal_value(0, 2);
	}
	tear_down_event();

	/* The exporter waits for the importer to leave (the samples' teardown order), then both
	 * stop Comm Channel. */
	if (exporter)
		while (!peer_gone && dpu && time(NULL) < end)
			if (doca_pe_progress(pe) == 0)
				nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
	doca_ctx_stop(cc_ctx);
	{
		enum doca_ctx_states state;

		do {
			doca_pe_progress(pe);
			doca_ctx_get_state(cc_ctx, &state);
		} while (state != DOCA_CTX_STATE_IDLE && time(NULL) < end + 5);
	}
	if (dpu)
		doca_cc_server_destroy(server);
	else
		doca_cc_client_destroy(client);
	doca_pe_destroy(pe);
	if (rep)
		doca_dev_rep_close(rep);
	doca_dev_close(dev);
	return checks_result();
}
