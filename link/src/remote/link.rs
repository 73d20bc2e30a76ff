//! One side of the remote link: the DPU's listener and its dispatch, the host's dials and
//! presences (the messages are in the module documentation of [`crate::remote`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::keys::Keys;
use super::stream::throttle::{warn_limited, Reason};
use super::stream::{self, Failure, Stream};
use super::{
    Config, Kind, PresenceKey, Role, HANDSHAKE_WAIT, MAX_DIALBACKS, MAX_HANDSHAKES, MAX_MESSAGE,
    MAX_STREAMS_PER_PEER, REPLY_WAIT,
};
use crate::error::{bail, fail};
use crate::error::{Error, Result};

/// The accepting end of a kind ([`Link::serve`]): the stream and the request bytes, on a
/// named thread of its own.
pub type Handler = fn(Stream, Vec<u8>);

type Ticket = crate::rendezvous::Token;

const M_OPEN: u8 = b'O';
const M_PRESENCE: u8 = b'P';
const M_TICKET: u8 = b'T';
const M_ANSWER: u8 = b'A';
const M_DIAL: u8 = b'D';
const M_NOPE: u8 = b'N';

/// The DOCA codes an answer carries (code = index + 1; 0 = ok).
const CODES: [Error; 11] = [
    Error::NotPermitted,
    Error::InUse,
    Error::Again,
    Error::InvalidValue,
    Error::NoMemory,
    Error::ConnectionReset,
    Error::NotFound,
    Error::IoFailed,
    Error::OperatingSystem,
    Error::Full,
    Error::TimeOut,
];

fn code_of(e: Error) -> u8 {
    CODES.iter().position(|c| *c == e).map_or(CODES.len() as u8, |i| i as u8 + 1)
}

fn error_of(code: u8) -> Option<Error> {
    CODES.get(usize::from(code).checked_sub(1)?).copied()
}

/// One side of the link, made from a [`Config`]. The process-wide one, from the environment,
/// is behind [`super::open`], [`super::serve`], [`super::present`] and
/// [`super::ensure_listening`]; tests and tools make their own. Dropping it stops its
/// listener and closes the presences it holds.
pub struct Link {
    shared: Arc<Shared>,
}

struct Shared {
    cfg: Config,
    keys: Option<Keys>,
    handlers: Mutex<[Option<Handler>; 5]>,
    listener: Mutex<Listening>,
    counts: Arc<Mutex<HashMap<IpAddr, usize>>>,
    pending: Arc<AtomicUsize>,
    /// DPU side: the host processes present, each with the serial of its presence stream.
    presences: Mutex<HashMap<PresenceKey, (u64, Arc<Stream>)>>,
    serial: AtomicU64,
    /// DPU side: reverse opens waiting for their dial-back.
    tickets: Mutex<HashMap<Ticket, Waiter>>,
    stop: AtomicBool,
    /// Host side: dial-backs in progress.
    dialbacks: AtomicUsize,
    /// Host side: the presences kept, by key (shared by the guards of a key).
    held: Mutex<HashMap<PresenceKey, std::sync::Weak<Held>>>,
}

struct Waiter {
    serial: u64,
    tx: SyncSender<Result<Stream>>,
}

enum Listening {
    Not,
    On(SocketAddr, Arc<TcpListener>, Option<std::thread::JoinHandle<()>>),
    Failed(Error),
}

/// One stream counted against its peer address's bound (dropped with the stream).
struct Slot {
    counts: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl Slot {
    fn take(counts: &Arc<Mutex<HashMap<IpAddr, usize>>>, ip: IpAddr) -> Option<Slot> {
        let mut c = counts.lock();
        let n = c.entry(ip).or_insert(0);
        if *n >= MAX_STREAMS_PER_PEER {
            return None;
        }
        *n += 1;
        Some(Slot { counts: counts.clone(), ip })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.counts.lock();
        if let Some(n) = c.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                c.remove(&self.ip);
            }
        }
    }
}

/// One connection between its accept and its first request, counted against
/// [`MAX_HANDSHAKES`] (dropped once the request is in).
struct Pending(Arc<AtomicUsize>);

