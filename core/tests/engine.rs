//! The progress engine, the context state machine and task pools, exercised through the
//! loopback context (a library context that uses only core's public plug-in interface).

use std::cell::{Cell, RefCell};
use std::os::fd::AsFd;
use std::rc::Rc;
use std::time::Duration;

use doca_core::loopback::{EchoTask, Loopback, FLUSH_STATUS};
use doca_core::{Ctx, CtxState, Data, Error, Pe, Started};

type Log = Rc<RefCell<Vec<(CtxState, CtxState)>>>;
type Outcomes = Rc<RefCell<Vec<(u64, Result<(), Error>)>>>;
/// (value, task user data, context user data, status) per completed task.
type Seen = Rc<RefCell<Vec<(u64, u64, u64, Result<(), Error>)>>>;

/// A connected loopback context whose state changes and task outcomes are recorded.
struct Rig {
    pe: Rc<Pe>,
    lb: Loopback,
    ctx: Ctx,
    states: Log,
    done: Outcomes,
}

fn rig(mode: Started, tasks: u32) -> Rig {
    let pe = Rc::new(Pe::create().unwrap());
    let lb = Loopback::create(mode);
    let ctx = lb.as_ctx();
    pe.connect_ctx(&ctx).unwrap();
    let states: Log = Rc::default();
    let s = states.clone();
    ctx.set_state_changed_cb(move |_, _, prev, next| s.borrow_mut().push((prev, next))).unwrap();
    let done: Outcomes = Rc::default();
    let (d1, d2) = (done.clone(), done.clone());
    lb.set_conf(
        move |t: EchoTask, _, _| d1.borrow_mut().push((t.value(), t.status())),
        move |t: EchoTask, _, _| d2.borrow_mut().push((t.value(), t.status())),
        tasks,
    )
    .unwrap();
    Rig { pe, lb, ctx, states, done }
}

fn taken(log: &Log) -> Vec<(CtxState, CtxState)> {
    std::mem::take(&mut *log.borrow_mut())
}

use CtxState::{Idle, Running, Starting, Stopping};

#[test]
fn synchronous_start_and_stop_rows() {
    let r = rig(Started::Running, 4);
    assert_eq!(r.ctx.state(), Idle);
    assert_eq!(r.ctx.stop(), Ok(()), "Idle: stop (nothing to do)");

    assert_eq!(r.ctx.start(), Ok(()), "Idle: synchronous start");
    assert_eq!(r.ctx.state(), Running, "state is current right after start");
    assert!(taken(&r.states).is_empty(), "callbacks never run inside start");
    assert!(r.pe.progress());
    assert_eq!(taken(&r.states), [(Idle, Running)]);
    assert!(!r.pe.progress(), "nothing left to deliver");

    assert_eq!(r.ctx.start(), Err(Error::BadState), "Running: start");
    assert_eq!(r.ctx.stop(), Ok(()), "Running: stop with no task");
    assert_eq!(r.ctx.state(), Idle);
    assert!(r.pe.progress());
    assert_eq!(taken(&r.states), [(Running, Idle)]);
}

#[test]
fn asynchronous_start_rows() {
    let r = rig(Started::Starting, 4);
    assert_eq!(r.ctx.start(), Err(Error::InProgress), "Idle: asynchronous start");
    assert_eq!(r.ctx.state(), Starting);
    assert_eq!(r.ctx.start(), Err(Error::BadState), "Starting: start");
    assert!(r.pe.progress());
    assert_eq!(r.ctx.state(), Running, "Starting: the library finished starting");
    assert_eq!(taken(&r.states), [(Idle, Starting), (Starting, Running)]);

    r.ctx.stop().unwrap();
    r.pe.progress();
    taken(&r.states);
    assert_eq!(r.ctx.start(), Err(Error::InProgress));
    assert_eq!(r.ctx.stop(), Err(Error::InProgress), "Starting: stop goes through Stopping");
    assert_eq!(r.ctx.state(), Stopping);
    r.pe.progress();
    assert_eq!(r.ctx.state(), Idle, "no task can exist: Idle on the next progress");
    assert_eq!(taken(&r.states), [(Idle, Starting), (Starting, Stopping), (Stopping, Idle)]);
}

