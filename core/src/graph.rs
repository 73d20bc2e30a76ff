//! `doca_graph`: an ordered set of tasks and user callbacks, run as instances on a progress
//! engine.
//!
//! | DOCA                                                   | here                                |
//! |--------------------------------------------------------|-------------------------------------|
//! | `struct doca_graph`, `doca_graph_create`/`_destroy`     | [`Graph`]: [`Graph::create`], [`Graph::destroy`] |
//! | `doca_graph_set_conf`, `_set_user_data`/`_get_user_data` | [`Graph::set_conf`], [`Graph::set_user_data`], [`Graph::user_data`] |
//! | `struct doca_graph_node`, `doca_graph_node_create_from_ctx`/`_user`/`_graph` | [`Node`], [`Graph::node_create_from_ctx`], [`Graph::node_create_from_user`], [`Graph::node_create_from_graph`] |
//! | `doca_graph_add_dependency`                            | [`Graph::add_dependency`]           |
//! | `doca_graph_start`/`_stop`                             | [`Graph::start`], [`Graph::stop`]   |
//! | `struct doca_graph_instance`, `doca_graph_instance_create`/`_destroy` | [`GraphInstance`], [`Graph::instance_create`], [`GraphInstance::destroy`] |
//! | `doca_graph_instance_set_ctx_node_data`/`_user_node_data`/`_sub_graph_node_data` | [`GraphInstance::set_ctx_node_data`], [`GraphInstance::set_user_node_data`], [`GraphInstance::set_sub_graph_node_data`] |
//! | `doca_graph_instance_submit`, user data                | [`GraphInstance::submit`], [`GraphInstance::set_user_data`] |
//!
//! **Running.** A graph is built while stopped (nodes, dependencies, configuration), then
//! started: `start` needs at least one context node and every node's context Running
//! (`BAD_STATE`), and builds the state of `num_instances` instances, so that creating,
//! submitting and completing an instance allocates nothing. Submitting an instance queues its
//! roots (nodes without parents). A node runs when all its parents completed: a context node
//! submits its task (whose context's own completion and error callbacks do not run: the task
//! completes into the graph), a user node calls the user callback with the node's cookie, a
//! sub-graph node runs its sub-graph instance. Ready nodes run in the order they became ready
//! — roots in creation order, then a completed node's children in the order their
//! dependencies were added — at the graph's next pass of `doca_pe_progress` (never inside
//! submit); nodes on different contexts run together. When every node completed, the graph's
//! completion callback runs, from `doca_pe_progress`, with the instance Idle again: it may
//! resubmit it.
//!
//! **Failures** (the header: "any node failure shall fail the graph progress; the graph
//! progress shall complete only when all in flight nodes are completed; new nodes shall not
//! be submitted"). A node fails when its task completes with an error (a context stopped
//! under it completes it with its flush status), when its task cannot be submitted (its
//! context no longer Running: `BAD_STATE`), when its user callback returns an error, or when
//! its sub-graph instance fails. Then no further node of the instance runs; once the nodes in
//! flight completed, the graph's error callback runs once. A context that refuses a task with
//! `AGAIN` (overloaded) does not fail the instance: the node is tried again at the next pass.
//! A sub-graph instance that completes or fails reports to its parent's node, not to its own
//! graph's callbacks.
//!
//! **Ownership.** The application keeps the tasks it gives as node data (the instance names
//! them, [`TaskRef`]) and frees them after destroying the instance; changing a task's content
//! between runs is how an instance is reused. A task freed early makes the next submission
//! refuse (`BAD_STATE`), never touch another task. The graph is a context of its progress
//! engine (connected at create): the engine cannot be destroyed before the graph.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::bail;
use crate::callback::CbSlot;
use crate::clock::Now;
use crate::ctx::{Ctx, CtxState};
use crate::ctx::{CtxCell, CtxCore, CtxOps, Started};
use crate::data::Data;
use crate::error::{Error, Refused, Result};
use crate::pe::Pe;
use crate::task::{Route, TaskRef};

/// `doca_graph_completion_cb_t`: `(instance, instance user data, graph user data)`; the same
/// shape for the completion and the error callback.
pub type GraphCb = dyn FnMut(&GraphInstance, Data, Data);

/// `doca_graph_user_node_cb_t`: called with the node's cookie; an error fails the instance.
pub type UserNodeCb = dyn FnMut(Data) -> Result<()>;

/// `struct doca_graph_node`: names one node of one graph (no need to destroy it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Node {
    graph: u64,
    idx: u32,
}

impl Node {
    /// The node's index in its graph (creation order, from 0).
    pub fn index(self) -> usize {
        self.idx as usize
    }
}

enum Kind {
    Ctx(Ctx),
    User(Rc<CbSlot<UserNodeCb>>),
    Sub(Rc<CtxCell<GraphOps>>),
}

struct NodeDef {
    kind: Kind,
    children: Vec<u32>,
    parents: u32,
}

/// What one instance holds for one node.
enum NodeData {
    None,
    Task(TaskRef),
    Cookie(Data),
    Sub(SubRef),
}

/// An instance of a sub-graph, set as a node's data.
struct SubRef {
    graph: Rc<CtxCell<GraphOps>>,
    idx: u32,
    gen: u32,
}

