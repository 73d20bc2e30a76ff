//! `doca_rdma.h` (API level 2.7, the 2.9/3.x shape): settings and their limits, descriptor
//! export and connect, task configuration, the codes this library chose where the headers
//! are silent (permissions, ranges, receiver-not-ready: see the porting table), the error
//! rule, the connection manager's state rules, and 2.6's shared receive queues (the queue
//! as a context; a context created with one takes no CPU receive). Two contexts of this
//! process on one engine stand for the two sides.

use std::cell::RefCell;
use std::rc::Rc;

use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe};
use doca_mmap::{AccessFlags, Mmap};
use doca_rdma::cm::{Addr, AddrType};
use doca_rdma::srq::{Srq, SrqType};
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
    {
        // After start a setter is BAD_STATE whatever its value: the state is checked first.
        let pe = Pe::create().unwrap();
        let started = Rdma::create(&d).unwrap();
        pe.connect_ctx(&started.as_ctx()).unwrap();
        started.as_ctx().start().unwrap();
        assert_eq!(started.set_send_queue_size(0), Err(Error::BadState));
        assert_eq!(started.set_gid_index(gids), Err(Error::BadState));
        started.as_ctx().stop().unwrap();
    }
    assert_eq!(r.set_gid_index(gids), Err(Error::InvalidValue));
    r.set_gid_index(gids - 1).unwrap();
    assert_eq!(r.gid_index(), gids - 1);
    let max_sq = caps::max_send_queue_size(info).unwrap();
    assert_eq!(r.set_send_queue_size(0), Err(Error::InvalidValue));
    assert_eq!(r.set_send_queue_size(max_sq + 1), Err(Error::NotSupported), "the header's code");
    r.set_send_queue_size(max_sq).unwrap();
    r.set_send_queue_size(100).unwrap();
    assert_eq!(r.send_queue_size(), 128, "rounded up to a power of 2");
    assert_eq!(r.set_recv_queue_size(0), Err(Error::InvalidValue));
    assert_eq!(r.set_sl(16), Err(Error::InvalidValue));
    r.set_sl(15).unwrap();
    assert_eq!(r.set_rnr_retry_count(8), Err(Error::InvalidValue));
    assert_eq!(
        r.set_max_num_connections(0),
        Err(Error::NotSupported),
        "below the minimum: the header's code"
    );
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
    assert_eq!(r.export().err(), Some(Error::BadState), "before doca_ctx_start");
    r.as_ctx().start().unwrap();
    let (desc, c) = r.export().unwrap();
    assert_eq!(r.export().err(), Some(Error::Full), "one connection by default: all in use");
    assert_eq!(r.connection_state(c), Ok(ConnState::Exported));
    assert_eq!(r.connect(&desc[..10], c).err(), Some(Error::ConnectionAborted), "not a descriptor");
    // Any byte changed on the way: the descriptor's check refuses it at once (the header's
    // code for corrupted connection details), and the connection is still there to connect.
    for at in [10, 30, 45, 53, desc.len() - 1] {
        let mut changed = desc.clone();
        changed[at] ^= 0x10;
        assert_eq!(r.connect(&changed, c).err(), Some(Error::ConnectionAborted), "byte {at} changed");
    }
    assert_eq!(r.connection_state(c), Ok(ConnState::Exported));
    // A forged token under a valid check: the offerer's service closes the socket. Connecting
    // does not wait for the peer, so the refusal comes at once (`CONNECTION_ABORTED`, when the
    // socket closed before the greeting went out) or puts the connection in the error state at
    // a later progress.
    let mut fields = doca_rdma::wire::Desc::parse(&desc).unwrap();
    fields.token[6] ^= 1;
    let forged = fields.encode();
    match r.connect(&forged, c) {
        Ok(()) => {
            until(&pe, || r.connection_state(c) == Ok(ConnState::Error));
            assert_eq!(r.connect(&desc, c).err(), Some(Error::BadState), "not exported any more");
        }
        Err(e) => assert_eq!(e, Error::ConnectionAborted),
    }
    // Outside a callback, with no task out: Idle at once.
    r.as_ctx().stop().unwrap();
    assert_eq!(r.as_ctx().state(), CtxState::Idle);
    assert_eq!(r.connect(&desc, c).err(), Some(Error::BadState), "not running");
}

