//! `doca_cc_producer`: the sending end of the fast path. A send copies a buffer's data into
//! the next buffer the chosen remote consumer posted.
//!
//! Start is synchronous. A send waits (in flight) until the consumer has posted a buffer;
//! sends of one producer reach one consumer in order, and a consumer that has not posted
//! does not hold up sends to another. A completed task can be submitted again, from its
//! completion callback too, as it is or after `set_buf` / `set_consumer_id`. A buffer longer than the posted
//! buffer's free room completes with `DOCA_ERROR_INVALID_VALUE` and nothing is written; a
//! consumer that goes away fails the sends still waiting for it with
//! `DOCA_ERROR_CONNECTION_ABORTED`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::os::fd::AsFd;
use std::rc::{Rc, Weak};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use doca_buf::Buf;
use doca_core::{
    bail, fail, fault, Ctx, CtxCell, CtxCore, CtxOps, Data, Error, Now, Refused, Result, Started, TaskId,
    TaskLib, TaskPayload, TaskPool,
};
use doca_link::discard::PeerFd;
use doca_link::notify::Watched;

use crate::caps;
use crate::conn::registry::{Lanes, RemoteConsumer};
use crate::conn::{Connection, Registry};
use crate::proto::layout::KIND_DONE;
use crate::proto::records::{Done, Post, DONE_LEN, IMM_MAX};

/// The library part of a producer send task.
#[derive(Default)]
pub struct ProducerSendPayload {
    buf: Option<Buf>,
    consumer_id: u32,
    target: Option<Arc<RemoteConsumer>>,
    imm_len: usize,
    imm: [u8; IMM_MAX],
}

doca_core::task_handle! {
/// `struct doca_cc_producer_task_send`: a buffer to copy into a remote consumer's buffer.
    pub struct ProducerSendTask(ProducerSendPayload);
}

impl ProducerSendTask {
    /// `doca_cc_producer_task_send_get_buf`.
    pub fn buf(&self) -> Buf {
        self.0.with_payload(|p| p.buf.clone()).expect("a producer send task always has its buffer")
    }

    /// `doca_cc_producer_task_send_get_consumer_id`.
    pub fn consumer_id(&self) -> u32 {
        self.0.with_payload(|p| p.consumer_id)
    }
}

#[doc(hidden)] // named by the task payload (`TaskPayload::Lib`); reached through the handle types
pub struct ProducerOps {
    /// The connection's fast-path doorbell (a duplicate), in the engine's notification set:
    /// closed on a closing thread (`doca_link::discard::PeerFd`), so that whichever copy
    /// closes last, a peer's files queued on it are never released in this thread.
    bell: RefCell<Option<Watched<PeerFd>>>,
    conn: Connection,
    id: u32,
    /// (max buffer size, max immediate data), read from the capabilities at creation.
    limits: (usize, usize),
    pool: TaskPool<ProducerSendPayload>,
    /// Sends waiting for a posted buffer, one queue per consumer (order is per consumer).
    queues: RefCell<Vec<Queue>>,
    /// How many sends wait in `queues` in all: an idle producer's pass, and a submit when
    /// nothing waits, look at this count instead of walking the queues.
    waiting: Cell<usize>,
    /// The consumer found last (a send usually goes where the previous one went): found
    /// again without the connection's lock while it is alive.
    last: RefCell<Option<Arc<RemoteConsumer>>>,
    /// Its row in the process's status page (`doca_emu`): messages and bytes sent.
    status: doca_core::status::Entry,
}

/// The sends waiting for one consumer, oldest first.
struct Queue {
    consumer: u32,
    tasks: VecDeque<TaskId>,
}