/// Where a sub-graph instance reports: its parent instance's node.
#[derive(Clone)]
struct Parent {
    graph: Weak<CtxCell<GraphOps>>,
    inst: u32,
    node: u32,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Run {
    Idle,
    Running,
    /// Every node done (or failed and drained): the callback is due.
    Done,
}

struct Inst {
    gen: u32,
    live: bool,
    /// Its Rust handle was dropped while it could not be destroyed: destroyed when it can.
    orphan: bool,
    user_data: Data,
    data: Vec<NodeData>,
    /// Parents not yet completed, per node, in this run.
    waiting: Vec<u32>,
    run: Run,
    /// Nodes submitted (tasks, sub-graph instances) and not completed.
    outstanding: u32,
    /// Nodes not completed successfully.
    remaining: u32,
    /// Entries of this instance in the ready queue.
    queued: u32,
    failed: Option<Error>,
    /// Set while it runs as a sub-graph node.
    parent: Option<Parent>,
    /// Set while it is a sub-graph node's data.
    used_by: Option<Parent>,
}

impl Inst {
    fn new(nodes: usize) -> Inst {
        Inst {
            gen: 0,
            live: false,
            orphan: false,
            user_data: Data::NONE,
            data: (0..nodes).map(|_| NodeData::None).collect(),
            waiting: vec![0; nodes],
            run: Run::Idle,
            outstanding: 0,
            remaining: 0,
            queued: 0,
            failed: None,
            parent: None,
            used_by: None,
        }
    }

    /// Holds (`on`) or lets go of the context nodes' tasks for a run of this instance: while
    /// held, only the graph submits them.
    fn reserve_tasks(&self, on: bool) {
        for data in &self.data {
            if let NodeData::Task(t) = data {
                t.reserve(on);
            }
        }
    }
}

static NEXT_GRAPH_ID: AtomicU64 = AtomicU64::new(1);

#[doc(hidden)] // the graph's part of its context; reached through Graph
pub struct GraphOps {
    id: u64,
    this: Weak<CtxCell<GraphOps>>,
    route: Rc<dyn Route>,
    user_data: Cell<Data>,
    completion: CbSlot<GraphCb>,
    error: CbSlot<GraphCb>,
    num_instances: Cell<u32>,
    configured: Cell<bool>,
    nodes: RefCell<Vec<NodeDef>>,
    insts: RefCell<Vec<Inst>>,
    free: RefCell<Vec<u32>>,
    /// (instance, node) ready to run, sized at start (each node of each instance at most once).
    ready: RefCell<VecDeque<(u32, u32)>>,
    /// Instances whose callback is due, sized at start.
    done: RefCell<VecDeque<u32>>,
}

/// The tasks of a graph complete here.
struct GraphRoute(Weak<CtxCell<GraphOps>>);

impl Route for GraphRoute {
    fn done(&self, token: u64, status: Result<()>) {
        if let Some(g) = self.0.upgrade() {
            g.ops().finish_node(g.core(), (token >> 32) as u32, token as u32, status, true);
        }
    }
}

/// `struct doca_graph`, bound to one progress engine.
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// use doca_core::graph::Graph;
/// use doca_core::loopback::Loopback;
/// use doca_core::{Data, Pe, Started};
/// use std::{cell::Cell, rc::Rc};
///
/// let pe = Pe::create()?;
/// let lb = Loopback::create(Started::Running);
/// pe.connect_ctx(&lb.as_ctx())?;
/// lb.set_conf(|_, _, _| {}, |_, _, _| {}, 1)?;
/// lb.as_ctx().start()?;
///
/// let graph = Graph::create(&pe)?;
/// let task_node = graph.node_create_from_ctx(&lb.as_ctx())?;
/// let check = graph.node_create_from_user(|cookie| { assert_eq!(cookie.as_u64(), 7); Ok(()) })?;
/// graph.add_dependency(task_node, check)?; // check runs after the task
/// let done = Rc::new(Cell::new(0));
/// let d = done.clone();
/// graph.set_conf(move |_, _, _| d.set(d.get() + 1), |_, _, _| {}, 1)?;
/// graph.start()?;
///
/// let task = lb.alloc_task(1)?; // the application keeps its task
/// let inst = graph.instance_create()?;
/// inst.set_ctx_node_data(task_node, &task)?;
/// inst.set_user_node_data(check, Data::from_u64(7))?;
/// inst.submit()?;
/// while done.get() == 0 {
///     pe.progress();
/// }
/// inst.submit()?; // again, after completion
/// while done.get() == 1 {
///     pe.progress();
/// }
/// inst.destroy().map_err(|r| r.error)?;
/// graph.stop()?;
/// graph.destroy().map_err(|r| r.error)?;
/// # Ok::<(), doca_core::Error>(())
/// ```
pub struct Graph {
    cell: Rc<CtxCell<GraphOps>>,
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Graph(#{}, {} nodes)", self.cell.ops().id, self.cell.ops().nodes.borrow().len())
    }
}

impl Graph {
    /// `doca_graph_create`: an empty, stopped graph bound to `pe` (it runs in `pe`'s progress).
    pub fn create(pe: &Pe) -> Result<Graph> {
        let cell = CtxCell::new(|weak: &Weak<CtxCell<GraphOps>>| GraphOps {
            id: NEXT_GRAPH_ID.fetch_add(1, Ordering::Relaxed),
            this: weak.clone(),
            route: Rc::new(GraphRoute(weak.clone())),
            user_data: Cell::new(Data::NONE),
            completion: CbSlot::empty(),
            error: CbSlot::empty(),
            num_instances: Cell::new(0),
            configured: Cell::new(false),
            nodes: RefCell::new(Vec::new()),
            insts: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
            ready: RefCell::new(VecDeque::new()),
            done: RefCell::new(VecDeque::new()),
        });
        pe.connect_ctx(&Ctx::from(cell.clone()))?;
        Ok(Graph { cell })
    }

