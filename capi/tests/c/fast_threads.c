/* The fast path in the shape of NVIDIA's secure_channel application (DOCA 2.9 and later), one
 * program for both roles: `fast_threads server NAME N` on the DPU device 03:00.0 for host
 * function b1:00.0, `fast_threads client NAME N` on b1:00.0.
 *
 * The pattern: the main thread owns the comch server or client on its progress engine and
 * handles the connection's messages and consumer events. The sides first tell each other how
 * many messages they will send (a control message), then each starts two threads: a producer
 * thread and a consumer thread, each with a progress engine, a device and memory of its own,
 * creating its context on the main thread's connection while the main thread keeps
 * progressing the comch engine. The producer's start completes at once (DOCA_SUCCESS), the
 * consumer's later (DOCA_ERROR_IN_PROGRESS). The producer waits for the peer's consumer (the
 * main thread's new-consumer event), sends the same buffer N times with fewer tasks than
 * messages (re-submitted from their completion callback). The consumer checks each message and
 * re-posts its task from the callback, so every task is posted again when the last message has
 * come; then, as the application does, it frees its buffers and those posted tasks and stops
 * the consumer: the stop must end (Idle) and no callback may come for a task it freed. The
 * server ends with a control message; the client then leaves. Both print "ok N". */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_comch.h>
#include <doca_comch_consumer.h>
#include <doca_comch_producer.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_mmap.h>
#include <doca_pe.h>

#include "check.h"
#include "open.h"

#define TASKS 16    /* tasks per context: fewer than messages, so tasks are re-submitted */
#define MSG_LEN 200 /* bytes per fast-path message */
#define STOP_SECS 10 /* how long a stop may take before it counts as stuck (liveness only) */

enum { START_MSG = 1, END_MSG = 2 };

struct meta {
	uint32_t type;
	uint32_t num_msgs;
};

static int is_server;
static const char *pci;
static struct doca_comch_server *server;
static struct doca_comch_client *client;
static struct doca_comch_connection *conn;
static int expected, end_seen, disconnected; /* main thread only */
static time_t deadline;
static atomic_int failed, active_threads;
static int sent, received; /* each written by its thread, read after both ended */

/* The peer's consumer id, from the main thread's new-consumer event to the producer thread. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t peer_consumer_known = PTHREAD_COND_INITIALIZER;
static uint32_t peer_consumer;

static void fail(const char *what, doca_error_t res)
{
	fprintf(stderr, "%s: %s: %s\n", is_server ? "server" : "client", what, doca_error_get_name(res));
	atomic_store(&failed, 1);
}

static int going(void)
{
	return !atomic_load(&failed) && time(NULL) < deadline;
}

/* One pass of `pe`; when it had nothing to do, a sleep on its notification handle (at most
 * `ms`: another thread's flag wakes no engine). */
static void step(struct doca_pe *pe, int ms)
{
	doca_notification_handle_t fd;

	if (doca_pe_progress(pe) != 0)
		return;
	if (doca_pe_get_notification_handle(pe, &fd) != DOCA_SUCCESS || doca_pe_request_notification(pe) != DOCA_SUCCESS)
		return;
	poll(&(struct pollfd){.fd = fd, .events = POLLIN}, 1, ms);
	doca_pe_clear_notification(pe, fd);
}

static enum doca_ctx_states state_of(struct doca_ctx *ctx)
{
	enum doca_ctx_states s = DOCA_CTX_STATE_IDLE;

	doca_ctx_get_state(ctx, &s);
	return s;
}

/* Stops `ctx` on `pe` and runs the engine until it is Idle (STOP_SECS at most). */
static void stop_ctx(struct doca_pe *pe, struct doca_ctx *ctx, const char *what)
{
	time_t end = time(NULL) + STOP_SECS;
	doca_error_t res = doca_ctx_stop(ctx);

	if (res != DOCA_SUCCESS && res != DOCA_ERROR_IN_PROGRESS)
		fail(what, res);
	while (state_of(ctx) != DOCA_CTX_STATE_IDLE && time(NULL) < end)
		step(pe, 10);
	if (state_of(ctx) != DOCA_CTX_STATE_IDLE)
		fail(what, DOCA_ERROR_TIME_OUT);
}