#[test]
fn stop_with_tasks_in_flight_drains_through_the_error_callback() {
    let r = rig(Started::Running, 4);
    r.ctx.start().unwrap();
    r.pe.progress();
    taken(&r.states);
    for v in [1, 2] {
        r.lb.alloc_task(v).unwrap().submit().unwrap();
    }
    let held = r.lb.alloc_task(3).unwrap();
    assert_eq!(r.ctx.num_inflight_tasks(), 2);
    assert_eq!(r.pe.num_inflight_tasks(), 2);

    assert_eq!(r.ctx.stop(), Err(Error::InProgress), "Running: stop with tasks");
    assert_eq!(r.ctx.state(), Stopping);
    assert_eq!(r.ctx.stop(), Err(Error::InProgress), "Stopping: stop");
    assert_eq!(r.ctx.start(), Err(Error::BadState), "Stopping: start");
    assert_eq!(r.lb.alloc_task(9).unwrap_err(), Error::BadState);
    let refused = held.submit().unwrap_err();
    assert_eq!(refused.error, Error::BadState, "submit while Stopping");
    let held = refused.into_inner();

    assert!(r.pe.progress());
    assert_eq!(*r.done.borrow(), [(1, Err(FLUSH_STATUS)), (2, Err(FLUSH_STATUS))]);
    assert_eq!(r.ctx.num_inflight_tasks(), 0);
    assert_eq!(r.ctx.state(), Stopping, "a task is still allocated");
    assert_eq!(taken(&r.states), [(Running, Stopping)]);
    assert!(!r.pe.progress());
    assert_eq!(r.ctx.state(), Stopping);
    drop(held);
    assert!(r.pe.progress());
    assert_eq!((r.ctx.state(), taken(&r.states)), (Idle, vec![(Stopping, Idle)]));
}

#[test]
fn stopping_reaches_idle_once_the_last_task_is_freed() {
    let r = rig(Started::Running, 4);
    r.ctx.start().unwrap();
    let held = r.lb.alloc_task(7).unwrap();
    assert_eq!(r.ctx.num_allocated_tasks(), 1);
    assert_eq!(r.ctx.stop(), Err(Error::InProgress));
    r.pe.progress();
    assert_eq!(r.ctx.state(), Stopping);
    held.free();
    assert_eq!(r.ctx.num_allocated_tasks(), 0);
    assert!(r.pe.progress());
    assert_eq!(r.ctx.state(), Idle);
    assert_eq!(taken(&r.states), [(Idle, Running), (Running, Stopping), (Stopping, Idle)]);
    // And it can run again, reusing its pool.
    r.ctx.start().unwrap();
    r.lb.alloc_task(8).unwrap().submit().unwrap();
    r.pe.progress();
    assert_eq!(r.done.borrow().last(), Some(&(8, Ok(()))));
}

#[test]
fn tasks_complete_on_the_next_progress_with_their_status_and_user_data() {
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    let ctx = lb.as_ctx();
    pe.connect_ctx(&ctx).unwrap();
    ctx.set_user_data(Data::from_u64(77));
    let seen: Seen = Rc::default();
    let (s1, s2) = (seen.clone(), seen.clone());
    let ctx_of_task: Rc<RefCell<Option<Ctx>>> = Rc::default();
    let c = ctx_of_task.clone();
    lb.set_conf(
        move |t: EchoTask, td: Data, cd: Data| {
            *c.borrow_mut() = Some(t.ctx());
            s1.borrow_mut().push((t.value(), td.as_u64(), cd.as_u64(), t.status()))
        },
        move |t: EchoTask, td: Data, cd: Data| {
            s2.borrow_mut().push((t.value(), td.as_u64(), cd.as_u64(), t.status()))
        },
        8,
    )
    .unwrap();
    ctx.start().unwrap();

    let ok = lb.alloc_task(1).unwrap();
    ok.set_user_data(Data::from_u64(11));
    assert_eq!(ok.user_data(), Data::from_u64(11));
    assert_eq!(ok.status(), Ok(()));
    ok.submit().unwrap();
    let bad = lb.alloc_task(2).unwrap();
    bad.set_fail(Some(Error::IoFailed));
    bad.submit().unwrap();
    assert!(seen.borrow().is_empty(), "callbacks never run inside submit");

    pe.progress();
    assert_eq!(*seen.borrow(), [(1, 11, 77, Ok(())), (2, 0, 77, Err(Error::IoFailed))]);
    assert_eq!(ctx_of_task.borrow().as_ref(), Some(&ctx));

    let invalid = lb.alloc_task(3).unwrap();
    invalid.set_fail(Some(Error::Success));
    let refused = invalid.try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue, "try_submit validates");
    assert_eq!(refused.into_inner().value(), 3, "the caller still owns a refused task");
    assert_eq!(ctx.num_allocated_tasks(), 0, "dropping the refused task freed it");

    let forever = lb.alloc_task(4).unwrap();
    forever.set_delay(Duration::MAX);
    let refused = forever.submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue, "a delay above MAX_DELAY");
}

