//! RDMA messages over shared rings (two contexts of one kernel): messages longer than a ring
//! record arrive whole and in order through `MORE` records, a sleeping side wakes on a
//! message and on an answer, and a peer that writes garbage into the shared rings (or lies
//! in its handshake) has its connection closed in the error state — never a panic, never a
//! read outside the rings.

use std::cell::RefCell;
use std::os::fd::{AsFd, OwnedFd};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, Data, Dev, Error, Pe, TaskSubmitFlags};
use doca_link::notify::Doorbell;
use doca_link::ring::{Area, End, Ring};
use doca_mmap::{AccessFlags, Mmap};
use doca_rdma::wire::{Hdr, Kind, ACK_AT, ACK_SLOTS, AREA_LEN, CHUNK, HDR_LEN, MSG_RECORD, MSG_SLOTS};
use doca_rdma::{ConnState, Connection, Rdma, ReceiveTask, SendTask};
use doca_tests::rdma_hand::{local_map, HandMade};

/// A private fabric directory (0700) for this test binary.
fn fabric() {
    doca_tests::private_fabric();
}

type Got = Rc<RefCell<Vec<(Result<(), Error>, Vec<u8>, u32)>>>;

/// One context with its engine, a 1 MiB map and logs of its sends and receives.
struct End2 {
    _dev: Dev,
    pe: Pe,
    rdma: Rdma,
    map: Mmap,
    inv: Inventory,
    sent: Rc<RefCell<Vec<Result<(), Error>>>>,
    got: Got,
}

fn end() -> End2 {
    end_keeping(None)
}

/// [`end`] whose completed receive tasks go to `kept` (to be posted again) instead of
/// being freed.
fn end_keeping(kept: Option<Rc<RefCell<Vec<ReceiveTask>>>>) -> End2 {
    fabric();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let rdma = Rdma::create(&dev).unwrap();
    rdma.set_permissions(1).unwrap();
    rdma.set_send_queue_size(256).unwrap();
    rdma.set_recv_queue_size(256).unwrap();
    let sent: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
    let got: Got = Rc::default();
    let (a, b) = (sent.clone(), sent.clone());
    rdma.task_send_set_conf(
        move |_t: SendTask, _, _| a.borrow_mut().push(Ok(())),
        move |t: SendTask, _, _| b.borrow_mut().push(t.status()),
        256,
    )
    .unwrap();
    let (a, b) = (got.clone(), got.clone());
    rdma.task_receive_set_conf(
        move |t: ReceiveTask, _, _| {
            let bytes = t.dst().map(|d| d.data_to_vec().unwrap()).unwrap_or_default();
            a.borrow_mut().push((Ok(()), bytes, t.result_len()));
            if let Some(k) = &kept {
                k.borrow_mut().push(t);
            }
        },
        move |t: ReceiveTask, _, _| b.borrow_mut().push((t.status(), Vec::new(), 0)),
        256,
    )
    .unwrap();
    pe.connect_ctx(&rdma.as_ctx()).unwrap();
    rdma.as_ctx().start().unwrap();
    let map = local_map(&dev, 1 << 20);
    let inv = Inventory::create(256).unwrap();
    inv.start().unwrap();
    End2 { _dev: dev, pe, rdma, map, inv, sent, got }
}

/// Two contexts connected both ways.
fn pair() -> (End2, Connection, End2, Connection) {
    let (a, b) = (end(), end());
    let (ca, cb) = connect(&a, &b);
    (a, ca, b, cb)
}

/// Connects `a` and `b` both ways: each one's connection.
fn connect(a: &End2, b: &End2) -> (Connection, Connection) {
    let (da, ca) = a.rdma.export().unwrap();
    let (db, cb) = b.rdma.export().unwrap();
    a.rdma.connect(&db, ca).unwrap();
    b.rdma.connect(&da, cb).unwrap();
    (ca, cb)
}

/// Posts a receive of 4 KiB at `at` of `e`'s map.
fn post_receive(e: &End2, at: usize) {
    let room = e.inv.buf_get_at(&e.map, at, 4096).unwrap();
    e.rdma.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
}

