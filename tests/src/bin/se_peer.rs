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
//! - `die`: exits at once, destroying nothing

use std::io::BufRead;

use doca_core::{open_device_with_pci, Error};
use doca_sync_event::{Cmp, Location, SyncEvent, WaitMode};
use doca_tests::{from_hex, to_hex};

fn main() {
    let side = std::env::args().nth(1).unwrap_or_else(|| "host".into());
    let dev = open_device_with_pci(if side == "dpu" { "03:00.0" } else { "b1:00.0" }, None).expect("device");
    let mut ev: Option<SyncEvent> = None;
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
            "die" => std::process::exit(0),
            _ => Err(Error::InvalidValue),
        };
        match answer {
            Ok(a) => println!("{a}"),
            Err(e) => println!("err {}", e.name()),
        }
    }
}
