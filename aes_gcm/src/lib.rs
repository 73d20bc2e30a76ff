//! DOCA AES-GCM (`doca_aes_gcm.h`): authenticated encrypt and decrypt tasks over buffers of
//! local memory maps, as a library context on core's plug-in interface. The cipher is
//! RustCrypto's `aes-gcm` (NIST SP 800-38D), byte for byte what OpenSSL and Python's
//! `cryptography` compute for the same key, IV, AAD and tag length.
//!
//! | DOCA                                          | here                                   |
//! |-----------------------------------------------|----------------------------------------|
//! | `struct doca_aes_gcm`, `doca_aes_gcm_create`/`_destroy`/`_as_ctx` | [`AesGcm`]: [`AesGcm::create`], [`AesGcm::destroy`], [`AesGcm::as_ctx`] |
//! | `doca_aes_gcm_cap_*`                          | [`caps`], [`AesGcm::cap_get_max_num_tasks`] |
//! | `struct doca_aes_gcm_key`, `enum doca_aes_gcm_key_type`, `doca_aes_gcm_key_create`/`_destroy` | [`Key`], [`KeyType`], [`AesGcm::key_create`], [`Key::destroy`] |
//! | `doca_aes_gcm_task_encrypt_set_conf`, `_alloc_init` | [`AesGcm::task_encrypt_set_conf`], [`AesGcm::task_encrypt_alloc_init`] |
//! | `struct doca_aes_gcm_task_encrypt` and its accessors | [`EncryptTask`]                  |
//! | `doca_aes_gcm_task_decrypt_set_conf`, `_alloc_init` | [`AesGcm::task_decrypt_set_conf`], [`AesGcm::task_decrypt_alloc_init`] |
//! | `struct doca_aes_gcm_task_decrypt` and its accessors | [`DecryptTask`]                  |
//!
//! **Data layout** (what DOCA's hardware does, as applications written for it read it back):
//! the first `aad_size` bytes of the source are the additional authenticated data, and they
//! are copied through to the destination unchanged.
//!
//! | task    | source data                        | written to the destination         |
//! |---------|------------------------------------|------------------------------------|
//! | encrypt | AAD ‖ plaintext                    | AAD ‖ ciphertext ‖ tag (`tag_size` bytes) |
//! | decrypt | AAD ‖ ciphertext ‖ tag             | AAD ‖ plaintext                    |
//!
//! As in DOCA DMA and SHA, the output lands in the destination's free room right after its
//! data (`data + data_len`) and its data length grows by the bytes written; a destination
//! list is filled element by element, each element's room in turn. A source list is read
//! element by element. Source and destination may share memory (in place, a destination
//! buffer over the source's bytes): the engine reads the whole source before it writes.
//!
//! **Ours, where DOCA documents nothing:**
//! - *IVs shorter than 12 bytes* (DOCA accepts 0 to 12): the IV is used as GCM's
//!   specification defines any IV other than 96 bits — the pre-counter block J0 is
//!   GHASH(IV ‖ zero padding ‖ 64-bit IV length in bits), not the IV zero-padded to 12
//!   bytes. So a 12-byte IV and the same IV shortened give different output, and an 8-byte IV
//!   matches OpenSSL's `EVP_CTRL_GCM_SET_IVLEN` 8. A 0-byte IV is accepted (J0 = 0), as DOCA
//!   accepts it; the specification asks for at least one bit, so do not use it for data you
//!   care about.
//! - *A tag mismatch* on decrypt: the task fails with `DOCA_ERROR_IO_FAILED` (the log line
//!   says "tag mismatch"), and nothing is written to the destination (no unauthenticated
//!   plaintext leaves the engine). Like every failed engine task, it is fatal to the context
//!   (see below).
//! - *A key type other than 128 or 256 bits* (any other `enum doca_aes_gcm_key_type` value):
//!   `INVALID_VALUE`, as DOCA's library answers it (a key type the topology takes away:
//!   `NOT_SUPPORTED`).
//!
//! **The engine.** A submitted task joins the context's queue (encrypt and decrypt tasks in
//! one queue, in submission order); the cipher work is the emulated engine's, done inside the
//! progress engine's `progress` (never in submit). A task is worked in one go (its tag covers
//! every byte); each pass works through tasks until [`caps::BYTES_PER_PASS`] bytes (1 MiB by
//! default) are spent. While tasks wait, the context asks to be polled. An encrypt task of
//! one source buffer and one destination buffer apart from it copies the source once into the
//! destination's room and encrypts it there; lists, a destination over the source's bytes
//! and decrypt tasks (which write nothing unless the tag matches) are worked in a scratch
//! buffer of the engine's, kept between tasks.
//!
//! **Checks and codes.** `doca_task_submit` does not validate: a bad task completes through
//! the error callback with its status when the engine reaches it, and the failure is fatal to
//! the context (core's [`doca_core::queue`] rule, DOCA's pe_task_error): it moves to
//! Stopping, every task still queued completes with [`FLUSH_STATUS`], and it reaches Idle once
//! they are freed. `doca_task_try_submit` (`try_submit`) makes the same checks first and
//! refuses a bad task with `INVALID_VALUE` (the log line says which check). The statuses:
//!
//! | the task                                                        | error callback status |
//! |-----------------------------------------------------------------|-----------------------|
//! | no source, no destination or no key set                         | `INVALID_VALUE`       |
//! | a key of another AES-GCM context                                | `INVALID_VALUE`       |
//! | a key destroyed meanwhile                                       | `BAD_STATE`           |
//! | an IV longer than `doca_aes_gcm_cap_task_*_get_max_iv_len` (12) | `INVALID_VALUE`       |
//! | a tag size other than 12 or 16                                  | `INVALID_VALUE`       |
//! | a tag size, key type or task type the topology takes away       | `NOT_SUPPORTED`       |
//! | source above `aes_gcm.max_buf_size` (AAD and a decrypt's tag included), a list above `aes_gcm.max_list_buf_num_elem` | `INVALID_VALUE` |
//! | `aad_size` above the source's length (decrypt: `aad_size + tag_size`) | `INVALID_VALUE` |
//! | destination room (free room after its data, over its list) below the output | `INVALID_VALUE` |
//! | a buffer of a map not added to the AES-GCM's device             | `NOT_PERMITTED`       |
//! | a destination whose map lacks `LOCAL_READ_WRITE`                | `NOT_PERMITTED`       |
//! | a buffer of a map created from an export (not yet supported)    | `NOT_SUPPORTED`       |
//! | a buffer returned to its inventory meanwhile                    | `BAD_STATE`           |
//! | decrypt: the tag does not match (ours, see above)               | `IO_FAILED`           |
//! | the context stopped, or a task before it failed, before it completed | [`FLUSH_STATUS`] (`SHUTDOWN`) |
//!
//! `doca_aes_gcm_task_*_alloc_init` refuses an IV longer than 12 bytes and a tag size other
//! than 12 or 16 at once (`INVALID_VALUE`); the setters cannot refuse (they return nothing in
//! C), so the engine checks again.

