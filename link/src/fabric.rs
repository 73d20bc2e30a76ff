//! The rendezvous: a per-user fabric directory, `SOCK_SEQPACKET` sockets named in it, file
//! descriptors passed over them, and the credentials of the process at the other end.
//!
//! A server listening for the representor of host function F under name N owns a Unix
//! `SOCK_SEQPACKET` socket whose path is derived from (F, N); a client on host function F
//! connects to (F, N). So only clients of the function a representor stands for reach its
//! servers, as on the hardware — and the handshake names F again, so isolation does not rest
//! on path names alone. Ownership of a path is a `flock` on a lock file beside it, held for
//! the server's life: a socket file whose lock is free is stale (its server crashed) and is
//! replaced; a server that stops removes both files. The fabric directory is opened without
//! following links and used through its descriptor ([`FabricDir`]). Both ends check the
//! other's credentials ([`peer_pid`]).
//!
//! [`socketpair`] is the seam for tests: both halves of a handshake in one process, without
//! the fabric directory.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::discard::PeerFd;
use crate::error::{bail, fail, peer_fail};
use crate::error::{Error, Result};
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};

/// Environment variable naming the fabric directory (default: `$XDG_RUNTIME_DIR/doca-emu`,
/// else `/tmp/doca-emu-<uid>`).
pub const FABRIC_ENV: &str = "DOCA_EMU_FABRIC_DIR";

fn os(what: &str, e: Errno) -> Error {
    fail!(Error::OperatingSystem, "{what}: {e}")
}

/// `NOT_PERMITTED` for a refusal by the file system (no permission, read-only), telling how to
/// use another fabric directory; `OPERATING_SYSTEM` for anything else.
fn denied_or_os(e: Errno, what: &str) -> Error {
    match e {
        Errno::ACCESS | Errno::PERM | Errno::ROFS => {
            fail!(Error::NotPermitted, "{what}: {e}: set {FABRIC_ENV} to a directory this user may write")
        }
        e => os(what, e),
    }
}

/// The fabric directory, opened once per use without following links and checked on the
/// open descriptor: created with mode 0700 when missing; an existing one must be a directory
/// of this user closed to others (`NOT_PERMITTED` otherwise, naming [`FABRIC_ENV`]).
/// Sockets and lock files are then reached through the descriptor (`/proc/self/fd/N/…` and
/// `*at` calls), so a symlink or a directory swapped in after the check redirects nothing.
pub struct FabricDir {
    pub(crate) fd: OwnedFd,
    path: PathBuf,
}

