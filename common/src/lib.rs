//! What DOCA programs share, for Rust ports: [`log`] (`doca_log`'s levels and line format)
//! and the helpers of DOCA's `samples/common.c` that ported programs keep calling.
//!
//! | DOCA (`samples/common.c`, `common.h`)              | here                                  |
//! |----------------------------------------------------|---------------------------------------|
//! | `struct program_core_objects`                      | [`CoreObjects`]                       |
//! | `create_core_objects(state, max_bufs)`             | [`create_core_objects`]`(&dev, max_bufs)` |
//! | `destroy_core_objects(state)`                      | [`CoreObjects::destroy`]              |
//! | `request_stop_ctx(pe, ctx)`                        | [`request_stop_ctx`]                  |
//! | `open_doca_device_with_pci`, `_with_capabilities`, `_rep_with_pci` | `doca_core::open_device_with_pci`, `open_device_with_capabilities`, `open_device_rep_with_pci`; logged as the samples log them: [`open_device`], [`open_device_and_rep`] |
//! | `do { r = doca_task_submit(t); } while (r == DOCA_ERROR_AGAIN);` | [`submit_retrying`] |
//! | the same loop around any call (`doca_comm_channel_ep_sendto`, …) | [`retry_again`] |
//!
//! The retry helpers wait between attempts (1 µs, doubling up to 1 ms) and give up after a
//! deadline with `AGAIN`: a C loop that spins forever on a peer that never drains its queue
//! becomes an error you can report.

#![forbid(unsafe_code)]

pub mod log;

use std::time::{Duration, Instant};

use doca_buf::Inventory;
use doca_core::{
    open_device_rep_with_pci, open_device_with_pci, Ctx, CtxState, Dev, DevRep, Error, Pe, Refused,
    RepFilter, Result, Submit,
};
use doca_mmap::Mmap;
use tracing::error;

/// The device at `pci_addr`, as every comm-channel sample opens it; the failure is logged
/// with the samples' wording and returned.
pub fn open_device(pci_addr: &str) -> Result<Dev> {
    open_device_with_pci(pci_addr, None)
        .inspect_err(|e| error!("Failed to open Comm Channel DOCA device based on PCI address: {e}"))
}

/// The DPU device at `pci_addr` and its network representor of the host function `rep_pci`
/// (`open_doca_device_rep_with_pci` with `DOCA_DEVINFO_REP_FILTER_NET`, as the samples do).
pub fn open_device_and_rep(pci_addr: &str, rep_pci: &str) -> Result<(Dev, DevRep)> {
    let dev = open_device(pci_addr)?;
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, rep_pci).inspect_err(|e| {
        error!("Failed to open Comm Channel DOCA device representor based on PCI address: {e}")
    })?;
    Ok((dev, rep))
}

/// `struct program_core_objects`: a device, a source and a destination map on it, a
/// started buffer inventory (when asked for) and a progress engine. The maps are created
/// with the device added, not started: set their memory range and permissions, then start.
pub struct CoreObjects {
    /// The device every object is registered with.
    pub dev: Dev,
    /// The source map (`src_mmap`).
    pub src_mmap: Mmap,
    /// The destination map (`dst_mmap`).
    pub dst_mmap: Mmap,
    /// The inventory (`buf_inv`), started; `None` when `max_bufs` was 0.
    pub buf_inv: Option<Inventory>,
    /// The progress engine (`pe`).
    pub pe: Pe,
}

/// `create_core_objects`: both maps with `dev` added, an inventory of `max_bufs` buffers,
/// started (none when `max_bufs` is 0), and a progress engine. Each failure is logged as
/// the samples log it and returned; what was created before it is dropped.
pub fn create_core_objects(dev: &Dev, max_bufs: u32) -> Result<CoreObjects> {
    let map = |what: &str| -> Result<Mmap> {
        let m = Mmap::create().inspect_err(|e| error!("Unable to create {what} mmap: {e}"))?;
        m.add_dev(dev).inspect_err(|e| error!("Unable to add device to {what} mmap: {e}"))?;
        Ok(m)
    };
    let src_mmap = map("source")?;
    let dst_mmap = map("destination")?;
    let buf_inv = match max_bufs {
        0 => None,
        n => {
            let inv =
                Inventory::create(n).inspect_err(|e| error!("Unable to create buffer inventory: {e}"))?;
            inv.start().inspect_err(|e| error!("Unable to start buffer inventory: {e}"))?;
            Some(inv)
        }
    };
    let pe = Pe::create().inspect_err(|e| error!("Unable to create pe queue: {e}"))?;
    Ok(CoreObjects { dev: dev.clone(), src_mmap, dst_mmap, buf_inv, pe })
}

