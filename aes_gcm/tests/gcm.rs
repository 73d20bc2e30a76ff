//! AES-GCM encrypt and decrypt tasks from progress: the GCM specification's test vectors
//! (McGrew and Viega's test cases, as NIST SP 800-38D defines the mode), the data layout
//! (AAD copied through, tag after the ciphertext), round trips over every IV length and both
//! tag sizes, buffer lists, in place, and each documented failure with its status.

use std::cell::RefCell;
use std::rc::Rc;

use doca_aes_gcm::{
    caps, AesGcm, DecryptTask, EncryptTask, Key, KeyType, Op, FLUSH_STATUS, TAG_MISMATCH_STATUS,
};
use doca_buf::{Buf, Inventory};
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe, Topology};
use doca_mmap::{AccessFlags, Mmap};

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
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

/// What the callbacks saw: (which, user data, status, destination data).
type Seen = Rc<RefCell<Vec<(&'static str, u64, Result<(), Error>, Vec<u8>)>>>;

fn dst_data(dst: Option<Buf>) -> Vec<u8> {
    dst.map_or(Vec::new(), |d| {
        let mut v = Vec::new();
        let mut cur = Some(d);
        while let Some(b) = cur {
            v.extend(b.data_to_vec().unwrap());
            cur = b.next_in_list().unwrap();
        }
        v
    })
}

fn record_enc(seen: &Seen) -> impl FnMut(EncryptTask, Data, Data) + 'static {
    let seen = seen.clone();
    move |t: EncryptTask, td: Data, _| {
        seen.borrow_mut().push(("enc", td.as_u64(), t.status(), dst_data(t.dst())))
    }
}

fn record_dec(seen: &Seen) -> impl FnMut(DecryptTask, Data, Data) + 'static {
    let seen = seen.clone();
    move |t: DecryptTask, td: Data, _| {
        seen.borrow_mut().push(("dec", td.as_u64(), t.status(), dst_data(t.dst())))
    }
}

struct Setup {
    pe: Pe,
    gcm: AesGcm,
    dev: Dev,
    inv: Inventory,
    seen: Seen,
}