/// `struct doca_cc_producer`.
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// # use doca_buf::Inventory;
/// # use doca_cc::{Client, Consumer, PostRecvTask, Producer, ProducerSendTask, Server};
/// # use doca_core::{open_device_rep_with_pci, open_device_with_pci, CtxState, Error, Pe, RepFilter};
/// # use doca_mmap::{AccessFlags, Mmap, SharedMem};
/// # use std::{cell::Cell, rc::Rc};
/// # let name = format!("doc-fast-{}", std::process::id());
/// # let dpu = open_device_with_pci("03:00.0", None)?;
/// # let rep = open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.0")?;
/// # let pe = Pe::create()?;
/// # let server = Server::create(&dpu, &rep, &name)?;
/// # pe.connect_ctx(&server.as_ctx())?;
/// # server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 1)?;
/// # server.event_msg_recv_register(|_, _| {})?;
/// # server.event_connection_register(|_, _| {}, |_, _| {})?;
/// # server.as_ctx().start()?;
/// # let client = Client::create(&open_device_with_pci("b1:00.0", None)?, &name)?;
/// # pe.connect_ctx(&client.as_ctx())?;
/// # client.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 1)?;
/// # client.event_msg_recv_register(|_, _| {})?;
/// # let _ = client.as_ctx().start();
/// # let run = |done: &dyn Fn() -> bool| for _ in 0..1_000_000 { if done() { break } pe.progress(); };
/// # run(&|| client.as_ctx().state() == CtxState::Running);
/// # let server_conn = server.connections().pop().unwrap();
/// # let client_conn = client.get_connection()?;
/// let producer = Producer::create(&client_conn)?;
/// pe.connect_ctx(&producer.as_ctx())?;
/// producer.task_send_set_conf(|_task: ProducerSendTask, _, _| {}, |_, _, _| {}, 16)?;
/// producer.as_ctx().start()?; // synchronous
/// # let src = Mmap::create()?;
/// # src.set_memrange(&b"data"[..])?;
/// # src.start()?;
/// # let inv = Inventory::create(1)?;
/// # inv.start()?;
/// let buf = inv.buf_get_data_at(&src, 0, 4)?;
/// // Sends go to a consumer the peer announced (the new-consumer event gives its id).
/// assert_eq!(producer.task_send_alloc_init(&buf, 12345).unwrap_err(), Error::InvalidValue);
/// # let _ = (server_conn, PostRecvTask::status, Consumer::id, SharedMem::alloc, AccessFlags::empty);
/// # Ok::<(), doca_core::Error>(())
/// ```
///
/// The example of [`crate::Consumer`] runs a whole transfer.
pub struct Producer {
    ctx: Rc<CtxCell<ProducerOps>>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Producer(#{} on {:?}, {:?})",
            self.ctx.ops().id,
            self.ctx.ops().conn,
            self.ctx.core().state()
        )
    }
}

impl Producer {
    /// `doca_cc_producer_create`: a producer on an established connection (`BAD_STATE`
    /// otherwise); beyond `caps::MAX_PRODUCERS` producers on this side → `NO_MEMORY`; a device without the fast path
    /// (`caps::producer_is_supported`) → `NOT_SUPPORTED`.
    pub fn create(conn: &Connection) -> Result<Producer> {
        doca_core::require(
            caps::producer_is_supported(conn.dev().as_devinfo()),
            "doca_comch_producer_create",
        )?;
        if !conn.is_connected() {
            bail!(Error::BadState, "cc producer: the connection is not established");
        }
        let info = conn.dev().as_devinfo();
        let limits = (
            // A completion record carries the length in 32 bits (DOCA's cap is a uint32_t too).
            (caps::get(info, &caps::MAX_BUF_SIZE)? as usize).min(u32::MAX as usize),
            (caps::get(info, &caps::MAX_IMM_DATA_LEN)? as usize).min(IMM_MAX),
        );
        Registry::claim(&conn.fast().producers, caps::get(info, &caps::MAX_PRODUCERS)?, "producers")?;
        let id = conn.fast().new_id();
        let status = doca_core::status::Entry::claim(doca_core::status::Identity {
            kind: "cc_producer",
            dev: Some(conn.dev().as_devinfo().pci_addr()),
            rep: None,
            name: &format!("#{id}"),
            conn_id: conn.id(),
        });
        let ctx = CtxCell::new(|weak: &Weak<CtxCell<ProducerOps>>| ProducerOps {
            conn: conn.clone(),
            id,
            limits,
            pool: TaskPool::new(weak.clone()),
            queues: RefCell::new(Vec::new()),
            waiting: Cell::new(0),
            bell: RefCell::new(None),
            last: RefCell::new(None),
            status,
        });
        ctx.core().show_state_in(&ctx.ops().status);
        Ok(Producer { ctx })
    }

