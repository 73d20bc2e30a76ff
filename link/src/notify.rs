//! Kernel objects for sleeping: doorbells (Unix datagram socket pairs between processes, an
//! eventfd within one), timers (timerfd), and epoll sets with the watches that register file
//! descriptors in them.
//!
//! The busy path never touches these: a side rings a doorbell only when the other side has
//! armed itself (DESIGN §3 "Notification"), so a busy-polling pair makes no syscalls and a
//! sleeping one costs one wake-up.
//!
//! A registration is a value, [`Watched`]: it owns the file descriptor it registered and
//! removes it from the set when dropped, before closing it. So a set never holds a stale
//! entry, and a descriptor number reused by a later file never meets an old registration.
//! Two watchers of one file each register their own duplicate (`try_clone_to_owned`), or
//! share it (an `Arc`): a socket a peer sends to is shared, never duplicated (see
//! [`crate::discard::PeerFd`]).

use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{epoll, eventfd, EventfdFlags};
use rustix::io::Errno;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec,
};
use smallvec::SmallVec;

use crate::discard::PeerFd;
use crate::error::{fail, peer_fail};
use crate::error::{Error, Result};

pub(crate) fn os_error(what: &str, e: Errno) -> Error {
    fail!(Error::OperatingSystem, "{what}: {e}")
}

/// A doorbell between processes: one end of a Unix datagram socket pair with no address,
/// readable until drained once a datagram reaches it. [`Doorbell::pair`] makes one and the
/// single socket that rings it, which this side hands to one peer (over the authenticated
/// handshake socket, with `SCM_RIGHTS`); the peer wraps what it received with
/// [`Doorbell::from_peer`] and rings with `send(MSG_DONTWAIT)`. `Send + Sync`.
///
/// Why so: an eventfd is one open file, shared whole with the peer that holds it, file status
/// flags included — a hostile peer could fill its counter and clear `O_NONBLOCK` between this
/// side's check and its `write` (or drain it and make this side's `read` block), hanging the
/// thread. Nor would a pipe, even one each side opens again through `/proc/self/fd` (so that
/// its flags are its own; tried, and withdrawn, on 2026-11-29): a peer holding any file of
/// the pipe can hold the pipe's lock as long as it likes — a `splice` into it from an empty
/// blocking socket waits for data with the lock held — and every `write`, `read` and `open`
/// of that pipe by this side then waits for the lock, uninterruptibly, `O_NONBLOCK` or not
/// (closing it too, so the process cannot even exit). A socket's `send` takes the peer's
/// socket lock only for a moment, and its `recv` only this side's own. A stream socket pair
/// would not do either: a peer that shuts its end down leaves this end readable for ever (the
/// sleeper would spin). A socket bound to a name (even an
/// abstract one) can be found in `/proc/net/unix` and flooded by any process of any user,
/// filling its receive queue: honest rings then fail with `EAGAIN` and the sleeper spins.
/// Here nobody but the one peer holding the other end can reach this socket (it has no
/// address to send to or connect to); a send never blocks whatever the peer does to its end;
/// a datagram peer that shuts its end down or closes it leaves this end silent; and what one
/// peer does to its pair touches that pair only: a peer flooding its own end wakes this side
/// for its own connection, never fills another connection's doorbell.
#[derive(Debug)]
pub struct Doorbell {
    /// This side's end (watched, drained), or the end a peer handed over (rung).
    fd: BellFd,
}

/// A doorbell's socket, and how it is closed: a peer can queue files on its own end (and on
/// ours where the kernel cannot refuse them), which the last close releases in the closing
/// thread ([`crate::discard`]).
#[derive(Debug)]
enum BellFd {
    /// This side's end, refusing descriptors (`SO_PASSRIGHTS`): closed in place.
    Refusing(OwnedFd),
    /// This side's end on a kernel that cannot refuse them (drained with room for them),
    /// or a peer's end: closed on a closing thread.
    Peer(PeerFd),
}

impl Doorbell {
    /// A new, silent doorbell (non-blocking, close-on-exec, no address), and the socket that
    /// rings it: hand that to exactly one peer (and close this process's copy once handed
    /// over: the peer holds it too, and can bind it and have files sent to it, so it is
    /// closed as a peer's file is, [`PeerFd`]). What the peer does to it — shutting it down,
    /// closing it, flooding it — touches this pair only.
    pub fn pair() -> Result<(Doorbell, PeerFd)> {
        let (ours, theirs) = rustix::net::socketpair(
            AddressFamily::UNIX,
            SocketType::DGRAM,
            SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| os_error("socketpair", e))?;
        let fd = if crate::discard::refuse_descriptors(ours.as_fd()) {
            BellFd::Refusing(ours)
        } else {
            BellFd::Peer(PeerFd::socket(ours))
        };
        Ok((Doorbell { fd }, PeerFd::new(theirs)))
    }

