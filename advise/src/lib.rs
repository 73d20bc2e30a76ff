//! DOCA MMAP advise (`doca_mmap_advise.h`, 2.9+): cache-invalidate tasks on buffers, as a
//! library context on core's plug-in interface.
//!
//! | DOCA                                                   | here                        |
//! |--------------------------------------------------------|-----------------------------|
//! | `struct doca_mmap_advise`, `_create`/`_destroy`/`_as_ctx` | [`MmapAdvise`]: [`MmapAdvise::create`], [`MmapAdvise::destroy`], [`MmapAdvise::as_ctx`] |
//! | `doca_mmap_advise_cap_task_cache_invalidate_is_supported`, `doca_mmap_advise_task_cache_invalidate_get_max_buf_size` | [`caps`] |
//! | `doca_mmap_advise_task_invalidate_cache_set_conf`, `_alloc_init` | [`MmapAdvise::task_invalidate_cache_set_conf`], [`MmapAdvise::task_invalidate_cache_alloc_init`] |
//! | `struct doca_mmap_advise_task_invalidate_cache`, `_as_doca_task`, `_get/_set_buf` | [`InvalidateCacheTask`] |
//!
//! **What the task does.** On the hardware it makes the CPU's caches drop the lines of a
//! buffer that a device wrote behind their back. The emulated devices write through the
//! CPU (a memcpy), so memory is coherent and there is nothing to drop: the task is checked
//! and completes, doing nothing else. It completes inside the engine's `progress` (never in
//! submit), in submission order, every task queued before the pass in that pass.
//!
//! **Checks and codes.** As DOCA, `doca_task_submit` does not validate: a bad task completes
//! through the error callback with its status — and, as on DOCA's engine (pe_task_error; the
//! rule is the progress engine's, see [`doca_core::queue`]), the failure is fatal to the
//! context: it moves to Stopping, every task still queued completes with [`FLUSH_STATUS`],
//! and it reaches Idle once they are freed (start it again to go on). `doca_task_try_submit`
//! ([`InvalidateCacheTask::try_submit`]) makes the same checks first and refuses a bad task
//! with `INVALID_VALUE` (the log line says which check).
//!
//! | the task                                                | error callback status |
//! |---------------------------------------------------------|-----------------------|
//! | no buffer set                                           | `INVALID_VALUE`       |
//! | a buffer larger than `mmap_advise.max_buf_size`          | `INVALID_VALUE`       |
//! | a buffer of a map not added to the context's device      | `NOT_PERMITTED`       |
//! | the context stopped, or a task before it failed, before it completed | [`FLUSH_STATUS`] (`SHUTDOWN`) |

#![forbid(unsafe_code)]

pub mod caps;

use std::cell::Cell;

use doca_buf::Buf;
use doca_core::queue::{Engine, EngineTask, Fifo, LibCtx, Sizes, Step};
use doca_core::{bail, Ctx, Data, Dev, Error, Refused, Result, TaskId, TaskPayload, TaskPool};

/// Status of the tasks a stop or a failure flushes: `DOCA_ERROR_SHUTDOWN`.
pub const FLUSH_STATUS: Error = doca_core::queue::FLUSH_STATUS;

/// The payload of a cache-invalidate task: its buffer.
#[derive(Default)]
#[doc(hidden)] // reached through InvalidateCacheTask
pub struct Invalidate {
    buf: Option<Buf>,
}

doca_core::task_handle! {
    /// `struct doca_mmap_advise_task_invalidate_cache`: invalidates the cache lines of a
    /// buffer (a checked no-op on the emulator's coherent memory).
    pub struct InvalidateCacheTask(Invalidate);
}

impl InvalidateCacheTask {
    /// `doca_mmap_advise_task_invalidate_cache_get_buf`.
    pub fn buf(&self) -> Option<Buf> {
        self.0.with_payload(|p| p.buf.clone())
    }

    /// `doca_mmap_advise_task_invalidate_cache_set_buf`: checked when the task is submitted.
    pub fn set_buf(&self, buf: Option<&Buf>) {
        self.0.with_payload(|p| p.buf = buf.cloned());
    }
}

/// The engine of cache-invalidate tasks (core's [`doca_core::queue`] kit runs the queue and
/// the context).
#[doc(hidden)] // named by the task payload (`TaskPayload::Lib`); reached through MmapAdvise
pub struct AdviseOps {
    dev: Dev,
    pool: TaskPool<Invalidate>,
    /// `mmap_advise.max_buf_size`, read at start.
    max_buf_size: Cell<u64>,
}

/// `struct doca_mmap_advise`: a context on one device.
pub struct MmapAdvise {
    ctx: LibCtx<Fifo<AdviseOps>>,
}

