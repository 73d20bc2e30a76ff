//! `doca_buf_inventory.h` and `doca_buf.h`: inventories and buffers, with addresses as in C.

use std::ffi::c_void;

use doca_buf::{Buf, Inventory};

use crate::ctx::out;
use crate::handles::Handles;
use crate::mmap::{mmap, DocaMmap};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// `struct doca_buf_inventory`.
pub struct DocaBufInventory(Inventory);
/// `struct doca_buf`: one handle per buffer, freed when its reference count reaches 0.
pub struct DocaBuf(Buf);

static INVENTORIES: Handles = Handles::new();
static BUFS: Handles = Handles::new();

fn inventory<'a>(p: *const DocaBufInventory) -> Option<&'a Inventory> {
    // SAFETY: INVENTORIES only holds DocaBufInventory handles.
    unsafe { INVENTORIES.get(p) }.map(|i| &i.0)
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
    num_elements: u32,
    inventory: *mut *mut DocaBufInventory,
) -> DocaError {
    guarded(|| match Inventory::create(num_elements) {
        Ok(i) => out(inventory, INVENTORIES.add(DocaBufInventory(i))),
        Err(e) => e.code(),
    })
}

/// `doca_buf_inventory_destroy`: `IN_USE` while buffers are out (the inventory stays).
///
/// # Safety
/// `inventory` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_inventory_destroy(inventory: *mut DocaBufInventory) -> DocaError {
    guarded(|| {
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
    guarded(|| match self::inventory(inventory) {
        Some(i) => doca_core::Error::code_of(&i.start()),
        None => invalid(),
    })
}

/// `doca_buf_inventory_stop`.
#[no_mangle]
pub extern "C" fn doca_buf_inventory_stop(inventory: *mut DocaBufInventory) -> DocaError {
    guarded(|| match self::inventory(inventory) {
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
    guarded(|| match self::inventory(inventory) {
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
    let (Some(i), Some(m)) = (self::inventory(inventory), mmap(map)) else { return invalid() };
    if buf_out.is_null() {
        return invalid();
    }
    match i.buf_get_by_args(m, args.0, args.1, args.2, args.3) {
        Ok(b) => out(buf_out, BUFS.add(DocaBuf(b))),
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
    guarded(|| get(inventory, mmap, (addr as usize, len, data as usize, data_len), buf))
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
    guarded(|| get(inventory, mmap, (addr as usize, len, addr as usize, 0), buf))
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
    guarded(|| get(inventory, mmap, (data as usize, data_len, data as usize, data_len), buf))
}

/// `doca_buf_get_head`.
///
/// # Safety
/// `head` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_buf_get_head(b: *const DocaBuf, head: *mut *mut c_void) -> DocaError {
    guarded(|| match buf(b).map(Buf::head) {
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
    guarded(|| match buf(b).map(Buf::len) {
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
    guarded(|| match buf(b).map(Buf::data) {
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
    guarded(|| match buf(b).map(Buf::data_len) {
        Some(Ok(l)) => out(data_len, l),
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}

/// `doca_buf_set_data`: data at `data` (an address inside the buffer) of `data_len` bytes.
#[no_mangle]
pub extern "C" fn doca_buf_set_data(b: *mut DocaBuf, data: *mut c_void, data_len: usize) -> DocaError {
    guarded(|| match buf(b) {
        Some(x) => doca_core::Error::code_of(&x.set_data(data as usize, data_len)),
        None => invalid(),
    })
}

/// `doca_buf_reset_data_len`: data length 0, data position unchanged.
#[no_mangle]
pub extern "C" fn doca_buf_reset_data_len(b: *mut DocaBuf) -> DocaError {
    guarded(|| match buf(b) {
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
    guarded(|| match buf(b).map(Buf::refcount) {
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
    guarded(|| match buf(b).map(Buf::inc_refcount) {
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
    guarded(|| match buf(b).map(Buf::dec_refcount) {
        Some(Ok(r)) => {
            if r == 1 {
                // SAFETY: BUFS only holds DocaBuf handles; the buffer went back: freed once.
                drop(unsafe { BUFS.remove(b) });
            }
            if !refcount.is_null() {
                out(refcount, r);
            }
            DOCA_SUCCESS
        }
        Some(Err(e)) => e.code(),
        None => invalid(),
    })
}
