//! DOCA Erasure Coding (`doca_erasure_coding.h`): Reed-Solomon create (encode), update,
//! recover (decode) and Galois-multiply tasks over buffers of local memory maps, as a library
//! context on core's plug-in interface. The field arithmetic is the `reed-solomon-erasure`
//! crate's GF(2^8) (polynomial 0x11D, as ISA-L); the matrices are built as DOCA's header
//! documents them ([`matrix`]).
//!
//! | DOCA                                          | here                                   |
//! |-----------------------------------------------|----------------------------------------|
//! | `struct doca_ec`, `doca_ec_create`/`_destroy`/`_as_ctx` | [`Ec`]: [`Ec::create`], [`Ec::destroy`], [`Ec::as_ctx`] |
//! | `doca_ec_cap_*`                               | [`caps`]                               |
//! | `struct doca_ec_matrix`, `enum doca_ec_matrix_type`, `doca_ec_matrix_*` | [`Matrix`], [`MatrixType`], [`Ec::matrix_create`] and the others |
//! | `doca_ec_task_create_*`                       | [`Ec::task_create_set_conf`], [`Ec::task_create_alloc_init`], [`CreateTask`] |
//! | `doca_ec_task_update_*`                       | [`Ec::task_update_set_conf`], [`Ec::task_update_alloc_init`], [`UpdateTask`] |
//! | `doca_ec_task_recover_*`                      | [`Ec::task_recover_set_conf`], [`Ec::task_recover_alloc_init`], [`RecoverTask`] |
//! | `doca_ec_task_galois_mul_*`                   | [`Ec::task_galois_mul_set_conf`], [`Ec::task_galois_mul_alloc_init`], [`GaloisMulTask`] |
//!
//! **Blocks.** Every task reads a sequence of equal input blocks from its source (the data of
//! a buffer or of a buffer list, elements in order, a block free to span elements) and writes
//! a sequence of output blocks into its destination's room. The matrix says how many of each
//! ([`Matrix::inputs`], [`Matrix::outputs`]); the block size is the source's length divided by
//! the inputs, and must be a multiple of 64 bytes (at least 64), at most
//! `doca_ec_cap_get_max_block_size`.
//!
//! | task      | matrix (role)                  | source                                   | destination |
//! |-----------|--------------------------------|------------------------------------------|-------------|
//! | create    | coding (`matrix_create`, raw)  | the `k` data blocks                      | the `m` redundancy blocks |
//! | update    | update, or raw                 | `old_u, new_u` per updated block, then the `m` redundancy blocks | the `m` new redundancy blocks |
//! | recover   | recover, or coding (applied as given) | the first `k` blocks not missing (data, then redundancy) | the missing blocks, in order |
//! | galois_mul| coding (`matrix_create`, raw)  | the `k` blocks                           | the `m` products |
//!
//! **The engine.** A submitted task joins the context's queue (the four types in one queue,
//! in submission order); the coding is the emulated engine's work, done inside the progress
//! engine's `progress` (never in submit), in stripes of up to 32 KiB of every block, at most
//! [`caps::BYTES_PER_PASS`] source bytes (1 MiB by default) per context per pass. No heap
//! allocation per task: the stripe buffers are allocated at start.
//!
//! **Checks and codes.** `doca_task_submit` does not validate: a bad task completes through
//! the error callback with its status when the engine reaches it, and, as on DOCA's engine
//! (pe_task_error, the rule of core's [`doca_core::queue`]), the failure is fatal to the
//! context: Stopping, every queued task completes with [`FLUSH_STATUS`], Idle once they are
//! freed. `doca_task_try_submit` makes the same checks first and refuses a bad task with
//! `INVALID_VALUE`. The statuses:
//!
//! | the task                                                        | error callback status |
//! |-----------------------------------------------------------------|-----------------------|
//! | no matrix, source or destination set                            | `INVALID_VALUE`       |
//! | a matrix of the wrong role (a recover matrix given to a create task, ...) | `INVALID_VALUE` |
//! | source not a whole number of blocks, a block not a multiple of 64 (or 0) | `INVALID_VALUE` |
//! | a block above `ec.max_block_size`, a list above `ec.max_buf_list_len` | `INVALID_VALUE` |
//! | destination room (free room after the data, all elements) below the output blocks | `INVALID_VALUE` |
//! | a task type the topology takes away (`ec.create`, ...)          | `NOT_SUPPORTED`       |
//! | a buffer of a map not added to the EC's device                  | `NOT_PERMITTED`       |
//! | a destination whose map lacks `LOCAL_READ_WRITE`                | `NOT_PERMITTED`       |
//! | a buffer of a map created from an export (not supported)        | `NOT_SUPPORTED`       |
//! | source data and destination room overlapping in one map         | `IN_USE`              |
//! | a buffer returned to its inventory meanwhile                    | `BAD_STATE`           |
//! | the context stopped, or a task before it failed, before it completed | [`FLUSH_STATUS`] (`SHUTDOWN`) |
//!
//! **Destination data.** As in DOCA DMA: the output lands in the destination's free room
//! right after its data (`data + data_len`), element by element, each element's room in turn;
//! each element's data length grows by what it received when the task completes — so a
//! destination from `buf_get_by_addr` (data length 0) ends holding exactly the output blocks.

