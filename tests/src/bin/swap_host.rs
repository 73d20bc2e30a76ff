//! A host process for the tests of heap exports shared at memory speed (whole pages swapped
//! for shared memory, see `doca_mmap`'s swap module). Memory comes from C's allocator (or a
//! plain anonymous `mmap`), registered by address as a C host does. One command per stdin
//! line, one answer per stdout line (`ok`, `err <what>`):
//!
//! - `export <len> <rw|ro>`: `malloc(len)` filled with pattern 1, registered, exported from
//!   host function b1:00.0 (read-write or read-only) → `desc <hex> <address>`; exports are
//!   numbered from 0 in order
//! - `export_mmap <len>`: the same (read-write) with memory of an anonymous `mmap`, starting
//!   100 bytes into it (partial pages at both ends)
//! - `export_counting <len> <threads>`: as `export … rw`, with `threads` threads incrementing
//!   counters in the range's whole pages from before the export (see `count_start`)
//! - `count_start <export> <threads>`: threads each incrementing a `u64` of their own (in
//!   page `t` of the range's whole pages) with plain loads and stores, as fast as they can
//! - `count_check`: stops and joins the counting threads; each counter must equal the
//!   increments its thread made → `counted <total> <writes that met a frozen span so far>`,
//!   or `lost <thread> <memory> <made>`
//! - `fill <export> <offset> <len> <seed>`: writes the pattern of `seed` there (plain stores)
//! - `fnv <export> <offset> <len>` / `hex <export> <offset> <len>`: the bytes there
//! - `fork_write <export> <offset> <text>`: forks; the child checks it sees the range as it
//!   was at the fork, writes `text` at `offset`, reads it back and exits (status 0 when all
//!   held); the parent waits and checks its own bytes are unchanged → `ok`
//! - `stop <export>` / `destroy <export>`: revokes the export
//! - `free <export>`: gives the memory back (`free`, or `munmap` for `export_mmap`) while the
//!   map still holds it (an application bug) and maps a page-aligned poison of `0xab` over the
//!   old whole pages where nothing is mapped any more → `ok` or `taken` (the address was
//!   reused already: no poison)
//! - `poisoned <export>`: whether the poison is intact → `ok`

use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use doca_core::open_device_with_pci;
use doca_mmap::{AccessFlags, Memory, Mmap};
use doca_tests::{checked::fnv32, to_hex};

fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9).wrapping_add(seed) >> 3) as u8).collect()
}

const PAGE: usize = 4096;

/// One exported range: where, how long, how it was allocated.
struct Range {
    map: Option<Mmap>,
    addr: usize,
    len: usize,
    /// `Some(base, len)` of the anonymous mapping for `export_mmap`; `None` for `malloc`.
    mapped: Option<(usize, usize)>,
    poison: Option<(usize, usize)>,
}

impl Range {
    fn whole_pages(&self) -> (usize, usize) {
        let start = self.addr.div_ceil(PAGE) * PAGE;
        let end = (self.addr + self.len) / PAGE * PAGE;
        (start, end.saturating_sub(start))
    }

    fn check(&self, off: usize, len: usize) -> Result<*mut u8, String> {
        if off.checked_add(len).is_none_or(|e| e > self.len) {
            return Err("range".into());
        }
        Ok((self.addr + off) as *mut u8)
    }

    /// A copy of the bytes at `off` (plain loads).
    fn get(&self, off: usize, len: usize) -> Result<Vec<u8>, String> {
        let p = self.check(off, len)?;
        // SAFETY: inside the allocation this process made and still holds (the tests never
        // ask after `free`); this harness plays a C host reading its own buffer.
        Ok(unsafe { std::slice::from_raw_parts(p, len) }.to_vec())
    }

    /// Stores `bytes` at `off` (plain stores).
    fn put(&self, off: usize, bytes: &[u8]) -> Result<(), String> {
        let p = self.check(off, bytes.len())?;
        // SAFETY: as in `get`: the host writing its own buffer.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len()) };
        Ok(())
    }
}

