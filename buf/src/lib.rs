//! DOCA buffers (`doca_buf`) and buffer inventories (`doca_buf_inventory`).
//!
//! | DOCA                                   | here                          |
//! |----------------------------------------|-------------------------------|
//! | `struct doca_buf_inventory`            | [`Inventory`]                 |
//! | `struct doca_buf`                      | [`Buf`]                       |
//! | `doca_buf_inventory_buf_get_by_args` and its two inline helpers | [`Inventory::buf_get_by_args`], [`Inventory::buf_get_by_addr`], [`Inventory::buf_get_by_data`] |
//!
//! **Positions.** Functions named after C take and give addresses, as C does: addresses
//! inside the map's memory range (`doca_mmap_get_memrange`), which for a map created from
//! an export are the *exporter's* addresses — a C peer sends its own buffer addresses and
//! `buf_get_by_addr(imported_map, peer_addr, len)` finds them, as in DOCA's dma_copy.
//! Every one has an offset twin whose name says so ([`Inventory::buf_get_at`],
//! [`Inventory::buf_get_data_at`], [`Inventory::buf_get_by_offsets`], [`Buf::head_offset`],
//! [`Buf::data_offset`], [`Buf::set_data_offset`]): offsets from the start of the map. An
//! address parameter never means an offset. The layout rule is DOCA's:
//! `head ≤ data ≤ data + data_len ≤ head + len`, all inside the map.
//!
//! **Handles and reference counts.** A [`Buf`] is a handle, like the C pointer: cloning it
//! copies the handle, not the buffer. The buffer's reference count is DOCA's, explicit:
//! it starts at 1, [`Buf::inc_refcount`] and [`Buf::dec_refcount`] move it, and at 0 the
//! element (with its whole list, for a list head) returns to the inventory. A handle to a
//! returned element is stale: every call on it is `BAD_STATE`, it never reaches another
//! buffer (unless, misusing a handle on one thread while another thread returns it and gets
//! the same descriptor again, a change lands on the new buffer: still inside its map).
//!
//! **Threads.** Inventories and buffers are `Send + Sync`, and a buffer is read and changed
//! without a lock (only getting a buffer, returning one and changing lists take the
//! inventory's lock). As in C, `doca_buf` is not thread-safe: two threads changing one
//! buffer at once get no order between their changes (reference counts excepted, which
//! stay exact) — but never an access outside the buffer's map.
//!
//! **Bytes.** [`Buf::data_bytes`] and [`Buf::data_bytes_mut`] borrow the data segment
//! through guards that the map tracks (many readers or one writer per byte in this
//! process, `IN_USE` otherwise). Memory shared with another process can still change under a
//! guard; as on the hardware, do not touch a buffer while a task or the peer owns it.

#![forbid(unsafe_code)]

pub mod list;

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};

use doca_core::{bail, fault, Data, Error, Refused, Result};
use doca_mmap::{BufCount, Bytes, BytesMut, MapAccess, MapPin, Mmap};
use parking_lot::Mutex;
use smallvec::SmallVec;

/// Bits of [`Elem::meta`]: the generation (high 32 bits), whether the element is out of
/// the inventory, whether it heads its list, and its reference count (low 16 bits).
const IN_USE: u64 = 1 << 16;
const HEAD: u64 = 1 << 17;
const RC_MASK: u64 = 0xffff;
const NO_NEXT: u32 = u32::MAX;

fn gen_of(meta: u64) -> u32 {
    (meta >> 32) as u32
}

/// One buffer descriptor. Its fields are atomics so that a buffer is read and changed
/// without a lock (a lock round trip per call was most of a fast-path message's cost).
/// Changes to one buffer from two threads at once are not ordered, as in C (`doca_buf` is
/// not thread-safe); they can never reach memory outside the buffer's map: every byte
/// access is checked against the map again.
struct Elem {
    meta: AtomicU64,
    head: AtomicUsize,
    len: AtomicUsize,
    data: AtomicUsize,
    data_len: AtomicUsize,
    /// The next element of the list, or [`NO_NEXT`]. Changed under the inventory's lock.
    next: AtomicU32,
}

impl Elem {
    fn free() -> Elem {
        Elem {
            meta: AtomicU64::new(HEAD),
            head: AtomicUsize::new(0),
            len: AtomicUsize::new(0),
            data: AtomicUsize::new(0),
            data_len: AtomicUsize::new(0),
            next: AtomicU32::new(NO_NEXT),
        }
    }

    #[inline]
    fn next(&self) -> Option<u32> {
        Some(self.next.load(Ordering::Relaxed)).filter(|&n| n != NO_NEXT)
    }

    #[inline]
    fn is_head(&self) -> bool {
        self.meta.load(Ordering::Relaxed) & HEAD != 0
    }

    #[inline]
    fn shape(&self) -> Shape {
        self.shape_at(self.meta.load(Ordering::Relaxed))
    }

    /// [`Elem::shape`] with the element's `meta` as the caller just read it (no second load).
    #[inline]
    fn shape_at(&self, meta: u64) -> Shape {
        Shape {
            head: self.head.load(Ordering::Relaxed),
            len: self.len.load(Ordering::Relaxed),
            data: self.data.load(Ordering::Relaxed),
            data_len: self.data_len.load(Ordering::Relaxed),
            in_list: meta & HEAD == 0 || self.next().is_some(),
        }
    }
}

/// What the inventory's lock guards: its state, the free elements, the map each element
/// in use points into, and per map the shared part of its buffers' handles, what keeps the
/// map alive while buffers are out and their count.
struct State {
    started: bool,
    user_data: Data,
    free: Vec<u32>,
    /// The map (its id, the key of its entry in `handles`) of each element in use.
    maps: Vec<Option<usize>>,
    handles: Vec<HandleEntry>,
    /// The [`Inventory`] handle lives: only then are handles kept (see [`HandleEntry`]).
    open: bool,
}

