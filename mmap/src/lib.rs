//! DOCA memory maps (`doca_mmap`): a memory range with access permissions, registered with
//! devices, and exported to the other side of the emulated PCIe link.
//!
//! | DOCA                                  | here                                     |
//! |---------------------------------------|------------------------------------------|
//! | `struct doca_mmap`                    | [`Mmap`] (the state table is in its module docs) |
//! | `enum doca_access_flag`               | [`AccessFlags`]                          |
//! | the memory given to `set_memrange`    | [`Memory`]: [`SharedMem`], `Vec<u8>`, `&'static [u8]`, raw |
//! | `doca_mmap_export_pci` / `_create_from_export` | [`Mmap::export_pci`], [`Mmap::create_from_export`] (memory registered by address: [`served`]; an exporter across the TCP link: [`linked`]) |
//!
//! **Shared backing.** [`SharedMem::alloc`] returns page-aligned memory backed by a memfd:
//! another process can map the very same pages (and it gives comm-channel consumers the
//! one-copy fast path). Any other memory — a `Vec`, a static, memory from C's `malloc` —
//! can be exported too: its export is **served** by threads of this library in the exporting
//! process ([`served`]: the bytes through a window of shared memory per connection), so the
//! exporter's own threads may do nothing at all; for heap memory the pages wholly inside the
//! range are moreover swapped for shared memory while exported, so an importer of another
//! process maps them and copies them at memory speed (only the partial pages at the ends stay
//! served).
//!
//! **Access to the bytes.** Buffers reach the bytes through a [`MapAccess`] (counted in
//! [`Mmap::num_bufs`] by their inventory's [`BufCount`], or by a [`MapRef`]): bounds-checked
//! copies, or guards ([`Bytes`], [`BytesMut`]) that are tracked so that, within a process,
//! a range borrowed for writing is never borrowed twice (`IN_USE` instead). Shared memory
//! has one tracker per memory in the process, whichever handle reaches it — the
//! [`SharedMem`] itself, a map of it, an import of its export, a [`RemoteMem`] of it — so
//! two mappings of the same pages never give safe code two `&mut` over the same bytes.
//! Memory shared with another process can still change under a guard: as on the hardware, a
//! buffer must not be touched while a task or the peer owns it.
//!
//! **Peer budgets** ([`budget`]): what one peer process may make this process map and hold
//! (memory, descriptors), per connection and per peer process (the ledger is
//! [`doca_link::budget`]; the topology's limits are read here).
//!
//! **Shared memory files** ([`doca_link::memfd`]) are sealed against resizing when created
//! and checked for the seals when received, so no process can truncate pages another one
//! maps.

#![deny(unsafe_code)]

pub mod budget;
mod desc;
pub mod linked;
mod memory;
mod mmap;
pub mod served;
mod shm;
pub mod swap;

pub use desc::{AccessFlags, EXPORT_DESC_LEN};
pub use memory::{Memory, RawMem, RemoteMem, SharedMem, SharedRegion};
pub use mmap::{
    BufCount, MapAccess, MapPin, MapRef, Mmap, CAPS, CAP_CREATE_FROM_EXPORT_PCI, CAP_EXPORT_PCI,
    DEFAULT_MAX_NUM_DEVICES,
};
pub use shm::{Bytes, BytesMut, Region};

#[doc(hidden)]
pub use mmap::{served_shared_pages, stalled_served_request};
#[doc(hidden)]
pub use swap::frozen_writes;

/// For this crate's tests that export: a private fabric directory (where the memory
/// service's socket goes), set before the first export, so tests never touch the user's
/// default fabric directory. Every test that exports calls it first.
#[cfg(test)]
pub(crate) fn private_fabric() {
    static DIR: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DIR.get_or_init(|| std::mem::forget(doca_link::doctest::PrivateFabric::new()));
}
