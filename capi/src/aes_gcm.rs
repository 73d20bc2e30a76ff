//! `doca_aes_gcm.h`: AES-GCM contexts, their keys, and their encrypt and decrypt tasks (the
//! whole header: the 50 functions of DOCA 2.6, the same to 3.3, plus the two 2.5 spellings
//! `doca_aes_gcm_cap_task_{encrypt,decrypt}_get_max_iv_length`). The cipher work is the
//! emulated engine's inside `doca_pe_progress`; see the `doca_aes_gcm` crate for the data
//! layout, the checks, the statuses and what is ours where DOCA documents nothing (IVs
//! shorter than 12 bytes, a tag mismatch).

use std::rc::Rc;

use doca_aes_gcm::{caps, AesGcm, DecryptTask, EncryptTask, Key, KeyType, Op, MAX_IV_LEN};
use doca_core::Data;

use crate::buf::DocaBuf;
use crate::check::{non_null, note, out};
use crate::ctx::{DocaCtx, DocaData};
use crate::dev::{DocaDev, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::libctx::{self, opt_buf, LibCtx, Library};
use crate::task::{as_task, complete, task, AnyTask, DocaTask, Of};
use crate::{guarded, invalid, DocaError};

/// `struct doca_aes_gcm`: the context, its context handle and its tasks' handles.
pub type DocaAesGcm = LibCtx<AesGcm>;

/// `struct doca_aes_gcm_key`: a key of one context.
pub struct DocaAesGcmKey(Key);

impl Library for AesGcm {
    fn ctx(&self) -> doca_core::Ctx {
        self.as_ctx()
    }
    fn destroy(self) -> doca_core::Result<()> {
        AesGcm::destroy(self).map_err(|r| r.error)
    }
    fn check_destroy(&self) -> doca_core::Result<()> {
        AesGcm::check_destroy(self)
    }
}

static CTXS: Handles = Handles::new(Kind::AesGcm);
static KEYS: Handles = Handles::new(Kind::AesGcmKey);

fn gcm<'a>(p: *const DocaAesGcm) -> Option<&'a DocaAesGcm> {
    libctx::get(&CTXS, p)
}

fn key<'a>(p: *const DocaAesGcmKey) -> Option<&'a DocaAesGcmKey> {
    // SAFETY: KEYS only holds DocaAesGcmKey handles.
    unsafe { KEYS.get(p) }
}

/// A key argument that may be NULL (none yet): `Err` for a non-NULL handle that is not a
/// live key.
fn opt_key<'a>(p: *const DocaAesGcmKey) -> Result<Option<&'a Key>, ()> {
    if p.is_null() {
        return Ok(None);
    }
    key(p).map(|k| Some(&k.0)).ok_or(())
}

/// `doca_aes_gcm_task_encrypt_completion_cb_t` and `doca_aes_gcm_task_decrypt_completion_cb_t`.
pub type AesGcmTaskCb = Option<unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData)>;

/// `enum doca_aes_gcm_key_type` as C passes it (`None`, noted for the log, for another value).
fn key_type(v: u32) -> Option<KeyType> {
    let t = KeyType::from_raw(v);
    if t.is_none() {
        note(|| format!("{v} is not an enum doca_aes_gcm_key_type value (1: 128-bit, 2: 256-bit)"));
    }
    t
}

/// The IV C gave: `None` (noted) for a NULL pointer with a length, `Some(Err(len))` for a
/// length above 12 (whose bytes are not read), else the bytes.
///
/// # Safety
/// `iv` is NULL or readable for `iv_length` bytes when `iv_length` is at most 12.
unsafe fn iv_arg<'a>(iv: *const u8, iv_length: u32) -> Option<Result<&'a [u8], u32>> {
    if iv_length as usize > MAX_IV_LEN {
        return Some(Err(iv_length));
    }
    if iv_length == 0 {
        return Some(Ok(&[]));
    }
    if iv.is_null() {
        note(|| format!("iv is NULL with iv_length {iv_length}"));
        return None;
    }
    // SAFETY: the caller's contract: `iv` readable for `iv_length` (at most 12) bytes.
    Some(Ok(unsafe { std::slice::from_raw_parts(iv, iv_length as usize) }))
}

