//! A C ABI over the Rust crates: DOCA's function names, C types and error codes, so that C
//! code written against DOCA's headers builds against `capi/include/` and links this library.
//!
//! Covered so far: `doca_error.h`, `doca_types.h`, `doca_dev.h`, `doca_pe.h`, `doca_ctx.h`,
//! the control path of `doca_cc.h`, and the core of `doca_mmap.h`, `doca_buf_inventory.h` and
//! `doca_buf.h` (see the book's chapter "Running DOCA C code on the
//! emulator" for what is and is not there yet).
//!
//! Rules every exported function keeps:
//! - handles are opaque pointers handed out by this library; a NULL or unknown (freed) handle
//!   is `DOCA_ERROR_INVALID_VALUE`, never a crash (a freed address that the allocator has
//!   reused for a new object of the same type cannot be told apart);
//! - a panic never crosses the boundary: it is caught and returned as
//!   `DOCA_ERROR_UNEXPECTED`;
//! - the thread rules of the Rust API hold: a progress engine and its contexts stay on the
//!   thread that created them.

#![allow(unsafe_code)]

mod argp;
mod buf;
mod cc;
mod compat25;
mod ctx;
mod dev;
mod error;
mod fast;
mod handles;
mod legacy;
mod log;
mod mmap;
mod pe;
mod task;

pub use argp::*;
pub use buf::*;
pub use cc::*;
pub use compat25::*;
pub use ctx::*;
pub use dev::*;
pub use error::*;
pub use fast::*;
pub use legacy::*;
pub use log::*;
pub use mmap::*;
pub use pe::*;
pub use task::*;

/// `doca_error_t`: a DOCA error code (`DOCA_SUCCESS` is 0).
pub type DocaError = i32;

/// `DOCA_SUCCESS`.
pub const DOCA_SUCCESS: DocaError = 0;

/// The code of a Rust result.
fn code<T>(r: &doca_core::Result<T>) -> DocaError {
    doca_core::Error::code_of(r)
}

/// Runs `f`, turning a panic into `DOCA_ERROR_UNEXPECTED`.
fn guarded(f: impl FnOnce() -> DocaError) -> DocaError {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(e) => e,
        Err(_) => {
            tracing_unexpected();
            doca_core::Error::Unexpected.code()
        }
    }
}

#[cold]
fn tracing_unexpected() {
    eprintln!("doca capi: internal panic caught at the C boundary: DOCA_ERROR_UNEXPECTED");
}

/// `DOCA_ERROR_INVALID_VALUE`.
fn invalid() -> DocaError {
    doca_core::Error::InvalidValue.code()
}
