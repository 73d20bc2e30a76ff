//! `doca_cc_server`: listens on a DPU device for the clients of one host function.
//!
//! Start is synchronous (Running at once); the server then accepts clients whenever they
//! come. Each accepted client is a [`Connection`] announced by the connection callback;
//! a client that leaves (stops, disconnects, dies) is announced by the disconnection
//! callback after its last messages were delivered. A handshake that fails for a reason the
//! client can fix (a max message size that does not match, too many clients) is announced
//! as an unsuccessful connection; garbage, truncated handshakes, other protocol versions and
//! other users' processes are dropped with a log line. Stopping closes every connection.

use std::cell::{Cell, RefCell};
use std::os::fd::{AsFd, OwnedFd};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use doca_core::notify::Doorbell;
use doca_core::{
    bail, CbSlot, CtxCell, CtxCore, CtxOps, CtxState, Dev, DevRep, Error, Refused, Result, Started, TaskId,
    TaskLib, TaskOwner, TaskPool,
};

use crate::caps;
use crate::conn::{self, Connection, OwnerRef};
use crate::endpoint::{Common, Link, SendPayload};
use crate::proto::{self, Hello, PeerKind, Reply};
use crate::transport::ring::{self, Area, End, Ring};
use crate::transport::{self, Listener, Recv};

/// `doca_cc_event_connection_status_changed_cb_t`: the connection and whether the change
/// (connect or disconnect) succeeded.
pub type ConnectionCb = dyn FnMut(&Connection, bool);

/// How long an accepted socket may take to send its handshake.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);
const LISTENER_TOKEN: u64 = 0;

struct Handshake {
    sock: OwnedFd,
    id: u64,
    pid: i32,
    since: Instant,
}

pub(crate) struct ServerOps {
    common: Common,
    rep: DevRep,
    listener: RefCell<Option<Listener>>,
    handshakes: RefCell<Vec<Handshake>>,
    connect_cb: CbSlot<ConnectionCb>,
    disconnect_cb: CbSlot<ConnectionCb>,
    next_id: Cell<u64>,
}

/// `struct doca_cc_server`.
pub struct Server {
    ctx: Rc<CtxCell<ServerOps>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Server({:?} on {:?}, {:?})",
            self.ops().common.name,
            self.ops().rep,
            self.ctx.core().state()
        )
    }
}

impl Server {
    pub(crate) fn from_rc(ctx: Rc<CtxCell<ServerOps>>) -> Server {
        Server { ctx }
    }

    fn ops(&self) -> &ServerOps {
        self.ctx.ops()
    }

    fn core(&self) -> &CtxCore {
        self.ctx.core()
    }

    /// `doca_cc_server_create`: a server named `name` on DPU device `dev` for the host
    /// function `rep` stands for. A host device → `NOT_SUPPORTED`; a representor of another
    /// device or a bad name → `INVALID_VALUE`.
    pub fn create(dev: &Dev, rep: &DevRep, name: &str) -> Result<Server> {
        if caps::server_is_supported(dev.as_devinfo()).is_err() {
            bail!(
                Error::NotSupported,
                "cc server on {dev:?}: servers run on the DPU device, not a host function"
            );
        }
        if rep.dev() != dev {
            bail!(Error::InvalidValue, "cc server: {rep:?} is not a representor of {dev:?}");
        }
        caps::check_name(dev.as_devinfo(), name)?;
        let key = conn::new_owner_key();
        let limits = Common::default_limits(dev)?;
        let ctx = CtxCell::new(|weak: &Weak<CtxCell<ServerOps>>| {
            let owner: Weak<dyn TaskOwner<SendPayload>> = weak.clone();
            ServerOps {
                common: Common::new("cc_server", dev.clone(), name.to_string(), key, owner, limits),
                rep: rep.clone(),
                listener: RefCell::new(None),
                handshakes: RefCell::new(Vec::new()),
                connect_cb: CbSlot::empty(),
                disconnect_cb: CbSlot::empty(),
                next_id: Cell::new(1),
            }
        });
        conn::register_owner(key, OwnerRef::Server(Rc::downgrade(&ctx)));
        Ok(Server { ctx })
    }

    /// `doca_cc_server_destroy`: Idle only (`IN_USE`, and the server back).
    pub fn destroy(self) -> Result<(), Refused<Server>> {
        if let Err(e) = self.ops().common.release(self.core()) {
            return Err(Refused::new(e, self));
        }
        self.core().destroy().map_err(|e| Refused::new(e, Server { ctx: self.ctx.clone() }))
    }