    fn ops(&self) -> &GraphOps {
        self.cell.ops()
    }

    fn core(&self) -> &CtxCore {
        self.cell.core()
    }

    fn started(&self) -> bool {
        self.core().state() == CtxState::Running
    }

    fn require_stopped(&self, what: &str) -> Result<()> {
        if self.started() {
            bail!(Error::BadState, "graph: {what} needs a stopped graph");
        }
        Ok(())
    }

    /// `doca_graph_destroy`: stopped only (`BAD_STATE`, and the graph back).
    pub fn destroy(self) -> Result<(), Refused<Graph>> {
        if let Err(e) = self.require_stopped("destroy") {
            return Err(Refused::new(e, self));
        }
        if let Err(e) = self.core().destroy() {
            return Err(Refused::new(e, self));
        }
        // Drop the nodes: a graph destroyed lets go of its contexts and sub-graphs.
        self.ops().nodes.borrow_mut().clear();
        Ok(())
    }

    /// `doca_graph_set_conf`: the completion and error callbacks and how many instances the
    /// graph can have at once (`INVALID_VALUE` for 0). Stopped only (`BAD_STATE`).
    pub fn set_conf(
        &self,
        completion: impl FnMut(&GraphInstance, Data, Data) + 'static,
        error: impl FnMut(&GraphInstance, Data, Data) + 'static,
        num_instances: u32,
    ) -> Result<()> {
        self.require_stopped("set_conf")?;
        if num_instances == 0 || num_instances > MAX_INSTANCES {
            bail!(Error::InvalidValue, "graph: {num_instances} instances (1..={MAX_INSTANCES})");
        }
        let ops = self.ops();
        ops.completion.set(Box::new(completion));
        ops.error.set(Box::new(error));
        ops.num_instances.set(num_instances);
        ops.configured.set(true);
        Ok(())
    }

    /// `doca_graph_set_user_data`: stopped only (`BAD_STATE`, as the header says).
    pub fn set_user_data(&self, user_data: Data) -> Result<()> {
        self.require_stopped("set_user_data")?;
        self.ops().user_data.set(user_data);
        Ok(())
    }

    /// `doca_graph_get_user_data`.
    pub fn user_data(&self) -> Data {
        self.ops().user_data.get()
    }

    fn add_node(&self, kind: Kind) -> Result<Node> {
        self.require_stopped("adding a node")?;
        let mut nodes = self.ops().nodes.borrow_mut();
        if nodes.len() >= MAX_NODES as usize {
            bail!(Error::NoMemory, "graph: at most {MAX_NODES} nodes");
        }
        nodes.push(NodeDef { kind, children: Vec::new(), parents: 0 });
        Ok(Node { graph: self.ops().id, idx: nodes.len() as u32 - 1 })
    }

    /// `doca_graph_node_create_from_ctx`: a node running a task of `ctx`, added as a root.
    /// Stopped only (`BAD_STATE`).
    pub fn node_create_from_ctx(&self, ctx: &Ctx) -> Result<Node> {
        self.add_node(Kind::Ctx(ctx.clone()))
    }

    /// `doca_graph_node_create_from_user`: a node calling `cb` with the cookie each instance
    /// sets; its error fails the instance. Stopped only (`BAD_STATE`).
    pub fn node_create_from_user(&self, cb: impl FnMut(Data) -> Result<()> + 'static) -> Result<Node> {
        let slot = CbSlot::empty();
        slot.set(Box::new(cb) as Box<UserNodeCb>);
        self.add_node(Kind::User(Rc::new(slot)))
    }

    /// `doca_graph_node_create_from_graph`: a node running an instance of `sub_graph`.
    /// `BAD_STATE` when this graph is started; `NOT_PERMITTED` when `sub_graph` is this graph
    /// or contains it (a circle); `BAD_STATE` when `sub_graph` is not started.
    pub fn node_create_from_graph(&self, sub_graph: &Graph) -> Result<Node> {
        self.require_stopped("adding a node")?;
        let me = self.ops().id;
        if sub_graph.ops().id == me || contains(sub_graph.ops(), me) {
            bail!(Error::NotPermitted, "graph: the sub-graph forms a circle with this graph");
        }
        if !sub_graph.started() {
            bail!(Error::BadState, "graph: a sub-graph must be started before it is added");
        }
        self.add_node(Kind::Sub(sub_graph.cell.clone()))
    }

