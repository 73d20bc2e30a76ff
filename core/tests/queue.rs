//! `doca_core::queue`, the engine kit, on its own, through a small engine library built on
//! it: each task "costs" its value in bytes of the pass's budget and fails when its
//! value is 0. Proves the budget (a task larger than what is left waits for the next pass),
//! that tasks submitted by a pass's callbacks wait for the next pass, and the fatal-failure
//! rule (Stopping at once, the rest SHUTDOWN, Idle once freed, a restart works).

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use doca_core::queue::{Engine, EngineTask, Fifo, LibCtx, Sizes, Step, FLUSH_STATUS};
use doca_core::{CtxState, Data, Error, Pe, Result, Task, TaskId, TaskPayload, TaskPool};

#[derive(Default)]
struct Job {
    cost: usize,
    /// Bytes of the cost paid so far.
    paid: usize,
}

struct Ops {
    pool: TaskPool<Job>,
}

const BUDGET: usize = 100;

impl Engine for Ops {
    type Job = TaskId;
    const KIND: &'static str = "queue-test";
    const FAILED: &'static str = "a test task failed";

    fn start(&self) -> Result<Sizes> {
        self.pool.prepare(Job::default);
        Ok(Sizes { tasks: self.pool.capacity() as usize, bytes_per_pass: BUDGET })
    }

    fn step(&self, id: TaskId, budget: usize) -> Step {
        let left = self.pool.with_payload(id, |p| p.cost - p.paid).unwrap();
        if self.validate(id).is_err() {
            return Step::Failed(Error::InvalidValue);
        }
        if left > budget {
            self.pool.with_payload(id, |p| p.paid += budget);
            return Step::Partial(budget);
        }
        Step::Done(left)
    }

    fn finish(&self, id: TaskId, status: Result<()>) {
        self.pool.finish(id, status);
    }
}

impl EngineTask<Job> for Ops {
    fn pool(&self) -> &TaskPool<Job> {
        &self.pool
    }

    fn job(id: TaskId) -> TaskId {
        id
    }

    fn validate(&self, id: TaskId) -> Result<()> {
        match self.pool.with_payload(id, |p| p.cost) {
            Some(0) | None => Err(Error::InvalidValue),
            Some(_) => Ok(()),
        }
    }
}

impl TaskPayload for Job {
    type Lib = Fifo<Ops>;
}

type Ctx = LibCtx<Fifo<Ops>>;

/// The context, and the costs of the tasks its next completion callback submits.
type Again = (Weak<Ctx>, Rc<RefCell<Vec<usize>>>);

/// (cost, status, pass it completed in)
type Seen = Rc<RefCell<Vec<(usize, Result<()>, u32)>>>;

struct Rig {
    pe: Pe,
    ctx: Rc<Ctx>,
    seen: Seen,
    pass: Rc<Cell<u32>>,
    /// Tasks to submit from the next completion callback.
    resubmit: Rc<RefCell<Vec<usize>>>,
}

fn rig() -> Rig {
    let pe = Pe::create().unwrap();
    let ctx = Rc::new(LibCtx::new(|w| Ops { pool: TaskPool::new(w.clone()) }));
    pe.connect_ctx(&ctx.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    let pass = Rc::new(Cell::new(0));
    let resubmit: Rc<RefCell<Vec<usize>>> = Rc::default();
    let record = |seen: &Seen, pass: &Rc<Cell<u32>>, again: Option<Again>| {
        let (seen, pass) = (seen.clone(), pass.clone());
        move |t: Task<Job>, _: Data, _: Data| {
            seen.borrow_mut().push((t.with_payload(|p| p.cost), t.status(), pass.get()));
            drop(t);
            if let Some((ctx, costs)) = &again {
                let ctx = ctx.upgrade().unwrap();
                for cost in costs.borrow_mut().drain(..) {
                    alloc(&ctx, cost).submit().unwrap();
                }
            }
        }
    };
    let again = Some((Rc::downgrade(&ctx), resubmit.clone()));
    ctx.set_conf(record(&seen, &pass, again), record(&seen, &pass, None), 8, 8).unwrap();
    ctx.as_ctx().start().unwrap();
    Rig { pe, ctx, seen, pass, resubmit }
}

fn alloc(ctx: &Ctx, cost: usize) -> Task<Job> {
    ctx.alloc(Data::NONE, |p: &mut Job| *p = Job { cost, paid: 0 }).unwrap()
}

impl Rig {
    fn progress(&self) {
        self.pass.set(self.pass.get() + 1);
        self.pe.progress();
    }
    fn state(&self) -> CtxState {
        self.ctx.as_ctx().state()
    }
}

#[test]
fn the_budget_spreads_a_large_task_over_passes_and_callbacks_submit_for_the_next_pass() {
    let r = rig();
    for cost in [30, 50, 150, 10] {
        alloc(&r.ctx, cost).submit().unwrap();
    }
    r.resubmit.borrow_mut().push(5); // submitted by the first completion
    for _ in 0..4 {
        r.progress();
    }
    // Pass 1: 30 + 50, then 20 of the 150 (budget spent). Pass 2: 100 more of it. Pass 3: its
    // last 30, then 10, then the 5 its callback submitted in pass 1 (queued behind them).
    assert_eq!(
        *r.seen.borrow(),
        [(30, Ok(()), 1), (50, Ok(()), 1), (150, Ok(()), 3), (10, Ok(()), 3), (5, Ok(()), 3)]
    );
    assert_eq!(r.state(), CtxState::Running);
}

#[test]
fn a_failed_task_stops_the_context_and_the_rest_is_flushed() {
    let r = rig();
    for cost in [10, 0, 20, 30] {
        alloc(&r.ctx, cost).submit().unwrap();
    }
    r.progress();
    assert_eq!(
        *r.seen.borrow(),
        [
            (10, Ok(()), 1),
            (0, Err(Error::InvalidValue), 1),
            (20, Err(FLUSH_STATUS), 1),
            (30, Err(FLUSH_STATUS), 1)
        ]
    );
    while r.state() != CtxState::Idle {
        r.progress();
        assert!(r.pass.get() < 100, "the context did not reach Idle");
    }
    r.ctx.as_ctx().start().unwrap();
    alloc(&r.ctx, 40).submit().unwrap();
    r.progress();
    assert_eq!(r.seen.borrow().last(), Some(&(40, Ok(()), r.pass.get())), "a restarted context works");
}

#[test]
fn try_submit_refuses_what_the_engine_would_fail_and_the_set_conf_maximum_holds() {
    let r = rig();
    let bad = alloc(&r.ctx, 0);
    let refused = bad.try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue);
    r.progress();
    assert!(r.seen.borrow().is_empty(), "a refused task never reaches the engine");
    assert_eq!(r.state(), CtxState::Running, "a refusal is no failure");
    drop(refused);
    r.ctx.as_ctx().stop().unwrap();
    let nothing = |_: Task<Job>, _: Data, _: Data| {};
    assert_eq!(r.ctx.set_conf(nothing, nothing, 9, 8), Err(Error::InvalidValue));
    assert_eq!(
        r.ctx.set_conf(nothing, nothing, 0, 8),
        Ok(()),
        "0 tasks: a pool of none, as DOCA's libraries accept"
    );
    assert_eq!(r.ctx.set_conf(nothing, nothing, 8, 8), Ok(()));
}