#[test]
fn pool_limits_and_configuration_errors() {
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    let ctx = lb.as_ctx();
    pe.connect_ctx(&ctx).unwrap();
    assert_eq!(lb.alloc_task(0).unwrap_err(), Error::BadState, "alloc in Idle");
    assert_eq!(
        lb.set_conf(|_, _, _| {}, |_, _, _| {}, doca_core::loopback::MAX_TASKS + 1),
        Err(Error::InvalidValue)
    );
    ctx.start().unwrap();
    assert_eq!(lb.alloc_task(0).unwrap_err(), Error::NoMemory, "task type not configured: a pool of none");
    assert_eq!(
        lb.set_conf(|_, _, _| {}, |_, _, _| {}, 2),
        Err(Error::BadState),
        "configuration while running"
    );
    assert_eq!(ctx.set_state_changed_cb(|_, _, _, _| {}), Ok(()), "any state (doca_ctx.h sets no rule)");
    ctx.stop().unwrap();

    // 0 tasks is accepted, as DOCA's libraries accept it (NVIDIA's sync event samples pass 0
    // when no count is given): a pool of none, whose every allocation is NO_MEMORY.
    lb.set_conf(|_, _, _| {}, |_, _, _| {}, 0).unwrap();
    ctx.start().unwrap();
    assert_eq!(lb.alloc_task(1).unwrap_err(), Error::NoMemory, "a pool of 0 tasks");
    ctx.stop().unwrap();

    lb.set_conf(|_, _, _| {}, |_, _, _| {}, 2).unwrap();
    ctx.start().unwrap();
    let a = lb.alloc_task(1).unwrap();
    let b = lb.alloc_task(2).unwrap();
    assert_eq!(lb.alloc_task(3).unwrap_err(), Error::NoMemory, "pool exhausted");
    drop(a);
    let c = lb.alloc_task(4).unwrap();
    assert_eq!(c.value(), 4);
    assert_eq!(lb.alloc_task(5).unwrap_err(), Error::NoMemory);
    // Completed tasks come back through a callback that drops them: the pool refills.
    b.submit().unwrap();
    c.submit().unwrap();
    pe.progress();
    assert_eq!(ctx.num_allocated_tasks(), 0);
    for _ in 0..1000 {
        lb.alloc_task(1).unwrap().submit().unwrap();
        lb.alloc_task(2).unwrap().submit().unwrap();
        pe.progress();
    }
}

#[test]
fn progress_engine_errors() {
    let pe = Pe::create().unwrap();
    let other = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    let ctx = lb.as_ctx();
    assert_eq!(ctx.start(), Err(Error::NotConnected), "start without a progress engine");
    pe.connect_ctx(&ctx).unwrap();
    assert_eq!(pe.connect_ctx(&ctx), Err(Error::NotPermitted), "second connect");
    assert_eq!(other.connect_ctx(&ctx), Err(Error::NotPermitted), "connect to a second engine");
    assert_eq!(pe.num_ctxs(), 1);

    let pe = pe.destroy().unwrap_err();
    assert_eq!(pe.error, Error::InUse, "destroy with a connected context");
    let pe = pe.into_inner();

    ctx.start().unwrap();
    let lb = lb.destroy().unwrap_err();
    assert_eq!(lb.error, Error::BadState, "destroy a running context");
    let lb = lb.into_inner();
    ctx.stop().unwrap();
    lb.destroy().unwrap();
    assert_eq!(pe.num_ctxs(), 0);
    assert!(!ctx.is_connected());
    pe.destroy().unwrap();

    // A context whose engine went away is not Idle-and-free: connecting it elsewhere while
    // it is still Running is BAD_STATE.
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    let ctx = lb.as_ctx();
    pe.connect_ctx(&ctx).unwrap();
    ctx.start().unwrap();
    drop(pe);
    assert_eq!(other.connect_ctx(&ctx), Err(Error::BadState));
}

#[test]
fn callbacks_submit_stop_and_touch_other_contexts() {
    let pe = Rc::new(Pe::create().unwrap());
    let first = Rc::new(Loopback::create(Started::Running));
    let second = Rc::new(Loopback::create(Started::Running));
    pe.connect_ctx(&first.as_ctx()).unwrap();
    pe.connect_ctx(&second.as_ctx()).unwrap();
    second.set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();

    let rounds = Rc::new(Cell::new(0u32));
    let spawned: Rc<RefCell<Option<Loopback>>> = Rc::default();
    let nested = Rc::new(Cell::new(None));
    let (r, p, s2, sp, n) = (rounds.clone(), pe.clone(), second.clone(), spawned.clone(), nested.clone());
    let me = Rc::downgrade(&first);
    first
        .set_conf(
            move |t: EchoTask, _, _| {
                let round = r.get() + 1;
                r.set(round);
                n.set(Some(p.progress()));
                match round {
                    // Resubmit the same task from its own completion.
                    1 | 2 => t.submit().unwrap(),
                    // Allocate and submit a new one (the pool has one task: free this first).
                    3 => {
                        drop(t);
                        me.upgrade().unwrap().alloc_task(40).unwrap().submit().unwrap();
                    }
                    // Touch other contexts: start the second, create and connect a third.
                    4 => {
                        s2.as_ctx().start().unwrap();
                        let third = Loopback::create(Started::Starting);
                        p.connect_ctx(&third.as_ctx()).unwrap();
                        assert_eq!(third.as_ctx().start(), Err(Error::InProgress));
                        *sp.borrow_mut() = Some(third);
                        t.submit().unwrap();
                    }
                    // Stop its own context from inside the completion of its last task.
                    _ => {
                        assert_eq!(t.ctx().stop(), Err(Error::InProgress), "this task is still held");
                        drop(t);
                    }
                }
            },
            |_, _, _| panic!("no task of this test fails"),
            1,
        )
        .unwrap();
    first.as_ctx().start().unwrap();
    first.alloc_task(10).unwrap().submit().unwrap();
    for _ in 0..10 {
        pe.progress();
    }
    assert_eq!(rounds.get(), 5);
    assert_eq!(nested.get(), Some(false), "progress from inside a callback is refused");
    assert_eq!(first.as_ctx().state(), Idle);
    assert_eq!(second.as_ctx().state(), Running);
    assert_eq!(spawned.borrow().as_ref().unwrap().as_ctx().state(), Running);
    assert_eq!(pe.num_ctxs(), 3);
}

