//! DMA across processes, as DOCA's `dma_copy` does it: this process is the DPU, the
//! `mem_peer` process the host. The host exports its memory and sends its buffer addresses;
//! the DPU imports the export, names host buffers by the host's addresses, and its DMA reads
//! host memory into its own and writes its own into the host's, checked on both sides. Once
//! the host stops (or destroys) its map, the next task on the import fails with `NOT_FOUND`.

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, Error};
use doca_mmap::Mmap;
use doca_tests::checked::fnv32;
use doca_tests::{from_hex, to_hex, DpuDma, Peer};

const PEER: &str = env!("CARGO_BIN_EXE_mem_peer");

/// `mem_peer`'s `host_fill` pattern.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9).wrapping_add(seed) >> 3) as u8).collect()
}

/// Asks the host for an export of `len` bytes; returns the descriptor and the host's address
/// of its first byte (what a host application sends the DPU).
/// `cmd`: `export` for shared memory, `export_heap` for heap memory registered by address.
fn host_export(host: &mut Peer, cmd: &str, index: usize, len: usize) -> (Vec<u8>, usize) {
    let answer = host.ask(&format!("{cmd} {len} exported by the host"));
    let desc = from_hex(answer.strip_prefix("desc ").expect("a descriptor")).unwrap();
    let answer = host.ask(&format!("addr {index}"));
    let addr = answer.strip_prefix("addr ").expect("an address").parse().unwrap();
    (desc, addr)
}

#[test]
fn the_dpu_dma_reads_and_writes_host_memory_by_host_addresses_until_the_host_stops_its_map() {
    reads_and_writes_until_revoked("export");
}

/// The same with host memory the host registered by address (its heap): the export is served
/// by the host library's threads while the host's main thread blocks in `read()` on its stdin.
#[test]
fn the_dpu_dma_reads_and_writes_host_heap_memory_served_while_the_host_blocks_in_read() {
    reads_and_writes_until_revoked("export_heap");
}

fn reads_and_writes_until_revoked(export: &str) {
    let dpu_dev = open_device_with_pci("03:00.0", None).unwrap();
    let mut host = Peer::spawn(PEER, &[]);
    let size = 8 << 20;
    let (desc, host_base) = host_export(&mut host, export, 0, size);
    let dpu = DpuDma::new();
    let remote = Mmap::create_from_export(None, &desc, &dpu_dev).unwrap();
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![0u8; 12 << 20]).unwrap();
    local.add_dev(&dpu_dev).unwrap();
    local.start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();

    // DPU reads host memory: 3 MiB + 5 of the host's pattern (several engine passes), named
    // by host addresses, into local memory.
    let (off, len) = (123_457, (3 << 20) + 5);
    assert_eq!(host.ask(&format!("host_fill 0 {off} {len} 7")), "ok");
    let from_host = inv.buf_get_by_data(&remote, host_base + off, len).unwrap();
    let into_local = inv.buf_get_at(&local, 11, len).unwrap();
    assert_eq!(dpu.copy(&from_host, &into_local), Ok(()));
    assert_eq!(into_local.data_len().unwrap(), len);
    assert!(into_local.data_to_vec().unwrap() == pattern(7, len), "the DPU read other bytes");

    // DPU writes host memory: local bytes into the host's buffer at a host address; the host
    // sees exactly them, and nothing past them.
    let mine = pattern(99, 2 << 20);
    let src = inv.buf_get_at(&local, 4 << 20, mine.len()).unwrap();
    src.append(&mine).unwrap();
    let (woff, wlen) = ((4 << 20) + 1000, mine.len());
    let into_host = inv.buf_get_by_addr(&remote, host_base + woff, wlen).unwrap();
    assert_eq!(dpu.copy(&src, &into_host), Ok(()));
    assert_eq!(into_host.data_len().unwrap(), wlen);
    assert_eq!(host.ask(&format!("host_fnv 0 {woff} {wlen}")), format!("fnv {}", fnv32(&mine)));
    assert_eq!(host.ask(&format!("host_hex 0 {woff} 16")), format!("hex {}", to_hex(&mine[..16])));
    let after = host.ask(&format!("host_hex 0 {} 4", woff + wlen));
    assert_eq!(after, "hex 00000000", "the DMA wrote past the destination's room");

    // The host stops its map: the import is revoked, and the next task on it fails with
    // NOT_FOUND (in both directions), however long ago it was imported and its buffers got.
    assert_eq!(host.ask("stop 0"), "ok");
    let room = inv.buf_get_at(&local, 6 << 20, len).unwrap();
    assert_eq!(dpu.copy(&from_host, &room), Err(Error::NotFound));
    assert_eq!(dpu.copy(&src, &into_host), Err(Error::NotFound));

    // The same for a destroyed map.
    let (desc, base) = host_export(&mut host, export, 1, 1 << 16);
    let remote2 = Mmap::create_from_export(None, &desc, &dpu_dev).unwrap();
    let there = inv.buf_get_by_addr(&remote2, base + 4096, 64).unwrap();
    let small = inv.buf_get_data_at(&local, 11, 64).unwrap();
    assert_eq!(dpu.copy(&small, &there), Ok(()));
    assert_eq!(host.ask("host_hex 1 4096 4"), format!("hex {}", to_hex(&pattern(7, 4))));
    assert_eq!(host.ask("destroy 1"), "ok");
    assert_eq!(dpu.copy(&small, &there), Err(Error::NotFound));
    // The DPU's own memory was never touched by the failed tasks after the revocation.
    assert!(into_local.data_to_vec().unwrap() == pattern(7, len));
    assert!(host.finish());
}

