//! `doca_task`: fixed pools of tasks, handed out, submitted and returned by ownership.
//!
//! A pool is sized by the library's `set_conf(completion, error, count)` while Idle and its
//! slots (with each slot's payload, e.g. a message buffer) are built at each start, then
//! reused: allocating, submitting, completing and freeing a task allocates nothing. (A slab
//! would drop a payload when its task is freed; these slots keep theirs, buffers included.)
//!
//! A library hands a submitted task back with [`TaskPool::finish`]: the task joins a queue
//! sized at start, and core delivers the queue — completion or error callback — right after
//! the library's [`crate::CtxOps::progress`] returns. Tasks finished by those callbacks
//! (a resubmitted task that completes at once) wait for the next progress. A completion a
//! fault plan delays ([`crate::fault`], `delay(MS)`) is held back in its pool until due —
//! never slept on — while everything else is delivered.
//!
//! Ownership follows the C API. [`Task::submit`] moves the task to the library; on refusal
//! the task comes back inside [`Refused`]. Its completion (or error) callback receives the
//! task by value: drop it (that is `doca_task_free`), submit it again, or keep it — a kept
//! task holds its context's stop in Stopping until it is freed. Libraries refer to
//! submitted tasks by [`TaskId`], which carries a generation: a stale id finds nothing,
//! never another task.
//!
//! A task that a graph instance runs ([`crate::graph`], named there by a [`TaskRef`]) is
//! submitted with a route: when it is delivered it completes into the graph, and its pool's
//! callbacks do not run. The application still holds such a task: submitting it itself
//! meanwhile is `IN_USE`, and freeing it frees it once the graph has it back.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::{Rc, Weak};
use std::time::Instant;

use crate::callback::CbSlot;
use crate::ctx::Ctx;
use crate::ctx::{CtxCell, CtxCore, CtxOps, Deliver};
use crate::data::Data;
use crate::error::{Error, Refused, Result};
use crate::{bail, fault};

/// The completion and error callback shape (`doca_task_completion_cb_t`):
/// `(task, task user data, context user data)`.
pub type TaskCb<P> = dyn FnMut(Task<P>, Data, Data);

/// Names one task of one pool: slot index and generation.
///
/// One word (the generation above the index): a [`Task`] is then a pointer and a word, which
/// the compiler passes in two registers — a completion callback, called through `dyn`, gets
/// its task without a trip through memory (measured: that trip cost a task cycle more than a
/// quarter of its time, see the book's Performance chapter, round 22).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskId {
    bits: u64,
}

// A task handle stays two words (see above; the loopback checks a whole `Task`): adding a
// field to it costs every callback.
const _: () = assert!(std::mem::size_of::<TaskId>() == 8);

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskId").field("idx", &self.idx()).field("gen", &self.gen()).finish()
    }
}

impl TaskId {
    #[inline]
    fn new(idx: u32, gen: u32) -> TaskId {
        TaskId { bits: (gen as u64) << 32 | idx as u64 }
    }

    #[inline]
    fn idx(self) -> u32 {
        self.bits as u32
    }

    #[inline]
    fn gen(self) -> u32 {
        (self.bits >> 32) as u32
    }

    /// The id as one number (to carry it through a queue or to the peer and back).
    pub fn to_bits(self) -> u64 {
        self.bits
    }

    /// The id [`TaskId::to_bits`] gave. A forged or stale number names no live task: the
    /// pool's generation check refuses it.
    pub fn from_bits(bits: u64) -> TaskId {
        TaskId { bits }
    }

    /// The pool slot this id names (`0..capacity`): an index for a library's own per-task
    /// tables. The generation is not part of it: check ids, not slots, for staleness.
    pub fn slot(self) -> usize {
        self.idx() as usize
    }
}

/// The slot index of a handle whose task was submitted ([`Task::submit_ex`]): no slot has
/// it (a pool's slots are numbered below its `u32` capacity), and the handle's drop
/// returns before looking at the pool (the check sits in `release`, so every drop site
/// stays one call).
const SPENT: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Free,
    Owned,
    /// Owned, and named by a graph instance that is running ([`crate::graph`]): only the
    /// graph submits it (the application's submit is `IN_USE`); freed as an owned task is.
    Reserved,
    Submitted,
    /// Handed back by the library with [`TaskPool::finish`]; delivered on the next progress.
    Finished,
}

struct Slot<P> {
    gen: u32,
    state: SlotState,
    user_data: Data,
    status: Result<()>,
    /// Where the task completes instead of its pool's callbacks while it runs as a node of a
    /// graph instance ([`crate::graph`]), with the graph's token for it.
    route: Option<(Rc<dyn Route>, u64)>,
    /// The application freed the task while a graph ran it: free it once it comes back.
    orphan: bool,
    /// A fault plan's `delay`: the completion is not delivered before this instant (on the
    /// engine's clock); until then it waits in the pool's held list.
    due: Option<Instant>,
    /// Whether `route`, `orphan` or `due` may be set: the delivery of a task without (every
    /// task outside graphs and fault plans) reads this one flag, not the three fields.
    extra: bool,
    payload: P,
}