/// The task behind `p` if it is an encrypt task.
fn enc<R>(p: *const DocaTask, f: impl FnOnce(&EncryptTask) -> R) -> Option<R> {
    task(p)?.with(|t| match t {
        AnyTask::AesGcmEncrypt(t) => Some(f(t)),
        _ => None,
    })?
}

/// The task behind `p` if it is a decrypt task.
fn dec<R>(p: *const DocaTask, f: impl FnOnce(&DecryptTask) -> R) -> Option<R> {
    task(p)?.with(|t| match t {
        AnyTask::AesGcmDecrypt(t) => Some(f(t)),
        _ => None,
    })?
}

/// `doca_aes_gcm_create`: an AES-GCM context on `dev` (`NOT_SUPPORTED` when the topology
/// gives the device no AES-GCM).
///
/// # Safety
/// `aes_gcm` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_aes_gcm_create(dev: *mut DocaDev, aes_gcm: *mut *mut DocaAesGcm) -> DocaError {
    guarded("doca_aes_gcm_create", || libctx::create(&CTXS, dev, aes_gcm, "aes_gcm", AesGcm::create))
}

/// `doca_aes_gcm_destroy`: Idle only (`BAD_STATE`, the context stays); its context's and
/// tasks' handles go with it (its keys' handles stay until destroyed).
///
/// # Safety
/// `aes_gcm` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_aes_gcm_destroy(aes_gcm: *mut DocaAesGcm) -> DocaError {
    guarded("doca_aes_gcm_destroy", || {
        // SAFETY: the caller's contract, as `libctx::destroy` states it.
        unsafe { libctx::destroy(&CTXS, aes_gcm) }
    })
}

/// `doca_aes_gcm_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_aes_gcm_as_ctx(aes_gcm: *mut DocaAesGcm) -> *mut DocaCtx {
    crate::shielded("doca_aes_gcm_as_ctx", std::ptr::null_mut(), || libctx::as_ctx(&CTXS, aes_gcm))
}