/// What every handle to a buffer of one inventory on one map shares — the inventory and the
/// map's bytes — so that cloning or dropping a [`Buf`] moves one reference count, not two.
struct Handle {
    inv: Arc<InvInner>,
    map: MapAccess,
}

/// The inventory's [`Handle`] for one map. It is held (`strong`) while some element is out on
/// that map and the [`Inventory`] handle lives, so that a buffer after buffer on one map makes
/// none; otherwise only `weak` is kept, which keeps no map alive (a map's memory goes, and its
/// free callback runs, when the map and the buffers' handles do, not when the inventory does).
/// The held handle refers back to the inventory: dropping the [`Inventory`] handle lets go of
/// every held one, so nothing is kept in a cycle.
///
/// While elements are out on the map the entry holds the map — through the held handle, or,
/// once the [`Inventory`] handle is gone, through `access` — so that its memory lives and a
/// list walk reaches any element's map ([`HandleEntry::map_access`]); and it counts them in
/// the map's `num_bufs` (`count`, set under the lock: no atomic operation on the map per
/// buffer). Taking the map's first buffer or returning its last thus moves the held handle
/// and the count, not a handle on the map besides. The pin keeps the map's id from going to
/// another map while the entry exists.
struct HandleEntry {
    map: usize,
    _pin: MapPin,
    weak: Weak<Handle>,
    strong: Option<Arc<Handle>>,
    /// Elements out on the map (set only under the inventory's lock).
    count: Arc<BufCount>,
    /// The map while elements are out on it and no handle is held (the [`Inventory`] handle
    /// went).
    access: Option<MapAccess>,
}

impl HandleEntry {
    /// The map, while elements are out on it.
    fn map_access(&self) -> Option<MapAccess> {
        self.strong.as_ref().map(|h| h.map.clone()).or_else(|| self.access.clone())
    }
}

/// Where a buffer's map comes from: the application's `Mmap` (its access cloned only when
/// an entry needs one) or an access in hand.
enum MapSrc<'a> {
    Map(&'a Mmap),
    Access(&'a MapAccess),
}

impl MapSrc<'_> {
    fn id(&self) -> usize {
        match self {
            MapSrc::Map(m) => m.id(),
            MapSrc::Access(a) => a.id(),
        }
    }

    fn access(&self) -> Result<MapAccess> {
        match self {
            MapSrc::Map(m) => m.access(),
            MapSrc::Access(a) => Ok((*a).clone()),
        }
    }
}

/// What a release lets go of, dropped once the inventory's lock is released (dropping the
/// last handle of a map runs its free callback, which may call back into the inventory).
type Released = SmallVec<[(Option<MapAccess>, Option<Arc<Handle>>); 1]>;

struct InvInner {
    elems: Box<[Elem]>,
    state: Mutex<State>,
}

impl InvInner {
    /// Gives free element `idx` a buffer over `map`: refcount 1, alone in its list (or
    /// `head` false: a list element), and returns a handle to it. Called under the
    /// inventory's lock; on error nothing changed.
    fn occupy(
        inv: &Arc<InvInner>,
        st: &mut State,
        idx: u32,
        map: &MapSrc<'_>,
        s: Shape,
        is_head: bool,
    ) -> Result<Buf> {
        let h = InvInner::handle(inv, st, map, 1)?;
        let e = &inv.elems[idx as usize];
        e.head.store(s.head, Ordering::Relaxed);
        e.len.store(s.len, Ordering::Relaxed);
        e.data.store(s.data, Ordering::Relaxed);
        e.data_len.store(s.data_len, Ordering::Relaxed);
        e.next.store(NO_NEXT, Ordering::Relaxed);
        st.maps[idx as usize] = Some(map.id());
        let gen = gen_of(e.meta.load(Ordering::Relaxed));
        let flags = if is_head { IN_USE | HEAD | 1 } else { IN_USE };
        e.meta.store(((gen as u64) << 32) | flags, Ordering::Release);
        Ok(Buf { h, idx, gen })
    }

    /// The shared handle part for buffers on `map` (one allocation per map, not per buffer),
    /// counting `out` more elements out on it. Under the inventory's lock; on error nothing
    /// changed.
    fn handle(inv: &Arc<InvInner>, st: &mut State, map: &MapSrc<'_>, out: u32) -> Result<Arc<Handle>> {
        let id = map.id();
        // An access made for a new entry serves the rest of the call too.
        let mut fresh = None;
        let at = match st.handles.iter().position(|e| e.map == id) {
            Some(at) => at,
            None => {
                let access = map.access()?;
                // Entries with nothing out and no handle left go (their maps may be gone).
                st.handles.retain(|e| e.count.get() > 0 || e.weak.strong_count() > 0);
                st.handles.push(HandleEntry {
                    map: id,
                    _pin: access.pin(),
                    weak: Weak::new(),
                    strong: None,
                    count: access.buf_count(),
                    access: None,
                });
                fresh = Some(access);
                st.handles.len() - 1
            }
        };
        let open = st.open;
        let e = &mut st.handles[at];
        let now_out = e.count.get() + out;
        let h = match e.strong.clone().or_else(|| e.weak.upgrade()) {
            Some(h) => h,
            None => {
                let map = match (&e.access, fresh) {
                    (Some(a), _) => a.clone(),
                    (None, Some(a)) => a,
                    (None, None) => map.access()?,
                };
                let h = Arc::new(Handle { inv: inv.clone(), map });
                e.weak = Arc::downgrade(&h);
                h
            }
        };
        // Elements out: the map is held, by the handle while the Inventory handle lives.
        if now_out > 0 {
            if open {
                if e.strong.is_none() {
                    e.strong = Some(h.clone());
                }
            } else if e.access.is_none() {
                e.access = Some(h.map.clone());
            }
        }
        e.count.set(now_out);
        Ok(h)
    }

