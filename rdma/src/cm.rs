//! The connection manager (`doca_rdma_start_listen_to_port`, `doca_rdma_addr_create`,
//! `doca_rdma_connect_to_addr`, `doca_rdma_connection_accept`/`_reject`/`_disconnect`,
//! `doca_rdma_set_connection_state_callbacks`): connections made by address and port
//! instead of descriptors carried out of band.
//!
//! **Ports.** A listening port is a machine-wide named socket in the fabric directory,
//! `rdma-cm-<port>.sock` (`doca_link::Listener::bind_port`): one listener per port, as
//! one `rdma_cm` id binds a port (a second listener gets `IN_USE`). An address is an IPv4 or
//! IPv6 address, or a GID written as an IPv6 address; this machine's addresses (loopback,
//! and any an interface holds: `doca_link::is_local_address`) reach the fabric directory's
//! ports. The host side of a link (`doca_link::remote`) also reaches the DPU side's ports at
//! the address its link connects to: the request's socket is relayed across the link
//! ([`crate::linked`]), and the two connections' descriptors it carries are then connected
//! across the link as any. Other addresses would need a route to another machine, which the
//! connection manager does not have (nor has the DPU side a way to the host's ports):
//! connecting to one reports a failure, as an unreachable address does.
//!
//! **Handshake** ([`crate::wire::CmMsg`]). The client makes a connection with a fresh offer
//! (the same as [`crate::Rdma::export`]'s), connects to the port and sends `REQUEST` with
//! its descriptor. The server's progress accepts it, reads the request and calls the
//! *request* callback with a new connection in [`ConnState::Requested`]. Accepting
//! connects the server to the client's offer and answers `ACCEPT` with the server's own
//! descriptor; the client's progress then connects to the server's offer. Each side calls
//! its *established* callback once both sockets of the connection are up (its own, and the
//! peer's, named). Rejecting answers `REJECT`.
//!
//! | event (from progress only)                                   | callback       |
//! |--------------------------------------------------------------|----------------|
//! | server: a client's request arrived                           | request        |
//! | both: the connection is up (both ways)                       | established    |
//! | client: nobody listens on the port, the address is not this machine's, the server rejected, or gave no answer within `connection_request_timeout` | failure |
//! | both: an established connection's peer vanished or misbehaved | failure       |
//! | both: the peer disconnected (or stopped its context)         | disconnect     |
//!
//! The failure callback has no status argument: what failed is in the log (`doca_sdk`)
//! and [`crate::Rdma::connection_state`] says [`ConnState::Error`]. A local
//! [`crate::Rdma::connection_disconnect`] calls no callback on its own side.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv6Addr};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use doca_core::{bail, fail, CbSlot, CtxCore, CtxState, Data, Error, Result};
use doca_link::discard::PeerFd;
use doca_link::notify::Watched;
use doca_link::{Listener, Recv};

use crate::wire::{CmMsg, Desc, CM_MAX_LEN, CM_PRIVATE_MAX};
use crate::{lookup, lookup_mut, ConnState, Connection, Rdma, RdmaOps, Sock};

pub use crate::wire::PORT_NS;
/// The longest an accepted socket may take to send its request before it is closed.
pub const REQUEST_WAIT: Duration = Duration::from_secs(5);
/// Sockets accepted and waiting for their request, at most. When the table is full (the
/// requests ready are read first), a newcomer from a process holding fewer takes the place
/// of the oldest of the biggest holder's, so that a process opening silent sockets shuts
/// nobody else out; else it is closed at once.
pub const MAX_PENDING: usize = 64;

/// `enum doca_rdma_addr_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrType {
    /// `DOCA_RDMA_ADDR_TYPE_IPv4` (0).
    Ipv4 = 0,
    /// `DOCA_RDMA_ADDR_TYPE_IPv6` (1).
    Ipv6 = 1,
    /// `DOCA_RDMA_ADDR_TYPE_GID` (2): 16 bytes written as an IPv6 address.
    Gid = 2,
}

