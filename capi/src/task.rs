//! `struct doca_task` and the generic task calls of `doca_pe.h` (`doca_task_*`), for every
//! kind of task this library hands out: control-path sends, producer sends, consumer
//! post-receives, DMA memcpy, SHA hash and partial hash, cache invalidation and sync-event
//! waits. Each task has one C handle for its whole life (from its first allocation
//! to `doca_task_free`), whatever kind-specific name C uses for it (`doca_*_as_task` returns
//! the same pointer).

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use doca_cc::{PostRecvTask, ProducerSendTask, SendTask};
use doca_core::{Data, Error, Result, TaskSubmitFlags};

use crate::buf::DocaBuf;
use crate::ctx::DocaData;
use crate::handles::{Handles, Kind, Parked};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// A task of any kind this library hands out.
pub(crate) enum AnyTask {
    Send(SendTask),
    ProducerSend(ProducerSendTask),
    PostRecv(PostRecvTask),
    DmaMemcpy(doca_dma::MemcpyTask),
    // doca_mmap_advise.h
    InvalidateCache(doca_mmap_advise::InvalidateCacheTask),
    // doca_sha
    ShaHash(doca_sha::HashTask),
    ShaPartialHash(doca_sha::PartialHashTask),
    // doca_aes_gcm
    AesGcmEncrypt(doca_aes_gcm::EncryptTask),
    AesGcmDecrypt(doca_aes_gcm::DecryptTask),
    // doca_sync_event
    SeGet(doca_sync_event::GetTask),
    SeNotifySet(doca_sync_event::NotifySetTask),
    SeNotifyAdd(doca_sync_event::NotifyAddTask),
    SeWaitGt(doca_sync_event::WaitGtTask),
    SeWaitEq(doca_sync_event::WaitEqTask),
    SeWaitNeq(doca_sync_event::WaitNeqTask),
    // doca_compress
    CompressDeflate(doca_compress::CompressDeflateTask),
    DecompressDeflate(doca_compress::DecompressDeflateTask),
    DecompressLz4(doca_compress::DecompressLz4Task),
    DecompressLz4Stream(doca_compress::DecompressLz4StreamTask),
    DecompressLz4Block(doca_compress::DecompressLz4BlockTask),
    // doca_erasure_coding
    EcCreate(doca_erasure_coding::CreateTask),
    EcUpdate(doca_erasure_coding::UpdateTask),
    EcRecover(doca_erasure_coding::RecoverTask),
    EcGaloisMul(doca_erasure_coding::GaloisMulTask),
    // doca_rdma
    RdmaSend(doca_rdma::SendTask),
    RdmaSendImm(doca_rdma::SendImmTask),
    RdmaReceive(doca_rdma::ReceiveTask),
    RdmaRead(doca_rdma::ReadTask),
    RdmaWrite(doca_rdma::WriteTask),
    RdmaWriteImm(doca_rdma::WriteImmTask),
    RdmaCmpSwp(doca_rdma::CmpSwpTask),
    RdmaFetchAdd(doca_rdma::FetchAddTask),
    RdmaSeGet(doca_rdma::RemoteNetGetTask),
    RdmaSeNotifySet(doca_rdma::RemoteNetNotifySetTask),
    RdmaSeNotifyAdd(doca_rdma::RemoteNetNotifyAddTask),
}

macro_rules! each {
    ($t:expr, $x:ident => $e:expr) => {
        match $t {
            AnyTask::Send($x) => $e,
            AnyTask::ProducerSend($x) => $e,
            AnyTask::PostRecv($x) => $e,
            AnyTask::DmaMemcpy($x) => $e,
            AnyTask::InvalidateCache($x) => $e,
            // doca_sha
            AnyTask::ShaHash($x) => $e,
            AnyTask::ShaPartialHash($x) => $e,
            // doca_aes_gcm
            AnyTask::AesGcmEncrypt($x) => $e,
            AnyTask::AesGcmDecrypt($x) => $e,
            // doca_sync_event
            AnyTask::SeGet($x) => $e,
            AnyTask::SeNotifySet($x) => $e,
            AnyTask::SeNotifyAdd($x) => $e,
            AnyTask::SeWaitGt($x) => $e,
            AnyTask::SeWaitEq($x) => $e,
            AnyTask::SeWaitNeq($x) => $e,
            AnyTask::CompressDeflate($x) => $e,
            AnyTask::DecompressDeflate($x) => $e,
            AnyTask::DecompressLz4($x) => $e,
            AnyTask::DecompressLz4Stream($x) => $e,
            AnyTask::DecompressLz4Block($x) => $e,
            // doca_erasure_coding
            AnyTask::EcCreate($x) => $e,
            AnyTask::EcUpdate($x) => $e,
            AnyTask::EcRecover($x) => $e,
            AnyTask::EcGaloisMul($x) => $e,
            AnyTask::RdmaSend($x) => $e,
            AnyTask::RdmaSendImm($x) => $e,
            AnyTask::RdmaReceive($x) => $e,
            AnyTask::RdmaRead($x) => $e,
            AnyTask::RdmaWrite($x) => $e,
            AnyTask::RdmaWriteImm($x) => $e,
            AnyTask::RdmaCmpSwp($x) => $e,
            AnyTask::RdmaFetchAdd($x) => $e,
            AnyTask::RdmaSeGet($x) => $e,
            AnyTask::RdmaSeNotifySet($x) => $e,
            AnyTask::RdmaSeNotifyAdd($x) => $e,
        }
    };
}

