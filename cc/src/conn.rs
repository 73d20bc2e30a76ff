//! `doca_cc_connection`: one established link between a server and a client.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::rc::Weak;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;

use doca_core::{CtxCell, Data, Dev, Error, Result};
use parking_lot::Mutex;

use crate::client::{Client, ClientOps};
use crate::fast::FastConn;
use crate::server::{Server, ServerOps};

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

#[derive(Clone)]
pub(crate) enum OwnerRef {
    Server(Weak<CtxCell<ServerOps>>),
    Client(Weak<CtxCell<ClientOps>>),
}

thread_local! {
    /// Contexts of this thread that own connections, by key: how a connection (which is
    /// `Send + Sync`) finds its server or client on the owner's thread.
    static OWNERS: RefCell<HashMap<u64, OwnerRef>> = RefCell::new(HashMap::new());
}

pub(crate) fn register_owner(key: u64, owner: OwnerRef) {
    OWNERS.with(|o| o.borrow_mut().insert(key, owner));
}

pub(crate) fn unregister_owner(key: u64) {
    let _ = OWNERS.try_with(|o| o.borrow_mut().remove(&key));
}

fn owner(key: u64) -> Option<OwnerRef> {
    OWNERS.with(|o| o.borrow().get(&key).cloned())
}

/// A fresh key for a context that owns connections.
pub(crate) fn new_owner_key() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

pub(crate) struct ConnInner {
    pub(crate) id: u64,
    owner_key: u64,
    owner_thread: ThreadId,
    is_server: bool,
    user_data: AtomicU64,
    live: AtomicBool,
    counters: [AtomicU64; 4],
    snapshot: Mutex<[u64; 4]>,
    peer_pid: i32,
    dev: Dev,
    fast: FastConn,
}

/// `struct doca_cc_connection`: a handle to one established connection. Cloning gives
/// another handle to the same connection. `Send + Sync`, so producers and consumers on other
/// threads can use it.
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
    pub(crate) fn new(
        id: u64,
        owner_key: u64,
        is_server: bool,
        peer_pid: i32,
        dev: Dev,
    ) -> Result<Connection> {
        Ok(Connection {
            inner: Arc::new(ConnInner {
                id,
                owner_key,
                owner_thread: std::thread::current().id(),
                is_server,
                user_data: AtomicU64::new(0),
                live: AtomicBool::new(true),
                counters: Default::default(),
                snapshot: Mutex::new([0; 4]),
                peer_pid,
                dev,
                fast: FastConn::new(is_server)?,
            }),
        })
    }

    /// The device of the side holding this handle.
    pub fn dev(&self) -> &Dev {
        &self.inner.dev
    }

    pub(crate) fn fast(&self) -> &FastConn {
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

    /// `doca_cc_server_get_server_ctx`: the server this connection belongs to; `None` for a
    /// client's connection, or when called off the server's thread.
    pub fn server(&self) -> Option<Server> {
        if !self.inner.is_server || std::thread::current().id() != self.inner.owner_thread {
            return None;
        }
        match owner(self.inner.owner_key)? {
            OwnerRef::Server(w) => w.upgrade().map(Server::from_rc),
            OwnerRef::Client(_) => None,
        }
    }

    /// `doca_cc_client_get_client_ctx`: the client this connection belongs to; `None` for a
    /// server's connection, or when called off the client's thread.
    pub fn client(&self) -> Option<Client> {
        if self.inner.is_server || std::thread::current().id() != self.inner.owner_thread {
            return None;
        }
        match owner(self.inner.owner_key)? {
            OwnerRef::Client(w) => w.upgrade().map(Client::from_rc),
            OwnerRef::Server(_) => None,
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

    /// Process id of the other side.
    pub fn peer_pid(&self) -> i32 {
        self.inner.peer_pid
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

    pub(crate) fn mark_down(&self) {
        self.inner.live.store(false, Ordering::Release);
        self.inner.fast.shut();
    }

    pub(crate) fn owner_key(&self) -> u64 {
        self.inner.owner_key
    }
}
