//! `doca_dev.h`: device and representor lists, opening, PCI addresses, names, capabilities.

use std::ffi::{c_char, c_int, CStr};

use doca_core::{
    devinfo_create_list, set_build_side, Dev, DevInfo, DevInfoRep, DevRep, DeviceKind, RepFilter,
};

use crate::check::{non_null, out};
use crate::handles::{Handles, Kind};
use crate::{code, guarded, invalid, DocaError, DOCA_SUCCESS};

/// `struct doca_devinfo`.
pub struct DocaDevinfo(DevInfo);
/// `struct doca_dev`: the device, the devinfo handle `doca_dev_as_devinfo` gives, and how
/// many times it was opened (opening an open device gives the same handle).
pub struct DocaDev {
    pub(crate) dev: Dev,
    info: *mut DocaDevinfo,
    opens: std::sync::atomic::AtomicU32,
}
/// `struct doca_devinfo_rep`.
pub struct DocaDevinfoRep(DevInfoRep);
/// `struct doca_dev_rep`.
pub struct DocaDevRep {
    pub(crate) rep: DevRep,
    info: *mut DocaDevinfoRep,
}

pub(crate) static DEVINFOS: Handles = Handles::new(Kind::Devinfo);
pub(crate) static DEVS: Handles = Handles::new(Kind::Dev);
static REP_INFOS: Handles = Handles::new(Kind::DevinfoRep);
pub(crate) static REPS: Handles = Handles::new(Kind::DevRep);
/// The open devices' handles (at most one per device).
static OPEN: parking_lot::Mutex<Vec<usize>> = parking_lot::Mutex::new(Vec::new());
/// Lists handed out: (array address, length, the kind of its elements).
static LISTS: parking_lot::Mutex<Vec<(usize, usize, Kind)>> = parking_lot::Mutex::new(Vec::new());

/// Hands `items` (handles of `kind`) out as a C array (freed by [`free_list`]).
fn hand_out<T>(items: Vec<*mut T>, kind: Kind) -> *mut *mut T {
    let len = items.len();
    let p = Box::into_raw(items.into_boxed_slice()) as *mut *mut T;
    LISTS.lock().push((p as usize, len, kind));
    p
}

/// Takes an array of [`hand_out`] of handles of `kind` back: its elements (`None`, noted,
/// for anything else: NULL, an array this library did not hand out, or a list of another
/// kind).
fn free_list<T>(list: *mut *mut T, kind: Kind) -> Option<Vec<*mut T>> {
    let mut lists = LISTS.lock();
    let Some(at) = lists.iter().position(|&(a, _, k)| a == list as usize && k == kind) else {
        crate::check::note(|| format!("{list:p} is not a list of {} this library handed out", kind.name()));
        return None;
    };
    let (_, len, _) = lists.swap_remove(at);
    // the array came from hand_out (into_boxed_slice of `len` elements of the same type:
    // its kind was checked above) and is freed once.
    // SAFETY: see above.
    let items = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(list, len)) };
    Some(items.into_vec())
}

/// Writes `text` and its NUL into `out` of `size` bytes (`INVALID_VALUE` when it does not fit).
fn put_str(text: &str, out: *mut c_char, size: usize) -> DocaError {
    if let Err(e) = non_null(out, "output string") {
        return e;
    }
    if text.len() + 1 > size {
        return crate::check::refuse(|| format!("{} bytes do not fit in {size}", text.len() + 1));
    }
    // SAFETY: `out` has room for `size` >= len + 1 bytes (the caller's buffer contract).
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr(), out as *mut u8, text.len());
        *out.add(text.len()) = 0;
    }
    DOCA_SUCCESS
}

/// A C string argument; `None` for NULL or non-UTF-8.
fn arg_str<'a>(s: *const c_char) -> Option<&'a str> {
    if s.is_null() {
        return None;
    }
    // SAFETY: a non-NULL string argument is NUL-terminated and lives for the call.
    unsafe { CStr::from_ptr(s) }.to_str().ok()
}

/// A devinfo handle (from a list or from `doca_dev_as_devinfo`).
pub(crate) fn devinfo<'a>(p: *const DocaDevinfo) -> Option<&'a DevInfo> {
    // SAFETY: DEVINFOS only holds DocaDevinfo handles.
    unsafe { DEVINFOS.get(p) }.map(|d| &d.0)
}

