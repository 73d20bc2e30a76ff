//! `doca_dma.h`: the context, its capabilities, and the memcpy task's configuration,
//! allocation and accessors. (Copies, statuses and the engine are in doca-dma's own tests and
//! tests/tests/dma_cross_process.rs.)

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe};
use doca_dma::{caps, Dma, MemcpyTask};
use doca_mmap::Mmap;

fn dev() -> Dev {
    open_device_with_pci("b1:00.0", None).unwrap()
}

fn running(dev: &Dev, tasks: u32) -> (Pe, Dma) {
    let pe = Pe::create().unwrap();
    let dma = Dma::create(dev).unwrap();
    pe.connect_ctx(&dma.as_ctx()).unwrap();
    dma.task_memcpy_set_conf(|_: MemcpyTask, _, _| {}, |_: MemcpyTask, _, _| {}, tasks).unwrap();
    dma.as_ctx().start().unwrap();
    (pe, dma)
}

#[test]
fn doca_dma_create_and_doca_dma_destroy() {
    let d = dev();
    let dma = Dma::create(&d).unwrap();
    assert_eq!(dma.as_ctx().state(), CtxState::Idle);
    dma.destroy().map_err(|r| r.error).unwrap();
    // Not while running: BAD_STATE, and the context back.
    let (_pe, dma) = running(&d, 2);
    let back = dma.destroy().unwrap_err();
    assert_eq!(back.error, Error::BadState);
    let dma = back.value;
    dma.as_ctx().stop().unwrap();
    dma.destroy().map_err(|r| r.error).unwrap();
}

#[test]
fn doca_dma_as_ctx() {
    let dma = Dma::create(&dev()).unwrap();
    let (a, b) = (dma.as_ctx(), dma.as_ctx());
    assert_eq!(a.state(), CtxState::Idle);
    assert_eq!(a.state(), b.state());
}

#[test]
fn doca_dma_cap_task_memcpy_is_supported_and_its_limits() {
    let d = dev();
    let info = d.as_devinfo();
    assert_eq!(caps::task_memcpy_is_supported(info), Ok(()));
    let max_size = caps::task_memcpy_max_buf_size(info).unwrap();
    let max_list = caps::task_memcpy_max_buf_list_len(info).unwrap();
    assert!(max_size >= 4096 && max_list >= 1, "{max_size} {max_list}");
    let max_tasks = caps::max_num_tasks(info).unwrap();
    assert!(max_tasks >= 1);
    assert_eq!(
        Dma::create(&d).unwrap().cap_get_max_num_tasks(),
        Ok(max_tasks),
        "doca_dma_cap_get_max_num_tasks"
    );
}

#[test]
fn doca_dma_task_memcpy_set_conf() {
    let d = dev();
    let dma = Dma::create(&d).unwrap();
    let max = dma.cap_get_max_num_tasks().unwrap();
    let none = |_: MemcpyTask, _: Data, _: Data| {};
    assert_eq!(dma.task_memcpy_set_conf(none, none, max + 1), Err(Error::InvalidValue), "above the maximum");
    assert_eq!(dma.task_memcpy_set_conf(none, none, 0), Ok(()), "0 tasks: accepted, as DOCA's library does");
    let (_pe, none_left) = running(&d, 0);
    assert_eq!(
        none_left.task_memcpy_alloc_init(None, None, Data::NONE).unwrap_err(),
        Error::NoMemory,
        "a pool of 0 tasks: the allocation fails"
    );
    let (_pe, dma) = running(&d, 2);
    assert_eq!(dma.task_memcpy_set_conf(none, none, 2), Err(Error::BadState), "while running");
    assert_eq!(
        dma.task_memcpy_set_conf(none, none, max + 1),
        Err(Error::BadState),
        "while running, whatever the count: the state is checked first, as DOCA's libraries do"
    );
}

#[test]
fn doca_dma_task_memcpy_alloc_init_and_the_accessors() {
    let d = dev();
    let idle = Dma::create(&d).unwrap();
    idle.task_memcpy_set_conf(|_: MemcpyTask, _, _| {}, |_: MemcpyTask, _, _| {}, 1).unwrap();
    assert_eq!(
        idle.task_memcpy_alloc_init(None, None, Data::NONE).err(),
        Some(Error::BadState),
        "not running"
    );

    let (_pe, dma) = running(&d, 2);
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![1u8; 8192]).unwrap();
    map.add_dev(&d).unwrap();
    map.start().unwrap();
    let inv = Inventory::create(4).unwrap();
    inv.start().unwrap();
    let (a, b) = (inv.buf_get_data_at(&map, 0, 64).unwrap(), inv.buf_get_at(&map, 4096, 64).unwrap());
    let t = dma.task_memcpy_alloc_init(Some(&a), None, Data::from_u64(7)).unwrap();
    assert_eq!(t.src().as_ref(), Some(&a), "doca_dma_task_memcpy_get_src");
    assert!(t.dst().is_none(), "doca_dma_task_memcpy_get_dst");
    t.set_dst(Some(&b));
    t.set_src(None);
    assert_eq!(t.dst().as_ref(), Some(&b), "doca_dma_task_memcpy_set_dst");
    assert!(t.src().is_none(), "doca_dma_task_memcpy_set_src");
    assert_eq!(t.user_data().as_u64(), 7, "doca_dma_task_memcpy_as_task: the task's user data");
    let _second = dma.task_memcpy_alloc_init(None, None, Data::NONE).unwrap();
    assert_eq!(
        dma.task_memcpy_alloc_init(None, None, Data::NONE).err(),
        Some(Error::NoMemory),
        "every task out"
    );
    t.free();
}
