//! The server half of connection setup, shared by the 2024 server and the legacy service:
//! a listening socket and the handshakes in progress on the sockets it accepted.
//!
//! Every accepted socket is checked (same user), registered in the side's control set under
//! a pending token, and given [`HELLO_DEADLINE`] to send its Hello. Admission is fair
//! between peer processes (identified by pid):
//!
//! | situation when a socket arrives                          | what happens                      |
//! |----------------------------------------------------------|-----------------------------------|
//! | its process has [`MAX_HANDSHAKES_PER_PEER`] in progress  | answered busy ([`BUSY`]), closed  |
//! | [`MAX_HANDSHAKES`] in progress, another process holds more | that process's oldest silent socket is closed; this one waits |
//! | [`MAX_HANDSHAKES`] in progress, none holds more          | answered busy, closed             |
//! | otherwise                                                | waits for its Hello               |
//!
//! A busy answer tells a client to try again within its deadline (both client kinds do).
//! The connections one process may hold are bounded too (`Limits::max_connections_per_peer`,
//! decided in [`crate::proto::handshake::accept`]). Running out of descriptors backs the
//! listener off for [`ACCEPT_BACKOFF`] instead of spinning. Each handshake goes through
//! [`serve`] and ends as an [`Incoming`] for the owner — except a client that left before
//! its handshake completed (its socket closed before its Hello, or before the answer to it:
//! a client that gave up waiting and dialed again leaves its first socket in the listen
//! backlog). Nobody is there to act on a refusal, so it is dropped at debug level, never
//! reported as a failed connection.

use doca_link::discard::PeerFd;
use std::fmt::Display;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use doca_core::{Error, PciAddr, Result};
use doca_link::notify::{EpollSet, Watched};
use slab::Slab;

use super::budget::ConnBudget;
use super::channel::Channel;
use super::setup::{serve, Bells, MakeBells, Served};
use super::throttle::{held_back, Throttle};
use super::token;
use crate::proto::handshake::{
    Accepted, Limits, Occupancy, BUSY, HELLO_DEADLINE, MAX_HANDSHAKES, MAX_HANDSHAKES_PER_PEER,
};
use crate::proto::state::ConnState;
use crate::proto::Reply;
use doca_link::budget::{peer_of, PeerId};
use doca_link::{peer_pid, Listener};

/// How long the listener rests after the process ran out of file descriptors.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// A connection the acceptor set up, or failed to.
pub enum Incoming {
    /// Up on this side.
    Up(Box<NewConn>),
    /// A client whose settings were refused (a DOCA server reports it as an unsuccessful
    /// connection). Garbage and foreign handshakes are only logged; a client that left
    /// before the answer is not reported.
    Failed {
        /// The id the connection would have had.
        id: u64,
        /// The client's process.
        pid: i32,
        /// Why.
        code: Error,
    },
}

/// A connection that completed its handshake.
pub struct NewConn {
    /// Its id (unique for this server).
    pub id: u64,
    /// The client's process.
    pub pid: i32,
    /// Its socket, still registered in the control set (under its pending token: re-token
    /// it for its new owner).
    pub sock: Watched<PeerFd>,
    /// Its rings.
    pub channel: Channel,
    /// What was agreed.
    pub accepted: Accepted,
    /// This side's doorbells for it (the client holds the other ends).
    pub bells: Bells,
    /// Its state: `Up`.
    pub state: ConnState,
    /// What it holds of its peer process's budget.
    pub budget: ConnBudget,
}

struct Pending {
    sock: Watched<PeerFd>,
    pid: i32,
    /// Its process (places are counted per process identity: the pid is 0 for every
    /// process of a PID namespace this one cannot see).
    peer: PeerId,
    id: u64,
    state: ConnState,
    budget: ConnBudget,
}

/// A listening socket and the handshakes in progress on what it accepted.
pub struct Acceptor {
    listener: Watched<Listener>,
    pending: Slab<Pending>,
    limits: Limits,
    next_id: u64,
    /// Out of descriptors: the listener is not looked at before this time.
    resting_until: Option<Instant>,
    /// What peers cause is logged at most once a second per kind.
    throttle: Throttle,
    /// What a peer process may make this side hold.
    budget: doca_mmap::budget::Limits,
}

/// Kinds of log line the acceptor throttles (beside refusal codes).
const LOG_HANDSHAKES: u32 = 100;
const LOG_DESCRIPTORS: u32 = 101;
const LOG_DEADLINE: u32 = 102;
const LOG_CREDENTIALS: u32 = 103;
const LOG_PEER_HANDSHAKES: u32 = 104;
const LOG_EVICTED: u32 = 105;
const LOG_BUDGET: u32 = 106;

