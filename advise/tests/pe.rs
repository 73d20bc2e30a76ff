//! Cache-invalidate tasks shaped like DOCA 2.9's cache_invalidate sample (a task on a buffer
//! submitted from progress, its completion ending the loop), and every status of the table in
//! the crate's documentation: no buffer, a map not on the device, a buffer returned, a stop
//! with tasks queued, a failure (fatal to the context, as on DOCA's engine), try_submit's
//! code and an empty pool.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe, Topology};
use doca_mmap::{AccessFlags, Mmap};
use doca_mmap_advise::{caps, InvalidateCacheTask, MmapAdvise, FLUSH_STATUS};

/// A started read-write map of `len` bytes, added to `dev` if given.
fn map(dev: Option<&Dev>, len: usize) -> Mmap {
    let m = Mmap::create().unwrap();
    m.set_memrange(vec![7u8; len]).unwrap();
    m.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    if let Some(dev) = dev {
        m.add_dev(dev).unwrap();
    }
    m.start().unwrap();
    m
}

/// What the callbacks saw: (task user data, status).
type Seen = Rc<RefCell<Vec<(u64, Result<(), Error>)>>>;

fn record(seen: &Seen) -> impl FnMut(InvalidateCacheTask, Data, Data) + 'static {
    let seen = seen.clone();
    move |t: InvalidateCacheTask, td: Data, _| seen.borrow_mut().push((td.as_u64(), t.status()))
}

struct Setup {
    pe: Pe,
    advise: MmapAdvise,
    dev: Dev,
    inv: Inventory,
    seen: Seen,
}

fn setup(num_tasks: u32) -> Setup {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let advise = MmapAdvise::create(&dev).unwrap();
    pe.connect_ctx(&advise.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    advise.task_invalidate_cache_set_conf(record(&seen), record(&seen), num_tasks).unwrap();
    advise.as_ctx().start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();
    Setup { pe, advise, dev, inv, seen }
}

/// Progress until `done` (bounded).
fn run(pe: &Pe, done: impl Fn() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        pe.progress();
    }
    panic!("the engine did not finish");
}

#[test]
fn a_task_on_a_buffer_of_the_device_completes_from_progress_and_changes_nothing() {
    let s = setup(4);
    let m = map(Some(&s.dev), 8192);
    let buf = s.inv.buf_get_data_at(&m, 0, 4096).unwrap();
    let t = s.advise.task_invalidate_cache_alloc_init(Some(&buf), Data::from_u64(9)).unwrap();
    assert_eq!(t.buf().as_ref(), Some(&buf));
    t.submit().unwrap();
    assert!(s.seen.borrow().is_empty(), "submit returns at once; the completion comes from progress");
    run(&s.pe, || !s.seen.borrow().is_empty());
    assert_eq!(*s.seen.borrow(), [(9, Ok(()))]);
    assert_eq!(buf.data_to_vec().unwrap(), vec![7u8; 4096], "a no-op on coherent memory");
    assert_eq!(buf.data_len().unwrap(), 4096);
}

/// One task through submit; returns its status. A failure is fatal to the context (DOCA's
/// engine rule): it reaches Idle once the task is freed, and starts again for the next case.
fn one(s: &Setup, t: InvalidateCacheTask) -> Result<(), Error> {
    let before = s.seen.borrow().len();
    t.submit().unwrap();
    run(&s.pe, || s.seen.borrow().len() > before);
    let status = s.seen.borrow().last().unwrap().1;
    if status.is_err() {
        assert_ne!(s.advise.as_ctx().state(), CtxState::Running, "the failure stopped the context");
        run(&s.pe, || s.advise.as_ctx().state() == CtxState::Idle);
        s.advise.as_ctx().start().unwrap();
    }
    status
}

