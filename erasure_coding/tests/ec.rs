//! Erasure coding tasks from progress: every missing-block pattern recovered byte for byte
//! (Cauchy and Vandermonde), update against a fresh encode, Galois multiplication against the
//! matrix applied in memory, blocks spanning the elements of buffer lists, a task spread over
//! passes, and each documented failure with its status (fatal to the context, as on DOCA's
//! engine).

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe, Topology};
use doca_erasure_coding::{
    caps, CreateTask, Ec, GaloisMulTask, Matrix, MatrixType, RecoverTask, UpdateTask, FLUSH_STATUS,
};
use doca_mmap::{AccessFlags, Mmap};

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

fn map_with(dev: &Dev, data: Vec<u8>, perm: AccessFlags) -> Mmap {
    let m = Mmap::create().unwrap();
    m.set_memrange(data).unwrap();
    m.set_permissions(perm).unwrap();
    m.add_dev(dev).unwrap();
    m.start().unwrap();
    m
}

fn map(dev: &Dev, data: Vec<u8>) -> Mmap {
    map_with(dev, data, AccessFlags::LOCAL_READ_WRITE)
}

/// What the callbacks saw: (task type, user data, status), and the states entered.
#[derive(Default)]
struct Log {
    tasks: Vec<(&'static str, u64, Result<(), Error>)>,
    states: Vec<CtxState>,
}

struct Setup {
    pe: Pe,
    ec: Ec,
    dev: Dev,
    inv: Inventory,
    log: Rc<RefCell<Log>>,
}

fn setup_on(dev: Dev) -> Setup {
    let pe = Pe::create().unwrap();
    let ec = Ec::create(&dev).unwrap();
    pe.connect_ctx(&ec.as_ctx()).unwrap();
    let log: Rc<RefCell<Log>> = Rc::default();
    macro_rules! conf {
        ($set:ident, $t:ty, $name:literal) => {{
            let l = log.clone();
            let cb = move |t: $t, td: Data, _| l.borrow_mut().tasks.push(($name, td.as_u64(), t.status()));
            ec.$set(cb.clone(), cb, 8).unwrap();
        }};
    }
    conf!(task_create_set_conf, CreateTask, "create");
    conf!(task_update_set_conf, UpdateTask, "update");
    conf!(task_recover_set_conf, RecoverTask, "recover");
    conf!(task_galois_mul_set_conf, GaloisMulTask, "galois_mul");
    let l = log.clone();
    ec.as_ctx().set_state_changed_cb(move |_, _, _, next| l.borrow_mut().states.push(next)).unwrap();
    ec.as_ctx().start().unwrap();
    let inv = Inventory::create(256).unwrap();
    inv.start().unwrap();
    Setup { pe, ec, dev, inv, log }
}

fn setup() -> Setup {
    setup_on(open_device_with_pci("03:00.0", None).unwrap())
}

impl Setup {
    /// Progresses until `n` tasks completed in all.
    fn run(&self, n: usize) {
        let mut passes = 0;
        while self.log.borrow().tasks.len() < n {
            self.pe.progress();
            passes += 1;
            assert!(passes < 100_000, "tasks did not complete: {:?}", self.log.borrow().tasks);
        }
    }

    /// Progresses until the context is Idle.
    fn run_to_idle(&self) {
        let mut passes = 0;
        while self.ec.as_ctx().state() != CtxState::Idle {
            self.pe.progress();
            passes += 1;
            assert!(passes < 100_000, "the context did not reach Idle");
        }
    }

    /// The last status seen.
    fn last(&self) -> Result<(), Error> {
        self.log.borrow().tasks.last().unwrap().2
    }

