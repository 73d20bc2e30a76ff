//! What servers and clients share: settings, the send task pool, established links (rings,
//! doorbells, the socket that tells when the peer is gone), message delivery, and the
//! control-plane poll.
//!
//! Busy path: sending writes the message into the peer's receive ring at submit (or, when
//! the ring is full, as soon as it has room, in FIFO order); receiving reads the ring head
//! in progress. Neither makes a syscall unless the other side sleeps (then one doorbell
//! write). Control sockets (new connections, handshakes, a peer closing) are checked with one
//! `epoll_wait(0)` at most every [`CTRL_PERIOD`] while busy (the clock is read every
//! [`CTRL_EVERY`] progress calls), and on the first progress after a wake-up.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::rc::{Rc, Weak};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use doca_core::notify::Doorbell;
use doca_core::{
    bail, fail, CbSlot, CtxCore, CtxState, Data, Dev, Error, Result, TaskId, TaskOwner, TaskPool,
};
use rustix::event::epoll;
use smallvec::SmallVec;

use crate::caps;
use crate::conn::{self, Connection, Counter};
use crate::fast::RemoteConsumer;
use crate::proto::Ctrl;
use crate::transport::ring::Ring;
use crate::transport::{self, Recv};

/// Message kind of an application message in a ring slot.
pub(crate) const KIND_MSG: u32 = 1;
/// Progress calls between two looks at the clock for a control-plane poll while busy.
pub const CTRL_EVERY: u32 = 64;
/// Shortest time between two control-plane polls while busy.
pub const CTRL_PERIOD: std::time::Duration = std::time::Duration::from_micros(500);
/// Messages delivered per connection per progress call, at most.
const RX_BATCH: usize = 64;
/// Default receive queue size when none is set.
pub const DEFAULT_RECV_QUEUE_SIZE: u32 = 64;

/// `doca_cc_event_msg_recv_cb_t`: the message (valid only during the call) and the
/// connection it came on.
pub type MsgRecvCb = dyn FnMut(&[u8], &Connection);
/// `doca_cc_event_consumer_cb_t`: the connection and the remote consumer's id.
pub type ConsumerCb = dyn FnMut(&Connection, u32);

/// The library part of a send task: the message, copied at allocation.
#[derive(Default)]
pub struct SendPayload {
    link: Option<Rc<Link>>,
    len: usize,
    buf: Box<[u8]>,
}

doca_core::task_handle! {
/// `struct doca_cc_task_send`: a control-path message to send. Dropping it frees it.
    pub struct SendTask(SendPayload);
}

impl SendTask {
    /// The connection the message goes to.
    pub fn connection(&self) -> Option<Connection> {
        self.0.with_payload(|p| p.link.as_ref().map(|l| l.conn.clone()))
    }

    /// The message bytes.
    pub fn msg_len(&self) -> usize {
        self.0.with_payload(|p| p.len)
    }
}

/// An established connection as its owner sees it.
pub(crate) struct Link {
    pub(crate) conn: Connection,
    pub(crate) sock: OwnedFd,
    tx: Ring,
    rx: Ring,
    /// Rung when the peer sleeps waiting for messages.
    peer_bell: Doorbell,
    /// Rung when the peer sleeps waiting for room in its send ring.
    peer_room_bell: Doorbell,
    pending: RefCell<VecDeque<TaskId>>,
    /// Set when this side decided to close it (disconnect, stop).
    pub(crate) closing: Cell<bool>,
}

impl Link {
    pub(crate) fn new(
        conn: Connection,
        sock: OwnedFd,
        tx: Ring,
        rx: Ring,
        bells: (Doorbell, Doorbell),
    ) -> Link {
        let (peer_bell, peer_room_bell) = bells;
        Link {
            conn,
            sock,
            tx,
            rx,
            peer_bell,
            peer_room_bell,
            pending: RefCell::new(VecDeque::new()),
            closing: Cell::new(false),
        }
    }

    /// Rings the peer's doorbells when it sleeps waiting for what this side did since the
    /// last check (messages published, slots freed): one fence per batch, not per message.
    fn wake_peer(&self) {
        if self.tx.peer_needs_wakeup() {
            self.peer_bell.ring();
        }
        if self.rx.peer_needs_wakeup() {
            self.peer_room_bell.ring();
        }
    }

