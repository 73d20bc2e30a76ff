/* The fast path in the shape of DOCA's cc_data_path_high_speed samples, one program for both
 * roles: `fast_path server NAME N` on the DPU device 03:00.0 for host function b1:00.0, and
 * `fast_path client NAME N` on b1:00.0. Each side starts a consumer (over malloc'd memory) and
 * a producer on its connection once it is up. The client sends N numbered messages through
 * its producer into the server's consumer; the server's post-receive callback checks each,
 * sends it back through its producer and posts the same task again; the client checks each
 * echo. Both print "ok N" at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_cc.h>
#include <doca_cc_consumer.h>
#include <doca_cc_producer.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_mmap.h>
#include <doca_pe.h>

#include "check.h"
#include "open.h"

#define SLOTS 8
#define SLOT_LEN 256

static struct doca_cc_connection *conn;
static struct doca_cc_producer *producer;
static struct doca_buf_inventory *inv;
static struct doca_mmap *src_map;
static char src_mem[SLOTS * SLOT_LEN];
static uint32_t remote_id;
static int is_server, received, sent_back, consumer_gone, disconnected, failed;
static char expect[SLOT_LEN];
/* The server's last message received, echoed from the main loop once the client's consumer
 * is known (the client sends one message at a time). */
static char pending[SLOT_LEN];
static size_t pending_len;

static void fail(const char *what, doca_error_t res)
{
	fprintf(stderr, "%s: %s: %s\n", is_server ? "server" : "client", what, doca_error_get_name(res));
	failed = 1;
}

static void send_task_cb(struct doca_cc_task_send *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	doca_task_free(doca_cc_task_send_as_task(task));
}

static void on_msg(struct doca_cc_event_msg_recv *event, uint8_t *buf, uint32_t len, struct doca_cc_connection *c)
{
	(void)event;
	(void)buf;
	(void)len;
	(void)c;
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
	disconnected = 1;
}

static void new_consumer(struct doca_cc_event_consumer *event, struct doca_cc_connection *c, uint32_t id)
{
	(void)event;
	if (c != conn)
		fail("new consumer on another connection", DOCA_ERROR_UNEXPECTED);
	remote_id = id;
}

static void expired_consumer(struct doca_cc_event_consumer *event, struct doca_cc_connection *c, uint32_t id)
{
	(void)event;
	(void)c;
	if (id == remote_id)
		consumer_gone = 1;
}

static void producer_done(struct doca_cc_producer_task_send *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	doca_buf_dec_refcount(doca_cc_producer_task_send_get_buf(task), NULL);
	doca_task_free(doca_cc_producer_task_send_as_task(task));
}

static void producer_failed(struct doca_cc_producer_task_send *task, union doca_data td, union doca_data cd)
{
	fail("producer send", doca_task_get_status(doca_cc_producer_task_send_as_task(task)));
	producer_done(task, td, cd);
}

/* Sends `len` bytes of `data` to the peer's consumer through a buffer of our source map. */
static doca_error_t produce(const void *data, size_t len, int slot)
{
	struct doca_cc_producer_task_send *task;
	struct doca_buf *buf;
	char *at = src_mem + (slot % SLOTS) * SLOT_LEN;
	doca_error_t res;

	memcpy(at, data, len);
	res = doca_buf_inventory_buf_get_by_data(inv, src_map, at, len, &buf);
	if (res != DOCA_SUCCESS)
		return res;
	res = doca_cc_producer_task_send_alloc_init(producer, buf, remote_id, &task);
	if (res == DOCA_SUCCESS && doca_cc_producer_task_send_get_consumer_id(task) != remote_id)
		res = DOCA_ERROR_UNEXPECTED;
	if (res == DOCA_SUCCESS)
		res = doca_task_submit(doca_cc_producer_task_send_as_task(task));
	if (res != DOCA_SUCCESS)
		doca_buf_dec_refcount(buf, NULL);
	return res;
}

