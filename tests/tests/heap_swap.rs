//! Heap exports at memory speed: the `swap_host` process exports memory from C's allocator
//! (or an anonymous `mmap`); its library swaps the range's whole pages for shared memory at
//! export and back to private memory at revocation, and this process (the DPU) maps them and
//! copies by plain memcpy, the partial pages at both ends still served. Checked: DMA reads
//! and writes across the ends, writers in the exporter during both swaps (no lost
//! increment), `fork` in the exporter, revocation, what a hostile importer can do with the
//! pages, and memory the application freed before destroying its map.

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, Error};
use doca_mmap::Mmap;
use doca_tests::checked::fnv32;
use doca_tests::{from_hex, to_hex, DpuDma, Peer};

const HOST: &str = env!("CARGO_BIN_EXE_swap_host");
const PAGE: usize = 4096;

/// `swap_host`'s pattern.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9).wrapping_add(seed) >> 3) as u8).collect()
}

/// Asks for an export: its descriptor and the host's address of its first byte.
fn export(host: &mut Peer, cmd: &str) -> (Vec<u8>, usize) {
    let a = host.ask(cmd);
    let mut w = a.strip_prefix("desc ").unwrap_or_else(|| panic!("{cmd}: {a}")).split(' ');
    (from_hex(w.next().unwrap()).unwrap(), w.next().unwrap().parse().unwrap())
}

/// Where the whole pages of `len` bytes at `addr` start (from `addr`), and their length.
fn whole_pages(addr: usize, len: usize) -> (usize, usize) {
    let start = addr.div_ceil(PAGE) * PAGE;
    (start - addr, (addr + len) / PAGE * PAGE - start)
}

/// DMA reads and writes of the whole range (both partial ends served, the middle mapped),
/// of pieces within one end, across one end, and within the middle; for memory of `malloc`
/// and of an anonymous `mmap` 100 bytes in. The middle is read even while every thread of
/// the host is stopped: those pages are mapped here, not served.
#[test]
fn dma_reads_and_writes_heap_exports_across_their_partial_pages() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let mut host = Peer::spawn(HOST, &[]);
    let dpu = DpuDma::new();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![0u8; 4 << 20]).unwrap();
    local.add_dev(&dev).unwrap();
    local.start().unwrap();
    for (i, cmd) in ["export 3000000 rw", "export_mmap 1048576"].into_iter().enumerate() {
        let (desc, addr) = export(&mut host, cmd);
        let len: usize = cmd.split(' ').nth(1).unwrap().parse().unwrap();
        let (head, span) = whole_pages(addr, len);
        assert!(head > 0 && head + span < len, "{cmd}: partial pages at both ends ({addr:#x})");
        let remote = Mmap::create_from_export(None, &desc, &dev).unwrap();

        let whole = inv.buf_get_by_data(&remote, addr, len).unwrap();
        let into = inv.buf_get_at(&local, 0, len).unwrap();
        assert_eq!(dpu.copy(&whole, &into), Ok(()));
        assert!(into.data_to_vec().unwrap() == pattern(1, len), "{cmd}: the whole range read");
        into.dec_refcount().unwrap();

        let src = inv.buf_get_at(&local, 0, len).unwrap();
        src.append(&pattern(5, len)).unwrap();
        let to = inv.buf_get_by_addr(&remote, addr, len).unwrap();
        assert_eq!(dpu.copy(&src, &to), Ok(()));
        assert_eq!(host.ask(&format!("fnv {i} 0 {len}")), format!("fnv {}", fnv32(&pattern(5, len))));
        src.dec_refcount().unwrap();
        to.dec_refcount().unwrap();

        // Pieces: within the head, across the head's end, within the middle, across the
        // tail's start, within the tail; read and written.
        let spans = [
            (1, head - 2),
            (head - 7, 300),
            (head + PAGE + 5, 2 * PAGE),
            (head + span - 50, 70),
            (len - 10, 9),
        ];
        for (k, &(off, n)) in spans.iter().enumerate() {
            let want = pattern(20 + k as u64, n);
            let src = inv.buf_get_at(&local, 0, n).unwrap();
            src.append(&want).unwrap();
            let to = inv.buf_get_by_addr(&remote, addr + off, n).unwrap();
            assert_eq!(dpu.copy(&src, &to), Ok(()), "{cmd}: write {off}+{n}");
            assert_eq!(host.ask(&format!("fnv {i} {off} {n}")), format!("fnv {}", fnv32(&want)), "{off}+{n}");
            assert_eq!(host.ask(&format!("fill {i} {off} {n} {}", 40 + k)), "ok");
            let from = inv.buf_get_by_data(&remote, addr + off, n).unwrap();
            let into = inv.buf_get_at(&local, 1 << 20, n).unwrap();
            assert_eq!(dpu.copy(&from, &into), Ok(()), "{cmd}: read {off}+{n}");
            assert!(into.data_to_vec().unwrap() == pattern(40 + k as u64, n), "{cmd}: read {off}+{n}");
            for b in [src, to, from, into] {
                b.dec_refcount().unwrap();
            }
        }

        // The middle needs no thread of the host.
        use rustix::process::{kill_process, Pid, Signal};
        let pid = Pid::from_raw(host.pid() as i32).unwrap();
        kill_process(pid, Signal::STOP).unwrap();
        let mut got = vec![0u8; span];
        let r = remote.access().unwrap().read(head, &mut got);
        kill_process(pid, Signal::CONT).unwrap();
        assert_eq!(r, Ok(()));
        let mut want = pattern(5, len);
        for (k, &(off, n)) in spans.iter().enumerate() {
            want[off..off + n].copy_from_slice(&pattern(40 + k as u64, n));
        }
        assert!(got == want[head..head + span], "{cmd}: the middle read while the host is stopped");
        whole.dec_refcount().unwrap();
    }
    assert!(host.finish());
}

