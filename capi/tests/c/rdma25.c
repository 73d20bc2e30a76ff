/* DOCA RDMA from C at API level 2.5 (the DOCA 2.5 headers' shapes: one connection per
 * context, no connection arguments, a context Starting until it connects, a bool grh
 * setting, the _get_result_length getters), two processes exchanging descriptors through
 * files of a folder, as NVIDIA's 2.5 samples do.
 *
 *   rdma25 a DIR   the receiving and exporting side: posts a receive whose destination is a
 *                  list of two buffers, exports a map for reading, waits for b's "done"
 *   rdma25 b DIR   the sending and reading side: sends a message gathered from a list of two
 *                  buffers, then reads a's exported bytes into a list of two buffers
 *
 * Each prints "ok" when every check held. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_dev.h>
#include <doca_error.h>
#include <doca_mmap.h>
#include <doca_pe.h>
#include <doca_rdma.h>

#include "check.h"
#include "open.h"

#define MEM 65536
#define MSG "two buffers, one message at level 2.5"
#define SECRET "the bytes a exports for reading"

static struct doca_pe *pe;
static int done, errors;
static uint32_t recv_len, read_len;

static void ok(struct doca_task *t)
{
	done++;
	doca_task_free(t);
}

static void err(struct doca_task *t)
{
	fprintf(stderr, "task failed: %s\n", doca_error_get_name(doca_task_get_status(t)));
	errors++;
	doca_task_free(t);
}

static void recv_ok(struct doca_rdma_task_receive *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	recv_len = doca_rdma_task_receive_get_result_length(t);
	CHECK(recv_len == doca_rdma_task_receive_get_result_len(t));
	CHECK(doca_rdma_task_receive_get_result_opcode(t) == DOCA_RDMA_OPCODE_RECV_SEND);
	ok(doca_rdma_task_receive_as_task(t));
}

static void recv_err(struct doca_rdma_task_receive *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	err(doca_rdma_task_receive_as_task(t));
}

static void send_ok(struct doca_rdma_task_send *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	ok(doca_rdma_task_send_as_task(t));
}

static void send_err(struct doca_rdma_task_send *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	err(doca_rdma_task_send_as_task(t));
}

static void read_ok(struct doca_rdma_task_read *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	read_len = doca_rdma_task_read_get_result_length(t);
	CHECK(read_len == doca_rdma_task_read_get_result_len(t));
	ok(doca_rdma_task_read_as_task(t));
}

static void read_err(struct doca_rdma_task_read *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	err(doca_rdma_task_read_as_task(t));
}

/* Progresses until `*counter` reaches `want` or a task fails (bounded). */
static void until_at(const int *counter, int want, int line)
{
	for (long i = 0; i < 4000000 && *counter < want && errors == 0; i++)
		if (doca_pe_progress(pe) == 0 && i % 64 == 0)
			usleep(100);
	if (*counter < want) {
		fprintf(stderr, "line %d: %d of %d\n", line, *counter, want);
		failures++;
	}
}
#define until(counter, want) until_at(counter, want, __LINE__)

/* Writes `len` bytes to DIR/name (through a rename: the reader never sees half a file). */
static void put(const char *dir, const char *name, const void *data, size_t len)
{
	char tmp[512], path[512];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s/.%s", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(tmp, "wb");
	CHECK(f != NULL);
	if (f == NULL)
		return;
	CHECK(fwrite(data, 1, len, f) == len);
	fclose(f);
	CHECK(rename(tmp, path) == 0);
}

