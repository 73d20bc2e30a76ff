//! The execution model in one page: a progress engine, a context with its state-changed
//! callback, a task pool, and the two ways to wait (busy polling and sleeping on the
//! notification handle). Run with `cargo run -p doca-core --example progress_loop`.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use doca_core::loopback::{EchoTask, Loopback};
use doca_core::{CtxState, Data, Error, Pe, Started};

// ANCHOR: setup
fn main() -> Result<(), Error> {
    let pe = Pe::create()?;
    let lb = Loopback::create(Started::Starting); // starts asynchronously, like a cc client
    let ctx = lb.as_ctx();
    pe.connect_ctx(&ctx)?;

    let finished = Rc::new(Cell::new(false));
    let f = finished.clone();
    ctx.set_state_changed_cb(move |_user_data, _ctx, prev, next| {
        println!("state {prev:?} -> {next:?}");
        if next == CtxState::Idle {
            f.set(true);
        }
    })?;
    lb.set_conf(
        |task: EchoTask, task_data: Data, _ctx_data: Data| {
            println!("task {} completed (user data {})", task.value(), task_data.as_u64());
            // Dropping the task frees it back to the pool (doca_task_free).
        },
        |task: EchoTask, _, _| println!("task {} failed: {:?}", task.value(), task.status()),
        16,
    )?;
    // ANCHOR_END: setup

    // ANCHOR: start
    match ctx.start() {
        Err(Error::InProgress) => {} // asynchronous start: Running comes from progress
        other => other?,
    }
    while ctx.state() != CtxState::Running {
        if !pe.progress() {
            std::thread::sleep(Duration::from_micros(10));
        }
    }
    // ANCHOR_END: start

    // ANCHOR: submit
    for value in 0..3u64 {
        let task = lb.alloc_task(value)?;
        task.set_user_data(Data::from_u64(100 + value));
        task.submit()?; // on refusal `?` frees the task and returns the code
    }
    let late = lb.alloc_task(99)?;
    late.set_delay(Duration::from_millis(20));
    late.submit()?;
    // ANCHOR_END: submit

    // ANCHOR: wait
    // Busy-poll while there is work; sleep on the notification handle when there is none.
    while pe.num_inflight_tasks() > 0 {
        if !pe.progress() {
            pe.wait(Some(Duration::from_secs(1)))?; // request, epoll_wait, clear
        }
    }
    // ANCHOR_END: wait

    // ANCHOR: stop
    match ctx.stop() {
        Ok(()) | Err(Error::InProgress) => {}
        Err(e) => return Err(e),
    }
    while !finished.get() {
        pe.progress();
    }
    lb.destroy().map_err(|r| r.error)?;
    pe.destroy().map_err(|r| r.error)?;
    Ok(())
}
// ANCHOR_END: stop
