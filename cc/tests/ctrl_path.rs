//! The control path in one process: a server and a client on two progress engines.

mod common;
use common::{unique, until};

use std::cell::RefCell;
use std::rc::Rc;

use doca_cc::{Client, Connection, Counter, SendTask, Server};
use doca_core::{open_device_rep_with_pci, open_device_with_pci, CtxState, Error, Pe, RepFilter};

/// A server with the mandatory configuration (doing nothing); tests register their own
/// callbacks over it.
fn server(name: &str) -> (Pe, Server) {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0").unwrap();
    let pe = Pe::create().unwrap();
    let s = Server::create(&dev, &rep, name).unwrap();
    pe.connect_ctx(&s.as_ctx()).unwrap();
    s.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 64).unwrap();
    s.event_msg_recv_register(|_, _| {}).unwrap();
    s.event_connection_register(|_, _| {}, |_, _| {}).unwrap();
    (pe, s)
}

/// A client with the mandatory configuration (doing nothing).
fn client(name: &str) -> (Pe, Client) {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let c = Client::create(&dev, name).unwrap();
    pe.connect_ctx(&c.as_ctx()).unwrap();
    c.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 64).unwrap();
    c.event_msg_recv_register(|_, _| {}).unwrap();
    (pe, c)
}

#[test]
fn ping_pong_with_events_and_counters() {
    let name = unique("pingpong");
    let (spe, srv) = server(&name);
    let got: Rc<RefCell<Vec<(String, &'static str)>>> = Rc::default();
    let g = got.clone();
    srv.event_msg_recv_register(move |msg, conn| {
        g.borrow_mut().push((String::from_utf8_lossy(msg).into(), "server"));
        let server = conn.server().expect("the connection knows its server on this thread");
        server.task_send_alloc_init(conn, b"pong").unwrap().submit().unwrap();
    })
    .unwrap();
    let events: Rc<RefCell<Vec<(bool, bool)>>> = Rc::default();
    let (e1, e2) = (events.clone(), events.clone());
    srv.event_connection_register(
        move |_, ok| e1.borrow_mut().push((true, ok)),
        move |_, ok| e2.borrow_mut().push((false, ok)),
    )
    .unwrap();
    srv.task_send_set_conf(|_, _, _| {}, |_, _, _| panic!("server send failed"), 8).unwrap();
    srv.as_ctx().start().unwrap();
    assert_eq!(srv.as_ctx().state(), CtxState::Running);

    let (cpe, cli) = client(&name);
    let g = got.clone();
    cli.event_msg_recv_register(move |msg, conn| {
        assert!(conn.client().is_ok());
        g.borrow_mut().push((String::from_utf8_lossy(msg).into(), "client"))
    })
    .unwrap();
    let sent = Rc::new(RefCell::new(0));
    let s = sent.clone();
    cli.task_send_set_conf(move |_, _, _| *s.borrow_mut() += 1, |_, _, _| panic!("client send failed"), 8)
        .unwrap();
    assert_eq!(cli.get_connection().unwrap_err(), Error::BadState);
    assert_eq!(cli.as_ctx().start(), Err(Error::InProgress));
    until(&[&spe, &cpe], || cli.as_ctx().state() == CtxState::Running);
    let conn: Connection = cli.get_connection().unwrap();
    cli.task_send_alloc_init(&conn, b"ping").unwrap().submit().unwrap();
    until(&[&spe, &cpe], || got.borrow().len() == 2);
    assert_eq!(*got.borrow(), [("ping".to_string(), "server"), ("pong".to_string(), "client")]);
    assert_eq!(*sent.borrow(), 1);
    assert_eq!(*events.borrow(), [(true, true)]);
    conn.update_info().unwrap();
    assert_eq!(
        [Counter::SentMessages, Counter::SentBytes, Counter::RecvMessages, Counter::RecvBytes]
            .map(|c| conn.counter(c)),
        [1, 4, 1, 4]
    );

    // Client stop: the server hears of it.
    cli.as_ctx().stop().unwrap();
    until(&[&spe, &cpe], || events.borrow().len() == 2);
    assert_eq!(events.borrow()[1], (false, true));
    assert_eq!(conn.update_info(), Err(Error::ConnectionAborted));
    srv.as_ctx().stop().unwrap();
    spe.progress();
    srv.destroy().unwrap();
    cli.destroy().unwrap();
}

#[test]
fn a_full_receive_queue_holds_sends_in_flight_in_order() {
    let name = unique("full");
    let (spe, srv) = server(&name);
    srv.set_recv_queue_size(4).unwrap();
    let got: Rc<RefCell<Vec<u8>>> = Rc::default();
    let g = got.clone();
    srv.event_msg_recv_register(move |msg, _| g.borrow_mut().push(msg[0])).unwrap();
    srv.as_ctx().start().unwrap();
    let (cpe, cli) = client(&name);
    let done: Rc<RefCell<Vec<u8>>> = Rc::default();
    let d = done.clone();
    cli.task_send_set_conf(
        move |t, td, _| {
            assert_eq!(t.status(), Ok(()));
            d.borrow_mut().push(td.as_u64() as u8)
        },
        |_, _, _| panic!("no send fails here"),
        32,
    )
    .unwrap();
    let _ = cli.as_ctx().start();
    until(&[&spe, &cpe], || cli.as_ctx().state() == CtxState::Running);
    let conn = cli.get_connection().unwrap();
    for i in 0..20u8 {
        let t = cli.task_send_alloc_init(&conn, &[i]).unwrap();
        t.set_user_data(doca_core::Data::from_u64(i as u64));
        t.submit().unwrap();
    }
    while cpe.progress() {}
    assert_eq!(*done.borrow(), [0, 1, 2, 3], "only what fits in the server's queue completes");
    assert_eq!(cli.as_ctx().num_inflight_tasks(), 16, "the rest stays in flight");
    // A send completes once its message is in the server's ring; the server reads it on its
    // own progress.
    until(&[&spe, &cpe], || done.borrow().len() == 20 && got.borrow().len() == 20);
    assert_eq!(*got.borrow(), (0..20).collect::<Vec<u8>>(), "nothing dropped or reordered");
    assert_eq!(*done.borrow(), (0..20).collect::<Vec<u8>>());
}

#[test]
fn a_server_stop_disconnects_every_client() {
    let name = unique("stop-all");
    let (spe, srv) = server(&name);
    let gone: Rc<RefCell<Vec<(u64, bool)>>> = Rc::default();
    let g = gone.clone();
    srv.event_connection_register(|_, _| {}, move |c, ok| g.borrow_mut().push((c.id(), ok))).unwrap();
    srv.as_ctx().start().unwrap();
    type States = Rc<RefCell<Vec<CtxState>>>;
    let clients: Vec<(Pe, Client, States)> = (0..3)
        .map(|_| {
            let (pe, c) = client(&name);
            let states: States = Rc::default();
            let s = states.clone();
            c.as_ctx().set_state_changed_cb(move |_, _, _, next| s.borrow_mut().push(next)).unwrap();
            let _ = c.as_ctx().start();
            (pe, c, states)
        })
        .collect();
    let pes: Vec<&Pe> = std::iter::once(&spe).chain(clients.iter().map(|(pe, _, _)| pe)).collect();
    until(&pes, || clients.iter().all(|(_, c, _)| c.as_ctx().state() == CtxState::Running));
    assert_eq!(srv.num_connections(), 3);
    let mut ids: Vec<(u64, bool)> = srv.connections().iter().map(|c| (c.id(), true)).collect();
    // The disconnection callback runs for each connection, on the progress after the stop
    // (never inside it): the server is Stopping until then.
    assert_eq!(srv.as_ctx().stop(), Err(Error::InProgress));
    assert_eq!(srv.as_ctx().state(), CtxState::Stopping);
    assert!(gone.borrow().is_empty());
    until(&pes, || srv.as_ctx().state() == CtxState::Idle);
    ids.sort();
    gone.borrow_mut().sort();
    assert_eq!(*gone.borrow(), ids, "one disconnection event per connection");
    until(&pes, || clients.iter().all(|(_, c, _)| c.as_ctx().state() == CtxState::Idle));
    for (_, _, states) in &clients {
        assert_eq!(
            *states.borrow(),
            [CtxState::Starting, CtxState::Running, CtxState::Stopping, CtxState::Idle]
        );
    }
    // The name is free again: a new server can listen under it.
    let (_pe2, again) = server(&name);
    again.as_ctx().start().unwrap();
}

#[test]
fn a_server_can_disconnect_one_client() {
    let name = unique("disconnect");
    let (spe, srv) = server(&name);
    let gone: Rc<RefCell<Vec<u64>>> = Rc::default();
    let g = gone.clone();
    srv.event_connection_register(
        |_, _| {},
        move |c, ok| {
            assert!(ok);
            g.borrow_mut().push(c.id())
        },
    )
    .unwrap();
    srv.as_ctx().start().unwrap();
    let (cpe, cli) = client(&name);
    let _ = cli.as_ctx().start();
    until(&[&spe, &cpe], || cli.as_ctx().state() == CtxState::Running);
    let conn = srv.connections().pop().unwrap();
    assert_eq!(conn.server().unwrap().name(), name);
    assert_eq!(conn.client().err(), Some(Error::InvalidValue), "a server connection has no client");
    srv.disconnect(&conn).unwrap();
    until(&[&spe, &cpe], || cli.as_ctx().state() == CtxState::Idle && gone.borrow().len() == 1);
    assert_eq!(srv.disconnect(&conn), Err(Error::NotFound));
    assert_eq!(srv.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4), Err(Error::BadState));
}