/* Waits (up to 20 s) for DIR/name; its bytes (malloc'd) and length. */
static char *get(const char *dir, const char *name, size_t *len)
{
	char path[512];
	char *data;
	FILE *f = NULL;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (int i = 0; i < 20000 && (f = fopen(path, "rb")) == NULL; i++) {
		doca_pe_progress(pe);
		usleep(1000);
	}
	CHECK(f != NULL);
	if (f == NULL)
		exit(checks_result());
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc((size_t)n + 1);
	CHECK(fread(data, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return data;
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

int main(int argc, char **argv)
{
	struct doca_dev *dev;
	struct doca_rdma *rdma;
	struct doca_mmap *local, *remote = NULL;
	struct doca_buf_inventory *inv;
	struct doca_buf *h, *t;
	enum doca_ctx_states st;
	enum doca_mtu_size mtu;
	const void *desc;
	size_t desc_len, peer_len;
	char *peer;
	bool grh = true;
	uint32_t n;
	union doca_data none = {0};
	char *mem = calloc(1, MEM);
	const char *dir = argc > 2 ? argv[2] : ".";
	int is_a = argc > 1 && strcmp(argv[1], "a") == 0;

	CHECK_CODE(open_dev("03:00.0", &dev), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_create(dev, &rdma), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_set_permissions(rdma, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE | DOCA_ACCESS_FLAG_RDMA_READ),
		   DOCA_SUCCESS);

	{
		/* The 2.5 shape of the DPA handle getter: no DPA data path here, BAD_STATE. */
		struct doca_dpa_dev_rdma *dpa;

		CHECK_CODE(doca_rdma_get_dpa_handle(rdma, &dpa), DOCA_ERROR_BAD_STATE);
	}

	/* Settings: the 2.5 grh shape (a bool), the MTU class, the buffer-list lengths. */
	CHECK_CODE(doca_rdma_set_grh_enabled(rdma, true), DOCA_SUCCESS);
	grh = false;
	CHECK_CODE(doca_rdma_get_grh_enabled(rdma, &grh), DOCA_SUCCESS);
	CHECK(grh == true);
	/* A value of the enum, reserved: not supported; a number outside it: invalid. */
	CHECK_CODE(doca_rdma_set_mtu(rdma, DOCA_MTU_SIZE_RAW_ETHERNET), DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_rdma_set_mtu(rdma, (enum doca_mtu_size)99), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_set_mtu(rdma, DOCA_MTU_SIZE_2K_BYTES), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_get_mtu(rdma, &mtu), DOCA_SUCCESS);
	CHECK(mtu == DOCA_MTU_SIZE_2K_BYTES);
	/* DC is "currently not supported" at 2.5/2.6: the cap and the setter say so; RC stays. */
	CHECK_CODE(doca_rdma_cap_transport_type_is_supported(doca_dev_as_devinfo(dev), DOCA_RDMA_TRANSPORT_TYPE_DC),
		   DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_rdma_cap_transport_type_is_supported(doca_dev_as_devinfo(dev), DOCA_RDMA_TRANSPORT_TYPE_RC),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_set_transport_type(rdma, DOCA_RDMA_TRANSPORT_TYPE_DC), DOCA_ERROR_NOT_SUPPORTED);
	CHECK_CODE(doca_rdma_set_transport_type(rdma, DOCA_RDMA_TRANSPORT_TYPE_RC), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_cap_get_max_send_buf_list_len(doca_dev_as_devinfo(dev), &n), DOCA_SUCCESS);
	CHECK(n >= 2);
	CHECK_CODE(doca_rdma_set_max_send_buf_list_len(rdma, n + 1), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_set_max_send_buf_list_len(rdma, 2), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_cap_task_receive_get_max_dst_buf_list_len(doca_dev_as_devinfo(dev),
									   DOCA_RDMA_TRANSPORT_TYPE_RC, &n),
		   DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_receive_set_dst_buf_list_len(rdma, 0), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_rdma_task_receive_set_dst_buf_list_len(rdma, 2), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_receive_get_dst_buf_list_len(rdma, &n), DOCA_SUCCESS);
	CHECK(n == 2);

	CHECK_CODE(doca_rdma_task_receive_set_conf(rdma, recv_ok, recv_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_send_set_conf(rdma, send_ok, send_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_rdma_task_read_set_conf(rdma, read_ok, read_err, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_connect_ctx(pe, doca_rdma_as_ctx(rdma)), DOCA_SUCCESS);

	/* DOCA 2.5's start: Starting until the context's one connection connects. */
	CHECK_CODE(doca_ctx_start(doca_rdma_as_ctx(rdma)), DOCA_ERROR_IN_PROGRESS);
	CHECK_CODE(doca_rdma_export(rdma, &desc, &desc_len), DOCA_SUCCESS);
	put(dir, is_a ? "a.desc" : "b.desc", desc, desc_len);

	local = map(dev, mem, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE | DOCA_ACCESS_FLAG_RDMA_READ);
	CHECK_CODE(doca_buf_inventory_create(16, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);
	if (is_a) {
		const void *mdesc;
		size_t mlen;

		strcpy(mem + 8192, SECRET);
		CHECK_CODE(doca_mmap_export_rdma(local, dev, &mdesc, &mlen), DOCA_SUCCESS);
		put(dir, "a.mmap", mdesc, mlen);
	}

	peer = get(dir, is_a ? "b.desc" : "a.desc", &peer_len);
	CHECK_CODE(doca_rdma_connect(rdma, peer, peer_len), DOCA_SUCCESS);
	for (long i = 0; i < 1000000; i++) {
		doca_pe_progress(pe);
		doca_ctx_get_state(doca_rdma_as_ctx(rdma), &st);
		if (st == DOCA_CTX_STATE_RUNNING)
			break;
	}
	CHECK(st == DOCA_CTX_STATE_RUNNING);
	/* Connected already (one connection a context at this level); a setter's state is
	 * checked before its value. */
	CHECK_CODE(doca_rdma_connect(rdma, peer, peer_len), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_rdma_set_mtu(rdma, (enum doca_mtu_size)99), DOCA_ERROR_BAD_STATE);
	CHECK_CODE(doca_rdma_set_transport_type(rdma, (enum doca_rdma_transport_type)77), DOCA_ERROR_BAD_STATE);

	if (is_a) {
		/* A receive scattering into two buffers of 10 and 64 bytes. */
		struct doca_rdma_task_receive *rt;

		CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, local, mem, 10, &h), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, local, mem + 1024, 64, &t), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_chain_list(h, t), DOCA_SUCCESS);
		CHECK_CODE(doca_rdma_task_receive_allocate_init(rdma, h, none, &rt), DOCA_SUCCESS);
		CHECK_CODE(doca_task_submit(doca_rdma_task_receive_as_task(rt)), DOCA_SUCCESS);
		put(dir, "a.posted", "", 0);
		until(&done, 1);
		CHECK(recv_len == strlen(MSG));
		CHECK(memcmp(mem, MSG, 10) == 0 && memcmp(mem + 1024, MSG + 10, strlen(MSG) - 10) == 0);
		size_t l1 = 0, l2 = 0;
		CHECK_CODE(doca_buf_get_data_len(h, &l1), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_get_data_len(t, &l2), DOCA_SUCCESS);
		CHECK(l1 == 10 && l2 == strlen(MSG) - 10);
		doca_buf_dec_refcount(h, NULL);
		free(get(dir, "b.done", &peer_len));
	} else {
		/* A send gathering from two buffers, into a's posted receive. */
		struct doca_rdma_task_send *sd;
		struct doca_rdma_task_read *rd;
		char *mdesc;
		size_t mlen;

		strcpy(mem, MSG);
		free(get(dir, "a.posted", &mlen));
		CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, local, mem, 7, &h), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, local, mem + 7, strlen(MSG) - 7, &t), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_chain_list(h, t), DOCA_SUCCESS);
		CHECK_CODE(doca_rdma_task_send_allocate_init(rdma, h, none, &sd), DOCA_SUCCESS);
		CHECK_CODE(doca_task_submit(doca_rdma_task_send_as_task(sd)), DOCA_SUCCESS);
		until(&done, 1);
		doca_buf_dec_refcount(h, NULL);

		/* A read of a's exported bytes, scattered into two buffers of 5 and 64 bytes. */
		mdesc = get(dir, "a.mmap", &mlen);
		CHECK_CODE(doca_mmap_create_from_export(NULL, mdesc, mlen, dev, &remote), DOCA_SUCCESS);
		void *base;
		size_t rlen;
		CHECK_CODE(doca_mmap_get_memrange(remote, &base, &rlen), DOCA_SUCCESS);
		struct doca_buf *src, *d1, *d2;
		CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, remote, (char *)base + 8192, strlen(SECRET), &src),
			   DOCA_SUCCESS);
		CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, local, mem + 4096, 5, &d1), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, local, mem + 6000, 64, &d2), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_chain_list(d1, d2), DOCA_SUCCESS);
		CHECK_CODE(doca_rdma_task_read_allocate_init(rdma, src, d1, none, &rd), DOCA_SUCCESS);
		CHECK_CODE(doca_task_submit(doca_rdma_task_read_as_task(rd)), DOCA_SUCCESS);
		until(&done, 2);
		CHECK(read_len == strlen(SECRET));
		CHECK(memcmp(mem + 4096, SECRET, 5) == 0 && memcmp(mem + 6000, SECRET + 5, strlen(SECRET) - 5) == 0);
		doca_buf_dec_refcount(src, NULL);
		doca_buf_dec_refcount(d1, NULL);
		put(dir, "b.done", "", 0);
	}
	CHECK(errors == 0);
	doca_error_t stop = doca_ctx_stop(doca_rdma_as_ctx(rdma));
	CHECK(stop == DOCA_SUCCESS || stop == DOCA_ERROR_IN_PROGRESS);
	return checks_result();
}
