//! `doca_sha.h`: the context, its capabilities, both task kinds' configuration, allocation
//! and accessors, and the partial hash's session flags. (Digests, statuses and the engine are
//! in doca-sha's own tests.)

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe};
use doca_mmap::Mmap;
use doca_sha::{caps, Algorithm, HashTask, PartialHashTask, Sha};

fn dev() -> Dev {
    open_device_with_pci("b1:00.0", None).unwrap()
}

const ALL: [Algorithm; 3] = [Algorithm::Sha1, Algorithm::Sha256, Algorithm::Sha512];

fn running(dev: &Dev) -> (Pe, Sha) {
    let pe = Pe::create().unwrap();
    let sha = Sha::create(dev).unwrap();
    pe.connect_ctx(&sha.as_ctx()).unwrap();
    sha.task_hash_set_conf(|_: HashTask, _, _| {}, |_: HashTask, _, _| {}, 1).unwrap();
    sha.task_partial_hash_set_conf(|_: PartialHashTask, _, _| {}, |_: PartialHashTask, _, _| {}, 1).unwrap();
    sha.as_ctx().start().unwrap();
    (pe, sha)
}

#[test]
fn doca_sha_create_doca_sha_as_ctx_and_doca_sha_destroy() {
    let d = dev();
    let sha = Sha::create(&d).unwrap();
    assert_eq!(sha.as_ctx().state(), CtxState::Idle);
    sha.destroy().map_err(|r| r.error).unwrap();
    let (_pe, sha) = running(&d);
    let back = sha.destroy().unwrap_err();
    assert_eq!(back.error, Error::BadState, "not while running");
    back.value.as_ctx().stop().unwrap();
}

#[test]
fn doca_sha_cap_task_hash_get_supported_and_the_limits() {
    let d = dev();
    let info = d.as_devinfo();
    for alg in ALL {
        assert_eq!(caps::task_hash_is_supported(info, alg), Ok(()), "{alg:?}");
        assert_eq!(caps::task_partial_hash_is_supported(info, alg), Ok(()), "{alg:?}");
        assert_eq!(
            caps::min_dst_buf_size(info, alg),
            Ok(alg.digest_len() as u32),
            "doca_sha_cap_get_min_dst_buf_size"
        );
        assert_eq!(
            caps::partial_hash_block_size(info, alg),
            Ok(alg.block_len() as u32),
            "doca_sha_cap_get_partial_hash_block_size"
        );
    }
    assert_eq!(
        (Algorithm::Sha1.digest_len(), Algorithm::Sha256.digest_len(), Algorithm::Sha512.digest_len()),
        (20, 32, 64)
    );
    assert!(caps::max_src_buf_size(info).unwrap() >= 4096, "doca_sha_cap_get_max_src_buf_size");
    assert!(caps::max_list_buf_num_elem(info).unwrap() >= 1, "doca_sha_cap_get_max_list_buf_num_elem");
    assert_eq!(Algorithm::from_raw(3), None, "no fourth algorithm");
}

#[test]
fn doca_sha_task_hash_set_conf_and_doca_sha_task_partial_hash_set_conf() {
    let d = dev();
    let sha = Sha::create(&d).unwrap();
    let max = caps::max_num_tasks(d.as_devinfo()).unwrap();
    let too_many = (u32::BITS - max.leading_zeros()) as u8; // 2^this > max
    assert_eq!(
        sha.task_hash_set_conf(|_: HashTask, _, _| {}, |_: HashTask, _, _| {}, too_many),
        Err(Error::InvalidValue)
    );
    assert_eq!(
        sha.task_partial_hash_set_conf(
            |_: PartialHashTask, _, _| {},
            |_: PartialHashTask, _, _| {},
            too_many
        ),
        Err(Error::InvalidValue)
    );
    let (_pe, sha) = running(&d);
    assert_eq!(
        sha.task_hash_set_conf(|_: HashTask, _, _| {}, |_: HashTask, _, _| {}, 1),
        Err(Error::BadState)
    );
}

#[test]
fn doca_sha_task_hash_alloc_init_and_its_accessors() {
    let d = dev();
    let (_pe, sha) = running(&d);
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![1u8; 8192]).unwrap();
    map.add_dev(&d).unwrap();
    map.start().unwrap();
    let inv = Inventory::create(4).unwrap();
    inv.start().unwrap();
    let (src, dst) = (inv.buf_get_data_at(&map, 0, 64).unwrap(), inv.buf_get_at(&map, 4096, 64).unwrap());
    let t = sha.task_hash_alloc_init(Algorithm::Sha256, Some(&src), None, Data::from_u64(3)).unwrap();
    assert_eq!(t.algorithm(), Algorithm::Sha256, "doca_sha_task_hash_get_algorithm");
    assert_eq!(t.src().as_ref(), Some(&src));
    assert!(t.dst().is_none());
    t.set_dst(Some(&dst));
    t.set_algorithm(Algorithm::Sha512);
    assert_eq!((t.dst().as_ref(), t.algorithm()), (Some(&dst), Algorithm::Sha512));
    assert_eq!(t.user_data().as_u64(), 3, "doca_sha_task_hash_as_task");
    t.free();
}

#[test]
fn doca_sha_task_partial_hash_alloc_init_and_its_session_flags() {
    let d = dev();
    let (_pe, sha) = running(&d);
    let t = sha.task_partial_hash_alloc_init(Algorithm::Sha1, None, None, Data::NONE).unwrap();
    // log_num_tasks 1: two tasks, then none.
    let _second = sha.task_partial_hash_alloc_init(Algorithm::Sha1, None, None, Data::NONE).unwrap();
    assert_eq!(
        sha.task_partial_hash_alloc_init(Algorithm::Sha1, None, None, Data::NONE).err(),
        Some(Error::NoMemory)
    );
    assert!(!t.is_final() && !t.has_result(), "a new session");
    t.set_is_final();
    assert!(t.is_final(), "doca_sha_task_partial_hash_set_is_final_buf");
    assert_eq!(t.set_algorithm(Algorithm::Sha256), Ok(()), "before any segment");
    assert_eq!(t.algorithm(), Algorithm::Sha256);
    t.reset();
    assert!(!t.is_final() && !t.has_result(), "doca_sha_task_partial_hash_reset");
    assert_eq!(t.algorithm(), Algorithm::Sha256, "the algorithm stays");
    t.free();
}
