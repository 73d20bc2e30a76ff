//! `doca_graph.h` (DOCA Core, in DOCA's `libdoca_common`): graphs of context tasks, user
//! callbacks and sub-graphs, run as instances on a progress engine (the whole header, the
//! same 19 functions in 2.5 and 2.6). The engine is `doca_core::graph`; this file maps its
//! handles: a graph, its nodes (freed with the graph) and its instances.

use std::cell::RefCell;
use std::ffi::c_void;
use std::rc::Rc;

use doca_core::graph::{Graph, GraphInstance, Node};
use doca_core::{Data, Error};

use crate::check::{non_null, out};
use crate::ctx::{DocaCtx, DocaData};
use crate::handles::{Handles, Kind};
use crate::pe::DocaPe;
use crate::task::DocaTask;
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// The instance handles of one graph, by instance slot (for its callbacks).
type Slots = Rc<RefCell<Vec<*mut DocaGraphInstance>>>;

/// `struct doca_graph`: the graph (`None` once destroyed), its nodes' handles and its
/// instances' handles.
pub struct DocaGraph {
    graph: RefCell<Option<Graph>>,
    nodes: RefCell<Vec<*mut DocaGraphNode>>,
    slots: Slots,
}

/// `struct doca_graph_node`.
pub struct DocaGraphNode(Node);

/// `struct doca_graph_instance`: the instance (`None` once destroyed) and its graph's handle.
pub struct DocaGraphInstance {
    inst: RefCell<Option<GraphInstance>>,
}

static GRAPHS: Handles = Handles::new(Kind::Graph);
static NODES: Handles = Handles::new(Kind::GraphNode);
static INSTANCES: Handles = Handles::new(Kind::GraphInstance);

fn graph<'a>(p: *const DocaGraph) -> Option<&'a DocaGraph> {
    // SAFETY: GRAPHS only holds DocaGraph handles.
    unsafe { GRAPHS.get(p) }
}

fn node(p: *const DocaGraphNode) -> Option<Node> {
    // SAFETY: NODES only holds DocaGraphNode handles.
    unsafe { NODES.get(p) }.map(|n: &DocaGraphNode| n.0)
}

fn instance<'a>(p: *const DocaGraphInstance) -> Option<&'a DocaGraphInstance> {
    // SAFETY: INSTANCES only holds DocaGraphInstance handles.
    unsafe { INSTANCES.get(p) }
}

/// Runs `f` on the graph behind `p` (`INVALID_VALUE` for a bad handle).
fn with_graph(p: *const DocaGraph, f: impl FnOnce(&DocaGraph, &Graph) -> DocaError) -> DocaError {
    match graph(p) {
        Some(h) => match h.graph.borrow().as_ref() {
            Some(g) => f(h, g),
            None => invalid(),
        },
        None => invalid(),
    }
}

/// Runs `f` on the instance behind `p` (`INVALID_VALUE` for a bad handle).
fn with_instance(p: *const DocaGraphInstance, f: impl FnOnce(&GraphInstance) -> DocaError) -> DocaError {
    match instance(p) {
        Some(h) => match h.inst.borrow().as_ref() {
            Some(i) => f(i),
            None => invalid(),
        },
        None => invalid(),
    }
}

/// `doca_graph_completion_cb_t`.
pub type DocaGraphCb = Option<unsafe extern "C" fn(*mut DocaGraphInstance, DocaData, DocaData)>;

/// `doca_graph_user_node_cb_t`.
pub type DocaGraphUserNodeCb = Option<unsafe extern "C" fn(*mut c_void) -> DocaError>;

/// `doca_graph_create`: an empty graph bound to `pe` (the engine cannot be destroyed before
/// the graph: `IN_USE`).
///
/// # Safety
/// `graph` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_graph_create(pe: *mut DocaPe, graph: *mut *mut DocaGraph) -> DocaError {
    guarded("doca_graph_create", || {
        let Some(engine) = crate::pe::pe(pe) else { return invalid() };
        if let Err(e) = non_null(graph, "graph out-parameter") {
            return e;
        }
        match Graph::create(engine) {
            Ok(g) => out(
                graph,
                GRAPHS.add(DocaGraph {
                    graph: RefCell::new(Some(g)),
                    nodes: RefCell::new(Vec::new()),
                    slots: Rc::default(),
                }),
            ),
            Err(e) => e.code(),
        }
    })
}

