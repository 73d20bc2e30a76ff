//! `doca_sync_event.h`: the whole header of DOCA 2.5/2.6 (65 functions, `*_dpu` names and the
//! `wait_gt` task) and the names 2.7+ added (`*_remote_pci`, the `wait_eq`/`wait_neq` tasks,
//! the blocking `wait_eq`/`wait_neq` and their `_yield` forms, `get_dpa_handle`...). The two
//! name sets are different symbols with the same shapes. DPA, GPU and remote-network
//! (RDMA) events answer `DOCA_ERROR_NOT_SUPPORTED`, as their capabilities say. See the
//! `doca_sync_event` crate for the shared page, the waits and the codes.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;

use doca_core::{Data, Error};
use doca_sync_event::{
    caps, Cmp, GetTask, Location, NotifyAddTask, NotifySetTask, SyncEvent, WaitEqTask, WaitGtTask, WaitMode,
    WaitNeqTask, WaitTask, EXPORT_LEN,
};

use crate::check::{bytes, non_null, note, out};
use crate::ctx::{DocaCtx, DocaData, CTXS};
use crate::dev::{DocaDev, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::libctx::{self, LibCtx, Library};
use crate::task::{as_task, complete, complete_out, task, AnyTask, DocaTask, Of, TaskTable};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// The event and the last export blob it gave (C reads it until the next export or destroy).
pub struct Se {
    ev: SyncEvent,
    blob: RefCell<Vec<u8>>,
}

/// `struct doca_sync_event`.
pub type DocaSyncEvent = LibCtx<Se>;

/// `struct doca_sync_event_remote_net`: an RDMA peer's event (the RDMA library's remote sync
/// event tasks name it).
pub struct DocaSyncEventRemoteNet(pub(crate) doca_sync_event::RemoteNet);

static REMOTE_NETS: Handles = Handles::new(Kind::SyncEventRemoteNet);

/// The remote net event behind a handle C gave.
pub(crate) fn remote_net<'a>(p: *const DocaSyncEventRemoteNet) -> Option<&'a DocaSyncEventRemoteNet> {
    // SAFETY: REMOTE_NETS only holds DocaSyncEventRemoteNet handles.
    unsafe { REMOTE_NETS.get(p) }
}
/// `struct doca_dpa` / `struct doca_gpu`: never handed out by this library.
pub enum DocaDpaOrGpu {}

impl Library for Se {
    fn ctx(&self) -> doca_core::Ctx {
        self.ev.ctx_unchecked()
    }
    fn destroy(self) -> doca_core::Result<()> {
        self.ev.destroy().map_err(|r| r.error)
    }
}

static EVENTS: Handles = Handles::new(Kind::SyncEvent);

fn event<'a>(p: *const DocaSyncEvent) -> Option<&'a DocaSyncEvent> {
    libctx::get(&EVENTS, p)
}

/// A task callback of any sync event task type (same C shape).
pub type SeTaskCb = Option<unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData)>;

fn hand_out(ev: SyncEvent, out_p: *mut *mut DocaSyncEvent) -> DocaError {
    let se = Se { ev, blob: RefCell::new(Vec::new()) };
    let ctx = CTXS.add(DocaCtx(se.ctx()));
    let tasks = Rc::new(TaskTable::default());
    tasks.1.set(ctx);
    out(out_p, EVENTS.add(LibCtx { obj: se, ctx, tasks }))
}

fn code(r: doca_core::Result<()>) -> DocaError {
    Error::code_of(&r)
}

/// `doca_sync_event_create`: a CPU event of this process (value 0).
///
/// # Safety
/// `event` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_create(event: *mut *mut DocaSyncEvent) -> DocaError {
    guarded("doca_sync_event_create", || {
        if let Err(e) = non_null(event, "event") {
            return e;
        }
        match SyncEvent::create() {
            Ok(ev) => hand_out(ev, event),
            Err(e) => e.code(),
        }
    })
}

/// `doca_sync_event_create_from_export`: the event another process exported (its blob of
/// `sz` bytes). `INVALID_VALUE` for a malformed blob, `NOT_FOUND` when its exporter is gone
/// or destroyed it.
///
/// # Safety
/// `data` points to `sz` readable bytes; `event` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_create_from_export(
    dev: *mut DocaDev,
    data: *const u8,
    sz: usize,
    event: *mut *mut DocaSyncEvent,
) -> DocaError {
    guarded("doca_sync_event_create_from_export", || {
        let Some(d) = crate::dev::dev(dev) else { return invalid() };
        // SAFETY: the caller's contract for data and sz (at most EXPORT_LEN bytes read).
        let blob = match unsafe { bytes(data.cast(), sz, EXPORT_LEN, "export blob") } {
            Ok(b) => b,
            Err(e) => return e,
        };
        if let Err(e) = non_null(event, "event") {
            return e;
        }
        match SyncEvent::create_from_export(&d.dev, blob) {
            Ok(ev) => hand_out(ev, event),
            Err(e) => e.code(),
        }
    })
}

fn cap(
    name: &'static str,
    devinfo: *const DocaDevinfo,
    f: fn(&doca_core::DevInfo) -> doca_core::Result<()>,
) -> DocaError {
    guarded(name, || match crate::dev::devinfo(devinfo) {
        Some(d) => code(f(d)),
        None => invalid(),
    })
}

/// `doca_sync_event_cap_is_create_from_export_supported`: host and DPU devices.
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_is_create_from_export_supported(
    devinfo: *const DocaDevinfo,
) -> DocaError {
    cap("doca_sync_event_cap_is_create_from_export_supported", devinfo, caps::is_create_from_export_supported)
}

