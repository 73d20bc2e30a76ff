//! Exports of memory registered by address (a C program's `malloc`, a `Vec`, a static):
//! served by threads of this library in the exporting process, so that the exporter's own
//! threads can do nothing at all (block in `read()`, `getchar()`, sleep) — and, for heap
//! memory, its whole pages shared at memory speed (**Shared pages** below).
//!
//! **Shared pages.** At the first export of private anonymous memory (the heap, an anonymous
//! `mmap`), the pages lying wholly inside the range are swapped for a sealed memfd mapping
//! ([`crate::swap`]: how the swap, other threads writing meanwhile, `fork()` and revocation
//! are handled). The welcome hands that memfd to an importer of another process (never to
//! one of this process: it keeps the served path, where this process's borrow tracker is
//! checked), with where the pages start in the range and their length; the importer checks
//! the seals and size and maps exactly those pages (read-only for a read-only export, whose
//! memfd also carries `F_SEAL_FUTURE_WRITE`: no writable mapping nor `write` can be made of
//! it by anyone). Its copies of the middle are then a memcpy; the partial pages at the two
//! ends — which hold the range's neighbours, never shared — are still served, both in one
//! request sent before the middle is copied (the serving thread copies them meanwhile, and
//! looks for the next request for [`SPIN`] before sleeping, so a stream of copies needs no
//! wake-up). A copy wholly inside the shared pages asks the socket whether the export is
//! still live (a `poll`, no request). Memory that is not private anonymous read-write (a
//! static, a file mapping, shared memory, the main thread's stack), a range without a whole
//! page, or a swap that fails for any reason keeps the served path only (logged at debug
//! level). What changes with shared pages: the exporter's own borrows of those bytes no
//! longer make an importer's copy `IN_USE` (as on the hardware, DMA races the CPU); a copy
//! that races the revocation may land in pages the exporter no longer maps (never in its
//! memory after the stop returned).
//!
//! | side     | what                                                                    |
//! |----------|-------------------------------------------------------------------------|
//! | exporter | `Server`: at the first export, a connection offer with a 128-bit random token in this process's memory service ([`doca_link::rendezvous`]: one named socket in the fabric directory, no secret in its name; the descriptor carries its name and the token); the service's thread hands each importer that brings the token to a thread of its own (at most [`MAX_CONNS`], see **Places**) |
//! | importer | `Client`: one connection and its window; a copy is a request per [`WINDOW`] bytes |
//! | wire     | welcome `magic, len u64, perms u32, head u64, shared u64, base u32` with the window's memfd (and the shared pages'); request `op u32, at u32, offset u64, len u64, offset2 u64, len2 u64, at2 u32, 0 u32` (a second piece when `len2` is not 0; `at`, `at2`: where each piece's bytes sit in the window); answer `status u32, 0 u32` (0 or a DOCA code) once the copy is done and the exporter's borrows of its bytes have ended |
//!
//! **The bytes** go through a **window**: a sealed memfd of [`WINDOW`] bytes (and a little
//! room, see **Placement**) the exporter makes for each connection and hands over in the
//! welcome; both sides map it, and only the socket's requests and answers say whose turn it is.
//! A read: the importer asks, the exporter's thread copies the bytes into the window and
//! answers, the importer copies them out. A write: the importer copies its bytes into the
//! window and asks, the exporter's thread copies them into the range and answers. Each byte is
//! copied twice, by `memcpy` (no system call), and the exporter never waits for its importer
//! inside a copy: there is nothing to stall on. The window is only ever read and written by raw
//! copies, never through a reference: the other side may scribble on it meanwhile and only
//! garbles its own copy (an importer may write into the range only what its permissions let it
//! write anyway). The importer checks the window's seals and size before it maps it, so the
//! exporter cannot shrink it under the importer (no `SIGBUS`).
//!
//! **Placement.** The importer says where in the window each piece sits: at the exporter's
//! address of those bytes modulo 4096 (the welcome's `base`), so that the exporter's copy
//! runs in step, or 64 bytes on when its own copy would otherwise have its destination 1 to
//! 63 bytes past its source modulo 4096 — glibc's `memcpy` of 4 KiB or more is ten times
//! slower there on some processors. The exporter checks only that each piece lies inside the
//! window.
//!
//! **No shared file but memory.** Besides the two memfds, the sides share nothing but their
//! own ends of the connected socket. This is on purpose: a pipe (how the bytes went before,
//! by `vmsplice`) is one kernel object with one lock, and a peer holding any file of it can
//! hold that lock as long as it likes — by a `splice` into it from an empty blocking socket —
//! while every `read` or `write` of the other side waits for it, uninterruptibly, non-blocking
//! or not (the book's troubleshooting chapter). The same lock is taken when a pipe end a peer
//! sent is closed, and a FUSE file's close waits for its server; so neither side closes a
//! file the other chose in a thread that matters ([`doca_link::discard`]). The connection
//! refuses descriptors beyond the welcome where the kernel can (`SO_PASSRIGHTS`, Linux 6.16:
//! the exporter's socket from its admission on, the importer's after the welcome); whatever
//! comes anyway is received with room for all of it and closed on a closing thread, and
//! so is each side's socket (closing it releases what is still queued on it). The importer closes the welcome's memfds itself only once it has checked
//! them.
//!
//! **Borrowing.** A request is checked against this process's borrows of the whole range at
//! once (a range the exporter holds borrowed now: `IN_USE`, before any byte). The copy then
//! borrows piece by piece ([`PIECE`] bytes), each piece only around its `memcpy` to or from the
//! window. A piece the exporter borrowed meanwhile is waited for (a few milliseconds at a
//! time, at most [`STALL`]; then the answer is `TIME_OUT`). A copy is thus not atomic against
//! the exporter's own writes — as on the hardware, where DMA and the CPU race — only each
//! piece is.
//!
//! **Places.** One importer process holds at most [`MAX_CONNS_PER_PEER`] of the
//! [`MAX_CONNS`] places. With every place taken, the process holding the most gives its
//! oldest idle connection (one between copies) to a newcomer of a process that would then
//! hold fewer (the rule of the comm channel's handshake places); otherwise the newcomer is
//! closed unwelcomed. Each connection's thread and its [`CONN_FDS`] descriptor are charged
//! to the importer's process in the peer ledger ([`crate::budget`]): beyond its budget the
//! connection is closed unwelcomed too (the window is this process's own memory; the
//! importer counts it as memory of its exporter's mapped there, `peer.mem_per_conn`). Refusals are logged at most once a second
//! per kind.
//!
//! **Trust.** The exporter checks every request against the exported range (offset and length
//! in bounds without overflow), the export's permissions (writes need `PCI_READ_WRITE`) and
//! its own revocation, answers a bad one with its DOCA code and goes on serving; only
//! processes of the exporter's own uid may connect. A request or answer that breaks the
//! protocol closes that one connection. The importer reaches the exporter only through
//! its memory service ([`doca_link::rendezvous`]: a socket of its own uid in the 0700 fabric
//! directory, the token in the descriptor); the exporter's identity comes from that socket
//! (its pidfd), not from any pid the descriptor carries, and the importer checks that the
//! descriptors it receives are sealed memfds of the sizes announced. Nothing else
//! of the exporter is reachable: unlike `process_vm_readv` (ptrace rights over the whole
//! process), the importer gets exactly the range — its whole pages mapped, the neighbours on
//! the partial pages at its ends never.
//!
//! **Why not ptrace.** `process_vm_readv`/`writev` need ptrace rights over the exporter:
//! under Yama `ptrace_scope=1` only a tracer the exporter names with `PR_SET_PTRACER` (it does
//! not know its importers, and naming any process grants full ptrace), never under scope 2
//! or 3, nor for a non-dumpable process or under a seccomp filter; and measured here it
//! copied slower than the pipes this path once used. The window needs no right at all.
//!
//! **Cost.** Without shared pages, per [`WINDOW`] bytes a request, a wake-up of the serving
//! thread (unless it is still looking, see [`SPIN`]), two `memcpy` and the answer: here a
//! 64-byte read or write takes about 23–25 µs (mostly the wake-up), a 1 MiB one 90–115 µs,
//! where a mapped shared export takes about 25 µs. With shared pages, a memcpy of the middle
//! overlapped with one request for the two ends: about 0.7–0.8× memcpy at 1 MiB on a loaded
//! 2-core machine (measurements in the DMA crate's docs and the bench).
//!
//! **Revocation** (the exporting map stopped or destroyed) raises an event the threads wait
//! on; the map's stop joins them, so no thread touches the memory once stop returns, and their
//! sockets are closed: the importer's next look finds `NOT_FOUND`. A killed exporter closes
//! them too (same answer). Once the threads are joined, shared pages are swapped back to
//! private memory ([`crate::swap`]). In a child of `fork`, the threads do not exist: the
//! child's copy of the map revokes nothing of its parent's (its exports keep being served by
//! the parent), and its copy of the shared pages was made private at the fork.

#![allow(unsafe_code)]

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use doca_core::{fail, peer_fail, Error, Result};
use doca_link::discard::PeerFd;
use doca_link::exchange::{self, Patience};
use parking_lot::Mutex;
use rustix::io::Errno;

use crate::budget::{Account, Hold, Limits, PeerId};
use crate::desc::AccessFlags;
use crate::shm::{Region, Tracker};

/// Importers one export serves at once; more are refused (logged) until one goes.
pub const MAX_CONNS: usize = 64;
/// Connections one importer process may hold to one export (a quarter of the places: the
/// rest stay for other processes).
pub const MAX_CONNS_PER_PEER: usize = MAX_CONNS / 4;
/// How long a side waits for its peer's next step before giving up (the copy fails with
/// `TIME_OUT` on the importer, the connection closes on the exporter).
pub const STALL: Duration = Duration::from_secs(10);
/// The most bytes one request moves: the size of a connection's window (shared memory both
/// sides map, see **The bytes**); a longer copy is several requests.
pub const WINDOW: usize = 1 << 20;
/// The most bytes an exporter's thread borrows of the range at a time, around one copy to or
/// from the window.
pub const PIECE: usize = 64 << 10;
/// Where a copy's bytes sit in the window is chosen modulo this (see [`place`]).
const ALIAS: usize = 4096;

/// The window's length: [`WINDOW`] bytes, and room to place two pieces as [`place`] does.
pub(crate) fn window_len() -> usize {
    (WINDOW + 4 * ALIAS).next_multiple_of(crate::shm::page_size())
}

