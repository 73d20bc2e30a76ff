//! Kernel objects for sleeping: doorbells (pipes between processes, each side reaching the
//! pipe through an open file of its own; an eventfd within one), timers (timerfd), and epoll
//! sets with the watches that register file descriptors in them.
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
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec,
};
use smallvec::SmallVec;

use crate::error::{fail, peer_fail};
use crate::{Error, Result};

pub(crate) fn os_error(what: &str, e: Errno) -> Error {
    fail!(Error::OperatingSystem, "{what}: {e}")
}

/// A doorbell between processes: a pipe with no name, readable until drained once a byte
/// reaches it. [`Doorbell::pair`] makes one and the pipe end that rings it, which this side
/// hands to one peer (over the authenticated handshake socket, with `SCM_RIGHTS`); the peer
/// wraps what it received with [`Doorbell::from_peer`] and rings with one `write`. `Send +
/// Sync`.
///
/// Each side reaches the pipe through an open file of its own: each opens its end again
/// through `/proc/self/fd` (this process's own table, so it works in any PID namespace and
/// for a process that is not dumpable), readable and writable, non-blocking, and uses only
/// that file. So:
/// - file status flags are not shared: a peer that makes the file it holds blocking, or
///   fills the pipe, cannot block this side's `write` (a full pipe is a doorbell ringing
///   already) nor its `read`;
/// - each side's file reads and writes, so the pipe always has a reader and a writer while
///   either side holds it: a ring never raises `SIGPIPE` (a C program's default kills the
///   process) when the peer closed its end or died, and this side's end never reads end of
///   file (a sleeper on it would spin);
/// - nobody but the one peer holding the other end can reach it: a pipe has no name, and its
///   files are reachable through `/proc/<pid>/fd` only by what may trace this process anyway;
///   what one peer does to its pipe touches that pipe only (a peer flooding its own pipe wakes
///   this side for its own connection, never fills another connection's doorbell).
///
/// Why not the others: an eventfd cannot be opened again (its one open file is shared whole
/// with the peer, flags included: a hostile peer could fill its counter and clear
/// `O_NONBLOCK` between this side's check and its `write`); a socket pair works the same
/// way as this (datagrams, `MSG_DONTWAIT`) but costs several times a pipe's `write` and
/// `read` for each wake-up; a socket bound to a name (even an abstract one) can be found in
/// `/proc/net/unix` and flooded by any process of any user.
#[derive(Debug)]
pub struct Doorbell {
    /// This side's own open file of the pipe (watched and drained, or rung).
    fd: OwnedFd,
}

