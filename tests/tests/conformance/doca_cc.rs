//! `doca_cc.h`: capabilities, server and client creation and properties, the mandatory
//! configuration, start and stop, send tasks, events and connections.

use std::cell::RefCell;
use std::rc::Rc;

use doca_cc::{caps, Client, Counter, Server};

use crate::support::{unique, until};
use doca_core::{
    open_device_rep_with_pci, open_device_with_pci, CtxState, Dev, DevRep, Error, Pe, RepFilter, Topology,
};

fn dpu() -> (Dev, DevRep) {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0").unwrap();
    (dev, rep)
}

fn host() -> Dev {
    open_device_with_pci("b1:00.0", None).unwrap()
}

/// What a server saw: messages, connections, disconnections.
#[derive(Default)]
struct Seen {
    msgs: Vec<(Vec<u8>, u64)>,
    connected: Vec<(u64, bool)>,
    disconnected: Vec<(u64, bool)>,
}

/// A configured, not started server on `pe`, recording into the returned log.
fn server(pe: &Pe, name: &str) -> (Server, Rc<RefCell<Seen>>) {
    let (dev, rep) = dpu();
    let s = Server::create(&dev, &rep, name).unwrap();
    pe.connect_ctx(&s.as_ctx()).unwrap();
    let seen: Rc<RefCell<Seen>> = Rc::default();
    let (a, b, c) = (seen.clone(), seen.clone(), seen.clone());
    s.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 8).unwrap();
    s.event_msg_recv_register(move |m, conn| a.borrow_mut().msgs.push((m.to_vec(), conn.id()))).unwrap();
    s.event_connection_register(
        move |conn, ok| b.borrow_mut().connected.push((conn.id(), ok)),
        move |conn, ok| c.borrow_mut().disconnected.push((conn.id(), ok)),
    )
    .unwrap();
    (s, seen)
}

/// A configured, not started client on `pe`.
fn client(pe: &Pe, name: &str) -> Client {
    let c = Client::create(&host(), name).unwrap();
    pe.connect_ctx(&c.as_ctx()).unwrap();
    c.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 8).unwrap();
    c.event_msg_recv_register(|_, _| {}).unwrap();
    c
}

/// A running server and a client connected to it, on one engine.
fn connected(name: &str) -> (Pe, Server, Rc<RefCell<Seen>>, Client) {
    let pe = Pe::create().unwrap();
    let (s, seen) = server(&pe, name);
    s.as_ctx().start().unwrap();
    let c = client(&pe, name);
    assert_eq!(c.as_ctx().start(), Err(Error::InProgress));
    until(&pe, || c.as_ctx().state() == CtxState::Running && !seen.borrow().connected.is_empty());
    (pe, s, seen, c)
}

#[test]
fn doca_cc_cap_get_max_name_len_msg_size_recv_queue_size_clients_send_tasks() {
    let (dev, _) = dpu();
    let info = dev.as_devinfo();
    assert_eq!(caps::max_name_len(info), Ok(120));
    assert_eq!(caps::max_msg_size(info), Ok(4080));
    assert_eq!(caps::max_recv_queue_size(info), Ok(8192));
    assert_eq!(caps::max_clients(info), Ok(512));
    assert_eq!(caps::max_send_tasks(info), Ok(16384));
    let t = Topology::parse("t", "device 03:00.0 dpu\ncap cc.max_msg_size 8K\n").unwrap();
    assert_eq!(caps::max_msg_size(&t.devinfo_list().unwrap()[0]), Ok(8192), "the topology sets limits");
    let typo = Topology::parse("t", "device 03:00.0 dpu\ncap cc.max_msg_sise 8K\n").unwrap();
    assert_eq!(
        caps::max_msg_size(&typo.devinfo_list().unwrap()[0]),
        Err(Error::InvalidValue),
        "a misspelt limit"
    );
}

#[test]
fn doca_cc_cap_server_is_supported_and_client_is_supported() {
    let (dev, _) = dpu();
    assert_eq!(caps::server_is_supported(dev.as_devinfo()), Ok(()));
    assert_eq!(caps::client_is_supported(dev.as_devinfo()), Err(Error::NotSupported));
    assert_eq!(caps::server_is_supported(host().as_devinfo()), Err(Error::NotSupported));
    assert_eq!(caps::client_is_supported(host().as_devinfo()), Ok(()));
}

