//! A fault plan failing memcpy tasks: the injected failure takes the same road as a real
//! one (pe_task_error): fatal to the context, the tasks queued behind it flushed, Idle, and
//! a restart works. Its own test binary: a plan is process-wide.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_core::{fault, open_device_with_pci, CtxState, Data, Error, Pe};
use doca_dma::{Dma, MemcpyTask, FLUSH_STATUS};
use doca_mmap::{AccessFlags, Mmap};

type Seen = Rc<RefCell<Vec<(u64, Result<(), Error>, usize)>>>;

fn record(seen: &Seen) -> impl FnMut(MemcpyTask, Data, Data) + 'static {
    let seen = seen.clone();
    move |t: MemcpyTask, td: Data, _| {
        let dst_len = t.dst().map_or(0, |d| d.data_len().unwrap());
        seen.borrow_mut().push((td.as_u64(), t.status(), dst_len));
    }
}

fn run(pe: &Pe, done: impl Fn() -> bool) {
    for _ in 0..100_000 {
        if done() {
            return;
        }
        pe.progress();
    }
    panic!("the engine did not finish");
}

#[test]
fn an_injected_memcpy_failure_is_fatal_to_its_context_like_a_real_one() {
    let _g = fault::test_lock();
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let dma = Dma::create(&dev).unwrap();
    pe.connect_ctx(&dma.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    dma.task_memcpy_set_conf(record(&seen), record(&seen), 8).unwrap();
    let states: Rc<RefCell<Vec<CtxState>>> = Rc::default();
    let st = states.clone();
    dma.as_ctx().set_state_changed_cb(move |_, _, _, next| st.borrow_mut().push(next)).unwrap();
    dma.as_ctx().start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();
    let m = Mmap::create().unwrap();
    m.set_memrange(vec![7u8; 5 * 8192]).unwrap();
    m.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    m.add_dev(&dev).unwrap();
    m.start().unwrap();
    fault::take_fired();
    fault::install_text("task.dma.memcpy=nth(3):fail(IO_FAILED)").unwrap();
    let mut bufs = Vec::new();
    for i in 0..5usize {
        let src = inv.buf_get_data_at(&m, i * 8192, 64).unwrap();
        let dst = inv.buf_get_at(&m, i * 8192 + 4096, 64).unwrap();
        let t = dma.task_memcpy_alloc_init(Some(&src), Some(&dst), Data::from_u64(i as u64)).unwrap();
        t.submit().unwrap();
        bufs.push((src, dst));
    }
    run(&pe, || dma.as_ctx().state() == CtxState::Idle);
    fault::clear();
    assert_eq!(
        *seen.borrow(),
        [
            (0, Ok(()), 64),
            (1, Ok(()), 64),
            (2, Err(Error::IoFailed), 0), // failed, nothing copied
            (3, Err(FLUSH_STATUS), 0),
            (4, Err(FLUSH_STATUS), 0)
        ]
    );
    assert_eq!(*states.borrow(), [CtxState::Running, CtxState::Stopping, CtxState::Idle]);
    let fired = fault::take_fired();
    assert_eq!(fired.len(), 1);
    assert_eq!(
        (fired[0].point.as_str(), fired[0].hit, fired[0].action.as_str()),
        ("task.dma.memcpy", 3, "fail(DOCA_ERROR_IO_FAILED)")
    );
    // Nothing else broke: the context starts again and copies.
    dma.as_ctx().start().unwrap();
    let (src, dst) = &bufs[2];
    dma.task_memcpy_alloc_init(Some(src), Some(dst), Data::from_u64(9)).unwrap().submit().unwrap();
    run(&pe, || seen.borrow().len() == 6);
    assert_eq!(seen.borrow()[5], (9, Ok(()), 64));
}