pub(crate) fn dev<'a>(p: *const DocaDev) -> Option<&'a DocaDev> {
    // SAFETY: DEVS only holds DocaDev handles.
    unsafe { DEVS.get(p) }
}

fn rep_info<'a>(p: *const DocaDevinfoRep) -> Option<&'a DevInfoRep> {
    // SAFETY: REP_INFOS only holds DocaDevinfoRep handles.
    unsafe { REP_INFOS.get(p) }.map(|d| &d.0)
}

pub(crate) fn rep<'a>(p: *const DocaDevRep) -> Option<&'a DocaDevRep> {
    // SAFETY: REPS only holds DocaDevRep handles.
    unsafe { REPS.get(p) }
}

/// `DOCA_EMU_SIDE_HOST` in `doca_config.h`.
pub const DOCA_EMU_SIDE_HOST: c_int = 1;
/// `DOCA_EMU_SIDE_DPU` in `doca_config.h`.
pub const DOCA_EMU_SIDE_DPU: c_int = 2;

/// `doca_emu_set_build_side` (no DOCA counterpart): the side a C program was built for, told
/// by the constructor `doca_config.h` puts in every program built with the host's or the
/// DPU's `doca_build_config.h`. The same side again is `DOCA_SUCCESS`; the other side is
/// `DOCA_ERROR_NOT_PERMITTED` (logged naming both); any other value `INVALID_VALUE`.
#[no_mangle]
pub extern "C" fn doca_emu_set_build_side(side: c_int) -> DocaError {
    guarded("doca_emu_set_build_side", || {
        let kind = match side {
            DOCA_EMU_SIDE_HOST => DeviceKind::Host,
            DOCA_EMU_SIDE_DPU => DeviceKind::Dpu,
            _ => return invalid(),
        };
        code(&set_build_side(kind))
    })
}

/// `doca_devinfo_create_list`: the devices of this process's side of the link.
///
/// # Safety
/// `dev_list` and `nb_devs` are NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_create_list(
    dev_list: *mut *mut *mut DocaDevinfo,
    nb_devs: *mut u32,
) -> DocaError {
    guarded("doca_devinfo_create_list", || {
        if let Err(e) = non_null(dev_list, "dev_list").and(non_null(nb_devs, "nb_devs")) {
            return e;
        }
        let list = match devinfo_create_list() {
            Ok(l) => l,
            Err(e) => return e.code(),
        };
        let n = list.len() as u32;
        let items: Vec<*mut DocaDevinfo> = list.into_iter().map(|d| DEVINFOS.add(DocaDevinfo(d))).collect();
        out(dev_list, hand_out(items, Kind::Devinfo));
        out(nb_devs, n)
    })
}

/// `doca_devinfo_destroy_list`: the list's devinfos become invalid (opened devices stay).
///
/// # Safety
/// `dev_list` is NULL or a list from `doca_devinfo_create_list`.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_destroy_list(dev_list: *mut *mut DocaDevinfo) -> DocaError {
    guarded("doca_devinfo_destroy_list", || {
        let Some(items) = free_list(dev_list, Kind::Devinfo) else { return invalid() };
        for p in items {
            // SAFETY: each element was added to DEVINFOS as a DocaDevinfo.
            drop(unsafe { DEVINFOS.remove(p) });
        }
        DOCA_SUCCESS
    })
}

/// `doca_devinfo_get_pci_addr_str`: `dddd:bb:dd.f` into a buffer of
/// `DOCA_DEVINFO_PCI_ADDR_SIZE` (13) bytes.
///
/// # Safety
/// `pci_addr_str` is NULL or has room for 13 bytes.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_get_pci_addr_str(
    devinfo: *const DocaDevinfo,
    pci_addr_str: *mut c_char,
) -> DocaError {
    guarded("doca_devinfo_get_pci_addr_str", || match self::devinfo(devinfo) {
        Some(d) => put_str(&d.pci_addr_str(), pci_addr_str, doca_core::pci::PCI_ADDR_SIZE),
        None => invalid(),
    })
}