    fn write(&self, pool: &TaskPool<SendPayload>, id: TaskId) -> Result<bool> {
        let written = pool.with_payload(id, |p| {
            let len = p.len;
            self.tx
                .push_with(KIND_MSG, len, |dst| dst.copy_from_slice(&p.buf[..len]))
                .map(|ok| ok.then_some(len))
        });
        match written {
            Some(Ok(Some(len))) => {
                self.conn.count(Counter::SentMessages, len);
                Ok(true)
            }
            Some(Ok(None)) => Ok(false),
            Some(Err(e)) => Err(e),
            None => Err(Error::BadState),
        }
    }
}

/// Settings, pool, links and callbacks of a server or client.
pub(crate) struct Common {
    pub(crate) kind: &'static str,
    pub(crate) dev: Dev,
    pub(crate) name: String,
    pub(crate) key: u64,
    pub(crate) max_msg_size: Cell<u32>,
    pub(crate) recv_queue_size: Cell<u32>,
    pub(crate) pool: TaskPool<SendPayload>,
    done: RefCell<VecDeque<(TaskId, Result<()>)>>,
    pub(crate) msg_cb: CbSlot<MsgRecvCb>,
    pub(crate) new_consumer_cb: CbSlot<ConsumerCb>,
    pub(crate) expired_consumer_cb: CbSlot<ConsumerCb>,
    pub(crate) links: RefCell<Vec<Rc<Link>>>,
    pub(crate) bell: RefCell<Option<Doorbell>>,
    ctrl: RefCell<Option<OwnedFd>>,
    tick: Cell<u32>,
    ctrl_due: Cell<bool>,
    last_ctrl: Cell<Instant>,
}

impl Common {
    /// The default (max message size, receive queue size) on `dev`.
    pub(crate) fn default_limits(dev: &Dev) -> Result<(u32, u32)> {
        let info = dev.as_devinfo();
        Ok((caps::max_msg_size(info)?, DEFAULT_RECV_QUEUE_SIZE.min(caps::max_recv_queue_size(info)?)))
    }

    pub(crate) fn new(
        kind: &'static str,
        dev: Dev,
        name: String,
        key: u64,
        owner: Weak<dyn TaskOwner<SendPayload>>,
        (max_msg_size, recv_queue_size): (u32, u32),
    ) -> Common {
        Common {
            kind,
            name,
            key,
            max_msg_size: Cell::new(max_msg_size),
            recv_queue_size: Cell::new(recv_queue_size),
            dev,
            pool: TaskPool::new(owner),
            done: RefCell::new(VecDeque::new()),
            msg_cb: CbSlot::empty(),
            new_consumer_cb: CbSlot::empty(),
            expired_consumer_cb: CbSlot::empty(),
            links: RefCell::new(Vec::new()),
            bell: RefCell::new(None),
            ctrl: RefCell::new(None),
            tick: Cell::new(0),
            ctrl_due: Cell::new(true),
            last_ctrl: Cell::new(Instant::now()),
        }
    }

    pub(crate) fn set_max_msg_size(&self, core: &CtxCore, size: u32) -> Result<()> {
        core.require_idle("set_max_msg_size")?;
        let cap = caps::max_msg_size(self.dev.as_devinfo())?;
        self.set_bounded(&self.max_msg_size, "max message size", size, cap)
    }

    pub(crate) fn set_recv_queue_size(&self, core: &CtxCore, size: u32) -> Result<()> {
        core.require_idle("set_recv_queue_size")?;
        let cap = caps::max_recv_queue_size(self.dev.as_devinfo())?;
        self.set_bounded(&self.recv_queue_size, "receive queue size", size, cap)
    }

    /// Stores `size` in `cell` if it is in `1..=cap`, else `INVALID_VALUE`.
    fn set_bounded(&self, cell: &Cell<u32>, what: &str, size: u32, cap: u32) -> Result<()> {
        if size == 0 || size > cap {
            bail!(
                Error::InvalidValue,
                "{}: {what} {size} outside 1..={cap} (exceeded capability)",
                self.kind
            );
        }
        cell.set(size);
        Ok(())
    }

