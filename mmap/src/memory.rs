//! The memory a map covers, and the shared allocator.

#![allow(unsafe_code)]

use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

use doca_core::{fail, Error, Result};

use crate::shm::{Bytes, BytesMut, Region, Segment, Tracker, Window};

/// Page-aligned memory backed by a memfd, so that another process can map the very same
/// pages: the memory to give a map that will be exported, and the memory of consumers that
/// want the one-copy fast path.
///
/// Fill it with [`SharedMem::write`] or the guards of [`SharedMem::bytes_mut`], then give
/// it to a map with [`crate::Mmap::set_memrange`]; the map's free callback hands it back.
/// Access is checked like a map's: within this process, bytes borrowed for writing are never
/// borrowed twice (`IN_USE`), through this handle or any other mapping of the same memory
/// (an import of it, a peer's view of it in the same process).
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// use doca_mmap::SharedMem;
/// let mem = SharedMem::alloc(4096)?;
/// mem.write(0, b"hello")?;
/// let mut out = [0u8; 5];
/// mem.read(0, &mut out)?;
/// assert_eq!(&out, b"hello");
/// let mut guard = mem.bytes_mut(100, 4)?;
/// guard.copy_from_slice(b"abcd");
/// assert_eq!(mem.read(100, &mut [0u8; 4]).unwrap_err(), doca_core::Error::InUse);
/// # Ok::<(), doca_core::Error>(())
/// ```
pub struct SharedMem {
    seg: Arc<Segment>,
    region: Region,
    tracker: Tracker,
}

impl SharedMem {
    /// `len` zeroed bytes (`len > 0`), page-aligned. `NO_MEMORY` when the system refuses.
    pub fn alloc(len: usize) -> Result<SharedMem> {
        let seg = Arc::new(Segment::create(len)?);
        let (region, tracker) = (seg.data_region(true), seg.tracker(0));
        Ok(SharedMem { seg, region, tracker })
    }

    /// Copies `src` in at `offset` (`INVALID_VALUE` out of bounds, `IN_USE` while borrowed).
    pub fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.tracker.write(&self.region, offset, src)
    }

    /// Copies `dst.len()` bytes out from `offset`.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.tracker.read(&self.region, offset, dst)
    }

    /// Borrows `offset..offset+len` for reading (`IN_USE` while borrowed for writing).
    pub fn bytes(&self, offset: usize, len: usize) -> Result<Bytes<'_>> {
        self.tracker.bytes(&self.region, offset, len)
    }

    /// Borrows `offset..offset+len` for writing (`IN_USE` while borrowed at all).
    pub fn bytes_mut(&self, offset: usize, len: usize) -> Result<BytesMut<'_>> {
        self.tracker.bytes_mut(&self.region, offset, len)
    }

    /// The number of usable bytes (as asked for).
    pub fn len(&self) -> usize {
        self.seg.data_len()
    }

    /// Always false: an allocation has at least one byte.
    pub fn is_empty(&self) -> bool {
        false
    }

    pub(crate) fn segment(&self) -> &Arc<Segment> {
        &self.seg
    }

    /// How another process can map this memory (see [`SharedRegion`]).
    pub fn share(&self) -> Result<SharedRegion> {
        let fd = self.seg.fd().try_clone().map_err(|e| fail!(Error::OperatingSystem, "dup: {e}"))?;
        Ok(SharedRegion { fd, offset: 0, len: self.len() })
    }
}

/// Memory another process can map: a memfd of the shared allocator, and the byte range of
/// interest within its data area. Send the fd over a Unix socket; [`RemoteMem::open`] maps it.
#[derive(Debug)]
pub struct SharedRegion {
    /// The memfd (a duplicate, owned).
    pub fd: std::os::fd::OwnedFd,
    /// Where the range starts in the data area.
    pub offset: usize,
    /// Its length.
    pub len: usize,
}

/// Shared memory received from another process, mapped here: bounds-checked copies in and
/// out. Only the range asked for is mapped (page-rounded), whatever the size of the file.
/// The pages stay mapped while this value lives, whatever the other side does (they cannot
/// shrink: the memfd is sealed). When the memory is mapped elsewhere in this process too (the
/// peer runs in the same process), copies go through the same borrow tracker.
pub struct RemoteMem {
    win: Window,
    region: Region,
    tracker: Tracker,
}

impl fmt::Debug for RemoteMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RemoteMem({} bytes, {} mapped)", self.region.len(), self.win.mapped_len())
    }
}

impl RemoteMem {
    /// Maps `offset..offset+len` of the data area of a memfd of the shared allocator
    /// received from the peer (and nothing else of it). Not such a memfd → `NOT_FOUND`; a
    /// range outside it → `INVALID_VALUE`. The descriptor is closed once mapped (on a
    /// closing thread when it is no such memfd, [`doca_link::discard`]: the peer chose it).
    pub fn open(fd: impl Into<doca_link::discard::PeerFd>, offset: usize, len: usize) -> Result<RemoteMem> {
        // Copies only: no borrow is taken through this mapping.
        let win = Segment::open_window(fd, offset, len)?;
        // SAFETY: the window maps `len` bytes from its start while `win` (owned by self) lives.
        let region = unsafe { Region::new(win.start(), len, true) };
        let tracker = win.tracker(offset);
        Ok(RemoteMem { win, region, tracker })
    }