    /// `doca_graph_add_dependency`: `to` runs after `from` completed. Both nodes of this
    /// graph (`INVALID_VALUE`); stopped only (`BAD_STATE`); a circle (`to` is `from` or runs
    /// before it) is `NOT_PERMITTED`, and so is a dependency that exists already (DOCA's
    /// library's answer: "already dependant").
    pub fn add_dependency(&self, from: Node, to: Node) -> Result<()> {
        self.require_stopped("add_dependency")?;
        let ops = self.ops();
        let mut nodes = ops.nodes.borrow_mut();
        for n in [from, to] {
            if n.graph != ops.id || n.idx as usize >= nodes.len() {
                bail!(Error::InvalidValue, "graph: add_dependency with a node of another graph");
            }
        }
        if from.idx == to.idx || reaches(&nodes, to.idx, from.idx) {
            bail!(Error::NotPermitted, "graph: the dependency {} -> {} forms a circle", from.idx, to.idx);
        }
        if nodes[from.idx as usize].children.contains(&to.idx) {
            bail!(Error::NotPermitted, "graph: node {} already depends on node {}", to.idx, from.idx);
        }
        nodes[from.idx as usize].children.push(to.idx);
        nodes[to.idx as usize].parents += 1;
        Ok(())
    }

    /// `doca_graph_start`: validates and builds the instances' state. A started graph: success
    /// (DOCA's library's answer; the header gives both). `NOT_PERMITTED` when a node's
    /// context is not Running or is connected to another engine; `BAD_STATE` when the graph
    /// has no context node, a sub-graph is not started, or `set_conf` was not called.
    pub fn start(&self) -> Result<()> {
        if self.started() {
            // The header allows both answers; DOCA's library says success (and logs it).
            tracing::info!(target: "doca_sdk", "graph: start of a graph that is started already");
            return Ok(());
        }
        let ops = self.ops();
        if !ops.configured.get() {
            bail!(Error::BadState, "graph: start before set_conf");
        }
        let n = {
            let nodes = ops.nodes.borrow();
            if !nodes.iter().any(|n| matches!(n.kind, Kind::Ctx(_))) {
                bail!(Error::BadState, "graph: a graph needs at least one context node");
            }
            for (i, node) in nodes.iter().enumerate() {
                // A node's context must be started, on the graph's own engine: otherwise
                // `NOT_PERMITTED`, DOCA's library's answer (the header names no code).
                match &node.kind {
                    Kind::Ctx(ctx) if ctx.state() != CtxState::Running => bail!(
                        Error::NotPermitted,
                        "graph: node {i}'s context ({}) is {:?}, not started",
                        ctx.kind(),
                        ctx.state()
                    ),
                    Kind::Ctx(ctx) if !ctx.core().shares_engine_with(self.core()) => bail!(
                        Error::NotPermitted,
                        "graph: node {i}'s context ({}) is connected to another progress engine than the graph's",
                        ctx.kind()
                    ),
                    Kind::Sub(g) if g.core().state() != CtxState::Running => {
                        bail!(Error::BadState, "graph: node {i}'s sub-graph is not started")
                    }
                    _ => {}
                }
            }
            nodes.len()
        };
        let count = ops.num_instances.get();
        *ops.insts.borrow_mut() = (0..count).map(|_| Inst::new(n)).collect();
        *ops.free.borrow_mut() = (0..count).rev().collect();
        let mut ready = ops.ready.borrow_mut();
        ready.clear();
        ready.reserve(count as usize * n);
        let mut done = ops.done.borrow_mut();
        done.clear();
        done.reserve(count as usize);
        drop((ready, done));
        Ctx::from(self.cell.clone()).start()
    }

    /// `doca_graph_stop`: `IN_USE` while instances exist (destroy them first); stopping a
    /// stopped graph succeeds.
    pub fn stop(&self) -> Result<()> {
        if !self.started() {
            return Ok(());
        }
        let live = self.ops().insts.borrow().iter().filter(|i| i.live).count();
        if live > 0 {
            bail!(Error::InUse, "graph: stop with {live} instance(s) not destroyed");
        }
        Ctx::from(self.cell.clone()).stop()
    }

    /// `doca_graph_instance_create`: started only (`BAD_STATE`); `NO_MEMORY` when
    /// `num_instances` exist.
    pub fn instance_create(&self) -> Result<GraphInstance> {
        if !self.started() {
            bail!(Error::BadState, "graph: instance_create needs a started graph");
        }
        let ops = self.ops();
        let Some(idx) = ops.free.borrow_mut().pop() else {
            bail!(Error::NoMemory, "graph: all {} instances exist (set_conf)", ops.num_instances.get());
        };
        let mut insts = ops.insts.borrow_mut();
        let inst = &mut insts[idx as usize];
        inst.live = true;
        inst.orphan = false;
        inst.user_data = Data::NONE;
        Ok(GraphInstance { graph: self.cell.clone(), idx, gen: inst.gen, owned: true })
    }
}

/// Most instances one graph may have.
pub const MAX_INSTANCES: u32 = 1 << 16;

/// Most nodes one graph may have.
pub const MAX_NODES: u32 = 1 << 16;

/// Whether `g` holds a sub-graph node of the graph `id`, at any depth.
fn contains(g: &GraphOps, id: u64) -> bool {
    g.nodes.borrow().iter().any(|n| match &n.kind {
        Kind::Sub(s) => s.ops().id == id || contains(s.ops(), id),
        _ => false,
    })
}

/// Whether node `to` can be reached from `from` along dependencies.
fn reaches(nodes: &[NodeDef], from: u32, to: u32) -> bool {
    let mut stack = vec![from];
    let mut seen = vec![false; nodes.len()];
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if !std::mem::replace(&mut seen[n as usize], true) {
            stack.extend(&nodes[n as usize].children);
        }
    }
    false
}