/// Progresses both engines until `done` (at most 10 s).
fn run(a: &Pe, b: &Pe, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < until, "timed out");
        a.progress();
        b.progress();
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn messages_longer_than_a_record_arrive_whole_and_in_order() {
    let (a, ca, b, _cb) = pair();
    let max = 65536;
    let lens =
        [0, 1, 64, CHUNK, MSG_RECORD - HDR_LEN, MSG_RECORD - HDR_LEN + 1, MSG_RECORD, 3 * CHUNK + 7, max];
    for (i, _) in lens.iter().enumerate() {
        let room = b.inv.buf_get_at(&b.map, i * max, max).unwrap();
        b.rdma.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
    }
    for (i, &len) in lens.iter().enumerate() {
        let src = a.inv.buf_get_at(&a.map, i * max, max).unwrap();
        src.append(&pattern(len, i as u8)).unwrap();
        a.rdma.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    }
    run(&a.pe, &b.pe, || a.sent.borrow().len() == lens.len() && b.got.borrow().len() == lens.len());
    assert!(a.sent.borrow().iter().all(Result::is_ok), "{:?}", a.sent.borrow());
    for (i, (r, bytes, n)) in b.got.borrow().iter().enumerate() {
        assert_eq!(*r, Ok(()));
        assert_eq!(*n as usize, lens[i], "message {i}");
        assert!(*bytes == pattern(lens[i], i as u8), "message {i} ({} bytes) arrived whole", lens[i]);
    }
    // A longer one than the context's limit is refused at the sender.
    let src = a.inv.buf_get_at(&a.map, 0, max + 1).unwrap();
    src.append(&pattern(max + 1, 0)).unwrap();
    a.rdma.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    run(&a.pe, &b.pe, || a.sent.borrow().len() == lens.len() + 1);
    assert_eq!(a.sent.borrow().last(), Some(&Err(Error::InvalidValue)));
}

#[test]
fn many_messages_in_flight_and_a_receiver_not_ready_through_the_rings() {
    let (a, ca, b, _cb) = pair();
    // 200 sends before any receive is posted: the window fills, the receiver answers
    // receiver-not-ready, the sender goes back; then receives come in batches.
    for i in 0..200usize {
        let src = a.inv.buf_get_at(&a.map, i * 4096, 4096).unwrap();
        src.append(&pattern(100 + i, i as u8)).unwrap();
        a.rdma.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    }
    for _ in 0..1000 {
        a.pe.progress();
        b.pe.progress();
    }
    assert!(a.sent.borrow().is_empty(), "no send completes without a receive");
    let mut posted = 0usize;
    run(&a.pe, &b.pe, || {
        if posted < 200 && b.got.borrow().len() == posted {
            for k in posted..(posted + 50).min(200) {
                let room = b.inv.buf_get_at(&b.map, k * 4096, 4096).unwrap();
                b.rdma.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
            }
            posted = (posted + 50).min(200);
        }
        b.got.borrow().len() == 200 && a.sent.borrow().len() == 200
    });
    for (i, (r, bytes, _)) in b.got.borrow().iter().enumerate() {
        assert_eq!(*r, Ok(()));
        assert!(*bytes == pattern(100 + i, i as u8), "message {i} in order and whole");
    }
}

