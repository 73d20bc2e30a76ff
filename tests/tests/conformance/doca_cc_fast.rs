//! `doca_cc_consumer.h` and `doca_cc_producer.h`: creation on a connection, ids, the
//! capability queries, task configuration and allocation, and a transfer's results.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_cc::{caps, Client, Connection, Consumer, PostRecvTask, Producer, ProducerSendTask, Server};
use doca_core::{open_device_rep_with_pci, open_device_with_pci, CtxState, Error, Pe, RepFilter, Topology};
use doca_mmap::{AccessFlags, Mmap, SharedMem};

use crate::support::{unique, until};

/// A server and a client connected on one engine, and the consumer events each side saw
/// (new: true, expired: false).
struct Pair {
    pe: Pe,
    server: Server,
    client: Client,
    client_saw: Rc<RefCell<Vec<(bool, u32)>>>,
}

fn pair() -> Pair {
    let name = unique("pair");
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0").unwrap();
    let pe = Pe::create().unwrap();
    let server = Server::create(&dev, &rep, &name).unwrap();
    pe.connect_ctx(&server.as_ctx()).unwrap();
    server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    server.event_msg_recv_register(|_, _| {}).unwrap();
    server.event_connection_register(|_, _| {}, |_, _| {}).unwrap();
    server.as_ctx().start().unwrap();
    let client = Client::create(&open_device_with_pci("b1:00.0", None).unwrap(), &name).unwrap();
    pe.connect_ctx(&client.as_ctx()).unwrap();
    client.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    client.event_msg_recv_register(|_, _| {}).unwrap();
    let client_saw: Rc<RefCell<Vec<(bool, u32)>>> = Rc::default();
    let (a, b) = (client_saw.clone(), client_saw.clone());
    client
        .event_consumer_register(
            move |_, id| a.borrow_mut().push((true, id)),
            move |_, id| b.borrow_mut().push((false, id)),
        )
        .unwrap();
    let _ = client.as_ctx().start();
    until(&pe, || client.as_ctx().state() == CtxState::Running);
    Pair { pe, server, client, client_saw }
}

/// Bytes a consumer received and the producer that sent them.
type Received = (Vec<u8>, u32);

fn consumer_map(len: usize) -> Mmap {
    let map = Mmap::create().unwrap();
    map.set_memrange(SharedMem::alloc(len).unwrap()).unwrap();
    map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.start().unwrap();
    map
}

fn server_conn(p: &Pair) -> Connection {
    p.server.connections().pop().unwrap()
}

#[test]
fn doca_cc_consumer_cap_is_supported_and_producer_cap_is_supported() {
    for pci in ["03:00.0", "b1:00.0"] {
        let dev = open_device_with_pci(pci, None).unwrap();
        assert_eq!(caps::consumer_is_supported(dev.as_devinfo()), Ok(()), "both sides");
        assert_eq!(caps::producer_is_supported(dev.as_devinfo()), Ok(()));
    }
    let t = Topology::parse("t", "device b1:00.0 host\ncap cc.fast_path 0\n").unwrap();
    let info = &t.devinfo_list().unwrap()[0];
    assert_eq!(caps::consumer_is_supported(info), Err(Error::NotSupported));
    assert_eq!(caps::producer_is_supported(info), Err(Error::NotSupported));
}

#[test]
fn doca_cc_consumer_cap_get_max_num_tasks_buf_size_consumers_and_producer_caps() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let info = dev.as_devinfo();
    assert_eq!(caps::get(info, &caps::MAX_FAST_PATH_TASKS), Ok(16384));
    assert_eq!(caps::get(info, &caps::MAX_BUF_SIZE), Ok(1 << 30));
    assert_eq!(caps::get(info, &caps::MAX_CONSUMERS), Ok(256));
    assert_eq!(caps::get(info, &caps::MAX_PRODUCERS), Ok(256));
}