impl AddrType {
    /// From the C value (`INVALID_VALUE` otherwise).
    pub fn from_raw(v: u32) -> Result<AddrType> {
        match v {
            0 => Ok(AddrType::Ipv4),
            1 => Ok(AddrType::Ipv6),
            2 => Ok(AddrType::Gid),
            _ => Err(fail!(Error::InvalidValue, "rdma addr_create: unknown address type {v}")),
        }
    }
}

/// `struct doca_rdma_addr`: where a server listens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Addr {
    kind: AddrType,
    ip: IpAddr,
    port: u16,
}

impl Addr {
    /// `doca_rdma_addr_create`: `address` parsed as `kind` says (`INVALID_VALUE` for text
    /// that is not one: an IPv4 dotted quad, an IPv6 address, a GID in IPv6 form).
    pub fn create(kind: AddrType, address: &str, port: u16) -> Result<Addr> {
        let ip = match kind {
            AddrType::Ipv4 => address.parse::<std::net::Ipv4Addr>().map(IpAddr::V4).ok(),
            AddrType::Ipv6 | AddrType::Gid => address.parse::<Ipv6Addr>().map(IpAddr::V6).ok(),
        };
        match ip {
            Some(ip) => Ok(Addr { kind, ip, port }),
            None => {
                Err(fail!(Error::InvalidValue, "rdma addr_create: {address:?} is not an {kind:?} address"))
            }
        }
    }

    /// Its type.
    pub fn addr_type(&self) -> AddrType {
        self.kind
    }

    /// The address (a GID as the IPv6 address it is written as).
    pub fn ip(&self) -> IpAddr {
        self.ip
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether it names this machine (an IPv4-mapped GID by its IPv4 address).
    pub fn is_local(&self) -> bool {
        let ip = match self.ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(self.ip, IpAddr::V4),
            v4 => v4,
        };
        doca_link::is_local_address(ip)
    }
}

/// A connection's connection-manager part.
pub(crate) struct CmConn {
    /// The port's socket: the client's to the listener, the server's from the client,
    /// until the handshake is over.
    sock: Option<Sock>,
    /// Client: when the server's answer is due; then (both sides) when the connection must
    /// be established (both sockets up), or it fails.
    deadline: Option<Instant>,
    /// The established callback was called.
    established: bool,
    /// A failure or disconnection was reported (at most once).
    over: bool,
    /// Client: the listener was reached across the host–DPU link (its answer may name a
    /// service there; a local listener's may not).
    across: bool,
}

impl CmConn {
    /// Its handshake socket is open.
    pub(crate) fn is_waiting(&self) -> bool {
        self.sock.is_some()
    }
}

/// What the connection manager reports, in order, from progress.
#[derive(Clone, Copy, Debug)]
enum Event {
    Request(Connection),
    Established(Connection),
    Failure(Connection),
    Disconnect(Connection),
}

type RequestCb = Box<dyn FnMut(Connection, Data)>;
type ConnCb = Box<dyn FnMut(Connection, Data, Data)>;

/// The four callbacks of `doca_rdma_set_connection_state_callbacks`.
struct Callbacks {
    request: RequestCb,
    established: ConnCb,
    failure: ConnCb,
    disconnect: ConnCb,
}

struct Port {
    port: u16,
    /// A duplicate of the listener in the engine's notification set, closed on a closing
    /// thread as the listener is (see [`Listener`]), whichever goes last.
    _watch: Option<Watched<PeerFd>>,
    listener: Listener,
}

struct Pending {
    sock: Sock,
    deadline: Instant,
    /// The client process (its share of a full table, see [`MAX_PENDING`]).
    pid: i32,
}

/// A context's connection manager.
#[derive(Default)]
pub(crate) struct CmState {
    ports: RefCell<Vec<Port>>,
    pending: RefCell<Vec<Pending>>,
    events: RefCell<VecDeque<Event>>,
    /// Out of the slot while one of them runs (which may connect, accept, disconnect: the
    /// slot still says they are set), and back when it returns or panics.
    cbs: CbSlot<Callbacks>,
}

