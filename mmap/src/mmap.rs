//! `doca_mmap`: a memory range, its access permissions, the devices it is registered with,
//! and its export to the other side of the emulated link.
//!
//! | state       | allowed                                                               |
//! |-------------|-----------------------------------------------------------------------|
//! | created     | `set_memrange` (once), `set_permissions`, `add_dev`/`rm_dev`, `set_max_num_devices` (before the first start), `set_free_cb`, `start` |
//! | started     | buffers, `export_pci`/`export_rdma`, `stop` (no buffer out), `destroy` (no buffer out) |
//! | from export | buffers, `destroy`; every setter, device change, export, start and stop → `NOT_PERMITTED` |
//!
//! **Export and import.** `export_pci` on a started map returns a descriptor: bytes the
//! application carries to the other process itself. For a map of [`SharedMem`],
//! [`Mmap::create_from_export`] there maps the very same pages; for memory registered by
//! address (a `Vec`, a static, C's `malloc`) the import connects to threads of this library
//! in the exporting process that serve copies of the range ([`crate::served`]: no mapping
//! in the importer, so its buffers have no bytes to borrow — `NOT_SUPPORTED` — and every
//! access is a copy; a killed exporter fails the next access with `NOT_FOUND`). The descriptor names the
//! exporting process's memory service ([`doca_link::rendezvous`]: a socket in this user's
//! fabric directory whose name holds no secret) and carries a 128-bit random token the
//! service must know: the importer sends it and receives the sealed memfd over the socket
//! (never through `/proc`), or a connection to the threads serving the range. A descriptor
//! cannot be forged into other memory, and nothing public (no socket name, no shared header)
//! lets anyone rebuild it. When the exporting map is stopped
//! or destroyed (a clean exit destroys it) the export is revoked: importing it again gives
//! `NOT_FOUND`, and a map already imported answers every later access (new buffers, reads
//! and writes through buffers) with `NOT_FOUND`. A killed exporter revokes nothing already
//! imported (only a new import of its descriptor fails). Its pages stay mapped until it is destroyed,
//! and every shared segment is a memfd sealed against resizing (checked on import), so the
//! exporter cannot truncate the pages under the importer either: no access can fault.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use doca_core::{bail, fail, CapSpec, Data, Dev, DevInfo, Error, PciAddr, Refused, Result};
use parking_lot::Mutex;
use smallvec::SmallVec;

use crate::desc::{AccessFlags, Desc, KIND_SEGMENT, KIND_SERVED};
use crate::memory::Memory;
use crate::shm::{
    Bytes, BytesMut, Region, Segment, Tracker, MAX_EXPORTS, SLOT_FREE, SLOT_LIVE, SLOT_REVOKED,
};

/// Default number of devices a map can be registered with.
pub const DEFAULT_MAX_NUM_DEVICES: u32 = 8;

/// `doca_mmap_cap_is_export_pci_supported`, as a topology line `cap mmap.export_pci 0|1`.
pub const CAP_EXPORT_PCI: CapSpec =
    CapSpec { name: "mmap.export_pci", default: 1, descr: "maps can be exported over PCIe (1) or not (0)" };
/// `doca_mmap_cap_is_create_from_export_pci_supported`, as `cap mmap.create_from_export_pci 0|1`.
pub const CAP_CREATE_FROM_EXPORT_PCI: CapSpec = CapSpec {
    name: "mmap.create_from_export_pci",
    default: 1,
    descr: "maps can be created from a PCIe export (1) or not (0)",
};
/// Every capability this library reads.
pub const CAPS: [CapSpec; 2] = [CAP_EXPORT_PCI, CAP_CREATE_FROM_EXPORT_PCI];

/// Whether `dev` has the 0-or-1 capability `spec` (after checking the topology's `mmap.*`
/// names: a misspelt one is `INVALID_VALUE` naming its line).
fn cap_flag(dev: &DevInfo, spec: &CapSpec) -> Result<bool> {
    if let Err(e) = dev.topology().check_caps("mmap", &CAPS) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(spec) != 0)
}

/// What the exporter's service tells an importer of shared memory with the memfd: slot u32,
/// tag u64, offset u64, len u64, perms u32 (little-endian).
const SEG_INFO_LEN: usize = 32;
/// The next export's slot tag (see [`crate::shm`]).
static NEXT_TAG: AtomicU64 = AtomicU64::new(1);

/// Where an imported map's bytes are.
enum Remote {
    /// The exporter's shared memory, mapped here.
    Seg { seg: Arc<Segment>, slot: usize, tag: u64 },
    /// Memory the exporter registered by address, served by its library's threads.
    Served(crate::served::Client),
    /// Memory of a process on the other side of the TCP link, served by its side's library
    /// ([`crate::linked`]).
    Linked(crate::linked::Client),
}

struct Import {
    remote: Remote,
    from: PciAddr,
    /// The device the map was created from the export with (`None` for the map the link's
    /// serving thread imports on behalf of an importer across the link).
    dev: Option<Dev>,
    /// What the import holds of the exporting process's budget (see [`crate::budget`]);
    /// `None` across the link (nothing of a local process is held).
    _budget: Option<crate::budget::Hold>,
}

impl Import {
    fn live(&self) -> bool {
        match &self.remote {
            Remote::Seg { seg, slot, tag } => {
                let s = &seg.header().slots[*slot];
                // Acquire pairs with the exporter's Release store of the slot state.
                s.state.load(Ordering::Acquire) == SLOT_LIVE && s.tag.load(Ordering::Relaxed) == *tag
            }
            Remote::Served(c) => c.live(),
            Remote::Linked(c) => c.live(),
        }
    }

    fn far(&self) -> Option<Far<'_>> {
        match &self.remote {
            Remote::Served(c) => Some(Far::Served(c)),
            Remote::Linked(c) => Some(Far::Linked(c)),
            Remote::Seg { .. } => None,
        }
    }
}

/// An import whose bytes are not mapped here: every access is a copy through a connection
/// (to the exporter's serving threads, or across the link).
#[derive(Clone, Copy)]
enum Far<'a> {
    Served(&'a crate::served::Client),
    Linked(&'a crate::linked::Client),
}

impl Far<'_> {
    fn len(self) -> usize {
        match self {
            Far::Served(c) => c.len(),
            Far::Linked(c) => c.len(),
        }
    }

    fn is_writable(self) -> bool {
        match self {
            Far::Served(c) => c.is_writable(),
            Far::Linked(c) => c.is_writable(),
        }
    }

    fn read(self, offset: usize, dst: &mut [u8]) -> Result<()> {
        match self {
            Far::Served(c) => c.read(offset, dst),
            Far::Linked(c) => c.read(offset, dst),
        }
    }

    fn write(self, offset: usize, src: &[u8]) -> Result<()> {
        match self {
            Far::Served(c) => c.write(offset, src),
            Far::Linked(c) => c.write(offset, src),
        }
    }
}

struct Config {
    memory: Option<Memory>,
    perms: AccessFlags,
    devs: Vec<Dev>,
    max_devs: u32,
    ever_started: bool,
    free_cb: Option<Box<dyn FnOnce(Memory) + Send>>,
    /// Live exports of shared memory: their slot in the segment's header and their offer.
    exports: SmallVec<[(usize, doca_link::rendezvous::Offered); 2]>,
    /// The export of memory registered by address, while served (see [`crate::served`]).
    served: Option<crate::served::Server>,
    /// While exported with the link configured: what lets importers across the link reach
    /// this process's memory service ([`crate::linked::Offered`]).
    linked: Option<crate::linked::Offered>,
    /// [`Mmap::enable_thread_safety`] was called.
    thread_safe: bool,
}

