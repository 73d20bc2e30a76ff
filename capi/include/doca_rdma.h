/* doca-emu: DOCA RDMA between RDMA contexts of (usually) two processes. At API level 2.7
 * (DOCA 2.9/3.x) connections are objects and every sending task names one; at level 2.6 a
 * context has one connection, which export, connect and the task allocators use without an
 * argument (those 2.6 shapes are the library's <name>_v26 symbols). A connection is
 * made by exporting a descriptor on each side (doca_rdma_export), carrying it to the other
 * side out of band, and connecting with it (doca_rdma_connect). Sends travel as packets of
 * the connection and land in the peer's oldest posted receive task; reads, writes and
 * atomics act directly on the peer's memory exported with doca_mmap_export_rdma and created
 * from that export here, without the peer's application. A failed task (permissions the
 * peer does not grant: DOCA_ERROR_NOT_PERMITTED; a send left unreceived past the RNR retry
 * count: DOCA_ERROR_TIME_OUT; a peer gone: DOCA_ERROR_CONNECTION_RESET) moves the context to
 * stopping and flushes the rest. The connection manager (listen on a port, connect to an
 * address and port of this machine, accept/reject/disconnect) reports through the state
 * callbacks, from progress. Level 2.5 (DOCA 2.5) is level 2.6's shape, but for the grh
 * setting (a bool there, the <name>_v25 symbols) and three result getters that 2.5 names
 * ..._result_length (declared at every level: they collide with nothing). The shared receive
 * queues of DOCA 2.6 (levels 2.6 and 2.7, end of this file) serve the DPA data path, which is
 * not emulated: a queue is created, configured, started and stopped, and RDMA contexts are
 * created with it, but no CPU receive takes its buffers and its DPA handle is refused. Not
 * here: doca_rdma_get_dpa_handle. */
#ifndef DOCA_EMU_RDMA_H_
#define DOCA_EMU_RDMA_H_

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>

#include "doca_buf.h"
#include "doca_compat.h"
#include "doca_ctx.h"
#include "doca_dev.h"
#include "doca_emu_api_level.h"
#include "doca_error.h"
#include "doca_pe.h"
#include "doca_types.h"

/* From 2.7 on DOCA's header brings in the RDMA connection manager's header (rdma_cma.h, for
 * the rdma_cm_id of its bridge function), and with it the verbs definitions programs use
 * unnamed, such as IB_DEVICE_NAME_MAX (NVIDIA's storage application sizes a device-name
 * buffer with it). The emulator needs neither library: it includes the connection manager's
 * header when the system has it, else the kernel's verbs ABI header that defines the same
 * limits, else nothing. */
#if DOCA_EMU_API_LEVEL >= 27 && defined(__has_include)
#if __has_include(<rdma/rdma_cma.h>)
#include <rdma/rdma_cma.h>
#elif __has_include(<rdma/ib_user_verbs.h>)
#include <rdma/ib_user_verbs.h>
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct doca_rdma;
struct doca_rdma_connection;
struct doca_rdma_addr;

struct doca_rdma_task_send;
struct doca_rdma_task_send_imm;
struct doca_rdma_task_receive;
struct doca_rdma_task_read;
struct doca_rdma_task_write;
struct doca_rdma_task_write_imm;
struct doca_rdma_task_atomic_cmp_swp;
struct doca_rdma_task_atomic_fetch_add;

/* Queue pair transport. */
enum doca_rdma_transport_type {
	DOCA_RDMA_TRANSPORT_TYPE_RC, /* reliable connection */
	DOCA_RDMA_TRANSPORT_TYPE_DC, /* dynamically connected */
};

/* Address kinds of the connection manager. */
enum doca_rdma_addr_type {
	DOCA_RDMA_ADDR_TYPE_IPv4,
	DOCA_RDMA_ADDR_TYPE_IPv6,
	DOCA_RDMA_ADDR_TYPE_GID,
};

/* What a completed receive task received. */
enum doca_rdma_opcode {
	DOCA_RDMA_OPCODE_RECV_SEND = 0,
	DOCA_RDMA_OPCODE_RECV_SEND_WITH_IMM,
	DOCA_RDMA_OPCODE_RECV_WRITE_WITH_IMM,
};

/* Context life: Idle only for destroy and every setter. */
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_create(struct doca_dev *dev, struct doca_rdma **rdma);
#else /* DOCA 2.5/2.6: the context is Starting until doca_rdma_connect connects it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_create(struct doca_dev *dev, struct doca_rdma **rdma) DOCA_EMU_V26(doca_rdma_create);
#endif
DOCA_EXPERIMENTAL doca_error_t doca_rdma_destroy(struct doca_rdma *rdma);
DOCA_EXPERIMENTAL struct doca_ctx *doca_rdma_as_ctx(struct doca_rdma *rdma);

/* A new connection and its descriptor (valid while the context lives); then connect it
 * with the peer's descriptor. */
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_export(struct doca_rdma *rdma, const void **local_rdma_conn_details,
						 size_t *local_rdma_conn_details_size,
						 struct doca_rdma_connection **rdma_connection);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_export(const struct doca_rdma *rdma, const void **local_rdma_conn_details,
						size_t *local_rdma_conn_details_size) DOCA_EMU_V26(doca_rdma_export);
#endif
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_connect(struct doca_rdma *rdma, const void *remote_rdma_conn_details,
						  size_t remote_rdma_conn_details_size,
						  struct doca_rdma_connection *rdma_connection);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_connect(struct doca_rdma *rdma, const void *remote_rdma_conn_details,
						 size_t remote_rdma_conn_details_size) DOCA_EMU_V26(doca_rdma_connect);
