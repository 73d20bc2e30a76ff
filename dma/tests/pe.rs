//! DMA memcpy tasks shaped like DOCA's pe_* samples: polling, event (sleeping on the
//! notification handle), reactive (destroy in the IDLE callback), async stop, resubmission,
//! a failing task; plus the codes of try_submit and of an empty pool.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe};
use doca_dma::{caps, Dma, MemcpyTask, FLUSH_STATUS};
use doca_mmap::{AccessFlags, Mmap};

/// A started map of `len` bytes filled with `fill`, read-write, added to `dev` if given.
fn map(dev: Option<&Dev>, len: usize, fill: u8, perms: AccessFlags) -> Mmap {
    let m = Mmap::create().unwrap();
    m.set_memrange(vec![fill; len]).unwrap();
    m.set_permissions(perms).unwrap();
    if let Some(dev) = dev {
        m.add_dev(dev).unwrap();
    }
    m.start().unwrap();
    m
}

/// What the callbacks saw: (task user data, status, destination data length).
type Seen = Rc<RefCell<Vec<(u64, Result<(), Error>, usize)>>>;

fn record(seen: &Seen) -> impl FnMut(MemcpyTask, Data, Data) + 'static {
    let seen = seen.clone();
    move |t: MemcpyTask, td: Data, _| {
        let dst_len = t.dst().map_or(0, |d| d.data_len().unwrap());
        seen.borrow_mut().push((td.as_u64(), t.status(), dst_len));
    }
}

struct Setup {
    pe: Pe,
    dma: Dma,
    dev: Dev,
    inv: Inventory,
    seen: Seen,
}

fn setup(num_tasks: u32) -> Setup {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let dma = Dma::create(&dev).unwrap();
    pe.connect_ctx(&dma.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    dma.task_memcpy_set_conf(record(&seen), record(&seen), num_tasks).unwrap();
    dma.as_ctx().start().unwrap();
    let inv = Inventory::create(64).unwrap();
    inv.start().unwrap();
    Setup { pe, dma, dev, inv, seen }
}

/// Progress until `done` (bounded: the engine always moves a copy forward).
fn run(pe: &Pe, done: impl Fn() -> bool) {
    for _ in 0..100_000 {
        if done() {
            return;
        }
        pe.progress();
    }
    panic!("the engine did not finish");
}

/// A source with `len` bytes of data at `off` of `m`, and a destination of room `len` from
/// `buf_get_by_addr` (data length 0) at `doff` of `d`.
fn pair(s: &Setup, m: &Mmap, off: usize, d: &Mmap, doff: usize, len: usize) -> (Buf, Buf) {
    let src = s.inv.buf_get_data_at(m, off, len).unwrap();
    let (base, _) = d.memrange().unwrap();
    let dst = s.inv.buf_get_by_addr(d, base + doff, len).unwrap();
    (src, dst)
}

#[test]
fn polling_copies_every_task_and_the_destination_ends_with_the_source_length() {
    let s = setup(8);
    let rw = AccessFlags::LOCAL_READ_WRITE;
    let src_map = map(Some(&s.dev), 4 * 4096, 0, rw);
    let dst_map = map(Some(&s.dev), 4 * 4096, 0, rw);
    for i in 0..4 {
        src_map.access().unwrap().write(i * 4096, &vec![i as u8 + 1; 4096]).unwrap();
    }
    let mut bufs = Vec::new();
    for i in 0..4 {
        let (src, dst) = pair(&s, &src_map, i * 4096, &dst_map, i * 4096, 4096);
        let t = s.dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::from_u64(i as u64)).unwrap();
        t.submit().unwrap();
        bufs.push(dst);
    }
    assert!(s.seen.borrow().is_empty(), "submit returns at once; completions come from progress");
    run(&s.pe, || s.seen.borrow().len() == 4);
    for (i, (ud, status, dst_len)) in s.seen.borrow().iter().enumerate() {
        assert_eq!((*ud, *status, *dst_len), (i as u64, Ok(()), 4096));
    }
    for (i, dst) in bufs.iter().enumerate() {
        assert_eq!(dst.data_to_vec().unwrap(), vec![i as u8 + 1; 4096]);
    }
}