impl AnyTask {
    /// The task's id in its pool (slot and generation).
    fn id(&self) -> u64 {
        each!(self, t => t.as_task().id().to_bits())
    }

    /// The task's pool slot in its context's table: its kind and the slot, as a context with
    /// several task pools (SHA's two, sync event's six) numbers each pool's slots from 0 —
    /// the same slot of two pools must not share a C handle.
    fn slot_key(&self) -> (usize, usize) {
        (self.of() as usize, each!(self, t => t.as_task().id().slot()))
    }

    fn submit(self, flags: TaskSubmitFlags, validate: bool) -> std::result::Result<(), (Error, AnyTask)> {
        match self {
            AnyTask::DmaMemcpy(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::DmaMemcpy(r.value)))
            }
            AnyTask::DmaMemcpy(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::DmaMemcpy(r.value))),
            // doca_sha
            AnyTask::ShaHash(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::ShaHash(r.value)))
            }
            AnyTask::ShaHash(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::ShaHash(r.value))),
            AnyTask::ShaPartialHash(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::ShaPartialHash(r.value)))
            }
            AnyTask::ShaPartialHash(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::ShaPartialHash(r.value)))
            }
            // doca_aes_gcm
            AnyTask::AesGcmEncrypt(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::AesGcmEncrypt(r.value)))
            }
            AnyTask::AesGcmEncrypt(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::AesGcmEncrypt(r.value)))
            }
            AnyTask::AesGcmDecrypt(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::AesGcmDecrypt(r.value)))
            }
            AnyTask::AesGcmDecrypt(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::AesGcmDecrypt(r.value)))
            }
            AnyTask::Send(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::Send(r.value))),
            AnyTask::ProducerSend(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::ProducerSend(r.value)))
            }
            AnyTask::PostRecv(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::PostRecv(r.value))),
            AnyTask::InvalidateCache(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::InvalidateCache(r.value)))
            }
            AnyTask::InvalidateCache(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::InvalidateCache(r.value)))
            }
            // doca_sync_event (checked at submission: try_submit adds nothing)
            AnyTask::SeGet(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::SeGet(r.value))),
            AnyTask::SeNotifySet(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::SeNotifySet(r.value)))
            }
            AnyTask::SeNotifyAdd(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::SeNotifyAdd(r.value)))
            }
            AnyTask::SeWaitGt(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::SeWaitGt(r.value))),
            AnyTask::SeWaitEq(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::SeWaitEq(r.value))),
            AnyTask::SeWaitNeq(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::SeWaitNeq(r.value))),
            // doca_compress
            AnyTask::CompressDeflate(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::CompressDeflate(r.value)))
            }
            AnyTask::CompressDeflate(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::CompressDeflate(r.value)))
            }
            AnyTask::DecompressDeflate(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::DecompressDeflate(r.value)))
            }
            AnyTask::DecompressDeflate(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::DecompressDeflate(r.value)))
            }
            AnyTask::DecompressLz4(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::DecompressLz4(r.value)))
            }
            AnyTask::DecompressLz4(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::DecompressLz4(r.value)))
            }
            AnyTask::DecompressLz4Stream(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::DecompressLz4Stream(r.value)))
            }
            AnyTask::DecompressLz4Stream(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::DecompressLz4Stream(r.value)))
            }
            AnyTask::DecompressLz4Block(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::DecompressLz4Block(r.value)))
            }
            AnyTask::DecompressLz4Block(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::DecompressLz4Block(r.value)))
            }
            // doca_erasure_coding
            AnyTask::EcCreate(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::EcCreate(r.value)))
            }
            AnyTask::EcCreate(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::EcCreate(r.value))),
            AnyTask::EcUpdate(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::EcUpdate(r.value)))
            }
            AnyTask::EcUpdate(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::EcUpdate(r.value))),
            AnyTask::EcRecover(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::EcRecover(r.value)))
            }
            AnyTask::EcRecover(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::EcRecover(r.value))),
            AnyTask::EcGaloisMul(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::EcGaloisMul(r.value)))
            }
            AnyTask::EcGaloisMul(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::EcGaloisMul(r.value)))
            }
            AnyTask::RdmaSend(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaSend(r.value)))
            }
            AnyTask::RdmaSend(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaSend(r.value))),
            AnyTask::RdmaSendImm(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaSendImm(r.value)))
            }
            AnyTask::RdmaSendImm(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaSendImm(r.value)))
            }
            AnyTask::RdmaReceive(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaReceive(r.value)))
            }
            AnyTask::RdmaReceive(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaReceive(r.value)))
            }
            AnyTask::RdmaRead(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaRead(r.value)))
            }
            AnyTask::RdmaRead(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaRead(r.value))),
            AnyTask::RdmaWrite(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaWrite(r.value)))
            }
            AnyTask::RdmaWrite(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaWrite(r.value))),
            AnyTask::RdmaWriteImm(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaWriteImm(r.value)))
            }
            AnyTask::RdmaWriteImm(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaWriteImm(r.value)))
            }
            AnyTask::RdmaCmpSwp(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaCmpSwp(r.value)))
            }
            AnyTask::RdmaCmpSwp(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaCmpSwp(r.value))),
            AnyTask::RdmaFetchAdd(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaFetchAdd(r.value)))
            }
            AnyTask::RdmaFetchAdd(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaFetchAdd(r.value)))
            }
            AnyTask::RdmaSeGet(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaSeGet(r.value)))
            }
            AnyTask::RdmaSeGet(t) => t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaSeGet(r.value))),
            AnyTask::RdmaSeNotifySet(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaSeNotifySet(r.value)))
            }
            AnyTask::RdmaSeNotifySet(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaSeNotifySet(r.value)))
            }
            AnyTask::RdmaSeNotifyAdd(t) if validate => {
                t.try_submit().map_err(|r| (r.error, AnyTask::RdmaSeNotifyAdd(r.value)))
            }
            AnyTask::RdmaSeNotifyAdd(t) => {
                t.submit_ex(flags).map_err(|r| (r.error, AnyTask::RdmaSeNotifyAdd(r.value)))
            }
        }
    }

    fn status(&self) -> Result<()> {
        each!(self, t => t.status())
    }

    fn set_user_data(&self, data: Data) {
        each!(self, t => t.set_user_data(data))
    }

    fn user_data(&self) -> Data {
        each!(self, t => t.user_data())
    }
}

