//! `doca_ctx`: the state machine every library context follows.
//!
//! A state change happens at once ([`Ctx::state`] is current right after [`Ctx::start`] or
//! [`Ctx::stop`]); its state-changed callback runs on the next [`crate::Pe::progress`], for
//! every transition, synchronous ones included. Callbacks never run inside start, stop or
//! submit. A transition the library makes inside progress (its start completed or failed,
//! a fatal error) is delivered at once, before the library can make the next: the callback
//! for `(prev, next)` finds the context in `next`. Transitions the application makes
//! (start, stop, from a callback or not) are delivered in order at the next progress pass;
//! when it makes several before that pass — start, then stop — each still gets its
//! callback, and the earlier ones find the context already in the later state.
//!
//! | from     | what happens                                             | to       | the call returns |
//! |----------|----------------------------------------------------------|----------|------------------|
//! | Idle     | `start`, library starts synchronously                    | Running  | `Ok(())`         |
//! | Idle     | `start`, library starts asynchronously                   | Starting | `Err(IN_PROGRESS)` |
//! | Idle     | `start` refused by the library (bad configuration, …)    | Idle     | its error, no callback |
//! | Idle     | `start` while not connected to a progress engine        | Idle     | `Err(NOT_CONNECTED)` |
//! | Idle     | `stop` (nothing to do; DOCA's samples stop idle contexts in their cleanup) | Idle | `Ok(())`, no callback |
//! | Idle     | `stop` while not connected to a progress engine (the header's code) | Idle | `Err(NOT_CONNECTED)` |
//! | Starting | `progress`: the library finished starting                | Running  | —                |
//! | Starting | `progress`: the library failed to start                  | Idle     | —                |
//! | Starting | `stop` (doca_ctx.h: Starting → Stopping → Idle)          | Stopping | `Err(IN_PROGRESS)` |
//! | Running  | `stop` when every task is freed and nothing is in flight | Idle     | `Ok(())`         |
//! | Running  | `stop` with tasks allocated or in flight                 | Stopping | `Err(IN_PROGRESS)` |
//! | Running  | `progress`: the library hit a fatal error (peer gone, …) | Stopping | —                |
//! | Stopping | `progress`: in-flight tasks complete through their error callback | Stopping | — |
//! | Stopping | `progress` once every task is freed                      | Idle     | —                |
//! | Stopping | `stop`                                                   | Stopping | `Err(IN_PROGRESS)` |
//! | Starting, Running, Stopping | `start`                               | same     | `Err(BAD_STATE)` |
//!
//! Configuration (task pools, event registration, library setters) is accepted only in Idle
//! (`BAD_STATE` otherwise); tasks are allocated and submitted only in Running (`BAD_STATE`:
//! doca_ctx.h says a Stopping context cannot allocate or submit tasks — the Comm Channel
//! guide's table lists both for Stopping; the header is followed). The state-changed
//! callback and the user data can be set in any state (the header sets no rule).
//!
//! # For library authors
//! A library context is a value implementing [`CtxOps`], wrapped by [`CtxCell::new`]. Core
//! owns the state, the user data, the state-changed callback, the task counters and the
//! delivery of finished tasks ([`CtxCore`]); the library polls its own resources in
//! [`CtxOps::progress`] and reports back through [`CtxCore::set_running`],
//! [`CtxCore::abort_start`], [`CtxCore::fail`] and [`crate::TaskPool::finish`]. It makes
//! its file descriptors wake a sleeping application with [`CtxCore::watch`], whose guard
//! unregisters them when dropped. Core knows nothing else about the library. An engine
//! library (tasks worked through in order inside progress: DMA, SHA, …) writes only its
//! engine: [`crate::queue`]'s kit is its [`CtxOps`] and [`crate::TaskLib`].

use std::cell::{Cell, OnceCell, RefCell};
use std::fmt;
use std::os::fd::AsFd;
use std::rc::{Rc, Weak};
use std::time::Instant;

use smallvec::SmallVec;

use crate::callback::CbSlot;
use crate::clock::Now;
use crate::data::Data;
use crate::error::{Error, Result};
use crate::{bail, fail};
use doca_link::notify::Watched;

/// `enum doca_ctx_states`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum CtxState {
    /// `DOCA_CTX_STATE_IDLE` (0): configurable; no task can be allocated.
    Idle = 0,
    /// `DOCA_CTX_STATE_STARTING` (1): an asynchronous start is under way.
    Starting = 1,
    /// `DOCA_CTX_STATE_RUNNING` (2): tasks can be allocated and submitted.
    Running = 2,
    /// `DOCA_CTX_STATE_STOPPING` (3): draining; in-flight tasks complete with an error.
    Stopping = 3,
}

