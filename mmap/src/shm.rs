//! Shared memory segments: a memfd holding one header page and the data pages, mapped
//! `MAP_SHARED` so that another process mapping the same memfd sees the very same bytes.
//!
//! This is one of the few modules with `unsafe`: it maps and unmaps memory and copies bytes
//! in and out of mappings. Everything outside it sees bounds-checked safe calls.
//!
//! Header page layout (all fields atomics; the header holds plain data, never pointers):
//! `magic: u64`, `data_len: u64`, then [`MAX_EXPORTS`] export slots of
//! `{ state: u32, perms: u32, offset: u64, len: u64, tag: u64, spare: u64 }`. The tag tells an
//! export from a later one in the same slot; it is no secret (every importer of the memory
//! reads this page): the secret that names an export lives only in the exporter's memory
//! service ([`doca_link::rendezvous`]), which hands the memfd over.
//! An exporter fills a slot's fields and then stores `state = LIVE` with `Release`; an
//! importer loads `state` with `Acquire` before reading the other fields (the pair that
//! publishes a slot). Revocation stores `state = REVOKED` with `Release`; importers re-check
//! it with `Acquire` before each access.

#![allow(unsafe_code)]

use std::cell::Cell;
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use doca_core::{fail, peer_fail, Error, Result};

use doca_link::discard::PeerFd;
use doca_link::memfd::{check_sealed, create_sealed};
use parking_lot::Mutex;
use rustix::mm::{MapFlags, ProtFlags};
use smallvec::SmallVec;

/// Magic number at the start of every segment ("DOCAEMU1").
const MAGIC: u64 = u64::from_le_bytes(*b"DOCAEMU1");
/// How many exports one segment can carry at once.
pub(crate) const MAX_EXPORTS: usize = 32;

pub(crate) const SLOT_FREE: u32 = 0;
pub(crate) const SLOT_LIVE: u32 = 1;
pub(crate) const SLOT_REVOKED: u32 = 2;

#[repr(C)]
pub(crate) struct Slot {
    pub(crate) state: AtomicU32,
    pub(crate) perms: AtomicU32,
    pub(crate) offset: AtomicU64,
    pub(crate) len: AtomicU64,
    pub(crate) tag: AtomicU64,
    _spare: AtomicU64,
}

#[repr(C)]
pub(crate) struct Header {
    magic: AtomicU64,
    data_len: AtomicU64,
    pub(crate) slots: [Slot; MAX_EXPORTS],
}

fn os(what: &str, e: rustix::io::Errno) -> Error {
    fail!(Error::OperatingSystem, "{what}: {e}")
}

/// A new shared, read-write mapping of `map_len` bytes of `fd` from `offset`
/// (`NO_MEMORY` when the address space or memory is short).
fn map_shared(fd: &OwnedFd, map_len: usize, offset: u64) -> Result<NonNull<u8>> {
    // SAFETY: a fresh shared mapping of a file the caller holds; no existing memory is
    // affected.
    let ptr = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            map_len,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED,
            fd,
            offset,
        )
    }
    .map_err(|e| match e {
        rustix::io::Errno::NOMEM => fail!(Error::NoMemory, "mmap of {map_len} bytes: not enough memory"),
        e => os("mmap", e),
    })?;
    NonNull::new(ptr.cast::<u8>()).ok_or_else(|| fail!(Error::OperatingSystem, "mmap gave null"))
}

pub(crate) fn page_size() -> usize {
    rustix::param::page_size()
}

fn round_up(n: usize, to: usize) -> Option<usize> {
    n.checked_add(to - 1).map(|v| v / to * to)
}

/// Where a window on bytes `offset..offset+len` of a segment's data area is mapped from:
/// (file offset, length), both page-aligned; `None` when that does not fit in `usize`.
pub(crate) fn window_of(offset: usize, len: usize) -> Option<(usize, usize)> {
    let page = page_size();
    let start = offset.checked_add(page)?;
    let map_off = start / page * page;
    Some((map_off, round_up(start.checked_add(len)?, page)? - map_off))
}

/// Counts `bytes` more of others' memory mapped here (`NO_MEMORY` beyond
/// [`FROM_ELSEWHERE_MAX`]); the caller gives them back when it unmaps.
pub(crate) fn reserve_from_elsewhere(bytes: usize) -> Result<()> {
    let reserved = FROM_ELSEWHERE.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
        used.checked_add(bytes).filter(|&n| n <= FROM_ELSEWHERE_MAX)
    });
    match reserved {
        Ok(_) => Ok(()),
        Err(used) => Err(peer_fail!(
            Error::NoMemory,
            "shared memory of {bytes} bytes from elsewhere: this process maps {used} bytes of others' memory already (at most {FROM_ELSEWHERE_MAX})"
        )),
    }
}

/// Checks a segment received from elsewhere without mapping it (seals, size, magic and
/// header read with `pread`) and returns the data length its header announces: `NOT_FOUND`
/// when it is not one of ours.
fn received_data_len(fd: BorrowedFd<'_>) -> Result<usize> {
    let file_len = check_sealed(fd, None)
        .map_err(|e| peer_fail!(Error::NotFound, "not a doca-emu shared memory segment ({})", e.name()))?;
    let page = page_size();
    if file_len < page * 2 || file_len % page != 0 {
        return Err(peer_fail!(Error::NotFound, "not a doca-emu shared memory segment (size {file_len})"));
    }
    let mut head = [0u8; 16];
    let n = rustix::io::pread(fd, &mut head, 0).map_err(|e| os("pread", e))?;
    let word = |i: usize| u64::from_ne_bytes(head[i..i + 8].try_into().expect("8 bytes"));
    if n != head.len() || word(0) != MAGIC {
        return Err(peer_fail!(Error::NotFound, "not a doca-emu shared memory segment (bad magic)"));
    }
    let data_len = usize::try_from(word(8)).unwrap_or(usize::MAX);
    if data_len == 0 || data_len > file_len - page {
        return Err(peer_fail!(Error::NotFound, "corrupt doca-emu shared memory segment header"));
    }
    Ok(data_len)
}

/// Gives back `bytes` counted by [`reserve_from_elsewhere`] (unmapped).
pub(crate) fn release_from_elsewhere(bytes: usize) {
    FROM_ELSEWHERE.fetch_sub(bytes, Ordering::Relaxed);
}