#[test]
fn a_sleeping_side_wakes_on_a_message_and_on_its_answer() {
    let (a, ca, b, _cb) = pair();
    let room = b.inv.buf_get_at(&b.map, 0, 4096).unwrap();
    b.rdma.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
    run(&a.pe, &b.pe, || {
        // Set up both ways (the doorbells exchanged) before anyone sleeps.
        let _ = a.pe.progress() | b.pe.progress();
        true
    });
    let settle = Instant::now() + Duration::from_millis(100);
    while Instant::now() < settle {
        a.pe.progress();
        b.pe.progress();
    }
    // B sleeps on its engine's handle on this thread; A sends from a helper loop here too,
    // so B's wait runs on another thread through a raw poll on its handle.
    let handle: OwnedFd = b.pe.notification_handle().try_clone_to_owned().unwrap();
    // What set-up left ringing (a doorbell rung once when the rings were shared) wakes the
    // engine once: a sleep and a wake-up later, it sleeps for real.
    let mut quiet = false;
    for _ in 0..10 {
        b.pe.request_notification().unwrap();
        let mut fds = [rustix::event::PollFd::new(&handle, rustix::event::PollFlags::IN)];
        if rustix::event::poll(&mut fds, Some(&rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 })).unwrap()
            == 0
        {
            quiet = true;
            break;
        }
        b.pe.clear_notification().unwrap();
        while b.pe.progress() {}
    }
    assert!(quiet, "B's engine settles");
    let woke = Arc::new(Mutex::new(None));
    let w = woke.clone();
    let t = std::thread::spawn(move || {
        let mut fds = [rustix::event::PollFd::new(&handle, rustix::event::PollFlags::IN)];
        let n =
            rustix::event::poll(&mut fds, Some(&rustix::event::Timespec { tv_sec: 10, tv_nsec: 0 })).unwrap();
        *w.lock().unwrap() = Some((n, Instant::now()));
    });
    std::thread::sleep(Duration::from_millis(50));
    assert!(woke.lock().unwrap().is_none(), "B slept while nothing came");
    let src = a.inv.buf_get_at(&a.map, 0, 4096).unwrap();
    src.append(b"wake up").unwrap();
    a.rdma.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    let sent_at = Instant::now();
    // A progresses until its send is in the ring, then arms itself to sleep too.
    for _ in 0..10 {
        a.pe.progress();
    }
    a.pe.request_notification().unwrap();
    t.join().unwrap();
    let (n, at) = woke.lock().unwrap().unwrap();
    assert_eq!(n, 1, "B's handle became readable: the message rang its doorbell");
    assert!(at.duration_since(sent_at) < Duration::from_secs(5));
    b.pe.clear_notification().unwrap();
    while b.got.borrow().is_empty() {
        b.pe.progress();
    }
    assert_eq!(b.got.borrow()[0].1, b"wake up");
    // B's answer went into the answers ring while A slept: A's handle is readable.
    let handle_a = a.pe.notification_handle();
    let mut fds = [rustix::event::PollFd::new(&handle_a, rustix::event::PollFlags::IN)];
    let n = rustix::event::poll(&mut fds, Some(&rustix::event::Timespec { tv_sec: 5, tv_nsec: 0 })).unwrap();
    assert_eq!(n, 1, "A woke on the answer");
    a.pe.clear_notification().unwrap();
    while a.sent.borrow().is_empty() {
        a.pe.progress();
    }
    assert_eq!(a.sent.borrow()[0], Ok(()));
}

/// A context connected to a hand-made peer that brought shared rings: the peer's end of
/// the messages ring (producer) and its socket.
fn hostile_pair() -> (End2, Connection, Ring, OwnedFd, HandMade, Doorbell) {
    let a = end();
    let h = HandMade::new();
    let (da, ca) = a.rdma.export().unwrap();
    a.rdma.connect(&h.desc(1), ca).unwrap();
    let area = Area::create("hostile", AREA_LEN).unwrap();
    Ring::init(&area, 0, MSG_SLOTS, MSG_RECORD).unwrap();
    Ring::init(&area, ACK_AT, ACK_SLOTS, HDR_LEN).unwrap();
    let tx = Ring::attach(&area, 0, MSG_SLOTS, MSG_RECORD, End::Producer).unwrap();
    let (bell, ringer) = Doorbell::pair().unwrap();
    let sock = h.dial(&da, &[area.as_fd(), ringer.as_fd()]).into_inner();
    for _ in 0..100 {
        a.pe.progress();
    }
    assert_eq!(a.rdma.connection_state(ca).unwrap(), ConnState::Connected);
    (a, ca, tx, sock, h, bell)
}

fn push(tx: &Ring, h: Hdr, payload: &[u8]) {
    let mut rec = h.encode().to_vec();
    rec.extend_from_slice(payload);
    assert!(tx.push_with(h.kind as u32, rec.len(), |b| b.copy_from_slice(&rec)).unwrap());
}

#[test]
fn an_honest_hand_made_peer_is_served_through_its_rings() {
    let (a, ca, tx, _sock, _h, _bell) = hostile_pair();
    let room = a.inv.buf_get_at(&a.map, 0, 4096).unwrap();
    a.rdma.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
    push(&tx, Hdr { kind: Kind::Send, flags: 0, seq: 0, imm: 0, len: 5 }, b"hello");
    let until = Instant::now() + Duration::from_secs(10);
    while a.got.borrow().is_empty() {
        assert!(Instant::now() < until);
        a.pe.progress();
    }
    assert_eq!(a.got.borrow()[0], (Ok(()), b"hello".to_vec(), 5));
    assert_eq!(a.rdma.connection_state(ca).unwrap(), ConnState::Connected);
}