#[test]
fn doca_cc_consumer_create_refusals() {
    let p = pair();
    let conn = server_conn(&p);
    let no_pci = Mmap::create().unwrap();
    no_pci.set_memrange(vec![0u8; 4096]).unwrap();
    no_pci.start().unwrap();
    assert_eq!(Consumer::create(&conn, &no_pci).unwrap_err(), Error::NotPermitted, "no PCI_READ_WRITE");
    let not_started = Mmap::create().unwrap();
    not_started.set_memrange(vec![0u8; 4096]).unwrap();
    not_started.set_permissions(AccessFlags::PCI_READ_WRITE).unwrap();
    assert_eq!(Consumer::create(&conn, &not_started).unwrap_err(), Error::BadState, "map not started");
    let map = consumer_map(4096);
    let max = caps::get(conn.dev().as_devinfo(), &caps::MAX_CONSUMERS).unwrap() as usize;
    let all: Vec<Consumer> = (0..max).map(|_| Consumer::create(&conn, &map).unwrap()).collect();
    assert_eq!(Consumer::create(&conn, &map).unwrap_err(), Error::NoMemory, "beyond the capability");
    drop(all);
    let _ = p.client.as_ctx().stop();
    until(&p.pe, || !conn.is_connected());
    assert_eq!(Consumer::create(&conn, &map).unwrap_err(), Error::BadState, "the connection is down");
}

#[test]
fn doca_cc_consumer_get_id_unique_per_connection_and_never_zero() {
    let p = pair();
    let conn = server_conn(&p);
    let map = consumer_map(4096);
    let ids: Vec<u32> = (0..8).map(|_| Consumer::create(&conn, &map).unwrap().id()).collect();
    assert!(ids.iter().all(|&id| id != 0));
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), ids.len(), "unique");
}

#[test]
fn doca_cc_consumer_start_is_asynchronous_and_announces_the_consumer_destroy_expires_it() {
    let p = pair();
    let conn = server_conn(&p);
    let map = consumer_map(4096);
    let consumer = Consumer::create(&conn, &map).unwrap();
    p.pe.connect_ctx(&consumer.as_ctx()).unwrap();
    assert_eq!(consumer.as_ctx().start(), Err(Error::InvalidValue), "no task configuration");
    assert_eq!(consumer.task_post_recv_set_conf(|_, _, _| {}, |_, _, _| {}, 16385), Err(Error::InvalidValue));
    consumer.task_post_recv_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    assert_eq!(consumer.as_ctx().start(), Err(Error::InProgress));
    assert_eq!(consumer.as_ctx().state(), CtxState::Starting);
    assert_eq!(
        consumer.task_post_recv_set_conf(|_, _, _| {}, |_, _, _| {}, 4),
        Err(Error::BadState),
        "not Idle"
    );
    until(&p.pe, || consumer.as_ctx().state() == CtxState::Running && !p.client_saw.borrow().is_empty());
    let id = consumer.id();
    assert_eq!(*p.client_saw.borrow(), [(true, id)], "the peer's new-consumer event carries the id");
    let refused = consumer.destroy().unwrap_err();
    assert_eq!(refused.error, Error::BadState, "destroy while Running");
    let consumer = refused.into_inner();
    let _ = consumer.as_ctx().stop();
    until(&p.pe, || consumer.as_ctx().state() == CtxState::Idle);
    assert_eq!(p.client_saw.borrow().len(), 1, "a stop does not expire the consumer");
    consumer.destroy().map_err(|r| r.error).unwrap();
    until(&p.pe, || p.client_saw.borrow().len() == 2);
    assert_eq!(p.client_saw.borrow()[1], (false, id), "destroy expires it");
}

#[test]
fn doca_cc_consumer_task_post_recv_alloc_init_get_buf_set_buf() {
    let p = pair();
    let conn = server_conn(&p);
    let map = consumer_map(8192);
    let other = consumer_map(64);
    let consumer = Consumer::create(&conn, &map).unwrap();
    p.pe.connect_ctx(&consumer.as_ctx()).unwrap();
    consumer.task_post_recv_set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    let inside = inv.buf_get_at(&map, 0, 64).unwrap();
    assert_eq!(consumer.task_post_recv_alloc_init(&inside).unwrap_err(), Error::BadState, "not Running");
    let _ = consumer.as_ctx().start();
    until(&p.pe, || consumer.as_ctx().state() == CtxState::Running);
    let outside = inv.buf_get_at(&other, 0, 64).unwrap();
    assert_eq!(
        consumer.task_post_recv_alloc_init(&outside).unwrap_err(),
        Error::InvalidValue,
        "not in the map"
    );
    let full = inv.buf_get_data_at(&map, 100, 16).unwrap();
    assert_eq!(consumer.task_post_recv_alloc_init(&full).unwrap_err(), Error::InvalidValue, "no room");
    let task = consumer.task_post_recv_alloc_init(&inside).unwrap();
    assert_eq!(task.buf(), inside, "doca_cc_consumer_task_post_recv_get_buf");
    assert_eq!(task.producer_id(), 0, "no producer before completion");
    assert_eq!(consumer.task_post_recv_alloc_init(&inside).unwrap_err(), Error::NoMemory, "pool of 1");
    let second = inv.buf_get_at(&map, 4096, 64).unwrap();
    consumer.task_post_recv_set_buf(&task, &second).unwrap();
    assert_eq!(task.buf(), second);
    assert_eq!(consumer.task_post_recv_set_buf(&task, &outside), Err(Error::InvalidValue));
}