#endif
DOCA_EXPERIMENTAL doca_error_t doca_rdma_connection_set_user_data(struct doca_rdma_connection *rdma_connection,
								   union doca_data connection_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_connection_get_user_data(const struct doca_rdma_connection *rdma_connection,
								   union doca_data *connection_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_connection_get_id(const struct doca_rdma_connection *rdma_connection,
							    uint32_t *connection_id);

/* Connection manager: listening ports are this machine's (the fabric directory); the
 * state callbacks run from progress. */
typedef void (*doca_rdma_connection_request_cb_t)(struct doca_rdma_connection *rdma_connection,
						  union doca_data ctx_user_data);
typedef void (*doca_rdma_connection_established_cb_t)(struct doca_rdma_connection *rdma_connection,
						      union doca_data connection_user_data,
						      union doca_data ctx_user_data);
typedef void (*doca_rdma_connection_failure_cb_t)(struct doca_rdma_connection *rdma_connection,
						  union doca_data connection_user_data,
						  union doca_data ctx_user_data);
typedef void (*doca_rdma_connection_disconnection_cb_t)(struct doca_rdma_connection *rdma_connection,
							union doca_data connection_user_data,
							union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_addr_create(enum doca_rdma_addr_type addr_type, const char *address,
						      uint16_t port, struct doca_rdma_addr **addr);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_addr_destroy(struct doca_rdma_addr *addr);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_start_listen_to_port(struct doca_rdma *rdma, uint16_t port);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_stop_listen_to_port(struct doca_rdma *rdma, uint16_t port);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_connect_to_addr(struct doca_rdma *rdma, struct doca_rdma_addr *addr,
							  union doca_data connection_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_connection_accept(struct doca_rdma_connection *rdma_connection,
							    void *private_data, uint8_t private_data_len);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_connection_reject(struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_connection_disconnect(struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_connection_state_callbacks(
	struct doca_rdma *rdma, doca_rdma_connection_request_cb_t doca_rdma_connect_request_cb,
	doca_rdma_connection_established_cb_t doca_rdma_connect_established_cb,
	doca_rdma_connection_failure_cb_t doca_rdma_connect_failure_cb,
	doca_rdma_connection_disconnection_cb_t doca_rdma_disconnect_cb);

/* Device capabilities (from the topology's rdma.* caps). */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_get_max_recv_queue_size(const struct doca_devinfo *devinfo,
								      uint32_t *max_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_get_max_send_queue_size(const struct doca_devinfo *devinfo,
								      uint32_t *max_send_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_get_max_message_size(const struct doca_devinfo *devinfo,
								   uint32_t *max_message_size);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_get_gid_table_size(const struct doca_devinfo *devinfo,
								 uint32_t *gid_table_size);
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_transport_type_is_supported(const struct doca_devinfo *devinfo,
									  enum doca_rdma_transport_type transport_type);
#else /* DOCA 2.5/2.6: DC "currently not supported" (NOT_SUPPORTED) */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_transport_type_is_supported(const struct doca_devinfo *devinfo,
									  enum doca_rdma_transport_type transport_type)
	DOCA_EMU_V26(doca_rdma_cap_transport_type_is_supported);
#endif
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_get_max_send_buf_list_len(const struct doca_devinfo *devinfo,
									uint32_t *max_send_buf_list_len);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_task_receive_get_max_dst_buf_list_len(
	const struct doca_devinfo *devinfo, enum doca_rdma_transport_type transport_type, uint32_t *max_buf_list_len);
/* One GID of the device's table: 16 bytes. */
struct doca_rdma_gid {
	uint8_t raw[DOCA_GID_BYTE_LENGTH];
};
/* num_entries entries of the GID table from start_index into gid_array (which holds them). */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_get_gid(struct doca_devinfo *devinfo, uint32_t start_index,
						      uint32_t num_entries, struct doca_rdma_gid *gid_array);

/* Settings (Idle only) and their getters. */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_permissions(struct doca_rdma *rdma, uint32_t permissions);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_permissions(struct doca_rdma *rdma, uint32_t *permissions);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_gid_index(struct doca_rdma *rdma, uint32_t gid_index);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_gid_index(const struct doca_rdma *rdma, uint32_t *gid_index);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_max_num_connections(struct doca_rdma *rdma, uint16_t max_num_connections);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_max_num_connections(struct doca_rdma *rdma, uint16_t *max_num_connections);
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_transport_type(struct doca_rdma *rdma,
							     enum doca_rdma_transport_type transport_type);
#else /* DOCA 2.5/2.6: DC "currently not supported" (NOT_SUPPORTED) */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_transport_type(struct doca_rdma *rdma,
							     enum doca_rdma_transport_type transport_type)
	DOCA_EMU_V26(doca_rdma_set_transport_type);
#endif
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_transport_type(const struct doca_rdma *rdma,
							     enum doca_rdma_transport_type *transport_type);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_send_queue_size(struct doca_rdma *rdma, uint32_t send_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_send_queue_size(const struct doca_rdma *rdma, uint32_t *send_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_recv_queue_size(struct doca_rdma *rdma, uint32_t recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_recv_queue_size(const struct doca_rdma *rdma, uint32_t *recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_sl(struct doca_rdma *rdma, uint32_t sl);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_sl(const struct doca_rdma *rdma, uint32_t *sl);

/* A context's handle in a DPA's or a GPU's memory: BAD_STATE, as for a context not assigned
 * to such a data path (none is emulated). */
#if DOCA_EMU_API_LEVEL >= 27
#ifndef DOCA_EMU_DPA_DEV_RDMA_T_
#define DOCA_EMU_DPA_DEV_RDMA_T_
typedef uint64_t doca_dpa_dev_rdma_t;
#endif
struct doca_gpu_dev_rdma;
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_dpa_handle(struct doca_rdma *rdma, doca_dpa_dev_rdma_t *dpa_rdma);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_gpu_handle(struct doca_rdma *rdma, struct doca_gpu_dev_rdma **gpu_rdma);
#else
struct doca_dpa_dev_rdma;
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_dpa_handle(struct doca_rdma *rdma, struct doca_dpa_dev_rdma **dpa_rdma)
	DOCA_EMU_V26(doca_rdma_get_dpa_handle);
#endif
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_rnr_retry_count(struct doca_rdma *rdma, uint8_t rnr_retry_count);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_rnr_retry_count(const struct doca_rdma *rdma, uint8_t *rnr_retry_count);
#if DOCA_EMU_API_LEVEL >= 26
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_grh_enabled(struct doca_rdma *rdma, uint8_t grh_enabled);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_grh_enabled(const struct doca_rdma *rdma, uint8_t *grh_enabled);
#else /* DOCA 2.5: a bool */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_grh_enabled(struct doca_rdma *rdma, bool grh_enabled) DOCA_EMU_V25(doca_rdma_set_grh_enabled);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_grh_enabled(const struct doca_rdma *rdma, bool *grh_enabled) DOCA_EMU_V25(doca_rdma_get_grh_enabled);
#endif
/* The path MTU (enum doca_mtu_size; raw Ethernet is refused). */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_mtu(struct doca_rdma *rdma, enum doca_mtu_size mtu);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_mtu(const struct doca_rdma *rdma, enum doca_mtu_size *mtu);
/* Buffer lists: the longest list a send/write gathers from, and a receive scatters into
 * (1 to doca_rdma_cap_get_max_send_buf_list_len / _cap_task_receive_get_max_dst_buf_list_len). */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_max_send_buf_list_len(struct doca_rdma *rdma, uint32_t max_send_buf_list_len);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_max_send_buf_list_len(const struct doca_rdma *rdma,
								    uint32_t *max_send_buf_list_len);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_receive_set_dst_buf_list_len(struct doca_rdma *rdma, uint32_t buf_list_len);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_receive_get_dst_buf_list_len(const struct doca_rdma *rdma,
									    uint32_t *buf_list_len);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_set_connection_request_timeout(struct doca_rdma *rdma, uint16_t timeout);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_get_connection_request_timeout(const struct doca_rdma *rdma, uint16_t *timeout);

/* send tasks. */
typedef void (*doca_rdma_task_send_completion_cb_t)(struct doca_rdma_task_send *task, union doca_data task_user_data,
		union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_task_send_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_send_set_conf(struct doca_rdma *rdma,
		doca_rdma_task_send_completion_cb_t successful_task_completion_cb,
		doca_rdma_task_send_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_send_allocate_init(struct doca_rdma *rdma, struct doca_rdma_connection *rdma_connection, const struct doca_buf *src_buf, 
		union doca_data user_data, struct doca_rdma_task_send **task);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_send_allocate_init(struct doca_rdma *rdma, const struct doca_buf *src_buf,
		union doca_data user_data, struct doca_rdma_task_send **task) DOCA_EMU_V26(doca_rdma_task_send_allocate_init);
#endif
DOCA_EXPERIMENTAL struct doca_task *doca_rdma_task_send_as_task(struct doca_rdma_task_send *task);
DOCA_EXPERIMENTAL const struct doca_buf *doca_rdma_task_send_get_src_buf(const struct doca_rdma_task_send *task);

/* send_imm tasks. */
typedef void (*doca_rdma_task_send_imm_completion_cb_t)(struct doca_rdma_task_send_imm *task, union doca_data task_user_data,
		union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_task_send_imm_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_send_imm_set_conf(struct doca_rdma *rdma,
		doca_rdma_task_send_imm_completion_cb_t successful_task_completion_cb,
		doca_rdma_task_send_imm_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_send_imm_allocate_init(struct doca_rdma *rdma, struct doca_rdma_connection *rdma_connection, const struct doca_buf *src_buf, doca_be32_t immediate_data, 
		union doca_data user_data, struct doca_rdma_task_send_imm **task);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_send_imm_allocate_init(struct doca_rdma *rdma, const struct doca_buf *src_buf,
		doca_be32_t immediate_data, union doca_data user_data, struct doca_rdma_task_send_imm **task) DOCA_EMU_V26(doca_rdma_task_send_imm_allocate_init);
#endif
DOCA_EXPERIMENTAL struct doca_task *doca_rdma_task_send_imm_as_task(struct doca_rdma_task_send_imm *task);

/* receive tasks. */
typedef void (*doca_rdma_task_receive_completion_cb_t)(struct doca_rdma_task_receive *task, union doca_data task_user_data,
		union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_task_receive_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_receive_set_conf(struct doca_rdma *rdma,
		doca_rdma_task_receive_completion_cb_t successful_task_completion_cb,
		doca_rdma_task_receive_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_receive_allocate_init(struct doca_rdma *rdma, struct doca_buf *dst_buf, 
		union doca_data user_data, struct doca_rdma_task_receive **task);
DOCA_EXPERIMENTAL struct doca_task *doca_rdma_task_receive_as_task(struct doca_rdma_task_receive *task);
DOCA_EXPERIMENTAL struct doca_buf *doca_rdma_task_receive_get_dst_buf(const struct doca_rdma_task_receive *task);
DOCA_EXPERIMENTAL enum doca_rdma_opcode doca_rdma_task_receive_get_result_opcode(const struct doca_rdma_task_receive *task);
DOCA_EXPERIMENTAL uint32_t doca_rdma_task_receive_get_result_len(const struct doca_rdma_task_receive *task);
DOCA_EXPERIMENTAL doca_be32_t doca_rdma_task_receive_get_result_immediate_data(const struct doca_rdma_task_receive *task);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *
doca_rdma_task_receive_get_result_rdma_connection(const struct doca_rdma_task_receive *task);

/* read tasks. */
typedef void (*doca_rdma_task_read_completion_cb_t)(struct doca_rdma_task_read *task, union doca_data task_user_data,
		union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_task_read_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_read_set_conf(struct doca_rdma *rdma,
		doca_rdma_task_read_completion_cb_t successful_task_completion_cb,
		doca_rdma_task_read_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_read_allocate_init(struct doca_rdma *rdma, struct doca_rdma_connection *rdma_connection, const struct doca_buf *src_buf, struct doca_buf *dst_buf, 
		union doca_data user_data, struct doca_rdma_task_read **task);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_read_allocate_init(struct doca_rdma *rdma, const struct doca_buf *src_buf,
		struct doca_buf *dst_buf, union doca_data user_data, struct doca_rdma_task_read **task) DOCA_EMU_V26(doca_rdma_task_read_allocate_init);
#endif
DOCA_EXPERIMENTAL struct doca_task *doca_rdma_task_read_as_task(struct doca_rdma_task_read *task);
DOCA_EXPERIMENTAL uint32_t doca_rdma_task_read_get_result_len(const struct doca_rdma_task_read *task);

/* write tasks. */
typedef void (*doca_rdma_task_write_completion_cb_t)(struct doca_rdma_task_write *task, union doca_data task_user_data,
		union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_task_write_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_write_set_conf(struct doca_rdma *rdma,
		doca_rdma_task_write_completion_cb_t successful_task_completion_cb,
		doca_rdma_task_write_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_write_allocate_init(struct doca_rdma *rdma, struct doca_rdma_connection *rdma_connection, const struct doca_buf *src_buf, struct doca_buf *dst_buf, 
		union doca_data user_data, struct doca_rdma_task_write **task);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_write_allocate_init(struct doca_rdma *rdma, const struct doca_buf *src_buf,
		struct doca_buf *dst_buf, union doca_data user_data, struct doca_rdma_task_write **task) DOCA_EMU_V26(doca_rdma_task_write_allocate_init);
#endif
DOCA_EXPERIMENTAL struct doca_task *doca_rdma_task_write_as_task(struct doca_rdma_task_write *task);

/* write_imm tasks. */
typedef void (*doca_rdma_task_write_imm_completion_cb_t)(struct doca_rdma_task_write_imm *task, union doca_data task_user_data,
		union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_task_write_imm_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_write_imm_set_conf(struct doca_rdma *rdma,
		doca_rdma_task_write_imm_completion_cb_t successful_task_completion_cb,
		doca_rdma_task_write_imm_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_write_imm_allocate_init(struct doca_rdma *rdma, struct doca_rdma_connection *rdma_connection, const struct doca_buf *src_buf, struct doca_buf *dst_buf, doca_be32_t immediate_data, 
		union doca_data user_data, struct doca_rdma_task_write_imm **task);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_write_imm_allocate_init(struct doca_rdma *rdma, const struct doca_buf *src_buf,
		struct doca_buf *dst_buf, doca_be32_t immediate_data, union doca_data user_data,
		struct doca_rdma_task_write_imm **task) DOCA_EMU_V26(doca_rdma_task_write_imm_allocate_init);
#endif
DOCA_EXPERIMENTAL struct doca_task *doca_rdma_task_write_imm_as_task(struct doca_rdma_task_write_imm *task);

/* atomic_cmp_swp tasks. */
typedef void (*doca_rdma_task_atomic_cmp_swp_completion_cb_t)(struct doca_rdma_task_atomic_cmp_swp *task, union doca_data task_user_data,
		union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_task_atomic_cmp_swp_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_atomic_cmp_swp_set_conf(struct doca_rdma *rdma,
		doca_rdma_task_atomic_cmp_swp_completion_cb_t successful_task_completion_cb,
		doca_rdma_task_atomic_cmp_swp_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_atomic_cmp_swp_allocate_init(struct doca_rdma *rdma, struct doca_rdma_connection *rdma_connection, struct doca_buf *dst_buf, struct doca_buf *result_buf, uint64_t cmp_data, uint64_t swap_data, 
		union doca_data user_data, struct doca_rdma_task_atomic_cmp_swp **task);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_atomic_cmp_swp_allocate_init(struct doca_rdma *rdma, struct doca_buf *dst_buf,
		struct doca_buf *result_buf, uint64_t cmp_data, uint64_t swap_data, union doca_data user_data,
		struct doca_rdma_task_atomic_cmp_swp **task) DOCA_EMU_V26(doca_rdma_task_atomic_cmp_swp_allocate_init);
#endif
DOCA_EXPERIMENTAL struct doca_task *doca_rdma_task_atomic_cmp_swp_as_task(struct doca_rdma_task_atomic_cmp_swp *task);

/* atomic_fetch_add tasks. */
typedef void (*doca_rdma_task_atomic_fetch_add_completion_cb_t)(struct doca_rdma_task_atomic_fetch_add *task, union doca_data task_user_data,
		union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_task_atomic_fetch_add_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_atomic_fetch_add_set_conf(struct doca_rdma *rdma,
		doca_rdma_task_atomic_fetch_add_completion_cb_t successful_task_completion_cb,
		doca_rdma_task_atomic_fetch_add_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_atomic_fetch_add_allocate_init(struct doca_rdma *rdma, struct doca_rdma_connection *rdma_connection, struct doca_buf *dst_buf, struct doca_buf *result_buf, uint64_t add_data, 
		union doca_data user_data, struct doca_rdma_task_atomic_fetch_add **task);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_atomic_fetch_add_allocate_init(struct doca_rdma *rdma, struct doca_buf *dst_buf,
		struct doca_buf *result_buf, uint64_t add_data, union doca_data user_data,
		struct doca_rdma_task_atomic_fetch_add **task) DOCA_EMU_V26(doca_rdma_task_atomic_fetch_add_allocate_init);
#endif
DOCA_EXPERIMENTAL struct doca_task *doca_rdma_task_atomic_fetch_add_as_task(struct doca_rdma_task_atomic_fetch_add *task);

/* Remote sync event tasks: get, set or add to the value of a peer's sync event, created
 * here from its doca_sync_event_export_to_remote_net blob. The value travels as 8 bytes in
 * host order; the peer's context must grant RDMA_READ (get), RDMA_WRITE (set) or
 * RDMA_ATOMIC (add). */
struct doca_sync_event_remote_net;
struct doca_rdma_task_remote_net_sync_event_get;
struct doca_rdma_task_remote_net_sync_event_notify_set;
struct doca_rdma_task_remote_net_sync_event_notify_add;
typedef void (*doca_rdma_task_remote_net_sync_event_get_completion_cb_t)(
	struct doca_rdma_task_remote_net_sync_event_get *task, union doca_data task_user_data,
	union doca_data ctx_user_data);
typedef void (*doca_rdma_task_remote_net_sync_event_notify_set_completion_cb_t)(
	struct doca_rdma_task_remote_net_sync_event_notify_set *task, union doca_data task_user_data,
	union doca_data ctx_user_data);
typedef void (*doca_rdma_task_remote_net_sync_event_notify_add_completion_cb_t)(
	struct doca_rdma_task_remote_net_sync_event_notify_add *task, union doca_data task_user_data,
	union doca_data ctx_user_data);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_cap_task_remote_net_sync_event_get_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t
doca_rdma_cap_task_remote_net_sync_event_notify_set_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t
doca_rdma_cap_task_remote_net_sync_event_notify_add_is_supported(const struct doca_devinfo *devinfo);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_remote_net_sync_event_get_set_conf(
	struct doca_rdma *rdma, doca_rdma_task_remote_net_sync_event_get_completion_cb_t successful_task_completion_cb,
	doca_rdma_task_remote_net_sync_event_get_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_remote_net_sync_event_notify_set_set_conf(
	struct doca_rdma *rdma,
	doca_rdma_task_remote_net_sync_event_notify_set_completion_cb_t successful_task_completion_cb,
	doca_rdma_task_remote_net_sync_event_notify_set_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_remote_net_sync_event_notify_add_set_conf(
	struct doca_rdma *rdma,
	doca_rdma_task_remote_net_sync_event_notify_add_completion_cb_t successful_task_completion_cb,
	doca_rdma_task_remote_net_sync_event_notify_add_completion_cb_t error_task_completion_cb, uint32_t num_tasks);
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_remote_net_sync_event_get_allocate_init(
	struct doca_rdma *rdma, struct doca_rdma_connection *rdma_connection,
	const struct doca_sync_event_remote_net *event, struct doca_buf *dst_buf, union doca_data user_data,
	struct doca_rdma_task_remote_net_sync_event_get **task);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_remote_net_sync_event_get_allocate_init(
	struct doca_rdma *rdma, const struct doca_sync_event_remote_net *event, struct doca_buf *dst_buf,
	union doca_data user_data, struct doca_rdma_task_remote_net_sync_event_get **task) DOCA_EMU_V26(doca_rdma_task_remote_net_sync_event_get_allocate_init);
#endif
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_remote_net_sync_event_notify_set_allocate_init(
	struct doca_rdma *rdma, struct doca_rdma_connection *rdma_connection, struct doca_sync_event_remote_net *event,
	const struct doca_buf *src_buf, union doca_data user_data,
	struct doca_rdma_task_remote_net_sync_event_notify_set **task);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_remote_net_sync_event_notify_set_allocate_init(
	struct doca_rdma *rdma, struct doca_sync_event_remote_net *event, const struct doca_buf *src_buf,
	union doca_data user_data, struct doca_rdma_task_remote_net_sync_event_notify_set **task) DOCA_EMU_V26(doca_rdma_task_remote_net_sync_event_notify_set_allocate_init);
#endif
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_remote_net_sync_event_notify_add_allocate_init(
	struct doca_rdma *rdma, struct doca_rdma_connection *rdma_connection, struct doca_sync_event_remote_net *event,
	struct doca_buf *result_buf, uint64_t add_data, union doca_data user_data,
	struct doca_rdma_task_remote_net_sync_event_notify_add **task);
#else /* DOCA 2.5/2.6: the context's one connection, no argument for it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_task_remote_net_sync_event_notify_add_allocate_init(
	struct doca_rdma *rdma, struct doca_sync_event_remote_net *event, struct doca_buf *result_buf,
	uint64_t add_data, union doca_data user_data, struct doca_rdma_task_remote_net_sync_event_notify_add **task) DOCA_EMU_V26(doca_rdma_task_remote_net_sync_event_notify_add_allocate_init);
#endif
DOCA_EXPERIMENTAL struct doca_task *
doca_rdma_task_remote_net_sync_event_get_as_task(struct doca_rdma_task_remote_net_sync_event_get *task);
DOCA_EXPERIMENTAL struct doca_task *
doca_rdma_task_remote_net_sync_event_notify_set_as_task(struct doca_rdma_task_remote_net_sync_event_notify_set *task);
DOCA_EXPERIMENTAL struct doca_task *
doca_rdma_task_remote_net_sync_event_notify_add_as_task(struct doca_rdma_task_remote_net_sync_event_notify_add *task);
DOCA_EXPERIMENTAL struct doca_buf *
doca_rdma_task_remote_net_sync_event_get_get_dst_buf(const struct doca_rdma_task_remote_net_sync_event_get *task);
DOCA_EXPERIMENTAL uint32_t
doca_rdma_task_remote_net_sync_event_get_get_result_len(const struct doca_rdma_task_remote_net_sync_event_get *task);
DOCA_EXPERIMENTAL const struct doca_buf *doca_rdma_task_remote_net_sync_event_notify_set_get_src_buf(
	const struct doca_rdma_task_remote_net_sync_event_notify_set *task);
DOCA_EXPERIMENTAL struct doca_buf *doca_rdma_task_remote_net_sync_event_notify_add_get_result_buf(
	const struct doca_rdma_task_remote_net_sync_event_notify_add *task);

/* The getters and setters of allocated tasks (a setter changes a task not submitted). */
DOCA_EXPERIMENTAL const struct doca_buf *doca_rdma_task_send_imm_get_src_buf(const struct doca_rdma_task_send_imm *task);
DOCA_EXPERIMENTAL void doca_rdma_task_send_imm_set_src_buf(struct doca_rdma_task_send_imm *task, const struct doca_buf *buf);
DOCA_EXPERIMENTAL void doca_rdma_task_send_set_src_buf(struct doca_rdma_task_send *task, const struct doca_buf *buf);
DOCA_EXPERIMENTAL void doca_rdma_task_receive_set_dst_buf(struct doca_rdma_task_receive *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL const struct doca_buf *doca_rdma_task_read_get_src_buf(const struct doca_rdma_task_read *task);
DOCA_EXPERIMENTAL void doca_rdma_task_read_set_src_buf(struct doca_rdma_task_read *task, const struct doca_buf *buf);
DOCA_EXPERIMENTAL struct doca_buf *doca_rdma_task_read_get_dst_buf(const struct doca_rdma_task_read *task);
DOCA_EXPERIMENTAL void doca_rdma_task_read_set_dst_buf(struct doca_rdma_task_read *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL const struct doca_buf *doca_rdma_task_write_get_src_buf(const struct doca_rdma_task_write *task);
DOCA_EXPERIMENTAL void doca_rdma_task_write_set_src_buf(struct doca_rdma_task_write *task, const struct doca_buf *buf);
DOCA_EXPERIMENTAL struct doca_buf *doca_rdma_task_write_get_dst_buf(const struct doca_rdma_task_write *task);
DOCA_EXPERIMENTAL void doca_rdma_task_write_set_dst_buf(struct doca_rdma_task_write *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL const struct doca_buf *doca_rdma_task_write_imm_get_src_buf(const struct doca_rdma_task_write_imm *task);
DOCA_EXPERIMENTAL void doca_rdma_task_write_imm_set_src_buf(struct doca_rdma_task_write_imm *task, const struct doca_buf *buf);
DOCA_EXPERIMENTAL struct doca_buf *doca_rdma_task_write_imm_get_dst_buf(const struct doca_rdma_task_write_imm *task);
DOCA_EXPERIMENTAL void doca_rdma_task_write_imm_set_dst_buf(struct doca_rdma_task_write_imm *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL struct doca_buf *doca_rdma_task_atomic_cmp_swp_get_dst_buf(const struct doca_rdma_task_atomic_cmp_swp *task);
DOCA_EXPERIMENTAL void doca_rdma_task_atomic_cmp_swp_set_dst_buf(struct doca_rdma_task_atomic_cmp_swp *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL struct doca_buf *doca_rdma_task_atomic_cmp_swp_get_result_buf(const struct doca_rdma_task_atomic_cmp_swp *task);
DOCA_EXPERIMENTAL void doca_rdma_task_atomic_cmp_swp_set_result_buf(struct doca_rdma_task_atomic_cmp_swp *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL struct doca_buf *doca_rdma_task_atomic_fetch_add_get_dst_buf(const struct doca_rdma_task_atomic_fetch_add *task);
DOCA_EXPERIMENTAL void doca_rdma_task_atomic_fetch_add_set_dst_buf(struct doca_rdma_task_atomic_fetch_add *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL struct doca_buf *doca_rdma_task_atomic_fetch_add_get_result_buf(const struct doca_rdma_task_atomic_fetch_add *task);
DOCA_EXPERIMENTAL void doca_rdma_task_atomic_fetch_add_set_result_buf(struct doca_rdma_task_atomic_fetch_add *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL void doca_rdma_task_remote_net_sync_event_get_set_dst_buf(struct doca_rdma_task_remote_net_sync_event_get *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL void doca_rdma_task_remote_net_sync_event_notify_set_set_src_buf(struct doca_rdma_task_remote_net_sync_event_notify_set *task, const struct doca_buf *buf);
DOCA_EXPERIMENTAL void doca_rdma_task_remote_net_sync_event_notify_add_set_result_buf(struct doca_rdma_task_remote_net_sync_event_notify_add *task, struct doca_buf *buf);
DOCA_EXPERIMENTAL doca_be32_t doca_rdma_task_send_imm_get_immediate_data(const struct doca_rdma_task_send_imm *task);
DOCA_EXPERIMENTAL void doca_rdma_task_send_imm_set_immediate_data(struct doca_rdma_task_send_imm *task, doca_be32_t value);
DOCA_EXPERIMENTAL doca_be32_t doca_rdma_task_write_imm_get_immediate_data(const struct doca_rdma_task_write_imm *task);
DOCA_EXPERIMENTAL void doca_rdma_task_write_imm_set_immediate_data(struct doca_rdma_task_write_imm *task, doca_be32_t value);
DOCA_EXPERIMENTAL uint64_t doca_rdma_task_atomic_cmp_swp_get_cmp_data(const struct doca_rdma_task_atomic_cmp_swp *task);
DOCA_EXPERIMENTAL void doca_rdma_task_atomic_cmp_swp_set_cmp_data(struct doca_rdma_task_atomic_cmp_swp *task, uint64_t value);
DOCA_EXPERIMENTAL uint64_t doca_rdma_task_atomic_cmp_swp_get_swap_data(const struct doca_rdma_task_atomic_cmp_swp *task);
DOCA_EXPERIMENTAL void doca_rdma_task_atomic_cmp_swp_set_swap_data(struct doca_rdma_task_atomic_cmp_swp *task, uint64_t value);
DOCA_EXPERIMENTAL uint64_t doca_rdma_task_atomic_fetch_add_get_add_data(const struct doca_rdma_task_atomic_fetch_add *task);
DOCA_EXPERIMENTAL void doca_rdma_task_atomic_fetch_add_set_add_data(struct doca_rdma_task_atomic_fetch_add *task, uint64_t value);
DOCA_EXPERIMENTAL uint64_t doca_rdma_task_remote_net_sync_event_notify_add_get_add_data(const struct doca_rdma_task_remote_net_sync_event_notify_add *task);
DOCA_EXPERIMENTAL void doca_rdma_task_remote_net_sync_event_notify_add_set_add_data(struct doca_rdma_task_remote_net_sync_event_notify_add *task, uint64_t value);
DOCA_EXPERIMENTAL const struct doca_sync_event_remote_net *doca_rdma_task_remote_net_sync_event_get_get_sync_event(const struct doca_rdma_task_remote_net_sync_event_get *task);
DOCA_EXPERIMENTAL void doca_rdma_task_remote_net_sync_event_get_set_sync_event(struct doca_rdma_task_remote_net_sync_event_get *task, const struct doca_sync_event_remote_net *event);
DOCA_EXPERIMENTAL struct doca_sync_event_remote_net *doca_rdma_task_remote_net_sync_event_notify_set_get_sync_event(const struct doca_rdma_task_remote_net_sync_event_notify_set *task);
DOCA_EXPERIMENTAL void doca_rdma_task_remote_net_sync_event_notify_set_set_sync_event(struct doca_rdma_task_remote_net_sync_event_notify_set *task, struct doca_sync_event_remote_net *event);
DOCA_EXPERIMENTAL struct doca_sync_event_remote_net *doca_rdma_task_remote_net_sync_event_notify_add_get_sync_event(const struct doca_rdma_task_remote_net_sync_event_notify_add *task);
DOCA_EXPERIMENTAL void doca_rdma_task_remote_net_sync_event_notify_add_set_sync_event(struct doca_rdma_task_remote_net_sync_event_notify_add *task, struct doca_sync_event_remote_net *event);

#if DOCA_EMU_API_LEVEL >= 26
/* Shared receive queues (DOCA 2.6). A queue is a context with no tasks, on one device; its
 * receives are posted from the DPA (not emulated here). Settings are accepted while the
 * queue's context is idle only (DOCA_ERROR_BAD_STATE after start); destroy needs it idle,
 * which it becomes only once the RDMA contexts created with it are stopped. */
struct doca_rdma_srq;
struct doca_dpa_dev_rdma_srq;

/* How the queue keeps its receives. */
enum doca_rdma_srq_type {
	DOCA_RDMA_SRQ_TYPE_LINKED_LIST, /* the default */
	DOCA_RDMA_SRQ_TYPE_CYCLIC,
};

/* DOCA_ERROR_NOT_SUPPORTED on a device without RDMA. */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_create(struct doca_dev *dev, struct doca_rdma_srq **rdma_srq);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_destroy(struct doca_rdma_srq *rdma_srq);
DOCA_EXPERIMENTAL struct doca_ctx *doca_rdma_srq_as_ctx(struct doca_rdma_srq *rdma_srq_ctx);
/* Limits of a device's queues: receives held, buffers in one receive's list. */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_cap_get_max_shared_recv_queue_size(const struct doca_devinfo *devinfo,
										 uint32_t *max_shared_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_cap_task_receive_get_max_dst_buf_list_len(const struct doca_devinfo *devinfo,
											uint32_t *max_buf_list_len);
/* The size is rounded up to a power of 2; above the device's limit it is
 * DOCA_ERROR_NOT_SUPPORTED, 0 is DOCA_ERROR_INVALID_VALUE. */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_set_shared_recv_queue_size(struct doca_rdma_srq *rdma_srq,
									 uint32_t shared_recv_queue_size);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_task_receive_set_dst_buf_list_len(struct doca_rdma_srq *rdma_srq,
										uint32_t buf_list_len);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_set_type(struct doca_rdma_srq *rdma_srq, enum doca_rdma_srq_type srq_type);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_get_type(struct doca_rdma_srq *rdma_srq, enum doca_rdma_srq_type *srq_type);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_task_receive_get_dst_buf_list_len(const struct doca_rdma_srq *rdma_srq,
										uint32_t *buf_list_len);
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_get_shared_recv_queue_size(const struct doca_rdma_srq *rdma_srq,
									 uint32_t *shared_recv_queue_size);
/* DOCA_ERROR_BAD_STATE always: the queue is never on the DPA data path here. */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_srq_get_dpa_handle(const struct doca_rdma_srq *rdma_srq,
							     struct doca_dpa_dev_rdma_srq **dpa_rdma_srq);

/* An RDMA context whose receives are the queue's (DOCA_ERROR_BAD_STATE unless the queue is
 * started). It sends, reads and writes as any context; its receive settings and their
 * getters are DOCA_ERROR_BAD_STATE, its receive task configuration DOCA_ERROR_INVALID_VALUE
 * and a receive allocation DOCA_ERROR_NO_MEMORY (no CPU receives); it starts only while the
 * queue runs. */
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL doca_error_t doca_rdma_create_with_srq(struct doca_dev *dev, struct doca_rdma_srq *rdma_srq,
							  struct doca_rdma **rdma);
#else /* DOCA 2.6: the context is Starting until doca_rdma_connect connects it */
DOCA_EXPERIMENTAL doca_error_t doca_rdma_create_with_srq(struct doca_dev *dev, struct doca_rdma_srq *rdma_srq,
							  struct doca_rdma **rdma) DOCA_EMU_V26(doca_rdma_create_with_srq);
#endif
#endif /* DOCA_EMU_API_LEVEL >= 26 */

/* DOCA 2.5's names of three result getters (2.6 renamed them ..._result_len). */
DOCA_EXPERIMENTAL uint32_t doca_rdma_task_receive_get_result_length(const struct doca_rdma_task_receive *task);
DOCA_EXPERIMENTAL uint32_t doca_rdma_task_read_get_result_length(const struct doca_rdma_task_read *task);
DOCA_EXPERIMENTAL uint32_t
doca_rdma_task_remote_net_sync_event_get_get_result_length(const struct doca_rdma_task_remote_net_sync_event_get *task);

/* DOCA 3.x: the connection an allocated sending task acts on (set: a connection of the task's
 * own context; another is logged and ignored). */
#if DOCA_EMU_API_LEVEL >= 27
DOCA_EXPERIMENTAL void doca_rdma_task_send_set_rdma_connection(struct doca_rdma_task_send *task,
	struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *doca_rdma_task_send_get_rdma_connection(const struct doca_rdma_task_send *task);
DOCA_EXPERIMENTAL void doca_rdma_task_send_imm_set_rdma_connection(struct doca_rdma_task_send_imm *task,
	struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *doca_rdma_task_send_imm_get_rdma_connection(const struct doca_rdma_task_send_imm *task);
DOCA_EXPERIMENTAL void doca_rdma_task_read_set_rdma_connection(struct doca_rdma_task_read *task,
	struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *doca_rdma_task_read_get_rdma_connection(const struct doca_rdma_task_read *task);
DOCA_EXPERIMENTAL void doca_rdma_task_write_set_rdma_connection(struct doca_rdma_task_write *task,
	struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *doca_rdma_task_write_get_rdma_connection(const struct doca_rdma_task_write *task);
DOCA_EXPERIMENTAL void doca_rdma_task_write_imm_set_rdma_connection(struct doca_rdma_task_write_imm *task,
	struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *doca_rdma_task_write_imm_get_rdma_connection(const struct doca_rdma_task_write_imm *task);
DOCA_EXPERIMENTAL void doca_rdma_task_atomic_cmp_swp_set_rdma_connection(struct doca_rdma_task_atomic_cmp_swp *task,
	struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *doca_rdma_task_atomic_cmp_swp_get_rdma_connection(const struct doca_rdma_task_atomic_cmp_swp *task);
DOCA_EXPERIMENTAL void doca_rdma_task_atomic_fetch_add_set_rdma_connection(struct doca_rdma_task_atomic_fetch_add *task,
	struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *doca_rdma_task_atomic_fetch_add_get_rdma_connection(const struct doca_rdma_task_atomic_fetch_add *task);
DOCA_EXPERIMENTAL void doca_rdma_task_remote_net_sync_event_get_set_rdma_connection(struct doca_rdma_task_remote_net_sync_event_get *task,
	struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *doca_rdma_task_remote_net_sync_event_get_get_rdma_connection(const struct doca_rdma_task_remote_net_sync_event_get *task);
DOCA_EXPERIMENTAL void doca_rdma_task_remote_net_sync_event_notify_set_set_rdma_connection(struct doca_rdma_task_remote_net_sync_event_notify_set *task,
	struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *doca_rdma_task_remote_net_sync_event_notify_set_get_rdma_connection(const struct doca_rdma_task_remote_net_sync_event_notify_set *task);
DOCA_EXPERIMENTAL void doca_rdma_task_remote_net_sync_event_notify_add_set_rdma_connection(struct doca_rdma_task_remote_net_sync_event_notify_add *task,
	struct doca_rdma_connection *rdma_connection);
DOCA_EXPERIMENTAL const struct doca_rdma_connection *doca_rdma_task_remote_net_sync_event_notify_add_get_rdma_connection(const struct doca_rdma_task_remote_net_sync_event_notify_add *task);
#endif

#ifdef __cplusplus
}
#endif

#endif /* DOCA_EMU_RDMA_H_ */
