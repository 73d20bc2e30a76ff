//! The server half of connection setup, shared by the 2024 server and the legacy service:
//! a listening socket and the handshakes in progress on the sockets it accepted.
//!
//! Every accepted socket is checked (same user), registered in the side's control set under
//! a pending token, and given [`HELLO_DEADLINE`] to send its Hello; at most
//! [`MAX_HANDSHAKES`] wait at once (more are closed at once), and running out of
//! descriptors backs the listener off for [`ACCEPT_BACKOFF`] instead of spinning. Each
//! handshake goes through [`serve`] and ends as an [`Incoming`] for the owner.

use std::fmt::Display;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use doca_core::notify::{EpollSet, Watched};
use doca_core::{Error, PciAddr, Result};
use slab::Slab;

use super::budget::{ConnBudget, NotAdmitted};
use super::channel::Channel;
use super::setup::{serve, Ringers, Served};
use super::throttle::{held_back, Throttle};
use super::{peer_pid, token, Listener};
use crate::proto::handshake::{Accepted, Limits, HELLO_DEADLINE, MAX_HANDSHAKES};
use crate::proto::state::ConnState;

/// How long the listener rests after the process ran out of file descriptors.
pub const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// A connection the acceptor set up, or failed to.
pub enum Incoming {
    /// Up on this side.
    Up(Box<NewConn>),
    /// A client whose settings were refused (a DOCA server reports it as an unsuccessful
    /// connection). Garbage and foreign handshakes are only logged.
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
    pub sock: Watched<OwnedFd>,
    /// Its rings.
    pub channel: Channel,
    /// What was agreed.
    pub accepted: Accepted,
    /// Its state: `Up`.
    pub state: ConnState,
    /// What it holds of its peer process's budget.
    pub budget: ConnBudget,
}

