//! The client half of connection setup, shared by the 2024 client and the legacy client: a
//! connected socket whose Hello is sent, waiting for the server's answer. The owner keeps
//! the connection's [`crate::proto::state::ConnState`] (`Handshaking` meanwhile) and moves
//! it on with what [`Dialing::poll`] reports.

use doca_link::discard::PeerFd;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use doca_core::{Error, PciAddr, Result};
use doca_link::notify::{EpollSet, Watched};

use super::channel::Channel;
use super::setup::{answer, send_hello, Answer};
use crate::proto::{Hello, Reply};
use doca_link::connect_service;

/// How a handshake in flight ended.
pub enum Dialed<S> {
    /// The server did not answer in time, closed the socket, or sent garbage: this attempt
    /// is over (a 2024 client tries again; a legacy client reports `CONNECTION_ABORTED`).
    /// The code and why.
    Failed(Error, String),
    /// The server refused with this code.
    Refused(Error),
    /// Up: the socket, the rings, the server's answer.
    Up(Box<(S, Channel, Reply)>),
}

/// A client's handshake in flight on socket `S` (an `OwnedFd`, or one watched in a control
/// set).
pub struct Dialing<S> {
    sock: S,
    hello: Hello,
    since: Instant,
}

impl Dialing<PeerFd> {
    /// Connects to service `hello.name` of namespace `ns` as host function `pci` and sends
    /// `hello` with the server's ends of this side's doorbells `bells` (messages; room:
    /// [`super::setup::Bells::theirs`]). `Ok(None)` when no server
    /// listens; `AGAIN` when its backlog is full; `NOT_PERMITTED` when another user's
    /// process answers.
    pub fn start(
        ns: &str,
        pci: PciAddr,
        hello: Hello,
        bells: [std::os::fd::BorrowedFd<'_>; 2],
        now: Instant,
    ) -> Result<Option<Dialing<PeerFd>>> {
        let sock = match connect_service(ns, pci, &hello.name)? {
            Some(sock) => sock,
            // No local server: across the link when this process is the host side of one.
            None => match super::remote::dial(ns, pci, &hello.name)? {
                Some(sock) => sock,
                None => return Ok(None),
            },
        };
        Ok(Some(Dialing::on(PeerFd::socket(sock), hello, bells, now)?))
    }

    /// Sends `hello` on a socket already connected to a server (the seam for tests: one end
    /// of a [`doca_link::socketpair`]).
    pub fn on(
        sock: impl Into<PeerFd>,
        hello: Hello,
        bells: [std::os::fd::BorrowedFd<'_>; 2],
        now: Instant,
    ) -> Result<Dialing<PeerFd>> {
        let sock = sock.into();
        match send_hello(sock.as_fd(), &hello, bells) {
            // A busy server may have answered and closed before the Hello went: its answer
            // is still there to read (or the end of file, which fails this attempt).
            Ok(()) | Err(Error::ConnectionReset) => Ok(Dialing { sock, hello, since: now }),
            Err(e) => Err(e),
        }
    }

    /// The same handshake with its socket registered in `set` under `token`.
    pub fn watched(self, set: &EpollSet, token: u64) -> Result<Dialing<Watched<PeerFd>>> {
        Ok(Dialing { sock: set.watch(self.sock, token)?, hello: self.hello, since: self.since })
    }
}

impl<S: AsFd> Dialing<S> {
    /// The socket (readable when the answer came, or the server left).
    pub fn sock(&self) -> &S {
        &self.sock
    }

    /// When the handshake started.
    pub fn since(&self) -> Instant {
        self.since
    }

    /// Reads the answer if it came; the handshake fails once `deadline` passed since it
    /// started. Gives the handshake back while it waits.
    pub fn poll(self, now: Instant, deadline: Duration) -> Result<Dialed<S>, Self> {
        match answer(self.sock.as_fd(), &self.hello) {
            Answer::Waiting if now.saturating_duration_since(self.since) >= deadline => {
                Ok(Dialed::Failed(Error::TimeOut, format!("no answer within {deadline:?}")))
            }
            Answer::Waiting => Err(self),
            Answer::Lost => {
                Ok(Dialed::Failed(Error::ConnectionAborted, "the server closed the socket".into()))
            }
            Answer::Broken(e, why) => Ok(Dialed::Failed(e, why)),
            Answer::Refused(e) => Ok(Dialed::Refused(e)),
            Answer::Up(up) => {
                let (channel, reply) = *up;
                Ok(Dialed::Up(Box::new((self.sock, channel, reply))))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use doca_link::notify::Doorbell;

    use super::*;
    use crate::proto::PeerKind;
    use doca_link::socketpair;

    fn hello() -> Hello {
        Hello {
            kind: PeerKind::Client,
            max_msg_size: 64,
            recv_queue_size: 2,
            function: PciAddr::parse("b1:00.0").unwrap(),
            name: "svc".into(),
        }
    }

    #[test]
    fn a_silent_server_fails_the_handshake_exactly_at_its_deadline() {
        let (ours, _server) = socketpair().unwrap();
        let (_bell, ring) = Doorbell::pair().unwrap();
        let t0 = Instant::now();
        let deadline = Duration::from_secs(5);
        let mut d = Dialing::on(ours, hello(), [ring.as_fd(), ring.as_fd()], t0).unwrap();
        for late in [Duration::ZERO, Duration::from_millis(4999)] {
            d = match d.poll(t0 + late, deadline) {
                Err(still) => still,
                Ok(_) => panic!("gave up {late:?} after starting"),
            };
        }
        assert!(matches!(d.poll(t0 + deadline, deadline), Ok(Dialed::Failed(Error::TimeOut, _))));
    }

    #[test]
    fn a_server_that_hangs_up_fails_the_attempt() {
        let (ours, server) = socketpair().unwrap();
        let (_bell, ring) = Doorbell::pair().unwrap();
        let now = Instant::now();
        let d = Dialing::on(ours, hello(), [ring.as_fd(), ring.as_fd()], now).unwrap();
        drop(server);
        assert!(matches!(
            d.poll(now, Duration::from_secs(5)),
            Ok(Dialed::Failed(Error::ConnectionAborted, _))
        ));
    }

    /// A busy server answers and closes before the client's Hello goes (a loaded machine):
    /// the attempt still reads the busy answer, so the client tries again instead of failing.
    #[test]
    fn a_busy_answer_sent_before_the_hello_is_still_read() {
        let (ours, server) = socketpair().unwrap();
        doca_link::send(
            server.as_fd(),
            &crate::proto::Reply::refuse(crate::proto::handshake::BUSY).encode(),
            &[],
        )
        .unwrap();
        drop(server);
        let (_bell, ring) = Doorbell::pair().unwrap();
        let now = Instant::now();
        let d = Dialing::on(ours, hello(), [ring.as_fd(), ring.as_fd()], now).expect("the attempt goes on");
        assert!(matches!(d.poll(now, Duration::from_secs(5)), Ok(Dialed::Refused(Error::Again))));
    }
}
