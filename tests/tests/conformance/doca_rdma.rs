//! `doca_rdma.h` (API level 2.7, the 2.9/3.x shape): settings and their limits, descriptor
//! export and connect, task configuration, the codes this library chose where the headers
//! are silent (permissions, ranges, receiver-not-ready: see the porting table), the error
//! rule, and the connection manager's state rules. Two contexts of this process on one
//! engine stand for the two sides.

use std::cell::RefCell;
use std::rc::Rc;

use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe};
use doca_mmap::{AccessFlags, Mmap};
use doca_rdma::cm::{Addr, AddrType};
use doca_rdma::{caps, ConnState, Connection, Rdma, ReceiveTask, SendTask, TransportType, WriteTask};

use crate::support::{started_inventory, until};

fn dev() -> Dev {
    open_device_with_pci("03:00.0", None).unwrap()
}

/// Completions seen: (task kind, status).
type Seen = Rc<RefCell<Vec<(&'static str, Result<(), Error>)>>>;

fn conf(rdma: &Rdma, seen: &Seen) {
    let (a, b) = (seen.clone(), seen.clone());
    rdma.task_send_set_conf(
        move |_t: SendTask, _, _| a.borrow_mut().push(("send", Ok(()))),
        move |t: SendTask, _, _| b.borrow_mut().push(("send", t.status())),
        8,
    )
    .unwrap();
    let (a, b) = (seen.clone(), seen.clone());
    rdma.task_write_set_conf(
        move |_t: WriteTask, _, _| a.borrow_mut().push(("write", Ok(()))),
        move |t: WriteTask, _, _| b.borrow_mut().push(("write", t.status())),
        8,
    )
    .unwrap();
    let (a, b) = (seen.clone(), seen.clone());
    rdma.task_receive_set_conf(
        move |_t: ReceiveTask, _, _| a.borrow_mut().push(("recv", Ok(()))),
        move |t: ReceiveTask, _, _| b.borrow_mut().push(("recv", t.status())),
        8,
    )
    .unwrap();
}

/// Two started contexts connected both ways: (initiator, its connection, target, its
/// connection). `target_perms` is what the target's context grants.
fn pair(pe: &Pe, rnr: u8, target_perms: u32) -> (Rdma, Connection, Rdma, Connection, Seen) {
    let d = dev();
    let seen: Seen = Rc::default();
    let a = Rdma::create(&d).unwrap();
    a.set_rnr_retry_count(rnr).unwrap();
    conf(&a, &seen);
    let b = Rdma::create(&d).unwrap();
    b.set_permissions(target_perms).unwrap();
    conf(&b, &seen);
    for r in [&a, &b] {
        pe.connect_ctx(&r.as_ctx()).unwrap();
        r.as_ctx().start().unwrap();
    }
    let (da, ca) = a.export().unwrap();
    let (db, cb) = b.export().unwrap();
    a.connect(&db, ca).unwrap();
    b.connect(&da, cb).unwrap();
    (a, ca, b, cb, seen)
}

#[test]
fn doca_rdma_create() {
    for pci in ["03:00.0", "b1:00.0"] {
        let d = open_device_with_pci(pci, None).unwrap();
        assert_eq!(caps::is_supported(d.as_devinfo()), Ok(()));
        let r = Rdma::create(&d).unwrap();
        assert_eq!(r.as_ctx().state(), CtxState::Idle);
        assert!(r.destroy().is_ok());
    }
}

#[test]
fn doca_rdma_set_permissions() {
    let r = Rdma::create(&dev()).unwrap();
    // What 8 of the 12 2.6 samples set.
    r.set_permissions(AccessFlags::LOCAL_READ_WRITE.bits()).unwrap();
    assert_eq!(r.permissions(), AccessFlags::LOCAL_READ_WRITE.bits());
    assert_eq!(r.set_permissions(1 << 20), Err(Error::InvalidValue), "not an RDMA flag");
    let pe = Pe::create().unwrap();
    pe.connect_ctx(&r.as_ctx()).unwrap();
    r.as_ctx().start().unwrap();
    assert_eq!(r.set_permissions(2), Err(Error::BadState), "running");
}

#[test]
fn doca_rdma_set_limits() {
    let d = dev();
    let info = d.as_devinfo();
    let r = Rdma::create(&d).unwrap();
    let gids = caps::gid_table_size(info).unwrap();
    assert_eq!(r.set_gid_index(gids), Err(Error::InvalidValue));
    r.set_gid_index(gids - 1).unwrap();
    assert_eq!(r.gid_index(), gids - 1);
    let max_sq = caps::max_send_queue_size(info).unwrap();
    assert_eq!(r.set_send_queue_size(0), Err(Error::InvalidValue));
    assert_eq!(r.set_send_queue_size(max_sq + 1), Err(Error::InvalidValue));
    r.set_send_queue_size(max_sq).unwrap();
    assert_eq!(r.set_recv_queue_size(0), Err(Error::InvalidValue));
    assert_eq!(r.set_sl(16), Err(Error::InvalidValue));
    r.set_sl(15).unwrap();
    assert_eq!(r.set_rnr_retry_count(8), Err(Error::InvalidValue));
    assert_eq!(r.set_max_num_connections(0), Err(Error::InvalidValue));
    assert_eq!(r.set_transport_type(TransportType::Rc), Ok(()));
    assert_eq!(TransportType::from_raw(2).err(), Some(Error::InvalidValue));
    r.set_connection_request_timeout(250).unwrap();
    assert_eq!(r.connection_request_timeout(), 250);
    // Buffer lists: 1 to the topology's rdma.max_buf_list_len, for sends and receives.
    let lists = caps::max_buf_list_len(info).unwrap();
    assert_eq!(r.set_max_send_buf_list_len(0), Err(Error::InvalidValue));
    assert_eq!(r.set_max_send_buf_list_len(lists + 1), Err(Error::InvalidValue));
    r.set_max_send_buf_list_len(lists).unwrap();
    assert_eq!(r.max_send_buf_list_len(), lists);
    assert_eq!(r.set_recv_buf_list_len(lists + 1), Err(Error::InvalidValue));
    r.set_recv_buf_list_len(2).unwrap();
    assert_eq!(r.recv_buf_list_len(), 2);
    assert_eq!(r.set_mtu(1000), Err(Error::InvalidValue));
    r.set_mtu(4096).unwrap();
    assert_eq!(r.mtu(), 4096);
    assert_eq!(caps::gid(info, gids).err(), Some(Error::InvalidValue));
}

#[test]
fn doca_rdma_export_and_connect() {
    let pe = Pe::create().unwrap();
    let r = Rdma::create(&dev()).unwrap();
    pe.connect_ctx(&r.as_ctx()).unwrap();
    r.as_ctx().start().unwrap();
    let (desc, c) = r.export().unwrap();
    assert_eq!(r.export().err(), Some(Error::NoMemory), "one connection by default");
    assert_eq!(r.connection_state(c), Ok(ConnState::Exported));
    assert_eq!(r.connect(&desc[..10], c).err(), Some(Error::InvalidValue), "not a descriptor");
    // A forged token: the offerer's service closes the socket. Connecting does not wait for
    // the peer, so the refusal comes at once (`CONNECTION_RESET`, when the socket closed
    // before the greeting went out) or puts the connection in the error state at a later
    // progress.
    let mut forged = desc.clone();
    forged[30] ^= 1;
    match r.connect(&forged, c) {
        Ok(()) => {
            until(&pe, || r.connection_state(c) == Ok(ConnState::Error));
            assert_eq!(r.connect(&desc, c).err(), Some(Error::BadState), "not exported any more");
        }
        Err(e) => assert_eq!(e, Error::ConnectionReset),
    }
    r.as_ctx().stop().unwrap_err();
    until(&pe, || r.as_ctx().state() == CtxState::Idle);
    assert_eq!(r.connect(&desc, c).err(), Some(Error::BadState), "not running");
}

#[test]
fn doca_rdma_task_send_set_conf() {
    let r = Rdma::create(&dev()).unwrap();
    r.set_send_queue_size(4).unwrap();
    let e = r.task_send_set_conf(|_: SendTask, _, _| {}, |_: SendTask, _, _| {}, 5);
    assert_eq!(e, Err(Error::InvalidValue), "more tasks than the send queue");
    r.task_send_set_conf(|_: SendTask, _, _| {}, |_: SendTask, _, _| {}, 4).unwrap();
}

/// The error rule and the codes of the porting table: a write the target's context does
/// not grant fails `NOT_PERMITTED`, is fatal to the initiator's context, and flushes the
/// rest with `SHUTDOWN`.
#[test]
fn doca_rdma_task_write_not_permitted_is_fatal() {
    let pe = Pe::create().unwrap();
    let (a, ca, b, _cb, seen) = pair(&pe, 7, AccessFlags::RDMA_READ.bits());
    let d = dev();
    let target = Mmap::create().unwrap();
    target.set_memrange(vec![0u8; 4096]).unwrap();
    target.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::RDMA_WRITE).unwrap();
    target.add_dev(&d).unwrap();
    target.start().unwrap();
    let remote = Mmap::create_from_export(None, &target.export_rdma(&d).unwrap(), &d).unwrap();
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![0u8; 4096]).unwrap();
    local.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    local.add_dev(&d).unwrap();
    local.start().unwrap();
    let inv = started_inventory(8);
    let src = inv.buf_get_at(&local, 0, 16).unwrap();
    src.append(b"0123456789abcdef").unwrap();
    let (base, _) = remote.memrange().unwrap();
    let dst = inv.buf_get_by_addr(&remote, base, 64).unwrap();
    a.task_write_alloc_init(ca, Some(&src), Some(&dst), Data::NONE).unwrap().submit().unwrap();
    let room = inv.buf_get_at(&local, 1024, 64).unwrap();
    a.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
    until(&pe, || seen.borrow().len() >= 2);
    let got = seen.borrow().clone();
    assert!(got.contains(&("write", Err(Error::NotPermitted))), "{got:?}");
    assert!(got.contains(&("recv", Err(Error::Shutdown))), "{got:?}");
    until(&pe, || a.as_ctx().state() == CtxState::Idle);
    assert_eq!(b.as_ctx().state(), CtxState::Running, "the target goes on");
}

