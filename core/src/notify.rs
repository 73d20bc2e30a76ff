//! Kernel objects for sleeping: doorbells (a Unix socket pair between processes, an eventfd
//! within one), timers (timerfd), and epoll sets with the watches that register file
//! descriptors in them.
//!
//! The busy path never touches these: a side rings a doorbell only when the other side has
//! armed itself (DESIGN §3 "Notification"), so a busy-polling pair makes no syscalls and a
//! sleeping one costs one wake-up.
//!
//! A registration is a value, [`Watched`]: it owns the file descriptor it registered and
//! removes it from the set when dropped, before closing it. So a set never holds a stale
//! entry, and a descriptor number reused by a later file never meets an old registration.
//! Two watchers of one file each register their own duplicate (`try_clone_to_owned`).

use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{epoll, eventfd, EventfdFlags};
use rustix::io::Errno;
use rustix::net::{socketpair, AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec,
};
use smallvec::SmallVec;

use crate::{fail, Error, Result};

pub(crate) fn os_error(what: &str, e: Errno) -> Error {
    fail!(Error::OperatingSystem, "{what}: {e}")
}

/// A doorbell between processes: one end of a Unix stream socket pair, readable until
/// drained once the other end — the end a peer gets ([`Doorbell::peer_end`]) — rings it.
/// `Send + Sync`.
///
/// Why not an eventfd: an eventfd is one open file, shared whole with the peer that holds it,
/// file status flags included. A hostile peer could fill its counter and clear `O_NONBLOCK`
/// again between this side's check of the flag and its `write`, which then blocks for ever.
/// A socket is rung with `send(MSG_DONTWAIT)`, non-blocking by the call itself whatever the
/// peer does to the flags: a full socket buffer means the doorbell is already ringing.
#[derive(Debug)]
pub struct Doorbell {
    /// The end that becomes readable (watched, drained); for a peer's doorbell, the end this
    /// side rings.
    fd: OwnedFd,
    /// For a doorbell of this process, the end that rings it: what a peer is given.
    ring_end: Option<OwnedFd>,
}

impl Doorbell {
    /// A new, silent doorbell (non-blocking, close-on-exec).
    pub fn new() -> Result<Self> {
        let (fd, ring_end) = socketpair(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| os_error("socketpair", e))?;
        Ok(Doorbell { fd, ring_end: Some(ring_end) })
    }

    /// Wraps the ringing end of a peer's doorbell, received from its process: it must be a
    /// Unix socket (`INVALID_VALUE` for an eventfd, a pipe, a file, another kind of socket…).
    pub fn from_peer(fd: OwnedFd) -> Result<Self> {
        if !matches!(rustix::net::sockopt::socket_domain(&fd), Ok(AddressFamily::UNIX)) {
            return Err(crate::peer_fail!(
                Error::InvalidValue,
                "the peer's doorbell (fd {}) is not a Unix socket",
                fd.as_raw_fd()
            ));
        }
        Ok(Doorbell { fd, ring_end: None })
    }

    /// The end to hand to the peer that rings this doorbell (for a peer's doorbell, the end
    /// this side rings).
    pub fn peer_end(&self) -> BorrowedFd<'_> {
        self.ring_end.as_ref().unwrap_or(&self.fd).as_fd()
    }

    /// Makes the doorbell readable: one `send` that never blocks (a full buffer means it is
    /// ringing already; a peer that closed its end is not there to wake).
    pub fn ring(&self) {
        let _ = rustix::net::send(self.peer_end(), &[1], SendFlags::DONTWAIT | SendFlags::NOSIGNAL);
    }

    /// Silences the doorbell; returns whether it was ringing. One `recv` (non-blocking by
    /// itself: nobody else holds this end), a few more only while it comes back full,
    /// whatever the peer keeps sending (what is left keeps it readable: a spurious wake-up).
    pub fn drain(&self) -> bool {
        let mut buf = [0u8; 64];
        let mut rang = false;
        for _ in 0..4 {
            match rustix::net::recv(&self.fd, &mut buf, RecvFlags::DONTWAIT) {
                Ok((n, _)) if n > 0 => {
                    rang = true;
                    if n < buf.len() {
                        break;
                    }
                }
                _ => break,
            }
        }
        rang
    }
}

impl AsFd for Doorbell {
    /// The end that becomes readable: what to watch (never what to give the peer: see
    /// [`Doorbell::peer_end`]).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// An eventfd: ringing makes it readable until drained. For wake-ups within this process
/// (a progress engine's own doorbell), where nobody else holds the file: cheaper than a
/// [`Doorbell`], and never given to a peer.
#[derive(Debug)]
pub struct EventFd {
    fd: OwnedFd,
}

impl EventFd {
    /// A new, silent eventfd (non-blocking, close-on-exec).
    pub fn new() -> Result<Self> {
        let fd =
            eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC).map_err(|e| os_error("eventfd", e))?;
        Ok(EventFd { fd })
    }

