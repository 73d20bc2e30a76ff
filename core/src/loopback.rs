//! A small library context built only on core's public plug-in interface: its tasks carry
//! a value and complete on the next progress, or after a delay (a timer fd wakes a sleeping
//! engine), or with an error of your choice.
//!
//! It proves the plug-in interface ([`crate::CtxOps`], [`crate::TaskLib`]) without special
//! cases, and it is handy for learning the execution model and for measuring the engine
//! itself (the bench's local task cycle uses it). Stopping completes every pending task with
//! [`FLUSH_STATUS`] through the error callback.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use crate::bail;
use crate::clock::Now;
use crate::ctx::Ctx;
use crate::ctx::{CtxCell, CtxCore, CtxOps, Started};
use crate::data::Data;
use crate::error::{Error, Refused, Result};
use crate::task::{Task, TaskId, TaskLib, TaskPayload, TaskPool};
use doca_link::notify::{Timer, Watched};

/// Status of the tasks a stop flushes: `DOCA_ERROR_SHUTDOWN`.
pub const FLUSH_STATUS: Error = Error::Shutdown;

/// Largest pool a loopback context accepts.
pub const MAX_TASKS: u32 = 1 << 16;

/// The payload of a loopback task.
#[derive(Debug, Default)]
pub struct Echo {
    value: u64,
    delay: Duration,
    fail: Option<Error>,
}

/// A loopback task (`Task<Echo>`).
pub type EchoTask = Task<Echo>;

// A task handle is two words, passed to a callback in registers (see `TaskId`).
const _: () = assert!(std::mem::size_of::<EchoTask>() == 16);

/// The longest delay a loopback task accepts (one hour).
pub const MAX_DELAY: Duration = Duration::from_secs(3600);

impl Task<Echo> {
    /// The value given at allocation.
    pub fn value(&self) -> u64 {
        self.with_payload(|p| p.value)
    }

    /// Complete no earlier than `delay` after submission; submitting with a delay above
    /// [`MAX_DELAY`] is `INVALID_VALUE`.
    pub fn set_delay(&self, delay: Duration) {
        self.with_payload(|p| p.delay = delay);
    }

    /// Complete with `error` (through the error callback) instead of success.
    pub fn set_fail(&self, error: Option<Error>) {
        self.with_payload(|p| p.fail = error);
    }
}

#[doc(hidden)] // named by the task payload (`TaskPayload::Lib`); reached through the handle types
pub struct LoopbackOps {
    start_mode: Started,
    pool: TaskPool<Echo>,
    /// Tasks to complete at the next poll, in order, each with the error it is to fail with
    /// (read from its payload once, at submit: a submitted task cannot be changed).
    ready: RefCell<Vec<(TaskId, Option<Error>)>>,
    delayed: RefCell<Vec<(Instant, TaskId, Option<Error>)>>,
    timer: RefCell<Option<Watched<Timer>>>,
    armed: Cell<bool>,
    /// Submitted tasks not yet completed (ready or delayed): the idle poll reads only this.
    pending: Cell<usize>,
}

/// A loopback context.
pub struct Loopback {
    ctx: Rc<CtxCell<LoopbackOps>>,
}

impl Loopback {
    /// Creates a context that starts synchronously ([`Started::Running`]) or asynchronously
    /// ([`Started::Starting`], Running on the first progress).
    pub fn create(start_mode: Started) -> Loopback {
        let ctx = CtxCell::new(|weak: &Weak<CtxCell<LoopbackOps>>| LoopbackOps {
            start_mode,
            pool: TaskPool::new(weak.clone()),
            ready: RefCell::new(Vec::new()),
            delayed: RefCell::new(Vec::new()),
            timer: RefCell::new(None),
            armed: Cell::new(false),
            pending: Cell::new(0),
        });
        Loopback { ctx }
    }

    /// The generic context.
    pub fn as_ctx(&self) -> Ctx {
        Ctx::from(self.ctx.clone())
    }

    /// Task configuration: callbacks and pool size (1..=[`MAX_TASKS`]). Idle only.
    pub fn set_conf(
        &self,
        completion: impl FnMut(EchoTask, Data, Data) + 'static,
        error: impl FnMut(EchoTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        if num_tasks > MAX_TASKS {
            bail!(Error::InvalidValue, "loopback: {num_tasks} tasks exceed the maximum {MAX_TASKS}");
        }
        self.ctx.ops().pool.set_conf(self.ctx.core(), Box::new(completion), Box::new(error), num_tasks)
    }

    /// Allocates a task carrying `value`. Running only; `NO_MEMORY` when the pool is empty.
    pub fn alloc_task(&self, value: u64) -> Result<EchoTask> {
        TaskPool::alloc_in(&self.ctx, Data::NONE, |p| {
            *p = Echo { value, delay: Duration::ZERO, fail: None };
            Ok(())
        })
    }

    /// Destroys the context: Idle only (`BAD_STATE`, and the context back).
    pub fn destroy(self) -> Result<(), Refused<Loopback>> {
        let core = self.ctx.core();
        if let Err(e) = core.require_idle("destroy") {
            return Err(Refused::new(e, self));
        }
        self.ctx.ops().timer.borrow_mut().take();
        match core.destroy() {
            Ok(()) => Ok(()),
            Err(e) => Err(Refused::new(e, self)),
        }
    }
}

impl LoopbackOps {
    fn fire_due(&self, ready: &mut Vec<(TaskId, Option<Error>)>, now: Instant) {
        let mut delayed = self.delayed.borrow_mut();
        delayed.retain(|&(due, id, fail)| {
            if due <= now {
                ready.push((id, fail));
                false
            } else {
                true
            }
        });
    }