/// `doca_sync_event_cap_remote_net_is_create_from_export_supported`: host and DPU devices.
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_remote_net_is_create_from_export_supported(
    devinfo: *const DocaDevinfo,
) -> DocaError {
    cap(
        "doca_sync_event_cap_remote_net_is_create_from_export_supported",
        devinfo,
        caps::is_remote_net_supported,
    )
}

/// Refuses what needs a DPA, a GPU or a remote network: `NOT_SUPPORTED` once the arguments
/// passed the generic checks.
fn unsupported(what: &str) -> DocaError {
    note(|| format!("{what}: not emulated (no DPA, GPU or remote network here; its capability says so)"));
    Error::NotSupported.code()
}

/// `doca_sync_event_remote_net_create_from_export`: the event an RDMA peer exported with
/// `doca_sync_event_export_to_remote_net` (`INVALID_VALUE` for another blob, `NOT_FOUND`
/// when its owner is gone).
///
/// # Safety
/// `data` points to `sz` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_remote_net_create_from_export(
    dev: *mut DocaDev,
    data: *const u8,
    sz: usize,
    event: *mut *mut DocaSyncEventRemoteNet,
) -> DocaError {
    guarded("doca_sync_event_remote_net_create_from_export", || {
        let Some(d) = crate::dev::dev(dev) else { return invalid() };
        // SAFETY: the caller's contract for data and sz (at most EXPORT_LEN bytes read; a
        // longer or empty blob is refused before any slice is made).
        let blob = match unsafe { bytes(data.cast(), sz, EXPORT_LEN, "remote net export blob") } {
            Ok(b) => b,
            Err(e) => return e,
        };
        if let Err(e) = non_null(event, "event") {
            return e;
        }
        match doca_sync_event::RemoteNet::create_from_export(&d.dev, blob) {
            Ok(r) => out(event, REMOTE_NETS.add(DocaSyncEventRemoteNet(r))),
            Err(e) => e.code(),
        }
    })
}

/// `doca_sync_event_destroy`: a context must be Idle (`BAD_STATE`); an exporter's destroy
/// revokes the event for its importers (`NOT_FOUND` there).
///
/// # Safety
/// `event` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_destroy(event: *mut DocaSyncEvent) -> DocaError {
    guarded("doca_sync_event_destroy", || {
        // SAFETY: the caller's contract, as `libctx::destroy` states it.
        unsafe { libctx::destroy(&EVENTS, event) }
    })
}

/// `doca_sync_event_remote_net_destroy`: the handle goes (tasks that name the event keep
/// it until they are freed).
///
/// # Safety
/// `event` is NULL or a handle of this library, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_remote_net_destroy(event: *mut DocaSyncEventRemoteNet) -> DocaError {
    guarded("doca_sync_event_remote_net_destroy", || {
        // SAFETY: REMOTE_NETS only holds DocaSyncEventRemoteNet handles; the caller's contract.
        match unsafe { REMOTE_NETS.remove(event) } {
            Some(_) => 0,
            None => invalid(),
        }
    })
}

fn with_event(name: &'static str, event: *mut DocaSyncEvent, f: impl FnOnce(&Se) -> DocaError) -> DocaError {
    guarded(name, || match self::event(event) {
        Some(e) => f(&e.obj),
        None => invalid(),
    })
}

fn cpu_location(
    event: *mut DocaSyncEvent,
    dev: *mut DocaDev,
    publisher: bool,
    name: &'static str,
) -> DocaError {
    with_event(name, event, |se| {
        let Some(d) = crate::dev::dev(dev) else { return invalid() };
        let loc = Location::Cpu(d.dev.as_devinfo().pci_addr());
        code(if publisher { se.ev.add_publisher_location(loc) } else { se.ev.add_subscriber_location(loc) })
    })
}

fn remote_location(event: *mut DocaSyncEvent, publisher: bool, name: &'static str) -> DocaError {
    with_event(name, event, |se| {
        let loc = if name.ends_with("remote_net") { Location::RemoteNet } else { Location::RemotePci };
        code(if publisher { se.ev.add_publisher_location(loc) } else { se.ev.add_subscriber_location(loc) })
    })
}

fn dpa_gpu(
    event: *mut DocaSyncEvent,
    other: *const DocaDpaOrGpu,
    name: &'static str,
    what: &str,
) -> DocaError {
    with_event(name, event, |_| {
        if other.is_null() {
            return crate::check::refuse(|| format!("NULL {what}"));
        }
        unsupported(what)
    })
}

/// `doca_sync_event_add_publisher_location_cpu`.
#[no_mangle]
pub extern "C" fn doca_sync_event_add_publisher_location_cpu(
    event: *mut DocaSyncEvent,
    dev: *mut DocaDev,
) -> DocaError {
    cpu_location(event, dev, true, "doca_sync_event_add_publisher_location_cpu")
}

/// `doca_sync_event_add_publisher_location_dpa`: `NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_sync_event_add_publisher_location_dpa(
    event: *mut DocaSyncEvent,
    dpa: *mut DocaDpaOrGpu,
) -> DocaError {
    dpa_gpu(event, dpa, "doca_sync_event_add_publisher_location_dpa", "DPA")
}

/// `doca_sync_event_add_publisher_location_gpu`: `NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_sync_event_add_publisher_location_gpu(
    event: *mut DocaSyncEvent,
    gpu: *mut DocaDpaOrGpu,
) -> DocaError {
    dpa_gpu(event, gpu, "doca_sync_event_add_publisher_location_gpu", "GPU")
}

/// `doca_sync_event_add_publisher_location_dpu` (2.5/2.6).
#[no_mangle]
pub extern "C" fn doca_sync_event_add_publisher_location_dpu(event: *mut DocaSyncEvent) -> DocaError {
    remote_location(event, true, "doca_sync_event_add_publisher_location_dpu")
}