/// What a hostile peer writes into its messages ring.
type Hurt = Box<dyn Fn(&Ring)>;

#[test]
fn garbage_in_the_shared_rings_closes_the_connection_in_error() {
    let bad: Vec<(&str, Hurt)> = vec![
        ("unknown kind", Box::new(|tx| assert!(tx.push_with(77, HDR_LEN, |b| b.fill(77)).unwrap()))),
        (
            "a length past the message limit",
            Box::new(|tx| {
                push(tx, Hdr { kind: Kind::Send, flags: 0, seq: 0, imm: 0, len: 1 << 30 }, &[1; 64])
            }),
        ),
        (
            "a first part shorter than it must be",
            Box::new(|tx| {
                push(tx, Hdr { kind: Kind::Send, flags: 0, seq: 0, imm: 0, len: 20_000 }, &[1; 64])
            }),
        ),
        (
            "a MORE with no message begun",
            Box::new(|tx| push(tx, Hdr { kind: Kind::More, flags: 0, seq: 0, imm: 0, len: 3 }, b"abc")),
        ),
        (
            "a message longer than it said",
            Box::new(|tx| {
                push(
                    tx,
                    Hdr { kind: Kind::Send, flags: 0, seq: 0, imm: 0, len: CHUNK as u32 + 2 },
                    &vec![0; CHUNK],
                );
                push(tx, Hdr { kind: Kind::More, flags: 0, seq: 0, imm: 0, len: 3 }, b"abc");
            }),
        ),
        (
            "a record kind that is not the packet's",
            Box::new(|tx| {
                let h = Hdr { kind: Kind::Send, flags: 0, seq: 0, imm: 0, len: 0 }.encode();
                assert!(tx.push_with(Kind::Ack as u32, HDR_LEN, |b| b.copy_from_slice(&h)).unwrap());
            }),
        ),
        (
            "an answer in the messages ring",
            Box::new(|tx| push(tx, Hdr { kind: Kind::Ack, flags: 0, seq: 0, imm: 0, len: 0 }, &[])),
        ),
        (
            "a goodbye in the messages ring",
            Box::new(|tx| push(tx, Hdr { kind: Kind::Bye, flags: 0, seq: 0, imm: 0, len: 0 }, &[])),
        ),
    ];
    for (what, hurt) in bad {
        let (a, ca, tx, _sock, _h, _bell) = hostile_pair();
        let room = a.inv.buf_get_at(&a.map, 0, 1 << 16).unwrap();
        a.rdma.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
        hurt(&tx);
        let until = Instant::now() + Duration::from_secs(10);
        // The connection goes to the error state; the receive posted with no live connection
        // left fails, and with it the context (its connections closed: the name is gone).
        loop {
            match a.rdma.connection_state(ca) {
                Ok(ConnState::Error) | Err(Error::NotFound) => break,
                s => assert!(Instant::now() < until, "{what}: the connection stayed {s:?}"),
            }
            a.pe.progress();
        }
        while a.got.borrow().is_empty() {
            assert!(Instant::now() < until, "{what}: the posted receive never completed");
            a.pe.progress();
        }
        assert!(
            a.got.borrow().iter().all(|(r, _, _)| r.is_err()),
            "{what}: nothing was delivered ({:?})",
            a.got.borrow()
        );
    }
}

