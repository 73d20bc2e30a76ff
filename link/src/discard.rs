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

/// A descriptor a peer chose, or a socket a peer sends to, closed so that the closing thread
/// never waits on the peer. A socket is made to refuse descriptors ([`refuse_descriptors`]),
/// the files still queued on it are taken off and [`discard`]ed, and it is shut down (its
/// peer sees it gone at once) and closed in place; anything else, or a socket whose queue
/// could not be seen empty, is [`discard`]ed. Share one rather than duplicate it (an
/// `Arc<PeerFd>` in an epoll set): a plain duplicate closed last would release what is left
/// on the queue in its closing thread.
#[derive(Debug)]
pub struct PeerFd(Option<OwnedFd>);

impl PeerFd {
    /// Wraps `fd`.
    pub fn new(fd: OwnedFd) -> PeerFd {
        PeerFd(Some(fd))
    }

    /// The descriptor itself, for an owner that takes over closing it (a file checked to be
    /// one that closes without waiting on anyone, a memfd; or this process's own end).
    pub fn into_inner(mut self) -> OwnedFd {
        self.0.take().expect("taken only once")
    }
}

impl From<OwnedFd> for PeerFd {
    fn from(fd: OwnedFd) -> PeerFd {
        PeerFd::new(fd)
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
            // A socket that refuses descriptors from now on and whose queue is emptied holds
            // no file of the peer's: closed here. Anything else (a file, a socket on a kernel
            // that cannot refuse) goes to the discarding thread.
            let emptied = refuse_descriptors(fd.as_fd()) && empty_queue(fd.as_fd());
            // Shut down: its peer sees it gone at once, as at a close.
            let _ = rustix::net::shutdown(&fd, rustix::net::Shutdown::Both);
            if emptied {
                drop(fd);
            } else {
                discard(fd);
            }
        }
    }
}

/// Takes every packet off the receiving queue of the socket `sock` (refusing descriptors
/// already, so that none can join the queue), with room for the descriptors each carries,
/// and [`discard`]s those: true once the queue is seen empty. False when that cannot be told
/// (a peer's run of empty datagrams reads like the end of a connection).
fn empty_queue(sock: BorrowedFd<'_>) -> bool {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let stream = rustix::net::sockopt::socket_type(sock).is_ok_and(|t| t == rustix::net::SocketType::STREAM);
    let mut space = [std::mem::MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut bytes = [0u8; 256];
    let mut empties = 0;
    // Bounded: the queue as it was when descriptors were refused is all that can hold any.
    for _ in 0..4096 {
        let mut control = RecvAncillaryBuffer::new(&mut space);
        match rustix::net::recvmsg(
            sock,
            &mut [std::io::IoSliceMut::new(&mut bytes)],
            &mut control,
            RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(msg) => {
                let mut fds = false;
                for m in control.drain() {
                    if let RecvAncillaryMessage::ScmRights(received) = m {
                        for fd in received {
                            fds = true;
                            discard(fd);
                        }
                    }
                }
                if msg.bytes == 0 && !fds {
                    // A stream's end of file comes after all its data.
                    if stream {
                        return true;
                    }
                    empties += 1;
                    if empties >= 8 {
                        return false;
                    }
                }
            }
            Err(rustix::io::Errno::AGAIN) => return true,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
    false
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

/// For tests and attack harnesses: a pipe whose lock a thread of this process holds (a
/// `splice` into it from a socket with nothing to read), with `files` of its read end of
/// their own, opened before the lock was taken: the last close of each takes the lock, so it
/// waits until [`LockedPipe::release`] (or the drop, which releases first).
#[doc(hidden)]
pub struct LockedPipe {
    /// Files of the pipe, each closed last by whoever holds it when the lock goes.
    pub files: Vec<OwnedFd>,
    release: OwnedFd,
    holder: Option<std::thread::JoinHandle<()>>,
    _ends: (OwnedFd, OwnedFd),
}

impl LockedPipe {
    /// A pipe, `files` files of its read end, and a thread holding its lock.
    pub fn new(files: usize) -> std::io::Result<LockedPipe> {
        let (r, w) = rustix::pipe::pipe()?;
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&r));
        let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC;
        let files = (0..files)
            .map(|_| rustix::fs::open(path.as_str(), flags, rustix::fs::Mode::empty()))
            .collect::<rustix::io::Result<Vec<_>>>()?;
        let (held, release) = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )?;
        let w2 = w.try_clone()?;
        let holder = std::thread::spawn(move || {
            let _ = rustix::pipe::splice(&held, None, &w2, None, 16, rustix::pipe::SpliceFlags::empty());
        });
        // Until the splice waits with the lock held.
        std::thread::sleep(std::time::Duration::from_millis(100));
        Ok(LockedPipe { files, release, holder: Some(holder), _ends: (r, w) })
    }

    /// Lets the lock go (the splice gets its bytes and returns).
    pub fn release(&mut self) {
        if let Some(h) = self.holder.take() {
            let _ = rustix::io::write(&self.release, b"go");
            let _ = h.join();
        }
    }
}

impl Drop for LockedPipe {
    fn drop(&mut self) {
        self.release();
    }
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

    /// Dropping a peer's socket with one of the peer's files still queued on it returns at
    /// once, even when closing that file would wait (a pipe whose lock the peer holds): the
    /// file is taken off the queue and closed on the discarding thread.
    #[test]
    fn dropping_a_peer_socket_waits_on_no_file_queued_on_it() {
        let mut pipe = LockedPipe::new(2).unwrap();
        for kind in [rustix::net::SocketType::SEQPACKET, rustix::net::SocketType::DGRAM] {
            let (peer, ours) = rustix::net::socketpair(
                rustix::net::AddressFamily::UNIX,
                kind,
                rustix::net::SocketFlags::CLOEXEC | rustix::net::SocketFlags::NONBLOCK,
                None,
            )
            .unwrap();
            let file = pipe.files.pop().unwrap();
            crate::send(peer.as_fd(), b"", &[]).unwrap();
            crate::send(peer.as_fd(), b"a file", &[file.as_fd()]).unwrap();
            // The queued copy is the last of its file now (this close is not: it takes no lock).
            drop(file);
            let dropper = std::thread::spawn(move || drop(PeerFd::new(ours)));
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while !dropper.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            let done = dropper.is_finished();
            if !done {
                pipe.release();
            }
            assert!(done, "dropping a {kind:?} socket waited on the peer's file");
            dropper.join().unwrap();
            // Its peer sees it gone.
            assert!(crate::send(peer.as_fd(), b"more", &[]).is_err(), "{kind:?}");
        }
    }
}
