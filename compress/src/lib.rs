//! DOCA Compress (`doca_compress.h`): DEFLATE compress and decompress tasks and LZ4
//! decompress tasks over buffers of local memory maps, as a library context on core's
//! plug-in interface. The codecs are well-kept crates (see [`codec`]): raw DEFLATE by
//! `miniz_oxide`, LZ4 blocks by `lz4_flex`; the checksums are zlib's CRC-32 and Adler-32
//! (`crc32fast`, `adler2`) and xxHash-32 (`xxhash-rust`).
//!
//! | DOCA                                          | here                                   |
//! |-----------------------------------------------|----------------------------------------|
//! | `struct doca_compress`, `doca_compress_create`/`_destroy`/`_as_ctx` | [`Compress`]: [`Compress::create`], [`Compress::destroy`], [`Compress::as_ctx`] |
//! | `doca_compress_cap_get_max_num_tasks` (2.5: `doca_compress_get_max_num_tasks`) | [`Compress::cap_get_max_num_tasks`] |
//! | `doca_compress_cap_task_<type>_is_supported`/`_get_max_buf_size`/`_get_max_buf_list_len` | [`caps::task_is_supported`], [`caps::task_max_buf_size`], [`caps::task_max_buf_list_len`] with a [`caps::TaskType`] |
//! | `doca_compress_task_compress_deflate_*`       | [`Compress::task_compress_deflate_set_conf`], [`Compress::task_compress_deflate_alloc_init`], [`CompressDeflateTask`] |
//! | `doca_compress_task_decompress_deflate_*`     | [`Compress::task_decompress_deflate_set_conf`], [`Compress::task_decompress_deflate_alloc_init`], [`DecompressDeflateTask`] |
//! | `doca_compress_task_decompress_lz4_*` (2.5/2.6) | [`Compress::task_decompress_lz4_set_conf`], [`Compress::task_decompress_lz4_alloc_init`], [`DecompressLz4Task`] |
//! | `doca_compress_task_decompress_lz4_stream_*` (2.7+) | [`Compress::task_decompress_lz4_stream_set_conf`], [`Compress::task_decompress_lz4_stream_alloc_init`], [`DecompressLz4StreamTask`] |
//! | `doca_compress_task_decompress_lz4_block_*` (2.7+) | [`Compress::task_decompress_lz4_block_set_conf`], [`Compress::task_decompress_lz4_block_alloc_init`], [`DecompressLz4BlockTask`] |
//!
//! **What each task reads and writes.** The output lands in the destination's free room right
//! after its data (`data + data_len`), element after element of a destination list, and the
//! data lengths grow by what was written when the task completes (so a destination from
//! `buf_get_by_addr` ends holding exactly the output). The checksums are of the uncompressed
//! bytes (the source of a compress task, the output of a decompress task).
//!
//! | task | source | output | checksums |
//! |------|--------|--------|-----------|
//! | compress deflate | any bytes | raw DEFLATE (RFC 1951, no zlib or gzip framing), level 6: a valid stream any inflater reads, **not the bytes the hardware would write** | CRC-32, Adler-32 (zlib's) |
//! | decompress deflate | one raw DEFLATE stream; bytes after its final block are ignored | the data | CRC-32, Adler-32 |
//! | decompress LZ4 (2.5/2.6) | one whole LZ4 frame (magic, header, blocks, end mark, optional content checksum, which is verified); bytes after it are ignored | the data | CRC-32, Adler-32 |
//! | decompress LZ4 stream | the blocks of an LZ4 frame without its header and footer: each block a 4-byte little-endian size (high bit: stored uncompressed), its bytes, and its xxHash-32 when `has_block_checksum` (verified); an end mark (size 0) ends it early. Dependent blocks (`are_blocks_independent` 0) refer to the 64 KiB before them | the data | CRC-32, xxHash-32 byte-swapped (the frame's stored content checksum read big-endian, as DOCA's sample compares it) |
//! | decompress LZ4 block | one LZ4 block (no size header) | the data | CRC-32, xxHash-32 byte-swapped |
//!
//! **The engine.** A submitted task joins the context's queue (every task type in one queue,
//! in submission order); the work is the emulated engine's, inside the progress engine's
//! `progress` (never in submit). Each pass works through at most [`caps::BYTES_PER_PASS`]
//! source bytes (1 MiB by default) per context, front task first: DEFLATE both ways is
//! streamed, LZ4 goes block by block (an LZ4 block task is one block, done in one pass).
//! While tasks wait, the context asks to be polled.
//!
//! **Checks and codes.** As for every engine library ([`doca_core::queue`]): `doca_task_submit`
//! does not validate; a bad task completes through the error callback when the engine reaches
//! it, and the failure is fatal to the context (Stopping, queued tasks flushed with
//! [`FLUSH_STATUS`], Idle once they are freed). `doca_task_try_submit` makes the checks that
//! need no decoding first and refuses with `INVALID_VALUE`. DOCA's headers document no status
//! for corrupt input or an output that does not fit: the two rows marked *ours* are this
//! library's choice.
//!
//! | the task                                                        | error callback status |
//! |-----------------------------------------------------------------|-----------------------|
//! | no source or no destination set                                 | `INVALID_VALUE`       |
//! | source data of 0 bytes; destination with no free room           | `INVALID_VALUE`       |
//! | source above `compress.max_buf_size`, a list above `compress.max_buf_list_len` | `INVALID_VALUE` |
//! | a task type the topology takes away (`compress.<type> 0`)       | `NOT_SUPPORTED`       |
//! | a buffer of a map not added to the context's device             | `NOT_PERMITTED`       |
//! | a destination whose map lacks `LOCAL_READ_WRITE`                | `NOT_PERMITTED`       |
//! | a buffer of a map created from an export, but for the LZ4 stream and LZ4 frame tasks (which copy through it: NVIDIA's storage application decompresses into the host's memory) | `NOT_SUPPORTED` |
//! | a destination of a map from export whose exporter did not grant `PCI_READ_WRITE` | `NOT_PERMITTED` |
//! | a buffer returned to its inventory meanwhile                    | `BAD_STATE`           |
//! | source and destination overlapping in one map                   | `IN_USE`              |
//! | *ours*: corrupt or truncated input (a bad DEFLATE stream, a bad LZ4 block, a block or content checksum that does not match, a bad frame header, a block above the 4 MiB LZ4 maximum) | `INVALID_VALUE` |
//! | *ours*: the output does not fit the destination's free room     | `TOO_BIG`             |
//! | an LZ4 frame with a dictionary ID (2.5/2.6 task)                | `NOT_SUPPORTED`       |
//! | the context stopped, or a task before it failed, before it completed | [`FLUSH_STATUS`] (`SHUTDOWN`) |
//!
//! A task that fails part-way may have written part of its destination's room; it changes no
//! data length.