/// `doca_emu ls` shows each RDMA context of this process: its state, its engine, its live
/// connection, the receives it has posted, and the messages and bytes each way.
#[test]
fn doca_emu_shows_each_rdma_context_with_its_traffic() {
    let (a, ca, b, _cb) = pair();
    for i in 0..3 {
        post_receive(&b, i * 4096);
    }
    for i in 0..2 {
        let src = a.inv.buf_get_at(&a.map, i * 4096, 4096).unwrap();
        src.append(&pattern(100, 0)).unwrap();
        a.rdma.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    }
    run(&a.pe, &b.pe, || a.sent.borrow().len() == 2 && b.got.borrow().len() == 2);
    // One more pass each: the rows say what the last pass saw.
    a.pe.progress();
    b.pe.progress();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_emu_cli"))
        .args(["ls", "--json"])
        .output()
        .expect("doca_emu runs");
    let ls: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ls --json is JSON");
    let me = ls["processes"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["pid"] == std::process::id()))
        .unwrap_or_else(|| panic!("this process is listed: {ls}"));
    let rows: Vec<&serde_json::Value> =
        me["objects"].as_array().unwrap().iter().filter(|o| o["kind"] == "rdma").collect();
    // Other tests of this binary run beside this one: find the two rows of this pair by
    // their traffic (a sender of exactly 2 messages of 100 bytes, a receiver of them).
    let sender = rows
        .iter()
        .find(|o| o["sent"]["messages"] == 2 && o["sent"]["bytes"] == 200 && o["received"]["messages"] == 0)
        .unwrap_or_else(|| panic!("the sending context's row: {rows:?}"));
    assert_eq!(sender["connections"], 1);
    assert_eq!(sender["ring"]["fill"], 0, "nothing in flight once answered");
    assert!(sender["engine"].as_u64().unwrap() > 0, "connected to an engine: {sender}");
    assert_eq!(sender["dev"], "0000:03:00.0");
    let receiver = rows
        .iter()
        .find(|o| {
            o["received"]["messages"] == 2 && o["received"]["bytes"] == 200 && o["sent"]["messages"] == 0
        })
        .unwrap_or_else(|| panic!("the receiving context's row: {rows:?}"));
    assert_eq!(receiver["connections"], 1);
    assert_eq!(receiver["posted_buffers"], 1, "one receive still posted");
    assert_eq!(
        (&sender["state"], &receiver["state"]),
        (&serde_json::json!("running"), &serde_json::json!("running"))
    );
    // Each context's connection has a row of its own under it, with its own counts and
    // window; its peer is this process (both contexts live here).
    let conn_of = |owner: &serde_json::Value| -> serde_json::Value {
        let of: Vec<&serde_json::Value> = me["objects"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|o| o["role"] == "connection" && o["owner_row"] == owner["row"])
            .collect();
        assert_eq!(of.len(), 1, "one connection row under {owner}: {me}");
        of[0].clone()
    };
    let (sc, rc) = (conn_of(sender), conn_of(receiver));
    for (owner, c) in [(sender, &sc), (receiver, &rc)] {
        assert_eq!((c["kind"].as_str(), c["state"].as_str()), (Some("rdma_conn"), Some("connected")), "{c}");
        assert_eq!(c["peer_pid"], std::process::id(), "{c}");
        assert_eq!(c["engine"], owner["engine"], "its context's engine: {c}");
    }
    assert_eq!((sc["sent"]["messages"].as_u64(), sc["sent"]["bytes"].as_u64()), (Some(2), Some(200)), "{sc}");
    assert_eq!(
        (rc["received"]["messages"].as_u64(), rc["received"]["bytes"].as_u64()),
        (Some(2), Some(200)),
        "{rc}"
    );
    assert_eq!(
        (sc["ring"]["fill"].as_u64(), rc["sent"]["messages"].as_u64()),
        (Some(0), Some(0)),
        "{sc} {rc}"
    );
    let sender_row = sender["row"].clone();
    // A stopped context's row says so.
    a.rdma.as_ctx().stop().unwrap();
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_emu_cli")).args(["ls", "--json"]).output().unwrap();
    let ls: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ls --json is JSON");
    let me =
        ls["processes"].as_array().and_then(|ps| ps.iter().find(|p| p["pid"] == std::process::id())).unwrap();
    let stopped = me["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "rdma" && o["sent"]["messages"] == 2 && o["sent"]["bytes"] == 200)
        .unwrap_or_else(|| panic!("the sender's row after its stop: {me}"));
    assert_eq!(stopped["state"], "idle", "{stopped}");
    let left = me["objects"].as_array().unwrap().iter().filter(|o| o["owner_row"] == sender_row).count();
    assert_eq!(left, 0, "a stopped context's connection rows are gone: {me}");
    drop((a, b));
}

