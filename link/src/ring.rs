//! Shared-memory segments and the single-producer/single-consumer message rings in them
//! (Comm Channel's connections and RDMA's carry their messages in these).
//!
//! One of the few modules with `unsafe`: it maps memory and reads and writes ring slots in
//! memory another process maps too. Shared memory holds plain data and offsets only.
//!
//! A ring occupies, from its offset in the segment:
//!
//! | cache line | field | written by |
//! |---|---|---|
//! | 0 | `head: u64`, messages consumed | consumer |
//! | 1 | `tail: u64`, messages published; `wrap_at: u64`, the first message after a soft wrap | producer |
//! | 2 | `rx_armed: u32` (consumer asleep, wants data), `tx_armed: u32` (producer asleep, wants room) | each its own |
//! | 3 | `nslots: u32`, `slot_size: u32` (creator, before sharing); `closed: u32` | either end, when it hangs up |
//! | 3 | `signal: u32`: bumped after a control packet was sent on the connection's socket | the producer end's side (any thread) |
//! | 4, 5 | nothing: the record area does not follow line 3 directly (see [`RING_CTRL`]) | — |
//! | 6… | the record area, `(nslots + 1) × slot_size` bytes | producer |
//!
//! Records are packed: a message takes `len: u32`, `kind: u32` and its payload, rounded up to
//! 8 bytes — a 64-byte message 72 bytes, not a whole slot — so small messages share cache
//! lines and a ring touches memory in proportion to what it carries. Both ends place records
//! by the same rule, without exchanging positions: the next record starts right after the
//! previous one, unless fewer than `slot_size` bytes remain before the end of the area, in
//! which case it starts at 0. `head` and `tail` still count messages (at most `nslots` in
//! flight, the queue size); the extra slot of the area covers the bytes skipped at the wrap,
//! so `nslots` messages of any size always fit (`nslots − 1` records in flight take at most
//! `nslots − 1` slots plus one wrap skip; a soft wrap happens only on an empty ring). The
//! consumer derives positions from the lengths it reads (a hostile length
//! can only give it garbage messages, never a read outside the area). A producer past 16 KiB
//! that finds the ring empty (it looks at the first record of each batch) goes back to 0 (a
//! soft wrap) and says so in `wrap_at`, beside `tail`: a ring drained as fast as it is filled
//! (a ping-pong, a request and its answer, a server's many connections) stays in its first
//! pages.
//!
//! **Sequenced rings** ([`Ring::attach_sequenced`]; the fast path's post and completion
//! rings) carry records of one kind and one size. The second header word holds the message's
//! index plus one instead of the kind, stored last with `Release`; the consumer polls that
//! word where the next record goes rather than `tail`, so a small record reaches it in one
//! cache line. Records of one size stay on one grid (and such rings never soft-wrap), so the
//! polled word is always a header — an older one carries an older number — never stale
//! payload.
//!
//! Orderings: the producer writes a slot, then stores `tail` with `Release`; the consumer
//! loads `tail` with `Acquire` before reading the slot (that pair publishes a message). The
//! consumer stores `head` with `Release` after it is done with a slot; the producer loads
//! `head` with `Acquire` before reusing it (that pair frees a slot). Sleeping uses the
//! Dekker pattern: a side stores its armed flag, issues a `SeqCst` fence, then re-checks the
//! ring; the other side, after publishing (or freeing), issues a `SeqCst` fence, then loads
//! the flag ([`Ring::peer_needs_wakeup`]). Either the sleeper sees the new state or the other
//! side sees the flag and rings the doorbell.
//!
//! Trust: the peer's index (`head` for a producer, `tail` for a consumer) is read from
//! memory the peer can write at will, so every refresh checks it: a producer accepts a
//! `head` only between the last one it saw and `next`, a consumer a `tail` only between the
//! last one it saw and `next + nslots` (indices never move back; wrapping arithmetic,
//! nothing can underflow). Anything else
//! marks the ring corrupt ([`Ring::is_corrupt`], logged once): no slot is read or written
//! past that point, and the owner closes the connection. Slot headers are checked too
//! ([`Slot::bytes`]).
//!
//! The fence costs a cross-core round trip (the store to `tail` or `head` must reach the
//! other core first), so it is not paid per message: the owner calls
//! [`Ring::peer_needs_wakeup`] once per batch (a producer after the last send of a batch, a
//! consumer for its re-posts at the start of its next progress call; both before arming
//! themselves to sleep). A busy peer sees each message at once anyway; a sleeping peer is woken once the
//! batch is over.

#![allow(unsafe_code)]

use std::cell::Cell;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use rustix::mm::{MapFlags, ProtFlags};

use crate::error::{fail, peer_fail};
use crate::error::{Error, Result};

/// A cache line.
pub const LINE: usize = 64;
/// Bytes before a ring's slots: the four control lines, then two empty ones. A consumer
/// with nothing to read looks at line 3 (the peer's hang-up and signal words) at every
/// pass; with the record area right after it, a next-line prefetch can fetch the first
/// record's line (where a ring drained as fast as it is filled starts again) while the
/// producer writes it. The likely reason, not a proven one, why 1 KiB and 4 KiB one-way
/// times grew 2–4 % when the quiet pass began reading line 3; the two empty lines took most
/// of it back (see the book's performance chapter).
pub const RING_CTRL: usize = 6 * LINE;
/// Bytes of a slot header (`len`, `kind`).
pub const SLOT_HEADER: usize = 8;

/// The slot size for messages of up to `max_payload` bytes (a multiple of a cache line).
pub const fn slot_size(max_payload: usize) -> usize {
    (SLOT_HEADER + max_payload).div_ceil(LINE) * LINE
}

/// Bytes a ring of `nslots` messages of up to `max_payload` bytes occupies.
pub const fn ring_bytes(nslots: u32, max_payload: usize) -> usize {
    RING_CTRL + (nslots as usize + 1) * slot_size(max_payload)
}

/// [`ring_bytes`] for sizes a peer chose: `None` when the result does not fit in `usize`.
pub fn ring_bytes_checked(nslots: u32, max_payload: usize) -> Option<usize> {
    let slot = SLOT_HEADER.checked_add(max_payload)?.div_ceil(LINE).checked_mul(LINE)?;
    (nslots as usize).checked_add(1)?.checked_mul(slot)?.checked_add(RING_CTRL)
}

