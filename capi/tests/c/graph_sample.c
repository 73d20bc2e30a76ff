/* A graph the way DOCA's graph sample builds one: two DMA contexts, each a context node
 * copying one source into its own destination, and a user node after both that compares the
 * destinations with the source; 10 instances submitted at once and polled until every one
 * reported; the DMA contexts' own task callbacks never run. Then the codes: a second submit of
 * a submitted instance, destroying a submitted instance and stopping the graph with live
 * instances (IN_USE), a circle (NOT_PERMITTED), a start without a context node (BAD_STATE), a
 * failing user node (the error callback, once), and a resubmission after completion.
 * Exits 0 and prints "ok" when every check holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "open.h"
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_dma.h>
#include <doca_graph.h>
#include <doca_mmap.h>
#include <doca_pe.h>

#define DMAS 2
#define INSTANCES 10
#define LEN 1024
#define SLICE (LEN * (1 + DMAS)) /* one source and one destination per DMA node */

struct run {
	int index;
	int fail; /* the user node returns an error when set */
	char *src;
	char *dst[DMAS];
	struct doca_buf *src_buf;
	struct doca_buf *dst_buf[DMAS];
	struct doca_dma_task_memcpy *task[DMAS];
	struct doca_graph_instance *inst;
};

static int completed, failed, dma_callbacks, user_calls;
static struct doca_graph_instance *last_reported;

static void on_dma(struct doca_dma_task_memcpy *task, union doca_data td, union doca_data cd)
{
	(void)task;
	(void)td;
	(void)cd;
	dma_callbacks++; /* never: tasks a graph runs complete into the graph */
}

static doca_error_t compare(void *cookie)
{
	struct run *r = cookie;
	size_t len = 0;
	int i;

	user_calls++;
	if (r->fail)
		return DOCA_ERROR_IO_FAILED;
	for (i = 0; i < DMAS; i++) {
		if (doca_buf_get_data_len(r->dst_buf[i], &len) != DOCA_SUCCESS || len != LEN)
			return DOCA_ERROR_BAD_STATE;
		if (memcmp(r->dst[i], r->src, LEN) != 0)
			return DOCA_ERROR_BAD_STATE;
	}
	return DOCA_SUCCESS;
}

static void on_graph_done(struct doca_graph_instance *inst, union doca_data iud, union doca_data gud)
{
	struct run *r = iud.ptr;

	CHECK(r != NULL && r->inst == inst);
	CHECK(gud.u64 == 0xfeed);
	last_reported = inst;
	completed++;
}

static void on_graph_error(struct doca_graph_instance *inst, union doca_data iud, union doca_data gud)
{
	(void)iud;
	(void)gud;
	last_reported = inst;
	failed++;
}

static void poll_until(struct doca_pe *pe, int want)
{
	long spins;

	for (spins = 0; completed + failed < want && spins < 10000000; spins++)
		doca_pe_progress(pe);
}

