//! The fast path in one process: producers and consumers on their own progress engines.

mod common;
use common::{unique, until};

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use doca_buf::Inventory;
use doca_cc::{
    Client, Connection, Consumer, FastPathStats, PostRecvTask, Producer, ProducerSendTask, Server,
};
use doca_core::{
    open_device_rep_with_pci, open_device_with_pci, CtxState, Error, Pe, RepFilter, TaskSubmitFlags,
};
use doca_mmap::{AccessFlags, Memory, Mmap, SharedMem};

struct Pair {
    spe: Pe,
    cpe: Pe,
    server: Server,
    client: Client,
    remote_consumers: Rc<RefCell<Vec<(bool, u32)>>>,
    /// The client's next new-consumer (`Some(true)`) or expired-consumer (`Some(false)`)
    /// callback panics, after recording its event.
    panic_next: Rc<Cell<Option<bool>>>,
}

fn pair() -> Pair {
    let name = unique("fast");
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0").unwrap();
    let spe = Pe::create().unwrap();
    let server = Server::create(&dev, &rep, &name).unwrap();
    spe.connect_ctx(&server.as_ctx()).unwrap();
    server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 16).unwrap();
    server.event_msg_recv_register(|_, _| {}).unwrap();
    server.event_connection_register(|_, _| {}, |_, _| {}).unwrap();
    server.as_ctx().start().unwrap();
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    let cpe = Pe::create().unwrap();
    let client = Client::create(&host, &name).unwrap();
    cpe.connect_ctx(&client.as_ctx()).unwrap();
    client.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 16).unwrap();
    client.event_msg_recv_register(|_, _| {}).unwrap();
    let remote_consumers: Rc<RefCell<Vec<(bool, u32)>>> = Rc::default();
    let (a, b) = (remote_consumers.clone(), remote_consumers.clone());
    let panic_next: Rc<Cell<Option<bool>>> = Rc::default();
    let (pa, pb) = (panic_next.clone(), panic_next.clone());
    client
        .event_consumer_register(
            move |_, id| {
                a.borrow_mut().push((true, id));
                if pa.get() == Some(true) {
                    pa.set(None);
                    panic!("the application's new-consumer callback fails");
                }
            },
            move |_, id| {
                b.borrow_mut().push((false, id));
                if pb.get() == Some(false) {
                    pb.set(None);
                    panic!("the application's expired-consumer callback fails");
                }
            },
        )
        .unwrap();
    let _ = client.as_ctx().start();
    until(&[&spe, &cpe], || client.as_ctx().state() == CtxState::Running);
    Pair { spe, cpe, server, client, remote_consumers, panic_next }
}

fn consumer_map(memory: Memory) -> Mmap {
    let map = Mmap::create().unwrap();
    map.set_memrange(memory).unwrap();
    map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.start().unwrap();
    map
}

/// A consumer on `conn` over `map` with `tasks` post-receive tasks, on its own engine; it
/// counts the buffers filled (and gives each back).
fn counting_consumer(conn: &Connection, map: &Mmap, tasks: u32) -> (Consumer, Pe, Rc<RefCell<usize>>) {
    let pe = Pe::create().unwrap();
    let consumer = Consumer::create(conn, map).unwrap();
    pe.connect_ctx(&consumer.as_ctx()).unwrap();
    let got = Rc::new(RefCell::new(0usize));
    let g = got.clone();
    consumer
        .task_post_recv_set_conf(
            move |t: PostRecvTask, _, _| {
                *g.borrow_mut() += 1;
                t.buf().dec_refcount().unwrap();
            },
            |t: PostRecvTask, _, _| {
                t.buf().dec_refcount().unwrap();
            },
            tasks,
        )
        .unwrap();
    (consumer, pe, got)
}

type Received = Rc<RefCell<Vec<(Vec<u8>, u32, Vec<u8>)>>>;