/// `doca_sync_event_add_publisher_location_remote_pci` (2.7+).
#[no_mangle]
pub extern "C" fn doca_sync_event_add_publisher_location_remote_pci(event: *mut DocaSyncEvent) -> DocaError {
    remote_location(event, true, "doca_sync_event_add_publisher_location_remote_pci")
}

/// `doca_sync_event_add_publisher_location_remote_net`: an RDMA peer sets and adds.
#[no_mangle]
pub extern "C" fn doca_sync_event_add_publisher_location_remote_net(event: *mut DocaSyncEvent) -> DocaError {
    remote_location(event, true, "doca_sync_event_add_publisher_location_remote_net")
}

/// `doca_sync_event_add_subscriber_location_cpu`.
#[no_mangle]
pub extern "C" fn doca_sync_event_add_subscriber_location_cpu(
    event: *mut DocaSyncEvent,
    dev: *mut DocaDev,
) -> DocaError {
    cpu_location(event, dev, false, "doca_sync_event_add_subscriber_location_cpu")
}

/// `doca_sync_event_add_subscriber_location_dpa`: `NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_sync_event_add_subscriber_location_dpa(
    event: *mut DocaSyncEvent,
    dpa: *mut DocaDpaOrGpu,
) -> DocaError {
    dpa_gpu(event, dpa, "doca_sync_event_add_subscriber_location_dpa", "DPA")
}

/// `doca_sync_event_add_subscriber_location_gpu`: `NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_sync_event_add_subscriber_location_gpu(
    event: *mut DocaSyncEvent,
    gpu: *mut DocaDpaOrGpu,
) -> DocaError {
    dpa_gpu(event, gpu, "doca_sync_event_add_subscriber_location_gpu", "GPU")
}

/// `doca_sync_event_add_subscriber_location_dpu` (2.5/2.6).
#[no_mangle]
pub extern "C" fn doca_sync_event_add_subscriber_location_dpu(event: *mut DocaSyncEvent) -> DocaError {
    remote_location(event, false, "doca_sync_event_add_subscriber_location_dpu")
}

/// `doca_sync_event_add_subscriber_location_remote_pci` (2.7+).
#[no_mangle]
pub extern "C" fn doca_sync_event_add_subscriber_location_remote_pci(event: *mut DocaSyncEvent) -> DocaError {
    remote_location(event, false, "doca_sync_event_add_subscriber_location_remote_pci")
}

/// `doca_sync_event_set_addr`: the value lives at `addr` (8 bytes, 8-aligned, else
/// `INVALID_VALUE`) from now on; before start (`BAD_STATE`). Such an event cannot be
/// exported (`NOT_SUPPORTED` at export).
///
/// # Safety
/// `addr` is NULL or points to 8 bytes that stay valid, and are accessed only atomically,
/// as long as the event lives (DOCA's contract).
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_set_addr(event: *mut DocaSyncEvent, addr: *mut u64) -> DocaError {
    with_event("doca_sync_event_set_addr", event, |se| {
        if let Err(e) = non_null(addr, "addr") {
            return e;
        }
        if (addr as usize) % 8 != 0 {
            return crate::check::refuse(|| format!("addr {addr:p} is not 8-byte aligned"));
        }
        // non-NULL, aligned, valid for the event's life and accessed atomically only (the
        // caller's contract, above).
        // SAFETY: see above.
        let value: &'static AtomicU64 = unsafe { AtomicU64::from_ptr(addr) };
        code(se.ev.set_addr(value))
    })
}

/// `doca_sync_event_start`: standalone mode (`NOT_PERMITTED` after `as_ctx`).
#[no_mangle]
pub extern "C" fn doca_sync_event_start(event: *mut DocaSyncEvent) -> DocaError {
    with_event("doca_sync_event_start", event, |se| code(se.ev.start()))
}

/// `doca_sync_event_stop`: ends standalone mode (`BAD_STATE` when not started).
#[no_mangle]
pub extern "C" fn doca_sync_event_stop(event: *mut DocaSyncEvent) -> DocaError {
    with_event("doca_sync_event_stop", event, |se| code(se.ev.stop()))
}

/// `doca_sync_event_as_ctx`: NULL for an event started standalone (logged).
#[no_mangle]
pub extern "C" fn doca_sync_event_as_ctx(event: *mut DocaSyncEvent) -> *mut DocaCtx {
    crate::shielded("doca_sync_event_as_ctx", std::ptr::null_mut(), || {
        let Some(e) = self::event(event) else { return std::ptr::null_mut() };
        match e.obj.ev.as_ctx() {
            Ok(_) => e.ctx,
            Err(err) => {
                note(|| format!("{} (the event was started standalone)", err.name()));
                std::ptr::null_mut()
            }
        }
    })
}

/// `doca_sync_event_cap_task_get_is_supported`.
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_task_get_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    cap("doca_sync_event_cap_task_get_is_supported", devinfo, caps::task_is_supported)
}
/// `doca_sync_event_cap_task_notify_set_is_supported`.
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_task_notify_set_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    cap("doca_sync_event_cap_task_notify_set_is_supported", devinfo, caps::task_is_supported)
}
/// `doca_sync_event_cap_task_notify_add_is_supported`.
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_task_notify_add_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    cap("doca_sync_event_cap_task_notify_add_is_supported", devinfo, caps::task_is_supported)
}
/// `doca_sync_event_cap_task_wait_gt_is_supported` (2.5/2.6).
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_task_wait_gt_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    cap("doca_sync_event_cap_task_wait_gt_is_supported", devinfo, caps::task_is_supported)
}
/// `doca_sync_event_cap_task_wait_eq_is_supported` (2.7+).
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_task_wait_eq_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    cap("doca_sync_event_cap_task_wait_eq_is_supported", devinfo, caps::task_is_supported)
}
/// `doca_sync_event_cap_task_wait_neq_is_supported` (2.7+).
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_task_wait_neq_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    cap("doca_sync_event_cap_task_wait_neq_is_supported", devinfo, caps::task_is_supported)
}