impl Acceptor {
    /// Binds service `limits.name` in namespace `ns` for the host function `limits.function`
    /// stands for, and registers the listener in `set` (`IN_USE` while another server holds
    /// the name).
    pub fn listen(set: &EpollSet, ns: &str, limits: Limits) -> Result<Acceptor> {
        let listener = Listener::bind_service(ns, limits.function, &limits.name)?;
        // On the DPU side of a TCP link, remote clients reach it through this process's link.
        super::remote::listen_if_dpu();
        Ok(Acceptor {
            listener: set.watch(listener, token::LISTENER)?,
            pending: Slab::new(),
            limits,
            next_id: 1,
            resting_until: None,
            throttle: Throttle::new(),
            budget: doca_mmap::budget::global_limits()?,
        })
    }

    /// The socket path (for logs and tools).
    pub fn path(&self) -> PathBuf {
        self.listener.path()
    }

    /// The host function served.
    pub fn function(&self) -> PciAddr {
        self.limits.function
    }

    /// Handshakes in progress.
    pub fn num_pending(&self) -> usize {
        self.pending.len()
    }

    /// When something must happen without any socket becoming readable: the first
    /// handshake deadline, or the end of a rest.
    pub fn next_deadline(&self) -> Option<Instant> {
        let hs = self.pending.iter().filter_map(|(_, p)| match p.state {
            ConnState::Handshaking { since } => Some(since + HELLO_DEADLINE),
            _ => None,
        });
        hs.chain(self.resting_until).min()
    }

    /// Accepts what waits on the listener, reads every Hello that arrived, and drops
    /// handshakes past their deadline. `live` connections exist already, `live_of(pid)` of
    /// them held by process `pid`; `bells` makes this side's doorbells for each new
    /// connection (whose ends go to that client alone). Results go to `out`.
    #[allow(clippy::too_many_arguments)]
    pub fn poll(
        &mut self,
        who: &dyn Display,
        set: &EpollSet,
        now: Instant,
        live: usize,
        live_of: &dyn Fn(PeerId) -> usize,
        bells: MakeBells<'_>,
        out: &mut Vec<Incoming>,
    ) {
        self.accept_all(who, set, now);
        let mut live = live;
        // Connections made in this pass, by process (not in `live_of` yet).
        let mut added: smallvec::SmallVec<[(PeerId, usize); 4]> = smallvec::SmallVec::new();
        let keys: Vec<usize> = self.pending.iter().map(|(k, _)| k).collect();
        for key in keys {
            let p = &self.pending[key];
            let here = added.iter().find(|(q, _)| *q == p.peer).map_or(0, |(_, n)| *n);
            let occupancy = Occupancy { total: live, of_peer: live_of(p.peer) + here };
            match serve(who, p.sock.as_fd(), p.pid, &self.limits, occupancy, p.id, bells) {
                Served::Waiting => {
                    if p.state.handshake_expired(now, HELLO_DEADLINE) {
                        let mut p = self.pending.remove(key);
                        if let Some(held) = self.throttle.admit(LOG_DEADLINE, now) {
                            tracing::warn!(target: "doca_sdk", "{who}: dropped {}: no handshake within {HELLO_DEADLINE:?}{}", p.peer, held_back(held));
                        }
                        p.state.set(ConnState::Down(Error::ConnectionAborted), who);
                    }
                }
                Served::Gone => {
                    let mut p = self.pending.remove(key);
                    p.state.set(ConnState::Down(Error::ConnectionAborted), who);
                }
                Served::Refused(r) => {
                    let mut p = self.pending.remove(key);
                    if let Some(held) = self.throttle.admit(r.code.code() as u32 * 2 + r.report as u32, now) {
                        let (verb, more) = (if r.report { "refused" } else { "dropped" }, held_back(held));
                        if r.report {
                            tracing::error!(target: "doca_sdk", "{who}: {verb} {}: {}{more}", p.peer, r.why);
                        } else {
                            tracing::warn!(target: "doca_sdk", "{who}: {verb} {}: {}{more}", p.peer, r.why);
                        }
                    }
                    p.state.set(ConnState::Down(r.code), who);
                    if r.report {
                        out.push(Incoming::Failed { id: p.id, pid: p.pid, code: r.code });
                    }
                }
                Served::Up(up) => {
                    let mut p = self.pending.remove(key);
                    let (channel, accepted, bells) = *up;
                    p.state.set(ConnState::Up, who);
                    live += 1;
                    match added.iter_mut().find(|(q, _)| *q == p.peer) {
                        Some((_, n)) => *n += 1,
                        None => added.push((p.peer, 1)),
                    }
                    tracing::debug!(target: "doca_sdk", "{who}: connection #{} from {}", p.id, p.peer);
                    out.push(Incoming::Up(Box::new(NewConn {
                        id: p.id,
                        pid: p.pid,
                        sock: p.sock,
                        channel,
                        accepted,
                        bells,
                        state: p.state,
                        budget: p.budget,
                    })));
                }
            }
        }
    }

