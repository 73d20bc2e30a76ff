//! `doca_cc_consumer.h` and `doca_cc_producer.h`: the fast path. A consumer posts buffers of
//! its map; the peer's producers write into them.

use std::rc::Rc;

use doca_cc::{caps, Consumer, PostRecvTask, Producer, ProducerSendTask};
use doca_core::{CtxState, Data, DevInfo, Error};

use crate::buf::{buf, DocaBuf};
use crate::cc::{cap, conn, DocaCcConnection};
use crate::check::{bytes, non_null, out};
use crate::ctx::{DocaCtx, DocaData, CTXS};
use crate::dev::DocaDevinfo;
use crate::handles::{Handles, Kind};
use crate::mmap::{mmap, DocaMmap};
use crate::task::{as_task, complete, task, AnyTask, DocaTask, Of, TaskTable};
use crate::{guarded, invalid, DocaError};

/// A consumer or a producer, its context's handle and its tasks' handles.
pub struct FastCtx<T> {
    obj: T,
    ctx: *mut DocaCtx,
    tasks: Rc<TaskTable>,
}

/// `struct doca_cc_consumer`.
pub type DocaCcConsumer = FastCtx<Consumer>;
/// `struct doca_cc_producer`.
pub type DocaCcProducer = FastCtx<Producer>;

/// What the shared create and destroy need of a consumer or a producer.
trait FastObj: Sized {
    fn ctx(&self) -> doca_core::Ctx;
    fn destroy(self) -> doca_core::Result<()>;
}

impl FastObj for Consumer {
    fn ctx(&self) -> doca_core::Ctx {
        self.as_ctx()
    }
    fn destroy(self) -> doca_core::Result<()> {
        Consumer::destroy(self).map_err(|r| r.error)
    }
}

impl FastObj for Producer {
    fn ctx(&self) -> doca_core::Ctx {
        self.as_ctx()
    }
    fn destroy(self) -> doca_core::Result<()> {
        Producer::destroy(self).map_err(|r| r.error)
    }
}

/// Hands `obj` out in `table`, with its context's handle.
fn hand_out<T: FastObj>(table: &Handles, obj: T) -> *mut FastCtx<T> {
    let ctx = CTXS.add(DocaCtx(obj.ctx()));
    let tasks = Rc::new(TaskTable::default());
    tasks.1.set(ctx);
    table.add(FastCtx { obj, ctx, tasks })
}

/// `*_destroy`: Idle only (`BAD_STATE`, the object stays); its context's and tasks' handles
/// go with it.
///
/// # Safety
/// `table` only holds `FastCtx<T>` handles; `p` is not used after a successful destroy.
unsafe fn destroy<T: FastObj>(table: &Handles, p: *mut FastCtx<T>) -> DocaError {
    // SAFETY: the caller's contract.
    let Some(f) = (unsafe { table.get(p) }) else { return invalid() };
    if f.obj.ctx().state() != CtxState::Idle {
        return Error::BadState.code();
    }
    // SAFETY: the caller's contract; freed once, here.
    let Some(f) = (unsafe { table.remove(p) }) else { return invalid() };
    let FastCtx { obj, ctx, tasks } = *f;
    // SAFETY: the context handle was made with the object and goes with it.
    drop(unsafe { CTXS.remove(ctx) });
    drop(tasks);
    doca_core::Error::code_of(&obj.destroy())
}

static CONSUMERS: Handles = Handles::new(Kind::CcConsumer);
static PRODUCERS: Handles = Handles::new(Kind::CcProducer);

fn consumer<'a>(p: *const DocaCcConsumer) -> Option<&'a DocaCcConsumer> {
    // SAFETY: CONSUMERS only holds DocaCcConsumer handles.
    unsafe { CONSUMERS.get(p) }
}

fn producer<'a>(p: *const DocaCcProducer) -> Option<&'a DocaCcProducer> {
    // SAFETY: PRODUCERS only holds DocaCcProducer handles.
    unsafe { PRODUCERS.get(p) }
}

/// A task completion callback of the fast path (the task handle, task and context data).
pub type FastTaskCb = Option<unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData)>;

/// The task behind `p` if it is a post-receive task.
fn post_recv<R>(p: *const DocaTask, f: impl FnOnce(&PostRecvTask) -> R) -> Option<R> {
    task(p)?.with(|t| match t {
        AnyTask::PostRecv(t) => Some(f(t)),
        _ => None,
    })?
}