#[test]
fn doca_comch_server_disconnect_with_a_consumer_or_producer_on_the_connection_is_in_use() {
    let p = pair();
    let sconn = server_conn(&p);
    let producer = Producer::create(&sconn).unwrap();
    assert_eq!(p.server.disconnect(&sconn), Err(Error::InUse), "a producer of the server's on it");
    drop(producer);
    let consumer = Consumer::create(&sconn, &consumer_map(4096)).unwrap();
    assert_eq!(p.server.disconnect(&sconn), Err(Error::InUse), "a consumer of the server's on it");
    drop(consumer);
    // The client's own producer is not the server's: it does not hold the disconnection back.
    let _theirs = Producer::create(&p.client.get_connection().unwrap()).unwrap();
    assert_eq!(p.server.disconnect(&sconn), Ok(()));
    until(&p.pe, || p.client.as_ctx().state() == CtxState::Idle);
}

#[test]
fn doca_cc_producer_create_get_id_start_and_destroy() {
    let p = pair();
    let cconn = p.client.get_connection().unwrap();
    let producer = Producer::create(&cconn).unwrap();
    assert_ne!(producer.id(), 0);
    assert_ne!(Producer::create(&cconn).unwrap().id(), producer.id(), "unique per connection");
    p.pe.connect_ctx(&producer.as_ctx()).unwrap();
    assert_eq!(producer.as_ctx().start(), Err(Error::InvalidValue), "no task configuration");
    assert_eq!(producer.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 16385), Err(Error::InvalidValue));
    producer.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 2).unwrap();
    assert_eq!(producer.as_ctx().start(), Ok(()), "a producer starts synchronously");
    let refused = producer.destroy().unwrap_err();
    assert_eq!(refused.error, Error::BadState, "Running");
    let producer = refused.into_inner();
    producer.as_ctx().stop().unwrap();
    producer.destroy().map_err(|r| r.error).unwrap();
    let max = caps::get(cconn.dev().as_devinfo(), &caps::MAX_PRODUCERS).unwrap() as usize;
    let all: Vec<Producer> = (0..max).map(|_| Producer::create(&cconn).unwrap()).collect();
    assert_eq!(Producer::create(&cconn).unwrap_err(), Error::NoMemory, "beyond the capability");
    drop(all);
    let _ = p.client.as_ctx().stop();
    until(&p.pe, || !cconn.is_connected());
    assert_eq!(Producer::create(&cconn).unwrap_err(), Error::BadState, "the connection is down");
}