/// `doca_aes_gcm_cap_get_max_num_tasks`: encrypt and decrypt tasks together.
///
/// # Safety
/// `max_num_tasks` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_aes_gcm_cap_get_max_num_tasks(
    aes_gcm: *mut DocaAesGcm,
    max_num_tasks: *mut u32,
) -> DocaError {
    guarded("doca_aes_gcm_cap_get_max_num_tasks", || match gcm(aes_gcm) {
        Some(g) => match g.obj.cap_get_max_num_tasks() {
            Ok(n) => out(max_num_tasks, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// `doca_aes_gcm_key_create`: a 128- or 256-bit key read from `raw_key` (16 or 32 bytes);
/// a number that is no `enum doca_aes_gcm_key_type` is `INVALID_VALUE` (as DOCA 2.5's
/// library answers; `NOT_SUPPORTED` is for a valid type the device lacks).
///
/// # Safety
/// `raw_key` is NULL or readable for the key type's length; `key` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_aes_gcm_key_create(
    aes_gcm: *mut DocaAesGcm,
    raw_key: *const core::ffi::c_void,
    raw_key_type: u32,
    key: *mut *mut DocaAesGcmKey,
) -> DocaError {
    guarded("doca_aes_gcm_key_create", || {
        let Some(g) = gcm(aes_gcm) else { return invalid() };
        if let Err(e) = non_null(raw_key, "raw_key").and_then(|()| non_null(key, "key")) {
            return e;
        }
        let Some(t) = key_type(raw_key_type) else {
            return doca_core::fail!(
                doca_core::Error::InvalidValue,
                "aes_gcm: key type {raw_key_type}: only DOCA_AES_GCM_KEY_128 (1) and DOCA_AES_GCM_KEY_256 (2) are supported"
            )
            .code();
        };
        // SAFETY: the caller's contract: `raw_key` readable for the key type's length.
        let raw = unsafe { std::slice::from_raw_parts(raw_key as *const u8, t.key_len()) };
        match g.obj.key_create(raw, t) {
            Ok(k) => out(key, KEYS.add(DocaAesGcmKey(k))),
            Err(e) => e.code(),
        }
    })
}

/// `doca_aes_gcm_key_destroy`: tasks still naming the key fail with `BAD_STATE` when the
/// engine reaches them.
///
/// # Safety
/// `key` is NULL or a key handle, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_aes_gcm_key_destroy(key: *mut DocaAesGcmKey) -> DocaError {
    guarded("doca_aes_gcm_key_destroy", || {
        if self::key(key).is_none() {
            return invalid();
        }
        // SAFETY: KEYS only holds DocaAesGcmKey handles; freed once, here.
        match unsafe { KEYS.remove(key) } {
            Some(k) => doca_core::Error::code_of(&k.0.destroy()),
            None => invalid(),
        }
    })
}

/// The checks and answers of the per-task-type capability queries.
fn cap_devinfo(
    name: &'static str,
    devinfo: *const DocaDevinfo,
    f: impl FnOnce(&doca_core::DevInfo) -> DocaError,
) -> DocaError {
    guarded(name, || match crate::dev::devinfo(devinfo) {
        Some(d) => f(d),
        None => invalid(),
    })
}

macro_rules! caps_of {
    ($op:expr, $c:literal,
     $is_supported:ident, $max_iv_len:ident, $max_iv_length:ident, $tag_96:ident, $tag_128:ident,
     $key_type:ident, $max_buf_size:ident, $max_list:ident) => {
        #[doc = concat!("`doca_aes_gcm_cap_task_", $c, "_is_supported`.")]
        #[no_mangle]
        pub extern "C" fn $is_supported(devinfo: *const DocaDevinfo) -> DocaError {
            cap_devinfo(stringify!($is_supported), devinfo, |d| {
                doca_core::Error::code_of(&caps::task_is_supported(d, $op))
            })
        }

        #[doc = concat!("`doca_aes_gcm_cap_task_", $c, "_get_max_iv_len`: 12 unless the topology lowers it.")]
        ///
        /// # Safety
        /// `max_iv_len` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $max_iv_len(devinfo: *const DocaDevinfo, max_iv_len: *mut u32) -> DocaError {
            cap_devinfo(stringify!($max_iv_len), devinfo, |d| match caps::max_iv_len(d, $op) {
                Ok(n) => out(max_iv_len, n),
                Err(e) => e.code(),
            })
        }

        #[doc = concat!("`doca_aes_gcm_cap_task_", $c, "_get_max_iv_length` (the 2.5 name).")]
        ///
        /// # Safety
        /// `max_iv_length` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $max_iv_length(devinfo: *const DocaDevinfo, max_iv_length: *mut u32) -> DocaError {
            cap_devinfo(stringify!($max_iv_length), devinfo, |d| match caps::max_iv_len(d, $op) {
                Ok(n) => out(max_iv_length, n),
                Err(e) => e.code(),
            })
        }

        #[doc = concat!("`doca_aes_gcm_cap_task_", $c, "_is_tag_96_supported`.")]
        #[no_mangle]
        pub extern "C" fn $tag_96(devinfo: *const DocaDevinfo) -> DocaError {
            cap_devinfo(stringify!($tag_96), devinfo, |d| {
                doca_core::Error::code_of(&caps::tag_96_is_supported(d, $op))
            })
        }

        #[doc = concat!("`doca_aes_gcm_cap_task_", $c, "_is_tag_128_supported`.")]
        #[no_mangle]
        pub extern "C" fn $tag_128(devinfo: *const DocaDevinfo) -> DocaError {
            cap_devinfo(stringify!($tag_128), devinfo, |d| {
                doca_core::Error::code_of(&caps::tag_128_is_supported(d, $op))
            })
        }

        #[doc = concat!("`doca_aes_gcm_cap_task_", $c, "_is_key_type_supported`: another key type than 1 or 2 is `INVALID_VALUE` (DOCA's library's answer).")]
        #[no_mangle]
        pub extern "C" fn $key_type(devinfo: *const DocaDevinfo, key_type: u32) -> DocaError {
            cap_devinfo(stringify!($key_type), devinfo, |d| match self::key_type(key_type) {
                Some(t) => doca_core::Error::code_of(&caps::key_type_is_supported(d, $op, t)),
                None => doca_core::Error::InvalidValue.code(),
            })
        }

        #[doc = concat!("`doca_aes_gcm_cap_task_", $c, "_get_max_buf_size`.")]
        ///
        /// # Safety
        /// `max_buffer_size` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $max_buf_size(devinfo: *const DocaDevinfo, max_buffer_size: *mut u64) -> DocaError {
            cap_devinfo(stringify!($max_buf_size), devinfo, |d| match caps::max_buf_size(d, $op) {
                Ok(n) => out(max_buffer_size, n),
                Err(e) => e.code(),
            })
        }

        #[doc = concat!("`doca_aes_gcm_cap_task_", $c, "_get_max_list_buf_num_elem`.")]
        ///
        /// # Safety
        /// `max_list_num_elem` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $max_list(devinfo: *const DocaDevinfo, max_list_num_elem: *mut u32) -> DocaError {
            cap_devinfo(stringify!($max_list), devinfo, |d| match caps::max_list_buf_num_elem(d, $op) {
                Ok(n) => out(max_list_num_elem, n),
                Err(e) => e.code(),
            })
        }
    };
}

