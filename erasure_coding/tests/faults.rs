//! A fault plan failing erasure coding tasks: the injected failure takes the road of a real
//! one (core's engine kit): fatal to the context, the tasks queued behind it flushed, Idle,
//! and a restart works; each task type has its own point. Its own test binary: a plan is
//! process-wide.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_core::{fault, open_device_with_pci, CtxState, Data, Error, Pe};
use doca_erasure_coding::{CreateTask, Ec, GaloisMulTask, MatrixType, RecoverTask, FLUSH_STATUS};
use doca_mmap::{AccessFlags, Mmap};

/// What the callbacks saw: (task type, user data, status).
type Log = Rc<RefCell<Vec<(&'static str, u64, Result<(), Error>)>>>;

#[test]
fn injected_failures_are_fatal_and_flush_the_queue() {
    let _g = fault::test_lock();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let log: Log = Rc::default();
    let ec = Ec::create(&dev).unwrap();
    let l = log.clone();
    let created = move |t: CreateTask, td: Data, _| l.borrow_mut().push(("create", td.as_u64(), t.status()));
    ec.task_create_set_conf(created.clone(), created, 4).unwrap();
    let l = log.clone();
    let rec = move |t: RecoverTask, td: Data, _| l.borrow_mut().push(("recover", td.as_u64(), t.status()));
    ec.task_recover_set_conf(rec.clone(), rec, 2).unwrap();
    let l = log.clone();
    let mul =
        move |t: GaloisMulTask, td: Data, _| l.borrow_mut().push(("galois_mul", td.as_u64(), t.status()));
    ec.task_galois_mul_set_conf(mul.clone(), mul, 2).unwrap();
    let pe = Pe::create().unwrap();
    pe.connect_ctx(&ec.as_ctx()).unwrap();
    ec.as_ctx().start().unwrap();

    let mem = Mmap::create().unwrap();
    mem.set_memrange(vec![5u8; 4096]).unwrap();
    mem.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    mem.add_dev(&dev).unwrap();
    mem.start().unwrap();
    let inv = Inventory::create(64).unwrap();
    inv.start().unwrap();
    let coding = ec.matrix_create(MatrixType::Cauchy, 2, 1).unwrap();
    let recover = ec.matrix_create_recover(&coding, &[0]).unwrap();
    // Four (source, destination) pairs: 128 bytes of data, 64 of room, apart.
    let pair = |i: usize| {
        (inv.buf_get_data_at(&mem, i * 512, 128).unwrap(), inv.buf_get_at(&mem, i * 512 + 256, 64).unwrap())
    };

    let run = |plan: &str, second: &str| {
        log.borrow_mut().clear();
        fault::take_fired();
        fault::install_text(plan).unwrap();
        let (s0, d0) = pair(0);
        let (s1, d1) = pair(1);
        let (s2, d2) = pair(2);
        ec.task_create_alloc_init(Some(&coding), Some(&s0), Some(&d0), Data::from_u64(0))
            .unwrap()
            .submit()
            .unwrap();
        match second {
            "recover" => ec
                .task_recover_alloc_init(Some(&recover), Some(&s1), Some(&d1), Data::from_u64(1))
                .unwrap()
                .submit()
                .unwrap(),
            _ => ec
                .task_galois_mul_alloc_init(Some(&coding), Some(&s1), Some(&d1), Data::from_u64(1))
                .unwrap()
                .submit()
                .unwrap(),
        }
        ec.task_create_alloc_init(Some(&coding), Some(&s2), Some(&d2), Data::from_u64(2))
            .unwrap()
            .submit()
            .unwrap();
        let mut passes = 0;
        while ec.as_ctx().state() != CtxState::Idle {
            pe.progress();
            passes += 1;
            assert!(passes < 10_000, "the context did not reach Idle: {:?}", log.borrow());
        }
        fault::clear();
        let fired = fault::take_fired();
        ec.as_ctx().start().unwrap();
        let mut seen = log.borrow().clone();
        seen.sort_by_key(|t| t.1);
        (seen, fired.iter().map(|f| (f.point.clone(), f.hit)).collect::<Vec<_>>())
    };

    let (seen, fired) = run("task.ec.recover=nth(1):fail(IO_FAILED)", "recover");
    assert_eq!(
        seen,
        [("create", 0, Ok(())), ("recover", 1, Err(Error::IoFailed)), ("create", 2, Err(FLUSH_STATUS))]
    );
    assert_eq!(fired, [("task.ec.recover".to_string(), 1)]);
    let (seen, fired) = run("task.ec.create=nth(2):fail(NO_MEMORY)", "galois_mul");
    assert_eq!(seen, [("create", 0, Ok(())), ("galois_mul", 1, Ok(())), ("create", 2, Err(Error::NoMemory))]);
    assert_eq!(fired, [("task.ec.create".to_string(), 2)]);
    let (seen, _) = run("task.ec.galois_mul=nth(1):fail(DRIVER)", "galois_mul");
    assert_eq!(
        seen,
        [("create", 0, Ok(())), ("galois_mul", 1, Err(Error::Driver)), ("create", 2, Err(FLUSH_STATUS))]
    );
}
