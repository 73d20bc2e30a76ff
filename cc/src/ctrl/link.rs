//! One connection as its owner (server or client) sees it: the socket, the rings and the
//! peer's doorbells ([`Channel`]), the sends waiting for room, and the connection's state
//! ([`ConnState`], changed only through [`Link::set_state`]).
//!
//! Busy path: a send is written into the peer's receive ring at submit (or, when the ring is
//! full, as soon as it has room, in FIFO order); receiving reads the ring head in progress.
//! Neither makes a syscall unless the other side sleeps (then one doorbell write). An
//! orderly hang-up is a flag in the rings, seen by the peer with a load.

use doca_link::discard::PeerFd;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt::Display;
use std::os::fd::AsFd;
use std::rc::Rc;
use std::sync::Arc;

use doca_core::{fault, Error, Result, TaskId, TaskPool};
use doca_link::notify::{Doorbell, Watched};

use super::send::SendPayload;
use crate::conn::{Connection, Counter};
use crate::proto::layout::KIND_MSG;
use crate::proto::state::ConnState;
use crate::transport::channel::Channel;
use crate::transport::ring::Slot;
use doca_link::{recv, Recv};

/// Messages delivered per connection per progress call, at most.
pub(crate) const RX_BATCH: usize = 64;

/// A received message whose callback runs: its slot goes back to the producer, and the
/// status page counts it, when the callback returns and when it panics (the callback saw its
/// message: the next pass does not deliver it again, so a message that makes its callback
/// panic is not a poison pill, and every counter agrees it arrived).
struct Delivering<'a> {
    slot: Option<Slot<'a>>,
    link: &'a Link,
    len: usize,
}

impl Drop for Delivering<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot.take() {
            slot.consume();
        }
        // The status page's counts after the callback: not on the way from a message
        // landing to the answer the callback sends.
        self.link.status.received(self.len);
        self.link.row.received(self.len);
    }
}

/// What a link asked its peer for before the application slept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Armed {
    /// Not armed.
    No,
    /// A ring when a message arrives.
    Data,
    /// That, and a ring when the peer's ring has room (sends wait).
    Room,
}

/// An established connection as its owner sees it.
pub(crate) struct Link {
    pub(crate) conn: Connection,
    /// The socket, registered in the owner's control set: readable for control packets and
    /// for the peer's end of file.
    pub(crate) sock: Watched<Arc<PeerFd>>,
    /// This side's doorbell for this connection, in the owner's control set: only the peer
    /// holds the other end.
    pub(crate) bell: Watched<Doorbell>,
    channel: Channel,
    pending: RefCell<VecDeque<TaskId>>,
    state: Cell<ConnState>,
    /// The socket reached end of file: the peer is gone.
    eof: Cell<bool>,
    /// How the peer broke the protocol, when it did (logged when the link is wound up).
    violation: RefCell<Option<String>>,
    /// The peer's control-packet signals seen so far.
    signals: Cell<u32>,
    /// The owner's row in the status page (messages, bytes, ring fill).
    status: Rc<doca_core::status::Entry>,
    /// The connection's own row (a server's connections; [`doca_core::status::Entry::none`]
    /// for a client's, whose row is the connection): the same counts, bumped beside the
    /// owner's; freed with the link.
    row: doca_core::status::Entry,
    /// A fault plan cut the link (`link.drop`): nothing more is sent or delivered.
    cut: Cell<bool>,
    /// What the last arming before a sleep asked the peer for (read back on waking).
    armed: Cell<Armed>,
    /// Whether anything of this side's own needs a look beyond the rings: sends wait for
    /// room, the state is not `Up`, the socket reached end of file, or a fault plan cut the
    /// link. Kept by every change of those ([`Link::note`]), so that an idle pass and a
    /// submit read one word for them.
    attention: Cell<bool>,
}