/// `doca_graph_destroy`: stopped only (`BAD_STATE`); its nodes' handles go with it.
///
/// # Safety
/// `graph` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_graph_destroy(graph: *mut DocaGraph) -> DocaError {
    guarded("doca_graph_destroy", || {
        let Some(h) = self::graph(graph) else { return invalid() };
        let Some(g) = h.graph.borrow_mut().take() else { return invalid() };
        if let Err(r) = g.destroy() {
            *h.graph.borrow_mut() = Some(r.value);
            return r.error.code();
        }
        for n in h.nodes.borrow_mut().drain(..) {
            // SAFETY: NODES only holds DocaGraphNode handles; each freed once, here.
            drop(unsafe { NODES.remove(n) });
        }
        // SAFETY: GRAPHS only holds DocaGraph handles; freed once, here.
        drop(unsafe { GRAPHS.remove(graph) });
        DOCA_SUCCESS
    })
}

/// `doca_graph_set_conf`: both callbacks (NULL: `INVALID_VALUE`) and 1.. instances;
/// stopped only (`BAD_STATE`).
#[no_mangle]
pub extern "C" fn doca_graph_set_conf(
    graph: *mut DocaGraph,
    graph_completion_cb: DocaGraphCb,
    graph_error_cb: DocaGraphCb,
    num_instances: u32,
) -> DocaError {
    guarded("doca_graph_set_conf", || {
        with_graph(graph, |h, g| {
            let (Some(done), Some(failed)) = (graph_completion_cb, graph_error_cb) else {
                return crate::check::refuse(|| "NULL graph callback".into());
            };
            let call = |cb: unsafe extern "C" fn(*mut DocaGraphInstance, DocaData, DocaData),
                        slots: Slots| {
                move |inst: &GraphInstance, ud: Data, gd: Data| {
                    let p = slots.borrow().get(inst.slot()).copied().unwrap_or(std::ptr::null_mut());
                    // the application's graph callback, given its instance's handle (valid until
                    // doca_graph_instance_destroy) and the user data.
                    // SAFETY: see above.
                    unsafe { cb(p, DocaData::from_data(ud), DocaData::from_data(gd)) }
                }
            };
            Error::code_of(&g.set_conf(
                call(done, h.slots.clone()),
                call(failed, h.slots.clone()),
                num_instances,
            ))
        })
    })
}

/// `doca_graph_set_user_data`: stopped only (`BAD_STATE`).
#[no_mangle]
pub extern "C" fn doca_graph_set_user_data(graph: *mut DocaGraph, user_data: DocaData) -> DocaError {
    guarded("doca_graph_set_user_data", || {
        with_graph(graph, |_, g| Error::code_of(&g.set_user_data(user_data.to_data())))
    })
}

/// `doca_graph_get_user_data`.
///
/// # Safety
/// `user_data` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_graph_get_user_data(
    graph: *const DocaGraph,
    user_data: *mut DocaData,
) -> DocaError {
    guarded("doca_graph_get_user_data", || {
        with_graph(graph, |_, g| out(user_data, DocaData::from_data(g.user_data())))
    })
}

/// Hands out the handle of a node just created.
fn node_out(h: &DocaGraph, created: doca_core::Result<Node>, node: *mut *mut DocaGraphNode) -> DocaError {
    match created {
        Ok(n) => {
            let p = NODES.add(DocaGraphNode(n));
            h.nodes.borrow_mut().push(p);
            out(node, p)
        }
        Err(e) => e.code(),
    }
}

/// `doca_graph_node_create_from_ctx`: stopped only (`BAD_STATE`).
///
/// # Safety
/// `node` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_graph_node_create_from_ctx(
    graph: *mut DocaGraph,
    ctx: *const DocaCtx,
    node: *mut *mut DocaGraphNode,
) -> DocaError {
    guarded("doca_graph_node_create_from_ctx", || {
        with_graph(graph, |h, g| {
            let Some(c) = crate::ctx::ctx(ctx) else { return invalid() };
            if let Err(e) = non_null(node, "node out-parameter") {
                return e;
            }
            node_out(h, g.node_create_from_ctx(&c.0), node)
        })
    })
}

