//! A hand-made RDMA peer that misbehaves against one context (socket mode: it names itself
//! on the socket it opened and answers through the rings this side offers): a peer that
//! closes one of its two sockets, that takes a message and never answers, or that refuses
//! a message with a success code. Nothing waits for ever, nothing spins, and no task
//! completes with an error whose status is `DOCA_SUCCESS`.

use std::cell::RefCell;
use std::os::fd::AsFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, Data, Dev, Error, Pe};
use doca_link::discard::PeerFd;
use doca_link::ring::{Area, End, Ring};
use doca_link::Recv;
use doca_mmap::{AccessFlags, Mmap};
use doca_rdma::wire::{Hdr, Kind, ACK_AT, ACK_SLOTS, AREA_LEN, HDR_LEN, MSG_RECORD, MSG_SLOTS};
use doca_rdma::{ConnState, Connection, Rdma, SendTask, WriteTask, HALF_CLOSE_WAIT, SOCKET_PACKETS_PER_PASS};
use doca_tests::rdma_hand::{local_map, HandMade};

/// A private fabric directory (0700) for this test binary.
fn fabric() {
    doca_tests::private_fabric();
}

type Log = Rc<RefCell<Vec<Result<(), Error>>>>;

struct End2 {
    dev: Dev,
    pe: Pe,
    rdma: Rdma,
    map: Mmap,
    inv: Inventory,
    sent: Log,
    wrote: Log,
}

fn end() -> End2 {
    end_on(open_device_with_pci("03:00.0", None).unwrap())
}

/// [`end`] on a device of the caller's topology.
fn end_on(dev: Dev) -> End2 {
    fabric();
    end_with(dev, Pe::create().unwrap())
}

/// [`end_on`] with the caller's engine (a manual clock's).
fn end_with(dev: Dev, pe: Pe) -> End2 {
    fabric();
    let rdma = Rdma::create(&dev).unwrap();
    rdma.set_permissions(1).unwrap();
    let sent: Log = Rc::default();
    let (a, b) = (sent.clone(), sent.clone());
    rdma.task_send_set_conf(
        move |_t: SendTask, _, _| a.borrow_mut().push(Ok(())),
        move |t: SendTask, _, _| b.borrow_mut().push(t.status()),
        64,
    )
    .unwrap();
    let wrote: Log = Rc::default();
    let (a, b) = (wrote.clone(), wrote.clone());
    rdma.task_write_set_conf(
        move |_t: WriteTask, _, _| a.borrow_mut().push(Ok(())),
        move |t: WriteTask, _, _| b.borrow_mut().push(t.status()),
        64,
    )
    .unwrap();
    pe.connect_ctx(&rdma.as_ctx()).unwrap();
    rdma.as_ctx().start().unwrap();
    let map = local_map(&dev, 1 << 20);
    let inv = Inventory::create(64).unwrap();
    inv.start().unwrap();
    End2 { dev, pe, rdma, map, inv, sent, wrote }
}

/// A context connected to a hand-made peer (socket mode for the peer's messages).
fn hostile_pair(perms: u32) -> (End2, Connection, PeerFd, HandMade) {
    hostile_pair_with(end(), perms)
}