struct Counting {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<(usize, u64)>>,
}

fn count_start(r: &Range, n: usize) -> Result<Counting, String> {
    let (start, len) = r.whole_pages();
    if n == 0 || n * PAGE > len {
        return Err("too many threads for the pages".into());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let threads = (0..n)
        .map(|t| {
            let stop = stop.clone();
            let at = start + t * PAGE + 64;
            std::thread::spawn(move || {
                let p = at as *mut u64;
                // SAFETY: as below: the counter starts at 0.
                unsafe { p.write_volatile(0) };
                let mut made = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..64 {
                        // SAFETY: a word of the host's own range, written by this thread only.
                        unsafe { p.write_volatile(p.read_volatile() + 1) };
                        made += 1;
                    }
                }
                (at, made)
            })
        })
        .collect();
    // Running before the caller goes on.
    std::thread::sleep(std::time::Duration::from_millis(50));
    Ok(Counting { stop, threads })
}

fn count_check(c: Counting) -> String {
    c.stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for (t, h) in c.threads.into_iter().enumerate() {
        let (at, made) = h.join().expect("counting thread");
        // SAFETY: the word the thread wrote, in the host's own range.
        let mem = unsafe { (at as *const u64).read_volatile() };
        if mem != made {
            return format!("lost {t} {mem} {made}");
        }
        total += made;
    }
    format!("counted {total} {}", doca_mmap::frozen_writes())
}

fn fork_write(r: &Range, off: usize, text: &str) -> Result<String, String> {
    let before = r.get(0, r.len)?;
    r.check(off, text.len())?;
    // SAFETY: fork; the child runs async-signal-safe code only (plain memory accesses on
    // memory allocated before the fork, then _exit).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork".into());
    }
    if pid == 0 {
        // SAFETY: the host's own range, still mapped in the child.
        let mine = unsafe { std::slice::from_raw_parts_mut(r.addr as *mut u8, r.len) };
        let mut ok = mine == &before[..];
        mine[off..off + text.len()].copy_from_slice(text.as_bytes());
        ok &= &mine[off..off + text.len()] == text.as_bytes();
        // SAFETY: ends the child at once (no destructor, no atexit).
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: waiting for our child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    if !libc::WIFEXITED(status) || libc::WEXITSTATUS(status) != 0 {
        return Err(format!("child status {status:#x}"));
    }
    if r.get(0, r.len)? != before {
        return Err("the child's write reached the parent".into());
    }
    Ok("ok".into())
}

