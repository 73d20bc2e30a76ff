//! `doca_sha.h`: SHA contexts, their hash and partial-hash tasks (the whole header: the 31
//! functions of DOCA 2.6, the same from 2.6 to 3.3, plus the three 2.5 spellings
//! `doca_sha_cap_get_max_src_buffer_size`, `doca_sha_cap_get_min_dst_buffer_size` and
//! `doca_sha_task_partial_hash_set_is_final_buffer`). The hashing is the emulated engine's
//! work inside `doca_pe_progress`; see the `doca_sha` crate for the checks, the statuses and
//! where the digest lands.

use std::rc::Rc;

use doca_core::Data;
use doca_sha::{caps, Algorithm, HashTask, PartialHashTask, Sha};

use crate::buf::DocaBuf;
use crate::check::{non_null, out};
use crate::ctx::{DocaCtx, DocaData};
use crate::dev::{DocaDev, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::libctx::{self, opt_buf, LibCtx, Library};
use crate::task::{as_task, complete, task, AnyTask, DocaTask, Of};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// `struct doca_sha`: the context, its context handle and its tasks' handles.
pub type DocaSha = LibCtx<Sha>;

impl Library for Sha {
    fn ctx(&self) -> doca_core::Ctx {
        self.as_ctx()
    }
    fn destroy(self) -> doca_core::Result<()> {
        Sha::destroy(self).map_err(|r| r.error)
    }
    const NOT_IDLE: doca_core::Error = doca_core::Error::InUse;
}

static SHAS: Handles = Handles::new(Kind::Sha);

fn sha<'a>(p: *const DocaSha) -> Option<&'a DocaSha> {
    libctx::get(&SHAS, p)
}

/// `doca_sha_task_hash_completion_cb_t` and `doca_sha_task_partial_hash_completion_cb_t`.
pub type ShaTaskCb = Option<unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData)>;

/// `enum doca_sha_algorithm` as C passes it (`None`, noted for the log, for another value).
fn algorithm(v: u32) -> Option<Algorithm> {
    let a = Algorithm::from_raw(v);
    if a.is_none() {
        crate::check::note(|| format!("{v} is not an enum doca_sha_algorithm value (0, 1 or 2)"));
    }
    a
}

/// The task behind `p` if it is a SHA hash task.
fn hash<R>(p: *const DocaTask, f: impl FnOnce(&HashTask) -> R) -> Option<R> {
    task(p)?.with(|t| match t {
        AnyTask::ShaHash(t) => Some(f(t)),
        _ => None,
    })?
}

/// The task behind `p` if it is a SHA partial-hash task.
fn partial<R>(p: *const DocaTask, f: impl FnOnce(&PartialHashTask) -> R) -> Option<R> {
    task(p)?.with(|t| match t {
        AnyTask::ShaPartialHash(t) => Some(f(t)),
        _ => None,
    })?
}

/// The code of a partial-hash setter whose handle [`partial`] found no task held by the
/// application: a live task handle whose task is submitted is `BAD_STATE` (the header's
/// "the partial hash is in progress"), anything else `INVALID_VALUE`.
fn not_held(p: *const DocaTask) -> DocaError {
    if task(p).is_some() {
        return doca_core::fail!(
            doca_core::Error::BadState,
            "sha partial hash: the task is submitted (the partial hash is in progress)"
        )
        .code();
    }
    invalid()
}

/// `doca_sha_create`: a SHA context on `dev` (`NOT_SUPPORTED` when the topology gives the
/// device no SHA).
///
/// # Safety
/// `sha` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sha_create(dev: *mut DocaDev, sha: *mut *mut DocaSha) -> DocaError {
    guarded("doca_sha_create", || libctx::create(&SHAS, dev, sha, "sha", Sha::create))
}

/// `doca_sha_destroy`: Idle only (`IN_USE`, the header's code: "stopped before
/// destruction"; the context stays); its context's and tasks' handles go with it.
///
/// # Safety
/// `sha` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_sha_destroy(sha: *mut DocaSha) -> DocaError {
    guarded("doca_sha_destroy", || {
        // SAFETY: the caller's contract, as `libctx::destroy` states it.
        unsafe { libctx::destroy(&SHAS, sha) }
    })
}

/// `doca_sha_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_sha_as_ctx(sha: *mut DocaSha) -> *mut DocaCtx {
    crate::shielded("doca_sha_as_ctx", std::ptr::null_mut(), || libctx::as_ctx(&SHAS, sha))
}

