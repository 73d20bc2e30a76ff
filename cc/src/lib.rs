//! DOCA Comm Channel: the 2024 `doca_cc` API (server, client, connection, producer,
//! consumer) and the legacy `doca_comm_channel_ep` endpoint API, over an emulated PCIe link
//! (Unix sockets for rendezvous, shared-memory rings for data).
//!
//! This crate is filled by the comm-channel issues; it holds no API yet.

#![forbid(unsafe_code)]
