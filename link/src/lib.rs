//! The ground floor of the emulation: the only crate that talks to the operating system
//! about peers. Everything above it (core, mmap, the libraries, the tools) reaches other
//! processes through what is here.
//!
//! | module      | what                                                                    |
//! |-------------|-------------------------------------------------------------------------|
//! | [`fabric`]  | the per-user fabric directory, rendezvous sockets (`SOCK_SEQPACKET`), descriptors passed with `SCM_RIGHTS`, peer credentials |
//! | [`pidfd`]   | the pidfd of a socket's peer process (`SO_PEERPIDFD`)                   |
//! | [`bells`]   | doorbells registered with the owner of a shared object (a sync event): importers' engines woken with no descriptor named in shared memory |
//! | [`exchange`] | a thread's blocking talk with one peer: fixed-size packets, waits with a stall limit and a stop handle |
//! | `scm`       | one packet and the descriptors it carries, sent or received without blocking (the raw calls under `fabric` and `discard`) |
//! | [`discard`] | files and sockets from a peer closed on a thread of their own (a close can wait on whoever holds the file), and sockets that refuse descriptors |
//! | [`cleanup`] | the names this process made in the fabric directory, removed when SIGINT, SIGTERM or SIGHUP stops it |
//! | [`budget`]  | peer identity (pidfd + start time) and the per-peer-process ledger of what peers hold here |
//! | [`notify`]  | doorbells, eventfds, timers and epoll sets (what a sleeping side waits on) |
//! | [`rendezvous`] | one memory service per offering process: memfds and served-export connections handed to whoever brings an offer's token, never through `/proc` |
//! | [`memfd`]   | sealed memfds: shared memory whose size a peer cannot change            |
//! | [`ring`]    | shared-memory segments and the SPSC message rings in them (Comm Channel's and RDMA's messages) |
//! | [`cadence`] | when a busy side looks at its sockets (a syscall) instead of only its rings |
//! | [`remote`]  | host and DPU on two kernels: authenticated, encrypted TCP streams (Noise KK), the DPU's listener, opens, presences, keys |
//! | [`status`]  | this process's status file in the fabric directory (core writes it), and whose a page file is ([`status::mapped_by`]) |
//! | [`Error`], [`Result`] | the link's own few DOCA codes; `doca_core::Error` converts from them |
//! | [`CapSpec`] | a limit read from the topology (core's topology reads them; the peer budgets declare theirs here) |
//!
//! Dependencies point one way: link ← core ← mmap ← buf ← libraries ← capi/samples/tests.
//! This crate knows no DOCA object; it depends on no other crate of the workspace.

pub mod bells;
pub mod budget;
pub mod cadence;
pub mod cleanup;
pub mod discard;
#[doc(hidden)]
pub mod doctest;
pub mod error;
pub mod exchange;
pub mod fabric;
pub mod memfd;
pub mod notify;
pub mod pidfd;
pub mod remote;
pub mod rendezvous;
pub mod ring;
mod scm;
pub mod status;

pub use error::{Error, Result, SDK_STDERR_ENV};
pub use fabric::{
    answer_and_close, connect, connect_port, connect_service, fabric_dir, is_local_address, peer_pid,
    peer_uid, port_file, recv, send, service_file, service_path, socketpair, FabricDir, HostFn, Listener,
    Recv, FABRIC_ENV,
};

/// A capability a library reads from the topology: its full name and its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapSpec {
    /// `library.name`, as written in a topology file.
    pub name: &'static str,
    /// The value when the topology does not set it.
    pub default: u64,
    /// One line for `doca_caps` and the book.
    pub descr: &'static str,
}
