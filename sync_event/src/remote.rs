//! Sync events across the remote link ([`doca_link::remote`]): host and DPU on two kernels
//! share no page, so an importer whose exporter runs on the other machine reaches the
//! exporter's page through a stream of its own ([`Kind::SyncEvent`]).
//!
//! **Which import goes over the link.** One whose export blob names a memory service that
//! is not in this machine's fabric directory, in a process where a link is configured
//! ([`remote::config`]). Otherwise the import is local, as before.
//!
//! **Who opens.** The DPU side's importer asks the host process for a stream over its
//! presence (`to` = the nonce of the exporter's memory service, which the blob carries); the
//! host side's importer dials the DPU's listener. So an exporter on the host keeps a
//! presence (keyed by that nonce) from its first export until the event is destroyed, and an
//! exporter on the DPU makes sure its process listens; both register the link's
//! handler of [`Kind::SyncEvent`].
//!
//! **The exporter's side.** The handler takes the page exactly as a local importer does
//! ([`doca_link::bells::take_board`] with the blob's token: an unknown or revoked token,
//! a dead exporter → refused), registers a doorbell on the exporter's board as a local
//! importer's engine does, and then applies the importer's requests to the page, one at a
//! time, each atomically (a load, a swap, a fetch-add: the page stays authoritative). It
//! sleeps in `poll` on the stream, its doorbell, its connection to the exporter and the
//! exporter's pidfd: no spinning, no timer — except when the board had no slot for its
//! doorbell (logged; it then looks every [`SLEEP_SLICE`] while a watch is on).
//!
//! **Messages** (little-endian; every one of exact length, anything else closes the stream
//! with a log line):
//!
//! | message | bytes | from → to | what |
//! |---------|-------|-----------|------|
//! | open request | pid (u32), nonce (u64), token (16) | importer → exporter | the blob's memory service and token |
//! | `R` | value (u64) | exporter → importer | first: the event is there, its value now |
//! | `X` | code (u8) | exporter → importer | refused, or the event is gone (destroyed, its exporter exited): the stream ends |
//! | `G` | — | importer → exporter | get |
//! | `S` | value (u64) | importer → exporter | update set (a swap) |
//! | `A` | increment (u64) | importer → exporter | update add (a fetch-add, wrapping) |
//! | `W` | — | importer → exporter | watch: answer with the value now, then tell the next change once |
//! | `V` | before, after (u64 each) | exporter → importer | the answer to each `G`, `S`, `A`, `W`, in order |
//! | `N` | value (u64) | exporter → importer | the watched value changed (at most one per `W`) |
//!
//! **The importer's side.** It keeps the last value it learned (from `R`, `V`, `N`) as its
//! mirror. A synchronous get, set or add is one request and its answer. A blocking wait asks
//! for a watch (`W`) and sleeps in `recv` on the stream until the answer, then until the
//! notification, checking its condition on each. A context's tasks are requests whose
//! answers complete them (at most [`MAX_IN_FLIGHT`] unanswered: a submit beyond waits for
//! answers); its wait tasks keep a watch on while they wait, and its engine watches the
//! stream's socket in its epoll set, so an engine asleep on its notification handle wakes
//! when the exporter's update arrives. At most one notification is ever unasked-for in
//! flight, so what an importer that reads nothing for a while leaves in its socket is
//! bounded.
//!
//! **Gone.** `X`, the end of the stream (the exporter's process exited: the kernel closed it;
//! or the link went down: keepalive, about 5 s) or a malformed message: every operation of
//! the importer answers `NOT_FOUND` from then on, its waiting tasks complete with it and its
//! blocking waits return it, as when a local exporter dies.
//!
//! **Not atomic across the link.** Each operation is atomic on the exporter's page, but a
//! wait sees the value only as notifications bring it: a value that holds for less than a
//! notification's trip may be missed by an `eq` wait (as a local waiter that wakes late may
//! miss it too), and a get answers with the value when the exporter read it, a trip ago.
//! An update is answered before the exporter's waiters are woken, but an exporter that
//! dies (or polls the value and exits) between applying an update and answering it leaves
//! the importer with `NOT_FOUND` for an update that was applied.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};

