//! The legacy endpoint API across real processes: many clients, blocking clients, event
//! channels that wake epoll, one-sided disconnection.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use doca_cc::legacy::{Endpoint, InitAttr, MsgFlags, PeerAddr};
use doca_core::{open_device_rep_with_pci, open_device_with_pci, Error, RepFilter};
use doca_tests::Peer;
use rustix::event::epoll;

const EP_PEER: &str = env!("CARGO_BIN_EXE_ep_peer");
const HOSTILE: &str = env!("CARGO_BIN_EXE_hostile");

fn unique(tag: &str) -> String {
    format!("ep-{tag}-{}", std::process::id())
}

fn service(name: &str) -> Endpoint {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "3b:00.0").unwrap();
    let ep = Endpoint::create().unwrap();
    ep.set_device(&dev).unwrap();
    ep.set_device_rep(&rep).unwrap();
    ep.listen(name).unwrap();
    ep
}

/// Receives one message, retrying on AGAIN for a minute.
fn recv(ep: &Endpoint, buf: &mut [u8]) -> (usize, PeerAddr) {
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        match ep.recvfrom(buf, MsgFlags::NONE) {
            Ok(r) => return r,
            Err(e) if e.error == Error::Again && Instant::now() < end => {
                doca_tests::ep_sleep(ep, doca_tests::EpChannel::Recv)
            }
            Err(e) => panic!("recvfrom: {e}"),
        }
    }
}

/// Connects host endpoint `ep` to service `name` and waits (asleep on its receive channel, a
/// minute at most) until the handshake is over: the peer and `update_info`'s answer then.
fn connect_settled(ep: &Endpoint, name: &str) -> (PeerAddr, Result<(), Error>) {
    let peer = ep.connect(name).unwrap();
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        match peer.update_info() {
            Err(Error::ConnectionInProgress) => {
                assert!(Instant::now() < end, "the handshake did not complete");
                doca_tests::ep_sleep(ep, doca_tests::EpChannel::Recv);
            }
            other => return (peer, other),
        }
    }
}

#[test]
fn sixteen_clients_on_one_service_are_each_answered() {
    let name = unique("sixteen");
    let svc = service(&name);
    let mut clients: Vec<Peer> =
        (0..16).map(|i| Peer::spawn(EP_PEER, &["client", &name, &format!("client-{i}")])).collect();
    let mut buf = [0u8; 4080];
    for _ in 0..16 {
        let (n, peer) = recv(&svc, &mut buf);
        let text = String::from_utf8_lossy(&buf[..n]).to_string();
        assert!(text.starts_with("client-"), "{text}");
        svc.sendto(format!("ack {text}").as_bytes(), MsgFlags::NONE, &peer).unwrap();
    }
    svc.update_service_state_info().unwrap();
    assert_eq!(svc.peer_addr_list().unwrap().len(), 16);
    for (i, c) in clients.iter_mut().enumerate() {
        assert_eq!(c.line(), format!("reply ack client-{i}"));
    }
    for p in svc.peer_addr_list().unwrap() {
        p.update_info().unwrap();
        assert_eq!((p.recv_messages(), p.send_messages()), (1, 1), "statistics match what was sent");
    }
    for c in clients {
        assert!(c.finish());
    }
}

/// Endpoints of different message sizes do not connect (DOCA's library drops the connection:
/// "MTU mismatch"): the client's peer address reports `CONNECTION_ABORTED`, and the service,
/// in another process, goes on serving a client of its own size.
#[test]
fn a_client_of_another_message_size_is_refused() {
    let name = unique("mtu");
    let mut server = Peer::spawn(EP_PEER, &["serve", &name]);
    assert_eq!(server.line(), "listening");
    let ep = Endpoint::create().unwrap();
    ep.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
    ep.set_max_msg_size(1024).unwrap();
    let (_, state) = connect_settled(&ep, &name);
    assert_eq!(state, Err(Error::ConnectionAborted), "1024 against the service's 4080");
    let same = Endpoint::create().unwrap();
    same.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
    assert_eq!(connect_settled(&same, &name).1, Ok(()), "a client of the service's size connects");
    server.send("quit");
    assert!(server.finish());
}