/// Runs a transfer; returns the fast-path counters of the producer's and of the consumer's
/// side of the connection.
fn run_transfer(memory: Memory) -> (FastPathStats, FastPathStats) {
    let p = pair();
    let sconn: Connection = p.server.connections().pop().unwrap();
    let map = consumer_map(memory);
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    let cons_pe = Pe::create().unwrap();
    let consumer = Consumer::create(&sconn, &map).unwrap();
    assert_ne!(consumer.id(), 0);
    cons_pe.connect_ctx(&consumer.as_ctx()).unwrap();
    let got: Received = Rc::default();
    let g = got.clone();
    let flushed: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
    let f = flushed.clone();
    consumer
        .task_post_recv_set_conf(
            move |t: PostRecvTask, _, _| {
                let buf = t.buf();
                g.borrow_mut().push((buf.data_to_vec().unwrap(), t.producer_id(), t.imm_data().to_vec()));
                buf.dec_refcount().unwrap();
            },
            move |t: PostRecvTask, _, _| {
                f.borrow_mut().push(t.status());
                t.buf().dec_refcount().unwrap();
            },
            4,
        )
        .unwrap();
    assert_eq!(consumer.as_ctx().start(), Err(Error::InProgress));
    until(&[&p.spe, &p.cpe, &cons_pe], || consumer.as_ctx().state() == CtxState::Running);
    until(&[&p.spe, &p.cpe], || !p.remote_consumers.borrow().is_empty());
    assert_eq!(*p.remote_consumers.borrow(), [(true, consumer.id())]);

    // Post two buffers; the first already holds data ("> ") to append after.
    let b1 = inv.buf_get_at(&map, 0, 64).unwrap();
    b1.append(b"> ").unwrap();
    consumer.task_post_recv_alloc_init(&b1).unwrap().submit().unwrap();
    let b2 = inv.buf_get_at(&map, 4096, 8).unwrap();
    consumer.task_post_recv_alloc_init(&b2).unwrap().submit().unwrap();

    // The producer on the client side, with its own engine.
    let cconn = p.client.get_connection().unwrap();
    let prod_pe = Pe::create().unwrap();
    let producer = Producer::create(&cconn).unwrap();
    prod_pe.connect_ctx(&producer.as_ctx()).unwrap();
    let sent: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
    let (s1, s2) = (sent.clone(), sent.clone());
    producer
        .task_send_set_conf(
            move |t: ProducerSendTask, _, _| s1.borrow_mut().push(t.status()),
            move |t, _, _| s2.borrow_mut().push(t.status()),
            4,
        )
        .unwrap();
    producer.as_ctx().start().unwrap();
    let src_map = Mmap::create().unwrap();
    src_map.set_memrange("hello fast pathtoo long for 8".as_bytes()).unwrap();
    src_map.start().unwrap();
    let src_inv = Inventory::create(4).unwrap();
    src_inv.start().unwrap();
    let hello = src_inv.buf_get_data_at(&src_map, 0, 15).unwrap();
    let long = src_inv.buf_get_data_at(&src_map, 15, 14).unwrap();
    assert_eq!(
        producer.task_send_alloc_init(&hello, 999).unwrap_err(),
        Error::InvalidValue,
        "unknown consumer"
    );
    // An empty buffer is taken at allocation (it may be filled before the submission), and
    // refused at submission while still empty.
    let empty = src_inv.buf_get_at(&src_map, 0, 4).unwrap();
    let refused = producer.task_send_alloc_init(&empty, consumer.id()).unwrap().submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue, "zero length");
    refused.into_inner().free();
    assert_eq!(
        producer.task_send_alloc_init_imm(&hello, &[0u8; 33], consumer.id()).unwrap_err(),
        Error::InvalidValue,
        "too much immediate data"
    );
    let before = cconn.fast_path_stats();
    producer.task_send_alloc_init_imm(&hello, b"imm", consumer.id()).unwrap().submit().unwrap();
    until(&[&p.spe, &p.cpe, &cons_pe, &prod_pe], || got.borrow().len() == 1 && sent.borrow().len() == 1);
    assert_eq!(got.borrow()[0], (b"> hello fast path".to_vec(), producer.id(), b"imm".to_vec()));
    // Too long for the second buffer (8 bytes): an error, nothing delivered.
    producer.task_send_alloc_init(&long, consumer.id()).unwrap().submit().unwrap();
    until(&[&p.spe, &p.cpe, &cons_pe, &prod_pe], || sent.borrow().len() == 2);
    assert_eq!(sent.borrow()[1], Err(Error::InvalidValue));
    assert_eq!(got.borrow().len(), 1, "no partial delivery");
    let after = cconn.fast_path_stats();
    assert!(after.one_copy_sends + after.staged_sends > before.one_copy_sends + before.staged_sends);

    // Stopping the consumer flushes its posted buffer; the peer stops using it, but it is
    // not expired: only destroying it is.
    consumer.as_ctx().stop().unwrap_err();
    until(&[&p.spe, &p.cpe, &cons_pe], || consumer.as_ctx().state() == CtxState::Idle);
    assert_eq!(*flushed.borrow(), [Err(Error::Shutdown)], "the buffer still posted is flushed at stop");
    until(&[&p.spe, &p.cpe], || producer.task_send_alloc_init(&hello, consumer.id()).is_err());
    assert_eq!(producer.task_send_alloc_init(&hello, consumer.id()).unwrap_err(), Error::InvalidValue);
    assert_eq!(p.remote_consumers.borrow().len(), 1, "a stopped consumer does not expire");
    let id = consumer.id();
    consumer.destroy().unwrap();
    until(&[&p.spe, &p.cpe], || p.remote_consumers.borrow().len() == 2);
    assert_eq!(p.remote_consumers.borrow()[1], (false, id), "destroying it does");
    (cconn.fast_path_stats(), sconn.fast_path_stats())
}

#[test]
fn shared_memory_consumer_gets_one_copy_sends() {
    let (producer_side, consumer_side) = run_transfer(Memory::from(SharedMem::alloc(1 << 16).unwrap()));
    assert_eq!((producer_side.one_copy_sends, producer_side.staged_sends), (1, 0));
    assert_eq!(consumer_side.staged_copies, 0);
}

#[test]
fn plain_memory_consumer_works_through_the_shadow() {
    let (producer_side, consumer_side) = run_transfer(Memory::from(vec![0u8; 1 << 16]));
    assert_eq!((producer_side.one_copy_sends, producer_side.staged_sends), (0, 1));
    assert_eq!(consumer_side.staged_copies, 1);
}

/// Bytes received and the producer that sent them.
type Message = (Vec<u8>, u32);

