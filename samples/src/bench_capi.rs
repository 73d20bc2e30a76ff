//! The bench's C ABI rows: what a C program's calls cost, made through `doca_capi`'s exports
//! (the functions `libdoca_capi.so` exports, called as C calls them: handles, out-parameters,
//! a C callback).
//!
//! The library is linked into the bench rather than loaded: a C program pays a little more
//! for each thread-local the library reads (through the dynamic linker); the calls that
//! refuse nothing read none.

#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::c_void;
use std::ptr::null_mut;

use doca_capi::{
    doca_buf_inventory_buf_get_by_addr, doca_buf_inventory_buf_get_by_data, doca_buf_inventory_create,
    doca_buf_inventory_start, doca_buf_reset_data_len, doca_ctx_start, doca_dev_open,
    doca_devinfo_create_list, doca_devinfo_destroy_list, doca_devinfo_is_equal_pci_addr, doca_dma_as_ctx,
    doca_dma_create, doca_dma_task_memcpy_alloc_init, doca_dma_task_memcpy_as_task,
    doca_dma_task_memcpy_set_conf, doca_mmap_add_dev, doca_mmap_create, doca_mmap_set_memrange,
    doca_mmap_set_permissions, doca_mmap_start, doca_pe_connect_ctx, doca_pe_create, doca_pe_progress,
    doca_task_free, doca_task_submit, DocaBuf, DocaData, DocaDev, DocaDma, DocaPe, DocaTask, DOCA_SUCCESS,
};

/// `DOCA_ACCESS_FLAG_LOCAL_READ_WRITE`.
const LOCAL_READ_WRITE: u32 = 1;

thread_local! {
    /// Completions so far, and the destination to empty after each (the C callback's
    /// state: a C program keeps it in globals).
    static DONE: Cell<(u64, *mut DocaBuf)> = const { Cell::new((0, null_mut())) };
}

/// The completion callback, as a C program writes it: frees the task, empties the
/// destination for the next copy.
unsafe extern "C" fn on_done(task: *mut DocaTask, _task_data: DocaData, _ctx_data: DocaData) {
    let (n, dst) = DONE.get();
    DONE.set((n + 1, dst));
    // SAFETY: the task's own handle, given to its callback (freed once, here).
    unsafe { doca_task_free(doca_dma_task_memcpy_as_task(task)) };
    doca_buf_reset_data_len(dst);
}

/// The error callback: a failed copy stops the loop (the row asserts none).
unsafe extern "C" fn on_error(task: *mut DocaTask, _task_data: DocaData, _ctx_data: DocaData) {
    // SAFETY: as in `on_done`.
    unsafe { doca_task_free(doca_dma_task_memcpy_as_task(task)) };
}

/// Fails with the call's name when a setup call does not succeed.
fn ok(what: &str, code: i32) -> Result<(), String> {
    if code == DOCA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what}: DOCA error {code}"))
    }
}

/// The device at PCI address `pci`, opened as DOCA's samples open it.
fn open_dev(pci: &std::ffi::CStr) -> Result<*mut DocaDev, String> {
    let (mut list, mut n) = (null_mut(), 0u32);
    // SAFETY: out-parameters of the right types.
    ok("doca_devinfo_create_list", unsafe { doca_devinfo_create_list(&mut list, &mut n) })?;
    let mut dev = null_mut();
    for i in 0..n as usize {
        let mut eq = 0u8;
        // SAFETY: `list` holds `n` devinfo handles; `pci` is a C string.
        let info = unsafe { *list.add(i) };
        // SAFETY: as above.
        if unsafe { doca_devinfo_is_equal_pci_addr(info, pci.as_ptr(), &mut eq) } == DOCA_SUCCESS && eq != 0 {
            // SAFETY: a devinfo handle of the list and an out-parameter.
            ok("doca_dev_open", unsafe { doca_dev_open(info, &mut dev) })?;
            break;
        }
    }
    // SAFETY: the list the call above made, destroyed once.
    unsafe { doca_devinfo_destroy_list(list) };
    if dev.is_null() {
        return Err(format!("no device {pci:?}"));
    }
    Ok(dev)
}

/// The "dma small memcpy task cycle (64 B)" row's loop through the C ABI: a DMA context on
/// an engine, a 64-byte copy between two buffers of one map, `k` times: alloc_init, submit,
/// progress until the C callback ran (it frees the task and empties the destination). Its
/// memory lives as long as the loop.
pub fn dma_cycle_loop() -> Result<impl FnMut(u64), String> {
    let mem: &'static mut [u8] = vec![1u8; 8192].leak();
    let dev = open_dev(c"b1:00.0")?;
    let (mut pe, mut dma): (*mut DocaPe, *mut DocaDma) = (null_mut(), null_mut());
    // SAFETY: out-parameters and handles this function made, in DOCA's order.
    unsafe {
        ok("doca_pe_create", doca_pe_create(&mut pe))?;
        ok("doca_dma_create", doca_dma_create(dev, &mut dma))?;
    }
    let conf = doca_dma_task_memcpy_set_conf(dma, Some(on_done), Some(on_error), 64);
    ok("doca_dma_task_memcpy_set_conf", conf)?;
    ok("doca_pe_connect_ctx", doca_pe_connect_ctx(pe, doca_dma_as_ctx(dma)))?;
    ok("doca_ctx_start", doca_ctx_start(doca_dma_as_ctx(dma)))?;
    let (mut map, mut inv, mut src, mut dst) = (null_mut(), null_mut(), null_mut(), null_mut());
    let base = mem.as_mut_ptr().cast::<c_void>();
    // SAFETY: `mem` lives as long as the process (leaked above); out-parameters of the right
    // types; the buffers lie inside the map's range.
    unsafe {
        ok("doca_mmap_create", doca_mmap_create(&mut map))?;
        ok("doca_mmap_set_memrange", doca_mmap_set_memrange(map, base, mem.len()))?;
        ok("doca_mmap_set_permissions", doca_mmap_set_permissions(map, LOCAL_READ_WRITE))?;
        ok("doca_mmap_add_dev", doca_mmap_add_dev(map, dev))?;
        ok("doca_mmap_start", doca_mmap_start(map))?;
        ok("doca_buf_inventory_create", doca_buf_inventory_create(4, &mut inv))?;
        ok("doca_buf_inventory_start", doca_buf_inventory_start(inv))?;
        ok("buf_get_by_data", doca_buf_inventory_buf_get_by_data(inv, map, base, 64, &mut src))?;
        ok("buf_get_by_addr", doca_buf_inventory_buf_get_by_addr(inv, map, base.add(4096), 64, &mut dst))?;
    }
    DONE.set((0, dst));
    Ok(move |k: u64| {
        for _ in 0..k {
            let before = DONE.get().0;
            let mut task = null_mut();
            // SAFETY: live handles and an out-parameter; the task is the one just made.
            let code =
                unsafe { doca_dma_task_memcpy_alloc_init(dma, src, dst, DocaData { u64: 0 }, &mut task) };
            assert_eq!(code, DOCA_SUCCESS, "doca_dma_task_memcpy_alloc_init");
            assert_eq!(
                doca_task_submit(doca_dma_task_memcpy_as_task(task)),
                DOCA_SUCCESS,
                "doca_task_submit"
            );
            while DONE.get().0 == before {
                doca_pe_progress(pe);
            }
        }
    })
}