/* A thread's memory: its own device, a map over aligned heap memory, an inventory. */
struct local_mem {
	struct doca_dev *dev;
	struct doca_mmap *mmap;
	struct doca_buf_inventory *inv;
	char *data;
};

static doca_error_t local_mem_init(struct local_mem *m, size_t len, uint32_t bufs, uint32_t access)
{
	doca_error_t res = open_dev(pci, &m->dev);

	m->data = aligned_alloc(64, (len + 63) / 64 * 64);
	if (res != DOCA_SUCCESS || m->data == NULL)
		return res != DOCA_SUCCESS ? res : DOCA_ERROR_NO_MEMORY;
	memset(m->data, 0, len);
	res = doca_mmap_create(&m->mmap);
	if (res == DOCA_SUCCESS)
		res = doca_mmap_set_permissions(m->mmap, access);
	if (res == DOCA_SUCCESS)
		res = doca_mmap_add_dev(m->mmap, m->dev);
	if (res == DOCA_SUCCESS)
		res = doca_mmap_set_memrange(m->mmap, m->data, len);
	if (res == DOCA_SUCCESS)
		res = doca_mmap_start(m->mmap);
	if (res == DOCA_SUCCESS)
		res = doca_buf_inventory_create(bufs, &m->inv);
	if (res == DOCA_SUCCESS)
		res = doca_buf_inventory_start(m->inv);
	return res;
}

static void local_mem_fini(struct local_mem *m)
{
	doca_buf_inventory_destroy(m->inv);
	doca_mmap_destroy(m->mmap);
	free(m->data);
	doca_dev_close(m->dev);
}

/* The byte at `i` of a message from the server (1) or the client (0). */
static char pattern(int from_server, size_t i)
{
	return (char)((i * 7 + (from_server ? 101 : 3)) & 0xff);
}

/* ---- producer thread ---- */

struct fast_ctx {
	int total, submitted, completed, complete;
	/* Tasks whose re-submission met DOCA_ERROR_AGAIN, submitted again from the thread. */
	struct doca_comch_producer_task_send *again[TASKS];
	int n_again;
};

static void producer_done(struct doca_comch_producer_task_send *task, union doca_data td, union doca_data cd)
{
	struct fast_ctx *p = cd.ptr;
	doca_error_t res;

	(void)td;
	if (++p->completed == p->total) {
		p->complete = 1;
		return;
	}
	if (p->submitted == p->total)
		return;
	res = doca_task_submit(doca_comch_producer_task_send_as_task(task));
	if (res == DOCA_ERROR_AGAIN)
		p->again[p->n_again++] = task;
	else if (res != DOCA_SUCCESS)
		fail("producer re-submit", res);
	else
		p->submitted++;
}

static void producer_failed(struct doca_comch_producer_task_send *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	fail("producer send", doca_task_get_status(doca_comch_producer_task_send_as_task(task)));
}

