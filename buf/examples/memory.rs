//! Memory in one page: a shared allocation, a map exported by the host, imported on the DPU
//! side, and buffers writing and reading through both maps. Both sides live in this one
//! process here; across two processes only the descriptor bytes travel (the cross-process
//! tests do exactly that). Run with `cargo run -p doca-buf --example memory`.

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, Error};
use doca_mmap::{AccessFlags, Mmap, SharedMem};

fn main() -> Result<(), Error> {
    // ANCHOR: export
    let host = open_device_with_pci("b1:00.0", None)?;
    let mem = SharedMem::alloc(1 << 20)?; // memfd-backed: another process can map it
    let map = Mmap::create()?;
    map.set_memrange(mem)?;
    map.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE)?;
    map.add_dev(&host)?;
    map.start()?;
    let descriptor: Vec<u8> = map.export_pci(&host)?; // carry these bytes to the other side
                                                      // ANCHOR_END: export

    // ANCHOR: import
    let dpu = open_device_with_pci("03:00.0", None)?;
    let remote = Mmap::create_from_export(None, &descriptor, &dpu)?;
    // ANCHOR_END: import

    // ANCHOR: buffers
    let inv = Inventory::create(8)?;
    inv.start()?;
    // Positions are addresses, as in C. An imported map counts in the exporter's addresses,
    // so an address the host sends across names the same byte on both sides.
    let (host_addr, _) = map.memrange()?;
    assert_eq!(remote.memrange()?.0, host_addr);
    let out = inv.buf_get_by_addr(&remote, host_addr + 4096, 64)?; // empty data there
    out.append(b"written through the imported map")?;
    // The offset twins (`buf_get_at`, `buf_get_data_at`, ...) count from the map's start.
    let seen = inv.buf_get_data_at(&map, 4096, out.data_len()?)?;
    println!("exporter reads: {}", String::from_utf8_lossy(&seen.data_bytes()?));
    out.dec_refcount()?; // DOCA reference counts: at 0 the buffer returns to the inventory
    seen.dec_refcount()?;
    // ANCHOR_END: buffers

    // ANCHOR: revoke
    map.stop()?; // revokes the export
    match inv.buf_get_at(&remote, 0, 8) {
        Err(Error::NotFound) => println!("importer: the export was revoked"),
        other => println!("unexpected: {other:?}"),
    }
    // ANCHOR_END: revoke
    Ok(())
}
