//! The DOCA 2.5 names of `doca_cc.h`, `doca_cc_consumer.h` and `doca_cc_producer.h` that
//! differ from 2.6 (see the porting chapter's 2.5 table), over the same implementation. Task
//! counts given as base-2 logarithms are turned into counts; lengths given as `size_t` are
//! checked against the 32-bit limits.
//!
//! The functions whose 2.5 and 2.6 shapes share one name (ten size getters that write a
//! `size_t` in 2.5 and a `uint32_t` in 2.6, four setters that take a `size_t`, and the three
//! registrations whose callbacks take a `size_t` length or a `bool`) cannot be one symbol: a
//! 2.5 getter writing 8 bytes overruns a 2.6 caller's `uint32_t`. Their 2.5 shapes are
//! exported here as `<name>_v25`; the headers of an API level 2.5 install
//! (`DOCA_EMU_API_LEVEL` 25, see `doca_emu_api_level.h`) declare them under the DOCA name
//! with an asm label naming the `_v25` symbol, so 2.5 source builds unchanged, gets
//! full-width values, and a 2.6 program never reaches them.

use std::ffi::c_void;

use crate::buf::DocaBuf;
use crate::cc::{
    self as cc, alloc, set_conf, ConnCb, DocaCcConnection, DocaCcSide, RecvCb, TaskSendCb, Which,
};
use crate::check::{out, refuse};
use crate::dev::DocaDevinfo;
use crate::fast::{self, DocaCcConsumer, DocaCcProducer, FastTaskCb};
use crate::task::{as_task, DocaTask, Of};
use crate::{guarded, invalid, DocaError};

/// A task count given as its base-2 logarithm (`INVALID_VALUE` beyond 2^31).
fn from_log(log: u64) -> Option<u32> {
    (log < 32).then(|| 1u32 << log)
}

/// `doca_cc_server_send_task_set_conf` (2.5): `log_num_tasks` is a base-2 logarithm.
#[no_mangle]
pub extern "C" fn doca_cc_server_send_task_set_conf(
    server: *mut DocaCcSide,
    completion: TaskSendCb,
    error: TaskSendCb,
    log_num_tasks: u8,
) -> DocaError {
    guarded("doca_cc_server_send_task_set_conf", || match from_log(log_num_tasks.into()) {
        Some(n) => set_conf(server, Which::Server, completion, error, n),
        None => invalid(),
    })
}

/// `doca_cc_client_send_task_set_conf` (2.5): `log_num_tasks` is a base-2 logarithm.
#[no_mangle]
pub extern "C" fn doca_cc_client_send_task_set_conf(
    client: *mut DocaCcSide,
    completion: TaskSendCb,
    error: TaskSendCb,
    log_num_tasks: u8,
) -> DocaError {
    guarded("doca_cc_client_send_task_set_conf", || match from_log(log_num_tasks.into()) {
        Some(n) => set_conf(client, Which::Client, completion, error, n),
        None => invalid(),
    })
}

/// `doca_cc_server_send_task_alloc_init` (2.5: a `size_t` length).
#[no_mangle]
pub extern "C" fn doca_cc_server_send_task_alloc_init(
    server: *mut DocaCcSide,
    peer: *mut DocaCcConnection,
    msg: *const c_void,
    len: usize,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_cc_server_send_task_alloc_init", || alloc(server, Which::Server, peer, msg, len, task))
}

/// `doca_cc_client_send_task_alloc_init` (2.5: a `size_t` length).
#[no_mangle]
pub extern "C" fn doca_cc_client_send_task_alloc_init(
    client: *mut DocaCcSide,
    peer: *mut DocaCcConnection,
    msg: *const c_void,
    len: usize,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_cc_client_send_task_alloc_init", || alloc(client, Which::Client, peer, msg, len, task))
}

/// `doca_cc_send_task_as_task` (2.5).
#[no_mangle]
pub extern "C" fn doca_cc_send_task_as_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_cc_send_task_as_task", task, Of::Send)
}

/// `doca_cc_cap_is_consumer_supported` (2.5).
#[no_mangle]
pub extern "C" fn doca_cc_cap_is_consumer_supported(devinfo: *const DocaDevinfo) -> DocaError {
    fast::doca_cc_consumer_cap_is_supported(devinfo)
}

/// `doca_cc_cap_is_producer_supported` (2.5).
#[no_mangle]
pub extern "C" fn doca_cc_cap_is_producer_supported(devinfo: *const DocaDevinfo) -> DocaError {
    fast::doca_cc_producer_cap_is_supported(devinfo)
}