    /// `doca_cc_producer_destroy`: Idle only (`BAD_STATE`, and the producer back).
    pub fn destroy(self) -> Result<(), Refused<Producer>> {
        let core = self.ctx.core();
        if let Err(e) = core.require_idle("destroy") {
            return Err(Refused::new(e, self));
        }
        self.ctx.ops().bell.borrow_mut().take();
        core.destroy().map_err(|e| Refused::new(e, Producer { ctx: self.ctx.clone() }))
    }

    /// `doca_cc_producer_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        Ctx::from(self.ctx.clone())
    }

    /// `doca_cc_producer_get_id`: unique on its connection, never 0.
    pub fn id(&self) -> u32 {
        self.ctx.ops().id
    }

    /// `doca_cc_producer_task_send_set_conf`: Idle only; more than the capability →
    /// `INVALID_VALUE`.
    pub fn task_send_set_conf(
        &self,
        completion: impl FnMut(ProducerSendTask, Data, Data) + 'static,
        error: impl FnMut(ProducerSendTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        let ops = self.ctx.ops();
        let cap = caps::get(ops.conn.dev().as_devinfo(), &caps::MAX_FAST_PATH_TASKS)?;
        if num_tasks > cap {
            bail!(Error::InvalidValue, "cc producer: {num_tasks} send tasks exceed the capability {cap}");
        }
        let (mut c, mut e) = (completion, error);
        ops.pool.set_conf(
            self.ctx.core(),
            Box::new(move |t, td, cd| c(ProducerSendTask(t), td, cd)),
            Box::new(move |t, td, cd| e(ProducerSendTask(t), td, cd)),
            num_tasks,
        )
    }

    /// `doca_cc_producer_task_send_alloc_init` (2.6 shape, no immediate data).
    pub fn task_send_alloc_init(&self, buf: &Buf, consumer_id: u32) -> Result<ProducerSendTask> {
        self.task_send_alloc_init_imm(buf, &[], consumer_id)
    }

    /// `doca_comch_producer_task_send_alloc_init`: with up to [`IMM_MAX`] bytes of immediate
    /// data, readable on the consumer's completed task. Refused (`INVALID_VALUE`): a chained
    /// buffer, one beyond the maximum buffer size, too much immediate data, a consumer id the
    /// peer never announced (or that expired). An empty buffer is taken (a program may
    /// allocate the task over a buffer it fills later, as NVIDIA's storage application does
    /// with the buffer an RDMA receive fills): its submission is refused while it is empty.
    pub fn task_send_alloc_init_imm(
        &self,
        buf: &Buf,
        imm: &[u8],
        consumer_id: u32,
    ) -> Result<ProducerSendTask> {
        let ops = self.ctx.ops();
        ops.check_buf(buf, true)?;
        let imm_max = ops.limits.1;
        if imm.len() > imm_max {
            bail!(Error::InvalidValue, "cc producer: {} bytes of immediate data exceed {imm_max}", imm.len());
        }
        let task = TaskPool::alloc_in(&self.ctx, Data::NONE, |p: &mut ProducerSendPayload| {
            ops.target(p, consumer_id)?;
            if p.buf.as_ref() != Some(buf) {
                p.buf = Some(buf.clone());
            }
            p.consumer_id = consumer_id;
            p.imm_len = imm.len();
            p.imm[..imm.len()].copy_from_slice(imm);
            Ok(())
        })?;
        Ok(ProducerSendTask(task))
    }
}

impl ProducerSendTask {
    /// `doca_cc_producer_task_send_set_buf` (2.5: `doca_cc_producer_send_task_set_buf`): a
    /// new buffer for a task that is not submitted; checked when it is submitted (a chained,
    /// empty or too large buffer refuses the submission with `INVALID_VALUE`).
    pub fn set_buf(&self, buf: &Buf) {
        self.0.with_payload(|p| p.buf = Some(buf.clone()));
    }

    /// `doca_cc_producer_task_send_set_consumer_id` (2.5: `…_send_task_set_consumer_id`):
    /// another consumer for a task that is not submitted; an id the peer never announced (or
    /// that expired) refuses the submission with `INVALID_VALUE`.
    pub fn set_consumer_id(&self, consumer_id: u32) {
        self.0.with_payload(|p| p.consumer_id = consumer_id);
    }
}