use doca_core::{fail, Error, Result, TaskId};
use doca_link::notify::Doorbell;
use doca_link::remote::{self, Kind, Presence, Role, Stream};
use doca_link::rendezvous::{ServiceName, Token};
use rustix::event::{PollFd, PollFlags};

use crate::page::{Page, LIVE};
use crate::{Cmp, Exporter, SeOps, MAX_WAKERS, SLEEP_SLICE};

/// The open request's length: pid, nonce, token.
const REQUEST_LEN: usize = 4 + 8 + 16;
const READY: u8 = b'R';
const GONE: u8 = b'X';
const GET: u8 = b'G';
const SET: u8 = b'S';
const ADD: u8 = b'A';
const WATCH: u8 = b'W';
const VALUE: u8 = b'V';
const NOTIFY: u8 = b'N';

/// Requests of one importer unanswered at most: a task submitted beyond waits for answers.
pub const MAX_IN_FLIGHT: usize = 256;
/// Importers across the link one process serves at once (a thread and a stream each).
pub const MAX_SERVED: usize = 64;
/// How long a DPU-side import waits for the exporting host process's presence to reach
/// this process's listener when it has just started listening (a presence retries every
/// 2 s at most).
pub const PRESENCE_WAIT: Duration = Duration::from_secs(3);
/// How long a synchronous operation waits for the exporter's answer.
pub const ANSWER_WAIT: Duration = remote::REPLY_WAIT;
/// Messages an importer's engine takes from the stream in one pass at most.
const PUMP_BATCH: usize = 64;
/// Requests the exporter's side answers before it looks at its other sources again.
const SERVE_BATCH: usize = 64;

/// The codes an `X` carries (code = index + 1); anything else reads as `NOT_FOUND`.
const CODES: [Error; 7] = [
    Error::NotFound,
    Error::Full,
    Error::InvalidValue,
    Error::TimeOut,
    Error::Again,
    Error::NoMemory,
    Error::NotPermitted,
];

fn code_of(e: Error) -> u8 {
    CODES.iter().position(|c| *c == e).map_or(1, |i| i as u8 + 1)
}

fn error_of(code: u8) -> Error {
    usize::from(code).checked_sub(1).and_then(|i| CODES.get(i)).copied().unwrap_or(Error::NotFound)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Whether an import of the event offered by `service` goes over the link: a link is
/// configured and the service is not in this machine's fabric directory.
pub(crate) fn is_remote(service: ServiceName) -> bool {
    remote::config().is_some() && !is_local(service)
}

/// Whether `service`'s socket is in this machine's fabric directory (a directory that
/// cannot be opened counts as local: the local import then says what is wrong).
fn is_local(service: ServiceName) -> bool {
    match doca_link::fabric::fabric_dir() {
        Ok(d) => std::fs::symlink_metadata(d.join(service.file())).is_ok(),
        Err(_) => true,
    }
}

/// The exporter's side, at its first export: registers the handler and, on the host,
/// keeps a presence for the memory service's `nonce` (the guard lives as long as the
/// offer); on the DPU, makes sure this process listens. `None` without a link (or when
/// the presence cannot be kept: logged).
pub(crate) fn offered(nonce: u64) -> Option<Presence> {
    let cfg = remote::config()?;
    register();
    match cfg.role {
        Role::Host => match remote::present(nonce) {
            Ok(p) => Some(p),
            Err(e) => {
                tracing::warn!(
                    target: "doca_sdk",
                    "sync event: no presence at the DPU ({}): importers across the link cannot reach this event",
                    e.name()
                );
                None
            }
        },
        Role::Dpu => {
            remote::ensure_listening();
            None
        }
    }
}

/// Registers [`serve`] as the link's handler of [`Kind::SyncEvent`] (once per process).
pub(crate) fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| remote::serve(Kind::SyncEvent, serve));
}

/// What an importer waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pending {
    /// A synchronous call of this thread.
    Call,
    Get(TaskId),
    Set(TaskId),
    Add(TaskId),
    /// The answer to a watch.
    Watch,
}

/// An importer's watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Watching {
    /// None asked for: the mirror may be old.
    Off,
    /// Asked, not answered yet.
    Asked,
    /// On: the exporter tells the next change (the mirror is the value now, a trip ago).
    On,
}