caps_of!(
    Op::Encrypt,
    "encrypt",
    doca_aes_gcm_cap_task_encrypt_is_supported,
    doca_aes_gcm_cap_task_encrypt_get_max_iv_len,
    doca_aes_gcm_cap_task_encrypt_get_max_iv_length,
    doca_aes_gcm_cap_task_encrypt_is_tag_96_supported,
    doca_aes_gcm_cap_task_encrypt_is_tag_128_supported,
    doca_aes_gcm_cap_task_encrypt_is_key_type_supported,
    doca_aes_gcm_cap_task_encrypt_get_max_buf_size,
    doca_aes_gcm_cap_task_encrypt_get_max_list_buf_num_elem
);
caps_of!(
    Op::Decrypt,
    "decrypt",
    doca_aes_gcm_cap_task_decrypt_is_supported,
    doca_aes_gcm_cap_task_decrypt_get_max_iv_len,
    doca_aes_gcm_cap_task_decrypt_get_max_iv_length,
    doca_aes_gcm_cap_task_decrypt_is_tag_96_supported,
    doca_aes_gcm_cap_task_decrypt_is_tag_128_supported,
    doca_aes_gcm_cap_task_decrypt_is_key_type_supported,
    doca_aes_gcm_cap_task_decrypt_get_max_buf_size,
    doca_aes_gcm_cap_task_decrypt_get_max_list_buf_num_elem
);

/// `doca_aes_gcm_task_encrypt_set_conf`: Idle only; `num_tasks` tasks (1 or more; with the
/// decrypt tasks' at most `aes_gcm.max_num_tasks`).
#[no_mangle]
pub extern "C" fn doca_aes_gcm_task_encrypt_set_conf(
    aes_gcm: *mut DocaAesGcm,
    task_completion_cb: AesGcmTaskCb,
    task_error_cb: AesGcmTaskCb,
    num_tasks: u32,
) -> DocaError {
    guarded("doca_aes_gcm_task_encrypt_set_conf", || {
        let (Some(d), Some(done), Some(failed)) = (gcm(aes_gcm), task_completion_cb, task_error_cb) else {
            return invalid();
        };
        let (w1, w2) = (Rc::downgrade(&d.tasks), Rc::downgrade(&d.tasks));
        let r = d.obj.task_encrypt_set_conf(
            move |t: EncryptTask, td: Data, cd: Data| complete(&w1, done, AnyTask::AesGcmEncrypt(t), td, cd),
            move |t: EncryptTask, td: Data, cd: Data| {
                complete(&w2, failed, AnyTask::AesGcmEncrypt(t), td, cd)
            },
            num_tasks,
        );
        doca_core::Error::code_of(&r)
    })
}