impl Pending {
    fn take(count: &Arc<AtomicUsize>) -> Option<Pending> {
        if count.fetch_add(1, Ordering::AcqRel) >= MAX_HANDSHAKES {
            count.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Pending(count.clone()))
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A host process's presence at the listener ([`Link::present`]): kept (and re-made when
/// the link breaks) until the last guard for its key drops. Guards for one key in one
/// process share one stream (two would replace each other at the listener).
pub struct Presence {
    held: Arc<Held>,
}

/// The presence of one key: its thread stops when the last [`Presence`] drops.
struct Held {
    ctl: Arc<PresenceCtl>,
    thread: Thread,
    key: PresenceKey,
}

struct PresenceCtl {
    stop: AtomicBool,
    connected: AtomicBool,
    current: Mutex<Option<Arc<Stream>>>,
}

impl Presence {
    /// The key it announces.
    pub fn key(&self) -> PresenceKey {
        self.held.key
    }

    /// Whether its stream to the listener is up now.
    pub fn is_connected(&self) -> bool {
        self.held.ctl.connected.load(Ordering::Acquire)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.ctl.stop.store(true, Ordering::SeqCst);
        if let Some(s) = self.ctl.current.lock().take() {
            s.shutdown();
        }
        self.thread.unpark();
    }
}

impl std::fmt::Debug for Presence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Presence({:016x}, connected: {})", self.key(), self.is_connected())
    }
}