impl CtxState {
    /// DOCA's enumerator, e.g. `"DOCA_CTX_STATE_RUNNING"`.
    pub fn name(self) -> &'static str {
        match self {
            CtxState::Idle => "DOCA_CTX_STATE_IDLE",
            CtxState::Starting => "DOCA_CTX_STATE_STARTING",
            CtxState::Running => "DOCA_CTX_STATE_RUNNING",
            CtxState::Stopping => "DOCA_CTX_STATE_STOPPING",
        }
    }
}

/// `doca_ctx_state_changed_callback_t`: `(ctx user data, ctx, previous, next)`; the context
/// is already in `next` when it runs.
pub type StateChangedCb = dyn FnMut(Data, &Ctx, CtxState, CtxState);

/// How a library's start went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Started {
    /// Synchronous start: the context is Running and `start` returns `Ok`.
    Running,
    /// Asynchronous start: the context is Starting, `start` returns `IN_PROGRESS`, and the
    /// library calls [`CtxCore::set_running`] (or [`CtxCore::abort_start`]) from progress.
    Starting,
}

/// Passes a context with nothing to do stays on its engine's list before leaving it.
const LINGER_PASSES: u8 = 16;

/// Pools a context keeps in its fixed slots (most contexts have one to three task types).
const FIXED_POOLS: usize = 4;

/// What a library context implements to plug into core. Every method runs on the thread of
/// the context's progress engine; none may call user callbacks except `progress`.
pub trait CtxOps: 'static {
    /// Short name for logs, e.g. `"cc_server"`.
    fn kind(&self) -> &'static str;

    /// Called by [`Ctx::start`] in Idle once core's own checks passed. Allocate task pools
    /// and resources here; an error leaves the context Idle.
    fn start(&self, core: &CtxCore) -> Result<Started>;

    /// Called by [`Ctx::stop`] from Starting or Running: stop taking work, and arrange for
    /// every in-flight task to complete (with an error) on the following progress calls.
    fn stop(&self, core: &CtxCore);

    /// Polls the library's resources once: finishes tasks ([`crate::TaskPool::finish`]) and
    /// delivers events. Returns whether anything happened. `now` is the time of this
    /// progress pass (read on first use). Not called while the context is Idle.
    fn progress(&self, core: &CtxCore, now: &Now<'_>) -> bool;

    /// Whether progress must keep polling this context (Starting or Running) although core
    /// has nothing to deliver for it: it watches rings, sockets or timers. Return false when
    /// a poll would find nothing until the application calls in again; the engine then
    /// skips the context until a task is submitted to it, it finishes a task, its state
    /// changes, or it calls [`CtxCore::activate`]. Default: always poll.
    fn needs_poll(&self, _core: &CtxCore) -> bool {
        true
    }

    /// Whether the library still has work of its own that must finish before Idle (beyond
    /// tasks, which core counts). Default: nothing.
    fn is_busy(&self, _core: &CtxCore) -> bool {
        false
    }

    /// The application is about to sleep on the notification handle: arm whatever wakes it
    /// (fds registered with [`CtxCore::watch`]). Return true when work is already waiting,
    /// so that the handle is made readable at once.
    fn request_notification(&self, _core: &CtxCore) -> bool {
        false
    }

    /// The application woke up: disarm, drain what [`CtxOps::request_notification`] armed.
    fn clear_notification(&self, _core: &CtxCore) {}

    /// `doca_ctx_flush_tasks`: hand over what tasks submitted without
    /// [`TaskSubmitFlags::FLUSH`](crate::TaskSubmitFlags::FLUSH) left aggregated. Default:
    /// nothing (a library that never aggregates).
    fn flush_tasks(&self, _core: &CtxCore) {}
}

/// What core calls to deliver the finished tasks of one of a context's pools (each pool
/// registers itself at its first configuration).
pub(crate) trait Deliver {
    /// Delivers the tasks finished so far; returns how many callbacks ran.
    fn deliver(&self) -> usize;

    /// When the first completion a fault plan's `delay` holds back is due (`None`: none held).
    fn next_due(&self) -> Option<Instant>;
}