    fn arm_timer(&self, now: Instant) {
        let next = self.delayed.borrow().iter().map(|&(due, _, _)| due).min();
        if let (Some(next), Some(timer)) = (next, self.timer.borrow().as_ref()) {
            timer.arm_at(next, now);
        }
    }
}

impl CtxOps for LoopbackOps {
    fn kind(&self) -> &'static str {
        "loopback"
    }

    fn start(&self, core: &CtxCore) -> Result<Started> {
        self.pool.prepare(Echo::default);
        let cap = self.pool.capacity() as usize;
        self.ready.borrow_mut().reserve(cap);
        self.delayed.borrow_mut().reserve(cap);
        if self.timer.borrow().is_none() {
            *self.timer.borrow_mut() = Some(core.watch(Timer::new()?)?);
        }
        Ok(self.start_mode)
    }

    fn stop(&self, _core: &CtxCore) {
        // Flushing happens in progress: callbacks never run inside stop.
    }

    /// Only while tasks are pending (or the start is to be completed): an idle loopback
    /// context costs its engine nothing.
    fn needs_poll(&self, core: &CtxCore) -> bool {
        self.pending.get() > 0 || core.state() == crate::CtxState::Starting
    }

    #[inline]
    fn progress(&self, core: &CtxCore, now: &Now<'_>) -> bool {
        use crate::CtxState;
        if self.pending.get() == 0 && core.state() == CtxState::Running {
            return false;
        }
        if core.state() == CtxState::Starting {
            core.set_running();
            return true;
        }
        let stopping = core.state() == CtxState::Stopping;
        // Core delivers what is finished here once this poll returns; tasks its callbacks
        // submit wait for the next progress, as on hardware.
        // `finish` runs no user code and never reaches this queue: one borrow for the batch.
        // The batch is read in place and the queue emptied after it (no drain to keep up).
        let mut ready = self.ready.borrow_mut();
        if stopping {
            let mut delayed = self.delayed.borrow_mut();
            ready.extend(delayed.drain(..).map(|(_, id, fail)| (id, fail)));
        } else if self.pending.get() > ready.len() {
            // Pending tasks not ready are delayed ones: some may be due.
            self.fire_due(&mut ready, now.get());
        }
        let n = ready.len();
        for &(id, fail) in ready.iter() {
            let status = match fail {
                _ if stopping => Err(FLUSH_STATUS),
                Some(e) if e.is_error() => Err(e),
                _ => Ok(()),
            };
            self.pool.finish_in(core, id, status);
        }
        ready.clear();
        self.pending.set(self.pending.get() - n);
        n > 0
    }

    fn request_notification(&self, core: &CtxCore) -> bool {
        self.armed.set(true);
        if !self.ready.borrow().is_empty() {
            return true;
        }
        self.arm_timer(core.now());
        false
    }

    fn clear_notification(&self, _core: &CtxCore) {
        self.armed.set(false);
        if let Some(timer) = self.timer.borrow().as_ref() {
            timer.drain();
        }
    }
}

impl TaskPayload for Echo {
    type Lib = LoopbackOps;
    const FAULT_KIND: &'static str = "loopback.echo";
}

impl TaskLib<Echo> for LoopbackOps {
    fn pool(&self) -> &TaskPool<Echo> {
        &self.pool
    }

    fn submit(&self, core: &CtxCore, task: TaskId) -> Result<()> {
        let (delay, fail) = self.pool.with_payload(task, |p| (p.delay, p.fail)).unwrap_or_default();
        if delay > MAX_DELAY {
            bail!(Error::InvalidValue, "loopback: delay {delay:?} above the maximum {MAX_DELAY:?}");
        }
        self.pending.set(self.pending.get() + 1);
        if delay.is_zero() {
            self.ready.borrow_mut().push((task, fail));
        } else {
            let now = core.now();
            self.delayed.borrow_mut().push((now + delay, task, fail));
            if self.armed.get() {
                self.arm_timer(now);
            }
        }
        Ok(())
    }

    fn check(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        match self.pool.with_payload(task, |p| p.fail) {
            Some(Some(Error::Success)) => {
                bail!(Error::InvalidValue, "loopback: a task cannot fail with DOCA_SUCCESS")
            }
            _ => Ok(()),
        }
    }
}