/// The task behind `p` if it is a producer send task.
fn producer_send<R>(p: *const DocaTask, f: impl FnOnce(&ProducerSendTask) -> R) -> Option<R> {
    task(p)?.with(|t| match t {
        AnyTask::ProducerSend(t) => Some(f(t)),
        _ => None,
    })?
}

/// `doca_cc_consumer_create`: a consumer on an established connection, posting buffers of
/// `buf_mmap` (which needs `DOCA_ACCESS_FLAG_PCI_READ_WRITE`).
///
/// # Safety
/// `consumer` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_consumer_create(
    cc_connection: *mut DocaCcConnection,
    buf_mmap: *mut DocaMmap,
    consumer: *mut *mut DocaCcConsumer,
) -> DocaError {
    guarded("doca_cc_consumer_create", || {
        let (Some(c), Some(m)) = (conn(cc_connection), mmap(buf_mmap)) else { return invalid() };
        if let Err(e) = crate::check::non_null(consumer, "consumer") {
            return e;
        }
        match Consumer::create(&c.conn, m) {
            Ok(k) => out(consumer, hand_out(&CONSUMERS, k)),
            Err(e) => e.code(),
        }
    })
}

/// `doca_cc_consumer_destroy`: Idle only (`BAD_STATE`, the consumer stays).
///
/// # Safety
/// `consumer` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_consumer_destroy(consumer: *mut DocaCcConsumer) -> DocaError {
    // SAFETY: CONSUMERS only holds DocaCcConsumer handles; the caller's contract.
    guarded("doca_cc_consumer_destroy", || unsafe { destroy(&CONSUMERS, consumer) })
}

/// `doca_cc_consumer_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_cc_consumer_as_ctx(consumer: *mut DocaCcConsumer) -> *mut DocaCtx {
    crate::shielded("doca_cc_consumer_as_ctx", std::ptr::null_mut(), || {
        self::consumer(consumer).map_or(std::ptr::null_mut(), |k| k.ctx)
    })
}

/// `doca_cc_consumer_get_id`.
///
/// # Safety
/// `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_consumer_get_id(consumer: *const DocaCcConsumer, id: *mut u32) -> DocaError {
    guarded("doca_cc_consumer_get_id", || match self::consumer(consumer) {
        Some(k) => out(id, k.obj.id()),
        None => invalid(),
    })
}

/// `doca_cc_consumer_task_post_recv_set_conf`: Idle only.
#[no_mangle]
pub extern "C" fn doca_cc_consumer_task_post_recv_set_conf(
    consumer: *mut DocaCcConsumer,
    task_completion_cb: FastTaskCb,
    task_error_cb: FastTaskCb,
    num_post_recv_tasks: u32,
) -> DocaError {
    guarded("doca_cc_consumer_task_post_recv_set_conf", || {
        let (Some(k), Some(done), Some(failed)) =
            (self::consumer(consumer), task_completion_cb, task_error_cb)
        else {
            return invalid();
        };
        let (w1, w2) = (Rc::downgrade(&k.tasks), Rc::downgrade(&k.tasks));
        let r = k.obj.task_post_recv_set_conf(
            move |t: PostRecvTask, td: Data, cd: Data| complete(&w1, done, AnyTask::PostRecv(t), td, cd),
            move |t: PostRecvTask, td: Data, cd: Data| complete(&w2, failed, AnyTask::PostRecv(t), td, cd),
            num_post_recv_tasks,
        );
        doca_core::Error::code_of(&r)
    })
}

/// `doca_cc_consumer_task_post_recv_alloc_init`: a task posting `buf` (in the consumer's
/// map, with free room after its data).
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_consumer_task_post_recv_alloc_init(
    consumer: *mut DocaCcConsumer,
    buf: *mut DocaBuf,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_cc_consumer_task_post_recv_alloc_init", || {
        let (Some(k), Some(b)) = (self::consumer(consumer), self::buf(buf)) else { return invalid() };
        if let Err(e) = crate::check::non_null(task, "task") {
            return e;
        }
        match k.obj.task_post_recv_alloc_init(b) {
            Ok(t) => out(task, k.tasks.hand_out(AnyTask::PostRecv(t), buf)),
            Err(e) => e.code(),
        }
    })
}