    /// Wraps an eventfd (non-blocking) that nobody outside this program's control writes.
    pub fn from_fd(fd: OwnedFd) -> Self {
        EventFd { fd }
    }

    /// Makes it readable (one `write`; a full counter means it is readable already).
    pub fn ring(&self) {
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    /// Silences it; returns whether it was readable (one `read`).
    pub fn drain(&self) -> bool {
        let mut buf = [0u8; 8];
        matches!(rustix::io::read(&self.fd, &mut buf), Ok(8))
    }
}

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A monotonic timerfd: readable once its deadline passed, until drained. Non-blocking.
#[derive(Debug)]
pub struct Timer {
    fd: OwnedFd,
}

impl Timer {
    /// A disarmed timer.
    pub fn new() -> Result<Timer> {
        let fd = timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC)
            .map_err(|e| os_error("timerfd_create", e))?;
        Ok(Timer { fd })
    }

    /// Makes the timer readable at `deadline` (at once when it passed already); `now` is the
    /// caller's idea of the present, from the same clock as `deadline`.
    pub fn arm_at(&self, deadline: Instant, now: Instant) {
        let wait = deadline.saturating_duration_since(now).max(Duration::from_nanos(1));
        let spec = Itimerspec {
            it_interval: Timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: Timespec {
                tv_sec: wait.as_secs().min(i64::MAX as u64) as i64,
                tv_nsec: wait.subsec_nanos().into(),
            },
        };
        if let Err(e) = timerfd_settime(&self.fd, TimerfdTimerFlags::empty(), &spec) {
            os_error("timerfd_settime", e);
        }
    }

    /// Silences an expired timer.
    pub fn drain(&self) {
        let mut buf = [0u8; 8];
        let _ = rustix::io::read(&self.fd, &mut buf);
    }
}

impl AsFd for Timer {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// An epoll set: the notification handle of a progress engine, or a library's own set of
/// control sockets. Cloning gives another handle to the same set.
#[derive(Clone, Debug)]
pub struct EpollSet {
    fd: Arc<OwnedFd>,
}

impl EpollSet {
    /// An empty set.
    pub fn new() -> Result<Self> {
        let fd = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| os_error("epoll_create", e))?;
        Ok(EpollSet { fd: Arc::new(fd) })
    }

    /// Registers `source` for readability under `token` (what [`EpollSet::ready`] reports).
    /// The returned watch owns `source` and unregisters it when dropped. A file already in
    /// the set under the same descriptor number is refused (`IN_USE`): register a duplicate.
    pub fn watch<T: AsFd>(&self, source: T, token: u64) -> Result<Watched<T>> {
        match epoll::add(&*self.fd, source.as_fd(), epoll::EventData::new_u64(token), epoll::EventFlags::IN) {
            Ok(()) => Ok(Watched { source: Some(source), set: self.fd.clone() }),
            Err(Errno::EXIST) => {
                Err(fail!(Error::InUse, "fd {} is already in this epoll set", source.as_fd().as_raw_fd()))
            }
            Err(e) => Err(os_error("epoll_ctl(ADD)", e)),
        }
    }

    /// Sleeps until a watched fd is readable or the timeout passes; true when woken by an fd.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool> {
        let mut events =
            [epoll::Event { flags: epoll::EventFlags::empty(), data: epoll::EventData::new_u64(0) }; 4];
        let ts = timeout.map(|d| rustix::time::Timespec {
            tv_sec: d.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: d.subsec_nanos().into(),
        });
        loop {
            match epoll::wait(&*self.fd, &mut events[..], ts.as_ref()) {
                Ok(n) => return Ok(n > 0),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(os_error("epoll_wait", e)),
            }
        }
    }

    /// The tokens of the watched fds that are readable now (one `epoll_wait` that does not
    /// sleep; at most 32 per call).
    pub fn ready(&self) -> SmallVec<[u64; 32]> {
        let mut events =
            [epoll::Event { flags: epoll::EventFlags::empty(), data: epoll::EventData::new_u64(0) }; 32];
        let zero = rustix::time::Timespec { tv_sec: 0, tv_nsec: 0 };
        let mut out = SmallVec::new();
        if let Ok(n) = epoll::wait(&*self.fd, &mut events[..], Some(&zero)) {
            out.extend(events[..n].iter().map(|e| e.data.u64()));
        }
        out
    }

    pub(crate) fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for EpollSet {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// A file descriptor registered in an [`EpollSet`]: derefs to it; dropping unregisters it,
/// then drops it.
#[derive(Debug)]
pub struct Watched<T: AsFd> {
    /// Always `Some` until [`Watched::into_inner`] or drop.
    source: Option<T>,
    set: Arc<OwnedFd>,
}

impl<T: AsFd> Watched<T> {
    /// Reports the fd under another token from now on.
    pub fn set_token(&self, token: u64) -> Result<()> {
        epoll::modify(&*self.set, self.get().as_fd(), epoll::EventData::new_u64(token), epoll::EventFlags::IN)
            .map_err(|e| os_error("epoll_ctl(MOD)", e))
    }

    /// Unregisters the fd and gives it back.
    pub fn into_inner(mut self) -> T {
        let source = self.source.take().expect("a watch holds its fd until dropped");
        let _ = epoll::delete(&*self.set, source.as_fd());
        source
    }

    fn get(&self) -> &T {
        self.source.as_ref().expect("a watch holds its fd until dropped")
    }
}

impl<T: AsFd> Deref for Watched<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.get()
    }
}