/// `doca_sha_cap_task_hash_get_supported`.
#[no_mangle]
pub extern "C" fn doca_sha_cap_task_hash_get_supported(
    devinfo: *const DocaDevinfo,
    algorithm: u32,
) -> DocaError {
    guarded("doca_sha_cap_task_hash_get_supported", || {
        match (crate::dev::devinfo(devinfo), self::algorithm(algorithm)) {
            (Some(d), Some(a)) => doca_core::Error::code_of(&caps::task_hash_is_supported(d, a)),
            _ => invalid(),
        }
    })
}

/// `doca_sha_cap_task_partial_hash_get_supported`.
#[no_mangle]
pub extern "C" fn doca_sha_cap_task_partial_hash_get_supported(
    devinfo: *const DocaDevinfo,
    algorithm: u32,
) -> DocaError {
    guarded("doca_sha_cap_task_partial_hash_get_supported", || {
        match (crate::dev::devinfo(devinfo), self::algorithm(algorithm)) {
            (Some(d), Some(a)) => doca_core::Error::code_of(&caps::task_partial_hash_is_supported(d, a)),
            _ => invalid(),
        }
    })
}

/// `doca_sha_cap_get_max_list_buf_num_elem`.
///
/// # Safety
/// `max_list_num_elem` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sha_cap_get_max_list_buf_num_elem(
    devinfo: *const DocaDevinfo,
    max_list_num_elem: *mut u32,
) -> DocaError {
    guarded("doca_sha_cap_get_max_list_buf_num_elem", || match crate::dev::devinfo(devinfo) {
        Some(d) => match caps::max_list_buf_num_elem(d) {
            Ok(n) => out(max_list_num_elem, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

fn max_src(name: &'static str, devinfo: *const DocaDevinfo, max_buf_size: *mut u64) -> DocaError {
    guarded(name, || match crate::dev::devinfo(devinfo) {
        Some(d) => match caps::max_src_buf_size(d) {
            Ok(n) => out(max_buf_size, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// `doca_sha_cap_get_max_src_buf_size`.
///
/// # Safety
/// `max_buf_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sha_cap_get_max_src_buf_size(
    devinfo: *const DocaDevinfo,
    max_buf_size: *mut u64,
) -> DocaError {
    max_src("doca_sha_cap_get_max_src_buf_size", devinfo, max_buf_size)
}

/// `doca_sha_cap_get_max_src_buffer_size` (the 2.5 name).
///
/// # Safety
/// `max_buffer_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sha_cap_get_max_src_buffer_size(
    devinfo: *const DocaDevinfo,
    max_buffer_size: *mut u64,
) -> DocaError {
    max_src("doca_sha_cap_get_max_src_buffer_size", devinfo, max_buffer_size)
}

fn min_dst(
    name: &'static str,
    devinfo: *const DocaDevinfo,
    algorithm: u32,
    min_buf_size: *mut u32,
) -> DocaError {
    guarded(name, || match (crate::dev::devinfo(devinfo), self::algorithm(algorithm)) {
        (Some(d), Some(a)) => match caps::min_dst_buf_size(d, a) {
            Ok(n) => out(min_buf_size, n),
            Err(e) => e.code(),
        },
        _ => invalid(),
    })
}

/// `doca_sha_cap_get_min_dst_buf_size`: the digest length (20, 32 or 64).
///
/// # Safety
/// `min_buf_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sha_cap_get_min_dst_buf_size(
    devinfo: *const DocaDevinfo,
    algorithm: u32,
    min_buf_size: *mut u32,
) -> DocaError {
    min_dst("doca_sha_cap_get_min_dst_buf_size", devinfo, algorithm, min_buf_size)
}

/// `doca_sha_cap_get_min_dst_buffer_size` (the 2.5 name).
///
/// # Safety
/// `min_buffer_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sha_cap_get_min_dst_buffer_size(
    devinfo: *const DocaDevinfo,
    algorithm: u32,
    min_buffer_size: *mut u32,
) -> DocaError {
    min_dst("doca_sha_cap_get_min_dst_buffer_size", devinfo, algorithm, min_buffer_size)
}

/// `doca_sha_cap_get_partial_hash_block_size`: 64 (SHA-1, SHA-256) or 128 (SHA-512).
///
/// # Safety
/// `partial_block_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sha_cap_get_partial_hash_block_size(
    devinfo: *const DocaDevinfo,
    algorithm: u32,
    partial_block_size: *mut u32,
) -> DocaError {
    guarded("doca_sha_cap_get_partial_hash_block_size", || {
        match (crate::dev::devinfo(devinfo), self::algorithm(algorithm)) {
            (Some(d), Some(a)) => match caps::partial_hash_block_size(d, a) {
                Ok(n) => out(partial_block_size, n),
                Err(e) => e.code(),
            },
            _ => invalid(),
        }
    })
}

/// `doca_sha_task_hash_set_conf`: Idle only; `1 << log_num_tasks` tasks (at most
/// `sha.max_num_tasks`).
#[no_mangle]
pub extern "C" fn doca_sha_task_hash_set_conf(
    sha: *mut DocaSha,
    task_completion_cb: ShaTaskCb,
    task_error_cb: ShaTaskCb,
    log_num_tasks: u8,
) -> DocaError {
    guarded("doca_sha_task_hash_set_conf", || {
        let (Some(d), Some(done), Some(failed)) = (self::sha(sha), task_completion_cb, task_error_cb) else {
            return invalid();
        };
        let (w1, w2) = (Rc::downgrade(&d.tasks), Rc::downgrade(&d.tasks));
        let r = d.obj.task_hash_set_conf(
            move |t: HashTask, td: Data, cd: Data| complete(&w1, done, AnyTask::ShaHash(t), td, cd),
            move |t: HashTask, td: Data, cd: Data| complete(&w2, failed, AnyTask::ShaHash(t), td, cd),
            log_num_tasks,
        );
        doca_core::Error::code_of(&r)
    })
}

/// `doca_sha_task_partial_hash_set_conf`: as the hash tasks'.
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_set_conf(
    sha: *mut DocaSha,
    task_completion_cb: ShaTaskCb,
    task_error_cb: ShaTaskCb,
    log_num_tasks: u8,
) -> DocaError {
    guarded("doca_sha_task_partial_hash_set_conf", || {
        let (Some(d), Some(done), Some(failed)) = (self::sha(sha), task_completion_cb, task_error_cb) else {
            return invalid();
        };
        let (w1, w2) = (Rc::downgrade(&d.tasks), Rc::downgrade(&d.tasks));
        let r = d.obj.task_partial_hash_set_conf(
            move |t: PartialHashTask, td: Data, cd: Data| {
                complete(&w1, done, AnyTask::ShaPartialHash(t), td, cd)
            },
            move |t: PartialHashTask, td: Data, cd: Data| {
                complete(&w2, failed, AnyTask::ShaPartialHash(t), td, cd)
            },
            log_num_tasks,
        );
        doca_core::Error::code_of(&r)
    })
}

/// The common part of both alloc_inits: argument checks, then `alloc` and the handle.
fn alloc_init(
    sha: *mut DocaSha,
    algorithm: u32,
    src: *const DocaBuf,
    dst: *mut DocaBuf,
    task: *mut *mut DocaTask,
    alloc: impl FnOnce(
        &Sha,
        Algorithm,
        Option<&doca_buf::Buf>,
        Option<&doca_buf::Buf>,
    ) -> doca_core::Result<AnyTask>,
) -> DocaError {
    let Some(d) = self::sha(sha) else { return invalid() };
    let Some(a) = self::algorithm(algorithm) else { return invalid() };
    let (Ok(s), Ok(t)) = (opt_buf(src), opt_buf(dst)) else { return invalid() };
    if let Err(e) = non_null(task, "task") {
        return e;
    }
    match alloc(&d.obj, a, s, t) {
        Ok(any) => {
            let h = d.tasks.hand_out(any, src as *mut DocaBuf);
            if let Some(handle) = self::task(h) {
                handle.dst.set(dst);
            }
            out(task, h)
        }
        Err(e) => e.code(),
    }
}

/// `doca_sha_task_hash_alloc_init`: `src_buf` and `dst_buf` may be NULL (set before
/// submission); nothing else about them is checked before submission. Every task out:
/// `NO_MEMORY`.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sha_task_hash_alloc_init(
    sha: *mut DocaSha,
    algorithm: u32,
    src_buf: *const DocaBuf,
    dst_buf: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_sha_task_hash_alloc_init", || {
        alloc_init(sha, algorithm, src_buf, dst_buf, task, |obj, a, s, t| {
            obj.task_hash_alloc_init(a, s, t, user_data.to_data()).map(AnyTask::ShaHash)
        })
    })
}

/// `doca_sha_task_partial_hash_alloc_init`: a task with a fresh session.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_sha_task_partial_hash_alloc_init(
    sha: *mut DocaSha,
    algorithm: u32,
    src_buf: *const DocaBuf,
    dst_buf: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_sha_task_partial_hash_alloc_init", || {
        alloc_init(sha, algorithm, src_buf, dst_buf, task, |obj, a, s, t| {
            obj.task_partial_hash_alloc_init(a, s, t, user_data.to_data()).map(AnyTask::ShaPartialHash)
        })
    })
}

