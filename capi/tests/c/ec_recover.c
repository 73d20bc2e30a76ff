/* Erasure coding from C, in the flow of DOCA's erasure_coding_recover sample: data split in
 * k blocks, redundancy blocks made by a create task (source and destination as buffer lists
 * whose elements do not fall on block boundaries), data blocks lost, a recover matrix from
 * the missing indices and a recover task giving back the lost blocks byte for byte (Cauchy
 * and Vandermonde); an update task against a fresh encode, a Galois multiplication with a raw
 * matrix; then the rules: matrix arguments, a block not a multiple of 64, a matrix of the
 * wrong role (each task failure fatal to the context, as on DOCA's engine: freed, restarted),
 * the getters. Exits 0 and prints "ok" when every check holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "open.h"
#include <doca_buf.h>
#include <doca_buf_inventory.h>
#include <doca_ctx.h>
#include <doca_erasure_coding.h>
#include <doca_mmap.h>
#include <doca_pe.h>

#define K 4
#define M 2
#define BLOCK 1024

static int done, failed;
static doca_error_t last_error = DOCA_SUCCESS;

static void create_done(struct doca_ec_task_create *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	done++;
	doca_task_free(doca_ec_task_create_as_task(t));
}

static void create_error(struct doca_ec_task_create *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_ec_task_create_as_task(t));
	failed++;
	doca_task_free(doca_ec_task_create_as_task(t));
}

static void recover_done(struct doca_ec_task_recover *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	done++;
	doca_task_free(doca_ec_task_recover_as_task(t));
}

static void recover_error(struct doca_ec_task_recover *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	last_error = doca_task_get_status(doca_ec_task_recover_as_task(t));
	failed++;
	doca_task_free(doca_ec_task_recover_as_task(t));
}

static void update_done(struct doca_ec_task_update *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	done++;
	doca_task_free(doca_ec_task_update_as_task(t));
}

static void update_error(struct doca_ec_task_update *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	failed++;
	doca_task_free(doca_ec_task_update_as_task(t));
}

static void mul_done(struct doca_ec_task_galois_mul *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	done++;
	doca_task_free(doca_ec_task_galois_mul_as_task(t));
}

static void mul_error(struct doca_ec_task_galois_mul *t, union doca_data td, union doca_data cd)
{
	(void)td;
	(void)cd;
	failed++;
	doca_task_free(doca_ec_task_galois_mul_as_task(t));
}

static struct doca_dev *dev;
static struct doca_pe *pe;
static struct doca_ec *ec;
static struct doca_ctx *ctx;
static struct doca_buf_inventory *inv;

/* Progress until a callback more than `before` came. */
static void wait_for(int before)
{
	int spins;

	for (spins = 0; done + failed == before && spins < 10000000; spins++)
		doca_pe_progress(pe);
	CHECK(done + failed == before + 1);
}

/* A failed task stopped the context: Idle once its tasks are freed, then started again. */
static void restart(void)
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

static struct doca_mmap *map_of(void *mem, size_t len)
{
	struct doca_mmap *m;

	CHECK_CODE(doca_mmap_create(&m), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_memrange(m, mem, len), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_set_permissions(m, DOCA_ACCESS_FLAG_LOCAL_READ_WRITE), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_add_dev(m, dev), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_start(m), DOCA_SUCCESS);
	return m;
}

/* `len` bytes at `mem` as a list of `n` buffers (the first one longer by the remainder),
 * holding data when `with_data`. */
static struct doca_buf *list_of(struct doca_mmap *m, char *mem, size_t len, int n, int with_data)
{
	struct doca_buf *head = NULL, *b;
	size_t other = len / n, first = other + len % n, at = 0, l;
	int i;

	for (i = 0; i < n; i++) {
		l = i == 0 ? first : other;
		if (with_data)
			CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, m, mem + at, l, &b), DOCA_SUCCESS);
		else
			CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, m, mem + at, l, &b), DOCA_SUCCESS);
		if (head == NULL)
			head = b;
		else
			CHECK_CODE(doca_buf_chain_list(head, b), DOCA_SUCCESS);
		at += l;
	}
	return head;
}

