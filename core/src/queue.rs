//! The kit of a FIFO engine library (DMA, SHA, mmap advise; next RDMA, compress, erasure
//! coding, AES-GCM): submitted tasks wait in order and are worked through inside `progress`,
//! front first, under a per-pass byte budget — never in submit — with DOCA's engine rule for
//! failures. Written once here; a library writes only its engine's work.
//!
//! **A failed task is fatal to its context** (DOCA's pe_task_error sample: "DMA will move to
//! stopping state once the task completes as error. From that moment all tasks will be
//! completed with error"; the rule is the progress engine's, for every library on it): the
//! context moves to Stopping, every task still queued completes with [`FLUSH_STATUS`], and
//! the context reaches Idle once the application freed them all. A stop flushes the same way,
//! in the next progress (callbacks never run inside stop). A fault plan's `fail(CODE)` on a
//! submission is a failed task like any other: queued, and fatal when the engine reaches it.
//!
//! | the library writes                         | the kit does                                  |
//! |--------------------------------------------|-----------------------------------------------|
//! | an [`Engine`]: limits and pools at start (and the budget of a pass), one [`Step`] on the front job, how to hand a job's task back | [`Fifo`]: the whole [`CtxOps`] (start, stop, `needs_poll`, progress, notification), the queue, finishing each task from its step, the failure rule, the flush |
//! | an [`EngineTask`] per task type: its pool, its queue entry, its checks | the whole [`TaskLib`]: submit, `try_submit`'s check (`INVALID_VALUE` naming the status), fault injection |
//! | [`Engine::device`] | the context's row on the status page ([`crate::status`], what `doca_emu` shows): kind, device, engine, state, tasks queued and worked through |
//! | its handle type over a [`LibCtx`], the `doca_*` calls | `as_ctx`, `destroy`, a `set_conf` per task type, `alloc_init` |
//!
//! A complete engine (its tasks add up the bytes of a vector, at most `budget` a pass):
//!
//! ```
//! # let _fabric = doca_link::doctest::PrivateFabric::new();
//! use std::cell::Cell;
//! use doca_core::queue::{Engine, EngineTask, Fifo, LibCtx, Sizes, Step};
//! use doca_core::{bail, Data, Error, Pe, Result, Task, TaskId, TaskPayload, TaskPool};
//!
//! #[derive(Default)]
//! struct Sum { data: Vec<u8>, done: usize, total: u64 }
//!
//! struct SumEngine { pool: TaskPool<Sum> }
//!
//! impl TaskPayload for Sum {
//!     type Lib = Fifo<SumEngine>;
//! }
//!
//! impl Engine for SumEngine {
//!     type Job = TaskId;
//!     const KIND: &'static str = "sum";
//!     const FAILED: &'static str = "a sum task failed";
//!     fn start(&self) -> Result<Sizes> {
//!         self.pool.prepare(Sum::default);
//!         Ok(Sizes { tasks: self.pool.capacity() as usize, bytes_per_pass: 4 })
//!     }
//!     fn step(&self, id: TaskId, budget: usize) -> Step {
//!         let step = self.pool.with_payload(id, |p| {
//!             if p.data.is_empty() {
//!                 return Step::Failed(Error::InvalidValue);
//!             }
//!             let n = budget.min(p.data.len() - p.done);
//!             p.total += p.data[p.done..p.done + n].iter().map(|&b| b as u64).sum::<u64>();
//!             p.done += n;
//!             if p.done < p.data.len() { Step::Partial(n) } else { Step::Done(n) }
//!         });
//!         step.unwrap_or(Step::Failed(Error::BadState))
//!     }
//!     fn finish(&self, id: TaskId, status: Result<()>) {
//!         self.pool.finish(id, status);
//!     }
//! }
//!
//! impl EngineTask<Sum> for SumEngine {
//!     fn pool(&self) -> &TaskPool<Sum> {
//!         &self.pool
//!     }
//!     fn job(id: TaskId) -> TaskId {
//!         id
//!     }
//!     fn validate(&self, id: TaskId) -> Result<()> {
//!         match self.pool.with_payload(id, |p| p.data.is_empty()) {
//!             Some(false) => Ok(()),
//!             _ => bail!(Error::InvalidValue, "sum: no data"),
//!         }
//!     }
//! }
//!
//! // The library's handle: `create`, then the kit's calls.
//! let sum = LibCtx::new(|weak| SumEngine { pool: TaskPool::new(weak.clone()) });
//! let total = std::rc::Rc::new(Cell::new(0));
//! let seen = total.clone();
//! let done = move |t: Task<Sum>, _, _| seen.set(t.with_payload(|p| p.total));
//! sum.set_conf(done, |_: Task<Sum>, _, _| {}, 4, 16)?; // 4 tasks (16 at most)
//! let pe = Pe::create()?;
//! pe.connect_ctx(&sum.as_ctx())?;
//! sum.as_ctx().start()?;
//! let task = sum.alloc(Data::NONE, |p: &mut Sum| *p = Sum { data: vec![1, 2, 3, 4, 5, 6], ..Sum::default() })?;
//! task.submit().map_err(|r| r.error)?;
//! pe.progress(); // 4 bytes: 1 + 2 + 3 + 4
//! assert_eq!(total.get(), 0);
//! pe.progress(); // the last 2: the task completes
//! assert_eq!(total.get(), 21);
//! sum.as_ctx().stop()?;
//! sum.destroy().map_err(|r| r.error)?;
//! # Ok::<(), Error>(())
//! ```

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use crate::clock::Now;
use crate::ctx::Ctx;
use crate::ctx::{CtxCell, CtxCore, CtxOps, CtxState, Started};
use crate::data::Data;
use crate::error::{Error, Refused, Result};
use crate::task::{Task, TaskId, TaskLib, TaskPayload, TaskPool};
use crate::{bail, fail};