    /// Returns element `idx` to the free elements (under the inventory's lock): a new
    /// generation makes every handle to it stale. What it lets go of goes to `dead`.
    fn release(&self, s: &mut State, idx: u32, dead: &mut Released) {
        let e = &self.elems[idx as usize];
        let gen = gen_of(e.meta.load(Ordering::Relaxed)).wrapping_add(1);
        e.meta.store(((gen as u64) << 32) | HEAD, Ordering::Release);
        e.next.store(NO_NEXT, Ordering::Relaxed);
        let (mut map, mut handle) = (None, None);
        if let Some(id) = s.maps[idx as usize].take() {
            if let Some(entry) = s.handles.iter_mut().find(|e| e.map == id) {
                let out = entry.count.get().saturating_sub(1);
                entry.count.set(out);
                if out == 0 {
                    handle = entry.strong.take();
                    map = entry.access.take();
                }
            }
        }
        dead.push((map, handle));
        s.free.push(idx);
    }
}

/// `struct doca_buf_inventory`: a fixed set of buffer descriptors. `Send + Sync`.
///
/// ```
/// use doca_buf::Inventory;
/// use doca_mmap::Mmap;
///
/// let map = Mmap::create()?;
/// map.set_memrange(vec![0u8; 4096])?;
/// map.start()?;
/// let inv = Inventory::create(4)?;
/// inv.start()?;
/// let (start, _) = map.memrange()?; // addresses, as in C
/// let buf = inv.buf_get_by_addr(&map, start, 64)?; // 64 bytes of room, no data yet
/// buf.append(b"hello")?;
/// assert_eq!(buf.data_bytes()?.to_vec(), b"hello");
/// assert_eq!(inv.num_free_elements(), 3);
/// buf.dec_refcount()?; // back to the inventory
/// # Ok::<(), doca_core::Error>(())
/// ```
pub struct Inventory {
    inner: Arc<InvInner>,
}

impl fmt::Debug for Inventory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Inventory({} of {} free)", self.num_free_elements(), self.num_elements())
    }
}

impl Inventory {
    /// `doca_buf_inventory_create`: `num_elements` buffers (`INVALID_VALUE` for 0;
    /// `NO_MEMORY` when the system cannot hold them).
    pub fn create(num_elements: u32) -> Result<Inventory> {
        doca_core::fault::check_env()?;
        if num_elements == 0 {
            bail!(Error::InvalidValue, "buf inventory of 0 elements");
        }
        let n = num_elements as usize;
        let (mut elems, mut free) = (Vec::new(), Vec::new());
        if elems.try_reserve_exact(n).is_err() || free.try_reserve_exact(n).is_err() {
            bail!(Error::NoMemory, "buf inventory of {num_elements} elements: not enough memory");
        }
        elems.extend((0..n).map(|_| Elem::free()));
        let mut maps = Vec::new();
        if maps.try_reserve_exact(n).is_err() {
            bail!(Error::NoMemory, "buf inventory of {num_elements} elements: not enough memory");
        }
        maps.resize_with(n, || None);
        free.extend((0..num_elements).rev());
        Ok(Inventory {
            inner: Arc::new(InvInner {
                elems: elems.into_boxed_slice(),
                state: Mutex::new(State {
                    started: false,
                    user_data: Data::NONE,
                    free,
                    maps,
                    handles: Vec::new(),
                    open: true,
                }),
            }),
        })
    }

    /// `doca_buf_inventory_start`.
    pub fn start(&self) -> Result<()> {
        let mut s = self.inner.state.lock();
        if s.started {
            bail!(Error::BadState, "buf inventory already started");
        }
        s.started = true;
        Ok(())
    }

    /// `doca_buf_inventory_stop`: no new buffer afterwards (`BAD_STATE`); buffers out stay
    /// valid until freed.
    pub fn stop(&self) -> Result<()> {
        let mut s = self.inner.state.lock();
        if !s.started {
            bail!(Error::BadState, "buf inventory not started");
        }
        s.started = false;
        Ok(())
    }

    /// `doca_buf_inventory_destroy`: `IN_USE` (and the inventory back) while buffers are out.
    pub fn destroy(self) -> Result<(), Refused<Inventory>> {
        let out = self.num_elements() - self.num_free_elements();
        if out > 0 {
            let e = doca_core::fail!(Error::InUse, "buf inventory destroy: {out} buffer(s) still out");
            return Err(Refused::new(e, self));
        }
        Ok(())
    }

    /// `doca_buf_inventory_get_num_elements`.
    pub fn num_elements(&self) -> u32 {
        self.inner.elems.len() as u32
    }

    /// `doca_buf_inventory_get_num_free_elements`.
    pub fn num_free_elements(&self) -> u32 {
        self.inner.state.lock().free.len() as u32
    }

    /// `doca_buf_inventory_set_user_data`, in any state. (The 2.5 header lists `BAD_STATE`
    /// for an un-started inventory, but applications set it before `start`; we accept it.)
    pub fn set_user_data(&self, data: Data) {
        self.inner.state.lock().user_data = data;
    }

    /// `doca_buf_inventory_get_user_data`.
    pub fn user_data(&self) -> Data {
        self.inner.state.lock().user_data
    }