#[test]
fn a_larger_max_msg_size_after_a_restart_takes_effect() {
    let name = unique("resize");
    let (spe, srv) = server(&name);
    let got: Rc<RefCell<Vec<usize>>> = Rc::default();
    let g = got.clone();
    srv.event_msg_recv_register(move |msg, _| g.borrow_mut().push(msg.len())).unwrap();
    srv.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    let (cpe, cli) = client(&name);
    cli.event_msg_recv_register(|_, _| {}).unwrap();
    cli.task_send_set_conf(|_, _, _| {}, |_, _, _| panic!("client send failed"), 4).unwrap();
    for size in [256, 4080] {
        srv.set_max_msg_size(size).unwrap();
        cli.set_max_msg_size(size).unwrap();
        srv.as_ctx().start().unwrap();
        assert_eq!(cli.as_ctx().start(), Err(Error::InProgress));
        until(&[&spe, &cpe], || cli.as_ctx().state() == CtxState::Running);
        let conn = cli.get_connection().unwrap();
        let too_big = vec![7u8; size as usize + 1];
        assert_eq!(cli.task_send_alloc_init(&conn, &too_big).err(), Some(Error::InvalidValue));
        cli.task_send_alloc_init(&conn, &too_big[..size as usize]).unwrap().submit().unwrap();
        until(&[&spe, &cpe], || got.borrow().last() == Some(&(size as usize)));
        cli.as_ctx().stop().unwrap();
        let _ = srv.as_ctx().stop(); // IN_PROGRESS while the client's departure is reported
        until(&[&spe, &cpe], || {
            cli.as_ctx().state() == CtxState::Idle && srv.as_ctx().state() == CtxState::Idle
        });
    }
}