/// One message of the exporter.
#[derive(Clone, Copy, Debug)]
enum Msg {
    Value { before: u64, after: u64 },
    Notify(u64),
    Gone,
}

enum How {
    Now,
    Block,
    Until(Instant),
}

/// An importer's stream to the exporter's side.
pub(crate) struct Wire {
    stream: Stream,
    /// The exporter's pid, as it sees itself (for messages).
    pub(crate) pid: u32,
    pending: RefCell<VecDeque<Pending>>,
    watching: Cell<Watching>,
    lost: Cell<bool>,
    buf: RefCell<Vec<u8>>,
}

impl Wire {
    /// Opens the stream for the event `service` offers under `token` and waits for the
    /// exporter's first answer: the wire and the value now. `NOT_FOUND` when nothing
    /// serves it (the exporter destroyed it, exited, or is not present), or as the exporter
    /// refused; `TIME_OUT`, `CONNECTION_RESET` as the link says.
    pub(crate) fn open(service: ServiceName, token: &Token, what: &str) -> Result<(Wire, u64)> {
        let pid = service.pid;
        let Some(cfg) = remote::config() else {
            return Err(fail!(Error::NotFound, "sync event {what}: no link to the other side"));
        };
        let mut req = Vec::with_capacity(REQUEST_LEN);
        req.extend_from_slice(&pid.to_le_bytes());
        req.extend_from_slice(&service.nonce.to_le_bytes());
        req.extend_from_slice(token);
        let to = match cfg.role {
            Role::Host => None,
            Role::Dpu => {
                remote::ensure_listening();
                let until = Instant::now() + PRESENCE_WAIT;
                while !remote::is_present(service.nonce) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Some(service.nonce)
            }
        };
        let stream = remote::open(Kind::SyncEvent, to, &req).map_err(|e| {
            // A presence that resets is the exporter's process itself going (killed while
            // this side had not noticed yet): no such live event, as after its death.
            let code = match (to, Error::from(e)) {
                (Some(_), Error::ConnectionReset) => Error::NotFound,
                (_, code) => code,
            };
            fail!(
                code,
                "sync event {what}: the exporter (process {pid} on the other side) cannot be reached over the link ({})",
                e.name()
            )
        })?;
        let mut buf = Vec::with_capacity(32);
        let first = stream.recv_timeout(&mut buf, ANSWER_WAIT);
        let value = match (first, buf.first().copied(), buf.len()) {
            (Ok(Some(true)), Some(READY), 9) => u64_at(&buf, 1),
            (Ok(Some(true)), Some(GONE), 2) => {
                let e = error_of(buf[1]);
                return Err(fail!(
                    e,
                    "sync event {what}: the exporter's side (process {pid} on the other side) refused: no such live event (destroyed, exited or forged)"
                ));
            }
            (Ok(None), _, _) => {
                return Err(fail!(
                    Error::TimeOut,
                    "sync event {what}: the exporter's side did not answer within {ANSWER_WAIT:?}"
                ))
            }
            (Ok(Some(true)), _, n) => {
                return Err(fail!(
                Error::NotFound,
                "sync event {what}: the exporter's side ({}) answered with a malformed message ({n} bytes)",
                stream.peer()
            ))
            }
            (Ok(Some(false)) | Err(_), _, _) => {
                return Err(fail!(
                    Error::NotFound,
                    "sync event {what}: the exporter's side closed the stream before answering"
                ))
            }
        };
        tracing::debug!(target: "doca_sdk", "sync event imported across the link from process {pid} ({})", stream.peer());
        let wire = Wire {
            stream,
            pid,
            pending: RefCell::new(VecDeque::new()),
            watching: Cell::new(Watching::Off),
            lost: Cell::new(false),
            buf: RefCell::new(buf),
        };
        Ok((wire, value))
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.lost.get()
    }

