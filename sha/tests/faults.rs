//! A fault plan failing hash tasks: the injected failure takes the road of a real one
//! (pe_task_error; core's engine kit, for every engine library): fatal to the context, the
//! tasks queued behind it flushed, Idle, and a restart works. Its own test binary: a plan is
//! process-wide.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_core::{fault, open_device_with_pci, CtxState, Data, Error, Pe};
use doca_mmap::{AccessFlags, Mmap};
use doca_sha::{Algorithm, HashTask, Sha, FLUSH_STATUS};

type Seen = Rc<RefCell<Vec<(u64, Result<(), Error>)>>>;

fn record(seen: &Seen) -> impl FnMut(HashTask, Data, Data) + 'static {
    let seen = seen.clone();
    move |t: HashTask, td: Data, _| seen.borrow_mut().push((td.as_u64(), t.status()))
}

/// Progress until `done` (bounded: the engine always moves a task forward).
fn run(pe: &Pe, done: impl Fn() -> bool) {
    for _ in 0..100_000 {
        if done() {
            return;
        }
        pe.progress();
    }
    panic!("the engine did not finish");
}

#[test]
fn an_injected_hash_failure_is_fatal_to_its_context_like_a_real_one() {
    let _g = fault::test_lock();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let sha = Sha::create(&dev).unwrap();
    pe.connect_ctx(&sha.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    sha.task_hash_set_conf(record(&seen), record(&seen), 3).unwrap();
    let states: Rc<RefCell<Vec<CtxState>>> = Rc::default();
    let st = states.clone();
    sha.as_ctx().set_state_changed_cb(move |_, _, _, next| st.borrow_mut().push(next)).unwrap();
    sha.as_ctx().start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();
    let m = Mmap::create().unwrap();
    m.set_memrange(vec![7u8; 4 * 256]).unwrap();
    m.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    m.add_dev(&dev).unwrap();
    m.start().unwrap();
    fault::take_fired();
    fault::install_text("task.sha.hash=nth(2):fail(IO_FAILED)").unwrap();
    let mut bufs = Vec::new();
    for i in 0..4usize {
        let src = inv.buf_get_data_at(&m, i * 256, 128).unwrap();
        let dst = inv.buf_get_at(&m, i * 256 + 128, 128).unwrap();
        let t = sha.task_hash_alloc_init(Algorithm::Sha256, Some(&src), Some(&dst), Data::from_u64(i as u64));
        t.unwrap().submit().unwrap();
        bufs.push((src, dst));
    }
    run(&pe, || sha.as_ctx().state() == CtxState::Idle);
    fault::clear();
    assert_eq!(
        *seen.borrow(),
        [(0, Ok(())), (1, Err(Error::IoFailed)), (2, Err(FLUSH_STATUS)), (3, Err(FLUSH_STATUS))]
    );
    assert_eq!(*states.borrow(), [CtxState::Running, CtxState::Stopping, CtxState::Idle]);
    let fired = fault::take_fired();
    assert_eq!(fired.len(), 1);
    assert_eq!((fired[0].point.as_str(), fired[0].hit), ("task.sha.hash", 2));
    // Nothing else broke: the context starts again and hashes.
    sha.as_ctx().start().unwrap();
    let (src, dst) = &bufs[1];
    let t = sha.task_hash_alloc_init(Algorithm::Sha256, Some(src), Some(dst), Data::from_u64(9)).unwrap();
    t.submit().unwrap();
    run(&pe, || seen.borrow().len() == 5);
    assert_eq!(seen.borrow()[4], (9, Ok(())));
}
