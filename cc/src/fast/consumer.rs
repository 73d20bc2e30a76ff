//! `doca_cc_consumer`: the receiving end of the fast path. It posts buffers of its map;
//! producers on the other side of the connection fill them.
//!
//! Start is asynchronous: `start` returns `IN_PROGRESS` and the consumer is Running once
//! the peer registered it (the peer's server or client then gets the new-consumer event).
//! A peer that refuses it — beyond what it maps of this process's memory or descriptors
//! (`doca_mmap::budget`) — makes the start fail with its code (`NO_MEMORY`, `FULL`): the
//! consumer goes back to Idle through the state callback.
//! A post-receive task completes only when a producer wrote into its buffer: the bytes are
//! appended after the buffer's data, its data length grows, and the producer's id (and any
//! immediate data) can be read from the task. A post submitted with `submit_ex` without
//! `FLUSH` is kept back and goes to the peer with later ones: at a flushing submit,
//! `doca_ctx_flush_tasks`, or the engine's next progress call (or arming) at the latest.
//! Stopping the consumer completes its posted buffers with `DOCA_ERROR_SHUTDOWN` (it may
//! start again, under the same id, without a second new-consumer event); destroying it gives
//! the peer the expired-consumer event.
//!
//! Memory from `doca_mmap::SharedMem` is written by the producer directly (one copy). Any
//! other memory works through a shared shadow of the map that the consumer copies from when
//! a buffer completes (two copies: the documented slower fallback).

use std::cell::{Cell, RefCell};
use std::os::fd::AsFd;
use std::rc::{Rc, Weak};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use doca_buf::Buf;
use doca_core::{
    bail, fail, Ctx, CtxCell, CtxCore, CtxOps, CtxState, Data, Error, Now, Refused, Result, Started, TaskId,
    TaskLib, TaskPayload, TaskPool, TaskSubmitFlags,
};
use doca_link::notify::{Doorbell, Watched};
use doca_mmap::{AccessFlags, MapAccess, Mmap, SharedMem};

use super::ImmData;
use crate::caps;
use crate::conn::registry::LocalConsumer;
use crate::conn::{Connection, Registry};
use crate::proto::layout::{KIND_DONE, KIND_POST};
use crate::proto::records::{ring_slots, segment_len, Done, Post, DONE_LEN, IMM_MAX, POST_LEN};
use crate::proto::Ctrl;
use crate::transport::ring::{Area, End, Ring};

/// The library part of a post-receive task.
#[derive(Default)]
pub struct PostRecvPayload {
    buf: Option<Buf>,
    producer_id: u32,
    imm_len: usize,
    imm: [u8; IMM_MAX],
}

doca_core::task_handle! {
/// `struct doca_cc_consumer_task_post_recv`: a buffer offered to the peer's producers.
    pub struct PostRecvTask(PostRecvPayload);
}

impl PostRecvTask {
    /// `doca_cc_consumer_task_post_recv_get_buf`.
    pub fn buf(&self) -> Buf {
        self.0.with_payload(|p| p.buf.clone()).expect("a post-receive task always has its buffer")
    }

    /// `doca_cc_consumer_task_post_recv_get_producer_id`: set on completion, 0 before.
    pub fn producer_id(&self) -> u32 {
        self.0.with_payload(|p| p.producer_id)
    }

    /// `doca_comch_consumer_task_post_recv_get_imm_data`: the immediate data that came with
    /// the buffer (empty without).
    pub fn imm_data(&self) -> ImmData {
        self.0.with_payload(|p| ImmData::new(p.imm, p.imm_len))
    }
}

struct Channel {
    post: Ring,
    done: Ring,
    /// Keeps the segment mapped (the rings point into it).
    _area: Arc<Area>,
    /// The shared copy producers write into when the map itself cannot be shared.
    shadow: Option<MapAccess>,
}

#[doc(hidden)] // named by the task payload (`TaskPayload::Lib`); reached through the handle types
pub struct ConsumerOps {
    conn: Connection,
    id: u32,
    map: MapAccess,
    pool: TaskPool<PostRecvPayload>,
    chan: RefCell<Option<Channel>>,
    shared: RefCell<Option<Arc<LocalConsumer>>>,
    /// Rung by the peer's producers when they filled a buffer while this consumer sleeps;
    /// replaced at each start (the old registration goes with the old doorbell).
    bell: RefCell<Option<Watched<Doorbell>>>,
    /// The token of each posted task, by pool slot.
    posted: RefCell<Vec<Option<u64>>>,
    /// Posts submitted without `DOCA_TASK_SUBMIT_FLAG_FLUSH`, kept back until a flushing
    /// submit, `doca_ctx_flush_tasks`, the start of the next progress call or the engine's
    /// arming to sleep (whichever comes first): a re-post from a completion callback then does
    /// not leave a store to a line the peer reads pending in this core while the application
    /// sends its reply (the reply's first fence would wait for it). Never more than the pool's
    /// tasks (allocated at start).
    staged: RefCell<Vec<Post>>,
    /// Its rings are announced to the peer (from start to stop).
    announced: Cell<bool>,
    /// The peer was ever told of it: destroying it expires it there.
    ever_announced: Cell<bool>,
    /// Its row in the process's status page (`doca_emu`): posted buffers, messages, bytes.
    status: doca_core::status::Entry,
    /// Posted buffers not yet completed (what the status page shows).
    nposted: Cell<usize>,
    /// The peer wrote a malformed completion record: the rings are not used any more.
    malformed: Cell<bool>,
}