impl FabricDir {
    /// The fabric directory of this process's environment (see [`FABRIC_ENV`]).
    pub fn open() -> Result<FabricDir> {
        let dir = match std::env::var_os(FABRIC_ENV) {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => match std::env::var_os("XDG_RUNTIME_DIR") {
                Some(d) if !d.is_empty() && Path::new(&d).is_dir() => Path::new(&d).join("doca-emu"),
                _ => PathBuf::from(format!("/tmp/doca-emu-{}", rustix::process::getuid().as_raw())),
            },
        };
        match rustix::fs::mkdir(&dir, Mode::RWXU) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => {
                return Err(denied_or_os(e, &format!("cannot create fabric directory {}", dir.display())))
            }
        }
        let fd = FabricDir::open_dir(&dir)?;
        let st = rustix::fs::fstat(&fd).map_err(|e| os(&dir.display().to_string(), e))?;
        if st.st_uid != rustix::process::getuid().as_raw() || st.st_mode & 0o077 != 0 {
            bail!(
                Error::NotPermitted,
                "fabric directory {} must belong to this user with mode 0700 (set {FABRIC_ENV} to use another)",
                dir.display()
            );
        }
        FabricDir::check_ancestors(&fd, &dir)?;
        Ok(FabricDir { fd, path: dir })
    }

    /// Every directory above the open fabric directory `fd` (the real chain, as `..`
    /// resolves it, symlinks in `dir` followed) must belong to root or this user, and be
    /// closed to writing by others unless it is sticky (as `/tmp` is): otherwise another
    /// user could rename the fabric directory away and put one of theirs in its place
    /// (`NOT_PERMITTED`, naming the directory and [`FABRIC_ENV`]).
    fn check_ancestors(fd: &OwnedFd, dir: &Path) -> Result<()> {
        let me = rustix::process::getuid().as_raw();
        let mut below = rustix::fs::fstat(fd).map_err(|e| os("fstat fabric directory", e))?;
        let mut cur =
            rustix::fs::openat(fd, "..", OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| os("open the fabric directory's parent", e))?;
        // Bounded: a path has at most PATH_MAX / 2 components.
        for depth in 1..=2048 {
            let st = rustix::fs::fstat(&cur).map_err(|e| os("fstat a parent of the fabric directory", e))?;
            if (st.st_dev, st.st_ino) == (below.st_dev, below.st_ino) {
                return Ok(()); // `/`: its own parent
            }
            let writable_by_others = st.st_mode & 0o022 != 0;
            let sticky = st.st_mode & 0o1000 != 0;
            if (st.st_uid != 0 && st.st_uid != me) || (writable_by_others && !sticky) {
                let above: PathBuf = std::iter::repeat_n("..", depth).collect();
                let shown = std::fs::canonicalize(dir.join(&above)).unwrap_or(above);
                if st.st_uid != 0 && st.st_uid != me && !uid_is_mapped(st.st_uid) {
                    // In a user namespace (a rootless container, `unshare -r`), a directory
                    // of a user the namespace does not map — the machine's root, or anybody
                    // else — shows the overflow uid: who it is cannot be known from here.
                    bail!(
                        Error::NotPermitted,
                        "fabric directory {}: its parent directory {} belongs to a user outside this user namespace (shown as uid {}): it may be another user of the machine, who could replace the fabric directory: set {FABRIC_ENV} to a directory under directories of this namespace's own users (in a container with a user namespace: a volume mounted in the container's own root file system, such as /run/doca-emu)",
                        dir.display(),
                        shown.display(),
                        st.st_uid
                    );
                }
                bail!(
                    Error::NotPermitted,
                    "fabric directory {}: its parent directory {} (uid {}, mode {:o}) lets another user replace it: set {FABRIC_ENV} to a directory under directories only this user or root can write",
                    dir.display(),
                    shown.display(),
                    st.st_uid,
                    st.st_mode & 0o7777
                );
            }
            let up = rustix::fs::openat(
                &cur,
                "..",
                OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| os("open a parent of the fabric directory", e))?;
            below = st;
            cur = up;
        }
        bail!(Error::NotPermitted, "fabric directory {}: too deep", dir.display())
    }

    /// Opens `dir` as a directory, refusing a symlink in its last component.
    fn open_dir(dir: &Path) -> Result<OwnedFd> {
        rustix::fs::open(
            dir,
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| match e {
            Errno::LOOP | Errno::NOTDIR => {
                let what = match rustix::fs::lstat(dir) {
                    Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_symlink() => {
                        "is a symbolic link (refused: it could be pointed elsewhere)"
                    }
                    Ok(_) => "is not a directory (a file of that name is in the way)",
                    Err(_) => "has a component that is not a directory",
                };
                fail!(
                    Error::NotPermitted,
                    "fabric directory {} {what}: set {FABRIC_ENV} to use another",
                    dir.display()
                )
            }
            e => denied_or_os(e, &format!("cannot open fabric directory {}", dir.display())),
        })
    }

    /// The directory's path as given (for messages and tools).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A path to `file` inside the directory that resolves through the open descriptor.
    pub(crate) fn via_fd(&self, file: &str) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}/{file}", self.fd.as_raw_fd()))
    }
}

