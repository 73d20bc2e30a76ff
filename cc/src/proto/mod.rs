//! The comm-channel protocol without I/O: the wire format of the sockets ([`wire`]), the
//! layout of the shared rings ([`layout`]) and the fast path's records in them
//! ([`records`]), the handshake's decisions ([`handshake`]) and the connection state machine
//! ([`state`]). Everything here is a pure function of its inputs (bytes, limits, a time
//! passed in), so it is tested without sockets, shared memory or sleeping; `transport` does
//! the I/O around it.

pub mod handshake;
pub mod layout;
pub mod records;
pub mod state;
pub mod wire;

pub use wire::{version_of, Ctrl, Hello, PeerKind, Reply, MAGIC, VERSION};