/// `doca_devinfo_is_equal_pci_addr`: both spellings; a malformed address is `INVALID_VALUE`.
///
/// # Safety
/// `pci_addr_str` is NULL or a C string; `is_equal` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_is_equal_pci_addr(
    devinfo: *const DocaDevinfo,
    pci_addr_str: *const c_char,
    is_equal: *mut u8,
) -> DocaError {
    guarded("doca_devinfo_is_equal_pci_addr", || {
        let (Some(d), Some(pci)) = (self::devinfo(devinfo), arg_str(pci_addr_str)) else { return invalid() };
        match d.is_equal_pci_addr(pci) {
            Ok(eq) => {
                if !eq {
                    // C looks for a device this way: a hint, once, when none can match.
                    doca_core::explain_unmatched_pci(pci);
                }
                out(is_equal, eq as u8)
            }
            Err(e) => e.code(),
        }
    })
}

/// `DOCA_DEVINFO_IFACE_NAME_SIZE`: the smallest buffer `doca_devinfo_get_iface_name` takes.
const IFACE_NAME_SIZE: u32 = doca_core::topology::IFACE_NAME_SIZE as u32;
/// `DOCA_DEVINFO_IBDEV_NAME_SIZE`: the smallest buffer `doca_devinfo_get_ibdev_name` takes.
const IBDEV_NAME_SIZE: u32 = doca_core::topology::IBDEV_NAME_SIZE as u32;

/// `doca_devinfo_get_iface_name`.
///
/// # Safety
/// `iface_name` is NULL or has room for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_get_iface_name(
    devinfo: *const DocaDevinfo,
    iface_name: *mut c_char,
    size: u32,
) -> DocaError {
    guarded("doca_devinfo_get_iface_name", || match self::devinfo(devinfo) {
        // The header: at least DOCA_DEVINFO_IFACE_NAME_SIZE bytes, whatever the name's length
        // (DOCA's library checks the size, not the name).
        Some(_) if size < IFACE_NAME_SIZE => crate::check::refuse(|| {
            format!("iface name buffer of {size} bytes (at least DOCA_DEVINFO_IFACE_NAME_SIZE, {IFACE_NAME_SIZE})")
        }),
        Some(d) => put_str(d.iface_name(), iface_name, size as usize),
        None => invalid(),
    })
}

/// `doca_devinfo_get_ibdev_name`.
///
/// # Safety
/// `ibdev_name` is NULL or has room for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_get_ibdev_name(
    devinfo: *const DocaDevinfo,
    ibdev_name: *mut c_char,
    size: u32,
) -> DocaError {
    guarded("doca_devinfo_get_ibdev_name", || match self::devinfo(devinfo) {
        Some(_) if size < IBDEV_NAME_SIZE => crate::check::refuse(|| {
            format!("ibdev name buffer of {size} bytes (at least DOCA_DEVINFO_IBDEV_NAME_SIZE, {IBDEV_NAME_SIZE})")
        }),
        Some(d) => put_str(d.ibdev_name(), ibdev_name, size as usize),
        None => invalid(),
    })
}

/// `doca_devinfo_rep_cap_is_filter_all_supported`: 1 on the DPU device; a host function is
/// `NOT_SUPPORTED`.
///
/// # Safety
/// `filter_all_supported` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_rep_cap_is_filter_all_supported(
    devinfo: *const DocaDevinfo,
    filter_all_supported: *mut u8,
) -> DocaError {
    guarded("doca_devinfo_rep_cap_is_filter_all_supported", || {
        match self::devinfo(devinfo).map(DevInfo::rep_cap_is_filter_all_supported) {
            Some(Ok(b)) => out(filter_all_supported, b as u8),
            Some(Err(e)) => e.code(),
            None => invalid(),
        }
    })
}

/// `doca_dev_open`: opening a device that is open gives the same handle (closed as many
/// times as it was opened).
///
/// # Safety
/// `dev` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_dev_open(devinfo: *mut DocaDevinfo, dev: *mut *mut DocaDev) -> DocaError {
    guarded("doca_dev_open", || {
        let Some(info) = self::devinfo(devinfo) else { return invalid() };
        if let Err(e) = crate::check::non_null(dev, "dev") {
            return e;
        }
        let mut open = OPEN.lock();
        let same = open
            .iter()
            .map(|&p| p as *mut DocaDev)
            .find(|&p| self::dev(p).is_some_and(|d| d.dev.as_devinfo() == info));
        if let Some(p) = same {
            if let Some(d) = self::dev(p) {
                d.opens.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            return out(dev, p);
        }
        let opened = info.open();
        let rc = code(&opened);
        match opened {
            Ok(d) => {
                let info = DEVINFOS.add(DocaDevinfo(d.as_devinfo().clone()));
                let p = DEVS.add(DocaDev { dev: d, info, opens: std::sync::atomic::AtomicU32::new(1) });
                open.push(p as usize);
                out(dev, p)
            }
            Err(_) => rc,
        }
    })
}