/// `doca_sha_task_hash_as_task`: the same handle.
#[no_mangle]
pub extern "C" fn doca_sha_task_hash_as_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_sha_task_hash_as_task", task, Of::ShaHash)
}

/// `doca_sha_task_partial_hash_as_task`: the same handle.
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_as_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_sha_task_partial_hash_as_task", task, Of::ShaPartialHash)
}

/// Records the C handle of a task's source (`src`) or destination.
fn keep(task: *mut DocaTask, b: *const DocaBuf, src: bool) {
    if let Some(h) = self::task(task) {
        if src {
            h.buf.set(b as *mut DocaBuf);
        } else {
            h.dst.set(b as *mut DocaBuf);
        }
    }
}

/// The C handle of a task's source (`src`) or destination, when `is_kind` says the task is
/// of the right kind.
fn kept(task: *const DocaTask, is_kind: Option<()>, src: bool) -> *const DocaBuf {
    match (is_kind, self::task(task)) {
        (Some(()), Some(h)) if src => h.buf.get() as *const DocaBuf,
        (Some(()), Some(h)) => h.dst.get() as *const DocaBuf,
        _ => std::ptr::null(),
    }
}

/// `doca_sha_task_hash_set_src`: checked when the task is submitted (NULL: none).
#[no_mangle]
pub extern "C" fn doca_sha_task_hash_set_src(task: *mut DocaTask, src_buf: *const DocaBuf) -> DocaError {
    guarded("doca_sha_task_hash_set_src", || {
        let Ok(b) = opt_buf(src_buf) else { return invalid() };
        match hash(task, |t| t.set_src(b)) {
            Some(()) => {
                keep(task, src_buf, true);
                DOCA_SUCCESS
            }
            None => invalid(),
        }
    })
}