    /// No descriptor left: the listener rests for [`ACCEPT_BACKOFF`].
    fn out_of_descriptors(&mut self, who: &dyn Display, now: Instant) {
        if let Some(held) = self.throttle.admit(LOG_DESCRIPTORS, now) {
            tracing::error!(target: "doca_sdk", "{who}: out of file descriptors: not accepting for {ACCEPT_BACKOFF:?}{}", held_back(held));
        }
        self.resting_until = Some(now + ACCEPT_BACKOFF);
    }

    fn accept_all(&mut self, who: &dyn Display, set: &EpollSet, now: Instant) {
        if self.resting_until.is_some_and(|t| now < t) {
            return;
        }
        self.resting_until = None;
        loop {
            let sock = match self.listener.accept() {
                Ok(Some(s)) => s,
                Ok(None) => return,
                Err(doca_link::Error::Full) => {
                    self.out_of_descriptors(who, now);
                    return;
                }
                Err(e) => {
                    tracing::error!(target: "doca_sdk", "{who}: accept failed: {e}");
                    return;
                }
            };
            let pid = match peer_pid(sock.as_fd()) {
                Ok(pid) => pid,
                Err(e) => {
                    if let Some(held) = self.throttle.admit(LOG_CREDENTIALS, now) {
                        tracing::warn!(target: "doca_sdk", "{who}: dropped a connection: {} (not this user's process?){}", e.name(), held_back(held));
                    }
                    continue;
                }
            };
            // Counted per process identity (its pidfd), never per pid.
            let peer = match peer_of(sock.as_fd(), pid) {
                Ok(peer) => peer,
                Err(doca_link::Error::Full) => {
                    self.out_of_descriptors(who, now);
                    return;
                }
                Err(_) => continue, // gone already
            };
            if !self.make_room(who, peer, now) {
                // Busy: the client tries again. Answered so that it reads the answer, not a
                // reset (its Hello may arrive while the socket closes); non-blocking.
                doca_link::answer_and_close(sock, &Reply::refuse(BUSY).encode());
                continue;
            }
            let budget = match ConnBudget::admit(peer, self.budget) {
                Ok(b) => b,
                Err(r) => {
                    if let Some(held) = self.throttle.admit(LOG_BUDGET, now) {
                        tracing::warn!(target: "doca_sdk", "{who}: refused {}: {r}{}", r.code.name(), held_back(held));
                    }
                    // Answered so that the client reads the refusal, not a reset (its
                    // Hello may arrive while the socket closes).
                    doca_link::answer_and_close(sock, &crate::proto::Reply::refuse(r.code.into()).encode());
                    continue;
                }
            };
            let entry = self.pending.vacant_entry();
            let sock = match set.watch(PeerFd::socket(sock), token::pending(entry.key())) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(target: "doca_sdk", "{who}: cannot watch a new socket: {e}");
                    continue;
                }
            };
            let id = self.next_id;
            self.next_id += 1;
            entry.insert(Pending {
                sock,
                pid,
                peer,
                id,
                state: ConnState::Handshaking { since: now },
                budget,
            });
        }
    }
}