int main(void)
{
	struct doca_dev *dev;
	struct doca_pe *pe;
	struct doca_dma *dma[DMAS];
	struct doca_ctx *ctx[DMAS];
	struct doca_mmap *map;
	struct doca_buf_inventory *inv;
	struct doca_graph *graph, *lonely;
	struct doca_graph_node *dma_node[DMAS], *user_node, *lonely_node;
	struct run runs[INSTANCES];
	union doca_data ud;
	char *mem = calloc(INSTANCES, SLICE);
	int i, n;

	CHECK_CODE(open_dev("03:00.0", &dev), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, mem, (size_t)INSTANCES * SLICE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(map, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(map), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_create(INSTANCES * (1 + DMAS), &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);
	for (n = 0; n < DMAS; n++) {
		CHECK_CODE(doca_dma_create(dev, &dma[n]), DOCA_SUCCESS);
		ctx[n] = doca_dma_as_ctx(dma[n]);
		CHECK_CODE(doca_pe_connect_ctx(pe, ctx[n]), DOCA_SUCCESS);
		CHECK_CODE(doca_dma_task_memcpy_set_conf(dma[n], on_dma, on_dma, INSTANCES), DOCA_SUCCESS);
		CHECK_CODE(doca_ctx_start(ctx[n]), DOCA_SUCCESS);
	}

	/* The graph: DMA nodes -> user node. */
	CHECK_CODE(doca_graph_create(pe, &graph), DOCA_SUCCESS);
	CHECK_CODE(doca_graph_node_create_from_user(graph, compare, &user_node), DOCA_SUCCESS);
	for (n = 0; n < DMAS; n++) {
		CHECK_CODE(doca_graph_node_create_from_ctx(graph, ctx[n], &dma_node[n]), DOCA_SUCCESS);
		CHECK_CODE(doca_graph_add_dependency(graph, dma_node[n], user_node), DOCA_SUCCESS);
	}
	CHECK_CODE(doca_graph_add_dependency(graph, user_node, dma_node[0]), DOCA_ERROR_NOT_PERMITTED);
	CHECK_CODE(doca_graph_node_create_from_graph(graph, graph, &lonely_node), DOCA_ERROR_NOT_PERMITTED);
	CHECK_CODE(doca_graph_instance_create(graph, &runs[0].inst), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_graph_set_conf(graph, on_graph_done, on_graph_error, INSTANCES), DOCA_SUCCESS);
	ud.u64 = 0xfeed;
	CHECK_CODE(doca_graph_set_user_data(graph, ud), DOCA_SUCCESS);
	CHECK_CODE(doca_graph_start(graph), DOCA_SUCCESS);
	CHECK_CODE(doca_graph_start(graph), DOCA_SUCCESS); /* started already: success, as DOCA's library */
	CHECK_CODE(doca_graph_set_user_data(graph, ud), DOCA_ERROR_BAD_STATE);
	ud.u64 = 0;
	CHECK_CODE(doca_graph_get_user_data(graph, &ud), DOCA_SUCCESS);
	CHECK(ud.u64 == 0xfeed);

	/* A graph with no context node cannot start. */
	CHECK_CODE(doca_graph_create(pe, &lonely), DOCA_SUCCESS);
	CHECK_CODE(doca_graph_node_create_from_user(lonely, compare, &lonely_node), DOCA_SUCCESS);
	CHECK_CODE(doca_graph_set_conf(lonely, on_graph_done, on_graph_error, 1), DOCA_SUCCESS);
	CHECK_CODE(doca_graph_start(lonely), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_graph_destroy(lonely), DOCA_SUCCESS);

	for (i = 0; i < INSTANCES; i++) {
		struct run *r = &runs[i];
		char *base = mem + (size_t)i * SLICE;

		r->index = i;
		r->fail = 0;
		r->src = base;
		memset(r->src, 'A' + i, LEN);
		CHECK_CODE(doca_graph_instance_create(graph, &r->inst), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, map, r->src, LEN, &r->src_buf), DOCA_SUCCESS);
		for (n = 0; n < DMAS; n++) {
			r->dst[n] = base + LEN * (1 + n);
			CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, r->dst[n], LEN, &r->dst_buf[n]),
				   DOCA_SUCCESS);
			ud.u64 = 0;
			CHECK_CODE(doca_dma_task_memcpy_alloc_init(dma[n], r->src_buf, r->dst_buf[n], ud, &r->task[n]),
				   DOCA_SUCCESS);
			CHECK_CODE(doca_graph_instance_set_ctx_node_data(r->inst, dma_node[n],
									 doca_dma_task_memcpy_as_task(r->task[n])),
				   DOCA_SUCCESS);
		}
		/* a task of the other context, and a node of the wrong kind */
		CHECK_CODE(doca_graph_instance_set_ctx_node_data(r->inst, dma_node[0],
								 doca_dma_task_memcpy_as_task(r->task[1])),
			   DOCA_ERROR_NOT_PERMITTED);
		CHECK_CODE(doca_graph_instance_set_user_node_data(r->inst, dma_node[0], r), DOCA_ERROR_NOT_PERMITTED);
		CHECK_CODE(doca_graph_instance_set_user_node_data(r->inst, user_node, r), DOCA_SUCCESS);
		ud.ptr = r;
		CHECK_CODE(doca_graph_instance_set_user_data(r->inst, ud), DOCA_SUCCESS);
	}
	{
		struct doca_graph_instance *extra;

		CHECK_CODE(doca_graph_instance_create(graph, &extra), DOCA_ERROR_NO_MEMORY);
	}

	for (i = 0; i < INSTANCES; i++)
		CHECK_CODE(doca_graph_instance_submit(runs[i].inst), DOCA_SUCCESS);
	CHECK_CODE(doca_graph_instance_submit(runs[0].inst), DOCA_ERROR_IN_USE);
	CHECK_CODE(doca_graph_instance_destroy(runs[0].inst), DOCA_ERROR_IN_USE);
	CHECK_CODE(doca_graph_stop(graph), DOCA_ERROR_IN_USE);
	ud.u64 = 1;
	CHECK_CODE(doca_graph_instance_set_user_data(runs[0].inst, ud), DOCA_ERROR_IN_USE);
	CHECK(completed == 0 && user_calls == 0); /* everything runs inside doca_pe_progress */
	poll_until(pe, INSTANCES);
	CHECK(completed == INSTANCES && failed == 0);
	CHECK(dma_callbacks == 0);
	CHECK(user_calls == INSTANCES);
	CHECK(last_reported != NULL);

	/* Resubmit every instance after completion; one user node fails this time. */
	completed = failed = 0;
	user_calls = 0;
	for (i = 0; i < INSTANCES; i++)
		for (n = 0; n < DMAS; n++)
			CHECK_CODE(doca_buf_reset_data_len(runs[i].dst_buf[n]), DOCA_SUCCESS);
	runs[3].fail = 1;
	for (i = 0; i < INSTANCES; i++)
		CHECK_CODE(doca_graph_instance_submit(runs[i].inst), DOCA_SUCCESS);
	poll_until(pe, INSTANCES);
	CHECK(completed == INSTANCES - 1 && failed == 1);
	CHECK(user_calls == INSTANCES);
	CHECK(dma_callbacks == 0);
	CHECK(last_reported != NULL);

	/* Cleanup in the sample's order: instances, graph, tasks, contexts. */
	for (i = 0; i < INSTANCES; i++)
		CHECK_CODE(doca_graph_instance_destroy(runs[i].inst), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_ERROR_IN_USE);
	CHECK_CODE(doca_graph_stop(graph), DOCA_SUCCESS);
	CHECK_CODE(doca_graph_destroy(graph), DOCA_SUCCESS);
	for (i = 0; i < INSTANCES; i++) {
		for (n = 0; n < DMAS; n++) {
			doca_task_free(doca_dma_task_memcpy_as_task(runs[i].task[n]));
			CHECK_CODE(doca_buf_dec_refcount(runs[i].dst_buf[n], NULL), DOCA_SUCCESS);
		}
		CHECK_CODE(doca_buf_dec_refcount(runs[i].src_buf, NULL), DOCA_SUCCESS);
	}
	for (n = 0; n < DMAS; n++) {
		CHECK_CODE(doca_ctx_stop(ctx[n]), DOCA_SUCCESS);
		CHECK_CODE(doca_dma_destroy(dma[n]), DOCA_SUCCESS);
	}
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dev), DOCA_SUCCESS);
	free(mem);
	return checks_result();
}