/// `struct doca_cc_consumer`.
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
/// // Receiving side (here the server's end): buffers in shared memory get the one-copy path.
/// let map = Mmap::create()?;
/// map.set_memrange(SharedMem::alloc(1 << 16)?)?;
/// map.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE)?;
/// map.start()?;
/// let consumer = Consumer::create(&server_conn, &map)?;
/// pe.connect_ctx(&consumer.as_ctx())?;
/// let got = Rc::new(Cell::new(0));
/// let g = got.clone();
/// consumer.task_post_recv_set_conf(
///     move |task: PostRecvTask, _, _| g.set(task.buf().data_len().unwrap()),
///     |_, _, _| {},
///     8,
/// )?;
/// assert_eq!(consumer.as_ctx().start(), Err(Error::InProgress)); // Running once the peer knows it
/// run(&|| consumer.as_ctx().state() == CtxState::Running);
/// let inv = Inventory::create(8)?;
/// inv.start()?;
/// consumer.task_post_recv_alloc_init(&inv.buf_get_at(&map, 0, 4096)?)?.submit().map_err(|r| r.error)?;
/// // Sending side (the client's end): a producer sends to the consumer's id.
/// let producer = Producer::create(&client_conn)?;
/// pe.connect_ctx(&producer.as_ctx())?;
/// producer.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 8)?;
/// producer.as_ctx().start()?;
/// let src = Mmap::create()?;
/// src.set_memrange(&b"hello fast path"[..])?;
/// src.start()?;
/// let msg = inv.buf_get_data_at(&src, 0, 15)?;
/// producer.task_send_alloc_init(&msg, consumer.id())?.submit().map_err(|r| r.error)?;
/// run(&|| got.get() == 15);
/// assert_eq!(got.get(), 15);
/// # Ok::<(), doca_core::Error>(())
/// ```
pub struct Consumer {
    ctx: Rc<CtxCell<ConsumerOps>>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Consumer(#{} on {:?}, {:?})",
            self.ctx.ops().id,
            self.ctx.ops().conn,
            self.ctx.core().state()
        )
    }
}

impl Consumer {
    /// `doca_cc_consumer_create`: a consumer on an established connection, receiving into
    /// `mmap`. A connection that is down → `BAD_STATE`; a map without `PCI_READ_WRITE` →
    /// `NOT_PERMITTED`; a map not started → `BAD_STATE`; more consumers than the
    /// capability → `NO_MEMORY`; a device without the fast path (`caps::consumer_is_supported`)
    /// → `NOT_SUPPORTED`.
    pub fn create(conn: &Connection, mmap: &Mmap) -> Result<Consumer> {
        doca_core::require(
            caps::consumer_is_supported(conn.dev().as_devinfo()),
            "doca_comch_consumer_create",
        )?;
        if !conn.is_connected() {
            bail!(Error::BadState, "cc consumer: the connection is not established");
        }
        if !mmap.permissions().contains(AccessFlags::PCI_READ_WRITE) {
            bail!(
                Error::NotPermitted,
                "cc consumer: the map needs DOCA_ACCESS_FLAG_PCI_READ_WRITE for producers to write into it"
            );
        }
        let map = mmap.access()?;
        let max = caps::get(conn.dev().as_devinfo(), &caps::MAX_CONSUMERS)?;
        Registry::claim(&conn.fast().consumers, max, "consumers")?;
        let id = conn.fast().new_id();
        let status = doca_core::status::Entry::claim(doca_core::status::Identity {
            kind: "cc_consumer",
            dev: Some(conn.dev().as_devinfo().pci_addr()),
            rep: None,
            name: &format!("#{id}"),
            conn_id: conn.id(),
        });
        let ctx = CtxCell::new(|weak: &Weak<CtxCell<ConsumerOps>>| ConsumerOps {
            conn: conn.clone(),
            id,
            map,
            pool: TaskPool::new(weak.clone()),
            chan: RefCell::new(None),
            shared: RefCell::new(None),
            bell: RefCell::new(None),
            posted: RefCell::new(Vec::new()),
            staged: RefCell::new(Vec::new()),
            announced: Cell::new(false),
            ever_announced: Cell::new(false),
            status,
            nposted: Cell::new(0),
            malformed: Cell::new(false),
        });
        ctx.core().show_state_in(&ctx.ops().status);
        Ok(Consumer { ctx })
    }

