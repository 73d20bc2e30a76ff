//! DOCA RDMA's connection manager: a server listening on a port of the fabric directory, a
//! client connecting to 127.0.0.1 and that port, the state callbacks (request, established,
//! failure, disconnect) from progress, and the ways a connection request fails.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, Data, Error, Pe};
use doca_mmap::{AccessFlags, Mmap};
use doca_rdma::cm::{Addr, AddrType};
use doca_rdma::{ConnState, Connection, Rdma, ReceiveTask, SendTask};
use doca_tests::rdma_hand::HandMade;

/// A private fabric directory (0700) for this test binary.
fn fabric() {
    doca_tests::private_fabric();
}

/// A port of this test process's own (tests of one binary run in parallel; `n` below 16).
fn port(n: u16) -> u16 {
    20000 + (std::process::id() % 2000) as u16 * 16 + n
}

#[derive(Clone, Debug, PartialEq)]
enum Ev {
    Request(Connection),
    Established(Connection, u64),
    Failure(Connection, u64),
    Disconnect(Connection, u64),
    Recv(Result<(), Error>, Vec<u8>, Option<Connection>),
    Sent(Result<(), Error>),
    AcceptFailed(Error),
}

type Log = Rc<RefCell<Vec<Ev>>>;

/// A running context whose callbacks log, and which accepts every request (`accept`) or
/// rejects it from its request callback.
fn side(pe: &Pe, max_conns: u16, accept: bool) -> (Rc<Rdma>, Log) {
    side_with(pe, max_conns, accept, None)
}

/// [`side`] with its connection request timeout (ms) set.
fn side_with(pe: &Pe, max_conns: u16, accept: bool, request_timeout: Option<u16>) -> (Rc<Rdma>, Log) {
    fabric();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rdma = Rc::new(Rdma::create(&dev).unwrap());
    rdma.set_max_num_connections(max_conns).unwrap();
    if let Some(ms) = request_timeout {
        rdma.set_connection_request_timeout(ms).unwrap();
    }
    let log: Log = Rc::default();
    let me: Weak<Rdma> = Rc::downgrade(&rdma);
    let (l1, l2, l3, l4) = (log.clone(), log.clone(), log.clone(), log.clone());
    rdma.set_connection_state_callbacks(
        move |c, _ctx| {
            l1.borrow_mut().push(Ev::Request(c));
            let r = me.upgrade().unwrap();
            if accept {
                match r.connection_accept(c, b"welcome") {
                    Ok(()) => r.connection_set_user_data(c, Data::from_u64(7)).unwrap(),
                    Err(e) => l1.borrow_mut().push(Ev::AcceptFailed(e)),
                }
            } else {
                r.connection_reject(c).unwrap();
            }
        },
        move |c, d, _| l2.borrow_mut().push(Ev::Established(c, d.as_u64())),
        move |c, d, _| l3.borrow_mut().push(Ev::Failure(c, d.as_u64())),
        move |c, d, _| l4.borrow_mut().push(Ev::Disconnect(c, d.as_u64())),
    )
    .unwrap();
    let (a, b) = (log.clone(), log.clone());
    rdma.task_send_set_conf(
        move |_t: SendTask, _, _| a.borrow_mut().push(Ev::Sent(Ok(()))),
        move |t: SendTask, _, _| b.borrow_mut().push(Ev::Sent(t.status())),
        4,
    )
    .unwrap();
    let (a, b) = (log.clone(), log.clone());
    rdma.task_receive_set_conf(
        move |t: ReceiveTask, _, _| {
            let bytes = t.dst().map(|b| b.data_to_vec().unwrap()).unwrap_or_default();
            a.borrow_mut().push(Ev::Recv(Ok(()), bytes, t.result_connection()))
        },
        move |t: ReceiveTask, _, _| b.borrow_mut().push(Ev::Recv(t.status(), Vec::new(), None)),
        4,
    )
    .unwrap();
    pe.connect_ctx(&rdma.as_ctx()).unwrap();
    rdma.as_ctx().start().unwrap();
    (rdma, log)
}

/// Progresses until `done` holds (bounded).
fn until(pe: &Pe, what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..100_000 {
        if done() {
            return;
        }
        doca_tests::idle(pe);
    }
    panic!("{what}: not reached");
}

fn local() -> Addr {
    Addr::create(AddrType::Ipv4, "127.0.0.1", 0).unwrap()
}

