//! `doca_mmap.h`: memory ranges, permissions, devices, start/stop, export and import, and
//! the capability queries. (The Rust-only rules — byte borrows that never alias — are in
//! doca-mmap's own tests.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use doca_core::{open_device_with_pci, Data, Dev, Error, Topology};
use doca_mmap::{AccessFlags, Memory, Mmap, SharedMem, DEFAULT_MAX_NUM_DEVICES};

fn dpu() -> Dev {
    open_device_with_pci("03:00.0", None).unwrap()
}

fn host() -> Dev {
    open_device_with_pci("b1:00.0", None).unwrap()
}

/// A started map of shared memory with PCI read-write, `dev` added.
fn exportable(len: usize, dev: &Dev) -> Mmap {
    let map = Mmap::create().unwrap();
    map.set_memrange(SharedMem::alloc(len).unwrap()).unwrap();
    map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.add_dev(dev).unwrap();
    map.start().unwrap();
    map
}

#[test]
fn doca_access_flag_values_and_combinations() {
    let values = [
        AccessFlags::LOCAL_READ_ONLY,
        AccessFlags::LOCAL_READ_WRITE,
        AccessFlags::RDMA_READ,
        AccessFlags::RDMA_WRITE,
        AccessFlags::RDMA_ATOMIC,
        AccessFlags::PCI_READ_ONLY,
        AccessFlags::PCI_READ_WRITE,
        AccessFlags::PCI_RELAXED_ORDERING,
    ];
    assert_eq!(values.map(|f| f.bits()), [0, 1, 2, 4, 8, 16, 32, 64]);
    assert_eq!(AccessFlags::from_mask(16 | 32), Err(Error::InvalidValue), "PCI read-only and read-write");
    assert_eq!(AccessFlags::from_mask(128), Err(Error::InvalidValue), "undefined flag");
    assert_eq!(AccessFlags::from_mask(1 | 32 | 64).unwrap().bits(), 97);
}

#[test]
fn doca_mmap_set_memrange_and_get_memrange() {
    let map = Mmap::create().unwrap();
    assert_eq!(map.memrange(), Err(Error::BadState), "never set");
    assert_eq!(map.start(), Err(Error::BadState), "start needs a memory range");
    assert_eq!(map.set_memrange(Vec::new()), Err(Error::InvalidValue), "empty memory");
    let mem = vec![7u8; 4096];
    let addr = mem.as_ptr() as usize;
    map.set_memrange(mem).unwrap();
    assert_eq!(map.memrange(), Ok((addr, 4096)), "the address given");
    assert_eq!(map.set_memrange(vec![0u8; 16]), Err(Error::NotPermitted), "only once");
    map.start().unwrap();
    assert_eq!(map.set_memrange(vec![0u8; 16]), Err(Error::BadState), "after start");
    let late = Mmap::create().unwrap();
    late.set_memrange(vec![0u8; 8]).unwrap();
    late.start().unwrap();
    late.stop().unwrap();
    assert_eq!(late.set_memrange(vec![0u8; 8]), Err(Error::NotPermitted), "set already");
}

#[test]
fn doca_mmap_set_permissions_before_start_only() {
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 64]).unwrap();
    assert_eq!(map.permissions(), AccessFlags::LOCAL_READ_WRITE, "the default");
    assert_eq!(
        map.set_permissions(AccessFlags::PCI_READ_ONLY | AccessFlags::PCI_READ_WRITE),
        Err(Error::InvalidValue)
    );
    assert_eq!(map.set_permissions_mask(0x100), Err(Error::InvalidValue));
    map.set_permissions(AccessFlags::PCI_READ_WRITE).unwrap();
    map.start().unwrap();
    assert_eq!(map.set_permissions(AccessFlags::LOCAL_READ_WRITE), Err(Error::BadState));
}

#[test]
fn doca_mmap_add_dev_rm_dev_and_max_num_devices() {
    let (d, h) = (dpu(), host());
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 64]).unwrap();
    assert_eq!(map.max_num_devices(), DEFAULT_MAX_NUM_DEVICES);
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
    map.start().unwrap();
    assert_eq!(map.add_dev(&h), Err(Error::NotPermitted), "after start");
    assert_eq!(map.rm_dev(&d), Err(Error::NotPermitted), "after start");
    map.stop().unwrap();
    assert_eq!(map.set_max_num_devices(4), Err(Error::NotPermitted), "after the first start");
    map.add_dev(&h).unwrap();
}

#[test]
fn doca_mmap_start_and_stop() {
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 64]).unwrap();
    assert_eq!(map.stop(), Err(Error::BadState), "not started");
    map.start().unwrap();
    assert_eq!(map.start(), Err(Error::BadState), "started twice");
    assert_eq!(map.set_free_cb(|_| {}), Err(Error::BadState));
    let b = map.buf_ref(0, 8).unwrap();
    assert_eq!(map.stop(), Err(Error::NotPermitted), "buffers point into it");
    drop(b);
    map.stop().unwrap();
    assert_eq!(map.stop(), Err(Error::BadState));
    map.start().unwrap();
}

