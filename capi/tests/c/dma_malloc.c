/* DMA over memory a C program exported, in the shape of DOCA's dma_copy: the host registers
 * its own malloc'd buffer, exports it and prints the descriptor and the buffer's address, then
 * blocks in read() on its stdin (its threads do nothing while the DPU copies); the DPU imports
 * the export, names host buffers by host addresses, and its DMA reads the host's first half
 * into its own memory and writes its own bytes into the host's second half.
 *
 *   dma_malloc host <len> [<file>]        prints "desc <hex> <addr>" (with <file>: writes
 *                                         "<hex> <addr>" into it, as dma_copy writes its
 *                                         descriptor file, and prints "exported"), blocks in
 *                                         read(), then checks both halves, destroys its map,
 *                                         prints "ok"
 *   dma_malloc dpu <hex> <addr> <len>     copies both ways, prints "copied", waits for a line,
 *                                         then expects the next task to fail with NOT_FOUND
 *                                         (the host is gone by then) and prints "ok"
 *   dma_malloc dpu-file <file> <len>      the same, the descriptor and address read from the
 *                                         file the host wrote */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "open.h"
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_dma.h>
#include <doca_mmap.h>
#include <doca_pe.h>

static uint8_t host_byte(size_t i)
{
	return (uint8_t)(i * 7 + 3);
}

static uint8_t dpu_byte(size_t i)
{
	return (uint8_t)(i * 13 + 1);
}

/* Writes "<hex> <addr>" into `path` whole: written under another name, then renamed, so a
 * reader never sees half of it. */
static int write_desc_file(const char *path, const uint8_t *desc, size_t desc_len, const void *addr)
{
	char tmp[4096];
	FILE *f;
	size_t i;
	int ok;

	if (snprintf(tmp, sizeof(tmp), "%s.part", path) >= (int)sizeof(tmp))
		return 0;
	f = fopen(tmp, "w");
	if (f == NULL)
		return 0;
	for (i = 0; i < desc_len; i++)
		fprintf(f, "%02x", desc[i]);
	fprintf(f, " %llu\n", (unsigned long long)(uintptr_t)addr);
	ok = fclose(f) == 0;
	return ok && rename(tmp, path) == 0;
}