#[test]
fn a_connection_finds_its_owner_only_on_the_owners_thread() {
    let name = unique("owner");
    let (spe, srv) = server(&name);
    srv.as_ctx().start().unwrap();
    let (cpe, cli) = client(&name);
    let _ = cli.as_ctx().start();
    until(&[&spe, &cpe], || cli.as_ctx().state() == CtxState::Running);
    let conn = srv.connections().pop().unwrap();
    assert_eq!(conn.server().unwrap().name(), name);
    let elsewhere = std::thread::spawn({
        let conn = conn.clone();
        move || (conn.server().err(), conn.is_connected(), conn.id())
    })
    .join()
    .unwrap();
    assert_eq!(
        elsewhere,
        (Some(Error::NotPermitted), true, conn.id()),
        "a clear error off the owner's thread"
    );
    srv.disconnect(&conn).unwrap();
    until(&[&spe, &cpe], || srv.num_connections() == 0);
    assert_eq!(conn.server().err(), Some(Error::NotFound), "the server let the connection go");
}

#[test]
fn sends_after_the_peer_stopped_fail_instead_of_vanishing() {
    let name = unique("after-stop");
    let (spe, srv) = server(&name);
    srv.event_msg_recv_register(|_, _| {}).unwrap();
    srv.as_ctx().start().unwrap();
    let (cpe, cli) = client(&name);
    let outcomes: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
    let (ok, err) = (outcomes.clone(), outcomes.clone());
    cli.task_send_set_conf(
        move |t, _, _| ok.borrow_mut().push(t.status()),
        move |t, _, _| err.borrow_mut().push(t.status()),
        8,
    )
    .unwrap();
    let _ = cli.as_ctx().start();
    until(&[&spe, &cpe], || cli.as_ctx().state() == CtxState::Running);
    let conn = cli.get_connection().unwrap();
    // The server stops; the client has not run a single progress since.
    assert_eq!(srv.as_ctx().stop(), Err(Error::InProgress), "one connection to report");
    for i in 0..4u8 {
        cli.task_send_alloc_init(&conn, &[i]).unwrap().submit().unwrap();
    }
    until(&[&cpe], || outcomes.borrow().len() == 4);
    assert_eq!(
        *outcomes.borrow(),
        [Err(Error::ConnectionReset); 4],
        "no send completes into a ring nobody reads"
    );
    until(&[&cpe], || cli.as_ctx().state() == CtxState::Idle);
    assert_eq!(cli.task_send_alloc_init(&conn, b"late").unwrap_err(), Error::BadState, "a stopped client");
    assert_eq!(srv.task_send_alloc_init(&conn, b"late").unwrap_err(), Error::BadState, "a stopped server");
}

