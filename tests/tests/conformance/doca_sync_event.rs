//! `doca_sync_event.h` (2.5/2.6, and the names 2.7+ added): creation and import, locations,
//! the two exclusive modes, synchronous operations, tasks, exports and the capabilities.
//! Each test is named after the C function it checks.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe};
use doca_sync_event::{
    caps, check_mask, Cmp, Location, SyncEvent, WaitMode, WaitTask, EXPORT_LEN, MAX_NUM_TASKS,
};

fn host() -> Dev {
    open_device_with_pci("b1:00.0", None).unwrap()
}

fn dpu() -> Dev {
    open_device_with_pci("03:00.0", None).unwrap()
}

fn started() -> SyncEvent {
    let se = SyncEvent::create().unwrap();
    se.start().unwrap();
    se
}

#[test]
fn doca_sync_event_create() {
    let se = SyncEvent::create().unwrap();
    assert!(!se.is_imported());
    se.start().unwrap();
    assert_eq!(se.get(), Ok(0), "a new event holds 0");
}

#[test]
fn doca_sync_event_create_from_export() {
    let se = started();
    let blob = se.export_to_remote_pci(&host()).unwrap();
    assert_eq!(blob.len(), EXPORT_LEN);
    assert_eq!(SyncEvent::create_from_export(&dpu(), &[]).err(), Some(Error::InvalidValue), "empty");
    assert_eq!(
        SyncEvent::create_from_export(&dpu(), &blob[..EXPORT_LEN - 1]).err(),
        Some(Error::InvalidValue)
    );
    let mut bad = blob.clone();
    bad[0] ^= 0xff;
    assert_eq!(SyncEvent::create_from_export(&dpu(), &bad).err(), Some(Error::InvalidValue), "magic");
    let mut forged = blob.clone();
    forged[20] ^= 1;
    assert_eq!(SyncEvent::create_from_export(&dpu(), &forged).err(), Some(Error::NotFound), "token");
    let mut other_service = blob.clone();
    other_service[12..16].copy_from_slice(&0i32.to_le_bytes());
    assert_eq!(
        SyncEvent::create_from_export(&dpu(), &other_service).err(),
        Some(Error::NotFound),
        "no such memory service"
    );
    let imp = SyncEvent::create_from_export(&dpu(), &blob).unwrap();
    assert!(imp.is_imported());
    imp.start().unwrap();
    se.update_set(3).unwrap();
    assert_eq!(imp.get(), Ok(3));
}

#[test]
fn doca_sync_event_cap_is_create_from_export_supported() {
    assert_eq!(caps::is_create_from_export_supported(host().as_devinfo()), Ok(()));
    assert_eq!(caps::is_create_from_export_supported(dpu().as_devinfo()), Ok(()));
}

#[test]
fn doca_sync_event_destroy() {
    let se = started();
    let imp = SyncEvent::create_from_export(&dpu(), &se.export_to_remote_pci(&host()).unwrap()).unwrap();
    imp.start().unwrap();
    se.destroy().unwrap(); // started standalone: destroyed all the same
    assert_eq!(imp.get(), Err(Error::NotFound), "the exporter's destroy revokes the event");

    let se = SyncEvent::create().unwrap();
    let ctx = se.as_ctx().unwrap();
    let pe = Pe::create().unwrap();
    pe.connect_ctx(&ctx).unwrap();
    ctx.start().unwrap();
    let se = se.destroy().unwrap_err();
    assert_eq!(se.error, Error::BadState, "a running context");
    ctx.stop().unwrap();
    se.value.destroy().unwrap();
}

#[test]
fn doca_sync_event_add_publisher_location_cpu_dpu_remote_pci() {
    let se = SyncEvent::create().unwrap();
    let pci = host().as_devinfo().pci_addr();
    se.add_publisher_location(Location::Cpu(pci)).unwrap();
    se.add_publisher_location(Location::RemotePci).unwrap();
    se.add_subscriber_location(Location::Cpu(pci)).unwrap();
    se.add_subscriber_location(Location::RemotePci).unwrap();
    assert_eq!(se.locations().0, [Location::Cpu(pci), Location::RemotePci]);
    se.start().unwrap();
    assert_eq!(se.add_publisher_location(Location::RemotePci), Err(Error::BadState), "started");
    assert_eq!(se.add_subscriber_location(Location::RemotePci), Err(Error::BadState), "started");
    let imp = SyncEvent::create_from_export(&dpu(), &se.export_to_remote_pci(&host()).unwrap()).unwrap();
    assert_eq!(imp.add_subscriber_location(Location::RemotePci), Err(Error::NotPermitted), "imported");
}