impl Rdma {
    /// `doca_rdma_set_connection_state_callbacks`: what the connection manager calls from
    /// progress (see the [module](self)): `request(conn, ctx user data)`, then
    /// `established`/`failure`/`disconnect(conn, connection user data, ctx user data)`. Idle
    /// only.
    pub fn set_connection_state_callbacks(
        &self,
        request: impl FnMut(Connection, Data) + 'static,
        established: impl FnMut(Connection, Data, Data) + 'static,
        failure: impl FnMut(Connection, Data, Data) + 'static,
        disconnect: impl FnMut(Connection, Data, Data) + 'static,
    ) -> Result<()> {
        self.core().require_idle("set_connection_state_callbacks")?;
        let cm = &self.ops().cm;
        cm.cbs.set(Box::new(Callbacks {
            request: Box::new(request),
            established: Box::new(established),
            failure: Box::new(failure),
            disconnect: Box::new(disconnect),
        }));
        Ok(())
    }

    fn require_cm(&self, what: &str) -> Result<()> {
        let st = self.core().state();
        if !matches!(st, CtxState::Running | CtxState::Starting) {
            bail!(Error::BadState, "rdma {what}: the context is not running ({st:?})");
        }
        if !self.ops().cm.cbs.is_set() {
            bail!(
                Error::BadState,
                "rdma {what}: no connection state callbacks (doca_rdma_set_connection_state_callbacks before start)"
            );
        }
        Ok(())
    }

    /// `doca_rdma_start_listen_to_port`: clients of this machine may connect to `port`
    /// (`IN_USE` when a context of another process listens there already, `INVALID_VALUE`
    /// when this one does). Starting or Running, with the connection state callbacks set
    /// (`BAD_STATE`).
    pub fn start_listen_to_port(&self, port: u16) -> Result<()> {
        self.require_cm("start_listen_to_port")?;
        let ops = self.ops();
        if ops.cm.ports.borrow().iter().any(|p| p.port == port) {
            bail!(
                Error::InvalidValue,
                "rdma start_listen_to_port: this context listens on port {port} already"
            );
        }
        let listener = Listener::bind_port(PORT_NS, port)
            .map_err(|e| fail!(Error::from(e), "rdma start_listen_to_port: port {port}"))?;
        let watch =
            listener.as_fd().try_clone_to_owned().ok().and_then(|d| self.core().watch(PeerFd::new(d)).ok());
        ops.cm.ports.borrow_mut().push(Port { port, listener, _watch: watch });
        self.core().activate();
        tracing::debug!(target: "doca_sdk", "rdma: listening on port {port}");
        Ok(())
    }

    /// `doca_rdma_stop_listen_to_port`: no new requests on `port` (`INVALID_VALUE` when this
    /// context does not listen there); connections made stay.
    pub fn stop_listen_to_port(&self, port: u16) -> Result<()> {
        let mut ports = self.ops().cm.ports.borrow_mut();
        match ports.iter().position(|p| p.port == port) {
            Some(i) => {
                ports.remove(i);
                Ok(())
            }
            None => Err(fail!(
                Error::InvalidValue,
                "rdma stop_listen_to_port: this context does not listen on port {port}"
            )),
        }
    }