/// `doca_cc_consumer_task_post_recv_get_buf`: the buffer handle the task carries (NULL for
/// an invalid task).
#[no_mangle]
pub extern "C" fn doca_cc_consumer_task_post_recv_get_buf(task: *const DocaTask) -> *mut DocaBuf {
    crate::shielded("doca_cc_consumer_task_post_recv_get_buf", std::ptr::null_mut(), || {
        match post_recv(task, |_| ()) {
            Some(()) => self::task(task).map_or(std::ptr::null_mut(), |h| h.buf.get()),
            None => std::ptr::null_mut(),
        }
    })
}

/// `doca_cc_consumer_task_post_recv_set_buf`: another buffer for a task that is not
/// submitted, checked when it is submitted.
#[no_mangle]
pub extern "C" fn doca_cc_consumer_task_post_recv_set_buf(task: *mut DocaTask, buf: *mut DocaBuf) {
    guarded("doca_cc_consumer_task_post_recv_set_buf", || {
        let Some(b) = self::buf(buf) else { return invalid() };
        let Some(h) = self::task(task) else { return invalid() };
        let set = h.with(|t| match t {
            AnyTask::PostRecv(t) => {
                t.set_buf(b);
                true
            }
            _ => false,
        });
        if set == Some(true) {
            h.buf.set(buf);
        }
        crate::DOCA_SUCCESS
    });
}

/// `doca_cc_consumer_task_post_recv_get_producer_id`: the producer that filled the buffer
/// (0 before a completion).
#[no_mangle]
pub extern "C" fn doca_cc_consumer_task_post_recv_get_producer_id(task: *const DocaTask) -> u32 {
    crate::shielded("doca_cc_consumer_task_post_recv_get_producer_id", 0, || {
        post_recv(task, PostRecvTask::producer_id).unwrap_or(0)
    })
}

/// `doca_cc_consumer_task_post_recv_as_task`: the same handle.
#[no_mangle]
pub extern "C" fn doca_cc_consumer_task_post_recv_as_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_cc_consumer_task_post_recv_as_task", task, Of::PostRecv)
}

/// `doca_cc_producer_create`: a producer on an established connection.
///
/// # Safety
/// `producer` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_producer_create(
    cc_connection: *mut DocaCcConnection,
    producer: *mut *mut DocaCcProducer,
) -> DocaError {
    guarded("doca_cc_producer_create", || {
        let Some(c) = conn(cc_connection) else { return invalid() };
        if let Err(e) = crate::check::non_null(producer, "producer") {
            return e;
        }
        match Producer::create(&c.conn) {
            Ok(p) => out(producer, hand_out(&PRODUCERS, p)),
            Err(e) => e.code(),
        }
    })
}

/// `doca_cc_producer_destroy`: Idle only (`BAD_STATE`, the producer stays).
///
/// # Safety
/// `producer` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_producer_destroy(producer: *mut DocaCcProducer) -> DocaError {
    // SAFETY: PRODUCERS only holds DocaCcProducer handles; the caller's contract.
    guarded("doca_cc_producer_destroy", || unsafe { destroy(&PRODUCERS, producer) })
}

/// `doca_cc_producer_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_cc_producer_as_ctx(producer: *mut DocaCcProducer) -> *mut DocaCtx {
    crate::shielded("doca_cc_producer_as_ctx", std::ptr::null_mut(), || {
        self::producer(producer).map_or(std::ptr::null_mut(), |p| p.ctx)
    })
}

/// `doca_cc_producer_get_id`.
///
/// # Safety
/// `id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_producer_get_id(producer: *const DocaCcProducer, id: *mut u32) -> DocaError {
    guarded("doca_cc_producer_get_id", || match self::producer(producer) {
        Some(p) => out(id, p.obj.id()),
        None => invalid(),
    })
}