/// `struct doca_task` (and `doca_cc_task_send`, `doca_cc_producer_task_send`,
/// `doca_cc_consumer_task_post_recv`): the task while the application holds it (`None` while
/// it is submitted), and the C buffer handle it carries (producer and consumer tasks).
pub struct DocaTask {
    task: RefCell<Option<AnyTask>>,
    /// The task's id in its pool (slot and generation) while this handle is live.
    id: Cell<u64>,
    table: Weak<TaskTable>,
    pub(crate) buf: Cell<*mut DocaBuf>,
    /// A DMA memcpy task's destination handle (its source is `buf`).
    pub(crate) dst: Cell<*mut DocaBuf>,
    /// A post-receive task's immediate data, copied where C can point at it.
    pub(crate) imm: Cell<[u8; doca_cc::proto::records::IMM_MAX]>,
    /// A sync event get task's `ret_val_ptr`, a notify-add task's `fetched_val_ptr`.
    pub(crate) out: Cell<*mut u64>,
    /// An AES-GCM task's key handle (`struct doca_aes_gcm_key *`), as C last set it.
    pub(crate) key: Cell<*mut core::ffi::c_void>,
    /// An erasure coding task's matrix handle (`struct doca_ec_matrix *`).
    pub(crate) matrix: Cell<*mut core::ffi::c_void>,
    /// An RDMA remote sync event task's event handle (`struct doca_sync_event_remote_net *`).
    pub(crate) event: Cell<*mut core::ffi::c_void>,
    /// The task's user data as C last saw or set it: `doca_task_get_user_data` answers from
    /// here in any state, a submitted task's included (its library holds the task itself).
    user_data: Cell<Data>,
    /// Set while submitted: the task takes `user_data` back when it returns, before its
    /// callback, which is given it.
    user_data_set: Cell<bool>,
    /// Freed by the application, its memory parked for its pool slot's next task
    /// ([`freed_bufs`] reads its buffers until then).
    freed: Cell<bool>,
    /// The task's kind (set at each hand-out: a `*_as_task` cast checks it without borrowing
    /// the task, which its library holds while submitted).
    of: Cell<Of>,
}

