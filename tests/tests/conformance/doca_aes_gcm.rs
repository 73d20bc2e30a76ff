//! `doca_aes_gcm.h` (2.6, the same shapes up to 3.3): the AES-GCM context, its capabilities,
//! keys, encrypt and decrypt tasks, and the progress engine's rule for a failed task (fatal to
//! its context). Where the header is silent (short IVs, a tag mismatch, other key types) the
//! porting table's choices are checked.

use std::cell::RefCell;
use std::rc::Rc;

use doca_aes_gcm::{caps, AesGcm, DecryptTask, EncryptTask, Key, KeyType, Op, FLUSH_STATUS};
use doca_buf::{Buf, Inventory};
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe, Topology};
use doca_mmap::{AccessFlags, Mmap};

use crate::support::{started_inventory, until};

/// Test case 16 of the GCM specification (McGrew and Viega): a 256-bit key, a 96-bit IV,
/// 20 bytes of AAD, 60 bytes of plaintext.
const TC16_KEY: &str = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308";
const TC16_IV: &str = "cafebabefacedbaddecaf888";
const TC16_AAD: &str = "feedfacedeadbeeffeedfacedeadbeefabaddad2";
const TC16_PT: &str = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39";
const TC16_CT: &str = "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662";
const TC16_TAG: &str = "76fc6ece0f4e1768cddf8853bb2d551b";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The AAD ‖ plaintext of test case 16, and what an encrypt task writes for it with a tag of
/// `tag` bytes: AAD ‖ ciphertext ‖ tag (a 12-byte tag is the 16-byte one cut short).
fn tc16(tag: usize) -> (Vec<u8>, Vec<u8>) {
    let aad = unhex(TC16_AAD);
    let input = [aad.clone(), unhex(TC16_PT)].concat();
    let output = [aad, unhex(TC16_CT), unhex(TC16_TAG)[..tag].to_vec()].concat();
    (input, output)
}

/// Completions seen: (task user data, status, destination data).
type Seen = Rc<RefCell<Vec<(u64, Result<(), Error>, Vec<u8>)>>>;

fn dst_data(b: Option<Buf>) -> Vec<u8> {
    b.map_or(Vec::new(), |d| d.data_to_vec().unwrap())
}

struct Rig {
    pe: Pe,
    gcm: AesGcm,
    dev: Dev,
    inv: Inventory,
    seen: Seen,
}

/// An AES-GCM context on b1:00.0, configured (4 encrypt and 4 decrypt tasks), started.
fn rig() -> Rig {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let pe = Pe::create().unwrap();
    let gcm = AesGcm::create(&dev).unwrap();
    pe.connect_ctx(&gcm.as_ctx()).unwrap();
    let seen: Seen = Rc::default();
    let enc = |seen: &Seen| {
        let seen = seen.clone();
        move |t: EncryptTask, td: Data, _| {
            seen.borrow_mut().push((td.as_u64(), t.status(), dst_data(t.dst())))
        }
    };
    let dec = |seen: &Seen| {
        let seen = seen.clone();
        move |t: DecryptTask, td: Data, _| {
            seen.borrow_mut().push((td.as_u64(), t.status(), dst_data(t.dst())))
        }
    };
    gcm.task_encrypt_set_conf(enc(&seen), enc(&seen), 4).unwrap();
    gcm.task_decrypt_set_conf(dec(&seen), dec(&seen), 4).unwrap();
    gcm.as_ctx().start().unwrap();
    Rig { pe, gcm, dev, inv: started_inventory(32), seen }
}

impl Rig {
    /// A buffer holding `data` in a started read-write map added to the device.
    fn src(&self, data: &[u8]) -> (Mmap, Buf) {
        let m = map(&self.dev, data.to_vec());
        let b = self.inv.buf_get_data_at(&m, 0, data.len()).unwrap();
        (m, b)
    }

    /// An empty buffer with `room` bytes of room.
    fn dst(&self, room: usize) -> (Mmap, Buf) {
        let m = map(&self.dev, vec![0; room]);
        let b = self.inv.buf_get_at(&m, 0, room).unwrap();
        (m, b)
    }

    fn tc16_key(&self) -> Key {
        self.gcm.key_create(&unhex(TC16_KEY), KeyType::Aes256).unwrap()
    }

