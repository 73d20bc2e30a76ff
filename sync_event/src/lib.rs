//! DOCA Sync Event (`doca_sync_event.h`): a 64-bit value that CPU code of the host and of the
//! DPU (here: processes on either side of the emulated link) read, set, add to and wait on —
//! synchronously (standalone mode) or through tasks on a progress engine (context mode).
//!
//! | DOCA                                                        | here |
//! |-------------------------------------------------------------|------|
//! | `struct doca_sync_event`, `_create`, `_destroy`             | [`SyncEvent`]: [`SyncEvent::create`], [`SyncEvent::destroy`] |
//! | `_create_from_export`                                       | [`SyncEvent::create_from_export`] |
//! | `_export_to_dpu` (2.5/2.6), `_export_to_remote_pci` (2.7+)  | [`SyncEvent::export_to_dpu`], [`SyncEvent::export_to_remote_pci`] |
//! | `_add_publisher_location_*`, `_add_subscriber_location_*`   | [`SyncEvent::add_publisher_location`], [`SyncEvent::add_subscriber_location`], [`Location`] |
//! | `_set_addr`                                                 | [`SyncEvent::set_addr`] |
//! | `_start`, `_stop` (standalone), `_as_ctx` (context)         | [`SyncEvent::start`], [`SyncEvent::stop`], [`SyncEvent::as_ctx`] |
//! | `_get`, `_update_set`, `_update_add`                        | [`SyncEvent::get`], [`SyncEvent::update_set`], [`SyncEvent::update_add`] |
//! | `_wait_gt/_eq/_neq` and their `_yield` forms                | [`SyncEvent::wait`] with [`Cmp`] and [`WaitMode`] |
//! | the tasks (`task_get`, `task_notify_set/_add`, `task_wait_gt/_eq/_neq`) | [`GetTask`], [`NotifySetTask`], [`NotifyAddTask`], [`WaitTask`] ([`WaitGtTask`], [`WaitEqTask`], [`WaitNeqTask`]) |
//! | `doca_sync_event_cap_*`                                     | [`caps`] |
//!
//! **The value.** It lives in a page of shared memory (a sealed memfd) that the
//! exporting process creates with the event and every importing process maps. The page is
//! handed over through the exporter's memory service ([`doca_link::rendezvous`]): the blob
//! carries the service's name and a 128-bit token, never a pid or fd to open through
//! `/proc`; destroying the event withdraws the offer. `set_addr`
//! moves it to 8 bytes of the application's memory instead (then it cannot be exported:
//! `NOT_SUPPORTED`). Every read is an atomic load, every update an atomic store or
//! fetch-add, sequentially consistent.
//!
//! **Blocking waits** never spin: a thread checks the value, announces itself as a sleeper
//! and sleeps on a futex word of the page (`FUTEX_WAIT`, shared, not private), which every
//! update bumps — `FUTEX_WAKE` is called only when a sleeper announced itself. Each sleep is
//! bounded ([`SLEEP_SLICE`]): a waiter looks again at least that often, whatever a peer did
//! to the futex word, and an importer checks then that the exporter is still there. The
//! `_yield` forms first check and `sched_yield` up to [`YIELDS`] times, then sleep the same
//! way.
//!
//! **Wait tasks** are checked at each progress pass of their engine, so a task completes in
//! the first pass after the update. An engine asleep on its notification handle is woken by
//! a doorbell ([`doca_link::notify::Doorbell`]) watched by its engine and registered with the
//! event's exporter ([`doca_link::bells`]): the exporter's own engines directly, an
//! importer's over its connection to the exporter's memory service (the ringing end goes
//! over `SCM_RIGHTS`; each importing process registers at most
//! `cap peer.doorbells_per_process` doorbells, [`MAX_WAKERS`] in all). The exporter answers
//! with a slot whose armed flag, in the page, the engine sets before it sleeps. An update
//! by the exporter rings the armed doorbells itself; an update by an importer asks the
//! exporter's service to (one datagram). Nothing in the page names a process or a
//! descriptor, and nothing is opened through `/proc`. A busy engine is never rung: updates
//! cost no syscall then.
//!
//! **Modes.** `start` (standalone) and `as_ctx` (context) exclude each other: `as_ctx` on an
//! event started standalone, or `start` on one turned into a context, is `NOT_PERMITTED`.
//! Synchronous get/set/add/wait need the event started either way (`BAD_STATE`).
//!
//! **Peers.** The importer of an event whose exporter destroyed it or exited answers every
//! operation with `NOT_FOUND` (waiting tasks complete with it — an importing engine watches
//! its connection to the exporter, which the exporter shuts down when it destroys the event
//! and the kernel closes when it dies, and the exporter's pidfd where there is one; blocking
//! waits return it within [`SLEEP_SLICE`]); the exporter goes on working whatever its
//! importers do. Only the exporter decides: the page's state word is a hint a peer can
//! write, confirmed on the connection (one `poll`, no wait) before an importer believes it.
//! Synchronous calls on an importer look at the connection each time; wait tasks every 64
//! passes, after every sleep and whenever the hint says the event is gone.

#![deny(unsafe_code)]

pub mod caps;
mod page;
pub mod remote;

use std::cell::{Cell, RefCell};
use std::os::fd::{AsFd, OwnedFd};
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use doca_core::clock::Now;
use doca_core::{
    bail, fail, Ctx, CtxCell, CtxCore, CtxOps, CtxState, Data, Dev, DeviceKind, Error, PciAddr, Refused,
    Result, Started, Task, TaskId, TaskLib, TaskPayload, TaskPool,
};
use doca_link::bells::{Board, BoardLink};
use doca_link::notify::{Doorbell, Watched};
use rustix::thread::futex;

pub use page::MAX_WAKERS;
use page::{Page, LIVE};

/// How long a blocking wait sleeps at most before looking again.
pub const SLEEP_SLICE: Duration = Duration::from_millis(50);
/// How many times a `_yield` wait yields the processor before it sleeps.
pub const YIELDS: u32 = 64;
/// Tasks of one type per context at most.
pub const MAX_NUM_TASKS: u32 = 1 << 16;
/// The length of an export blob.
pub const EXPORT_LEN: usize = 48;
/// Status of the wait tasks a stop flushes.
pub const FLUSH_STATUS: Error = Error::Shutdown;
/// "DOCASEB1": the blob's magic.
const BLOB_MAGIC: &[u8; 8] = b"DOCASEB1";
/// "DOCASEN1": the magic of a blob for a remote network peer (`export_to_remote_net`).
const NET_MAGIC: &[u8; 8] = b"DOCASEN1";
/// Progress passes between two checks that an importer's exporter still lives (the
/// page's state word is read at every pass).
const ALIVE_EVERY: u32 = 64;

/// Where a publisher or subscriber runs (`doca_sync_event_add_*_location_*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// `_location_cpu`: CPU code of this process, on `dev`'s side.
    Cpu(PciAddr),
    /// `_location_dpu` (2.5/2.6) and `_location_remote_pci` (2.7+): the other side of the link.
    RemotePci,
    /// `_location_remote_net`: an RDMA peer (its remote sync event tasks, [`RemoteNet`]).
    RemoteNet,
}

/// A wait's comparison (of the masked value with the wait value).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `_gt`: greater than.
    Gt,
    /// `_eq`: equal.
    Eq,
    /// `_neq`: different.
    Neq,
}

