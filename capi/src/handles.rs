//! Opaque handles. C never looks inside a `struct doca_x *`: what this library hands out is a
//! token, not an address — a slot number, the slot's generation and the kind of object — so
//! a NULL, forged, freed or wrong-kind handle is refused (`DOCA_ERROR_INVALID_VALUE`), and a
//! handle whose slot was reused for a new object is still recognised as stale.
//!
//! Token layout (64 bits): kind (6) · generation (32) · slot + 1 (22) · 4 zero bits (so a
//! token looks like an aligned pointer and is never NULL). A slot reused four billion times
//! could match an old handle again; nothing short of that can.
//!
//! Nothing behind a handle is read before its token is found live in its own kind's table:
//! a pointer to memory of the application's (a forged handle) is never a token (its top bits
//! are not a kind) and is refused by its value alone. A refusal notes why for the call's log
//! line ([`crate::check`]): NULL, another kind (a client given to a server call), or not
//! live (destroyed, or forged).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// A map keyed by numbers this library makes itself (a connection's id, a buffer's index in
/// its inventory): no one chooses them to collide, so one multiplication hashes a key
/// (SipHash's rounds cost a C call's look-up more than the call's own work).
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The hasher of an [`IdMap`] (integer keys).
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(self.0.rotate_left(8) ^ b as u64);
        }
    }

    fn write_u32(&mut self, k: u32) {
        self.write_u64(k as u64);
    }

    fn write_u64(&mut self, k: u64) {
        // Fibonacci hashing: the high bits (which the table uses) mix every key bit.
        self.0 = (self.0 ^ k).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The kinds of handle, each with its number in the token and its C name.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    ArgpParam = 1,
    BufInventory,
    Buf,
    CcServer,
    CcConnection,
    Ctx,
    Devinfo,
    Dev,
    DevinfoRep,
    DevRep,
    CcConsumer,
    CcProducer,
    CommChannelEp,
    CommChannelAddr,
    Mmap,
    Pe,
    Task,
    CcClient,
    Dma,
    // doca_clock.h, doca_mmap_advise.h
    Clock,
    MmapAdvise,
    // doca_sha
    Sha,
    // doca_graph
    Graph,
    GraphNode,
    GraphInstance,
    // doca_sync_event
    SyncEvent,
    // doca_aes_gcm
    AesGcm,
    AesGcmKey,
    // doca_compress
    Compress,
    // doca_erasure_coding
    Ec,
    EcMatrix,
    // doca_rdma
    Rdma,
    RdmaConn,
    RdmaAddr,
    SyncEventRemoteNet,
    RdmaSrq,
}

/// The C type of each kind, by number: one entry per kind (the length is the last kind's
/// number + 1: a kind added after `RdmaSrq` moves it there, and a missing name
/// then fails to compile).
const NAMES: [&str; Kind::RdmaSrq as usize + 1] = [
    "",
    "struct doca_argp_param",
    "struct doca_buf_inventory",
    "struct doca_buf",
    "struct doca_cc_server",
    "struct doca_cc_connection",
    "struct doca_ctx",
    "struct doca_devinfo",
    "struct doca_dev",
    "struct doca_devinfo_rep",
    "struct doca_dev_rep",
    "struct doca_cc_consumer",
    "struct doca_cc_producer",
    "struct doca_comm_channel_ep_t",
    "struct doca_comm_channel_addr_t",
    "struct doca_mmap",
    "struct doca_pe",
    "struct doca_task",
    "struct doca_cc_client",
    "struct doca_dma",
    "struct doca_clock",
    "struct doca_mmap_advise",
    // doca_sha
    "struct doca_sha",
    // doca_graph
    "struct doca_graph",
    "struct doca_graph_node",
    "struct doca_graph_instance",
    // doca_sync_event
    "struct doca_sync_event",
    // doca_aes_gcm
    "struct doca_aes_gcm",
    "struct doca_aes_gcm_key",
    // doca_compress
    "struct doca_compress",
    // doca_erasure_coding
    "struct doca_ec",
    "struct doca_ec_matrix",
    // doca_rdma
    "struct doca_rdma",
    "struct doca_rdma_connection",
    "struct doca_rdma_addr",
    "struct doca_sync_event_remote_net",
    "struct doca_rdma_srq",
];