    /// A duplicate of the stream's socket, for the engine's epoll set.
    pub(crate) fn watchable(&self) -> Result<OwnedFd> {
        self.stream
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| fail!(Error::OperatingSystem, "sync event: dup: {e}"))
    }

    fn lose(&self) {
        if !self.lost.replace(true) {
            self.stream.shutdown();
        }
    }

    /// Sends one request: `false` when the stream is gone.
    fn send(&self, parts: &[&[u8]]) -> bool {
        if self.lost.get() {
            return false;
        }
        match self.stream.send_parts(parts) {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(target: "doca_sdk", "sync event across the link: sending to process {}: {}", self.pid, e.name());
                self.lose();
                false
            }
        }
    }

    /// The next message: `None` when none came (`Now`) or in time (`Until`); `Gone` when
    /// the stream ended or brought something malformed.
    fn recv(&self, how: How) -> Option<Msg> {
        if self.lost.get() {
            return Some(Msg::Gone);
        }
        let mut buf = self.buf.borrow_mut();
        let got = match how {
            How::Now => self.stream.try_recv(&mut buf),
            How::Block => self.stream.recv(&mut buf).map(Some),
            How::Until(t) => self.stream.recv_timeout(&mut buf, t.saturating_duration_since(Instant::now())),
        };
        let msg = match got {
            Ok(None) => return None,
            Ok(Some(true)) => match (buf.first().copied(), buf.len()) {
                (Some(VALUE), 17) => Msg::Value { before: u64_at(&buf, 1), after: u64_at(&buf, 9) },
                (Some(NOTIFY), 9) => Msg::Notify(u64_at(&buf, 1)),
                (Some(GONE), 2) => {
                    tracing::debug!(target: "doca_sdk", "sync event across the link: process {} ended the event ({})", self.pid, error_of(buf[1]).name());
                    Msg::Gone
                }
                (_, n) => {
                    tracing::error!(
                        target: "doca_sdk",
                        "sync event across the link: the exporter's side ({}) sent a malformed message ({n} bytes); the event is taken as gone",
                        self.stream.peer()
                    );
                    Msg::Gone
                }
            },
            Ok(Some(false)) => Msg::Gone,
            Err(e) => {
                tracing::debug!(target: "doca_sdk", "sync event across the link: the stream to process {} broke: {}", self.pid, e.name());
                Msg::Gone
            }
        };
        if matches!(msg, Msg::Gone) {
            self.lose();
        }
        Some(msg)
    }
}

/// The importer's operations (the fields are [`SeOps`]'s: this module is its child).
impl SeOps {
    /// Applies one message of the exporter; the answer to a synchronous call is returned.
    fn apply(&self, w: &Wire, m: Msg) -> Option<(u64, u64)> {
        match m {
            Msg::Value { before, after } => {
                self.page.header().value.store(after, SeqCst);
                let front = w.pending.borrow_mut().pop_front();
                match front {
                    Some(Pending::Call) => return Some((before, after)),
                    Some(Pending::Get(id)) => {
                        self.get.with_payload(id, |p| p.value = after);
                        self.get.finish(id, Ok(()));
                    }
                    Some(Pending::Set(id)) => {
                        self.set.finish(id, Ok(()));
                    }
                    Some(Pending::Add(id)) => {
                        self.add.with_payload(id, |p| p.fetched = before);
                        self.add.finish(id, Ok(()));
                    }
                    Some(Pending::Watch) => {
                        if w.watching.get() == Watching::Asked {
                            w.watching.set(Watching::On);
                        }
                    }
                    None => {
                        tracing::error!(target: "doca_sdk", "sync event across the link: process {} answered no request; the event is taken as gone", w.pid);
                        self.lost(w);
                    }
                }
            }
            Msg::Notify(v) => {
                if w.watching.get() != Watching::On {
                    tracing::error!(target: "doca_sdk", "sync event across the link: process {} sent a change nobody watched; the event is taken as gone", w.pid);
                    self.lost(w);
                    return None;
                }
                self.page.header().value.store(v, SeqCst);
                w.watching.set(Watching::Off);
            }
            Msg::Gone => self.lost(w),
        }
        None
    }

    /// The exporter is gone for good: pending tasks fail with `NOT_FOUND`, the engine stops
    /// watching the stream.
    fn lost(&self, w: &Wire) {
        w.lose();
        if self.gone.get().is_none() {
            self.gone.set(Some("destroyed it, exited, or the link to it went down"));
        }
        if let Some(wk) = self.waker.borrow_mut().as_mut() {
            wk.gone.clear();
        }
        let pending = std::mem::take(&mut *w.pending.borrow_mut());
        for p in pending {
            self.finish_pending(p, Err(Error::NotFound));
        }
        w.watching.set(Watching::Off);
    }

