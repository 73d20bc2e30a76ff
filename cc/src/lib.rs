//! DOCA Comm Channel over an emulated PCIe link: the 2024 `doca_cc` API — servers, clients,
//! connections, send tasks and events on the control path; producers and consumers on the
//! fast path — and the legacy `doca_comm_channel_ep` endpoint API, on one transport.
//!
//! | DOCA                                  | here                                   |
//! |---------------------------------------|----------------------------------------|
//! | `struct doca_cc_server`               | [`Server`]                             |
//! | `struct doca_cc_client`               | [`Client`]                             |
//! | `struct doca_cc_connection`           | [`Connection`] (`Send + Sync`)         |
//! | `struct doca_cc_task_send`            | [`SendTask`]                           |
//! | `enum doca_cc_counter`                | [`Counter`]                            |
//! | `struct doca_cc_consumer`             | [`Consumer`], [`PostRecvTask`]         |
//! | `struct doca_cc_producer`             | [`Producer`], [`ProducerSendTask`]     |
//! | `doca_cc_cap_*`                       | [`caps`]                               |
//! | `doca_comm_channel_ep_*` (legacy)     | [`legacy`]: [`legacy::Endpoint`], [`legacy::PeerAddr`] |
//!
//! Inside, by layer:
//!
//! | module        | what                                                                  |
//! |---------------|-----------------------------------------------------------------------|
//! | [`ctrl`]      | the 2024 control path: servers, clients, send tasks                   |
//! | [`conn`]      | connections (any thread) and their fast-path registry                 |
//! | [`fast`]      | the fast path: producers, consumers and their registration            |
//! | [`legacy`]    | the endpoint API, making progress inside its calls                    |
//! | [`proto`]     | the protocol without I/O: wire format, handshake decisions, the connection state table |
//! | [`transport`] | rendezvous sockets, shared-memory rings, connection setup             |
//!
//! The three front ends share one connection setup (`transport::accept`,
//! `transport::dial`, deciding with `proto::handshake`), one data channel per connection
//! (`transport::channel`) and one connection state machine (`proto::state`).

#![deny(unsafe_code)]

pub mod caps;
pub mod conn;
pub mod ctrl;
pub mod fast;
pub mod legacy;
pub mod proto;
pub mod transport;

pub use conn::{Connection, Counter, FastPathStats};
pub use ctrl::{
    CNames, Cc, Client, ClientRole, ConnectionCb, ConsumerCb, MsgRecvCb, SendPayload, SendTask, Server,
    ServerRole, DEFAULT_RECV_QUEUE_SIZE,
};
pub use fast::{
    Consumer, ImmData, PostRecvPayload, PostRecvTask, Producer, ProducerSendPayload, ProducerSendTask,
    IMM_MAX,
};
pub use transport::cadence::{CTRL_EVERY, CTRL_PERIOD};