#[test]
fn doca_cc_server_create_checks_side_representor_and_name() {
    let (dev, rep) = dpu();
    assert_eq!(Server::create(&host(), &rep, "x").unwrap_err(), Error::NotSupported, "on a host function");
    assert_eq!(Server::create(&dev, &rep, "").unwrap_err(), Error::InvalidValue, "empty name");
    assert_eq!(
        Server::create(&dev, &rep, &"n".repeat(120)).unwrap_err(),
        Error::InvalidValue,
        "no room for the NUL"
    );
    assert_eq!(Server::create(&dev, &rep, "a\0b").unwrap_err(), Error::InvalidValue);
    assert!(Server::create(&dev, &rep, &"n".repeat(119)).is_ok());
    let t = Topology::parse("t", "device 03:00.0 dpu\nrep b1:00.0 pf\ndevice 04:00.0 dpu\nrep 3b:00.0 pf\n")
        .unwrap();
    let list = t.devinfo_list().unwrap();
    let (a, b) = (list[0].open().unwrap(), list[1].open().unwrap());
    let rep_of_b = b.rep_list(RepFilter::ALL).unwrap()[0].open().unwrap();
    assert_eq!(
        Server::create(&a, &rep_of_b, "x").unwrap_err(),
        Error::InvalidValue,
        "a representor of another device"
    );
}

#[test]
fn doca_cc_client_create_checks_side_and_name() {
    let (dev, _) = dpu();
    assert_eq!(Client::create(&dev, "x").unwrap_err(), Error::NotSupported, "on the DPU device");
    assert_eq!(Client::create(&host(), "").unwrap_err(), Error::InvalidValue);
    assert_eq!(Client::create(&host(), &"n".repeat(120)).unwrap_err(), Error::InvalidValue);
    assert_eq!(Client::create(&host(), "a\0b").unwrap_err(), Error::InvalidValue);
    assert!(Client::create(&host(), &"n".repeat(119)).is_ok());
}

#[test]
fn doca_cc_server_get_device_and_get_device_repr_and_client_get_device() {
    let pe = Pe::create().unwrap();
    let (s, _) = server(&pe, &unique("dev"));
    let (dev, rep) = dpu();
    assert_eq!((s.device(), s.device_rep()), (dev, rep));
    assert_eq!(client(&pe, "x").device(), host());
}

#[test]
fn doca_cc_server_set_max_msg_size_and_set_recv_queue_size_idle_only_within_the_caps() {
    let pe = Pe::create().unwrap();
    let (s, _) = server(&pe, &unique("sizes"));
    assert_eq!(s.max_msg_size(), 4080, "default: the capability");
    assert_eq!(s.recv_queue_size(), doca_cc::DEFAULT_RECV_QUEUE_SIZE);
    for (r, why) in [
        (s.set_max_msg_size(0), "0"),
        (s.set_max_msg_size(4081), "above the capability"),
        (s.set_recv_queue_size(0), "0"),
        (s.set_recv_queue_size(8193), "above the capability"),
    ] {
        assert_eq!(r, Err(Error::InvalidValue), "{why}");
    }
    s.set_max_msg_size(100).unwrap();
    s.set_recv_queue_size(16).unwrap();
    assert_eq!((s.max_msg_size(), s.recv_queue_size()), (100, 16));
    s.as_ctx().start().unwrap();
    assert_eq!(s.set_max_msg_size(50), Err(Error::BadState), "Running");
    assert_eq!(s.set_recv_queue_size(8), Err(Error::BadState), "Running");
    let c = client(&pe, "x");
    c.set_max_msg_size(100).unwrap();
    assert_eq!(c.set_recv_queue_size(8193), Err(Error::InvalidValue));
}

