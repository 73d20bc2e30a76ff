//! The points core itself checks (task allocation, submission, delivery), on the loopback
//! library: the same calls every library's tasks go through.
use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use doca_core::fault::{clear, install_text, take_fired, test_lock};
use doca_core::loopback::{EchoTask, Loopback};
use doca_core::Error;
use doca_core::{Pe, Result, Started};

type Seen = Rc<RefCell<Vec<(u64, Result<()>)>>>;

fn setup() -> (Pe, Loopback, Seen) {
    clear();
    take_fired();
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    let (ok, bad) = (seen.clone(), seen.clone());
    lb.set_conf(
        move |t: EchoTask, _, _| ok.borrow_mut().push((t.value(), t.status())),
        move |t: EchoTask, _, _| bad.borrow_mut().push((t.value(), t.status())),
        8,
    )
    .unwrap();
    lb.as_ctx().start().unwrap();
    (pe, lb, seen)
}

#[test]
fn a_task_kind_completes_with_the_chosen_code() {
    let _g = test_lock();
    let (pe, lb, seen) = setup();
    install_text("task.loopback.echo=every(2):fail(CONNECTION_RESET)").unwrap();
    for v in 1..=4 {
        lb.alloc_task(v).unwrap().submit().unwrap();
    }
    while pe.progress() {}
    clear();
    let got = seen.borrow().clone();
    let mut by_value = got.clone();
    by_value.sort_by_key(|(v, _)| *v);
    assert_eq!(
        by_value,
        [(1, Ok(())), (2, Err(Error::ConnectionReset)), (3, Ok(())), (4, Err(Error::ConnectionReset))]
    );
    let f: Vec<_> = take_fired().into_iter().map(|f| (f.point, f.hit)).collect();
    assert_eq!(f, [("task.loopback.echo".to_string(), 2), ("task.loopback.echo".to_string(), 4)]);
    assert_eq!(pe.num_inflight_tasks(), 0);
    lb.as_ctx().stop().unwrap();
    while pe.progress() {}
}

#[test]
fn allocations_are_refused_with_no_memory() {
    let _g = test_lock();
    let (pe, lb, _seen) = setup();
    install_text("alloc.task=1*nth(2)").unwrap();
    let first = lb.alloc_task(1).unwrap();
    assert_eq!(lb.alloc_task(2).unwrap_err(), Error::NoMemory);
    let third = lb.alloc_task(3).unwrap();
    clear();
    let f = take_fired();
    assert_eq!((f.len(), f[0].point.as_str(), f[0].detail.as_str()), (1, "alloc.task", "loopback.echo"));
    drop((first, third));
    lb.as_ctx().stop().unwrap();
    while pe.progress() {}
}

#[test]
fn completions_are_delayed() {
    let _g = test_lock();
    let (pe, lb, seen) = setup();
    install_text("task.loopback.echo=nth(1):delay(60)").unwrap();
    let t0 = Instant::now();
    lb.alloc_task(1).unwrap().submit().unwrap();
    while seen.borrow().is_empty() {
        pe.progress();
    }
    assert!(t0.elapsed() >= Duration::from_millis(60), "delivered after {:?}", t0.elapsed());
    assert_eq!(seen.borrow()[0], (1, Ok(())));
    clear();
    assert_eq!(take_fired()[0].action, "delay(60)");
    lb.as_ctx().stop().unwrap();
    while pe.progress() {}
}