/// Past this position, a producer that finds the ring empty starts again at 0 (it looks once
/// per batch: at its first record after each wake-up check): a ring that is drained as fast
/// as it is filled keeps to its first few pages, hot in cache and never faulting a new page
/// in — also when many connections each carry a little per pass.
const SOFT_WRAP: usize = 16 << 10;

#[repr(C)]
struct Ctrl {
    head: AtomicU64,
    _pad0: [u8; LINE - 8],
    tail: AtomicU64,
    /// The index of the first message after the producer went back to 0 (soft wrap).
    wrap_at: AtomicU64,
    _pad1: [u8; LINE - 16],
    rx_armed: AtomicU32,
    tx_armed: AtomicU32,
    _pad2: [u8; LINE - 8],
    nslots: AtomicU32,
    slot_size: AtomicU32,
    closed: AtomicU32,
    signal: AtomicU32,
    /// Set by a consumer that sleeps on its doorbell only (a link stand-in): the producer
    /// checks whether to wake it at each flushing send, not once per batch.
    eager: AtomicU32,
}

const _: () = assert!(std::mem::size_of::<Ctrl>() <= RING_CTRL);

/// A shared memory segment (memfd), mapped read-write, unmapped on drop.
pub struct Area {
    fd: OwnedFd,
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping has no thread affinity; all access goes through `Ring`, whose
// producer/consumer roles are each used from one thread at a time.
unsafe impl Send for Area {}
// SAFETY: `&Area` exposes only its length, its fd and ring construction (bounds-checked).
unsafe impl Sync for Area {}

impl Area {
    /// A new zeroed segment of `len` bytes, sealed against resizing (so a peer can never
    /// truncate it under this side's mapping).
    pub fn create(name: &str, len: usize) -> Result<Arc<Area>> {
        Area::map(crate::memfd::create_sealed(name, len)?, len)
    }

    /// Maps a segment received from the peer: it must be a memfd sealed against resizing, of
    /// exactly `len` bytes (`INVALID_VALUE` otherwise, logged; anything else it was is
    /// closed on a closing thread, [`crate::discard`]).
    pub fn open(fd: impl Into<crate::discard::PeerFd>, len: usize) -> Result<Arc<Area>> {
        let fd = fd.into();
        crate::memfd::check_sealed(&fd, Some(len))?;
        Area::map(fd.into_inner(), len)
    }

    fn map(fd: OwnedFd, len: usize) -> Result<Arc<Area>> {
        if len == 0 {
            return Err(fail!(Error::InvalidValue, "empty segment"));
        }
        // SAFETY: a new shared mapping of a file we own; it affects no existing memory.
        let p = unsafe {
            rustix::mm::mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                &fd,
                0,
            )
        }
        .map_err(|e| fail!(Error::OperatingSystem, "mmap: {e}"))?;
        let base =
            NonNull::new(p.cast::<u8>()).ok_or_else(|| fail!(Error::OperatingSystem, "mmap gave null"))?;
        Ok(Arc::new(Area { fd, base, len }))
    }

    /// Size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the segment is empty (never: creation refuses it).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl AsFd for Area {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`; rings borrow it only through an `Arc<Area>`, so
        // none is left when the area drops.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// Which end of a ring this process holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Writes messages.
    Producer,
    /// Reads messages.
    Consumer,
}

/// Bytes a record of `len` payload bytes takes: header and payload, rounded up to 8.
fn record_len(len: usize) -> usize {
    (SLOT_HEADER + len).div_ceil(8) * 8
}

/// One end of a ring. Used from one thread at a time (it is `Send`, not `Sync`).
pub struct Ring {
    area: Arc<Area>,
    ctrl: NonNull<Ctrl>,
    slots: NonNull<u8>,
    nslots: u64,
    slot_size: usize,
    end: End,
    /// Producer: next index to publish. Consumer: next index to consume.
    next: Cell<u64>,
    /// Producer: last `head` seen. Consumer: last `tail` seen.
    seen: Cell<u64>,
    /// Published (producer) or freed (consumer) since the last wake-up check.
    unchecked: Cell<bool>,
    /// The peer's index was found out of bounds: the ring is no longer used.
    corrupt: Cell<bool>,
    /// Bytes of the record area (`(nslots + 1) × slot_size`).
    area_bytes: usize,
    /// Producer: where the next record goes. Consumer: where the next record is.
    pos: Cell<usize>,
    /// Producer: whether this lap already looked for an empty ring past [`SOFT_WRAP`].
    soft_tried: Cell<bool>,
    /// A sequenced ring's one kind and record payload (see [`Ring::attach_sequenced`]);
    /// `None`: a packed ring.
    sequenced: Option<(u32, usize)>,
}

// SAFETY: a `Ring` end is owned by one thread at a time; the shared fields are atomics and
// slot bytes are handed over through the Release/Acquire pairs documented above.
unsafe impl Send for Ring {}

impl Ring {
    /// Lays out a new ring at `offset` of a fresh area (creator side, before sharing).
    pub fn init(area: &Arc<Area>, offset: usize, nslots: u32, max_payload: usize) -> Result<()> {
        Self::check_bounds(area, offset, nslots, slot_size(max_payload))?;
        let ctrl = Self::ctrl_at(area, offset);
        // SAFETY: in bounds (checked); `Ctrl` is atomics and padding, valid for any bytes.
        let ctrl = unsafe { ctrl.as_ref() };
        ctrl.nslots.store(nslots, Ordering::Relaxed);
        ctrl.slot_size.store(slot_size(max_payload) as u32, Ordering::Relaxed);
        ctrl.wrap_at.store(u64::MAX, Ordering::Relaxed);
        Ok(())
    }