#[test]
fn two_producers_share_one_connection_and_one_engine() {
    let p = pair();
    let sconn: Connection = p.server.connections().pop().unwrap();
    let map = consumer_map(Memory::Shared(SharedMem::alloc(4096).unwrap()));
    let inv = Inventory::create(2).unwrap();
    inv.start().unwrap();
    let consumer = Consumer::create(&sconn, &map).unwrap();
    p.spe.connect_ctx(&consumer.as_ctx()).unwrap();
    let got: Rc<RefCell<Vec<Message>>> = Rc::default();
    let g = got.clone();
    consumer
        .task_post_recv_set_conf(
            move |t: PostRecvTask, _, _| {
                let buf = t.buf();
                g.borrow_mut().push((buf.data_to_vec().unwrap(), t.producer_id()));
                buf.dec_refcount().unwrap();
            },
            |t: PostRecvTask, _, _| panic!("receive failed: {:?}", t.status()),
            2,
        )
        .unwrap();
    let _ = consumer.as_ctx().start();
    until(&[&p.spe, &p.cpe], || consumer.as_ctx().state() == CtxState::Running);
    until(&[&p.spe, &p.cpe], || !p.remote_consumers.borrow().is_empty());
    for at in [0, 2048] {
        let buf = inv.buf_get_at(&map, at, 2048).unwrap();
        consumer.task_post_recv_alloc_init(&buf).unwrap().submit().unwrap();
    }

    let cconn = p.client.get_connection().unwrap();
    let producers = [Producer::create(&cconn).unwrap(), Producer::create(&cconn).unwrap()];
    for producer in &producers {
        p.cpe.connect_ctx(&producer.as_ctx()).unwrap();
        producer
            .task_send_set_conf(|_, _, _| {}, |t, _, _| panic!("send failed: {:?}", t.status()), 2)
            .unwrap();
        producer.as_ctx().start().unwrap();
    }
    let src = Mmap::create().unwrap();
    src.set_memrange("onetwo".as_bytes()).unwrap();
    src.start().unwrap();
    let src_inv = Inventory::create(2).unwrap();
    src_inv.start().unwrap();
    for (producer, at) in producers.iter().zip([0, 3]) {
        let buf = src_inv.buf_get_data_at(&src, at, 3).unwrap();
        producer.task_send_alloc_init(&buf, consumer.id()).unwrap().submit().unwrap();
    }
    until(&[&p.spe, &p.cpe], || got.borrow().len() == 2);
    let mut got = got.borrow().clone();
    got.sort();
    assert_eq!(got, [(b"one".to_vec(), producers[0].id()), (b"two".to_vec(), producers[1].id())]);
}

#[test]
fn a_restarted_consumer_still_wakes_its_sleeping_engine() {
    let p = pair();
    let sconn: Connection = p.server.connections().pop().unwrap();
    let map = consumer_map(Memory::Shared(SharedMem::alloc(4096).unwrap()));
    let inv = Inventory::create(4).unwrap();
    inv.start().unwrap();
    let (consumer, cons_pe, got) = counting_consumer(&sconn, &map, 2);
    // Start and stop it again and again: each run has a new doorbell (its old registration
    // goes with the old one) and the kernel reuses descriptor numbers meanwhile — an epoll
    // set keyed by numbers missed some of the new doorbells (eight restarts showed it).
    for _ in 0..8 {
        let _ = consumer.as_ctx().start();
        until(&[&p.spe, &p.cpe, &cons_pe], || consumer.as_ctx().state() == CtxState::Running);
        let _ = consumer.as_ctx().stop();
        until(&[&p.spe, &p.cpe, &cons_pe], || consumer.as_ctx().state() == CtxState::Idle);
    }
    let _ = consumer.as_ctx().start();
    until(&[&p.spe, &p.cpe, &cons_pe], || consumer.as_ctx().state() == CtxState::Running);
    let buf = inv.buf_get_at(&map, 0, 64).unwrap();
    consumer.task_post_recv_alloc_init(&buf).unwrap().submit().unwrap();

    let cconn = p.client.get_connection().unwrap();
    // Nine runs of one consumer: one new-consumer event, no expiry (it was never destroyed).
    until(&[&p.spe, &p.cpe], || consumer_known(&p, 1));
    assert_eq!(*p.remote_consumers.borrow(), [(true, consumer.id())]);
    let prod_pe = Pe::create().unwrap();
    let producer = Producer::create(&cconn).unwrap();
    prod_pe.connect_ctx(&producer.as_ctx()).unwrap();
    producer.task_send_set_conf(|_, _, _| {}, |t, _, _| panic!("send failed: {:?}", t.status()), 2).unwrap();
    producer.as_ctx().start().unwrap();
    let src = Mmap::create().unwrap();
    src.set_memrange("wake up".as_bytes()).unwrap();
    src.start().unwrap();
    let msg = inv.buf_get_data_at(&src, 0, 7).unwrap();

    // The consumer's application goes to sleep; the producer sends meanwhile.
    while cons_pe.progress() {}
    cons_pe.request_notification().unwrap();
    producer.task_send_alloc_init(&msg, consumer.id()).unwrap().submit().unwrap();
    until(&[&prod_pe], || prod_pe.num_inflight_tasks() == 0);
    let mut events = [rustix::event::epoll::Event {
        flags: rustix::event::epoll::EventFlags::empty(),
        data: rustix::event::epoll::EventData::new_u64(0),
    }; 4];
    let ten_s = rustix::time::Timespec { tv_sec: 10, tv_nsec: 0 };
    let woke =
        rustix::event::epoll::wait(cons_pe.notification_handle(), &mut events[..], Some(&ten_s)).unwrap();
    assert_eq!(woke, 1, "the sleeping consumer engine was woken");
    cons_pe.clear_notification().unwrap();
    until(&[&cons_pe], || *got.borrow() == 1);
}

/// Whether the client side has seen (at least) `n` consumer events.
fn consumer_known(p: &Pair, n: usize) -> bool {
    p.remote_consumers.borrow().len() >= n
}