fn at(port: u16) -> Addr {
    Addr::create(AddrType::Ipv4, "127.0.0.1", port).unwrap()
}

#[test]
fn a_client_connects_by_address_sends_and_disconnects() {
    let pe = Pe::create().unwrap();
    let (server, slog) = side(&pe, 2, true);
    let (client, clog) = side(&pe, 1, true);
    let p = port(0);
    server.start_listen_to_port(p).unwrap();
    assert_eq!(
        server.start_listen_to_port(p).err(),
        Some(Error::InvalidValue),
        "twice on one port (of this context)"
    );
    assert_eq!(local().port(), 0);
    client.connect_to_addr(&at(p), Data::from_u64(42)).unwrap();
    assert!(slog.borrow().is_empty() && clog.borrow().is_empty(), "callbacks only from progress");
    until(&pe, "established on both sides", || {
        slog.borrow().iter().any(|e| matches!(e, Ev::Established(..)))
            && clog.borrow().iter().any(|e| matches!(e, Ev::Established(..)))
    });
    let sc = match slog.borrow()[0] {
        Ev::Request(c) => c,
        ref e => panic!("first server event {e:?}"),
    };
    assert_eq!(slog.borrow()[1], Ev::Established(sc, 7), "the user data set in the request callback");
    let cc = match clog.borrow()[0] {
        Ev::Established(c, 42) => c,
        ref e => panic!("first client event {e:?}"),
    };
    assert_eq!(server.connection_state(sc), Ok(ConnState::Connected));
    assert_eq!(
        server.connection_accept(sc, &[]).err(),
        Some(Error::InvalidValue),
        "accepted already: not a request"
    );

    // A message from the client lands in the server's receive, naming the connection.
    let dev = server.dev().clone();
    let mem = Mmap::create().unwrap();
    mem.set_memrange(vec![0u8; 8192]).unwrap();
    mem.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    mem.add_dev(&dev).unwrap();
    mem.start().unwrap();
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    let room = inv.buf_get_at(&mem, 0, 4096).unwrap();
    server.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
    let msg = inv.buf_get_at(&mem, 4096, 4096).unwrap();
    msg.append(b"over the connection manager").unwrap();
    client.task_send_alloc_init(cc, Some(&msg), Data::NONE).unwrap().submit().unwrap();
    until(&pe, "the message", || slog.borrow().iter().any(|e| matches!(e, Ev::Recv(..))));
    assert!(slog.borrow().contains(&Ev::Recv(Ok(()), b"over the connection manager".to_vec(), Some(sc))));
    until(&pe, "the send's completion", || clog.borrow().contains(&Ev::Sent(Ok(()))));

    // The client disconnects: the server hears of it; a second disconnect is no error.
    client.connection_disconnect(cc).unwrap();
    client.connection_disconnect(cc).unwrap();
    until(&pe, "the server's disconnect callback", || slog.borrow().contains(&Ev::Disconnect(sc, 7)));
    server.connection_disconnect(sc).unwrap();
    assert_eq!(server.connection_state(sc), Ok(ConnState::Disconnected));
    assert!(
        !clog.borrow().iter().any(|e| matches!(e, Ev::Disconnect(..) | Ev::Failure(..))),
        "{:?}",
        clog.borrow()
    );
    server.stop_listen_to_port(p).unwrap();
    assert_eq!(
        server.stop_listen_to_port(p).err(),
        Some(Error::InvalidValue),
        "not listening there any more"
    );
}

#[test]
fn requests_fail_without_a_listener_on_a_rejection_and_off_this_machine() {
    let pe = Pe::create().unwrap();
    let (server, slog) = side(&pe, 1, false);
    let (client, clog) = side(&pe, 4, true);

    // Nobody listens on the port.
    client.connect_to_addr(&at(port(1)), Data::from_u64(1)).unwrap();
    until(&pe, "failure (no listener)", || clog.borrow().iter().any(|e| matches!(e, Ev::Failure(_, 1))));

    // The server rejects: the client's failure callback, and nothing stays on the server.
    server.start_listen_to_port(port(2)).unwrap();
    client.connect_to_addr(&at(port(2)), Data::from_u64(2)).unwrap();
    until(&pe, "failure (rejected)", || clog.borrow().iter().any(|e| matches!(e, Ev::Failure(_, 2))));
    assert!(matches!(slog.borrow()[..], [Ev::Request(_)]), "{:?}", slog.borrow());

    // An address that is not this machine's (TEST-NET-1): no route.
    let far = Addr::create(AddrType::Ipv4, "192.0.2.1", port(2)).unwrap();
    assert!(!far.is_local());
    client.connect_to_addr(&far, Data::from_u64(3)).unwrap();
    until(&pe, "failure (not local)", || clog.borrow().iter().any(|e| matches!(e, Ev::Failure(_, 3))));
    let failed: Vec<Connection> = clog
        .borrow()
        .iter()
        .filter_map(|e| if let Ev::Failure(c, _) = e { Some(*c) } else { None })
        .collect();
    for c in failed {
        assert_eq!(client.connection_state(c), Ok(ConnState::Error));
    }
    assert!(!clog.borrow().iter().any(|e| matches!(e, Ev::Established(..))));
}

