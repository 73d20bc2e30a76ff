//! Sync events across processes, as NVIDIA's sync_event samples use them: one process
//! exports (the `se_peer` process or this one, on either side), the other imports the blob;
//! each waits — blocking, or with a wait task on a progress engine asleep on its
//! notification handle — for the other's update. A dead exporter: the importer answers
//! `NOT_FOUND` (a waiting task completes with it, its engine woken); a dead importer: the
//! exporter keeps working. A hostile importer (writing the shared page, registering
//! doorbells without end) cannot keep another engine asleep, make an update write into
//! anybody's file, or make the event look destroyed.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use doca_core::{open_device_with_pci, Data, Error, Pe};
use doca_sync_event::{Cmp, Location, SyncEvent, WaitMode};
use doca_tests::{from_hex, to_hex, Peer};

const PEER: &str = env!("CARGO_BIN_EXE_se_peer");

/// The statuses of the wait tasks that completed, in order.
type Seen = Rc<RefCell<Vec<Result<(), Error>>>>;

/// A private fabric directory (where exporters' memory services put their sockets) for this
/// file's tests and their peers, set before the first export.
fn private_fabric() {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("doca-se-xp-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        std::env::set_var("DOCA_EMU_FABRIC_DIR", &d);
        d
    });
}

fn blob_of(answer: &str) -> Vec<u8> {
    from_hex(answer.strip_prefix("blob ").unwrap_or_else(|| panic!("no blob: {answer}"))).expect("hex")
}

/// An imported or local event as a context on its own engine, with wait-eq tasks whose
/// statuses land in the returned list.
fn as_context(ev: &SyncEvent) -> (Pe, Seen) {
    let pe = Pe::create().unwrap();
    let ctx = ev.as_ctx().unwrap();
    pe.connect_ctx(&ctx).unwrap();
    let seen: Seen = Rc::default();
    let (a, b) = (seen.clone(), seen.clone());
    ev.task_wait_eq_set_conf(
        move |t, _, _| a.borrow_mut().push(t.status()),
        move |t, _, _| b.borrow_mut().push(t.status()),
        4,
    )
    .unwrap();
    ev.task_notify_add_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    ctx.start().unwrap();
    while pe.progress() {} // the transition to Running
    (pe, seen)
}

/// Sleeps on the engine's notification handle until a task completed (each sleep up to
/// 30 s: a sleep that ends with nothing to do means the other process's update did not
/// wake the engine).
fn sleep_until_done(pe: &Pe, seen: &Seen) {
    let start = seen.borrow().len();
    for _ in 0..100 {
        if pe.progress() && seen.borrow().len() > start {
            return;
        }
        let woke = pe.wait(Some(Duration::from_secs(30))).unwrap();
        assert!(woke, "the engine slept through the other process's update");
    }
    panic!("the wait task never completed");
}

/// 2.5/2.6 sync_event_host / sync_event_dpu: the host (peer) exports to the DPU (here); the
/// DPU's wait task completes, its sleeping engine woken, when the host sets the value; the
/// host's blocking wait returns when the DPU adds to it, not before.
#[test]
fn the_host_exports_to_the_dpu_and_each_wakes_the_other() {
    private_fabric();
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let mut host = Peer::spawn(PEER, &["host"]);
    let blob = blob_of(&host.ask("export host 25"));
    let ev = SyncEvent::create_from_export(&dpu, &blob).unwrap();
    let (pe, seen) = as_context(&ev);

    ev.task_wait_eq_alloc_init(5, u64::MAX, Data::NONE).unwrap().submit().unwrap();
    assert!(!pe.progress(), "nothing yet");
    host.send("set_after 300 5"); // this engine is asleep by then
    sleep_until_done(&pe, &seen);
    assert_eq!(host.line(), "ok");
    assert_eq!(seen.borrow().last(), Some(&Ok(())));

    host.send("wait_eq 6");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(host.try_line(), None, "the host's wait blocks until the update");
    ev.task_notify_add_alloc_init(1, Data::NONE).unwrap().submit().unwrap();
    while pe.progress() {}
    assert_eq!(host.line(), "ok");
    host.send("wait_eq_yield 7");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(host.try_line(), None, "the yielding wait blocks too");
    ev.task_notify_add_alloc_init(1, Data::NONE).unwrap().submit().unwrap();
    while pe.progress() {}
    assert_eq!(host.line(), "ok");
    assert_eq!(host.ask("get"), "value 7");

    // The exporter destroys the event: the DPU's next wait task fails with NOT_FOUND.
    assert_eq!(host.ask("destroy"), "ok");
    ev.task_wait_eq_alloc_init(100, u64::MAX, Data::NONE).unwrap().submit().unwrap();
    while pe.progress() {}
    assert_eq!(seen.borrow().last(), Some(&Err(Error::NotFound)));
    assert!(host.finish());
}