    /// `doca_cc_consumer_destroy`: Idle only (`BAD_STATE`, and the consumer back).
    pub fn destroy(self) -> Result<(), Refused<Consumer>> {
        let core = self.ctx.core();
        if let Err(e) = core.require_idle("destroy") {
            return Err(Refused::new(e, self));
        }
        self.ctx.ops().bell.borrow_mut().take();
        core.destroy().map_err(|e| Refused::new(e, Consumer { ctx: self.ctx.clone() }))
    }

    /// `doca_cc_consumer_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        Ctx::from(self.ctx.clone())
    }

    /// `doca_cc_consumer_get_id`: unique on its connection, never 0.
    pub fn id(&self) -> u32 {
        self.ctx.ops().id
    }

    /// `doca_cc_consumer_task_post_recv_set_conf`: Idle only; more than the capability →
    /// `INVALID_VALUE`.
    pub fn task_post_recv_set_conf(
        &self,
        completion: impl FnMut(PostRecvTask, Data, Data) + 'static,
        error: impl FnMut(PostRecvTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        let ops = self.ctx.ops();
        let cap = caps::get(ops.conn.dev().as_devinfo(), &caps::MAX_FAST_PATH_TASKS)?;
        if num_tasks > cap {
            bail!(
                Error::InvalidValue,
                "cc consumer: {num_tasks} post-receive tasks exceed the capability {cap}"
            );
        }
        let (mut c, mut e) = (completion, error);
        ops.pool.set_conf(
            self.ctx.core(),
            Box::new(move |t, td, cd| c(PostRecvTask(t), td, cd)),
            Box::new(move |t, td, cd| e(PostRecvTask(t), td, cd)),
            num_tasks,
        )
    }

    /// `doca_cc_consumer_task_post_recv_alloc_init`: a task posting `buf`, which must lie in
    /// the consumer's map (`INVALID_VALUE`), not be chained (`INVALID_VALUE`) and have free
    /// room after its data (`INVALID_VALUE`).
    pub fn task_post_recv_alloc_init(&self, buf: &Buf) -> Result<PostRecvTask> {
        let ops = self.ctx.ops();
        check_buf(&ops.map, buf)?;
        let task = TaskPool::alloc_in(&self.ctx, Data::NONE, |p: &mut PostRecvPayload| {
            // A buffer posted again usually lands in the slot it left: no new handle then.
            if p.buf.as_ref() != Some(buf) {
                p.buf = Some(buf.clone());
            }
            p.producer_id = 0;
            p.imm_len = 0;
            Ok(())
        })?;
        Ok(PostRecvTask(task))
    }

    /// `doca_cc_consumer_task_post_recv_set_buf`: a new buffer for a task not submitted.
    pub fn task_post_recv_set_buf(&self, task: &PostRecvTask, buf: &Buf) -> Result<()> {
        check_buf(&self.ctx.ops().map, buf)?;
        task.set_buf(buf);
        Ok(())
    }
}

impl PostRecvTask {
    /// `doca_cc_consumer_task_post_recv_set_buf` as C calls it, without the consumer: a new
    /// buffer for a task that is not submitted, checked when it is submitted (a buffer
    /// outside the consumer's map, chained, or without room refuses the submission with
    /// `INVALID_VALUE`).
    pub fn set_buf(&self, buf: &Buf) {
        self.0.with_payload(|p| p.buf = Some(buf.clone()));
    }
}

/// A buffer the consumer can post: in its map, not chained, with room after its data
/// (`INVALID_VALUE` otherwise). Returns (end of the data, free room).
#[inline]
fn check_buf(map: &MapAccess, buf: &Buf) -> Result<(usize, usize)> {
    if buf.map() != map {
        return Err(refuse_buf(BadPost::Outside));
    }
    let (chained, end, room) = buf.list_and_room()?;
    if chained {
        return Err(refuse_buf(BadPost::Chained));
    }
    if room == 0 {
        return Err(refuse_buf(BadPost::NoRoom));
    }
    Ok((end, room))
}

/// Why [`check_buf`] refused a buffer.
enum BadPost {
    Outside,
    Chained,
    NoRoom,
}

/// [`check_buf`]'s refusal, with its log line (out of line: the check stays a few compares
/// where it is inlined).
#[cold]
#[inline(never)]
fn refuse_buf(why: BadPost) -> Error {
    match why {
        BadPost::Outside => fail!(Error::InvalidValue, "Consumer task validation fail: buffer is outside of exported mmap range (not in the consumer's map)"),
        BadPost::Chained => fail!(
            Error::InvalidValue,
            "Consumer task validation fail: buffer is chained (lists are not supported)"
        ),
        BadPost::NoRoom => fail!(
            Error::InvalidValue,
            "Consumer task validation fail: buffer free space is 0 (no room after its data)"
        ),
    }
}