    /// Progress until `n` completions were seen.
    fn wait(&self, n: usize) {
        until(&self.pe, || self.seen.borrow().len() >= n);
    }
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

fn device_of(topology: &str) -> Dev {
    let t = Topology::parse("t", topology).unwrap();
    t.devinfo_list().unwrap()[0].open().unwrap()
}

#[test]
fn doca_aes_gcm_create_not_supported_without_aes_gcm_and_destroy_bad_state_while_running() {
    let none = device_of("device 03:00.0 dpu\ncap aes_gcm.encrypt 0\ncap aes_gcm.decrypt 0\n");
    assert_eq!(AesGcm::create(&none).map(|_| ()), Err(Error::NotSupported));
    let half = device_of("device 03:00.0 dpu\ncap aes_gcm.decrypt 0\n");
    assert!(AesGcm::create(&half).is_ok(), "encrypt tasks alone are AES-GCM");
    let r = rig();
    let gcm = match r.gcm.destroy() {
        Err(refused) => {
            assert_eq!(refused.error, Error::BadState, "destroy while Running");
            refused.value
        }
        Ok(()) => panic!("destroy of a running context must be BAD_STATE"),
    };
    gcm.as_ctx().stop().unwrap();
    until(&r.pe, || gcm.as_ctx().state() == CtxState::Idle);
    assert!(gcm.destroy().is_ok());
}

#[test]
fn doca_aes_gcm_cap_get_max_num_tasks_bounds_both_pools_together() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let gcm = AesGcm::create(&dev).unwrap();
    assert_eq!(gcm.cap_get_max_num_tasks(), Ok(16384));
    gcm.task_encrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 16384).unwrap();
    assert_eq!(gcm.task_decrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 1), Err(Error::InvalidValue));
    let small = device_of("device b1:00.0 host\ncap aes_gcm.max_num_tasks 8\n");
    let gcm = AesGcm::create(&small).unwrap();
    assert_eq!(gcm.cap_get_max_num_tasks(), Ok(8));
    assert_eq!(gcm.task_encrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 9), Err(Error::InvalidValue));
}

#[test]
fn doca_aes_gcm_cap_task_encrypt_and_decrypt_queries_default_on_every_device() {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let info = dev.as_devinfo();
    for op in [Op::Encrypt, Op::Decrypt] {
        assert_eq!(caps::task_is_supported(info, op), Ok(()), "{}", op.name());
        assert_eq!(caps::max_iv_len(info, op), Ok(12));
        assert_eq!(caps::tag_96_is_supported(info, op), Ok(()));
        assert_eq!(caps::tag_128_is_supported(info, op), Ok(()));
        assert_eq!(caps::key_type_is_supported(info, op, KeyType::Aes128), Ok(()));
        assert_eq!(caps::key_type_is_supported(info, op, KeyType::Aes256), Ok(()));
        assert_eq!(caps::max_buf_size(info, op), Ok(2 << 20));
        assert_eq!(caps::max_list_buf_num_elem(info, op), Ok(16));
    }
}

/// Each query answers `NOT_SUPPORTED` for what the topology takes away, and for every
/// question about a task type the device lacks.
#[test]
fn doca_aes_gcm_cap_task_decrypt_is_supported_not_supported_where_the_topology_takes_it_away() {
    let t = Topology::parse(
        "t",
        "device b1:00.0 host\ncap aes_gcm.decrypt 0\ncap aes_gcm.key_128 0\ncap aes_gcm.tag_96 0\ncap aes_gcm.max_iv_len 8\n",
    )
    .unwrap();
    let info = &t.devinfo_list().unwrap()[0];
    assert_eq!(caps::task_is_supported(info, Op::Decrypt), Err(Error::NotSupported));
    assert_eq!(caps::max_iv_len(info, Op::Decrypt), Err(Error::NotSupported));
    assert_eq!(caps::max_buf_size(info, Op::Decrypt), Err(Error::NotSupported));
    assert_eq!(caps::tag_128_is_supported(info, Op::Decrypt), Err(Error::NotSupported));
    assert_eq!(caps::task_is_supported(info, Op::Encrypt), Ok(()));
    assert_eq!(caps::max_iv_len(info, Op::Encrypt), Ok(8));
    assert_eq!(caps::key_type_is_supported(info, Op::Encrypt, KeyType::Aes128), Err(Error::NotSupported));
    assert_eq!(caps::key_type_is_supported(info, Op::Encrypt, KeyType::Aes256), Ok(()));
    assert_eq!(caps::tag_96_is_supported(info, Op::Encrypt), Err(Error::NotSupported));
    assert_eq!(caps::tag_128_is_supported(info, Op::Encrypt), Ok(()));
    let typo = Topology::parse("t", "device b1:00.0 host\ncap aes_gcm.tag96 0\n").unwrap();
    assert!(caps::tag_96_is_supported(&typo.devinfo_list().unwrap()[0], Op::Encrypt).is_err());
}

