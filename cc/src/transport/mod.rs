//! The emulated PCIe link: rendezvous sockets in a per-user fabric directory, file
//! descriptors passed over them, and shared-memory rings (in [`ring`]).
//!
//! A server listening for the representor of host function F under name N owns a Unix
//! `SOCK_SEQPACKET` socket whose path is derived from (F, N); a client on host function F
//! connects to (F, N). So only clients of the function a representor stands for reach its
//! servers, as on the hardware. Ownership of a path is a `flock` on a lock file beside it,
//! held for the server's life: a socket file whose lock is free is stale (its server
//! crashed) and is replaced.

pub mod ring;

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use doca_core::{bail, fail, Error, PciAddr, Result};
use rustix::fs::{FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};

/// Environment variable naming the fabric directory (default: `$XDG_RUNTIME_DIR/doca-emu`,
/// else `/tmp/doca-emu-<uid>`).
pub const FABRIC_ENV: &str = "DOCA_EMU_FABRIC_DIR";

fn os(what: &str, e: Errno) -> Error {
    fail!(Error::OperatingSystem, "{what}: {e}")
}

/// The fabric directory, created with mode 0700 if missing. An existing directory must be
/// ours and closed to others (`NOT_PERMITTED` otherwise).
pub fn fabric_dir() -> Result<PathBuf> {
    let dir = match std::env::var_os(FABRIC_ENV) {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => match std::env::var_os("XDG_RUNTIME_DIR") {
            Some(d) if !d.is_empty() && Path::new(&d).is_dir() => Path::new(&d).join("doca-emu"),
            _ => PathBuf::from(format!("/tmp/doca-emu-{}", rustix::process::getuid().as_raw())),
        },
    };
    match rustix::fs::mkdir(&dir, Mode::RWXU) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => bail!(Error::OperatingSystem, "cannot create fabric directory {}: {e}", dir.display()),
    }
    let st = rustix::fs::stat(&dir).map_err(|e| os(&dir.display().to_string(), e))?;
    if st.st_uid != rustix::process::getuid().as_raw() || st.st_mode & 0o077 != 0 {
        bail!(
            Error::NotPermitted,
            "fabric directory {} must belong to this user with mode 0700 (set {FABRIC_ENV} to use another)",
            dir.display()
        );
    }
    Ok(dir)
}

/// FNV-1a, to turn arbitrary service names into short file names.
fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// The socket path of service `name` in namespace `ns` (`cc`, `ep`) on host function `pci`.
pub fn service_path(ns: &str, pci: PciAddr, name: &str) -> Result<PathBuf> {
    let p = fabric_dir()?.join(format!(
        "{ns}-{:04x}{:02x}{:02x}{:x}-{:016x}.sock",
        pci.domain(),
        pci.bus(),
        pci.device(),
        pci.function(),
        fnv64(name.as_bytes())
    ));
    if p.as_os_str().len() >= 108 {
        bail!(
            Error::InvalidValue,
            "socket path {} is too long: set {FABRIC_ENV} to a shorter directory",
            p.display()
        );
    }
    Ok(p)
}

fn seqpacket() -> Result<OwnedFd> {
    rustix::net::socket_with(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )
    .map_err(|e| os("socket", e))
}

/// A bound, listening service socket; unlinked on drop.
pub struct Listener {
    sock: OwnedFd,
    path: PathBuf,
    _lock: OwnedFd,
}

