//! `doca_buf_inventory.h`: create, start, stop, destroy, counts, user data, and the three
//! ways to get a buffer (by args, by address, by data — addresses as in C), and dup.

use doca_buf::Inventory;
use doca_core::{Data, Error};
use doca_mmap::Mmap;

use crate::support::{started_inventory, started_map};

#[test]
fn doca_buf_inventory_create_start_stop_destroy() {
    assert_eq!(Inventory::create(0).unwrap_err(), Error::InvalidValue, "no elements");
    let inv = Inventory::create(2).unwrap();
    let map = started_map(64);
    let (base, _) = map.memrange().unwrap();
    assert_eq!(inv.buf_get_by_addr(&map, base, 8).unwrap_err(), Error::BadState, "not started");
    inv.start().unwrap();
    assert_eq!(inv.start(), Err(Error::BadState), "started twice");
    let a = inv.buf_get_by_addr(&map, base, 8).unwrap();
    let refused = inv.destroy().unwrap_err();
    assert_eq!(refused.error, Error::InUse, "buffers out");
    let inv = refused.into_inner();
    inv.stop().unwrap();
    assert_eq!(inv.buf_get_by_addr(&map, base, 8).unwrap_err(), Error::BadState, "stopped");
    assert_eq!(a.data_len(), Ok(0), "buffers out stay valid after stop");
    a.dec_refcount().unwrap();
    inv.destroy().unwrap();
}

#[test]
fn doca_buf_inventory_get_num_elements_and_get_num_free_elements() {
    let map = started_map(64);
    let inv = started_inventory(2);
    assert_eq!((inv.num_elements(), inv.num_free_elements()), (2, 2));
    let a = inv.buf_get_at(&map, 0, 8).unwrap();
    let b = inv.buf_get_data_at(&map, 8, 8).unwrap();
    assert_eq!((inv.num_elements(), inv.num_free_elements()), (2, 0));
    assert_eq!(inv.buf_get_at(&map, 16, 8).unwrap_err(), Error::NoMemory, "no free element");
    assert_eq!(map.num_bufs(), 2);
    a.dec_refcount().unwrap();
    b.dec_refcount().unwrap();
    assert_eq!(inv.num_free_elements(), 2);
}

#[test]
fn doca_buf_inventory_set_user_data_in_any_state() {
    let inv = Inventory::create(1).unwrap();
    inv.set_user_data(Data::from_u64(3)); // before start, as applications do
    inv.start().unwrap();
    assert_eq!(inv.user_data().as_u64(), 3);
    inv.set_user_data(Data::from_u64(4));
    assert_eq!(inv.user_data().as_u64(), 4);
}

#[test]
fn doca_buf_inventory_buf_get_by_args_checks_the_layout_with_addresses() {
    let map = started_map(100);
    let (base, _) = map.memrange().unwrap();
    let inv = started_inventory(8);
    let buf = inv.buf_get_by_args(&map, base + 10, 20, base + 12, 4).unwrap();
    assert_eq!(
        (buf.head(), buf.len(), buf.data(), buf.data_len()),
        (Ok(base + 10), Ok(20), Ok(base + 12), Ok(4))
    );
    assert_eq!((buf.head_offset(), buf.data_offset()), (Ok(10), Ok(12)), "the offset twins");
    let refusals = [
        (base + 90, 11, base + 90, 0, "buffer past the map's end"),
        (base - 1, 8, base, 0, "buffer before the map"),
        (base + 10, 20, base + 5, 5, "data before head"),
        (base + 10, 20, base + 25, 6, "data past the buffer's end"),
        (usize::MAX, 2, usize::MAX, 0, "overflow"),
    ];
    for (addr, len, data, data_len, why) in refusals {
        assert_eq!(
            inv.buf_get_by_args(&map, addr, len, data, data_len).unwrap_err(),
            Error::InvalidValue,
            "{why}"
        );
    }
    assert_eq!(inv.num_free_elements(), 7, "refusals take no element");
}

#[test]
fn doca_buf_inventory_buf_get_by_addr_and_buf_get_by_data() {
    let map = started_map(64);
    let (base, len) = map.memrange().unwrap();
    let inv = started_inventory(4);
    let empty = inv.buf_get_by_addr(&map, base + 16, 32).unwrap();
    assert_eq!(
        (empty.head(), empty.len(), empty.data(), empty.data_len()),
        (Ok(base + 16), Ok(32), Ok(base + 16), Ok(0))
    );
    let full = inv.buf_get_by_data(&map, base + 8, 8).unwrap();
    assert_eq!(
        (full.head(), full.len(), full.data(), full.data_len()),
        (Ok(base + 8), Ok(8), Ok(base + 8), Ok(8))
    );
    assert_eq!(inv.buf_get_by_addr(&map, base + len - 4, 8).unwrap_err(), Error::InvalidValue);
    assert_eq!(inv.buf_get_by_data(&map, base + len, 1).unwrap_err(), Error::InvalidValue);
    // Offsets are a different function, never the same parameter.
    assert_eq!(inv.buf_get_at(&map, 16, 32).unwrap().head(), Ok(base + 16));
    let stopped = Mmap::create().unwrap();
    stopped.set_memrange(vec![0u8; 8]).unwrap();
    assert_eq!(inv.buf_get_at(&stopped, 0, 8).unwrap_err(), Error::BadState, "map not started");
}

#[test]
fn doca_buf_inventory_buf_dup_copies_the_whole_list() {
    let map = started_map(64);
    let inv = started_inventory(4);
    let a = inv.buf_get_by_offsets(&map, 0, 16, 2, 3).unwrap();
    let b = inv.buf_get_data_at(&map, 20, 4).unwrap();
    a.chain_list(&b).unwrap();
    let d = inv.buf_dup(&a).unwrap();
    assert_ne!(d, a);
    assert_eq!((d.head_offset(), d.len(), d.data_offset(), d.data_len()), (Ok(0), Ok(16), Ok(2), Ok(3)));
    assert_eq!(d.list_len(), Ok(2));
    let d2 = d.next_in_list().unwrap().unwrap();
    assert_eq!((d2.data_offset(), d2.data_len()), (Ok(20), Ok(4)));
    assert_eq!(inv.buf_dup(&b).unwrap_err(), Error::NotPermitted, "dup of a list element that is no head");
    assert_eq!(inv.buf_dup(&a).unwrap_err(), Error::NoMemory, "a two-buffer list needs two free elements");
    inv.stop().unwrap();
    assert_eq!(inv.buf_dup(&a).unwrap_err(), Error::BadState, "inventory stopped");
    assert_eq!(map.num_bufs(), 4);
}