/// The base-2 logarithm of the fast path's task capability, into `value`.
fn write_max_log(name: &'static str, devinfo: *const DocaDevinfo, value: *mut usize) -> DocaError {
    guarded(name, || {
        let mut max = 0u32;
        // SAFETY: `max` is a local, writable.
        let r = unsafe { fast::doca_cc_consumer_cap_get_max_num_tasks(devinfo, &mut max) };
        if r != crate::DOCA_SUCCESS {
            return r;
        }
        out(value, max.checked_ilog2().unwrap_or(0) as usize)
    })
}

/// `doca_cc_consumer_cap_get_max_log_num_tasks` (2.5).
///
/// # Safety
/// `max_log_num_tasks` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_consumer_cap_get_max_log_num_tasks(
    devinfo: *const DocaDevinfo,
    max_log_num_tasks: *mut usize,
) -> DocaError {
    write_max_log("doca_cc_consumer_cap_get_max_log_num_tasks", devinfo, max_log_num_tasks)
}

/// `doca_cc_producer_cap_get_max_log_num_tasks` (2.5).
///
/// # Safety
/// `max_log_num_tasks` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_producer_cap_get_max_log_num_tasks(
    devinfo: *const DocaDevinfo,
    max_log_num_tasks: *mut usize,
) -> DocaError {
    write_max_log("doca_cc_producer_cap_get_max_log_num_tasks", devinfo, max_log_num_tasks)
}

/// `doca_cc_consumer_post_recv_task_set_conf` (2.5): `log_num_tasks` is a base-2 logarithm.
#[no_mangle]
pub extern "C" fn doca_cc_consumer_post_recv_task_set_conf(
    consumer: *mut DocaCcConsumer,
    completion: FastTaskCb,
    error: FastTaskCb,
    log_num_tasks: usize,
) -> DocaError {
    guarded("doca_cc_consumer_post_recv_task_set_conf", || match from_log(log_num_tasks as u64) {
        Some(n) => fast::doca_cc_consumer_task_post_recv_set_conf(consumer, completion, error, n),
        None => invalid(),
    })
}

/// `doca_cc_consumer_post_recv_task_alloc_init` (2.5).
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_consumer_post_recv_task_alloc_init(
    consumer: *mut DocaCcConsumer,
    buf: *mut DocaBuf,
    task: *mut *mut DocaTask,
) -> DocaError {
    // SAFETY: the same contract.
    unsafe { fast::doca_cc_consumer_task_post_recv_alloc_init(consumer, buf, task) }
}

/// `doca_cc_consumer_post_recv_task_get_buf` (2.5).
#[no_mangle]
pub extern "C" fn doca_cc_consumer_post_recv_task_get_buf(task: *mut DocaTask) -> *mut DocaBuf {
    fast::doca_cc_consumer_task_post_recv_get_buf(task)
}

/// `doca_cc_consumer_post_recv_task_set_buf` (2.5).
#[no_mangle]
pub extern "C" fn doca_cc_consumer_post_recv_task_set_buf(task: *mut DocaTask, buf: *mut DocaBuf) {
    fast::doca_cc_consumer_task_post_recv_set_buf(task, buf)
}

/// `doca_cc_consumer_post_recv_task_as_task` (2.5).
#[no_mangle]
pub extern "C" fn doca_cc_consumer_post_recv_task_as_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_cc_consumer_post_recv_task_as_task", task, Of::PostRecv)
}

/// `doca_cc_producer_send_task_set_conf` (2.5): `log_num_tasks` is a base-2 logarithm.
#[no_mangle]
pub extern "C" fn doca_cc_producer_send_task_set_conf(
    producer: *mut DocaCcProducer,
    completion: FastTaskCb,
    error: FastTaskCb,
    log_num_tasks: usize,
) -> DocaError {
    guarded("doca_cc_producer_send_task_set_conf", || match from_log(log_num_tasks as u64) {
        Some(n) => fast::doca_cc_producer_task_send_set_conf(producer, completion, error, n),
        None => invalid(),
    })
}

