//! DOCA DMA (`doca_dma.h`): memcpy tasks between buffers of local memory maps and of maps
//! created from another process's export, as a library context on core's plug-in interface.
//!
//! | DOCA                                          | here                                   |
//! |-----------------------------------------------|----------------------------------------|
//! | `struct doca_dma`, `doca_dma_create`/`_destroy`/`_as_ctx` | [`Dma`]: [`Dma::create`], [`Dma::destroy`], [`Dma::as_ctx`] |
//! | `doca_dma_cap_*`                              | [`caps`], [`Dma::cap_get_max_num_tasks`] |
//! | `doca_dma_task_memcpy_set_conf`, `_alloc_init` | [`Dma::task_memcpy_set_conf`], [`Dma::task_memcpy_alloc_init`] |
//! | `struct doca_dma_task_memcpy`, `_as_task`, `_get/_set_src/_dst` | [`MemcpyTask`] |
//!
//! **The engine.** A submitted task joins the context's queue; the copy is the emulated DMA
//! engine's work, done inside the progress engine's `progress` (never in submit), on the
//! thread of the engine. Each pass copies at most [`caps::BYTES_PER_PASS`] bytes (1 MiB by
//! default) per DMA context, front task first, so a 64 MiB copy takes 64 passes and the other
//! contexts of the engine are polled between them; small tasks complete several per pass. A
//! task completes (its callback runs) after its last byte is copied. While tasks wait, the
//! context asks to be polled and a request for notification finds work waiting (the handle
//! is readable at once): a sleeping application never sleeps on a queued copy.
//!
//! **Checks and codes.** `doca_task_submit` does not validate: a bad task completes through
//! the error callback with its status, when the engine reaches it — and, as on DOCA's engine
//! (pe_task_error; core's [`doca_core::queue`] holds the rule for every engine library), the
//! failure is fatal to the context: it moves to Stopping, every task still queued completes
//! with [`FLUSH_STATUS`], and it reaches Idle once they are freed. `doca_task_try_submit`
//! ([`MemcpyTask::try_submit`]) makes the same checks first and refuses a bad task with
//! `INVALID_VALUE` (the log line says which check). A buffer's map (reached by the device,
//! with the permission needed) is checked once per buffer handle: the answer cannot change
//! while the handle is live (its map cannot be stopped), so a task slot allocated again with
//! the same buffers checks only their handles and the revocation of a map from export. Such
//! a task, when neither buffer is in a list and it fits the pass's budget, takes a short path
//! (each buffer's shape read once, the maps' revocation checked by the copy itself);
//! any check failing there sends it through the full checks, so its status is theirs. The
//! statuses:
//!
//! | the task                                                        | error callback status |
//! |-----------------------------------------------------------------|-----------------------|
//! | no source or no destination set                                 | `INVALID_VALUE`       |
//! | source data of 0 bytes (DOCA's pe_task_error)                   | `INVALID_VALUE`       |
//! | source above `dma.max_buf_size`, a list above `dma.max_buf_list_len` | `INVALID_VALUE`  |
//! | destination room (free room after its data) below the source's length | `INVALID_VALUE` |
//! | a buffer of a map not added to the DMA's device                 | `NOT_PERMITTED`       |
//! | a destination whose (local) map lacks `LOCAL_READ_WRITE`        | `NOT_PERMITTED`       |
//! | a buffer of a map from export whose export lacks a PCI permission (source) or `PCI_READ_WRITE` (destination) | `NOT_PERMITTED` |
//! | a buffer of a map from export that its exporter revoked (stopped or destroyed its map) | `NOT_FOUND` |
//! | a buffer of a served import (memory the exporter registered by address) whose exporter was killed or exited | `NOT_FOUND` |
//! | a served import whose exporter's library did not move for 10 s (`doca_mmap::served::STALL`: a stopped process) | `TIME_OUT` |
//! | a served import's bytes borrowed in the exporting process meanwhile (Rust guards there) | `IN_USE` |
//! | a buffer returned to its inventory meanwhile                    | `BAD_STATE`           |
//! | source and destination overlapping in one map                   | `IN_USE`              |
//! | source and destination overlapping in memory through two maps over one buffer (C: `doca_mmap_set_memrange` twice) | `INVALID_VALUE` |
//! | the context stopped before the task completed                   | [`FLUSH_STATUS`] (`SHUTDOWN`) |
//!
//! **Across processes.** A buffer of a map created from an export (`doca_mmap_create_from_export`
//! on this DMA's device) is the other side's memory, as `dma_copy` uses it: the DPU reads the
//! host's memory into its own, or writes its own into the host's. Such buffers are named by
//! the exporter's addresses (`buf_get_by_addr` with the address the host sent); the engine
//! never touches the exporter's addresses. Two paths, chosen by the exporter's memory:
//!
//! | exporter's memory | how the engine copies | cost (measured, `doca_bench --only dma`) |
//! |-------------------|-----------------------|------------------------------------------|
//! | `doca_mmap::SharedMem` (memfd) | memcpy through this process's own mapping of the exported pages | as memcpy (1 MiB: about 1.0×) |
//! | registered by address, heap memory (C's `malloc`, `aligned_alloc`, an anonymous `mmap`; a Rust `Vec`) | the pages wholly inside the range: memcpy through this process's mapping of them (the exporter's library swapped them for shared memory at export, `doca_mmap::swap`); the partial pages at the two ends: one request per pass to a thread of the exporter's library (`doca_mmap::served`), sent before the middle is copied | 0.7–0.8× memcpy at 1 MiB (bench row, loaded 2-core machine; it was 0.15×) |
//! | registered by address, anything else (a static array, a file mapping) or no whole page | one request per pass (per MiB) to a thread of the exporter's library, the bytes through a window of shared memory per connection: the exporter's thread copies them in, the engine copies them out into the destination (a write the other way round) | 1 MiB in 90–115 µs (`doca_mmap` served, 2-core machine): about 0.2–0.4× memcpy; the exporter's thread must be scheduled for every request |
//!
//! Neither path uses ptrace rights (`process_vm_readv`), so Yama's `ptrace_scope`,
//! non-dumpable processes and seccomp filters change nothing; `fork` in the exporter keeps
//! copy-on-write semantics (the child's copy of swapped pages is made private at the fork,
//! see `doca_mmap::swap`). The exporter's revocation
//! is checked per task and again by every copy of a pass, so the first task reaching the
//! engine after the exporter stopped its map fails with `NOT_FOUND`; a task half copied when
//! it happens fails the same way, having written part of its destination. (An exporter that
//! exits cleanly drops its maps, which revokes them; one killed revokes nothing of shared
//! memory: what it exported stays mapped here and tasks on it go on working, on memory nobody
//! else uses. A killed exporter of served memory closes its connections: the next task fails
//! with `NOT_FOUND`, never hangs.)
//!
//! **Destination data.** DOCA's rule: the copied bytes land in the destination's free room
//! right after its data (`data + data_len`), and its data length grows by the bytes copied —
//! so a destination from `buf_get_by_addr` (data length 0) ends holding exactly the source's
//! data. A destination list is filled element by element, each element's room in turn. The
//! data lengths change when the task completes; a task failed or flushed part-way may have
//! written some bytes of the room and changes no data length.