/// The generic part of the six `*_set_conf`: the event, both callbacks (`INVALID_VALUE`
/// for NULL), then the library's own checks (Idle only: `BAD_STATE`).
fn set_conf(
    name: &'static str,
    event: *mut DocaSyncEvent,
    done: SeTaskCb,
    failed: SeTaskCb,
    f: impl FnOnce(
        &LibCtx<Se>,
        unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData),
        unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData),
    ) -> doca_core::Result<()>,
) -> DocaError {
    guarded(name, || {
        let (Some(e), Some(done), Some(failed)) = (self::event(event), done, failed) else {
            return invalid();
        };
        code(f(e, done, failed))
    })
}

/// `doca_sync_event_task_get_set_conf`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_get_set_conf(
    event: *mut DocaSyncEvent,
    completion_cb: SeTaskCb,
    error_cb: SeTaskCb,
    num_tasks: u32,
) -> DocaError {
    set_conf("doca_sync_event_task_get_set_conf", event, completion_cb, error_cb, |e, done, failed| {
        let (w1, w2) = (Rc::downgrade(&e.tasks), Rc::downgrade(&e.tasks));
        e.obj.ev.task_get_set_conf(
            move |t: GetTask, td: Data, cd: Data| {
                let v = t.value();
                complete_out(&w1, done, AnyTask::SeGet(t), td, cd, Some(v))
            },
            move |t: GetTask, td: Data, cd: Data| complete(&w2, failed, AnyTask::SeGet(t), td, cd),
            num_tasks,
        )
    })
}

/// `doca_sync_event_task_notify_set_set_conf`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_notify_set_set_conf(
    event: *mut DocaSyncEvent,
    completion_cb: SeTaskCb,
    error_cb: SeTaskCb,
    num_tasks: u32,
) -> DocaError {
    set_conf("doca_sync_event_task_notify_set_set_conf", event, completion_cb, error_cb, |e, done, failed| {
        let (w1, w2) = (Rc::downgrade(&e.tasks), Rc::downgrade(&e.tasks));
        e.obj.ev.task_notify_set_set_conf(
            move |t: NotifySetTask, td: Data, cd: Data| complete(&w1, done, AnyTask::SeNotifySet(t), td, cd),
            move |t: NotifySetTask, td: Data, cd: Data| {
                complete(&w2, failed, AnyTask::SeNotifySet(t), td, cd)
            },
            num_tasks,
        )
    })
}

/// `doca_sync_event_task_notify_add_set_conf`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_notify_add_set_conf(
    event: *mut DocaSyncEvent,
    completion_cb: SeTaskCb,
    error_cb: SeTaskCb,
    num_tasks: u32,
) -> DocaError {
    set_conf("doca_sync_event_task_notify_add_set_conf", event, completion_cb, error_cb, |e, done, failed| {
        let (w1, w2) = (Rc::downgrade(&e.tasks), Rc::downgrade(&e.tasks));
        e.obj.ev.task_notify_add_set_conf(
            move |t: NotifyAddTask, td: Data, cd: Data| {
                let v = t.fetched();
                complete_out(&w1, done, AnyTask::SeNotifyAdd(t), td, cd, Some(v))
            },
            move |t: NotifyAddTask, td: Data, cd: Data| {
                complete(&w2, failed, AnyTask::SeNotifyAdd(t), td, cd)
            },
            num_tasks,
        )
    })
}

macro_rules! wait_conf {
    ($fn_name:ident, $method:ident, $task:ty, $variant:ident) => {
        #[doc = concat!("`", stringify!($fn_name), "`.")]
        #[no_mangle]
        pub extern "C" fn $fn_name(
            event: *mut DocaSyncEvent,
            completion_cb: SeTaskCb,
            error_cb: SeTaskCb,
            num_tasks: u32,
        ) -> DocaError {
            set_conf(stringify!($fn_name), event, completion_cb, error_cb, |e, done, failed| {
                let (w1, w2) = (Rc::downgrade(&e.tasks), Rc::downgrade(&e.tasks));
                e.obj.ev.$method(
                    move |t: $task, td: Data, cd: Data| complete(&w1, done, AnyTask::$variant(t), td, cd),
                    move |t: $task, td: Data, cd: Data| complete(&w2, failed, AnyTask::$variant(t), td, cd),
                    num_tasks,
                )
            })
        }
    };
}
wait_conf!(doca_sync_event_task_wait_gt_set_conf, task_wait_gt_set_conf, WaitGtTask, SeWaitGt);
wait_conf!(doca_sync_event_task_wait_eq_set_conf, task_wait_eq_set_conf, WaitEqTask, SeWaitEq);
wait_conf!(doca_sync_event_task_wait_neq_set_conf, task_wait_neq_set_conf, WaitNeqTask, SeWaitNeq);

/// Hands a task out through `task` (checked non-NULL first), with its value pointer.
fn alloc(
    event: *mut DocaSyncEvent,
    task: *mut *mut DocaTask,
    out_ptr: *mut u64,
    make: impl FnOnce(&SyncEvent) -> doca_core::Result<AnyTask>,
) -> DocaError {
    let Some(e) = self::event(event) else { return invalid() };
    if let Err(err) = non_null(task, "task") {
        return err;
    }
    match make(&e.obj.ev) {
        Ok(t) => {
            let h = e.tasks.hand_out(t, std::ptr::null_mut());
            if let Some(handle) = self::task(h) {
                handle.out.set(out_ptr);
            }
            out(task, h)
        }
        Err(err) => err.code(),
    }
}