static void release(struct doca_buf *head)
{
	struct doca_buf *next;

	while (head != NULL) {
		CHECK_CODE(doca_buf_get_next_in_list(head, &next), DOCA_SUCCESS);
		if (next != NULL)
			CHECK_CODE(doca_buf_unchain_list(head, next), DOCA_SUCCESS);
		CHECK_CODE(doca_buf_dec_refcount(head, NULL), DOCA_SUCCESS);
		head = next;
	}
}

/* Encodes `data` (K blocks) with `coding` into `rdnc` (M blocks) with a create task. */
static void encode(struct doca_ec_matrix *coding, char *data, char *rdnc)
{
	struct doca_mmap *sm = map_of(data, K * BLOCK), *dm = map_of(rdnc, M * BLOCK);
	struct doca_buf *src = list_of(sm, data, K * BLOCK, 3, 1), *dst = list_of(dm, rdnc, M * BLOCK, 2, 0);
	struct doca_ec_task_create *t;
	union doca_data ud = {.u64 = 1};
	int before = done + failed;

	CHECK_CODE(doca_ec_task_create_allocate_init(ec, coding, src, dst, ud, &t), DOCA_SUCCESS);
	CHECK(doca_ec_task_create_get_coding_matrix(t) == coding);
	CHECK(doca_ec_task_create_get_original_data_blocks(t) == src && doca_ec_task_create_get_rdnc_blocks(t) == dst);
	CHECK_CODE(doca_task_submit(doca_ec_task_create_as_task(t)), DOCA_SUCCESS);
	wait_for(before);
	CHECK(done + failed == before + 1 && failed == 0);
	release(src);
	release(dst);
	CHECK_CODE(doca_mmap_destroy(sm), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(dm), DOCA_SUCCESS);
}

/* Loses data blocks 1 and 3, recovers them from the first K blocks left. */
static void round_trip(enum doca_ec_matrix_type type)
{
	char *data = malloc(K * BLOCK), *rdnc = calloc(1, M * BLOCK), *avail = malloc(K * BLOCK),
	     *rec = calloc(1, 2 * BLOCK);
	uint32_t missing[2] = {1, 3};
	struct doca_ec_matrix *coding, *decoding;
	struct doca_ec_task_recover *t;
	struct doca_mmap *sm, *dm;
	struct doca_buf *src, *dst;
	union doca_data ud = {.u64 = 2};
	void *got;
	int i, before;

	for (i = 0; i < K * BLOCK; i++)
		data[i] = (char)(i * 7 + i / 13 + type);
	CHECK_CODE(doca_ec_matrix_create(ec, type, K, M, &coding), DOCA_SUCCESS);
	encode(coding, data, rdnc);
	/* Available: data 0, data 2, rdnc 0, rdnc 1 (the first K not missing, in order). */
	memcpy(avail, data, BLOCK);
	memcpy(avail + BLOCK, data + 2 * BLOCK, BLOCK);
	memcpy(avail + 2 * BLOCK, rdnc, M * BLOCK);
	CHECK_CODE(doca_ec_matrix_create_recover(ec, coding, missing, 2, &decoding), DOCA_SUCCESS);
	sm = map_of(avail, K * BLOCK);
	dm = map_of(rec, 2 * BLOCK);
	src = list_of(sm, avail, K * BLOCK, 2, 1);
	dst = list_of(dm, rec, 2 * BLOCK, 3, 0);
	CHECK_CODE(doca_ec_task_recover_allocate_init(ec, decoding, src, dst, ud, &t), DOCA_SUCCESS);
	CHECK(doca_ec_task_recover_get_recover_matrix(t) == decoding);
	CHECK(doca_ec_task_recover_get_available_blocks(t) == src && doca_ec_task_recover_get_recovered_data(t) == dst);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_ec_task_recover_as_task(t)), DOCA_SUCCESS);
	CHECK(done == before); /* the coding is the engine's work, inside progress */
	wait_for(before);
	CHECK_CODE(doca_buf_get_data(dst, &got), DOCA_SUCCESS);
	CHECK(memcmp(rec, data + BLOCK, BLOCK) == 0);
	CHECK(memcmp(rec + BLOCK, data + 3 * BLOCK, BLOCK) == 0);
	CHECK(got == rec);
	release(src);
	release(dst);
	CHECK_CODE(doca_mmap_destroy(sm), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(dm), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_matrix_destroy(decoding), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_matrix_destroy(coding), DOCA_SUCCESS);
	free(data);
	free(rdnc);
	free(avail);
	free(rec);
}