#![forbid(unsafe_code)]

pub mod caps;

use std::borrow::Cow;
use std::cell::Cell;

use doca_buf::{Buf, Shape};
use doca_core::queue::{Engine, EngineTask, Fifo, LibCtx, Sizes, Step};
use doca_core::{bail, fail, Ctx, CtxCore, Data, Dev, Error, Refused, Result, TaskId, TaskPayload, TaskPool};
use doca_mmap::AccessFlags;

/// Status of the tasks a stop or a failure flushes: `DOCA_ERROR_SHUTDOWN`.
pub const FLUSH_STATUS: Error = doca_core::queue::FLUSH_STATUS;

/// The payload of a memcpy task: its buffers and how far the engine got.
#[derive(Default)]
#[doc(hidden)] // reached through MemcpyTask
pub struct Memcpy {
    src: Side,
    dst: Side,
    /// Bytes copied so far (the engine's cursor; 0 until it reaches the task).
    copied: usize,
    /// The source's length, set when the engine checked the task (0 before).
    len: usize,
}

/// One buffer of a task, and whether its map passed the device checks (reached by the
/// DMA's device, with the permission the access needs) for this very handle.
///
/// That answer cannot change while the handle is not stale: a live handle's buffer has been
/// out of its inventory ever since it was taken (a return makes every handle to it stale),
/// so its map has had a buffer out all along and could not be stopped — and only a stopped
/// map changes its devices or permissions. The engine then needs only the handle's own
/// check (the buffer's shape, `BAD_STATE` when stale) and the revocation check of a map
/// from export, which can change any time. Setting another buffer forgets the answer.
#[derive(Default)]
struct Side {
    buf: Option<Buf>,
    reached: bool,
}

