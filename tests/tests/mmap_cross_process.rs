//! Export and import of memory between two real processes: writes on either side are
//! visible on the other; forged, truncated and stale descriptors are refused.

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, Error};
use doca_mmap::{AccessFlags, Mmap, SharedMem};
use doca_tests::{from_hex, to_hex, Peer};

const PEER: &str = env!("CARGO_BIN_EXE_mem_peer");

#[test]
fn a_host_export_is_shared_with_a_dpu_process() {
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    let map = Mmap::create().unwrap();
    map.set_memrange(SharedMem::alloc(1 << 20).unwrap()).unwrap();
    map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.add_dev(&host).unwrap();
    map.start().unwrap();
    let desc = map.export_pci(&host).unwrap();
    let inv = Inventory::create(4).unwrap();
    inv.start().unwrap();

    let mut peer = Peer::spawn(PEER, &[]);
    assert_eq!(peer.ask(&format!("import {}", to_hex(&desc))), "ok");

    // B writes, A sees it.
    assert_eq!(peer.ask("write 4096 pattern written by the DPU process"), "ok");
    let seen = inv.buf_get_data_at(&map, 4096, 34).unwrap();
    assert_eq!(seen.data_to_vec().unwrap(), b"pattern written by the DPU process");
    seen.dec_refcount().unwrap();

    // A writes, B sees it.
    let out = inv.buf_get_at(&map, 700_000, 64).unwrap();
    out.append(b"pattern written by the host process").unwrap();
    out.dec_refcount().unwrap();
    assert_eq!(peer.ask("read 700000 35"), "data pattern written by the host process");

    // The importer counts in the exporter's addresses: the host sends its own buffer address
    // (as C applications do) and the DPU process finds the bytes there. Outside the range is
    // refused.
    let (base, len) = map.memrange().unwrap();
    let at = inv.buf_get_by_data(&map, base + 700_000, 35).unwrap();
    let addr = at.data().unwrap();
    at.dec_refcount().unwrap();
    assert_eq!(peer.ask(&format!("read_addr {addr} 35")), "data pattern written by the host process");
    assert_eq!(peer.ask(&format!("read_addr {} 8", base + len - 4)), "err DOCA_ERROR_INVALID_VALUE");
    assert_eq!(peer.ask(&format!("read_addr {} 8", base - 8)), "err DOCA_ERROR_INVALID_VALUE");

    // Forged and truncated descriptors are refused, never mapped.
    let mut forged = desc.clone();
    forged[40] ^= 0xff;
    assert_eq!(peer.ask(&format!("import {}", to_hex(&forged))), "err DOCA_ERROR_NOT_FOUND");
    assert_eq!(
        peer.ask(&format!("import {}", to_hex(&desc[..desc.len() - 1]))),
        "err DOCA_ERROR_INVALID_VALUE"
    );
    let mut other_fd = desc.clone();
    other_fd[20] = other_fd[20].wrapping_add(1); // another fd of this process: not the export
    assert_eq!(peer.ask(&format!("import {}", to_hex(&other_fd))), "err DOCA_ERROR_NOT_FOUND");

    // The forged import replaced nothing: the good import still works.
    assert_eq!(peer.ask(&format!("import {}", to_hex(&desc))), "ok");
    assert_eq!(peer.ask("read 4096 7"), "data pattern");

    // Stopping the exporting map revokes the export: the importer sees an error.
    map.stop().unwrap();
    assert_eq!(peer.ask("read 4096 7"), "err DOCA_ERROR_NOT_FOUND");
    assert_eq!(peer.ask(&format!("import {}", to_hex(&desc))), "err DOCA_ERROR_NOT_FOUND");
    assert!(peer.finish());
}

#[test]
fn a_dead_exporter_leaves_a_stale_descriptor() {
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let mut peer = Peer::spawn(PEER, &[]);
    let answer = peer.ask("export 8192 exported by the peer");
    let desc = from_hex(answer.strip_prefix("desc ").expect("a descriptor")).unwrap();

    let map = Mmap::create_from_export(None, &desc, &dpu).unwrap();
    let inv = Inventory::create(1).unwrap();
    inv.start().unwrap();
    let buf = inv.buf_get_data_at(&map, 0, 17).unwrap();
    assert_eq!(buf.data_to_vec().unwrap(), b"exported by the p");
    buf.dec_refcount().unwrap();

    peer.kill();
    assert_eq!(Mmap::create_from_export(None, &desc, &dpu).unwrap_err(), Error::NotFound);
    // The map imported before the exporter died stays mapped: no crash.
    let buf = inv.buf_get_data_at(&map, 0, 8).unwrap();
    assert_eq!(buf.data_len(), Ok(8));
    buf.dec_refcount().unwrap();
}

/// A process exports more memory than one import may map (`peer.mem_per_conn`, 4 GiB by
/// default; sparse: it costs nothing until touched): the importing process refuses it with
/// `NO_MEMORY` before mapping anything, and still imports a small export of the same process.
#[test]
fn an_import_beyond_the_budget_for_its_exporter_is_refused_before_it_is_mapped() {
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    let export = |len: usize| {
        let map = Mmap::create().unwrap();
        map.set_memrange(SharedMem::alloc(len).unwrap()).unwrap();
        map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
        map.add_dev(&host).unwrap();
        map.start().unwrap();
        let desc = map.export_pci(&host).unwrap();
        (map, desc)
    };
    let (_big, big) = export(5 << 30);
    let (_small, small) = export(1 << 20);
    let mut peer = Peer::spawn(PEER, &[]);
    assert_eq!(peer.ask(&format!("import {}", to_hex(&big))), "err DOCA_ERROR_NO_MEMORY");
    assert_eq!(peer.ask(&format!("import {}", to_hex(&small))), "ok");
    assert_eq!(peer.ask("write 0 still served"), "ok");
}