/// A mapping of part of a segment's data area received from elsewhere (see
/// [`Segment::open_window`]), unmapped on drop. Its file descriptor is not kept.
pub(crate) struct Window {
    base: NonNull<u8>,
    map_len: usize,
    /// Where the window's first byte is, from `base`.
    skip: usize,
    /// The borrow tracker of the memory (set once mapped).
    borrows: Option<Arc<Borrows>>,
}

// SAFETY: as for `Segment`: plain shared memory, reached through bounds-checked copies.
unsafe impl Send for Window {}
// SAFETY: as above.
unsafe impl Sync for Window {}

impl Window {
    /// The first byte of the range asked for.
    pub(crate) fn start(&self) -> NonNull<u8> {
        // SAFETY: `skip` < `map_len` (the range is not empty and lies in the mapping).
        unsafe { NonNull::new_unchecked(self.base.as_ptr().add(self.skip)) }
    }

    /// Bytes mapped (page-rounded).
    pub(crate) fn mapped_len(&self) -> usize {
        self.map_len
    }

    /// The tracker of bytes `base..` of the data area.
    pub(crate) fn tracker(&self, base: usize) -> Tracker {
        Tracker { borrows: self.borrows.clone().expect("set when mapped"), base }
    }
}

impl Drop for Window {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open_window`; every borrow of it is tied to `&self`.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.map_len) };
        FROM_ELSEWHERE.fetch_sub(self.map_len, Ordering::Relaxed);
    }
}

/// A mapping of a whole segment (header page + data), unmapped on drop.
pub(crate) struct Segment {
    fd: OwnedFd,
    base: NonNull<u8>,
    map_len: usize,
    data_len: usize,
    /// The borrows of this memory in this process, shared with every other mapping of the
    /// same memfd here (offsets in the data area).
    borrows: Arc<Borrows>,
    /// Received from elsewhere: counted in [`FROM_ELSEWHERE`].
    received: bool,
}

/// Bytes of segments received from other processes mapped at one time, at most
/// [`FROM_ELSEWHERE_MAX`]: a peer could otherwise hand over sparse memfds until this
/// process's address space is gone (every allocation after that would abort it).
static FROM_ELSEWHERE: AtomicUsize = AtomicUsize::new(0);
const FROM_ELSEWHERE_MAX: usize = 16 << 40;

// SAFETY: the mapping is plain shared memory with no thread affinity; concurrent access to
// the data bytes is governed by the callers (see the module and `Region` docs) and the
// header is only touched through atomics.
unsafe impl Send for Segment {}
// SAFETY: as above: `&Segment` only hands out atomics and bounds-checked raw copies.
unsafe impl Sync for Segment {}

impl Segment {
    /// A new segment with `data_len` usable bytes (zeroed), page-aligned data, sealed
    /// against resizing. A size the system cannot give → `NO_MEMORY`.
    pub(crate) fn create(data_len: usize) -> Result<Segment> {
        if data_len == 0 {
            return Err(fail!(Error::InvalidValue, "shared memory of 0 bytes"));
        }
        let page = page_size();
        let map_len = round_up(data_len, page)
            .and_then(|d| d.checked_add(page))
            .filter(|&l| l <= isize::MAX as usize)
            .ok_or_else(|| {
                fail!(Error::NoMemory, "shared memory of {data_len} bytes is more than can exist")
            })?;
        let fd = create_sealed("doca-emu-shm", map_len)?;
        let seg = Segment::map(fd, map_len, data_len)?;
        seg.header().data_len.store(data_len as u64, Ordering::Relaxed);
        seg.header().magic.store(MAGIC, Ordering::Release);
        Ok(seg)
    }

    /// Maps a segment received from elsewhere, after checking its seals, size and magic
    /// (`NOT_FOUND` when it is not one of ours: it cannot shrink under the mapping): its
    /// header page and the data its header announces, not the rest of the file (a peer's
    /// sparse memfd may be far larger).
    pub(crate) fn open(fd: impl Into<PeerFd>) -> Result<Segment> {
        let fd = fd.into();
        let data_len = received_data_len(fd.as_fd())?;
        let fd = fd.into_inner();
        let page = page_size();
        let map_len = page + round_up(data_len, page).expect("within the file's size");
        reserve_from_elsewhere(map_len)?;
        let mut seg = match Segment::map(fd, map_len, 0) {
            Ok(seg) => seg,
            Err(e) => {
                FROM_ELSEWHERE.fetch_sub(map_len, Ordering::Relaxed);
                return Err(e);
            }
        };
        seg.received = true; // given back when `seg` drops, on every path from here
        seg.data_len = data_len;
        Ok(seg)
    }

    /// Maps bytes `offset..offset+len` of the data area of a segment received from
    /// elsewhere (page-rounded), and nothing else of it: copies only, no borrow is taken
    /// through it. Not one of our segments → `NOT_FOUND`; a range outside its data (or empty)
    /// → `INVALID_VALUE`.
    pub(crate) fn open_window(fd: impl Into<PeerFd>, offset: usize, len: usize) -> Result<Window> {
        let fd = fd.into();
        let data_len = received_data_len(fd.as_fd())?;
        let fd = fd.into_inner();
        if len == 0 || offset.checked_add(len).is_none_or(|end| end > data_len) {
            return Err(peer_fail!(
                Error::InvalidValue,
                "remote range {offset}+{len} outside the {data_len} shared bytes"
            ));
        }
        let page = page_size();
        let (map_off, map_len) = window_of(offset, len).expect("within the file's size");
        reserve_from_elsewhere(map_len)?;
        let base = map_shared(&fd, map_len, map_off as u64).inspect_err(|_| {
            FROM_ELSEWHERE.fetch_sub(map_len, Ordering::Relaxed);
        })?;
        let mut win = Window { base, map_len, skip: page + offset - map_off, borrows: None };
        // (`win` unmaps and gives the bytes back on every path from here.)
        win.borrows = Some(tracker_of(&fd)?);
        Ok(win)
    }

    fn map(fd: OwnedFd, map_len: usize, data_len: usize) -> Result<Segment> {
        let base = map_shared(&fd, map_len, 0)?;
        let borrows = match tracker_of(&fd) {
            Ok(b) => b,
            Err(e) => {
                // SAFETY: the mapping just made, not shared with anything yet.
                let _ = unsafe { rustix::mm::munmap(base.as_ptr().cast(), map_len) };
                return Err(e);
            }
        };
        Ok(Segment { fd, base, map_len, data_len, borrows, received: false })
    }

    pub(crate) fn header(&self) -> &Header {
        // The first page is mapped for the life of `self`, page-aligned (so aligned for
        // `Header`), larger than `Header`, and `Header` is atomics only (any bits are valid).
        // SAFETY: see above.
        unsafe { &*self.base.as_ptr().cast::<Header>() }
    }

    /// Start of the data area (one page after the header).
    pub(crate) fn data_ptr(&self) -> NonNull<u8> {
        // SAFETY: `map_len` ≥ two pages, so one page in is still inside the mapping.
        unsafe { NonNull::new_unchecked(self.base.as_ptr().add(page_size())) }
    }

    pub(crate) fn data_len(&self) -> usize {
        self.data_len
    }

    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// The tracker of bytes `base..` of the data area (shared by every mapping of this
    /// memory in the process).
    pub(crate) fn tracker(&self, base: usize) -> Tracker {
        Tracker { borrows: self.borrows.clone(), base }
    }

    /// The whole data area.
    pub(crate) fn data_region(&self, writable: bool) -> Region {
        // SAFETY: the data area is mapped (read-write) while the segment lives; callers keep
        // the segment alive as long as they use the region.
        unsafe { Region::new(self.data_ptr(), self.data_len, writable) }
    }
}

/// The borrow trackers of the shared memory this process maps, one per memfd (by device and
/// inode): two mappings of one memory — an export imported in its own process, a consumer's
/// memory mapped by a producer of the same process — borrow through one tracker, so safe
/// code never holds two `&mut` to the same bytes.
static TRACKERS: Mutex<Vec<(FileId, Weak<Borrows>)>> = Mutex::new(Vec::new());

/// A file's identity: (device, inode).
type FileId = (u64, u64);

fn tracker_of(fd: &OwnedFd) -> Result<Arc<Borrows>> {
    let st = rustix::fs::fstat(fd).map_err(|e| os("fstat", e))?;
    let key = (st.st_dev as u64, st.st_ino as u64);
    let mut all = TRACKERS.lock();
    all.retain(|(_, w)| w.strong_count() > 0);
    if let Some(b) = all.iter().find(|(k, _)| *k == key).and_then(|(_, w)| w.upgrade()) {
        return Ok(b);
    }
    let b = Arc::new(Borrows::default());
    all.push((key, Arc::downgrade(&b)));
    Ok(b)
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: `base..base+map_len` is the mapping made in `map` and nothing borrows it any
        // more: every borrow of its bytes is tied to `&self`.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.map_len) };
        if self.received {
            FROM_ELSEWHERE.fetch_sub(self.map_len, Ordering::Relaxed);
        }
    }
}

impl AsFd for Segment {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The region `offset..offset+len` of a segment's data area. The caller keeps `seg` alive as
/// long as the region is used (a map from export holds it).
pub(crate) fn segment_region(seg: &Arc<Segment>, offset: usize, len: usize, writable: bool) -> Region {
    assert!(offset.checked_add(len).is_some_and(|end| end <= seg.data_len()), "range checked by the caller");
    // SAFETY: in bounds of the data area (asserted), which stays mapped while the segment
    // lives; the caller keeps the segment alive for the region's users.
    unsafe { Region::new(NonNull::new_unchecked(seg.data_ptr().as_ptr().add(offset)), len, writable) }
}

/// A span of mapped memory: where a map's bytes are.
#[derive(Clone, Copy, Debug)]
pub struct Region {
    ptr: NonNull<u8>,
    len: usize,
    writable: bool,
}

// SAFETY: a region is an address range; access goes through bounds-checked copies or guards
// whose exclusivity the map's borrow tracker enforces within the process.
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

impl Region {
    /// # Safety
    /// `ptr..ptr+len` must stay mapped and valid for reads (and writes, if `writable`) for
    /// as long as this region or a copy of it is used.
    pub(crate) unsafe fn new(ptr: NonNull<u8>, len: usize, writable: bool) -> Region {
        Region { ptr, len, writable }
    }

    /// Address of the first byte (what C's `doca_mmap_get_memrange` returns).
    pub fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether the memory may be written (a static string or a read-only import may not).
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    #[inline]
    fn check(&self, offset: usize, len: usize) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(self.outside(offset, len)),
        }
    }

    /// The error of [`Region::check`] (out of line: the check stays an add and a compare).
    #[cold]
    #[inline(never)]
    fn outside(&self, offset: usize, len: usize) -> Error {
        fail!(Error::InvalidValue, "range {offset}+{len} outside the map's {} bytes", self.len)
    }
}

/// An 8-byte atomic operation ([`crate::MapAccess::atomic_cas_u64`],
/// [`crate::MapAccess::atomic_fetch_add_u64`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Atomic64 {
    /// Writes `swap` when the value is `cmp`.
    CompareSwap { cmp: u64, swap: u64 },
    /// Adds (wrapping).
    FetchAdd(u64),
}

/// The ranges of one map's memory borrowed in this process: many readers or one writer per
/// byte, checked at run time (`IN_USE` on conflict, never a panic).
///
/// A copy between two memories (`Tracker::copy_to`) may skip the trackers' locks: it reads
/// without one while nothing blocks unlocked reads of the source ([`NO_READS`] in `block`:
/// a write borrow, a locked write in progress), and writes without one while nothing blocks
/// unlocked writes of the destination ([`NO_WRITES`]: a borrow of any kind, a locked access
/// in progress). Memory nothing borrows at the moment — a DMA task's buffers, a posted
/// receive buffer — is copied into without a lock. Such a copy announces itself first (its
/// thread's [`CopySlot`]) and then looks at `block`; everything else that touches the bytes
/// raises `block` first and then waits for the copies announced meanwhile
/// ([`wait_for_copies`]). Both in that order, sequentially consistent: either the copy sees
/// the block and takes the locks, or the other side sees the copy and waits for it. An
/// announced copy never blocks (it takes no lock and logs nothing: a memcpy), so waiting
/// while holding a tracker's lock cannot deadlock. (A process that forks while another
/// thread is in such a copy leaves the child a slot that stays announced: as with a lock
/// held at `fork`, only exec or async-signal-safe work is safe in that child.)
pub(crate) struct Borrows {
    held: Mutex<SmallVec<[(usize, usize, bool); 4]>>,
    /// What keeps unlocked copies away: a count of [`NO_READS`] in the low half, of
    /// [`NO_WRITES`] in the high half.
    block: AtomicU64,
}

/// Blocks unlocked copies out of the memory (counted in the low half of `Borrows::block`).
const NO_READS: u64 = 1;
/// Blocks unlocked copies into the memory (the high half).
const NO_WRITES: u64 = 1 << 32;
const READS_MASK: u64 = NO_WRITES - 1;

impl Default for Borrows {
    /// The tracker of memory nothing borrows yet.
    fn default() -> Self {
        Borrows { held: Mutex::default(), block: AtomicU64::new(0) }
    }
}

/// A thread's announcement of the copy it is doing without the trackers' locks: odd while
/// one is in flight. Only its thread writes it (one atomic instruction per copy, on a line
/// no other thread writes); whatever waits for copies reads every thread's.
#[repr(align(64))]
struct CopySlot {
    seq: AtomicU64,
    taken: AtomicBool,
}

/// Threads that can announce copies at one time; a thread past them copies under the locks.
const MAX_COPIERS: usize = 256;

/// The copy slots, claimed by threads at their first copy and given back when they exit
/// (static: a slot is never freed while a waiter may read it).
static SLOTS: [CopySlot; MAX_COPIERS] =
    [const { CopySlot { seq: AtomicU64::new(0), taken: AtomicBool::new(false) } }; MAX_COPIERS];

/// Slots below this index have been claimed at some point: the ones to look at.
static SLOTS_USED: AtomicUsize = AtomicUsize::new(0);

/// This thread's slot, if it got one.
struct MySlot(Option<&'static CopySlot>);

impl MySlot {
    fn claim() -> MySlot {
        for (i, slot) in SLOTS.iter().enumerate() {
            if slot.taken.compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
                // Before this thread's first announcement (sequentially consistent with a
                // waiter's read of the count: see `wait_for_copies`).
                SLOTS_USED.fetch_max(i + 1, Ordering::SeqCst);
                MY_SLOT_AT.set(Some(slot));
                return MySlot(Some(slot));
            }
        }
        MySlot(None)
    }
}

impl Drop for MySlot {
    fn drop(&mut self) {
        if let Some(slot) = self.0 {
            // Never announced through again by this thread (a copy from a later thread-local
            // destructor takes the locks), then even (no copy in flight at thread exit):
            // another thread may claim it.
            MY_SLOT_AT.set(None);
            slot.taken.store(false, Ordering::Release);
        }
    }
}

thread_local! {
    /// The thread's claim of a slot, given back when the thread exits.
    static MY_SLOT: MySlot = MySlot::claim();
    /// The slot of that claim while it holds, for the copy's path: a plain thread-local load
    /// (no lazy initialisation to look at), `None` before the claim and after the give-back.
    static MY_SLOT_AT: Cell<Option<&'static CopySlot>> = const { Cell::new(None) };
}

/// This thread's slot, claimed at its first copy (out of line: once per thread, or per
/// copy of a thread that got none or is exiting).
#[cold]
#[inline(never)]
fn my_slot() -> Option<&'static CopySlot> {
    MY_SLOT.try_with(|me| me.0).ok().flatten()
}

/// A copy announced in its thread's slot; over on drop.
struct Announced(&'static CopySlot, u64);

impl Drop for Announced {
    fn drop(&mut self) {
        // Back to even: a waiter sees this copy is over (and its bytes).
        self.0.seq.store(self.1 + 1, Ordering::Release);
    }
}

/// Announces a copy in this thread's slot; `None` when the thread has none (more than
/// [`MAX_COPIERS`] threads copy, or it is exiting): the copy takes the locks.
fn announce() -> Option<Announced> {
    let slot = match MY_SLOT_AT.get() {
        Some(slot) => slot,
        None => my_slot()?,
    };
    // Odd: announced before this thread looks at any tracker's `block` (a full barrier).
    let at = slot.seq.fetch_add(1, Ordering::SeqCst) + 1;
    Some(Announced(slot, at))
}

/// Waits until every copy announced before now is over (each one memcpy that blocks on
/// nothing); copies announced later see the `block` this thread raised before calling.
fn wait_for_copies() {
    let used = SLOTS_USED.load(Ordering::SeqCst);
    for slot in &SLOTS[..used] {
        let seq = slot.seq.load(Ordering::SeqCst);
        if seq % 2 == 0 {
            continue;
        }
        let mut spins = 0u32;
        while slot.seq.load(Ordering::Acquire) == seq {
            if spins < 64 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// `block` raised on a tracker for as long as this lives (an access under its lock).
struct Blocked<'a>(&'a Borrows, u64);

impl<'a> Blocked<'a> {
    /// Raises `what` on `b` (and waits for the copies that could not see it: call
    /// [`wait_for_copies`] once for all the trackers raised).
    fn raise(b: &'a Borrows, what: u64) -> Blocked<'a> {
        b.block.fetch_add(what, Ordering::SeqCst);
        Blocked(b, what)
    }
}

impl Drop for Blocked<'_> {
    fn drop(&mut self) {
        self.0.block.fetch_sub(self.1, Ordering::Release);
    }
}

/// The borrows of one tracker, locked.
type Held<'a> = parking_lot::MutexGuard<'a, SmallVec<[(usize, usize, bool); 4]>>;

impl Borrows {
    /// `IN_USE` when `offset..offset+len` conflicts with a borrow in `b` (any borrow when
    /// `exclusive`, a write borrow otherwise).
    fn check(b: &Held<'_>, offset: usize, len: usize, exclusive: bool) -> Result<()> {
        let end = offset + len;
        match Borrows::conflict(b, offset, len, exclusive) {
            None => Ok(()),
            Some((s, e, x)) => Err(fail!(
                Error::InUse,
                "bytes {offset}..{end} are already borrowed{} ({s}..{e})",
                if x { " for writing" } else { "" }
            )),
        }
    }

    /// The borrow in `b` that `offset..offset+len` conflicts with, if any.
    fn conflict(b: &Held<'_>, offset: usize, len: usize, exclusive: bool) -> Option<(usize, usize, bool)> {
        let end = offset + len;
        b.iter().find(|&&(s, e, x)| s < end && offset < e && (x || exclusive)).copied()
    }

    fn acquire(&self, offset: usize, len: usize, exclusive: bool) -> Result<()> {
        self.acquire_or(offset, len, exclusive, Borrows::check)
    }

    /// [`Borrows::acquire`] that says nothing on a conflict (`IN_USE`, unlogged): for a
    /// caller that tries again.
    fn try_acquire(&self, offset: usize, len: usize, exclusive: bool) -> Result<()> {
        self.acquire_or(offset, len, exclusive, |b, o, l, x| match Borrows::conflict(b, o, l, x) {
            None => Ok(()),
            Some(_) => Err(Error::InUse),
        })
    }

    fn acquire_or(
        &self,
        offset: usize,
        len: usize,
        exclusive: bool,
        check: impl FnOnce(&Held<'_>, usize, usize, bool) -> Result<()>,
    ) -> Result<()> {
        let mut b = self.held.lock();
        check(&b, offset, len, exclusive)?;
        if len == 0 {
            return Ok(());
        }
        b.push((offset, offset + len, exclusive));
        // Held until `release`: no unlocked copy writes these bytes meanwhile (nor reads
        // them, for a write borrow).
        self.block.fetch_add(Borrows::blocks(exclusive), Ordering::SeqCst);
        drop(b);
        // Copies announced before the borrow could be seen may still touch the bytes.
        wait_for_copies();
        Ok(())
    }

    fn release(&self, offset: usize, len: usize, exclusive: bool) {
        if len == 0 {
            return;
        }
        let mut b = self.held.lock();
        if let Some(i) = b.iter().position(|&t| t == (offset, offset + len, exclusive)) {
            b.swap_remove(i);
            self.block.fetch_sub(Borrows::blocks(exclusive), Ordering::Release);
        }
    }

    /// What a borrow keeps unlocked copies from doing while it lasts: writing its bytes (a
    /// read borrow), or touching them at all (a write borrow).
    fn blocks(exclusive: bool) -> u64 {
        if exclusive {
            NO_READS | NO_WRITES
        } else {
            NO_WRITES
        }
    }
}

/// Where a region's borrows are tracked: a tracker, and the region's offset in what it
/// tracks (a shared segment's data area; 0 for memory of one map).
#[derive(Clone)]
pub(crate) struct Tracker {
    borrows: Arc<Borrows>,
    base: usize,
}

impl Default for Tracker {
    /// The tracker of private memory (of one map).
    fn default() -> Self {
        Tracker { borrows: Arc::new(Borrows::default()), base: 0 }
    }
}

/// Why [`Tracker::copy_to`] refused a copy before touching anything.
#[derive(Clone, Copy)]
enum CopyRefused {
    ReadOnly,
    Overlap,
    SameMemory,
}

/// The error (and log line) of a refused copy: out of line, so that the checks of a copy
/// stay compares and branches.
#[cold]
#[inline(never)]
fn copy_refused(why: CopyRefused, a: usize, b: usize, len: usize) -> Error {
    match why {
        CopyRefused::ReadOnly => fail!(Error::NotPermitted, "the destination memory is read-only"),
        CopyRefused::Overlap => fail!(Error::InvalidValue, "copy ranges {a}+{len} and {b}+{len} overlap"),
        CopyRefused::SameMemory => fail!(
            Error::InvalidValue,
            "copy ranges overlap: the two maps register the same memory ({a:#x}+{len}, {b:#x}+{len})"
        ),
    }
}

impl Tracker {
    /// Borrows `offset..offset+len` of `region` for reading.
    pub(crate) fn bytes<'a>(&'a self, region: &'a Region, offset: usize, len: usize) -> Result<Bytes<'a>> {
        self.shared(region, offset, len, false)
    }

    /// [`Tracker::bytes`] that logs nothing when the bytes are borrowed for writing
    /// (`IN_USE`): for a caller that waits and tries again.
    pub(crate) fn try_bytes<'a>(
        &'a self,
        region: &'a Region,
        offset: usize,
        len: usize,
    ) -> Result<Bytes<'a>> {
        self.shared(region, offset, len, true)
    }

    /// Borrows `offset..offset+len` of `region` for writing.
    pub(crate) fn bytes_mut<'a>(
        &'a self,
        region: &'a Region,
        offset: usize,
        len: usize,
    ) -> Result<BytesMut<'a>> {
        self.exclusive(region, offset, len, false)
    }

    /// [`Tracker::bytes_mut`] that logs nothing when the bytes are borrowed (`IN_USE`).
    pub(crate) fn try_bytes_mut<'a>(
        &'a self,
        region: &'a Region,
        offset: usize,
        len: usize,
    ) -> Result<BytesMut<'a>> {
        self.exclusive(region, offset, len, true)
    }

    /// A shared borrow; `quiet`: a conflict is a bare `IN_USE`, not logged.
    fn shared<'a>(&'a self, region: &'a Region, offset: usize, len: usize, quiet: bool) -> Result<Bytes<'a>> {
        region.check(offset, len)?;
        let at = self.base + offset;
        match quiet {
            true => self.borrows.try_acquire(at, len, false)?,
            false => self.borrows.acquire(at, len, false)?,
        }
        // In bounds (checked) of memory valid for reads while `region`'s owner lives (it
        // outlives 'a); the shared borrow above keeps this process's writers away, through
        // any mapping of the same memory.
        // SAFETY: see above.
        let slice = unsafe { std::slice::from_raw_parts(region.ptr.as_ptr().add(offset), len) };
        Ok(Bytes { slice, borrows: &self.borrows, offset: at })
    }

    /// An exclusive borrow; `quiet`: a conflict is a bare `IN_USE`, not logged.
    fn exclusive<'a>(
        &'a self,
        region: &'a Region,
        offset: usize,
        len: usize,
        quiet: bool,
    ) -> Result<BytesMut<'a>> {
        region.check(offset, len)?;
        if !region.writable {
            return Err(fail!(Error::NotPermitted, "the map's memory is read-only"));
        }
        let at = self.base + offset;
        match quiet {
            true => self.borrows.try_acquire(at, len, true)?,
            false => self.borrows.acquire(at, len, true)?,
        }
        // In bounds of memory valid for writes; the exclusive borrow registered above
        // keeps every other reader and writer of this process away (through any mapping of
        // the same memory) until the guard drops.
        // SAFETY: see above.
        let slice = unsafe { std::slice::from_raw_parts_mut(region.ptr.as_ptr().add(offset), len) };
        Ok(BytesMut { slice, borrows: &self.borrows, offset: at })
    }

    /// Copies `src` in at `offset` of `region`: checked against this process's borrows and
    /// done under the tracker's lock (no borrow registered; unlocked copies kept away).
    pub(crate) fn write(&self, region: &Region, offset: usize, src: &[u8]) -> Result<()> {
        region.check(offset, src.len())?;
        if !region.writable {
            return Err(fail!(Error::NotPermitted, "the map's memory is read-only"));
        }
        let held = self.borrows.held.lock();
        Borrows::check(&held, self.base + offset, src.len(), true)?;
        let blocked = Blocked::raise(&self.borrows, NO_READS | NO_WRITES);
        wait_for_copies();
        // in bounds (checked) of memory valid for writes while `region`'s owner
        // lives; no borrow of these bytes exists in this process (checked) and none can be
        // taken while we hold the lock; no unlocked copy touches them (blocked, and the ones
        // announced before waited for).
        // SAFETY: see above.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), region.ptr.as_ptr().add(offset), src.len()) };
        drop((blocked, held));
        Ok(())
    }

    /// An 8-byte atomic read-modify-write at `offset` of `region` (see [`Atomic64`]): a CPU
    /// atomic instruction on the mapped memory itself, so it is atomic against every other
    /// process's atomics on the same memory. `INVALID_VALUE` out of bounds or not 8-byte
    /// aligned, `NOT_PERMITTED` on read-only memory, `IN_USE` when this process has the
    /// bytes borrowed. Returns the value before.
    /// `atomic_ok`: the memory takes atomics although read-only here (an import whose
    /// export grants RDMA_ATOMIC but not RDMA_WRITE, as a memory region may on the hardware).
    pub(crate) fn atomic_u64(
        &self,
        region: &Region,
        offset: usize,
        op: Atomic64,
        atomic_ok: bool,
    ) -> Result<u64> {
        region.check(offset, 8)?;
        if !region.writable && !atomic_ok {
            return Err(fail!(Error::NotPermitted, "the map's memory is read-only (and takes no atomics)"));
        }
        let addr = region.addr() + offset;
        if addr % 8 != 0 {
            return Err(fail!(Error::InvalidValue, "an 8-byte atomic at {addr:#x}: not 8-byte aligned"));
        }
        let held = self.borrows.held.lock();
        Borrows::check(&held, self.base + offset, 8, true)?;
        let blocked = Blocked::raise(&self.borrows, NO_READS | NO_WRITES);
        wait_for_copies();
        // In bounds (checked) of memory valid for writes while `region`'s owner lives,
        // aligned for a u64 (checked); no borrow of these bytes exists in this process
        // (checked, none can be taken while we hold the lock) and no unlocked copy of this
        // process touches them (blocked). Other processes reach these bytes only through
        // copies and through atomics of their own: an AtomicU64 over shared memory is what
        // makes the latter exclusive.
        // SAFETY: see above.
        let word = unsafe { &*(region.ptr.as_ptr().add(offset) as *const AtomicU64) };
        let old = match op {
            Atomic64::CompareSwap { cmp, swap } => {
                match word.compare_exchange(cmp, swap, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(v) | Err(v) => v,
                }
            }
            Atomic64::FetchAdd(add) => word.fetch_add(add, Ordering::SeqCst),
        };
        drop((blocked, held));
        Ok(old)
    }

    /// Copies `dst.len()` bytes out from `offset` of `region`, under the tracker's lock.
    pub(crate) fn read(&self, region: &Region, offset: usize, dst: &mut [u8]) -> Result<()> {
        region.check(offset, dst.len())?;
        let held = self.borrows.held.lock();
        Borrows::check(&held, self.base + offset, dst.len(), false)?;
        let blocked = Blocked::raise(&self.borrows, NO_WRITES);
        wait_for_copies();
        // In bounds (checked) of memory valid for reads; no write borrow of these bytes
        // exists in this process (checked) and none can be taken while we hold the lock; no
        // unlocked copy writes them (blocked, and the ones announced before waited for).
        // SAFETY: see above.
        unsafe {
            std::ptr::copy_nonoverlapping(region.ptr.as_ptr().add(offset), dst.as_mut_ptr(), dst.len())
        };
        drop((blocked, held));
        Ok(())
    }

    /// Copies `len` bytes from `src_off` of `src` (tracked by `self`) to `dst_off` of `dst`
    /// (tracked by `to`), each range checked against this process's borrows. Without the
    /// trackers' locks when nothing blocks it (see [`Borrows`]); otherwise under both (taken
    /// in address order, once when both memories are the same).
    #[inline(always)] // into MapAccess::copy_to_map: a DMA copy is one call, not two
    pub(crate) fn copy_to(
        &self,
        src: &Region,
        src_off: usize,
        to: &Tracker,
        dst: &Region,
        dst_off: usize,
        len: usize,
    ) -> Result<()> {
        src.check(src_off, len)?;
        dst.check(dst_off, len)?;
        if !dst.writable {
            return Err(copy_refused(CopyRefused::ReadOnly, 0, 0, len));
        }
        let (a, b) = (self.base + src_off, to.base + dst_off);
        let same = Arc::ptr_eq(&self.borrows, &to.borrows);
        if same && a < b + len && b < a + len {
            return Err(copy_refused(CopyRefused::Overlap, a, b, len));
        }
        // Two memories may still be one: a C program can register the same bytes in two maps
        // (`doca_mmap_set_memrange` twice over one buffer). Overlapping addresses are refused
        // as ranges of one memory are (a copy between them would be undefined).
        let (pa, pb) = (src.ptr.as_ptr() as usize + src_off, dst.ptr.as_ptr() as usize + dst_off);
        if !same && len > 0 && pa < pb + len && pb < pa + len {
            return Err(copy_refused(CopyRefused::SameMemory, pa, pb, len));
        }
        // The usual copies — a fast-path send from a buffer nothing borrows for writing into
        // a peer's posted buffer, a DMA task between two buffers nothing borrows — take
        // neither lock. What decides is the look after announcing: a copy that finds a
        // borrow or a locked access in progress there ends its announcement at once (a
        // waiter that saw it waits that long) and takes the locks.
        if !same {
            if let Some(pass) = announce() {
                let free = self.borrows.block.load(Ordering::SeqCst) & READS_MASK == 0
                    && to.borrows.block.load(Ordering::SeqCst) < NO_WRITES;
                if free {
                    // Both ranges are in bounds (checked) of mapped memory that lives while
                    // the regions' owners do; the destination is writable (checked); the
                    // memories differ and their addresses do not overlap (checked); nothing in this process
                    // borrows or writes the source's bytes, or borrows or touches the
                    // destination's, now or until `pass` drops: whatever does raises `block`
                    // first and waits for announced copies (`Borrows`).
                    // SAFETY: see above.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            src.ptr.as_ptr().add(src_off),
                            dst.ptr.as_ptr().add(dst_off),
                            len,
                        )
                    };
                    drop(pass);
                    return Ok(());
                }
                drop(pass); // before any lock: an announced copy never blocks
            }
        }
        self.copy_locked(src, src_off, to, dst, dst_off, len, same)
    }

    /// [`Tracker::copy_to`] under the trackers' locks, its ranges checked (bounds, a writable
    /// destination, no overlap; `same`: both memories are one). Out of line: the usual copy
    /// takes no lock and its caller keeps its registers.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)] // copy_to's arguments and what it found
    fn copy_locked(
        &self,
        src: &Region,
        src_off: usize,
        to: &Tracker,
        dst: &Region,
        dst_off: usize,
        len: usize,
        same: bool,
    ) -> Result<()> {
        let (a, b) = (self.base + src_off, to.base + dst_off);
        // Two locks are taken in address order.
        let (first, second) = if Arc::as_ptr(&self.borrows) <= Arc::as_ptr(&to.borrows) {
            (&self.borrows, &to.borrows)
        } else {
            (&to.borrows, &self.borrows)
        };
        let held_first = first.held.lock();
        let held_second = (!same).then(|| second.held.lock());
        let (src_held, dst_held) = match &held_second {
            Some(h2) if Arc::ptr_eq(first, &to.borrows) => (h2, &held_first),
            Some(h2) => (&held_first, h2),
            None => (&held_first, &held_first),
        };
        Borrows::check(src_held, a, len, false)?;
        Borrows::check(dst_held, b, len, true)?;
        let blocked_src = Blocked::raise(&self.borrows, NO_WRITES);
        let blocked_dst = Blocked::raise(&to.borrows, NO_READS | NO_WRITES);
        wait_for_copies();
        // Both ranges are in bounds (checked) of mapped memory that lives while the regions'
        // owners do; the destination is writable (checked); no borrow in this process
        // conflicts (checked under the locks held: none can be taken while we hold them), no
        // unlocked copy writes the source or touches the destination (blocked, and the ones
        // announced before waited for); the ranges do not overlap within one memory
        // (checked), nor in this process's addresses (checked: two maps over one buffer).
        // SAFETY: see above.
        unsafe {
            std::ptr::copy_nonoverlapping(src.ptr.as_ptr().add(src_off), dst.ptr.as_ptr().add(dst_off), len)
        };
        drop((blocked_dst, blocked_src, held_second, held_first));
        Ok(())
    }
}

/// Bytes of a map borrowed for reading; released on drop. Another process sharing the
/// memory (an importer or the exporter) can still write them meanwhile: as on the hardware,
/// do not read a buffer while a task or the peer owns it.
pub struct Bytes<'a> {
    slice: &'a [u8],
    borrows: &'a Borrows,
    offset: usize,
}

impl Deref for Bytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.slice
    }
}

impl Drop for Bytes<'_> {
    fn drop(&mut self) {
        self.borrows.release(self.offset, self.slice.len(), false);
    }
}

/// Bytes of a map borrowed for writing; released on drop. Exclusive within this process
/// only (see [`Bytes`]).
pub struct BytesMut<'a> {
    slice: &'a mut [u8],
    borrows: &'a Borrows,
    offset: usize,
}

impl Deref for BytesMut<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.slice
    }
}

impl DerefMut for BytesMut<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        self.slice
    }
}

impl Drop for BytesMut<'_> {
    fn drop(&mut self) {
        self.borrows.release(self.offset, self.slice.len(), true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;

    /// Whether bytes under a guard change while it is held (a little while): the copies of
    /// the tests alternate two fills, so a change is a copy that landed under the guard.
    fn changes_under_guard(g: &[u8]) -> bool {
        let probe = |g: &[u8]| [g[0], g[g.len() / 2], g[g.len() - 1]];
        let before = probe(g);
        for _ in 0..2_000 {
            std::hint::spin_loop();
        }
        probe(std::hint::black_box(g)) != before
    }

    /// A sealed memfd of `file_len` bytes whose header announces `data_len` bytes of data.
    fn forged(file_len: usize, data_len: usize) -> OwnedFd {
        let fd = create_sealed("budget-test", file_len).unwrap();
        rustix::io::pwrite(&fd, &MAGIC.to_ne_bytes(), 0).unwrap();
        rustix::io::pwrite(&fd, &(data_len as u64).to_ne_bytes(), 8).unwrap();
        fd
    }

    /// A peer hands over a (sparse) segment bigger than what this process may map of others'
    /// memory: refused with `NO_MEMORY` before it is mapped; one within it is counted.
    #[test]
    fn memory_from_elsewhere_beyond_the_budget_is_refused_unmapped() {
        let huge = forged(FROM_ELSEWHERE_MAX + 2 * page_size(), FROM_ELSEWHERE_MAX + page_size());
        assert_eq!(Segment::open(huge).err(), Some(Error::NoMemory));
        let mine = Segment::create(4096).unwrap();
        let fd = mine.fd.try_clone().unwrap();
        let theirs = Segment::open(fd).unwrap();
        assert!(FROM_ELSEWHERE.load(Ordering::Relaxed) >= theirs.map_len);
    }

    /// Only what is announced is mapped: a segment's header page and the data its header
    /// announces (not the rest of a sparse 1 TiB file), and for a window the page-rounded
    /// range asked for.
    #[test]
    fn only_the_announced_bytes_of_a_huge_sparse_segment_are_mapped() {
        let page = page_size();
        let seg = Segment::open(forged(1 << 40, 4096)).unwrap();
        assert_eq!((seg.map_len, seg.data_len()), (2 * page, 4096));

        let fd = forged(1 << 40, (1 << 40) - page);
        let at = 1 << 39;
        rustix::io::pwrite(&fd, b"far away", (page + at + 100) as u64).unwrap();
        let win = Segment::open_window(fd.try_clone().unwrap(), at + 100, 8).unwrap();
        assert_eq!(win.mapped_len(), page, "one page of a terabyte");
        let mut got = [0u8; 8];
        // SAFETY: the window maps these 8 bytes while it lives.
        unsafe { std::ptr::copy_nonoverlapping(win.start().as_ptr(), got.as_mut_ptr(), 8) };
        assert_eq!(&got, b"far away");
        let across = Segment::open_window(fd.try_clone().unwrap(), page - 4, 8).unwrap();
        assert_eq!(across.mapped_len(), 2 * page, "a range across a page boundary");
        assert_eq!(window_of(page - 4, 8), Some((page, 2 * page)));
        assert_eq!(Segment::open_window(fd, (1 << 40) - page, 1).err(), Some(Error::InvalidValue));
    }

    /// Copies into memory nothing borrows take no lock. A write borrow taken meanwhile,
    /// through another mapping of the same memory (an import of it), waits for them: no
    /// copy ever lands under a write guard.
    #[test]
    fn a_view_opened_during_unlocked_copies_sees_no_copy_land_under_its_guard() {
        const N: usize = 64 << 10;
        let first = Segment::create(N).unwrap();
        let remote = Segment::open(first.fd().try_clone().unwrap()).unwrap();
        let fd = first.fd().try_clone().unwrap();
        drop(first); // only the copy-only mapping now: copies into it start unlocked
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let viewer = std::thread::spawn(move || {
            let (mut guarded, mut landed) = (0, 0);
            while !halt.load(Ordering::Relaxed) {
                let view = Segment::open(fd.try_clone().unwrap()).unwrap();
                let (tracker, region) = (view.tracker(0), view.data_region(true));
                if let Ok(g) = tracker.bytes_mut(&region, 0, N) {
                    guarded += 1;
                    landed += usize::from(changes_under_guard(&g));
                };
            }
            (guarded, landed)
        });
        let mut fills = [vec![0xa5u8; N], vec![0x5au8; N]];
        // SAFETY: `fills` outlives the regions, which are only used below while it lives.
        let sources =
            fills.each_mut().map(|v| unsafe { Region::new(NonNull::new(v.as_mut_ptr()).unwrap(), N, true) });
        let src_tracker = [Tracker::default(), Tracker::default()];
        let (to, dst) = (remote.tracker(0), remote.data_region(true));
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
        let mut i = 0;
        while std::time::Instant::now() < deadline {
            let _ = src_tracker[i & 1].copy_to(&sources[i & 1], 0, &to, &dst, 0, N);
            i += 1;
        }
        stop.store(true, Ordering::Relaxed);
        let (guarded, landed) = viewer.join().unwrap();
        assert!(guarded > 0, "the viewer never borrowed");
        assert_eq!(landed, 0, "{landed} of {guarded} write guards saw a copy land under them");
    }

    /// Copies into private memory nothing borrows take no lock; a read borrow of it taken
    /// meanwhile waits for them and keeps the next ones out: no copy ever lands under a read
    /// guard, and a copy into a range borrowed for reading is `IN_USE`.
    #[test]
    fn no_unlocked_copy_lands_under_a_read_guard() {
        const N: usize = 64 << 10;
        let mut memory = vec![0u8; N];
        // SAFETY: `memory` outlives the region, used only below while it lives.
        let dst = unsafe { Region::new(NonNull::new(memory.as_mut_ptr()).unwrap(), N, true) };
        let to = Tracker::default();
        let mut fills = [vec![0xa5u8; N], vec![0x5au8; N]];
        // SAFETY: `fills` outlives the regions, which are only used below while it lives.
        let sources =
            fills.each_mut().map(|v| unsafe { Region::new(NonNull::new(v.as_mut_ptr()).unwrap(), N, true) });
        let src_tracker = [Tracker::default(), Tracker::default()];
        {
            let _guard = to.bytes(&dst, 0, 8).unwrap();
            assert_eq!(src_tracker[0].copy_to(&sources[0], 0, &to, &dst, 0, N), Err(Error::InUse));
        }
        assert_eq!(src_tracker[0].copy_to(&sources[0], 0, &to, &dst, 0, N), Ok(()));
        let stop = Arc::new(AtomicBool::new(false));
        let halt = stop.clone();
        let (reader, region) = (to.clone(), dst);
        let viewer = std::thread::spawn(move || {
            let (mut guarded, mut landed) = (0, 0);
            while !halt.load(Ordering::Relaxed) {
                if let Ok(g) = reader.try_bytes(&region, 0, N) {
                    guarded += 1;
                    landed += usize::from(changes_under_guard(&g));
                }
            }
            (guarded, landed)
        });
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
        let (mut i, mut copied) = (0, 0);
        while std::time::Instant::now() < deadline {
            copied += usize::from(src_tracker[i & 1].copy_to(&sources[i & 1], 0, &to, &dst, 0, N).is_ok());
            i += 1;
        }
        stop.store(true, Ordering::Relaxed);
        let (guarded, landed) = viewer.join().unwrap();
        assert!(guarded > 0 && copied > 0, "the reader borrowed {guarded} times, {copied} copies went");
        assert_eq!(landed, 0, "{landed} of {guarded} read guards saw a copy land under them");
        drop(memory);
    }
}