    /// `doca_rdma_connect_to_addr`: asks the server at `addr` for a connection whose user
    /// data is `user_data`; the outcome comes from progress (established or failure
    /// callback). Starting or Running with the callbacks set (`BAD_STATE`); a connection
    /// free (`NO_MEMORY`).
    pub fn connect_to_addr(&self, addr: &Addr, user_data: Data) -> Result<()> {
        self.require_cm("connect_to_addr")?;
        let ops = self.ops();
        // The DPU side across the link (this process the host side of one, the address the
        // link's): its ports are reached through the link when this side's have nobody there.
        let across = crate::linked::reaches_dpu_at(addr.ip);
        let local = if addr.is_local() {
            match doca_link::connect_port(PORT_NS, addr.port) {
                Ok(Some(s)) => Some(s),
                Ok(None) if across => None,
                Ok(None) => {
                    tracing::error!(target: "doca_sdk", "rdma connect_to_addr: nobody listens on port {} of {}", addr.port, addr.ip);
                    None
                }
                Err(e) => {
                    tracing::error!(target: "doca_sdk", "rdma connect_to_addr: port {}: {}", addr.port, e.name());
                    None
                }
            }
        } else {
            if !across {
                tracing::error!(target: "doca_sdk", "rdma connect_to_addr: {} is not an address of this machine nor the DPU side's of a link: no route", addr.ip);
            }
            None
        };
        let via_link = local.is_none() && across;
        let sock = match local {
            Some(s) => Some(s),
            None if across => match crate::linked::connect_port(addr.port) {
                Ok(Some(s)) => Some(s),
                Ok(None) => {
                    tracing::error!(target: "doca_sdk", "rdma connect_to_addr: nobody listens on port {} of {} (the DPU side, across the link)", addr.port, addr.ip);
                    None
                }
                Err(e) => {
                    tracing::error!(target: "doca_sdk", "rdma connect_to_addr: port {} of {} across the link: {}", addr.port, addr.ip, e.name());
                    None
                }
            },
            None => None,
        };
        let timeout = ops.request_timeout();
        let cm = CmConn {
            sock: sock.map(|s| Sock::new(PeerFd::socket(s), self.core())),
            deadline: Some(self.core().now() + timeout),
            established: false,
            over: false,
            across: via_link,
        };
        let ok = cm.sock.is_some();
        let conn = ops.new_conn(
            if ok { ConnState::Connecting } else { ConnState::Error },
            None,
            Some(cm),
            "connect_to_addr",
        )?;
        let mut conns = ops.conns.borrow_mut();
        let c = lookup_mut(&mut conns, conn).expect("just made");
        c.user_data = user_data;
        if ok {
            let desc = Desc::parse(&c.desc).expect("our own descriptor");
            let sent =
                c.cm.as_ref().and_then(|m| m.sock.as_ref()).map(|s| s.send(&CmMsg::Request(desc).encode()));
            if !matches!(sent, Some(Ok(()))) {
                tracing::error!(target: "doca_sdk", "rdma connect_to_addr: the listener on port {} closed", addr.port);
                c.state = ConnState::Error;
            }
        }
        if c.state == ConnState::Error {
            ops.cm.events.borrow_mut().push_back(Event::Failure(conn));
            if let Some(m) = c.cm.as_mut() {
                m.over = true;
                m.sock = None;
            }
        }
        drop(conns);
        self.core().activate();
        Ok(())
    }

    /// `doca_rdma_connection_accept`: accepts a requested connection (`INVALID_VALUE` unless
    /// [`ConnState::Requested`], or a stale name: the header's only fitting code), with up to
    /// 255 bytes of private data for the client. `CONNECTION_ABORTED` (the connection in
    /// error) when the client went away meanwhile.
    pub fn connection_accept(&self, conn: Connection, private_data: &[u8]) -> Result<()> {
        if private_data.len() > CM_PRIVATE_MAX {
            bail!(
                Error::InvalidValue,
                "rdma connection_accept: {} bytes of private data (at most {CM_PRIVATE_MAX})",
                private_data.len()
            );
        }
        let ops = self.ops();
        let mut conns = ops.conns.borrow_mut();
        let Some(c) = lookup_mut(&mut conns, conn) else {
            bail!(Error::InvalidValue, "rdma connection_accept: no such connection (stale, or rejected)");
        };
        if c.state != ConnState::Requested {
            bail!(
                Error::InvalidValue,
                "rdma connection_accept: the connection is {:?}, not requested",
                c.state
            );
        }
        let remote = c.remote.expect("a request carries the client's descriptor");
        let own = Desc::parse(&c.desc).expect("our own descriptor");
        let r = ops
            .connect_out(c, remote, self.core())
            .map_err(|e| {
                fail!(
                    Error::ConnectionAborted,
                    "rdma connection_accept: the client cannot be reached ({})",
                    e.name()
                )
            })
            .and_then(|()| {
                let sock = c.cm.as_mut().and_then(|m| m.sock.take());
                match sock.map(|s| s.send(&CmMsg::Accept(own, private_data.to_vec()).encode())) {
                    Some(Ok(())) => Ok(()),
                    _ => Err(fail!(Error::ConnectionAborted, "rdma connection_accept: the client went away")),
                }
            });
        if let Err(e) = r {
            c.state = ConnState::Error;
            c.out = None;
            if let Some(m) = c.cm.as_mut() {
                m.over = true;
                m.sock = None;
            }
            return Err(e);
        }
        // The client connects back within the request timeout, or the connection fails (a
        // client that never does holds no connection for ever).
        if let Some(m) = c.cm.as_mut() {
            m.deadline = Some(self.core().now() + ops.request_timeout());
        }
        drop(conns);
        self.core().activate();
        tracing::debug!(target: "doca_sdk", "rdma: connection {} accepted", conn.idx);
        Ok(())
    }