#[test]
fn a_sleeping_epoll_wait_wakes_when_a_task_completes() {
    use rustix::event::epoll;
    let r = rig(Started::Running, 4);
    r.ctx.start().unwrap();
    while r.pe.progress() {}

    // The application's own epoll set holds the engine's notification handle, as in DOCA's
    // pe_event sample.
    let app = epoll::create(epoll::CreateFlags::CLOEXEC).unwrap();
    epoll::add(&app, r.pe.notification_handle(), epoll::EventData::new_u64(1), epoll::EventFlags::IN)
        .unwrap();
    let mut events =
        [epoll::Event { flags: epoll::EventFlags::empty(), data: epoll::EventData::new_u64(0) }; 2];
    let zero = rustix::time::Timespec { tv_sec: 0, tv_nsec: 0 };
    let long = rustix::time::Timespec { tv_sec: 30, tv_nsec: 0 };

    // Nothing to do: the armed handle stays quiet.
    r.pe.request_notification().unwrap();
    assert_eq!(epoll::wait(&app, &mut events[..], Some(&zero)).unwrap(), 0);
    r.pe.clear_notification().unwrap();

    // A task that completes 30 ms after submission: sleep until the engine says so.
    let task = r.lb.alloc_task(5).unwrap();
    task.set_delay(Duration::from_millis(30));
    task.submit().unwrap();
    assert!(!r.pe.progress(), "not due yet");
    r.pe.request_notification().unwrap();
    let woke = epoll::wait(&app, &mut events[..], Some(&long)).unwrap();
    assert_eq!(woke, 1, "woken by the context's timer");
    r.pe.clear_notification().unwrap();
    while r.done.borrow().is_empty() {
        if !r.pe.progress() {
            r.pe.wait(Some(Duration::from_secs(30))).unwrap();
        }
    }
    assert_eq!(*r.done.borrow(), [(5, Ok(()))]);

    // Work already waiting when arming: the handle is readable at once.
    r.lb.alloc_task(6).unwrap().submit().unwrap();
    r.pe.request_notification().unwrap();
    assert_eq!(epoll::wait(&app, &mut events[..], Some(&zero)).unwrap(), 1);
    r.pe.clear_notification().unwrap();
    r.pe.progress();
    assert_eq!(r.done.borrow().len(), 2);

    // A pending state-change callback also counts as work.
    r.ctx.stop().unwrap();
    r.pe.request_notification().unwrap();
    assert_eq!(epoll::wait(&app, &mut events[..], Some(&zero)).unwrap(), 1);
    r.pe.clear_notification().unwrap();
    assert!(r.pe.progress());
    assert_eq!(taken(&r.states).last(), Some(&(Running, Idle)));
    let _ = r.pe.as_fd();
}

/// A program with two engines sleeps on both (`Pe::wait_any`): it times out while neither
/// has work, and is woken by the one whose task comes due — the other stays untouched.
#[test]
fn wait_any_sleeps_on_several_engines_and_wakes_for_the_one_with_work() {
    let (a, b) = (rig(Started::Running, 4), rig(Started::Running, 4));
    a.ctx.start().unwrap();
    b.ctx.start().unwrap();
    while a.pe.progress() | b.pe.progress() {}

    assert!(
        !Pe::wait_any(&[&a.pe, &b.pe], Some(Duration::from_millis(10))).unwrap(),
        "nothing to do: timed out"
    );

    let task = b.lb.alloc_task(7).unwrap();
    task.set_delay(Duration::from_millis(20));
    task.submit().unwrap();
    assert!(!b.pe.progress(), "not due yet");
    while b.done.borrow().is_empty() {
        if Pe::wait_any(&[&a.pe, &b.pe], Some(Duration::from_secs(30))).unwrap() {
            assert!(!a.pe.progress(), "the idle engine has nothing to deliver");
        }
        b.pe.progress();
    }
    assert_eq!(*b.done.borrow(), [(7, Ok(()))]);
    assert!(a.done.borrow().is_empty());
}