/// `doca_sha_task_hash_get_src`: NULL when none is set (or the task is not a hash task).
#[no_mangle]
pub extern "C" fn doca_sha_task_hash_get_src(task: *const DocaTask) -> *const DocaBuf {
    crate::shielded("doca_sha_task_hash_get_src", std::ptr::null(), || kept(task, hash(task, |_| ()), true))
}

/// `doca_sha_task_hash_set_dst`: checked when the task is submitted (NULL: none).
#[no_mangle]
pub extern "C" fn doca_sha_task_hash_set_dst(task: *mut DocaTask, dst_buf: *mut DocaBuf) -> DocaError {
    guarded("doca_sha_task_hash_set_dst", || {
        let Ok(b) = opt_buf(dst_buf) else { return invalid() };
        match hash(task, |t| t.set_dst(b)) {
            Some(()) => {
                keep(task, dst_buf, false);
                DOCA_SUCCESS
            }
            None => invalid(),
        }
    })
}

/// `doca_sha_task_hash_get_dst`: NULL when none is set.
#[no_mangle]
pub extern "C" fn doca_sha_task_hash_get_dst(task: *const DocaTask) -> *const DocaBuf {
    crate::shielded("doca_sha_task_hash_get_dst", std::ptr::null(), || kept(task, hash(task, |_| ()), false))
}

/// `doca_sha_task_hash_set_algorithm`: an unknown value is `INVALID_VALUE`.
#[no_mangle]
pub extern "C" fn doca_sha_task_hash_set_algorithm(task: *mut DocaTask, algorithm: u32) -> DocaError {
    guarded("doca_sha_task_hash_set_algorithm", || {
        let Some(a) = self::algorithm(algorithm) else { return invalid() };
        match hash(task, |t| t.set_algorithm(a)) {
            Some(()) => DOCA_SUCCESS,
            None => invalid(),
        }
    })
}

/// `doca_sha_task_hash_get_algorithm`: `DOCA_SHA_ALGORITHM_SHA1` (0) for a handle that is not
/// a hash task the application holds (logged).
#[no_mangle]
pub extern "C" fn doca_sha_task_hash_get_algorithm(task: *const DocaTask) -> u32 {
    crate::shielded("doca_sha_task_hash_get_algorithm", 0, || {
        hash(task, |t| t.algorithm() as u32).unwrap_or(0)
    })
}

