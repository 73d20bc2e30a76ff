/* doca-emu: buffer inventories. */
#ifndef DOCA_EMU_BUF_INVENTORY_H_
#define DOCA_EMU_BUF_INVENTORY_H_

#include <stddef.h>
#include <stdint.h>

#include "doca_buf.h"
#include "doca_compat.h"
#include "doca_error.h"
#include "doca_types.h"
#include "doca_mmap.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_buf_inventory;

DOCA_STABLE doca_error_t doca_buf_inventory_create(size_t num_elements, struct doca_buf_inventory **inventory);
/* IN_USE while buffers are out. */
DOCA_STABLE doca_error_t doca_buf_inventory_destroy(struct doca_buf_inventory *inventory);
DOCA_STABLE doca_error_t doca_buf_inventory_start(struct doca_buf_inventory *inventory);
DOCA_STABLE doca_error_t doca_buf_inventory_stop(struct doca_buf_inventory *inventory);
DOCA_STABLE doca_error_t doca_buf_inventory_get_num_free_elements(const struct doca_buf_inventory *inventory,
								   uint32_t *num_free_elements);
/* Addresses of the map's memory range: head <= data <= data + data_len <= head + len. */
DOCA_STABLE doca_error_t doca_buf_inventory_buf_get_by_args(struct doca_buf_inventory *inventory, struct doca_mmap *mmap,
							     void *addr, size_t len, void *data, size_t data_len,
							     struct doca_buf **buf);
DOCA_STABLE doca_error_t doca_buf_inventory_buf_get_by_addr(struct doca_buf_inventory *inventory, struct doca_mmap *mmap,
							     void *addr, size_t len, struct doca_buf **buf);
DOCA_STABLE doca_error_t doca_buf_inventory_buf_get_by_data(struct doca_buf_inventory *inventory, struct doca_mmap *mmap,
							     void *data, size_t data_len, struct doca_buf **buf);
/* DOCA 3.x: point a buffer at other addresses of its own map without returning it (by_addr:
 * empty data at addr; by_data: all of it data). Outside the map: DOCA_ERROR_INVALID_VALUE. */
DOCA_EXPERIMENTAL doca_error_t doca_buf_inventory_buf_reuse_by_addr(struct doca_buf *buf, void *addr, size_t len);
DOCA_EXPERIMENTAL doca_error_t doca_buf_inventory_buf_reuse_by_data(struct doca_buf *buf, void *data, size_t data_len);

/* A copy of the list headed by src (same ranges), from this inventory. */
DOCA_STABLE doca_error_t doca_buf_inventory_buf_dup(struct doca_buf_inventory *inventory, const struct doca_buf *src,
						    struct doca_buf **dst);
DOCA_STABLE doca_error_t doca_buf_inventory_get_num_elements(const struct doca_buf_inventory *inventory,
							     uint32_t *num_elements);
DOCA_STABLE doca_error_t doca_buf_inventory_set_user_data(struct doca_buf_inventory *inventory, union doca_data user_data);
DOCA_STABLE doca_error_t doca_buf_inventory_get_user_data(const struct doca_buf_inventory *inventory,
							  union doca_data *user_data);

#ifdef __cplusplus
}
#endif

#endif