/* Data block 2 rewritten: the update task's redundancy equals a fresh encode of the new data;
 * a Galois multiplication with the coding matrix's raw bytes gives the same. */
static void update_and_multiply(void)
{
	char *old = malloc(K * BLOCK), *new = malloc(K * BLOCK), *rdnc = calloc(1, M * BLOCK),
	     *fresh = calloc(1, M * BLOCK), *in = malloc((2 + M) * BLOCK), *out = calloc(1, M * BLOCK),
	     *prod = calloc(1, M * BLOCK);
	uint32_t idx[1] = {2};
	uint8_t raw[K * M];
	struct doca_ec_matrix *coding, *upd, *rawm;
	struct doca_ec_task_update *t;
	struct doca_ec_task_galois_mul *g;
	struct doca_mmap *sm, *dm, *nm, *pm;
	struct doca_buf *src, *dst, *nsrc, *pdst;
	union doca_data ud = {.u64 = 3};
	int i, before;

	for (i = 0; i < K * BLOCK; i++)
		old[i] = new[i] = (char)(i * 31 + 5);
	for (i = 0; i < BLOCK; i++)
		new[2 * BLOCK + i] = (char)(i ^ 0x5a);
	CHECK_CODE(doca_ec_matrix_create(ec, DOCA_EC_MATRIX_TYPE_CAUCHY, K, M, &coding), DOCA_SUCCESS);
	encode(coding, old, rdnc);
	encode(coding, new, fresh);
	CHECK_CODE(doca_ec_matrix_create_update(ec, coding, idx, 1, &upd), DOCA_SUCCESS);
	memcpy(in, old + 2 * BLOCK, BLOCK);
	memcpy(in + BLOCK, new + 2 * BLOCK, BLOCK);
	memcpy(in + 2 * BLOCK, rdnc, M * BLOCK);
	sm = map_of(in, (2 + M) * BLOCK);
	dm = map_of(out, M * BLOCK);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, sm, in, (2 + M) * BLOCK, &src), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, dm, out, M * BLOCK, &dst), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_task_update_allocate_init(ec, NULL, NULL, NULL, ud, &t), DOCA_SUCCESS);
	CHECK(doca_ec_task_update_get_update_matrix(t) == NULL);
	doca_ec_task_update_set_update_matrix(t, upd);
	doca_ec_task_update_set_original_updated_and_rdnc_blocks(t, src);
	doca_ec_task_update_set_updated_rdnc_blocks(t, dst);
	CHECK(doca_ec_task_update_get_update_matrix(t) == upd);
	CHECK(doca_ec_task_update_get_original_updated_and_rdnc_blocks(t) == src);
	CHECK(doca_ec_task_update_get_updated_rdnc_blocks(t) == dst);
	before = done + failed;
	CHECK_CODE(doca_task_try_submit(doca_ec_task_update_as_task(t)), DOCA_SUCCESS);
	wait_for(before);
	CHECK(memcmp(out, fresh, M * BLOCK) == 0);

	/* The Cauchy coefficients by hand: 1 / (i ^ (K + j)); a raw matrix of them. */
	for (i = 0; i < K * M; i++) {
		uint8_t x = (uint8_t)((i / M) ^ (K + i % M)), recip = 1;
		unsigned p;
		/* the inverse by search: x * recip == 1 in GF(2^8) mod 0x11D */
		for (recip = 1; recip != 0; recip++) {
			unsigned a = x, b = recip;
			p = 0;
			while (b) {
				if (b & 1)
					p ^= a;
				a <<= 1;
				if (a & 0x100)
					a ^= 0x11D;
				b >>= 1;
			}
			if (p == 1)
				break;
		}
		raw[i] = recip;
	}
	CHECK_CODE(doca_ec_matrix_create_from_raw(ec, raw, K, M, &rawm), DOCA_SUCCESS);
	nm = map_of(new, K * BLOCK);
	pm = map_of(prod, M * BLOCK);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, nm, new, K * BLOCK, &nsrc), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, pm, prod, M * BLOCK, &pdst), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_task_galois_mul_allocate_init(ec, rawm, nsrc, pdst, ud, &g), DOCA_SUCCESS);
	CHECK(doca_ec_task_galois_mul_get_coding_matrix(g) == rawm);
	CHECK(doca_ec_task_galois_mul_get_src_buf(g) == nsrc && doca_ec_task_galois_mul_get_dst_buf(g) == pdst);
	doca_ec_task_galois_mul_set_src_buf(g, nsrc);
	doca_ec_task_galois_mul_set_dst_buf(g, pdst);
	doca_ec_task_galois_mul_set_coding_matrix(g, rawm);
	/* The handle may go while the task holds the matrix. */
	CHECK_CODE(doca_ec_matrix_destroy(rawm), DOCA_SUCCESS);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_ec_task_galois_mul_as_task(g)), DOCA_SUCCESS);
	wait_for(before);
	CHECK(memcmp(prod, fresh, M * BLOCK) == 0);

	CHECK_CODE(doca_buf_dec_refcount(src, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(dst, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(nsrc, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(pdst, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(sm), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(dm), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(nm), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(pm), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_matrix_destroy(upd), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_matrix_destroy(coding), DOCA_SUCCESS);
	free(old);
	free(new);
	free(rdnc);
	free(fresh);
	free(in);
	free(out);
	free(prod);
}

/* The rules: bad matrix arguments, then two task failures, each fatal to the context. */
static void rules(void)
{
	char *mem = calloc(1, 4096);
	uint32_t desc[2] = {2, 1}, many[3] = {0, 1, 2}, one[1] = {0};
	uint8_t raw[4] = {1, 2, 3, 4};
	struct doca_ec_matrix *coding, *m = NULL, *rec;
	struct doca_ec_task_create *t;
	struct doca_mmap *mm = map_of(mem, 4096);
	struct doca_buf *src, *dst;
	union doca_data ud = {.u64 = 4};
	int before;

	CHECK_CODE(doca_ec_matrix_create(ec, (enum doca_ec_matrix_type)7, K, M, &m), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_ec_matrix_create(ec, DOCA_EC_MATRIX_TYPE_CAUCHY, 0, M, &m), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_ec_matrix_create(ec, DOCA_EC_MATRIX_TYPE_CAUCHY, 200, M, &m), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_ec_matrix_create(ec, DOCA_EC_MATRIX_TYPE_CAUCHY, K, M, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_ec_matrix_create_from_raw(ec, raw, 2, 0, &m), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_ec_matrix_create(ec, DOCA_EC_MATRIX_TYPE_CAUCHY, K, M, &coding), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_matrix_create_recover(ec, coding, desc, 2, &m), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_ec_matrix_create_recover(ec, coding, many, 3, &m), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_ec_matrix_create_recover(ec, coding, NULL, 1, &m), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_ec_matrix_create_update(ec, coding, desc, 2, &m), DOCA_ERROR_INVALID_VALUE);
	CHECK(m == NULL);
	CHECK_CODE(doca_ec_matrix_create_recover(ec, coding, one, 1, &rec), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_matrix_create_recover(ec, rec, one, 1, &m), DOCA_ERROR_INVALID_VALUE);

	/* 4 blocks of 48 bytes: not a multiple of 64. */
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, mm, mem, K * 48, &src), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_addr(inv, mm, mem + 2048, 1024, &dst), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_task_create_allocate_init(ec, coding, src, dst, ud, &t), DOCA_SUCCESS);
	CHECK_CODE(doca_task_try_submit(doca_ec_task_create_as_task(t)), DOCA_ERROR_INVALID_VALUE);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_ec_task_create_as_task(t)), DOCA_SUCCESS);
	wait_for(before);
	CHECK_CODE(last_error, DOCA_ERROR_INVALID_VALUE);
	restart();

	/* A recover matrix given to a create task (4 blocks of 64 bytes now). */
	CHECK_CODE(doca_buf_dec_refcount(src, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_buf_get_by_data(inv, mm, mem, K * 64, &src), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_task_create_allocate_init(ec, rec, src, dst, ud, &t), DOCA_SUCCESS);
	last_error = DOCA_SUCCESS;
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_ec_task_create_as_task(t)), DOCA_SUCCESS);
	wait_for(before);
	CHECK_CODE(last_error, DOCA_ERROR_INVALID_VALUE);
	restart();

	/* The same source with the coding matrix: fine. */
	CHECK_CODE(doca_ec_task_create_allocate_init(ec, NULL, src, dst, ud, &t), DOCA_SUCCESS);
	doca_ec_task_create_set_coding_matrix(t, coding);
	doca_ec_task_create_set_original_data_blocks(t, src);
	doca_ec_task_create_set_rdnc_blocks(t, dst);
	before = done + failed;
	CHECK_CODE(doca_task_submit(doca_ec_task_create_as_task(t)), DOCA_SUCCESS);
	wait_for(before);
	CHECK(done + failed == before + 1);

	CHECK_CODE(doca_buf_dec_refcount(src, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_dec_refcount(dst, NULL), DOCA_SUCCESS);
	CHECK_CODE(doca_mmap_destroy(mm), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_matrix_destroy(rec), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_matrix_destroy(coding), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_matrix_destroy(coding), DOCA_ERROR_INVALID_VALUE);
	free(mem);
}

