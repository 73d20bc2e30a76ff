//! The fast path across the TCP link: consumers of one side fed by producers of the other,
//! with the bytes copied in by the consumer side's library.
//!
//! Locally a producer maps its peer's consumer — its two rings and its memory — and writes
//! into the posted buffers. Across the link each side's stand-in ([`super::remote`]) plays
//! the missing half:
//!
//! | side | the stand-in holds | it does |
//! |------|--------------------|---------|
//! | the consumer's | a **feed**: the consumer's rings and memory, mapped as a local producer side would map them | forwards each posted buffer (`POST`), writes the bytes of each completion (`DATA`, `DONE`) into the posted buffer and publishes the completion record |
//! | the producer's | a **mirror**: a consumer of its own making — rings, shared memory of the announced size, a doorbell — announced to the local application as the peer's consumer | publishes each forwarded post in the mirror's post ring; sends the bytes the local producers wrote into the mirror and their completion records back |
//!
//! Stream messages (inside the connection's `CTRL` messages, little-endian):
//!
//! | message | way | fields |
//! |---------|-----|--------|
//! | `NEW` | consumer side → producer side | id u32, slots u32, mem_len u64 |
//! | `ACK` / `REFUSED` | producer side → consumer side | id u32 (, status i32) |
//! | `GONE` / `PAUSED` | consumer side → producer side | id u32 |
//! | `POST` | consumer side → producer side | id u32, token u64, offset u64, room u64 |
//! | `DATA` | producer side → consumer side | id u32, token u64, at u64, bytes (pieces of a large send) |
//! | `DONE` | producer side → consumer side | id u32, the completion record, the last bytes of the send |
//!
//! The registration packets the applications exchange on their sockets (`NewConsumer`,
//! `ConsumerAck`, …) are those of a local connection, with the stand-in's own rings, memory
//! and doorbells. A post is the peer's word: its room is checked against the consumer's
//! memory, and a completion against the room of the post it fills, before a byte is written.
//!
//! Each feed and mirror has one thread (the one that reads a ring the application writes:
//! posts on the consumer's side, completions on the producer's), sleeping on its doorbell;
//! what comes from the stream is handled by the connection's down thread.

use doca_link::discard::PeerFd;
use std::collections::HashMap;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use doca_core::{Error, Result};
use doca_link::notify::{Doorbell, EventFd};
use doca_link::remote::{Stream, MAX_MESSAGE};
use doca_link::send;
use doca_mmap::{RemoteMem, SharedMem};
use parking_lot::Mutex;
use rustix::event::{PollFd, PollFlags};

use super::ring::{Area, End, Ring, Signal};
use crate::proto::handshake::MAX_QUEUE;
use crate::proto::layout::{KIND_DONE, KIND_POST};
use crate::proto::records::{ring_slots, segment_len, Done, Post, DONE_LEN, POST_LEN};
use crate::proto::Ctrl;

/// The connection's `CTRL` stream message type (see [`super::remote`]).
pub(super) const CTRL: u8 = 2;

const NEW: u8 = 1;
const ACK: u8 = 2;
const REFUSED: u8 = 3;
const GONE: u8 = 4;
const PAUSED: u8 = 5;
const POST: u8 = 6;
const DATA: u8 = 7;
const DONE: u8 = 8;

/// The most memory a peer's consumer may announce across the link (the mirror is that big).
pub const MAX_MIRROR: u64 = 1 << 32;
/// Bytes of payload one stream message carries (the rest of a send goes in `DATA` pieces).
const PIECE: usize = MAX_MESSAGE - 64;

/// The fast-path state of one relayed connection, shared by its two pump threads.
pub(super) struct Fast {
    who: String,
    stream: Arc<Stream>,
    /// The local connection's socket (packets to the application) and its signal.
    sock: Arc<PeerFd>,
    signal: Signal,
    /// This side's application's consumers, fed from the peer.
    feeds: Mutex<HashMap<u32, Arc<Feed>>>,
    /// The peer's consumers, mirrored here.
    mirrors: Mutex<HashMap<u32, Arc<Mirror>>>,
}

