//! The client's own part of a [`crate::Client`]: connecting to its server.
//!
//! Start is asynchronous: the client stays Starting — retrying quietly, with a back-off of
//! [`FIRST_RETRY`] doubling to [`crate::proto::handshake::MAX_RETRY`], while the server is not there yet — until the
//! handshake completes (Running) or the server refuses it (Idle, logged with the reason). A
//! client has exactly one connection; when the server goes away (stops, disconnects the
//! client, dies) the client leaves Running.

use doca_link::discard::PeerFd;
use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

use doca_core::{CtxCore, Error};
use doca_link::notify::{Doorbell, Watched};

use super::side::{NewLink, Side};
use crate::proto::handshake::{next_backoff, BUSY, FIRST_RETRY, REPLY_DEADLINE};
use crate::proto::state::ConnState;
use crate::proto::{Hello, PeerKind};
use crate::transport::budget::ConnBudget;
use crate::transport::dial::{Dialed, Dialing};
use crate::transport::setup::Bells;
use crate::transport::throttle::{held_back, Throttle};
use crate::transport::token;

enum Phase {
    Idle,
    /// The next attempt is due at `next_try`; a failed one waits `backoff`.
    Waiting {
        next_try: Instant,
        backoff: std::time::Duration,
    },
    Dialing {
        dialing: Dialing<Watched<PeerFd>>,
        state: ConnState,
        /// This side's doorbell for the connection (the server got the other end).
        bell: Doorbell,
    },
    Up,
}

/// How long a client waits for a server that is not there before it says so.
pub const WAITING_NOTE_AFTER: Duration = Duration::from_secs(2);
/// How often it says so again while it keeps waiting.
pub const WAITING_NOTE_EVERY: Duration = Duration::from_secs(30);

/// The client-specific state.
pub(crate) struct ClientState {
    phase: RefCell<Phase>,
    /// Failed attempts are logged at most once a second (a server answering garbage would
    /// otherwise cause one line per retry).
    throttle: RefCell<Throttle>,
    /// Since when no server listens under the client's name (none: one was found).
    waiting_since: Cell<Option<Instant>>,
    /// When the client last said what it waits for.
    noted: Cell<Option<Instant>>,
}

impl ClientState {
    pub(crate) fn new() -> ClientState {
        ClientState {
            phase: RefCell::new(Phase::Idle),
            throttle: RefCell::new(Throttle::new()),
            waiting_since: Cell::new(None),
            noted: Cell::new(None),
        }
    }

    /// The first attempt is due at once.
    pub(crate) fn start(&self, now: Instant) {
        *self.phase.borrow_mut() = Phase::Waiting { next_try: now, backoff: FIRST_RETRY };
        self.waiting_since.set(None);
        self.noted.set(None);
    }

    /// No server listens yet: after [`WAITING_NOTE_AFTER`], one line (then one every
    /// [`WAITING_NOTE_EVERY`]) says what the client waits for and why it may not come.
    fn note_waiting(&self, side: &Side, now: Instant) {
        let since = *self.waiting_since.get().get_or_insert(now);
        self.waiting_since.set(Some(since));
        let waited = now.saturating_duration_since(since);
        let due = match self.noted.get() {
            None => waited >= WAITING_NOTE_AFTER,
            Some(last) => now.saturating_duration_since(last) >= WAITING_NOTE_EVERY,
        };
        if !due {
            return;
        }
        self.noted.set(Some(now));
        let pci = side.dev.as_devinfo().pci_addr();
        let fabric = doca_link::fabric_dir().map_or_else(|e| format!("({e})"), |p| p.display().to_string());
        tracing::warn!(
            target: "doca_sdk",
            "{side}: still waiting after {} s: no server named {:?} listens for host function {pci} in the fabric directory {fabric}. Is the server started? With the same name? On a representor of {pci}? In a process with the same {} (and {})?",
            waited.as_secs(),
            side.name,
            doca_link::FABRIC_ENV,
            doca_core::TOPOLOGY_ENV
        );
    }

    /// Drops an attempt in progress.
    pub(crate) fn stop(&self) {
        *self.phase.borrow_mut() = Phase::Idle;
    }

    fn retry(&self, now: Instant, backoff: std::time::Duration) {
        *self.phase.borrow_mut() = Phase::Waiting { next_try: now + backoff, backoff: next_backoff(backoff) };
    }

    /// The control poll's client part: the next connection attempt when it is due, the
    /// server's answer when it came.
    pub(crate) fn poll(&self, side: &Side, core: &CtxCore, now: Instant) -> bool {
        let phase = std::mem::replace(&mut *self.phase.borrow_mut(), Phase::Idle);
        match phase {
            Phase::Waiting { next_try, backoff } if now >= next_try => self.dial(side, core, now, backoff),
            Phase::Dialing { dialing, state, bell } => self.answer(side, core, now, dialing, (state, bell)),
            other => {
                *self.phase.borrow_mut() = other;
                false
            }
        }
    }

