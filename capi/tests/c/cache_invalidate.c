/* DOCA 2.9's cache_invalidate flow: a DMA copy whose completion callback submits a
 * cache-invalidate task on its buffer, whose completion ends the progress loop; then the
 * error paths: a task without a buffer (error callback, INVALID_VALUE; try_submit refuses
 * it), a buffer of a map not on the device (NOT_PERMITTED) — each failure fatal to the
 * context, as on DOCA's engine, which is started again — the buffer accessors, an empty
 * pool and destroy while running. Prints "ok" when every check holds. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "open.h"
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_dma.h>
#include <doca_mmap.h>
#include <doca_mmap_advise.h>
#include <doca_pe.h>

#define LEN 4096

struct state {
	struct doca_mmap_advise_task_invalidate_cache *invalidate;
	bool run_pe;
	int done, failed;
	doca_error_t last;
};

static void dma_done(struct doca_dma_task_memcpy *task, union doca_data td, union doca_data cd)
{
	struct state *s = cd.ptr;

	(void)td;
	(void)task;
	CHECK_CODE(doca_task_submit(doca_mmap_advise_task_invalidate_cache_as_doca_task(s->invalidate)), DOCA_SUCCESS);
}

static void dma_error(struct doca_dma_task_memcpy *task, union doca_data td, union doca_data cd)
{
	struct state *s = cd.ptr;

	(void)td;
	(void)task;
	s->run_pe = false;
	s->failed++;
}

static void inv_done(struct doca_mmap_advise_task_invalidate_cache *task, union doca_data td, union doca_data cd)
{
	struct state *s = cd.ptr;

	(void)task;
	CHECK(td.u64 == 42);
	s->done++;
	s->run_pe = false;
}

static void inv_error(struct doca_mmap_advise_task_invalidate_cache *task, union doca_data td, union doca_data cd)
{
	struct state *s = cd.ptr;

	(void)td;
	s->last = doca_task_get_status(doca_mmap_advise_task_invalidate_cache_as_doca_task(task));
	s->failed++;
	s->run_pe = false;
}

static void run(struct doca_pe *pe, struct state *s)
{
	int spins;

	s->run_pe = true;
	for (spins = 0; s->run_pe && spins < 1000000; spins++)
		doca_pe_progress(pe);
	CHECK(!s->run_pe);
}

/* As on DOCA's engine, a failed task stopped its context: once its tasks are freed it reaches
 * Idle, and is started again. */
static void restart(struct doca_pe *pe, struct doca_ctx *ctx)
{
	enum doca_ctx_states st = DOCA_CTX_STATE_RUNNING;
	int spins;

	for (spins = 0; st != DOCA_CTX_STATE_IDLE && spins < 1000000; spins++) {
		doca_pe_progress(pe);
		CHECK_CODE(doca_ctx_get_state(ctx, &st), DOCA_SUCCESS);
	}
	CHECK(st == DOCA_CTX_STATE_IDLE);
	CHECK_CODE(doca_ctx_start(ctx), DOCA_SUCCESS);
}