impl Link {
    /// A link in `state` (`Up`), with room for `max_pending` sends waiting (the send pool's
    /// size: the queue never grows on the data path).
    pub(crate) fn new(
        conn: Connection,
        sock: Watched<Arc<PeerFd>>,
        bell: Watched<Doorbell>,
        channel: Channel,
        state: ConnState,
        max_pending: usize,
        (status, row): (Rc<doca_core::status::Entry>, doca_core::status::Entry),
    ) -> Link {
        Link {
            conn,
            sock,
            bell,
            channel,
            pending: RefCell::new(VecDeque::with_capacity(max_pending)),
            state: Cell::new(state),
            eof: Cell::new(false),
            violation: RefCell::new(None),
            signals: Cell::new(0),
            armed: Cell::new(Armed::No),
            status,
            row,
            cut: Cell::new(false),
            attention: Cell::new(!state.is_up()),
        }
    }

    /// Recomputes [`Link::attention`] after a change of what it sums up.
    fn note(&self) {
        let calm =
            self.pending.borrow().is_empty() && self.state().is_up() && !self.eof.get() && !self.cut.get();
        self.attention.set(!calm);
    }

    /// Whether a pass has nothing to do for this link: no message waits in the receive ring,
    /// nothing of this side's own needs a look ([`Link::attention`]), no wake-up check is
    /// due, the peer neither hung up nor broke a ring, and it signalled no control packet
    /// since the last look. The same conditions the busy path tests one by one, read
    /// without side effects: when this says true, that path would do nothing.
    #[inline]
    pub(crate) fn quiet(&self) -> bool {
        !self.channel.has_data()
            && !self.attention.get()
            && !self.channel.wakeup_check_due()
            && !self.channel.peer_hung_up()
            && self.channel.signals() == self.signals.get()
    }

    /// Whether a received message may wait (no fence; a corrupt ring has none). The busy
    /// path reads the ring only then.
    #[inline]
    pub(crate) fn has_data(&self) -> bool {
        self.channel.has_data()
    }

    /// The connection's state.
    pub(crate) fn state(&self) -> ConnState {
        self.state.get()
    }

    /// Moves the state along the table of [`crate::proto::state`] (traced by `who`); a
    /// closing or down connection reads as disconnected on every thread at once.
    pub(crate) fn set_state(&self, next: ConnState, who: &dyn Display) -> bool {
        let mut s = self.state.get();
        let changed = s.set(next, who);
        self.state.set(s);
        self.note();
        if changed && !s.is_up() {
            self.row.set_connection_up(false);
        }
        if changed && s.failure().is_some() {
            self.conn.mark_down();
        }
        changed
    }

    /// The peer broke the protocol: the connection closes (`why` is logged when it is wound
    /// up, rate-limited).
    pub(crate) fn violated(&self, why: String, who: &dyn Display) {
        self.violation.borrow_mut().get_or_insert(why);
        self.set_state(ConnState::Closing(Error::ConnectionReset), who);
    }

    /// How the peer broke the protocol, if it did (a broken ring included).
    pub(crate) fn violation(&self) -> Option<String> {
        match self.violation.borrow().clone() {
            Some(why) => Some(why),
            None if self.channel.rings_broken() => Some("a shared ring index out of bounds".into()),
            None => None,
        }
    }

    /// Whether the peer signalled a control packet since the last look (one load of a
    /// shared line the peer rarely writes).
    pub(crate) fn signalled(&self) -> bool {
        let now = self.channel.signals();
        now != self.signals.replace(now)
    }

    /// Whether the connection must be wound up: this side is closing it, the peer hung up
    /// (a flag in the rings: no syscall), or its socket reached end of file.
    pub(crate) fn is_ending(&self) -> bool {
        !self.state().is_up() || self.eof.get() || self.channel.peer_hung_up()
    }

    /// Hangs up: the peer sees it on its next look at the rings; the socket is shut so a
    /// peer asleep in epoll wakes too.
    pub(crate) fn hang_up(&self) {
        self.channel.hang_up();
        doca_link::exchange::hang_up(self.sock.as_fd());
    }

    /// Rings the peer's doorbells when it waits for what this side did since the last check.
    pub(crate) fn wake_peer(&self) {
        self.channel.wake_peer();
    }

