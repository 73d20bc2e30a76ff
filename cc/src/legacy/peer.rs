//! `struct doca_comm_channel_addr_t`: one peer of an endpoint, with its connection's state
//! ([`ConnState`]), the endpoint's doorbells for it ([`PeerBells`]) and, once up, its
//! [`Channel`].
//!
//! A client's peer is `Handshaking` until [`PeerAddr::update_info`] (or any call on it) reads
//! the service's answer. An up peer is wound down (`Down(CONNECTION_RESET)`) once the other
//! side hung up or died and its last messages were read.

use doca_link::discard::PeerFd;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use doca_core::{Error, Result};
use doca_link::budget::PeerId;
use doca_link::notify::{Doorbell, EpollSet, Watched};
use parking_lot::Mutex;

use crate::proto::handshake::{BUSY, LEGACY_REPLY_DEADLINE};
use crate::proto::state::ConnState;
use crate::proto::Hello;
use crate::transport::budget::ConnBudget;
use crate::transport::channel::Channel;
use crate::transport::dial::{Dialed, Dialing};
use crate::transport::throttle::{held_back, Throttle};
use crate::transport::token;
use doca_link::{recv, Recv};

/// The kind of throttled log line for a broken ring.
const LOG_BROKEN_RING: u32 = 1;

/// Who the state changes are traced as.
const WHO: &str = "comm channel";

/// Pause before a client tries again after a busy service.
const RETRY_PAUSE: Duration = Duration::from_millis(1);

/// The endpoint's doorbells for one peer, registered in its event channels under the peer's
/// id: only that peer holds the other ends. They go when the connection does.
pub(crate) struct PeerBells {
    /// Rung when the peer sent messages (in the receive event channel).
    pub(crate) rx: Watched<Doorbell>,
    /// Rung when the peer made room (in the send event channel).
    pub(crate) tx: Watched<Doorbell>,
}

/// A client a service accepted, as [`PeerAddr::accepted`] takes it.
pub(crate) struct AcceptedPeer {
    pub(crate) id: u64,
    pub(crate) state: ConnState,
    /// The socket, in the endpoint's control set under the connection's token.
    pub(crate) sock: Watched<PeerFd>,
    pub(crate) channel: Channel,
    pub(crate) bells: PeerBells,
    pub(crate) budget: ConnBudget,
}

/// What a peer's connection holds in each phase.
enum Wire {
    /// The handshake runs (client side).
    Dialing(Dialing<Watched<PeerFd>>, PeerBells),
    /// The service was busy: the handshake starts over at `at` (client side).
    Retry { at: Instant, bells: PeerBells },
    /// Up: the socket (in the endpoint's control set), the rings, the doorbells and (on a
    /// service) what the connection holds of its peer process's budget.
    Up { sock: Watched<PeerFd>, channel: Channel, bells: PeerBells, _budget: Option<Box<ConnBudget>> },
    /// Down: nothing left.
    Gone,
}

/// What a client needs to start its handshake over when the service answered busy (or
/// closed the socket without answering), within [`LEGACY_REPLY_DEADLINE`] of its first try.
pub(crate) struct Redial {
    hello: Hello,
    /// The sockets ringing this side's doorbells, handed to the service with each try (closed
    /// on a closing thread: the service holds them too).
    bells: [PeerFd; 2],
    set: EpollSet,
    token: u64,
    first: Instant,
}

impl Redial {
    /// A client's way to try again: `hello` with `bells`, its socket watched in `set` under
    /// `token`; its first try started at `first`.
    pub(crate) fn new(hello: Hello, bells: [PeerFd; 2], set: EpollSet, token: u64, first: Instant) -> Redial {
        Redial { hello, bells, set, token, first }
    }

    /// When the connection is reported `CONNECTION_ABORTED` if still not up.
    fn deadline(&self) -> Instant {
        self.first + LEGACY_REPLY_DEADLINE
    }

    /// A new handshake (`None`: no service listens any more).
    fn again(&self, now: Instant) -> Result<Option<Dialing<Watched<PeerFd>>>> {
        let bells = [self.bells[0].as_fd(), self.bells[1].as_fd()];
        let Some(d) = Dialing::start("ep", self.hello.function, self.hello.clone(), bells, now)? else {
            return Ok(None);
        };
        Ok(Some(d.watched(&self.set, self.token)?))
    }
}

