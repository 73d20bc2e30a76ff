//! DOCA SHA (`doca_sha.h`): hash and partial-hash tasks over buffers of local memory maps,
//! as a library context on core's plug-in interface. The digests are RustCrypto's `sha1` and
//! `sha2`, byte for byte what `sha1sum`, `sha256sum` and `sha512sum` print.
//!
//! | DOCA                                          | here                                   |
//! |-----------------------------------------------|----------------------------------------|
//! | `struct doca_sha`, `doca_sha_create`/`_destroy`/`_as_ctx` | [`Sha`]: [`Sha::create`], [`Sha::destroy`], [`Sha::as_ctx`] |
//! | `enum doca_sha_algorithm`                     | [`Algorithm`]                          |
//! | `doca_sha_cap_*`                              | [`caps`]                               |
//! | `doca_sha_task_hash_set_conf`, `_alloc_init`  | [`Sha::task_hash_set_conf`], [`Sha::task_hash_alloc_init`] |
//! | `struct doca_sha_task_hash` and its accessors | [`HashTask`]                           |
//! | `doca_sha_task_partial_hash_set_conf`, `_alloc_init` | [`Sha::task_partial_hash_set_conf`], [`Sha::task_partial_hash_alloc_init`] |
//! | `struct doca_sha_task_partial_hash` and its accessors | [`PartialHashTask`]            |
//!
//! **The engine.** A submitted task joins the context's queue (hash and partial-hash tasks
//! in one queue, in submission order); the hashing is the emulated SHA engine's work, done
//! inside the progress engine's `progress` (never in submit). Each pass hashes at most
//! [`caps::BYTES_PER_PASS`] bytes (1 MiB by default) per SHA context, front task first;
//! small tasks complete several per pass. While tasks wait, the context asks to be polled and
//! a request for notification finds work waiting.
//!
//! **Partial hashes.** A partial-hash task is submitted once per segment: after each
//! completion the application points its source at the next segment and submits it again;
//! before the last one it calls [`PartialHashTask::set_is_final`]. The hash state of the
//! session lives in the task between submissions; the final segment's completion writes the
//! digest of all segments together (the same as one hash task over the whole data) and sets
//! [`PartialHashTask::has_result`]. A segment that `try_submit` refuses leaves the session as
//! it was (fix it and submit again); a segment that fails in the engine fails its context (see
//! below), and a stop ends the session (a start rebuilds the task pools). After the final
//! segment the session is over: submitting the task again before [`PartialHashTask::reset`]
//! fails with `BAD_STATE`. The algorithm and the
//! destination are fixed for a session (their setters answer `BAD_STATE` once a segment
//! completed).
//!
//! **Checks and codes.** `doca_task_submit` does not validate: a bad task completes through
//! the error callback with its status, when the engine reaches it — and, as on DOCA's engine
//! (pe_task_error; the rule is the progress engine's, see [`doca_core::queue`]), the failure
//! is fatal to the context: it moves to Stopping, every task still queued completes with
//! [`FLUSH_STATUS`], and it reaches Idle once they are freed (start it again to go on; the
//! partial-hash sessions of the run are over). `doca_task_try_submit`
//! (`try_submit`) makes the same checks first and refuses a bad task with `INVALID_VALUE`
//! (the log line says which check). The statuses:
//!
//! | the task                                                        | error callback status |
//! |-----------------------------------------------------------------|-----------------------|
//! | no source or no destination set                                 | `INVALID_VALUE`       |
//! | source above `sha.max_src_buf_size`, a list above `sha.max_list_buf_num_elem` | `INVALID_VALUE` |
//! | destination room (free room after its data) below the digest length (`doca_sha_cap_get_min_dst_buf_size`) | `INVALID_VALUE` |
//! | a partial segment, not final, whose length is not a multiple of the block size (`doca_sha_cap_get_partial_hash_block_size`) | `INVALID_VALUE` |
//! | an algorithm or task type the topology takes away (`sha.algorithms`, `sha.hash`, `sha.partial_hash`) | `NOT_SUPPORTED` |
//! | a buffer of a map not added to the SHA's device                 | `NOT_PERMITTED`       |
//! | a destination whose map lacks `LOCAL_READ_WRITE`                | `NOT_PERMITTED`       |
//! | a buffer of a map created from an export (not yet supported)    | `NOT_SUPPORTED`       |
//! | a buffer returned to its inventory meanwhile                    | `BAD_STATE`           |
//! | a partial-hash task submitted again after its final segment, without reset | `BAD_STATE` |
//! | the context stopped, or a task before it failed, before it completed | [`FLUSH_STATUS`] (`SHUTDOWN`) |
//!
//! A source of 0 bytes is accepted (its digest is the empty input's, as `sha256sum` of an
//! empty file), and so is a final flag on a session's first segment (DOCA leaves both
//! undefined).
//!
//! **Destination data.** As in DOCA DMA: the digest lands in the destination's free room
//! right after its data (`data + data_len`), and its data length grows by the digest length
//! (20, 32 or 64 bytes) — so a destination from `buf_get_by_addr` (data length 0) ends
//! holding exactly the digest. Only the destination's first element is written (a digest
//! never spans elements). The data length changes when the task completes.

