//! A fault plan failing an encrypt task: the injected failure takes the road of a real one
//! (core's engine kit): fatal to the context, the tasks of both types queued behind it
//! flushed, Idle, and a restart works. Its own test binary: a plan is process-wide.

use std::cell::RefCell;
use std::rc::Rc;

use doca_aes_gcm::{AesGcm, KeyType, FLUSH_STATUS};
use doca_buf::Inventory;
use doca_core::{fault, open_device_with_pci, CtxState, Data, Error, Pe};
use doca_mmap::{AccessFlags, Mmap};

type Log = Rc<RefCell<Vec<(&'static str, u64, Result<(), Error>)>>>;

#[test]
fn an_injected_encrypt_failure_is_fatal_and_flushes_both_task_types() {
    let _g = fault::test_lock();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let log: Log = Rc::default();
    let gcm = AesGcm::create(&dev).unwrap();
    let l = log.clone();
    let enc = move |t: doca_aes_gcm::EncryptTask, td: Data, _| {
        l.borrow_mut().push(("enc", td.as_u64(), t.status()))
    };
    gcm.task_encrypt_set_conf(enc.clone(), enc, 4).unwrap();
    let l = log.clone();
    let dec = move |t: doca_aes_gcm::DecryptTask, td: Data, _| {
        l.borrow_mut().push(("dec", td.as_u64(), t.status()))
    };
    gcm.task_decrypt_set_conf(dec.clone(), dec, 2).unwrap();
    let pe = Pe::create().unwrap();
    pe.connect_ctx(&gcm.as_ctx()).unwrap();
    gcm.as_ctx().start().unwrap();
    let key = gcm.key_create(&[1; 32], KeyType::Aes256).unwrap();

    let mem = Mmap::create().unwrap();
    mem.set_memrange(vec![3u8; 4096]).unwrap();
    mem.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    mem.add_dev(&dev).unwrap();
    mem.start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();
    let src = inv.buf_get_data_at(&mem, 0, 100).unwrap();
    let dsts: Vec<_> = (0..4).map(|i| inv.buf_get_at(&mem, 512 + i * 512, 512).unwrap()).collect();

    fault::take_fired();
    fault::install_text("task.aes_gcm.encrypt=nth(2):fail(IO_FAILED)").unwrap();
    for (i, d) in dsts.iter().take(3).enumerate() {
        let t = gcm.task_encrypt_alloc_init(
            Some(&src),
            Some(d),
            Some(&key),
            &[0; 12],
            12,
            0,
            Data::from_u64(i as u64),
        );
        t.unwrap().submit().map_err(|r| r.error).unwrap();
    }
    let t = gcm.task_decrypt_alloc_init(
        Some(&src),
        Some(&dsts[3]),
        Some(&key),
        &[0; 12],
        12,
        0,
        Data::from_u64(9),
    );
    t.unwrap().submit().map_err(|r| r.error).unwrap();
    for _ in 0..1000 {
        if gcm.as_ctx().state() == CtxState::Idle {
            break;
        }
        pe.progress();
    }
    fault::clear();
    assert_eq!(gcm.as_ctx().state(), CtxState::Idle);
    assert_eq!(
        *log.borrow(),
        [
            ("enc", 0, Ok(())),
            ("enc", 1, Err(Error::IoFailed)),
            ("enc", 2, Err(FLUSH_STATUS)),
            ("dec", 9, Err(FLUSH_STATUS))
        ]
    );
    assert_eq!(fault::take_fired().len(), 1, "the plan fired once");
    assert!(dsts[1].data_to_vec().unwrap().is_empty(), "the failed task wrote nothing");
    // A restart works.
    gcm.as_ctx().start().unwrap();
    let t = gcm.task_encrypt_alloc_init(
        Some(&src),
        Some(&dsts[1]),
        Some(&key),
        &[0; 12],
        12,
        0,
        Data::from_u64(5),
    );
    t.unwrap().submit().map_err(|r| r.error).unwrap();
    for _ in 0..1000 {
        if log.borrow().len() == 5 {
            break;
        }
        pe.progress();
    }
    assert_eq!(log.borrow()[4], ("enc", 5, Ok(())));
}
