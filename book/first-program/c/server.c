/* The DPU side of your first C program: a Comm Channel server named "first_comch" on the DPU
 * device 03:00.0, serving the host function b1:00.0. It answers each message with the same
 * text in capitals and stops when its client disconnects. */
#include <ctype.h>
#include <stdio.h>
#include <time.h>

#include <doca_cc.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_pe.h>

static int done;

/* The device at a PCI address, as DOCA's samples open it: from the device list. */
static doca_error_t open_dev(const char *pci, struct doca_dev **dev)
{
	struct doca_devinfo **list;
	uint32_t n, i;
	uint8_t eq;
	doca_error_t res = doca_devinfo_create_list(&list, &n);

	for (i = 0; res == DOCA_SUCCESS && i < n; i++)
		if (doca_devinfo_is_equal_pci_addr(list[i], pci, &eq) == DOCA_SUCCESS && eq)
			break;
	if (res == DOCA_SUCCESS) {
		res = i < n ? doca_dev_open(list[i], dev) : DOCA_ERROR_NOT_FOUND;
		doca_devinfo_destroy_list(list);
	}
	return res;
}

/* The DPU's representor of the host function at `pci`: from the device's representor list. */
static doca_error_t open_rep(struct doca_dev *dev, const char *pci, struct doca_dev_rep **rep)
{
	struct doca_devinfo_rep **list;
	uint32_t n, i;
	uint8_t eq;
	doca_error_t res = doca_devinfo_rep_create_list(dev, DOCA_DEVINFO_REP_FILTER_NET, &list, &n);

	for (i = 0; res == DOCA_SUCCESS && i < n; i++)
		if (doca_devinfo_rep_is_equal_pci_addr(list[i], pci, &eq) == DOCA_SUCCESS && eq)
			break;
	if (res == DOCA_SUCCESS) {
		res = i < n ? doca_dev_rep_open(list[i], rep) : DOCA_ERROR_NOT_FOUND;
		doca_devinfo_rep_destroy_list(list);
	}
	return res;
}

static void sent(struct doca_cc_task_send *task, union doca_data task_data, union doca_data ctx_data)
{
	(void)task_data;
	(void)ctx_data;
	printf("server: reply sent\n");
	doca_task_free(doca_cc_task_send_as_task(task)); /* back to the pool */
}

static void not_sent(struct doca_cc_task_send *task, union doca_data task_data, union doca_data ctx_data)
{
	struct doca_task *t = doca_cc_task_send_as_task(task);

	(void)task_data;
	(void)ctx_data;
	printf("server: reply failed: %s\n", doca_error_get_name(doca_task_get_status(t)));
	doca_task_free(t);
}

static void received(struct doca_cc_event_msg_recv *event, uint8_t *msg, uint32_t len, struct doca_cc_connection *conn)
{
	struct doca_cc_server *server = doca_cc_server_get_server_ctx(conn);
	struct doca_cc_task_send *task;
	char reply[256];
	uint32_t i;
	doca_error_t res;

	(void)event;
	if (len >= sizeof(reply))
		len = sizeof(reply) - 1;
	for (i = 0; i < len; i++)
		reply[i] = (char)toupper(msg[i]);
	reply[len] = '\0';
	printf("server: received '%.*s'\n", (int)len, (const char *)msg);
	res = doca_cc_server_task_send_alloc_init(server, conn, reply, len, &task);
	if (res == DOCA_SUCCESS)
		res = doca_task_submit(doca_cc_task_send_as_task(task));
	if (res != DOCA_SUCCESS)
		printf("server: cannot answer: %s\n", doca_error_get_descr(res));
}

static void connected(struct doca_cc_event_connection_status_changed *event, struct doca_cc_connection *conn, uint8_t ok)
{
	(void)event;
	(void)conn;
	printf("server: a client connected (%s)\n", ok ? "ok" : "failed");
}

static void disconnected(struct doca_cc_event_connection_status_changed *event, struct doca_cc_connection *conn, uint8_t ok)
{
	(void)event;
	(void)ok;
	printf("server: the client left, stopping\n");
	doca_ctx_stop(doca_cc_server_as_ctx(doca_cc_server_get_server_ctx(conn)));
}

/* DOCA's context states by name, for the log. */
static const char *state_name(enum doca_ctx_states s)
{
	static const char *const names[] = {"IDLE", "STARTING", "RUNNING", "STOPPING"};

	return (unsigned)s < 4 ? names[s] : "?";
}

static void state_changed(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev, enum doca_ctx_states next)
{
	(void)user_data;
	(void)ctx;
	printf("server: %s -> %s\n", state_name(prev), state_name(next));
	done = next == DOCA_CTX_STATE_IDLE;
}

int main(void)
{
	struct doca_dev *dev;
	struct doca_dev_rep *rep;
	struct doca_pe *pe;
	struct doca_cc_server *server;
	struct doca_ctx *ctx;
	doca_error_t res;

	setvbuf(stdout, NULL, _IONBF, 0);
	res = open_dev("03:00.0", &dev);
	if (res == DOCA_SUCCESS)
		res = open_rep(dev, "b1:00.0", &rep);
	if (res == DOCA_SUCCESS)
		res = doca_pe_create(&pe);
	if (res == DOCA_SUCCESS)
		res = doca_cc_server_create(dev, rep, "first_comch", &server);
	if (res != DOCA_SUCCESS) {
		printf("server: setup failed: %s\n", doca_error_get_descr(res));
		return 1;
	}
	ctx = doca_cc_server_as_ctx(server);
	if ((res = doca_pe_connect_ctx(pe, ctx)) != DOCA_SUCCESS ||
	    (res = doca_ctx_set_state_changed_cb(ctx, state_changed)) != DOCA_SUCCESS ||
	    (res = doca_cc_server_task_send_set_conf(server, sent, not_sent, 16)) != DOCA_SUCCESS ||
	    (res = doca_cc_server_event_msg_recv_register(server, received)) != DOCA_SUCCESS ||
	    (res = doca_cc_server_event_connection_register(server, connected, disconnected)) != DOCA_SUCCESS ||
	    (res = doca_ctx_start(ctx)) != DOCA_SUCCESS) {
		printf("server: cannot start: %s\n", doca_error_get_descr(res));
		return 1;
	}
	while (!done)
		if (doca_pe_progress(pe) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL); /* nothing to do: rest */
	doca_cc_server_destroy(server);
	doca_pe_destroy(pe);
	doca_dev_rep_close(rep);
	doca_dev_close(dev);
	return 0;
}
