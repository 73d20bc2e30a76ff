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