/// `doca_dev_close`: `IN_USE` (the device stays open) while something created on it or
/// given it (a map, a server, a client, an endpoint) still holds it. NULL closes nothing
/// and succeeds: the header lists no invalid-input error for this call (only `IN_USE`), and
/// NVIDIA's dma_local_copy (2.6 to 3.3) closes its device twice in its cleanup, the second
/// time through a pointer its first cleanup set to NULL. A pointer that is no open device
/// is `INVALID_VALUE`.
///
/// # Safety
/// `dev` is NULL or a handle from `doca_dev_open`, not used after its last close.
#[no_mangle]
pub unsafe extern "C" fn doca_dev_close(dev: *mut DocaDev) -> DocaError {
    if dev.is_null() {
        tracing::debug!(target: "doca_sdk", "doca_dev_close(NULL): nothing to close");
        return DOCA_SUCCESS;
    }
    guarded("doca_dev_close", || {
        let mut open = OPEN.lock();
        let Some(d) = self::dev(dev) else { return invalid() };
        if d.opens.load(std::sync::atomic::Ordering::Relaxed) > 1 {
            d.opens.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            return DOCA_SUCCESS;
        }
        if d.dev.handle_count() > 1 {
            return doca_core::Error::InUse.code();
        }
        open.retain(|&p| p != dev as usize);
        // SAFETY: DEVS only holds DocaDev handles; the last close frees it, once.
        let Some(d) = (unsafe { DEVS.remove(dev) }) else { return invalid() };
        // SAFETY: the devinfo was added with the device and goes with it.
        drop(unsafe { DEVINFOS.remove(d.info) });
        DOCA_SUCCESS
    })
}

/// `doca_dev_as_devinfo`: the device's devinfo (valid while the device is open); NULL for a
/// bad handle.
#[no_mangle]
pub extern "C" fn doca_dev_as_devinfo(dev: *const DocaDev) -> *mut DocaDevinfo {
    crate::shielded("doca_dev_as_devinfo", std::ptr::null_mut(), || {
        self::dev(dev).map_or(std::ptr::null_mut(), |d| d.info)
    })
}

/// `doca_devinfo_rep_create_list`: the representors of a DPU device that `filter`
/// (`DOCA_DEVINFO_REP_FILTER_*`) admits; a host function is `NOT_SUPPORTED`.
///
/// # Safety
/// `dev_list_rep` and `nb_devs_rep` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_rep_create_list(
    dev: *mut DocaDev,
    filter: c_int,
    dev_list_rep: *mut *mut *mut DocaDevinfoRep,
    nb_devs_rep: *mut u32,
) -> DocaError {
    guarded("doca_devinfo_rep_create_list", || {
        let Some(d) = self::dev(dev) else { return invalid() };
        let Some(filter) = RepFilter::from_bits(filter as u32) else { return invalid() };
        if let Err(e) = non_null(dev_list_rep, "dev_list_rep").and(non_null(nb_devs_rep, "nb_devs_rep")) {
            return e;
        }
        match d.dev.rep_list(filter) {
            Ok(list) => {
                let n = list.len() as u32;
                let items: Vec<*mut DocaDevinfoRep> =
                    list.into_iter().map(|r| REP_INFOS.add(DocaDevinfoRep(r))).collect();
                out(dev_list_rep, hand_out(items, Kind::DevinfoRep));
                out(nb_devs_rep, n)
            }
            Err(e) => e.code(),
        }
    })
}