/// What a task submitted on behalf of a graph instance completes into ([`crate::graph`]):
/// its context's completion and error callbacks do not run for it.
pub(crate) trait Route {
    /// The task submitted with `token` completed with `status` (called from the progress
    /// of the task's context, no borrow of the pool held).
    fn done(&self, token: u64, status: Result<()>);
}

struct Slots<P> {
    slots: Vec<Slot<P>>,
    free: Vec<u32>,
    /// Tasks the library finished, in order, with their status (sized at start). Beside the
    /// slots: finishing a task and queueing it is one borrow, and delivery reads an entry
    /// under the borrow it takes for the slot.
    finished: Vec<(TaskId, Result<()>)>,
    /// The generation new slots start at: above every generation handed out before, so an
    /// id from an earlier run never names a task of this one.
    next_gen: u32,
}

/// A task type's library-specific part (its payload) names the library whose contexts own
/// such tasks: every task call then goes straight to that library, without a dynamic call.
pub trait TaskPayload: Sized + 'static {
    /// The library context type owning tasks of this type.
    type Lib: TaskLib<Self>;

    /// The task kind's name in fault plans (`task.<kind>`, one of
    /// [`crate::fault::TASK_KINDS`]); empty: its tasks are never failed or delayed by a plan.
    const FAULT_KIND: &'static str = "";
}

/// What a library implements for each task type it offers. Core calls these from
/// [`Task::submit`] and [`Task::try_submit`]; neither may run user callbacks.
pub trait TaskLib<P: TaskPayload>: CtxOps + Sized + 'static {
    /// The pool of this task type.
    fn pool(&self) -> &TaskPool<P>;

    /// The task was submitted (core already checked the context is Running): queue it.
    /// An error hands the task back to the submitter.
    fn submit(&self, core: &CtxCore, task: TaskId) -> Result<()>;

    /// [`TaskLib::submit`] from [`Task::submit_ex`]: without [`TaskSubmitFlags::FLUSH`] the
    /// library may keep the task back and hand it over with later ones (at a flushing
    /// submit, at [`CtxOps::flush_tasks`], or at its next progress at the latest).
    /// Default: every submission is a flushing one.
    fn submit_ex(&self, core: &CtxCore, task: TaskId, _flags: TaskSubmitFlags) -> Result<()> {
        self.submit(core, task)
    }

    /// Extra validation for [`Task::try_submit`] (`INVALID_VALUE` when the task is bad).
    fn check(&self, _core: &CtxCore, _task: TaskId) -> Result<()> {
        Ok(())
    }

    /// A fault plan fails submitted task `task` with `error` instead of its work
    /// ([`crate::fault`]). Default: the task completes with `error` through its error
    /// callback on the next progress. A library whose engine treats a failed task as
    /// fatal to the context (DMA) overrides it to go the same way.
    fn inject_failure(&self, _core: &CtxCore, task: TaskId, error: Error) {
        self.pool().finish(task, Err(error));
    }
}

bitflags::bitflags! {
    /// `enum doca_task_submit_flag`, for [`Task::submit_ex`] (`doca_task_submit_ex`). No
    /// flag (`DOCA_TASK_SUBMIT_FLAG_NONE`, [`TaskSubmitFlags::empty`]) lets the context keep
    /// the task back and hand it over together with later ones.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct TaskSubmitFlags: u32 {
        /// `DOCA_TASK_SUBMIT_FLAG_FLUSH`: this task and every one kept back before it go at
        /// once (what `doca_task_submit` does).
        const FLUSH = 1 << 0;
        /// `DOCA_TASK_SUBMIT_FLAG_OPTIMIZE_REPORTS`: the completion may be reported later,
        /// together with others (accepted; completions are reported as they happen here).
        const OPTIMIZE_REPORTS = 1 << 1;
    }
}

/// The context owning the tasks of payload `P`.
type Owner<P> = CtxCell<<P as TaskPayload>::Lib>;

/// Core's part and the pool of a context owning `P` tasks.
#[inline]
fn parts<P: TaskPayload>(owner: &Owner<P>) -> (&CtxCore, &TaskPool<P>) {
    (owner.core(), pool_of(owner))
}

/// The pool of `P` tasks of the context owning them.
#[inline]
fn pool_of<P: TaskPayload>(owner: &Owner<P>) -> &TaskPool<P> {
    TaskLib::<P>::pool(owner.ops())
}