#[test]
fn a_blocking_client_waits_for_the_answer() {
    let name = unique("blocking");
    let svc = service(&name);
    let client = Peer::spawn(EP_PEER, &["client", &name, "patient", "--blocking"]);
    let mut buf = [0u8; 64];
    let (n, peer) = recv(&svc, &mut buf);
    assert_eq!(&buf[..n], b"patient");
    // The client is now blocked in recvfrom; answer a little later.
    std::thread::sleep(Duration::from_millis(200));
    svc.sendto(b"worth the wait", MsgFlags::NONE, &peer).unwrap();
    assert_eq!(client.line(), "reply worth the wait");
    assert!(client.finish());
}

#[test]
fn event_channels_wake_epoll_on_receive_and_on_send_room() {
    let name = unique("events");
    let mut server = Peer::spawn(EP_PEER, &["serve", &name]);
    assert_eq!(server.line(), "listening");
    let ep = Endpoint::create().unwrap();
    ep.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
    let (peer, state) = connect_settled(&ep, &name);
    assert_eq!(state, Ok(()));
    // The service learns a client from its first message.
    ep.sendto(b"hello", MsgFlags::NONE, &peer).unwrap();
    server.send("read-later 0");
    assert_eq!(server.line(), "read 1");
    let (send_ch, recv_ch) = ep.get_event_channel().unwrap();
    let app = epoll::create(epoll::CreateFlags::CLOEXEC).unwrap();
    epoll::add(&app, recv_ch, epoll::EventData::new_u64(1), epoll::EventFlags::IN).unwrap();
    epoll::add(&app, send_ch, epoll::EventData::new_u64(2), epoll::EventFlags::IN).unwrap();
    let mut events =
        [epoll::Event { flags: epoll::EventFlags::empty(), data: epoll::EventData::new_u64(0) }; 4];
    let long = rustix::time::Timespec { tv_sec: 60, tv_nsec: 0 };

    // Receive: arm, sleep, wake when the service sends.
    ep.event_handle_arm_recv().unwrap();
    server.send("send-later 200 wake up");
    let n = epoll::wait(&app, &mut events[..], Some(&long)).unwrap();
    assert!(n >= 1 && events[..n].iter().any(|e| e.data.u64() == 1), "woken by the receive channel");
    let mut buf = [0u8; 64];
    let (len, from) = ep.recvfrom(&mut buf, MsgFlags::NONE).unwrap();
    assert_eq!((&buf[..len], from), (&b"wake up"[..], peer.clone()));

    // Send: fill the service's queue, arm, sleep, wake when it reads.
    let mut sent = 0;
    while ep.sendto(b"filler", MsgFlags::NONE, &peer).is_ok() {
        sent += 1;
    }
    assert_eq!(sent, 16, "the service's receive queue holds 16");
    assert_eq!(ep.sendto(b"filler", MsgFlags::NONE, &peer), Err(Error::Again));
    ep.event_handle_arm_send().unwrap();
    server.send("read-later 200");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = epoll::wait(&app, &mut events[..], Some(&long)).unwrap();
        if events[..n].iter().any(|e| e.data.u64() == 2) {
            break;
        }
        assert!(Instant::now() < deadline, "never woken by the send channel");
    }
    assert_eq!(server.line(), "read 16");
    ep.sendto(b"room again", MsgFlags::NONE, &peer).unwrap();
    let _ = ep.get_event_channel().unwrap().0.as_fd();
    assert!(server.finish());
}

