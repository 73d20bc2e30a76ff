/* doca-emu: sync events, a 64-bit value that CPU code of host and DPU processes gets, sets,
 * adds to and waits on (the whole doca_sync_event.h of DOCA 2.5/2.6, with its *_dpu names
 * and wait_gt task, plus the names 2.7+ added: *_remote_pci, the wait_eq/wait_neq tasks,
 * the blocking wait_eq/wait_neq and their _yield forms, get_dpa_handle/get_gpu_handle).
 * The value lives in a shared page the exporter creates and importers map; blocking waits
 * sleep on a futex beside it (never spin); wait tasks complete at the first
 * doca_pe_progress after the update, and an engine asleep on its notification handle is
 * woken. DPA, GPU and remote-network events answer DOCA_ERROR_NOT_SUPPORTED. An importer
 * whose exporter destroyed the event or exited answers DOCA_ERROR_NOT_FOUND. */
#ifndef DOCA_EMU_SYNC_EVENT_H_
#define DOCA_EMU_SYNC_EVENT_H_

#include <stddef.h>
#include <stdint.h>

#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_dev.h"
#include "doca_error.h"
#include "doca_pe.h"
#include "doca_types.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doca_dpa;
struct doca_gpu;

struct doca_sync_event;
struct doca_sync_event_remote_net;

struct doca_dpa_sync_event;
struct doca_gpu_sync_event;

typedef uint64_t doca_dpa_dev_sync_event_t;
typedef uint64_t doca_dpa_dev_sync_event_remote_net_t;
typedef uint64_t doca_gpu_dev_sync_event_t;
typedef uint64_t doca_gpu_dev_sync_event_remote_net_t;

struct doca_sync_event_task_get;
struct doca_sync_event_task_notify_set;
struct doca_sync_event_task_notify_add;
struct doca_sync_event_task_wait_gt;  /* 2.5/2.6 */
struct doca_sync_event_task_wait_eq;  /* 2.7+ */
struct doca_sync_event_task_wait_neq; /* 2.7+ */

typedef void (*doca_sync_event_task_get_completion_cb_t)(struct doca_sync_event_task_get *task,
							 union doca_data task_user_data,
							 union doca_data ctx_user_data);
typedef void (*doca_sync_event_task_notify_set_completion_cb_t)(struct doca_sync_event_task_notify_set *task,
								union doca_data task_user_data,
								union doca_data ctx_user_data);
typedef void (*doca_sync_event_task_notify_add_completion_cb_t)(struct doca_sync_event_task_notify_add *task,
								union doca_data task_user_data,
								union doca_data ctx_user_data);
typedef void (*doca_sync_event_task_wait_gt_completion_cb_t)(struct doca_sync_event_task_wait_gt *task,
							     union doca_data task_user_data,
							     union doca_data ctx_user_data);
typedef void (*doca_sync_event_task_wait_eq_completion_cb_t)(struct doca_sync_event_task_wait_eq *task,
							     union doca_data task_user_data,
							     union doca_data ctx_user_data);
typedef void (*doca_sync_event_task_wait_neq_completion_cb_t)(struct doca_sync_event_task_wait_neq *task,
							      union doca_data task_user_data,
							      union doca_data ctx_user_data);

/* Creation. create_from_export: DOCA_ERROR_INVALID_VALUE for a malformed blob,
 * DOCA_ERROR_NOT_FOUND when its exporter destroyed the event or exited. An imported event
 * cannot be configured or exported (DOCA_ERROR_NOT_PERMITTED). */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_create(struct doca_sync_event **event);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_create_from_export(struct doca_dev *dev, const uint8_t *data, size_t sz,
								  struct doca_sync_event **event);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_cap_is_create_from_export_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_remote_net_create_from_export(struct doca_dev *dev, const uint8_t *data,
									     size_t sz,
									     struct doca_sync_event_remote_net **event);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_cap_remote_net_is_create_from_export_supported(const struct doca_devinfo *devinfo);
/* A context must be Idle (DOCA_ERROR_BAD_STATE). The exporter's destroy revokes the event. */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_destroy(struct doca_sync_event *event);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_remote_net_destroy(struct doca_sync_event_remote_net *event);

