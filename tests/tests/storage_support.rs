//! What NVIDIA's storage application (2.9 `zero_copy`, 3.3 `initiator_comch` /
//! `comch_to_rdma_zero_copy` / `target_rdma`) needs of the libraries, tested on our own code
//! (the application itself is never in this repository; the book's storage page tells how it
//! runs): a map from export exported on for RDMA (the DPU giving the storage node the host's
//! memory) and decompressed into by an LZ4 stream task, `doca_mmap_enable_thread_safety`, `doca_buf_inventory_buf_reuse_by_*`, RDMA task
//! pools larger than the queue sizes, and an RDMA stop outside a callback that ends at once.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::Inventory;
use doca_compress::Compress;
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe};
use doca_mmap::{AccessFlags, Mmap};
use doca_rdma::{Rdma, ReceiveTask, SendTask};

/// A private fabric directory (0700) for this test binary.
fn fabric() {
    doca_tests::private_fabric();
}

fn dev(pci: &str) -> Dev {
    open_device_with_pci(pci, None).unwrap()
}

/// The host's map over `len` bytes of ordinary memory (served when exported) with `perms`,
/// exported to the DPU and imported there: (host map, DPU map).
fn host_map_on_the_dpu(len: usize, perms: AccessFlags) -> (Mmap, Mmap) {
    fabric();
    let (host, dpu) = (dev("b1:00.0"), dev("03:00.0"));
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; len]).unwrap();
    map.set_permissions(perms).unwrap();
    map.add_dev(&host).unwrap();
    map.start().unwrap();
    let on_dpu = Mmap::create_from_export(None, &map.export_pci(&host).unwrap(), &dpu).unwrap();
    (map, on_dpu)
}

const ALL: AccessFlags = AccessFlags::LOCAL_READ_WRITE
    .union(AccessFlags::PCI_READ_WRITE)
    .union(AccessFlags::RDMA_READ)
    .union(AccessFlags::RDMA_WRITE);

#[test]
fn a_map_from_export_exported_for_rdma_reaches_the_exporters_memory() {
    // More than one piece of the relay's bounce buffer (1 MiB) each way.
    let len = 3 << 20;
    let (map, on_dpu) = host_map_on_the_dpu(len, ALL);
    let (dpu, node) = (dev("03:00.0"), dev("3b:00.0"));
    assert_eq!(on_dpu.export_pci(&dpu).err(), Some(Error::NotPermitted), "PCI export of an import");
    assert_eq!(on_dpu.export_rdma(&node).err(), Some(Error::NotFound), "not the import's device");
    assert!(!on_dpu.is_exported());
    let desc = on_dpu.export_rdma(&dpu).unwrap();
    assert!(on_dpu.is_exported());
    assert_eq!(on_dpu.export_rdma(&dpu).unwrap().len(), desc.len(), "exported again: the same service");
    let on_node = Mmap::create_from_export(None, &desc, &node).unwrap();
    assert_eq!(on_node.memrange().unwrap(), map.memrange().unwrap(), "the host's addresses");
    let (orig, far) = (map.access().unwrap(), on_node.access().unwrap());

    let pattern: Vec<u8> = (0..(5 << 19)).map(|i: usize| (i % 251) as u8).collect();
    far.write(12345, &pattern).unwrap();
    let mut back = vec![0u8; pattern.len()];
    orig.read(12345, &mut back).unwrap();
    assert!(back == pattern, "the node's write landed in the host's memory");
    orig.write(len - 4, b"tail").unwrap();
    let mut b = [0u8; 4];
    far.read(len - 4, &mut b).unwrap();
    assert_eq!(&b, b"tail", "the node reads the host's bytes");
    let mut whole = vec![0u8; len];
    far.read(0, &mut whole).unwrap();
    assert!(whole[12345..12345 + pattern.len()] == pattern[..]);
    assert_eq!(far.read(len - 2, &mut b).err(), Some(Error::InvalidValue), "past the end");

    // The DPU's map stopped: its export ends, the node's copies fail.
    on_dpu.stop().unwrap();
    assert!(!on_dpu.is_exported());
    assert_eq!(far.read(0, &mut b).err(), Some(Error::NotFound));
}

