//! `doca_buf_inventory.h` and `doca_buf.h`: inventories and buffers, with addresses as in C.

use std::ffi::c_void;

use doca_buf::{Buf, Inventory};
use parking_lot::Mutex;

use crate::check::{non_null, out};
use crate::handles::{Handles, IdMap, Kind, Parked};
use crate::mmap::{mmap, DocaMmap};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// `struct doca_buf_inventory`, and the C handle of each of its buffers that is out, by
/// descriptor index (list walks give back the handles the application holds).
pub struct DocaBufInventory(Inventory, Mutex<BufSlots>);

/// An inventory's buffer handles, by descriptor index: the live one, and the last one whose
/// buffer went back, parked ([`Handles::park`]) for the descriptor's next buffer (a new
/// token, the same memory: getting and returning a buffer allocates no handle).
#[derive(Default)]
struct BufSlots(IdMap<u32, BufSlot>);

#[derive(Default)]
struct BufSlot {
    live: Option<std::ptr::NonNull<DocaBuf>>,
    spare: Option<Parked>,
}

impl Drop for BufSlots {
    /// The inventory is destroyed: the parked handles' memory goes. (A live handle stays: a
    /// buffer still out keeps its handle, as its inventory is kept for it.)
    fn drop(&mut self) {
        for (_, slot) in self.0.drain() {
            if let Some(parked) = slot.spare {
                // SAFETY: BUFS only holds DocaBuf handles; each parked one goes once, here.
                unsafe { BUFS.discard::<DocaBuf>(parked) };
            }
        }
    }
}
/// `struct doca_buf`: one handle per buffer, freed when the buffer returns to its inventory
/// (its reference count, or its list head's, reaching 0).
pub struct DocaBuf(Buf, *const DocaBufInventory);

static INVENTORIES: Handles = Handles::new(Kind::BufInventory);
static BUFS: Handles = Handles::new(Kind::Buf);

fn inventory<'a>(p: *const DocaBufInventory) -> Option<&'a Inventory> {
    inventory_handle(p).map(|i| &i.0)
}

fn inventory_handle<'a>(p: *const DocaBufInventory) -> Option<&'a DocaBufInventory> {
    // SAFETY: INVENTORIES only holds DocaBufInventory handles.
    unsafe { INVENTORIES.get(p) }
}

impl DocaBufInventory {
    /// The handle of buffer `b` of this inventory (made when first seen).
    fn handle(&self, this: *const DocaBufInventory, b: Buf) -> *mut DocaBuf {
        let mut slots = self.1.lock();
        let slot = slots.0.entry(b.index()).or_default();
        if let Some(live) = slot.live {
            // SAFETY: BUFS only holds DocaBuf handles.
            if unsafe { BUFS.peek::<DocaBuf>(live.as_ptr()) }.map(|h| &h.0) == Some(&b) {
                return live.as_ptr();
            }
            // A handle left from an earlier buffer of this descriptor: it is stale.
            // SAFETY: BUFS only holds DocaBuf handles; `live` is not used again.
            slot.spare = unsafe { BUFS.park(live.as_ptr()) };
            slot.live = None;
        }
        let p = match slot.spare.take() {
            Some(parked) => {
                let obj = parked.obj::<DocaBuf>();
                // A parked object is named by no token and referred to by nothing (its
                // slot is kept under this inventory's lock): it is this call's to rewrite.
                // SAFETY: see above.
                unsafe { (*obj.as_ptr()).0 = b };
                BUFS.unpark(parked)
            }
            None => BUFS.add(DocaBuf(b, this)),
        };
        slot.live = std::ptr::NonNull::new(p);
        p
    }
}

impl BufSlots {
    /// Ends the handles of the buffers at `indexes` (they went back to the inventory): each
    /// is dead at once, its memory parked for the descriptor's next buffer.
    fn forget(&mut self, indexes: &[u32]) {
        for i in indexes {
            if let Some(slot) = self.0.get_mut(i) {
                if let Some(live) = slot.live.take() {
                    // SAFETY: BUFS only holds DocaBuf handles; `live` is not used again.
                    slot.spare = unsafe { BUFS.park(live.as_ptr()) };
                }
            }
        }
    }
}

fn buf_handle<'a>(p: *const DocaBuf) -> Option<&'a DocaBuf> {
    // SAFETY: BUFS only holds DocaBuf handles.
    unsafe { BUFS.get(p) }
}

