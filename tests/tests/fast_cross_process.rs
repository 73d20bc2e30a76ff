//! The fast path across real processes: this process serves and produces, `fp_peer`
//! connects and consumes.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use doca_buf::{Buf, Inventory};
use doca_cc::{Connection, Producer, ProducerSendTask};
use doca_core::{Error, Pe};
use doca_mmap::Mmap;
use doca_tests::{bulk, FastServer, Peer};

const FP_PEER: &str = env!("CARGO_BIN_EXE_fp_peer");

fn unique(tag: &str) -> String {
    format!("fp-{tag}-{}", std::process::id())
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(120)
}

/// A server here that learns the peer's consumers.
struct Side(FastServer);

impl std::ops::Deref for Side {
    type Target = FastServer;
    fn deref(&self) -> &FastServer {
        &self.0
    }
}

fn serve(name: &str) -> Side {
    Side(FastServer::serve(name))
}

impl Side {
    fn until(&self, what: &str, mut done: impl FnMut() -> bool) {
        let end = deadline();
        while !done() {
            assert!(Instant::now() < end, "timed out waiting for {what}");
            doca_tests::idle(&self.pe);
        }
    }

    fn conn(&self) -> Connection {
        self.server.connections().pop().expect("a connection")
    }
}

/// A producer with its own engine and `slots` source buffers of `size` bytes in shared memory.
struct Sender {
    pe: Pe,
    producer: Rc<Producer>,
    inv: Inventory,
    map: Mmap,
    free: Rc<RefCell<VecDeque<usize>>>,
    results: Rc<RefCell<Vec<Result<(), Error>>>>,
    size: usize,
}

impl Sender {
    fn new(conn: &Connection, size: usize, slots: usize) -> Sender {
        let pe = Pe::create().unwrap();
        let producer = Rc::new(Producer::create(conn).unwrap());
        pe.connect_ctx(&producer.as_ctx()).unwrap();
        let free: Rc<RefCell<VecDeque<usize>>> = Rc::new(RefCell::new((0..slots).collect()));
        let results: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
        let on_done = |free: Rc<RefCell<VecDeque<usize>>>,
                       results: Rc<RefCell<Vec<Result<(), Error>>>>,
                       size: usize| {
            move |t: ProducerSendTask, _, _| {
                let buf = t.buf();
                free.borrow_mut().push_back(buf.head_offset().unwrap() / size);
                buf.dec_refcount().unwrap();
                results.borrow_mut().push(t.status());
            }
        };
        producer
            .task_send_set_conf(
                on_done(free.clone(), results.clone(), size),
                on_done(free.clone(), results.clone(), size),
                slots as u32,
            )
            .unwrap();
        producer.as_ctx().start().unwrap();
        let (map, inv) = doca_tests::source_buffers(size, slots);
        Sender { pe, producer, inv, map, free, results, size }
    }

    /// Sends `count` bulk messages of `len` bytes tagged `tag` to `consumer`, keeping every
    /// source buffer busy; `also` (e.g. the server's engine) is progressed beside this one,
    /// and the thread sleeps on both when neither has anything to do.
    fn send(&self, consumer: u32, tag: u64, count: u64, len: usize, also: Option<&Pe>) {
        let start = self.results.borrow().len();
        let end = deadline();
        let mut seq = 0;
        while self.results.borrow().len() - start < count as usize {
            assert!(Instant::now() < end, "sends did not complete in time");
            while seq < count {
                let Some(slot) = self.free.borrow_mut().pop_front() else { break };
                let buf: Buf = self.inv.buf_get_at(&self.map, slot * self.size, len).unwrap();
                bulk::fill(&mut buf.map().bytes_mut(slot * self.size, len).unwrap(), tag, seq);
                buf.set_data_offset(slot * self.size, len).unwrap();
                self.producer.task_send_alloc_init(&buf, consumer).unwrap().submit().unwrap();
                seq += 1;
            }
            doca_tests::idle_all(std::iter::once(&self.pe).chain(also));
        }
    }
}

impl Side {
    /// The peer's next line, progressing the server meanwhile (the peer needs it).
    fn line(&self, peer: &Peer) -> String {
        let mut got = None;
        self.until("a line from the peer", || {
            got = got.take().or_else(|| peer.try_line());
            got.is_some()
        });
        got.unwrap()
    }

    fn consumer_ids(&self, peer: &Peer) -> Vec<u32> {
        let line = self.line(peer);
        line.strip_prefix("consumers ")
            .unwrap_or_else(|| panic!("unexpected: {line}"))
            .split(' ')
            .map(|v| v.parse().unwrap())
            .collect()
    }
}