#[test]
fn copies_through_the_relay_fail_once_the_host_revokes_its_export() {
    let (map, on_dpu) = host_map_on_the_dpu(4096, ALL);
    let (dpu, node) = (dev("03:00.0"), dev("3b:00.0"));
    let on_node = Mmap::create_from_export(None, &on_dpu.export_rdma(&dpu).unwrap(), &node).unwrap();
    let far = on_node.access().unwrap();
    far.write(0, b"before").unwrap();
    map.stop().unwrap();
    let mut b = [0u8; 6];
    assert_eq!(far.read(0, &mut b).err(), Some(Error::NotFound));
    assert_eq!(far.write(0, b"after!").err(), Some(Error::NotFound));
}

#[test]
fn an_import_is_exported_for_rdma_only_with_an_rdma_permission_of_its_exporter() {
    let perms = AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE;
    let (_map, on_dpu) = host_map_on_the_dpu(4096, perms);
    assert_eq!(on_dpu.export_rdma(&dev("03:00.0")).err(), Some(Error::NotPermitted));
    // A read-only grant is re-exported read-only: the node cannot write.
    let perms = AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_ONLY | AccessFlags::RDMA_READ;
    let (map, on_dpu) = host_map_on_the_dpu(4096, perms);
    map.access().unwrap().write(0, b"ro").unwrap();
    let on_node =
        Mmap::create_from_export(None, &on_dpu.export_rdma(&dev("03:00.0")).unwrap(), &dev("3b:00.0"))
            .unwrap();
    let far = on_node.access().unwrap();
    let mut b = [0u8; 2];
    far.read(0, &mut b).unwrap();
    assert_eq!(&b, b"ro");
    assert_eq!(far.write(0, b"no").err(), Some(Error::NotPermitted));
}

#[test]
fn thread_safety_lets_a_map_be_destroyed_with_buffers_out() {
    let inv = Inventory::create(4).unwrap();
    inv.start().unwrap();

    let plain = Mmap::create().unwrap();
    plain.set_memrange(vec![1u8; 64]).unwrap();
    plain.start().unwrap();
    assert_eq!(plain.enable_thread_safety(), Err(Error::NotPermitted), "started");
    let b1 = inv.buf_get_data_at(&plain, 0, 64).unwrap();
    let plain = plain.destroy().unwrap_err().into_inner();
    assert_eq!(plain.num_bufs(), 1);

    let safe = Mmap::create().unwrap();
    safe.set_memrange(vec![7u8; 64]).unwrap();
    safe.enable_thread_safety().unwrap();
    assert!(safe.is_thread_safe());
    safe.start().unwrap();
    let b2 = inv.buf_get_data_at(&safe, 0, 64).unwrap();
    assert!(safe.destroy().is_ok(), "destroyed with a buffer out");
    assert_eq!(b2.data_to_vec().unwrap(), vec![7u8; 64], "the buffer still reaches the memory");
    b2.dec_refcount().unwrap();

    // A map from export (started when created) may enable it while no buffer points into it.
    let (_map, on_dpu) = host_map_on_the_dpu(4096, ALL);
    let b3 = inv.buf_get_at(&on_dpu, 0, 16).unwrap();
    assert_eq!(on_dpu.enable_thread_safety(), Err(Error::NotPermitted), "a buffer points into it");
    b3.dec_refcount().unwrap();
    on_dpu.enable_thread_safety().unwrap();
    b1.dec_refcount().unwrap();
    assert!(plain.destroy().is_ok());
}

#[test]
fn a_buffer_reused_points_at_other_addresses_of_its_own_map() {
    let bytes: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
    let map = Mmap::create().unwrap();
    map.set_memrange(bytes).unwrap();
    map.start().unwrap();
    let base = map.memrange().unwrap().0;
    let inv = Inventory::create(2).unwrap();
    inv.start().unwrap();
    let buf = inv.buf_get_by_data(&map, base, 16).unwrap();

    buf.reuse_by_addr(base + 100, 50).unwrap();
    assert_eq!((buf.head().unwrap(), buf.len().unwrap()), (base + 100, 50));
    assert_eq!((buf.data().unwrap(), buf.data_len().unwrap()), (base + 100, 0));

    buf.reuse_by_data(base + 200, 8).unwrap();
    assert_eq!((buf.head().unwrap(), buf.len().unwrap()), (base + 200, 8));
    assert_eq!(buf.data_to_vec().unwrap(), (200..208u32).map(|i| i as u8).collect::<Vec<_>>());

    assert_eq!(buf.reuse_by_data(base + 4090, 16), Err(Error::InvalidValue), "past the map");
    assert_eq!(buf.reuse_by_addr(base.wrapping_sub(8), 4), Err(Error::InvalidValue), "before the map");
    assert_eq!(buf.reuse(base, 8, base + 4, 8), Err(Error::InvalidValue), "data past the buffer");
    assert_eq!(buf.layout().unwrap(), (200, 8, 200, 8), "a refused reuse changes nothing");
    assert_eq!(inv.num_free_elements(), 1, "no element taken or given back");
    buf.dec_refcount().unwrap();
    assert_eq!(buf.reuse_by_data(base, 8), Err(Error::BadState), "a freed buffer (a stale handle)");
}