impl Side {
    /// Sets the buffer; the same buffer again (same descriptor and generation) keeps its
    /// handle and answer, and costs no handle clone.
    fn set(&mut self, buf: Option<&Buf>) {
        if self.buf.as_ref() != buf {
            self.buf = buf.cloned();
            self.reached = false;
        }
    }
}

doca_core::task_handle! {
    /// `struct doca_dma_task_memcpy`: copies the source's data into the destination's room.
    pub struct MemcpyTask(Memcpy);
}

impl MemcpyTask {
    /// `doca_dma_task_memcpy_get_src`.
    pub fn src(&self) -> Option<Buf> {
        self.0.with_payload(|p| p.src.buf.clone())
    }

    /// `doca_dma_task_memcpy_set_src`: checked when the task is submitted.
    pub fn set_src(&self, src: Option<&Buf>) {
        self.0.with_payload(|p| p.src.set(src));
    }

    /// `doca_dma_task_memcpy_get_dst`.
    pub fn dst(&self) -> Option<Buf> {
        self.0.with_payload(|p| p.dst.buf.clone())
    }

    /// `doca_dma_task_memcpy_set_dst`: checked when the task is submitted.
    pub fn set_dst(&self, dst: Option<&Buf>) {
        self.0.with_payload(|p| p.dst.set(dst));
    }
}

/// The limits of one run, read from the device's capabilities at start.
#[derive(Clone, Copy)]
struct Limits {
    max_buf_size: u64,
    max_list_len: u32,
}

impl Limits {
    fn read(info: &doca_core::DevInfo) -> Result<Limits> {
        let max_buf_size = caps::task_memcpy_max_buf_size(info)?;
        Ok(Limits { max_buf_size, max_list_len: caps::task_memcpy_max_buf_list_len(info)? })
    }
}

/// The DMA engine: the copies of the queued memcpy tasks (core's [`doca_core::queue`] kit
/// runs the queue and the context).
#[doc(hidden)] // named by the task payload (`TaskPayload::Lib`); reached through Dma
pub struct DmaOps {
    dev: Dev,
    pool: TaskPool<Memcpy>,
    limits: Cell<Limits>,
}

/// `struct doca_dma`: a DMA context on one device.
pub struct Dma {
    ctx: LibCtx<Fifo<DmaOps>>,
}

impl Dma {
    /// `doca_dma_create`: a context on `dev`; `NOT_SUPPORTED` when the device has no DMA
    /// ([`caps::task_memcpy_is_supported`]).
    pub fn create(dev: &Dev) -> Result<Dma> {
        doca_core::require(caps::task_memcpy_is_supported(dev.as_devinfo()), "doca_dma_create")?;
        let limits = Limits { max_buf_size: 0, max_list_len: 1 };
        let ctx = LibCtx::new(|weak| DmaOps {
            dev: dev.clone(),
            pool: TaskPool::new(weak.clone()),
            limits: Cell::new(limits),
        });
        Ok(Dma { ctx })
    }

