//! Kernel objects for sleeping: doorbells (Unix datagram sockets between processes, an
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
//! Two watchers of one file each register their own duplicate (`try_clone_to_owned`).

use std::ops::Deref;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{epoll, eventfd, EventfdFlags};
use rustix::io::Errno;
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketAddrUnix, SocketFlags, SocketType};
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec,
};
use smallvec::SmallVec;

use crate::{fail, Error, Result};

pub(crate) fn os_error(what: &str, e: Errno) -> Error {
    fail!(Error::OperatingSystem, "{what}: {e}")
}

/// A doorbell between processes: a Unix datagram socket, readable until drained once a
/// datagram reaches it. Each peer gets a socket of its own connected to it
/// ([`Doorbell::ringer`]) and rings with `send(MSG_DONTWAIT)`. `Send + Sync`.
///
/// Why so: an eventfd is one open file, shared whole with the peer that holds it, file status
/// flags included — a hostile peer could fill its counter and clear `O_NONBLOCK` between this
/// side's check and its `write` (or drain it and make this side's `read` block), hanging the
/// thread. A stream socket pair would not do either: a peer that shuts its end down leaves
/// this end readable for ever (the sleeper would spin), and one shared ringing end would let
/// one peer silence the others' rings. Here a send never blocks whatever the peer does to a
/// socket (a full queue means the doorbell is ringing already), this side's socket is its
/// own, and what a peer does to its ringing socket touches that socket only. The address is
/// abstract (nothing on disk): another process that finds it can only wake this side for
/// nothing.
#[derive(Debug)]
pub struct Doorbell {
    /// A doorbell of this process: the socket that becomes readable (watched, drained); a
    /// peer's: the socket this side rings it with.
    fd: OwnedFd,
    /// A doorbell of this process: its address, which ringing sockets are connected to
    /// (boxed: a peer's doorbell, kept in every channel, has none).
    addr: Option<Box<SocketAddrUnix>>,
}

impl Doorbell {
    /// A new, silent doorbell (non-blocking, close-on-exec), at an abstract address of its
    /// own.
    pub fn new() -> Result<Self> {
        let fd = dgram_socket()?;
        for _ in 0..8 {
            let mut id = [0u8; 8];
            let _ = rustix::rand::getrandom(&mut id, rustix::rand::GetRandomFlags::empty());
            let name = format!("doca-emu-bell/{}/{:016x}", std::process::id(), u64::from_ne_bytes(id));
            let addr = SocketAddrUnix::new_abstract_name(name.as_bytes())
                .map_err(|e| os_error("bell address", e))?;
            match rustix::net::bind(&fd, &addr) {
                Ok(()) => return Ok(Doorbell { fd, addr: Some(Box::new(addr)) }),
                Err(Errno::ADDRINUSE) => continue,
                Err(e) => return Err(os_error("bind a doorbell", e)),
            }
        }
        Err(fail!(Error::OperatingSystem, "no free doorbell address after 8 tries"))
    }

    /// Wraps a socket a peer gave to ring its doorbell with: it must be a Unix socket
    /// (`INVALID_VALUE` for an eventfd, a pipe, a file, another kind of socket…).
    pub fn from_peer(fd: OwnedFd) -> Result<Self> {
        if !matches!(rustix::net::sockopt::socket_domain(&fd), Ok(AddressFamily::UNIX)) {
            return Err(crate::peer_fail!(
                Error::InvalidValue,
                "the peer's doorbell (fd {}) is not a Unix socket",
                fd.as_raw_fd()
            ));
        }
        Ok(Doorbell { fd, addr: None })
    }

    /// A socket that rings this doorbell, to hand to one peer (every peer gets its own: what
    /// one does to it — shutting it down, closing it — silences that peer only).
    /// `INVALID_VALUE` on a peer's doorbell.
    pub fn ringer(&self) -> Result<OwnedFd> {
        let Some(addr) = &self.addr else {
            return Err(fail!(Error::InvalidValue, "a peer's doorbell has no ringer to give"));
        };
        let fd = dgram_socket()?;
        rustix::net::connect(&fd, &**addr).map_err(|e| os_error("connect a doorbell ringer", e))?;
        Ok(fd)
    }

    /// Makes the doorbell readable: one `send` that never blocks (a full queue means it is
    /// ringing already; a peer that went away is not there to wake).
    pub fn ring(&self) {
        let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
        let _ = match &self.addr {
            Some(addr) => rustix::net::sendto(&self.fd, &[1], flags, &**addr),
            None => rustix::net::send(&self.fd, &[1], flags),
        };
    }

    /// Silences the doorbell; returns whether it was ringing. A few `recv` calls at most,
    /// whatever peers keep sending (what is left keeps it readable: a spurious wake-up).
    pub fn drain(&self) -> bool {
        let mut buf = [0u8; 8];
        let mut rang = false;
        for _ in 0..8 {
            match rustix::net::recv(&self.fd, &mut buf, RecvFlags::DONTWAIT) {
                Ok(_) => rang = true,
                Err(_) => break,
            }
        }
        rang
    }
}

/// A non-blocking, close-on-exec Unix datagram socket.
fn dgram_socket() -> Result<OwnedFd> {
    rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::DGRAM,
        SocketFlags::NONBLOCK | SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|e| os_error("socket", e))
}

impl AsFd for Doorbell {
    /// The socket that becomes readable: what to watch (a peer is given a
    /// [`Doorbell::ringer`] instead).
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

        // The peer's doorbell, and the socket of it that this side gets.
        let theirs = Doorbell::new().unwrap();
        let mine = Doorbell::from_peer(theirs.ringer().unwrap()).unwrap();
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

    /// A peer that shuts down (or closes) the socket it was given to ring this side's
    /// doorbell silences itself only: the doorbell does not stay readable (a sleeper would
    /// spin), and another peer's rings still arrive.
    #[test]
    fn a_peer_shutting_its_ringer_down_touches_no_one_else() {
        let set = EpollSet::new().unwrap();
        let bell = set.watch(Doorbell::new().unwrap(), 1).unwrap();
        let hostile = bell.ringer().unwrap();
        let honest = Doorbell::from_peer(bell.ringer().unwrap()).unwrap();
        rustix::net::shutdown(&hostile, rustix::net::Shutdown::Both).unwrap();
        drop(hostile);
        assert!(!set.wait(Some(Duration::from_millis(50))).unwrap(), "not readable for nothing");
        honest.ring();
        assert!(set.wait(Some(Duration::from_secs(5))).unwrap());
        assert!(bell.drain());
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
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