/// `doca_sync_event_task_get_alloc_init`: `*ret_val_ptr` receives the value before the
/// completion callback runs. Running only (`BAD_STATE`); every task out: `NO_MEMORY`.
///
/// # Safety
/// `task` is NULL or writable; `ret_val_ptr` is NULL or writable until the task completes.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_task_get_alloc_init(
    event: *mut DocaSyncEvent,
    ret_val_ptr: *mut u64,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_sync_event_task_get_alloc_init", || {
        alloc(event, task, ret_val_ptr, |ev| ev.task_get_alloc_init(user_data.to_data()).map(AnyTask::SeGet))
    })
}

/// `doca_sync_event_task_notify_set_alloc_init`.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_task_notify_set_alloc_init(
    event: *mut DocaSyncEvent,
    set_val: u64,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_sync_event_task_notify_set_alloc_init", || {
        alloc(event, task, std::ptr::null_mut(), |ev| {
            ev.task_notify_set_alloc_init(set_val, user_data.to_data()).map(AnyTask::SeNotifySet)
        })
    })
}

/// `doca_sync_event_task_notify_add_alloc_init`: `*fetched_val_ptr` receives the value
/// before the addition, before the completion callback runs.
///
/// # Safety
/// `task` is NULL or writable; `fetched_val_ptr` is NULL or writable until the task completes.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_task_notify_add_alloc_init(
    event: *mut DocaSyncEvent,
    inc_val: u64,
    fetched_val_ptr: *mut u64,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_sync_event_task_notify_add_alloc_init", || {
        alloc(event, task, fetched_val_ptr, |ev| {
            ev.task_notify_add_alloc_init(inc_val, user_data.to_data()).map(AnyTask::SeNotifyAdd)
        })
    })
}

macro_rules! wait_alloc {
    ($fn_name:ident, $method:ident, $variant:ident) => {
        #[doc = concat!("`", stringify!($fn_name), "`: the mask is checked (`INVALID_VALUE`).")]
        ///
        /// # Safety
        /// `task` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $fn_name(
            event: *mut DocaSyncEvent,
            wait_val: u64,
            mask: u64,
            user_data: DocaData,
            task: *mut *mut DocaTask,
        ) -> DocaError {
            guarded(stringify!($fn_name), || {
                alloc(event, task, std::ptr::null_mut(), |ev| {
                    ev.$method(wait_val, mask, user_data.to_data()).map(AnyTask::$variant)
                })
            })
        }
    };
}
wait_alloc!(doca_sync_event_task_wait_gt_alloc_init, task_wait_gt_alloc_init, SeWaitGt);
wait_alloc!(doca_sync_event_task_wait_eq_alloc_init, task_wait_eq_alloc_init, SeWaitEq);
wait_alloc!(doca_sync_event_task_wait_neq_alloc_init, task_wait_neq_alloc_init, SeWaitNeq);

/// `doca_sync_event_task_get_as_doca_task`: the same handle.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_get_as_doca_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_sync_event_task_get_as_doca_task", task, Of::SeGet)
}
/// `doca_sync_event_task_notify_set_as_doca_task`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_notify_set_as_doca_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_sync_event_task_notify_set_as_doca_task", task, Of::SeNotifySet)
}
/// `doca_sync_event_task_notify_add_as_doca_task`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_notify_add_as_doca_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_sync_event_task_notify_add_as_doca_task", task, Of::SeNotifyAdd)
}
/// `doca_sync_event_task_wait_gt_as_doca_task`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_wait_gt_as_doca_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_sync_event_task_wait_gt_as_doca_task", task, Of::SeWaitGt)
}
/// `doca_sync_event_task_wait_eq_as_doca_task`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_wait_eq_as_doca_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_sync_event_task_wait_eq_as_doca_task", task, Of::SeWaitEq)
}
/// `doca_sync_event_task_wait_neq_as_doca_task`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_wait_neq_as_doca_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_sync_event_task_wait_neq_as_doca_task", task, Of::SeWaitNeq)
}

/// The task behind `p` when it is held by the application and of kind `of`.
fn held<R>(p: *const DocaTask, of: Of, f: impl FnOnce(&AnyTask) -> Option<R>) -> Option<R> {
    let h = task(p)?;
    h.with(|t| f(t)).flatten().or_else(|| {
        note(|| format!("not a {of:?} task held by the application (submitted, or another kind)"));
        None
    })
}

/// The value pointer of a get or notify-add task.
fn out_ptr(p: *const DocaTask, of: Of, set: Option<*mut u64>) -> *mut u64 {
    let ok = held(p, of, |t| match (t, of) {
        (AnyTask::SeGet(_), Of::SeGet) | (AnyTask::SeNotifyAdd(_), Of::SeNotifyAdd) => Some(()),
        _ => None,
    });
    match (ok, task(p)) {
        (Some(()), Some(h)) => {
            if let Some(v) = set {
                h.out.set(v);
            }
            h.out.get()
        }
        _ => std::ptr::null_mut(),
    }
}

/// `doca_sync_event_task_get_set_ret_val_ptr`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_get_set_ret_val_ptr(task: *mut DocaTask, ret_val_ptr: *mut u64) {
    crate::shielded("doca_sync_event_task_get_set_ret_val_ptr", (), || {
        out_ptr(task, Of::SeGet, Some(ret_val_ptr));
    })
}

/// `doca_sync_event_task_get_get_ret_val_ptr`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_get_get_ret_val_ptr(task: *const DocaTask) -> *mut u64 {
    crate::shielded("doca_sync_event_task_get_get_ret_val_ptr", std::ptr::null_mut(), || {
        out_ptr(task, Of::SeGet, None)
    })
}

