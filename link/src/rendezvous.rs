//! One rendezvous for what this process hands other processes by secret: memory (a sealed
//! memfd) and connections to its library threads (served exports).
//!
//! Each process that offers something has **one memory service**: a named `SOCK_SEQPACKET`
//! socket in the fabric directory (0700, this user's), `mem-<pid>-<nonce>.sock`, where the
//! nonce is random per process so that a reused pid never names an old service. The name
//! holds no secret: what is secret is the 128-bit token of each [`Offer`], drawn from the OS
//! and carried only in the descriptor the application hands over itself. One named library
//! thread (`doca-link-mem`) serves the socket, from the first offer until the last is
//! withdrawn (the socket file is then removed).
//!
//! | step     | what                                                                    |
//! |----------|-------------------------------------------------------------------------|
//! | importer | connects without blocking ([`ServiceName`] gone → `NOT_FOUND` at once; backlog full → a few short retries, then `AGAIN`), checks the service runs as this user, sends `DOCAMEMQ` + token |
//! | service  | checks the importer's uid, waits at most [`REQUEST_WAIT`] for the token, looks it up: unknown → closes (`NOT_FOUND`); a memfd → answers `DOCAMEMA` + the offer's info with the memfd (`SCM_RIGHTS`) and closes; a connection offer → hands the socket to the offer's handler |
//! | importer | waits at most [`REPLY_WAIT`] for the answer; checks it carries exactly one descriptor (the caller checks its seals and size) |
//!
//! Nothing is ever opened through `/proc/<pid>/fd`: an importer in another PID namespace, or
//! of a non-dumpable exporter, is served the same way, and a descriptor can name no file of
//! the exporter (no FIFO to hang on). The exporter's identity comes from the socket
//! ([`crate::budget::peer_of`]: its pidfd), not from a pid written in the descriptor.
//!
//! **Bounds.** Connections waiting for their token: at most [`MAX_PENDING`], and
//! [`MAX_PENDING_PER_PEER`] per importer process (more are closed at once, logged at debug
//! level); each is closed after [`REQUEST_WAIT`]. A connection whose token is there when it
//! is accepted is answered at once and never waits, so a burst of requests that piled up in
//! the backlog while the service's thread was busy is served whatever its size. A withdrawn offer is never acted on once
//! [`Offered`] has dropped (withdrawing waits for an action in progress).

use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};

use crate::discard::PeerFd;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::budget::{peer_of, PeerId};
use crate::error::{bail, fail, peer_fail};
use crate::fabric::{FabricDir, Listener};
use crate::{Error, Recv, Result};
use rustix::event::{PollFd, PollFlags};

/// A secret that names one offer.
pub type Token = [u8; 16];

/// The longest a connection may take to send its token before the service closes it.
pub const REQUEST_WAIT: Duration = Duration::from_secs(5);
/// The longest an importer waits for the service's answer (`TIME_OUT` beyond).
pub const REPLY_WAIT: Duration = Duration::from_secs(10);
/// Connections waiting for their token, over all importers.
pub const MAX_PENDING: usize = 64;
/// Connections one importer process may have waiting.
pub const MAX_PENDING_PER_PEER: usize = 8;
/// The most bytes of information an offer of memory carries with it.
pub const INFO_MAX: usize = 64;

const REQUEST_MAGIC: &[u8; 8] = b"DOCAMEMQ";
const ANSWER_MAGIC: &[u8; 8] = b"DOCAMEMA";
const REQUEST_LEN: usize = 8 + 16;

/// Where a process's memory service is: its pid (for messages) and its nonce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ServiceName {
    /// The pid of the offering process, as it sees itself.
    pub pid: u32,
    /// Random per process.
    pub nonce: u64,
}

impl ServiceName {
    /// The socket's file name in the fabric directory.
    pub fn file(&self) -> String {
        format!("mem-{}-{:016x}.sock", self.pid, self.nonce)
    }
}