impl AsFd for FabricDir {
    /// The open directory (for `*at` calls of tools such as `doca_emu`).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Whether `uid`, as this process sees owners, is a uid of its user namespace
/// (`/proc/self/uid_map`); a file of a user the namespace does not map shows the overflow
/// uid instead. Unreadable map: taken as mapped (outside user namespaces every uid is).
fn uid_is_mapped(uid: u32) -> bool {
    std::fs::read_to_string("/proc/self/uid_map").map_or(true, |map| uid_in_map(&map, uid))
}

/// Whether `uid` is inside one of the ranges of a `uid_map` (lines "inside outside count").
fn uid_in_map(map: &str, uid: u32) -> bool {
    map.lines().any(|line| {
        let mut w = line.split_whitespace().map(|n| n.parse::<u64>());
        match (w.next(), w.next(), w.next()) {
            (Some(Ok(inside)), Some(Ok(_)), Some(Ok(count))) => {
                (inside..inside + count).contains(&(uid as u64))
            }
            _ => false,
        }
    })
}

/// The fabric directory's path (created and checked as [`FabricDir::open`] does).
pub fn fabric_dir() -> Result<PathBuf> {
    Ok(FabricDir::open()?.path)
}

/// FNV-1a, to turn arbitrary service names into short file names.
fn fnv64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3))
}

/// A host function as the fabric names it: its PCI address's parts (`doca_core::PciAddr`
/// converts into it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HostFn {
    /// PCI domain.
    pub domain: u16,
    /// PCI bus.
    pub bus: u8,
    /// PCI device.
    pub device: u8,
    /// PCI function.
    pub function: u8,
}

/// The socket file name of service `name` in namespace `ns` (`cc`, `ep`) on host function
/// `pci`.
pub fn service_file(ns: &str, pci: impl Into<HostFn>, name: &str) -> String {
    let pci = pci.into();
    format!(
        "{ns}-{:04x}{:02x}{:02x}{:x}-{:016x}.sock",
        pci.domain,
        pci.bus,
        pci.device,
        pci.function,
        fnv64(name.as_bytes())
    )
}