#![forbid(unsafe_code)]

pub mod caps;

use std::cell::Cell;

use doca_buf::Buf;
use doca_core::queue::{Engine, EngineTask, Fifo, LibCtx, Sizes, Step};
use doca_core::{bail, fail, Ctx, Data, Dev, Error, Refused, Result, TaskId, TaskPayload, TaskPool};
use doca_mmap::AccessFlags;
use sha2::Digest;

/// Status of the tasks a stop or a failure flushes: `DOCA_ERROR_SHUTDOWN`.
pub const FLUSH_STATUS: Error = doca_core::queue::FLUSH_STATUS;

/// `enum doca_sha_algorithm` (the same values as DOCA's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Algorithm {
    /// `DOCA_SHA_ALGORITHM_SHA1` (0): 20-byte digest, 64-byte blocks.
    #[default]
    Sha1 = 0,
    /// `DOCA_SHA_ALGORITHM_SHA256` (1): 32-byte digest, 64-byte blocks.
    Sha256 = 1,
    /// `DOCA_SHA_ALGORITHM_SHA512` (2): 64-byte digest, 128-byte blocks.
    Sha512 = 2,
}

impl Algorithm {
    /// The algorithm of an enum value (`None` for any other number).
    pub fn from_raw(v: u32) -> Option<Algorithm> {
        match v {
            0 => Some(Algorithm::Sha1),
            1 => Some(Algorithm::Sha256),
            2 => Some(Algorithm::Sha512),
            _ => None,
        }
    }

    /// Its name ("SHA-256").
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Sha1 => "SHA-1",
            Algorithm::Sha256 => "SHA-256",
            Algorithm::Sha512 => "SHA-512",
        }
    }

    /// The digest's length in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            Algorithm::Sha1 => 20,
            Algorithm::Sha256 => 32,
            Algorithm::Sha512 => 64,
        }
    }

    /// The block length in bytes (what non-final partial segments are a multiple of).
    pub fn block_len(self) -> usize {
        match self {
            Algorithm::Sha1 | Algorithm::Sha256 => 64,
            Algorithm::Sha512 => 128,
        }
    }
}

/// A running digest of one of the algorithms (state only: no heap).
#[derive(Clone)]
enum Hasher {
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
    Sha512(sha2::Sha512),
}

impl Hasher {
    fn new(alg: Algorithm) -> Hasher {
        match alg {
            Algorithm::Sha1 => Hasher::Sha1(sha1::Sha1::new()),
            Algorithm::Sha256 => Hasher::Sha256(sha2::Sha256::new()),
            Algorithm::Sha512 => Hasher::Sha512(sha2::Sha512::new()),
        }
    }

    fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
            Hasher::Sha512(h) => h.update(data),
        }
    }

    /// Writes the digest into `out` (exactly the digest's length).
    fn finish_into(self, out: &mut [u8]) {
        match self {
            Hasher::Sha1(h) => out.copy_from_slice(&h.finalize()),
            Hasher::Sha256(h) => out.copy_from_slice(&h.finalize()),
            Hasher::Sha512(h) => out.copy_from_slice(&h.finalize()),
        }
    }
}

/// What the engine keeps of one submission.
#[derive(Default)]
struct Run {
    /// The digest so far of this submission (`None` until the engine checked the task).
    work: Option<Hasher>,
    /// Bytes of the source hashed so far.
    done: usize,
    /// The source's length, set when the engine checked the task.
    len: usize,
}

/// What both task types hold.
#[derive(Default)]
struct Common {
    alg: Algorithm,
    src: Option<Buf>,
    dst: Option<Buf>,
    run: Run,
}

/// The payload of a hash task.
#[derive(Default)]
#[doc(hidden)] // reached through HashTask
pub struct Hash {
    c: Common,
}

/// The payload of a partial-hash task: its session state besides the submission's.
#[derive(Default)]
#[doc(hidden)] // reached through PartialHashTask
pub struct Partial {
    c: Common,
    /// The digest of the segments completed so far (`None`: no segment yet).
    session: Option<Hasher>,
    is_final: bool,
    /// The final segment completed: the destination holds the digest.
    has_result: bool,
}

doca_core::task_handle! {
    /// `struct doca_sha_task_hash`: the digest of the source's data, written after the
    /// destination's data.
    pub struct HashTask(Hash);
}

doca_core::task_handle! {
    /// `struct doca_sha_task_partial_hash`: one task submitted once per segment of the data.
    pub struct PartialHashTask(Partial);
}

impl HashTask {
    /// `doca_sha_task_hash_get_src`.
    pub fn src(&self) -> Option<Buf> {
        self.0.with_payload(|p| p.c.src.clone())
    }

    /// `doca_sha_task_hash_set_src`: checked when the task is submitted.
    pub fn set_src(&self, src: Option<&Buf>) {
        self.0.with_payload(|p| p.c.src = src.cloned());
    }

    /// `doca_sha_task_hash_get_dst`.
    pub fn dst(&self) -> Option<Buf> {
        self.0.with_payload(|p| p.c.dst.clone())
    }

    /// `doca_sha_task_hash_set_dst`: checked when the task is submitted.
    pub fn set_dst(&self, dst: Option<&Buf>) {
        self.0.with_payload(|p| p.c.dst = dst.cloned());
    }

    /// `doca_sha_task_hash_get_algorithm`.
    pub fn algorithm(&self) -> Algorithm {
        self.0.with_payload(|p| p.c.alg)
    }

    /// `doca_sha_task_hash_set_algorithm`.
    pub fn set_algorithm(&self, alg: Algorithm) {
        self.0.with_payload(|p| p.c.alg = alg);
    }
}

impl PartialHashTask {
    /// `doca_sha_task_partial_hash_get_src`.
    pub fn src(&self) -> Option<Buf> {
        self.0.with_payload(|p| p.c.src.clone())
    }

    /// `doca_sha_task_partial_hash_set_src`: the next segment (checked when submitted).
    pub fn set_src(&self, src: Option<&Buf>) {
        self.0.with_payload(|p| p.c.src = src.cloned());
    }

    /// `doca_sha_task_partial_hash_get_dst`.
    pub fn dst(&self) -> Option<Buf> {
        self.0.with_payload(|p| p.c.dst.clone())
    }

