//! `doca_sha.h` (2.6): the SHA context, its capabilities, hash and partial-hash tasks, and
//! the progress engine's rule for a failed task (fatal to its context, as NVIDIA's
//! pe_task_error sample shows for every library on the engine).

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe, Topology};
use doca_mmap::{AccessFlags, Mmap};
use doca_sha::{caps, Algorithm, HashTask, PartialHashTask, Sha, FLUSH_STATUS};

use crate::support::{started_inventory, until};

const ALL: [Algorithm; 3] = [Algorithm::Sha1, Algorithm::Sha256, Algorithm::Sha512];
/// `sha256sum` of "abc".
const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

/// Completions seen: (task user data, status, destination data).
type Seen = Rc<RefCell<Vec<(u64, Result<(), Error>, Vec<u8>)>>>;

fn dst_data(b: Option<Buf>) -> Vec<u8> {
    b.map_or(Vec::new(), |d| d.data_to_vec().unwrap())
}

struct Rig {
    pe: Pe,
    sha: Sha,
    dev: Dev,
    inv: Inventory,
    seen: Seen,
    /// Partial tasks handed back (kept for the next segment).
    kept: Rc<RefCell<Vec<PartialHashTask>>>,
}

/// A SHA context on b1:00.0, configured (16 hash and 4 partial tasks), started.
fn rig() -> Rig {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let sha = Sha::create(&dev).unwrap();
    pe.connect_ctx(&sha.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    let kept: Rc<RefCell<Vec<PartialHashTask>>> = Rc::default();
    let hash = |seen: &Seen| {
        let seen = seen.clone();
        move |t: HashTask, td: Data, _| seen.borrow_mut().push((td.as_u64(), t.status(), dst_data(t.dst())))
    };
    let partial = |seen: &Seen, kept: &Rc<RefCell<Vec<PartialHashTask>>>| {
        let (seen, kept) = (seen.clone(), kept.clone());
        move |t: PartialHashTask, td: Data, _| {
            seen.borrow_mut().push((td.as_u64(), t.status(), dst_data(t.dst())));
            kept.borrow_mut().push(t);
        }
    };
    sha.task_hash_set_conf(hash(&seen), hash(&seen), 4).unwrap();
    sha.task_partial_hash_set_conf(partial(&seen, &kept), partial(&seen, &kept), 2).unwrap();
    sha.as_ctx().start().unwrap();
    Rig { pe, sha, dev, inv: started_inventory(32), seen, kept }
}

/// A started read-write map holding `data`, added to `dev`.
fn map(dev: &Dev, data: Vec<u8>) -> Mmap {
    let m = Mmap::create().unwrap();
    m.set_memrange(data).unwrap();
    m.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    m.add_dev(dev).unwrap();
    m.start().unwrap();
    m
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Progress until `n` completions were seen.
fn wait(r: &Rig, n: usize) {
    until(&r.pe, || r.seen.borrow().len() >= n);
}

#[test]
fn doca_sha_create_not_supported_without_sha_and_destroy_in_use_while_running() {
    let t = Topology::parse("t", "device 03:00.0 dpu\ncap sha.algorithms 0\n").unwrap();
    let none = t.devinfo_list().unwrap()[0].open().unwrap();
    assert_eq!(Sha::create(&none).err(), Some(Error::NotSupported));
    let r = rig();
    let sha = match r.sha.destroy() {
        Err(refused) => {
            assert_eq!(refused.error, Error::InUse, "destroy while Running: the header's code");
            refused.value
        }
        Ok(()) => panic!("destroy of a running context must be IN_USE"),
    };
    sha.as_ctx().stop().unwrap();
    until(&r.pe, || sha.as_ctx().state() == CtxState::Idle);
    assert!(sha.destroy().is_ok());
}

#[test]
fn doca_sha_cap_get_min_dst_buf_size_and_partial_hash_block_size_per_algorithm() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let info = dev.as_devinfo();
    let want = [(20, 64), (32, 64), (64, 128)];
    for (alg, (digest, block)) in ALL.into_iter().zip(want) {
        assert_eq!(caps::min_dst_buf_size(info, alg), Ok(digest), "{}", alg.name());
        assert_eq!(caps::partial_hash_block_size(info, alg), Ok(block), "{}", alg.name());
        assert_eq!(caps::task_hash_is_supported(info, alg), Ok(()));
        assert_eq!(caps::task_partial_hash_is_supported(info, alg), Ok(()));
    }
    assert!(caps::max_src_buf_size(info).unwrap() > 0);
    assert!(caps::max_list_buf_num_elem(info).unwrap() >= 1);
    assert_eq!(Algorithm::from_raw(3), None, "no fourth algorithm");
}

#[test]
fn doca_sha_cap_task_hash_get_supported_not_supported_where_the_topology_takes_it_away() {
    let t = Topology::parse("t", "device 03:00.0 dpu\ncap sha.algorithms 2\ncap sha.hash 0\n").unwrap();
    let info = &t.devinfo_list().unwrap()[0];
    assert_eq!(caps::task_hash_is_supported(info, Algorithm::Sha256), Err(Error::NotSupported));
    assert_eq!(caps::task_partial_hash_is_supported(info, Algorithm::Sha256), Ok(()));
    assert_eq!(caps::task_partial_hash_is_supported(info, Algorithm::Sha1), Err(Error::NotSupported));
}

#[test]
fn doca_sha_task_hash_set_conf_invalid_above_the_max_and_bad_state_while_running() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let sha = Sha::create(&dev).unwrap();
    assert_eq!(sha.task_hash_set_conf(|_, _, _| {}, |_, _, _| {}, 40), Err(Error::InvalidValue));
    let r = rig();
    assert_eq!(r.sha.task_hash_set_conf(|_, _, _| {}, |_, _, _| {}, 1), Err(Error::BadState));
    assert_eq!(r.sha.task_partial_hash_set_conf(|_, _, _| {}, |_, _, _| {}, 1), Err(Error::BadState));
}