impl Cmp {
    fn holds(self, value: u64, mask: u64, wait_val: u64) -> bool {
        let v = value & mask;
        match self {
            Cmp::Gt => v > wait_val,
            Cmp::Eq => v == wait_val,
            Cmp::Neq => v != wait_val,
        }
    }
}

/// How a blocking wait waits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// `doca_sync_event_wait_*`: sleeps on the futex between checks.
    Sleep,
    /// `doca_sync_event_wait_*_yield`: yields the processor between the first checks.
    Yield,
}

/// Checks a wait mask: 0, or 1, 2, 4 or 8 consecutive `0xFF` bytes (`INVALID_VALUE`).
pub fn check_mask(mask: u64) -> Result<()> {
    if mask == 0 {
        return Ok(());
    }
    let shift = mask.trailing_zeros();
    let ok = shift % 8 == 0 && matches!(mask >> shift, 0xFF | 0xFFFF | 0xFFFF_FFFF | u64::MAX);
    if !ok {
        bail!(
            Error::InvalidValue,
            "sync event: wait mask {mask:#x} is not 0 or 1, 2, 4 or 8 consecutive 0xFF bytes"
        );
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Neither started nor a context yet.
    Unset,
    /// `doca_sync_event_start` was called (running until stopped).
    Standalone { running: bool },
    /// `doca_sync_event_as_ctx` was called.
    Context,
}

/// The exporter of an imported event: its process (a pidfd, readable once it exits, where
/// the kernel gives one) and the connection to its memory service (ended by the exporter
/// when it destroys the event, by the kernel when it dies).
pub(crate) struct Exporter {
    pub(crate) pid: u32,
    pub(crate) pidfd: Option<OwnedFd>,
    pub(crate) link: BoardLink,
}

impl Exporter {
    pub(crate) fn exited(&self) -> bool {
        let Some(pidfd) = &self.pidfd else { return false };
        let mut fds = [rustix::event::PollFd::new(pidfd, rustix::event::PollFlags::IN)];
        !matches!(rustix::event::poll(&mut fds, Some(&ZERO)), Ok(0))
    }
}

const ZERO: rustix::time::Timespec = rustix::time::Timespec { tv_sec: 0, tv_nsec: 0 };

/// After an update of the page's value: bumps the futex word, wakes its sleepers (only if
/// one announced itself) and, when an engine is armed, calls `ring` (the exporter rings its
/// board, an importer asks the exporter to).
pub(crate) fn wake(h: &page::Header, ring: impl FnOnce()) {
    // SeqCst after the value's update: a sleeper that announced itself before reading
    // the value (SeqCst too) is seen here, or it sees the new value.
    h.seq.fetch_add(1, SeqCst);
    if h.sleepers.load(SeqCst) > 0 {
        let _ = futex::wake(&h.seq, futex::Flags::empty(), i32::MAX as u32);
    }
    if h.armed.load(SeqCst) != 0 {
        ring();
    }
}

struct Config {
    mode: Mode,
    publishers: Vec<Location>,
    subscribers: Vec<Location>,
    exported: bool,
}

/// Where an export blob's fields are: magic, the exporter's memory service (pid, nonce),
/// the offer's token, then the device (PCI address, side).
const AT_PID: usize = 8;
const AT_NONCE: usize = 12;
const AT_TOKEN: usize = 20;
const AT_PCI: usize = 36;

/// What wakes this context's engine: its doorbell, registered with the exporter, and (an
/// importer's) the exporter's end.
struct Waker {
    /// The doorbell and its slot (`None`: no slot was given; the engine sees updates only
    /// when it polls).
    bell: Option<(usize, Watched<Doorbell>)>,
    /// An importer's: its connection to the exporter (shared) and a duplicate of the
    /// exporter's pidfd (or of the link's stream), readable once the exporter ends the event
    /// or dies (dropped then: they would stay readable for ever).
    gone: Vec<Watched<Box<dyn AsFd>>>,
}

/// The task payloads.
#[doc(hidden)]
#[derive(Default)]
pub struct GetP {
    value: u64,
}
#[doc(hidden)]
#[derive(Default)]
pub struct SetP {
    val: u64,
}
#[doc(hidden)]
#[derive(Default)]
pub struct AddP {
    inc: u64,
    fetched: u64,
}
#[doc(hidden)]
#[derive(Default)]
pub struct WaitP {
    val: u64,
    mask: u64,
}
#[doc(hidden)]
#[derive(Default)]
pub struct WaitGtP(WaitP);
#[doc(hidden)]
#[derive(Default)]
pub struct WaitEqP(WaitP);
#[doc(hidden)]
#[derive(Default)]
pub struct WaitNeqP(WaitP);

doca_core::task_handle! {
    /// `struct doca_sync_event_task_get`: reads the value.
    pub struct GetTask(GetP);
}
doca_core::task_handle! {
    /// `struct doca_sync_event_task_notify_set`: sets the value.
    pub struct NotifySetTask(SetP);
}
doca_core::task_handle! {
    /// `struct doca_sync_event_task_notify_add`: adds to the value atomically.
    pub struct NotifyAddTask(AddP);
}
doca_core::task_handle! {
    /// `struct doca_sync_event_task_wait_gt` (2.5/2.6): completes once `value & mask > wait_val`.
    pub struct WaitGtTask(WaitGtP);
}
doca_core::task_handle! {
    /// `struct doca_sync_event_task_wait_eq` (2.7+): completes once `value & mask == wait_val`.
    pub struct WaitEqTask(WaitEqP);
}
doca_core::task_handle! {
    /// `struct doca_sync_event_task_wait_neq` (2.7+): completes once `value & mask != wait_val`.
    pub struct WaitNeqTask(WaitNeqP);
}

impl GetTask {
    /// The value read (`*ret_val_ptr` in C), once the task completed.
    pub fn value(&self) -> u64 {
        self.0.with_payload(|p| p.value)
    }
}

impl NotifySetTask {
    /// `doca_sync_event_task_notify_set_get_set_val`.
    pub fn set_val(&self) -> u64 {
        self.0.with_payload(|p| p.val)
    }
    /// `doca_sync_event_task_notify_set_set_set_val`.
    pub fn set_set_val(&self, val: u64) {
        self.0.with_payload(|p| p.val = val)
    }
}

impl NotifyAddTask {
    /// `doca_sync_event_task_notify_add_get_inc_val`.
    pub fn inc_val(&self) -> u64 {
        self.0.with_payload(|p| p.inc)
    }
    /// `doca_sync_event_task_notify_add_set_inc_val`.
    pub fn set_inc_val(&self, inc: u64) {
        self.0.with_payload(|p| p.inc = inc)
    }
    /// The value before the addition (`*fetched_val_ptr` in C), once the task completed.
    pub fn fetched(&self) -> u64 {
        self.0.with_payload(|p| p.fetched)
    }
}

/// What the three wait tasks share: their wait value and mask.
pub trait WaitTask {
    /// `doca_sync_event_task_wait_*_get_wait_val`.
    fn wait_val(&self) -> u64;
    /// `doca_sync_event_task_wait_*_set_wait_val`.
    fn set_wait_val(&self, val: u64);
    /// `doca_sync_event_task_wait_*_get_mask`.
    fn mask(&self) -> u64;
    /// `doca_sync_event_task_wait_*_set_mask` (checked at submission: `INVALID_VALUE`).
    fn set_mask(&self, mask: u64);
}

macro_rules! wait_task {
    ($task:ident) => {
        impl WaitTask for $task {
            fn wait_val(&self) -> u64 {
                self.0.with_payload(|p| p.0.val)
            }
            fn set_wait_val(&self, val: u64) {
                self.0.with_payload(|p| p.0.val = val)
            }
            fn mask(&self) -> u64 {
                self.0.with_payload(|p| p.0.mask)
            }
            fn set_mask(&self, mask: u64) {
                self.0.with_payload(|p| p.0.mask = mask)
            }
        }
    };
}
wait_task!(WaitGtTask);
wait_task!(WaitEqTask);
wait_task!(WaitNeqTask);

#[doc(hidden)] // named by the task payloads; reached through SyncEvent
pub struct SeOps {
    page: Arc<Page>,
    /// The application's memory holding the value (`set_addr`), if any.
    user: Cell<Option<&'static AtomicU64>>,
    exporter: Option<Exporter>,
    /// An importer's whose exporter is across the link: its stream (`page` is then this
    /// process's mirror of the value, shared with nobody).
    wire: Option<remote::Wire>,
    /// The exporter's on the host side of a link: its presence at the DPU (from the first
    /// export until the event is destroyed).
    presence: RefCell<Option<doca_link::remote::Presence>>,
    cfg: RefCell<Config>,
    get: TaskPool<GetP>,
    set: TaskPool<SetP>,
    add: TaskPool<AddP>,
    wait_gt: TaskPool<WaitGtP>,
    wait_eq: TaskPool<WaitEqP>,
    wait_neq: TaskPool<WaitNeqP>,
    /// Submitted wait tasks.
    waits: RefCell<Vec<(Cmp, TaskId)>>,
    waker: RefCell<Option<Waker>>,
    /// The exporter's: the doorbells registered to be rung at updates (made at the first
    /// export or context start).
    board: RefCell<Option<Arc<Board>>>,
    /// The exporter's: the page offered through its memory service (from the first export
    /// until the event is destroyed; every export gives the same blob).
    offered: RefCell<Option<doca_link::rendezvous::Offered>>,
    /// An importer's: its exporter was seen gone (for good).
    gone: Cell<Option<&'static str>>,
    passes: Cell<u32>,
    /// The engine woke from a sleep: look at the exporter's pidfd at the next pass.
    woke: Cell<bool>,
}

/// `struct doca_sync_event`.
pub struct SyncEvent {
    ctx: Rc<CtxCell<SeOps>>,
}

impl std::fmt::Debug for SyncEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ops = self.ctx.ops();
        write!(f, "SyncEvent(imported: {}, across the link: {})", self.is_imported(), ops.wire.is_some())
    }
}