/// `doca_sync_event_task_notify_set_set_set_val`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_notify_set_set_set_val(task: *mut DocaTask, set_val: u64) {
    crate::shielded("doca_sync_event_task_notify_set_set_set_val", (), || {
        held(task, Of::SeNotifySet, |t| match t {
            AnyTask::SeNotifySet(t) => {
                t.set_set_val(set_val);
                Some(())
            }
            _ => None,
        });
    })
}

/// `doca_sync_event_task_notify_set_get_set_val`: 0 for anything but a notify-set task.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_notify_set_get_set_val(task: *const DocaTask) -> u64 {
    crate::shielded("doca_sync_event_task_notify_set_get_set_val", 0, || {
        held(task, Of::SeNotifySet, |t| match t {
            AnyTask::SeNotifySet(t) => Some(t.set_val()),
            _ => None,
        })
        .unwrap_or(0)
    })
}

/// `doca_sync_event_task_notify_add_set_inc_val`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_notify_add_set_inc_val(task: *mut DocaTask, inc_val: u64) {
    crate::shielded("doca_sync_event_task_notify_add_set_inc_val", (), || {
        held(task, Of::SeNotifyAdd, |t| match t {
            AnyTask::SeNotifyAdd(t) => {
                t.set_inc_val(inc_val);
                Some(())
            }
            _ => None,
        });
    })
}

/// `doca_sync_event_task_notify_add_get_inc_val`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_notify_add_get_inc_val(task: *const DocaTask) -> u64 {
    crate::shielded("doca_sync_event_task_notify_add_get_inc_val", 0, || {
        held(task, Of::SeNotifyAdd, |t| match t {
            AnyTask::SeNotifyAdd(t) => Some(t.inc_val()),
            _ => None,
        })
        .unwrap_or(0)
    })
}

/// `doca_sync_event_task_notify_add_set_fetched_val_ptr`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_notify_add_set_fetched_val_ptr(
    task: *mut DocaTask,
    fetched_val_ptr: *mut u64,
) {
    crate::shielded("doca_sync_event_task_notify_add_set_fetched_val_ptr", (), || {
        out_ptr(task, Of::SeNotifyAdd, Some(fetched_val_ptr));
    })
}

/// `doca_sync_event_task_notify_add_get_fetched_val_ptr`.
#[no_mangle]
pub extern "C" fn doca_sync_event_task_notify_add_get_fetched_val_ptr(task: *const DocaTask) -> *mut u64 {
    crate::shielded("doca_sync_event_task_notify_add_get_fetched_val_ptr", std::ptr::null_mut(), || {
        out_ptr(task, Of::SeNotifyAdd, None)
    })
}

/// The wait task behind `p` (any of the three kinds, as `of` says).
fn wait_task<R>(p: *const DocaTask, of: Of, f: impl FnOnce(&dyn WaitTask) -> R) -> Option<R> {
    held(p, of, |t| match (t, of) {
        (AnyTask::SeWaitGt(t), Of::SeWaitGt) => Some(f(t)),
        (AnyTask::SeWaitEq(t), Of::SeWaitEq) => Some(f(t)),
        (AnyTask::SeWaitNeq(t), Of::SeWaitNeq) => Some(f(t)),
        _ => None,
    })
}

macro_rules! wait_accessors {
    ($of:ident, $set_val:ident, $get_val:ident, $set_mask:ident, $get_mask:ident) => {
        #[doc = concat!("`", stringify!($set_val), "`.")]
        #[no_mangle]
        pub extern "C" fn $set_val(task: *mut DocaTask, wait_val: u64) {
            crate::shielded(stringify!($set_val), (), || {
                wait_task(task, Of::$of, |t| t.set_wait_val(wait_val));
            })
        }
        #[doc = concat!("`", stringify!($get_val), "`: 0 for another kind of task.")]
        #[no_mangle]
        pub extern "C" fn $get_val(task: *const DocaTask) -> u64 {
            crate::shielded(stringify!($get_val), 0, || {
                wait_task(task, Of::$of, |t| t.wait_val()).unwrap_or(0)
            })
        }
        #[doc = concat!("`", stringify!($set_mask), "`: checked at submission (`INVALID_VALUE`).")]
        #[no_mangle]
        pub extern "C" fn $set_mask(task: *mut DocaTask, mask: u64) {
            crate::shielded(stringify!($set_mask), (), || {
                wait_task(task, Of::$of, |t| t.set_mask(mask));
            })
        }
        #[doc = concat!("`", stringify!($get_mask), "`: 0 for another kind of task.")]
        #[no_mangle]
        pub extern "C" fn $get_mask(task: *const DocaTask) -> u64 {
            crate::shielded(stringify!($get_mask), 0, || wait_task(task, Of::$of, |t| t.mask()).unwrap_or(0))
        }
    };
}
wait_accessors!(
    SeWaitGt,
    doca_sync_event_task_wait_gt_set_wait_val,
    doca_sync_event_task_wait_gt_get_wait_val,
    doca_sync_event_task_wait_gt_set_mask,
    doca_sync_event_task_wait_gt_get_mask
);
wait_accessors!(
    SeWaitEq,
    doca_sync_event_task_wait_eq_set_wait_val,
    doca_sync_event_task_wait_eq_get_wait_val,
    doca_sync_event_task_wait_eq_set_mask,
    doca_sync_event_task_wait_eq_get_mask
);
wait_accessors!(
    SeWaitNeq,
    doca_sync_event_task_wait_neq_set_wait_val,
    doca_sync_event_task_wait_neq_get_wait_val,
    doca_sync_event_task_wait_neq_set_mask,
    doca_sync_event_task_wait_neq_get_mask
);

