//! DOCA memory maps (`doca_mmap`): memory ranges with access permissions, registered with
//! devices, and exported to the other side of the emulated PCIe link.
//!
//! This crate is filled by the memory issue; it holds no API yet.

#![forbid(unsafe_code)]
