//! The legacy Comm Channel endpoint API (`doca_comm_channel_ep_*`), on the same transport as
//! the 2024 API: rendezvous sockets (in their own namespace), one shared-memory ring per
//! direction, doorbells for sleeping.
//!
//! An endpoint has no progress engine: it makes progress inside its calls. A service
//! (`listen`, DPU side) accepts clients whenever it is called; its first `recvfrom` of a
//! client's message reveals that client's address. A service reads its clients in turn
//! (round-robin, each client's messages in the order they arrived): no client, however much
//! it sends or whatever it writes into its messages, keeps another waiting for more than
//! one message of each other client. A client (`connect`, host side) gets a
//! peer address at once; its handshake completes asynchronously
//! ([`PeerAddr::update_info`] answers `CONNECTION_INPROGRESS`, then `Ok`, or
//! `CONNECTION_ABORTED`).
//!
//! Both generations of code port: [`Endpoint::create`] (2.x: non-blocking calls, setters)
//! and [`Endpoint::create_with_attr`] (1.x attributes; without
//! [`INIT_FLAG_NONBLOCK`] its calls block, sleeping on the doorbells, unless a call passes
//! [`MsgFlags::DONTWAIT`]).
//!
//! Limits: message size 256..=4080 and queue sizes 16..=8192 (smaller values are raised to
//! the minimum, queue sizes then rounded up to a power of two, larger values are
//! `INVALID_VALUE`; getters return what is in effect); service names 1..=119 bytes (120
//! with the NUL).
//!
//! Disconnection is one-sided: the other side learns it only through `CONNECTION_RESET` on
//! its next send or receive on that peer. A client may connect again afterwards.

mod endpoint;
mod peer;

pub use endpoint::Endpoint;
pub use peer::PeerAddr;

use std::time::Duration;

use bitflags::bitflags;
use doca_core::{bail, CapSpec, DevInfo, Error, Result};

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

/// Connections one client process may hold on one service (emulator-only: one process must
/// not take every place of [`MAX_CONNECTIONS`]).
pub const MAX_CONNECTIONS_PER_PROCESS: CapSpec = CapSpec {
    name: "ep.max_connections_per_process",
    default: 128,
    descr: "legacy endpoint: clients one process may hold on one service",
};

/// Bytes before each message in its slot: the send time as the sender claims it
/// ([`crate::proto::PeerKind::msg_overhead`]). Only its presence is checked: the sender
/// writes it, so it never decides the order in which a service reads its clients (each
/// peer's messages in arrival order, peers in turn).
const STAMP: usize = 8;

/// The send time at the front of a message; `None` when the peer wrote a message too short
/// to carry one.
fn stamp_of(b: &[u8]) -> Option<u64> {
    b.first_chunk::<STAMP>().map(|s| u64::from_le_bytes(*s))
}
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
    ep_cap(dev, &MAX_CONNECTIONS)
}

/// The value of `spec` for `dev` (after checking the topology's `ep.*` names).
fn ep_cap(dev: &DevInfo, spec: &CapSpec) -> Result<u32> {
    if let Err(e) = dev.topology().check_caps("ep", &[MAX_CONNECTIONS, MAX_CONNECTIONS_PER_PROCESS]) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(spec).min(u32::MAX as u64) as u32)
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

/// A property in effect: raised to `min`; above `max` → `INVALID_VALUE`.
fn effective(value: u32, min: u16, max: u16, what: &str) -> Result<u16> {
    if value > max as u32 {
        bail!(Error::InvalidValue, "comm channel {what} {value} above the maximum {max}");
    }
    Ok((value as u16).max(min))
}

/// A queue size in effect: raised to the minimum, then rounded up to a power of two (as the
/// header says of its getters: 8190 gives 8192); 0 or above [`MAX_QUEUE_SIZE`] + 1 →
/// `INVALID_VALUE` (DOCA's library compares the size less one with the maximum its getter
/// reports, so 8192 itself is accepted).
fn effective_queue(value: u32, what: &str) -> Result<u16> {
    if value == 0 {
        // DOCA's library: "is 0 or is larger than" its maximum.
        bail!(Error::InvalidValue, "comm channel {what} 0: a queue holds at least one message");
    }
    let v = effective(value, MIN_QUEUE_SIZE, MAX_QUEUE_SIZE + 1, what)?;
    Ok(v.next_power_of_two())
}