/// [`hostile_pair`] for the context `a`.
fn hostile_pair_with(a: End2, perms: u32) -> (End2, Connection, PeerFd, HandMade) {
    let h = HandMade::new();
    let (da, ca) = a.rdma.export().unwrap();
    a.rdma.connect(&h.desc(perms), ca).unwrap();
    let sock = h.dial(&da, &[]);
    for _ in 0..100 {
        a.pe.progress();
    }
    let until = Instant::now() + Duration::from_secs(5);
    while h.inbox.lock().unwrap().is_none() {
        assert!(Instant::now() < until);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(a.rdma.connection_state(ca).unwrap(), ConnState::Connected);
    (a, ca, sock, h)
}

/// Whether the engine's handle is readable at once after request_notification, `n` times
/// in a row (a sleeping application would spin).
fn spins(pe: &Pe, n: usize) -> usize {
    let mut ready = 0;
    for _ in 0..n {
        pe.request_notification().unwrap();
        let h = pe.notification_handle();
        let mut fds = [rustix::event::PollFd::new(&h, rustix::event::PollFlags::IN)];
        let r =
            rustix::event::poll(&mut fds, Some(&rustix::event::Timespec { tv_sec: 0, tv_nsec: 50_000_000 }))
                .unwrap();
        if r == 1 {
            ready += 1;
        }
        pe.clear_notification().unwrap();
        for _ in 0..10 {
            pe.progress();
        }
    }
    ready
}

/// The peer closes the end of the socket this side opened and keeps its own open: the
/// connection waits for the other end a while (across the link the two ends come apart),
/// without spinning, then is over; its send fails instead of waiting for ever.
#[test]
fn a_peer_that_closes_one_socket_ends_its_connection_after_a_while() {
    let (a, ca, _sock, h) = hostile_pair(1);
    drop(h.inbox.lock().unwrap().take());
    let src = a.inv.buf_get_at(&a.map, 0, 64).unwrap();
    src.append(b"hello").unwrap();
    a.rdma.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    for _ in 0..100 {
        a.pe.progress();
    }
    assert!(spins(&a.pe, 6) <= 2, "an application asleep on the handle spins while the connection waits");
    let until = Instant::now() + HALF_CLOSE_WAIT + Duration::from_secs(5);
    while a.sent.borrow().is_empty() {
        assert!(Instant::now() < until, "the send never completed ({:?})", a.rdma.connection_state(ca));
        a.pe.progress();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(*a.sent.borrow(), [Err(Error::ConnectionReset)]);
    // The context failed with it (a task waited on the connection: DOCA's error rule).
    assert_ne!(a.rdma.connection_state(ca), Ok(ConnState::Connected));
}

/// The wait for the other socket's end runs on the engine's clock, as every deadline of a
/// connection does: with the engine's clock an hour ahead of the real one, the connection
/// still waits after the real clock moved on, and ends once the engine's clock passes the
/// wait (a deadline set by the real clock would have passed at once).
#[test]
fn a_half_closed_connection_waits_on_the_engine_s_clock() {
    let clock = std::rc::Rc::new(doca_core::clock::ManualClock::new());
    clock.advance(Duration::from_secs(3600));
    let a = end_with(
        open_device_with_pci("03:00.0", None).unwrap(),
        Pe::create_with_clock(clock.clone()).unwrap(),
    );
    let (a, ca, _sock, h) = hostile_pair_with(a, 1);
    // The peer's dial reaches this side through its service thread: given time to arrive
    // (its socket is what the connection then waits on).
    let real = Instant::now();
    while real.elapsed() < Duration::from_millis(300) {
        a.pe.progress();
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(h.inbox.lock().unwrap().take());
    let real = Instant::now();
    while real.elapsed() < Duration::from_millis(400) {
        a.pe.progress();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(a.rdma.connection_state(ca), Ok(ConnState::Connected), "ended by the real clock");
    clock.advance(HALF_CLOSE_WAIT + Duration::from_millis(1));
    let until = Instant::now() + Duration::from_secs(5);
    while a.rdma.connection_state(ca) == Ok(ConnState::Connected) {
        assert!(Instant::now() < until, "the wait never ended on the engine's clock");
        a.pe.progress();
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(a.rdma.connection_state(ca), Ok(ConnState::Error), "the peer vanished without a goodbye");
}

/// The peer takes a message out of the ring and answers with a refusal whose code is 0
/// (success): the send fails with `UNEXPECTED`, never with an error status of `SUCCESS`.
#[test]
fn a_refusal_with_a_success_code_fails_the_send_as_unexpected() {
    let (a, ca, _sock, h) = hostile_pair(1);
    let (rx, tx, _peer) = rings_of(&h);
    let src = a.inv.buf_get_at(&a.map, 0, 64).unwrap();
    src.append(b"hello").unwrap();
    a.rdma.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    take_one(&a, &rx);
    let nak = Hdr { kind: Kind::Nak, flags: 0, seq: 0, imm: 0, len: 0 }.encode();
    assert!(tx.push_with(Kind::Nak as u32, HDR_LEN, |b| b.copy_from_slice(&nak)).unwrap());
    let until = Instant::now() + Duration::from_secs(5);
    while a.sent.borrow().is_empty() {
        assert!(Instant::now() < until, "no completion");
        a.pe.progress();
    }
    assert_eq!(*a.sent.borrow(), [Err(Error::Unexpected)]);
}

/// The peer takes a send out of the ring and never answers: after `rdma.ack_timeout_ms` the
/// send fails with `TIME_OUT` (as a queue pair's retries run out), instead of waiting for ever.
#[test]
fn a_message_the_peer_never_answers_fails_with_time_out() {
    let topo = doca_core::Topology::parse(
        "t",
        "device 03:00.0 dpu\nrep b1:00.0 pf\ndevice b1:00.0 host\ncap rdma.ack_timeout_ms 200\n",
    )
    .unwrap();
    let dev = topo
        .devinfo_list()
        .unwrap()
        .into_iter()
        .find(|i| i.is_equal_pci_addr("03:00.0") == Ok(true))
        .unwrap()
        .open()
        .unwrap();
    let (a, ca, _sock, h) = hostile_pair_with(end_on(dev), 1);
    let (rx, _tx, _peer) = rings_of(&h);
    let src = a.inv.buf_get_at(&a.map, 0, 64).unwrap();
    src.append(b"hello").unwrap();
    a.rdma.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    take_one(&a, &rx);
    let sent_at = Instant::now();
    // Asleep on the handle: the timer wakes the engine when the answer is late.
    while a.sent.borrow().is_empty() {
        assert!(sent_at.elapsed() < Duration::from_secs(10), "the send never failed");
        a.pe.request_notification().unwrap();
        let h = a.pe.notification_handle();
        let mut fds = [rustix::event::PollFd::new(&h, rustix::event::PollFlags::IN)];
        let _ = rustix::event::poll(&mut fds, Some(&rustix::event::Timespec { tv_sec: 1, tv_nsec: 0 }));
        a.pe.clear_notification().unwrap();
        a.pe.progress();
    }
    assert_eq!(*a.sent.borrow(), [Err(Error::TimeOut)]);
    assert!(sent_at.elapsed() >= Duration::from_millis(150), "not before its time");
}

/// The peer takes a send out of the ring and never answers (stopped, or hostile): a write
/// queued behind the send waits for the answer, and an application asleep on the handle
/// sleeps meanwhile instead of spinning.
#[test]
fn a_write_behind_an_unanswered_send_lets_the_application_sleep() {
    let (a, ca, _sock, h) = hostile_pair(1 | 2 | 4 | 8);
    let (rx, _tx, _peer) = rings_of(&h);
    // An export of this process's own memory stands for the peer's.
    let exported = Mmap::create().unwrap();
    exported.set_memrange(vec![0u8; 4096]).unwrap();
    exported.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::RDMA_WRITE).unwrap();
    exported.add_dev(&a.dev).unwrap();
    exported.start().unwrap();
    let blob = exported.export_rdma(&a.dev).unwrap();
    let remote = Mmap::create_from_export(None, &blob, &a.dev).unwrap();
    let (base, _) = remote.memrange().unwrap();
    let dst = a.inv.buf_get_by_addr(&remote, base, 64).unwrap();
    let src = a.inv.buf_get_at(&a.map, 0, 64).unwrap();
    src.append(b"hello").unwrap();
    let wsrc = a.inv.buf_get_at(&a.map, 4096, 64).unwrap();
    wsrc.append(b"world").unwrap();
    a.rdma.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    a.rdma.task_write_alloc_init(ca, Some(&wsrc), Some(&dst), Data::NONE).unwrap().submit().unwrap();
    take_one(&a, &rx);
    for _ in 0..100 {
        a.pe.progress();
    }
    assert!(spins(&a.pe, 6) <= 2, "the engine never sleeps while the write waits for the send's answer");
    assert!(a.sent.borrow().is_empty() && a.wrote.borrow().is_empty(), "both wait for the answer");
}

/// The rings this side offered the peer, as the peer attaches them (messages in, answers
/// out), and the peer's end of the socket that carried them (kept open: its end would end
/// the connection).
fn rings_of(h: &HandMade) -> (Ring, Ring, PeerFd) {
    let peer = h.inbox.lock().unwrap().take().unwrap();
    let mut buf = [0u8; 64];
    let until = Instant::now() + Duration::from_secs(5);
    let fds = loop {
        match doca_link::recv(peer.as_fd(), &mut buf).unwrap() {
            Recv::Packet { fds, .. } => break fds,
            _ => {
                assert!(Instant::now() < until, "no rings offered");
                std::thread::sleep(Duration::from_millis(1))
            }
        }
    };
    let area = Area::open(fds.into_iter().next().unwrap(), AREA_LEN).unwrap();
    let rx = Ring::attach(&area, 0, MSG_SLOTS, MSG_RECORD, End::Consumer).unwrap();
    let tx = Ring::attach(&area, ACK_AT, ACK_SLOTS, HDR_LEN, End::Producer).unwrap();
    (rx, tx, peer)
}

/// Progresses `a` until a message is in the peer's ring, and takes it out unanswered.
fn take_one(a: &End2, rx: &Ring) {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        a.pe.progress();
        if let Some(s) = rx.peek() {
            s.consume();
            return;
        }
        assert!(Instant::now() < until, "no message in the ring");
    }
}

/// A peer flooding the socket it opened with messages out of sequence (each read and
/// dropped): one `progress` reads at most `SOCKET_PACKETS_PER_PASS` of them, so the flood
/// does not hold the pass; the next passes read the rest.
#[test]
fn one_progress_reads_a_bounded_share_of_a_flooding_peer_s_packets() {
    use std::os::fd::AsRawFd;
    let (a, _ca, sock, _h) = hostile_pair(1);
    let fd = sock.as_fd().as_raw_fd();
    // Room for the whole flood in the peer's send queue (root may force it).
    let big: libc::c_int = 16 << 20;
    // SAFETY: a valid socket and a c_int option value of the right size.
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            (&big as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    let unread = || {
        let mut n: libc::c_int = 0;
        // SAFETY: SIOCOUTQ (the same number as TIOCOUTQ) writes one c_int: the bytes not yet read.
        assert_eq!(unsafe { libc::ioctl(fd, libc::TIOCOUTQ, &mut n) }, 0);
        n
    };
    let stray = Hdr { kind: Kind::Send, flags: 0, seq: 1000, imm: 0, len: 0 }.encode();
    let mut sent = 0;
    while sent < 4 * SOCKET_PACKETS_PER_PASS && doca_link::send(sock.as_fd(), &stray, &[]).is_ok() {
        sent += 1;
    }
    if sent <= SOCKET_PACKETS_PER_PASS {
        eprintln!("skipped: the socket took only {sent} packets (no room to force: not root?)");
        return;
    }
    let before = unread();
    // The first pass that reads the socket (on a loaded machine a pass may come before the
    // socket's readiness is seen: those read nothing).
    let until = Instant::now() + Duration::from_secs(10);
    let mut after = before;
    while after == before && Instant::now() < until {
        a.pe.progress();
        after = unread();
    }
    assert!(
        after > 0 && after < before,
        "one pass read {} of the {before} bytes of {sent} queued packets",
        before - after
    );
    for _ in 0..2 * sent / SOCKET_PACKETS_PER_PASS {
        a.pe.progress();
    }
    assert_eq!(unread(), 0, "the next passes read the rest");
}
