//! A process on the other side of the emulated link, for the sync event tests. One command
//! per stdin line, one answer per stdout line (`ok`, `err <DOCA code name>`, `value <n>`,
//! `blob <hex>`):
//!
//! - `export <host|dpu> <25|29>`: a new event, started standalone, exported from that side's
//!   device (`export_to_dpu` or `export_to_remote_pci`) → `blob <hex>`
//! - `import <hex>`: `create_from_export` on this process's device, started standalone
//! - `set_after <ms> <n>`: sleeps `ms` milliseconds, then sets (the other side is asleep by then)
//! - `set <n>`, `add <n>` (→ `value <before>`), `get` (→ `value <n>`)
//! - `wait_eq <n>`, `wait_gt <n>`, `wait_neq <n>` (mask all ones; blocking),
//!   `wait_eq_yield <n>`: → `ok` once it holds
//! - `destroy`: destroys the event (an exporter's destroy revokes it)
//! - `scribble <offset> <len> <hex>`: writes the bytes `hex`, repeated, over `len` bytes of
//!   the event's shared page from `offset` (a hostile importer)
//! - `flood <n> <hex>`: imports the blob `n` more times, each a context started on one
//!   engine (each asks the exporter for a doorbell slot) → `value <n>`
//! - `die`: exits at once, destroying nothing

use std::io::BufRead;

use doca_core::{open_device_with_pci, Error, Pe};
use doca_sync_event::{Cmp, Location, SyncEvent, WaitMode};
use doca_tests::{from_hex, to_hex};

fn main() {
    let side = std::env::args().nth(1).unwrap_or_else(|| "host".into());
    let dev = open_device_with_pci(if side == "dpu" { "03:00.0" } else { "b1:00.0" }, None).expect("device");
    let mut ev: Option<SyncEvent> = None;
    let mut flood: Vec<SyncEvent> = Vec::new();
    let pe = Pe::create().expect("engine");
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("stdin");
        let mut w = line.split(' ');
        let (cmd, arg) = (w.next().unwrap_or(""), w.next());
        let num = || arg.and_then(|a| a.parse::<u64>().ok()).ok_or(Error::InvalidValue);
        let wait = |ev: &Option<SyncEvent>, cmp, mode| -> Result<String, Error> {
            ev.as_ref().ok_or(Error::BadState)?.wait(cmp, num()?, u64::MAX, mode).map(|()| "ok".into())
        };
        let answer: Result<String, Error> = match cmd {
            "export" => (|| {
                let e = SyncEvent::create()?;
                e.add_publisher_location(Location::RemotePci)?;
                e.add_subscriber_location(Location::Cpu(dev.as_devinfo().pci_addr()))?;
                e.start()?;
                let blob = if w.next() == Some("25") {
                    e.export_to_dpu(&dev)?
                } else {
                    e.export_to_remote_pci(&dev)?
                };
                ev = Some(e);
                Ok(format!("blob {}", to_hex(&blob)))
            })(),
            "import" => (|| {
                let blob = from_hex(arg.ok_or(Error::InvalidValue)?).ok_or(Error::InvalidValue)?;
                let e = SyncEvent::create_from_export(&dev, &blob)?;
                e.start()?;
                ev = Some(e);
                Ok("ok".into())
            })(),
            "set_after" => (|| {
                let ms = num()?;
                let v = w.next().and_then(|a| a.parse::<u64>().ok()).ok_or(Error::InvalidValue)?;
                std::thread::sleep(std::time::Duration::from_millis(ms));
                ev.as_ref().ok_or(Error::BadState)?.update_set(v).map(|()| "ok".into())
            })(),
            "set" => (|| ev.as_ref().ok_or(Error::BadState)?.update_set(num()?).map(|()| "ok".into()))(),
            "add" => {
                (|| ev.as_ref().ok_or(Error::BadState)?.update_add(num()?).map(|v| format!("value {v}")))()
            }
            "get" => (|| ev.as_ref().ok_or(Error::BadState)?.get().map(|v| format!("value {v}")))(),
            "wait_eq" => wait(&ev, Cmp::Eq, WaitMode::Sleep),
            "wait_gt" => wait(&ev, Cmp::Gt, WaitMode::Sleep),
            "wait_neq" => wait(&ev, Cmp::Neq, WaitMode::Sleep),
            "wait_eq_yield" => wait(&ev, Cmp::Eq, WaitMode::Yield),
            "destroy" => (|| {
                let e = ev.take().ok_or(Error::BadState)?;
                let _ = e.stop();
                e.destroy().map_err(|r| r.error).map(|()| "ok".into())
            })(),
            "scribble" => (|| {
                let off = num()? as usize;
                let len = w.next().and_then(|a| a.parse::<usize>().ok()).ok_or(Error::InvalidValue)?;
                let pattern = w.next().and_then(from_hex).ok_or(Error::InvalidValue)?;
                ev.as_ref().ok_or(Error::BadState)?.hostile_fill_page(off, len, &pattern);
                Ok("ok".into())
            })(),
            "flood" => (|| {
                let n = num()?;
                let blob = w.next().and_then(from_hex).ok_or(Error::InvalidValue)?;
                for _ in 0..n {
                    let e = SyncEvent::create_from_export(&dev, &blob)?;
                    let ctx = e.as_ctx()?;
                    pe.connect_ctx(&ctx)?;
                    ctx.start()?;
                    while pe.progress() {}
                    flood.push(e);
                }
                Ok(format!("value {}", flood.len()))
            })(),
            "die" => std::process::exit(0),
            _ => Err(Error::InvalidValue),
        };
        match answer {
            Ok(a) => println!("{a}"),
            Err(e) => println!("err {}", e.name()),
        }
    }
}