struct Pending {
    sock: Watched<OwnedFd>,
    pid: i32,
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
const LOG_BUDGET: u32 = 104;

impl Acceptor {
    /// Binds service `limits.name` in namespace `ns` for the host function `limits.function`
    /// stands for, and registers the listener in `set` (`IN_USE` while another server holds
    /// the name).
    pub fn listen(set: &EpollSet, ns: &str, limits: Limits) -> Result<Acceptor> {
        let listener = Listener::bind_service(ns, limits.function, &limits.name)?;
        Ok(Acceptor {
            listener: set.watch(listener, token::LISTENER)?,
            pending: Slab::new(),
            limits,
            next_id: 1,
            resting_until: None,
            throttle: Throttle::new(),
            budget: doca_mmap::budget::Limits::global()?,
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
    /// handshakes past their deadline. `live` connections exist already; `ringers` makes the
    /// sockets that ring this side's doorbells (messages; room) for each new client. Results
    /// go to `out`.
    pub fn poll(
        &mut self,
        who: &dyn Display,
        set: &EpollSet,
        now: Instant,
        live: usize,
        ringers: Ringers<'_>,
        out: &mut Vec<Incoming>,
    ) {
        self.accept_all(who, set, now);
        let mut live = live;
        let keys: Vec<usize> = self.pending.iter().map(|(k, _)| k).collect();
        for key in keys {
            let p = &self.pending[key];
            match serve(who, p.sock.as_fd(), p.pid, &self.limits, live, p.id, ringers) {
                Served::Waiting => {
                    if p.state.handshake_expired(now, HELLO_DEADLINE) {
                        let mut p = self.pending.remove(key);
                        if let Some(held) = self.throttle.admit(LOG_DEADLINE, now) {
                            tracing::warn!(target: "doca_sdk", "{who}: dropped pid {}: no handshake within {HELLO_DEADLINE:?}{}", p.pid, held_back(held));
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
                            tracing::error!(target: "doca_sdk", "{who}: {verb} pid {}: {}{more}", p.pid, r.why);
                        } else {
                            tracing::warn!(target: "doca_sdk", "{who}: {verb} pid {}: {}{more}", p.pid, r.why);
                        }
                    }
                    p.state.set(ConnState::Down(r.code), who);
                    if r.report {
                        out.push(Incoming::Failed { id: p.id, pid: p.pid, code: r.code });
                    }
                }
                Served::Up(up) => {
                    let mut p = self.pending.remove(key);
                    let (channel, accepted) = *up;
                    p.state.set(ConnState::Up, who);
                    live += 1;
                    tracing::debug!(target: "doca_sdk", "{who}: connection #{} from pid {}", p.id, p.pid);
                    out.push(Incoming::Up(Box::new(NewConn {
                        id: p.id,
                        pid: p.pid,
                        sock: p.sock,
                        channel,
                        accepted,
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
                Err(Error::Full) => {
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
            if self.pending.len() >= MAX_HANDSHAKES {
                if let Some(held) = self.throttle.admit(LOG_HANDSHAKES, now) {
                    tracing::warn!(target: "doca_sdk", "{who}: dropped pid {pid}: {MAX_HANDSHAKES} handshakes already in progress{}", held_back(held));
                }
                continue;
            }
            let budget = match ConnBudget::admit(sock.as_fd(), pid, self.budget) {
                Ok(b) => b,
                Err(NotAdmitted::Budget(r)) => {
                    if let Some(held) = self.throttle.admit(LOG_BUDGET, now) {
                        tracing::warn!(target: "doca_sdk", "{who}: refused {}: {r}{}", r.code.name(), held_back(held));
                    }
                    // The Hello read first: a socket closed with unread data resets the
                    // client's end before it reads the answer.
                    let _ = super::recv(sock.as_fd(), &mut [0u8; 512]);
                    let _ = super::send(sock.as_fd(), &crate::proto::Reply::refuse(r.code).encode(), &[]);
                    continue;
                }
                Err(NotAdmitted::NoDescriptor) => {
                    self.out_of_descriptors(who, now);
                    return;
                }
                Err(NotAdmitted::Gone) => continue,
            };
            let entry = self.pending.vacant_entry();
            let sock = match set.watch(sock, token::pending(entry.key())) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(target: "doca_sdk", "{who}: cannot watch a new socket: {e}");
                    continue;
                }
            };
            let id = self.next_id;
            self.next_id += 1;
            entry.insert(Pending { sock, pid, id, state: ConnState::Handshaking { since: now }, budget });
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use doca_core::notify::Doorbell;

    use super::*;
    use crate::proto::PeerKind;
    use crate::transport::{connect_service, recv, Recv};

    fn limits(name: &str) -> Limits {
        Limits {
            kind: PeerKind::Client,
            name: name.into(),
            function: PciAddr::parse("3b:00.1").unwrap(),
            max_msg_size: 64,
            max_msg_cap: 64,
            recv_queue_size: 2,
            max_recv_queue: 16,
            max_connections: 4,
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
        let bell = Doorbell::new().unwrap();
        let bells = || Ok([bell.ringer()?, bell.ringer()?]);
        let t0 = Instant::now();
        let mut out = Vec::new();
        acceptor.poll(&"test", &set, t0, 0, &bells, &mut out);
        assert_eq!(acceptor.num_pending(), 1);
        assert_eq!(acceptor.next_deadline(), Some(t0 + HELLO_DEADLINE));
        acceptor.poll(&"test", &set, t0 + HELLO_DEADLINE - Duration::from_millis(1), 0, &bells, &mut out);
        assert_eq!(acceptor.num_pending(), 1, "still within its deadline");
        acceptor.poll(&"test", &set, t0 + HELLO_DEADLINE, 0, &bells, &mut out);
        assert_eq!(acceptor.num_pending(), 0, "dropped at the deadline");
        assert!(out.is_empty(), "a silent socket is not reported as a failed connection");
        let mut buf = [0u8; 16];
        assert!(matches!(recv(silent.as_fd(), &mut buf), Ok(Recv::Closed)), "its socket was closed");
    }
}