/// The export blob, kept in the event's handle until the next export or destroy.
fn export(
    name: &'static str,
    event: *mut DocaSyncEvent,
    dev: *mut DocaDev,
    data: *mut *const u8,
    sz: *mut usize,
    how: fn(&SyncEvent, &doca_core::Dev) -> doca_core::Result<Vec<u8>>,
) -> DocaError {
    with_event(name, event, |se| {
        let Some(d) = crate::dev::dev(dev) else { return invalid() };
        if let Err(e) = non_null(data, "data").and_then(|()| non_null(sz, "sz")) {
            return e;
        }
        match how(&se.ev, &d.dev) {
            Ok(blob) => {
                let mut b = se.blob.borrow_mut();
                *b = blob;
                let (p, n) = (b.as_ptr(), b.len());
                out(data, p);
                out(sz, n)
            }
            Err(e) => e.code(),
        }
    })
}

/// `doca_sync_event_export_to_dpu` (2.5/2.6): host devices only (`NOT_SUPPORTED` on the
/// DPU's). The blob stays valid until the next export of this event or its destroy.
///
/// # Safety
/// `data` and `sz` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_export_to_dpu(
    event: *mut DocaSyncEvent,
    dev: *mut DocaDev,
    data: *mut *const u8,
    sz: *mut usize,
) -> DocaError {
    export("doca_sync_event_export_to_dpu", event, dev, data, sz, SyncEvent::export_to_dpu)
}

/// `doca_sync_event_export_to_remote_pci` (2.7+): from either side.
///
/// # Safety
/// `data` and `sz` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_export_to_remote_pci(
    event: *mut DocaSyncEvent,
    dev: *mut DocaDev,
    data: *mut *const u8,
    sz: *mut usize,
) -> DocaError {
    export("doca_sync_event_export_to_remote_pci", event, dev, data, sz, SyncEvent::export_to_remote_pci)
}

/// `doca_sync_event_cap_is_export_to_dpu_supported` (2.5/2.6): host devices.
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_is_export_to_dpu_supported(devinfo: *const DocaDevinfo) -> DocaError {
    cap("doca_sync_event_cap_is_export_to_dpu_supported", devinfo, caps::is_export_to_dpu_supported)
}

/// `doca_sync_event_cap_is_export_to_remote_pci_supported` (2.7+): host and DPU devices.
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_is_export_to_remote_pci_supported(
    devinfo: *const DocaDevinfo,
) -> DocaError {
    cap(
        "doca_sync_event_cap_is_export_to_remote_pci_supported",
        devinfo,
        caps::is_export_to_remote_pci_supported,
    )
}

macro_rules! never_cap {
    ($($fn_name:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($fn_name), "`: `NOT_SUPPORTED` (no DPA, GPU or remote network).")]
        #[no_mangle]
        pub extern "C" fn $fn_name(devinfo: *const DocaDevinfo) -> DocaError {
            cap(stringify!($fn_name), devinfo, caps::is_dpa_or_gpu_supported)
        }
    )*};
}
never_cap!(
    doca_sync_event_cap_is_export_to_dpa_supported,
    doca_sync_event_cap_is_export_to_gpu_supported,
    doca_sync_event_cap_remote_net_is_export_to_dpa_supported,
    doca_sync_event_cap_remote_net_is_export_to_gpu_supported,
);

/// The DPA and GPU handles (2.5/2.6 `export_to_dpa/_gpu`, 2.7+ `get_dpa_handle/_gpu_handle`):
/// the arguments checked, then `NOT_SUPPORTED`.
fn dpa_gpu_handle(
    name: &'static str,
    event: *mut DocaSyncEvent,
    other: *const DocaDpaOrGpu,
    outp: *const u8,
    what: &str,
) -> DocaError {
    with_event(name, event, |_| {
        if other.is_null() || outp.is_null() {
            return crate::check::refuse(|| format!("NULL {what} or out-parameter"));
        }
        unsupported(what)
    })
}

/// `doca_sync_event_export_to_dpa` (2.5/2.6): `NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_sync_event_export_to_dpa(
    event: *mut DocaSyncEvent,
    dpa: *mut DocaDpaOrGpu,
    handle: *mut u64,
) -> DocaError {
    dpa_gpu_handle("doca_sync_event_export_to_dpa", event, dpa, handle.cast(), "DPA")
}

/// `doca_sync_event_get_dpa_handle` (2.7+): `NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_sync_event_get_dpa_handle(
    event: *mut DocaSyncEvent,
    dpa: *mut DocaDpaOrGpu,
    handle: *mut u64,
) -> DocaError {
    dpa_gpu_handle("doca_sync_event_get_dpa_handle", event, dpa, handle.cast(), "DPA")
}

/// `doca_sync_event_export_to_gpu` (2.5/2.6): `NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_sync_event_export_to_gpu(
    event: *mut DocaSyncEvent,
    gpu: *mut DocaDpaOrGpu,
    handle: *mut *mut u64,
) -> DocaError {
    dpa_gpu_handle("doca_sync_event_export_to_gpu", event, gpu, handle.cast(), "GPU")
}

/// `doca_sync_event_get_gpu_handle` (2.7+): `NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_sync_event_get_gpu_handle(
    event: *mut DocaSyncEvent,
    gpu: *mut DocaDpaOrGpu,
    handle: *mut *mut u64,
) -> DocaError {
    dpa_gpu_handle("doca_sync_event_get_gpu_handle", event, gpu, handle.cast(), "GPU")
}

/// `doca_sync_event_cap_is_export_to_remote_net_supported`: host and DPU devices.
#[no_mangle]
pub extern "C" fn doca_sync_event_cap_is_export_to_remote_net_supported(
    devinfo: *const DocaDevinfo,
) -> DocaError {
    cap("doca_sync_event_cap_is_export_to_remote_net_supported", devinfo, caps::is_remote_net_supported)
}