/// A fresh token from the operating system's random source.
pub fn new_token() -> Result<Token> {
    let mut t = [0u8; 16];
    let mut filled = 0;
    while filled < t.len() {
        match rustix::rand::getrandom(&mut t[filled..], rustix::rand::GetRandomFlags::empty()) {
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => bail!(Error::OperatingSystem, "getrandom: {e}"),
        }
    }
    Ok(t)
}

/// What an offer hands over.
pub enum Offer {
    /// A memfd (a duplicate is sent to each importer), with up to [`INFO_MAX`] bytes of
    /// information for the importer.
    Memfd {
        /// The memory.
        fd: OwnedFd,
        /// What the importer learns with it.
        info: Vec<u8>,
    },
    /// The connection itself, handed to this handler in the service's thread with the
    /// importer's identity (its pid, for messages, as its credentials give it) (the handler must not block: it answers
    /// and hands the socket to a thread of its own).
    Connection(Box<dyn Fn(PeerFd, PeerId) + Send + Sync>),
    /// A memfd handed over as [`Offer::Memfd`] on a connection the service then keeps and
    /// hands to `keeper` (a doorbell board, [`crate::bells`]: the importer registers its
    /// doorbells over it). Withdrawing the offer revokes the keeper: it shuts every kept
    /// connection down.
    Kept {
        /// The memory.
        fd: OwnedFd,
        /// What the importer learns with it.
        info: Vec<u8>,
        /// What serves the kept connections.
        keeper: Arc<dyn Keeper>,
    },
}

/// What serves the connections an [`Offer::Kept`] keeps, in the memory service's thread
/// (never blocking).
pub trait Keeper: Send + Sync {
    /// Takes the connection of importer `peer` (answered already): its id, or `None` to
    /// close it.
    fn accept(&self, sock: Arc<PeerFd>, peer: PeerId) -> Option<u64>;
    /// Connection `id` is readable: `false` when it ended or misbehaved (then closed).
    fn readable(&self, id: u64, sock: &PeerFd) -> bool;
    /// The offer was withdrawn: end every connection.
    fn revoke(&self);
}

/// One offer's place in the service: `None` once withdrawn.
type Slot = Arc<Mutex<Option<Offer>>>;

struct Service {
    name: ServiceName,
    offers: Mutex<HashMap<Token, Slot>>,
    /// Readable when the thread must end (an eventfd).
    quit: OwnedFd,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// The process's service, while something is offered.
static SERVICE: Mutex<Option<Arc<Service>>> = Mutex::new(None);
/// This process's nonce (and the pid it was drawn in: a child of `fork` draws its own).
static NONCE: Mutex<Option<(u32, u64)>> = Mutex::new(None);

fn nonce() -> Result<u64> {
    let me = std::process::id();
    let mut n = NONCE.lock().unwrap_or_else(|e| e.into_inner());
    match *n {
        Some((pid, v)) if pid == me => Ok(v),
        _ => {
            let t = new_token()?;
            let v = u64::from_le_bytes(t[..8].try_into().expect("8 bytes"));
            *n = Some((me, v));
            Ok(v)
        }
    }
}

/// An offer made: importers that send its token get it until this drops (then the token
/// names nothing: `NOT_FOUND`).
pub struct Offered {
    service: Arc<Service>,
    token: Token,
    slot: Slot,
}

impl Offered {
    /// The secret the descriptor carries.
    pub fn token(&self) -> Token {
        self.token
    }

