//! The fast-path registry of one side of a connection, shared by every thread that uses the
//! connection: the consumers of this side (waiting for the peer's acknowledgement), the
//! peer's consumers as this side maps them (for its producers), the producer and consumer
//! counts, and the copy counters.
//!
//! Registration protocol, on the connection's socket (packets of [`Ctrl`]):
//!
//! ```text
//! consumer side                               producer side (the connection's owner reads)
//!   NewConsumer{id, memory, slots} + fds ──▶  charge the peer's budget, map the consumer's
//!                                            rings and the announced range of its memory
//!                                       ◀──  ConsumerAck{id} + the peer's end of this side's fast-path doorbell
//!   (consumer Running)                        new-consumer event
//!                                       ◀──  or ConsumerRefused{id, code}: beyond the budget
//!   (start fails with the code)               (or short of memory here): one log line
//!   ConsumerGone{id}                    ──▶  unmap; sends waiting for it fail; expired event
//! ```
//!
//! The peer side's producers share each remote consumer's ring ends behind a mutex, so
//! sends from any thread stay in order.

use doca_link::discard::PeerFd;
use std::collections::{HashMap, HashSet};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use doca_core::{fail, Error, Result};
use doca_link::notify::Doorbell;
use doca_mmap::budget::Hold;
use doca_mmap::RemoteMem;
use parking_lot::Mutex;

use super::FastPathStats;
use crate::proto::layout::{KIND_DONE, KIND_POST};
use crate::proto::records::{ring_slots, segment_len, DONE_LEN, POST_LEN};
use crate::proto::Ctrl;
use crate::transport::budget::{is_shortage, ConnBudget, CONSUMER_FDS};
use crate::transport::lane_lock::LaneLock;
use crate::transport::ring::{Area, End, Ring, Signal};
use doca_link::send;

/// A consumer of this side, as the connection's owner sees it.
pub(crate) struct LocalConsumer {
    pub(crate) acked: AtomicBool,
    /// The peer side's fast-path doorbell (from its acknowledgement): rung after posting when
    /// the peer's producers sleep.
    pub(crate) peer_bell: OnceLock<Doorbell>,
    /// The peer refused the consumer: the DOCA code (0 while it did not).
    pub(crate) refused: AtomicI32,
}

/// A consumer of the peer, mapped here for this side's producers.
pub(crate) struct RemoteConsumer {
    pub(crate) id: u32,
    pub(crate) one_copy: bool,
    pub(crate) mem: RemoteMem,
    /// Its ring ends and what was sent to it, behind one lock (producers of one connection
    /// may run on different threads).
    pub(crate) lanes: LaneLock<Lanes>,
    pub(crate) bell: Doorbell,
    pub(crate) alive: AtomicBool,
    /// What it holds of the peer process's budget (given back when it is unmapped).
    _budget: Option<Hold>,
}

/// Why a consumer of the peer was not mapped.
enum NotMapped {
    /// The peer's fault (the connection closes).
    Broken(Error),
    /// Beyond the peer's budget or short of memory here: that consumer is refused, the
    /// connection goes on.
    Refused(Error, String),
}

impl RemoteConsumer {
    /// Charges `budget` for what a `NewConsumer` packet brought, then maps it: its rings and
    /// the announced range of its memory.
    fn open(
        (id, one_copy): (u32, bool),
        (mem_offset, mem_len): (u64, u64),
        slots: u32,
        fds: Vec<PeerFd>,
        budget: Option<&ConnBudget>,
    ) -> std::result::Result<RemoteConsumer, NotMapped> {
        let [seg, mem, bell]: [PeerFd; 3] =
            fds.try_into().map_err(|_| NotMapped::Broken(Error::InvalidValue))?;
        let (len, comp_at) = segment_len(slots).ok_or(NotMapped::Broken(Error::InvalidValue))?;
        let (mem_offset, mem_len) = (mem_offset as usize, mem_len as usize);
        let mapped =
            RemoteMem::mapped_len(mem_offset, mem_len).ok_or(NotMapped::Broken(Error::InvalidValue))?;
        let hold = match budget {
            Some(b) => {
                let what = format!("consumer {id}");
                let bytes = (len as u64).saturating_add(mapped as u64);
                Some(
                    b.account()
                        .claim(bytes, CONSUMER_FDS, &what)
                        .map_err(|r| NotMapped::Refused(r.code.into(), r.why))?,
                )
            }
            None => None,
        };
        let broken = |e: Error| {
            if is_shortage(e) {
                NotMapped::Refused(e, format!("consumer {id}: cannot map it here ({})", e.name()))
            } else {
                NotMapped::Broken(e)
            }
        };
        let rings = (slots, len, comp_at);
        let mut rc = RemoteConsumer::map(id, one_copy, (mem_offset, mem_len), rings, [seg, mem, bell])
            .map_err(broken)?;
        rc._budget = hold;
        Ok(rc)
    }