/// `doca_sync_event_export_to_remote_net`: the blob for an RDMA peer's
/// `doca_sync_event_remote_net_create_from_export`, valid until the next export of this
/// event or its destroy.
#[no_mangle]
pub extern "C" fn doca_sync_event_export_to_remote_net(
    event: *mut DocaSyncEvent,
    data: *mut *const u8,
    sz: *mut usize,
) -> DocaError {
    with_event("doca_sync_event_export_to_remote_net", event, |se| {
        if let Err(e) = non_null(data, "data").and_then(|()| non_null(sz, "sz")) {
            return e;
        }
        match se.ev.export_to_remote_net() {
            Ok(blob) => {
                let mut b = se.blob.borrow_mut();
                *b = blob;
                let (p, n) = (b.as_ptr(), b.len());
                out(data, p);
                out(sz, n)
            }
            Err(e) => e.code(),
        }
    })
}

/// A remote net event's DPA or GPU handle: `INVALID_VALUE` for a handle that is not a
/// remote net event, else `NOT_SUPPORTED` (no DPA or GPU here).
fn remote_net_handle(name: &'static str, event: *mut DocaSyncEventRemoteNet) -> DocaError {
    guarded(name, || match remote_net(event) {
        Some(_) => unsupported("a remote net event's DPA or GPU handle"),
        None => invalid(),
    })
}

/// `doca_sync_event_remote_net_export_to_dpa` (2.5/2.6).
#[no_mangle]
pub extern "C" fn doca_sync_event_remote_net_export_to_dpa(
    event: *mut DocaSyncEventRemoteNet,
    _dpa: *mut DocaDpaOrGpu,
    _handle: *mut u64,
) -> DocaError {
    remote_net_handle("doca_sync_event_remote_net_export_to_dpa", event)
}

/// `doca_sync_event_remote_net_get_dpa_handle` (2.7+).
#[no_mangle]
pub extern "C" fn doca_sync_event_remote_net_get_dpa_handle(
    event: *mut DocaSyncEventRemoteNet,
    _dpa: *mut DocaDpaOrGpu,
    _handle: *mut u64,
) -> DocaError {
    remote_net_handle("doca_sync_event_remote_net_get_dpa_handle", event)
}

/// `doca_sync_event_remote_net_export_to_gpu` (2.5/2.6).
#[no_mangle]
pub extern "C" fn doca_sync_event_remote_net_export_to_gpu(
    event: *mut DocaSyncEventRemoteNet,
    _gpu: *mut DocaDpaOrGpu,
    _handle: *mut u64,
) -> DocaError {
    remote_net_handle("doca_sync_event_remote_net_export_to_gpu", event)
}

/// `doca_sync_event_remote_net_get_gpu_handle` (2.7+).
#[no_mangle]
pub extern "C" fn doca_sync_event_remote_net_get_gpu_handle(
    event: *mut DocaSyncEventRemoteNet,
    _gpu: *mut DocaDpaOrGpu,
    _handle: *mut u64,
) -> DocaError {
    remote_net_handle("doca_sync_event_remote_net_get_gpu_handle", event)
}

/// `doca_sync_event_get`: started only (`BAD_STATE`); an importer whose exporter is gone:
/// `NOT_FOUND`.
///
/// # Safety
/// `value` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_get(event: *mut DocaSyncEvent, value: *mut u64) -> DocaError {
    with_event("doca_sync_event_get", event, |se| {
        if let Err(e) = non_null(value, "value") {
            return e;
        }
        match se.ev.get() {
            Ok(v) => out(value, v),
            Err(e) => e.code(),
        }
    })
}

/// `doca_sync_event_update_add`: `*fetched` gets the value before the addition (NULL: `INVALID_VALUE`).
///
/// # Safety
/// `fetched` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sync_event_update_add(
    event: *mut DocaSyncEvent,
    value: u64,
    fetched: *mut u64,
) -> DocaError {
    with_event("doca_sync_event_update_add", event, |se| {
        if let Err(e) = non_null(fetched, "fetched") {
            return e;
        }
        match se.ev.update_add(value) {
            Ok(v) => out(fetched, v),
            Err(e) => e.code(),
        }
    })
}

/// `doca_sync_event_update_set`.
#[no_mangle]
pub extern "C" fn doca_sync_event_update_set(event: *mut DocaSyncEvent, value: u64) -> DocaError {
    with_event("doca_sync_event_update_set", event, |se| code(se.ev.update_set(value)))
}

macro_rules! blocking_wait {
    ($fn_name:ident, $cmp:expr, $mode:expr, $what:literal) => {
        #[doc = concat!("`", stringify!($fn_name), "`: returns once `value & mask` is ", $what,
            " `value`; never spins (see the crate). `INVALID_VALUE` for a bad mask, `NOT_FOUND` when the exporter goes away.")]
        #[no_mangle]
        pub extern "C" fn $fn_name(event: *mut DocaSyncEvent, value: u64, mask: u64) -> DocaError {
            with_event(stringify!($fn_name), event, |se| code(se.ev.wait($cmp, value, mask, $mode)))
        }
    };
}
blocking_wait!(doca_sync_event_wait_gt, Cmp::Gt, WaitMode::Sleep, "greater than");
blocking_wait!(doca_sync_event_wait_gt_yield, Cmp::Gt, WaitMode::Yield, "greater than");
blocking_wait!(doca_sync_event_wait_eq, Cmp::Eq, WaitMode::Sleep, "equal to");
blocking_wait!(doca_sync_event_wait_eq_yield, Cmp::Eq, WaitMode::Yield, "equal to");
blocking_wait!(doca_sync_event_wait_neq, Cmp::Neq, WaitMode::Sleep, "different from");
blocking_wait!(doca_sync_event_wait_neq_yield, Cmp::Neq, WaitMode::Yield, "different from");

const _: () = assert!(DOCA_SUCCESS == 0);