static void *run_producer(void *arg)
{
	struct doca_comch_producer_task_send *tasks[TASKS] = {0};
	struct fast_ctx p = {.total = *(int *)arg};
	struct doca_comch_producer *producer = NULL;
	struct local_mem m = {0};
	struct doca_pe *pe = NULL;
	struct doca_buf *buf = NULL;
	int n_tasks = p.total < TASKS ? p.total : TASKS, i;
	uint32_t consumer_id = 0;
	doca_error_t res;

	res = local_mem_init(&m, MSG_LEN, 1, DOCA_ACCESS_FLAG_PCI_READ_ONLY);
	for (i = 0; i < MSG_LEN && m.data != NULL; i++)
		m.data[i] = pattern(is_server, i);
	if (res == DOCA_SUCCESS)
		res = doca_pe_create(&pe);
	if (res == DOCA_SUCCESS)
		res = doca_comch_producer_create(conn, &producer);
	if (res == DOCA_SUCCESS)
		res = doca_pe_connect_ctx(pe, doca_comch_producer_as_ctx(producer));
	if (res == DOCA_SUCCESS)
		res = doca_comch_producer_task_send_set_conf(producer, producer_done, producer_failed, n_tasks);
	if (res == DOCA_SUCCESS)
		res = doca_ctx_set_user_data(doca_comch_producer_as_ctx(producer), (union doca_data){.ptr = &p});
	if (res != DOCA_SUCCESS) {
		fail("producer setup", res);
		goto out;
	}
	/* The application requires exactly DOCA_SUCCESS: a producer is Running at once. */
	res = doca_ctx_start(doca_comch_producer_as_ctx(producer));
	if (res != DOCA_SUCCESS) {
		fail("producer start", res);
		goto out;
	}
	res = doca_buf_inventory_buf_get_by_data(m.inv, m.mmap, m.data, MSG_LEN, &buf);
	if (res != DOCA_SUCCESS) {
		fail("producer buffer", res);
		goto stop;
	}
	/* The peer's consumer, made known by the main thread's engine (this one is not run). */
	pthread_mutex_lock(&lock);
	while (peer_consumer == 0 && going()) {
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 1;
		pthread_cond_timedwait(&peer_consumer_known, &lock, &until);
	}
	consumer_id = peer_consumer;
	pthread_mutex_unlock(&lock);
	for (i = 0; i < n_tasks && going(); i++) {
		res = doca_comch_producer_task_send_alloc_init(producer, buf, NULL, 0, consumer_id, &tasks[i]);
		if (res != DOCA_SUCCESS) {
			fail("producer task", res);
			break;
		}
		/* No buffer posted yet: DOCA_ERROR_AGAIN, the application submits again. */
		while ((res = doca_task_submit(doca_comch_producer_task_send_as_task(tasks[i]))) == DOCA_ERROR_AGAIN &&
		       going())
			step(pe, 10);
		if (res != DOCA_SUCCESS) {
			fail("producer submit", res);
			break;
		}
		p.submitted++;
	}
	while (!p.complete && going()) {
		int n = p.n_again;

		p.n_again = 0;
		for (i = 0; i < n; i++) {
			res = doca_task_submit(doca_comch_producer_task_send_as_task(p.again[i]));
			if (res == DOCA_ERROR_AGAIN)
				p.again[p.n_again++] = p.again[i];
			else if (res != DOCA_SUCCESS)
				fail("producer submit again", res);
			else
				p.submitted++;
		}
		step(pe, 10);
	}
	sent = p.completed;
	/* Every task is back (all completed): the application frees them, then stops. */
	for (i = 0; i < n_tasks; i++)
		if (tasks[i] != NULL)
			doca_task_free(doca_comch_producer_task_send_as_task(tasks[i]));
	doca_buf_dec_refcount(buf, NULL);
stop:
	stop_ctx(pe, doca_comch_producer_as_ctx(producer), "producer stop");
out:
	if (producer != NULL && doca_comch_producer_destroy(producer) != DOCA_SUCCESS)
		fail("producer destroy", DOCA_ERROR_UNEXPECTED);
	if (pe != NULL)
		doca_pe_destroy(pe);
	local_mem_fini(&m);
	atomic_fetch_sub(&active_threads, 1);
	return NULL;
}

/* ---- consumer thread ---- */

struct recv_ctx {
	int total, completed, complete;
	int freed;	    /* its posted tasks were freed */
	int late_callbacks; /* callbacks for tasks it freed */
};