#[test]
fn bad_tasks_complete_through_the_error_callback_with_their_status() {
    let s = setup(8);
    let on_dev = map(Some(&s.dev), 4096);
    let elsewhere = map(None, 4096);
    let none = s.advise.task_invalidate_cache_alloc_init(None, Data::from_u64(1)).unwrap();
    assert_eq!(one(&s, none), Err(Error::InvalidValue));
    let foreign = s.inv.buf_get_data_at(&elsewhere, 0, 16).unwrap();
    let t = s.advise.task_invalidate_cache_alloc_init(Some(&foreign), Data::from_u64(2)).unwrap();
    assert_eq!(one(&s, t), Err(Error::NotPermitted));
    // a buffer returned to its inventory meanwhile
    let gone = s.inv.buf_get_data_at(&on_dev, 0, 16).unwrap();
    let t = s.advise.task_invalidate_cache_alloc_init(Some(&gone), Data::from_u64(3)).unwrap();
    gone.dec_refcount().unwrap();
    assert_eq!(one(&s, t), Err(Error::BadState));
    // a buffer set after allocation is the one checked
    let late = s.advise.task_invalidate_cache_alloc_init(None, Data::from_u64(4)).unwrap();
    late.set_buf(Some(&s.inv.buf_get_data_at(&on_dev, 0, 16).unwrap()));
    assert_eq!(one(&s, late), Ok(()));
    assert_eq!(
        *s.seen.borrow(),
        [
            (1, Err(Error::InvalidValue)),
            (2, Err(Error::NotPermitted)),
            (3, Err(Error::BadState)),
            (4, Ok(()))
        ]
    );
}

/// pe_task_error's shape: a good task, a bad one (no buffer), two good ones, submitted
/// together. The bad one fails with its status and, as on DOCA's engine, the failure is fatal
/// to the context: it moves to Stopping, the tasks still queued complete with SHUTDOWN, and
/// the context reaches Idle once the callbacks freed them; it starts again.
#[test]
fn a_failing_task_completes_with_its_status_and_stops_its_context() {
    let s = setup(8);
    let states: Rc<RefCell<Vec<CtxState>>> = Rc::default();
    let st = states.clone();
    s.advise.as_ctx().set_state_changed_cb(move |_, _, _, next| st.borrow_mut().push(next)).unwrap();
    let m = map(Some(&s.dev), 4096);
    let buf = s.inv.buf_get_data_at(&m, 0, 64).unwrap();
    for i in 0..4u64 {
        let b = (i != 1).then_some(&buf);
        s.advise.task_invalidate_cache_alloc_init(b, Data::from_u64(i)).unwrap().submit().unwrap();
    }
    run(&s.pe, || s.advise.as_ctx().state() == CtxState::Idle);
    assert_eq!(
        *s.seen.borrow(),
        [(0, Ok(())), (1, Err(Error::InvalidValue)), (2, Err(FLUSH_STATUS)), (3, Err(FLUSH_STATUS))]
    );
    // (The start's own transition, still pending when the callback was set, comes first.)
    assert_eq!(*states.borrow(), [CtxState::Running, CtxState::Stopping, CtxState::Idle]);
    s.advise.as_ctx().start().unwrap();
    let t = s.advise.task_invalidate_cache_alloc_init(Some(&buf), Data::from_u64(5)).unwrap();
    assert_eq!(one(&s, t), Ok(()), "a restarted context works");
}

#[test]
fn try_submit_refuses_a_bad_task_and_an_empty_pool_is_no_memory() {
    let s = setup(2);
    let t = s.advise.task_invalidate_cache_alloc_init(None, Data::from_u64(0)).unwrap();
    let refused = t.try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue);
    let _second = s.advise.task_invalidate_cache_alloc_init(None, Data::from_u64(0)).unwrap();
    assert_eq!(
        s.advise.task_invalidate_cache_alloc_init(None, Data::from_u64(0)).unwrap_err(),
        Error::NoMemory
    );
    drop(refused);
    assert!(
        s.advise.task_invalidate_cache_alloc_init(None, Data::from_u64(0)).is_ok(),
        "a freed task is reused"
    );
}

