//! `doca_dma.h`: DMA contexts and their memcpy tasks (the whole header, the same from DOCA
//! 2.5 to 3.3). The copy is the emulated engine's work inside `doca_pe_progress`; see the
//! `doca_dma` crate for the checks, the statuses and where the copied bytes land.

use std::rc::Rc;

use doca_core::Data;
use doca_dma::{caps, Dma, MemcpyTask};

use crate::buf::DocaBuf;
use crate::check::{non_null, out};
use crate::ctx::{DocaCtx, DocaData};
use crate::dev::{DocaDev, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::libctx::{self, opt_buf, LibCtx, Library};
use crate::task::{as_task, complete, task, AnyTask, DocaTask, Of};
use crate::{guarded, invalid, DocaError};

/// `struct doca_dma`: the context, its context handle and its tasks' handles.
pub type DocaDma = LibCtx<Dma>;

impl Library for Dma {
    fn ctx(&self) -> doca_core::Ctx {
        self.as_ctx()
    }
    fn destroy(self) -> doca_core::Result<()> {
        Dma::destroy(self).map_err(|r| r.error)
    }
}

static DMAS: Handles = Handles::new(Kind::Dma);

fn dma<'a>(p: *const DocaDma) -> Option<&'a DocaDma> {
    libctx::get(&DMAS, p)
}

/// `doca_dma_task_memcpy_completion_cb_t`.
pub type DmaTaskCb = Option<unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData)>;

/// The task behind `p` if it is a DMA memcpy task.
fn memcpy<R>(p: *const DocaTask, f: impl FnOnce(&MemcpyTask) -> R) -> Option<R> {
    task(p)?.with(|t| match t {
        AnyTask::DmaMemcpy(t) => Some(f(t)),
        _ => None,
    })?
}

/// `doca_dma_create`: a DMA context on `dev` (`NOT_SUPPORTED` when the topology gives the
/// device no DMA).
///
/// # Safety
/// `dma` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_dma_create(dev: *mut DocaDev, dma: *mut *mut DocaDma) -> DocaError {
    guarded("doca_dma_create", || libctx::create(&DMAS, dev, dma, "dma", Dma::create))
}

/// `doca_dma_destroy`: Idle only (`BAD_STATE`, the context stays); its context's and tasks'
/// handles go with it.
///
/// # Safety
/// `dma` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_dma_destroy(dma: *mut DocaDma) -> DocaError {
    guarded("doca_dma_destroy", || {
        // SAFETY: the caller's contract, as `libctx::destroy` states it.
        unsafe { libctx::destroy(&DMAS, dma) }
    })
}

/// `doca_dma_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_dma_as_ctx(dma: *mut DocaDma) -> *mut DocaCtx {
    crate::shielded("doca_dma_as_ctx", std::ptr::null_mut(), || libctx::as_ctx(&DMAS, dma))
}