/// A consumer on the server's end of `p`'s connection, receiving into `map` with `tasks`
/// post-receive tasks, Running.
fn running_consumer(
    p: &Pair,
    map: &Mmap,
    tasks: u32,
    on: impl FnMut(PostRecvTask) + 'static,
) -> (Pe, Consumer) {
    let sconn: Connection = p.server.connections().pop().unwrap();
    let pe = Pe::create().unwrap();
    let consumer = Consumer::create(&sconn, map).unwrap();
    pe.connect_ctx(&consumer.as_ctx()).unwrap();
    let mut on = on;
    consumer
        .task_post_recv_set_conf(
            move |t, _, _| on(t),
            |t: PostRecvTask, _, _| panic!("{:?}", t.status()),
            tasks,
        )
        .unwrap();
    let _ = consumer.as_ctx().start();
    until(&[&p.spe, &p.cpe, &pe], || consumer.as_ctx().state() == CtxState::Running);
    (pe, consumer)
}

/// One producer task and one post-receive task, each resubmitted from its completion
/// callback, carry 100 000 messages.
#[test]
fn one_task_per_side_recycled_from_its_completion_callback_carries_100k_fast_path_messages() {
    use std::cell::Cell;
    const N: u64 = 100_000;
    let p = pair();
    let map = consumer_map(Memory::Shared(SharedMem::alloc(4096).unwrap()));
    let inv = Rc::new(Inventory::create(4).unwrap());
    inv.start().unwrap();
    let received = Rc::new(Cell::new(0u64));
    let r = received.clone();
    let (cons_pe, consumer) = running_consumer(&p, &map, 1, move |task| {
        assert_eq!(task.buf().data_to_vec().unwrap(), b"fast");
        r.set(r.get() + 1);
        if r.get() < N {
            task.buf().reset_data_len().unwrap();
            task.submit().map_err(|e| e.error).unwrap();
        }
    });
    consumer.task_post_recv_alloc_init(&inv.buf_get_at(&map, 0, 64).unwrap()).unwrap().submit().unwrap();

    let sent = Rc::new(Cell::new(0u64));
    let s = sent.clone();
    let (prod_pe, _producer, _src) = one_task_producer(&p, &inv, consumer.id(), move |task| {
        s.set(s.get() + 1);
        if s.get() < N {
            task.submit().map_err(|e| e.error).unwrap();
        }
    });
    until(&[&cons_pe, &prod_pe], || received.get() == N && sent.get() == N);
}

/// A started producer on the client's end of `p`, on its own engine, with one send task
/// (`done` gets it on completion; a failure panics), which it submits at once with the 4
/// bytes "fast" (a buffer of `inv`) to consumer `to`. Returns its engine, the producer and
/// the source map (keep them alive).
fn one_task_producer(
    p: &Pair,
    inv: &Inventory,
    to: u32,
    mut done: impl FnMut(ProducerSendTask) + 'static,
) -> (Pe, Producer, Mmap) {
    let prod_pe = Pe::create().unwrap();
    let producer = Producer::create(&p.client.get_connection().unwrap()).unwrap();
    prod_pe.connect_ctx(&producer.as_ctx()).unwrap();
    producer
        .task_send_set_conf(
            move |task: ProducerSendTask, _, _| done(task),
            |t, _, _| panic!("send failed: {:?}", t.status()),
            1,
        )
        .unwrap();
    producer.as_ctx().start().unwrap();
    let src = Mmap::create().unwrap();
    src.set_memrange("fast".as_bytes()).unwrap();
    src.start().unwrap();
    let msg = inv.buf_get_data_at(&src, 0, 4).unwrap();
    producer.task_send_alloc_init(&msg, to).unwrap().submit().unwrap();
    (prod_pe, producer, src)
}

/// Order is per consumer: a consumer that posts nothing does not hold up the sends of the
/// same producer to another consumer. A task can be pointed at another consumer and buffer.
#[test]
fn a_consumer_that_posts_nothing_does_not_block_sends_to_another() {
    let p = pair();
    let map = consumer_map(Memory::Shared(SharedMem::alloc(8192).unwrap()));
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    let got: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
    let g = got.clone();
    let (idle_pe, idle) = running_consumer(&p, &map, 2, |_| panic!("the idle consumer never posted"));
    let (busy_pe, busy) =
        running_consumer(&p, &map, 2, move |t| g.borrow_mut().push(t.buf().data_to_vec().unwrap()));
    busy.task_post_recv_alloc_init(&inv.buf_get_at(&map, 4096, 64).unwrap()).unwrap().submit().unwrap();

    let prod_pe = Pe::create().unwrap();
    let producer = Producer::create(&p.client.get_connection().unwrap()).unwrap();
    prod_pe.connect_ctx(&producer.as_ctx()).unwrap();
    let done: Rc<RefCell<Vec<u32>>> = Rc::default();
    let d = done.clone();
    producer
        .task_send_set_conf(
            move |t: ProducerSendTask, _, _| d.borrow_mut().push(t.consumer_id()),
            |_, _, _| {},
            4,
        )
        .unwrap();
    producer.as_ctx().start().unwrap();
    let src = Mmap::create().unwrap();
    src.set_memrange("to idleto busy".as_bytes()).unwrap();
    src.start().unwrap();
    let to_idle = inv.buf_get_data_at(&src, 0, 7).unwrap();
    let to_busy = inv.buf_get_data_at(&src, 7, 7).unwrap();
    producer.task_send_alloc_init(&to_idle, idle.id()).unwrap().submit().unwrap();
    // Reused setters: the same kind of task, aimed elsewhere.
    let t = producer.task_send_alloc_init(&to_idle, idle.id()).unwrap();
    t.set_buf(&to_busy);
    t.set_consumer_id(busy.id());
    t.submit().unwrap();
    until(&[&p.spe, &p.cpe, &idle_pe, &busy_pe, &prod_pe], || got.borrow().len() == 1);
    assert_eq!(*got.borrow(), [b"to busy".to_vec()], "delivered although the idle consumer waits");
    assert_eq!(*done.borrow(), [busy.id()]);
    assert_eq!(producer.as_ctx().num_inflight_tasks(), 1, "the send to the idle consumer still waits");
    let t = producer.task_send_alloc_init(&to_busy, busy.id()).unwrap();
    t.set_consumer_id(4242);
    assert_eq!(t.submit().unwrap_err().error, Error::InvalidValue, "an unknown consumer refuses the submit");
}