pub(crate) struct MmapInner {
    cfg: Mutex<Config>,
    /// The memory as mapped here and where borrows of its bytes are tracked, set together
    /// (one look finds both: a copy between two maps makes two, not four).
    mapped: OnceLock<(Region, Tracker)>,
    started: AtomicBool,
    num_bufs: AtomicU32,
    /// Buffers counted by their holders ([`BufCount`]), added up when asked.
    counts: Mutex<Vec<Weak<BufCount>>>,
    /// Counted references (`MapRef`) plus holders with buffers out: one atomic that is
    /// above 0 whenever a buffer points into the map, even while the sum of the holders'
    /// counts, read one by one, could miss a buffer passed from one holder to another.
    users: Arc<AtomicU32>,
    user_data: AtomicU64,
    import: Option<Import>,
    /// The address of the first byte as the map's owner sees it (C's memrange start): the
    /// local mapping's for a map of this process, the exporter's for a map from export.
    base: OnceLock<usize>,
}

impl MmapInner {
    /// The memrange start (0 before a memory range is set).
    fn base(&self) -> usize {
        self.base.get().copied().unwrap_or(0)
    }

    /// The length of the memory range (`None` before it is set).
    fn len(&self) -> Option<usize> {
        match self.far() {
            Some(c) => Some(c.len()),
            None => self.region().map(Region::len),
        }
    }

    /// The memory as mapped here (`None` before a memory range is set, and for an import not
    /// mapped here).
    #[inline]
    fn region(&self) -> Option<&Region> {
        self.mapped.get().map(|(region, _)| region)
    }

    /// The connection to the exporter of an import that is not mapped here (served, or
    /// across the link).
    #[inline]
    fn far(&self) -> Option<Far<'_>> {
        self.import.as_ref().and_then(Import::far)
    }
}

/// `struct doca_mmap`. `Send + Sync`; buffers keep what they need of it alive.
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// use doca_core::open_device_with_pci;
/// use doca_mmap::{AccessFlags, Mmap, SharedMem};
///
/// let host = open_device_with_pci("b1:00.0", None)?;
/// let map = Mmap::create()?;
/// map.set_memrange(SharedMem::alloc(1 << 16)?)?; // exportable memory
/// map.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE)?;
/// map.add_dev(&host)?;
/// map.start()?;
/// let descriptor: Vec<u8> = map.export_pci(&host)?; // give these bytes to the other side
/// assert!(!descriptor.is_empty() && map.is_exported());
/// map.stop()?; // revokes the export
/// # Ok::<(), doca_core::Error>(())
/// ```
pub struct Mmap {
    inner: Arc<MmapInner>,
}

impl fmt::Debug for Mmap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self.inner.len().unwrap_or(0);
        write!(f, "Mmap({} bytes, started {}, from export {})", len, self.is_started(), self.is_from_export())
    }
}

impl Mmap {
    /// `doca_mmap_create`: no memory, permissions `LOCAL_READ_WRITE`, no device.
    pub fn create() -> Result<Mmap> {
        Mmap::admit("mmap create")?;
        Ok(Mmap::with(None, AccessFlags::LOCAL_READ_WRITE, Vec::new()))
    }

    /// The first DOCA call of a process may be this one (a bad fault plan is reported here),
    /// and a fault plan may refuse the map (`alloc.mmap`).
    fn admit(what: &'static str) -> Result<()> {
        doca_core::fault::check_env()?;
        crate::linked::register(import_for_link);
        if doca_core::fault::armed(doca_core::fault::class::ALLOC_MMAP) {
            if let Some(e) = doca_core::fault::on_alloc(doca_core::fault::Alloc::Mmap, &what) {
                return Err(e);
            }
        }
        Ok(())
    }

    fn with(import: Option<Import>, perms: AccessFlags, devs: Vec<Dev>) -> Mmap {
        Mmap {
            inner: Arc::new(MmapInner {
                cfg: Mutex::new(Config {
                    memory: None,
                    perms,
                    devs,
                    max_devs: DEFAULT_MAX_NUM_DEVICES,
                    ever_started: false,
                    free_cb: None,
                    exports: SmallVec::new(),
                    served: None,
                    linked: None,
                    thread_safe: false,
                }),
                mapped: OnceLock::new(),
                started: AtomicBool::new(false),
                num_bufs: AtomicU32::new(0),
                counts: Mutex::new(Vec::new()),
                users: Arc::new(AtomicU32::new(0)),
                user_data: AtomicU64::new(0),
                import,
                base: OnceLock::new(),
            }),
        }
    }

