//! The 2024 `doca_cc` control path: servers, clients, connections and send tasks.
//!
//! | file       | what                                                                   |
//! |------------|------------------------------------------------------------------------|
//! | [`api`]    | [`Server`], [`Client`] (one generic [`Cc`]) and the context operations |
//! | `side`     | what both roles share: settings, send pool, links, the busy path       |
//! | `server`   | listening: the acceptor and the connection callbacks                   |
//! | `client`   | connecting, with back-off                                              |
//! | `link`     | one established connection as its owner sees it                        |
//! | `send`     | [`SendTask`]                                                           |

pub mod api;
mod client;
mod link;
mod send;
mod server;
mod side;

pub use api::{CNames, Cc, Client, ClientRole, Server, ServerRole};
pub use send::{SendPayload, SendTask};
pub use server::ConnectionCb;
pub use side::{ConsumerCb, MsgRecvCb, DEFAULT_RECV_QUEUE_SIZE};