    /// Attaches to the ring at `offset`, which must have the expected geometry (a peer's
    /// segment is checked, never trusted).
    pub fn attach(
        area: &Arc<Area>,
        offset: usize,
        nslots: u32,
        max_payload: usize,
        end: End,
    ) -> Result<Ring> {
        let size = slot_size(max_payload);
        Self::check_bounds(area, offset, nslots, size)?;
        let ctrl = Self::ctrl_at(area, offset);
        // SAFETY: in bounds (checked); atomics only.
        let c = unsafe { ctrl.as_ref() };
        if c.nslots.load(Ordering::Relaxed) != nslots || c.slot_size.load(Ordering::Relaxed) as usize != size
        {
            return Err(peer_fail!(
                Error::InvalidValue,
                "ring geometry in the shared segment does not match the handshake"
            ));
        }
        let (head, tail) = (c.head.load(Ordering::Acquire), c.tail.load(Ordering::Acquire));
        if tail.wrapping_sub(head) > nslots as u64 {
            return Err(peer_fail!(
                Error::InvalidValue,
                "ring indices in the shared segment are inconsistent"
            ));
        }
        // Record positions follow from every length since the first message: an end joins a
        // ring only before its own side has moved.
        let moved = match end {
            End::Producer => tail != 0,
            End::Consumer => head != 0,
        };
        if moved {
            return Err(peer_fail!(Error::InvalidValue, "ring in the shared segment is already in use"));
        }
        // SAFETY: `offset + RING_CTRL` is inside the area (checked with the slots).
        let slots = unsafe { NonNull::new_unchecked(area.base.as_ptr().add(offset + RING_CTRL)) };
        let (next, seen) = match end {
            End::Producer => (tail, head),
            End::Consumer => (head, tail),
        };
        Ok(Ring {
            area: area.clone(),
            ctrl,
            slots,
            nslots: nslots as u64,
            slot_size: size,
            end,
            next: Cell::new(next),
            seen: Cell::new(seen),
            unchecked: Cell::new(false),
            corrupt: Cell::new(false),
            area_bytes: (nslots as usize + 1) * size,
            pos: Cell::new(0),
            soft_tried: Cell::new(false),
            sequenced: None,
        })
    }

    /// Attaches to a **sequenced** ring: every record is `max_payload` bytes of one `kind`,
    /// and its header carries `len` and, instead of the kind, a sequence number (the message
    /// index plus one) that the producer stores last, with `Release`. The consumer polls that
    /// number where the next record goes — one cache line for a record of up to 56 bytes,
    /// instead of `tail`'s line and then the record's. Records keep to one grid (same size,
    /// no soft wrap), so a header position never holds stale payload bytes: an old header there
    /// carries an older number. `tail` is still stored (the join check reads it). Both ends
    /// must attach alike.
    pub fn attach_sequenced(
        area: &Arc<Area>,
        offset: usize,
        nslots: u32,
        max_payload: usize,
        end: End,
        kind: u32,
    ) -> Result<Ring> {
        let mut ring = Ring::attach(area, offset, nslots, max_payload, end)?;
        ring.sequenced = Some((kind, max_payload));
        Ok(ring)
    }

    /// The sequence word of the record at `slot` (sequenced rings), borrowed from the ring
    /// (whose area keeps the memory mapped).
    fn seq_word(&self, slot: *mut u8) -> &AtomicU32 {
        debug_assert!(
            slot >= self.slots.as_ptr() && (slot as usize) < self.slots.as_ptr() as usize + self.area_bytes
        );
        // `slot` is a record position of this ring (the placement rule keeps it inside the
        // area checked at attach, which `self.area` keeps mapped while `self` lives), 8-byte
        // aligned (the area starts on a line and records are multiples of 8); the word is only
        // ever accessed atomically, by both ends.
        // SAFETY: see above.
        unsafe { &*slot.add(4).cast::<AtomicU32>() }
    }

    /// Sequenced consumer: whether the record for `next` is published at `pos`.
    fn seq_ready(&self) -> bool {
        let want = (self.next.get() as u32).wrapping_add(1);
        // Acquire pairs with the producer's Release store of the number: the record is whole.
        self.seq_word(self.record(self.pos.get())).load(Ordering::Acquire) == want
    }

    /// Producer: reads the consumer's `head`; false (the ring marked corrupt) unless it lies
    /// between the last `head` seen and `next` (it never moves back, nor past what was
    /// published).
    fn refresh_head(&self) -> bool {
        // Acquire pairs with the consumer's Release store of `head`: the slot is free.
        let head = self.c().head.load(Ordering::Acquire);
        let (next, seen) = (self.next.get(), self.seen.get());
        if self.corrupt.get() || head.wrapping_sub(seen) > next.wrapping_sub(seen) {
            self.mark_corrupt("head", head);
            return false;
        }
        self.seen.set(head);
        true
    }

    /// Consumer: reads the producer's `tail`; false (the ring marked corrupt) unless it lies
    /// in `seen ..= next + nslots` (it never moves back, nor more than a ring ahead).
    fn refresh_tail(&self) -> bool {
        // Acquire pairs with the producer's Release store of `tail`.
        let tail = self.c().tail.load(Ordering::Acquire);
        let (next, seen) = (self.next.get(), self.seen.get());
        let ahead = tail.wrapping_sub(next);
        if self.corrupt.get() || ahead > self.nslots || ahead < seen.wrapping_sub(next) {
            self.mark_corrupt("tail", tail);
            return false;
        }
        self.seen.set(tail);
        true
    }

    #[cold]
    fn mark_corrupt(&self, which: &str, value: u64) {
        if !self.corrupt.replace(true) {
            // The owner logs the connection it closes (rate-limited); details here.
            tracing::debug!(
                target: "doca_sdk",
                "shared ring: the peer's {which} index {value} is out of bounds (own index {}, {} slots): ring refused",
                self.next.get(),
                self.nslots
            );
        }
    }

    /// Whether the peer broke the ring (an index out of bounds): the connection must close.
    pub fn is_corrupt(&self) -> bool {
        self.corrupt.get()
    }

    fn check_bounds(area: &Area, offset: usize, nslots: u32, size: usize) -> Result<()> {
        let need = (nslots as usize + 1).checked_mul(size).and_then(|s| s.checked_add(offset + RING_CTRL));
        if nslots == 0 || offset % LINE != 0 || need.is_none_or(|n| n > area.len) {
            return Err(peer_fail!(
                Error::InvalidValue,
                "ring of {nslots} slots at {offset} does not fit the segment"
            ));
        }
        Ok(())
    }

    fn ctrl_at(area: &Area, offset: usize) -> NonNull<Ctrl> {
        // SAFETY: callers checked `offset + RING_CTRL <= len`; the base is page-aligned and
        // `offset` a multiple of 64, so the pointer is aligned for `Ctrl`.
        unsafe { NonNull::new_unchecked(area.base.as_ptr().add(offset).cast::<Ctrl>()) }
    }

