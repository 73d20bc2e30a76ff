//! `doca_pe`: the progress engine. It owns the contexts connected to it and runs every
//! callback of theirs, always from [`Pe::progress`].
//!
//! A `Pe` and its contexts live on one thread (they are not `Send`); other threads get their
//! own `Pe`. Waiting without spinning: [`Pe::request_notification`], then sleep on the
//! notification handle ([`Pe::notification_handle`], an epoll fd) with `epoll_wait`/`poll`,
//! then [`Pe::clear_notification`] and progress until it returns false — or [`Pe::wait`],
//! which does the three steps.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::clock::{Clock, Now, SystemClock};
use crate::ctx::{Ctx, Engine, Raised};
use crate::error::{Refused, Result};
use doca_link::notify::{EpollSet, EventFd, Timer, Watched};
use smallvec::SmallVec;

pub(crate) struct PeInner {
    /// Connected contexts, copied on write: progress walks a snapshot without cloning or
    /// borrowing per context, and callbacks may connect or destroy contexts meanwhile.
    ctxs: RefCell<Rc<[Ctx]>>,
    /// The contexts progress visits: those with something for core to deliver, or that
    /// their library polls ([`crate::CtxOps::needs_poll`]). A context with nothing to do
    /// costs an empty progress nothing. A pass walks it under one shared borrow (no count
    /// taken on each context it visits): meanwhile the list does not change, and what its
    /// callbacks change waits in `joining` and `leaving` until the walk ends.
    active: RefCell<Vec<Ctx>>,
    /// Contexts activated while a pass walks `active` (they go to its end after the walk,
    /// and wait for the next pass).
    joining: RefCell<Vec<Ctx>>,
    /// Entries of `active` to take out after the walk: contexts that left it, or that a
    /// callback destroyed (which the walk skips: their core is no longer active).
    leaving: RefCell<Vec<usize>>,
    /// Whether `joining` or `leaving` holds anything (one look per pass).
    changed: Cell<bool>,
    pub(crate) in_progress: Cell<bool>,
    armed: Cell<bool>,
    pub(crate) epoll: EpollSet,
    bell: Watched<EventFd>,
    /// Whether `bell` was rung since it was last drained: clearing a notification reads the
    /// eventfd only then (one syscall less per wake-up; the bell is this thread's alone).
    bell_rung: Cell<bool>,
    /// Whether `timer` is armed and not yet seen expired: read only then.
    timer_armed: Cell<bool>,
    /// Wakes a sleeper when a held completion (a fault plan's `delay`) is due: made at the
    /// first one, in the epoll set from then on.
    timer: RefCell<Option<Watched<Timer>>>,
    /// While arming: the earliest instant a context asked to be woken at.
    wake_at: Cell<Option<Instant>>,
    clock: Rc<dyn Clock>,
    /// This engine's row in the process's status page.
    pub(crate) status: crate::status::EngineSlot,
}

impl PeInner {
    /// Calls `f` on each context connected when the walk began, holding no borrow across
    /// the call.
    #[inline]
    fn each_ctx(&self, mut f: impl FnMut(&Ctx)) {
        let snapshot = self.ctxs.borrow().clone();
        for ctx in snapshot.iter() {
            f(ctx);
        }
    }

    /// After a walk: the list takes in what changed during it. Returns the entries taken
    /// out, to be dropped once no borrow is held.
    #[cold]
    fn settle(&self) -> SmallVec<[Ctx; 2]> {
        self.changed.set(false);
        let mut removed = SmallVec::new();
        let mut leaving = self.leaving.borrow_mut();
        let mut active = self.active.borrow_mut();
        leaving.sort_unstable();
        leaving.dedup();
        for &at in leaving.iter().rev() {
            if at < active.len() {
                removed.push(active.remove(at));
            }
        }
        leaving.clear();
        active.append(&mut self.joining.borrow_mut());
        removed
    }

    /// Makes the notification handle readable.
    fn ring_bell(&self) {
        self.bell_rung.set(true);
        self.bell.ring();
    }

    /// Arms the timer for `at`; false when there is no timer to arm (the sleeper must not
    /// sleep then).
    #[cold]
    fn arm_timer(&self, at: Instant) -> bool {
        let mut timer = self.timer.borrow_mut();
        if timer.is_none() {
            match Timer::new().and_then(|t| self.epoll.watch(t, 0)) {
                Ok(t) => *timer = Some(t),
                Err(e) => {
                    tracing::warn!(target: "doca_sdk", "{}: no timer for a held completion: the engine does not sleep", e.name());
                    return false;
                }
            }
        }
        if let Some(t) = timer.as_ref() {
            t.arm_at(at, self.now());
            self.timer_armed.set(true);
        }
        true
    }
}