#![forbid(unsafe_code)]

pub mod caps;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};

use aes::cipher::KeyInit;
use aes_gcm::aead::consts::{U0, U1, U10, U11, U12, U16, U2, U3, U4, U5, U6, U7, U8, U9};
use aes_gcm::aead::generic_array::GenericArray;
use aes_gcm::AeadInPlace;
use doca_buf::Buf;
use doca_core::queue::{Engine, EngineTask, Fifo, LibCtx, Sizes, Step};
use doca_core::{bail, fail, Ctx, Data, Dev, Error, Refused, Result, TaskId, TaskPayload, TaskPool};
use doca_mmap::AccessFlags;

/// Status of the tasks a stop or a failure flushes: `DOCA_ERROR_SHUTDOWN`.
pub const FLUSH_STATUS: Error = doca_core::queue::FLUSH_STATUS;

/// Status of a decrypt task whose tag does not match (ours: DOCA documents none).
pub const TAG_MISMATCH_STATUS: Error = Error::IoFailed;

/// The longest IV DOCA accepts, in bytes (96 bits).
pub const MAX_IV_LEN: usize = 12;

/// The tag sizes DOCA accepts, in bytes.
pub const TAG_SIZES: [u32; 2] = [12, 16];

/// `enum doca_aes_gcm_key_type` (the same values as DOCA's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum KeyType {
    /// `DOCA_AES_GCM_KEY_128` (1): a 16-byte key.
    Aes128 = 1,
    /// `DOCA_AES_GCM_KEY_256` (2): a 32-byte key.
    Aes256 = 2,
}

impl KeyType {
    /// The key type of an enum value (`None` for any other number).
    pub fn from_raw(v: u32) -> Option<KeyType> {
        match v {
            1 => Some(KeyType::Aes128),
            2 => Some(KeyType::Aes256),
            _ => None,
        }
    }

    /// The raw key's length in bytes (16 or 32).
    pub fn key_len(self) -> usize {
        self.bits() / 8
    }

    /// The key's size in bits (128 or 256).
    pub fn bits(self) -> usize {
        match self {
            KeyType::Aes128 => 128,
            KeyType::Aes256 => 256,
        }
    }
}

/// Which task type: where a capability or a check differs by type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// `doca_aes_gcm_task_encrypt`.
    Encrypt,
    /// `doca_aes_gcm_task_decrypt`.
    Decrypt,
}

impl Op {
    /// "encrypt" or "decrypt".
    pub fn name(self) -> &'static str {
        match self {
            Op::Encrypt => "encrypt",
            Op::Decrypt => "decrypt",
        }
    }
}

/// The expanded key (AES's round keys; held once per key, in its `Rc`).
#[derive(Clone)]
#[allow(clippy::large_enum_variant)] // boxing would add an indirection per task for 256 bytes
enum Cipher {
    A128(aes::Aes128),
    A256(aes::Aes256),
}

struct KeyInner {
    /// The context the key was created on ([`AesGcm::id`]).
    owner: u64,
    key_type: KeyType,
    cipher: Cipher,
    live: Cell<bool>,
    /// Its context's count of live keys (a context with keys is not destroyed: `IN_USE`).
    count: Rc<Cell<u32>>,
}

impl KeyInner {
    /// Ends the key once: destroyed, or its last clone dropped.
    fn end(&self) -> bool {
        let was = self.live.replace(false);
        if was {
            self.count.set(self.count.get().saturating_sub(1));
        }
        was
    }
}

impl Drop for KeyInner {
    fn drop(&mut self) {
        self.end();
    }
}

/// `struct doca_aes_gcm_key`: a key of one AES-GCM context, for its tasks. Clones are the
/// same key; [`Key::destroy`] ends it for every clone (a task using it afterwards fails with
/// `BAD_STATE`), and so does dropping its last clone. While a key lives its context cannot be
/// destroyed (`IN_USE`, as DOCA's).
#[derive(Clone)]
pub struct Key(Rc<KeyInner>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key's bytes.
        f.debug_struct("Key").field("key_type", &self.0.key_type).field("live", &self.0.live.get()).finish()
    }
}