impl CoreObjects {
    /// `destroy_core_objects`: the progress engine, the inventory, the destination and the
    /// source map, in that order. Every step is tried; each failure is logged and the first
    /// one returned (`IN_USE` from a progress engine that still has contexts, …).
    pub fn destroy(self) -> Result<()> {
        let mut first: Result<()> = Ok(());
        let mut keep = |what: &str, r: Result<()>| {
            if let Err(e) = r {
                error!("Failed to destroy {what}: {e}");
                if first.is_ok() {
                    first = Err(e);
                }
            }
        };
        keep("pe", self.pe.destroy().map_err(|r| r.error));
        if let Some(inv) = self.buf_inv {
            keep("buf inventory", inv.destroy().map_err(|r| r.error));
        }
        keep("destination mmap", self.dst_mmap.destroy().map_err(|r| r.error));
        keep("source mmap", self.src_mmap.destroy().map_err(|r| r.error));
        self.dev.close();
        first
    }
}

/// `request_stop_ctx`: stops `ctx`; when the stop is in progress (tasks still out, a
/// handshake to finish), progresses `pe` until the context is Idle, sleeping on the engine's
/// notification handle whenever there is nothing to do. Another stop failure is logged and
/// returned. Like the C helper it waits as long as the context needs: tasks the program
/// keeps must be freed for the stop to finish.
pub fn request_stop_ctx(pe: &Pe, ctx: &Ctx) -> Result<()> {
    match ctx.stop() {
        Ok(()) => Ok(()),
        Err(Error::InProgress) => {
            while ctx.state() != CtxState::Idle {
                if !pe.progress() {
                    pe.wait(Some(Duration::from_millis(10)))?;
                }
            }
            Ok(())
        }
        Err(e) => {
            error!("Failed to stop ctx: {e}");
            Err(e)
        }
    }
}

/// How long the retry helpers keep trying by default.
pub const RETRY_DEADLINE: Duration = Duration::from_secs(5);

/// The samples' `AGAIN` loop around `doca_task_submit`: submits `task`, and while the
/// library answers `AGAIN` (a queue full), waits a little and submits it again, for at most
/// `deadline`. Any other refusal, or `AGAIN` at the deadline, gives the task back.
///
/// Nothing progresses the engine here, so the queue must drain by itself (the peer reads);
/// inside a callback that is all C can do too. Outside callbacks, prefer to progress the
/// engine and submit again.
pub fn submit_retrying<T: Submit>(task: T, deadline: Duration) -> std::result::Result<(), Refused<T>> {
    let mut task = task;
    let mut pause = Pauses::until(deadline);
    loop {
        match task.submit() {
            Err(r) if r.error == Error::Again && pause.wait() => task = r.value,
            done => return done,
        }
    }
}

/// The same loop around any call: `op` again while it answers `AGAIN`, for at most
/// `deadline` (then `AGAIN`; `Duration::MAX` waits as long as it takes, as the C loops
/// do). E.g. the legacy samples' `sendto` and `recvfrom` loops.
pub fn retry_again<T>(deadline: Duration, op: impl FnMut() -> Result<T>) -> Result<T> {
    retry_while(Error::Again, deadline, op)
}

/// [`retry_again`] for another "not yet" code, e.g. `CONNECTION_INPROGRESS` from the legacy
/// `doca_comm_channel_peer_addr_update_info` while a connection is being set up.
pub fn retry_while<T>(busy: Error, deadline: Duration, mut op: impl FnMut() -> Result<T>) -> Result<T> {
    let mut pause = Pauses::until(deadline);
    loop {
        match op() {
            Err(e) if e == busy && pause.wait() => {}
            done => return done,
        }
    }
}

/// Growing pauses (1 µs doubling to 1 ms) until a deadline.
struct Pauses {
    next: Duration,
    /// `None`: a deadline too far to represent (`Duration::MAX`): never give up.
    end: Option<Instant>,
}

impl Pauses {
    fn until(deadline: Duration) -> Pauses {
        Pauses { next: Duration::from_micros(1), end: Instant::now().checked_add(deadline) }
    }

    /// Sleeps the next pause; false once the deadline has passed (no sleep then).
    fn wait(&mut self) -> bool {
        let now = Instant::now();
        let left = match self.end {
            Some(end) if now >= end => return false,
            Some(end) => end - now,
            None => self.next,
        };
        std::thread::sleep(self.next.min(left));
        self.next = (self.next * 2).min(Duration::from_millis(1));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn retry_again_retries_only_again_and_gives_up_at_the_deadline() {
        let calls = Cell::new(0);
        let r = retry_again(Duration::from_secs(5), || {
            calls.set(calls.get() + 1);
            if calls.get() < 4 {
                Err(Error::Again)
            } else {
                Ok(calls.get())
            }
        });
        assert_eq!(r, Ok(4));
        calls.set(0);
        let r: Result<()> = retry_again(Duration::from_secs(5), || {
            calls.set(calls.get() + 1);
            Err(Error::NotConnected)
        });
        assert_eq!((r, calls.get()), (Err(Error::NotConnected), 1), "other errors are returned at once");
        let start = Instant::now();
        let r: Result<()> = retry_again(Duration::from_millis(20), || Err(Error::Again));
        assert_eq!(r, Err(Error::Again));
        assert!(start.elapsed() >= Duration::from_millis(20));
    }
}