static void consumer_done(struct doca_cc_consumer_task_post_recv *task, union doca_data td, union doca_data cd)
{
	struct doca_buf *buf = doca_cc_consumer_task_post_recv_get_buf(task);
	void *data;
	size_t len;
	doca_error_t res;

	(void)td;
	(void)cd;
	if (doca_buf_get_data(buf, &data) != DOCA_SUCCESS || doca_buf_get_data_len(buf, &len) != DOCA_SUCCESS) {
		fail("received buffer", DOCA_ERROR_UNEXPECTED);
		return;
	}
	snprintf(expect, sizeof(expect), "fast message %d", received);
	if (len != strlen(expect) || memcmp(data, expect, len) != 0 ||
	    doca_cc_consumer_task_post_recv_get_producer_id(task) == 0) {
		fprintf(stderr, "%s: message %d: got %zu bytes '%.*s'\n", is_server ? "server" : "client", received, len,
			(int)len, (char *)data);
		failed = 1;
	}
	received++;
	if (is_server && len <= sizeof(pending)) {
		memcpy(pending, data, len);
		pending_len = len;
	}
	/* The same task, posted again from its callback, as the samples do; the server keeps it
	 * back (no FLUSH flag): it goes to the peer at the engine's next progress. */
	doca_buf_reset_data_len(buf);
	res = doca_task_submit_ex(doca_cc_consumer_task_post_recv_as_task(task),
				  is_server ? DOCA_TASK_SUBMIT_FLAG_NONE : DOCA_TASK_SUBMIT_FLAG_FLUSH);
	if (res != DOCA_SUCCESS)
		fail("post again", res);
}

static void consumer_failed(struct doca_cc_consumer_task_post_recv *task, union doca_data td, union doca_data cd)
{
	doca_error_t res = doca_task_get_status(doca_cc_consumer_task_post_recv_as_task(task));

	(void)td;
	(void)cd;
	if (res != DOCA_ERROR_SHUTDOWN)
		fail("post-receive", res);
	doca_task_free(doca_cc_consumer_task_post_recv_as_task(task));
}

