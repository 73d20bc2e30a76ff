//! The Rust-only rules of doca-mmap: byte borrows that never alias, whichever handle reaches
//! the memory. The header's rules and codes are in the conformance suite (tests/ crate,
//! `conformance/doca_mmap.rs`), the cross-process export test beside it.

use doca_core::{open_device_with_pci, Dev, Error};
use doca_mmap::{AccessFlags, Mmap};

fn dpu() -> Dev {
    open_device_with_pci("03:00.0", None).unwrap()
}

fn host() -> Dev {
    open_device_with_pci("b1:00.0", None).unwrap()
}

/// A started map of private memory of `len` zero bytes.
/// A private fabric directory (where the memory service's socket goes), set before the
/// first export, so these tests never touch the user's default fabric directory.
fn private_fabric() {
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("doca-mmap-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        std::env::set_var("DOCA_EMU_FABRIC_DIR", &d);
        d
    });
}

fn private_map(len: usize) -> Mmap {
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; len]).unwrap();
    map.start().unwrap();
    map
}

/// Shared memory of `len` bytes that only a `RemoteMem` maps in this process (as a peer's
/// posted buffers are): copies into it need no lock.
fn remote_only(len: usize) -> doca_mmap::RemoteMem {
    let mem = doca_mmap::SharedMem::alloc(len).unwrap();
    let r = mem.share().unwrap();
    doca_mmap::RemoteMem::open(r.fd, r.offset, r.len).unwrap()
}

#[test]
fn byte_access_is_checked_and_borrows_do_not_alias() {
    let map = private_map(64);
    let r = map.buf_ref(0, 64).unwrap();
    r.write(8, b"hello").unwrap();
    let mut out = [0u8; 5];
    r.read(8, &mut out).unwrap();
    assert_eq!(&out, b"hello");
    assert_eq!(r.write(62, b"abc"), Err(Error::InvalidValue));
    {
        let mut w = r.bytes_mut(8, 5).unwrap();
        w[0] = b'j';
        assert_eq!(r.bytes(10, 4).err(), Some(Error::InUse), "overlaps a write borrow");
        assert_eq!(r.bytes_mut(12, 1).err(), Some(Error::InUse));
        assert!(r.bytes(13, 4).is_ok(), "disjoint");
    }
    let a = r.bytes(8, 5).unwrap();
    let b = r.bytes(9, 2).unwrap();
    assert_eq!((&*a, &*b), (&b"jello"[..], &b"el"[..]));
    assert_eq!(r.write(8, b"x"), Err(Error::InUse), "write while read-borrowed");
    drop((a, b));
    r.write(8, b"x").unwrap();

    let ro = Mmap::create().unwrap();
    ro.set_memrange("static text").unwrap();
    ro.start().unwrap();
    let rr = ro.buf_ref(0, 11).unwrap();
    assert_eq!(&*rr.bytes(0, 6).unwrap(), b"static");
    assert_eq!(rr.write(0, b"S"), Err(Error::NotPermitted), "read-only memory");
    assert_eq!(rr.bytes_mut(0, 1).err(), Some(Error::NotPermitted));
}

#[test]
fn shared_memory_of_an_impossible_size_is_no_memory() {
    use doca_mmap::SharedMem;
    assert_eq!(SharedMem::alloc(usize::MAX).unwrap_err(), Error::NoMemory);
    assert_eq!(SharedMem::alloc(isize::MAX as usize).unwrap_err(), Error::NoMemory);
    assert_eq!(SharedMem::alloc(0).unwrap_err(), Error::InvalidValue, "nothing to allocate");
}

/// Two mappings of one memory in one process (an export imported by its own process) borrow
/// through one tracker: safe code never holds two `&mut` over the same bytes.
#[test]
fn an_export_imported_in_its_own_process_does_not_alias() {
    private_fabric();
    let (d, h) = (dpu(), host());
    let map = Mmap::create().unwrap();
    map.set_memrange(doca_mmap::SharedMem::alloc(8192).unwrap()).unwrap();
    map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.add_dev(&h).unwrap();
    map.start().unwrap();
    let imported = Mmap::create_from_export(None, &map.export_pci(&h).unwrap(), &d).unwrap();
    let (here, there) = (map.access().unwrap(), imported.access().unwrap());
    let mut w = here.bytes_mut(100, 10).unwrap();
    assert_eq!(there.bytes_mut(105, 10).err(), Some(Error::InUse), "the import sees the exporter's borrow");
    assert_eq!(there.bytes(109, 1).err(), Some(Error::InUse));
    assert_eq!(there.write(100, b"x").err(), Some(Error::InUse));
    assert!(there.bytes_mut(110, 10).is_ok(), "bytes next to it are free");
    w[0] = 7;
    drop(w);
    let mut b = [0u8; 1];
    there.read(100, &mut b).unwrap();
    assert_eq!(b, [7], "the same pages");
}

