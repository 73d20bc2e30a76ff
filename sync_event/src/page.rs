//! The shared page of one sync event: a sealed memfd of one page, mapped `MAP_SHARED` by the
//! exporter and by every process that imported the event, holding the value, the futex word
//! blocking waits sleep on and one armed flag per doorbell slot of the exporter's
//! [`doca_link::bells::Board`] (the doorbells themselves are the exporter's to hold: no pid,
//! no descriptor is written here).
//!
//! The one module of the crate with `unsafe`: it maps and unmaps the page.
//!
//! Layout (all fields atomics, plain data, no pointers): see [`Header`]. The exporter writes
//! `magic` and `state = LIVE` before the page can be exported. The page reaches an importer
//! only through the exporter's memory service ([`doca_link::rendezvous`]: the export blob
//! carries the service's name and a 128-bit token, the memfd comes over `SCM_RIGHTS`, nothing
//! is opened through `/proc`); the importer checks that what it got is a sealed memfd of one
//! page and reads the magic through `pread` (never mapping a file that is not one).
//! A peer can write any bits into any field: every reader treats each field as untrusted
//! data (a value is any `u64`; an armed flag only decides whether a registered doorbell is
//! rung; the futex word only decides when to look again; the state word is a hint, which an
//! importer confirms on its connection to the exporter before it believes the event gone).

#![allow(unsafe_code)]

use std::os::fd::{AsFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

use doca_core::{fail, Error, Result};
use doca_link::memfd::{check_sealed, create_sealed};
use rustix::mm::{MapFlags, ProtFlags};

/// The page's size (the smallest mapping).
pub(crate) const PAGE_LEN: usize = 4096;
/// "DOCASEV1".
const MAGIC: u64 = u64::from_le_bytes(*b"DOCASEV1");
/// Engines (contexts in Running) that can be woken at once, over all processes (each
/// importing process registers at most `cap peer.doorbells_per_process` of them).
pub const MAX_WAKERS: usize = 64;
const _: () = assert!(MAX_WAKERS <= 64, "one bit of the armed word per slot");
/// `state`: the exporter is alive and has not destroyed the event.
pub(crate) const LIVE: u32 = 1;
/// `state`: the exporter destroyed the event — a hint for importers, which confirm it on
/// their connection to the exporter (a peer can write this word).
pub(crate) const REVOKED: u32 = 2;

/// The page.
#[repr(C)]
pub(crate) struct Header {
    magic: AtomicU64,
    pub(crate) state: AtomicU32,
    /// The futex word: bumped after every update (any process), after the value changed.
    pub(crate) seq: AtomicU32,
    /// Threads asleep on `seq` (an updater calls `FUTEX_WAKE` only when some are).
    pub(crate) sleepers: AtomicU32,
    _pad: AtomicU32,
    /// The value (unless the exporter keeps it in its own memory: `set_addr`).
    pub(crate) value: AtomicU64,
    /// One bit per doorbell slot: set by its engine before it sleeps, cleared when it wakes
    /// (so an update learns with one load whether any engine sleeps).
    pub(crate) armed: AtomicU64,
}

const _: () = assert!(std::mem::size_of::<Header>() <= PAGE_LEN);

/// A mapping of one event's page.
pub(crate) struct Page {
    fd: OwnedFd,
    base: NonNull<Header>,
}

// SAFETY: the mapping is atomics only, valid for the life of `Page`; any thread may use it.
unsafe impl Send for Page {}
// SAFETY: as above (shared access goes through atomics).
unsafe impl Sync for Page {}

fn os(what: &str, e: rustix::io::Errno) -> Error {
    fail!(Error::OperatingSystem, "sync event: {what}: {e}")
}

fn map(fd: &OwnedFd) -> Result<NonNull<Header>> {
    // A file of PAGE_LEN bytes sealed against shrinking (so no access can fault), shared with
    // nothing in this process yet.
    // SAFETY: a new mapping at an address the kernel chooses, of that file.
    let p = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            PAGE_LEN,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED,
            fd,
            0,
        )
    }
    .map_err(|e| os("mmap", e))?;
    NonNull::new(p.cast::<Header>())
        .ok_or_else(|| fail!(Error::OperatingSystem, "sync event: mmap gave NULL"))
}

impl Page {
    /// A new page: value 0, LIVE.
    pub(crate) fn create() -> Result<Page> {
        let fd = create_sealed("doca-sync-event", PAGE_LEN)?;
        let page = Page { base: map(&fd)?, fd };
        let h = page.header();
        h.magic.store(MAGIC, Ordering::Relaxed);
        // Release: an importer that reads LIVE (Acquire, or through the file) sees the rest.
        h.state.store(LIVE, Ordering::Release);
        Ok(page)
    }

    /// The page an exporter's memory service handed over (`fd`, from
    /// [`doca_link::rendezvous`]; a peer chose it): it must be a sealed memfd of one page
    /// whose magic matches, else `NOT_FOUND`. Read with `pread` before anything is mapped.
    pub(crate) fn from_exporter(fd: doca_link::discard::PeerFd, pid: u32) -> Result<Page> {
        if check_sealed(&fd, Some(PAGE_LEN)).is_err() {
            return Err(fail!(
                Error::NotFound,
                "sync event import: process {pid} handed over no sync event page"
            ));
        }
        let mut head = [0u8; 8];
        let n = rustix::io::pread(&fd, &mut head, 0).map_err(|e| os("pread", e))?;
        if n != head.len() || u64::from_ne_bytes(head) != MAGIC {
            return Err(fail!(
                Error::NotFound,
                "sync event import: process {pid} handed over a page that holds no sync event"
            ));
        }
        let fd = fd.into_inner();
        Ok(Page { base: map(&fd)?, fd })
    }

    pub(crate) fn header(&self) -> &Header {
        // SAFETY: mapped for the life of `self`, page-aligned, PAGE_LEN bytes (larger than
        // Header, asserted above), atomics only (any bits are a valid Header).
        unsafe { self.base.as_ref() }
    }

    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// The page as bytes (what a hostile peer that mapped it can write: for tests).
    pub(crate) fn bytes(&self) -> &[AtomicU8] {
        // SAFETY: PAGE_LEN bytes mapped for the life of `self`; atomics of one byte have no
        // alignment or validity requirement beyond what the mapping gives.
        unsafe { std::slice::from_raw_parts(self.base.as_ptr().cast::<AtomicU8>(), PAGE_LEN) }
    }
}

impl AsFd for Page {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, of PAGE_LEN bytes; nothing borrows it any more
        // (every `&Header` borrows `self`).
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), PAGE_LEN) };
    }
}