#[test]
fn a_stopped_server_leaves_neither_its_socket_nor_its_lock_file() {
    let name = unique("tidy");
    let (spe, srv) = server(&name);
    srv.as_ctx().start().unwrap();
    let pci = open_device_with_pci("b1:00.0", None).unwrap().as_devinfo().pci_addr();
    let sock = doca_link::service_path("cc", pci, &name).unwrap();
    let mut lock = sock.clone().into_os_string();
    lock.push(".lock");
    assert!(sock.exists() && std::path::Path::new(&lock).exists());
    srv.as_ctx().stop().unwrap();
    spe.progress();
    assert!(!sock.exists(), "socket file removed");
    assert!(!std::path::Path::new(&lock).exists(), "lock file removed");
}

/// The high-rate pattern: one send task per side, resubmitted from its own completion
/// callback (doca_pe.h allows it), 100 000 times each way.
#[test]
fn one_task_per_side_recycled_from_its_completion_callback_carries_100k_messages() {
    use std::cell::Cell;
    const N: u64 = 100_000;
    let name = unique("recycle");
    let (spe, srv) = server(&name);
    let (cpe, cli) = client(&name);
    let counter = |c: &Rc<Cell<u64>>| {
        let c = c.clone();
        move |msg: &[u8], _: &Connection| {
            assert_eq!(msg, b"again");
            c.set(c.get() + 1);
        }
    };
    let (got_by_server, got_by_client) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    srv.event_msg_recv_register(counter(&got_by_server)).unwrap();
    cli.event_msg_recv_register(counter(&got_by_client)).unwrap();
    srv.event_connection_register(|_, _| {}, |_, _| {}).unwrap();
    // Each side's only task goes out again from its completion callback, until N.
    let recycler = |sent: &Rc<Cell<u64>>| {
        let sent = sent.clone();
        move |task: SendTask, _: doca_core::Data, _: doca_core::Data| {
            sent.set(sent.get() + 1);
            if sent.get() < N {
                task.submit().map_err(|r| r.error).unwrap();
            }
        }
    };
    let (srv_sent, cli_sent) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    srv.task_send_set_conf(recycler(&srv_sent), |t, _, _| panic!("{:?}", t.status()), 1).unwrap();
    cli.task_send_set_conf(recycler(&cli_sent), |t, _, _| panic!("{:?}", t.status()), 1).unwrap();
    srv.as_ctx().start().unwrap();
    let _ = cli.as_ctx().start();
    until(&[&spe, &cpe], || cli.as_ctx().state() == CtxState::Running);
    let sconn = srv.connections().pop().unwrap();
    cli.task_send_alloc_init(&cli.get_connection().unwrap(), b"again").unwrap().submit().unwrap();
    srv.task_send_alloc_init(&sconn, b"again").unwrap().submit().unwrap();
    assert_eq!(srv.task_send_alloc_init(&sconn, b"x").unwrap_err(), Error::NoMemory, "one task only");
    until(&[&spe, &cpe], || got_by_server.get() == N && got_by_client.get() == N);
    assert_eq!((srv_sent.get(), cli_sent.get()), (N, N));
    assert_eq!(cli.as_ctx().num_allocated_tasks() + srv.as_ctx().num_allocated_tasks(), 0);
}

/// A server that hangs up on every client as soon as it connects: the client's RUNNING
/// callback still finds it Running and gets its connection (as 2.9's comch client samples
/// do in theirs), whatever the client learns in the same progress pass.
#[test]
fn a_running_callback_gets_its_connection_even_when_the_server_hangs_up_at_once() {
    let name = unique("hangup-at-once");
    let (spe, srv) = server(&name);
    srv.event_connection_register(
        |conn, ok| {
            if ok {
                conn.server().expect("on the server's thread").disconnect(conn).unwrap();
            }
        },
        |_, _| {},
    )
    .unwrap();
    srv.as_ctx().start().unwrap();
    for _ in 0..5 {
        let (cpe, cli) = client(&name);
        let cli = Rc::new(cli);
        type Seen = Vec<(CtxState, Result<(), Error>)>;
        let seen: Rc<RefCell<Seen>> = Rc::default();
        let s = seen.clone();
        let weak = Rc::downgrade(&cli);
        cli.as_ctx()
            .set_state_changed_cb(move |_, ctx, _, next| {
                let got = match (next, weak.upgrade()) {
                    (CtxState::Running, Some(c)) => c.get_connection().map(|_| ()),
                    _ => Ok(()),
                };
                s.borrow_mut().push((ctx.state(), got));
                assert_eq!(ctx.state(), next, "the callback finds the state it announces");
            })
            .unwrap();
        let _ = cli.as_ctx().start();
        until(&[&spe, &cpe], || cli.as_ctx().state() == CtxState::Idle);
        let running: Vec<_> =
            seen.borrow().iter().filter(|(st, _)| *st == CtxState::Running).cloned().collect();
        assert_eq!(running, [(CtxState::Running, Ok(()))], "{:?}", seen.borrow());
    }
}

