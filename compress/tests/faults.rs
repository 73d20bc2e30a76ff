//! A fault plan failing a compress task: the injected failure takes the road of a real one
//! (core's engine kit): fatal to the context, the tasks queued behind it flushed, Idle, and a
//! restart works. Its own test binary: a plan is process-wide.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_compress::{Compress, CompressDeflateTask, DecompressDeflateTask, FLUSH_STATUS};
use doca_core::{fault, open_device_with_pci, CtxState, Data, Error, Pe};
use doca_mmap::{AccessFlags, Mmap};

type Log = Rc<RefCell<Vec<(u64, Result<(), Error>)>>>;

#[test]
fn an_injected_compress_failure_is_fatal_and_flushes_the_queue() {
    let _g = fault::test_lock();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let log: Log = Rc::default();
    let cmp = Compress::create(&dev).unwrap();
    let l = log.clone();
    let done = move |t: CompressDeflateTask, td: Data, _| l.borrow_mut().push((td.as_u64(), t.status()));
    cmp.task_compress_deflate_set_conf(done.clone(), done, 4).unwrap();
    let l = log.clone();
    let done = move |t: DecompressDeflateTask, td: Data, _| l.borrow_mut().push((td.as_u64(), t.status()));
    cmp.task_decompress_deflate_set_conf(done.clone(), done, 4).unwrap();
    let pe = Pe::create().unwrap();
    pe.connect_ctx(&cmp.as_ctx()).unwrap();
    cmp.as_ctx().start().unwrap();

    // One map: four 1000-byte sources, each followed by 2000 bytes of room.
    let mem = Mmap::create().unwrap();
    mem.set_memrange(vec![7u8; 12_000]).unwrap();
    mem.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    mem.add_dev(&dev).unwrap();
    mem.start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();
    let src = |i: usize| inv.buf_get_data_at(&mem, i * 3000, 1000).unwrap();
    let dst = |i: usize| inv.buf_get_at(&mem, i * 3000 + 1000, 2000).unwrap();

    fault::take_fired();
    fault::install_text("task.compress.compress_deflate=nth(2):fail(IO_FAILED)").unwrap();
    for i in 0..3 {
        let t = cmp.task_compress_deflate_alloc_init(Some(&src(i)), Some(&dst(i)), Data::from_u64(i as u64));
        t.unwrap().submit().unwrap();
    }
    let mut passes = 0;
    while cmp.as_ctx().state() != CtxState::Idle {
        pe.progress();
        passes += 1;
        assert!(passes < 10_000, "the context did not reach Idle: {:?}", log.borrow());
    }
    fault::clear();
    assert_eq!(*log.borrow(), [(0, Ok(())), (1, Err(Error::IoFailed)), (2, Err(FLUSH_STATUS))]);
    let fired = fault::take_fired();
    assert_eq!(
        fired.iter().map(|f| (f.point.as_str(), f.hit)).collect::<Vec<_>>(),
        [("task.compress.compress_deflate", 2)]
    );

    // Started again, the other task type can be failed the same way, and then it works.
    cmp.as_ctx().start().unwrap();
    fault::install_text("task.compress.decompress_deflate=nth(1):fail(DRIVER)").unwrap();
    let z = miniz_oxide::deflate::compress_to_vec(&[7u8; 1000], 6);
    let zmem = Mmap::create().unwrap();
    zmem.set_memrange(z.clone()).unwrap();
    zmem.add_dev(&dev).unwrap();
    zmem.start().unwrap();
    let zsrc = inv.buf_get_data_at(&zmem, 0, z.len()).unwrap();
    let t = cmp.task_decompress_deflate_alloc_init(Some(&zsrc), Some(&dst(3)), Data::from_u64(10)).unwrap();
    t.submit().unwrap();
    while cmp.as_ctx().state() != CtxState::Idle {
        pe.progress();
    }
    fault::clear();
    assert_eq!(log.borrow().last(), Some(&(10, Err(Error::Driver))));
    cmp.as_ctx().start().unwrap();
    let t = cmp.task_decompress_deflate_alloc_init(Some(&zsrc), Some(&dst(3)), Data::from_u64(11)).unwrap();
    t.submit().unwrap();
    while log.borrow().len() < 5 {
        pe.progress();
    }
    assert_eq!(log.borrow().last(), Some(&(11, Ok(()))));
}