/// What a context asks of the progress engine it is connected to. The engine ([`crate::Pe`])
/// implements it and contexts hold it by a weak link: the engine visits contexts, contexts
/// reach back only through this (so neither module imports the other both ways). Every
/// call is off the busy path (a context joining the visiting list, a wake-up, a destroy).
pub(crate) trait Engine {
    /// Puts `ctx` on the list of contexts the engine visits (after a running walk).
    fn join(&self, ctx: Ctx);
    /// Unlinks `ctx` (being destroyed) from the engine.
    fn remove(&self, ctx: &Ctx);
    /// Something core itself will deliver is pending: wakes an application asleep on the
    /// engine's notification handle.
    fn work_pending(&self);
    /// The engine's clock, read now.
    fn now(&self) -> Instant;
    /// While arming: wake the application at `at` at the latest.
    fn wake_at(&self, at: Instant);
    /// Whether a progress pass of the engine is running (its callbacks are being called).
    fn in_progress(&self) -> bool;
    /// The set a sleeping application waits on (its notification handle).
    fn epoll(&self) -> &doca_link::notify::EpollSet;
}

/// The part of every context that core owns: state, user data, state-changed callback,
/// task counters and the link to its progress engine.
pub struct CtxCore {
    kind: &'static str,
    state: Cell<CtxState>,
    user_data: Cell<Data>,
    state_cb: CbSlot<StateChangedCb>,
    transitions: RefCell<SmallVec<[(CtxState, CtxState); 4]>>,
    /// Whether `transitions` is non-empty (read on every progress without a borrow).
    has_transitions: Cell<bool>,
    /// The library's poll runs ([`CtxOps::progress`]): what it reports is delivered at once.
    in_poll: Cell<bool>,
    allocated: Cell<usize>,
    inflight: Cell<usize>,
    /// Tasks finished by the library and not yet delivered, across its pools.
    finished: Cell<usize>,
    /// Finished tasks whose completion a fault plan's `delay` holds back, across its pools,
    /// and when the first is due.
    held: Cell<usize>,
    next_due: Cell<Option<Instant>>,
    /// The context's first pools, each set once (at the pool's first configuration) and
    /// never changed: delivery calls them through a plain reference, with no count to take
    /// and no borrow to hold across the callbacks.
    pools: [OnceCell<Rc<dyn Deliver>>; FIXED_POOLS],
    /// Pools beyond those.
    more_pools: RefCell<Vec<Rc<dyn Deliver>>>,
    /// The engine's application is (about to be) asleep: finishing a task must wake it.
    armed: Cell<bool>,
    /// In the engine's list of contexts to visit.
    active: Cell<bool>,
    /// Consecutive passes with nothing to do while on that list.
    quiet_passes: Cell<u8>,
    /// The engine the context is connected to (`None` before `doca_pe_connect_ctx`).
    pe: RefCell<Option<Weak<dyn Engine>>>,
    /// The engine's status row, where task counts go too.
    status: Cell<crate::status::EngineRow>,
    /// Where this context's state is shown on the status page (its object's row), if told.
    state_slot: Cell<Option<crate::status::StateSlot>>,
    this: Weak<CtxCell<dyn CtxOps>>,
}

/// A context: core's part and the library's part in one allocation.
pub struct CtxCell<L: ?Sized> {
    core: CtxCore,
    ops: L,
}

impl<L: CtxOps> CtxCell<L> {
    /// Creates a context in Idle. `make` builds the library part and receives a weak handle
    /// to the context being built (for task pools, see [`crate::TaskPool::new`]).
    pub fn new(make: impl FnOnce(&Weak<CtxCell<L>>) -> L) -> Rc<CtxCell<L>> {
        Rc::new_cyclic(|weak: &Weak<CtxCell<L>>| {
            let ops = make(weak);
            let this: Weak<CtxCell<dyn CtxOps>> = weak.clone();
            CtxCell {
                core: CtxCore {
                    kind: ops.kind(),
                    state: Cell::new(CtxState::Idle),
                    user_data: Cell::new(Data::NONE),
                    state_cb: CbSlot::empty(),
                    transitions: RefCell::new(SmallVec::new()),
                    has_transitions: Cell::new(false),
                    in_poll: Cell::new(false),
                    allocated: Cell::new(0),
                    inflight: Cell::new(0),
                    finished: Cell::new(0),
                    held: Cell::new(0),
                    next_due: Cell::new(None),
                    pools: Default::default(),
                    more_pools: RefCell::new(Vec::new()),
                    armed: Cell::new(false),
                    active: Cell::new(false),
                    quiet_passes: Cell::new(0),
                    pe: RefCell::new(None),
                    status: Cell::new(Default::default()),
                    state_slot: Cell::new(None),
                    this,
                },
                ops,
            }
        })
    }
}

/// A flag (an engine's "in progress", a context's "in poll") set while something runs and
/// cleared when it ends: returns, or is unwound by a callback that panics (a caller that
/// catches the panic finds the flag down, not an engine refusing every call as if
/// re-entered, nor a context delivering later transitions at once).
pub(crate) struct Raised<'a>(&'a Cell<bool>);