impl SeOps {
    fn value(&self) -> &AtomicU64 {
        match self.user.get() {
            Some(v) => v,
            None => &self.page.header().value,
        }
    }

    /// For an importer: `NOT_FOUND` once the exporter destroyed the event or exited. The
    /// check is a `poll` of the connection and the pidfd (syscalls), made when `full` or
    /// when the page's hint says the event is gone (a peer can write the hint: only the
    /// connection decides).
    fn check_alive(&self, full: bool) -> Result<()> {
        let pid = match (&self.exporter, &self.wire) {
            (Some(ex), _) => ex.pid,
            (None, Some(w)) => w.pid,
            (None, None) => return Ok(()),
        };
        match self.look(full) {
            Some(why) => Err(fail!(Error::NotFound, "sync event: its exporter (process {pid}) {why}")),
            None => Ok(()),
        }
    }

    /// [`SeOps::check_alive`] without a log line: why the exporter is gone, if it is.
    fn look(&self, full: bool) -> Option<&'static str> {
        if let Some(w) = &self.wire {
            if w.is_lost() && self.gone.get().is_none() {
                self.gone.set(Some("destroyed it, exited, or the link to it went down"));
            }
            return self.gone.get();
        }
        let ex = self.exporter.as_ref()?;
        if self.gone.get().is_none() && (full || self.page.header().state.load(SeqCst) != LIVE) {
            if ex.exited() {
                self.gone.set(Some("exited"));
            } else if ex.link.is_closed() {
                self.gone.set(Some("destroyed it or exited"));
            }
            if self.gone.get().is_some() {
                // The ends stay readable for ever: an engine must not wake for them again.
                if let Some(w) = self.waker.borrow_mut().as_mut() {
                    w.gone.clear();
                }
            }
        }
        self.gone.get()
    }

    /// The exporter's board, made at the first need.
    fn board(&self) -> Result<Arc<Board>> {
        let mut b = self.board.borrow_mut();
        if let Some(b) = &*b {
            return Ok(b.clone());
        }
        let limits = doca_mmap::budget::global_limits()?;
        let page = self.page.clone();
        let board = Board::new(MAX_WAKERS, limits, move |i| page.header().armed.load(SeqCst) & (1 << i) != 0);
        *b = Some(board.clone());
        Ok(board)
    }

    /// Synchronous operations: the event must be started (standalone or as a running context).
    fn check_started(&self, what: &str) -> Result<()> {
        let mode = self.cfg.borrow().mode;
        match mode {
            Mode::Standalone { running: true } => Ok(()),
            Mode::Context => Ok(()),
            _ => Err(fail!(
                Error::BadState,
                "sync event {what}: start the event first (doca_sync_event_start)"
            )),
        }
    }

    /// Wakes whoever waits: futex sleepers (only if one announced itself) and armed engines
    /// (none armed: no syscall).
    fn updated(&self) {
        wake(self.page.header(), || match &self.exporter {
            Some(ex) => ex.link.ring(),
            None => {
                if let Some(b) = &*self.board.borrow() {
                    b.ring_armed();
                }
            }
        });
    }

    fn block_until(&self, cmp: Cmp, val: u64, mask: u64, mode: WaitMode) -> Result<()> {
        check_mask(mask)?;
        self.check_started("wait")?;
        if let Some(w) = &self.wire {
            return self.remote_block(w, cmp, val, mask);
        }
        let h = self.page.header();
        let mut yields = 0;
        let slice = rustix::time::Timespec {
            tv_sec: SLEEP_SLICE.as_secs() as i64,
            tv_nsec: SLEEP_SLICE.subsec_nanos() as _,
        };
        loop {
            let seq = h.seq.load(SeqCst);
            if cmp.holds(self.value().load(SeqCst), mask, val) {
                return Ok(());
            }
            self.check_alive(true)?;
            if mode == WaitMode::Yield && yields < YIELDS {
                yields += 1;
                rustix::thread::sched_yield();
                continue;
            }
            h.sleepers.fetch_add(1, SeqCst);
            if h.seq.load(SeqCst) == seq && !cmp.holds(self.value().load(SeqCst), mask, val) {
                // Returns at a wake, at the end of the slice, or at once when seq moved.
                let _ = futex::wait(&h.seq, futex::Flags::empty(), seq, Some(&slice));
            }
            h.sleepers.fetch_sub(1, SeqCst);
        }
    }

    fn waiting_satisfied(&self) -> bool {
        let v = self.value().load(SeqCst);
        self.waits
            .borrow()
            .iter()
            .any(|&(cmp, id)| self.wait_params(cmp, id).is_some_and(|(val, mask)| cmp.holds(v, mask, val)))
    }

    fn wait_params(&self, cmp: Cmp, id: TaskId) -> Option<(u64, u64)> {
        match cmp {
            Cmp::Gt => self.wait_gt.with_payload(id, |p| (p.0.val, p.0.mask)),
            Cmp::Eq => self.wait_eq.with_payload(id, |p| (p.0.val, p.0.mask)),
            Cmp::Neq => self.wait_neq.with_payload(id, |p| (p.0.val, p.0.mask)),
        }
    }

    fn finish_wait(&self, cmp: Cmp, id: TaskId, status: Result<()>) {
        match cmp {
            Cmp::Gt => self.wait_gt.finish(id, status),
            Cmp::Eq => self.wait_eq.finish(id, status),
            Cmp::Neq => self.wait_neq.finish(id, status),
        };
    }

    fn flush_waits(&self, status: Error) {
        let waits = std::mem::take(&mut *self.waits.borrow_mut());
        for (cmp, id) in waits {
            self.finish_wait(cmp, id, Err(status));
        }
    }

    /// The engine's doorbell, made at the first start and registered with the exporter
    /// (this process's board, or over the importer's connection); an importer also watches
    /// the exporter's end. No slot (every one taken, or the importing process's budget
    /// spent) is logged once: the engine still sees updates when it polls.
    fn make_waker(&self, core: &CtxCore) -> Result<()> {
        if self.waker.borrow().is_some() {
            return Ok(());
        }
        if let Some(w) = &self.wire {
            // Across the link the exporter's changes come on the stream: the engine watches
            // its socket (until the exporter is gone).
            let gone = if w.is_lost() {
                Vec::new()
            } else {
                vec![core.watch(Box::new(w.watchable()?) as Box<dyn AsFd>)?]
            };
            *self.waker.borrow_mut() = Some(Waker { bell: None, gone });
            return Ok(());
        }
        let (bell, ring) = Doorbell::pair()?;
        let slot = match &self.exporter {
            None => self.board()?.register_local(ring),
            Some(ex) => ex.link.register(ring, MAX_WAKERS),
        };
        let bell = match slot {
            Ok(slot) => Some((slot, core.watch(bell)?)),
            Err(doca_link::Error::NotFound) => {
                self.check_alive(true)?;
                None
            }
            Err(e) => {
                tracing::warn!(
                    target: "doca_sdk",
                    "sync event: no doorbell slot ({}): this context's engine is not woken by updates (it still sees them when it polls)",
                    e.name()
                );
                None
            }
        };
        let mut gone = Vec::new();
        if let Some(ex) = &self.exporter {
            gone.push(core.watch(Box::new(ex.link.watchable()) as Box<dyn AsFd>)?);
            if let Some(pidfd) = &ex.pidfd {
                let dup =
                    pidfd.try_clone().map_err(|e| fail!(Error::OperatingSystem, "sync event: dup: {e}"))?;
                gone.push(core.watch(Box::new(dup) as Box<dyn AsFd>)?);
            }
        }
        *self.waker.borrow_mut() = Some(Waker { bell, gone });
        Ok(())
    }

    fn arm(&self, on: bool) {
        if let Some(Waker { bell: Some((slot, bell)), .. }) = &*self.waker.borrow() {
            let bit = 1u64 << *slot;
            let armed = &self.page.header().armed;
            if on {
                armed.fetch_or(bit, SeqCst);
            } else {
                armed.fetch_and(!bit, SeqCst);
            }
            if !on {
                bell.drain();
            }
        }
    }

    /// The exporter's: withdraws the offer and ends every importer's connection (they
    /// answer `NOT_FOUND` from then on), then wakes whoever waits to look.
    fn revoke(&self) {
        if self.exporter.is_some() || self.wire.is_some() {
            return;
        }
        drop(self.offered.borrow_mut().take());
        drop(self.presence.borrow_mut().take());
        if let Some(b) = &*self.board.borrow() {
            b.revoke_all();
        }
        let h = self.page.header();
        if h.state.swap(page::REVOKED, SeqCst) == LIVE {
            self.updated();
        }
    }
}