/// `doca_devinfo_rep_destroy_list`.
///
/// # Safety
/// `dev_list_rep` is NULL or a list from `doca_devinfo_rep_create_list`.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_rep_destroy_list(dev_list_rep: *mut *mut DocaDevinfoRep) -> DocaError {
    guarded("doca_devinfo_rep_destroy_list", || {
        let Some(items) = free_list(dev_list_rep, Kind::DevinfoRep) else { return invalid() };
        for p in items {
            // SAFETY: each element was added to REP_INFOS as a DocaDevinfoRep.
            drop(unsafe { REP_INFOS.remove(p) });
        }
        DOCA_SUCCESS
    })
}

/// `doca_devinfo_rep_get_pci_addr_str`.
///
/// # Safety
/// `pci_addr_str` is NULL or has room for 13 bytes.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_rep_get_pci_addr_str(
    devinfo_rep: *const DocaDevinfoRep,
    pci_addr_str: *mut c_char,
) -> DocaError {
    guarded("doca_devinfo_rep_get_pci_addr_str", || match rep_info(devinfo_rep) {
        Some(r) => put_str(&r.pci_addr_str(), pci_addr_str, doca_core::pci::PCI_ADDR_SIZE),
        None => invalid(),
    })
}

/// `doca_devinfo_rep_is_equal_pci_addr`.
///
/// # Safety
/// `pci_addr_str` is NULL or a C string; `is_equal` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_rep_is_equal_pci_addr(
    devinfo_rep: *const DocaDevinfoRep,
    pci_addr_str: *const c_char,
    is_equal: *mut u8,
) -> DocaError {
    guarded("doca_devinfo_rep_is_equal_pci_addr", || {
        let (Some(r), Some(pci)) = (rep_info(devinfo_rep), arg_str(pci_addr_str)) else { return invalid() };
        match r.is_equal_pci_addr(pci) {
            Ok(eq) => out(is_equal, eq as u8),
            Err(e) => e.code(),
        }
    })
}

/// `doca_dev_rep_open`.
///
/// # Safety
/// `dev_rep` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_dev_rep_open(
    devinfo_rep: *mut DocaDevinfoRep,
    dev_rep: *mut *mut DocaDevRep,
) -> DocaError {
    guarded("doca_dev_rep_open", || {
        let Some(r) = rep_info(devinfo_rep) else { return invalid() };
        if let Err(e) = crate::check::non_null(dev_rep, "dev_rep") {
            return e;
        }
        match r.open() {
            Ok(rep) => {
                let info = REP_INFOS.add(DocaDevinfoRep(rep.as_devinfo().clone()));
                out(dev_rep, REPS.add(DocaDevRep { rep, info }))
            }
            Err(e) => e.code(),
        }
    })
}

/// `doca_dev_rep_close`.
///
/// # Safety
/// `dev_rep` is NULL or a handle from `doca_dev_rep_open`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn doca_dev_rep_close(dev_rep: *mut DocaDevRep) -> DocaError {
    guarded("doca_dev_rep_close", || {
        // SAFETY: REPS only holds DocaDevRep handles.
        match unsafe { REPS.remove(dev_rep) } {
            Some(r) => {
                // SAFETY: the devinfo was added with the representor and goes with it.
                drop(unsafe { REP_INFOS.remove(r.info) });
                DOCA_SUCCESS
            }
            None => invalid(),
        }
    })
}

/// `doca_dev_rep_as_devinfo`: the representor's devinfo (valid while it is open); NULL for a
/// bad handle.
#[no_mangle]
pub extern "C" fn doca_dev_rep_as_devinfo(dev_rep: *mut DocaDevRep) -> *mut DocaDevinfoRep {
    crate::shielded("doca_dev_rep_as_devinfo", std::ptr::null_mut(), || {
        rep(dev_rep).map_or(std::ptr::null_mut(), |r| r.info)
    })
}

/// `doca_devinfo_cap_is_hotplug_manager_supported`: 1 on a DPU device with a hot-pluggable
/// representor.
///
/// # Safety
/// `is_hotplug_manager` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_cap_is_hotplug_manager_supported(
    devinfo: *const DocaDevinfo,
    is_hotplug_manager: *mut u8,
) -> DocaError {
    guarded("doca_devinfo_cap_is_hotplug_manager_supported", || match self::devinfo(devinfo) {
        Some(d) => out(is_hotplug_manager, d.cap_is_hotplug_manager_supported() as u8),
        None => invalid(),
    })
}

