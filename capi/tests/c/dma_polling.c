/* DMA the way DOCA's pe_polling sample does it: a DMA context on a progress engine, several
 * memcpy tasks between buffers of the application's own memory, doca_pe_progress until every
 * completion came; then a task with an empty source (error callback), try_submit's code, an
 * empty pool, and the accessors. Exits 0 and prints "ok" when every check holds. */
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
#include <doca_pe.h>

#define NUM_TASKS 4
#define LEN 4096

static int completed, failed;
static doca_error_t last_error = DOCA_SUCCESS;

static void on_done(struct doca_dma_task_memcpy *task, union doca_data td, union doca_data cd)
{
	size_t len = 0;

	(void)cd;
	CHECK_CODE(doca_buf_get_data_len(doca_dma_task_memcpy_get_dst(task), &len), DOCA_SUCCESS);
	CHECK(len == LEN);
	/* The user data as last set, while the task was submitted too (100 + i). */
	CHECK(td.u64 < NUM_TASKS || (td.u64 >= 100 && td.u64 < 100 + NUM_TASKS));
	CHECK(doca_task_get_user_data(doca_dma_task_memcpy_as_task(task)).u64 == td.u64);
	completed++;
	doca_task_free(doca_dma_task_memcpy_as_task(task));
}

static void on_error(struct doca_dma_task_memcpy *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_dma_task_memcpy_as_task(task));
	failed++;
	doca_task_free(doca_dma_task_memcpy_as_task(task));
}