#[test]
fn doca_aes_gcm_key_create_invalid_value_for_the_wrong_length_and_not_supported_when_taken_away() {
    let r = rig();
    assert!(r.gcm.key_create(&[1; 16], KeyType::Aes128).is_ok());
    assert!(r.gcm.key_create(&[1; 32], KeyType::Aes256).is_ok());
    assert_eq!(r.gcm.key_create(&[1; 32], KeyType::Aes128).map(|_| ()), Err(Error::InvalidValue));
    assert_eq!(r.gcm.key_create(&[1; 24], KeyType::Aes256).map(|_| ()), Err(Error::InvalidValue));
    assert_eq!((KeyType::from_raw(1), KeyType::from_raw(2)), (Some(KeyType::Aes128), Some(KeyType::Aes256)));
    assert_eq!(KeyType::from_raw(3), None, "another enum value (INVALID_VALUE in C)");
    let no256 = device_of("device b1:00.0 host\ncap aes_gcm.key_256 0\n");
    let gcm = AesGcm::create(&no256).unwrap();
    assert_eq!(gcm.key_create(&[1; 32], KeyType::Aes256).map(|_| ()), Err(Error::NotSupported));
    assert!(gcm.key_create(&[1; 16], KeyType::Aes128).is_ok(), "any context state: Idle here");
}

/// A context with a live key is not destroyed (`IN_USE`, the context back); destroying the key,
/// or dropping its last clone, frees it.
#[test]
fn doca_aes_gcm_destroy_in_use_while_a_key_lives() {
    let dev = device_of("device b1:00.0 host\n");
    let gcm = AesGcm::create(&dev).unwrap();
    let (a, b) = (
        gcm.key_create(&[1; 16], KeyType::Aes128).unwrap(),
        gcm.key_create(&[2; 32], KeyType::Aes256).unwrap(),
    );
    let b2 = b.clone();
    let refused = |gcm: AesGcm| match gcm.destroy() {
        Err(r) => {
            assert_eq!(r.error, Error::InUse);
            r.value
        }
        Ok(()) => panic!("destroyed with a live key"),
    };
    let gcm = refused(gcm);
    a.destroy().unwrap();
    drop(b);
    let gcm = refused(gcm); // a clone of the second key still lives
    drop(b2);
    assert!(gcm.destroy().is_ok(), "every key destroyed or dropped");
    let gcm = AesGcm::create(&dev).unwrap();
    drop(gcm.key_create(&[1; 16], KeyType::Aes128).unwrap());
    assert!(gcm.destroy().is_ok(), "a dropped key frees its context");
}

/// A destroyed key: a second destroy is `BAD_STATE`, and a task naming it fails with
/// `BAD_STATE` when the engine reaches it.
#[test]
fn doca_aes_gcm_key_destroy_bad_state_twice_and_for_a_task_still_naming_it() {
    let r = rig();
    let key = r.tc16_key();
    let (input, _) = tc16(16);
    let (_ms, src) = r.src(&input);
    let (_md, dst) = r.dst(128);
    let t = r
        .gcm
        .task_encrypt_alloc_init(
            Some(&src),
            Some(&dst),
            Some(&key),
            &unhex(TC16_IV),
            16,
            20,
            Data::from_u64(1),
        )
        .unwrap();
    key.clone().destroy().unwrap();
    assert!(!key.is_live());
    assert_eq!(key.clone().destroy(), Err(Error::BadState));
    t.submit().map_err(|r| r.error).unwrap();
    r.wait(1);
    assert_eq!(r.seen.borrow()[0].1, Err(Error::BadState));
    assert!(r.seen.borrow()[0].2.is_empty(), "nothing written");
}