#[test]
fn doca_cc_server_task_send_set_conf_and_event_registration_idle_only() {
    let pe = Pe::create().unwrap();
    let (s, _) = server(&pe, &unique("conf"));
    assert_eq!(
        s.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 16385),
        Err(Error::InvalidValue),
        "above the capability"
    );
    s.as_ctx().start().unwrap();
    assert_eq!(s.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4), Err(Error::BadState));
    assert_eq!(s.event_msg_recv_register(|_, _| {}), Err(Error::BadState));
    assert_eq!(s.event_connection_register(|_, _| {}, |_, _| {}), Err(Error::BadState));
    assert_eq!(s.event_consumer_register(|_, _| {}, |_, _| {}), Err(Error::BadState));
}

#[test]
fn doca_ctx_start_of_a_server_and_a_client_checks_the_mandatory_configuration() {
    let name = unique("mandatory");
    let (dev, rep) = dpu();
    let pe = Pe::create().unwrap();
    let srv = Server::create(&dev, &rep, &name).unwrap();
    pe.connect_ctx(&srv.as_ctx()).unwrap();
    assert_eq!(srv.as_ctx().start(), Err(Error::InvalidValue), "nothing configured");
    srv.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    assert_eq!(srv.as_ctx().start(), Err(Error::InvalidValue), "no receive callback");
    srv.event_msg_recv_register(|_, _| {}).unwrap();
    assert_eq!(srv.as_ctx().start(), Err(Error::InvalidValue), "no connection callbacks (server only)");
    assert_eq!(srv.as_ctx().state(), CtxState::Idle);
    srv.event_connection_register(|_, _| {}, |_, _| {}).unwrap();
    assert_eq!(srv.as_ctx().start(), Ok(()), "a server starts synchronously");

    let cli = Client::create(&host(), &name).unwrap();
    pe.connect_ctx(&cli.as_ctx()).unwrap();
    assert_eq!(cli.as_ctx().start(), Err(Error::InvalidValue), "nothing configured");
    cli.event_msg_recv_register(|_, _| {}).unwrap();
    assert_eq!(cli.as_ctx().start(), Err(Error::InvalidValue), "no send task");
    cli.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    assert_eq!(cli.as_ctx().start(), Err(Error::InProgress), "a client starts asynchronously");
    assert_eq!(cli.as_ctx().state(), CtxState::Starting);
    until(&pe, || cli.as_ctx().state() == CtxState::Running);
}

#[test]
fn doca_cc_server_start_with_a_name_in_use_is_in_use_and_a_client_with_another_msg_size_is_refused() {
    let name = unique("dup");
    let pe = Pe::create().unwrap();
    let (s, _) = server(&pe, &name);
    s.as_ctx().start().unwrap();
    let (dup, _) = server(&pe, &name);
    assert_eq!(dup.as_ctx().start(), Err(Error::InUse), "same name, same representor");
    let c = client(&pe, &name);
    c.set_max_msg_size(200).unwrap();
    assert_eq!(c.as_ctx().start(), Err(Error::InProgress));
    until(&pe, || c.as_ctx().state() == CtxState::Idle);
}

#[test]
fn doca_cc_server_destroy_and_client_destroy_idle_only() {
    let (pe, s, _, c) = connected(&unique("destroy"));
    let refused = s.destroy().unwrap_err();
    assert_eq!(refused.error, Error::InUse, "Running");
    let s = refused.into_inner();
    assert_eq!(s.as_ctx().state(), CtxState::Running, "a refused destroy changes nothing");
    let refused = c.destroy().unwrap_err();
    assert_eq!(refused.error, Error::InUse);
    let c = refused.into_inner();
    let _ = c.as_ctx().stop();
    until(&pe, || c.as_ctx().state() == CtxState::Idle);
    c.destroy().map_err(|r| r.error).unwrap();
}

#[test]
fn doca_cc_client_get_connection_before_and_after_running() {
    let pe = Pe::create().unwrap();
    let c = client(&pe, &unique("getconn"));
    assert_eq!(c.get_connection().unwrap_err(), Error::BadState, "Idle");
    let (pe, _s, _seen, c) = connected(&unique("getconn2"));
    let conn = c.get_connection().unwrap();
    assert!(conn.is_connected() && !conn.is_server_side());
    drop(pe);
}

