//! `doca_graph.h` (DOCA Core's graphs, the same 19 functions in 2.5 and 2.6): the documented
//! codes of each function, and how instances run — nodes after all their parents, independent
//! nodes together, failures, resubmission, sub-graphs. Loopback contexts (core's own small
//! library context) give tasks whose completion the test controls with a manual clock; the
//! shape of NVIDIA's graph sample (DMA nodes and a user node) is in `graph_sample_*`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use doca_buf::Inventory;
use doca_core::clock::ManualClock;
use doca_core::graph::{Graph, GraphInstance, Node};
use doca_core::loopback::{EchoTask, Loopback};
use doca_core::{open_device_with_pci, CtxState, Data, Error, Pe, Started};
use doca_dma::{Dma, MemcpyTask};
use doca_mmap::{AccessFlags, Mmap};

use crate::support::until;

/// What a graph's callbacks saw: (instance user data, completed successfully).
type Reports = Rc<RefCell<Vec<(u64, bool)>>>;

/// A running loopback context whose own task callbacks count into `own`.
fn lb(pe: &Pe, tasks: u32, own: &Rc<Cell<u32>>) -> Loopback {
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).unwrap();
    let (a, b) = (own.clone(), own.clone());
    lb.set_conf(
        move |_: EchoTask, _, _| a.set(a.get() + 1),
        move |_: EchoTask, _, _| b.set(b.get() + 1),
        tasks,
    )
    .unwrap();
    lb.as_ctx().start().unwrap();
    lb
}

/// `graph.set_conf` with callbacks recording into the returned list.
fn conf(graph: &Graph, num_instances: u32) -> Reports {
    let reports: Reports = Rc::default();
    let (ok, bad) = (reports.clone(), reports.clone());
    graph
        .set_conf(
            move |_: &GraphInstance, ud, _| ok.borrow_mut().push((ud.as_u64(), true)),
            move |_: &GraphInstance, ud, _| bad.borrow_mut().push((ud.as_u64(), false)),
            num_instances,
        )
        .unwrap();
    reports
}

/// A user node pushing `name` into `log` when it runs.
fn logging_node(graph: &Graph, log: &Rc<RefCell<Vec<&'static str>>>, name: &'static str) -> Node {
    let log = log.clone();
    graph
        .node_create_from_user(move |_| {
            log.borrow_mut().push(name);
            Ok(())
        })
        .unwrap()
}

fn engine() -> (Pe, Rc<ManualClock>) {
    let clock = Rc::new(ManualClock::new());
    (Pe::create_with_clock(clock.clone()).unwrap(), clock)
}

#[test]
fn doca_graph_create_binds_the_graph_to_its_engine() {
    let pe = Pe::create().unwrap();
    let graph = Graph::create(&pe).unwrap();
    // The graph runs in its engine's progress: the engine cannot go before it.
    let pe = match pe.destroy() {
        Err(r) => {
            assert_eq!(r.error, Error::InUse);
            r.value
        }
        Ok(()) => panic!("an engine with a graph must be IN_USE"),
    };
    graph.destroy().map_err(|r| r.error).unwrap();
    pe.destroy().map_err(|r| r.error).unwrap();
}

#[test]
fn doca_graph_set_conf_counts_instances_and_needs_a_stopped_graph() {
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 2, &own);
    let graph = Graph::create(&pe).unwrap();
    assert_eq!(graph.set_conf(|_, _, _| {}, |_, _, _| {}, 0), Err(Error::InvalidValue));
    graph.node_create_from_ctx(&l.as_ctx()).unwrap();
    assert_eq!(graph.start(), Err(Error::BadState), "start before set_conf");
    conf(&graph, 2);
    graph.start().unwrap();
    assert_eq!(graph.set_conf(|_, _, _| {}, |_, _, _| {}, 4), Err(Error::BadState));
    let a = graph.instance_create().unwrap();
    let b = graph.instance_create().unwrap();
    assert_eq!(graph.instance_create().err(), Some(Error::NoMemory), "num_instances is the limit");
    drop(a);
    let c = graph.instance_create().unwrap();
    drop((b, c));
    graph.stop().unwrap();
}

#[test]
fn doca_graph_set_user_data_only_while_stopped_and_doca_graph_get_user_data() {
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 1, &own);
    let graph = Graph::create(&pe).unwrap();
    graph.set_user_data(Data::from_u64(42)).unwrap();
    assert_eq!(graph.user_data().as_u64(), 42);
    graph.node_create_from_ctx(&l.as_ctx()).unwrap();
    conf(&graph, 1);
    graph.start().unwrap();
    assert_eq!(graph.set_user_data(Data::from_u64(7)), Err(Error::BadState));
    assert_eq!(graph.user_data().as_u64(), 42);
}

