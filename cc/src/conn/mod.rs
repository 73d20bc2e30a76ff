//! `doca_cc_connection`: one established link between a server and a client, as a handle
//! that any thread may hold (producers and consumers run on other threads' engines), with
//! the connection's fast-path registry (`registry`) that they share.
//!
//! The connection's life is the owner's [`crate::proto::state::ConnState`]; this handle
//! mirrors it as one flag ([`Connection::is_connected`]) that every thread can read.
//! [`Connection::server`] and [`Connection::client`] find the owning context through an
//! owner slot that only the owner's thread can read.

use doca_link::discard::PeerFd;
use std::any::Any;
use std::fmt;
use std::rc::{Rc, Weak};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use doca_core::{Data, Dev, Error, Result};
use parking_lot::Mutex;

mod owner;
pub(crate) mod registry;

pub(crate) use owner::ThreadBound;
pub(crate) use registry::Registry;

use crate::transport::budget::ConnBudget;
use crate::transport::ring::Signal;

/// `enum doca_cc_counter`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum Counter {
    /// `DOCA_CC_COUNTER_SENT_MESSAGES` (1).
    SentMessages = 1,
    /// `DOCA_CC_COUNTER_SENT_BYTES` (2).
    SentBytes = 2,
    /// `DOCA_CC_COUNTER_RECV_MESSAGES` (3).
    RecvMessages = 3,
    /// `DOCA_CC_COUNTER_RECV_BYTES` (4).
    RecvBytes = 4,
}

/// Fast-path counters of one side of a connection ([`crate::Connection::fast_path_stats`]):
/// proof of which copy path the data took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastPathStats {
    /// Producer sends written straight into the consumer's memory (exactly one copy).
    pub one_copy_sends: u64,
    /// Producer sends written into a consumer's shadow (the fallback for memory that is not
    /// from the shared allocator).
    pub staged_sends: u64,
    /// Copies consumers made from their shadow into their memory (the fallback's second copy).
    pub staged_copies: u64,
    /// Payload bytes producers wrote.
    pub bytes: u64,
}

/// Who owns a connection: its side's context, and the connection's key in its table.
pub(crate) struct Owner {
    /// The owning server or client context (a `CtxCell`; this module stays below the
    /// control path's, which knows its type), readable on its thread only.
    pub(crate) ctx: ThreadBound<Weak<dyn Any>>,
    /// The connection's key in its owner's table of links.
    pub(crate) key: usize,
    /// Identifies the owning context (its address) for error messages and checks.
    pub(crate) side: usize,
}

pub(crate) struct ConnInner {
    id: u64,
    is_server: bool,
    pub(crate) owner: Owner,
    user_data: AtomicU64,
    live: AtomicBool,
    /// Whether it is in its owner's table of links (written on the owner's thread only, where
    /// it is read too: a send's allocation checks it instead of looking in the table).
    listed: AtomicBool,
    /// This process's fault plan cut it (`link.drop`).
    cut_by_plan: AtomicBool,
    counters: [AtomicU64; 4],
    snapshot: Mutex<[u64; 4]>,
    peer_pid: i32,
    /// The other side's process identity, where a budget was opened for it.
    peer_id: Option<doca_link::budget::PeerId>,
    dev: Dev,
    fast: Registry,
}