fn setup_on(dev: Dev) -> Setup {
    let pe = Pe::create().unwrap();
    let gcm = AesGcm::create(&dev).unwrap();
    pe.connect_ctx(&gcm.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    gcm.task_encrypt_set_conf(record_enc(&seen), record_enc(&seen), 8).unwrap();
    gcm.task_decrypt_set_conf(record_dec(&seen), record_dec(&seen), 8).unwrap();
    gcm.as_ctx().start().unwrap();
    let inv = Inventory::create(256).unwrap();
    inv.start().unwrap();
    Setup { pe, gcm, dev, inv, seen }
}

fn setup() -> Setup {
    setup_on(open_device_with_pci("03:00.0", None).unwrap())
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

impl Setup {
    /// A source buffer holding `data`, in a map of its own.
    fn src(&self, data: &[u8]) -> (Mmap, Buf) {
        // (A map is never empty: an empty source is a buffer with no data.)
        let m = map(&self.dev, if data.is_empty() { vec![0] } else { data.to_vec() });
        let b = self.inv.buf_get_data_at(&m, 0, data.len()).unwrap();
        (m, b)
    }

    /// A destination of `room` bytes with no data, in a map of its own.
    fn dst(&self, room: usize) -> (Mmap, Buf) {
        let m = map(&self.dev, vec![0; room]);
        let b = self.inv.buf_get_at(&m, 0, room).unwrap();
        (m, b)
    }

    fn key(&self, raw: &[u8]) -> Key {
        let t = if raw.len() == 16 { KeyType::Aes128 } else { KeyType::Aes256 };
        self.gcm.key_create(raw, t).unwrap()
    }

    /// Runs one task of `op` over `input` and returns its status and the destination's data.
    fn one(
        &self,
        op: Op,
        key: &Key,
        iv: &[u8],
        tag: u32,
        aad: u32,
        input: &[u8],
    ) -> (Result<(), Error>, Vec<u8>) {
        let (_ms, src) = self.src(input);
        let (_md, dst) = self.dst(input.len() + 16);
        let before = self.seen.borrow().len();
        match op {
            Op::Encrypt => self
                .gcm
                .task_encrypt_alloc_init(Some(&src), Some(&dst), Some(key), iv, tag, aad, Data::from_u64(7))
                .unwrap()
                .submit()
                .map_err(|r| r.error)
                .unwrap(),
            Op::Decrypt => self
                .gcm
                .task_decrypt_alloc_init(Some(&src), Some(&dst), Some(key), iv, tag, aad, Data::from_u64(7))
                .unwrap()
                .submit()
                .map_err(|r| r.error)
                .unwrap(),
        }
        run(&self.pe, || self.seen.borrow().len() > before);
        let (_, _, st, out) = self.seen.borrow_mut().pop().unwrap();
        (st, out)
    }

    fn restart(&self) {
        run(&self.pe, || self.gcm.as_ctx().state() == CtxState::Idle);
        self.gcm.as_ctx().start().unwrap();
        self.seen.borrow_mut().clear();
    }
}

/// (name, key, plaintext, IV, AAD, ciphertext, 16-byte tag): test cases 1–5 and 13–17 of the
/// GCM specification (McGrew and Viega), the vectors NIST SP 800-38D's mode is checked with.
/// Cases 6, 12 and 18 use a 60-byte IV, beyond DOCA's 12.
type Vector = (&'static str, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);

fn vectors() -> Vec<Vector> {
    let k3 = "feffe9928665731c6d6a8f9467308308";
    let k15 = format!("{k3}{k3}");
    let p3 = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255";
    let p4 = &p3[..120];
    let a = "feedfacedeadbeeffeedfacedeadbeefabaddad2";
    let iv = "cafebabefacedbaddecaf888";
    let z = |n: usize| "0".repeat(n);
    let rows: Vec<(&str, String, String, String, &str, &str, &str)> = vec![
        ("TC1", z(32), String::new(), z(24), "", "", "58e2fccefa7e3061367f1d57a4e7455a"),
        ("TC2", z(32), z(32), z(24), "", "0388dace60b6a392f328c2b971b2fe78", "ab6e47d42cec13bdf53a67b21257bddf"),
        ("TC3", k3.into(), p3.into(), iv.into(), "", "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985", "4d5c2af327cd64a62cf35abd2ba6fab4"),
        ("TC4", k3.into(), p4.into(), iv.into(), a, "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091", "5bc94fbc3221a5db94fae95ae7121a47"),
        ("TC5 (64-bit IV)", k3.into(), p4.into(), "cafebabefacedbad".into(), a, "61353b4c2806934a777ff51fa22a4755699b2a714fcdc6f83766e5f97b6c742373806900e49f24b22b097544d4896b424989b5e1ebac0f07c23f4598", "3612d2e79e3b0785561be14aaca2fccb"),
        ("TC13", z(64), String::new(), z(24), "", "", "530f8afbc74536b9a963b4f1c4cb738b"),
        ("TC14", z(64), z(32), z(24), "", "cea7403d4d606b6e074ec5d3baf39d18", "d0d1c8a799996bf0265b98b5d48ab919"),
        ("TC15", k15.clone(), p3.into(), iv.into(), "", "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad", "b094dac5d93471bdec1a502270e3cc6c"),
        ("TC16", k15.clone(), p4.into(), iv.into(), a, "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662", "76fc6ece0f4e1768cddf8853bb2d551b"),
        ("TC17 (64-bit IV)", k15, p4.into(), "cafebabefacedbad".into(), a, "c3762df1ca787d32ae47c13bf19844cbaf1ae14d0b976afac52ff7d79bba9de0feb582d33934a4f0954cc2363bc73f7862ac430e64abe499f47c9b1f", "3a337dbf46a792c45e454913fe2ea8f2"),
    ];
    rows.into_iter()
        .map(|(n, k, p, iv, a, c, t)| (n, unhex(&k), unhex(&p), unhex(&iv), unhex(a), unhex(c), unhex(t)))
        .collect()
}

#[test]
fn the_gcm_specification_test_vectors_encrypt_and_decrypt() {
    let s = setup();
    for (name, k, p, iv, a, c, t) in vectors() {
        let key = s.key(&k);
        for tag in [16u32, 12] {
            let t = &t[..tag as usize];
            let input = [a.as_slice(), p.as_slice()].concat();
            let (st, out) = s.one(Op::Encrypt, &key, &iv, tag, a.len() as u32, &input);
            assert_eq!(st, Ok(()), "{name}");
            let want = [a.as_slice(), c.as_slice(), t].concat();
            assert_eq!(out, want, "{name}, tag {tag}: AAD ‖ ciphertext ‖ tag");
            let (st, out) = s.one(Op::Decrypt, &key, &iv, tag, a.len() as u32, &want);
            assert_eq!(st, Ok(()), "{name}");
            assert_eq!(out, input, "{name}, tag {tag}: AAD ‖ plaintext");
        }
        key.destroy().unwrap();
    }
}

#[test]
fn every_iv_length_from_0_to_12_round_trips_and_gives_its_own_ciphertext() {
    let s = setup();
    let key = s.key(&bytes(32, 1));
    let data = bytes(1000, 2);
    let mut seen = Vec::new();
    for n in 0..=12 {
        let iv = bytes(n, 3);
        let (st, ct) = s.one(Op::Encrypt, &key, &iv, 12, 10, &data);
        assert_eq!(st, Ok(()));
        assert_eq!(ct.len(), data.len() + 12);
        assert_eq!(ct[..10], data[..10], "the AAD is copied through");
        let (st, pt) = s.one(Op::Decrypt, &key, &iv, 12, 10, &ct);
        assert_eq!(st, Ok(()));
        assert_eq!(pt, data);
        seen.push(ct);
    }
    // A short IV is not zero-padded to 12 bytes (GCM's J0 for other lengths is GHASH-derived).
    let padded = [bytes(8, 3), vec![0; 4]].concat();
    let (_, ct) = s.one(Op::Encrypt, &key, &padded, 12, 10, &data);
    assert_ne!(ct, seen[8]);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 13, "13 IV lengths, 13 different outputs");
}

#[test]
fn a_tag_mismatch_fails_with_io_failed_writes_nothing_and_stops_the_context() {
    let s = setup();
    let key = s.key(&[7; 16]);
    let data = bytes(300, 4);
    let (_, ct) = s.one(Op::Encrypt, &key, &[1; 12], 16, 20, &data);
    for (i, what) in [(5usize, "AAD"), (100, "ciphertext"), (ct.len() - 1, "tag")] {
        let mut bad = ct.clone();
        bad[i] ^= 1;
        let (st, out) = s.one(Op::Decrypt, &key, &[1; 12], 16, 20, &bad);
        assert_eq!(st, Err(TAG_MISMATCH_STATUS), "a changed byte of the {what}");
        assert!(out.is_empty(), "nothing written");
        // Fatal to the context: Stopping, then Idle once the callback freed the task.
        assert_eq!(s.gcm.as_ctx().state(), CtxState::Idle, "a failed task is fatal to its context");
        s.restart();
    }
    // The wrong tag size or IV is a mismatch too.
    let (st, _) = s.one(Op::Decrypt, &key, &[1; 12], 12, 20, &ct);
    assert_eq!(st, Err(TAG_MISMATCH_STATUS));
    s.restart();
    let (st, _) = s.one(Op::Decrypt, &key, &[1; 11], 16, 20, &ct);
    assert_eq!(st, Err(TAG_MISMATCH_STATUS));
}

#[test]
fn source_and_destination_lists_and_in_place() {
    let s = setup();
    let key = s.key(&bytes(32, 5));
    let data = bytes(4096, 6);
    let (_, want) = s.one(Op::Encrypt, &key, &[9; 12], 16, 64, &data);

    // A source of three elements, a destination of three (rooms of 1000, 2000, 1200 bytes).
    let m = map(&s.dev, data.clone());
    let a = s.inv.buf_get_data_at(&m, 0, 1000).unwrap();
    let b = s.inv.buf_get_data_at(&m, 1000, 96).unwrap();
    let c = s.inv.buf_get_data_at(&m, 1096, 3000).unwrap();
    a.chain_list(&b).unwrap();
    a.chain_list(&c).unwrap();
    let md = map(&s.dev, vec![0; 4200]);
    let d1 = s.inv.buf_get_at(&md, 0, 1000).unwrap();
    let d2 = s.inv.buf_get_at(&md, 1000, 2000).unwrap();
    let d3 = s.inv.buf_get_at(&md, 3000, 1200).unwrap();
    d1.chain_list(&d2).unwrap();
    d1.chain_list(&d3).unwrap();
    s.gcm
        .task_encrypt_alloc_init(Some(&a), Some(&d1), Some(&key), &[9; 12], 16, 64, Data::from_u64(1))
        .unwrap()
        .submit()
        .map_err(|r| r.error)
        .unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    let (_, _, st, out) = s.seen.borrow_mut().pop().unwrap();
    assert_eq!(st, Ok(()));
    assert_eq!(out, want, "a list gives what one buffer gives");
    assert_eq!(
        [d1.data_len().unwrap(), d2.data_len().unwrap(), d3.data_len().unwrap()],
        [1000, 2000, 1112],
        "each element's room in turn"
    );

    // In place: the destination is a buffer over the source's own bytes.
    let m = map(&s.dev, [want.clone(), vec![0; 16]].concat());
    let src = s.inv.buf_get_data_at(&m, 0, want.len()).unwrap();
    let dst = s.inv.buf_get_at(&m, 0, want.len()).unwrap();
    s.gcm
        .task_decrypt_alloc_init(Some(&src), Some(&dst), Some(&key), &[9; 12], 16, 64, Data::from_u64(2))
        .unwrap()
        .submit()
        .map_err(|r| r.error)
        .unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    let (_, _, st, out) = s.seen.borrow_mut().pop().unwrap();
    assert_eq!(st, Ok(()));
    assert_eq!(out, data, "decrypted in place");
}

#[test]
fn the_output_lands_after_the_destination_data() {
    let s = setup();
    let key = s.key(&[1; 32]);
    let m = map(&s.dev, vec![0xee; 64]);
    let dst = s.inv.buf_get_at(&m, 0, 64).unwrap();
    dst.set_data(dst.head().unwrap(), 4).unwrap();
    let (_ms, src) = s.src(b"hello");
    let t =
        s.gcm.task_encrypt_alloc_init(Some(&src), Some(&dst), Some(&key), &[], 12, 0, Data::NONE).unwrap();
    assert_eq!((t.iv(), t.iv_len(), t.tag_size(), t.aad_size()), (vec![], 0, 12, 0));
    t.submit().map_err(|r| r.error).unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    let out = s.seen.borrow()[0].3.clone();
    assert_eq!(out.len(), 4 + 5 + 12);
    assert_eq!(out[..4], [0xee; 4], "the data before stays");
}

#[test]
fn alloc_init_refuses_a_long_iv_and_odd_tag_sizes_the_engine_refuses_what_setters_set() {
    let s = setup();
    let key = s.key(&[2; 16]);
    let (_ms, src) = s.src(&[5; 32]);
    let (_md, dst) = s.dst(64);
    let alloc = |iv: &[u8], tag| {
        s.gcm.task_encrypt_alloc_init(Some(&src), Some(&dst), Some(&key), iv, tag, 0, Data::NONE).map(|_| ())
    };
    assert_eq!(alloc(&[0; 13], 12), Err(Error::InvalidValue));
    for tag in [0, 4, 8, 13, 14, 15, 17, 32] {
        assert_eq!(alloc(&[0; 12], tag), Err(Error::InvalidValue), "tag {tag}");
    }
    // The setters cannot refuse: try_submit does, naming the check; submit fails the task.
    let t = s
        .gcm
        .task_encrypt_alloc_init(Some(&src), Some(&dst), Some(&key), &[0; 12], 12, 0, Data::NONE)
        .unwrap();
    t.set_iv(&[0; 13]);
    assert_eq!((t.iv_len(), t.iv()), (13, vec![]));
    let t = t.try_submit().map_err(|r| r.value).unwrap_err();
    t.set_iv(&[3; 12]);
    t.set_tag_size(14);
    let t = t.try_submit().map_err(|r| (r.error, r.value)).unwrap_err();
    assert_eq!(t.0, Error::InvalidValue);
    let t = t.1;
    t.set_tag_size(16);
    t.set_aad_size(33);
    let t = t.try_submit().map_err(|r| r.value).unwrap_err();
    t.set_aad_size(32);
    t.set_key(None);
    let t = t.try_submit().map_err(|r| r.value).unwrap_err();
    t.set_key(Some(&key));
    t.submit().map_err(|r| r.error).unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    assert_eq!(s.seen.borrow()[0].2, Ok(()));
    assert_eq!(s.seen.borrow()[0].3.len(), 32 + 16);
}

#[test]
fn each_documented_failure_completes_with_its_status() {
    let s = setup();
    let key = s.key(&[3; 32]);
    let (_ms, src) = s.src(&[5; 100]);
    type Spoil = Box<dyn Fn(&EncryptTask)>;
    let cases: Vec<(&str, Spoil, Error)> = vec![
        ("no source", Box::new(|t: &EncryptTask| t.set_src(None)), Error::InvalidValue),
        ("no destination", Box::new(|t: &EncryptTask| t.set_dst(None)), Error::InvalidValue),
        ("no key", Box::new(|t: &EncryptTask| t.set_key(None)), Error::InvalidValue),
        ("an IV of 13 bytes", Box::new(|t: &EncryptTask| t.set_iv(&[0; 13])), Error::InvalidValue),
        ("a tag of 8 bytes", Box::new(|t: &EncryptTask| t.set_tag_size(8)), Error::InvalidValue),
        ("AAD above the source", Box::new(|t: &EncryptTask| t.set_aad_size(101)), Error::InvalidValue),
    ];
    for (what, spoil, status) in cases {
        let (_md, dst) = s.dst(200);
        let t = s
            .gcm
            .task_encrypt_alloc_init(Some(&src), Some(&dst), Some(&key), &[0; 12], 16, 0, Data::NONE)
            .unwrap();
        spoil(&t);
        t.submit().map_err(|r| r.error).unwrap();
        run(&s.pe, || !s.seen.borrow().is_empty());
        assert_eq!(s.seen.borrow()[0].2, Err(status), "{what}");
        s.restart();
    }
    // A destination room one byte short of AAD ‖ ciphertext ‖ tag.
    let (_md, small) = s.dst(100 + 16 - 1);
    s.gcm
        .task_encrypt_alloc_init(Some(&src), Some(&small), Some(&key), &[0; 12], 16, 0, Data::NONE)
        .unwrap()
        .submit()
        .ok()
        .unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    assert_eq!(s.seen.borrow()[0].2, Err(Error::InvalidValue), "destination too small");
    s.restart();
    // A decrypt source shorter than aad + tag.
    let (_md, dst) = s.dst(200);
    s.gcm
        .task_decrypt_alloc_init(Some(&src), Some(&dst), Some(&key), &[0; 12], 16, 90, Data::NONE)
        .unwrap()
        .submit()
        .ok()
        .unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    assert_eq!(s.seen.borrow()[0].2, Err(Error::InvalidValue), "decrypt source below aad + tag");
    s.restart();
    // A map not added to the device; a read-only destination.
    let other = Mmap::create().unwrap();
    other.set_memrange(vec![0; 256]).unwrap();
    other.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    other.start().unwrap();
    let od = s.inv.buf_get_at(&other, 0, 256).unwrap();
    s.gcm
        .task_encrypt_alloc_init(Some(&src), Some(&od), Some(&key), &[0; 12], 16, 0, Data::NONE)
        .unwrap()
        .submit()
        .ok()
        .unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    assert_eq!(s.seen.borrow()[0].2, Err(Error::NotPermitted), "map not added to the device");
    s.restart();
    let ro = Mmap::create().unwrap();
    ro.set_memrange(vec![0; 256]).unwrap();
    ro.set_permissions(AccessFlags::PCI_READ_ONLY).unwrap();
    ro.add_dev(&s.dev).unwrap();
    ro.start().unwrap();
    let rd = s.inv.buf_get_at(&ro, 0, 256).unwrap();
    s.gcm
        .task_encrypt_alloc_init(Some(&src), Some(&rd), Some(&key), &[0; 12], 16, 0, Data::NONE)
        .unwrap()
        .submit()
        .ok()
        .unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    assert_eq!(s.seen.borrow()[0].2, Err(Error::NotPermitted), "destination without LOCAL_READ_WRITE");
    s.restart();
    // A destroyed key; a key of another context.
    let gone = s.key(&[4; 16]);
    let (_md, dst) = s.dst(200);
    let t = s
        .gcm
        .task_encrypt_alloc_init(Some(&src), Some(&dst), Some(&gone), &[0; 12], 16, 0, Data::NONE)
        .unwrap();
    gone.clone().destroy().unwrap();
    assert_eq!(gone.clone().destroy(), Err(Error::BadState), "destroyed twice");
    t.submit().ok().unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    assert_eq!(s.seen.borrow()[0].2, Err(Error::BadState), "destroyed key");
    s.restart();
    let other = AesGcm::create(&s.dev).unwrap();
    let foreign = other.key_create(&[4; 16], KeyType::Aes128).unwrap();
    s.gcm
        .task_encrypt_alloc_init(Some(&src), Some(&dst), Some(&foreign), &[0; 12], 16, 0, Data::NONE)
        .unwrap()
        .submit()
        .ok()
        .unwrap();
    run(&s.pe, || !s.seen.borrow().is_empty());
    assert_eq!(s.seen.borrow()[0].2, Err(Error::InvalidValue), "a key of another context");
}

#[test]
fn a_failure_flushes_the_tasks_queued_behind_it() {
    let s = setup();
    let key = s.key(&[3; 16]);
    let (_ms, src) = s.src(&[5; 100]);
    let dsts: Vec<_> = (0..4).map(|_| s.dst(200)).collect();
    for (i, (_, d)) in dsts.iter().enumerate() {
        let tag = if i == 1 { 16 } else { 12 };
        let t = s.gcm.task_decrypt_alloc_init(
            Some(&src),
            Some(d),
            Some(&key),
            &[0; 12],
            tag,
            0,
            Data::from_u64(i as u64),
        );
        let t = t.unwrap();
        if i == 0 {
            t.set_aad_size(88); // 88 + 12 = the source: AAD only, and a tag that cannot match
        }
        t.submit().ok().unwrap();
    }
    run(&s.pe, || s.gcm.as_ctx().state() == CtxState::Idle);
    let seen: Vec<_> = s.seen.borrow().iter().map(|(_, td, st, _)| (*td, *st)).collect();
    assert_eq!(
        seen,
        [
            (0, Err(TAG_MISMATCH_STATUS)),
            (1, Err(FLUSH_STATUS)),
            (2, Err(FLUSH_STATUS)),
            (3, Err(FLUSH_STATUS))
        ]
    );
}

#[test]
fn keys_of_other_sizes_are_refused_and_pools_share_the_maximum() {
    let s = setup();
    assert_eq!(s.gcm.key_create(&[0; 24], KeyType::Aes128).map(|_| ()), Err(Error::InvalidValue));
    assert_eq!(s.gcm.key_create(&[0; 16], KeyType::Aes256).map(|_| ()), Err(Error::InvalidValue));
    assert_eq!(KeyType::from_raw(0), None);
    assert_eq!(KeyType::from_raw(3), None);
    assert_eq!(s.gcm.cap_get_max_num_tasks(), Ok(16384));
    let g = AesGcm::create(&s.dev).unwrap();
    g.task_encrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 16000).unwrap();
    assert_eq!(g.task_decrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 385), Err(Error::InvalidValue), "the sum");
    g.task_decrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 384).unwrap();
}