#[test]
fn addresses_are_parsed_by_type_and_listening_ports_are_exclusive() {
    assert_eq!(Addr::create(AddrType::Ipv4, "::1", 1).err(), Some(Error::InvalidValue));
    assert_eq!(Addr::create(AddrType::Ipv4, "300.1.1.1", 1).err(), Some(Error::InvalidValue));
    assert_eq!(Addr::create(AddrType::Ipv6, "127.0.0.1", 1).err(), Some(Error::InvalidValue));
    assert!(Addr::create(AddrType::Ipv6, "::1", 1).unwrap().is_local());
    let gid = Addr::create(AddrType::Gid, "0000:0000:0000:0000:0000:ffff:7f00:0001", 1).unwrap();
    assert!(gid.is_local(), "an IPv4-mapped GID of 127.0.0.1");
    assert_eq!(AddrType::from_raw(3).err(), Some(Error::InvalidValue));

    let pe = Pe::create().unwrap();
    let (a, _) = side(&pe, 1, true);
    let (b, _) = side(&pe, 1, true);
    a.start_listen_to_port(port(3)).unwrap();
    assert_eq!(b.start_listen_to_port(port(3)).err(), Some(Error::InUse), "another context's port");
    // Without state callbacks the connection manager is refused.
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let bare = Rdma::create(&dev).unwrap();
    pe.connect_ctx(&bare.as_ctx()).unwrap();
    bare.as_ctx().start().unwrap();
    assert_eq!(bare.start_listen_to_port(port(4)).err(), Some(Error::BadState));
    assert_eq!(bare.connect_to_addr(&at(port(3)), Data::NONE).err(), Some(Error::BadState));
}

