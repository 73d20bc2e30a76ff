//! The samples' helpers behave as `samples/common.c`: core objects created and destroyed in
//! its order, a stop waited out, `AGAIN` retried.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use doca_common::{create_core_objects, request_stop_ctx, submit_retrying};
use doca_core::loopback::{EchoTask, Loopback};
use doca_core::{open_device_with_pci, CtxState, Error, Refused, Started, Submit};
use doca_mmap::AccessFlags;

#[test]
fn create_core_objects_gives_maps_on_the_device_a_started_inventory_and_an_engine() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let core = create_core_objects(&dev, 8).unwrap();
    assert_eq!(core.src_mmap.devs(), vec![dev.clone()]);
    assert_eq!(core.dst_mmap.devs(), vec![dev.clone()]);
    assert!(!core.src_mmap.is_started(), "the program sets the memory range, then starts");
    let inv = core.buf_inv.as_ref().expect("an inventory for max_bufs 8");
    assert_eq!((inv.num_elements(), inv.num_free_elements()), (8, 8));
    core.src_mmap.set_memrange(vec![0u8; 64]).unwrap();
    core.src_mmap.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    core.src_mmap.start().unwrap();
    let buf = inv.buf_get_at(&core.src_mmap, 0, 64).unwrap(); // the inventory is started
    buf.dec_refcount().unwrap();
    core.destroy().unwrap();

    let none = create_core_objects(&dev, 0).unwrap();
    assert!(none.buf_inv.is_none(), "max_bufs 0: no inventory, as in C");
    none.destroy().unwrap();
}

#[test]
fn destroy_core_objects_reports_an_engine_still_in_use_and_destroys_the_rest() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let core = create_core_objects(&dev, 1).unwrap();
    let lb = Loopback::create(Started::Running);
    core.pe.connect_ctx(&lb.as_ctx()).unwrap();
    assert_eq!(core.destroy(), Err(Error::InUse));
}

#[test]
fn request_stop_ctx_waits_until_the_context_is_idle() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let core = create_core_objects(&dev, 0).unwrap();
    let lb = Loopback::create(Started::Running);
    let ctx = lb.as_ctx();
    core.pe.connect_ctx(&ctx).unwrap();
    let flushed = Rc::new(RefCell::new(Vec::new()));
    let f = flushed.clone();
    lb.set_conf(|_, _, _| {}, move |t: EchoTask, _, _| f.borrow_mut().push(t.status()), 4).unwrap();
    ctx.start().unwrap();
    let task = lb.alloc_task(1).unwrap();
    task.set_delay(Duration::from_secs(3600));
    task.submit().unwrap();
    request_stop_ctx(&core.pe, &ctx).unwrap();
    assert_eq!(ctx.state(), CtxState::Idle);
    assert_eq!(*flushed.borrow(), vec![Err(doca_core::loopback::FLUSH_STATUS)], "the stop flushed the task");
    assert_eq!(request_stop_ctx(&core.pe, &ctx), Ok(()), "stopping an idle context: nothing to do");
    lb.destroy().map_err(|r| r.error).unwrap();
    core.destroy().unwrap();
}

/// A task whose library answers `AGAIN` a given number of times.
struct Busy {
    again: Rc<RefCell<u32>>,
}

impl Submit for Busy {
    fn submit(self) -> Result<(), Refused<Self>> {
        let mut left = self.again.borrow_mut();
        if *left == 0 {
            return Ok(());
        }
        *left -= 1;
        drop(left);
        Err(Refused::new(Error::Again, self))
    }
}

#[test]
fn submit_retrying_resubmits_on_again_and_gives_the_task_back_at_the_deadline() {
    let again = Rc::new(RefCell::new(5));
    assert!(submit_retrying(Busy { again: again.clone() }, Duration::from_secs(5)).is_ok());
    assert_eq!(*again.borrow(), 0, "submitted until the queue took it");

    *again.borrow_mut() = u32::MAX;
    let start = Instant::now();
    let back = submit_retrying(Busy { again: again.clone() }, Duration::from_millis(20)).unwrap_err();
    assert_eq!(back.error, Error::Again);
    assert!(start.elapsed() >= Duration::from_millis(20));
    assert!(*back.value.again.borrow() < u32::MAX, "it was tried");
}