/// The socket path of service `name` in namespace `ns` on host function `pci` (for tools and
/// tests; the library itself reaches it through the directory's descriptor).
pub fn service_path(ns: &str, pci: impl Into<HostFn>, name: &str) -> Result<PathBuf> {
    let p = fabric_dir()?.join(service_file(ns, pci, name));
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

/// A bound, listening service socket; its socket and lock files are removed on drop.
pub struct Listener {
    /// Closed on a closing thread: connections not accepted yet go with it, and the
    /// files their peers queued on them with those ([`crate::discard`]).
    sock: PeerFd,
    dir: FabricDir,
    file: String,
    lock: OwnedFd,
    /// The socket's and the lock file's names, removed if a signal stops the process.
    on_signal: Vec<crate::cleanup::Registered>,
}

impl Listener {
    /// Binds service `name` of namespace `ns` for host function `pci` in the fabric
    /// directory: `IN_USE` while another live server holds it; a stale socket file (its
    /// server crashed) is replaced.
    pub fn bind_service(ns: &str, pci: impl Into<HostFn>, name: &str) -> Result<Listener> {
        Listener::bind_in(FabricDir::open()?, service_file(ns, pci, name))
    }

    /// Binds the socket at `path` (any directory of this user; used by tools), with the
    /// same ownership rules as [`Listener::bind_service`].
    pub fn bind(path: &Path) -> Result<Listener> {
        let (Some(parent), Some(file)) = (path.parent(), path.file_name().and_then(|f| f.to_str())) else {
            bail!(Error::InvalidValue, "socket path {} has no directory or file name", path.display());
        };
        let dir = FabricDir { fd: FabricDir::open_dir(parent)?, path: parent.to_path_buf() };
        Listener::bind_in(dir, file.to_string())
    }

    pub(crate) fn bind_in(dir: FabricDir, file: String) -> Result<Listener> {
        let lock = Listener::lock(&dir, &file)?;
        match rustix::fs::unlinkat(&dir.fd, file.as_str(), AtFlags::empty()) {
            Ok(()) => {
                tracing::debug!(target: "doca_sdk", "replaced stale socket {}", dir.path.join(&file).display())
            }
            Err(Errno::NOENT) => {}
            Err(e) => return Err(os("unlink stale socket", e)),
        }
        let sock = seqpacket()?;
        let via = dir.via_fd(&file);
        if via.as_os_str().len() >= 108 {
            bail!(Error::InvalidValue, "socket file name {file} is too long");
        }
        let addr = SocketAddrUnix::new(&via).map_err(|e| os("socket address", e))?;
        rustix::net::bind(&sock, &addr).map_err(|e| {
            denied_or_os(e, &format!("cannot create socket {}", dir.path.join(&file).display()))
        })?;
        rustix::net::listen(&sock, 128).map_err(|e| os("listen", e))?;
        let on_signal = vec![
            crate::cleanup::register(&dir.fd, &file),
            crate::cleanup::register(&dir.fd, &format!("{file}.lock")),
        ];
        Ok(Listener { sock: PeerFd::new(sock), dir, file, lock, on_signal })
    }

    /// Takes the lock file of `file`: held for the server's life, so a free lock means a
    /// stale socket. A lock file removed by its last owner between our open and our lock is
    /// detected (it is no longer the file at that name) and taken again.
    fn lock(dir: &FabricDir, file: &str) -> Result<OwnedFd> {
        let lock_file = format!("{file}.lock");
        for _ in 0..8 {
            let lock = rustix::fs::openat(
                &dir.fd,
                lock_file.as_str(),
                OFlags::CREATE | OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW,
                Mode::RUSR | Mode::WUSR,
            )
            .map_err(|e| {
                denied_or_os(e, &format!("cannot create lock file {}", dir.path.join(&lock_file).display()))
            })?;
            match rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                Err(Errno::WOULDBLOCK) => bail!(
                    Error::InUse,
                    "a server with this name already listens for this representor ({})",
                    dir.path.join(file).display()
                ),
                Err(e) => return Err(os("flock", e)),
            }
            let held = rustix::fs::fstat(&lock).map_err(|e| os("fstat lock file", e))?;
            match rustix::fs::statat(&dir.fd, lock_file.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(now) if (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino) => return Ok(lock),
                _ => continue,
            }
        }
        bail!(Error::InUse, "the lock file of {file} keeps changing")
    }

    /// A pending connection, if any (non-blocking, close-on-exec). Out of descriptors
    /// (`EMFILE`, `ENFILE`) → `FULL`: the caller backs off instead of retrying at once.
    pub fn accept(&self) -> Result<Option<OwnedFd>> {
        match rustix::net::accept_with(&self.sock, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK) {
            Ok(fd) => Ok(Some(fd)),
            Err(Errno::AGAIN) | Err(Errno::INTR) | Err(Errno::CONNABORTED) => Ok(None),
            Err(Errno::MFILE) | Err(Errno::NFILE) | Err(Errno::NOBUFS) | Err(Errno::NOMEM) => {
                Err(Error::Full)
            }
            Err(e) => Err(os("accept", e)),
        }
    }

    /// The socket path.
    pub fn path(&self) -> PathBuf {
        self.dir.path.join(&self.file)
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        // Unregistered first: a signal from here on finds nothing of ours to remove.
        self.on_signal.clear();
        // Still holding the lock: both names are ours to remove (the socket first, so that a
        // free lock never stands beside a live socket).
        let _ = rustix::fs::unlinkat(&self.dir.fd, self.file.as_str(), AtFlags::empty());
        let _ = rustix::fs::unlinkat(&self.dir.fd, format!("{}.lock", self.file).as_str(), AtFlags::empty());
        let _ = rustix::fs::flock(&self.lock, FlockOperation::Unlock);
    }
}

/// A machine-wide port service's socket file name: `<ns>-<port>.sock` (the RDMA connection
/// manager's listening ports, `rdma-cm-<port>.sock`). `ns` is lowercase letters and dashes.
pub fn port_file(ns: &str, port: u16) -> Result<String> {
    if ns.is_empty() || !ns.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') {
        bail!(Error::InvalidValue, "port service namespace {ns:?} is not lowercase letters and dashes");
    }
    Ok(format!("{ns}-{port}.sock"))
}

impl Listener {
    /// Binds port `port` of namespace `ns` in the fabric directory ([`port_file`]):
    /// `IN_USE` while another live process listens there; a stale socket is replaced.
    pub fn bind_port(ns: &str, port: u16) -> Result<Listener> {
        Listener::bind_in(FabricDir::open()?, port_file(ns, port)?)
    }
}