/// The handle of `b`, a buffer of the same inventory as the handle `of`.
fn sibling_handle(of: &DocaBuf, b: Buf) -> *mut DocaBuf {
    // SAFETY: INVENTORIES only holds DocaBufInventory handles.
    match unsafe { INVENTORIES.peek(of.1) } {
        Some(inv) => inv.handle(of.1, b),
        None => std::ptr::null_mut(),
    }
}

/// The descriptor indexes of the list headed by `b`.
fn list_indexes(b: &Buf) -> Vec<u32> {
    let mut out = vec![b.index()];
    let mut cur = b.next_in_list().ok().flatten();
    while let Some(n) = cur {
        out.push(n.index());
        cur = n.next_in_list().ok().flatten();
    }
    out
}

pub(crate) fn buf<'a>(p: *const DocaBuf) -> Option<&'a Buf> {
    // SAFETY: BUFS only holds DocaBuf handles.
    unsafe { BUFS.get(p) }.map(|b| &b.0)
}

/// `doca_buf_inventory_create`.
///
/// # Safety
/// `inventory` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inventory_create(
    num_elements: usize,
    inventory: *mut *mut DocaBufInventory,
) -> DocaError {
    guarded("doca_buf_inventory_create", || {
        if let Err(e) = non_null(inventory, "out-parameter") {
            return e;
        }
        let Ok(num_elements) = u32::try_from(num_elements) else {
            // More descriptors than an inventory holds: invalid input, as DOCA's library answers.
            let e = doca_core::fail!(
                doca_core::Error::InvalidValue,
                "doca_buf_inventory_create: {num_elements} elements are above the 32-bit limit"
            );
            return e.code();
        };
        match Inventory::create(num_elements) {
            Ok(i) => out(inventory, INVENTORIES.add(DocaBufInventory(i, Mutex::default()))),
            Err(e) => e.code(),
        }
    })
}

/// `doca_buf_inventory_destroy`: `IN_USE` while buffers are out (the inventory stays).
///
/// # Safety
/// `inventory` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inventory_destroy(inventory: *mut DocaBufInventory) -> DocaError {
    guarded("doca_buf_inventory_destroy", || {
        let Some(i) = self::inventory(inventory) else { return invalid() };
        if i.num_free_elements() != i.num_elements() {
            return doca_core::Error::InUse.code();
        }
        // SAFETY: INVENTORIES only holds DocaBufInventory handles; freed once, here.
        match unsafe { INVENTORIES.remove(inventory) } {
            Some(boxed) => match boxed.0.destroy() {
                Ok(()) => DOCA_SUCCESS,
                Err(refused) => {
                    // Only a buffer taken by another thread since the check (a misuse): the
                    // inventory is kept alive for it.
                    std::mem::forget(refused.value);
                    refused.error.code()
                }
            },
            None => invalid(),
        }
    })
}

/// `doca_buf_inventory_start`.
#[no_mangle]
pub extern "C" fn doca_buf_inventory_start(inventory: *mut DocaBufInventory) -> DocaError {
    guarded("doca_buf_inventory_start", || match self::inventory(inventory) {
        Some(i) => doca_core::Error::code_of(&i.start()),
        None => invalid(),
    })
}

/// `doca_buf_inventory_stop`.
#[no_mangle]
pub extern "C" fn doca_buf_inventory_stop(inventory: *mut DocaBufInventory) -> DocaError {
    guarded("doca_buf_inventory_stop", || match self::inventory(inventory) {
        Some(i) => doca_core::Error::code_of(&i.stop()),
        None => invalid(),
    })
}

/// `doca_buf_inventory_get_num_free_elements`.
///
/// # Safety
/// `num_free_elements` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inventory_get_num_free_elements(
    inventory: *const DocaBufInventory,
    num_free_elements: *mut u32,
) -> DocaError {
    guarded("doca_buf_inventory_get_num_free_elements", || match self::inventory(inventory) {
        Some(i) => out(num_free_elements, i.num_free_elements()),
        None => invalid(),
    })
}

fn get(
    inventory: *mut DocaBufInventory,
    map: *mut DocaMmap,
    args: (usize, usize, usize, usize),
    buf_out: *mut *mut DocaBuf,
) -> DocaError {
    let (Some(i), Some(m)) = (inventory_handle(inventory), mmap(map)) else { return invalid() };
    if let Err(e) = non_null(buf_out, "out-parameter") {
        return e;
    }
    match i.0.buf_get_by_args(m, args.0, args.1, args.2, args.3) {
        Ok(b) => out(buf_out, i.handle(inventory, b)),
        Err(e) => e.code(),
    }
}