/// The pipe `fd` opened again through this process's descriptor table: an open file of this
/// side's own (readable, writable, non-blocking, close-on-exec), whose flags no other
/// process can change. `None` when it is not an unnamed pipe; the error when the reopening
/// failed.
///
/// Only an unnamed pipe (`pipe:[inode]` in `/proc/self/fd`), not a FIFO of a file system: the
/// name is read from the descriptor table alone, and opening a pipe asks no file system, so
/// a peer's file on a file system it serves itself (FUSE) is refused without a request that
/// its server could leave unanswered.
fn own_file_of(fd: BorrowedFd<'_>) -> std::result::Result<Option<OwnedFd>, Errno> {
    use rustix::fs::{Mode, OFlags};
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    let name = rustix::fs::readlink(&path, Vec::new())?;
    if !name.as_bytes().starts_with(b"pipe:[") {
        return Ok(None);
    }
    let own = rustix::fs::open(
        &path,
        OFlags::RDWR | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    // The same pipe (a `/proc` that is not the kernel's would name something else).
    let again = rustix::fs::readlink(format!("/proc/self/fd/{}", own.as_raw_fd()), Vec::new())?;
    if again != name {
        return Err(Errno::XDEV);
    }
    Ok(Some(own))
}

impl Doorbell {
    /// A new, silent doorbell (non-blocking, close-on-exec, no name), and the pipe end that
    /// rings it: hand that to exactly one peer (and close this process's copy once handed
    /// over). What the peer does to it — closing it, making it blocking, flooding it —
    /// touches this pipe only. Needs `/proc` (`OPERATING_SYSTEM` without it).
    pub fn pair() -> Result<(Doorbell, OwnedFd)> {
        use rustix::pipe::{pipe_with, PipeFlags};
        let (r, w) = pipe_with(PipeFlags::NONBLOCK | PipeFlags::CLOEXEC).map_err(|e| os_error("pipe", e))?;
        match own_file_of(r.as_fd()) {
            Ok(Some(ours)) => Ok((Doorbell { fd: ours }, w)),
            Ok(None) => Err(fail!(Error::OperatingSystem, "pipe2 made something that is not a pipe")),
            Err(e @ (Errno::NOENT | Errno::NOTDIR)) => {
                Err(os_error("opening a doorbell's pipe again through /proc/self/fd (is /proc mounted?)", e))
            }
            Err(e) => Err(os_error("opening a doorbell's pipe again through /proc/self/fd", e)),
        }
    }

    /// Wraps a pipe end a peer gave to ring its doorbell with, opened again as this side's
    /// own file. It must be an unnamed pipe (`INVALID_VALUE` for an eventfd, a socket, a
    /// file, a device, a FIFO of a file system…: what could block the side ringing it, or
    /// stay readable for ever), and one this process may open (`INVALID_VALUE` otherwise).
    pub fn from_peer(fd: OwnedFd) -> Result<Self> {
        match own_file_of(fd.as_fd()) {
            Ok(Some(own)) => Ok(Doorbell { fd: own }),
            Ok(None) => Err(peer_fail!(
                Error::InvalidValue,
                "the peer's doorbell (fd {}) is not an unnamed pipe",
                fd.as_raw_fd()
            )),
            Err(e) => Err(peer_fail!(
                Error::InvalidValue,
                "the peer's doorbell (fd {}) cannot be opened again through /proc/self/fd: {e}",
                fd.as_raw_fd()
            )),
        }
    }

    /// Makes the peer's end readable: one `write` on this side's own non-blocking file (a
    /// full pipe means it is ringing already; a peer that went away is not there to wake,
    /// and its leaving raises no `SIGPIPE`: this file reads too). Rung on a peer's doorbell
    /// ([`Doorbell::from_peer`]).
    pub fn ring(&self) {
        let _ = rustix::io::write(&self.fd, &[1]);
    }

    /// Takes the rings off the doorbell (one `read` of up to 64); returns whether it was
    /// ringing. For a waker that rings once per sleep of this side (the usual case): what a
    /// flood leaves keeps the pipe readable, a spurious wake-up later instead of more reads
    /// now.
    pub fn drain_once(&self) -> bool {
        let mut buf = [0u8; 64];
        matches!(rustix::io::read(&self.fd, &mut buf), Ok(n) if n > 0)
    }

    /// Silences the doorbell; returns whether it was ringing. A few `read`s at most,
    /// whatever the peer keeps writing (what is left keeps it readable: a spurious wake-up,
    /// for this pipe's connection only).
    pub fn drain(&self) -> bool {
        let mut buf = [0u8; 512];
        let mut rang = false;
        for _ in 0..8 {
            match rustix::io::read(&self.fd, &mut buf) {
                Ok(n) if n > 0 => rang = true,
                _ => break,
            }
        }
        rang
    }
}

impl AsFd for Doorbell {
    /// The pipe file that becomes readable: what to watch (the peer holds the other end).
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
    fn drain_once_takes_every_ring_so_far_in_one_read() {
        let set = EpollSet::new().unwrap();
        let (bell, ringer) = bell_and_ringer();
        let _w = set.watch(bell.as_fd().try_clone_to_owned().unwrap(), 1).unwrap();
        assert!(!bell.drain_once(), "silent");
        ringer.ring();
        assert!(bell.drain_once());
        assert!(!set.wait(Some(Duration::ZERO)).unwrap(), "one ring, one read: silent again");
        ringer.ring();
        ringer.ring();
        assert!(set.wait(Some(Duration::ZERO)).unwrap());
        assert!(bell.drain_once());
        assert!(!set.wait(Some(Duration::ZERO)).unwrap(), "two rings, one read");
        for _ in 0..65 {
            ringer.ring();
        }
        assert!(bell.drain_once());
        assert!(set.wait(Some(Duration::ZERO)).unwrap(), "a 65th ring is left for the next wake-up");
        assert!(bell.drain_once());
        assert!(!bell.drain_once());
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

    #[test]
    fn a_peers_doorbell_must_be_a_pipe_and_ringing_it_never_blocks() {
        use rustix::net::{AddressFamily, SocketFlags, SocketType};
        let efd = eventfd(0, EventfdFlags::CLOEXEC).unwrap();
        assert_eq!(Doorbell::from_peer(efd).unwrap_err(), Error::InvalidValue, "an eventfd");
        let udp = rustix::net::socket(AddressFamily::INET, SocketType::DGRAM, None).unwrap();
        assert_eq!(Doorbell::from_peer(udp).unwrap_err(), Error::InvalidValue, "an IP socket");
        for kind in [SocketType::DGRAM, SocketType::STREAM, SocketType::SEQPACKET] {
            let (a, _b) =
                rustix::net::socketpair(AddressFamily::UNIX, kind, SocketFlags::empty(), None).unwrap();
            assert_eq!(Doorbell::from_peer(a).unwrap_err(), Error::InvalidValue, "a {kind:?} Unix socket");
        }
        let file =
            rustix::fs::open("/proc/self/status", rustix::fs::OFlags::RDONLY, rustix::fs::Mode::empty())
                .unwrap();
        assert_eq!(Doorbell::from_peer(file).unwrap_err(), Error::InvalidValue, "a file");
        let null =
            rustix::fs::open("/dev/null", rustix::fs::OFlags::RDWR, rustix::fs::Mode::empty()).unwrap();
        assert_eq!(Doorbell::from_peer(null).unwrap_err(), Error::InvalidValue, "a device");
        let dir = std::env::temp_dir().join(format!("doorbell-fifo-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let fifo = rustix::fs::open(&path, rustix::fs::OFlags::RDWR, rustix::fs::Mode::empty()).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(Doorbell::from_peer(fifo).unwrap_err(), Error::InvalidValue, "a FIFO of a file system");

        // The peer's doorbell, and the pipe end of it that this side gets (kept, as a hostile
        // peer keeps its copy of the file it handed over).
        let (theirs, given) = Doorbell::pair().unwrap();
        let shared = given.try_clone().unwrap();
        let mine = Doorbell::from_peer(given).unwrap();
        mine.ring();
        assert!(theirs.drain());
        assert!(!theirs.drain(), "silent once drained");
        // A hostile peer never drains, fills the pipe and keeps making the file it handed
        // over blocking: this side rings through a file of its own, and returns every time.
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let st = stop.clone();
        while rustix::io::write(&shared, &[7; 512]).is_ok() {}
        let meddler = std::thread::spawn(move || {
            while !st.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = rustix::fs::fcntl_setfl(&shared, rustix::fs::OFlags::empty());
            }
        });
        for _ in 0..100_000 {
            mine.ring();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        meddler.join().unwrap();
        assert!(theirs.drain(), "it was ringing all along");
        while theirs.drain() {}
        // Nor does this side's own end block when the peer made its file blocking: reading
        // an empty pipe returns at once.
        assert!(!theirs.drain_once());
    }

    /// A peer that closes the end it was given, or the doorbell's side that goes away,
    /// leaves the other side quiet: the watched end never reads end of file (a sleeper would
    /// spin), and a ring into a pipe whose watcher is gone is no error and no `SIGPIPE` (a C
    /// program's default action would kill it). Another pipe still rings.
    #[test]
    fn a_side_going_away_leaves_the_other_quiet_and_touches_no_one_else() {
        let set = EpollSet::new().unwrap();
        let (bell, hostile) = Doorbell::pair().unwrap();
        let bell = set.watch(bell, 1).unwrap();
        let (other, honest) = Doorbell::pair().unwrap();
        let other = set.watch(other, 2).unwrap();
        let honest = Doorbell::from_peer(honest).unwrap();

        // Rings through the end it was given, then closes it: the ring is read once, then
        // nothing.
        rustix::io::write(&hostile, &[1]).unwrap();
        assert_eq!(set.ready().as_slice(), [1]);
        assert!(bell.drain());
        drop(hostile);
        assert!(!set.wait(Some(Duration::from_millis(50))).unwrap(), "not readable after the close");
        assert!(!bell.drain());
        drop(bell);

        // The watching side goes: its peer's rings still return, as writes that succeed.
        let (gone, theirs) = Doorbell::pair().unwrap();
        let ringer = Doorbell::from_peer(theirs).unwrap();
        drop(gone);
        ringer.ring();
        assert_eq!(rustix::io::write(&ringer.fd, &[1]), Ok(1), "the pipe still has a reader: no EPIPE");

        honest.ring();
        assert!(set.wait(Some(Duration::from_secs(5))).unwrap());
        assert_eq!(set.ready().as_slice(), [2], "the other pipe rang, not these");
        assert!(other.drain());
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
    }

    /// A peer flooding its end fills this pipe only (its own writes then fail): the honest
    /// peer of another pipe still rings, and draining stays bounded.
    #[test]
    fn a_flooded_pipe_does_not_stop_another_pipe_ringing() {
        let (flooded, flooder) = bell_and_ringer();
        let (bell, honest) = bell_and_ringer();
        let mut sent = 0u64;
        while rustix::io::write(&flooder.fd, &[1; 4096]).is_ok() {
            sent += 1;
            assert!(sent < 1_000_000, "a pipe is bounded");
        }
        honest.ring();
        assert!(bell.drain(), "the honest ring arrived");
        assert!(flooded.drain(), "the flooded pipe rings (its own connection's spurious wake-up)");
        assert!(flooded.drain_once(), "what a flood leaves is left for later wake-ups, not read now");
    }

    /// Each side reaches the pipe through an open file of its own: the file handed to the
    /// peer is not this side's, so what the peer does to its file's flags stays there.
    #[test]
    fn each_side_has_an_open_file_of_its_own() {
        use rustix::fs::{fcntl_getfl, OFlags};
        let (bell, given) = Doorbell::pair().unwrap();
        let ringer = Doorbell::from_peer(given.try_clone().unwrap()).unwrap();
        rustix::fs::fcntl_setfl(&given, OFlags::empty()).unwrap();
        for fd in [bell.as_fd(), ringer.fd.as_fd()] {
            let flags = fcntl_getfl(fd).unwrap();
            assert!(flags.contains(OFlags::NONBLOCK), "{flags:?}");
            assert!(flags.contains(OFlags::RDWR), "{flags:?}");
        }
        assert!(!fcntl_getfl(&given).unwrap().contains(OFlags::NONBLOCK), "the peer's file changed");
        let (a, b) = (rustix::fs::fstat(&bell).unwrap(), rustix::fs::fstat(&ringer.fd).unwrap());
        assert_eq!((a.st_dev, a.st_ino), (b.st_dev, b.st_ino), "one pipe");
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