    /// Where importers go.
    pub fn service(&self) -> ServiceName {
        self.service.name
    }
}

impl Drop for Offered {
    fn drop(&mut self) {
        // Waits for an action on this offer in progress; none starts after.
        let withdrawn = self.slot.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(Offer::Kept { keeper, .. }) = withdrawn {
            keeper.revoke();
        }
        if self.service.name.pid != std::process::id() {
            return; // a child of fork: the service is its parent's
        }
        let mut global = SERVICE.lock().unwrap_or_else(|e| e.into_inner());
        let empty = {
            let mut offers = self.service.offers.lock().unwrap_or_else(|e| e.into_inner());
            offers.remove(&self.token);
            offers.is_empty()
        };
        if empty && global.as_ref().is_some_and(|s| Arc::ptr_eq(s, &self.service)) {
            *global = None;
            let _ = rustix::io::write(&self.service.quit, &1u64.to_ne_bytes());
            let handle = self.service.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(h) = handle {
                let _ = h.join();
            }
        }
    }
}

/// Offers `what` under a fresh token through this process's memory service (started at the
/// first offer).
pub fn offer(what: Offer) -> Result<Offered> {
    if let Offer::Memfd { info, .. } | Offer::Kept { info, .. } = &what {
        if info.len() > INFO_MAX {
            bail!(Error::InvalidValue, "an offer's information of {} bytes (at most {INFO_MAX})", info.len());
        }
    }
    let token = new_token()?;
    let mut global = SERVICE.lock().unwrap_or_else(|e| e.into_inner());
    let me = std::process::id();
    if let Some(s) = global.take() {
        if s.name.pid == me {
            *global = Some(s);
        } else {
            // Inherited through fork: its thread and socket are the parent's; never drop it
            // here (its listener would remove the parent's socket file).
            std::mem::forget(s);
        }
    }
    let service = match &*global {
        Some(s) => s.clone(),
        None => {
            let s = start()?;
            *global = Some(s.clone());
            s
        }
    };
    let slot = Arc::new(Mutex::new(Some(what)));
    service.offers.lock().unwrap_or_else(|e| e.into_inner()).insert(token, slot.clone());
    Ok(Offered { service, token, slot })
}

fn start() -> Result<Arc<Service>> {
    let name = ServiceName { pid: std::process::id(), nonce: nonce()? };
    let listener = Listener::bind_in(FabricDir::open()?, name.file())?;
    let quit = rustix::event::eventfd(
        0,
        rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
    )
    .map_err(|e| fail!(Error::OperatingSystem, "eventfd: {e}"))?;
    let service = Arc::new(Service { name, offers: Mutex::default(), quit, thread: Mutex::new(None) });
    let s = service.clone();
    let handle = std::thread::Builder::new()
        .name("doca-link-mem".into())
        .spawn(move || serve(listener, &s))
        .map_err(|e| fail!(Error::OperatingSystem, "starting the memory service's thread: {e}"))?;
    *service.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(handle);
    Ok(service)
}

/// A connection waiting for its token.
struct Pending {
    /// Closed on a closing thread unless handed on ([`crate::discard`]).
    sock: PeerFd,
    peer: PeerId,
    deadline: Instant,
}

/// A connection the service keeps for an [`Offer::Kept`].
struct Kept {
    sock: Arc<PeerFd>,
    keeper: Arc<dyn Keeper>,
    id: u64,
}

fn serve(listener: Listener, s: &Service) {
    let mut pending: Vec<Pending> = Vec::with_capacity(MAX_PENDING);
    let mut kept: Vec<Kept> = Vec::new();
    loop {
        let now = Instant::now();
        let timeout = pending.iter().map(|p| p.deadline.saturating_duration_since(now)).min();
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(pending.len() + kept.len() + 2);
        fds.push(PollFd::new(&listener, PollFlags::IN));
        fds.push(PollFd::new(&s.quit, PollFlags::IN));
        fds.extend(pending.iter().map(|p| PollFd::new(&p.sock, PollFlags::IN)));
        fds.extend(kept.iter().map(|k| PollFd::new(&*k.sock, PollFlags::IN)));
        let ts = timeout.map(|t| rustix::event::Timespec::try_from(t).unwrap_or_default());
        if let Err(e) = rustix::event::poll(&mut fds, ts.as_ref()) {
            if e != rustix::io::Errno::INTR {
                tracing::warn!(target: "doca_sdk", "memory service: poll: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
            continue;
        }
        if !fds[1].revents().is_empty() {
            return;
        }
        let accepting = !fds[0].revents().is_empty();
        let ready: Vec<bool> = fds[2..2 + pending.len()].iter().map(|f| !f.revents().is_empty()).collect();
        let kept_ready: Vec<bool> =
            fds[2 + pending.len()..].iter().map(|f| !f.revents().is_empty()).collect();
        drop(fds);
        // Kept connections first (messages of importers already served), then requests
        // (their places free up), then new connections.
        let mut i = 0;
        kept.retain(|k| {
            let keep = !kept_ready[i] || k.keeper.readable(k.id, &k.sock);
            i += 1;
            keep
        });
        let mut keep = Vec::with_capacity(MAX_PENDING);
        for (p, is_ready) in pending.drain(..).zip(ready) {
            if is_ready {
                match handle_request(s, p) {
                    Handled::Again(p) => keep.push(p),
                    Handled::Kept(k) => kept.push(k),
                    Handled::Done => {}
                }
            } else if p.deadline <= now {
                tracing::debug!(target: "doca_sdk", "memory service: process {} sent no request in {REQUEST_WAIT:?}; closed", p.peer);
            } else {
                keep.push(p);
            }
        }
        pending = keep;
        if accepting {
            accept_all(s, &listener, &mut pending, &mut kept);
        }
    }
}

/// What became of a request.
enum Handled {
    /// Nothing had arrived after all: still waiting.
    Again(Pending),
    /// Answered; the connection is kept for its offer's keeper.
    Kept(Kept),
    /// Answered (or refused) and closed, or handed to a handler.
    Done,
}

/// Accepts what the backlog holds. A connection whose request is there already (an
/// importer sends it right after connecting) is answered at once; only one still silent
/// waits, and only those count against the places: a burst of requests from one process
/// that piled up while this thread was busy (or not scheduled) is served, not refused.
fn accept_all(s: &Service, listener: &Listener, pending: &mut Vec<Pending>, kept: &mut Vec<Kept>) {
    // Bounded: at most the backlog plus what arrives meanwhile; the places bound the rest.
    for _ in 0..256 {
        let sock = match listener.accept() {
            Ok(Some(sock)) => sock,
            Ok(None) => return,
            Err(e) => {
                tracing::debug!(target: "doca_sdk", "memory service: accept: {}", e.name());
                return;
            }
        };
        let pid = match crate::fabric::peer_pid(sock.as_fd()) {
            Ok(pid) => pid,
            Err(_) => continue, // another user: refused (logged at debug by peer_pid)
        };
        // Counted per process identity, not pid (0 for every process of another namespace).
        let Ok(peer) = peer_of(sock.as_fd(), pid) else { continue };
        let p = Pending { sock: PeerFd::socket(sock), peer, deadline: Instant::now() + REQUEST_WAIT };
        let p = match handle_request(s, p) {
            Handled::Again(p) => p,
            Handled::Kept(k) => {
                kept.push(k);
                continue;
            }
            Handled::Done => continue,
        };
        if pending.len() >= MAX_PENDING
            || pending.iter().filter(|w| w.peer == peer).count() >= MAX_PENDING_PER_PEER
        {
            let _ = peer_fail!(
                Error::Full,
                "memory service: {peer} (or all importers) already has {} requests waiting; refused",
                pending.len()
            );
            continue;
        }
        pending.push(p);
    }
}

/// Answers the request waiting on `p`.
fn handle_request(s: &Service, p: Pending) -> Handled {
    let mut req = [0u8; REQUEST_LEN + 1];
    let token: Token = match crate::fabric::recv(p.sock.as_fd(), &mut req) {
        Ok(Recv::Packet { len: REQUEST_LEN, truncated: false, fds })
            if fds.is_empty() && &req[..8] == REQUEST_MAGIC =>
        {
            req[8..REQUEST_LEN].try_into().expect("16 bytes")
        }
        Ok(Recv::Empty) => return Handled::Again(p),
        Ok(Recv::Closed) | Err(_) => return Handled::Done,
        Ok(Recv::Packet { .. }) => {
            let _ = peer_fail!(
                Error::InvalidValue,
                "memory service: a malformed request from process {}; closed",
                p.peer
            );
            return Handled::Done;
        }
    };
    let slot = s.offers.lock().unwrap_or_else(|e| e.into_inner()).get(&token).cloned();
    let Some(slot) = slot else {
        let _ = peer_fail!(
            Error::NotFound,
            "memory service: process {} asked for an unknown offer; closed",
            p.peer
        );
        return Handled::Done;
    };
    let offer = slot.lock().unwrap_or_else(|e| e.into_inner());
    let answer = |fd: &OwnedFd, info: &[u8]| {
        let mut answer = Vec::with_capacity(8 + info.len());
        answer.extend_from_slice(ANSWER_MAGIC);
        answer.extend_from_slice(info);
        match crate::fabric::send(p.sock.as_fd(), &answer, &[fd.as_fd()]) {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(target: "doca_sdk", "memory service: answering process {}: {}", p.peer, e.name());
                false
            }
        }
    };
    match &*offer {
        None => Handled::Done,
        Some(Offer::Memfd { fd, info }) => {
            answer(fd, info);
            Handled::Done
        }
        Some(Offer::Kept { fd, info, keeper }) => {
            let peer = p.peer;
            if !answer(fd, info) {
                return Handled::Done;
            }
            let sock = Arc::new(p.sock);
            match keeper.accept(sock.clone(), peer) {
                Some(id) => Handled::Kept(Kept { sock, keeper: keeper.clone(), id }),
                None => Handled::Done,
            }
        }
        Some(Offer::Connection(handler)) => {
            let peer = p.peer;
            handler(p.sock, peer);
            Handled::Done
        }
    }
}

/// Connects to `name` and sends `token`: the connected socket and the service's process.
/// Gone → `NOT_FOUND` at once; another user's → `NOT_PERMITTED`.
fn request(name: ServiceName, token: &Token) -> Result<(PeerFd, PeerId)> {
    let (sock, peer, _) = request_watched(name, token)?;
    Ok((sock, peer))
}

/// [`request`], with a pidfd of the service's process when the kernel gives the socket's
/// (`SO_PEERPIDFD`) or one could be opened for its pid.
fn request_watched(name: ServiceName, token: &Token) -> Result<(PeerFd, PeerId, Option<OwnedFd>)> {
    let dir = FabricDir::open()?;
    let path = dir.via_fd(&name.file());
    let mut tries = 0;
    let sock = loop {
        match crate::fabric::connect(&path) {
            Ok(Some(sock)) => break PeerFd::socket(sock),
            Ok(None) => bail!(
                Error::NotFound,
                "the exporting process {} serves nothing (exited or revoked)",
                name.pid
            ),
            // A full backlog: the service is busy; a few short waits, no more.
            Err(Error::Again) if tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(25));
            }
            Err(e) => return Err(e),
        }
    };
    let pid = crate::fabric::peer_pid(sock.as_fd())?;
    let gone = |e: Error| fail!(Error::NotFound, "the exporting process {} is gone ({})", name.pid, e.name());
    let (peer, pidfd) = match crate::pidfd::peer_pidfd(sock.as_fd()) {
        Some(pidfd) => (PeerId::from_pidfd(&pidfd, pid).map_err(gone)?, Some(pidfd)),
        None => {
            let pidfd = rustix::process::Pid::from_raw(pid)
                .and_then(|raw| rustix::process::pidfd_open(raw, rustix::process::PidfdFlags::empty()).ok());
            (peer_of(sock.as_fd(), pid).map_err(gone)?, pidfd)
        }
    };
    let mut req = [0u8; REQUEST_LEN];
    req[..8].copy_from_slice(REQUEST_MAGIC);
    req[8..].copy_from_slice(token);
    crate::fabric::send(sock.as_fd(), &req, &[])
        .map_err(|e| fail!(Error::NotFound, "the exporting process {} closed ({})", name.pid, e.name()))?;
    Ok((sock, peer, pidfd))
}

