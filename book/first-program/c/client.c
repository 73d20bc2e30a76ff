/* The host side of your first C program: a Comm Channel client on the host function b1:00.0
 * that connects to the server "first_comch", sends one message, prints the answer and
 * stops. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <doca_cc.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_pe.h>

static struct doca_cc_client *client;
static int done, answered;

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

static void sent(struct doca_cc_task_send *task, union doca_data task_data, union doca_data ctx_data)
{
	(void)task_data;
	(void)ctx_data;
	printf("client: message sent\n");
	doca_task_free(doca_cc_task_send_as_task(task));
}

static void not_sent(struct doca_cc_task_send *task, union doca_data task_data, union doca_data ctx_data)
{
	struct doca_task *t = doca_cc_task_send_as_task(task);

	(void)task_data;
	(void)ctx_data;
	printf("client: send failed: %s\n", doca_error_get_name(doca_task_get_status(t)));
	doca_task_free(t);
	doca_ctx_stop(doca_cc_client_as_ctx(client));
}

static void received(struct doca_cc_event_msg_recv *event, uint8_t *msg, uint32_t len, struct doca_cc_connection *conn)
{
	(void)event;
	(void)conn;
	printf("client: the server answered '%.*s'\n", (int)len, (const char *)msg);
	answered = 1;
	doca_ctx_stop(doca_cc_client_as_ctx(client)); /* disconnects: the server stops too */
}

/* DOCA's context states by name, for the log. */
static const char *state_name(enum doca_ctx_states s)
{
	static const char *const names[] = {"IDLE", "STARTING", "RUNNING", "STOPPING"};

	return (unsigned)s < 4 ? names[s] : "?";
}

static void state_changed(const union doca_data user_data, struct doca_ctx *ctx, enum doca_ctx_states prev, enum doca_ctx_states next)
{
	static const char text[] = "hello from the host";
	struct doca_cc_connection *conn;
	struct doca_cc_task_send *task;
	doca_error_t res;

	(void)user_data;
	printf("client: %s -> %s\n", state_name(prev), state_name(next));
	done = next == DOCA_CTX_STATE_IDLE;
	if (next != DOCA_CTX_STATE_RUNNING)
		return;
	/* Connected: the connection exists from RUNNING on. */
	res = doca_cc_client_get_connection(client, &conn);
	if (res == DOCA_SUCCESS)
		res = doca_cc_client_task_send_alloc_init(client, conn, text, (uint32_t)strlen(text), &task);
	if (res == DOCA_SUCCESS)
		res = doca_task_submit(doca_cc_task_send_as_task(task));
	if (res != DOCA_SUCCESS) {
		printf("client: cannot send: %s\n", doca_error_get_descr(res));
		doca_ctx_stop(ctx);
	}
}

int main(void)
{
	struct doca_dev *dev;
	struct doca_pe *pe;
	struct doca_ctx *ctx;
	doca_error_t res;

	setvbuf(stdout, NULL, _IONBF, 0);
	res = open_dev("b1:00.0", &dev);
	if (res == DOCA_SUCCESS)
		res = doca_pe_create(&pe);
	if (res == DOCA_SUCCESS)
		res = doca_cc_client_create(dev, "first_comch", &client);
	if (res != DOCA_SUCCESS) {
		printf("client: setup failed: %s\n", doca_error_get_descr(res));
		return 1;
	}
	ctx = doca_cc_client_as_ctx(client);
	if ((res = doca_pe_connect_ctx(pe, ctx)) != DOCA_SUCCESS ||
	    (res = doca_ctx_set_state_changed_cb(ctx, state_changed)) != DOCA_SUCCESS ||
	    (res = doca_cc_client_task_send_set_conf(client, sent, not_sent, 16)) != DOCA_SUCCESS ||
	    (res = doca_cc_client_event_msg_recv_register(client, received)) != DOCA_SUCCESS) {
		printf("client: setup failed: %s\n", doca_error_get_descr(res));
		return 1;
	}
	res = doca_ctx_start(ctx); /* a client starts asynchronously: RUNNING comes from progress */
	if (res != DOCA_ERROR_IN_PROGRESS && res != DOCA_SUCCESS) {
		printf("client: cannot start: %s\n", doca_error_get_descr(res));
		return 1;
	}
	while (!done)
		if (doca_pe_progress(pe) == 0)
			nanosleep(&(struct timespec){.tv_nsec = 10000}, NULL);
	doca_cc_client_destroy(client);
	doca_pe_destroy(pe);
	doca_dev_close(dev);
	return answered ? 0 : 1;
}