impl ConsumerOps {
    /// Forgets a posted token; false when it was not posted (stale or forged record).
    fn unpost(&self, token: u64) -> bool {
        let mut posted = self.posted.borrow_mut();
        match posted.get_mut(TaskId::from_bits(token).slot()) {
            Some(t) if *t == Some(token) => {
                *t = None;
                self.count_posted(-1);
                true
            }
            _ => false,
        }
    }

    /// Writes the staged posts to the post ring (in submission order). One that does not fit
    /// (the ring has a slot for twice the tasks: only a broken ring refuses) stays staged.
    fn publish_posts(&self) {
        if let Some(chan) = self.chan.borrow().as_ref() {
            self.publish_to(chan);
        }
    }

    /// [`ConsumerOps::publish_posts`] into `chan` (the caller's borrow of the channel).
    #[inline]
    fn publish_to(&self, chan: &Channel) {
        // Most passes have nothing kept back: a look, not a call.
        if !self.staged.borrow().is_empty() {
            self.publish_staged(chan);
        }
    }

    /// [`ConsumerOps::publish_to`]'s writes (out of line).
    #[inline(never)]
    fn publish_staged(&self, chan: &Channel) {
        let mut staged = self.staged.borrow_mut();
        let mut written = 0;
        for post in staged.iter() {
            if !matches!(chan.post.push_with(KIND_POST, POST_LEN, |b| post.write(b)), Ok(true)) {
                break;
            }
            written += 1;
        }
        if written == staged.len() {
            staged.clear();
        } else {
            staged.drain(..written);
        }
    }

    /// Wakes the peer's producers if they sleep waiting for buffers posted since the last
    /// check (one fence per batch).
    fn wake_producers(&self) {
        if let Some(chan) = self.chan.borrow().as_ref() {
            self.wake_producers_of(chan);
        }
    }

    /// [`ConsumerOps::wake_producers`] for `chan` (the caller's borrow of the channel).
    #[inline]
    fn wake_producers_of(&self, chan: &Channel) {
        if chan.post.peer_needs_wakeup() {
            if let Some(bell) = self.shared.borrow().as_ref().and_then(|s| s.peer_bell.get()) {
                bell.ring();
            }
        }
        // The completion ring is never full (it has a slot per post): no room to announce.
        chan.done.forget_wakeup_check();
    }

    /// Finishes the posted tasks whose buffers were filled — at most a ring's worth per call,
    /// whatever the peer writes; in Stopping, every posted task (`SHUTDOWN`). A malformed
    /// completion record breaks the consumer's rings (the peer is broken or hostile).
    fn deliver(&self, core: &CtxCore, chan: Option<&Channel>) -> bool {
        let mut any = false;
        let stopping = core.state() == CtxState::Stopping;
        if let Some(chan) = chan.filter(|_| !self.malformed.get()) {
            for _ in 0..chan.done.capacity() {
                let Some(slot) = chan.done.peek() else { break };
                let rec = slot.bytes().and_then(Done::read);
                slot.consume();
                let Some(rec) = rec else {
                    self.malformed_record();
                    break;
                };
                if !self.unpost(rec.token) {
                    continue;
                }
                let id = TaskId::from_bits(rec.token);
                let status = if stopping { Err(Error::Shutdown) } else { self.land(chan, id, &rec) };
                self.pool.finish_in(core, id, status);
                any = true;
            }
        }
        if stopping {
            let tokens: Vec<u64> = self.posted.borrow_mut().iter_mut().filter_map(Option::take).collect();
            self.count_posted(-(tokens.len() as isize));
            for token in tokens {
                self.pool.finish_in(core, TaskId::from_bits(token), Err(Error::Shutdown));
                any = true;
            }
        }
        any
    }

    /// The peer wrote a completion record that does not decode: the rings are not used any
    /// more (out of line: the usual pass keeps its registers).
    #[cold]
    #[inline(never)]
    fn malformed_record(&self) {
        tracing::error!(target: "doca_sdk", "cc consumer {}: malformed completion record from the peer", self.id);
        self.malformed.set(true);
    }

    /// A filled buffer: copy from the shadow if any, grow the data, record who sent it.
    fn land(&self, chan: &Channel, id: TaskId, rec: &Done) -> Result<()> {
        Error::check(rec.status)?;
        let len = rec.len as usize;
        // Only the payload's own fields are touched: no clone of the buffer handle.
        self.pool
            .with_payload(id, |p| -> Result<()> {
                let buf = p.buf.as_ref().ok_or(Error::BadState)?;
                let at = buf.append_len(len)?;
                if let Some(shadow) = &chan.shadow {
                    let src = shadow.bytes(at, len)?;
                    self.map.write(at, &src)?;
                    self.conn.fast().counters.staged_copies.fetch_add(1, Ordering::Relaxed);
                }
                self.status.received(len);
                p.producer_id = rec.producer;
                p.imm_len = rec.imm_len as usize;
                p.imm = rec.imm;
                Ok(())
            })
            .ok_or(Error::BadState)?
    }
}