/// `doca_sha_task_partial_hash_reset`: forgets the session.
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_reset(task: *mut DocaTask) -> DocaError {
    guarded("doca_sha_task_partial_hash_reset", || match partial(task, PartialHashTask::reset) {
        Some(()) => DOCA_SUCCESS,
        None => invalid(),
    })
}

/// `doca_sha_task_partial_hash_set_src`: the next segment (checked when submitted).
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_set_src(
    task: *mut DocaTask,
    src_buf: *const DocaBuf,
) -> DocaError {
    guarded("doca_sha_task_partial_hash_set_src", || {
        let Ok(b) = opt_buf(src_buf) else { return invalid() };
        match partial(task, |t| t.set_src(b)) {
            Some(()) => {
                keep(task, src_buf, true);
                DOCA_SUCCESS
            }
            None => invalid(),
        }
    })
}

/// `doca_sha_task_partial_hash_get_src`.
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_get_src(task: *const DocaTask) -> *const DocaBuf {
    crate::shielded("doca_sha_task_partial_hash_get_src", std::ptr::null(), || {
        kept(task, partial(task, |_| ()), true)
    })
}

/// `doca_sha_task_partial_hash_set_dst`: `BAD_STATE` once a segment of the session
/// completed, or while one is submitted.
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_set_dst(
    task: *mut DocaTask,
    dst_buf: *mut DocaBuf,
) -> DocaError {
    guarded("doca_sha_task_partial_hash_set_dst", || {
        let Ok(b) = opt_buf(dst_buf) else { return invalid() };
        match partial(task, |t| t.set_dst(b)) {
            Some(Ok(())) => {
                keep(task, dst_buf, false);
                DOCA_SUCCESS
            }
            Some(Err(e)) => e.code(),
            None => not_held(task),
        }
    })
}

/// `doca_sha_task_partial_hash_get_dst`.
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_get_dst(task: *const DocaTask) -> *const DocaBuf {
    crate::shielded("doca_sha_task_partial_hash_get_dst", std::ptr::null(), || {
        kept(task, partial(task, |_| ()), false)
    })
}

/// `doca_sha_task_partial_hash_set_algorithm`: `BAD_STATE` once a segment of the session
/// completed, or while one is submitted; an unknown value is `INVALID_VALUE`.
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_set_algorithm(task: *mut DocaTask, algorithm: u32) -> DocaError {
    guarded("doca_sha_task_partial_hash_set_algorithm", || {
        let Some(a) = self::algorithm(algorithm) else { return invalid() };
        match partial(task, |t| t.set_algorithm(a)) {
            Some(r) => doca_core::Error::code_of(&r),
            None => not_held(task),
        }
    })
}

/// `doca_sha_task_partial_hash_get_algorithm`: 0 for a handle that is not a partial-hash
/// task the application holds (logged).
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_get_algorithm(task: *const DocaTask) -> u32 {
    crate::shielded("doca_sha_task_partial_hash_get_algorithm", 0, || {
        partial(task, |t| t.algorithm() as u32).unwrap_or(0)
    })
}

fn set_final(name: &'static str, task: *mut DocaTask) -> DocaError {
    guarded(name, || match partial(task, PartialHashTask::set_is_final) {
        Some(()) => DOCA_SUCCESS,
        None => not_held(task),
    })
}

/// `doca_sha_task_partial_hash_set_is_final_buf`: the next submission is the last segment
/// (`BAD_STATE` while a segment is submitted).
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_set_is_final_buf(task: *mut DocaTask) -> DocaError {
    set_final("doca_sha_task_partial_hash_set_is_final_buf", task)
}

/// `doca_sha_task_partial_hash_set_is_final_buffer` (the 2.5 name).
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_set_is_final_buffer(task: *mut DocaTask) -> DocaError {
    set_final("doca_sha_task_partial_hash_set_is_final_buffer", task)
}

/// `doca_sha_task_partial_hash_get_is_final`: 1 or 0.
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_get_is_final(task: *const DocaTask) -> u8 {
    crate::shielded("doca_sha_task_partial_hash_get_is_final", 0, || {
        partial(task, |t| t.is_final() as u8).unwrap_or(0)
    })
}

/// `doca_sha_task_partial_hash_get_has_result`: 1 once the final segment completed.
#[no_mangle]
pub extern "C" fn doca_sha_task_partial_hash_get_has_result(task: *const DocaTask) -> u8 {
    crate::shielded("doca_sha_task_partial_hash_get_has_result", 0, || {
        partial(task, |t| t.has_result() as u8).unwrap_or(0)
    })
}
