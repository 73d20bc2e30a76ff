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

/// Buffers are `Send + Sync` without a lock per call: threads sharing one inventory and
/// one buffer keep every count exact, and a buffer freed on one thread is stale on all.
#[test]
fn threads_share_an_inventory_without_losing_counts() {
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 64 * 1024]).unwrap();
    map.start().unwrap();
    let inv = started_inventory(64);
    let shared = inv.buf_get_at(&map, 0, 64).unwrap();
    std::thread::scope(|s| {
        for t in 0..4usize {
            let (inv, map, shared) = (&inv, &map, shared.clone());
            s.spawn(move || {
                for i in 0..20_000usize {
                    assert!(shared.inc_refcount().unwrap() >= 1);
                    let own = inv.buf_get_at(map, 1024 * (1 + t), 512).unwrap();
                    own.append(&[t as u8; 8]).unwrap();
                    assert_eq!(own.data_len(), Ok(8));
                    assert_eq!(own.dec_refcount(), Ok(1));
                    assert_eq!(own.data_len(), Err(Error::BadState), "stale after the last reference");
                    assert!(shared.dec_refcount().unwrap() >= 2, "iteration {i}");
                }
            });
        }
    });
    assert_eq!(shared.refcount(), Ok(1));
    assert_eq!(inv.num_free_elements(), 63);
    assert_eq!(shared.dec_refcount(), Ok(1));
    assert_eq!(inv.num_free_elements(), 64);
}

/// A map with its free callback, and a flag the callback sets.
fn map_with_free_flag() -> (Mmap, std::sync::Arc<std::sync::atomic::AtomicBool>) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let freed = std::sync::Arc::new(AtomicBool::new(false));
    let f = freed.clone();
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 4096]).unwrap();
    map.set_free_cb(move |_| f.store(true, Ordering::SeqCst)).unwrap();
    map.start().unwrap();
    (map, freed)
}

/// Buffers' handles share their inventory's part, yet an inventory keeps no map alive: a
/// map's memory goes (its free callback runs) when the map and the handles of its buffers
/// go, while the inventory lives on; and an inventory dropped with buffers out keeps nothing
/// in a cycle (the map goes with the last handle, buffer returned or not).
#[test]
fn handles_keep_maps_only_as_long_as_buffers_need_them() {
    use std::sync::atomic::Ordering;
    let inv = started_inventory(4);
    let (map, freed) = map_with_free_flag();
    for _ in 0..3 {
        let a = inv.buf_get_at(&map, 0, 64).unwrap();
        let b = inv.buf_get_at(&map, 64, 64).unwrap();
        assert_eq!(a.clone(), a, "a clone is the same buffer");
        assert_ne!(a, b);
        a.dec_refcount().unwrap();
        assert_eq!(a.data_len(), Err(Error::BadState), "stale once returned");
        assert_eq!(b.data_len(), Ok(0), "its neighbour is not");
        b.dec_refcount().unwrap();
    }
    let stale = inv.buf_get_at(&map, 0, 64).unwrap();
    stale.dec_refcount().unwrap();
    map.destroy().unwrap();
    assert!(!freed.load(Ordering::SeqCst), "a handle (stale) still reaches the memory");
    drop(stale);
    assert!(freed.load(Ordering::SeqCst), "the map went with its last handle, the inventory lives on");

    // The inventory goes first, a buffer still out.
    let (map, freed) = map_with_free_flag();
    let out = inv.buf_get_at(&map, 0, 64).unwrap();
    drop(inv);
    drop(map);
    assert_eq!(out.data_len(), Ok(0), "a buffer outlives its inventory's handle");
    let kept = out.clone();
    drop(out); // never returned: the inventory's state goes with the last handle
    assert!(!freed.load(Ordering::SeqCst), "a clone still holds the buffer");
    drop(kept);
    assert!(freed.load(Ordering::SeqCst), "nothing kept the inventory and its map in a cycle");
}

