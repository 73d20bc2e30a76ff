//! DMA through a map created from an export, in one process (the cross-process version is
//! tests/tests/dma_cross_process.rs): the DPU's DMA reads the host's exported memory and
//! writes into it, named by the host's addresses; the export's permissions are enforced;
//! once the host stops its map the next task fails with `NOT_FOUND`.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, CtxState, Data, Error, Pe};
use doca_dma::{Dma, MemcpyTask};
use doca_mmap::{AccessFlags, Mmap, SharedMem};

type Seen = Rc<RefCell<Vec<Result<(), Error>>>>;

fn record(seen: &Seen) -> impl FnMut(MemcpyTask, Data, Data) + 'static {
    let seen = seen.clone();
    move |t: MemcpyTask, _, _| seen.borrow_mut().push(t.status())
}

/// Submits one task and progresses until it completes; returns its status. A task that
/// fails stops its context (as DOCA's engine does): the context reaches Idle, and is started
/// again for the next copy.
fn copy(pe: &Pe, dma: &Dma, seen: &Seen, src: &doca_buf::Buf, dst: &doca_buf::Buf) -> Result<(), Error> {
    let before = seen.borrow().len();
    dma.task_memcpy_alloc_init(Some(src), Some(dst), Data::NONE).unwrap().submit().unwrap();
    for _ in 0..100_000 {
        if seen.borrow().len() > before {
            let status = *seen.borrow().last().unwrap();
            if status.is_err() {
                for _ in 0..100 {
                    if dma.as_ctx().state() == CtxState::Idle {
                        break;
                    }
                    pe.progress();
                }
                assert_eq!(dma.as_ctx().state(), CtxState::Idle, "a failed task stops its context");
                dma.as_ctx().start().unwrap();
            }
            return status;
        }
        pe.progress();
    }
    panic!("the engine did not finish");
}

/// The host's exported memory: `len` bytes, byte i = i % 251, with `perms`.
fn host_export(perms: AccessFlags, len: usize) -> (Mmap, Vec<u8>) {
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    let mem = SharedMem::alloc(len).unwrap();
    let pattern: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    mem.write(0, &pattern).unwrap();
    let map = Mmap::create().unwrap();
    map.set_memrange(mem).unwrap();
    map.set_permissions(perms | AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.add_dev(&host).unwrap();
    map.start().unwrap();
    let desc = map.export_pci(&host).unwrap();
    (map, desc)
}

#[test]
fn the_dpu_reads_and_writes_an_imported_export_by_the_host_addresses_until_it_is_revoked() {
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let dma = Dma::create(&dpu).unwrap();
    pe.connect_ctx(&dma.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    dma.task_memcpy_set_conf(record(&seen), record(&seen), 4).unwrap();
    dma.as_ctx().start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();

    let (host_map, desc) = host_export(AccessFlags::PCI_READ_WRITE, 1 << 16);
    let (host_base, _) = host_map.memrange().unwrap();
    let remote = Mmap::create_from_export(None, &desc, &dpu).unwrap();
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![0u8; 1 << 16]).unwrap();
    local.add_dev(&dpu).unwrap();
    local.start().unwrap();

    // DPU reads host memory: 5000 bytes at host address base + 3000 into local memory.
    let from_host = inv.buf_get_by_data(&remote, host_base + 3000, 5000).unwrap();
    let into_local = inv.buf_get_at(&local, 100, 5000).unwrap();
    assert_eq!(copy(&pe, &dma, &seen, &from_host, &into_local), Ok(()));
    let expect: Vec<u8> = (3000..8000).map(|i| (i % 251) as u8).collect();
    assert_eq!(into_local.data_to_vec().unwrap(), expect);

    // DPU writes host memory: local bytes into host address base + 40000.
    let src = inv.buf_get_at(&local, 20_000, 777).unwrap();
    src.append(&[0xA5; 777]).unwrap();
    let into_host = inv.buf_get_by_addr(&remote, host_base + 40_000, 777).unwrap();
    assert_eq!(copy(&pe, &dma, &seen, &src, &into_host), Ok(()));
    assert_eq!(into_host.data_len().unwrap(), 777);
    let on_host = inv.buf_get_data_at(&host_map, 40_000, 779).unwrap();
    let got = on_host.data_to_vec().unwrap();
    assert_eq!(&got[..777], &[0xA5; 777][..]);
    assert_eq!(got[777], (40_777 % 251) as u8, "nothing written past the copy");
    on_host.dec_refcount().unwrap();

    // The host stops its map: the import is revoked, and the next task on it fails with
    // NOT_FOUND, in either direction, through submit and through try_submit.
    host_map.stop().unwrap();
    assert_eq!(copy(&pe, &dma, &seen, &from_host, &into_local), Err(Error::NotFound));
    assert_eq!(copy(&pe, &dma, &seen, &src, &into_host), Err(Error::NotFound));
    let t = dma.task_memcpy_alloc_init(Some(&src), Some(&into_host), Data::NONE).unwrap();
    assert_eq!(t.try_submit().unwrap_err().error, Error::InvalidValue);
}

#[test]
fn an_export_without_pci_write_can_be_read_but_not_written() {
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let dma = Dma::create(&dpu).unwrap();
    pe.connect_ctx(&dma.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    dma.task_memcpy_set_conf(record(&seen), record(&seen), 4).unwrap();
    dma.as_ctx().start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();

    let (host_map, desc) = host_export(AccessFlags::PCI_READ_ONLY, 8192);
    let remote = Mmap::create_from_export(None, &desc, &dpu).unwrap();
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![7u8; 8192]).unwrap();
    local.add_dev(&dpu).unwrap();
    local.start().unwrap();
    let remote_data = inv.buf_get_data_at(&remote, 0, 64).unwrap();
    let local_room = inv.buf_get_at(&local, 0, 64).unwrap();
    assert_eq!(copy(&pe, &dma, &seen, &remote_data, &local_room), Ok(()));
    let local_data = inv.buf_get_data_at(&local, 1000, 64).unwrap();
    let remote_room = inv.buf_get_at(&remote, 4096, 64).unwrap();
    assert_eq!(copy(&pe, &dma, &seen, &local_data, &remote_room), Err(Error::NotPermitted));
    // An import made on another device than the DMA's is not reachable by it.
    let other =
        Mmap::create_from_export(None, &desc, &open_device_with_pci("b1:00.1", None).unwrap()).unwrap();
    let elsewhere = inv.buf_get_data_at(&other, 0, 64).unwrap();
    let room = inv.buf_get_at(&local, 2000, 64).unwrap();
    assert_eq!(copy(&pe, &dma, &seen, &elsewhere, &room), Err(Error::NotPermitted));
    drop(host_map);
}