/// Status of the tasks a stop or a failure flushes: `DOCA_ERROR_SHUTDOWN`.
pub const FLUSH_STATUS: Error = Error::Shutdown;

/// How far one look at the front job got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// It used these bytes of the budget and goes on next pass (the budget is spent).
    Partial(usize),
    /// It completed, using these bytes: the kit hands it back with success.
    Done(usize),
    /// It failed with this status: the kit hands it back with it, and the context fails.
    Failed(Error),
}

/// What an engine's start sets for the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizes {
    /// How many tasks the pools hold: the queue's room, so that submitting never allocates.
    pub tasks: usize,
    /// The bytes one progress pass may work through (`usize::MAX`: no budget).
    pub bytes_per_pass: usize,
}

/// What an engine library writes: its work on one job at a time. Every method runs on the
/// thread of the context's progress engine, with no borrow of the queue held, and must not
/// run user code.
pub trait Engine: Sized + 'static {
    /// A queue entry: a [`TaskId`] for one task type, or an enum of ids for several.
    type Job: Copy;
    /// The context's short name, for logs and [`CtxOps::kind`] (e.g. `"dma"`).
    const KIND: &'static str;
    /// What the log says when a task fails, fatal to the context (e.g. "a memcpy task failed").
    const FAILED: &'static str;

    /// At each start (the context is Idle): read the limits, build the pools
    /// ([`TaskPool::prepare`]), say the sizes of the run. An error leaves the context Idle.
    fn start(&self) -> Result<Sizes>;

    /// Works on the front job with at most `budget` bytes and says how far it got. The kit
    /// hands the task back on [`Step::Done`] and [`Step::Failed`] ([`Engine::finish`]): the
    /// engine never does.
    fn step(&self, job: Self::Job, budget: usize) -> Step;

    /// Hands the task of `job` back with `status`: [`TaskPool::finish`] on its pool.
    fn finish(&self, job: Self::Job, status: Result<()>);

    /// [`Engine::finish`] from the kit's pass, with the context's core at hand: an engine
    /// overrides it to hand back through [`TaskPool::finish_in`] (no count taken on the
    /// context per task). Default: [`Engine::finish`].
    #[inline]
    fn finish_in(&self, _core: &CtxCore, job: Self::Job, status: Result<()>) {
        self.finish(job, status);
    }

    /// The device the context is on, shown in its row of the status page (`doca_emu`).
    /// Default: none (an engine that is on no device).
    fn device(&self) -> Option<crate::PciAddr> {
        None
    }
}

/// What an engine library writes for each of its task types.
pub trait EngineTask<P: TaskPayload<Lib = Fifo<Self>>>: Engine {
    /// The pool of this task type.
    fn pool(&self) -> &TaskPool<P>;

    /// The queue entry of a task of this type.
    fn job(id: TaskId) -> Self::Job;

    /// Every check the engine makes of the task, with the status its error callback would
    /// give (for `doca_task_try_submit`).
    fn validate(&self, id: TaskId) -> Result<()>;

    /// The task joins the queue (submitted or failed by a fault plan): put its cursor at
    /// rest. Default: nothing.
    fn queued(&self, _id: TaskId) {}
}

/// A queue entry: the job, and the status a fault plan fails it with.
#[derive(Clone, Copy)]
struct Entry<J> {
    job: J,
    injected: Option<Error>,
}