static void progress_until(struct doca_pe *pe, int *flag, time_t end)
{
	while (!*flag && !failed && time(NULL) < end)
		if (doca_pe_progress(pe) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
}

static int idle(struct doca_ctx *ctx)
{
	enum doca_ctx_states s;

	return doca_ctx_get_state(ctx, &s) == DOCA_SUCCESS && s == DOCA_CTX_STATE_IDLE;
}

/* Stops `ctx` unless it already stopped (a consumer or producer stops by itself when its
 * connection goes down). */
static void stop(struct doca_pe *pe, struct doca_ctx *ctx, const char *what, time_t end)
{
	doca_error_t res = idle(ctx) ? DOCA_SUCCESS : doca_ctx_stop(ctx);

	if (res != DOCA_SUCCESS && res != DOCA_ERROR_IN_PROGRESS)
		fail(what, res);
	while (!idle(ctx) && time(NULL) < end)
		doca_pe_progress(pe);
}

int main(int argc, char **argv)
{
	struct doca_dev *dev = NULL;
	struct doca_dev_rep *rep = NULL;
	struct doca_pe *pe;
	struct doca_cc_server *server = NULL;
	struct doca_cc_client *client = NULL;
	struct doca_ctx *side;
	struct doca_cc_consumer *consumer;
	struct doca_mmap *dst_map;
	struct doca_cc_consumer_task_post_recv *task;
	struct doca_buf *buf;
	char *dst_mem = calloc(SLOTS, SLOT_LEN);
	time_t end = time(NULL) + 60;
	int count, i, consumer_up = 0;
	uint32_t id, max;
	doca_error_t res;

	if (argc < 4 || dst_mem == NULL)
		return 2;
	is_server = strcmp(argv[1], "server") == 0;
	count = atoi(argv[3]);
	res = is_server ? open_dpu(&dev, &rep) : open_dev("b1:00.0", &dev);
	if (res != DOCA_SUCCESS || doca_pe_create(&pe) != DOCA_SUCCESS) {
		fail("open", res);
		return 1;
	}
	if (doca_cc_consumer_cap_is_supported(doca_dev_as_devinfo(dev)) != DOCA_SUCCESS ||
	    doca_cc_producer_cap_get_max_num_tasks(doca_dev_as_devinfo(dev), &max) != DOCA_SUCCESS || max < SLOTS) {
		fail("capabilities", DOCA_ERROR_NOT_SUPPORTED);
		return 1;
	}
	if (is_server) {
		res = doca_cc_server_create(dev, rep, argv[2], &server);
		side = doca_cc_server_as_ctx(server);
		if (res == DOCA_SUCCESS)
			res = doca_cc_server_task_send_set_conf(server, send_task_cb, send_task_cb, 4);
		if (res == DOCA_SUCCESS)
			res = doca_cc_server_event_msg_recv_register(server, on_msg);
		if (res == DOCA_SUCCESS)
			res = doca_cc_server_event_connection_register(server, on_connect, on_disconnect);
		if (res == DOCA_SUCCESS)
			res = doca_cc_server_event_consumer_register(server, new_consumer, expired_consumer);
	} else {
		res = doca_cc_client_create(dev, argv[2], &client);
		side = doca_cc_client_as_ctx(client);
		if (res == DOCA_SUCCESS)
			res = doca_cc_client_task_send_set_conf(client, send_task_cb, send_task_cb, 4);
		if (res == DOCA_SUCCESS)
			res = doca_cc_client_event_msg_recv_register(client, on_msg);
		if (res == DOCA_SUCCESS)
			res = doca_cc_client_event_consumer_register(client, new_consumer, expired_consumer);
	}
	if (res == DOCA_SUCCESS)
		res = doca_pe_connect_ctx(pe, side);
	if (res == DOCA_SUCCESS) {
		res = doca_ctx_start(side);
		if (res == DOCA_ERROR_IN_PROGRESS)
			res = DOCA_SUCCESS;
	}
	if (res != DOCA_SUCCESS) {
		fail("setup", res);
		return 1;
	}
	printf("running\n");
	fflush(stdout);
	while (conn == NULL && !failed && time(NULL) < end) {
		if (!is_server && doca_cc_client_get_connection(client, &conn) == DOCA_SUCCESS)
			break;
		if (doca_pe_progress(pe) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
	}
	/* Memory: the consumer's over malloc'd memory, the producer's source buffers. */
	if (doca_mmap_create(&dst_map) != DOCA_SUCCESS || doca_mmap_add_dev(dst_map, dev) != DOCA_SUCCESS ||
	    doca_mmap_set_memrange(dst_map, dst_mem, SLOTS * SLOT_LEN) != DOCA_SUCCESS ||
	    doca_mmap_set_permissions(dst_map, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE | DOCA_ACCESS_FLAG_PCI_READ_WRITE) !=
		    DOCA_SUCCESS ||
	    doca_mmap_start(dst_map) != DOCA_SUCCESS || doca_mmap_create(&src_map) != DOCA_SUCCESS ||
	    doca_mmap_set_memrange(src_map, src_mem, sizeof(src_mem)) != DOCA_SUCCESS ||
	    doca_mmap_start(src_map) != DOCA_SUCCESS || doca_buf_inventory_create(2 * SLOTS, &inv) != DOCA_SUCCESS ||
	    doca_buf_inventory_start(inv) != DOCA_SUCCESS) {
		fail("memory", DOCA_ERROR_UNEXPECTED);
		return 1;
	}
	res = conn == NULL ? DOCA_ERROR_TIME_OUT : doca_cc_consumer_create(conn, dst_map, &consumer);
	if (res == DOCA_SUCCESS)
		res = doca_cc_consumer_task_post_recv_set_conf(consumer, consumer_done, consumer_failed, SLOTS);
	if (res == DOCA_SUCCESS)
		res = doca_pe_connect_ctx(pe, doca_cc_consumer_as_ctx(consumer));
	if (res == DOCA_SUCCESS && doca_cc_consumer_get_id(consumer, &id) == DOCA_SUCCESS && id == 0)
		res = DOCA_ERROR_UNEXPECTED;
	if (res == DOCA_SUCCESS) {
		res = doca_ctx_start(doca_cc_consumer_as_ctx(consumer));
		if (res == DOCA_ERROR_IN_PROGRESS)
			res = DOCA_SUCCESS;
	}
	if (res == DOCA_SUCCESS)
		res = doca_cc_producer_create(conn, &producer);
	if (res == DOCA_SUCCESS)
		res = doca_cc_producer_task_send_set_conf(producer, producer_done, producer_failed, SLOTS);
	if (res == DOCA_SUCCESS)
		res = doca_pe_connect_ctx(pe, doca_cc_producer_as_ctx(producer));
	if (res == DOCA_SUCCESS)
		res = doca_ctx_start(doca_cc_producer_as_ctx(producer));
	if (res != DOCA_SUCCESS) {
		fail("consumer and producer", res);
		return 1;
	}
	while (!consumer_up && !failed && time(NULL) < end) {
		enum doca_ctx_states s;

		doca_pe_progress(pe);
		consumer_up = doca_ctx_get_state(doca_cc_consumer_as_ctx(consumer), &s) == DOCA_SUCCESS &&
			      s == DOCA_CTX_STATE_RUNNING;
	}
	for (i = 0; i < SLOTS && !failed; i++) {
		res = doca_buf_inventory_buf_get_by_addr(inv, dst_map, dst_mem + i * SLOT_LEN, SLOT_LEN, &buf);
		if (res == DOCA_SUCCESS)
			res = doca_cc_consumer_task_post_recv_alloc_init(consumer, buf, &task);
		if (res == DOCA_SUCCESS && (doca_cc_consumer_task_post_recv_get_buf(task) != buf ||
					    doca_task_get_ctx(doca_cc_consumer_task_post_recv_as_task(task)) !=
						    doca_cc_consumer_as_ctx(consumer)))
			res = DOCA_ERROR_UNEXPECTED;
		if (res == DOCA_SUCCESS && i == 0)
			CHECK_CODE(doca_task_submit_ex(doca_cc_consumer_task_post_recv_as_task(task), 1U << 7),
				   DOCA_ERROR_INVALID_VALUE); /* an unknown flag; the task stays ours */
		/* Posted together: kept back, then handed over at once. */
		if (res == DOCA_SUCCESS)
			res = doca_task_submit_ex(doca_cc_consumer_task_post_recv_as_task(task), DOCA_TASK_SUBMIT_FLAG_NONE);
		if (res != DOCA_SUCCESS)
			fail("post", res);
	}
	doca_ctx_flush_tasks(doca_cc_consumer_as_ctx(consumer));
	/* The error paths, as the headers give them. */
	{
		struct doca_cc_consumer *k;
		struct doca_cc_producer *p;
		struct doca_cc_producer_task_send *t;

		CHECK_CODE(doca_cc_consumer_create(NULL, dst_map, &k), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_cc_consumer_create(conn, NULL, &k), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_cc_consumer_create(conn, src_map, &k), DOCA_ERROR_NOT_PERMITTED); /* no PCI write */
		CHECK_CODE(doca_cc_producer_create(NULL, &p), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_cc_producer_destroy(NULL), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_cc_consumer_destroy(consumer), DOCA_ERROR_BAD_STATE); /* not Idle */
		CHECK_CODE(doca_cc_producer_destroy(producer), DOCA_ERROR_BAD_STATE);
		CHECK_CODE(doca_cc_producer_task_send_set_conf(producer, producer_done, producer_failed, 4),
			   DOCA_ERROR_BAD_STATE);
		CHECK_CODE(doca_cc_producer_task_send_alloc_init(producer, NULL, 1, &t), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_cc_consumer_get_id(NULL, &id), DOCA_ERROR_INVALID_VALUE);
		CHECK(doca_cc_consumer_task_post_recv_get_buf(NULL) == NULL);
		CHECK(doca_cc_producer_task_send_get_consumer_id(NULL) == 0);
		CHECK_CODE(doca_cc_producer_cap_get_max_producers(NULL, &max), DOCA_ERROR_INVALID_VALUE);
		if (failures)
			failed = 1;
	}
	while (remote_id == 0 && !failed && time(NULL) < end)
		if (doca_pe_progress(pe) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
	if (is_server) {
		/* Echo until the client's consumer goes away. */
		while (!consumer_gone && !failed && time(NULL) < end) {
			if (sent_back < received) {
				res = produce(pending, pending_len, sent_back);
				if (res != DOCA_SUCCESS)
					fail("echo", res);
				sent_back++;
			}
			if (doca_pe_progress(pe) == 0)
				nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
		}
	} else {
		for (i = 0; i < count && !failed && time(NULL) < end; i++) {
			char msg[64];

			snprintf(msg, sizeof(msg), "fast message %d", i);
			res = produce(msg, strlen(msg), i);
			if (res != DOCA_SUCCESS) {
				fail("send", res);
				break;
			}
			while (received <= i && !failed && time(NULL) < end)
				if (doca_pe_progress(pe) == 0)
					nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
		}
	}
	stop(pe, doca_cc_producer_as_ctx(producer), "stop the producer", end + 5);
	stop(pe, doca_cc_consumer_as_ctx(consumer), "stop the consumer", end + 5);
	if (doca_cc_producer_destroy(producer) != DOCA_SUCCESS || doca_cc_consumer_destroy(consumer) != DOCA_SUCCESS)
		fail("destroy", DOCA_ERROR_UNEXPECTED);
	if (is_server)
		progress_until(pe, &disconnected, end + 5); /* the client disconnects */
	stop(pe, side, "stop the side", end + 10);
	if ((is_server ? doca_cc_server_destroy(server) : doca_cc_client_destroy(client)) != DOCA_SUCCESS)
		fail("destroy the side", DOCA_ERROR_UNEXPECTED);
	doca_buf_inventory_destroy(inv);
	doca_mmap_destroy(dst_map);
	doca_mmap_destroy(src_map);
	doca_pe_destroy(pe);
	if (rep != NULL)
		doca_dev_rep_close(rep);
	doca_dev_close(dev);
	free(dst_mem);
	if (failed || received != count || (is_server && sent_back != count)) {
		fprintf(stderr, "%s: failed=%d received=%d of %d\n", is_server ? "server" : "client", failed, received,
			count);
		return 1;
	}
	printf("ok %d\n", count);
	return 0;
}
