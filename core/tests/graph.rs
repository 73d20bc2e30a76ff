//! Graphs over a library context written here on core's public plug-in interface only (the
//! way any library plugs in), which refuses submissions with `AGAIN` while "overloaded": an
//! instance does not fail on an overloaded context, its node is tried again at the next pass
//! (doca_graph.h: "A graph instance shall not fail if a context is overloaded").

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::{Rc, Weak};

use doca_core::clock::Now;
use doca_core::graph::{Graph, GraphInstance};
use doca_core::{
    Ctx, CtxCell, CtxCore, CtxOps, Data, Error, Pe, Result, Started, Task, TaskId, TaskLib, TaskPayload,
    TaskPool,
};

/// The payload of a task of the busy library (nothing).
#[derive(Default)]
struct Job;

/// A library whose submit answers `AGAIN` the first `refusals` times, then queues tasks that
/// complete at its next poll.
struct BusyOps {
    pool: TaskPool<Job>,
    queue: RefCell<VecDeque<TaskId>>,
    refusals: Cell<u32>,
    refused: Cell<u32>,
}

impl TaskPayload for Job {
    type Lib = BusyOps;
}

impl TaskLib<Job> for BusyOps {
    fn pool(&self) -> &TaskPool<Job> {
        &self.pool
    }

    fn submit(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        if self.refusals.get() > 0 {
            self.refusals.set(self.refusals.get() - 1);
            self.refused.set(self.refused.get() + 1);
            return Err(Error::Again);
        }
        self.queue.borrow_mut().push_back(task);
        Ok(())
    }
}

impl CtxOps for BusyOps {
    fn kind(&self) -> &'static str {
        "busy"
    }

    fn start(&self, _core: &CtxCore) -> Result<Started> {
        self.pool.prepare(Job::default);
        Ok(Started::Running)
    }

    fn stop(&self, _core: &CtxCore) {}

    fn progress(&self, _core: &CtxCore, _now: &Now<'_>) -> bool {
        let n = self.queue.borrow().len();
        for _ in 0..n {
            let Some(id) = self.queue.borrow_mut().pop_front() else { break };
            self.pool.finish(id, Ok(()));
        }
        n > 0
    }
}

fn busy(pe: &Pe, refusals: u32, own: &Rc<Cell<u32>>) -> Rc<CtxCell<BusyOps>> {
    let cell = CtxCell::new(|weak: &Weak<CtxCell<BusyOps>>| BusyOps {
        pool: TaskPool::new(weak.clone()),
        queue: RefCell::new(VecDeque::new()),
        refusals: Cell::new(refusals),
        refused: Cell::new(0),
    });
    let ctx = Ctx::from(cell.clone());
    pe.connect_ctx(&ctx).unwrap();
    let (a, b) = (own.clone(), own.clone());
    cell.ops()
        .pool
        .set_conf(
            cell.core(),
            Box::new(move |_: Task<Job>, _, _| a.set(a.get() + 1)),
            Box::new(move |_: Task<Job>, _, _| b.set(b.get() + 1)),
            2,
        )
        .unwrap();
    ctx.start().unwrap();
    cell
}

/// Configures `graph` for one instance whose completions are recorded (true: completed,
/// false: failed), and starts it.
fn start_recording(graph: &Graph) -> Rc<RefCell<Vec<bool>>> {
    let reports = Rc::new(RefCell::new(Vec::new()));
    let (ok, bad) = (reports.clone(), reports.clone());
    graph
        .set_conf(
            move |_: &GraphInstance, _, _| ok.borrow_mut().push(true),
            move |_: &GraphInstance, _, _| bad.borrow_mut().push(false),
            1,
        )
        .unwrap();
    graph.start().unwrap();
    reports
}

#[test]
fn an_overloaded_context_delays_a_node_and_does_not_fail_the_instance() {
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0));
    let lib = busy(&pe, 3, &own);
    let graph = Graph::create(&pe).unwrap();
    let node = graph.node_create_from_ctx(&Ctx::from(lib.clone())).unwrap();
    let reports = start_recording(&graph);
    let task = lib.ops().pool.alloc(|_| Ok(())).unwrap();
    let inst = graph.instance_create().unwrap();
    inst.set_ctx_node_data(node, &task).unwrap();
    inst.set_user_data(Data::from_u64(1)).unwrap();
    inst.submit().unwrap();
    for _ in 0..100 {
        if !reports.borrow().is_empty() {
            break;
        }
        pe.progress();
    }
    assert_eq!(lib.ops().refused.get(), 3, "the node was refused three times (AGAIN)");
    assert_eq!(*reports.borrow(), vec![true], "and then ran: the instance completed");
    assert_eq!(own.get(), 0, "the library's own callbacks never ran");
    assert_eq!(task.status(), Ok(()));
}

#[test]
fn a_user_node_that_panics_fails_its_instance_which_completes_and_runs_again() {
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0));
    let lib = busy(&pe, 0, &own);
    let graph = Graph::create(&pe).unwrap();
    let calls = Rc::new(Cell::new(0u32));
    let c = calls.clone();
    let node = graph
        .node_create_from_user(move |_| {
            c.set(c.get() + 1);
            if c.get() == 1 {
                panic!("the application's node fails on its first run");
            }
            Ok(())
        })
        .unwrap();
    // The user node, then a context node (a graph needs one).
    let copy = graph.node_create_from_ctx(&Ctx::from(lib.clone())).unwrap();
    graph.add_dependency(node, copy).unwrap();
    let reports = start_recording(&graph);
    let task = lib.ops().pool.alloc(|_| Ok(())).unwrap();
    let inst = graph.instance_create().unwrap();
    inst.set_user_node_data(node, Data::from_u64(7)).unwrap();
    inst.set_ctx_node_data(copy, &task).unwrap();
    inst.submit().unwrap();
    let spin = |n: usize| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for _ in 0..n {
                pe.progress();
            }
        }))
        .is_err()
    };
    assert!(spin(4), "the node's panic reaches the caller of progress");
    assert!(!spin(8), "nothing panics afterwards");
    assert_eq!(*reports.borrow(), vec![false], "the instance completed, through the error callback");
    // The instance is idle again: submitted once more, its node runs and it completes.
    inst.submit().unwrap();
    assert!(!spin(8));
    assert_eq!(*reports.borrow(), vec![false, true]);
    assert_eq!(calls.get(), 2);
    assert_eq!(task.status(), Ok(()), "the context node ran the second time");
}