impl Kind {
    /// Its C type (`struct doca_mmap`).
    pub(crate) fn name(self) -> &'static str {
        NAMES[self as usize]
    }
}

/// The live objects of one kind.
///
/// Looking a handle up takes no lock (every C call looks up one to three): the table is a
/// fixed array of chunk pointers, each chunk made once, when first needed, and never freed
/// nor moved (the tables are statics: they live as long as the process); an entry is its
/// generation and the object's address, each an atomic. Adding and removing take the
/// table's lock. A look-up reads the address (`Acquire`), then the generation: a removal
/// bumps the generation before it clears the address, and a later add stores the new
/// address after both (under the lock), so a look-up that sees a new object's address also
/// sees the new generation, and a stale token is refused. (A token used while another
/// thread removes it is the C caller's breach of contract, as it always was: the object may
/// be freed under the call.)
pub(crate) struct Handles {
    kind: u8,
    chunks: [AtomicPtr<Chunk>; CHUNKS],
    alloc: Mutex<Alloc>,
}

/// A handle taken out of use with its slot and object kept ([`Handles::park`]); given back
/// by [`Handles::unpark`] or [`Handles::discard`] (dropped otherwise, its slot and object
/// are never reused).
#[must_use]
pub(crate) struct Parked {
    slot: usize,
    addr: usize,
}

impl Parked {
    /// The parked object (kept while parked, and once handed out again by
    /// [`Handles::unpark`]); `T` is the table's type.
    pub(crate) fn obj<T>(&self) -> NonNull<T> {
        NonNull::new(self.addr as *mut T).expect("a parked handle has its object")
    }
}

/// Slots of one chunk.
const CHUNK_BITS: u32 = 10;
const CHUNK: usize = 1 << CHUNK_BITS;
/// Chunks of one table: every slot a token can name.
const CHUNKS: usize = 1 << (SLOT_BITS - CHUNK_BITS);

struct Chunk([Entry; CHUNK]);

/// One slot: its generation (a token names the slot at the generation it was handed out
/// at) and the object's address (0 when free).
struct Entry {
    gen: AtomicU32,
    addr: AtomicUsize,
}

/// The table's bookkeeping for adds and removes.
struct Alloc {
    /// Slots ever used.
    len: usize,
    free: Vec<u32>,
}

const GEN_BITS: u32 = 32;
const SLOT_BITS: u32 = 22;
const KIND_BITS: u32 = 6;
const GEN_MASK: u64 = (1 << GEN_BITS) - 1;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;

impl Handles {
    /// The handles of `kind` (one table per kind).
    pub(crate) const fn new(kind: Kind) -> Handles {
        assert!((kind as u32) < (1 << KIND_BITS), "handle kinds fit in the token");
        Handles {
            kind: kind as u8,
            chunks: [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS],
            alloc: Mutex::new(Alloc { len: 0, free: Vec::new() }),
        }
    }

    /// Why `p` is not a live handle of this kind, for the log.
    fn refusal(&self, p: usize) -> String {
        let want = NAMES[self.kind as usize];
        let kind = (p as u64 >> (GEN_BITS + SLOT_BITS + 4)) as usize;
        if p == 0 {
            format!("NULL {want} handle")
        } else if p & 0xf != 0 || kind == 0 || kind >= NAMES.len() {
            format!("{p:#x} is not a {want} handle of this library (forged)")
        } else if kind != self.kind as usize {
            format!("{p:#x} is a {} handle where a {want} is expected", NAMES[kind])
        } else {
            format!("{p:#x} is not a live {want} handle (destroyed, or forged)")
        }
    }