#[test]
fn doca_mmap_destroy_refuses_while_buffers_point_into_it_and_frees_a_started_map() {
    let freed = Arc::new(AtomicUsize::new(0));
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![1u8; 100]).unwrap();
    let f = freed.clone();
    map.set_free_cb(move |mem| {
        assert!(matches!(&mem, Memory::Vec(v) if v.len() == 100 && v[0] == 1), "the memory comes back");
        f.fetch_add(1, Ordering::SeqCst);
    })
    .unwrap();
    assert_eq!(map.buf_ref(0, 10).unwrap_err(), Error::BadState, "no buffers before start");
    map.start().unwrap();
    let r = map.buf_ref(0, 10).unwrap();
    assert_eq!(map.num_bufs(), 1, "doca_mmap_get_num_bufs");
    let refused = map.destroy().unwrap_err();
    assert_eq!(refused.error, Error::NotPermitted);
    let map = refused.into_inner();
    drop(r);
    assert_eq!(freed.load(Ordering::SeqCst), 0);
    map.destroy().unwrap();
    assert_eq!(freed.load(Ordering::SeqCst), 1, "destroying a started map calls the free callback");

    let never_started = Mmap::create().unwrap();
    never_started.set_memrange(vec![1u8; 8]).unwrap();
    let f = freed.clone();
    never_started
        .set_free_cb(move |_| {
            f.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    never_started.destroy().unwrap();
    assert_eq!(freed.load(Ordering::SeqCst), 1, "never started: no free callback");
}

#[test]
fn doca_mmap_set_user_data_before_start_and_get_user_data() {
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 8]).unwrap();
    assert_eq!(map.user_data().as_u64(), 0);
    map.set_user_data(Data::from_u64(5)).unwrap();
    map.start().unwrap();
    assert_eq!(map.set_user_data(Data::from_u64(6)), Err(Error::BadState), "after start");
    assert_eq!(map.user_data().as_u64(), 5);
    map.stop().unwrap();
    map.set_user_data(Data::from_u64(6)).unwrap();
}

#[test]
fn doca_mmap_export_pci_and_export_rdma_refusals() {
    let d = dpu();
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 4096]).unwrap();
    map.set_permissions(AccessFlags::PCI_READ_WRITE).unwrap();
    map.add_dev(&d).unwrap();
    assert_eq!(map.export_pci(&d), Err(Error::NotPermitted), "not started");
    map.start().unwrap();
    assert_eq!(map.export_pci(&host()), Err(Error::NotFound), "device not added");
    assert_eq!(map.export_rdma(&d), Err(Error::NotPermitted), "no RDMA permission");
    // Memory registered by address (here a Vec) is exported too: served by the library.
    assert!(!map.is_exported());
    assert_eq!(map.export_pci(&d).map(|desc| desc.len()), Ok(doca_mmap::EXPORT_DESC_LEN));
    assert!(map.is_exported(), "doca_mmap_get_exported");
    map.stop().unwrap();
    assert!(!map.is_exported(), "stop revokes the export");

    let shared = Mmap::create().unwrap();
    shared.set_memrange(SharedMem::alloc(4096).unwrap()).unwrap();
    shared.add_dev(&d).unwrap();
    shared.start().unwrap();
    assert_eq!(shared.export_pci(&d), Err(Error::NotPermitted), "no PCI permission");
    assert!(!shared.is_exported(), "doca_mmap_get_exported");
}

#[test]
fn doca_mmap_export_pci_marks_the_map_exported_and_stop_revokes_it() {
    let (d, h) = (dpu(), host());
    let map = exportable(10_000, &h);
    assert!(!map.is_exported());
    let desc = map.export_pci(&h).unwrap();
    assert!(map.is_exported() && !map.is_from_export());
    let imported = Mmap::create_from_export(None, &desc, &d).unwrap();
    map.stop().unwrap();
    assert!(!map.is_exported());
    assert_eq!(imported.buf_ref(0, 1).unwrap_err(), Error::NotFound, "the importer sees the revocation");
    assert_eq!(Mmap::create_from_export(None, &desc, &d).unwrap_err(), Error::NotFound, "stale descriptor");
    map.start().unwrap();
    let desc2 = map.export_pci(&h).unwrap();
    assert_ne!(desc, desc2, "a new export, a new descriptor");
    let again = Mmap::create_from_export(None, &desc2, &d).unwrap();
    let r = again.buf_ref(0, 1).unwrap();
    map.destroy().unwrap();
    assert_eq!(r.write(0, b"x"), Err(Error::NotFound), "destroying the exporter revokes too");
}