/// A fixed pool of tasks of one type, embedded in a library context.
pub struct TaskPool<P: TaskPayload> {
    owner: Weak<Owner<P>>,
    slots: RefCell<Slots<P>>,
    /// Finished tasks whose completion a fault plan's `delay` holds back, with the instant it
    /// is due (sized at start; empty without a plan).
    held: RefCell<Vec<(Instant, TaskId, Result<()>)>>,
    /// Starts so far (each start rebuilds the slots and empties the queue).
    runs: Cell<u32>,
    capacity: Cell<u32>,
    configured: Cell<bool>,
    completion: CbSlot<TaskCb<P>>,
    error: CbSlot<TaskCb<P>>,
    /// The address of the owning context's core, recorded at the first `set_conf` (checked
    /// there to be the owner's): [`TaskPool::finish_in`] compares it, never follows it.
    core_at: Cell<usize>,
}

/// A pool, reached through its owning context.
struct PoolOf<P: TaskPayload>(Weak<Owner<P>>);

impl<P: TaskPayload> Deliver for PoolOf<P> {
    fn deliver(&self) -> usize {
        match self.0.upgrade() {
            Some(owner) => pool_of::<P>(&owner).deliver_finished(&owner),
            None => 0,
        }
    }

    fn next_due(&self) -> Option<Instant> {
        let owner = self.0.upgrade()?;
        let held = pool_of::<P>(&owner).held.borrow();
        held.iter().map(|&(due, _, _)| due).min()
    }
}

/// A batch of finished tasks whose delivery a callback's panic cut short (dropped only when
/// unwinding; the batch's normal end is `deliver_finished`'s): the entries handed out so far
/// leave the queue and the rest are counted as finished again, for the next pass to deliver
/// (nothing is lost to a caller that catches the panic). How far the batch got is counted,
/// not read off the slots: a task handed out may be finished again already (resubmitted by
/// its callback and failed at once, or held back by a fault plan's `delay`).
struct Cut<'a, P: TaskPayload> {
    pool: &'a TaskPool<P>,
    core: &'a CtxCore,
    /// Entries in the batch, and how many of them were handed out (or held back).
    n: usize,
    reached: usize,
    /// The pool's run when the batch began (a callback that restarted the context began a
    /// new run, whose queue holds nothing of this batch).
    run: u32,
}

impl<P: TaskPayload> Drop for Cut<'_, P> {
    #[cold]
    fn drop(&mut self) {
        if self.pool.runs.get() != self.run {
            return;
        }
        let Ok(mut s) = self.pool.slots.try_borrow_mut() else { return };
        let reached = self.reached.min(s.finished.len());
        s.finished.drain(..reached);
        drop(s);
        if self.reached < self.n {
            self.core.requeue_finished(self.n - self.reached);
        }
    }
}

impl<P: TaskPayload> TaskPool<P> {
    /// An unconfigured pool for the context `owner` (the weak handle [`CtxCell::new`] gives).
    pub fn new(owner: Weak<Owner<P>>) -> Self {
        TaskPool {
            owner,
            slots: RefCell::new(Slots {
                slots: Vec::new(),
                free: Vec::new(),
                finished: Vec::new(),
                next_gen: 0,
            }),
            held: RefCell::new(Vec::new()),
            runs: Cell::new(0),
            capacity: Cell::new(0),
            configured: Cell::new(false),
            completion: CbSlot::empty(),
            error: CbSlot::empty(),
            core_at: Cell::new(0),
        }
    }

    /// The generic part of every `*_task_*_set_conf`: callbacks and pool size. Idle only
    /// (`BAD_STATE`). The library checks its own maximum. A count of 0 is accepted, as DOCA's
    /// libraries accept it: a pool of none, whose every allocation is `NO_MEMORY`.
    pub fn set_conf(
        &self,
        core: &CtxCore,
        completion: Box<TaskCb<P>>,
        error: Box<TaskCb<P>>,
        count: u32,
    ) -> Result<()> {
        core.require_idle("task set_conf")?;
        self.completion.set(completion);
        self.error.set(error);
        self.capacity.set(count);
        if !self.configured.replace(true) {
            core.register_pool(Rc::new(PoolOf::<P>(self.owner.clone())));
            if core.is_core_of(&self.owner) {
                self.core_at.set(core as *const CtxCore as usize);
            }
        }
        Ok(())
    }

    /// Whether `set_conf` was called.
    pub fn is_configured(&self) -> bool {
        self.configured.get()
    }

    /// The configured number of tasks.
    pub fn capacity(&self) -> u32 {
        self.capacity.get()
    }

    /// Builds the slots at each start (every task is free then). `make` creates each slot's
    /// payload, so payload buffers are allocated here, sized by the settings of this run,
    /// and never on the data path.
    pub fn prepare(&self, mut make: impl FnMut() -> P) {
        let mut s = self.slots.borrow_mut();
        let gen = s.slots.iter().map(|slot| slot.gen.wrapping_add(1)).fold(s.next_gen, u32::max);
        s.next_gen = gen;
        let want = self.capacity.get() as usize;
        s.slots = (0..want)
            .map(|_| Slot {
                gen,
                state: SlotState::Free,
                user_data: Data::NONE,
                status: Ok(()),
                route: None,
                orphan: false,
                due: None,
                extra: false,
                payload: make(),
            })
            .collect();
        s.free = (0..want as u32).rev().collect();
        s.finished.clear();
        s.finished.reserve(want);
        drop(s);
        let mut held = self.held.borrow_mut();
        held.clear();
        held.reserve(want);
        self.runs.set(self.runs.get().wrapping_add(1));
    }