/// What a ready node does, copied out of the borrows.
enum Step {
    Skip,
    Task,
    User(Rc<CbSlot<UserNodeCb>>, Data),
    Sub(Rc<CtxCell<GraphOps>>, u32, u32),
}

/// A user node's callback under way, if it panics: the node fails (`UNEXPECTED`, the code a
/// panic caught at the C boundary gets), so that its instance still completes (through its
/// error callback, at a later pass) instead of waiting for ever. Forgotten on a return.
struct NodePanics<'a> {
    graph: &'a GraphOps,
    core: &'a CtxCore,
    idx: u32,
    node: u32,
}

impl Drop for NodePanics<'_> {
    #[cold]
    fn drop(&mut self) {
        self.graph.finish_node(self.core, self.idx, self.node, Err(Error::Unexpected), false);
    }
}

impl GraphOps {
    fn instance_ok(&self, idx: u32, gen: u32) -> Result<()> {
        match self.insts.borrow().get(idx as usize) {
            Some(i) if i.live && i.gen == gen => Ok(()),
            _ => bail!(Error::InvalidValue, "graph: the instance was destroyed"),
        }
    }

    /// Starts a run of instance `idx` (checked Idle and complete by the caller).
    fn begin(&self, core: &CtxCore, idx: u32, parent: Option<Parent>) {
        let nodes = self.nodes.borrow();
        let mut insts = self.insts.borrow_mut();
        let inst = &mut insts[idx as usize];
        let mut ready = self.ready.borrow_mut();
        inst.reserve_tasks(true);
        for (i, node) in nodes.iter().enumerate() {
            inst.waiting[i] = node.parents;
            if node.parents == 0 {
                ready.push_back((idx, i as u32));
            }
        }
        inst.queued = nodes.iter().filter(|n| n.parents == 0).count() as u32;
        inst.remaining = nodes.len() as u32;
        inst.outstanding = 0;
        inst.failed = None;
        inst.parent = parent;
        inst.run = Run::Running;
        core.activate();
    }