impl Drop for SeOps {
    fn drop(&mut self) {
        self.revoke();
        if let Some(Waker { bell: Some((slot, _)), .. }) = self.waker.get_mut().take() {
            self.page.header().armed.fetch_and(!(1u64 << slot), SeqCst);
            if let Some(b) = &*self.board.borrow() {
                b.unregister(slot);
            }
        }
    }
}

impl SyncEvent {
    fn with(page: Page, exporter: Option<Exporter>, wire: Option<remote::Wire>) -> SyncEvent {
        let ctx = CtxCell::new(|weak: &Weak<CtxCell<SeOps>>| SeOps {
            page: Arc::new(page),
            user: Cell::new(None),
            exporter,
            wire,
            presence: RefCell::new(None),
            cfg: RefCell::new(Config {
                mode: Mode::Unset,
                publishers: Vec::new(),
                subscribers: Vec::new(),
                exported: false,
            }),
            get: TaskPool::new(weak.clone()),
            set: TaskPool::new(weak.clone()),
            add: TaskPool::new(weak.clone()),
            wait_gt: TaskPool::new(weak.clone()),
            wait_eq: TaskPool::new(weak.clone()),
            wait_neq: TaskPool::new(weak.clone()),
            waits: RefCell::new(Vec::new()),
            waker: RefCell::new(None),
            board: RefCell::new(None),
            offered: RefCell::new(None),
            gone: Cell::new(None),
            passes: Cell::new(0),
            woke: Cell::new(false),
        });
        SyncEvent { ctx }
    }

    fn ops(&self) -> &SeOps {
        self.ctx.ops()
    }

    /// `doca_sync_event_create`: a new event of this process, value 0.
    pub fn create() -> Result<SyncEvent> {
        Ok(SyncEvent::with(Page::create()?, None, None))
    }

    /// `doca_sync_event_create_from_export`: the event another process exported (the blob
    /// it sent). A blob of the wrong size or magic is `INVALID_VALUE`; one whose exporter
    /// exited or destroyed the event, or a forged one, `NOT_FOUND`. The result cannot be
    /// configured or exported (`NOT_PERMITTED`); start it (standalone or as a context).
    pub fn create_from_export(dev: &Dev, blob: &[u8]) -> Result<SyncEvent> {
        caps::is_create_from_export_supported(dev.as_devinfo())?;
        SyncEvent::import(blob, BLOB_MAGIC, "create_from_export")
    }