/// Why a send failed under the consumer's lock (reported once the lock is released).
enum Fault {
    /// The consumer's rings are corrupt.
    Gone,
    /// A post that is not one (unreadable, or room outside the consumer's memory).
    BadPost(Option<Post>),
    /// The posted buffer has this many free bytes, too few.
    NoRoom(u64),
    Copy(Error),
    /// The completion ring has no room, or is broken: it has a slot for every buffer the
    /// consumer can post, twice over, so only a consumer side that posts more than it may or
    /// never reads its completions fills it.
    Ring,
    /// A fault plan cut the link at this send (`link.drop`).
    Cut,
}

enum Step {
    /// Written (or failed for good): the task is done with this status.
    Done(Result<()>),
    /// No buffer posted yet: wait, keeping order.
    Wait,
}

impl ProducerOps {
    /// A buffer this producer can send: not chained, not empty (unless `may_be_empty`, at
    /// allocation), within the maximum size (`INVALID_VALUE` otherwise). Returns where its
    /// data lies (offset in its map, length).
    #[inline]
    fn check_buf(&self, buf: &Buf, may_be_empty: bool) -> Result<(usize, usize)> {
        let shape = buf.shape()?;
        let len = shape.data_len;
        if shape.in_list || (len == 0 && !may_be_empty) || len > self.limits.0 {
            return Err(self.refuse_buf(shape.in_list, len));
        }
        Ok((shape.data, len))
    }

    /// [`ProducerOps::check_buf`]'s refusal, with its log line (out of line: the check stays
    /// a few compares where it is inlined).
    #[cold]
    #[inline(never)]
    fn refuse_buf(&self, in_list: bool, len: usize) -> Error {
        if in_list {
            return fail!(
                Error::InvalidValue,
                "Producer task validation fail: buffer is chained (lists are not supported)"
            );
        }
        if len == 0 {
            return fail!(Error::InvalidValue, "Producer task validation fail: buffer length is 0");
        }
        let max = self.limits.0;
        fail!(Error::InvalidValue, "cc producer: {len} bytes exceed the maximum buffer size {max}")
    }

    /// Points the task's payload at consumer `id`: the consumer it already holds when that
    /// is the one and alive (no lookup), else the peer's current one — another consumer, or
    /// this one restarted (same id, new rings); `INVALID_VALUE` when it expired.
    #[inline(always)] // two loads and a compare where a send is checked
    fn target(&self, p: &mut ProducerSendPayload, id: u32) -> Result<()> {
        if !p.target.as_ref().is_some_and(|t| t.id == id && t.alive.load(Ordering::Acquire)) {
            p.target = Some(self.consumer(id)?);
        }
        Ok(())
    }

    /// The peer's consumer `id` (`INVALID_VALUE` when the peer never announced it or it
    /// expired).
    #[inline(never)] // the lookup when a task's consumer changed: not where a send is checked
    fn consumer(&self, id: u32) -> Result<Arc<RemoteConsumer>> {
        if let Some(t) = self.last.borrow().as_ref() {
            // An expired or restarted consumer is marked dead when the registry drops it.
            if t.id == id && t.alive.load(Ordering::Acquire) {
                return Ok(t.clone());
            }
        }
        match self.conn.fast().remote.lock().get(&id) {
            Some(t) => {
                *self.last.borrow_mut() = Some(t.clone());
                Ok(t.clone())
            }
            None => bail!(Error::InvalidValue, "Producer task validation fail: consumer id {id} is out of range (not a consumer of the peer)"),
        }
    }

    /// Tries the oldest waiting send; `last` when no other send waits behind it for the
    /// same consumer (the consumer is then woken if it sleeps). True besides when the send
    /// went out without that check (to be made when the batch stops).
    fn step(&self, id: TaskId, last: bool) -> (Step, bool) {
        // The payload is only read here (nothing in the send touches the pool): no clones.
        let step = self.pool.with_payload(id, |p| match (&p.buf, &p.target) {
            // The data may have changed since the submit's check (a queued send).
            (Some(buf), Some(target)) => match buf.layout() {
                Ok((_, _, data, len)) => self.send_to(buf, (data, len), target, &p.imm[..p.imm_len], last),
                Err(e) => Step::Done(Err(e)),
            },
            _ => Step::Done(Err(Error::InvalidValue)),
        });
        let step = step.unwrap_or(Step::Done(Err(Error::BadState)));
        let unchecked = !last && matches!(step, Step::Done(Ok(())));
        (step, unchecked)
    }