#[test]
fn doca_graph_start_needs_a_context_node_and_every_context_running() {
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0));
    let graph = Graph::create(&pe).unwrap();
    conf(&graph, 1);
    graph.node_create_from_user(|_| Ok(())).unwrap();
    assert_eq!(graph.start(), Err(Error::BadState), "no context node");

    let idle = Loopback::create(Started::Running);
    pe.connect_ctx(&idle.as_ctx()).unwrap();
    idle.set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
    graph.node_create_from_ctx(&idle.as_ctx()).unwrap();
    assert_eq!(graph.start(), Err(Error::NotPermitted), "a node's context is idle");
    idle.as_ctx().start().unwrap();
    graph.start().unwrap();
    assert_eq!(graph.start(), Ok(()), "already started: success, as DOCA's library answers");
    let _ = own;
}

#[test]
fn doca_graph_start_refuses_a_context_of_another_engine() {
    let (pe, other) = (Pe::create().unwrap(), Pe::create().unwrap());
    let graph = Graph::create(&pe).unwrap();
    conf(&graph, 1);
    let elsewhere = Loopback::create(Started::Running);
    other.connect_ctx(&elsewhere.as_ctx()).unwrap();
    elsewhere.set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
    elsewhere.as_ctx().start().unwrap();
    graph.node_create_from_ctx(&elsewhere.as_ctx()).unwrap();
    assert_eq!(graph.start(), Err(Error::NotPermitted), "the node's context runs on another engine");
}

#[test]
fn doca_graph_node_create_from_ctx_and_from_user_only_while_stopped() {
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 1, &own);
    let graph = Graph::create(&pe).unwrap();
    conf(&graph, 1);
    let n0 = graph.node_create_from_ctx(&l.as_ctx()).unwrap();
    let n1 = graph.node_create_from_user(|_| Ok(())).unwrap();
    assert_eq!((n0.index(), n1.index()), (0, 1));
    graph.start().unwrap();
    assert_eq!(graph.node_create_from_ctx(&l.as_ctx()).err(), Some(Error::BadState));
    assert_eq!(graph.node_create_from_user(|_| Ok(())).err(), Some(Error::BadState));
    graph.stop().unwrap();
    graph.node_create_from_user(|_| Ok(())).unwrap();
}

#[test]
fn doca_graph_add_dependency_refuses_a_circle_a_foreign_node_and_a_started_graph() {
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 1, &own);
    let graph = Graph::create(&pe).unwrap();
    let other = Graph::create(&pe).unwrap();
    conf(&graph, 1);
    let a = graph.node_create_from_ctx(&l.as_ctx()).unwrap();
    let b = graph.node_create_from_user(|_| Ok(())).unwrap();
    let c = graph.node_create_from_user(|_| Ok(())).unwrap();
    let foreign = other.node_create_from_user(|_| Ok(())).unwrap();
    graph.add_dependency(a, b).unwrap();
    graph.add_dependency(b, c).unwrap();
    assert_eq!(graph.add_dependency(a, b), Err(Error::NotPermitted), "again: DOCA's library refuses it");
    assert_eq!(graph.add_dependency(c, a), Err(Error::NotPermitted), "a -> b -> c -> a");
    assert_eq!(graph.add_dependency(b, b), Err(Error::NotPermitted), "a node on itself");
    assert_eq!(graph.add_dependency(a, foreign), Err(Error::InvalidValue));
    graph.start().unwrap();
    assert_eq!(graph.add_dependency(a, c), Err(Error::BadState));
}

#[test]
fn doca_graph_node_create_from_graph_refuses_a_circle_and_an_unstarted_sub_graph() {
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 2, &own);
    let a = Graph::create(&pe).unwrap();
    let b = Graph::create(&pe).unwrap();
    conf(&a, 1);
    conf(&b, 1);
    a.node_create_from_ctx(&l.as_ctx()).unwrap();
    b.node_create_from_ctx(&l.as_ctx()).unwrap();
    assert_eq!(a.node_create_from_graph(&a).err(), Some(Error::NotPermitted), "a graph in itself");
    assert_eq!(b.node_create_from_graph(&a).err(), Some(Error::BadState), "a is not started");
    a.start().unwrap();
    b.node_create_from_graph(&a).unwrap();
    b.start().unwrap();
    // b holds a: a stopped and given b as a node would close the circle a -> b -> a.
    a.stop().unwrap();
    assert_eq!(a.node_create_from_graph(&b).err(), Some(Error::NotPermitted));
}

#[test]
fn doca_graph_stop_is_in_use_while_instances_exist() {
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 1, &own);
    let graph = Graph::create(&pe).unwrap();
    conf(&graph, 1);
    graph.node_create_from_ctx(&l.as_ctx()).unwrap();
    graph.stop().unwrap(); // stopped already: success
    graph.start().unwrap();
    let inst = graph.instance_create().unwrap();
    assert_eq!(graph.stop(), Err(Error::InUse));
    let graph = match graph.destroy() {
        Err(r) => {
            assert_eq!(r.error, Error::BadState, "destroy needs a stopped graph");
            r.value
        }
        Ok(()) => panic!("destroying a started graph must fail"),
    };
    inst.destroy().map_err(|r| r.error).unwrap();
    graph.stop().unwrap();
    graph.destroy().map_err(|r| r.error).unwrap();
}

