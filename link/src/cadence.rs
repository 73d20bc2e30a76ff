//! When a busy side looks at its control sockets (new clients, handshakes, a peer's end of
//! file): Comm Channel's sides and RDMA's connections.
//!
//! Looking costs a syscall (`epoll_wait` with a zero timeout), so a side that is polled in a
//! busy loop looks at most once every [`CTRL_PERIOD`], reading the clock only every
//! [`CTRL_EVERY`] calls; after a wake-up, or when it knows something is waiting
//! ([`Cadence::soon`]: a peer signalled a control packet in the shared rings, a link is
//! ending), it looks on the next call. So established connections wait for nothing; only a
//! new client waits up to a period for a busy server. Pure logic over the time it is given:
//! tested with fixed instants.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The time of a progress pass, read at most once per pass (core's `Now` is one): what a
/// [`Cadence`] is given.
pub trait PassTime {
    /// The pass's instant.
    fn instant(&self) -> Instant;
}

impl PassTime for Instant {
    fn instant(&self) -> Instant {
        *self
    }
}

/// Calls between two looks at the clock while busy.
pub const CTRL_EVERY: u32 = 64;
/// Shortest time between two looks at the control sockets while busy: a new client waits
/// this long at most for a busy server (one syscall per period costs a busy loop well under
/// 1 % of a core).
pub const CTRL_PERIOD: Duration = Duration::from_micros(50);

/// The control-poll rate limit of one side.
#[derive(Debug)]
pub struct Cadence {
    tick: Cell<u32>,
    due: Cell<bool>,
    last: Cell<Option<Instant>>,
}

impl Default for Cadence {
    fn default() -> Self {
        Cadence::new()
    }
}

impl Cadence {
    /// A cadence whose first call looks.
    pub fn new() -> Cadence {
        Cadence { tick: Cell::new(0), due: Cell::new(true), last: Cell::new(None) }
    }

    /// [`Cadence::turn`] for a side with no established connection (a server waiting for
    /// its first client, a client connecting): there is no data path to keep free of
    /// clock reads, so the clock is read at every call. A caller that progresses rarely
    /// (NVIDIA's sync_event samples progress their Comm Channel once a second) looks at
    /// each call; a busy one still at most once every [`CTRL_PERIOD`].
    #[inline]
    pub fn turn_unlinked(&self, now: &impl PassTime) -> bool {
        self.step(now, false)
    }

    /// Whether this call should look at the control sockets.
    #[inline]
    pub fn turn(&self, now: &impl PassTime) -> bool {
        self.step(now, true)
    }

    /// One call: a pending look first; then (when `every`, on every [`CTRL_EVERY`]th call
    /// only, so that the clock is not read on the others) a look once [`CTRL_PERIOD`] has
    /// passed since the last.
    #[inline]
    fn step(&self, now: &impl PassTime, every: bool) -> bool {
        let t = self.tick.get().wrapping_add(1);
        self.tick.set(t);
        if self.due.replace(false) {
            self.last.set(Some(now.instant()));
            return true;
        }
        if every && t % CTRL_EVERY != 0 {
            return false;
        }
        let now = now.instant();
        match self.last.get() {
            Some(last) if now.saturating_duration_since(last) < CTRL_PERIOD => false,
            _ => {
                self.last.set(Some(now));
                true
            }
        }
    }

    /// Makes the next call look (something is known to wait, or the side just woke up).
    pub fn soon(&self) {
        self.due.set(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn looks(c: &Cadence, calls: u32, at: Instant) -> u32 {
        (0..calls).filter(|_| c.turn(&at)).count() as u32
    }

    #[test]
    fn a_busy_side_looks_once_per_period_and_at_once_when_told() {
        let t0 = Instant::now();
        let c = Cadence::new();
        assert_eq!(looks(&c, 1, t0), 1, "the first call looks");
        assert_eq!(looks(&c, 10 * CTRL_EVERY, t0), 0, "no time passed: no look");
        let later = t0 + CTRL_PERIOD;
        assert_eq!(looks(&c, CTRL_EVERY, later), 1, "one look once the period passed");
        assert_eq!(looks(&c, 10 * CTRL_EVERY, later), 0);
        c.soon();
        assert_eq!(looks(&c, 1, later), 1, "told: the next call looks");
        let much_later = later + 100 * CTRL_PERIOD;
        assert_eq!(looks(&c, CTRL_EVERY, much_later), 1, "the clock is read once every CTRL_EVERY calls");
    }

    #[test]
    fn an_unlinked_side_looks_at_the_first_call_after_each_period_whatever_the_count() {
        let t0 = Instant::now();
        let c = Cadence::new();
        let look = |at: Instant| c.turn_unlinked(&at);
        assert!(look(t0), "the first call looks");
        assert!(!look(t0), "no time passed: no look");
        // One call a second (a sample's loop): each one looks.
        for s in 1..5 {
            assert!(look(t0 + Duration::from_secs(s)), "call {s}, a second later");
        }
        let t1 = t0 + Duration::from_secs(5);
        assert!(look(t1));
        assert!(!look(t1 + CTRL_PERIOD / 2), "within the period");
        assert!(look(t1 + CTRL_PERIOD), "the period passed");
    }
}
