//! `doca_mmap_advise.h` (2.9+, the whole header): cache-invalidate tasks on buffers, a
//! checked no-op on the emulator's coherent memory; see the `doca_mmap_advise` crate for the
//! checks and the statuses.

use std::rc::Rc;

use doca_core::{Data, Error};
use doca_mmap_advise::{caps, InvalidateCacheTask, MmapAdvise};

use crate::buf::DocaBuf;
use crate::check::{non_null, out};
use crate::ctx::{DocaCtx, DocaData};
use crate::dev::{DocaDev, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::libctx::{self, opt_buf, LibCtx, Library};
use crate::task::{as_task, complete, task, AnyTask, DocaTask, Of};
use crate::{guarded, invalid, DocaError};

/// `struct doca_mmap_advise`: the context, its context handle and its tasks' handles.
pub type DocaMmapAdvise = LibCtx<MmapAdvise>;

impl Library for MmapAdvise {
    fn ctx(&self) -> doca_core::Ctx {
        self.as_ctx()
    }
    fn destroy(self) -> doca_core::Result<()> {
        MmapAdvise::destroy(self).map_err(|r| r.error)
    }
}

static ADVISES: Handles = Handles::new(Kind::MmapAdvise);

fn advise<'a>(p: *const DocaMmapAdvise) -> Option<&'a DocaMmapAdvise> {
    libctx::get(&ADVISES, p)
}

/// `doca_mmap_advise_task_invalidate_cache_completion_cb_t`.
pub type InvalidateCacheCb = Option<unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData)>;

/// The task behind `p` if it is a cache-invalidate task.
fn invalidate<R>(p: *const DocaTask, f: impl FnOnce(&InvalidateCacheTask) -> R) -> Option<R> {
    task(p)?.with(|t| match t {
        AnyTask::InvalidateCache(t) => Some(f(t)),
        _ => None,
    })?
}

/// `doca_mmap_advise_create`: a context on `dev` (`NOT_SUPPORTED` when the topology gives the
/// device no cache invalidation).
///
/// # Safety
/// `mmap_advise` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_advise_create(
    dev: *mut DocaDev,
    mmap_advise: *mut *mut DocaMmapAdvise,
) -> DocaError {
    guarded("doca_mmap_advise_create", || {
        libctx::create(&ADVISES, dev, mmap_advise, "mmap_advise", MmapAdvise::create)
    })
}

/// `doca_mmap_advise_destroy`: Idle only (`BAD_STATE`, the context stays); its context's and
/// tasks' handles go with it.
///
/// # Safety
/// `mmap_advise` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_advise_destroy(mmap_advise: *mut DocaMmapAdvise) -> DocaError {
    guarded("doca_mmap_advise_destroy", || {
        // SAFETY: the caller's contract, as `libctx::destroy` states it.
        unsafe { libctx::destroy(&ADVISES, mmap_advise) }
    })
}

/// `doca_mmap_advise_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_mmap_advise_as_ctx(mmap_advise: *mut DocaMmapAdvise) -> *mut DocaCtx {
    crate::shielded("doca_mmap_advise_as_ctx", std::ptr::null_mut(), || libctx::as_ctx(&ADVISES, mmap_advise))
}

/// `doca_mmap_advise_cap_task_cache_invalidate_is_supported`.
#[no_mangle]
pub extern "C" fn doca_mmap_advise_cap_task_cache_invalidate_is_supported(
    devinfo: *const DocaDevinfo,
) -> DocaError {
    guarded("doca_mmap_advise_cap_task_cache_invalidate_is_supported", || {
        match crate::dev::devinfo(devinfo) {
            Some(d) => Error::code_of(&caps::task_cache_invalidate_is_supported(d)),
            None => invalid(),
        }
    })
}