    /// Wraps a socket a peer gave to ring its doorbell with: it must be a Unix datagram
    /// socket (`INVALID_VALUE` for an eventfd, a pipe, a file, a stream or seqpacket socket,
    /// another family…: what could block the side ringing it, or stay readable for ever).
    /// Closed on a closing thread, refused or not.
    pub fn from_peer(fd: PeerFd) -> Result<Self> {
        if !matches!(rustix::net::sockopt::socket_domain(&fd), Ok(AddressFamily::UNIX)) {
            return Err(peer_fail!(
                Error::InvalidValue,
                "the peer's doorbell (fd {}) is not a Unix socket",
                fd.as_fd().as_raw_fd()
            ));
        }
        if !matches!(rustix::net::sockopt::socket_type(&fd), Ok(SocketType::DGRAM)) {
            return Err(peer_fail!(
                Error::InvalidValue,
                "the peer's doorbell (fd {}) is not a datagram socket",
                fd.as_fd().as_raw_fd()
            ));
        }
        Ok(Doorbell { fd: BellFd::Peer(fd) })
    }

    /// Makes the other end of the pair readable: one `send` that never blocks (a full queue
    /// means it is ringing already; a peer that went away is not there to wake). Rung on a
    /// peer's doorbell ([`Doorbell::from_peer`]).
    pub fn ring(&self) {
        let _ = rustix::net::send(self.as_fd(), &[1], SendFlags::DONTWAIT | SendFlags::NOSIGNAL);
    }

    /// Takes one ring off this side's end: whether there was one (`Err` for a pending socket
    /// error, read and so cleared). Where the end cannot refuse descriptors, with room for
    /// any a peer attached (each closed on a closing thread).
    fn take_one(&self) -> std::result::Result<bool, Errno> {
        match &self.fd {
            BellFd::Refusing(fd) => {
                let mut buf = [0u8; 8];
                match rustix::net::recv(fd, &mut buf, RecvFlags::DONTWAIT) {
                    Ok(_) => Ok(true),
                    Err(Errno::AGAIN) => Ok(false),
                    Err(e) => Err(e),
                }
            }
            BellFd::Peer(fd) => match crate::discard::recv_discarding(fd.as_fd(), &mut [0u8; 8]) {
                Ok(_) => Ok(true),
                Err(Errno::AGAIN) => Ok(false),
                Err(e) => Err(e),
            },
        }
    }

    /// Takes one ring off the doorbell (one `recv`); returns whether it was ringing. For a
    /// waker that rings once per sleep of this side (the usual case): a second ring, if any,
    /// leaves the socket readable, so it costs a spurious wake-up later instead of a second
    /// `recv` now on every wake-up.
    pub fn drain_once(&self) -> bool {
        match self.take_one() {
            Ok(rang) => rang,
            // A pending socket error was read and so cleared; what follows is left to drain.
            Err(_) => self.drain(),
        }
    }

    /// Silences the doorbell; returns whether it was ringing. A few `recv` calls at most,
    /// whatever the peer keeps sending (what is left keeps it readable: a spurious wake-up,
    /// for this pair's connection only). A pending socket error (a peer reconnecting its
    /// end elsewhere can leave one) is read and so cleared too.
    pub fn drain(&self) -> bool {
        let mut rang = false;
        for _ in 0..8 {
            match self.take_one() {
                Ok(true) => rang = true,
                Ok(false) => break,
                Err(_) => continue,
            }
        }
        rang
    }
}

impl AsFd for Doorbell {
    /// The socket that becomes readable: what to watch (the peer holds the other end).
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.fd {
            BellFd::Refusing(fd) => fd.as_fd(),
            BellFd::Peer(fd) => fd.as_fd(),
        }
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

