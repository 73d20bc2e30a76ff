//! The producer side of the fast-path tests across the link, as a real process (a server on
//! `03:00.0` for host function `b1:00.0`; `fp_peer` is the consumer side).
//!
//! ```text
//! fp_producer <server> <count> <size> <slots>
//! ```
//! Serves, waits for the client's first consumer and prints `consumer <id>`, then waits for
//! the line `go` on stdin. Sends `count` bulk messages of `size` bytes (tag 0, in order) to
//! that consumer from `slots` source buffers kept busy, and prints `sent <count>` when every
//! send completed well, or `failed <DOCA code> after <n>` at the first that did not. Then
//! waits for stdin to close (the consumer may still be checking what it got).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::BufRead;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use doca_cc::{Producer, ProducerSendTask};
use doca_core::{Error, Pe};
use doca_tests::{bulk, FastServer};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, name, count, size, slots] = args.as_slice() else {
        eprintln!("usage: see the module documentation of fp_producer");
        return ExitCode::FAILURE;
    };
    let (count, size, slots): (u64, usize, usize) =
        (count.parse().unwrap(), size.parse().unwrap(), slots.parse().unwrap());
    let FastServer { pe, server, consumers, .. } = FastServer::serve(name);
    let deadline = Instant::now() + Duration::from_secs(120);
    while consumers.borrow().is_empty() {
        assert!(Instant::now() < deadline, "no consumer announced");
        doca_tests::idle(&pe);
    }
    let to = consumers.borrow()[0];
    let conn = server.connections().pop().expect("the consumer's connection");
    println!("consumer {to}");
    if !matches!(std::io::stdin().lock().lines().next(), Some(Ok(l)) if l == "go") {
        return ExitCode::FAILURE;
    }

    let ppe = Pe::create().unwrap();
    let producer = Producer::create(&conn).unwrap();
    ppe.connect_ctx(&producer.as_ctx()).unwrap();
    let free: Rc<RefCell<VecDeque<usize>>> = Rc::new(RefCell::new((0..slots).collect()));
    let results: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
    let on_done = || {
        let (free, results) = (free.clone(), results.clone());
        move |t: ProducerSendTask, _, _| {
            let buf = t.buf();
            free.borrow_mut().push_back(buf.head_offset().unwrap() / size);
            buf.dec_refcount().unwrap();
            results.borrow_mut().push(t.status());
        }
    };
    producer.task_send_set_conf(on_done(), on_done(), slots as u32).unwrap();
    producer.as_ctx().start().unwrap();
    let (map, inv) = doca_tests::source_buffers(size, slots);
    let mut seq = 0;
    let outcome = loop {
        assert!(Instant::now() < deadline, "the sends did not complete in time");
        if let Some((n, Err(e))) = results.borrow().iter().enumerate().find(|(_, r)| r.is_err()) {
            break format!("failed {} after {n}", e.name());
        }
        if results.borrow().len() as u64 == count {
            break format!("sent {count}");
        }
        while seq < count {
            let Some(slot) = free.borrow_mut().pop_front() else { break };
            let buf = inv.buf_get_at(&map, slot * size, size).unwrap();
            bulk::fill(&mut buf.map().bytes_mut(slot * size, size).unwrap(), 0, seq);
            buf.set_data_offset(slot * size, size).unwrap();
            producer.task_send_alloc_init(&buf, to).unwrap().submit().unwrap();
            seq += 1;
        }
        doca_tests::idle_all([&ppe, &pe].into_iter());
    };
    println!("{outcome}");
    // The connection stays until the test is done with the consumer's side.
    let until = Instant::now() + Duration::from_secs(120);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        for _ in std::io::stdin().lock().lines() {}
        let _ = tx.send(());
    });
    while rx.try_recv() == Err(std::sync::mpsc::TryRecvError::Empty) && Instant::now() < until {
        doca_tests::idle_all([&ppe, &pe].into_iter());
    }
    ExitCode::SUCCESS
}
