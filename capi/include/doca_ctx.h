/* doca-emu: the generic context: Idle -> Starting -> Running -> Stopping -> Idle. */
#ifndef DOCA_EMU_CTX_H_
#define DOCA_EMU_CTX_H_

#include <stddef.h>

#include "doca_compat.h"
#include "doca_dev.h"
#include "doca_error.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_ctx;

enum doca_ctx_states {
	DOCA_CTX_STATE_IDLE = 0,
	DOCA_CTX_STATE_STARTING = 1,
	DOCA_CTX_STATE_RUNNING = 2,
	DOCA_CTX_STATE_STOPPING = 3,
};

/* Called from doca_pe_progress for every transition; the context is already in next_state. */
typedef void (*doca_ctx_state_changed_callback_t)(const union doca_data user_data, struct doca_ctx *ctx,
						   enum doca_ctx_states prev_state, enum doca_ctx_states next_state);

/* DOCA_ERROR_IN_PROGRESS for an asynchronous start (a client). */
DOCA_STABLE doca_error_t doca_ctx_start(struct doca_ctx *ctx);
/* DOCA_ERROR_IN_PROGRESS while tasks are out. */
DOCA_STABLE doca_error_t doca_ctx_stop(struct doca_ctx *ctx);
DOCA_STABLE doca_error_t doca_ctx_get_state(const struct doca_ctx *ctx, enum doca_ctx_states *state);
DOCA_STABLE doca_error_t doca_ctx_set_user_data(struct doca_ctx *ctx, union doca_data user_data);
DOCA_STABLE doca_error_t doca_ctx_get_user_data(const struct doca_ctx *ctx, union doca_data *user_data);
DOCA_STABLE doca_error_t doca_ctx_get_num_inflight_tasks(const struct doca_ctx *ctx, size_t *num_inflight_tasks);
DOCA_STABLE doca_error_t doca_ctx_set_state_changed_cb(struct doca_ctx *ctx, doca_ctx_state_changed_callback_t cb);
/* Hands over the tasks submitted without DOCA_TASK_SUBMIT_FLAG_FLUSH and kept back. */
DOCA_EXPERIMENTAL void doca_ctx_flush_tasks(struct doca_ctx *ctx);

#ifdef __cplusplus
}
#endif

#endif