#![forbid(unsafe_code)]

pub mod caps;
pub mod codec;

use std::cell::{Cell, RefCell};

use caps::TaskType;
use codec::{BlockHeader, Deflater, FrameInfo, Inflater, Lz4Scratch, Sums, LZ4_MAX_BLOCK};
use doca_buf::Buf;
use doca_core::queue::{Engine, EngineTask, Fifo, LibCtx, Sizes, Step};
use doca_core::{bail, Ctx, Data, Dev, Error, Refused, Result, TaskId, TaskPayload, TaskPool};
use doca_mmap::AccessFlags;

/// Status of the tasks a stop or a failure flushes: `DOCA_ERROR_SHUTDOWN`.
pub const FLUSH_STATUS: Error = doca_core::queue::FLUSH_STATUS;

/// What every task type holds: its buffers and the checksums of its last completion.
#[derive(Default)]
struct Common {
    src: Option<Buf>,
    dst: Option<Buf>,
    crc: u32,
    /// Adler-32 or xxHash-32, as the task type reports.
    second: u32,
}

/// The payload of a compress deflate task.
#[derive(Default)]
#[doc(hidden)] // reached through CompressDeflateTask
pub struct DeflateP {
    c: Common,
}

/// The payload of a decompress deflate task.
#[derive(Default)]
#[doc(hidden)] // reached through DecompressDeflateTask
pub struct InflateP {
    c: Common,
}

/// The payload of a decompress LZ4 (frame) task.
#[derive(Default)]
#[doc(hidden)] // reached through DecompressLz4Task
pub struct Lz4FrameP {
    c: Common,
}

/// The payload of a decompress LZ4 stream task.
#[derive(Default)]
#[doc(hidden)] // reached through DecompressLz4StreamTask
pub struct Lz4StreamP {
    c: Common,
    has_block_checksum: bool,
    are_blocks_independent: bool,
}

/// The payload of a decompress LZ4 block task.
#[derive(Default)]
#[doc(hidden)] // reached through DecompressLz4BlockTask
pub struct Lz4BlockP {
    c: Common,
}

doca_core::task_handle! {
    /// `struct doca_compress_task_compress_deflate`: the source's data compressed as raw
    /// DEFLATE into the destination's room.
    pub struct CompressDeflateTask(DeflateP);
}

doca_core::task_handle! {
    /// `struct doca_compress_task_decompress_deflate`: a raw DEFLATE stream decompressed into
    /// the destination's room.
    pub struct DecompressDeflateTask(InflateP);
}

doca_core::task_handle! {
    /// `struct doca_compress_task_decompress_lz4` (DOCA 2.5/2.6): one whole LZ4 frame
    /// decompressed into the destination's room.
    pub struct DecompressLz4Task(Lz4FrameP);
}

doca_core::task_handle! {
    /// `struct doca_compress_task_decompress_lz4_stream`: the block sequence of an LZ4 frame
    /// (no frame header or footer) decompressed into the destination's room.
    pub struct DecompressLz4StreamTask(Lz4StreamP);
}

doca_core::task_handle! {
    /// `struct doca_compress_task_decompress_lz4_block`: one LZ4 block decompressed into the
    /// destination's room.
    pub struct DecompressLz4BlockTask(Lz4BlockP);
}

/// The accessors every task type has (`_get_src`, `_set_src`, `_get_dst`, `_set_dst`,
/// `_get_crc_cs`).
macro_rules! io_accessors {
    ($task:ident, $c:literal) => {
        impl $task {
            #[doc = concat!("`doca_compress_task_", $c, "_get_src`.")]
            pub fn src(&self) -> Option<Buf> {
                self.0.with_payload(|p| p.c.src.clone())
            }

            #[doc = concat!("`doca_compress_task_", $c, "_set_src`: checked when the task is submitted.")]
            pub fn set_src(&self, src: Option<&Buf>) {
                self.0.with_payload(|p| p.c.src = src.cloned());
            }

            #[doc = concat!("`doca_compress_task_", $c, "_get_dst`.")]
            pub fn dst(&self) -> Option<Buf> {
                self.0.with_payload(|p| p.c.dst.clone())
            }

            #[doc = concat!("`doca_compress_task_", $c, "_set_dst`: checked when the task is submitted.")]
            pub fn set_dst(&self, dst: Option<&Buf>) {
                self.0.with_payload(|p| p.c.dst = dst.cloned());
            }

            #[doc = concat!("`doca_compress_task_", $c, "_get_crc_cs`: zlib's CRC-32 of the uncompressed bytes of the last completion (0 before one).")]
            pub fn crc_cs(&self) -> u32 {
                self.0.with_payload(|p| p.c.crc)
            }
        }
    };
}

io_accessors!(CompressDeflateTask, "compress_deflate");
io_accessors!(DecompressDeflateTask, "decompress_deflate");
io_accessors!(DecompressLz4Task, "decompress_lz4");
io_accessors!(DecompressLz4StreamTask, "decompress_lz4_stream");
io_accessors!(DecompressLz4BlockTask, "decompress_lz4_block");

impl CompressDeflateTask {
    /// `doca_compress_task_compress_deflate_get_adler_cs`: zlib's Adler-32 of the source.
    pub fn adler_cs(&self) -> u32 {
        self.0.with_payload(|p| p.c.second)
    }
}