static TASKS: Handles = Handles::new(Kind::Task);

/// The task behind a handle C gave (refusals noted for the log).
pub(crate) fn task<'a>(p: *const DocaTask) -> Option<&'a DocaTask> {
    // SAFETY: TASKS only holds DocaTask handles.
    unsafe { TASKS.get(p) }
}

/// The task behind a handle the library holds.
fn own_task<'a>(p: *const DocaTask) -> Option<&'a DocaTask> {
    // SAFETY: TASKS only holds DocaTask handles.
    unsafe { TASKS.peek(p) }
}

/// The kinds of task, for the `*_as_task` casts.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Of {
    Send,
    ProducerSend,
    PostRecv,
    DmaMemcpy,
    InvalidateCache,
    // doca_sha
    ShaHash,
    ShaPartialHash,
    // doca_aes_gcm
    AesGcmEncrypt,
    AesGcmDecrypt,
    // doca_sync_event
    SeGet,
    SeNotifySet,
    SeNotifyAdd,
    SeWaitGt,
    SeWaitEq,
    SeWaitNeq,
    // doca_compress
    CompressDeflate,
    DecompressDeflate,
    DecompressLz4,
    DecompressLz4Stream,
    DecompressLz4Block,
    // doca_erasure_coding
    EcCreate,
    EcUpdate,
    EcRecover,
    EcGaloisMul,
    // doca_rdma
    RdmaSend,
    RdmaSendImm,
    RdmaReceive,
    RdmaRead,
    RdmaWrite,
    RdmaWriteImm,
    RdmaCmpSwp,
    RdmaFetchAdd,
    RdmaSeGet,
    RdmaSeNotifySet,
    RdmaSeNotifyAdd,
}

impl AnyTask {
    fn of(&self) -> Of {
        match self {
            AnyTask::DmaMemcpy(_) => Of::DmaMemcpy,
            AnyTask::Send(_) => Of::Send,
            AnyTask::ProducerSend(_) => Of::ProducerSend,
            AnyTask::PostRecv(_) => Of::PostRecv,
            AnyTask::InvalidateCache(_) => Of::InvalidateCache,
            // doca_sha
            AnyTask::ShaHash(_) => Of::ShaHash,
            AnyTask::ShaPartialHash(_) => Of::ShaPartialHash,
            // doca_aes_gcm
            AnyTask::AesGcmEncrypt(_) => Of::AesGcmEncrypt,
            AnyTask::AesGcmDecrypt(_) => Of::AesGcmDecrypt,
            // doca_sync_event
            AnyTask::SeGet(_) => Of::SeGet,
            AnyTask::SeNotifySet(_) => Of::SeNotifySet,
            AnyTask::SeNotifyAdd(_) => Of::SeNotifyAdd,
            AnyTask::SeWaitGt(_) => Of::SeWaitGt,
            AnyTask::SeWaitEq(_) => Of::SeWaitEq,
            AnyTask::SeWaitNeq(_) => Of::SeWaitNeq,
            AnyTask::CompressDeflate(_) => Of::CompressDeflate,
            AnyTask::DecompressDeflate(_) => Of::DecompressDeflate,
            AnyTask::DecompressLz4(_) => Of::DecompressLz4,
            AnyTask::DecompressLz4Stream(_) => Of::DecompressLz4Stream,
            AnyTask::DecompressLz4Block(_) => Of::DecompressLz4Block,
            // doca_erasure_coding
            AnyTask::EcCreate(_) => Of::EcCreate,
            AnyTask::EcUpdate(_) => Of::EcUpdate,
            AnyTask::EcRecover(_) => Of::EcRecover,
            AnyTask::EcGaloisMul(_) => Of::EcGaloisMul,
            AnyTask::RdmaSend(_) => Of::RdmaSend,
            AnyTask::RdmaSendImm(_) => Of::RdmaSendImm,
            AnyTask::RdmaReceive(_) => Of::RdmaReceive,
            AnyTask::RdmaRead(_) => Of::RdmaRead,
            AnyTask::RdmaWrite(_) => Of::RdmaWrite,
            AnyTask::RdmaWriteImm(_) => Of::RdmaWriteImm,
            AnyTask::RdmaCmpSwp(_) => Of::RdmaCmpSwp,
            AnyTask::RdmaFetchAdd(_) => Of::RdmaFetchAdd,
            AnyTask::RdmaSeGet(_) => Of::RdmaSeGet,
            AnyTask::RdmaSeNotifySet(_) => Of::RdmaSeNotifySet,
            AnyTask::RdmaSeNotifyAdd(_) => Of::RdmaSeNotifyAdd,
        }
    }
}