/// Takes the memfd offered under `token` by service `name`: the memfd (unchecked: the
/// caller checks its seals and size), the offer's information and the offering process.
/// Unknown token, revoked, exited → `NOT_FOUND`; no answer in [`REPLY_WAIT`] → `TIME_OUT`.
pub fn take_memfd(name: ServiceName, token: &Token) -> Result<(PeerFd, Vec<u8>, PeerId)> {
    let (fd, info, peer, _) = take_memfd_watched(name, token)?;
    Ok((fd, info, peer))
}

/// [`take_memfd`], with a pidfd of the offering process (readable once it exits) for an
/// importer that must notice the exporter's end: `None` only where the kernel gives the
/// socket no pidfd and the process cannot be named by its pid (another PID namespace).
pub fn take_memfd_watched(
    name: ServiceName,
    token: &Token,
) -> Result<(PeerFd, Vec<u8>, PeerId, Option<OwnedFd>)> {
    let (t, _) = take_memfd_kept(name, token)?;
    Ok((t.memfd, t.info, t.peer, t.pidfd))
}

/// What an importer took from an offer of memory.
#[derive(Debug)]
pub struct Taken {
    /// The memfd (unchecked: the caller checks its seals and size, then may take it out).
    pub memfd: PeerFd,
    /// The offer's information.
    pub info: Vec<u8>,
    /// The offering process.
    pub peer: PeerId,
    /// A pidfd of it, where there is one.
    pub pidfd: Option<OwnedFd>,
}