/// Shared memory and a mapping of it received back as a peer's (`RemoteMem`) in the same
/// process: one tracker as well.
#[test]
fn shared_memory_and_its_own_remote_view_do_not_alias() {
    let mem = doca_mmap::SharedMem::alloc(4096).unwrap();
    let region = mem.share().unwrap();
    let remote = doca_mmap::RemoteMem::open(region.fd, region.offset, region.len).unwrap();
    let guard = mem.bytes_mut(0, 64).unwrap();
    assert_eq!(remote.write(10, b"peer"), Err(Error::InUse), "no write under a live &mut");
    let mut out = [0u8; 4];
    assert_eq!(remote.read(60, &mut out), Err(Error::InUse), "no read under a live &mut");
    drop(guard);
    remote.write(10, b"peer").unwrap();
    mem.read(10, &mut out).unwrap();
    assert_eq!(&out, b"peer");
}

/// Copies into shared memory honour this process's guards however they are made: refused
/// (`IN_USE`) while a guard holds the bytes, through once it is gone — whether the source is
/// private or shared memory.
#[test]
fn copies_into_shared_memory_respect_guards() {
    let dst = Mmap::create().unwrap();
    dst.set_memrange(doca_mmap::SharedMem::alloc(4096).unwrap()).unwrap();
    dst.start().unwrap();
    let here = dst.access().unwrap();
    let r = here.share().unwrap().expect("shared memory");
    let remote = doca_mmap::RemoteMem::open(r.fd, r.offset, r.len).unwrap();
    for shared_src in [false, true] {
        let src = Mmap::create().unwrap();
        if shared_src {
            src.set_memrange(doca_mmap::SharedMem::alloc(4096).unwrap()).unwrap();
        } else {
            src.set_memrange(vec![0u8; 4096]).unwrap();
        }
        src.start().unwrap();
        let s = src.access().unwrap();
        s.write(0, b"fast").unwrap();
        {
            let guard = here.bytes(10, 2).unwrap();
            assert_eq!(s.copy_to(0, 4, &remote, 8), Err(Error::InUse), "a reader holds byte 10");
            assert_eq!(&*guard, &[0, 0], "nothing was written under the guard");
        }
        {
            let _guard = s.bytes_mut(2, 1).unwrap();
            assert_eq!(s.copy_to(0, 4, &remote, 8), Err(Error::InUse), "the source is being written");
        }
        s.copy_to(0, 4, &remote, 8).unwrap();
        assert_eq!(&*here.bytes(8, 4).unwrap(), b"fast");
        here.write(8, b"\0\0\0\0").unwrap();
    }
}

/// Memory that only a `RemoteMem` maps in this process (a peer's buffer, as the fast path
/// writes it) cannot be borrowed here, so copies into it need no lock — yet the source is
/// still checked: a write guard on it refuses the copy (`IN_USE`), a read guard does not;
/// bounds hold as ever.
#[test]
fn copies_into_memory_only_a_remote_view_maps_still_check_the_source() {
    let remote = remote_only(4096);
    let src = private_map(4096);
    let s = src.access().unwrap();
    s.write(0, b"fast").unwrap();
    {
        let _writing = s.bytes_mut(1, 1).unwrap();
        assert_eq!(s.copy_to(0, 4, &remote, 8), Err(Error::InUse), "the source is being written");
    }
    {
        let _reading = s.bytes(0, 4).unwrap();
        s.copy_to(0, 4, &remote, 8).unwrap();
    }
    let mut out = [0u8; 4];
    remote.read(8, &mut out).unwrap();
    assert_eq!(&out, b"fast");
    assert_eq!(s.copy_to(0, 4, &remote, 4093), Err(Error::InvalidValue), "past the end");
}

