//! `doca_compress.h`: compress contexts and their tasks — the whole header at each API level:
//! 40 functions in DOCA 2.5/2.6 (compress deflate, decompress deflate, decompress LZ4; 2.5
//! spells `doca_compress_get_max_num_tasks` without `cap_`), 56 from 2.7 on (decompress LZ4
//! replaced by decompress LZ4 stream and decompress LZ4 block). The library exports every
//! one of them at every level (2.9/3.3's `compress_common.c` names the LZ4 stream functions
//! in deflate-only programs too); the headers declare each level's set. The work is the
//! emulated engine's inside `doca_pe_progress`; see the `doca_compress` crate for the
//! formats, the checks and the statuses.

use std::rc::Rc;

use doca_compress::caps::{self, TaskType};
use doca_compress::{
    Compress, CompressDeflateTask, DecompressDeflateTask, DecompressLz4BlockTask, DecompressLz4StreamTask,
    DecompressLz4Task,
};
use doca_core::Data;

use crate::buf::DocaBuf;
use crate::check::{non_null, out};
use crate::ctx::{DocaCtx, DocaData};
use crate::dev::{DocaDev, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::libctx::{self, opt_buf, LibCtx, Library};
use crate::task::{as_task, complete, task, AnyTask, DocaTask, Of};
use crate::{guarded, invalid, DocaError};

/// `struct doca_compress`: the context, its context handle and its tasks' handles.
pub type DocaCompress = LibCtx<Compress>;

impl Library for Compress {
    fn ctx(&self) -> doca_core::Ctx {
        self.as_ctx()
    }
    fn destroy(self) -> doca_core::Result<()> {
        Compress::destroy(self).map_err(|r| r.error)
    }
}

static COMPRESSES: Handles = Handles::new(Kind::Compress);

fn compress<'a>(p: *const DocaCompress) -> Option<&'a DocaCompress> {
    libctx::get(&COMPRESSES, p)
}

/// The completion callback type of every compress task type
/// (`doca_compress_task_<type>_completion_cb_t`).
pub type CompressTaskCb = Option<unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData)>;

/// `doca_compress_create`: a compress context on `dev` (`NOT_SUPPORTED` when the topology
/// gives the device no compress task type).
///
/// # Safety
/// `compress` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_compress_create(
    dev: *mut DocaDev,
    compress: *mut *mut DocaCompress,
) -> DocaError {
    guarded("doca_compress_create", || {
        libctx::create(&COMPRESSES, dev, compress, "compress", Compress::create)
    })
}

/// `doca_compress_destroy`: Idle only (`BAD_STATE`, the context stays); its context's and
/// tasks' handles go with it.
///
/// # Safety
/// `compress` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_compress_destroy(compress: *mut DocaCompress) -> DocaError {
    guarded("doca_compress_destroy", || {
        // SAFETY: the caller's contract, as `libctx::destroy` states it.
        unsafe { libctx::destroy(&COMPRESSES, compress) }
    })
}

/// `doca_compress_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_compress_as_ctx(compress: *mut DocaCompress) -> *mut DocaCtx {
    crate::shielded("doca_compress_as_ctx", std::ptr::null_mut(), || libctx::as_ctx(&COMPRESSES, compress))
}

