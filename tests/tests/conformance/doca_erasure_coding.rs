//! `doca_erasure_coding.h`: the EC context, its capabilities, its matrices (the header's
//! Cauchy and Vandermonde constructions, raw, update, recover), the four task types, the
//! context's state rules, and the progress engine's rule for a failed task.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe};
use doca_erasure_coding::{caps, CreateTask, Ec, GaloisMulTask, MatrixType, RecoverTask, UpdateTask};
use doca_mmap::{AccessFlags, Mmap};

use crate::support::{started_inventory, until};

type Seen = Rc<RefCell<Vec<(u64, Result<(), Error>)>>>;

struct Rig {
    pe: Pe,
    ec: Ec,
    dev: Dev,
    inv: Inventory,
    seen: Seen,
}

/// An EC context on the DPU device, every task type configured (4 each), started.
fn rig() -> Rig {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let ec = Ec::create(&dev).unwrap();
    pe.connect_ctx(&ec.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    macro_rules! conf {
        ($set:ident, $t:ty) => {{
            let s = seen.clone();
            let cb = move |t: $t, td: Data, _| s.borrow_mut().push((td.as_u64(), t.status()));
            ec.$set(cb.clone(), cb, 4).unwrap();
        }};
    }
    conf!(task_create_set_conf, CreateTask);
    conf!(task_update_set_conf, UpdateTask);
    conf!(task_recover_set_conf, RecoverTask);
    conf!(task_galois_mul_set_conf, GaloisMulTask);
    ec.as_ctx().start().unwrap();
    Rig { pe, ec, dev, inv: started_inventory(32), seen }
}

impl Rig {
    fn map(&self, data: Vec<u8>) -> Mmap {
        let m = Mmap::create().unwrap();
        m.set_memrange(data).unwrap();
        m.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
        m.add_dev(&self.dev).unwrap();
        m.start().unwrap();
        m
    }

    /// A source holding `data`, a destination of `room` bytes.
    fn pair(&self, data: Vec<u8>, room: usize) -> (Buf, Buf, Mmap, Mmap) {
        let n = data.len();
        let (sm, dm) = (self.map(data), self.map(vec![0; room]));
        (self.inv.buf_get_data_at(&sm, 0, n).unwrap(), self.inv.buf_get_at(&dm, 0, room).unwrap(), sm, dm)
    }

    fn wait(&self, n: usize) {
        until(&self.pe, || self.seen.borrow().len() >= n);
    }
}

#[test]
fn capabilities_answer_on_host_and_dpu_devices() {
    for pci in ["03:00.0", "b1:00.0"] {
        let dev = open_device_with_pci(pci, None).unwrap();
        let info = dev.as_devinfo();
        for t in [
            caps::TaskType::Create,
            caps::TaskType::Update,
            caps::TaskType::Recover,
            caps::TaskType::GaloisMul,
        ] {
            assert_eq!(caps::task_is_supported(info, t), Ok(()), "{pci} {t:?}");
        }
        assert_eq!(caps::max_block_size(info), Ok(16 << 20));
        assert_eq!(caps::max_buf_list_len(info), Ok(32));
    }
}

#[test]
fn the_header_constructions_of_the_coding_matrices() {
    let r = rig();
    // Cauchy k=3, m=2: 1 / (i ^ (3 + j)); Vandermonde: (i + 1)^j.
    let c = r.ec.matrix_create(MatrixType::Cauchy, 3, 2).unwrap();
    let inv = |x: u8| (1..=255u8).find(|&y| reed_mul(x, y) == 1).unwrap();
    for i in 0..3 {
        for j in 0..2 {
            assert_eq!(c.coef(i, j), inv(i as u8 ^ (3 + j) as u8));
        }
    }
    let v = r.ec.matrix_create(MatrixType::Vandermonde, 3, 3).unwrap();
    assert_eq!((v.coef(2, 0), v.coef(2, 1), v.coef(2, 2)), (1, 3, 5));
    assert_eq!(r.ec.matrix_create(MatrixType::Cauchy, 129, 2).unwrap_err(), Error::InvalidValue, "above 128");
    assert_eq!(r.ec.matrix_create(MatrixType::Cauchy, 4, 33).unwrap_err(), Error::InvalidValue, "above 32");
    assert_eq!(r.ec.matrix_create_from_raw(&[1, 2, 3], 2, 2).unwrap_err(), Error::InvalidValue);
}

/// GF(2^8) 0x11D multiplication by shift and add (a reference of the test's own).
fn reed_mul(mut a: u8, mut b: u8) -> u8 {
    let mut p = 0;
    while b != 0 {
        if b & 1 != 0 {
            p ^= a;
        }
        let hi = a & 0x80 != 0;
        a <<= 1;
        if hi {
            a ^= 0x1D;
        }
        b >>= 1;
    }
    p
}

#[test]
fn create_then_recover_gives_the_lost_blocks_back() {
    let r = rig();
    let (k, m, block) = (3, 2, 64);
    let data: Vec<u8> = (0..k * block).map(|i| (i * 7 + 3) as u8).collect();
    let coding = r.ec.matrix_create(MatrixType::Cauchy, k, m).unwrap();
    let (s, d, _a, _b) = r.pair(data.clone(), m * block);
    r.ec.task_create_alloc_init(Some(&coding), Some(&s), Some(&d), Data::from_u64(1))
        .unwrap()
        .submit()
        .unwrap();
    r.wait(1);
    let rdnc = d.data_to_vec().unwrap();
    assert_eq!(rdnc.len(), m * block);
    // Lose data blocks 0 and 2: available data 1, rdnc 0, rdnc 1.
    let rec = r.ec.matrix_create_recover(&coding, &[0, 2]).unwrap();
    let mut avail = data[block..2 * block].to_vec();
    avail.extend_from_slice(&rdnc);
    let (s, d, _c, _e) = r.pair(avail, 2 * block);
    r.ec.task_recover_alloc_init(Some(&rec), Some(&s), Some(&d), Data::from_u64(2))
        .unwrap()
        .submit()
        .unwrap();
    r.wait(2);
    let mut want = data[..block].to_vec();
    want.extend_from_slice(&data[2 * block..]);
    assert_eq!(d.data_to_vec().unwrap(), want);
    assert_eq!(*r.seen.borrow(), [(1, Ok(())), (2, Ok(()))]);
}

#[test]
fn state_rules_of_the_context() {
    let r = rig();
    let cb = |_: CreateTask, _: Data, _: Data| {};
    assert_eq!(r.ec.task_create_set_conf(cb, cb, 4).unwrap_err(), Error::BadState, "set_conf while running");
    // 4 tasks: the fifth allocation has no memory.
    let held: Vec<CreateTask> =
        (0..4).map(|i| r.ec.task_create_alloc_init(None, None, None, Data::from_u64(i)).unwrap()).collect();
    assert_eq!(
        r.ec.task_create_alloc_init(None, None, None, Data::from_u64(9)).unwrap_err(),
        Error::NoMemory
    );
    drop(held);
    r.ec.as_ctx().stop().unwrap();
    until(&r.pe, || r.ec.as_ctx().state() == CtxState::Idle);
    assert_eq!(
        r.ec.task_create_alloc_init(None, None, None, Data::from_u64(0)).unwrap_err(),
        Error::BadState
    );
    assert_eq!(r.ec.task_create_set_conf(cb, cb, 1 << 20).unwrap_err(), Error::InvalidValue, "above the cap");
    let Rig { ec, .. } = r;
    assert!(ec.destroy().is_ok());
}

#[test]
fn a_failed_task_stops_its_context_and_flushes_the_rest() {
    let r = rig();
    let coding = r.ec.matrix_create(MatrixType::Cauchy, 2, 1).unwrap();
    let (s, d, _a, _b) = r.pair(vec![1; 128], 64);
    let (s2, d2, _c, _e) = r.pair(vec![1; 100], 64); // not whole 64-byte blocks
    r.ec.task_galois_mul_alloc_init(Some(&coding), Some(&s2), Some(&d2), Data::from_u64(1))
        .unwrap()
        .submit()
        .unwrap();
    r.ec.task_create_alloc_init(Some(&coding), Some(&s), Some(&d), Data::from_u64(2))
        .unwrap()
        .submit()
        .unwrap();
    until(&r.pe, || r.ec.as_ctx().state() == CtxState::Idle);
    // (The two pools hand their tasks back in their own order: compare by task.)
    let mut seen = r.seen.borrow().clone();
    seen.sort_by_key(|t| t.0);
    assert_eq!(seen, [(1, Err(Error::InvalidValue)), (2, Err(Error::Shutdown))]);
    r.ec.as_ctx().start().unwrap();
    r.ec.task_create_alloc_init(Some(&coding), Some(&s), Some(&d), Data::from_u64(3))
        .unwrap()
        .submit()
        .unwrap();
    r.wait(3);
    assert_eq!(r.seen.borrow()[2], (3, Ok(())));
}
