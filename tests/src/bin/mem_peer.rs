//! A process on the other side of the emulated link, for the memory tests. One command per
//! stdin line, one answer per stdout line (`ok`, `err <DOCA code name>`, `data <text>`,
//! `desc <hex>`):
//!
//! - `import <hex>`: `create_from_export` on the DPU device
//! - `write <offset> <text>` / `read <offset> <len>`: through a buffer on the imported map
//! - `fetch <offset> <len>` / `store <offset> <text>`: the same as plain copies through the
//!   imported map (no buffer: what works on a served import, whose bytes cannot be borrowed)
//! - `read_addr <address> <len>`: the same, at an address as the exporter counts it (C's
//!   pattern: the exporter sends its own buffer address)
//! - `export <len> <text>`: shared memory holding `text`, exported from host function b1:00.0
//!   (exports are numbered from 0 in order); `export_heap <len> <text>`: the same with heap
//!   memory (a `Vec`, registered by address: the export is served by the library's threads
//!   while this process's main thread blocks reading stdin); `export_ro <len> <text>`: heap
//!   memory exported read-only (`PCI_READ_ONLY`)
//! - `addr <export>`: the exported map's address (its memrange start: what a host sends the
//!   DPU so that it names host buffers by host addresses) → `addr <n>`
//! - `host_fill <export> <offset> <len> <seed>`: writes the checked pattern of `seed` there
//! - `host_hex <export> <offset> <len>` / `host_fnv <export> <offset> <len>`: the exporter's
//!   own view of its bytes, as hex or as their FNV-1a checksum (`fnv <n>`)
//! - `stop <export>` / `destroy <export>`: stops or destroys the exported map (revoking it)
//! - `nondumpable`: makes this process non-dumpable (`PR_SET_DUMPABLE` 0)
//! - `dma_fetch <offset> <len>`: a DMA task (on the DPU device) copies the imported map's
//!   bytes there into local memory → `fnv <n>` of what arrived
//! - `dma_store <offset> <len> <seed>`: a DMA task copies local memory holding the pattern of
//!   `seed` into the imported map there
//! - `dma_until_error <len>`: answers `looping`, then DMA-reads `len` bytes from the imported
//!   map's start again and again until a task fails → `failed <n> <DOCA code name>` (`n`:
//!   the copies that succeeded before)

use std::io::BufRead;

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_core::{open_device_with_pci, Data, Dev, Error, Pe};
use doca_dma::{Dma, MemcpyTask};
use doca_mmap::{AccessFlags, Mmap, SharedMem};
use doca_tests::{checked::fnv32, from_hex, to_hex};

/// The bytes `host_fill` writes: a function of the seed and the position.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9).wrapping_add(seed) >> 3) as u8).collect()
}

/// A DMA context on the DPU device, progressed until each task completes.
struct Engine {
    pe: Pe,
    dma: Dma,
    seen: Rc<RefCell<Vec<Result<(), Error>>>>,
}

impl Engine {
    fn new(dev: &Dev) -> Result<Engine, Error> {
        let pe = Pe::create()?;
        let dma = Dma::create(dev)?;
        pe.connect_ctx(&dma.as_ctx())?;
        let seen: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
        let (a, b) = (seen.clone(), seen.clone());
        dma.task_memcpy_set_conf(
            move |t: MemcpyTask, _, _| a.borrow_mut().push(t.status()),
            move |t: MemcpyTask, _, _| b.borrow_mut().push(t.status()),
            4,
        )?;
        dma.as_ctx().start()?;
        Ok(Engine { pe, dma, seen })
    }

    /// One task: its status. A failed task stops the context (DOCA's engine): it is started
    /// again once Idle.
    fn copy(&self, src: &Buf, dst: &Buf) -> Result<(), Error> {
        let before = self.seen.borrow().len();
        self.dma.task_memcpy_alloc_init(Some(src), Some(dst), Data::NONE)?.submit()?;
        while self.seen.borrow().len() == before {
            let _ = self.pe.wait(Some(std::time::Duration::from_millis(50)));
            while self.pe.progress() {}
        }
        let status = *self.seen.borrow().last().expect("a completion");
        if status.is_err() {
            while self.dma.as_ctx().state() != doca_core::CtxState::Idle {
                let _ = self.pe.wait(Some(std::time::Duration::from_millis(10)));
                self.pe.progress();
            }
            self.dma.as_ctx().start()?;
        }
        status
    }
}