/// Threads of the host increment counters in the range's whole pages (plain loads and
/// stores) while the export swaps them in and while the stop swaps them back: a write that
/// meets the frozen pages waits and is retried, none is lost; the DPU sees them counting.
#[test]
fn writers_in_the_host_lose_no_increment_when_their_pages_are_swapped_in_and_back() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let mut host = Peer::spawn(HOST, &[]);
    let mut last_waited = String::new();
    for i in 0..6 {
        let (desc, addr) = export(&mut host, "export_counting 16777216 4");
        let (head, _) = whole_pages(addr, 16 << 20);
        let remote = Mmap::create_from_export(None, &desc, &dev).unwrap();
        let access = remote.access().unwrap();
        let read = |t: usize| {
            let mut w = [0u8; 8];
            access.read(head + t * PAGE + 64, &mut w).unwrap();
            u64::from_ne_bytes(w)
        };
        let first = read(3);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while read(3) == first {
            assert!(
                std::time::Instant::now() < deadline,
                "export {i}: the DPU sees the host's thread counting"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let a = host.ask("count_check");
        assert!(a.starts_with("counted "), "swap in, export {i}: {a}");
        assert_eq!(host.ask(&format!("count_start {i} 4")), "ok");
        assert_eq!(host.ask(&format!("stop {i}")), "ok");
        let a = host.ask("count_check");
        assert!(a.starts_with("counted "), "swap back, export {i}: {a}");
        last_waited = a.rsplit(' ').next().unwrap().to_string();
        assert_eq!(access.read(head, &mut [0u8; 8]), Err(Error::NotFound));
    }
    let waited: u64 = last_waited.parse().unwrap();
    eprintln!("{waited} writes met a frozen span and waited");
    assert!(waited > 0, "no write met a frozen span in 12 swaps: the test proved nothing");
    assert!(host.finish());
}

/// The host forks after exporting: the child sees the range as it was, and its write reaches
/// neither the parent nor the DPU; the parent's export is still shared afterwards.
#[test]
fn a_fork_child_of_the_host_gets_a_private_copy_of_the_swapped_pages() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let mut host = Peer::spawn(HOST, &[]);
    let len = 1 << 20;
    let (desc, addr) = export(&mut host, &format!("export {len} rw"));
    let (head, _) = whole_pages(addr, len);
    let remote = Mmap::create_from_export(None, &desc, &dev).unwrap();
    let access = remote.access().unwrap();
    let off = head + 3 * PAGE + 10;
    assert_eq!(host.ask(&format!("fill 0 {off} 64 3")), "ok");
    assert_eq!(host.ask(&format!("fork_write 0 {off} written-by-the-child")), "ok");
    let mut got = vec![0u8; 64];
    access.read(off, &mut got).unwrap();
    assert!(got == pattern(3, 64), "the DPU sees the child's write: {got:?}");
    assert_eq!(host.ask(&format!("hex 0 {off} 4")), format!("hex {}", to_hex(&pattern(3, 4))));
    // Still shared in the parent: both directions.
    access.write(off, b"from the DPU").unwrap();
    assert_eq!(host.ask(&format!("hex 0 {off} 12")), format!("hex {}", to_hex(b"from the DPU")));
    assert_eq!(host.ask(&format!("fill 0 {off} 64 4")), "ok");
    access.read(off, &mut got).unwrap();
    assert!(got == pattern(4, 64));
    // A second fork after the first, and the export revoked cleanly afterwards.
    assert_eq!(host.ask(&format!("fork_write 0 {} again", head + 9 * PAGE)), "ok");
    assert_eq!(host.ask("destroy 0"), "ok");
    assert_eq!(access.read(off, &mut got), Err(Error::NotFound));
    assert!(host.finish());
}