    /// `doca_cc_server_get_device_repr`.
    pub fn device_rep(&self) -> DevRep {
        self.ops().rep.clone()
    }

    /// The server name.
    pub fn name(&self) -> &str {
        &self.ops().common.name
    }

    /// `doca_cc_server_event_connection_register`: Idle only.
    pub fn event_connection_register(
        &self,
        connect: impl FnMut(&Connection, bool) + 'static,
        disconnect: impl FnMut(&Connection, bool) + 'static,
    ) -> Result<()> {
        self.core().require_idle("event_connection_register")?;
        self.ops().connect_cb.set(Box::new(connect));
        self.ops().disconnect_cb.set(Box::new(disconnect));
        Ok(())
    }

    /// `doca_comch_server_disconnect` (comch era): closes the connection; its pending sends
    /// fail and the disconnection callback follows on the next progress. Not a connection of
    /// this server → `NOT_FOUND`.
    pub fn disconnect(&self, conn: &Connection) -> Result<()> {
        let common = &self.ops().common;
        let links = common.links.borrow();
        let Some(link) = links.iter().find(|l| l.conn == *conn) else {
            bail!(Error::NotFound, "cc server disconnect: not a live connection of this server");
        };
        link.closing.set(true);
        common.ctrl_soon();
        Ok(())
    }

    /// The connections currently established (an extension: DOCA reports them only
    /// through the connection callback).
    pub fn connections(&self) -> Vec<Connection> {
        self.ops().common.links.borrow().iter().map(|l| l.conn.clone()).collect()
    }

    /// Connections currently established.
    pub fn num_connections(&self) -> usize {
        self.ops().common.links.borrow().len()
    }
}

impl ServerOps {
    fn next_id(&self) -> u64 {
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        id
    }

    fn accept_all(&self) -> Result<()> {
        loop {
            let sock = match self.listener.borrow().as_ref() {
                Some(l) => l.accept()?,
                None => return Ok(()),
            };
            let Some(sock) = sock else { return Ok(()) };
            let (uid, pid) = match transport::peer_uid(sock.as_fd()) {
                Ok(c) => c,
                Err(_) => continue,
            };
            if uid != rustix::process::getuid().as_raw() {
                tracing::warn!(target: "doca_sdk", "cc_server {:?}: dropped a connection from pid {pid} of another user (uid {uid})", self.common.name);
                continue;
            }
            let id = self.next_id();
            self.common.watch_ctrl(&sock, id)?;
            self.handshakes.borrow_mut().push(Handshake { sock, id, pid, since: Instant::now() });
        }
    }

