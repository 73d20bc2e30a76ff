/* DOCA RDMA's shared receive queues from C (API levels 2.6 and 2.7): a queue's caps,
 * settings and their codes, its context's states, its DPA handle (refused: no DPA here), an
 * RDMA context created with it (its receive settings and receives refused), the queue
 * stopping only once that context stops, destroy refused until then, and the context's
 * start refused once its queue is gone. With the argument "nordma" (a topology whose device
 * has no RDMA) the create and the caps answer NOT_SUPPORTED. Prints "ok". */
#include <stdio.h>
#include <string.h>

#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_pe.h>
#include <doca_rdma.h>

#include "check.h"
#include "open.h"

static void on_task(struct doca_rdma_task_send *task, union doca_data task_data, union doca_data ctx_data)
{
	(void)task;
	(void)task_data;
	(void)ctx_data;
}

static void on_receive(struct doca_rdma_task_receive *task, union doca_data task_data, union doca_data ctx_data)
{
	(void)task;
	(void)task_data;
	(void)ctx_data;
}

static enum doca_ctx_states state_of(struct doca_ctx *ctx)
{
	enum doca_ctx_states s = DOCA_CTX_STATE_IDLE;

	CHECK_CODE(doca_ctx_get_state(ctx, &s), DOCA_SUCCESS);
	return s;
}

static int no_rdma(struct doca_dev *dev)
{
	struct doca_rdma_srq *srq = NULL;
	uint32_t v = 0;

	CHECK_CODE(doca_rdma_srq_create(dev, &srq), DOCA_ERROR_NOT_SUPPORTED);
	CHECK(srq == NULL);
	CHECK_CODE(doca_rdma_srq_cap_get_max_shared_recv_queue_size(doca_dev_as_devinfo(dev), &v),
		   DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_rdma_srq_cap_task_receive_get_max_dst_buf_list_len(doca_dev_as_devinfo(dev), &v),
		   DOCA_ERROR_NOT_SUPPORTED);
	doca_dev_close(dev);
	return checks_result();
}