#[test]
fn doca_aes_gcm_task_set_conf_bad_state_while_running() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let gcm = AesGcm::create(&dev).unwrap();
    assert_eq!(
        gcm.task_encrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 0),
        Ok(()),
        "0 tasks: accepted, as DOCA's library does"
    );
    let r = rig();
    assert_eq!(r.gcm.task_encrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 1), Err(Error::BadState));
    assert_eq!(r.gcm.task_decrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 1), Err(Error::BadState));
}

#[test]
fn doca_aes_gcm_task_encrypt_alloc_init_bad_state_when_idle_no_memory_when_out_invalid_value_for_iv_and_tag()
{
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let gcm = AesGcm::create(&dev).unwrap();
    gcm.task_encrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
    gcm.task_decrypt_set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
    assert_eq!(
        gcm.task_encrypt_alloc_init(None, None, None, &[0; 12], 16, 0, Data::NONE).err(),
        Some(Error::BadState)
    );
    assert_eq!(
        gcm.task_decrypt_alloc_init(None, None, None, &[0; 12], 16, 0, Data::NONE).err(),
        Some(Error::BadState)
    );
    let r = rig();
    let alloc = |iv: &[u8], tag| r.gcm.task_encrypt_alloc_init(None, None, None, iv, tag, 0, Data::NONE);
    assert_eq!(alloc(&[0; 13], 16).err(), Some(Error::InvalidValue), "an IV above 12 bytes");
    for tag in [0, 8, 15, 32] {
        assert_eq!(alloc(&[0; 12], tag).err(), Some(Error::InvalidValue), "a tag of {tag} bytes");
    }
    let tasks: Vec<EncryptTask> = (0..4).map(|_| alloc(&[], 12).unwrap()).collect();
    assert_eq!(alloc(&[0; 12], 16).err(), Some(Error::NoMemory));
    let dec = r.gcm.task_decrypt_alloc_init(None, None, None, &[0; 12], 16, 0, Data::NONE);
    assert!(dec.is_ok(), "a pool per task type");
    drop(tasks);
    assert!(alloc(&[0; 12], 16).is_ok(), "freed tasks return");
}

#[test]
fn doca_aes_gcm_task_encrypt_set_and_get_src_dst_key_iv_tag_size_aad_size() {
    let r = rig();
    let key = r.tc16_key();
    let (_ms, src) = r.src(b"abc");
    let (_md, dst) = r.dst(64);
    let t = r.gcm.task_encrypt_alloc_init(None, None, None, &[9; 4], 12, 0, Data::from_u64(5)).unwrap();
    assert!(t.src().is_none() && t.dst().is_none() && t.key().is_none());
    assert_eq!((t.iv(), t.iv_len(), t.tag_size(), t.aad_size()), (vec![9; 4], 4, 12, 0));
    t.set_src(Some(&src));
    t.set_dst(Some(&dst));
    t.set_key(Some(&key));
    t.set_iv(&unhex(TC16_IV));
    t.set_tag_size(16);
    t.set_aad_size(3);
    assert_eq!((t.src(), t.dst()), (Some(src), Some(dst)));
    assert!(t.key().unwrap().same(&key));
    assert_eq!((t.iv(), t.iv_len(), t.tag_size(), t.aad_size()), (unhex(TC16_IV), 12, 16, 3));
    assert_eq!(t.user_data().as_u64(), 5);
    t.set_iv(&[0; 13]);
    assert_eq!((t.iv(), t.iv_len()), (vec![], 13), "kept as set, refused at submission");
}

#[test]
fn doca_aes_gcm_task_decrypt_set_and_get_src_dst_key_iv_tag_size_aad_size() {
    let r = rig();
    let key = r.tc16_key();
    let (_ms, src) = r.src(b"abc");
    let t =
        r.gcm.task_decrypt_alloc_init(Some(&src), None, Some(&key), &[], 16, 2, Data::from_u64(6)).unwrap();
    assert_eq!((t.src(), t.dst()), (Some(src), None));
    assert_eq!((t.iv_len(), t.tag_size(), t.aad_size()), (0, 16, 2));
    t.set_key(None);
    t.set_iv(&[7; 8]);
    t.set_tag_size(12);
    t.set_aad_size(0);
    assert!(t.key().is_none());
    assert_eq!((t.iv(), t.tag_size(), t.aad_size(), t.user_data().as_u64()), (vec![7; 8], 12, 0, 6));
}