/// A consumer registration reaches the peer through a signal in the shared rings: the peer
/// reads it on its next progress, not at its next timed look at its sockets. The server's
/// engine here runs on a clock that stands still once connected, so no timed look happens.
#[test]
fn a_consumer_registration_is_read_at_once_not_at_the_next_timed_poll() {
    use doca_core::clock::ManualClock;
    let name = unique("signal");
    let clock = Rc::new(ManualClock::new());
    let spe = Pe::create_with_clock(clock.clone()).unwrap();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0").unwrap();
    let server = Server::create(&dev, &rep, &name).unwrap();
    spe.connect_ctx(&server.as_ctx()).unwrap();
    server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    server.event_msg_recv_register(|_, _| {}).unwrap();
    server.event_connection_register(|_, _| {}, |_, _| {}).unwrap();
    let seen: Rc<RefCell<Vec<u32>>> = Rc::default();
    let s = seen.clone();
    server.event_consumer_register(move |_, id| s.borrow_mut().push(id), |_, _| {}).unwrap();
    server.as_ctx().start().unwrap();
    let cpe = Pe::create().unwrap();
    let client = Client::create(&open_device_with_pci("b1:00.0", None).unwrap(), &name).unwrap();
    cpe.connect_ctx(&client.as_ctx()).unwrap();
    client.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    client.event_msg_recv_register(|_, _| {}).unwrap();
    let _ = client.as_ctx().start();
    // Connecting needs the server to look at its listener: let its time pass meanwhile.
    until(&[&spe, &cpe], || {
        clock.advance(doca_cc::CTRL_PERIOD);
        client.as_ctx().state() == CtxState::Running && server.num_connections() == 1
    });
    // From here the server's clock stands still.
    let map = consumer_map(Memory::Shared(SharedMem::alloc(4096).unwrap()));
    let cons_pe = Pe::create().unwrap();
    let consumer = Consumer::create(&client.get_connection().unwrap(), &map).unwrap();
    cons_pe.connect_ctx(&consumer.as_ctx()).unwrap();
    consumer.task_post_recv_set_conf(|_, _, _| {}, |_, _, _| {}, 2).unwrap();
    assert_eq!(consumer.as_ctx().start(), Err(Error::InProgress));
    until(&[&spe, &cpe, &cons_pe], || consumer.as_ctx().state() == CtxState::Running);
    assert_eq!(*seen.borrow(), [consumer.id()]);
}

/// A [`counting_consumer`] with 4 tasks on the server's end of `p`, over 64 KiB of shared
/// memory, Running and known to the client; with its map and an inventory of 8.
fn running_counting_consumer(p: &Pair) -> (Mmap, Inventory, Consumer, Pe, Rc<RefCell<usize>>) {
    let sconn: Connection = p.server.connections().pop().unwrap();
    let map = consumer_map(Memory::from(SharedMem::alloc(1 << 16).unwrap()));
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    let (consumer, cons_pe, got) = counting_consumer(&sconn, &map, 4);
    let _ = consumer.as_ctx().start();
    until(&[&p.spe, &p.cpe, &cons_pe], || consumer.as_ctx().state() == CtxState::Running);
    until(&[&p.spe, &p.cpe], || consumer_known(p, 1));
    (map, inv, consumer, cons_pe, got)
}

/// Completion statuses, in order.
type Statuses = Rc<RefCell<Vec<Result<(), Error>>>>;

/// A started producer with `tasks` send tasks on the client's end of `p`, on its own engine;
/// every completed send's status (success or error) is recorded.
fn recording_producer(p: &Pair, tasks: u32) -> (Pe, Producer, Statuses) {
    let prod_pe = Pe::create().unwrap();
    let producer = Producer::create(&p.client.get_connection().unwrap()).unwrap();
    prod_pe.connect_ctx(&producer.as_ctx()).unwrap();
    let sent: Statuses = Rc::default();
    let (ok, err) = (sent.clone(), sent.clone());
    producer
        .task_send_set_conf(
            move |t: ProducerSendTask, _, _| ok.borrow_mut().push(t.status()),
            move |t: ProducerSendTask, _, _| err.borrow_mut().push(t.status()),
            tasks,
        )
        .unwrap();
    producer.as_ctx().start().unwrap();
    (prod_pe, producer, sent)
}

/// Whether `pe`'s notification handle becomes readable within `ms` milliseconds.
fn readable(pe: &Pe, ms: i64) -> bool {
    let h = pe.notification_handle();
    let mut fds = [rustix::event::PollFd::new(&h, rustix::event::PollFlags::IN)];
    let ts = rustix::time::Timespec { tv_sec: ms / 1000, tv_nsec: ms % 1000 * 1_000_000 };
    rustix::event::poll(&mut fds, Some(&ts)).unwrap() > 0
}

