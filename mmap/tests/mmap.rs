//! Every rule and error code of `doca_mmap`, in one process (the cross-process export test
//! lives in the workspace's tests/ crate).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use doca_core::{open_device_with_pci, Data, Dev, Error};
use doca_mmap::{AccessFlags, Memory, Mmap, SharedMem};

fn dpu() -> Dev {
    open_device_with_pci("03:00.0", None).unwrap()
}

fn host() -> Dev {
    open_device_with_pci("b1:00.0", None).unwrap()
}

#[test]
fn access_flags_have_docas_values() {
    assert_eq!(AccessFlags::LOCAL_READ_ONLY.bits(), 0);
    assert_eq!(AccessFlags::LOCAL_READ_WRITE.bits(), 1);
    assert_eq!(AccessFlags::RDMA_READ.bits(), 2);
    assert_eq!(AccessFlags::RDMA_WRITE.bits(), 4);
    assert_eq!(AccessFlags::RDMA_ATOMIC.bits(), 8);
    assert_eq!(AccessFlags::PCI_READ_ONLY.bits(), 16);
    assert_eq!(AccessFlags::PCI_READ_WRITE.bits(), 32);
    assert_eq!(AccessFlags::PCI_RELAXED_ORDERING.bits(), 64);
    assert_eq!(AccessFlags::from_mask(16 | 32), Err(Error::InvalidValue));
    assert_eq!(AccessFlags::from_mask(128), Err(Error::InvalidValue));
    assert_eq!(AccessFlags::from_mask(1 | 32 | 64).unwrap().bits(), 97);
}

#[test]
fn memrange_permissions_and_devices() {
    let map = Mmap::create().unwrap();
    assert_eq!(map.memrange(), Err(Error::BadState), "never set");
    assert_eq!(map.start(), Err(Error::BadState), "start needs a memory range");
    assert_eq!(map.set_memrange(Vec::new()), Err(Error::InvalidValue), "empty memory");
    let mem = vec![7u8; 4096];
    let addr = mem.as_ptr() as usize;
    map.set_memrange(mem).unwrap();
    assert_eq!(map.memrange(), Ok((addr, 4096)));
    assert_eq!(map.set_memrange(vec![0u8; 16]), Err(Error::NotPermitted), "second memrange");

    assert_eq!(map.permissions(), AccessFlags::LOCAL_READ_WRITE);
    assert_eq!(
        map.set_permissions(AccessFlags::PCI_READ_ONLY | AccessFlags::PCI_READ_WRITE),
        Err(Error::InvalidValue)
    );
    assert_eq!(map.set_permissions_mask(0x100), Err(Error::InvalidValue));
    map.set_permissions(AccessFlags::PCI_READ_WRITE).unwrap();

    let (d, h) = (dpu(), host());
    assert_eq!(map.max_num_devices(), doca_mmap::DEFAULT_MAX_NUM_DEVICES);
    map.set_max_num_devices(1).unwrap();
    map.add_dev(&d).unwrap();
    assert_eq!(map.add_dev(&d), Err(Error::AlreadyExist));
    assert_eq!(map.add_dev(&h), Err(Error::NoMemory), "beyond the maximum");
    assert_eq!(map.set_max_num_devices(0), Err(Error::InvalidValue));
    map.set_max_num_devices(2).unwrap();
    map.add_dev(&h).unwrap();
    map.rm_dev(&h).unwrap();
    assert_eq!(map.rm_dev(&h), Err(Error::NotFound));
    assert_eq!(map.devs(), vec![d.clone()]);

    map.set_user_data(Data::from_u64(5)).unwrap();
    assert_eq!(map.user_data().as_u64(), 5);
    map.start().unwrap();
    assert_eq!(map.set_user_data(Data::from_u64(6)), Err(Error::BadState), "user data after start");
    assert_eq!(map.user_data().as_u64(), 5);
    assert_eq!(map.start(), Err(Error::BadState));
    assert_eq!(map.set_memrange(vec![1u8]), Err(Error::BadState), "memrange after start");
    assert_eq!(map.set_permissions(AccessFlags::LOCAL_READ_WRITE), Err(Error::BadState));
    assert_eq!(map.set_free_cb(|_| {}), Err(Error::BadState));
    assert_eq!(map.add_dev(&h), Err(Error::NotPermitted), "add_dev after start");
    assert_eq!(map.rm_dev(&d), Err(Error::NotPermitted));
    map.stop().unwrap();
    assert_eq!(map.stop(), Err(Error::BadState));
    assert_eq!(map.set_max_num_devices(4), Err(Error::NotPermitted), "after the first start");
    map.add_dev(&h).unwrap();
    map.start().unwrap();
    map.destroy().unwrap();
}