#[test]
fn doca_cc_producer_task_send_alloc_init_get_set_buf_get_set_consumer_id_and_the_transfer() {
    let p = pair();
    let map = consumer_map(8192);
    let consumer = Consumer::create(&server_conn(&p), &map).unwrap();
    p.pe.connect_ctx(&consumer.as_ctx()).unwrap();
    let got: Rc<RefCell<Vec<Received>>> = Rc::default();
    let g = got.clone();
    consumer
        .task_post_recv_set_conf(
            move |t: PostRecvTask, _, _| {
                g.borrow_mut().push((t.buf().data_to_vec().unwrap(), t.producer_id()));
                t.buf().dec_refcount().unwrap();
            },
            |_, _, _| {},
            2,
        )
        .unwrap();
    let _ = consumer.as_ctx().start();
    until(&p.pe, || consumer.as_ctx().state() == CtxState::Running && !p.client_saw.borrow().is_empty());
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    consumer
        .task_post_recv_alloc_init(&inv.buf_get_at(&map, 0, 64).unwrap())
        .unwrap()
        .submit()
        .map_err(|r| r.error)
        .unwrap();

    let producer = Producer::create(&p.client.get_connection().unwrap()).unwrap();
    p.pe.connect_ctx(&producer.as_ctx()).unwrap();
    let sent: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
    let (s1, s2) = (sent.clone(), sent.clone());
    producer
        .task_send_set_conf(
            move |t: ProducerSendTask, _, _| s1.borrow_mut().push(t.status()),
            move |t: ProducerSendTask, _, _| s2.borrow_mut().push(t.status()),
            2,
        )
        .unwrap();
    producer.as_ctx().start().unwrap();
    let src = Mmap::create().unwrap();
    src.set_memrange("hello, consumer".as_bytes()).unwrap();
    src.start().unwrap();
    let hello = inv.buf_get_data_at(&src, 0, 15).unwrap();
    assert_eq!(
        producer.task_send_alloc_init(&hello, 0xdead).unwrap_err(),
        Error::InvalidValue,
        "an unknown consumer"
    );
    // An empty buffer is taken at allocation (NVIDIA's storage application fills it later)
    // and refused at submission while empty.
    let empty = inv.buf_get_at(&src, 0, 4).unwrap();
    let refused = producer.task_send_alloc_init(&empty, consumer.id()).unwrap().submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue, "no data");
    refused.into_inner().free();
    let task = producer.task_send_alloc_init(&hello, consumer.id()).unwrap();
    assert_eq!((task.buf(), task.consumer_id()), (hello.clone(), consumer.id()));
    task.set_consumer_id(0xdead);
    assert_eq!(task.consumer_id(), 0xdead);
    let task = task.submit().unwrap_err();
    assert_eq!(task.error, Error::InvalidValue, "the submit checks the consumer id");
    let task = task.value;
    task.set_consumer_id(consumer.id());
    task.set_buf(&empty);
    let task = task.submit().unwrap_err();
    assert_eq!(task.error, Error::InvalidValue, "the submit checks the buffer");
    let task = task.value;
    task.set_buf(&hello);
    task.submit().map_err(|r| r.error).unwrap();
    until(&p.pe, || !got.borrow().is_empty() && !sent.borrow().is_empty());
    assert_eq!(
        *got.borrow(),
        [(b"hello, consumer".to_vec(), producer.id())],
        "get_producer_id on completion"
    );
    assert_eq!(*sent.borrow(), [Ok(())]);
}

/// A consumer whose memory is more than the server maps of its client process for one
/// connection (`cap peer.mem_per_conn` on the server's side): the server refuses it
/// (`NO_MEMORY` on the wire) and its start fails (Starting → Idle) while the connection stays
/// up; a consumer within the budget then runs. (The client is another process: a process is
/// not budgeted against itself.)
#[test]
fn doca_cc_consumer_start_beyond_the_peers_budget_fails() {
    let topology = std::env::temp_dir().join(format!("{}.topology", unique("budget")));
    let text = format!("{}\ncap peer.mem_per_conn 1M\n", doca_core::topology::DEFAULT_TOPOLOGY);
    std::fs::write(&topology, text).unwrap();
    doca_tests::in_fresh_process!(&[(doca_core::TOPOLOGY_ENV, Some(topology.to_str().unwrap()))]);
    const FP_PEER: &str = env!("CARGO_BIN_EXE_fp_peer");
    let name = unique("budget");
    let h = doca_tests::harness::harness(&name, false);
    let wait = |peer: &doca_tests::Peer| {
        let mut line = None;
        doca_tests::harness::until(&h.pe, "the client's consumer", || {
            line = line.take().or_else(|| peer.try_line());
            line.is_some()
        });
        line.unwrap()
    };
    // 2 buffers of 1 MiB: 2 MiB of shared memory.
    let big = doca_tests::Peer::spawn(FP_PEER, &[&name, "1", "1048576", "2", "shared", "1"]);
    assert_eq!(wait(&big), "refused connected=true");
    assert!(h.consumers.borrow().is_empty(), "no new-consumer event");
    let small = doca_tests::Peer::spawn(FP_PEER, &[&name, "1", "4096", "4", "shared", "1"]);
    assert!(wait(&small).starts_with("consumers "));
    assert_eq!(h.consumers.borrow().len(), 1);
    assert!(h.disconnected.borrow().is_empty(), "both connections stay up");
    drop((big, small));
    let _ = std::fs::remove_file(&topology);
}