/// The queue of submitted jobs: a vector read from a cursor (`entries[head..]` wait, front
/// first). A pop moves the cursor, and the vector is emptied when the cursor reaches its end;
/// a push that finds the vector full moves the waiting entries to its front first. Sized at
/// each start for every task of the run, so neither ever allocates.
struct Jobs<J> {
    entries: Vec<Entry<J>>,
    head: usize,
}

impl<J: Copy> Jobs<J> {
    #[inline]
    fn len(&self) -> usize {
        self.entries.len() - self.head
    }

    #[inline]
    fn push_back(&mut self, entry: Entry<J>) {
        if self.entries.len() == self.entries.capacity() && self.head > 0 {
            self.compact();
        }
        self.entries.push(entry);
    }

    /// The popped entries give their room back (out of line: only when the vector is full).
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        self.entries.drain(..self.head);
        self.head = 0;
    }

    #[inline]
    fn pop_front(&mut self) -> Option<Entry<J>> {
        let entry = *self.entries.get(self.head)?;
        self.head += 1;
        if self.head == self.entries.len() {
            self.entries.clear();
            self.head = 0;
        }
        Some(entry)
    }

    /// `entry`, just popped, back in front.
    fn push_front(&mut self, entry: Entry<J>) {
        match self.head.checked_sub(1) {
            Some(h) => {
                self.entries[h] = entry;
                self.head = h;
            }
            // The pop emptied the vector: room for it at the front.
            None => self.entries.insert(0, entry),
        }
    }

    /// Empty, with room for `tasks` entries.
    fn reset(&mut self, tasks: usize) {
        self.entries.clear();
        self.head = 0;
        self.entries.reserve(tasks);
    }
}

/// An engine library's context part: its [`Engine`] and the queue of submitted jobs; the
/// [`CtxOps`] and [`TaskLib`] of every engine library. Payloads name it as their library
/// (`type Lib = Fifo<MyEngine>`).
///
/// Its row on the status page ([`crate::status`], what `doca_emu` shows) is claimed here for
/// every engine library: kind [`Engine::KIND`], device [`Engine::device`], engine, the
/// context's state, and after each pass that had work the queue's length and the tasks and
/// bytes worked through (written once a pass, not per task).
pub struct Fifo<E: Engine> {
    engine: E,
    /// Submitted jobs in order; the front one is being worked on. Sized at each start.
    jobs: RefCell<Jobs<E::Job>>,
    /// The bytes a pass may work through ([`Sizes::bytes_per_pass`] of this run).
    budget: Cell<usize>,
    /// The context's row on the status page.
    row: crate::status::Entry,
}

impl<E: Engine> Fifo<E> {
    /// The context part of `engine`, with an empty queue and its status-page row.
    pub fn new(engine: E) -> Self {
        let row = crate::status::Entry::claim_engine_ctx(crate::status::Identity {
            kind: E::KIND,
            dev: engine.device(),
            rep: None,
            name: "",
            conn_id: 0,
        });
        let jobs = RefCell::new(Jobs { entries: Vec::new(), head: 0 });
        Fifo { engine, jobs, budget: Cell::new(0), row }
    }

    /// The library's engine.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// Whether no job waits.
    fn is_empty(&self) -> bool {
        self.jobs.borrow().len() == 0
    }

    fn push(&self, job: E::Job, injected: Option<Error>) {
        self.jobs.borrow_mut().push_back(Entry { job, injected });
    }

    /// Every queued job handed back with [`FLUSH_STATUS`], one at a time.
    fn flush(&self) {
        let n = self.jobs.borrow().len();
        for _ in 0..n {
            let Some(entry) = self.jobs.borrow_mut().pop_front() else { break };
            self.engine.finish(entry.job, Err(FLUSH_STATUS));
        }
        self.row.engine_pass(self.jobs.borrow().len(), 0, 0);
    }
}