/// `doca_aes_gcm_task_decrypt_set_conf`: as the encrypt tasks'.
#[no_mangle]
pub extern "C" fn doca_aes_gcm_task_decrypt_set_conf(
    aes_gcm: *mut DocaAesGcm,
    task_completion_cb: AesGcmTaskCb,
    task_error_cb: AesGcmTaskCb,
    num_tasks: u32,
) -> DocaError {
    guarded("doca_aes_gcm_task_decrypt_set_conf", || {
        let (Some(d), Some(done), Some(failed)) = (gcm(aes_gcm), task_completion_cb, task_error_cb) else {
            return invalid();
        };
        let (w1, w2) = (Rc::downgrade(&d.tasks), Rc::downgrade(&d.tasks));
        let r = d.obj.task_decrypt_set_conf(
            move |t: DecryptTask, td: Data, cd: Data| complete(&w1, done, AnyTask::AesGcmDecrypt(t), td, cd),
            move |t: DecryptTask, td: Data, cd: Data| {
                complete(&w2, failed, AnyTask::AesGcmDecrypt(t), td, cd)
            },
            num_tasks,
        );
        doca_core::Error::code_of(&r)
    })
}

/// What an alloc_init hands to the Rust call.
struct Args<'a> {
    src: Option<&'a doca_buf::Buf>,
    dst: Option<&'a doca_buf::Buf>,
    key: Option<&'a Key>,
    iv: &'a [u8],
}

/// The common part of both alloc_inits: argument checks, then `alloc` and the handle.
///
/// # Safety
/// `iv` as [`iv_arg`] states.
#[allow(clippy::too_many_arguments)] // DOCA's alloc_init, argument for argument
unsafe fn alloc_init(
    aes_gcm: *mut DocaAesGcm,
    src: *const DocaBuf,
    dst: *mut DocaBuf,
    key: *mut DocaAesGcmKey,
    iv: *const u8,
    iv_length: u32,
    task: *mut *mut DocaTask,
    alloc: impl FnOnce(&AesGcm, Args<'_>) -> doca_core::Result<AnyTask>,
) -> DocaError {
    let Some(d) = gcm(aes_gcm) else { return invalid() };
    let (Ok(s), Ok(t), Ok(k)) = (opt_buf(src), opt_buf(dst), opt_key(key)) else { return invalid() };
    if let Err(e) = non_null(task, "task") {
        return e;
    }
    // SAFETY: the caller's contract.
    let iv = match unsafe { iv_arg(iv, iv_length) } {
        Some(Ok(iv)) => iv,
        Some(Err(n)) => {
            return doca_core::fail!(
                doca_core::Error::InvalidValue,
                "aes_gcm: an IV of {n} bytes (0 to {MAX_IV_LEN} are supported)"
            )
            .code()
        }
        None => return invalid(),
    };
    match alloc(&d.obj, Args { src: s, dst: t, key: k, iv }) {
        Ok(any) => {
            let h = d.tasks.hand_out(any, src as *mut DocaBuf);
            if let Some(handle) = self::task(h) {
                handle.dst.set(dst);
                handle.key.set(key as *mut core::ffi::c_void);
            }
            out(task, h)
        }
        Err(e) => e.code(),
    }
}

/// `doca_aes_gcm_task_encrypt_alloc_init`: buffers and key may be NULL (set before
/// submission); an IV above 12 bytes or a tag size other than 12 or 16 is `INVALID_VALUE`.
/// Every task out: `NO_MEMORY`.
///
/// # Safety
/// `iv` is NULL or readable for `iv_length` bytes; `task` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // DOCA's alloc_init, argument for argument
pub unsafe extern "C" fn doca_aes_gcm_task_encrypt_alloc_init(
    aes_gcm: *mut DocaAesGcm,
    src_buff: *const DocaBuf,
    dst_buff: *mut DocaBuf,
    key: *mut DocaAesGcmKey,
    iv: *const u8,
    iv_length: u32,
    tag_size: u32,
    aad_size: u32,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_aes_gcm_task_encrypt_alloc_init", || {
        // SAFETY: the caller's contract.
        unsafe {
            alloc_init(aes_gcm, src_buff, dst_buff, key, iv, iv_length, task, |g, a| {
                g.task_encrypt_alloc_init(a.src, a.dst, a.key, a.iv, tag_size, aad_size, user_data.to_data())
                    .map(AnyTask::AesGcmEncrypt)
            })
        }
    })
}