/* Locations: before start (DOCA_ERROR_BAD_STATE). _dpu is the 2.5/2.6 name of _remote_pci. */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_publisher_location_cpu(struct doca_sync_event *event,
									  struct doca_dev *dev);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_publisher_location_dpa(struct doca_sync_event *event,
									  struct doca_dpa *dpa);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_publisher_location_gpu(struct doca_sync_event *event,
									  struct doca_gpu *gpu);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_publisher_location_dpu(struct doca_sync_event *event);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_publisher_location_remote_pci(struct doca_sync_event *event);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_publisher_location_remote_net(struct doca_sync_event *event);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_subscriber_location_cpu(struct doca_sync_event *event,
									   struct doca_dev *dev);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_subscriber_location_dpa(struct doca_sync_event *event,
									   struct doca_dpa *dpa);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_subscriber_location_gpu(struct doca_sync_event *event,
									   struct doca_gpu *gpu);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_subscriber_location_dpu(struct doca_sync_event *event);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_add_subscriber_location_remote_pci(struct doca_sync_event *event);

/* The value in the application's memory (8 bytes, 8-aligned): this process only, such an
 * event cannot be exported (DOCA_ERROR_NOT_SUPPORTED at export). Before start. */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_set_addr(struct doca_sync_event *event, uint64_t *addr);

/* Standalone mode (start/stop) and context mode (as_ctx) exclude each other: start after
 * as_ctx is DOCA_ERROR_NOT_PERMITTED, as_ctx after start gives NULL. */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_start(struct doca_sync_event *event);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_stop(struct doca_sync_event *event);
DOCA_EXPERIMENTAL struct doca_ctx *doca_sync_event_as_ctx(struct doca_sync_event *event);