/// Connects to port `port` of namespace `ns` in the fabric directory and checks that a
/// process of this user answers: `Ok(None)` when nobody listens there, `AGAIN` when the
/// listener's backlog is full.
pub fn connect_port(ns: &str, port: u16) -> Result<Option<OwnedFd>> {
    let dir = FabricDir::open()?;
    let sock = connect(&dir.via_fd(&port_file(ns, port)?))?;
    if let Some(s) = &sock {
        peer_pid(s.as_fd())?;
    }
    Ok(sock)
}

/// Whether `ip` is an address of this machine (its network namespace): loopback, the
/// unspecified address, or one a socket can be bound to (an interface's address). Peers at
/// such an address meet through the fabric directory.
pub fn is_local_address(ip: std::net::IpAddr) -> bool {
    if ip.is_loopback() || ip.is_unspecified() {
        return true;
    }
    // Binding a datagram socket to an address succeeds exactly when an interface holds it;
    // nothing is sent and the socket closes at once.
    std::net::UdpSocket::bind((ip, 0)).is_ok()
}

/// Connects to service `name` of namespace `ns` for host function `pci` through the fabric
/// directory's descriptor, and checks that a process of this user answers. `Ok(None)` when
/// no server listens there (yet); `AGAIN` when one does but its backlog is full.
pub fn connect_service(ns: &str, pci: impl Into<HostFn>, name: &str) -> Result<Option<OwnedFd>> {
    let dir = FabricDir::open()?;
    let sock = connect(&dir.via_fd(&service_file(ns, pci, name)))?;
    if let Some(s) = &sock {
        peer_pid(s.as_fd())?;
    }
    Ok(sock)
}

/// Connects to `path`. `Ok(None)` when no server listens there (no socket, or a stale one);
/// `AGAIN` when a server listens but its backlog is full.
pub fn connect(path: &Path) -> Result<Option<OwnedFd>> {
    let sock = seqpacket()?;
    let addr = SocketAddrUnix::new(path).map_err(|e| os("socket address", e))?;
    match rustix::net::connect(&sock, &addr) {
        Ok(()) => Ok(Some(sock)),
        Err(Errno::NOENT) | Err(Errno::CONNREFUSED) => Ok(None),
        Err(Errno::AGAIN) => Err(Error::Again),
        Err(e) => Err(os("connect", e)),
    }
}

/// The pid of the process at the other end of `sock`, which must run as this user
/// (`NOT_PERMITTED` otherwise; the reason at debug level, the caller logs). Both ends check:
/// a server its clients, a client its server.
pub fn peer_pid(sock: BorrowedFd<'_>) -> Result<i32> {
    let (uid, pid) = peer_uid(sock)?;
    let me = rustix::process::getuid().as_raw();
    if uid != me {
        return Err(peer_fail!(
            Error::NotPermitted,
            "the peer (pid {pid}) runs as uid {uid}, not this user ({me})"
        ));
    }
    Ok(pid)
}

/// A connected pair of sockets of the kind the fabric uses (`SOCK_SEQPACKET`, non-blocking,
/// close-on-exec): both ends of a connection in one process, for tests.
pub fn socketpair() -> Result<(OwnedFd, OwnedFd)> {
    rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
        None,
    )
    .map_err(|e| os("socketpair", e))
}

/// The uid and pid of the process at the other end of `sock` (pid 0: in a PID namespace
/// this process cannot see).
pub fn peer_uid(sock: BorrowedFd<'_>) -> Result<(u32, i32)> {
    crate::pidfd::peer_cred(sock).map_err(|e| fail!(Error::OperatingSystem, "SO_PEERCRED: {e}"))
}