    /// Wakes `target` if it sleeps waiting for a completion.
    fn wake(target: &RemoteConsumer) {
        if target.lanes.lock().done.peer_needs_wakeup() {
            target.bell.ring();
        }
    }

    /// Writes `buf`'s data (`data`, `len`: read from the buffer by the caller) into the next
    /// buffer `target` posted, with its completion record; with the `last` send of a batch,
    /// wakes the consumer if it sleeps (one fence per batch). The consumer's rings are
    /// locked only for the writes: a wake-up or a log line comes after.
    fn send_to(
        &self,
        buf: &Buf,
        (data, len): (usize, usize),
        target: &Arc<RemoteConsumer>,
        imm: &[u8],
        last: bool,
    ) -> Step {
        if !target.alive.load(Ordering::Acquire) {
            return Step::Done(Err(Error::ConnectionAborted));
        }
        // Checked at submit; the data may have grown since (a completion carries 32 bits).
        let Ok(len32) = u32::try_from(len) else {
            return Step::Done(Err(doca_core::fail!(
                Error::InvalidValue,
                "cc producer {}: {len} bytes exceed the largest fast-path buffer",
                self.id
            )));
        };
        let outcome = {
            let mut lanes = target.lanes.lock();
            self.write_locked(&mut lanes, buf, (data, len, len32), target, imm, last)
        };
        match outcome {
            Ok(Some(wake)) => {
                if wake {
                    target.bell.ring();
                }
                Step::Done(Ok(()))
            }
            Ok(None) => Step::Wait,
            Err(Fault::Gone) => {
                // The consumer's side broke its rings: it is gone for this side.
                target.alive.store(false, Ordering::Release);
                Step::Done(Err(Error::ConnectionAborted))
            }
            Err(Fault::BadPost(post)) => {
                tracing::error!(target: "doca_sdk", "cc producer {}: malformed buffer post from consumer {} ({post:?} in {} bytes): consumer dropped", self.id, target.id, target.mem.len());
                target.alive.store(false, Ordering::Release);
                Step::Done(Err(Error::ConnectionAborted))
            }
            // Nothing written, and the posted buffer stays for the next send.
            Err(Fault::NoRoom(room)) => Step::Done(Err(doca_core::fail!(
                Error::InvalidValue,
                "cc producer {}: {len} bytes do not fit the {room} free bytes of consumer {}'s buffer",
                self.id,
                target.id
            ))),
            Err(Fault::Copy(e)) => Step::Done(Err(e)),
            // The link is cut as the peer's death would cut it: the send fails as sends to a
            // gone consumer do, and both owners wind the connection up on its end of file.
            Err(Fault::Cut) => {
                target.alive.store(false, Ordering::Release);
                Step::Done(Err(Error::ConnectionAborted))
            }
            Err(Fault::Ring) => {
                tracing::error!(target: "doca_sdk", "cc producer {}: consumer {}'s completion ring is full or broken (its side posts more buffers than it may, or reads no completions): consumer dropped", self.id, target.id);
                target.alive.store(false, Ordering::Release);
                Step::Done(Err(Error::ConnectionAborted))
            }
        }
    }

    /// Asks the fault plan about a send about to go out; on `link.drop`, shuts the
    /// connection's socket both ways (from this thread: the registry holds a duplicate).
    #[cold]
    fn fault_cut(&self) -> bool {
        let detail = format_args!("cc_producer {} connection #{} send", self.id, self.conn.id());
        match fault::on_message(&detail) {
            Some(fault::MessageFault::Drop) => {
                self.conn.fast().cut();
                true
            }
            None => false,
        }
    }