impl DecompressDeflateTask {
    /// `doca_compress_task_decompress_deflate_get_adler_cs`: zlib's Adler-32 of the output.
    pub fn adler_cs(&self) -> u32 {
        self.0.with_payload(|p| p.c.second)
    }
}

impl DecompressLz4Task {
    /// `doca_compress_task_decompress_lz4_get_adler_cs`: zlib's Adler-32 of the output.
    pub fn adler_cs(&self) -> u32 {
        self.0.with_payload(|p| p.c.second)
    }
}

impl DecompressLz4StreamTask {
    /// `doca_compress_task_decompress_lz4_stream_get_xxh_cs`: the xxHash-32 (seed 0) of the
    /// output, byte-swapped as DOCA reports it — the 4 bytes an LZ4 frame's content checksum
    /// stores, read big-endian (NVIDIA's decompress_lz4_stream sample compares them so).
    pub fn xxh_cs(&self) -> u32 {
        self.0.with_payload(|p| p.c.second)
    }

    /// `doca_compress_task_decompress_lz4_stream_get_has_block_checksum`.
    pub fn has_block_checksum(&self) -> bool {
        self.0.with_payload(|p| p.has_block_checksum)
    }

    /// `doca_compress_task_decompress_lz4_stream_set_has_block_checksum`: each block is
    /// followed by the xxHash-32 of its stored bytes (verified).
    pub fn set_has_block_checksum(&self, v: bool) {
        self.0.with_payload(|p| p.has_block_checksum = v);
    }

    /// `doca_compress_task_decompress_lz4_stream_get_are_blocks_independent`.
    pub fn are_blocks_independent(&self) -> bool {
        self.0.with_payload(|p| p.are_blocks_independent)
    }

    /// `doca_compress_task_decompress_lz4_stream_set_are_blocks_independent`: whether blocks
    /// never refer to the output of the blocks before them.
    pub fn set_are_blocks_independent(&self, v: bool) {
        self.0.with_payload(|p| p.are_blocks_independent = v);
    }
}

impl DecompressLz4BlockTask {
    /// `doca_compress_task_decompress_lz4_block_get_xxh_cs`: the xxHash-32 (seed 0) of the
    /// output, byte-swapped as DOCA reports it (see [`DecompressLz4StreamTask::xxh_cs`]).
    pub fn xxh_cs(&self) -> u32 {
        self.0.with_payload(|p| p.c.second)
    }
}

/// The limits of one run, read from the device's capabilities at start.
#[derive(Clone, Copy)]
struct Limits {
    max_buf: u64,
    max_list_len: u32,
}

/// A queued task of any type.
#[derive(Clone, Copy, PartialEq, Eq)]
#[doc(hidden)] // the engine's queue entry (`Engine::Job`)
pub enum Job {
    /// A compress deflate task.
    Deflate(TaskId),
    /// A decompress deflate task.
    Inflate(TaskId),
    /// A decompress LZ4 (frame) task.
    Lz4Frame(TaskId),
    /// A decompress LZ4 stream task.
    Lz4Stream(TaskId),
    /// A decompress LZ4 block task.
    Lz4Block(TaskId),
}

/// Where an LZ4 frame task is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// Before the frame header (frame tasks) or the first block (stream tasks).
    Header,
    /// Among the blocks.
    Blocks,
    /// After the end mark: the content checksum, if any.
    Trailer,
}

/// The front task's run: its buffers, its cursors, its checksums so far.
struct Run {
    job: Job,
    src: Buf,
    dst: Buf,
    /// The source's data length.
    len: usize,
    /// Source bytes consumed.
    src_pos: usize,
    /// Destination bytes written (into the room after the data).
    dst_pos: usize,
    sums: Sums,
    part: Part,
    frame: FrameInfo,
}

/// The engine's working state: the front task's run and the codecs, made once per context.
#[derive(Default)]
struct Work {
    run: Option<Run>,
    deflater: Option<Deflater>,
    inflater: Option<Inflater>,
    lz4: Lz4Scratch,
}

/// The compress engine: the work of the queued tasks of every type (core's
/// [`doca_core::queue`] kit runs the queue and the context).
#[doc(hidden)] // named by the task payloads (`TaskPayload::Lib`); reached through Compress
pub struct CompressOps {
    dev: Dev,
    deflate: TaskPool<DeflateP>,
    inflate: TaskPool<InflateP>,
    lz4_frame: TaskPool<Lz4FrameP>,
    lz4_stream: TaskPool<Lz4StreamP>,
    lz4_block: TaskPool<Lz4BlockP>,
    limits: Cell<Limits>,
    work: RefCell<Work>,
}

/// `struct doca_compress`: a compress context on one device.
pub struct Compress {
    ctx: LibCtx<Fifo<CompressOps>>,
}

impl Compress {
    /// `doca_compress_create`: a context on `dev`; `NOT_SUPPORTED` when the topology gives the
    /// device no compress task type ([`caps::is_supported`]).
    pub fn create(dev: &Dev) -> Result<Compress> {
        doca_core::require(caps::is_supported(dev.as_devinfo()), "doca_compress_create")?;
        let ctx = LibCtx::new(|weak| CompressOps {
            dev: dev.clone(),
            deflate: TaskPool::new(weak.clone()),
            inflate: TaskPool::new(weak.clone()),
            lz4_frame: TaskPool::new(weak.clone()),
            lz4_stream: TaskPool::new(weak.clone()),
            lz4_block: TaskPool::new(weak.clone()),
            limits: Cell::new(Limits { max_buf: 0, max_list_len: 1 }),
            work: RefCell::new(Work::default()),
        });
        Ok(Compress { ctx })
    }