impl Link {
    /// This side of the link: loads the keys (unless plaintext). Listening starts with
    /// [`listen`](Self::listen).
    pub fn new(cfg: Config) -> Result<Link> {
        let keys = if cfg.plaintext { None } else { Some(Keys::load(&cfg.keys, cfg.role)?) };
        Ok(Link {
            shared: Arc::new(Shared {
                cfg,
                keys,
                handlers: Mutex::new([None; 5]),
                listener: Mutex::new(Listening::Not),
                counts: Arc::default(),
                pending: Arc::default(),
                presences: Mutex::default(),
                serial: AtomicU64::new(1),
                tickets: Mutex::default(),
                stop: AtomicBool::new(false),
                dialbacks: AtomicUsize::new(0),
                held: Mutex::default(),
            }),
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &Config {
        &self.shared.cfg
    }

    /// Registers the handler of `kind` (replacing an earlier one): on the DPU side for
    /// forward opens, on the host side for reverse opens.
    pub fn serve(&self, kind: Kind, handler: Handler) {
        self.shared.handlers.lock()[kind as usize] = Some(handler);
    }

    /// DPU side: binds exactly the configured address and starts the accepting thread
    /// (`doca-link-listen`); gives the bound address (the port the system chose for port 0).
    /// Idempotent; a failure is logged once and returned again by later calls:
    /// `IN_USE` (the address is taken), `NOT_FOUND` (not an address of this machine),
    /// `NOT_PERMITTED`; `INVALID_VALUE` on the host side.
    pub fn listen(&self) -> Result<SocketAddr> {
        let sh = &self.shared;
        if sh.cfg.role != Role::Dpu {
            bail!(
                Error::InvalidValue,
                "link: the host side does not listen (it connects to {})",
                sh.cfg.addr
            );
        }
        let mut l = sh.listener.lock();
        match &*l {
            Listening::On(a, _, _) => return Ok(*a),
            Listening::Failed(e) => return Err(*e),
            Listening::Not => {}
        }
        let addr = sh.cfg.addr;
        let tl = match TcpListener::bind(addr) {
            Ok(tl) => Arc::new(tl),
            Err(e) => {
                let code = match e.kind() {
                    std::io::ErrorKind::AddrInUse => Error::InUse,
                    std::io::ErrorKind::AddrNotAvailable => Error::NotFound,
                    std::io::ErrorKind::PermissionDenied => Error::NotPermitted,
                    _ => Error::OperatingSystem,
                };
                *l = Listening::Failed(code);
                bail!(code, "link: cannot listen on {addr}: {e}");
            }
        };
        let local = tl.local_addr().unwrap_or(addr);
        let (sh2, tl2) = (sh.clone(), tl.clone());
        let spawned =
            std::thread::Builder::new().name("doca-link-listen".into()).spawn(move || sh2.accept_loop(&tl2));
        let thread = match spawned {
            Ok(t) => t,
            Err(e) => {
                *l = Listening::Failed(Error::NoMemory);
                bail!(Error::NoMemory, "link: cannot start the listening thread: {e}");
            }
        };
        let how = if sh.keys.is_some() { "encrypted" } else { "NOT encrypted" };
        tracing::info!(target: "doca_sdk", "link: listening on {local} ({how})");
        *l = Listening::On(local, tl, Some(thread));
        Ok(local)
    }

    /// Opens a stream for a request of `kind` ([`super::open`]). Host side: dials the
    /// listener (`to` is not needed). DPU side: `to` names the host process.
    pub fn open(&self, kind: Kind, to: Option<PresenceKey>, request: &[u8]) -> Result<Stream> {
        let sh = &self.shared;
        match sh.cfg.role {
            Role::Host => {
                if 2 + request.len() > MAX_MESSAGE {
                    bail!(
                        Error::InvalidValue,
                        "link: a {kind} request of {} bytes (at most {})",
                        request.len(),
                        MAX_MESSAGE - 2
                    );
                }
                sh.dial(&[&[M_OPEN, kind as u8], request], &format!("{kind} request")).map_err(Failure::log)
            }
            Role::Dpu => {
                let Some(key) = to else {
                    bail!(Error::InvalidValue, "link: the DPU side opens a {kind} stream to a host process: name it (its presence key)");
                };
                sh.reverse_open(kind, key, request)
            }
        }
    }

    /// Host side: keeps a presence at the listener for `key` until the guard drops (a thread,
    /// `doca-link-pres`, reconnecting with back-off). Returns at once: the first connection
    /// is made on that thread. A key present already shares that presence (the last guard
    /// ends it). `INVALID_VALUE` on the DPU side.
    pub fn present(&self, key: PresenceKey) -> Result<Presence> {
        let sh = &self.shared;
        if sh.cfg.role != Role::Host {
            bail!(Error::InvalidValue, "link: only the host side keeps presences (this side listens)");
        }
        let mut held = sh.held.lock();
        if let Some(h) = held.get(&key).and_then(std::sync::Weak::upgrade) {
            return Ok(Presence { held: h });
        }
        let ctl = Arc::new(PresenceCtl {
            stop: AtomicBool::new(false),
            connected: AtomicBool::new(false),
            current: Mutex::new(None),
        });
        let (sh2, ctl2) = (sh.clone(), ctl.clone());
        let handle = std::thread::Builder::new()
            .name("doca-link-pres".into())
            .spawn(move || sh2.keep_presence(key, &ctl2))
            .map_err(|e| fail!(Error::NoMemory, "link: cannot start the presence thread: {e}"))?;
        let h = Arc::new(Held { ctl, thread: handle.thread().clone(), key });
        held.retain(|_, w| w.strong_count() > 0);
        held.insert(key, Arc::downgrade(&h));
        Ok(Presence { held: h })
    }

    /// The address the listener is bound to, once [`listen`](Self::listen) succeeded.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &*self.shared.listener.lock() {
            Listening::On(a, _, _) => Some(*a),
            _ => None,
        }
    }

    /// DPU side: whether host process `key` is present now.
    pub fn is_present(&self, key: PresenceKey) -> bool {
        self.shared.presences.lock().contains_key(&key)
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let sh = &self.shared;
        sh.stop.store(true, Ordering::SeqCst);
        let listening = std::mem::replace(&mut *sh.listener.lock(), Listening::Not);
        if let Listening::On(_, tl, thread) = listening {
            // A listening socket shut down for reading makes a blocked accept return; once
            // the thread is gone the socket closes with this last reference (the address is
            // free again).
            let _ = rustix::net::shutdown(&*tl, rustix::net::Shutdown::Read);
            if let Some(t) = thread {
                let _ = t.join();
            }
        }
        for (_, (_, s)) in sh.presences.lock().drain() {
            s.shutdown();
        }
    }
}

impl Shared {
    fn accept_loop(self: &Arc<Shared>, tl: &TcpListener) {
        loop {
            let got = tl.accept();
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            match got {
                Ok((sock, addr)) => {
                    let Some(pending) = Pending::take(&self.pending) else {
                        warn_limited!(
                            Reason::Crowded,
                            None,
                            "link: refused {addr}: {MAX_HANDSHAKES} handshakes in progress already"
                        );
                        continue;
                    };
                    let Some(slot) = Slot::take(&self.counts, addr.ip()) else {
                        warn_limited!(
                            Reason::Crowded,
                            Some(addr.ip()),
                            "link: refused {addr}: {MAX_STREAMS_PER_PEER} streams from {} already",
                            addr.ip()
                        );
                        continue;
                    };
                    let sh = self.clone();
                    let spawned = std::thread::Builder::new()
                        .name("doca-link-conn".into())
                        .spawn(move || sh.serve_connection(sock, addr, slot, pending));
                    if let Err(e) = spawned {
                        warn_limited!(
                            Reason::Accept,
                            Some(addr.ip()),
                            "link: refused {addr}: cannot start a thread: {e}"
                        );
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::Interrupted | std::io::ErrorKind::ConnectionAborted
                    ) => {}
                Err(e) => {
                    warn_limited!(Reason::Accept, None, "link: accept on {}: {e}", self.cfg.addr);
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    /// A connection the listener accepted: handshake, first message, dispatch.
    fn serve_connection(
        self: Arc<Shared>,
        sock: std::net::TcpStream,
        addr: SocketAddr,
        slot: Slot,
        pending: Pending,
    ) {
        let deadline = Instant::now() + HANDSHAKE_WAIT;
        let stream =
            match stream::handshake(sock, addr, self.keys.as_ref(), false, deadline, Some(Box::new(slot))) {
                Ok(s) => s,
                Err(f) if f.code == Error::ConnectionReset => {
                    tracing::debug!(target: "doca_sdk", "{}", f.why);
                    return;
                }
                Err(f) => {
                    warn_limited!(f.reason, Some(addr.ip()), "{}", f.why);
                    return;
                }
            };
        let mut first = Vec::new();
        match stream.recv_timeout(&mut first, deadline.saturating_duration_since(Instant::now())) {
            Ok(Some(true)) => {}
            Ok(None) => {
                warn_limited!(
                    Reason::Late,
                    Some(addr.ip()),
                    "link: closed {addr}: no request within {HANDSHAKE_WAIT:?}"
                );
                return;
            }
            Ok(Some(false)) | Err(_) => return,
        }
        drop(pending);
        self.dispatch(stream, first);
    }

    fn dispatch(self: Arc<Shared>, stream: Stream, mut first: Vec<u8>) {
        let addr = stream.peer().addr();
        let answer = |s: &Stream, e: Option<Error>| s.send(&[M_ANSWER, e.map_or(0, code_of)]).is_ok();
        match first.first().copied() {
            Some(M_OPEN) if first.len() >= 2 => {
                let kind = Kind::from_u8(first[1]);
                let handler = kind.and_then(|k| self.handlers.lock()[k as usize]);
                let (Some(kind), Some(handler)) = (kind, handler) else {
                    tracing::debug!(target: "doca_sdk", "link: {addr} asked for kind {}: nothing serves it here", first[1]);
                    answer(&stream, Some(Error::NotFound));
                    return;
                };
                first.drain(..2);
                let request = first;
                let shared = Arc::new(Mutex::new(Some((stream, request))));
                let taken = shared.clone();
                let spawned = std::thread::Builder::new().name(kind.thread_name().into()).spawn(move || {
                    if let Some((stream, request)) = taken.lock().take() {
                        if answer(&stream, None) {
                            handler(stream, request);
                        }
                    }
                });
                if let Err(e) = spawned {
                    warn_limited!(
                        Reason::Accept,
                        Some(addr.ip()),
                        "link: refused the {kind} request of {addr}: cannot start a thread: {e}"
                    );
                    if let Some((stream, _)) = shared.lock().take() {
                        answer(&stream, Some(Error::NoMemory));
                    }
                }
            }
            Some(M_PRESENCE) if first.len() == 9 => {
                let key = u64::from_le_bytes(first[1..9].try_into().unwrap_or_default());
                if self.stop.load(Ordering::SeqCst) {
                    return;
                }
                let stream = Arc::new(stream);
                let serial = self.serial.fetch_add(1, Ordering::Relaxed);
                // Answered and recorded under the one lock: once the host process has its
                // answer it is found (it may ask for a reverse open over another stream at
                // once), and a reverse open's Dial never goes out before the answer.
                let old = {
                    let mut presences = self.presences.lock();
                    if !answer(&stream, None) {
                        return;
                    }
                    presences.insert(key, (serial, stream.clone()))
                };
                if let Some((_, old)) = old {
                    old.shutdown();
                }
                tracing::debug!(target: "doca_sdk", "link: host process {key:016x} present from {addr}");
                self.read_presence(key, serial, &stream);
            }
            Some(M_TICKET) if first.len() == 17 => {
                let mut ticket = Ticket::default();
                ticket.copy_from_slice(&first[1..17]);
                let waiter = self.tickets.lock().remove(&ticket);
                match waiter {
                    Some(w) => {
                        if answer(&stream, None) {
                            let _ = w.tx.send(Ok(stream));
                        }
                    }
                    None => {
                        tracing::debug!(target: "doca_sdk", "link: {addr} brought an unknown ticket (late, or not ours)");
                        answer(&stream, Some(Error::NotFound));
                    }
                }
            }
            _ => {
                warn_limited!(
                    Reason::Malformed,
                    Some(addr.ip()),
                    "link: closed the stream from {addr}: a first message of {} bytes that is no request",
                    first.len()
                );
            }
        }
    }

    /// DPU side: reads a presence stream (Nope answers) until it ends, then forgets it and
    /// fails the reverse opens that waited on it: `NOT_FOUND` when the host process closed
    /// its presence (it withdrew it, having nothing left to offer remotely, or it exited),
    /// `CONNECTION_RESET` when the presence broke or a newer one of the host replaced it.
    fn read_presence(&self, key: PresenceKey, serial: u64, stream: &Arc<Stream>) {
        let mut buf = Vec::new();
        let mut withdrawn = false;
        loop {
            match stream.recv(&mut buf) {
                Ok(true) if buf.len() == 18 && buf[0] == M_NOPE => {
                    let mut ticket = Ticket::default();
                    ticket.copy_from_slice(&buf[1..17]);
                    let code = error_of(buf[17]).unwrap_or(Error::NotFound);
                    if let Some(w) = self.tickets.lock().remove(&ticket) {
                        let _ = w.tx.send(Err(code));
                    }
                }
                Ok(true) => {
                    warn_limited!(
                        Reason::Malformed,
                        Some(stream.peer().addr().ip()),
                        "link: closed the presence from {}: a message of {} bytes that is no answer",
                        stream.peer().addr(),
                        buf.len()
                    );
                    break;
                }
                Ok(false) => {
                    withdrawn = true;
                    break;
                }
                Err(_) => break,
            }
        }
        // Closed, not broken: the stream stays SHUT (a failure made it BROKEN), so that a
        // reverse open whose Dial finds it closed tells the two apart as the waiters do.
        stream.shutdown();
        // A presence replaced by a newer one of the same host process (it reconnected) did
        // not end: what waited on it failed as a broken one does.
        let replaced = {
            let mut p = self.presences.lock();
            match p.get(&key) {
                Some((s, _)) if *s == serial => {
                    p.remove(&key);
                    false
                }
                other => other.is_some(),
            }
        };
        let code = if withdrawn && !replaced { Error::NotFound } else { Error::ConnectionReset };
        self.tickets.lock().retain(|_, w| {
            if w.serial == serial {
                let _ = w.tx.send(Err(code));
                false
            } else {
                true
            }
        });
        tracing::debug!(target: "doca_sdk", "link: host process {key:016x} ({}) is no longer present", stream.peer().addr());
    }

    /// Host side: dials the listener, sends the first message `parts`, waits for the answer.
    fn dial(&self, parts: &[&[u8]], what: &str) -> std::result::Result<Stream, Failure> {
        let addr = self.cfg.addr;
        let sock = stream::dial(addr)?;
        let deadline = Instant::now() + HANDSHAKE_WAIT;
        let s = stream::handshake(sock, addr, self.keys.as_ref(), true, deadline, None)?;
        s.send_parts(parts)
            .map_err(|e| Failure::new(e, format!("link: sending the {what} to {addr}: {e}")))?;
        let mut buf = Vec::with_capacity(16);
        match s.recv_timeout(&mut buf, REPLY_WAIT) {
            Ok(Some(true)) if buf.len() == 2 && buf[0] == M_ANSWER => match buf[1] {
                0 => Ok(s),
                c => {
                    let e = error_of(c).unwrap_or(Error::ConnectionReset);
                    let why = if e == Error::NotFound { "nothing serves it there" } else { e.name() };
                    Err(Failure::new(e, format!("link: {addr} refused the {what}: {why}")))
                }
            },
            Ok(Some(true)) => Err(Failure::new(
                Error::ConnectionReset,
                format!("link: {addr} answered the {what} with a malformed message"),
            )),
            Ok(Some(false)) => Err(Failure::new(
                Error::ConnectionReset,
                format!("link: {addr} closed the stream before answering the {what}"),
            )),
            Ok(None) => Err(Failure::new(
                Error::TimeOut,
                format!("link: {addr} did not answer the {what} within {REPLY_WAIT:?}"),
            )),
            Err(e) => Err(Failure::new(e, format!("link: waiting for {addr}'s answer to the {what}: {e}"))),
        }
    }

    /// DPU side: asks host process `key` for a dial-back over its presence.
    fn reverse_open(&self, kind: Kind, key: PresenceKey, request: &[u8]) -> Result<Stream> {
        if 18 + request.len() > MAX_MESSAGE {
            bail!(
                Error::InvalidValue,
                "link: a {kind} request of {} bytes (at most {})",
                request.len(),
                MAX_MESSAGE - 18
            );
        }
        let Some((serial, presence)) = self.presences.lock().get(&key).cloned() else {
            bail!(
                Error::NotFound,
                "link: host process {key:016x} is not present (it offers nothing remotely, or its link is down)"
            );
        };
        let ticket = crate::rendezvous::new_token()?;
        let (tx, rx) = sync_channel(1);
        self.tickets.lock().insert(ticket, Waiter { serial, tx });
        if let Err(e) = presence.send_parts(&[&[M_DIAL], &ticket, &[kind as u8], request]) {
            self.tickets.lock().remove(&ticket);
            let replaced = self.presences.lock().get(&key).is_some_and(|(s, _)| *s != serial);
            if !presence.is_broken() && !replaced {
                bail!(
                    Error::NotFound,
                    "link: host process {key:016x} withdrew its presence (it offers nothing remotely now)"
                );
            }
            bail!(Error::ConnectionReset, "link: the presence of host process {key:016x} is gone ({e})");
        }
        match rx.recv_timeout(REPLY_WAIT) {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(Error::NotFound)) => bail!(
                Error::NotFound,
                "link: host process {key:016x} serves no {kind} request (or withdrew its presence: it offers nothing remotely now)"
            ),
            Ok(Err(e)) => bail!(e, "link: host process {key:016x} did not dial back for the {kind} request"),
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                self.tickets.lock().remove(&ticket);
                bail!(Error::TimeOut, "link: host process {key:016x} did not dial back within {REPLY_WAIT:?}")
            }
        }
    }

    /// Host side: the presence thread.
    fn keep_presence(self: Arc<Shared>, key: PresenceKey, ctl: &PresenceCtl) {
        let addr = self.cfg.addr;
        let mut backoff = Duration::from_millis(100);
        let mut down = false;
        while !ctl.stop.load(Ordering::SeqCst) {
            match self.dial(&[&[M_PRESENCE], &key.to_le_bytes()], "presence") {
                Ok(s) => {
                    let s = Arc::new(s);
                    *ctl.current.lock() = Some(s.clone());
                    if ctl.stop.load(Ordering::SeqCst) {
                        s.shutdown();
                        break;
                    }
                    if down {
                        tracing::info!(target: "doca_sdk", "link: host process {key:016x} is present at {addr} again");
                        down = false;
                    }
                    ctl.connected.store(true, Ordering::Release);
                    backoff = Duration::from_millis(100);
                    self.serve_presence(&s);
                    ctl.connected.store(false, Ordering::Release);
                    ctl.current.lock().take();
                    continue;
                }
                Err(f) if !down => {
                    tracing::warn!(
                        target: "doca_sdk",
                        "link: host process {key:016x} cannot reach the DPU at {addr} ({}): retrying every {:?} or so",
                        f.why,
                        Duration::from_secs(2)
                    );
                    down = true;
                }
                Err(f) => tracing::debug!(target: "doca_sdk", "{}", f.why),
            }
            let until = Instant::now() + backoff;
            while !ctl.stop.load(Ordering::SeqCst) {
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                std::thread::park_timeout(left);
            }
            backoff = (backoff * 2).min(Duration::from_secs(2));
        }
    }

    /// Host side: answers the Dial messages of a presence stream until it ends.
    fn serve_presence(self: &Arc<Shared>, presence: &Arc<Stream>) {
        let mut buf = Vec::new();
        let nope = |ticket: &Ticket, e: Error| {
            let _ = presence.send_parts(&[&[M_NOPE], ticket, &[code_of(e)]]);
        };
        loop {
            match presence.recv(&mut buf) {
                Ok(true) if buf.len() >= 18 && buf[0] == M_DIAL => {
                    let mut ticket = Ticket::default();
                    ticket.copy_from_slice(&buf[1..17]);
                    let kind = Kind::from_u8(buf[17]);
                    let handler = kind.and_then(|k| self.handlers.lock()[k as usize]);
                    let (Some(kind), Some(handler)) = (kind, handler) else {
                        tracing::debug!(target: "doca_sdk", "link: the DPU asked for kind {}: nothing serves it here", buf[17]);
                        nope(&ticket, Error::NotFound);
                        continue;
                    };
                    if self.dialbacks.fetch_add(1, Ordering::AcqRel) >= MAX_DIALBACKS {
                        self.dialbacks.fetch_sub(1, Ordering::AcqRel);
                        warn_limited!(
                            Reason::Crowded,
                            None,
                            "link: {MAX_DIALBACKS} dial-backs in progress: the DPU's {kind} request refused"
                        );
                        nope(&ticket, Error::Full);
                        continue;
                    }
                    let request = buf[18..].to_vec();
                    let (sh, pres) = (self.clone(), presence.clone());
                    let spawned =
                        std::thread::Builder::new().name(kind.thread_name().into()).spawn(move || {
                            let dialed =
                                sh.dial(&[&[M_TICKET], &ticket], &format!("dial-back for a {kind} request"));
                            sh.dialbacks.fetch_sub(1, Ordering::AcqRel);
                            match dialed {
                                Ok(s) => handler(s, request),
                                Err(f) => {
                                    tracing::debug!(target: "doca_sdk", "{}", f.why);
                                    let _ = pres.send_parts(&[&[M_NOPE], &ticket, &[code_of(f.code)]]);
                                }
                            }
                        });
                    if spawned.is_err() {
                        self.dialbacks.fetch_sub(1, Ordering::AcqRel);
                        nope(&ticket, Error::NoMemory);
                    }
                }
                Ok(true) => {
                    warn_limited!(
                        Reason::Malformed,
                        Some(presence.peer().addr().ip()),
                        "link: closed the presence to {}: a message of {} bytes that is no dial request",
                        presence.peer().addr(),
                        buf.len()
                    );
                    presence.shutdown();
                    return;
                }
                Ok(false) | Err(_) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_codes_round_trip() {
        for e in CODES {
            assert_eq!(error_of(code_of(e)), Some(e));
        }
        assert_eq!(error_of(0), None);
        assert_eq!(error_of(200), None);
    }
}
