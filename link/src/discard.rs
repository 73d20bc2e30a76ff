//! Files from a peer that this process does not keep, and sockets a peer may have queued
//! files on, are closed on a thread of their own.
//!
//! Closing a file can wait on whoever else holds it: the last close of a pipe end takes the
//! pipe's lock, which a peer holding any file of that pipe can hold for as long as it likes
//! (a `splice` into it from an empty blocking socket); a file of a FUSE file system is
//! flushed, which waits for that file system's server. The wait is uninterruptible. So no
//! thread that matters (an application's, a library thread a stop joins) closes a file a peer
//! chose: [`discard`] hands it to the `doca-link-discard` thread, which closes files one after
//! the other and may wait there for ever without harm. The same holds for a socket a peer
//! sent packets to: closing it releases the files still queued on it, in the closing thread.
//!
//! Receiving with room for fewer descriptors than a packet carries is no way out either: the
//! kernel releases the rest in the receiving thread, on its way back from `recvmsg`. Receive
//! with room for [`MAX_FDS`], or refuse descriptors on the socket ([`refuse_descriptors`]).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use parking_lot::Mutex;

/// The most descriptors one packet can carry (the kernel's `SCM_MAX_FD`).
pub const MAX_FDS: usize = 253;

/// The discarding thread's queue, with the process it belongs to (a child of `fork` starts
/// its own).
static GRAVE: Mutex<Option<(u32, std::sync::mpsc::Sender<OwnedFd>)>> = Mutex::new(None);

/// Closes `fd` on the discarding thread (started at the first call in this process). When no
/// thread can be started, the descriptor is kept open for the life of the process rather than
/// closed here.
pub fn discard(fd: OwnedFd) {
    let pid = std::process::id();
    let mut grave = GRAVE.lock();
    let fd = match &*grave {
        Some((p, tx)) if *p == pid => match tx.send(fd) {
            Ok(()) => return,
            Err(e) => e.0,
        },
        _ => fd,
    };
    let (tx, rx) = std::sync::mpsc::channel::<OwnedFd>();
    let spawned = std::thread::Builder::new().name("doca-link-discard".into()).spawn(move || {
        for fd in rx {
            drop(fd);
        }
    });
    match spawned {
        Ok(_) => {
            let _ = tx.send(fd);
            *grave = Some((pid, tx));
        }
        Err(e) => {
            tracing::warn!(target: "doca_sdk", "no thread to close a peer's file on ({e}): it stays open");
            std::mem::forget(fd);
        }
    }
}

/// [`discard`] of each of `fds`.
pub fn discard_all(fds: impl IntoIterator<Item = OwnedFd>) {
    for fd in fds {
        discard(fd);
    }
}

/// A descriptor closed by [`discard`] when dropped (a socket shut down first, so that its
/// peer sees it gone at once): a socket a peer sends to, or a file it sent that is not
/// checked yet.
#[derive(Debug)]
pub struct PeerFd(Option<OwnedFd>);

impl PeerFd {
    /// Wraps `fd`.
    pub fn new(fd: OwnedFd) -> PeerFd {
        PeerFd(Some(fd))
    }

    /// The descriptor itself, for an owner that takes over closing it.
    pub fn into_inner(mut self) -> OwnedFd {
        self.0.take().expect("taken only once")
    }
}

impl AsFd for PeerFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_ref().expect("taken only when dropped").as_fd()
    }
}

impl Drop for PeerFd {
    fn drop(&mut self) {
        if let Some(fd) = self.0.take() {
            // A socket is shut down at once (the peer sees it gone now, as at a close; its
            // queued files stay for the discarding thread); anything else fails harmlessly.
            let _ = rustix::net::shutdown(&fd, rustix::net::Shutdown::Both);
            discard(fd);
        }
    }
}

/// `SO_PASSRIGHTS` (Linux 6.16 and later; not in every `libc` yet).
const SO_PASSRIGHTS: libc::c_int = 83;

/// Makes the socket `sock` refuse descriptors from now on: a peer's `sendmsg` carrying any
/// fails (`EPERM`) instead of queueing them here (what it queued before stays: receive with
/// room for [`MAX_FDS`] and [`discard`] what comes). False when the kernel cannot (before
/// Linux 6.16).
pub fn refuse_descriptors(sock: BorrowedFd<'_>) -> bool {
    let off: libc::c_int = 0;
    // SAFETY: a valid descriptor, and a pointer to an int of the size given.
    let r = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&sock),
            libc::SOL_SOCKET,
            SO_PASSRIGHTS,
            (&off as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A discarded file is closed (on the discarding thread): the other end of a pipe sees it
    /// go.
    #[test]
    fn a_discarded_file_is_closed() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        discard(r);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match rustix::io::write(&w, b"x") {
                Err(rustix::io::Errno::PIPE) => break,
                _ => assert!(std::time::Instant::now() < deadline, "the read end was never closed"),
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// A socket refusing descriptors makes its peer's `sendmsg` of one fail, where the
    /// kernel supports it; a plain packet still goes through.
    #[test]
    fn a_socket_refusing_descriptors_gets_none() {
        let (a, b) = crate::socketpair().unwrap();
        if !refuse_descriptors(b.as_fd()) {
            eprintln!("skipped: this kernel has no SO_PASSRIGHTS (Linux 6.16)");
            return;
        }
        let (r, _w) = rustix::pipe::pipe().unwrap();
        assert!(crate::send(a.as_fd(), b"with a file", &[r.as_fd()]).is_err());
        assert!(crate::send(a.as_fd(), b"plain", &[]).is_ok());
    }
}