/// A map counts every buffer out on it, from every inventory, until it goes back (or until
/// nothing can reach it any more); a list over two maps reaches the second map from its
/// head even when only the head's handle is left.
#[test]
fn maps_count_the_buffers_of_every_inventory_and_lists_reach_both_maps() {
    let (inv_a, inv_b) = (started_inventory(4), started_inventory(4));
    let (m1, _) = map_with_free_flag();
    let (m2, _) = map_with_free_flag();
    let x = inv_a.buf_get_at(&m1, 0, 64).unwrap();
    let y = inv_b.buf_get_at(&m1, 64, 64).unwrap();
    let z = inv_a.buf_get_data_at(&m2, 128, 8).unwrap();
    assert_eq!((m1.num_bufs(), m2.num_bufs()), (2, 1));
    assert_eq!(m1.stop(), Err(Error::NotPermitted), "buffers still point into it");
    x.chain_list(&z).unwrap();
    drop(z); // the head's handle is all that is left of the list
    let second = x.next_in_list().unwrap().expect("two buffers");
    assert_eq!((second.data_offset(), second.data_len()), (Ok(128), Ok(8)));
    assert!(m2.owns(second.map()), "the element's own map");
    assert_eq!(x.last_in_list().unwrap(), second);
    drop(second);
    assert_eq!(x.dec_refcount(), Ok(1), "the list goes back");
    assert_eq!((m1.num_bufs(), m2.num_bufs()), (1, 0));
    assert_eq!(y.dec_refcount(), Ok(1));
    drop(y); // (a stale handle still reaches its inventory's state)
    assert_eq!(m1.num_bufs(), 0);
    m1.stop().unwrap();

    // An inventory dropped with a buffer out: counted as long as something reaches it.
    let w = inv_b.buf_get_at(&m2, 0, 64).unwrap();
    drop(inv_b);
    assert_eq!(m2.num_bufs(), 1);
    drop(w); // never returned, and nothing reaches it now
    assert_eq!(m2.num_bufs(), 0);
    m2.stop().unwrap();
}

/// A buffer passed from one inventory to another (a dup, then the original returned) keeps
/// its map counted throughout: `num_bufs` read on another thread never says 0 meanwhile, so
/// the map cannot be stopped under it.
#[test]
fn a_buffer_passed_between_inventories_keeps_its_map_counted() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let map = Arc::new({
        let m = Mmap::create().unwrap();
        m.set_memrange(vec![0u8; 4096]).unwrap();
        m.start().unwrap();
        m
    });
    // A buffer is out before the watcher starts reading, and until after it stopped.
    let invs = [started_inventory(2), started_inventory(2)];
    let mut held = invs[0].buf_get_at(&map, 0, 64).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let (m, halt) = (map.clone(), stop.clone());
    let watcher = std::thread::spawn(move || {
        let (mut reads, mut zeros) = (0u64, 0u64);
        while !halt.load(Ordering::Relaxed) {
            reads += 1;
            zeros += u64::from(m.num_bufs() == 0);
        }
        (reads, zeros)
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(300);
    let mut moves = 0usize;
    while std::time::Instant::now() < deadline {
        let next = invs[(moves + 1) % 2].buf_dup(&held).unwrap();
        held.dec_refcount().unwrap();
        held = next;
        moves += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let (reads, zeros) = watcher.join().unwrap();
    assert_eq!(zeros, 0, "{zeros} of {reads} reads said no buffer while one was out ({moves} moves)");
    held.dec_refcount().unwrap();
    assert_eq!(map.num_bufs(), 0);
}

/// A list over two maps whose inventory handle went still keeps and reaches its second map
/// from the head: the inventory's entry holds a map with elements out on it once the
/// inventory's handle no longer holds the buffers' shared part.
#[test]
fn a_list_over_two_maps_keeps_both_after_its_inventory_handle_goes() {
    use std::sync::atomic::Ordering;
    let inv = started_inventory(4);
    let (m1, _) = map_with_free_flag();
    let (m2, freed2) = map_with_free_flag();
    let x = inv.buf_get_at(&m1, 0, 64).unwrap();
    let z = inv.buf_get_data_at(&m2, 128, 8).unwrap();
    x.chain_list(&z).unwrap();
    drop(z);
    drop(inv);
    drop(m2); // only the list reaches the second map now
    assert!(!freed2.load(Ordering::SeqCst), "an element is out on it");
    let second = x.next_in_list().unwrap().expect("two buffers");
    assert_eq!((second.data_offset(), second.data_len()), (Ok(128), Ok(8)));
    drop(second);
    assert_eq!(x.dec_refcount(), Ok(1), "the list goes back");
    drop(x);
    assert!(freed2.load(Ordering::SeqCst), "the map went with the list");
}

#[test]
fn a_list_walk_gathers_scatters_and_copies_across_uneven_elements() {
    use doca_buf::list;
    let inv = started_inventory(16);
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 4096]).unwrap();
    map.start().unwrap();
    // A source list of data 3 + 0 + 5 bytes.
    let s = inv.buf_get_at(&map, 0, 16).unwrap();
    s.append(b"abc").unwrap();
    let empty = inv.buf_get_at(&map, 16, 16).unwrap();
    let s3 = inv.buf_get_at(&map, 32, 16).unwrap();
    s3.append(b"defgh").unwrap();
    s.chain_list(&empty).unwrap();
    s.chain_list(&s3).unwrap();
    assert_eq!(
        list::elements(&s, 2, "src", "limit").err(),
        Some(Error::InvalidValue),
        "three elements, two allowed"
    );
    let data = list::data(&s, 3, "src", "limit").unwrap();
    assert_eq!(list::total(&data), 8);
    let mut v = Vec::new();
    list::gather(&data, &mut v).unwrap();
    assert_eq!(v, b"abcdefgh");
    // Destination rooms of 2 + 4 + 10 bytes: copied in order, data lengths grown.
    let (d1, d2, d3) = (
        inv.buf_get_at(&map, 100, 2).unwrap(),
        inv.buf_get_at(&map, 200, 4).unwrap(),
        inv.buf_get_at(&map, 300, 10).unwrap(),
    );
    d1.chain_list(&d2).unwrap();
    d1.chain_list(&d3).unwrap();
    let room = list::room(&d1, 3, "dst", "limit").unwrap();
    assert_eq!(list::copy(&data, &room, "t").unwrap(), 8);
    assert_eq!((d1.data_to_vec().unwrap(), d2.data_to_vec().unwrap()), (b"ab".to_vec(), b"cdef".to_vec()));
    assert_eq!(d3.data_to_vec().unwrap(), b"gh");
    // Too many bytes for the room left (8 bytes: 8 of 16 used): nothing written.
    let room = list::room(&d1, 3, "dst", "limit").unwrap();
    assert_eq!(list::total(&room), 8);
    assert_eq!(list::scatter(&room, b"123456789", "t").err(), Some(Error::InvalidValue));
    assert_eq!(d3.data_to_vec().unwrap(), b"gh");
    list::scatter(&room, b"12345678", "t").unwrap();
    assert_eq!(d3.data_to_vec().unwrap(), b"gh12345678");
}