/// Two sends wait for a buffer; the consumer posts one and goes to sleep on its engine's
/// notification handle. The first send goes out (the second keeps waiting): the sleeping
/// consumer is woken for it.
#[test]
fn a_send_followed_by_a_waiting_one_wakes_the_sleeping_consumer() {
    let p = pair();
    let (map, inv, consumer, cons_pe, got) = running_counting_consumer(&p);
    let producer = Producer::create(&p.client.get_connection().unwrap()).unwrap();
    let prod_pe = Pe::create().unwrap();
    prod_pe.connect_ctx(&producer.as_ctx()).unwrap();
    producer.task_send_set_conf(|_: ProducerSendTask, _, _| {}, |_, _, _| {}, 4).unwrap();
    producer.as_ctx().start().unwrap();
    let src = Mmap::create().unwrap();
    src.set_memrange(vec![1u8; 4096]).unwrap();
    src.start().unwrap();
    let src_inv = Inventory::create(4).unwrap();
    src_inv.start().unwrap();
    let data = src_inv.buf_get_data_at(&src, 0, 16).unwrap();
    for _ in 0..2 {
        producer.task_send_alloc_init(&data, consumer.id()).unwrap().submit().unwrap();
    }
    for _ in 0..10 {
        prod_pe.progress();
    }
    let b = inv.buf_get_at(&map, 0, 64).unwrap();
    consumer.task_post_recv_alloc_init(&b).unwrap().submit().unwrap();
    for _ in 0..10 {
        cons_pe.progress();
    }
    cons_pe.request_notification().unwrap();
    assert!(!readable(&cons_pe, 0), "nothing arrived yet");
    for _ in 0..50 {
        prod_pe.progress();
    }
    assert!(readable(&cons_pe, 2000), "the sleeping consumer is woken for the first send");
    cons_pe.clear_notification().unwrap();
    until(&[&cons_pe], || *got.borrow() == 1);
}

/// A send task kept from before its consumer restarted (same id, new rings) reaches the
/// restarted consumer when submitted again.
#[test]
fn a_task_kept_across_its_consumers_restart_reaches_the_restarted_consumer() {
    use std::cell::Cell;
    let p = pair();
    let map = consumer_map(Memory::Shared(SharedMem::alloc(4096).unwrap()));
    let inv = Rc::new(Inventory::create(4).unwrap());
    inv.start().unwrap();
    let got = Rc::new(Cell::new(0u32));
    let g = got.clone();
    let (cons_pe, consumer) = running_consumer(&p, &map, 2, move |task| {
        g.set(g.get() + 1);
        task.buf().dec_refcount().unwrap();
    });
    let post = |consumer: &Consumer| {
        let buf = inv.buf_get_at(&map, 0, 64).unwrap();
        consumer.task_post_recv_alloc_init(&buf).unwrap().submit().unwrap();
    };
    post(&consumer);
    let kept: Rc<RefCell<Vec<ProducerSendTask>>> = Rc::default();
    let k = kept.clone();
    let (prod_pe, _producer, _src) =
        one_task_producer(&p, &inv, consumer.id(), move |t| k.borrow_mut().push(t));
    until(&[&p.spe, &p.cpe, &cons_pe, &prod_pe], || got.get() == 1 && kept.borrow().len() == 1);

    consumer.as_ctx().stop().unwrap();
    until(&[&p.spe, &p.cpe, &cons_pe, &prod_pe], || consumer.as_ctx().state() == CtxState::Idle);
    let _ = consumer.as_ctx().start();
    until(&[&p.spe, &p.cpe, &cons_pe, &prod_pe], || consumer.as_ctx().state() == CtxState::Running);
    post(&consumer);
    let task = kept.borrow_mut().pop().unwrap();
    task.submit().map_err(|r| r.error).unwrap();
    until(&[&p.spe, &p.cpe, &cons_pe, &prod_pe], || got.get() == 2 && kept.borrow().len() == 1);
}

/// A buffer posted without `FLUSH` and then taken back by stopping the consumer, before its
/// engine ran again, never reaches the peer: the application gets it back (`SHUTDOWN`)
/// untouched, and a send waiting for it fails once the peer hears the consumer stopped.
#[test]
fn a_kept_back_post_taken_back_by_stop_is_never_written() {
    let p = pair();
    let map = consumer_map(Memory::Shared(SharedMem::alloc(4096).unwrap()));
    let inv = Inventory::create(4).unwrap();
    inv.start().unwrap();
    let sconn: Connection = p.server.connections().pop().unwrap();
    let cons_pe = Pe::create().unwrap();
    let consumer = Consumer::create(&sconn, &map).unwrap();
    cons_pe.connect_ctx(&consumer.as_ctx()).unwrap();
    let flushed: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
    let f = flushed.clone();
    consumer
        .task_post_recv_set_conf(
            |t: PostRecvTask, _, _| panic!("filled: {:?}", t.buf().data_to_vec()),
            move |t: PostRecvTask, _, _| f.borrow_mut().push(t.status()),
            2,
        )
        .unwrap();
    let _ = consumer.as_ctx().start();
    until(&[&p.spe, &p.cpe, &cons_pe], || consumer.as_ctx().state() == CtxState::Running);
    until(&[&p.spe, &p.cpe], || consumer_known(&p, 1));

    let (prod_pe, producer, sent) = recording_producer(&p, 1);
    let src = Mmap::create().unwrap();
    src.set_memrange("fast".as_bytes()).unwrap();
    src.start().unwrap();
    let msg = inv.buf_get_data_at(&src, 0, 4).unwrap();

    let buf = inv.buf_get_at(&map, 0, 64).unwrap();
    consumer.task_post_recv_alloc_init(&buf).unwrap().submit_ex(TaskSubmitFlags::empty()).unwrap();
    assert_eq!(consumer.as_ctx().stop(), Err(Error::InProgress), "a buffer is posted");
    // Only the producer's engine runs: the peer has not heard of the stop yet.
    producer.task_send_alloc_init(&msg, consumer.id()).unwrap().submit().unwrap();
    for _ in 0..10_000 {
        prod_pe.progress();
    }
    assert!(sent.borrow().is_empty(), "the send waits: no buffer reached the peer");
    until(&[&p.spe, &p.cpe, &cons_pe, &prod_pe], || {
        consumer.as_ctx().state() == CtxState::Idle && !sent.borrow().is_empty()
    });
    assert_eq!(*flushed.borrow(), [Err(Error::Shutdown)]);
    assert_eq!(*sent.borrow(), [Err(Error::ConnectionAborted)]);
    assert_eq!(map.access().unwrap().bytes(0, 64).unwrap().to_vec(), [0u8; 64], "untouched");
}

