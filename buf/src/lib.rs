//! DOCA buffers (`doca_buf`) and buffer inventories (`doca_buf_inventory`).
//!
//! This crate is filled by the memory issue; it holds no API yet.

#![forbid(unsafe_code)]
