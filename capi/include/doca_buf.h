/* doca-emu: buffers, with DOCA's explicit reference counts. */
#ifndef DOCA_EMU_BUF_H_
#define DOCA_EMU_BUF_H_

/* <stdbool.h>: DOCA 2.5's header brings it, and 2.5 samples use bool with no include of their own. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_buf;

DOCA_STABLE doca_error_t doca_buf_get_head(const struct doca_buf *buf, void **head);
DOCA_STABLE doca_error_t doca_buf_get_len(const struct doca_buf *buf, size_t *len);
DOCA_STABLE doca_error_t doca_buf_get_data(const struct doca_buf *buf, void **data);
DOCA_STABLE doca_error_t doca_buf_get_data_len(const struct doca_buf *buf, size_t *data_len);
DOCA_STABLE doca_error_t doca_buf_set_data(struct doca_buf *buf, void *data, size_t data_len);
DOCA_STABLE doca_error_t doca_buf_reset_data_len(struct doca_buf *buf);
DOCA_STABLE doca_error_t doca_buf_get_refcount(const struct doca_buf *buf, uint16_t *refcount);
/* Both give the count before the change; at 0 the buffer returns to its inventory. */
DOCA_STABLE doca_error_t doca_buf_inc_refcount(struct doca_buf *buf, uint16_t *refcount);
DOCA_STABLE doca_error_t doca_buf_dec_refcount(struct doca_buf *buf, uint16_t *refcount);

/* Lists: list2 (a head with refcount 1) is appended to list1; decrementing a head's count to 0
 * returns its whole list. */
DOCA_STABLE doca_error_t doca_buf_chain_list(struct doca_buf *list1, struct doca_buf *list2);
DOCA_STABLE doca_error_t doca_buf_unchain_list(struct doca_buf *list1, struct doca_buf *list2);
DOCA_STABLE doca_error_t doca_buf_get_next_in_list(struct doca_buf *buf, struct doca_buf **next_buf);
DOCA_STABLE doca_error_t doca_buf_get_last_in_list(struct doca_buf *buf, struct doca_buf **last_buf);
DOCA_STABLE doca_error_t doca_buf_is_first_in_list(const struct doca_buf *buf, uint8_t *is_first);
DOCA_STABLE doca_error_t doca_buf_is_last_in_list(const struct doca_buf *buf, uint8_t *is_last);
DOCA_STABLE doca_error_t doca_buf_is_in_list(const struct doca_buf *buf, uint8_t *is_in_list);
DOCA_STABLE doca_error_t doca_buf_get_list_len(const struct doca_buf *buf, uint32_t *num_elements);

#ifdef __cplusplus
}
#endif

#endif
