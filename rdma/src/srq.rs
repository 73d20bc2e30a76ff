//! DOCA RDMA's shared receive queue (`struct doca_rdma_srq`, DOCA 2.6): one receive queue
//! that several RDMA contexts take their receives from, and `doca_rdma_create_with_srq`.
//!
//! In DOCA the shared receive queue serves the DPA data path only: receives are posted to it
//! by DPA code through its DPA handle, and no CPU receive task ever takes its buffers. This
//! emulation has no DPA, so what a CPU program can do with one is what it can do with
//! DOCA's: create it on a device, configure it, start and stop it as a context, create
//! RDMA contexts that name it, and destroy it. What it answers:
//!
//! | call | here |
//! |------|------|
//! | [`Srq::create`] | `NOT_SUPPORTED` on a device the topology gives no RDMA (`cap rdma.supported 0`) |
//! | the setters | Idle only (`BAD_STATE`); a size of 0 or a list length outside 1..=`rdma.srq_max_buf_list_len` `INVALID_VALUE`; a size above `rdma.srq_max_size` `NOT_SUPPORTED` (the header's code for a size not supported); the size is rounded up to a power of 2 (at most the cap), as the header says |
//! | [`Srq::dpa_handle`] | `BAD_STATE`: the header's code for a queue not assigned to the DPA data path, which no queue here can be |
//! | [`Rdma::create_with_srq`] | `BAD_STATE` unless the queue is Running; `INVALID_VALUE` for a queue of another device |
//! | an RDMA context with a queue | sends, reads, writes, atomics as any context; its receive settings (`set_recv_queue_size`, `task_receive_set_dst_buf_list_len`, and their getters in C) `BAD_STATE`, as the header says; `task_receive_set_conf` `INVALID_VALUE` and a receive allocation `NO_MEMORY` (this library's codes: the context has no receive queue of its own, and no CPU receive takes the shared queue's); its start `BAD_STATE` unless its queue is Running; a peer's sends to it find no receive posted and are answered *receiver not ready* |
//!
//! The queue's context has no tasks. Its states:
//!
//! | from | what happens | to |
//! |------|--------------|----|
//! | Idle | `start` | Running (at once) |
//! | Running | `stop`, no RDMA context using the queue runs | Idle (at once) |
//! | Running | `stop` while RDMA contexts using it are not Idle | Stopping (`IN_PROGRESS`) |
//! | Stopping | `progress` once every RDMA context using it is Idle | Idle |
//!
//! So the header's rule — destroy the queue only after stopping the RDMA contexts that use
//! it, and destroy is `BAD_STATE` unless the queue's context is stopped — holds by itself:
//! a queue stopped while its users run stays Stopping until they are stopped.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};

use doca_core::ctx::CtxCell;
use doca_core::{bail, Ctx, CtxCore, CtxOps, CtxState, Dev, Error, Now, Refused, Result, Started};

use crate::{caps, Rdma, RdmaOps};

/// `enum doca_rdma_srq_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SrqType {
    /// `DOCA_RDMA_SRQ_TYPE_LINKED_LIST` (0), the default.
    LinkedList = 0,
    /// `DOCA_RDMA_SRQ_TYPE_CYCLIC` (1).
    Cyclic = 1,
}

impl SrqType {
    /// From the C value (`INVALID_VALUE` otherwise).
    pub fn from_raw(v: u32) -> Result<SrqType> {
        match v {
            0 => Ok(SrqType::LinkedList),
            1 => Ok(SrqType::Cyclic),
            _ => bail!(Error::InvalidValue, "rdma_srq set_type: {v} is not an enum doca_rdma_srq_type value"),
        }
    }
}

/// The settings of a queue, fixed while it runs.
#[derive(Clone, Copy, Debug)]
struct Config {
    size: u32,
    buf_list_len: u32,
    kind: SrqType,
}

/// `struct doca_rdma_srq`'s library part (reached through [`Srq`]).
#[doc(hidden)]
pub struct SrqOps {
    dev: Dev,
    cfg: Cell<Config>,
    /// The RDMA contexts created with this queue.
    users: RefCell<Vec<Weak<CtxCell<RdmaOps>>>>,
    destroyed: Cell<bool>,
}

impl SrqOps {
    /// RDMA contexts using the queue that are not Idle.
    fn running_users(&self) -> usize {
        let mut users = self.users.borrow_mut();
        users.retain(|w| w.strong_count() > 0);
        users.iter().filter_map(Weak::upgrade).filter(|c| c.core().state() != CtxState::Idle).count()
    }
}