static int host(size_t len, const char *file)
{
	struct doca_dev *dev;
	struct doca_mmap *map;
	const uint8_t *desc;
	size_t desc_len, i, bad = 0;
	uint8_t *buf = malloc(len);
	char c;

	CHECK(buf != NULL);
	for (i = 0; i < len; i++)
		buf[i] = host_byte(i);
	CHECK_CODE(open_dev("b1:00.0", &dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_create(&map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(map, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(map, buf, len), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(map, DOCA_ACCESS_FLAG_PCI_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_export_pci(map, dev, (const void **)&desc, &desc_len), DOCA_SUCCESS);
	if (failures)
		return checks_result();
	if (file != NULL) {
		CHECK(write_desc_file(file, desc, desc_len, buf));
		if (failures)
			return checks_result();
		printf("exported\n");
	} else {
		printf("desc ");
		for (i = 0; i < desc_len; i++)
			printf("%02x", desc[i]);
		printf(" %llu\n", (unsigned long long)(uintptr_t)buf);
	}
	fflush(stdout);

	/* The DPU copies now; this thread only waits. */
	CHECK(read(0, &c, 1) == 1);

	for (i = 0; i < len / 2; i++)
		bad += buf[i] != host_byte(i);
	CHECK(bad == 0); /* the DPU only read the first half */
	for (i = len / 2; i < len; i++)
		bad += buf[i] != dpu_byte(i - len / 2);
	CHECK(bad == 0); /* the DPU wrote the second half */
	CHECK_CODE(doca_mmap_stop(map), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(map), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dev), DOCA_SUCCESS);
	free(buf);
	return checks_result();
}

static int completed, failed;
static doca_error_t last_status;

static void on_done(struct doca_dma_task_memcpy *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	completed++;
	doca_task_free(doca_dma_task_memcpy_as_task(task));
}

static void on_error(struct doca_dma_task_memcpy *task, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_status = doca_task_get_status(doca_dma_task_memcpy_as_task(task));
	failed++;
	doca_task_free(doca_dma_task_memcpy_as_task(task));
}

/* Submits one task copying src into dst and progresses until it completes or fails. */
static void copy(struct doca_dma *dma, struct doca_pe *pe, struct doca_buf *src, struct doca_buf *dst)
{
	struct doca_dma_task_memcpy *task;
	union doca_data ud = {.u64 = 0};
	int before = completed + failed;
	long spins;

	CHECK_CODE(doca_dma_task_memcpy_alloc_init(dma, src, dst, ud, &task), DOCA_SUCCESS);
	CHECK_CODE(doca_task_submit(doca_dma_task_memcpy_as_task(task)), DOCA_SUCCESS);
	for (spins = 0; completed + failed == before && spins < 100000000; spins++)
		doca_pe_progress(pe);
}

static int from_hex(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s) / 2, i;
	unsigned int b;

	if (n > max)
		return -1;
	for (i = 0; i < n; i++) {
		if (sscanf(s + 2 * i, "%2x", &b) != 1)
			return -1;
		out[i] = (uint8_t)b;
	}
	return (int)n;
}

static int dpu(const char *hex, const char *addr_text, size_t len)
{
	struct doca_dev *dev;
	struct doca_pe *pe;
	struct doca_dma *dma;
	struct doca_mmap *remote, *local;
	struct doca_buf_inventory *inv;
	struct doca_buf *from_host, *into_local, *from_local, *into_host, *room;
	uint8_t desc[256];
	int desc_len = from_hex(hex, desc, sizeof(desc));
	char *host_addr = (char *)(uintptr_t)strtoull(addr_text, NULL, 10);
	size_t half = len / 2, i, bad = 0;
	uint8_t *mem = malloc(2 * len);
	void *data;
	char c;

	CHECK(desc_len > 0 && mem != NULL);
	memset(mem, 0, 2 * len);
	for (i = 0; i < half; i++)
		mem[len + i] = dpu_byte(i);
	CHECK_CODE(open_dev("03:00.0", &dev), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_create(dev, &dma), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_task_memcpy_set_conf(dma, on_done, on_error, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_connect_ctx(pe, doca_dma_as_ctx(dma)), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(doca_dma_as_ctx(dma)), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_create_from_export(NULL, desc, (size_t)desc_len, dev, &remote), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_create(&local), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(local, mem, 2 * len), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(local, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(local, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(local), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_create(8, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);
	if (failures)
		return checks_result();

	/* The DPU reads the host's first half, by host addresses, into its own memory. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, remote, host_addr, half, &from_host), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, local, mem, half, &into_local), DOCA_SUCCESS);
	copy(dma, pe, from_host, into_local);
	CHECK(completed == 1 && failed == 0);
	for (i = 0; i < half; i++)
		bad += mem[i] != host_byte(i);
	CHECK(bad == 0);
	/* A buffer of the import names host addresses: its data pointer is the host's. */
	CHECK_CODE(doca_buf_get_data(from_host, &data), DOCA_SUCCESS);
	CHECK(data == host_addr);
	/* Outside the exported range: refused here, before any request reaches the host. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, remote, host_addr + len - 8, 16, &room),
		   DOCA_ERROR_INVALID_VALUE);

	/* The DPU writes its own bytes into the host's second half. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, local, mem + len, half, &from_local), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, remote, host_addr + half, half, &into_host), DOCA_SUCCESS);
	copy(dma, pe, from_local, into_host);
	CHECK(completed == 2 && failed == 0);
	printf("copied\n");
	fflush(stdout);

	/* The host checked its memory, destroyed its map and exited: the next task fails. */
	CHECK(read(0, &c, 1) == 1);
	CHECK_CODE(doca_buf_reset_data_len(into_local), DOCA_SUCCESS);
	copy(dma, pe, from_host, into_local);
	CHECK(failed == 1);
	CHECK_CODE(last_status, DOCA_ERROR_NOT_FOUND);
	for (i = 0; i < half; i++)
		bad += mem[i] != host_byte(i);
	CHECK(bad == 0); /* the failed task left the DPU's bytes as they were */

	/* The failure stopped the context (as on DOCA's engine): it reaches Idle. */
	for (i = 0; i < 1000; i++)
		doca_pe_progress(pe);
	CHECK_CODE(doca_ctx_stop(doca_dma_as_ctx(dma)), DOCA_SUCCESS);
	CHECK_CODE(doca_dma_destroy(dma), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(from_host, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(into_local, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(from_local, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(into_host, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(remote), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_stop(local), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(local), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dev), DOCA_SUCCESS);
	free(mem);
	return checks_result();
}

/* The DPU side with the descriptor and address read from the host's file. */
static int dpu_from_file(const char *path, size_t len)
{
	static char hex[1024];
	char addr[32];
	FILE *f = fopen(path, "r");
	int got;

	if (f == NULL) {
		fprintf(stderr, "dma_malloc: cannot open %s\n", path);
		return 1;
	}
	got = fscanf(f, "%1023s %31s", hex, addr);
	fclose(f);
	if (got != 2) {
		fprintf(stderr, "dma_malloc: %s holds no descriptor\n", path);
		return 1;
	}
	return dpu(hex, addr, len);
}

int main(int argc, char **argv)
{
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "host") == 0)
		return host(strtoull(argv[2], NULL, 10), argc == 4 ? argv[3] : NULL);
	if (argc == 5 && strcmp(argv[1], "dpu") == 0)
		return dpu(argv[2], argv[3], strtoull(argv[4], NULL, 10));
	if (argc == 4 && strcmp(argv[1], "dpu-file") == 0)
		return dpu_from_file(argv[2], strtoull(argv[3], NULL, 10));
	fprintf(stderr, "usage: dma_malloc host <len> [<file>] | dpu <hex> <addr> <len> | dpu-file <file> <len>\n");
	return 2;
}
