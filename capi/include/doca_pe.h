/* doca-emu: the progress engine. An engine and its contexts stay on the thread that created
 * the engine. */
#ifndef DOCA_EMU_PE_H_
#define DOCA_EMU_PE_H_

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_error.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_pe;
struct doca_ctx;
struct doca_task;

DOCA_STABLE doca_error_t doca_pe_create(struct doca_pe **pe);
/* DOCA_ERROR_IN_USE while contexts are connected. */
DOCA_STABLE doca_error_t doca_pe_destroy(struct doca_pe *pe);
/* 1 when anything happened (a completion, an event, a state change), else 0. */
DOCA_STABLE uint8_t doca_pe_progress(struct doca_pe *pe);
DOCA_STABLE doca_error_t doca_pe_get_num_inflight_tasks(const struct doca_pe *pe, size_t *num_inflight_tasks);
DOCA_STABLE doca_error_t doca_pe_get_notification_handle(const struct doca_pe *pe, doca_notification_handle_t *handle);
DOCA_STABLE doca_error_t doca_pe_request_notification(struct doca_pe *pe);
DOCA_STABLE doca_error_t doca_pe_clear_notification(struct doca_pe *pe, doca_notification_handle_t handle);
/* NOT_PERMITTED for a context already connected. */
DOCA_STABLE doca_error_t doca_pe_connect_ctx(struct doca_pe *pe, struct doca_ctx *ctx);

/* Flags of doca_task_submit_ex. Without FLUSH a context may keep the task back and hand it
 * over with later ones (at a flushing submit, doca_ctx_flush_tasks, or its next progress). */
enum doca_task_submit_flag {
	DOCA_TASK_SUBMIT_FLAG_NONE = 0U,
	DOCA_TASK_SUBMIT_FLAG_FLUSH = (1U << 0),
	DOCA_TASK_SUBMIT_FLAG_OPTIMIZE_REPORTS = (1U << 1),
};

/* On success the library owns the task until its completion or error callback. */
DOCA_STABLE doca_error_t doca_task_submit(struct doca_task *task);
/* doca_task_submit with doca_task_submit_flag bits; unknown bits: DOCA_ERROR_INVALID_VALUE. */
DOCA_EXPERIMENTAL doca_error_t doca_task_submit_ex(struct doca_task *task, uint32_t flags);
DOCA_STABLE doca_error_t doca_task_try_submit(struct doca_task *task);
DOCA_STABLE void doca_task_free(struct doca_task *task);
DOCA_STABLE doca_error_t doca_task_get_status(const struct doca_task *task);
DOCA_STABLE void doca_task_set_user_data(struct doca_task *task, union doca_data user_data);
DOCA_STABLE union doca_data doca_task_get_user_data(const struct doca_task *task);
DOCA_STABLE struct doca_ctx *doca_task_get_ctx(const struct doca_task *task);

#ifdef __cplusplus
}
#endif

#endif