    /// A source holding `data` and a destination with `room` bytes, each in a map of its own.
    fn bufs(&self, data: Vec<u8>, room: usize) -> (Buf, Buf, Mmap, Mmap) {
        let len = data.len();
        let sm = map(&self.dev, data);
        let dm = map(&self.dev, vec![0; room]);
        let s = self.inv.buf_get_data_at(&sm, 0, len).unwrap();
        let d = self.inv.buf_get_at(&dm, 0, room).unwrap();
        (s, d, sm, dm)
    }
}

/// Encodes `data` (k blocks) with `coding` through a create task: the redundancy blocks.
fn encode(s: &Setup, coding: &Matrix, data: &[u8]) -> Vec<u8> {
    let m = coding.rdnc_block_count();
    let block = data.len() / coding.data_block_count();
    let (src, dst, _sm, _dm) = s.bufs(data.to_vec(), m * block);
    let n = s.log.borrow().tasks.len();
    s.ec.task_create_alloc_init(Some(coding), Some(&src), Some(&dst), Data::from_u64(1))
        .unwrap()
        .submit()
        .unwrap();
    s.run(n + 1);
    assert_eq!(s.last(), Ok(()));
    let out = dst.data_to_vec().unwrap();
    assert_eq!(out.len(), m * block, "the destination's data length grew by the output");
    out
}

/// Every pattern of up to `m` missing blocks among `k + m`, recovered by a recover task:
/// the recovered blocks equal the lost ones. Returns the patterns the matrix could not
/// recover (a singular sub-matrix).
fn round_trip_all(kind: MatrixType, k: usize, m: usize, block: usize) -> usize {
    let s = setup();
    let coding = s.ec.matrix_create(kind, k, m).unwrap();
    let data = bytes(k * block, k as u64 * 31 + m as u64);
    let rdnc = encode(&s, &coding, &data);
    let all: Vec<&[u8]> = data.chunks(block).chain(rdnc.chunks(block)).collect();
    let mut singular = 0;
    for mask in 1u32..(1 << (k + m)) {
        if mask.count_ones() as usize > m {
            continue;
        }
        let missing: Vec<u32> = (0..(k + m) as u32).filter(|i| mask & (1 << i) != 0).collect();
        let rec = match s.ec.matrix_create_recover(&coding, &missing) {
            Ok(r) => r,
            Err(e) => {
                assert_eq!(e, Error::InvalidValue);
                assert_eq!(kind, MatrixType::Vandermonde, "Cauchy recovers every pattern ({missing:?})");
                singular += 1;
                continue;
            }
        };
        let avail: Vec<u8> =
            (0..k + m).filter(|t| mask & (1 << t) == 0).take(k).flat_map(|t| all[t].to_vec()).collect();
        let (src, dst, _sm, _dm) = s.bufs(avail, missing.len() * block);
        let n = s.log.borrow().tasks.len();
        s.ec.task_recover_alloc_init(Some(&rec), Some(&src), Some(&dst), Data::from_u64(2))
            .unwrap()
            .submit()
            .unwrap();
        s.run(n + 1);
        assert_eq!(s.last(), Ok(()), "{missing:?}");
        let want: Vec<u8> = missing.iter().flat_map(|&t| all[t as usize].to_vec()).collect();
        assert!(dst.data_to_vec().unwrap() == want, "{kind:?} {k}+{m}: missing {missing:?} recovered wrong");
        // Back to the inventory: a big code tries hundreds of patterns.
        src.dec_refcount().unwrap();
        dst.dec_refcount().unwrap();
    }
    singular
}

#[test]
fn cauchy_recovers_every_pattern_of_missing_blocks() {
    assert_eq!(round_trip_all(MatrixType::Cauchy, 4, 3, 128), 0);
    assert_eq!(round_trip_all(MatrixType::Cauchy, 2, 1, 64), 0);
    assert_eq!(round_trip_all(MatrixType::Cauchy, 6, 4, 64), 0);
}

#[test]
fn vandermonde_recovers_every_pattern_it_can_and_refuses_the_rest() {
    // Small codes: every square sub-matrix of (i+1)^j happens to be invertible.
    assert_eq!(round_trip_all(MatrixType::Vandermonde, 4, 3, 128), 0);
    assert_eq!(round_trip_all(MatrixType::Vandermonde, 2, 2, 64), 0);
    // A larger one has singular patterns, refused with INVALID_VALUE (the header's warning).
    // 8 of the 793 patterns of 1 to 4 lost blocks (each loses data and parity both).
    assert_eq!(round_trip_all(MatrixType::Vandermonde, 8, 4, 64), 8);
}

#[test]
fn create_writes_the_matrix_product_known_answer() {
    let s = setup();
    // Cauchy 2+1: rdnc = 0x8E * d0 + 0xF4 * d1; d0 = 64 x 0x01, d1 = 64 x 0x02:
    // 0x8E ^ (0xF4 * 2 = 0xF5) = 0x7B.
    let coding = s.ec.matrix_create(MatrixType::Cauchy, 2, 1).unwrap();
    let mut data = vec![1u8; 64];
    data.extend(vec![2u8; 64]);
    assert_eq!(encode(&s, &coding, &data), vec![0x7B; 64]);
    // The same through a raw matrix and a Galois multiplication task.
    let raw = s.ec.matrix_create_from_raw(&[0x8E, 0xF4], 2, 1).unwrap();
    let (src, dst, _sm, _dm) = s.bufs(data, 64);
    s.ec.task_galois_mul_alloc_init(Some(&raw), Some(&src), Some(&dst), Data::from_u64(9))
        .unwrap()
        .submit()
        .unwrap();
    s.run(2);
    assert_eq!(s.last(), Ok(()));
    assert_eq!(dst.data_to_vec().unwrap(), vec![0x7B; 64]);
}

#[test]
fn galois_mul_equals_the_matrix_applied_in_memory() {
    let s = setup();
    let (k, m, block) = (5, 3, 4096);
    let raw = bytes(k * m, 7);
    let mat = s.ec.matrix_create_from_raw(&raw, k, m).unwrap();
    let data = bytes(k * block, 8);
    let mut want = vec![0u8; m * block];
    {
        let ins: Vec<&[u8]> = data.chunks(block).collect();
        let mut outs: Vec<&mut [u8]> = want.chunks_mut(block).collect();
        mat.apply(&ins, &mut outs).unwrap();
    }
    // By hand, for one byte of each output.
    for j in 0..m {
        let mut acc = 0u8;
        for i in 0..k {
            acc ^= reed_solomon_erasure::galois_8::mul(raw[i * m + j], data[i * block + 5]);
        }
        assert_eq!(want[j * block + 5], acc);
    }
    let (src, dst, _sm, _dm) = s.bufs(data, m * block);
    s.ec.task_galois_mul_alloc_init(Some(&mat), Some(&src), Some(&dst), Data::from_u64(3))
        .unwrap()
        .submit()
        .unwrap();
    s.run(1);
    assert_eq!(s.last(), Ok(()));
    assert!(dst.data_to_vec().unwrap() == want);
}

#[test]
fn update_gives_the_redundancy_of_the_new_data() {
    let s = setup();
    let (k, m, block) = (6, 3, 256);
    let coding = s.ec.matrix_create(MatrixType::Cauchy, k, m).unwrap();
    let old = bytes(k * block, 11);
    let rdnc = encode(&s, &coding, &old);
    let mut new = old.clone();
    let updated = [1u32, 4];
    for (n, &u) in updated.iter().enumerate() {
        new[u as usize * block..(u as usize + 1) * block].copy_from_slice(&bytes(block, 100 + n as u64));
    }
    let upd = s.ec.matrix_create_update(&coding, &updated).unwrap();
    let mut src = Vec::new();
    for &u in &updated {
        src.extend_from_slice(&old[u as usize * block..(u as usize + 1) * block]);
        src.extend_from_slice(&new[u as usize * block..(u as usize + 1) * block]);
    }
    src.extend_from_slice(&rdnc);
    let (sb, db, _sm, _dm) = s.bufs(src, m * block);
    let n = s.log.borrow().tasks.len();
    s.ec.task_update_alloc_init(Some(&upd), Some(&sb), Some(&db), Data::from_u64(4))
        .unwrap()
        .submit()
        .unwrap();
    s.run(n + 1);
    assert_eq!(s.last(), Ok(()));
    assert!(db.data_to_vec().unwrap() == encode(&s, &coding, &new), "update = encode of the new data");
}

/// The 3.3 sample's lists: one buffer cut into elements that do not fall on block
/// boundaries, source and destination.
#[test]
fn blocks_span_the_elements_of_buffer_lists() {
    let s = setup();
    let (k, m, block) = (3, 2, 192);
    let coding = s.ec.matrix_create(MatrixType::Cauchy, k, m).unwrap();
    let data = bytes(k * block, 5);
    let want = encode(&s, &coding, &data);
    let sm = map(&s.dev, data.clone());
    let dm = map(&s.dev, vec![0; m * block]);
    let cut = |mm: &Mmap, total: usize, pieces: usize, with_data: bool| -> Buf {
        let other = total / pieces;
        let first = other + total % pieces;
        let mut at = 0;
        let mut head: Option<Buf> = None;
        for p in 0..pieces {
            let len = if p == 0 { first } else { other };
            let b = if with_data {
                s.inv.buf_get_data_at(mm, at, len).unwrap()
            } else {
                s.inv.buf_get_at(mm, at, len).unwrap()
            };
            match &head {
                None => head = Some(b),
                Some(h) => h.chain_list(&b).unwrap(),
            }
            at += len;
        }
        head.unwrap()
    };
    let src = cut(&sm, k * block, 5, true);
    let dst = cut(&dm, m * block, 7, false);
    let n = s.log.borrow().tasks.len();
    s.ec.task_create_alloc_init(Some(&coding), Some(&src), Some(&dst), Data::from_u64(5))
        .unwrap()
        .submit()
        .unwrap();
    s.run(n + 1);
    assert_eq!(s.last(), Ok(()));
    // Every element is full: its data length grew by its room.
    let mut got = Vec::new();
    let mut cur = Some(dst);
    while let Some(b) = cur {
        assert_eq!(b.tail_room().unwrap(), 0);
        got.extend(b.data_to_vec().unwrap());
        cur = b.next_in_list().unwrap();
    }
    assert!(got == want);
}

#[test]
fn a_large_task_is_spread_over_passes() {
    let s = setup();
    let (k, m, block) = (4, 2, 1 << 20); // 4 MiB of source, 1 MiB a pass
    let coding = s.ec.matrix_create(MatrixType::Cauchy, k, m).unwrap();
    let data = bytes(k * block, 3);
    let (src, dst, _sm, _dm) = s.bufs(data.clone(), m * block);
    s.ec.task_create_alloc_init(Some(&coding), Some(&src), Some(&dst), Data::from_u64(6))
        .unwrap()
        .submit()
        .unwrap();
    let mut passes = 0;
    while s.log.borrow().tasks.is_empty() {
        s.pe.progress();
        passes += 1;
    }
    assert!(passes >= 4, "{passes} passes for 4 MiB at 1 MiB a pass");
    assert_eq!(s.last(), Ok(()));
    let mut want = vec![0u8; m * block];
    let ins: Vec<&[u8]> = data.chunks(block).collect();
    let mut outs: Vec<&mut [u8]> = want.chunks_mut(block).collect();
    coding.apply(&ins, &mut outs).unwrap();
    assert!(dst.data_to_vec().unwrap() == want);
}

/// Submits a create task over `src`/`dst` with `coding` through try_submit (refused with
/// INVALID_VALUE when a check fails) and submit: the error callback's status.
fn failing(s: &Setup, coding: Option<&Matrix>, src: Option<&Buf>, dst: Option<&Buf>) -> Error {
    let t = s.ec.task_create_alloc_init(coding, src, dst, Data::from_u64(77)).unwrap();
    let r = t.try_submit().unwrap_err();
    assert_eq!(r.error, Error::InvalidValue, "try_submit refuses a bad task");
    let n = s.log.borrow().tasks.len();
    r.value.submit().unwrap();
    s.run(n + 1);
    let status = s.last().unwrap_err();
    s.run_to_idle();
    s.ec.as_ctx().start().unwrap();
    status
}

#[test]
fn each_documented_failure_has_its_status_and_is_fatal() {
    let s = setup();
    let coding = s.ec.matrix_create(MatrixType::Cauchy, 2, 1).unwrap();
    let (src, dst, _sm, _dm) = s.bufs(bytes(128, 1), 64);
    assert_eq!(failing(&s, None, Some(&src), Some(&dst)), Error::InvalidValue, "no matrix");
    assert_eq!(failing(&s, Some(&coding), None, Some(&dst)), Error::InvalidValue, "no source");
    assert_eq!(failing(&s, Some(&coding), Some(&src), None), Error::InvalidValue, "no destination");
    let rec = s.ec.matrix_create_recover(&coding, &[0]).unwrap();
    assert_eq!(failing(&s, Some(&rec), Some(&src), Some(&dst)), Error::InvalidValue, "a recover matrix");
    let (odd, d2, _a, _b) = s.bufs(bytes(96, 1), 64);
    assert_eq!(failing(&s, Some(&coding), Some(&odd), Some(&d2)), Error::InvalidValue, "48-byte blocks");
    let (src3, small, _c, _d) = s.bufs(bytes(256, 1), 64);
    assert_eq!(failing(&s, Some(&coding), Some(&src3), Some(&small)), Error::InvalidValue, "room for 1 of 2");
    // A read-only destination, a map not added to the device.
    let ro = map_with(&s.dev, vec![0; 64], AccessFlags::empty());
    let rob = s.inv.buf_get_at(&ro, 0, 64).unwrap();
    assert_eq!(failing(&s, Some(&coding), Some(&src), Some(&rob)), Error::NotPermitted);
    let other = Mmap::create().unwrap();
    other.set_memrange(vec![0u8; 64]).unwrap();
    other.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    other.start().unwrap();
    let ob = s.inv.buf_get_at(&other, 0, 64).unwrap();
    assert_eq!(failing(&s, Some(&coding), Some(&src), Some(&ob)), Error::NotPermitted);
    // Source data and destination room in one place.
    let one = map(&s.dev, vec![0; 256]);
    let (os, od) = (s.inv.buf_get_data_at(&one, 0, 128).unwrap(), s.inv.buf_get_at(&one, 64, 64).unwrap());
    assert_eq!(failing(&s, Some(&coding), Some(&os), Some(&od)), Error::InUse);
    // A list longer than the cap.
    let long = map(&s.dev, vec![0; 64 * 40]);
    let head = s.inv.buf_get_data_at(&long, 0, 64).unwrap();
    for i in 1..40 {
        head.chain_list(&s.inv.buf_get_data_at(&long, i * 64, 64).unwrap()).unwrap();
    }
    let big = s.ec.matrix_create(MatrixType::Cauchy, 40, 1).unwrap();
    let (_x, d40, _e, _f) = s.bufs(vec![0; 64], 64);
    let t = s.ec.task_create_alloc_init(Some(&big), Some(&head), Some(&d40), Data::from_u64(1)).unwrap();
    assert_eq!(t.try_submit().unwrap_err().error, Error::InvalidValue, "40 elements, cap 32");
    // Every failure above took the context down, and each restart worked.
    let states = s.log.borrow().states.clone();
    assert_eq!(states.iter().filter(|st| **st == CtxState::Stopping).count(), 9);
}

#[test]
fn a_failure_flushes_the_tasks_queued_behind_it() {
    let s = setup();
    let coding = s.ec.matrix_create(MatrixType::Cauchy, 2, 1).unwrap();
    let (src, dst, _sm, _dm) = s.bufs(bytes(128, 1), 64);
    let (s2, d2, _a, _b) = s.bufs(bytes(128, 2), 64);
    s.ec.task_create_alloc_init(Some(&coding), Some(&src), Some(&dst), Data::from_u64(0))
        .unwrap()
        .submit()
        .unwrap();
    s.ec.task_create_alloc_init(None, Some(&src), Some(&dst), Data::from_u64(1)).unwrap().submit().unwrap();
    s.ec.task_galois_mul_alloc_init(Some(&coding), Some(&s2), Some(&d2), Data::from_u64(2))
        .unwrap()
        .submit()
        .unwrap();
    s.run_to_idle();
    let want = [
        ("create", 0, Ok(())),
        ("create", 1, Err(Error::InvalidValue)),
        ("galois_mul", 2, Err(FLUSH_STATUS)),
    ];
    assert_eq!(s.log.borrow().tasks, want);
}

#[test]
fn the_topology_sets_the_limits() {
    let topo = Topology::parse(
        "t",
        "device b1:00.0 host\ncap ec.recover 0\ncap ec.max_block_size 4096\ncap ec.max_rdnc_blocks 4\n",
    )
    .unwrap();
    let info = &topo.devinfo_list().unwrap()[0];
    assert_eq!(caps::task_is_supported(info, caps::TaskType::Recover), Err(Error::NotSupported));
    assert_eq!(caps::task_is_supported(info, caps::TaskType::Create), Ok(()));
    assert_eq!(caps::max_block_size(info), Ok(4096));
    assert_eq!(caps::max_buf_list_len(info), Ok(32));
    let s = setup_on(info.open().unwrap());
    assert_eq!(s.ec.matrix_create(MatrixType::Cauchy, 4, 5).unwrap_err(), Error::InvalidValue, "5 > 4");
    let coding = s.ec.matrix_create(MatrixType::Cauchy, 2, 2).unwrap();
    let (src, dst, _sm, _dm) = s.bufs(bytes(2 * 8192, 1), 2 * 8192);
    assert_eq!(
        failing(&s, Some(&coding), Some(&src), Some(&dst)),
        Error::InvalidValue,
        "8 KiB blocks > 4 KiB"
    );
    let rec = s.ec.matrix_create_recover(&coding, &[0]).unwrap();
    let (src, dst, _a, _b) = s.bufs(bytes(128, 1), 64);
    let t = s.ec.task_recover_alloc_init(Some(&rec), Some(&src), Some(&dst), Data::from_u64(1)).unwrap();
    t.submit().unwrap();
    s.run(2);
    assert_eq!(s.last(), Err(Error::NotSupported));
    let none = Topology::parse(
        "t",
        "device b1:00.0 host\ncap ec.create 0\ncap ec.update 0\ncap ec.recover 0\ncap ec.galois_mul 0\n",
    )
    .unwrap();
    let info = &none.devinfo_list().unwrap()[0];
    assert_eq!(Ec::create(&info.open().unwrap()).err(), Some(Error::NotSupported));
    assert_eq!(caps::max_block_size(info), Err(Error::NotSupported));
    let typo = Topology::parse("t", "device b1:00.0 host\ncap ec.max_blok_size 2\n").unwrap();
    assert!(caps::max_block_size(&typo.devinfo_list().unwrap()[0]).is_err(), "a misspelt name is an error");
}