    fn c(&self) -> &Ctrl {
        // SAFETY: checked at attach; the area (kept alive by `self.area`) stays mapped.
        unsafe { self.ctrl.as_ref() }
    }

    /// The record at `pos`.
    fn record(&self, pos: usize) -> *mut u8 {
        debug_assert!(pos + self.slot_size <= self.area_bytes);
        // SAFETY: `pos + slot_size <= area_bytes` (the placement rule keeps it so), and the
        // area lies inside the bounds checked at attach.
        unsafe { self.slots.as_ptr().add(pos) }
    }

    /// Moves `pos` past a record of `len` payload bytes, by the placement rule (both ends).
    #[inline]
    fn advance(&self, len: usize) {
        // A sequenced ring keeps to its grid whatever a header says.
        let len = match self.sequenced {
            Some((_, whole)) => whole,
            None => len.min(self.max_payload()),
        };
        let mut pos = self.pos.get() + record_len(len);
        if pos + self.slot_size > self.area_bytes {
            pos = 0;
            self.soft_tried.set(false);
        }
        self.pos.set(pos);
    }

    /// Producer, before placing a record: past [`SOFT_WRAP`] (once per batch), if the consumer
    /// has read everything, go back to 0; the record says so through `wrap_at` (published
    /// with it by the `tail` store).
    #[inline]
    fn maybe_soft_wrap(&self) {
        let pos = self.pos.get();
        if pos < SOFT_WRAP || self.sequenced.is_some() || self.soft_tried.replace(true) {
            return;
        }
        if !self.refresh_head() || self.next.get() != self.seen.get() {
            return;
        }
        self.c().wrap_at.store(self.next.get(), Ordering::Relaxed);
        self.pos.set(0);
        self.soft_tried.set(false); // a new lap
    }

    /// Largest payload a slot holds.
    pub fn max_payload(&self) -> usize {
        self.slot_size - SLOT_HEADER
    }

    /// Number of slots.
    pub fn capacity(&self) -> u64 {
        self.nslots
    }

    /// Producer: messages published and not yet consumed (all slots when the ring is
    /// corrupt: nothing more is written).
    pub fn in_flight(&self) -> u64 {
        if !self.refresh_head() {
            return self.nslots;
        }
        self.next.get().wrapping_sub(self.seen.get())
    }

    /// Producer: slots in use as this side last saw the consumer's position (an upper
    /// bound; reads no shared memory).
    pub fn fill_seen(&self) -> u64 {
        self.next.get().wrapping_sub(self.seen.get())
    }

    /// Producer: whether a slot is free (refreshes the consumer's position when needed).
    pub fn has_room(&self) -> bool {
        debug_assert_eq!(self.end, End::Producer);
        let next = self.next.get();
        if next.wrapping_sub(self.seen.get()) < self.nslots && !self.corrupt.get() {
            return true;
        }
        self.refresh_head() && next.wrapping_sub(self.seen.get()) < self.nslots
    }

    /// Producer: publishes one message of `len` bytes that `fill` writes. False (and
    /// nothing written) when the ring is full. `len` beyond the slot is refused with
    /// `INVALID_VALUE`.
    pub fn push_with(&self, kind: u32, len: usize, fill: impl FnOnce(&mut [u8])) -> Result<bool> {
        if len > self.max_payload() {
            return Err(fail!(
                Error::InvalidValue,
                "message of {len} bytes exceeds the slot's {}",
                self.max_payload()
            ));
        }
        if self.sequenced.is_some_and(|whole| whole != (kind, len)) {
            return Err(fail!(
                Error::InvalidValue,
                "a sequenced ring carries whole records (kind, bytes) {:?}, not ({kind}, {len})",
                self.sequenced
            ));
        }
        if !self.has_room() {
            return Ok(false);
        }
        self.maybe_soft_wrap();
        if self.corrupt.get() {
            return Ok(false); // the soft wrap's look at `head` found the ring broken
        }
        let next = self.next.get();
        let slot = self.record(self.pos.get());
        // SAFETY: this slot is ours until we publish it: the consumer has released it (head
        // seen above) and will not read it before our Release store of `tail`. `len` fits.
        unsafe {
            slot.cast::<u32>().write_unaligned(len as u32);
            if self.sequenced.is_none() {
                slot.add(4).cast::<u32>().write_unaligned(kind);
            }
            fill(std::slice::from_raw_parts_mut(slot.add(SLOT_HEADER), len));
        }
        if self.sequenced.is_some() {
            // Release publishes the record to the consumer's Acquire load of the number.
            self.seq_word(slot).store((next as u32).wrapping_add(1), Ordering::Release);
        }
        self.advance(len);
        self.next.set(next.wrapping_add(1));
        // Release publishes the slot bytes to the consumer's Acquire load of `tail`.
        self.c().tail.store(next.wrapping_add(1), Ordering::Release);
        self.unchecked.set(true);
        Ok(true)
    }

    /// After a batch of publishes (producer) or releases (consumer): whether the other side
    /// sleeps waiting for it and needs its doorbell rung (clears its flag when so). Free when
    /// nothing happened since the last check; one `SeqCst` fence otherwise.
    pub fn peer_needs_wakeup(&self) -> bool {
        if !self.unchecked.get() {
            return false;
        }
        // SeqCst fence: our `tail` (or `head`) stores are ordered before this flag load
        // (Dekker, paired with the fence in `arm_for_data` / `arm_for_room`).
        fence(Ordering::SeqCst);
        self.peer_needs_wakeup_fenced()
    }

    /// Drops the pending wake-up check (for rings whose peer never waits on them).
    pub fn forget_wakeup_check(&self) {
        self.unchecked.set(false);
        self.soft_tried.set(false);
    }

    /// Whether a wake-up check is due (something was published or freed since the last).
    pub fn wakeup_check_due(&self) -> bool {
        self.unchecked.get()
    }

    /// [`Ring::peer_needs_wakeup`] of a connection's two rings (the one it writes, the one
    /// it reads) for one fence: `(tx's peer sleeps, rx's peer sleeps)`; free when neither
    /// moved since its last check.
    pub fn pair_needs_wakeup(tx: &Ring, rx: &Ring) -> (bool, bool) {
        if !tx.wakeup_check_due() && !rx.wakeup_check_due() {
            return (false, false);
        }
        // SeqCst fence: both rings' `tail`/`head` stores before the peer's armed flags are
        // read (Dekker, paired with the fence in `arm_for_data` / `arm_for_room`).
        fence(Ordering::SeqCst);
        (tx.peer_needs_wakeup_fenced(), rx.peer_needs_wakeup_fenced())
    }

