//! A graph instance's run allocates nothing once the graph is started and the instance set
//! up: submitting it, running its context and user nodes, completing it and calling the
//! graph's callback use memory built at start. Counted by a global allocator of this test
//! binary (its only test, so no other test's allocations are counted).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use doca_core::clock::ManualClock;
use doca_core::graph::{Graph, GraphInstance};
use doca_core::loopback::Loopback;
use doca_core::{Data, Pe, Started};

/// Counts allocations (and reallocations) the test's thread makes while it counts.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Set while the test's thread counts (other threads, the harness's, are never counted).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn counting() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: every call is passed to the system allocator unchanged; counting has no effect on it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: `ptr` came from this allocator with `layout`, as GlobalAlloc::realloc requires.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn submitting_running_and_completing_an_instance_allocates_nothing() {
    let pe = Pe::create_with_clock(Rc::new(ManualClock::new())).unwrap();
    let (l1, l2) = (Loopback::create(Started::Running), Loopback::create(Started::Running));
    for l in [&l1, &l2] {
        pe.connect_ctx(&l.as_ctx()).unwrap();
        l.set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
        l.as_ctx().start().unwrap();
    }
    // Diamond: a (ctx 1), b (ctx 2) -> u (user) -> c (ctx 1).
    let graph = Graph::create(&pe).unwrap();
    let a = graph.node_create_from_ctx(&l1.as_ctx()).unwrap();
    let b = graph.node_create_from_ctx(&l2.as_ctx()).unwrap();
    let calls = Rc::new(Cell::new(0u32));
    let k = calls.clone();
    let u = graph
        .node_create_from_user(move |_| {
            k.set(k.get() + 1);
            Ok(())
        })
        .unwrap();
    let c = graph.node_create_from_ctx(&l1.as_ctx()).unwrap();
    for (from, to) in [(a, u), (b, u), (u, c)] {
        graph.add_dependency(from, to).unwrap();
    }
    let done = Rc::new(Cell::new(0u32));
    let d = done.clone();
    graph.set_conf(move |_: &GraphInstance, _, _| d.set(d.get() + 1), |_, _, _| {}, 2).unwrap();
    graph.start().unwrap();
    let (ta, tb, tc) = (l1.alloc_task(1).unwrap(), l2.alloc_task(2).unwrap(), l1.alloc_task(3).unwrap());
    let inst = graph.instance_create().unwrap();
    inst.set_ctx_node_data(a, &ta).unwrap();
    inst.set_ctx_node_data(b, &tb).unwrap();
    inst.set_ctx_node_data(c, &tc).unwrap();
    inst.set_user_node_data(u, Data::NONE).unwrap();
    // A first run warms up what grows once (the engine's list of contexts to visit).
    inst.submit().unwrap();
    while done.get() < 1 {
        pe.progress();
    }

    COUNTING.set(true);
    for run in 2..=50 {
        inst.submit().unwrap();
        while done.get() < run {
            pe.progress();
        }
    }
    COUNTING.set(false);
    assert_eq!(calls.get(), 50);
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0, "a run allocated");
}
