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

static void *freed_addr, *freed_opaque;
static size_t freed_len;

/* The map's free callback: the range it was given, and the pointer given with it. */
static void on_free(void *addr, size_t len, void *opaque)
{
	freed_addr = addr;
	freed_len = len;
	freed_opaque = opaque;
	free(addr);
}

int main(void)
{
	char *mem = malloc(4096);
	struct doca_mmap *map;
	struct doca_buf_inventory *inv;
	struct doca_buf *out, *in, *stale, *a, *b, *nb;
	union doca_data ud = {.u64 = 5}, got_ud;
	uint8_t flag;
	void *addr, *p;
	size_t len;
	uint16_t rc;
	uint32_t n;

	memset(mem, 0, 4096);
	CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, NULL, 4096), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_mmap_get_memrange(map, &addr, &len), DOCA_ERROR_BAD_STATE);
	{
		struct doca_mmap *wrap;

		CHECK_CODE(doca_mmap_create(&wrap), DOCA_SUCCESS);
		CHECK_CODE(doca_mmap_set_memrange(wrap, (void *)(UINTPTR_MAX - 15), 64), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_mmap_destroy(wrap), DOCA_SUCCESS);
	}
	CHECK_CODE(doca_mmap_set_memrange(map, mem, 4096), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, mem, 4096), DOCA_ERROR_NOT_PERMITTED);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_PCI_READ_ONLY | DOCA_ACCESS_FLAG_PCI_READ_WRITE),
		   DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_free_cb(map, on_free, &freed_len), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_user_data(map, ud), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_free_cb(map, on_free, NULL), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_mmap_set_user_data(map, ud), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_mmap_get_user_data(map, &got_ud), DOCA_SUCCESS);
	CHECK(got_ud.u64 == 5);
	CHECK_CODE(doca_mmap_get_exported(map, &flag), DOCA_SUCCESS);
	CHECK(flag == 0);
	CHECK_CODE(doca_mmap_get_from_export(map, &flag), DOCA_SUCCESS);
	CHECK(flag == 0);
	CHECK_CODE(doca_mmap_export_pci(map, NULL, (const void **)&p, &len), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_mmap_get_memrange(map, &addr, &len), DOCA_SUCCESS);
	CHECK(addr == mem && len == 4096);

	if (sizeof(size_t) > 4) /* more elements than 32 bits count: invalid input */
		CHECK_CODE(doca_buf_inventory_create((size_t)UINT32_MAX + 1, &inv), DOCA_ERROR_INVALID_VALUE);
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

	/* Lists: the handles a walk gives are the ones the application holds. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, mem + 200, 16, &a), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, map, mem + 300, 16, &b), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_chain_list(a, b), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_chain_list(a, a), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_buf_get_list_len(a, &n), DOCA_SUCCESS);
	CHECK(n == 2);
	CHECK_CODE(doca_buf_get_list_len(b, &n), DOCA_ERROR_NOT_PERMITTED);
	CHECK_CODE(doca_buf_is_in_list(b, &flag), DOCA_SUCCESS);
	CHECK(flag == 1);
	CHECK_CODE(doca_buf_is_first_in_list(b, &flag), DOCA_SUCCESS);
	CHECK(flag == 0);
	CHECK_CODE(doca_buf_is_last_in_list(b, &flag), DOCA_SUCCESS);
	CHECK(flag == 1);
	CHECK_CODE(doca_buf_get_next_in_list(a, &nb), DOCA_SUCCESS);
	CHECK(nb == b);
	CHECK_CODE(doca_buf_get_next_in_list(b, &nb), DOCA_SUCCESS);
	CHECK(nb == NULL);
	CHECK_CODE(doca_buf_get_last_in_list(a, &nb), DOCA_SUCCESS);
	CHECK(nb == b);
	CHECK_CODE(doca_buf_dec_refcount(b, NULL), DOCA_ERROR_NOT_PERMITTED);
	CHECK_CODE(doca_buf_inventory_buf_dup(inv, a, &nb), DOCA_ERROR_NO_MEMORY); /* no two free elements */
	CHECK_CODE(doca_buf_unchain_list(a, b), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_is_in_list(a, &flag), DOCA_SUCCESS);
	CHECK(flag == 0);
	CHECK_CODE(doca_buf_chain_list(a, b), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(a, &rc), DOCA_SUCCESS); /* the whole list goes back */
	CHECK(rc == 1);
	CHECK_CODE(doca_buf_get_data(b, &p), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_buf_inventory_get_num_free_elements(inv, &n), DOCA_SUCCESS);
	CHECK(n == 2);
	CHECK_CODE(doca_buf_inventory_buf_dup(inv, out, &nb), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_head(nb, &p), DOCA_SUCCESS);
	CHECK(p == mem + 100);
	CHECK_CODE(doca_buf_dec_refcount(nb, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_get_num_elements(inv, &n), DOCA_SUCCESS);
	CHECK(n == 4);
	CHECK_CODE(doca_buf_inventory_set_user_data(inv, ud), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_get_user_data(inv, &got_ud), DOCA_SUCCESS);
	CHECK(got_ud.u64 == 5);

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
	/* Its descriptor's next buffer has a handle of its own; the old one stays dead. */
	{
		struct doca_buf *again;

		CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, map, mem + 64, 16, &again), DOCA_SUCCESS);
		CHECK(again != in);
		CHECK_CODE(doca_buf_get_data(in, &p), DOCA_ERROR_INVALID_VALUE);
		CHECK_CODE(doca_buf_get_data(again, &p), DOCA_SUCCESS);
		CHECK(p == mem + 64);
		CHECK_CODE(doca_buf_dec_refcount(again, NULL), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_get_data(again, &p), DOCA_ERROR_INVALID_VALUE);
	}
	CHECK_CODE(doca_buf_dec_refcount(out, NULL), DOCA_SUCCESS);

	CHECK_CODE(doca_buf_inventory_stop(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
	CHECK(freed_addr == mem && freed_len == 4096 && freed_opaque == &freed_len); /* freed mem */
	CHECK_CODE(doca_mmap_destroy(map), DOCA_ERROR_INVALID_VALUE);

	return checks_result();
}
