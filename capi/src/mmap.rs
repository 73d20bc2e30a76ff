//! `doca_mmap.h`: maps over the application's own memory.

use std::ffi::c_void;
use std::ptr::NonNull;

use doca_mmap::{AccessFlags, Memory, Mmap};

use crate::check::{bytes, non_null, out, refuse};
use crate::ctx::DocaData;
use crate::dev::{dev, devinfo, DocaDev, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// `struct doca_mmap`, and the export descriptors it gave out (valid while it lives).
pub struct DocaMmap(pub(crate) Mmap, parking_lot::Mutex<Vec<Box<[u8]>>>);

static MMAPS: Handles = Handles::new(Kind::Mmap);

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
    guarded("doca_mmap_create", || {
        if let Err(e) = non_null(mmap, "out-parameter") {
            return e;
        }
        match Mmap::create() {
            Ok(m) => out(mmap, MMAPS.add(DocaMmap(m, Default::default()))),
            Err(e) => e.code(),
        }
    })
}

/// `doca_mmap_destroy`: `NOT_PERMITTED` while buffers point into it (the map stays).
///
/// # Safety
/// `mmap` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_destroy(mmap: *mut DocaMmap) -> DocaError {
    guarded("doca_mmap_destroy", || {
        let Some(m) = self::mmap(mmap) else { return invalid() };
        if m.num_bufs() > 0 && !m.is_thread_safe() {
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
/// until the map is destroyed. Once, before start. A range that wraps around the address
/// space or is longer than `PTRDIFF_MAX` bytes is `INVALID_VALUE`.
///
/// # Safety
/// `addr..addr+len` is readable and writable memory that outlives the map.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_set_memrange(
    mmap: *mut DocaMmap,
    addr: *mut c_void,
    len: usize,
) -> DocaError {
    guarded("doca_mmap_set_memrange", || {
        let Some(m) = self::mmap(mmap) else { return invalid() };
        let Some(ptr) = NonNull::new(addr as *mut u8) else { return refuse(|| "NULL addr".into()) };
        // No range of memory is longer than isize::MAX bytes (Rust's limit for one object,
        // which every buffer over the map relies on) or wraps around the address space.
        if len > isize::MAX as usize || (addr as usize).checked_add(len).is_none() {
            return refuse(|| format!("the range {addr:p} + {len} bytes is not memory"));
        }
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
    guarded("doca_mmap_get_memrange", || {
        let Some(m) = self::mmap(mmap) else { return invalid() };
        if let Err(e) = non_null(addr, "addr").and(non_null(len, "len")) {
            return e;
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
    guarded("doca_mmap_set_permissions", || match self::mmap(mmap) {
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
    guarded("doca_mmap_add_dev", || match (self::mmap(mmap), self::dev(dev)) {
        (Some(m), Some(d)) => doca_core::Error::code_of(&m.add_dev(&d.dev)),
        _ => invalid(),
    })
}

/// `doca_mmap_rm_dev`.
#[no_mangle]
pub extern "C" fn doca_mmap_rm_dev(mmap: *mut DocaMmap, dev: *mut DocaDev) -> DocaError {
    guarded("doca_mmap_rm_dev", || match (self::mmap(mmap), self::dev(dev)) {
        (Some(m), Some(d)) => doca_core::Error::code_of(&m.rm_dev(&d.dev)),
        _ => invalid(),
    })
}

/// `doca_mmap_start`.
#[no_mangle]
pub extern "C" fn doca_mmap_start(mmap: *mut DocaMmap) -> DocaError {
    guarded("doca_mmap_start", || match self::mmap(mmap) {
        Some(m) => doca_core::Error::code_of(&m.start()),
        None => invalid(),
    })
}

/// `doca_mmap_stop`: `NOT_PERMITTED` while buffers point into it.
#[no_mangle]
pub extern "C" fn doca_mmap_stop(mmap: *mut DocaMmap) -> DocaError {
    guarded("doca_mmap_stop", || match self::mmap(mmap) {
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
    guarded("doca_mmap_get_num_bufs", || match self::mmap(mmap) {
        Some(m) => out(num_bufs, m.num_bufs()),
        None => invalid(),
    })
}

/// `doca_mmap_memrange_free_cb_t`: the memory range and the opaque pointer given with it.
pub type MemrangeFreeCb = Option<unsafe extern "C" fn(*mut c_void, usize, *mut c_void)>;

/// A C free callback and its opaque pointer, called once from the thread that destroys the map.
struct FreeCb(unsafe extern "C" fn(*mut c_void, usize, *mut c_void), *mut c_void);

// SAFETY: the application gave the callback and its pointer for the map's destruction, which
// may happen on any thread (C makes no thread promise for either beyond that).
unsafe impl Send for FreeCb {}

/// `doca_mmap_set_free_cb`: `free_cb(addr, len, opaque)` when the started map is destroyed.
/// Before start (`BAD_STATE`).
#[no_mangle]
pub extern "C" fn doca_mmap_set_free_cb(
    mmap: *mut DocaMmap,
    free_cb: MemrangeFreeCb,
    opaque: *mut c_void,
) -> DocaError {
    guarded("doca_mmap_set_free_cb", || {
        let Some(m) = self::mmap(mmap) else { return invalid() };
        let Some(cb) = free_cb else { return refuse(|| "NULL free callback".into()) };
        let cb = FreeCb(cb, opaque);
        let r = m.set_free_cb(move |memory: Memory| {
            let cb = cb;
            if let Memory::Raw(raw) = memory {
                let (addr, len) = raw.parts();
                // the application's free callback, with the range it registered.
                // SAFETY: see above.
                unsafe { (cb.0)(addr.cast(), len, cb.1) };
            }
        });
        doca_core::Error::code_of(&r)
    })
}

/// `doca_mmap_set_user_data`: before start.
#[no_mangle]
pub extern "C" fn doca_mmap_set_user_data(mmap: *mut DocaMmap, user_data: DocaData) -> DocaError {
    guarded("doca_mmap_set_user_data", || match self::mmap(mmap) {
        Some(m) => doca_core::Error::code_of(&m.set_user_data(user_data.to_data())),
        None => invalid(),
    })
}

/// `doca_mmap_get_user_data`.
///
/// # Safety
/// `user_data` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_get_user_data(
    mmap: *const DocaMmap,
    user_data: *mut DocaData,
) -> DocaError {
    guarded("doca_mmap_get_user_data", || match self::mmap(mmap) {
        Some(m) => out(user_data, DocaData::from_data(m.user_data())),
        None => invalid(),
    })
}

/// `doca_mmap_enable_thread_safety`: before start (a map from export: at any time), with
/// no buffer on the map; destroy then succeeds with buffers out.
#[no_mangle]
pub extern "C" fn doca_mmap_enable_thread_safety(mmap: *mut DocaMmap) -> DocaError {
    guarded("doca_mmap_enable_thread_safety", || match self::mmap(mmap) {
        Some(m) => doca_core::Error::code_of(&m.enable_thread_safety()),
        None => invalid(),
    })
}

/// `doca_mmap_set_max_num_devices`.
#[no_mangle]
pub extern "C" fn doca_mmap_set_max_num_devices(mmap: *mut DocaMmap, max_num_devices: u32) -> DocaError {
    guarded("doca_mmap_set_max_num_devices", || match self::mmap(mmap) {
        Some(m) => doca_core::Error::code_of(&m.set_max_num_devices(max_num_devices)),
        None => invalid(),
    })
}

/// `doca_mmap_get_max_num_devices`.
///
/// # Safety
/// `max_num_devices` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_get_max_num_devices(
    mmap: *const DocaMmap,
    max_num_devices: *mut u32,
) -> DocaError {
    guarded("doca_mmap_get_max_num_devices", || match self::mmap(mmap) {
        Some(m) => out(max_num_devices, m.max_num_devices()),
        None => invalid(),
    })
}

/// `doca_mmap_get_exported`.
///
/// # Safety
/// `exported` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_get_exported(mmap: *const DocaMmap, exported: *mut u8) -> DocaError {
    guarded("doca_mmap_get_exported", || match self::mmap(mmap) {
        Some(m) => out(exported, m.is_exported() as u8),
        None => invalid(),
    })
}

/// `doca_mmap_get_from_export`.
///
/// # Safety
/// `from_export` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_get_from_export(mmap: *const DocaMmap, from_export: *mut u8) -> DocaError {
    guarded("doca_mmap_get_from_export", || match self::mmap(mmap) {
        Some(m) => out(from_export, m.is_from_export() as u8),
        None => invalid(),
    })
}

fn export(
    mmap: *mut DocaMmap,
    dev: *const DocaDev,
    desc: *mut *const c_void,
    desc_len: *mut usize,
    how: fn(&Mmap, &doca_core::Dev) -> doca_core::Result<Vec<u8>>,
) -> DocaError {
    // SAFETY: MMAPS only holds DocaMmap handles.
    let (Some(m), Some(d)) = ((unsafe { MMAPS.get(mmap) }), self::dev(dev)) else { return invalid() };
    if let Err(e) = non_null(desc, "export_desc").and(non_null(desc_len, "export_desc_len")) {
        return e;
    }
    match how(&m.0, &d.dev) {
        Ok(bytes) => {
            let bytes = bytes.into_boxed_slice();
            // SAFETY: both writable (checked non-NULL; the caller's contract); the descriptor
            // stays allocated while the map handle lives.
            unsafe {
                desc.write(bytes.as_ptr().cast());
                desc_len.write(bytes.len());
            }
            m.1.lock().push(bytes);
            DOCA_SUCCESS
        }
        Err(e) => e.code(),
    }
}

/// `doca_mmap_export_pci`: a descriptor the other side of the link imports with
/// `doca_mmap_create_from_export` (owned by the map). Memory registered by address (malloc,
/// aligned_alloc, a static array) is served to the importer by the library's own threads, so
/// the application's threads may block (`getchar()`, `read()`) while the other side copies.
///
/// # Safety
/// `export_desc` and `export_desc_len` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_export_pci(
    mmap: *mut DocaMmap,
    dev: *const DocaDev,
    export_desc: *mut *const c_void,
    export_desc_len: *mut usize,
) -> DocaError {
    guarded("doca_mmap_export_pci", || export(mmap, dev, export_desc, export_desc_len, Mmap::export_pci))
}

/// `doca_mmap_export_rdma`: as `doca_mmap_export_pci`, with an RDMA permission.
///
/// # Safety
/// `export_desc` and `export_desc_len` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_export_rdma(
    mmap: *mut DocaMmap,
    dev: *const DocaDev,
    export_desc: *mut *const c_void,
    export_desc_len: *mut usize,
) -> DocaError {
    guarded("doca_mmap_export_rdma", || export(mmap, dev, export_desc, export_desc_len, Mmap::export_rdma))
}

/// `doca_mmap_create_from_export`: a map over the exporter's memory, started, its addresses
/// the exporter's. A descriptor is `doca_mmap::EXPORT_DESC_LEN` bytes: any other length is
/// `INVALID_VALUE`, refused before a byte is read.
///
/// # Safety
/// `user_data` is NULL or readable; `export_desc` points to `export_desc_len` readable bytes
/// (read only when that is a descriptor's length); `mmap` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_create_from_export(
    user_data: *const DocaData,
    export_desc: *const c_void,
    export_desc_len: usize,
    dev: *mut DocaDev,
    mmap: *mut *mut DocaMmap,
) -> DocaError {
    guarded("doca_mmap_create_from_export", || {
        let Some(d) = self::dev(dev) else { return invalid() };
        if let Err(e) = non_null(export_desc, "export_desc").and(non_null(mmap, "out-parameter")) {
            return e;
        }
        if export_desc_len != doca_mmap::EXPORT_DESC_LEN {
            return refuse(|| {
                format!(
                    "an export descriptor of {export_desc_len} bytes (it has {})",
                    doca_mmap::EXPORT_DESC_LEN
                )
            });
        }
        let desc =
            // SAFETY: readable for the call (the caller's contract; checked non-NULL, and the
            // length is a descriptor's).
            unsafe { bytes(export_desc, export_desc_len, doca_mmap::EXPORT_DESC_LEN, "export_desc") };
        let desc = match desc {
            Ok(d) => d,
            Err(e) => return e,
        };
        // SAFETY: NULL or readable (the caller's contract).
        let data = (!user_data.is_null()).then(|| unsafe { user_data.read() }.to_data());
        match Mmap::create_from_export(data, desc, &d.dev) {
            Ok(m) => out(mmap, MMAPS.add(DocaMmap(m, Default::default()))),
            Err(e) => e.code(),
        }
    })
}

fn cap_flag(
    name: &'static str,
    devinfo_p: *const DocaDevinfo,
    value: *mut u8,
    get: fn(&doca_core::DevInfo) -> doca_core::Result<bool>,
) -> DocaError {
    guarded(name, || match devinfo(devinfo_p).map(get) {
        Some(Ok(v)) => out(value, v as u8),
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}

/// `doca_mmap_cap_is_export_pci_supported`.
///
/// # Safety
/// `export_pci_supported` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_cap_is_export_pci_supported(
    devinfo: *const DocaDevinfo,
    export_pci_supported: *mut u8,
) -> DocaError {
    cap_flag(
        "doca_mmap_cap_is_export_pci_supported",
        devinfo,
        export_pci_supported,
        Mmap::cap_is_export_pci_supported,
    )
}

/// `doca_mmap_cap_is_create_from_export_pci_supported`.
///
/// # Safety
/// `create_from_export_pci_supported` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_mmap_cap_is_create_from_export_pci_supported(
    devinfo: *const DocaDevinfo,
    create_from_export_pci_supported: *mut u8,
) -> DocaError {
    cap_flag(
        "doca_mmap_cap_is_create_from_export_pci_supported",
        devinfo,
        create_from_export_pci_supported,
        Mmap::cap_is_create_from_export_pci_supported,
    )
}