#[test]
fn the_copy_lands_after_the_destination_data_and_grows_it() {
    let s = setup(2);
    let rw = AccessFlags::LOCAL_READ_WRITE;
    let m = map(Some(&s.dev), 8192, 0, rw);
    m.access().unwrap().write(0, b"abcd").unwrap();
    m.access().unwrap().write(4096, b"XY").unwrap();
    let src = s.inv.buf_get_data_at(&m, 0, 4).unwrap();
    let dst = s.inv.buf_get_by_offsets(&m, 4096, 100, 4096, 2).unwrap(); // data "XY"
    let t = s.dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE).unwrap();
    t.submit().unwrap();
    run(&s.pe, || s.seen.borrow().len() == 1);
    assert_eq!(s.seen.borrow()[0].1, Ok(()));
    assert_eq!(dst.data_to_vec().unwrap(), b"XYabcd");
}

#[test]
fn buffer_lists_gather_and_scatter() {
    let s = setup(2);
    let rw = AccessFlags::LOCAL_READ_WRITE;
    let m = map(Some(&s.dev), 8192, 0, rw);
    m.access().unwrap().write(0, b"0123456789").unwrap();
    // Source: "012" + "3456789" (two elements); destination: rooms of 4 and 6.
    let s1 = s.inv.buf_get_data_at(&m, 0, 3).unwrap();
    let s2 = s.inv.buf_get_data_at(&m, 3, 7).unwrap();
    s1.chain_list(&s2).unwrap();
    let d1 = s.inv.buf_get_at(&m, 4096, 4).unwrap();
    let d2 = s.inv.buf_get_at(&m, 5000, 6).unwrap();
    d1.chain_list(&d2).unwrap();
    let t = s.dma.task_memcpy_alloc_init(Some(&s1), Some(&d1), Data::NONE).unwrap();
    t.submit().unwrap();
    run(&s.pe, || s.seen.borrow().len() == 1);
    assert_eq!(s.seen.borrow()[0].1, Ok(()));
    assert_eq!(d1.data_to_vec().unwrap(), b"0123");
    assert_eq!(d2.data_to_vec().unwrap(), b"456789");
}

#[test]
fn event_mode_sleeps_on_the_notification_handle_until_the_copy_completes() {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let s = setup(4);
    let rw = AccessFlags::LOCAL_READ_WRITE;
    // Three passes' worth: each wake-up moves the copy on and the next sleep returns at once.
    let len = 3 << 20;
    let src_map = map(Some(&s.dev), len, 7, rw);
    let dst_map = map(Some(&s.dev), len, 0, rw);
    let (src, dst) = pair(&s, &src_map, 0, &dst_map, 0, len);
    s.dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE).unwrap().submit().unwrap();
    let mut sleeps = 0;
    while s.seen.borrow().is_empty() {
        s.pe.request_notification().unwrap();
        let handle = s.pe.notification_handle();
        let mut fds = [PollFd::new(&handle, PollFlags::IN)];
        // Generous: a queued copy must make the handle readable at once; a lost wake-up
        // fails here instead of hanging.
        let n = poll(&mut fds, Some(&Timespec { tv_sec: 60, tv_nsec: 0 })).unwrap();
        assert_eq!(n, 1, "the handle did not become readable while a copy waited");
        s.pe.clear_notification().unwrap();
        while s.pe.progress() {}
        sleeps += 1;
        assert!(sleeps < 1000);
    }
    assert_eq!(s.seen.borrow()[0].1, Ok(()));
    assert!(dst.data_to_vec().unwrap().iter().all(|&b| b == 7));
    assert_eq!(dst.data_len().unwrap(), len);
}

