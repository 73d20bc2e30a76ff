//! `doca_pe.h`: the progress engine and the generic task calls, with the loopback context
//! (core's own small library context) as the context under test.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use doca_core::loopback::{EchoTask, Loopback};
use doca_core::{CtxState, Data, Error, Pe, Started};

/// Completions seen: (value, status).
type Outcomes = Rc<RefCell<Vec<(u64, Result<(), Error>)>>>;

fn running(pe: &Pe, tasks: u32) -> (Loopback, Outcomes) {
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).unwrap();
    let done: Outcomes = Rc::default();
    let (a, b) = (done.clone(), done.clone());
    lb.set_conf(
        move |t: EchoTask, _, _| a.borrow_mut().push((t.value(), t.status())),
        move |t: EchoTask, _, _| b.borrow_mut().push((t.value(), t.status())),
        tasks,
    )
    .unwrap();
    lb.as_ctx().start().unwrap();
    (lb, done)
}

#[test]
fn doca_pe_create_and_destroy_in_use_while_contexts_are_connected() {
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).unwrap();
    let pe = match pe.destroy() {
        Err(refused) => {
            assert_eq!(refused.error, Error::InUse);
            refused.value
        }
        Ok(()) => panic!("destroy with a connected context must be IN_USE"),
    };
    lb.destroy().map_err(|r| r.error).unwrap();
    pe.destroy().map_err(|r| r.error).unwrap();
}

#[test]
fn doca_pe_progress_returns_whether_anything_happened() {
    let pe = Pe::create().unwrap();
    assert!(!pe.progress(), "an empty engine makes no progress");
    let (lb, done) = running(&pe, 2);
    // No state callback: the Running state change is not progress (see
    // doca_pe_progress_reports_a_state_change_only_to_its_callback).
    assert!(!pe.progress(), "the Running state change, with no callback, is not progress");
    lb.alloc_task(7).unwrap().submit().unwrap();
    assert!(pe.progress(), "a completion is progress");
    assert_eq!(*done.borrow(), vec![(7, Ok(()))]);
    assert!(!pe.progress());
    assert_eq!(lb.as_ctx().stop(), Ok(()));
    assert!(!pe.progress(), "nor the Idle one");
    assert_eq!(lb.as_ctx().state(), CtxState::Idle);
}

#[test]
fn doca_pe_progress_from_inside_its_own_callback_is_refused() {
    let pe = Rc::new(Pe::create().unwrap());
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).unwrap();
    let inner: Rc<Cell<Option<bool>>> = Rc::default();
    let (p, i) = (Rc::downgrade(&pe), inner.clone());
    lb.set_conf(move |_, _, _| i.set(p.upgrade().map(|pe| pe.progress())), |_, _, _| {}, 1).unwrap();
    lb.as_ctx().start().unwrap();
    lb.alloc_task(1).unwrap().submit().unwrap();
    while inner.get().is_none() {
        pe.progress();
    }
    assert_eq!(inner.get(), Some(false), "re-entrant progress does nothing");
}

#[test]
fn doca_pe_connect_ctx_not_permitted_when_already_connected() {
    let pe = Pe::create().unwrap();
    let other = Pe::create().unwrap();
    let (lb, _) = running(&pe, 1);
    // A context that is not Idle has been started, so it is connected already: the
    // connection check answers first.
    assert_eq!(other.connect_ctx(&lb.as_ctx()), Err(Error::NotPermitted), "a running context");
    lb.as_ctx().stop().unwrap();
    assert_eq!(other.connect_ctx(&lb.as_ctx()), Err(Error::NotPermitted), "already connected");
    assert_eq!(pe.connect_ctx(&lb.as_ctx()), Err(Error::NotPermitted), "even to the same engine");
}

#[test]
fn doca_pe_get_num_inflight_tasks_counts_submitted_not_completed() {
    let pe = Pe::create().unwrap();
    let (lb, _) = running(&pe, 4);
    let (lb2, _) = running(&pe, 4);
    assert_eq!(pe.num_inflight_tasks(), 0);
    let slow = lb.alloc_task(1).unwrap();
    slow.set_delay(Duration::from_secs(3600));
    slow.submit().unwrap();
    lb2.alloc_task(2).unwrap().submit().unwrap();
    let kept = lb2.alloc_task(3).unwrap(); // allocated, not submitted: not in flight
    assert_eq!(pe.num_inflight_tasks(), 2);
    assert_eq!((lb.as_ctx().num_inflight_tasks(), lb2.as_ctx().num_inflight_tasks()), (1, 1));
    while pe.progress() {}
    assert_eq!(pe.num_inflight_tasks(), 1, "the delayed one is still out");
    drop(kept);
}

#[test]
fn doca_pe_get_notification_handle_request_and_clear_notification() {
    use std::os::fd::AsRawFd;
    let pe = Pe::create().unwrap();
    let fd = pe.notification_handle().as_raw_fd();
    assert!(fd >= 0);
    let (lb, done) = running(&pe, 2);
    while pe.progress() {}
    // Nothing to do: an armed handle stays quiet.
    assert_eq!(pe.wait(Some(Duration::from_millis(20))), Ok(false));
    let t = lb.alloc_task(5).unwrap();
    t.set_delay(Duration::from_millis(30));
    t.submit().unwrap();
    // The documented loop: arm, sleep on the handle, clear, progress until it returns 0.
    pe.request_notification().unwrap();
    assert_eq!(pe.wait(Some(Duration::from_secs(10))), Ok(true), "the completion wakes the sleeper");
    while pe.progress() {}
    assert_eq!(*done.borrow(), vec![(5, Ok(()))]);
    assert_eq!(pe.notification_handle().as_raw_fd(), fd, "the handle is constant for the engine's life");
    // Work already waiting when arming: the handle is readable at once.
    lb.alloc_task(6).unwrap().submit().unwrap();
    assert_eq!(pe.wait(Some(Duration::from_secs(10))), Ok(true));
    pe.clear_notification().unwrap();
}