/// `doca_cc_producer_send_task_alloc_init` (2.5: an `int` consumer id; a negative one is
/// `INVALID_VALUE`).
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_producer_send_task_alloc_init(
    producer: *mut DocaCcProducer,
    buf: *mut DocaBuf,
    consumer_id: i32,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_cc_producer_send_task_alloc_init", || match u32::try_from(consumer_id) {
        // SAFETY: the same contract.
        Ok(id) => unsafe { fast::doca_cc_producer_task_send_alloc_init(producer, buf, id, task) },
        Err(_) => invalid(),
    })
}

/// `doca_cc_producer_send_task_get_buf` (2.5).
#[no_mangle]
pub extern "C" fn doca_cc_producer_send_task_get_buf(task: *mut DocaTask) -> *mut DocaBuf {
    fast::doca_cc_producer_task_send_get_buf(task)
}

/// `doca_cc_producer_send_task_set_buf` (2.5).
#[no_mangle]
pub extern "C" fn doca_cc_producer_send_task_set_buf(task: *mut DocaTask, buf: *mut DocaBuf) {
    fast::doca_cc_producer_task_send_set_buf(task, buf)
}

/// `doca_cc_producer_send_task_get_consumer_id` (2.5: an `int`).
#[no_mangle]
pub extern "C" fn doca_cc_producer_send_task_get_consumer_id(task: *mut DocaTask) -> i32 {
    fast::doca_cc_producer_task_send_get_consumer_id(task) as i32
}

/// `doca_cc_producer_send_task_set_consumer_id` (2.5: an `int`; a negative one is ignored).
#[no_mangle]
pub extern "C" fn doca_cc_producer_send_task_set_consumer_id(task: *mut DocaTask, consumer_id: i32) {
    if let Ok(id) = u32::try_from(consumer_id) {
        fast::doca_cc_producer_task_send_set_consumer_id(task, id)
    }
}

/// `doca_cc_producer_send_task_as_task` (2.5).
#[no_mangle]
pub extern "C" fn doca_cc_producer_send_task_as_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_cc_producer_send_task_as_task", task, Of::ProducerSend)
}

/// A 2.5 size getter: the 2.6 getter `get` into a local, then its value written as a `size_t`.
fn widen<T>(
    name: &'static str,
    obj: T,
    value: *mut usize,
    get: unsafe extern "C" fn(T, *mut u32) -> DocaError,
) -> DocaError {
    guarded(name, || {
        if value.is_null() {
            return out(value, 0);
        }
        let mut v = 0u32;
        // SAFETY: `v` is a local, writable; `obj` is passed on as the caller gave it.
        let r = unsafe { get(obj, &mut v) };
        if r != crate::DOCA_SUCCESS {
            return r;
        }
        out(value, v as usize)
    })
}

/// A 2.5 size setter: a `size_t` above the 32-bit range is `INVALID_VALUE` (2.6's limits are
/// `uint32_t`), else the 2.6 setter `set`.
fn narrow(
    name: &'static str,
    obj: *mut DocaCcSide,
    size: usize,
    set: extern "C" fn(*mut DocaCcSide, u32) -> DocaError,
) -> DocaError {
    guarded(name, || match u32::try_from(size) {
        Ok(v) => set(obj, v),
        Err(_) => refuse(|| format!("size {size} is above the 32-bit limit")),
    })
}