/// Where in the window a piece goes, at or after `from`: at the same address modulo [`ALIAS`]
/// as the exporter's bytes (`theirs`: their address modulo [`ALIAS`]), so that the exporter's
/// copy has source and destination in step; moved on by 64 bytes when this side's copy (of
/// `user`, the address of its own bytes; `read`: from the window into them) would then have
/// its destination 1 to 63 bytes past its source modulo 4096. There glibc's `memcpy` of 4 KiB
/// and more is ten times slower on some processors (measured here: 1 MiB in 520-600 µs against
/// 40-50 µs; 32 bytes and more past it is not slowed); the exporter's copy is then 64 bytes
/// off, which is not slowed either.
fn place(from: usize, theirs: usize, user: usize, read: bool) -> usize {
    let at = from + (theirs + ALIAS - from % ALIAS) % ALIAS;
    let past = if read { user.wrapping_sub(at) } else { at.wrapping_sub(user) } % ALIAS;
    if (1..64).contains(&past) {
        at + 64
    } else {
        at
    }
}
const OP_READ: u32 = 1;
const OP_WRITE: u32 = 2;
const REQ_LEN: usize = 48;
const ANSWER_LEN: usize = 8;
const WELCOME_MAGIC: &[u8; 8] = b"DOCAMMSV";
const WELCOME_LEN: usize = 40;

fn os(what: &str, e: Errno) -> Error {
    fail!(Error::OperatingSystem, "{what}: {e}")
}

/// What the exporter's threads share.
struct Shared {
    revoked: AtomicBool,
    /// Readable once revoked (an eventfd written once, never read).
    stop: OwnedFd,
    backing: Backing,
    perms: AccessFlags,
    /// The live connections, one place each (see [`Shared::take_place`]).
    places: std::sync::Mutex<Places>,
    /// The serving threads (joined at revocation).
    conns: std::sync::Mutex<Vec<JoinHandle<()>>>,
    /// Peer-caused log lines of admissions, at most one per kind and second.
    logs: std::sync::Mutex<LogLimit>,
    /// The peer budgets the serving threads are charged to.
    limits: Limits,
    /// The whole pages of the range shared through a memfd (see [`crate::swap`]): the
    /// memfd, where its pages start in the range, and how many bytes, for importers of other
    /// processes.
    shared_pages: Option<(OwnedFd, usize, usize)>,
    /// The range's address modulo [`ALIAS`] (0 for a relay), for [`place`].
    base: usize,
}

/// The bytes an export serves.
pub(crate) enum Backing {
    /// Memory of this process, mapped here: copied to and from the window.
    Local { region: Region, tracker: Tracker },
    /// A map this process created from another process's export, exported on (a DPU
    /// exporting for RDMA the host memory it was given): every copy goes through this
    /// process, with a bounce buffer, and fails as the import does once its exporter
    /// revoked it.
    Relay(Box<dyn Relay>),
}

/// Access to the bytes of a re-exported import (see [`Backing::Relay`]).
pub(crate) trait Relay: Send + Sync {
    /// The range's length.
    fn len(&self) -> usize;
    /// Whether writes may reach the memory.
    fn is_writable(&self) -> bool;
    /// Copies `dst.len()` bytes at `offset` into `dst`.
    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()>;
    /// Copies `src` to `offset`.
    fn write(&self, offset: usize, src: &[u8]) -> Result<()>;
}

impl Backing {
    fn len(&self) -> usize {
        match self {
            Backing::Local { region, .. } => region.len(),
            Backing::Relay(r) => r.len(),
        }
    }

    fn is_writable(&self) -> bool {
        match self {
            Backing::Local { region, .. } => region.is_writable(),
            Backing::Relay(r) => r.is_writable(),
        }
    }
}

/// Descriptors the exporter keeps for one importer: its socket (charged to the importer's
/// process, with the serving thread, in the peer ledger).
pub const CONN_FDS: u64 = 1;

/// A connection waits for its importer's next request (it may give its place away).
const IDLE: u8 = 0;
/// A connection is inside a copy.
const BUSY: u8 = 1;
/// A connection gave its place to a newcomer: its thread ends at its next look.
const EVICTED: u8 = 2;

/// One importer's connection, as its serving thread and the accepting thread share it.
struct Conn {
    /// Closed on a closing thread ([`doca_link::discard`]).
    sock: doca_link::discard::PeerFd,
    /// [`IDLE`], [`BUSY`] or [`EVICTED`]: only the serving thread moves between the first
    /// two, only the accepting thread from [`IDLE`] to [`EVICTED`].
    state: std::sync::atomic::AtomicU8,
}

/// One place: the importer's process, the order it came in, its connection.
struct Place {
    peer: PeerId,
    seq: u64,
    conn: Arc<Conn>,
}

#[derive(Default)]
struct Places {
    live: Vec<Place>,
    next_seq: u64,
}

/// Why a connection was not given a place.
#[derive(Debug, PartialEq, Eq)]
enum NoPlace {
    /// Its process holds [`MAX_CONNS_PER_PEER`] already.
    PeerFull,
    /// Every place is taken and none could be given away.
    Full,
}

impl Shared {
    /// Takes a place for `conn`, an importer of process `peer`: refused when that process
    /// holds [`MAX_CONNS_PER_PEER`] already. With all [`MAX_CONNS`] taken, the process
    /// holding the most places gives its oldest idle connection away (closed) when it holds
    /// more than this process would; otherwise refused. Returns the place's number and, when
    /// one was given away, its process and how many that process held.
    fn take_place(
        &self,
        peer: PeerId,
        conn: &Arc<Conn>,
    ) -> std::result::Result<(u64, Option<(PeerId, usize)>), NoPlace> {
        let mut places = self.places.lock().unwrap_or_else(|e| e.into_inner());
        // At most MAX_CONNS entries, counted on accept only.
        let mut counts: smallvec::SmallVec<[(PeerId, usize); 8]> = smallvec::SmallVec::new();
        for p in &places.live {
            match counts.iter_mut().find(|(q, _)| *q == p.peer) {
                Some((_, n)) => *n += 1,
                None => counts.push((p.peer, 1)),
            }
        }
        let mine = counts.iter().find(|(q, _)| *q == peer).map_or(0, |(_, n)| *n);
        if mine >= MAX_CONNS_PER_PEER {
            return Err(NoPlace::PeerFull);
        }
        let mut evicted = None;
        if places.live.len() >= MAX_CONNS {
            let Some(&(greedy, most)) = counts.iter().max_by_key(|(_, n)| *n) else {
                return Err(NoPlace::Full);
            };
            if most <= mine + 1 {
                return Err(NoPlace::Full);
            }
            // Its oldest idle connection (one inside a copy finishes it).
            let mut theirs: smallvec::SmallVec<[(u64, usize); 16]> = places
                .live
                .iter()
                .enumerate()
                .filter(|(_, p)| p.peer == greedy)
                .map(|(i, p)| (p.seq, i))
                .collect();
            theirs.sort_unstable();
            let victim = theirs.iter().find(|&&(_, i)| {
                places.live[i]
                    .conn
                    .state
                    .compare_exchange(IDLE, EVICTED, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            });
            let Some(&(_, i)) = victim else { return Err(NoPlace::Full) };
            let gone = places.live.swap_remove(i);
            // Its thread wakes (its socket reads as closed) and ends; its importer finds the
            // export gone (`NOT_FOUND`) at its next copy.
            exchange::hang_up(gone.conn.sock.as_fd());
            evicted = Some((greedy, most));
        }
        let seq = places.next_seq;
        places.next_seq += 1;
        places.live.push(Place { peer, seq, conn: conn.clone() });
        Ok((seq, evicted))
    }

    /// Gives place `seq` back (nothing when it was given away already).
    fn give_place(&self, seq: u64) {
        let mut places = self.places.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = places.live.iter().position(|p| p.seq == seq) {
            places.live.swap_remove(i);
        }
    }
}

/// An export being served (see the module docs). Dropping it revokes it.
pub(crate) struct Server {
    shared: Arc<Shared>,
    /// The offer in the memory service (withdrawn first at revocation).
    offered: Option<doca_link::rendezvous::Offered>,
    service: doca_link::rendezvous::ServiceName,
    token: doca_link::rendezvous::Token,
    pid: u32,
    /// The range's whole pages, swapped for shared memory until revoked.
    swapped: Option<crate::swap::Swapped>,
}

impl Server {
    /// Serves `region` (tracked by `tracker`) with `perms` under a fresh token.
    ///
    /// The region must stay valid until [`Server::revoke`] returns (the map revokes before
    /// it gives its memory back).
    pub(crate) fn start(region: Region, tracker: Tracker, perms: AccessFlags) -> Result<Server> {
        let writes =
            perms.intersects(AccessFlags::PCI_READ_WRITE | AccessFlags::RDMA_WRITE) && region.is_writable();
        let swapped = match crate::swap::Swapped::swap_in(region.addr(), region.len(), !writes) {
            Ok(s) => Some(s),
            Err(why) => {
                tracing::debug!(target: "doca_sdk", "mmap export: served only: {why}");
                None
            }
        };
        // (On failure, dropping `swapped` swaps the pages back.)
        Server::start_with(Backing::Local { region, tracker }, perms, swapped)
    }

    /// Serves the import `relay` with `perms` under a fresh token (a map from export,
    /// exported again: see [`Backing::Relay`]).
    pub(crate) fn relay(relay: Box<dyn Relay>, perms: AccessFlags) -> Result<Server> {
        Server::start_with(Backing::Relay(relay), perms, None)
    }

    fn start_with(
        backing: Backing,
        perms: AccessFlags,
        swapped: Option<crate::swap::Swapped>,
    ) -> Result<Server> {
        let pid = std::process::id();
        let stop = rustix::event::eventfd(
            0,
            rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
        )
        .map_err(|e| os("eventfd", e))?;
        // A topology that cannot be read fails the first export long before: none here.
        let limits = crate::budget::global_limits().unwrap_or(Limits::NONE);
        let shared_pages = match (&swapped, &backing) {
            (Some(s), Backing::Local { region, .. }) => {
                let fd = s.fd().try_clone().map_err(|e| fail!(Error::OperatingSystem, "dup: {e}"))?;
                Some((fd, s.head(region.addr()), s.len()))
            }
            _ => None,
        };
        let base = match &backing {
            Backing::Local { region, .. } => region.addr() % ALIAS,
            Backing::Relay(_) => 0,
        };
        let shared = Arc::new(Shared {
            base,
            revoked: AtomicBool::new(false),
            stop,
            backing,
            perms,
            places: std::sync::Mutex::new(Places { live: Vec::with_capacity(MAX_CONNS), next_seq: 0 }),
            conns: std::sync::Mutex::new(Vec::new()),
            logs: std::sync::Mutex::new(LogLimit::default()),
            limits,
            shared_pages,
        });
        let sh = shared.clone();
        let offered = doca_link::rendezvous::offer(doca_link::rendezvous::Offer::Connection(Box::new(
            move |conn, peer| admit(conn, peer, &sh),
        )))?;
        Ok(Server {
            shared,
            service: offered.service(),
            token: offered.token(),
            offered: Some(offered),
            pid,
            swapped,
        })
    }