#[test]
fn doca_task_submit_in_each_state_and_ownership_on_refusal() {
    let pe = Pe::create().unwrap();
    let (lb, done) = running(&pe, 2);
    let ctx = lb.as_ctx();
    let kept = lb.alloc_task(1).unwrap();
    let slow = lb.alloc_task(2).unwrap();
    slow.set_delay(Duration::from_secs(3600));
    slow.submit().unwrap();
    assert_eq!(ctx.stop(), Err(Error::InProgress));
    assert_eq!(ctx.state(), CtxState::Stopping);
    let back = kept.submit().unwrap_err();
    assert_eq!(back.error, Error::BadState, "submit while Stopping");
    assert_eq!(lb.alloc_task(3).unwrap_err(), Error::BadState, "alloc while Stopping");
    drop(back.value); // doca_task_free: the stop waits for it
    while ctx.state() != CtxState::Idle {
        pe.progress();
    }
    assert_eq!(
        *done.borrow(),
        vec![(2, Err(doca_core::loopback::FLUSH_STATUS))],
        "flushed through the error callback"
    );
    assert_eq!(lb.alloc_task(4).unwrap_err(), Error::BadState, "alloc while Idle");
}

#[test]
fn doca_task_try_submit_validates_first() {
    let pe = Pe::create().unwrap();
    let (lb, _) = running(&pe, 1);
    let bad = lb.alloc_task(1).unwrap();
    bad.set_delay(doca_core::loopback::MAX_DELAY + Duration::from_secs(1));
    let back = bad.try_submit().unwrap_err();
    assert_eq!(back.error, Error::InvalidValue);
    assert_eq!(pe.num_inflight_tasks(), 0, "a refused task is still the caller's");
    back.value.set_delay(Duration::ZERO);
    back.value.try_submit().unwrap();
}

#[test]
fn doca_task_get_status_user_data_get_ctx_and_resubmit_from_the_completion_callback() {
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    let ctx = lb.as_ctx();
    pe.connect_ctx(&ctx).unwrap();
    ctx.set_user_data(Data::from_u64(99));
    let seen: Rc<RefCell<Vec<(u64, u64, bool)>>> = Rc::default();
    let rounds = Rc::new(Cell::new(0u32));
    let (s, r, c) = (seen.clone(), rounds.clone(), ctx.clone());
    lb.set_conf(
        move |t: EchoTask, task_data: Data, ctx_data: Data| {
            s.borrow_mut().push((task_data.as_u64(), ctx_data.as_u64(), t.ctx() == c));
            assert_eq!(t.status(), Ok(()));
            r.set(r.get() + 1);
            if r.get() < 1000 {
                t.set_user_data(Data::from_u64(r.get() as u64));
                t.submit().unwrap(); // ownership is back in the callback: resubmit it
            }
        },
        |_, _, _| {},
        1,
    )
    .unwrap();
    ctx.start().unwrap();
    let t = lb.alloc_task(1).unwrap();
    t.set_user_data(Data::from_u64(0));
    assert_eq!(t.user_data().as_u64(), 0);
    t.submit().unwrap();
    while rounds.get() < 1000 {
        pe.progress();
    }
    assert_eq!(seen.borrow().len(), 1000, "one task, recycled 1000 times");
    assert_eq!(seen.borrow()[999], (999, 99, true));
    let failing = Loopback::create(Started::Running);
    pe.connect_ctx(&failing.as_ctx()).unwrap();
    let status: Rc<RefCell<Option<Result<(), Error>>>> = Rc::default();
    let st = status.clone();
    failing.set_conf(|_, _, _| {}, move |t: EchoTask, _, _| *st.borrow_mut() = Some(t.status()), 1).unwrap();
    failing.as_ctx().start().unwrap();
    let t = failing.alloc_task(1).unwrap();
    t.set_fail(Some(Error::IoFailed));
    t.submit().unwrap();
    while status.borrow().is_none() {
        pe.progress();
    }
    assert_eq!(*status.borrow(), Some(Err(Error::IoFailed)), "doca_task_get_status in the error callback");
}

/// A state change counts as progress only for a program that asked to hear of it: after a
/// synchronous start without a state callback, `doca_pe_progress` says 0 until a task
/// completes (NVIDIA's sync_event samples loop `while (doca_pe_progress(pe) == 0)` right
/// after `doca_ctx_start` and then take their task for done); with a callback, the pass
/// that runs it says 1.
#[test]
fn doca_pe_progress_reports_a_state_change_only_to_its_callback() {
    for with_cb in [false, true] {
        let pe = Pe::create().unwrap();
        let lb = Loopback::create(Started::Running);
        let ctx = lb.as_ctx();
        pe.connect_ctx(&ctx).unwrap();
        lb.set_conf(|_: EchoTask, _, _| {}, |_: EchoTask, _, _| {}, 2).unwrap();
        let seen = Rc::new(Cell::new(0));
        if with_cb {
            let s = seen.clone();
            ctx.set_state_changed_cb(move |_, _, _, _| s.set(s.get() + 1)).unwrap();
        }
        ctx.start().unwrap();
        assert_eq!(ctx.state(), CtxState::Running);
        assert_eq!(pe.progress(), with_cb, "a transition is progress only when its callback runs");
        assert_eq!(seen.get(), u32::from(with_cb));
        lb.alloc_task(1).unwrap().submit().unwrap();
        assert!(pe.progress(), "a completion is progress");
    }
}