    fn configurable(&self, what: &str) -> Result<parking_lot::MutexGuard<'_, Config>> {
        if self.is_from_export() {
            bail!(Error::NotPermitted, "mmap {what}: a map created from an export cannot be changed");
        }
        Ok(self.inner.cfg.lock())
    }

    /// `doca_mmap_set_memrange`: once (`NOT_PERMITTED` the second time), before start
    /// (`BAD_STATE`); empty memory is `INVALID_VALUE`. The map keeps the memory; the free
    /// callback gives it back.
    pub fn set_memrange(&self, memory: impl Into<Memory>) -> Result<()> {
        let mut memory = memory.into();
        if self.is_from_export() {
            // A map from an export is started at its creation: the header's code for that.
            bail!(
                Error::BadState,
                "mmap set_memrange: a map created from an export is started, its range fixed"
            );
        }
        let mut cfg = self.configurable("set_memrange")?;
        if self.is_started() {
            bail!(Error::BadState, "mmap set_memrange after start");
        }
        if self.inner.region().is_some() {
            bail!(Error::NotPermitted, "mmap set_memrange: the memory range is already set");
        }
        let region = memory.region()?;
        let tracker = memory.tracker();
        let _ = self.inner.base.set(region.addr());
        cfg.memory = Some(memory);
        let _ = self.inner.mapped.set((region, tracker));
        Ok(())
    }

    /// `doca_mmap_get_memrange`: (address, length). For a map from export, the address is
    /// the exporter's (what its buffer addresses are relative to). `BAD_STATE` if never set.
    pub fn memrange(&self) -> Result<(usize, usize)> {
        match self.inner.len() {
            Some(len) => Ok((self.inner.base(), len)),
            None => Err(fail!(Error::BadState, "mmap get_memrange: no memory range set")),
        }
    }

    /// The offset in the started map (`BAD_STATE` otherwise) of the addresses
    /// `addr..addr+len` as [`Mmap::memrange`] gives them; outside the map → `INVALID_VALUE`.
    /// (What `buf_get_by_addr` needs, without taking a handle on the map.)
    pub fn offset_of(&self, addr: usize, len: usize) -> Result<usize> {
        if !self.is_started() {
            bail!(Error::BadState, "address in a map that is not started");
        }
        offset_in(&self.inner, addr, len)
    }

    /// `doca_mmap_set_permissions`. Before start (`BAD_STATE`).
    pub fn set_permissions(&self, flags: AccessFlags) -> Result<()> {
        let flags = AccessFlags::from_mask(flags.bits())?;
        let mut cfg = self.configurable("set_permissions")?;
        if self.is_started() {
            bail!(Error::BadState, "mmap set_permissions after start");
        }
        cfg.perms = flags;
        Ok(())
    }

    /// `doca_mmap_set_permissions` with a raw C mask (`INVALID_VALUE` for undefined bits).
    pub fn set_permissions_mask(&self, mask: u32) -> Result<()> {
        self.set_permissions(AccessFlags::from_mask(mask)?)
    }

    /// The access permissions.
    pub fn permissions(&self) -> AccessFlags {
        self.inner.cfg.lock().perms
    }

    /// `doca_mmap_add_dev`: `ALREADY_EXIST` twice, `NO_MEMORY` beyond the maximum,
    /// `NOT_PERMITTED` once started.
    pub fn add_dev(&self, dev: &Dev) -> Result<()> {
        let mut cfg = self.configurable("add_dev")?;
        if self.is_started() {
            bail!(Error::NotPermitted, "mmap add_dev after start");
        }
        if cfg.devs.contains(dev) {
            bail!(Error::AlreadyExist, "mmap add_dev: {dev:?} is already added");
        }
        if cfg.devs.len() >= cfg.max_devs as usize {
            bail!(
                Error::NoMemory,
                "mmap add_dev: the map already has its maximum of {} devices",
                cfg.max_devs
            );
        }
        cfg.devs.push(dev.clone());
        Ok(())
    }

    /// `doca_mmap_rm_dev`: `NOT_FOUND` if absent, `NOT_PERMITTED` once started.
    pub fn rm_dev(&self, dev: &Dev) -> Result<()> {
        let mut cfg = self.configurable("rm_dev")?;
        if self.is_started() {
            bail!(Error::NotPermitted, "mmap rm_dev after start");
        }
        let Some(i) = cfg.devs.iter().position(|d| d == dev) else {
            bail!(Error::NotFound, "mmap rm_dev: {dev:?} was not added");
        };
        cfg.devs.remove(i);
        Ok(())
    }

    /// The devices added.
    pub fn devs(&self) -> Vec<Dev> {
        match &self.inner.import {
            Some(i) => i.dev.iter().cloned().collect(),
            None => self.inner.cfg.lock().devs.clone(),
        }
    }

    /// `doca_mmap_set_max_num_devices`: before the first start (`NOT_PERMITTED`); not below
    /// the devices already added, not 0 (`INVALID_VALUE`).
    pub fn set_max_num_devices(&self, max: u32) -> Result<()> {
        let mut cfg = self.configurable("set_max_num_devices")?;
        if cfg.ever_started {
            bail!(Error::NotPermitted, "mmap set_max_num_devices after the first start");
        }
        if max == 0 || (max as usize) < cfg.devs.len() {
            bail!(
                Error::InvalidValue,
                "mmap set_max_num_devices({max}) with {} devices added",
                cfg.devs.len()
            );
        }
        cfg.max_devs = max;
        Ok(())
    }

    /// `doca_mmap_get_max_num_devices`.
    pub fn max_num_devices(&self) -> u32 {
        self.inner.cfg.lock().max_devs
    }

    /// `doca_mmap_set_free_cb`: called with the memory when a started map is destroyed.
    /// Before start (`BAD_STATE`).
    pub fn set_free_cb(&self, cb: impl FnOnce(Memory) + Send + 'static) -> Result<()> {
        let mut cfg = self.configurable("set_free_cb")?;
        if self.is_started() {
            bail!(Error::BadState, "mmap set_free_cb after start");
        }
        cfg.free_cb = Some(Box::new(cb));
        Ok(())
    }

    /// `doca_mmap_set_user_data`: before start (`BAD_STATE` after, as the header says);
    /// a map from export takes its user data at creation (`NOT_PERMITTED` here).
    pub fn set_user_data(&self, data: Data) -> Result<()> {
        let _cfg = self.configurable("set_user_data")?;
        if self.is_started() {
            bail!(Error::BadState, "mmap set_user_data after start");
        }
        self.inner.user_data.store(data.as_u64(), Ordering::Relaxed);
        Ok(())
    }

    /// `doca_mmap_get_user_data`.
    pub fn user_data(&self) -> Data {
        Data::from_u64(self.inner.user_data.load(Ordering::Relaxed))
    }

    /// `doca_mmap_start`: needs a memory range (`BAD_STATE`); twice → `BAD_STATE`.
    pub fn start(&self) -> Result<()> {
        let mut cfg = self.configurable("start")?;
        if self.is_started() {
            bail!(Error::BadState, "mmap start: already started");
        }
        if self.inner.region().is_none() {
            bail!(Error::BadState, "mmap start: set a memory range first");
        }
        cfg.ever_started = true;
        self.inner.started.store(true, Ordering::Release);
        Ok(())
    }

    /// `doca_mmap_stop`: `NOT_PERMITTED` while buffers point into the map; revokes every
    /// export (importers then see `NOT_FOUND`). A map created from an export may be stopped
    /// too (DOCA's samples stop their remote maps before destroying them): it is then no
    /// longer started, and can only be destroyed.
    pub fn stop(&self) -> Result<()> {
        if self.is_from_export() {
            if !self.is_started() {
                bail!(Error::BadState, "mmap stop: not started");
            }
            let bufs = self.num_bufs();
            if bufs > 0 {
                bail!(Error::NotPermitted, "mmap stop: {bufs} buffer(s) still point into the map");
            }
            // Its own export for RDMA, if any, ends with it.
            revoke(&mut self.inner.cfg.lock());
            self.inner.started.store(false, Ordering::Release);
            return Ok(());
        }
        let mut cfg = self.configurable("stop")?;
        if !self.is_started() {
            bail!(Error::BadState, "mmap stop: not started");
        }
        let bufs = self.num_bufs();
        if bufs > 0 {
            bail!(Error::NotPermitted, "mmap stop: {bufs} buffer(s) still point into the map");
        }
        revoke(&mut cfg);
        self.inner.started.store(false, Ordering::Release);
        Ok(())
    }

    /// `doca_mmap_enable_thread_safety` (DOCA 3.x): lets the map be used from several threads
    /// at once — which every map here allows already (`Send + Sync`, buffers counted
    /// atomically) — and lets [`Mmap::destroy`] succeed while buffers still point into it
    /// (the memory then stays until the last of them is freed; its free callback runs then).
    /// A map of this process: before start (`NOT_PERMITTED`); a map from export (started
    /// when created) too, as DOCA's storage application does. Either only while no buffer
    /// points into it (`NOT_PERMITTED`).
    pub fn enable_thread_safety(&self) -> Result<()> {
        let mut cfg = self.inner.cfg.lock();
        if !self.is_from_export() && self.is_started() {
            bail!(Error::NotPermitted, "mmap enable_thread_safety: the map is started");
        }
        let bufs = self.num_bufs();
        if bufs > 0 {
            bail!(Error::NotPermitted, "mmap enable_thread_safety: {bufs} buffer(s) point into the map");
        }
        cfg.thread_safe = true;
        Ok(())
    }

    /// Whether [`Mmap::enable_thread_safety`] was called.
    pub fn is_thread_safe(&self) -> bool {
        self.inner.cfg.lock().thread_safe
    }

    /// `doca_mmap_destroy`: `NOT_PERMITTED` (and the map back) while buffers point into it,
    /// unless thread safety is enabled ([`Mmap::enable_thread_safety`]). A started map's
    /// free callback runs with the memory (once the last buffer is freed).
    pub fn destroy(self) -> Result<(), Refused<Mmap>> {
        let bufs = self.num_bufs();
        if bufs > 0 && !self.is_thread_safe() {
            let e = fail!(Error::NotPermitted, "mmap destroy: {bufs} buffer(s) still point into the map");
            return Err(Refused::new(e, self));
        }
        Ok(())
    }

    /// Whether the map is started (a map from export always is).
    pub fn is_started(&self) -> bool {
        self.inner.started.load(Ordering::Acquire)
    }

    /// `doca_mmap_get_num_bufs`: buffers that point into the map.
    pub fn num_bufs(&self) -> u32 {
        let held = self
            .inner
            .counts
            .lock()
            .iter()
            .filter_map(Weak::upgrade)
            .fold(0u32, |n, c| n.saturating_add(c.get()));
        let counted = self.inner.num_bufs.load(Ordering::Acquire).saturating_add(held);
        // Never 0 while one is out (see `users`).
        counted.max(self.inner.users.load(Ordering::SeqCst))
    }

    /// The map's identity (what [`MapAccess::id`] gives for its accesses).
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// `doca_mmap_get_exported`.
    pub fn is_exported(&self) -> bool {
        let cfg = self.inner.cfg.lock();
        !cfg.exports.is_empty() || cfg.served.is_some()
    }

    /// `doca_mmap_get_from_export`.
    pub fn is_from_export(&self) -> bool {
        self.inner.import.is_some()
    }

    /// Whether the memory can be mapped by another process (from the shared allocator, or
    /// itself imported).
    pub fn is_shareable(&self) -> bool {
        (self.is_from_export() && self.inner.far().is_none())
            || self.inner.cfg.lock().memory.as_ref().is_some_and(Memory::is_shareable)
    }

    /// `doca_mmap_cap_is_export_pci_supported`: whether maps can be exported to the other
    /// side of the link through `devinfo` (every device, unless the topology says `cap
    /// mmap.export_pci 0`; then [`Mmap::export_pci`] is `NOT_SUPPORTED`).
    pub fn cap_is_export_pci_supported(devinfo: &DevInfo) -> Result<bool> {
        cap_flag(devinfo, &CAP_EXPORT_PCI)
    }

    /// `doca_mmap_cap_is_create_from_export_pci_supported`: whether `devinfo` can import an
    /// export (every device, unless the topology says `cap mmap.create_from_export_pci 0`;
    /// then [`Mmap::create_from_export`] is `NOT_SUPPORTED`).
    pub fn cap_is_create_from_export_pci_supported(devinfo: &DevInfo) -> Result<bool> {
        cap_flag(devinfo, &CAP_CREATE_FROM_EXPORT_PCI)
    }

    /// `doca_mmap_export_pci`: needs a started map (`NOT_PERMITTED` before start or after
    /// stop, as DOCA's header says), a PCI permission (`NOT_PERMITTED`) and `dev` added
    /// (`NOT_FOUND`). Memory that is not [`crate::SharedMem`] is served by this library's
    /// threads from the first export of the map until it is stopped ([`crate::served`]).
    pub fn export_pci(&self, dev: &Dev) -> Result<Vec<u8>> {
        self.export(dev, AccessFlags::PCI_READ_ONLY | AccessFlags::PCI_READ_WRITE, "PCI")
    }

    /// `doca_mmap_export_rdma`: as [`Mmap::export_pci`] with an RDMA permission.
    ///
    /// A map created from an export may be exported for RDMA too (as a DPU gives a storage
    /// node RDMA access to the host memory the host exported to it): the permissions are the
    /// original export's, `dev` must be the device the map was created with (`NOT_FOUND`),
    /// and the map must be started and its exporter's export live (`NOT_FOUND`). Importers
    /// of this export reach the memory through this process ([`crate::served`]: every copy
    /// relayed by its library's threads), until this map is stopped or destroyed, or the
    /// original exporter revokes its export (copies then fail with `NOT_FOUND`).
    pub fn export_rdma(&self, dev: &Dev) -> Result<Vec<u8>> {
        if self.is_from_export() {
            return self.reexport_rdma(dev);
        }
        self.export(dev, AccessFlags::RDMA_READ | AccessFlags::RDMA_WRITE, "RDMA")
    }

    fn reexport_rdma(&self, dev: &Dev) -> Result<Vec<u8>> {
        let mut cfg = self.inner.cfg.lock();
        if !self.is_started() {
            bail!(Error::NotPermitted, "mmap export_rdma: the map from export was stopped");
        }
        self.inner.check_live()?;
        let perms = cfg.perms;
        if !perms.intersects(AccessFlags::RDMA_READ | AccessFlags::RDMA_WRITE) {
            bail!(
                Error::NotPermitted,
                "mmap export_rdma: the map's exporter granted no RDMA permission ({perms:?})"
            );
        }
        if !cfg.devs.contains(dev) {
            bail!(
                Error::NotFound,
                "mmap export_rdma: the map was created from export with another device than {dev:?}"
            );
        }
        let Some(len) = self.inner.len() else {
            bail!(Error::BadState, "mmap export_rdma: the map from export has no memory range");
        };
        let (service, token) = match &cfg.served {
            Some(s) => (s.service(), s.token()),
            None => {
                let writable = perms.intersects(AccessFlags::PCI_READ_WRITE | AccessFlags::RDMA_WRITE);
                let relay = Reexported { inner: Arc::downgrade(&self.inner), len, writable };
                let s = cfg.served.insert(crate::served::Server::relay(Box::new(relay), perms)?);
                (s.service(), s.token())
            }
        };
        tracing::debug!(target: "doca_sdk", "mmap from export re-exported {len} bytes for RDMA (relayed) for {dev:?}");
        Ok(self.descriptor(&mut cfg, KIND_SERVED, (service, token), len, dev))
    }

    /// The descriptor of an export of the whole range (`len` bytes) through `service` and
    /// `token`; the first export with the link configured also offers the service across
    /// it (what lets importers on the other side reach this process's memory service).
    fn descriptor(
        &self,
        cfg: &mut Config,
        kind: u16,
        (service, token): (doca_link::rendezvous::ServiceName, doca_link::rendezvous::Token),
        len: usize,
        dev: &Dev,
    ) -> Vec<u8> {
        if cfg.linked.is_none() {
            cfg.linked = crate::linked::offered(service, import_for_link);
        }
        Desc {
            kind,
            perms: cfg.perms,
            service,
            token,
            offset: 0,
            len: len as u64,
            from: dev.as_devinfo().pci_addr(),
            addr: self.inner.base() as u64,
        }
        .encode()
    }

    fn export(&self, dev: &Dev, needed: AccessFlags, kind: &str) -> Result<Vec<u8>> {
        let mut cfg = self.configurable("export")?;
        if !self.is_started() {
            bail!(Error::NotPermitted, "mmap export: start the map first");
        }
        if !cfg.perms.intersects(needed) {
            bail!(
                Error::NotPermitted,
                "mmap export_{}: the map has no {kind} permission",
                kind.to_lowercase()
            );
        }
        if !cfg.devs.contains(dev) {
            bail!(Error::NotFound, "mmap export: {dev:?} was not added to the map");
        }
        if kind == "PCI" && !cap_flag(dev.as_devinfo(), &CAP_EXPORT_PCI)? {
            bail!(
                Error::NotSupported,
                "mmap export_pci: {dev:?} cannot export (topology: cap mmap.export_pci 0)"
            );
        }
        let (region, tracker) = self.inner.mapped.get().expect("a started map has a region");
        let region = *region;
        let perms = cfg.perms;
        let Some(Memory::Shared(shared)) = &cfg.memory else {
            // Memory registered by address: served by this library's threads (one server per
            // map, started at its first export, revoked at stop).
            let (service, token) = match &cfg.served {
                Some(s) => (s.service(), s.token()),
                None => {
                    let tracker = tracker.clone();
                    let server = crate::served::Server::start(region, tracker, perms)?;
                    let s = cfg.served.insert(server);
                    (s.service(), s.token())
                }
            };
            tracing::debug!(target: "doca_sdk", "mmap exported {} bytes by address (served) for {dev:?}", region.len());
            return Ok(self.descriptor(&mut cfg, KIND_SERVED, (service, token), region.len(), dev));
        };
        let seg = shared.segment().clone();
        let slots = &seg.header().slots;
        let Some(slot) = (0..MAX_EXPORTS).find(|&i| {
            let st = slots[i].state.load(Ordering::Relaxed);
            (st == SLOT_FREE || st == SLOT_REVOKED)
                && slots[i].state.compare_exchange(st, u32::MAX, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        }) else {
            bail!(Error::NoMemory, "mmap export: the memory already has {MAX_EXPORTS} live exports");
        };
        let s = &slots[slot];
        // The slot's tag tells this export from a later one in the same slot; it is no secret
        // (every importer of the memory can read the header).
        let tag = NEXT_TAG.fetch_add(1, Ordering::Relaxed);
        let offered =
            seg.fd().try_clone().map_err(|e| fail!(Error::OperatingSystem, "dup: {e}")).and_then(|fd| {
                let mut info = Vec::with_capacity(SEG_INFO_LEN);
                info.extend_from_slice(&(slot as u32).to_le_bytes());
                info.extend_from_slice(&tag.to_le_bytes());
                info.extend_from_slice(&0u64.to_le_bytes());
                info.extend_from_slice(&(region.len() as u64).to_le_bytes());
                info.extend_from_slice(&perms.bits().to_le_bytes());
                Ok(doca_link::rendezvous::offer(doca_link::rendezvous::Offer::Memfd { fd, info })?)
            });
        let offered = match offered {
            Ok(o) => o,
            Err(e) => {
                s.state.store(SLOT_FREE, Ordering::Relaxed);
                return Err(e);
            }
        };
        s.perms.store(perms.bits(), Ordering::Relaxed);
        s.offset.store(0, Ordering::Relaxed);
        s.len.store(region.len() as u64, Ordering::Relaxed);
        s.tag.store(tag, Ordering::Relaxed);
        // Release publishes the fields above to an importer's Acquire load of `state`.
        s.state.store(SLOT_LIVE, Ordering::Release);
        let (service, token) = (offered.service(), offered.token());
        cfg.exports.push((slot, offered));
        tracing::debug!(target: "doca_sdk", "mmap exported {} bytes as slot {slot} for {dev:?}", region.len());
        Ok(self.descriptor(&mut cfg, KIND_SEGMENT, (service, token), region.len(), dev))
    }

    /// `doca_mmap_create_from_export`: maps the memory another process exported. A wrong or
    /// truncated descriptor is `INVALID_VALUE`; a stale one (export revoked, process gone)
    /// or a forged one (token mismatch) is `NOT_FOUND`. The result is started and cannot be
    /// configured.
    ///
    /// An exporter on the other side of the TCP link (its memory service is not in this
    /// side's fabric directory and the link is configured, see [`doca_link::remote`]) is
    /// reached over the link: the import is then served by the library of the exporter's side
    /// ([`crate::linked`]: every access a copy, as for memory registered by address).
    pub fn create_from_export(user_data: Option<Data>, desc: &[u8], dev: &Dev) -> Result<Mmap> {
        let d = Desc::parse(desc)?;
        Mmap::admit("mmap create_from_export")?;
        if !cap_flag(dev.as_devinfo(), &CAP_CREATE_FROM_EXPORT_PCI)? {
            bail!(
                Error::NotSupported,
                "mmap create_from_export: {dev:?} cannot import (topology: cap mmap.create_from_export_pci 0)"
            );
        }
        let map = match crate::linked::across(&d) {
            Some(config) => {
                let client = crate::linked::Client::open(&d, desc, config, dev.as_devinfo().pci_addr())?;
                let import = Import {
                    remote: Remote::Linked(client),
                    from: d.from,
                    dev: Some(dev.clone()),
                    _budget: None,
                };
                let map = Mmap::with(Some(import), d.perms, vec![dev.clone()]);
                let _ = map.inner.base.set(d.addr as usize);
                map.inner.started.store(true, Ordering::Release);
                tracing::debug!(target: "doca_sdk", "mmap imported {} bytes exported by {} across the link", d.len, d.from);
                map
            }
            None => {
                let limits = crate::budget::limits(dev.as_devinfo().topology())?;
                Mmap::import_here(&d, Some(dev), limits)?
            }
        };
        map.inner.user_data.store(user_data.unwrap_or_default().as_u64(), Ordering::Relaxed);
        Ok(map)
    }

    /// Imports `d` from the memory service of a process of this side (in this fabric
    /// directory), as [`Mmap::create_from_export`] describes, charging `limits`; `dev` is
    /// `None` for the map the link's serving thread imports for an importer across the link.
    pub(crate) fn import_here(d: &Desc, dev: Option<&Dev>, limits: crate::budget::Limits) -> Result<Mmap> {
        let devs: Vec<Dev> = dev.into_iter().cloned().collect();
        if d.kind == KIND_SERVED {
            let len = usize::try_from(d.len)
                .map_err(|_| fail!(Error::InvalidValue, "export of {} bytes", d.len))?;
            if len == 0 {
                bail!(Error::InvalidValue, "mmap export descriptor of an empty range");
            }
            let (sock, exporter) = doca_link::rendezvous::take_connection(d.service, &d.token)
                .map_err(|e| fail!(e.into(), "mmap create_from_export: no such live export"))?;
            let budget = Mmap::import_budget(d, limits, exporter)?;
            let client = crate::served::Client::connect(sock, len, d.perms)?;
            let import = Import {
                remote: Remote::Served(client),
                from: d.from,
                dev: dev.cloned(),
                _budget: Some(budget),
            };
            let map = Mmap::with(Some(import), d.perms, devs);
            let _ = map.inner.base.set(d.addr as usize);
            map.inner.started.store(true, Ordering::Release);
            tracing::debug!(target: "doca_sdk", "mmap imported {len} bytes served by {} (pid {})", d.from, d.service.pid);
            return Ok(map);
        }
        let (fd, info, exporter) = doca_link::rendezvous::take_memfd(d.service, &d.token).map_err(|e| {
            fail!(Error::from(e), "mmap create_from_export: no such live export (revoked, stale or forged)")
        })?;
        let budget = Mmap::import_budget(d, limits, exporter)?;
        let (slot, tag) = match <[u8; SEG_INFO_LEN]>::try_from(info.as_slice()) {
            Ok(i) => (
                u32::from_le_bytes(i[..4].try_into().expect("4 bytes")) as usize,
                u64::from_le_bytes(i[4..12].try_into().expect("8 bytes")),
            ),
            Err(_) => {
                bail!(Error::NotFound, "mmap create_from_export: the exporter's answer is not an export")
            }
        };
        let seg = Arc::new(Segment::open(fd).map_err(|e| {
            fail!(
                Error::NotFound,
                "mmap create_from_export: the exporter handed over no export ({})",
                e.name()
            )
        })?);
        if seg.data_len() as u64 != d.len {
            bail!(
                Error::NotFound,
                "mmap create_from_export: the memory is not the one exported (forged descriptor)"
            );
        }
        let Some(s) = seg.header().slots.get(slot) else {
            bail!(
                Error::NotFound,
                "mmap create_from_export: the exporter named slot {slot} of {MAX_EXPORTS}"
            );
        };
        let import = Import {
            remote: Remote::Seg { seg: seg.clone(), slot, tag },
            from: d.from,
            dev: dev.cloned(),
            _budget: Some(budget),
        };
        if !import.live()
            || s.offset.load(Ordering::Relaxed) != d.offset
            || s.len.load(Ordering::Relaxed) != d.len
            || s.perms.load(Ordering::Relaxed) != d.perms.bits()
        {
            bail!(Error::NotFound, "mmap create_from_export: no such live export (revoked, stale or forged)");
        }
        let (offset, len) = (d.offset as usize, d.len as usize);
        if offset.checked_add(len).is_none_or(|end| end > seg.data_len()) {
            bail!(Error::InvalidValue, "mmap export descriptor range {offset}+{len} exceeds the memory");
        }
        let writable =
            d.perms.contains(AccessFlags::PCI_READ_WRITE) || d.perms.contains(AccessFlags::RDMA_WRITE);
        let region = crate::shm::segment_region(&seg, offset, len, writable);
        let map = Mmap::with(Some(import), d.perms, devs);
        let _ = map.inner.base.set(d.addr as usize);
        let _ = map.inner.mapped.set((region, seg.tracker(offset)));
        map.inner.started.store(true, Ordering::Release);
        tracing::debug!(target: "doca_sdk", "mmap imported {len} bytes exported by {} (pid {})", d.from, d.service.pid);
        Ok(map)
    }

    /// Charges what importing `d` maps (its header page and data, and the descriptor kept)
    /// to the exporting process's budget (`peer.mem_per_conn` per import,
    /// `peer.mem_per_process` for the exporter): `NO_MEMORY` beyond, before anything is
    /// mapped; `NOT_FOUND` when the exporter is gone.
    fn import_budget(
        d: &Desc,
        limits: crate::budget::Limits,
        exporter: crate::budget::PeerId,
    ) -> Result<crate::budget::Hold> {
        use crate::budget::Account;
        let page = crate::shm::page_size() as u64;
        let bytes = d.len.div_ceil(page).saturating_add(1).saturating_mul(page);
        let account = Account::open(exporter, limits);
        // A served export maps its connection's window here, and holds its socket.
        let (bytes, fds) =
            if d.kind == KIND_SERVED { (crate::served::window_len() as u64, 1) } else { (bytes, 1) };
        account
            .claim(bytes, fds, "mmap import")
            .map_err(|r| fail!(r.code.into(), "mmap create_from_export: {r}"))
    }

    /// For a map from export: the exporting device's PCI address.
    pub fn exported_by(&self) -> Option<PciAddr> {
        self.inner.import.as_ref().map(|i| i.from)
    }

    /// Takes a reference for one buffer covering `offset..offset+len` of the map: the map
    /// must be started (`BAD_STATE`), live if imported (`NOT_FOUND`), and contain the range
    /// (`INVALID_VALUE`). Counted by [`Mmap::num_bufs`] until dropped. (For doca-buf and
    /// other libraries.)
    pub fn buf_ref(&self, offset: usize, len: usize) -> Result<MapRef> {
        self.check_buf_range(offset, len)?;
        self.inner.users.fetch_add(1, Ordering::SeqCst);
        self.inner.num_bufs.fetch_add(1, Ordering::AcqRel);
        Ok(MapRef { access: MapAccess { inner: self.inner.clone() } })
    }

    /// The checks of [`Mmap::buf_ref`] without taking a reference, for a holder that counts
    /// its buffers itself ([`MapAccess::buf_count`]).
    pub fn check_buf_range(&self, offset: usize, len: usize) -> Result<()> {
        if !self.is_started() {
            bail!(Error::BadState, "buffer on a map that is not started");
        }
        self.inner.check_live()?;
        let map_len = self.inner.len().expect("a started map has a memory range");
        if offset.checked_add(len).is_none_or(|end| end > map_len) {
            bail!(Error::InvalidValue, "buffer range {offset}+{len} outside the map's {map_len} bytes");
        }
        Ok(())
    }

    /// Uncounted access to the bytes of a started map (`BAD_STATE` otherwise), for
    /// libraries that keep the map for their whole life (a comm-channel consumer).
    pub fn access(&self) -> Result<MapAccess> {
        if !self.is_started() {
            bail!(Error::BadState, "access to a map that is not started");
        }
        Ok(MapAccess { inner: self.inner.clone() })
    }

    /// Whether `other` gives access to this very map.
    pub fn owns(&self, other: &MapAccess) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

fn revoke(cfg: &mut Config) {
    cfg.linked = None;
    if let Some(mut server) = cfg.served.take() {
        server.revoke();
    }
    if let Some(Memory::Shared(shared)) = &cfg.memory {
        // Each offer is withdrawn (its token names nothing any more) as its slot is revoked.
        for (slot, _offered) in cfg.exports.drain(..) {
            // Release pairs with importers' Acquire re-checks of the slot.
            shared.segment().header().slots[slot].state.store(SLOT_REVOKED, Ordering::Release);
        }
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // A map from export may have been exported on for RDMA: that export ends too.
        revoke(&mut self.inner.cfg.lock());
    }
}

/// A map from export as the server of its own RDMA export reaches it (see
/// [`Mmap::export_rdma`]): by a weak reference, so the server never keeps the map alive (the
/// map revokes the server when stopped or dropped).
struct Reexported {
    inner: Weak<MmapInner>,
    len: usize,
    writable: bool,
}

impl Reexported {
    fn access(&self) -> Result<MapAccess> {
        match self.inner.upgrade() {
            Some(inner) => Ok(MapAccess { inner }),
            None => Err(fail!(Error::NotFound, "mmap export_rdma: the re-exported map is gone")),
        }
    }
}

impl crate::served::Relay for Reexported {
    fn len(&self) -> usize {
        self.len
    }

    fn is_writable(&self) -> bool {
        self.writable
    }

    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.access()?.read(offset, dst)
    }

    fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.access()?.write(offset, src)
    }
}

