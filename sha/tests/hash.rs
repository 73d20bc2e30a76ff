//! SHA hash and partial-hash tasks from progress: digests compared with the system's
//! `sha1sum`/`sha256sum`/`sha512sum`, partial sessions against one-shot hashes, DOCA's rules
//! (segment multiple of the block, destination room), a failure fatal to its context as on
//! DOCA's engine (pe_task_error), a stop inside a completion, and a
//! file hashed in segments as DOCA's file_integrity application does.

use std::cell::RefCell;
use std::io::Write;
use std::path::Path;
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe, Topology};
use doca_mmap::{AccessFlags, Mmap};
use doca_sha::{caps, Algorithm, HashTask, PartialHashTask, Sha, FLUSH_STATUS};

const ALL: [Algorithm; 3] = [Algorithm::Sha1, Algorithm::Sha256, Algorithm::Sha512];

/// The hex digest the coreutils tool for `alg` prints for `path`.
fn coreutils(alg: Algorithm, path: &Path) -> String {
    let tool = match alg {
        Algorithm::Sha1 => "sha1sum",
        Algorithm::Sha256 => "sha256sum",
        Algorithm::Sha512 => "sha512sum",
    };
    let out = std::process::Command::new(tool).arg(path).output().expect("coreutils sha*sum runs");
    assert!(out.status.success(), "{tool} failed");
    String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap().to_string()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `data` in a file of its own (removed when the guard drops).
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(tag: &str, data: &[u8]) -> TempFile {
        let p = std::env::temp_dir().join(format!("doca-sha-{}-{tag}", std::process::id()));
        std::fs::File::create(&p).unwrap().write_all(data).unwrap();
        TempFile(p)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Pseudo-random bytes (deterministic).
fn bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
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

/// What the callbacks saw: (task user data, status, destination data).
type Seen = Rc<RefCell<Vec<(u64, Result<(), Error>, Vec<u8>)>>>;

fn dst_data(dst: Option<Buf>) -> Vec<u8> {
    dst.map_or(Vec::new(), |d| d.data_to_vec().unwrap())
}

fn record_hash(seen: &Seen) -> impl FnMut(HashTask, Data, Data) + 'static {
    let seen = seen.clone();
    move |t: HashTask, td: Data, _| seen.borrow_mut().push((td.as_u64(), t.status(), dst_data(t.dst())))
}

/// Partial tasks are kept (not freed) so that the test resubmits them.
type Kept = Rc<RefCell<Vec<PartialHashTask>>>;

fn record_partial(seen: &Seen, kept: &Kept) -> impl FnMut(PartialHashTask, Data, Data) + 'static {
    let (seen, kept) = (seen.clone(), kept.clone());
    move |t: PartialHashTask, td: Data, _| {
        seen.borrow_mut().push((td.as_u64(), t.status(), dst_data(t.dst())));
        kept.borrow_mut().push(t);
    }
}

struct Setup {
    pe: Pe,
    sha: Sha,
    dev: Dev,
    inv: Inventory,
    seen: Seen,
    kept: Kept,
}