impl Engine for PeInner {
    fn remove(&self, ctx: &Ctx) {
        let mut ctxs = self.ctxs.borrow_mut();
        *ctxs = ctxs.iter().filter(|c| *c != ctx).cloned().collect();
        drop(ctxs);
        // A destroyed context is not kept alive by the visiting list (its library's drop
        // may have something to tell the peer).
        self.status.set_ctxs(self.ctxs.borrow().len());
        let joined = self.joining.borrow().iter().position(|c| c == ctx);
        if let Some(at) = joined {
            let removed = self.joining.borrow_mut().remove(at);
            drop(removed);
        }
        let at = self.active.borrow().iter().position(|c| c == ctx);
        let Some(at) = at else { return };
        let removed = match self.active.try_borrow_mut() {
            Ok(mut active) => active.remove(at),
            Err(_) => {
                // A pass walks the list: taken out when its walk ends (the walk skips it).
                self.leaving.borrow_mut().push(at);
                self.changed.set(true);
                return;
            }
        };
        // Dropped with no borrow held (the last handle of a context may run its library's
        // drop, which may reach the engine and remove another).
        drop(removed);
    }

    /// Puts `ctx` on the visiting list (at its end, after a running walk).
    fn join(&self, ctx: Ctx) {
        match self.active.try_borrow_mut() {
            Ok(mut active) => active.push(ctx),
            Err(_) => {
                self.joining.borrow_mut().push(ctx);
                self.changed.set(true);
            }
        }
    }

    /// Something core itself will deliver (a state change, a finished task) is pending:
    /// wake a sleeper.
    fn work_pending(&self) {
        if self.armed.get() {
            self.ring_bell();
        }
    }

    /// The engine's clock, read now.
    fn now(&self) -> Instant {
        self.clock.now()
    }

    /// While arming: wake the application at `at` at the latest (a held completion is due).
    fn wake_at(&self, at: Instant) {
        self.wake_at.set(Some(self.wake_at.get().map_or(at, |w| w.min(at))));
    }

    fn in_progress(&self) -> bool {
        self.in_progress.get()
    }

    fn epoll(&self) -> &EpollSet {
        &self.epoll
    }
}

/// `struct doca_pe`.
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// use doca_core::loopback::{EchoTask, Loopback};
/// use doca_core::{Pe, Started};
/// use std::time::Duration;
///
/// let pe = Pe::create()?;
/// let lb = Loopback::create(Started::Running); // any library context plugs in the same way
/// pe.connect_ctx(&lb.as_ctx())?;
/// lb.set_conf(|task: EchoTask, _, _| println!("task {} done", task.value()), |_, _, _| {}, 4)?;
/// lb.as_ctx().start()?;
/// lb.alloc_task(7)?.submit().map_err(|refused| refused.error)?;
/// // Busy: progress until nothing happens. Asleep: wait on the notification handle.
/// while pe.progress() {}
/// assert_eq!(pe.num_inflight_tasks(), 0);
/// pe.wait(Some(Duration::from_millis(1)))?;
/// # Ok::<(), doca_core::Error>(())
/// ```
pub struct Pe {
    inner: Rc<PeInner>,
}

impl fmt::Debug for Pe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pe(fd {}, {} contexts)", self.inner.epoll.as_raw_fd(), self.inner.ctxs.borrow().len())
    }
}

/// A pass's walk: when it ends (returned or unwound by a panicking callback), the contexts
/// that left and joined during it are settled, then the engine is no longer in progress
/// (the contexts removed are dropped after that: dropping one may call back).
struct Walking<'a>(&'a PeInner);

impl Drop for Walking<'_> {
    #[inline]
    fn drop(&mut self) {
        let inner = self.0;
        if inner.changed.get() {
            let removed = inner.settle();
            inner.in_progress.set(false);
            drop(removed);
        } else {
            inner.in_progress.set(false);
        }
    }
}

impl Pe {
    /// `doca_pe_create`.
    pub fn create() -> Result<Pe> {
        Pe::create_with_clock(Rc::new(SystemClock))
    }