#[test]
fn a_large_copy_is_split_over_passes_and_does_not_stall_another_context() {
    let s = setup(1);
    let rw = AccessFlags::LOCAL_READ_WRITE;
    let len = 64 << 20;
    let src_map = map(Some(&s.dev), len, 3, rw);
    let dst_map = map(Some(&s.dev), len, 0, rw);
    let (src, dst) = pair(&s, &src_map, 0, &dst_map, 0, len);
    s.dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE).unwrap().submit().unwrap();
    // A second DMA context on the same engine with a small copy submitted after the big one.
    let other = Dma::create(&s.dev).unwrap();
    s.pe.connect_ctx(&other.as_ctx()).unwrap();
    let small_seen: Seen = Rc::default();
    other.task_memcpy_set_conf(record(&small_seen), record(&small_seen), 1).unwrap();
    other.as_ctx().start().unwrap();
    let m = map(Some(&s.dev), 8192, 9, rw);
    let (ss, sd) = pair(&s, &m, 0, &m, 4096, 16);
    other.task_memcpy_alloc_init(Some(&ss), Some(&sd), Data::NONE).unwrap().submit().unwrap();
    let mut passes = 0;
    while s.seen.borrow().is_empty() {
        s.pe.progress();
        passes += 1;
        assert!(passes < 100_000);
        if passes == 1 {
            assert_eq!(small_seen.borrow().len(), 1, "the small copy finished on the first pass");
            assert!(s.seen.borrow().is_empty(), "the 64 MiB copy is not done in one pass");
        }
    }
    let per_pass = caps::bytes_per_pass(s.dev.as_devinfo()).unwrap();
    assert!(passes >= len / per_pass, "{passes} passes for {len} bytes at {per_pass} per pass");
    assert_eq!(s.seen.borrow()[0].1, Ok(()));
    assert!(dst.data_to_vec().unwrap().iter().all(|&b| b == 3));
}

#[test]
fn reactive_destroy_in_the_idle_callback() {
    let s = setup(2);
    let rw = AccessFlags::LOCAL_READ_WRITE;
    let m = map(Some(&s.dev), 8192, 5, rw);
    let (src, dst) = pair(&s, &m, 0, &m, 4096, 64);
    let slot: Rc<RefCell<Option<Dma>>> = Rc::new(RefCell::new(None));
    let destroyed = Rc::new(Cell::new(false));
    let (slot2, destroyed2) = (slot.clone(), destroyed.clone());
    s.dma
        .as_ctx()
        .set_state_changed_cb(move |_, _, _, next| {
            if next == CtxState::Idle {
                if let Some(dma) = slot2.borrow_mut().take() {
                    dma.destroy().map_err(|r| r.error).unwrap();
                    destroyed2.set(true);
                }
            }
        })
        .unwrap();
    // Stop from the completion callback, as pe_reactive does once its tasks are done.
    let Setup { pe, dma, seen, .. } = s;
    let ctx = dma.as_ctx();
    *slot.borrow_mut() = Some(dma);
    let t = {
        let d = slot.borrow();
        d.as_ref().unwrap().task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE).unwrap()
    };
    t.submit().unwrap();
    run(&pe, || seen.borrow().len() == 1);
    assert_eq!(ctx.stop(), Ok(()), "the task was freed in its callback: Idle at once");
    run(&pe, || destroyed.get());
    assert_eq!(seen.borrow()[0].1, Ok(()));
}

#[test]
fn stop_inside_a_completion_flushes_the_rest_with_an_error_and_reaches_idle() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let dma = Dma::create(&dev).unwrap();
    pe.connect_ctx(&dma.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    let ctx = dma.as_ctx();
    let (seen_ok, ctx2) = (seen.clone(), ctx.clone());
    dma.task_memcpy_set_conf(
        move |t, td, _| {
            seen_ok.borrow_mut().push((td.as_u64(), t.status(), 0));
            drop(t);
            if td.as_u64() == 0 {
                assert_eq!(ctx2.stop(), Err(Error::InProgress), "tasks are still in flight");
            }
        },
        record(&seen),
        8,
    )
    .unwrap();
    ctx.start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();
    let m = map(Some(&dev), 1 << 23, 1, AccessFlags::LOCAL_READ_WRITE);
    // Task 0 is small; tasks 1..4 are 1 MiB each (beyond the first pass's budget).
    let mut off = 0;
    for i in 0..4u64 {
        let len = if i == 0 { 64 } else { 1 << 20 };
        let src = inv.buf_get_data_at(&m, off, len).unwrap();
        let dst = inv.buf_get_at(&m, off + (1 << 22), len).unwrap();
        off += len;
        dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::from_u64(i)).unwrap().submit().unwrap();
    }
    run(&pe, || ctx.state() == CtxState::Idle);
    let seen = seen.borrow();
    assert_eq!(seen[0], (0, Ok(()), 0));
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(seen[1..].iter().any(|e| e.1 == Err(FLUSH_STATUS)), "{seen:?}");
    assert!(seen[1..].iter().all(|e| e.1 == Ok(()) || e.1 == Err(FLUSH_STATUS)));
}