impl<'a> Raised<'a> {
    #[inline]
    pub(crate) fn new(flag: &'a Cell<bool>) -> Self {
        flag.set(true);
        Raised(flag)
    }
}

impl Drop for Raised<'_> {
    #[inline]
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl CtxCell<dyn CtxOps> {
    /// One progress pass over this context: pending state callbacks, the library's poll,
    /// the tasks it finished, and the Stopping → Idle check.
    #[inline]
    fn progress(&self, now: &Now<'_>) -> bool {
        let core = &self.core;
        let mut any = core.deliver_transitions();
        if core.state() != CtxState::Idle {
            let polling = Raised::new(&core.in_poll);
            let polled = self.ops.progress(core, now);
            drop(polling);
            any |= polled;
            if core.finished.get() > 0 || (core.held.get() > 0 && core.held_due(now.get())) {
                any |= core.deliver_finished() > 0;
            }
            if core.state() == CtxState::Stopping && core.drained(&self.ops) {
                core.transition(CtxState::Idle);
            }
            // What the library's poll changed (Starting -> Running, fatal errors, the
            // final Idle) is reported in this same pass.
            any |= core.deliver_transitions();
        }
        any
    }

    /// Whether the engine must visit this context again: something to deliver, a stop to
    /// finish, or a library that polls.
    #[inline]
    fn keeps_active(&self) -> bool {
        let core = &self.core;
        let busy = core.has_transitions.get()
            || core.finished.get() > 0
            || core.held.get() > 0
            || match core.state() {
                CtxState::Idle => false,
                CtxState::Stopping => true,
                CtxState::Starting | CtxState::Running => self.ops.needs_poll(core),
            };
        if busy {
            core.quiet_passes.set(0);
        }
        busy
    }
}

impl<L: ?Sized> CtxCell<L> {
    /// Core's part.
    pub fn core(&self) -> &CtxCore {
        &self.core
    }

    /// The library's part.
    pub fn ops(&self) -> &L {
        &self.ops
    }
}

/// `struct doca_ctx`: the generic face of any library context (what `doca_*_as_ctx`
/// returns). Cloning gives another handle to the same context.
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// use doca_core::loopback::Loopback;
/// use doca_core::{CtxState, Error, Pe, Started};
///
/// let pe = Pe::create()?;
/// let lb = Loopback::create(Started::Starting); // starts asynchronously, like a cc client
/// let ctx = lb.as_ctx();
/// pe.connect_ctx(&ctx)?;
/// ctx.set_state_changed_cb(|_user_data, _ctx, prev, next| println!("{prev:?} -> {next:?}"))?;
/// assert_eq!(ctx.start(), Err(Error::InProgress));
/// assert_eq!(ctx.state(), CtxState::Starting); // current at once; the callback comes in progress
/// pe.progress();
/// assert_eq!(ctx.state(), CtxState::Running);
/// ctx.stop()?; // nothing in flight: Idle at once
/// assert_eq!(ctx.state(), CtxState::Idle);
/// # Ok::<(), doca_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Ctx(pub(crate) Rc<CtxCell<dyn CtxOps>>);

impl PartialEq for Ctx {
    fn eq(&self, other: &Self) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for Ctx {}

impl fmt::Debug for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ctx({} {:?})", self.0.core.kind, self.state())
    }
}

impl<L: CtxOps> From<Rc<CtxCell<L>>> for Ctx {
    fn from(rc: Rc<CtxCell<L>>) -> Ctx {
        Ctx(rc)
    }
}

impl Ctx {
    pub(crate) fn core(&self) -> &CtxCore {
        &self.0.core
    }

    /// `doca_ctx_start`. See the module table for the outcomes.
    pub fn start(&self) -> Result<()> {
        let core = self.core();
        if core.state() != CtxState::Idle {
            bail!(Error::BadState, "{}: start in state {:?}", core.kind, core.state());
        }
        if core.engine().is_none() {
            bail!(
                Error::NotConnected,
                "{}: start before connecting the context to a progress engine",
                core.kind
            );
        }
        match self.0.ops.start(core)? {
            Started::Running => {
                core.transition(CtxState::Running);
                Ok(())
            }
            Started::Starting => {
                core.transition(CtxState::Starting);
                Err(Error::InProgress)
            }
        }
    }