#[test]
fn the_topology_takes_key_types_tags_and_task_types_away() {
    let topo = Topology::parse(
        "t",
        "device b1:00.0 host\ncap aes_gcm.key_128 0\ncap aes_gcm.tag_96 0\ncap aes_gcm.decrypt 0\ncap aes_gcm.max_iv_len 20\n",
    )
    .unwrap();
    let info = &topo.devinfo_list().unwrap()[0];
    assert_eq!(caps::task_is_supported(info, Op::Encrypt), Ok(()));
    assert_eq!(caps::task_is_supported(info, Op::Decrypt), Err(Error::NotSupported));
    assert_eq!(caps::key_type_is_supported(info, Op::Encrypt, KeyType::Aes256), Ok(()));
    assert_eq!(caps::key_type_is_supported(info, Op::Encrypt, KeyType::Aes128), Err(Error::NotSupported));
    assert_eq!(caps::tag_96_is_supported(info, Op::Encrypt), Err(Error::NotSupported));
    assert_eq!(caps::tag_128_is_supported(info, Op::Encrypt), Ok(()));
    assert_eq!(caps::max_iv_len(info, Op::Encrypt), Ok(12), "never above DOCA's 12");
    assert_eq!(caps::max_buf_size(info, Op::Decrypt), Err(Error::NotSupported));
    let s = setup_on(info.open().unwrap_or_else(|_| panic!("open")));
    let _ = s.inv.num_elements();
    assert_eq!(s.gcm.key_create(&[0; 16], KeyType::Aes128).map(|_| ()), Err(Error::NotSupported));
    let key = s.gcm.key_create(&[0; 32], KeyType::Aes256).unwrap();
    let (st, _) = s.one(Op::Encrypt, &key, &[0; 12], 12, 0, b"x");
    assert_eq!(st, Err(Error::NotSupported), "a 12-byte tag the topology takes away");
    let none =
        Topology::parse("t", "device b1:00.0 host\ncap aes_gcm.encrypt 0\ncap aes_gcm.decrypt 0\n").unwrap();
    let dev = none.devinfo_list().unwrap()[0].open().unwrap();
    assert_eq!(AesGcm::create(&dev).map(|_| ()).err(), Some(Error::NotSupported));
    let typo = Topology::parse("t", "device b1:00.0 host\ncap aes_gcm.key128 0\n").unwrap();
    assert!(caps::max_num_tasks(&typo.devinfo_list().unwrap()[0]).is_err(), "a misspelt name is an error");
}