impl Drop for MmapInner {
    fn drop(&mut self) {
        let cfg = self.cfg.get_mut();
        if cfg.ever_started {
            if let (Some(cb), Some(mem)) = (cfg.free_cb.take(), cfg.memory.take()) {
                cb(mem);
            }
        }
    }
}

impl MmapInner {
    /// `NOT_FOUND` for an import whose exporter revoked it. Inlined: for a map of this
    /// process it is one test of the import's presence (every DMA copy makes two).
    #[inline]
    fn check_live(&self) -> Result<()> {
        match &self.import {
            Some(i) if !i.live() => Err(revoked()),
            _ => Ok(()),
        }
    }
}

/// The error of a revoked import (out of line: the live check stays a test and a branch).
#[cold]
#[inline(never)]
fn revoked() -> Error {
    fail!(Error::NotFound, "the exporter of this map revoked it (stopped, destroyed or exited)")
}

/// Buffers that one holder has on a map ([`MapAccess::buf_count`]): counted in
/// [`Mmap::num_bufs`] while it lives.
#[derive(Debug)]
pub struct BufCount {
    n: AtomicU32,
    users: Arc<AtomicU32>,
}

impl BufCount {
    /// The holder's buffers on the map now (one holder sets it, under its own lock). Going
    /// from none to some, or back, counts the holder as a user of the map (an atomic
    /// operation on it); other changes are a store.
    pub fn set(&self, n: u32) {
        let before = self.n.load(Ordering::Relaxed);
        if before == 0 && n > 0 {
            self.users.fetch_add(1, Ordering::SeqCst);
        }
        self.n.store(n, Ordering::Release);
        if before > 0 && n == 0 {
            self.users.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// The count last set.
    pub fn get(&self) -> u32 {
        self.n.load(Ordering::Acquire)
    }
}

impl Drop for BufCount {
    /// A holder that goes with buffers out (leaked) stops counting them.
    fn drop(&mut self) {
        if *self.n.get_mut() > 0 {
            self.users.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// See [`MapAccess::pin`].
#[derive(Debug)]
pub struct MapPin {
    _inner: Weak<MmapInner>,
}

/// One buffer's hold on a map: keeps the memory alive and counts in
/// [`Mmap::num_bufs`] until dropped; derefs to [`MapAccess`] for the bytes. Cloning takes
/// another counted reference.
pub struct MapRef {
    access: MapAccess,
}

impl fmt::Debug for MapRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MapRef({:p})", Arc::as_ptr(&self.access.inner))
    }
}

impl Clone for MapRef {
    fn clone(&self) -> Self {
        self.access.inner.users.fetch_add(1, Ordering::SeqCst);
        self.access.inner.num_bufs.fetch_add(1, Ordering::AcqRel);
        MapRef { access: self.access.clone() }
    }
}

impl Drop for MapRef {
    fn drop(&mut self) {
        self.access.inner.num_bufs.fetch_sub(1, Ordering::AcqRel);
        self.access.inner.users.fetch_sub(1, Ordering::SeqCst);
    }
}

impl std::ops::Deref for MapRef {
    type Target = MapAccess;
    fn deref(&self) -> &MapAccess {
        &self.access
    }
}

impl MapRef {
    /// An uncounted handle for the bytes (keeps the memory mapped, not the buffer count).
    pub fn access(&self) -> MapAccess {
        self.access.clone()
    }
}

/// The offset of `addr..addr+len` in a map that has its memory (`INVALID_VALUE` outside).
fn offset_in(inner: &MmapInner, addr: usize, len: usize) -> Result<usize> {
    let base = inner.base();
    let map_len = inner.len().unwrap_or(0);
    match addr.checked_sub(base) {
        Some(off) if off.checked_add(len).is_some_and(|end| end <= map_len) => Ok(off),
        _ => Err(fail!(
            Error::InvalidValue,
            "address range {addr:#x}+{len} is outside the map ({base:#x}+{map_len})"
        )),
    }
}

/// Checked access to a map's bytes; keeps the memory mapped. Positions are offsets from
/// the start of the map's memory range.
#[derive(Clone)]
pub struct MapAccess {
    inner: Arc<MmapInner>,
}

impl fmt::Debug for MapAccess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MapAccess({:p})", Arc::as_ptr(&self.inner))
    }
}

impl PartialEq for MapAccess {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
impl Eq for MapAccess {}

impl MapAccess {
    #[inline]
    fn region(&self) -> &Region {
        self.mapped().0
    }

