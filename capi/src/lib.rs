//! A C ABI over the Rust crates: DOCA's function names, C types and error codes, so that C
//! code written against DOCA's headers builds against `capi/include/` and links this library.
//!
//! Covered: `doca_error.h`, `doca_types.h`, `doca_dev.h`, `doca_pe.h`, `doca_ctx.h`,
//! `doca_mmap.h`, `doca_buf_inventory.h`, `doca_buf.h`, `doca_cc.h`, `doca_cc_consumer.h`,
//! `doca_cc_producer.h` (with their 2.5 names, and the 2.7+ `doca_comch*.h` names in the
//! headers), `doca_comm_channel.h`, `doca_log.h`, `doca_argp.h`, `doca_version.h`, `doca_clock.h`, `doca_mmap_advise.h` and `doca_graph.h` (see the book's chapter
//! "Running DOCA C code on the emulator" for the details and what is not there).
//!
//! API levels: the seventeen `doca_cc` functions DOCA 2.6 reshaped under their 2.5 names
//! (`size_t` sizes, `size_t`-length and `bool` callbacks) are exported twice: in the 2.6 shape
//! under DOCA's name, and in the 2.5 shape as `<name>_v25` (`compat25`), which the headers of
//! an API level 2.5 install (`capi/install.sh --api-level 2.5`) name with asm labels.
//!
//! Rules every exported function keeps:
//! - every argument is checked before use, in one place (the `check` module): NULL out-parameters,
//!   pointer and length pairs (a length beyond what the call can use is refused before a
//!   byte is read), handles; a refused call returns `DOCA_ERROR_INVALID_VALUE` and logs one
//!   line naming the function and the reason;
//! - handles are opaque tokens handed out by this library (a slot, its generation and the
//!   kind of object, never an address); a NULL, forged, destroyed or wrong-kind handle is
//!   `DOCA_ERROR_INVALID_VALUE`, never a crash, even after its slot was reused;
//! - a panic never crosses the boundary: it is caught and returned as
//!   `DOCA_ERROR_UNEXPECTED`;
//! - the thread rules of the Rust API hold: a progress engine and its contexts stay on the
//!   thread that created them.
//! - which exports are `unsafe extern "C"`: exactly those that read or write memory C points
//!   to other than a handle (out-parameters, C strings, byte ranges, arrays such as `argv`);
//!   an export taking only handles, numbers and callbacks is a safe `extern "C" fn` (handles
//!   are checked tokens, never dereferenced as given). An alias (`doca_comch_*`, the 2.5
//!   names) keeps its original's safety.
//! - the contract is checked, not trusted: `tests/tests/c_contract.rs` compares what
//!   `capi/include` declares with what this library exports (`nm -D`) and links an object
//!   of plain prototypes taking every function's address, and binds every declaration, at
//!   each API level, to its export as a Rust function pointer of the declared type (a width
//!   or `const` drift fails to build); `tests/tests/capi_fuzz.rs` fails
//!   for an export without a fuzz case.

#![allow(unsafe_code)]

mod advise;
mod argp;
mod buf;
mod cc;
mod check;
mod clock;
mod comch;
mod compat25;
mod ctx;
mod dev;
mod dma;
mod error;
mod fast;
// doca_graph
mod graph;
mod handles;
mod legacy;
mod libctx;
mod log;
mod mmap;
mod pe;
// doca_sha
mod sha;
// doca_sync_event
mod sync_event;
mod task;
mod version;

pub use advise::*;
pub use argp::*;
pub use buf::*;
pub use cc::*;
pub use clock::*;
pub use comch::*;
pub use compat25::*;
pub use ctx::*;
pub use dev::*;
pub use dma::*;
pub use error::*;
pub use fast::*;
// doca_graph
pub use graph::*;
pub use legacy::*;
pub use log::*;
pub use mmap::*;
pub use pe::*;
// doca_sha
pub use sha::*;
// doca_sync_event
pub use sync_event::*;
pub use task::*;
pub use version::*;

/// `doca_error_t`: a DOCA error code (`DOCA_SUCCESS` is 0).
pub type DocaError = i32;

/// `DOCA_SUCCESS`.
pub const DOCA_SUCCESS: DocaError = 0;

/// The code of a Rust result.
fn code<T>(r: &doca_core::Result<T>) -> DocaError {
    doca_core::Error::code_of(r)
}

/// Runs the C function `name`'s body `f`: its refusals logged once ([`check::Call`]), a
/// panic turned into `DOCA_ERROR_UNEXPECTED`.
fn guarded(name: &'static str, f: impl FnOnce() -> DocaError) -> DocaError {
    log::default_sdk_log();
    let call = check::Call::enter(name);
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
fn shielded<T>(name: &'static str, fallback: T, f: impl FnOnce() -> T) -> T {
    log::default_sdk_log();
    let call = check::Call::enter(name);
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

/// `DOCA_ERROR_INVALID_VALUE` (logged with the reason a check noted, else as an invalid
/// argument).
fn invalid() -> DocaError {
    check::refuse(|| "invalid argument".into())
}