    fn token(&self, slot: usize, gen: u32) -> usize {
        let t = (self.kind as u64) << (GEN_BITS + SLOT_BITS + 4)
            | (gen as u64 & GEN_MASK) << (SLOT_BITS + 4)
            | ((slot as u64 + 1) & SLOT_MASK) << 4;
        t as usize
    }

    /// (slot, generation) of a token of this kind.
    #[inline]
    fn decode(&self, p: usize) -> Option<(usize, u32)> {
        let t = p as u64;
        if t & 0xf != 0 || t >> (GEN_BITS + SLOT_BITS + 4) != self.kind as u64 {
            return None;
        }
        let slot = ((t >> 4) & SLOT_MASK).checked_sub(1)?;
        Some((slot as usize, ((t >> (SLOT_BITS + 4)) & GEN_MASK) as u32))
    }

    /// The entry of `slot`, if its chunk was made.
    #[inline]
    fn entry(&self, slot: usize) -> Option<&Entry> {
        let chunk = self.chunks.get(slot >> CHUNK_BITS)?.load(Ordering::Acquire);
        // A published chunk is never freed nor moved (see the type's description); the
        // Acquire load pairs with the Release store that published it, made whole.
        // SAFETY: see above.
        let chunk = unsafe { chunk.as_ref() }?;
        Some(&chunk.0[slot & (CHUNK - 1)])
    }

    /// The entry of `slot`, its chunk made when it is the first of it (under the lock).
    fn entry_made(&self, slot: usize, _alloc: &Alloc) -> &Entry {
        let cell = &self.chunks[slot >> CHUNK_BITS];
        let mut chunk = cell.load(Ordering::Acquire);
        if chunk.is_null() {
            let fresh = Box::new(Chunk(
                [const { Entry { gen: AtomicU32::new(0), addr: AtomicUsize::new(0) } }; CHUNK],
            ));
            chunk = Box::into_raw(fresh);
            // Release: the chunk is whole before a look-up finds it.
            cell.store(chunk, Ordering::Release);
        }
        // Made above or before (under the same lock), never freed.
        // SAFETY: see above.
        unsafe { &(*chunk).0[slot & (CHUNK - 1)] }
    }

    /// Hands `value` out as a handle. At most 2^22 − 1 objects of a kind live at once (more
    /// is a panic, which the C boundary turns into `DOCA_ERROR_UNEXPECTED`).
    pub(crate) fn add<T>(&self, value: T) -> *mut T {
        self.add_at(value).0
    }

    /// [`Handles::add`], and where the value lives (until its handle is removed).
    pub(crate) fn add_at<T>(&self, value: T) -> (*mut T, NonNull<T>) {
        let obj = NonNull::from(Box::leak(Box::new(value)));
        let mut a = self.alloc.lock();
        let slot = match a.free.pop() {
            Some(slot) => slot as usize,
            None => {
                assert!((a.len as u64) < SLOT_MASK, "too many live handles of one kind");
                a.len += 1;
                a.len - 1
            }
        };
        let e = self.entry_made(slot, &a);
        let gen = e.gen.load(Ordering::Relaxed);
        // Release: the object is whole before a look-up finds its address.
        e.addr.store(obj.as_ptr() as usize, Ordering::Release);
        (self.token(slot, gen) as *mut T, obj)
    }

    /// The address behind a live token.
    #[inline]
    fn addr(&self, p: usize) -> Option<usize> {
        let (slot, gen) = self.decode(p)?;
        let e = self.entry(slot)?;
        let addr = e.addr.load(Ordering::Acquire);
        (addr != 0 && e.gen.load(Ordering::Acquire) == gen).then_some(addr)
    }