int main(void)
{
	struct doca_dev *dev;
	struct doca_pe *pe;
	struct doca_dma *dma;
	struct doca_ctx *ctx;
	struct doca_mmap *map;
	struct doca_buf_inventory *inv;
	struct doca_buf *src[NUM_TASKS], *dst[NUM_TASKS];
	struct doca_dma_task_memcpy *task, *extra[NUM_TASKS];
	union doca_data ud;
	uint32_t max_tasks, list_len;
	uint64_t max_size;
	char *mem = malloc(2 * NUM_TASKS * LEN);
	int i, spins;

	CHECK_CODE(open_dev("03:00.0", &dev), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_cap_task_memcpy_is_supported(doca_dev_as_devinfo(dev)), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_cap_task_memcpy_get_max_buf_size(doca_dev_as_devinfo(dev), &max_size), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_cap_task_memcpy_get_max_buf_list_len(doca_dev_as_devinfo(dev), &list_len), DOCA_SUCCESS);
	CHECK(max_size >= LEN && list_len >= 1);
	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_create(dev, &dma), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_cap_get_max_num_tasks(dma, &max_tasks), DOCA_SUCCESS);
	CHECK(max_tasks >= NUM_TASKS);
	ctx = doca_dma_as_ctx(dma);
	CHECK(ctx != NULL);
	CHECK_CODE(doca_dma_task_memcpy_set_conf(dma, on_done, on_error, NUM_TASKS), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_connect_ctx(pe, ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(ctx), DOCA_SUCCESS);

	for (i = 0; i < NUM_TASKS; i++) {
		memset(mem + i * LEN, 'a' + i, LEN);
		memset(mem + (NUM_TASKS + i) * LEN, 0, LEN);
	}
	CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, mem, 2 * NUM_TASKS * LEN), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(map, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(map), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_create(2 * NUM_TASKS + 2, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);

	for (i = 0; i < NUM_TASKS; i++) {
		CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, map, mem + i * LEN, LEN, &src[i]), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, mem + (NUM_TASKS + i) * LEN, LEN, &dst[i]),
			   DOCA_SUCCESS);
		ud.u64 = (uint64_t)i;
		CHECK_CODE(doca_dma_task_memcpy_alloc_init(dma, src[i], dst[i], ud, &task), DOCA_SUCCESS);
		CHECK(doca_dma_task_memcpy_get_src(task) == src[i]);
		CHECK(doca_dma_task_memcpy_get_dst(task) == dst[i]);
		CHECK_CODE(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_SUCCESS);
		/* A submitted task's user data reads and changes as a held one's. */
		CHECK(doca_task_get_user_data(doca_dma_task_memcpy_as_task(task)).u64 == (uint64_t)i);
		ud.u64 = 100 + (uint64_t)i;
		doca_task_set_user_data(doca_dma_task_memcpy_as_task(task), ud);
		CHECK(doca_task_get_user_data(doca_dma_task_memcpy_as_task(task)).u64 == 100 + (uint64_t)i);
		/* Not completed yet: no failure to report (DOCA's library returns the status field). */
		CHECK_CODE(doca_task_get_status(doca_dma_task_memcpy_as_task(task)), DOCA_SUCCESS);
	}
	CHECK(completed == 0); /* the copies are the engine's work, inside progress */
	for (spins = 0; completed + failed < NUM_TASKS && spins < 1000000; spins++)
		doca_pe_progress(pe);
	CHECK(completed == NUM_TASKS && failed == 0);
	for (i = 0; i < NUM_TASKS; i++) {
		void *data;

		CHECK_CODE(doca_buf_get_data(dst[i], &data), DOCA_SUCCESS);
		CHECK(data == mem + (NUM_TASKS + i) * LEN);
		CHECK(memcmp(mem + i * LEN, mem + (NUM_TASKS + i) * LEN, LEN) == 0);
		CHECK_CODE(doca_buf_reset_data_len(dst[i]), DOCA_SUCCESS);
	}

	/* pe_task_error: an empty source; try_submit refuses it, submit reports it later. */
	CHECK_CODE(doca_buf_reset_data_len(src[0]), DOCA_SUCCESS);
	ud.u64 = 0;
	CHECK_CODE(doca_dma_task_memcpy_alloc_init(dma, src[0], dst[0], ud, &task), DOCA_SUCCESS);
	CHECK_CODE(doca_task_try_submit(doca_dma_task_memcpy_as_task(task)), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_SUCCESS);
	for (spins = 0; failed == 0 && spins < 1000000; spins++)
		doca_pe_progress(pe);
	CHECK(failed == 1);
	CHECK_CODE(last_error, DOCA_ERROR_INVALID_VALUE);
	/* As on DOCA's engine, the failure stopped the context: it reaches Idle once the failed
	 * task is freed (by the error callback), and is started again. */
	{
		enum doca_ctx_states st = DOCA_CTX_STATE_RUNNING;

		for (spins = 0; st != DOCA_CTX_STATE_IDLE && spins < 1000000; spins++) {
			doca_pe_progress(pe);
			CHECK_CODE(doca_ctx_get_state(ctx, &st), DOCA_SUCCESS);
		}
		CHECK(st == DOCA_CTX_STATE_IDLE);
	}
	CHECK_CODE(doca_ctx_start(ctx), DOCA_SUCCESS);

	/* Tasks without buffers, then one too many. */
	for (i = 0; i < NUM_TASKS; i++)
		CHECK_CODE(doca_dma_task_memcpy_alloc_init(dma, NULL, NULL, ud, &extra[i]), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_task_memcpy_alloc_init(dma, NULL, NULL, ud, &task), DOCA_ERROR_NO_MEMORY);
	CHECK(doca_dma_task_memcpy_get_src(extra[0]) == NULL);
	doca_dma_task_memcpy_set_src(extra[0], src[1]);
	doca_dma_task_memcpy_set_dst(extra[0], dst[1]);
	CHECK(doca_dma_task_memcpy_get_src(extra[0]) == src[1] && doca_dma_task_memcpy_get_dst(extra[0]) == dst[1]);
	CHECK_CODE(doca_task_try_submit(doca_dma_task_memcpy_as_task(extra[0])), DOCA_SUCCESS);
	for (spins = 0; completed == NUM_TASKS && spins < 1000000; spins++)
		doca_pe_progress(pe);
	CHECK(completed == NUM_TASKS + 1);
	for (i = 1; i < NUM_TASKS; i++)
		doca_task_free(doca_dma_task_memcpy_as_task(extra[i]));

	/* A freed task's handle stays dead, also once a new task of its pool slot reuses its
	 * memory (the new task has a handle of its own). */
	{
		struct doca_task *old;

		CHECK_CODE(doca_dma_task_memcpy_alloc_init(dma, src[0], dst[0], ud, &task), DOCA_SUCCESS);
		old = doca_dma_task_memcpy_as_task(task);
		doca_task_free(old);
		CHECK_CODE(doca_task_submit(old), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_dma_task_memcpy_alloc_init(dma, src[0], dst[0], ud, &task), DOCA_SUCCESS);
		CHECK(doca_dma_task_memcpy_as_task(task) != old);
		CHECK_CODE(doca_task_submit(old), DOCA_ERROR_INVALID_VALUE);
		CHECK(doca_task_get_user_data(doca_dma_task_memcpy_as_task(task)).u64 == ud.u64);
		doca_task_free(doca_dma_task_memcpy_as_task(task));
	}

	/* Two maps over one buffer: a copy whose source and destination overlap in memory,
	 * though not in one map, fails (INVALID_VALUE) instead of copying over itself. */
	{
		struct doca_mmap *alias;
		struct doca_buf *over;
		enum doca_ctx_states st = DOCA_CTX_STATE_RUNNING;
		int failed_before = failed;

		CHECK_CODE(doca_mmap_create(&alias), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_set_memrange(alias, mem, 2 * NUM_TASKS * LEN), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_set_permissions(alias, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_add_dev(alias, dev), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_start(alias), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, alias, mem + LEN + LEN / 2, LEN, &over), DOCA_SUCCESS);
		CHECK_CODE(doca_dma_task_memcpy_alloc_init(dma, src[1], over, ud, &task), DOCA_SUCCESS);
		CHECK_CODE(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_SUCCESS);
		for (spins = 0; failed == failed_before && spins < 1000000; spins++)
			doca_pe_progress(pe);
		CHECK(failed == failed_before + 1);
		CHECK_CODE(last_error, DOCA_ERROR_INVALID_VALUE);
		for (spins = 0; st != DOCA_CTX_STATE_IDLE && spins < 1000000; spins++) {
			doca_pe_progress(pe);
			CHECK_CODE(doca_ctx_get_state(ctx, &st), DOCA_SUCCESS);
		}
		CHECK(st == DOCA_CTX_STATE_IDLE);
		CHECK_CODE(doca_ctx_start(ctx), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_dec_refcount(over, NULL), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_stop(alias), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_destroy(alias), DOCA_SUCCESS);
	}

	CHECK_CODE(doca_dma_destroy(dma), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_ctx_stop(ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_destroy(dma), DOCA_SUCCESS);
	for (i = 0; i < NUM_TASKS; i++) {
		CHECK_CODE(doca_buf_dec_refcount(src[i], NULL), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_dec_refcount(dst[i], NULL), DOCA_SUCCESS);
	}
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dev), DOCA_SUCCESS);
	free(mem);
	return checks_result();
}