/* Tasks (context mode): set_conf while Idle, 1..65536 tasks of each type; alloc_init while
 * Running. A wait task's mask must be 0 or 1, 2, 4 or 8 consecutive 0xFF bytes
 * (DOCA_ERROR_INVALID_VALUE at alloc_init and at submission). */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_cap_task_get_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_task_get_set_conf(struct doca_sync_event *event,
								 doca_sync_event_task_get_completion_cb_t completion_cb,
								 doca_sync_event_task_get_completion_cb_t error_cb,
								 uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_task_get_alloc_init(struct doca_sync_event *event, uint64_t *ret_val_ptr,
								   union doca_data user_data,
								   struct doca_sync_event_task_get **task);
DOCA_EXPERIMENTAL struct doca_task *doca_sync_event_task_get_as_doca_task(struct doca_sync_event_task_get *task);
DOCA_EXPERIMENTAL void doca_sync_event_task_get_set_ret_val_ptr(struct doca_sync_event_task_get *task,
								uint64_t *ret_val_ptr);
DOCA_EXPERIMENTAL uint64_t *doca_sync_event_task_get_get_ret_val_ptr(const struct doca_sync_event_task_get *task);

DOCA_EXPERIMENTAL doca_error_t doca_sync_event_cap_task_notify_set_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_task_notify_set_set_conf(struct doca_sync_event *event,
					 doca_sync_event_task_notify_set_completion_cb_t completion_cb,
					 doca_sync_event_task_notify_set_completion_cb_t error_cb, uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_task_notify_set_alloc_init(struct doca_sync_event *event,
									  uint64_t set_val, union doca_data user_data,
									  struct doca_sync_event_task_notify_set **task);
DOCA_EXPERIMENTAL struct doca_task *
doca_sync_event_task_notify_set_as_doca_task(struct doca_sync_event_task_notify_set *task);
DOCA_EXPERIMENTAL void doca_sync_event_task_notify_set_set_set_val(struct doca_sync_event_task_notify_set *task,
								   uint64_t set_val);
DOCA_EXPERIMENTAL uint64_t
doca_sync_event_task_notify_set_get_set_val(const struct doca_sync_event_task_notify_set *task);

DOCA_EXPERIMENTAL doca_error_t doca_sync_event_cap_task_notify_add_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_task_notify_add_set_conf(struct doca_sync_event *event,
					 doca_sync_event_task_notify_add_completion_cb_t completion_cb,
					 doca_sync_event_task_notify_add_completion_cb_t error_cb, uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_task_notify_add_alloc_init(struct doca_sync_event *event,
									  uint64_t inc_val, uint64_t *fetched_val_ptr,
									  union doca_data user_data,
									  struct doca_sync_event_task_notify_add **task);
DOCA_EXPERIMENTAL struct doca_task *
doca_sync_event_task_notify_add_as_doca_task(struct doca_sync_event_task_notify_add *task);
DOCA_EXPERIMENTAL void doca_sync_event_task_notify_add_set_inc_val(struct doca_sync_event_task_notify_add *task,
								   uint64_t inc_val);
DOCA_EXPERIMENTAL uint64_t
doca_sync_event_task_notify_add_get_inc_val(const struct doca_sync_event_task_notify_add *task);
DOCA_EXPERIMENTAL void doca_sync_event_task_notify_add_set_fetched_val_ptr(struct doca_sync_event_task_notify_add *task,
									   uint64_t *fetched_val_ptr);
DOCA_EXPERIMENTAL uint64_t *
doca_sync_event_task_notify_add_get_fetched_val_ptr(const struct doca_sync_event_task_notify_add *task);

/* 2.5/2.6 */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_cap_task_wait_gt_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_task_wait_gt_set_conf(
	struct doca_sync_event *event, doca_sync_event_task_wait_gt_completion_cb_t completion_cb,
	doca_sync_event_task_wait_gt_completion_cb_t error_cb, uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_task_wait_gt_alloc_init(struct doca_sync_event *event,
								       uint64_t wait_val, uint64_t mask,
								       union doca_data user_data,
								       struct doca_sync_event_task_wait_gt **task);
DOCA_EXPERIMENTAL struct doca_task *doca_sync_event_task_wait_gt_as_doca_task(struct doca_sync_event_task_wait_gt *task);
DOCA_EXPERIMENTAL void doca_sync_event_task_wait_gt_set_wait_val(struct doca_sync_event_task_wait_gt *task,
								 uint64_t wait_val);
DOCA_EXPERIMENTAL uint64_t doca_sync_event_task_wait_gt_get_wait_val(const struct doca_sync_event_task_wait_gt *task);
DOCA_EXPERIMENTAL void doca_sync_event_task_wait_gt_set_mask(struct doca_sync_event_task_wait_gt *task, uint64_t mask);
DOCA_EXPERIMENTAL uint64_t doca_sync_event_task_wait_gt_get_mask(const struct doca_sync_event_task_wait_gt *task);

/* 2.7+ */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_cap_task_wait_eq_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_task_wait_eq_set_conf(
	struct doca_sync_event *event, doca_sync_event_task_wait_eq_completion_cb_t completion_cb,
	doca_sync_event_task_wait_eq_completion_cb_t error_cb, uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_task_wait_eq_alloc_init(struct doca_sync_event *event,
								       uint64_t wait_val, uint64_t mask,
								       union doca_data user_data,
								       struct doca_sync_event_task_wait_eq **task);
DOCA_EXPERIMENTAL struct doca_task *doca_sync_event_task_wait_eq_as_doca_task(struct doca_sync_event_task_wait_eq *task);
DOCA_EXPERIMENTAL void doca_sync_event_task_wait_eq_set_wait_val(struct doca_sync_event_task_wait_eq *task,
								 uint64_t wait_val);
DOCA_EXPERIMENTAL uint64_t doca_sync_event_task_wait_eq_get_wait_val(const struct doca_sync_event_task_wait_eq *task);
DOCA_EXPERIMENTAL void doca_sync_event_task_wait_eq_set_mask(struct doca_sync_event_task_wait_eq *task, uint64_t mask);
DOCA_EXPERIMENTAL uint64_t doca_sync_event_task_wait_eq_get_mask(const struct doca_sync_event_task_wait_eq *task);

/* 2.7+ */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_cap_task_wait_neq_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_task_wait_neq_set_conf(
	struct doca_sync_event *event, doca_sync_event_task_wait_neq_completion_cb_t completion_cb,
	doca_sync_event_task_wait_neq_completion_cb_t error_cb, uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_task_wait_neq_alloc_init(struct doca_sync_event *event,
									uint64_t wait_val, uint64_t mask,
									union doca_data user_data,
									struct doca_sync_event_task_wait_neq **task);
DOCA_EXPERIMENTAL struct doca_task *
doca_sync_event_task_wait_neq_as_doca_task(struct doca_sync_event_task_wait_neq *task);
DOCA_EXPERIMENTAL void doca_sync_event_task_wait_neq_set_wait_val(struct doca_sync_event_task_wait_neq *task,
								  uint64_t wait_val);
DOCA_EXPERIMENTAL uint64_t doca_sync_event_task_wait_neq_get_wait_val(const struct doca_sync_event_task_wait_neq *task);
DOCA_EXPERIMENTAL void doca_sync_event_task_wait_neq_set_mask(struct doca_sync_event_task_wait_neq *task,
							      uint64_t mask);
DOCA_EXPERIMENTAL uint64_t doca_sync_event_task_wait_neq_get_mask(const struct doca_sync_event_task_wait_neq *task);

/* Export. export_to_dpu (2.5/2.6): from a host device only (DOCA_ERROR_NOT_SUPPORTED on
 * the DPU's); export_to_remote_pci (2.7+): from either side. The blob stays valid until the
 * event's next export or destroy; send it to the other side (e.g. over Comm Channel). */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_export_to_dpu(struct doca_sync_event *event, struct doca_dev *dev,
							     const uint8_t **data, size_t *sz);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_cap_is_export_to_dpu_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_export_to_remote_pci(struct doca_sync_event *event,
								    struct doca_dev *dev, const uint8_t **data,
								    size_t *sz);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_cap_is_export_to_remote_pci_supported(const struct doca_devinfo *devinfo);
/* DPA, GPU, remote network: DOCA_ERROR_NOT_SUPPORTED. export_to_dpa/_gpu and
 * remote_net_export_to_dpa/_gpu are the 2.5/2.6 names of get_dpa_handle/get_gpu_handle
 * and remote_net_get_dpa_handle/_gpu_handle. */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_export_to_dpa(struct doca_sync_event *event, struct doca_dpa *dpa,
							     doca_dpa_dev_sync_event_t *dpa_dev_se_handle);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_get_dpa_handle(struct doca_sync_event *event, struct doca_dpa *dpa,
							      doca_dpa_dev_sync_event_t *dpa_dev_se_handle);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_cap_is_export_to_dpa_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_export_to_gpu(struct doca_sync_event *event, struct doca_gpu *gpu,
							     doca_gpu_dev_sync_event_t **gpu_dev_se);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_get_gpu_handle(struct doca_sync_event *event, struct doca_gpu *gpu,
							      doca_gpu_dev_sync_event_t **gpu_dev_se);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_cap_is_export_to_gpu_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_export_to_remote_net(struct doca_sync_event *event,
								    const uint8_t **data, size_t *sz);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_cap_is_export_to_remote_net_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_remote_net_export_to_dpa(struct doca_sync_event_remote_net *event, struct doca_dpa *dpa,
					 doca_dpa_dev_sync_event_remote_net_t *dpa_remote_event);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_remote_net_get_dpa_handle(struct doca_sync_event_remote_net *event, struct doca_dpa *dpa,
					  doca_dpa_dev_sync_event_remote_net_t *dpa_remote_event);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_cap_remote_net_is_export_to_dpa_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_remote_net_export_to_gpu(struct doca_sync_event_remote_net *event, struct doca_gpu *gpu,
					 doca_gpu_dev_sync_event_remote_net_t *gpu_remote_event);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_remote_net_get_gpu_handle(struct doca_sync_event_remote_net *event, struct doca_gpu *gpu,
					  doca_gpu_dev_sync_event_remote_net_t *gpu_remote_event);
DOCA_EXPERIMENTAL doca_error_t
doca_sync_event_cap_remote_net_is_export_to_gpu_supported(const struct doca_devinfo *devinfo);

/* Synchronous operations: the event started (standalone, or a running context), else
 * DOCA_ERROR_BAD_STATE; an importer whose exporter is gone: DOCA_ERROR_NOT_FOUND. The
 * waits block without spinning (a futex, looked at again at least every 50 ms); the
 * _yield forms first yield the processor up to 64 times. */
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_get(struct doca_sync_event *event, uint64_t *value);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_update_add(struct doca_sync_event *event, uint64_t value,
							  uint64_t *fetched);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_update_set(struct doca_sync_event *event, uint64_t value);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_wait_gt(struct doca_sync_event *event, uint64_t value, uint64_t mask);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_wait_gt_yield(struct doca_sync_event *event, uint64_t value,
							     uint64_t mask);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_wait_eq(struct doca_sync_event *event, uint64_t value, uint64_t mask);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_wait_eq_yield(struct doca_sync_event *event, uint64_t value,
							     uint64_t mask);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_wait_neq(struct doca_sync_event *event, uint64_t value, uint64_t mask);
DOCA_EXPERIMENTAL doca_error_t doca_sync_event_wait_neq_yield(struct doca_sync_event *event, uint64_t value,
							      uint64_t mask);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DOCA_EMU_SYNC_EVENT_H_ */