#[test]
fn remote_sync_event_tasks_get_set_and_add_the_peers_event() {
    use doca_rdma::{RemoteNetGetTask, RemoteNetNotifyAddTask, RemoteNetNotifySetTask};
    use doca_sync_event::{RemoteNet, SyncEvent};
    fabric();
    let pe = Pe::create().unwrap();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    // The event's owner: a context granting read and write (not atomics).
    let (server, slog) = {
        fabric();
        let rdma = Rc::new(Rdma::create(&dev).unwrap());
        rdma.set_permissions(2 | 4).unwrap();
        let log: Log = Rc::default();
        let me: Weak<Rdma> = Rc::downgrade(&rdma);
        let l2 = log.clone();
        rdma.set_connection_state_callbacks(
            move |c, _| me.upgrade().unwrap().connection_accept(c, &[]).unwrap(),
            move |c, d, _| l2.borrow_mut().push(Ev::Established(c, d.as_u64())),
            |_, _, _| {},
            |_, _, _| {},
        )
        .unwrap();
        pe.connect_ctx(&rdma.as_ctx()).unwrap();
        rdma.as_ctx().start().unwrap();
        (rdma, log)
    };
    let se = SyncEvent::create().unwrap();
    se.add_publisher_location(doca_sync_event::Location::RemoteNet).unwrap();
    se.start().unwrap();
    se.update_set(5).unwrap();
    let blob = se.export_to_remote_net().unwrap();
    assert_eq!(
        SyncEvent::create_from_export(&dev, &blob).err(),
        Some(Error::InvalidValue),
        "not a PCI export"
    );

    let (client, clog) = side(&pe, 1, true);
    type Done = Rc<RefCell<Vec<(&'static str, Result<(), Error>)>>>;
    let done: Done = Rc::default();
    macro_rules! conf {
        ($set:ident, $t:ty, $name:literal) => {{
            let (a, b) = (done.clone(), done.clone());
            client.$set(
                move |_t: $t, _, _| a.borrow_mut().push(($name, Ok(()))),
                move |t: $t, _, _| b.borrow_mut().push(($name, t.status())),
                2,
            )
        }};
    }
    // Task configuration is Idle-only: stop, configure, start again.
    client.as_ctx().stop().unwrap();
    until(&pe, "client idle", || client.as_ctx().state() == doca_core::CtxState::Idle);
    conf!(task_remote_net_sync_event_get_set_conf, RemoteNetGetTask, "get").unwrap();
    conf!(task_remote_net_sync_event_notify_set_set_conf, RemoteNetNotifySetTask, "set").unwrap();
    conf!(task_remote_net_sync_event_notify_add_set_conf, RemoteNetNotifyAddTask, "add").unwrap();
    client.as_ctx().start().unwrap();

    server.start_listen_to_port(port(5)).unwrap();
    client.connect_to_addr(&at(port(5)), Data::NONE).unwrap();
    until(&pe, "established", || {
        !slog.borrow().is_empty() && clog.borrow().iter().any(|e| matches!(e, Ev::Established(..)))
    });
    let cc = match clog.borrow().iter().find(|e| matches!(e, Ev::Established(..))) {
        Some(Ev::Established(c, _)) => *c,
        _ => unreachable!(),
    };
    let remote = RemoteNet::create_from_export(&dev, &blob).unwrap();
    assert_eq!(RemoteNet::create_from_export(&dev, &blob[..40]).err(), Some(Error::InvalidValue));

    let mem = Mmap::create().unwrap();
    mem.set_memrange(vec![0u8; 4096]).unwrap();
    mem.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    mem.add_dev(&dev).unwrap();
    mem.start().unwrap();
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();

    // Get: the value, 8 bytes in host order.
    let dst = inv.buf_get_at(&mem, 0, 64).unwrap();
    let t =
        client.task_remote_net_sync_event_get_alloc_init(cc, Some(&remote), Some(&dst), Data::NONE).unwrap();
    t.submit().unwrap();
    until(&pe, "get", || done.borrow().len() == 1);
    assert_eq!(done.borrow_mut().pop(), Some(("get", Ok(()))));
    assert_eq!(dst.data_to_vec().unwrap(), 5u64.to_ne_bytes());

    // Set: the owner sees the value.
    let src = inv.buf_get_at(&mem, 64, 64).unwrap();
    src.append(&0xd0cau64.to_ne_bytes()).unwrap();
    let t = client
        .task_remote_net_sync_event_notify_set_alloc_init(cc, Some(&remote), Some(&src), Data::NONE)
        .unwrap();
    t.submit().unwrap();
    until(&pe, "set", || done.borrow().len() == 1);
    assert_eq!(done.borrow_mut().pop(), Some(("set", Ok(()))));
    assert_eq!(se.get(), Ok(0xd0ca));

    // Add needs RDMA_ATOMIC, which the owner's context does not grant: the task fails with
    // NOT_PERMITTED and the value stays.
    let res = inv.buf_get_at(&mem, 128, 64).unwrap();
    let t = client
        .task_remote_net_sync_event_notify_add_alloc_init(cc, Some(&remote), Some(&res), 1, Data::NONE)
        .unwrap();
    t.submit().unwrap();
    until(&pe, "add", || done.borrow().len() == 1);
    assert_eq!(done.borrow_mut().pop(), Some(("add", Err(Error::NotPermitted))));
    assert_eq!(se.get(), Ok(0xd0ca));
}

/// A hostile local process on a listening port: junk, a forged request naming nobody's
/// offer, or silence. Each is closed (logged) and the server goes on serving real clients.
#[test]
fn junk_on_a_listening_port_is_closed_and_real_clients_still_connect() {
    let pe = Pe::create().unwrap();
    let (server, slog) = side(&pe, 4, true);
    let (client, clog) = side(&pe, 1, true);
    let p = port(6);
    server.start_listen_to_port(p).unwrap();
    let junk = doca_link::connect_port(doca_rdma::cm::PORT_NS, p).unwrap().unwrap();
    doca_link::send(std::os::fd::AsFd::as_fd(&junk), b"not a request at all", &[]).unwrap();
    let forged = doca_rdma::wire::CmMsg::Request(doca_rdma::wire::Desc {
        transport: 0,
        mtu: 1024,
        grh: false,
        service: doca_link::rendezvous::ServiceName { pid: 1, nonce: 2 },
        token: [7; 16],
        perms: 0,
        gid_index: 0,
        max_msg: 64,
        conn_id: 0,
    })
    .encode();
    let forger = doca_link::connect_port(doca_rdma::cm::PORT_NS, p).unwrap().unwrap();
    doca_link::send(std::os::fd::AsFd::as_fd(&forger), &forged, &[]).unwrap();
    let _silent = doca_link::connect_port(doca_rdma::cm::PORT_NS, p).unwrap().unwrap();
    // The junk is closed at once.
    until(&pe, "the junk closed", || {
        let mut buf = [0u8; 8];
        matches!(doca_link::recv(std::os::fd::AsFd::as_fd(&junk), &mut buf), Ok(doca_link::Recv::Closed))
    });
    // The forged request reaches the request callback; accepting it cannot reach the
    // forged offer: CONNECTION_ABORTED, and that connection is over.
    until(&pe, "the forged request", || slog.borrow().contains(&Ev::AcceptFailed(Error::ConnectionAborted)));
    client.connect_to_addr(&at(p), Data::from_u64(9)).unwrap();
    until(&pe, "the real client", || clog.borrow().iter().any(|e| matches!(e, Ev::Established(_, 9))));
    until(&pe, "the server's side", || slog.borrow().iter().any(|e| matches!(e, Ev::Established(..))));
    drop(forger);
}

/// A client whose failure callback tries again at another address (the usual retry), and
/// whose established callback panics the first time: the retry is accepted from inside the
/// callback, and the panic loses neither the callbacks nor the events after it.
#[test]
fn a_callback_may_connect_again_and_a_panicking_one_keeps_the_callbacks() {
    let pe = Pe::create().unwrap();
    let (server, slog) = side(&pe, 2, true);
    server.start_listen_to_port(port(7)).unwrap();
    fabric();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let client = Rc::new(Rdma::create(&dev).unwrap());
    client.set_max_num_connections(4).unwrap();
    let log: Log = Rc::default();
    let me: Weak<Rdma> = Rc::downgrade(&client);
    let retried: Rc<RefCell<Option<Result<(), Error>>>> = Rc::default();
    let (l2, l3, l4, r) = (log.clone(), log.clone(), log.clone(), retried.clone());
    client
        .set_connection_state_callbacks(
            |_, _| {},
            move |c, d, _| {
                let first = !l2.borrow().iter().any(|e| matches!(e, Ev::Established(..)));
                l2.borrow_mut().push(Ev::Established(c, d.as_u64()));
                assert!(!first, "the application's established callback fails the first time");
            },
            move |c, d, _| {
                l3.borrow_mut().push(Ev::Failure(c, d.as_u64()));
                if r.borrow().is_none() {
                    let again = me.upgrade().unwrap().connect_to_addr(&at(port(7)), Data::from_u64(2));
                    *r.borrow_mut() = Some(again);
                }
            },
            move |c, d, _| l4.borrow_mut().push(Ev::Disconnect(c, d.as_u64())),
        )
        .unwrap();
    pe.connect_ctx(&client.as_ctx()).unwrap();
    client.as_ctx().start().unwrap();

    // Nobody listens on port(1) (nor in the test that tries it): the failure callback retries
    // at port(7).
    client.connect_to_addr(&at(port(1)), Data::from_u64(1)).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        until(&pe, "established", || {
            matches!(*retried.borrow(), Some(Err(_)))
                || log.borrow().iter().any(|e| matches!(e, Ev::Established(..)))
        })
    }));
    assert_eq!(*retried.borrow(), Some(Ok(())), "connect_to_addr from the failure callback");
    assert!(caught.is_err(), "the established callback panicked through progress");
    let established: Connection = match log.borrow().last() {
        Some(&Ev::Established(c, 2)) => c,
        other => panic!("the retried connection, established: {other:?}"),
    };
    // The server ends the connection: the client's disconnect callback still runs.
    let sconn =
        slog.borrow().iter().find_map(|e| if let Ev::Request(c) = e { Some(*c) } else { None }).unwrap();
    until(&pe, "server side established", || slog.borrow().iter().any(|e| matches!(e, Ev::Established(..))));
    server.connection_disconnect(sconn).unwrap();
    until(&pe, "disconnect", || log.borrow().iter().any(|e| matches!(e, Ev::Disconnect(..))));
    assert!(matches!(log.borrow().last(), Some(&Ev::Disconnect(c, 2)) if c == established));
}