    #[inline]
    fn tracker(&self) -> &Tracker {
        self.mapped().1
    }

    /// The memory as mapped here and its tracker, in one look.
    #[inline]
    fn mapped(&self) -> (&Region, &Tracker) {
        let (region, tracker) = self.inner.mapped.get().expect("a referenced map has a region");
        (region, tracker)
    }

    /// The map's length in bytes.
    pub fn map_len(&self) -> usize {
        self.inner.len().expect("a referenced map has a memory range")
    }

    /// A counter of buffers on this map that one holder keeps (a buffer inventory, under its
    /// own lock), added to [`Mmap::num_bufs`] while it lives: taking or returning a buffer
    /// then costs the holder a store, not an atomic operation on the map and a reference.
    pub fn buf_count(&self) -> Arc<BufCount> {
        let count = Arc::new(BufCount { n: AtomicU32::new(0), users: self.inner.users.clone() });
        let mut counts = self.inner.counts.lock();
        counts.retain(|c| c.strong_count() > 0);
        counts.push(Arc::downgrade(&count));
        count
    }

    /// Keeps this map's [`MapAccess::id`] from being given to another map while the pin
    /// lives, without keeping the map (its memory) alive.
    pub fn pin(&self) -> MapPin {
        MapPin { _inner: Arc::downgrade(&self.inner) }
    }