    /// `doca_rdma_connection_reject`: refuses a requested connection (`INVALID_VALUE` unless
    /// [`ConnState::Requested`], or a stale name); its name goes stale.
    pub fn connection_reject(&self, conn: Connection) -> Result<()> {
        let mut conns = self.ops().conns.borrow_mut();
        let Some(c) = lookup_mut(&mut conns, conn) else {
            bail!(Error::InvalidValue, "rdma connection_reject: no such connection (stale, or rejected)");
        };
        if c.state != ConnState::Requested {
            bail!(
                Error::InvalidValue,
                "rdma connection_reject: the connection is {:?}, not requested",
                c.state
            );
        }
        if let Some(s) = c.cm.as_mut().and_then(|m| m.sock.take()) {
            let _ = s.send(&CmMsg::Reject.encode());
        }
        conns[conn.idx as usize] = None;
        tracing::debug!(target: "doca_sdk", "rdma: connection request {} rejected", conn.idx);
        Ok(())
    }

    /// `doca_rdma_connection_disconnect`: ends a connection with a goodbye (the peer's
    /// disconnect callback runs); its waiting tasks complete with [`crate::FLUSH_STATUS`].
    /// A connection over already (disconnected by the peer, or in error) stays so: success.
    pub fn connection_disconnect(&self, conn: Connection) -> Result<()> {
        let ops = self.ops();
        let mut conns = ops.conns.borrow_mut();
        let Some(c) = lookup_mut(&mut conns, conn) else {
            bail!(Error::InvalidValue, "rdma connection_disconnect: no such connection");
        };
        if !c.state.is_live() {
            tracing::debug!(target: "doca_sdk", "rdma: connection {} is {:?} already", conn.idx, c.state);
            return Ok(());
        }
        ops.say_bye(c);
        c.state = ConnState::Disconnected;
        c.offered = None;
        if let Some(m) = c.cm.as_mut() {
            m.over = true;
            m.sock = None;
        }
        let jobs: Vec<_> = c.inflight.drain(..).map(|(_, j)| j).chain(c.queue.drain(..)).collect();
        drop(conns);
        for j in jobs {
            ops.finish(j, Err(crate::FLUSH_STATUS));
        }
        tracing::debug!(target: "doca_sdk", "rdma: connection {} disconnected", conn.idx);
        Ok(())
    }
}

impl RdmaOps {
    /// Whether the connection manager needs progress to look (listening, waiting, or
    /// something to report).
    pub(crate) fn cm_busy(&self) -> bool {
        !self.cm.ports.borrow().is_empty()
            || !self.cm.pending.borrow().is_empty()
            || !self.cm.events.borrow().is_empty()
    }