/// A delayed completion is held back, never slept on: while it waits out its delay, the
/// engine keeps delivering the completions of another context's tasks, and an engine asleep
/// on its notification handle wakes up when it is due. (Before, the progress pass that met
/// it slept for the whole delay: every other context of the engine stopped.)
#[test]
fn a_delayed_completion_holds_back_only_itself() {
    let _g = test_lock();
    let (pe, slow, seen) = setup();
    let other = Loopback::create(Started::Running);
    pe.connect_ctx(&other.as_ctx()).unwrap();
    let others: Rc<RefCell<Vec<Instant>>> = Rc::default();
    let o = others.clone();
    other.set_conf(move |_, _, _| o.borrow_mut().push(Instant::now()), |_, _, _| {}, 4).unwrap();
    other.as_ctx().start().unwrap();
    let delay = Duration::from_millis(3000);
    install_text("task.loopback.echo=1*nth(1):delay(3000)").unwrap();
    let submitted = Instant::now();
    slow.alloc_task(7).unwrap().submit().unwrap();
    let due = submitted + delay;
    // The other context's tasks, one after the other, each waited for with progress.
    for _ in 0..50 {
        let before = others.borrow().len();
        other.alloc_task(1).unwrap().submit().unwrap();
        while others.borrow().len() == before {
            pe.progress();
        }
    }
    let before_due = others.borrow().iter().filter(|t| **t < due).count();
    assert!(before_due > 0, "the other context completed nothing while the delay ran");
    // Asleep on the notification handle: woken when the held completion is due.
    while seen.borrow().is_empty() {
        assert!(
            pe.wait(Some(Duration::from_secs(30))).unwrap(),
            "the engine was not woken when the completion was due"
        );
        while pe.progress() {}
    }
    assert!(Instant::now() >= due, "delivered before its delay");
    assert_eq!(seen.borrow()[0], (7, Ok(())));
    clear();
    assert_eq!(take_fired()[0].action, "delay(3000)");
    slow.as_ctx().stop().unwrap();
    other.as_ctx().stop().unwrap();
    while pe.progress() {}
}

/// A delay longer than the bound (`doca_core::fault::MAX_DELAY_MS`, 60 000) is a plan error
/// naming the part.
#[test]
fn a_delay_above_the_bound_is_a_plan_error() {
    let _g = test_lock();
    let e = install_text("task.cc.send=1*delay(4000000000000)").unwrap_err();
    assert_eq!((e.code(), e.part.as_str()), (Error::InvalidValue, "task.cc.send=1*delay(4000000000000)"));
    assert!(e.why.contains("60000"), "{e}");
    assert!(install_text("task.cc.send=delay(60001)").is_err());
    install_text("task.cc.send=delay(60000)").unwrap();
    clear();
}

/// A batch cut by a panicking callback: a task of the same batch that its callback resubmitted
/// (and a plan failed at once, inside the submit) is reported once more, with its new status,
/// through the error callback: the entry already handed out is not delivered again.
#[test]
fn after_a_panic_a_resubmitted_task_that_failed_at_once_reaches_the_error_callback() {
    let _g = test_lock();
    clear();
    take_fired();
    let pe = Pe::create().unwrap();
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).unwrap();
    type Log = Rc<RefCell<Vec<(&'static str, u64, Result<()>)>>>;
    let seen: Log = Rc::default();
    let (ok, bad) = (seen.clone(), seen.clone());
    let again = Rc::new(std::cell::Cell::new(true));
    lb.set_conf(
        move |t: EchoTask, _, _| {
            let v = t.value();
            ok.borrow_mut().push(("done", v, t.status()));
            if v == 1 && again.replace(false) {
                t.submit().map_err(|e| e.error).unwrap();
            } else if v == 2 {
                panic!("the callback of task 2 fails");
            }
        },
        move |t: EchoTask, _, _| bad.borrow_mut().push(("failed", t.value(), t.status())),
        4,
    )
    .unwrap();
    lb.as_ctx().start().unwrap();
    // The third submission (task 1's second) fails inside its submit.
    install_text("task.loopback.echo=1*nth(3):fail(CONNECTION_RESET)").unwrap();
    lb.alloc_task(1).unwrap().submit().unwrap();
    lb.alloc_task(2).unwrap().submit().unwrap();
    let spin = || {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for _ in 0..4 {
                pe.progress();
            }
        }))
        .is_err()
    };
    assert!(spin(), "task 2's callback panics through progress");
    assert!(!spin(), "nothing panics afterwards");
    clear();
    assert_eq!(
        *seen.borrow(),
        [("done", 1, Ok(())), ("done", 2, Ok(())), ("failed", 1, Err(Error::ConnectionReset))]
    );
    assert_eq!(pe.num_inflight_tasks(), 0);
}