    /// Takes a free task, resets its user data and status, and lets `init` fill its payload
    /// (an `init` error returns the slot and is returned). Running only (`BAD_STATE`); pool
    /// empty → `NO_MEMORY`, and a task type never configured is a pool of none: `NO_MEMORY`
    /// too (the code every `*_alloc_init` documents, and DOCA's own library's answer).
    pub fn alloc(&self, init: impl FnOnce(&mut P) -> Result<()>) -> Result<Task<P>> {
        let owner = self.owner.upgrade().ok_or(Error::BadState)?;
        self.alloc_for(owner, Data::NONE, init)
    }

    /// [`TaskPool::alloc`] from a library holding its context (`owner`, whose pool of `P`
    /// tasks it takes from), with the task's user data set at once: the task's handle
    /// takes its count on the context from `owner`, and the slot is visited once.
    pub fn alloc_in(
        owner: &Rc<Owner<P>>,
        user_data: Data,
        init: impl FnOnce(&mut P) -> Result<()>,
    ) -> Result<Task<P>> {
        pool_of::<P>(owner).alloc_for(owner.clone(), user_data, init)
    }

    #[inline]
    fn alloc_for(
        &self,
        owner: Rc<Owner<P>>,
        user_data: Data,
        init: impl FnOnce(&mut P) -> Result<()>,
    ) -> Result<Task<P>> {
        let core = owner.core();
        core.require_running("task alloc")?;
        if !self.configured.get() {
            bail!(
                Error::NoMemory,
                "{}: task type not configured, its pool has no task (call its set_conf before start)",
                core.kind()
            );
        }
        if fault::armed(fault::class::ALLOC_TASK) {
            let kind = if P::FAULT_KIND.is_empty() { core.kind() } else { P::FAULT_KIND };
            if let Some(e) = fault::on_alloc(fault::Alloc::Task, &kind) {
                return Err(e);
            }
        }
        let id = {
            let mut s = self.slots.borrow_mut();
            let Some(idx) = s.free.pop() else { return Err(self.exhausted(core)) };
            let slot = &mut s.slots[idx as usize];
            if let Err(e) = init(&mut slot.payload) {
                s.free.push(idx);
                return Err(e);
            }
            slot.state = SlotState::Owned;
            slot.user_data = user_data;
            slot.status = Ok(());
            TaskId::new(idx, slot.gen)
        };
        core.add_allocated(1);
        Ok(Task { owner, id })
    }

    /// Every task is out of the pool: `NO_MEMORY`, logged only for a pool configured with none
    /// (an exhausted pool is an application's ordinary back-pressure).
    #[cold]
    fn exhausted(&self, core: &CtxCore) -> Error {
        if self.capacity.get() == 0 {
            return crate::fail!(
                Error::NoMemory,
                "{}: the task type was configured with 0 tasks: its pool has none to allocate",
                core.kind()
            );
        }
        Error::NoMemory
    }

    /// The library is done with submitted task `id`: it is handed back with `status`
    /// through its completion callback (`Ok`) or error callback (`Err`) on the next
    /// progress, after the library's poll — never inside this call, so a library may finish
    /// tasks anywhere (submit, stop, progress). A stale id, or one not submitted (or already
    /// finished), is ignored and returns false.
    pub fn finish(&self, id: TaskId, status: Result<()>) -> bool {
        match self.owner.upgrade() {
            Some(owner) => self.finish_queued(owner.core(), id, status),
            None => false,
        }
    }

    /// [`TaskPool::finish`] from a library that has its context's core at hand (its
    /// [`CtxOps::progress`], a [`TaskLib::submit`]): the pool reaches the context without
    /// taking a count on it. `core` must be this pool's context's; another one (a library's
    /// mistake) is not trusted: the task is finished through the pool's own link instead.
    #[inline]
    pub fn finish_in(&self, core: &CtxCore, id: TaskId, status: Result<()>) -> bool {
        if core as *const CtxCore as usize != self.core_at.get() {
            debug_assert!(false, "{}: finish_in called with another context's core", core.kind());
            return self.finish(id, status);
        }
        self.finish_queued(core, id, status)
    }

    /// Marks submitted task `id` finished and queues it for delivery; `core` is the pool's
    /// context's.
    #[inline]
    fn finish_queued(&self, core: &CtxCore, id: TaskId, status: Result<()>) -> bool {
        {
            let mut s = self.slots.borrow_mut();
            match s.slots.get_mut(id.idx() as usize) {
                Some(slot) if slot.gen == id.gen() && slot.state == SlotState::Submitted => {
                    slot.state = SlotState::Finished;
                }
                _ => return false,
            }
            // Never grows: at most `capacity` tasks are out of the pool.
            s.finished.push((id, status));
        }
        core.add_finished();
        true
    }