#![forbid(unsafe_code)]

pub mod caps;
pub mod matrix;

use std::cell::{Cell, RefCell};

use doca_buf::Buf;
use doca_core::queue::{Engine, EngineTask, Fifo, LibCtx, Sizes, Step};
use doca_core::{bail, fail, Ctx, Data, Dev, Error, Refused, Result, TaskId, TaskPayload, TaskPool};
use doca_mmap::AccessFlags;
use smallvec::SmallVec;

pub use caps::TaskType;
pub use matrix::{Matrix, MatrixType, Role};

/// Status of the tasks a stop or a failure flushes: `DOCA_ERROR_SHUTDOWN`.
pub const FLUSH_STATUS: Error = doca_core::queue::FLUSH_STATUS;

/// The bytes of each block one stripe codes.
const STRIPE: usize = 32 << 10;

/// Where the engine is with a submission (set when it checked the task).
#[derive(Default, Clone, Copy)]
struct Run {
    /// Whether the checks passed for this submission.
    checked: bool,
    /// The block size.
    block: usize,
    /// Bytes of each block coded so far.
    done: usize,
}

/// What every task type holds.
#[derive(Default)]
#[doc(hidden)]
pub struct Common {
    matrix: Option<Matrix>,
    src: Option<Buf>,
    dst: Option<Buf>,
    run: Run,
}

impl Common {
    fn new(matrix: Option<&Matrix>, src: Option<&Buf>, dst: Option<&Buf>) -> Common {
        Common { matrix: matrix.cloned(), src: src.cloned(), dst: dst.cloned(), run: Run::default() }
    }
}