    /// The memory service the descriptor names.
    pub(crate) fn service(&self) -> doca_link::rendezvous::ServiceName {
        self.service
    }

    /// The token the descriptor carries.
    pub(crate) fn token(&self) -> doca_link::rendezvous::Token {
        self.token
    }

    /// Revokes the export: no importer is admitted any more, the threads stop and are
    /// joined (in the process that started them), their connections closed.
    pub(crate) fn revoke(&mut self) {
        // Withdrawn first: once this returns, no admission is in progress or to come.
        drop(self.offered.take());
        self.shared.revoked.store(true, Ordering::SeqCst);
        let _ = rustix::io::write(&self.shared.stop, &1u64.to_ne_bytes());
        if std::process::id() == self.pid {
            let conns = std::mem::take(&mut *self.shared.conns.lock().unwrap_or_else(|e| e.into_inner()));
            for h in conns {
                let _ = h.join();
            }
        }
        // No thread serves any more: the pages become private again (see `crate::swap`).
        drop(self.swapped.take());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.revoke();
    }
}

/// How long a side waits for its peer, watching `stop`: at most [`STALL`].
fn patience(stop: Option<BorrowedFd<'_>>) -> Patience<'_> {
    Patience::new(stop, STALL)
}

/// The served protocol's view of a link failure: `TIME_OUT` stays (the peer stalled), any
/// other means the peer is gone or broke the protocol (`NOT_FOUND`, what an importer's copy
/// reports of an export no longer there).
fn gone(e: Error) -> Error {
    match e {
        Error::TimeOut => Error::TimeOut,
        _ => Error::NotFound,
    }
}

/// Sends one packet with `fds` (never waiting: the welcome, or a test's request).
/// `NOT_FOUND` when the peer left or its connection is full.
fn send(sock: BorrowedFd<'_>, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> Result<()> {
    doca_link::fabric::send(sock, bytes, fds).map_err(|e| gone(e.into()))
}

/// Sends one packet without descriptors, waiting for room (a peer that does not read its
/// answers fills the connection) while watching `stop`, at most [`STALL`]. `NOT_FOUND` when
/// the peer left.
fn send_waiting(sock: BorrowedFd<'_>, bytes: &[u8], stop: Option<BorrowedFd<'_>>) -> Result<()> {
    exchange::send_waiting(sock, bytes, patience(stop)).map_err(|e| gone(e.into()))
}

/// Receives one packet of exactly `buf.len()` bytes (waiting, watching `stop`); descriptors
/// sent with it are discarded and break the protocol. `NOT_FOUND` when the peer closed, left,
/// sent another size or sent descriptors.
fn recv(sock: BorrowedFd<'_>, buf: &mut [u8], stop: Option<BorrowedFd<'_>>) -> Result<()> {
    no_files(exchange::recv_exact(sock, buf, patience(stop)))
}

/// Receives the welcome (exactly `buf.len()` bytes) with its descriptors: the only packet
/// whose descriptors are taken (the importer's side, from its exporter).
fn recv_welcome(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Result<Vec<PeerFd>> {
    exchange::recv_exact(sock, buf, patience(None)).map_err(|e| gone(e.into()))
}

/// A request or answer as received: descriptors where none are due break the protocol
/// (they are closed on a closing thread, see [`doca_link::discard`]).
fn no_files(got: doca_link::Result<Vec<PeerFd>>) -> Result<()> {
    match got {
        Ok(fds) if fds.is_empty() => Ok(()),
        Ok(_) => Err(peer_fail!(Error::NotFound, "served export: descriptors where none are due")),
        Err(e) => Err(gone(e.into())),
    }
}

/// How long a serving thread of an export with shared pages looks for its importer's next
/// request before it sleeps (see `serve`).
pub const SPIN: Duration = Duration::from_micros(50);

/// Peer-caused log lines of the accepting thread, at most one per kind and second (the next
/// one telling how many were held back).
#[derive(Default)]
struct LogLimit {
    last: [Option<Instant>; 3],
    held: [u64; 3],
}

impl LogLimit {
    const REFUSED: usize = 0;
    const EVICTED: usize = 1;
    const BUDGET: usize = 2;

    /// `Some(held back)` when a line of `kind` may be logged now.
    fn admit(&mut self, kind: usize) -> Option<u64> {
        let now = Instant::now();
        match self.last[kind] {
            Some(t) if now.saturating_duration_since(t) < Duration::from_secs(1) => {
                self.held[kind] += 1;
                None
            }
            _ => {
                self.last[kind] = Some(now);
                Some(std::mem::take(&mut self.held[kind]))
            }
        }
    }
}

/// What the importer's process is charged for one connection: its serving thread and
/// [`CONN_FDS`] descriptors, in the peer ledger ([`crate::budget`]). `Err` with the reason
/// (its process is gone, or beyond its budget).
fn charge(peer: PeerId, limits: Limits) -> std::result::Result<Hold, String> {
    Account::open(peer, limits)
        .claim_with_threads(0, CONN_FDS, 1, "an importer of a served export")
        .map_err(|r| r.why)
}

/// Admits an importer of process `peer` that brought the export's token (in the memory
/// service's thread: never blocks): a place (perhaps given away by the biggest holder, see
/// [`Shared::take_place`]), its charge in the peer ledger, the welcome, a serving thread.
fn admit(sock: PeerFd, peer: PeerId, sh: &Arc<Shared>) {
    if sh.revoked.load(Ordering::SeqCst) {
        return;
    }
    let held_back = |n: u64| if n > 0 { format!(" ({n} such lines held back)") } else { String::new() };
    let log = |kind: usize, line: &dyn Fn(String)| {
        let n = sh.logs.lock().unwrap_or_else(|e| e.into_inner()).admit(kind);
        if let Some(n) = n {
            line(held_back(n));
        }
    };
    // An importer sends no descriptor (where the kernel can refuse them; any queued before
    // are received and discarded).
    doca_link::discard::refuse_descriptors(sock.as_fd());
    let conn = Arc::new(Conn { sock, state: std::sync::atomic::AtomicU8::new(IDLE) });
    let seq = match sh.take_place(peer, &conn) {
        Ok((seq, evicted)) => {
            if let Some((greedy, most)) = evicted {
                log(
                    LogLimit::EVICTED,
                    &|h| tracing::warn!(target: "doca_sdk", "served export: closed an idle connection of {greedy}, which held {most} of the {MAX_CONNS} places, to admit {peer}{h}"),
                );
            }
            seq
        }
        Err(why) => {
            let why = match why {
                NoPlace::PeerFull => format!("it holds {MAX_CONNS_PER_PEER} connections already"),
                NoPlace::Full => {
                    format!("{MAX_CONNS} importers are connected, none of a process holding more")
                }
            };
            log(
                LogLimit::REFUSED,
                &|h| tracing::warn!(target: "doca_sdk", "served export: {peer} refused: {why}{h}"),
            );
            return;
        }
    };
    let hold = match charge(peer, sh.limits) {
        Ok(h) => h,
        Err(why) => {
            sh.give_place(seq);
            log(
                LogLimit::BUDGET,
                &|h| tracing::warn!(target: "doca_sdk", "served export: importer refused: {why}{h}"),
            );
            return;
        }
    };
    let mut conns = sh.conns.lock().unwrap_or_else(|e| e.into_inner());
    let (done, live): (Vec<_>, Vec<_>) = conns.drain(..).partition(|h| h.is_finished());
    *conns = live;
    for h in done {
        let _ = h.join();
    }
    match welcome(conn.sock.as_fd(), sh, !peer.is_this_process()) {
        Ok(window) => {
            let s = sh.clone();
            let spawned = std::thread::Builder::new().name("doca-mmap-serve".into()).spawn(move || {
                serve(&conn, &window, &s);
                s.give_place(seq);
                drop((conn, window, hold));
            });
            match spawned {
                Ok(h) => conns.push(h),
                Err(e) => {
                    sh.give_place(seq);
                    tracing::warn!(target: "doca_sdk", "served export: no thread for an importer: {e}");
                }
            }
        }
        Err(e) => {
            sh.give_place(seq);
            tracing::debug!(target: "doca_sdk", "served export: welcome failed: {e}");
        }
    }
}

/// Makes the connection's window and sends the welcome (range length, permissions, where the
/// shared pages are) with the window's memfd and, to an importer of another process
/// (`other`), the memfd of the shared pages: the only descriptors the importer ever gets.
/// Returns the window, mapped here.
fn welcome(conn: BorrowedFd<'_>, sh: &Shared, other: bool) -> Result<Mapped> {
    let fd = doca_link::memfd::create_sealed("doca-mmap-window", window_len())?;
    let window = Mapped::own(fd.as_fd(), window_len())?;
    let mut msg = [0u8; WELCOME_LEN];
    msg[..8].copy_from_slice(WELCOME_MAGIC);
    msg[8..16].copy_from_slice(&(sh.backing.len() as u64).to_le_bytes());
    msg[16..20].copy_from_slice(&sh.perms.bits().to_le_bytes());
    msg[36..40].copy_from_slice(&(sh.base as u32).to_le_bytes());
    let mut fds = smallvec::SmallVec::<[BorrowedFd<'_>; 2]>::new();
    fds.push(fd.as_fd());
    if let (Some((pages, head, len)), true) = (&sh.shared_pages, other) {
        msg[20..28].copy_from_slice(&(*head as u64).to_le_bytes());
        msg[28..36].copy_from_slice(&(*len as u64).to_le_bytes());
        fds.push(pages.as_fd());
    }
    send(conn, &msg, &fds)?;
    Ok(window)
}

/// The answer to a request: `Ok` or its DOCA code, logged once.
fn check(sh: &Shared, op: u32, offset: u64, len: u64) -> Result<(usize, usize)> {
    if sh.revoked.load(Ordering::SeqCst) {
        return Err(Error::NotFound);
    }
    let (off, n) = match (usize::try_from(offset), usize::try_from(len)) {
        (Ok(o), Ok(n)) if o.checked_add(n).is_some_and(|e| e <= sh.backing.len()) && n > 0 => (o, n),
        _ => {
            return Err(peer_fail!(
                Error::InvalidValue,
                "served export: request for {offset}+{len} outside the exported {} bytes",
                sh.backing.len()
            ))
        }
    };
    match op {
        // A PCI export may always be read; an RDMA-only one needs RDMA_READ (a peer holding its
        // descriptor and talking to this server directly gets no more than the map grants).
        OP_READ
            if sh.perms.intersects(
                AccessFlags::PCI_READ_ONLY | AccessFlags::PCI_READ_WRITE | AccessFlags::RDMA_READ,
            ) =>
        {
            Ok((off, n))
        }
        OP_READ => {
            Err(peer_fail!(Error::NotPermitted, "served export: a read of an export without read permission"))
        }
        OP_WRITE
            if sh.perms.intersects(AccessFlags::PCI_READ_WRITE | AccessFlags::RDMA_WRITE)
                && sh.backing.is_writable() =>
        {
            Ok((off, n))
        }
        OP_WRITE => Err(peer_fail!(Error::NotPermitted, "served export: a write into a read-only export")),
        _ => Err(peer_fail!(Error::InvalidValue, "served export: unknown request {op}")),
    }
}

/// Sends the answer to a request (waiting for room, watching `stop`).
fn answer(sock: BorrowedFd<'_>, r: Result<()>, stop: Option<BorrowedFd<'_>>) -> Result<()> {
    let code = match r {
        Ok(()) => 0u32,
        Err(e) => e.code() as u32,
    };
    let mut a = [0u8; ANSWER_LEN];
    a[..4].copy_from_slice(&code.to_le_bytes());
    send_waiting(sock, &a, stop)
}

/// Serves one importer through `window` until it leaves, breaks the protocol, gives its
/// place away or the export is revoked.
fn serve(conn: &Conn, window: &Mapped, sh: &Shared) {
    let (sock, stop) = (conn.sock.as_fd(), Some(sh.stop.as_fd()));
    let mut req = [0u8; REQ_LEN];
    let mut streaming = false;
    loop {
        // Revoked: ends here even when the importer keeps requests queued (the stop handle is
        // looked at only when none is).
        if sh.revoked.load(Ordering::Acquire) {
            return;
        }
        // Between copies the importer may idle as long as it likes (its process may wait
        // for its user). An importer that maps the whole pages asks only for the partial
        // ends, back to back when it streams copies; one copying more than a window asks
        // again as soon as it has taken the window's bytes: the next request is looked for a
        // little before sleeping (no wake-up on its way), at most `SPIN` of this thread's
        // time each.
        let mut got = None;
        if sh.shared_pages.is_some() || streaming {
            let until = Instant::now() + SPIN;
            while got.is_none() && Instant::now() < until {
                got = exchange::recv_exact_now(sock, &mut req).map(no_files);
                std::hint::spin_loop();
            }
        }
        let got = match got {
            Some(r) => r,
            None => no_files(exchange::recv_exact(sock, &mut req, Patience::endless(stop))),
        };
        if got.is_err() {
            return;
        }
        // Inside a copy: the place is not given away meanwhile (given away already: end).
        if conn.state.compare_exchange(IDLE, BUSY, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return;
        }
        let (result, moved) = serve_one(&req, window, sh);
        streaming = moved == WINDOW;
        // Every piece's borrow has ended before the importer hears the copy is done.
        if answer(sock, result, stop).is_err() {
            return;
        }
        conn.state.store(IDLE, Ordering::Release);
    }
}

/// Serves one request through `window`: its answer, and how many bytes it moved.
fn serve_one(req: &[u8; REQ_LEN], window: &Mapped, sh: &Shared) -> (Result<()>, usize) {
    let u32_at = |i: usize| u32::from_le_bytes(req[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(req[i..i + 8].try_into().expect("8 bytes"));
    let op = u32_at(0);
    // Where the pieces sit in the window: each inside it.
    let (at, at2) = (u32_at(4) as usize, u32_at(40) as usize);
    let inside = |at: usize, len: u64| (at as u64).checked_add(len).is_some_and(|e| e <= window.len as u64);
    if u64_at(16).checked_add(u64_at(32)).is_none_or(|n| n > WINDOW as u64)
        || !inside(at, u64_at(16))
        || !inside(at2, u64_at(32))
    {
        let e = peer_fail!(
            Error::InvalidValue,
            "served export: a request for {}+{} bytes at {at} and {at2} of the window: more than its {WINDOW} bytes, or outside it",
            u64_at(16),
            u64_at(32)
        );
        return (Err(e), 0);
    }
    // The whole range looked at once: a range this process holds borrowed now is refused
    // before any byte moves (`IN_USE`); the copy itself then borrows piece by piece, each
    // only around its copy to or from the window (never around a wait for the importer).
    let (region, tracker) = match &sh.backing {
        Backing::Local { region, tracker } => (region, tracker),
        Backing::Relay(_) if u64_at(32) != 0 => {
            let e =
                peer_fail!(Error::InvalidValue, "served export: a request in two pieces to a relayed export");
            return (Err(e), 0);
        }
        Backing::Relay(relay) => {
            return match check(sh, op, u64_at(8), u64_at(16)) {
                Ok((off, len)) => (relayed(&**relay, op == OP_READ, (off, len), window, at), len),
                Err(e) => (Err(e), 0),
            }
        }
    };
    // One piece, or two (an importer that maps the whole pages asks for both partial ends
    // at once): the second's bytes follow the first's in the window.
    let piece = |o: usize| {
        check(sh, op, u64_at(o), u64_at(o + 8)).and_then(|(off, len)| {
            if op == OP_READ {
                tracker.bytes(region, off, len).map(drop)?;
            } else {
                tracker.bytes_mut(region, off, len).map(drop)?;
            }
            Ok((off, len))
        })
    };
    let checked = piece(8).and_then(|first| match u64_at(32) {
        0 => Ok([Some(first), None]),
        _ => Ok([Some(first), Some(piece(24)?)]),
    });
    let pieces = match checked {
        Ok(r) => r,
        Err(e) => return (Err(e), 0),
    };
    let (mut moved_len, mut deadline) = (0, None);
    let moved = pieces.iter().flatten().zip([at, at2]).try_for_each(|(&(off, len), at)| {
        let mut done = 0;
        while done < len {
            let n = (len - done).min(PIECE);
            if op == OP_READ {
                let bytes =
                    borrowed(sh.stop.as_fd(), &mut deadline, || tracker.try_bytes(region, off + done, n))?;
                window.write(at + done, &bytes);
            } else {
                let mut bytes = borrowed(sh.stop.as_fd(), &mut deadline, || {
                    tracker.try_bytes_mut(region, off + done, n)
                })?;
                window.read(at + done, &mut bytes);
            }
            done += n;
        }
        moved_len += len;
        Ok(())
    });
    (moved, moved_len)
}

/// Serves one checked request of `len` bytes (at most [`WINDOW`]) at `off` from a
/// re-exported import (see [`Backing::Relay`]), through a bounce buffer, its bytes at `at` of
/// the window: the import's code when it refuses.
fn relayed(
    relay: &dyn Relay,
    read: bool,
    (off, len): (usize, usize),
    window: &Mapped,
    at: usize,
) -> Result<()> {
    let mut bounce = vec![0u8; len];
    if read {
        relay.read(off, &mut bounce)?;
        window.write(at, &bounce);
        Ok(())
    } else {
        window.read(at, &mut bounce);
        relay.write(off, &bounce)
    }
}

/// Borrows a piece with `try_borrow`, waiting while this process holds it borrowed (its own
/// code, or another importer's piece for the time of one copy): a few milliseconds at a
/// time, watching `stop`, at most [`STALL`] in all for one request (`deadline`, set at its
/// first wait; then the request is answered `TIME_OUT`).
fn borrowed<T>(
    stop: BorrowedFd<'_>,
    deadline: &mut Option<Instant>,
    mut try_borrow: impl FnMut() -> Result<T>,
) -> Result<T> {
    let mut rest = Duration::from_micros(100);
    loop {
        match try_borrow() {
            Err(Error::InUse) => {}
            r => return r,
        }
        let until = *deadline.get_or_insert_with(|| Instant::now() + STALL);
        if Instant::now() >= until {
            return Err(peer_fail!(
                Error::TimeOut,
                "served export: the exporter kept the bytes of a copy in progress borrowed for {STALL:?}"
            ));
        }
        // Sleeps on the revocation event (an importer cannot ring it).
        if exchange::stopped_within(stop, rest)? {
            return Err(Error::NotFound);
        }
        rest = (rest * 2).min(Duration::from_millis(10));
    }
}

/// A connection to a served export (see the module docs): copies in and out of the range.
pub(crate) struct Client {
    /// The connection: requests and answers (closed on a closing thread, see
    /// [`doca_link::discard`]).
    sock: doca_link::discard::PeerFd,
    /// The connection's window (see **The bytes**), mapped here.
    window: Mapped,
    /// The exporter's address of the range modulo [`ALIAS`] (for [`place`]).
    base: usize,
    /// One request at a time.
    turn: Mutex<()>,
    dead: AtomicBool,
    len: usize,
    writable: bool,
    /// The exporter's whole pages, mapped here when it shares them (another process's
    /// export of heap memory, see [`crate::swap`]).
    pages: Option<Mapped>,
}

/// One piece of a request: `len` bytes at `offset` of the range, at `at` of the window.
#[derive(Clone, Copy, Debug)]
struct Piece {
    offset: usize,
    len: usize,
    at: usize,
}

/// Shared memory mapped here: `len` bytes that stand at `head` of a range (the exporter's
/// whole pages: at the first whole page; a window: at 0). Reached only through raw copies
/// (`read`, `write`): the other side may write it meanwhile.
struct Mapped {
    base: std::ptr::NonNull<u8>,
    head: usize,
    len: usize,
    /// Mapped from another process's memfd (counted in `crate::shm`'s memory from elsewhere).
    foreign: bool,
}

// SAFETY: a shared mapping reached only through bounds-checked raw copies (`read`, `write`).
unsafe impl Send for Mapped {}
// SAFETY: as above.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps the memfd `fd` of `len` bytes the exporter shares at `head` of a range of
    /// `range` bytes (writable when `writable`). Anything else than what was announced
    /// (unsealed, another size, a range outside) → `NOT_FOUND`.
    fn map(fd: BorrowedFd<'_>, head: usize, len: usize, range: usize, writable: bool) -> Result<Mapped> {
        let page = crate::shm::page_size();
        let fits =
            head < page && len % page == 0 && len > 0 && head.checked_add(len).is_some_and(|e| e <= range);
        if !fits || doca_link::memfd::check_sealed(fd, Some(len)).is_err() {
            return Err(peer_fail!(
                Error::NotFound,
                "mmap create_from_export: the exporter's shared memory ({len} bytes at {head}) is not as described"
            ));
        }
        crate::shm::reserve_from_elsewhere(len)?;
        Mapped::mmap(fd, head, len, writable, true).inspect_err(|_| crate::shm::release_from_elsewhere(len))
    }

    /// Maps this process's own sealed memfd `fd` of `len` bytes, writable.
    fn own(fd: BorrowedFd<'_>, len: usize) -> Result<Mapped> {
        Mapped::mmap(fd, 0, len, true, false)
    }

    fn mmap(fd: BorrowedFd<'_>, head: usize, len: usize, writable: bool, foreign: bool) -> Result<Mapped> {
        let prot = if writable {
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE
        } else {
            rustix::mm::ProtFlags::READ
        };
        // SAFETY: a fresh shared mapping of a sealed memfd (it cannot shrink under it).
        let ptr =
            unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, rustix::mm::MapFlags::SHARED, fd, 0) };
        match ptr.ok().and_then(|p| std::ptr::NonNull::new(p.cast::<u8>())) {
            Some(base) => Ok(Mapped { base, head, len, foreign }),
            None => Err(peer_fail!(Error::NotFound, "served export: shared memory cannot be mapped")),
        }
    }

    /// Copies `dst.len()` bytes from `offset` of the mapping (in bounds: checked by the
    /// caller).
    fn read(&self, offset: usize, dst: &mut [u8]) {
        assert!(offset.checked_add(dst.len()).is_some_and(|e| e <= self.len), "checked by the caller");
        // SAFETY: in bounds of the mapping (asserted), which lives as long as `self`; the
        // other side may write meanwhile (as DMA races the CPU): bytes, never a reference.
        unsafe { std::ptr::copy_nonoverlapping(self.base.as_ptr().add(offset), dst.as_mut_ptr(), dst.len()) }
    }

    /// Copies `src` to `offset` of the mapping (in bounds, writable: checked by the caller).
    fn write(&self, offset: usize, src: &[u8]) {
        assert!(offset.checked_add(src.len()).is_some_and(|e| e <= self.len), "checked by the caller");
        // SAFETY: as in `read`; the mapping is writable (a window; an export's pages mapped so
        // for a writable export, and writes are refused before on a read-only one).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.base.as_ptr().add(offset), src.len()) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `mmap`, used only through `&self`.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.len) };
        if self.foreign {
            crate::shm::release_from_elsewhere(self.len);
        }
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "served::Client({} bytes)", self.len)
    }
}

impl Client {
    /// Takes the connection `sock` to a served export (from the exporter's memory service),
    /// which must serve `len` bytes with `perms`. Not there (revoked, exited, forged) →
    /// `NOT_FOUND`.
    pub(crate) fn connect(sock: impl Into<PeerFd>, len: usize, perms: AccessFlags) -> Result<Client> {
        let sock = sock.into();
        let mut w = [0u8; WELCOME_LEN];
        let fds = recv_welcome(sock.as_fd(), &mut w)
            .map_err(|e| fail!(Error::NotFound, "mmap create_from_export: the exporter refused ({e})"))?;
        // Nothing more may come with descriptors (where the kernel can refuse them).
        doca_link::discard::refuse_descriptors(sock.as_fd());
        // The window's memfd, and perhaps the shared pages': closed here only once checked
        // (a file the exporter chose could make a close wait on it, see doca_link::discard).
        let mut fds = fds.into_iter();
        let (Some(window), memfd, None, true) =
            (fds.next(), fds.next(), fds.next(), &w[..8] == WELCOME_MAGIC)
        else {
            return Err(peer_fail!(Error::NotFound, "mmap create_from_export: not a served export"));
        };
        let served_len = u64::from_le_bytes(w[8..16].try_into().expect("8 bytes"));
        let served_perms = u32::from_le_bytes(w[16..20].try_into().expect("4 bytes"));
        if served_len != len as u64 || served_perms != perms.bits() {
            return Err(peer_fail!(
                Error::NotFound,
                "mmap create_from_export: the export is not the one described"
            ));
        }
        let window = Mapped::map(window.as_fd(), 0, window_len(), window_len(), true)?;
        let base = u32::from_le_bytes(w[36..40].try_into().expect("4 bytes")) as usize % ALIAS;
        let writable = perms.intersects(AccessFlags::PCI_READ_WRITE | AccessFlags::RDMA_WRITE);
        let u64_at = |i: usize| usize::try_from(u64::from_le_bytes(w[i..i + 8].try_into().expect("8 bytes")));
        let pages = match (memfd, u64_at(20), u64_at(28)) {
            (Some(fd), Ok(head), Ok(n)) => Some(Mapped::map(fd.as_fd(), head, n, len, writable)?),
            (None, _, _) => None,
            _ => {
                return Err(peer_fail!(
                    Error::NotFound,
                    "mmap create_from_export: the export is not the one described"
                ))
            }
        };
        Ok(Client {
            sock,
            window,
            base,
            turn: Mutex::new(()),
            dead: AtomicBool::new(false),
            len,
            writable,
            pages,
        })
    }

    /// The range's length.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether writes are allowed.
    pub(crate) fn is_writable(&self) -> bool {
        self.writable
    }

    /// Whether the export is still served: false once the exporter revoked it or went.
    pub(crate) fn live(&self) -> bool {
        if self.dead.load(Ordering::Acquire) {
            return false;
        }
        // Between requests nothing may arrive: the socket readable means closed.
        let _turn = self.turn.lock();
        if exchange::is_quiet(self.sock.as_fd()) {
            true
        } else {
            self.dead.store(true, Ordering::Release);
            false
        }
    }

    fn gone(&self) -> Error {
        self.dead.store(true, Ordering::Release);
        fail!(Error::NotFound, "the exporter of this map revoked it (stopped, destroyed or exited)")
    }

    /// Sends a request for one piece (`offset`, `len`, where it sits in the window), or two
    /// when there is a second. A broken connection is `NOT_FOUND` (and stays so). Its answer
    /// (a DOCA code from the exporter comes back as is) is read by the caller.
    fn send_request(&self, op: u32, first: Piece, second: Option<Piece>) -> Result<()> {
        if self.dead.load(Ordering::Acquire) {
            return Err(self.gone());
        }
        let second = second.unwrap_or(Piece { offset: 0, len: 0, at: 0 });
        let mut req = [0u8; REQ_LEN];
        req[..4].copy_from_slice(&op.to_le_bytes());
        req[4..8].copy_from_slice(&(first.at as u32).to_le_bytes());
        req[8..16].copy_from_slice(&(first.offset as u64).to_le_bytes());
        req[16..24].copy_from_slice(&(first.len as u64).to_le_bytes());
        req[24..32].copy_from_slice(&(second.offset as u64).to_le_bytes());
        req[32..40].copy_from_slice(&(second.len as u64).to_le_bytes());
        req[40..44].copy_from_slice(&(second.at as u32).to_le_bytes());
        send_waiting(self.sock.as_fd(), &req, None).map_err(|_| self.gone())
    }

    /// The piece of `len` bytes at `offset` of the range, placed in the window at or after
    /// `from` for this side's bytes at `user` ([`place`]).
    fn piece(&self, from: usize, offset: usize, len: usize, user: *const u8, read: bool) -> Piece {
        let at = place(from, (self.base + offset % ALIAS) % ALIAS, user as usize, read);
        Piece { offset, len, at }
    }

    fn answer(&self) -> Result<()> {
        let mut a = [0u8; ANSWER_LEN];
        match recv(self.sock.as_fd(), &mut a, None) {
            Ok(_) => {}
            Err(Error::TimeOut) => {
                self.dead.store(true, Ordering::Release);
                return Err(fail!(Error::TimeOut, "the exporter did not answer in {STALL:?}"));
            }
            Err(_) => return Err(self.gone()),
        }
        self.code(u32::from_le_bytes(a[..4].try_into().expect("4 bytes")))
    }

    /// What an answer's code says: done, a refusal with its DOCA code, or (anything else) an
    /// exporter breaking the protocol.
    fn code(&self, code: u32) -> Result<()> {
        match code {
            0 => Ok(()),
            code => match Error::from_code(code as i32) {
                Some(e) if e != Error::Success => Err(fail!(e, "the exporter refused the copy")),
                _ => {
                    self.dead.store(true, Ordering::Release);
                    Err(peer_fail!(Error::NotFound, "the exporter answered {code}"))
                }
            },
        }
    }

    /// Sends a request for one piece or two ([`Client::send_request`]), runs `meanwhile`,
    /// and reads the answer.
    fn ask(&self, op: u32, first: Piece, second: Option<Piece>, meanwhile: impl FnOnce()) -> Result<()> {
        self.send_request(op, first, second)?;
        meanwhile();
        self.answer()
    }

    /// Splits `offset..offset+len` into the part before the mapped pages, the mapped part
    /// and the part after (lengths), when some of it is mapped here.
    fn split(&self, offset: usize, len: usize) -> Option<(&Mapped, usize, usize, usize)> {
        let p = self.pages.as_ref()?;
        let end = offset + len;
        let (ms, me) = (offset.max(p.head), end.min(p.head + p.len));
        (ms < me).then(|| (p, ms - offset, me - ms, end - me))
    }

    /// Copies `dst.len()` bytes from `offset` of the range into `dst`: the whole pages the
    /// exporter shares by plain copy from the mapping, the rest served.
    pub(crate) fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.bounds(offset, dst.len())?;
        let Some((p, pre, mid, _)) = self.split(offset, dst.len()) else {
            return self.read_served(&mut [(offset, dst)], || {});
        };
        let (before, rest) = dst.split_at_mut(pre);
        let (middle, after) = rest.split_at_mut(mid);
        let from = offset + pre - p.head;
        let copy = |middle: &mut [u8]| p.read(from, middle);
        match (before.is_empty(), after.is_empty()) {
            (true, true) => {
                if !self.live() {
                    return Err(self.gone());
                }
                copy(middle);
                Ok(())
            }
            // The ends asked for first: the exporter's thread hands them over while this one
            // copies the middle.
            (false, true) => self.read_served(&mut [(offset, before)], || copy(middle)),
            (true, false) => self.read_served(&mut [(offset + pre + mid, after)], || copy(middle)),
            (false, false) => {
                self.read_served(&mut [(offset, before), (offset + pre + mid, after)], || copy(middle))
            }
        }
    }

    /// Reads one or two pieces served, running `meanwhile` once the first request is sent:
    /// in one request when they fit the window together (the ends around the shared pages),
    /// else one per window's worth. The exporter copies them into the window, answers, and
    /// this side copies them out.
    fn read_served(&self, parts: &mut [(usize, &mut [u8])], meanwhile: impl FnOnce()) -> Result<()> {
        let _turn = self.turn.lock();
        let total: usize = parts.iter().map(|(_, d)| d.len()).sum();
        if let ([(o1, d1), (o2, d2)], true) = (&mut *parts, total <= WINDOW) {
            let p1 = self.piece(0, *o1, d1.len(), d1.as_ptr(), true);
            let p2 = self.piece(p1.at + p1.len, *o2, d2.len(), d2.as_ptr(), true);
            self.ask(OP_READ, p1, Some(p2), meanwhile)?;
            self.window.read(p1.at, d1);
            self.window.read(p2.at, d2);
            return Ok(());
        }
        let mut meanwhile = Some(meanwhile);
        for (offset, dst) in parts.iter_mut() {
            for (i, chunk) in dst.chunks_mut(WINDOW).enumerate() {
                let p = self.piece(0, *offset + i * WINDOW, chunk.len(), chunk.as_ptr(), true);
                self.ask(OP_READ, p, None, || {
                    if let Some(m) = meanwhile.take() {
                        m();
                    }
                })?;
                self.window.read(p.at, chunk);
            }
        }
        Ok(())
    }

    /// Copies `src` to `offset` of the range: the whole pages the exporter shares by plain
    /// copy into the mapping (once the exporter accepted the served ends), the rest served.
    pub(crate) fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.bounds(offset, src.len())?;
        if !self.writable {
            return Err(fail!(Error::NotPermitted, "the export is read-only"));
        }
        let Some((p, pre, mid, post)) = self.split(offset, src.len()) else {
            return self.write_served(&[(offset, src)], || {});
        };
        let (before, rest) = src.split_at(pre);
        let (middle, after) = rest.split_at(mid);
        let to = offset + pre - p.head;
        let copy = || p.write(to, middle);
        let after_at = offset + pre + mid;
        match (pre, post) {
            (0, 0) => {
                if !self.live() {
                    return Err(self.gone());
                }
                copy();
                Ok(())
            }
            (_, 0) => self.write_served(&[(offset, before)], copy),
            (0, _) => self.write_served(&[(after_at, after)], copy),
            _ => self.write_served(&[(offset, before), (after_at, after)], copy),
        }
    }