    fn dial(&self, side: &Side, core: &CtxCore, now: Instant, backoff: std::time::Duration) -> bool {
        let hello = Hello {
            kind: PeerKind::Client,
            max_msg_size: side.max_msg_size.get(),
            recv_queue_size: side.recv_queue_size.get(),
            function: side.dev.as_devinfo().pci_addr(),
            name: side.name.clone(),
        };
        let pci = hello.function;
        let started = Bells::one().and_then(|bells| {
            let dialing = match Dialing::start("cc", pci, hello, bells.theirs(), now)? {
                Some(d) => Some(d.watched(&side.ctrl()?, token::PENDING)?),
                None => None,
            };
            Ok(dialing.map(|d| (d, bells.keep().0)))
        });
        match started {
            Ok(Some((dialing, bell))) => {
                self.waiting_since.set(None);
                *self.phase.borrow_mut() =
                    Phase::Dialing { dialing, state: ConnState::Handshaking { since: now }, bell };
                false
            }
            Ok(None) => {
                self.note_waiting(side, now);
                self.retry(now, backoff);
                false
            }
            Err(Error::Again) | Err(Error::ConnectionReset) => {
                self.retry(now, backoff);
                false
            }
            Err(e) => {
                core.abort_start(e, "cannot reach the server's rendezvous socket");
                true
            }
        }
    }

    fn answer(
        &self,
        side: &Side,
        core: &CtxCore,
        now: Instant,
        dialing: Dialing<Watched<PeerFd>>,
        (mut state, bell): (ConnState, Doorbell),
    ) -> bool {
        let outcome = match dialing.poll(now, REPLY_DEADLINE) {
            Ok(outcome) => outcome,
            Err(dialing) => {
                *self.phase.borrow_mut() = Phase::Dialing { dialing, state, bell };
                return false;
            }
        };
        match outcome {
            Dialed::Failed(e, why) => {
                state.set(ConnState::Down(e), side);
                if let Some(held) = self.throttle.borrow_mut().admit(e.code() as u32, now) {
                    tracing::warn!(target: "doca_sdk", "{side}: handshake failed: {why}; retrying{}", held_back(held));
                }
                self.retry(now, FIRST_RETRY);
                false
            }
            Dialed::Refused(BUSY) => {
                // The server's handshake places are taken for now: try again soon.
                state.set(ConnState::Down(BUSY), side);
                tracing::debug!(target: "doca_sdk", "{side}: the server is busy; retrying");
                self.retry(now, FIRST_RETRY);
                false
            }
            Dialed::Refused(e) => {
                state.set(ConnState::Down(e), side);
                let why = match e {
                    Error::InvalidValue => {
                        "the server refused the connection (max message size or queue size mismatch)"
                    }
                    Error::Full => {
                        "the server refused the connection: it has its maximum number of clients, or this process holds its share of the server's descriptors"
                    }
                    Error::UnsupportedVersion => "the server speaks another protocol version",
                    _ => "the server refused the connection",
                };
                core.abort_start(e, why);
                true
            }
            Dialed::Up(up) => {
                let (sock, channel, reply) = *up;
                state.set(ConnState::Up, side);
                let fd = std::os::fd::AsFd::as_fd(&*sock);
                let pid = doca_link::peer_pid(fd).unwrap_or(0);
                // The server's consumers are charged to its process (none when it is gone
                // already: the connection is about to go down).
                let budget = doca_mmap::budget::global_limits()
                    .and_then(|limits| ConnBudget::dialed(fd, pid, limits))
                    .ok();
                let new = NewLink { id: reply.conn_id, pid, sock, channel, bell, state, budget };
                match side.add_link(new) {
                    Ok(_) => {
                        *self.phase.borrow_mut() = Phase::Up;
                        core.set_running();
                    }
                    Err(e) => core.abort_start(e, "cannot register the connection"),
                }
                true
            }
        }
    }

    /// The connection ended: the client leaves Running (the log says whether the server
    /// closed it or this process's fault plan cut it).
    pub(crate) fn link_down(&self, core: &CtxCore, conn: &crate::conn::Connection) {
        if conn.cut_by_fault_plan() {
            core.fail(
                Error::ConnectionReset,
                "this process's fault plan cut the connection (link.drop), as the server's death would",
            );
        } else {
            core.fail(Error::ConnectionReset, "the server closed the connection");
        }
    }

    /// When the next attempt is due, or the answer is late.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        match &*self.phase.borrow() {
            Phase::Waiting { next_try, .. } => Some(*next_try),
            Phase::Dialing { dialing, .. } => Some(dialing.since() + REPLY_DEADLINE),
            _ => None,
        }
    }
}