impl<E: Engine> CtxOps for Fifo<E> {
    fn kind(&self) -> &'static str {
        E::KIND
    }

    fn start(&self, core: &CtxCore) -> Result<Started> {
        let sizes = self.engine.start()?;
        self.budget.set(sizes.bytes_per_pass);
        self.jobs.borrow_mut().reset(sizes.tasks);
        self.row.set_engine(core.engine_status_id());
        Ok(Started::Running)
    }

    fn stop(&self, _core: &CtxCore) {
        // Queued jobs are flushed in progress: callbacks never run inside stop.
    }

    /// Only while jobs wait: an idle engine context costs its progress engine nothing.
    fn needs_poll(&self, _core: &CtxCore) -> bool {
        !self.is_empty()
    }

    /// Running: the jobs queued when the pass begins (not those their callbacks submit) go
    /// to [`Engine::step`], front first, while the budget lasts; the first that fails makes
    /// the context fail ([`CtxCore::fail`]) and flushes the rest. Stopping: every queued job
    /// is flushed. No borrow of the queue is held across the engine's calls or the failure
    /// (whose state callback may run application code).
    fn progress(&self, core: &CtxCore, _now: &Now<'_>) -> bool {
        if core.state() != CtxState::Running {
            if self.is_empty() {
                return false;
            }
            self.flush();
            return true;
        }
        // The queue's length and its front job under one borrow. Each job is taken off the
        // queue for its step (which sees no queue), and put back in front if it goes on next
        // pass: one borrow per job (the first one's taken with the length).
        let (n, mut next) = {
            let mut q = self.jobs.borrow_mut();
            (q.len(), q.pop_front())
        };
        if n == 0 {
            return false;
        }
        let mut budget = self.budget.get();
        let (mut done, mut bytes) = (0u64, 0usize);
        let mut left = n;
        while let Some(entry) = next {
            let Entry { job, injected } = entry;
            let step = match injected {
                Some(e) => Step::Failed(e),
                None => self.engine.step(job, budget),
            };
            match step {
                Step::Partial(used) => {
                    // The budget is spent: the front job goes on next pass (the room it
                    // left is there: nothing was queued meanwhile).
                    bytes = bytes.wrapping_add(used);
                    self.jobs.borrow_mut().push_front(entry);
                    break;
                }
                Step::Done(used) => {
                    self.engine.finish_in(core, job, Ok(()));
                    (done, bytes) = (done + 1, bytes.wrapping_add(used));
                    budget -= used.min(budget);
                    if budget == 0 {
                        break;
                    }
                }
                Step::Failed(e) => {
                    tracing::debug!(target: "doca_sdk", "{}: {}: {e:?}", E::KIND, E::FAILED);
                    self.engine.finish_in(core, job, Err(e));
                    self.row.engine_pass(self.jobs.borrow().len(), done + 1, bytes as u64);
                    core.fail(e, E::FAILED);
                    self.flush();
                    return true;
                }
            }
            // Only the jobs queued when the pass began: not those submitted after it.
            left -= 1;
            if left == 0 {
                break;
            }
            next = self.jobs.borrow_mut().pop_front();
        }
        // Nothing joins the queue during a pass (no user code runs in it: callbacks run at
        // delivery), so what is left is what was there less what completed.
        self.row.engine_pass(n - done as usize, done, bytes as u64);
        true
    }

    fn request_notification(&self, _core: &CtxCore) -> bool {
        !self.is_empty()
    }
}

impl<E, P> TaskLib<P> for Fifo<E>
where
    E: EngineTask<P>,
    P: TaskPayload<Lib = Fifo<E>>,
{
    fn pool(&self) -> &TaskPool<P> {
        self.engine.pool()
    }

    /// Queued as it is: the engine checks it when it reaches it (DOCA's submit does not
    /// validate).
    fn submit(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        self.engine.queued(task);
        self.push(E::job(task), None);
        Ok(())
    }

    /// `doca_task_try_submit`: every check the engine makes; any failure is
    /// `INVALID_VALUE` (the log line names the check and the status the error callback
    /// would have given).
    fn check(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        self.engine.validate(task).map_err(|e| {
            fail!(Error::InvalidValue, "{}: try_submit refused the task ({})", E::KIND, e.name())
        })
    }

    /// A fault plan's `fail(CODE)`: queued like any task, and failed when the engine reaches
    /// it — fatal to the context, as a task whose work fails.
    fn inject_failure(&self, _core: &CtxCore, task: TaskId, error: Error) {
        self.engine.queued(task);
        self.push(E::job(task), Some(error));
    }
}

/// A library context's handle (`struct doca_dma`, `struct doca_sha`, …, for any [`CtxOps`]):
/// the calls every DOCA library context has — `doca_*_as_ctx`, `doca_*_destroy`, and the
/// generic part of each `*_task_*_set_conf` and `*_task_*_alloc_init` — written once. A
/// library wraps it in its own type and adds its `create` and task calls.
pub struct LibCtx<L: CtxOps> {
    cell: Rc<CtxCell<L>>,
}

impl<E: Engine> LibCtx<Fifo<E>> {
    /// A context in Idle on `make`'s engine (which receives the weak handle that
    /// [`TaskPool::new`] takes), its state shown in its status-page row.
    pub fn new(make: impl FnOnce(&Weak<CtxCell<Fifo<E>>>) -> E) -> Self {
        let cell = CtxCell::new(|weak| Fifo::new(make(weak)));
        cell.core().show_state_in(&cell.ops().row);
        LibCtx { cell }
    }