int main(void)
{
	struct state s = {0};
	struct doca_dev *dev;
	struct doca_pe *pe;
	struct doca_dma *dma;
	struct doca_mmap_advise *advise;
	struct doca_ctx *dma_ctx, *advise_ctx;
	struct doca_mmap *map, *other;
	struct doca_buf_inventory *inv;
	struct doca_buf *src, *dst, *foreign;
	struct doca_dma_task_memcpy *copy;
	struct doca_mmap_advise_task_invalidate_cache *bad, *spare[2];
	union doca_data ud = {.ptr = &s};
	uint64_t max_size = 0;
	char *mem = malloc(2 * LEN), *elsewhere = malloc(LEN);

	memset(mem, 'x', LEN);
	CHECK_CODE(open_dev("03:00.0", &dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_advise_cap_task_cache_invalidate_is_supported(doca_dev_as_devinfo(dev)), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_advise_task_cache_invalidate_get_max_buf_size(doca_dev_as_devinfo(dev), &max_size),
		   DOCA_SUCCESS);
	CHECK(max_size >= 2 * LEN);
	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);

	CHECK_CODE(doca_dma_create(dev, &dma), DOCA_SUCCESS);
	dma_ctx = doca_dma_as_ctx(dma);
	CHECK_CODE(doca_pe_connect_ctx(pe, dma_ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_set_user_data(dma_ctx, ud), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_task_memcpy_set_conf(dma, dma_done, dma_error, 2), DOCA_SUCCESS);

	CHECK_CODE(doca_mmap_advise_create(dev, &advise), DOCA_SUCCESS);
	advise_ctx = doca_mmap_advise_as_ctx(advise);
	CHECK(advise_ctx != NULL);
	CHECK_CODE(doca_pe_connect_ctx(pe, advise_ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_set_user_data(advise_ctx, ud), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_advise_task_invalidate_cache_set_conf(advise, inv_done, inv_error, 4), DOCA_SUCCESS);

	CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, mem, 2 * LEN), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(map, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_create(&other), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(other, elsewhere, LEN), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(other), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_create(4, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, map, mem, LEN, &src), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, mem + LEN, LEN, &dst), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, other, elsewhere, LEN, &foreign), DOCA_SUCCESS);

	CHECK_CODE(doca_ctx_start(dma_ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(advise_ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_advise_destroy(advise), DOCA_ERROR_BAD_STATE);

	/* the sample's flow */
	ud.u64 = 0;
	CHECK_CODE(doca_dma_task_memcpy_alloc_init(dma, src, dst, ud, &copy), DOCA_SUCCESS);
	ud.u64 = 42;
	CHECK_CODE(doca_mmap_advise_task_invalidate_cache_alloc_init(advise, src, ud, &s.invalidate), DOCA_SUCCESS);
	CHECK(doca_mmap_advise_task_invalidate_cache_get_buf(s.invalidate) == src);
	doca_mmap_advise_task_invalidate_cache_set_buf(s.invalidate, dst);
	CHECK(doca_mmap_advise_task_invalidate_cache_get_buf(s.invalidate) == dst);
	CHECK_CODE(doca_task_submit(doca_dma_task_memcpy_as_task(copy)), DOCA_SUCCESS);
	run(pe, &s);
	CHECK(s.done == 1 && s.failed == 0);
	CHECK(memcmp(mem, mem + LEN, LEN) == 0);
	doca_task_free(doca_dma_task_memcpy_as_task(copy));
	doca_task_free(doca_mmap_advise_task_invalidate_cache_as_doca_task(s.invalidate));

	/* no buffer: try_submit refuses it, submit reports it through the error callback */
	ud.u64 = 1;
	CHECK_CODE(doca_mmap_advise_task_invalidate_cache_alloc_init(advise, NULL, ud, &bad), DOCA_SUCCESS);
	CHECK(doca_mmap_advise_task_invalidate_cache_get_buf(bad) == NULL);
	CHECK_CODE(doca_task_try_submit(doca_mmap_advise_task_invalidate_cache_as_doca_task(bad)),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_task_submit(doca_mmap_advise_task_invalidate_cache_as_doca_task(bad)), DOCA_SUCCESS);
	run(pe, &s);
	CHECK(s.failed == 1);
	CHECK_CODE(s.last, DOCA_ERROR_INVALID_VALUE);
	/* the failure stopped the context: submitting again is refused until a restart */
	CHECK_CODE(doca_task_submit(doca_mmap_advise_task_invalidate_cache_as_doca_task(bad)), DOCA_ERROR_BAD_STATE);
	doca_task_free(doca_mmap_advise_task_invalidate_cache_as_doca_task(bad));
	restart(pe, advise_ctx);
	/* a buffer of a map not added to the device */
	CHECK_CODE(doca_mmap_advise_task_invalidate_cache_alloc_init(advise, NULL, ud, &bad), DOCA_SUCCESS);
	doca_mmap_advise_task_invalidate_cache_set_buf(bad, foreign);
	CHECK_CODE(doca_task_submit(doca_mmap_advise_task_invalidate_cache_as_doca_task(bad)), DOCA_SUCCESS);
	/* while submitted: the cast of its own kind is the handle, another kind's is NULL */
	CHECK(doca_mmap_advise_task_invalidate_cache_as_doca_task(bad) != NULL);
	CHECK(doca_dma_task_memcpy_as_task((struct doca_dma_task_memcpy *)bad) == NULL);
	run(pe, &s);
	CHECK(s.failed == 2);
	CHECK_CODE(s.last, DOCA_ERROR_NOT_PERMITTED);
	doca_task_free(doca_mmap_advise_task_invalidate_cache_as_doca_task(bad));
	restart(pe, advise_ctx);
	/* a DMA task is not a cache-invalidate task */
	CHECK(doca_mmap_advise_task_invalidate_cache_get_buf(
		      (struct doca_mmap_advise_task_invalidate_cache *)doca_dma_task_memcpy_as_task(copy)) == NULL);

	/* the pool: 4 tasks */
	CHECK_CODE(doca_mmap_advise_task_invalidate_cache_alloc_init(advise, src, ud, &bad), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_advise_task_invalidate_cache_alloc_init(advise, src, ud, &spare[0]), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_advise_task_invalidate_cache_alloc_init(advise, src, ud, &spare[1]), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_advise_task_invalidate_cache_alloc_init(advise, src, ud, &s.invalidate), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_advise_task_invalidate_cache_alloc_init(advise, src, ud, &s.invalidate),
		   DOCA_ERROR_NO_MEMORY);
	doca_task_free(doca_mmap_advise_task_invalidate_cache_as_doca_task(bad));
	doca_task_free(doca_mmap_advise_task_invalidate_cache_as_doca_task(spare[0]));
	doca_task_free(doca_mmap_advise_task_invalidate_cache_as_doca_task(spare[1]));
	doca_task_free(doca_mmap_advise_task_invalidate_cache_as_doca_task(s.invalidate));

	CHECK_CODE(doca_ctx_stop(advise_ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_stop(dma_ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_advise_destroy(advise), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_destroy(dma), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(src, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(dst, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(foreign, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(other), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dev), DOCA_SUCCESS);
	free(mem);
	free(elsewhere);
	return checks_result();
}