    /// The map's identity, for tables keyed by map: the same for every handle of one map,
    /// different from every other map alive at the same time (a number, so a table keyed
    /// by it keeps no map alive; a map created after this one went may get the same number).
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// The address of the map's first byte (C's memrange start): for a map from export, the
    /// exporter's address.
    pub fn map_addr(&self) -> usize {
        self.inner.base()
    }

    /// The offset in the map of `addr..addr+len` (addresses as [`MapAccess::map_addr`]
    /// counts them); outside the map → `INVALID_VALUE`.
    pub fn offset_of(&self, addr: usize, len: usize) -> Result<usize> {
        offset_in(&self.inner, addr, len)
    }

    /// Whether the memory may be written.
    pub fn is_writable(&self) -> bool {
        match self.inner.far() {
            Some(c) => c.is_writable(),
            None => self.region().is_writable(),
        }
    }

    /// Whether the map is from an export.
    pub fn is_from_export(&self) -> bool {
        self.inner.import.is_some()
    }

    /// Whether another process can map this memory (the one-copy fast path).
    pub fn is_shareable(&self) -> bool {
        (self.is_from_export() && self.inner.far().is_none())
            || self.inner.cfg.lock().memory.as_ref().is_some_and(Memory::is_shareable)
    }

    /// How another process can map this very memory: a duplicate of the memfd and where the
    /// map starts in it. `None` unless the memory is shareable. (For libraries that hand
    /// memory to the peer, e.g. a comm-channel consumer.)
    pub fn share(&self) -> Result<Option<crate::SharedRegion>> {
        let seg = match (&self.inner.import, &self.inner.cfg.lock().memory) {
            (Some(Import { remote: Remote::Seg { seg, .. }, .. }), _) => seg.clone(),
            (None, Some(Memory::Shared(m))) => m.segment().clone(),
            _ => return Ok(None),
        };
        let start = self.region().addr() - seg.data_ptr().as_ptr() as usize;
        let fd = seg.fd().try_clone().map_err(|e| fail!(Error::OperatingSystem, "dup: {e}"))?;
        Ok(Some(crate::SharedRegion { fd, offset: start, len: self.region().len() }))
    }