    fn import(blob: &[u8], magic: &[u8; 8], what: &str) -> Result<SyncEvent> {
        if blob.len() != EXPORT_LEN || &blob[..8] != magic {
            bail!(
                Error::InvalidValue,
                "sync event {what}: not a sync event export of this kind ({} bytes; {EXPORT_LEN} expected)",
                blob.len()
            );
        }
        let service = doca_link::rendezvous::ServiceName {
            pid: u32::from_le_bytes(blob[AT_PID..AT_NONCE].try_into().expect("4 bytes")),
            nonce: u64::from_le_bytes(blob[AT_NONCE..AT_TOKEN].try_into().expect("8 bytes")),
        };
        let token: doca_link::rendezvous::Token = blob[AT_TOKEN..AT_PCI].try_into().expect("16 bytes");
        let pid = service.pid;
        if remote::is_remote(service) {
            let (wire, value) = remote::Wire::open(service, &token, what)?;
            // This process's mirror of the value (the exporter's page stays on its machine).
            let mirror = Page::create()?;
            mirror.header().value.store(value, SeqCst);
            return Ok(SyncEvent::with(mirror, None, Some(wire)));
        }
        let (taken, link) = doca_link::bells::take_board(service, &token).map_err(|e| {
            fail!(
                Error::from(e),
                "sync event create_from_export: no such live event of process {pid} (destroyed, exited or forged)"
            )
        })?;
        let page = Page::from_exporter(taken.memfd, pid)?;
        let ex = Exporter { pid, pidfd: taken.pidfd, link };
        if ex.exited() || ex.link.is_closed() {
            bail!(Error::NotFound, "sync event create_from_export: the exporter (process {pid}) is gone");
        }
        tracing::debug!(target: "doca_sdk", "sync event imported from process {pid}");
        Ok(SyncEvent::with(page, Some(ex), None))
    }

    /// Writes `pattern`, repeated, over `len` bytes of the shared page from byte `offset`
    /// (clipped to the page): what a hostile process that mapped the page can do (for the
    /// hostile-peer tests).
    #[doc(hidden)]
    pub fn hostile_fill_page(&self, offset: usize, len: usize, pattern: &[u8]) {
        if pattern.is_empty() {
            return;
        }
        let bytes = self.ops().page.bytes();
        for (i, b) in bytes.iter().enumerate().skip(offset).take(len) {
            b.store(pattern[(i - offset) % pattern.len()], SeqCst);
        }
    }

    /// Whether this event was created from an export.
    pub fn is_imported(&self) -> bool {
        let ops = self.ops();
        ops.exporter.is_some() || ops.wire.is_some()
    }

    /// Whether this event was imported from an exporter on the other side of the remote
    /// link ([`remote`]).
    pub fn is_across_link(&self) -> bool {
        self.ops().wire.is_some()
    }