    /// Reads a handshake; returns the event to report (connection, success) if any.
    fn handshake(&self, hs: Handshake) -> Option<(Connection, bool)> {
        let name = &self.common.name;
        let mut buf = [0u8; 512];
        let (len, truncated, fds) = match transport::recv(hs.sock.as_fd(), &mut buf) {
            Ok(Recv::Empty) => {
                self.handshakes.borrow_mut().push(hs);
                return None;
            }
            Ok(Recv::Closed) | Err(_) => {
                tracing::debug!(target: "doca_sdk", "cc_server {name:?}: pid {} left before its handshake", hs.pid);
                self.common.unwatch_ctrl(&hs.sock);
                return None;
            }
            Ok(Recv::Packet { len, truncated, fds }) => (len, truncated, fds),
        };
        self.common.unwatch_ctrl(&hs.sock);
        let refuse = |code: Error| {
            let _ = transport::send(hs.sock.as_fd(), &Reply::refuse(code).encode(), &[]);
        };
        let hello = match Hello::decode(&buf[..len]) {
            _ if truncated => {
                tracing::warn!(target: "doca_sdk", "cc_server {name:?}: dropped pid {}: oversized handshake", hs.pid);
                return None;
            }
            Ok(h) if fds.len() == 2 => h,
            Ok(_) => {
                tracing::warn!(target: "doca_sdk", "cc_server {name:?}: dropped pid {}: handshake without its doorbell", hs.pid);
                return None;
            }
            Err(Error::UnsupportedVersion) => {
                tracing::warn!(
                    target: "doca_sdk",
                    "cc_server {name:?}: dropped pid {}: protocol version {:?}, this side speaks {}",
                    hs.pid,
                    proto::version_of(&buf[..len]).ok(),
                    proto::VERSION
                );
                refuse(Error::UnsupportedVersion);
                return None;
            }
            Err(_) => {
                tracing::warn!(target: "doca_sdk", "cc_server {name:?}: dropped pid {}: malformed handshake ({len} bytes)", hs.pid);
                return None;
            }
        };
        let failed = |code: Error, why: String| {
            tracing::error!(target: "doca_sdk", "cc_server {name:?}: refused pid {}: {why}", hs.pid);
            refuse(code);
            let c = Connection::new(hs.id, self.common.key, true, hs.pid, self.common.dev.clone()).ok()?;
            c.mark_down();
            Some((c, false))
        };
        if hello.kind != PeerKind::Client {
            refuse(Error::NotSupported);
            return None;
        }
        if hello.name != *name {
            refuse(Error::NotFound);
            return None;
        }
        let max = self.common.max_msg_size.get();
        if hello.max_msg_size != max {
            return failed(
                Error::InvalidValue,
                format!("max message size {} does not match the server's {max}", hello.max_msg_size),
            );
        }
        let info = self.common.dev.as_devinfo();
        let max_clients = caps::max_clients(info).unwrap_or(0) as usize;
        if self.common.links.borrow().len() >= max_clients {
            return failed(
                Error::Full,
                format!("the server already has its maximum of {max_clients} clients"),
            );
        }
        let max_q = caps::max_recv_queue_size(info).unwrap_or(0);
        if hello.recv_queue_size == 0 || hello.recv_queue_size > max_q {
            return failed(
                Error::InvalidValue,
                format!("client receive queue size {} outside 1..={max_q}", hello.recv_queue_size),
            );
        }
        match self.establish(hs, &hello, fds) {
            Ok(conn) => Some((conn, true)),
            Err((e, id, pid)) => {
                tracing::error!(target: "doca_sdk", "cc_server {name:?}: connection from pid {pid} failed: {e}");
                let c = Connection::new(id, self.common.key, true, pid, self.common.dev.clone()).ok()?;
                c.mark_down();
                Some((c, false))
            }
        }
    }

    fn establish(
        &self,
        hs: Handshake,
        hello: &Hello,
        mut fds: Vec<OwnedFd>,
    ) -> Result<Connection, (Error, u64, i32)> {
        let (id, pid) = (hs.id, hs.pid);
        let fail = |e: Error| (e, id, pid);
        let max = self.common.max_msg_size.get() as usize;
        let (sq, cq) = (self.common.recv_queue_size.get(), hello.recv_queue_size);
        let c2s_len = ring::ring_bytes(sq, max);
        let seg_len = c2s_len + ring::ring_bytes(cq, max);
        let area = Area::create("doca-cc-conn", seg_len).map_err(fail)?;
        Ring::init(&area, 0, sq, max).map_err(fail)?;
        Ring::init(&area, c2s_len, cq, max).map_err(fail)?;
        let rx = Ring::attach(&area, 0, sq, max, End::Consumer).map_err(fail)?;
        let tx = Ring::attach(&area, c2s_len, cq, max, End::Producer).map_err(fail)?;
        let reply = Reply {
            status: 0,
            conn_id: id,
            server_recv_queue: sq,
            max_msg_size: max as u32,
            segment_len: seg_len as u64,
            c2s_offset: 0,
            s2c_offset: c2s_len as u64,
        };
        self.common
            .with_bell(|bell| {
                transport::send(hs.sock.as_fd(), &reply.encode(), &[area.as_fd(), bell.as_fd(), bell.as_fd()])
            })
            .and_then(|r| r)
            .map_err(fail)?;
        let conn = Connection::new(id, self.common.key, true, pid, self.common.dev.clone()).map_err(fail)?;
        conn.fast().set_socket(hs.sock.as_fd());
        let peer_bell = Doorbell::from_fd(fds.remove(0));
        let peer_room_bell = Doorbell::from_fd(fds.remove(0));
        self.common.watch_ctrl(&hs.sock, id).map_err(fail)?;
        let link = Rc::new(Link::new(conn.clone(), hs.sock, tx, rx, (peer_bell, peer_room_bell)));
        self.common.links.borrow_mut().push(link);
        tracing::debug!(target: "doca_sdk", "cc_server {:?}: connection #{id} from pid {pid}", self.common.name);
        Ok(conn)
    }

