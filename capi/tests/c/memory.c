/* Memory the C way: the application's malloc'd memory in a map, buffers by address, bytes
 * written and read through the pointers DOCA hands back, DOCA's reference counts, and the
 * error paths. Exits 0 and prints "ok" when every check holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_mmap.h>


int main(void)
{
	char *mem = malloc(4096);
	struct doca_mmap *map;
	struct doca_buf_inventory *inv;
	struct doca_buf *out, *in, *stale;
	void *addr, *p;
	size_t len;
	uint16_t rc;
	uint32_t n;

	memset(mem, 0, 4096);
	CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, NULL, 4096), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_mmap_get_memrange(map, &addr, &len), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_mmap_set_memrange(map, mem, 4096), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, mem, 4096), DOCA_ERROR_NOT_PERMITTED);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_PCI_READ_ONLY | DOCA_ACCESS_FLAG_PCI_READ_WRITE),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_get_memrange(map, &addr, &len), DOCA_SUCCESS);
	CHECK(addr == mem && len == 4096);

	CHECK_CODE(doca_buf_inventory_create(4, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, mem, 64, &out), DOCA_ERROR_BAD_STATE); /* not started */
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);

	/* A buffer by address: the application writes through the address DOCA gives back. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, mem + 100, 64, &out), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_head(out, &p), DOCA_SUCCESS);
	CHECK(p == mem + 100);
	CHECK_CODE(doca_buf_get_data_len(out, &len), DOCA_SUCCESS);
	CHECK(len == 0);
	memcpy(mem + 100, "hello", 5);
	CHECK_CODE(doca_buf_set_data(out, mem + 100, 5), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_set_data(out, mem + 90, 5), DOCA_ERROR_INVALID_VALUE); /* before head */
	CHECK_CODE(doca_buf_get_data(out, &p), DOCA_SUCCESS);
	CHECK(p == mem + 100 && memcmp(p, "hello", 5) == 0);

	/* By data, over the same bytes; and a range outside the map. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, map, mem + 100, 5, &in), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_data_len(in, &len), DOCA_SUCCESS);
	CHECK(len == 5);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, mem + 4090, 64, &stale), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_buf_inventory_buf_get_by_args(inv, map, mem, 16, mem + 8, 16, &stale), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_buf_inventory_get_num_free_elements(inv, &n), DOCA_SUCCESS);
	CHECK(n == 2);
	CHECK_CODE(doca_mmap_get_num_bufs(map, &n), DOCA_SUCCESS);
	CHECK(n == 2);

	/* Reference counts: the count before. */
	CHECK_CODE(doca_buf_inc_refcount(in, &rc), DOCA_SUCCESS);
	CHECK(rc == 1);
	CHECK_CODE(doca_buf_get_refcount(in, &rc), DOCA_SUCCESS);
	CHECK(rc == 2);
	CHECK_CODE(doca_buf_dec_refcount(in, &rc), DOCA_SUCCESS);
	CHECK(rc == 2);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_ERROR_NOT_PERMITTED); /* buffers point into it */
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_ERROR_IN_USE);
	CHECK_CODE(doca_buf_dec_refcount(in, &rc), DOCA_SUCCESS);
	CHECK(rc == 1);
	CHECK_CODE(doca_buf_get_data(in, &p), DOCA_ERROR_INVALID_VALUE); /* went back */
	CHECK_CODE(doca_buf_dec_refcount(out, NULL), DOCA_SUCCESS);

	CHECK_CODE(doca_buf_inventory_stop(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_ERROR_INVALID_VALUE);
	free(mem);

	return checks_result();
}