/// `pe_reactive`'s pattern on a client whose start fails inside progress (the server
/// refuses its message size): its IDLE callback destroys it, which succeeds there.
#[test]
fn a_client_destroyed_in_its_idle_callback_after_a_refused_start() {
    let name = unique("destroy-in-idle");
    let (spe, srv) = server(&name);
    srv.as_ctx().start().unwrap();
    let (cpe, cli) = client(&name);
    cli.set_max_msg_size(100).unwrap();
    let ctx = cli.as_ctx();
    let slot = Rc::new(RefCell::new(Some(cli)));
    let destroyed: Rc<RefCell<Option<bool>>> = Rc::default();
    let (s, d) = (slot.clone(), destroyed.clone());
    ctx.set_state_changed_cb(move |_, _, _, next| {
        if next == CtxState::Idle {
            let c = s.borrow_mut().take().expect("destroyed once");
            *d.borrow_mut() = Some(c.destroy().is_ok());
        }
    })
    .unwrap();
    assert_eq!(ctx.start(), Err(Error::InProgress));
    until(&[&spe, &cpe], || destroyed.borrow().is_some());
    assert_eq!(*destroyed.borrow(), Some(true), "destroy in the IDLE callback succeeds");
    for _ in 0..10 {
        cpe.progress();
    }
}

/// A server and a client progressed rarely, as NVIDIA's sync_event samples progress their
/// Comm Channel (once a second; here every 2 ms): without an established connection each
/// side looks at its control sockets at every call once the period passed, so the
/// handshake takes a few calls, not `CTRL_EVERY` calls per step.
#[test]
fn a_rarely_progressed_pair_connects_in_a_few_calls() {
    let name = unique("rarely");
    let (spe, srv) = server(&name);
    srv.as_ctx().start().unwrap();
    let (cpe, cli) = client(&name);
    assert_eq!(cli.as_ctx().start(), Err(Error::InProgress));
    let mut calls = 0;
    while cli.as_ctx().state() != CtxState::Running && calls < 40 {
        std::thread::sleep(std::time::Duration::from_millis(2));
        cpe.progress();
        spe.progress();
        calls += 1;
    }
    assert_eq!(cli.as_ctx().state(), CtxState::Running, "connected within {calls} calls of each side");
}

/// A message whose receive callback panics (caught by the application around `progress`)
/// counts as delivered: the next pass goes on with the message after it instead of handing
/// the same one over again, so one bad message does not make every later pass panic.
#[test]
fn a_message_whose_callback_panicked_is_not_delivered_again() {
    let name = unique("poison");
    let (spe, srv) = server(&name);
    let seen: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
    let s = seen.clone();
    srv.event_msg_recv_register(move |msg, _| {
        s.borrow_mut().push(msg.to_vec());
        assert_ne!(msg, b"poison", "the application's callback fails on this message");
    })
    .unwrap();
    srv.as_ctx().start().unwrap();
    let (cpe, cli) = client(&name);
    let _ = cli.as_ctx().start();
    until(&[&spe, &cpe], || cli.as_ctx().state() == CtxState::Running);
    let conn = cli.get_connection().unwrap();
    for msg in [&b"poison"[..], b"after"] {
        cli.task_send_alloc_init(&conn, msg).unwrap().submit().unwrap();
    }
    let mut panics = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while seen.borrow().last().map(Vec::as_slice) != Some(b"after") {
        assert!(std::time::Instant::now() < deadline, "the message after the bad one never came");
        cpe.progress();
        let pass = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| spe.progress()));
        panics += usize::from(pass.is_err());
        assert!(panics <= 1, "the bad message was delivered again: {:?}", seen.borrow());
    }
    assert_eq!(*seen.borrow(), [b"poison".to_vec(), b"after".to_vec()]);
    assert_eq!(panics, 1);
}