    /// Delivers the tasks finished so far (those their callbacks finish wait for the next
    /// call), and the held ones that are due; returns how many callbacks ran (a completion
    /// a fault plan delays is held back, not delivered). `owner` is this pool's context.
    fn deliver_finished(&self, owner: &Rc<Owner<P>>) -> usize {
        let core = owner.core();
        // The context's count of held completions says first whether any pool holds one.
        if core.holds() && !self.held.borrow().is_empty() {
            self.release_due(core);
        }
        let n = self.slots.borrow().finished.len();
        let run = self.runs.get();
        core.tasks_delivered(n);
        let mut cut = Cut { pool: self, core, n, reached: 0, run };
        let mut delivered = 0;
        for i in 0..n {
            // Short borrows: the callbacks may finish more tasks (appended after `n`).
            cut.reached = i + 1;
            delivered += usize::from(self.deliver(owner, core, i));
        }
        std::mem::forget(cut);
        // A callback that restarted the context (possible only after the last task of the
        // batch) began a new run whose queue starts empty: nothing of this batch is left.
        // Usually the callbacks finished nothing more and the queue is simply emptied.
        if self.runs.get() == run {
            let mut s = self.slots.borrow_mut();
            if s.finished.len() == n {
                s.finished.clear();
            } else {
                s.finished.drain(..n);
            }
        }
        delivered
    }

    /// Moves the held completions that are due back to the queue of finished tasks (cold:
    /// only a fault plan's `delay` holds any).
    #[cold]
    fn release_due(&self, core: &CtxCore) {
        let now = core.now();
        let mut held = self.held.borrow_mut();
        let mut s = self.slots.borrow_mut();
        held.retain(|&(due, id, status)| {
            if due <= now {
                // Never grows: held and finished tasks together are at most `capacity`.
                s.finished.push((id, status));
                core.add_finished();
                core.unhold();
                false
            } else {
                true
            }
        });
    }

    /// Delivers entry `i` of the finished queue through its callback (or its graph's route);
    /// false when it was not delivered: stale (or gone: a callback restarted the context),
    /// or held back by a fault plan's `delay` not yet due.
    fn deliver(&self, owner: &Rc<Owner<P>>, core: &CtxCore, i: usize) -> bool {
        let (id, status, user_data) = {
            let mut s = self.slots.borrow_mut();
            let Some(&(id, status)) = s.finished.get(i) else { return false };
            match s.slots.get_mut(id.idx() as usize) {
                Some(slot) if slot.gen == id.gen() && slot.state == SlotState::Finished => {
                    if slot.extra {
                        drop(s);
                        return self.deliver_extra(owner, core, id, status);
                    }
                    slot.state = SlotState::Owned;
                    slot.status = status;
                    (id, status, slot.user_data)
                }
                _ => return false,
            }
        };
        core.add_inflight(-1);
        self.call_back(owner, core, id, status, user_data);
        true
    }

    /// [`TaskPool::deliver`] of a finished task with a graph's route, a fault plan's delay,
    /// or freed while a graph ran it (`extra`): the slot was checked by the caller, and
    /// nothing ran since.
    #[cold]
    #[inline(never)]
    fn deliver_extra(&self, owner: &Rc<Owner<P>>, core: &CtxCore, id: TaskId, status: Result<()>) -> bool {
        let (user_data, route, orphan) = {
            let mut s = self.slots.borrow_mut();
            let slot = &mut s.slots[id.idx() as usize];
            if let Some(due) = slot.due {
                if core.now() < due {
                    drop(s);
                    // A fault plan's delay: held back, never slept on; a later progress
                    // pass delivers it once due (the engine's timer wakes a sleeper).
                    self.held.borrow_mut().push((due, id, status));
                    core.hold(due);
                    return false;
                }
                slot.due = None;
            }
            slot.state = SlotState::Owned;
            slot.status = status;
            slot.extra = false;
            (slot.user_data, slot.route.take(), std::mem::take(&mut slot.orphan))
        };
        core.add_inflight(-1);
        if let Some((route, token)) = route {
            // A graph's node: the graph hears of it, the context's callbacks do not run.
            if orphan {
                self.release(id, core);
            }
            route.done(token, status);
            return true;
        }
        self.call_back(owner, core, id, status, user_data);
        true
    }

    /// Hands task `id`, delivered with `status`, to its completion or error callback.
    #[inline]
    fn call_back(
        &self,
        owner: &Rc<Owner<P>>,
        core: &CtxCore,
        id: TaskId,
        status: Result<()>,
        user_data: Data,
    ) {
        let ctx_data = core.user_data();
        let cb = if status.is_ok() { &self.completion } else { &self.error };
        let task = Task { owner: owner.clone(), id };
        // With no callback installed the task is dropped here, which frees it.
        cb.call(move |f| f(task, user_data, ctx_data));
    }