/// A library context written outside core, against the public plug-in interface only; its
/// start result and what its next poll reports are scripted by the test.
mod scripted {
    use std::cell::Cell;
    use std::rc::Rc;

    use doca_core::{Ctx, CtxCell, CtxCore, CtxOps, Error, Now, Result, Started};

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Next {
        Nothing,
        Connected,
        StartFailed,
        Fatal,
        /// Connected and lost in the same poll.
        ConnectedThenLost,
    }

    pub struct Lib {
        pub start: Cell<Result<Started>>,
        pub next: Cell<Next>,
        pub busy: Cell<bool>,
        /// What `needs_poll` answers.
        pub polls: Cell<bool>,
        /// Polls so far.
        pub polled: Cell<u32>,
    }

    impl CtxOps for Lib {
        fn kind(&self) -> &'static str {
            "scripted"
        }
        fn start(&self, _core: &CtxCore) -> Result<Started> {
            self.start.get()
        }
        fn stop(&self, _core: &CtxCore) {}
        fn progress(&self, core: &CtxCore, _now: &Now<'_>) -> bool {
            self.polled.set(self.polled.get() + 1);
            match self.next.replace(Next::Nothing) {
                Next::Nothing => false,
                Next::Connected => {
                    core.set_running();
                    true
                }
                Next::StartFailed => {
                    core.abort_start(Error::ConnectionAborted, "scripted failure");
                    true
                }
                Next::Fatal => {
                    core.fail(Error::ConnectionReset, "scripted peer loss");
                    true
                }
                Next::ConnectedThenLost => {
                    core.set_running();
                    core.fail(Error::ConnectionReset, "scripted peer loss");
                    true
                }
            }
        }
        fn is_busy(&self, _core: &CtxCore) -> bool {
            self.busy.get()
        }
        fn needs_poll(&self, _core: &CtxCore) -> bool {
            self.polls.get()
        }
    }

    pub fn create() -> (Rc<CtxCell<Lib>>, Ctx) {
        let cell = CtxCell::new(|_| Lib {
            start: Cell::new(Ok(Started::Running)),
            next: Cell::new(Next::Nothing),
            busy: Cell::new(false),
            polls: Cell::new(true),
            polled: Cell::new(0),
        });
        let ctx = Ctx::from(cell.clone());
        (cell, ctx)
    }
}

#[test]
fn library_driven_rows_refused_start_failed_start_fatal_error_and_busy_stop() {
    use scripted::Next;
    let pe = Pe::create().unwrap();
    let (lib, ctx) = scripted::create();
    pe.connect_ctx(&ctx).unwrap();
    let states: Log = Rc::default();
    let s = states.clone();
    ctx.set_state_changed_cb(move |_, _, prev, next| s.borrow_mut().push((prev, next))).unwrap();

    // Idle: start refused by the library → Idle, its error, no callback.
    lib.ops().start.set(Err(Error::InvalidValue));
    assert_eq!(ctx.start(), Err(Error::InvalidValue));
    assert_eq!(ctx.state(), Idle);
    assert!(!pe.progress());
    assert!(taken(&states).is_empty());

    // Starting: the library fails to start → Idle.
    lib.ops().start.set(Ok(Started::Starting));
    assert_eq!(ctx.start(), Err(Error::InProgress));
    lib.ops().next.set(Next::StartFailed);
    assert!(pe.progress());
    assert_eq!(ctx.state(), Idle);
    assert_eq!(taken(&states), [(Idle, Starting), (Starting, Idle)]);

    // Starting → Running when the library connects; Running → Stopping on a fatal error,
    // then Idle once the library is no longer busy.
    assert_eq!(ctx.start(), Err(Error::InProgress));
    lib.ops().next.set(Next::Connected);
    pe.progress();
    assert_eq!(ctx.state(), Running);
    lib.ops().busy.set(true);
    lib.ops().next.set(Next::Fatal);
    assert!(pe.progress());
    assert_eq!(ctx.state(), Stopping);
    assert!(!pe.progress());
    assert_eq!(ctx.state(), Stopping, "the library is still busy");
    lib.ops().busy.set(false);
    assert!(pe.progress());
    assert_eq!(ctx.state(), Idle);
    assert_eq!(
        taken(&states),
        [(Idle, Starting), (Starting, Running), (Running, Stopping), (Stopping, Idle)]
    );

    // Running: stop while the library is busy → Stopping, Idle when it is done.
    lib.ops().start.set(Ok(Started::Running));
    ctx.start().unwrap();
    lib.ops().busy.set(true);
    assert_eq!(ctx.stop(), Err(Error::InProgress));
    assert_eq!(ctx.state(), Stopping);
    lib.ops().busy.set(false);
    pe.progress();
    assert_eq!(taken(&states), [(Idle, Running), (Running, Stopping), (Stopping, Idle)]);
    assert_eq!(ctx.kind(), "scripted");
}

