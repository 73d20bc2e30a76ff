//! The life of one connection, on either side, for the 2024 API and the legacy endpoint
//! alike. A connection's state changes only through [`ConnState::set`], which refuses
//! transitions the table does not have and traces every change (target `doca_sdk`, debug).
//!
//! | from          | event                                                     | to               |
//! |---------------|-----------------------------------------------------------|------------------|
//! | (new)         | a socket is accepted (server) or connected (client)       | `Handshaking`    |
//! | `Handshaking` | the handshake completed: rings mapped, doorbells checked  | `Up`             |
//! | `Handshaking` | refused, malformed, or no answer before its deadline      | `Down(code)`     |
//! | `Up`          | this side disconnects or stops, or the peer broke a rule  | `Closing(code)`  |
//! | `Up`          | the peer hung up or died, and its last messages were read | `Down(code)`     |
//! | `Closing`     | what was still readable was delivered, the socket is shut  | `Down(code)`     |
//! | `Down`        | — (final)                                                 | —                |
//!
//! The code is what pending and new sends on the connection fail with: `CONNECTION_RESET`
//! once it was up, `CONNECTION_ABORTED` for a handshake that never completed.

use std::time::Instant;

use doca_core::Error;

/// Where a connection is in its life (see the module table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// The handshake runs; it started at this time.
    Handshaking {
        /// When the socket was accepted or connected.
        since: Instant,
    },
    /// Messages flow.
    Up,
    /// This side decided to close it; what the peer already sent is still delivered.
    Closing(Error),
    /// Gone for good; sends fail with this code.
    Down(Error),
}

impl ConnState {
    /// Whether the table has a row `self → next`.
    pub fn allows(self, next: ConnState) -> bool {
        use ConnState::*;
        matches!(
            (self, next),
            (Handshaking { .. }, Up)
                | (Handshaking { .. }, Down(_))
                | (Up, Closing(_))
                | (Up, Down(_))
                | (Closing(_), Down(_))
        )
    }

    /// Moves `*self` to `next` when the table allows it (tracing `who`: old → new) and
    /// returns whether it did. Anything else leaves the state as it was: a late event (the
    /// peer's hang-up seen after this side already closed) cannot resurrect or re-close a
    /// connection.
    pub fn set(&mut self, next: ConnState, who: &dyn std::fmt::Display) -> bool {
        if !self.allows(next) {
            return false;
        }
        tracing::debug!(target: "doca_sdk", "{who}: connection {:?} -> {:?}", self.name(), next.name());
        *self = next;
        true
    }

    /// Whether the handshake has been running since before `now - deadline`.
    pub fn handshake_expired(self, now: Instant, deadline: std::time::Duration) -> bool {
        matches!(self, ConnState::Handshaking { since } if now.saturating_duration_since(since) >= deadline)
    }

    /// Whether messages may be sent (`Up` only).
    pub fn is_up(self) -> bool {
        matches!(self, ConnState::Up)
    }

    /// The code sends fail with in this state: `None` while up or handshaking.
    pub fn failure(self) -> Option<Error> {
        match self {
            ConnState::Closing(e) | ConnState::Down(e) => Some(e),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ConnState::Handshaking { .. } => "Handshaking",
            ConnState::Up => "Up",
            ConnState::Closing(_) => "Closing",
            ConnState::Down(_) => "Down",
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::ConnState::*;
    use super::*;

    const WHO: &str = "test";

    fn hs() -> ConnState {
        Handshaking { since: Instant::now() }
    }

    #[test]
    fn handshaking_to_up_when_the_handshake_completes() {
        let mut s = hs();
        assert!(s.set(Up, &WHO));
        assert!(s.is_up());
    }

    #[test]
    fn handshaking_to_down_when_refused_or_late() {
        let t0 = Instant::now();
        let mut s = Handshaking { since: t0 };
        assert!(!s.handshake_expired(t0 + Duration::from_secs(4), Duration::from_secs(5)));
        assert!(s.handshake_expired(t0 + Duration::from_secs(5), Duration::from_secs(5)));
        assert!(s.set(Down(Error::ConnectionAborted), &WHO));
        assert_eq!(s.failure(), Some(Error::ConnectionAborted));
    }

    #[test]
    fn up_to_closing_when_this_side_disconnects() {
        let mut s = Up;
        assert!(s.set(Closing(Error::ConnectionReset), &WHO));
        assert_eq!(s.failure(), Some(Error::ConnectionReset));
    }

    #[test]
    fn up_to_down_when_the_peer_leaves() {
        let mut s = Up;
        assert!(s.set(Down(Error::ConnectionReset), &WHO));
    }

    #[test]
    fn closing_to_down_once_delivered() {
        let mut s = Closing(Error::ConnectionReset);
        assert!(s.set(Down(Error::ConnectionReset), &WHO));
    }

    #[test]
    fn down_is_final_and_late_events_change_nothing() {
        let mut s = Down(Error::ConnectionReset);
        for next in [hs(), Up, Closing(Error::ConnectionReset), Down(Error::ConnectionAborted)] {
            assert!(!s.set(next, &WHO));
        }
        assert_eq!(s, Down(Error::ConnectionReset));
        let mut c = Closing(Error::ConnectionReset);
        assert!(!c.set(Up, &WHO) && !c.set(Closing(Error::Again), &WHO));
        let mut h = hs();
        assert!(!h.set(Closing(Error::ConnectionReset), &WHO), "a handshake is not closed, it fails");
    }
}
