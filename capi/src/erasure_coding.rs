//! `doca_erasure_coding.h`: erasure coding contexts, their coding matrices and their four
//! task types (the whole header: the 50 functions of DOCA 2.5 to 3.3, the same at every
//! level). The coding is the emulated engine's work inside `doca_pe_progress`; see the
//! `doca_erasure_coding` crate for the matrices, the checks, the statuses and where the
//! output blocks land.

use std::rc::Rc;

use doca_core::Data;
use doca_erasure_coding::{caps, CreateTask, Ec, GaloisMulTask, Matrix, MatrixType, RecoverTask, UpdateTask};

use crate::buf::DocaBuf;
use crate::check::{non_null, out};
use crate::ctx::{DocaCtx, DocaData};
use crate::dev::{DocaDev, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::libctx::{self, opt_buf, LibCtx, Library};
use crate::task::{as_task, complete, task, AnyTask, DocaTask, Of};
use crate::{guarded, invalid, DocaError};

/// `struct doca_ec`: the context, its context handle and its tasks' handles.
pub type DocaEc = LibCtx<Ec>;

impl Library for Ec {
    fn ctx(&self) -> doca_core::Ctx {
        self.as_ctx()
    }
    fn destroy(self) -> doca_core::Result<()> {
        Ec::destroy(self).map_err(|r| r.error)
    }
}

/// `struct doca_ec_matrix`: a coding, update or recover matrix (immutable; a task keeps its
/// own reference, so destroying the handle never pulls it from under a queued task).
pub struct DocaEcMatrix(Matrix);

static ECS: Handles = Handles::new(Kind::Ec);
static MATRICES: Handles = Handles::new(Kind::EcMatrix);

fn ec<'a>(p: *const DocaEc) -> Option<&'a DocaEc> {
    libctx::get(&ECS, p)
}

fn matrix<'a>(p: *const DocaEcMatrix) -> Option<&'a Matrix> {
    // SAFETY: MATRICES only holds DocaEcMatrix handles.
    unsafe { MATRICES.get::<DocaEcMatrix>(p) }.map(|m| &m.0)
}

/// A matrix argument that may be NULL (none yet): `Err` for a non-NULL handle that is not a
/// live matrix.
fn opt_matrix<'a>(p: *const DocaEcMatrix) -> Result<Option<&'a Matrix>, ()> {
    if p.is_null() {
        return Ok(None);
    }
    matrix(p).map(Some).ok_or(())
}

/// `doca_ec_task_*_completion_cb_t`.
pub type EcTaskCb = Option<unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData)>;

/// `doca_ec_create`: an EC context on `dev` (`NOT_SUPPORTED` when the topology gives the
/// device no erasure coding).
///
/// # Safety
/// `ec` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_ec_create(dev: *mut DocaDev, ec: *mut *mut DocaEc) -> DocaError {
    guarded("doca_ec_create", || libctx::create(&ECS, dev, ec, "ec", Ec::create))
}

/// `doca_ec_destroy`: Idle only (`BAD_STATE`, the context stays); its context's and tasks'
/// handles go with it (matrices stay until `doca_ec_matrix_destroy`).
///
/// # Safety
/// `ec` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_ec_destroy(ec: *mut DocaEc) -> DocaError {
    guarded("doca_ec_destroy", || {
        // SAFETY: the caller's contract, as `libctx::destroy` states it.
        unsafe { libctx::destroy(&ECS, ec) }
    })
}

/// `doca_ec_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_ec_as_ctx(ec: *mut DocaEc) -> *mut DocaCtx {
    crate::shielded("doca_ec_as_ctx", std::ptr::null_mut(), || libctx::as_ctx(&ECS, ec))
}