    /// Runs `f` on the payload of a task the library holds by id; `None` if the id is stale.
    pub fn with_payload<R>(&self, id: TaskId, f: impl FnOnce(&mut P) -> R) -> Option<R> {
        let mut s = self.slots.borrow_mut();
        match s.slots.get_mut(id.idx() as usize) {
            Some(slot) if slot.gen == id.gen() && slot.state != SlotState::Free => Some(f(&mut slot.payload)),
            _ => None,
        }
    }

    fn with_slot<R>(&self, id: TaskId, f: impl FnOnce(&mut Slot<P>) -> R) -> R {
        let mut s = self.slots.borrow_mut();
        let slot = &mut s.slots[id.idx() as usize];
        debug_assert_eq!(slot.gen, id.gen(), "a Task handle always names a live slot");
        f(slot)
    }

    fn release(&self, id: TaskId, core: &CtxCore) {
        if id.idx() == SPENT {
            // A handle spent by its submission: the library holds the task.
            return;
        }
        let mut s = self.slots.borrow_mut();
        let slot = &mut s.slots[id.idx() as usize];
        if slot.gen != id.gen() {
            return;
        }
        if !matches!(slot.state, SlotState::Owned | SlotState::Reserved) {
            // Freed while a graph instance runs it: freed when it comes back.
            if slot.route.is_some() {
                slot.orphan = true;
            }
            return;
        }
        slot.state = SlotState::Free;
        slot.gen = slot.gen.wrapping_add(1);
        s.free.push(id.idx());
        drop(s);
        core.add_allocated(-1);
    }
}

/// A task owned by the application (`struct doca_task` plus its library-specific part `P`).
/// Dropping it frees it back to its pool (`doca_task_free`).
pub struct Task<P: TaskPayload> {
    owner: Rc<Owner<P>>,
    id: TaskId,
}

impl<P: TaskPayload> fmt::Debug for Task<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Task({} #{} gen {})", self.owner.core().kind(), self.id.idx(), self.id.gen())
    }
}

/// What every task type has: `doca_task_submit`. Lets generic helpers (such as a retry on
/// `AGAIN`) take any library's task. Implemented by [`Task`] and by every
/// [`task_handle!`](crate::task_handle) type.
pub trait Submit: Sized {
    /// `doca_task_submit`; on refusal the task comes back.
    fn submit(self) -> Result<(), Refused<Self>>;
}

impl<P: TaskPayload> Submit for Task<P> {
    fn submit(self) -> Result<(), Refused<Self>> {
        Task::submit(self)
    }
}

impl<P: TaskPayload> Task<P> {
    /// `doca_task_submit`: passes the task to its library. The context must be Running
    /// (`BAD_STATE`); on any refusal the task comes back in [`Refused`] (e.g. `AGAIN` when a
    /// queue is full: submit it again later).
    pub fn submit(self) -> Result<(), Refused<Self>> {
        self.submit_ex(TaskSubmitFlags::FLUSH)
    }

    /// `doca_task_submit_ex`: [`Task::submit`] with flags. Without
    /// [`TaskSubmitFlags::FLUSH`] the library may keep the task back and hand it over with
    /// later ones — at a flushing submit, at [`Ctx::flush_tasks`], or at its context's next
    /// progress at the latest — so that a batch costs one hand-over (the cc consumer keeps
    /// its posted buffers back this way).
    pub fn submit_ex(self, flags: TaskSubmitFlags) -> Result<(), Refused<Self>> {
        match submit_slot::<P>(&self.owner, self.id, flags, None) {
            Ok(()) => {
                // The library has the task now: this handle ends without visiting its slot
                // (a submitted slot is not freed by a handle's drop; only its `Rc` goes).
                let mut spent = self;
                spent.id = TaskId::new(SPENT, 0);
                Ok(())
            }
            Err(e) => Err(Refused::new(e, self)),
        }
    }

    /// Asks the fault plan about this submission (only when a task point is armed).
    #[cold]
    fn fault(core: &CtxCore) -> Option<fault::TaskFault> {
        fault::on_task(P::FAULT_KIND, &format_args!("{} task submitted", core.kind()))
    }

    /// `doca_task_try_submit`: validates the task first (`INVALID_VALUE` when it is bad),
    /// then submits it.
    pub fn try_submit(self) -> Result<(), Refused<Self>> {
        if let Err(e) = TaskLib::<P>::check(self.owner.ops(), self.owner.core(), self.id) {
            return Err(Refused::new(e, self));
        }
        self.submit()
    }

    /// `doca_task_free`: returns the task to its pool (the same as dropping it).
    pub fn free(self) {}

    /// `doca_task_get_status`: `Ok` for a successful completion, else the error it
    /// completed with.
    pub fn status(&self) -> Result<()> {
        pool_of::<P>(&self.owner).with_slot(self.id, |s| s.status)
    }