    /// `doca_dma_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        self.ctx.as_ctx()
    }

    /// `doca_dma_cap_get_max_num_tasks`.
    pub fn cap_get_max_num_tasks(&self) -> Result<u32> {
        caps::max_num_tasks(self.ctx.engine().dev.as_devinfo())
    }

    /// `doca_dma_task_memcpy_set_conf`: callbacks and pool size (1..=`dma.max_num_tasks`,
    /// else `INVALID_VALUE`). Idle only (`BAD_STATE`).
    pub fn task_memcpy_set_conf(
        &self,
        completion: impl FnMut(MemcpyTask, Data, Data) + 'static,
        error: impl FnMut(MemcpyTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.set_conf(completion, error, num_tasks, self.cap_get_max_num_tasks()?)
    }

    /// `doca_dma_task_memcpy_alloc_init`: a task copying `src`'s data into `dst`'s room.
    /// Either may be `None` and set later ([`MemcpyTask::set_src`]); nothing is checked
    /// before submission. Running only (`BAD_STATE`); every task out → `NO_MEMORY`.
    #[inline]
    pub fn task_memcpy_alloc_init(
        &self,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<MemcpyTask> {
        let t = self.ctx.alloc(user_data, |p: &mut Memcpy| {
            // A slot keeps the buffers of its last task: the same ones again (a task
            // allocated per copy of one pair) cost no handle clone and no second map check.
            // Its cursor is at rest (`Engine::finish` leaves it so).
            p.src.set(src);
            p.dst.set(dst);
        })?;
        Ok(MemcpyTask(t))
    }

    /// `doca_dma_destroy`: Idle only (`BAD_STATE`, and the context back).
    pub fn destroy(self) -> Result<(), Refused<Dma>> {
        self.ctx.destroy().map_err(|r| r.map(|ctx| Dma { ctx }))
    }
}

/// The elements of the list headed by `head` (whose shape the caller read), in order, each
/// with its shape (`INVALID_VALUE` beyond `max`). A buffer in no list is looked at alone
/// (no clone of its handle, no look at the inventory's list state).
fn walk(
    head: &Buf,
    shape: Shape,
    max: u32,
    what: &str,
    mut f: impl FnMut(&Buf, Shape) -> Result<()>,
) -> Result<()> {
    f(head, shape)?;
    if !shape.in_list {
        return Ok(());
    }
    let mut cur = head.next_in_list()?;
    let mut n = 1u32;
    while let Some(b) = cur {
        n += 1;
        if n > max {
            bail!(
                Error::InvalidValue,
                "dma: the {what} list has more than {max} elements (cap dma.max_buf_list_len)"
            );
        }
        f(&b, b.shape()?)?;
        cur = b.next_in_list()?;
    }
    Ok(())
}

/// What the checks of a task found: the source's length and, when neither buffer is in a
/// list, both shapes as the checks read them (the copy then needs no second look).
struct Checked {
    len: usize,
    single: Option<(Shape, Shape)>,
}

impl DmaOps {
    /// Whether `buf`'s map is one this device may reach: a local map added to the device,
    /// or a map created from an export with it (the other side's memory, reached over the
    /// emulated link) whose export allows the access — a PCI permission to read a source,
    /// `PCI_READ_WRITE` to write a destination — and that its exporter has not revoked
    /// (`NOT_FOUND`, checked again by every copy).
    fn check_map(&self, buf: &Buf, what: &str, write: bool) -> Result<()> {
        let map = buf.map();
        let Some(perms) = map.dev_permissions(&self.dev) else {
            bail!(
                Error::NotPermitted,
                "dma: the {what}'s map was not added to the DMA's device (doca_mmap_add_dev)"
            );
        };
        map.check_live()?;
        if map.is_from_export() {
            let needed = if write {
                AccessFlags::PCI_READ_WRITE
            } else {
                AccessFlags::PCI_READ_ONLY | AccessFlags::PCI_READ_WRITE
            };
            if !perms.intersects(needed) {
                bail!(
                    Error::NotPermitted,
                    "dma: the {what} is in memory exported without {} (the exporter's doca_mmap_set_permissions)",
                    if write { "DOCA_ACCESS_FLAG_PCI_READ_WRITE" } else { "a PCI permission" }
                );
            }
        } else if write && !perms.contains(AccessFlags::LOCAL_READ_WRITE) {
            bail!(Error::NotPermitted, "dma: the destination's map lacks DOCA_ACCESS_FLAG_LOCAL_READ_WRITE");
        }
        Ok(())
    }

    /// Every check of a task's buffers ([`DmaOps::check_bufs`]), remembering which buffers
    /// passed the map checks.
    fn check_task(&self, p: &mut Memcpy) -> Result<Checked> {
        let checked = self.check_bufs(&p.src, &p.dst)?;
        if checked.single.is_some() {
            (p.src.reached, p.dst.reached) = (true, true);
        }
        Ok(checked)
    }

    /// The map checks of a buffer in no list: all of them once per handle, then only the
    /// revocation of a map from export (see [`Side`]).
    fn check_single(&self, side: &Side, buf: &Buf, what: &str, write: bool) -> Result<()> {
        if side.reached {
            buf.map().check_live()
        } else {
            self.check_map(buf, what, write)
        }
    }

    /// Every check of a task's buffers, each buffer's shape read once.
    fn check_bufs(&self, src: &Side, dst: &Side) -> Result<Checked> {
        let limits = self.limits.get();
        let Some(s_buf) = &src.buf else { bail!(Error::InvalidValue, "dma: the memcpy task has no source") };
        let Some(d_buf) = &dst.buf else {
            bail!(Error::InvalidValue, "dma: the memcpy task has no destination")
        };
        let s_shape = s_buf.shape()?;
        let mut len = 0usize;
        if s_shape.in_list {
            walk(s_buf, s_shape, limits.max_list_len, "source", |b, shape| {
                self.check_map(b, "source", false)?;
                len = len.saturating_add(shape.data_len);
                Ok(())
            })?;
        } else {
            self.check_single(src, s_buf, "source", false)?;
            len = s_shape.data_len;
        }
        if len == 0 {
            bail!(Error::InvalidValue, "dma: the source holds no data (data length 0)");
        }
        if len as u64 > limits.max_buf_size {
            bail!(
                Error::InvalidValue,
                "dma: {len} bytes exceed the maximum {} (cap dma.max_buf_size)",
                limits.max_buf_size
            );
        }
        let d_shape = d_buf.shape()?;
        let mut room = 0usize;
        if d_shape.in_list {
            walk(d_buf, d_shape, limits.max_list_len, "destination", |b, shape| {
                self.check_map(b, "destination", true)?;
                room = room.saturating_add(shape.room());
                Ok(())
            })?;
        } else {
            self.check_single(dst, d_buf, "destination", true)?;
            room = d_shape.room();
        }
        if room < len {
            bail!(
                Error::InvalidValue,
                "dma: the destination has room for {room} bytes after its data, the source holds {len}"
            );
        }
        let single = (!s_shape.in_list && !d_shape.in_list).then_some((s_shape, d_shape));
        Ok(Checked { len, single })
    }

    /// The whole copy of a task whose buffers are in no list, with the shapes its checks
    /// read: the source's data into the destination's room, whose data length then grows.
    fn copy_single(src: &Buf, s: Shape, dst: &Buf, d: Shape) -> Result<()> {
        let (from, to, n) = (s.data, d.data_end(), s.data_len);
        if src.map() == dst.map() && from < to + n && to < from + n {
            return Err(overlap(from, to, n));
        }
        src.map().copy_to_map(from, n, dst.map(), to)?;
        dst.increase_data_len(n)
    }

    /// The usual task in one go, each buffer's shape read once: two
    /// buffers in no list whose maps passed the device checks for these very handles (see
    /// [`Side`]), a copy that fits `budget`. `None` when the task is anything else, or when
    /// a check fails before the copy: the general path ([`DmaOps::check_task`]) then makes
    /// every check in its order, so that the status is the one it gives. Past the checks
    /// nothing differs from that path: the maps' revocation is checked by the copy itself
    /// (and first when the ranges overlap, as [`DmaOps::check_bufs`] checks it before).
    #[inline]
    fn try_single(&self, p: &Memcpy, budget: usize) -> Option<Result<usize>> {
        let (Some(src), Some(dst)) = (&p.src.buf, &p.dst.buf) else { return None };
        if !(p.src.reached && p.dst.reached) {
            return None;
        }
        // The destination found once for its shape and its data length's growth.
        let (Ok(s), Ok((d, dst_view))) = (src.shape(), dst.view()) else { return None };
        let n = s.data_len;
        if s.in_list
            || d.in_list
            || n == 0
            || n > budget
            || n as u64 > self.limits.get().max_buf_size
            || d.room() < n
        {
            return None;
        }
        let (from, to) = (s.data, d.data_end());
        if src.map() == dst.map() && from < to + n && to < from + n {
            return Some(src.map().check_live().and_then(|()| Err(overlap(from, to, n))));
        }
        Some(
            src.map()
                .copy_to_map(from, n, dst.map(), to)
                .and_then(|()| dst_view.increase_data_len(n))
                .map(|()| n),
        )
    }

    /// Copies up to `budget` bytes of the copy `src` → `dst` from byte `copied` of `len`;
    /// returns the bytes copied.
    fn copy_some(src: &Buf, dst: &Buf, copied: usize, len: usize, budget: usize) -> Result<usize> {
        let want = budget.min(len - copied);
        // Cursors: the element and the offset in its data (source) or room (destination)
        // of byte `copied`.
        let (mut s, mut s_off) = seek(src, copied, |b| b.data_len())?;
        let (mut d, mut d_off) = seek(dst, copied, |b| b.tail_room())?;
        let mut done = 0;
        while done < want {
            let s_shape = s.shape()?;
            let d_shape = d.shape()?;
            let (s_left, d_left) = (s_shape.data_len - s_off, d_shape.room() - d_off);
            let n = (want - done).min(s_left).min(d_left);
            if n > 0 {
                let (from, to) = (s_shape.data + s_off, d_shape.data_end() + d_off);
                if s.map() == d.map() && from < to + n && to < from + n {
                    return Err(overlap(from, to, n));
                }
                // Through this process's own mappings, at offsets: for a map from export the
                // exporter's addresses are only names (`buf_get_by_addr`), never touched.
                s.map().copy_to_map(from, n, d.map(), to)?;
                done += n;
                s_off += n;
                d_off += n;
            }
            if done == want {
                break;
            }
            if s_off == s_shape.data_len {
                s = Cow::Owned(
                    s.next_in_list()?
                        .ok_or_else(|| fail!(Error::InvalidValue, "dma: the source list changed"))?,
                );
                s_off = 0;
            }
            if d_off == d_shape.room() {
                d = Cow::Owned(
                    d.next_in_list()?
                        .ok_or_else(|| fail!(Error::InvalidValue, "dma: the destination list changed"))?,
                );
                d_off = 0;
            }
        }
        Ok(done)
    }

    /// The copy of `len` bytes into `dst` is complete: the destination's data lengths grow
    /// by what landed in each element's room.
    fn settle(dst: &Buf, len: usize) -> Result<()> {
        let n = len.min(dst.tail_room()?);
        dst.increase_data_len(n)?;
        let mut left = len - n;
        let mut cur = if left > 0 { dst.next_in_list()? } else { None };
        while let (Some(b), true) = (cur, left > 0) {
            let n = left.min(b.tail_room()?);
            b.increase_data_len(n)?;
            left -= n;
            cur = if left > 0 { b.next_in_list()? } else { None };
        }
        Ok(())
    }

    /// Advances the front task by at most `budget` bytes; returns the bytes used and how far
    /// it got. The task's buffers are used in place,
    /// under the pool's borrow (nothing here reaches the pool or runs user code). A task
    /// whose buffers are in no list and that fits the budget is checked and copied in one
    /// go, each buffer's shape read once.
    #[inline]
    fn advance_front(&self, id: TaskId, budget: usize) -> Step {
        let step = self.pool.with_payload(id, |p| -> Result<(usize, bool)> {
            if p.len == 0 {
                if let Some(done) = self.try_single(p, budget) {
                    return done.map(|n| (n, true));
                }
                let checked = self.check_task(p)?;
                match (checked.single, &p.src.buf, &p.dst.buf) {
                    (Some((s, d)), Some(src), Some(dst)) if checked.len <= budget => {
                        DmaOps::copy_single(src, s, dst, d)?;
                        return Ok((checked.len, true));
                    }
                    _ => {}
                }
                p.len = checked.len;
                p.copied = 0;
            }
            let (Some(src), Some(dst)) = (&p.src.buf, &p.dst.buf) else { return Err(Error::InvalidValue) };
            let n = DmaOps::copy_some(src, dst, p.copied, p.len, budget)?;
            p.copied += n;
            if p.copied < p.len {
                return Ok((n, false));
            }
            DmaOps::settle(dst, p.len)?;
            // Ready for the next submission (a resubmitted task is checked again).
            p.len = 0;
            Ok((n, true))
        });
        match step {
            Some(Ok((n, false))) => Step::Partial(n),
            Some(Ok((n, true))) => Step::Done(n),
            Some(Err(e)) => Step::Failed(e),
            None => Step::Failed(Error::BadState),
        }
    }
}

impl DmaOps {
    /// The task's cursor at rest (out of line: only failed and flushed tasks need it).
    #[cold]
    #[inline(never)]
    fn rest(&self, id: TaskId) {
        self.pool.with_payload(id, |p| (p.copied, p.len) = (0, 0));
    }
}

/// The error of a copy whose source and destination ranges overlap in one map (out of line).
#[cold]
#[inline(never)]
fn overlap(from: usize, to: usize, n: usize) -> Error {
    fail!(Error::InUse, "dma: the source and destination overlap ({from}+{n}, {to}+{n} in one map)")
}

/// The element of the list headed by `head` holding byte `pos` of what `size` counts in
/// each element, and the offset in it (the head itself, borrowed, when it holds it).
fn seek<'a>(
    head: &'a Buf,
    pos: usize,
    size: impl Fn(&Buf) -> Result<usize>,
) -> Result<(Cow<'a, Buf>, usize)> {
    let mut b = Cow::Borrowed(head);
    let mut pos = pos;
    loop {
        let n = size(&b)?;
        if pos < n {
            return Ok((b, pos));
        }
        match b.next_in_list()? {
            Some(next) => {
                pos -= n;
                b = Cow::Owned(next);
            }
            // `pos` is at the very end (nothing left to copy): stay on the last element.
            None => return Ok((b, n.min(pos))),
        }
    }
}

