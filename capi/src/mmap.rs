//! `doca_mmap.h`: maps over the application's own memory.

use std::ffi::c_void;
use std::ptr::NonNull;

use doca_mmap::{AccessFlags, Memory, Mmap};

use crate::ctx::out;
use crate::dev::{dev, DocaDev};
use crate::handles::Handles;
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// `struct doca_mmap`.
pub struct DocaMmap(pub(crate) Mmap);

static MMAPS: Handles = Handles::new();

pub(crate) fn mmap<'a>(p: *const DocaMmap) -> Option<&'a Mmap> {
    // SAFETY: MMAPS only holds DocaMmap handles.
    unsafe { MMAPS.get(p) }.map(|m| &m.0)
}

/// `doca_mmap_create`.
///
/// # Safety
/// `mmap` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_create(mmap: *mut *mut DocaMmap) -> DocaError {
    guarded(|| match Mmap::create() {
        Ok(m) => out(mmap, MMAPS.add(DocaMmap(m))),
        Err(e) => e.code(),
    })
}

/// `doca_mmap_destroy`: `NOT_PERMITTED` while buffers point into it (the map stays).
///
/// # Safety
/// `mmap` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_destroy(mmap: *mut DocaMmap) -> DocaError {
    guarded(|| {
        let Some(m) = self::mmap(mmap) else { return invalid() };
        if m.num_bufs() > 0 {
            return doca_core::Error::NotPermitted.code();
        }
        // SAFETY: MMAPS only holds DocaMmap handles; freed once, here.
        let Some(boxed) = (unsafe { MMAPS.remove(mmap) }) else { return invalid() };
        match boxed.0.destroy() {
            Ok(()) => DOCA_SUCCESS,
            Err(refused) => {
                // Only a buffer made by another thread since the check above gets here (a
                // misuse: no call may race a destroy). The handle is gone; the map is kept
                // alive for the buffers that point into it.
                std::mem::forget(refused.value);
                refused.error.code()
            }
        }
    })
}

/// `doca_mmap_set_memrange`: the application's memory `addr..addr+len`, which must stay valid
/// until the map is destroyed. Once, before start.
///
/// # Safety
/// `addr..addr+len` is readable and writable memory that outlives the map.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_set_memrange(
    mmap: *mut DocaMmap,
    addr: *mut c_void,
    len: usize,
) -> DocaError {
    guarded(|| {
        let (Some(m), Some(ptr)) = (self::mmap(mmap), NonNull::new(addr as *mut u8)) else {
            return invalid();
        };
        // the caller's contract: the memory is valid for reads and writes while the
        // map lives and is reached only through the map's buffers meanwhile.
        // SAFETY: see above.
        let memory = unsafe { Memory::from_raw(ptr, len, true) };
        doca_core::Error::code_of(&m.set_memrange(memory))
    })
}

/// `doca_mmap_get_memrange`.
///
/// # Safety
/// `addr` and `len` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_get_memrange(
    mmap: *const DocaMmap,
    addr: *mut *mut c_void,
    len: *mut usize,
) -> DocaError {
    guarded(|| {
        let Some(m) = self::mmap(mmap) else { return invalid() };
        if addr.is_null() || len.is_null() {
            return invalid();
        }
        match m.memrange() {
            Ok((a, l)) => {
                out(addr, a as *mut c_void);
                out(len, l)
            }
            Err(e) => e.code(),
        }
    })
}

/// `doca_mmap_set_permissions`: `DOCA_ACCESS_FLAG_*` values.
#[no_mangle]
pub extern "C" fn doca_mmap_set_permissions(mmap: *mut DocaMmap, access_mask: u32) -> DocaError {
    guarded(|| match self::mmap(mmap) {
        Some(m) => match AccessFlags::from_mask(access_mask) {
            Ok(_) => doca_core::Error::code_of(&m.set_permissions_mask(access_mask)),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// `doca_mmap_add_dev`.
#[no_mangle]
pub extern "C" fn doca_mmap_add_dev(mmap: *mut DocaMmap, dev: *mut DocaDev) -> DocaError {
    guarded(|| match (self::mmap(mmap), self::dev(dev)) {
        (Some(m), Some(d)) => doca_core::Error::code_of(&m.add_dev(&d.dev)),
        _ => invalid(),
    })
}

/// `doca_mmap_rm_dev`.
#[no_mangle]
pub extern "C" fn doca_mmap_rm_dev(mmap: *mut DocaMmap, dev: *mut DocaDev) -> DocaError {
    guarded(|| match (self::mmap(mmap), self::dev(dev)) {
        (Some(m), Some(d)) => doca_core::Error::code_of(&m.rm_dev(&d.dev)),
        _ => invalid(),
    })
}

/// `doca_mmap_start`.
#[no_mangle]
pub extern "C" fn doca_mmap_start(mmap: *mut DocaMmap) -> DocaError {
    guarded(|| match self::mmap(mmap) {
        Some(m) => doca_core::Error::code_of(&m.start()),
        None => invalid(),
    })
}

/// `doca_mmap_stop`: `NOT_PERMITTED` while buffers point into it.
#[no_mangle]
pub extern "C" fn doca_mmap_stop(mmap: *mut DocaMmap) -> DocaError {
    guarded(|| match self::mmap(mmap) {
        Some(m) => doca_core::Error::code_of(&m.stop()),
        None => invalid(),
    })
}

/// `doca_mmap_get_num_bufs`.
///
/// # Safety
/// `num_bufs` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_get_num_bufs(mmap: *const DocaMmap, num_bufs: *mut u32) -> DocaError {
    guarded(|| match self::mmap(mmap) {
        Some(m) => out(num_bufs, m.num_bufs()),
        None => invalid(),
    })
}