#[test]
fn a_disconnected_client_makes_the_service_send_fail_with_connection_reset() {
    let name = unique("reset");
    let svc = service(&name);
    let mut client = Peer::spawn(EP_PEER, &["client", &name, "hello"]);
    let mut buf = [0u8; 64];
    let (_, peer) = recv(&svc, &mut buf);
    svc.sendto(b"welcome", MsgFlags::NONE, &peer).unwrap();
    assert_eq!(client.line(), "reply welcome");
    client.send("disconnect");
    assert_eq!(client.line(), "disconnected");
    assert_eq!(svc.sendto(b"still there?", MsgFlags::NONE, &peer), Err(Error::ConnectionReset));
    assert_eq!(peer.update_info(), Err(Error::ConnectionAborted));
    assert!(client.finish());
}

/// NVIDIA's secure_channel waits only in epoll on the receive event channel; a client that
/// connects must wake it, or the connection never completes.
#[test]
fn a_service_asleep_on_its_receive_channel_accepts_and_serves_clients() {
    let name = unique("asleep");
    let service = Peer::spawn(EP_PEER, &["serve-asleep", &name, "2"]);
    assert_eq!(service.line(), "listening");
    for text in ["first", "second"] {
        let client = Peer::spawn(EP_PEER, &["client", &name, text]);
        assert_eq!(client.line(), format!("reply ack {text}"));
        assert!(client.finish());
    }
    assert_eq!(service.line(), "served 2");
    assert!(service.finish());
}

/// A client of `name` on 3b:00.0 whose handshake completed; `blocking`: a 1.x endpoint
/// whose calls block.
fn connected_client(name: &str, blocking: bool) -> (Endpoint, PeerAddr) {
    let ep = if blocking {
        Endpoint::create_with_attr(&InitAttr { cookie: 0, flags: 0, maxmsgs: 16, msgsize: 4080 }).unwrap()
    } else {
        Endpoint::create().unwrap()
    };
    ep.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
    let (peer, state) = connect_settled(&ep, name);
    state.unwrap();
    (ep, peer)
}

/// Kill trials: a service process killed (SIGKILL: no hang-up written anywhere) is noticed
/// by its client through the connection's socket, on a non-blocking receive and on a send.
#[test]
fn a_killed_service_is_noticed_by_its_client() {
    for trial in 0..4 {
        let name = unique(&format!("kill-svc-{trial}"));
        let service = Peer::spawn(EP_PEER, &["serve", &name]);
        assert_eq!(service.line(), "listening");
        let (ep, peer) = connected_client(&name, false);
        ep.sendto(b"hello", MsgFlags::NONE, &peer).unwrap();
        service.kill();
        let mut buf = [0u8; 64];
        let end = Instant::now() + Duration::from_secs(20);
        let err = loop {
            match ep.recvfrom(&mut buf, MsgFlags::NONE) {
                Err(e) if e.error == Error::Again && Instant::now() < end => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => break e.error,
                Ok(_) => panic!("a message from a service that sent none"),
            }
        };
        assert_eq!(err, Error::ConnectionReset, "trial {trial}: the client noticed the killed service");
        // Said once, as DOCA reports the failure (an application looping on recvfrom, as
        // NVIDIA's secure_channel does, would otherwise spin on it): then nothing to read.
        assert_eq!(
            ep.recvfrom(&mut buf, MsgFlags::NONE).map(|(n, _)| n).map_err(|e| e.error),
            Err(Error::Again)
        );
        assert_eq!(ep.sendto(b"anyone?", MsgFlags::NONE, &peer), Err(Error::ConnectionReset));
        assert_eq!(peer.update_info(), Err(Error::ConnectionAborted));
    }
}

/// A 1.x client blocked in `recvfrom` when its service is killed wakes up with
/// `CONNECTION_RESET` instead of sleeping for ever.
#[test]
fn a_blocked_client_wakes_when_its_service_is_killed() {
    let name = unique("kill-svc-blocked");
    let service = Peer::spawn(EP_PEER, &["serve", &name]);
    assert_eq!(service.line(), "listening");
    let (ep, peer) = connected_client(&name, true);
    ep.sendto(b"hello", MsgFlags::NONE, &peer).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let mut buf = [0u8; 64];
        let _ = tx.send(ep.recvfrom(&mut buf, MsgFlags::NONE).map(|(n, _)| n).map_err(|e| e.error));
    });
    std::thread::sleep(Duration::from_millis(100));
    service.kill();
    let got = rx.recv_timeout(Duration::from_secs(30)).expect("the blocked client never woke up");
    assert_eq!(got, Err(Error::ConnectionReset));
    waiter.join().unwrap();
}