impl Key {
    /// Its type.
    pub fn key_type(&self) -> KeyType {
        self.0.key_type
    }

    /// Whether it was not destroyed.
    pub fn is_live(&self) -> bool {
        self.0.live.get()
    }

    /// Whether `other` is the same key (a clone of it).
    pub fn same(&self, other: &Key) -> bool {
        Rc::ptr_eq(&self.0, &other.0)
    }

    /// `doca_aes_gcm_key_destroy`: tasks still naming the key fail with `BAD_STATE` when the
    /// engine reaches them. A second destroy (through a clone) is `BAD_STATE`.
    pub fn destroy(self) -> Result<()> {
        if !self.0.end() {
            bail!(Error::BadState, "aes_gcm: the key was already destroyed");
        }
        Ok(())
    }
}

/// The parameters both task types hold.
#[derive(Default)]
struct Params {
    src: Option<Buf>,
    dst: Option<Buf>,
    key: Option<Key>,
    iv: [u8; MAX_IV_LEN],
    /// The IV's length as set (above [`MAX_IV_LEN`]: set so, refused at submission, and no
    /// bytes kept).
    iv_len: u32,
    tag_size: u32,
    aad_size: u32,
}

impl Params {
    fn set_iv(&mut self, iv: &[u8]) {
        self.iv_len = iv.len().min(u32::MAX as usize) as u32;
        self.iv = [0; MAX_IV_LEN];
        if iv.len() <= MAX_IV_LEN {
            self.iv[..iv.len()].copy_from_slice(iv);
        } else {
            tracing::error!(
                target: "doca_sdk",
                "aes_gcm: an IV of {} bytes (at most {MAX_IV_LEN}): the task will be refused at submission",
                iv.len()
            );
        }
    }

    fn set_iv_refused(&mut self, len: u32) {
        tracing::error!(
            target: "doca_sdk",
            "aes_gcm: an IV of {len} bytes (at most {MAX_IV_LEN}, and bytes to read): the task will be refused at submission"
        );
        self.iv_len = len.max(MAX_IV_LEN as u32 + 1);
        self.iv = [0; MAX_IV_LEN];
    }

    fn iv(&self) -> &[u8] {
        match self.iv_len as usize {
            n if n <= MAX_IV_LEN => &self.iv[..n],
            _ => &[],
        }
    }
}

/// The payload of an encrypt task.
#[derive(Default)]
#[doc(hidden)] // reached through EncryptTask
pub struct Encrypt {
    p: Params,
}

/// The payload of a decrypt task.
#[derive(Default)]
#[doc(hidden)] // reached through DecryptTask
pub struct Decrypt {
    p: Params,
}

doca_core::task_handle! {
    /// `struct doca_aes_gcm_task_encrypt`: AAD ‖ plaintext of the source in, AAD ‖
    /// ciphertext ‖ tag after the destination's data out.
    pub struct EncryptTask(Encrypt);
}

doca_core::task_handle! {
    /// `struct doca_aes_gcm_task_decrypt`: AAD ‖ ciphertext ‖ tag of the source in, AAD ‖
    /// plaintext after the destination's data out (when the tag matches).
    pub struct DecryptTask(Decrypt);
}