    /// Writes one or two pieces served, running `meanwhile` once the exporter took the
    /// first request: in one request when they fit the window together, else one per
    /// window's worth. This side copies them into the window, asks, and the exporter copies
    /// them out before it answers.
    fn write_served(&self, parts: &[(usize, &[u8])], meanwhile: impl FnOnce()) -> Result<()> {
        let _turn = self.turn.lock();
        let total: usize = parts.iter().map(|(_, s)| s.len()).sum();
        if let ([(o1, s1), (o2, s2)], true) = (parts, total <= WINDOW) {
            let p1 = self.piece(0, *o1, s1.len(), s1.as_ptr(), false);
            let p2 = self.piece(p1.at + p1.len, *o2, s2.len(), s2.as_ptr(), false);
            self.window.write(p1.at, s1);
            self.window.write(p2.at, s2);
            self.ask(OP_WRITE, p1, Some(p2), || {})?;
            meanwhile();
            return Ok(());
        }
        let mut meanwhile = Some(meanwhile);
        for (offset, src) in parts {
            for (i, chunk) in src.chunks(WINDOW).enumerate() {
                let p = self.piece(0, offset + i * WINDOW, chunk.len(), chunk.as_ptr(), false);
                self.window.write(p.at, chunk);
                self.ask(OP_WRITE, p, None, || {})?;
                if let Some(m) = meanwhile.take() {
                    m();
                }
            }
        }
        Ok(())
    }

