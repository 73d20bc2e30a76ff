//! Log lines a peer can cause, rate-limited: core's [`doca_core::throttle`], used here for
//! every peer-caused line of the transport, the connections and the legacy endpoints.

pub use doca_core::throttle::{held_back, Throttle, PERIOD};
