//! The data half of an established connection, as one side holds it: the ring it writes,
//! the ring it reads, and the peer's two doorbells. The 2024 API and the legacy endpoint
//! both move their messages through it; the connection's socket (whose end of file tells
//! that the peer died) stays with the owner.
//!
//! Busy path: [`Channel::send`] writes a slot and publishes it, [`Channel::recv`] looks at
//! the ring head; neither makes a syscall. [`Channel::wake_peer`], called once after a
//! batch, rings the peer's doorbell only when the peer armed itself before sleeping.

use doca_core::Result;
use doca_link::notify::Doorbell;

use super::ring::{Ring, Slot};

/// The rings and the peer's doorbells of one connection.
pub struct Channel {
    tx: Ring,
    rx: Ring,
    /// Rung when the peer sleeps waiting for messages.
    peer_bell: Doorbell,
    /// Rung when the peer sleeps waiting for room in the ring it writes.
    peer_room_bell: Doorbell,
}

impl Channel {
    /// A channel writing `tx`, reading `rx`, waking the peer through its doorbells
    /// (messages; room).
    pub fn new(tx: Ring, rx: Ring, peer_bell: Doorbell, peer_room_bell: Doorbell) -> Channel {
        Channel { tx, rx, peer_bell, peer_room_bell }
    }

    /// The parts, for a link stand-in that drives each ring from a thread of its own: (the
    /// ring this side writes, the ring it reads, the peer's messages doorbell, the peer's
    /// room doorbell).
    pub fn into_parts(self) -> (Ring, Ring, Doorbell, Doorbell) {
        (self.tx, self.rx, self.peer_bell, self.peer_room_bell)
    }

    /// Publishes one message of `len` bytes that `fill` writes: false (nothing written)
    /// when the peer's ring is full; `INVALID_VALUE` when `len` exceeds a slot.
    pub fn send(&self, kind: u32, len: usize, fill: impl FnOnce(&mut [u8])) -> Result<bool> {
        Ok(self.tx.push_with(kind, len, fill)?)
    }

    /// The next received message, if any ([`Slot::consume`] releases it).
    pub fn recv(&self) -> Option<Slot<'_>> {
        self.rx.peek()
    }

    /// A handle to signal the peer that a control packet waits on the socket.
    pub fn signal(&self) -> super::ring::Signal {
        self.tx.signal()
    }

    /// How many control packets the peer has signalled so far.
    pub fn signals(&self) -> u32 {
        self.rx.signals()
    }

    /// Whether a received message waits (no fence).
    pub fn has_data(&self) -> bool {
        self.rx.has_data()
    }

    /// Messages sent and not yet read by the peer.
    pub fn in_flight(&self) -> u64 {
        self.tx.in_flight()
    }

    /// Send-ring slots in use as last seen, and the ring's slots (for the status page).
    pub fn tx_fill_seen(&self) -> (u64, u64) {
        (self.tx.fill_seen(), self.tx.capacity())
    }

    /// How many messages the receive ring holds at most.
    pub fn rx_capacity(&self) -> u64 {
        self.rx.capacity()
    }

    /// Rings the peer's doorbells when it sleeps waiting for what this side did since the
    /// last check (messages published, slots freed): one fence per batch, not per message.
    pub fn wake_peer(&self) {
        let (data, room) = Ring::pair_needs_wakeup(&self.tx, &self.rx);
        self.ring_bells(data, room);
    }

    /// Rings the peer's data doorbell when it sleeps waiting for a message (`data`) and its
    /// room doorbell when it sleeps waiting for a free slot (`room`).
    fn ring_bells(&self, data: bool, room: bool) {
        if data {
            self.peer_bell.ring();
        }
        if room {
            self.peer_room_bell.ring();
        }
    }

    /// Rings the peer's data doorbell when it sleeps now, as far as one load tells without
    /// a fence ([`Ring::peer_asleep_now`]); the fenced check stays due for this side's next
    /// pass or sleep.
    pub fn wake_peer_asleep_now(&self) {
        if self.tx.peer_asleep_now() {
            self.peer_bell.ring();
        }
    }

    /// Whether the peer asked that each flushing send check its sleep at once (a link
    /// stand-in: see [`Ring::set_eager`]).
    pub fn peer_wants_eager(&self) -> bool {
        self.tx.peer_wants_eager()
    }

    /// Whether [`Channel::wake_peer`] has something to check.
    pub fn wakeup_check_due(&self) -> bool {
        self.tx.wakeup_check_due() || self.rx.wakeup_check_due()
    }

    /// [`Channel::wake_peer`] after the caller's own `SeqCst` fence (one fence for all the
    /// channels of a pass).
    pub fn wake_peer_fenced(&self) {
        self.ring_bells(self.tx.peer_needs_wakeup_fenced(), self.rx.peer_needs_wakeup_fenced());
    }

    /// Before sleeping until a message arrives: true when one arrived meanwhile (or the
    /// peer hung up), so do not sleep.
    pub fn arm_for_data(&self) -> bool {
        self.rx.arm_for_data() || self.peer_hung_up()
    }

    /// Before sleeping until the peer's ring has room: true when it has room now.
    pub fn arm_for_room(&self) -> bool {
        self.tx.arm_for_room() || self.peer_hung_up()
    }

    /// After waking.
    pub fn disarm(&self) {
        self.rx.disarm_data();
        self.tx.disarm_room();
    }

    /// After waking from a sleep armed for data (and for room when `room`): how many of the
    /// peer's doorbell rings this side can expect (0 to 2: one per flag the peer took, as far
    /// as the shared flags tell).
    pub fn disarm_taken(&self, room: bool) -> u8 {
        let data = self.rx.disarm_data_taken();
        let room = if room {
            self.tx.disarm_room_taken()
        } else {
            self.tx.disarm_room();
            false
        };
        u8::from(data) + u8::from(room)
    }

    /// Hangs up: the peer sees it on its next look at the rings (a load, no syscall).
    pub fn hang_up(&self) {
        self.tx.close();
        self.rx.close();
    }

    /// Whether the peer broke a ring (an index out of bounds).
    pub fn rings_broken(&self) -> bool {
        self.rx.is_corrupt() || self.tx.is_corrupt()
    }

    /// Whether the peer hung up — or broke a ring (an index out of bounds), which ends the
    /// connection the same way.
    pub fn peer_hung_up(&self) -> bool {
        self.rx.is_closed() || self.tx.is_closed() || self.rx.is_corrupt() || self.tx.is_corrupt()
    }
}