int main(void)
{
	struct doca_devinfo *info;
	uint64_t max_block;
	uint32_t max_list;
	int failed_before;

	CHECK_CODE(open_dev("03:00.0", &dev), DOCA_SUCCESS);
	info = doca_dev_as_devinfo(dev);
	CHECK_CODE(doca_ec_cap_task_create_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_cap_task_update_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_cap_task_recover_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_cap_task_galois_mul_is_supported(info), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_cap_task_recover_is_supported(NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_ec_cap_get_max_block_size(info, &max_block), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_cap_get_max_buf_list_len(info, &max_list), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_cap_get_max_buf_list_len(info, NULL), DOCA_ERROR_INVALID_VALUE);
	CHECK(max_block >= BLOCK && max_block % 64 == 0 && max_list >= 5);

	CHECK_CODE(doca_pe_create(&pe), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_create(dev, &ec), DOCA_SUCCESS);
	ctx = doca_ec_as_ctx(ec);
	CHECK(ctx != NULL);
	CHECK_CODE(doca_ec_task_create_set_conf(ec, create_done, create_error, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_task_recover_set_conf(ec, recover_done, recover_error, 4), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_task_update_set_conf(ec, update_done, update_error, 2), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_task_galois_mul_set_conf(ec, mul_done, mul_error, 2), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_task_galois_mul_set_conf(ec, mul_done, NULL, 2), DOCA_ERROR_INVALID_VALUE);
	CHECK_CODE(doca_pe_connect_ctx(pe, ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ctx_start(ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_create(64, &inv), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_start(inv), DOCA_SUCCESS);

	round_trip(DOCA_EC_MATRIX_TYPE_CAUCHY);
	round_trip(DOCA_EC_MATRIX_TYPE_VANDERMONDE);
	update_and_multiply();
	CHECK(failed == 0);
	failed_before = failed;
	rules();
	CHECK(failed == failed_before + 2);

	CHECK_CODE(doca_ec_destroy(ec), DOCA_ERROR_BAD_STATE); /* still running */
	CHECK_CODE(doca_ctx_stop(ctx), DOCA_SUCCESS);
	CHECK_CODE(doca_ec_destroy(ec), DOCA_SUCCESS);
	CHECK_CODE(doca_buf_inventory_destroy(inv), DOCA_SUCCESS);
	CHECK_CODE(doca_pe_destroy(pe), DOCA_SUCCESS);
	CHECK_CODE(doca_dev_close(dev), DOCA_SUCCESS);
	return checks_result();
}
