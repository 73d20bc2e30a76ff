//! The legacy Comm Channel endpoint API (`doca_comm_channel_ep_*`), on the same transport as
//! the 2024 API: rendezvous sockets (in their own namespace), one shared-memory ring per
//! direction, doorbells for sleeping.
//!
//! An endpoint has no progress engine: it makes progress inside its calls. A service
//! (`listen`, DPU side) accepts clients whenever it is called; its first `recvfrom` of a
//! client's message reveals that client's address. A client (`connect`, host side) gets a
//! peer address at once; its handshake completes asynchronously
//! ([`PeerAddr::update_info`] answers `CONNECTION_INPROGRESS`, then `Ok`, or
//! `CONNECTION_ABORTED`).
//!
//! Both generations of code port: [`Endpoint::create`] (2.x: non-blocking calls, setters)
//! and [`Endpoint::create_with_attr`] (1.x attributes; without
//! [`INIT_FLAG_NONBLOCK`] its calls block, sleeping on the doorbells, unless a call passes
//! [`MsgFlags::DONTWAIT`]).
//!
//! Limits: message size 256..=4080 and queue sizes 16..=8191 (smaller values are raised to
//! the minimum, larger ones are `INVALID_VALUE`; getters return what is in effect); service
//! names 1..=119 bytes (120 with the NUL).
//!
//! Disconnection is one-sided: the other side learns it only through `CONNECTION_RESET` on
//! its next send or receive on that peer. A client may connect again afterwards.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bitflags::bitflags;
use doca_core::notify::Doorbell;
use doca_core::{bail, fail, CapSpec, Dev, DevInfo, DevRep, DeviceKind, Error, Result};
use parking_lot::Mutex;
use rustix::event::{epoll, poll, PollFd, PollFlags};

use crate::proto::{Hello, PeerKind, Reply};
use crate::transport::ring::{self, Area, End, Ring};
use crate::transport::{self, Listener, Recv};

/// `SERVICE_NAME_MAX` of 2.x: longest service name, NUL included.
pub const MAX_SERVICE_NAME_LEN: u32 = 120;
/// Smallest message size in effect.
pub const MIN_MSG_SIZE: u16 = 256;
/// Largest message size.
pub const MAX_MSG_SIZE: u16 = 4080;
/// Smallest queue size in effect.
pub const MIN_QUEUE_SIZE: u16 = 16;
/// Largest queue size.
pub const MAX_QUEUE_SIZE: u16 = 8191;
/// `DOCA_COMM_CHANNEL_INIT_FLAG_NONBLOCK` (1.x attributes).
pub const INIT_FLAG_NONBLOCK: u32 = 0x1;

/// `doca_comm_channel_get_service_max_num_connections`.
pub const MAX_CONNECTIONS: CapSpec =
    CapSpec { name: "ep.max_connections", default: 512, descr: "legacy endpoint: clients per service" };

/// Message kind of a legacy message in a ring slot.
const KIND_EP_MSG: u32 = 4;
/// Bytes before each message in its slot: the send time, to receive from many clients in
/// arrival order.
const STAMP: usize = 8;
/// How often a busy endpoint looks at its sockets (new clients, crashed peers).
const CRASH_CHECK: Duration = Duration::from_micros(500);
/// How long one blocking wait sleeps before re-checking the connection.
const WAIT_SLICE: Duration = Duration::from_millis(100);

bitflags! {
    /// `enum doca_comm_channel_msg_flags` (2.x: only `NONE`) and the 1.x message flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct MsgFlags: u32 {
        /// `DOCA_CC_MSG_FLAG_DONTWAIT` (1.x): this call does not block.
        const DONTWAIT = 0x1;
        /// `DOCA_CC_MSG_FLAG_MORE` (1.x): more messages follow (a hint; ignored).
        const MORE = 0x2;
    }
}

impl MsgFlags {
    /// `DOCA_CC_MSG_FLAG_NONE` (0).
    pub const NONE: MsgFlags = MsgFlags::empty();
}

/// `struct doca_comm_channel_init_attr` (DOCA 1.x).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InitAttr {
    /// Application cookie, kept and returned by [`Endpoint::cookie`].
    pub cookie: u32,
    /// [`INIT_FLAG_NONBLOCK`] or 0.
    pub flags: u32,
    /// Queue size for both directions.
    pub maxmsgs: u32,
    /// Message size.
    pub msgsize: u32,
}

/// `doca_comm_channel_get_max_service_name_len`.
pub fn get_max_service_name_len() -> u32 {
    MAX_SERVICE_NAME_LEN
}

/// `doca_comm_channel_get_max_message_size`.
pub fn get_max_message_size(_dev: &DevInfo) -> Result<u32> {
    Ok(MAX_MSG_SIZE as u32)
}

/// `doca_comm_channel_get_max_send_queue_size`.
pub fn get_max_send_queue_size(_dev: &DevInfo) -> Result<u32> {
    Ok(MAX_QUEUE_SIZE as u32)
}

/// `doca_comm_channel_get_max_recv_queue_size`.
pub fn get_max_recv_queue_size(_dev: &DevInfo) -> Result<u32> {
    Ok(MAX_QUEUE_SIZE as u32)
}