/// The layout: AAD ‖ plaintext in, AAD ‖ ciphertext ‖ tag after the destination's data out
/// (its data length grows by the output); the completion comes from progress, never submit.
#[test]
fn doca_aes_gcm_task_encrypt_alloc_init_completes_in_progress_with_aad_ciphertext_and_tag() {
    let r = rig();
    let key = r.tc16_key();
    for (i, tag) in [16usize, 12].into_iter().enumerate() {
        let (input, output) = tc16(tag);
        let (_ms, src) = r.src(&input);
        let (_md, dst) = r.dst(4 + output.len());
        dst.set_data(dst.head().unwrap(), 4).unwrap(); // data already there: the output goes after it
        let t = r
            .gcm
            .task_encrypt_alloc_init(
                Some(&src),
                Some(&dst),
                Some(&key),
                &unhex(TC16_IV),
                tag as u32,
                20,
                Data::from_u64(i as u64),
            )
            .unwrap();
        t.submit().map_err(|r| r.error).unwrap();
        assert_eq!(r.seen.borrow().len(), i, "the engine's work, inside progress");
        r.wait(i + 1);
        let (ud, status, out) = r.seen.borrow()[i].clone();
        assert_eq!((ud, status), (i as u64, Ok(())));
        assert_eq!(out, [vec![0; 4], output].concat(), "tag of {tag} bytes");
    }
}

#[test]
fn doca_aes_gcm_task_decrypt_alloc_init_completes_with_aad_and_plaintext() {
    let r = rig();
    let key = r.tc16_key();
    let (plain, cipher) = tc16(12);
    let (_ms, src) = r.src(&cipher);
    let (_md, dst) = r.dst(plain.len());
    r.gcm
        .task_decrypt_alloc_init(
            Some(&src),
            Some(&dst),
            Some(&key),
            &unhex(TC16_IV),
            12,
            20,
            Data::from_u64(9),
        )
        .unwrap()
        .submit()
        .map_err(|r| r.error)
        .unwrap();
    r.wait(1);
    assert_eq!(r.seen.borrow()[0], (9, Ok(()), plain));
}

/// Ours: a tag that does not match fails the task with `IO_FAILED` and writes nothing; as any
/// failed task it is fatal to the context: the tasks queued behind complete with `SHUTDOWN`,
/// Idle once freed, and the context starts again.
#[test]
fn doca_aes_gcm_task_decrypt_set_conf_error_callback_a_tag_mismatch_stops_the_context() {
    let r = rig();
    let key = r.tc16_key();
    let (plain, mut cipher) = tc16(16);
    let (_ms, good) = r.src(&cipher);
    *cipher.last_mut().unwrap() ^= 1;
    let (_mb, bad) = r.src(&cipher);
    let dsts: Vec<_> = (0..3).map(|_| r.dst(128)).collect();
    for (i, (_, d)) in dsts.iter().enumerate() {
        let src = if i == 0 { &bad } else { &good };
        r.gcm
            .task_decrypt_alloc_init(
                Some(src),
                Some(d),
                Some(&key),
                &unhex(TC16_IV),
                16,
                20,
                Data::from_u64(i as u64),
            )
            .unwrap()
            .submit()
            .map_err(|r| r.error)
            .unwrap();
    }
    until(&r.pe, || r.gcm.as_ctx().state() == CtxState::Idle);
    let seen: Vec<_> = r.seen.borrow().iter().map(|(td, st, out)| (*td, *st, out.len())).collect();
    assert_eq!(seen, [(0, Err(Error::IoFailed), 0), (1, Err(FLUSH_STATUS), 0), (2, Err(FLUSH_STATUS), 0)]);
    r.gcm.as_ctx().start().unwrap();
    let (_md, dst) = r.dst(128);
    r.gcm
        .task_decrypt_alloc_init(
            Some(&good),
            Some(&dst),
            Some(&key),
            &unhex(TC16_IV),
            16,
            20,
            Data::from_u64(3),
        )
        .unwrap()
        .submit()
        .map_err(|r| r.error)
        .unwrap();
    r.wait(4);
    assert_eq!(r.seen.borrow()[3], (3, Ok(()), plain), "the restarted context decrypts");
}