    pub(crate) fn set_send_conf(
        &self,
        core: &CtxCore,
        completion: impl FnMut(SendTask, Data, Data) + 'static,
        error: impl FnMut(SendTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        let cap = caps::max_send_tasks(self.dev.as_devinfo())?;
        if num_tasks > cap {
            bail!(Error::InvalidValue, "{}: {num_tasks} send tasks exceed the capability {cap}", self.kind);
        }
        let (mut c, mut e) = (completion, error);
        self.pool.set_conf(
            core,
            Box::new(move |t, td, cd| c(SendTask(t), td, cd)),
            Box::new(move |t, td, cd| e(SendTask(t), td, cd)),
            num_tasks,
        )
    }

    /// At start: task slots with message buffers, the doorbell and the control epoll set,
    /// both watched by the progress engine.
    pub(crate) fn prepare(&self, core: &CtxCore) -> Result<()> {
        let max = self.max_msg_size.get() as usize;
        self.pool.prepare(|| SendPayload { link: None, len: 0, buf: vec![0u8; max].into_boxed_slice() });
        self.done.borrow_mut().reserve(self.pool.capacity() as usize);
        if self.bell.borrow().is_none() {
            let bell = Doorbell::new()?;
            let ctrl = epoll::create(epoll::CreateFlags::CLOEXEC)
                .map_err(|e| fail!(Error::OperatingSystem, "epoll_create: {e}"))?;
            core.watch_fd(bell.as_fd())?;
            core.watch_fd(ctrl.as_fd())?;
            *self.bell.borrow_mut() = Some(bell);
            *self.ctrl.borrow_mut() = Some(ctrl);
        }
        self.ctrl_due.set(true);
        Ok(())
    }

    /// The shared part of a server's or client's destroy: `IN_USE` unless Idle; else stops
    /// watching and closes the doorbell and the control set, and forgets the owner key.
    pub(crate) fn release(&self, core: &CtxCore) -> Result<()> {
        if core.state() != CtxState::Idle {
            bail!(Error::InUse, "{} destroy: stop it first (state {:?})", self.kind, core.state());
        }
        if let Some(bell) = self.bell.borrow_mut().take() {
            let _ = core.unwatch_fd(bell.as_fd());
        }
        if let Some(ctrl) = self.ctrl.borrow_mut().take() {
            let _ = core.unwatch_fd(ctrl.as_fd());
        }
        conn::unregister_owner(self.key);
        Ok(())
    }

    pub(crate) fn watch_ctrl(&self, fd: &impl AsFd, token: u64) -> Result<()> {
        let ctrl = self.ctrl.borrow();
        let ctrl = ctrl.as_ref().ok_or(Error::BadState)?;
        epoll::add(ctrl, fd.as_fd(), epoll::EventData::new_u64(token), epoll::EventFlags::IN)
            .map_err(|e| fail!(Error::OperatingSystem, "epoll_ctl(ADD): {e}"))
    }

    pub(crate) fn unwatch_ctrl(&self, fd: &impl AsFd) {
        if let Some(ctrl) = self.ctrl.borrow().as_ref() {
            let _ = epoll::delete(ctrl, fd.as_fd());
        }
    }

    /// Whether this progress call should poll the control plane.
    pub(crate) fn ctrl_turn(&self) -> bool {
        let t = self.tick.get().wrapping_add(1);
        self.tick.set(t);
        if self.ctrl_due.replace(false) {
            return true;
        }
        // Every CTRL_EVERY calls, look at the clock; poll when CTRL_PERIOD has passed. A
        // busy loop thus makes at most one control syscall per period.
        if t % CTRL_EVERY != 0 {
            return false;
        }
        let now = Instant::now();
        if now.duration_since(self.last_ctrl.get()) >= CTRL_PERIOD {
            self.last_ctrl.set(now);
            return true;
        }
        false
    }

    /// Forces a control poll on the next progress.
    pub(crate) fn ctrl_soon(&self) {
        self.ctrl_due.set(true);
    }

    /// Tokens of the control sockets that are readable (one `epoll_wait(0)`).
    pub(crate) fn ctrl_ready(&self) -> SmallVec<[u64; 16]> {
        let mut out = SmallVec::new();
        let ctrl = self.ctrl.borrow();
        let Some(ctrl) = ctrl.as_ref() else { return out };
        let mut events =
            [epoll::Event { flags: epoll::EventFlags::empty(), data: epoll::EventData::new_u64(0) }; 16];
        let zero = rustix::time::Timespec { tv_sec: 0, tv_nsec: 0 };
        if let Ok(n) = epoll::wait(ctrl, &mut events[..], Some(&zero)) {
            out.extend(events[..n].iter().map(|e| e.data.u64()));
        }
        out
    }

    /// `*_task_send_alloc_init`: copies `msg` into a free task. Longer than the max message
    /// size → `INVALID_VALUE`; not a connection of this context → `INVALID_VALUE`; a
    /// connection that is gone → `NOT_CONNECTED`; pool empty → `NO_MEMORY`.
    pub(crate) fn alloc_send(&self, conn: &Connection, msg: &[u8]) -> Result<SendTask> {
        let max = self.max_msg_size.get() as usize;
        if msg.len() > max {
            bail!(Error::InvalidValue, "Msg size larger than maximal msg size ({} > {max})", msg.len());
        }
        let link = self.links.borrow().iter().find(|l| l.conn == *conn).cloned();
        let Some(link) = link else {
            if conn.owner_key() == self.key {
                bail!(Error::NotConnected, "{}: connection #{} is closed", self.kind, conn.id());
            }
            bail!(Error::InvalidValue, "{}: the connection belongs to another server or client", self.kind);
        };
        let task = self.pool.alloc(|p| {
            p.buf[..msg.len()].copy_from_slice(msg);
            p.len = msg.len();
            p.link = Some(link);
            Ok(())
        })?;
        Ok(SendTask(task))
    }

    /// Task submission: write now if the ring has room and nothing waits before it.
    pub(crate) fn submit(&self, id: TaskId) -> Result<()> {
        let link = self.pool.with_payload(id, |p| p.link.clone()).flatten().ok_or(Error::InvalidValue)?;
        if !link.conn.is_connected() || link.closing.get() {
            self.done.borrow_mut().push_back((id, Err(Error::ConnectionReset)));
            return Ok(());
        }
        if link.pending.borrow().is_empty() && link.write(&self.pool, id)? {
            self.done.borrow_mut().push_back((id, Ok(())));
        } else {
            link.pending.borrow_mut().push_back(id);
        }
        Ok(())
    }

    /// Runs the completions queued so far (those the callbacks queue wait for the next call).
    pub(crate) fn deliver_done(&self) -> bool {
        let n = self.done.borrow().len();
        for _ in 0..n {
            let Some((id, status)) = self.done.borrow_mut().pop_front() else { break };
            self.pool.with_payload(id, |p| p.link = None);
            self.pool.complete(id, status);
        }
        n > 0
    }

    /// The busy path: completions, received messages, queued sends.
    pub(crate) fn progress_links(&self) -> bool {
        let mut any = self.deliver_done();
        let mut i = 0;
        loop {
            let link = match self.links.borrow().get(i) {
                Some(l) => l.clone(),
                None => break,
            };
            any |= self.poll_rx(&link);
            if !link.pending.borrow().is_empty() {
                any |= self.push_pending(&link);
            }
            link.wake_peer();
            i += 1;
        }
        any
    }

    /// Delivers up to a batch of received messages of `link` to the msg-recv callback.
    pub(crate) fn poll_rx(&self, link: &Link) -> bool {
        let mut n = 0;
        while n < RX_BATCH {
            let Some(slot) = link.rx.peek() else { break };
            let Some(bytes) = slot.bytes() else {
                tracing::error!(target: "doca_sdk", "{}: corrupt message header from connection #{}: closing it", self.kind, link.conn.id());
                link.closing.set(true);
                self.ctrl_soon();
                break;
            };
            if slot.kind() == KIND_MSG {
                link.conn.count(Counter::RecvMessages, bytes.len());
                if self.msg_cb.call(|cb| cb(bytes, &link.conn)).is_none() {
                    tracing::debug!(target: "doca_sdk", "{}: message dropped: no msg-recv callback registered", self.kind);
                }
            }
            slot.consume();
            n += 1;
        }
        n > 0
    }

    fn push_pending(&self, link: &Link) -> bool {
        let mut any = false;
        loop {
            let Some(id) = link.pending.borrow().front().copied() else { break };
            match link.write(&self.pool, id) {
                Ok(true) => {
                    link.pending.borrow_mut().pop_front();
                    self.done.borrow_mut().push_back((id, Ok(())));
                    any = true;
                }
                Ok(false) => break,
                Err(e) => {
                    link.pending.borrow_mut().pop_front();
                    self.done.borrow_mut().push_back((id, Err(e)));
                    any = true;
                }
            }
        }
        any
    }

    /// Fails every send still waiting on `link` with `status`.
    pub(crate) fn fail_pending(&self, link: &Link, status: Error) {
        let mut pending = link.pending.borrow_mut();
        let mut done = self.done.borrow_mut();
        done.extend(pending.drain(..).map(|id| (id, Err(status))));
    }

    /// Removes `link` (after delivering what it still holds) and marks its connection down.
    pub(crate) fn drop_link(&self, link: &Rc<Link>, status: Error) {
        while self.poll_rx(link) {}
        self.fail_pending(link, status);
        link.conn.mark_down();
        self.unwatch_ctrl(&link.sock);
        self.links.borrow_mut().retain(|l| !Rc::ptr_eq(l, link));
    }

    /// Reads the control packets waiting on `link`'s socket (fast-path bookkeeping) and
    /// queues the consumer events they cause. False when the peer closed the socket.
    pub(crate) fn read_ctrl(&self, link: &Link, events: &mut Vec<(bool, Connection, u32)>) -> bool {
        let fast = link.conn.fast();
        loop {
            let mut buf = [0u8; 128];
            let (len, fds) = match transport::recv(link.sock.as_fd(), &mut buf) {
                Ok(Recv::Empty) => return true,
                Ok(Recv::Closed) | Err(_) => return false,
                Ok(Recv::Packet { len, fds, .. }) => (len, fds),
            };
            match Ctrl::decode(&buf[..len]) {
                Ok(Ctrl::NewConsumer { id, one_copy, mem_offset, mem_len, slots }) => {
                    match RemoteConsumer::open(id, one_copy, mem_offset, mem_len, slots, fds) {
                        Ok(rc) => {
                            fast.remote.lock().insert(id, Arc::new(rc));
                            if let Err(e) = fast.send(&Ctrl::ConsumerAck { id }, &[fast.bell.as_fd()]) {
                                tracing::warn!(target: "doca_sdk", "{}: cannot acknowledge consumer {id}: {e}", self.kind);
                            }
                            events.push((true, link.conn.clone(), id));
                        }
                        Err(e) => {
                            tracing::error!(target: "doca_sdk", "{}: cannot map the peer's consumer {id}: {e}", self.kind)
                        }
                    }
                }
                Ok(Ctrl::ConsumerAck { id }) => {
                    if let Some(lc) = fast.local.lock().get(&id) {
                        if let Some(fd) = fds.into_iter().next() {
                            let _ = lc.peer_bell.set(Doorbell::from_fd(fd));
                        }
                        lc.acked.store(true, Ordering::Release);
                    }
                }
                Ok(Ctrl::ConsumerGone { id }) => {
                    if let Some(rc) = fast.remote.lock().remove(&id) {
                        rc.alive.store(false, Ordering::Release);
                        events.push((false, link.conn.clone(), id));
                    }
                }
                Err(_) => tracing::warn!(
                    target: "doca_sdk",
                    "{}: malformed control packet ({len} bytes) on connection #{}",
                    self.kind,
                    link.conn.id()
                ),
            }
        }
    }

    /// Runs the new- and expired-consumer callbacks.
    pub(crate) fn deliver_consumer_events(&self, events: Vec<(bool, Connection, u32)>) -> bool {
        let any = !events.is_empty();
        for (new, conn, id) in events {
            let slot = if new { &self.new_consumer_cb } else { &self.expired_consumer_cb };
            slot.call(|cb| cb(&conn, id));
        }
        any
    }

    /// Whether completions are queued.
    pub(crate) fn has_done(&self) -> bool {
        !self.done.borrow().is_empty()
    }

    /// Arms every link before the application sleeps; true when work is already waiting.
    pub(crate) fn arm(&self) -> bool {
        let mut ready = self.has_done();
        for link in self.links.borrow().iter() {
            link.wake_peer();
            ready |= link.rx.arm_for_data();
            if !link.pending.borrow().is_empty() {
                ready |= link.tx.arm_for_room();
            }
        }
        ready
    }

    /// After waking: disarm, silence the doorbell, poll the control plane next.
    pub(crate) fn disarm(&self) {
        for link in self.links.borrow().iter() {
            link.rx.disarm_data();
            link.tx.disarm_room();
        }
        if let Some(bell) = self.bell.borrow().as_ref() {
            bell.drain();
        }
        self.ctrl_soon();
    }

    /// The doorbell fd to give the peer.
    pub(crate) fn with_bell<R>(&self, f: impl FnOnce(&Doorbell) -> R) -> Result<R> {
        match self.bell.borrow().as_ref() {
            Some(b) => Ok(f(b)),
            None => Err(fail!(Error::BadState, "{}: not started", self.kind)),
        }
    }
}

/// The calls servers and clients share, named after DOCA's `doca_cc_server_*` and
/// `doca_cc_client_*` (one definition for both).
macro_rules! endpoint_api {
    ($ty:ident, $c:literal) => {
        impl $ty {
            #[doc = concat!("`doca_cc_", $c, "_as_ctx`.")]
            pub fn as_ctx(&self) -> doca_core::Ctx {
                doca_core::Ctx::from(self.ctx.clone())
            }

            #[doc = concat!("`doca_cc_", $c, "_set_max_msg_size`: Idle only; 0 or above the capability → ")]
            #[doc = "`INVALID_VALUE`. Server and client must use the same size."]
            pub fn set_max_msg_size(&self, size: u32) -> doca_core::Result<()> {
                self.ops().common.set_max_msg_size(self.core(), size)
            }

            #[doc = concat!("`doca_cc_", $c, "_get_max_msg_size`.")]
            pub fn max_msg_size(&self) -> u32 {
                self.ops().common.max_msg_size.get()
            }

            #[doc = concat!("`doca_cc_", $c, "_set_recv_queue_size`: messages the peer can queue to this side ")]
            #[doc = "before its sends wait. Idle only; 0 or above the capability → `INVALID_VALUE`."]
            pub fn set_recv_queue_size(&self, size: u32) -> doca_core::Result<()> {
                self.ops().common.set_recv_queue_size(self.core(), size)
            }

            #[doc = concat!("`doca_cc_", $c, "_get_recv_queue_size`.")]
            pub fn recv_queue_size(&self) -> u32 {
                self.ops().common.recv_queue_size.get()
            }

            #[doc = concat!("`doca_cc_", $c, "_get_device`.")]
            pub fn device(&self) -> doca_core::Dev {
                self.ops().common.dev.clone()
            }

            #[doc = concat!("`doca_cc_", $c, "_task_send_set_conf`: Idle only; more than the capability → ")]
            #[doc = "`INVALID_VALUE`."]
            pub fn task_send_set_conf(
                &self,
                completion: impl FnMut($crate::SendTask, doca_core::Data, doca_core::Data) + 'static,
                error: impl FnMut($crate::SendTask, doca_core::Data, doca_core::Data) + 'static,
                num_send_tasks: u32,
            ) -> doca_core::Result<()> {
                self.ops().common.set_send_conf(self.core(), completion, error, num_send_tasks)
            }

            #[doc = concat!("`doca_cc_", $c, "_task_send_alloc_init`: a task sending `msg` (copied) on `peer`.")]
            pub fn task_send_alloc_init(
                &self,
                peer: &$crate::Connection,
                msg: &[u8],
            ) -> doca_core::Result<$crate::SendTask> {
                self.ops().common.alloc_send(peer, msg)
            }

            #[doc = concat!("`doca_cc_", $c, "_event_msg_recv_register`: Idle only.")]
            pub fn event_msg_recv_register(
                &self,
                cb: impl FnMut(&[u8], &$crate::Connection) + 'static,
            ) -> doca_core::Result<()> {
                self.core().require_idle("event_msg_recv_register")?;
                self.ops().common.msg_cb.set(Box::new(cb));
                Ok(())
            }

            #[doc = concat!("`doca_cc_", $c, "_event_consumer_register`: the peer's new and expired consumers. Idle only.")]
            pub fn event_consumer_register(
                &self,
                new_consumer: impl FnMut(&$crate::Connection, u32) + 'static,
                expired_consumer: impl FnMut(&$crate::Connection, u32) + 'static,
            ) -> doca_core::Result<()> {
                self.core().require_idle("event_consumer_register")?;
                self.ops().common.new_consumer_cb.set(Box::new(new_consumer));
                self.ops().common.expired_consumer_cb.set(Box::new(expired_consumer));
                Ok(())
            }
        }
    };
}
pub(crate) use endpoint_api;