    fn ctrl_poll(&self) -> bool {
        let mut any = false;
        let mut events: Vec<(Connection, bool, bool)> = Vec::new();
        let mut consumer_events = Vec::new();
        for token in self.common.ctrl_ready() {
            if token == LISTENER_TOKEN {
                if let Err(e) = self.accept_all() {
                    tracing::error!(target: "doca_sdk", "cc_server {:?}: accept failed: {e}", self.common.name);
                }
                continue;
            }
            let hs = {
                let mut hss = self.handshakes.borrow_mut();
                hss.iter().position(|h| h.id == token).map(|i| hss.swap_remove(i))
            };
            if let Some(hs) = hs {
                if let Some((conn, ok)) = self.handshake(hs) {
                    events.push((conn, true, ok));
                }
                continue;
            }
            let link = self.common.links.borrow().iter().find(|l| l.conn.id() == token).cloned();
            if let Some(link) = link {
                if !self.common.read_ctrl(&link, &mut consumer_events) {
                    link.closing.set(true);
                }
            }
        }
        // Handshakes that never came.
        let now = Instant::now();
        self.handshakes.borrow_mut().retain(|h| {
            let alive = now.duration_since(h.since) < HANDSHAKE_DEADLINE;
            if !alive {
                tracing::warn!(target: "doca_sdk", "cc_server {:?}: dropped pid {}: no handshake within {HANDSHAKE_DEADLINE:?}", self.common.name, h.pid);
                self.common.unwatch_ctrl(&h.sock);
            }
            alive
        });
        // Connections that ended: deliver what they hold, then report.
        let closing: Vec<Rc<Link>> =
            self.common.links.borrow().iter().filter(|l| l.closing.get()).cloned().collect();
        for link in closing {
            let _ = rustix::net::shutdown(&link.sock, rustix::net::Shutdown::Both);
            self.common.drop_link(&link, Error::ConnectionReset);
            tracing::debug!(target: "doca_sdk", "cc_server {:?}: connection #{} closed", self.common.name, link.conn.id());
            events.push((link.conn.clone(), false, true));
        }
        any |= self.common.deliver_consumer_events(consumer_events);
        for (conn, connected, ok) in events {
            any = true;
            let slot = if connected { &self.connect_cb } else { &self.disconnect_cb };
            slot.call(|cb| cb(&conn, ok));
        }
        any
    }
}

crate::endpoint::endpoint_api!(Server, "server");

impl CtxOps for ServerOps {
    fn kind(&self) -> &'static str {
        "cc_server"
    }

    fn start(&self, core: &CtxCore) -> Result<Started> {
        self.common.prepare(core)?;
        let path = transport::service_path("cc", self.rep.as_devinfo().pci_addr(), &self.common.name)?;
        let listener = Listener::bind(&path)?;
        self.common.watch_ctrl(&listener, LISTENER_TOKEN)?;
        *self.listener.borrow_mut() = Some(listener);
        tracing::debug!(target: "doca_sdk", "cc_server {:?} listening at {}", self.common.name, path.display());
        Ok(Started::Running)
    }

    fn stop(&self, _core: &CtxCore) {
        if let Some(listener) = self.listener.borrow_mut().take() {
            self.common.unwatch_ctrl(&listener);
        }
        for hs in self.handshakes.borrow_mut().drain(..) {
            self.common.unwatch_ctrl(&hs.sock);
        }
        let links: Vec<Rc<Link>> = self.common.links.borrow_mut().drain(..).collect();
        for link in links {
            let _ = rustix::net::shutdown(&link.sock, rustix::net::Shutdown::Both);
            self.common.unwatch_ctrl(&link.sock);
            self.common.fail_pending(&link, Error::ConnectionReset);
            link.conn.mark_down();
        }
    }

    fn progress(&self, core: &CtxCore) -> bool {
        let mut any = self.common.progress_links();
        if core.state() == CtxState::Running && self.common.ctrl_turn() {
            any |= self.ctrl_poll();
        }
        any
    }

    fn request_notification(&self, _core: &CtxCore) -> bool {
        self.common.arm()
    }

    fn clear_notification(&self, _core: &CtxCore) {
        self.common.disarm();
    }
}

impl TaskLib<SendPayload> for ServerOps {
    fn pool(&self) -> &TaskPool<SendPayload> {
        &self.common.pool
    }

    fn submit(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        self.common.submit(task)
    }
}