    fn configurable(&self, what: &str) -> Result<std::cell::RefMut<'_, Config>> {
        if self.is_imported() {
            bail!(
                Error::NotPermitted,
                "sync event {what}: an event created from an export cannot be configured"
            );
        }
        let cfg = self.ops().cfg.borrow_mut();
        let started = match cfg.mode {
            Mode::Standalone { running } => running,
            Mode::Context => self.ctx.core().state() != CtxState::Idle,
            Mode::Unset => false,
        };
        if started {
            bail!(Error::BadState, "sync event {what}: the event is started");
        }
        Ok(cfg)
    }

    /// `doca_sync_event_add_publisher_location_cpu` (`Location::Cpu`) and
    /// `_location_dpu`/`_remote_pci` (`Location::RemotePci`). Not on an imported event
    /// (`NOT_PERMITTED`) nor a started one (`BAD_STATE`).
    pub fn add_publisher_location(&self, loc: Location) -> Result<()> {
        self.configurable("add_publisher_location")?.publishers.push(loc);
        Ok(())
    }

    /// `doca_sync_event_add_subscriber_location_*`: as [`SyncEvent::add_publisher_location`].
    pub fn add_subscriber_location(&self, loc: Location) -> Result<()> {
        self.configurable("add_subscriber_location")?.subscribers.push(loc);
        Ok(())
    }

    /// The locations declared: (publishers, subscribers).
    pub fn locations(&self) -> (Vec<Location>, Vec<Location>) {
        let cfg = self.ops().cfg.borrow();
        (cfg.publishers.clone(), cfg.subscribers.clone())
    }

    /// `doca_sync_event_set_addr`: the value lives in `addr` from now on (its current
    /// contents are the value). Before start (`BAD_STATE`) and before any export
    /// (`BAD_STATE`); such an event cannot be exported afterwards (`NOT_SUPPORTED`: other
    /// processes cannot map the application's memory).
    pub fn set_addr(&self, addr: &'static AtomicU64) -> Result<()> {
        let cfg = self.configurable("set_addr")?;
        if cfg.exported {
            bail!(Error::BadState, "sync event set_addr: the event was already exported with its own memory");
        }
        self.ops().user.set(Some(addr));
        Ok(())
    }

    /// `doca_sync_event_start`: standalone mode (synchronous operations). `NOT_PERMITTED`
    /// for an event turned into a context; `BAD_STATE` when already started.
    pub fn start(&self) -> Result<()> {
        let mut cfg = self.ops().cfg.borrow_mut();
        match cfg.mode {
            Mode::Context => bail!(
                Error::NotPermitted,
                "sync event start: the event operates as a context (doca_sync_event_as_ctx): use doca_ctx_start"
            ),
            Mode::Standalone { running: true } => bail!(Error::BadState, "sync event start: already started"),
            _ => cfg.mode = Mode::Standalone { running: true },
        }
        Ok(())
    }

    /// `doca_sync_event_stop`: ends standalone mode (`NOT_PERMITTED` for an event turned into a
    /// context; `BAD_STATE` when not started with
    /// [`SyncEvent::start`]).
    pub fn stop(&self) -> Result<()> {
        let mut cfg = self.ops().cfg.borrow_mut();
        match cfg.mode {
            Mode::Context => Err(fail!(
                Error::NotPermitted,
                "sync event stop: the event operates as a context (doca_sync_event_as_ctx): use doca_ctx_stop"
            )),
            Mode::Standalone { running: true } => {
                cfg.mode = Mode::Standalone { running: false };
                Ok(())
            }
            _ => Err(fail!(Error::BadState, "sync event stop: not started with doca_sync_event_start")),
        }
    }

    /// `doca_sync_event_as_ctx`: the event as a context (for good): `NOT_PERMITTED` once
    /// started standalone.
    pub fn as_ctx(&self) -> Result<Ctx> {
        let mut cfg = self.ops().cfg.borrow_mut();
        match cfg.mode {
            Mode::Standalone { .. } => bail!(
                Error::NotPermitted,
                "sync event as_ctx: the event was started standalone (doca_sync_event_start)"
            ),
            _ => cfg.mode = Mode::Context,
        }
        Ok(Ctx::from(self.ctx.clone()))
    }

    /// The context, whatever the mode (for the C ABI, which makes its handle at creation).
    #[doc(hidden)]
    pub fn ctx_unchecked(&self) -> Ctx {
        Ctx::from(self.ctx.clone())
    }

    /// `doca_sync_event_get`.
    pub fn get(&self) -> Result<u64> {
        let ops = self.ops();
        ops.check_started("get")?;
        if let Some(w) = &ops.wire {
            return ops.remote_get(w);
        }
        ops.check_alive(true)?;
        Ok(ops.value().load(SeqCst))
    }

    /// `doca_sync_event_update_set`.
    pub fn update_set(&self, value: u64) -> Result<()> {
        let ops = self.ops();
        ops.check_started("update_set")?;
        if let Some(w) = &ops.wire {
            return ops.remote_set(w, value);
        }
        ops.check_alive(true)?;
        ops.value().store(value, SeqCst);
        ops.updated();
        Ok(())
    }

    /// `doca_sync_event_update_add`: returns the value before the addition (wrapping).
    pub fn update_add(&self, value: u64) -> Result<u64> {
        let ops = self.ops();
        ops.check_started("update_add")?;
        if let Some(w) = &ops.wire {
            return ops.remote_add(w, value);
        }
        ops.check_alive(true)?;
        let before = ops.value().fetch_add(value, SeqCst);
        ops.updated();
        Ok(before)
    }

    /// `doca_sync_event_wait_gt/_eq/_neq` and their `_yield` forms: returns once
    /// `value & mask` compares as `cmp` says with `value`. `INVALID_VALUE` for a bad mask;
    /// `NOT_FOUND` when the exporter goes away meanwhile (an importer).
    pub fn wait(&self, cmp: Cmp, value: u64, mask: u64, mode: WaitMode) -> Result<()> {
        self.ops().block_until(cmp, value, mask, mode)
    }

    fn export(&self, dev: Option<&Dev>, what: &str) -> Result<Vec<u8>> {
        if self.is_imported() {
            bail!(
                Error::NotPermitted,
                "sync event {what}: an event created from an export cannot be exported"
            );
        }
        let ops = self.ops();
        if ops.user.get().is_some() {
            bail!(
                Error::NotSupported,
                "sync event {what}: the value is in the application's memory (doca_sync_event_set_addr), which other processes cannot map"
            );
        }
        let mut offered = ops.offered.borrow_mut();
        if offered.is_none() {
            let fd = ops
                .page
                .fd()
                .try_clone()
                .map_err(|e| fail!(Error::OperatingSystem, "sync event {what}: dup: {e}"))?;
            let board = ops.board()?;
            let offer = doca_link::rendezvous::offer(doca_link::rendezvous::Offer::Kept {
                fd,
                info: Vec::new(),
                keeper: board,
            })
            .map_err(|e| fail!(Error::from(e), "sync event {what}: offering the page"))?;
            *ops.presence.borrow_mut() = remote::offered(offer.service().nonce);
            *offered = Some(offer);
        }
        let offer = offered.as_ref().expect("offered above");
        ops.cfg.borrow_mut().exported = true;
        let (service, token) = (offer.service(), offer.token());
        let mut b = Vec::with_capacity(EXPORT_LEN);
        b.extend_from_slice(if dev.is_some() { BLOB_MAGIC } else { NET_MAGIC });
        b.extend_from_slice(&service.pid.to_le_bytes());
        b.extend_from_slice(&service.nonce.to_le_bytes());
        b.extend_from_slice(&token);
        debug_assert_eq!(b.len(), AT_PCI);
        if let Some(dev) = dev {
            let pci = dev.as_devinfo().pci_addr();
            b.extend_from_slice(&pci.domain().to_le_bytes());
            b.extend_from_slice(&[pci.bus(), pci.device(), pci.function()]);
            b.push(match dev.as_devinfo().kind() {
                DeviceKind::Host => 0,
                DeviceKind::Dpu => 1,
            });
        }
        b.resize(EXPORT_LEN, 0);
        tracing::debug!(target: "doca_sdk", "sync event exported ({what}) for {dev:?}");
        Ok(b)
    }

    /// `doca_sync_event_export_to_dpu` (2.5/2.6): from a host device only (`NOT_SUPPORTED`
    /// on a DPU device, as DOCA says), of an event whose publisher or subscriber is declared on
    /// the DPU (else `NOT_PERMITTED`, DOCA's library's code); the blob for the other side's
    /// [`SyncEvent::create_from_export`].
    pub fn export_to_dpu(&self, dev: &Dev) -> Result<Vec<u8>> {
        if caps::is_export_to_dpu_supported(dev.as_devinfo()).is_err() {
            bail!(
                Error::NotSupported,
                "sync event export_to_dpu: DOCA 2.5/2.6 export from the host CPU only ({dev:?} is the DPU's device; 2.7+ has export_to_remote_pci)"
            );
        }
        let cfg = self.ops().cfg.borrow();
        if !cfg.publishers.iter().chain(&cfg.subscribers).any(|l| *l == Location::RemotePci) {
            bail!(
                Error::NotPermitted,
                "sync event export_to_dpu: neither the publisher nor the subscriber is declared on the DPU (add_*_location_dpu)"
            );
        }
        drop(cfg);
        self.export(Some(dev), "export_to_dpu")
    }

    /// `doca_sync_event_export_to_remote_pci` (2.7+): from either side.
    pub fn export_to_remote_pci(&self, dev: &Dev) -> Result<Vec<u8>> {
        self.export(Some(dev), "export_to_remote_pci")
    }

    /// `doca_sync_event_export_to_remote_net`: the blob for an RDMA peer's
    /// [`RemoteNet::create_from_export`] (the peer's remote sync event tasks act on the value).
    pub fn export_to_remote_net(&self) -> Result<Vec<u8>> {
        self.export(None, "export_to_remote_net")
    }

    /// `doca_sync_event_destroy`: a context must be Idle (`BAD_STATE`, and the event back);
    /// a standalone event is stopped first. An exporter's destroy revokes the event: its
    /// importers answer `NOT_FOUND` from then on.
    pub fn destroy(self) -> Result<(), Refused<SyncEvent>> {
        let core = self.ctx.core();
        if let Err(e) = core.require_idle("sync event destroy") {
            return Err(Refused::new(e, self));
        }
        if let Err(e) = core.destroy() {
            return Err(Refused::new(e, self));
        }
        self.ops().revoke();
        Ok(())
    }

    /// What every task `set_conf` checks first: the event is neither a context out of Idle nor
    /// started standalone (`NOT_PERMITTED`, the code the header gives), then the count (at most
    /// [`MAX_NUM_TASKS`]; 0 is accepted, as DOCA's library does: a pool of none).
    fn check_conf(&self, num: u32) -> Result<()> {
        let state = self.ctx.core().state();
        if state != CtxState::Idle
            || matches!(self.ops().cfg.borrow().mode, Mode::Standalone { running: true })
        {
            bail!(
                Error::NotPermitted,
                "sync event task set_conf: the event is started (context state {state:?}); configure its tasks before starting it"
            );
        }
        if num > MAX_NUM_TASKS {
            bail!(Error::InvalidValue, "sync event: {num} tasks exceed the maximum {MAX_NUM_TASKS}");
        }
        Ok(())
    }

    /// `doca_sync_event_task_get_set_conf`: before the event starts (`NOT_PERMITTED`), at most
    /// [`MAX_NUM_TASKS`] tasks (`INVALID_VALUE`).
    pub fn task_get_set_conf(
        &self,
        completion: impl FnMut(GetTask, Data, Data) + 'static,
        error: impl FnMut(GetTask, Data, Data) + 'static,
        num: u32,
    ) -> Result<()> {
        self.check_conf(num)?;
        let (mut c, mut e) = (completion, error);
        self.ops().get.set_conf(
            self.ctx.core(),
            Box::new(move |t: Task<GetP>, td, cd| c(GetTask(t), td, cd)),
            Box::new(move |t: Task<GetP>, td, cd| e(GetTask(t), td, cd)),
            num,
        )
    }

    /// `doca_sync_event_task_notify_set_set_conf`.
    pub fn task_notify_set_set_conf(
        &self,
        completion: impl FnMut(NotifySetTask, Data, Data) + 'static,
        error: impl FnMut(NotifySetTask, Data, Data) + 'static,
        num: u32,
    ) -> Result<()> {
        self.check_conf(num)?;
        let (mut c, mut e) = (completion, error);
        self.ops().set.set_conf(
            self.ctx.core(),
            Box::new(move |t: Task<SetP>, td, cd| c(NotifySetTask(t), td, cd)),
            Box::new(move |t: Task<SetP>, td, cd| e(NotifySetTask(t), td, cd)),
            num,
        )
    }

    /// `doca_sync_event_task_notify_add_set_conf`.
    pub fn task_notify_add_set_conf(
        &self,
        completion: impl FnMut(NotifyAddTask, Data, Data) + 'static,
        error: impl FnMut(NotifyAddTask, Data, Data) + 'static,
        num: u32,
    ) -> Result<()> {
        self.check_conf(num)?;
        let (mut c, mut e) = (completion, error);
        self.ops().add.set_conf(
            self.ctx.core(),
            Box::new(move |t: Task<AddP>, td, cd| c(NotifyAddTask(t), td, cd)),
            Box::new(move |t: Task<AddP>, td, cd| e(NotifyAddTask(t), td, cd)),
            num,
        )
    }

    /// `doca_sync_event_task_wait_gt_set_conf` (2.5/2.6).
    pub fn task_wait_gt_set_conf(
        &self,
        completion: impl FnMut(WaitGtTask, Data, Data) + 'static,
        error: impl FnMut(WaitGtTask, Data, Data) + 'static,
        num: u32,
    ) -> Result<()> {
        self.check_conf(num)?;
        let (mut c, mut e) = (completion, error);
        self.ops().wait_gt.set_conf(
            self.ctx.core(),
            Box::new(move |t: Task<WaitGtP>, td, cd| c(WaitGtTask(t), td, cd)),
            Box::new(move |t: Task<WaitGtP>, td, cd| e(WaitGtTask(t), td, cd)),
            num,
        )
    }

    /// `doca_sync_event_task_wait_eq_set_conf` (2.7+).
    pub fn task_wait_eq_set_conf(
        &self,
        completion: impl FnMut(WaitEqTask, Data, Data) + 'static,
        error: impl FnMut(WaitEqTask, Data, Data) + 'static,
        num: u32,
    ) -> Result<()> {
        self.check_conf(num)?;
        let (mut c, mut e) = (completion, error);
        self.ops().wait_eq.set_conf(
            self.ctx.core(),
            Box::new(move |t: Task<WaitEqP>, td, cd| c(WaitEqTask(t), td, cd)),
            Box::new(move |t: Task<WaitEqP>, td, cd| e(WaitEqTask(t), td, cd)),
            num,
        )
    }

    /// `doca_sync_event_task_wait_neq_set_conf` (2.7+).
    pub fn task_wait_neq_set_conf(
        &self,
        completion: impl FnMut(WaitNeqTask, Data, Data) + 'static,
        error: impl FnMut(WaitNeqTask, Data, Data) + 'static,
        num: u32,
    ) -> Result<()> {
        self.check_conf(num)?;
        let (mut c, mut e) = (completion, error);
        self.ops().wait_neq.set_conf(
            self.ctx.core(),
            Box::new(move |t: Task<WaitNeqP>, td, cd| c(WaitNeqTask(t), td, cd)),
            Box::new(move |t: Task<WaitNeqP>, td, cd| e(WaitNeqTask(t), td, cd)),
            num,
        )
    }

    /// `doca_sync_event_task_get_alloc_init`: Running only (`BAD_STATE`); every task out:
    /// `NO_MEMORY`.
    pub fn task_get_alloc_init(&self, user_data: Data) -> Result<GetTask> {
        let t = self.ops().get.alloc(|p| {
            p.value = 0;
            Ok(())
        })?;
        t.set_user_data(user_data);
        Ok(GetTask(t))
    }

    /// `doca_sync_event_task_notify_set_alloc_init`.
    pub fn task_notify_set_alloc_init(&self, val: u64, user_data: Data) -> Result<NotifySetTask> {
        let t = self.ops().set.alloc(|p| {
            p.val = val;
            Ok(())
        })?;
        t.set_user_data(user_data);
        Ok(NotifySetTask(t))
    }

    /// `doca_sync_event_task_notify_add_alloc_init`.
    pub fn task_notify_add_alloc_init(&self, inc: u64, user_data: Data) -> Result<NotifyAddTask> {
        let t = self.ops().add.alloc(|p| {
            *p = AddP { inc, fetched: 0 };
            Ok(())
        })?;
        t.set_user_data(user_data);
        Ok(NotifyAddTask(t))
    }

    /// `doca_sync_event_task_wait_gt_alloc_init` (2.5/2.6): the mask is checked
    /// (`INVALID_VALUE`).
    pub fn task_wait_gt_alloc_init(&self, val: u64, mask: u64, user_data: Data) -> Result<WaitGtTask> {
        check_mask(mask)?;
        let t = self.ops().wait_gt.alloc(|p| {
            p.0 = WaitP { val, mask };
            Ok(())
        })?;
        t.set_user_data(user_data);
        Ok(WaitGtTask(t))
    }

    /// `doca_sync_event_task_wait_eq_alloc_init` (2.7+).
    pub fn task_wait_eq_alloc_init(&self, val: u64, mask: u64, user_data: Data) -> Result<WaitEqTask> {
        check_mask(mask)?;
        let t = self.ops().wait_eq.alloc(|p| {
            p.0 = WaitP { val, mask };
            Ok(())
        })?;
        t.set_user_data(user_data);
        Ok(WaitEqTask(t))
    }

    /// `doca_sync_event_task_wait_neq_alloc_init` (2.7+).
    pub fn task_wait_neq_alloc_init(&self, val: u64, mask: u64, user_data: Data) -> Result<WaitNeqTask> {
        check_mask(mask)?;
        let t = self.ops().wait_neq.alloc(|p| {
            p.0 = WaitP { val, mask };
            Ok(())
        })?;
        t.set_user_data(user_data);
        Ok(WaitNeqTask(t))
    }
}