/// 2.7+ sync_event_local_pci / sync_event_remote_pci with the DPU (here) exporting: the host
/// (peer) imports and blocks in `wait_gt` until the DPU sets the value. Then the importer
/// dies: the exporter keeps working.
#[test]
fn the_dpu_exports_to_the_host_and_survives_the_importers_death() {
    private_fabric();
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let ev = SyncEvent::create().unwrap();
    ev.add_publisher_location(Location::RemotePci).unwrap();
    ev.add_subscriber_location(Location::Cpu(dpu.as_devinfo().pci_addr())).unwrap();
    ev.start().unwrap();
    assert_eq!(ev.export_to_dpu(&dpu).err(), Some(Error::NotSupported), "2.5/2.6 export: host only");
    let blob = ev.export_to_remote_pci(&dpu).unwrap();
    let mut host = Peer::spawn(PEER, &["host"]);
    assert_eq!(host.ask(&format!("import {}", to_hex(&blob))), "ok");
    host.send("wait_gt 0");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(host.try_line(), None, "blocked");
    ev.update_set(1).unwrap();
    assert_eq!(host.line(), "ok");
    assert_eq!(host.ask("add 2"), "value 1");
    assert_eq!(ev.get(), Ok(3));
    ev.wait(Cmp::Eq, 3, u64::MAX, WaitMode::Sleep).unwrap();

    host.send("die");
    assert!(host.finish());
    assert_eq!(ev.update_add(1), Ok(3), "the exporter keeps working");
    assert_eq!(ev.get(), Ok(4));
    ev.stop().unwrap();
    ev.destroy().unwrap();
}

/// The exporter (peer) dies while this importer's engine sleeps on a wait task: the engine
/// wakes and the task completes with `NOT_FOUND`; synchronous calls answer the same, and a
/// new import of the blob too.
#[test]
fn an_importer_of_a_dead_exporter_gets_not_found() {
    private_fabric();
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    let mut dpu = Peer::spawn(PEER, &["dpu"]);
    let blob = blob_of(&dpu.ask("export dpu 29"));
    let ev = SyncEvent::create_from_export(&host, &blob).unwrap();
    let blocking = SyncEvent::create_from_export(&host, &blob).unwrap();
    blocking.start().unwrap();
    let (pe, seen) = as_context(&ev);
    ev.task_wait_eq_alloc_init(9, u64::MAX, Data::NONE).unwrap().submit().unwrap();
    assert!(!pe.progress());
    // It dies while this engine sleeps (the check at the sleep finds it alive).
    let dying = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        dpu.send("die");
        dpu.finish()
    });
    sleep_until_done(&pe, &seen);
    assert!(dying.join().unwrap());
    assert_eq!(seen.borrow().last(), Some(&Err(Error::NotFound)));
    assert_eq!(blocking.wait(Cmp::Eq, 9, u64::MAX, WaitMode::Sleep), Err(Error::NotFound));
    assert_eq!(blocking.get(), Err(Error::NotFound));
    assert_eq!(blocking.update_set(1), Err(Error::NotFound));
    assert_eq!(SyncEvent::create_from_export(&host, &blob).err(), Some(Error::NotFound));
}