#[test]
fn a_delayed_task_completes_when_the_engines_clock_reaches_its_deadline() {
    use doca_core::clock::ManualClock;
    let clock = Rc::new(ManualClock::new());
    let pe = Pe::create_with_clock(clock.clone()).unwrap();
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).unwrap();
    let done: Rc<RefCell<Vec<u64>>> = Rc::default();
    let d = done.clone();
    lb.set_conf(move |t: EchoTask, _, _| d.borrow_mut().push(t.value()), |_, _, _| {}, 2).unwrap();
    lb.as_ctx().start().unwrap();
    pe.progress();
    let task = lb.alloc_task(9).unwrap();
    task.set_delay(Duration::from_secs(3600));
    task.submit().unwrap();
    assert!(!pe.progress());
    clock.advance(Duration::from_secs(3599));
    assert!(!pe.progress(), "one second early");
    assert!(done.borrow().is_empty());
    clock.advance(Duration::from_secs(1));
    assert!(pe.progress());
    assert_eq!(*done.borrow(), [9], "due on the engine's clock, not the wall clock");
}

#[test]
fn a_task_resubmitted_from_its_completion_callback_completes_on_the_next_progress() {
    let pe = Rc::new(Pe::create().unwrap());
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).unwrap();
    let rounds = Rc::new(Cell::new(0u32));
    let r = rounds.clone();
    lb.set_conf(
        move |t: EchoTask, _, _| {
            r.set(r.get() + 1);
            if r.get() < 3 {
                t.submit().unwrap();
            }
        },
        |_, _, _| {},
        1,
    )
    .unwrap();
    lb.as_ctx().start().unwrap();
    lb.alloc_task(1).unwrap().submit().unwrap();
    for expected in 1..=3 {
        assert!(pe.progress());
        assert_eq!(rounds.get(), expected, "one round per progress");
    }
    assert!(!pe.progress());
    assert_eq!(lb.as_ctx().num_allocated_tasks(), 0, "the last round dropped the task");
}

/// A library that says it has nothing to poll leaves the engine's list after a few quiet
/// passes (an idle context costs nothing), and `CtxCore::activate` brings it back.
#[test]
fn a_context_with_nothing_to_poll_is_skipped_until_it_is_activated() {
    use scripted::Next;
    let pe = Pe::create().unwrap();
    let (lib, ctx) = scripted::create();
    pe.connect_ctx(&ctx).unwrap();
    lib.ops().polls.set(false);
    ctx.start().unwrap();
    for _ in 0..100 {
        pe.progress();
    }
    let polled = lib.ops().polled.get();
    assert!(polled < 100, "visited on every pass ({polled}) although it has nothing to poll");
    for _ in 0..100 {
        pe.progress();
    }
    assert_eq!(lib.ops().polled.get(), polled, "off the list: not polled any more");
    // Something arrived for it (a library would learn it from a watched fd or a peer).
    lib.ops().next.set(Next::Fatal);
    lib.core().activate();
    pe.progress();
    assert_eq!(lib.ops().polled.get(), polled + 1, "polled again once activated");
    assert_eq!(ctx.state(), CtxState::Idle, "the fatal error it found stopped it (nothing in flight)");

    // A library that polls is visited on every pass.
    let (busy, bctx) = scripted::create();
    pe.connect_ctx(&bctx).unwrap();
    bctx.start().unwrap();
    let before = busy.ops().polled.get();
    for _ in 0..100 {
        pe.progress();
    }
    assert_eq!(busy.ops().polled.get() - before, 100);
}

/// A context destroyed from its own state-changed callback is not kept alive by the engine:
/// its library part is dropped at once (a consumer tells its peer it expired then).
#[test]
fn a_context_destroyed_in_its_own_callback_is_released_at_once() {
    let pe = Pe::create().unwrap();
    let (lib, ctx) = scripted::create();
    pe.connect_ctx(&ctx).unwrap();
    let weak = Rc::downgrade(&lib);
    let holder: Rc<RefCell<Option<Rc<doca_core::CtxCell<scripted::Lib>>>>> = Rc::new(RefCell::new(Some(lib)));
    let h = holder.clone();
    ctx.set_state_changed_cb(move |_, _: &Ctx, _, next| {
        if next == CtxState::Idle {
            if let Some(lib) = h.borrow_mut().take() {
                lib.core().destroy().unwrap();
            }
        }
    })
    .unwrap();
    ctx.start().unwrap();
    pe.progress();
    ctx.stop().unwrap();
    drop(ctx);
    pe.progress();
    assert!(holder.borrow().is_none(), "the callback destroyed it");
    assert!(weak.upgrade().is_none(), "nothing holds the destroyed context");
}