#[test]
fn doca_mmap_create_from_export_is_started_refuses_changes_and_counts_in_the_exporters_addresses() {
    let (d, h) = (dpu(), host());
    let map = exportable(10_000, &h);
    map.access().unwrap().write(0, b"abc").unwrap();
    let desc = map.export_pci(&h).unwrap();
    let imported = Mmap::create_from_export(Some(Data::from_u64(9)), &desc, &d).unwrap();
    assert!(imported.is_from_export() && imported.is_started(), "doca_mmap_get_from_export");
    assert_eq!(imported.user_data().as_u64(), 9);
    assert_eq!(imported.memrange().unwrap(), map.memrange().unwrap(), "the exporter's addresses");
    assert_eq!(imported.permissions(), map.permissions());
    assert_eq!(imported.set_memrange(vec![1u8]), Err(Error::BadState), "started (DOCA's library's code)");
    for refused in [
        imported.set_permissions(AccessFlags::LOCAL_READ_WRITE),
        imported.add_dev(&h),
        imported.rm_dev(&d),
        imported.set_max_num_devices(3),
        imported.set_free_cb(|_| {}),
        imported.set_user_data(Data::from_u64(1)),
        imported.start(),
        imported.export_pci(&d).map(|_| ()),
    ] {
        assert_eq!(refused, Err(Error::NotPermitted));
    }
    let mut out = [0u8; 3];
    imported.buf_ref(0, 3).unwrap().read(0, &mut out).unwrap();
    assert_eq!(&out, b"abc", "the same pages");
    // NVIDIA's RDMA samples (2.9, 3.3) stop their remote maps before destroying them and
    // report a failure: a map from export may be stopped, once; it can only be destroyed then.
    assert_eq!(imported.stop(), Ok(()));
    assert_eq!(imported.stop(), Err(Error::BadState));
    imported.destroy().unwrap();
}

#[test]
fn doca_mmap_create_from_export_refuses_malformed_forged_and_stale_descriptors() {
    let (d, h) = (dpu(), host());
    let map = exportable(4096, &h);
    let desc = map.export_pci(&h).unwrap();
    assert_eq!(
        Mmap::create_from_export(None, &desc[..20], &d).unwrap_err(),
        Error::InvalidValue,
        "truncated"
    );
    assert_eq!(Mmap::create_from_export(None, &[], &d).unwrap_err(), Error::InvalidValue, "empty");
    let mut bad = desc.clone();
    bad[0] ^= 1;
    assert_eq!(
        Mmap::create_from_export(None, &bad, &d).unwrap_err(),
        Error::InvalidValue,
        "not a descriptor"
    );
    let mut forged = desc.clone();
    forged[30] ^= 0x55; // inside the token
    assert_eq!(Mmap::create_from_export(None, &forged, &d).unwrap_err(), Error::NotFound, "forged");
    let mut wrapping = desc.clone();
    wrapping[68..76].copy_from_slice(&u64::MAX.to_le_bytes()); // exporter's base address
    assert_eq!(
        Mmap::create_from_export(None, &wrapping, &d).unwrap_err(),
        Error::InvalidValue,
        "a base address whose range wraps around"
    );
}

#[test]
fn doca_mmap_cap_is_export_pci_supported_and_create_from_export_pci_supported() {
    let (d, h) = (dpu(), host());
    for dev in [&d, &h] {
        assert_eq!(Mmap::cap_is_export_pci_supported(dev.as_devinfo()), Ok(true));
        assert_eq!(Mmap::cap_is_create_from_export_pci_supported(dev.as_devinfo()), Ok(true));
    }
    // A machine whose devices cannot export nor import: the capabilities say so, and the
    // calls refuse with NOT_SUPPORTED.
    let t = Topology::parse(
        "no export",
        "device 03:00.0 dpu\nrep b1:00.0 pf\ndevice b1:00.0 host\ncap mmap.export_pci 0\ncap mmap.create_from_export_pci 0\n",
    )
    .unwrap();
    let list = t.devinfo_list().unwrap();
    assert_eq!(Mmap::cap_is_export_pci_supported(&list[1]), Ok(false));
    assert_eq!(Mmap::cap_is_create_from_export_pci_supported(&list[0]), Ok(false));
    let weak_host = list[1].open().unwrap();
    let map = exportable(4096, &weak_host);
    assert_eq!(map.export_pci(&weak_host), Err(Error::NotSupported));
    let desc = exportable(4096, &h).export_pci(&h).unwrap();
    assert_eq!(
        Mmap::create_from_export(None, &desc, &list[0].open().unwrap()).unwrap_err(),
        Error::NotSupported
    );

    let typo = Topology::parse("typo", "device b1:00.0 host\ncap mmap.export_pcie 0\n").unwrap();
    let info = &typo.devinfo_list().unwrap()[0];
    assert_eq!(Mmap::cap_is_export_pci_supported(info), Err(Error::InvalidValue), "a misspelt capability");
}
