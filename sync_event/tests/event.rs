//! One process: standalone operations, modes, export and import, context-mode tasks and the
//! doorbell that wakes an engine asleep on its notification handle.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;

use doca_core::{open_device_with_pci, CtxState, Data, Error, Pe};
use doca_sync_event::{Cmp, Location, SyncEvent, WaitMode};

fn readable(pe: &Pe, ms: i32) -> bool {
    let handle = pe.notification_handle();
    let mut fds = [rustix::event::PollFd::new(&handle, rustix::event::PollFlags::IN)];
    let t = rustix::time::Timespec { tv_sec: (ms / 1000) as i64, tv_nsec: ((ms % 1000) as i64) * 1_000_000 };
    matches!(rustix::event::poll(&mut fds, Some(&t)), Ok(n) if n > 0)
}

#[test]
fn standalone_get_set_add_wait_and_the_codes_of_each_state() {
    let se = SyncEvent::create().unwrap();
    assert_eq!(se.get(), Err(Error::BadState), "not started");
    se.start().unwrap();
    assert_eq!(se.start(), Err(Error::BadState), "started twice");
    assert_eq!(se.as_ctx().err(), Some(Error::NotPermitted), "standalone excludes context");
    assert_eq!(se.get(), Ok(0));
    se.update_set(5).unwrap();
    assert_eq!(se.update_add(2), Ok(5));
    assert_eq!(se.get(), Ok(7));
    se.wait(Cmp::Gt, 6, u64::MAX, WaitMode::Sleep).unwrap();
    se.wait(Cmp::Eq, 7, 0xFF, WaitMode::Yield).unwrap();
    se.wait(Cmp::Neq, 0, u64::MAX, WaitMode::Sleep).unwrap();
    assert_eq!(se.wait(Cmp::Eq, 7, 0xF0, WaitMode::Sleep), Err(Error::InvalidValue), "bad mask");
    assert_eq!(se.add_publisher_location(Location::RemotePci), Err(Error::BadState), "started");
    se.stop().unwrap();
    assert_eq!(se.stop(), Err(Error::BadState));
    assert_eq!(se.update_set(1), Err(Error::BadState), "stopped");
    se.destroy().unwrap();
}

/// A private fabric directory (where the exporter's memory service puts its socket), set
/// before the first export.
fn private_fabric() {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("doca-se-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        std::env::set_var("DOCA_EMU_FABRIC_DIR", &d);
        d
    });
}

#[test]
fn export_import_in_one_process_shares_the_value_and_destroy_revokes_it() {
    private_fabric();
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let se = SyncEvent::create().unwrap();
    se.add_publisher_location(Location::RemotePci).unwrap();
    se.add_subscriber_location(Location::Cpu(host.as_devinfo().pci_addr())).unwrap();
    se.start().unwrap();
    assert_eq!(se.export_to_dpu(&dpu).err(), Some(Error::NotSupported), "2.5/2.6: host only");
    let blob = se.export_to_dpu(&host).unwrap();
    assert_eq!(blob, se.export_to_remote_pci(&host).unwrap());
    assert_eq!(SyncEvent::create_from_export(&dpu, &blob[..10]).err(), Some(Error::InvalidValue));
    let mut forged = blob.clone();
    forged[20] ^= 1;
    assert_eq!(SyncEvent::create_from_export(&dpu, &forged).err(), Some(Error::NotFound), "token");

    let imp = SyncEvent::create_from_export(&dpu, &blob).unwrap();
    assert!(imp.is_imported());
    assert_eq!(imp.add_publisher_location(Location::RemotePci), Err(Error::NotPermitted));
    assert_eq!(imp.export_to_remote_pci(&dpu).err(), Some(Error::NotPermitted));
    imp.start().unwrap();
    se.update_set(41).unwrap();
    assert_eq!(imp.update_add(1), Ok(41));
    assert_eq!(se.get(), Ok(42));
    se.stop().unwrap();
    se.destroy().unwrap();
    assert_eq!(imp.get(), Err(Error::NotFound), "revoked");
    assert_eq!(imp.update_set(1), Err(Error::NotFound));
    assert_eq!(imp.wait(Cmp::Eq, 99, u64::MAX, WaitMode::Sleep), Err(Error::NotFound));
    assert_eq!(SyncEvent::create_from_export(&dpu, &blob).err(), Some(Error::NotFound), "destroyed");
    imp.stop().unwrap();
    imp.destroy().unwrap();
}