/// The task behind `p`, named for a graph node (`doca_graph_instance_set_ctx_node_data`):
/// `INVALID_VALUE` for a bad handle, `BAD_STATE` while the task is submitted.
pub(crate) fn task_ref(p: *const DocaTask) -> std::result::Result<doca_core::TaskRef, DocaError> {
    let Some(h) = task(p) else { return Err(invalid()) };
    h.with(|t| each!(t, x => doca_core::TaskRef::from(x.as_task()))).ok_or(Error::BadState.code())
}

/// A `doca_*_as_task` cast: the same handle when it is a live task of kind `of`, submitted
/// or not (NULL, logged, otherwise: a freed or forged handle, or a task of another kind).
pub(crate) fn as_task(name: &'static str, p: *mut DocaTask, of: Of) -> *mut DocaTask {
    // A live handle of the right kind (submitted or not) is the answer: one look-up, no
    // borrow, nothing that can panic or refuse (every C task cycle makes two such casts).
    // SAFETY: TASKS only holds DocaTask handles.
    if unsafe { TASKS.peek(p) }.is_some_and(|h| h.of.get() == of) {
        return p;
    }
    refused_cast(name, p, of)
}

/// [`as_task`] for a handle that is not a live task of kind `of`: NULL, and the reason logged
/// as the call's.
#[cold]
fn refused_cast(name: &'static str, p: *mut DocaTask, of: Of) -> *mut DocaTask {
    crate::shielded(name, std::ptr::null_mut(), || {
        let Some(h) = task(p) else { return std::ptr::null_mut() };
        let k = h.of.get();
        if k == of {
            return p;
        }
        crate::check::note(|| format!("a {k:?} task where a {of:?} task is expected"));
        std::ptr::null_mut()
    })
}

impl DocaTask {
    /// Runs `f` on the task while the application holds it (`BAD_STATE` while submitted).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&AnyTask) -> R) -> Option<R> {
        self.task.borrow().as_ref().map(f)
    }
}

/// The C handles of one context's tasks, by pool slot (freed with the context), and the
/// context's own handle.
#[derive(Default)]
pub(crate) struct TaskTable(RefCell<SlotMap>, pub(crate) Cell<*mut crate::ctx::DocaCtx>);

/// A task table's slots, by [`AnyTask::slot_key`]: per kind, per pool slot (a pool's slots
/// are numbered from 0 to its size: the vectors grow to the slots used, once).
type SlotMap = Vec<Vec<SlotHandle>>;

/// One pool slot's C handle: the live one while the application's task of that slot has a
/// handle, and the last one freed, parked ([`Handles::park`]): the slot's next task takes it
/// under a new token (the same memory: a task cycle allocates nothing and takes no lock).
#[derive(Default)]
struct SlotHandle {
    live: Option<Live>,
    spare: Option<Parked>,
}

/// A live handle of a task table: its token and its object (which stays allocated while
/// the token is live: only the table removes or parks it).
struct Live {
    token: *mut DocaTask,
    obj: std::ptr::NonNull<DocaTask>,
}

impl Live {
    fn obj(&self) -> &DocaTask {
        // the object stays allocated while its token is live in the table (see the type).
        // SAFETY: see above.
        unsafe { self.obj.as_ref() }
    }
}