    /// Rings the peer's doorbell when it sleeps now, without a fence (the fenced check stays
    /// due).
    pub(crate) fn wake_peer_asleep_now(&self) {
        self.channel.wake_peer_asleep_now();
    }

    /// Whether the peer wants each flushing send's wake-up checked at once.
    pub(crate) fn peer_wants_eager(&self) -> bool {
        self.channel.peer_wants_eager()
    }

    /// Whether [`Link::wake_peer`] has something to check.
    pub(crate) fn wakeup_check_due(&self) -> bool {
        self.channel.wakeup_check_due()
    }

    /// [`Link::wake_peer`] after the caller's own `SeqCst` fence.
    pub(crate) fn wake_peer_fenced(&self) {
        self.channel.wake_peer_fenced();
    }

    /// A control-path message goes out (`dir` "send") or comes in ("recv"): asks the fault
    /// plan. `link.drop` firing cuts the link as the peer's death would: the socket is shut
    /// both ways (the peer sees the end of file a crash shows, and winds the connection up
    /// the same way), this side sees its own end of file, and nothing more is sent or
    /// delivered — the message at hand included. True when the link was cut.
    #[cold]
    fn fault(&self, dir: &str) -> bool {
        let side = if self.conn.is_server_side() { "cc_server" } else { "cc_client" };
        let detail = format_args!("{side} connection #{} {dir}", self.conn.id());
        match fault::on_message(&detail) {
            Some(fault::MessageFault::Drop) => {
                self.cut.set(true);
                self.conn.mark_cut_by_fault_plan();
                self.eof.set(true);
                self.note();
                doca_link::exchange::hang_up(self.sock.as_fd());
                true
            }
            None => false,
        }
    }

    /// Writes `payload`'s message into the peer's ring: `Ok(false)` when the ring is full.
    /// The counters are bumped after the message is published (off the peer's wait).
    fn write(&self, payload: &SendPayload) -> Result<bool> {
        if self.cut.get() || (fault::armed(fault::class::MESSAGE) && self.fault("send")) {
            return Err(Error::ConnectionReset);
        }
        let msg = payload.msg();
        if !self.channel.send(KIND_MSG, msg.len(), |dst| dst.copy_from_slice(msg))? {
            return Ok(false);
        }
        let len = msg.len();
        self.conn.count(Counter::SentMessages, len);
        let (fill, slots) = self.channel.tx_fill_seen();
        self.status.sent_filled(len, fill, slots);
        self.row.sent_filled(len, fill, slots);
        Ok(true)
    }

    /// A submitted send (task `id`, its `payload` at hand): written now when the ring has
    /// room and nothing waits before it, else queued. Returns the status to finish it with
    /// now, or `None` when queued. A send completes successfully only once its bytes are in a
    /// ring the peer will read: a connection that is ending fails it with `CONNECTION_RESET`.
    pub(crate) fn submit(&self, id: TaskId, payload: &SendPayload) -> Option<Result<()>> {
        if !self.attention.get() {
            // Up, no end of file, not cut, nothing waiting before it: only the rings' own
            // flags (the peer's hang-up, a broken ring) can refuse it.
            if self.channel.peer_hung_up() {
                return Some(Err(Error::ConnectionReset));
            }
            return match self.write(payload) {
                Ok(true) => Some(Ok(())),
                Ok(false) => {
                    self.pending.borrow_mut().push_back(id);
                    self.attention.set(true);
                    None
                }
                Err(e) => Some(Err(e)),
            };
        }
        if let Some(e) = self.state().failure() {
            return Some(Err(e));
        }
        if self.is_ending() {
            return Some(Err(Error::ConnectionReset));
        }
        if self.pending.borrow().is_empty() {
            match self.write(payload) {
                Ok(true) => return Some(Ok(())),
                Ok(false) => {}
                Err(e) => return Some(Err(e)),
            }
        }
        self.pending.borrow_mut().push_back(id);
        self.attention.set(true);
        None
    }