/// `doca_graph_node_create_from_user`: the callback (NULL: `INVALID_VALUE`) gets the cookie
/// each instance sets; what it returns other than `DOCA_SUCCESS` fails the instance.
///
/// # Safety
/// `node` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_graph_node_create_from_user(
    graph: *mut DocaGraph,
    cb: DocaGraphUserNodeCb,
    node: *mut *mut DocaGraphNode,
) -> DocaError {
    guarded("doca_graph_node_create_from_user", || {
        with_graph(graph, |h, g| {
            let Some(cb) = cb else { return crate::check::refuse(|| "NULL user node callback".into()) };
            if let Err(e) = non_null(node, "node out-parameter") {
                return e;
            }
            let created = g.node_create_from_user(move |cookie: Data| {
                // the application's user node callback, given the cookie it set.
                // SAFETY: see above.
                let code = unsafe { cb(cookie.as_ptr()) };
                match Error::from_code(code) {
                    Some(Error::Success) => Ok(()),
                    Some(e) => Err(e),
                    None => Err(Error::Unknown),
                }
            });
            node_out(h, created, node)
        })
    })
}

/// `doca_graph_node_create_from_graph`: `NOT_PERMITTED` for a circle (the graph itself, or a
/// sub-graph holding it), `BAD_STATE` when this graph is started or the sub-graph is not.
///
/// # Safety
/// `node` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_graph_node_create_from_graph(
    graph: *mut DocaGraph,
    sub_graph: *mut DocaGraph,
    node: *mut *mut DocaGraphNode,
) -> DocaError {
    guarded("doca_graph_node_create_from_graph", || {
        with_graph(graph, |h, g| {
            if let Err(e) = non_null(node, "node out-parameter") {
                return e;
            }
            with_graph(sub_graph, |_, sub| node_out(h, g.node_create_from_graph(sub), node))
        })
    })
}

/// `doca_graph_add_dependency`: `NOT_PERMITTED` for a circle, `INVALID_VALUE` for a node of
/// another graph, `BAD_STATE` when started.
#[no_mangle]
pub extern "C" fn doca_graph_add_dependency(
    graph: *mut DocaGraph,
    from: *mut DocaGraphNode,
    to: *mut DocaGraphNode,
) -> DocaError {
    guarded("doca_graph_add_dependency", || {
        with_graph(graph, |_, g| match (node(from), node(to)) {
            (Some(a), Some(b)) => Error::code_of(&g.add_dependency(a, b)),
            _ => invalid(),
        })
    })
}

/// `doca_graph_start`: `BAD_STATE` without a context node, with a node's context not
/// running, before `doca_graph_set_conf`, or when started already.
#[no_mangle]
pub extern "C" fn doca_graph_start(graph: *mut DocaGraph) -> DocaError {
    guarded("doca_graph_start", || with_graph(graph, |_, g| Error::code_of(&g.start())))
}

/// `doca_graph_stop`: `IN_USE` while instances exist; success when stopped already.
#[no_mangle]
pub extern "C" fn doca_graph_stop(graph: *mut DocaGraph) -> DocaError {
    guarded("doca_graph_stop", || with_graph(graph, |_, g| Error::code_of(&g.stop())))
}

/// `doca_graph_instance_create`: started only (`BAD_STATE`); `NO_MEMORY` beyond
/// `num_instances`.
///
/// # Safety
/// `graph_instance` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_graph_instance_create(
    graph: *const DocaGraph,
    graph_instance: *mut *mut DocaGraphInstance,
) -> DocaError {
    guarded("doca_graph_instance_create", || {
        with_graph(graph, |h, g| {
            if let Err(e) = non_null(graph_instance, "instance out-parameter") {
                return e;
            }
            match g.instance_create() {
                Ok(inst) => {
                    let slot = inst.slot();
                    let p = INSTANCES.add(DocaGraphInstance { inst: RefCell::new(Some(inst)) });
                    let mut slots = h.slots.borrow_mut();
                    if slots.len() <= slot {
                        slots.resize(slot + 1, std::ptr::null_mut());
                    }
                    slots[slot] = p;
                    out(graph_instance, p)
                }
                Err(e) => e.code(),
            }
        })
    })
}