impl ConsumerOps {
    /// The peer stops using this consumer's rings (they go with this run; its sends to the
    /// consumer fail from now on); the consumer stays known there: only destroying it
    /// expires it. Once per run.
    fn withdraw(&self) {
        // Posts not yet written stay with the application (stopping returns their tasks).
        self.staged.borrow_mut().clear();
        if self.announced.replace(false) {
            self.conn.fast().local.lock().remove(&self.id);
            let _ = self.conn.fast().send(&Ctrl::ConsumerPaused { id: self.id }, &[]);
        }
    }
}

impl Drop for ConsumerOps {
    /// Destroyed (or dropped): the peer's expired-consumer event.
    fn drop(&mut self) {
        if self.ever_announced.get() {
            let _ = self.conn.fast().send(&Ctrl::ConsumerGone { id: self.id }, &[]);
        }
        self.conn.fast().consumers.fetch_sub(1, Ordering::Relaxed);
    }
}

impl CtxOps for ConsumerOps {
    fn kind(&self) -> &'static str {
        "cc_consumer"
    }

    fn start(&self, core: &CtxCore) -> Result<Started> {
        if !self.pool.is_configured() {
            bail!(Error::InvalidValue, "cc consumer {}: start: the post-receive task (task_post_recv_set_conf) must be configured first", self.id);
        }
        if !self.conn.is_connected() {
            bail!(Error::NotConnected, "cc consumer {}: the connection is down", self.id);
        }
        let slots = self.pool.capacity().max(1);
        self.status.set_engine(core.engine_status_id());
        self.count_posted(-(self.nposted.get() as isize));
        self.malformed.set(false); // new rings
        self.pool.prepare(PostRecvPayload::default);
        *self.posted.borrow_mut() = vec![None; slots as usize];
        *self.staged.borrow_mut() = Vec::with_capacity(slots as usize);
        let Some((len, done_at)) = segment_len(slots) else {
            bail!(
                Error::NoMemory,
                "cc consumer {}: rings for {slots} buffers are more than can exist",
                self.id
            );
        };
        let area = Area::create("doca-cc-consumer", len)?;
        let n = ring_slots(slots);
        Ring::init(&area, 0, n, POST_LEN)?;
        Ring::init(&area, done_at, n, DONE_LEN)?;
        let post = Ring::attach_sequenced(&area, 0, n, POST_LEN, End::Producer, KIND_POST)?;
        let done = Ring::attach_sequenced(&area, done_at, n, DONE_LEN, End::Consumer, KIND_DONE)?;
        let (region, shadow, one_copy) = match self.map.share()? {
            Some(r) => (r, None, true),
            None => {
                let mem = SharedMem::alloc(self.map.map_len())?;
                let region = mem.share()?;
                let shadow_map = Mmap::create()?;
                shadow_map.set_memrange(mem)?;
                shadow_map.start()?;
                // The access handle keeps the shadow's memory alive after the map handle goes.
                (region, Some(shadow_map.access()?), false)
            }
        };
        // A pair of this consumer's own: the peer gets the other end (its producers ring it).
        let (bell, theirs) = Doorbell::pair()?;
        let bell = core.watch(bell)?;
        let shared = Arc::new(LocalConsumer {
            acked: Default::default(),
            peer_bell: Default::default(),
            refused: Default::default(),
        });
        self.conn.fast().local.lock().insert(self.id, shared.clone());
        let ctrl = Ctrl::NewConsumer {
            id: self.id,
            one_copy,
            mem_offset: region.offset as u64,
            mem_len: region.len as u64,
            slots,
        };
        let announced = self.conn.fast().send(&ctrl, &[area.as_fd(), region.fd.as_fd(), theirs.as_fd()]);
        drop(theirs);
        if let Err(e) = announced {
            self.conn.fast().local.lock().remove(&self.id);
            return Err(fail!(e, "cc consumer {}: cannot announce itself to the peer", self.id));
        }
        *self.bell.borrow_mut() = Some(bell);
        *self.shared.borrow_mut() = Some(shared);
        *self.chan.borrow_mut() = Some(Channel { post, done, _area: area, shadow });
        self.announced.set(true);
        self.ever_announced.set(true);
        Ok(Started::Starting)
    }

    /// See [`ConsumerOps::withdraw`].
    fn stop(&self, _core: &CtxCore) {
        self.withdraw();
    }

    fn progress(&self, core: &CtxCore, _now: &Now<'_>) -> bool {
        if core.state() == CtxState::Starting {
            return self.progress_starting(core);
        }
        // Buffers posted since the last call (completion callbacks run after it returns) go to
        // the peer now, and its producers are woken if they sleep for one: done first, so that
        // neither the ring's stores nor the fence come between a callback's re-post and the
        // reply the application sends next. One borrow of the channel for both.
        if let Some(chan) = self.chan.borrow().as_ref() {
            self.publish_to(chan);
            self.wake_producers_of(chan);
        }
        if !self.conn.is_connected() && core.state() == CtxState::Running {
            self.connection_down(core);
        }
        // One borrow of the channel for the completions and the look at the rings after.
        let (any, broken) = {
            let chan = self.chan.borrow();
            let any = self.deliver(core, chan.as_ref());
            let broken = self.malformed.get()
                || chan.as_ref().is_some_and(|c| c.done.is_corrupt() || c.post.is_corrupt());
            (any, broken)
        };
        if broken && core.state() == CtxState::Running {
            self.rings_broken(core);
        }
        any
    }

    fn request_notification(&self, core: &CtxCore) -> bool {
        if core.state() == CtxState::Starting {
            return false;
        }
        self.publish_posts();
        self.wake_producers();
        self.chan.borrow().as_ref().is_some_and(|c| c.done.arm_for_data())
    }

    fn flush_tasks(&self, _core: &CtxCore) {
        self.publish_posts();
    }

    fn clear_notification(&self, _core: &CtxCore) {
        // A producer that took the armed flag rang once: one `recv` takes its ring. Otherwise
        // the doorbell is drained (whatever a peer sent beyond its rings must not keep the
        // handle readable), which costs a `recv` that finds nothing when nothing rang.
        let rang = self.chan.borrow().as_ref().is_some_and(|c| c.done.disarm_data_taken());
        if let Some(b) = self.bell.borrow().as_ref() {
            if !(rang && b.drain_once()) {
                b.drain();
            }
        }
    }
}

