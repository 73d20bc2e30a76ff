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
    doca_buf_inventory_start, doca_buf_reset_data_len, doca_comch_client_as_ctx, doca_comch_client_create,
    doca_comch_client_event_msg_recv_register, doca_comch_client_get_connection,
    doca_comch_client_task_send_alloc_init, doca_comch_client_task_send_set_conf, doca_comch_server_as_ctx,
    doca_comch_server_create, doca_comch_server_event_connection_status_changed_register,
    doca_comch_server_event_msg_recv_register, doca_comch_server_get_server_ctx,
    doca_comch_server_task_send_alloc_init, doca_comch_server_task_send_set_conf,
    doca_comch_task_send_as_task, doca_ctx_get_state, doca_ctx_start, doca_dev_open, doca_dev_rep_open,
    doca_devinfo_create_list, doca_devinfo_destroy_list, doca_devinfo_is_equal_pci_addr,
    doca_devinfo_rep_create_list, doca_devinfo_rep_destroy_list, doca_devinfo_rep_is_equal_pci_addr,
    doca_dma_as_ctx, doca_dma_create, doca_dma_task_memcpy_alloc_init, doca_dma_task_memcpy_as_task,
    doca_dma_task_memcpy_set_conf, doca_mmap_add_dev, doca_mmap_create, doca_mmap_set_memrange,
    doca_mmap_set_permissions, doca_mmap_start, doca_pe_connect_ctx, doca_pe_create, doca_pe_progress,
    doca_task_free, doca_task_submit, DocaBuf, DocaCcConnection, DocaCcSide, DocaData, DocaDev, DocaDevRep,
    DocaDma, DocaPe, DocaTask, DOCA_SUCCESS,
};

/// `DOCA_ERROR_IN_PROGRESS`: an asynchronous start (a client's).
const DOCA_ERROR_IN_PROGRESS: i32 = doca_core::Error::InProgress.code();

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

/// The representor of the host function `pci` on DPU device `dev`, opened as DOCA's samples
/// open it (`DOCA_DEVINFO_REP_FILTER_NET`).
fn open_rep(dev: *mut DocaDev, pci: &std::ffi::CStr) -> Result<*mut DocaDevRep, String> {
    let (mut list, mut n) = (null_mut(), 0u32);
    // SAFETY: a live device handle and out-parameters of the right types.
    ok("doca_devinfo_rep_create_list", unsafe {
        doca_devinfo_rep_create_list(dev, 1 << 1, &mut list, &mut n)
    })?;
    let mut rep = null_mut();
    for i in 0..n as usize {
        let mut eq = 0u8;
        // SAFETY: `list` holds `n` handles; `pci` is a C string.
        let info = unsafe { *list.add(i) };
        // SAFETY: as above.
        if unsafe { doca_devinfo_rep_is_equal_pci_addr(info, pci.as_ptr(), &mut eq) } == DOCA_SUCCESS
            && eq != 0
        {
            // SAFETY: a handle of the list and an out-parameter.
            ok("doca_dev_rep_open", unsafe { doca_dev_rep_open(info, &mut rep) })?;
            break;
        }
    }
    // SAFETY: the list made above, destroyed once.
    unsafe { doca_devinfo_rep_destroy_list(list) };
    if rep.is_null() {
        return Err(format!("no representor {pci:?}"));
    }
    Ok(rep)
}

/// A send task's completion or error, as a C program's callback: frees the task.
unsafe extern "C" fn on_sent(task: *mut DocaTask, _task_data: DocaData, _ctx_data: DocaData) {
    // SAFETY: the task's own handle, given to its callback (freed once, here).
    unsafe { doca_task_free(doca_comch_task_send_as_task(task)) };
}

thread_local! {
    /// Messages the C client received (its receive callback's count).
    static RECEIVED: Cell<u64> = const { Cell::new(0) };
}

/// The C client's receive callback: counts.
unsafe extern "C" fn on_reply(_event: *mut c_void, _msg: *mut u8, _len: u64, _conn: *mut DocaCcConnection) {
    RECEIVED.set(RECEIVED.get() + 1);
}

/// The C echo server's receive callback: sends the message back on its connection, as
/// NVIDIA's samples answer (`get_server_ctx`, `task_send_alloc_init`, `doca_task_submit`).
unsafe extern "C" fn on_echo(_event: *mut c_void, msg: *mut u8, len: u64, conn: *mut DocaCcConnection) {
    let server = doca_comch_server_get_server_ctx(conn);
    let mut task = null_mut();
    if doca_comch_server_task_send_alloc_init(server, conn, msg.cast(), len as u32, &mut task) == DOCA_SUCCESS
        && doca_task_submit(doca_comch_task_send_as_task(task)) != DOCA_SUCCESS
    {
        // SAFETY: the task just made, refused: freed once, here.
        unsafe { doca_task_free(doca_comch_task_send_as_task(task)) };
    }
}

/// A connection's arrival or departure (the server registers both, as DOCA requires).
unsafe extern "C" fn on_connection(_event: *mut c_void, _conn: *mut DocaCcConnection, _ok: u8) {}