    /// `doca_rdma_set_connection_request_timeout`'s value: how long a request waits for its
    /// answer, and an accepted connection for its establishment.
    fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.cfg.get().conn_request_timeout.max(1) as u64)
    }

    /// The earliest deadline of a client waiting for its answer, of a connection not yet
    /// established, or of an accepted socket.
    pub(crate) fn cm_due(&self, conns: &[Option<crate::Conn>]) -> Option<Instant> {
        let a = conns.iter().flatten().filter_map(|c| {
            c.cm.as_ref().filter(|m| !m.established && !m.over && c.state.is_live())?.deadline
        });
        let b = self.cm.pending.borrow().iter().map(|p| p.deadline).min();
        a.chain(b).min()
    }

    pub(crate) fn cm_has_events(&self) -> bool {
        !self.cm.events.borrow().is_empty()
    }

    /// Stop: no more listening or requests.
    pub(crate) fn cm_stop_listening(&self) {
        self.cm.ports.borrow_mut().clear();
        self.cm.pending.borrow_mut().clear();
    }

    /// No more listening, requests or reports.
    pub(crate) fn cm_close(&self) {
        self.cm.ports.borrow_mut().clear();
        self.cm.pending.borrow_mut().clear();
        self.cm.events.borrow_mut().clear();
    }

    /// Accepts new sockets on the listening ports and reads their requests: each valid one
    /// becomes a requested connection (request callback). Returns whether anything happened.
    pub(crate) fn cm_listen(&self, core: &CtxCore, now: &doca_core::Now<'_>) -> bool {
        // The sockets waiting for their request first: those whose request came leave the
        // table before newcomers are counted against it.
        let waiting: Vec<Pending> = self.cm.pending.borrow_mut().drain(..).collect();
        let mut did = false;
        let mut keep = Vec::with_capacity(waiting.len());
        for p in waiting {
            match self.take_request(p.sock, &mut did) {
                Some(sock) if p.deadline > now.get() => keep.push(Pending { sock, ..p }),
                Some(_) => {
                    tracing::debug!(target: "doca_sdk", "rdma: a connection sent no request in {REQUEST_WAIT:?}; closed")
                }
                None => {}
            }
        }
        *self.cm.pending.borrow_mut() = keep;
        let ports = self.cm.ports.borrow();
        for p in ports.iter() {
            loop {
                match p.listener.accept() {
                    Ok(Some(fd)) => {
                        did = true;
                        let Ok(pid) = doca_link::peer_pid(fd.as_fd()) else {
                            tracing::debug!(target: "doca_sdk", "rdma: port {}: a connection from another user closed", p.port);
                            drop(PeerFd::socket(fd));
                            continue;
                        };
                        // A client sends its request with its connection: usually it is here.
                        let Some(sock) = self.take_request(Sock::new(PeerFd::socket(fd), core), &mut did)
                        else {
                            continue;
                        };
                        let mut pending = self.cm.pending.borrow_mut();
                        if !make_room(&mut pending, pid) {
                            tracing::debug!(target: "doca_sdk", "rdma: port {}: {MAX_PENDING} requests waiting; one more of process {pid} closed", p.port);
                            continue;
                        }
                        pending.push(Pending { sock, deadline: now.get() + REQUEST_WAIT, pid });
                    }
                    Ok(None) => break,
                    Err(e) => {
                        tracing::warn!(target: "doca_sdk", "rdma: port {}: accept: {}", p.port, e.name());
                        break;
                    }
                }
            }
        }
        did
    }

    /// Reads the request of a socket accepted on a listening port: a request becomes a
    /// requested connection (or is rejected), anything else closes the socket; the socket
    /// back when nothing came yet.
    fn take_request(&self, sock: Sock, did: &mut bool) -> Option<Sock> {
        let mut buf = [0u8; CM_MAX_LEN + 1];
        match doca_link::recv(sock.fd.as_fd(), &mut buf) {
            Ok(Recv::Empty) => Some(sock),
            Ok(Recv::Closed) | Err(_) => {
                *did = true;
                None
            }
            Ok(Recv::Packet { len, truncated, fds }) => {
                *did = true;
                match CmMsg::parse(&buf[..len]) {
                    Ok(CmMsg::Request(d)) if !truncated && fds.is_empty() => self.cm_request(sock, d),
                    _ => {
                        tracing::error!(target: "doca_sdk", "rdma: a connection request that is not one: closed")
                    }
                }
                None
            }
        }
    }

    /// A client's request: a requested connection, or a rejection when this context cannot
    /// take it.
    fn cm_request(&self, sock: Sock, d: Desc) {
        let reject = |why: &str| {
            tracing::error!(target: "doca_sdk", "rdma: a connection request rejected: {why}");
            let _ = sock.send(&CmMsg::Reject.encode());
        };
        if d.transport != self.cfg.get().transport as u8 {
            return reject("the client's transport type differs from this context's");
        }
        let live = self.conns.borrow().iter().flatten().filter(|c| c.state.is_live()).count();
        if live >= self.cfg.get().max_conns as usize {
            return reject("the context has all its connections (doca_rdma_set_max_num_connections)");
        }
        let cm = CmConn { sock: None, deadline: None, established: false, over: false, across: false };
        match self.new_conn(ConnState::Requested, Some(d), Some(cm), "connection request") {
            Ok(conn) => {
                let mut conns = self.conns.borrow_mut();
                if let Some(m) = lookup_mut(&mut conns, conn).and_then(|c| c.cm.as_mut()) {
                    m.sock = Some(sock);
                }
                self.cm.events.borrow_mut().push_back(Event::Request(conn));
            }
            Err(e) => reject(e.name()),
        }
    }

    /// A connection's connection-manager steps in a progress pass: the client reads the
    /// server's answer (or times out); both report establishment, failure and
    /// disconnection. Returns whether anything happened.
    pub(crate) fn cm_step(
        &self,
        c: &mut crate::Conn,
        me: Connection,
        core: &CtxCore,
        now: &doca_core::Now<'_>,
        fatal: &mut crate::Fatal,
    ) -> bool {
        let Some(m) = c.cm.as_mut() else { return false };
        let mut did = false;
        if c.state == ConnState::Connecting {
            let mut buf = [0u8; CM_MAX_LEN + 1];
            let got = match m.sock.as_ref().map(|s| doca_link::recv(s.fd.as_fd(), &mut buf)) {
                Some(Ok(Recv::Empty)) if m.deadline.is_some_and(|t| now.get() >= t) => {
                    Err("the server gave no answer within connection_request_timeout".to_string())
                }
                Some(Ok(Recv::Empty)) => return false,
                Some(Ok(Recv::Packet { len, truncated: false, fds })) if fds.is_empty() => {
                    match CmMsg::parse(&buf[..len]) {
                        Ok(CmMsg::Accept(d, _private)) => Ok(d),
                        Ok(CmMsg::Reject) => Err("the server rejected the connection".into()),
                        _ => Err("the server's answer is not one".into()),
                    }
                }
                _ => Err("the listener closed without an answer".into()),
            };
            did = true;
            m.sock = None;
            m.deadline = Some(now.get() + self.request_timeout());
            let across = m.across;
            let r = got.and_then(|d| {
                if d.transport != self.cfg.get().transport as u8 {
                    return Err("the server's transport type differs from this context's".into());
                }
                // Connecting across the link waits for the other side inside this pass: only
                // for a listener reached that way (a local one naming a service there would
                // hold this progress call for seconds).
                if !across && crate::linked::across(d.service).is_some() {
                    return Err("a local listener's answer names no service of this machine".into());
                }
                self.connect_out(c, d, core)
                    .map_err(|e| format!("connecting to the server's offer: {}", e.name()))
            });
            if let Err(why) = r {
                tracing::error!(target: "doca_sdk", "rdma: connection {} to the server failed: {why}", me.idx);
                c.state = ConnState::Error;
            }
        }
        let Some(m) = c.cm.as_mut() else { return did };
        let mut events = self.cm.events.borrow_mut();
        if !m.established && !m.over && c.state == ConnState::Connected && c.out.is_some() && c.inc_named {
            m.established = true;
            events.push_back(Event::Established(me));
            did = true;
        }
        // Accepted (or answered) and not established in time: the peer never connected back.
        let late = !m.established
            && !m.over
            && m.sock.is_none()
            && c.state.is_live()
            && c.state != ConnState::Requested
            && m.deadline.is_some_and(|t| now.get() >= t);
        if late {
            tracing::error!(target: "doca_sdk", "rdma: connection {} not established within connection_request_timeout: failed", me.idx);
            c.state = ConnState::Error;
            c.out = None;
            c.inc = None;
            // Sends already submitted on it (the server's side is Connected once accepted)
            // fail, as on any broken connection.
            if self.fail_waiting(c) {
                *fatal = Some((Error::ConnectionReset, "the peer never connected back".into()));
            }
        }
        let Some(m) = c.cm.as_mut() else { return did };
        if !m.over && !c.state.is_live() {
            m.over = true;
            m.sock = None;
            did = true;
            if m.established && c.state == ConnState::Disconnected {
                events.push_back(Event::Disconnect(me));
            } else {
                events.push_back(Event::Failure(me));
            }
        }
        did
    }

    /// Calls the callbacks of what the pass found, in order, with no borrow held (they may
    /// accept, disconnect, submit, stop the context). Returns whether any ran.
    pub(crate) fn cm_deliver(&self, core: &CtxCore) -> bool {
        let mut any = false;
        // The events the pass found: those the callbacks cause (a connect_to_addr from a
        // failure callback that fails at once) wait for the next progress, so a callback that
        // retries on every failure cannot keep this call from returning.
        let found = self.cm.events.borrow().len();
        for _ in 0..found {
            if core.state() != CtxState::Running {
                self.cm.events.borrow_mut().clear();
                break;
            }
            let Some(ev) = self.cm.events.borrow_mut().pop_front() else { break };
            let ctx_data = core.user_data();
            let conn_data =
                |c: Connection| lookup(&self.conns.borrow(), c).map_or(Data::NONE, |c| c.user_data);
            // The event counts as delivered once its callback is called, also when it panics:
            // the callbacks go back to their slot and the events after it wait in the queue.
            any |= self
                .cm
                .cbs
                .call(|cbs| match ev {
                    Event::Request(c) => (cbs.request)(c, ctx_data),
                    Event::Established(c) => (cbs.established)(c, conn_data(c), ctx_data),
                    Event::Failure(c) => (cbs.failure)(c, conn_data(c), ctx_data),
                    Event::Disconnect(c) => (cbs.disconnect)(c, conn_data(c), ctx_data),
                })
                .is_some();
        }
        any
    }
}

