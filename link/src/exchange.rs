//! A thread's blocking conversation with one peer over a packet socket whose every message
//! has a size both sides know (requests and answers of a fixed length): waiting for the peer
//! with a limit, watching a stop handle of this process's (an eventfd raised once) at the
//! same time, and taking a packet only when it is whole.
//!
//! This is what a serving thread uses (the served exports of `doca_mmap`): it may wait, and
//! it must never wait for ever on a peer that stopped moving, nor miss its own stop. The
//! engine's non-blocking paths use [`crate::fabric::recv`] instead.
//!
//! A received packet's descriptors come as [`PeerFd`]s (closed on a closing thread
//! unless the caller takes them once checked); room is given for as many as a packet can
//! carry, since the kernel would release the rest in this thread ([`crate::discard`]).

use std::os::fd::BorrowedFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;

use crate::discard::PeerFd;
use crate::error::{fail, peer_fail};
use crate::error::{Error, Result};
use crate::fabric::{recv, Recv};

/// How long one `poll` sleeps at most before the deadline is looked at again.
const SLICE: Duration = Duration::from_secs(1);

/// What to wait for on the socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// A packet to read.
    Read,
    /// Room to send.
    Write,
}

/// What a [`wait`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woke {
    /// The socket is ready for what was wanted.
    Ready,
    /// The socket hung up or failed (the peer closed, died, or this side shut it down).
    HungUp,
    /// The stop handle was raised.
    Stop,
}

/// How long a side waits for its peer, and the handle that ends the wait early.
#[derive(Clone, Copy, Debug)]
pub struct Patience<'a> {
    /// Readable once this side must stop waiting (`None`: nothing stops it but the peer).
    pub stop: Option<BorrowedFd<'a>>,
    /// The longest the peer may stay still: then the wait fails with `TIME_OUT` (`None`: as
    /// long as it takes, for a thread whose peer may idle for ever between requests).
    pub stall: Option<Duration>,
}