int main(int argc, char **argv)
{
	struct doca_dev *dev;
	struct doca_pe *pe;
	struct doca_rdma_srq *srq = NULL;
	struct doca_rdma *rdma = NULL, *early = NULL;
	struct doca_ctx *sctx, *rctx;
	struct doca_dpa_dev_rdma_srq *handle = NULL;
	struct doca_rdma_task_receive *recv = NULL;
	enum doca_rdma_srq_type type = DOCA_RDMA_SRQ_TYPE_CYCLIC;
	uint32_t max_size = 0, max_list = 0, v = 0;
	union doca_data none = {.u64 = 0};
	int i;

	if (open_dev("03:00.0", &dev) != DOCA_SUCCESS) {
		fprintf(stderr, "no device 03:00.0\n");
		return 1;
	}
	if (argc > 1 && strcmp(argv[1], "nordma") == 0)
		return no_rdma(dev);

	/* Caps: the default topology's rdma.srq_max_size and rdma.srq_max_buf_list_len. */
	CHECK_CODE(doca_rdma_srq_cap_get_max_shared_recv_queue_size(doca_dev_as_devinfo(dev), &max_size), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_srq_cap_task_receive_get_max_dst_buf_list_len(doca_dev_as_devinfo(dev), &max_list),
		   DOCA_SUCCESS);
	CHECK(max_size == 8192 && max_list == 16);
	CHECK_CODE(doca_rdma_srq_cap_get_max_shared_recv_queue_size(NULL, &v), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_srq_cap_get_max_shared_recv_queue_size(doca_dev_as_devinfo(dev), NULL),
		   DOCA_ERROR_INVALID_VALUE);

	/* Create: NULL arguments refused. */
	CHECK_CODE(doca_rdma_srq_create(dev, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_srq_create(NULL, &srq), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_srq_create(dev, &srq), DOCA_SUCCESS);
	sctx = doca_rdma_srq_as_ctx(srq);
	CHECK(sctx != NULL);
	CHECK(doca_rdma_srq_as_ctx(NULL) == NULL);

	/* Settings, Idle: the defaults, the limits, the rounding. */
	CHECK_CODE(doca_rdma_srq_get_shared_recv_queue_size(srq, &v), DOCA_SUCCESS);
	CHECK(v == 64);
	CHECK_CODE(doca_rdma_srq_get_type(srq, &type), DOCA_SUCCESS);
	CHECK(type == DOCA_RDMA_SRQ_TYPE_LINKED_LIST);
	CHECK_CODE(doca_rdma_srq_set_shared_recv_queue_size(srq, 0), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_srq_set_shared_recv_queue_size(srq, max_size + 1), DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_rdma_srq_set_shared_recv_queue_size(srq, 1000), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_srq_get_shared_recv_queue_size(srq, &v), DOCA_SUCCESS);
	CHECK(v == 1024);
	CHECK_CODE(doca_rdma_srq_task_receive_set_dst_buf_list_len(srq, 0), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_srq_task_receive_set_dst_buf_list_len(srq, max_list + 1), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_srq_task_receive_set_dst_buf_list_len(srq, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_srq_task_receive_get_dst_buf_list_len(srq, &v), DOCA_SUCCESS);
	CHECK(v == 4);
	CHECK_CODE(doca_rdma_srq_set_type(srq, (enum doca_rdma_srq_type)7), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_srq_set_type(srq, DOCA_RDMA_SRQ_TYPE_CYCLIC), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_srq_get_type(srq, &type), DOCA_SUCCESS);
	CHECK(type == DOCA_RDMA_SRQ_TYPE_CYCLIC);
	CHECK_CODE(doca_rdma_srq_get_type(srq, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_srq_get_dpa_handle(srq, &handle), DOCA_ERROR_BAD_STATE);

	/* create_with_srq before the queue starts: BAD_STATE. */
	CHECK_CODE(doca_rdma_create_with_srq(dev, srq, &early), DOCA_ERROR_BAD_STATE);
	CHECK(early == NULL);

	/* Start the queue: Running at once; settings refused; the DPA handle still refused. */
	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_connect_ctx(pe, sctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(sctx), DOCA_SUCCESS);
	CHECK(state_of(sctx) == DOCA_CTX_STATE_RUNNING);
	CHECK_CODE(doca_rdma_srq_set_shared_recv_queue_size(srq, 64), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_rdma_srq_task_receive_set_dst_buf_list_len(srq, 1), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_rdma_srq_set_type(srq, DOCA_RDMA_SRQ_TYPE_LINKED_LIST), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_rdma_srq_get_dpa_handle(srq, &handle), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_rdma_srq_get_dpa_handle(srq, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK(handle == NULL);
	CHECK_CODE(doca_rdma_srq_destroy(srq), DOCA_ERROR_BAD_STATE);

	/* An RDMA context with the queue: receive settings BAD_STATE, receive configuration
	 * INVALID_VALUE, sending tasks configured as usual. */
	CHECK_CODE(doca_rdma_create_with_srq(dev, NULL, &rdma), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_create_with_srq(dev, srq, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_create_with_srq(dev, srq, &rdma), DOCA_SUCCESS);
	rctx = doca_rdma_as_ctx(rdma);
	CHECK_CODE(doca_rdma_set_recv_queue_size(rdma, 16), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_rdma_get_recv_queue_size(rdma, &v), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_rdma_task_receive_set_dst_buf_list_len(rdma, 1), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_rdma_task_receive_get_dst_buf_list_len(rdma, &v), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_rdma_task_receive_set_conf(rdma, on_receive, on_receive, 4), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_task_send_set_conf(rdma, on_task, on_task, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_set_send_queue_size(rdma, 32), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_get_send_queue_size(rdma, &v), DOCA_SUCCESS);
	CHECK(v == 32);
	CHECK_CODE(doca_pe_connect_ctx(pe, rctx), DOCA_SUCCESS);
#if DOCA_EMU_API_LEVEL >= 27
	CHECK_CODE(doca_ctx_start(rctx), DOCA_SUCCESS);
	CHECK(state_of(rctx) == DOCA_CTX_STATE_RUNNING);
	CHECK_CODE(doca_rdma_task_receive_allocate_init(rdma, NULL, none, &recv), DOCA_ERROR_NO_MEMORY);
	CHECK(recv == NULL);
#else /* DOCA 2.6: Starting until it connects */
	CHECK_CODE(doca_ctx_start(rctx), DOCA_ERROR_IN_PROGRESS);
	CHECK(state_of(rctx) == DOCA_CTX_STATE_STARTING);
	CHECK_CODE(doca_rdma_task_receive_allocate_init(rdma, NULL, none, &recv), DOCA_ERROR_NO_MEMORY);
#endif

	/* The queue stopped under its running user: Stopping, destroy refused, until the user
	 * stops. */
	CHECK_CODE(doca_ctx_stop(sctx), DOCA_ERROR_IN_PROGRESS);
	CHECK(state_of(sctx) == DOCA_CTX_STATE_STOPPING);
	doca_pe_progress(pe);
	CHECK(state_of(sctx) == DOCA_CTX_STATE_STOPPING);
	CHECK_CODE(doca_rdma_srq_destroy(srq), DOCA_ERROR_BAD_STATE);
	(void)doca_ctx_stop(rctx);
	for (i = 0; i < 1000 && (state_of(sctx) != DOCA_CTX_STATE_IDLE || state_of(rctx) != DOCA_CTX_STATE_IDLE); i++)
		doca_pe_progress(pe);
	CHECK(state_of(rctx) == DOCA_CTX_STATE_IDLE);
	CHECK(state_of(sctx) == DOCA_CTX_STATE_IDLE);
	CHECK_CODE(doca_rdma_srq_destroy(srq), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_srq_destroy(srq), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_srq_get_type(srq, &type), DOCA_ERROR_INVALID_VALUE);

	/* The user of a destroyed queue cannot start; it is destroyed as any context. */
	CHECK_CODE(doca_ctx_start(rctx), DOCA_ERROR_BAD_STATE);
	CHECK(state_of(rctx) == DOCA_CTX_STATE_IDLE);
	CHECK_CODE(doca_rdma_destroy(rdma), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	doca_dev_close(dev);
	return checks_result();
}
