//! A process that uses DOCA DMA and nothing else (no comm channel, no export): a device, a
//! progress engine and a started DMA context. It prints `running` once they exist, then
//! sleeps on the engine's notification handle (woken at least every 50 ms to look at its
//! mailbox, as any progressing DOCA program does) and progresses, until stdin ends. Lines on
//! stdin: `copy N` copies N times 4 KiB within one local map and prints `copied N` once the
//! N tasks completed; `stop` stops the context and prints `idle` once it is (the process
//! lives on, progressing, until stdin ends).

use std::cell::Cell;
use std::io::BufRead;
use std::rc::Rc;
use std::sync::mpsc::{channel, TryRecvError};
use std::time::Duration;

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, CtxState, Data, Pe};
use doca_dma::{Dma, MemcpyTask};
use doca_mmap::{AccessFlags, Mmap};

const CHUNK: usize = 4096;
const TASKS: usize = 4;

fn main() {
    let dev = open_device_with_pci("03:00.0", None).expect("dpu device");
    let pe = Pe::create().expect("progress engine");
    let dma = Dma::create(&dev).expect("dma");
    pe.connect_ctx(&dma.as_ctx()).expect("connect");
    let done = Rc::new(Cell::new(0usize));
    let (ok, failed) = (done.clone(), done.clone());
    dma.task_memcpy_set_conf(
        move |_: MemcpyTask, _: Data, _: Data| ok.set(ok.get() + 1),
        move |_: MemcpyTask, _: Data, _: Data| failed.set(failed.get() + 1),
        TASKS as u32,
    )
    .expect("memcpy conf");
    dma.as_ctx().start().expect("start");
    let inv = Inventory::create(2 * TASKS as u32).expect("inventory");
    inv.start().expect("inventory start");
    let map = Mmap::create().expect("mmap");
    map.set_memrange(vec![7u8; 2 * CHUNK * TASKS]).expect("memrange");
    map.set_permissions(AccessFlags::LOCAL_READ_WRITE).expect("permissions");
    map.add_dev(&dev).expect("add dev");
    map.start().expect("mmap start");

    let (tx, lines) = channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    println!("running");
    loop {
        let _ = pe.wait(Some(Duration::from_millis(50)));
        while pe.progress() {}
        let line = match lines.try_recv() {
            Ok(line) => line,
            Err(TryRecvError::Empty) => continue,
            Err(TryRecvError::Disconnected) => break,
        };
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["copy", n] => {
                let n: usize = n.parse().expect("copy N");
                let before = done.get();
                // In batches of TASKS: buffers for each, its copies, then the buffers back.
                for first in (0..n).step_by(TASKS) {
                    let mut bufs = Vec::new();
                    for slot in 0..TASKS.min(n - first) {
                        let src = inv.buf_get_data_at(&map, 2 * slot * CHUNK, CHUNK).expect("src buf");
                        let dst = inv.buf_get_at(&map, (2 * slot + 1) * CHUNK, CHUNK).expect("dst buf");
                        let task =
                            dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE).expect("task");
                        task.submit().map_err(|r| r.error).expect("submit");
                        bufs.extend([src, dst]);
                    }
                    while done.get() < before + first + bufs.len() / 2 {
                        let _ = pe.wait(Some(Duration::from_millis(50)));
                        while pe.progress() {}
                    }
                    for b in bufs {
                        b.dec_refcount().expect("buf back");
                    }
                }
                println!("copied {n}");
            }
            ["stop"] => {
                dma.as_ctx().stop().expect("stop");
                while dma.as_ctx().state() != CtxState::Idle {
                    let _ = pe.wait(Some(Duration::from_millis(50)));
                    while pe.progress() {}
                }
                println!("idle");
            }
            _ => println!("unknown {line}"),
        }
    }
    if dma.as_ctx().state() != CtxState::Idle {
        dma.as_ctx().stop().expect("stop");
        while pe.progress() {}
    }
}
