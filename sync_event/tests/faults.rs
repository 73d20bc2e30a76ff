//! The fault plan's `task.sync_event.wait` point: a wait task completes with the chosen code
//! through its error callback, without waiting; get/set/add tasks are not hit by it.

use std::cell::RefCell;
use std::rc::Rc;

use doca_core::{fault, Data, Error, Pe};
use doca_sync_event::SyncEvent;

#[test]
fn a_wait_task_fails_with_the_code_the_plan_chose() {
    fault::install_text("task.sync_event.wait=nth(2):fail(IO_FAILED)").unwrap();
    let se = SyncEvent::create().unwrap();
    let ctx = se.as_ctx().unwrap();
    let pe = Pe::create().unwrap();
    pe.connect_ctx(&ctx).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
    se.task_wait_eq_set_conf(
        move |_, d, _| l1.borrow_mut().push((d.as_u64(), Ok(()))),
        move |t, d, _| l2.borrow_mut().push((d.as_u64(), t.status())),
        4,
    )
    .unwrap();
    se.task_notify_set_set_conf(move |_, _, _| l3.borrow_mut().push((0, Ok(()))), |_, _, _| panic!(), 2)
        .unwrap();
    ctx.start().unwrap();
    while pe.progress() {}
    // The set is no wait: not a hit. Wait 1 (hit 1) waits for 5; wait 2 (hit 2) fails at once.
    se.task_notify_set_alloc_init(1, Data::NONE).unwrap().submit().unwrap();
    se.task_wait_eq_alloc_init(5, u64::MAX, Data::from_u64(1)).unwrap().submit().unwrap();
    se.task_wait_eq_alloc_init(1, u64::MAX, Data::from_u64(2)).unwrap().submit().unwrap();
    for _ in 0..4 {
        pe.progress();
    }
    log.borrow_mut().sort_by_key(|(d, _)| *d); // delivered pool by pool
    assert_eq!(*log.borrow(), [(0, Ok(())), (2, Err(Error::IoFailed))]);
    let fired = fault::take_fired();
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0].point, "task.sync_event.wait");
    fault::clear();
    se.task_notify_set_alloc_init(5, Data::NONE).unwrap().submit().unwrap();
    for _ in 0..4 {
        pe.progress();
    }
    assert!(log.borrow().contains(&(1, Ok(()))), "wait 1 waited for its value: {:?}", log.borrow());
}