    /// Producer: whether the consumer sleeps now, as far as can be told without a fence (its
    /// flag is taken when it does, so that one doorbell answers it). Leaves the wake-up check
    /// due: a consumer arming while this end's last `tail` store is still on its way is seen
    /// by that fenced check only ([`Ring::peer_needs_wakeup`]), at this end's next pass or
    /// sleep. For a sender outside its pass, whose application may not progress again soon:
    /// a consumer asleep before the send (the usual case) wakes at once, at the price of one
    /// load of a line the consumer writes only when it arms.
    pub fn peer_asleep_now(&self) -> bool {
        debug_assert_eq!(self.end, End::Producer);
        let flag = &self.c().rx_armed;
        flag.load(Ordering::Relaxed) != 0 && flag.swap(0, Ordering::Relaxed) != 0
    }

    /// [`Ring::peer_needs_wakeup`] for a caller that issued the `SeqCst` fence itself, after
    /// this ring's last store: an owner of many rings pays one fence for all of them.
    pub fn peer_needs_wakeup_fenced(&self) -> bool {
        if !self.unchecked.replace(false) {
            return false;
        }
        // A new batch may find the ring drained: look again past the soft-wrap point.
        self.soft_tried.set(false);
        let flag = match self.end {
            End::Producer => &self.c().rx_armed,
            End::Consumer => &self.c().tx_armed,
        };
        flag.load(Ordering::Relaxed) != 0 && flag.swap(0, Ordering::Relaxed) != 0
    }

    /// Producer: going to sleep while messages wait for room. Returns true when room
    /// appeared meanwhile (do not sleep).
    pub fn arm_for_room(&self) -> bool {
        self.c().tx_armed.store(1, Ordering::Relaxed);
        // SeqCst fence: the flag store is ordered before the `head` re-check (Dekker).
        fence(Ordering::SeqCst);
        self.has_room()
    }

    /// Producer: woke up; stop asking for room notifications.
    pub fn disarm_room(&self) {
        self.c().tx_armed.store(0, Ordering::Relaxed);
    }

    /// Producer: woke up after [`Ring::arm_for_room`]; whether the consumer took the flag
    /// meanwhile (it rang the room doorbell, as [`Ring::disarm_data_taken`] tells for data).
    pub fn disarm_room_taken(&self) -> bool {
        self.c().tx_armed.swap(0, Ordering::Relaxed) == 0
    }

    /// Consumer: the next message, if any; [`Slot::consume`] releases it.
    pub fn peek(&self) -> Option<Slot<'_>> {
        debug_assert_eq!(self.end, End::Consumer);
        let next = self.next.get();
        if self.corrupt.get() {
            return None;
        }
        if let Some((kind, _)) = self.sequenced {
            if !self.seq_ready() {
                return None;
            }
            let slot = self.record(self.pos.get());
            // SAFETY: published (its number seen above), not reused before `head` moves.
            let len = unsafe { slot.cast::<u32>().read_unaligned() };
            return Some(Slot { ring: self, ptr: slot, len: len as usize, kind });
        }
        if next == self.seen.get() && (!self.refresh_tail() || next == self.seen.get()) {
            return None;
        }
        // Ordered by the Acquire load of `tail` that showed this message.
        if self.c().wrap_at.load(Ordering::Relaxed) == next {
            self.pos.set(0);
        }
        let slot = self.record(self.pos.get());
        let (len_at, kind_at) = (slot.cast::<u32>(), slot.wrapping_add(4).cast::<u32>());
        // SAFETY: published (tail seen above), not reused before `head` moves; plain bytes.
        let (len, kind) = unsafe { (len_at.read_unaligned(), kind_at.read_unaligned()) };
        Some(Slot { ring: self, ptr: slot, len: len as usize, kind })
    }

    /// Sequenced consumer: starts bringing the next record's line into this core's cache
    /// without waiting for it. For a ring whose records wait their turn (posted buffers:
    /// written long before they are used), reading the next one when it is needed would cost
    /// a round trip to the writer's core at that moment; fetched now, it is there by then.
    pub fn prefetch_next(&self) {
        if self.sequenced.is_some() && !self.corrupt.get() {
            prefetch(self.record(self.pos.get()));
        }
    }

    /// Consumer: going to sleep. Returns true when a message arrived meanwhile.
    pub fn arm_for_data(&self) -> bool {
        self.c().rx_armed.store(1, Ordering::Relaxed);
        // SeqCst fence: the flag store is ordered before the `tail` re-check (Dekker).
        fence(Ordering::SeqCst);
        if self.sequenced.is_some() {
            return self.seq_ready();
        }
        self.c().tail.load(Ordering::Acquire) != self.next.get()
    }

    /// Consumer: woke up.
    pub fn disarm_data(&self) {
        self.c().rx_armed.store(0, Ordering::Relaxed);
    }

    /// Consumer: woke up after [`Ring::arm_for_data`]; whether the producer took the flag
    /// meanwhile — it rings the doorbell once when it does, so a ring waits or is on its
    /// way. The flag is shared memory: a peer may lie either way, which costs the caller a
    /// look at its sockets, never a lost wake-up (the doorbell stays readable until drained).
    pub fn disarm_data_taken(&self) -> bool {
        self.c().rx_armed.swap(0, Ordering::Relaxed) == 0
    }

    /// Consumer: whether a message waits (cheap: no fence). A corrupt ring has nothing to
    /// read, whatever its indices say (a waiter must not be kept awake by a broken peer).
    pub fn has_data(&self) -> bool {
        if self.corrupt.get() {
            return false;
        }
        if self.sequenced.is_some() {
            return self.seq_ready();
        }
        self.next.get() != self.seen.get() || self.c().tail.load(Ordering::Acquire) != self.next.get()
    }

    fn release(&self) {
        let next = self.next.get().wrapping_add(1);
        self.next.set(next);
        // Release: we are done reading the slot before the producer may reuse it.
        self.c().head.store(next, Ordering::Release);
        self.unchecked.set(true);
    }

    /// Either end: hang up. The other end sees it with [`Ring::is_closed`] at the cost of a
    /// load (no syscall), after the messages already published.
    pub fn close(&self) {
        // Release pairs with the Acquire in `is_closed`: what was published before is seen.
        self.c().closed.store(1, Ordering::Release);
    }

    /// Whether an end hung up with [`Ring::close`].
    pub fn is_closed(&self) -> bool {
        self.c().closed.load(Ordering::Acquire) != 0
    }

    /// Consumer: asks the producer to check at each flushing send whether this end sleeps
    /// (instead of once per batch, at its next progress): for a reader that nothing else
    /// wakes — a link stand-in, whose application may submit and then never progress.
    pub fn set_eager(&self) {
        // Relaxed: set before this end first arms (whose SeqCst fence orders it).
        self.c().eager.store(1, Ordering::Relaxed);
    }

    /// Producer: whether the consumer asked for [`Ring::set_eager`] (one relaxed load).
    pub fn peer_wants_eager(&self) -> bool {
        self.c().eager.load(Ordering::Relaxed) != 0
    }

    /// A handle that tells from any thread whether messages wait in this ring.
    pub fn probe(&self) -> Probe {
        Probe { area: self.area.clone(), ctrl: self.ctrl }
    }

    /// Producer end: a handle that tells the reader "a control packet waits on the socket"
    /// (any thread may use it; it keeps the segment mapped).
    pub fn signal(&self) -> Signal {
        debug_assert_eq!(self.end, End::Producer);
        Signal { area: self.area.clone(), ctrl: self.ctrl }
    }

    /// Consumer end: the signal count the producer end's side has bumped so far.
    pub fn signals(&self) -> u32 {
        // Acquire pairs with the Release of `Signal::bump`: the packet was sent before.
        self.c().signal.load(Ordering::Acquire)
    }

    /// The segment this ring lives in.
    pub fn area(&self) -> &Arc<Area> {
        &self.area
    }
}