    /// `doca_sha_task_partial_hash_set_dst`: before the session's first segment completed
    /// (after alloc_init or reset), else `BAD_STATE`.
    pub fn set_dst(&self, dst: Option<&Buf>) -> Result<()> {
        self.0.with_payload(|p| {
            if p.session.is_some() {
                bail!(
                    Error::BadState,
                    "sha: a partial hash's destination is fixed once a segment completed (reset first)"
                );
            }
            p.c.dst = dst.cloned();
            Ok(())
        })
    }

    /// `doca_sha_task_partial_hash_get_algorithm`.
    pub fn algorithm(&self) -> Algorithm {
        self.0.with_payload(|p| p.c.alg)
    }

    /// `doca_sha_task_partial_hash_set_algorithm`: before the session's first segment
    /// completed, else `BAD_STATE`.
    pub fn set_algorithm(&self, alg: Algorithm) -> Result<()> {
        self.0.with_payload(|p| {
            if p.session.is_some() {
                bail!(
                    Error::BadState,
                    "sha: a partial hash's algorithm is fixed once a segment completed (reset first)"
                );
            }
            p.c.alg = alg;
            Ok(())
        })
    }

    /// `doca_sha_task_partial_hash_set_is_final_buf`: the next submission is the last
    /// segment.
    pub fn set_is_final(&self) {
        self.0.with_payload(|p| p.is_final = true);
    }

    /// `doca_sha_task_partial_hash_get_is_final`.
    pub fn is_final(&self) -> bool {
        self.0.with_payload(|p| p.is_final)
    }

    /// `doca_sha_task_partial_hash_get_has_result`: the final segment completed and the
    /// destination holds the digest.
    pub fn has_result(&self) -> bool {
        self.0.with_payload(|p| p.has_result)
    }

    /// `doca_sha_task_partial_hash_reset`: forgets the session (the segments hashed, the
    /// final flag, the result flag); source, destination and algorithm stay.
    pub fn reset(&self) {
        self.0.with_payload(|p| {
            p.session = None;
            p.is_final = false;
            p.has_result = false;
            p.c.run = Run::default();
        });
    }
}

/// The limits of one run, read from the device's capabilities at start.
#[derive(Clone, Copy)]
struct Limits {
    max_src: u64,
    max_list_len: u32,
}

/// A queued task of either type.
#[derive(Clone, Copy)]
#[doc(hidden)] // the engine's queue entry (`Engine::Job`)
pub enum Job {
    /// A hash task.
    Hash(TaskId),
    /// A partial-hash task.
    Partial(TaskId),
}

/// The SHA engine: the hashing of the queued tasks of both types (core's
/// [`doca_core::queue`] kit runs the queue and the context).
#[doc(hidden)] // named by the task payloads (`TaskPayload::Lib`); reached through Sha
pub struct ShaOps {
    dev: Dev,
    hash: TaskPool<Hash>,
    partial: TaskPool<Partial>,
    limits: Cell<Limits>,
}

/// `struct doca_sha`: a SHA context on one device.
pub struct Sha {
    ctx: LibCtx<Fifo<ShaOps>>,
}

/// The pool size of a `log_num_tasks` (`u32::MAX` from 2^32 on: above any maximum).
fn pool_size(log_num_tasks: u8) -> u32 {
    1u32.checked_shl(log_num_tasks as u32).unwrap_or(u32::MAX)
}

impl Sha {
    /// `doca_sha_create`: a context on `dev`; `NOT_SUPPORTED` when the topology gives the
    /// device no SHA ([`caps::is_supported`]).
    pub fn create(dev: &Dev) -> Result<Sha> {
        doca_core::require(caps::is_supported(dev.as_devinfo()), "doca_sha_create")?;
        let limits = Limits { max_src: 0, max_list_len: 1 };
        let ctx = LibCtx::new(|weak| ShaOps {
            dev: dev.clone(),
            hash: TaskPool::new(weak.clone()),
            partial: TaskPool::new(weak.clone()),
            limits: Cell::new(limits),
        });
        Ok(Sha { ctx })
    }