/// `doca_dma_cap_get_max_num_tasks`.
///
/// # Safety
/// `max_num_tasks` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_dma_cap_get_max_num_tasks(
    dma: *mut DocaDma,
    max_num_tasks: *mut u32,
) -> DocaError {
    guarded("doca_dma_cap_get_max_num_tasks", || match self::dma(dma) {
        Some(d) => match d.obj.cap_get_max_num_tasks() {
            Ok(n) => out(max_num_tasks, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// `doca_dma_cap_task_memcpy_is_supported`.
#[no_mangle]
pub extern "C" fn doca_dma_cap_task_memcpy_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    guarded("doca_dma_cap_task_memcpy_is_supported", || match crate::dev::devinfo(devinfo) {
        Some(d) => doca_core::Error::code_of(&caps::task_memcpy_is_supported(d)),
        None => invalid(),
    })
}

/// `doca_dma_cap_task_memcpy_get_max_buf_size`.
///
/// # Safety
/// `buf_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_dma_cap_task_memcpy_get_max_buf_size(
    devinfo: *const DocaDevinfo,
    buf_size: *mut u64,
) -> DocaError {
    guarded("doca_dma_cap_task_memcpy_get_max_buf_size", || match crate::dev::devinfo(devinfo) {
        Some(d) => match caps::task_memcpy_max_buf_size(d) {
            Ok(n) => out(buf_size, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// `doca_dma_cap_task_memcpy_get_max_buf_list_len`.
///
/// # Safety
/// `max_buf_list_len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_dma_cap_task_memcpy_get_max_buf_list_len(
    devinfo: *const DocaDevinfo,
    max_buf_list_len: *mut u32,
) -> DocaError {
    guarded("doca_dma_cap_task_memcpy_get_max_buf_list_len", || match crate::dev::devinfo(devinfo) {
        Some(d) => match caps::task_memcpy_max_buf_list_len(d) {
            Ok(n) => out(max_buf_list_len, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// `doca_dma_task_memcpy_set_conf`: Idle only; 1..=`dma.max_num_tasks` tasks.
#[no_mangle]
pub extern "C" fn doca_dma_task_memcpy_set_conf(
    dma: *mut DocaDma,
    task_completion_cb: DmaTaskCb,
    task_error_cb: DmaTaskCb,
    num_memcpy_tasks: u32,
) -> DocaError {
    guarded("doca_dma_task_memcpy_set_conf", || {
        let (Some(d), Some(done), Some(failed)) = (self::dma(dma), task_completion_cb, task_error_cb) else {
            return invalid();
        };
        let (w1, w2) = (Rc::downgrade(&d.tasks), Rc::downgrade(&d.tasks));
        let r = d.obj.task_memcpy_set_conf(
            move |t: MemcpyTask, td: Data, cd: Data| complete(&w1, done, AnyTask::DmaMemcpy(t), td, cd),
            move |t: MemcpyTask, td: Data, cd: Data| complete(&w2, failed, AnyTask::DmaMemcpy(t), td, cd),
            num_memcpy_tasks,
        );
        doca_core::Error::code_of(&r)
    })
}

/// `doca_dma_task_memcpy_alloc_init`: `src` and `dst` may be NULL (set before submission);
/// nothing else about them is checked before submission. Every task out: `NO_MEMORY`.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_dma_task_memcpy_alloc_init(
    dma: *mut DocaDma,
    src: *const DocaBuf,
    dst: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_dma_task_memcpy_alloc_init", || {
        let Some(d) = self::dma(dma) else { return invalid() };
        let (Ok(s), Ok(t)) = (opt_buf(src), opt_buf(dst)) else { return invalid() };
        if let Err(e) = non_null(task, "task") {
            return e;
        }
        match d.obj.task_memcpy_alloc_init(s, t, user_data.to_data()) {
            Ok(mt) => {
                let h = d.tasks.hand_out(AnyTask::DmaMemcpy(mt), src as *mut DocaBuf);
                if let Some(handle) = self::task(h) {
                    handle.dst.set(dst);
                }
                out(task, h)
            }
            Err(e) => e.code(),
        }
    })
}

/// `doca_dma_task_memcpy_as_task`: the same handle.
#[no_mangle]
pub extern "C" fn doca_dma_task_memcpy_as_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_dma_task_memcpy_as_task", task, Of::DmaMemcpy)
}

/// `doca_dma_task_memcpy_set_src`: checked when the task is submitted (NULL: none).
#[no_mangle]
pub extern "C" fn doca_dma_task_memcpy_set_src(task: *mut DocaTask, src: *const DocaBuf) {
    crate::shielded("doca_dma_task_memcpy_set_src", (), || {
        let Ok(b) = opt_buf(src) else { return };
        if memcpy(task, |t| t.set_src(b)).is_some() {
            if let Some(h) = self::task(task) {
                h.buf.set(src as *mut DocaBuf);
            }
        }
    })
}

/// `doca_dma_task_memcpy_get_src`: NULL when none is set (or the task is not a memcpy task).
#[no_mangle]
pub extern "C" fn doca_dma_task_memcpy_get_src(task: *const DocaTask) -> *const DocaBuf {
    crate::shielded("doca_dma_task_memcpy_get_src", std::ptr::null(), || match memcpy(task, |_| ()) {
        Some(()) => self::task(task).map_or(std::ptr::null(), |h| h.buf.get() as *const DocaBuf),
        None => std::ptr::null(),
    })
}

/// `doca_dma_task_memcpy_set_dst`: checked when the task is submitted (NULL: none).
#[no_mangle]
pub extern "C" fn doca_dma_task_memcpy_set_dst(task: *mut DocaTask, dst: *mut DocaBuf) {
    crate::shielded("doca_dma_task_memcpy_set_dst", (), || {
        let Ok(b) = opt_buf(dst) else { return };
        if memcpy(task, |t| t.set_dst(b)).is_some() {
            if let Some(h) = self::task(task) {
                h.dst.set(dst);
            }
        }
    })
}

/// `doca_dma_task_memcpy_get_dst`: NULL when none is set.
#[no_mangle]
pub extern "C" fn doca_dma_task_memcpy_get_dst(task: *const DocaTask) -> *mut DocaBuf {
    crate::shielded("doca_dma_task_memcpy_get_dst", std::ptr::null_mut(), || match memcpy(task, |_| ()) {
        Some(()) => self::task(task).map_or(std::ptr::null_mut(), |h| h.dst.get()),
        None => std::ptr::null_mut(),
    })
}
