//! `doca_buf.h`: reference counts (the count *before*), head/data/length, set_data, lists.

use doca_core::Error;

use crate::support::{started_inventory, started_map};

#[test]
fn doca_buf_inc_refcount_dec_refcount_get_refcount_return_the_count_before() {
    let map = started_map(64);
    let inv = started_inventory(2);
    let buf = inv.buf_get_at(&map, 0, 8).unwrap();
    assert_eq!(buf.refcount(), Ok(1), "new buffers start at 1");
    assert_eq!(buf.inc_refcount(), Ok(1), "the count before");
    assert_eq!(buf.refcount(), Ok(2));
    assert_eq!(buf.dec_refcount(), Ok(2), "the count before");
    assert_eq!(inv.num_free_elements(), 1);
    let copy = buf.clone(); // a second handle, not a second reference
    assert_eq!(copy.dec_refcount(), Ok(1), "from 1 to 0: the buffer returns");
    assert_eq!(inv.num_free_elements(), 2);
    assert_eq!(buf.dec_refcount(), Err(Error::BadState), "a returned buffer");
    assert_eq!(buf.data_len(), Err(Error::BadState), "stale handle");
    let reused = inv.buf_get_at(&map, 8, 8).unwrap();
    assert_eq!(buf.head_offset(), Err(Error::BadState), "a stale handle never reaches the new buffer");
    assert_eq!(reused.head_offset(), Ok(8));
}

#[test]
fn doca_buf_get_head_get_len_get_data_get_data_len() {
    let map = started_map(100);
    let (base, _) = map.memrange().unwrap();
    let inv = started_inventory(1);
    let buf = inv.buf_get_by_args(&map, base + 10, 20, base + 12, 4).unwrap();
    assert_eq!(buf.head(), Ok(base + 10));
    assert_eq!(buf.len(), Ok(20));
    assert_eq!(buf.data(), Ok(base + 12));
    assert_eq!(buf.data_len(), Ok(4));
    assert_eq!(buf.tail_room(), Ok(14));
}

#[test]
fn doca_buf_set_data_takes_addresses_inside_the_buffer_and_reset_data_len() {
    let map = started_map(100);
    let (base, _) = map.memrange().unwrap();
    let inv = started_inventory(1);
    let buf = inv.buf_get_by_args(&map, base + 10, 20, base + 12, 4).unwrap();
    assert_eq!(buf.set_data(base + 9, 1), Err(Error::InvalidValue), "data before head");
    assert_eq!(buf.set_data(base + 20, 11), Err(Error::InvalidValue), "data past the end");
    assert_eq!(buf.set_data(20, 1), Err(Error::InvalidValue), "an offset is not an address");
    buf.set_data(base + 20, 10).unwrap();
    assert_eq!((buf.data(), buf.data_len()), (Ok(base + 20), Ok(10)));
    assert_eq!(buf.set_data_offset(11, 2), Ok(()), "the offset twin");
    assert_eq!(buf.data(), Ok(base + 11));
    buf.reset_data_len().unwrap();
    assert_eq!((buf.data(), buf.data_len()), (Ok(base + 11), Ok(0)), "reset keeps the data position");
}

#[test]
fn doca_buf_chain_list_unchain_list_and_the_list_queries() {
    let map = started_map(64);
    let inv = started_inventory(4);
    let a = inv.buf_get_data_at(&map, 0, 4).unwrap();
    let b = inv.buf_get_data_at(&map, 4, 4).unwrap();
    let c = inv.buf_get_data_at(&map, 8, 4).unwrap();
    assert_eq!((a.is_in_list(), a.is_first_in_list(), a.is_last_in_list()), (Ok(false), Ok(true), Ok(true)));
    assert_eq!(a.chain_list(&a), Err(Error::InvalidValue), "a list chained to itself");
    b.inc_refcount().unwrap();
    assert_eq!(a.chain_list(&b), Err(Error::NotPermitted), "the second list's refcount must be 1");
    b.dec_refcount().unwrap();
    a.chain_list(&b).unwrap();
    a.chain_list(&c).unwrap();
    assert_eq!(a.list_len(), Ok(3), "doca_buf_get_list_len");
    assert_eq!(b.list_len(), Err(Error::NotPermitted), "not a head");
    assert_eq!(b.dec_refcount(), Err(Error::NotPermitted), "refcounts belong to the head");
    assert_eq!(b.inc_refcount(), Err(Error::NotPermitted));
    assert_eq!(a.chain_list(&b), Err(Error::NotPermitted), "b is no head any more");
    assert_eq!((b.is_in_list(), b.is_first_in_list(), b.is_last_in_list()), (Ok(true), Ok(false), Ok(false)));
    assert_eq!(a.next_in_list().unwrap(), Some(b.clone()), "doca_buf_get_next_in_list");
    assert_eq!(a.last_in_list().unwrap(), c, "doca_buf_get_last_in_list");
    assert_eq!(c.next_in_list().unwrap(), None);

    assert_eq!(
        b.unchain_list(&a),
        Err(Error::InvalidValue),
        "list1 not a head: list2 is not part of its list"
    );
    a.unchain_list(&c).unwrap();
    assert_eq!(a.list_len(), Ok(2));
    assert_eq!(c.refcount(), Ok(1), "an unchained part is a list of its own");
    assert_eq!(a.unchain_list(&c), Err(Error::InvalidValue), "not in the list any more");
    assert_eq!(a.dec_refcount(), Ok(1));
    assert_eq!(inv.num_free_elements(), 3, "a list returns with its head");
    assert_eq!(b.data_len(), Err(Error::BadState));

    let other = started_inventory(1);
    let foreign = other.buf_get_data_at(&map, 0, 1).unwrap();
    assert_eq!(c.chain_list(&foreign), Err(Error::NotSupported), "buffers of two inventories");
    assert_eq!(c.unchain_list(&foreign), Err(Error::NotSupported));
}