/// A host killed while the DPU uses its served heap export: the next task fails with
/// `NOT_FOUND` (no hang), a new import of the descriptor too; the DPU's memory is intact.
#[test]
fn a_killed_host_fails_the_dpu_tasks_on_its_served_export_with_not_found() {
    let dpu_dev = open_device_with_pci("03:00.0", None).unwrap();
    let mut host = Peer::spawn(PEER, &[]);
    let (desc, base) = host_export(&mut host, "export_heap", 0, 1 << 20);
    let dpu = DpuDma::new();
    let remote = Mmap::create_from_export(None, &desc, &dpu_dev).unwrap();
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![0u8; 1 << 20]).unwrap();
    local.add_dev(&dpu_dev).unwrap();
    local.start().unwrap();
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    assert_eq!(host.ask("host_fill 0 0 65536 3"), "ok");
    let from_host = inv.buf_get_by_data(&remote, base, 65536).unwrap();
    let room = inv.buf_get_at(&local, 0, 65536).unwrap();
    assert_eq!(dpu.copy(&from_host, &room), Ok(()));
    assert!(room.data_to_vec().unwrap() == pattern(3, 65536));
    host.kill();
    let room2 = inv.buf_get_at(&local, 65536, 65536).unwrap();
    assert_eq!(dpu.copy(&from_host, &room2), Err(Error::NotFound));
    assert_eq!(dpu.copy(&room, &from_host), Err(Error::NotFound));
    assert_eq!(Mmap::create_from_export(None, &desc, &dpu_dev).unwrap_err(), Error::NotFound);
    assert!(room.data_to_vec().unwrap() == pattern(3, 65536));
}

/// A host stopped (SIGSTOP) while the DPU copies from its served heap export: the task
/// fails with `TIME_OUT` after the stall limit instead of hanging; later tasks on the import
/// fail with `NOT_FOUND` (the connection is dropped), even once the host runs again.
#[test]
fn a_stopped_host_fails_the_dpu_task_on_its_served_export_with_time_out() {
    use rustix::process::{kill_process, Pid, Signal};
    let dpu_dev = open_device_with_pci("03:00.0", None).unwrap();
    let mut host = Peer::spawn(PEER, &[]);
    let (desc, base) = host_export(&mut host, "export_heap", 0, 1 << 16);
    let dpu = DpuDma::new();
    let remote = Mmap::create_from_export(None, &desc, &dpu_dev).unwrap();
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![0u8; 1 << 16]).unwrap();
    local.add_dev(&dpu_dev).unwrap();
    local.start().unwrap();
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    let from_host = inv.buf_get_by_data(&remote, base, 4096).unwrap();
    let room = inv.buf_get_at(&local, 0, 4096).unwrap();
    let pid = Pid::from_raw(host.pid() as i32).unwrap();
    kill_process(pid, Signal::STOP).unwrap();
    // The signal is asynchronous: wait (bounded) until every thread of the host is stopped.
    let stopped = || {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", host.pid())) else { return false };
        tasks.flatten().all(|t| {
            std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .and_then(|st| st.rsplit(')').next().map(|rest| rest.trim_start().starts_with('T')))
                .unwrap_or(false)
        })
    };
    for _ in 0..2000 {
        if stopped() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(stopped(), "the host did not stop");
    let status = dpu.copy(&from_host, &room);
    kill_process(pid, Signal::CONT).unwrap();
    assert_eq!(status, Err(Error::TimeOut));
    let room2 = inv.buf_get_at(&local, 4096, 4096).unwrap();
    assert_eq!(dpu.copy(&from_host, &room2), Err(Error::NotFound));
    assert_eq!(host.ask("addr 0"), format!("addr {base}"), "the host runs on");
}