#[test]
fn doca_cc_server_task_send_alloc_init_refusals_and_the_message_as_sent() {
    let name = unique("send");
    let (pe, s, seen, c) = connected(&name);
    let conn = c.get_connection().unwrap();
    assert_eq!(
        c.task_send_alloc_init(&conn, &[0u8; 4081]).unwrap_err(),
        Error::InvalidValue,
        "above max_msg_size"
    );
    let tasks: Vec<_> = (0..8).map(|i| c.task_send_alloc_init(&conn, &[i as u8; 3]).unwrap()).collect();
    assert_eq!(c.task_send_alloc_init(&conn, b"x").unwrap_err(), Error::NoMemory, "the pool is empty");
    for t in tasks {
        t.submit().map_err(|r| r.error).unwrap();
    }
    assert_eq!(
        c.task_send_alloc_init(&conn, b"y").unwrap_err(),
        Error::NoMemory,
        "submitted tasks are not free"
    );
    until(&pe, || seen.borrow().msgs.len() == 8);
    assert_eq!(seen.borrow().msgs[7].0, [7u8; 3], "the bytes as sent, no terminator added");
    let server_conn = s.connections().pop().unwrap();
    assert_eq!(seen.borrow().msgs[0].1, server_conn.id(), "the receive callback gets the connection");
    assert_eq!(
        s.task_send_alloc_init(&conn, b"x").unwrap_err(),
        Error::InvalidValue,
        "another context's connection"
    );
    c.as_ctx().stop().unwrap_or(());
    until(&pe, || c.as_ctx().state() == CtxState::Idle);
    assert_eq!(c.task_send_alloc_init(&conn, b"x").unwrap_err(), Error::BadState, "not Running");
}

#[test]
fn doca_cc_connection_user_data_get_server_ctx_get_client_ctx_and_counters() {
    let (pe, s, seen, c) = connected(&unique("conn"));
    let conn = c.get_connection().unwrap();
    conn.set_user_data(doca_core::Data::from_u64(7));
    assert_eq!(conn.user_data().as_u64(), 7);
    assert!(conn.client().is_ok(), "doca_cc_client_get_client_ctx");
    assert_eq!(conn.server().unwrap_err(), Error::InvalidValue, "a client's connection has no server");
    let server_conn = s.connections().pop().unwrap();
    assert!(server_conn.server().is_ok());
    assert_eq!(server_conn.client().unwrap_err(), Error::InvalidValue);
    c.task_send_alloc_init(&conn, b"12345").unwrap().submit().map_err(|r| r.error).unwrap();
    until(&pe, || seen.borrow().msgs.len() == 1);
    conn.update_info().unwrap();
    assert_eq!((conn.counter(Counter::SentMessages), conn.counter(Counter::SentBytes)), (1, 5));
    server_conn.update_info().unwrap();
    assert_eq!((server_conn.counter(Counter::RecvMessages), server_conn.counter(Counter::RecvBytes)), (1, 5));
}

#[test]
fn doca_cc_server_event_connection_register_reports_connect_and_disconnect() {
    let (pe, s, seen, c) = connected(&unique("events"));
    let id = s.connections()[0].id();
    assert_eq!(seen.borrow().connected, [(id, true)]);
    c.as_ctx().stop().unwrap_or(());
    until(&pe, || !seen.borrow().disconnected.is_empty());
    assert_eq!(seen.borrow().disconnected, [(id, true)]);
    assert_eq!(s.num_connections(), 0);
}

#[test]
fn doca_ctx_stop_of_a_server_reports_each_disconnection_then_idle() {
    let name = unique("srvstop");
    let (pe, s, seen, c) = connected(&name);
    let c2 = client(&pe, &name);
    let _ = c2.as_ctx().start();
    until(&pe, || seen.borrow().connected.len() == 2);
    assert_eq!(s.as_ctx().stop(), Err(Error::InProgress), "disconnections to report");
    assert_eq!(s.as_ctx().state(), CtxState::Stopping);
    until(&pe, || s.as_ctx().state() == CtxState::Idle);
    assert_eq!(seen.borrow().disconnected.len(), 2, "one disconnection callback per connection");
    until(&pe, || c.as_ctx().state() == CtxState::Idle && c2.as_ctx().state() == CtxState::Idle);
}