/// A server (connection request timeout 300 ms) that accepted the request of a hand-made
/// client on `port(n)` which never connects back (hostile, or hung); what the client holds
/// (its offer, its socket to the port) stays open.
struct Silent {
    pe: Pe,
    server: Rc<Rdma>,
    slog: Log,
    conn: Connection,
    accepted: std::time::Instant,
    _client: (HandMade, std::os::fd::OwnedFd),
}

fn silent_client(n: u16) -> Silent {
    silent_client_on(n, Pe::create().unwrap())
}

/// [`silent_client`] on engine `pe`.
fn silent_client_on(n: u16, pe: Pe) -> Silent {
    let (server, slog) = side_with(&pe, 2, true, Some(300));
    let p = port(n);
    server.start_listen_to_port(p).unwrap();
    let peer = HandMade::new();
    let request =
        doca_rdma::wire::CmMsg::Request(doca_rdma::wire::Desc::parse(&peer.desc(0)).unwrap()).encode();
    let sock = doca_link::connect_port(doca_rdma::cm::PORT_NS, p).unwrap().unwrap();
    doca_link::send(std::os::fd::AsFd::as_fd(&sock), &request, &[]).unwrap();
    until(&pe, "the request", || slog.borrow().iter().any(|e| matches!(e, Ev::Request(_))));
    let accepted = std::time::Instant::now();
    assert!(!slog.borrow().iter().any(|e| matches!(e, Ev::AcceptFailed(_))), "{:?}", slog.borrow());
    let conn =
        slog.borrow().iter().find_map(|e| if let Ev::Request(c) = e { Some(*c) } else { None }).unwrap();
    Silent { pe, server, slog, conn, accepted, _client: (peer, sock) }
}