/// CPU time a process used so far (user + system), from `/proc/<pid>/stat`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces): state is the first.
    let rest: Vec<&str> = stat.rsplit_once(')').unwrap().1.split_whitespace().collect();
    let ticks: u64 = rest[11].parse::<u64>().unwrap() + rest[12].parse::<u64>().unwrap();
    let hz = rustix::param::clock_ticks_per_second();
    Duration::from_nanos(ticks * 1_000_000_000 / hz)
}

/// A legacy client process that writes an impossible `tail` into the ring its service reads
/// is dropped and logged; the blocking service neither spins (it sleeps again, using next
/// to no CPU) nor stops serving honest clients.
#[test]
fn a_legacy_client_breaking_its_ring_is_dropped_and_the_blocking_service_sleeps() {
    let name = unique("ring-tail");
    let log = std::env::temp_dir().join(format!("{name}.log"));
    let service = Peer::spawn_logged(EP_PEER, &["serve-blocking", &name], &log);
    assert_eq!(service.line(), "listening");
    let hostile = Peer::spawn(HOSTILE, &["ep-ring-tail", &name]);
    assert_eq!(hostile.line(), "closed", "the service hung up on the hostile client");
    assert!(hostile.finish());
    // The attacker left; the service waits in recvfrom with nobody to serve.
    let window = Duration::from_millis(1500);
    let before = cpu_time(service.pid());
    std::thread::sleep(window);
    let used = cpu_time(service.pid()) - before;
    assert!(used < window / 3, "the blocked service used {used:?} of CPU in {window:?}: it spins");
    let client = Peer::spawn(EP_PEER, &["client", &name, "honest"]);
    assert_eq!(client.line(), "reply ack honest");
    assert!(client.finish());
    assert!(service.finish());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("ring index out of bounds"), "the service logged why: {text}");
}

/// Every handshake place of a service is held by silent sockets of other processes: a
/// legacy client neither fails with `CONNECTION_ABORTED` (busy services are tried again
/// within the connect deadline) nor waits for the silent sockets' Hello deadline.
#[test]
fn a_legacy_client_connects_while_other_processes_hold_every_handshake_place() {
    use doca_cc::proto::handshake::{HELLO_DEADLINE, MAX_HANDSHAKES, MAX_HANDSHAKES_PER_PEER};
    let name = unique("fair");
    let service = Peer::spawn(EP_PEER, &["serve", &name]);
    assert_eq!(service.line(), "listening");
    let each = (MAX_HANDSHAKES_PER_PEER + 8).to_string();
    let mut attackers: Vec<Peer> = (0..MAX_HANDSHAKES / MAX_HANDSHAKES_PER_PEER)
        .map(|_| Peer::spawn(HOSTILE, &["silent", &name, &each, "ep", "8"]))
        .collect();
    for a in &attackers {
        assert_eq!(a.line(), "dropped 8", "each attacker holds its share of the places");
    }
    let t0 = Instant::now();
    let (ep, peer) = connected_client(&name, false);
    let waited = t0.elapsed();
    assert!(waited < HELLO_DEADLINE, "the client waited {waited:?}: as long as the attackers' deadline");
    ep.sendto(b"hello", MsgFlags::NONE, &peer).unwrap();
    for a in attackers.iter_mut() {
        a.send("bye");
    }
    for a in attackers {
        assert!(a.finish());
    }
    drop(service);
}