#[test]
fn an_event_in_application_memory_works_here_and_cannot_be_exported() {
    static VALUE: AtomicU64 = AtomicU64::new(9);
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    let se = SyncEvent::create().unwrap();
    se.set_addr(&VALUE).unwrap();
    se.start().unwrap();
    assert_eq!(se.set_addr(&VALUE), Err(Error::BadState), "started");
    assert_eq!(se.update_add(1), Ok(9));
    assert_eq!(VALUE.load(std::sync::atomic::Ordering::SeqCst), 10);
    assert_eq!(se.export_to_remote_pci(&host).err(), Some(Error::NotSupported));
    se.stop().unwrap();
}

#[test]
fn context_mode_tasks_complete_and_an_update_wakes_the_sleeping_engine() {
    private_fabric();
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    let se = SyncEvent::create().unwrap();
    let ctx = se.as_ctx().unwrap();
    assert_eq!(se.start(), Err(Error::NotPermitted), "context excludes standalone");
    let pe = Pe::create().unwrap();
    pe.connect_ctx(&ctx).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    let (l1, l2, l3, l4, l5) = (log.clone(), log.clone(), log.clone(), log.clone(), log.clone());
    se.task_get_set_conf(move |t, _, _| l1.borrow_mut().push(("get", t.value())), |_, _, _| panic!(), 2)
        .unwrap();
    se.task_notify_add_set_conf(
        move |t, _, _| l2.borrow_mut().push(("add", t.fetched())),
        |_, _, _| panic!(),
        2,
    )
    .unwrap();
    se.task_notify_set_set_conf(
        move |t, _, _| l3.borrow_mut().push(("set", t.set_val())),
        |_, _, _| panic!(),
        2,
    )
    .unwrap();
    se.task_wait_eq_set_conf(
        move |_, d, _| l4.borrow_mut().push(("eq", d.as_u64())),
        move |t, _, _| l5.borrow_mut().push(("eq failed", t.status().unwrap_err() as u64)),
        2,
    )
    .unwrap();
    ctx.start().unwrap();
    while pe.progress() {}

    se.task_notify_set_alloc_init(3, Data::NONE).unwrap().submit().unwrap();
    se.task_notify_add_alloc_init(4, Data::NONE).unwrap().submit().unwrap();
    se.task_get_alloc_init(Data::NONE).unwrap().submit().unwrap();
    while pe.progress() {}
    // Done in submission order (set 3, add 4 to 3, get 7); delivered pool by pool.
    log.borrow_mut().sort();
    assert_eq!(*log.borrow(), [("add", 3), ("get", 7), ("set", 3)]);
    assert_eq!(
        se.task_wait_gt_alloc_init(1, u64::MAX, Data::NONE).err(),
        Some(Error::NoMemory),
        "no conf: a pool of no task"
    );
    assert_eq!(se.task_wait_eq_alloc_init(1, 0x0F, Data::NONE).err(), Some(Error::InvalidValue), "mask");

    // An importer in this process updates; the engine asleep on its handle wakes.
    let imp = SyncEvent::create_from_export(&host, &se.export_to_remote_pci(&host).unwrap()).unwrap();
    imp.start().unwrap();
    let w = se.task_wait_eq_alloc_init(8, u64::MAX, Data::from_u64(77)).unwrap();
    w.submit().unwrap();
    assert!(!pe.progress(), "nothing yet");
    pe.request_notification().unwrap();
    assert!(!readable(&pe, 50), "asleep: nothing happened");
    imp.update_add(1).unwrap();
    assert!(readable(&pe, 10_000), "the update rang the engine's doorbell");
    pe.clear_notification().unwrap();
    assert!(pe.progress(), "the wait completes in the first pass after the update");
    assert_eq!(log.borrow().last(), Some(&("eq", 77)));

    // Stop with a wait pending: flushed with SHUTDOWN through the error callback.
    let w = se.task_wait_eq_alloc_init(100, u64::MAX, Data::NONE).unwrap();
    w.submit().unwrap();
    assert_eq!(ctx.stop(), Err(Error::InProgress), "a wait is in flight");
    for _ in 0..10 {
        pe.progress();
    }
    assert_eq!(log.borrow().last(), Some(&("eq failed", Error::Shutdown as u64)));
    assert_eq!(ctx.state(), CtxState::Idle);
    drop(imp);
    se.destroy().unwrap();
}