static void consumer_done(struct doca_comch_consumer_task_post_recv *task, union doca_data td, union doca_data cd)
{
	struct recv_ctx *c = cd.ptr;
	struct doca_buf *buf = doca_comch_consumer_task_post_recv_get_buf(task);
	void *data = NULL;
	size_t len = 0, i;
	doca_error_t res;

	(void)td;
	if (c->freed) {
		c->late_callbacks++;
		return;
	}
	doca_buf_get_data(buf, &data);
	doca_buf_get_data_len(buf, &len);
	for (i = 0; i < len && data != NULL && ((char *)data)[i] == pattern(!is_server, i); i++)
		;
	if (len != MSG_LEN || i != len) {
		fprintf(stderr, "%s: message %d: %zu bytes, wrong from byte %zu\n", is_server ? "server" : "client",
			c->completed, len, i);
		atomic_store(&failed, 1);
	}
	if (++c->completed == c->total)
		c->complete = 1;
	/* Posted again, even after the last message, as the application does. */
	res = doca_buf_reset_data_len(buf);
	if (res == DOCA_SUCCESS)
		res = doca_task_submit(doca_comch_consumer_task_post_recv_as_task(task));
	if (res != DOCA_SUCCESS)
		fail("consumer re-post", res);
}

static void consumer_failed(struct doca_comch_consumer_task_post_recv *task, union doca_data td,
			    union doca_data cd)
{
	struct recv_ctx *c = cd.ptr;

	(void)td;
	if (c->freed) {
		c->late_callbacks++;
		return;
	}
	fail("consumer post-receive", doca_task_get_status(doca_comch_consumer_task_post_recv_as_task(task)));
}

static void *run_consumer(void *arg)
{
	struct doca_comch_consumer_task_post_recv *tasks[TASKS] = {0};
	struct doca_buf *bufs[TASKS] = {0};
	struct recv_ctx c = {.total = *(int *)arg};
	struct doca_comch_consumer *consumer = NULL;
	struct local_mem m = {0};
	struct doca_pe *pe = NULL;
	int n_tasks = c.total < TASKS ? c.total : TASKS, i;
	doca_error_t res;

	res = local_mem_init(&m, (size_t)MSG_LEN * n_tasks, n_tasks, DOCA_ACCESS_FLAG_PCI_READ_WRITE);
	if (res == DOCA_SUCCESS)
		res = doca_pe_create(&pe);
	if (res == DOCA_SUCCESS)
		res = doca_comch_consumer_create(conn, m.mmap, &consumer);
	if (res == DOCA_SUCCESS)
		res = doca_pe_connect_ctx(pe, doca_comch_consumer_as_ctx(consumer));
	if (res == DOCA_SUCCESS)
		res = doca_comch_consumer_task_post_recv_set_conf(consumer, consumer_done, consumer_failed, n_tasks);
	if (res == DOCA_SUCCESS)
		res = doca_ctx_set_user_data(doca_comch_consumer_as_ctx(consumer), (union doca_data){.ptr = &c});
	if (res != DOCA_SUCCESS) {
		fail("consumer setup", res);
		goto out;
	}
	/* The application requires exactly DOCA_ERROR_IN_PROGRESS: the peer registers it. */
	res = doca_ctx_start(doca_comch_consumer_as_ctx(consumer));
	if (res != DOCA_ERROR_IN_PROGRESS) {
		fail("consumer start", res);
		goto out;
	}
	while (state_of(doca_comch_consumer_as_ctx(consumer)) != DOCA_CTX_STATE_RUNNING && going())
		step(pe, 10);
	for (i = 0; i < n_tasks && going(); i++) {
		res = doca_buf_inventory_buf_get_by_addr(m.inv, m.mmap, m.data + (size_t)i * MSG_LEN, MSG_LEN, &bufs[i]);
		if (res == DOCA_SUCCESS)
			res = doca_comch_consumer_task_post_recv_alloc_init(consumer, bufs[i], &tasks[i]);
		if (res == DOCA_SUCCESS)
			res = doca_task_submit(doca_comch_consumer_task_post_recv_as_task(tasks[i]));
		if (res != DOCA_SUCCESS) {
			fail("consumer post", res);
			break;
		}
	}
	while (!c.complete && going())
		step(pe, 10);
	received = c.completed;
	/* As the application: its buffers and its tasks freed while the tasks are posted, then
	 * the stop. The library gives the tasks up: no callback, and the stop ends. */
	c.freed = 1;
	for (i = 0; i < n_tasks; i++) {
		if (bufs[i] != NULL)
			doca_buf_dec_refcount(bufs[i], NULL);
		if (tasks[i] != NULL)
			doca_task_free(doca_comch_consumer_task_post_recv_as_task(tasks[i]));
	}
	stop_ctx(pe, doca_comch_consumer_as_ctx(consumer), "consumer stop with its freed tasks posted");
	if (c.late_callbacks != 0) {
		fprintf(stderr, "%s: %d callback(s) for freed tasks\n", is_server ? "server" : "client",
			c.late_callbacks);
		atomic_store(&failed, 1);
	}
out:
	if (consumer != NULL && doca_comch_consumer_destroy(consumer) != DOCA_SUCCESS)
		fail("consumer destroy", DOCA_ERROR_UNEXPECTED);
	if (pe != NULL)
		doca_pe_destroy(pe);
	local_mem_fini(&m);
	atomic_fetch_sub(&active_threads, 1);
	return NULL;
}