#[test]
fn a_stop_with_tasks_queued_flushes_them_and_reaches_idle() {
    let s = setup(4);
    let m = map(Some(&s.dev), 4096);
    let buf = s.inv.buf_get_data_at(&m, 0, 64).unwrap();
    for i in 0..3 {
        s.advise.task_invalidate_cache_alloc_init(Some(&buf), Data::from_u64(i)).unwrap().submit().unwrap();
    }
    s.advise.as_ctx().stop().unwrap_err(); // IN_PROGRESS: tasks are out
    assert_eq!(s.advise.as_ctx().state(), CtxState::Stopping);
    run(&s.pe, || s.seen.borrow().len() == 3);
    assert!(s.seen.borrow().iter().all(|(_, st)| *st == Err(FLUSH_STATUS)), "{:?}", s.seen.borrow());
    run(&s.pe, || s.advise.as_ctx().state() == CtxState::Idle);
    let advise = s.advise;
    assert!(advise.destroy().is_ok());
}

#[test]
fn the_topology_gives_the_caps_and_a_device_without_the_task() {
    let t =
        Topology::parse("t", "device 03:00.0 dpu\ncap mmap_advise.max_buf_size 4K\ndevice b1:00.0 host\n")
            .unwrap();
    let list = t.devinfo_list().unwrap();
    assert_eq!(caps::task_cache_invalidate_max_buf_size(&list[0]), Ok(4096));
    assert_eq!(caps::task_cache_invalidate_is_supported(&list[0]), Ok(()));
    let off = Topology::parse("t", "device 03:00.0 dpu\ncap mmap_advise.cache_invalidate 0\n").unwrap();
    let dev = off.devinfo_list().unwrap()[0].open().unwrap();
    assert_eq!(caps::task_cache_invalidate_is_supported(dev.as_devinfo()), Err(Error::NotSupported));
    assert_eq!(MmapAdvise::create(&dev).err(), Some(Error::NotSupported));
    let typo = Topology::parse("t", "device 03:00.0 dpu\ncap mmap_advise.max_buf_sise 4K\n").unwrap();
    assert_eq!(
        caps::task_cache_invalidate_max_buf_size(&typo.devinfo_list().unwrap()[0]),
        Err(Error::InvalidValue)
    );
}

/// A buffer larger than the device allows completes with INVALID_VALUE (a 4 KiB limit from
/// the topology, a 8 KiB buffer).
#[test]
fn a_buffer_above_the_max_size_is_invalid() {
    let t = Topology::parse("t", "device 03:00.0 dpu\ncap mmap_advise.max_buf_size 4K\n").unwrap();
    let dev = t.devinfo_list().unwrap()[0].open().unwrap();
    let pe = Pe::create().unwrap();
    let advise = MmapAdvise::create(&dev).unwrap();
    pe.connect_ctx(&advise.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    advise.task_invalidate_cache_set_conf(record(&seen), record(&seen), 2).unwrap();
    advise.as_ctx().start().unwrap();
    let inv = Inventory::create(4).unwrap();
    inv.start().unwrap();
    let m = map(Some(&dev), 8192);
    let small = inv.buf_get_data_at(&m, 0, 4096).unwrap();
    let (base, _) = m.memrange().unwrap();
    let big = inv.buf_get_by_addr(&m, base, 8192).unwrap();
    advise.task_invalidate_cache_alloc_init(Some(&small), Data::from_u64(1)).unwrap().submit().unwrap();
    advise.task_invalidate_cache_alloc_init(Some(&big), Data::from_u64(2)).unwrap().submit().unwrap();
    run(&pe, || advise.as_ctx().state() == CtxState::Idle);
    assert_eq!(*seen.borrow(), [(1, Ok(())), (2, Err(Error::InvalidValue))], "fatal: the context stopped");
}
