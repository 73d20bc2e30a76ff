//! `doca_mmap_advise.h` (2.9): the mmap-advise context, its capabilities, cache-invalidate
//! tasks, and the progress engine's rule for a failed task (fatal to its context).

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe, Topology};
use doca_mmap::{AccessFlags, Mmap};
use doca_mmap_advise::{caps, InvalidateCacheTask, MmapAdvise, FLUSH_STATUS};

use crate::support::{started_inventory, until};

/// Completions seen: (task user data, status).
type Seen = Rc<RefCell<Vec<(u64, Result<(), Error>)>>>;

struct Rig {
    pe: Pe,
    advise: MmapAdvise,
    dev: Dev,
    inv: Inventory,
    seen: Seen,
}

/// A context on 03:00.0 with `n` tasks (freed in their callbacks), started.
fn rig(n: u32) -> Rig {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let advise = MmapAdvise::create(&dev).unwrap();
    pe.connect_ctx(&advise.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    let record = |seen: &Seen| {
        let seen = seen.clone();
        move |t: InvalidateCacheTask, td: Data, _| seen.borrow_mut().push((td.as_u64(), t.status()))
    };
    advise.task_invalidate_cache_set_conf(record(&seen), record(&seen), n).unwrap();
    advise.as_ctx().start().unwrap();
    Rig { pe, advise, dev, inv: started_inventory(16), seen }
}

/// A started read-write map of `len` bytes, added to `dev` if given.
fn map(dev: Option<&Dev>, len: usize) -> Mmap {
    let m = Mmap::create().unwrap();
    m.set_memrange(vec![9u8; len]).unwrap();
    m.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    if let Some(dev) = dev {
        m.add_dev(dev).unwrap();
    }
    m.start().unwrap();
    m
}

#[test]
fn doca_mmap_advise_create_not_supported_without_the_task_and_destroy_bad_state_while_running() {
    let t = Topology::parse("t", "device 03:00.0 dpu\ncap mmap_advise.cache_invalidate 0\n").unwrap();
    let off = t.devinfo_list().unwrap()[0].open().unwrap();
    assert_eq!(MmapAdvise::create(&off).err(), Some(Error::NotSupported));
    let r = rig(1);
    let advise = match r.advise.destroy() {
        Err(refused) => {
            assert_eq!(refused.error, Error::BadState);
            refused.value
        }
        Ok(()) => panic!("destroy of a running context must be BAD_STATE"),
    };
    advise.as_ctx().stop().unwrap();
    until(&r.pe, || advise.as_ctx().state() == CtxState::Idle);
    assert!(advise.destroy().is_ok());
}

#[test]
fn doca_mmap_advise_cap_task_cache_invalidate_is_supported_and_get_max_buf_size() {
    let t = Topology::parse("t", "device 03:00.0 dpu\ncap mmap_advise.max_buf_size 4K\n").unwrap();
    let info = &t.devinfo_list().unwrap()[0];
    assert_eq!(caps::task_cache_invalidate_is_supported(info), Ok(()));
    assert_eq!(caps::task_cache_invalidate_max_buf_size(info), Ok(4096));
    let off = Topology::parse("t", "device 03:00.0 dpu\ncap mmap_advise.cache_invalidate 0\n").unwrap();
    assert_eq!(
        caps::task_cache_invalidate_is_supported(&off.devinfo_list().unwrap()[0]),
        Err(Error::NotSupported)
    );
}

#[test]
fn doca_mmap_advise_task_invalidate_cache_set_conf_bad_state_while_running_invalid_above_the_max() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let advise = MmapAdvise::create(&dev).unwrap();
    let max = caps::max_num_tasks(dev.as_devinfo()).unwrap();
    assert_eq!(
        advise.task_invalidate_cache_set_conf(|_, _, _| {}, |_, _, _| {}, max.saturating_add(1)),
        Err(Error::InvalidValue)
    );
    let r = rig(1);
    assert_eq!(r.advise.task_invalidate_cache_set_conf(|_, _, _| {}, |_, _, _| {}, 1), Err(Error::BadState));
}