#[test]
fn doca_graph_instance_create_needs_a_started_graph() {
    let pe = Pe::create().unwrap();
    let graph = Graph::create(&pe).unwrap();
    conf(&graph, 1);
    assert_eq!(graph.instance_create().err(), Some(Error::BadState));
}

/// A started graph `a (ctx) -> u (user)` on one loopback context.
struct Chain {
    pe: Pe,
    clock: Rc<ManualClock>,
    l: Loopback,
    graph: Graph,
    a: Node,
    u: Node,
    own: Rc<Cell<u32>>,
    reports: Reports,
    ran: Rc<Cell<u32>>,
}

impl Chain {
    /// A new instance running `task` on `a` and the user node with `cookie` (0: the node
    /// succeeds, else it fails with `IO_FAILED`), submitted.
    fn submit(&self, task: &EchoTask, cookie: u64) -> GraphInstance {
        let inst = self.graph.instance_create().unwrap();
        inst.set_ctx_node_data(self.a, task).unwrap();
        inst.set_user_node_data(self.u, Data::from_u64(cookie)).unwrap();
        inst.submit().unwrap();
        inst
    }
}

fn chain(num_instances: u32) -> Chain {
    let (pe, clock) = engine();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 4, &own);
    let graph = Graph::create(&pe).unwrap();
    let a = graph.node_create_from_ctx(&l.as_ctx()).unwrap();
    let ran = Rc::new(Cell::new(0));
    let r = ran.clone();
    let u = graph
        .node_create_from_user(move |cookie| {
            r.set(r.get() + 1);
            match cookie.as_u64() {
                0 => Ok(()),
                _ => Err(Error::IoFailed),
            }
        })
        .unwrap();
    graph.add_dependency(a, u).unwrap();
    let reports = conf(&graph, num_instances);
    graph.start().unwrap();
    Chain { pe, clock, l, graph, a, u, own, reports, ran }
}

#[test]
fn doca_graph_instance_submit_runs_nodes_after_their_parents_and_not_the_contexts_callbacks() {
    let c = chain(1);
    let task = c.l.alloc_task(1).unwrap();
    task.set_delay(Duration::from_secs(60));
    let inst = c.graph.instance_create().unwrap();
    inst.set_ctx_node_data(c.a, &task).unwrap();
    inst.set_user_node_data(c.u, Data::from_u64(0)).unwrap();
    inst.set_user_data(Data::from_u64(5)).unwrap();
    inst.submit().unwrap();
    for _ in 0..10 {
        c.pe.progress();
    }
    assert_eq!(c.ran.get(), 0, "the user node waits for its parent's task");
    assert!(c.reports.borrow().is_empty());
    c.clock.advance(Duration::from_secs(60));
    until(&c.pe, || !c.reports.borrow().is_empty());
    assert_eq!(c.ran.get(), 1);
    assert_eq!(*c.reports.borrow(), vec![(5, true)]);
    assert_eq!(c.own.get(), 0, "a task run by a graph does not reach its context's callbacks");
    assert_eq!(task.status(), Ok(()));
    assert_eq!(c.l.as_ctx().num_inflight_tasks(), 0);
}

/// A task the instance runs after a user node: held for the instance from its submission, so
/// the application's own submit meanwhile is `IN_USE` (it would otherwise run the task twice:
/// once for the application, once when the graph reaches its node).
#[test]
fn doca_graph_instance_holds_its_tasks_until_it_is_done() {
    let (pe, _clock) = engine();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 4, &own);
    let graph = Graph::create(&pe).unwrap();
    let u = graph.node_create_from_user(|_| Err(Error::IoFailed)).unwrap();
    let a = graph.node_create_from_ctx(&l.as_ctx()).unwrap();
    graph.add_dependency(u, a).unwrap();
    let reports = conf(&graph, 1);
    graph.start().unwrap();
    let task = l.alloc_task(1).unwrap();
    let inst = graph.instance_create().unwrap();
    inst.set_ctx_node_data(a, &task).unwrap();
    inst.set_user_node_data(u, Data::from_u64(0)).unwrap();
    inst.submit().unwrap();
    let task = match task.submit() {
        Err(r) => {
            assert_eq!(r.error, Error::InUse, "the instance has not reached the task's node yet");
            r.value
        }
        Ok(()) => panic!("a task a submitted instance will run cannot be submitted by the application"),
    };
    until(&pe, || !reports.borrow().is_empty());
    assert_eq!(*reports.borrow(), vec![(0, false)], "the user node failed: the task never ran");
    assert_eq!(own.get(), 0);
    // The instance is done: the task is the application's again.
    task.submit().unwrap();
    until(&pe, || own.get() == 1);
}