    /// The largest pool of a task type (`sha.max_num_tasks`).
    fn max_num_tasks(&self) -> Result<u32> {
        caps::max_num_tasks(self.ctx.engine().dev.as_devinfo())
    }

    /// `doca_sha_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        self.ctx.as_ctx()
    }

    /// `doca_sha_task_hash_set_conf`: callbacks and `1 << log_num_tasks` tasks (at most
    /// `sha.max_num_tasks`, else `INVALID_VALUE`). Idle only (`BAD_STATE`).
    pub fn task_hash_set_conf(
        &self,
        completion: impl FnMut(HashTask, Data, Data) + 'static,
        error: impl FnMut(HashTask, Data, Data) + 'static,
        log_num_tasks: u8,
    ) -> Result<()> {
        self.ctx.set_conf(completion, error, pool_size(log_num_tasks), self.max_num_tasks()?)
    }

    /// `doca_sha_task_hash_alloc_init`: a task hashing `src`'s data into `dst`'s room with
    /// `alg`. Either buffer may be `None` and set later; nothing is checked before
    /// submission. Running only (`BAD_STATE`); every task out → `NO_MEMORY`.
    pub fn task_hash_alloc_init(
        &self,
        alg: Algorithm,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<HashTask> {
        let c = Common { alg, src: src.cloned(), dst: dst.cloned(), run: Run::default() };
        Ok(HashTask(self.ctx.alloc(user_data, |p: &mut Hash| *p = Hash { c })?))
    }

    /// `doca_sha_task_partial_hash_set_conf`: as [`Sha::task_hash_set_conf`].
    pub fn task_partial_hash_set_conf(
        &self,
        completion: impl FnMut(PartialHashTask, Data, Data) + 'static,
        error: impl FnMut(PartialHashTask, Data, Data) + 'static,
        log_num_tasks: u8,
    ) -> Result<()> {
        self.ctx.set_conf(completion, error, pool_size(log_num_tasks), self.max_num_tasks()?)
    }

    /// `doca_sha_task_partial_hash_alloc_init`: a partial-hash task with a fresh session.
    pub fn task_partial_hash_alloc_init(
        &self,
        alg: Algorithm,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<PartialHashTask> {
        let c = Common { alg, src: src.cloned(), dst: dst.cloned(), run: Run::default() };
        let t = self.ctx.alloc(user_data, |p: &mut Partial| {
            *p = Partial { c, session: None, is_final: false, has_result: false }
        })?;
        Ok(PartialHashTask(t))
    }

    /// `doca_sha_destroy`: Idle only (`IN_USE`, the header's code for a context to stop
    /// before destruction, and the context back).
    pub fn destroy(self) -> Result<(), Refused<Sha>> {
        self.ctx.destroy().map_err(|r| {
            let mut r = r.map(|ctx| Sha { ctx });
            if r.error == Error::BadState {
                r.error = Error::InUse;
            }
            r
        })
    }
}

/// The elements of the list headed by `head`, in order (`INVALID_VALUE` beyond `max`).
fn walk(head: &Buf, max: u32, mut f: impl FnMut(&Buf) -> Result<()>) -> Result<()> {
    let mut cur = Some(head.clone());
    let mut n = 0u32;
    while let Some(b) = cur {
        n += 1;
        if n > max {
            bail!(
                Error::InvalidValue,
                "sha: the source list has more than {max} elements (cap sha.max_list_buf_num_elem)"
            );
        }
        f(&b)?;
        cur = b.next_in_list()?;
    }
    Ok(())
}

/// The element of the list headed by `head` holding data byte `pos`, and the offset in it.
fn seek(head: &Buf, mut pos: usize) -> Result<(Buf, usize)> {
    let mut b = head.clone();
    loop {
        let n = b.data_len()?;
        if pos < n {
            return Ok((b, pos));
        }
        match b.next_in_list()? {
            Some(next) => {
                pos -= n;
                b = next;
            }
            None => return Ok((b, n.min(pos))),
        }
    }
}

/// The engine's view of a task type: its pool and its queue entry.
trait Kind: TaskPayload<Lib = Fifo<ShaOps>> {
    const WHAT: &'static str;
    fn pool(ops: &ShaOps) -> &TaskPool<Self>;
    fn job(id: TaskId) -> Job;
    fn common(&mut self) -> &mut Common;
    /// Checks of this type before the common ones.
    fn early(&self) -> Result<()> {
        Ok(())
    }
    /// Checks of this type after the common ones; the hash state to start from.
    fn begin(&mut self, dev: &Dev, len: usize) -> Result<Hasher>;
    /// The submission's hashing is complete: whether the digest is written now.
    fn end(&mut self, work: Hasher) -> Option<Hasher>;
}

impl Kind for Hash {
    const WHAT: &'static str = "hash";

    fn pool(ops: &ShaOps) -> &TaskPool<Self> {
        &ops.hash
    }

    fn job(id: TaskId) -> Job {
        Job::Hash(id)
    }

    fn common(&mut self) -> &mut Common {
        &mut self.c
    }

    fn begin(&mut self, dev: &Dev, _len: usize) -> Result<Hasher> {
        doca_core::require(caps::task_hash_is_supported(dev.as_devinfo(), self.c.alg), "doca_sha hash task")?;
        Ok(Hasher::new(self.c.alg))
    }

    fn end(&mut self, work: Hasher) -> Option<Hasher> {
        Some(work)
    }
}

impl Kind for Partial {
    const WHAT: &'static str = "partial hash";

    fn pool(ops: &ShaOps) -> &TaskPool<Self> {
        &ops.partial
    }

    fn job(id: TaskId) -> Job {
        Job::Partial(id)
    }

    fn common(&mut self) -> &mut Common {
        &mut self.c
    }

    fn early(&self) -> Result<()> {
        if self.has_result {
            bail!(
                Error::BadState,
                "sha: the partial hash's final segment completed; reset the task before a new session"
            );
        }
        Ok(())
    }

    fn begin(&mut self, dev: &Dev, len: usize) -> Result<Hasher> {
        doca_core::require(
            caps::task_partial_hash_is_supported(dev.as_devinfo(), self.c.alg),
            "doca_sha partial hash task",
        )?;
        let block = self.c.alg.block_len();
        if !self.is_final && len % block != 0 {
            bail!(
                Error::InvalidValue,
                "sha: a non-final partial segment of {len} bytes is not a multiple of the {}-byte block (doca_sha_cap_get_partial_hash_block_size)",
                block
            );
        }
        Ok(self.session.clone().unwrap_or_else(|| Hasher::new(self.c.alg)))
    }

    fn end(&mut self, work: Hasher) -> Option<Hasher> {
        if self.is_final {
            self.session = None;
            self.has_result = true;
            Some(work)
        } else {
            self.session = Some(work);
            None
        }
    }
}

impl ShaOps {
    fn pool<P: Kind>(&self) -> &TaskPool<P> {
        P::pool(self)
    }

    /// Whether `buf`'s map is one this device may reach (local, added to the device).
    fn check_map(&self, buf: &Buf, what: &str) -> Result<()> {
        let map = buf.map();
        if map.is_from_export() {
            bail!(
                Error::NotSupported,
                "sha: the {what} is a buffer of a map created from an export (not supported yet)"
            );
        }
        if !map.has_dev(&self.dev) {
            bail!(
                Error::NotPermitted,
                "sha: the {what}'s map was not added to the SHA's device (doca_mmap_add_dev)"
            );
        }
        map.check_live()
    }

    /// Every check of a task; returns the source's length and the hash state to start from.
    fn checks<P: Kind>(&self, id: TaskId) -> Result<(usize, Hasher)> {
        let limits = self.limits.get();
        let (src, dst, alg) = self
            .pool::<P>()
            .with_payload(id, |p| {
                p.early()?;
                let c = p.common();
                Ok::<_, Error>((c.src.clone(), c.dst.clone(), c.alg))
            })
            .ok_or(Error::BadState)??;
        let Some(src) = src else { bail!(Error::InvalidValue, "sha: the {} task has no source", P::WHAT) };
        let Some(dst) = dst else {
            bail!(Error::InvalidValue, "sha: the {} task has no destination", P::WHAT)
        };
        let mut len = 0usize;
        walk(&src, limits.max_list_len, |b| {
            self.check_map(b, "source")?;
            len = len.saturating_add(b.data_len()?);
            Ok(())
        })?;
        if len as u64 > limits.max_src {
            bail!(
                Error::InvalidValue,
                "sha: {len} bytes exceed the maximum {} (cap sha.max_src_buf_size)",
                limits.max_src
            );
        }
        self.check_map(&dst, "destination")?;
        if !dst.map().permissions().contains(AccessFlags::LOCAL_READ_WRITE) {
            bail!(Error::NotPermitted, "sha: the destination's map lacks DOCA_ACCESS_FLAG_LOCAL_READ_WRITE");
        }
        let room = dst.tail_room()?;
        if room < alg.digest_len() {
            bail!(
                Error::InvalidValue,
                "sha: the destination has room for {room} bytes after its data, a {} digest needs {} (doca_sha_cap_get_min_dst_buf_size)",
                alg.name(),
                alg.digest_len()
            );
        }
        let dev = &self.dev;
        let start = self.pool::<P>().with_payload(id, |p| p.begin(dev, len)).ok_or(Error::BadState)??;
        Ok((len, start))
    }

    /// Hashes up to `budget` bytes of task `id` from where it stopped; returns the bytes
    /// hashed.
    fn hash_some<P: Kind>(&self, id: TaskId, budget: usize) -> Result<usize> {
        let pool = self.pool::<P>();
        let (src, done, len, work) = pool
            .with_payload(id, |p| {
                let c = p.common();
                (c.src.clone(), c.run.done, c.run.len, c.run.work.take())
            })
            .ok_or(Error::BadState)?;
        let (Some(src), Some(mut work)) = (src, work) else { return Err(Error::InvalidValue) };
        let want = budget.min(len - done);
        let (mut b, mut off) = seek(&src, done)?;
        let mut n = 0;
        let res = loop {
            if n == want {
                break Ok(());
            }
            let shape = match b.shape() {
                Ok(s) => s,
                Err(e) => break Err(e),
            };
            let take = (want - n).min(shape.data_len - off);
            if take > 0 {
                match b.map().bytes(shape.data + off, take) {
                    Ok(bytes) => work.update(&bytes),
                    Err(e) => break Err(e),
                }
                n += take;
                off += take;
            }
            if n < want {
                match b.next_in_list() {
                    Ok(Some(next)) => {
                        b = next;
                        off = 0;
                    }
                    Ok(None) => break Err(fail!(Error::InvalidValue, "sha: the source list changed")),
                    Err(e) => break Err(e),
                }
            }
        };
        res?;
        pool.with_payload(id, |p| {
            let c = p.common();
            c.run.done += n;
            c.run.work = Some(work);
        });
        Ok(n)
    }

    /// The source of `id` is hashed: the session moves on and, when a digest is due, it is
    /// written after the destination's data.
    fn settle<P: Kind>(&self, id: TaskId) -> Result<()> {
        let pool = self.pool::<P>();
        let (dst, alg, work) = pool
            .with_payload(id, |p| {
                let c = p.common();
                (c.dst.clone(), c.alg, c.run.work.take())
            })
            .ok_or(Error::BadState)?;
        let (Some(dst), Some(work)) = (dst, work) else { return Err(Error::InvalidValue) };
        // Write first: a destination that went bad meanwhile leaves the session unchanged.
        let n = alg.digest_len();
        let shape = dst.shape()?;
        if shape.room() < n {
            bail!(Error::InvalidValue, "sha: the destination's room shrank below the digest length");
        }
        let Some(digest) = pool.with_payload(id, |p| p.end(work)).ok_or(Error::BadState)? else {
            return Ok(());
        };
        let mut to = dst.map().bytes_mut(shape.data_end(), n)?;
        digest.finish_into(&mut to);
        drop(to);
        dst.increase_data_len(n)
    }

    /// Advances task `id` by at most `budget` bytes: how far it got.
    fn advance<P: Kind>(&self, id: TaskId, budget: usize) -> Step {
        let pool = self.pool::<P>();
        let checked = pool.with_payload(id, |p| p.common().run.work.is_some()).unwrap_or(false);
        if !checked {
            match self.checks::<P>(id) {
                Ok((len, start)) => {
                    pool.with_payload(id, |p| p.common().run = Run { work: Some(start), done: 0, len });
                }
                Err(e) => return Step::Failed(e),
            }
        }
        let status = self.hash_some::<P>(id, budget).and_then(|n| {
            let (done, len) =
                pool.with_payload(id, |p| (p.common().run.done, p.common().run.len)).unwrap_or((0, 0));
            if done < len {
                return Ok(Step::Partial(n));
            }
            self.settle::<P>(id).map(|()| Step::Done(n))
        });
        status.unwrap_or_else(Step::Failed)
    }
}

/// Front task first, at most [`caps::BYTES_PER_PASS`] bytes a pass (`sha.bytes_per_pass`).
impl Engine for ShaOps {
    type Job = Job;
    const KIND: &'static str = "sha";
    const FAILED: &'static str = "a hash or partial-hash task failed";

    fn device(&self) -> Option<doca_core::PciAddr> {
        Some(self.dev.as_devinfo().pci_addr())
    }

    fn start(&self) -> Result<Sizes> {
        let info = self.dev.as_devinfo();
        let max_src = caps::max_src_buf_size(info)?;
        self.limits.set(Limits { max_src, max_list_len: caps::max_list_buf_num_elem(info)? });
        self.hash.prepare(Hash::default);
        self.partial.prepare(Partial::default);
        let tasks = (self.hash.capacity() + self.partial.capacity()) as usize;
        Ok(Sizes { tasks, bytes_per_pass: caps::bytes_per_pass(info)? })
    }

    fn step(&self, job: Job, budget: usize) -> Step {
        match job {
            Job::Hash(id) => self.advance::<Hash>(id, budget),
            Job::Partial(id) => self.advance::<Partial>(id, budget),
        }
    }

    fn finish(&self, job: Job, status: Result<()>) {
        match job {
            Job::Hash(id) => self.hash.finish(id, status),
            Job::Partial(id) => self.partial.finish(id, status),
        };
    }
}

/// Both task types: queued as they are, checked when the engine reaches them.
impl<P: Kind> EngineTask<P> for ShaOps {
    fn pool(&self) -> &TaskPool<P> {
        P::pool(self)
    }

    fn job(id: TaskId) -> Job {
        P::job(id)
    }

    fn validate(&self, id: TaskId) -> Result<()> {
        self.checks::<P>(id).map(|_| ())
    }

    /// A new submission: a partial hash's session goes on, the submission's run starts over.
    fn queued(&self, id: TaskId) {
        P::pool(self).with_payload(id, |p| p.common().run = Run::default());
    }
}

impl TaskPayload for Hash {
    type Lib = Fifo<ShaOps>;
    const FAULT_KIND: &'static str = "sha.hash";
}

impl TaskPayload for Partial {
    type Lib = Fifo<ShaOps>;
    const FAULT_KIND: &'static str = "sha.partial_hash";
}