    /// Whether instance `idx` can run: Idle, every node with data, every task alive and its
    /// context Running, every sub-graph instance idle.
    fn check_submit(&self, idx: u32, as_sub: bool) -> Result<()> {
        let nodes = self.nodes.borrow();
        let insts = self.insts.borrow();
        let inst = &insts[idx as usize];
        if inst.run != Run::Idle {
            bail!(Error::InUse, "graph: the instance is already submitted");
        }
        if inst.used_by.is_some() && !as_sub {
            bail!(Error::InUse, "graph: the instance is a sub-graph node's data (its parent runs it)");
        }
        for (i, (node, data)) in nodes.iter().zip(&inst.data).enumerate() {
            match (&node.kind, data) {
                (_, NodeData::None) => {
                    bail!(Error::InvalidValue, "graph: node {i} has no data in this instance")
                }
                (Kind::Ctx(ctx), NodeData::Task(t)) => {
                    t.check()?;
                    if ctx.state() != CtxState::Running {
                        bail!(Error::BadState, "graph: node {i}'s context ({}) is not running", ctx.kind());
                    }
                }
                (Kind::Sub(_), NodeData::Sub(s)) => {
                    s.graph.ops().instance_ok(s.idx, s.gen)?;
                    s.graph.ops().check_submit(s.idx, true)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Runs ready node `node` of instance `idx`.
    fn run_node(&self, core: &CtxCore, idx: u32, node: u32) {
        let step = {
            let nodes = self.nodes.borrow();
            let mut insts = self.insts.borrow_mut();
            let inst = &mut insts[idx as usize];
            inst.queued -= 1;
            if inst.failed.is_some() {
                Step::Skip
            } else {
                match (&nodes[node as usize].kind, &inst.data[node as usize]) {
                    (Kind::Ctx(_), NodeData::Task(_)) => Step::Task,
                    (Kind::User(cb), NodeData::Cookie(c)) => Step::User(cb.clone(), *c),
                    (Kind::Sub(_), NodeData::Sub(s)) => Step::Sub(s.graph.clone(), s.idx, s.gen),
                    _ => Step::Skip,
                }
            }
        };
        let token = (idx as u64) << 32 | node as u64;
        match step {
            Step::Skip => self.check_finish(core, idx),
            Step::Task => {
                // The library's submit runs no user code: the borrow may stay.
                let submitted = match &self.insts.borrow()[idx as usize].data[node as usize] {
                    NodeData::Task(t) => t.submit_routed(self.route.clone(), token),
                    _ => Err(Error::BadState),
                };
                match submitted {
                    Ok(()) => self.insts.borrow_mut()[idx as usize].outstanding += 1,
                    Err(Error::Again) => {
                        // Overloaded context: not a failure, tried again at the next pass.
                        self.insts.borrow_mut()[idx as usize].queued += 1;
                        self.ready.borrow_mut().push_back((idx, node));
                        core.activate();
                    }
                    Err(e) => self.finish_node(core, idx, node, Err(e), false),
                }
            }
            Step::User(cb, cookie) => {
                let unwinding = NodePanics { graph: self, core, idx, node };
                let status = cb.call(|f| f(cookie)).unwrap_or(Err(Error::BadState));
                std::mem::forget(unwinding);
                self.finish_node(core, idx, node, status, false);
            }
            Step::Sub(sub, sidx, sgen) => {
                let parent = Parent { graph: self.this.clone(), inst: idx, node };
                let started = sub.ops().instance_ok(sidx, sgen).and_then(|()| {
                    sub.ops().check_submit(sidx, true)?;
                    sub.ops().begin(sub.core(), sidx, Some(parent));
                    Ok(())
                });
                match started {
                    Ok(()) => self.insts.borrow_mut()[idx as usize].outstanding += 1,
                    Err(e) => self.finish_node(core, idx, node, Err(e), false),
                }
            }
        }
    }

    /// Node `node` of instance `idx` completed with `status` (`outstanding`: it was counted
    /// in flight): release its children, or fail the instance.
    fn finish_node(&self, core: &CtxCore, idx: u32, node: u32, status: Result<()>, outstanding: bool) {
        {
            let nodes = self.nodes.borrow();
            let mut insts = self.insts.borrow_mut();
            let Some(inst) = insts.get_mut(idx as usize) else { return };
            if inst.run != Run::Running {
                return;
            }
            if outstanding {
                inst.outstanding -= 1;
            }
            match status {
                Ok(()) => {
                    inst.remaining -= 1;
                    if inst.failed.is_none() {
                        let mut ready = self.ready.borrow_mut();
                        for &c in &nodes[node as usize].children {
                            inst.waiting[c as usize] -= 1;
                            if inst.waiting[c as usize] == 0 {
                                ready.push_back((idx, c));
                                inst.queued += 1;
                            }
                        }
                    }
                }
                Err(e) => {
                    if inst.failed.is_none() {
                        tracing::debug!(target: "doca_sdk", "graph: instance {idx}: node {node} failed: {}", e.name());
                        inst.failed = Some(e);
                    }
                }
            }
        }
        core.activate();
        self.check_finish(core, idx);
    }

    /// Marks instance `idx` done when nothing of its run is left.
    fn check_finish(&self, core: &CtxCore, idx: u32) {
        let mut insts = self.insts.borrow_mut();
        let inst = &mut insts[idx as usize];
        if inst.run == Run::Running
            && inst.outstanding == 0
            && inst.queued == 0
            && (inst.failed.is_some() || inst.remaining == 0)
        {
            inst.run = Run::Done;
            inst.reserve_tasks(false);
            self.done.borrow_mut().push_back(idx);
            core.activate();
        }
    }

    /// Reports done instance `idx`: to its parent's node, or through the graph's callback.
    fn report(&self, idx: u32) {
        let (status, user_data, parent, gen) = {
            let mut insts = self.insts.borrow_mut();
            let inst = &mut insts[idx as usize];
            if inst.run != Run::Done {
                return;
            }
            inst.run = Run::Idle;
            (inst.failed.map_or(Ok(()), Err), inst.user_data, inst.parent.take(), inst.gen)
        };
        match parent {
            Some(p) => {
                if let Some(g) = p.graph.upgrade() {
                    g.ops().finish_node(g.core(), p.inst, p.node, status, true);
                }
            }
            None => {
                let Some(graph) = self.this.upgrade() else { return };
                let handle = GraphInstance { graph, idx, gen, owned: false };
                let cb = if status.is_ok() { &self.completion } else { &self.error };
                let graph_data = self.user_data.get();
                cb.call(|f| f(&handle, user_data, graph_data));
            }
        }
        let orphan = {
            let insts = self.insts.borrow();
            let inst = &insts[idx as usize];
            // (Resubmitted by its callback, or made a node's data: destroyed when that ends.)
            inst.orphan && inst.live && inst.gen == gen && inst.run == Run::Idle && inst.used_by.is_none()
        };
        if orphan {
            let _ = self.destroy_instance(idx, gen);
        }
    }

    /// Destroys instance `idx`: `IN_USE` while submitted or a sub-graph node's data.
    fn destroy_instance(&self, idx: u32, gen: u32) -> Result<()> {
        self.instance_ok(idx, gen)?;
        let subs: Vec<SubRef> = {
            let mut insts = self.insts.borrow_mut();
            let inst = &mut insts[idx as usize];
            if inst.run != Run::Idle {
                bail!(Error::InUse, "graph: destroying a submitted instance");
            }
            if inst.used_by.is_some() {
                bail!(Error::InUse, "graph: destroying an instance that is a sub-graph node's data");
            }
            inst.live = false;
            inst.orphan = false;
            inst.gen = inst.gen.wrapping_add(1);
            let subs = inst
                .data
                .iter_mut()
                .filter_map(|d| match std::mem::replace(d, NodeData::None) {
                    NodeData::Sub(s) => Some(s),
                    _ => None,
                })
                .collect();
            subs
        };
        self.free.borrow_mut().push(idx);
        for s in subs {
            s.graph.ops().release_sub(s.idx, s.gen);
        }
        Ok(())
    }

    /// Instance `idx` is no longer a sub-graph node's data (destroyed if its handle was
    /// dropped meanwhile).
    fn release_sub(&self, idx: u32, gen: u32) {
        let orphan = {
            let mut insts = self.insts.borrow_mut();
            match insts.get_mut(idx as usize) {
                Some(i) if i.live && i.gen == gen => {
                    i.used_by = None;
                    i.orphan
                }
                _ => false,
            }
        };
        if orphan {
            let _ = self.destroy_instance(idx, gen);
        }
    }
}

impl CtxOps for GraphOps {
    fn kind(&self) -> &'static str {
        "graph"
    }

    fn start(&self, _core: &CtxCore) -> Result<Started> {
        Ok(Started::Running)
    }

    fn stop(&self, _core: &CtxCore) {}

    fn progress(&self, core: &CtxCore, _now: &Now<'_>) -> bool {
        let mut any = false;
        // Only what is queued now: nodes these steps make ready run at the next pass.
        let n = self.ready.borrow().len();
        for _ in 0..n {
            let Some((idx, node)) = self.ready.borrow_mut().pop_front() else { break };
            self.run_node(core, idx, node);
            any = true;
        }
        let n = self.done.borrow().len();
        for _ in 0..n {
            let Some(idx) = self.done.borrow_mut().pop_front() else { break };
            self.report(idx);
            any = true;
        }
        any
    }

    fn needs_poll(&self, _core: &CtxCore) -> bool {
        !self.ready.borrow().is_empty() || !self.done.borrow().is_empty()
    }

    fn request_notification(&self, core: &CtxCore) -> bool {
        self.needs_poll(core)
    }
}

/// `struct doca_graph_instance`: one run's worth of node data, submitted again after each
/// completion. Dropping it destroys it (`doca_graph_instance_destroy`); dropped while
/// submitted, or while a sub-graph node's data, it is destroyed once that ends.
pub struct GraphInstance {
    graph: Rc<CtxCell<GraphOps>>,
    idx: u32,
    gen: u32,
    /// False for the handle a callback receives.
    owned: bool,
}

impl fmt::Debug for GraphInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GraphInstance(graph #{}, #{} gen {})", self.graph.ops().id, self.idx, self.gen)
    }
}

impl GraphInstance {
    fn ops(&self) -> &GraphOps {
        self.graph.ops()
    }

    /// The instance's slot in its graph (`0..num_instances`): an index for a binding's
    /// own tables. Stable for the instance's life.
    pub fn slot(&self) -> usize {
        self.idx as usize
    }

    /// Whether `other` is a handle to this same instance.
    pub fn same(&self, other: &GraphInstance) -> bool {
        Rc::ptr_eq(&self.graph, &other.graph) && self.idx == other.idx && self.gen == other.gen
    }

    fn with<R>(&self, f: impl FnOnce(&mut Inst) -> Result<R>) -> Result<R> {
        self.ops().instance_ok(self.idx, self.gen)?;
        f(&mut self.ops().insts.borrow_mut()[self.idx as usize])
    }

    /// `doca_graph_instance_destroy`: `IN_USE` (and the instance back) while submitted or
    /// set as a sub-graph node's data.
    pub fn destroy(mut self) -> Result<(), Refused<GraphInstance>> {
        match self.ops().destroy_instance(self.idx, self.gen) {
            Ok(()) => {
                self.owned = false;
                Ok(())
            }
            Err(e) => Err(Refused::new(e, self)),
        }
    }

    /// `doca_graph_instance_set_user_data`: `IN_USE` while submitted.
    pub fn set_user_data(&self, user_data: Data) -> Result<()> {
        self.with(|inst| {
            if inst.run != Run::Idle {
                bail!(Error::InUse, "graph: set_user_data on a submitted instance");
            }
            inst.user_data = user_data;
            Ok(())
        })
    }

    /// `doca_graph_instance_get_user_data`.
    pub fn user_data(&self) -> Data {
        self.with(|inst| Ok(inst.user_data)).unwrap_or(Data::NONE)
    }

    /// Checks `node` for `set_*_node_data`: `NOT_PERMITTED` for a node of another graph,
    /// `BAD_STATE` while submitted.
    fn node_checked(&self, node: Node) -> Result<()> {
        let ops = self.ops();
        if node.graph != ops.id || node.idx as usize >= ops.nodes.borrow().len() {
            bail!(Error::NotPermitted, "graph: the node is not of the graph that created the instance");
        }
        self.with(|inst| {
            if inst.run != Run::Idle {
                bail!(Error::BadState, "graph: setting node data of a submitted instance");
            }
            Ok(())
        })
    }

    /// `doca_graph_instance_set_ctx_node_data`: the task `node` runs (`NOT_PERMITTED` when
    /// `node` is not a context node of this graph or the task is of another context;
    /// `BAD_STATE` while submitted). The application keeps the task; its callbacks do not
    /// run while the graph runs it.
    pub fn set_ctx_node_data(&self, node: Node, task: impl Into<TaskRef>) -> Result<()> {
        self.node_checked(node)?;
        let task = task.into();
        match &self.ops().nodes.borrow()[node.idx as usize].kind {
            Kind::Ctx(ctx) if *ctx == task.ctx() => {}
            Kind::Ctx(ctx) => bail!(
                Error::NotPermitted,
                "graph: the task is of a {} context, not the node's {} context",
                task.ctx().kind(),
                ctx.kind()
            ),
            _ => bail!(Error::NotPermitted, "graph: node {} is not a context node", node.idx),
        }
        self.with(|inst| {
            inst.data[node.idx as usize] = NodeData::Task(task);
            Ok(())
        })
    }

    /// `doca_graph_instance_set_user_node_data`: the cookie `node`'s callback receives
    /// (`NOT_PERMITTED` when `node` is not a user node of this graph; `BAD_STATE` while
    /// submitted).
    pub fn set_user_node_data(&self, node: Node, cookie: Data) -> Result<()> {
        self.node_checked(node)?;
        if !matches!(self.ops().nodes.borrow()[node.idx as usize].kind, Kind::User(_)) {
            bail!(Error::NotPermitted, "graph: node {} is not a user node", node.idx);
        }
        self.with(|inst| {
            inst.data[node.idx as usize] = NodeData::Cookie(cookie);
            Ok(())
        })
    }

    /// `doca_graph_instance_set_sub_graph_node_data`: the instance of the node's sub-graph
    /// that `node` runs. `NOT_PERMITTED` when `node` is not a sub-graph node of this graph,
    /// `sub` is not an instance of that sub-graph, is submitted or is another node's data;
    /// `BAD_STATE` while this instance is submitted. `sub` cannot be submitted or destroyed
    /// on its own while it is node data (`IN_USE`).
    pub fn set_sub_graph_node_data(&self, node: Node, sub: &GraphInstance) -> Result<()> {
        self.node_checked(node)?;
        let sub_graph = match &self.ops().nodes.borrow()[node.idx as usize].kind {
            Kind::Sub(g) => g.clone(),
            _ => bail!(Error::NotPermitted, "graph: node {} is not a sub-graph node", node.idx),
        };
        if !Rc::ptr_eq(&sub_graph, &sub.graph) {
            bail!(Error::NotPermitted, "graph: the instance is not of the node's sub-graph");
        }
        let me = Parent { graph: self.ops().this.clone(), inst: self.idx, node: node.idx };
        sub.with(|s| {
            if s.run != Run::Idle {
                bail!(Error::NotPermitted, "graph: the sub-graph instance is submitted");
            }
            match &s.used_by {
                Some(p) if p.inst == me.inst && p.node == me.node && p.graph.ptr_eq(&me.graph) => Ok(()),
                Some(_) => bail!(Error::NotPermitted, "graph: the sub-graph instance is another node's data"),
                None => {
                    s.used_by = Some(me.clone());
                    Ok(())
                }
            }
        })?;
        let old = self.with(|inst| {
            Ok(std::mem::replace(
                &mut inst.data[node.idx as usize],
                NodeData::Sub(SubRef { graph: sub.graph.clone(), idx: sub.idx, gen: sub.gen }),
            ))
        })?;
        if let NodeData::Sub(o) = old {
            if !(Rc::ptr_eq(&o.graph, &sub.graph) && o.idx == sub.idx && o.gen == sub.gen) {
                o.graph.ops().release_sub(o.idx, o.gen);
            }
        }
        Ok(())
    }

    /// `doca_graph_instance_submit`: queues the root nodes; they run from the next
    /// `doca_pe_progress`. `IN_USE` when submitted already (or a sub-graph node's data);
    /// `INVALID_VALUE` when a node has no data; `BAD_STATE` when a context node's context is
    /// not Running or its task was freed; `IN_USE` when a node's task is submitted elsewhere.
    pub fn submit(&self) -> Result<()> {
        let ops = self.ops();
        ops.instance_ok(self.idx, self.gen)?;
        ops.check_submit(self.idx, false)?;
        ops.begin(self.graph.core(), self.idx, None);
        Ok(())
    }

    /// Whether the instance is submitted (its run not yet reported).
    pub fn is_submitted(&self) -> bool {
        self.with(|inst| Ok(inst.run != Run::Idle)).unwrap_or(false)
    }
}

impl Drop for GraphInstance {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let ops = self.graph.ops();
        let busy = {
            let mut insts = ops.insts.borrow_mut();
            match insts.get_mut(self.idx as usize) {
                Some(inst) if inst.live && inst.gen == self.gen => {
                    // Submitted, or a sub-graph node's data: destroyed once that ends.
                    inst.orphan = inst.run != Run::Idle || inst.used_by.is_some();
                    inst.orphan
                }
                _ => return,
            }
        };
        if !busy {
            let _ = ops.destroy_instance(self.idx, self.gen);
        }
    }
}