    /// `doca_ctx_stop`. See the module table for the outcomes.
    pub fn stop(&self) -> Result<()> {
        let core = self.core();
        match core.state() {
            // Never connected to an engine: the header's `NOT_CONNECTED` (DOCA's library
            // answers so once a start was tried; here also for a context never started).
            CtxState::Idle if core.pe.borrow().is_none() => {
                bail!(
                    Error::NotConnected,
                    "{}: stop of a context not connected to a progress engine",
                    core.kind
                )
            }
            // Nothing to stop: DOCA answers success (its header lists no error for it, and
            // NVIDIA's dma_local_copy stops its already idle context in its cleanup).
            CtxState::Idle => {
                tracing::debug!(target: "doca_sdk", "{}: stop while idle: nothing to do", core.kind);
                Ok(())
            }
            CtxState::Stopping => Err(Error::InProgress),
            CtxState::Starting => {
                // doca_ctx.h: a starting context stops through Stopping; no task exists yet,
                // so the next progress reaches Idle.
                self.0.ops.stop(core);
                core.transition(CtxState::Stopping);
                Err(Error::InProgress)
            }
            CtxState::Running => {
                self.0.ops.stop(core);
                if core.drained(&self.0.ops) {
                    core.transition(CtxState::Idle);
                    Ok(())
                } else {
                    core.transition(CtxState::Stopping);
                    Err(Error::InProgress)
                }
            }
        }
    }

    /// `doca_ctx_get_state`.
    pub fn state(&self) -> CtxState {
        self.core().state()
    }

    /// `doca_ctx_set_user_data`. Allowed in any state.
    pub fn set_user_data(&self, data: Data) {
        self.core().user_data.set(data);
    }

    /// `doca_ctx_get_user_data`.
    pub fn user_data(&self) -> Data {
        self.core().user_data()
    }

    /// `doca_ctx_set_state_changed_cb`, in any state (a callback set while a change is
    /// pending gets that change).
    pub fn set_state_changed_cb(
        &self,
        cb: impl FnMut(Data, &Ctx, CtxState, CtxState) + 'static,
    ) -> Result<()> {
        self.core().state_cb.set(Box::new(cb));
        Ok(())
    }

    /// `doca_ctx_flush_tasks`: tasks submitted with [`Task::submit_ex`](crate::Task::submit_ex)
    /// without [`TaskSubmitFlags::FLUSH`](crate::TaskSubmitFlags::FLUSH), which the library
    /// may have kept to hand over together, go now. Does nothing on a context that is not
    /// Running or keeps nothing back.
    pub fn flush_tasks(&self) {
        let core = self.core();
        if core.state() == CtxState::Running {
            self.0.ops.flush_tasks(core);
        }
    }

    /// `doca_ctx_get_num_inflight_tasks`: submitted and not yet completed.
    pub fn num_inflight_tasks(&self) -> usize {
        self.core().inflight()
    }

    /// Tasks taken from this context's pools and not yet freed (what a stop waits for).
    pub fn num_allocated_tasks(&self) -> usize {
        self.core().allocated()
    }

    /// Whether the context is connected to a live progress engine.
    pub fn is_connected(&self) -> bool {
        self.core().engine().is_some()
    }

    /// The library's name for this kind of context (e.g. `"cc_server"`).
    pub fn kind(&self) -> &'static str {
        self.core().kind
    }

    /// One visit of the engine's walk: [`CtxCell::progress`], then whether the context
    /// stays on the engine's list — it has something to do ([`CtxCell::keeps_active`]), or
    /// it is not Idle and has been quiet (a pass that delivered nothing) for fewer than
    /// [`LINGER_PASSES`] passes. The cell behind the handle is found once for both.
    #[inline]
    pub(crate) fn visit(&self, now: &Now<'_>) -> (bool, bool) {
        let cell = &*self.0;
        let any = cell.progress(now);
        let running = cell.core.state() != CtxState::Idle;
        if any {
            // Not quiet: a context with a task cycle every pass never leaves and rejoins. It
            // stays without asking its library (its quiet passes count from the next one).
            cell.core.quiet_passes.set(0);
            if running {
                return (true, true);
            }
        }
        let stay = cell.keeps_active() || (running && cell.core.linger());
        (any, stay)
    }

    pub(crate) fn has_pending_transitions(&self) -> bool {
        self.core().has_transitions.get()
    }

    pub(crate) fn request_notification(&self) -> bool {
        let core = self.core();
        core.armed.set(true);
        let pending = self.has_pending_transitions()
            || core.finished.get() > 0
            || (core.held.get() > 0 && core.wake_when_due())
            || (core.state() == CtxState::Stopping && core.drained(&self.0.ops));
        let lib = core.state() != CtxState::Idle && self.0.ops.request_notification(core);
        pending || lib
    }

    pub(crate) fn clear_notification(&self) {
        self.core().armed.set(false);
        self.0.ops.clear_notification(self.core());
    }

    pub(crate) fn attach(&self, pe: Weak<dyn Engine>, row: crate::status::EngineRow) -> Result<()> {
        let core = self.core();
        if core.engine().is_some() {
            bail!(Error::NotPermitted, "{}: context is already connected to a progress engine", core.kind);
        }
        if core.state() != CtxState::Idle {
            bail!(Error::BadState, "{}: connect while {:?}", core.kind, core.state());
        }
        *core.pe.borrow_mut() = Some(pe);
        core.status.set(row);
        Ok(())
    }
}

