/* Two threads share an inventory of one buffer: each gets it when it is free, uses it through
 * its handle and gives it back. A buffer's handle must live from its get to its last
 * doca_buf_dec_refcount whatever the other thread does meanwhile: the one that just gave the
 * buffer back must not end the handle the other one got for the same descriptor. Exits 0 and
 * prints "ok" when every check holds. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_mmap.h>

#define ROUNDS 50000

static struct doca_mmap *map;
static struct doca_buf_inventory *inv;
static char *mem;
static atomic_long refused, used;

static void *worker(void *arg)
{
	long i;

	(void)arg;
	for (i = 0; i < ROUNDS; i++) {
		struct doca_buf *b;
		void *data;
		uint16_t rc;

		if (doca_buf_inventory_buf_get_by_addr(inv, map, mem, 64, &b) != DOCA_SUCCESS)
			continue; /* the other thread has it */
		if (doca_buf_get_data(b, &data) != DOCA_SUCCESS || data != mem ||
		    doca_buf_dec_refcount(b, &rc) != DOCA_SUCCESS) {
			atomic_fetch_add(&refused, 1);
			return NULL; /* the buffer is lost: the other thread's gets would fail */
		}
		atomic_fetch_add(&used, 1);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[2];
	uint32_t n;
	int i;

	mem = calloc(1, 4096);
	CHECK(mem != NULL);
	CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, mem, 4096), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(map), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_create(1, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);
	for (i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, worker, NULL) == 0);
	for (i = 0; i < 2; i++)
		CHECK(pthread_join(t[i], NULL) == 0);
	CHECK(atomic_load(&refused) == 0);
	CHECK(atomic_load(&used) > 0);
	CHECK_CODE(doca_buf_inventory_get_num_free_elements(inv, &n), DOCA_SUCCESS);
	CHECK(n == 1);
	CHECK_CODE(doca_buf_inventory_stop(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
	free(mem);
	return checks_result();
}