impl CtxOps for SeOps {
    fn kind(&self) -> &'static str {
        "sync_event"
    }

    fn start(&self, core: &CtxCore) -> Result<Started> {
        if let Mode::Standalone { .. } = self.cfg.borrow().mode {
            bail!(Error::NotPermitted, "sync event: started standalone, it cannot start as a context");
        }

        self.cfg.borrow_mut().mode = Mode::Context;
        self.make_waker(core)?;
        self.get.prepare(GetP::default);
        self.set.prepare(SetP::default);
        self.add.prepare(AddP::default);
        self.wait_gt.prepare(WaitGtP::default);
        self.wait_eq.prepare(WaitEqP::default);
        self.wait_neq.prepare(WaitNeqP::default);
        let mut w = self.waits.borrow_mut();
        w.clear();
        w.reserve((self.wait_gt.capacity() + self.wait_eq.capacity() + self.wait_neq.capacity()) as usize);
        Ok(Started::Running)
    }

    fn stop(&self, _core: &CtxCore) {
        // Waiting tasks are flushed in progress: callbacks never run inside stop.
    }

    /// Only while wait tasks wait.
    fn needs_poll(&self, _core: &CtxCore) -> bool {
        match &self.wire {
            Some(w) => self.remote_needs_poll(w),
            None => !self.waits.borrow().is_empty(),
        }
    }

    fn progress(&self, core: &CtxCore, _now: &Now<'_>) -> bool {
        if let Some(w) = &self.wire {
            return self.remote_progress(core, w);
        }
        if self.waits.borrow().is_empty() {
            return false;
        }
        if core.state() != CtxState::Running {
            self.flush_waits(FLUSH_STATUS);
            return true;
        }
        let n = self.passes.get().wrapping_add(1);
        self.passes.set(n);
        if let Err(e) = self.check_alive(n % ALIVE_EVERY == 0 || self.woke.replace(false)) {
            self.flush_waits(e);
            return true;
        }
        self.complete_waits()
    }

    fn request_notification(&self, _core: &CtxCore) -> bool {
        if let Some(w) = &self.wire {
            return self.remote_request_notification(w);
        }
        if self.waits.borrow().is_empty() {
            return false;
        }
        self.arm(true);
        // After arming (SeqCst): an update made before this look is seen here, a later one
        // sees the armed flag and rings.
        self.waiting_satisfied() || self.check_alive(true).is_err()
    }

    fn clear_notification(&self, _core: &CtxCore) {
        if let Some(w) = &self.wire {
            // What woke the engine may be a message nobody waits for (a late change, the
            // end of the stream): taken now, so that the socket does not stay readable.
            self.pump(w);
            return;
        }
        self.arm(false);
        self.woke.set(true);
        // The exporter's end may be what woke the engine (with no wait task to look at it):
        // looked at now, so that its watches go once it is gone.
        self.look(true);
    }
}