impl MmapAdvise {
    /// `doca_mmap_advise_create`: a context on `dev`; `NOT_SUPPORTED` when the device has no
    /// cache invalidation ([`caps::task_cache_invalidate_is_supported`]).
    pub fn create(dev: &Dev) -> Result<MmapAdvise> {
        doca_core::require(
            caps::task_cache_invalidate_is_supported(dev.as_devinfo()),
            "doca_mmap_advise_create",
        )?;
        let ctx = LibCtx::new(|weak| AdviseOps {
            dev: dev.clone(),
            pool: TaskPool::new(weak.clone()),
            max_buf_size: Cell::new(0),
        });
        Ok(MmapAdvise { ctx })
    }

    /// `doca_mmap_advise_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        self.ctx.as_ctx()
    }

    /// `doca_mmap_advise_task_invalidate_cache_set_conf`: callbacks and pool size
    /// (1..=`mmap_advise.max_num_tasks`, else `INVALID_VALUE`). Idle only (`BAD_STATE`).
    pub fn task_invalidate_cache_set_conf(
        &self,
        completion: impl FnMut(InvalidateCacheTask, Data, Data) + 'static,
        error: impl FnMut(InvalidateCacheTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        let max = caps::max_num_tasks(self.ctx.engine().dev.as_devinfo())?;
        self.ctx.set_conf(completion, error, num_tasks, max)
    }

    /// `doca_mmap_advise_task_invalidate_cache_alloc_init`: a task on `buf` (may be `None`
    /// and set later; checked at submission). Running only (`BAD_STATE`); every task out →
    /// `NO_MEMORY`.
    pub fn task_invalidate_cache_alloc_init(
        &self,
        buf: Option<&Buf>,
        user_data: Data,
    ) -> Result<InvalidateCacheTask> {
        let t = self.ctx.alloc(user_data, |p: &mut Invalidate| *p = Invalidate { buf: buf.cloned() })?;
        Ok(InvalidateCacheTask(t))
    }

    /// `doca_mmap_advise_destroy`: Idle only (`BAD_STATE`, and the context back).
    pub fn destroy(self) -> Result<(), Refused<MmapAdvise>> {
        self.ctx.destroy().map_err(|r| r.map(|ctx| MmapAdvise { ctx }))
    }
}

/// Every task queued before the pass, in order (no byte budget: nothing is copied); a failed
/// task is fatal to the context, the rest flushed (see [`doca_core::queue`]).
impl Engine for AdviseOps {
    type Job = TaskId;
    const KIND: &'static str = "mmap_advise";
    const FAILED: &'static str = "a cache-invalidate task failed";

    fn device(&self) -> Option<doca_core::PciAddr> {
        Some(self.dev.as_devinfo().pci_addr())
    }

    fn start(&self) -> Result<Sizes> {
        self.max_buf_size.set(caps::task_cache_invalidate_max_buf_size(self.dev.as_devinfo())?);
        self.pool.prepare(Invalidate::default);
        Ok(Sizes { tasks: self.pool.capacity() as usize, bytes_per_pass: usize::MAX })
    }

    fn step(&self, id: TaskId, _budget: usize) -> Step {
        match self.validate(id) {
            Ok(()) => Step::Done(0),
            Err(e) => Step::Failed(e),
        }
    }

    fn finish(&self, id: TaskId, status: Result<()>) {
        self.pool.finish(id, status);
    }
}

impl EngineTask<Invalidate> for AdviseOps {
    fn pool(&self) -> &TaskPool<Invalidate> {
        &self.pool
    }

    fn job(id: TaskId) -> TaskId {
        id
    }

    /// Every check of a task (see the crate's table).
    fn validate(&self, id: TaskId) -> Result<()> {
        let buf = self.pool.with_payload(id, |p| p.buf.clone()).ok_or(Error::BadState)?;
        let Some(buf) = buf else {
            bail!(Error::InvalidValue, "mmap advise: the cache-invalidate task has no buffer")
        };
        let shape = buf.shape()?;
        let map = buf.map();
        map.check_live()?;
        if !map.has_dev(&self.dev) {
            bail!(
                Error::NotPermitted,
                "mmap advise: the buffer's map was not added to the context's device (doca_mmap_add_dev)"
            );
        }
        let max = self.max_buf_size.get();
        if shape.len as u64 > max {
            bail!(
                Error::InvalidValue,
                "mmap advise: a buffer of {} bytes exceeds the maximum {max} (cap mmap_advise.max_buf_size)",
                shape.len
            );
        }
        Ok(())
    }
}

impl TaskPayload for Invalidate {
    type Lib = Fifo<AdviseOps>;
}
