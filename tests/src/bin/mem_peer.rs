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
//!   while this process's main thread blocks reading stdin)
//! - `addr <export>`: the exported map's address (its memrange start: what a host sends the
//!   DPU so that it names host buffers by host addresses) → `addr <n>`
//! - `host_fill <export> <offset> <len> <seed>`: writes the checked pattern of `seed` there
//! - `host_hex <export> <offset> <len>` / `host_fnv <export> <offset> <len>`: the exporter's
//!   own view of its bytes, as hex or as their FNV-1a checksum (`fnv <n>`)
//! - `stop <export>` / `destroy <export>`: stops or destroys the exported map (revoking it)
//! - `nondumpable`: makes this process non-dumpable (`PR_SET_DUMPABLE` 0)

use std::io::BufRead;

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, Error};
use doca_mmap::{AccessFlags, Mmap, SharedMem};
use doca_tests::{checked::fnv32, from_hex, to_hex};

/// The bytes `host_fill` writes: a function of the seed and the position.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9).wrapping_add(seed) >> 3) as u8).collect()
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
            // This process becomes non-dumpable (its /proc/<pid>/fd closed to its own user).
            (Some("nondumpable"), None, None) => {
                rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable)
                    .map(|()| "ok".to_string())
                    .map_err(|_| Error::OperatingSystem)
            }
            (Some(cmd @ ("export" | "export_heap")), Some(len), Some(text)) => (|| {
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
                map.set_permissions(AccessFlags::PCI_READ_WRITE)?;
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