fn setup() -> Setup {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let sha = Sha::create(&dev).unwrap();
    pe.connect_ctx(&sha.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    let kept: Kept = Rc::default();
    sha.task_hash_set_conf(record_hash(&seen), record_hash(&seen), 4).unwrap();
    sha.task_partial_hash_set_conf(record_partial(&seen, &kept), record_partial(&seen, &kept), 2).unwrap();
    sha.as_ctx().start().unwrap();
    let inv = Inventory::create(64).unwrap();
    inv.start().unwrap();
    Setup { pe, sha, dev, inv, seen, kept }
}

/// Progress until `done` (bounded: the engine always moves a task forward).
fn run(pe: &Pe, done: impl Fn() -> bool) {
    for _ in 0..100_000 {
        if done() {
            return;
        }
        pe.progress();
    }
    panic!("the engine did not finish");
}

/// A destination of `room` bytes with no data, in a map of its own.
fn dst(s: &Setup, room: usize) -> (Mmap, Buf) {
    let m = map(&s.dev, vec![0; room]);
    let b = s.inv.buf_get_at(&m, 0, room).unwrap();
    (m, b)
}

/// Submits the partial task `t` with source `src`, final when `last`, and waits for it.
fn segment(s: &Setup, t: PartialHashTask, src: &Buf, last: bool) -> PartialHashTask {
    t.set_src(Some(src));
    if last {
        t.set_is_final();
    }
    let before = s.seen.borrow().len();
    t.submit().map_err(|r| r.error).unwrap();
    run(&s.pe, || s.seen.borrow().len() > before);
    s.kept.borrow_mut().pop().unwrap()
}

#[test]
fn a_hash_task_gives_what_coreutils_prints_for_every_algorithm() {
    let s = setup();
    for (i, len) in [0usize, 3, 64, 1000, 3 << 20].into_iter().enumerate() {
        let data = bytes(len, i as u64);
        let file = TempFile::new(&format!("oneshot{i}"), &data);
        let m = map(&s.dev, if len == 0 { vec![0; 1] } else { data.clone() });
        let src = s.inv.buf_get_data_at(&m, 0, len).unwrap();
        for alg in ALL {
            let (_dm, d) = dst(&s, 64);
            let t =
                s.sha.task_hash_alloc_init(alg, Some(&src), Some(&d), Data::from_u64(len as u64)).unwrap();
            assert_eq!(t.algorithm(), alg);
            t.submit().map_err(|r| r.error).unwrap();
            assert!(s.seen.borrow().is_empty(), "submit returns at once; the hash comes from progress");
            run(&s.pe, || !s.seen.borrow().is_empty());
            let (ud, status, out) = s.seen.borrow_mut().pop().unwrap();
            assert_eq!((ud, status), (len as u64, Ok(())));
            assert_eq!(out.len(), alg.digest_len(), "the data length grew by the digest length");
            assert_eq!(hex(&out), coreutils(alg, &file.0), "{} of {len} bytes", alg.name());
        }
    }
}

#[test]
fn the_digest_lands_after_the_destination_data() {
    let s = setup();
    let m = map(&s.dev, b"abc".to_vec());
    let file = TempFile::new("after", b"abc");
    let src = s.inv.buf_get_data_at(&m, 0, 3).unwrap();
    let dm = map(&s.dev, vec![0; 128]);
    dm.access().unwrap().write(0, b"HDR").unwrap();
    let d2 = s.inv.buf_get_by_offsets(&dm, 0, 128, 0, 3).unwrap(); // data "HDR", room 125
    s.sha
        .task_hash_alloc_init(Algorithm::Sha256, Some(&src), Some(&d2), Data::NONE)
        .unwrap()
        .submit()
        .ok()
        .unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    let out = d2.data_to_vec().unwrap();
    assert_eq!(&out[..3], b"HDR");
    assert_eq!(hex(&out[3..]), coreutils(Algorithm::Sha256, &file.0));
}

#[test]
fn a_source_list_hashes_as_its_elements_in_order() {
    let s = setup();
    let data = bytes(5000, 9);
    let file = TempFile::new("list", &data);
    let m = map(&s.dev, data.clone());
    let a = s.inv.buf_get_data_at(&m, 0, 1234).unwrap();
    let b = s.inv.buf_get_data_at(&m, 1234, 3000).unwrap();
    let c = s.inv.buf_get_data_at(&m, 4234, 766).unwrap();
    a.chain_list(&b).unwrap();
    a.chain_list(&c).unwrap();
    let (_dm, d) = dst(&s, 32);
    s.sha
        .task_hash_alloc_init(Algorithm::Sha256, Some(&a), Some(&d), Data::NONE)
        .unwrap()
        .submit()
        .ok()
        .unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    assert_eq!(hex(&d.data_to_vec().unwrap()), coreutils(Algorithm::Sha256, &file.0));
}

#[test]
fn partial_hash_over_segments_equals_the_one_shot_hash() {
    let s = setup();
    for alg in ALL {
        let block = caps::partial_hash_block_size(s.dev.as_devinfo(), alg).unwrap() as usize;
        assert_eq!(block, alg.block_len());
        // Segments of 1, 3 and 2 blocks, then a final one of an odd length.
        let lens = [block, 3 * block, 2 * block, 77];
        let total: usize = lens.iter().sum();
        let data = bytes(total, alg as u64 + 1);
        let file = TempFile::new(&format!("partial{}", alg as u32), &data);
        let m = map(&s.dev, data);
        let (_dm, d) = dst(&s, caps::min_dst_buf_size(s.dev.as_devinfo(), alg).unwrap() as usize);
        let mut t = s.sha.task_partial_hash_alloc_init(alg, None, Some(&d), Data::from_u64(7)).unwrap();
        let mut off = 0;
        for (i, &len) in lens.iter().enumerate() {
            let last = i == lens.len() - 1;
            let src = s.inv.buf_get_data_at(&m, off, len).unwrap();
            off += len;
            t = segment(&s, t, &src, last);
            let (ud, status, out) = s.seen.borrow_mut().pop().unwrap();
            assert_eq!((ud, status), (7, Ok(())));
            assert_eq!(t.has_result(), last);
            if !last {
                assert!(out.is_empty(), "no digest before the final segment");
                assert_eq!(t.set_algorithm(Algorithm::Sha1), Err(Error::BadState), "fixed during a session");
            } else {
                assert_eq!(hex(&out), coreutils(alg, &file.0), "{}", alg.name());
            }
        }
        // Submitting again after the final segment: BAD_STATE until reset (a failure: the
        // context stops, and starts again for the next algorithm).
        let src = s.inv.buf_get_data_at(&m, 0, block).unwrap();
        t = segment(&s, t, &src, false);
        assert_eq!(s.seen.borrow_mut().pop().unwrap().1, Err(Error::BadState));
        t.reset();
        assert!(!t.has_result() && !t.is_final());
        t.free();
        restart(&s);
    }
}

/// After a failure (fatal to the context, as on DOCA's engine), the context reaches Idle once
/// the failed task and those flushed are freed (the partial tasks the callbacks keep are
/// dropped here), and starts again.
fn restart(s: &Setup) {
    assert_ne!(s.sha.as_ctx().state(), CtxState::Running, "the failure stopped the context");
    s.kept.borrow_mut().clear();
    run(&s.pe, || s.sha.as_ctx().state() == CtxState::Idle);
    s.sha.as_ctx().start().unwrap();
}

#[test]
fn a_segment_try_submit_refuses_leaves_the_session_as_it_was() {
    let s = setup();
    let data = bytes(64 * 3 + 10, 3);
    let file = TempFile::new("badseg", &data);
    let m = map(&s.dev, data);
    let (_dm, d) = dst(&s, 32);
    let mut t = s.sha.task_partial_hash_alloc_init(Algorithm::Sha256, None, Some(&d), Data::NONE).unwrap();
    t = segment(&s, t, &s.inv.buf_get_data_at(&m, 0, 64).unwrap(), false);
    assert_eq!(s.seen.borrow_mut().pop().unwrap().1, Ok(()));
    // 100 bytes, not final: refused by try_submit, and the task comes back unchanged.
    let bad = s.inv.buf_get_data_at(&m, 64, 100).unwrap();
    t.set_src(Some(&bad));
    let r = t.try_submit().unwrap_err();
    assert_eq!(r.error, Error::InvalidValue);
    assert_eq!(s.sha.as_ctx().state(), CtxState::Running, "a refusal is no failure");
    // The session goes on from the first segment.
    t = segment(&s, r.value, &s.inv.buf_get_data_at(&m, 64, 128).unwrap(), false);
    assert_eq!(s.seen.borrow_mut().pop().unwrap().1, Ok(()));
    t = segment(&s, t, &s.inv.buf_get_data_at(&m, 192, 10).unwrap(), true);
    let (_, status, out) = s.seen.borrow_mut().pop().unwrap();
    assert_eq!(status, Ok(()));
    assert_eq!(hex(&out), coreutils(Algorithm::Sha256, &file.0));
    drop(t);
}

/// The same bad segment through submit: the engine fails it (INVALID_VALUE) and the failure
/// is fatal to the context, which holds in Stopping while the application keeps the task;
/// freed, the context reaches Idle, and the session is over: after a restart a new task
/// hashes the data from its start.
#[test]
fn a_segment_failing_in_the_engine_stops_the_context_and_ends_the_session() {
    let s = setup();
    let data = bytes(64 * 3 + 10, 3);
    let file = TempFile::new("badseg2", &data);
    let m = map(&s.dev, data);
    let (_dm, d) = dst(&s, 32);
    let mut t = s.sha.task_partial_hash_alloc_init(Algorithm::Sha256, None, Some(&d), Data::NONE).unwrap();
    t = segment(&s, t, &s.inv.buf_get_data_at(&m, 0, 64).unwrap(), false);
    assert_eq!(s.seen.borrow_mut().pop().unwrap().1, Ok(()));
    t = segment(&s, t, &s.inv.buf_get_data_at(&m, 64, 100).unwrap(), false);
    assert_eq!(s.seen.borrow_mut().pop().unwrap().1, Err(Error::InvalidValue));
    s.pe.progress();
    assert_eq!(s.sha.as_ctx().state(), CtxState::Stopping, "held by the task the application keeps");
    drop(t);
    restart(&s);
    let mut t = s.sha.task_partial_hash_alloc_init(Algorithm::Sha256, None, Some(&d), Data::NONE).unwrap();
    t = segment(&s, t, &s.inv.buf_get_data_at(&m, 0, 192).unwrap(), false);
    t = segment(&s, t, &s.inv.buf_get_data_at(&m, 192, 10).unwrap(), true);
    let (_, status, out) = s.seen.borrow_mut().pop().unwrap();
    assert_eq!(status, Ok(()));
    assert_eq!(hex(&out), coreutils(Algorithm::Sha256, &file.0));
    drop(t);
}

/// pe_task_error's shape with hash tasks: a good task, a bad one (no destination), two good
/// ones, submitted together. The bad one fails with its status and, as on DOCA's engine, the
/// failure is fatal to the context: it moves to Stopping, the tasks still queued complete
/// with SHUTDOWN, and the context reaches Idle once the callbacks freed them.
#[test]
fn a_failing_task_completes_with_its_status_and_stops_its_context() {
    let s = setup();
    let states: Rc<RefCell<Vec<CtxState>>> = Rc::default();
    let st = states.clone();
    s.sha.as_ctx().set_state_changed_cb(move |_, _, _, next| st.borrow_mut().push(next)).unwrap();
    let m = map(&s.dev, b"abc".to_vec());
    let src = s.inv.buf_get_data_at(&m, 0, 3).unwrap();
    let dsts: Vec<_> = (0..4).map(|_| dst(&s, 32)).collect();
    for (i, (_, d)) in dsts.iter().enumerate() {
        let d = (i != 1).then_some(d);
        s.sha
            .task_hash_alloc_init(Algorithm::Sha256, Some(&src), d, Data::from_u64(i as u64))
            .unwrap()
            .submit()
            .ok()
            .unwrap();
    }
    run(&s.pe, || s.sha.as_ctx().state() == CtxState::Idle);
    let seen: Vec<_> = s.seen.borrow().iter().map(|(td, st, _)| (*td, *st)).collect();
    assert_eq!(
        seen,
        [(0, Ok(())), (1, Err(Error::InvalidValue)), (2, Err(FLUSH_STATUS)), (3, Err(FLUSH_STATUS))]
    );
    // (The start's own transition, still pending when the callback was set, comes first.)
    assert_eq!(*states.borrow(), [CtxState::Running, CtxState::Stopping, CtxState::Idle]);
    assert!(dsts[2].1.data_to_vec().unwrap().is_empty(), "a flushed task wrote nothing");
}

#[test]
fn a_destination_below_the_digest_length_is_refused() {
    let s = setup();
    let m = map(&s.dev, b"abc".to_vec());
    let src = s.inv.buf_get_data_at(&m, 0, 3).unwrap();
    for alg in ALL {
        let min = caps::min_dst_buf_size(s.dev.as_devinfo(), alg).unwrap() as usize;
        assert_eq!(min, alg.digest_len());
        let (_dm, d) = dst(&s, min - 1);
        let t = s.sha.task_hash_alloc_init(alg, Some(&src), Some(&d), Data::NONE).unwrap();
        let r = t.try_submit().unwrap_err();
        assert_eq!(r.error, Error::InvalidValue, "try_submit validates");
        r.value.submit().ok().unwrap();
        run(&s.pe, || !s.seen.borrow().is_empty());
        let (_, status, out) = s.seen.borrow_mut().pop().unwrap();
        assert_eq!(status, Err(Error::InvalidValue), "submit does not validate: the error callback does");
        assert!(out.is_empty(), "nothing written");
        restart(&s);
    }
    // No source, no destination.
    let t = s.sha.task_hash_alloc_init(Algorithm::Sha1, None, None, Data::NONE).unwrap();
    assert_eq!(t.try_submit().unwrap_err().error, Error::InvalidValue);
}

#[test]
fn a_map_not_added_to_the_device_is_not_permitted() {
    let s = setup();
    let m = Mmap::create().unwrap();
    m.set_memrange(vec![1; 64]).unwrap();
    m.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    m.start().unwrap();
    let src = s.inv.buf_get_data_at(&m, 0, 64).unwrap();
    let (_dm, d) = dst(&s, 64);
    s.sha
        .task_hash_alloc_init(Algorithm::Sha512, Some(&src), Some(&d), Data::NONE)
        .unwrap()
        .submit()
        .ok()
        .unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    assert_eq!(s.seen.borrow()[0].1, Err(Error::NotPermitted));
    restart(&s);
}

#[test]
fn stop_inside_a_completion_flushes_the_rest_and_reaches_idle() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let sha = Sha::create(&dev).unwrap();
    pe.connect_ctx(&sha.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    let ctx = sha.as_ctx();
    let (seen_ok, ctx2) = (seen.clone(), ctx.clone());
    sha.task_hash_set_conf(
        move |t, td, _| {
            seen_ok.borrow_mut().push((td.as_u64(), t.status(), Vec::new()));
            drop(t);
            if td.as_u64() == 0 {
                assert_eq!(ctx2.stop(), Err(Error::InProgress), "tasks are still in flight");
            }
        },
        record_hash(&seen),
        3,
    )
    .unwrap();
    ctx.start().unwrap();
    let inv = Inventory::create(16).unwrap();
    inv.start().unwrap();
    let m = map(&dev, vec![1; 5 << 20]);
    // Task 0 is small; tasks 1..4 are 1 MiB each (beyond the first pass's budget).
    let mut off = 0;
    for i in 0..4u64 {
        let len = if i == 0 { 64 } else { 1 << 20 };
        let src = inv.buf_get_data_at(&m, off, len).unwrap();
        let d = inv.buf_get_at(&m, (4 << 20) + 64 * i as usize, 64).unwrap();
        off += len;
        sha.task_hash_alloc_init(Algorithm::Sha256, Some(&src), Some(&d), Data::from_u64(i))
            .unwrap()
            .submit()
            .ok()
            .unwrap();
    }
    run(&pe, || ctx.state() == CtxState::Idle);
    let seen = seen.borrow();
    assert_eq!(seen[0].1, Ok(()));
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(seen[1..].iter().any(|e| e.1 == Err(FLUSH_STATUS)), "{seen:?}");
    assert!(seen[1..].iter().all(|e| e.1 == Ok(()) || e.1 == Err(FLUSH_STATUS)));
}

/// DOCA's file_integrity application: the file is read into memory and hashed in segments
/// of a whole number of blocks with one partial-hash task, the last segment final; here the
/// file is bigger than a pass's budget, so segments take several passes.
#[test]
fn a_file_hashed_in_segments_like_file_integrity_matches_sha256sum() {
    let s = setup();
    let data = bytes((5 << 20) / 2 + 333, 42);
    let file = TempFile::new("file_integrity", &data);
    let contents = std::fs::read(&file.0).unwrap();
    let len = contents.len();
    let m = map(&s.dev, contents);
    let info = s.dev.as_devinfo();
    caps::task_partial_hash_is_supported(info, Algorithm::Sha256).unwrap();
    let block = caps::partial_hash_block_size(info, Algorithm::Sha256).unwrap() as usize;
    let max_src = caps::max_src_buf_size(info).unwrap() as usize;
    let seg = (block * 20_000).min(max_src / block * block); // 1.28 MB: not a pass's size
    let (_dm, d) = dst(&s, caps::min_dst_buf_size(info, Algorithm::Sha256).unwrap() as usize);
    let mut t = s.sha.task_partial_hash_alloc_init(Algorithm::Sha256, None, Some(&d), Data::NONE).unwrap();
    let mut off = 0;
    let mut segments = 0;
    while off < len {
        let n = seg.min(len - off);
        let last = off + n == len;
        t = segment(&s, t, &s.inv.buf_get_data_at(&m, off, n).unwrap(), last);
        assert_eq!(s.seen.borrow_mut().pop().unwrap().1, Ok(()));
        off += n;
        segments += 1;
    }
    assert!(segments >= 3);
    assert!(t.has_result());
    assert_eq!(hex(&d.data_to_vec().unwrap()), coreutils(Algorithm::Sha256, &file.0));
}

#[test]
fn the_topology_takes_algorithms_and_task_types_away() {
    let topo =
        Topology::parse("t", "device b1:00.0 host\ncap sha.algorithms 2\ncap sha.partial_hash 0\n").unwrap();
    let info = &topo.devinfo_list().unwrap()[0];
    assert_eq!(caps::task_hash_is_supported(info, Algorithm::Sha256), Ok(()));
    assert_eq!(caps::task_hash_is_supported(info, Algorithm::Sha1), Err(Error::NotSupported));
    assert_eq!(caps::task_partial_hash_is_supported(info, Algorithm::Sha256), Err(Error::NotSupported));
    assert_eq!(caps::min_dst_buf_size(info, Algorithm::Sha512), Err(Error::NotSupported));
    let none = Topology::parse("t", "device b1:00.0 host\ncap sha.algorithms 0\n").unwrap();
    assert_eq!(caps::max_src_buf_size(&none.devinfo_list().unwrap()[0]), Err(Error::NotSupported));
    let typo = Topology::parse("t", "device b1:00.0 host\ncap sha.algoritms 2\n").unwrap();
    assert!(
        caps::max_list_buf_num_elem(&typo.devinfo_list().unwrap()[0]).is_err(),
        "a misspelt name is an error"
    );
}

/// DOCA's sha_partial_create sample: one partial-hash task over one source buffer whose data
/// is moved block by block; the completion callback moves it and submits the same task
/// again (final for the last piece), and after the final one frees the task and stops the
/// context; the loop runs until the state callback sees Idle.
#[test]
fn sha_partial_create_resubmits_from_its_completion_callback() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let sha = Sha::create(&dev).unwrap();
    pe.connect_ctx(&sha.as_ctx()).unwrap();
    let inv = Inventory::create(4).unwrap();
    inv.start().unwrap();
    let text = b"1111111122222222333333334444444455555555666666667777777788888888999999990000000011111111";
    let file = TempFile::new("sample", text);
    let m = map(&dev, text.to_vec());
    let info = dev.as_devinfo();
    let block = caps::partial_hash_block_size(info, Algorithm::Sha256).unwrap() as usize;
    let src = inv.buf_get_data_at(&m, 0, text.len()).unwrap();
    let (_dm, dst) = {
        let dm = map(&dev, vec![0; caps::min_dst_buf_size(info, Algorithm::Sha256).unwrap() as usize]);
        let b = inv.buf_get_at(&dm, 0, 32).unwrap();
        (dm, b)
    };
    // (offset of the next piece, bytes left)
    let cursor = Rc::new(std::cell::Cell::new((0usize, text.len())));
    let errors: Seen = Rc::default();
    let ctx = sha.as_ctx();
    let (base, _) = m.memrange().unwrap();
    let (cur, src2, ctx2) = (cursor.clone(), src.clone(), ctx.clone());
    let next_piece = move |t: &PartialHashTask, cur: &std::cell::Cell<(usize, usize)>| {
        let (off, left) = cur.get();
        let n = left.min(block);
        src2.set_data(base + off, n).unwrap();
        t.set_src(Some(&src2));
        if n == left {
            t.set_is_final();
        }
        cur.set((off + n, left - n));
    };
    let next2 = next_piece.clone();
    sha.task_partial_hash_set_conf(
        move |t: PartialHashTask, _, _| {
            if cur.get().1 == 0 {
                assert!(t.has_result());
                t.free();
                let _ = ctx2.stop();
            } else {
                next2(&t, &cur);
                t.submit().map_err(|r| r.error).unwrap();
            }
        },
        record_partial_status(&errors),
        0,
    )
    .unwrap();
    let idle = Rc::new(std::cell::Cell::new(false));
    let idle2 = idle.clone();
    ctx.set_state_changed_cb(move |_, _, _, next| idle2.set(next == CtxState::Idle)).unwrap();
    ctx.start().unwrap();
    let t = sha.task_partial_hash_alloc_init(Algorithm::Sha256, Some(&src), Some(&dst), Data::NONE).unwrap();
    next_piece(&t, &cursor);
    t.submit().map_err(|r| r.error).unwrap();
    run(&pe, || idle.get());
    assert!(errors.borrow().is_empty(), "{:?}", errors.borrow());
    assert_eq!(cursor.get(), (text.len(), 0));
    assert_eq!(hex(&dst.data_to_vec().unwrap()), coreutils(Algorithm::Sha256, &file.0));
}

