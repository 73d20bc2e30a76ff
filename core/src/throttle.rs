//! Log lines a peer can cause, rate-limited: one line per kind and per second at most, the
//! next one telling how many were held back. A hostile or broken peer that sends garbage in a
//! loop costs one log line a second, not one per packet. (Every library's peer-caused lines
//! go through it: the comm channel's, and core's own for plans written into the status
//! page's mailbox.)

use std::time::{Duration, Instant};

use smallvec::SmallVec;

/// How often one kind of line may be logged.
pub const PERIOD: Duration = Duration::from_secs(1);

/// The rate limit of one side's peer-caused log lines, by kind (any small number: a DOCA
/// code, a reason).
#[derive(Debug, Default)]
pub struct Throttle {
    kinds: SmallVec<[(u32, Instant, u64); 4]>,
}

impl Throttle {
    /// A throttle that has logged nothing yet.
    pub fn new() -> Throttle {
        Throttle::default()
    }

    /// Whether a line of `kind` may be logged at `now`: `Some(held back)` with the number
    /// of lines of that kind suppressed since the last one, or `None` (counted).
    pub fn admit(&mut self, kind: u32, now: Instant) -> Option<u64> {
        match self.kinds.iter_mut().find(|(k, _, _)| *k == kind) {
            Some((_, last, held)) if now.saturating_duration_since(*last) < PERIOD => {
                *held += 1;
                None
            }
            Some((_, last, held)) => {
                *last = now;
                Some(std::mem::take(held))
            }
            None => {
                self.kinds.push((kind, now, 0));
                Some(0)
            }
        }
    }
}

/// The suffix telling how many lines were held back (empty for none).
pub fn held_back(n: u64) -> String {
    if n == 0 {
        String::new()
    } else {
        format!(" ({n} more like it in the last {PERIOD:?})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_kind_and_second_with_the_count_of_the_rest() {
        let t0 = Instant::now();
        let mut t = Throttle::new();
        assert_eq!(t.admit(1, t0), Some(0));
        assert_eq!(t.admit(2, t0), Some(0), "another kind has its own budget");
        for i in 1..1000 {
            assert_eq!(t.admit(1, t0 + Duration::from_micros(i)), None);
        }
        assert_eq!(t.admit(1, t0 + PERIOD), Some(999));
        assert_eq!(t.admit(1, t0 + PERIOD), None);
        assert_eq!(held_back(999), " (999 more like it in the last 1s)");
        assert_eq!(held_back(0), "");
    }
}
