//! The queue of an engine-like library context (DMA, SHA, mmap advise): submitted tasks wait
//! in order and are worked through inside `progress`, front first, under a per-pass byte
//! budget — never in submit — with DOCA's engine rule for failures.
//!
//! **A failed task is fatal to its context** (DOCA's pe_task_error sample: "DMA will move to
//! stopping state once the task completes as error. From that moment all tasks will be
//! completed with error"; the rule is the progress engine's, for every library on it): the
//! context moves to Stopping, every task still queued completes with [`FLUSH_STATUS`], and
//! the context reaches Idle once the application freed them all. A stop flushes the same way,
//! in the next progress (callbacks never run inside stop).
//!
//! The library keeps a [`TaskQueue`] of its own job type (a [`crate::TaskId`], or an enum of
//! ids for several task types), pushes in its [`crate::TaskLib::submit`], and lets
//! [`TaskQueue::progress`] drive its [`crate::CtxOps::progress`]: the library's `step` looks
//! at the front job and says how far it got ([`Step`]), handing the task back itself
//! ([`crate::TaskPool::finish`]) when it finished or failed; `flush` hands a job back with
//! [`FLUSH_STATUS`].

use std::cell::RefCell;
use std::collections::VecDeque;

use crate::ctx::{CtxCore, CtxState};
use crate::Error;

/// Status of the tasks a stop or a failure flushes: `DOCA_ERROR_SHUTDOWN`.
pub const FLUSH_STATUS: Error = Error::Shutdown;

/// How far one look at the front job got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// It used these bytes of the budget and goes on next pass (the budget is spent).
    Partial(usize),
    /// It completed (handed back), using these bytes.
    Done(usize),
    /// It failed with this status (handed back): fatal to the context.
    Failed(Error),
}

/// Submitted jobs in order; the front one is being worked on. Sized at each start, so that
/// pushing never allocates.
pub struct TaskQueue<J: Copy> {
    jobs: RefCell<VecDeque<J>>,
}

impl<J: Copy> Default for TaskQueue<J> {
    fn default() -> Self {
        TaskQueue { jobs: RefCell::new(VecDeque::new()) }
    }
}

impl<J: Copy> TaskQueue<J> {
    /// An empty queue (sized by [`TaskQueue::reset`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// At each start: empty, with room for `capacity` jobs (every task of the pools).
    pub fn reset(&self, capacity: usize) {
        let mut q = self.jobs.borrow_mut();
        q.clear();
        q.reserve(capacity);
    }

    /// A submitted job joins the back.
    pub fn push(&self, job: J) {
        self.jobs.borrow_mut().push_back(job);
    }

    /// Whether no job waits (what `needs_poll` and `request_notification` answer, negated).
    pub fn is_empty(&self) -> bool {
        self.jobs.borrow().is_empty()
    }

    /// Jobs waiting.
    pub fn len(&self) -> usize {
        self.jobs.borrow().len()
    }

    /// One pass of the library's progress; returns whether there was work. Running: the jobs
    /// queued when the pass begins (not those their callbacks submit) go to `step`, front
    /// first, while `budget` bytes last; the first that fails makes the context fail
    /// ([`CtxCore::fail`] with `why`, e.g. "a memcpy task failed") and flushes the rest. Stopping: every
    /// queued job goes to `flush`. No borrow of the queue is held across `step`, `flush` or
    /// the failure (whose state callback may run application code).
    pub fn progress(
        &self,
        core: &CtxCore,
        budget: usize,
        why: &str,
        mut step: impl FnMut(J, usize) -> Step,
        mut flush: impl FnMut(J),
    ) -> bool {
        if self.is_empty() {
            return false;
        }
        if core.state() != CtxState::Running {
            self.flush(&mut flush);
            return true;
        }
        let mut budget = budget;
        let n = self.len();
        for _ in 0..n {
            let Some(job) = self.jobs.borrow().front().copied() else { break };
            let used = match step(job, budget) {
                Step::Partial(_) => break, // the budget is spent: the front job goes on next pass
                Step::Done(used) => used,
                Step::Failed(e) => {
                    self.jobs.borrow_mut().pop_front();
                    core.fail(e, why);
                    self.flush(&mut flush);
                    break;
                }
            };
            self.jobs.borrow_mut().pop_front();
            budget -= used.min(budget);
            if budget == 0 {
                break;
            }
        }
        true
    }

    /// Every queued job to `flush`, one at a time.
    fn flush(&self, flush: &mut impl FnMut(J)) {
        let n = self.len();
        for _ in 0..n {
            let Some(job) = self.jobs.borrow_mut().pop_front() else { break };
            flush(job);
        }
    }
}