impl CtxOps for SrqOps {
    fn kind(&self) -> &'static str {
        "rdma_srq"
    }

    fn start(&self, _core: &CtxCore) -> Result<Started> {
        let c = self.cfg.get();
        tracing::debug!(
            target: "doca_sdk",
            "rdma_srq: started ({} receives, lists of {}, {:?}); its receives are posted from the DPA, which this emulation does not have",
            c.size,
            c.buf_list_len,
            c.kind
        );
        Ok(Started::Running)
    }

    fn stop(&self, _core: &CtxCore) {
        let n = self.running_users();
        if n > 0 {
            tracing::warn!(
                target: "doca_sdk",
                "rdma_srq: stop while {n} RDMA context(s) using the queue are not stopped: stopping until they are (doca_rdma_srq_destroy asks them stopped first)"
            );
        }
    }

    fn progress(&self, _core: &CtxCore, _now: &Now<'_>) -> bool {
        false
    }

    fn needs_poll(&self, _core: &CtxCore) -> bool {
        false
    }

    fn is_busy(&self, _core: &CtxCore) -> bool {
        self.running_users() > 0
    }
}

/// `struct doca_rdma_srq`: a shared receive queue on one device, a context with no tasks.
pub struct Srq {
    cell: Rc<CtxCell<SrqOps>>,
}

/// What an RDMA context created with a queue keeps of it.
pub(crate) struct Attached(Rc<CtxCell<SrqOps>>);

impl Srq {
    /// `doca_rdma_srq_create`: a queue on `dev` (`NOT_SUPPORTED` when the topology gives the
    /// device no RDMA). Defaults: 64 receives (at most the cap), lists of 1, linked list.
    pub fn create(dev: &Dev) -> Result<Srq> {
        doca_core::require(caps::is_supported(dev.as_devinfo()), "doca_rdma_srq_create")?;
        let max = caps::srq_max_size(dev.as_devinfo())?;
        let cfg = Config { size: 64.min(max), buf_list_len: 1, kind: SrqType::LinkedList };
        let cell = CtxCell::new(|_| SrqOps {
            dev: dev.clone(),
            cfg: Cell::new(cfg),
            users: RefCell::default(),
            destroyed: Cell::new(false),
        });
        Ok(Srq { cell })
    }

    /// `doca_rdma_srq_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        Ctx::from(self.cell.clone())
    }

    /// `doca_rdma_srq_destroy`: Idle only (`BAD_STATE`, and the queue back) — a queue whose
    /// users still run cannot be Idle (see the module's table).
    pub fn destroy(self) -> Result<(), Refused<Srq>> {
        match self.cell.core().destroy() {
            Ok(()) => {
                self.cell.ops().destroyed.set(true);
                self.cell.ops().users.borrow_mut().clear();
                Ok(())
            }
            Err(e) => Err(Refused::new(e, self)),
        }
    }

    /// The device.
    pub fn dev(&self) -> &Dev {
        &self.cell.ops().dev
    }

    fn configure(&self, what: &str, f: impl FnOnce(&mut Config)) -> Result<()> {
        self.cell.core().require_idle(what)?;
        let ops = self.cell.ops();
        let mut c = ops.cfg.get();
        f(&mut c);
        ops.cfg.set(c);
        Ok(())
    }

    /// `doca_rdma_srq_set_shared_recv_queue_size`: 0 is `INVALID_VALUE`, above
    /// `rdma.srq_max_size` `NOT_SUPPORTED`; rounded up to a power of 2 (at most the cap).
    /// Idle only.
    pub fn set_shared_recv_queue_size(&self, n: u32) -> Result<()> {
        let max = caps::srq_max_size(self.dev().as_devinfo())?;
        if n == 0 {
            bail!(Error::InvalidValue, "rdma_srq set_shared_recv_queue_size: a queue of 0 receives");
        }
        if n > max {
            bail!(
                Error::NotSupported,
                "rdma_srq set_shared_recv_queue_size: {n} above the device's {max} (cap rdma.srq_max_size)"
            );
        }
        let size = n.checked_next_power_of_two().unwrap_or(max).min(max);
        self.configure("set_shared_recv_queue_size", |c| c.size = size)
    }

    /// `doca_rdma_srq_get_shared_recv_queue_size`: the size in use (rounded).
    pub fn shared_recv_queue_size(&self) -> u32 {
        self.cell.ops().cfg.get().size
    }

    /// `doca_rdma_srq_task_receive_set_dst_buf_list_len`: 1..=`rdma.srq_max_buf_list_len`
    /// (`INVALID_VALUE`). Idle only.
    pub fn set_dst_buf_list_len(&self, n: u32) -> Result<()> {
        let max = caps::srq_max_buf_list_len(self.dev().as_devinfo())?;
        if n == 0 || n > max {
            bail!(
                Error::InvalidValue,
                "rdma_srq task_receive_set_dst_buf_list_len: {n} outside 1..={max} (cap rdma.srq_max_buf_list_len)"
            );
        }
        self.configure("task_receive_set_dst_buf_list_len", |c| c.buf_list_len = n)
    }

    /// `doca_rdma_srq_task_receive_get_dst_buf_list_len`.
    pub fn dst_buf_list_len(&self) -> u32 {
        self.cell.ops().cfg.get().buf_list_len
    }

    /// `doca_rdma_srq_set_type`. Idle only.
    pub fn set_type(&self, t: SrqType) -> Result<()> {
        self.configure("set_type", |c| c.kind = t)
    }

    /// `doca_rdma_srq_get_type`.
    pub fn srq_type(&self) -> SrqType {
        self.cell.ops().cfg.get().kind
    }

    /// `doca_rdma_srq_get_dpa_handle`: `BAD_STATE` before start, and after it too — the
    /// header's code for a queue not assigned to the DPA data path (there is no DPA here, so
    /// the call never succeeds: its `Ok` type has no value).
    pub fn dpa_handle(&self) -> Result<std::convert::Infallible> {
        let state = self.cell.core().state();
        if state != CtxState::Running {
            bail!(Error::BadState, "rdma_srq get_dpa_handle: the queue is not started ({state:?})");
        }
        bail!(
            Error::BadState,
            "rdma_srq get_dpa_handle: the queue is not on the DPA data path (this emulation has no DPA)"
        )
    }

    /// The RDMA contexts created with this queue that are not Idle.
    pub fn num_running_users(&self) -> usize {
        self.cell.ops().running_users()
    }
}