/* ---- the main thread: the comch connection ---- */

static void send_done(struct doca_comch_task_send *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	doca_task_free(doca_comch_task_send_as_task(task));
}

static void send_failed(struct doca_comch_task_send *task, union doca_data td, union doca_data cd)
{
	fail("control send", doca_task_get_status(doca_comch_task_send_as_task(task)));
	send_done(task, td, cd);
}

static doca_error_t send_meta(uint32_t type, uint32_t n)
{
	struct meta msg = {.type = type, .num_msgs = n};
	struct doca_comch_task_send *task;
	doca_error_t res = is_server ? doca_comch_server_task_send_alloc_init(server, conn, &msg, sizeof(msg), &task)
				     : doca_comch_client_task_send_alloc_init(client, conn, &msg, sizeof(msg), &task);

	if (res == DOCA_SUCCESS) {
		res = doca_task_submit(doca_comch_task_send_as_task(task));
		if (res != DOCA_SUCCESS)
			doca_task_free(doca_comch_task_send_as_task(task));
	}
	return res;
}

static void on_msg(struct doca_comch_event_msg_recv *event, uint8_t *buf, uint32_t len,
		   struct doca_comch_connection *c)
{
	struct meta msg;

	(void)event;
	(void)c;
	if (len != sizeof(msg)) {
		fail("control message length", DOCA_ERROR_INVALID_VALUE);
		return;
	}
	memcpy(&msg, buf, sizeof(msg));
	if (msg.type == END_MSG)
		end_seen = 1;
	else
		expected = (int)msg.num_msgs;
}

static void on_connect(struct doca_comch_event_connection_status_changed *event, struct doca_comch_connection *c,
		       uint8_t ok)
{
	(void)event;
	if (ok)
		conn = c;
}

static void on_disconnect(struct doca_comch_event_connection_status_changed *event,
			  struct doca_comch_connection *c, uint8_t ok)
{
	(void)event;
	(void)c;
	(void)ok;
	disconnected = 1;
}

static void new_consumer(struct doca_comch_event_consumer *event, struct doca_comch_connection *c, uint32_t id)
{
	(void)event;
	(void)c;
	pthread_mutex_lock(&lock);
	peer_consumer = id;
	pthread_cond_broadcast(&peer_consumer_known);
	pthread_mutex_unlock(&lock);
}

static void expired_consumer(struct doca_comch_event_consumer *event, struct doca_comch_connection *c, uint32_t id)
{
	(void)event;
	(void)c;
	(void)id;
}