    /// The bytes [`RemoteMem::open`] maps for `offset..offset+len` (page-rounded): what a
    /// budget charges before opening. `None` when that does not fit in `usize`.
    pub fn mapped_len(offset: usize, len: usize) -> Option<usize> {
        crate::shm::window_of(offset, len).map(|(_, l)| l)
    }

    /// Length of the range.
    pub fn len(&self) -> usize {
        self.region.len()
    }

    /// Whether the range is empty (never: `open` refuses it).
    pub fn is_empty(&self) -> bool {
        self.region.is_empty()
    }

    /// Copies `src` to `offset` of the range (`INVALID_VALUE` out of bounds; `IN_USE` while
    /// this process borrows those bytes through another mapping). The peer owns these bytes
    /// too: the caller follows the protocol that says whose turn it is.
    pub fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        let _ = &self.win;
        self.tracker.write(&self.region, offset, src)
    }

    /// Copies `dst.len()` bytes from `offset` of the range.
    pub fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.tracker.read(&self.region, offset, dst)
    }

    /// Where copies into it are checked, and its bytes.
    pub(crate) fn parts(&self) -> (&Tracker, &Region) {
        (&self.tracker, &self.region)
    }
}

impl fmt::Debug for SharedMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedMem({} bytes)", self.len())
    }
}

/// Memory the application owns elsewhere (e.g. from C), registered by address.
pub struct RawMem {
    ptr: NonNull<u8>,
    len: usize,
    writable: bool,
}

// SAFETY: the creator of a `RawMem` promised (see `Memory::from_raw`) the memory outlives the
// map and may be used from any thread.
unsafe impl Send for RawMem {}

impl fmt::Debug for RawMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawMem({:p}, {} bytes)", self.ptr, self.len)
    }
}

impl RawMem {
    /// The address and length given at registration.
    pub fn parts(&self) -> (*mut u8, usize) {
        (self.ptr.as_ptr(), self.len)
    }
}

/// What a map's memory range is. Every kind can be exported: shared memory is mapped by the
/// importer, the others are served by this library's threads ([`crate::served`]).
#[derive(Debug)]
pub enum Memory {
    /// From the shared allocator: exportable, and the one-copy fast path.
    Shared(SharedMem),
    /// An owned heap buffer (the map keeps it; the free callback returns it).
    Vec(Vec<u8>),
    /// Read-only static bytes (e.g. a constant string a producer sends).
    Static(&'static [u8]),
    /// Memory registered by address (see [`Memory::from_raw`]).
    Raw(RawMem),
}

impl Memory {
    /// Memory known only by address, e.g. allocated by C code.
    ///
    /// # Safety
    /// `ptr..ptr+len` must be valid for reads (and for writes when `writable`) from any
    /// thread until the map's free callback runs (or the map is dropped, if none is set),
    /// and must not be accessed through other means while buffers of the map use it.
    pub unsafe fn from_raw(ptr: NonNull<u8>, len: usize, writable: bool) -> Memory {
        Memory::Raw(RawMem { ptr, len, writable })
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        match self {
            Memory::Shared(s) => s.len(),
            Memory::Vec(v) => v.len(),
            Memory::Static(s) => s.len(),
            Memory::Raw(r) => r.len,
        }
    }

    /// Whether it has no byte at all (refused by `set_memrange`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether another process can map it (only shared memory; the others are served).
    pub fn is_shareable(&self) -> bool {
        matches!(self, Memory::Shared(_))
    }

    /// Where borrows of the bytes are tracked: the memory's own tracker for shared memory
    /// (shared with its other mappings in this process), a new one otherwise.
    pub(crate) fn tracker(&self) -> Tracker {
        match self {
            Memory::Shared(s) => s.tracker.clone(),
            _ => Tracker::default(),
        }
    }

    /// Where the bytes are. The `Vec`'s heap buffer never moves: the map never grows it.
    pub(crate) fn region(&mut self) -> Result<Region> {
        let (ptr, len, writable) = match self {
            Memory::Shared(s) => (s.seg.data_ptr(), s.len(), true),
            Memory::Vec(v) => (NonNull::new(v.as_mut_ptr()).ok_or(Error::InvalidValue)?, v.len(), true),
            Memory::Static(s) => (NonNull::from(*s).cast::<u8>(), s.len(), false),
            Memory::Raw(r) => (r.ptr, r.len, r.writable),
        };
        if len == 0 {
            return Err(fail!(Error::InvalidValue, "a memory range needs at least one byte"));
        }
        // Each variant keeps its bytes alive and in place while the map holds the `Memory`
        // (segment mapped, Vec never resized, static, or the raw contract); the map outlives
        // every use of the region.
        // SAFETY: see above.
        Ok(unsafe { Region::new(ptr, len, writable) })
    }
}

impl From<SharedMem> for Memory {
    fn from(m: SharedMem) -> Memory {
        Memory::Shared(m)
    }
}

impl From<Vec<u8>> for Memory {
    fn from(v: Vec<u8>) -> Memory {
        Memory::Vec(v)
    }
}

impl From<Box<[u8]>> for Memory {
    fn from(b: Box<[u8]>) -> Memory {
        Memory::Vec(b.into_vec())
    }
}

impl From<&'static [u8]> for Memory {
    fn from(s: &'static [u8]) -> Memory {
        Memory::Static(s)
    }
}

impl From<&'static str> for Memory {
    fn from(s: &'static str) -> Memory {
        Memory::Static(s.as_bytes())
    }
}