/// `doca_mmap_advise_task_cache_invalidate_get_max_buf_size`.
///
/// # Safety
/// `buf_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_advise_task_cache_invalidate_get_max_buf_size(
    devinfo: *const DocaDevinfo,
    buf_size: *mut u64,
) -> DocaError {
    guarded("doca_mmap_advise_task_cache_invalidate_get_max_buf_size", || {
        match crate::dev::devinfo(devinfo) {
            Some(d) => match caps::task_cache_invalidate_max_buf_size(d) {
                Ok(n) => out(buf_size, n),
                Err(e) => e.code(),
            },
            None => invalid(),
        }
    })
}

/// `doca_mmap_advise_task_invalidate_cache_set_conf`: Idle only; 1..=`mmap_advise.max_num_tasks`.
#[no_mangle]
pub extern "C" fn doca_mmap_advise_task_invalidate_cache_set_conf(
    mmap_advise: *mut DocaMmapAdvise,
    completion_cb: InvalidateCacheCb,
    error_cb: InvalidateCacheCb,
    num_tasks: u32,
) -> DocaError {
    guarded("doca_mmap_advise_task_invalidate_cache_set_conf", || {
        let (Some(a), Some(done), Some(failed)) = (self::advise(mmap_advise), completion_cb, error_cb) else {
            return invalid();
        };
        let (w1, w2) = (Rc::downgrade(&a.tasks), Rc::downgrade(&a.tasks));
        let r = a.obj.task_invalidate_cache_set_conf(
            move |t: InvalidateCacheTask, td: Data, cd: Data| {
                complete(&w1, done, AnyTask::InvalidateCache(t), td, cd)
            },
            move |t: InvalidateCacheTask, td: Data, cd: Data| {
                complete(&w2, failed, AnyTask::InvalidateCache(t), td, cd)
            },
            num_tasks,
        );
        Error::code_of(&r)
    })
}

/// `doca_mmap_advise_task_invalidate_cache_alloc_init`: `buf` may be NULL (set before
/// submission); nothing else about it is checked before submission. Every task out:
/// `NO_MEMORY`.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_advise_task_invalidate_cache_alloc_init(
    mmap_advise: *mut DocaMmapAdvise,
    buf: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_mmap_advise_task_invalidate_cache_alloc_init", || {
        let Some(a) = self::advise(mmap_advise) else { return invalid() };
        let Ok(b) = opt_buf(buf) else { return invalid() };
        if let Err(e) = non_null(task, "task") {
            return e;
        }
        match a.obj.task_invalidate_cache_alloc_init(b, user_data.to_data()) {
            Ok(t) => out(task, a.tasks.hand_out(AnyTask::InvalidateCache(t), buf)),
            Err(e) => e.code(),
        }
    })
}

/// `doca_mmap_advise_task_invalidate_cache_as_doca_task`: the same handle.
#[no_mangle]
pub extern "C" fn doca_mmap_advise_task_invalidate_cache_as_doca_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_mmap_advise_task_invalidate_cache_as_doca_task", task, Of::InvalidateCache)
}

/// `doca_mmap_advise_task_invalidate_cache_set_buf`: checked when the task is submitted
/// (NULL: none).
#[no_mangle]
pub extern "C" fn doca_mmap_advise_task_invalidate_cache_set_buf(task: *mut DocaTask, buf: *mut DocaBuf) {
    crate::shielded("doca_mmap_advise_task_invalidate_cache_set_buf", (), || {
        let Ok(b) = opt_buf(buf) else { return };
        if invalidate(task, |t| t.set_buf(b)).is_some() {
            if let Some(h) = self::task(task) {
                h.buf.set(buf);
            }
        }
    })
}

/// `doca_mmap_advise_task_invalidate_cache_get_buf`: NULL when none is set (or the task is
/// not a cache-invalidate task).
#[no_mangle]
pub extern "C" fn doca_mmap_advise_task_invalidate_cache_get_buf(task: *const DocaTask) -> *mut DocaBuf {
    crate::shielded("doca_mmap_advise_task_invalidate_cache_get_buf", std::ptr::null_mut(), || {
        match invalidate(task, |_| ()) {
            Some(()) => self::task(task).map_or(std::ptr::null_mut(), |h| h.buf.get()),
            None => std::ptr::null_mut(),
        }
    })
}
