//! The Rust-only rules of doca-buf: the bytes through a buffer, borrowed through guards that
//! never alias. The header's rules and codes (`doca_buf.h`, `doca_buf_inventory.h`) are in
//! the conformance suite (tests/ crate, `conformance/`).

use doca_buf::Inventory;
use doca_core::Error;
use doca_mmap::{Mmap, SharedMem};

fn started_inventory(n: u32) -> Inventory {
    let inv = Inventory::create(n).unwrap();
    inv.start().unwrap();
    inv
}

#[test]
fn bytes_through_the_buffer() {
    let mem = SharedMem::alloc(4096).unwrap();
    mem.write(0, b"hello").unwrap();
    let map = Mmap::create().unwrap();
    map.set_memrange(mem).unwrap();
    map.start().unwrap();
    let inv = started_inventory(4);
    let hello = inv.buf_get_data_at(&map, 0, 5).unwrap();
    assert_eq!(&*hello.data_bytes().unwrap(), b"hello");
    hello.data_bytes_mut().unwrap()[0] = b'j';
    assert_eq!(hello.data_to_vec().unwrap(), b"jello");

    let out = inv.buf_get_at(&map, 100, 8).unwrap();
    out.append(b"abc").unwrap();
    out.append(b"de").unwrap();
    assert_eq!(out.data_to_vec().unwrap(), b"abcde");
    assert_eq!(out.append(b"xyzw"), Err(Error::InvalidValue), "no room");
    assert_eq!(out.data_len(), Ok(5), "a refused append writes nothing");

    // Two buffers over the same bytes: a write guard excludes the other's read.
    let alias = inv.buf_get_data_at(&map, 100, 5).unwrap();
    let guard = out.data_bytes_mut().unwrap();
    assert_eq!(alias.data_bytes().err(), Some(Error::InUse));
    drop(guard);
    assert_eq!(&*alias.data_bytes().unwrap(), b"abcde");
}
