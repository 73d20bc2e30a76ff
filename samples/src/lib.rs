//! The DOCA samples ported to Rust, and the tools around them.
//!
//! Binaries (`cargo run --release -p doca-samples --bin NAME`):
//! - `doca_demo`: the host/DPU demo, the control-path sample pair as two processes.
//! - `cc_ctrl_path_server`, `cc_ctrl_path_client`: DOCA's control-path samples.
//! - `cc_data_path_high_speed_server`, `cc_data_path_high_speed_client`: DOCA's fast-path
//!   samples (producers and consumers).
//! - `comm_channel_server`, `comm_channel_client`: DOCA's legacy endpoint samples.
//! - `doca_caps`: lists the emulated devices, their representors and capabilities, like
//!   DOCA's `doca_caps --list-devs`.
//! - `doca_bench`: measures the emulator against baselines taken in the same run.
//! - `doca_graph`: DOCA's graph sample (DMA context nodes and a user node, 10 instances).
//!
//! The library part holds the samples themselves; what every DOCA program shares
//! (`samples/common.c`, `doca_log`) is the `doca-common` crate.

#![deny(unsafe_code)]

pub mod against;
pub mod args;
pub mod bench;
pub mod bench_capi;
pub mod bench_link;
pub mod bench_rdma;
pub mod bench_sysref;
pub mod cc_ctrl_path;
pub mod cc_data_path;
pub mod comm_channel;
pub mod graph;
#[cfg(feature = "iceoryx2")]
pub mod iox;