impl SeOps {
    /// Completes the wait tasks whose condition holds on the value now: whether any did.
    fn complete_waits(&self) -> bool {
        let v = self.value().load(SeqCst);
        let mut done = false;
        let mut i = 0;
        loop {
            let next = self.waits.borrow().get(i).copied();
            let Some((cmp, id)) = next else { break };
            let holds = self.wait_params(cmp, id).is_none_or(|(val, mask)| cmp.holds(v, mask, val));
            if holds {
                self.waits.borrow_mut().swap_remove(i);
                self.finish_wait(cmp, id, Ok(()));
                done = true;
            } else {
                i += 1;
            }
        }
        done
    }
}

macro_rules! lib_for {
    ($payload:ty, $pool:ident, |$ops:ident, $id:ident| $submit:expr) => {
        lib_for!($payload, $pool, "", |$ops, $id| $submit);
    };
    ($payload:ty, $pool:ident, $kind:literal, |$ops:ident, $id:ident| $submit:expr) => {
        impl TaskPayload for $payload {
            type Lib = SeOps;
            // A fault plan's `task.<kind>` point (waits only: `task.sync_event.wait`).
            const FAULT_KIND: &'static str = $kind;
        }
        impl TaskLib<$payload> for SeOps {
            fn pool(&self) -> &TaskPool<$payload> {
                &self.$pool
            }
            fn submit(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
                let $ops = self;
                let $id = task;
                $submit
            }
        }
    };
}

lib_for!(GetP, get, |ops, id| {
    if let Some(w) = &ops.wire {
        return ops.remote_submit(w, remote::Pending::Get(id), 0);
    }
    let status = ops.check_alive(true).map(|()| {
        let v = ops.value().load(SeqCst);
        ops.get.with_payload(id, |p| p.value = v);
    });
    ops.get.finish(id, status);
    Ok(())
});

lib_for!(SetP, set, |ops, id| {
    if let Some(w) = &ops.wire {
        let v = ops.set.with_payload(id, |p| p.val).unwrap_or(0);
        return ops.remote_submit(w, remote::Pending::Set(id), v);
    }
    let status = ops.check_alive(true).map(|()| {
        if let Some(v) = ops.set.with_payload(id, |p| p.val) {
            ops.value().store(v, SeqCst);
            ops.updated();
        }
    });
    ops.set.finish(id, status);
    Ok(())
});

lib_for!(AddP, add, |ops, id| {
    if let Some(w) = &ops.wire {
        let inc = ops.add.with_payload(id, |p| p.inc).unwrap_or(0);
        return ops.remote_submit(w, remote::Pending::Add(id), inc);
    }
    let status = ops.check_alive(true).map(|()| {
        if let Some(inc) = ops.add.with_payload(id, |p| p.inc) {
            let before = ops.value().fetch_add(inc, SeqCst);
            ops.add.with_payload(id, |p| p.fetched = before);
            ops.updated();
        }
    });
    ops.add.finish(id, status);
    Ok(())
});

macro_rules! wait_lib {
    ($payload:ty, $pool:ident, $cmp:expr) => {
        lib_for!($payload, $pool, "sync_event.wait", |ops, id| {
            let mask = ops.$pool.with_payload(id, |p| p.0.mask).unwrap_or(0);
            check_mask(mask)?;
            ops.waits.borrow_mut().push(($cmp, id));
            Ok(())
        });
    };
}
wait_lib!(WaitGtP, wait_gt, Cmp::Gt);
wait_lib!(WaitEqP, wait_eq, Cmp::Eq);
wait_lib!(WaitNeqP, wait_neq, Cmp::Neq);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_are_zero_or_consecutive_ff_bytes() {
        for ok in
            [0, 0xFF, 0xFF00, 0xFFFF, 0xFFFF_0000, 0xFFFF_FFFF, 0xFFFF_FFFF_0000_0000, u64::MAX, 0xFF << 56]
        {
            assert_eq!(check_mask(ok), Ok(()), "{ok:#x}");
        }
        for bad in [1, 0xF0, 0xFFF, 0xFF_FFFF, 0xFF0F, 0x0FF0, 0xFFFF_FF00] {
            assert_eq!(check_mask(bad), Err(Error::InvalidValue), "{bad:#x}");
        }
    }
}

/// `struct doca_sync_event_remote_net`: an RDMA peer's event, created from the blob its owner
/// exported with [`SyncEvent::export_to_remote_net`], acted on by the RDMA library's remote
/// sync event tasks (get, notify-set, notify-add). Here the owner's page is mapped, as a
/// one-sided RDMA operation reaches the peer's memory without its application; every
/// operation first checks that the owner still has the event (`NOT_FOUND` otherwise).
/// Clones name the same event.
#[derive(Clone)]
pub struct RemoteNet(Rc<SyncEvent>);

impl RemoteNet {
    /// `doca_sync_event_remote_net_create_from_export`: `INVALID_VALUE` for a blob that is
    /// not a remote-net export; `NOT_FOUND` when its owner exited or destroyed the event.
    pub fn create_from_export(dev: &Dev, blob: &[u8]) -> Result<RemoteNet> {
        caps::is_remote_net_supported(dev.as_devinfo())?;
        let ev = SyncEvent::import(blob, NET_MAGIC, "remote_net_create_from_export")?;
        ev.start()?;
        Ok(RemoteNet(Rc::new(ev)))
    }

    /// The value (a remote get).
    pub fn get(&self) -> Result<u64> {
        self.0.get()
    }

    /// Sets the value (a remote notify-set): the owner's waiters see it.
    pub fn set(&self, value: u64) -> Result<()> {
        self.0.update_set(value)
    }

    /// Adds to the value (a remote notify-add): the value before.
    pub fn add(&self, value: u64) -> Result<u64> {
        self.0.update_add(value)
    }

    /// Whether `other` names the same event.
    pub fn same(&self, other: &RemoteNet) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for RemoteNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RemoteNet")
    }
}