impl TaskTable {
    /// The handle of a task just allocated: a new token each time (a freed handle stays
    /// dead), in the memory the slot's last handle used when there was one.
    pub(crate) fn hand_out(self: &Rc<Self>, t: AnyTask, buf: *mut DocaBuf) -> *mut DocaTask {
        let mut map = self.0.borrow_mut();
        let (kind, i) = t.slot_key();
        if map.len() <= kind {
            map.resize_with(kind + 1, Vec::new);
        }
        let slots = &mut map[kind];
        if slots.len() <= i {
            slots.resize_with(i + 1, SlotHandle::default);
        }
        let slot = &mut slots[i];
        if let Some(stale) = slot.live.take() {
            // A handle whose task went back to its pool without `doca_task_free` (its
            // library dropped it): that handle dies now, its memory serves the new one.
            // SAFETY: TASKS only holds DocaTask handles; `stale` is not used again.
            slot.spare = unsafe { TASKS.park(stale.token) };
        }
        let (token, obj) = match slot.spare.take() {
            Some(parked) => {
                let obj = parked.obj();
                (TASKS.unpark(parked), obj)
            }
            None => TASKS.add_at(DocaTask {
                task: RefCell::new(None),
                id: Cell::new(0),
                table: Rc::downgrade(self),
                buf: Cell::new(std::ptr::null_mut()),
                dst: Cell::new(std::ptr::null_mut()),
                imm: Cell::new([0; doca_cc::proto::records::IMM_MAX]),
                out: Cell::new(std::ptr::null_mut()),
                key: Cell::new(std::ptr::null_mut()),
                matrix: Cell::new(std::ptr::null_mut()),
                event: Cell::new(std::ptr::null_mut()),
                user_data: Cell::new(Data::NONE),
                user_data_set: Cell::new(false),
                freed: Cell::new(false),
                of: Cell::new(t.of()),
            }),
        };
        let live = Live { token, obj };
        let handle = live.obj();
        handle.reset(t.id(), buf);
        handle.of.set(t.of());
        handle.user_data.set(t.user_data());
        *handle.task.borrow_mut() = Some(t);
        slot.live = Some(live);
        token
    }

    /// A task came back from its library (completed or failed): its handle holds it again.
    /// `None` when the application freed the handle while the task was submitted (see
    /// [`doca_task_free`]): the task is dropped here, back to its pool, and no callback runs.
    /// With the handle comes the user data C set while the task was submitted, if it did
    /// (the task has taken it; its callback is to be given it).
    pub(crate) fn returned(&self, t: AnyTask) -> Option<(*mut DocaTask, Option<Data>)> {
        let (kind, i) = t.slot_key();
        let map = self.0.borrow();
        let live = map.get(kind)?.get(i)?.live.as_ref()?;
        let (h, handle) = (live.token, live.obj());
        if handle.id.get() != t.id() {
            return None;
        }
        let set = handle.user_data_set.take().then(|| handle.user_data.get());
        if let Some(data) = set {
            t.set_user_data(data);
        }
        *handle.task.borrow_mut() = Some(t);
        Some((h, set))
    }

    /// The application freed handle `h`, whose task is in pool slot `key` (`None` while
    /// submitted): the handle dies, and its memory waits for the slot's next task.
    fn free(&self, h: *mut DocaTask, key: Option<(usize, usize)>) {
        let mut map = self.0.borrow_mut();
        let is_h = |s: &&mut SlotHandle| s.live.as_ref().is_some_and(|live| live.token == h);
        // The slot: by the task's key while the application holds it, else (submitted) by
        // the handle itself.
        let slot = match key {
            Some((kind, i)) => map.get_mut(kind).and_then(|slots| slots.get_mut(i)).filter(is_h),
            None => map.iter_mut().flatten().find(is_h),
        };
        match slot {
            Some(slot) => {
                let live = slot.live.take();
                // The token dies first; then the parked memory says it was freed (a getter
                // called on the freed handle reads it, see `freed_bufs`).
                // SAFETY: TASKS only holds DocaTask handles; `h` is not used again.
                slot.spare = unsafe { TASKS.park(h) };
                if let Some(live) = live {
                    let handle = live.obj();
                    handle.freed.set(true);
                    // The application's task goes back to its pool now, not when the slot
                    // is next used.
                    let task = handle.task.borrow_mut().take();
                    drop(task);
                }
            }
            // SAFETY: as above (a handle of no slot: dropped).
            None => drop(unsafe { TASKS.remove(h) }),
        }
    }
}

impl DocaTask {
    /// Makes a freed handle's memory the handle of task `id` (nothing of the last task's stays).
    fn reset(&self, id: u64, buf: *mut DocaBuf) {
        drop(self.task.borrow_mut().take());
        self.freed.set(false);
        self.id.set(id);
        self.buf.set(buf);
        self.dst.set(std::ptr::null_mut());
        self.imm.set([0; doca_cc::proto::records::IMM_MAX]);
        self.out.set(std::ptr::null_mut());
        self.key.set(std::ptr::null_mut());
        self.matrix.set(std::ptr::null_mut());
        self.event.set(std::ptr::null_mut());
        self.user_data_set.set(false);
    }
}