#[test]
fn doca_sha_task_hash_alloc_init_bad_state_when_idle_and_no_memory_when_the_pool_is_out() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let sha = Sha::create(&dev).unwrap();
    sha.task_hash_set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
    assert_eq!(
        sha.task_hash_alloc_init(Algorithm::Sha1, None, None, Data::NONE).err(),
        Some(Error::BadState)
    );
    let r = rig();
    let tasks: Vec<HashTask> = (0..16)
        .map(|_| r.sha.task_hash_alloc_init(Algorithm::Sha1, None, None, Data::NONE).unwrap())
        .collect();
    assert_eq!(
        r.sha.task_hash_alloc_init(Algorithm::Sha1, None, None, Data::NONE).err(),
        Some(Error::NoMemory)
    );
    drop(tasks);
    assert!(
        r.sha.task_hash_alloc_init(Algorithm::Sha1, None, None, Data::NONE).is_ok(),
        "freed tasks return"
    );
}

#[test]
fn doca_sha_task_hash_set_src_set_dst_set_algorithm_and_their_getters() {
    let r = rig();
    let m = map(&r.dev, b"abc".to_vec());
    let src = r.inv.buf_get_data_at(&m, 0, 3).unwrap();
    let t = r.sha.task_hash_alloc_init(Algorithm::Sha1, None, None, Data::from_u64(5)).unwrap();
    assert!(t.src().is_none() && t.dst().is_none());
    t.set_src(Some(&src));
    t.set_algorithm(Algorithm::Sha512);
    assert_eq!(t.src(), Some(src));
    assert_eq!(t.algorithm(), Algorithm::Sha512);
    assert_eq!(t.user_data().as_u64(), 5);
}

/// The digest of a hash task lands after the destination's data, whose length grows by the
/// digest's; the completion comes from progress, never from submit.
#[test]
fn doca_sha_task_hash_alloc_init_completes_in_progress_with_the_digest() {
    let r = rig();
    let m = map(&r.dev, b"abc".to_vec());
    let d = map(&r.dev, vec![0; 64]);
    let src = r.inv.buf_get_data_at(&m, 0, 3).unwrap();
    let dst = r.inv.buf_get_at(&d, 0, 64).unwrap();
    let t = r.sha.task_hash_alloc_init(Algorithm::Sha256, Some(&src), Some(&dst), Data::from_u64(1)).unwrap();
    t.submit().unwrap();
    assert!(r.seen.borrow().is_empty(), "the engine's work, inside progress");
    wait(&r, 1);
    let (ud, status, out) = r.seen.borrow()[0].clone();
    assert_eq!((ud, status), (1, Ok(())));
    assert_eq!(hex(&out), ABC_SHA256);
}

/// DOCA's engine: a failed task is fatal to its context. It moves to Stopping, the tasks still
/// queued complete with SHUTDOWN, it reaches Idle once they are freed, and starts again.
#[test]
fn doca_sha_task_hash_set_conf_error_callback_a_failure_stops_the_context() {
    let r = rig();
    let m = map(&r.dev, b"abc".to_vec());
    let d = map(&r.dev, vec![0; 256]);
    let src = r.inv.buf_get_data_at(&m, 0, 3).unwrap();
    for i in 0..3u64 {
        let dst = r.inv.buf_get_at(&d, 64 * i as usize, 64).unwrap();
        let dst = (i != 0).then_some(&dst); // the first has no destination
        r.sha
            .task_hash_alloc_init(Algorithm::Sha256, Some(&src), dst, Data::from_u64(i))
            .unwrap()
            .submit()
            .unwrap();
    }
    until(&r.pe, || r.sha.as_ctx().state() == CtxState::Idle);
    let seen: Vec<_> = r.seen.borrow().iter().map(|(td, st, _)| (*td, *st)).collect();
    assert_eq!(seen, [(0, Err(Error::InvalidValue)), (1, Err(FLUSH_STATUS)), (2, Err(FLUSH_STATUS))]);
    r.sha.as_ctx().start().unwrap();
    let dst = r.inv.buf_get_at(&d, 192, 64).unwrap();
    r.sha
        .task_hash_alloc_init(Algorithm::Sha256, Some(&src), Some(&dst), Data::from_u64(3))
        .unwrap()
        .submit()
        .unwrap();
    wait(&r, 4);
    assert_eq!(hex(&r.seen.borrow()[3].2), ABC_SHA256, "the restarted context hashes");
}