/// try_submit makes the engine's checks first: INVALID_VALUE, the task back, and the context
/// still Running (a refusal is no failure).
#[test]
fn doca_aes_gcm_task_encrypt_try_submit_invalid_value_below_the_output_length() {
    let r = rig();
    let key = r.tc16_key();
    let (input, output) = tc16(16);
    let (_ms, src) = r.src(&input);
    let (_md, small) = r.dst(output.len() - 1);
    let t = r
        .gcm
        .task_encrypt_alloc_init(Some(&src), Some(&small), Some(&key), &unhex(TC16_IV), 16, 20, Data::NONE)
        .unwrap();
    let refused = t.try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue);
    assert_eq!(r.gcm.as_ctx().state(), CtxState::Running);
    refused.value.set_aad_size(input.len() as u32 + 1);
    let refused = refused.value.try_submit().unwrap_err();
    assert_eq!(refused.error, Error::InvalidValue, "AAD above the source");
}

/// Buffers the device may not reach: a map not added to it, and a destination whose map
/// lacks `LOCAL_READ_WRITE`, are `NOT_PERMITTED` (as the task's status).
#[test]
fn doca_aes_gcm_task_encrypt_set_dst_not_permitted_for_a_map_the_device_may_not_write() {
    let r = rig();
    let key = r.tc16_key();
    let (input, _) = tc16(16);
    let (_ms, src) = r.src(&input);
    let unadded = Mmap::create().unwrap();
    unadded.set_memrange(vec![0; 128]).unwrap();
    unadded.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    unadded.start().unwrap();
    let read_only = Mmap::create().unwrap();
    read_only.set_memrange(vec![0; 128]).unwrap();
    read_only.set_permissions(AccessFlags::PCI_READ_ONLY).unwrap();
    read_only.add_dev(&r.dev).unwrap();
    read_only.start().unwrap();
    for (i, m) in [unadded, read_only].iter().enumerate() {
        let dst = r.inv.buf_get_at(m, 0, 128).unwrap();
        let t = r
            .gcm
            .task_encrypt_alloc_init(Some(&src), Some(&dst), Some(&key), &unhex(TC16_IV), 16, 20, Data::NONE)
            .unwrap();
        t.submit().map_err(|r| r.error).unwrap();
        r.wait(i + 1);
        assert_eq!(r.seen.borrow()[i].1, Err(Error::NotPermitted), "case {i}");
        until(&r.pe, || r.gcm.as_ctx().state() == CtxState::Idle);
        r.gcm.as_ctx().start().unwrap();
    }
}

/// Ours: an IV shorter than 12 bytes is GCM's general IV (J0 from GHASH), not the IV padded
/// with zeros: test case 17's 8-byte IV gives the specification's ciphertext.
#[test]
fn doca_aes_gcm_task_encrypt_set_iv_a_short_iv_is_gcms_ghash_derived_j0() {
    let r = rig();
    let key = r.tc16_key();
    let (input, _) = tc16(16);
    let (_ms, src) = r.src(&input);
    let (_md, dst) = r.dst(128);
    let t =
        r.gcm.task_encrypt_alloc_init(Some(&src), Some(&dst), Some(&key), &[], 16, 20, Data::NONE).unwrap();
    t.set_iv(&unhex("cafebabefacedbad"));
    t.submit().map_err(|r| r.error).unwrap();
    r.wait(1);
    let out = r.seen.borrow()[0].2.clone();
    let tc17_ct = "c3762df1ca787d32ae47c13bf19844cbaf1ae14d0b976afac52ff7d79bba9de0feb582d33934a4f0954cc2363bc73f7862ac430e64abe499f47c9b1f";
    let tc17_tag = "3a337dbf46a792c45e454913fe2ea8f2";
    assert_eq!(out, [unhex(TC16_AAD), unhex(tc17_ct), unhex(tc17_tag)].concat());
}