#[test]
fn doca_graph_instance_submit_twice_is_in_use_and_an_instance_resubmits_after_completion() {
    let c = chain(1);
    let task = c.l.alloc_task(1).unwrap();
    task.set_delay(Duration::from_secs(1));
    let inst = c.submit(&task, 0);
    assert_eq!(inst.submit(), Err(Error::InUse), "already submitted");
    until(&c.pe, || c.l.as_ctx().num_inflight_tasks() == 1);
    assert_eq!(inst.set_user_data(Data::from_u64(1)), Err(Error::InUse));
    assert_eq!(inst.set_user_node_data(c.u, Data::from_u64(0)), Err(Error::BadState));
    // The application still holds the task; submitting it itself is refused while the graph runs it.
    let task = match task.submit() {
        Err(r) => {
            assert_eq!(r.error, Error::InUse);
            r.value
        }
        Ok(()) => panic!("a task a graph runs cannot be submitted again"),
    };
    c.clock.advance(Duration::from_secs(1));
    until(&c.pe, || c.reports.borrow().len() == 1);
    task.set_delay(Duration::ZERO);
    // Completed: submit it again, unchanged.
    inst.submit().unwrap();
    until(&c.pe, || c.reports.borrow().len() == 2);
    assert_eq!(c.ran.get(), 2);
    assert_eq!(*c.reports.borrow(), vec![(0, true), (0, true)]);
    assert_eq!(c.own.get(), 0);
}

#[test]
fn doca_graph_instance_submit_from_the_completion_callback() {
    let (pe, _clock) = engine();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 1, &own);
    let graph = Graph::create(&pe).unwrap();
    let a = graph.node_create_from_ctx(&l.as_ctx()).unwrap();
    let runs = Rc::new(Cell::new(0u32));
    let r = runs.clone();
    graph
        .set_conf(
            move |inst: &GraphInstance, _, _| {
                r.set(r.get() + 1);
                if r.get() < 5 {
                    inst.submit().unwrap();
                }
            },
            |_, _, _| panic!("no node fails"),
            1,
        )
        .unwrap();
    graph.start().unwrap();
    let task = l.alloc_task(3).unwrap();
    let inst = graph.instance_create().unwrap();
    inst.set_ctx_node_data(a, &task).unwrap();
    inst.submit().unwrap();
    until(&pe, || runs.get() == 5);
    assert!(!inst.is_submitted());
    assert_eq!(own.get(), 0);
}

#[test]
fn doca_graph_instance_destroy_is_in_use_while_submitted() {
    let c = chain(1);
    let task = c.l.alloc_task(1).unwrap();
    let inst = c.submit(&task, 0);
    let inst = match inst.destroy() {
        Err(r) => {
            assert_eq!(r.error, Error::InUse);
            r.value
        }
        Ok(()) => panic!("destroying a submitted instance must be IN_USE"),
    };
    assert_eq!(c.graph.stop(), Err(Error::InUse), "stop with a live (submitted) instance");
    until(&c.pe, || c.reports.borrow().len() == 1);
    inst.destroy().map_err(|r| r.error).unwrap();
    c.graph.stop().unwrap();
}

#[test]
fn doca_graph_instance_submit_refuses_missing_data_a_freed_task_and_a_stopped_context() {
    let c = chain(1);
    let inst = c.graph.instance_create().unwrap();
    inst.set_user_node_data(c.u, Data::from_u64(0)).unwrap();
    assert_eq!(inst.submit(), Err(Error::InvalidValue), "the context node has no task");
    let task = c.l.alloc_task(1).unwrap();
    inst.set_ctx_node_data(c.a, &task).unwrap();
    drop(task); // doca_task_free before the instance: the graph must not run a freed task
    assert_eq!(inst.submit(), Err(Error::BadState));
    let task = c.l.alloc_task(2).unwrap();
    inst.set_ctx_node_data(c.a, &task).unwrap();
    drop(task);
    c.l.as_ctx().stop().unwrap();
    assert_eq!(c.l.as_ctx().state(), CtxState::Idle);
    assert_eq!(inst.submit(), Err(Error::BadState), "the node's context is not running");
    assert!(c.reports.borrow().is_empty());
}

#[test]
fn doca_graph_instance_set_ctx_node_data_checks_node_kind_context_and_graph() {
    let c = chain(1);
    let other_lb = lb(&c.pe, 1, &c.own);
    let other = Graph::create(&c.pe).unwrap();
    let foreign = other.node_create_from_ctx(&c.l.as_ctx()).unwrap();
    let inst = c.graph.instance_create().unwrap();
    let task = c.l.alloc_task(1).unwrap();
    let wrong_ctx = other_lb.alloc_task(1).unwrap();
    assert_eq!(inst.set_ctx_node_data(c.a, &wrong_ctx), Err(Error::NotPermitted), "another context");
    assert_eq!(inst.set_ctx_node_data(c.u, &task), Err(Error::NotPermitted), "a user node");
    assert_eq!(inst.set_ctx_node_data(foreign, &task), Err(Error::NotPermitted), "another graph");
    assert_eq!(inst.set_user_node_data(c.a, Data::NONE), Err(Error::NotPermitted), "a context node");
    inst.set_ctx_node_data(c.a, &task).unwrap();
}