/// Whether a request socket of process `pid` may wait in `pending`: below the table's size,
/// or taking the place of the oldest socket of the process holding the most (when that one
/// holds more than `pid` would).
fn make_room(pending: &mut Vec<Pending>, pid: i32) -> bool {
    let pids: Vec<i32> = pending.iter().map(|p| p.pid).collect();
    match room(&pids, pid) {
        Room::Refused => false,
        Room::Free => true,
        Room::InPlaceOf(i) => {
            let big = pending.remove(i).pid;
            tracing::debug!(target: "doca_sdk", "rdma: the oldest waiting request of process {big} (the biggest holder) closed for process {pid}'s");
            true
        }
    }
}

/// What [`make_room`] does for a newcomer of process `pid`, given the processes of the
/// waiting sockets in arrival order.
#[derive(Debug, PartialEq)]
enum Room {
    Refused,
    Free,
    /// The waiting socket at this index goes.
    InPlaceOf(usize),
}

fn room(pids: &[i32], pid: i32) -> Room {
    if pids.len() < MAX_PENDING {
        return Room::Free;
    }
    let held = |pid: i32| pids.iter().filter(|&&p| p == pid).count();
    let mine = held(pid);
    let Some((big, most)) = pids.iter().map(|&p| (p, held(p))).max_by_key(|&(_, n)| n) else {
        return Room::Refused;
    };
    if most <= mine + 1 {
        return Room::Refused;
    }
    pids.iter().position(|&p| p == big).map_or(Room::Refused, Room::InPlaceOf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_table_gives_a_newcomer_the_place_of_the_biggest_holder_s_oldest() {
        // Below the size: room for anyone, however many it holds.
        assert_eq!(room(&vec![7; MAX_PENDING - 1], 7), Room::Free);
        // A full table of four processes' shares: a fifth process takes the oldest place of
        // a biggest holder; in a table of 64 processes holding one each, nobody holds more
        // than a newcomer would: it is refused.
        let four: Vec<i32> = (0..MAX_PENDING).map(|i| (i % 4) as i32).collect();
        assert!(matches!(room(&four, 9), Room::InPlaceOf(i) if i < 4), "{:?}", room(&four, 9));
        let many: Vec<i32> = (0..MAX_PENDING as i32).collect();
        assert_eq!(room(&many, 1000), Room::Refused);
        let mut uneven: Vec<i32> = vec![1; 16];
        uneven.extend((0..MAX_PENDING - 16).map(|i| 100 + (i % 6) as i32));
        assert_eq!(room(&uneven, 9), Room::InPlaceOf(0), "process 1 holds 16: its oldest goes");
        assert_eq!(room(&uneven, 1), Room::Refused, "process 1 holds the most itself");
    }
}