    /// Silences an expired timer; returns whether it had expired (one `read`).
    pub fn drain(&self) -> bool {
        let mut buf = [0u8; 8];
        matches!(rustix::io::read(&self.fd, &mut buf), Ok(8))
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

    /// The epoll descriptor's number (what `doca_pe_get_notification_handle` returns).
    pub fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for EpollSet {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Sleeps until one of `fds` is readable or the timeout passes (`None`: no limit); true when
/// woken by one. A program with several engines sleeps on all their notification handles
/// this way (a `poll` over them: nothing to register, no set to keep).
pub fn wait_any(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> Result<bool> {
    use rustix::event::{poll, PollFd, PollFlags};
    let mut polled: SmallVec<[PollFd<'_>; 8]> =
        fds.iter().map(|fd| PollFd::from_borrowed_fd(*fd, PollFlags::IN)).collect();
    let ts = timeout.map(|d| rustix::time::Timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: d.subsec_nanos().into(),
    });
    match poll(&mut polled, ts.as_ref()) {
        Ok(n) => Ok(n > 0),
        // A signal ended the sleep early: the caller looks again, as after a wake-up.
        Err(Errno::INTR) => Ok(false),
        Err(e) => Err(os_error("poll", e)),
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

    /// A doorbell and a peer's handle on it (as the handshake hands it over).
    fn bell_and_ringer() -> (Doorbell, Doorbell) {
        let (bell, theirs) = Doorbell::pair().unwrap();
        (bell, Doorbell::from_peer(theirs).unwrap())
    }

    #[test]
    fn drain_once_takes_one_ring_and_a_second_keeps_the_set_awake() {
        let set = EpollSet::new().unwrap();
        let (bell, ringer) = bell_and_ringer();
        let _w = set.watch(bell.as_fd().try_clone_to_owned().unwrap(), 1).unwrap();
        assert!(!bell.drain_once(), "silent");
        ringer.ring();
        assert!(bell.drain_once());
        assert!(!set.wait(Some(Duration::ZERO)).unwrap(), "one ring, one recv: silent again");
        ringer.ring();
        ringer.ring();
        assert!(bell.drain_once());
        assert!(set.wait(Some(Duration::ZERO)).unwrap(), "the second ring still wakes the set");
        assert!(bell.drain_once());
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
    }

    #[test]
    fn a_rung_doorbell_wakes_the_set_until_drained_and_a_dropped_watch_is_gone() {
        let set = EpollSet::new().unwrap();
        let (bell, ringer) = bell_and_ringer();
        let w1 = set.watch(bell.as_fd().try_clone_to_owned().unwrap(), 1).unwrap();
        let w2 = set.watch(bell.as_fd().try_clone_to_owned().unwrap(), 2).unwrap(); // a second watcher
        assert_eq!(set.watch(w1.as_fd(), 3).unwrap_err(), Error::InUse, "same descriptor twice");
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
        ringer.ring();
        ringer.ring();
        assert!(set.wait(Some(Duration::from_secs(5))).unwrap());
        let mut tokens = set.ready().into_vec();
        tokens.sort();
        assert_eq!(tokens, [1, 2]);
        assert!(bell.drain());
        assert!(!bell.drain());
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
        drop(w1);
        ringer.ring();
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
        let first = set.watch(Doorbell::pair().unwrap().0, 1).unwrap();
        let raw = first.as_fd().as_raw_fd();
        drop(first);
        // Usually the kernel hands out the same number again (other threads may take it).
        let (second, ringer) = bell_and_ringer();
        let reused = second.as_fd().as_raw_fd() == raw;
        let _second = set.watch(second, 2).unwrap();
        ringer.ring();
        assert_eq!(set.ready().as_slice(), [2], "number reused: {reused}");
    }

    /// A peer cannot leave files on this side's doorbell (where the kernel can refuse them;
    /// elsewhere they are drained with room for them and closed on a closing thread),
    /// and its rings still come through.
    #[test]
    fn a_doorbell_takes_no_file_from_its_peer() {
        let (bell, theirs) = Doorbell::pair().unwrap();
        let (r, _w) = rustix::pipe::pipe().unwrap();
        let sent = crate::send(theirs.as_fd(), &[1], &[r.as_fd()]);
        if matches!(bell.fd, BellFd::Refusing(_)) {
            assert!(sent.is_err(), "the doorbell took a file");
        } else {
            eprintln!("this kernel cannot refuse descriptors (SO_PASSRIGHTS, Linux 6.16): drained instead");
        }
        crate::send(theirs.as_fd(), &[1], &[]).unwrap();
        assert!(bell.drain());
        assert!(!bell.drain(), "silent once drained");
    }

    #[test]
    fn a_peers_doorbell_must_be_a_unix_datagram_socket_and_ringing_it_never_blocks() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        assert_eq!(Doorbell::from_peer(PeerFd::new(w)).unwrap_err(), Error::InvalidValue, "a pipe");
        drop(r);
        let efd = eventfd(0, EventfdFlags::CLOEXEC).unwrap();
        assert_eq!(Doorbell::from_peer(PeerFd::new(efd)).unwrap_err(), Error::InvalidValue, "an eventfd");
        let udp = rustix::net::socket(AddressFamily::INET, SocketType::DGRAM, None).unwrap();
        assert_eq!(Doorbell::from_peer(PeerFd::new(udp)).unwrap_err(), Error::InvalidValue, "an IP socket");
        for kind in [SocketType::STREAM, SocketType::SEQPACKET] {
            // A stream end stays readable for ever once its peer shuts down: refused.
            let (a, _b) =
                rustix::net::socketpair(AddressFamily::UNIX, kind, SocketFlags::empty(), None).unwrap();
            assert_eq!(
                Doorbell::from_peer(PeerFd::new(a)).unwrap_err(),
                Error::InvalidValue,
                "a {kind:?} Unix socket"
            );
        }

        // The peer's doorbell, and the socket of it that this side gets.
        let (theirs, mine) = bell_and_ringer();
        mine.ring();
        assert!(theirs.drain());
        assert!(!theirs.drain(), "silent once drained");
        // A hostile peer never drains and keeps making the socket it gave us blocking (file
        // status flags are shared): ringing still returns, every time.
        let shared = mine.as_fd().try_clone_to_owned().unwrap();
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
        while theirs.drain() {}
    }

    /// A peer that shuts down, closes or disconnects the end it was given silences its own
    /// doorbell only: this side's end does not stay readable (a sleeper would spin), and
    /// another peer's doorbell still rings. (With a stream pair, this side's end would read
    /// end of file for ever after the shutdown.)
    #[test]
    fn a_peer_shutting_its_end_down_leaves_this_end_silent_and_touches_no_one_else() {
        let set = EpollSet::new().unwrap();
        let (bell, hostile) = Doorbell::pair().unwrap();
        let bell = set.watch(bell, 1).unwrap();
        let (other, honest) = Doorbell::pair().unwrap();
        let other = set.watch(other, 2).unwrap();
        let honest = Doorbell::from_peer(honest).unwrap();

        // Rings, then shuts its end down both ways, then closes it: the datagram already
        // queued is read once, then nothing.
        rustix::net::send(&hostile, &[1], SendFlags::DONTWAIT).unwrap();
        rustix::net::shutdown(&hostile, rustix::net::Shutdown::Both).unwrap();
        assert_eq!(set.ready().as_slice(), [1]);
        assert!(bell.drain());
        assert!(!set.wait(Some(Duration::from_millis(50))).unwrap(), "not readable after the shutdown");
        drop(hostile);
        assert!(!set.wait(Some(Duration::from_millis(50))).unwrap(), "not readable after the close");
        assert!(!bell.drain());
        drop(bell);

        // Another dissolves its end's association while a datagram waits on its side: the
        // kernel reports a reset on this end once (reading it clears it), then nothing.
        let (bell, hostile) = Doorbell::pair().unwrap();
        let bell = set.watch(bell, 3).unwrap();
        bell.ring();
        rustix::net::connect_unspec(&hostile).unwrap();
        assert_eq!(set.ready().as_slice(), [3], "the reset is reported");
        assert!(!bell.drain(), "an error, not a ring");
        assert!(!set.wait(Some(Duration::from_millis(50))).unwrap(), "not readable after the reset");
        drop(hostile);
        assert!(!set.wait(Some(Duration::from_millis(50))).unwrap(), "not readable after the close");

        honest.ring();
        assert!(set.wait(Some(Duration::from_secs(5))).unwrap());
        assert_eq!(set.ready().as_slice(), [2], "the other pair rang, not these");
        assert!(other.drain());
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
    }

    /// A peer flooding its end fills this pair's queue only (its own sends then fail): the
    /// honest peer of another pair still rings, and draining stays bounded.
    #[test]
    fn a_flooded_pair_does_not_stop_another_pair_ringing() {
        let (flooded, flooder) = bell_and_ringer();
        let (bell, honest) = bell_and_ringer();
        let mut sent = 0u64;
        while rustix::net::send(flooder.as_fd(), &[1], SendFlags::DONTWAIT).is_ok() {
            sent += 1;
            assert!(sent < 10_000_000, "a datagram pair's queue is bounded");
        }
        honest.ring();
        assert!(bell.drain(), "the honest ring arrived");
        assert!(flooded.drain(), "the flooded pair rings (its own connection's spurious wake-up)");
    }

    /// No doorbell has an address: nothing to find in `/proc/net/unix`, nothing another
    /// process could send a datagram to or connect to.
    #[test]
    fn a_doorbell_has_no_address_anyone_could_reach() {
        let (bell, theirs) = Doorbell::pair().unwrap();
        for fd in [bell.as_fd(), theirs.as_fd()] {
            // Only the address family: an unnamed socket (unix(7)).
            let addr = rustix::net::getsockname(fd).unwrap();
            assert_eq!(addr.addr_len() as usize, std::mem::size_of::<u16>(), "no name: {addr:?}");
            let st = rustix::fs::fstat(fd).unwrap();
            let table = std::fs::read_to_string("/proc/net/unix").unwrap();
            let line = table
                .lines()
                .find(|l| l.split_whitespace().nth(6) == Some(&st.st_ino.to_string()))
                .expect("every Unix socket is listed");
            assert_eq!(line.split_whitespace().nth(7), None, "listed without a path: {line}");
        }
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