/// `doca_comm_channel_get_service_max_num_connections`.
pub fn get_service_max_num_connections(dev: &DevInfo) -> Result<u32> {
    if let Err(e) = dev.topology().check_caps("ep", &[MAX_CONNECTIONS]) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(&MAX_CONNECTIONS).min(u32::MAX as u64) as u32)
}

fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A receive that did not fit: the error and, for `TOO_BIG`, the length the buffer needs
/// (the message stays queued).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvError {
    /// The DOCA code.
    pub error: Error,
    /// For a message larger than the buffer: its length.
    pub needed: Option<usize>,
}

impl From<Error> for RecvError {
    fn from(error: Error) -> RecvError {
        RecvError { error, needed: None }
    }
}

impl From<RecvError> for Error {
    fn from(e: RecvError) -> Error {
        e.error
    }
}

impl std::fmt::Display for RecvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.needed {
            Some(n) => write!(f, "{} (the message needs {n} bytes)", self.error),
            None => write!(f, "{}", self.error),
        }
    }
}

impl std::error::Error for RecvError {}

struct EpLink {
    /// When the socket was last checked for a peer that died (checked at most every
    /// [`CRASH_CHECK`]; an orderly hang-up is seen at once through the rings).
    checked: std::cell::Cell<Instant>,
    sock: OwnedFd,
    tx: Ring,
    rx: Ring,
    peer_bell: Doorbell,
    peer_room_bell: Doorbell,
}

enum LinkState {
    /// `rx_slots`: the receive queue size this client asked for in its Hello.
    Handshaking {
        sock: OwnedFd,
        since: Instant,
        rx_slots: u32,
    },
    Up(EpLink),
    Aborted,
    Reset,
}

struct Peer {
    id: u64,
    user_data: AtomicU64,
    link: Mutex<LinkState>,
    counters: [AtomicU64; 4],
    snapshot: Mutex<[u64; 5]>,
    accepted: AtomicBool,
}

/// `struct doca_comm_channel_addr_t`: one peer of an endpoint. Cloning gives another handle
/// to the same peer.
#[derive(Clone)]
pub struct PeerAddr(Arc<Peer>);

impl PartialEq for PeerAddr {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
impl Eq for PeerAddr {}

impl std::fmt::Debug for PeerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PeerAddr(#{})", self.0.id)
    }
}

impl PeerAddr {
    fn new(id: u64, state: LinkState) -> PeerAddr {
        PeerAddr(Arc::new(Peer {
            id,
            user_data: AtomicU64::new(0),
            link: Mutex::new(state),
            counters: Default::default(),
            snapshot: Mutex::new([0; 5]),
            accepted: AtomicBool::new(false),
        }))
    }

    /// `doca_comm_channel_peer_addr_set_user_data`.
    pub fn set_user_data(&self, data: u64) {
        self.0.user_data.store(data, Ordering::Relaxed);
    }

    /// `doca_comm_channel_peer_addr_get_user_data` (0 until set).
    pub fn user_data(&self) -> u64 {
        self.0.user_data.load(Ordering::Relaxed)
    }

    /// `doca_comm_channel_peer_addr_update_info`: finishes a pending handshake if the answer
    /// is there and takes a statistics snapshot. `CONNECTION_INPROGRESS` while the handshake
    /// runs, `CONNECTION_ABORTED` when it failed, `CONNECTION_RESET` once the peer is gone.
    pub fn update_info(&self) -> Result<()> {
        let status = self.advance(false);
        let mut snap = self.0.snapshot.lock();
        for (s, c) in snap.iter_mut().zip(&self.0.counters) {
            *s = c.load(Ordering::Relaxed);
        }
        snap[4] = match &*self.0.link.lock() {
            LinkState::Up(l) => l.tx.in_flight(),
            _ => 0,
        };
        status
    }

    /// `doca_comm_channel_peer_addr_get_send_messages` (at the last `update_info`).
    pub fn send_messages(&self) -> u64 {
        self.0.snapshot.lock()[0]
    }

    /// `doca_comm_channel_peer_addr_get_send_bytes`.
    pub fn send_bytes(&self) -> u64 {
        self.0.snapshot.lock()[1]
    }

    /// `doca_comm_channel_peer_addr_get_recv_messages`.
    pub fn recv_messages(&self) -> u64 {
        self.0.snapshot.lock()[2]
    }

    /// `doca_comm_channel_peer_addr_get_recv_bytes`.
    pub fn recv_bytes(&self) -> u64 {
        self.0.snapshot.lock()[3]
    }

    /// `doca_comm_channel_peer_addr_get_send_in_flight_messages`: sent, not yet received.
    pub fn send_in_flight_messages(&self) -> u64 {
        self.0.snapshot.lock()[4]
    }