/// The echo server of the C ABI control-path row (the peer process, DPU side): a Comm
/// Channel server named `name` on the DPU device and its host function's representor,
/// answering each message with its bytes, progressed (busy) until `stop` says so. Each pass
/// also runs `beside` (another engine's pass: the row's Rust server), which says whether it
/// did anything.
pub fn comch_echo_server(
    name: &std::ffi::CStr,
    stop: impl Fn() -> bool,
    mut beside: impl FnMut() -> bool,
) -> Result<(), String> {
    let dev = open_dev(c"03:00.0")?;
    let rep = open_rep(dev, c"b1:00.0")?;
    let (mut pe, mut server): (*mut DocaPe, *mut DocaCcSide) = (null_mut(), null_mut());
    // SAFETY: out-parameters and handles this function made, in the order NVIDIA's samples use.
    unsafe {
        ok("doca_pe_create", doca_pe_create(&mut pe))?;
        ok("doca_comch_server_create", doca_comch_server_create(dev, rep, name.as_ptr(), &mut server))?;
    }
    let conf = doca_comch_server_task_send_set_conf(server, Some(on_sent), Some(on_sent), 1024);
    ok("doca_comch_server_task_send_set_conf", conf)?;
    ok("msg_recv_register", doca_comch_server_event_msg_recv_register(server, Some(on_echo)))?;
    let conn = doca_comch_server_event_connection_status_changed_register(
        server,
        Some(on_connection),
        Some(on_connection),
    );
    ok("connection_status_changed_register", conn)?;
    ok("doca_pe_connect_ctx", doca_pe_connect_ctx(pe, doca_comch_server_as_ctx(server)))?;
    ok("doca_ctx_start", doca_ctx_start(doca_comch_server_as_ctx(server)))?;
    println!("ready");
    let mut pass = 0u32;
    // Stop conditions every 1024 passes: the loop is the library's, not stdin's.
    while pass % 1024 != 0 || !stop() {
        pass = pass.wrapping_add(1);
        if doca_pe_progress(pe) == 0 && !beside() {
            std::hint::spin_loop();
        }
    }
    Ok(())
}

/// The measuring side of the C ABI control-path row: a Comm Channel client of `name` on the
/// host device, Running when this returns, and its round trip: send `msg` (alloc_init,
/// submit) and progress until the C receive callback counted the echo. The round trip
/// returns false when a call is refused or no echo comes within `give_up`.
pub fn comch_client(
    name: &std::ffi::CStr,
    give_up: std::time::Duration,
) -> Result<impl FnMut(&[u8]) -> bool, String> {
    use std::time::Instant;
    let dev = open_dev(c"b1:00.0")?;
    let (mut pe, mut client): (*mut DocaPe, *mut DocaCcSide) = (null_mut(), null_mut());
    // SAFETY: out-parameters and handles this function made.
    unsafe {
        ok("doca_pe_create", doca_pe_create(&mut pe))?;
        ok("doca_comch_client_create", doca_comch_client_create(dev, name.as_ptr(), &mut client))?;
    }
    let conf = doca_comch_client_task_send_set_conf(client, Some(on_sent), Some(on_sent), 1024);
    ok("doca_comch_client_task_send_set_conf", conf)?;
    ok("msg_recv_register", doca_comch_client_event_msg_recv_register(client, Some(on_reply)))?;
    let ctx = doca_comch_client_as_ctx(client);
    ok("doca_pe_connect_ctx", doca_pe_connect_ctx(pe, ctx))?;
    let started = doca_ctx_start(ctx);
    if started != DOCA_ERROR_IN_PROGRESS {
        ok("doca_ctx_start", started)?;
    }
    let deadline = Instant::now() + give_up;
    let mut state = 0u32;
    // `DOCA_CTX_STATE_RUNNING` is 2.
    while state != 2 {
        doca_pe_progress(pe);
        // SAFETY: a live context and an out-parameter.
        ok("doca_ctx_get_state", unsafe { doca_ctx_get_state(ctx, &mut state) })?;
        if Instant::now() > deadline {
            return Err("the client did not connect".into());
        }
    }
    let mut conn = null_mut();
    // SAFETY: a live client and an out-parameter.
    ok("doca_comch_client_get_connection", unsafe { doca_comch_client_get_connection(client, &mut conn) })?;
    Ok(move |msg: &[u8]| {
        let before = RECEIVED.get();
        let mut task = null_mut();
        let len = msg.len() as u32;
        if doca_comch_client_task_send_alloc_init(client, conn, msg.as_ptr().cast(), len, &mut task)
            != DOCA_SUCCESS
        {
            return false;
        }
        if doca_task_submit(doca_comch_task_send_as_task(task)) != DOCA_SUCCESS {
            // SAFETY: the task just made, refused: freed once, here.
            unsafe { doca_task_free(doca_comch_task_send_as_task(task)) };
            return false;
        }
        let deadline = Instant::now() + give_up;
        let mut pass = 0u32;
        while RECEIVED.get() == before {
            doca_pe_progress(pe);
            pass = pass.wrapping_add(1);
            if pass % 1024 == 0 && Instant::now() > deadline {
                return false;
            }
        }
        true
    })
}