impl<'a> Patience<'a> {
    /// Waits at most `stall`, watching `stop`.
    pub fn new(stop: Option<BorrowedFd<'a>>, stall: Duration) -> Patience<'a> {
        Patience { stop, stall: Some(stall) }
    }

    /// Waits as long as it takes, watching `stop`.
    pub fn endless(stop: Option<BorrowedFd<'a>>) -> Patience<'a> {
        Patience { stop, stall: None }
    }
}

/// Waits until `sock` is ready for `want`, hangs up, or `stop` is raised. `TIME_OUT` when
/// nothing of that happened within the stall limit (logged at debug level: the peer's doing;
/// the caller that knows what it waited for says so).
pub fn wait(sock: BorrowedFd<'_>, want: Want, p: Patience<'_>) -> Result<Woke> {
    wait_until(sock, want, p, deadline(p))
}

/// When a wait of `p` that starts now gives up.
fn deadline(p: Patience<'_>) -> Option<Instant> {
    p.stall.map(|s| Instant::now() + s)
}

/// [`wait`] up to a `deadline` set by the caller (one for a whole send or receive, however
/// many waits it takes).
fn wait_until(sock: BorrowedFd<'_>, want: Want, p: Patience<'_>, deadline: Option<Instant>) -> Result<Woke> {
    let ev = match want {
        Want::Read => PollFlags::IN,
        Want::Write => PollFlags::OUT,
    };
    loop {
        let mut fds = [
            PollFd::from_borrowed_fd(sock, ev),
            PollFd::from_borrowed_fd(
                p.stop.unwrap_or(sock),
                if p.stop.is_some() { PollFlags::IN } else { PollFlags::empty() },
            ),
        ];
        if !poll_until(&mut fds, deadline)? {
            return Err(peer_fail!(
                Error::TimeOut,
                "the peer did not move for {:?}",
                p.stall.unwrap_or_default()
            ));
        }
        if p.stop.is_some() && !fds[1].revents().is_empty() {
            return Ok(Woke::Stop);
        }
        let r = fds[0].revents();
        if r.intersects(ev) {
            return Ok(Woke::Ready);
        }
        if r.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
            return Ok(Woke::HungUp);
        }
    }
}

/// Polls `fds` until one of them reports something (true) or `deadline` passes (false; `None`:
/// no deadline, asleep until something happens). Interrupted calls are made again; with a
/// deadline, one call sleeps [`SLICE`] at most.
fn poll_until(fds: &mut [PollFd<'_>], deadline: Option<Instant>) -> Result<bool> {
    loop {
        let ts = deadline.map(|d| {
            let left = d.saturating_duration_since(Instant::now()).min(SLICE);
            rustix::time::Timespec::try_from(left).unwrap_or_default()
        });
        match rustix::event::poll(fds, ts.as_ref()) {
            Ok(0) | Err(Errno::INTR) => {}
            Ok(_) => return Ok(true),
            Err(e) => return Err(fail!(Error::OperatingSystem, "poll: {e}")),
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(false);
        }
    }
}

/// Sends one packet without descriptors, waiting for room (a peer that does not read what it
/// is sent fills the connection) within `p`. `CONNECTION_RESET` when the peer left or the
/// wait was stopped, `TIME_OUT` when no room came.
pub fn send_waiting(sock: BorrowedFd<'_>, bytes: &[u8], p: Patience<'_>) -> Result<()> {
    let deadline = deadline(p);
    loop {
        match crate::fabric::send(sock, bytes, &[]) {
            Err(Error::Again) => match wait_until(sock, Want::Write, p, deadline)? {
                Woke::Ready => {}
                Woke::HungUp | Woke::Stop => return Err(Error::ConnectionReset),
            },
            Err(Error::IoFailed) => return Err(Error::ConnectionReset),
            r => return r,
        }
    }
}

/// One packet of exactly `buf.len()` bytes if one is there (`None`: nothing yet), with the
/// descriptors that came with it. `CONNECTION_RESET` when the peer closed; `INVALID_VALUE`
/// (a peer's fault, logged at debug level) for a packet of another size, whose descriptors
/// are discarded.
pub fn recv_exact_now(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Option<Result<Vec<PeerFd>>> {
    match recv(sock, buf) {
        Ok(Recv::Empty) => None,
        Ok(Recv::Closed) => Some(Err(Error::ConnectionReset)),
        Ok(Recv::Packet { len, truncated, fds }) if len == buf.len() && !truncated => Some(Ok(fds)),
        Ok(Recv::Packet { len, .. }) => Some(Err(peer_fail!(
            Error::InvalidValue,
            "a packet of {len} bytes{} where {} are due",
            if len == buf.len() { " and more" } else { "" },
            buf.len()
        ))),
        Err(_) => Some(Err(Error::ConnectionReset)),
    }
}

/// [`recv_exact_now`], waiting within `p` for the packet: `CONNECTION_RESET` also when the
/// wait was stopped. The stop handle is looked at only when there is nothing to read (no
/// system call more a packet): a thread serving a peer that keeps packets queued looks at its
/// own stop flag between them.
pub fn recv_exact(sock: BorrowedFd<'_>, buf: &mut [u8], p: Patience<'_>) -> Result<Vec<PeerFd>> {
    let deadline = deadline(p);
    loop {
        if let Some(r) = recv_exact_now(sock, buf) {
            return r;
        }
        match wait_until(sock, Want::Read, p, deadline)? {
            Woke::Stop => return Err(Error::ConnectionReset),
            Woke::Ready | Woke::HungUp => {}
        }
    }
}

/// Whether `sock` has nothing to read and has not hung up, looked at without waiting (a
/// connection on which nothing may arrive between requests: readable means closed).
pub fn is_quiet(sock: BorrowedFd<'_>) -> bool {
    let mut fds = [PollFd::from_borrowed_fd(sock, PollFlags::IN)];
    matches!(poll_until(&mut fds, Some(Instant::now())), Ok(false))
}

/// Waits up to `limit` for the peer to close `sock`, reading nothing: whether it did.
pub fn hung_up_within(sock: BorrowedFd<'_>, limit: Duration) -> bool {
    let mut fds = [PollFd::from_borrowed_fd(sock, PollFlags::RDHUP)];
    matches!(poll_until(&mut fds, Some(Instant::now() + limit)), Ok(true))
        && fds[0].revents().intersects(PollFlags::HUP | PollFlags::RDHUP | PollFlags::ERR)
}

/// Shuts `sock` down both ways: a thread waiting on it wakes and finds it hung up, and the
/// peer's next look finds it closed; the descriptor itself stays with its owner.
pub fn hang_up(sock: BorrowedFd<'_>) {
    let _ = rustix::net::shutdown(sock, rustix::net::Shutdown::Both);
}

/// Sleeps up to `rest` on `stop` alone (a handle of this process's, which no peer can
/// raise): whether it was raised.
pub fn stopped_within(stop: BorrowedFd<'_>, rest: Duration) -> Result<bool> {
    poll_until(&mut [PollFd::from_borrowed_fd(stop, PollFlags::IN)], Some(Instant::now() + rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn pair() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
        crate::fabric::socketpair().unwrap()
    }

    #[test]
    fn a_packet_of_another_size_is_refused_and_its_files_discarded() {
        let (a, b) = pair();
        let (keep, _) = pair();
        crate::fabric::send(a.as_fd(), &[7u8; 5], &[keep.as_fd()]).unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(recv_exact_now(b.as_fd(), &mut buf).unwrap().unwrap_err(), Error::InvalidValue);
        assert!(recv_exact_now(b.as_fd(), &mut buf).is_none(), "nothing more queued");
        crate::fabric::send(a.as_fd(), &[9u8; 8], &[keep.as_fd()]).unwrap();
        let fds = recv_exact_now(b.as_fd(), &mut buf).unwrap().unwrap();
        assert_eq!((buf, fds.len()), ([9u8; 8], 1));
        crate::fabric::send(a.as_fd(), &[1u8; 9], &[]).unwrap();
        assert_eq!(
            recv_exact_now(b.as_fd(), &mut buf).unwrap().unwrap_err(),
            Error::InvalidValue,
            "too long"
        );
        drop(a);
        assert_eq!(recv_exact_now(b.as_fd(), &mut buf).unwrap().unwrap_err(), Error::ConnectionReset);
    }

    #[test]
    fn a_wait_ends_at_its_stall_limit_or_its_stop_whichever_comes_first() {
        let (_a, b) = pair();
        let mut buf = [0u8; 8];
        let t = Instant::now();
        let r = recv_exact(b.as_fd(), &mut buf, Patience::new(None, Duration::from_millis(50)));
        assert_eq!(r.unwrap_err(), Error::TimeOut);
        assert!(t.elapsed() >= Duration::from_millis(50));
        let stop = rustix::event::eventfd(1, rustix::event::EventfdFlags::CLOEXEC).unwrap();
        let r = recv_exact(b.as_fd(), &mut buf, Patience::endless(Some(stop.as_fd())));
        assert_eq!(r.unwrap_err(), Error::ConnectionReset, "stopped");
        assert!(stopped_within(stop.as_fd(), Duration::ZERO).unwrap());
    }

    #[test]
    fn a_full_connection_waits_for_room_and_a_hung_up_one_fails() {
        let (a, b) = pair();
        let packet = [3u8; 4096];
        let mut queued = 0;
        while crate::fabric::send(a.as_fd(), &packet, &[]).is_ok() {
            queued += 1;
        }
        let reader = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            let mut buf = [0u8; 4096];
            for _ in 0..=queued {
                recv_exact(b.as_fd(), &mut buf, Patience::new(None, Duration::from_secs(10))).unwrap();
            }
            b
        });
        send_waiting(a.as_fd(), &packet, Patience::new(None, Duration::from_secs(10))).unwrap();
        let b = reader.join().unwrap();
        assert!(is_quiet(b.as_fd()) && is_quiet(a.as_fd()));
        hang_up(b.as_fd());
        assert!(hung_up_within(a.as_fd(), Duration::from_secs(10)));
        assert!(!is_quiet(a.as_fd()), "a hung-up connection reads as closed");
        let err = send_waiting(a.as_fd(), &packet, Patience::new(None, Duration::from_secs(10)));
        assert_eq!(err.unwrap_err(), Error::ConnectionReset);
    }
}