    fn count(&self, sent: bool, bytes: usize) {
        let (m, b) = if sent { (0, 1) } else { (2, 3) };
        self.0.counters[m].fetch_add(1, Ordering::Relaxed);
        self.0.counters[b].fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Moves the handshake on and reports the link's status. A peer that left still has
    /// its last messages read (`for_send` false) before the link reports the reset.
    fn advance(&self, for_send: bool) -> Result<()> {
        let mut link = self.0.link.lock();
        let reply = match &*link {
            LinkState::Up(l) => {
                return if (for_send || !l.rx.has_data()) && l.peer_gone() {
                    *link = LinkState::Reset;
                    Err(Error::ConnectionReset)
                } else {
                    Ok(())
                }
            }
            LinkState::Aborted => return Err(Error::ConnectionAborted),
            LinkState::Reset => return Err(Error::ConnectionReset),
            LinkState::Handshaking { sock, since, .. } => {
                let mut buf = [0u8; 128];
                match transport::recv(sock.as_fd(), &mut buf) {
                    Ok(Recv::Empty) if since.elapsed() < Duration::from_secs(10) => {
                        return Err(Error::ConnectionInProgress)
                    }
                    Ok(Recv::Packet { len, fds, truncated: false }) => {
                        Reply::decode(&buf[..len]).map(|r| (r, fds))
                    }
                    _ => Err(Error::ConnectionAborted),
                }
            }
        };
        let LinkState::Handshaking { sock, rx_slots, .. } = std::mem::replace(&mut *link, LinkState::Aborted)
        else {
            unreachable!("matched above")
        };
        let (reply, fds) = match reply {
            Ok((r, fds)) if r.status == 0 && fds.len() == 3 => (r, fds),
            Ok((r, _)) => {
                let e = Error::from_code(r.status).unwrap_or(Error::Unknown);
                tracing::error!(target: "doca_sdk", "comm channel: the service refused the connection: {e}");
                return Err(Error::ConnectionAborted);
            }
            Err(e) => {
                tracing::error!(target: "doca_sdk", "comm channel: handshake failed: {e}");
                return Err(Error::ConnectionAborted);
            }
        };
        let mut fds = fds.into_iter();
        let (seg, bell, room) = (fds.next().expect("3"), fds.next().expect("3"), fds.next().expect("3"));
        let built = (|| {
            let max = reply.max_msg_size as usize + STAMP;
            let area = Area::open(seg, reply.segment_len as usize)?;
            let tx =
                Ring::attach(&area, reply.c2s_offset as usize, reply.server_recv_queue, max, End::Producer)?;
            let rx = Ring::attach(&area, reply.s2c_offset as usize, rx_slots, max, End::Consumer)?;
            Ok::<_, Error>(EpLink::new(sock, tx, rx, Doorbell::from_fd(bell), Doorbell::from_fd(room)))
        })();
        match built {
            Ok(l) => {
                *link = LinkState::Up(l);
                Ok(())
            }
            Err(e) => {
                tracing::error!(target: "doca_sdk", "comm channel: cannot map the service's rings: {e}");
                Err(Error::ConnectionAborted)
            }
        }
    }
}

fn peer_closed(sock: &OwnedFd) -> bool {
    let mut b = [0u8; 16];
    matches!(transport::recv(sock.as_fd(), &mut b), Ok(Recv::Closed) | Err(_))
}

impl EpLink {
    fn new(sock: OwnedFd, tx: Ring, rx: Ring, peer_bell: Doorbell, peer_room_bell: Doorbell) -> EpLink {
        EpLink { checked: std::cell::Cell::new(Instant::now()), sock, tx, rx, peer_bell, peer_room_bell }
    }

    /// Whether the peer hung up (a flag in the rings: no syscall) or died (its socket, looked
    /// at no more often than every [`CRASH_CHECK`]).
    fn peer_gone(&self) -> bool {
        if self.rx.is_closed() || self.tx.is_closed() {
            return true;
        }
        if self.checked.get().elapsed() < CRASH_CHECK {
            return false;
        }
        self.checked.set(Instant::now());
        peer_closed(&self.sock)
    }

    /// Hangs up: the peer sees it on its next call, without a syscall.
    fn hang_up(&self) {
        self.tx.close();
        self.rx.close();
        let _ = rustix::net::shutdown(&self.sock, rustix::net::Shutdown::Both);
    }
}

enum Role {
    Unset,
    Service,
    Client,
}

struct State {
    dev: Option<Dev>,
    rep: Option<DevRep>,
    msg_size: u16,
    send_q: u16,
    recv_q: u16,
    role: Role,
    name: String,
    listener: Option<Listener>,
    /// When the listener and handshakes were last looked at (busy callers: every
    /// [`CRASH_CHECK`] at most).
    polled: Instant,
    handshakes: Vec<(OwnedFd, i32, Instant)>,
    peers: Vec<PeerAddr>,
    next_id: u64,
}

/// `struct doca_comm_channel_ep_t`: an endpoint. `Send + Sync`.
pub struct Endpoint {
    st: Mutex<State>,
    rx_bell: Doorbell,
    tx_bell: Doorbell,
    ctrl: OwnedFd,
    blocking: bool,
    cookie: u32,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.st.lock();
        write!(f, "Endpoint({:?}, {} peers)", st.name, st.peers.len())
    }
}

fn effective(value: u32, min: u16, max: u16, what: &str) -> Result<u16> {
    if value > max as u32 {
        bail!(Error::InvalidValue, "comm channel {what} {value} above the maximum {max}");
    }
    Ok((value as u16).max(min))
}

impl Endpoint {
    /// `doca_comm_channel_ep_create` (2.x): non-blocking calls; configure with the setters.
    pub fn create() -> Result<Endpoint> {
        Endpoint::build(false, 0)
    }