/// Peers whose MTU or GRH setting differ are refused at connect, as DOCA's library refuses
/// them ("not matching between local and remote"): `CONNECTION_ABORTED`, the connection still
/// exported; the same settings on both sides connect.
#[test]
fn doca_rdma_connect_refuses_a_peer_of_another_mtu_or_grh() {
    let pe = Pe::create().unwrap();
    let d = dev();
    let make = |mtu: u32, grh: bool| {
        let r = Rdma::create(&d).unwrap();
        r.set_mtu(mtu).unwrap();
        r.set_grh_enabled(grh).unwrap();
        pe.connect_ctx(&r.as_ctx()).unwrap();
        r.as_ctx().start().unwrap();
        r
    };
    let here = make(1024, false);
    let (mine_desc, mine) = here.export().unwrap();
    for (mtu, grh, what) in [(2048, false, "MTU"), (1024, true, "GRH"), (4096, true, "both")] {
        let peer = make(mtu, grh);
        let (theirs, _) = peer.export().unwrap();
        assert_eq!(here.connect(&theirs, mine).err(), Some(Error::ConnectionAborted), "{what} differs");
        assert_eq!(here.connection_state(mine), Ok(ConnState::Exported), "{what}: still exported");
        peer.as_ctx().stop().unwrap();
    }
    let same = make(1024, false);
    let (theirs, c) = same.export().unwrap();
    assert_eq!(here.connect(&theirs, mine), Ok(()), "the same settings connect");
    assert_eq!(same.connect(&mine_desc, c), Ok(()));
}

#[test]
fn doca_rdma_task_send_set_conf() {
    let r = Rdma::create(&dev()).unwrap();
    r.set_send_queue_size(4).unwrap();
    // The pool is not bounded by the queue (NVIDIA's storage application asks for more).
    r.task_send_set_conf(|_: SendTask, _, _| {}, |_: SendTask, _, _| {}, 5).unwrap();
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

/// `doca_task_try_submit` checks the fields a task cannot run without (`INVALID_VALUE`, the
/// task back, the context still Running), where a plain submit fails the task later and
/// with it the context: a send without a source or longer than `max_message_size`, a
/// write without a destination.
#[test]
fn doca_rdma_task_try_submit_checks_the_fields() {
    let pe = Pe::create().unwrap();
    let (a, ca, _b, _cb, _seen) = pair(&pe, 7, AccessFlags::LOCAL_READ_WRITE.bits());
    until(&pe, || a.connection_state(ca) == Ok(ConnState::Connected));
    let d = dev();
    let max = caps::max_message_size(d.as_devinfo()).unwrap() as usize;
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![0u8; 2 * max]).unwrap();
    local.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    local.add_dev(&d).unwrap();
    local.start().unwrap();
    let inv = started_inventory(4);
    let long = inv.buf_get_at(&local, 0, max + 1).unwrap();
    long.set_data_offset(0, max + 1).unwrap();
    let refused = a.task_send_alloc_init(ca, Some(&long), Data::NONE).unwrap().try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue, "a send over max_message_size");
    let src = inv.buf_get_at(&local, 0, 16).unwrap();
    src.append(b"0123456789abcdef").unwrap();
    let refused =
        a.task_write_alloc_init(ca, Some(&src), None, Data::NONE).unwrap().try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue, "a write of data without a destination");
    drop(refused);
    for _ in 0..10 {
        pe.progress();
    }
    assert_eq!(a.as_ctx().state(), CtxState::Running, "nothing was submitted");
    // A receive into a list longer than the receive list length (1 here).
    let (head, tail) = (inv.buf_get_at(&local, 64, 16).unwrap(), inv.buf_get_at(&local, 80, 16).unwrap());
    head.chain_list(&tail).unwrap();
    let refused = a.task_receive_alloc_init(Some(&head), Data::NONE).unwrap().try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue, "a receive list longer than its limit");
    drop(refused);
    // A send that has what it needs is submitted.
    assert!(a.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().try_submit().is_ok());
}

