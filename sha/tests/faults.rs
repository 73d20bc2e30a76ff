//! A fault plan failing a hash task: the injected failure takes the road of a real one
//! (pe_task_error; core's engine kit applies it to every engine library): fatal to the
//! context, the tasks of both types queued behind it flushed, Idle, and a restart works. Its
//! own test binary: a plan is process-wide.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_core::{fault, open_device_with_pci, CtxState, Data, Error, Pe};
use doca_mmap::{AccessFlags, Mmap};
use doca_sha::{Algorithm, Sha, FLUSH_STATUS};

/// What the callbacks saw: (task type, user data, status), and the states entered.
#[derive(Default)]
struct Log {
    tasks: Vec<(&'static str, u64, Result<(), Error>)>,
    states: Vec<CtxState>,
}

#[test]
fn an_injected_hash_failure_is_fatal_and_flushes_both_task_types() {
    let _g = fault::test_lock();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let log: Rc<RefCell<Log>> = Rc::default();
    let sha = Sha::create(&dev).unwrap();
    let l = log.clone();
    let hashed = move |t: doca_sha::HashTask, td: Data, _| {
        l.borrow_mut().tasks.push(("hash", td.as_u64(), t.status()))
    };
    sha.task_hash_set_conf(hashed.clone(), hashed, 3).unwrap();
    let l = log.clone();
    let partial = move |t: doca_sha::PartialHashTask, td: Data, _| {
        l.borrow_mut().tasks.push(("partial", td.as_u64(), t.status()))
    };
    sha.task_partial_hash_set_conf(partial.clone(), partial, 1).unwrap();
    let l = log.clone();
    sha.as_ctx().set_state_changed_cb(move |_, _, _, next| l.borrow_mut().states.push(next)).unwrap();
    let pe = Pe::create().unwrap();
    pe.connect_ctx(&sha.as_ctx()).unwrap();
    sha.as_ctx().start().unwrap();

    // One map: four 128-byte sources, each followed by room for its digest.
    let mem = Mmap::create().unwrap();
    mem.set_memrange(vec![3u8; 1024]).unwrap();
    mem.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    mem.add_dev(&dev).unwrap();
    mem.start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();
    let pair = |i: usize| -> (Buf, Buf) {
        (inv.buf_get_data_at(&mem, i * 256, 128).unwrap(), inv.buf_get_at(&mem, i * 256 + 128, 128).unwrap())
    };
    let (s, d): (Vec<Buf>, Vec<Buf>) = (0..4).map(pair).unzip();

    fault::take_fired();
    fault::install_text("task.sha.hash=nth(2):fail(IO_FAILED)").unwrap();
    for i in 0..3 {
        let t =
            sha.task_hash_alloc_init(Algorithm::Sha256, Some(&s[i]), Some(&d[i]), Data::from_u64(i as u64));
        t.unwrap().submit().unwrap();
    }
    let p = sha
        .task_partial_hash_alloc_init(Algorithm::Sha1, Some(&s[3]), Some(&d[3]), Data::from_u64(3))
        .unwrap();
    p.set_is_final();
    p.submit().unwrap();
    let mut passes = 0;
    while sha.as_ctx().state() != CtxState::Idle {
        pe.progress();
        passes += 1;
        assert!(passes < 10_000, "the context did not reach Idle: {:?}", log.borrow().tasks);
    }
    fault::clear();
    let want = [
        ("hash", 0, Ok(())),
        ("hash", 1, Err(Error::IoFailed)),
        ("hash", 2, Err(FLUSH_STATUS)),
        ("partial", 3, Err(FLUSH_STATUS)),
    ];
    assert_eq!(log.borrow().tasks, want);
    assert_eq!(log.borrow().states, [CtxState::Running, CtxState::Stopping, CtxState::Idle]);
    let fired = fault::take_fired();
    assert_eq!(fired.iter().map(|f| (f.point.as_str(), f.hit)).collect::<Vec<_>>(), [("task.sha.hash", 2)]);

    // The context starts again and hashes.
    sha.as_ctx().start().unwrap();
    let t = sha.task_hash_alloc_init(Algorithm::Sha256, Some(&s[1]), Some(&d[1]), Data::from_u64(9)).unwrap();
    t.submit().unwrap();
    while log.borrow().tasks.len() < 5 && passes < 20_000 {
        pe.progress();
        passes += 1;
    }
    assert_eq!(log.borrow().tasks.get(4), Some(&("hash", 9, Ok(()))));
}