/// A callback that destroys a context the pass already visited does not make the pass skip
/// the next one: every context with a finished task gets its completion in the same pass.
#[test]
fn destroying_an_earlier_context_from_a_callback_skips_no_context_in_the_pass() {
    let pe = Pe::create().unwrap();
    let first = Rc::new(RefCell::new(Some(Loopback::create(Started::Running))));
    let (middle, last) = (Loopback::create(Started::Running), Loopback::create(Started::Running));
    let done = Rc::new(RefCell::new(Vec::new()));
    let f = first.clone();
    let d = done.clone();
    first
        .borrow()
        .as_ref()
        .unwrap()
        .set_conf(move |_, _, _| d.borrow_mut().push("first"), |_, _, _| {}, 1)
        .unwrap();
    let d = done.clone();
    middle
        .set_conf(
            move |_, _, _| {
                d.borrow_mut().push("middle");
                // The first context finished its task earlier in this pass: stop and destroy it.
                let lb = f.borrow_mut().take().unwrap();
                lb.as_ctx().stop().unwrap();
                assert_eq!(lb.as_ctx().state(), Idle);
                lb.destroy().map_err(|r| r.error).unwrap();
            },
            |_, _, _| {},
            1,
        )
        .unwrap();
    let d = done.clone();
    last.set_conf(move |_, _, _| d.borrow_mut().push("last"), |_, _, _| {}, 1).unwrap();
    for lb in [first.borrow().as_ref().unwrap(), &middle, &last] {
        pe.connect_ctx(&lb.as_ctx()).unwrap();
        lb.as_ctx().start().unwrap();
    }
    // Let the start callbacks pass and the contexts leave the visiting list.
    for _ in 0..64 {
        pe.progress();
    }
    // Activated in this order: [first, middle, last].
    first.borrow().as_ref().unwrap().alloc_task(1).unwrap().submit().unwrap();
    middle.alloc_task(2).unwrap().submit().unwrap();
    last.alloc_task(3).unwrap().submit().unwrap();
    assert!(pe.progress());
    assert_eq!(*done.borrow(), ["first", "middle", "last"], "one pass delivers all three");
    assert!(first.borrow().is_none());
    assert_eq!(pe.num_ctxs(), 2);
}

/// A callback that destroys a context the pass has not reached yet (on the visiting list
/// behind it, lingering after its last completion): the walk skips it, the list drops it
/// after the walk, and the engine goes on with the others — later passes deliver as before.
#[test]
fn destroying_a_later_context_from_a_callback_skips_it_and_keeps_the_list_whole() {
    let pe = Pe::create().unwrap();
    let (first, other) = (Loopback::create(Started::Running), Loopback::create(Started::Running));
    let last = Rc::new(RefCell::new(Some(Loopback::create(Started::Running))));
    let done = Rc::new(RefCell::new(Vec::new()));
    let (d, l) = (done.clone(), last.clone());
    first
        .set_conf(
            move |t, _, _| {
                d.borrow_mut().push("first");
                // Its second completion destroys `last`, which lingers behind it on the list.
                if t.value() == 2 {
                    let lb = l.borrow_mut().take().unwrap();
                    lb.as_ctx().stop().unwrap();
                    assert_eq!(lb.as_ctx().state(), Idle, "nothing in flight: Idle at once");
                    lb.destroy().map_err(|r| r.error).unwrap();
                }
            },
            |_, _, _| {},
            1,
        )
        .unwrap();
    let d = done.clone();
    other.set_conf(move |_, _, _| d.borrow_mut().push("other"), |_, _, _| {}, 1).unwrap();
    let d = done.clone();
    last.borrow()
        .as_ref()
        .unwrap()
        .set_conf(move |_, _, _| d.borrow_mut().push("last"), |_, _, _| {}, 1)
        .unwrap();
    for lb in [&first, &other, last.borrow().as_ref().unwrap()] {
        pe.connect_ctx(&lb.as_ctx()).unwrap();
        lb.as_ctx().start().unwrap();
    }
    for _ in 0..64 {
        pe.progress();
    }
    // Visiting list [first, last]: both complete a task, then linger.
    first.alloc_task(1).unwrap().submit().unwrap();
    last.borrow().as_ref().unwrap().alloc_task(3).unwrap().submit().unwrap();
    assert!(pe.progress());
    assert_eq!(*done.borrow(), ["first", "last"]);
    // first's next completion destroys last, still on the list behind it; `other` joins
    // during the pass and waits for the next one.
    first.alloc_task(2).unwrap().submit().unwrap();
    other.alloc_task(4).unwrap().submit().unwrap();
    assert!(pe.progress());
    assert!(last.borrow().is_none(), "destroyed by first's callback");
    assert_eq!(pe.num_ctxs(), 2);
    while pe.progress() {}
    assert_eq!(*done.borrow(), ["first", "last", "first", "other"]);
    // The engine goes on: both survivors deliver in later passes.
    done.borrow_mut().clear();
    for round in 0..3 {
        other.alloc_task(20 + round).unwrap().submit().unwrap();
        first.alloc_task(10 + round).unwrap().submit().unwrap();
        while pe.progress() {}
    }
    assert_eq!(done.borrow().len(), 6, "every later task delivered once: {:?}", done.borrow());
}