fn free(r: &mut Range) -> Result<String, String> {
    let (start, len) = r.whole_pages();
    match r.mapped {
        // SAFETY: the application's own allocation, given back (the map still holds it: the
        // bug this command plays).
        None => unsafe { libc::free(r.addr as *mut libc::c_void) },
        // SAFETY: as above, for the anonymous mapping.
        Some((base, l)) => unsafe {
            libc::munmap(base as *mut libc::c_void, l);
        },
    }
    // SAFETY: a new mapping only where nothing is mapped (MAP_FIXED_NOREPLACE).
    let p = unsafe {
        libc::mmap(
            start as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED || p as usize != start {
        return Ok("taken".into());
    }
    // SAFETY: the mapping just made.
    unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0xab, len) };
    r.poison = Some((start, len));
    Ok("ok".into())
}

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .init();
    let host = open_device_with_pci("b1:00.0", None).expect("host device");
    let mut ranges: Vec<Range> = Vec::new();
    let mut counting: Option<Counting> = None;
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin");
        let w: Vec<&str> = line.split(' ').collect();
        let num = |i: usize| -> Result<usize, String> {
            w.get(i).and_then(|s| s.parse().ok()).ok_or_else(|| format!("word {i}"))
        };
        let answer: Result<String, String> = (|| match w[0] {
            "export" | "export_mmap" | "export_counting" => {
                let len = num(1)?;
                let (addr, mapped) = if w[0] == "export_mmap" {
                    let l = (len + 100).div_ceil(PAGE) * PAGE;
                    // SAFETY: a fresh anonymous mapping.
                    let p = unsafe {
                        libc::mmap(
                            std::ptr::null_mut(),
                            l,
                            libc::PROT_READ | libc::PROT_WRITE,
                            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                            -1,
                            0,
                        )
                    };
                    if p == libc::MAP_FAILED {
                        return Err("mmap".into());
                    }
                    (p as usize + 100, Some((p as usize, l)))
                } else {
                    // SAFETY: plain allocation (never null-checked away: checked below).
                    let p = unsafe { libc::malloc(len) };
                    if p.is_null() {
                        return Err("malloc".into());
                    }
                    (p as usize, None)
                };
                let mut r = Range { map: None, addr, len, mapped, poison: None };
                r.put(0, &pattern(1, len))?;
                let ro = w.get(2) == Some(&"ro");
                let map = Mmap::create().map_err(|e| e.name().to_string())?;
                let go = || -> Result<Vec<u8>, doca_core::Error> {
                    // SAFETY: the allocation lives until `free` (never asked before the map is
                    // done with it, except by the test of that bug).
                    let mem = unsafe {
                        Memory::from_raw(std::ptr::NonNull::new(addr as *mut u8).unwrap(), len, true)
                    };
                    map.set_memrange(mem)?;
                    map.set_permissions(if ro {
                        AccessFlags::PCI_READ_ONLY
                    } else {
                        AccessFlags::PCI_READ_WRITE
                    })?;
                    map.add_dev(&host)?;
                    map.start()?;
                    Ok(Vec::new())
                };
                go().map_err(|e| e.name().to_string())?;
                if w[0] == "export_counting" {
                    counting = Some(count_start(&r, num(2)?)?);
                }
                let desc = map.export_pci(&host).map_err(|e| e.name().to_string())?;
                r.map = Some(map);
                ranges.push(r);
                Ok(format!("desc {} {addr}", to_hex(&desc)))
            }
            "count_start" => {
                counting = Some(count_start(ranges.get(num(1)?).ok_or("export")?, num(2)?)?);
                Ok("ok".into())
            }
            "count_check" => Ok(count_check(counting.take().ok_or("not counting")?)),
            "fill" => {
                let r = ranges.get(num(1)?).ok_or("export")?;
                r.put(num(2)?, &pattern(num(4)? as u64, num(3)?))?;
                Ok("ok".into())
            }
            "fnv" | "hex" => {
                let r = ranges.get(num(1)?).ok_or("export")?;
                let b = r.get(num(2)?, num(3)?)?;
                Ok(if w[0] == "fnv" { format!("fnv {}", fnv32(&b)) } else { format!("hex {}", to_hex(&b)) })
            }
            "fork_write" => {
                let r = ranges.get(num(1)?).ok_or("export")?;
                fork_write(r, num(2)?, w.get(3).ok_or("text")?)
            }
            "stop" => {
                let r = ranges.get(num(1)?).ok_or("export")?;
                r.map.as_ref().ok_or("destroyed")?.stop().map_err(|e| e.name().to_string())?;
                Ok("ok".into())
            }
            "destroy" => {
                let r = ranges.get_mut(num(1)?).ok_or("export")?;
                r.map.take().ok_or("destroyed")?.destroy().map_err(|e| e.error.name().to_string())?;
                Ok("ok".into())
            }
            "free" => free(ranges.get_mut(num(1)?).ok_or("export")?),
            "poisoned" => {
                let r = ranges.get(num(1)?).ok_or("export")?;
                let (p, l) = r.poison.ok_or("no poison")?;
                // SAFETY: the poison mapping this process made and keeps.
                let b = unsafe { std::slice::from_raw_parts(p as *const u8, l) };
                if b.iter().all(|&x| x == 0xab) {
                    Ok("ok".into())
                } else {
                    Err("the poison was overwritten".into())
                }
            }
            _ => Err("unknown command".into()),
        })();
        match answer {
            Ok(a) => println!("{a}"),
            Err(e) => println!("err {e}"),
        }
    }
}