#[test]
fn a_large_task_and_many_small_ones_complete_in_order() {
    let s = setup();
    let key = s.key(&bytes(32, 8));
    // The largest plaintext whose ciphertext ‖ tag still fits the 2 MiB source maximum.
    let big = bytes((2 << 20) - 16, 9);
    let (st, ct) = s.one(Op::Encrypt, &key, &[1; 12], 16, 0, &big);
    assert_eq!(st, Ok(()));
    let (st, pt) = s.one(Op::Decrypt, &key, &[1; 12], 16, 0, &ct);
    assert_eq!((st, pt == big), (Ok(()), true));
    // One byte above the maximum.
    let (st, _) = s.one(Op::Encrypt, &key, &[1; 12], 16, 0, &bytes((2 << 20) + 1, 9));
    assert_eq!(st, Err(Error::InvalidValue));
    s.restart();
    let srcs: Vec<_> = (0..8).map(|i| s.src(&bytes(100 + i, i as u64))).collect();
    let dsts: Vec<_> = (0..8).map(|_| s.dst(200)).collect();
    for i in 0..8 {
        s.gcm
            .task_encrypt_alloc_init(
                Some(&srcs[i].1),
                Some(&dsts[i].1),
                Some(&key),
                &[2; 12],
                12,
                0,
                Data::from_u64(i as u64),
            )
            .unwrap()
            .submit()
            .ok()
            .unwrap();
    }
    run(&s.pe, || s.seen.borrow().len() == 8);
    let order: Vec<_> = s.seen.borrow().iter().map(|x| (x.1, x.2, x.3.len())).collect();
    assert_eq!(order, (0..8).map(|i| (i as u64, Ok(()), 100 + i + 12)).collect::<Vec<_>>());
}