/// `doca_task_submit_ex`: a library that keeps nothing back takes a task submitted without
/// `FLUSH` as a flushing one (it completes on the next progress); `doca_ctx_flush_tasks` is
/// harmless in any state.
#[test]
fn submit_ex_without_flush_on_a_library_that_keeps_nothing_back_completes_as_submit() {
    use doca_core::TaskSubmitFlags;
    let r = rig(Started::Running, 4);
    r.ctx.flush_tasks(); // Idle: nothing to do
    r.ctx.start().unwrap();
    r.lb.alloc_task(1).unwrap().submit_ex(TaskSubmitFlags::empty()).unwrap();
    r.lb.alloc_task(2).unwrap().submit_ex(TaskSubmitFlags::OPTIMIZE_REPORTS).unwrap();
    r.lb.alloc_task(3).unwrap().submit_ex(TaskSubmitFlags::FLUSH).unwrap();
    r.ctx.flush_tasks();
    assert_eq!(r.ctx.num_inflight_tasks(), 3);
    r.pe.progress();
    assert_eq!(*r.done.borrow(), [(1, Ok(())), (2, Ok(())), (3, Ok(()))]);
}

/// One poll of the library goes Starting → Running → Stopping (→ Idle): each callback finds
/// the context in the state it announces, so a RUNNING callback can do what Running allows.
#[test]
fn each_state_callback_finds_its_context_in_the_state_it_announces() {
    use scripted::Next;
    let pe = Pe::create().unwrap();
    let (lib, ctx) = scripted::create();
    pe.connect_ctx(&ctx).unwrap();
    let seen: Rc<RefCell<Vec<(CtxState, CtxState, CtxState)>>> = Rc::default();
    let s = seen.clone();
    ctx.set_state_changed_cb(move |_, c, prev, next| s.borrow_mut().push((prev, next, c.state()))).unwrap();
    lib.ops().start.set(Ok(Started::Starting));
    assert_eq!(ctx.start(), Err(Error::InProgress));
    lib.ops().next.set(Next::ConnectedThenLost);
    assert!(pe.progress());
    assert_eq!(ctx.state(), Idle);
    assert_eq!(
        *seen.borrow(),
        [
            (Idle, Starting, Starting),
            (Starting, Running, Running),
            (Running, Stopping, Stopping),
            (Stopping, Idle, Idle)
        ]
    );
}

/// Start then stop before any progress: both transitions get their callback, in order, at
/// the next progress; the first finds the context already Idle (the later state).
#[test]
fn start_then_stop_before_any_progress_delivers_both_callbacks_in_order() {
    let pe = Pe::create().unwrap();
    let (_lib, ctx) = scripted::create();
    pe.connect_ctx(&ctx).unwrap();
    let seen: Rc<RefCell<Vec<(CtxState, CtxState, CtxState)>>> = Rc::default();
    let s = seen.clone();
    ctx.set_state_changed_cb(move |_, c, prev, next| s.borrow_mut().push((prev, next, c.state()))).unwrap();
    ctx.start().unwrap();
    ctx.stop().unwrap();
    assert!(seen.borrow().is_empty(), "no callback inside start or stop");
    pe.progress();
    assert_eq!(*seen.borrow(), [(Idle, Running, Idle), (Running, Idle, Idle)]);
}

#[test]
fn a_callback_that_panics_leaves_an_engine_that_delivers_the_rest_on_the_next_pass() {
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).unwrap();
    let seen: Rc<RefCell<Vec<u64>>> = Rc::default();
    let s = seen.clone();
    lb.set_conf(
        move |t: EchoTask, _, _| {
            let v = t.value();
            s.borrow_mut().push(v);
            if v == 1 {
                panic!("the application's callback fails on task 1");
            }
        },
        |_, _, _| {},
        4,
    )
    .unwrap();
    lb.as_ctx().start().unwrap();
    while pe.progress() {}
    // Both finish in one pass; the first one's callback panics through `progress`.
    lb.alloc_task(1).unwrap().submit().unwrap();
    lb.alloc_task(2).unwrap().submit().unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for _ in 0..4 {
            pe.progress();
        }
    }));
    assert!(caught.is_err(), "the callback's panic reaches the caller");
    assert!(!pe.is_in_progress(), "the unwound pass ended");
    assert_eq!(*seen.borrow(), [1]);
    // The next pass is not refused as a re-entry: task 2 is delivered, and the engine goes on.
    for _ in 0..4 {
        pe.progress();
    }
    assert_eq!(*seen.borrow(), [1, 2]);
    lb.alloc_task(3).unwrap().submit().unwrap();
    for _ in 0..4 {
        pe.progress();
    }
    assert_eq!(*seen.borrow(), [1, 2, 3]);
    assert_eq!(pe.num_inflight_tasks(), 0);
}
