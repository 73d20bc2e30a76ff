//! A C ABI over the Rust crates: DOCA's function names, C types and error codes, so that C
//! code written against DOCA's headers builds against `capi/include/` and links this library.
//! The book's chapter "Running DOCA C code on the emulator" says how to install and build
//! against it, and what is not there.
//!
//! One file per DOCA header (or family of headers):
//!
//! | module         | C header(s)                                                              |
//! |----------------|--------------------------------------------------------------------------|
//! | `error`      | `doca_error.h` (and `doca_types.h`'s codes)                               |
//! | `version`    | `doca_version.h`                                                          |
//! | `log`        | `doca_log.h` (the `doca_log` variadic entry point is in `c/doca_log.c`)   |
//! | `argp`       | `doca_argp.h`: the samples' argument parser                               |
//! | `dev`        | `doca_dev.h`: devices, representors, PCI addresses, capabilities          |
//! | `pe`         | `doca_pe.h`: progress engines                                            |
//! | `ctx`        | `doca_ctx.h` and the generic task calls of `doca_pe.h`                    |
//! | `task`       | `struct doca_task`: one C handle per task of every kind                   |
//! | `mmap`       | `doca_mmap.h`: maps, export and import                                   |
//! | `buf`        | `doca_buf_inventory.h`, `doca_buf.h`                                      |
//! | `graph`      | `doca_graph.h`                                                           |
//! | `clock`      | `doca_clock.h` (3.3)                                                     |
//! | `sync_event` | `doca_sync_event.h` (the 2.5/2.6 names and the 2.7+ ones)                |
//! | `cc`         | `doca_cc.h`: servers, clients, connections, control-path sends           |
//! | `fast`       | `doca_cc_consumer.h`, `doca_cc_producer.h`: the fast path                |
//! | `comch`      | the 2.7+ `doca_comch*.h` names of the two rows above                      |
//! | `compat25`   | the DOCA 2.5 shapes of `doca_cc*.h` (exported as `<name>_v25`)            |
//! | `legacy`     | `doca_comm_channel.h`: the legacy endpoint API                           |
//! | `dma`        | `doca_dma.h`                                                             |
//! | `sha`        | `doca_sha.h`                                                             |
//! | `aes_gcm`    | `doca_aes_gcm.h`                                                         |
//! | `compress`   | `doca_compress.h`                                                        |
//! | `erasure_coding` | `doca_erasure_coding.h`                                              |
//! | `rdma`       | `doca_rdma.h` (level 2.7)                                                |
//! | `advise`     | `doca_mmap_advise.h` (2.9+)                                              |
//!
//! And what every export shares: `boundary` (the panic boundary and the call's name),
//! `check` (argument checks, the one log line a refused call leaves), `handles` (opaque
//! tokens for `struct doca_x *`), `libctx` (create/destroy/as_ctx of a library context with
//! tasks, written once).
//!
//! API levels: the seventeen `doca_cc` functions DOCA 2.6 reshaped under their 2.5 names
//! (`size_t` sizes, `size_t`-length and `bool` callbacks) are exported twice: in the 2.6 shape
//! under DOCA's name, and in the 2.5 shape as `<name>_v25` (`compat25`), which the headers of
//! an API level 2.5 install (`capi/install.sh --api-level 2.5`) name with asm labels.
//!
//! Rules every exported function keeps:
//! - every argument is checked before use, in one place (`check`): NULL out-parameters,
//!   pointer and length pairs (a length beyond what the call can use is refused before a
//!   byte is read), handles; a refused call returns `DOCA_ERROR_INVALID_VALUE` and logs one
//!   line naming the function and the reason (a few calls DOCA's own samples make with NULL
//!   are documented exceptions, e.g. `doca_dev_close(NULL)` succeeds);
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
mod aes_gcm;
mod argp;
mod boundary;
mod buf;
mod cc;
mod check;
mod clock;
mod comch;
mod compat25;
mod compress;
mod ctx;
mod dev;
mod dma;
mod erasure_coding;
mod error;
mod fast;
mod graph;
mod handles;
mod legacy;
mod libctx;
mod log;
mod mmap;
mod pe;
mod rdma;
mod sha;
mod sync_event;
mod task;
mod version;

pub use advise::*;
pub use aes_gcm::*;
pub use argp::*;
pub use buf::*;
pub use cc::*;
pub use clock::*;
pub use comch::*;
pub use compat25::*;
pub use compress::*;
pub use ctx::*;
pub use dev::*;
pub use dma::*;
pub use erasure_coding::*;
pub use error::*;
pub use fast::*;
pub use graph::*;
pub use legacy::*;
pub use log::*;
pub use mmap::*;
pub use pe::*;
pub use rdma::*;
pub use sha::*;
pub use sync_event::*;
pub use task::*;
pub use version::*;

use boundary::{guarded, shielded};
use check::invalid;
use error::code;

/// `doca_error_t`: a DOCA error code (`DOCA_SUCCESS` is 0).
pub type DocaError = i32;

/// `DOCA_SUCCESS`.
pub const DOCA_SUCCESS: DocaError = 0;
