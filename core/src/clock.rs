//! Time as the progress engine sees it: one reading per progress pass, from a clock that
//! tests can replace.
//!
//! [`crate::Pe::progress`] hands every context a [`Now`]: the first context that asks for the
//! time reads the clock, the others get the same instant, and a pass where nobody asks reads
//! nothing. Libraries take deadlines and rate limits from it, so a test that builds its engine
//! with [`crate::Pe::create_with_clock`] and a [`ManualClock`] steps time by hand, without
//! sleeping.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// A source of monotonic time.
pub trait Clock: 'static {
    /// The current instant.
    fn now(&self) -> Instant;
}

/// The system's monotonic clock ([`Instant::now`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// A clock that moves only when told to (for deterministic tests).
#[derive(Debug)]
pub struct ManualClock {
    now: Cell<Instant>,
}

impl ManualClock {
    /// A clock standing at the current instant.
    pub fn new() -> ManualClock {
        ManualClock { now: Cell::new(Instant::now()) }
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        self.now.set(self.now.get() + by);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.now.get()
    }
}

/// The time of one progress pass: read from its clock on first use, then the same for the
/// rest of the pass.
pub struct Now<'a> {
    clock: &'a dyn Clock,
    at: Cell<Option<Instant>>,
}

impl<'a> Now<'a> {
    /// A pass over `clock` that has not read it yet.
    pub fn new(clock: &'a dyn Clock) -> Now<'a> {
        Now { clock, at: Cell::new(None) }
    }

    /// The pass's instant (the clock is read at most once).
    #[inline]
    pub fn get(&self) -> Instant {
        match self.at.get() {
            Some(t) => t,
            None => {
                let t = self.clock.now();
                self.at.set(Some(t));
                t
            }
        }
    }
}

impl doca_link::cadence::PassTime for Now<'_> {
    fn instant(&self) -> Instant {
        self.get()
    }
}

impl Now<'static> {
    /// A pass over the system clock (for code that runs outside a progress engine).
    pub fn system() -> Now<'static> {
        Now::new(&SystemClock)
    }

    /// A pass fixed at `at` (for tests of code that takes a [`Now`]).
    pub fn at(at: Instant) -> Now<'static> {
        Now { clock: &SystemClock, at: Cell::new(Some(at)) }
    }
}

impl std::fmt::Debug for Now<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Now({:?})", self.at.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_reads_its_clock_once_and_a_manual_clock_moves_only_when_told() {
        let clock = ManualClock::new();
        let t0 = clock.now();
        let now = Now::new(&clock);
        assert_eq!(now.get(), t0);
        clock.advance(Duration::from_secs(1));
        assert_eq!(now.get(), t0, "the same pass keeps its instant");
        assert_eq!(Now::new(&clock).get(), t0 + Duration::from_secs(1), "a new pass reads again");
        assert_eq!(Now::at(t0).get(), t0);
    }
}
