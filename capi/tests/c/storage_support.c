/* What NVIDIA's storage application asks of DOCA Core beyond the samples, from C: a map
 * from export exported on for RDMA (as its DPU does with the host's memory), thread-safe
 * maps (3.x: destroyed with buffers out), buffers reused over other addresses of their map
 * (3.x), with their error codes. One process plays every part with host functions (the
 * bytes through the relay are checked by the Rust tests). Exits 0 and prints "ok" when
 * every check holds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "open.h"
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_mmap.h>

int main(void)
{
	const uint32_t all = DOCA_ACCESS_FLAG_LOCAL_READ_WRITE | DOCA_ACCESS_FLAG_PCI_READ_WRITE |
			     DOCA_ACCESS_FLAG_RDMA_READ | DOCA_ACCESS_FLAG_RDMA_WRITE;
	char *mem = malloc(8192);
	struct doca_dev *host, *dpu_like, *node;
	struct doca_mmap *map, *imported, *on_node, *plain;
	struct doca_buf_inventory *inv;
	struct doca_buf *buf, *held;
	const void *desc, *desc2;
	size_t desc_len, desc2_len, len;
	void *head, *data;
	uint8_t flag;
	int i;

	for (i = 0; i < 8192; i++)
		mem[i] = (char)i;
	CHECK_CODE(open_dev("b1:00.0", &host), DOCA_SUCCESS);
	CHECK_CODE(open_dev("b1:00.1", &dpu_like), DOCA_SUCCESS);
	CHECK_CODE(open_dev("3b:00.0", &node), DOCA_SUCCESS);

	/* Thread safety: before start only (a map of this process), not on NULL. */
	CHECK_CODE(doca_mmap_enable_thread_safety(NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, mem, 8192), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(map, all), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(map, host), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_enable_thread_safety(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_enable_thread_safety(map), DOCA_ERROR_NOT_PERMITTED);

	/* The import exported on for RDMA, with the device it was created with only. */
	CHECK_CODE(doca_mmap_export_pci(map, host, &desc, &desc_len), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_create_from_export(NULL, desc, desc_len, dpu_like, &imported), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_enable_thread_safety(imported), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_export_pci(imported, dpu_like, &desc2, &desc2_len), DOCA_ERROR_NOT_PERMITTED);
	CHECK_CODE(doca_mmap_export_rdma(imported, node, &desc2, &desc2_len), DOCA_ERROR_NOT_FOUND);
	CHECK_CODE(doca_mmap_get_exported(imported, &flag), DOCA_SUCCESS);
	CHECK(flag == 0);
	CHECK_CODE(doca_mmap_export_rdma(imported, dpu_like, &desc2, &desc2_len), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_get_exported(imported, &flag), DOCA_SUCCESS);
	CHECK(flag == 1);
	CHECK_CODE(doca_mmap_create_from_export(NULL, desc2, desc2_len, node, &on_node), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_get_memrange(on_node, &head, &len), DOCA_SUCCESS);
	CHECK(head == (void *)mem && len == 8192);

	/* Buffers reused over other addresses of their own map. */
	CHECK_CODE(doca_buf_inventory_create(4, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, map, mem, 16, &buf), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_reuse_by_addr(buf, mem + 100, 50), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_head(buf, &head), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_len(buf, &len), DOCA_SUCCESS);
	CHECK(head == mem + 100 && len == 50);
	CHECK_CODE(doca_buf_get_data_len(buf, &len), DOCA_SUCCESS);
	CHECK(len == 0);
	CHECK_CODE(doca_buf_inventory_buf_reuse_by_data(buf, mem + 300, 8), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_data(buf, &data), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_data_len(buf, &len), DOCA_SUCCESS);
	CHECK(data == mem + 300 && len == 8 && ((unsigned char *)data)[0] == (unsigned char)300);
	CHECK_CODE(doca_buf_inventory_buf_reuse_by_data(buf, mem + 8190, 16), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_buf_inventory_buf_reuse_by_addr(NULL, mem, 16), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_buf_get_data(buf, &data), DOCA_SUCCESS);
	CHECK(data == mem + 300);

	/* Destroy with a buffer out: refused on a plain map, taken on a thread-safe one. */
	CHECK_CODE(doca_mmap_create(&plain), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(plain, mem, 4096), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(plain), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, plain, mem, 64, &held), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(plain), DOCA_ERROR_NOT_PERMITTED);
	CHECK_CODE(doca_buf_dec_refcount(held, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(plain), DOCA_SUCCESS);

	CHECK_CODE(doca_mmap_destroy(on_node), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(imported), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_get_data(buf, &data), DOCA_SUCCESS);
	CHECK(((unsigned char *)data)[1] == (unsigned char)301);
	CHECK_CODE(doca_buf_dec_refcount(buf, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_stop(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(node), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dpu_like), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(host), DOCA_SUCCESS);
	free(mem);
	return checks_result();
}