    fn finish_pending(&self, p: Pending, status: Result<()>) {
        match p {
            Pending::Get(id) => {
                self.get.finish(id, status);
            }
            Pending::Set(id) => {
                self.set.finish(id, status);
            }
            Pending::Add(id) => {
                self.add.finish(id, status);
            }
            Pending::Call | Pending::Watch => {}
        }
    }

    /// Applies what has arrived (a bounded batch): whether anything did.
    pub(crate) fn pump(&self, w: &Wire) -> bool {
        let mut any = false;
        for _ in 0..PUMP_BATCH {
            if w.is_lost() {
                break;
            }
            match w.recv(How::Now) {
                None => break,
                Some(m) => {
                    any = true;
                    self.apply(w, m);
                }
            }
        }
        any
    }

    fn gone_error(&self, w: &Wire, what: &str) -> Error {
        fail!(
            Error::NotFound,
            "sync event {what}: its exporter (process {}, across the link) {}",
            w.pid,
            self.gone.get().unwrap_or("is gone")
        )
    }

    /// A synchronous request and its answer (before, after); answers to earlier tasks are
    /// applied on the way.
    pub(crate) fn call(&self, w: &Wire, msg: &[&[u8]], what: &str) -> Result<(u64, u64)> {
        if w.is_lost() {
            self.lost(w);
            return Err(self.gone_error(w, what));
        }
        w.pending.borrow_mut().push_back(Pending::Call);
        if !w.send(msg) {
            self.lost(w);
            return Err(self.gone_error(w, what));
        }
        let until = Instant::now() + ANSWER_WAIT;
        loop {
            match w.recv(How::Until(until)) {
                None => {
                    self.lost(w);
                    return Err(fail!(
                        Error::TimeOut,
                        "sync event {what}: process {} did not answer within {ANSWER_WAIT:?}; the event is taken as gone",
                        w.pid
                    ));
                }
                Some(m) => {
                    if let Some(answer) = self.apply(w, m) {
                        return Ok(answer);
                    }
                    if w.is_lost() {
                        return Err(self.gone_error(w, what));
                    }
                }
            }
        }
    }

    pub(crate) fn remote_get(&self, w: &Wire) -> Result<u64> {
        self.call(w, &[&[GET]], "get").map(|(_, v)| v)
    }

    pub(crate) fn remote_set(&self, w: &Wire, value: u64) -> Result<()> {
        self.call(w, &[&[SET], &value.to_le_bytes()], "update_set").map(|_| ())
    }

    pub(crate) fn remote_add(&self, w: &Wire, inc: u64) -> Result<u64> {
        self.call(w, &[&[ADD], &inc.to_le_bytes()], "update_add").map(|(before, _)| before)
    }

    /// Asks for a watch unless one is on or asked for.
    fn ask_watch(&self, w: &Wire) {
        if w.watching.get() != Watching::Off || w.is_lost() {
            return;
        }
        w.pending.borrow_mut().push_back(Pending::Watch);
        w.watching.set(Watching::Asked);
        if !w.send(&[&[WATCH]]) {
            self.lost(w);
        }
    }

    /// A blocking wait: sleeps in `recv` on the stream until the condition holds on a
    /// value the exporter sent (the answer to a watch, or the change it told).
    pub(crate) fn remote_block(&self, w: &Wire, cmp: Cmp, val: u64, mask: u64) -> Result<()> {
        loop {
            if w.is_lost() {
                self.lost(w);
                return Err(self.gone_error(w, "wait"));
            }
            match w.watching.get() {
                Watching::Off => {
                    self.ask_watch(w);
                    continue;
                }
                Watching::On if cmp.holds(self.page.header().value.load(SeqCst), mask, val) => return Ok(()),
                _ => {}
            }
            let Some(m) = w.recv(How::Block) else { continue };
            let fresh = matches!(m, Msg::Notify(_));
            self.apply(w, m);
            if fresh && !w.is_lost() && cmp.holds(self.page.header().value.load(SeqCst), mask, val) {
                return Ok(());
            }
        }
    }