impl ConsumerOps {
    /// [`CtxOps::progress`] while Starting: waits for the peer's answer (out of line: a
    /// running consumer's pass keeps its registers).
    #[cold]
    #[inline(never)]
    fn progress_starting(&self, core: &CtxCore) -> bool {
        {
            let acked = self.shared.borrow().as_ref().is_some_and(|s| s.acked.load(Ordering::Acquire));
            if acked {
                core.set_running();
                return true;
            }
            let refused = self.shared.borrow().as_ref().map_or(0, |s| s.refused.load(Ordering::Acquire));
            if refused != 0 {
                let code = Error::from_code(refused).unwrap_or(Error::Unknown);
                // The peer maps nothing of it: no pause to announce, only the destroy.
                self.staged.borrow_mut().clear();
                self.announced.set(false);
                self.conn.fast().local.lock().remove(&self.id);
                core.abort_start(
                    code,
                    "the peer refused the consumer (its budget for this process, or its memory)",
                );
                return true;
            }
            if !self.conn.is_connected() {
                self.withdraw();
                core.abort_start(
                    Error::NotConnected,
                    "the connection went down before the peer registered the consumer",
                );
                return true;
            }
            false
        }
    }

    /// The connection went down while Running (out of line).
    #[cold]
    #[inline(never)]
    fn connection_down(&self, core: &CtxCore) {
        self.withdraw();
        core.fail(Error::ConnectionReset, "the connection went down");
    }

    /// The peer broke the rings while Running (out of line).
    #[cold]
    #[inline(never)]
    fn rings_broken(&self, core: &CtxCore) {
        // The peer's producers must not fill buffers the application gets back now.
        self.withdraw();
        core.fail(Error::ConnectionReset, "the peer broke the consumer's rings");
    }
}

impl TaskPayload for PostRecvPayload {
    type Lib = ConsumerOps;
    const FAULT_KIND: &'static str = "cc.consumer.post_recv";
}

impl TaskLib<PostRecvPayload> for ConsumerOps {
    fn pool(&self) -> &TaskPool<PostRecvPayload> {
        &self.pool
    }

    /// `doca_task_submit`: the post goes to the peer now (after any kept back before it).
    fn submit(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        let post = self.post_of(task)?;
        self.publish_posts();
        let chan = self.chan.borrow();
        let chan = chan.as_ref().ok_or(Error::BadState)?;
        if !self.staged.borrow().is_empty() || !chan.post.push_with(KIND_POST, POST_LEN, |b| post.write(b))? {
            return Err(Error::Again);
        }
        self.mark_posted(task, post.token);
        Ok(())
    }

    /// `doca_task_submit_ex` without `FLUSH`: the post is kept back and goes to the peer with
    /// the others at the next flushing submit, `doca_ctx_flush_tasks`, or the consumer's next
    /// progress (see `staged`).
    fn submit_ex(&self, _core: &CtxCore, task: TaskId, _flags: TaskSubmitFlags) -> Result<()> {
        let post = self.post_of(task)?;
        if self.chan.borrow().is_none() {
            return Err(Error::BadState);
        }
        let mut staged = self.staged.borrow_mut();
        if staged.len() == staged.capacity() {
            return Err(Error::Again); // cannot happen: one entry per task of the pool
        }
        staged.push(post);
        drop(staged);
        self.mark_posted(task, post.token);
        Ok(())
    }
}