    fn bounds(&self, offset: usize, len: usize) -> Result<()> {
        if offset.checked_add(len).is_none_or(|e| e > self.len) || len == 0 {
            return Err(fail!(
                Error::InvalidValue,
                "range {offset}+{len} outside the map's {} bytes",
                self.len
            ));
        }
        Ok(())
    }
}

/// A connection left hanging on purpose, as a hostile importer makes it (see
/// [`stalled_request`]): held until dropped or closed by the exporter.
#[doc(hidden)]
pub struct StalledRequest {
    sock: PeerFd,
    _window: Vec<PeerFd>,
}

impl StalledRequest {
    /// Waits up to `limit` for the exporter to close the connection (nothing is read):
    /// whether it did.
    pub fn closed_within(&self, limit: Duration) -> bool {
        exchange::hung_up_within(self.sock.as_fd(), limit)
    }
}

/// For attack harnesses only (the tests' hostile process), never for applications (through
/// [`crate::stalled_served_request`], which reads the descriptor): connects to a served
/// export's memory service with its token as an importer and sends one request — a write
/// when `write` (of whatever the window holds), else a read — for `offset..offset+len` (at
/// most [`WINDOW`]); then it reads neither the window nor any answer after the first, and
/// sends nothing more. Returns once the request is answered (its DOCA code when refused):
/// an exporter never waits for its importer inside a copy, so an unread answer is all such an
/// importer leaves behind.
#[doc(hidden)]
pub fn stalled_request(
    service: doca_link::rendezvous::ServiceName,
    token: &doca_link::rendezvous::Token,
    write: bool,
    offset: u64,
    len: u64,
) -> Result<StalledRequest> {
    let (sock, _exporter) = doca_link::rendezvous::take_connection(service, token)?;
    let mut w = [0u8; WELCOME_LEN];
    let window = recv_welcome(sock.as_fd(), &mut w)?;
    let mut req = [0u8; REQ_LEN];
    req[..4].copy_from_slice(&(if write { OP_WRITE } else { OP_READ }).to_le_bytes());
    req[8..16].copy_from_slice(&offset.to_le_bytes());
    req[16..24].copy_from_slice(&len.to_le_bytes());
    send(sock.as_fd(), &req, &[])?;
    let mut a = [0u8; ANSWER_LEN];
    recv(sock.as_fd(), &mut a, None)?;
    Error::check(i32::from_le_bytes(a[..4].try_into().expect("4 bytes")))?;
    Ok(StalledRequest { sock, _window: window })
}

