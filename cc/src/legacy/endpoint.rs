//! `struct doca_comm_channel_ep_t`: an endpoint, service or client, making progress inside
//! its calls.
//!
//! A service runs the same [`Acceptor`] as a 2024 server; a client the same [`Dialing`] as
//! a 2024 client; both move messages through a [`crate::transport::channel::Channel`] per
//! peer. The endpoint's control set (the service event channel) holds the listener, the
//! handshake sockets and the peers' sockets: a busy caller looks at it at most once per
//! [`crate::transport::cadence::CTRL_PERIOD`], a caller that just woke up at once.
//!
//! Each peer has two doorbells of its own (socket pairs whose other ends only that peer
//! holds): one for messages in the receive event channel, one for room in the send event
//! channel, each registered under the peer's id. Both event channels are epoll sets; after a
//! sleep, only the doorbells that rang are drained.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::Instant;

use doca_core::{bail, fail, Dev, DevRep, DeviceKind, Error, Now, Result};
use doca_link::discard::PeerFd;
use doca_link::notify::{EpollSet, EventFd, Watched};
use parking_lot::{Mutex, MutexGuard};
use rustix::event::{poll, PollFd, PollFlags};

use super::peer::{AcceptedPeer, PeerAddr, PeerBells, Redial};
use super::{
    effective, effective_queue, ep_cap, get_service_max_num_connections, stamp_of, InitAttr, MsgFlags,
    RecvError, INIT_FLAG_NONBLOCK, MAX_CONNECTIONS_PER_PROCESS, MAX_MSG_SIZE, MAX_QUEUE_SIZE,
    MAX_SERVICE_NAME_LEN, MIN_MSG_SIZE, MIN_QUEUE_SIZE, STAMP, WAIT_SLICE,
};
use crate::proto::handshake::Limits;
use crate::proto::layout::KIND_EP_MSG;
use crate::proto::{Hello, PeerKind};
use crate::transport::accept::{Acceptor, Incoming};
use crate::transport::cadence::Cadence;
use crate::transport::dial::Dialing;
use crate::transport::setup::Bells;
use crate::transport::throttle::Throttle;
use crate::transport::token;

/// Token of an event channel's own eventfd (the endpoint makes its channel readable itself
/// when arming finds work waiting); a peer's doorbell is registered under the peer's id.
const OWN: u64 = u64::MAX;
/// Token of the control set in the receive event channel.
const CTRL: u64 = u64::MAX - 1;

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
    acceptor: Option<Acceptor>,
    cadence: Cadence,
    peers: Vec<PeerAddr>,
    /// The service state at the last `update_service_state_info`: connected peers (whose
    /// connection the service completed with a `recvfrom`) and pending connections.
    snapshot: (Vec<PeerAddr>, u32),
    /// Ids of a client's peers (a service's come from its acceptor).
    next_id: u64,
    /// Lines peers cause, at most one per kind and second.
    throttle: Throttle,
    /// The peer whose failure a non-blocking `recvfrom` of this client reported already
    /// (DOCA reports `CONNECTION_RESET` for the failure, not at every later call).
    reset_told: Option<u64>,
    /// Where a service's next `recvfrom` starts looking among its peers: just after the peer
    /// it last read from (round-robin; peers' stamps are their own claims, never an order).
    turn: usize,
}

