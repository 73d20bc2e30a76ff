//! The DOCA 2.5 names of `doca_cc.h`, `doca_cc_consumer.h` and `doca_cc_producer.h` that
//! differ from 2.6 (see the porting chapter's 2.5 table), over the same implementation. Task
//! counts given as base-2 logarithms are turned into counts; lengths given as `size_t` are
//! checked against the 32-bit limits.
//!
//! Not here: the 2.5 size getters that share their names with 2.6 but write a `size_t` (the
//! 2.6 `uint32_t` versions are the ones exported).

use std::ffi::c_void;

use crate::buf::DocaBuf;
use crate::cc::{alloc, set_conf, DocaCcConnection, DocaCcSide, TaskSendCb, Which};
use crate::check::out;
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
pub extern "C" fn doca_cc_consumer_post_recv_task_get_buf(task: *const DocaTask) -> *mut DocaBuf {
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
pub extern "C" fn doca_cc_producer_send_task_get_buf(task: *const DocaTask) -> *mut DocaBuf {
    fast::doca_cc_producer_task_send_get_buf(task)
}

/// `doca_cc_producer_send_task_set_buf` (2.5).
#[no_mangle]
pub extern "C" fn doca_cc_producer_send_task_set_buf(task: *mut DocaTask, buf: *mut DocaBuf) {
    fast::doca_cc_producer_task_send_set_buf(task, buf)
}

/// `doca_cc_producer_send_task_get_consumer_id` (2.5: an `int`).
#[no_mangle]
pub extern "C" fn doca_cc_producer_send_task_get_consumer_id(task: *const DocaTask) -> i32 {
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