/// A hostile importer writes the whole page after the value (what used to be 16 doorbell
/// slots) with a pattern naming a live process and one of its pipes as taken, armed slots,
/// and writes "destroyed" into the state word. Then: an honest importer's engine asleep on
/// a wait task is still woken by the exporter's update; no update writes into the named
/// pipe; the honest importer's calls do not answer `NOT_FOUND` (only the exporter decides).
#[test]
fn a_hostile_importer_writing_the_page_neither_silences_nor_redirects_nor_revokes() {
    private_fabric();
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    let mut dpu = Peer::spawn(PEER, &["dpu"]);
    let blob = blob_of(&dpu.ask("export dpu 29"));
    let mut hostile = Peer::spawn(PEER, &["host"]);
    assert_eq!(hostile.ask(&format!("import {}", to_hex(&blob))), "ok");
    // The bystander: this process's pipe, named in every would-be slot.
    let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::NONBLOCK).unwrap();
    let mut quad = Vec::new();
    for word in [1, std::process::id(), std::os::fd::AsRawFd::as_raw_fd(&write) as u32, 1] {
        quad.extend_from_slice(&word.to_le_bytes());
    }
    assert_eq!(hostile.ask(&format!("scribble 32 4064 {}", to_hex(&quad))), "ok");
    assert_eq!(hostile.ask(&format!("scribble 8 4 {}", to_hex(&2u32.to_le_bytes()))), "ok");

    let ev = SyncEvent::create_from_export(&host, &blob).expect("the exporter still offers it");
    let (pe, seen) = as_context(&ev);
    assert_eq!(ev.get(), Ok(0), "only the exporter says the event is gone");
    ev.task_wait_eq_alloc_init(5, u64::MAX, Data::NONE).unwrap().submit().unwrap();
    assert!(!pe.progress(), "nothing yet");
    dpu.send("set_after 300 5"); // this engine is asleep by then
    sleep_until_done(&pe, &seen);
    assert_eq!(dpu.line(), "ok");
    assert_eq!(seen.borrow().last(), Some(&Ok(())), "not a NOT_FOUND from the forged state word");
    assert_eq!(dpu.ask("add 1"), "value 5");
    let mut buf = [0u8; 64];
    assert_eq!(
        rustix::io::read(&read, &mut buf).err(),
        Some(rustix::io::Errno::AGAIN),
        "an update wrote into a pipe the page named"
    );
    // The exporter's own destroy still reaches this importer.
    assert_eq!(dpu.ask("destroy"), "ok");
    assert_eq!(ev.get(), Err(Error::NotFound));
    hostile.send("die");
    assert!(hostile.finish() && dpu.finish());
}

/// One importing process asks for a doorbell slot for each of 70 imports: it gets at most
/// `cap peer.doorbells_per_process` (8), the rest are refused, so the exporter's own engine
/// (and anyone else) still gets a slot and is woken by another importer's update.
#[test]
fn an_importer_registering_doorbells_without_end_is_held_to_its_budget() {
    private_fabric();
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let ev = SyncEvent::create().unwrap();
    ev.add_publisher_location(Location::RemotePci).unwrap();
    let blob = ev.export_to_remote_pci(&dpu).unwrap();
    let mut hostile = Peer::spawn(PEER, &["host"]);
    assert_eq!(hostile.ask(&format!("flood 70 {}", to_hex(&blob))), "value 70");
    let mut honest = Peer::spawn(PEER, &["host"]);
    assert_eq!(honest.ask(&format!("import {}", to_hex(&blob))), "ok");

    let (pe, seen) = as_context(&ev);
    ev.task_wait_eq_alloc_init(3, u64::MAX, Data::NONE).unwrap().submit().unwrap();
    assert!(!pe.progress(), "nothing yet");
    honest.send("set_after 300 3"); // relayed by this process's memory service
    sleep_until_done(&pe, &seen);
    assert_eq!(honest.line(), "ok");
    assert_eq!(seen.borrow().last(), Some(&Ok(())));
    hostile.send("die");
    honest.send("die");
    assert!(hostile.finish() && honest.finish());
}