    /// A task's request (get; set or add of `arg`): its answer completes it in a later pass
    /// (or at once with `NOT_FOUND` when the exporter is gone).
    pub(crate) fn remote_submit(&self, w: &Wire, p: Pending, arg: u64) -> Result<()> {
        let arg = arg.to_le_bytes();
        let msg: &[&[u8]] = match p {
            Pending::Get(_) => &[&[GET]],
            Pending::Set(_) => &[&[SET], &arg],
            Pending::Add(_) => &[&[ADD], &arg],
            Pending::Call | Pending::Watch => return Ok(()),
        };
        while w.pending.borrow().len() >= MAX_IN_FLIGHT && !w.is_lost() {
            match w.recv(How::Until(Instant::now() + ANSWER_WAIT)) {
                Some(m) => {
                    self.apply(w, m);
                }
                None => {
                    tracing::error!(target: "doca_sdk", "sync event across the link: process {} did not answer within {ANSWER_WAIT:?}; the event is taken as gone", w.pid);
                    self.lost(w);
                }
            }
        }
        if w.is_lost() {
            self.lost(w);
            self.finish_pending(p, Err(Error::NotFound));
            return Ok(());
        }
        w.pending.borrow_mut().push_back(p);
        if !w.send(msg) {
            self.lost(w);
        }
        Ok(())
    }

    pub(crate) fn remote_needs_poll(&self, w: &Wire) -> bool {
        !self.waits.borrow().is_empty() || !w.pending.borrow().is_empty()
    }

    /// A progress pass: what arrived is applied (answers complete their tasks), then the
    /// wait tasks are checked on a fresh value (a watch on, or a message just in).
    pub(crate) fn remote_progress(&self, core: &doca_core::CtxCore, w: &Wire) -> bool {
        let was_on = w.watching.get() == Watching::On;
        let arrived = self.pump(w);
        if self.waits.borrow().is_empty() {
            return false;
        }
        if core.state() != doca_core::CtxState::Running {
            self.flush_waits(crate::FLUSH_STATUS);
            return true;
        }
        if w.is_lost() {
            let e = self.gone_error(w, "wait");
            self.flush_waits(e);
            return true;
        }
        let fresh = was_on || arrived || w.watching.get() == Watching::On;
        self.ask_watch(w);
        // Progress is a callback to run: a message that completed nothing is none (NVIDIA's
        // samples progress until it reports some, then expect their task done).
        fresh && self.complete_waits()
    }

    /// Before the engine sleeps: a watch is on while tasks wait; `true` when there is
    /// something to do already.
    pub(crate) fn remote_request_notification(&self, w: &Wire) -> bool {
        if self.waits.borrow().is_empty() && w.pending.borrow().is_empty() {
            return false;
        }
        if w.is_lost() {
            return true;
        }
        if !self.waits.borrow().is_empty() {
            self.ask_watch(w);
        }
        w.stream.has_buffered() || (w.watching.get() == Watching::On && self.waiting_satisfied())
    }
}

/// Whether a warn line about refused importers may be logged now (one a second at most).
fn warn_now() -> bool {
    static LAST: std::sync::Mutex<Option<Instant>> = std::sync::Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let now = Instant::now();
    if last.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
        return false;
    }
    *last = Some(now);
    true
}

/// Importers served at once in this process (at most [`MAX_SERVED`]).
static SERVED: remote::Quota = remote::Quota::new(MAX_SERVED);

fn refuse(stream: &Stream, e: Error) {
    let _ = stream.send(&[GONE, code_of(e)]);
    stream.shutdown();
}

