//! The DOCA samples ported to Rust, and the tools around them.
//!
//! Binaries (`cargo run --release -p doca-samples --bin NAME`):
//! - `doca_caps`: lists the emulated devices, their representors and capabilities, like
//!   DOCA's `doca_caps --list-devs`.
//! - `doca_bench`: measures the emulator against baselines taken in the same run.
//!
//! The library part holds what the samples share, as DOCA's `samples/common.c` does.

#![forbid(unsafe_code)]

pub mod log;
