//! Socket files whose server is gone: what a process killed by SIGKILL leaves beside its
//! status page (a Comm Channel or legacy service socket, its memory service socket, and
//! each one's lock file).
//!
//! Every socket the library makes (`<name>.sock`) has a lock file beside it
//! (`<name>.sock.lock`) whose `flock` its server holds for its whole life. So:
//!
//! | what is in the directory                  | the server is                               |
//! |-------------------------------------------|---------------------------------------------|
//! | the lock file, its lock held              | alive: nothing is touched                   |
//! | the lock file, its lock free              | gone: the socket and the lock file are left-overs |
//! | a socket without a lock file              | gone when connecting to it is refused (nobody listens); alive otherwise |
//!
//! [`remove`] takes the free lock before removing (socket first, then lock file, as a
//! stopping server does), so a server that starts meanwhile is never robbed of its names: it
//! either finds the lock held (and reports `IN_USE` once) or takes the lock after the names
//! are gone.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use rustix::io::Errno;

const SOCK: &str = ".sock";

/// A socket of a server that is gone, and its lock file if it has one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    /// The socket's name (`<name>.sock`; it may be missing when only the lock file is left).
    pub sock: String,
    /// Whether a lock file is beside it.
    pub locked_by_file: bool,
}

/// Opens and tries to lock `<sock>.lock`: `Some(lock)` when it was free (the server is gone;
/// the lock is held until the returned descriptor closes), `None` when a server holds it or
/// it cannot be opened.
fn take_lock(dir: BorrowedFd<'_>, sock: &str) -> Option<OwnedFd> {
    let fd = rustix::fs::openat(
        dir,
        format!("{sock}.lock").as_str(),
        OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if st.st_uid != rustix::process::getuid().as_raw()
        || !rustix::fs::FileType::from_raw_mode(st.st_mode).is_file()
    {
        return None;
    }
    rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive).ok().map(|()| fd)
}

/// Whether something listens on socket `sock` of `dir`: only a refused connection (or no
/// file) says nobody does; the library's sockets are `SOCK_SEQPACKET`, another program's
/// may be a stream socket (tried as such).
fn listened(dir: BorrowedFd<'_>, sock: &str) -> bool {
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
    let path = format!("/proc/self/fd/{}/{sock}", dir.as_raw_fd());
    let Ok(addr) = SocketAddrUnix::new(path.as_str()) else { return true };
    for ty in [SocketType::SEQPACKET, SocketType::STREAM] {
        let Ok(s) = rustix::net::socket_with(
            AddressFamily::UNIX,
            ty,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            None,
        ) else {
            return true;
        };
        match rustix::net::connect(&s, &addr) {
            Err(Errno::CONNREFUSED) | Err(Errno::NOENT) => return false,
            Err(Errno::PROTOTYPE) => continue,
            _ => return true,
        }
    }
    true
}

/// Every socket (and lone lock file) of the fabric directory `dir` whose server is gone.
pub fn orphans(dir: &impl AsFd) -> std::io::Result<Vec<Orphan>> {
    let dir = dir.as_fd();
    let mut socks = Vec::new();
    let mut locks = Vec::new();
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else { continue };
        if let Some(sock) = name.strip_suffix(".lock").filter(|s| s.ends_with(SOCK)) {
            locks.push(sock.to_string());
        } else if name.ends_with(SOCK) {
            socks.push(name.to_string());
        }
    }
    let mut out = Vec::new();
    for sock in &locks {
        if take_lock(dir, sock).is_some() {
            out.push(Orphan { sock: sock.clone(), locked_by_file: true });
        }
    }
    for sock in socks.iter().filter(|s| !locks.contains(s)) {
        if !listened(dir, sock) {
            out.push(Orphan { sock: sock.clone(), locked_by_file: false });
        }
    }
    out.sort_by(|a, b| a.sock.cmp(&b.sock));
    Ok(out)
}

/// Removes the names of `orphan`, checked again just before (the lock taken, or the
/// connection refused): the names removed.
pub fn remove(dir: &impl AsFd, orphan: &Orphan) -> Vec<String> {
    let dir = dir.as_fd();
    let mut removed = Vec::new();
    let mut unlink = |name: &str| match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) => removed.push(name.to_string()),
        Err(Errno::NOENT) => {}
        Err(e) => eprintln!("cannot remove {name}: {e}"),
    };
    if orphan.locked_by_file {
        // Held while both names go: a server binding now waits for none of them.
        let Some(_lock) = take_lock(dir, &orphan.sock) else { return removed };
        unlink(&orphan.sock);
        unlink(&format!("{}.lock", orphan.sock));
    } else if !listened(dir, &orphan.sock) {
        unlink(&orphan.sock);
    }
    removed
}