impl Attached {
    /// Whether the queue can serve a starting RDMA context (`BAD_STATE` otherwise).
    fn check_running(&self, what: &str) -> Result<()> {
        let ops = self.0.ops();
        if ops.destroyed.get() {
            bail!(Error::BadState, "rdma {what}: the context's shared receive queue was destroyed");
        }
        let state = self.0.core().state();
        if state != CtxState::Running {
            bail!(
                Error::BadState,
                "rdma {what}: the context's shared receive queue is not running ({state:?})"
            );
        }
        Ok(())
    }
}

impl Rdma {
    /// `doca_rdma_create_with_srq`: a context on `dev` whose receives are `srq`'s
    /// (`BAD_STATE` unless `srq` is Running; `INVALID_VALUE` for a queue of another device;
    /// `NOT_SUPPORTED` on a device without RDMA). See the module's table for what such a
    /// context does.
    pub fn create_with_srq(dev: &Dev, srq: &Srq) -> Result<Rdma> {
        let state = srq.cell.core().state();
        if state != CtxState::Running {
            bail!(
                Error::BadState,
                "doca_rdma_create_with_srq: the shared receive queue is not started ({state:?})"
            );
        }
        if srq.dev().as_devinfo() != dev.as_devinfo() {
            bail!(
                Error::InvalidValue,
                "doca_rdma_create_with_srq: the shared receive queue is of another device"
            );
        }
        let rdma = Rdma::create(dev)?;
        srq.cell.ops().users.borrow_mut().push(Rc::downgrade(&rdma.cell));
        if rdma.ops().srq.set(Attached(srq.cell.clone())).is_err() {
            bail!(Error::Unexpected, "doca_rdma_create_with_srq: a new context already had a queue");
        }
        tracing::debug!(target: "doca_sdk", "rdma: created with a shared receive queue (no CPU receives)");
        Ok(rdma)
    }

    /// Whether this context was created with a shared receive queue
    /// ([`Rdma::create_with_srq`]).
    pub fn has_srq(&self) -> bool {
        self.ops().srq.get().is_some()
    }
}

/// For the receive settings and allocations of an RDMA context: `code` when the context has
/// a shared receive queue (its receives are the queue's, posted from the DPA).
pub(crate) fn refuse_receive(ops: &RdmaOps, what: &str, code: Error) -> Result<()> {
    if ops.srq.get().is_some() {
        bail!(
            code,
            "rdma {what}: the context was created with a shared receive queue, whose receives are posted from the DPA (no CPU receives)"
        );
    }
    Ok(())
}

/// For an RDMA context's start: its queue, if any, must be Running (`BAD_STATE`).
pub(crate) fn check_start(ops: &RdmaOps) -> Result<()> {
    match ops.srq.get() {
        Some(a) => a.check_running("start"),
        None => Ok(()),
    }
}