impl Drop for TaskTable {
    fn drop(&mut self) {
        for slot in self.0.borrow_mut().drain(..).flatten() {
            if let Some(live) = slot.live {
                // SAFETY: TASKS only holds DocaTask handles; each is freed once, here.
                drop(unsafe { TASKS.remove(live.token) });
            }
            if let Some(parked) = slot.spare {
                // SAFETY: as above.
                unsafe { TASKS.discard::<DocaTask>(parked) };
            }
        }
    }
}

/// Calls the C completion callback `cb` with the handle of the task `t` and the user data.
pub(crate) fn complete(
    table: &Weak<TaskTable>,
    cb: unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData),
    t: AnyTask,
    task_data: Data,
    ctx_data: Data,
) {
    let Some(table) = table.upgrade() else { return };
    if let Some((h, set)) = table.returned(t) {
        let task_data = set.unwrap_or(task_data);
        // the application's completion callback, given the task's own handle (valid until
        // doca_task_free) and the user data.
        // SAFETY: see above.
        unsafe { cb(h, DocaData::from_data(task_data), DocaData::from_data(ctx_data)) };
    }
}

/// [`complete`] for a task that hands a value back through a pointer C gave (a sync event
/// get task's `ret_val_ptr`, a notify-add task's `fetched_val_ptr`): `value` is written
/// there (when not NULL) before the callback runs.
pub(crate) fn complete_out(
    table: &Weak<TaskTable>,
    cb: unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData),
    t: AnyTask,
    task_data: Data,
    ctx_data: Data,
    value: Option<u64>,
) {
    let Some(table) = table.upgrade() else { return };
    if let Some((h, set)) = table.returned(t) {
        let task_data = set.unwrap_or(task_data);
        if let (Some(v), Some(handle)) = (value, own_task(h)) {
            let p = handle.out.get();
            if !p.is_null() {
                // the pointer C gave at alloc_init (or its setter): writable for a u64
                // until the task completes (DOCA's contract for these pointers).
                // SAFETY: see above.
                unsafe { p.write_unaligned(v) };
            }
        }
        // the application's completion callback, given the task's own handle (valid until
        // doca_task_free) and the user data.
        // SAFETY: see above.
        unsafe { cb(h, DocaData::from_data(task_data), DocaData::from_data(ctx_data)) };
    }
}

/// `doca_task_submit`: on success the library owns the task until its callback.
#[no_mangle]
pub extern "C" fn doca_task_submit(task: *mut DocaTask) -> DocaError {
    guarded("doca_task_submit", || submit(task, TaskSubmitFlags::FLUSH.bits(), false))
}

/// `doca_task_submit_ex`: with `doca_task_submit_flag` bits (unknown ones:
/// `INVALID_VALUE`); without `DOCA_TASK_SUBMIT_FLAG_FLUSH` the library may keep the task back
/// until a flushing submit, `doca_ctx_flush_tasks` or its next progress.
#[no_mangle]
pub extern "C" fn doca_task_submit_ex(task: *mut DocaTask, flags: u32) -> DocaError {
    guarded("doca_task_submit_ex", || submit(task, flags, false))
}

fn submit(task: *mut DocaTask, flags: u32, validate: bool) -> DocaError {
    let Some(h) = self::task(task) else { return invalid() };
    let Some(flags) = TaskSubmitFlags::from_bits(flags) else {
        let e = doca_core::fail!(Error::InvalidValue, "doca_task_submit_ex: unknown submit flags {flags:#x}");
        return e.code();
    };
    if validate && h.out.get().is_null() && matches!(*h.task.borrow(), Some(AnyTask::SeGet(_))) {
        // Where the value goes is the get task's one field: DOCA's validation refuses none.
        let e = doca_core::fail!(
            Error::InvalidValue,
            "doca_task_try_submit: the sync event get task has no ret_val_ptr"
        );
        return e.code();
    }
    let Some(t) = h.task.borrow_mut().take() else { return Error::BadState.code() };
    match t.submit(flags, validate) {
        Ok(()) => DOCA_SUCCESS,
        Err((error, t)) => {
            *h.task.borrow_mut() = Some(t);
            error.code()
        }
    }
}

/// `doca_task_try_submit`: validates the task first (`INVALID_VALUE` when it is bad: a DMA
/// memcpy task or a SHA task is checked as its engine would, a sync event get task needs its
/// `ret_val_ptr`; the other kinds are checked at submission anyway), then submits.
#[no_mangle]
pub extern "C" fn doca_task_try_submit(task: *mut DocaTask) -> DocaError {
    guarded("doca_task_try_submit", || submit(task, TaskSubmitFlags::FLUSH.bits(), true))
}