/// For attack harnesses only (through [`crate::served_shared_pages`]): connects to a served
/// export's memory service with its token as an importer and returns the memfd of the whole
/// pages it shares (with their start in the range and length) as the welcome brings it,
/// unchecked and unmapped; `None` when the welcome brings none.
#[doc(hidden)]
pub fn shared_pages(
    service: doca_link::rendezvous::ServiceName,
    token: &doca_link::rendezvous::Token,
) -> Result<Option<(PeerFd, usize, usize)>> {
    let (sock, _exporter) = doca_link::rendezvous::take_connection(service, token)?;
    let mut w = [0u8; WELCOME_LEN];
    let mut fds = recv_welcome(sock.as_fd(), &mut w)?;
    let at = |i: usize| u64::from_le_bytes(w[i..i + 8].try_into().expect("8 bytes")) as usize;
    Ok((fds.len() == 2).then(|| (fds.remove(1), at(20), at(28))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mmap;

    fn exported(len: usize, perms: AccessFlags) -> (Mmap, Vec<u8>, doca_core::Dev) {
        crate::private_fabric();
        let dev = doca_core::open_device_with_pci("b1:00.0", None).unwrap();
        let map = Mmap::create().unwrap();
        map.set_memrange((0..len).map(|i| i as u8).collect::<Vec<u8>>()).unwrap();
        map.set_permissions(perms).unwrap();
        map.add_dev(&dev).unwrap();
        map.start().unwrap();
        let desc = map.export_pci(&dev).unwrap();
        (map, desc, dev)
    }

    #[test]
    fn heap_memory_is_exported_served_and_revoked() {
        let (map, desc, dev) = exported(1 << 20, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE);
        let import = Mmap::create_from_export(None, &desc, &dev).unwrap();
        let remote = import.access().unwrap();
        let mut got = vec![0u8; 300_000];
        remote.read(1000, &mut got).unwrap();
        assert!(got.iter().enumerate().all(|(i, &b)| b == (i + 1000) as u8));
        remote.write(5, b"served").unwrap();
        let big = vec![7u8; 1 << 19];
        for i in 0..200 {
            remote.write(1000, &big).unwrap();
            let mut b = vec![0u8; 1 << 19];
            map.access().unwrap().read(1000, &mut b).unwrap_or_else(|e| panic!("{i}: {e:?}"));
        }
        let mut back = [0u8; 6];
        map.access().unwrap().read(5, &mut back).unwrap();
        assert_eq!(&back, b"served");
        assert_eq!(remote.bytes(0, 4).err(), Some(Error::NotSupported));
        assert_eq!(remote.read((1 << 20) - 1, &mut [0u8; 2]).unwrap_err(), Error::InvalidValue);
        map.stop().unwrap();
        assert_eq!(remote.check_live(), Err(Error::NotFound));
        assert_eq!(remote.read(0, &mut back).unwrap_err(), Error::NotFound);
        assert_eq!(Mmap::create_from_export(None, &desc, &dev).unwrap_err(), Error::NotFound);
    }

    /// An importer may copy, idle longer than the stall limit (its user thinks), and copy
    /// again: only a stall inside a copy ends a connection (it used to end after 10 s idle).
    #[test]
    fn an_importer_idle_longer_than_the_stall_limit_between_copies_is_still_served() {
        let (_map, desc, dev) = exported(4096, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE);
        let import = Mmap::create_from_export(None, &desc, &dev).unwrap();
        let remote = import.access().unwrap();
        let mut got = [0u8; 16];
        remote.read(0, &mut got).unwrap();
        std::thread::sleep(STALL + Duration::from_millis(500));
        remote.read(16, &mut got).unwrap();
        assert!(got.iter().enumerate().all(|(i, &b)| b == (i + 16) as u8), "{got:?}");
    }

    /// One process holds at most a quarter of an export's places: beyond, its connection is
    /// closed unwelcomed; a place it gives back serves again, and other importers are served.
    #[test]
    fn one_importer_process_holds_at_most_its_share_of_an_export_s_places() {
        let (_map, desc, dev) = exported(4096, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE);
        let mut held: Vec<OwnedFd> = (0..MAX_CONNS_PER_PEER).map(|_| raw_conn(&desc).0).collect();
        let mut w = [0u8; WELCOME_LEN];
        let extra = raw_sock(&desc);
        assert_eq!(
            recv_welcome(extra.as_fd(), &mut w).err(),
            Some(Error::NotFound),
            "refused: closed unwelcomed"
        );
        drop(held.pop());
        // The place comes back once its serving thread saw the close.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let again = raw_sock(&desc);
            if recv_welcome(again.as_fd(), &mut w).is_ok() {
                held.push(again);
                break;
            }
            assert!(Instant::now() < deadline, "the place given back never served again");
            std::thread::sleep(Duration::from_millis(20));
        }
        // Given back (once their threads saw the closes), every place serves again.
        drop(held);
        let import = loop {
            match Mmap::create_from_export(None, &desc, &dev) {
                Ok(m) => break m,
                Err(e) => assert!(Instant::now() < deadline, "no place given back: {e:?}"),
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut got = [0u8; 4];
        import.access().unwrap().read(4, &mut got).unwrap();
        assert_eq!(got, [4, 5, 6, 7]);
    }

    /// A copy of bytes the exporter holds borrowed is refused `IN_USE` before any byte moves
    /// (as the exporter's own access would be), and served once it lets go.
    #[test]
    fn a_copy_of_bytes_the_exporter_holds_is_in_use_until_it_lets_go() {
        let (len, tail) = (2 * WINDOW, WINDOW / 4);
        let (map, desc, _dev) = exported(len, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE);
        let (sock, window) = raw_conn(&desc);
        let access = map.access().unwrap();
        let mut guard = access.bytes_mut(len - tail, tail).unwrap();
        assert_eq!(ask(&sock, OP_READ, (len - WINDOW) as u64, WINDOW as u64), Err(Error::InUse));
        assert_eq!(ask(&sock, OP_READ, 0, WINDOW as u64), Ok(()), "the rest is served meanwhile");
        guard.fill(0xee);
        drop(guard);
        assert_eq!(ask(&sock, OP_READ, (len - WINDOW) as u64, WINDOW as u64), Ok(()));
        let mut got = vec![0u8; WINDOW];
        window.read(0, &mut got);
        let base = len - WINDOW;
        assert!(
            got[..WINDOW - tail].iter().enumerate().all(|(i, &b)| b == (base + i) as u8),
            "the bytes before"
        );
        assert!(got[WINDOW - tail..].iter().all(|&b| b == 0xee), "the exporter's new bytes");
    }

    /// A piece the exporter borrowed after the request was checked is waited for (a copy is
    /// atomic per piece only, as DMA races the CPU) until it is let go, or the export revoked.
    #[test]
    fn a_piece_borrowed_meanwhile_is_waited_for_until_let_go_or_revoked() {
        let stop = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC).unwrap();
        let mut tries = 0;
        let got = borrowed(stop.as_fd(), &mut None, || {
            tries += 1;
            if tries < 4 {
                Err(Error::InUse)
            } else {
                Ok(tries)
            }
        });
        assert_eq!(got, Ok(4));
        rustix::io::write(&stop, &1u64.to_ne_bytes()).unwrap();
        let t = Instant::now();
        assert_eq!(borrowed(stop.as_fd(), &mut None, || Err::<(), _>(Error::InUse)), Err(Error::NotFound));
        assert!(t.elapsed() < Duration::from_secs(1), "the revocation ends the wait");
        assert_eq!(
            borrowed(stop.as_fd(), &mut None, || Err::<(), _>(Error::NotPermitted)),
            Err(Error::NotPermitted)
        );
        // A request's deadline is shared by its pieces: one past it waits no more.
        let mut past = Some(Instant::now());
        assert_eq!(borrowed(stop.as_fd(), &mut past, || Err::<(), _>(Error::InUse)), Err(Error::TimeOut));
    }

    /// A connected socket to the export of `desc`, nothing read yet.
    fn raw_sock(desc: &[u8]) -> OwnedFd {
        let name = doca_link::rendezvous::ServiceName {
            pid: u32::from_le_bytes(desc[16..20].try_into().unwrap()),
            nonce: u64::from_le_bytes(desc[20..28].try_into().unwrap()),
        };
        doca_link::rendezvous::take_connection(name, &desc[28..44].try_into().unwrap())
            .unwrap()
            .0
            .into_inner()
    }

    /// A raw connection to the export of `desc`, as a hostile importer would make it, and
    /// its window: the welcome brings the window's memfd only (an importer of the exporter's
    /// own process is not handed the shared pages).
    fn raw_conn(desc: &[u8]) -> (OwnedFd, Mapped) {
        let sock = raw_sock(desc);
        let mut w = [0u8; WELCOME_LEN];
        let fds = recv_welcome(sock.as_fd(), &mut w).unwrap();
        assert_eq!(fds.len(), 1, "the window only");
        let window = Mapped::map(fds[0].as_fd(), 0, window_len(), window_len(), true).unwrap();
        (sock, window)
    }

    /// Sends a request and returns the answer's code, as an importer reads it.
    fn ask(sock: &OwnedFd, op: u32, offset: u64, len: u64) -> Result<()> {
        let mut req = [0u8; REQ_LEN];
        req[..4].copy_from_slice(&op.to_le_bytes());
        req[8..16].copy_from_slice(&offset.to_le_bytes());
        req[16..24].copy_from_slice(&len.to_le_bytes());
        send(sock.as_fd(), &req, &[])?;
        let mut a = [0u8; ANSWER_LEN];
        recv(sock.as_fd(), &mut a, None)?;
        Error::check(i32::from_le_bytes(a[..4].try_into().unwrap()))
    }

    /// Requests in two pieces (what an importer mapping the whole pages sends for the partial
    /// ends): both pieces' bytes in the window in order, and one answer; a bad second piece
    /// is refused with its code before any byte, and the connection goes on serving.
    #[test]
    fn a_request_in_two_pieces_is_served_in_order_and_a_bad_second_piece_refused() {
        let len = 1 << 16;
        let (_map, desc, _dev) = exported(len, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_ONLY);
        let (sock, window) = raw_conn(&desc);
        let ask2 = |op: u32, a: (u64, u64), b: (u64, u64)| {
            let mut req = [0u8; REQ_LEN];
            req[..4].copy_from_slice(&op.to_le_bytes());
            for (i, v) in [a.0, a.1, b.0, b.1].into_iter().enumerate() {
                req[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
            }
            // The second piece at 100 of the window.
            req[40..44].copy_from_slice(&100u32.to_le_bytes());
            send(sock.as_fd(), &req, &[]).unwrap();
            let mut a = [0u8; ANSWER_LEN];
            recv(sock.as_fd(), &mut a, None).unwrap();
            i32::from_le_bytes(a[..4].try_into().unwrap())
        };
        let l = len as u64;
        assert_eq!(ask2(OP_READ, (0, 16), (l - 1, 2)), Error::InvalidValue.code());
        assert_eq!(ask2(OP_READ, (0, 16), (u64::MAX, 2)), Error::InvalidValue.code());
        assert_eq!(ask2(OP_READ, (0, 16), (0, u64::MAX)), Error::InvalidValue.code());
        assert_eq!(ask2(OP_WRITE, (0, 16), (100, 2)), Error::NotPermitted.code());
        assert_eq!(ask2(OP_READ, (5, 3), (l - 4, 4)), 0);
        let mut got = [0u8; 7];
        window.read(0, &mut got[..3]);
        window.read(100, &mut got[3..]);
        let want: Vec<u8> = [5u64, 6, 7, l - 4, l - 3, l - 2, l - 1].iter().map(|&i| i as u8).collect();
        assert_eq!(&got[..], &want[..]);
    }

    /// What a hostile importer can send: ranges out of bounds or overflowing, more than the
    /// window, a write into a read-only export, unknown requests — each answered with its
    /// code, the connection still served; a packet of another size closes that connection
    /// only; importers leaving right after a request stop nothing. The exporter's bytes are
    /// untouched and a proper importer is served throughout.
    #[test]
    fn a_hostile_importer_gets_codes_and_hurts_neither_the_exporter_nor_other_importers() {
        let len = 4 * WINDOW;
        let (map, desc, dev) = exported(len, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_ONLY);
        let good = Mmap::create_from_export(None, &desc, &dev).unwrap().access().unwrap();
        let (bad, _window) = raw_conn(&desc);
        let l = len as u64;
        assert_eq!(ask(&bad, OP_READ, l - 1, 2), Err(Error::InvalidValue));
        assert_eq!(ask(&bad, OP_READ, 1, u64::MAX), Err(Error::InvalidValue));
        assert_eq!(ask(&bad, OP_READ, u64::MAX, 1), Err(Error::InvalidValue));
        assert_eq!(ask(&bad, OP_READ, 0, 0), Err(Error::InvalidValue));
        assert_eq!(ask(&bad, OP_READ, 0, WINDOW as u64 + 1), Err(Error::InvalidValue));
        // A piece placed past the window's end.
        let mut req = [0u8; REQ_LEN];
        req[..4].copy_from_slice(&OP_READ.to_le_bytes());
        req[4..8].copy_from_slice(&((window_len() - 8) as u32).to_le_bytes());
        req[16..24].copy_from_slice(&16u64.to_le_bytes());
        send(bad.as_fd(), &req, &[]).unwrap();
        let mut a = [0u8; ANSWER_LEN];
        recv(bad.as_fd(), &mut a, None).unwrap();
        assert_eq!(Error::check(i32::from_le_bytes(a[..4].try_into().unwrap())), Err(Error::InvalidValue));
        assert_eq!(ask(&bad, OP_WRITE, 0, 16), Err(Error::NotPermitted));
        assert_eq!(ask(&bad, 77, 0, 16), Err(Error::InvalidValue));
        // Still served: a proper read on the hostile connection.
        assert_eq!(ask(&bad, OP_READ, 0, 16), Ok(()));
        // A packet of another size: that connection closes, the others go on.
        send(bad.as_fd(), &[1, 2, 3], &[]).unwrap();
        assert!(recv(bad.as_fd(), &mut a, None).is_err(), "the connection is closed");
        // Importers asking for a whole window and leaving at once.
        for _ in 0..4 {
            let (quitter, _) = raw_conn(&desc);
            let mut req = [0u8; REQ_LEN];
            req[..4].copy_from_slice(&OP_READ.to_le_bytes());
            req[16..24].copy_from_slice(&(WINDOW as u64).to_le_bytes());
            send(quitter.as_fd(), &req, &[]).unwrap();
            drop(quitter);
        }
        let mut got = vec![0u8; len];
        good.read(0, &mut got).unwrap();
        assert!(got.iter().enumerate().all(|(i, &b)| b == i as u8), "the exporter's bytes changed");
        assert_eq!(good.write(0, b"x").unwrap_err(), Error::NotPermitted);
        // The exporter stops at once (its threads joined) with those importers gone.
        map.stop().unwrap();
        assert_eq!(good.read(0, &mut got[..1]).unwrap_err(), Error::NotFound);
    }

    /// An export for RDMA writes only (no `RDMA_READ`): a peer holding its descriptor and
    /// asking the server directly for a read is refused, as the importer's library refuses it.
    #[test]
    fn a_write_only_rdma_export_refuses_reads() {
        crate::private_fabric();
        let dev = doca_core::open_device_with_pci("b1:00.0", None).unwrap();
        let map = Mmap::create().unwrap();
        map.set_memrange(vec![9u8; 4096]).unwrap();
        map.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::RDMA_WRITE).unwrap();
        map.add_dev(&dev).unwrap();
        map.start().unwrap();
        let desc = map.export_rdma(&dev).unwrap();
        let (peer, _window) = raw_conn(&desc);
        assert_eq!(ask(&peer, OP_READ, 0, 16), Err(Error::NotPermitted));
        assert_eq!(ask(&peer, OP_WRITE, 0, 16), Ok(()));
    }

    /// An importer that keeps requests queued (it never waits: up to 64 whole windows ahead
    /// of its answers, reading them as they come) holds up neither the exporter's stop nor
    /// its thread: the stop returns at once and the importer finds the connection closed.
    #[test]
    fn an_importer_keeping_requests_queued_holds_up_no_stop() {
        let (map, desc, _dev) = exported(WINDOW, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_ONLY);
        let (sock, _window) = raw_conn(&desc);
        let (served_tx, served_rx) = std::sync::mpsc::channel();
        let importer = std::thread::spawn(move || {
            let mut req = [0u8; REQ_LEN];
            req[..4].copy_from_slice(&OP_READ.to_le_bytes());
            req[16..24].copy_from_slice(&(WINDOW as u64).to_le_bytes());
            let (mut sent, mut answers) = (0u64, 0u64);
            let mut a = [0u8; ANSWER_LEN];
            loop {
                while sent - answers < 64 && doca_link::fabric::send(sock.as_fd(), &req, &[]).is_ok() {
                    sent += 1;
                }
                // Asleep until the next answer comes (or the connection closes).
                match exchange::recv_exact(sock.as_fd(), &mut a, Patience::new(None, STALL)) {
                    Ok(_) => answers += 1,
                    Err(_) => return answers,
                }
                if answers == 1 {
                    let _ = served_tx.send(());
                }
            }
        });
        served_rx.recv_timeout(Duration::from_secs(10)).expect("the importer is served");
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let stopper = std::thread::spawn(move || {
            map.stop().unwrap();
            let _ = done_tx.send(());
            map
        });
        assert!(done_rx.recv_timeout(Duration::from_secs(10)).is_ok(), "the stop waited on the importer");
        drop(stopper.join().unwrap());
        assert!(importer.join().unwrap() > 0, "the importer was served, then found the connection closed");
    }

    /// A fake exporter: a connection whose other end sends `welcome` with `fds`.
    fn fake_exporter(welcome: &[u8], fds: &[BorrowedFd<'_>]) -> (OwnedFd, OwnedFd) {
        let (imp, exp) = doca_link::socketpair().unwrap();
        send(exp.as_fd(), welcome, fds).unwrap();
        (imp, exp)
    }

    fn welcome_for(len: u64, perms: AccessFlags) -> [u8; WELCOME_LEN] {
        let mut w = [0u8; WELCOME_LEN];
        w[..8].copy_from_slice(WELCOME_MAGIC);
        w[8..16].copy_from_slice(&len.to_le_bytes());
        w[16..20].copy_from_slice(&perms.bits().to_le_bytes());
        w
    }

    /// What a hostile exporter can hand over instead of a window — none, two windows and a
    /// third descriptor, an unsealed memfd, a sealed one of another size, a pipe — is refused
    /// at the import with `NOT_FOUND`.
    #[test]
    fn an_import_refuses_a_window_that_is_not_one() {
        let perms = AccessFlags::PCI_READ_WRITE;
        let w = welcome_for(4096, perms);
        let window = doca_link::memfd::create_sealed("test-window", window_len()).unwrap();
        let small = doca_link::memfd::create_sealed("test-window", WINDOW / 2).unwrap();
        let unsealed = rustix::fs::memfd_create("test-window", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&unsealed, window_len() as u64).unwrap();
        let (pipe_r, _pipe_w) = rustix::pipe::pipe().unwrap();
        let w2 = window.as_fd();
        let cases: [&[BorrowedFd<'_>]; 5] =
            [&[], &[w2, w2, w2], &[unsealed.as_fd()], &[small.as_fd()], &[pipe_r.as_fd()]];
        for (i, fds) in cases.into_iter().enumerate() {
            let (imp, _exp) = fake_exporter(&w, fds);
            assert_eq!(Client::connect(imp, 4096, perms).err(), Some(Error::NotFound), "case {i}");
        }
        let (imp, _exp) = fake_exporter(&w, &[window.as_fd()]);
        assert!(Client::connect(imp, 4096, perms).is_ok(), "a proper window");
    }

    /// What a hostile exporter can answer — an unknown code, a packet of another size,
    /// leaving before the answer — ends the copy with `NOT_FOUND` (the connection is dead
    /// after), never a panic or a wait; nothing lands beyond the destination. A refusal
    /// with a DOCA code is that code, and the connection lives on.
    #[test]
    fn a_hostile_exporter_s_answers_end_the_copy_with_not_found() {
        let perms = AccessFlags::PCI_READ_WRITE;
        let code = |c: u32| {
            let mut p = vec![0u8; ANSWER_LEN];
            p[..4].copy_from_slice(&c.to_le_bytes());
            p
        };
        let cases: Vec<(Vec<Vec<u8>>, Error)> = vec![
            (vec![code(12345)], Error::NotFound),
            (vec![vec![0u8; ANSWER_LEN + 1]], Error::NotFound),
            (vec![], Error::NotFound),
            (vec![code(Error::InUse.code() as u32)], Error::InUse),
        ];
        for (i, (packets, want)) in cases.into_iter().enumerate() {
            let window = doca_link::memfd::create_sealed("test-window", window_len()).unwrap();
            let (imp, exp) = fake_exporter(&welcome_for(4096, perms), &[window.as_fd()]);
            let client = Client::connect(imp, 4096, perms).unwrap();
            let exporter = std::thread::spawn(move || {
                let mut req = [0u8; REQ_LEN];
                recv(exp.as_fd(), &mut req, None).unwrap();
                for p in packets {
                    send(exp.as_fd(), &p, &[]).unwrap();
                }
                // Leaves.
            });
            let mut dst = [0u8; 100];
            let t = Instant::now();
            assert_eq!(client.read(0, &mut dst[..64]), Err(want), "case {i}");
            assert!(t.elapsed() < Duration::from_secs(5), "case {i}: waited");
            assert!(dst.iter().all(|&b| b == 0), "case {i}: bytes landed");
            exporter.join().unwrap();
            assert!(!client.live(), "case {i}: the exporter left");
        }
    }

    /// Where a piece sits in the window: in step with the exporter's bytes modulo 4096, or 64
    /// bytes on when this side's copy would then run 1 to 63 bytes behind its destination
    /// (glibc's slow case); never so for either side's copy, and never past the room the
    /// window keeps for it.
    #[test]
    fn a_piece_is_placed_where_neither_side_s_copy_is_slowed() {
        let slow = |dst: usize, src: usize| (1..64).contains(&(dst.wrapping_sub(src) % ALIAS));
        for from in [0, 1, 100, 4095, 4096, 70_000] {
            for theirs in [0, 16, 63, 64, 4032, 4080, 4095] {
                for user in [0, 1, 16, 48, 63, 64, 100, 4000, 4095, 1 << 20] {
                    for read in [true, false] {
                        let at = place(from, theirs, user, read);
                        assert!(at >= from && at < from + ALIAS + 64, "{from} {theirs} {user}: {at}");
                        let (mine, exporter) = if read {
                            (slow(user, at), slow(at, theirs))
                        } else {
                            (slow(at, user), slow(theirs, at))
                        };
                        assert!(!mine && !exporter, "{from} {theirs} {user} {read}: at {at}");
                    }
                }
            }
        }
        // Two pieces of a request fit the window.
        let first = place(0, 4095, 0, true) + WINDOW - 1;
        assert!(place(first, 4095, 0, true) < window_len());
    }

    /// The welcome hands an importer shared memory and nothing else: the window, a sealed
    /// memfd of its announced size (no pipe, whose lock either side could hold for ever by
    /// splicing into it from an empty blocking socket). Importers of other processes get
    /// the shared pages' memfd besides (`tests/tests/heap_swap.rs`).
    #[test]
    fn the_welcome_hands_over_shared_memory_and_nothing_else() {
        let (_map, desc, _dev) =
            exported(1 << 20, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE);
        let sock = raw_sock(&desc);
        let mut w = [0u8; WELCOME_LEN];
        let fds = recv_welcome(sock.as_fd(), &mut w).unwrap();
        assert_eq!(fds.len(), 1);
        assert_eq!(doca_link::memfd::check_sealed(&fds[0], Some(window_len())), Ok(window_len()));
    }

    /// A hostile peer sends a pipe end with a packet and holds that pipe's lock (a `splice`
    /// into it from an empty blocking socket): neither the exporter's stop (which joins its
    /// serving thread) nor an importer's copy waits for it. Where the kernel refuses the
    /// descriptor (`SO_PASSRIGHTS`) the peer's send fails; elsewhere the file is closed on a
    /// closing thread ([`doca_link::discard`]).
    #[test]
    fn a_descriptor_from_a_hostile_peer_freezes_no_thread_that_matters() {
        let mut pipe = doca_link::discard::LockedPipe::new(2).unwrap();
        // Sends one of the pipe's files (its last copy once sent: the receiver's release of
        // it takes the lock); one the kernel refused stays with the test until the end.
        let mut kept = Vec::new();
        let mut send_file =
            |sock: BorrowedFd<'_>, bytes: &[u8], file: OwnedFd| match send(sock, bytes, &[file.as_fd()]) {
                Ok(()) => drop(file),
                Err(_) => {
                    kept.push(file);
                    send(sock, bytes, &[]).unwrap();
                }
            };
        // An importer's request carrying a file of the pipe.
        let (map, desc, _dev) =
            exported(1 << 16, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE);
        let (sock, _window) = raw_conn(&desc);
        let mut req = [0u8; REQ_LEN];
        req[..4].copy_from_slice(&OP_READ.to_le_bytes());
        req[16..24].copy_from_slice(&16u64.to_le_bytes());
        send_file(sock.as_fd(), &req, pipe.files.pop().unwrap());
        // An exporter's answer carrying one.
        let perms = AccessFlags::PCI_READ_WRITE;
        let window = doca_link::memfd::create_sealed("test-window", window_len()).unwrap();
        let (imp, exp) = fake_exporter(&welcome_for(4096, perms), &[window.as_fd()]);
        let client = Client::connect(imp, 4096, perms).unwrap();
        send_file(exp.as_fd(), &[0u8; ANSWER_LEN], pipe.files.pop().unwrap());
        let reader = std::thread::spawn(move || client.read(0, &mut [0u8; 64]));
        let stopper = std::thread::spawn(move || map.stop());
        let deadline = Instant::now() + Duration::from_secs(5);
        while !(reader.is_finished() && stopper.is_finished()) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let done = reader.is_finished() && stopper.is_finished();
        // The lock let go, so that every thread of this test process can end.
        pipe.release();
        assert_eq!(stopper.join().unwrap(), Ok(()));
        let _ = reader.join().unwrap();
        assert!(done, "a thread waited on the peer's pipe");
        drop((sock, exp, kept));
    }

    /// A write lands exactly in the range it asked for, whatever else the importer's window
    /// holds.
    #[test]
    fn a_write_lands_only_in_its_range() {
        let len = 4096;
        let (map, desc, _dev) = exported(len, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE);
        let (sock, window) = raw_conn(&desc);
        window.write(0, &[0xab; 48]);
        assert_eq!(ask(&sock, OP_WRITE, 100, 16), Ok(()));
        let mut back = [0u8; 160];
        map.access().unwrap().read(0, &mut back).unwrap();
        for (i, &b) in back.iter().enumerate() {
            let want = if (100..116).contains(&i) { 0xab } else { i as u8 };
            assert_eq!(b, want, "byte {i}");
        }
    }
}