#[test]
fn doca_graph_instance_get_user_data_is_set_per_instance() {
    let c = chain(2);
    let t1 = c.l.alloc_task(1).unwrap();
    let t2 = c.l.alloc_task(2).unwrap();
    let i1 = c.graph.instance_create().unwrap();
    let i2 = c.graph.instance_create().unwrap();
    for (inst, task, ud) in [(&i1, &t1, 11), (&i2, &t2, 22)] {
        inst.set_ctx_node_data(c.a, task).unwrap();
        inst.set_user_node_data(c.u, Data::from_u64(0)).unwrap();
        inst.set_user_data(Data::from_u64(ud)).unwrap();
    }
    assert_eq!((i1.user_data().as_u64(), i2.user_data().as_u64()), (11, 22));
    i1.submit().unwrap();
    i2.submit().unwrap();
    until(&c.pe, || c.reports.borrow().len() == 2);
    let mut seen = c.reports.borrow().clone();
    seen.sort();
    assert_eq!(seen, vec![(11, true), (22, true)]);
}

#[test]
fn doca_graph_instance_fails_once_runs_no_further_node_and_waits_for_nodes_in_flight() {
    // a (fails at once) and b (slow) are roots; c depends on both.
    let (pe, clock) = engine();
    let own = Rc::new(Cell::new(0));
    let la = lb(&pe, 1, &own);
    let lb_ = lb(&pe, 1, &own);
    let graph = Graph::create(&pe).unwrap();
    let a = graph.node_create_from_ctx(&la.as_ctx()).unwrap();
    let b = graph.node_create_from_ctx(&lb_.as_ctx()).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    let c = logging_node(&graph, &log, "c");
    graph.add_dependency(a, c).unwrap();
    graph.add_dependency(b, c).unwrap();
    let reports = conf(&graph, 1);
    graph.start().unwrap();
    let ta = la.alloc_task(1).unwrap();
    ta.set_fail(Some(Error::IoFailed));
    let tb = lb_.alloc_task(2).unwrap();
    tb.set_delay(Duration::from_secs(1));
    let inst = graph.instance_create().unwrap();
    inst.set_ctx_node_data(a, &ta).unwrap();
    inst.set_ctx_node_data(b, &tb).unwrap();
    inst.set_user_node_data(c, Data::NONE).unwrap();
    inst.submit().unwrap();
    for _ in 0..10 {
        pe.progress();
    }
    assert_eq!(ta.status(), Err(Error::IoFailed));
    assert!(reports.borrow().is_empty(), "b is still in flight: no report yet");
    clock.advance(Duration::from_secs(1));
    until(&pe, || !reports.borrow().is_empty());
    for _ in 0..10 {
        pe.progress();
    }
    assert_eq!(*reports.borrow(), vec![(0, false)], "the error callback, once");
    assert!(log.borrow().is_empty(), "c never runs");
    assert_eq!(own.get(), 0);
    // The failure is not sticky: fixed, the instance runs again.
    ta.set_fail(None);
    tb.set_delay(Duration::ZERO);
    inst.submit().unwrap();
    until(&pe, || reports.borrow().len() == 2);
    assert_eq!(reports.borrow()[1], (0, true));
    assert_eq!(*log.borrow(), vec!["c"]);
}

#[test]
fn doca_graph_user_node_error_fails_the_instance() {
    let c = chain(1);
    let task = c.l.alloc_task(1).unwrap();
    let _inst = c.submit(&task, 1); // the callback returns IO_FAILED
    until(&c.pe, || !c.reports.borrow().is_empty());
    assert_eq!(*c.reports.borrow(), vec![(0, false)]);
}

#[test]
fn doca_graph_a_context_stopped_mid_run_fails_the_instance() {
    let c = chain(1);
    let task = c.l.alloc_task(1).unwrap();
    task.set_delay(Duration::from_secs(3600));
    let _inst = c.submit(&task, 0);
    until(&c.pe, || c.l.as_ctx().num_inflight_tasks() == 1);
    assert_eq!(c.l.as_ctx().stop(), Err(Error::InProgress), "a task is allocated and in flight");
    until(&c.pe, || !c.reports.borrow().is_empty());
    assert_eq!(*c.reports.borrow(), vec![(0, false)]);
    assert_eq!(task.status(), Err(doca_core::loopback::FLUSH_STATUS));
    assert_eq!(c.ran.get(), 0);
    assert_eq!(c.own.get(), 0, "the flushed task went to the graph too");
    drop(task);
    until(&c.pe, || c.l.as_ctx().state() == CtxState::Idle);
}