/// `doca_aes_gcm_task_decrypt_alloc_init`: as the encrypt one's.
///
/// # Safety
/// `iv` is NULL or readable for `iv_length` bytes; `task` is NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // DOCA's alloc_init, argument for argument
pub unsafe extern "C" fn doca_aes_gcm_task_decrypt_alloc_init(
    aes_gcm: *mut DocaAesGcm,
    src_buff: *const DocaBuf,
    dst_buff: *mut DocaBuf,
    key: *mut DocaAesGcmKey,
    iv: *const u8,
    iv_length: u32,
    tag_size: u32,
    aad_size: u32,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_aes_gcm_task_decrypt_alloc_init", || {
        // SAFETY: the caller's contract.
        unsafe {
            alloc_init(aes_gcm, src_buff, dst_buff, key, iv, iv_length, task, |g, a| {
                g.task_decrypt_alloc_init(a.src, a.dst, a.key, a.iv, tag_size, aad_size, user_data.to_data())
                    .map(AnyTask::AesGcmDecrypt)
            })
        }
    })
}

/// `doca_aes_gcm_task_encrypt_as_task`: the same handle.
#[no_mangle]
pub extern "C" fn doca_aes_gcm_task_encrypt_as_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_aes_gcm_task_encrypt_as_task", task, Of::AesGcmEncrypt)
}

/// `doca_aes_gcm_task_decrypt_as_task`: the same handle.
#[no_mangle]
pub extern "C" fn doca_aes_gcm_task_decrypt_as_task(task: *mut DocaTask) -> *mut DocaTask {
    as_task("doca_aes_gcm_task_decrypt_as_task", task, Of::AesGcmDecrypt)
}

/// The C handle a task keeps of its source, destination or key.
#[derive(Clone, Copy)]
enum Slot {
    Src,
    Dst,
    Key,
}

fn keep(task: *mut DocaTask, p: *const core::ffi::c_void, slot: Slot) {
    if let Some(h) = self::task(task) {
        match slot {
            Slot::Src => h.buf.set(p as *mut DocaBuf),
            Slot::Dst => h.dst.set(p as *mut DocaBuf),
            Slot::Key => h.key.set(p as *mut core::ffi::c_void),
        }
    }
}

fn kept(task: *const DocaTask, is_kind: Option<()>, slot: Slot) -> *mut core::ffi::c_void {
    match (is_kind, self::task(task)) {
        (Some(()), Some(h)) => match slot {
            Slot::Src => h.buf.get() as *mut core::ffi::c_void,
            Slot::Dst => h.dst.get() as *mut core::ffi::c_void,
            Slot::Key => h.key.get(),
        },
        _ => std::ptr::null_mut(),
    }
}