struct Link {
    state: ConnState,
    wire: Wire,
    /// A client's way to start over while its handshake runs.
    redial: Option<Redial>,
    /// The socket reached end of file: the peer died or left.
    eof: bool,
}

struct Peer {
    /// The endpoint it belongs to (its identity).
    owner: Weak<()>,
    id: u64,
    /// The other side's process, when known (a service's clients).
    peer: Option<PeerId>,
    user_data: AtomicU64,
    link: Mutex<Link>,
    counters: [AtomicU64; 4],
    snapshot: Mutex<[u64; 5]>,
    accepted: AtomicBool,
    /// The application disconnected it (`ep_disconnect`): a second disconnect finds no
    /// connection.
    disconnected: AtomicBool,
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
    fn new(
        owner: &Arc<()>,
        id: u64,
        peer: Option<PeerId>,
        state: ConnState,
        wire: Wire,
        redial: Option<Redial>,
        accepted: bool,
    ) -> PeerAddr {
        PeerAddr(Arc::new(Peer {
            owner: Arc::downgrade(owner),
            id,
            peer,
            user_data: AtomicU64::new(0),
            link: Mutex::new(Link { state, wire, redial, eof: false }),
            counters: Default::default(),
            snapshot: Mutex::new([0; 5]),
            accepted: AtomicBool::new(accepted),
            disconnected: AtomicBool::new(false),
        }))
    }

    /// A client of a service, up (its first message not read yet).
    pub(crate) fn accepted(owner: &Arc<()>, up: AcceptedPeer) -> PeerAddr {
        let AcceptedPeer { id, state, sock, channel, bells, budget } = up;
        let peer = budget.account().peer();
        let wire = Wire::Up { sock, channel, bells, _budget: Some(Box::new(budget)) };
        PeerAddr::new(owner, id, Some(peer), state, wire, None, false)
    }

    /// A client's service, while the handshake runs (started over with `redial` when the
    /// service is busy).
    pub(crate) fn dialing(
        owner: &Arc<()>,
        id: u64,
        dialing: Dialing<Watched<PeerFd>>,
        bells: PeerBells,
        redial: Redial,
    ) -> PeerAddr {
        let state = ConnState::Handshaking { since: dialing.since() };
        PeerAddr::new(owner, id, None, state, Wire::Dialing(dialing, bells), Some(redial), true)
    }

    /// Whether this peer belongs to the endpoint `owner` identifies (now or in the past: a
    /// peer that left is still the endpoint's to disconnect).
    pub(crate) fn belongs_to(&self, owner: &Arc<()>) -> bool {
        std::ptr::eq(self.0.owner.as_ptr(), Arc::as_ptr(owner))
    }