#[test]
fn doca_graph_independent_nodes_run_together_and_a_diamond_joins() {
    // Diamond: a -> (b on ctx 1, c on ctx 2) -> d. b and c are in flight at the same time.
    let (pe, clock) = engine();
    let own = Rc::new(Cell::new(0));
    let l1 = lb(&pe, 1, &own);
    let l2 = lb(&pe, 1, &own);
    let graph = Graph::create(&pe).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    let a = logging_node(&graph, &log, "a");
    let b = graph.node_create_from_ctx(&l1.as_ctx()).unwrap();
    let c = graph.node_create_from_ctx(&l2.as_ctx()).unwrap();
    let d = logging_node(&graph, &log, "d");
    for (from, to) in [(a, b), (a, c), (b, d), (c, d)] {
        graph.add_dependency(from, to).unwrap();
    }
    let reports = conf(&graph, 1);
    graph.start().unwrap();
    let (tb, tc) = (l1.alloc_task(1).unwrap(), l2.alloc_task(2).unwrap());
    tb.set_delay(Duration::from_secs(1));
    tc.set_delay(Duration::from_secs(2));
    let inst = graph.instance_create().unwrap();
    inst.set_user_node_data(a, Data::NONE).unwrap();
    inst.set_ctx_node_data(b, &tb).unwrap();
    inst.set_ctx_node_data(c, &tc).unwrap();
    inst.set_user_node_data(d, Data::NONE).unwrap();
    inst.submit().unwrap();
    until(&pe, || pe.num_inflight_tasks() == 2);
    assert_eq!((l1.as_ctx().num_inflight_tasks(), l2.as_ctx().num_inflight_tasks()), (1, 1));
    clock.advance(Duration::from_secs(1));
    until(&pe, || pe.num_inflight_tasks() == 1);
    for _ in 0..10 {
        pe.progress();
    }
    assert_eq!(*log.borrow(), vec!["a"], "d waits for c, its last parent");
    clock.advance(Duration::from_secs(1));
    until(&pe, || !reports.borrow().is_empty());
    assert_eq!(*log.borrow(), vec!["a", "d"]);
    assert_eq!(*reports.borrow(), vec![(0, true)]);
}

#[test]
fn doca_graph_ready_nodes_run_in_creation_then_dependency_order() {
    let (pe, _clock) = engine();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 1, &own);
    let graph = Graph::create(&pe).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    let r2 = logging_node(&graph, &log, "r2");
    let r1 = logging_node(&graph, &log, "r1");
    let t = graph.node_create_from_ctx(&l.as_ctx()).unwrap();
    let y = logging_node(&graph, &log, "y");
    let x = logging_node(&graph, &log, "x");
    graph.add_dependency(t, x).unwrap();
    graph.add_dependency(t, y).unwrap();
    let reports = conf(&graph, 1);
    graph.start().unwrap();
    let task = l.alloc_task(1).unwrap();
    let inst = graph.instance_create().unwrap();
    for n in [r1, r2, x, y] {
        inst.set_user_node_data(n, Data::NONE).unwrap();
    }
    inst.set_ctx_node_data(t, &task).unwrap();
    inst.submit().unwrap();
    until(&pe, || !reports.borrow().is_empty());
    assert_eq!(*log.borrow(), vec!["r2", "r1", "x", "y"]);
}

#[test]
fn doca_graph_instance_set_sub_graph_node_data_runs_the_sub_instance_inside_its_parent() {
    let (pe, _clock) = engine();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 2, &own);
    let log = Rc::new(RefCell::new(Vec::new()));
    // sub: s (ctx) -> su (user)
    let sub = Graph::create(&pe).unwrap();
    let s = sub.node_create_from_ctx(&l.as_ctx()).unwrap();
    let su = logging_node(&sub, &log, "sub");
    sub.add_dependency(s, su).unwrap();
    let sub_reports = conf(&sub, 2);
    sub.start().unwrap();
    // main: m (ctx) -> g (sub) -> after (user)
    let main = Graph::create(&pe).unwrap();
    let m = main.node_create_from_ctx(&l.as_ctx()).unwrap();
    let g = main.node_create_from_graph(&sub).unwrap();
    let after = logging_node(&main, &log, "after");
    main.add_dependency(m, g).unwrap();
    main.add_dependency(g, after).unwrap();
    let reports = conf(&main, 1);
    main.start().unwrap();

    let (tm, ts) = (l.alloc_task(1).unwrap(), l.alloc_task(2).unwrap());
    let child = sub.instance_create().unwrap();
    child.set_ctx_node_data(s, &ts).unwrap();
    child.set_user_node_data(su, Data::NONE).unwrap();
    let stray = sub.instance_create().unwrap();
    let inst = main.instance_create().unwrap();
    inst.set_ctx_node_data(m, &tm).unwrap();
    inst.set_user_node_data(after, Data::NONE).unwrap();
    assert_eq!(inst.set_sub_graph_node_data(m, &child), Err(Error::NotPermitted), "not a sub-graph node");
    let not_sub = main.instance_create().err();
    assert_eq!(not_sub, Some(Error::NoMemory));
    inst.set_sub_graph_node_data(g, &child).unwrap();
    assert_eq!(child.submit(), Err(Error::InUse), "its parent runs it");
    let child = match child.destroy() {
        Err(r) => {
            assert_eq!(r.error, Error::InUse, "a sub-graph node's data cannot be destroyed");
            r.value
        }
        Ok(()) => panic!("destroy must refuse"),
    };
    inst.submit().unwrap();
    until(&pe, || !reports.borrow().is_empty());
    assert_eq!(*reports.borrow(), vec![(0, true)]);
    assert_eq!(*log.borrow(), vec!["sub", "after"]);
    assert!(sub_reports.borrow().is_empty(), "a sub-graph instance reports to its parent node only");
    assert_eq!(own.get(), 0);
    // Destroying the parent frees the child.
    inst.destroy().map_err(|r| r.error).unwrap();
    child.destroy().map_err(|r| r.error).unwrap();
    drop(stray);
    main.stop().unwrap();
    sub.stop().unwrap();
}