#[test]
fn doca_sync_event_add_publisher_location_dpa_gpu_remote_net() {
    // No DPA, GPU or remote network here: their capabilities say so.
    assert_eq!(caps::is_dpa_or_gpu_supported(host().as_devinfo()), Err(Error::NotSupported));
    assert_eq!(caps::is_dpa_or_gpu_supported(dpu().as_devinfo()), Err(Error::NotSupported));
}

#[test]
fn doca_sync_event_set_addr() {
    static VALUE: AtomicU64 = AtomicU64::new(41);
    let se = SyncEvent::create().unwrap();
    se.set_addr(&VALUE).unwrap();
    se.start().unwrap();
    assert_eq!(se.get(), Ok(41), "the memory's contents are the value");
    se.update_add(1).unwrap();
    assert_eq!(VALUE.load(Ordering::SeqCst), 42);
    assert_eq!(se.set_addr(&VALUE), Err(Error::BadState), "started");
    assert_eq!(se.export_to_remote_pci(&host()).err(), Some(Error::NotSupported), "not shareable");

    let exported = SyncEvent::create().unwrap();
    exported.export_to_remote_pci(&host()).unwrap();
    assert_eq!(exported.set_addr(&VALUE), Err(Error::BadState), "already exported with its own memory");
}

#[test]
fn doca_sync_event_start_stop() {
    let se = SyncEvent::create().unwrap();
    assert_eq!(se.stop(), Err(Error::BadState), "not started");
    se.start().unwrap();
    assert_eq!(se.start(), Err(Error::BadState), "twice");
    se.stop().unwrap();
    assert_eq!(se.update_set(1), Err(Error::BadState), "stopped");
    se.start().unwrap();
    se.update_set(1).unwrap();
}

#[test]
fn doca_sync_event_as_ctx() {
    let se = started();
    assert_eq!(se.as_ctx().err(), Some(Error::NotPermitted), "standalone excludes context");
    let se = SyncEvent::create().unwrap();
    let ctx = se.as_ctx().unwrap();
    assert_eq!(se.start(), Err(Error::NotPermitted), "context excludes standalone");
    assert_eq!(se.stop(), Err(Error::NotPermitted), "a context stops with doca_ctx_stop");
    assert_eq!(ctx.state(), CtxState::Idle);
    assert_eq!(ctx.start(), Err(Error::NotConnected), "no engine");
}

#[test]
fn doca_sync_event_get_update_set_update_add() {
    let se = SyncEvent::create().unwrap();
    assert_eq!(se.get(), Err(Error::BadState));
    assert_eq!(se.update_set(1), Err(Error::BadState));
    assert_eq!(se.update_add(1), Err(Error::BadState));
    se.start().unwrap();
    se.update_set(u64::MAX).unwrap();
    assert_eq!(se.update_add(2), Ok(u64::MAX), "wraps");
    assert_eq!(se.get(), Ok(1));
}

#[test]
fn doca_sync_event_wait_gt_eq_neq_and_yield() {
    let se = started();
    se.update_set(0x1_05).unwrap();
    se.wait(Cmp::Gt, 4, 0xFF, WaitMode::Sleep).unwrap();
    se.wait(Cmp::Gt, 4, 0xFF, WaitMode::Yield).unwrap();
    se.wait(Cmp::Eq, 0x100, 0xFF00, WaitMode::Sleep).unwrap();
    se.wait(Cmp::Eq, 0x105, u64::MAX, WaitMode::Yield).unwrap();
    se.wait(Cmp::Neq, 0, 0xFFFF, WaitMode::Sleep).unwrap();
    se.wait(Cmp::Neq, 1, 0, WaitMode::Yield).unwrap();
    for bad in [1, 0xF0, 0xFFF, 0xFF_FFFF, 0xFF0F] {
        assert_eq!(se.wait(Cmp::Eq, 0, bad, WaitMode::Sleep), Err(Error::InvalidValue), "{bad:#x}");
        assert_eq!(check_mask(bad), Err(Error::InvalidValue));
    }
    let idle = SyncEvent::create().unwrap();
    assert_eq!(idle.wait(Cmp::Eq, 0, 0, WaitMode::Sleep), Err(Error::BadState));
}