    /// A number naming this peer within its endpoint, for the peer's whole life (tables
    /// keyed by peer use it).
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// The other side's process, when known (a service's clients).
    /// The other side's process, when known (a service's clients).
    pub(crate) fn peer(&self) -> Option<PeerId> {
        self.0.peer
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
    /// runs; `CONNECTION_ABORTED` when it failed, once the peer is gone and once this side
    /// disconnected it (the header's one failure code).
    pub fn update_info(&self) -> Result<()> {
        // The header's codes: in progress, or the connection failed (`CONNECTION_ABORTED`,
        // whatever ended it: DOCA's library answers so for a peer in its error state).
        let status = match self.advance(false) {
            Err(Error::ConnectionReset | Error::NotConnected) => Err(Error::ConnectionAborted),
            other => other,
        };
        let mut snap = self.0.snapshot.lock();
        for (s, c) in snap.iter_mut().zip(&self.0.counters) {
            *s = c.load(Ordering::Relaxed);
        }
        snap[4] = self.with_channel(|c| c.in_flight()).unwrap_or(0);
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

    pub(crate) fn count(&self, sent: bool, bytes: usize) {
        let (m, b) = if sent { (0, 1) } else { (2, 3) };
        self.0.counters[m].fetch_add(1, Ordering::Relaxed);
        self.0.counters[b].fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Whether the first message of this peer was received (a service reveals a client only
    /// then).
    pub(crate) fn is_accepted(&self) -> bool {
        self.0.accepted.load(Ordering::Relaxed)
    }

    pub(crate) fn set_accepted(&self) {
        self.0.accepted.store(true, Ordering::Relaxed);
    }

    /// Runs `f` on the rings while the peer is up.
    pub(crate) fn with_channel<R>(&self, f: impl FnOnce(&Channel) -> R) -> Option<R> {
        match &self.0.link.lock().wire {
            Wire::Up { channel, .. } => Some(f(channel)),
            _ => None,
        }
    }

    /// Whether the handshake runs or the connection is up.
    pub(crate) fn is_live(&self) -> bool {
        matches!(self.0.link.lock().state, ConnState::Handshaking { .. } | ConnState::Up)
    }

    /// Whether the connection is up.
    pub(crate) fn is_up(&self) -> bool {
        self.0.link.lock().state.is_up()
    }

    /// Moves the handshake on and reports the link's status. A peer that left still has
    /// its last messages read (`for_send` false) before the link reports the reset.
    pub(crate) fn advance(&self, for_send: bool) -> Result<()> {
        let mut link = self.0.link.lock();
        let link = &mut *link;
        let now = Instant::now();
        if let Wire::Retry { at, .. } = link.wire {
            if now < at {
                return Err(Error::ConnectionInProgress);
            }
            let Wire::Retry { bells, .. } = std::mem::replace(&mut link.wire, Wire::Gone) else {
                unreachable!("matched above")
            };
            let redial = link.redial.as_ref().expect("a client that retries can redial");
            match redial.again(now) {
                Ok(Some(dialing)) => link.wire = Wire::Dialing(dialing, bells),
                Err(Error::Again) if now < redial.deadline() => {
                    // The service's backlog is full: a little later.
                    link.wire = Wire::Retry { at: now + RETRY_PAUSE, bells };
                    return Err(Error::ConnectionInProgress);
                }
                Ok(None) | Err(_) => {
                    tracing::error!(target: "doca_sdk", "comm channel: the service went away while busy");
                    link.state.set(ConnState::Down(Error::ConnectionAborted), &WHO);
                    link.redial = None;
                }
            }
        }
        if let Wire::Dialing(..) = link.wire {
            let Wire::Dialing(dialing, bells) = std::mem::replace(&mut link.wire, Wire::Gone) else {
                unreachable!("matched above")
            };
            // One deadline for all the tries, from the first one.
            let deadline = match &link.redial {
                Some(r) => r.deadline().saturating_duration_since(dialing.since()),
                None => LEGACY_REPLY_DEADLINE,
            };
            let may_retry = link.redial.as_ref().is_some_and(|r| now < r.deadline());
            match dialing.poll(now, deadline) {
                Err(dialing) => {
                    link.wire = Wire::Dialing(dialing, bells);
                    return Err(Error::ConnectionInProgress);
                }
                // Busy, or the socket closed unanswered (the service's handshake places
                // were taken): start over within the deadline.
                Ok(Dialed::Refused(BUSY)) | Ok(Dialed::Failed(Error::ConnectionAborted, _)) if may_retry => {
                    link.wire = Wire::Retry { at: now + RETRY_PAUSE, bells };
                    return Err(Error::ConnectionInProgress);
                }
                Ok(Dialed::Up(up)) => {
                    let (sock, channel, _) = *up;
                    // From now on the socket's readability means the service left: the
                    // endpoint's control set reports it under the connection's token, which
                    // is what it checks for end of file (the handshake token is not).
                    match sock.set_token(token::link(self.0.id as usize)) {
                        Ok(()) => {
                            link.state.set(ConnState::Up, &WHO);
                            link.wire = Wire::Up { sock, channel, bells, _budget: None };
                            link.redial = None;
                        }
                        Err(e) => {
                            tracing::error!(target: "doca_sdk", "comm channel: cannot watch the connection: {e}");
                            link.state.set(ConnState::Down(Error::ConnectionAborted), &WHO);
                        }
                    }
                }
                Ok(Dialed::Refused(e)) => {
                    tracing::error!(target: "doca_sdk", "comm channel: the service refused the connection: {e}");
                    link.state.set(ConnState::Down(Error::ConnectionAborted), &WHO);
                }
                Ok(Dialed::Failed(_, why)) => {
                    tracing::error!(target: "doca_sdk", "comm channel: handshake failed: {why}");
                    link.state.set(ConnState::Down(Error::ConnectionAborted), &WHO);
                }
            }
        }
        match (&link.wire, link.state) {
            (Wire::Up { channel, .. }, ConnState::Up) => {
                let gone = link.eof || channel.peer_hung_up();
                if gone && (for_send || !channel.has_data()) {
                    if channel.rings_broken() {
                        tracing::error!(target: "doca_sdk", "comm channel: peer {} disconnected: it broke the protocol: a shared ring index out of bounds", self.0.id);
                    }
                    link.state.set(ConnState::Down(Error::ConnectionReset), &WHO);
                    link.wire = Wire::Gone;
                    return Err(Error::ConnectionReset);
                }
                Ok(())
            }
            (_, ConnState::Handshaking { .. }) => Err(Error::ConnectionInProgress),
            (_, state) => Err(state.failure().unwrap_or(Error::ConnectionReset)),
        }
    }

    /// Silences this peer's doorbell for room (`room`) or for messages, which rang (the
    /// event channel said so).
    pub(crate) fn drain_bell(&self, room: bool) {
        let link = self.0.link.lock();
        let bells = match &link.wire {
            Wire::Dialing(_, bells) | Wire::Retry { bells, .. } | Wire::Up { bells, .. } => bells,
            Wire::Gone => return,
        };
        if room {
            bells.tx.drain();
        } else {
            bells.rx.drain();
        }
    }

    /// The endpoint's control set says the socket is readable: for an up peer that means
    /// the other side closed it (a dead process included).
    pub(crate) fn check_socket(&self) {
        let mut link = self.0.link.lock();
        if let Wire::Up { sock, .. } = &link.wire {
            let mut b = [0u8; 16];
            if matches!(recv(sock.as_fd(), &mut b), Ok(Recv::Closed) | Err(_)) {
                link.eof = true;
            }
        }
    }

    /// Whether the peer left and everything it sent was read (a service forgets it then).
    pub(crate) fn drained_and_gone(&self) -> bool {
        let link = self.0.link.lock();
        match &link.wire {
            Wire::Up { channel, .. } => (link.eof || channel.peer_hung_up()) && !channel.has_data(),
            _ => !matches!(link.state, ConnState::Handshaking { .. }),
        }
    }

    /// Logs (through `throttle`) that the peer broke a shared ring, if it did: the reason
    /// its connection is closed.
    pub(crate) fn log_if_broken(&self, throttle: &mut Throttle) {
        if self.with_channel(Channel::rings_broken) != Some(true) {
            return;
        }
        if let Some(held) = throttle.admit(LOG_BROKEN_RING, Instant::now()) {
            let pid = self.0.peer.map_or(String::new(), |p| format!(" ({p})"));
            tracing::error!(target: "doca_sdk", "comm channel: peer {}{pid} disconnected: it broke the protocol: a shared ring index out of bounds{}", self.0.id, held_back(held));
        }
    }

    /// `ep_disconnect` of this peer: true the first time (the application disconnects it
    /// once; then there is no connection to disconnect).
    pub(crate) fn mark_disconnected(&self) -> bool {
        !self.0.disconnected.swap(true, Ordering::Relaxed)
    }

    /// Hangs up this side (`ep_disconnect` with `NOT_CONNECTED`: no connection any more;
    /// destroy, or a service forgetting a departed peer, with `CONNECTION_RESET`): the other
    /// side learns it on its next call; this side's calls on the peer answer `code`.
    pub(crate) fn hang_up(&self, code: Error) {
        let mut link = self.0.link.lock();
        if let Wire::Up { sock, channel, .. } = &link.wire {
            channel.hang_up();
            doca_link::exchange::hang_up(sock.as_fd());
        }
        // Up → Closing → Down (a handshake in progress goes straight to Down).
        link.state.set(ConnState::Closing(code), &WHO);
        link.state.set(ConnState::Down(code), &WHO);
        link.wire = Wire::Gone;
        link.redial = None;
    }
}