#[test]
fn rdma_task_pools_may_exceed_the_queue_sizes_and_a_stop_outside_a_callback_ends_at_once() {
    fabric();
    let pe = Pe::create().unwrap();
    let d = dev("03:00.0");
    let (a, b) = (Rdma::create(&d).unwrap(), Rdma::create(&d).unwrap());
    for r in [&a, &b] {
        // 96 of each, over the default queues of 64 (what the storage application asks).
        assert_eq!(r.send_queue_size(), 64);
        r.task_send_set_conf(|_t: SendTask, _, _| {}, |_t: SendTask, _, _| {}, 96).unwrap();
        r.task_receive_set_conf(|_t: ReceiveTask, _, _| {}, |_t: ReceiveTask, _, _| {}, 96).unwrap();
        pe.connect_ctx(&r.as_ctx()).unwrap();
        r.as_ctx().start().unwrap();
    }
    let (da, ca) = a.export().unwrap();
    let (db, cb) = b.export().unwrap();
    a.connect(&db, ca).unwrap();
    b.connect(&da, cb).unwrap();
    for _ in 0..10 {
        pe.progress();
    }
    // No task out, not inside a callback: Idle at once, with no progress of its engine
    // (the storage application stops a context whose engine it no longer progresses).
    assert_eq!(a.as_ctx().stop(), Ok(()));
    assert_eq!(a.as_ctx().state(), CtxState::Idle);
    // The peer's stop is synchronous too (after it saw the goodbye, or before).
    for _ in 0..10 {
        pe.progress();
    }
    assert_eq!(b.as_ctx().stop(), Ok(()));
    assert_eq!(b.as_ctx().state(), CtxState::Idle);
    assert!(a.destroy().is_ok() && b.destroy().is_ok());
}

#[test]
fn an_lz4_stream_task_decompresses_into_the_hosts_memory_through_a_map_from_export() {
    // The host's memory as the DPU imported it (served: ordinary memory of the host).
    let (host_map, on_dpu) = host_map_on_the_dpu(64 << 10, ALL);
    let dpu = dev("03:00.0");
    let plain: Vec<u8> = (0..(40 << 10)).map(|i| b"storage block "[i % 14]).collect();
    // Two independent blocks without checksums, as the application stores its blocks.
    let mut stream = Vec::new();
    for half in plain.chunks(20 << 10) {
        let c = lz4_flex::block::compress(half);
        stream.extend_from_slice(&(c.len() as u32).to_le_bytes());
        stream.extend_from_slice(&c);
    }
    let src_map = Mmap::create().unwrap();
    src_map.set_memrange(stream.clone()).unwrap();
    src_map.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    src_map.add_dev(&dpu).unwrap();
    src_map.start().unwrap();
    let inv = Inventory::create(4).unwrap();
    inv.start().unwrap();
    let src = inv.buf_get_data_at(&src_map, 0, stream.len()).unwrap();
    let dst = inv.buf_get_at(&on_dpu, 1000, plain.len()).unwrap();

    let pe = Pe::create().unwrap();
    let cmp = Compress::create(&dpu).unwrap();
    pe.connect_ctx(&cmp.as_ctx()).unwrap();
    let seen: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
    let (a, b) = (seen.clone(), seen.clone());
    cmp.task_decompress_lz4_stream_set_conf(
        move |t, _, _| a.borrow_mut().push(t.status()),
        move |t, _, _| b.borrow_mut().push(t.status()),
        4,
    )
    .unwrap();
    let (a, b) = (seen.clone(), seen.clone());
    cmp.task_compress_deflate_set_conf(
        move |t, _, _| a.borrow_mut().push(t.status()),
        move |t, _, _| b.borrow_mut().push(t.status()),
        4,
    )
    .unwrap();
    cmp.as_ctx().start().unwrap();
    let wait = |n: usize| {
        for _ in 0..100_000 {
            if seen.borrow().len() >= n {
                return;
            }
            pe.progress();
        }
        panic!("the engine did not finish");
    };

    let t =
        cmp.task_decompress_lz4_stream_alloc_init(false, true, Some(&src), Some(&dst), Data::NONE).unwrap();
    t.submit().unwrap();
    wait(1);
    assert_eq!(seen.borrow()[0], Ok(()));
    assert_eq!(dst.data_len().unwrap(), plain.len());
    let mut back = vec![0u8; plain.len()];
    host_map.access().unwrap().read(1000, &mut back).unwrap();
    assert!(back == plain, "the bytes are in the host's memory");

    // Deflate borrows its buffers: a map from export is not supported there (yet).
    let t = cmp.task_compress_deflate_alloc_init(Some(&src), Some(&dst), Data::NONE).unwrap();
    t.submit().unwrap();
    wait(2);
    assert_eq!(seen.borrow()[1], Err(Error::NotSupported));
}