    /// The value behind a handle C gave: `None` (and the reason noted for the call's log
    /// line) unless it is a live handle of this kind.
    ///
    /// # Safety
    /// Handles of this kind must only ever come from [`Handles::add`] with the same `T`; the
    /// value must not be removed while the reference is used (the C caller's contract: no
    /// use of a handle concurrently with its destruction).
    #[inline]
    pub(crate) unsafe fn get<'a, T>(&self, p: *const T) -> Option<&'a T> {
        // SAFETY: the same contract.
        let v = unsafe { self.peek(p) };
        if v.is_none() {
            crate::check::note(|| self.refusal(p as usize));
        }
        v
    }

    /// [`Handles::get`] for a handle the library holds itself (no log when it is gone).
    ///
    /// # Safety
    /// As [`Handles::get`].
    #[inline]
    pub(crate) unsafe fn peek<'a, T>(&self, p: *const T) -> Option<&'a T> {
        // a live token's address came from Box::into_raw of a T (the caller's contract)
        // and is still allocated (the token stops being live before it is freed).
        // SAFETY: see above.
        self.addr(p as usize).map(|a| unsafe { &*(a as *const T) })
    }

    /// Makes the live handle `p` stale (its generation moves on), keeping its slot and its
    /// object for the caller: [`Handles::unpark`] hands the same object out again under a
    /// new token — no lock, no allocation (a C task's handle between its free and its
    /// slot's next allocation). `None` when `p` is not live.
    ///
    /// # Safety
    /// As [`Handles::get`]; the object is not used through `p` afterwards.
    pub(crate) unsafe fn park<T>(&self, p: *mut T) -> Option<Parked> {
        let (slot, gen) = self.decode(p as usize)?;
        let e = self.entry(slot)?;
        let addr = e.addr.load(Ordering::Acquire);
        if addr == 0 || e.gen.load(Ordering::Relaxed) != gen {
            return None;
        }
        // No lock: no other token names the slot now, and it is in no free list (a remove
        // or an add elsewhere cannot touch it).
        e.gen.store(gen.wrapping_add(1), Ordering::Release);
        Some(Parked { slot, addr })
    }

    /// The object of a handle that was live under token `p` and was parked since (kept for
    /// its slot's next use, or handed out again under a newer token: the caller tells the
    /// two apart by the object's own state). `None` otherwise.
    ///
    /// # Safety
    /// As [`Handles::get`].
    pub(crate) unsafe fn peek_parked<'a, T>(&self, p: *const T) -> Option<&'a T> {
        let (slot, gen) = self.decode(p as usize)?;
        let e = self.entry(slot)?;
        let addr = e.addr.load(Ordering::Acquire);
        if addr == 0 || e.gen.load(Ordering::Acquire) != gen.wrapping_add(1) {
            return None;
        }
        // a parked object stays allocated until its slot is discarded or removed (the
        // caller's contract: not concurrently), and came from Box::into_raw of a T.
        // SAFETY: see above.
        Some(unsafe { &*(addr as *const T) })
    }

    /// The object of a parked handle, live again under a new token.
    pub(crate) fn unpark<T>(&self, parked: Parked) -> *mut T {
        let gen = self.entry(parked.slot).map_or(0, |e| e.gen.load(Ordering::Relaxed));
        self.token(parked.slot, gen) as *mut T
    }

    /// Frees a parked handle's object and slot.
    ///
    /// # Safety
    /// The parked handle came from this table with objects of type `T`.
    pub(crate) unsafe fn discard<T>(&self, parked: Parked) {
        let addr = {
            let mut a = self.alloc.lock();
            let Some(e) = self.entry(parked.slot) else { return };
            // Its generation moved on when it was parked (no token names it), and moves on
            // once more: the slot's next object is not this parked one (`peek_parked`).
            e.gen.store(e.gen.load(Ordering::Relaxed).wrapping_add(1), Ordering::Release);
            let addr = e.addr.swap(0, Ordering::AcqRel);
            a.free.push(parked.slot as u32);
            addr
        };
        if addr != 0 {
            // the address came from Box::into_raw of a T (the caller's contract), kept
            // while parked; freed once, here.
            // SAFETY: see above.
            drop(unsafe { Box::from_raw(addr as *mut T) });
        }
    }