/// An accepted client that never connects back: the server's connection fails (failure
/// callback) after its connection request timeout, instead of holding one of its
/// connections for ever.
#[test]
fn an_accepted_client_that_never_connects_back_reports_a_failure() {
    let s = silent_client(10);
    until(&s.pe, "the failure", || s.slog.borrow().iter().any(|e| matches!(e, Ev::Failure(..))));
    assert!(s.accepted.elapsed() >= std::time::Duration::from_millis(250), "not before its time");
    assert_eq!(s.server.connection_state(s.conn), Ok(ConnState::Error));
    assert_eq!(s.server.as_ctx().state(), doca_core::CtxState::Running);
}

/// The establishment deadline runs on the engine's clock (a test's manual clock here): no
/// failure while that clock stands still, however long the real wait; the failure once it has
/// passed the request timeout.
#[test]
fn an_accepted_client_s_deadline_runs_on_the_engine_s_clock() {
    let clock = std::rc::Rc::new(doca_core::clock::ManualClock::new());
    // An hour ahead of the real clock: a deadline set by the real one would have passed.
    clock.advance(std::time::Duration::from_secs(3600));
    let s = silent_client_on(12, Pe::create_with_clock(clock.clone()).unwrap());
    let failed = |s: &Silent| s.slog.borrow().iter().any(|e| matches!(e, Ev::Failure(..)));
    let real = std::time::Instant::now();
    while real.elapsed() < std::time::Duration::from_millis(600) {
        doca_tests::idle(&s.pe);
    }
    assert!(!failed(&s), "failed by the real clock: {:?}", s.slog.borrow());
    clock.advance(std::time::Duration::from_millis(400));
    until(&s.pe, "the failure", || failed(&s));
    assert_eq!(s.server.connection_state(s.conn), Ok(ConnState::Error));
}

/// The same with a send submitted on the accepted connection (the server's side is usable
/// once accepted; nobody answers): the send fails with the connection, not left for ever, and
/// a task failing is fatal to the context (the error rule): it stops.
#[test]
fn an_accepted_client_that_never_connects_back_fails_the_tasks_waiting_on_it() {
    let s = silent_client(8);
    let mem = doca_tests::rdma_hand::local_map(s.server.dev(), 4096);
    let inv = Inventory::create(1).unwrap();
    inv.start().unwrap();
    let msg = inv.buf_get_at(&mem, 0, 64).unwrap();
    msg.append(b"anyone?").unwrap();
    s.server.task_send_alloc_init(s.conn, Some(&msg), Data::NONE).unwrap().submit().unwrap();
    until(&s.pe, "the send's completion", || s.slog.borrow().iter().any(|e| matches!(e, Ev::Sent(_))));
    assert!(s.accepted.elapsed() >= std::time::Duration::from_millis(250), "not before its time");
    assert!(s.slog.borrow().contains(&Ev::Sent(Err(Error::ConnectionReset))), "{:?}", s.slog.borrow());
    assert!(!s.slog.borrow().iter().any(|e| matches!(e, Ev::Established(..))));
    assert_ne!(s.server.as_ctx().state(), doca_core::CtxState::Running);
}