/// A send leaves at its submission, as a doorbell starts it on the hardware: the peer
/// receives it while the sender's engine is not progressed again. Submitted without
/// `DOCA_TASK_SUBMIT_FLAG_FLUSH` it waits for the sender's next progress.
#[test]
fn a_send_leaves_at_submission_and_one_kept_back_at_the_next_progress() {
    let (a, ca, b, _cb) = pair();
    for i in 0..2 {
        post_receive(&b, i * 4096);
    }
    // One message first, so that both sides have seen the connection up.
    let first = a.inv.buf_get_at(&a.map, 0, 4096).unwrap();
    first.append(&pattern(64, 1)).unwrap();
    a.rdma.task_send_alloc_init(ca, Some(&first), Data::NONE).unwrap().submit().unwrap();
    run(&a.pe, &b.pe, || a.sent.borrow().len() == 1 && b.got.borrow().len() == 1);

    let progress_b_only = |want: usize, passes: u32| {
        for _ in 0..passes {
            if b.got.borrow().len() == want {
                return true;
            }
            b.pe.progress();
        }
        b.got.borrow().len() == want
    };
    let kept = a.inv.buf_get_at(&a.map, 4096, 4096).unwrap();
    kept.append(&pattern(64, 2)).unwrap();
    a.rdma
        .task_send_alloc_init(ca, Some(&kept), Data::NONE)
        .unwrap()
        .submit_ex(TaskSubmitFlags::empty())
        .unwrap();
    assert!(!progress_b_only(2, 1000), "a send kept back does not leave before the sender's progress");
    a.pe.progress();
    assert!(progress_b_only(2, 100_000), "it leaves at the sender's next progress");

    post_receive(&b, 2 * 4096);
    run(&a.pe, &b.pe, || a.sent.borrow().len() == 2);
    let now = a.inv.buf_get_at(&a.map, 2 * 4096, 4096).unwrap();
    now.append(&pattern(64, 3)).unwrap();
    a.rdma.task_send_alloc_init(ca, Some(&now), Data::NONE).unwrap().submit().unwrap();
    assert!(progress_b_only(3, 100_000), "a flushing send reaches the peer without the sender's progress");
    let got = b.got.borrow();
    assert_eq!(
        got.iter().map(|g| g.1.clone()).collect::<Vec<_>>(),
        [pattern(64, 1), pattern(64, 2), pattern(64, 3)]
    );
}

/// A receive posted again with the same buffer is not checked again, but one given another
/// buffer is: a buffer of a read-only map fails it (`NOT_PERMITTED`, the error rule then
/// fails the context), as it would have at its first post.
#[test]
fn a_receive_posted_again_with_another_buffer_is_checked_again() {
    let kept: Rc<RefCell<Vec<ReceiveTask>>> = Rc::default();
    let (a, b) = (end(), end_keeping(Some(kept.clone())));
    let (ca, _cb) = connect(&a, &b);
    let room = b.inv.buf_get_at(&b.map, 0, 4096).unwrap();
    b.rdma.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
    let send = |i: usize| {
        let src = a.inv.buf_get_at(&a.map, i * 4096, 4096).unwrap();
        src.append(&pattern(64, i as u8)).unwrap();
        a.rdma.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    };
    for i in 0..2 {
        send(i);
        run(&a.pe, &b.pe, || b.got.borrow().len() == i + 1);
        let t = kept.borrow_mut().pop().expect("the receive came back");
        room.reset_data_len().unwrap();
        t.submit().unwrap();
    }
    assert!(b.got.borrow().iter().all(|g| g.0.is_ok()), "{:?}", b.got.borrow());
    // The same task, given a buffer of a read-only map.
    let ro = Mmap::create().unwrap();
    ro.set_memrange(vec![0u8; 4096]).unwrap();
    ro.set_permissions(AccessFlags::LOCAL_READ_ONLY).unwrap();
    ro.add_dev(&b._dev).unwrap();
    ro.start().unwrap();
    let bad = b.inv.buf_get_at(&ro, 0, 4096).unwrap();
    send(2);
    run(&a.pe, &b.pe, || b.got.borrow().len() == 3);
    let t = kept.borrow_mut().pop().expect("the receive came back");
    t.set_dst(Some(&bad));
    t.submit().unwrap();
    send(3);
    run(&a.pe, &b.pe, || b.got.borrow().len() == 4);
    assert_eq!(b.got.borrow()[3].0, Err(Error::NotPermitted), "{:?}", b.got.borrow());
}