fn record_partial_status(seen: &Seen) -> impl FnMut(PartialHashTask, Data, Data) + 'static {
    let seen = seen.clone();
    move |t: PartialHashTask, td: Data, _| seen.borrow_mut().push((td.as_u64(), t.status(), Vec::new()))
}

/// The engine's budget: a pass hashes at most `sha.bytes_per_pass` bytes (1 MiB by default),
/// so a 3 MiB source completes on the third pass at the earliest, and the digest is still
/// the one-shot one.
#[test]
fn a_large_source_is_spread_over_passes() {
    let s = setup();
    let per_pass = caps::bytes_per_pass(s.dev.as_devinfo()).unwrap();
    assert_eq!(per_pass, 1 << 20);
    let data = bytes(3 * per_pass, 5);
    let file = TempFile::new("passes", &data);
    let m = map(&s.dev, data);
    let src = s.inv.buf_get_data_at(&m, 0, 3 * per_pass).unwrap();
    let (_dm, d) = dst(&s, 32);
    s.sha
        .task_hash_alloc_init(Algorithm::Sha256, Some(&src), Some(&d), Data::NONE)
        .unwrap()
        .submit()
        .ok()
        .unwrap();
    let mut passes = 0;
    while s.seen.borrow().is_empty() {
        assert!(s.pe.progress(), "a waiting task is work for every pass");
        passes += 1;
        assert!(passes < 1000, "the engine did not finish");
    }
    assert!(passes >= 3, "3 MiB at 1 MiB per pass: {passes} passes");
    assert_eq!(hex(&d.data_to_vec().unwrap()), coreutils(Algorithm::Sha256, &file.0));
}