/// Sends one packet with file descriptors attached (at most [`crate::discard::MAX_FDS`]: more is
/// `INVALID_VALUE`). `CONNECTION_RESET` when the peer is gone, `AGAIN` when the socket buffer
/// is full or this user has too many files in flight already (a process without
/// `CAP_SYS_RESOURCE` may have as many in flight as its descriptor limit).
pub fn send(sock: BorrowedFd<'_>, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> Result<()> {
    match crate::scm::send(sock, bytes, fds) {
        Ok(n) if n == bytes.len() => Ok(()),
        Ok(n) => Err(fail!(Error::IoFailed, "sent {n} of {} bytes", bytes.len())),
        Err(Errno::PIPE) | Err(Errno::CONNRESET) | Err(Errno::NOTCONN) => Err(Error::ConnectionReset),
        Err(Errno::AGAIN) | Err(Errno::TOOMANYREFS) => Err(Error::Again),
        Err(Errno::INVAL) if fds.len() > crate::scm::MAX_FDS => {
            bail!(
                Error::InvalidValue,
                "{} file descriptors for one message: at most {}",
                fds.len(),
                crate::scm::MAX_FDS
            )
        }
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
        /// File descriptors that came with it: the peer's choice of file, closed on a
        /// closing thread unless taken out ([`PeerFd::into_inner`]) once checked.
        fds: Vec<PeerFd>,
    },
}

/// Sends `answer` on a socket that is closed right after (a refused handshake), so that the
/// peer reads the answer rather than a reset: a socket closed with unread data in its queue
/// resets its peer's end (`ECONNRESET` before the answer is read), and the peer's first
/// packet may still be on its way when the refusal is decided. What is queued is read, the
/// answer sent, the receiving side shut (the peer's later sends fail with `EPIPE` instead of
/// queueing), what came meanwhile read, and then the socket closed. Non-blocking throughout.
pub fn answer_and_close(sock: OwnedFd, answer: &[u8]) {
    let mut sink = [0u8; 512];
    while let Ok(Recv::Packet { .. }) = recv(sock.as_fd(), &mut sink) {}
    let _ = send(sock.as_fd(), answer, &[]);
    let _ = rustix::net::shutdown(&sock, rustix::net::Shutdown::Read);
    while let Ok(Recv::Packet { .. }) = recv(sock.as_fd(), &mut sink) {}
    // Closed on a closing thread: packets still queued may carry the peer's files.
    crate::discard::discard(sock);
}

/// Receives one packet without blocking, with room for as many descriptors as a packet can
/// carry (fewer would have the kernel release the rest in this thread, see
/// [`crate::discard`]); each comes as a [`PeerFd`], closed on a closing thread when
/// dropped.
pub fn recv(sock: BorrowedFd<'_>, buf: &mut [u8]) -> Result<Recv> {
    let packet = match crate::scm::recv(sock, buf) {
        Ok(p) => p,
        Err(Errno::AGAIN) | Err(Errno::INTR) => return Ok(Recv::Empty),
        Err(Errno::CONNRESET) => return Ok(Recv::Closed),
        Err(e) => return Err(os("recvmsg", e)),
    };
    if packet.len == 0 && packet.fds.is_empty() {
        return Ok(Recv::Closed);
    }
    Ok(Recv::Packet {
        len: packet.len,
        truncated: packet.truncated,
        fds: packet.fds.into_iter().map(PeerFd::new).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::uid_in_map;

    /// A rootless container's map (its root is uid 42420 of the machine): its own uids are
    /// mapped, the overflow uid its unmapped owners show is not; outside user namespaces
    /// every uid is.
    #[test]
    fn a_uid_is_mapped_only_inside_the_ranges_of_the_map() {
        let rootless = "         0      42420          1\n";
        assert!(uid_in_map(rootless, 0));
        assert!(!uid_in_map(rootless, 1) && !uid_in_map(rootless, 65534));
        let subuids = "0 1000 1\n1 100000 65536\n";
        assert!(uid_in_map(subuids, 0) && uid_in_map(subuids, 65536) && !uid_in_map(subuids, 65537));
        let init = "0 0 4294967295\n";
        assert!(uid_in_map(init, 65534) && uid_in_map(init, u32::MAX - 1));
        assert!(!uid_in_map("", 0) && !uid_in_map("garbage\n", 0));
    }
}