fn max_num_tasks(name: &'static str, compress: *mut DocaCompress, max_num_tasks: *mut u32) -> DocaError {
    guarded(name, || match self::compress(compress) {
        Some(c) => match c.obj.cap_get_max_num_tasks() {
            Ok(n) => out(max_num_tasks, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// `doca_compress_cap_get_max_num_tasks` (DOCA 2.6 on): the tasks of every type together.
///
/// # Safety
/// `max_num_tasks` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_compress_cap_get_max_num_tasks(
    compress: *mut DocaCompress,
    max_num_tasks: *mut u32,
) -> DocaError {
    self::max_num_tasks("doca_compress_cap_get_max_num_tasks", compress, max_num_tasks)
}

/// `doca_compress_get_max_num_tasks` (the DOCA 2.5 name).
///
/// # Safety
/// `max_num_tasks` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_compress_get_max_num_tasks(
    compress: *mut DocaCompress,
    max_num_tasks: *mut u32,
) -> DocaError {
    self::max_num_tasks("doca_compress_get_max_num_tasks", compress, max_num_tasks)
}

fn is_supported(name: &'static str, devinfo: *const DocaDevinfo, t: TaskType) -> DocaError {
    guarded(name, || match crate::dev::devinfo(devinfo) {
        Some(d) => doca_core::Error::code_of(&caps::task_is_supported(d, t)),
        None => invalid(),
    })
}

fn max_buf_size(name: &'static str, devinfo: *const DocaDevinfo, t: TaskType, max: *mut u64) -> DocaError {
    guarded(name, || match crate::dev::devinfo(devinfo) {
        Some(d) => match caps::task_max_buf_size(d, t) {
            Ok(n) => out(max, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

fn max_buf_list_len(
    name: &'static str,
    devinfo: *const DocaDevinfo,
    t: TaskType,
    max: *mut u32,
) -> DocaError {
    guarded(name, || match crate::dev::devinfo(devinfo) {
        Some(d) => match caps::task_max_buf_list_len(d, t) {
            Ok(n) => out(max, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// The common part of every alloc_init: argument checks, then `alloc` and the handle.
fn alloc_init(
    compress: *mut DocaCompress,
    src: *const DocaBuf,
    dst: *mut DocaBuf,
    task: *mut *mut DocaTask,
    alloc: impl FnOnce(&Compress, Option<&doca_buf::Buf>, Option<&doca_buf::Buf>) -> doca_core::Result<AnyTask>,
) -> DocaError {
    let Some(c) = self::compress(compress) else { return invalid() };
    let (Ok(s), Ok(d)) = (opt_buf(src), opt_buf(dst)) else { return invalid() };
    if let Err(e) = non_null(task, "task") {
        return e;
    }
    match alloc(&c.obj, s, d) {
        Ok(any) => {
            let h = c.tasks.hand_out(any, src as *mut DocaBuf);
            if let Some(handle) = self::task(h) {
                handle.dst.set(dst);
            }
            out(task, h)
        }
        Err(e) => e.code(),
    }
}

/// Records the C handle of a task's source (`src`) or destination.
fn keep(task: *mut DocaTask, b: *const DocaBuf, src: bool) {
    if let Some(h) = self::task(task) {
        if src {
            h.buf.set(b as *mut DocaBuf);
        } else {
            h.dst.set(b as *mut DocaBuf);
        }
    }
}

/// The C handle of a task's source (`src`) or destination, when `is_kind` says the task is
/// of the right kind.
fn kept(task: *const DocaTask, is_kind: Option<()>, src: bool) -> *mut DocaBuf {
    match (is_kind, self::task(task)) {
        (Some(()), Some(h)) if src => h.buf.get(),
        (Some(()), Some(h)) => h.dst.get(),
        _ => std::ptr::null_mut(),
    }
}

/// The functions every task type has, by their C names.
macro_rules! task_type {
    (
        $variant:ident, $task:ty, $ty:expr,
        $is_supported:ident, $max_buf_size:ident, $max_buf_list_len:ident,
        $set_conf:ident => $rust_set_conf:ident,
        $as_task:ident, $set_src:ident, $get_src:ident, $set_dst:ident, $get_dst:ident,
        $get_crc:ident, $get_second:ident => $rust_second:ident $(,)?
    ) => {
        #[doc = concat!("`", stringify!($is_supported), "`: `NOT_SUPPORTED` when the topology takes the task type away.")]
        #[no_mangle]
        pub extern "C" fn $is_supported(devinfo: *const DocaDevinfo) -> DocaError {
            is_supported(stringify!($is_supported), devinfo, $ty)
        }

        #[doc = concat!("`", stringify!($max_buf_size), "`: `compress.max_buf_size`.")]
        ///
        /// # Safety
        /// `max_buffer_size` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $max_buf_size(devinfo: *const DocaDevinfo, max_buffer_size: *mut u64) -> DocaError {
            self::max_buf_size(stringify!($max_buf_size), devinfo, $ty, max_buffer_size)
        }

        #[doc = concat!("`", stringify!($max_buf_list_len), "`: `compress.max_buf_list_len`.")]
        ///
        /// # Safety
        /// `max_buf_list_len` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $max_buf_list_len(
            devinfo: *const DocaDevinfo,
            max_buf_list_len: *mut u32,
        ) -> DocaError {
            self::max_buf_list_len(stringify!($max_buf_list_len), devinfo, $ty, max_buf_list_len)
        }

        #[doc = concat!("`", stringify!($set_conf), "`: Idle only; 1 or more tasks, with the other types' at most `compress.max_num_tasks`.")]
        #[no_mangle]
        pub extern "C" fn $set_conf(
            compress: *mut DocaCompress,
            task_completion_cb: CompressTaskCb,
            task_error_cb: CompressTaskCb,
            num_tasks: u32,
        ) -> DocaError {
            guarded(stringify!($set_conf), || {
                let (Some(c), Some(done), Some(failed)) = (self::compress(compress), task_completion_cb, task_error_cb)
                else {
                    return invalid();
                };
                let (w1, w2) = (Rc::downgrade(&c.tasks), Rc::downgrade(&c.tasks));
                let r = c.obj.$rust_set_conf(
                    move |t: $task, td: Data, cd: Data| complete(&w1, done, AnyTask::$variant(t), td, cd),
                    move |t: $task, td: Data, cd: Data| complete(&w2, failed, AnyTask::$variant(t), td, cd),
                    num_tasks,
                );
                doca_core::Error::code_of(&r)
            })
        }

        #[doc = concat!("`", stringify!($as_task), "`: the same handle.")]
        #[no_mangle]
        pub extern "C" fn $as_task(task: *mut DocaTask) -> *mut DocaTask {
            as_task(stringify!($as_task), task, Of::$variant)
        }

        #[doc = concat!("`", stringify!($set_src), "`: checked when the task is submitted (NULL: none); a handle that is not such a task is logged.")]
        #[no_mangle]
        pub extern "C" fn $set_src(task: *mut DocaTask, src_buff: *const DocaBuf) {
            crate::shielded(stringify!($set_src), (), || {
                let Ok(b) = opt_buf(src_buff) else { return };
                if with::<$task, _>(task, |t| t.set_src(b)).is_some() {
                    keep(task, src_buff, true);
                }
            })
        }

        #[doc = concat!("`", stringify!($get_src), "`: NULL when none is set (or the handle is not such a task).")]
        #[no_mangle]
        pub extern "C" fn $get_src(task: *const DocaTask) -> *const DocaBuf {
            crate::shielded(stringify!($get_src), std::ptr::null(), || {
                kept(task, with::<$task, _>(task, |_| ()), true) as *const DocaBuf
            })
        }

        #[doc = concat!("`", stringify!($set_dst), "`: checked when the task is submitted (NULL: none).")]
        #[no_mangle]
        pub extern "C" fn $set_dst(task: *mut DocaTask, dst_buff: *mut DocaBuf) {
            crate::shielded(stringify!($set_dst), (), || {
                let Ok(b) = opt_buf(dst_buff) else { return };
                if with::<$task, _>(task, |t| t.set_dst(b)).is_some() {
                    keep(task, dst_buff, false);
                }
            })
        }

        #[doc = concat!("`", stringify!($get_dst), "`: NULL when none is set.")]
        #[no_mangle]
        pub extern "C" fn $get_dst(task: *const DocaTask) -> *mut DocaBuf {
            crate::shielded(stringify!($get_dst), std::ptr::null_mut(), || {
                kept(task, with::<$task, _>(task, |_| ()), false)
            })
        }

        #[doc = concat!("`", stringify!($get_crc), "`: zlib's CRC-32 of the uncompressed bytes of the last completion (0 for a handle that is not such a task, logged).")]
        #[no_mangle]
        pub extern "C" fn $get_crc(task: *const DocaTask) -> u32 {
            crate::shielded(stringify!($get_crc), 0, || with::<$task, _>(task, |t| t.crc_cs()).unwrap_or(0))
        }

        #[doc = concat!("`", stringify!($get_second), "`: of the uncompressed bytes of the last completion.")]
        #[no_mangle]
        pub extern "C" fn $get_second(task: *const DocaTask) -> u32 {
            crate::shielded(stringify!($get_second), 0, || with::<$task, _>(task, |t| t.$rust_second()).unwrap_or(0))
        }
    };
}

/// A Rust task type of this library, found in its [`AnyTask`] variant.
trait Variant: Sized {
    fn from_any(any: &AnyTask) -> Option<&Self>;
}

macro_rules! variant {
    ($task:ty, $variant:ident) => {
        impl Variant for $task {
            fn from_any(any: &AnyTask) -> Option<&Self> {
                match any {
                    AnyTask::$variant(t) => Some(t),
                    _ => None,
                }
            }
        }
    };
}

variant!(CompressDeflateTask, CompressDeflate);
variant!(DecompressDeflateTask, DecompressDeflate);
variant!(DecompressLz4Task, DecompressLz4);
variant!(DecompressLz4StreamTask, DecompressLz4Stream);
variant!(DecompressLz4BlockTask, DecompressLz4Block);

/// `f` on the task behind `p` if it is a `T` the application holds.
fn with<T: Variant, R>(p: *const DocaTask, f: impl FnOnce(&T) -> R) -> Option<R> {
    let r = task(p)?.with(|t| T::from_any(t).map(f))?;
    if r.is_none() {
        crate::check::note(|| format!("the task is not a {}", std::any::type_name::<T>()));
    }
    r
}

task_type!(
    CompressDeflate, CompressDeflateTask, TaskType::CompressDeflate,
    doca_compress_cap_task_compress_deflate_is_supported,
    doca_compress_cap_task_compress_deflate_get_max_buf_size,
    doca_compress_cap_task_compress_deflate_get_max_buf_list_len,
    doca_compress_task_compress_deflate_set_conf => task_compress_deflate_set_conf,
    doca_compress_task_compress_deflate_as_task,
    doca_compress_task_compress_deflate_set_src,
    doca_compress_task_compress_deflate_get_src,
    doca_compress_task_compress_deflate_set_dst,
    doca_compress_task_compress_deflate_get_dst,
    doca_compress_task_compress_deflate_get_crc_cs,
    doca_compress_task_compress_deflate_get_adler_cs => adler_cs,
);

task_type!(
    DecompressDeflate, DecompressDeflateTask, TaskType::DecompressDeflate,
    doca_compress_cap_task_decompress_deflate_is_supported,
    doca_compress_cap_task_decompress_deflate_get_max_buf_size,
    doca_compress_cap_task_decompress_deflate_get_max_buf_list_len,
    doca_compress_task_decompress_deflate_set_conf => task_decompress_deflate_set_conf,
    doca_compress_task_decompress_deflate_as_task,
    doca_compress_task_decompress_deflate_set_src,
    doca_compress_task_decompress_deflate_get_src,
    doca_compress_task_decompress_deflate_set_dst,
    doca_compress_task_decompress_deflate_get_dst,
    doca_compress_task_decompress_deflate_get_crc_cs,
    doca_compress_task_decompress_deflate_get_adler_cs => adler_cs,
);

task_type!(
    DecompressLz4, DecompressLz4Task, TaskType::DecompressLz4,
    doca_compress_cap_task_decompress_lz4_is_supported,
    doca_compress_cap_task_decompress_lz4_get_max_buf_size,
    doca_compress_cap_task_decompress_lz4_get_max_buf_list_len,
    doca_compress_task_decompress_lz4_set_conf => task_decompress_lz4_set_conf,
    doca_compress_task_decompress_lz4_as_task,
    doca_compress_task_decompress_lz4_set_src,
    doca_compress_task_decompress_lz4_get_src,
    doca_compress_task_decompress_lz4_set_dst,
    doca_compress_task_decompress_lz4_get_dst,
    doca_compress_task_decompress_lz4_get_crc_cs,
    doca_compress_task_decompress_lz4_get_adler_cs => adler_cs,
);

task_type!(
    DecompressLz4Stream, DecompressLz4StreamTask, TaskType::DecompressLz4Stream,
    doca_compress_cap_task_decompress_lz4_stream_is_supported,
    doca_compress_cap_task_decompress_lz4_stream_get_max_buf_size,
    doca_compress_cap_task_decompress_lz4_stream_get_max_buf_list_len,
    doca_compress_task_decompress_lz4_stream_set_conf => task_decompress_lz4_stream_set_conf,
    doca_compress_task_decompress_lz4_stream_as_task,
    doca_compress_task_decompress_lz4_stream_set_src,
    doca_compress_task_decompress_lz4_stream_get_src,
    doca_compress_task_decompress_lz4_stream_set_dst,
    doca_compress_task_decompress_lz4_stream_get_dst,
    doca_compress_task_decompress_lz4_stream_get_crc_cs,
    doca_compress_task_decompress_lz4_stream_get_xxh_cs => xxh_cs,
);

task_type!(
    DecompressLz4Block, DecompressLz4BlockTask, TaskType::DecompressLz4Block,
    doca_compress_cap_task_decompress_lz4_block_is_supported,
    doca_compress_cap_task_decompress_lz4_block_get_max_buf_size,
    doca_compress_cap_task_decompress_lz4_block_get_max_buf_list_len,
    doca_compress_task_decompress_lz4_block_set_conf => task_decompress_lz4_block_set_conf,
    doca_compress_task_decompress_lz4_block_as_task,
    doca_compress_task_decompress_lz4_block_set_src,
    doca_compress_task_decompress_lz4_block_get_src,
    doca_compress_task_decompress_lz4_block_set_dst,
    doca_compress_task_decompress_lz4_block_get_dst,
    doca_compress_task_decompress_lz4_block_get_crc_cs,
    doca_compress_task_decompress_lz4_block_get_xxh_cs => xxh_cs,
);

/// `doca_compress_task_compress_deflate_alloc_init`: `src_buff` and `dst_buff` may be NULL
/// (set before submission); nothing else about them is checked before submission. Every task
/// out: `NO_MEMORY`.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_compress_task_compress_deflate_alloc_init(
    compress: *mut DocaCompress,
    src_buff: *const DocaBuf,
    dst_buff: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_compress_task_compress_deflate_alloc_init", || {
        alloc_init(compress, src_buff, dst_buff, task, |c, s, d| {
            c.task_compress_deflate_alloc_init(s, d, user_data.to_data()).map(AnyTask::CompressDeflate)
        })
    })
}

/// `doca_compress_task_decompress_deflate_alloc_init`: the source is one raw DEFLATE stream.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_compress_task_decompress_deflate_alloc_init(
    compress: *mut DocaCompress,
    src_buff: *const DocaBuf,
    dst_buff: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_compress_task_decompress_deflate_alloc_init", || {
        alloc_init(compress, src_buff, dst_buff, task, |c, s, d| {
            c.task_decompress_deflate_alloc_init(s, d, user_data.to_data()).map(AnyTask::DecompressDeflate)
        })
    })
}

/// `doca_compress_task_decompress_lz4_alloc_init` (DOCA 2.5/2.6): the source is one whole LZ4
/// frame.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_compress_task_decompress_lz4_alloc_init(
    compress: *mut DocaCompress,
    src_buff: *const DocaBuf,
    dst_buff: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_compress_task_decompress_lz4_alloc_init", || {
        alloc_init(compress, src_buff, dst_buff, task, |c, s, d| {
            c.task_decompress_lz4_alloc_init(s, d, user_data.to_data()).map(AnyTask::DecompressLz4)
        })
    })
}

/// `doca_compress_task_decompress_lz4_stream_alloc_init`: the source is the block sequence of
/// an LZ4 frame; the flags (0 or non-zero) say how its blocks are stored.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_compress_task_decompress_lz4_stream_alloc_init(
    compress: *mut DocaCompress,
    has_block_checksum: u8,
    are_blocks_independent: u8,
    src_buff: *const DocaBuf,
    dst_buff: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_compress_task_decompress_lz4_stream_alloc_init", || {
        alloc_init(compress, src_buff, dst_buff, task, |c, s, d| {
            c.task_decompress_lz4_stream_alloc_init(
                has_block_checksum != 0,
                are_blocks_independent != 0,
                s,
                d,
                user_data.to_data(),
            )
            .map(AnyTask::DecompressLz4Stream)
        })
    })
}