/// NVIDIA's graph sample, in Rust: two DMA contexts copy one source to two destinations, a
/// user node (after both) compares them; 10 instances submitted at once, polled to the end;
/// the DMA contexts' own callbacks never run.
#[test]
fn graph_sample_dma_nodes_and_a_user_node_over_ten_instances() {
    const NODES: usize = 2;
    const INSTANCES: usize = 10;
    const LEN: usize = 1024;
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; LEN * (1 + NODES) * INSTANCES]).unwrap();
    map.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.add_dev(&dev).unwrap();
    map.start().unwrap();
    let inv = Inventory::create(((1 + NODES) * INSTANCES) as u32).unwrap();
    inv.start().unwrap();
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0u32));
    let dmas: Vec<Dma> = (0..NODES)
        .map(|_| {
            let d = Dma::create(&dev).unwrap();
            pe.connect_ctx(&d.as_ctx()).unwrap();
            let (a, b) = (own.clone(), own.clone());
            d.task_memcpy_set_conf(
                move |_: MemcpyTask, _, _| a.set(a.get() + 1),
                move |_: MemcpyTask, _, _| b.set(b.get() + 1),
                INSTANCES as u32,
            )
            .unwrap();
            d.as_ctx().start().unwrap();
            d
        })
        .collect();

    let graph = Graph::create(&pe).unwrap();
    let access = map.access().unwrap();
    let user = graph
        .node_create_from_user(move |cookie| {
            // The cookie is the instance's index: its source and destinations are known.
            let i = cookie.as_usize();
            let base = i * LEN * (1 + NODES);
            let mut src = vec![0u8; LEN];
            access.read(base, &mut src).map_err(|_| Error::BadState)?;
            for n in 0..NODES {
                let mut dst = vec![0u8; LEN];
                access.read(base + LEN * (1 + n), &mut dst).map_err(|_| Error::BadState)?;
                if dst != src {
                    return Err(Error::BadState);
                }
            }
            Ok(())
        })
        .unwrap();
    let dma_nodes: Vec<Node> = dmas
        .iter()
        .map(|d| {
            let n = graph.node_create_from_ctx(&d.as_ctx()).unwrap();
            graph.add_dependency(n, user).unwrap();
            n
        })
        .collect();
    let completed = Rc::new(Cell::new(0u32));
    let failed = Rc::new(Cell::new(0u32));
    let (c, f) = (completed.clone(), failed.clone());
    graph
        .set_conf(
            move |_: &GraphInstance, _, _| c.set(c.get() + 1),
            move |_: &GraphInstance, _, _| f.set(f.get() + 1),
            INSTANCES as u32,
        )
        .unwrap();
    graph.start().unwrap();

    let writer = map.access().unwrap();
    let (base, _) = map.memrange().unwrap();
    let mut keep = Vec::new(); // tasks and buffers live as long as their instance
    let mut instances = Vec::new();
    for i in 0..INSTANCES {
        let off = i * LEN * (1 + NODES);
        writer.write(off, &vec![i as u8 + 1; LEN]).unwrap();
        let src = inv.buf_get_data_at(&map, off, LEN).unwrap();
        let inst = graph.instance_create().unwrap();
        for n in 0..NODES {
            let dst = inv.buf_get_by_addr(&map, base + off + LEN * (1 + n), LEN).unwrap();
            let t = dmas[n].task_memcpy_alloc_init(Some(&src), Some(&dst), Data::NONE).unwrap();
            inst.set_ctx_node_data(dma_nodes[n], t.as_task()).unwrap();
            keep.push((t, dst));
        }
        inst.set_user_node_data(user, Data::from(i)).unwrap();
        inst.set_user_data(Data::from(i)).unwrap();
        instances.push((inst, src));
    }
    for (inst, _) in &instances {
        inst.submit().unwrap();
    }
    until(&pe, || completed.get() + failed.get() == INSTANCES as u32);
    assert_eq!((completed.get(), failed.get()), (INSTANCES as u32, 0));
    assert_eq!(own.get(), 0, "the DMA contexts' callbacks do not run for graph tasks");
    for (t, dst) in &keep {
        assert_eq!(t.status(), Ok(()));
        assert_eq!(dst.data_len().unwrap(), LEN);
    }
    // Cleanup in the sample's order: instances, graph, tasks, contexts.
    for (inst, _) in instances {
        inst.destroy().map_err(|r| r.error).unwrap();
    }
    graph.stop().unwrap();
    graph.destroy().map_err(|r| r.error).unwrap();
    drop(keep);
    for d in dmas {
        d.as_ctx().stop().unwrap();
        d.destroy().map_err(|r| r.error).unwrap();
    }
    pe.destroy().map_err(|r| r.error).unwrap();
}