impl Listener {
    /// Binds `path`: `IN_USE` while another live server holds it; a stale socket file is
    /// replaced.
    pub fn bind(path: &Path) -> Result<Listener> {
        let mut lock_path = path.as_os_str().to_owned();
        lock_path.push(".lock");
        let lock = rustix::fs::open(
            Path::new(&lock_path),
            OFlags::CREATE | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::RUSR | Mode::WUSR,
        )
        .map_err(|e| os("open lock file", e))?;
        match rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(Errno::WOULDBLOCK) => {
                bail!(
                    Error::InUse,
                    "a server with this name already listens for this representor ({})",
                    path.display()
                )
            }
            Err(e) => return Err(os("flock", e)),
        }
        match rustix::fs::unlink(path) {
            Ok(()) => tracing::debug!(target: "doca_sdk", "replaced stale socket {}", path.display()),
            Err(Errno::NOENT) => {}
            Err(e) => return Err(os("unlink stale socket", e)),
        }
        let sock = seqpacket()?;
        let addr = SocketAddrUnix::new(path).map_err(|e| os("socket address", e))?;
        rustix::net::bind(&sock, &addr).map_err(|e| os("bind", e))?;
        rustix::net::listen(&sock, 128).map_err(|e| os("listen", e))?;
        Ok(Listener { sock, path: path.to_path_buf(), _lock: lock })
    }

    /// A pending connection, if any (non-blocking, close-on-exec).
    pub fn accept(&self) -> Result<Option<OwnedFd>> {
        match rustix::net::accept_with(&self.sock, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK) {
            Ok(fd) => Ok(Some(fd)),
            Err(Errno::AGAIN) | Err(Errno::INTR) | Err(Errno::CONNABORTED) => Ok(None),
            Err(e) => Err(os("accept", e)),
        }
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Still holding the lock: the path is ours to remove.
        let _ = rustix::fs::unlink(&self.path);
    }
}

/// Connects to `path`. `Ok(None)` when no server listens there yet (no socket, or a stale
/// one): the caller retries later.
pub fn connect(path: &Path) -> Result<Option<OwnedFd>> {
    let sock = seqpacket()?;
    let addr = SocketAddrUnix::new(path).map_err(|e| os("socket address", e))?;
    match rustix::net::connect(&sock, &addr) {
        Ok(()) => Ok(Some(sock)),
        Err(Errno::NOENT) | Err(Errno::CONNREFUSED) | Err(Errno::AGAIN) => Ok(None),
        Err(e) => Err(os("connect", e)),
    }
}

/// The uid of the process at the other end of `sock`.
pub fn peer_uid(sock: BorrowedFd<'_>) -> Result<(u32, i32)> {
    let cred = rustix::net::sockopt::socket_peercred(sock).map_err(|e| os("SO_PEERCRED", e))?;
    Ok((cred.uid.as_raw(), cred.pid.as_raw_nonzero().get()))
}

/// Sends one packet with file descriptors attached. `CONNECTION_RESET` when the peer is
/// gone, `AGAIN` when the socket buffer is full.
pub fn send(sock: BorrowedFd<'_>, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> Result<()> {
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        bail!(Error::InvalidValue, "too many file descriptors for one message");
    }
    match rustix::net::sendmsg(
        sock,
        &[IoSlice::new(bytes)],
        &mut control,
        SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
    ) {
        Ok(n) if n == bytes.len() => Ok(()),
        Ok(n) => Err(fail!(Error::IoFailed, "sent {n} of {} bytes", bytes.len())),
        Err(Errno::PIPE) | Err(Errno::CONNRESET) | Err(Errno::NOTCONN) => Err(Error::ConnectionReset),
        Err(Errno::AGAIN) => Err(Error::Again),
        Err(e) => Err(os("sendmsg", e)),
    }
}

/// What one non-blocking receive found.
pub enum Recv {
    /// Nothing yet.
    Empty,
    /// The peer closed its end (or died).
    Closed,
    /// A packet of this many bytes (truncated packets are reported as such), with any file
    /// descriptors it carried.
    Packet {
        /// Bytes copied into the buffer.
        len: usize,
        /// Whether the packet was longer than the buffer.
        truncated: bool,
        /// File descriptors that came with it.
        fds: Vec<OwnedFd>,
    },
}

/// Receives one packet without blocking.
pub fn recv(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Result<Recv> {
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let msg = match rustix::net::recvmsg(
        sock,
        &mut [IoSliceMut::new(buf)],
        &mut control,
        RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
    ) {
        Ok(m) => m,
        Err(Errno::AGAIN) | Err(Errno::INTR) => return Ok(Recv::Empty),
        Err(Errno::CONNRESET) => return Ok(Recv::Closed),
        Err(e) => return Err(os("recvmsg", e)),
    };
    let mut fds = Vec::new();
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = m {
            fds.extend(received);
        }
    }
    if msg.bytes == 0 && fds.is_empty() {
        return Ok(Recv::Closed);
    }
    Ok(Recv::Packet {
        len: msg.bytes.min(buf.len()),
        truncated: msg.flags.contains(rustix::net::ReturnFlags::TRUNC),
        fds,
    })
}
