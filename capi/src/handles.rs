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

use parking_lot::RwLock;

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
pub(crate) struct Handles {
    kind: u8,
    slots: RwLock<Slots>,
}

struct Slots {
    /// (generation, the object's address) per slot; `None` when free.
    entries: Vec<(u32, Option<usize>)>,
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
        Handles { kind: kind as u8, slots: RwLock::new(Slots { entries: Vec::new(), free: Vec::new() }) }
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

    fn token(&self, slot: u32, gen: u32) -> usize {
        let t = (self.kind as u64) << (GEN_BITS + SLOT_BITS + 4)
            | (gen as u64 & GEN_MASK) << (SLOT_BITS + 4)
            | ((slot as u64 + 1) & SLOT_MASK) << 4;
        t as usize
    }

    /// (slot, generation) of a token of this kind.
    fn decode(&self, p: usize) -> Option<(usize, u32)> {
        let t = p as u64;
        if t & 0xf != 0 || t >> (GEN_BITS + SLOT_BITS + 4) != self.kind as u64 {
            return None;
        }
        let slot = ((t >> 4) & SLOT_MASK).checked_sub(1)?;
        Some((slot as usize, ((t >> (SLOT_BITS + 4)) & GEN_MASK) as u32))
    }

    /// Hands `value` out as a handle. At most 2^22 − 1 objects of a kind live at once (more
    /// is a panic, which the C boundary turns into `DOCA_ERROR_UNEXPECTED`).
    pub(crate) fn add<T>(&self, value: T) -> *mut T {
        let mut s = self.slots.write();
        let slot = match s.free.pop() {
            Some(slot) => slot,
            None => {
                assert!((s.entries.len() as u64) < SLOT_MASK, "too many live handles of one kind");
                s.entries.push((0, None));
                (s.entries.len() - 1) as u32
            }
        };
        let addr = Box::into_raw(Box::new(value)) as usize;
        let e = &mut s.entries[slot as usize];
        e.1 = Some(addr);
        self.token(slot, e.0) as *mut T
    }

    /// The address behind a live token.
    fn addr(&self, p: usize) -> Option<usize> {
        let (slot, gen) = self.decode(p)?;
        match self.slots.read().entries.get(slot) {
            Some(&(g, Some(addr))) if g == gen => Some(addr),
            _ => None,
        }
    }

    /// The value behind a handle C gave: `None` (and the reason noted for the call's log
    /// line) unless it is a live handle of this kind.
    ///
    /// # Safety
    /// Handles of this kind must only ever come from [`Handles::add`] with the same `T`; the
    /// value must not be removed while the reference is used (the C caller's contract: no
    /// use of a handle concurrently with its destruction).
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
    pub(crate) unsafe fn peek<'a, T>(&self, p: *const T) -> Option<&'a T> {
        // a live token's address came from Box::into_raw of a T (the caller's contract)
        // and is still allocated (the token stops being live before it is freed).
        // SAFETY: see above.
        self.addr(p as usize).map(|a| unsafe { &*(a as *const T) })
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
            let mut s = self.slots.write();
            let Some(e) = s.entries.get_mut(slot) else { return refused() };
            if e.0 != gen || e.1.is_none() {
                return refused();
            }
            e.0 = e.0.wrapping_add(1);
            let addr = e.1.take()?;
            s.free.push(slot as u32);
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
}