#[test]
fn doca_task_free_of_a_task_a_graph_runs_frees_it_when_it_comes_back() {
    let c = chain(1);
    let task = c.l.alloc_task(1).unwrap();
    task.set_delay(Duration::from_secs(1));
    let inst = c.submit(&task, 0);
    until(&c.pe, || c.l.as_ctx().num_inflight_tasks() == 1);
    drop(task); // freed too early: the context still holds it in flight
    assert_eq!(c.l.as_ctx().num_allocated_tasks(), 1);
    c.clock.advance(Duration::from_secs(1));
    until(&c.pe, || !c.reports.borrow().is_empty());
    assert_eq!(*c.reports.borrow(), vec![(0, true)]);
    assert_eq!(c.l.as_ctx().num_allocated_tasks(), 0, "freed once the graph had it back");
    assert_eq!(inst.submit(), Err(Error::BadState), "the node's task is gone");
    c.l.as_ctx().stop().unwrap();
}

#[test]
fn doca_graph_instance_dropped_while_submitted_is_destroyed_after_its_run() {
    let c = chain(1);
    let task = c.l.alloc_task(1).unwrap();
    let inst = c.submit(&task, 0);
    drop(inst);
    assert_eq!(c.graph.stop(), Err(Error::InUse), "it still runs");
    until(&c.pe, || !c.reports.borrow().is_empty());
    assert_eq!(*c.reports.borrow(), vec![(0, true)], "its callback still runs");
    c.graph.stop().unwrap();
}

#[test]
fn doca_graph_node_create_from_graph_a_failing_sub_instance_fails_its_parent() {
    let (pe, _clock) = engine();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 2, &own);
    let sub = Graph::create(&pe).unwrap();
    let s = sub.node_create_from_ctx(&l.as_ctx()).unwrap();
    let sub_reports = conf(&sub, 1);
    sub.start().unwrap();
    let main = Graph::create(&pe).unwrap();
    let g = main.node_create_from_graph(&sub).unwrap();
    let m = main.node_create_from_ctx(&l.as_ctx()).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    let after = logging_node(&main, &log, "after");
    main.add_dependency(g, after).unwrap();
    let reports = conf(&main, 1);
    main.start().unwrap();
    let (ts, tm) = (l.alloc_task(1).unwrap(), l.alloc_task(2).unwrap());
    ts.set_fail(Some(Error::IoFailed));
    let child = sub.instance_create().unwrap();
    child.set_ctx_node_data(s, &ts).unwrap();
    let inst = main.instance_create().unwrap();
    inst.set_sub_graph_node_data(g, &child).unwrap();
    inst.set_ctx_node_data(m, &tm).unwrap();
    inst.set_user_node_data(after, Data::NONE).unwrap();
    inst.submit().unwrap();
    until(&pe, || !reports.borrow().is_empty());
    assert_eq!(*reports.borrow(), vec![(0, false)]);
    assert!(log.borrow().is_empty(), "the node after the failed sub-graph never runs");
    assert!(sub_reports.borrow().is_empty());
    assert_eq!(tm.status(), Ok(()), "the independent node ran");
}

#[test]
fn doca_graph_instance_submit_wakes_an_engine_sleeping_on_its_notification_handle() {
    let pe = Pe::create().unwrap();
    let own = Rc::new(Cell::new(0));
    let l = lb(&pe, 1, &own);
    let graph = Graph::create(&pe).unwrap();
    let a = graph.node_create_from_ctx(&l.as_ctx()).unwrap();
    let reports = conf(&graph, 1);
    graph.start().unwrap();
    while pe.progress() {}
    let task = l.alloc_task(1).unwrap();
    let inst = graph.instance_create().unwrap();
    inst.set_ctx_node_data(a, &task).unwrap();
    inst.submit().unwrap();
    // Sleeping right after submit: the queued roots make the handle readable at once (the
    // generous limit only keeps a broken build from hanging).
    for _ in 0..100 {
        if !reports.borrow().is_empty() {
            break;
        }
        assert!(pe.wait(Some(Duration::from_secs(30))).unwrap(), "work was waiting: the engine must wake");
        while pe.progress() {}
    }
    assert_eq!(*reports.borrow(), vec![(0, true)]);
}
