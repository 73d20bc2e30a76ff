/* DOCA RDMA from C at API level 2.7, two contexts of this process on one progress engine:
 * a server listening on a port (argv[1]) and a client connecting to 127.0.0.1, as the -cm
 * samples do; then each task kind on the client's connection — send and receive with
 * immediate data, write, write with immediate, read, fetch-and-add, compare-and-swap, the
 * three remote sync event tasks — and the failure rule: a write to a map exported without
 * DOCA_ACCESS_FLAG_RDMA_WRITE fails with DOCA_ERROR_NOT_PERMITTED and stops the client,
 * flushing its posted receive with DOCA_ERROR_SHUTDOWN. A connect to a port nobody listens
 * on reports the failure callback. Prints "ok". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_mmap.h>
#include <doca_pe.h>
#include <doca_rdma.h>
#include <doca_sync_event.h>

#include "check.h"
#include "open.h"

#define MEM 65536

static struct doca_pe *pe;
static struct doca_rdma *srv, *cli;
static struct doca_rdma_connection *srv_conn, *cli_conn;
static int established, failed, disconnected;
static int done, errors;
static doca_error_t statuses[8];
static uint32_t last_len, last_imm;

static void on_request(struct doca_rdma_connection *c, union doca_data ctx_data)
{
	(void)ctx_data;
	CHECK_CODE(doca_rdma_connection_accept(c, NULL, 0), DOCA_SUCCESS);
}

static void on_established(struct doca_rdma_connection *c, union doca_data conn_data, union doca_data ctx_data)
{
	(void)conn_data;
	if (ctx_data.u64 == 1)
		srv_conn = c;
	else
		cli_conn = c;
	established++;
}

static void on_failure(struct doca_rdma_connection *c, union doca_data conn_data, union doca_data ctx_data)
{
	(void)c;
	(void)ctx_data;
	CHECK(conn_data.u64 == 77);
	failed++;
}

static void on_disconnect(struct doca_rdma_connection *c, union doca_data conn_data, union doca_data ctx_data)
{
	(void)conn_data;
	(void)ctx_data;
	CHECK_CODE(doca_rdma_connection_disconnect(c), DOCA_SUCCESS);
	disconnected++;
}

static void task_ok(struct doca_task *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	done++;
	doca_task_free(t);
}

static void task_err(struct doca_task *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	if (errors < 8)
		statuses[errors] = doca_task_get_status(t);
	errors++;
	doca_task_free(t);
}

/* Receive tasks whose buffer was read after their free. */
static int freed_reads;

static void recv_ok(struct doca_rdma_task_receive *t, union doca_data td, union doca_data cd)
{
	last_len = doca_rdma_task_receive_get_result_len(t);
	last_imm = doca_rdma_task_receive_get_result_immediate_data(t);
	struct doca_buf *dst = doca_rdma_task_receive_get_dst_buf(t);

	CHECK(doca_rdma_task_receive_get_result_rdma_connection(t) == srv_conn);
	task_ok(doca_rdma_task_receive_as_task(t), td, cd);
	/* As NVIDIA's RDMA samples do: a freed task's buffer is still read (DOCA keeps a freed
	 * task's memory in its pool until the slot's next allocation). */
	CHECK(doca_rdma_task_receive_get_dst_buf(t) == dst);
	if (dst != NULL)
		freed_reads++;
}

static void recv_err(struct doca_rdma_task_receive *t, union doca_data td, union doca_data cd)
{
	task_err(doca_rdma_task_receive_as_task(t), td, cd);
}

