//! Every rule and error code of `doca_buf` and `doca_buf_inventory`.

use doca_buf::Inventory;
use doca_core::{Data, Error};
use doca_mmap::{Mmap, SharedMem};

fn started_map(len: usize) -> Mmap {
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; len]).unwrap();
    map.start().unwrap();
    map
}

fn started_inventory(n: u32) -> Inventory {
    let inv = Inventory::create(n).unwrap();
    inv.start().unwrap();
    inv
}

#[test]
fn inventory_lifecycle_and_counts() {
    assert_eq!(Inventory::create(0).unwrap_err(), Error::InvalidValue);
    let inv = Inventory::create(2).unwrap();
    let map = started_map(64);
    assert_eq!(inv.buf_get_at(&map, 0, 8).unwrap_err(), Error::BadState, "inventory not started");
    inv.start().unwrap();
    assert_eq!(inv.start(), Err(Error::BadState));
    inv.set_user_data(Data::from_u64(3));
    assert_eq!(inv.user_data().as_u64(), 3);
    assert_eq!((inv.num_elements(), inv.num_free_elements()), (2, 2));

    let a = inv.buf_get_at(&map, 0, 8).unwrap();
    let b = inv.buf_get_data_at(&map, 8, 8).unwrap();
    assert_eq!(inv.num_free_elements(), 0);
    assert_eq!(inv.buf_get_at(&map, 16, 8).unwrap_err(), Error::NoMemory, "inventory empty");
    assert_eq!(map.num_bufs(), 2);

    let inv = inv.destroy().unwrap_err();
    assert_eq!(inv.error, Error::InUse, "destroy with buffers out");
    let inv = inv.into_inner();
    inv.stop().unwrap();
    assert_eq!(inv.buf_get_at(&map, 0, 8).unwrap_err(), Error::BadState, "inventory stopped");
    assert_eq!(a.data_len(), Ok(0), "buffers out stay valid after stop");
    assert_eq!(a.dec_refcount(), Ok(1), "the count before");
    assert_eq!(b.dec_refcount(), Ok(1));
    assert_eq!(map.num_bufs(), 0);
    inv.destroy().unwrap();
    map.destroy().unwrap();

    let stopped_map = Mmap::create().unwrap();
    stopped_map.set_memrange(vec![0u8; 8]).unwrap();
    let inv = started_inventory(1);
    assert_eq!(inv.buf_get_at(&stopped_map, 0, 8).unwrap_err(), Error::BadState, "map not started");
}