/// A representor filter capability of a device.
fn rep_filter_cap(
    name: &'static str,
    devinfo: *const DocaDevinfo,
    value: *mut u8,
    get: fn(&DevInfo) -> doca_core::Result<bool>,
) -> DocaError {
    guarded(name, || match self::devinfo(devinfo).map(get) {
        Some(Ok(b)) => out(value, b as u8),
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}

/// `doca_devinfo_rep_cap_is_filter_net_supported`: 1 on the DPU device; a host function is
/// `NOT_SUPPORTED`.
///
/// # Safety
/// `filter_net_supported` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_rep_cap_is_filter_net_supported(
    devinfo: *const DocaDevinfo,
    filter_net_supported: *mut u8,
) -> DocaError {
    rep_filter_cap(
        "doca_devinfo_rep_cap_is_filter_net_supported",
        devinfo,
        filter_net_supported,
        DevInfo::rep_cap_is_filter_net_supported,
    )
}

/// `doca_devinfo_rep_cap_is_filter_emulated_supported`: as the net filter.
///
/// # Safety
/// `filter_emulated_supported` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_rep_cap_is_filter_emulated_supported(
    devinfo: *const DocaDevinfo,
    filter_emulated_supported: *mut u8,
) -> DocaError {
    rep_filter_cap(
        "doca_devinfo_rep_cap_is_filter_emulated_supported",
        devinfo,
        filter_emulated_supported,
        DevInfo::rep_cap_is_filter_emulated_supported,
    )
}

/// `doca_devinfo_rep_get_vuid`: into `rep_vuid` (`size` bytes, the NUL included).
///
/// # Safety
/// `rep_vuid` is NULL or has room for `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_rep_get_vuid(
    devinfo_rep: *const DocaDevinfoRep,
    rep_vuid: *mut c_char,
    size: u32,
) -> DocaError {
    guarded("doca_devinfo_rep_get_vuid", || match rep_info(devinfo_rep) {
        Some(r) => put_str(r.vuid(), rep_vuid, size as usize),
        None => invalid(),
    })
}

/// `doca_devinfo_rep_get_pci_func_type`.
///
/// # Safety
/// `pci_func_type` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_rep_get_pci_func_type(
    devinfo_rep: *const DocaDevinfoRep,
    pci_func_type: *mut u32,
) -> DocaError {
    guarded("doca_devinfo_rep_get_pci_func_type", || match rep_info(devinfo_rep) {
        Some(r) => out(pci_func_type, r.pci_func_type() as u32),
        None => invalid(),
    })
}

/// `doca_devinfo_rep_get_is_hotplug`.
///
/// # Safety
/// `is_hotplug` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_rep_get_is_hotplug(
    devinfo_rep: *const DocaDevinfoRep,
    is_hotplug: *mut u8,
) -> DocaError {
    guarded("doca_devinfo_rep_get_is_hotplug", || match rep_info(devinfo_rep) {
        Some(r) => out(is_hotplug, r.is_hotplug() as u8),
        None => invalid(),
    })
}

/// `doca_devinfo_get_pci_func_type` (3.x): the device's function type, from the topology's
/// `func=` (`DOCA_PCI_FUNC_TYPE_PF` by default).
///
/// # Safety
/// `pci_func_type` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_get_pci_func_type(
    devinfo: *const DocaDevinfo,
    pci_func_type: *mut u32,
) -> DocaError {
    guarded("doca_devinfo_get_pci_func_type", || match self::devinfo(devinfo) {
        Some(d) => out(pci_func_type, d.pci_func_type() as u32),
        None => invalid(),
    })
}

/// `doca_devinfo_get_sf_index` (3.x): an SF device's index, from the topology's `sf=`; a
/// device that is not an SF: `DOCA_ERROR_NOT_SUPPORTED`.
///
/// # Safety
/// `sf_index` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_devinfo_get_sf_index(
    devinfo: *const DocaDevinfo,
    sf_index: *mut u32,
) -> DocaError {
    guarded("doca_devinfo_get_sf_index", || match self::devinfo(devinfo) {
        // a NULL out-parameter is refused before the device's type is looked at
        Some(_) if sf_index.is_null() => out(sf_index, 0),
        Some(d) => match d.sf_index() {
            Ok(index) => out(sf_index, index),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}
