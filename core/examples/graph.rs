//! A graph in one page: two contexts' tasks run side by side, then a user node that needs
//! both; one instance run three times, resubmitted from the graph's completion callback.
//! Run with `cargo run -p doca-core --example graph`.

use std::cell::Cell;
use std::rc::Rc;

use doca_core::graph::{Graph, GraphInstance};
use doca_core::loopback::Loopback;
use doca_core::{Data, Error, Pe, Started};

fn main() -> Result<(), Error> {
    // ANCHOR: build
    let pe = Pe::create()?;
    let (left, right) = (Loopback::create(Started::Running), Loopback::create(Started::Running));
    for lb in [&left, &right] {
        pe.connect_ctx(&lb.as_ctx())?;
        // Required, but never called for tasks a graph runs.
        lb.set_conf(|_, _, _| unreachable!(), |_, _, _| unreachable!(), 1)?;
        lb.as_ctx().start()?; // a graph starts only over running contexts
    }

    let graph = Graph::create(&pe)?;
    let a = graph.node_create_from_ctx(&left.as_ctx())?;
    let b = graph.node_create_from_ctx(&right.as_ctx())?;
    let join = graph.node_create_from_user(|cookie: Data| {
        println!("both tasks done (cookie {})", cookie.as_u64());
        Ok(()) // an error here fails the instance
    })?;
    graph.add_dependency(a, join)?;
    graph.add_dependency(b, join)?;
    // ANCHOR_END: build

    // ANCHOR: run
    let runs = Rc::new(Cell::new(0));
    let r = runs.clone();
    graph.set_conf(
        move |inst: &GraphInstance, _inst_data, _graph_data| {
            r.set(r.get() + 1);
            if r.get() < 3 {
                inst.submit().expect("idle again in its completion callback");
            }
        },
        |_, _, _| eprintln!("an instance failed"),
        1, // instances at most
    )?;
    graph.start()?;

    // The tasks stay ours: the instance only names them.
    let (ta, tb) = (left.alloc_task(1)?, right.alloc_task(2)?);
    let inst = graph.instance_create()?;
    inst.set_ctx_node_data(a, &ta)?;
    inst.set_ctx_node_data(b, &tb)?;
    inst.set_user_node_data(join, Data::from_u64(42))?;
    inst.submit()?; // the roots run from the next progress
    while runs.get() < 3 {
        pe.progress();
    }
    // ANCHOR_END: run

    // ANCHOR: teardown
    inst.destroy().map_err(|r| r.error)?; // then the tasks, then the graph
    drop((ta, tb));
    graph.stop()?;
    graph.destroy().map_err(|r| r.error)?;
    for lb in [left, right] {
        lb.as_ctx().stop()?;
        lb.destroy().map_err(|r| r.error)?;
    }
    pe.destroy().map_err(|r| r.error)?;
    println!("3 runs");
    Ok(())
    // ANCHOR_END: teardown
}