/// Receiver not ready: with `rnr_retry_count` 0, a send nobody receives fails `TIME_OUT`.
#[test]
fn doca_rdma_task_send_receiver_not_ready() {
    let pe = Pe::create().unwrap();
    let (a, ca, _b, _cb, seen) = pair(&pe, 0, AccessFlags::LOCAL_READ_WRITE.bits());
    let d = dev();
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![0u8; 4096]).unwrap();
    local.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    local.add_dev(&d).unwrap();
    local.start().unwrap();
    let inv = started_inventory(4);
    let src = inv.buf_get_at(&local, 0, 8).unwrap();
    src.append(b"nobody").unwrap();
    a.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    until(&pe, || !seen.borrow().is_empty());
    assert_eq!(seen.borrow()[0], ("send", Err(Error::TimeOut)));
}

#[test]
fn doca_rdma_connection_manager_states() {
    let pe = Pe::create().unwrap();
    let r = Rdma::create(&dev()).unwrap();
    let addr = Addr::create(AddrType::Ipv4, "127.0.0.1", 1).unwrap();
    r.set_connection_state_callbacks(|_, _| {}, |_, _, _| {}, |_, _, _| {}, |_, _, _| {}).unwrap();
    assert_eq!(r.connect_to_addr(&addr, Data::NONE).err(), Some(Error::BadState), "idle");
    assert_eq!(r.start_listen_to_port(1).err(), Some(Error::BadState), "idle");
    pe.connect_ctx(&r.as_ctx()).unwrap();
    r.as_ctx().start().unwrap();
    let e = r.set_connection_state_callbacks(|_, _| {}, |_, _, _| {}, |_, _, _| {}, |_, _, _| {});
    assert_eq!(e, Err(Error::BadState), "callbacks before start only");
    let (_, c) = r.export().unwrap();
    assert_eq!(r.connection_accept(c, &[]).err(), Some(Error::BadState), "not a request");
    assert_eq!(r.connection_reject(c).err(), Some(Error::BadState), "not a request");
    assert_eq!(r.connection_accept(c, &[0; 256]).err(), Some(Error::InvalidValue), "private data");
    r.connection_disconnect(c).unwrap();
    assert_eq!(r.connection_state(c), Ok(ConnState::Disconnected));
    r.connection_disconnect(c).unwrap();
}

/// DOCA 2.6's start (the level-2.6 `doca_rdma_create`): Starting until the connection is
/// connected, then Running.
#[test]
fn doca_rdma_create_v26_starts_when_connected() {
    let pe = Pe::create().unwrap();
    let d = dev();
    let a = Rdma::create(&d).unwrap();
    a.set_running_on_connect(true).unwrap();
    let b = Rdma::create(&d).unwrap();
    for r in [&a, &b] {
        pe.connect_ctx(&r.as_ctx()).unwrap();
    }
    assert_eq!(a.as_ctx().start(), Err(Error::InProgress));
    b.as_ctx().start().unwrap();
    for _ in 0..10 {
        doca_tests::idle(&pe);
    }
    assert_eq!(a.as_ctx().state(), CtxState::Starting, "not connected yet");
    let (da, ca) = a.export().unwrap();
    let (db, cb) = b.export().unwrap();
    a.connect(&db, ca).unwrap();
    b.connect(&da, cb).unwrap();
    until(&pe, || a.as_ctx().state() == CtxState::Running);
    assert_eq!(a.set_running_on_connect(false), Err(Error::BadState), "Idle only");
}