/// The IV of a task for C: copied into the handle (where the pointer stays valid until the
/// task is freed or its IV set again), its length written to `iv_length` (when not NULL).
fn iv_out(task: *const DocaTask, iv: Option<(Vec<u8>, u32)>, iv_length: *mut u32) -> *const u8 {
    let (Some((bytes, len)), Some(h)) = (iv, self::task(task)) else { return std::ptr::null() };
    let mut copy = [0u8; doca_cc::proto::records::IMM_MAX];
    copy[..bytes.len()].copy_from_slice(&bytes);
    h.imm.set(copy);
    if !iv_length.is_null() {
        // `iv_length` is NULL or writable: the function's contract (DOCA's out-parameter).
        let _ = out(iv_length, len);
    }
    h.imm.as_ptr() as *const u8
}

macro_rules! task_accessors {
    ($with:ident, $c:literal,
     $set_src:ident, $get_src:ident, $set_dst:ident, $get_dst:ident, $set_key:ident, $get_key:ident,
     $set_iv:ident, $get_iv:ident, $set_tag:ident, $get_tag:ident, $set_aad:ident, $get_aad:ident) => {
        #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_src`: checked when the task is submitted (NULL: none).")]
        #[no_mangle]
        pub extern "C" fn $set_src(task: *mut DocaTask, src_buff: *const DocaBuf) {
            crate::shielded(stringify!($set_src), (), || {
                let Ok(b) = opt_buf(src_buff) else { return };
                if $with(task, |t| t.set_src(b)).is_some() {
                    keep(task, src_buff as *const core::ffi::c_void, Slot::Src);
                }
            })
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_src`: NULL when none is set.")]
        #[no_mangle]
        pub extern "C" fn $get_src(task: *const DocaTask) -> *const DocaBuf {
            crate::shielded(stringify!($get_src), std::ptr::null(), || {
                kept(task, $with(task, |_| ()), Slot::Src) as *const DocaBuf
            })
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_dst`: checked when the task is submitted (NULL: none).")]
        #[no_mangle]
        pub extern "C" fn $set_dst(task: *mut DocaTask, dst_buff: *mut DocaBuf) {
            crate::shielded(stringify!($set_dst), (), || {
                let Ok(b) = opt_buf(dst_buff) else { return };
                if $with(task, |t| t.set_dst(b)).is_some() {
                    keep(task, dst_buff as *const core::ffi::c_void, Slot::Dst);
                }
            })
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_dst`: NULL when none is set.")]
        #[no_mangle]
        pub extern "C" fn $get_dst(task: *const DocaTask) -> *mut DocaBuf {
            crate::shielded(stringify!($get_dst), std::ptr::null_mut(), || {
                kept(task, $with(task, |_| ()), Slot::Dst) as *mut DocaBuf
            })
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_key`: checked when the task is submitted (NULL: none).")]
        #[no_mangle]
        pub extern "C" fn $set_key(task: *mut DocaTask, key: *mut DocaAesGcmKey) {
            crate::shielded(stringify!($set_key), (), || {
                let Ok(k) = opt_key(key) else { return };
                if $with(task, |t| t.set_key(k)).is_some() {
                    keep(task, key as *const core::ffi::c_void, Slot::Key);
                }
            })
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_key`: the handle last set (NULL when none).")]
        #[no_mangle]
        pub extern "C" fn $get_key(task: *const DocaTask) -> *mut DocaAesGcmKey {
            crate::shielded(stringify!($get_key), std::ptr::null_mut(), || {
                kept(task, $with(task, |_| ()), Slot::Key) as *mut DocaAesGcmKey
            })
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_iv`: 0 to 12 bytes, copied; a longer IV (or NULL with a length) is logged and the task refused at submission.")]
        ///
        /// # Safety
        /// `iv` is NULL or readable for `iv_length` bytes when `iv_length` is at most 12.
        #[no_mangle]
        pub unsafe extern "C" fn $set_iv(task: *mut DocaTask, iv: *const u8, iv_length: u32) {
            crate::shielded(stringify!($set_iv), (), || {
                // SAFETY: the caller's contract.
                let arg = unsafe { iv_arg(iv, iv_length) };
                let r = $with(task, |t| match arg {
                    Some(Ok(iv)) => t.set_iv(iv),
                    Some(Err(n)) => t.set_iv_refused(n),
                    None => t.set_iv_refused(iv_length.max(MAX_IV_LEN as u32 + 1)),
                });
                if r.is_none() {
                    let _ = invalid();
                }
            })
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_iv`: a copy of the IV in the task's handle (NULL for a length above 12).")]
        ///
        /// # Safety
        /// `iv_length` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $get_iv(task: *const DocaTask, iv_length: *mut u32) -> *const u8 {
            crate::shielded(stringify!($get_iv), std::ptr::null(), || {
                let iv = $with(task, |t| (t.iv(), t.iv_len())).filter(|(_, n)| *n as usize <= MAX_IV_LEN);
                iv_out(task, iv, iv_length)
            })
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_tag_size`: 12 or 16 (another size is refused at submission).")]
        #[no_mangle]
        pub extern "C" fn $set_tag(task: *mut DocaTask, tag_size: u32) {
            crate::shielded(stringify!($set_tag), (), || {
                if $with(task, |t| t.set_tag_size(tag_size)).is_none() {
                    let _ = invalid();
                }
            })
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_tag_size`: 0 for a handle that is not such a task (logged).")]
        #[no_mangle]
        pub extern "C" fn $get_tag(task: *const DocaTask) -> u32 {
            crate::shielded(stringify!($get_tag), 0, || $with(task, |t| t.tag_size()).unwrap_or(0))
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_aad_size`.")]
        #[no_mangle]
        pub extern "C" fn $set_aad(task: *mut DocaTask, aad_size: u32) {
            crate::shielded(stringify!($set_aad), (), || {
                if $with(task, |t| t.set_aad_size(aad_size)).is_none() {
                    let _ = invalid();
                }
            })
        }

        #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_aad_size`: 0 for a handle that is not such a task (logged).")]
        #[no_mangle]
        pub extern "C" fn $get_aad(task: *const DocaTask) -> u32 {
            crate::shielded(stringify!($get_aad), 0, || $with(task, |t| t.aad_size()).unwrap_or(0))
        }
    };
}

task_accessors!(
    enc,
    "encrypt",
    doca_aes_gcm_task_encrypt_set_src,
    doca_aes_gcm_task_encrypt_get_src,
    doca_aes_gcm_task_encrypt_set_dst,
    doca_aes_gcm_task_encrypt_get_dst,
    doca_aes_gcm_task_encrypt_set_key,
    doca_aes_gcm_task_encrypt_get_key,
    doca_aes_gcm_task_encrypt_set_iv,
    doca_aes_gcm_task_encrypt_get_iv,
    doca_aes_gcm_task_encrypt_set_tag_size,
    doca_aes_gcm_task_encrypt_get_tag_size,
    doca_aes_gcm_task_encrypt_set_aad_size,
    doca_aes_gcm_task_encrypt_get_aad_size
);
task_accessors!(
    dec,
    "decrypt",
    doca_aes_gcm_task_decrypt_set_src,
    doca_aes_gcm_task_decrypt_get_src,
    doca_aes_gcm_task_decrypt_set_dst,
    doca_aes_gcm_task_decrypt_get_dst,
    doca_aes_gcm_task_decrypt_set_key,
    doca_aes_gcm_task_decrypt_get_key,
    doca_aes_gcm_task_decrypt_set_iv,
    doca_aes_gcm_task_decrypt_get_iv,
    doca_aes_gcm_task_decrypt_set_tag_size,
    doca_aes_gcm_task_decrypt_get_tag_size,
    doca_aes_gcm_task_decrypt_set_aad_size,
    doca_aes_gcm_task_decrypt_get_aad_size
);

// A compile-time check: the IV copy fits the handle's buffer.
const _: () = assert!(MAX_IV_LEN <= doca_cc::proto::records::IMM_MAX);