/// A running relay's thread and what stops it.
struct Worker {
    stop: EventFd,
    done: AtomicBool,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Worker {
    fn new() -> Result<Worker> {
        Ok(Worker { stop: EventFd::new()?, done: AtomicBool::new(false), thread: Mutex::new(None) })
    }

    fn stop(&self) {
        self.done.store(true, Ordering::Release);
        self.stop.ring();
        let t = self.thread.lock().take();
        if let Some(t) = t {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }

    fn stopped(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}

/// A consumer of this side's application, as its stand-in holds it.
struct Feed {
    id: u32,
    post: Mutex<Ring>,
    done: Mutex<Ring>,
    mem: RemoteMem,
    /// The consumer's doorbell: rung after completions when it sleeps.
    app_bell: Doorbell,
    /// Rung by the consumer after posting (the end handed over with the acknowledgement).
    bell: Doorbell,
    bell_theirs: PeerFd,
    /// Posts forwarded and not completed: token → (offset, room).
    posts: Mutex<HashMap<u64, (u64, u64)>>,
    worker: Worker,
}

/// A consumer of the peer, mirrored here for this side's producers.
struct Mirror {
    id: u32,
    post: Mutex<Ring>,
    done: Mutex<Ring>,
    mem: SharedMem,
    /// The producer side's fast-path doorbell, from the application's acknowledgement.
    app_bell: OnceLock<Doorbell>,
    /// Rung by the application's producers after completions.
    bell: Doorbell,
    posts: Mutex<HashMap<u64, (u64, u64)>>,
    worker: Worker,
    /// Keeps the done ring in the exit flush while the mirror lives.
    _flush: Arc<super::ring::Probe>,
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

impl Fast {
    pub(super) fn new(who: &str, stream: Arc<Stream>, sock: Arc<PeerFd>, signal: Signal) -> Arc<Fast> {
        Arc::new(Fast {
            who: who.to_owned(),
            stream,
            sock,
            signal,
            feeds: Mutex::new(HashMap::new()),
            mirrors: Mutex::new(HashMap::new()),
        })
    }

    /// Stops every feed and mirror (the connection is over).
    pub(super) fn close(&self) {
        let feeds: Vec<_> = self.feeds.lock().drain().map(|(_, f)| f).collect();
        for f in feeds {
            f.worker.stop();
        }
        let mirrors: Vec<_> = self.mirrors.lock().drain().map(|(_, m)| m).collect();
        for m in mirrors {
            m.worker.stop();
        }
    }

    fn to_app(&self, ctrl: &Ctrl, fds: &[std::os::fd::BorrowedFd<'_>]) -> Result<()> {
        send(self.sock.as_fd(), &ctrl.encode(), fds)?;
        self.signal.bump();
        Ok(())
    }

    fn to_peer(&self, parts: &[&[u8]]) -> Result<()> {
        Ok(self.stream.send_parts(parts)?)
    }

    /// [`Fast::to_peer`] with a last part read out of a mirror's memory: the borrow ends
    /// before the message can reach the peer (see [`Fast::send_done`]).
    fn to_peer_lent(&self, parts: &[&[u8]], bytes: doca_mmap::Bytes<'_>) -> Result<()> {
        Ok(self.stream.send_lent(parts, bytes)?)
    }

    /// A registration packet the local application sent (with its descriptors). `Err`: the
    /// connection must end.
    pub(super) fn from_app(self: &Arc<Self>, ctrl: Ctrl, fds: Vec<PeerFd>) -> Result<()> {
        match ctrl {
            Ctrl::NewConsumer { id, mem_offset, mem_len, slots, .. } => {
                if let Some(old) = self.feeds.lock().remove(&id) {
                    old.worker.stop();
                }
                match self.open_feed(id, (mem_offset, mem_len), slots, fds) {
                    Ok(feed) => {
                        self.feeds.lock().insert(id, feed);
                        self.to_peer(&[
                            &[CTRL, NEW],
                            &id.to_le_bytes(),
                            &slots.to_le_bytes(),
                            &mem_len.to_le_bytes(),
                        ])
                    }
                    Err(e) => {
                        tracing::warn!(target: "doca_sdk", "{}: consumer {id}: cannot relay it ({})", self.who, e.name());
                        self.to_app(&Ctrl::ConsumerRefused { id, status: e.code() }, &[])
                    }
                }
            }
            Ctrl::ConsumerGone { id } | Ctrl::ConsumerPaused { id } => {
                if let Some(f) = self.feeds.lock().remove(&id) {
                    f.worker.stop();
                }
                let what = if matches!(ctrl, Ctrl::ConsumerGone { .. }) { GONE } else { PAUSED };
                self.to_peer(&[&[CTRL, what], &id.to_le_bytes()])
            }
            Ctrl::ConsumerAck { id } => {
                let bell = fds
                    .into_iter()
                    .next()
                    .ok_or(Error::InvalidValue)
                    .and_then(|fd| Ok(Doorbell::from_peer(fd)?))?;
                let Some(m) = self.mirrors.lock().get(&id).cloned() else { return Ok(()) };
                let _ = m.app_bell.set(bell);
                self.to_peer(&[&[CTRL, ACK], &id.to_le_bytes()])?;
                // Posts may wait already.
                if m.post.lock().peer_needs_wakeup() {
                    if let Some(b) = m.app_bell.get() {
                        b.ring();
                    }
                }
                Ok(())
            }
            Ctrl::ConsumerRefused { id, status } => {
                if let Some(m) = self.mirrors.lock().remove(&id) {
                    m.worker.stop();
                }
                self.to_peer(&[&[CTRL, REFUSED], &id.to_le_bytes(), &status.to_le_bytes()])
            }
        }
    }

    fn open_feed(
        self: &Arc<Self>,
        id: u32,
        (mem_offset, mem_len): (u64, u64),
        slots: u32,
        fds: Vec<PeerFd>,
    ) -> Result<Arc<Feed>> {
        let [seg, mem, bell]: [PeerFd; 3] = fds.try_into().map_err(|_| Error::InvalidValue)?;
        if slots == 0 || slots > MAX_QUEUE {
            return Err(Error::InvalidValue);
        }
        let (len, comp_at) = segment_len(slots).ok_or(Error::InvalidValue)?;
        let area = Area::open(seg, len)?;
        let n = ring_slots(slots);
        let post = Ring::attach_sequenced(&area, 0, n, POST_LEN, End::Consumer, KIND_POST)?;
        let done = Ring::attach_sequenced(&area, comp_at, n, DONE_LEN, End::Producer, KIND_DONE)?;
        let mem = RemoteMem::open(
            mem,
            usize::try_from(mem_offset).map_err(|_| Error::InvalidValue)?,
            usize::try_from(mem_len).map_err(|_| Error::InvalidValue)?,
        )?;
        let (ours, theirs) = Doorbell::pair()?;
        let feed = Arc::new(Feed {
            id,
            post: Mutex::new(post),
            done: Mutex::new(done),
            mem,
            app_bell: Doorbell::from_peer(bell)?,
            bell: ours,
            bell_theirs: theirs,
            posts: Mutex::new(HashMap::with_capacity(n as usize)),
            worker: Worker::new()?,
        });
        let (fast, f) = (self.clone(), feed.clone());
        let t = std::thread::Builder::new()
            .name("doca-cc-link-feed".into())
            .spawn(move || fast.run_feed(&f))
            .map_err(|_| Error::NoMemory)?;
        *feed.worker.thread.lock() = Some(t);
        Ok(feed)
    }

    /// The consumer's posts → the peer.
    fn run_feed(&self, f: &Feed) {
        loop {
            if f.worker.stopped() {
                return;
            }
            let post = f.post.lock();
            while let Some(slot) = post.peek() {
                let Some(p) = slot.bytes().and_then(Post::read) else {
                    tracing::warn!(target: "doca_sdk", "{}: consumer {}: malformed post", self.who, f.id);
                    return;
                };
                if p.offset.checked_add(p.room).is_none_or(|end| end > f.mem.len() as u64) {
                    tracing::warn!(target: "doca_sdk", "{}: consumer {}: a post outside its memory", self.who, f.id);
                    return;
                }
                f.posts.lock().insert(p.token, (p.offset, p.room));
                slot.consume();
                let sent = self.to_peer(&[
                    &[CTRL, POST],
                    &f.id.to_le_bytes(),
                    &p.token.to_le_bytes(),
                    &p.offset.to_le_bytes(),
                    &p.room.to_le_bytes(),
                ]);
                if sent.is_err() {
                    return;
                }
            }
            post.forget_wakeup_check();
            if post.is_corrupt() {
                return;
            }
            if post.arm_for_data() {
                post.disarm_data();
                continue;
            }
            drop(post);
            let mut fds = [PollFd::new(&f.bell, PollFlags::IN), PollFd::new(&f.worker.stop, PollFlags::IN)];
            let _ = rustix::event::poll(&mut fds, None);
            f.bell.drain();
            f.post.lock().disarm_data();
        }
    }

    /// The mirror's completions → the peer, with the bytes the local producers wrote.
    fn run_mirror(&self, m: &Mirror) {
        loop {
            if m.worker.stopped() {
                return;
            }
            let done = m.done.lock();
            while let Some(slot) = done.peek() {
                let Some(rec) = slot.bytes().and_then(Done::read) else {
                    tracing::warn!(target: "doca_sdk", "{}: consumer {}: malformed completion", self.who, m.id);
                    return;
                };
                let Some((offset, room)) = m.posts.lock().remove(&rec.token) else {
                    tracing::warn!(target: "doca_sdk", "{}: consumer {}: a completion of no post", self.who, m.id);
                    return;
                };
                let len = u64::from(rec.len).min(room) as usize;
                let mut raw = [0u8; DONE_LEN];
                rec.write(&mut raw);
                slot.consume();
                if self.send_done(m, rec.token, offset as usize, len, &raw).is_err() {
                    return;
                }
            }
            done.forget_wakeup_check();
            if done.is_corrupt() {
                return;
            }
            if done.arm_for_data() {
                done.disarm_data();
                continue;
            }
            drop(done);
            let mut fds = [PollFd::new(&m.bell, PollFlags::IN), PollFd::new(&m.worker.stop, PollFlags::IN)];
            let _ = rustix::event::poll(&mut fds, None);
            m.bell.drain();
            m.done.lock().disarm_data();
        }
    }

    /// Sends a completion's bytes (in pieces past [`PIECE`]) and its record.
    ///
    /// Each piece is borrowed out of the mirror only while the stream gathers it: the last
    /// one's borrow ends before its message can reach the peer. The peer's consumer may post
    /// the buffer again the moment the completion lands, and this side's producer then
    /// writes into it at once: a borrow still held here would refuse that write (`IN_USE`).
    fn send_done(&self, m: &Mirror, token: u64, offset: usize, len: usize, rec: &[u8]) -> Result<()> {
        let mut at = 0usize;
        while len - at > PIECE {
            let bytes = m.mem.bytes(offset + at, PIECE)?;
            self.to_peer_lent(
                &[&[CTRL, DATA], &m.id.to_le_bytes(), &token.to_le_bytes(), &(at as u64).to_le_bytes()],
                bytes,
            )?;
            at += PIECE;
        }
        let bytes = m.mem.bytes(offset + at, len - at)?;
        self.to_peer_lent(&[&[CTRL, DONE], &m.id.to_le_bytes(), rec], bytes)
    }

    /// A fast-path message from the peer's stand-in (after the `CTRL` byte). `Err`: the
    /// connection must end.
    pub(super) fn from_stream(self: &Arc<Self>, msg: &[u8]) -> Result<()> {
        let bad = || {
            tracing::warn!(target: "doca_sdk", "{}: malformed fast-path message from {}", self.who, self.stream.peer());
            Error::InvalidValue
        };
        let (&what, body) = msg.split_first().ok_or_else(bad)?;
        let id = u32_at(body, 0).ok_or_else(bad)?;
        match what {
            NEW => {
                let slots = u32_at(body, 4).ok_or_else(bad)?;
                let mem_len = u64_at(body, 8).ok_or_else(bad)?;
                if let Some(old) = self.mirrors.lock().remove(&id) {
                    old.worker.stop();
                }
                if slots == 0 || slots > MAX_QUEUE || mem_len == 0 || mem_len > MAX_MIRROR {
                    tracing::warn!(target: "doca_sdk", "{}: consumer {id} of {slots} buffers and {mem_len} bytes refused", self.who);
                    return self.to_peer(&[
                        &[CTRL, REFUSED],
                        &id.to_le_bytes(),
                        &Error::InvalidValue.code().to_le_bytes(),
                    ]);
                }
                match self.open_mirror(id, slots, mem_len as usize) {
                    Ok(()) => Ok(()),
                    Err(e) => self.to_peer(&[&[CTRL, REFUSED], &id.to_le_bytes(), &e.code().to_le_bytes()]),
                }
            }
            ACK => {
                let Some(f) = self.feeds.lock().get(&id).cloned() else { return Ok(()) };
                self.to_app(&Ctrl::ConsumerAck { id }, &[f.bell_theirs.as_fd()])
            }
            REFUSED => {
                let status = u32_at(body, 4).ok_or_else(bad)? as i32;
                if let Some(f) = self.feeds.lock().remove(&id) {
                    f.worker.stop();
                }
                let status = if status == 0 { Error::InvalidValue.code() } else { status };
                self.to_app(&Ctrl::ConsumerRefused { id, status }, &[])
            }
            GONE | PAUSED => {
                if let Some(m) = self.mirrors.lock().remove(&id) {
                    m.worker.stop();
                }
                self.to_app(
                    &if what == GONE { Ctrl::ConsumerGone { id } } else { Ctrl::ConsumerPaused { id } },
                    &[],
                )
            }
            POST => {
                let (token, offset, room) = (
                    u64_at(body, 4).ok_or_else(bad)?,
                    u64_at(body, 12).ok_or_else(bad)?,
                    u64_at(body, 20).ok_or_else(bad)?,
                );
                let Some(m) = self.mirrors.lock().get(&id).cloned() else { return Ok(()) };
                if offset.checked_add(room).is_none_or(|end| end > m.mem.len() as u64) {
                    return Err(bad());
                }
                m.posts.lock().insert(token, (offset, room));
                let post = m.post.lock();
                let p = Post { token, offset, room };
                if !matches!(post.push_with(KIND_POST, POST_LEN, |b| p.write(b)), Ok(true)) {
                    return Err(bad());
                }
                if post.peer_needs_wakeup() {
                    if let Some(b) = m.app_bell.get() {
                        b.ring();
                    }
                }
                Ok(())
            }
            DATA => {
                let (token, at) = (u64_at(body, 4).ok_or_else(bad)?, u64_at(body, 12).ok_or_else(bad)?);
                let bytes = body.get(20..).ok_or_else(bad)?;
                let Some(f) = self.feeds.lock().get(&id).cloned() else { return Ok(()) };
                let (offset, room) = f.posts.lock().get(&token).copied().ok_or_else(bad)?;
                if at.checked_add(bytes.len() as u64).is_none_or(|end| end > room) {
                    return Err(bad());
                }
                f.mem.write((offset + at) as usize, bytes)
            }
            DONE => {
                let raw = body.get(4..4 + DONE_LEN).ok_or_else(bad)?;
                let rec = Done::read(raw).ok_or_else(bad)?;
                let tail = &body[4 + DONE_LEN..];
                let Some(f) = self.feeds.lock().get(&id).cloned() else { return Ok(()) };
                let (offset, room) = f.posts.lock().remove(&rec.token).ok_or_else(bad)?;
                let len = u64::from(rec.len);
                if len > room || (tail.len() as u64) > len {
                    return Err(bad());
                }
                f.mem.write((offset + len - tail.len() as u64) as usize, tail)?;
                let done = f.done.lock();
                if !matches!(done.push_with(KIND_DONE, DONE_LEN, |b| b.copy_from_slice(raw)), Ok(true)) {
                    return Err(bad());
                }
                if done.peer_needs_wakeup() {
                    f.app_bell.ring();
                }
                Ok(())
            }
            _ => Err(bad()),
        }
    }

    fn open_mirror(self: &Arc<Self>, id: u32, slots: u32, mem_len: usize) -> Result<()> {
        let (len, done_at) = segment_len(slots).ok_or(Error::InvalidValue)?;
        let area = Area::create("doca-cc-link-mirror", len)?;
        let n = ring_slots(slots);
        Ring::init(&area, 0, n, POST_LEN)?;
        Ring::init(&area, done_at, n, DONE_LEN)?;
        let post = Ring::attach_sequenced(&area, 0, n, POST_LEN, End::Producer, KIND_POST)?;
        let done = Ring::attach_sequenced(&area, done_at, n, DONE_LEN, End::Consumer, KIND_DONE)?;
        let mem = SharedMem::alloc(mem_len)?;
        let region = mem.share()?;
        let flush = super::exit_flush::register(&done);
        let (ours, theirs) = Doorbell::pair()?;
        let mirror = Arc::new(Mirror {
            id,
            post: Mutex::new(post),
            done: Mutex::new(done),
            mem,
            app_bell: OnceLock::new(),
            bell: ours,
            posts: Mutex::new(HashMap::with_capacity(n as usize)),
            worker: Worker::new()?,
            _flush: flush,
        });
        let ctrl = Ctrl::NewConsumer {
            id,
            one_copy: true,
            mem_offset: region.offset as u64,
            mem_len: region.len as u64,
            slots,
        };
        self.mirrors.lock().insert(id, mirror.clone());
        let (fast, m) = (self.clone(), mirror.clone());
        let t = std::thread::Builder::new()
            .name("doca-cc-link-mirror".into())
            .spawn(move || fast.run_mirror(&m))
            .map_err(|_| Error::NoMemory)?;
        *mirror.worker.thread.lock() = Some(t);
        self.to_app(&ctrl, &[area.as_fd(), region.fd.as_fd(), theirs.as_fd()])
    }
}