impl CtxCore {
    /// Whether this context and `other` are connected to one progress engine.
    pub(crate) fn shares_engine_with(&self, other: &CtxCore) -> bool {
        match (self.pe.borrow().as_ref(), other.pe.borrow().as_ref()) {
            (Some(a), Some(b)) => Weak::ptr_eq(a, b),
            _ => false,
        }
    }

    /// The engine the context is connected to, while it lives.
    #[inline]
    fn engine(&self) -> Option<Rc<dyn Engine>> {
        self.pe.borrow().as_ref().and_then(Weak::upgrade)
    }

    /// The current state.
    pub fn state(&self) -> CtxState {
        self.state.get()
    }

    /// The context's user data.
    pub fn user_data(&self) -> Data {
        self.user_data.get()
    }

    /// Submitted, not yet completed tasks.
    pub fn inflight(&self) -> usize {
        self.inflight.get()
    }

    /// The number of the engine this context is connected to in the status page (0: none
    /// yet; see [`crate::status`]).
    pub fn engine_status_id(&self) -> u64 {
        self.status.get().id()
    }

    /// Allocated, not yet freed tasks.
    pub fn allocated(&self) -> usize {
        self.allocated.get()
    }

    /// The library's name for the context.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// A handle to this context (for callbacks that take `&Ctx`).
    pub fn ctx(&self) -> Ctx {
        Ctx(self.this.upgrade().expect("a context's core is only reachable while the context lives"))
    }

    /// Shows this context's state in `entry`'s row of the status page (`doca_emu ls`/`watch`),
    /// now and at every change. A library calls it once, with the row of the object the
    /// context is.
    pub fn show_state_in(&self, entry: &crate::status::Entry) {
        let slot = entry.state_slot();
        self.state_slot.set(slot);
        if let Some(slot) = slot {
            slot.write(self.state());
        }
    }

    /// `Ok` in Idle, else `BAD_STATE` naming `what` (for configuration calls).
    pub fn require_idle(&self, what: &str) -> Result<()> {
        if self.state() != CtxState::Idle {
            bail!(
                Error::BadState,
                "{}: {what} is allowed only while idle (state {:?})",
                self.kind,
                self.state()
            );
        }
        Ok(())
    }

    /// `Ok` in Running, else `BAD_STATE` naming `what` (for task allocation and submission).
    #[inline]
    pub fn require_running(&self, what: &str) -> Result<()> {
        if self.state() != CtxState::Running {
            return Err(self.not_running(what));
        }
        Ok(())
    }

    #[cold]
    fn not_running(&self, what: &str) -> Error {
        fail!(Error::BadState, "{}: {what} needs a running context (state {:?})", self.kind, self.state())
    }

    /// Starting → Running, for a library whose asynchronous start completed. Called from
    /// [`CtxOps::progress`], the state-changed callback runs before this returns (after any
    /// still queued), so it finds the context Running: hold no borrow of the library's own
    /// state across this call, since the callback may call back into the library.
    pub fn set_running(&self) {
        if self.state() == CtxState::Starting {
            self.report(CtxState::Running);
        }
    }

    /// Starting → Idle, for a library whose asynchronous start failed (logged with `why`).
    /// Delivered as [`CtxCore::set_running`] is.
    pub fn abort_start(&self, error: Error, why: &str) {
        if self.state() == CtxState::Starting {
            tracing::error!(target: "doca_sdk", "{}: {}: start failed: {why}", error.name(), self.kind);
            self.report(CtxState::Idle);
        }
    }

    /// Running → Stopping after a fatal error (logged with `why`); the library then completes
    /// its in-flight tasks with errors and the context reaches Idle once they are freed.
    /// Delivered as [`CtxCore::set_running`] is.
    pub fn fail(&self, error: Error, why: &str) {
        if matches!(self.state(), CtxState::Running | CtxState::Starting) {
            tracing::error!(target: "doca_sdk", "{}: {}: fatal: {why}", error.name(), self.kind);
            self.report(CtxState::Stopping);
        }
    }