/// Handles are equal when they name one buffer: the same descriptor of the same inventory in
/// the same generation — never two inventories' first descriptors on one map.
#[test]
fn equal_handles_name_one_buffer_of_one_inventory() {
    let (one, two) = (started_inventory(2), started_inventory(2));
    let (map, _freed) = map_with_free_flag();
    let a = one.buf_get_at(&map, 0, 64).unwrap();
    let b = two.buf_get_at(&map, 0, 64).unwrap();
    assert_eq!((a.index(), a.layout()), (b.index(), b.layout()), "same descriptor, same place");
    assert_ne!(a, b, "two inventories");
    assert_eq!(a, a.clone());
    let idx = a.index();
    a.dec_refcount().unwrap();
    let again = one.buf_get_at(&map, 0, 64).unwrap();
    assert_eq!(again.index(), idx);
    assert_ne!(again, a, "the same descriptor in a new generation");
}

#[test]
fn a_view_reads_the_shape_and_grows_the_data_of_its_buffer_only_while_it_is_out() {
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; 4096]).unwrap();
    map.start().unwrap();
    let inv = started_inventory(4);
    let b = inv.buf_get_data_at(&map, 100, 10).unwrap();
    b.set_data_offset(100, 4).unwrap(); // room: 6 after the data
    let (shape, view) = b.view().unwrap();
    assert_eq!(Ok(shape), b.shape());
    assert_eq!((shape.data, shape.data_len, shape.room(), shape.in_list), (100, 4, 6, false));
    view.increase_data_len(5).unwrap();
    assert_eq!(b.data_len(), Ok(9));
    assert_eq!(view.increase_data_len(2), Err(Error::InvalidValue), "1 byte of room left");
    assert_eq!(b.data_len(), Ok(9), "a refused growth changes nothing");
    // A list element's shape says it is in a list, through the view as through shape.
    let next = inv.buf_get_at(&map, 200, 8).unwrap();
    b.chain_list(&next).unwrap();
    assert!(b.view().unwrap().0.in_list && next.view().unwrap().0.in_list);
    b.unchain_list(&next).unwrap();
    assert!(!b.view().unwrap().0.in_list);
    // Back to the inventory while viewed: the growth is a stale handle's.
    let (_, view) = b.view().unwrap();
    b.dec_refcount().unwrap(); // its last reference
    assert_eq!(view.increase_data_len(1), Err(Error::BadState));
    assert_eq!(b.view().err(), Some(Error::BadState));
}