/// `doca_ec_cap_get_max_block_size`.
///
/// # Safety
/// `max_block_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_ec_cap_get_max_block_size(
    devinfo: *const DocaDevinfo,
    max_block_size: *mut u64,
) -> DocaError {
    guarded("doca_ec_cap_get_max_block_size", || match crate::dev::devinfo(devinfo) {
        Some(d) => match caps::max_block_size(d) {
            Ok(n) => out(max_block_size, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// `doca_ec_cap_get_max_buf_list_len`.
///
/// # Safety
/// `max_buf_list_len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_ec_cap_get_max_buf_list_len(
    devinfo: *const DocaDevinfo,
    max_buf_list_len: *mut u32,
) -> DocaError {
    guarded("doca_ec_cap_get_max_buf_list_len", || match crate::dev::devinfo(devinfo) {
        Some(d) => match caps::max_buf_list_len(d) {
            Ok(n) => out(max_buf_list_len, n),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// Hands out a new matrix handle through `out_p`.
fn hand_out(r: doca_core::Result<Matrix>, out_p: *mut *mut DocaEcMatrix) -> DocaError {
    match r {
        Ok(m) => out(out_p, MATRICES.add(DocaEcMatrix(m))),
        Err(e) => e.code(),
    }
}

/// `doca_ec_matrix_create`: `type` is `DOCA_EC_MATRIX_TYPE_CAUCHY` (1) or
/// `DOCA_EC_MATRIX_TYPE_VANDERMONDE` (2); at least one block of each kind, at most
/// `ec.max_data_blocks` and `ec.max_rdnc_blocks`.
///
/// # Safety
/// `matrix` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_ec_matrix_create(
    ec: *mut DocaEc,
    r#type: u32,
    data_block_count: usize,
    rdnc_block_count: usize,
    matrix: *mut *mut DocaEcMatrix,
) -> DocaError {
    guarded("doca_ec_matrix_create", || {
        let Some(e) = self::ec(ec) else { return invalid() };
        let Some(kind) = MatrixType::from_raw(r#type) else {
            return crate::check::refuse(|| {
                format!("{} is not an enum doca_ec_matrix_type value (1 or 2)", r#type)
            });
        };
        if let Err(e) = non_null(matrix, "matrix") {
            return e;
        }
        hand_out(e.obj.matrix_create(kind, data_block_count, rdnc_block_count), matrix)
    })
}

/// `doca_ec_matrix_create_from_raw`: `data_block_count * rdnc_block_count` coefficients,
/// data block major (byte `i * m + j`: data block `i` in redundancy block `j`).
///
/// # Safety
/// `data` points to `data_block_count * rdnc_block_count` readable bytes (checked against
/// the device's limits first); `matrix` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_ec_matrix_create_from_raw(
    ec: *mut DocaEc,
    data: *mut u8,
    data_block_count: usize,
    rdnc_block_count: usize,
    matrix: *mut *mut DocaEcMatrix,
) -> DocaError {
    guarded("doca_ec_matrix_create_from_raw", || {
        let Some(e) = self::ec(ec) else { return invalid() };
        if let Err(e) = non_null(matrix, "matrix") {
            return e;
        }
        // The shape first (0 blocks, above the limits): no byte read for a bad one.
        let len = match data_block_count.checked_mul(rdnc_block_count) {
            Some(n) if n > 0 && data_block_count <= 255 && rdnc_block_count <= 255 => n,
            _ => {
                return crate::check::refuse(|| {
                    format!("a {data_block_count}x{rdnc_block_count} matrix: 1 to 255 blocks of each kind")
                })
            }
        };
        // SAFETY: the caller's contract: `data` holds the matrix's bytes.
        let bytes = match unsafe { crate::check::bytes(data.cast(), len, 255 * 255, "data") } {
            Ok(b) => b,
            Err(e) => return e,
        };
        hand_out(e.obj.matrix_create_from_raw(bytes, data_block_count, rdnc_block_count), matrix)
    })
}

/// The `n` indices at `p` (at most 256: no more blocks exist).
///
/// # Safety
/// `p` points to `n` readable `uint32_t` when `n <= 256`.
unsafe fn indices<'a>(p: *const u32, n: usize, what: &str) -> Result<&'a [u32], DocaError> {
    if n == 0 || n > 256 {
        return Err(crate::check::refuse(|| format!("{n} {what}: 1 to 256")));
    }
    non_null(p, what)?;
    // SAFETY: non-NULL and n elements readable (the caller's contract); n is small.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// `doca_ec_matrix_create_update`: `update_indices` ascending data block indices.
///
/// # Safety
/// `update_indices` points to `n_updates` readable `uint32_t`; `matrix` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_ec_matrix_create_update(
    ec: *mut DocaEc,
    coding_matrix: *const DocaEcMatrix,
    update_indices: *mut u32,
    n_updates: usize,
    matrix: *mut *mut DocaEcMatrix,
) -> DocaError {
    guarded("doca_ec_matrix_create_update", || {
        let (Some(e), Some(c)) = (self::ec(ec), self::matrix(coding_matrix)) else { return invalid() };
        if let Err(e) = non_null(matrix, "matrix") {
            return e;
        }
        // SAFETY: the caller's contract.
        match unsafe { indices(update_indices, n_updates, "update indices") } {
            Ok(idx) => hand_out(e.obj.matrix_create_update(c, idx), matrix),
            Err(e) => e,
        }
    })
}

/// `doca_ec_matrix_create_recover`: `missing_indices` ascending indices into the data then
/// redundancy blocks, at most the redundancy block count.
///
/// # Safety
/// `missing_indices` points to `n_missing` readable `uint32_t`; `matrix` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn doca_ec_matrix_create_recover(
    ec: *mut DocaEc,
    coding_matrix: *const DocaEcMatrix,
    missing_indices: *mut u32,
    n_missing: usize,
    matrix: *mut *mut DocaEcMatrix,
) -> DocaError {
    guarded("doca_ec_matrix_create_recover", || {
        let (Some(e), Some(c)) = (self::ec(ec), self::matrix(coding_matrix)) else { return invalid() };
        if let Err(e) = non_null(matrix, "matrix") {
            return e;
        }
        // SAFETY: the caller's contract.
        match unsafe { indices(missing_indices, n_missing, "missing indices") } {
            Ok(idx) => hand_out(e.obj.matrix_create_recover(c, idx), matrix),
            Err(e) => e,
        }
    })
}

/// `doca_ec_matrix_destroy`: the handle goes; tasks holding the matrix keep it.
///
/// # Safety
/// `matrix` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_ec_matrix_destroy(matrix: *mut DocaEcMatrix) -> DocaError {
    guarded("doca_ec_matrix_destroy", || {
        if self::matrix(matrix).is_none() {
            return invalid();
        }
        // SAFETY: the table only holds DocaEcMatrix handles; freed once, here.
        match unsafe { MATRICES.remove::<DocaEcMatrix>(matrix) } {
            Some(m) => {
                drop(m);
                crate::DOCA_SUCCESS
            }
            None => invalid(),
        }
    })
}

/// One task type's 10 functions.
macro_rules! ec_task {
    (
        $variant:ident, $handle:ty, $of:ident, $tt:expr, $rust_conf:ident, $rust_alloc:ident,
        $cap:ident, $conf:ident, $alloc:ident, $as_task:ident,
        $set_m:ident, $get_m:ident, $set_s:ident, $get_s:ident, $set_d:ident, $get_d:ident
    ) => {
        #[doc = concat!("`", stringify!($cap), "`.")]
        #[no_mangle]
        pub extern "C" fn $cap(devinfo: *const DocaDevinfo) -> DocaError {
            guarded(stringify!($cap), || match crate::dev::devinfo(devinfo) {
                Some(d) => doca_core::Error::code_of(&caps::task_is_supported(d, $tt)),
                None => invalid(),
            })
        }

        #[doc = concat!("`", stringify!($conf), "`: Idle only; 1 to `ec.max_num_tasks` tasks.")]
        #[no_mangle]
        pub extern "C" fn $conf(
            ec: *mut DocaEc,
            successful_task_completion_cb: EcTaskCb,
            error_task_completion_cb: EcTaskCb,
            num_tasks: u32,
        ) -> DocaError {
            guarded(stringify!($conf), || {
                let (Some(d), Some(done), Some(failed)) =
                    (self::ec(ec), successful_task_completion_cb, error_task_completion_cb)
                else {
                    return invalid();
                };
                let (w1, w2) = (Rc::downgrade(&d.tasks), Rc::downgrade(&d.tasks));
                let r = d.obj.$rust_conf(
                    move |t: $handle, td: Data, cd: Data| complete(&w1, done, AnyTask::$variant(t), td, cd),
                    move |t: $handle, td: Data, cd: Data| complete(&w2, failed, AnyTask::$variant(t), td, cd),
                    num_tasks,
                );
                doca_core::Error::code_of(&r)
            })
        }

        #[doc = concat!(
                    "`", stringify!($alloc), "`: matrix and buffers may be NULL (set before submission); ",
                    "nothing else about them is checked before submission. Every task out: `NO_MEMORY`.\n\n",
                    "# Safety\n`task` is NULL or writable."
                )]
        #[no_mangle]
        pub unsafe extern "C" fn $alloc(
            ec: *mut DocaEc,
            matrix: *const DocaEcMatrix,
            src: *const DocaBuf,
            dst: *mut DocaBuf,
            user_data: DocaData,
            task: *mut *mut DocaTask,
        ) -> DocaError {
            guarded(stringify!($alloc), || {
                let Some(d) = self::ec(ec) else { return invalid() };
                let (Ok(m), Ok(s), Ok(t)) = (opt_matrix(matrix), opt_buf(src), opt_buf(dst)) else {
                    return invalid();
                };
                if let Err(e) = non_null(task, "task") {
                    return e;
                }
                match d.obj.$rust_alloc(m, s, t, user_data.to_data()) {
                    Ok(x) => {
                        let h = d.tasks.hand_out(AnyTask::$variant(x), src as *mut DocaBuf);
                        if let Some(handle) = self::task(h) {
                            handle.dst.set(dst);
                            handle.matrix.set(matrix as *mut DocaEcMatrix as *mut core::ffi::c_void);
                        }
                        out(task, h)
                    }
                    Err(e) => e.code(),
                }
            })
        }

        #[doc = concat!("`", stringify!($as_task), "`: the same handle.")]
        #[no_mangle]
        pub extern "C" fn $as_task(task: *mut DocaTask) -> *mut DocaTask {
            as_task(stringify!($as_task), task, Of::$of)
        }

        #[doc = concat!("`", stringify!($set_m), "`: checked when the task is submitted (NULL: none).")]
        #[no_mangle]
        pub extern "C" fn $set_m(task: *mut DocaTask, matrix: *const DocaEcMatrix) {
            crate::shielded(stringify!($set_m), (), || {
                let Ok(m) = opt_matrix(matrix) else {
                    let _ = invalid();
                    return;
                };
                match with(task, |t: &$handle| t.set_matrix(m)) {
                    Some(()) => keep_matrix(task, matrix),
                    None => {
                        let _ = invalid();
                    }
                }
            })
        }

        #[doc = concat!("`", stringify!($get_m), "`: NULL when none is set.")]
        #[no_mangle]
        pub extern "C" fn $get_m(task: *const DocaTask) -> *const DocaEcMatrix {
            crate::shielded(stringify!($get_m), std::ptr::null(), || match with(task, |_: &$handle| ()) {
                Some(()) => kept_matrix(task),
                None => std::ptr::null(),
            })
        }

        #[doc = concat!("`", stringify!($set_s), "`: checked when the task is submitted (NULL: none).")]
        #[no_mangle]
        pub extern "C" fn $set_s(task: *mut DocaTask, buf: *const DocaBuf) {
            crate::shielded(stringify!($set_s), (), || {
                let Ok(b) = opt_buf(buf) else {
                    let _ = invalid();
                    return;
                };
                match with(task, |t: &$handle| t.set_src(b)) {
                    Some(()) => keep(task, buf, true),
                    None => {
                        let _ = invalid();
                    }
                }
            })
        }

        #[doc = concat!("`", stringify!($get_s), "`: NULL when none is set.")]
        #[no_mangle]
        pub extern "C" fn $get_s(task: *const DocaTask) -> *const DocaBuf {
            crate::shielded(stringify!($get_s), std::ptr::null(), || {
                kept(task, with(task, |_: &$handle| ()), true) as *const DocaBuf
            })
        }

        #[doc = concat!("`", stringify!($set_d), "`: checked when the task is submitted (NULL: none).")]
        #[no_mangle]
        pub extern "C" fn $set_d(task: *mut DocaTask, buf: *mut DocaBuf) {
            crate::shielded(stringify!($set_d), (), || {
                let Ok(b) = opt_buf(buf) else {
                    let _ = invalid();
                    return;
                };
                match with(task, |t: &$handle| t.set_dst(b)) {
                    Some(()) => keep(task, buf, false),
                    None => {
                        let _ = invalid();
                    }
                }
            })
        }

        #[doc = concat!("`", stringify!($get_d), "`: NULL when none is set.")]
        #[no_mangle]
        pub extern "C" fn $get_d(task: *const DocaTask) -> *mut DocaBuf {
            crate::shielded(stringify!($get_d), std::ptr::null_mut(), || {
                kept(task, with(task, |_: &$handle| ()), false)
            })
        }
    };
}

/// The EC task of type `T` behind `p`, if it is one the application holds.
fn with<T: EcTask, R>(p: *const DocaTask, f: impl FnOnce(&T) -> R) -> Option<R> {
    task(p)?.with(|t| T::of(t).map(f))?
}

/// The four task types as `AnyTask` holds them.
trait EcTask: Sized {
    fn of(t: &AnyTask) -> Option<&Self>;
}

macro_rules! ec_task_of {
    ($t:ty, $v:ident) => {
        impl EcTask for $t {
            fn of(t: &AnyTask) -> Option<&Self> {
                match t {
                    AnyTask::$v(x) => Some(x),
                    _ => None,
                }
            }
        }
    };
}
ec_task_of!(CreateTask, EcCreate);
ec_task_of!(UpdateTask, EcUpdate);
ec_task_of!(RecoverTask, EcRecover);
ec_task_of!(GaloisMulTask, EcGaloisMul);

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

/// The C handle of a task's source (`src`) or destination when `is_kind` says the task is
/// of the right type.
fn kept(task: *const DocaTask, is_kind: Option<()>, src: bool) -> *mut DocaBuf {
    match (is_kind, self::task(task)) {
        (Some(()), Some(h)) if src => h.buf.get(),
        (Some(()), Some(h)) => h.dst.get(),
        _ => std::ptr::null_mut(),
    }
}

fn keep_matrix(task: *mut DocaTask, m: *const DocaEcMatrix) {
    if let Some(h) = self::task(task) {
        h.matrix.set(m as *mut DocaEcMatrix as *mut core::ffi::c_void);
    }
}

fn kept_matrix(task: *const DocaTask) -> *const DocaEcMatrix {
    self::task(task).map_or(std::ptr::null(), |h| h.matrix.get() as *const DocaEcMatrix)
}

ec_task!(
    EcCreate,
    CreateTask,
    EcCreate,
    caps::TaskType::Create,
    task_create_set_conf,
    task_create_alloc_init,
    doca_ec_cap_task_create_is_supported,
    doca_ec_task_create_set_conf,
    doca_ec_task_create_allocate_init,
    doca_ec_task_create_as_task,
    doca_ec_task_create_set_coding_matrix,
    doca_ec_task_create_get_coding_matrix,
    doca_ec_task_create_set_original_data_blocks,
    doca_ec_task_create_get_original_data_blocks,
    doca_ec_task_create_set_rdnc_blocks,
    doca_ec_task_create_get_rdnc_blocks
);
ec_task!(
    EcUpdate,
    UpdateTask,
    EcUpdate,
    caps::TaskType::Update,
    task_update_set_conf,
    task_update_alloc_init,
    doca_ec_cap_task_update_is_supported,
    doca_ec_task_update_set_conf,
    doca_ec_task_update_allocate_init,
    doca_ec_task_update_as_task,
    doca_ec_task_update_set_update_matrix,
    doca_ec_task_update_get_update_matrix,
    doca_ec_task_update_set_original_updated_and_rdnc_blocks,
    doca_ec_task_update_get_original_updated_and_rdnc_blocks,
    doca_ec_task_update_set_updated_rdnc_blocks,
    doca_ec_task_update_get_updated_rdnc_blocks
);
ec_task!(
    EcRecover,
    RecoverTask,
    EcRecover,
    caps::TaskType::Recover,
    task_recover_set_conf,
    task_recover_alloc_init,
    doca_ec_cap_task_recover_is_supported,
    doca_ec_task_recover_set_conf,
    doca_ec_task_recover_allocate_init,
    doca_ec_task_recover_as_task,
    doca_ec_task_recover_set_recover_matrix,
    doca_ec_task_recover_get_recover_matrix,
    doca_ec_task_recover_set_available_blocks,
    doca_ec_task_recover_get_available_blocks,
    doca_ec_task_recover_set_recovered_data_blocks,
    doca_ec_task_recover_get_recovered_data
);
ec_task!(
    EcGaloisMul,
    GaloisMulTask,
    EcGaloisMul,
    caps::TaskType::GaloisMul,
    task_galois_mul_set_conf,
    task_galois_mul_alloc_init,
    doca_ec_cap_task_galois_mul_is_supported,
    doca_ec_task_galois_mul_set_conf,
    doca_ec_task_galois_mul_allocate_init,
    doca_ec_task_galois_mul_as_task,
    doca_ec_task_galois_mul_set_coding_matrix,
    doca_ec_task_galois_mul_get_coding_matrix,
    doca_ec_task_galois_mul_set_src_buf,
    doca_ec_task_galois_mul_get_src_buf,
    doca_ec_task_galois_mul_set_dst_buf,
    doca_ec_task_galois_mul_get_dst_buf
);