    /// `doca_compress_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        self.ctx.as_ctx()
    }

    /// `doca_compress_cap_get_max_num_tasks` (2.5: `doca_compress_get_max_num_tasks`): the
    /// tasks of every type together (`compress.max_num_tasks`).
    pub fn cap_get_max_num_tasks(&self) -> Result<u32> {
        caps::max_num_tasks(self.ctx.engine().dev.as_devinfo())
    }

    /// What the pool now sized `this` may hold: the maximum less the other types' configured
    /// tasks (DOCA: the sum of the num tasks must not exceed it).
    fn room_for(&self, this: u32) -> Result<u32> {
        let e = self.ctx.engine();
        let pools = [e.deflate.capacity(), e.inflate.capacity(), e.lz4_frame.capacity()];
        let all: u64 =
            pools.into_iter().chain([e.lz4_stream.capacity(), e.lz4_block.capacity()]).map(u64::from).sum();
        let others = all - u64::from(this);
        Ok(u64::from(self.cap_get_max_num_tasks()?).saturating_sub(others) as u32)
    }

    /// `doca_compress_task_compress_deflate_set_conf`: callbacks and pool size
    /// (1 or more; with the other task types' at most `compress.max_num_tasks`, else
    /// `INVALID_VALUE`). Idle only (`BAD_STATE`).
    pub fn task_compress_deflate_set_conf(
        &self,
        completion: impl FnMut(CompressDeflateTask, Data, Data) + 'static,
        error: impl FnMut(CompressDeflateTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.set_conf(completion, error, num_tasks, self.room_for(self.ctx.engine().deflate.capacity())?)
    }

    /// `doca_compress_task_compress_deflate_alloc_init`: a task compressing `src`'s data into
    /// `dst`'s room. Either buffer may be `None` and set later; nothing is checked before
    /// submission. Running only (`BAD_STATE`); every task out → `NO_MEMORY`.
    pub fn task_compress_deflate_alloc_init(
        &self,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<CompressDeflateTask> {
        let c = common(src, dst);
        Ok(CompressDeflateTask(self.ctx.alloc(user_data, |p: &mut DeflateP| *p = DeflateP { c })?))
    }

    /// `doca_compress_task_decompress_deflate_set_conf`: as
    /// [`Compress::task_compress_deflate_set_conf`].
    pub fn task_decompress_deflate_set_conf(
        &self,
        completion: impl FnMut(DecompressDeflateTask, Data, Data) + 'static,
        error: impl FnMut(DecompressDeflateTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.set_conf(completion, error, num_tasks, self.room_for(self.ctx.engine().inflate.capacity())?)
    }

    /// `doca_compress_task_decompress_deflate_alloc_init`.
    pub fn task_decompress_deflate_alloc_init(
        &self,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<DecompressDeflateTask> {
        let c = common(src, dst);
        Ok(DecompressDeflateTask(self.ctx.alloc(user_data, |p: &mut InflateP| *p = InflateP { c })?))
    }

    /// `doca_compress_task_decompress_lz4_set_conf` (DOCA 2.5/2.6).
    pub fn task_decompress_lz4_set_conf(
        &self,
        completion: impl FnMut(DecompressLz4Task, Data, Data) + 'static,
        error: impl FnMut(DecompressLz4Task, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.set_conf(
            completion,
            error,
            num_tasks,
            self.room_for(self.ctx.engine().lz4_frame.capacity())?,
        )
    }

    /// `doca_compress_task_decompress_lz4_alloc_init` (DOCA 2.5/2.6): the source is one whole
    /// LZ4 frame.
    pub fn task_decompress_lz4_alloc_init(
        &self,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<DecompressLz4Task> {
        let c = common(src, dst);
        Ok(DecompressLz4Task(self.ctx.alloc(user_data, |p: &mut Lz4FrameP| *p = Lz4FrameP { c })?))
    }

    /// `doca_compress_task_decompress_lz4_stream_set_conf`.
    pub fn task_decompress_lz4_stream_set_conf(
        &self,
        completion: impl FnMut(DecompressLz4StreamTask, Data, Data) + 'static,
        error: impl FnMut(DecompressLz4StreamTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.set_conf(
            completion,
            error,
            num_tasks,
            self.room_for(self.ctx.engine().lz4_stream.capacity())?,
        )
    }

    /// `doca_compress_task_decompress_lz4_stream_alloc_init`: the source is the block
    /// sequence of an LZ4 frame; the two flags say how its blocks are stored.
    pub fn task_decompress_lz4_stream_alloc_init(
        &self,
        has_block_checksum: bool,
        are_blocks_independent: bool,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<DecompressLz4StreamTask> {
        let c = common(src, dst);
        let t = self.ctx.alloc(user_data, |p: &mut Lz4StreamP| {
            *p = Lz4StreamP { c, has_block_checksum, are_blocks_independent }
        })?;
        Ok(DecompressLz4StreamTask(t))
    }

    /// `doca_compress_task_decompress_lz4_block_set_conf`.
    pub fn task_decompress_lz4_block_set_conf(
        &self,
        completion: impl FnMut(DecompressLz4BlockTask, Data, Data) + 'static,
        error: impl FnMut(DecompressLz4BlockTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.set_conf(
            completion,
            error,
            num_tasks,
            self.room_for(self.ctx.engine().lz4_block.capacity())?,
        )
    }

    /// `doca_compress_task_decompress_lz4_block_alloc_init`: the source is one LZ4 block.
    pub fn task_decompress_lz4_block_alloc_init(
        &self,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<DecompressLz4BlockTask> {
        let c = common(src, dst);
        Ok(DecompressLz4BlockTask(self.ctx.alloc(user_data, |p: &mut Lz4BlockP| *p = Lz4BlockP { c })?))
    }

    /// `doca_compress_destroy`: Idle only (`BAD_STATE`, and the context back).
    pub fn destroy(self) -> Result<(), Refused<Compress>> {
        self.ctx.destroy().map_err(|r| r.map(|ctx| Compress { ctx }))
    }
}

fn common(src: Option<&Buf>, dst: Option<&Buf>) -> Common {
    Common { src: src.cloned(), dst: dst.cloned(), crc: 0, second: 0 }
}

/// The engine's view of a task type.
trait Kind: TaskPayload<Lib = Fifo<CompressOps>> {
    const TYPE: TaskType;
    fn pool(ops: &CompressOps) -> &TaskPool<Self>;
    fn job(id: TaskId) -> Job;
    fn common(&mut self) -> &mut Common;
    /// (has_block_checksum, are_blocks_independent) of an LZ4 stream task.
    fn flags(&self) -> (bool, bool) {
        (false, true)
    }
}

macro_rules! kind {
    ($p:ty, $ty:ident, $pool:ident, $job:ident) => {
        impl Kind for $p {
            const TYPE: TaskType = TaskType::$ty;
            fn pool(ops: &CompressOps) -> &TaskPool<Self> {
                &ops.$pool
            }
            fn job(id: TaskId) -> Job {
                Job::$job(id)
            }
            fn common(&mut self) -> &mut Common {
                &mut self.c
            }
        }
    };
}

kind!(DeflateP, CompressDeflate, deflate, Deflate);
kind!(InflateP, DecompressDeflate, inflate, Inflate);
kind!(Lz4FrameP, DecompressLz4, lz4_frame, Lz4Frame);
kind!(Lz4BlockP, DecompressLz4Block, lz4_block, Lz4Block);

impl Kind for Lz4StreamP {
    const TYPE: TaskType = TaskType::DecompressLz4Stream;
    fn pool(ops: &CompressOps) -> &TaskPool<Self> {
        &ops.lz4_stream
    }
    fn job(id: TaskId) -> Job {
        Job::Lz4Stream(id)
    }
    fn common(&mut self) -> &mut Common {
        &mut self.c
    }
    fn flags(&self) -> (bool, bool) {
        (self.has_block_checksum, self.are_blocks_independent)
    }
}

/// The element of the list headed by `head` holding byte `pos` of its data (or, with
/// `room`, of its free room after the data): the element, the byte's offset in the map, and
/// the bytes of the element from there. `None` past the end.
fn locate(head: &Buf, mut pos: usize, room: bool) -> Result<Option<(Buf, usize, usize)>> {
    let mut b = head.clone();
    loop {
        let s = b.shape()?;
        let (start, n) = if room { (s.data_end(), s.room()) } else { (s.data, s.data_len) };
        if pos < n {
            return Ok(Some((b, start + pos, n - pos)));
        }
        pos -= n;
        match b.next_in_list()? {
            Some(next) => b = next,
            None => return Ok(None),
        }
    }
}

/// The elements of the list headed by `head`, in order (`INVALID_VALUE` beyond `max`): the
/// shared walk of `doca_buf::list`.
fn walk(head: &Buf, max: u32, what: &str, mut f: impl FnMut(&Buf) -> Result<()>) -> Result<()> {
    for b in doca_buf::list::elements(
        head,
        max,
        format_args!("compress: the {what}"),
        "cap compress.max_buf_list_len",
    )? {
        f(&b)?;
    }
    Ok(())
}

/// The destination's data lengths grow by `len` bytes written into its room, element by
/// element.
fn settle(dst: &Buf, len: usize) -> Result<()> {
    let mut left = len;
    let mut cur = Some(dst.clone());
    while let (Some(b), true) = (cur, left > 0) {
        let n = left.min(b.tail_room()?);
        b.increase_data_len(n)?;
        left -= n;
        cur = if left > 0 { b.next_in_list()? } else { None };
    }
    Ok(())
}

/// The limit of the output: `TOO_BIG`, our status for an output that does not fit.
fn too_big(what: &str) -> Error {
    doca_core::fail!(
        Error::TooBig,
        "compress: the {what} output does not fit the destination's free room (the task's output is larger)"
    )
}

impl Run {
    /// Appends the next `n` source bytes to `out` (`INVALID_VALUE` when the source ends
    /// first: a truncated input).
    fn read(&mut self, n: usize, out: &mut Vec<u8>, what: &str) -> Result<()> {
        if self.len - self.src_pos < n {
            bail!(
                Error::InvalidValue,
                "compress: the source ends inside {what} ({} bytes left, {n} needed)",
                self.len - self.src_pos
            );
        }
        let mut left = n;
        while left > 0 {
            let Some((b, off, avail)) = locate(&self.src, self.src_pos, false)? else {
                bail!(Error::InvalidValue, "compress: the source list changed");
            };
            let take = left.min(avail);
            // A copy (not a borrow): the map may be an import served by its exporter.
            let at = out.len();
            out.resize(at + take, 0);
            b.map().read(off, &mut out[at..])?;
            self.src_pos += take;
            left -= take;
        }
        Ok(())
    }

    /// Reads 4 source bytes.
    fn read4(&mut self, scratch: &mut Vec<u8>, what: &str) -> Result<[u8; 4]> {
        scratch.clear();
        self.read(4, scratch, what)?;
        Ok([scratch[0], scratch[1], scratch[2], scratch[3]])
    }

    /// Writes `bytes` into the destination's room after what was written.
    fn write(&mut self, bytes: &[u8], what: &str) -> Result<()> {
        let mut done = 0;
        while done < bytes.len() {
            let Some((b, off, room)) = locate(&self.dst, self.dst_pos, true)? else {
                return Err(too_big(what));
            };
            let n = room.min(bytes.len() - done);
            // A copy (not a borrow): the map may be an import served by its exporter.
            b.map().write(off, &bytes[done..done + n])?;
            done += n;
            self.dst_pos += n;
        }
        Ok(())
    }
}

impl CompressOps {
    fn pool<P: Kind>(&self) -> &TaskPool<P> {
        P::pool(self)
    }

    /// Whether `buf`'s map is one this device may reach: local and added to the device, or
    /// (`imports`: the LZ4 stream and frame tasks, which copy in and out) created from an
    /// export with the device, whose exporter granted `PCI_READ_WRITE` for a destination.
    fn check_map(&self, buf: &Buf, what: &str, write: bool, imports: bool) -> Result<()> {
        let map = buf.map();
        if map.is_from_export() {
            if !imports {
                bail!(
                    Error::NotSupported,
                    "compress: the {what} is a buffer of a map created from an export (only the LZ4 stream and frame tasks take one)"
                );
            }
            let Some(perms) = map.dev_permissions(&self.dev) else {
                bail!(
                    Error::NotPermitted,
                    "compress: the {what}'s map was created from an export with another device than the compress context's"
                );
            };
            map.check_live()?;
            if write && !perms.contains(AccessFlags::PCI_READ_WRITE) {
                bail!(
                    Error::NotPermitted,
                    "compress: the destination's exporter did not grant DOCA_ACCESS_FLAG_PCI_READ_WRITE"
                );
            }
            return Ok(());
        }
        let Some(perms) = map.dev_permissions(&self.dev) else {
            bail!(
                Error::NotPermitted,
                "compress: the {what}'s map was not added to the compress context's device (doca_mmap_add_dev)"
            );
        };
        map.check_live()?;
        if write && !perms.contains(AccessFlags::LOCAL_READ_WRITE) {
            bail!(
                Error::NotPermitted,
                "compress: the destination's map lacks DOCA_ACCESS_FLAG_LOCAL_READ_WRITE"
            );
        }
        Ok(())
    }

    /// Every check of a task that needs no decoding; returns its buffers, the source's
    /// length and its LZ4 stream flags.
    fn checks<P: Kind>(&self, id: TaskId) -> Result<(Buf, Buf, usize, (bool, bool))> {
        let limits = self.limits.get();
        let what = P::TYPE.name();
        doca_core::require(caps::task_is_supported(self.dev.as_devinfo(), P::TYPE), "doca_compress task")?;
        let (src, dst, flags) = self
            .pool::<P>()
            .with_payload(id, |p| {
                let flags = p.flags();
                let c = p.common();
                (c.src.clone(), c.dst.clone(), flags)
            })
            .ok_or(Error::BadState)?;
        let Some(src) = src else { bail!(Error::InvalidValue, "compress: the {what} task has no source") };
        let Some(dst) = dst else {
            bail!(Error::InvalidValue, "compress: the {what} task has no destination")
        };
        let imports = matches!(P::TYPE, TaskType::DecompressLz4Stream | TaskType::DecompressLz4);
        let mut len = 0usize;
        walk(&src, limits.max_list_len, "source", |b| {
            self.check_map(b, "source", false, imports)?;
            len = len.saturating_add(b.data_len()?);
            Ok(())
        })?;
        if len == 0 {
            bail!(Error::InvalidValue, "compress: the {what} task's source holds no data (data length 0)");
        }
        if P::TYPE == TaskType::DecompressLz4 && len < 4 {
            // Shorter than an LZ4 frame's magic number: refused at validation, as DOCA's library does.
            bail!(Error::InvalidValue, "compress: the {what} task's source ({len} bytes) is shorter than an LZ4 frame's 4-byte magic number");
        }
        if len as u64 > limits.max_buf {
            bail!(
                Error::InvalidValue,
                "compress: {len} source bytes exceed the maximum {} (cap compress.max_buf_size)",
                limits.max_buf
            );
        }
        let mut room = 0usize;
        walk(&dst, limits.max_list_len, "destination", |b| {
            self.check_map(b, "destination", true, imports)?;
            room = room.saturating_add(b.tail_room()?);
            Ok(())
        })?;
        if room == 0 {
            bail!(
                Error::InvalidValue,
                "compress: the {what} task's destination has no free room after its data"
            );
        }
        Ok((src, dst, len, flags))
    }

    /// The run of task `id`, started.
    fn begin<P: Kind>(&self, work: &mut Work, id: TaskId) -> Result<()> {
        let (src, dst, len, (block_checksum, independent)) = self.checks::<P>(id)?;
        let xxh = !matches!(P::TYPE, TaskType::CompressDeflate | TaskType::DecompressDeflate);
        match P::TYPE {
            TaskType::CompressDeflate => work.deflater.get_or_insert_with(Deflater::default).reset(),
            TaskType::DecompressDeflate => work.inflater.get_or_insert_with(Inflater::default).reset(),
            _ => work.lz4.reset(),
        }
        let frame = FrameInfo {
            block_checksum,
            independent,
            content_checksum: false,
            block_max: LZ4_MAX_BLOCK,
            header_len: 0,
        };
        let part = if P::TYPE == TaskType::DecompressLz4 { Part::Header } else { Part::Blocks };
        work.run = Some(Run {
            job: P::job(id),
            src,
            dst,
            len,
            src_pos: 0,
            dst_pos: 0,
            sums: Sums::new(xxh),
            part,
            frame,
        });
        Ok(())
    }

    /// Works on the front task of type `P` with at most `budget` source bytes.
    fn advance<P: Kind>(&self, id: TaskId, budget: usize) -> Step {
        let mut guard = self.work.borrow_mut();
        let work = &mut *guard;
        if work.run.as_ref().map(|r| r.job) != Some(P::job(id)) {
            if let Err(e) = self.begin::<P>(work, id) {
                work.run = None;
                return Step::Failed(e);
            }
        }
        let Some(run) = work.run.as_mut() else { return Step::Failed(Error::BadState) };
        let r = match P::TYPE {
            TaskType::CompressDeflate => {
                deflate_some(run, work.deflater.get_or_insert_with(Deflater::default), budget)
            }
            TaskType::DecompressDeflate => {
                inflate_some(run, work.inflater.get_or_insert_with(Inflater::default), budget)
            }
            TaskType::DecompressLz4 | TaskType::DecompressLz4Stream => lz4_some(run, &mut work.lz4, budget),
            TaskType::DecompressLz4Block => lz4_block(run, &mut work.lz4),
        };
        let step = r.and_then(|(used, done)| {
            if !done {
                return Ok(Step::Partial(used));
            }
            settle(&run.dst, run.dst_pos)?;
            let (crc, adler, xxh) = run.sums.values();
            // xxHash-32 as DOCA reports it: byte-swapped (NVIDIA's decompress_lz4_stream sample
            // compares it with the frame's stored content checksum loaded big-endian).
            let second = if run.sums_is_adler() { adler } else { xxh.swap_bytes() };
            self.pool::<P>().with_payload(id, |p| {
                let c = p.common();
                c.crc = crc;
                c.second = second;
            });
            Ok(Step::Done(used))
        });
        match step {
            Ok(Step::Partial(n)) => Step::Partial(n),
            Ok(s) => {
                work.run = None;
                s
            }
            Err(e) => {
                work.run = None;
                Step::Failed(e)
            }
        }
    }
}

impl Run {
    /// Whether the task type reports Adler-32 (deflate both ways, the 2.5/2.6 LZ4 task)
    /// rather than xxHash-32.
    fn sums_is_adler(&self) -> bool {
        matches!(self.job, Job::Deflate(_) | Job::Inflate(_) | Job::Lz4Frame(_))
    }
}

/// Compresses up to `budget` source bytes; (bytes used, complete).
fn deflate_some(run: &mut Run, d: &mut Deflater, budget: usize) -> Result<(usize, bool)> {
    let mut used = 0;
    loop {
        if run.src_pos < run.len && used >= budget {
            return Ok((used, false));
        }
        let Some((db, doff, room)) = locate(&run.dst, run.dst_pos, true)? else {
            return Err(too_big("compressed"));
        };
        let mut out = db.map().bytes_mut(doff, room)?;
        let (consumed, written, done) = if run.src_pos < run.len {
            let Some((sb, soff, avail)) = locate(&run.src, run.src_pos, false)? else {
                bail!(Error::InvalidValue, "compress: the source list changed");
            };
            let take = avail.min(budget - used);
            let last = run.src_pos + take == run.len;
            let input = sb.map().bytes(soff, take)?;
            let (c, w, done) = d.step(&input, &mut out, last)?;
            run.sums.update(&input[..c]);
            (c, w, done)
        } else {
            d.step(&[], &mut out, true)?
        };
        drop(out);
        run.src_pos += consumed;
        run.dst_pos += written;
        used += consumed;
        if done {
            return Ok((used, true));
        }
        if consumed == 0 && written == 0 {
            bail!(Error::Unexpected, "compress: the deflate compressor made no progress");
        }
    }
}

/// Decompresses up to `budget` bytes (source consumed or output written, whichever is more);
/// (bytes used, complete).
fn inflate_some(run: &mut Run, i: &mut Inflater, budget: usize) -> Result<(usize, bool)> {
    let mut used = 0;
    let mut spare = [0u8; 1];
    while used < budget {
        let src = locate(&run.src, run.src_pos, false)?;
        let dst = locate(&run.dst, run.dst_pos, true)?;
        let input_guard = match &src {
            Some((sb, soff, avail)) => Some(sb.map().bytes(*soff, (*avail).min(budget - used))?),
            None => None,
        };
        let input: &[u8] = input_guard.as_deref().unwrap_or(&[]);
        let r = match &dst {
            Some((db, doff, room)) => {
                let mut out = db.map().bytes_mut(*doff, (*room).min(budget - used))?;
                let r = i.step(input, &mut out)?;
                run.sums.update(&out[..r.written]);
                r
            }
            // No room left: does the stream end here, or want more room?
            None => {
                let r = i.step(input, &mut spare)?;
                if r.written > 0 {
                    return Err(too_big("decompressed"));
                }
                r
            }
        };
        drop(input_guard);
        run.src_pos += r.consumed;
        run.dst_pos += r.written;
        used += r.consumed.max(r.written);
        if r.ended {
            return Ok((used, true));
        }
        if r.stuck {
            if src.is_none() || run.src_pos == run.len {
                bail!(
                    Error::InvalidValue,
                    "compress: the DEFLATE stream is truncated (the source ends before its final block)"
                );
            }
            if dst.is_none() {
                return Err(too_big("decompressed"));
            }
        }
    }
    Ok((used, false))
}

/// Decodes LZ4 blocks (of a frame or a stream) until `budget` source bytes are used;
/// (bytes used, complete).
fn lz4_some(run: &mut Run, s: &mut Lz4Scratch, budget: usize) -> Result<(usize, bool)> {
    let start = run.src_pos;
    let mut head = Vec::new();
    loop {
        if run.src_pos - start >= budget {
            return Ok((run.src_pos - start, false));
        }
        match run.part {
            Part::Header => {
                head.clear();
                run.read(6, &mut head, "the LZ4 frame header")?;
                let first: [u8; 6] = [head[0], head[1], head[2], head[3], head[4], head[5]];
                let n = codec::frame_header_len(&first)?;
                run.read(n - 6, &mut head, "the LZ4 frame header")?;
                run.frame = codec::parse_frame_header(&head)?;
                run.part = Part::Blocks;
            }
            Part::Blocks => {
                if run.src_pos == run.len {
                    if matches!(run.job, Job::Lz4Frame(_)) {
                        bail!(Error::InvalidValue, "compress: the LZ4 frame is truncated (no end mark)");
                    }
                    return Ok((run.src_pos - start, true));
                }
                let h = BlockHeader::parse(run.read4(&mut head, "an LZ4 block header")?);
                if h.size == 0 && !h.uncompressed {
                    run.part = Part::Trailer;
                    continue;
                }
                let max = run.frame.block_max;
                if h.size > max {
                    bail!(
                        Error::InvalidValue,
                        "compress: an LZ4 block stores {} bytes, above the {max}-byte maximum",
                        h.size
                    );
                }
                s.input.clear();
                run.read(h.size, &mut s.input, "an LZ4 block")?;
                if run.frame.block_checksum {
                    let want = u32::from_le_bytes(run.read4(&mut head, "an LZ4 block checksum")?);
                    let got = codec::block_checksum(&s.input);
                    if got != want {
                        bail!(
                            Error::InvalidValue,
                            "compress: an LZ4 block's checksum is {got:#010x}, the stream says {want:#010x}"
                        );
                    }
                }
                let out = s.decode(h.uncompressed, run.frame.independent, max)?;
                run.sums.update(out);
                run.write(out, "decompressed")?;
            }
            Part::Trailer => {
                if run.frame.content_checksum {
                    let want = u32::from_le_bytes(run.read4(&mut head, "the LZ4 content checksum")?);
                    let got = run.sums.values().2;
                    if got != want {
                        bail!(
                            Error::InvalidValue,
                            "compress: the content's xxHash-32 is {got:#010x}, the LZ4 frame says {want:#010x}"
                        );
                    }
                }
                return Ok((run.src_pos - start, true));
            }
        }
    }
}

/// Decodes the one LZ4 block of a block task, in one go; (bytes used, complete).
fn lz4_block(run: &mut Run, s: &mut Lz4Scratch) -> Result<(usize, bool)> {
    let src = run.src.clone();
    let dst = run.dst.clone();
    let (src_shape, dst_shape) = (src.shape()?, dst.shape()?);
    let mut gathered = std::mem::take(&mut s.input);
    gathered.clear();
    if src_shape.in_list {
        let len = run.len;
        if let Err(e) = run.read(len, &mut gathered, "the LZ4 block") {
            s.input = gathered;
            return Err(e);
        }
    }
    let guard =
        if src_shape.in_list { None } else { Some(src.map().bytes(src_shape.data, src_shape.data_len)?) };
    let input: &[u8] = match &guard {
        Some(g) => g,
        None => &gathered,
    };
    let r = if dst_shape.in_list {
        // Decode into the scratch area (as large as the destination's room), then spread.
        let mut out = std::mem::take(&mut s.spread);
        let r = (|| {
            let mut room = 0usize;
            walk(&dst, u32::MAX, "destination", |b| {
                room = room.saturating_add(b.tail_room()?);
                Ok(())
            })?;
            out.clear();
            out.resize(room, 0);
            let n = codec::decode_block_into(input, &mut out)?;
            run.sums.update(&out[..n]);
            run.write(&out[..n], "decompressed")
        })();
        s.spread = out;
        r
    } else {
        let n = {
            let mut out = dst.map().bytes_mut(dst_shape.data_end(), dst_shape.room())?;
            let n = codec::decode_block_into(input, &mut out)?;
            run.sums.update(&out[..n]);
            n
        };
        run.dst_pos = n;
        Ok(())
    };
    drop(guard);
    s.input = gathered;
    r?;
    run.src_pos = run.len;
    Ok((run.len, true))
}

impl Engine for CompressOps {
    type Job = Job;
    const KIND: &'static str = "compress";
    const FAILED: &'static str = "a compress task failed";

    fn device(&self) -> Option<doca_core::PciAddr> {
        Some(self.dev.as_devinfo().pci_addr())
    }

    /// At most [`caps::BYTES_PER_PASS`] source bytes a pass (`compress.bytes_per_pass`).
    fn start(&self) -> Result<Sizes> {
        let info = self.dev.as_devinfo();
        let max_buf = caps::get(info, &caps::MAX_BUF_SIZE)?;
        let max_list_len = caps::get(info, &caps::MAX_BUF_LIST_LEN)?.clamp(1, u32::MAX as u64) as u32;
        self.limits.set(Limits { max_buf, max_list_len });
        self.deflate.prepare(DeflateP::default);
        self.inflate.prepare(InflateP::default);
        self.lz4_frame.prepare(Lz4FrameP::default);
        self.lz4_stream.prepare(Lz4StreamP::default);
        self.lz4_block.prepare(Lz4BlockP::default);
        self.work.borrow_mut().run = None;
        let tasks = [
            self.deflate.capacity(),
            self.inflate.capacity(),
            self.lz4_frame.capacity(),
            self.lz4_stream.capacity(),
            self.lz4_block.capacity(),
        ]
        .iter()
        .map(|&n| n as usize)
        .sum();
        Ok(Sizes { tasks, bytes_per_pass: caps::bytes_per_pass(info)? })
    }

    fn step(&self, job: Job, budget: usize) -> Step {
        match job {
            Job::Deflate(id) => self.advance::<DeflateP>(id, budget),
            Job::Inflate(id) => self.advance::<InflateP>(id, budget),
            Job::Lz4Frame(id) => self.advance::<Lz4FrameP>(id, budget),
            Job::Lz4Stream(id) => self.advance::<Lz4StreamP>(id, budget),
            Job::Lz4Block(id) => self.advance::<Lz4BlockP>(id, budget),
        }
    }

    fn finish(&self, job: Job, status: Result<()>) {
        {
            let mut work = self.work.borrow_mut();
            if work.run.as_ref().map(|r| r.job) == Some(job) {
                work.run = None;
            }
        }
        match job {
            Job::Deflate(id) => self.deflate.finish(id, status),
            Job::Inflate(id) => self.inflate.finish(id, status),
            Job::Lz4Frame(id) => self.lz4_frame.finish(id, status),
            Job::Lz4Stream(id) => self.lz4_stream.finish(id, status),
            Job::Lz4Block(id) => self.lz4_block.finish(id, status),
        };
    }
}

/// Every task type: queued as it is, checked when the engine reaches it.
impl<P: Kind> EngineTask<P> for CompressOps {
    fn pool(&self) -> &TaskPool<P> {
        P::pool(self)
    }

    fn job(id: TaskId) -> Job {
        P::job(id)
    }

    fn validate(&self, id: TaskId) -> Result<()> {
        self.checks::<P>(id).map(|_| ())
    }

    /// A new submission: the checksums of the last one are forgotten.
    fn queued(&self, id: TaskId) {
        P::pool(self).with_payload(id, |p| {
            let c = p.common();
            c.crc = 0;
            c.second = 0;
        });
    }
}

impl TaskPayload for DeflateP {
    type Lib = Fifo<CompressOps>;
    const FAULT_KIND: &'static str = "compress.compress_deflate";
}

impl TaskPayload for InflateP {
    type Lib = Fifo<CompressOps>;
    const FAULT_KIND: &'static str = "compress.decompress_deflate";
}

impl TaskPayload for Lz4FrameP {
    type Lib = Fifo<CompressOps>;
    const FAULT_KIND: &'static str = "compress.decompress_lz4";
}

impl TaskPayload for Lz4StreamP {
    type Lib = Fifo<CompressOps>;
    const FAULT_KIND: &'static str = "compress.decompress_lz4_stream";
}

impl TaskPayload for Lz4BlockP {
    type Lib = Fifo<CompressOps>;
    const FAULT_KIND: &'static str = "compress.decompress_lz4_block";
}