/// [`take_memfd_watched`], and the connection (kept by the service for an
/// [`Offer::Kept`], closed by it otherwise).
pub(crate) fn take_memfd_kept(name: ServiceName, token: &Token) -> Result<(Taken, PeerFd)> {
    let (sock, peer, pidfd) = request_watched(name, token)?;
    let deadline = Instant::now() + REPLY_WAIT;
    let mut buf = [0u8; 8 + INFO_MAX + 1];
    loop {
        match crate::fabric::recv(sock.as_fd(), &mut buf)? {
            Recv::Empty => {}
            Recv::Closed => bail!(Error::NotFound, "no such offer (revoked, stale or forged)"),
            Recv::Packet { len, truncated, fds } => {
                if truncated || len < 8 || &buf[..8] != ANSWER_MAGIC || len > 8 + INFO_MAX {
                    return Err(peer_fail!(Error::NotFound, "the exporter's answer is not one"));
                }
                let Ok([fd]) = <[PeerFd; 1]>::try_from(fds) else {
                    return Err(peer_fail!(Error::NotFound, "the exporter's answer carries no memory"));
                };
                return Ok((Taken { memfd: fd, info: buf[8..len].to_vec(), peer, pidfd }, sock));
            }
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            bail!(Error::TimeOut, "the exporting process {} did not answer in {REPLY_WAIT:?}", name.pid);
        }
        let mut fds = [PollFd::new(&sock, PollFlags::IN)];
        let ts = rustix::event::Timespec::try_from(left).unwrap_or_default();
        match rustix::event::poll(&mut fds, Some(&ts)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => bail!(Error::OperatingSystem, "poll: {e}"),
        }
    }
}