/// `doca_buf_inventory_buf_get_by_args`: a buffer over `addr..addr+len` with data
/// `data..data+data_len` (addresses of the map's memory range).
///
/// # Safety
/// `buf` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inventory_buf_get_by_args(
    inventory: *mut DocaBufInventory,
    mmap: *mut DocaMmap,
    addr: *mut c_void,
    len: usize,
    data: *mut c_void,
    data_len: usize,
    buf: *mut *mut DocaBuf,
) -> DocaError {
    guarded("doca_buf_inventory_buf_get_by_args", || {
        get(inventory, mmap, (addr as usize, len, data as usize, data_len), buf)
    })
}

/// `doca_buf_inventory_buf_get_by_addr`: empty data at `addr`.
///
/// # Safety
/// `buf` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inventory_buf_get_by_addr(
    inventory: *mut DocaBufInventory,
    mmap: *mut DocaMmap,
    addr: *mut c_void,
    len: usize,
    buf: *mut *mut DocaBuf,
) -> DocaError {
    guarded("doca_buf_inventory_buf_get_by_addr", || {
        get(inventory, mmap, (addr as usize, len, addr as usize, 0), buf)
    })
}

/// `doca_buf_inventory_buf_get_by_data`: the whole buffer is data.
///
/// # Safety
/// `buf` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inventory_buf_get_by_data(
    inventory: *mut DocaBufInventory,
    mmap: *mut DocaMmap,
    data: *mut c_void,
    data_len: usize,
    buf: *mut *mut DocaBuf,
) -> DocaError {
    guarded("doca_buf_inventory_buf_get_by_data", || {
        get(inventory, mmap, (data as usize, data_len, data as usize, data_len), buf)
    })
}

/// `doca_buf_inventory_buf_reuse_by_addr` (DOCA 3.x): the buffer now covers `addr..addr+len`
/// of its own map, with empty data at `addr`.
#[no_mangle]
pub extern "C" fn doca_buf_inventory_buf_reuse_by_addr(
    b: *mut DocaBuf,
    addr: *mut c_void,
    len: usize,
) -> DocaError {
    guarded("doca_buf_inventory_buf_reuse_by_addr", || match buf(b) {
        Some(bf) => doca_core::Error::code_of(&bf.reuse_by_addr(addr as usize, len)),
        None => invalid(),
    })
}

/// `doca_buf_inventory_buf_reuse_by_data` (DOCA 3.x): the buffer now covers
/// `data..data+data_len` of its own map, all of it data.
#[no_mangle]
pub extern "C" fn doca_buf_inventory_buf_reuse_by_data(
    b: *mut DocaBuf,
    data: *mut c_void,
    data_len: usize,
) -> DocaError {
    guarded("doca_buf_inventory_buf_reuse_by_data", || match buf(b) {
        Some(bf) => doca_core::Error::code_of(&bf.reuse_by_data(data as usize, data_len)),
        None => invalid(),
    })
}