    /// `doca_task_set_user_data`.
    pub fn set_user_data(&self, data: Data) {
        pool_of::<P>(&self.owner).with_slot(self.id, |s| s.user_data = data);
    }

    /// `doca_task_get_user_data`.
    pub fn user_data(&self) -> Data {
        pool_of::<P>(&self.owner).with_slot(self.id, |s| s.user_data)
    }

    /// `doca_task_get_ctx`.
    pub fn ctx(&self) -> Ctx {
        self.owner.core().ctx()
    }

    /// This task's id (what the library queues).
    pub fn id(&self) -> TaskId {
        self.id
    }

    /// Reads or changes the library-specific part.
    pub fn with_payload<R>(&self, f: impl FnOnce(&mut P) -> R) -> R {
        pool_of::<P>(&self.owner).with_slot(self.id, |s| f(&mut s.payload))
    }
}

/// Submits the task in slot `id` of `owner`'s pool: the path of [`Task::submit_ex`] and of a
/// graph running the task as a node (`route`). The task must be held by the application, not
/// already submitted (`IN_USE`: a task a graph instance is running) nor freed (`BAD_STATE`).
fn submit_slot<P: TaskPayload>(
    owner: &Rc<Owner<P>>,
    id: TaskId,
    flags: TaskSubmitFlags,
    route: Option<(Rc<dyn Route>, u64)>,
) -> Result<()> {
    let (core, pool) = parts::<P>(owner);
    core.require_running("task submit")?;
    // Without a plan: one relaxed load, and the slot is written as before.
    let injected = if fault::armed(fault::class::TASK) { Task::<P>::fault(core) } else { None };
    {
        let mut s = pool.slots.borrow_mut();
        match s.slots.get_mut(id.idx() as usize) {
            Some(slot)
                if slot.gen == id.gen()
                    && (slot.state == SlotState::Owned
                        || (slot.state == SlotState::Reserved && route.is_some())) =>
            {
                slot.state = SlotState::Submitted;
                let due = match injected {
                    Some(fault::TaskFault::Delay(d)) => Some(core.now() + d),
                    _ => None,
                };
                if route.is_some() || due.is_some() {
                    slot.route = route;
                    slot.due = due;
                    slot.extra = true;
                }
            }
            Some(slot) if slot.gen == id.gen() => {
                bail!(
                    Error::InUse,
                    "{}: the task is already submitted (a graph instance runs it)",
                    core.kind()
                )
            }
            _ => bail!(Error::BadState, "{}: the task was freed", core.kind()),
        }
    }
    core.add_inflight(1);
    let lib = owner.ops();
    if let Some(fault::TaskFault::Fail(e)) = injected {
        TaskLib::<P>::inject_failure(lib, core, id, e);
        core.activate();
        return Ok(());
    }
    let submitted = if flags.contains(TaskSubmitFlags::FLUSH) {
        TaskLib::<P>::submit(lib, core, id)
    } else {
        TaskLib::<P>::submit_ex(lib, core, id, flags)
    };
    match submitted {
        Ok(()) => {
            core.activate();
            Ok(())
        }
        Err(e) => {
            pool.with_slot(id, |s| {
                // A graph's node goes back to its reservation (the graph tries it again).
                s.state = if s.route.take().is_some() { SlotState::Reserved } else { SlotState::Owned };
                s.due = None;
                s.extra = s.orphan;
            });
            core.add_inflight(-1);
            Err(e)
        }
    }
}

/// A task that a graph instance runs as a context node's data (`doca_graph_instance_set_ctx_node_data`):
/// it names the task without owning it — the application keeps the task, may change its
/// content between runs, and frees it (after the instance, as DOCA asks; a task freed
/// earlier makes the next submission of the instance fail, never touches another task).
pub struct TaskRef(Box<dyn NodeTask>);

impl fmt::Debug for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskRef({})", self.0.ctx().kind())
    }
}

impl TaskRef {
    /// The context the task belongs to.
    pub fn ctx(&self) -> Ctx {
        self.0.ctx()
    }

    /// Whether the task is still allocated (not freed) and held by the application.
    pub(crate) fn check(&self) -> Result<()> {
        self.0.check()
    }

    /// Submits the task so that it completes into `route` with `token`.
    pub(crate) fn submit_routed(&self, route: Rc<dyn Route>, token: u64) -> Result<()> {
        self.0.submit_routed(route, token)
    }

    /// Holds the task for a running instance (`on`): the application's own submit is then
    /// `IN_USE` until the instance is done (`off`), so the task never runs twice.
    pub(crate) fn reserve(&self, on: bool) {
        self.0.reserve(on)
    }
}

impl<P: TaskPayload> From<&Task<P>> for TaskRef {
    fn from(t: &Task<P>) -> TaskRef {
        TaskRef(Box::new(Named::<P> { owner: t.owner.clone(), id: t.id }))
    }
}