macro_rules! ec_task {
    ($(#[$m:meta])* $handle:ident, $payload:ident, $kind:literal, $what:literal, $tt:expr, $job:ident, $pool:ident) => {
        /// The payload of one task type (reached through its handle).
        #[derive(Default)]
        #[doc(hidden)]
        pub struct $payload {
            c: Common,
        }

        doca_core::task_handle! {
            $(#[$m])*
            pub struct $handle($payload);
        }

        impl $handle {
            /// The task's matrix (`doca_ec_task_*_get_*_matrix`).
            pub fn matrix(&self) -> Option<Matrix> {
                self.0.with_payload(|p| p.c.matrix.clone())
            }

            /// Sets the matrix (`doca_ec_task_*_set_*_matrix`): checked when submitted.
            pub fn set_matrix(&self, m: Option<&Matrix>) {
                self.0.with_payload(|p| p.c.matrix = m.cloned());
            }

            /// The source: the input blocks (`doca_ec_task_*_get_{original_data_blocks,
            /// original_updated_and_rdnc_blocks, available_blocks, src_buf}`).
            pub fn src(&self) -> Option<Buf> {
                self.0.with_payload(|p| p.c.src.clone())
            }

            /// Sets the source: checked when submitted.
            pub fn set_src(&self, b: Option<&Buf>) {
                self.0.with_payload(|p| p.c.src = b.cloned());
            }

            /// The destination: room for the output blocks (`doca_ec_task_*_get_{rdnc_blocks,
            /// updated_rdnc_blocks, recovered_data, dst_buf}`).
            pub fn dst(&self) -> Option<Buf> {
                self.0.with_payload(|p| p.c.dst.clone())
            }

            /// Sets the destination: checked when submitted.
            pub fn set_dst(&self, b: Option<&Buf>) {
                self.0.with_payload(|p| p.c.dst = b.cloned());
            }
        }

        impl TaskPayload for $payload {
            type Lib = Fifo<EcOps>;
            const FAULT_KIND: &'static str = $kind;
        }

        impl Kind for $payload {
            const WHAT: &'static str = $what;
            const TYPE: TaskType = $tt;

            fn pool(ops: &EcOps) -> &TaskPool<Self> {
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

ec_task! {
    /// `struct doca_ec_task_create`: codes the redundancy blocks of `k` data blocks.
    CreateTask, Create, "ec.create", "create", TaskType::Create, Create, create
}
ec_task! {
    /// `struct doca_ec_task_update`: new redundancy blocks after some data blocks changed.
    UpdateTask, Update, "ec.update", "update", TaskType::Update, Update, update
}
ec_task! {
    /// `struct doca_ec_task_recover`: the missing blocks from `k` available ones.
    RecoverTask, Recover, "ec.recover", "recover", TaskType::Recover, Recover, recover
}
ec_task! {
    /// `struct doca_ec_task_galois_mul`: the products of a coding matrix and `k` blocks.
    GaloisMulTask, GaloisMul, "ec.galois_mul", "Galois multiplication", TaskType::GaloisMul, GaloisMul, galois_mul
}

/// A queued task of any type.
#[derive(Clone, Copy)]
#[doc(hidden)] // the engine's queue entry (`Engine::Job`)
pub enum Job {
    /// A create task.
    Create(TaskId),
    /// An update task.
    Update(TaskId),
    /// A recover task.
    Recover(TaskId),
    /// A Galois multiplication task.
    GaloisMul(TaskId),
}

/// The limits of one run, read from the device's capabilities at start.
#[derive(Clone, Copy)]
struct Limits {
    max_block: u64,
    max_list_len: u32,
}

/// The EC engine: the coding of the queued tasks (core's [`doca_core::queue`] kit runs the
/// queue and the context).
#[doc(hidden)] // named by the task payloads (`TaskPayload::Lib`); reached through Ec
pub struct EcOps {
    dev: Dev,
    create: TaskPool<Create>,
    update: TaskPool<Update>,
    recover: TaskPool<Recover>,
    galois_mul: TaskPool<GaloisMul>,
    limits: Cell<Limits>,
    /// One stripe of every output block (`ec.max_rdnc_blocks` x 32 KiB), allocated at start.
    stripes: RefCell<Vec<u8>>,
}

/// `struct doca_ec`: an erasure coding context on one device.
pub struct Ec {
    ctx: LibCtx<Fifo<EcOps>>,
}

impl Ec {
    /// `doca_ec_create`: a context on `dev`; `NOT_SUPPORTED` when the topology gives the
    /// device no erasure coding ([`caps::is_supported`]).
    pub fn create(dev: &Dev) -> Result<Ec> {
        doca_core::require(caps::is_supported(dev.as_devinfo()), "doca_ec_create")?;
        let ctx = LibCtx::new(|weak| EcOps {
            dev: dev.clone(),
            create: TaskPool::new(weak.clone()),
            update: TaskPool::new(weak.clone()),
            recover: TaskPool::new(weak.clone()),
            galois_mul: TaskPool::new(weak.clone()),
            limits: Cell::new(Limits { max_block: 0, max_list_len: 1 }),
            stripes: RefCell::new(Vec::new()),
        });
        Ok(Ec { ctx })
    }

    /// `doca_ec_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        self.ctx.as_ctx()
    }

    /// `doca_ec_destroy`: Idle only (`BAD_STATE`, and the context back).
    pub fn destroy(self) -> Result<(), Refused<Ec>> {
        self.ctx.destroy().map_err(|r| r.map(|ctx| Ec { ctx }))
    }

    fn dev(&self) -> &Dev {
        &self.ctx.engine().dev
    }

    fn max_num_tasks(&self) -> Result<u32> {
        caps::max_num_tasks(self.dev().as_devinfo())
    }

    /// `k` and `m` within the device's limits (`ec.max_data_blocks`, `ec.max_rdnc_blocks`).
    fn check_counts(&self, k: usize, m: usize) -> Result<()> {
        let info = self.dev().as_devinfo();
        let (max_k, max_m) = (caps::max_data_blocks(info)?, caps::max_rdnc_blocks(info)?);
        if k > max_k || m > max_m {
            bail!(
                Error::InvalidValue,
                "ec: {k} data and {m} redundancy blocks exceed the device's {max_k} and {max_m} (cap ec.max_data_blocks, ec.max_rdnc_blocks)"
            );
        }
        Ok(())
    }

    /// `doca_ec_matrix_create`: the coding matrix of `kind` for `k` data and `m` redundancy
    /// blocks (`INVALID_VALUE` for 0 blocks or above the device's limits).
    pub fn matrix_create(&self, kind: MatrixType, k: usize, m: usize) -> Result<Matrix> {
        self.check_counts(k, m)?;
        Matrix::coding(kind, k, m)
    }

    /// `doca_ec_matrix_create_from_raw`: a coding matrix from `k * m` coefficients, data
    /// block major ([`matrix`]).
    pub fn matrix_create_from_raw(&self, data: &[u8], k: usize, m: usize) -> Result<Matrix> {
        self.check_counts(k, m)?;
        Matrix::from_raw(data, k, m)
    }

    /// `doca_ec_matrix_create_update`: for the updated data blocks (ascending indices).
    pub fn matrix_create_update(&self, coding: &Matrix, updated: &[u32]) -> Result<Matrix> {
        coding.update(updated)
    }

    /// `doca_ec_matrix_create_recover`: for the missing blocks (ascending indices into data
    /// then redundancy blocks, at most `m`).
    pub fn matrix_create_recover(&self, coding: &Matrix, missing: &[u32]) -> Result<Matrix> {
        coding.recover(missing)
    }
}

impl Ec {
    /// `doca_ec_task_create_set_conf`: callbacks and pool size of the create (encode) tasks (1 to
    /// `ec.max_num_tasks`, else `INVALID_VALUE`). Idle only (`BAD_STATE`).
    pub fn task_create_set_conf(
        &self,
        completion: impl FnMut(CreateTask, Data, Data) + 'static,
        error: impl FnMut(CreateTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.set_conf(completion, error, num_tasks, self.max_num_tasks()?)
    }

    /// `doca_ec_task_create_allocate_init`: matrix, source and destination may be `None` and set
    /// later; nothing is checked before submission. Running only (`BAD_STATE`); every task out
    /// → `NO_MEMORY`.
    pub fn task_create_alloc_init(
        &self,
        matrix: Option<&Matrix>,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<CreateTask> {
        let t = self.ctx.alloc(user_data, |p: &mut Create| p.c = Common::new(matrix, src, dst))?;
        Ok(CreateTask(t))
    }

    /// `doca_ec_task_update_set_conf`: callbacks and pool size of the update tasks (1 to
    /// `ec.max_num_tasks`, else `INVALID_VALUE`). Idle only (`BAD_STATE`).
    pub fn task_update_set_conf(
        &self,
        completion: impl FnMut(UpdateTask, Data, Data) + 'static,
        error: impl FnMut(UpdateTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.set_conf(completion, error, num_tasks, self.max_num_tasks()?)
    }

    /// `doca_ec_task_update_allocate_init`: matrix, source and destination may be `None` and set
    /// later; nothing is checked before submission. Running only (`BAD_STATE`); every task out
    /// → `NO_MEMORY`.
    pub fn task_update_alloc_init(
        &self,
        matrix: Option<&Matrix>,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<UpdateTask> {
        let t = self.ctx.alloc(user_data, |p: &mut Update| p.c = Common::new(matrix, src, dst))?;
        Ok(UpdateTask(t))
    }

    /// `doca_ec_task_recover_set_conf`: callbacks and pool size of the recover (decode) tasks (1 to
    /// `ec.max_num_tasks`, else `INVALID_VALUE`). Idle only (`BAD_STATE`).
    pub fn task_recover_set_conf(
        &self,
        completion: impl FnMut(RecoverTask, Data, Data) + 'static,
        error: impl FnMut(RecoverTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.set_conf(completion, error, num_tasks, self.max_num_tasks()?)
    }

    /// `doca_ec_task_recover_allocate_init`: matrix, source and destination may be `None` and set
    /// later; nothing is checked before submission. Running only (`BAD_STATE`); every task out
    /// → `NO_MEMORY`.
    pub fn task_recover_alloc_init(
        &self,
        matrix: Option<&Matrix>,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<RecoverTask> {
        let t = self.ctx.alloc(user_data, |p: &mut Recover| p.c = Common::new(matrix, src, dst))?;
        Ok(RecoverTask(t))
    }

    /// `doca_ec_task_galois_mul_set_conf`: callbacks and pool size of the Galois multiplication tasks (1 to
    /// `ec.max_num_tasks`, else `INVALID_VALUE`). Idle only (`BAD_STATE`).
    pub fn task_galois_mul_set_conf(
        &self,
        completion: impl FnMut(GaloisMulTask, Data, Data) + 'static,
        error: impl FnMut(GaloisMulTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.ctx.set_conf(completion, error, num_tasks, self.max_num_tasks()?)
    }

    /// `doca_ec_task_galois_mul_allocate_init`: matrix, source and destination may be `None` and set
    /// later; nothing is checked before submission. Running only (`BAD_STATE`); every task out
    /// → `NO_MEMORY`.
    pub fn task_galois_mul_alloc_init(
        &self,
        matrix: Option<&Matrix>,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<GaloisMulTask> {
        let t = self.ctx.alloc(user_data, |p: &mut GaloisMul| p.c = Common::new(matrix, src, dst))?;
        Ok(GaloisMulTask(t))
    }
}

/// The engine's view of a task type.
trait Kind: TaskPayload<Lib = Fifo<EcOps>> {
    const WHAT: &'static str;
    const TYPE: TaskType;
    fn pool(ops: &EcOps) -> &TaskPool<Self>;
    fn job(id: TaskId) -> Job;
    fn common(&mut self) -> &mut Common;
}

/// Whether a task type takes a matrix of `role`.
fn takes(t: TaskType, role: Role) -> bool {
    matches!(
        (t, role),
        (_, Role::Coding(None))
            | (TaskType::Create | TaskType::GaloisMul, Role::Coding(Some(_)))
            | (TaskType::Update, Role::Update)
            // A coding matrix is applied as given, as DOCA's engine does: with one XOR parity
            // block (a Vandermonde matrix of m = 1), what NVIDIA's storage application
            // passes, it recovers the one missing data block from the others and the parity.
            | (TaskType::Recover, Role::Recover | Role::Coding(Some(_)))
    )
}

/// One piece of a stream: `(buffer, offset in its map, length)`.
type Piece = (Buf, usize, usize);

/// Calls `f` with the pieces of `pos..pos + len` of the stream of the list headed by
/// `head`: its data (`room` false) or its free room after the data (`room` true), elements
/// in order.
fn pieces(
    head: &Buf,
    room: bool,
    mut pos: usize,
    mut len: usize,
    mut f: impl FnMut(Piece) -> Result<()>,
) -> Result<()> {
    let mut cur = Some(head.clone());
    while let Some(b) = cur {
        if len == 0 {
            return Ok(());
        }
        let s = b.shape()?;
        let (start, n) = if room { (s.data_end(), s.room()) } else { (s.data, s.data_len) };
        if pos < n {
            let take = len.min(n - pos);
            f((b.clone(), start + pos, take))?;
            len -= take;
            pos = 0;
        } else {
            pos -= n;
        }
        cur = b.next_in_list()?;
    }
    if len > 0 {
        bail!(Error::InvalidValue, "ec: a buffer list changed under its task");
    }
    Ok(())
}

/// The elements of the list headed by `head`, in order (`INVALID_VALUE` beyond `max`).
fn walk(head: &Buf, max: u32, what: &str, mut f: impl FnMut(&Buf) -> Result<()>) -> Result<()> {
    let mut cur = Some(head.clone());
    let mut n = 0u32;
    while let Some(b) = cur {
        n += 1;
        if n > max {
            bail!(
                Error::InvalidValue,
                "ec: the {what} list has more than {max} elements (cap ec.max_buf_list_len)"
            );
        }
        f(&b)?;
        cur = b.next_in_list()?;
    }
    Ok(())
}

impl EcOps {
    /// Whether `buf`'s map is one this device may reach (local, added to the device).
    fn check_map(&self, buf: &Buf, what: &str) -> Result<()> {
        let map = buf.map();
        if map.is_from_export() {
            bail!(
                Error::NotSupported,
                "ec: the {what} is a buffer of a map created from an export (not supported)"
            );
        }
        if !map.has_dev(&self.dev) {
            bail!(
                Error::NotPermitted,
                "ec: the {what}'s map was not added to the EC's device (doca_mmap_add_dev)"
            );
        }
        map.check_live()
    }

    /// Every check of a task; the block size.
    fn checks<P: Kind>(&self, id: TaskId) -> Result<usize> {
        let limits = self.limits.get();
        let (matrix, src, dst) = P::pool(self)
            .with_payload(id, |p| {
                let c = p.common();
                (c.matrix.clone(), c.src.clone(), c.dst.clone())
            })
            .ok_or(Error::BadState)?;
        let Some(matrix) = matrix else {
            bail!(Error::InvalidValue, "ec: the {} task has no matrix", P::WHAT)
        };
        let Some(src) = src else { bail!(Error::InvalidValue, "ec: the {} task has no source", P::WHAT) };
        let Some(dst) = dst else {
            bail!(Error::InvalidValue, "ec: the {} task has no destination", P::WHAT)
        };
        if !takes(P::TYPE, matrix.role()) {
            bail!(Error::InvalidValue, "ec: a {} task does not take a {:?} matrix", P::WHAT, matrix.role());
        }
        doca_core::require(caps::task_is_supported(self.dev.as_devinfo(), P::TYPE), "doca_ec task")?;
        let mut len = 0usize;
        let mut reads: SmallVec<[_; 8]> = SmallVec::new();
        walk(&src, limits.max_list_len, "source", |b| {
            self.check_map(b, "source")?;
            let s = b.shape()?;
            len = len.saturating_add(s.data_len);
            reads.push((b.map().clone(), s.data, s.data_len));
            Ok(())
        })?;
        let mut room = 0usize;
        let mut overlap = false;
        walk(&dst, limits.max_list_len, "destination", |b| {
            self.check_map(b, "destination")?;
            if !b.map().permissions().contains(AccessFlags::LOCAL_READ_WRITE) {
                bail!(
                    Error::NotPermitted,
                    "ec: the destination's map lacks DOCA_ACCESS_FLAG_LOCAL_READ_WRITE"
                );
            }
            let s = b.shape()?;
            room = room.saturating_add(s.room());
            let (at, n) = (s.data_end(), s.room());
            overlap |= reads.iter().any(|(m, d, l)| *m == *b.map() && *d < at + n && at < *d + *l);
            Ok(())
        })?;
        let (ins, outs) = (matrix.inputs(), matrix.outputs());
        if len == 0 || len % ins != 0 || (len / ins) % caps::BLOCK_ALIGN != 0 {
            bail!(
                Error::InvalidValue,
                "ec: the source's {len} bytes are not {ins} blocks of a multiple of {} bytes",
                caps::BLOCK_ALIGN
            );
        }
        let block = len / ins;
        if block as u64 > limits.max_block {
            bail!(
                Error::InvalidValue,
                "ec: a block of {block} bytes exceeds the maximum {} (cap ec.max_block_size)",
                limits.max_block
            );
        }
        if room < outs * block {
            bail!(
                Error::InvalidValue,
                "ec: the destination has room for {room} bytes, {outs} blocks of {block} need {}",
                outs * block
            );
        }
        if overlap {
            bail!(Error::InUse, "ec: the source's data and the destination's room overlap");
        }
        Ok(block)
    }

    /// Codes stripes of task `id` until `budget` source bytes are used or the task is done.
    fn code_some<P: Kind>(&self, id: TaskId, budget: usize) -> Result<(usize, bool)> {
        let (matrix, src, dst, run) = P::pool(self)
            .with_payload(id, |p| {
                let c = p.common();
                (c.matrix.clone(), c.src.clone(), c.dst.clone(), c.run)
            })
            .ok_or(Error::BadState)?;
        let (Some(matrix), Some(src), Some(dst)) = (matrix, src, dst) else {
            return Err(Error::InvalidValue);
        };
        let (ins, outs, block) = (matrix.inputs(), matrix.outputs(), run.block);
        let mut stripes = self.stripes.borrow_mut();
        let mut done = run.done;
        let mut used = 0usize;
        while done < block && (used == 0 || used < budget) {
            let n = STRIPE.min(block - done);
            let mut outputs: SmallVec<[&mut [u8]; 32]> = stripes.chunks_mut(STRIPE).take(outs).collect();
            if outputs.len() < outs {
                return Err(fail!(
                    Error::InvalidValue,
                    "ec: {outs} output blocks exceed the engine's stripes"
                ));
            }
            for o in outputs.iter_mut() {
                o[..n].fill(0);
            }
            for i in 0..ins {
                let mut at = 0usize;
                pieces(&src, false, i * block + done, n, |(b, off, len)| {
                    let bytes = b.map().bytes(off, len)?;
                    matrix.accumulate(i, &bytes, &mut outputs, at);
                    at += len;
                    Ok(())
                })?;
            }
            for (o, out) in outputs.iter().enumerate() {
                let mut at = 0usize;
                pieces(&dst, true, o * block + done, n, |(b, off, len)| {
                    b.map().bytes_mut(off, len)?.copy_from_slice(&out[at..at + len]);
                    at += len;
                    Ok(())
                })?;
            }
            done += n;
            used += n * ins;
        }
        P::pool(self).with_payload(id, |p| p.common().run.done = done);
        if done == block {
            // Every element's data length grows by what it received.
            let mut left = outs * block;
            let mut cur = Some(dst);
            while let (Some(b), true) = (cur, left > 0) {
                let take = left.min(b.tail_room()?);
                b.increase_data_len(take)?;
                left -= take;
                cur = b.next_in_list()?;
            }
        }
        Ok((used, done == block))
    }

    fn advance<P: Kind>(&self, id: TaskId, budget: usize) -> Step {
        let checked = P::pool(self).with_payload(id, |p| p.common().run.checked).unwrap_or(false);
        if !checked {
            match self.checks::<P>(id) {
                Ok(block) => {
                    P::pool(self)
                        .with_payload(id, |p| p.common().run = Run { checked: true, block, done: 0 });
                }
                Err(e) => return Step::Failed(e),
            }
        }
        match self.code_some::<P>(id, budget) {
            Ok((n, true)) => Step::Done(n),
            Ok((n, false)) => Step::Partial(n),
            Err(e) => Step::Failed(e),
        }
    }
}

/// Front task first, at most [`caps::BYTES_PER_PASS`] source bytes a pass.
impl Engine for EcOps {
    type Job = Job;
    const KIND: &'static str = "ec";
    const FAILED: &'static str = "an erasure coding task failed";

    fn device(&self) -> Option<doca_core::PciAddr> {
        Some(self.dev.as_devinfo().pci_addr())
    }

    fn start(&self) -> Result<Sizes> {
        let info = self.dev.as_devinfo();
        self.limits.set(Limits {
            max_block: caps::max_block_size(info)?,
            max_list_len: caps::max_buf_list_len(info)?,
        });
        self.create.prepare(Create::default);
        self.update.prepare(Update::default);
        self.recover.prepare(Recover::default);
        self.galois_mul.prepare(GaloisMul::default);
        let outs = caps::max_rdnc_blocks(info)?;
        let mut s = self.stripes.borrow_mut();
        if s.len() != outs * STRIPE {
            *s = vec![0u8; outs * STRIPE];
        }
        let tasks = (self.create.capacity()
            + self.update.capacity()
            + self.recover.capacity()
            + self.galois_mul.capacity()) as usize;
        Ok(Sizes { tasks, bytes_per_pass: caps::bytes_per_pass(info)? })
    }

    fn step(&self, job: Job, budget: usize) -> Step {
        match job {
            Job::Create(id) => self.advance::<Create>(id, budget),
            Job::Update(id) => self.advance::<Update>(id, budget),
            Job::Recover(id) => self.advance::<Recover>(id, budget),
            Job::GaloisMul(id) => self.advance::<GaloisMul>(id, budget),
        }
    }

    fn finish(&self, job: Job, status: Result<()>) {
        match job {
            Job::Create(id) => self.create.finish(id, status),
            Job::Update(id) => self.update.finish(id, status),
            Job::Recover(id) => self.recover.finish(id, status),
            Job::GaloisMul(id) => self.galois_mul.finish(id, status),
        };
    }
}

/// Every task type: queued as it is, checked when the engine reaches it.
impl<P: Kind> EngineTask<P> for EcOps {
    fn pool(&self) -> &TaskPool<P> {
        P::pool(self)
    }

    fn job(id: TaskId) -> Job {
        P::job(id)
    }

    fn validate(&self, id: TaskId) -> Result<()> {
        self.checks::<P>(id).map(|_| ())
    }

    /// A new submission starts over.
    fn queued(&self, id: TaskId) {
        P::pool(self).with_payload(id, |p| p.common().run = Run::default());
    }
}