#[test]
fn a_task_resubmitted_from_its_completion_copies_again() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let dma = Dma::create(&dev).unwrap();
    pe.connect_ctx(&dma.as_ctx()).unwrap();
    let rounds = Rc::new(Cell::new(0u32));
    let r = rounds.clone();
    dma.task_memcpy_set_conf(
        move |t, _, _| {
            r.set(r.get() + 1);
            if r.get() < 5 {
                let dst = t.dst().unwrap();
                dst.reset_data_len().unwrap(); // room again for the next round
                t.submit().map_err(|e| e.error).unwrap();
            }
        },
        |_, _, _| panic!("no task fails"),
        1,
    )
    .unwrap();
    dma.as_ctx().start().unwrap();
    let inv = Inventory::create(4).unwrap();
    inv.start().unwrap();
    let m = map(Some(&dev), 8192, 4, AccessFlags::LOCAL_READ_WRITE);
    let src = inv.buf_get_data_at(&m, 0, 100).unwrap();
    let dst = inv.buf_get_at(&m, 4096, 100).unwrap();
    dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE).unwrap().submit().unwrap();
    run(&pe, || rounds.get() == 5);
    assert_eq!(dst.data_len().unwrap(), 100);
}

/// pe_task_error: the third of five tasks has a zero-length source. Submit does not
/// validate: the bad task completes through the error callback, and, as on DOCA's engine, the
/// failure is fatal to the context — it moves to Stopping, every task still queued completes
/// with an error, and the context reaches Idle once the callbacks freed them.
#[test]
fn a_failing_task_completes_with_its_status_and_stops_its_context() {
    let s = setup(8);
    let states: Rc<RefCell<Vec<CtxState>>> = Rc::default();
    let st = states.clone();
    s.dma.as_ctx().set_state_changed_cb(move |_, _, _, next| st.borrow_mut().push(next)).unwrap();
    let m = map(Some(&s.dev), 5 * 2 * 4096, 1, AccessFlags::LOCAL_READ_WRITE);
    for i in 0..5u64 {
        let (src, dst) = pair(&s, &m, i as usize * 8192, &m, i as usize * 8192 + 4096, 64);
        if i == 2 {
            src.reset_data_len().unwrap(); // pe_task_error's bad task
        }
        let t = s.dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::from_u64(i)).unwrap();
        t.submit().unwrap(); // submit does not validate
    }
    run(&s.pe, || s.dma.as_ctx().state() == CtxState::Idle);
    let seen: Vec<(u64, Result<(), Error>)> = s.seen.borrow().iter().map(|(d, r, _)| (*d, *r)).collect();
    assert_eq!(
        seen,
        [
            (0, Ok(())),
            (1, Ok(())),
            (2, Err(Error::InvalidValue)),
            (3, Err(FLUSH_STATUS)),
            (4, Err(FLUSH_STATUS))
        ]
    );
    // (The start's own transition, still pending when the callback was set, comes first.)
    assert_eq!(
        *states.borrow(),
        [CtxState::Running, CtxState::Stopping, CtxState::Idle],
        "the failure stopped the context"
    );
}