/// `doca_graph_instance_destroy`: `IN_USE` while submitted or set as a sub-graph node's data.
///
/// # Safety
/// `graph_instance` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_graph_instance_destroy(graph_instance: *mut DocaGraphInstance) -> DocaError {
    guarded("doca_graph_instance_destroy", || {
        let Some(h) = instance(graph_instance) else { return invalid() };
        let Some(inst) = h.inst.borrow_mut().take() else { return invalid() };
        if let Err(r) = inst.destroy() {
            *h.inst.borrow_mut() = Some(r.value);
            return r.error.code();
        }
        // SAFETY: INSTANCES only holds DocaGraphInstance handles; freed once, here. (The
        // graph's slot table entry is overwritten by the next instance of that slot.)
        drop(unsafe { INSTANCES.remove(graph_instance) });
        DOCA_SUCCESS
    })
}

/// `doca_graph_instance_set_user_data`: `IN_USE` while submitted.
#[no_mangle]
pub extern "C" fn doca_graph_instance_set_user_data(
    graph_instance: *mut DocaGraphInstance,
    user_data: DocaData,
) -> DocaError {
    guarded("doca_graph_instance_set_user_data", || {
        with_instance(graph_instance, |i| Error::code_of(&i.set_user_data(user_data.to_data())))
    })
}

/// `doca_graph_instance_get_user_data`.
///
/// # Safety
/// `user_data` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_graph_instance_get_user_data(
    graph_instance: *const DocaGraphInstance,
    user_data: *mut DocaData,
) -> DocaError {
    guarded("doca_graph_instance_get_user_data", || {
        with_instance(graph_instance, |i| out(user_data, DocaData::from_data(i.user_data())))
    })
}

/// `doca_graph_instance_set_ctx_node_data`: the task stays the application's (free it after
/// destroying the instance); its callbacks do not run while the graph runs it.
/// `NOT_PERMITTED` for a node of another graph or kind, or a task of another context;
/// `BAD_STATE` while submitted (the instance, or the task itself).
#[no_mangle]
pub extern "C" fn doca_graph_instance_set_ctx_node_data(
    graph_instance: *mut DocaGraphInstance,
    node: *mut DocaGraphNode,
    task: *mut DocaTask,
) -> DocaError {
    guarded("doca_graph_instance_set_ctx_node_data", || {
        with_instance(graph_instance, |i| {
            let Some(n) = self::node(node) else { return invalid() };
            match crate::task::task_ref(task) {
                Ok(t) => Error::code_of(&i.set_ctx_node_data(n, t)),
                Err(e) => e,
            }
        })
    })
}

/// `doca_graph_instance_set_user_node_data`: the cookie the node's callback receives.
#[no_mangle]
pub extern "C" fn doca_graph_instance_set_user_node_data(
    graph_instance: *mut DocaGraphInstance,
    node: *mut DocaGraphNode,
    cookie: *mut c_void,
) -> DocaError {
    guarded("doca_graph_instance_set_user_node_data", || {
        with_instance(graph_instance, |i| match self::node(node) {
            // The header: invalid input; DOCA's library refuses a NULL cookie by name.
            Some(_) if cookie.is_null() => crate::check::refuse(|| "NULL cookie".into()),
            Some(n) => Error::code_of(&i.set_user_node_data(n, Data::from_ptr(cookie))),
            None => invalid(),
        })
    })
}

/// `doca_graph_instance_set_sub_graph_node_data`: an instance of the node's sub-graph, not
/// submitted (`NOT_PERMITTED` otherwise); it then runs only as this node.
#[no_mangle]
pub extern "C" fn doca_graph_instance_set_sub_graph_node_data(
    graph_instance: *mut DocaGraphInstance,
    node: *mut DocaGraphNode,
    sub_graph_instance: *mut DocaGraphInstance,
) -> DocaError {
    guarded("doca_graph_instance_set_sub_graph_node_data", || {
        with_instance(graph_instance, |i| {
            let Some(n) = self::node(node) else { return invalid() };
            with_instance(sub_graph_instance, |sub| Error::code_of(&i.set_sub_graph_node_data(n, sub)))
        })
    })
}

/// `doca_graph_instance_submit`: its root nodes run from the next `doca_pe_progress`.
/// `IN_USE` when submitted already; `INVALID_VALUE` when a node has no data; `BAD_STATE`
/// when a node's context is not running or its task was freed.
#[no_mangle]
pub extern "C" fn doca_graph_instance_submit(graph_instance: *mut DocaGraphInstance) -> DocaError {
    guarded("doca_graph_instance_submit", || with_instance(graph_instance, |i| Error::code_of(&i.submit())))
}