    /// `doca_buf_inventory_buf_get_by_args`: a buffer over the addresses `addr..addr+len`
    /// of `mmap` with data `data..data+data_len` (addresses as the map's memrange counts
    /// them). The data must lie in the buffer and the buffer in the map (`INVALID_VALUE`);
    /// inventory or map not started → `BAD_STATE`; no free element → `NO_MEMORY`.
    pub fn buf_get_by_args(
        &self,
        mmap: &Mmap,
        addr: usize,
        len: usize,
        data: usize,
        data_len: usize,
    ) -> Result<Buf> {
        let (head, data) = Inventory::offsets(mmap, addr, len, data, data_len)?;
        self.buf_get_by_offsets(mmap, head, len, data, data_len)
    }

    /// `doca_buf_inventory_buf_get_by_addr`: the addresses `addr..addr+len`, empty data at
    /// `addr`.
    pub fn buf_get_by_addr(&self, mmap: &Mmap, addr: usize, len: usize) -> Result<Buf> {
        self.buf_get_by_args(mmap, addr, len, addr, 0)
    }

    /// `doca_buf_inventory_buf_get_by_data`: head and data both the addresses
    /// `data..data+data_len`.
    pub fn buf_get_by_data(&self, mmap: &Mmap, data: usize, data_len: usize) -> Result<Buf> {
        self.buf_get_by_args(mmap, data, data_len, data, data_len)
    }

    /// The offsets in `mmap` of the head and data addresses given (`INVALID_VALUE` outside).
    fn offsets(mmap: &Mmap, addr: usize, len: usize, data: usize, data_len: usize) -> Result<(usize, usize)> {
        Ok((mmap.offset_of(addr, len)?, mmap.offset_of(data, data_len)?))
    }

    /// [`Inventory::buf_get_by_args`] with offsets from the start of the map: a buffer over
    /// `head..head+len` with data `data..data+data_len`.
    pub fn buf_get_by_offsets(
        &self,
        mmap: &Mmap,
        head: usize,
        len: usize,
        data: usize,
        data_len: usize,
    ) -> Result<Buf> {
        let data_end = data.checked_add(data_len);
        let head_end = head.checked_add(len);
        match (data_end, head_end) {
            (Some(de), Some(he)) if data >= head && de <= he => {}
            _ => bail!(
                Error::InvalidValue,
                "buffer data {data}+{data_len} does not lie inside its head range {head}+{len}"
            ),
        }
        let mut s = self.inner.state.lock();
        if !s.started {
            bail!(Error::BadState, "buf inventory not started");
        }
        mmap.check_buf_range(head, len)?;
        if fault::armed(fault::class::ALLOC_BUF) {
            if let Some(e) = fault::on_alloc(fault::Alloc::Buf, &"buf inventory buf_get") {
                return Err(e);
            }
        }
        let Some(idx) = s.free.pop() else {
            return Err(Error::NoMemory);
        };
        let shape = Shape { head, len, data, data_len, in_list: false };
        InvInner::occupy(&self.inner, &mut s, idx, &MapSrc::Map(mmap), shape, true)
            .inspect_err(|_| s.free.push(idx))
    }

    /// [`Inventory::buf_get_by_addr`] with an offset: `offset..offset+len` of the map,
    /// empty data at `offset`.
    pub fn buf_get_at(&self, mmap: &Mmap, offset: usize, len: usize) -> Result<Buf> {
        self.buf_get_by_offsets(mmap, offset, len, offset, 0)
    }

    /// [`Inventory::buf_get_by_data`] with an offset: head and data both
    /// `offset..offset+data_len` of the map.
    pub fn buf_get_data_at(&self, mmap: &Mmap, offset: usize, data_len: usize) -> Result<Buf> {
        self.buf_get_by_offsets(mmap, offset, data_len, offset, data_len)
    }

    /// `doca_buf_inventory_buf_dup`: a new buffer (a new list for a list head) with the
    /// same ranges as `src`, from this inventory. Stopped → `BAD_STATE`; `src` not a list
    /// head → `NOT_PERMITTED`; not enough free elements → `NO_MEMORY`.
    pub fn buf_dup(&self, src: &Buf) -> Result<Buf> {
        let mut chain: Vec<(MapAccess, Shape)> = Vec::new();
        {
            // The source's list cannot change meanwhile: lists change under its lock.
            let src_state = src.h.inv.state.lock();
            if !src.elem()?.is_head() {
                bail!(Error::NotPermitted, "buf dup: the source is not a list head");
            }
            let mut cur = Some(src.idx);
            while let Some(i) = cur {
                let e = &src.h.inv.elems[i as usize];
                let map = src_state.maps[i as usize]
                    .and_then(|id| src_state.handles.iter().find(|h| h.map == id))
                    .and_then(HandleEntry::map_access)
                    .ok_or(Error::BadState)?;
                chain.push((map, e.shape()));
                cur = e.next();
            }
        }
        let mut s = self.inner.state.lock();
        if !s.started {
            bail!(Error::BadState, "buf inventory not started");
        }
        if s.free.len() < chain.len() {
            return Err(Error::NoMemory);
        }
        if fault::armed(fault::class::ALLOC_BUF) {
            if let Some(e) = fault::on_alloc(fault::Alloc::Buf, &"buf inventory buf_dup") {
                return Err(e);
            }
        }
        let mut prev: Option<u32> = None;
        let mut first = None;
        for (map, shape) in chain {
            let idx = s.free.pop().expect("counted above");
            let buf =
                InvInner::occupy(&self.inner, &mut s, idx, &MapSrc::Access(&map), shape, prev.is_none())
                    .inspect_err(|_| s.free.push(idx))?;
            match prev {
                Some(p) => self.inner.elems[p as usize].next.store(idx, Ordering::Relaxed),
                None => first = Some(buf),
            }
            prev = Some(idx);
        }
        Ok(first.expect("a list has a head"))
    }
}