impl ConsumerOps {
    /// The post record of a submitted task (its buffer checked again: a reused task may have
    /// a new one); a reused task starts afresh (who filled it last time no longer holds).
    fn post_of(&self, task: TaskId) -> Result<Post> {
        let (end, room) = self
            .pool
            .with_payload(task, |p| {
                p.producer_id = 0;
                p.imm_len = 0;
                p.buf.as_ref().map(|b| check_buf(&self.map, b))
            })
            .flatten()
            .ok_or(Error::InvalidValue)??;
        Ok(Post { token: task.to_bits(), offset: end as u64, room: room as u64 })
    }

    fn mark_posted(&self, task: TaskId, token: u64) {
        if let Some(t) = self.posted.borrow_mut().get_mut(task.slot()) {
            if t.replace(token).is_none() {
                self.count_posted(1);
            }
        }
    }

    /// Posted buffers went up or down by `delta` (shown in the status page).
    #[inline]
    fn count_posted(&self, delta: isize) {
        let n = self.nposted.get().wrapping_add_signed(delta);
        self.nposted.set(n);
        self.status.set_posted(n);
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use doca_buf::Inventory;
    use doca_core::{open_device_rep_with_pci, open_device_with_pci, Pe, RepFilter};

    use super::*;
    use crate::{Client, Server};

    fn run(pe: &Pe, what: &str, done: impl Fn() -> bool) {
        for _ in 0..2_000_000 {
            if done() {
                return;
            }
            pe.progress();
        }
        panic!("timed out waiting for {what}");
    }

    /// The peer (here, a hostile producer side writing the completion ring itself) publishes
    /// a record that does not decode: the consumer stops with `CONNECTION_RESET` instead of
    /// logging record after record, and its posted buffer comes back (`SHUTDOWN`).
    /// A server and a client of it on one engine, connected: (engine, server, client, the
    /// server's connection, the client's).
    fn connected(tag: &str) -> (Pe, Server, Client, Connection, Connection) {
        let name = format!("{tag}-{}", std::process::id());
        let dpu = open_device_with_pci("03:00.0", None).unwrap();
        let rep = open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.0").unwrap();
        let pe = Pe::create().unwrap();
        let server = Server::create(&dpu, &rep, &name).unwrap();
        pe.connect_ctx(&server.as_ctx()).unwrap();
        server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
        server.event_msg_recv_register(|_, _| {}).unwrap();
        server.event_connection_register(|_, _| {}, |_, _| {}).unwrap();
        server.as_ctx().start().unwrap();
        let client = Client::create(&open_device_with_pci("b1:00.0", None).unwrap(), &name).unwrap();
        pe.connect_ctx(&client.as_ctx()).unwrap();
        client.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 1).unwrap();
        client.event_msg_recv_register(|_, _| {}).unwrap();
        let _ = client.as_ctx().start();
        run(&pe, "the client", || client.as_ctx().state() == CtxState::Running);
        let server_conn = server.connections().pop().unwrap();
        let client_conn = client.get_connection().unwrap();
        (pe, server, client, server_conn, client_conn)
    }

    /// A started producer of `tasks` send tasks on `conn`, and the statuses its sends
    /// complete with, in order.
    fn recording_producer(
        pe: &Pe,
        conn: &Connection,
        tasks: u32,
    ) -> (crate::Producer, Rc<RefCell<Vec<Result<()>>>>) {
        let producer = crate::Producer::create(conn).unwrap();
        pe.connect_ctx(&producer.as_ctx()).unwrap();
        let sent: Rc<RefCell<Vec<Result<()>>>> = Rc::default();
        let (ok, err) = (sent.clone(), sent.clone());
        producer
            .task_send_set_conf(
                move |t: crate::ProducerSendTask, _, _| ok.borrow_mut().push(t.0.status()),
                move |t: crate::ProducerSendTask, _, _| err.borrow_mut().push(t.0.status()),
                tasks,
            )
            .unwrap();
        producer.as_ctx().start().unwrap();
        (producer, sent)
    }