    /// Writes queued sends while the ring has room; `done` gets each one's status.
    pub(crate) fn push_pending(
        &self,
        pool: &TaskPool<SendPayload>,
        mut done: impl FnMut(TaskId, Result<()>),
    ) {
        loop {
            let Some(id) = self.pending.borrow().front().copied() else { break };
            let status = match pool.with_payload(id, |p| self.write(p)) {
                Some(Ok(true)) => Ok(()),
                Some(Ok(false)) => break,
                Some(Err(e)) => Err(e),
                None => Err(Error::BadState),
            };
            self.pending.borrow_mut().pop_front();
            self.note();
            done(id, status);
        }
    }

    /// Whether sends wait for room.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.borrow().is_empty()
    }

    /// Fails every send still waiting with `status`.
    pub(crate) fn fail_pending(&self, status: Error, mut done: impl FnMut(TaskId, Result<()>)) {
        loop {
            let Some(id) = self.pending.borrow_mut().pop_front() else { break };
            self.note();
            done(id, Err(status));
        }
    }

    /// Delivers up to `max` received messages to `deliver`. A corrupt slot header is a
    /// violation: the connection closes. Returns how many messages were read.
    pub(crate) fn poll_rx(
        &self,
        max: usize,
        who: &dyn Display,
        mut deliver: impl FnMut(&[u8], &Connection),
    ) -> usize {
        let mut n = 0;
        while n < max {
            let Some(slot) = self.channel.recv() else { break };
            // Nothing is delivered once the connection is closing or cut (looked at once a
            // message is there: the look at the ring comes first).
            if self.attention.get() && (!self.state().is_up() || self.cut.get()) {
                break;
            }
            let Some(len) = slot.bytes().map(<[u8]>::len) else {
                self.violated("a corrupt message header".into(), who);
                break;
            };
            if slot.kind() == KIND_MSG {
                if fault::armed(fault::class::MESSAGE) && self.fault("recv") {
                    break;
                }
                self.conn.count(Counter::RecvMessages, len);
                let msg = Delivering { slot: Some(slot), link: self, len };
                if let Some(bytes) = msg.slot.as_ref().and_then(Slot::bytes) {
                    deliver(bytes, &self.conn);
                }
                drop(msg);
            } else {
                slot.consume();
            }
            n += 1;
        }
        n
    }

    /// The ring's capacity: what can still be read from an ending connection at most.
    pub(crate) fn rx_capacity(&self) -> usize {
        self.channel.rx_capacity() as usize
    }

    /// Reads up to `max` control packets waiting on the socket, handing each to `on` (which
    /// says whether to go on); notes the end of file when the peer is gone. True when more
    /// may wait.
    pub(crate) fn read_ctrl(&self, max: usize, mut on: impl FnMut(&[u8], Vec<PeerFd>) -> bool) -> bool {
        let mut buf = [0u8; 128];
        for _ in 0..max {
            match recv(self.sock.as_fd(), &mut buf) {
                Ok(Recv::Empty) => return false,
                Ok(Recv::Closed) | Err(_) => {
                    self.eof.set(true);
                    self.note();
                    return false;
                }
                Ok(Recv::Packet { len, truncated, fds }) => {
                    let packet = if truncated { &[][..] } else { &buf[..len] };
                    if !on(packet, fds) {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Before sleeping: arm for data (and for room when sends wait); true when work is
    /// already there.
    pub(crate) fn arm(&self) -> bool {
        self.wake_peer();
        let mut ready = self.channel.arm_for_data();
        let room = self.has_pending();
        if room {
            ready |= self.channel.arm_for_room();
        }
        self.armed.set(if room { Armed::Room } else { Armed::Data });
        ready || self.is_ending()
    }

    /// After waking: how many rings of the peer's wait on this link's doorbell, as far as
    /// the rings' shared flags tell (0 when the side was not armed: nothing is known).
    pub(crate) fn disarm(&self) -> u8 {
        match self.armed.replace(Armed::No) {
            Armed::No => {
                self.channel.disarm();
                0
            }
            Armed::Data => self.channel.disarm_taken(false),
            Armed::Room => self.channel.disarm_taken(true),
        }
    }
}