/// The header's NULL buffers of a task without data: a send without a source is an empty
/// message (received into a receive without a destination), a write or read without
/// either buffer moves nothing; all complete with success.
#[test]
fn doca_rdma_tasks_without_data_take_null_buffers() {
    let pe = Pe::create().unwrap();
    let perms = AccessFlags::LOCAL_READ_WRITE | AccessFlags::RDMA_WRITE | AccessFlags::RDMA_READ;
    let (a, ca, b, cb, seen) = pair(&pe, 7, perms.bits());
    until(&pe, || {
        a.connection_state(ca) == Ok(ConnState::Connected)
            && b.connection_state(cb) == Ok(ConnState::Connected)
    });
    b.task_receive_alloc_init(None, Data::NONE).unwrap().submit().unwrap();
    a.task_send_alloc_init(ca, None, Data::NONE).unwrap().try_submit().unwrap();
    a.task_write_alloc_init(ca, None, None, Data::NONE).unwrap().try_submit().unwrap();
    until(&pe, || seen.borrow().len() == 3);
    let mut got = seen.borrow().clone();
    got.sort();
    assert_eq!(got, [("recv", Ok(())), ("send", Ok(())), ("write", Ok(()))]);
    assert_eq!(a.as_ctx().state(), CtxState::Running);
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
    assert_eq!(r.connection_accept(c, &[]).err(), Some(Error::InvalidValue), "not a request");
    assert_eq!(r.connection_reject(c).err(), Some(Error::InvalidValue), "not a request");
    assert_eq!(r.stop_listen_to_port(1).err(), Some(Error::InvalidValue), "not listening there");
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

/// Shared receive queues (DOCA 2.6): a context with no tasks; settings Idle only and checked
/// against the topology's `rdma.srq_*` caps with the header's codes (0 `INVALID_VALUE`, a
/// size above the cap `NOT_SUPPORTED`, rounded up to a power of 2); the DPA handle
/// `BAD_STATE` before and after start (no queue is on the DPA data path here).
#[test]
fn doca_rdma_srq_settings_states_and_dpa_handle() {
    let d = dev();
    let info = d.as_devinfo();
    let max = caps::srq_max_size(info).unwrap();
    let lists = caps::srq_max_buf_list_len(info).unwrap();
    assert_eq!((max, lists), (8192, 16), "the default topology's caps");
    let s = Srq::create(&d).unwrap();
    assert_eq!(
        (s.shared_recv_queue_size(), s.dst_buf_list_len(), s.srq_type()),
        (64, 1, SrqType::LinkedList)
    );
    assert_eq!(s.set_shared_recv_queue_size(0), Err(Error::InvalidValue));
    assert_eq!(s.set_shared_recv_queue_size(max + 1), Err(Error::NotSupported));
    s.set_shared_recv_queue_size(100).unwrap();
    assert_eq!(s.shared_recv_queue_size(), 128, "rounded up to a power of 2");
    s.set_shared_recv_queue_size(max).unwrap();
    assert_eq!(s.shared_recv_queue_size(), max);
    assert_eq!(s.set_dst_buf_list_len(0), Err(Error::InvalidValue));
    assert_eq!(s.set_dst_buf_list_len(lists + 1), Err(Error::InvalidValue));
    s.set_dst_buf_list_len(lists).unwrap();
    assert_eq!(s.dst_buf_list_len(), lists);
    assert_eq!(SrqType::from_raw(2).err(), Some(Error::InvalidValue));
    s.set_type(SrqType::Cyclic).unwrap();
    assert_eq!(s.srq_type(), SrqType::Cyclic);
    assert_eq!(s.dpa_handle().err(), Some(Error::BadState), "not started");
    let pe = Pe::create().unwrap();
    pe.connect_ctx(&s.as_ctx()).unwrap();
    assert_eq!(s.as_ctx().start(), Ok(()));
    assert_eq!(s.as_ctx().state(), CtxState::Running);
    assert_eq!(s.dpa_handle().err(), Some(Error::BadState), "not on the DPA data path");
    assert_eq!(s.set_shared_recv_queue_size(64), Err(Error::BadState), "running");
    assert_eq!(s.set_dst_buf_list_len(1), Err(Error::BadState), "running");
    assert_eq!(s.set_type(SrqType::LinkedList), Err(Error::BadState), "running");
    let s = s.destroy().expect_err("running: BAD_STATE").into_inner();
    assert_eq!(s.as_ctx().stop(), Ok(()), "no RDMA context uses it: Idle at once");
    assert_eq!(s.as_ctx().state(), CtxState::Idle);
    s.set_type(SrqType::LinkedList).unwrap();
    assert!(s.destroy().is_ok());
}

/// `doca_rdma_create_with_srq`: `BAD_STATE` unless the queue runs; the context's receive
/// settings are `BAD_STATE` (the header), its receive configuration `INVALID_VALUE` and a
/// receive allocation `NO_MEMORY` (ours: no CPU receives); the queue stopped under a running
/// user stays Stopping (destroy `BAD_STATE`) until the user stops; a user whose queue is
/// gone cannot start.
#[test]
fn doca_rdma_create_with_srq_and_the_queue_s_life() {
    let d = dev();
    let pe = Pe::create().unwrap();
    let s = Srq::create(&d).unwrap();
    assert_eq!(Rdma::create_with_srq(&d, &s).err(), Some(Error::BadState), "the queue is not started");
    pe.connect_ctx(&s.as_ctx()).unwrap();
    s.as_ctx().start().unwrap();
    let other = open_device_with_pci("b1:00.0", None).unwrap();
    assert_eq!(Rdma::create_with_srq(&other, &s).err(), Some(Error::InvalidValue), "another device's queue");
    let r = Rdma::create_with_srq(&d, &s).unwrap();
    assert!(r.has_srq() && !Rdma::create(&d).unwrap().has_srq());
    assert_eq!(r.set_recv_queue_size(16), Err(Error::BadState));
    assert_eq!(r.set_recv_buf_list_len(1), Err(Error::BadState));
    let e = r.task_receive_set_conf(|_: ReceiveTask, _, _| {}, |_: ReceiveTask, _, _| {}, 4);
    assert_eq!(e, Err(Error::InvalidValue));
    r.task_send_set_conf(|_: SendTask, _, _| {}, |_: SendTask, _, _| {}, 4).unwrap();
    r.set_send_queue_size(32).unwrap();
    pe.connect_ctx(&r.as_ctx()).unwrap();
    r.as_ctx().start().unwrap();
    assert_eq!(r.task_receive_alloc_init(None, Data::NONE).err(), Some(Error::NoMemory));
    assert_eq!(s.num_running_users(), 1);
    assert_eq!(s.as_ctx().stop(), Err(Error::InProgress), "its user runs");
    assert_eq!(s.as_ctx().state(), CtxState::Stopping);
    pe.progress();
    assert_eq!(s.as_ctx().state(), CtxState::Stopping, "still");
    let s = s.destroy().expect_err("stopping: BAD_STATE").into_inner();
    r.as_ctx().stop().unwrap();
    until(&pe, || s.as_ctx().state() == CtxState::Idle);
    assert!(s.destroy().is_ok());
    assert_eq!(r.as_ctx().start(), Err(Error::BadState), "its queue is destroyed");
    assert_eq!(r.as_ctx().state(), CtxState::Idle);
    assert!(r.destroy().is_ok());
}

/// A context with a shared receive queue sends as any context, and receives nothing on the
/// CPU: the peer's send to it is answered receiver-not-ready (`TIME_OUT` with
/// `rnr_retry_count` 0).
#[test]
fn doca_rdma_with_srq_sends_and_takes_no_cpu_receive() {
    let d = dev();
    let pe = Pe::create().unwrap();
    let s = Srq::create(&d).unwrap();
    pe.connect_ctx(&s.as_ctx()).unwrap();
    s.as_ctx().start().unwrap();
    let seen: Seen = Rc::default();
    let a = Rdma::create_with_srq(&d, &s).unwrap();
    let (x, y) = (seen.clone(), seen.clone());
    a.task_send_set_conf(
        move |_t: SendTask, _, _| x.borrow_mut().push(("a send", Ok(()))),
        move |t: SendTask, _, _| y.borrow_mut().push(("a send", t.status())),
        4,
    )
    .unwrap();
    let b = Rdma::create(&d).unwrap();
    b.set_rnr_retry_count(0).unwrap();
    conf(&b, &seen);
    for r in [&a, &b] {
        pe.connect_ctx(&r.as_ctx()).unwrap();
        r.as_ctx().start().unwrap();
    }
    let (da, ca) = a.export().unwrap();
    let (db, cb) = b.export().unwrap();
    a.connect(&db, ca).unwrap();
    b.connect(&da, cb).unwrap();
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![0u8; 4096]).unwrap();
    local.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    local.add_dev(&d).unwrap();
    local.start().unwrap();
    let inv = started_inventory(4);
    let room = inv.buf_get_at(&local, 1024, 64).unwrap();
    b.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
    let src = inv.buf_get_at(&local, 0, 8).unwrap();
    src.append(b"from srq").unwrap();
    a.task_send_alloc_init(ca, Some(&src), Data::NONE).unwrap().submit().unwrap();
    until(&pe, || seen.borrow().len() >= 2);
    assert!(seen.borrow().contains(&("a send", Ok(()))), "{:?}", seen.borrow());
    assert!(seen.borrow().contains(&("recv", Ok(()))), "{:?}", seen.borrow());
    assert_eq!(room.data_to_vec().unwrap(), b"from srq");
    let back = inv.buf_get_at(&local, 2048, 8).unwrap();
    back.append(b"to srq").unwrap();
    b.task_send_alloc_init(cb, Some(&back), Data::NONE).unwrap().submit().unwrap();
    until(&pe, || seen.borrow().len() >= 3);
    assert_eq!(seen.borrow()[2], ("send", Err(Error::TimeOut)), "no receive on the CPU");
}