/// Encrypt by each road gives the same bytes: a source and a destination apart (in two maps,
/// or apart in one: the source copied once into the destination's room and encrypted there)
/// and a destination over the source's bytes (wholly, or overlapping its end: worked in the
/// engine's scratch buffer, the whole source read first).
#[test]
fn encrypt_apart_in_one_map_and_over_the_source_give_the_same_bytes() {
    let s = setup();
    let key = s.key(&bytes(16, 3));
    let data = bytes(1000, 4);
    let (st, want) = s.one(Op::Encrypt, &key, &[1; 12], 12, 10, &data);
    assert_eq!((st, want.len()), (Ok(()), 1012));
    // (the destination's offset in a map holding the data then 1012 bytes more)
    for (what, at) in [("apart in one map", 1000usize), ("over the whole source", 0), ("over its end", 500)] {
        let m = map(&s.dev, [data.clone(), vec![0; 1012]].concat());
        let src = s.inv.buf_get_data_at(&m, 0, 1000).unwrap();
        let dst = s.inv.buf_get_at(&m, at, 1012).unwrap();
        s.gcm
            .task_encrypt_alloc_init(Some(&src), Some(&dst), Some(&key), &[1; 12], 12, 10, Data::NONE)
            .unwrap()
            .submit()
            .map_err(|r| r.error)
            .unwrap();
        run(&s.pe, || !s.seen.borrow().is_empty());
        let (_, _, st, out) = s.seen.borrow_mut().pop().unwrap();
        assert_eq!(st, Ok(()), "{what}");
        assert_eq!(out, want, "{what}");
    }
}