#[test]
fn doca_mmap_advise_task_invalidate_cache_alloc_init_bad_state_when_idle_no_memory_when_out() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let advise = MmapAdvise::create(&dev).unwrap();
    advise.task_invalidate_cache_set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
    assert_eq!(advise.task_invalidate_cache_alloc_init(None, Data::NONE).err(), Some(Error::BadState));
    let r = rig(2);
    let a = r.advise.task_invalidate_cache_alloc_init(None, Data::NONE).unwrap();
    let _b = r.advise.task_invalidate_cache_alloc_init(None, Data::NONE).unwrap();
    assert_eq!(r.advise.task_invalidate_cache_alloc_init(None, Data::NONE).err(), Some(Error::NoMemory));
    drop(a);
    assert!(r.advise.task_invalidate_cache_alloc_init(None, Data::NONE).is_ok());
}

#[test]
fn doca_mmap_advise_task_invalidate_cache_set_buf_and_get_buf() {
    let r = rig(1);
    let m = map(Some(&r.dev), 4096);
    let buf = r.inv.buf_get_data_at(&m, 0, 64).unwrap();
    let t = r.advise.task_invalidate_cache_alloc_init(None, Data::from_u64(4)).unwrap();
    assert!(t.buf().is_none());
    t.set_buf(Some(&buf));
    assert_eq!(t.buf(), Some(buf));
    assert_eq!(t.user_data().as_u64(), 4);
}

/// A task on a buffer of the device completes from progress (never in submit) and changes
/// nothing (the emulated memory is coherent).
#[test]
fn doca_mmap_advise_task_invalidate_cache_as_doca_task_submit_completes_in_progress() {
    let r = rig(2);
    let m = map(Some(&r.dev), 4096);
    let buf = r.inv.buf_get_data_at(&m, 0, 4096).unwrap();
    let t = r.advise.task_invalidate_cache_alloc_init(Some(&buf), Data::from_u64(1)).unwrap();
    t.submit().unwrap();
    assert!(r.seen.borrow().is_empty());
    until(&r.pe, || !r.seen.borrow().is_empty());
    assert_eq!(*r.seen.borrow(), [(1, Ok(()))]);
    assert_eq!(buf.data_to_vec().unwrap(), vec![9u8; 4096]);
}

/// DOCA's engine: a failed task (a buffer of a map not on the device: NOT_PERMITTED) is fatal
/// to its context. It moves to Stopping, the tasks still queued complete with SHUTDOWN, it
/// reaches Idle once they are freed, and starts again; try_submit refuses the same task with
/// INVALID_VALUE and leaves the context Running.
#[test]
fn doca_mmap_advise_task_invalidate_cache_set_conf_error_callback_a_failure_stops_the_context() {
    let r = rig(4);
    let on_dev = map(Some(&r.dev), 4096);
    let elsewhere = map(None, 4096);
    let good = r.inv.buf_get_data_at(&on_dev, 0, 64).unwrap();
    let foreign = r.inv.buf_get_data_at(&elsewhere, 0, 64).unwrap();
    let t = r.advise.task_invalidate_cache_alloc_init(Some(&foreign), Data::from_u64(0)).unwrap();
    let refused = t.try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue);
    assert_eq!(r.advise.as_ctx().state(), CtxState::Running, "a refusal is no failure");
    refused.value.submit().unwrap();
    for i in 1..3 {
        r.advise.task_invalidate_cache_alloc_init(Some(&good), Data::from_u64(i)).unwrap().submit().unwrap();
    }
    until(&r.pe, || r.advise.as_ctx().state() == CtxState::Idle);
    assert_eq!(
        *r.seen.borrow(),
        [(0, Err(Error::NotPermitted)), (1, Err(FLUSH_STATUS)), (2, Err(FLUSH_STATUS))]
    );
    r.advise.as_ctx().start().unwrap();
    r.advise.task_invalidate_cache_alloc_init(Some(&good), Data::from_u64(3)).unwrap().submit().unwrap();
    until(&r.pe, || r.seen.borrow().len() == 4);
    assert_eq!(r.seen.borrow()[3], (3, Ok(())));
}