    /// Maps a consumer's rings and memory.
    fn map(
        id: u32,
        one_copy: bool,
        (mem_offset, mem_len): (usize, usize),
        (slots, len, comp_at): (u32, usize, usize),
        [seg, mem, bell]: [PeerFd; 3],
    ) -> Result<RemoteConsumer> {
        let area = Area::open(seg, len)?;
        let n = ring_slots(slots);
        let post = Ring::attach_sequenced(&area, 0, n, POST_LEN, End::Consumer, KIND_POST)?;
        let comp = Ring::attach_sequenced(&area, comp_at, n, DONE_LEN, End::Producer, KIND_DONE)?;
        let mem = RemoteMem::open(mem, mem_offset, mem_len)?;
        Ok(RemoteConsumer {
            id,
            one_copy,
            mem,
            lanes: LaneLock::new(Lanes { post, done: comp, sends: 0, bytes: 0 }),
            bell: Doorbell::from_peer(bell)?,
            alive: AtomicBool::new(true),
            _budget: None,
        })
    }
}

/// A remote consumer's ring ends, and the sends written into its buffers (counted under the
/// lock that every send takes anyway: no atomic per message).
pub(crate) struct Lanes {
    /// The posted-buffer ring, consumer end.
    pub(crate) post: Ring,
    /// The completion ring, producer end.
    pub(crate) done: Ring,
    pub(crate) sends: u64,
    pub(crate) bytes: u64,
}

/// Copy counters (see [`FastPathStats`]); the sends of remote consumers that went away are
/// folded in here.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) one_copy: AtomicU64,
    pub(crate) staged: AtomicU64,
    pub(crate) staged_copies: AtomicU64,
    pub(crate) bytes: AtomicU64,
}

/// What a control packet from the peer amounts to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum PeerEvent {
    /// The peer started consumer `id` (the new-consumer event).
    NewConsumer(u32),
    /// The peer's consumer `id` is gone (the expired-consumer event).
    ExpiredConsumer(u32),
    /// The peer's consumer was refused (the code, and why, naming the peer and the budget):
    /// the peer was told, the connection goes on.
    Refused(Error, String),
    /// The peer broke the protocol (why): the connection must close.
    Violation(String),
}

/// One side's fast-path state of a connection.
pub(crate) struct Registry {
    side: u32,
    next_id: AtomicU32,
    /// The connection's socket (shared with its link), for control packets from any thread.
    sock: Option<Arc<PeerFd>>,
    /// Tells the peer a packet waits (so its busy side reads it at once).
    signal: Option<Signal>,
    /// Rung by the peer's consumers when they post while this side's producers sleep: this
    /// side's end of a socket pair made for this connection alone.
    pub(crate) bell: Doorbell,
    /// The other end, handed to the peer with each consumer acknowledgement (the same
    /// socket each time: the peer's consumers all live in the one process at the other end
    /// of this connection). The peer holds it too, and could bind it and have files sent to
    /// it: closed on a closing thread.
    bell_theirs: PeerFd,
    pub(crate) local: Mutex<HashMap<u32, Arc<LocalConsumer>>>,
    pub(crate) remote: Mutex<HashMap<u32, Arc<RemoteConsumer>>>,
    /// Remote consumers gone while a producer may still hold them: their sends are folded
    /// into `counters` once nobody does.
    retired: Mutex<Vec<Arc<RemoteConsumer>>>,
    /// The peer's consumers announced and not destroyed (a stopped one keeps its place):
    /// what the new- and expired-consumer events have told the application.
    announced: Mutex<HashSet<u32>>,
    /// Producers and consumers of this side that exist (created, not yet dropped).
    pub(crate) producers: AtomicU32,
    pub(crate) consumers: AtomicU32,
    pub(crate) counters: Counters,
    /// How many consumers the peer may have registered at once (its own cap per connection).
    max_remote: usize,
    /// How many buffers one of the peer's consumers may have posted at once (its tasks, at
    /// most `caps::MAX_FAST_PATH_TASKS`): what its rings are sized by.
    max_slots: u32,
    /// What the connection holds of its peer process's budget (none for a connection that
    /// never came up).
    budget: Option<ConnBudget>,
}