/// Maps the memfd of shared pages read-only here (as a hostile importer keeping its mapping
/// would).
fn map_ro(fd: &impl std::os::fd::AsFd, len: usize) -> &'static [u8] {
    // SAFETY: a fresh read-only shared mapping of a memfd sealed against shrinking, never
    // unmapped (the test process ends soon).
    let p = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            len,
            rustix::mm::ProtFlags::READ,
            rustix::mm::MapFlags::SHARED,
            fd,
            0,
        )
    }
    .unwrap();
    // SAFETY: the mapping above, `len` bytes, kept for the process's life.
    unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }
}

/// An importer that keeps the shared pages mapped sees the host's writes while exported and
/// none once revoked (the host's pages are private again); the import itself fails with
/// `NOT_FOUND`. The pages are exactly the range's whole pages (no neighbour shared).
#[test]
fn revoked_pages_are_private_again_and_a_kept_mapping_sees_no_later_write() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let mut host = Peer::spawn(HOST, &[]);
    let len = 1 << 20;
    for (i, end) in ["stop", "destroy"].into_iter().enumerate() {
        let (desc, addr) = export(&mut host, &format!("export {len} rw"));
        let (head, span) = whole_pages(addr, len);
        let (fd, at, n) = doca_mmap::served_shared_pages(&desc).unwrap().expect("shared pages");
        assert_eq!((at, n), (head, span), "exactly the whole pages of the range");
        assert_eq!(rustix::fs::fstat(&fd).unwrap().st_size as usize, span);
        let kept = map_ro(&fd, span);
        let remote = Mmap::create_from_export(None, &desc, &dev).unwrap();
        assert_eq!(host.ask(&format!("fill {i} {} 16 9", head + PAGE)), "ok");
        assert!(kept[PAGE..PAGE + 16] == pattern(9, 16), "shared while exported");
        assert_eq!(host.ask(&format!("{end} {i}")), "ok");
        assert_eq!(host.ask(&format!("fill {i} {} 16 11", head + PAGE)), "ok");
        assert!(kept[PAGE..PAGE + 16] == pattern(9, 16), "{end}: the revoked mapping saw a later write");
        assert_eq!(
            host.ask(&format!("hex {i} {} 4", head + PAGE)),
            format!("hex {}", to_hex(&pattern(11, 4)))
        );
        assert_eq!(remote.access().unwrap().read(head, &mut [0u8; 4]), Err(Error::NotFound));
    }
    assert!(host.finish());
}

