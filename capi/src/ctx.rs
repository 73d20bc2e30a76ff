//! `doca_ctx.h` and the generic task calls of `doca_pe.h` (`doca_task_*`).

use std::ffi::c_void;

use doca_core::{Ctx, CtxState, Data};

use crate::check::out;
use crate::handles::{Handles, Kind};
use crate::pe::pe;
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// `union doca_data`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union DocaData {
    /// As a pointer.
    pub ptr: *mut c_void,
    /// As a 64-bit value.
    pub u64: u64,
}

impl DocaData {
    pub(crate) fn from_data(d: Data) -> DocaData {
        DocaData { u64: d.as_u64() }
    }

    pub(crate) fn to_data(self) -> Data {
        // SAFETY: both fields are 8 bytes of plain data; any bit pattern is a valid u64.
        Data::from_u64(unsafe { self.u64 })
    }
}

/// `struct doca_ctx`: the generic face of a library context (what `*_as_ctx` gives).
pub struct DocaCtx(pub(crate) Ctx);

pub(crate) static CTXS: Handles = Handles::new(Kind::Ctx);

pub(crate) fn ctx<'a>(p: *const DocaCtx) -> Option<&'a DocaCtx> {
    // SAFETY: CTXS only holds DocaCtx handles.
    unsafe { CTXS.get(p) }
}

/// `doca_ctx_state_changed_callback_t`.
pub type DocaCtxStateChangedCb = Option<unsafe extern "C" fn(DocaData, *mut DocaCtx, u32, u32)>;

/// `doca_pe_connect_ctx`.
#[no_mangle]
pub extern "C" fn doca_pe_connect_ctx(pe: *mut crate::pe::DocaPe, ctx: *mut DocaCtx) -> DocaError {
    guarded("doca_pe_connect_ctx", || match (self::pe(pe), self::ctx(ctx)) {
        (Some(engine), Some(c)) => doca_core::Error::code_of(&engine.connect_ctx(&c.0)),
        _ => invalid(),
    })
}

/// `doca_ctx_start`: `DOCA_ERROR_IN_PROGRESS` for an asynchronous start.
#[no_mangle]
pub extern "C" fn doca_ctx_start(ctx: *mut DocaCtx) -> DocaError {
    guarded("doca_ctx_start", || match self::ctx(ctx) {
        Some(c) => doca_core::Error::code_of(&c.0.start()),
        None => invalid(),
    })
}

/// `doca_ctx_stop`: `DOCA_ERROR_IN_PROGRESS` while tasks are out.
#[no_mangle]
pub extern "C" fn doca_ctx_stop(ctx: *mut DocaCtx) -> DocaError {
    guarded("doca_ctx_stop", || match self::ctx(ctx) {
        Some(c) => doca_core::Error::code_of(&c.0.stop()),
        None => invalid(),
    })
}

/// `doca_ctx_get_state`.
///
/// # Safety
/// `state` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_ctx_get_state(ctx: *const DocaCtx, state: *mut u32) -> DocaError {
    guarded("doca_ctx_get_state", || match self::ctx(ctx) {
        Some(c) => out(state, c.0.state() as u32),
        None => invalid(),
    })
}

/// `doca_ctx_set_user_data`.
#[no_mangle]
pub extern "C" fn doca_ctx_set_user_data(ctx: *mut DocaCtx, user_data: DocaData) -> DocaError {
    guarded("doca_ctx_set_user_data", || match self::ctx(ctx) {
        Some(c) => {
            c.0.set_user_data(user_data.to_data());
            DOCA_SUCCESS
        }
        None => invalid(),
    })
}

/// `doca_ctx_get_user_data`.
///
/// # Safety
/// `user_data` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_ctx_get_user_data(ctx: *const DocaCtx, user_data: *mut DocaData) -> DocaError {
    guarded("doca_ctx_get_user_data", || match self::ctx(ctx) {
        Some(c) => out(user_data, DocaData::from_data(c.0.user_data())),
        None => invalid(),
    })
}

/// `doca_ctx_flush_tasks`: hands over the tasks kept back by `doca_task_submit_ex` without
/// `DOCA_TASK_SUBMIT_FLAG_FLUSH` (nothing for NULL or a context that is not Running).
#[no_mangle]
pub extern "C" fn doca_ctx_flush_tasks(ctx: *mut DocaCtx) {
    guarded("doca_ctx_flush_tasks", || match self::ctx(ctx) {
        Some(c) => {
            c.0.flush_tasks();
            DOCA_SUCCESS
        }
        None => invalid(),
    });
}

/// `doca_ctx_get_num_inflight_tasks`.
///
/// # Safety
/// `num_inflight_tasks` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_ctx_get_num_inflight_tasks(
    ctx: *const DocaCtx,
    num_inflight_tasks: *mut usize,
) -> DocaError {
    guarded("doca_ctx_get_num_inflight_tasks", || match self::ctx(ctx) {
        Some(c) => out(num_inflight_tasks, c.0.num_inflight_tasks()),
        None => invalid(),
    })
}

/// `doca_ctx_set_state_changed_cb`: called from `doca_pe_progress` for every transition,
/// the context already in the new state.
#[no_mangle]
pub extern "C" fn doca_ctx_set_state_changed_cb(ctx: *mut DocaCtx, cb: DocaCtxStateChangedCb) -> DocaError {
    guarded("doca_ctx_set_state_changed_cb", || {
        let Some(c) = self::ctx(ctx) else { return invalid() };
        let Some(cb) = cb else { return crate::check::refuse(|| "NULL callback".into()) };
        let handle = ctx;
        doca_core::Error::code_of(&c.0.set_state_changed_cb(
            move |data, _, prev: CtxState, next: CtxState| {
                // a C callback the application registered for this context; it gets the
                // context's own handle, valid while the context lives (callbacks run only then).
                // SAFETY: see above.
                unsafe { cb(DocaData::from_data(data), handle, prev as u32, next as u32) }
            },
        ))
    })
}