/// `doca_buf_get_head`.
///
/// # Safety
/// `head` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_get_head(b: *const DocaBuf, head: *mut *mut c_void) -> DocaError {
    guarded("doca_buf_get_head", || match buf(b).map(Buf::head) {
        Some(Ok(h)) => out(head, h as *mut c_void),
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}

/// `doca_buf_get_len`.
///
/// # Safety
/// `len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_get_len(b: *const DocaBuf, len: *mut usize) -> DocaError {
    guarded("doca_buf_get_len", || match buf(b).map(Buf::len) {
        Some(Ok(l)) => out(len, l),
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}

/// `doca_buf_get_data`.
///
/// # Safety
/// `data` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_get_data(b: *const DocaBuf, data: *mut *mut c_void) -> DocaError {
    guarded("doca_buf_get_data", || match buf(b).map(Buf::data) {
        Some(Ok(d)) => out(data, d as *mut c_void),
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}

/// `doca_buf_get_data_len`.
///
/// # Safety
/// `data_len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_get_data_len(b: *const DocaBuf, data_len: *mut usize) -> DocaError {
    guarded("doca_buf_get_data_len", || match buf(b).map(Buf::data_len) {
        Some(Ok(l)) => out(data_len, l),
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}

/// `doca_buf_set_data`: data at `data` (an address inside the buffer) of `data_len` bytes.
#[no_mangle]
pub extern "C" fn doca_buf_set_data(b: *mut DocaBuf, data: *mut c_void, data_len: usize) -> DocaError {
    guarded("doca_buf_set_data", || match buf(b) {
        Some(x) => doca_core::Error::code_of(&x.set_data(data as usize, data_len)),
        None => invalid(),
    })
}

/// `doca_buf_reset_data_len`: data length 0, data position unchanged.
#[no_mangle]
pub extern "C" fn doca_buf_reset_data_len(b: *mut DocaBuf) -> DocaError {
    guarded("doca_buf_reset_data_len", || match buf(b) {
        Some(x) => doca_core::Error::code_of(&x.reset_data_len()),
        None => invalid(),
    })
}

/// `doca_buf_get_refcount`.
///
/// # Safety
/// `refcount` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_get_refcount(b: *const DocaBuf, refcount: *mut u16) -> DocaError {
    guarded("doca_buf_get_refcount", || match buf(b).map(Buf::refcount) {
        Some(Ok(r)) => out(refcount, r),
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}

/// `doca_buf_inc_refcount`: the count before (when `refcount` is not NULL).
///
/// # Safety
/// `refcount` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inc_refcount(b: *mut DocaBuf, refcount: *mut u16) -> DocaError {
    guarded("doca_buf_inc_refcount", || match buf(b).map(Buf::inc_refcount) {
        Some(Ok(r)) => {
            if !refcount.is_null() {
                out(refcount, r);
            }
            DOCA_SUCCESS
        }
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}

/// `doca_buf_dec_refcount`: the count before; at 0 the buffer returns to its inventory and
/// its handle is invalid afterwards.
///
/// # Safety
/// `refcount` is NULL or writable; `b` is not used after its count reached 0.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_dec_refcount(b: *mut DocaBuf, refcount: *mut u16) -> DocaError {
    guarded("doca_buf_dec_refcount", || {
        let Some(h) = buf_handle(b) else { return invalid() };
        // The inventory's handles stay locked from before the count drops until the handles
        // of what went back are parked: another thread getting the same descriptor meanwhile
        // would otherwise find this handle still live, take its memory for its own buffer,
        // and then lose its new handle to this call's parking.
        // SAFETY: INVENTORIES only holds DocaBufInventory handles.
        let inventory = unsafe { INVENTORIES.peek::<DocaBufInventory>(h.1) };
        let mut slots = inventory.map(|i| i.1.lock());
        // The handles of a list that is about to go back (read before: returning it unlinks
        // it). A lone buffer, the usual case, needs no list (nor an allocation).
        let list = if h.0.refcount() == Ok(1) && h.0.is_in_list() == Ok(true) {
            list_indexes(&h.0)
        } else {
            Vec::new()
        };
        let index = h.0.index();
        match h.0.dec_refcount() {
            Ok(r) => {
                if let (1, Some(slots)) = (r, slots.as_mut()) {
                    // The whole list went back: its handles go (this one included).
                    slots.forget(if list.is_empty() { std::slice::from_ref(&index) } else { &list });
                }
                drop(slots);
                if !refcount.is_null() {
                    out(refcount, r);
                }
                DOCA_SUCCESS
            }
            Err(e) => e.code(),
        }
    })
}

/// `doca_buf_inventory_buf_dup`: a copy of the list headed by `src` (same ranges), from this
/// inventory.
///
/// # Safety
/// `dst` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inventory_buf_dup(
    inventory: *mut DocaBufInventory,
    src: *const DocaBuf,
    dst: *mut *mut DocaBuf,
) -> DocaError {
    guarded("doca_buf_inventory_buf_dup", || {
        let (Some(i), Some(s)) = (inventory_handle(inventory), buf(src)) else { return invalid() };
        if let Err(e) = non_null(dst, "out-parameter") {
            return e;
        }
        match i.0.buf_dup(s) {
            Ok(head) => {
                let mut cur = head.next_in_list().ok().flatten();
                while let Some(n) = cur {
                    cur = n.next_in_list().ok().flatten();
                    i.handle(inventory, n);
                }
                out(dst, i.handle(inventory, head))
            }
            Err(e) => e.code(),
        }
    })
}

/// `doca_buf_inventory_get_num_elements`.
///
/// # Safety
/// `num_elements` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inventory_get_num_elements(
    inventory: *const DocaBufInventory,
    num_elements: *mut u32,
) -> DocaError {
    guarded("doca_buf_inventory_get_num_elements", || match self::inventory(inventory) {
        Some(i) => out(num_elements, i.num_elements()),
        None => invalid(),
    })
}

/// `doca_buf_inventory_set_user_data`.
#[no_mangle]
pub extern "C" fn doca_buf_inventory_set_user_data(
    inventory: *mut DocaBufInventory,
    user_data: crate::ctx::DocaData,
) -> DocaError {
    guarded("doca_buf_inventory_set_user_data", || match self::inventory(inventory) {
        Some(i) => {
            i.set_user_data(user_data.to_data());
            DOCA_SUCCESS
        }
        None => invalid(),
    })
}

/// `doca_buf_inventory_get_user_data`.
///
/// # Safety
/// `user_data` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inventory_get_user_data(
    inventory: *const DocaBufInventory,
    user_data: *mut crate::ctx::DocaData,
) -> DocaError {
    guarded("doca_buf_inventory_get_user_data", || match self::inventory(inventory) {
        Some(i) => out(user_data, crate::ctx::DocaData::from_data(i.user_data())),
        None => invalid(),
    })
}

/// `doca_buf_chain_list(list1, list2)`: appends the list headed by `list2` (refcount 1).
#[no_mangle]
pub extern "C" fn doca_buf_chain_list(list1: *mut DocaBuf, list2: *mut DocaBuf) -> DocaError {
    guarded("doca_buf_chain_list", || match (buf(list1), buf(list2)) {
        (Some(a), Some(b)) => doca_core::Error::code_of(&a.chain_list(b)),
        _ => invalid(),
    })
}

/// `doca_buf_unchain_list(list1, list2)`: splits the list before `list2`.
#[no_mangle]
pub extern "C" fn doca_buf_unchain_list(list1: *mut DocaBuf, list2: *mut DocaBuf) -> DocaError {
    guarded("doca_buf_unchain_list", || match (buf(list1), buf(list2)) {
        (Some(a), Some(b)) => doca_core::Error::code_of(&a.unchain_list(b)),
        _ => invalid(),
    })
}

/// `doca_buf_get_next_in_list`: NULL at the end of the list.
///
/// # Safety
/// `next_buf` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_get_next_in_list(
    b: *mut DocaBuf,
    next_buf: *mut *mut DocaBuf,
) -> DocaError {
    guarded("doca_buf_get_next_in_list", || {
        let Some(h) = buf_handle(b) else { return invalid() };
        match h.0.next_in_list() {
            Ok(Some(n)) => out(next_buf, sibling_handle(h, n)),
            Ok(None) => out(next_buf, std::ptr::null_mut()),
            Err(e) => e.code(),
        }
    })
}

/// `doca_buf_get_last_in_list`.
///
/// # Safety
/// `last_buf` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_get_last_in_list(
    b: *mut DocaBuf,
    last_buf: *mut *mut DocaBuf,
) -> DocaError {
    guarded("doca_buf_get_last_in_list", || {
        let Some(h) = buf_handle(b) else { return invalid() };
        match h.0.last_in_list() {
            Ok(l) if l == h.0 => out(last_buf, b),
            Ok(l) => out(last_buf, sibling_handle(h, l)),
            Err(e) => e.code(),
        }
    })
}

macro_rules! list_flags {
    ($($(#[$doc:meta])* $name:ident => $method:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `value` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name(b: *const DocaBuf, value: *mut u8) -> DocaError {
            guarded(stringify!($name), || match buf(b).map(Buf::$method) {
                Some(Ok(v)) => out(value, v as u8),
                Some(Err(e)) => e.code(),
                None => invalid(),
            })
        }
    )*};
}

list_flags! {
    /// `doca_buf_is_first_in_list`.
    doca_buf_is_first_in_list => is_first_in_list;
    /// `doca_buf_is_last_in_list`.
    doca_buf_is_last_in_list => is_last_in_list;
    /// `doca_buf_is_in_list`: part of a list of two or more.
    doca_buf_is_in_list => is_in_list;
}

/// `doca_buf_get_list_len`: list heads only.
///
/// # Safety
/// `num_elements` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_get_list_len(b: *const DocaBuf, num_elements: *mut u32) -> DocaError {
    guarded("doca_buf_get_list_len", || match buf(b).map(Buf::list_len) {
        Some(Ok(n)) => out(num_elements, n),
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}