    /// The library's engine.
    pub fn engine(&self) -> &E {
        self.cell.ops().engine()
    }
}

impl<L: CtxOps> LibCtx<L> {
    /// The handle of a context built with [`CtxCell::new`].
    pub fn from_cell(cell: Rc<CtxCell<L>>) -> Self {
        LibCtx { cell }
    }

    /// The library's part of the context.
    pub fn ops(&self) -> &L {
        self.cell.ops()
    }

    /// Core's part of the context.
    pub fn core(&self) -> &CtxCore {
        self.cell.core()
    }

    /// `doca_*_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        Ctx::from(self.cell.clone())
    }

    /// `doca_*_destroy`: Idle only (`BAD_STATE`, and the handle back).
    pub fn destroy(self) -> Result<(), Refused<Self>> {
        match self.cell.core().destroy() {
            Ok(()) => Ok(()),
            Err(e) => Err(Refused::new(e, self)),
        }
    }

    /// The generic part of a `*_task_*_set_conf`: the callbacks, which receive the
    /// library's task handle `H`, and the pool size, 1..=`max` (the capability
    /// `<kind>.max_num_tasks`; else `INVALID_VALUE`). Idle only (`BAD_STATE`).
    pub fn set_conf<P, H>(
        &self,
        completion: impl FnMut(H, Data, Data) + 'static,
        error: impl FnMut(H, Data, Data) + 'static,
        num_tasks: u32,
        max: u32,
    ) -> Result<()>
    where
        P: TaskPayload<Lib = L>,
        L: TaskLib<P>,
        H: From<Task<P>>,
    {
        // The state first, as DOCA's libraries check it: a call after start is BAD_STATE
        // whatever its count.
        self.core().require_idle("task set_conf")?;
        if num_tasks > max {
            let kind = self.core().kind();
            bail!(
                Error::InvalidValue,
                "{kind}: {num_tasks} tasks exceed the maximum {max} (cap {kind}.max_num_tasks)"
            );
        }
        let (mut done, mut failed) = (completion, error);
        TaskLib::<P>::pool(self.ops()).set_conf(
            self.core(),
            Box::new(move |t: Task<P>, td, cd| done(H::from(t), td, cd)),
            Box::new(move |t: Task<P>, td, cd| failed(H::from(t), td, cd)),
            num_tasks,
        )
    }

    /// The generic part of a `*_task_*_alloc_init`: a free task whose payload `init` sets,
    /// with `user_data`. Running only (`BAD_STATE`); every task out → `NO_MEMORY`.
    pub fn alloc<P>(&self, user_data: Data, init: impl FnOnce(&mut P)) -> Result<Task<P>>
    where
        P: TaskPayload<Lib = L>,
        L: TaskLib<P>,
    {
        TaskPool::<P>::alloc_in(&self.cell, user_data, |p| {
            init(p);
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Entry, Jobs};

    fn e(job: u32) -> Entry<u32> {
        Entry { job, injected: None }
    }

    fn drain(q: &mut Jobs<u32>) -> Vec<u32> {
        std::iter::from_fn(|| q.pop_front().map(|e| e.job)).collect()
    }

    #[test]
    fn the_queue_keeps_its_order_and_its_room_through_pops_pushes_and_put_backs() {
        let mut q = Jobs { entries: Vec::new(), head: 0 };
        q.reset(4);
        let room = q.entries.capacity();
        for j in 0..4 {
            q.push_back(e(j));
        }
        // Two popped, two more pushed into a full vector: the waiting ones move to the front.
        assert_eq!(q.pop_front().map(|e| e.job), Some(0));
        assert_eq!(q.pop_front().map(|e| e.job), Some(1));
        q.push_back(e(4));
        q.push_back(e(5));
        assert_eq!(q.len(), 4);
        // A popped job put back goes in front again.
        let front = q.pop_front().expect("a job");
        q.push_front(front);
        assert_eq!(drain(&mut q), [2, 3, 4, 5]);
        assert_eq!((q.len(), q.head), (0, 0));
        // The last job popped empties the vector; put back, it is the only one.
        q.push_back(e(6));
        let last = q.pop_front().expect("a job");
        assert_eq!(q.len(), 0);
        q.push_front(last);
        q.push_back(e(7));
        assert_eq!(drain(&mut q), [6, 7]);
        assert_eq!(q.entries.capacity(), room, "no push allocated");
    }
}