#[test]
fn buffers_pin_the_map_and_the_free_callback_returns_the_memory() {
    let freed = Arc::new(AtomicUsize::new(0));
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![1u8; 100]).unwrap();
    let f = freed.clone();
    map.set_free_cb(move |mem| {
        assert!(matches!(&mem, Memory::Vec(v) if v.len() == 100 && v[0] == 1));
        f.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    assert_eq!(map.buf_ref(0, 10).unwrap_err(), Error::BadState, "map not started");
    map.start().unwrap();
    assert_eq!(map.buf_ref(95, 10).unwrap_err(), Error::InvalidValue, "outside the map");
    let r = map.buf_ref(0, 10).unwrap();
    let r2 = r.clone();
    assert_eq!(map.num_bufs(), 2);
    assert_eq!(map.stop(), Err(Error::NotPermitted), "stop with buffers");
    let map = map.destroy().unwrap_err();
    assert_eq!(map.error, Error::NotPermitted, "destroy with buffers");
    let map = map.into_inner();
    drop((r, r2));
    assert_eq!(map.num_bufs(), 0);
    assert_eq!(freed.load(Ordering::SeqCst), 0);
    map.destroy().unwrap();
    assert_eq!(freed.load(Ordering::SeqCst), 1, "free callback on destroy of a started map");

    // Never started: no free callback.
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![1u8; 8]).unwrap();
    let f = freed.clone();
    map.set_free_cb(move |_| {
        f.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    map.destroy().unwrap();
    assert_eq!(freed.load(Ordering::SeqCst), 1);
}

#[test]
fn byte_access_is_checked_and_borrows_do_not_alias() {
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 64]).unwrap();
    map.start().unwrap();
    let r = map.buf_ref(0, 64).unwrap();
    r.write(8, b"hello").unwrap();
    let mut out = [0u8; 5];
    r.read(8, &mut out).unwrap();
    assert_eq!(&out, b"hello");
    assert_eq!(r.write(62, b"abc"), Err(Error::InvalidValue));
    {
        let mut w = r.bytes_mut(8, 5).unwrap();
        w[0] = b'j';
        assert_eq!(r.bytes(10, 4).err(), Some(Error::InUse), "overlaps a write borrow");
        assert_eq!(r.bytes_mut(12, 1).err(), Some(Error::InUse));
        assert!(r.bytes(13, 4).is_ok(), "disjoint");
    }
    let a = r.bytes(8, 5).unwrap();
    let b = r.bytes(9, 2).unwrap();
    assert_eq!((&*a, &*b), (&b"jello"[..], &b"el"[..]));
    assert_eq!(r.write(8, b"x"), Err(Error::InUse), "write while read-borrowed");
    drop((a, b));
    r.write(8, b"x").unwrap();

    let ro = Mmap::create().unwrap();
    ro.set_memrange("static text").unwrap();
    ro.start().unwrap();
    let rr = ro.buf_ref(0, 11).unwrap();
    assert_eq!(&*rr.bytes(0, 6).unwrap(), b"static");
    assert_eq!(rr.write(0, b"S"), Err(Error::NotPermitted), "read-only memory");
    assert_eq!(rr.bytes_mut(0, 1).err(), Some(Error::NotPermitted));
}

#[test]
fn export_rules() {
    let d = dpu();
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 4096]).unwrap();
    map.set_permissions(AccessFlags::PCI_READ_WRITE).unwrap();
    map.add_dev(&d).unwrap();
    assert_eq!(map.export_pci(&d), Err(Error::NotPermitted), "not started");
    map.start().unwrap();
    assert_eq!(map.export_pci(&host()), Err(Error::NotFound), "device not added");
    assert_eq!(map.export_pci(&d), Err(Error::NotSupported), "not shared memory");
    assert_eq!(map.export_rdma(&d), Err(Error::NotPermitted), "no RDMA permission");

    let shared = Mmap::create().unwrap();
    shared.set_memrange(SharedMem::alloc(4096).unwrap()).unwrap();
    shared.add_dev(&d).unwrap();
    shared.start().unwrap();
    assert_eq!(shared.export_pci(&d), Err(Error::NotPermitted), "no PCI permission");
    assert!(!shared.is_exported());
}