#[test]
fn ranges_outside_the_map_or_the_buffer_are_refused() {
    let map = started_map(100);
    let inv = started_inventory(8);
    assert_eq!(inv.buf_get_at(&map, 90, 11).unwrap_err(), Error::InvalidValue, "head range outside the map");
    assert_eq!(inv.buf_get_at(&map, usize::MAX, 2).unwrap_err(), Error::InvalidValue, "overflow");
    assert_eq!(
        inv.buf_get_by_offsets(&map, 10, 20, 5, 5).unwrap_err(),
        Error::InvalidValue,
        "data before head"
    );
    assert_eq!(
        inv.buf_get_by_offsets(&map, 10, 20, 25, 6).unwrap_err(),
        Error::InvalidValue,
        "data past the end"
    );
    assert_eq!(inv.num_free_elements(), 8, "refusals take no element");

    let buf = inv.buf_get_by_offsets(&map, 10, 20, 12, 4).unwrap();
    assert_eq!(
        (buf.head_offset(), buf.len(), buf.data_offset(), buf.data_len()),
        (Ok(10), Ok(20), Ok(12), Ok(4))
    );
    assert_eq!(buf.head().unwrap(), map.memrange().unwrap().0 + 10);
    assert_eq!(buf.tail_room(), Ok(14));
    assert_eq!(buf.set_data_offset(9, 1), Err(Error::InvalidValue), "data before head");
    assert_eq!(buf.set_data_offset(20, 11), Err(Error::InvalidValue), "data past the end");
    buf.set_data_offset(20, 10).unwrap();
    buf.reset_data_len().unwrap();
    assert_eq!((buf.data_offset(), buf.data_len()), (Ok(20), Ok(0)), "reset keeps the data position");
    assert_eq!(buf.increase_data_len(11), Err(Error::InvalidValue));
    assert_eq!(buf.increase_data_len(usize::MAX), Err(Error::InvalidValue), "no overflow");
    assert_eq!(buf.append(&[0; 11]), Err(Error::InvalidValue));
    assert_eq!(buf.data_len(), Ok(0), "a refused growth changes nothing");
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

#[test]
fn refcounts_and_stale_handles() {
    let map = started_map(64);
    let inv = started_inventory(2);
    let buf = inv.buf_get_at(&map, 0, 8).unwrap();
    assert_eq!(buf.refcount(), Ok(1), "new buffers start at 1");
    assert_eq!(buf.inc_refcount(), Ok(1), "returns the count before");
    assert_eq!(buf.refcount(), Ok(2));
    assert_eq!(buf.dec_refcount(), Ok(2), "the count before (doca_buf.h)");
    assert_eq!(inv.num_free_elements(), 1);
    let copy = buf.clone();
    assert_eq!(copy.dec_refcount(), Ok(1), "from 1 to 0: the element returns");
    assert_eq!(inv.num_free_elements(), 2);
    assert_eq!(buf.dec_refcount(), Err(Error::BadState), "dec at 0");
    assert_eq!(buf.data_len(), Err(Error::BadState), "stale handle");
    let reused = inv.buf_get_at(&map, 8, 8).unwrap();
    assert_eq!(buf.head_offset(), Err(Error::BadState), "a stale handle never reaches the new buffer");
    assert_eq!(reused.head_offset(), Ok(8));
}

#[test]
fn lists_chain_unchain_and_return_together() {
    let map = started_map(64);
    let inv = started_inventory(4);
    let a = inv.buf_get_data_at(&map, 0, 4).unwrap();
    let b = inv.buf_get_data_at(&map, 4, 4).unwrap();
    let c = inv.buf_get_data_at(&map, 8, 4).unwrap();
    assert_eq!((a.is_in_list(), a.is_first_in_list(), a.is_last_in_list()), (Ok(false), Ok(true), Ok(true)));
    assert_eq!(a.chain_list(&a), Err(Error::InvalidValue));
    b.inc_refcount().unwrap();
    assert_eq!(a.chain_list(&b), Err(Error::NotPermitted), "second list's refcount must be 1");
    b.dec_refcount().unwrap();
    a.chain_list(&b).unwrap();
    a.chain_list(&c).unwrap();
    assert_eq!(a.list_len(), Ok(3));
    assert_eq!(b.list_len(), Err(Error::NotPermitted), "not a head");
    assert_eq!(b.dec_refcount(), Err(Error::NotPermitted), "not a head");
    assert_eq!(b.inc_refcount(), Err(Error::NotPermitted));
    assert_eq!(a.chain_list(&b), Err(Error::NotPermitted), "b is no head any more");
    assert_eq!((b.is_in_list(), b.is_first_in_list(), b.is_last_in_list()), (Ok(true), Ok(false), Ok(false)));
    assert_eq!(a.next_in_list().unwrap(), Some(b.clone()));
    assert_eq!(a.last_in_list().unwrap(), c);
    assert_eq!(c.next_in_list().unwrap(), None);

    let dup = inv.buf_dup(&a);
    assert_eq!(dup.unwrap_err(), Error::NoMemory, "a three-buffer list needs three free elements");
    assert_eq!(inv.buf_dup(&b).unwrap_err(), Error::NotPermitted, "dup of a non-head");

    a.unchain_list(&c).unwrap();
    assert_eq!(a.list_len(), Ok(2));
    assert_eq!(c.refcount(), Ok(1));
    assert_eq!(a.unchain_list(&c), Err(Error::InvalidValue), "not in the list any more");
    assert_eq!(a.dec_refcount(), Ok(1));
    assert_eq!(inv.num_free_elements(), 3, "a list returns with its head");
    assert_eq!(b.data_len(), Err(Error::BadState));

    let other = started_inventory(1);
    let foreign = other.buf_get_data_at(&map, 0, 1).unwrap();
    assert_eq!(c.chain_list(&foreign), Err(Error::NotSupported));
    assert_eq!(c.unchain_list(&foreign), Err(Error::NotSupported));
}

#[test]
fn dup_copies_the_ranges_of_a_whole_list() {
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
    inv.stop().unwrap();
    assert_eq!(inv.buf_dup(&a).unwrap_err(), Error::BadState, "inventory stopped");
    assert_eq!(map.num_bufs(), 4);
}