/// `doca_cc_producer_task_send_set_conf`: Idle only.
#[no_mangle]
pub extern "C" fn doca_cc_producer_task_send_set_conf(
    producer: *mut DocaCcProducer,
    task_completion_cb: FastTaskCb,
    task_error_cb: FastTaskCb,
    num_send_tasks: u32,
) -> DocaError {
    guarded("doca_cc_producer_task_send_set_conf", || {
        let (Some(p), Some(done), Some(failed)) =
            (self::producer(producer), task_completion_cb, task_error_cb)
        else {
            return invalid();
        };
        let (w1, w2) = (Rc::downgrade(&p.tasks), Rc::downgrade(&p.tasks));
        let r = p.obj.task_send_set_conf(
            move |t: ProducerSendTask, td: Data, cd: Data| {
                complete(&w1, done, AnyTask::ProducerSend(t), td, cd)
            },
            move |t: ProducerSendTask, td: Data, cd: Data| {
                complete(&w2, failed, AnyTask::ProducerSend(t), td, cd)
            },
            num_send_tasks,
        );
        doca_core::Error::code_of(&r)
    })
}

/// `doca_cc_producer_task_send_alloc_init`: a task copying `buf`'s data into the next buffer
/// the peer's consumer `consumer_id` posted.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_producer_task_send_alloc_init(
    producer: *mut DocaCcProducer,
    buf: *mut DocaBuf,
    consumer_id: u32,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_cc_producer_task_send_alloc_init", || {
        let (Some(p), Some(b)) = (self::producer(producer), self::buf(buf)) else { return invalid() };
        if let Err(e) = crate::check::non_null(task, "task") {
            return e;
        }
        match p.obj.task_send_alloc_init(b, consumer_id) {
            Ok(t) => out(task, p.tasks.hand_out(AnyTask::ProducerSend(t), buf)),
            Err(e) => e.code(),
        }
    })
}

/// `doca_cc_producer_task_send_get_buf`.
#[no_mangle]
pub extern "C" fn doca_cc_producer_task_send_get_buf(task: *const DocaTask) -> *mut DocaBuf {
    crate::shielded("doca_cc_producer_task_send_get_buf", std::ptr::null_mut(), || {
        match producer_send(task, |_| ()) {
            Some(()) => self::task(task).map_or(std::ptr::null_mut(), |h| h.buf.get()),
            None => std::ptr::null_mut(),
        }
    })
}

/// `doca_cc_producer_task_send_set_buf`: checked when the task is submitted.
#[no_mangle]
pub extern "C" fn doca_cc_producer_task_send_set_buf(task: *mut DocaTask, buf: *mut DocaBuf) {
    crate::shielded("doca_cc_producer_task_send_set_buf", (), || {
        let Some(b) = self::buf(buf) else { return };
        if producer_send(task, |t| t.set_buf(b)).is_some() {
            if let Some(h) = self::task(task) {
                h.buf.set(buf);
            }
        }
    })
}

/// `doca_cc_producer_task_send_get_consumer_id`.
#[no_mangle]
pub extern "C" fn doca_cc_producer_task_send_get_consumer_id(task: *const DocaTask) -> u32 {
    crate::shielded("doca_cc_producer_task_send_get_consumer_id", 0, || {
        producer_send(task, ProducerSendTask::consumer_id).unwrap_or(0)
    })
}

/// `doca_cc_producer_task_send_set_consumer_id`: checked when the task is submitted.
#[no_mangle]
pub extern "C" fn doca_cc_producer_task_send_set_consumer_id(task: *mut DocaTask, consumer_id: u32) {
    crate::shielded("doca_cc_producer_task_send_set_consumer_id", (), || {
        producer_send(task, |t| t.set_consumer_id(consumer_id));
    })
}

/// `doca_cc_producer_task_send_as_task`: the same handle.
#[no_mangle]
pub extern "C" fn doca_cc_producer_task_send_as_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_cc_producer_task_send_as_task", task, Of::ProducerSend)
}

fn supported(
    name: &'static str,
    devinfo: *const DocaDevinfo,
    check: fn(&DevInfo) -> doca_core::Result<()>,
) -> DocaError {
    guarded(name, || match crate::dev::devinfo(devinfo) {
        Some(d) => doca_core::Error::code_of(&check(d)),
        None => invalid(),
    })
}

/// `doca_cc_consumer_cap_is_supported`.
#[no_mangle]
pub extern "C" fn doca_cc_consumer_cap_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    supported("doca_cc_consumer_cap_is_supported", devinfo, caps::consumer_is_supported)
}

/// `doca_cc_producer_cap_is_supported`.
#[no_mangle]
pub extern "C" fn doca_cc_producer_cap_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    supported("doca_cc_producer_cap_is_supported", devinfo, caps::producer_is_supported)
}