    /// The map's permissions.
    pub fn permissions(&self) -> AccessFlags {
        self.inner.cfg.lock().perms
    }

    /// Whether `dev` may reach this memory: it was added to the map (`doca_mmap_add_dev`),
    /// or the map was created from an export with it. What a library checks before its
    /// device touches a buffer of the map (e.g. a DMA copy).
    pub fn has_dev(&self, dev: &Dev) -> bool {
        match &self.inner.import {
            Some(i) => i.dev.as_ref() == Some(dev),
            None => self.inner.cfg.lock().devs.contains(dev),
        }
    }

    /// `Ok` unless the map is an import whose exporter revoked it (`NOT_FOUND`).
    #[inline]
    pub fn check_live(&self) -> Result<()> {
        self.inner.check_live()
    }

    /// Whether the map is usable: false for an import whose exporter revoked it (no log
    /// line, for a watcher that looks often).
    pub(crate) fn is_live(&self) -> bool {
        self.inner.import.as_ref().is_none_or(Import::live)
    }

    /// [`MapAccess::has_dev`] and [`MapAccess::permissions`] in one look: the map's
    /// permissions if `dev` may reach it, else `None`.
    pub fn dev_permissions(&self, dev: &Dev) -> Option<AccessFlags> {
        let cfg = self.inner.cfg.lock();
        let reached = match &self.inner.import {
            Some(i) => i.dev.as_ref() == Some(dev),
            None => cfg.devs.contains(dev),
        };
        reached.then_some(cfg.perms)
    }

    /// Copies `len` bytes at `offset` of this map into the map `dst` at `dst_offset`, with
    /// no intermediate buffer (what a DMA engine does): both ranges are checked (bounds, or
    /// ranges overlapping in one memory: `INVALID_VALUE`; a read-only destination:
    /// `NOT_PERMITTED`; a revoked import on either side: `NOT_FOUND`; bytes borrowed in this
    /// process in a conflicting way: `IN_USE`). Takes the memories' locks only when a
    /// borrow could conflict (see [`MapAccess::copy_to`]).
    ///
    /// A map from an export of memory registered by address (served by the exporter's
    /// library, see [`crate::served`]) copies through its connection: one request per
    /// window's worth, the bytes copied from (or into) the window straight into (or out of)
    /// the other map's memory.
    pub fn copy_to_map(&self, offset: usize, len: usize, dst: &MapAccess, dst_offset: usize) -> Result<()> {
        if self.inner.import.is_none() && dst.inner.import.is_none() {
            // Two maps of this process's memory: neither can be revoked, both are mapped here.
            let ((from, from_tracker), (to, to_tracker)) = (self.mapped(), dst.mapped());
            return from_tracker.copy_to(from, offset, to_tracker, to, dst_offset, len);
        }
        self.copy_imported(offset, len, dst, dst_offset)
    }

    /// [`MapAccess::copy_to_map`] when either map is created from an export: both checked
    /// live first. Out of line: the copy between two maps of this process stays short.
    #[inline(never)]
    fn copy_imported(&self, offset: usize, len: usize, dst: &MapAccess, dst_offset: usize) -> Result<()> {
        self.inner.check_live()?;
        dst.inner.check_live()?;
        match (self.inner.far(), dst.inner.far()) {
            (None, None) => {
                self.tracker().copy_to(self.region(), offset, dst.tracker(), dst.region(), dst_offset, len)
            }
            (Some(from), None) => {
                let mut to = dst.tracker().bytes_mut(dst.region(), dst_offset, len)?;
                from.read(offset, &mut to)
            }
            (None, Some(to)) => {
                let from = self.tracker().bytes(self.region(), offset, len)?;
                to.write(dst_offset, &from)
            }
            (Some(from), Some(to)) => {
                let mut bounce = vec![0u8; len];
                from.read(offset, &mut bounce)?;
                to.write(dst_offset, &bounce)
            }
        }
    }

    fn no_served_guard(&self) -> Result<()> {
        if self.inner.far().is_some() {
            bail!(
                Error::NotSupported,
                "the memory of this map is in the exporting process (registered by address there): copy, do not borrow"
            );
        }
        Ok(())
    }

    /// Whether this map's memory is mapped in this process (its own memory, or an import of
    /// shared memory), so [`MapAccess::atomic_cas_u64`] and
    /// [`MapAccess::atomic_fetch_add_u64`] work on it; an import of memory registered by
    /// address (served by the exporter's library) is not.
    pub fn is_mapped_here(&self) -> bool {
        self.inner.far().is_none()
    }

    /// Compare-and-swap of the 8 bytes at `offset` (native byte order): writes `swap` when
    /// they hold `cmp`; returns the value before. A real atomic on the mapped memory,
    /// atomic against the atomics of every process mapping it (an exporter's own CPU atomics
    /// included). `INVALID_VALUE` out of bounds or not 8-byte aligned; `NOT_PERMITTED` on
    /// read-only memory (an import whose export grants `RDMA_ATOMIC` takes atomics even
    /// without `RDMA_WRITE`); `NOT_SUPPORTED` when the memory is not mapped here
    /// ([`MapAccess::is_mapped_here`]).
    pub fn atomic_cas_u64(&self, offset: usize, cmp: u64, swap: u64) -> Result<u64> {
        self.atomic(offset, crate::shm::Atomic64::CompareSwap { cmp, swap })
    }