/// `struct doca_comm_channel_ep_t`: an endpoint. `Send + Sync`.
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// use doca_cc::legacy::{Endpoint, MsgFlags};
/// use doca_core::{open_device_rep_with_pci, open_device_with_pci, Error, RepFilter};
///
/// # let name = format!("doc-ep-{}", std::process::id());
/// let dpu = open_device_with_pci("03:00.0", None)?;
/// let service = Endpoint::create()?;
/// service.set_device(&dpu)?;
/// service.set_device_rep(&open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.0")?)?;
/// service.listen(&name)?;
///
/// let client = Endpoint::create()?;
/// client.set_device(&open_device_with_pci("b1:00.0", None)?)?;
/// let peer = client.connect(&name)?;
/// let mut buf = [0u8; 4080];
/// for _ in 0..1_000_000 {
///     let _ = service.update_service_state_info();
///     if peer.update_info() != Err(Error::ConnectionInProgress) {
///         break;
///     }
/// }
/// client.sendto(b"hello", MsgFlags::NONE, &peer)?;
/// let (len, _from) = loop {
///     match service.recvfrom(&mut buf, MsgFlags::NONE) {
///         Err(e) if e.error == Error::Again => continue,
///         r => break r.map_err(Error::from)?,
///     }
/// };
/// assert_eq!(&buf[..len], b"hello");
/// # Ok::<(), doca_core::Error>(())
/// ```
pub struct Endpoint {
    st: Mutex<State>,
    /// The control set: listener, handshakes, peers' sockets (the service event channel).
    ctrl: EpollSet,
    /// The receive event channel: readable when a message arrives (a peer's messages
    /// doorbell), when arming found one waiting (`rx_own`), or when the control set has news
    /// (a client connecting, a handshake to answer, a peer leaving), so an endpoint that
    /// only ever sleeps on it still accepts and answers clients.
    rx_channel: EpollSet,
    /// The send event channel: readable when a peer made room (its room doorbell) or when
    /// arming found room (`tx_own`).
    tx_channel: EpollSet,
    rx_own: Watched<EventFd>,
    tx_own: Watched<EventFd>,
    _ctrl_watch: Watched<EpollSet>,
    blocking: bool,
    cookie: u32,
    /// This endpoint's identity, which its peers keep.
    id: Arc<()>,
    /// Its row in the process's status page (`doca_emu`), from listen or connect on. Counts
    /// from several threads sending on one endpoint at once may miss a few (one writer per
    /// row is assumed).
    status: std::sync::OnceLock<doca_core::status::Entry>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let st = self.st.lock();
        write!(f, "Endpoint({:?}, {} peers)", st.name, st.peers.len())
    }
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let role = match self.role {
            Role::Service => "service",
            Role::Client => "client",
            Role::Unset => "endpoint",
        };
        write!(f, "comm channel {role} {:?}", self.name)
    }
}

fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
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
            let q = effective_queue(attr.maxmsgs, "queue size")?;
            st.send_q = q;
            st.recv_q = q;
        }
        Ok(ep)
    }

    fn build(blocking: bool, cookie: u32) -> Result<Endpoint> {
        let ctrl = EpollSet::new()?;
        let (rx_channel, tx_channel) = (EpollSet::new()?, EpollSet::new()?);
        let rx_own = rx_channel.watch(EventFd::new()?, OWN)?;
        let tx_own = tx_channel.watch(EventFd::new()?, OWN)?;
        let ctrl_watch = rx_channel.watch(ctrl.clone(), CTRL)?;
        Ok(Endpoint {
            st: Mutex::new(State {
                dev: None,
                rep: None,
                msg_size: MAX_MSG_SIZE,
                send_q: MIN_QUEUE_SIZE,
                recv_q: MIN_QUEUE_SIZE,
                role: Role::Unset,
                name: String::new(),
                acceptor: None,
                cadence: Cadence::new(),
                peers: Vec::new(),
                snapshot: (Vec::new(), 0),
                next_id: 1,
                throttle: Throttle::new(),
                reset_told: None,
                turn: 0,
            }),
            ctrl,
            rx_channel,
            tx_channel,
            rx_own,
            tx_own,
            _ctrl_watch: ctrl_watch,
            blocking,
            cookie,
            id: Arc::new(()),
            status: std::sync::OnceLock::new(),
        })
    }

    /// The 1.x attribute cookie (0 for a 2.x endpoint).
    pub fn cookie(&self) -> u32 {
        self.cookie
    }

    fn configurable(&self) -> Result<MutexGuard<'_, State>> {
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
        // The state first (`BAD_STATE` once active, whatever the value), as DOCA's library.
        let mut st = self.configurable()?;
        st.msg_size = effective(size as u32, MIN_MSG_SIZE, MAX_MSG_SIZE, "message size")?;
        Ok(())
    }

    /// `doca_comm_channel_ep_get_max_msg_size`: the size in effect.
    pub fn max_msg_size(&self) -> u16 {
        self.st.lock().msg_size
    }

    /// `doca_comm_channel_ep_set_send_queue_size`: raised to 16 and rounded up to a power of
    /// two; 0 or above 8192 → `INVALID_VALUE` (once active `BAD_STATE`, checked first).
    pub fn set_send_queue_size(&self, size: u16) -> Result<()> {
        let mut st = self.configurable()?;
        st.send_q = effective_queue(size as u32, "send queue size")?;
        Ok(())
    }

    /// `doca_comm_channel_ep_get_send_queue_size`.
    pub fn send_queue_size(&self) -> u16 {
        self.st.lock().send_q
    }

    /// `doca_comm_channel_ep_set_recv_queue_size`: raised to 16 and rounded up to a power of
    /// two; 0 or above 8192 → `INVALID_VALUE` (once active `BAD_STATE`, checked first).
    pub fn set_recv_queue_size(&self, size: u16) -> Result<()> {
        let mut st = self.configurable()?;
        st.recv_q = effective_queue(size as u32, "receive queue size")?;
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
    /// representor (`BAD_STATE`); a host device → `NOT_SUPPORTED`; listening or connected
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
                Error::NotSupported,
                "comm channel listen: services run on the DPU device, not a host function"
            );
        }
        let limits = Limits {
            kind: PeerKind::Endpoint,
            name: name.to_string(),
            function: rep.as_devinfo().pci_addr(),
            max_msg_size: st.msg_size as u32,
            recv_queue_size: st.recv_q as u32,
            max_recv_queue: MAX_QUEUE_SIZE.next_power_of_two() as u32,
            max_connections: get_service_max_num_connections(dev.as_devinfo())?,
            max_connections_per_peer: ep_cap(dev.as_devinfo(), &MAX_CONNECTIONS_PER_PROCESS)?,
        };
        st.acceptor = Some(Acceptor::listen(&self.ctrl, "ep", limits)?);
        st.role = Role::Service;
        st.name = name.to_string();
        drop(st);
        self.show(dev.as_devinfo().pci_addr(), Some(rep.as_devinfo().pci_addr()), name);
        Ok(())
    }

    /// `doca_comm_channel_ep_connect`: connect to service `name` (host side) and return its
    /// address; the handshake completes asynchronously (see [`PeerAddr::update_info`]). No
    /// service listening → `CONNECTION_ABORTED`; its backlog full → `AGAIN`; connected
    /// already → `NOT_PERMITTED`; a DPU device → `NOT_SUPPORTED`; no device → `BAD_STATE`.
    pub fn connect(&self, name: &str) -> Result<PeerAddr> {
        Endpoint::check_name(name)?;
        let mut st = self.st.lock();
        if matches!(st.role, Role::Service) {
            bail!(Error::NotPermitted, "comm channel connect on a listening endpoint");
        }
        if st.peers.iter().any(PeerAddr::is_live) {
            bail!(Error::NotPermitted, "comm channel endpoint is already connected");
        }
        let Some(dev) = st.dev.clone() else {
            bail!(Error::BadState, "comm channel connect: set the device first");
        };
        if dev.as_devinfo().kind() != DeviceKind::Host {
            bail!(Error::NotSupported, "comm channel connect: clients run on a host function");
        }
        let pci = dev.as_devinfo().pci_addr();
        let hello = Hello {
            kind: PeerKind::Endpoint,
            max_msg_size: st.msg_size as u32,
            recv_queue_size: st.recv_q as u32,
            function: pci,
            name: name.to_string(),
        };
        // Doorbells for this service alone (the same ends go again if it must start over).
        let bells = Bells::two()?;
        let theirs = bells.theirs().map(|fd| fd.try_clone_to_owned().map(PeerFd::new));
        let [Ok(theirs_rx), Ok(theirs_tx)] = theirs else {
            bail!(Error::OperatingSystem, "comm channel connect: cannot duplicate a doorbell");
        };
        let hello_again = hello.clone();
        let Some(dialing) = Dialing::start("ep", pci, hello, bells.theirs(), Instant::now())? else {
            bail!(Error::ConnectionAborted, "comm channel connect: no service {name:?} listens for {dev:?}");
        };
        let id = st.next_id;
        st.next_id += 1;
        let tok = token::pending(id as usize);
        let redial =
            Redial::new(hello_again, [theirs_rx, theirs_tx], self.ctrl.clone(), tok, dialing.since());
        let bells = self.watch_bells(bells, id)?;
        let dialing = dialing.watched(&self.ctrl, tok)?;
        let peer = PeerAddr::dialing(&self.id, id, dialing, bells, redial);
        st.peers.retain(PeerAddr::is_live);
        st.peers.push(peer.clone());
        st.role = Role::Client;
        st.name = name.to_string();
        drop(st);
        self.show(pci, None, name);
        Ok(peer)
    }

    /// Claims the endpoint's row in the status page (once: listen or connect).
    fn show(&self, dev: doca_core::PciAddr, rep: Option<doca_core::PciAddr>, name: &str) {
        if self.status.get().is_none() {
            let kind = "comm_channel_ep";
            let id = doca_core::status::Identity { kind, dev: Some(dev), rep, name, conn_id: 0 };
            let _ = self.status.set(doca_core::status::Entry::claim(id));
        }
    }

    /// Looks at the control set (a busy caller at most once per control period, one that
    /// just woke up or asks for the service state at once): accepts clients, answers
    /// handshakes, notices peers whose socket closed.
    fn poll(&self, st: &mut State, now: &Now<'_>, force: bool) {
        if force {
            st.cadence.soon();
        }
        // No peer yet: every call may look once the period passed (a service polled once a
        // second, as 2.5's sync_event_dpu sample polls recvfrom, accepts at its next call).
        let look = if st.peers.is_empty() { st.cadence.turn_unlinked(now) } else { st.cadence.turn(now) };
        if !look {
            return;
        }
        let mut acceptor_ready = false;
        for t in self.ctrl.ready() {
            match token::kind(t) {
                token::LINK => {
                    if let Some(p) = st.peers.iter().find(|p| p.id() == token::key(t) as u64) {
                        p.check_socket();
                    }
                }
                token::LISTENER | token::PENDING => acceptor_ready = true,
                _ => {}
            }
        }
        let live = st.peers.iter().filter(|p| p.is_up()).count();
        if let Some(e) = self.status.get() {
            e.set_connections(live);
        }
        let mut incoming = Vec::new();
        let who = st.to_string();
        if let Some(acceptor) = st.acceptor.as_mut() {
            let now = now.get();
            if acceptor_ready || acceptor.next_deadline().is_some_and(|d| d <= now) {
                let peers = &st.peers;
                let live_of = |peer| peers.iter().filter(|p| p.peer() == Some(peer) && p.is_up()).count();
                acceptor.poll(&who, &self.ctrl, now, live, &live_of, &Bells::two, &mut incoming);
            }
        }
        for inc in incoming {
            let Incoming::Up(up) = inc else { continue };
            let up = *up;
            let bells = up
                .sock
                .set_token(token::link(up.id as usize))
                .map_err(doca_core::Error::from)
                .and_then(|()| self.watch_bells(up.bells, up.id));
            let bells = match bells {
                Ok(bells) => bells,
                Err(e) => {
                    tracing::error!(target: "doca_sdk", "{who}: connection from pid {} failed: {e}", up.pid);
                    continue;
                }
            };
            let (id, state, sock, channel, budget) = (up.id, up.state, up.sock, up.channel, up.budget);
            st.peers
                .push(PeerAddr::accepted(&self.id, AcceptedPeer { id, state, sock, channel, bells, budget }));
        }
    }

    /// Registers this side's ends of peer `id`'s doorbells in the event channels.
    fn watch_bells(&self, bells: Bells, id: u64) -> Result<PeerBells> {
        let (rx, tx) = bells.keep();
        let Some(tx) = tx else { bail!(Error::Unexpected, "comm channel: a peer without a room doorbell") };
        Ok(PeerBells { rx: self.rx_channel.watch(rx, id)?, tx: self.tx_channel.watch(tx, id)? })
    }

    /// After a sleep on an event channel (`room`: the send one): silences what rang there —
    /// the peers' doorbells it reports and its own eventfd — and nothing else.
    fn drain_woken(&self, st: &State, room: bool) {
        let (channel, own) =
            if room { (&self.tx_channel, &self.tx_own) } else { (&self.rx_channel, &self.rx_own) };
        for t in channel.ready() {
            match t {
                OWN => {
                    own.drain();
                }
                CTRL => {}
                id => {
                    if let Some(p) = st.peers.iter().find(|p| p.id() == id) {
                        p.drain_bell(room);
                    }
                }
            }
        }
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
                    self.sleep(None);
                    continue;
                }
                Err(Error::ConnectionInProgress) => return Err(Error::NotConnected),
                Err(e) => return Err(e),
            }
            let sent = peer.with_channel(|c| {
                if c.in_flight() >= send_q {
                    return Ok(false);
                }
                let stamp = now_ns().to_le_bytes();
                let written = c.send(KIND_EP_MSG, STAMP + msg.len(), |b| {
                    b[..STAMP].copy_from_slice(&stamp);
                    b[STAMP..].copy_from_slice(msg);
                })?;
                // No progress call follows: check for a sleeping peer now.
                c.wake_peer();
                Ok::<bool, Error>(written)
            });
            match sent {
                None => return Err(Error::ConnectionReset),
                Some(Err(e)) => return Err(e),
                Some(Ok(true)) => {
                    peer.count(true, msg.len());
                    if let Some(e) = self.status.get() {
                        e.sent(msg.len());
                    }
                    return Ok(());
                }
                Some(Ok(false)) if !blocking => return Err(Error::Again),
                Some(Ok(false)) => {
                    if peer.with_channel(|c| c.arm_for_room()) == Some(false) {
                        self.sleep(Some(&self.tx_channel));
                    }
                    self.drain_woken(&self.st.lock(), true);
                }
            }
        }
    }

    /// `doca_comm_channel_ep_recvfrom`: the next message, copied into `buf`, with its length
    /// and sender: peers take turns (round-robin, starting after the peer read last), each
    /// peer's messages in arrival order. Nothing → `AGAIN` (or, blocking, a sleep); a message
    /// larger than `buf` → `TOO_BIG` with the length it needs (the message stays queued);
    /// a client whose service left → `CONNECTION_RESET` (once for a non-blocking call, then
    /// `AGAIN`; at every blocking call). On a service it also accepts new
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
            self.poll(&mut st, &Now::system(), std::mem::take(&mut woke));
            let is_client = matches!(st.role, Role::Client);
            // The first peer with a message, in turn from the one after the peer read last.
            // (The send stamps are written by the peers: ordering by them let one peer that
            // stamps 0 starve every other.)
            let mut best: Option<(usize, PeerAddr)> = None;
            let mut broken: Vec<PeerAddr> = Vec::new();
            let mut reset = None;
            let n = st.peers.len();
            let start = if n == 0 { 0 } else { st.turn % n };
            for k in 0..n {
                let at = (start + k) % n;
                let p = &st.peers[at];
                if is_client {
                    match p.advance(false) {
                        Ok(()) => {}
                        Err(Error::ConnectionReset) => reset = Some(p.id()),
                        // A refused or broken handshake never delivers: say so, even to a
                        // blocking caller.
                        Err(Error::ConnectionAborted) => return Err(Error::ConnectionAborted.into()),
                        Err(_) => continue,
                    }
                }
                // The peer may rewrite a message's header at any time: each look at it checks
                // what it reads, and the look that takes the message checks it again.
                let stamp = p.with_channel(|c| c.recv().map(|slot| slot.bytes().and_then(stamp_of)));
                match stamp {
                    Some(Some(Some(_))) if best.is_none() => best = Some((at, p.clone())),
                    Some(Some(None)) => broken.push(p.clone()),
                    _ => {}
                }
            }
            for p in broken.drain(..) {
                tracing::error!(target: "doca_sdk", "comm channel: peer {} sent a malformed message: disconnected", p.id());
                p.hang_up(Error::ConnectionReset);
            }
            if let Some((at, peer)) = best {
                let got = peer.with_channel(|c| {
                    let slot = c.recv()?;
                    let Some(msg) = slot.bytes().and_then(|b| b.get(STAMP..)) else {
                        return Some(Err(None));
                    };
                    if msg.len() > buf.len() {
                        return Some(Err(Some(RecvError { error: Error::TooBig, needed: Some(msg.len()) })));
                    }
                    let n = msg.len();
                    buf[..n].copy_from_slice(msg);
                    slot.consume();
                    c.wake_peer();
                    Some(Ok(n))
                });
                match got.flatten() {
                    Some(Ok(n)) => {
                        st.turn = at + 1;
                        peer.count(false, n);
                        if let Some(e) = self.status.get() {
                            e.received(n);
                        }
                        peer.set_accepted();
                        return Ok((n, peer));
                    }
                    Some(Err(Some(e))) => return Err(e),
                    Some(Err(None)) => {
                        // Rewritten by the peer since the look above.
                        tracing::error!(target: "doca_sdk", "comm channel: peer {} rewrote a message as it was read: disconnected", peer.id());
                        peer.hang_up(Error::ConnectionReset);
                        continue;
                    }
                    // Gone meanwhile: look again.
                    None => continue,
                }
            }
            // A service that left: `CONNECTION_RESET`, once (then `AGAIN`: an application that
            // loops on recvfrom, arming and sleeping on AGAIN, sleeps); a blocking call never
            // sleeps on a dead service, so it hears it every time.
            if let Some(id) = reset.filter(|_| is_client) {
                if blocking || st.reset_told != Some(id) {
                    st.reset_told = Some(id);
                    return Err(RecvError::from(Error::ConnectionReset));
                }
            }
            // Peers of a service that left or broke their rings, with nothing more to read:
            // forget them.
            if !is_client {
                let State { peers, throttle, .. } = &mut *st;
                peers.retain(|p| {
                    let gone = p.drained_and_gone();
                    if gone {
                        p.log_if_broken(throttle);
                        p.hang_up(Error::ConnectionReset);
                    }
                    !gone
                });
            }
            if !blocking {
                return Err(RecvError::from(Error::Again));
            }
            let mut ready = false;
            for p in &st.peers {
                ready |= p.with_channel(|c| c.arm_for_data()).unwrap_or(false);
            }
            drop(st);
            if !ready {
                self.sleep(Some(&self.rx_channel));
            }
            woke = true;
            let st = self.st.lock();
            self.drain_woken(&st, false);
            for p in &st.peers {
                p.with_channel(|c| c.disarm());
            }
        }
    }

    /// Sleeps (bounded) until an event channel (when given) or the control set is readable.
    fn sleep(&self, channel: Option<&EpollSet>) {
        let mut fds = [
            PollFd::new(channel.unwrap_or(&self.ctrl), PollFlags::IN),
            PollFd::new(&self.ctrl, PollFlags::IN),
        ];
        let t = rustix::time::Timespec { tv_sec: 0, tv_nsec: WAIT_SLICE.as_nanos() as i64 };
        let _ = poll(&mut fds, Some(&t));
    }

    /// `doca_comm_channel_ep_disconnect`: closes this side; the peer learns it on its next
    /// send or receive (`CONNECTION_RESET`), this side's calls on it answer `NOT_CONNECTED`
    /// from then on. A peer that already left (in error state, forgotten by a service or not)
    /// is disconnected all the same, once, as the guide asks applications to do. A peer
    /// disconnected already, or of another endpoint → `NOT_CONNECTED`.
    pub fn disconnect(&self, peer: &PeerAddr) -> Result<()> {
        if !peer.belongs_to(&self.id) {
            bail!(Error::NotConnected, "comm channel disconnect: not a peer of this endpoint");
        }
        if !peer.mark_disconnected() {
            bail!(Error::NotConnected, "comm channel disconnect: peer {} is disconnected already", peer.id());
        }
        let mut st = self.st.lock();
        st.peers.retain(|p| p != peer);
        st.snapshot.0.retain(|p| p != peer);
        peer.hang_up(Error::NotConnected);
        Ok(())
    }

    /// `doca_comm_channel_ep_destroy`: disconnects every peer (nothing queued is kept).
    pub fn destroy(self) -> Result<()> {
        Ok(())
    }

    /// `doca_comm_channel_ep_get_event_channel`: (send, receive) handles for epoll/poll,
    /// after listen or connect (`BAD_STATE` before). Arm them with
    /// [`Endpoint::event_handle_arm_send`] / [`Endpoint::event_handle_arm_recv`]. The receive
    /// handle also becomes readable when a client connects or a handshake can be answered:
    /// a service that only sleeps on it accepts its clients in the `recvfrom` that follows.
    pub fn get_event_channel(&self) -> Result<(BorrowedFd<'_>, BorrowedFd<'_>)> {
        if matches!(self.st.lock().role, Role::Unset) {
            bail!(Error::BadState, "comm channel event channel before listen or connect");
        }
        Ok((self.tx_channel.as_fd(), self.rx_channel.as_fd()))
    }

    /// `doca_comm_channel_ep_event_handle_arm_send`: the send handle becomes readable when a
    /// send can proceed (at once if it can now).
    pub fn event_handle_arm_send(&self) -> Result<()> {
        let st = self.st.lock();
        self.drain_woken(&st, true);
        let room = st.peers.iter().any(|p| p.with_channel(|c| c.arm_for_room()).unwrap_or(false));
        if room {
            self.tx_own.ring();
        }
        Ok(())
    }

    /// `doca_comm_channel_ep_event_handle_arm_recv`: the receive handle becomes readable
    /// when a message arrives (at once if one waits).
    pub fn event_handle_arm_recv(&self) -> Result<()> {
        let mut st = self.st.lock();
        self.drain_woken(&st, false);
        self.poll(&mut st, &Now::system(), true);
        let data = st.peers.iter().any(|p| p.with_channel(|c| c.arm_for_data()).unwrap_or(false));
        if data {
            self.rx_own.ring();
        }
        Ok(())
    }

    /// Service-only calls: a client → `NOT_SUPPORTED`, before listen → `BAD_STATE`.
    fn service_only<'a>(&'a self, what: &str) -> Result<MutexGuard<'a, State>> {
        let st = self.st.lock();
        match st.role {
            Role::Service => Ok(st),
            Role::Client => bail!(Error::NotSupported, "comm channel {what}: a service call, on a client"),
            Role::Unset => bail!(Error::BadState, "comm channel {what} before listen"),
        }
    }

    /// `doca_comm_channel_ep_get_service_event_channel`: readable when a client connects or
    /// leaves; call [`Endpoint::update_service_state_info`] to act on it. Service only.
    pub fn get_service_event_channel(&self) -> Result<BorrowedFd<'_>> {
        drop(self.service_only("get_service_event_channel")?);
        Ok(self.ctrl.as_fd())
    }

    /// `doca_comm_channel_ep_update_service_state_info`: accepts waiting clients, notices
    /// the ones that left, and takes the snapshot that [`Endpoint::peer_addr_list`] and
    /// [`Endpoint::pending_connections`] report. Service only.
    pub fn update_service_state_info(&self) -> Result<()> {
        let mut st = self.service_only("update_service_state_info")?;
        self.poll(&mut st, &Now::system(), true);
        let live: Vec<PeerAddr> = st.peers.iter().filter(|p| p.is_live()).cloned().collect();
        let connected: Vec<PeerAddr> = live.iter().filter(|p| p.is_accepted()).cloned().collect();
        let handshakes = st.acceptor.as_ref().map_or(0, Acceptor::num_pending);
        let pending = (handshakes + live.len() - connected.len()) as u32;
        st.snapshot = (connected, pending);
        Ok(())
    }

    /// `doca_comm_channel_ep_get_peer_addr_list`: the connected peers at the last
    /// [`Endpoint::update_service_state_info`] (the service completes a client's connection
    /// with the `recvfrom` that returns its first message). Service only.
    pub fn peer_addr_list(&self) -> Result<Vec<PeerAddr>> {
        Ok(self.service_only("get_peer_addr_list")?.snapshot.0.clone())
    }

    /// `doca_comm_channel_ep_get_pending_connections`: connections clients initiated that
    /// the service had not completed yet, at the last
    /// [`Endpoint::update_service_state_info`]. Service only.
    pub fn pending_connections(&self) -> Result<u32> {
        Ok(self.service_only("get_pending_connections")?.snapshot.1)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        for p in self.st.get_mut().peers.drain(..) {
            p.hang_up(Error::ConnectionReset);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use doca_core::{open_device_rep_with_pci, open_device_with_pci, RepFilter};

    use super::*;

    fn retry<T, E: Copy + Into<Error>>(mut f: impl FnMut() -> Result<T, E>) -> Result<T, E> {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            match f() {
                Err(e)
                    if matches!(e.into(), Error::Again | Error::ConnectionInProgress)
                        && Instant::now() < end =>
                {
                    std::thread::sleep(Duration::from_micros(50));
                }
                r => return r,
            }
        }
    }

    /// A peer that writes a message too short to carry its send time (the peer's process
    /// writes the ring as it likes) is disconnected with a log line: the service neither
    /// panics nor stays stuck on that message, and the peer's later messages are not taken.
    #[test]
    fn a_message_too_short_for_its_stamp_disconnects_that_peer() {
        let name = format!("short-msg-{}", std::process::id());
        let dev = open_device_with_pci("03:00.0", None).unwrap();
        let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "3b:00.0").unwrap();
        let svc = Endpoint::create().unwrap();
        svc.set_device(&dev).unwrap();
        svc.set_device_rep(&rep).unwrap();
        svc.listen(&name).unwrap();
        let cep = Endpoint::create().unwrap();
        cep.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
        let peer = cep.connect(&name).unwrap();
        let mut buf = [0u8; 64];
        // The service completes the handshake as it polls.
        retry(|| {
            svc.update_service_state_info().unwrap();
            match cep.sendto(b"hello", MsgFlags::NONE, &peer) {
                Err(Error::NotConnected) => Err(Error::ConnectionInProgress),
                r => r,
            }
        })
        .unwrap();
        let (n, _) = retry(|| svc.recvfrom(&mut buf, MsgFlags::NONE).map_err(|e| e.error)).unwrap();
        assert_eq!(&buf[..n], b"hello");

        // What a hostile client process can write into its ring: 3 bytes, no stamp.
        let written = peer.with_channel(|c| c.send(KIND_EP_MSG, 3, |b| b.copy_from_slice(&[1, 2, 3])));
        assert_eq!(written, Some(Ok(true)));
        cep.sendto(b"after", MsgFlags::NONE, &peer).unwrap();
        for _ in 0..3 {
            assert_eq!(svc.recvfrom(&mut buf, MsgFlags::NONE).unwrap_err().error, Error::Again);
        }
        svc.update_service_state_info().unwrap();
        assert_eq!(svc.peer_addr_list().unwrap().len(), 0, "the service forgot that client");
        let end = Instant::now() + Duration::from_secs(20);
        let reset = loop {
            match cep.sendto(b"more", MsgFlags::NONE, &peer) {
                Err(e) if e != Error::Again || Instant::now() > end => break e,
                _ => std::thread::sleep(Duration::from_millis(1)),
            }
        };
        assert_eq!(reset, Error::ConnectionReset, "the client learns it was dropped");
    }

    /// The send stamp is the sender's claim: a client that stamps its messages 0 (the
    /// oldest there can be) gets no more than its turn. With ten of its messages waiting,
    /// another client's one message is read within two receives (round-robin), not after
    /// all ten.
    #[test]
    fn a_client_stamping_zero_takes_its_turn_and_no_more() {
        let name = format!("stamp-zero-{}", std::process::id());
        let dev = open_device_with_pci("03:00.0", None).unwrap();
        let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "3b:00.0").unwrap();
        let svc = Endpoint::create().unwrap();
        svc.set_device(&dev).unwrap();
        svc.set_device_rep(&rep).unwrap();
        svc.listen(&name).unwrap();
        let mut buf = [0u8; 64];
        let mut clients = Vec::new();
        for hello in [&b"hostile"[..], b"honest"] {
            let cep = Endpoint::create().unwrap();
            cep.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
            let peer = cep.connect(&name).unwrap();
            retry(|| {
                svc.update_service_state_info().unwrap();
                match cep.sendto(hello, MsgFlags::NONE, &peer) {
                    Err(Error::NotConnected) => Err(Error::ConnectionInProgress),
                    r => r,
                }
            })
            .unwrap();
            let (n, _) = retry(|| svc.recvfrom(&mut buf, MsgFlags::NONE).map_err(|e| e.error)).unwrap();
            assert_eq!(&buf[..n], hello);
            clients.push((cep, peer));
        }
        let (hostile, honest) = (&clients[0], &clients[1]);
        // What a hostile client process can write into its ring: well-formed messages that
        // claim to be sent at time 0.
        for _ in 0..10 {
            let written = hostile.1.with_channel(|c| {
                c.send(KIND_EP_MSG, STAMP + 4, |b| {
                    b[..STAMP].copy_from_slice(&0u64.to_le_bytes());
                    b[STAMP..].copy_from_slice(b"zero");
                })
            });
            assert_eq!(written, Some(Ok(true)));
        }
        honest.0.sendto(b"mine", MsgFlags::NONE, &honest.1).unwrap();
        let mut read = Vec::new();
        for _ in 0..11 {
            let (n, _) = retry(|| svc.recvfrom(&mut buf, MsgFlags::NONE).map_err(|e| e.error)).unwrap();
            read.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        let at = read.iter().position(|m| m == "mine").expect("the honest message was read");
        assert!(at < 2, "the honest message came after {at} stamped 0: {read:?}");
        assert_eq!(read.iter().filter(|m| *m == "zero").count(), 10, "{read:?}");
    }

    /// A service polled rarely (2.5's sync_event_dpu sample calls recvfrom once a second):
    /// with no peer yet, each call looks at the control set once the period passed, so a
    /// client's handshake completes in a few calls, not `CTRL_EVERY` per step.
    #[test]
    fn a_rarely_polled_service_completes_a_handshake_in_a_few_calls() {
        let name = format!("rare-svc-{}", std::process::id());
        let dev = open_device_with_pci("03:00.0", None).unwrap();
        let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "3b:00.0").unwrap();
        let svc = Endpoint::create().unwrap();
        svc.set_device(&dev).unwrap();
        svc.set_device_rep(&rep).unwrap();
        svc.listen(&name).unwrap();
        let mut buf = [0u8; 64];
        // The sample's first call comes before any client: it takes the first look.
        assert_eq!(svc.recvfrom(&mut buf, MsgFlags::NONE).unwrap_err().error, Error::Again);
        let cep = Endpoint::create().unwrap();
        cep.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
        let peer = cep.connect(&name).unwrap();
        let mut calls = 0;
        let sent = loop {
            match cep.sendto(b"blob", MsgFlags::NONE, &peer) {
                Err(Error::NotConnected | Error::Again) if calls < 20 => {
                    std::thread::sleep(Duration::from_millis(2));
                    let _ = svc.recvfrom(&mut buf, MsgFlags::NONE);
                    calls += 1;
                }
                r => break r,
            }
        };
        assert_eq!(sent, Ok(()), "the handshake completed within {calls} calls of the service");
    }
}