#[test]
fn doca_sync_event_export_to_dpu() {
    let cpu_only = SyncEvent::create().unwrap();
    cpu_only.add_publisher_location(Location::Cpu(host().as_devinfo().pci_addr())).unwrap();
    cpu_only.add_subscriber_location(Location::Cpu(host().as_devinfo().pci_addr())).unwrap();
    cpu_only.start().unwrap();
    assert_eq!(
        cpu_only.export_to_dpu(&host()).err(),
        Some(Error::NotPermitted),
        "neither end on the DPU (DOCA's library's code)"
    );
    let se = SyncEvent::create().unwrap();
    se.add_publisher_location(Location::RemotePci).unwrap();
    se.add_subscriber_location(Location::Cpu(host().as_devinfo().pci_addr())).unwrap();
    se.start().unwrap();
    let blob = se.export_to_dpu(&host()).unwrap();
    assert_eq!(se.export_to_dpu(&dpu()).err(), Some(Error::NotSupported), "2.5/2.6: from the host only");
    assert_eq!(caps::is_export_to_dpu_supported(host().as_devinfo()), Ok(()));
    assert_eq!(caps::is_export_to_dpu_supported(dpu().as_devinfo()), Err(Error::NotSupported));
    SyncEvent::create_from_export(&dpu(), &blob).unwrap();
}

#[test]
fn doca_sync_event_export_to_remote_pci() {
    let se = started();
    for dev in [host(), dpu()] {
        assert_eq!(caps::is_export_to_remote_pci_supported(dev.as_devinfo()), Ok(()));
        let blob = se.export_to_remote_pci(&dev).unwrap();
        SyncEvent::create_from_export(&dev, &blob).unwrap();
    }
    let imp = SyncEvent::create_from_export(&host(), &se.export_to_remote_pci(&dpu()).unwrap()).unwrap();
    assert_eq!(imp.export_to_remote_pci(&host()).err(), Some(Error::NotPermitted), "an import");
}

#[test]
fn doca_sync_event_cap_task_is_supported() {
    assert_eq!(caps::task_is_supported(host().as_devinfo()), Ok(()));
    assert_eq!(caps::task_is_supported(dpu().as_devinfo()), Ok(()));
}