#[test]
fn import_in_the_same_process_shares_the_pages_and_revocation_is_an_error() {
    let (d, h) = (dpu(), host());
    let mem = SharedMem::alloc(10_000).unwrap();
    assert_eq!(mem.len(), 10_000);
    mem.write(0, b"abc").unwrap();
    let map = Mmap::create().unwrap();
    map.set_memrange(mem).unwrap();
    assert_eq!(map.memrange().unwrap().0 % 4096, 0, "page-aligned");
    map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.add_dev(&h).unwrap();
    map.start().unwrap();
    let desc = map.export_pci(&h).unwrap();
    assert!(map.is_exported() && map.is_shareable());

    let imported = Mmap::create_from_export(Some(Data::from_u64(9)), &desc, &d).unwrap();
    assert!(imported.is_from_export() && imported.is_started());
    assert_eq!(imported.user_data().as_u64(), 9);
    assert_eq!(imported.exported_by(), Some(h.as_devinfo().pci_addr()));
    assert_eq!(imported.memrange().unwrap(), map.memrange().unwrap(), "the exporter's addresses");
    assert_eq!(imported.permissions(), AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE);
    for refused in [
        imported.set_memrange(vec![1u8]),
        imported.set_permissions(AccessFlags::LOCAL_READ_WRITE),
        imported.add_dev(&h),
        imported.rm_dev(&d),
        imported.set_max_num_devices(3),
        imported.set_free_cb(|_| {}),
        imported.start(),
        imported.stop(),
        imported.export_pci(&d).map(|_| ()),
        imported.set_user_data(Data::from_u64(1)),
    ] {
        assert_eq!(refused, Err(Error::NotPermitted));
    }

    let mine = map.buf_ref(0, 10_000).unwrap();
    let theirs = imported.buf_ref(0, 10_000).unwrap();
    let mut out = [0u8; 3];
    theirs.read(0, &mut out).unwrap();
    assert_eq!(&out, b"abc");
    theirs.write(9_000, b"from the importer").unwrap();
    assert_eq!(&*mine.bytes(9_000, 17).unwrap(), b"from the importer");
    mine.write(5_000, b"from the exporter").unwrap();
    assert_eq!(&*theirs.bytes(5_000, 17).unwrap(), b"from the exporter");

    // Bad descriptors.
    assert_eq!(Mmap::create_from_export(None, &desc[..20], &d).unwrap_err(), Error::InvalidValue);
    let mut bad = desc.clone();
    bad[0] ^= 1;
    assert_eq!(Mmap::create_from_export(None, &bad, &d).unwrap_err(), Error::InvalidValue);
    let mut forged = desc.clone();
    forged[30] ^= 0x55; // inside the token
    assert_eq!(Mmap::create_from_export(None, &forged, &d).unwrap_err(), Error::NotFound);

    // Stopping the exporting map revokes the export.
    drop(mine);
    map.stop().unwrap();
    assert!(!map.is_exported());
    assert_eq!(theirs.read(0, &mut out), Err(Error::NotFound), "importer sees an error, not a crash");
    assert_eq!(imported.buf_ref(0, 1).unwrap_err(), Error::NotFound);
    assert_eq!(Mmap::create_from_export(None, &desc, &d).unwrap_err(), Error::NotFound, "stale descriptor");
    drop(theirs);
    imported.destroy().unwrap();

    // A new export after restarting works; destroying the exporter revokes it too.
    map.start().unwrap();
    let desc2 = map.export_pci(&h).unwrap();
    assert_ne!(desc, desc2);
    let again = Mmap::create_from_export(None, &desc2, &d).unwrap();
    let r = again.buf_ref(0, 3).unwrap();
    r.read(0, &mut out).unwrap();
    assert_eq!(&out, b"abc");
    map.destroy().unwrap();
    assert_eq!(r.read(0, &mut out), Err(Error::NotFound));
}

#[test]
fn shared_memory_of_an_impossible_size_is_no_memory() {
    use doca_mmap::SharedMem;
    assert_eq!(SharedMem::alloc(usize::MAX).unwrap_err(), Error::NoMemory);
    assert_eq!(SharedMem::alloc(isize::MAX as usize).unwrap_err(), Error::NoMemory);
    assert_eq!(SharedMem::alloc(0).unwrap_err(), Error::InvalidValue, "nothing to allocate");
}

/// Two mappings of one memory in one process (an export imported by its own process) borrow
/// through one tracker: safe code never holds two `&mut` over the same bytes.
#[test]
fn an_export_imported_in_its_own_process_does_not_alias() {
    let (d, h) = (dpu(), host());
    let map = Mmap::create().unwrap();
    map.set_memrange(doca_mmap::SharedMem::alloc(8192).unwrap()).unwrap();
    map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.add_dev(&h).unwrap();
    map.start().unwrap();
    let imported = Mmap::create_from_export(None, &map.export_pci(&h).unwrap(), &d).unwrap();
    let (here, there) = (map.access().unwrap(), imported.access().unwrap());
    let mut w = here.bytes_mut(100, 10).unwrap();
    assert_eq!(there.bytes_mut(105, 10).err(), Some(Error::InUse), "the import sees the exporter's borrow");
    assert_eq!(there.bytes(109, 1).err(), Some(Error::InUse));
    assert_eq!(there.write(100, b"x").err(), Some(Error::InUse));
    assert!(there.bytes_mut(110, 10).is_ok(), "bytes next to it are free");
    w[0] = 7;
    drop(w);
    let mut b = [0u8; 1];
    there.read(100, &mut b).unwrap();
    assert_eq!(b, [7], "the same pages");
}

/// Shared memory and a mapping of it received back as a peer's (`RemoteMem`) in the same
/// process: one tracker as well.
#[test]
fn shared_memory_and_its_own_remote_view_do_not_alias() {
    let mem = doca_mmap::SharedMem::alloc(4096).unwrap();
    let region = mem.share().unwrap();
    let remote = doca_mmap::RemoteMem::open(region.fd, region.offset, region.len).unwrap();
    let guard = mem.bytes_mut(0, 64).unwrap();
    assert_eq!(remote.write(10, b"peer"), Err(Error::InUse), "no write under a live &mut");
    let mut out = [0u8; 4];
    assert_eq!(remote.read(60, &mut out), Err(Error::InUse), "no read under a live &mut");
    drop(guard);
    remote.write(10, b"peer").unwrap();
    mem.read(10, &mut out).unwrap();
    assert_eq!(&out, b"peer");
}
