//! `union doca_data`: the 8-byte user value that DOCA hands back in callbacks.

use std::fmt;

/// `union doca_data { void *ptr; uint64_t u64; }`: an opaque 64-bit user value.
///
/// Contexts, tasks, connections and maps carry one; DOCA passes it back untouched. Store an
/// integer ([`Data::from_u64`]) or an address ([`Data::from_ptr`]); reading a pointer back is
/// safe, dereferencing it is the caller's business, as in C. Closures can capture state
/// instead, which is usually nicer in Rust; both work.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(transparent)]
pub struct Data(u64);

impl Data {
    /// The zero value, what every object starts with.
    pub const NONE: Data = Data(0);

    /// `.u64 = v`.
    pub const fn from_u64(v: u64) -> Self {
        Data(v)
    }

    /// `.u64`.
    pub const fn as_u64(self) -> u64 {
        self.0
    }

    /// `.ptr = p`.
    pub fn from_ptr<T>(p: *const T) -> Self {
        Data(p as usize as u64)
    }

    /// `.ptr`, as a pointer to `T`.
    pub fn as_ptr<T>(self) -> *mut T {
        self.0 as usize as *mut T
    }

    /// `.u64` as a `usize` (e.g. an index into the application's own table).
    pub const fn as_usize(self) -> usize {
        self.0 as usize
    }
}

impl From<u64> for Data {
    fn from(v: u64) -> Self {
        Data(v)
    }
}

impl From<usize> for Data {
    fn from(v: usize) -> Self {
        Data(v as u64)
    }
}

impl From<Data> for u64 {
    fn from(d: Data) -> u64 {
        d.0
    }
}

impl fmt::Debug for Data {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Data({:#x})", self.0)
    }
}