/// What a hostile importer can do with the memfd: nothing to its size (sealed, seals
/// sealed); with a read-only export, no write either (no writable mapping, no `write`, no
/// hole punched).
#[test]
fn shared_pages_cannot_be_resized_nor_written_through_a_read_only_export() {
    use rustix::fs::{fallocate, fcntl_add_seals, ftruncate, FallocateFlags, SealFlags};
    let mut host = Peer::spawn(HOST, &[]);
    let len = 1 << 20;
    for (i, mode) in ["rw", "ro"].into_iter().enumerate() {
        let (desc, addr) = export(&mut host, &format!("export {len} {mode}"));
        let (_, span) = whole_pages(addr, len);
        let (fd, _, _) = doca_mmap::served_shared_pages(&desc).unwrap().expect("shared pages");
        assert!(ftruncate(&fd, 0).is_err(), "{mode}: shrunk");
        assert!(ftruncate(&fd, (span * 2) as u64).is_err(), "{mode}: grown");
        assert!(fcntl_add_seals(&fd, SealFlags::WRITE).is_err(), "{mode}: the seals are sealed");
        if mode == "ro" {
            // SAFETY: an attempt at a writable shared mapping (refused; unmapped if not).
            let w = unsafe {
                rustix::mm::mmap(
                    std::ptr::null_mut(),
                    span,
                    rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                    rustix::mm::MapFlags::SHARED,
                    &fd,
                    0,
                )
            };
            assert!(w.is_err(), "a writable mapping of a read-only export");
            assert!(rustix::io::pwrite(&fd, b"x", 0).is_err(), "write into a read-only export");
            let punch = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
            assert!(fallocate(&fd, punch, 0, PAGE as u64).is_err(), "a hole punched in a read-only export");
        }
        assert_eq!(host.ask(&format!("fnv {i} 0 {len}")), format!("fnv {}", fnv32(&pattern(1, len))));
        // An honest importer: the whole range read (the middle through its mapping, read-only
        // for a read-only export), writes as the permissions say.
        let dev = open_device_with_pci("03:00.0", None).unwrap();
        let access = Mmap::create_from_export(None, &desc, &dev).unwrap().access().unwrap();
        let mut got = vec![0u8; len];
        access.read(0, &mut got).unwrap();
        assert!(got == pattern(1, len), "{mode}: the whole range");
        let (head, _) = whole_pages(addr, len);
        let w = access.write(head + PAGE, b"mid");
        assert_eq!(w, if mode == "ro" { Err(Error::NotPermitted) } else { Ok(()) }, "{mode}");
    }
    assert!(host.finish());
}

/// The application frees (or unmaps) the memory while its map still holds it, something
/// else gets mapped where the pages were, then the map is destroyed: the revocation finds
/// the pages are no longer its memfd's and leaves them alone — no crash, nothing clobbered.
#[test]
fn memory_freed_before_its_map_is_destroyed_is_left_alone() {
    let mut host = Peer::spawn(HOST, &[]);
    // Large enough for malloc to map it on its own (and unmap it at free).
    export(&mut host, "export 67108864 rw");
    export(&mut host, "export_mmap 1048576");
    for i in 0..2 {
        let a = host.ask(&format!("free {i}"));
        assert!(a == "ok" || a == "taken", "{a}");
        assert_eq!(host.ask(&format!("destroy {i}")), "ok");
        if a == "ok" {
            assert_eq!(host.ask(&format!("poisoned {i}")), "ok");
        }
    }
    assert_eq!(host.ask("export 100000 rw").split(' ').next(), Some("desc"), "the host works on");
    assert!(host.finish());
}