/// One bad task through submit (its error status) and through try_submit (INVALID_VALUE).
fn both_ways(s: &Setup, src: &Buf, dst: &Buf) -> (Error, Error) {
    let t = s.dma.task_memcpy_alloc_init(Some(src), Some(dst), Data::NONE).unwrap();
    let refused = t.try_submit().unwrap_err();
    let try_code = refused.error;
    refused.value.submit().unwrap();
    let before = s.seen.borrow().len();
    run(&s.pe, || s.seen.borrow().len() > before);
    let status = s.seen.borrow().last().unwrap().1.unwrap_err();
    // The failure stopped the context: it reaches Idle, and starts again for the next case.
    run(&s.pe, || s.dma.as_ctx().state() == CtxState::Idle);
    s.dma.as_ctx().start().unwrap();
    (try_code, status)
}

#[test]
fn codes_of_bad_tasks_through_submit_and_try_submit() {
    let s = setup(4);
    let rw = AccessFlags::LOCAL_READ_WRITE;
    let ok = map(Some(&s.dev), 8192, 1, rw);
    // Destination too small: INVALID_VALUE either way.
    let src = s.inv.buf_get_data_at(&ok, 0, 200).unwrap();
    let small = s.inv.buf_get_at(&ok, 4096, 100).unwrap();
    assert_eq!(both_ways(&s, &src, &small), (Error::InvalidValue, Error::InvalidValue));
    // Destination map without LOCAL_READ_WRITE: NOT_PERMITTED.
    let ro = map(Some(&s.dev), 4096, 0, AccessFlags::PCI_READ_ONLY);
    let dst_ro = s.inv.buf_get_at(&ro, 0, 4096).unwrap();
    assert_eq!(both_ways(&s, &src, &dst_ro), (Error::InvalidValue, Error::NotPermitted));
    // A map not added to the DMA's device, as source or as destination: NOT_PERMITTED.
    let stranger = map(None, 4096, 2, rw);
    let foreign_src = s.inv.buf_get_data_at(&stranger, 0, 10).unwrap();
    let dst = s.inv.buf_get_at(&ok, 4096, 4096).unwrap();
    assert_eq!(both_ways(&s, &foreign_src, &dst), (Error::InvalidValue, Error::NotPermitted));
    let foreign_dst = s.inv.buf_get_at(&stranger, 0, 4096).unwrap();
    assert_eq!(both_ways(&s, &src, &foreign_dst), (Error::InvalidValue, Error::NotPermitted));
    // Zero-length source.
    let empty = s.inv.buf_get_at(&ok, 0, 10).unwrap();
    assert_eq!(both_ways(&s, &empty, &dst), (Error::InvalidValue, Error::InvalidValue));
    // A good task passes try_submit.
    let t = s.dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE).unwrap();
    t.try_submit().unwrap();
    let before = s.seen.borrow().len();
    run(&s.pe, || s.seen.borrow().len() > before);
    assert_eq!(s.seen.borrow().last().unwrap().1, Ok(()));
}

#[test]
fn a_task_without_buffers_is_allocated_and_refused_at_submission() {
    let s = setup(2);
    let t = s.dma.task_memcpy_alloc_init(None, None, Data::NONE).unwrap();
    assert!(t.src().is_none() && t.dst().is_none());
    let r = t.try_submit().unwrap_err();
    assert_eq!(r.error, Error::InvalidValue);
    let m = map(Some(&s.dev), 8192, 6, AccessFlags::LOCAL_READ_WRITE);
    let (src, dst) = pair(&s, &m, 0, &m, 4096, 32);
    r.value.set_src(Some(&src));
    r.value.set_dst(Some(&dst));
    r.value.try_submit().unwrap();
    run(&s.pe, || s.seen.borrow().len() == 1);
    assert_eq!(s.seen.borrow()[0].1, Ok(()));
    assert_eq!(dst.data_to_vec().unwrap(), vec![6; 32]);
}