    /// A transition the library makes. Inside its poll, core delivers it at once — after any
    /// still queued — so its callback finds the context in `next` and may do what `next`
    /// allows (get a connection in Running, free tasks in Stopping…), before the library
    /// goes on and perhaps makes the next one. The library must hold no borrow of its own
    /// state across this call: the callback may call back into it. Outside a poll (a
    /// library's `start` or `stop`), it is queued for the next progress like any transition.
    fn report(&self, next: CtxState) {
        self.transition(next);
        if self.in_poll.get() {
            self.deliver_transitions();
        }
    }

    /// Adds `fd` to the notification set of the context's progress engine, so that a sleeping
    /// application wakes when it becomes readable; the returned guard owns `fd` and removes
    /// it from the set when dropped. `NOT_CONNECTED` without an engine. To watch a file
    /// another context watches too, pass a duplicate (`try_clone_to_owned`).
    pub fn watch<T: AsFd>(&self, fd: T) -> Result<Watched<T>> {
        match self.engine() {
            Some(pe) => Ok(pe.epoll().watch(fd, 0)?),
            None => Err(fail!(Error::NotConnected, "{}: no progress engine to watch an fd", self.kind)),
        }
    }

    /// Whether the context's progress engine is inside a progress pass now (a call made
    /// from one of its callbacks); false without an engine.
    pub fn engine_in_progress(&self) -> bool {
        self.engine().is_some_and(|pe| pe.in_progress())
    }

    /// The time on the clock of the context's progress engine (the system clock without
    /// one). Inside [`CtxOps::progress`], prefer the pass's `now`.
    pub fn now(&self) -> Instant {
        match self.engine() {
            Some(pe) => pe.now(),
            None => Instant::now(),
        }
    }

    /// For a library's destroy: Idle only (`BAD_STATE`), then unlinks the context from its
    /// progress engine. The library releases its own resources afterwards.
    pub fn destroy(&self) -> Result<()> {
        self.require_idle("destroy")?;
        // A destroyed context gets no more callbacks, not even for transitions it made
        // before being destroyed.
        self.transitions.borrow_mut().clear();
        self.has_transitions.set(false);
        let pe = self.pe.borrow_mut().take();
        if let Some(pe) = pe.and_then(|pe| pe.upgrade()) {
            pe.remove(&self.ctx());
        }
        self.active.set(false);
        Ok(())
    }

    fn drained<L: CtxOps + ?Sized>(&self, ops: &L) -> bool {
        self.allocated.get() == 0 && self.inflight.get() == 0 && !ops.is_busy(self)
    }

    pub(crate) fn add_allocated(&self, delta: isize) {
        self.allocated.set(self.allocated.get().wrapping_add_signed(delta));
    }

    pub(crate) fn add_inflight(&self, delta: isize) {
        self.inflight.set(self.inflight.get().wrapping_add_signed(delta));
        self.status.get().add_inflight(delta);
    }

    /// A pool of this context delivers through it (registered once, at its first `set_conf`).
    pub(crate) fn register_pool(&self, pool: Rc<dyn Deliver>) {
        let mut pool = Some(pool);
        for slot in &self.pools {
            if slot.get().is_none() {
                let _ = slot.set(pool.take().expect("set once"));
                return;
            }
        }
        self.more_pools.borrow_mut().extend(pool);
    }

    /// Calls `f` on each pool, in the order they were registered, holding no borrow
    /// across the call.
    #[inline]
    fn each_pool(&self, mut f: impl FnMut(&dyn Deliver)) {
        for slot in &self.pools {
            match slot.get() {
                Some(pool) => f(&**pool),
                None => return,
            }
        }
        let mut i = 0;
        loop {
            let Some(pool) = self.more_pools.borrow().get(i).cloned() else { break };
            f(&*pool);
            i += 1;
        }
    }

    /// A task was finished: deliver it on the next progress (and wake a sleeper).
    #[inline]
    pub(crate) fn add_finished(&self) {
        self.finished.set(self.finished.get() + 1);
        self.activate();
        if self.armed.get() {
            self.wake_engine();
        }
    }

    /// `n` finished tasks of a batch whose delivery a panicking callback cut short wait again.
    #[cold]
    pub(crate) fn requeue_finished(&self, n: usize) {
        self.finished.set(self.finished.get() + n);
        self.activate();
        if self.armed.get() {
            self.wake_engine();
        }
    }

    /// Puts the context on its engine's list of contexts to visit, for a library that
    /// answered false to [`CtxOps::needs_poll`] and now has something to poll (core does it
    /// itself on submit, finish and state changes).
    #[inline]
    pub fn activate(&self) {
        if !self.active.get() {
            self.activate_slow();
        }
    }

    #[cold]
    fn activate_slow(&self) {
        if let Some(pe) = self.engine() {
            self.active.set(true);
            pe.join(self.ctx());
        }
    }