impl<T: AsFd> AsFd for Watched<T> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.get().as_fd()
    }
}

impl<T: AsFd> Drop for Watched<T> {
    fn drop(&mut self) {
        if let Some(source) = self.source.take() {
            // Unregister while the fd is still open (it closes when `source` drops below).
            let _ = epoll::delete(&*self.set, source.as_fd());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rung_doorbell_wakes_the_set_until_drained_and_a_dropped_watch_is_gone() {
        let set = EpollSet::new().unwrap();
        let bell = Doorbell::new().unwrap();
        let w1 = set.watch(bell.as_fd().try_clone_to_owned().unwrap(), 1).unwrap();
        let w2 = set.watch(bell.as_fd().try_clone_to_owned().unwrap(), 2).unwrap(); // a second watcher
        assert_eq!(set.watch(w1.as_fd(), 3).unwrap_err(), Error::InUse, "same descriptor twice");
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
        bell.ring();
        bell.ring();
        assert!(set.wait(Some(Duration::from_secs(5))).unwrap());
        let mut tokens = set.ready().into_vec();
        tokens.sort();
        assert_eq!(tokens, [1, 2]);
        assert!(bell.drain());
        assert!(!bell.drain());
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
        drop(w1);
        bell.ring();
        assert_eq!(set.ready().as_slice(), [2], "still watched by the other watcher");
        w2.set_token(7).unwrap();
        assert_eq!(set.ready().as_slice(), [7]);
        let fd = w2.into_inner();
        assert!(!set.wait(Some(Duration::ZERO)).unwrap(), "the last watcher left");
        drop(fd);
    }

    #[test]
    fn a_reused_descriptor_number_is_watched_afresh() {
        let set = EpollSet::new().unwrap();
        let first = set.watch(Doorbell::new().unwrap(), 1).unwrap();
        let raw = first.as_fd().as_raw_fd();
        drop(first);
        // Usually the kernel hands out the same number again (other threads may take it).
        let second = Doorbell::new().unwrap();
        let reused = second.as_fd().as_raw_fd() == raw;
        let second = set.watch(second, 2).unwrap();
        second.ring();
        assert_eq!(set.ready().as_slice(), [2], "number reused: {reused}");
    }

    #[test]
    fn a_peers_doorbell_must_be_a_unix_socket_and_ringing_it_never_blocks() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        assert_eq!(Doorbell::from_peer(w).unwrap_err(), Error::InvalidValue, "a pipe");
        drop(r);
        let efd = eventfd(0, EventfdFlags::CLOEXEC).unwrap();
        assert_eq!(Doorbell::from_peer(efd).unwrap_err(), Error::InvalidValue, "an eventfd");
        let udp = rustix::net::socket(AddressFamily::INET, SocketType::DGRAM, None).unwrap();
        assert_eq!(Doorbell::from_peer(udp).unwrap_err(), Error::InvalidValue, "an IP socket");

        // The peer's doorbell, and the end of it that this side gets.
        let theirs = Doorbell::new().unwrap();
        let mine = Doorbell::from_peer(theirs.peer_end().try_clone_to_owned().unwrap()).unwrap();
        mine.ring();
        assert!(theirs.drain());
        assert!(!theirs.drain(), "silent once drained");
        // A hostile peer never drains and keeps making the end it gave us blocking (the file
        // status flags are shared): ringing still returns, every time.
        let shared = theirs.peer_end().try_clone_to_owned().unwrap();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let st = stop.clone();
        let meddler = std::thread::spawn(move || {
            while !st.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = rustix::fs::fcntl_setfl(&shared, rustix::fs::OFlags::empty());
            }
        });
        for _ in 0..20_000 {
            mine.ring();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        meddler.join().unwrap();
        assert!(theirs.drain(), "it was ringing all along");
    }

    #[test]
    fn a_timer_fires_at_its_deadline() {
        let set = EpollSet::new().unwrap();
        let timer = set.watch(Timer::new().unwrap(), 1).unwrap();
        let now = Instant::now();
        timer.arm_at(now + Duration::from_millis(1), now);
        assert!(set.wait(Some(Duration::from_secs(5))).unwrap());
        timer.drain();
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
    }
}