    /// Fetch-and-add (wrapping) of the 8 bytes at `offset`; returns the value before. As
    /// [`MapAccess::atomic_cas_u64`].
    pub fn atomic_fetch_add_u64(&self, offset: usize, add: u64) -> Result<u64> {
        self.atomic(offset, crate::shm::Atomic64::FetchAdd(add))
    }

    fn atomic(&self, offset: usize, op: crate::shm::Atomic64) -> Result<u64> {
        self.inner.check_live()?;
        if !self.is_mapped_here() {
            bail!(
                Error::NotSupported,
                "an atomic on memory registered by address in the exporting process: not mapped here"
            );
        }
        let atomic_ok = self.is_from_export() && self.permissions().contains(AccessFlags::RDMA_ATOMIC);
        self.tracker().atomic_u64(self.region(), offset, op, atomic_ok)
    }

    /// Copies `src` into the map at `offset` (bounds: `INVALID_VALUE`; read-only memory:
    /// `NOT_PERMITTED`; bytes borrowed in this process: `IN_USE`).
    pub fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.inner.check_live()?;
        match self.inner.far() {
            Some(c) => c.write(offset, src),
            None => self.tracker().write(self.region(), offset, src),
        }
    }

    /// Copies `len` bytes at `offset` of this map into `dst` at `dst_offset`, with no
    /// intermediate buffer: both ranges are checked (bounds: `INVALID_VALUE`; a revoked
    /// import: `NOT_FOUND`; bytes borrowed in this process in a conflicting way: `IN_USE`).
    pub fn copy_to(
        &self,
        offset: usize,
        len: usize,
        dst: &crate::RemoteMem,
        dst_offset: usize,
    ) -> Result<()> {
        self.inner.check_live()?;
        let (to, region) = dst.parts();
        if let Some(c) = self.inner.far() {
            let mut guard = to.bytes_mut(region, dst_offset, len)?;
            return c.read(offset, &mut guard);
        }
        self.tracker().copy_to(self.region(), offset, to, region, dst_offset, len)
    }

    /// Copies bytes at `offset` into `dst`.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.inner.check_live()?;
        match self.inner.far() {
            Some(c) => c.read(offset, dst),
            None => self.tracker().read(self.region(), offset, dst),
        }
    }

    /// Borrows `offset..offset+len` for reading: `IN_USE` while any part of it is
    /// borrowed for writing in this process.
    /// A map from a served export has no mapping here: `NOT_SUPPORTED` (copy instead).
    pub fn bytes(&self, offset: usize, len: usize) -> Result<Bytes<'_>> {
        self.inner.check_live()?;
        self.no_served_guard()?;
        self.tracker().bytes(self.region(), offset, len)
    }

    /// Borrows `offset..offset+len` for writing: `IN_USE` while any part of it is
    /// borrowed in this process; `NOT_PERMITTED` on read-only memory.
    /// A map from a served export: `NOT_SUPPORTED`, as [`MapAccess::bytes`].
    pub fn bytes_mut(&self, offset: usize, len: usize) -> Result<BytesMut<'_>> {
        self.inner.check_live()?;
        self.no_served_guard()?;
        self.tracker().bytes_mut(self.region(), offset, len)
    }
}

/// For attack harnesses only (the tests' hostile process), never for applications: a
/// request to the served export of descriptor `desc` left hanging on purpose (see
/// [`crate::served::stalled_request`]).
#[doc(hidden)]
pub fn stalled_served_request(
    desc: &[u8],
    write: bool,
    offset: u64,
    len: u64,
) -> Result<crate::served::StalledRequest> {
    let d = Desc::parse(desc)?;
    crate::served::stalled_request(d.service, &d.token, write, offset, len)
}

/// For attack harnesses only (the tests' hostile importer), never for applications: the
/// memfd of the whole pages a served export of descriptor `desc` shares with importers of
/// other processes (unchecked, as the exporter sent it: closed on a closing thread), with where they start in the range and their length (`None` when it
/// shares none: everything served). See [`crate::served::shared_pages`].
#[doc(hidden)]
pub fn served_shared_pages(desc: &[u8]) -> Result<Option<(doca_link::discard::PeerFd, usize, usize)>> {
    let d = Desc::parse(desc)?;
    crate::served::shared_pages(d.service, &d.token)
}

/// The map the link's serving thread imports for an importer across the link
/// ([`crate::linked`]), held with its access while the stream is served.
struct LinkedRange {
    _map: Mmap,
    access: MapAccess,
}

/// [`crate::linked::ImportHere`]: imports the export here, under the process's own budget
/// (no device: the importer's side checked its own).
fn import_for_link(d: &Desc) -> Result<Box<dyn crate::linked::Range>> {
    let limits = crate::budget::global_limits()?;
    let map = Mmap::import_here(d, None, limits)?;
    let access = map.access()?;
    Ok(Box::new(LinkedRange { _map: map, access }))
}

impl crate::linked::Range for LinkedRange {
    fn map_len(&self) -> usize {
        self.access.map_len()
    }

    fn permissions(&self) -> AccessFlags {
        self.access.permissions()
    }

    fn is_writable(&self) -> bool {
        self.access.is_writable()
    }

    fn is_live(&self) -> bool {
        self.access.is_live()
    }

    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.access.read(offset, dst)
    }

    fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.access.write(offset, src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::{Header, Slot};

    /// An exporter (or anyone with the token's offer) handing over memory that could be
    /// truncated under the importer (an unsealed memfd dressed up as an export) or no memory
    /// at all (a pipe) is refused before anything is mapped.
    #[test]
    fn an_export_whose_memory_is_not_sealed_is_not_imported() {
        crate::private_fabric();
        let dev = doca_core::open_device_with_pci("b1:00.0", None).unwrap();
        let real = Mmap::create().unwrap();
        real.set_memrange(crate::SharedMem::alloc(4096).unwrap()).unwrap();
        real.set_permissions(AccessFlags::PCI_READ_WRITE).unwrap();
        real.add_dev(&dev).unwrap();
        real.start().unwrap();
        let mut desc = real.export_pci(&dev).unwrap();
        let d = Desc::parse(&desc).unwrap();

        let page = crate::shm::page_size();
        let fake = rustix::fs::memfd_create("fake-export", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&fake, 2 * page as u64).unwrap();
        let header = [u64::from_le_bytes(*b"DOCAEMU1"), page as u64];
        for (i, v) in header.iter().enumerate() {
            rustix::io::pwrite(&fake, &v.to_ne_bytes(), (i * 8) as u64).unwrap();
        }
        let at = std::mem::offset_of!(Header, slots);
        let mut slot = Vec::new();
        slot.extend_from_slice(&crate::shm::SLOT_LIVE.to_ne_bytes());
        slot.extend_from_slice(&d.perms.bits().to_ne_bytes());
        slot.extend_from_slice(&d.offset.to_ne_bytes());
        slot.extend_from_slice(&d.len.to_ne_bytes());
        slot.extend_from_slice(&7u64.to_ne_bytes());
        assert!(slot.len() <= std::mem::size_of::<Slot>());
        rustix::io::pwrite(&fake, &slot, at as u64).unwrap();
        let mut info = Vec::new();
        info.extend_from_slice(&0u32.to_le_bytes());
        info.extend_from_slice(&7u64.to_le_bytes());
        info.extend_from_slice(&0u64.to_le_bytes());
        info.extend_from_slice(&d.len.to_le_bytes());
        info.extend_from_slice(&d.perms.bits().to_le_bytes());
        let (pipe, _w) = rustix::pipe::pipe().unwrap();
        for fd in [fake, pipe] {
            use doca_link::rendezvous::{offer, Offer};
            let offered = offer(Offer::Memfd { fd, info: info.clone() }).unwrap();
            desc[28..44].copy_from_slice(&offered.token());
            assert_eq!(Mmap::create_from_export(None, &desc, &dev).unwrap_err(), Error::NotFound);
        }
        // A token the service does not know.
        desc[30] ^= 1;
        assert_eq!(Mmap::create_from_export(None, &desc, &dev).unwrap_err(), Error::NotFound);
    }
}