impl Engine for DmaOps {
    type Job = TaskId;
    const KIND: &'static str = "dma";
    const FAILED: &'static str = "a memcpy task failed";

    fn device(&self) -> Option<doca_core::PciAddr> {
        Some(self.dev.as_devinfo().pci_addr())
    }

    /// At most [`caps::BYTES_PER_PASS`] bytes a pass (`dma.bytes_per_pass`).
    fn start(&self) -> Result<Sizes> {
        self.limits.set(Limits::read(self.dev.as_devinfo())?);
        self.pool.prepare(Memcpy::default);
        let bytes_per_pass = caps::bytes_per_pass(self.dev.as_devinfo())?;
        Ok(Sizes { tasks: self.pool.capacity() as usize, bytes_per_pass })
    }

    #[inline]
    fn step(&self, id: TaskId, budget: usize) -> Step {
        self.advance_front(id, budget)
    }

    /// A task handed back with an error (failed or flushed, maybe part-way) gets its cursor
    /// back at rest first, as every completed task has it: a slot is always at rest when it
    /// is free, allocated or queued, and alloc_init need not touch it.
    #[inline]
    fn finish(&self, id: TaskId, status: Result<()>) {
        if status.is_err() {
            self.rest(id);
        }
        self.pool.finish(id, status);
    }

    /// As [`Engine::finish`] (the cursor at rest after an error), without the pool's upgrade.
    /// Always inline: the kit's pass calls it for each completed task, and a call of its own
    /// cost a prologue and an epilogue per task (the error's `rest` stays out of line).
    #[inline(always)]
    fn finish_in(&self, core: &CtxCore, id: TaskId, status: Result<()>) {
        if status.is_err() {
            self.rest(id);
        }
        self.pool.finish_in(core, id, status);
    }
}

impl TaskPayload for Memcpy {
    type Lib = Fifo<DmaOps>;
    const FAULT_KIND: &'static str = "dma.memcpy";
}

/// Submitted tasks are queued as they are and checked when the engine reaches them (DOCA's
/// submit does not validate). A task's cursor is at rest when it is queued: every completion
/// leaves it so (a success at its end, a failure or a flush in [`Engine::finish`]).
impl EngineTask<Memcpy> for DmaOps {
    fn pool(&self) -> &TaskPool<Memcpy> {
        &self.pool
    }

    fn job(id: TaskId) -> TaskId {
        id
    }

    fn validate(&self, id: TaskId) -> Result<()> {
        self.pool.with_payload(id, |p| self.check_task(p)).ok_or(Error::BadState)?.map(|_| ())
    }
}