impl Acceptor {
    /// Whether a new socket of process `peer` may wait for its Hello, closing another
    /// process's oldest silent socket when that makes the room (see the module's table).
    fn make_room(&mut self, who: &dyn Display, peer: PeerId, now: Instant) -> bool {
        // At most MAX_HANDSHAKES entries: counting them is cheap, and only done on accept.
        let mut counts: smallvec::SmallVec<[(PeerId, usize); 8]> = smallvec::SmallVec::new();
        for (_, p) in &self.pending {
            match counts.iter_mut().find(|(q, _)| *q == p.peer) {
                Some((_, n)) => *n += 1,
                None => counts.push((p.peer, 1)),
            }
        }
        let mine = counts.iter().find(|(q, _)| *q == peer).map_or(0, |(_, n)| *n);
        if mine >= MAX_HANDSHAKES_PER_PEER {
            if let Some(held) = self.throttle.admit(LOG_PEER_HANDSHAKES, now) {
                tracing::warn!(target: "doca_sdk", "{who}: {peer} already has {MAX_HANDSHAKES_PER_PEER} handshakes in progress, the most one process may: its new socket was answered busy{}", held_back(held));
            }
            return false;
        }
        if self.pending.len() < MAX_HANDSHAKES {
            return true;
        }
        // Full: the process holding the most places gives up its oldest silent one, if it
        // holds more than the newcomer's.
        let Some(&(greedy, most)) = counts.iter().max_by_key(|(_, n)| *n) else { return false };
        if most <= mine + 1 {
            if let Some(held) = self.throttle.admit(LOG_HANDSHAKES, now) {
                tracing::warn!(target: "doca_sdk", "{who}: {peer} answered busy: {MAX_HANDSHAKES} handshakes already in progress{}", held_back(held));
            }
            return false;
        }
        let oldest = self
            .pending
            .iter()
            .filter(|(_, p)| p.peer == greedy)
            .min_by_key(|(_, p)| p.id)
            .map(|(k, _)| k)
            .expect("the process holding the most has one");
        let mut p = self.pending.remove(oldest);
        if let Some(held) = self.throttle.admit(LOG_EVICTED, now) {
            tracing::warn!(target: "doca_sdk", "{who}: closed a silent socket of {greedy}, which held {most} of the {MAX_HANDSHAKES} handshake places, to admit {peer}{}", held_back(held));
        }
        p.state.set(ConnState::Down(Error::ConnectionAborted), who);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;
    use crate::proto::PeerKind;
    use doca_link::{connect_service, recv, Recv};

    fn limits(name: &str) -> Limits {
        Limits {
            kind: PeerKind::Client,
            name: name.into(),
            function: PciAddr::parse("3b:00.1").unwrap(),
            max_msg_size: 64,
            recv_queue_size: 2,
            max_recv_queue: 16,
            max_connections: 4,
            max_connections_per_peer: 4,
        }
    }

    /// Time is handed in: the deadline is checked at fixed instants, without sleeping.
    #[test]
    fn a_socket_that_says_nothing_is_dropped_exactly_at_the_hello_deadline() {
        let name = format!("accept-deadline-{}", std::process::id());
        let set = EpollSet::new().unwrap();
        let l = limits(&name);
        let mut acceptor = Acceptor::listen(&set, "test", l.clone()).unwrap();
        let silent = connect_service("test", l.function, &name).unwrap().expect("listening");
        let bells = Bells::one;
        let t0 = Instant::now();
        let mut out = Vec::new();
        acceptor.poll(&"test", &set, t0, 0, &|_| 0, &bells, &mut out);
        assert_eq!(acceptor.num_pending(), 1);
        assert_eq!(acceptor.next_deadline(), Some(t0 + HELLO_DEADLINE));
        acceptor.poll(
            &"test",
            &set,
            t0 + HELLO_DEADLINE - Duration::from_millis(1),
            0,
            &|_| 0,
            &bells,
            &mut out,
        );
        assert_eq!(acceptor.num_pending(), 1, "still within its deadline");
        acceptor.poll(&"test", &set, t0 + HELLO_DEADLINE, 0, &|_| 0, &bells, &mut out);
        assert_eq!(acceptor.num_pending(), 0, "dropped at the deadline");
        assert!(out.is_empty(), "a silent socket is not reported as a failed connection");
        let mut buf = [0u8; 16];
        assert!(matches!(recv(silent.as_fd(), &mut buf), Ok(Recv::Closed)), "its socket was closed");
    }

    fn hello(l: &Limits) -> crate::proto::Hello {
        crate::proto::Hello {
            kind: PeerKind::Client,
            max_msg_size: l.max_msg_size,
            recv_queue_size: l.recv_queue_size,
            function: l.function,
            name: l.name.clone(),
        }
    }

    /// A client that sent its Hello and closed its socket before the server looked (as one
    /// that gave up waiting and dialed again): the answer finds nobody (`EPIPE`). That is
    /// not a connection the server failed, and the next client is served.
    #[test]
    fn a_client_that_left_after_its_hello_is_no_failed_connection() {
        let name = format!("accept-left-{}", std::process::id());
        let set = EpollSet::new().unwrap();
        let l = limits(&name);
        let mut acceptor = Acceptor::listen(&set, "test", l.clone()).unwrap();
        let bells = Bells::one;
        let gone = connect_service("test", l.function, &name).unwrap().expect("listening");
        let theirs = Bells::one().unwrap();
        super::super::setup::send_hello(gone.as_fd(), &hello(&l), theirs.theirs()).unwrap();
        drop(gone);
        let mut out = Vec::new();
        acceptor.poll(&"test", &set, Instant::now(), 0, &|_| 0, &bells, &mut out);
        assert_eq!(acceptor.num_pending(), 0, "the socket of the client that left is dropped");
        assert!(out.is_empty(), "a client that left is not reported as a failed connection");
        let next = connect_service("test", l.function, &name).unwrap().expect("listening");
        let theirs = Bells::one().unwrap();
        super::super::setup::send_hello(next.as_fd(), &hello(&l), theirs.theirs()).unwrap();
        acceptor.poll(&"test", &set, Instant::now(), 0, &|_| 0, &bells, &mut out);
        assert!(matches!(out.as_slice(), [Incoming::Up(_)]), "the next client is served");
    }
}