/// try_submit makes the engine's checks first: INVALID_VALUE, the task back, and the context
/// still Running (a refusal is no failure).
#[test]
fn doca_sha_task_hash_try_submit_invalid_value_below_the_digest_length() {
    let r = rig();
    let m = map(&r.dev, b"abc".to_vec());
    let d = map(&r.dev, vec![0; 64]);
    let src = r.inv.buf_get_data_at(&m, 0, 3).unwrap();
    let small = r.inv.buf_get_at(&d, 0, 31).unwrap();
    let t = r.sha.task_hash_alloc_init(Algorithm::Sha256, Some(&src), Some(&small), Data::NONE).unwrap();
    let refused = t.try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue);
    assert_eq!(r.sha.as_ctx().state(), CtxState::Running);
}

/// Segments of whole blocks, then a final one: the digest of the whole, has_result set; the
/// destination and algorithm are fixed once a segment completed (BAD_STATE); reset forgets
/// the session.
#[test]
fn doca_sha_task_partial_hash_set_is_final_buf_get_has_result_set_dst_and_reset() {
    let r = rig();
    let data: Vec<u8> = b"abc".repeat(50); // 150 bytes: 64 + 64 + 22
    let m = map(&r.dev, data.clone());
    let d = map(&r.dev, vec![0; 64]);
    let dst = r.inv.buf_get_at(&d, 0, 32).unwrap();
    let other = r.inv.buf_get_at(&d, 32, 32).unwrap();
    let mut t = r.sha.task_partial_hash_alloc_init(Algorithm::Sha256, None, Some(&dst), Data::NONE).unwrap();
    for (i, (off, len)) in [(0, 64), (64, 64), (128, 22)].into_iter().enumerate() {
        t.set_src(Some(&r.inv.buf_get_data_at(&m, off, len).unwrap()));
        if i == 2 {
            t.set_is_final();
            assert!(t.is_final());
        }
        t.submit().unwrap();
        wait(&r, i + 1);
        t = r.kept.borrow_mut().pop().unwrap();
        assert_eq!(r.seen.borrow()[i].1, Ok(()));
        assert_eq!(t.has_result(), i == 2);
        if i == 0 {
            assert_eq!(t.set_dst(Some(&other)), Err(Error::BadState), "fixed during a session");
            assert_eq!(t.set_algorithm(Algorithm::Sha1), Err(Error::BadState));
        }
    }
    // The same as one hash task over the whole data.
    let whole = r.inv.buf_get_data_at(&m, 0, data.len()).unwrap();
    let one_shot = map(&r.dev, vec![0; 32]);
    let out = r.inv.buf_get_at(&one_shot, 0, 32).unwrap();
    r.sha
        .task_hash_alloc_init(Algorithm::Sha256, Some(&whole), Some(&out), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    wait(&r, 4);
    assert_eq!(r.seen.borrow()[3].1, Ok(()));
    assert_eq!(dst.data_to_vec().unwrap(), out.data_to_vec().unwrap());
    t.reset();
    assert!(!t.has_result() && !t.is_final());
    assert_eq!(t.set_dst(Some(&other)), Ok(()), "a new session");
}

/// A non-final segment that is not whole blocks: try_submit refuses it and the session goes
/// on; submitted, the engine fails it, which stops the context (the session is over).
#[test]
fn doca_sha_task_partial_hash_set_src_a_segment_not_whole_blocks() {
    let r = rig();
    let m = map(&r.dev, vec![7; 256]);
    let d = map(&r.dev, vec![0; 32]);
    let dst = r.inv.buf_get_at(&d, 0, 32).unwrap();
    let t = r.sha.task_partial_hash_alloc_init(Algorithm::Sha1, None, Some(&dst), Data::NONE).unwrap();
    t.set_src(Some(&r.inv.buf_get_data_at(&m, 0, 65).unwrap()));
    let refused = t.try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue);
    assert_eq!(r.sha.as_ctx().state(), CtxState::Running);
    refused.value.submit().unwrap();
    wait(&r, 1);
    assert_eq!(r.seen.borrow()[0].1, Err(Error::InvalidValue));
    r.pe.progress();
    assert_eq!(r.sha.as_ctx().state(), CtxState::Stopping, "held by the task the callback kept");
    r.kept.borrow_mut().clear();
    until(&r.pe, || r.sha.as_ctx().state() == CtxState::Idle);
}