/// The type-erased face of a task named by a [`TaskRef`].
trait NodeTask {
    fn ctx(&self) -> Ctx;
    fn check(&self) -> Result<()>;
    fn submit_routed(&self, route: Rc<dyn Route>, token: u64) -> Result<()>;
    fn reserve(&self, on: bool);
}

struct Named<P: TaskPayload> {
    owner: Rc<Owner<P>>,
    id: TaskId,
}

impl<P: TaskPayload> NodeTask for Named<P> {
    fn ctx(&self) -> Ctx {
        self.owner.core().ctx()
    }

    fn check(&self) -> Result<()> {
        let (core, pool) = parts::<P>(&self.owner);
        let s = pool.slots.borrow();
        match s.slots.get(self.id.idx() as usize) {
            Some(slot) if slot.gen == self.id.gen() && slot.state == SlotState::Owned && !slot.orphan => {
                Ok(())
            }
            Some(slot) if slot.gen == self.id.gen() && !slot.orphan => {
                bail!(Error::InUse, "{}: a graph node's task is submitted elsewhere", core.kind())
            }
            _ => bail!(Error::BadState, "{}: a graph node's task was freed", core.kind()),
        }
    }

    fn submit_routed(&self, route: Rc<dyn Route>, token: u64) -> Result<()> {
        submit_slot::<P>(&self.owner, self.id, TaskSubmitFlags::FLUSH, Some((route, token)))
    }

    fn reserve(&self, on: bool) {
        let mut s = pool_of::<P>(&self.owner).slots.borrow_mut();
        if let Some(slot) = s.slots.get_mut(self.id.idx() as usize).filter(|slot| slot.gen == self.id.gen()) {
            slot.state = match (on, slot.state) {
                (true, SlotState::Owned) => SlotState::Reserved,
                (false, SlotState::Reserved) => SlotState::Owned,
                (_, state) => state,
            };
        }
    }
}

impl<P: TaskPayload> Drop for Task<P> {
    fn drop(&mut self) {
        let (core, pool) = parts::<P>(&self.owner);
        pool.release(self.id, core);
    }
}

/// Declares a library's task type: a newtype over [`Task`] with the generic calls every
/// DOCA task has (`doca_task_submit`, `_try_submit`, `_free`, `_get_status`, user data) and
/// `as_task` (the library's `doca_*_as_task`). The library adds its own accessors.
///
/// ```ignore
/// doca_core::task_handle! {
///     /// `struct doca_cc_task_send`.
///     pub struct SendTask(SendPayload);
/// }
/// ```
#[macro_export]
macro_rules! task_handle {
    ($(#[$meta:meta])* $vis:vis struct $name:ident($payload:ty);) => {
        $(#[$meta])*
        $vis struct $name(pub(crate) $crate::Task<$payload>);

        impl ::std::fmt::Debug for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                write!(f, "{}({:?})", stringify!($name), self.0)
            }
        }

        impl ::std::convert::From<$crate::Task<$payload>> for $name {
            fn from(task: $crate::Task<$payload>) -> $name {
                $name(task)
            }
        }

        impl $crate::task::Submit for $name {
            fn submit(self) -> ::std::result::Result<(), $crate::Refused<$name>> {
                $name::submit(self)
            }
        }

        impl $name {
            /// `doca_task_submit`: hands the task to its library; on refusal it comes back.
            pub fn submit(self) -> ::std::result::Result<(), $crate::Refused<$name>> {
                self.0.submit().map_err(|r| $crate::Refused::new(r.error, $name(r.value)))
            }

            /// `doca_task_submit_ex`: submits with `doca_task_submit_flag` bits; without
            /// `FLUSH` the library may keep the task back until a flushing submit,
            /// `Ctx::flush_tasks` or its next progress.
            pub fn submit_ex(
                self,
                flags: $crate::TaskSubmitFlags,
            ) -> ::std::result::Result<(), $crate::Refused<$name>> {
                self.0.submit_ex(flags).map_err(|r| $crate::Refused::new(r.error, $name(r.value)))
            }

            /// `doca_task_try_submit`: validates, then submits.
            pub fn try_submit(self) -> ::std::result::Result<(), $crate::Refused<$name>> {
                self.0.try_submit().map_err(|r| $crate::Refused::new(r.error, $name(r.value)))
            }

            /// `doca_task_free` (or drop the task).
            pub fn free(self) {}

            /// `doca_task_get_status`.
            pub fn status(&self) -> $crate::Result<()> {
                self.0.status()
            }

            /// `doca_task_set_user_data`.
            pub fn set_user_data(&self, data: $crate::Data) {
                self.0.set_user_data(data)
            }

            /// `doca_task_get_user_data`.
            pub fn user_data(&self) -> $crate::Data {
                self.0.user_data()
            }

            /// The generic task (the library's `doca_*_as_task`).
            pub fn as_task(&self) -> &$crate::Task<$payload> {
                &self.0
            }
        }
    };
}
