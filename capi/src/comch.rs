//! The DOCA 2.7+ Comm Channel names (`doca_comch_*`) as real symbols: each one is the
//! `doca_cc_*` function it was renamed from (same arguments, same checks, same codes), so an
//! object compiled with NVIDIA's `doca_comch*.h` links against this library. The functions
//! that changed shape in 2.7 have their own homes (`doca_comch_server_disconnect` in the
//! `cc` module, the producer's send with immediate data and the consumer's immediate-data
//! getters in `fast`).
//!
//! Each alias keeps its original's safety: `unsafe` exactly when the original is (the rule
//! in the crate's overview).

use std::ffi::{c_char, c_void};

use crate::*;

/// Aliases of safe exports.
macro_rules! alias {
    ($($new:ident = $old:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {$(
        #[doc = concat!("`", stringify!($new), "`: [`", stringify!($old), "`] under its DOCA 2.7+ name.")]
        #[no_mangle]
        pub extern "C" fn $new($($arg: $ty),*) $(-> $ret)? {
            $old($($arg),*)
        }
    )*};
}

/// Aliases of unsafe exports (they read or write memory C points to).
macro_rules! unsafe_alias {
    ($($new:ident = $old:ident($($arg:ident: $ty:ty),*) $(-> $ret:ty)?;)*) => {$(
        #[doc = concat!("`", stringify!($new), "`: [`", stringify!($old), "`] under its DOCA 2.7+ name.")]
        ///
        /// # Safety
        #[doc = concat!("As [`", stringify!($old), "`].")]
        #[no_mangle]
        pub unsafe extern "C" fn $new($($arg: $ty),*) $(-> $ret)? {
            // SAFETY: the caller keeps the original's contract.
            unsafe { $old($($arg),*) }
        }
    )*};
}

alias! {
    doca_comch_cap_client_is_supported = doca_cc_cap_client_is_supported(devinfo: *const DocaDevinfo) -> DocaError;
    doca_comch_cap_server_is_supported = doca_cc_cap_server_is_supported(devinfo: *const DocaDevinfo) -> DocaError;
    doca_comch_client_as_ctx = doca_cc_client_as_ctx(client: *mut DocaCcSide) -> *mut DocaCtx;
    doca_comch_client_destroy = doca_cc_client_destroy(client: *mut DocaCcSide) -> DocaError;
    doca_comch_client_event_consumer_register = doca_cc_client_event_consumer_register(client: *mut DocaCcSide, new_consumer_event_cb: ConsumerCb, expired_consumer_event_cb: ConsumerCb) -> DocaError;
    doca_comch_client_event_msg_recv_register = doca_cc_client_event_msg_recv_register(client: *mut DocaCcSide, cb: MsgRecvCb) -> DocaError;
    doca_comch_client_get_client_ctx = doca_cc_client_get_client_ctx(connection: *const DocaCcConnection) -> *mut DocaCcSide;
    doca_comch_client_set_max_msg_size = doca_cc_client_set_max_msg_size(client: *mut DocaCcSide, size: u32) -> DocaError;
    doca_comch_client_set_recv_queue_size = doca_cc_client_set_recv_queue_size(client: *mut DocaCcSide, size: u32) -> DocaError;
    doca_comch_client_task_send_alloc_init = doca_cc_client_task_send_alloc_init(client: *mut DocaCcSide, peer: *mut DocaCcConnection, msg: *const c_void, len: u32, task: *mut *mut DocaTask) -> DocaError;
    doca_comch_client_task_send_set_conf = doca_cc_client_task_send_set_conf(client: *mut DocaCcSide, completion: TaskSendCb, error: TaskSendCb, num_send_tasks: u32) -> DocaError;
    doca_comch_connection_get_user_data = doca_cc_connection_get_user_data(connection: *const DocaCcConnection) -> DocaData;
    doca_comch_connection_set_user_data = doca_cc_connection_set_user_data(connection: *mut DocaCcConnection, user_data: DocaData) -> DocaError;
    doca_comch_connection_update_info = doca_cc_connection_update_info(connection: *mut DocaCcConnection) -> DocaError;
    doca_comch_consumer_as_ctx = doca_cc_consumer_as_ctx(consumer: *mut DocaCcConsumer) -> *mut DocaCtx;
    doca_comch_consumer_cap_is_supported = doca_cc_consumer_cap_is_supported(devinfo: *const DocaDevinfo) -> DocaError;
    doca_comch_consumer_task_post_recv_as_task = doca_cc_consumer_task_post_recv_as_task(task: *mut DocaTask) -> *mut DocaTask;
    doca_comch_consumer_task_post_recv_get_buf = doca_cc_consumer_task_post_recv_get_buf(task: *const DocaTask) -> *mut DocaBuf;
    doca_comch_consumer_task_post_recv_get_producer_id = doca_cc_consumer_task_post_recv_get_producer_id(task: *const DocaTask) -> u32;
    doca_comch_consumer_task_post_recv_set_buf = doca_cc_consumer_task_post_recv_set_buf(task: *mut DocaTask, buf: *mut DocaBuf);
    doca_comch_consumer_task_post_recv_set_conf = doca_cc_consumer_task_post_recv_set_conf(consumer: *mut DocaCcConsumer, task_completion_cb: FastTaskCb, task_error_cb: FastTaskCb, num_post_recv_tasks: u32) -> DocaError;
    doca_comch_producer_as_ctx = doca_cc_producer_as_ctx(producer: *mut DocaCcProducer) -> *mut DocaCtx;
    doca_comch_producer_cap_is_supported = doca_cc_producer_cap_is_supported(devinfo: *const DocaDevinfo) -> DocaError;
    doca_comch_producer_task_send_as_task = doca_cc_producer_task_send_as_task(task: *mut DocaTask) -> *mut DocaTask;
    doca_comch_producer_task_send_get_buf = doca_cc_producer_task_send_get_buf(task: *const DocaTask) -> *mut DocaBuf;
    doca_comch_producer_task_send_get_consumer_id = doca_cc_producer_task_send_get_consumer_id(task: *const DocaTask) -> u32;
    doca_comch_producer_task_send_set_buf = doca_cc_producer_task_send_set_buf(task: *mut DocaTask, buf: *mut DocaBuf);
    doca_comch_producer_task_send_set_conf = doca_cc_producer_task_send_set_conf(producer: *mut DocaCcProducer, task_completion_cb: FastTaskCb, task_error_cb: FastTaskCb, num_send_tasks: u32) -> DocaError;
    doca_comch_producer_task_send_set_consumer_id = doca_cc_producer_task_send_set_consumer_id(task: *mut DocaTask, consumer_id: u32);
    doca_comch_server_as_ctx = doca_cc_server_as_ctx(server: *mut DocaCcSide) -> *mut DocaCtx;
    doca_comch_server_destroy = doca_cc_server_destroy(server: *mut DocaCcSide) -> DocaError;
    doca_comch_server_event_connection_register = doca_cc_server_event_connection_register(server: *mut DocaCcSide, connect: ConnectionCb, disconnect: ConnectionCb) -> DocaError;
    doca_comch_server_event_connection_status_changed_register = doca_cc_server_event_connection_register(server: *mut DocaCcSide, connect: ConnectionCb, disconnect: ConnectionCb) -> DocaError;
    doca_comch_server_event_consumer_register = doca_cc_server_event_consumer_register(server: *mut DocaCcSide, new_consumer_event_cb: ConsumerCb, expired_consumer_event_cb: ConsumerCb) -> DocaError;
    doca_comch_server_event_msg_recv_register = doca_cc_server_event_msg_recv_register(server: *mut DocaCcSide, cb: MsgRecvCb) -> DocaError;
    doca_comch_server_get_server_ctx = doca_cc_server_get_server_ctx(connection: *const DocaCcConnection) -> *mut DocaCcSide;
    doca_comch_server_set_max_msg_size = doca_cc_server_set_max_msg_size(server: *mut DocaCcSide, size: u32) -> DocaError;
    doca_comch_server_set_recv_queue_size = doca_cc_server_set_recv_queue_size(server: *mut DocaCcSide, size: u32) -> DocaError;
    doca_comch_server_task_send_alloc_init = doca_cc_server_task_send_alloc_init(server: *mut DocaCcSide, peer: *mut DocaCcConnection, msg: *const c_void, len: u32, task: *mut *mut DocaTask) -> DocaError;
    doca_comch_server_task_send_set_conf = doca_cc_server_task_send_set_conf(server: *mut DocaCcSide, completion: TaskSendCb, error: TaskSendCb, num_send_tasks: u32) -> DocaError;
    doca_comch_task_send_as_task = doca_cc_task_send_as_task(task: *mut DocaTask) -> *mut DocaTask;
}

unsafe_alias! {
    doca_comch_consumer_cap_get_max_num_tasks = doca_cc_consumer_cap_get_max_num_tasks(devinfo: *const DocaDevinfo, value: *mut u32) -> DocaError;
    doca_comch_consumer_cap_get_max_buf_size = doca_cc_consumer_cap_get_max_buf_size(devinfo: *const DocaDevinfo, value: *mut u32) -> DocaError;
    doca_comch_consumer_cap_get_max_consumers = doca_cc_consumer_cap_get_max_consumers(devinfo: *const DocaDevinfo, value: *mut u32) -> DocaError;
    doca_comch_producer_cap_get_max_num_tasks = doca_cc_producer_cap_get_max_num_tasks(devinfo: *const DocaDevinfo, value: *mut u32) -> DocaError;
    doca_comch_producer_cap_get_max_buf_size = doca_cc_producer_cap_get_max_buf_size(devinfo: *const DocaDevinfo, value: *mut u32) -> DocaError;
    doca_comch_producer_cap_get_max_producers = doca_cc_producer_cap_get_max_producers(devinfo: *const DocaDevinfo, value: *mut u32) -> DocaError;
    doca_comch_cap_get_max_clients = doca_cc_cap_get_max_clients(devinfo: *const DocaDevinfo, max_clients: *mut u32) -> DocaError;
    doca_comch_cap_get_max_msg_size = doca_cc_cap_get_max_msg_size(devinfo: *const DocaDevinfo, max_msg_size: *mut u32) -> DocaError;
    doca_comch_cap_get_max_name_len = doca_cc_cap_get_max_name_len(devinfo: *const DocaDevinfo, max_name_len: *mut u32) -> DocaError;
    doca_comch_cap_get_max_recv_queue_size = doca_cc_cap_get_max_recv_queue_size(devinfo: *const DocaDevinfo, max_recv_queue_size: *mut u32) -> DocaError;
    doca_comch_cap_get_max_send_tasks = doca_cc_cap_get_max_send_tasks(devinfo: *const DocaDevinfo, max_send_tasks: *mut u32) -> DocaError;
    doca_comch_client_get_connection = doca_cc_client_get_connection(client: *const DocaCcSide, connection: *mut *mut DocaCcConnection) -> DocaError;
    doca_comch_client_get_device = doca_cc_client_get_device(client: *const DocaCcSide, dev: *mut *mut DocaDev) -> DocaError;
    doca_comch_client_get_max_msg_size = doca_cc_client_get_max_msg_size(client: *const DocaCcSide, size: *mut u32) -> DocaError;
    doca_comch_client_get_recv_queue_size = doca_cc_client_get_recv_queue_size(client: *const DocaCcSide, size: *mut u32) -> DocaError;
    doca_comch_connection_get_counter = doca_cc_connection_get_counter(connection: *const DocaCcConnection, counter: u32, value: *mut u64) -> DocaError;
    doca_comch_consumer_create = doca_cc_consumer_create(cc_connection: *mut DocaCcConnection, buf_mmap: *mut DocaMmap, consumer: *mut *mut DocaCcConsumer) -> DocaError;
    doca_comch_consumer_destroy = doca_cc_consumer_destroy(consumer: *mut DocaCcConsumer) -> DocaError;
    doca_comch_consumer_get_id = doca_cc_consumer_get_id(consumer: *const DocaCcConsumer, id: *mut u32) -> DocaError;
    doca_comch_consumer_task_post_recv_alloc_init = doca_cc_consumer_task_post_recv_alloc_init(consumer: *mut DocaCcConsumer, buf: *mut DocaBuf, task: *mut *mut DocaTask) -> DocaError;
    doca_comch_producer_create = doca_cc_producer_create(cc_connection: *mut DocaCcConnection, producer: *mut *mut DocaCcProducer) -> DocaError;
    doca_comch_producer_destroy = doca_cc_producer_destroy(producer: *mut DocaCcProducer) -> DocaError;
    doca_comch_producer_get_id = doca_cc_producer_get_id(producer: *const DocaCcProducer, id: *mut u32) -> DocaError;
    doca_comch_server_get_device = doca_cc_server_get_device(server: *const DocaCcSide, dev: *mut *mut DocaDev) -> DocaError;
    doca_comch_server_get_device_repr = doca_cc_server_get_device_repr(server: *const DocaCcSide, repr: *mut *mut DocaDevRep) -> DocaError;
    doca_comch_server_get_max_msg_size = doca_cc_server_get_max_msg_size(server: *const DocaCcSide, size: *mut u32) -> DocaError;
    doca_comch_server_get_recv_queue_size = doca_cc_server_get_recv_queue_size(server: *const DocaCcSide, size: *mut u32) -> DocaError;
}

/// `doca_comch_server_create`: [`doca_cc_server_create`] under its DOCA 2.7+ name; the
/// server's log lines then name the `doca_comch_server_*` functions.
///
/// # Safety
/// As [`doca_cc_server_create`].
#[no_mangle]
pub unsafe extern "C" fn doca_comch_server_create(
    dev: *mut DocaDev,
    repr: *mut DocaDevRep,
    name: *const c_char,
    server: *mut *mut DocaCcSide,
) -> DocaError {
    // SAFETY: the caller keeps the original's contract.
    let r = unsafe { doca_cc_server_create(dev, repr, name, server) };
    if r == 0 {
        // SAFETY: on success the original wrote a server handle through `server`.
        crate::cc::use_c_names(unsafe { *server }, crate::cc::Which::Server, doca_cc::CNames::Comch);
    }
    r
}

/// `doca_comch_client_create`: [`doca_cc_client_create`] under its DOCA 2.7+ name; the
/// client's log lines then name the `doca_comch_client_*` functions.
///
/// # Safety
/// As [`doca_cc_client_create`].
#[no_mangle]
pub unsafe extern "C" fn doca_comch_client_create(
    dev: *mut DocaDev,
    name: *const c_char,
    client: *mut *mut DocaCcSide,
) -> DocaError {
    // SAFETY: the caller keeps the original's contract.
    let r = unsafe { doca_cc_client_create(dev, name, client) };
    if r == 0 {
        // SAFETY: on success the original wrote a client handle through `client`.
        crate::cc::use_c_names(unsafe { *client }, crate::cc::Which::Client, doca_cc::CNames::Comch);
    }
    r
}
