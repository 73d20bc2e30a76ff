//! A process that uses DOCA DMA and nothing else (no comm channel, no export): a device, a
//! progress engine and a started DMA context. It prints `running` once they exist, then
//! sleeps on the engine's notification handle (woken at least every 50 ms to look at its
//! mailbox, as any progressing DOCA program does) and progresses, until stdin ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use doca_core::{open_device_with_pci, Data, Pe};
use doca_dma::{Dma, MemcpyTask};

fn main() {
    let dev = open_device_with_pci("03:00.0", None).expect("dpu device");
    let pe = Pe::create().expect("progress engine");
    let dma = Dma::create(&dev).expect("dma");
    pe.connect_ctx(&dma.as_ctx()).expect("connect");
    dma.task_memcpy_set_conf(|_: MemcpyTask, _: Data, _: Data| {}, |_: MemcpyTask, _: Data, _: Data| {}, 4)
        .expect("memcpy conf");
    dma.as_ctx().start().expect("start");
    let done = Arc::new(AtomicBool::new(false));
    let eof = done.clone();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        eof.store(true, Ordering::Relaxed);
    });
    println!("running");
    while !done.load(Ordering::Relaxed) {
        let _ = pe.wait(Some(Duration::from_millis(50)));
        while pe.progress() {}
    }
    dma.as_ctx().stop().expect("stop");
    while pe.progress() {}
}