    /// An engine whose contexts take their time from `clock` (a
    /// [`crate::clock::ManualClock`] makes deadlines and rate limits testable without
    /// sleeping).
    pub fn create_with_clock(clock: Rc<dyn Clock>) -> Result<Pe> {
        crate::fault::check_env()?;
        // Every process is visible to doca_emu from its first engine on (once per process).
        crate::status::publish();
        let epoll = EpollSet::new()?;
        let bell = epoll.watch(EventFd::new()?, 0)?;
        Ok(Pe {
            inner: Rc::new(PeInner {
                ctxs: RefCell::new(Rc::from(Vec::new())),
                active: RefCell::new(Vec::new()),
                joining: RefCell::new(Vec::new()),
                leaving: RefCell::new(Vec::new()),
                changed: Cell::new(false),
                in_progress: Cell::new(false),
                armed: Cell::new(false),
                epoll,
                bell,
                bell_rung: Cell::new(false),
                timer_armed: Cell::new(false),
                timer: RefCell::new(None),
                wake_at: Cell::new(None),
                clock,
                status: crate::status::EngineSlot::claim(),
            }),
        })
    }

    /// `doca_pe_destroy`: `IN_USE` (and the engine back) while contexts are connected;
    /// destroy them first.
    pub fn destroy(self) -> Result<(), Refused<Pe>> {
        let n = self.inner.ctxs.borrow().len();
        if n > 0 {
            let e = crate::fail!(crate::Error::InUse, "progress engine still has {n} connected context(s)");
            return Err(Refused::new(e, self));
        }
        Ok(())
    }

    /// `doca_pe_connect_ctx`: the context must not be connected yet (`NOT_PERMITTED`; a
    /// context that is not Idle was started, so it is connected) and must be Idle
    /// (`BAD_STATE`). The link lasts until the context is destroyed.
    pub fn connect_ctx(&self, ctx: &Ctx) -> Result<()> {
        let engine = Rc::downgrade(&self.inner);
        ctx.attach(engine, self.inner.status.row())?;
        let mut ctxs = self.inner.ctxs.borrow_mut();
        *ctxs = ctxs.iter().chain(std::iter::once(ctx)).cloned().collect();
        // (A context connected by a callback during a walk finds its room when it joins.)
        if let Ok(mut active) = self.inner.active.try_borrow_mut() {
            active.reserve(ctxs.len());
            self.inner.joining.borrow_mut().reserve(ctxs.len());
            self.inner.leaving.borrow_mut().reserve(ctxs.len());
        }
        self.inner.status.set_ctxs(ctxs.len());
        Ok(())
    }

    /// `doca_pe_progress`: one pass over the connected contexts that have something to do —
    /// pending state-changed callbacks, completions, events. True when anything was
    /// delivered: a callback ran (a state change of a context without a state-changed
    /// callback is not progress). Calling it from inside one of its own callbacks is refused (logged,
    /// returns false). A context that becomes active during the pass (a callback submitted
    /// to it) is visited on the next pass.
    #[inline]
    pub fn progress(&self) -> bool {
        let inner = &*self.inner;
        if inner.in_progress.get() {
            return Self::reentered();
        }
        if inner.status.progressed() {
            Self::take_plan(inner);
        }
        // An engine with nothing to visit (the usual spin of a waiting application) pays the
        // count and this look only, inline in the caller's loop, without the walk's frame
        // (and without marking itself in progress: it calls nobody back).
        if inner.active.borrow().is_empty() {
            return false;
        }
        inner.in_progress.set(true);
        self.walk()
    }

    /// A plan `doca_emu inject` left: its handler runs inside the call, as a callback would
    /// (a `progress` from it is refused), and the engine is usable after it even when it
    /// panicked.
    #[cold]
    #[inline(never)]
    fn take_plan(inner: &PeInner) {
        let _taking = Raised::new(&inner.in_progress);
        inner.status.take_plan();
    }

    /// A `progress` called from inside one of its engine's callbacks: refused.
    #[cold]
    #[inline(never)]
    fn reentered() -> bool {
        tracing::error!(target: "doca_sdk", "progress called from inside a callback of the same engine: ignored");
        false
    }