/// The link's handler of [`Kind::SyncEvent`], on a thread of its own: serves one importer
/// on the other machine until it closes its stream or the event goes.
fn serve(stream: Stream, request: Vec<u8>) {
    let Some(_slot) = SERVED.take() else {
        if warn_now() {
            tracing::warn!(target: "doca_sdk", "sync event: {MAX_SERVED} importers across the link served already; {} refused (one line a second at most)", stream.peer());
        }
        return refuse(&stream, Error::Full);
    };
    if request.len() != REQUEST_LEN {
        tracing::debug!(target: "doca_sdk", "sync event: {} sent an import request of {} bytes ({REQUEST_LEN} expected); refused", stream.peer(), request.len());
        return refuse(&stream, Error::InvalidValue);
    }
    let service = ServiceName {
        pid: u32::from_le_bytes([request[0], request[1], request[2], request[3]]),
        nonce: u64_at(&request, 4),
    };
    let mut token = Token::default();
    token.copy_from_slice(&request[12..REQUEST_LEN]);
    if !is_local(service) {
        tracing::debug!(target: "doca_sdk", "sync event: {} asked for an event of process {} that this machine does not have", stream.peer(), service.pid);
        return refuse(&stream, Error::NotFound);
    }
    let (taken, link) = match doca_link::bells::take_board(service, &token) {
        Ok(t) => t,
        Err(e) => {
            tracing::debug!(target: "doca_sdk", "sync event: {} asked for no live event of process {} ({})", stream.peer(), service.pid, e.name());
            return refuse(&stream, Error::from(e));
        }
    };
    let page = match Page::from_exporter(taken.memfd, service.pid) {
        Ok(p) => p,
        Err(e) => return refuse(&stream, e),
    };
    let ex = Exporter { pid: service.pid, pidfd: taken.pidfd, link };
    let bell = match Doorbell::pair() {
        Ok((bell, ring)) => match ex.link.register(ring, MAX_WAKERS) {
            Ok(slot) => Some((slot, bell)),
            Err(e) => {
                tracing::warn!(
                    target: "doca_sdk",
                    "sync event: no doorbell slot for the importer at {} ({}): its waits look at the value every {SLEEP_SLICE:?}",
                    stream.peer(),
                    e.name()
                );
                None
            }
        },
        Err(e) => return refuse(&stream, Error::from(e)),
    };
    let mut s = Served { stream, page, ex, bell, watch: None, buf: Vec::with_capacity(32) };
    s.run();
}

/// The exporter's side of one importer across the link.
struct Served {
    stream: Stream,
    page: Page,
    ex: Exporter,
    /// Its doorbell on the exporter's board and its slot (`None`: no slot was given).
    bell: Option<(usize, Doorbell)>,
    /// The value the importer last learned while it watches.
    watch: Option<u64>,
    buf: Vec<u8>,
}

enum Next {
    Go,
    End,
}