impl Registry {
    /// The registry of a connection whose socket (shared) is `sock` (none for a
    /// connection that never came up), whose peer may register `max_remote` consumers of
    /// `max_slots` buffers each at most.
    pub(crate) fn new(
        is_server: bool,
        sock: Option<(Arc<PeerFd>, Signal)>,
        budget: Option<ConnBudget>,
        (max_remote, max_slots): (u32, u32),
    ) -> Result<Registry> {
        let (sock, signal) = match sock {
            Some((s, g)) => (Some(s), Some(g)),
            None => (None, None),
        };
        let (bell, bell_theirs) = Doorbell::pair()?;
        Ok(Registry {
            side: if is_server { 1 } else { 2 },
            next_id: AtomicU32::new(0),
            sock,
            signal,
            bell,
            bell_theirs,
            local: Mutex::new(HashMap::new()),
            remote: Mutex::new(HashMap::new()),
            retired: Mutex::new(Vec::new()),
            announced: Mutex::new(HashSet::new()),
            producers: AtomicU32::new(0),
            consumers: AtomicU32::new(0),
            counters: Counters::default(),
            max_remote: max_remote as usize,
            max_slots,
            budget,
        })
    }

    /// Counts one more producer or consumer in `count`; `NO_MEMORY` once it holds `max`
    /// (`caps::MAX_PRODUCERS`, `caps::MAX_CONSUMERS`). The context's drop gives it back.
    pub(crate) fn claim(count: &AtomicU32, max: u32, what: &str) -> Result<()> {
        match count.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1)) {
            Ok(_) => Ok(()),
            Err(_) => {
                Err(fail!(Error::NoMemory, "cc {what}: the connection already has its maximum of {max}"))
            }
        }
    }

    /// An id for a new consumer or producer of this side: unique on the connection (the
    /// server's are odd, the client's even), never 0.
    pub(crate) fn new_id(&self) -> u32 {
        self.next_id.fetch_add(1, Ordering::Relaxed) * 2 + self.side
    }

    /// Cuts the link (a fault plan's `link.drop` at a fast-path send, from any thread): the
    /// socket is shut both ways, as the peer's death leaves it. The owner reads its end of
    /// file and winds the connection up; so does the peer.
    pub(crate) fn cut(&self) {
        if let Some(sock) = &self.sock {
            doca_link::exchange::hang_up(sock.as_fd());
        }
    }

    /// Sends a control packet to the peer (atomic per packet, from any thread) and signals
    /// it in the shared segment, so a busy peer reads it on its next progress.
    pub(crate) fn send(&self, ctrl: &Ctrl, fds: &[BorrowedFd<'_>]) -> Result<()> {
        let sock = self.sock.as_ref().ok_or(Error::NotConnected)?;
        send(sock.as_fd(), &ctrl.encode(), fds)?;
        if let Some(signal) = &self.signal {
            signal.bump();
        }
        Ok(())
    }

    /// Handles a control packet from the peer (read by the connection's owner). A peer that
    /// registers more consumers than the cap, or hands over rings, memory or doorbells this
    /// side cannot use, breaks the protocol: a correct peer never does.
    pub(crate) fn on_packet(&self, ctrl: Ctrl, fds: Vec<PeerFd>) -> Option<PeerEvent> {
        match ctrl {
            Ctrl::NewConsumer { id, one_copy, mem_offset, mem_len, slots } => {
                let known = self.announced.lock().contains(&id);
                if !known && self.announced.lock().len() >= self.max_remote {
                    let why = format!("more than {} consumers registered", self.max_remote);
                    return Some(PeerEvent::Violation(why));
                }
                // Its rings are mapped here, sized by its buffer count: a count beyond what
                // a consumer can post would map as much as the peer likes.
                if slots == 0 || slots > self.max_slots {
                    let why = format!("consumer {id} with {slots} buffers (1..={} allowed)", self.max_slots);
                    return Some(PeerEvent::Violation(why));
                }
                let opened = RemoteConsumer::open(
                    (id, one_copy),
                    (mem_offset, mem_len),
                    slots,
                    fds,
                    self.budget.as_ref(),
                );
                let rc = match opened {
                    Ok(rc) => rc,
                    Err(NotMapped::Broken(e)) => {
                        return Some(PeerEvent::Violation(format!("unusable consumer {id} ({})", e.name())));
                    }
                    Err(NotMapped::Refused(code, why)) => {
                        // An earlier run of it is gone too: it would not run with the new rings.
                        self.retire_id(id);
                        if let Err(e) = self.send(&Ctrl::ConsumerRefused { id, status: code.code() }, &[]) {
                            tracing::debug!(target: "doca_sdk", "cannot refuse consumer {id}: {e}");
                        }
                        return Some(PeerEvent::Refused(code, why));
                    }
                };
                {
                    // Under the `retired` lock, as every move out of `remote`: a reader of the
                    // counters finds the old consumer in one of the two.
                    let mut retired = self.retired.lock();
                    let old = self.remote.lock().insert(id, Arc::new(rc));
                    if let Some(old) = old {
                        self.retire(&mut retired, old);
                    }
                }
                let acked = self.send(&Ctrl::ConsumerAck { id }, &[self.bell_theirs.as_fd()]);
                if let Err(e) = acked {
                    tracing::debug!(target: "doca_sdk", "cannot acknowledge consumer {id}: {e}");
                }
                // A consumer that starts again after a stop is the same consumer: no new event.
                (!known && self.announced.lock().insert(id)).then_some(PeerEvent::NewConsumer(id))
            }
            Ctrl::ConsumerAck { id } => {
                let bell = fds.into_iter().next().map(Doorbell::from_peer);
                let local = self.local.lock();
                let lc = local.get(&id)?;
                match bell {
                    Some(Ok(bell)) => {
                        let _ = lc.peer_bell.set(bell);
                        lc.acked.store(true, Ordering::Release);
                        None
                    }
                    _ => Some(PeerEvent::Violation(format!(
                        "acknowledgement of consumer {id} without a usable doorbell"
                    ))),
                }
            }
            Ctrl::ConsumerPaused { id } => {
                self.retire_id(id);
                None
            }
            Ctrl::ConsumerRefused { id, status } => {
                if let Some(lc) = self.local.lock().get(&id) {
                    lc.refused.store(status, Ordering::Release);
                }
                None
            }
            Ctrl::ConsumerGone { id } => {
                self.retire_id(id);
                self.announced.lock().remove(&id).then_some(PeerEvent::ExpiredConsumer(id))
            }
        }
    }

    /// The connection ended: every remote consumer is gone.
    pub(crate) fn shut(&self) {
        let mut retired = self.retired.lock();
        let gone: Vec<_> = self.remote.lock().drain().map(|(_, rc)| rc).collect();
        for rc in gone {
            self.retire(&mut retired, rc);
        }
    }

    /// The peer's consumer `id` went away (stopped or destroyed).
    fn retire_id(&self, id: u32) {
        let mut retired = self.retired.lock();
        let rc = self.remote.lock().remove(&id);
        if let Some(rc) = rc {
            self.retire(&mut retired, rc);
        }
    }

    /// A remote consumer went away: producers see it dead; its sends stay counted (moved to
    /// `retired`, whose lock the caller took before taking it out of `remote`).
    fn retire(&self, retired: &mut Vec<Arc<RemoteConsumer>>, rc: Arc<RemoteConsumer>) {
        rc.alive.store(false, Ordering::Release);
        retired.push(rc);
        self.fold(retired);
    }

    /// Folds the sends of retired consumers that no producer holds any more into `counters`
    /// (under the `retired` lock, so that a reader of the counters counts each send once).
    fn fold(&self, retired: &mut Vec<Arc<RemoteConsumer>>) {
        retired.retain(|rc| {
            if Arc::strong_count(rc) > 1 {
                return true;
            }
            let lanes = rc.lanes.lock();
            let c = &self.counters;
            let sends = if rc.one_copy { &c.one_copy } else { &c.staged };
            sends.fetch_add(lanes.sends, Ordering::Relaxed);
            c.bytes.fetch_add(lanes.bytes, Ordering::Relaxed);
            false
        });
    }

    /// Whether the peer has consumers announced on this connection.
    pub(crate) fn has_announced(&self) -> bool {
        !self.announced.lock().is_empty()
    }

    /// The peer's consumers still announced, forgotten now (the connection ended: each gets
    /// its expired-consumer event).
    pub(crate) fn expire_all(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self.announced.lock().drain().collect();
        ids.sort_unstable();
        ids
    }

    /// The counters.
    pub(crate) fn stats(&self) -> FastPathStats {
        let mut retired = self.retired.lock();
        self.fold(&mut retired);
        let c = &self.counters;
        let mut stats = FastPathStats {
            one_copy_sends: c.one_copy.load(Ordering::Relaxed),
            staged_sends: c.staged.load(Ordering::Relaxed),
            staged_copies: c.staged_copies.load(Ordering::Relaxed),
            bytes: c.bytes.load(Ordering::Relaxed),
        };
        let live: Vec<Arc<RemoteConsumer>> = self.remote.lock().values().cloned().collect();
        for rc in live.iter().chain(retired.iter()) {
            let lanes = rc.lanes.lock();
            *if rc.one_copy { &mut stats.one_copy_sends } else { &mut stats.staged_sends } += lanes.sends;
            stats.bytes += lanes.bytes;
        }
        stats
    }
}