/// A legacy client answered busy (its own process already has as many handshakes in
/// progress as one process may) keeps trying within its connect deadline, and connects once
/// a place is free: `CONNECTION_INPROGRESS` meanwhile, never `CONNECTION_ABORTED`.
#[test]
fn a_legacy_client_answered_busy_tries_again_until_it_connects() {
    use doca_cc::proto::handshake::MAX_HANDSHAKES_PER_PEER;
    let name = unique("busy");
    let service = Peer::spawn(EP_PEER, &["serve", &name]);
    assert_eq!(service.line(), "listening");
    // This process's own silent sockets take its whole share of handshake places.
    let path = doca_link::service_path("ep", doca_core::PciAddr::parse("3b:00.0").unwrap(), &name).unwrap();
    let silent: Vec<_> = (0..MAX_HANDSHAKES_PER_PEER)
        .map(|_| doca_link::connect(&path).unwrap().expect("listening"))
        .collect();
    // No pause needed: the listen backlog is first in, first out, so the service takes the
    // silent sockets before the client's, however late it looks.
    let ep = Endpoint::create().unwrap();
    ep.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
    let peer = ep.connect(&name).unwrap();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(300) {
        assert_eq!(peer.update_info(), Err(Error::ConnectionInProgress), "busy: still trying");
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(silent);
    let end = Instant::now() + Duration::from_secs(60);
    while peer.update_info() == Err(Error::ConnectionInProgress) {
        assert!(Instant::now() < end);
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(peer.update_info(), Ok(()), "connected once a place was free");
    ep.sendto(b"hello", MsgFlags::NONE, &peer).unwrap();
    drop(service);
}

/// Three legacy client processes stamp every 4080-byte message "sent at time 0" (the stamp
/// rides in each slot, written by the sender) and keep the service's 8192-message rings
/// from them full, while an honest client process does 2,000 echoes one after the other.
/// The service takes messages by arrival per peer and round-robin across peers, so the
/// stamps decide nothing: the honest client gets one turn in four at worst. Liveness bound:
/// its 2,000 echoes come back within 20 s (alone they take under a second; attacked, 0.3 s
/// on the 2-core machine of the fix; with the stamps deciding the order they took 56 s).
#[test]
fn legacy_clients_stamping_time_zero_do_not_starve_an_honest_client() {
    use std::os::unix::fs::DirBuilderExt;
    let name = unique("stamp");
    let dir = std::env::temp_dir().join(format!("{name}-fabric"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    let env = [(doca_link::FABRIC_ENV, dir.to_str().unwrap())];
    let log = |tag: &str| std::env::temp_dir().join(format!("{name}-{tag}.log"));
    let service = Peer::spawn_logged_env(EP_PEER, &["serve-echo", &name], &log("service"), &env);
    assert_eq!(service.line(), "listening");
    let mut attackers: Vec<Peer> = (0..3)
        .map(|i| {
            Peer::spawn_logged_env(HOSTILE, &["ep-stamp-zero", &name], &log(&format!("hostile-{i}")), &env)
        })
        .collect();
    for a in &attackers {
        assert_eq!(a.line(), "flooding");
    }
    let honest = Peer::spawn_logged_env(EP_PEER, &["echoes", &name, "2000"], &log("honest"), &env);
    // Peer::line waits up to 60 s: the liveness bound.
    let done = honest.line();
    eprintln!("honest client: {done}");
    let ms: u64 = done
        .strip_prefix("echoed 2000 in ")
        .and_then(|rest| rest.strip_suffix(" ms"))
        .and_then(|ms| ms.parse().ok())
        .unwrap_or_else(|| panic!("the honest client failed: {done}"));
    assert!(ms < 20_000, "the honest client's echoes took {ms} ms while attacked: starved");
    for a in attackers.iter_mut() {
        a.send("bye");
    }
    for a in attackers {
        let sent = a.line();
        eprintln!("attacker: {sent}");
        assert!(sent.starts_with("sent "), "{sent}");
        assert!(a.finish());
    }
    assert!(honest.finish());
    assert!(service.finish());
    let _ = std::fs::remove_dir_all(&dir);
}