impl Drop for Inventory {
    /// Lets go of the handles the inventory holds (they refer back to it); buffers still out
    /// keep working through their own handles.
    fn drop(&mut self) {
        let held: Vec<Arc<Handle>> = {
            let mut s = self.inner.state.lock();
            s.open = false;
            let mut held = Vec::new();
            for e in s.handles.iter_mut() {
                if let Some(h) = e.strong.take() {
                    // Buffers still out keep their map through the entry from now on.
                    if e.count.get() > 0 {
                        e.access = Some(h.map.clone());
                    }
                    held.push(h);
                }
            }
            held
        };
        drop(held); // outside the lock: a map's last handle runs its free callback
    }
}

/// A buffer's position in its map (offsets), as [`Buf::shape`] reads it in one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Offset of the buffer's first byte.
    pub head: usize,
    /// The buffer's length.
    pub len: usize,
    /// Offset of the data.
    pub data: usize,
    /// The data's length.
    pub data_len: usize,
    /// Whether it is part of a list of two or more buffers.
    pub in_list: bool,
}

impl Shape {
    /// Free room after the data.
    #[inline]
    pub fn room(&self) -> usize {
        // Saturating: a shape read while another thread changes the buffer may not add up.
        (self.head.saturating_add(self.len)).saturating_sub(self.data.saturating_add(self.data_len))
    }

    /// Where the data ends.
    #[inline]
    pub fn data_end(&self) -> usize {
        self.data.saturating_add(self.data_len)
    }
}

/// `struct doca_buf`: a handle to one buffer descriptor of an inventory (see the crate docs
/// for reference counts and stale handles). `Send + Sync`.
///
/// ```
/// # use doca_buf::Inventory;
/// # use doca_mmap::Mmap;
/// # let map = Mmap::create()?;
/// # map.set_memrange(vec![7u8; 4096])?;
/// # map.start()?;
/// # let inv = Inventory::create(2)?;
/// # inv.start()?;
/// let buf = inv.buf_get_data_at(&map, 100, 10)?; // 10 bytes of data at offset 100
/// assert_eq!(buf.data_len()?, 10);
/// assert_eq!(buf.data()? - buf.head()?, 0);
/// buf.set_data(buf.data()? + 2, 4)?; // addresses, as doca_buf_set_data
/// assert_eq!(buf.data_offset()?, 102);
/// assert_eq!(buf.data_bytes()?.to_vec(), [7, 7, 7, 7]);
/// buf.dec_refcount()?;
/// # Ok::<(), doca_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Buf {
    h: Arc<Handle>,
    idx: u32,
    gen: u32,
}

impl PartialEq for Buf {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        // One shared handle means one inventory (the usual case: two handles of one buffer).
        self.idx == other.idx
            && self.gen == other.gen
            && (Arc::ptr_eq(&self.h, &other.h) || Arc::ptr_eq(&self.h.inv, &other.h.inv))
    }
}
impl Eq for Buf {}

impl fmt::Debug for Buf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.layout() {
            Ok((head, len, data, data_len)) => {
                write!(f, "Buf(#{} head {head}+{len}, data {data}+{data_len})", self.idx)
            }
            Err(_) => write!(f, "Buf(#{} stale)", self.idx),
        }
    }
}

/// The error of a handle whose buffer went back to its inventory (out of line: every
/// accessor checks for it, and the check stays a load and a compare).
#[cold]
#[inline(never)]
fn stale() -> Error {
    doca_core::fail!(Error::BadState, "stale buffer handle: the buffer went back to its inventory")
}

/// The error of a data length that would pass the buffer's end (out of line).
#[cold]
#[inline(never)]
fn no_room(room: usize, n: usize) -> Error {
    doca_core::fail!(Error::InvalidValue, "buffer has {room} free bytes after its data, {n} needed")
}

/// A buffer's data grows by `n` bytes after what it holds; beyond the buffer → `INVALID_VALUE`.
/// Always inline (a handful of loads, a compare and a store: a call cost an engine's copy
/// a prologue and an epilogue).
#[inline(always)]
fn grow_data(e: &Elem, n: usize) -> Result<()> {
    let (head, len) = (e.head.load(Ordering::Relaxed), e.len.load(Ordering::Relaxed));
    let (data, data_len) = (e.data.load(Ordering::Relaxed), e.data_len.load(Ordering::Relaxed));
    // The layout rule holds (`data + data_len <= head + len`) unless another thread changes
    // the buffer meanwhile: the room is then counted as `Shape::room` counts it.
    let room = head.saturating_add(len).saturating_sub(data.saturating_add(data_len));
    if n > room {
        return Err(no_room(room, n));
    }
    e.data_len.store(data_len + n, Ordering::Relaxed);
    Ok(())
}

/// A buffer found once ([`Buf::view`]) for an engine that reads its shape, writes into its
/// room and then grows its data: the growth checks the handle again (one load: `BAD_STATE` if
/// the buffer went back to its inventory meanwhile) without finding the buffer again.
pub struct BufView<'a> {
    e: &'a Elem,
    gen: u32,
}

impl BufView<'_> {
    /// [`Buf::increase_data_len`] on the viewed buffer (always inline: a call of its own
    /// cost an engine's copy more than its body's check).
    #[inline(always)]
    pub fn increase_data_len(&self, n: usize) -> Result<()> {
        let meta = self.e.meta.load(Ordering::Acquire);
        if meta & IN_USE == 0 || gen_of(meta) != self.gen {
            return Err(stale());
        }
        grow_data(self.e, n)
    }
}