/// Connects to the connection offer `token` of service `name`: the socket (the offer's
/// handler answers on it; an unknown token closes it; closed on a closing thread unless
/// taken out) and the offering process.
pub fn take_connection(name: ServiceName, token: &Token) -> Result<(PeerFd, PeerId)> {
    request(name, token)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An offered memfd reaches whoever has the token, with its information; a wrong token or
    /// a withdrawn offer is `NOT_FOUND`, and the last withdrawal removes the socket file.
    #[test]
    fn an_offered_memfd_is_taken_with_its_token_only() {
        let dir = std::env::temp_dir().join(format!("link-rdv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        std::env::set_var(crate::FABRIC_ENV, &dir);
        let fd = crate::memfd::create_sealed("rdv-test", 4096).unwrap();
        let o = offer(Offer::Memfd { fd, info: b"hello".to_vec() }).unwrap();
        let (got, info, peer) = take_memfd(o.service(), &o.token()).unwrap();
        assert_eq!(crate::memfd::check_sealed(&got, Some(4096)), Ok(4096));
        assert_eq!(info, b"hello");
        assert!(peer.is_this_process());
        let mut wrong = o.token();
        wrong[3] ^= 1;
        assert_eq!(take_memfd(o.service(), &wrong).err(), Some(Error::NotFound));
        let (name, token) = (o.service(), o.token());
        assert!(dir.join(name.file()).exists());
        drop(o);
        assert_eq!(take_memfd(name, &token).err(), Some(Error::NotFound));
        assert!(!dir.join(name.file()).exists(), "the socket file is removed with the last offer");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