/// Whether a ring holds messages its consumer has not released yet, readable from any
/// thread (a stand-in's exit flush waits on it while its owner forwards them).
pub struct Probe {
    area: Arc<Area>,
    ctrl: NonNull<Ctrl>,
}

// SAFETY: `Probe` only loads two atomics in the mapped segment it keeps alive.
unsafe impl Send for Probe {}
// SAFETY: as above; atomics are shared-safe.
unsafe impl Sync for Probe {}

impl Probe {
    /// Whether messages wait: published (`tail`) and not yet released (`head`).
    pub fn pending(&self) -> bool {
        let _ = &self.area;
        // SAFETY: `ctrl` points into `area` (kept alive by `self`), checked at attach.
        let c = unsafe { self.ctrl.as_ref() };
        // Acquire pairs with the Release stores of `tail` (producer) and `head` (consumer).
        c.tail.load(Ordering::Acquire) != c.head.load(Ordering::Acquire)
    }
}

/// Tells the other side of a connection that a control packet waits on the socket: it looks
/// at its socket on its next progress instead of at its next control poll.
pub struct Signal {
    area: Arc<Area>,
    ctrl: NonNull<Ctrl>,
}

// SAFETY: `Signal` only touches one atomic in the mapped segment it keeps alive.
unsafe impl Send for Signal {}
// SAFETY: as above; atomics are shared-safe.
unsafe impl Sync for Signal {}

impl Signal {
    /// Bumps the count (after the packet was sent).
    pub fn bump(&self) {
        let _ = &self.area;
        // SAFETY: `ctrl` points into `area` (kept alive by `self`), checked at attach.
        let c = unsafe { self.ctrl.as_ref() };
        // Release pairs with the reader's Acquire load in `Ring::signals`.
        c.signal.fetch_add(1, Ordering::Release);
    }
}

/// A received message, still in its ring slot.
pub struct Slot<'a> {
    ring: &'a Ring,
    ptr: *mut u8,
    len: usize,
    kind: u32,
}

impl Slot<'_> {
    /// The message kind the producer set.
    pub fn kind(&self) -> u32 {
        self.kind
    }

    /// The payload, or `None` when the header is corrupt (a length beyond the slot: the
    /// peer is broken or hostile).
    pub fn bytes(&self) -> Option<&[u8]> {
        if self.len > self.ring.max_payload() {
            return None;
        }
        // SAFETY: published and in bounds (length checked); the producer does not touch the
        // slot before we release it, which needs `consume(self)`, ending this borrow.
        Some(unsafe { std::slice::from_raw_parts(self.ptr.add(SLOT_HEADER), self.len) })
    }

    /// Releases the slot to the producer (check [`Ring::peer_needs_wakeup`] after a batch).
    pub fn consume(self) {
        self.ring.advance(self.len);
        self.ring.release()
    }
}