/// `doca_task_submit_ex` without `FLUSH` keeps posts back: the peer's send waits until a
/// flushing submit, `doca_ctx_flush_tasks` or the consumer's next progress hands them over,
/// in the order they were submitted.
#[test]
fn posts_kept_back_go_at_a_flush_in_their_order() {
    let p = pair();
    let map = consumer_map(Memory::Shared(SharedMem::alloc(4096).unwrap()));
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    /// (where the buffer starts, what it received)
    type Filled = Rc<RefCell<Vec<(usize, Vec<u8>)>>>;
    let got: Filled = Rc::default();
    let g = got.clone();
    let (cons_pe, consumer) = running_consumer(&p, &map, 4, move |t| {
        let buf = t.buf();
        g.borrow_mut().push((buf.head_offset().unwrap(), buf.data_to_vec().unwrap()));
    });
    until(&[&p.spe, &p.cpe], || consumer_known(&p, 1));
    let post = |at: usize, flags| {
        let task = consumer.task_post_recv_alloc_init(&inv.buf_get_at(&map, at, 64).unwrap()).unwrap();
        task.submit_ex(flags).unwrap();
    };
    post(0, TaskSubmitFlags::empty());
    post(1024, TaskSubmitFlags::OPTIMIZE_REPORTS);

    let sent = Rc::new(RefCell::new(0usize));
    let s = sent.clone();
    let (prod_pe, producer, _src) = one_task_producer(&p, &inv, consumer.id(), move |task| {
        *s.borrow_mut() += 1;
        let _ = task.submit();
    });
    for _ in 0..10_000 {
        prod_pe.progress();
    }
    assert_eq!(*sent.borrow(), 0, "nothing posted yet: the send waits");
    consumer.as_ctx().flush_tasks();
    until(&[&prod_pe], || *sent.borrow() == 2);
    until(&[&cons_pe], || got.borrow().len() == 2);
    assert_eq!(*got.borrow(), [(0, b"fast".to_vec()), (1024, b"fast".to_vec())], "in submission order");

    // Kept back, then a flushing submit: both go, the kept one first.
    post(2048, TaskSubmitFlags::empty());
    post(3072, TaskSubmitFlags::FLUSH);
    until(&[&prod_pe], || *sent.borrow() == 4);
    until(&[&cons_pe], || got.borrow().len() == 4);
    assert_eq!(got.borrow()[2..], [(2048, b"fast".to_vec()), (3072, b"fast".to_vec())]);

    // Kept back with nothing else: the consumer's next progress hands it over.
    post(512, TaskSubmitFlags::empty());
    for _ in 0..10_000 {
        prod_pe.progress();
    }
    assert_eq!(*sent.borrow(), 4, "kept back until the consumer's engine runs");
    until(&[&cons_pe, &prod_pe], || got.borrow().len() == 5);
    assert_eq!(got.borrow()[4], (512, b"fast".to_vec()));
    let _ = producer;
}

/// A post kept back (no `FLUSH`) goes to the peer when its engine is armed to sleep: an
/// application that re-posts from its callback and then sleeps on the notification handle is
/// woken by the next send, never stuck with its post unseen.
#[test]
fn a_kept_back_post_goes_out_when_the_engine_is_armed_to_sleep() {
    let p = pair();
    let (map, inv, consumer, cons_pe, got) = running_counting_consumer(&p);
    let sent = Rc::new(RefCell::new(0usize));
    let s = sent.clone();
    let (prod_pe, _producer, _src) =
        one_task_producer(&p, &inv, consumer.id(), move |_| *s.borrow_mut() += 1);
    for _ in 0..100 {
        prod_pe.progress();
    }
    assert_eq!(*sent.borrow(), 0, "no buffer posted yet");

    let b = inv.buf_get_at(&map, 0, 64).unwrap();
    consumer.task_post_recv_alloc_init(&b).unwrap().submit_ex(TaskSubmitFlags::empty()).unwrap();
    for _ in 0..100 {
        prod_pe.progress();
    }
    assert_eq!(*sent.borrow(), 0, "kept back: the consumer's engine has not run");
    cons_pe.request_notification().unwrap();
    until(&[&prod_pe], || *sent.borrow() == 1);
    assert!(readable(&cons_pe, 2000), "the sleeping consumer is woken for the send");
    cons_pe.clear_notification().unwrap();
    until(&[&cons_pe], || *got.borrow() == 1);
}