    /// Takes a live handle back (it is no longer live; its slot's next handle has a new
    /// generation).
    ///
    /// # Safety
    /// As [`Handles::get`].
    pub(crate) unsafe fn remove<T>(&self, p: *mut T) -> Option<Box<T>> {
        let refused = || {
            crate::check::note(|| self.refusal(p as usize));
            None
        };
        let Some((slot, gen)) = self.decode(p as usize) else { return refused() };
        let addr = {
            let mut a = self.alloc.lock();
            let Some(e) = self.entry(slot) else { return refused() };
            if e.gen.load(Ordering::Relaxed) != gen || e.addr.load(Ordering::Relaxed) == 0 {
                return refused();
            }
            // The generation first: a look-up that still finds the address then finds the
            // new generation and refuses the token (see the type's description). It moves on
            // by two: the slot's next object never has the generation a parked handle of
            // this token would have (`peek_parked` must not find it).
            e.gen.store(gen.wrapping_add(2), Ordering::Release);
            let addr = e.addr.swap(0, Ordering::AcqRel);
            a.free.push(slot as u32);
            addr
        };
        // the address came from Box::into_raw of a T and was live until now; it is freed
        // once, here (its token stopped being live above, under the lock).
        // SAFETY: see above.
        Some(unsafe { Box::from_raw(addr as *mut T) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_forged_and_wrong_kind_tokens_are_refused() {
        let a = Handles::new(Kind::ArgpParam);
        let b = Handles::new(Kind::BufInventory);
        let h = a.add(7u32);
        // SAFETY: only u32 values are added to `a`.
        unsafe {
            assert_eq!(a.get(h).copied(), Some(7));
            assert!(b.get(h as *const u32).is_none(), "another kind's table refuses it");
            assert!(a.get(std::ptr::null::<u32>()).is_none());
            assert!(a.get((h as usize + 16) as *const u32).is_none(), "a forged slot");
            assert_eq!(a.remove(h).map(|b| *b), Some(7));
            assert!(a.get(h).is_none(), "freed");
            let again = a.add(8u32);
            assert_ne!(again, h, "the slot is reused under a new generation");
            assert!(a.get(h).is_none(), "the old handle stays stale");
            assert!(a.remove(h).is_none());
            assert_eq!(a.get(again).copied(), Some(8));
            drop(a.remove(again));
        }
    }

    #[test]
    fn a_parked_handle_is_dead_and_its_object_comes_back_under_a_new_token() {
        let a = Handles::new(Kind::ArgpParam);
        let h = a.add(7u32);
        // SAFETY: only u32 values are added to `a`.
        unsafe {
            let parked = a.park(h).expect("live");
            assert!(a.get(h).is_none(), "parked: the token is dead at once");
            assert_eq!(a.peek_parked(h).copied(), Some(7), "its object is kept");
            assert!(a.park(h).is_none() && a.remove(h).is_none(), "nor parked nor removed twice");
            let other = a.add(9u32);
            let again = a.unpark::<u32>(parked);
            assert!(again != h && again != other);
            assert_eq!(a.get(again).copied(), Some(7), "the same object, live again");
            assert!(a.get(h).is_none(), "the old token stays dead");
            assert!(a.peek_parked(h).is_some(), "(the caller tells a reused object by its state)");
            let parked = a.park(again).expect("live");
            a.discard::<u32>(parked);
            assert!(a.get(again).is_none() && a.peek_parked(again).is_none(), "freed");
            let next = a.add(10u32);
            assert!(a.peek_parked(again).is_none(), "a discarded slot's next object is not parked");
            assert_eq!(a.remove(other).map(|b| *b), Some(9));
            let after = a.add(11u32);
            assert!(a.peek_parked(other).is_none(), "nor a removed slot's next object");
            drop((a.remove(next), a.remove(after)));
        }
    }
}
