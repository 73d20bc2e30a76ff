//! The comm channel's side of the emulated PCIe link: shared-memory rings (in [`ring`]),
//! connections and their handshakes. The OS plumbing under it — the fabric directory,
//! rendezvous sockets, descriptors passed over them, peer identity and budgets, doorbells —
//! is `doca_link`'s.
//!
//! | module       | what                                                                  |
//! |--------------|-----------------------------------------------------------------------|
//! | [`ring`]     | shared-memory segments and the SPSC message rings in them (`doca_link::ring`, re-exported) |
//! | [`lane_lock`] | the lock producers take to write a remote consumer's rings           |
//! | [`channel`]  | an established connection's rings and the peer's doorbells            |
//! | [`setup`]    | the handshake's I/O (one path for servers, clients, services, endpoints) |
//! | [`accept`]   | a listening socket and its handshakes in progress (server side)       |
//! | [`budget`]   | what each connection holds of its peer process's budget               |
//! | [`dial`]     | a handshake in flight (client side)                                   |
//! | [`cadence`]  | when a busy side looks at its control sockets (`doca_link::cadence`, re-exported) |
//! | [`exit_flush`] | an exiting process waits until its stand-ins forwarded what it sent   |
//! | [`remote`]   | connections across the TCP link: stand-ins that play the peer locally |
//! | [`remote_fast`] | the fast path across the link: consumers fed and mirrored          |
//! | [`throttle`] | peer-caused log lines, at most one per kind and second                |
//! | [`token`]    | the tokens of a side's control set                                    |

pub mod accept;
pub mod budget;
pub use doca_link::cadence;
pub mod channel;
pub mod dial;
pub mod exit_flush;
pub mod lane_lock;
pub mod remote;
pub mod remote_fast;
pub use doca_link::ring;
pub mod setup;
pub mod throttle;

/// Tokens of a side's control set (an epoll set of sockets): what kind of socket became
/// readable, and which.
pub mod token {
    const KIND: u64 = 3 << 62;
    /// Tokens of established connections' doorbells (this side's ends).
    pub const BELL: u64 = 0;
    /// The listening socket.
    pub const LISTENER: u64 = 1 << 62;
    /// Tokens of accepted sockets whose handshake runs.
    pub const PENDING: u64 = 2 << 62;
    /// Tokens of established connections (and of a client's handshake).
    pub const LINK: u64 = 3 << 62;

    /// The token of pending handshake `key`.
    pub fn pending(key: usize) -> u64 {
        PENDING | key as u64
    }

    /// The token of connection `key`.
    pub fn link(key: usize) -> u64 {
        LINK | key as u64
    }

    /// The token of connection `key`'s doorbell.
    pub fn bell(key: usize) -> u64 {
        BELL | key as u64
    }

    /// [`BELL`], [`LISTENER`], [`PENDING`] or [`LINK`].
    pub fn kind(token: u64) -> u64 {
        token & KIND
    }

    /// The key within its kind.
    pub fn key(token: u64) -> usize {
        (token & !KIND) as usize
    }
}