    /// `doca_comm_channel_ep_create(attr, ...)` (1.x): queues and message size from the
    /// attributes (raised to the minimum; above the maximum → `INVALID_VALUE`); calls block
    /// unless `flags` has [`INIT_FLAG_NONBLOCK`].
    pub fn create_with_attr(attr: &InitAttr) -> Result<Endpoint> {
        if attr.flags & !INIT_FLAG_NONBLOCK != 0 {
            bail!(Error::InvalidValue, "comm channel: unknown init flags {:#x}", attr.flags);
        }
        let ep = Endpoint::build(attr.flags & INIT_FLAG_NONBLOCK == 0, attr.cookie)?;
        {
            let mut st = ep.st.lock();
            st.msg_size = effective(attr.msgsize, MIN_MSG_SIZE, MAX_MSG_SIZE, "message size")?;
            let q = effective(attr.maxmsgs, MIN_QUEUE_SIZE, MAX_QUEUE_SIZE, "queue size")?;
            st.send_q = q;
            st.recv_q = q;
        }
        Ok(ep)
    }

    fn build(blocking: bool, cookie: u32) -> Result<Endpoint> {
        let ctrl = epoll::create(epoll::CreateFlags::CLOEXEC)
            .map_err(|e| fail!(Error::OperatingSystem, "epoll: {e}"))?;
        Ok(Endpoint {
            st: Mutex::new(State {
                dev: None,
                rep: None,
                msg_size: MAX_MSG_SIZE,
                send_q: MIN_QUEUE_SIZE,
                recv_q: MIN_QUEUE_SIZE,
                role: Role::Unset,
                name: String::new(),
                listener: None,
                polled: Instant::now(),
                handshakes: Vec::new(),
                peers: Vec::new(),
                next_id: 1,
            }),
            rx_bell: Doorbell::new()?,
            tx_bell: Doorbell::new()?,
            ctrl,
            blocking,
            cookie,
        })
    }

    /// The 1.x attribute cookie (0 for a 2.x endpoint).
    pub fn cookie(&self) -> u32 {
        self.cookie
    }