impl Served {
    fn run(&mut self) {
        let first = self.page.header().value.load(SeqCst);
        if self.send(&[&[READY], &first.to_le_bytes()]).is_err() {
            return;
        }
        let mut look = false;
        loop {
            // The importer's requests (a bounded batch, then the other sources).
            for _ in 0..SERVE_BATCH {
                match self.stream.try_recv(&mut self.buf) {
                    Ok(Some(true)) => {
                        if let Next::End = self.request() {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Ok(Some(false)) | Err(_) => {
                        tracing::debug!(target: "doca_sdk", "sync event: the importer at {} closed its stream", self.stream.peer());
                        return;
                    }
                }
            }
            if (look || self.page.header().state.load(SeqCst) != LIVE) && self.exporter_gone() {
                tracing::debug!(target: "doca_sdk", "sync event: the event of process {} is gone: its importer at {} told", self.ex.pid, self.stream.peer());
                return refuse(&self.stream, Error::NotFound);
            }
            if let Next::End = self.tell() {
                return;
            }
            if self.stream.has_buffered() {
                continue;
            }
            look = self.sleep();
        }
    }

    fn send(&self, parts: &[&[u8]]) -> std::result::Result<(), ()> {
        self.stream.send_parts(parts).map_err(|e| {
            tracing::debug!(target: "doca_sdk", "sync event: sending to the importer at {}: {}", self.stream.peer(), e.name());
        })
    }

    fn exporter_gone(&self) -> bool {
        self.ex.exited() || self.ex.link.is_closed()
    }

    /// Applies one request of the importer and answers it.
    fn request(&mut self) -> Next {
        let h = self.page.header();
        let m = &self.buf;
        let mut updated = false;
        let (before, after) = match (m.first().copied(), m.len()) {
            (Some(GET), 1) => {
                let v = h.value.load(SeqCst);
                (v, v)
            }
            (Some(WATCH), 1) => {
                let v = h.value.load(SeqCst);
                self.watch = Some(v);
                (v, v)
            }
            (Some(SET), 9) => {
                let v = u64_at(m, 1);
                updated = true;
                (h.value.swap(v, SeqCst), v)
            }
            (Some(ADD), 9) => {
                let inc = u64_at(m, 1);
                let before = h.value.fetch_add(inc, SeqCst);
                updated = true;
                (before, before.wrapping_add(inc))
            }
            (_, n) => {
                // A peer's doing: at debug level (a hostile peer must not flood the log).
                tracing::debug!(
                    target: "doca_sdk",
                    "sync event: the importer at {} sent a malformed request ({n} bytes); its stream is closed",
                    self.stream.peer()
                );
                self.stream.shutdown();
                return Next::End;
            }
        };
        // The answer leaves before the waiters are woken: an exporter that exits as soon as
        // its wait returns (NVIDIA's samples do) has then already answered the update.
        let sent = self.send(&[&[VALUE], &before.to_le_bytes(), &after.to_le_bytes()]);
        if updated {
            crate::wake(h, || self.ex.link.ring());
        }
        match sent {
            Ok(()) => Next::Go,
            Err(()) => Next::End,
        }
    }

    /// Tells the importer the change it watches for, if it came.
    fn tell(&mut self) -> Next {
        let Some(seen) = self.watch else { return Next::Go };
        let v = self.page.header().value.load(SeqCst);
        if v == seen {
            return Next::Go;
        }
        self.watch = None;
        self.arm(false);
        match self.send(&[&[NOTIFY], &v.to_le_bytes()]) {
            Ok(()) => Next::Go,
            Err(()) => Next::End,
        }
    }

    fn arm(&self, on: bool) {
        if let Some((slot, _)) = &self.bell {
            let bit = 1u64 << *slot;
            let armed = &self.page.header().armed;
            if on {
                armed.fetch_or(bit, SeqCst);
            } else {
                armed.fetch_and(!bit, SeqCst);
            }
        }
    }

    /// Sleeps until the importer sends, the doorbell rings (while a watch is on), or the
    /// exporter's ends say something: whether those ends should be looked at.
    fn sleep(&mut self) -> bool {
        if let Some(seen) = self.watch {
            self.arm(true);
            // After arming (SeqCst): an update made before this load is seen here, a later
            // one sees the armed flag and rings.
            if self.page.header().value.load(SeqCst) != seen {
                return false;
            }
        }
        let sock = self.stream.as_fd();
        let link = self.ex.link.as_fd();
        let mut fds =
            vec![PollFd::new(&sock, PollFlags::IN), PollFd::new(&link, PollFlags::IN | PollFlags::RDHUP)];
        if let Some(pidfd) = &self.ex.pidfd {
            fds.push(PollFd::new(pidfd, PollFlags::IN));
        }
        let bell_at = fds.len();
        if let Some((_, bell)) = &self.bell {
            fds.push(PollFd::new(bell, PollFlags::IN));
        }
        let slice = rustix::event::Timespec {
            tv_sec: SLEEP_SLICE.as_secs() as i64,
            tv_nsec: SLEEP_SLICE.subsec_nanos() as _,
        };
        let timeout = if self.watch.is_some() && self.bell.is_none() { Some(&slice) } else { None };
        let look = match rustix::event::poll(&mut fds, timeout) {
            Ok(_) => fds[1..bell_at].iter().any(|f| !f.revents().is_empty()),
            Err(rustix::io::Errno::INTR) => false,
            Err(e) => {
                tracing::error!(target: "doca_sdk", "sync event: poll: {e}");
                true
            }
        };
        drop(fds);
        if let Some((_, bell)) = &self.bell {
            bell.drain();
        }
        look
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.arm(false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for e in CODES {
            assert_eq!(error_of(code_of(e)), e);
        }
        assert_eq!(error_of(0), Error::NotFound);
        assert_eq!(error_of(200), Error::NotFound);
        assert_eq!(code_of(Error::IoFailed), 1, "an unknown code is sent as NOT_FOUND");
    }
}