impl Buf {
    /// The buffer's element and its `meta` word, if this handle is not stale.
    #[inline]
    fn elem_meta(&self) -> Result<(&Elem, u64)> {
        let e = &self.h.inv.elems[self.idx as usize];
        let meta = e.meta.load(Ordering::Acquire);
        if meta & IN_USE == 0 || gen_of(meta) != self.gen {
            return Err(stale());
        }
        Ok((e, meta))
    }

    /// The buffer's element, if this handle is not stale.
    #[inline]
    fn elem(&self) -> Result<&Elem> {
        self.elem_meta().map(|(e, _)| e)
    }

    /// `(head, len, data, data_len)` as offsets in the map, in one call.
    pub fn layout(&self) -> Result<(usize, usize, usize, usize)> {
        let s = self.elem()?.shape();
        Ok((s.head, s.len, s.data, s.data_len))
    }

    /// `doca_buf_get_head`: the address of the buffer's first byte (for a map from export,
    /// in the exporter's address space).
    pub fn head(&self) -> Result<usize> {
        Ok(self.h.map.map_addr() + self.head_offset()?)
    }

    /// [`Buf::head`] as an offset in the map.
    pub fn head_offset(&self) -> Result<usize> {
        Ok(self.elem()?.head.load(Ordering::Relaxed))
    }

    /// `doca_buf_get_len`.
    pub fn len(&self) -> Result<usize> {
        Ok(self.elem()?.len.load(Ordering::Relaxed))
    }

    /// Whether the buffer spans no byte at all.
    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    /// `doca_buf_get_data`: the address of the data.
    pub fn data(&self) -> Result<usize> {
        Ok(self.h.map.map_addr() + self.data_offset()?)
    }

    /// [`Buf::data`] as an offset in the map.
    pub fn data_offset(&self) -> Result<usize> {
        Ok(self.elem()?.data.load(Ordering::Relaxed))
    }

    /// `doca_buf_get_data_len`.
    pub fn data_len(&self) -> Result<usize> {
        Ok(self.elem()?.data_len.load(Ordering::Relaxed))
    }

    /// Free room after the data: `head + len − (data + data_len)`.
    pub fn tail_room(&self) -> Result<usize> {
        Ok(self.elem()?.shape().room())
    }

    /// The descriptor's index in its inventory (`0..num_elements`): what tables keyed by
    /// buffer use (a handle to a returned buffer keeps its index but is stale).
    pub fn index(&self) -> u32 {
        self.idx
    }

    /// The map the buffer points into.
    pub fn map(&self) -> &MapAccess {
        &self.h.map
    }

    /// `doca_buf_set_data`: the data at the addresses `data..data+data_len`, which must lie
    /// inside the buffer (`INVALID_VALUE`).
    pub fn set_data(&self, data: usize, data_len: usize) -> Result<()> {
        let offset = data.checked_sub(self.h.map.map_addr()).ok_or_else(|| {
            doca_core::fail!(Error::InvalidValue, "buf set_data: address {data:#x} is before the map")
        })?;
        self.set_data_offset(offset, data_len)
    }

    /// [`Buf::set_data`] with an offset in the map.
    pub fn set_data_offset(&self, data: usize, data_len: usize) -> Result<()> {
        let e = self.elem()?;
        let (head, len) = (e.head.load(Ordering::Relaxed), e.len.load(Ordering::Relaxed));
        match data.checked_add(data_len) {
            Some(end) if data >= head && end <= head + len => {
                e.data.store(data, Ordering::Relaxed);
                e.data_len.store(data_len, Ordering::Relaxed);
                Ok(())
            }
            _ => bail!(Error::InvalidValue, "buf set_data {data}+{data_len} outside the buffer {head}+{len}"),
        }
    }

    /// What `doca_buf_inventory_buf_reuse_by_addr`/`_by_data` (DOCA 3.x) share: points this buffer at other
    /// addresses of its own map, `addr..addr+len`, with data `data..data+data_len` (addresses
    /// as the map's memrange counts them), without going back to the inventory. Both ranges
    /// must lie in the map and the data in the buffer (`INVALID_VALUE`); a freed buffer's
    /// handle is stale (`BAD_STATE`).
    pub fn reuse(&self, addr: usize, len: usize, data: usize, data_len: usize) -> Result<()> {
        let e = self.elem()?;
        let map = &self.h.map;
        let (head, data) = (map.offset_of(addr, len)?, map.offset_of(data, data_len)?);
        match (data.checked_add(data_len), head.checked_add(len)) {
            (Some(de), Some(he)) if data >= head && de <= he => {}
            _ => bail!(
                Error::InvalidValue,
                "buf reuse: data {data}+{data_len} does not lie inside the buffer {head}+{len}"
            ),
        }
        e.head.store(head, Ordering::Relaxed);
        e.len.store(len, Ordering::Relaxed);
        e.data.store(data, Ordering::Relaxed);
        e.data_len.store(data_len, Ordering::Relaxed);
        Ok(())
    }

    /// `doca_buf_inventory_buf_reuse_by_addr`: [`Buf::reuse`] with empty data at `addr`.
    pub fn reuse_by_addr(&self, addr: usize, len: usize) -> Result<()> {
        self.reuse(addr, len, addr, 0)
    }

    /// `doca_buf_inventory_buf_reuse_by_data`: [`Buf::reuse`] with the whole buffer as data.
    pub fn reuse_by_data(&self, data: usize, data_len: usize) -> Result<()> {
        self.reuse(data, data_len, data, data_len)
    }