#[test]
fn a_recover_task_applies_a_coding_matrix_of_one_parity_block_as_given() {
    use doca_erasure_coding::{Ec, MatrixType};
    let d = dev("03:00.0");
    let pe = Pe::create().unwrap();
    let ec = Ec::create(&d).unwrap();
    pe.connect_ctx(&ec.as_ctx()).unwrap();
    let seen: Rc<RefCell<Vec<Result<(), Error>>>> = Rc::default();
    let (a, b) = (seen.clone(), seen.clone());
    ec.task_create_set_conf(
        move |t, _, _| a.borrow_mut().push(t.status()),
        move |t, _, _| b.borrow_mut().push(t.status()),
        2,
    )
    .unwrap();
    let (a, b) = (seen.clone(), seen.clone());
    ec.task_recover_set_conf(
        move |t, _, _| a.borrow_mut().push(t.status()),
        move |t, _, _| b.borrow_mut().push(t.status()),
        2,
    )
    .unwrap();
    ec.as_ctx().start().unwrap();
    let coding = ec.matrix_create(MatrixType::Vandermonde, 2, 1).unwrap();
    // d1 | d2 | parity, 64 bytes each, in one map (as the application lays a block out).
    let mut mem = vec![0u8; 192];
    for (i, x) in mem[..128].iter_mut().enumerate() {
        *x = (i * 7 + 3) as u8;
    }
    let map = Mmap::create().unwrap();
    map.set_memrange(mem).unwrap();
    map.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.add_dev(&d).unwrap();
    map.start().unwrap();
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    let wait = |n: usize| {
        for _ in 0..100_000 {
            if seen.borrow().len() >= n {
                return;
            }
            pe.progress();
        }
        panic!("the engine did not finish");
    };
    let data = inv.buf_get_data_at(&map, 0, 128).unwrap();
    let parity = inv.buf_get_at(&map, 128, 64).unwrap();
    ec.task_create_alloc_init(Some(&coding), Some(&data), Some(&parity), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    wait(1);
    assert_eq!(seen.borrow()[0], Ok(()));
    let acc = map.access().unwrap();
    let mut all = vec![0u8; 192];
    acc.read(0, &mut all).unwrap();
    let d1 = all[..64].to_vec();
    // d1 lost: the coding matrix over (parity, d2) gives it back.
    acc.write(0, &[0u8; 64]).unwrap();
    let avail = inv.buf_get_data_at(&map, 128, 64).unwrap();
    let d2 = inv.buf_get_data_at(&map, 64, 64).unwrap();
    avail.chain_list(&d2).unwrap();
    let out = inv.buf_get_at(&map, 0, 64).unwrap();
    ec.task_recover_alloc_init(Some(&coding), Some(&avail), Some(&out), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    wait(2);
    assert_eq!(seen.borrow()[1], Ok(()));
    let mut back = vec![0u8; 64];
    acc.read(0, &mut back).unwrap();
    assert_eq!(back, d1, "the lost block, recovered");
}