    /// A pass found nothing to do: whether to stay on the list anyway (for
    /// [`LINGER_PASSES`] passes).
    #[inline]
    pub(crate) fn linger(&self) -> bool {
        let n = self.quiet_passes.get();
        self.quiet_passes.set(n.saturating_add(1));
        n < LINGER_PASSES
    }

    /// Whether the context is on its engine's list of contexts to visit.
    #[inline]
    pub(crate) fn is_active(&self) -> bool {
        self.active.get()
    }

    pub(crate) fn deactivate(&self) {
        self.active.set(false);
        self.quiet_passes.set(0);
    }

    #[cold]
    fn wake_engine(&self) {
        if let Some(pe) = self.engine() {
            pe.work_pending();
        }
    }

    /// Whether `owner` (a pool's link to its context) is this core's context.
    #[inline]
    pub(crate) fn is_core_of<T: ?Sized>(&self, owner: &Weak<T>) -> bool {
        std::ptr::addr_eq(self.this.as_ptr(), owner.as_ptr())
    }

    /// Whether a pool of this context holds back a completion (a fault plan's `delay`).
    #[inline]
    pub(crate) fn holds(&self) -> bool {
        self.held.get() > 0
    }

    /// `n` finished tasks are being delivered.
    pub(crate) fn tasks_delivered(&self, n: usize) {
        self.finished.set(self.finished.get().saturating_sub(n));
    }

    /// Delivers what every pool finished so far (no borrow held across the callbacks);
    /// returns how many callbacks ran.
    fn deliver_finished(&self) -> usize {
        let mut delivered = 0;
        self.each_pool(|pool| delivered += pool.deliver());
        if self.held.get() > 0 {
            self.recompute_due();
        } else {
            self.next_due.set(None);
        }
        delivered
    }

    /// A completion is held back until `due` (a fault plan's `delay`): the context stays on
    /// its engine's list, and a sleeping engine is woken then.
    pub(crate) fn hold(&self, due: Instant) {
        self.held.set(self.held.get() + 1);
        self.next_due.set(Some(self.next_due.get().map_or(due, |d| d.min(due))));
    }

    /// A held completion went back to the queue of finished tasks.
    pub(crate) fn unhold(&self) {
        self.held.set(self.held.get().saturating_sub(1));
    }

    /// Whether a held completion is due at `now`. (A stop waits for them, as for any task in
    /// flight: "no earlier than MS after the submit" holds for a stopping context too.)
    fn held_due(&self, now: Instant) -> bool {
        self.next_due.get().is_some_and(|d| now >= d)
    }

    /// Before the application sleeps with completions held: true when one is due already,
    /// else asks the engine to wake up when the first is.
    #[cold]
    fn wake_when_due(&self) -> bool {
        if self.held_due(self.now()) {
            return true;
        }
        if let (Some(due), Some(pe)) = (self.next_due.get(), self.engine()) {
            pe.wake_at(due);
        }
        false
    }

    #[cold]
    fn recompute_due(&self) {
        let mut due: Option<Instant> = None;
        self.each_pool(|p| due = due.into_iter().chain(p.next_due()).min());
        self.next_due.set(due);
    }

    fn transition(&self, next: CtxState) {
        let prev = self.state.replace(next);
        if let Some(slot) = self.state_slot.get() {
            slot.write(next);
        }
        tracing::debug!(target: "doca_sdk", "{}: {:?} -> {:?}", self.kind, prev, next);
        self.transitions.borrow_mut().push((prev, next));
        self.has_transitions.set(true);
        self.activate();
        if let Some(pe) = self.engine() {
            pe.work_pending();
        }
    }

    /// Runs the callbacks of the transitions queued so far; those the callbacks cause wait
    /// for the next round, so a callback that restarts its context cannot loop here forever.
    #[inline]
    fn deliver_transitions(&self) -> bool {
        if !self.has_transitions.get() {
            return false;
        }
        // Only a callback makes a transition something the application sees: without one,
        // `doca_pe_progress` does not report it (the samples that loop `while
        // (doca_pe_progress(pe) == 0)` after a synchronous start wait for their task, not
        // for a state change they never asked about).
        let seen = self.state_cb.is_set();
        self.deliver_queued_transitions();
        seen
    }

    #[cold]
    fn deliver_queued_transitions(&self) {
        let queued = self.transitions.borrow().len();
        let ctx = self.ctx();
        for _ in 0..queued {
            let (prev, next) = {
                let mut t = self.transitions.borrow_mut();
                let first = t.remove(0);
                self.has_transitions.set(!t.is_empty());
                first
            };
            let data = self.user_data();
            self.state_cb.call(|cb| cb(data, &ctx, prev, next));
        }
    }
}
