//! `doca_ctx.h`: the state machine (Idle → Starting → Running → Stopping → Idle), the
//! state-changed callback, user data, in-flight counts.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use doca_core::loopback::{EchoTask, Loopback};
use doca_core::{Ctx, CtxState, Data, Error, Pe, Started};

type Changes = Rc<RefCell<Vec<(CtxState, CtxState, CtxState, u64)>>>;

/// A loopback context on `pe` that records (prev, next, state seen in the callback, user data).
fn recorded(pe: &Pe, mode: Started) -> (Loopback, Changes) {
    let lb = Loopback::create(mode);
    let ctx = lb.as_ctx();
    pe.connect_ctx(&ctx).unwrap();
    let changes: Changes = Rc::default();
    let c = changes.clone();
    ctx.set_state_changed_cb(move |data, ctx: &Ctx, prev, next| {
        c.borrow_mut().push((prev, next, ctx.state(), data.as_u64()))
    })
    .unwrap();
    lb.set_conf(|_, _, _| {}, |_: EchoTask, _, _| {}, 4).unwrap();
    (lb, changes)
}

fn settle(pe: &Pe) {
    while pe.progress() {}
}

#[test]
fn doca_ctx_states_values() {
    assert_eq!(
        [CtxState::Idle, CtxState::Starting, CtxState::Running, CtxState::Stopping].map(|s| s as u32),
        [0, 1, 2, 3]
    );
}

#[test]
fn doca_ctx_start_synchronous_asynchronous_and_refusals() {
    let pe = Pe::create().unwrap();
    let unconnected = Loopback::create(Started::Running);
    assert_eq!(unconnected.as_ctx().start(), Err(Error::NotConnected));

    let (sync, changes) = recorded(&pe, Started::Running);
    sync.as_ctx().set_user_data(Data::from_u64(5));
    assert_eq!(sync.as_ctx().start(), Ok(()));
    assert_eq!(sync.as_ctx().state(), CtxState::Running);
    assert_eq!(sync.as_ctx().start(), Err(Error::BadState), "start while Running");
    settle(&pe);
    assert_eq!(*changes.borrow(), vec![(CtxState::Idle, CtxState::Running, CtxState::Running, 5)]);

    let (asynchronous, changes) = recorded(&pe, Started::Starting);
    assert_eq!(asynchronous.as_ctx().start(), Err(Error::InProgress));
    assert_eq!(asynchronous.as_ctx().state(), CtxState::Starting);
    assert_eq!(asynchronous.as_ctx().start(), Err(Error::BadState), "start while Starting");
    assert_eq!(asynchronous.alloc_task(1).unwrap_err(), Error::BadState, "no tasks before Running");
    settle(&pe);
    assert_eq!(asynchronous.as_ctx().state(), CtxState::Running);
    let seen: Vec<_> = changes.borrow().iter().map(|c| (c.0, c.1, c.2)).collect();
    assert_eq!(
        seen,
        [
            (CtxState::Idle, CtxState::Starting, CtxState::Starting),
            (CtxState::Starting, CtxState::Running, CtxState::Running)
        ],
        "every transition, the context already in the new state"
    );
}