#[test]
fn one_gibibyte_arrives_intact_in_shared_consumer_memory_with_one_copy() {
    let name = unique("gib");
    let side = serve(&name);
    let mib = 1 << 20;
    let peer = Peer::spawn(FP_PEER, &[&name, "1", &mib.to_string(), "8", "shared", "1024"]);
    let ids = side.consumer_ids(&peer);
    side.until("the consumer event", || side.consumers.borrow().len() == 1);
    assert_eq!(*side.consumers.borrow(), ids);
    let before = side.conn().fast_path_stats();
    let sender = Sender::new(&side.conn(), mib, 8);
    sender.send(ids[0], 1, 1024, mib, Some(&side.pe));
    assert!(sender.results.borrow().iter().all(|r| r.is_ok()));
    let line = side.line(&peer);
    assert_eq!(line, format!("ok {} staged_copies=0", 1024 * mib), "no loss, no second copy");
    let after = side.conn().fast_path_stats();
    assert_eq!(after.one_copy_sends - before.one_copy_sends, 1024, "the one-copy path was taken");
    assert_eq!(after.staged_sends, before.staged_sends);
    assert!(peer.finish());
}

#[test]
fn plain_consumer_memory_works_through_the_fallback() {
    let name = unique("plain");
    let side = serve(&name);
    let kib = 64 << 10;
    let peer = Peer::spawn(FP_PEER, &[&name, "1", &kib.to_string(), "4", "plain", "256"]);
    let ids = side.consumer_ids(&peer);
    side.until("the consumer event", || side.consumers.borrow().len() == 1);
    let before = side.conn().fast_path_stats();
    let sender = Sender::new(&side.conn(), kib, 4);
    sender.send(ids[0], 7, 256, kib - 8, Some(&side.pe));
    assert_eq!(side.line(&peer), format!("ok {} staged_copies=256", 256 * (kib - 8)));
    assert_eq!(side.conn().fast_path_stats().staged_sends - before.staged_sends, 256);
    assert!(peer.finish());
}

#[test]
fn four_producers_on_four_threads_feed_four_consumers_in_order() {
    let name = unique("4x4");
    let side = serve(&name);
    let per_pair = 200u64;
    let peer = Peer::spawn(FP_PEER, &[&name, "4", "4096", "8", "shared", &(per_pair * 4).to_string()]);
    let ids = side.consumer_ids(&peer);
    side.until("four consumer events", || side.consumers.borrow().len() == 4);
    let conn = side.conn();
    let threads: Vec<_> = (0..4u64)
        .map(|tag| {
            let (conn, ids) = (conn.clone(), ids.clone());
            std::thread::spawn(move || {
                let sender = Sender::new(&conn, 4096, 8);
                for (k, &id) in ids.iter().enumerate() {
                    // A different size per stream; one producer, one consumer: in order.
                    sender.send(id, tag, per_pair, 64 + 8 * (tag as usize + k), None);
                }
                let ok = sender.results.borrow().iter().all(|r| r.is_ok());
                ok
            })
        })
        .collect();
    side.until("all producers", || threads.iter().all(|t| t.is_finished()));
    for t in threads {
        assert!(t.join().unwrap(), "every send succeeded");
    }
    let line = side.line(&peer);
    assert!(line.starts_with("ok "), "{line}");
    assert!(peer.finish());
}

#[test]
fn a_consumer_destroyed_while_producers_send_fails_their_sends_and_expires() {
    let name = unique("expire");
    let side = serve(&name);
    let peer = Peer::spawn(FP_PEER, &[&name, "1", "4096", "4", "shared", "1000000", "--stop-after", "50"]);
    let ids = side.consumer_ids(&peer);
    side.until("the consumer event", || side.consumers.borrow().len() == 1);
    let sender = Sender::new(&side.conn(), 4096, 4);
    // Keep sending until the consumer is gone and the sends fail.
    let end = deadline();
    let mut seq = 0;
    loop {
        assert!(Instant::now() < end, "the producer never noticed");
        if let Some(slot) = sender.free.borrow_mut().pop_front() {
            let buf = sender.inv.buf_get_at(&sender.map, slot * 4096, 256).unwrap();
            bulk::fill(&mut buf.map().bytes_mut(slot * 4096, 256).unwrap(), 0, seq);
            buf.set_data_offset(slot * 4096, 256).unwrap();
            match sender.producer.task_send_alloc_init(&buf, ids[0]) {
                Ok(t) => {
                    t.submit().unwrap();
                    seq += 1;
                }
                Err(e) => {
                    assert_eq!(e, Error::InvalidValue, "an expired consumer id is refused at alloc");
                    buf.dec_refcount().unwrap();
                    break;
                }
            }
        }
        doca_tests::idle_all([&sender.pe, &side.pe].into_iter());
    }
    assert_eq!(side.line(&peer), format!("stopped {}", ids[0]));
    side.until("the expired-consumer event", || *side.expired.borrow() == ids);
    let end = deadline();
    while sender.producer.as_ctx().num_inflight_tasks() > 0 {
        assert!(Instant::now() < end);
        doca_tests::idle(&sender.pe);
    }
    let results = sender.results.borrow();
    assert!(results.iter().filter(|r| r.is_ok()).count() >= 50);
    assert!(
        results.iter().all(|r| matches!(r, Ok(()) | Err(Error::ConnectionAborted))),
        "sends waiting for the gone consumer fail with CONNECTION_ABORTED: {results:?}"
    );
    assert!(side.line(&peer).starts_with("ok "));
    assert!(peer.finish());
}
