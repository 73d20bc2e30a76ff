//! DOCA Core's execution model in safe Rust: the part of DOCA every library stands on.
//!
//! | DOCA                                   | here                                   |
//! |----------------------------------------|----------------------------------------|
//! | `doca_error_t`, `doca_error_get_*`     | [`Error`], [`Result`], [`Refused`], [`InProgressOk`] |
//! | `union doca_data`                      | [`Data`]                               |
//! | `doca_devinfo`, `doca_dev`, reps       | [`dev`]: [`DevInfo`], [`Dev`], [`DevInfoRep`], [`DevRep`] |
//! | the machine (emulated)                 | [`topology`]: [`Topology`], [`CapSpec`] |
//! | `doca_pe`                              | [`Pe`]                                 |
//! | `doca_ctx`, `doca_ctx_states`          | [`Ctx`], [`CtxState`] ([`ctx`] has the transition table) |
//! | `doca_task`                            | [`Task`], [`TaskPool`]                 |
//! | `doca_graph` (DOCA Core's task graphs)  | [`graph`]: [`Graph`], [`GraphInstance`], [`Node`] |
//! | an engine library's kit: its context, queue, DOCA's fatal-failure rule | [`queue`]: [`queue::Engine`], [`queue::Fifo`], [`queue::LibCtx`] |
//! | notification handles, doorbells        | [`doca_link::notify`] (the link crate, below core) |
//! | time of a progress pass (testable)     | [`clock`]: [`Now`], [`Clock`]          |
//! | fault plans (`DOCA_EMU_FAULTS`)        | [`fault`]: [`fault::install_text`], [`fault::fired`] |
//! | `doca_clock` (3.3): NIC and host clocks | [`hwclock`]: [`HwClock`], [`ClockType`] |
//! | `doca_emu`'s view of this process     | [`status`]: the status page and the plan mailbox |
//! | log lines another process can cause    | [`throttle`]: one line per kind and second, with a count |
//! | the DOCA version emulated              | [`DOCA_VERSION`]                       |
//!
//! Library contexts (comm channel servers, clients, producers, consumers, …) plug in
//! through [`CtxOps`] and [`TaskLib`]; core knows nothing else about them. [`loopback`] is a
//! complete small library context built that way.
//!
//! Threading: a [`Pe`] and the contexts connected to it stay on the thread that created
//! them; every callback runs inside [`Pe::progress`] on that thread. Devices, errors and
//! [`Data`] are `Send + Sync`.

#![forbid(unsafe_code)]

mod callback;
pub mod clock;
pub mod ctx;
mod data;
pub mod dev;
mod error;
pub mod fault;
pub mod graph;
pub mod hwclock;
pub mod loopback;
pub mod pci;
mod pe;
pub mod queue;
pub mod status;
pub mod task;
pub mod throttle;
pub mod topology;

/// The DOCA version this emulator claims to be (its API level: what `-v` prints, what
/// `doca_caps` reports, the `Version:` of the installed pkg-config files). One value, in one
/// file: `core/DOCA_VERSION`, which the install script reads too.
pub const DOCA_VERSION: &str = include_str!("../DOCA_VERSION").trim_ascii();

pub use callback::CbSlot;
pub use clock::{Clock, Now};
pub use ctx::{Ctx, CtxCell, CtxCore, CtxOps, CtxState, Started};
pub use data::Data;
pub use dev::{
    build_side, devinfo_create_list, explain_unmatched_pci, open_device_rep_with_pci,
    open_device_with_capabilities, open_device_with_pci, process_side, set_build_side, Dev, DevCheck,
    DevInfo, DevInfoRep, DevRep, RepFilter, SIDE_ENV,
};
#[doc(hidden)]
pub use error::unlogged as __unlogged;
pub use error::{cap_no as __cap_no, require};
pub use error::{Error, InProgressOk, Refused, Result, UnrecognizedCode, SDK_STDERR_ENV, UNRECOGNIZED};
pub use graph::{Graph, GraphInstance, Node};
pub use hwclock::{ClockType, CrossTimestamp, HwClock, Timestamp};
pub use pci::PciAddr;
pub use pe::Pe;
pub use task::{Submit, Task, TaskCb, TaskId, TaskLib, TaskPayload, TaskPool, TaskRef, TaskSubmitFlags};
pub use topology::{CapSpec, DeviceKind, PciFuncType, RepKind, Topology, TOPOLOGY_ENV};