/// Local memory of `len` bytes on the DPU device (holding `fill`).
fn local_map(dev: &Dev, fill: Vec<u8>) -> Result<Mmap, Error> {
    let map = Mmap::create()?;
    map.set_memrange(fill)?;
    map.add_dev(dev)?;
    map.start()?;
    Ok(map)
}

fn main() {
    // The library's warnings (a refused importer, a place given away) on stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .init();
    let inv = Inventory::create(16).expect("inventory");
    inv.start().expect("inventory start");
    let dpu = open_device_with_pci("03:00.0", None).expect("dpu device");
    let host = open_device_with_pci("b1:00.0", None).expect("host device");
    let mut imported: Option<Mmap> = None;
    let mut exported: Vec<Option<Mmap>> = Vec::new();
    let mut engine: Option<Engine> = None;
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin");
        let mut words = line.splitn(3, ' ');
        let answer: Result<String, Error> = match (words.next(), words.next(), words.next()) {
            (Some("import"), Some(hex), None) => (|| {
                let desc = from_hex(hex).ok_or(Error::InvalidValue)?;
                imported = Some(Mmap::create_from_export(None, &desc, &dpu)?);
                Ok("ok".to_string())
            })(),
            (Some("write"), Some(off), Some(text)) => (|| {
                let map = imported.as_ref().ok_or(Error::BadState)?;
                let off: usize = off.parse().map_err(|_| Error::InvalidValue)?;
                let buf = inv.buf_get_at(map, off, text.len())?;
                let r = buf.append(text.as_bytes());
                buf.dec_refcount()?;
                r.map(|()| "ok".to_string())
            })(),
            (Some("read"), Some(off), Some(len)) => (|| {
                let map = imported.as_ref().ok_or(Error::BadState)?;
                let off: usize = off.parse().map_err(|_| Error::InvalidValue)?;
                let len: usize = len.parse().map_err(|_| Error::InvalidValue)?;
                let buf = inv.buf_get_data_at(map, off, len)?;
                let r = buf.data_to_vec();
                buf.dec_refcount()?;
                Ok(format!("data {}", String::from_utf8_lossy(&r?)))
            })(),
            (Some("fetch"), Some(off), Some(len)) => (|| {
                let map = imported.as_ref().ok_or(Error::BadState)?;
                let off: usize = off.parse().map_err(|_| Error::InvalidValue)?;
                let len: usize = len.parse().map_err(|_| Error::InvalidValue)?;
                let mut got = vec![0u8; len];
                map.access()?.read(off, &mut got)?;
                Ok(format!("data {}", String::from_utf8_lossy(&got)))
            })(),
            (Some("store"), Some(off), Some(text)) => (|| {
                let map = imported.as_ref().ok_or(Error::BadState)?;
                let off: usize = off.parse().map_err(|_| Error::InvalidValue)?;
                map.access()?.write(off, text.as_bytes()).map(|()| "ok".to_string())
            })(),
            (Some("read_addr"), Some(addr), Some(len)) => (|| {
                let map = imported.as_ref().ok_or(Error::BadState)?;
                let addr: usize = addr.parse().map_err(|_| Error::InvalidValue)?;
                let len: usize = len.parse().map_err(|_| Error::InvalidValue)?;
                let buf = inv.buf_get_by_data(map, addr, len)?;
                let r = buf.data_to_vec();
                buf.dec_refcount()?;
                Ok(format!("data {}", String::from_utf8_lossy(&r?)))
            })(),
            (Some(cmd @ ("dma_fetch" | "dma_store" | "dma_until_error")), Some(a), rest) => (|| {
                let map = imported.as_ref().ok_or(Error::BadState)?;
                if engine.is_none() {
                    engine = Some(Engine::new(&dpu)?);
                }
                let engine = engine.as_ref().expect("made");
                let nums: Vec<usize> = std::iter::once(a)
                    .chain(rest.unwrap_or("").split_whitespace())
                    .map(|w| w.parse().map_err(|_| Error::InvalidValue))
                    .collect::<Result<_, _>>()?;
                match (cmd, nums.as_slice()) {
                    ("dma_fetch", &[off, len]) => {
                        let local = local_map(&dpu, vec![0u8; len])?;
                        let from = inv.buf_get_data_at(map, off, len)?;
                        let to = inv.buf_get_at(&local, 0, len)?;
                        let r = engine.copy(&from, &to).and_then(|()| to.data_to_vec());
                        from.dec_refcount()?;
                        to.dec_refcount()?;
                        Ok(format!("fnv {}", fnv32(&r?)))
                    }
                    ("dma_store", &[off, len, seed]) => {
                        let local = local_map(&dpu, pattern(seed as u64, len))?;
                        let from = inv.buf_get_data_at(&local, 0, len)?;
                        let to = inv.buf_get_at(map, off, len)?;
                        let r = engine.copy(&from, &to);
                        from.dec_refcount()?;
                        to.dec_refcount()?;
                        r.map(|()| "ok".to_string())
                    }
                    ("dma_until_error", &[len]) => {
                        let local = local_map(&dpu, vec![0u8; len])?;
                        let from = inv.buf_get_data_at(map, 0, len)?;
                        println!("looping");
                        let mut n = 0u64;
                        let failed = loop {
                            let to = inv.buf_get_at(&local, 0, len)?;
                            let r = engine.copy(&from, &to);
                            to.dec_refcount()?;
                            match r {
                                Ok(()) => n += 1,
                                Err(e) => break e,
                            }
                        };
                        from.dec_refcount()?;
                        Ok(format!("failed {n} {}", failed.name()))
                    }
                    _ => Err(Error::InvalidValue),
                }
            })(),
            // This process becomes non-dumpable (its /proc/<pid>/fd closed to its own user).
            (Some("nondumpable"), None, None) => {
                rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
                    .map(|()| "ok".to_string())
                    .map_err(|_| Error::OperatingSystem)
            }
            (Some(cmd @ ("export" | "export_heap" | "export_ro")), Some(len), Some(text)) => (|| {
                let len: usize = len.parse().map_err(|_| Error::InvalidValue)?;
                let map = Mmap::create()?;
                if cmd == "export" {
                    let mem = SharedMem::alloc(len)?;
                    mem.write(0, text.as_bytes())?;
                    map.set_memrange(mem)?;
                } else {
                    // Heap memory registered as it is (served by the library's threads).
                    let mut mem = vec![0u8; len];
                    mem.get_mut(..text.len()).ok_or(Error::InvalidValue)?.copy_from_slice(text.as_bytes());
                    map.set_memrange(mem)?;
                }
                map.set_permissions(if cmd == "export_ro" {
                    AccessFlags::PCI_READ_ONLY
                } else {
                    AccessFlags::PCI_READ_WRITE
                })?;
                map.add_dev(&host)?;
                map.start()?;
                let desc = map.export_pci(&host)?;
                exported.push(Some(map));
                Ok(format!("desc {}", to_hex(&desc)))
            })(),
            (
                Some(cmd @ ("addr" | "stop" | "destroy" | "host_fill" | "host_hex" | "host_fnv")),
                Some(i),
                rest,
            ) => (|| {
                let i: usize = i.parse().map_err(|_| Error::InvalidValue)?;
                let slot = exported.get_mut(i).ok_or(Error::InvalidValue)?;
                if cmd == "destroy" {
                    let map = slot.take().ok_or(Error::BadState)?;
                    return map.destroy().map(|()| "ok".to_string()).map_err(|r| r.error);
                }
                let map = slot.as_ref().ok_or(Error::BadState)?;
                let nums: Vec<usize> = rest
                    .unwrap_or("")
                    .split_whitespace()
                    .map(|w| w.parse().map_err(|_| Error::InvalidValue))
                    .collect::<Result<_, _>>()?;
                match (cmd, nums.as_slice()) {
                    ("addr", []) => Ok(format!("addr {}", map.memrange()?.0)),
                    ("stop", []) => map.stop().map(|()| "ok".to_string()),
                    ("host_fill", &[off, len, seed]) => {
                        let buf = inv.buf_get_at(map, off, len)?;
                        let r = buf.append(&pattern(seed as u64, len));
                        buf.dec_refcount()?;
                        r.map(|()| "ok".to_string())
                    }
                    ("host_hex" | "host_fnv", &[off, len]) => {
                        let buf = inv.buf_get_data_at(map, off, len)?;
                        let r = buf.data_to_vec();
                        buf.dec_refcount()?;
                        let bytes = r?;
                        Ok(if cmd == "host_hex" {
                            format!("hex {}", to_hex(&bytes))
                        } else {
                            format!("fnv {}", fnv32(&bytes))
                        })
                    }
                    _ => Err(Error::InvalidValue),
                }
            })(),
            _ => Err(Error::InvalidValue),
        };
        match answer {
            Ok(a) => println!("{a}"),
            Err(e) => println!("err {}", e.name()),
        }
    }
}
