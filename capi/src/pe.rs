//! `doca_pe.h`: the progress engine. An engine and its contexts stay on the thread that
//! created the engine (as the Rust API requires).

use std::ffi::c_int;
use std::os::fd::AsRawFd;

use doca_core::Pe;

use crate::check::{non_null, out};
use crate::handles::{Handles, Kind};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// `struct doca_pe`.
pub struct DocaPe(pub(crate) Pe);

static PES: Handles = Handles::new(Kind::Pe);

pub(crate) fn pe<'a>(p: *const DocaPe) -> Option<&'a Pe> {
    // SAFETY: PES only holds DocaPe handles.
    unsafe { PES.get(p) }.map(|p| &p.0)
}

/// `doca_pe_create`.
///
/// # Safety
/// `pe` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_pe_create(pe: *mut *mut DocaPe) -> DocaError {
    guarded("doca_pe_create", || {
        if let Err(e) = non_null(pe, "out-parameter") {
            return e;
        }
        match Pe::create() {
            Ok(engine) => out(pe, PES.add(DocaPe(engine))),
            Err(e) => e.code(),
        }
    })
}

/// `doca_pe_destroy`: `IN_USE` (the engine stays) while contexts are connected, or when
/// called from one of the engine's own callbacks (its progress pass still runs).
///
/// # Safety
/// `pe` is NULL or a handle from `doca_pe_create`; not used afterwards when this succeeds.
#[no_mangle]
pub unsafe extern "C" fn doca_pe_destroy(pe: *mut DocaPe) -> DocaError {
    guarded("doca_pe_destroy", || {
        let Some(engine) = self::pe(pe) else { return invalid() };
        if engine.num_ctxs() > 0 || engine.is_in_progress() {
            return doca_core::Error::InUse.code();
        }
        // SAFETY: PES only holds DocaPe handles.
        drop(unsafe { PES.remove(pe) });
        DOCA_SUCCESS
    })
}

/// `doca_pe_progress`: 1 when anything happened, else 0 (also for a bad handle).
#[no_mangle]
pub extern "C" fn doca_pe_progress(pe: *mut DocaPe) -> u8 {
    let mut made = 0u8;
    guarded("doca_pe_progress", || {
        let Some(engine) = self::pe(pe) else { return invalid() };
        made = engine.progress() as u8;
        DOCA_SUCCESS
    });
    made
}

/// `doca_pe_get_num_inflight_tasks`.
///
/// # Safety
/// `num_inflight_tasks` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_pe_get_num_inflight_tasks(
    pe: *const DocaPe,
    num_inflight_tasks: *mut usize,
) -> DocaError {
    guarded("doca_pe_get_num_inflight_tasks", || match self::pe(pe) {
        Some(engine) => out(num_inflight_tasks, engine.num_inflight_tasks()),
        None => invalid(),
    })
}

/// `doca_pe_get_notification_handle`: an fd for epoll/poll, the same for the engine's life.
///
/// # Safety
/// `handle` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_pe_get_notification_handle(pe: *const DocaPe, handle: *mut c_int) -> DocaError {
    guarded("doca_pe_get_notification_handle", || match self::pe(pe) {
        Some(engine) => out(handle, engine.notification_handle().as_raw_fd()),
        None => invalid(),
    })
}

/// `doca_pe_request_notification`: arm before sleeping on the handle.
#[no_mangle]
pub extern "C" fn doca_pe_request_notification(pe: *mut DocaPe) -> DocaError {
    guarded("doca_pe_request_notification", || match self::pe(pe) {
        Some(engine) => doca_core::Error::code_of(&engine.request_notification()),
        None => invalid(),
    })
}

/// `doca_pe_clear_notification`: after waking, before progress (`handle` is ignored, as the
/// DOCA samples pass 0).
#[no_mangle]
pub extern "C" fn doca_pe_clear_notification(pe: *mut DocaPe, handle: c_int) -> DocaError {
    let _ = handle;
    guarded("doca_pe_clear_notification", || match self::pe(pe) {
        Some(engine) => doca_core::Error::code_of(&engine.clear_notification()),
        None => invalid(),
    })
}