#define CBS(kind)                                                                                   \
	static void kind##_ok(struct doca_rdma_task_##kind *t, union doca_data td, union doca_data cd)  \
	{                                                                                           \
		task_ok(doca_rdma_task_##kind##_as_task(t), td, cd);                                \
	}                                                                                           \
	static void kind##_err(struct doca_rdma_task_##kind *t, union doca_data td, union doca_data cd) \
	{                                                                                           \
		task_err(doca_rdma_task_##kind##_as_task(t), td, cd);                               \
	}
CBS(send_imm)
CBS(write)
CBS(write_imm)
CBS(read)
CBS(atomic_fetch_add)
CBS(atomic_cmp_swp)
CBS(remote_net_sync_event_get)
CBS(remote_net_sync_event_notify_set)
CBS(remote_net_sync_event_notify_add)

/* Progresses until `*counter` reaches `want` (bounded; `line` names the caller). */
static void until_at(const int *counter, int want, int line)
{
	for (long i = 0; i < 2000000 && *counter < want; i++)
		doca_pe_progress(pe);
	if (*counter < want) {
		fprintf(stderr, "line %d: %d of %d\n", line, *counter, want);
		failures++;
	}
}
#define until(counter, want) until_at(counter, want, __LINE__)

static struct doca_rdma *context(struct doca_dev *dev, uint64_t who)
{
	struct doca_rdma *r;
	union doca_data d = {.u64 = who};

	CHECK_CODE(doca_rdma_create(dev, &r), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_set_permissions(r, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE | DOCA_ACCESS_FLAG_RDMA_READ |
							DOCA_ACCESS_FLAG_RDMA_WRITE | DOCA_ACCESS_FLAG_RDMA_ATOMIC),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_set_max_num_connections(r, 4), DOCA_SUCCESS);
	/* DC exists from 2.7 on (2.5/2.6 refuse it: rdma25.c); this context stays RC. */
	CHECK_CODE(doca_rdma_cap_transport_type_is_supported(doca_dev_as_devinfo(dev), DOCA_RDMA_TRANSPORT_TYPE_DC),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_set_transport_type(r, DOCA_RDMA_TRANSPORT_TYPE_DC), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_set_transport_type(r, DOCA_RDMA_TRANSPORT_TYPE_RC), DOCA_SUCCESS);
	{
		/* No DPA or GPU data path here: the handles are BAD_STATE, NULL is INVALID_VALUE. */
		doca_dpa_dev_rdma_t dpa;
		struct doca_gpu_dev_rdma *gpu;

		CHECK_CODE(doca_rdma_get_dpa_handle(r, &dpa), DOCA_ERROR_BAD_STATE);
		CHECK_CODE(doca_rdma_get_dpa_handle(r, NULL), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_rdma_get_gpu_handle(r, &gpu), DOCA_ERROR_BAD_STATE);
		CHECK_CODE(doca_rdma_get_gpu_handle(NULL, &gpu), DOCA_ERROR_INVALID_VALUE);
	}
	/* The request callback may be NULL (a client only); the three others may not. */
	CHECK_CODE(doca_rdma_set_connection_state_callbacks(r, NULL, on_established, on_failure, on_disconnect),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_set_connection_state_callbacks(r, on_request, NULL, on_failure, on_disconnect),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_set_connection_state_callbacks(r, on_request, on_established, on_failure, on_disconnect),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_receive_set_conf(r, recv_ok, recv_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_send_imm_set_conf(r, send_imm_ok, send_imm_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_write_set_conf(r, write_ok, write_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_write_imm_set_conf(r, write_imm_ok, write_imm_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_read_set_conf(r, read_ok, read_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_atomic_fetch_add_set_conf(r, atomic_fetch_add_ok, atomic_fetch_add_err, 4),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_atomic_cmp_swp_set_conf(r, atomic_cmp_swp_ok, atomic_cmp_swp_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_remote_net_sync_event_get_set_conf(r, remote_net_sync_event_get_ok,
								    remote_net_sync_event_get_err, 4),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_remote_net_sync_event_notify_set_set_conf(r, remote_net_sync_event_notify_set_ok,
									   remote_net_sync_event_notify_set_err, 4),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_remote_net_sync_event_notify_add_set_conf(r, remote_net_sync_event_notify_add_ok,
									   remote_net_sync_event_notify_add_err, 4),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_set_user_data(doca_rdma_as_ctx(r), d), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_connect_ctx(pe, doca_rdma_as_ctx(r)), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(doca_rdma_as_ctx(r)), DOCA_SUCCESS);
	return r;
}

static struct doca_mmap *map(struct doca_dev *dev, void *mem, uint32_t perms)
{
	struct doca_mmap *m;

	CHECK_CODE(doca_mmap_create(&m), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(m, mem, MEM), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(m, perms), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(m, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(m), DOCA_SUCCESS);
	return m;
}

/* The client's map of the server's memory `m` (exported for RDMA). */
static struct doca_mmap *remote_of(struct doca_mmap *m, struct doca_dev *dev)
{
	const void *desc;
	size_t len;
	struct doca_mmap *r = NULL;

	CHECK_CODE(doca_mmap_export_rdma(m, dev, &desc, &len), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_create_from_export(NULL, desc, len, dev, &r), DOCA_SUCCESS);
	return r;
}

int main(int argc, char **argv)
{
	struct doca_dev *dev;
	struct doca_rdma_addr *addr, *nowhere;
	struct doca_buf_inventory *inv;
	struct doca_buf *a, *b;
	struct doca_mmap *smap, *smap_ro, *cmap, *remote, *remote_ro;
	struct doca_sync_event *se;
	struct doca_sync_event_remote_net *rse;
	const uint8_t *se_blob;
	size_t se_len;
	uint64_t v;
	int port = argc > 1 ? atoi(argv[1]) : 13579;
	union doca_data none = {0}, tag = {.u64 = 77};
	char *smem = calloc(1, MEM), *smem_ro = calloc(1, MEM), *cmem = calloc(1, MEM);

	CHECK_CODE(open_dev("03:00.0", &dev), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	srv = context(dev, 1);
	cli = context(dev, 2);

	/* The connection manager. */
	CHECK_CODE(doca_rdma_addr_create(DOCA_RDMA_ADDR_TYPE_IPv4, "not an address", 1, &addr),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_start_listen_to_port(srv, (uint16_t)port), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_addr_create(DOCA_RDMA_ADDR_TYPE_IPv4, "127.0.0.1", (uint16_t)port, &addr), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_connect_to_addr(cli, addr, none), DOCA_SUCCESS);
	until(&established, 2);
	CHECK(srv_conn != NULL && cli_conn != NULL);
	CHECK_CODE(doca_rdma_addr_create(DOCA_RDMA_ADDR_TYPE_IPv4, "127.0.0.1", (uint16_t)(port + 1), &nowhere),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_connect_to_addr(cli, nowhere, tag), DOCA_SUCCESS);
	until(&failed, 1);

	smap = map(dev, smem, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE | DOCA_ACCESS_FLAG_RDMA_READ |
				      DOCA_ACCESS_FLAG_RDMA_WRITE | DOCA_ACCESS_FLAG_RDMA_ATOMIC);
	smap_ro = map(dev, smem_ro, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE | DOCA_ACCESS_FLAG_RDMA_READ);
	cmap = map(dev, cmem, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE);
	remote = remote_of(smap, dev);
	remote_ro = remote_of(smap_ro, dev);
	CHECK_CODE(doca_buf_inventory_create(32, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);

	/* Send with immediate data into a receive of the server. */
	strcpy(cmem, "hello over rdma");
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, smap, smem + 1024, 64, &b), DOCA_SUCCESS);
	struct doca_rdma_task_receive *rt;
	CHECK_CODE(doca_rdma_task_receive_allocate_init(srv, b, none, &rt), DOCA_SUCCESS);
	CHECK_CODE(doca_task_submit(doca_rdma_task_receive_as_task(rt)), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, cmap, cmem, 15, &a), DOCA_SUCCESS);
	struct doca_rdma_task_send_imm *st;
	CHECK_CODE(doca_rdma_task_send_imm_allocate_init(cli, cli_conn, a, 0xabcd, none, &st), DOCA_SUCCESS);
	CHECK_CODE(doca_task_submit(doca_rdma_task_send_imm_as_task(st)), DOCA_SUCCESS);
	until(&done, 2);
	CHECK(last_len == 15 && last_imm == 0xabcd && memcmp(smem + 1024, "hello over rdma", 15) == 0);
	doca_buf_dec_refcount(a, NULL);
	doca_buf_dec_refcount(b, NULL);

	/* Write into the server's memory, then read it back. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, cmap, cmem, 15, &a), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, remote, smem + 2048, 64, &b), DOCA_SUCCESS);
	struct doca_rdma_task_write *wt;
	CHECK_CODE(doca_rdma_task_write_allocate_init(cli, cli_conn, NULL, NULL, none, &wt), DOCA_SUCCESS);
	doca_rdma_task_write_set_src_buf(wt, a);
	doca_rdma_task_write_set_dst_buf(wt, b);
	CHECK(doca_rdma_task_write_get_src_buf(wt) == a && doca_rdma_task_write_get_dst_buf(wt) == b);
	/* 3.x: the task's connection; one of another context is refused (logged), the task keeps its own. */
	CHECK(doca_rdma_task_write_get_rdma_connection(wt) == cli_conn);
	doca_rdma_task_write_set_rdma_connection(wt, srv_conn);
	CHECK(doca_rdma_task_write_get_rdma_connection(wt) == cli_conn);
	doca_rdma_task_write_set_rdma_connection(wt, cli_conn);
	CHECK(doca_rdma_task_write_get_rdma_connection(wt) == cli_conn);
	CHECK_CODE(doca_task_submit(doca_rdma_task_write_as_task(wt)), DOCA_SUCCESS);
	until(&done, 3);
	CHECK(memcmp(smem + 2048, "hello over rdma", 15) == 0);
	doca_buf_dec_refcount(a, NULL);
	doca_buf_dec_refcount(b, NULL);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, remote, smem + 2048, 15, &a), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, cmap, cmem + 4096, 64, &b), DOCA_SUCCESS);
	struct doca_rdma_task_read *rdt;
	CHECK_CODE(doca_rdma_task_read_allocate_init(cli, cli_conn, a, b, none, &rdt), DOCA_SUCCESS);
	CHECK_CODE(doca_task_submit(doca_rdma_task_read_as_task(rdt)), DOCA_SUCCESS);
	until(&done, 4);
	CHECK(memcmp(cmem + 4096, "hello over rdma", 15) == 0);
	doca_buf_dec_refcount(a, NULL);
	doca_buf_dec_refcount(b, NULL);

	/* Write with immediate: the bytes, then a receive of the server without a buffer. */
	CHECK_CODE(doca_rdma_task_receive_allocate_init(srv, NULL, none, &rt), DOCA_SUCCESS);
	CHECK_CODE(doca_task_submit(doca_rdma_task_receive_as_task(rt)), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, cmap, cmem, 5, &a), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, remote, smem + 3072, 64, &b), DOCA_SUCCESS);
	struct doca_rdma_task_write_imm *wit;
	CHECK_CODE(doca_rdma_task_write_imm_allocate_init(cli, cli_conn, a, b, 1, none, &wit), DOCA_SUCCESS);
	doca_rdma_task_write_imm_set_immediate_data(wit, 0x1234);
	CHECK(doca_rdma_task_write_imm_get_immediate_data(wit) == 0x1234);
	CHECK_CODE(doca_task_submit(doca_rdma_task_write_imm_as_task(wit)), DOCA_SUCCESS);
	until(&done, 6);
	CHECK(last_imm == 0x1234 && memcmp(smem + 3072, "hello", 5) == 0);
	doca_buf_dec_refcount(a, NULL);
	doca_buf_dec_refcount(b, NULL);

	/* Atomics on 8 aligned bytes of the server's memory. */
	v = 40;
	memcpy(smem + 4096, &v, 8);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, remote, smem + 4096, 8, &a), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, cmap, cmem + 8192, 8, &b), DOCA_SUCCESS);
	struct doca_rdma_task_atomic_fetch_add *fat;
	CHECK_CODE(doca_rdma_task_atomic_fetch_add_allocate_init(cli, cli_conn, a, b, 2, none, &fat), DOCA_SUCCESS);
	CHECK_CODE(doca_task_submit(doca_rdma_task_atomic_fetch_add_as_task(fat)), DOCA_SUCCESS);
	until(&done, 7);
	memcpy(&v, cmem + 8192, 8);
	CHECK(v == 40);
	memcpy(&v, smem + 4096, 8);
	CHECK(v == 42);
	doca_buf_dec_refcount(b, NULL);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, cmap, cmem + 8200, 8, &b), DOCA_SUCCESS);
	struct doca_rdma_task_atomic_cmp_swp *cst;
	CHECK_CODE(doca_rdma_task_atomic_cmp_swp_allocate_init(cli, cli_conn, a, b, 42, 0, none, &cst), DOCA_SUCCESS);
	doca_rdma_task_atomic_cmp_swp_set_swap_data(cst, 7);
	CHECK(doca_rdma_task_atomic_cmp_swp_get_cmp_data(cst) == 42 && doca_rdma_task_atomic_cmp_swp_get_swap_data(cst) == 7);
	CHECK(doca_rdma_task_atomic_cmp_swp_get_result_buf(cst) == b && doca_rdma_task_atomic_cmp_swp_get_dst_buf(cst) == a);
	CHECK_CODE(doca_task_submit(doca_rdma_task_atomic_cmp_swp_as_task(cst)), DOCA_SUCCESS);
	until(&done, 8);
	memcpy(&v, smem + 4096, 8);
	CHECK(v == 7);
	doca_buf_dec_refcount(a, NULL);
	doca_buf_dec_refcount(b, NULL);

	/* Remote sync event: the server's event, exported for the network. */
	CHECK_CODE(doca_sync_event_create(&se), DOCA_SUCCESS);
	CHECK_CODE(doca_sync_event_add_publisher_location_remote_net(se), DOCA_SUCCESS);
	CHECK_CODE(doca_sync_event_add_subscriber_location_cpu(se, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_sync_event_start(se), DOCA_SUCCESS);
	CHECK_CODE(doca_sync_event_update_set(se, 5), DOCA_SUCCESS);
	CHECK_CODE(doca_sync_event_export_to_remote_net(se, &se_blob, &se_len), DOCA_SUCCESS);
	CHECK_CODE(doca_sync_event_remote_net_create_from_export(dev, se_blob, se_len, &rse), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, cmap, cmem + 12288, 8, &b), DOCA_SUCCESS);
	struct doca_rdma_task_remote_net_sync_event_get *gt;
	CHECK_CODE(doca_rdma_task_remote_net_sync_event_get_allocate_init(cli, cli_conn, rse, b, none, &gt), DOCA_SUCCESS);
	CHECK(doca_rdma_task_remote_net_sync_event_get_get_sync_event(gt) == rse);
	CHECK_CODE(doca_task_submit(doca_rdma_task_remote_net_sync_event_get_as_task(gt)), DOCA_SUCCESS);
	until(&done, 9);
	memcpy(&v, cmem + 12288, 8);
	CHECK(v == 5);
	doca_buf_dec_refcount(b, NULL);
	v = 100;
	memcpy(cmem + 12296, &v, 8);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, cmap, cmem + 12296, 8, &a), DOCA_SUCCESS);
	struct doca_rdma_task_remote_net_sync_event_notify_set *nst;
	CHECK_CODE(doca_rdma_task_remote_net_sync_event_notify_set_allocate_init(cli, cli_conn, rse, a, none, &nst),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_task_submit(doca_rdma_task_remote_net_sync_event_notify_set_as_task(nst)), DOCA_SUCCESS);
	until(&done, 10);
	CHECK_CODE(doca_sync_event_get(se, &v), DOCA_SUCCESS);
	CHECK(v == 100);
	doca_buf_dec_refcount(a, NULL);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, cmap, cmem + 12304, 8, &b), DOCA_SUCCESS);
	struct doca_rdma_task_remote_net_sync_event_notify_add *nat;
	CHECK_CODE(doca_rdma_task_remote_net_sync_event_notify_add_allocate_init(cli, cli_conn, rse, b, 11, none, &nat),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_task_submit(doca_rdma_task_remote_net_sync_event_notify_add_as_task(nat)), DOCA_SUCCESS);
	until(&done, 11);
	CHECK_CODE(doca_sync_event_wait_gt(se, 110, UINT64_MAX), DOCA_SUCCESS);
	memcpy(&v, cmem + 12304, 8);
	CHECK(v == 100);
	doca_buf_dec_refcount(b, NULL);

	/* The failure rule: a write to memory exported without RDMA_WRITE. */
	CHECK_CODE(doca_rdma_task_receive_allocate_init(cli, NULL, none, &rt), DOCA_SUCCESS);
	CHECK_CODE(doca_task_submit(doca_rdma_task_receive_as_task(rt)), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, cmap, cmem, 5, &a), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, remote_ro, smem_ro, 64, &b), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_write_allocate_init(cli, cli_conn, a, b, none, &wt), DOCA_SUCCESS);
	CHECK_CODE(doca_task_submit(doca_rdma_task_write_as_task(wt)), DOCA_SUCCESS);
	until(&errors, 2);
	CHECK(errors == 2);
	CHECK((statuses[0] == DOCA_ERROR_NOT_PERMITTED && statuses[1] == DOCA_ERROR_SHUTDOWN) ||
	      (statuses[1] == DOCA_ERROR_NOT_PERMITTED && statuses[0] == DOCA_ERROR_SHUTDOWN));
	for (long i = 0; i < 100000; i++) {
		enum doca_ctx_states state;

		doca_pe_progress(pe);
		doca_ctx_get_state(doca_rdma_as_ctx(cli), &state);
		if (state == DOCA_CTX_STATE_IDLE)
			break;
	}
	CHECK(smem_ro[0] == 0);
	doca_buf_dec_refcount(a, NULL);
	doca_buf_dec_refcount(b, NULL);

	/* The client stopped: the server hears a disconnection. */
	until(&disconnected, 1);
	CHECK_CODE(doca_sync_event_remote_net_destroy(rse), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_addr_destroy(addr), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_addr_destroy(nowhere), DOCA_SUCCESS);
	CHECK(freed_reads > 0);
	return checks_result();
}