#[test]
fn alloc_beyond_num_tasks_is_no_memory_and_conf_beyond_the_cap_is_invalid() {
    let s = setup(2);
    let a = s.dma.task_memcpy_alloc_init(None, None, Data::NONE).unwrap();
    let _b = s.dma.task_memcpy_alloc_init(None, None, Data::NONE).unwrap();
    assert_eq!(s.dma.task_memcpy_alloc_init(None, None, Data::NONE).unwrap_err(), Error::NoMemory);
    drop(a);
    assert!(s.dma.task_memcpy_alloc_init(None, None, Data::NONE).is_ok());
    let dma = Dma::create(&s.dev).unwrap();
    let max = dma.cap_get_max_num_tasks().unwrap();
    assert_eq!(dma.task_memcpy_set_conf(|_, _, _| {}, |_, _, _| {}, max + 1), Err(Error::InvalidValue));
    assert!(caps::task_memcpy_is_supported(s.dev.as_devinfo()).is_ok());
    assert!(caps::task_memcpy_max_buf_list_len(s.dev.as_devinfo()).unwrap() >= 1);
}

/// The engine checks a buffer's map (the device reaches it, with the permission the access
/// needs) once per buffer handle, since that answer cannot change while the handle is live.
/// A handle that went stale is never taken for checked: a task slot allocated again with the
/// same descriptor taken again — from a map meanwhile stopped, taken off the device and
/// restarted — fails with NOT_PERMITTED, and with the stale handle with BAD_STATE.
#[test]
fn a_buffer_checked_before_is_checked_again_once_it_went_back_to_its_inventory() {
    let s = setup(1); // one slot: every task below reuses it, with its last buffers
    let rw = AccessFlags::LOCAL_READ_WRITE;
    let m = map(Some(&s.dev), 4096, 3, rw);
    let d = map(Some(&s.dev), 4096, 0, rw);
    let (src, dst) = pair(&s, &m, 0, &d, 0, 64);
    let copy = |src: &Buf| {
        dst.reset_data_len().unwrap();
        s.dma.task_memcpy_alloc_init(Some(src), Some(&dst), Data::NONE).unwrap().submit().unwrap();
        let before = s.seen.borrow().len();
        run(&s.pe, || s.seen.borrow().len() > before);
        let status = s.seen.borrow().last().unwrap().1;
        if status.is_err() {
            run(&s.pe, || s.dma.as_ctx().state() == CtxState::Idle);
            s.dma.as_ctx().start().unwrap();
        }
        status
    };
    assert_eq!(copy(&src), Ok(()));
    assert_eq!(copy(&src), Ok(()), "the same buffers again");
    // The source goes back to its inventory (the slot still holds its handle, now stale), and
    // its map loses the device while none of its buffers is out; the same descriptor, taken
    // again, is on a map the device no longer reaches.
    let idx = src.index();
    src.dec_refcount().unwrap();
    m.stop().unwrap();
    m.rm_dev(&s.dev).unwrap();
    m.start().unwrap();
    let again = s.inv.buf_get_data_at(&m, 0, 64).unwrap();
    assert_eq!(again.index(), idx, "the same descriptor, a new generation");
    assert_eq!(copy(&again), Err(Error::NotPermitted));
    // The stale handle itself (the failure above restarted the context: a fresh slot).
    assert_eq!(copy(&src), Err(Error::BadState));
}