type Log = Rc<RefCell<Vec<(&'static str, Result<(), Error>, u64)>>>;

fn context() -> (SyncEvent, Pe, Log) {
    let se = SyncEvent::create().unwrap();
    let ctx = se.as_ctx().unwrap();
    let pe = Pe::create().unwrap();
    pe.connect_ctx(&ctx).unwrap();
    let log: Log = Rc::default();
    macro_rules! conf {
        ($m:ident, $name:literal, |$t:ident| $v:expr) => {{
            let (a, b) = (log.clone(), log.clone());
            se.$m(
                move |$t, _, _| a.borrow_mut().push(($name, $t.status(), $v)),
                move |$t, _, _| b.borrow_mut().push(($name, $t.status(), 0)),
                2,
            )
            .unwrap();
        }};
    }
    conf!(task_get_set_conf, "get", |t| t.value());
    conf!(task_notify_set_set_conf, "set", |t| t.set_val());
    conf!(task_notify_add_set_conf, "add", |t| t.fetched());
    conf!(task_wait_gt_set_conf, "gt", |t| t.wait_val());
    conf!(task_wait_eq_set_conf, "eq", |t| t.wait_val());
    conf!(task_wait_neq_set_conf, "neq", |t| t.wait_val());
    ctx.start().unwrap();
    while pe.progress() {}
    (se, pe, log)
}

#[test]
fn doca_sync_event_task_set_conf() {
    let se = SyncEvent::create().unwrap();
    assert_eq!(
        se.task_wait_eq_set_conf(|_, _, _| {}, |_, _, _| {}, MAX_NUM_TASKS + 1),
        Err(Error::InvalidValue)
    );
    assert_eq!(
        se.task_get_set_conf(|_, _, _| {}, |_, _, _| {}, 0),
        Ok(()),
        "0 tasks: accepted, as DOCA's library does"
    );
    se.start().unwrap();
    assert_eq!(
        se.task_notify_set_set_conf(|_, _, _| {}, |_, _, _| {}, 1),
        Err(Error::NotPermitted),
        "started standalone (the header: not in idle state)"
    );
    se.stop().unwrap();
    let (se, _pe, _log) = context();
    assert_eq!(
        se.task_get_set_conf(|_, _, _| {}, |_, _, _| {}, MAX_NUM_TASKS + 1),
        Err(Error::NotPermitted),
        "running: the state is checked first"
    );
    assert_eq!(se.task_get_set_conf(|_, _, _| {}, |_, _, _| {}, 1), Err(Error::NotPermitted), "running");
}

#[test]
fn doca_sync_event_task_alloc_init() {
    let idle = SyncEvent::create().unwrap();
    assert_eq!(idle.task_get_alloc_init(Data::NONE).err(), Some(Error::BadState), "not running");
    let (se, _pe, _log) = context();
    let a = se.task_notify_set_alloc_init(1, Data::NONE).unwrap();
    let _b = se.task_notify_set_alloc_init(1, Data::NONE).unwrap();
    assert_eq!(se.task_notify_set_alloc_init(1, Data::NONE).err(), Some(Error::NoMemory), "pool of 2");
    a.free();
    se.task_notify_set_alloc_init(1, Data::NONE).unwrap();
    assert_eq!(se.task_wait_neq_alloc_init(0, 0x0F, Data::NONE).err(), Some(Error::InvalidValue), "mask");
}

#[test]
fn doca_sync_event_task_get_notify_set_notify_add() {
    let (se, pe, log) = context();
    let s = se.task_notify_set_alloc_init(1, Data::NONE).unwrap();
    s.set_set_val(10);
    assert_eq!(s.set_val(), 10);
    s.submit().unwrap();
    let a = se.task_notify_add_alloc_init(1, Data::NONE).unwrap();
    a.set_inc_val(5);
    assert_eq!(a.inc_val(), 5);
    a.submit().unwrap();
    se.task_get_alloc_init(Data::NONE).unwrap().submit().unwrap();
    while pe.progress() {}
    let mut got = log.borrow().clone();
    got.sort();
    assert_eq!(got, [("add", Ok(()), 10), ("get", Ok(()), 15), ("set", Ok(()), 10)]);
}

#[test]
fn doca_sync_event_task_wait_gt_eq_neq() {
    let (se, pe, log) = context();
    let gt = se.task_wait_gt_alloc_init(0, 0xFF, Data::NONE).unwrap();
    gt.set_wait_val(2);
    assert_eq!((gt.wait_val(), gt.mask()), (2, 0xFF));
    gt.submit().unwrap();
    let eq = se.task_wait_eq_alloc_init(7, u64::MAX, Data::NONE).unwrap();
    eq.submit().unwrap();
    let neq = se.task_wait_neq_alloc_init(0, u64::MAX, Data::NONE).unwrap();
    neq.set_mask(0x0F); // checked at submission
    assert_eq!(neq.submit().map_err(|r| r.error).err(), Some(Error::InvalidValue));
    assert!(!pe.progress(), "nothing holds yet");
    se.task_notify_set_alloc_init(3, Data::NONE).unwrap().submit().unwrap();
    while pe.progress() {}
    assert!(log.borrow().contains(&("gt", Ok(()), 2)));
    assert!(!log.borrow().iter().any(|e| e.0 == "eq"), "3 is not 7");
    se.task_notify_add_alloc_init(4, Data::NONE).unwrap().submit().unwrap();
    while pe.progress() {}
    assert!(log.borrow().contains(&("eq", Ok(()), 7)));
}

#[test]
fn doca_ctx_stop_flushes_waiting_sync_event_tasks() {
    let (se, pe, log) = context();
    se.task_wait_eq_alloc_init(9, u64::MAX, Data::NONE).unwrap().submit().unwrap();
    let ctx = se.as_ctx().unwrap();
    assert_eq!(ctx.stop(), Err(Error::InProgress));
    while pe.progress() {}
    assert_eq!(log.borrow().last(), Some(&("eq", Err(Error::Shutdown), 0)));
    assert_eq!(ctx.state(), CtxState::Idle);
}
