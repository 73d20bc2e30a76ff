//! DOCA Comm Channel over an emulated PCIe link: the 2024 `doca_cc` API (server, client,
//! connection, send tasks, events) — with producers, consumers and the legacy
//! `doca_comm_channel_ep` API to come on the same transport.
//!
//! | DOCA                                  | here                                   |
//! |---------------------------------------|----------------------------------------|
//! | `struct doca_cc_server`               | [`Server`]                             |
//! | `struct doca_cc_client`               | [`Client`]                             |
//! | `struct doca_cc_connection`           | [`Connection`] (`Send + Sync`)         |
//! | `struct doca_cc_task_send`            | [`SendTask`]                           |
//! | `enum doca_cc_counter`                | [`Counter`]                            |
//! | `doca_cc_cap_*`                       | [`caps`]                               |
//!
//! The legacy `doca_comm_channel_ep_*` API is [`legacy`]: the same transport, an endpoint
//! that makes progress inside its calls.
//!
//! Inside: [`proto`] is the wire format (no I/O), [`transport`] the rendezvous sockets,
//! file-descriptor passing and shared-memory rings.

#![deny(unsafe_code)]

pub mod caps;
mod client;
mod conn;
mod consumer;
mod endpoint;
mod fast;
pub mod legacy;
mod producer;
pub mod proto;
mod server;
pub mod transport;

pub use client::Client;
pub use conn::{Connection, Counter};
pub use consumer::{Consumer, PostRecvPayload, PostRecvTask};
pub use endpoint::{
    ConsumerCb, MsgRecvCb, SendPayload, SendTask, CTRL_EVERY, CTRL_PERIOD, DEFAULT_RECV_QUEUE_SIZE,
};
pub use fast::{fast_path_stats, FastPathStats, ImmData, IMM_MAX};
pub use producer::{Producer, ProducerSendPayload, ProducerSendTask};
pub use server::{ConnectionCb, Server};