/// A hint that the line at `p` will be read soon (a no-op where the target has no such
/// instruction here).
#[inline]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing architecturally, never faults and
    // writes no memory, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(target_arch = "aarch64")]
    // SAFETY: as above (`prfm` is a hint and never faults).
    unsafe {
        std::arch::asm!("prfm pldl1keep, [{0}]", in(reg) p, options(nostack, preserves_flags, readonly))
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 20 000 rounds of a pseudo-random burst of sends (up to `bursts.0`) and of reads (up
    /// to `bursts.1`, or, with `drain_all`, now and then everything), message `i` being
    /// `len_of(i)` bytes of `i`: checks every message read, returns (sent, read).
    fn churn(
        tx: &Ring,
        rx: &Ring,
        max: usize,
        mut seed: u64,
        bursts: (u64, u64),
        drain_all: bool,
    ) -> (u64, u64) {
        let (mut sent, mut got) = (0u64, 0u64);
        let len_of = |i: u64| (i.wrapping_mul(2654435761) % (max as u64 + 1)) as usize;
        for round in 0..20_000 {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            for _ in 0..(seed >> 58) % bursts.0 {
                let len = len_of(sent);
                if !tx.push_with(1, len, |b| b.fill(sent as u8)).unwrap() {
                    break;
                }
                sent += 1;
            }
            let reads = if drain_all && (seed >> 40) % 3 == 0 { u64::MAX } else { (seed >> 50) % bursts.1 };
            for _ in 0..reads {
                let Some(s) = rx.peek() else { break };
                assert_eq!(s.kind(), 1, "round {round}, message {got}: not a message");
                let want = vec![got as u8; len_of(got)];
                assert_eq!(s.bytes().unwrap(), &want[..], "round {round}, message {got}");
                s.consume();
                got += 1;
            }
        }
        (sent, got)
    }

    fn ring_pair(nslots: u32) -> (Ring, Ring) {
        sized_pair(nslots, 16)
    }

    /// A fresh ring of `nslots` slots for `max` payload bytes: (producer end, consumer end).
    fn sized_pair(nslots: u32, max: usize) -> (Ring, Ring) {
        let area = Area::create("ring-test", ring_bytes(nslots, max)).unwrap();
        Ring::init(&area, 0, nslots, max).unwrap();
        let tx = Ring::attach(&area, 0, nslots, max, End::Producer).unwrap();
        let rx = Ring::attach(&area, 0, nslots, max, End::Consumer).unwrap();
        (tx, rx)
    }

    #[test]
    fn a_tail_ahead_by_more_than_the_ring_or_behind_the_reader_is_refused() {
        for bogus in [|next: u64| next + 5, |next: u64| next.wrapping_sub(1), |_| u64::MAX] {
            let (tx, rx) = ring_pair(4);
            assert!(tx.push_with(1, 1, |b| b[0] = 7).unwrap());
            let s = rx.peek().unwrap();
            s.consume();
            // The peer (the producer side) writes a tail the reader cannot accept.
            rx.c().tail.store(bogus(rx.next.get()), Ordering::Release);
            assert!(rx.peek().is_none(), "no slot is read past a bogus tail");
            assert!(rx.is_corrupt());
            assert!(rx.peek().is_none(), "and none afterwards");
        }
    }

    #[test]
    fn a_head_ahead_of_the_writer_or_behind_by_more_than_the_ring_is_refused() {
        for bogus in [|next: u64| next + 1, |next: u64| next.wrapping_sub(5), |_| u64::MAX / 2] {
            let (tx, _rx) = ring_pair(4);
            for _ in 0..4 {
                assert!(tx.push_with(1, 1, |_| {}).unwrap());
            }
            // The peer (the consumer side) writes a head the writer cannot accept.
            tx.c().head.store(bogus(tx.next.get()), Ordering::Release);
            assert!(!tx.has_room(), "no slot is overwritten on a bogus head");
            assert!(tx.is_corrupt());
            assert_eq!(tx.in_flight(), 4, "a corrupt ring reads as full");
            assert!(!tx.push_with(1, 1, |_| {}).unwrap());
        }
    }

    #[test]
    fn indices_that_move_back_are_refused() {
        // A head moving back (below one already seen) would let the writer reuse slots the
        // reader still holds by its own account: refused.
        let (tx, rx) = ring_pair(4);
        for _ in 0..3 {
            assert!(tx.push_with(1, 1, |_| {}).unwrap());
        }
        rx.peek().unwrap().consume();
        rx.peek().unwrap().consume();
        assert!(tx.refresh_head(), "head 2 of 3");
        tx.c().head.store(1, Ordering::Release);
        assert!(!tx.has_room() || !tx.refresh_head());
        assert!(tx.is_corrupt(), "a head that moved back marks the ring corrupt");
        // A tail moving back on the reader's side.
        let (tx, rx) = ring_pair(4);
        for _ in 0..3 {
            assert!(tx.push_with(1, 1, |_| {}).unwrap());
        }
        rx.peek().unwrap().consume(); // sees tail 3
        rx.c().tail.store(2, Ordering::Release);
        rx.peek().unwrap().consume();
        rx.peek().unwrap().consume();
        assert!(rx.peek().is_none());
        assert!(rx.is_corrupt(), "a tail that moved back marks the ring corrupt");
    }

    #[test]
    fn a_segment_with_inconsistent_indices_is_not_attached() {
        let area = Area::create("ring-test", ring_bytes(4, 16)).unwrap();
        Ring::init(&area, 0, 4, 16).unwrap();
        let probe = Ring::attach(&area, 0, 4, 16, End::Consumer).unwrap();
        probe.c().tail.store(9, Ordering::Release);
        assert_eq!(Ring::attach(&area, 0, 4, 16, End::Consumer).err(), Some(Error::InvalidValue));
    }

    /// Records of mixed sizes, packed and wrapping many times, with the queue often full: every
    /// message arrives whole and in order, `nslots` messages of the largest size always fit,
    /// and small ones share cache lines.
    #[test]
    fn packed_records_of_any_size_wrap_without_overlap() {
        let (n, max) = (4u32, 100usize);
        let (tx, rx) = sized_pair(n, max);
        for _ in 0..n {
            assert!(tx.push_with(9, max, |b| b.fill(0xab)).unwrap(), "the queue holds {n} of the largest");
        }
        assert!(!tx.push_with(9, 0, |_| {}).unwrap(), "and no more");
        while let Some(s) = rx.peek() {
            assert_eq!(s.bytes().unwrap(), &[0xab; 100][..]);
            s.consume();
        }
        let (sent, got) = churn(&tx, &rx, max, 7, (5, 5), false);
        assert!(sent > 10_000 && got + u64::from(n) >= sent, "sent {sent}, got {got}");
        // A 16-byte message takes 24 bytes (its header and payload), not a 64-byte slot.
        let (tx2, _rx2) = ring_pair(8);
        let first = tx2.pos.get();
        assert!(tx2.push_with(1, 16, |_| {}).unwrap());
        assert_eq!(tx2.pos.get() - first, 24);
    }

    /// A ring drained as fast as it is filled goes back to its start past 16 KiB: it keeps
    /// to its first pages, and every message still arrives whole.
    #[test]
    fn a_drained_ring_goes_back_to_its_start() {
        let (n, max) = (1024u32, 4080usize);
        let (tx, rx) = sized_pair(n, max);
        let mut furthest = 0;
        for i in 0..10_000u32 {
            assert!(tx.push_with(1, 64, |b| b.fill(i as u8)).unwrap());
            furthest = furthest.max(tx.pos.get());
            let s = rx.peek().unwrap();
            assert_eq!(s.bytes().unwrap(), &[i as u8; 64][..], "message {i}");
            s.consume();
        }
        assert!(furthest <= SOFT_WRAP + 72, "the ring kept to its first {furthest} bytes");
        assert!(!rx.is_corrupt() && !tx.is_corrupt());
    }

    /// A ring found busy at the soft-wrap point is looked at again after the next batch (not
    /// only on the next lap): many connections each carrying a little per pass still keep to
    /// their first pages.
    #[test]
    fn a_ring_busy_at_the_soft_wrap_point_wraps_after_a_later_batch() {
        let (tx, rx) = sized_pair(1024, 4080);
        let mut i = 0u8;
        let mut send = |tx: &Ring| {
            i = i.wrapping_add(1);
            assert!(tx.push_with(1, 64, |b| b.fill(i)).unwrap());
            i
        };
        let take = |want: u8| {
            let s = rx.peek().unwrap();
            assert_eq!(s.bytes().unwrap(), &[want; 64][..]);
            s.consume();
        };
        while tx.pos.get() + record_len(64) < SOFT_WRAP {
            let m = send(&tx);
            take(m);
        }
        let a = send(&tx); // the last record before the point; not read yet
        let _ = tx.peer_needs_wakeup(); // the batch ends
        let b = send(&tx); // the batch's first look: the ring is not empty, no wrap
        assert!(tx.pos.get() > SOFT_WRAP);
        take(a);
        take(b);
        let _ = tx.peer_needs_wakeup();
        let c = send(&tx); // the next batch looks again: drained, back to the start
        assert_eq!(tx.pos.get(), record_len(64), "the record went to the start of the area");
        take(c);
        assert!(!rx.is_corrupt() && !tx.is_corrupt());
    }

    /// A sequenced ring of `nslots` records of `len` bytes of kind 9: (producer, consumer).
    fn sequenced_pair(nslots: u32, len: usize) -> (Ring, Ring) {
        let area = Area::create("ring-test", ring_bytes(nslots, len)).unwrap();
        Ring::init(&area, 0, nslots, len).unwrap();
        let tx = Ring::attach_sequenced(&area, 0, nslots, len, End::Producer, 9).unwrap();
        let rx = Ring::attach_sequenced(&area, 0, nslots, len, End::Consumer, 9).unwrap();
        (tx, rx)
    }

    /// Many laps of a sequenced ring, in bursts: every record arrives whole and in order, the
    /// ring holds its queue size, and records of another kind or size are refused.
    #[test]
    fn a_sequenced_ring_carries_whole_records_in_order_lap_after_lap() {
        let (n, len) = (8u32, 24usize);
        let (tx, rx) = sequenced_pair(n, len);
        assert_eq!(tx.push_with(1, len, |_| {}), Err(Error::InvalidValue), "another kind");
        assert_eq!(tx.push_with(9, len - 1, |_| {}), Err(Error::InvalidValue), "another size");
        assert!(rx.peek().is_none() && !rx.has_data());
        let (mut sent, mut got) = (0u64, 0u64);
        for round in 0..5_000u64 {
            for _ in 0..round % 11 {
                if !tx.push_with(9, len, |b| b.fill(sent as u8)).unwrap() {
                    assert_eq!(sent - got, n as u64, "full only at the queue size");
                    break;
                }
                sent += 1;
            }
            for _ in 0..round % 7 {
                let Some(s) = rx.peek() else { break };
                assert_eq!((s.kind(), s.bytes().unwrap()), (9, &[got as u8; 24][..]), "record {got}");
                s.consume();
                got += 1;
            }
        }
        assert!(got > 10_000 && sent - got <= n as u64);
        assert!(!tx.is_corrupt() && !rx.is_corrupt());
    }

    /// The consumer of a sequenced ring takes a record only once its number is the next one:
    /// bytes written without it, an old number or one from further ahead give nothing.
    #[test]
    fn a_sequenced_record_counts_only_with_the_next_number() {
        let (tx, rx) = sequenced_pair(4, 24);
        let first = rx.record(0);
        // The producer side writes a header and payload but no (or a wrong) number.
        for bogus in [0u32, 2, u32::MAX] {
            rx.seq_word(first).store(bogus, Ordering::Release);
            assert!(rx.peek().is_none() && !rx.has_data(), "number {bogus}");
        }
        rx.seq_word(first).store(0, Ordering::Release);
        assert!(tx.push_with(9, 24, |b| b.fill(5)).unwrap());
        assert!(rx.has_data());
        assert!(rx.arm_for_data(), "a sleeper arming now sees the record");
        rx.disarm_data();
        let s = rx.peek().unwrap();
        assert_eq!(s.bytes().unwrap(), &[5; 24][..]);
        s.consume();
        assert!(rx.peek().is_none(), "the same record is not taken twice");
        assert!(!rx.arm_for_data());
    }

    #[test]
    fn messages_cross_in_order_and_the_ring_fills() {
        let area = Area::create("ring-test", ring_bytes(4, 100)).unwrap();
        Ring::init(&area, 0, 4, 100).unwrap();
        let tx = Ring::attach(&area, 0, 4, 100, End::Producer).unwrap();
        let rx = Ring::attach(&area, 0, 4, 100, End::Consumer).unwrap();
        assert!(Ring::attach(&area, 0, 5, 100, End::Consumer).is_err(), "geometry mismatch");
        assert!(rx.peek().is_none());
        for i in 0..4u8 {
            assert!(tx.push_with(7, 3, |b| b.copy_from_slice(&[i; 3])).unwrap());
        }
        assert!(!tx.push_with(7, 1, |_| {}).unwrap(), "full");
        assert_eq!(tx.push_with(7, 200, |_| {}), Err(Error::InvalidValue), "too big");
        for i in 0..4u8 {
            let s = rx.peek().unwrap();
            assert_eq!((s.kind(), s.bytes().unwrap()), (7, &[i; 3][..]));
            s.consume();
        }
        assert!(rx.peek().is_none());
        assert!(tx.push_with(1, 0, |_| {}).unwrap(), "room again after consumption");
        assert!(rx.arm_for_data(), "a message is waiting");
        assert!(tx.peer_needs_wakeup(), "the consumer armed: wake it");
        assert!(!tx.peer_needs_wakeup(), "nothing new since the last check");
        rx.disarm_data();
        assert_eq!(rx.peek().unwrap().bytes().unwrap().len(), 0);
    }

    #[test]
    fn bursts_and_partial_drains_with_soft_wraps() {
        let (n, max) = (64u32, 4080usize);
        let (tx, rx) = sized_pair(n, max);
        let (_, got) = churn(&tx, &rx, max, 11, (40, 40), true);
        assert!(got > 100_000, "got {got}");
        assert!(!rx.is_corrupt() && !tx.is_corrupt());
    }
}