/// A write guard is exclusive within the process, for shared memory too: another thread's
/// copies into the same bytes wait for it or are refused (`IN_USE`), never land under it.
#[test]
fn a_write_guard_on_shared_memory_sees_no_other_threads_write() {
    use std::sync::atomic::{AtomicBool, Ordering};
    const N: usize = 64 << 10;
    let map = Mmap::create().unwrap();
    map.set_memrange(doca_mmap::SharedMem::alloc(N).unwrap()).unwrap();
    map.start().unwrap();
    let acc = map.access().unwrap();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let (other, halt) = (acc.clone(), stop.clone());
    let writer = std::thread::spawn(move || {
        let src = vec![0xaau8; N];
        while !halt.load(Ordering::Relaxed) {
            let _ = other.write(0, &src);
        }
    });
    for round in 0..2000 {
        if let Ok(mut g) = acc.bytes_mut(0, N) {
            g.fill(0x55);
            std::hint::black_box(&mut *g);
            assert!(g.iter().all(|&b| b == 0x55), "round {round}: another thread wrote under the guard");
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
}

/// A copy out of private memory never reads bytes another thread holds borrowed for writing:
/// every copy that succeeds carries one whole fill, never half of two.
#[test]
fn a_copy_never_reads_under_another_threads_write_guard() {
    use std::sync::atomic::{AtomicBool, Ordering};
    const N: usize = 64 << 10;
    let remote = remote_only(N); // the copy's destination takes no lock
    let src = private_map(N);
    let s = src.access().unwrap();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let writer_side_rounds = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (writer_side, halt, rounds) = (s.clone(), stop.clone(), writer_side_rounds.clone());
    let writer = std::thread::spawn(move || {
        let mut round = 0u8;
        while !halt.load(Ordering::Relaxed) {
            if let Ok(mut g) = writer_side.bytes_mut(0, N) {
                rounds.fetch_add(1, Ordering::Relaxed);
                round = round.wrapping_add(1);
                g.fill(round);
                std::hint::black_box(&mut *g);
            }
            // Leave room for copies between the guards.
            for _ in 0..100 {
                std::hint::spin_loop();
            }
        }
    });
    let (mut copied, mut torn) = (0, 0);
    let byte = |at| {
        let mut b = [0u8];
        remote.read(at, &mut b).unwrap();
        b[0]
    };
    while writer_side_rounds.load(Ordering::Relaxed) == 0 {
        std::thread::yield_now();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
    while std::time::Instant::now() < deadline {
        if s.copy_to(0, N, &remote, 0).is_ok() {
            copied += 1;
            // Fills and copies run front to back: a copy overtaken by a fill (or overtaking
            // one) differs between its ends.
            let first = byte(0);
            torn += usize::from(byte(N / 2) != first || byte(N - 1) != first);
        }
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(torn, 0, "{torn} of {copied} copies read bytes under a write guard");
}

/// A copy out of memory that another thread writes with `write` (a copy in under the lock,
/// no guard) never reads half of one write: each copy carries one whole fill.
#[test]
fn a_copy_never_reads_under_another_threads_write() {
    use std::sync::atomic::{AtomicBool, Ordering};
    const N: usize = 64 << 10;
    let remote = remote_only(N);
    let src = private_map(N);
    let s = src.access().unwrap();
    let (stop, started) =
        (std::sync::Arc::new(AtomicBool::new(false)), std::sync::Arc::new(AtomicBool::new(false)));
    let (writer_side, halt, up) = (s.clone(), stop.clone(), started.clone());
    let writer = std::thread::spawn(move || {
        let fills = [vec![0x11u8; N], vec![0x22u8; N]];
        let mut i = 0;
        loop {
            writer_side.write(0, &fills[i & 1]).unwrap();
            i += 1;
            up.store(true, Ordering::Relaxed);
            if halt.load(Ordering::Relaxed) {
                return i;
            }
        }
    });
    while !started.load(Ordering::Relaxed) {
        std::thread::yield_now();
    }
    let byte = |at| {
        let mut b = [0u8];
        remote.read(at, &mut b).unwrap();
        b[0]
    };
    let (mut copied, mut torn) = (0, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
    while std::time::Instant::now() < deadline {
        s.copy_to(0, N, &remote, 0).unwrap();
        copied += 1;
        let first = byte(0);
        torn += usize::from(byte(N / 2) != first || byte(N - 1) != first);
    }
    stop.store(true, Ordering::Relaxed);
    let writes = writer.join().unwrap();
    assert_eq!(torn, 0, "{torn} of {copied} copies read half of {writes} writes");
}

#[test]
fn eight_byte_atomics_on_shared_memory_are_exact_and_checked() {
    private_fabric();
    let (d, h) = (dpu(), host());
    let map = Mmap::create().unwrap();
    map.set_memrange(doca_mmap::SharedMem::alloc(8192).unwrap()).unwrap();
    map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.add_dev(&h).unwrap();
    map.start().unwrap();
    let imported = Mmap::create_from_export(None, &map.export_pci(&h).unwrap(), &d).unwrap();
    let (here, there) = (map.access().unwrap(), imported.access().unwrap());
    assert!(here.is_mapped_here() && there.is_mapped_here());
    // The checks: alignment, bounds; a borrow of the word in this process.
    assert_eq!(there.atomic_fetch_add_u64(4, 1).err(), Some(Error::InvalidValue), "not aligned");
    assert_eq!(there.atomic_cas_u64(8192 - 4, 0, 1).err(), Some(Error::InvalidValue), "out of bounds");
    let g = here.bytes(64, 8).unwrap();
    assert_eq!(there.atomic_fetch_add_u64(64, 1).err(), Some(Error::InUse));
    drop(g);
    // Compare-and-swap: the old value either way, the swap only on a match.
    assert_eq!(there.atomic_cas_u64(64, 0, 10).unwrap(), 0);
    assert_eq!(there.atomic_cas_u64(64, 0, 20).unwrap(), 10);
    assert_eq!(here.atomic_fetch_add_u64(64, 5).unwrap(), 10);
    // Four threads through two mappings of the same pages: not one addition lost.
    std::thread::scope(|s| {
        for i in 0..4 {
            let a = if i % 2 == 0 { here.clone() } else { there.clone() };
            s.spawn(move || {
                for _ in 0..10_000 {
                    a.atomic_fetch_add_u64(128, 1).unwrap();
                }
            });
        }
    });
    let mut v = [0u8; 8];
    here.read(128, &mut v).unwrap();
    assert_eq!(u64::from_ne_bytes(v), 40_000);
    // Private memory is mapped here too.
    let p = private_map(64);
    assert_eq!(p.access().unwrap().atomic_fetch_add_u64(8, 2).unwrap(), 0);
}