/// A failure callback that retries at once, on a port nobody listens on (each retry fails at
/// once): one `progress` calls it once per failure the pass found, never looping on the
/// failures its own retries cause.
#[test]
fn a_failure_callback_retrying_on_a_dead_port_does_not_hold_progress() {
    let pe = Pe::create().unwrap();
    fabric();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let client = Rc::new(Rdma::create(&dev).unwrap());
    client.set_max_num_connections(4).unwrap();
    let me: Weak<Rdma> = Rc::downgrade(&client);
    let failures = Rc::new(std::cell::Cell::new(0u32));
    let f = failures.clone();
    client
        .set_connection_state_callbacks(
            |_, _| {},
            |_, _, _| {},
            move |_, _, _| {
                f.set(f.get() + 1);
                assert!(f.get() < 100, "the failure callback runs on and on inside one progress");
                me.upgrade().unwrap().connect_to_addr(&at(port(1)), Data::NONE).unwrap();
            },
            |_, _, _| {},
        )
        .unwrap();
    pe.connect_ctx(&client.as_ctx()).unwrap();
    client.as_ctx().start().unwrap();
    client.connect_to_addr(&at(port(1)), Data::NONE).unwrap();
    until(&pe, "the first failure", || failures.get() > 0);
    assert_eq!(failures.get(), 1);
    pe.progress();
    assert_eq!(failures.get(), 2, "the retry's failure comes at the next progress");
}

/// A client process asking for twenty connections at once (more than a quarter of the
/// table of sockets waiting for their request): the server reads every request (it rejects
/// them here, so that nothing but the listening port is measured), none is closed unread.
#[test]
fn twenty_requests_of_one_process_at_once_are_all_read() {
    let pe = Pe::create().unwrap();
    let (server, slog) = side(&pe, 32, false);
    let (client, clog) = side(&pe, 32, true);
    let p = port(9);
    server.start_listen_to_port(p).unwrap();
    for i in 0..20 {
        client.connect_to_addr(&at(p), Data::from_u64(i)).unwrap();
    }
    let count = |log: &Log, f: fn(&Ev) -> bool| log.borrow().iter().filter(|e| f(e)).count();
    until(&pe, "twenty answers", || count(&clog, |e| matches!(e, Ev::Failure(..))) == 20);
    assert_eq!(count(&slog, |e| matches!(e, Ev::Request(_))), 20, "{:?}", slog.borrow());
}

/// A client process opening twenty connections at once to one server: every one is
/// established. Each accepted connection reaches the client's ring memory through the
/// client's memory service, twenty requests in a burst; a service whose thread was not
/// scheduled meanwhile found them all in its backlog and refused all but eight (seen in CI:
/// 11 established, 9 failed), until it answered at once a request already there.
#[test]
fn twenty_connections_asked_for_at_once_are_all_established() {
    let pe = Pe::create().unwrap();
    let (server, slog) = side(&pe, 32, true);
    let (client, clog) = side(&pe, 32, true);
    let p = port(11);
    server.start_listen_to_port(p).unwrap();
    for i in 0..20 {
        client.connect_to_addr(&at(p), Data::from_u64(i)).unwrap();
    }
    let count = |log: &Log, ev: fn(&Ev) -> bool| log.borrow().iter().filter(|e| ev(e)).count();
    let established = |e: &Ev| matches!(e, Ev::Established(..));
    let failed = |e: &Ev| matches!(e, Ev::Failure(..));
    until(&pe, "twenty established, or a failure", || {
        let client_done = count(&clog, established) + count(&clog, failed) == 20;
        client_done && (count(&slog, established) == 20 || count(&clog, failed) > 0)
    });
    assert_eq!(count(&clog, established), 20, "client: {:?}", clog.borrow());
    assert_eq!(count(&slog, established), 20, "server: {:?}", slog.borrow());
}