/// `doca_compress_task_decompress_lz4_block_alloc_init`: the source is one LZ4 block.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_compress_task_decompress_lz4_block_alloc_init(
    compress: *mut DocaCompress,
    src_buff: *const DocaBuf,
    dst_buff: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_compress_task_decompress_lz4_block_alloc_init", || {
        alloc_init(compress, src_buff, dst_buff, task, |c, s, d| {
            c.task_decompress_lz4_block_alloc_init(s, d, user_data.to_data()).map(AnyTask::DecompressLz4Block)
        })
    })
}

/// `doca_compress_task_decompress_lz4_stream_set_has_block_checksum`: 0 or non-zero.
#[no_mangle]
pub extern "C" fn doca_compress_task_decompress_lz4_stream_set_has_block_checksum(
    task: *mut DocaTask,
    has_block_checksum: u8,
) {
    crate::shielded("doca_compress_task_decompress_lz4_stream_set_has_block_checksum", (), || {
        with::<DecompressLz4StreamTask, _>(task, |t| t.set_has_block_checksum(has_block_checksum != 0));
    })
}

/// `doca_compress_task_decompress_lz4_stream_get_has_block_checksum`: 1 or 0.
#[no_mangle]
pub extern "C" fn doca_compress_task_decompress_lz4_stream_get_has_block_checksum(
    task: *const DocaTask,
) -> u8 {
    crate::shielded("doca_compress_task_decompress_lz4_stream_get_has_block_checksum", 0, || {
        with::<DecompressLz4StreamTask, _>(task, |t| t.has_block_checksum() as u8).unwrap_or(0)
    })
}

/// `doca_compress_task_decompress_lz4_stream_set_are_blocks_independent`: 0 or non-zero.
#[no_mangle]
pub extern "C" fn doca_compress_task_decompress_lz4_stream_set_are_blocks_independent(
    task: *mut DocaTask,
    are_blocks_independent: u8,
) {
    crate::shielded("doca_compress_task_decompress_lz4_stream_set_are_blocks_independent", (), || {
        with::<DecompressLz4StreamTask, _>(task, |t| {
            t.set_are_blocks_independent(are_blocks_independent != 0)
        });
    })
}

/// `doca_compress_task_decompress_lz4_stream_get_are_blocks_independent`: 1 or 0.
#[no_mangle]
pub extern "C" fn doca_compress_task_decompress_lz4_stream_get_are_blocks_independent(
    task: *const DocaTask,
) -> u8 {
    crate::shielded("doca_compress_task_decompress_lz4_stream_get_are_blocks_independent", 0, || {
        with::<DecompressLz4StreamTask, _>(task, |t| t.are_blocks_independent() as u8).unwrap_or(0)
    })
}
