//! Kernel objects for sleeping: doorbells (eventfd) and the epoll set behind a progress
//! engine's notification handle.
//!
//! The busy path never touches these: a side rings a doorbell only when the other side has
//! armed itself (DESIGN §3 "Notification"), so a busy-polling pair makes no syscalls and a
//! sleeping one costs one wake-up.

use std::cell::RefCell;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use rustix::event::{epoll, eventfd, EventfdFlags};
use rustix::io::Errno;
use smallvec::SmallVec;

use crate::{fail, Error, Result};

pub(crate) fn os_error(what: &str, e: Errno) -> Error {
    fail!(Error::OperatingSystem, "{what}: {e}")
}

/// An eventfd: ringing makes it readable until drained. `Send + Sync`; it can be passed to
/// another process (it is just a file descriptor).
#[derive(Debug)]
pub struct Doorbell {
    fd: OwnedFd,
}

impl Doorbell {
    /// A new, silent doorbell (non-blocking, close-on-exec).
    pub fn new() -> Result<Self> {
        let fd =
            eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC).map_err(|e| os_error("eventfd", e))?;
        Ok(Doorbell { fd })
    }

    /// Wraps an eventfd received from elsewhere (e.g. from the peer over a socket).
    pub fn from_fd(fd: OwnedFd) -> Self {
        Doorbell { fd }
    }

    /// Makes the doorbell readable (one `write`).
    pub fn ring(&self) {
        // An eventfd write only fails when the counter would overflow, which means the
        // doorbell is already ringing: nothing is lost.
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    /// Silences the doorbell; returns whether it was ringing (one `read`).
    pub fn drain(&self) -> bool {
        let mut buf = [0u8; 8];
        matches!(rustix::io::read(&self.fd, &mut buf), Ok(8))
    }
}

impl AsFd for Doorbell {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// An epoll set: the notification handle of a progress engine. Several contexts may watch
/// the same fd (e.g. producers sharing their connection's doorbell): the set counts the
/// watchers and holds the fd until the last one leaves.
#[derive(Debug)]
pub(crate) struct EpollSet {
    fd: OwnedFd,
    /// (watched fd, number of watchers).
    watched: RefCell<SmallVec<[(RawFd, u32); 8]>>,
}

impl EpollSet {
    pub(crate) fn new() -> Result<Self> {
        let fd = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| os_error("epoll_create", e))?;
        Ok(EpollSet { fd, watched: RefCell::new(SmallVec::new()) })
    }

    pub(crate) fn add(&self, source: BorrowedFd<'_>) -> Result<()> {
        let raw = source.as_raw_fd();
        let mut watched = self.watched.borrow_mut();
        if let Some((_, n)) = watched.iter_mut().find(|(fd, _)| *fd == raw) {
            *n += 1;
            return Ok(());
        }
        let key = epoll::EventData::new_u64(raw as u64);
        epoll::add(&self.fd, source, key, epoll::EventFlags::IN)
            .map_err(|e| os_error("epoll_ctl(ADD)", e))?;
        watched.push((raw, 1));
        Ok(())
    }

    pub(crate) fn remove(&self, source: BorrowedFd<'_>) -> Result<()> {
        let raw = source.as_raw_fd();
        let mut watched = self.watched.borrow_mut();
        let Some(at) = watched.iter().position(|(fd, _)| *fd == raw) else {
            return Err(fail!(Error::NotFound, "fd {raw} is not watched"));
        };
        watched[at].1 -= 1;
        if watched[at].1 > 0 {
            return Ok(());
        }
        watched.swap_remove(at);
        epoll::delete(&self.fd, source).map_err(|e| os_error("epoll_ctl(DEL)", e))
    }

    /// Sleeps until a watched fd is readable or the timeout passes; true when woken by an fd.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> Result<bool> {
        let mut events =
            [epoll::Event { flags: epoll::EventFlags::empty(), data: epoll::EventData::new_u64(0) }; 4];
        let ts = timeout.map(|d| rustix::time::Timespec {
            tv_sec: d.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: d.subsec_nanos().into(),
        });
        loop {
            match epoll::wait(&self.fd, &mut events[..], ts.as_ref()) {
                Ok(n) => return Ok(n > 0),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(os_error("epoll_wait", e)),
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rung_doorbell_wakes_the_set_until_drained() {
        let set = EpollSet::new().unwrap();
        let bell = Doorbell::new().unwrap();
        set.add(bell.as_fd()).unwrap();
        set.add(bell.as_fd()).unwrap(); // a second watcher of the same fd
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
        bell.ring();
        bell.ring();
        assert!(set.wait(Some(Duration::from_secs(5))).unwrap());
        assert!(bell.drain());
        assert!(!bell.drain());
        assert!(!set.wait(Some(Duration::ZERO)).unwrap());
        set.remove(bell.as_fd()).unwrap();
        bell.ring();
        assert!(set.wait(Some(Duration::ZERO)).unwrap(), "still watched for the other watcher");
        set.remove(bell.as_fd()).unwrap();
        assert!(!set.wait(Some(Duration::ZERO)).unwrap(), "the last watcher left");
        assert_eq!(set.remove(bell.as_fd()), Err(Error::NotFound));
    }
}
