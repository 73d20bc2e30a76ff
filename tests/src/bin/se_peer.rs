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
//! - `export_ctx <host|dpu> <25|29>`, `import_ctx <hex>`: as `export` and `import`, the
//!   event a context started on this process's engine instead (for the `task_*` commands)
//! - `task_wait_eq <n> <ms>`: submits a wait-eq task (mask all ones) and sleeps on the
//!   engine's notification handle (each sleep at most `ms`) until it completes → `ok <sleeps
//!   that were woken>`, `err <status>`, or `err TIME_OUT` when a sleep ended with nothing
//!   woken
//! - `task_get`, `task_set <n>`, `task_add <n>`: the task, progressed until it completes →
//!   `value <n>` (get), `ok` (set), `value <before>` (add)
//! - `across`: `value 1` when the event was imported over the remote link, else `value 0`
//! - `die`: exits at once, destroying nothing

use std::cell::RefCell;
use std::io::BufRead;
use std::rc::Rc;
use std::time::Duration;

use doca_core::{open_device_with_pci, Dev, Error, Pe};
use doca_sync_event::{Cmp, Location, SyncEvent, WaitMode};
use doca_tests::{from_hex, to_hex};

/// Statuses (and values) of the tasks that completed, in order.
type Done = Rc<RefCell<Vec<Result<u64, Error>>>>;

/// `ev` as a context started on `pe`, its tasks' outcomes landing in `done`.
fn start_ctx(ev: &SyncEvent, pe: &Pe, done: &Done) -> Result<(), Error> {
    let ctx = ev.as_ctx()?;
    pe.connect_ctx(&ctx)?;
    let d = |d: &Done| d.clone();
    let (a, b) = (d(done), d(done));
    ev.task_wait_eq_set_conf(
        move |t, _, _| a.borrow_mut().push(t.status().map(|()| 0)),
        move |t, _, _| b.borrow_mut().push(t.status().map(|()| 0)),
        4,
    )?;
    let (a, b) = (d(done), d(done));
    ev.task_get_set_conf(
        move |t, _, _| a.borrow_mut().push(t.status().map(|()| t.value())),
        move |t, _, _| b.borrow_mut().push(t.status().map(|()| 0)),
        4,
    )?;
    let (a, b) = (d(done), d(done));
    ev.task_notify_set_set_conf(
        move |t, _, _| a.borrow_mut().push(t.status().map(|()| 0)),
        move |t, _, _| b.borrow_mut().push(t.status().map(|()| 0)),
        4,
    )?;
    let (a, b) = (d(done), d(done));
    ev.task_notify_add_set_conf(
        move |t, _, _| a.borrow_mut().push(t.status().map(|()| t.fetched())),
        move |t, _, _| b.borrow_mut().push(t.status().map(|()| 0)),
        4,
    )?;
    ctx.start()?;
    while pe.progress() {}
    Ok(())
}

/// Sleeps on the engine's notification handle until a task completed (each sleep at most
/// `ms`): the outcome and how many sleeps were woken.
fn sleep_until_done(pe: &Pe, done: &Done, ms: u64) -> Result<(u64, u32), Error> {
    let start = done.borrow().len();
    let mut woken = 0;
    loop {
        while pe.progress() {}
        if let Some(r) = done.borrow().get(start) {
            return r.map(|v| (v, woken));
        }
        if !pe.wait(Some(Duration::from_millis(ms)))? {
            return Err(Error::TimeOut);
        }
        woken += 1;
    }
}

fn new_exported(dev: &Dev, api: Option<&str>) -> Result<(SyncEvent, Vec<u8>), Error> {
    let e = SyncEvent::create()?;
    e.add_publisher_location(Location::RemotePci)?;
    e.add_subscriber_location(Location::Cpu(dev.as_devinfo().pci_addr()))?;
    let blob = if api == Some("25") { e.export_to_dpu(dev)? } else { e.export_to_remote_pci(dev)? };
    Ok((e, blob))
}

fn main() {
    let side = std::env::args().nth(1).unwrap_or_else(|| "host".into());
    let dev = open_device_with_pci(if side == "dpu" { "03:00.0" } else { "b1:00.0" }, None).expect("device");
    let mut ev: Option<SyncEvent> = None;
    let mut flood: Vec<SyncEvent> = Vec::new();
    let pe = Pe::create().expect("engine");
    let done: Done = Rc::default();
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
                let (e, blob) = new_exported(&dev, w.next())?;
                e.start()?;
                ev = Some(e);
                Ok(format!("blob {}", to_hex(&blob)))
            })(),
            "export_ctx" => (|| {
                let (e, blob) = new_exported(&dev, w.next())?;
                start_ctx(&e, &pe, &done)?;
                ev = Some(e);
                Ok(format!("blob {}", to_hex(&blob)))
            })(),
            "import_ctx" => (|| {
                let blob = from_hex(arg.ok_or(Error::InvalidValue)?).ok_or(Error::InvalidValue)?;
                let e = SyncEvent::create_from_export(&dev, &blob)?;
                start_ctx(&e, &pe, &done)?;
                ev = Some(e);
                Ok("ok".into())
            })(),
            "task_wait_eq" => (|| {
                let e = ev.as_ref().ok_or(Error::BadState)?;
                let ms = w.next().and_then(|a| a.parse::<u64>().ok()).ok_or(Error::InvalidValue)?;
                let t = e.task_wait_eq_alloc_init(num()?, u64::MAX, doca_core::Data::NONE)?;
                t.submit().map_err(|r| r.error)?;
                sleep_until_done(&pe, &done, ms).map(|(_, woken)| format!("ok {woken}"))
            })(),
            "task_get" => (|| {
                let e = ev.as_ref().ok_or(Error::BadState)?;
                e.task_get_alloc_init(doca_core::Data::NONE)?.submit().map_err(|r| r.error)?;
                sleep_until_done(&pe, &done, 30_000).map(|(v, _)| format!("value {v}"))
            })(),
            "task_set" => (|| {
                let e = ev.as_ref().ok_or(Error::BadState)?;
                e.task_notify_set_alloc_init(num()?, doca_core::Data::NONE)?.submit().map_err(|r| r.error)?;
                sleep_until_done(&pe, &done, 30_000).map(|_| "ok".into())
            })(),
            "task_add" => (|| {
                let e = ev.as_ref().ok_or(Error::BadState)?;
                e.task_notify_add_alloc_init(num()?, doca_core::Data::NONE)?.submit().map_err(|r| r.error)?;
                sleep_until_done(&pe, &done, 30_000).map(|(v, _)| format!("value {v}"))
            })(),
            "across" => {
                (|| Ok(format!("value {}", u8::from(ev.as_ref().ok_or(Error::BadState)?.is_across_link()))))()
            }
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