    fn configurable(&self) -> Result<parking_lot::MutexGuard<'_, State>> {
        let st = self.st.lock();
        if !matches!(st.role, Role::Unset) {
            bail!(Error::BadState, "comm channel endpoint: properties are set before listen or connect");
        }
        Ok(st)
    }

    /// `doca_comm_channel_ep_set_device`.
    pub fn set_device(&self, dev: &Dev) -> Result<()> {
        self.configurable()?.dev = Some(dev.clone());
        Ok(())
    }

    /// `doca_comm_channel_ep_get_device`.
    pub fn device(&self) -> Option<Dev> {
        self.st.lock().dev.clone()
    }

    /// `doca_comm_channel_ep_set_device_rep`.
    pub fn set_device_rep(&self, rep: &DevRep) -> Result<()> {
        self.configurable()?.rep = Some(rep.clone());
        Ok(())
    }

    /// `doca_comm_channel_ep_get_device_rep`.
    pub fn device_rep(&self) -> Option<DevRep> {
        self.st.lock().rep.clone()
    }

    /// `doca_comm_channel_ep_set_max_msg_size`: raised to 256; above 4080 → `INVALID_VALUE`.
    pub fn set_max_msg_size(&self, size: u16) -> Result<()> {
        let v = effective(size as u32, MIN_MSG_SIZE, MAX_MSG_SIZE, "message size")?;
        self.configurable()?.msg_size = v;
        Ok(())
    }

    /// `doca_comm_channel_ep_get_max_msg_size`: the size in effect.
    pub fn max_msg_size(&self) -> u16 {
        self.st.lock().msg_size
    }

    /// `doca_comm_channel_ep_set_send_queue_size`: raised to 16; above 8191 → `INVALID_VALUE`.
    pub fn set_send_queue_size(&self, size: u16) -> Result<()> {
        let v = effective(size as u32, MIN_QUEUE_SIZE, MAX_QUEUE_SIZE, "send queue size")?;
        self.configurable()?.send_q = v;
        Ok(())
    }

    /// `doca_comm_channel_ep_get_send_queue_size`.
    pub fn send_queue_size(&self) -> u16 {
        self.st.lock().send_q
    }

    /// `doca_comm_channel_ep_set_recv_queue_size`: raised to 16; above 8191 → `INVALID_VALUE`.
    pub fn set_recv_queue_size(&self, size: u16) -> Result<()> {
        let v = effective(size as u32, MIN_QUEUE_SIZE, MAX_QUEUE_SIZE, "receive queue size")?;
        self.configurable()?.recv_q = v;
        Ok(())
    }

    /// `doca_comm_channel_ep_get_recv_queue_size`.
    pub fn recv_queue_size(&self) -> u16 {
        self.st.lock().recv_q
    }

    fn check_name(name: &str) -> Result<()> {
        if name.is_empty() || name.len() >= MAX_SERVICE_NAME_LEN as usize || name.contains('\0') {
            bail!(
                Error::InvalidValue,
                "comm channel service name must be 1..{} bytes without NUL, got {}",
                MAX_SERVICE_NAME_LEN - 1,
                name.len()
            );
        }
        Ok(())
    }

    /// `doca_comm_channel_ep_listen`: serve `name` (DPU side). Needs a device and a
    /// representor (`BAD_STATE`); a host device → `NOT_PERMITTED`; listening or connected
    /// already → `NOT_PERMITTED`; the name taken → `IN_USE`.
    pub fn listen(&self, name: &str) -> Result<()> {
        Endpoint::check_name(name)?;
        let mut st = self.st.lock();
        if !matches!(st.role, Role::Unset) {
            bail!(Error::NotPermitted, "comm channel endpoint already listens or is connected");
        }
        let (Some(dev), Some(rep)) = (st.dev.clone(), st.rep.clone()) else {
            bail!(Error::BadState, "comm channel listen: set the device and the device representor first");
        };
        if dev.as_devinfo().kind() != DeviceKind::Dpu {
            bail!(
                Error::NotPermitted,
                "comm channel listen: services run on the DPU device, not a host function"
            );
        }
        let path = transport::service_path("ep", rep.as_devinfo().pci_addr(), name)?;
        let listener = Listener::bind(&path)?;
        epoll::add(&self.ctrl, listener.as_fd(), epoll::EventData::new_u64(0), epoll::EventFlags::IN)
            .map_err(|e| fail!(Error::OperatingSystem, "epoll_ctl: {e}"))?;
        st.listener = Some(listener);
        st.role = Role::Service;
        st.name = name.to_string();
        Ok(())
    }

    /// `doca_comm_channel_ep_connect`: connect to service `name` (host side) and return its
    /// address; the handshake completes asynchronously (see [`PeerAddr::update_info`]). No
    /// service listening → `NOT_CONNECTED`; connected already → `NOT_PERMITTED`; a DPU device
    /// → `NOT_PERMITTED`; no device → `BAD_STATE`.
    pub fn connect(&self, name: &str) -> Result<PeerAddr> {
        Endpoint::check_name(name)?;
        let mut st = self.st.lock();
        if matches!(st.role, Role::Service) {
            bail!(Error::NotPermitted, "comm channel connect on a listening endpoint");
        }
        if st
            .peers
            .iter()
            .any(|p| matches!(*p.0.link.lock(), LinkState::Up(_) | LinkState::Handshaking { .. }))
        {
            bail!(Error::NotPermitted, "comm channel endpoint is already connected");
        }
        let Some(dev) = st.dev.clone() else {
            bail!(Error::BadState, "comm channel connect: set the device first");
        };
        if dev.as_devinfo().kind() != DeviceKind::Host {
            bail!(Error::NotPermitted, "comm channel connect: clients run on a host function");
        }
        let path = transport::service_path("ep", dev.as_devinfo().pci_addr(), name)?;
        let Some(sock) = transport::connect(&path)? else {
            bail!(Error::NotConnected, "comm channel connect: no service {name:?} listens for {:?}", dev);
        };
        let hello = Hello {
            kind: PeerKind::Endpoint,
            max_msg_size: st.msg_size as u32,
            recv_queue_size: st.recv_q as u32,
            name: name.to_string(),
        };
        transport::send(sock.as_fd(), &hello.encode(), &[self.rx_bell.as_fd(), self.tx_bell.as_fd()])?;
        let id = st.next_id;
        st.next_id += 1;
        let peer = PeerAddr::new(
            id,
            LinkState::Handshaking { sock, since: Instant::now(), rx_slots: st.recv_q as u32 },
        );
        peer.0.accepted.store(true, Ordering::Relaxed);
        st.peers.retain(|p| matches!(*p.0.link.lock(), LinkState::Up(_) | LinkState::Handshaking { .. }));
        st.peers.push(peer.clone());
        st.role = Role::Client;
        st.name = name.to_string();
        Ok(peer)
    }

    /// [`Endpoint::service_poll`], at most every [`CRASH_CHECK`] (for busy callers).
    fn service_poll_soon(&self, st: &mut State) {
        if st.polled.elapsed() >= CRASH_CHECK {
            self.service_poll(st);
        }
    }

    /// Service side: accepts clients, answers handshakes, notices peers that left.
    fn service_poll(&self, st: &mut State) {
        st.polled = Instant::now();
        let Some(listener) = st.listener.as_ref() else { return };
        while let Ok(Some(sock)) = listener.accept() {
            match transport::peer_uid(sock.as_fd()) {
                Ok((uid, pid)) if uid == rustix::process::getuid().as_raw() => {
                    let _ = epoll::add(
                        &self.ctrl,
                        sock.as_fd(),
                        epoll::EventData::new_u64(1),
                        epoll::EventFlags::IN,
                    );
                    st.handshakes.push((sock, pid, Instant::now()));
                }
                Ok((uid, pid)) => {
                    tracing::warn!(target: "doca_sdk", "comm channel service {:?}: dropped pid {pid} of uid {uid}", st.name)
                }
                Err(_) => {}
            }
        }
        let pending: Vec<(OwnedFd, i32, Instant)> = std::mem::take(&mut st.handshakes);
        for (sock, pid, since) in pending {
            let mut buf = [0u8; 512];
            match transport::recv(sock.as_fd(), &mut buf) {
                Ok(Recv::Empty) if since.elapsed() < Duration::from_secs(5) => {
                    st.handshakes.push((sock, pid, since))
                }
                Ok(Recv::Packet { len, fds, truncated: false }) => {
                    let _ = epoll::delete(&self.ctrl, sock.as_fd());
                    self.accept_hello(st, sock, pid, &buf[..len], fds);
                }
                _ => {
                    let _ = epoll::delete(&self.ctrl, sock.as_fd());
                    tracing::warn!(target: "doca_sdk", "comm channel service {:?}: dropped pid {pid}: no valid handshake", st.name);
                }
            }
        }
    }

    fn accept_hello(&self, st: &mut State, sock: OwnedFd, pid: i32, bytes: &[u8], fds: Vec<OwnedFd>) {
        let refuse = |code: Error| {
            let _ = transport::send(sock.as_fd(), &Reply::refuse(code).encode(), &[]);
        };
        let hello = match Hello::decode(bytes) {
            Ok(h) if fds.len() == 2 && h.kind == PeerKind::Endpoint && h.name == st.name => h,
            Ok(_) => {
                tracing::warn!(target: "doca_sdk", "comm channel service {:?}: refused pid {pid}: not a matching endpoint handshake", st.name);
                return refuse(Error::NotSupported);
            }
            Err(e) => {
                tracing::warn!(target: "doca_sdk", "comm channel service {:?}: dropped pid {pid}: malformed handshake ({e})", st.name);
                return refuse(e);
            }
        };
        let max_conn =
            st.dev.as_ref().map_or(Ok(512), |d| get_service_max_num_connections(d.as_devinfo())).unwrap_or(0);
        let live = st.peers.iter().filter(|p| matches!(*p.0.link.lock(), LinkState::Up(_))).count();
        if live >= max_conn as usize
            || hello.recv_queue_size == 0
            || hello.recv_queue_size > MAX_QUEUE_SIZE as u32
        {
            return refuse(if live >= max_conn as usize { Error::Full } else { Error::InvalidValue });
        }
        let max = (st.msg_size as u32).max(hello.max_msg_size).min(MAX_MSG_SIZE as u32) as usize + STAMP;
        let c2s = ring::ring_bytes(st.recv_q as u32, max);
        let seg_len = c2s + ring::ring_bytes(hello.recv_queue_size, max);
        let built = (|| {
            let area = Area::create("doca-cc-ep", seg_len)?;
            Ring::init(&area, 0, st.recv_q as u32, max)?;
            Ring::init(&area, c2s, hello.recv_queue_size, max)?;
            let rx = Ring::attach(&area, 0, st.recv_q as u32, max, End::Consumer)?;
            let tx = Ring::attach(&area, c2s, hello.recv_queue_size, max, End::Producer)?;
            let reply = Reply {
                status: 0,
                conn_id: st.next_id,
                server_recv_queue: st.recv_q as u32,
                max_msg_size: (max - STAMP) as u32,
                segment_len: seg_len as u64,
                c2s_offset: 0,
                s2c_offset: c2s as u64,
            };
            transport::send(
                sock.as_fd(),
                &reply.encode(),
                &[area.as_fd(), self.rx_bell.as_fd(), self.tx_bell.as_fd()],
            )?;
            Ok::<_, Error>((tx, rx))
        })();
        let (tx, rx) = match built {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(target: "doca_sdk", "comm channel service {:?}: connection from pid {pid} failed: {e}", st.name);
                return;
            }
        };
        let mut fds = fds.into_iter();
        let (bell, room) = (fds.next().expect("2"), fds.next().expect("2"));
        let _ = epoll::add(&self.ctrl, sock.as_fd(), epoll::EventData::new_u64(2), epoll::EventFlags::IN);
        let id = st.next_id;
        st.next_id += 1;
        let link = EpLink::new(sock, tx, rx, Doorbell::from_fd(bell), Doorbell::from_fd(room));
        st.peers.push(PeerAddr::new(id, LinkState::Up(link)));
        tracing::debug!(target: "doca_sdk", "comm channel service {:?}: new connection #{id} from pid {pid}", st.name);
    }

    /// `doca_comm_channel_ep_sendto`: `msg` (at most the message size, else
    /// `INVALID_VALUE`) to `peer`. A full send queue → `AGAIN` (or, blocking, a sleep until
    /// there is room); a peer that left → `CONNECTION_RESET`; a handshake still running →
    /// `NOT_CONNECTED`.
    pub fn sendto(&self, msg: &[u8], flags: MsgFlags, peer: &PeerAddr) -> Result<()> {
        let (msg_size, send_q) = {
            let st = self.st.lock();
            if matches!(st.role, Role::Unset) {
                bail!(Error::NotConnected, "comm channel sendto before listen or connect");
            }
            (st.msg_size as usize, st.send_q as u64)
        };
        if msg.len() > msg_size {
            bail!(
                Error::InvalidValue,
                "comm channel sendto: {} bytes exceed the message size {msg_size}",
                msg.len()
            );
        }
        let blocking = self.blocking && !flags.contains(MsgFlags::DONTWAIT);
        loop {
            match peer.advance(true) {
                Ok(()) => {}
                Err(Error::ConnectionInProgress) if blocking => {
                    self.sleep(&[]);
                    continue;
                }
                Err(Error::ConnectionInProgress) => return Err(Error::NotConnected),
                Err(e) => return Err(e),
            }
            let link = peer.0.link.lock();
            let LinkState::Up(l) = &*link else { return Err(Error::ConnectionReset) };
            if l.tx.in_flight() < send_q {
                let stamp = now_ns().to_le_bytes();
                let written = l.tx.push_with(KIND_EP_MSG, STAMP + msg.len(), |b| {
                    b[..STAMP].copy_from_slice(&stamp);
                    b[STAMP..].copy_from_slice(msg);
                })?;
                if written {
                    // No progress call will follow: check for a sleeping peer now.
                    if l.tx.peer_needs_wakeup() {
                        l.peer_bell.ring();
                    }
                    drop(link);
                    peer.count(true, msg.len());
                    return Ok(());
                }
            }
            if !blocking {
                return Err(Error::Again);
            }
            let room = l.tx.arm_for_room();
            drop(link);
            if !room {
                self.sleep(&[&self.tx_bell]);
            }
            self.tx_bell.drain();
        }
    }

    /// `doca_comm_channel_ep_recvfrom`: the oldest message from any peer, copied into `buf`,
    /// with its length and sender. Nothing → `AGAIN` (or, blocking, a sleep); a message
    /// larger than `buf` → `TOO_BIG` with the length it needs (the message stays queued);
    /// a client whose service left → `CONNECTION_RESET`. On a service it also accepts new
    /// clients: the first message from a client reveals its address.
    pub fn recvfrom(&self, buf: &mut [u8], flags: MsgFlags) -> Result<(usize, PeerAddr), RecvError> {
        let blocking = self.blocking && !flags.contains(MsgFlags::DONTWAIT);
        let mut woke = false;
        loop {
            let mut st = self.st.lock();
            if matches!(st.role, Role::Unset) {
                return Err(
                    fail!(Error::NotConnected, "comm channel recvfrom before listen or connect").into()
                );
            }
            // Busy callers look at the sockets every CRASH_CHECK; a caller that just woke up
            // (maybe for a new client) looks at once.
            if std::mem::take(&mut woke) {
                self.service_poll(&mut st);
            } else {
                self.service_poll_soon(&mut st);
            }
            let is_client = matches!(st.role, Role::Client);
            // The message that was sent first, across peers.
            let mut best: Option<(u64, PeerAddr)> = None;
            let mut reset = false;
            for p in &st.peers {
                if is_client {
                    match p.advance(false) {
                        Ok(()) => {}
                        Err(Error::ConnectionReset) => reset = true,
                        // A refused or broken handshake never delivers: say so, even to a
                        // blocking caller.
                        Err(Error::ConnectionAborted) => return Err(Error::ConnectionAborted.into()),
                        Err(_) => continue,
                    }
                }
                let link = p.0.link.lock();
                let LinkState::Up(l) = &*link else { continue };
                if let Some(slot) = l.rx.peek() {
                    if let Some(b) = slot.bytes().filter(|b| b.len() >= STAMP) {
                        let stamp = u64::from_le_bytes(b[..STAMP].try_into().expect("8 bytes"));
                        if best.as_ref().is_none_or(|(s, _)| stamp < *s) {
                            best = Some((stamp, p.clone()));
                        }
                    }
                }
            }
            if let Some((_, peer)) = best {
                let link = peer.0.link.lock();
                let LinkState::Up(l) = &*link else { continue };
                let slot = l.rx.peek().expect("seen above");
                let msg = &slot.bytes().expect("checked above")[STAMP..];
                if msg.len() > buf.len() {
                    return Err(RecvError { error: Error::TooBig, needed: Some(msg.len()) });
                }
                let n = msg.len();
                buf[..n].copy_from_slice(msg);
                slot.consume();
                if l.rx.peer_needs_wakeup() {
                    l.peer_room_bell.ring();
                }
                drop(link);
                peer.count(false, n);
                peer.0.accepted.store(true, Ordering::Relaxed);
                return Ok((n, peer));
            }
            if reset && is_client {
                return Err(RecvError::from(Error::ConnectionReset));
            }
            // Peers of a service that left, with nothing more to read: forget them.
            if !is_client {
                st.peers.retain(|p| {
                    let mut link = p.0.link.lock();
                    let gone = matches!(&*link, LinkState::Up(l) if !l.rx.has_data() && l.peer_gone());
                    if gone {
                        if let LinkState::Up(l) = &*link {
                            let _ = epoll::delete(&self.ctrl, l.sock.as_fd());
                        }
                        *link = LinkState::Reset;
                    }
                    !gone && !matches!(&*link, LinkState::Reset | LinkState::Aborted)
                });
            }
            if !blocking {
                return Err(RecvError::from(Error::Again));
            }
            let mut ready = false;
            for p in &st.peers {
                if let LinkState::Up(l) = &*p.0.link.lock() {
                    ready |= l.rx.arm_for_data();
                }
            }
            drop(st);
            if !ready {
                self.sleep(&[&self.rx_bell]);
            }
            woke = true;
            self.rx_bell.drain();
            for p in &self.st.lock().peers {
                if let LinkState::Up(l) = &*p.0.link.lock() {
                    l.rx.disarm_data();
                }
            }
        }
    }

    /// Sleeps (bounded) until a doorbell or the control set is readable.
    fn sleep(&self, bells: &[&Doorbell]) {
        let mut fds: Vec<PollFd<'_>> = bells.iter().map(|b| PollFd::new(*b, PollFlags::IN)).collect();
        fds.push(PollFd::new(&self.ctrl, PollFlags::IN));
        let t = rustix::time::Timespec { tv_sec: 0, tv_nsec: WAIT_SLICE.as_nanos() as i64 };
        let _ = poll(&mut fds, Some(&t));
    }

    /// `doca_comm_channel_ep_disconnect`: closes this side; the peer learns it on its next
    /// send or receive (`CONNECTION_RESET`). Not a peer of this endpoint → `NOT_FOUND`.
    pub fn disconnect(&self, peer: &PeerAddr) -> Result<()> {
        let mut st = self.st.lock();
        let Some(i) = st.peers.iter().position(|p| p == peer) else {
            bail!(Error::NotFound, "comm channel disconnect: not a peer of this endpoint");
        };
        let p = st.peers.remove(i);
        let mut link = p.0.link.lock();
        if let LinkState::Up(l) = &*link {
            let _ = epoll::delete(&self.ctrl, l.sock.as_fd());
            l.hang_up();
        }
        *link = LinkState::Reset;
        Ok(())
    }

    /// `doca_comm_channel_ep_destroy`: disconnects every peer (nothing queued is kept).
    pub fn destroy(self) -> Result<()> {
        let peers: Vec<PeerAddr> = self.st.lock().peers.clone();
        for p in peers {
            let _ = self.disconnect(&p);
        }
        Ok(())
    }

    /// `doca_comm_channel_ep_get_event_channel`: (send, receive) handles for epoll/poll,
    /// after listen or connect (`BAD_STATE` before). Arm them with
    /// [`Endpoint::event_handle_arm_send`] / [`Endpoint::event_handle_arm_recv`].
    pub fn get_event_channel(&self) -> Result<(BorrowedFd<'_>, BorrowedFd<'_>)> {
        if matches!(self.st.lock().role, Role::Unset) {
            bail!(Error::BadState, "comm channel event channel before listen or connect");
        }
        Ok((self.tx_bell.as_fd(), self.rx_bell.as_fd()))
    }

    /// `doca_comm_channel_ep_event_handle_arm_send`: the send handle becomes readable when a
    /// send can proceed (at once if it can now).
    pub fn event_handle_arm_send(&self) -> Result<()> {
        self.tx_bell.drain();
        let st = self.st.lock();
        let mut room = false;
        for p in &st.peers {
            if let LinkState::Up(l) = &*p.0.link.lock() {
                room |= l.tx.arm_for_room();
            }
        }
        if room {
            self.tx_bell.ring();
        }
        Ok(())
    }

    /// `doca_comm_channel_ep_event_handle_arm_recv`: the receive handle becomes readable
    /// when a message arrives (at once if one waits).
    pub fn event_handle_arm_recv(&self) -> Result<()> {
        self.rx_bell.drain();
        let mut st = self.st.lock();
        self.service_poll(&mut st);
        let mut data = false;
        for p in &st.peers {
            if let LinkState::Up(l) = &*p.0.link.lock() {
                data |= l.rx.arm_for_data();
            }
        }
        if data {
            self.rx_bell.ring();
        }
        Ok(())
    }

    /// `doca_comm_channel_ep_get_service_event_channel`: readable when a client connects or
    /// leaves, after listen (`BAD_STATE` before); call
    /// [`Endpoint::update_service_state_info`] to act on it.
    pub fn get_service_event_channel(&self) -> Result<BorrowedFd<'_>> {
        if !matches!(self.st.lock().role, Role::Service) {
            bail!(Error::BadState, "comm channel service event channel before listen");
        }
        Ok(self.ctrl.as_fd())
    }

    /// `doca_comm_channel_ep_update_service_state_info`: accepts waiting clients and notices
    /// the ones that left. Not a listening service → `CONNECTION_RESET`.
    pub fn update_service_state_info(&self) -> Result<()> {
        let mut st = self.st.lock();
        if !matches!(st.role, Role::Service) || st.listener.is_none() {
            return Err(Error::ConnectionReset);
        }
        self.service_poll(&mut st);
        Ok(())
    }

    /// `doca_comm_channel_ep_get_peer_addr_list`: the peers whose first message was received
    /// (a client: its service).
    pub fn peer_addr_list(&self) -> Vec<PeerAddr> {
        self.st.lock().peers.iter().filter(|p| p.0.accepted.load(Ordering::Relaxed)).cloned().collect()
    }

    /// `doca_comm_channel_ep_get_pending_connections`: clients connected whose first
    /// message was not received yet.
    pub fn pending_connections(&self) -> u32 {
        let st = self.st.lock();
        (st.handshakes.len() + st.peers.iter().filter(|p| !p.0.accepted.load(Ordering::Relaxed)).count())
            as u32
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        for p in self.st.get_mut().peers.drain(..) {
            if let LinkState::Up(l) = &*p.0.link.lock() {
                l.hang_up();
            }
            *p.0.link.lock() = LinkState::Reset;
        }
    }
}