/// The accessors both task handles share (`doca_aes_gcm_task_{encrypt,decrypt}_get/set_*`).
macro_rules! accessors {
    ($t:ident, $c:literal) => {
        impl $t {
            #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_src`.")]
            pub fn src(&self) -> Option<Buf> {
                self.0.with_payload(|x| x.p.src.clone())
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_src`: checked when the task is submitted.")]
            pub fn set_src(&self, src: Option<&Buf>) {
                self.0.with_payload(|x| x.p.src = src.cloned());
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_dst`.")]
            pub fn dst(&self) -> Option<Buf> {
                self.0.with_payload(|x| x.p.dst.clone())
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_dst`: checked when the task is submitted.")]
            pub fn set_dst(&self, dst: Option<&Buf>) {
                self.0.with_payload(|x| x.p.dst = dst.cloned());
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_key`.")]
            pub fn key(&self) -> Option<Key> {
                self.0.with_payload(|x| x.p.key.clone())
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_key`: checked when the task is submitted.")]
            pub fn set_key(&self, key: Option<&Key>) {
                self.0.with_payload(|x| x.p.key = key.cloned());
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_iv`: the IV's bytes (none for a length above 12, which submission refuses).")]
            pub fn iv(&self) -> Vec<u8> {
                self.0.with_payload(|x| x.p.iv().to_vec())
            }

            #[doc = concat!("The IV's length as set (`doca_aes_gcm_task_", $c, "_get_iv`'s `iv_length`).")]
            pub fn iv_len(&self) -> u32 {
                self.0.with_payload(|x| x.p.iv_len)
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_iv`: 0 to 12 bytes (longer: logged, and refused at submission).")]
            pub fn set_iv(&self, iv: &[u8]) {
                self.0.with_payload(|x| x.p.set_iv(iv));
            }

            /// An IV of `len` bytes (above 12) that C set without bytes the engine may read:
            /// logged, and the task refused at submission (the C ABI's `set_iv`).
            #[doc(hidden)]
            pub fn set_iv_refused(&self, len: u32) {
                self.0.with_payload(|x| x.p.set_iv_refused(len));
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_tag_size`.")]
            pub fn tag_size(&self) -> u32 {
                self.0.with_payload(|x| x.p.tag_size)
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_tag_size`: 12 or 16 (another size is refused at submission).")]
            pub fn set_tag_size(&self, tag_size: u32) {
                self.0.with_payload(|x| x.p.tag_size = tag_size);
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_get_aad_size`.")]
            pub fn aad_size(&self) -> u32 {
                self.0.with_payload(|x| x.p.aad_size)
            }

            #[doc = concat!("`doca_aes_gcm_task_", $c, "_set_aad_size`: the first `aad_size` bytes of the source are the AAD.")]
            pub fn set_aad_size(&self, aad_size: u32) {
                self.0.with_payload(|x| x.p.aad_size = aad_size);
            }
        }
    };
}

accessors!(EncryptTask, "encrypt");
accessors!(DecryptTask, "decrypt");

/// The limits of one run, read from the device's capabilities at start.
#[derive(Clone, Copy)]
struct Limits {
    max_buf: u64,
    max_list_len: u32,
    max_iv_len: u32,
}

/// A queued task of either type.
#[derive(Clone, Copy)]
#[doc(hidden)] // the engine's queue entry (`Engine::Job`)
pub enum Job {
    /// An encrypt task.
    Encrypt(TaskId),
    /// A decrypt task.
    Decrypt(TaskId),
}

/// The AES-GCM engine: the cipher work of the queued tasks of both types (core's
/// [`doca_core::queue`] kit runs the queue and the context).
#[doc(hidden)] // named by the task payloads (`TaskPayload::Lib`); reached through AesGcm
pub struct AesGcmOps {
    dev: Dev,
    id: u64,
    encrypt: TaskPool<Encrypt>,
    decrypt: TaskPool<Decrypt>,
    limits: Cell<Limits>,
    /// The bytes of the task being worked (grown to the largest task, kept between tasks: no
    /// allocation per task once warm).
    scratch: RefCell<Vec<u8>>,
    /// Keys created and not yet destroyed (nor dropped).
    live_keys: Rc<Cell<u32>>,
}

/// `struct doca_aes_gcm`: an AES-GCM context on one device.
pub struct AesGcm {
    ctx: LibCtx<Fifo<AesGcmOps>>,
}

/// Numbers the contexts, so a key knows its own.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl AesGcm {
    /// `doca_aes_gcm_create`: a context on `dev`; `NOT_SUPPORTED` when the topology gives the
    /// device no AES-GCM ([`caps::is_supported`]).
    pub fn create(dev: &Dev) -> Result<AesGcm> {
        doca_core::require(caps::is_supported(dev.as_devinfo()), "doca_aes_gcm_create")?;
        let limits = Limits { max_buf: 0, max_list_len: 1, max_iv_len: 0 };
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let ctx = LibCtx::new(|weak| AesGcmOps {
            dev: dev.clone(),
            id,
            encrypt: TaskPool::new(weak.clone()),
            decrypt: TaskPool::new(weak.clone()),
            limits: Cell::new(limits),
            scratch: RefCell::new(Vec::new()),
            live_keys: Rc::new(Cell::new(0)),
        });
        Ok(AesGcm { ctx })
    }

    /// `doca_aes_gcm_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        self.ctx.as_ctx()
    }

    /// `doca_aes_gcm_cap_get_max_num_tasks`: encrypt and decrypt tasks together
    /// (`aes_gcm.max_num_tasks`).
    pub fn cap_get_max_num_tasks(&self) -> Result<u32> {
        caps::max_num_tasks(self.ctx.engine().dev.as_devinfo())
    }

    /// What a pool may hold besides the other type's configured tasks.
    fn room_for(&self, other: u32) -> Result<u32> {
        Ok(self.cap_get_max_num_tasks()?.saturating_sub(other))
    }

    /// `doca_aes_gcm_key_create`: a key from `raw_key` (16 bytes for
    /// [`KeyType::Aes128`], 32 for [`KeyType::Aes256`]; another length is `INVALID_VALUE`).
    /// A key type the topology takes away (`aes_gcm.key_128`, `aes_gcm.key_256`) is
    /// `NOT_SUPPORTED`. Any context state.
    pub fn key_create(&self, raw_key: &[u8], key_type: KeyType) -> Result<Key> {
        let e = self.ctx.engine();
        let info = e.dev.as_devinfo();
        if caps::key_type_is_supported(info, Op::Encrypt, key_type).is_err()
            && caps::key_type_is_supported(info, Op::Decrypt, key_type).is_err()
        {
            bail!(
                Error::NotSupported,
                "aes_gcm: the device supports no {}-bit keys (cap aes_gcm.key_{})",
                key_type.bits(),
                key_type.bits()
            );
        }
        if raw_key.len() != key_type.key_len() {
            bail!(
                Error::InvalidValue,
                "aes_gcm: a {}-bit key is {} bytes, not {}",
                key_type.bits(),
                key_type.key_len(),
                raw_key.len()
            );
        }
        let cipher = match key_type {
            KeyType::Aes128 => Cipher::A128(aes::Aes128::new(GenericArray::from_slice(raw_key))),
            KeyType::Aes256 => Cipher::A256(aes::Aes256::new(GenericArray::from_slice(raw_key))),
        };
        e.live_keys.set(e.live_keys.get() + 1);
        Ok(Key(Rc::new(KeyInner {
            owner: e.id,
            key_type,
            cipher,
            live: Cell::new(true),
            count: e.live_keys.clone(),
        })))
    }

    /// `doca_aes_gcm_task_encrypt_set_conf`: callbacks and `num_tasks` tasks (with the decrypt
    /// tasks' at most `aes_gcm.max_num_tasks`, else `INVALID_VALUE`; 0 is accepted, as DOCA's
    /// library does: a pool of none). Idle only (`BAD_STATE`).
    pub fn task_encrypt_set_conf(
        &self,
        completion: impl FnMut(EncryptTask, Data, Data) + 'static,
        error: impl FnMut(EncryptTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.core().require_idle("aes_gcm task set_conf")?;
        let max = self.room_for(self.ctx.engine().decrypt.capacity())?;
        self.ctx.set_conf(completion, error, num_tasks, max)
    }

    /// `doca_aes_gcm_task_decrypt_set_conf`: as [`AesGcm::task_encrypt_set_conf`].
    pub fn task_decrypt_set_conf(
        &self,
        completion: impl FnMut(DecryptTask, Data, Data) + 'static,
        error: impl FnMut(DecryptTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.core().require_idle("aes_gcm task set_conf")?;
        let max = self.room_for(self.ctx.engine().encrypt.capacity())?;
        self.ctx.set_conf(completion, error, num_tasks, max)
    }

    /// `doca_aes_gcm_task_encrypt_alloc_init`: a task encrypting `src`'s data into `dst`'s
    /// room with `key`. Buffers and key may be `None` and set later. An IV above 12 bytes or
    /// a tag size other than 12 or 16 is `INVALID_VALUE`; the rest is checked at submission.
    /// Running only (`BAD_STATE`); every task out → `NO_MEMORY`.
    #[allow(clippy::too_many_arguments)] // DOCA's alloc_init, argument for argument
    pub fn task_encrypt_alloc_init(
        &self,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        key: Option<&Key>,
        iv: &[u8],
        tag_size: u32,
        aad_size: u32,
        user_data: Data,
    ) -> Result<EncryptTask> {
        let p = params(src, dst, key, iv, tag_size, aad_size)?;
        Ok(EncryptTask(self.ctx.alloc(user_data, |x: &mut Encrypt| *x = Encrypt { p })?))
    }

    /// `doca_aes_gcm_task_decrypt_alloc_init`: as [`AesGcm::task_encrypt_alloc_init`].
    #[allow(clippy::too_many_arguments)] // DOCA's alloc_init, argument for argument
    pub fn task_decrypt_alloc_init(
        &self,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        key: Option<&Key>,
        iv: &[u8],
        tag_size: u32,
        aad_size: u32,
        user_data: Data,
    ) -> Result<DecryptTask> {
        let p = params(src, dst, key, iv, tag_size, aad_size)?;
        Ok(DecryptTask(self.ctx.alloc(user_data, |x: &mut Decrypt| *x = Decrypt { p })?))
    }

    /// `doca_aes_gcm_destroy`: Idle only (`BAD_STATE`, and the context back); `IN_USE` while
    /// keys of it live (destroy them, or drop them, first: DOCA's rule).
    pub fn destroy(self) -> Result<(), Refused<AesGcm>> {
        if let Err(e) = self.check_destroy() {
            return Err(Refused::new(e, self));
        }
        self.ctx.destroy().map_err(|r| r.map(|ctx| AesGcm { ctx }))
    }

    /// What [`AesGcm::destroy`] refuses besides a context that is not Idle: `IN_USE` while
    /// keys of it live (for a caller that must know before giving the context up).
    pub fn check_destroy(&self) -> Result<()> {
        let keys = self.ctx.engine().live_keys.get();
        if keys > 0 && self.ctx.as_ctx().state() == doca_core::CtxState::Idle {
            bail!(Error::InUse, "aes_gcm destroy: {keys} key(s) of this context are not destroyed");
        }
        Ok(())
    }
}

/// The checked parameters of an alloc_init.
fn params(
    src: Option<&Buf>,
    dst: Option<&Buf>,
    key: Option<&Key>,
    iv: &[u8],
    tag_size: u32,
    aad_size: u32,
) -> Result<Params> {
    if iv.len() > MAX_IV_LEN {
        bail!(Error::InvalidValue, "aes_gcm: an IV of {} bytes (0 to {MAX_IV_LEN} are supported)", iv.len());
    }
    if !TAG_SIZES.contains(&tag_size) {
        bail!(Error::InvalidValue, "aes_gcm: a tag of {tag_size} bytes (12 and 16 are supported)");
    }
    let mut p = Params {
        src: src.cloned(),
        dst: dst.cloned(),
        key: key.cloned(),
        tag_size,
        aad_size,
        ..Params::default()
    };
    p.set_iv(iv);
    Ok(p)
}

/// The elements of the list headed by `head`, in order (`INVALID_VALUE` beyond `max`): the
/// shared walk of `doca_buf::list`.
fn walk(head: &Buf, max: u32, what: &str, mut f: impl FnMut(&Buf) -> Result<()>) -> Result<()> {
    for b in doca_buf::list::elements(
        head,
        max,
        format_args!("aes_gcm: the {what}"),
        "cap aes_gcm.max_list_buf_num_elem",
    )? {
        f(&b)?;
    }
    Ok(())
}

/// What the checks found: the source's length, the output's, and the parameters to work with.
struct Checked {
    len: usize,
    out: usize,
    key: Key,
    iv: [u8; MAX_IV_LEN],
    iv_len: usize,
    tag: usize,
    aad: usize,
    src: Buf,
    dst: Buf,
}

/// The engine's view of a task type.
trait Kind: TaskPayload<Lib = Fifo<AesGcmOps>> {
    const OP: Op;
    fn pool(ops: &AesGcmOps) -> &TaskPool<Self>;
    fn job(id: TaskId) -> Job;
    fn params(&self) -> &Params;
}

impl Kind for Encrypt {
    const OP: Op = Op::Encrypt;
    fn pool(ops: &AesGcmOps) -> &TaskPool<Self> {
        &ops.encrypt
    }
    fn job(id: TaskId) -> Job {
        Job::Encrypt(id)
    }
    fn params(&self) -> &Params {
        &self.p
    }
}

impl Kind for Decrypt {
    const OP: Op = Op::Decrypt;
    fn pool(ops: &AesGcmOps) -> &TaskPool<Self> {
        &ops.decrypt
    }
    fn job(id: TaskId) -> Job {
        Job::Decrypt(id)
    }
    fn params(&self) -> &Params {
        &self.p
    }
}

impl AesGcmOps {
    /// Whether `buf`'s map is one this device may reach (local, added to the device).
    fn check_map(&self, buf: &Buf, what: &str) -> Result<()> {
        let map = buf.map();
        if map.is_from_export() {
            bail!(
                Error::NotSupported,
                "aes_gcm: the {what} is a buffer of a map created from an export (not supported yet)"
            );
        }
        if !map.has_dev(&self.dev) {
            bail!(
                Error::NotPermitted,
                "aes_gcm: the {what}'s map was not added to the AES-GCM's device (doca_mmap_add_dev)"
            );
        }
        map.check_live()
    }

    /// Every check of a task.
    fn checks<P: Kind>(&self, id: TaskId) -> Result<Checked> {
        let limits = self.limits.get();
        let op = P::OP;
        let (src, dst, key, iv, iv_len, tag, aad) = P::pool(self)
            .with_payload(id, |x| {
                let p = x.params();
                (p.src.clone(), p.dst.clone(), p.key.clone(), p.iv, p.iv_len, p.tag_size, p.aad_size)
            })
            .ok_or(Error::BadState)?;
        let what = op.name();
        let Some(src) = src else { bail!(Error::InvalidValue, "aes_gcm: the {what} task has no source") };
        let Some(dst) = dst else {
            bail!(Error::InvalidValue, "aes_gcm: the {what} task has no destination")
        };
        let Some(key) = key else { bail!(Error::InvalidValue, "aes_gcm: the {what} task has no key") };
        if !key.is_live() {
            bail!(Error::BadState, "aes_gcm: the {what} task's key was destroyed (doca_aes_gcm_key_destroy)");
        }
        if key.0.owner != self.id {
            bail!(Error::InvalidValue, "aes_gcm: the {what} task's key belongs to another AES-GCM context");
        }
        let info = self.dev.as_devinfo();
        doca_core::require(caps::task_is_supported(info, op), "doca_aes_gcm task")?;
        doca_core::require(caps::key_type_is_supported(info, op, key.key_type()), "doca_aes_gcm task")?;
        if iv_len > limits.max_iv_len {
            bail!(
                Error::InvalidValue,
                "aes_gcm: an IV of {iv_len} bytes exceeds the maximum {} (doca_aes_gcm_cap_task_{what}_get_max_iv_len)",
                limits.max_iv_len
            );
        }
        doca_core::require(caps::tag_is_supported(info, op, tag), "doca_aes_gcm task")?;
        let mut len = 0usize;
        walk(&src, limits.max_list_len, "source", |b| {
            self.check_map(b, "source")?;
            len = len.saturating_add(b.data_len()?);
            Ok(())
        })?;
        if len as u64 > limits.max_buf {
            bail!(
                Error::InvalidValue,
                "aes_gcm: a source of {len} bytes exceeds the maximum {} (cap aes_gcm.max_buf_size)",
                limits.max_buf
            );
        }
        let (tag, aad) = (tag as usize, aad as usize);
        let out = match op {
            Op::Encrypt => {
                if aad > len {
                    bail!(Error::InvalidValue, "aes_gcm: aad_size {aad} exceeds the source's {len} bytes");
                }
                len + tag
            }
            Op::Decrypt => {
                if aad.saturating_add(tag) > len {
                    bail!(
                        Error::InvalidValue,
                        "aes_gcm: the source's {len} bytes are fewer than aad_size {aad} + tag_size {tag}"
                    );
                }
                len - tag
            }
        };
        let mut room = 0usize;
        walk(&dst, limits.max_list_len, "destination", |b| {
            self.check_map(b, "destination")?;
            if !b.map().permissions().contains(AccessFlags::LOCAL_READ_WRITE) {
                bail!(
                    Error::NotPermitted,
                    "aes_gcm: the destination's map lacks DOCA_ACCESS_FLAG_LOCAL_READ_WRITE"
                );
            }
            room = room.saturating_add(b.tail_room()?);
            Ok(())
        })?;
        if room < out {
            bail!(
                Error::InvalidValue,
                "aes_gcm: the destination has room for {room} bytes after its data, the {what} output is {out}"
            );
        }
        Ok(Checked { len, out, key, iv, iv_len: iv_len as usize, tag, aad, src, dst })
    }

    /// Reads the source's data into `buf` (exactly its length).
    fn gather(src: &Buf, buf: &mut [u8]) -> Result<()> {
        let mut at = 0;
        let mut cur = Some(src.clone());
        while let Some(b) = cur {
            let s = b.shape()?;
            let n = s.data_len.min(buf.len() - at);
            b.map().read(s.data, &mut buf[at..at + n])?;
            at += n;
            cur = b.next_in_list()?;
        }
        if at != buf.len() {
            bail!(Error::InvalidValue, "aes_gcm: the source list changed while the task was worked");
        }
        Ok(())
    }

    /// Writes `bytes` into the destination list's rooms in turn, then grows each element's
    /// data length by what it received (only once every byte is written).
    fn scatter(dst: &Buf, bytes: &[u8]) -> Result<()> {
        let mut at = 0;
        let mut cur = Some(dst.clone());
        while let Some(b) = cur {
            if at == bytes.len() {
                break;
            }
            let s = b.shape()?;
            let n = s.room().min(bytes.len() - at);
            if n > 0 {
                b.map().write(s.data_end(), &bytes[at..at + n])?;
                at += n;
            }
            cur = b.next_in_list()?;
        }
        if at != bytes.len() {
            bail!(Error::InvalidValue, "aes_gcm: the destination's room shrank while the task was worked");
        }
        let mut left = bytes.len();
        let mut cur = Some(dst.clone());
        while let Some(b) = cur {
            if left == 0 {
                break;
            }
            let n = b.tail_room()?.min(left);
            b.increase_data_len(n)?;
            left -= n;
            cur = b.next_in_list()?;
        }
        Ok(())
    }

    /// An encrypt task of one source buffer and one destination buffer apart from each
    /// other, without the scratch buffer: the source's data copied once into the
    /// destination's room (map to map), encrypted there in place, the tag written after it,
    /// then the data length grown. `false` (nothing done) for lists and for a destination
    /// over the source's bytes (in one map or in two over the same memory), which go through
    /// the scratch buffer.
    fn encrypt_direct(c: &Checked) -> Result<bool> {
        let (s, d) = (c.src.shape()?, c.dst.shape()?);
        if s.in_list || d.in_list {
            return Ok(false);
        }
        let (from, to) = (s.data, d.data_end());
        // By address, not by map: two maps of a C program may cover the same bytes (and these
        // maps are local, so their addresses are this process's).
        let (a, b) = (c.src.map().map_addr().saturating_add(from), c.dst.map().map_addr().saturating_add(to));
        if a < b.saturating_add(c.out) && b < a.saturating_add(c.len) {
            return Ok(false);
        }
        if s.data_len != c.len || d.room() < c.out {
            bail!(
                Error::InvalidValue,
                "aes_gcm: the source or the destination changed while the task was worked"
            );
        }
        c.src.map().copy_to_map(from, c.len, c.dst.map(), to)?;
        {
            let mut out = c.dst.map().bytes_mut(to, c.out)?;
            let (aad, rest) = out.split_at_mut(c.aad);
            let (msg, tag) = rest.split_at_mut(c.len - c.aad);
            seal(&c.key.0.cipher, &c.iv[..c.iv_len], aad, msg, tag)
                .map_err(|()| fail!(Error::InvalidValue, "aes_gcm: the cipher refused the encrypt task"))?;
        }
        c.dst.increase_data_len(c.out)?;
        Ok(true)
    }

    /// The whole of task `id`: checks, cipher, output. Returns the source's length.
    fn work<P: Kind>(&self, id: TaskId) -> Result<usize> {
        let c = self.checks::<P>(id)?;
        if P::OP == Op::Encrypt && Self::encrypt_direct(&c)? {
            return Ok(c.len);
        }
        let mut scratch = self.scratch.borrow_mut();
        let need = c.len.max(c.out);
        if scratch.len() < need {
            scratch.resize(need, 0);
        }
        let buf = &mut scratch[..need];
        Self::gather(&c.src, &mut buf[..c.len])?;
        let iv = &c.iv[..c.iv_len];
        match P::OP {
            Op::Encrypt => {
                let (aad, rest) = buf.split_at_mut(c.aad);
                let (msg, tag) = rest.split_at_mut(c.len - c.aad);
                seal(&c.key.0.cipher, iv, aad, msg, &mut tag[..c.tag]).map_err(|()| {
                    fail!(Error::InvalidValue, "aes_gcm: the cipher refused the encrypt task")
                })?;
            }
            Op::Decrypt => {
                let (aad, rest) = buf.split_at_mut(c.aad);
                let (msg, tag) = rest.split_at_mut(c.len - c.aad - c.tag);
                if open(&c.key.0.cipher, iv, aad, msg, &tag[..c.tag]).is_err() {
                    bail!(
                        TAG_MISMATCH_STATUS,
                        "aes_gcm: decrypt: tag mismatch (wrong key, IV, AAD or tag size, or altered data); nothing written"
                    );
                }
            }
        }
        Self::scatter(&c.dst, &buf[..c.out])?;
        Ok(c.len)
    }
}

/// `msg` encrypted in place with `iv` and `aad`; its tag written to `tag` (12 or 16 bytes).
fn seal(
    cipher: &Cipher,
    iv: &[u8],
    aad: &[u8],
    msg: &mut [u8],
    tag: &mut [u8],
) -> std::result::Result<(), ()> {
    gcm(cipher, iv, tag.len(), |g| g.seal(iv, aad, msg, tag))
}

/// `msg` decrypted in place when `tag` matches (else `Err`, `msg` unchanged).
fn open(cipher: &Cipher, iv: &[u8], aad: &[u8], msg: &mut [u8], tag: &[u8]) -> std::result::Result<(), ()> {
    gcm(cipher, iv, tag.len(), |g| g.open(iv, aad, msg, tag))
}

/// An AES-GCM instance of one key, nonce length and tag length, behind one interface.
trait Gcm {
    fn seal(&self, iv: &[u8], aad: &[u8], msg: &mut [u8], tag: &mut [u8]) -> std::result::Result<(), ()>;
    fn open(&self, iv: &[u8], aad: &[u8], msg: &mut [u8], tag: &[u8]) -> std::result::Result<(), ()>;
}

impl<A, N, T> Gcm for aes_gcm::AesGcm<A, N, T>
where
    aes_gcm::AesGcm<A, N, T>: AeadInPlace<NonceSize = N, TagSize = T>,
    N: aes_gcm::aead::generic_array::ArrayLength<u8>,
    T: aes_gcm::TagSize,
{
    fn seal(&self, iv: &[u8], aad: &[u8], msg: &mut [u8], tag: &mut [u8]) -> std::result::Result<(), ()> {
        let t = self.encrypt_in_place_detached(GenericArray::from_slice(iv), aad, msg).map_err(|_| ())?;
        tag.copy_from_slice(&t);
        Ok(())
    }

    fn open(&self, iv: &[u8], aad: &[u8], msg: &mut [u8], tag: &[u8]) -> std::result::Result<(), ()> {
        self.decrypt_in_place_detached(GenericArray::from_slice(iv), aad, msg, GenericArray::from_slice(tag))
            .map_err(|_| ())
    }
}

/// Runs `f` on the AES-GCM of `cipher`'s key for an IV of `iv.len()` bytes (0..=12) and a tag
/// of `tag_len` bytes (12 or 16): the crate's types are per length, chosen here.
fn gcm<R>(cipher: &Cipher, iv: &[u8], tag_len: usize, f: impl FnOnce(&dyn Gcm) -> R) -> R {
    macro_rules! with_tag {
        ($aes:expr, $n:ty) => {
            if tag_len == 12 {
                f(&aes_gcm::AesGcm::<_, $n, U12>::from($aes.clone()))
            } else {
                f(&aes_gcm::AesGcm::<_, $n, U16>::from($aes.clone()))
            }
        };
    }
    macro_rules! with_iv {
        ($aes:expr) => {
            match iv.len() {
                0 => with_tag!($aes, U0),
                1 => with_tag!($aes, U1),
                2 => with_tag!($aes, U2),
                3 => with_tag!($aes, U3),
                4 => with_tag!($aes, U4),
                5 => with_tag!($aes, U5),
                6 => with_tag!($aes, U6),
                7 => with_tag!($aes, U7),
                8 => with_tag!($aes, U8),
                9 => with_tag!($aes, U9),
                10 => with_tag!($aes, U10),
                11 => with_tag!($aes, U11),
                _ => with_tag!($aes, U12),
            }
        };
    }
    match cipher {
        Cipher::A128(a) => with_iv!(a),
        Cipher::A256(a) => with_iv!(a),
    }
}

/// Front task first; a task is worked whole, and a pass ends once its budget is spent
/// (`aes_gcm.bytes_per_pass`).
impl Engine for AesGcmOps {
    type Job = Job;
    const KIND: &'static str = "aes_gcm";
    const FAILED: &'static str = "an encrypt or decrypt task failed";

    fn device(&self) -> Option<doca_core::PciAddr> {
        Some(self.dev.as_devinfo().pci_addr())
    }

    fn start(&self) -> Result<Sizes> {
        let info = self.dev.as_devinfo();
        let op = if caps::task_is_supported(info, Op::Encrypt).is_ok() { Op::Encrypt } else { Op::Decrypt };
        self.limits.set(Limits {
            max_buf: caps::max_buf_size(info, op)?,
            max_list_len: caps::max_list_buf_num_elem(info, op)?,
            max_iv_len: caps::max_iv_len(info, op)?,
        });
        self.encrypt.prepare(Encrypt::default);
        self.decrypt.prepare(Decrypt::default);
        let tasks = (self.encrypt.capacity() + self.decrypt.capacity()) as usize;
        Ok(Sizes { tasks, bytes_per_pass: caps::bytes_per_pass(info)? })
    }

    fn step(&self, job: Job, _budget: usize) -> Step {
        let r = match job {
            Job::Encrypt(id) => self.work::<Encrypt>(id),
            Job::Decrypt(id) => self.work::<Decrypt>(id),
        };
        match r {
            Ok(n) => Step::Done(n),
            Err(e) => Step::Failed(e),
        }
    }

    fn finish(&self, job: Job, status: Result<()>) {
        match job {
            Job::Encrypt(id) => self.encrypt.finish(id, status),
            Job::Decrypt(id) => self.decrypt.finish(id, status),
        };
    }
}

/// Both task types: queued as they are, checked when the engine reaches them.
impl<P: Kind> EngineTask<P> for AesGcmOps {
    fn pool(&self) -> &TaskPool<P> {
        P::pool(self)
    }

    fn job(id: TaskId) -> Job {
        P::job(id)
    }

    fn validate(&self, id: TaskId) -> Result<()> {
        self.checks::<P>(id).map(|_| ())
    }
}

impl TaskPayload for Encrypt {
    type Lib = Fifo<AesGcmOps>;
    const FAULT_KIND: &'static str = "aes_gcm.encrypt";
}

impl TaskPayload for Decrypt {
    type Lib = Fifo<AesGcmOps>;
    const FAULT_KIND: &'static str = "aes_gcm.decrypt";
}