/// A slot allocated again with the buffers it already checked takes the engine's short path
/// (each buffer read once, the copy, the data length): the statuses are those of the full
/// checks, and the buffers' data is read when the engine reaches the task, not at alloc.
#[test]
fn a_slot_with_buffers_checked_before_gives_the_statuses_of_the_full_checks() {
    let s = setup(1); // one slot: every task below reuses it, with its last buffers
    let m = map(Some(&s.dev), 4096, 0, AccessFlags::LOCAL_READ_WRITE);
    let fill: Vec<u8> = (0..=255).collect();
    let src = s.inv.buf_get_at(&m, 0, 256).unwrap();
    src.append(&fill).unwrap();
    let (base, _) = m.memrange().unwrap();
    let dst = s.inv.buf_get_by_addr(&m, base + 128, 128).unwrap(); // overlaps src's buffer
    let copy = |data: usize, len: usize, change_after_alloc: Option<(usize, usize)>| {
        dst.reset_data_len().unwrap();
        src.set_data_offset(data, len).unwrap();
        let t = s.dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE).unwrap();
        if let Some((data, len)) = change_after_alloc {
            src.set_data_offset(data, len).unwrap();
        }
        t.submit().unwrap();
        let before = s.seen.borrow().len();
        run(&s.pe, || s.seen.borrow().len() > before);
        let status = s.seen.borrow().last().unwrap().1;
        if status.is_err() {
            run(&s.pe, || s.dma.as_ctx().state() == CtxState::Idle);
            s.dma.as_ctx().start().unwrap();
        }
        status
    };
    for _ in 0..3 {
        assert_eq!(copy(0, 64, None), Ok(()));
        assert_eq!(dst.data_to_vec().unwrap(), fill[..64]);
    }
    // The source's data changed between alloc and submit: the engine copies what it holds then.
    assert_eq!(copy(0, 64, Some((10, 32))), Ok(()));
    assert_eq!(dst.data_to_vec().unwrap(), fill[10..42]);
    // Ranges overlapping in one map: IN_USE (the slot's buffers passed their map checks).
    assert_eq!(copy(100, 64, None), Err(Error::InUse));
    assert_eq!(copy(0, 64, None), Ok(()));
    assert_eq!(copy(100, 64, None), Err(Error::InUse), "again, right after a good copy");
    // No data, more data than the destination's room: INVALID_VALUE.
    assert_eq!(copy(0, 64, None), Ok(()));
    assert_eq!(copy(0, 0, None), Err(Error::InvalidValue));
    assert_eq!(copy(0, 64, None), Ok(()));
    assert_eq!(copy(0, 129, None), Err(Error::InvalidValue));
    // The destination's room after its data: a copy lands after what it holds.
    assert_eq!(copy(0, 64, None), Ok(()));
    dst.reset_data_len().unwrap();
    dst.increase_data_len(100).unwrap();
    src.set_data_offset(0, 28).unwrap();
    let t = s.dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE).unwrap();
    t.submit().unwrap();
    let before = s.seen.borrow().len();
    run(&s.pe, || s.seen.borrow().len() > before);
    assert_eq!(s.seen.borrow().last().unwrap().1, Ok(()));
    assert_eq!(dst.data_len().unwrap(), 128, "the whole room used");
    assert_eq!(dst.data_to_vec().unwrap()[100..], fill[..28]);
}

#[test]
fn a_slot_whose_copy_was_flushed_part_way_copies_from_its_first_byte_after_a_restart() {
    let s = setup(1);
    let rw = AccessFlags::LOCAL_READ_WRITE;
    let per_pass = caps::bytes_per_pass(s.dev.as_devinfo()).unwrap();
    let big = 2 * per_pass;
    let src_map = map(Some(&s.dev), big, 7, rw);
    let dst_map = map(Some(&s.dev), big, 0, rw);
    let (src, dst) = pair(&s, &src_map, 0, &dst_map, 0, big);
    s.dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::from_u64(1)).unwrap().submit().unwrap();
    s.pe.progress(); // half of it copied
    assert!(s.seen.borrow().is_empty(), "not done in one pass");
    let ctx = s.dma.as_ctx();
    assert_eq!(ctx.stop(), Err(Error::InProgress));
    run(&s.pe, || ctx.state() == CtxState::Idle);
    assert_eq!(s.seen.borrow()[0].1, Err(FLUSH_STATUS));
    assert_eq!(dst.data_len().unwrap(), 0, "a flushed copy changes no data length");
    // The one slot again, on a small copy of other bytes: from its first byte, all of it.
    ctx.start().unwrap();
    let m = map(Some(&s.dev), 8192, 9, rw);
    let (ss, sd) = pair(&s, &m, 0, &m, 4096, 100);
    s.dma.task_memcpy_alloc_init(Some(&ss), Some(&sd), Data::from_u64(2)).unwrap().submit().unwrap();
    run(&s.pe, || s.seen.borrow().len() == 2);
    assert_eq!(s.seen.borrow()[1], (2, Ok(()), 100));
    assert_eq!(sd.data_to_vec().unwrap(), vec![9u8; 100]);
}