/// The abstract names (`@…` in `/proc/net/unix`, which every user can read) of this
/// process's Unix sockets.
fn abstract_names_of_this_process() -> Vec<String> {
    // `/dev/fd`: this process's own descriptors (the library itself never lists or opens
    // another process's).
    let inodes: std::collections::HashSet<String> = std::fs::read_dir("/dev/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| Some(l.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.to_string()))
        .collect();
    let table = std::fs::read_to_string("/proc/net/unix").unwrap();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (inode, path) = (f.get(6)?, f.get(7)?);
            (path.starts_with('@') && inodes.contains(*inode)).then(|| path.to_string())
        })
        .collect()
}

/// No doorbell has a name that another process — of any user — could find in
/// `/proc/net/unix` and flood: not a connection's, not a consumer's, not the acknowledging
/// side's, not a legacy endpoint's. (They were abstract sockets `@doca-emu-bell/…`.)
#[test]
fn no_doorbell_has_a_name_another_process_could_find() {
    let p = pair();
    let (_map, _inv, _consumer, _cons_pe, _got) = running_counting_consumer(&p);
    let (_prod_pe, _producer, _sent) = recording_producer(&p, 1);

    use doca_cc::legacy::{Endpoint, MsgFlags};
    let name = unique("ep-names");
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let service = Endpoint::create().unwrap();
    service.set_device(&dpu).unwrap();
    service.set_device_rep(&open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.0").unwrap()).unwrap();
    service.listen(&name).unwrap();
    let client = Endpoint::create().unwrap();
    client.set_device(&open_device_with_pci("b1:00.0", None).unwrap()).unwrap();
    let peer = client.connect(&name).unwrap();
    let mut connected = false;
    until(&[], || {
        let _ = service.update_service_state_info();
        connected = connected || peer.update_info() != Err(Error::ConnectionInProgress);
        connected
    });
    client.sendto(b"hello", MsgFlags::NONE, &peer).unwrap();
    let mut buf = [0u8; 64];
    until(&[], || service.recvfrom(&mut buf, MsgFlags::NONE).is_ok());

    let names = abstract_names_of_this_process();
    assert!(names.is_empty(), "sockets of this process anyone can find by name: {names:?}");
}

/// Two consumers announced together: the client's callback panics on the first; the second's
/// event is not lost with the unwinding but delivered by the client's next progress.
#[test]
fn a_consumer_event_after_one_whose_callback_panicked_is_delivered_next() {
    let p = pair();
    let sconn: Connection = p.server.connections().pop().unwrap();
    let (pes, consumers): (Vec<Pe>, Vec<Consumer>) = (0..2)
        .map(|_| {
            let map = consumer_map(Memory::Shared(SharedMem::alloc(4096).unwrap()));
            let pe = Pe::create().unwrap();
            let consumer = Consumer::create(&sconn, &map).unwrap();
            pe.connect_ctx(&consumer.as_ctx()).unwrap();
            consumer.task_post_recv_set_conf(|_, _, _| {}, |_, _, _| {}, 2).unwrap();
            assert_eq!(consumer.as_ctx().start(), Err(Error::InProgress));
            (pe, consumer)
        })
        .unzip();
    // Both announcements go out before the client looks.
    let mut others: Vec<&Pe> = pes.iter().collect();
    others.push(&p.spe);
    for _ in 0..200 {
        for pe in &others {
            pe.progress();
        }
    }
    p.panic_next.set(Some(true));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        until(&[&p.cpe], || !p.remote_consumers.borrow().is_empty())
    }));
    assert!(caught.is_err(), "the first event's callback panicked through progress");
    assert_eq!(p.remote_consumers.borrow().len(), 1, "one event delivered when the panic came");
    let mut all: Vec<&Pe> = others.clone();
    all.push(&p.cpe);
    until(&all, || consumer_known(&p, 2));
    let mut ids: Vec<u32> = p
        .remote_consumers
        .borrow()
        .iter()
        .map(|&(new, id)| {
            assert!(new);
            id
        })
        .collect();
    ids.sort_unstable();
    let mut want: Vec<u32> = consumers.iter().map(Consumer::id).collect();
    want.sort_unstable();
    assert_eq!(ids, want, "each consumer announced once");
}

/// The server goes away: the client's report of the closed connection (an expired event for
/// the consumer it knew, then its own failure, as the server's death makes it) goes on at the
/// next progress after the expired-consumer callback panicked, instead of leaving the client
/// Running on a connection that is gone.
#[test]
fn a_closed_connection_s_report_goes_on_after_its_expired_callback_panicked() {
    let p = pair();
    let map = consumer_map(Memory::Shared(SharedMem::alloc(4096).unwrap()));
    let (cons_pe, consumer) = running_consumer(&p, &map, 2, |_| {});
    until(&[&p.spe, &p.cpe, &cons_pe], || consumer_known(&p, 1));
    p.panic_next.set(Some(false));
    // (In progress: the server's consumer leaves first.)
    let _ = p.server.as_ctx().stop();
    let pes = [&p.spe, &p.cpe, &cons_pe];
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        until(&pes, || p.remote_consumers.borrow().len() == 2)
    }));
    assert!(caught.is_err(), "the expired-consumer callback panicked through progress");
    // An application sleeping on the notification handle is not put to sleep with the report
    // pending: the handle is readable at once.
    p.cpe.request_notification().unwrap();
    assert!(readable(&p.cpe, 0), "the client's engine says work is waiting");
    p.cpe.clear_notification().unwrap();
    until(&pes, || p.client.as_ctx().state() == CtxState::Idle);
    assert_eq!(*p.remote_consumers.borrow(), [(true, consumer.id()), (false, consumer.id())]);
}