/// `doca_task_free`: back to its pool; the handle is invalid afterwards.
///
/// A task still submitted is given up, as DOCA's library does although its header asks for
/// a task that is not submitted: NVIDIA's 2.9+ `secure_channel` frees its consumer's
/// re-posted receive tasks before it stops the consumer. The library finishes the task as
/// it would have (a posted receive when the consumer stops, with `SHUTDOWN`; a send when it
/// completes) and then puts it back in its pool, without a callback: the application's
/// handle is gone. Until then it holds its context's stop in Stopping, as any task would.
///
/// # Safety
/// `task` is NULL or a task handle of this library, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn doca_task_free(task: *mut DocaTask) {
    guarded("doca_task_free", || {
        let Some(h) = self::task(task) else { return invalid() };
        if h.task.borrow().is_none() {
            // Submitted: the library holds the task; once it returns it, finding no handle
            // for it, the task goes back to its pool (TaskTable::returned drops it).
            tracing::debug!(
                target: "doca_sdk",
                "doca_task_free: a submitted task is given up (freed once the library is done with it, no callback)"
            );
        }
        let key = h.task.borrow().as_ref().map(AnyTask::slot_key);
        match h.table.upgrade() {
            Some(table) => table.free(task, key),
            // SAFETY: TASKS only holds DocaTask handles; freed once, here.
            None => drop(unsafe { TASKS.remove(task) }),
        }
        DOCA_SUCCESS
    });
}

/// The context handle of the task behind `p` (NULL when it is not a live task).
pub(crate) fn ctx_of(p: *const DocaTask) -> *mut crate::ctx::DocaCtx {
    task(p).and_then(|h| h.table.upgrade()).map_or(std::ptr::null_mut(), |t| t.1.get())
}

/// The buffer handles (`buf`, `dst`) a task held when it was freed, for a getter called on
/// the freed handle: in DOCA a freed task's memory stays in its pool, and NVIDIA's RDMA
/// samples read a send task's source and a receive task's destination right after
/// `doca_task_free` (`rdma_common.c`'s send and receive callbacks). So here: the handle's
/// memory is parked for its pool slot's next task, and keeps them until that task is
/// allocated (`None` after that, or for anything else).
pub(crate) fn freed_bufs(p: *const DocaTask) -> Option<(*mut DocaBuf, *mut DocaBuf)> {
    // SAFETY: TASKS only holds DocaTask handles.
    let h = unsafe { TASKS.peek_parked(p) }?;
    h.freed.get().then(|| (h.buf.get(), h.dst.get()))
}

/// `doca_task_get_status`.
#[no_mangle]
pub extern "C" fn doca_task_get_status(task: *const DocaTask) -> DocaError {
    guarded("doca_task_get_status", || match self::task(task).map(|h| h.with(AnyTask::status)) {
        Some(Some(status)) => doca_core::Error::code_of(&status),
        // Submitted: not completed yet, so not failed. DOCA's library returns the task's status
        // field, success until a completion sets it (an error here would read as a failure).
        Some(None) => {
            tracing::debug!(target: "doca_sdk", "doca_task_get_status: the task is submitted: no status yet");
            DOCA_SUCCESS
        }
        None => invalid(),
    })
}

/// `doca_task_set_user_data`.
#[no_mangle]
pub extern "C" fn doca_task_set_user_data(task: *mut DocaTask, user_data: DocaData) {
    guarded("doca_task_set_user_data", || {
        let Some(h) = self::task(task) else { return invalid() };
        let data = user_data.to_data();
        h.user_data.set(data);
        if h.with(|t| t.set_user_data(data)).is_none() {
            // Submitted: the task takes it when it comes back, before its callback.
            h.user_data_set.set(true);
        }
        DOCA_SUCCESS
    });
}

/// `doca_task_get_user_data`.
#[no_mangle]
pub extern "C" fn doca_task_get_user_data(task: *const DocaTask) -> DocaData {
    let mut data = DocaData { u64: 0 };
    guarded("doca_task_get_user_data", || {
        let Some(h) = self::task(task) else { return invalid() };
        data = DocaData::from_data(h.user_data.get());
        DOCA_SUCCESS
    });
    data
}

/// `doca_task_get_ctx`: the context the task belongs to (NULL for an invalid task).
#[no_mangle]
pub extern "C" fn doca_task_get_ctx(task: *const DocaTask) -> *mut crate::ctx::DocaCtx {
    crate::shielded("doca_task_get_ctx", std::ptr::null_mut(), || {
        match self::task(task).and_then(|h| h.table.upgrade()) {
            Some(table) => table.1.get(),
            None => std::ptr::null_mut(),
        }
    })
}
