//! `doca_core::queue` on its own, through a small library built on the public plug-in
//! interface: each task "costs" its value in bytes of the pass's budget and fails when its
//! value is 0. Proves the budget (a task larger than what is left waits for the next pass),
//! that tasks submitted by a pass's callbacks wait for the next pass, and the fatal-failure
//! rule (Stopping at once, the rest SHUTDOWN, Idle once freed, a restart works).

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use doca_core::clock::Now;
use doca_core::queue::{Step, TaskQueue, FLUSH_STATUS};
use doca_core::{
    Ctx, CtxCell, CtxCore, CtxOps, CtxState, Data, Error, Pe, Result, Started, Task, TaskId, TaskLib,
    TaskPayload, TaskPool,
};

#[derive(Default)]
struct Job {
    cost: usize,
    /// Bytes of the cost paid so far.
    paid: usize,
}

struct Ops {
    pool: TaskPool<Job>,
    queue: TaskQueue<TaskId>,
}

const BUDGET: usize = 100;

impl Ops {
    fn step(&self, id: TaskId, budget: usize) -> Step {
        let left = self.pool.with_payload(id, |p| p.cost - p.paid).unwrap();
        if self.pool.with_payload(id, |p| p.cost).unwrap() == 0 {
            self.pool.finish(id, Err(Error::InvalidValue));
            return Step::Failed(Error::InvalidValue);
        }
        if left > budget {
            self.pool.with_payload(id, |p| p.paid += budget);
            return Step::Partial(budget);
        }
        self.pool.finish(id, Ok(()));
        Step::Done(left)
    }
}

impl CtxOps for Ops {
    fn kind(&self) -> &'static str {
        "queue-test"
    }
    fn start(&self, _core: &CtxCore) -> Result<Started> {
        self.pool.prepare(Job::default);
        self.queue.reset(self.pool.capacity() as usize);
        Ok(Started::Running)
    }
    fn stop(&self, _core: &CtxCore) {}
    fn needs_poll(&self, _core: &CtxCore) -> bool {
        !self.queue.is_empty()
    }
    fn progress(&self, core: &CtxCore, _now: &Now<'_>) -> bool {
        self.queue.progress(
            core,
            BUDGET,
            "a test task failed",
            |id, budget| self.step(id, budget),
            |id| {
                self.pool.finish(id, Err(FLUSH_STATUS));
            },
        )
    }
}

impl TaskPayload for Job {
    type Lib = Ops;
}

impl TaskLib<Job> for Ops {
    fn pool(&self) -> &TaskPool<Job> {
        &self.pool
    }
    fn submit(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        self.queue.push(task);
        Ok(())
    }
}

/// (cost, status, pass it completed in)
type Seen = Rc<RefCell<Vec<(usize, Result<()>, u32)>>>;

/// The context, and the costs of the tasks its next completion callback submits.
type Again = (Weak<CtxCell<Ops>>, Rc<RefCell<Vec<usize>>>);

struct Rig {
    pe: Pe,
    ctx: Rc<CtxCell<Ops>>,
    seen: Seen,
    pass: Rc<Cell<u32>>,
    /// Tasks to submit from the next completion callback.
    resubmit: Rc<RefCell<Vec<usize>>>,
}

fn rig() -> Rig {
    let pe = Pe::create().unwrap();
    let ctx = CtxCell::new(|w: &Weak<CtxCell<Ops>>| Ops {
        pool: TaskPool::new(w.clone()),
        queue: TaskQueue::new(),
    });
    pe.connect_ctx(&Ctx::from(ctx.clone())).unwrap();
    let seen: Seen = Rc::default();
    let pass = Rc::new(Cell::new(0));
    let resubmit: Rc<RefCell<Vec<usize>>> = Rc::default();
    let record = |seen: &Seen, pass: &Rc<Cell<u32>>, again: Option<Again>| {
        let (seen, pass) = (seen.clone(), pass.clone());
        Box::new(move |t: Task<Job>, _: Data, _: Data| {
            seen.borrow_mut().push((t.with_payload(|p| p.cost), t.status(), pass.get()));
            drop(t);
            if let Some((ctx, costs)) = &again {
                let ctx = ctx.upgrade().unwrap();
                for cost in costs.borrow_mut().drain(..) {
                    alloc(&ctx, cost).submit().unwrap();
                }
            }
        })
    };
    ctx.ops()
        .pool
        .set_conf(
            ctx.core(),
            record(&seen, &pass, Some((Rc::downgrade(&ctx), resubmit.clone()))),
            record(&seen, &pass, None),
            8,
        )
        .unwrap();
    Ctx::from(ctx.clone()).start().unwrap();
    Rig { pe, ctx, seen, pass, resubmit }
}

fn alloc(ctx: &CtxCell<Ops>, cost: usize) -> Task<Job> {
    ctx.ops()
        .pool
        .alloc(|p| {
            *p = Job { cost, paid: 0 };
            Ok(())
        })
        .unwrap()
}

impl Rig {
    fn progress(&self) {
        self.pass.set(self.pass.get() + 1);
        self.pe.progress();
    }
    fn state(&self) -> CtxState {
        Ctx::from(self.ctx.clone()).state()
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
    Ctx::from(r.ctx.clone()).start().unwrap();
    alloc(&r.ctx, 40).submit().unwrap();
    r.progress();
    assert_eq!(r.seen.borrow().last(), Some(&(40, Ok(()), r.pass.get())), "a restarted context works");
}