    /// A started map of `len` bytes of shared memory that producers may write.
    fn shared_map(len: usize) -> Mmap {
        let map = Mmap::create().unwrap();
        map.set_memrange(SharedMem::alloc(len).unwrap()).unwrap();
        map.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE).unwrap();
        map.start().unwrap();
        map
    }

    #[test]
    fn a_malformed_completion_from_the_peer_stops_the_consumer() {
        let (pe, _server, _client, server_conn, client_conn) = connected("malformed-done");
        let map = shared_map(4096);
        let consumer = Consumer::create(&server_conn, &map).unwrap();
        pe.connect_ctx(&consumer.as_ctx()).unwrap();
        let failed: Rc<RefCell<Vec<Result<()>>>> = Rc::default();
        let f = failed.clone();
        consumer
            .task_post_recv_set_conf(
                |_, _, _| panic!("nothing was sent"),
                move |t: PostRecvTask, _, _| f.borrow_mut().push(t.0.status()),
                2,
            )
            .unwrap();
        let _ = consumer.as_ctx().start();
        run(&pe, "the consumer", || consumer.as_ctx().state() == CtxState::Running);
        let inv = Inventory::create(1).unwrap();
        inv.start().unwrap();
        consumer
            .task_post_recv_alloc_init(&inv.buf_get_at(&map, 0, 4096).unwrap())
            .unwrap()
            .submit()
            .unwrap();

        let remote = client_conn.fast().remote.lock().get(&consumer.id()).cloned().expect("registered");
        // More immediate data than a record holds: the record does not decode.
        assert!(remote.lanes.lock().done.push_with(KIND_DONE, DONE_LEN, |b| b.fill(0xff)).unwrap());
        run(&pe, "the consumer to stop", || consumer.as_ctx().state() == CtxState::Idle);
        assert_eq!(*failed.borrow(), vec![Err(Error::Shutdown)]);

        // Withdrawn from the peer: a well-behaved producer there cannot fill the buffer the
        // application got back (the post is still in the ring); its send fails.
        let (producer, sent) = recording_producer(&pe, &client_conn, 1);
        let src = Mmap::create().unwrap();
        src.set_memrange(&b"late"[..]).unwrap();
        src.start().unwrap();
        let inv2 = Inventory::create(1).unwrap();
        inv2.start().unwrap();
        let msg = inv2.buf_get_data_at(&src, 0, 4).unwrap();
        run(&pe, "the peer to hear of it", || !remote.alive.load(Ordering::Acquire));
        match producer.task_send_alloc_init(&msg, consumer.id()) {
            Ok(task) => {
                task.submit().map_err(|r| r.error).unwrap();
                run(&pe, "the send", || !sent.borrow().is_empty());
                assert_eq!(*sent.borrow(), vec![Err(Error::ConnectionAborted)]);
            }
            Err(e) => assert_eq!(e, Error::InvalidValue),
        }
    }
    /// The completion ring of a consumer is full (a consumer side that posts more buffers
    /// than it may and reads no completions; here filled by hand while the consumer's engine
    /// does not run): a send fails with `CONNECTION_ABORTED` before writing anything, and
    /// the consumer is dropped on this side — where it used to copy the data, use up the post
    /// and fail with `UNEXPECTED`, again at every send.
    #[test]
    fn a_full_completion_ring_fails_the_send_unwritten_and_drops_that_consumer() {
        let (pe, _server, _client, server_conn, client_conn) = connected("full-done");
        let map = shared_map(4096);
        let consumer = Consumer::create(&server_conn, &map).unwrap();
        let cpe = Pe::create().unwrap();
        cpe.connect_ctx(&consumer.as_ctx()).unwrap();
        consumer.task_post_recv_set_conf(|_, _, _| {}, |_, _, _| {}, 2).unwrap();
        let _ = consumer.as_ctx().start();
        run(&pe, "the consumer", || {
            cpe.progress();
            consumer.as_ctx().state() == CtxState::Running
        });
        let inv = Inventory::create(2).unwrap();
        inv.start().unwrap();
        let posted = inv.buf_get_at(&map, 0, 4096).unwrap();
        consumer.task_post_recv_alloc_init(&posted).unwrap().submit().unwrap();
        let remote = client_conn.fast().remote.lock().get(&consumer.id()).cloned().expect("registered");
        {
            let lanes = remote.lanes.lock();
            let mut pushed = 0;
            while lanes.done.push_with(KIND_DONE, DONE_LEN, |b| b.fill(0)).unwrap() {
                pushed += 1;
            }
            assert_eq!(pushed, 4, "twice the consumer's tasks");
        }

        let (producer, sent) = recording_producer(&pe, &client_conn, 2);
        let src = Mmap::create().unwrap();
        src.set_memrange(&b"data"[..]).unwrap();
        src.start().unwrap();
        let msg = inv.buf_get_data_at(&src, 0, 4).unwrap();
        producer.task_send_alloc_init(&msg, consumer.id()).unwrap().submit().unwrap();
        run(&pe, "the send", || !sent.borrow().is_empty());
        assert_eq!(*sent.borrow(), vec![Err(Error::ConnectionAborted)]);
        assert!(!remote.alive.load(Ordering::Acquire), "dropped on the producer's side");
        let mut head = [0u8; 4];
        map.access().unwrap().read(0, &mut head).unwrap();
        assert_eq!(head, [0; 4], "nothing written into the posted buffer");
        assert!(remote.lanes.lock().post.peek().is_some(), "the post was not used up");
    }
}