/// `struct doca_cc_connection`: a handle to one connection. Cloning gives another handle to
/// the same connection. `Send + Sync`, so producers and consumers on other threads can use
/// it.
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// # use doca_cc::{Client, Connection, Counter, Server};
/// # use doca_core::{open_device_rep_with_pci, open_device_with_pci, CtxState, Pe, RepFilter};
/// # let name = format!("doc-conn-{}", std::process::id());
/// # let dpu = open_device_with_pci("03:00.0", None)?;
/// # let rep = open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.0")?;
/// # let server = Server::create(&dpu, &rep, &name)?;
/// # let pe = Pe::create()?;
/// # pe.connect_ctx(&server.as_ctx())?;
/// # server.event_msg_recv_register(|_, _| {})?;
/// # server.event_connection_register(|_, _| {}, |_, _| {})?;
/// # server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4)?;
/// # server.as_ctx().start()?;
/// # let client = Client::create(&open_device_with_pci("b1:00.0", None)?, &name)?;
/// # pe.connect_ctx(&client.as_ctx())?;
/// # client.event_msg_recv_register(|_, _| {})?;
/// # client.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4)?;
/// # let _ = client.as_ctx().start();
/// # for _ in 0..1_000_000 { if client.as_ctx().state() == CtxState::Running { break } pe.progress(); }
/// let conn: Connection = client.get_connection()?;
/// conn.set_user_data(doca_core::Data::from_u64(7));
/// assert!(conn.client().is_ok() && conn.server().is_err());
/// conn.update_info()?; // a snapshot of the counters
/// assert_eq!(conn.counter(Counter::SentMessages), 0);
/// # Ok::<(), doca_core::Error>(())
/// ```
#[derive(Clone)]
pub struct Connection {
    pub(crate) inner: Arc<ConnInner>,
}

impl PartialEq for Connection {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}
impl Eq for Connection {}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Connection(#{} {} peer pid {}{})",
            self.inner.id,
            if self.inner.is_server { "server side" } else { "client side" },
            self.inner.peer_pid,
            if self.is_connected() { "" } else { ", disconnected" }
        )
    }
}

impl Connection {
    /// A connection that is up, owned by `owner`. `sock` is its socket (shared) for
    /// fast-path control packets from any thread, with the signal that announces them;
    /// `budget` what the connection holds of its peer process's budget.
    pub(crate) fn new(
        id: u64,
        is_server: bool,
        owner: Owner,
        (peer_pid, budget): (i32, Option<ConnBudget>),
        dev: Dev,
        sock: Option<(std::sync::Arc<PeerFd>, Signal)>,
    ) -> Result<Connection> {
        Ok(Connection {
            inner: Arc::new(ConnInner {
                id,
                is_server,
                owner,
                user_data: AtomicU64::new(0),
                live: AtomicBool::new(sock.is_some()),
                listed: AtomicBool::new(false),
                cut_by_plan: AtomicBool::new(false),
                counters: Default::default(),
                snapshot: Mutex::new([0; 4]),
                peer_pid,
                peer_id: budget.as_ref().map(|b| b.account().peer()),
                fast: Registry::new(
                    is_server,
                    sock,
                    budget,
                    (
                        crate::caps::get(dev.as_devinfo(), &crate::caps::MAX_CONSUMERS)?,
                        crate::caps::get(dev.as_devinfo(), &crate::caps::MAX_FAST_PATH_TASKS)?,
                    ),
                )?,
                dev,
            }),
        })
    }

    /// The device of the side holding this handle.
    pub fn dev(&self) -> &Dev {
        &self.inner.dev
    }

    pub(crate) fn fast(&self) -> &Registry {
        &self.inner.fast
    }

    /// `doca_cc_connection_set_user_data`.
    pub fn set_user_data(&self, data: Data) {
        self.inner.user_data.store(data.as_u64(), Ordering::Relaxed);
    }

    /// `doca_cc_connection_get_user_data`.
    pub fn user_data(&self) -> Data {
        Data::from_u64(self.inner.user_data.load(Ordering::Relaxed))
    }

    /// Whether this is the server's end of the connection.
    pub fn is_server_side(&self) -> bool {
        self.inner.is_server
    }

    /// The owning context, for [`Connection::server`] and [`Connection::client`]: a
    /// connection of the other role → `INVALID_VALUE`; called off the owner's thread →
    /// `NOT_PERMITTED` (logged); the owner let the connection go → `NOT_FOUND`.
    #[inline]
    pub(crate) fn owner_ctx(&self, server: bool, what: &str) -> Result<Rc<dyn Any>> {
        if self.inner.is_server != server {
            return Err(Error::InvalidValue);
        }
        match self.inner.owner.ctx.with(Weak::upgrade) {
            Ok(found) => found.ok_or(Error::NotFound),
            Err(Error::NotPermitted) => Err(doca_core::fail!(
                Error::NotPermitted,
                "{what}: called off the thread of the progress engine that owns connection #{}",
                self.inner.id
            )),
            Err(e) => Err(e),
        }
    }