    /// `doca_buf_reset_data_len`: data length 0, data position unchanged.
    pub fn reset_data_len(&self) -> Result<()> {
        self.elem()?.data_len.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Grows the data by `n` bytes after what it holds (what a receive does once it wrote
    /// them); beyond the buffer → `INVALID_VALUE`.
    #[inline]
    pub fn increase_data_len(&self, n: usize) -> Result<()> {
        grow_data(self.elem()?, n)
    }

    /// Grows the data by `n` bytes like [`Buf::increase_data_len`] and returns where the
    /// new bytes start (for receive paths).
    pub fn append_len(&self, n: usize) -> Result<usize> {
        let e = self.elem()?;
        let shape = e.shape();
        let room = shape.room();
        if n > room {
            return Err(no_room(room, n));
        }
        e.data_len.store(shape.data_len + n, Ordering::Relaxed);
        Ok(shape.data_end())
    }

    /// Everything about the buffer's position in one call: what a library checks before
    /// using a buffer.
    #[inline]
    pub fn shape(&self) -> Result<Shape> {
        let (e, meta) = self.elem_meta()?;
        Ok(e.shape_at(meta))
    }

    /// [`Buf::shape`] and a view of the buffer for a later [`BufView::increase_data_len`]
    /// (one lookup for both: what a copy into the buffer's room needs).
    #[inline]
    pub fn view(&self) -> Result<(Shape, BufView<'_>)> {
        let (e, meta) = self.elem_meta()?;
        Ok((e.shape_at(meta), BufView { e, gen: self.gen }))
    }

    /// `(in a list of two or more, end of the data, free room after it)` in one call.
    pub fn list_and_room(&self) -> Result<(bool, usize, usize)> {
        let s = self.shape()?;
        Ok((s.in_list, s.data_end(), s.room()))
    }

    /// `BAD_STATE` unless `meta` is this handle's buffer, `NOT_PERMITTED` unless it heads
    /// its list (what reference counts need).
    fn check_head(&self, meta: u64, op: &str) -> Result<()> {
        if meta & IN_USE == 0 || gen_of(meta) != self.gen {
            bail!(Error::BadState, "stale buffer handle: the buffer went back to its inventory");
        }
        if meta & HEAD == 0 {
            bail!(Error::NotPermitted, "buf {op} on an element that is not a list head");
        }
        if meta & RC_MASK == 0 {
            bail!(Error::BadState, "buf {op}: the buffer is going back to its inventory");
        }
        Ok(())
    }

    /// `doca_buf_get_refcount`.
    pub fn refcount(&self) -> Result<u16> {
        Ok((self.elem()?.meta.load(Ordering::Relaxed) & RC_MASK) as u16)
    }

    /// `doca_buf_inc_refcount`: returns the count before. Not a list head → `NOT_PERMITTED`;
    /// at `u16::MAX` → `TOO_BIG`.
    pub fn inc_refcount(&self) -> Result<u16> {
        let e = self.elem()?;
        let mut meta = e.meta.load(Ordering::Relaxed);
        loop {
            self.check_head(meta, "inc_refcount")?;
            if meta & RC_MASK == RC_MASK {
                bail!(Error::TooBig, "buf refcount at its maximum");
            }
            match e.meta.compare_exchange_weak(meta, meta + 1, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Ok((meta & RC_MASK) as u16),
                Err(now) => meta = now,
            }
        }
    }

    /// `doca_buf_dec_refcount`: returns the count before, as the header says. At 0 the buffer (with its list)
    /// returns to its inventory. Not a list head → `NOT_PERMITTED`; a handle whose buffer
    /// already returned → `BAD_STATE`.
    pub fn dec_refcount(&self) -> Result<u16> {
        let e = self.elem()?;
        let mut meta = e.meta.load(Ordering::Relaxed);
        loop {
            self.check_head(meta, "dec_refcount")?;
            let before = (meta & RC_MASK) as u16;
            if before == 1 {
                break;
            }
            match e.meta.compare_exchange_weak(meta, meta - 1, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return Ok(before),
                Err(now) => meta = now,
            }
        }
        // The last reference: the list goes back under the inventory's lock (lists change
        // only under it); the count is checked again there.
        let mut s = self.h.inv.state.lock();
        let mut meta = e.meta.load(Ordering::Acquire);
        loop {
            self.check_head(meta, "dec_refcount")?;
            // Counts still move on other threads (without the lock): every change is a CAS;
            // taking the count to 0 claims the release.
            match e.meta.compare_exchange(meta, meta - 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) if meta & RC_MASK > 1 => return Ok((meta & RC_MASK) as u16),
                Ok(_) => break,
                Err(now) => meta = now,
            }
        }
        let mut dead = Released::new();
        let mut cur = Some(self.idx);
        while let Some(i) = cur {
            cur = self.h.inv.elems[i as usize].next();
            self.h.inv.release(&mut s, i, &mut dead);
        }
        drop(s);
        drop(dead);
        Ok(1)
    }

    /// `doca_buf_get_next_in_list`: `None` at the end.
    pub fn next_in_list(&self) -> Result<Option<Buf>> {
        let mut s = self.h.inv.state.lock();
        self.elem()?.next().map(|i| self.sibling(&mut s, i)).transpose()
    }

    /// `doca_buf_get_last_in_list`.
    pub fn last_in_list(&self) -> Result<Buf> {
        let mut s = self.h.inv.state.lock();
        self.elem()?;
        let mut i = self.idx;
        while let Some(n) = self.h.inv.elems[i as usize].next() {
            i = n;
        }
        if i == self.idx {
            Ok(self.clone())
        } else {
            self.sibling(&mut s, i)
        }
    }

    /// A handle to element `idx` of this buffer's list (under the inventory's lock).
    fn sibling(&self, s: &mut State, idx: u32) -> Result<Buf> {
        let e = &self.h.inv.elems[idx as usize];
        let gen = gen_of(e.meta.load(Ordering::Acquire));
        let h = match s.maps[idx as usize] {
            Some(id) if id != self.h.map.id() => {
                // An element out on a map: its entry holds the map meanwhile.
                let map = s.handles.iter().find(|h| h.map == id).and_then(HandleEntry::map_access);
                let map = map.ok_or(Error::BadState)?;
                InvInner::handle(&self.h.inv, s, &MapSrc::Access(&map), 0)?
            }
            _ => self.h.clone(),
        };
        Ok(Buf { h, idx, gen })
    }

    /// `doca_buf_is_first_in_list`.
    pub fn is_first_in_list(&self) -> Result<bool> {
        Ok(self.elem()?.is_head())
    }

    /// `doca_buf_is_last_in_list`.
    pub fn is_last_in_list(&self) -> Result<bool> {
        Ok(self.elem()?.next().is_none())
    }

    /// `doca_buf_is_in_list`: part of a list of two or more.
    pub fn is_in_list(&self) -> Result<bool> {
        Ok(self.shape()?.in_list)
    }

    /// `doca_buf_get_list_len`: list heads only (`NOT_PERMITTED`).
    pub fn list_len(&self) -> Result<u32> {
        let _s = self.h.inv.state.lock();
        if !self.elem()?.is_head() {
            bail!(Error::NotPermitted, "buf get_list_len on an element that is not a list head");
        }
        let mut n = 1;
        let mut i = self.idx;
        while let Some(next) = self.h.inv.elems[i as usize].next() {
            n += 1;
            i = next;
        }
        Ok(n)
    }

    /// `doca_buf_chain_list(list1, list2)`: appends the list headed by `list2` to this
    /// list. Both must be list heads and `list2`'s refcount 1 (`NOT_PERMITTED`), from the
    /// same inventory (`NOT_SUPPORTED`), and distinct (`INVALID_VALUE`).
    pub fn chain_list(&self, list2: &Buf) -> Result<()> {
        if !Arc::ptr_eq(&self.h.inv, &list2.h.inv) {
            bail!(Error::NotSupported, "buf chain_list across inventories");
        }
        let _s = self.h.inv.state.lock();
        let e1 = self.elem()?;
        let e2 = list2
            .elem()
            .map_err(|_| doca_core::fail!(Error::BadState, "stale buffer handle given to chain_list"))?;
        if self.idx == list2.idx {
            bail!(Error::InvalidValue, "buf chain_list of a list with itself");
        }
        if !e1.is_head() || !e2.is_head() {
            bail!(Error::NotPermitted, "buf chain_list needs two list heads");
        }
        let mut last = self.idx;
        while let Some(n) = self.h.inv.elems[last as usize].next() {
            last = n;
        }
        // list2's count may move on another thread: it stops being a head only at 1.
        let meta2 = e2.meta.load(Ordering::Acquire);
        let rc2 = meta2 & RC_MASK;
        if rc2 != 1
            || e2
                .meta
                .compare_exchange(meta2, meta2 & !(HEAD | RC_MASK), Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            bail!(Error::NotPermitted, "buf chain_list: the second list's refcount is {rc2}, not 1");
        }
        self.h.inv.elems[last as usize].next.store(list2.idx, Ordering::Relaxed);
        Ok(())
    }

    /// `doca_buf_unchain_list(list1, list2)`: splits this list before `list2`, which becomes
    /// the head of its own list (refcount 1). `list2` not in this list after its head →
    /// `INVALID_VALUE`; from another inventory → `NOT_SUPPORTED`.
    pub fn unchain_list(&self, list2: &Buf) -> Result<()> {
        if !Arc::ptr_eq(&self.h.inv, &list2.h.inv) {
            bail!(Error::NotSupported, "buf unchain_list across inventories");
        }
        let _s = self.h.inv.state.lock();
        if !self.elem()?.is_head() {
            // The header's one code: list2 is not part of a list headed by list1.
            bail!(Error::InvalidValue, "buf unchain_list: the first argument is not a list head");
        }
        let mut prev = self.idx;
        loop {
            match self.h.inv.elems[prev as usize].next() {
                Some(n) if n == list2.idx && list2.elem().is_ok() => break,
                Some(n) => prev = n,
                None => bail!(Error::InvalidValue, "buf unchain_list: the buffer is not in this list"),
            }
        }
        self.h.inv.elems[prev as usize].next.store(NO_NEXT, Ordering::Relaxed);
        let e = &self.h.inv.elems[list2.idx as usize];
        e.meta.store(((list2.gen as u64) << 32) | IN_USE | HEAD | 1, Ordering::Release);
        Ok(())
    }

    /// Borrows the data segment for reading (see the crate docs).
    pub fn data_bytes(&self) -> Result<Bytes<'_>> {
        let (_, _, data, data_len) = self.layout()?;
        self.h.map.bytes(data, data_len)
    }

    /// Borrows the data segment for writing (see the crate docs).
    pub fn data_bytes_mut(&self) -> Result<BytesMut<'_>> {
        let (_, _, data, data_len) = self.layout()?;
        self.h.map.bytes_mut(data, data_len)
    }

    /// Copies the data segment into a new vector (convenience; allocates).
    pub fn data_to_vec(&self) -> Result<Vec<u8>> {
        Ok(self.data_bytes()?.to_vec())
    }

    /// Writes `src` right after the data and grows the data by its length (how a producer
    /// fills a buffer, and how a receive lands). Not enough room → `INVALID_VALUE`.
    pub fn append(&self, src: &[u8]) -> Result<()> {
        let at = self.append_len(src.len())?;
        self.h.map.write(at, src).inspect_err(|_| {
            if let Ok(e) = self.elem() {
                e.data_len.store(at.saturating_sub(e.data.load(Ordering::Relaxed)), Ordering::Relaxed);
            }
        })
    }
}
