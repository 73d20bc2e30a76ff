//! The C boundary every export runs inside: its name for the one log line a refused call
//! leaves ([`crate::check`]), the SDK logger set up, and a panic caught and turned into
//! `DOCA_ERROR_UNEXPECTED` (it never unwinds into C).

use crate::check::Call;
use crate::{DocaError, DOCA_SUCCESS};

/// Runs the C function `name`'s body `f`: its refusals logged once ([`Call`]), a
/// panic turned into `DOCA_ERROR_UNEXPECTED`.
pub(crate) fn guarded(name: &'static str, f: impl FnOnce() -> DocaError) -> DocaError {
    crate::log::default_sdk_log();
    let call = Call::enter(name);
    let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(e) => e,
        Err(_) => {
            tracing_unexpected(name);
            doca_core::Error::Unexpected.code()
        }
    };
    call.leave(r != DOCA_SUCCESS);
    r
}

/// [`guarded`] for the calls whose result is not an error code (getters returning a pointer
/// or a number): a panic gives `fallback`; a refused argument is logged.
pub(crate) fn shielded<T>(name: &'static str, fallback: T, f: impl FnOnce() -> T) -> T {
    crate::log::default_sdk_log();
    let call = Call::enter(name);
    let r = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(v) => v,
        Err(_) => {
            tracing_unexpected(name);
            fallback
        }
    };
    call.leave(true);
    r
}

#[cold]
fn tracing_unexpected(name: &str) {
    tracing::error!(target: "doca_sdk", "{name}: internal panic caught at the C boundary");
    eprintln!("doca capi: {name}: internal panic caught at the C boundary: DOCA_ERROR_UNEXPECTED");
}