    /// [`ProducerOps::send_to`]'s writes, under the consumer's lock: `Some(wake the
    /// consumer)` once sent, `None` while no buffer is posted.
    fn write_locked(
        &self,
        lanes: &mut Lanes,
        buf: &Buf,
        (data, len, len32): (usize, usize, u32),
        target: &RemoteConsumer,
        imm: &[u8],
        last: bool,
    ) -> Result<Option<bool>, Fault> {
        let Some(slot) = lanes.post.peek() else {
            if lanes.post.is_corrupt() || lanes.done.is_corrupt() {
                return Err(Fault::Gone);
            }
            return Ok(None);
        };
        // A post is the peer's word: its room must lie inside the memory it shared.
        let post = slot.bytes().and_then(Post::read).ok_or(Fault::BadPost(None))?;
        if post.offset.checked_add(post.room).is_none_or(|end| end > target.mem.len() as u64) {
            return Err(Fault::BadPost(Some(post)));
        }
        if len as u64 > post.room {
            return Err(Fault::NoRoom(post.room));
        }
        // Checked before anything is written: a send that cannot complete writes nothing.
        if !lanes.done.has_room() {
            return Err(Fault::Ring);
        }
        // A send that would go out now is a message: a fault plan may cut the link instead.
        if fault::armed(fault::class::MESSAGE) && self.fault_cut() {
            return Err(Fault::Cut);
        }
        buf.map().copy_to(data, len, &target.mem, post.offset as usize).map_err(Fault::Copy)?;
        slot.consume();
        // The next send's posted buffer: its line is fetched while this one is written.
        lanes.post.prefetch_next();
        let mut rec = Done {
            token: post.token,
            len: len32,
            producer: self.id,
            status: 0,
            imm_len: imm.len() as u32,
            imm: [0; IMM_MAX],
        };
        rec.imm[..imm.len()].copy_from_slice(imm);
        match lanes.done.push_with(KIND_DONE, DONE_LEN, |b| rec.write(b)) {
            Ok(true) => {}
            _ => return Err(Fault::Ring),
        }
        lanes.sends += 1;
        lanes.bytes += len as u64;
        self.status.sent(len);
        Ok(Some(last && lanes.done.peer_needs_wakeup()))
    }

    /// Sends what can be sent, in order for each consumer; true when something completed.
    fn drain(&self, core: &CtxCore) -> bool {
        let mut any = false;
        let mut queues = self.queues.borrow_mut();
        for q in queues.iter_mut() {
            // A consumer written to without the wake-up check (a batch that stopped before its
            // last send went out): checked once the batch stops, whatever stopped it.
            let mut unchecked = None;
            while let Some(&id) = q.tasks.front() {
                let last = q.tasks.len() == 1;
                let (step, sent_unchecked) = self.step(id, last);
                if sent_unchecked && unchecked.is_none() {
                    // One handle on the consumer per batch, not per send.
                    unchecked = self.pool.with_payload(id, |p| p.target.clone()).flatten();
                }
                match step {
                    Step::Wait => break,
                    Step::Done(status) => {
                        if last && status.is_ok() {
                            unchecked = None; // checked with this send
                        }
                        q.tasks.pop_front();
                        self.waiting.set(self.waiting.get() - 1);
                        self.pool.finish_in(core, id, status);
                        any = true;
                    }
                }
            }
            if let Some(target) = unchecked {
                Self::wake(&target);
            }
        }
        any
    }

    /// Whether no send waits for consumer `id` (a send to it goes out at once).
    #[inline]
    fn idle_for(&self, id: u32) -> bool {
        self.waiting.get() == 0 || self.queues.borrow().iter().all(|q| q.consumer != id || q.tasks.is_empty())
    }

    /// Whether sends wait.
    #[inline]
    fn has_pending(&self) -> bool {
        self.waiting.get() != 0
    }
}