    /// The walk of a pass over the contexts on the list (not empty), out of line: the empty
    /// pass above does not pay for this one's frame.
    #[inline(never)]
    fn walk(&self) -> bool {
        let inner = &*self.inner;
        // Ends the pass (the list settled, the engine no longer in progress) when the walk
        // returns, and when a callback panics through it: the engine stays usable for a
        // caller that catches the panic.
        let _walking = Walking(inner);
        // Visit the list in place under one shared borrow, which also keeps each context
        // alive while its callbacks run: contexts activated during the pass join it after
        // the walk and wait for the next pass; contexts destroyed by a callback are skipped
        // and leave after the walk.
        let list = inner.active.borrow();
        let now = Now::new(&*inner.clock);
        let mut any = false;
        for (i, ctx) in list.iter().enumerate() {
            if !ctx.core().is_active() {
                continue;
            }
            // A running context that just went quiet stays a few passes (a task cycle per
            // pass then never pays for leaving and rejoining the list); an Idle one (stopped,
            // or destroyed meanwhile) leaves at once, so nothing keeps it alive.
            let (progressed, stay) = ctx.visit(&now);
            any |= progressed;
            if !stay {
                ctx.core().deactivate();
                inner.leaving.borrow_mut().push(i);
                inner.changed.set(true);
            }
        }
        drop(list);
        any
    }

    /// `doca_pe_get_num_inflight_tasks`: submitted, not yet completed tasks of all contexts.
    pub fn num_inflight_tasks(&self) -> usize {
        self.inner.ctxs.borrow().iter().map(Ctx::num_inflight_tasks).sum()
    }

    /// Whether a `progress` pass of this engine is running (its callbacks are being called).
    pub fn is_in_progress(&self) -> bool {
        self.inner.in_progress.get()
    }

    /// This engine's number in the process's status page (what `doca_emu` shows).
    pub fn status_id(&self) -> u64 {
        self.inner.status.id()
    }

    /// Number of connected contexts.
    pub fn num_ctxs(&self) -> usize {
        self.inner.ctxs.borrow().len()
    }

    /// `doca_pe_get_notification_handle`: an epoll fd, readable when progress has work. It
    /// stays the same for the life of the engine.
    pub fn notification_handle(&self) -> BorrowedFd<'_> {
        self.inner.epoll.as_fd()
    }

    /// `doca_pe_request_notification`: arm before sleeping on the handle. When work is
    /// already waiting the handle is made readable at once, so the sleep returns at once.
    pub fn request_notification(&self) -> Result<()> {
        let inner = &*self.inner;
        inner.armed.set(true);
        inner.status.set_armed(true);
        let mut ready = false;
        inner.wake_at.set(None);
        inner.each_ctx(|ctx| ready |= ctx.request_notification());
        if let Some(at) = inner.wake_at.take() {
            ready |= !inner.arm_timer(at);
        }
        if ready {
            inner.ring_bell();
        }
        Ok(())
    }

    /// `doca_pe_clear_notification`: after waking, before progress.
    pub fn clear_notification(&self) -> Result<()> {
        let inner = &*self.inner;
        inner.armed.set(false);
        inner.status.set_armed(false);
        // Only what may be readable is read: a wake-up by a context's own fd (a peer's
        // doorbell) costs no read of the engine's bell or timer.
        if inner.bell_rung.replace(false) {
            inner.bell.drain();
        }
        if inner.timer_armed.get() {
            if let Some(timer) = inner.timer.borrow().as_ref() {
                // Still armed until seen expired (read before its deadline: not yet).
                inner.timer_armed.set(!timer.drain());
            }
        }
        inner.each_ctx(Ctx::clear_notification);
        Ok(())
    }

    /// Request, sleep on the handle (at most `timeout`; `None` = no limit), clear. Returns
    /// whether something woke it. Follow with progress until it returns false.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool> {
        Pe::wait_any(&[self], timeout)
    }

    /// [`Pe::wait`] for a program with several engines: arms each of `pes`, sleeps until
    /// one's notification handle is readable or `timeout` passes (`None`: no limit), clears
    /// each; true when woken by one. What a C program does with several
    /// `doca_pe_get_notification_handle`s in one `epoll` or `poll`.
    pub fn wait_any(pes: &[&Pe], timeout: Option<Duration>) -> Result<bool> {
        for (i, pe) in pes.iter().enumerate() {
            if let Err(e) = pe.request_notification() {
                // The ones armed before it are cleared again: nothing sleeps.
                for armed in &pes[..i] {
                    let _ = armed.clear_notification();
                }
                return Err(e);
            }
        }
        let fds: SmallVec<[BorrowedFd<'_>; 8]> = pes.iter().map(|pe| pe.notification_handle()).collect();
        let woke = doca_link::notify::wait_any(&fds, timeout);
        for pe in pes {
            pe.clear_notification()?;
        }
        Ok(woke?)
    }
}

impl AsFd for Pe {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.notification_handle()
    }
}

impl AsRawFd for Pe {
    fn as_raw_fd(&self) -> RawFd {
        self.inner.epoll.as_raw_fd()
    }
}