macro_rules! getters25 {
    ($($(#[$doc:meta])* $name:ident($t:ty) => $v26:path;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `value` is NULL or writable (8 bytes).
        #[no_mangle]
        pub unsafe extern "C" fn $name(obj: $t, value: *mut usize) -> DocaError {
            widen(stringify!($name), obj, value, $v26)
        }
    )*};
}

getters25! {
    /// `doca_cc_cap_get_max_msg_size` (2.5: writes a `size_t`).
    doca_cc_cap_get_max_msg_size_v25(*const DocaDevinfo) => cc::doca_cc_cap_get_max_msg_size;
    /// `doca_cc_cap_get_max_recv_queue_size` (2.5: writes a `size_t`).
    doca_cc_cap_get_max_recv_queue_size_v25(*const DocaDevinfo) => cc::doca_cc_cap_get_max_recv_queue_size;
    /// `doca_cc_cap_get_max_clients` (2.5: writes a `size_t`).
    doca_cc_cap_get_max_clients_v25(*const DocaDevinfo) => cc::doca_cc_cap_get_max_clients;
    /// `doca_cc_cap_get_max_send_tasks` (2.5: writes a `size_t`).
    doca_cc_cap_get_max_send_tasks_v25(*const DocaDevinfo) => cc::doca_cc_cap_get_max_send_tasks;
    /// `doca_cc_server_get_max_msg_size` (2.5: writes a `size_t`).
    doca_cc_server_get_max_msg_size_v25(*const DocaCcSide) => cc::doca_cc_server_get_max_msg_size;
    /// `doca_cc_server_get_recv_queue_size` (2.5: writes a `size_t`).
    doca_cc_server_get_recv_queue_size_v25(*const DocaCcSide) => cc::doca_cc_server_get_recv_queue_size;
    /// `doca_cc_client_get_max_msg_size` (2.5: writes a `size_t`).
    doca_cc_client_get_max_msg_size_v25(*const DocaCcSide) => cc::doca_cc_client_get_max_msg_size;
    /// `doca_cc_client_get_recv_queue_size` (2.5: writes a `size_t`).
    doca_cc_client_get_recv_queue_size_v25(*const DocaCcSide) => cc::doca_cc_client_get_recv_queue_size;
    /// `doca_cc_consumer_cap_get_max_buf_size` (2.5: writes a `size_t`).
    doca_cc_consumer_cap_get_max_buf_size_v25(*const DocaDevinfo) => fast::doca_cc_consumer_cap_get_max_buf_size;
    /// `doca_cc_producer_cap_get_max_buf_size` (2.5: writes a `size_t`).
    doca_cc_producer_cap_get_max_buf_size_v25(*const DocaDevinfo) => fast::doca_cc_producer_cap_get_max_buf_size;
}

macro_rules! setters25 {
    ($($(#[$doc:meta])* $name:ident => $v26:path;)*) => {$(
        $(#[$doc])*
        #[no_mangle]
        pub extern "C" fn $name(obj: *mut DocaCcSide, size: usize) -> DocaError {
            narrow(stringify!($name), obj, size, $v26)
        }
    )*};
}

setters25! {
    /// `doca_cc_server_set_max_msg_size` (2.5: a `size_t`).
    doca_cc_server_set_max_msg_size_v25 => cc::doca_cc_server_set_max_msg_size;
    /// `doca_cc_server_set_recv_queue_size` (2.5: a `size_t`).
    doca_cc_server_set_recv_queue_size_v25 => cc::doca_cc_server_set_recv_queue_size;
    /// `doca_cc_client_set_max_msg_size` (2.5: a `size_t`).
    doca_cc_client_set_max_msg_size_v25 => cc::doca_cc_client_set_max_msg_size;
    /// `doca_cc_client_set_recv_queue_size` (2.5: a `size_t`).
    doca_cc_client_set_recv_queue_size_v25 => cc::doca_cc_client_set_recv_queue_size;
}

/// `doca_cc_event_msg_recv_cb_t` (2.5): a `size_t` length.
pub type MsgRecvCb25 = Option<unsafe extern "C" fn(*mut c_void, *mut u8, usize, *mut DocaCcConnection)>;
/// `doca_cc_event_connection_status_changed_cb_t` (2.5): a `bool`.
pub type ConnectionCb25 = Option<unsafe extern "C" fn(*mut c_void, *mut DocaCcConnection, bool)>;

/// `doca_cc_server_event_msg_recv_register` (2.5: the callback takes a `size_t` length).
#[no_mangle]
pub extern "C" fn doca_cc_server_event_msg_recv_register_v25(
    server: *mut DocaCcSide,
    cb: MsgRecvCb25,
) -> DocaError {
    guarded("doca_cc_server_event_msg_recv_register", || {
        cc::msg_recv(server, Which::Server, cb.map(RecvCb::Size))
    })
}

/// `doca_cc_client_event_msg_recv_register` (2.5: the callback takes a `size_t` length).
#[no_mangle]
pub extern "C" fn doca_cc_client_event_msg_recv_register_v25(
    client: *mut DocaCcSide,
    cb: MsgRecvCb25,
) -> DocaError {
    guarded("doca_cc_client_event_msg_recv_register", || {
        cc::msg_recv(client, Which::Client, cb.map(RecvCb::Size))
    })
}

/// `doca_cc_server_event_connection_register` (2.5: the callbacks take a `bool`).
#[no_mangle]
pub extern "C" fn doca_cc_server_event_connection_register_v25(
    server: *mut DocaCcSide,
    connect: ConnectionCb25,
    disconnect: ConnectionCb25,
) -> DocaError {
    guarded("doca_cc_server_event_connection_register", || {
        cc::connection_events(server, connect.map(ConnCb::Bool), disconnect.map(ConnCb::Bool))
    })
}