#[test]
fn doca_ctx_stop_from_each_state() {
    let pe = Pe::create().unwrap();
    let (lb, changes) = recorded(&pe, Started::Running);
    let ctx = lb.as_ctx();
    assert_eq!(ctx.stop(), Ok(()), "stop while Idle: nothing to do (as DOCA's dma_local_copy expects)");
    let unconnected = Loopback::create(Started::Running).as_ctx();
    assert_eq!(
        unconnected.stop(),
        Err(Error::NotConnected),
        "not connected to a progress engine (the header)"
    );

    // Running, nothing in flight: Idle at once.
    ctx.start().unwrap();
    assert_eq!(ctx.stop(), Ok(()));
    assert_eq!(ctx.state(), CtxState::Idle);

    // Running with a task out: Stopping (IN_PROGRESS), Idle once it is flushed and freed.
    ctx.start().unwrap();
    let t = lb.alloc_task(1).unwrap();
    t.set_delay(Duration::from_secs(3600));
    t.submit().unwrap();
    assert_eq!(ctx.stop(), Err(Error::InProgress));
    assert_eq!(ctx.state(), CtxState::Stopping);
    assert_eq!(ctx.stop(), Err(Error::InProgress), "stop while Stopping");
    settle(&pe);
    assert_eq!(ctx.state(), CtxState::Idle);

    // Starting: through Stopping, as the header's diagram.
    let (slow, slow_changes) = recorded(&pe, Started::Starting);
    assert_eq!(slow.as_ctx().start(), Err(Error::InProgress));
    assert_eq!(slow.as_ctx().stop(), Err(Error::InProgress));
    assert_eq!(slow.as_ctx().state(), CtxState::Stopping);
    settle(&pe);
    assert_eq!(slow.as_ctx().state(), CtxState::Idle);
    let seen: Vec<_> = slow_changes.borrow().iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(
        seen,
        [
            (CtxState::Idle, CtxState::Starting),
            (CtxState::Starting, CtxState::Stopping),
            (CtxState::Stopping, CtxState::Idle)
        ]
    );
    let seen: Vec<_> = changes.borrow().iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(
        seen,
        [
            (CtxState::Idle, CtxState::Running),
            (CtxState::Running, CtxState::Idle),
            (CtxState::Idle, CtxState::Running),
            (CtxState::Running, CtxState::Stopping),
            (CtxState::Stopping, CtxState::Idle)
        ]
    );
}

#[test]
fn doca_ctx_stop_waits_for_tasks_the_program_keeps() {
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    let ctx = lb.as_ctx();
    pe.connect_ctx(&ctx).unwrap();
    let kept: Rc<RefCell<Vec<EchoTask>>> = Rc::default();
    let k = kept.clone();
    lb.set_conf(move |t, _, _| k.borrow_mut().push(t), |_, _, _| {}, 2).unwrap();
    ctx.start().unwrap();
    lb.alloc_task(1).unwrap().submit().unwrap();
    settle(&pe);
    assert_eq!(kept.borrow().len(), 1, "completed, kept by the program");
    assert_eq!(ctx.stop(), Err(Error::InProgress), "a kept task holds the stop");
    settle(&pe);
    assert_eq!(ctx.state(), CtxState::Stopping);
    kept.borrow_mut().clear(); // doca_task_free
    settle(&pe);
    assert_eq!(ctx.state(), CtxState::Idle);
}

#[test]
fn doca_ctx_set_state_changed_cb_in_any_state() {
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    let ctx = lb.as_ctx();
    pe.connect_ctx(&ctx).unwrap();
    lb.set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
    ctx.start().unwrap();
    let seen: Rc<RefCell<Vec<CtxState>>> = Rc::default();
    let s = seen.clone();
    ctx.set_state_changed_cb(move |_, _, _, next| s.borrow_mut().push(next)).unwrap();
    settle(&pe);
    ctx.stop().unwrap();
    settle(&pe);
    assert_eq!(
        *seen.borrow(),
        [CtxState::Running, CtxState::Idle],
        "set while Running, the pending change included"
    );
}

#[test]
fn doca_ctx_set_user_data_get_user_data_and_get_num_inflight_tasks() {
    let pe = Pe::create().unwrap();
    let (lb, changes) = recorded(&pe, Started::Running);
    let ctx = lb.as_ctx();
    assert_eq!(ctx.user_data().as_u64(), 0, "default");
    ctx.set_user_data(Data::from_u64(41));
    ctx.start().unwrap();
    ctx.set_user_data(Data::from_u64(42)); // any state
    assert_eq!(ctx.user_data().as_u64(), 42);
    let t = lb.alloc_task(1).unwrap();
    t.set_delay(Duration::from_secs(3600));
    assert_eq!(ctx.num_inflight_tasks(), 0, "allocated is not in flight");
    t.submit().unwrap();
    assert_eq!(ctx.num_inflight_tasks(), 1);
    settle(&pe);
    assert_eq!(changes.borrow()[0].3, 42, "the callback gets the context's user data");
}

/// A task type whose `set_conf` was never called has a pool of no task: `NO_MEMORY`, the code
/// every `*_alloc_init` documents (and DOCA 2.5's library's answer).
#[test]
fn doca_task_alloc_of_an_unconfigured_type_is_no_memory() {
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).unwrap();
    lb.as_ctx().start().unwrap();
    assert_eq!(lb.alloc_task(1).unwrap_err(), Error::NoMemory);
}
