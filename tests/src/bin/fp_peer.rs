//! The consumer side of the fast-path tests, as a real process (a client on `b1:00.0`).
//!
//! ```text
//! fp_peer <server> <consumers> <buf_size> <slots> <shared|plain> <per_consumer> [--stop-after K]
//! ```
//! Creates the consumers (each with its own map of `slots` buffers and its own progress
//! engine), prints `consumers <id>…` once they run, checks every message (`bulk` format:
//! intact, and in order per producer tag), re-posts each buffer, and prints
//! `ok <bytes> staged_copies=<n>` when each consumer has `per_consumer` messages; then waits
//! for stdin to close. A consumer whose start fails (the server refused it) prints
//! `refused connected=<bool>` and waits for stdin to close. `--stop-after K` stops and destroys the first consumer after K
//! messages (printing `stopped <id>`) while producers may still be sending to it.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::io::BufRead;
use std::process::ExitCode;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_cc::{Client, Consumer, PostRecvTask};
use doca_core::{open_device_with_pci, CtxState, Error, Pe};
use doca_mmap::{AccessFlags, Memory, Mmap, SharedMem};
use doca_tests::bulk;

struct Stream {
    pe: Pe,
    consumer: Rc<Consumer>,
    inv: Inventory,
    map: Mmap,
    got: Rc<Cell<u64>>,
    bad: Rc<RefCell<Option<String>>>,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, name, n, size, slots, kind, per, ..] = args.as_slice() else {
        eprintln!("usage: see the module documentation of fp_peer");
        return ExitCode::FAILURE;
    };
    let (n, size, slots, per): (usize, usize, usize, u64) =
        (n.parse().unwrap(), size.parse().unwrap(), slots.parse().unwrap(), per.parse().unwrap());
    let stop_after: Option<u64> =
        args.iter().position(|a| a == "--stop-after").map(|i| args[i + 1].parse().unwrap());
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let client = Client::create(&dev, name).unwrap();
    pe.connect_ctx(&client.as_ctx()).unwrap();
    client.event_msg_recv_register(|_, _| {}).unwrap();
    client.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 16).unwrap();
    assert_eq!(client.as_ctx().start(), Err(Error::InProgress));
    while client.as_ctx().state() != CtxState::Running {
        doca_tests::idle(&pe);
    }
    let conn = client.get_connection().unwrap();
    let total_bytes = Rc::new(Cell::new(0u64));
    let mut streams = Vec::new();
    for _ in 0..n {
        let memory = if kind == "shared" {
            Memory::from(SharedMem::alloc(size * slots).unwrap())
        } else {
            Memory::from(vec![0u8; size * slots])
        };
        let map = Mmap::create().unwrap();
        map.set_memrange(memory).unwrap();
        map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
        map.start().unwrap();
        let inv = Inventory::create(slots as u32).unwrap();
        inv.start().unwrap();
        let cpe = Pe::create().unwrap();
        let consumer = Rc::new(Consumer::create(&conn, &map).unwrap());
        cpe.connect_ctx(&consumer.as_ctx()).unwrap();
        let got = Rc::new(Cell::new(0u64));
        let bad: Rc<RefCell<Option<String>>> = Rc::default();
        let next: Rc<RefCell<HashMap<u64, u64>>> = Rc::default();
        let (g, b, w, tb) = (got.clone(), bad.clone(), Rc::downgrade(&consumer), total_bytes.clone());
        consumer
            .task_post_recv_set_conf(
                move |task: PostRecvTask, _, _| {
                    let buf = task.buf();
                    let data = buf.data_bytes().unwrap();
                    match bulk::verify(&data) {
                        Some((tag, seq)) => {
                            let mut next = next.borrow_mut();
                            let want = next.entry(tag).or_insert(0);
                            if seq != *want {
                                *b.borrow_mut() =
                                    Some(format!("producer {tag}: message {seq} where {want} was due"));
                            }
                            *want = seq + 1;
                        }
                        None => *b.borrow_mut() = Some(format!("damaged message of {} bytes", data.len())),
                    }
                    tb.set(tb.get() + data.len() as u64);
                    drop(data);
                    g.set(g.get() + 1);
                    buf.reset_data_len().unwrap();
                    if g.get() < per {
                        if let Some(c) = w.upgrade() {
                            // Free this task first: the pool holds exactly one per buffer.
                            drop(task);
                            c.task_post_recv_alloc_init(&buf).unwrap().submit().unwrap();
                            return;
                        }
                    }
                    buf.dec_refcount().unwrap();
                },
                |task: PostRecvTask, _, _| {
                    let _ = task.buf().dec_refcount();
                },
                slots as u32,
            )
            .unwrap();
        assert_eq!(consumer.as_ctx().start(), Err(Error::InProgress));
        streams.push(Stream { pe: cpe, consumer, inv, map, got, bad });
    }
    let progress_all = |streams: &[Stream]| {
        doca_tests::idle_all(std::iter::once(&pe).chain(streams.iter().map(|s| &s.pe)));
    };
    while streams.iter().any(|s| s.consumer.as_ctx().state() != CtxState::Running) {
        if streams.iter().any(|s| s.consumer.as_ctx().state() == CtxState::Idle) {
            // The start failed (the server refused a consumer): the connection stays.
            println!("refused connected={}", conn.is_connected());
            for _ in std::io::stdin().lock().lines() {}
            return ExitCode::SUCCESS;
        }
        progress_all(&streams);
    }
    for s in &streams {
        for i in 0..slots {
            let buf = s.inv.buf_get_at(&s.map, i * size, size).unwrap();
            s.consumer.task_post_recv_alloc_init(&buf).unwrap().submit().unwrap();
        }
    }
    let ids: Vec<String> = streams.iter().map(|s| s.consumer.id().to_string()).collect();
    println!("consumers {}", ids.join(" "));
    let mut stopped = false;
    loop {
        progress_all(&streams);
        if let Some(b) = streams.iter().find_map(|s| s.bad.borrow().clone()) {
            println!("bad {b}");
            return ExitCode::FAILURE;
        }
        if let (Some(k), false) = (stop_after, stopped) {
            if streams[0].got.get() >= k {
                let _ = streams[0].consumer.as_ctx().stop();
                while streams[0].consumer.as_ctx().state() != CtxState::Idle {
                    progress_all(&streams);
                }
                println!("stopped {}", streams[0].consumer.id());
                let s = streams.remove(0);
                Rc::try_unwrap(s.consumer).map_err(|_| ()).unwrap().destroy().unwrap();
                stopped = true;
            }
        }
        if streams.iter().all(|s| s.got.get() >= per) {
            break;
        }
    }
    println!("ok {} staged_copies={}", total_bytes.get(), conn.fast_path_stats().staged_copies);
    for _ in std::io::stdin().lock().lines() {}
    ExitCode::SUCCESS
}