    /// The server's id for this connection (the same on both sides).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Whether the link is up (false once either side disconnected or died).
    pub fn is_connected(&self) -> bool {
        self.inner.live.load(Ordering::Acquire)
    }

    /// Whether this process's fault plan cut the connection (`link.drop`), not the peer.
    pub fn cut_by_fault_plan(&self) -> bool {
        self.inner.cut_by_plan.load(Ordering::Acquire)
    }

    /// Records that this process's fault plan cut the connection.
    pub(crate) fn mark_cut_by_fault_plan(&self) {
        self.inner.cut_by_plan.store(true, Ordering::Release);
    }

    /// Process id of the other side.
    pub fn peer_pid(&self) -> i32 {
        self.inner.peer_pid
    }

    /// The other side's process identity (what budgets and places count), where known.
    pub fn peer_id(&self) -> Option<doca_link::budget::PeerId> {
        self.inner.peer_id
    }

    /// `doca_cc_connection_update_info`: takes a snapshot of the counters for
    /// [`Connection::counter`]. A disconnected connection still snapshots, then answers
    /// `CONNECTION_ABORTED`.
    pub fn update_info(&self) -> Result<()> {
        let mut snap = self.inner.snapshot.lock();
        for (s, c) in snap.iter_mut().zip(&self.inner.counters) {
            *s = c.load(Ordering::Relaxed);
        }
        if self.is_connected() {
            Ok(())
        } else {
            Err(Error::ConnectionAborted)
        }
    }

    /// `doca_cc_connection_get_counter`: the value at the last [`Connection::update_info`].
    pub fn counter(&self, counter: Counter) -> u64 {
        self.inner.snapshot.lock()[counter as usize - 1]
    }

    /// The fast-path counters of this side of the connection (an extension): which copy
    /// path its producers' data took, and how much.
    pub fn fast_path_stats(&self) -> FastPathStats {
        self.inner.fast.stats()
    }

    pub(crate) fn count(&self, counter: Counter, bytes: usize) {
        let (msgs, b) = match counter {
            Counter::SentMessages | Counter::SentBytes => (0, 1),
            Counter::RecvMessages | Counter::RecvBytes => (2, 3),
        };
        // One writer per counter (the owner's thread): a relaxed load and store suffice.
        let m = &self.inner.counters[msgs];
        m.store(m.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        let c = &self.inner.counters[b];
        c.store(c.load(Ordering::Relaxed) + bytes as u64, Ordering::Relaxed);
    }

    /// The connection is down for every thread; the peer's consumers are gone with it.
    pub(crate) fn mark_down(&self) {
        self.inner.live.store(false, Ordering::Release);
        self.inner.fast.shut();
    }

    /// The owner lets the connection go (on its thread): handles still held elsewhere no
    /// longer reach the owner.
    pub(crate) fn release_owner(&self) {
        self.inner.owner.ctx.clear();
    }

    /// The connection's key in its owner's table.
    pub(crate) fn key(&self) -> usize {
        self.inner.owner.key
    }

    /// Identifies the owning context.
    pub(crate) fn side(&self) -> usize {
        self.inner.owner.side
    }

    /// Whether it is in its owner's table of links (the owner's thread).
    pub(crate) fn is_listed(&self) -> bool {
        self.inner.listed.load(Ordering::Relaxed)
    }

    /// Records whether it is in its owner's table of links (the owner's thread).
    pub(crate) fn set_listed(&self, listed: bool) {
        self.inner.listed.store(listed, Ordering::Relaxed);
    }
}