impl Drop for ProducerOps {
    fn drop(&mut self) {
        self.conn.fast().producers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl CtxOps for ProducerOps {
    fn kind(&self) -> &'static str {
        "cc_producer"
    }

    fn start(&self, core: &CtxCore) -> Result<Started> {
        self.status.set_engine(core.engine_status_id());
        if !self.pool.is_configured() {
            bail!(
                Error::InvalidValue,
                "cc producer {}: start: the send task (task_send_set_conf) must be configured first",
                self.id
            );
        }
        if !self.conn.is_connected() {
            bail!(Error::NotConnected, "cc producer {}: the connection is down", self.id);
        }
        self.pool.prepare(ProducerSendPayload::default);
        self.queues.borrow_mut().clear();
        self.waiting.set(0);
        if self.bell.borrow().is_none() {
            let dup = self.conn.fast().bell.as_fd().try_clone_to_owned();
            let dup = dup.map_err(|e| fail!(Error::OperatingSystem, "dup: {e}"))?;
            *self.bell.borrow_mut() = Some(core.watch(PeerFd::new(dup))?);
        }
        Ok(Started::Running)
    }

    fn stop(&self, _core: &CtxCore) {
        // Sends still waiting for a buffer fail: a stopped producer sends nothing more.
        for q in self.queues.borrow_mut().iter_mut() {
            for id in q.tasks.drain(..) {
                self.pool.finish(id, Err(Error::Shutdown));
            }
        }
        self.waiting.set(0);
    }

    fn progress(&self, core: &CtxCore, _now: &Now<'_>) -> bool {
        self.has_pending() && self.drain(core)
    }

    /// Only sends waiting for a buffer need polling (a submit puts the producer back on the
    /// engine's list): an idle producer costs its engine's passes nothing.
    fn needs_poll(&self, _core: &CtxCore) -> bool {
        self.has_pending()
    }

    fn request_notification(&self, _core: &CtxCore) -> bool {
        let mut ready = false;
        for q in self.queues.borrow().iter() {
            let Some(&id) = q.tasks.front() else { continue };
            ready |= match self.pool.with_payload(id, |p| p.target.clone()).flatten() {
                Some(t) => t.lanes.lock().post.arm_for_data() || !t.alive.load(Ordering::Acquire),
                None => true,
            };
        }
        ready
    }

    fn clear_notification(&self, _core: &CtxCore) {
        // The watched duplicate is the same socket: draining either silences both.
        self.conn.fast().bell.drain();
        for rc in self.conn.fast().remote.lock().values() {
            rc.lanes.lock().post.disarm_data();
        }
    }
}

impl TaskPayload for ProducerSendPayload {
    type Lib = ProducerOps;
    const FAULT_KIND: &'static str = "cc.producer.send";
}

impl TaskLib<ProducerSendPayload> for ProducerOps {
    fn pool(&self) -> &TaskPool<ProducerSendPayload> {
        &self.pool
    }

    /// Checks the buffer and finds the consumer (a reused task may have a new one of each),
    /// then sends at once when no send waits before it for that consumer, or queues it
    /// behind them.
    fn submit(&self, core: &CtxCore, task: TaskId) -> Result<()> {
        // One look at the payload: the checks, then, when no send waits before it for that
        // consumer, the send itself (from the data the check read).
        let step = self
            .pool
            .with_payload(task, |p| -> Result<(Step, u32)> {
                let buf = p.buf.as_ref().ok_or(Error::InvalidValue)?;
                let at = self.check_buf(buf, false)?;
                self.target(p, p.consumer_id)?;
                let consumer_id = p.consumer_id;
                if !self.idle_for(consumer_id) {
                    return Ok((Step::Wait, consumer_id));
                }
                // Nothing before it for this consumer: send now, so the consumer sees it at once.
                let step = match (&p.buf, &p.target) {
                    (Some(buf), Some(target)) => self.send_to(buf, at, target, &p.imm[..p.imm_len], true),
                    _ => Step::Done(Err(Error::InvalidValue)),
                };
                Ok((step, consumer_id))
            })
            .ok_or(Error::BadState)??;
        let consumer_id = match step {
            (Step::Done(status), _) => {
                self.pool.finish_in(core, task, status);
                return Ok(());
            }
            (Step::Wait, consumer_id) => consumer_id,
        };
        let mut queues = self.queues.borrow_mut();
        // An empty queue serves the next consumer that needs one: queues never outnumber the
        // tasks that ever waited at once, however many consumers the peer announces.
        let at = match queues.iter().position(|q| q.consumer == consumer_id) {
            Some(at) => at,
            None => match queues.iter().position(|q| q.tasks.is_empty()) {
                Some(at) => {
                    queues[at].consumer = consumer_id;
                    at
                }
                None => {
                    let cap = self.pool.capacity() as usize;
                    queues.push(Queue { consumer: consumer_id, tasks: VecDeque::with_capacity(cap) });
                    queues.len() - 1
                }
            },
        };
        queues[at].tasks.push_back(task);
        self.waiting.set(self.waiting.get() + 1);
        Ok(())
    }
}
