//! `doca_emu`: see and steer a running emulation without the processes' cooperation.
//!
//! Each process that uses the emulator keeps a status page in the fabric directory
//! (`doca_core::status` has the layout, `doca_link::status` makes the file). This
//! crate reads those pages — never trusting them — and writes plans into their mailboxes.
//!
//! | module      | what                                                             |
//! |-------------|------------------------------------------------------------------|
//! | [`scan`]    | finding, checking and reading the pages; live, stale, forged, invalid, foreign |
//! | [`sockets`] | socket and lock files whose server is gone (what SIGKILL leaves), found and removed |
//! | [`report`]  | `ls` as text and as JSON, and `watch`'s frames                   |
//! | [`inject`]  | writing a plan into a process's mailbox and waiting for its answer |
//! | [`tui`]     | `watch` on a terminal: the live table, its keys, and its frame as text (`watch --once`) |
//! | [`cli`]     | the command line (`ls`, `watch`, `inject`, `clean`, `keygen`)    |
//!
//! Only pages of this user are read or written: the fabric directory must be this user's
//! and closed to others, and each page file must belong to this user (others are listed as
//! foreign, never opened for writing).

#![forbid(unsafe_code)]

pub mod cli;
pub mod inject;
pub mod report;
pub mod scan;
pub mod sockets;
pub mod tui;
