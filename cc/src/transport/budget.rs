//! The peer budgets of [`doca_link::budget`] as connections use them: each connection holds
//! an account with its peer process, charged for the descriptors this side keeps for it and
//! for the peer's memory it maps (its consumers' rings and buffers).
//!
//! A server charges [`CONN_FDS`] when it accepts a socket ([`ConnBudget::admit`], before
//! reading the Hello), refusing the handshake with `FULL` beyond the peer's share; a
//! registry charges [`CONSUMER_FDS`] and the bytes it maps for each consumer the peer
//! announces, refusing that consumer (`NO_MEMORY` or `FULL`) beyond it. A client's account
//! with its server charges only the server's consumers.

use std::fmt;
use std::os::fd::BorrowedFd;

use doca_core::Error;
use doca_link::budget::{peer_of, Account, Hold, Limits, PeerId, Refusal};

/// Descriptors a server keeps for one established 2024 connection: the socket and a
/// duplicate of it, the client's two doorbell ends, this side's end of the connection's
/// doorbell, the connection's segment, and both ends of the connection's fast-path doorbell
/// (the peer's end is kept to hand out with each consumer acknowledgement). A legacy
/// connection keeps 6 (no duplicate, no fast path, a second doorbell of its own) and is
/// charged the same.
pub const CONN_FDS: u64 = 8;

/// Descriptors kept for one consumer of the peer: its ring segment and its doorbell (its
/// memory's descriptor is closed once mapped).
pub const CONSUMER_FDS: u64 = 2;

/// A connection's account with its peer process: what the connection itself holds (nothing
/// on a client), as a claim on the account.
pub struct ConnBudget {
    base: Hold,
}

impl fmt::Debug for ConnBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConnBudget({:?})", self.base.account())
    }
}

impl ConnBudget {
    /// Server side: a socket from process `peer` was accepted. Charges [`CONN_FDS`] to that
    /// process: refused with `FULL` beyond its share (or beyond what all peers may hold when
    /// it already holds some).
    pub fn admit(peer: PeerId, limits: Limits) -> Result<ConnBudget, Refusal> {
        let base = Account::open(peer, limits).claim(0, CONN_FDS, "a new connection")?;
        Ok(ConnBudget { base })
    }

    /// Client side: the connection to the server at the other end of `sock` (process `pid`)
    /// is up; only the server's consumers are charged to it.
    pub fn dialed(sock: BorrowedFd<'_>, pid: i32, limits: Limits) -> doca_core::Result<ConnBudget> {
        let nothing = Account::open(peer_of(sock, pid)?, limits).claim(0, 0, "a connection");
        Ok(ConnBudget { base: nothing.expect("nothing is within every budget") })
    }

    /// The account.
    pub fn account(&self) -> &Account {
        self.base.account()
    }
}

/// Whether a failure to map what a peer announced is this side's own shortage (memory,
/// descriptors, the system) rather than the peer's fault: the peer is then refused, never
/// told it broke the protocol.
pub fn is_shortage(e: Error) -> bool {
    matches!(e, Error::NoMemory | Error::Full | Error::OperatingSystem)
}
