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
//! request sent before the middle is copied (the serving thread hands them over meanwhile,
//! and looks for the next request for [`SPIN`] before sleeping, so a stream of copies needs
//! no wake-up). A copy wholly inside the shared pages asks the socket whether the export is
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
//! | importer | `Client`: one connection; a copy is a request, then the bytes through a pipe |
//! | wire     | welcome `magic, len u64, perms u32, head u64, shared u64` with the pipes' ends (and the shared pages' memfd); request `op u32, 0 u32, offset u64, len u64, offset2 u64, len2 u64` (a second piece when `len2` is not 0, its bytes after the first's); answer `status u32, 0 u32` (a DOCA code): a refusal alone; else for a read the bytes then `0`, for a write `0`, the bytes, `0` again — the last answer once the exporter's borrow of its bytes has ended |
//!
//! **The bytes** go through two pipes the exporter makes per importer, one per direction, with
//! `vmsplice`: the side that has the bytes hands the pipe references to its pages (no copy),
//! the other side `read`s them into its memory (the one copy). Each side holds both ends of
//! both pipes, so no write ever meets a pipe without reader (no `SIGPIPE` in a C program);
//! a side that dies is noticed on the socket (hang-up), and every wait also watches the
//! socket, the exporter's revocation and a stall limit ([`STALL`]).
//!
//! **Borrowing.** A request is checked against this process's borrows of the whole range at
//! once (a range the exporter holds borrowed now: `IN_USE`, before any byte). The copy then
//! borrows piece by piece ([`GIVE_PIECE`] for a read, what the pipe holds for a write), each
//! piece only around one non-blocking `vmsplice` or `read`: no borrow is held while the
//! serving thread waits for its importer, so an importer that asks and then never sends or
//! drains its bytes blocks neither the exporter's own accesses nor other importers. A piece
//! the exporter borrowed meanwhile is waited for (a few milliseconds at a time, at most
//! [`STALL`]). A copy is thus not atomic against the exporter's own writes — as on the
//! hardware, where DMA and the CPU race — only each piece is.
//!
//! **Places.** One importer process holds at most [`MAX_CONNS_PER_PEER`] of the
//! [`MAX_CONNS`] places. With every place taken, the process holding the most gives its
//! oldest idle connection (one between copies) to a newcomer of a process that would then
//! hold fewer (the rule of the comm channel's handshake places); otherwise the newcomer is
//! closed unwelcomed. Each connection's thread and its [`CONN_FDS`] descriptors are charged
//! to the importer's process in the peer ledger ([`crate::budget`]): beyond its budget the
//! connection is closed unwelcomed too. Refusals are logged at most once a second per kind.
//!
//! **Trust.** The exporter checks every request against the exported range (offset and length
//! in bounds without overflow), the export's permissions (writes need `PCI_READ_WRITE`) and
//! its own revocation, answers a bad one with its DOCA code and goes on serving; only
//! processes of the exporter's own uid may connect. A request, answer or stream that breaks
//! the protocol closes that one connection. The importer reaches the exporter only through
//! its memory service ([`doca_link::rendezvous`]: a socket of its own uid in the 0700 fabric
//! directory, the token in the descriptor); the exporter's identity comes from that socket
//! (its pidfd), not from any pid the descriptor carries, and the importer checks that the
//! descriptors it receives are pipes (and a sealed memfd of the announced size). Nothing else
//! of the exporter is reachable: unlike `process_vm_readv` (ptrace rights over the whole
//! process), the importer gets exactly the range — its whole pages mapped, the neighbours on
//! the partial pages at its ends never.
//!
//! **Why not ptrace.** `process_vm_readv`/`writev` need ptrace rights over the exporter:
//! under Yama `ptrace_scope=1` only a tracer the exporter names with `PR_SET_PTRACER` (it does
//! not know its importers, and naming any process grants full ptrace), never under scope 2
//! or 3, nor for a non-dumpable process or under a seccomp filter; and measured here it
//! copies slower than a pipe. The pipe path needs no right at all.
//!
//! **Cost.** Without shared pages, per copy a request, a wake-up of the serving thread,
//! `vmsplice` of the pages (128 KiB at a time, so the importer copies while later pages are
//! handed over) and one `read` copy: a 1 MiB read across processes takes about 85–90 µs here
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
use parking_lot::Mutex;
use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage,
    SendFlags,
};
use rustix::pipe::{IoSliceRaw, PipeFlags, SpliceFlags};

use crate::budget::{Account, Hold, Limits, PeerId};
use crate::shm::{Region, Tracker};
use crate::AccessFlags;

/// Importers one export serves at once; more are refused (logged) until one goes.
pub const MAX_CONNS: usize = 64;
/// Connections one importer process may hold to one export (a quarter of the places: the
/// rest stay for other processes).
pub const MAX_CONNS_PER_PEER: usize = MAX_CONNS / 4;
/// How long a side waits for its peer's next step before giving up (the copy fails with
/// `TIME_OUT` on the importer, the connection closes on the exporter).
pub const STALL: Duration = Duration::from_secs(10);
/// The pipe size asked for (best effort: the system's `fs.pipe-max-size` may refuse it).
const PIPE_BYTES: usize = 1 << 20;
/// The most one `vmsplice` hands over (see `give`), and a read's piece.
pub const GIVE_PIECE: usize = 128 << 10;
const OP_READ: u32 = 1;
const OP_WRITE: u32 = 2;
const REQ_LEN: usize = 40;
const ANSWER_LEN: usize = 8;
const WELCOME_MAGIC: &[u8; 8] = b"DOCAMMSV";
const WELCOME_LEN: usize = 36;

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
}