int main(int argc, char **argv)
{
	struct doca_dev *dev = NULL;
	struct doca_dev_rep *rep = NULL;
	struct doca_pe *pe;
	struct doca_ctx *side;
	pthread_t producer_thread, consumer_thread;
	int count;
	doca_error_t res;

	if (argc < 4)
		return 2;
	is_server = strcmp(argv[1], "server") == 0;
	pci = is_server ? "03:00.0" : "b1:00.0";
	count = atoi(argv[3]);
	deadline = time(NULL) + 60;
	res = is_server ? open_dpu(&dev, &rep) : open_dev(pci, &dev);
	if (res == DOCA_SUCCESS)
		res = doca_pe_create(&pe);
	if (res != DOCA_SUCCESS) {
		fail("open", res);
		return 1;
	}
	if (is_server) {
		res = doca_comch_server_create(dev, rep, argv[2], &server);
		side = doca_comch_server_as_ctx(server);
		if (res == DOCA_SUCCESS)
			res = doca_comch_server_task_send_set_conf(server, send_done, send_failed, 4);
		if (res == DOCA_SUCCESS)
			res = doca_comch_server_event_msg_recv_register(server, on_msg);
		if (res == DOCA_SUCCESS)
			res = doca_comch_server_event_connection_status_changed_register(server, on_connect, on_disconnect);
		if (res == DOCA_SUCCESS)
			res = doca_comch_server_event_consumer_register(server, new_consumer, expired_consumer);
	} else {
		res = doca_comch_client_create(dev, argv[2], &client);
		side = doca_comch_client_as_ctx(client);
		if (res == DOCA_SUCCESS)
			res = doca_comch_client_task_send_set_conf(client, send_done, send_failed, 4);
		if (res == DOCA_SUCCESS)
			res = doca_comch_client_event_msg_recv_register(client, on_msg);
		if (res == DOCA_SUCCESS)
			res = doca_comch_client_event_consumer_register(client, new_consumer, expired_consumer);
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
	while (conn == NULL && going()) {
		if (!is_server && state_of(side) == DOCA_CTX_STATE_RUNNING &&
		    doca_comch_client_get_connection(client, &conn) == DOCA_SUCCESS)
			break;
		step(pe, 10);
	}
	res = conn == NULL ? DOCA_ERROR_TIME_OUT : send_meta(START_MSG, (uint32_t)count);
	if (res != DOCA_SUCCESS) {
		fail("start message", res);
		return 1;
	}
	while (expected == 0 && going())
		step(pe, 10);
	if (expected <= 0) {
		fail("the peer's start message", DOCA_ERROR_TIME_OUT);
		return 1;
	}
	/* Both threads on the main thread's connection; this engine keeps running for them (their
	 * consumers' registration, the peer's new-consumer event). */
	atomic_store(&active_threads, 2);
	if (pthread_create(&producer_thread, NULL, run_producer, &count) != 0 ||
	    pthread_create(&consumer_thread, NULL, run_consumer, &expected) != 0) {
		fail("threads", DOCA_ERROR_UNEXPECTED);
		return 1;
	}
	/* The threads bound their own waits (60 s, STOP_SECS per stop). */
	while (atomic_load(&active_threads) > 0)
		step(pe, 10);
	pthread_join(producer_thread, NULL);
	pthread_join(consumer_thread, NULL);
	if (is_server) {
		res = send_meta(END_MSG, 0);
		if (res != DOCA_SUCCESS)
			fail("end message", res);
		while (!disconnected && going())
			step(pe, 10);
	} else {
		while (!end_seen && going())
			step(pe, 10);
	}
	stop_ctx(pe, side, "stop the side");
	if ((is_server ? doca_comch_server_destroy(server) : doca_comch_client_destroy(client)) != DOCA_SUCCESS)
		fail("destroy the side", DOCA_ERROR_UNEXPECTED);
	doca_pe_destroy(pe);
	if (rep != NULL)
		doca_dev_rep_close(rep);
	doca_dev_close(dev);
	if (atomic_load(&failed) || sent != count || received != expected) {
		fprintf(stderr, "%s: failed=%d sent=%d of %d received=%d of %d\n", is_server ? "server" : "client",
			atomic_load(&failed), sent, count, received, expected);
		return 1;
	}
	printf("ok %d %d\n", sent, received);
	return 0;
}