macro_rules! fast_caps {
    ($($(#[$doc:meta])* $name:ident => $spec:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `value` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name(devinfo: *const DocaDevinfo, value: *mut u32) -> DocaError {
            guarded(stringify!($name), || cap(devinfo, value, |d| caps::get(d, &caps::$spec)))
        }
    )*};
}

fast_caps! {
    /// `doca_cc_consumer_cap_get_max_num_tasks`.
    doca_cc_consumer_cap_get_max_num_tasks => MAX_FAST_PATH_TASKS;
    /// `doca_cc_consumer_cap_get_max_buf_size`.
    doca_cc_consumer_cap_get_max_buf_size => MAX_BUF_SIZE;
    /// `doca_cc_consumer_cap_get_max_consumers`: per connection.
    doca_cc_consumer_cap_get_max_consumers => MAX_CONSUMERS;
    /// `doca_cc_producer_cap_get_max_num_tasks`.
    doca_cc_producer_cap_get_max_num_tasks => MAX_FAST_PATH_TASKS;
    /// `doca_cc_producer_cap_get_max_buf_size`.
    doca_cc_producer_cap_get_max_buf_size => MAX_BUF_SIZE;
    /// `doca_cc_producer_cap_get_max_producers`: per connection.
    doca_cc_producer_cap_get_max_producers => MAX_PRODUCERS;
}

/// `doca_comch_producer_task_send_alloc_init` (DOCA 2.7+): with up to
/// `doca_comch_consumer_cap_get_max_imm_data_len` bytes of immediate data (NULL and 0: none).
///
/// # Safety
/// `imm_data` points to `imm_data_len` readable bytes (or is NULL with 0); `task` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comch_producer_task_send_alloc_init(
    producer: *mut DocaCcProducer,
    buf: *const DocaBuf,
    imm_data: *mut u8,
    imm_data_len: u32,
    consumer_id: u32,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_comch_producer_task_send_alloc_init", || {
        let (Some(p), Some(b)) = (self::producer(producer), self::buf(buf)) else { return invalid() };
        if let Err(e) = non_null(task, "out-parameter") {
            return e;
        }
        // Immediate data is at most IMM_MAX bytes (the capability can only lower it): a longer
        // length is refused before a byte is read.
        let max = doca_cc::proto::records::IMM_MAX;
        // SAFETY: readable for the call (the caller's contract).
        let imm = match unsafe { bytes(imm_data.cast(), imm_data_len as usize, max, "immediate data") } {
            Ok(imm) => imm,
            Err(e) => return e,
        };
        match p.obj.task_send_alloc_init_imm(b, imm, consumer_id) {
            // the task keeps the buffer's handle (a checked token, never written through)
            Ok(t) => out(task, p.tasks.hand_out(AnyTask::ProducerSend(t), buf.cast_mut())),
            Err(e) => e.code(),
        }
    })
}

/// `doca_comch_consumer_task_post_recv_get_imm_data` (DOCA 2.7+): the immediate data the
/// producer sent (valid until the task is submitted again or freed); NULL for an invalid task.
#[no_mangle]
pub extern "C" fn doca_comch_consumer_task_post_recv_get_imm_data(task: *const DocaTask) -> *const u8 {
    crate::shielded("doca_comch_consumer_task_post_recv_get_imm_data", std::ptr::null(), || {
        let Some(imm) = post_recv(task, PostRecvTask::imm_data) else { return std::ptr::null() };
        let Some(h) = self::task(task) else { return std::ptr::null() };
        let mut bytes = [0u8; doca_cc::proto::records::IMM_MAX];
        bytes[..imm.len()].copy_from_slice(&imm);
        h.imm.set(bytes);
        h.imm.as_ptr().cast()
    })
}

/// `doca_comch_consumer_task_post_recv_get_imm_data_len` (DOCA 2.7+).
#[no_mangle]
pub extern "C" fn doca_comch_consumer_task_post_recv_get_imm_data_len(task: *const DocaTask) -> u32 {
    crate::shielded("doca_comch_consumer_task_post_recv_get_imm_data_len", 0, || {
        post_recv(task, |t| t.imm_data().len() as u32).unwrap_or(0)
    })
}

fast_caps! {
    /// `doca_comch_consumer_cap_get_max_imm_data_len` (DOCA 2.7+).
    doca_comch_consumer_cap_get_max_imm_data_len => MAX_IMM_DATA_LEN;
}