/// The bytes an export serves.
pub(crate) enum Backing {
    /// Memory of this process, mapped here: the pages go to the pipe by reference.
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

/// Descriptors the exporter keeps for one importer: its socket and both ends of both pipes
/// (charged to the importer's process, with the serving thread, in the peer ledger).
pub const CONN_FDS: u64 = 5;

/// A connection waits for its importer's next request (it may give its place away).
const IDLE: u8 = 0;
/// A connection is inside a copy.
const BUSY: u8 = 1;
/// A connection gave its place to a newcomer: its thread ends at its next look.
const EVICTED: u8 = 2;

/// One importer's connection, as its serving thread and the accepting thread share it.
struct Conn {
    sock: OwnedFd,
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
            let _ = rustix::net::shutdown(&gone.conn.sock, rustix::net::Shutdown::Both);
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
        let shared = Arc::new(Shared {
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

/// What a wait found.
#[derive(PartialEq, Eq, Debug)]
enum Woke {
    Ready,
    /// The socket is readable or hung up (mid-stream: the peer left or broke the protocol).
    Socket,
    /// Revoked (exporter side).
    Stop,
}

/// Waits until `fd` has `ev`, watching `sock` (for `watch`, and hang-up) and `stop`;
/// `TIME_OUT` after [`STALL`].
fn wait(
    fd: BorrowedFd<'_>,
    ev: PollFlags,
    sock: Option<(BorrowedFd<'_>, PollFlags)>,
    stop: Option<BorrowedFd<'_>>,
) -> Result<Woke> {
    wait_within(fd, ev, sock, stop, Some(STALL))
}

/// [`wait`] with a limit of its own: `None` waits until something happens (the exporter's
/// accepting thread, idle as long as nobody imports — an idle export is no stall).
fn wait_within(
    fd: BorrowedFd<'_>,
    ev: PollFlags,
    sock: Option<(BorrowedFd<'_>, PollFlags)>,
    stop: Option<BorrowedFd<'_>>,
    stall: Option<Duration>,
) -> Result<Woke> {
    let deadline = stall.map(|s| Instant::now() + s);
    loop {
        let left = deadline.map_or(Duration::from_secs(1), |d| d.saturating_duration_since(Instant::now()));
        if left.is_zero() {
            return Err(fail!(
                Error::TimeOut,
                "the other side of a served export did not move for {:?}",
                stall.unwrap_or_default()
            ));
        }
        let mut fds = [
            PollFd::from_borrowed_fd(fd, ev),
            PollFd::from_borrowed_fd(sock.map_or(fd, |s| s.0), sock.map_or(PollFlags::empty(), |s| s.1)),
            PollFd::from_borrowed_fd(
                stop.unwrap_or(fd),
                if stop.is_some() { PollFlags::IN } else { PollFlags::empty() },
            ),
        ];
        let ts = rustix::time::Timespec::try_from(left.min(Duration::from_secs(1))).unwrap_or_default();
        match rustix::event::poll(&mut fds, Some(&ts)) {
            Ok(_) | Err(Errno::INTR) => {}
            Err(e) => return Err(os("poll", e)),
        }
        let bad = PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL;
        if stop.is_some() && !fds[2].revents().is_empty() {
            return Ok(Woke::Stop);
        }
        let r = fds[0].revents();
        if r.intersects(ev) {
            return Ok(Woke::Ready);
        }
        if sock.is_some() && !fds[1].revents().is_empty() {
            return Ok(Woke::Socket);
        }
        if r.intersects(bad) {
            return Ok(Woke::Socket);
        }
    }
}

fn send(sock: BorrowedFd<'_>, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> Result<()> {
    let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(fail!(Error::InvalidValue, "too many descriptors for one message"));
    }
    match rustix::net::sendmsg(
        sock,
        &[std::io::IoSlice::new(bytes)],
        &mut control,
        SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
    ) {
        Ok(n) if n == bytes.len() => Ok(()),
        Ok(_) | Err(Errno::PIPE) | Err(Errno::CONNRESET) | Err(Errno::NOTCONN) | Err(Errno::AGAIN) => {
            Err(Error::NotFound)
        }
        Err(e) => Err(os("sendmsg", e)),
    }
}

/// Receives one packet of exactly `buf.len()` bytes (waiting, watching `stop`), with any
/// descriptors. `NOT_FOUND` when the peer closed, left or sent another size.
fn recv(sock: BorrowedFd<'_>, buf: &mut [u8], stop: Option<BorrowedFd<'_>>) -> Result<Vec<OwnedFd>> {
    recv_within(sock, buf, stop, Some(STALL))
}

/// [`recv`] with a limit of its own (`None`: as long as it takes — the exporter's thread
/// waiting for an importer's next request: an importer may copy once and then idle).
fn recv_within(
    sock: BorrowedFd<'_>,
    buf: &mut [u8],
    stop: Option<BorrowedFd<'_>>,
    stall: Option<Duration>,
) -> Result<Vec<OwnedFd>> {
    loop {
        if let Some(r) = recv_now(sock, buf) {
            return r;
        }
        match wait_within(sock, PollFlags::IN, None, stop, stall)? {
            Woke::Stop => return Err(Error::NotFound),
            Woke::Ready | Woke::Socket => {}
        }
    }
}

/// One packet of exactly `buf.len()` bytes if one is there (`None`: nothing yet), as
/// [`recv`] takes it.
fn recv_now(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Option<Result<Vec<OwnedFd>>> {
    let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    match rustix::net::recvmsg(
        sock,
        &mut [std::io::IoSliceMut::new(buf)],
        &mut control,
        RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
    ) {
        Ok(m) => {
            let fds: Vec<OwnedFd> = control
                .drain()
                .filter_map(|m| match m {
                    RecvAncillaryMessage::ScmRights(r) => Some(r.collect::<Vec<_>>()),
                    _ => None,
                })
                .flatten()
                .collect();
            if m.bytes != buf.len() || m.flags.contains(rustix::net::ReturnFlags::TRUNC) {
                return Some(Err(Error::NotFound));
            }
            Some(Ok(fds))
        }
        Err(Errno::AGAIN) | Err(Errno::INTR) => None,
        Err(_) => Some(Err(Error::NotFound)),
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
fn admit(sock: OwnedFd, peer: PeerId, sh: &Arc<Shared>) {
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
    match welcome(&conn.sock, sh, !peer.is_this_process()) {
        Ok((to_imp, from_imp, keep)) => {
            let s = sh.clone();
            let spawned = std::thread::Builder::new().name("doca-mmap-serve".into()).spawn(move || {
                serve(&conn, &to_imp, &from_imp, &s);
                s.give_place(seq);
                drop((conn, to_imp, from_imp, keep, hold));
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

/// Makes the connection's pipes and sends the welcome (range length, permissions, where the
/// shared pages are) with the importer's ends and, to an importer of another process
/// (`other`), the memfd of the shared pages. Returns the exporter's: to the importer (write
/// end), from it (read end), and the ends kept so no pipe loses its other side.
fn welcome(conn: &OwnedFd, sh: &Shared, other: bool) -> Result<(OwnedFd, OwnedFd, [OwnedFd; 2])> {
    let flags = PipeFlags::CLOEXEC | PipeFlags::NONBLOCK;
    let (to_r, to_w) = rustix::pipe::pipe_with(flags).map_err(|e| os("pipe", e))?;
    let (from_r, from_w) = rustix::pipe::pipe_with(flags).map_err(|e| os("pipe", e))?;
    for p in [&to_w, &from_w] {
        let _ = rustix::pipe::fcntl_setpipe_size(p, PIPE_BYTES);
    }
    let mut msg = [0u8; WELCOME_LEN];
    msg[..8].copy_from_slice(WELCOME_MAGIC);
    msg[8..16].copy_from_slice(&(sh.backing.len() as u64).to_le_bytes());
    msg[16..20].copy_from_slice(&sh.perms.bits().to_le_bytes());
    let mut fds = vec![to_r.as_fd(), from_w.as_fd(), from_r.as_fd()];
    if let (Some((fd, head, len)), true) = (&sh.shared_pages, other) {
        msg[20..28].copy_from_slice(&(*head as u64).to_le_bytes());
        msg[28..36].copy_from_slice(&(*len as u64).to_le_bytes());
        fds.push(fd.as_fd());
    }
    send(conn.as_fd(), &msg, &fds)?;
    Ok((to_w, from_r, [to_r, from_w]))
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
        OP_READ => Ok((off, n)),
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

fn answer(sock: BorrowedFd<'_>, r: Result<()>) -> Result<()> {
    let code = match r {
        Ok(()) => 0u32,
        Err(e) => e.code() as u32,
    };
    let mut a = [0u8; ANSWER_LEN];
    a[..4].copy_from_slice(&code.to_le_bytes());
    send(sock, &a, &[])
}

/// Serves one importer until it leaves, breaks the protocol, stalls, gives its place away or
/// the export is revoked.
fn serve(conn: &Conn, to_imp: &OwnedFd, from_imp: &OwnedFd, sh: &Shared) {
    let (sock, stop) = (conn.sock.as_fd(), Some(sh.stop.as_fd()));
    let mut req = [0u8; REQ_LEN];
    loop {
        // Between copies the importer may idle as long as it likes (its process may wait
        // for its user); a stall counts only inside a copy. An importer that maps the whole
        // pages asks only for the partial ends, back to back when it streams copies: the
        // next request is looked for a little before sleeping (no wake-up on its way; the
        // importer copies the middle meanwhile), at most `SPIN` of this thread's time each.
        let mut got = None;
        if sh.shared_pages.is_some() {
            let until = Instant::now() + SPIN;
            while got.is_none() && Instant::now() < until {
                got = recv_now(sock, &mut req);
                std::hint::spin_loop();
            }
        }
        let got = match got {
            Some(r) => r,
            None => recv_within(sock, &mut req, stop, None),
        };
        if got.is_err() {
            return;
        }
        // Inside a copy: the place is not given away meanwhile (given away already: end).
        if conn.state.compare_exchange(IDLE, BUSY, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return;
        }
        if !serve_one(&req, sock, to_imp, from_imp, sh, stop) {
            return;
        }
        conn.state.store(IDLE, Ordering::Release);
    }
}

/// Serves one request; false when the connection is to end.
fn serve_one(
    req: &[u8; REQ_LEN],
    sock: BorrowedFd<'_>,
    to_imp: &OwnedFd,
    from_imp: &OwnedFd,
    sh: &Shared,
    stop: Option<BorrowedFd<'_>>,
) -> bool {
    let u32_at = |i: usize| u32::from_le_bytes(req[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(req[i..i + 8].try_into().expect("8 bytes"));
    let op = u32_at(0);
    // The whole range looked at once: a range this process holds borrowed now is refused
    // before any byte moves (`IN_USE`), as before; the copy itself then borrows piece by
    // piece, and only around one non-blocking pipe call: no borrow is held while waiting
    // for the importer (an importer that never sends or drains its bytes blocks nobody).
    let (region, tracker) = match &sh.backing {
        Backing::Local { region, tracker } => (region, tracker),
        Backing::Relay(_) if u64_at(32) != 0 => {
            let e =
                peer_fail!(Error::InvalidValue, "served export: a request in two pieces to a relayed export");
            return answer(sock, Err(e)).is_ok();
        }
        Backing::Relay(relay) => {
            return match check(sh, op, u64_at(8), u64_at(16)) {
                Ok((off, len)) => relayed(&**relay, op == OP_READ, off, len, sock, to_imp, from_imp, stop),
                Err(e) => answer(sock, Err(e)).is_ok(),
            }
        }
    };
    // One piece, or two (an importer that maps the whole pages asks for both partial ends
    // at once): the second's bytes follow the first's.
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
        Err(e) => return answer(sock, Err(e)).is_ok(),
    };
    let streamed = if op == OP_READ {
        // No answer before the bytes (one wake-up less): the importer waits for either.
        // The importer sends nothing while bytes flow: the socket readable is a violation.
        pieces.iter().flatten().try_for_each(|&(off, len)| {
            give(
                to_imp.as_fd(),
                len,
                |from, to| borrowed(sh.stop.as_fd(), || tracker.try_bytes(region, off + from, to - from)),
                (sock, PollFlags::IN),
                stop,
            )
        })
    } else {
        if answer(sock, Ok(())).is_err() {
            return false;
        }
        pieces.iter().flatten().try_for_each(|&(off, len)| {
            take(from_imp.as_fd(), sh, (region, tracker), off, len, (sock, PollFlags::IN), stop)
        })
    };
    // Every piece's borrow has ended before the importer hears the copy is done.
    streamed.and_then(|()| answer(sock, Ok(()))).is_ok()
}

/// The bounce buffer of a relayed copy: at most this much at a time.
const RELAY_PIECE: usize = 1 << 20;

/// Serves one checked request of `len` bytes at `off` from a re-exported import (see
/// [`Backing::Relay`]), a piece at a time through a bounce buffer whose bytes are copied into
/// the pipe (never lent to it: the buffer is reused). A read that the import refuses before
/// any byte is answered with its code; later, the connection ends (the importer sees
/// `NOT_FOUND`). A write takes all its bytes and answers the import's code last. False when
/// the connection is to end.
#[allow(clippy::too_many_arguments)]
fn relayed(
    relay: &dyn Relay,
    read: bool,
    off: usize,
    len: usize,
    sock: BorrowedFd<'_>,
    to_imp: &OwnedFd,
    from_imp: &OwnedFd,
    stop: Option<BorrowedFd<'_>>,
) -> bool {
    let mut bounce = vec![0u8; len.min(RELAY_PIECE)];
    let mut done = 0;
    if read {
        while done < len {
            let n = (len - done).min(bounce.len());
            if let Err(e) = relay.read(off + done, &mut bounce[..n]) {
                tracing::debug!(target: "doca_sdk", "served export: the relayed import failed a read: {e}");
                return done == 0 && answer(sock, Err(e)).is_ok();
            }
            if give_copy(to_imp.as_fd(), &bounce[..n], (sock, PollFlags::IN), stop).is_err() {
                return false;
            }
            done += n;
        }
        return answer(sock, Ok(())).is_ok();
    }
    if answer(sock, Ok(())).is_err() {
        return false;
    }
    let mut result = Ok(());
    while done < len {
        let n = (len - done).min(bounce.len());
        if take_into(from_imp.as_fd(), &mut bounce[..n], (sock, PollFlags::IN), stop).is_err() {
            return false;
        }
        // After a refused piece the rest is still taken (the importer streams it all), not
        // written.
        if result.is_ok() {
            result = relay.write(off + done, &bounce[..n]);
        }
        done += n;
    }
    answer(sock, result).is_ok()
}

/// Copies `bytes` into the pipe `to`, waiting for room (watching the socket and `stop`).
fn give_copy(
    to: BorrowedFd<'_>,
    bytes: &[u8],
    sock: (BorrowedFd<'_>, PollFlags),
    stop: Option<BorrowedFd<'_>>,
) -> Result<()> {
    push_all(to, bytes.len(), (sock, stop), "write", |done| Ok(rustix::io::write(to, &bytes[done..])))
}

/// Pushes `len` bytes into the pipe `to` by `push(done)` (how many more went in; `AGAIN`
/// when the pipe is full), waiting for room while watching the socket and `stop`: the loop
/// of [`give_copy`] and [`give`], which differ only in the call that hands bytes over.
fn push_all(
    to: BorrowedFd<'_>,
    len: usize,
    (sock, stop): ((BorrowedFd<'_>, PollFlags), Option<BorrowedFd<'_>>),
    what: &str,
    mut push: impl FnMut(usize) -> Result<rustix::io::Result<usize>>,
) -> Result<()> {
    let mut done = 0;
    while done < len {
        match push(done)? {
            Ok(n) => done += n,
            Err(Errno::AGAIN) | Err(Errno::INTR) => match wait(to, PollFlags::OUT, Some(sock), stop)? {
                Woke::Ready => {}
                Woke::Socket | Woke::Stop => return Err(Error::NotFound),
            },
            Err(e) => return Err(os(what, e)),
        }
    }
    Ok(())
}

/// Reads exactly `into.len()` bytes from the pipe `from`, waiting for them.
fn take_into(
    from: BorrowedFd<'_>,
    into: &mut [u8],
    sock: (BorrowedFd<'_>, PollFlags),
    stop: Option<BorrowedFd<'_>>,
) -> Result<()> {
    let mut done = 0;
    while done < into.len() {
        match rustix::io::read(from, &mut into[done..]) {
            Ok(0) => return Err(Error::NotFound),
            Ok(n) => done += n,
            Err(Errno::AGAIN) | Err(Errno::INTR) => match wait(from, PollFlags::IN, Some(sock), stop)? {
                Woke::Ready => {}
                Woke::Socket | Woke::Stop => return Err(Error::NotFound),
            },
            Err(e) => return Err(os("read", e)),
        }
    }
    Ok(())
}

/// Borrows a piece with `try_borrow`, waiting while this process holds it borrowed (its own
/// code, or another importer's piece for the time of one pipe call): a few milliseconds at a
/// time, watching `stop`, at most [`STALL`] in all (then `TIME_OUT`: the connection ends).
fn borrowed<T>(stop: BorrowedFd<'_>, mut try_borrow: impl FnMut() -> Result<T>) -> Result<T> {
    let mut deadline = None;
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
        let mut fds = [PollFd::from_borrowed_fd(stop, PollFlags::IN)];
        let ts = rustix::time::Timespec::try_from(rest).unwrap_or_default();
        match rustix::event::poll(&mut fds, Some(&ts)) {
            Ok(0) | Err(Errno::INTR) => {}
            Ok(_) => return Err(Error::NotFound),
            Err(e) => return Err(os("poll", e)),
        }
        rest = (rest * 2).min(Duration::from_millis(10));
    }
}

/// Hands `len` bytes to the pipe `to` (references to the pages, no copy), waiting for
/// room. `piece(from, to)` gives bytes `from..to` (borrowed for as long as it lives: one
/// `vmsplice`, never a wait).
fn give<B: std::ops::Deref<Target = [u8]>>(
    to: BorrowedFd<'_>,
    len: usize,
    mut piece: impl FnMut(usize, usize) -> Result<B>,
    sock: (BorrowedFd<'_>, PollFlags),
    stop: Option<BorrowedFd<'_>>,
) -> Result<()> {
    push_all(to, len, (sock, stop), "vmsplice", |done| {
        // In pieces, so that the reader starts copying while later pages are handed over.
        let end = len.min(done + GIVE_PIECE);
        let bytes = piece(done, end)?;
        let iov = [IoSliceRaw::from_slice(&bytes)];
        // SAFETY: vmsplice only reads the slice's pages (no SPLICE_F_GIFT: the pipe takes
        // references to them, never writes them); the slice is valid for the whole call.
        Ok(unsafe { rustix::pipe::vmsplice(to, &iov, SpliceFlags::NONBLOCK) })
    })
}

/// Reads exactly `len` bytes from the pipe `from` into `off..off+len` of the export,
/// waiting for them; each piece borrowed for one non-blocking `read` only.
fn take(
    from: BorrowedFd<'_>,
    sh: &Shared,
    (region, tracker): (&Region, &Tracker),
    off: usize,
    len: usize,
    sock: (BorrowedFd<'_>, PollFlags),
    stop: Option<BorrowedFd<'_>>,
) -> Result<()> {
    let mut done = 0;
    while done < len {
        // At most what the pipe holds.
        let end = len.min(done + PIPE_BYTES);
        let got = {
            let mut into =
                borrowed(sh.stop.as_fd(), || tracker.try_bytes_mut(region, off + done, end - done))?;
            rustix::io::read(from, &mut into[..])
        };
        match got {
            Ok(0) => return Err(Error::NotFound),
            Ok(n) => done += n,
            Err(Errno::AGAIN) | Err(Errno::INTR) => match wait(from, PollFlags::IN, Some(sock), stop)? {
                Woke::Ready => {}
                Woke::Socket | Woke::Stop => return Err(Error::NotFound),
            },
            Err(e) => return Err(os("read", e)),
        }
    }
    Ok(())
}

/// A connection to a served export (see the module docs): copies in and out of the range.
pub(crate) struct Client {
    sock: OwnedFd,
    /// From the exporter (read end), to it (write end), and the end kept.
    from_exp: OwnedFd,
    to_exp: OwnedFd,
    _keep: OwnedFd,
    /// One request at a time.
    turn: Mutex<()>,
    dead: AtomicBool,
    len: usize,
    writable: bool,
    /// The exporter's whole pages, mapped here when it shares them (another process's
    /// export of heap memory, see [`crate::swap`]).
    pages: Option<Pages>,
}

/// The whole pages of an export mapped here: `len` bytes from `head` of the range.
struct Pages {
    base: std::ptr::NonNull<u8>,
    head: usize,
    len: usize,
}

// SAFETY: a shared mapping reached only through bounds-checked raw copies (`read`, `write`).
unsafe impl Send for Pages {}
// SAFETY: as above.
unsafe impl Sync for Pages {}

impl Pages {
    /// Maps the memfd `fd` of `len` bytes shared by the exporter at `head` of a range of
    /// `range` bytes (writable when `writable`). Anything else than what was announced
    /// (unsealed, another size, a range outside) → `NOT_FOUND`.
    fn map(fd: &OwnedFd, head: usize, len: usize, range: usize, writable: bool) -> Result<Pages> {
        let page = crate::shm::page_size();
        let fits =
            head < page && len % page == 0 && len > 0 && head.checked_add(len).is_some_and(|e| e <= range);
        if !fits || doca_link::memfd::check_sealed(fd, Some(len)).is_err() {
            return Err(peer_fail!(
                Error::NotFound,
                "mmap create_from_export: the exporter's shared pages ({len} bytes at {head}) are not as described"
            ));
        }
        crate::shm::reserve_from_elsewhere(len)?;
        let prot = if writable {
            rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE
        } else {
            rustix::mm::ProtFlags::READ
        };
        // SAFETY: a fresh shared mapping of a sealed memfd (it cannot shrink under it).
        let ptr =
            unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, rustix::mm::MapFlags::SHARED, fd, 0) };
        match ptr.ok().and_then(|p| std::ptr::NonNull::new(p.cast::<u8>())) {
            Some(base) => Ok(Pages { base, head, len }),
            None => {
                crate::shm::release_from_elsewhere(len);
                Err(peer_fail!(
                    Error::NotFound,
                    "mmap create_from_export: the exporter's shared pages cannot be mapped"
                ))
            }
        }
    }

    /// Copies `dst.len()` bytes from `offset` of the pages (in bounds: checked by the caller).
    fn read(&self, offset: usize, dst: &mut [u8]) {
        assert!(offset.checked_add(dst.len()).is_some_and(|e| e <= self.len), "checked by the caller");
        // SAFETY: in bounds of the mapping (asserted), which lives as long as `self`; the
        // exporter may write meanwhile (as DMA races the CPU): bytes, never a reference.
        unsafe { std::ptr::copy_nonoverlapping(self.base.as_ptr().add(offset), dst.as_mut_ptr(), dst.len()) }
    }

    /// Copies `src` to `offset` of the pages (in bounds, writable: checked by the caller).
    fn write(&self, offset: usize, src: &[u8]) {
        assert!(offset.checked_add(src.len()).is_some_and(|e| e <= self.len), "checked by the caller");
        // SAFETY: as in `read`; the mapping is writable (mapped so for a writable export, and
        // writes are refused before on a read-only one).
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.base.as_ptr().add(offset), src.len()) }
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`, used only through `&self`.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast(), self.len) };
        crate::shm::release_from_elsewhere(self.len);
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "served::Client({} bytes)", self.len)
    }
}

fn is_pipe(fd: &OwnedFd) -> bool {
    rustix::fs::fstat(fd)
        .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Fifo)
}

impl Client {
    /// Takes the connection `sock` to a served export (from the exporter's memory service),
    /// which must serve `len` bytes with `perms`. Not there (revoked, exited, forged) →
    /// `NOT_FOUND`.
    pub(crate) fn connect(sock: OwnedFd, len: usize, perms: AccessFlags) -> Result<Client> {
        let mut w = [0u8; WELCOME_LEN];
        let fds = recv(sock.as_fd(), &mut w, None)
            .map_err(|e| fail!(Error::NotFound, "mmap create_from_export: the exporter refused ({e})"))?;
        let mut fds = fds;
        let memfd = if fds.len() == 4 { fds.pop() } else { None };
        let (Ok([from_exp, to_exp, keep]), true) = (<[OwnedFd; 3]>::try_from(fds), &w[..8] == WELCOME_MAGIC)
        else {
            return Err(peer_fail!(Error::NotFound, "mmap create_from_export: not a served export"));
        };
        let served_len = u64::from_le_bytes(w[8..16].try_into().expect("8 bytes"));
        let served_perms = u32::from_le_bytes(w[16..20].try_into().expect("4 bytes"));
        if served_len != len as u64
            || served_perms != perms.bits()
            || ![&from_exp, &to_exp, &keep].iter().all(|f| is_pipe(f))
        {
            return Err(peer_fail!(
                Error::NotFound,
                "mmap create_from_export: the export is not the one described"
            ));
        }
        let writable = perms.intersects(AccessFlags::PCI_READ_WRITE | AccessFlags::RDMA_WRITE);
        let u64_at = |i: usize| usize::try_from(u64::from_le_bytes(w[i..i + 8].try_into().expect("8 bytes")));
        let pages = match (memfd, u64_at(20), u64_at(28)) {
            (Some(fd), Ok(head), Ok(n)) => Some(Pages::map(&fd, head, n, len, writable)?),
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
            from_exp,
            to_exp,
            _keep: keep,
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
        let mut fds = [PollFd::from_borrowed_fd(self.sock.as_fd(), PollFlags::IN)];
        let zero = rustix::time::Timespec { tv_sec: 0, tv_nsec: 0 };
        let _turn = self.turn.lock();
        match rustix::event::poll(&mut fds, Some(&zero)) {
            Ok(0) | Err(Errno::INTR) => true,
            _ => {
                self.dead.store(true, Ordering::Release);
                false
            }
        }
    }

    fn gone(&self) -> Error {
        self.dead.store(true, Ordering::Release);
        fail!(Error::NotFound, "the exporter of this map revoked it (stopped, destroyed or exited)")
    }

    /// Sends a request for one piece (`offset`, `len`), or two when the second's length is
    /// not 0. A broken connection is `NOT_FOUND` (and stays so). Its answer (a DOCA code from
    /// the exporter comes back as is) is read by the caller: a write's first, a read's after
    /// the bytes.
    fn send_request(
        &self,
        op: u32,
        (offset, len): (usize, usize),
        (off2, len2): (usize, usize),
    ) -> Result<()> {
        if self.dead.load(Ordering::Acquire) {
            return Err(self.gone());
        }
        let mut req = [0u8; REQ_LEN];
        req[..4].copy_from_slice(&op.to_le_bytes());
        req[8..16].copy_from_slice(&(offset as u64).to_le_bytes());
        req[16..24].copy_from_slice(&(len as u64).to_le_bytes());
        req[24..32].copy_from_slice(&(off2 as u64).to_le_bytes());
        req[32..40].copy_from_slice(&(len2 as u64).to_le_bytes());
        send(self.sock.as_fd(), &req, &[]).map_err(|_| self.gone())
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
        match u32::from_le_bytes(a[..4].try_into().expect("4 bytes")) {
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

    fn stream_failed(&self, e: Error) -> Error {
        self.dead.store(true, Ordering::Release);
        if e == Error::TimeOut {
            return e;
        }
        self.gone()
    }

    /// Splits `offset..offset+len` into the part before the mapped pages, the mapped part
    /// and the part after (lengths), when some of it is mapped here.
    fn split(&self, offset: usize, len: usize) -> Option<(&Pages, usize, usize, usize)> {
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

    /// Reads one or two pieces served, running `meanwhile` once the request is sent.
    fn read_served(&self, parts: &mut [(usize, &mut [u8])], meanwhile: impl FnOnce()) -> Result<()> {
        let _turn = self.turn.lock();
        let second = parts.get(1).map_or((0, 0), |(o, d)| (*o, d.len()));
        self.send_request(OP_READ, (parts[0].0, parts[0].1.len()), second)?;
        meanwhile();
        // The bytes come first, then the answer; a refusal comes alone, before any byte.
        let (mut total, mut answered) = (0, false);
        for (_, dst) in parts.iter_mut() {
            let mut done = 0;
            while done < dst.len() {
                match rustix::io::read(&self.from_exp, &mut dst[done..]) {
                    Ok(0) => return Err(self.stream_failed(Error::NotFound)),
                    Ok(n) => {
                        done += n;
                        total += n;
                    }
                    // Answered yet bytes missing: the exporter broke the protocol.
                    Err(Errno::AGAIN) | Err(Errno::INTR) if answered => {
                        return Err(self.stream_failed(Error::NotFound))
                    }
                    Err(Errno::AGAIN) | Err(Errno::INTR) => {
                        let woke = wait(
                            self.from_exp.as_fd(),
                            PollFlags::IN,
                            Some((self.sock.as_fd(), PollFlags::IN)),
                            None,
                        )
                        .map_err(|e| self.stream_failed(e))?;
                        if woke == Woke::Socket {
                            match self.answer() {
                                Err(e) if total == 0 => return Err(e),
                                Err(_) => return Err(self.stream_failed(Error::NotFound)),
                                Ok(()) => answered = true,
                            }
                        }
                    }
                    Err(e) => return Err(self.stream_failed(os("read", e))),
                }
            }
        }
        if answered {
            Ok(())
        } else {
            self.answer()
        }
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

    /// Writes one or two pieces served, running `meanwhile` once the exporter accepted.
    fn write_served(&self, parts: &[(usize, &[u8])], meanwhile: impl FnOnce()) -> Result<()> {
        let _turn = self.turn.lock();
        let second = parts.get(1).map_or((0, 0), |(o, d)| (*o, d.len()));
        self.send_request(OP_WRITE, (parts[0].0, parts[0].1.len()), second)?;
        self.answer()?;
        meanwhile();
        for (_, src) in parts {
            give(
                self.to_exp.as_fd(),
                src.len(),
                |from, to| Ok(&src[from..to]),
                (self.sock.as_fd(), PollFlags::empty()),
                None,
            )
            .map_err(|e| self.stream_failed(e))?;
        }
        self.answer()
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

/// A request left hanging on purpose, as a hostile importer makes it (see
/// [`stalled_request`]): held until dropped or closed by the exporter.
#[doc(hidden)]
pub struct StalledRequest {
    sock: OwnedFd,
    _pipes: Vec<OwnedFd>,
}

impl StalledRequest {
    /// Waits up to `limit` for the exporter to close the connection (answers are read and
    /// dropped): whether it did.
    pub fn closed_within(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut a = [0u8; ANSWER_LEN];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match recv_within(self.sock.as_fd(), &mut a, None, Some(left)) {
                Ok(_) => {}
                Err(Error::TimeOut) => return false,
                Err(_) => return true,
            }
        }
    }
}

/// For attack harnesses only (the tests' hostile process), never for applications (through
/// [`crate::stalled_served_request`], which reads the descriptor): connects to a served
/// export's memory service with its token as an importer, sends one request — a write when `write`,
/// else a read — for `offset..offset+len`, and then neither sends nor reads a byte of it.
/// Returns once the exporter is serving it (a write answered, the first bytes of a read in
/// the pipe); a refusal comes back as its DOCA code.
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
    let pipes = recv(sock.as_fd(), &mut w, None)?;
    let [from_exp, ..] = pipes.as_slice() else { return Err(Error::NotFound) };
    let mut req = [0u8; REQ_LEN];
    req[..4].copy_from_slice(&(if write { OP_WRITE } else { OP_READ }).to_le_bytes());
    req[8..16].copy_from_slice(&offset.to_le_bytes());
    req[16..24].copy_from_slice(&len.to_le_bytes());
    send(sock.as_fd(), &req, &[])?;
    if write {
        let mut a = [0u8; ANSWER_LEN];
        recv(sock.as_fd(), &mut a, None)?;
        Error::check(i32::from_le_bytes(a[..4].try_into().expect("4 bytes")))?;
    } else {
        match wait(from_exp.as_fd(), PollFlags::IN, Some((sock.as_fd(), PollFlags::IN)), None)? {
            Woke::Ready => {}
            _ => {
                let mut a = [0u8; ANSWER_LEN];
                recv(sock.as_fd(), &mut a, None)?;
                Error::check(i32::from_le_bytes(a[..4].try_into().expect("4 bytes")))?;
                return Err(Error::NotFound);
            }
        }
    }
    Ok(StalledRequest { sock, _pipes: pipes })
}

/// For attack harnesses only (through [`crate::served_shared_pages`]): connects to a served
/// export's memory service with its token as an importer and returns the memfd of the whole
/// pages it shares (with their start in the range and length) as the welcome brings it,
/// unchecked and unmapped; `None` when the welcome brings none.
#[doc(hidden)]
pub fn shared_pages(
    service: doca_link::rendezvous::ServiceName,
    token: &doca_link::rendezvous::Token,
) -> Result<Option<(OwnedFd, usize, usize)>> {
    let (sock, _exporter) = doca_link::rendezvous::take_connection(service, token)?;
    let mut w = [0u8; WELCOME_LEN];
    let mut fds = recv(sock.as_fd(), &mut w, None)?;
    let at = |i: usize| u64::from_le_bytes(w[i..i + 8].try_into().expect("8 bytes")) as usize;
    Ok((fds.len() == 4).then(|| (fds.remove(3), at(20), at(28))))
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
        let mut held: Vec<OwnedFd> = (0..MAX_CONNS_PER_PEER).map(|_| raw_conn(&desc)).collect();
        let mut w = [0u8; WELCOME_LEN];
        let extra = raw_sock(&desc);
        assert_eq!(
            recv(extra.as_fd(), &mut w, None).err(),
            Some(Error::NotFound),
            "refused: closed unwelcomed"
        );
        drop(held.pop());
        // The place comes back once its serving thread saw the close.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let again = raw_sock(&desc);
            if recv(again.as_fd(), &mut w, None).is_ok() {
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

    /// While a copy waits for its importer nothing is borrowed: the exporter borrows part of
    /// the range meanwhile (it used to be `IN_USE`: the whole range was borrowed until the
    /// importer had drained it), and the copy waits for that piece until the exporter lets go.
    #[test]
    fn a_copy_waits_for_a_piece_the_exporter_borrowed_meanwhile() {
        let (len, tail) = (8 << 20, 1 << 20);
        let (map, desc, _dev) = exported(len, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE);
        let sock = raw_sock(&desc);
        let mut w = [0u8; WELCOME_LEN];
        let mut fds = recv(sock.as_fd(), &mut w, None).unwrap();
        let from_exp = fds.swap_remove(0);
        let mut req = [0u8; REQ_LEN];
        req[..4].copy_from_slice(&OP_READ.to_le_bytes());
        req[16..24].copy_from_slice(&(len as u64).to_le_bytes());
        send(sock.as_fd(), &req, &[]).unwrap();
        assert_eq!(wait(from_exp.as_fd(), PollFlags::IN, None, None).unwrap(), Woke::Ready);
        // The pipe is full, its reader not reading: the exporter borrows the range's end.
        let access = map.access().unwrap();
        let mut guard = access.bytes_mut(len - tail, tail).unwrap();
        let reader = std::thread::spawn(move || {
            let mut got = vec![0u8; len];
            let mut done = 0;
            while done < len {
                match rustix::io::read(&from_exp, &mut got[done..]) {
                    Ok(n) if n > 0 => done += n,
                    Err(Errno::AGAIN) => {
                        wait(from_exp.as_fd(), PollFlags::IN, None, None).unwrap();
                    }
                    r => panic!("{r:?} after {done} bytes"),
                }
            }
            got
        });
        std::thread::sleep(Duration::from_millis(200));
        guard.fill(0xee);
        drop(guard);
        let got = reader.join().unwrap();
        let mut a = [0u8; ANSWER_LEN];
        recv(sock.as_fd(), &mut a, None).unwrap();
        assert_eq!(a, [0; ANSWER_LEN], "the copy completed");
        assert!(got[..len - tail].iter().enumerate().all(|(i, &b)| b == i as u8), "the bytes before");
        assert!(got[len - tail..].iter().all(|&b| b == 0xee), "the piece waited for the exporter");
    }

    /// A connected socket to the export of `desc`, nothing read yet.
    fn raw_sock(desc: &[u8]) -> OwnedFd {
        let name = doca_link::rendezvous::ServiceName {
            pid: u32::from_le_bytes(desc[16..20].try_into().unwrap()),
            nonce: u64::from_le_bytes(desc[20..28].try_into().unwrap()),
        };
        doca_link::rendezvous::take_connection(name, &desc[28..44].try_into().unwrap()).unwrap().0
    }

    /// A raw connection to the export of `desc`, as a hostile importer would make it.
    fn raw_conn(desc: &[u8]) -> OwnedFd {
        let sock = raw_sock(desc);
        let mut w = [0u8; WELCOME_LEN];
        assert_eq!(recv(sock.as_fd(), &mut w, None).unwrap().len(), 3);
        sock
    }

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
    /// ends): both pieces' bytes in order, then one answer; a bad second piece is refused
    /// with its code before any byte, and the connection goes on serving.
    #[test]
    fn a_request_in_two_pieces_is_served_in_order_and_a_bad_second_piece_refused() {
        let len = 1 << 16;
        let (_map, desc, _dev) = exported(len, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_ONLY);
        let sock = raw_sock(&desc);
        let mut w = [0u8; WELCOME_LEN];
        let fds = recv(sock.as_fd(), &mut w, None).unwrap();
        assert_eq!(fds.len(), 3, "an importer of the exporter's own process gets no shared pages");
        let ask2 = |op: u32, a: (u64, u64), b: (u64, u64)| {
            let mut req = [0u8; REQ_LEN];
            req[..4].copy_from_slice(&op.to_le_bytes());
            for (i, v) in [a.0, a.1, b.0, b.1].into_iter().enumerate() {
                req[8 + 8 * i..16 + 8 * i].copy_from_slice(&v.to_le_bytes());
            }
            send(sock.as_fd(), &req, &[]).unwrap();
        };
        let answer_code = || {
            let mut a = [0u8; ANSWER_LEN];
            recv(sock.as_fd(), &mut a, None).unwrap();
            i32::from_le_bytes(a[..4].try_into().unwrap())
        };
        let l = len as u64;
        ask2(OP_READ, (0, 16), (l - 1, 2));
        assert_eq!(answer_code(), Error::InvalidValue.code());
        ask2(OP_READ, (0, 16), (u64::MAX, 2));
        assert_eq!(answer_code(), Error::InvalidValue.code());
        ask2(OP_WRITE, (0, 16), (100, 2));
        assert_eq!(answer_code(), Error::NotPermitted.code());
        ask2(OP_READ, (5, 3), (l - 4, 4));
        let mut got = [0u8; 7];
        let mut done = 0;
        while done < got.len() {
            wait(fds[0].as_fd(), PollFlags::IN, None, None).unwrap();
            done += rustix::io::read(&fds[0], &mut got[done..]).unwrap();
        }
        assert_eq!(answer_code(), 0);
        let want: Vec<u8> = [5u64, 6, 7, l - 4, l - 3, l - 2, l - 1].iter().map(|&i| i as u8).collect();
        assert_eq!(&got[..], &want[..]);
    }

    /// What a hostile importer can send: ranges out of bounds or overflowing, a write into a
    /// read-only export, unknown requests — each answered with its code, the connection still
    /// served; a packet of another size closes that connection only; an importer dying in the
    /// middle of a copy stops nothing. The exporter's bytes are untouched and a proper
    /// importer is served throughout.
    #[test]
    fn a_hostile_importer_gets_codes_and_hurts_neither_the_exporter_nor_other_importers() {
        let len = 1 << 20;
        let (map, desc, dev) = exported(len, AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_ONLY);
        let good = Mmap::create_from_export(None, &desc, &dev).unwrap().access().unwrap();
        let bad = raw_conn(&desc);
        let l = len as u64;
        assert_eq!(ask(&bad, OP_READ, l - 1, 2), Err(Error::InvalidValue));
        assert_eq!(ask(&bad, OP_READ, 1, u64::MAX), Err(Error::InvalidValue));
        assert_eq!(ask(&bad, OP_READ, u64::MAX, 1), Err(Error::InvalidValue));
        assert_eq!(ask(&bad, OP_READ, 0, 0), Err(Error::InvalidValue));
        assert_eq!(ask(&bad, OP_WRITE, 0, 16), Err(Error::NotPermitted));
        assert_eq!(ask(&bad, 77, 0, 16), Err(Error::InvalidValue));
        // Still served: a proper read on the hostile connection.
        assert_eq!(ask(&bad, OP_READ, 0, 16), Ok(()), "the bytes in the pipe, then the answer");
        let mut a = [0u8; ANSWER_LEN];
        // A packet of another size: that connection closes, the others go on.
        send(bad.as_fd(), &[1, 2, 3], &[]).unwrap();
        assert!(recv(bad.as_fd(), &mut a, None).is_err(), "the connection is closed");
        // An importer asking for the whole range and leaving in the middle.
        for _ in 0..4 {
            let quitter = raw_conn(&desc);
            let mut req = [0u8; REQ_LEN];
            req[..4].copy_from_slice(&OP_READ.to_le_bytes());
            req[16..24].copy_from_slice(&l.to_le_bytes());
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
}
