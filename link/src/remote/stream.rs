//! One stream of the remote link: a TCP connection, its preface and Noise handshake, and
//! messages cut into frames.
//!
//! **Socket.** `TCP_NODELAY`; `SO_KEEPALIVE` with `TCP_KEEPIDLE` 2 s, `TCP_KEEPINTVL` 1 s,
//! `TCP_KEEPCNT` 3 and `TCP_USER_TIMEOUT` 5 s (a silent peer is dead within about 5 s);
//! `SO_SNDTIMEO` [`STALL`] (a send blocked that long fails with `TIME_OUT` and closes the
//! stream). Sends use `MSG_NOSIGNAL`: a closed peer is an error, never a `SIGPIPE`.
//!
//! **Frames.** A message of up to [`MAX_MESSAGE`] bytes is cut into fragments of at most
//! [`FRAGMENT`] bytes; each fragment travels as one frame:
//!
//! | bytes | what |
//! |-------|------|
//! | 2     | the frame's length `L` (u16, big-endian), at most 65535 |
//! | `L`   | one Noise transport message (the 16-byte tag included) whose plaintext is: one header byte (bit 0: last fragment of the message; the other bits 0), then the fragment |
//!
//! In plaintext mode the `L` bytes are that plaintext itself. Nonces are implicit: one
//! counter per direction, so a frame replayed, dropped or reordered fails authentication.
//! An empty message is one frame with only its header. A receiver refuses (closes the
//! stream, `INVALID_VALUE`) a frame shorter than a header and tag, a frame that fails
//! authentication, a header with unknown bits, an empty fragment that is not the last, a
//! message over [`MAX_MESSAGE`], and a stream that ends inside a message
//! (`CONNECTION_RESET`).
//!
//! **Threads.** Sending and receiving each hold their own lock and their own nonce
//! ([`snow::StatelessTransportState`]): one thread may send while another receives (or use
//! the halves of [`Stream::try_clone`]). Scratch buffers live in the stream and grow to the
//! largest frame seen: once grown, sending and receiving allocate nothing. A received message
//! is assembled in the stream and swapped with the caller's vector, so a caller that hands
//! the same vector back each time allocates nothing either.

use std::any::Any;
use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::ops::Deref;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags};
use snow::StatelessTransportState;

use super::keys::{fingerprint, Keys, KEY_LEN};
use super::{DIAL_RETRY, MAX_MESSAGE, PLAINTEXT_ENV, STALL};
use crate::error::{fail, peer_fail};
use crate::error::{Error, Result};

/// The preface's magic: the protocol and its version.
pub const MAGIC: &[u8; 8] = b"DOCALNK1";
/// The preface's mode byte of an encrypted side.
pub const MODE_ENCRYPTED: u8 = b'E';
/// The preface's mode byte of a plaintext side.
pub const MODE_PLAINTEXT: u8 = b'P';
/// The Noise protocol.
pub const NOISE: &str = "Noise_KK_25519_ChaChaPoly_BLAKE2s";
/// The Noise prologue: both sides must agree on it (the protocol, its version, the pattern).
pub const PROLOGUE: &[u8] = b"doca-emu link 1 Noise_KK_25519_ChaChaPoly_BLAKE2s";

/// The largest Noise message, tag included.
pub const FRAME_MAX: usize = 65535;
const TAG: usize = 16;
/// The largest fragment of a message one frame carries.
pub const FRAGMENT: usize = FRAME_MAX - TAG - 1;
const LAST: u8 = 1;
/// A receive buffer that always holds one whole frame after the bytes of the one before.
const RAW_MAX: usize = 2 * (2 + FRAME_MAX);
const RAW_START: usize = 16 * 1024;
/// The longest handshake message accepted (KK's two are 48 bytes).
const HANDSHAKE_MAX: usize = 256;

const OPEN: u8 = 0;
const SHUT: u8 = 1;
const BROKEN: u8 = 2;

/// `TCP_KEEPIDLE`: silence before the first probe.
pub const KEEPIDLE: Duration = Duration::from_secs(2);
/// `TCP_KEEPINTVL`: between probes.
pub const KEEPINTVL: Duration = Duration::from_secs(1);
/// `TCP_KEEPCNT`: probes unanswered before the connection is dead.
pub const KEEPCNT: u32 = 3;
/// `TCP_USER_TIMEOUT`: the longest sent data may stay unacknowledged (milliseconds).
pub const USER_TIMEOUT_MS: u32 = 5000;
/// The longest a TCP connect may take.
pub const CONNECT_WAIT: Duration = Duration::from_secs(5);

/// The other end of a stream: its address and (encrypted) its static key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    addr: SocketAddr,
    key: Option<[u8; KEY_LEN]>,
}

impl Peer {
    /// The peer's address and port.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The peer's static public key (`None`: a plaintext stream, nobody authenticated).
    pub fn key(&self) -> Option<&[u8; KEY_LEN]> {
        self.key.as_ref()
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(k) => write!(f, "{} (key {})", self.addr, fingerprint(k)),
            None => write!(f, "{} (plaintext)", self.addr),
        }
    }
}

/// Why a stream could not be made, not logged yet: the caller logs it at the level its
/// context calls for (an opener at error level, the listener rate-limited).
#[derive(Debug)]
pub(crate) struct Failure {
    pub code: Error,
    pub why: String,
    /// What the listener's rate-limited warn line counts it as.
    pub reason: Reason,
}

impl Failure {
    pub(crate) fn new(code: Error, why: String) -> Failure {
        let reason = match code {
            Error::NotPermitted => Reason::Auth,
            Error::InvalidValue => Reason::Preface,
            Error::TimeOut => Reason::Late,
            _ => Reason::Accept,
        };
        Failure { code, why, reason }
    }

    fn because(mut self, reason: Reason) -> Failure {
        self.reason = reason;
        self
    }

    /// Logs it at error level and gives its code.
    pub(crate) fn log(self) -> Error {
        fail!(self.code, "{}", self.why)
    }
}

/// Rate-limited warn lines: one a second per reason and per peer address (a hostile peer
/// costs one line a second; peers apart do not hide each other's lines), the next telling how
/// many were held back. At most [`throttle::SLOTS`] addresses are told apart at once; beyond,
/// new ones share one line a second per reason.
pub(crate) mod throttle {
    use std::net::IpAddr;
    use std::time::{Duration, Instant};

    /// The reasons, each limited on its own.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub(crate) enum Reason {
        Auth,
        Preface,
        Mode,
        Late,
        Malformed,
        Crowded,
        Stall,
        Accept,
    }

    /// Addresses told apart at once.
    pub(crate) const SLOTS: usize = 64;
    const PERIOD: Duration = Duration::from_secs(1);

    type Key = (Reason, Option<IpAddr>);
    static LAST: parking_lot::Mutex<Vec<(Key, Instant, u64)>> = parking_lot::Mutex::new(Vec::new());

    /// `Some(held back)` when a line of `reason` about `ip` may be logged now.
    pub(crate) fn admit(reason: Reason, ip: Option<IpAddr>) -> Option<u64> {
        let now = Instant::now();
        let mut last = LAST.lock();
        let mut key = (reason, ip);
        if !last.iter().any(|(k, _, _)| *k == key) {
            if let Some(old) = last.iter_mut().find(|(_, at, _)| now.saturating_duration_since(*at) >= PERIOD)
            {
                *old = (key, now, 0);
                return Some(0);
            }
            if last.len() >= SLOTS {
                key = (reason, None);
            }
        }
        match last.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, at, held)) if now.saturating_duration_since(*at) < PERIOD => {
                *held += 1;
                None
            }
            Some((_, at, held)) => {
                *at = now;
                Some(std::mem::take(held))
            }
            None => {
                last.push((key, now, 0));
                Some(0)
            }
        }
    }

    /// Logs at warn level unless a line of that reason about that address (an
    /// `Option<IpAddr>`) was logged less than a second ago.
    macro_rules! warn_limited {
        ($reason:expr, $ip:expr, $($arg:tt)+) => {
            if let Some(held) = $crate::remote::stream::throttle::admit($reason, $ip) {
                if held == 0 {
                    ::tracing::warn!(target: "doca_sdk", $($arg)+);
                } else {
                    ::tracing::warn!(target: "doca_sdk", "{} ({held} more like it in the last second)", format_args!($($arg)+));
                }
            }
        };
    }
    pub(crate) use warn_limited;
}
use throttle::{warn_limited, Reason};

/// An authenticated, encrypted, message-framed TCP stream (TCP_NODELAY, keepalive). See the
/// module documentation for the framing and the threads.
pub struct Stream {
    inner: Arc<Inner>,
}

/// The sending half of a stream ([`Stream::try_clone`]).
pub struct StreamTx {
    inner: Arc<Inner>,
}

/// The receiving half of a stream ([`Stream::try_clone`]).
pub struct StreamRx {
    inner: Arc<Inner>,
}

struct Inner {
    sock: TcpStream,
    peer: Peer,
    noise: Option<StatelessTransportState>,
    tx: Mutex<Tx>,
    rx: Mutex<Rx>,
    /// A whole frame waits in the receive buffer.
    buffered: AtomicBool,
    state: AtomicU8,
    /// Dropped with the stream (the listener's count of streams per peer).
    _guard: Option<Box<dyn Any + Send + Sync>>,
}

struct Tx {
    nonce: u64,
    plain: Vec<u8>,
    wire: Vec<u8>,
}

struct Rx {
    nonce: u64,
    raw: Vec<u8>,
    start: usize,
    end: usize,
    plain: Vec<u8>,
    msg: Vec<u8>,
    eof: bool,
}

enum Wait {
    Block,
    Never,
    Until(Instant),
}

enum Got {
    Message,
    More,
}

impl Rx {
    fn new() -> Rx {
        Rx {
            nonce: 0,
            raw: vec![0; RAW_START],
            start: 0,
            end: 0,
            plain: Vec::new(),
            msg: Vec::new(),
            eof: false,
        }
    }

    /// The length of the whole frame at the start of the buffer, if it is there.
    fn whole_frame(&self) -> Option<usize> {
        let avail = self.end - self.start;
        if avail < 2 {
            return None;
        }
        let len = u16::from_be_bytes([self.raw[self.start], self.raw[self.start + 1]]) as usize;
        (avail >= 2 + len).then_some(len)
    }

    /// Takes whole frames from the buffer into the message until it is complete (`Message`)
    /// or the buffer holds no whole frame (`More`; room is then made for the next one).
    fn frames(&mut self, noise: Option<&StatelessTransportState>) -> std::result::Result<Got, String> {
        loop {
            let avail = self.end - self.start;
            if avail < 2 {
                if self.start > 0 && self.start == self.end {
                    self.start = 0;
                    self.end = 0;
                }
                return Ok(Got::More);
            }
            let len = u16::from_be_bytes([self.raw[self.start], self.raw[self.start + 1]]) as usize;
            let min = if noise.is_some() { TAG + 1 } else { 1 };
            if len < min {
                return Err(format!("a frame of {len} bytes (at least {min})"));
            }
            if avail < 2 + len {
                if self.raw.len() < 2 + len {
                    self.raw.resize(RAW_MAX, 0);
                }
                if self.start + 2 + len > self.raw.len() {
                    self.raw.copy_within(self.start..self.end, 0);
                    self.end -= self.start;
                    self.start = 0;
                }
                return Ok(Got::More);
            }
            let frame = &self.raw[self.start + 2..self.start + 2 + len];
            let plain: &[u8] = match noise {
                Some(n) => {
                    if self.plain.len() < len - TAG {
                        self.plain.resize(FRAME_MAX - TAG, 0);
                    }
                    let k = n
                        .read_message(self.nonce, frame, &mut self.plain)
                        .map_err(|_| "a frame that fails authentication".to_string())?;
                    &self.plain[..k]
                }
                None => frame,
            };
            self.nonce += 1;
            let header = plain[0];
            let data = &plain[1..];
            if header & !LAST != 0 {
                return Err(format!("a fragment header {header:#04x}"));
            }
            if header & LAST == 0 && data.is_empty() {
                return Err("an empty fragment that is not the last".into());
            }
            if self.msg.len() + data.len() > MAX_MESSAGE {
                return Err(format!("a message over {MAX_MESSAGE} bytes"));
            }
            self.msg.extend_from_slice(data);
            self.start += 2 + len;
            if header & LAST != 0 {
                return Ok(Got::Message);
            }
        }
    }

    /// Reads what the socket has into the buffer: `Ok(0)` at its end.
    fn fill(&mut self, fd: BorrowedFd<'_>, flags: RecvFlags) -> rustix::io::Result<usize> {
        if self.end == self.raw.len() {
            // frames() made room for the frame in progress: only its bytes are kept.
            self.raw.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let (n, _) = rustix::net::recv(fd, &mut self.raw[self.end..], flags)?;
        self.end += n;
        if n == 0 {
            self.eof = true;
        }
        Ok(n)
    }
}

/// Sets the stream's socket options (module documentation).
fn tune(sock: &TcpStream) -> io::Result<()> {
    use rustix::net::sockopt;
    sockopt::set_tcp_nodelay(sock, true)?;
    sockopt::set_socket_keepalive(sock, true)?;
    sockopt::set_tcp_keepidle(sock, KEEPIDLE)?;
    sockopt::set_tcp_keepintvl(sock, KEEPINTVL)?;
    sockopt::set_tcp_keepcnt(sock, KEEPCNT)?;
    sockopt::set_tcp_user_timeout(sock, USER_TIMEOUT_MS)?;
    sockopt::set_socket_timeout(sock, sockopt::Timeout::Send, Some(STALL))?;
    Ok(())
}

/// Sends all of `bytes` (blocking, bounded by the socket's send timeout).
fn send_all(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> rustix::io::Result<()> {
    while !bytes.is_empty() {
        match rustix::net::send(fd, bytes, SendFlags::NOSIGNAL) {
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Reads exactly `buf.len()` bytes before `deadline`.
fn read_by(sock: &TcpStream, buf: &mut [u8], deadline: Instant) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        sock.set_read_timeout(Some(left))?;
        match io::Read::read(&mut &*sock, &mut buf[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(io::ErrorKind::TimedOut.into()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn io_failure(addr: SocketAddr, what: &str, e: io::Error) -> Failure {
    match e.kind() {
        io::ErrorKind::TimedOut => Failure::new(
            Error::TimeOut,
            format!("link: {addr}: {what} took over {:?}", super::HANDSHAKE_WAIT),
        ),
        io::ErrorKind::UnexpectedEof => {
            Failure::new(Error::ConnectionReset, format!("link: {addr} closed the link during {what}"))
        }
        _ => Failure::new(Error::ConnectionReset, format!("link: {addr}: {what}: {e}")),
    }
}

/// Dials `addr`: a refused connection is retried for about [`DIAL_RETRY`] (the listener may
/// be starting), then `NOT_FOUND`; an unreachable address `NOT_FOUND`; no answer within
/// [`CONNECT_WAIT`] `TIME_OUT`.
pub(crate) fn dial(addr: SocketAddr) -> std::result::Result<TcpStream, Failure> {
    let start = Instant::now();
    let mut delay = Duration::from_millis(100);
    loop {
        match TcpStream::connect_timeout(&addr, CONNECT_WAIT) {
            Ok(s) => return Ok(s),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                if start.elapsed() + delay > DIAL_RETRY {
                    return Err(Failure::new(
                        Error::NotFound,
                        format!(
                            "link: nothing listens at {addr} (connection refused for {:?})",
                            start.elapsed()
                        ),
                    ));
                }
                std::thread::sleep(delay);
                delay *= 2;
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                return Err(Failure::new(
                    Error::TimeOut,
                    format!("link: {addr} does not answer (connect: {e})"),
                ))
            }
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENETUNREACH | libc::EHOSTUNREACH | libc::EADDRNOTAVAIL)
                ) =>
            {
                return Err(Failure::new(Error::NotFound, format!("link: {addr} is unreachable: {e}")))
            }
            Err(e) => {
                return Err(Failure::new(Error::OperatingSystem, format!("link: connect to {addr}: {e}")))
            }
        }
    }
}

/// Runs the preface and (with keys) the Noise handshake on a connected socket, as the
/// initiator (the host side, which dialed) or the responder (the listener). Everything is
/// bounded by `deadline`. `guard` is dropped with the stream.
pub(crate) fn handshake(
    sock: TcpStream,
    addr: SocketAddr,
    keys: Option<&Keys>,
    initiator: bool,
    deadline: Instant,
    guard: Option<Box<dyn Any + Send + Sync>>,
) -> std::result::Result<Stream, Failure> {
    tune(&sock)
        .map_err(|e| Failure::new(Error::OperatingSystem, format!("link: socket options for {addr}: {e}")))?;
    let mode = if keys.is_some() { MODE_ENCRYPTED } else { MODE_PLAINTEXT };
    let mut preface = [0u8; 9];
    preface[..8].copy_from_slice(MAGIC);
    preface[8] = mode;
    send_all(sock.as_fd(), &preface).map_err(|e| io_failure(addr, "the preface", e.into()))?;
    let mut theirs = [0u8; 9];
    read_by(&sock, &mut theirs, deadline).map_err(|e| io_failure(addr, "the preface", e))?;
    if &theirs[..8] != MAGIC || !matches!(theirs[8], MODE_ENCRYPTED | MODE_PLAINTEXT) {
        return Err(if initiator {
            Failure::new(
                Error::NotFound,
                format!("link: what answers at {addr} is not a doca-emu link listener"),
            )
        } else {
            Failure::new(
                Error::InvalidValue,
                format!("link: refused {addr}: not a doca-emu link (bad preface)"),
            )
        });
    }
    if theirs[8] != mode {
        let (me, them) =
            if mode == MODE_PLAINTEXT { ("plaintext", "encrypted") } else { ("encrypted", "plaintext") };
        return Err(Failure::new(
            Error::NotPermitted,
            format!("link: refused {addr}: it is {them} and this side {me} (both sides must agree on {PLAINTEXT_ENV})"),
        )
        .because(Reason::Mode));
    }
    let Some(keys) = keys else {
        tracing::warn!(target: "doca_sdk", "link to {addr} is NOT encrypted ({PLAINTEXT_ENV}=1)");
        return Ok(Stream::new(sock, Peer { addr, key: None }, None, guard));
    };
    let params =
        NOISE.parse().map_err(|e| Failure::new(Error::OperatingSystem, format!("link: {NOISE}: {e:?}")))?;
    let builder = snow::Builder::new(params)
        .prologue(PROLOGUE)
        .local_private_key(keys.private())
        .remote_public_key(keys.peer());
    let built = if initiator { builder.build_initiator() } else { builder.build_responder() };
    let mut hs =
        built.map_err(|e| Failure::new(Error::OperatingSystem, format!("link: Noise handshake: {e:?}")))?;
    let mut msg = [0u8; HANDSHAKE_MAX];
    let mut payload = [0u8; HANDSHAKE_MAX];
    let refused = || {
        Failure::new(
            Error::NotPermitted,
            format!("link: refused {addr}: authentication failed (wrong or missing key)"),
        )
    };
    if initiator {
        let n = hs
            .write_message(&[], &mut msg[2..])
            .map_err(|e| Failure::new(Error::OperatingSystem, format!("link: Noise handshake: {e:?}")))?;
        msg[..2].copy_from_slice(&(n as u16).to_be_bytes());
        send_all(sock.as_fd(), &msg[..2 + n]).map_err(|e| io_failure(addr, "the handshake", e.into()))?;
        let n = read_handshake(&sock, addr, &mut msg, deadline).map_err(|f| {
            if f.code == Error::ConnectionReset {
                Failure::new(
                    Error::NotPermitted,
                    format!(
                        "link: {addr} closed the link during the handshake: it refused this side's key \
                         (wrong or missing key on one side)"
                    ),
                )
            } else {
                f
            }
        })?;
        hs.read_message(&msg[..n], &mut payload).map_err(|_| {
            Failure::new(
                Error::NotPermitted,
                format!("link: {addr} failed authentication: it does not hold the key this side expects"),
            )
        })?;
    } else {
        let n = read_handshake(&sock, addr, &mut msg, deadline)?;
        hs.read_message(&msg[..n], &mut payload).map_err(|_| refused())?;
        let n = hs
            .write_message(&[], &mut msg[2..])
            .map_err(|e| Failure::new(Error::OperatingSystem, format!("link: Noise handshake: {e:?}")))?;
        msg[..2].copy_from_slice(&(n as u16).to_be_bytes());
        send_all(sock.as_fd(), &msg[..2 + n]).map_err(|e| io_failure(addr, "the handshake", e.into()))?;
    }
    let matches_pin = hs.get_remote_static().is_some_and(|k| k == keys.peer());
    if !hs.is_handshake_finished() || !matches_pin {
        return Err(refused());
    }
    let noise = hs
        .into_stateless_transport_mode()
        .map_err(|e| Failure::new(Error::OperatingSystem, format!("link: Noise transport: {e:?}")))?;
    Ok(Stream::new(sock, Peer { addr, key: Some(*keys.peer()) }, Some(noise), guard))
}

fn read_handshake(
    sock: &TcpStream,
    addr: SocketAddr,
    msg: &mut [u8; HANDSHAKE_MAX],
    deadline: Instant,
) -> std::result::Result<usize, Failure> {
    let mut len = [0u8; 2];
    read_by(sock, &mut len, deadline).map_err(|e| io_failure(addr, "the handshake", e))?;
    let n = u16::from_be_bytes(len) as usize;
    if n == 0 || n > HANDSHAKE_MAX {
        return Err(Failure::new(
            Error::InvalidValue,
            format!("link: refused {addr}: a handshake message of {n} bytes (not a doca-emu link)"),
        ));
    }
    read_by(sock, &mut msg[..n], deadline).map_err(|e| io_failure(addr, "the handshake", e))?;
    Ok(n)
}

impl Stream {
    fn new(
        sock: TcpStream,
        peer: Peer,
        noise: Option<StatelessTransportState>,
        guard: Option<Box<dyn Any + Send + Sync>>,
    ) -> Stream {
        let _ = sock.set_read_timeout(None);
        Stream {
            inner: Arc::new(Inner {
                sock,
                peer,
                noise,
                tx: Mutex::new(Tx { nonce: 0, plain: Vec::new(), wire: Vec::new() }),
                rx: Mutex::new(Rx::new()),
                buffered: AtomicBool::new(false),
                state: AtomicU8::new(OPEN),
                _guard: guard,
            }),
        }
    }

    /// Sends one whole message (at most [`MAX_MESSAGE`] bytes; `INVALID_VALUE` beyond),
    /// blocking while the peer does not read, at most [`STALL`] per write (`TIME_OUT`: the
    /// stream is then closed). `CONNECTION_RESET` when the link is down or the stream closed.
    pub fn send(&self, msg: &[u8]) -> Result<()> {
        self.inner.send_parts(&[msg])
    }

    /// Sends one message made of several slices (a header and a payload, without a copy by
    /// the caller), as [`send`](Self::send).
    pub fn send_parts(&self, parts: &[&[u8]]) -> Result<()> {
        self.inner.send_parts(parts)
    }

    /// [`send_parts`](Self::send_parts) whose last part is lent by a guard (a borrow of
    /// memory others wait to use): `lent` is dropped as soon as its bytes are gathered, before
    /// the message's last frame is written, so the borrow is over before the peer can have
    /// the message — and before anything the peer does in answer to it comes back. On an
    /// error it is dropped too.
    pub fn send_lent<L: Deref<Target = [u8]>>(&self, parts: &[&[u8]], lent: L) -> Result<()> {
        self.inner.send_with(parts, Some(lent))
    }

    /// Receives one whole message into `buf` (its contents replaced; hand the same vector
    /// back each time and nothing is allocated): `Ok(true)`; `Ok(false)` when the peer closed
    /// cleanly (between messages) or this side shut the stream down. Blocks until then (a dead
    /// peer is noticed within about 5 s by keepalive). Errors: `INVALID_VALUE` the peer sent
    /// something malformed (the stream is closed), `CONNECTION_RESET` the link went down.
    pub fn recv(&self, buf: &mut Vec<u8>) -> Result<bool> {
        self.inner.recv(buf, Wait::Block).map(|r| r.unwrap_or(false))
    }

    /// [`recv`](Self::recv) without blocking: `None` when no whole message has arrived yet
    /// (what arrived is kept for the next call).
    pub fn try_recv(&self, buf: &mut Vec<u8>) -> Result<Option<bool>> {
        self.inner.recv(buf, Wait::Never)
    }

    /// [`recv`](Self::recv) waiting at most `timeout`: `None` when no whole message arrived
    /// in time.
    pub fn recv_timeout(&self, buf: &mut Vec<u8>, timeout: Duration) -> Result<Option<bool>> {
        self.inner.recv(buf, Wait::Until(Instant::now() + timeout))
    }

    /// The TCP socket, to poll or epoll for readability (check
    /// [`has_buffered`](Self::has_buffered) before sleeping on it).
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.sock.as_fd()
    }

    /// Whether bytes already read from the socket hold a whole frame not yet taken (a
    /// message may be ready without the socket becoming readable again): a poller calls
    /// [`try_recv`](Self::try_recv) again rather than sleeping on the descriptor. `false` when
    /// only part of a frame waits (the rest must come through the socket).
    pub fn has_buffered(&self) -> bool {
        self.inner.buffered.load(Ordering::Acquire)
    }

    /// The other end: address and key fingerprint (Display for logs).
    pub fn peer(&self) -> &Peer {
        &self.inner.peer
    }

    /// Shuts both directions down: the peer's receive sees the end of the stream (or an
    /// error), a receive blocked here returns `Ok(false)`, sends fail.
    pub fn shutdown(&self) {
        self.inner.close(SHUT);
    }

    /// Whether the stream failed (a socket error, a malformed or forged frame, a stalled
    /// send, the peer gone in the middle of a message), as opposed to open or shut down in
    /// order (by [`shutdown`](Self::shutdown), after the peer's end of the stream or not).
    pub fn is_broken(&self) -> bool {
        self.inner.state.load(Ordering::Acquire) == BROKEN
    }

    /// Halves for a reader thread and a writer thread (the same stream: no descriptor is
    /// duplicated, and the socket closes when the stream and both halves are gone).
    pub fn try_clone(&self) -> Result<(StreamTx, StreamRx)> {
        Ok((StreamTx { inner: self.inner.clone() }, StreamRx { inner: self.inner.clone() }))
    }

    /// Sends one fragment as given (no size check on the message): for tests of the
    /// receiver's checks.
    #[cfg(test)]
    pub(crate) fn send_raw_fragment(&self, header: u8, data: &[u8]) -> Result<()> {
        self.inner.send_fragment(&mut self.inner.tx.lock(), header, data)
    }
}

impl StreamTx {
    /// As [`Stream::send`].
    pub fn send(&self, msg: &[u8]) -> Result<()> {
        self.inner.send_parts(&[msg])
    }

    /// As [`Stream::send_parts`].
    pub fn send_parts(&self, parts: &[&[u8]]) -> Result<()> {
        self.inner.send_parts(parts)
    }

    /// As [`Stream::send_lent`].
    pub fn send_lent<L: Deref<Target = [u8]>>(&self, parts: &[&[u8]], lent: L) -> Result<()> {
        self.inner.send_with(parts, Some(lent))
    }

    /// As [`Stream::peer`].
    pub fn peer(&self) -> &Peer {
        &self.inner.peer
    }

    /// As [`Stream::shutdown`].
    pub fn shutdown(&self) {
        self.inner.close(SHUT);
    }
}

impl StreamRx {
    /// As [`Stream::recv`].
    pub fn recv(&self, buf: &mut Vec<u8>) -> Result<bool> {
        self.inner.recv(buf, Wait::Block).map(|r| r.unwrap_or(false))
    }

    /// As [`Stream::try_recv`].
    pub fn try_recv(&self, buf: &mut Vec<u8>) -> Result<Option<bool>> {
        self.inner.recv(buf, Wait::Never)
    }

    /// As [`Stream::recv_timeout`].
    pub fn recv_timeout(&self, buf: &mut Vec<u8>, timeout: Duration) -> Result<Option<bool>> {
        self.inner.recv(buf, Wait::Until(Instant::now() + timeout))
    }

    /// As [`Stream::as_fd`].
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.inner.sock.as_fd()
    }

    /// As [`Stream::has_buffered`].
    pub fn has_buffered(&self) -> bool {
        self.inner.buffered.load(Ordering::Acquire)
    }

    /// As [`Stream::peer`].
    pub fn peer(&self) -> &Peer {
        &self.inner.peer
    }

    /// As [`Stream::shutdown`].
    pub fn shutdown(&self) {
        self.inner.close(SHUT);
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Stream({})", self.inner.peer)
    }
}

impl Inner {
    /// Marks the stream `state` (SHUT or BROKEN; BROKEN stays) and shuts the socket down.
    fn close(&self, state: u8) {
        let _ = self.state.compare_exchange(OPEN, state, Ordering::AcqRel, Ordering::Acquire);
        if state == BROKEN {
            self.state.store(BROKEN, Ordering::Release);
        }
        let _ = rustix::net::shutdown(&self.sock, rustix::net::Shutdown::Both);
    }

    fn send_parts(&self, parts: &[&[u8]]) -> Result<()> {
        self.send_with(parts, None::<&[u8]>)
    }

    /// Sends `parts` followed by `lent`, which is dropped once its bytes are gathered (before
    /// the last frame goes out: see [`Stream::send_lent`]), or on an error.
    fn send_with<L: Deref<Target = [u8]>>(&self, parts: &[&[u8]], mut lent: Option<L>) -> Result<()> {
        let lent_len = lent.as_deref().map_or(0, <[u8]>::len);
        let total: usize = parts.iter().map(|p| p.len()).sum::<usize>() + lent_len;
        if total > MAX_MESSAGE {
            return Err(fail!(
                Error::InvalidValue,
                "link: a message of {total} bytes to {} (at most {MAX_MESSAGE})",
                self.peer
            ));
        }
        let mut tx = self.tx.lock();
        if self.state.load(Ordering::Acquire) != OPEN {
            return Err(peer_fail!(
                Error::ConnectionReset,
                "link: send to {}: the stream is closed",
                self.peer
            ));
        }
        let mut remaining = total;
        let mut part = 0;
        let mut offset = 0;
        loop {
            let take = remaining.min(FRAGMENT);
            remaining -= take;
            let header = if remaining == 0 { LAST } else { 0 };
            // Gathers `take` bytes of the parts into the fragment's place.
            let at = if self.noise.is_some() { 1 } else { 3 };
            let buf = if self.noise.is_some() { &mut tx.plain } else { &mut tx.wire };
            if buf.len() < at + take {
                buf.resize((at + take).max(256), 0);
            }
            let mut filled = 0;
            while filled < take {
                // The lent part comes after the others.
                let whole = match parts.get(part) {
                    Some(p) => p,
                    None => lent.as_deref().unwrap_or_default(),
                };
                let p = &whole[offset..];
                let n = p.len().min(take - filled);
                buf[at + filled..at + filled + n].copy_from_slice(&p[..n]);
                filled += n;
                offset += n;
                if offset == whole.len() {
                    part += 1;
                    offset = 0;
                }
            }
            if remaining == 0 {
                // Every byte is in the scratch buffer: the lender may have its memory back
                // before the peer can see the message's end.
                drop(lent.take());
            }
            self.frame_out(&mut tx, header, take)?;
            if remaining == 0 {
                return Ok(());
            }
        }
    }

    /// Sends the fragment of `len` bytes gathered in the scratch buffer.
    fn frame_out(&self, tx: &mut Tx, header: u8, len: usize) -> Result<()> {
        let frame_len = match &self.noise {
            Some(noise) => {
                tx.plain[0] = header;
                if tx.wire.len() < 2 + 1 + len + TAG {
                    tx.wire.resize((2 + 1 + len + TAG).max(256), 0);
                }
                let Tx { nonce, plain, wire } = tx;
                let n = noise.write_message(*nonce, &plain[..1 + len], &mut wire[2..]).map_err(|e| {
                    fail!(Error::OperatingSystem, "link: encrypting for {}: {e:?}", self.peer)
                })?;
                *nonce += 1;
                n
            }
            None => {
                tx.wire[2] = header;
                1 + len
            }
        };
        tx.wire[..2].copy_from_slice(&(frame_len as u16).to_be_bytes());
        match send_all(self.sock.as_fd(), &tx.wire[..2 + frame_len]) {
            Ok(()) => Ok(()),
            Err(Errno::AGAIN) => {
                self.close(BROKEN);
                warn_limited!(
                    Reason::Stall,
                    Some(self.peer.addr.ip()),
                    "link: {} read nothing for {STALL:?}: stream closed",
                    self.peer
                );
                Err(peer_fail!(Error::TimeOut, "link: send to {} stalled for {STALL:?}", self.peer))
            }
            Err(e) => {
                self.close(BROKEN);
                Err(peer_fail!(Error::ConnectionReset, "link: send to {}: {e}", self.peer))
            }
        }
    }

    #[cfg(test)]
    fn send_fragment(&self, tx: &mut Tx, header: u8, data: &[u8]) -> Result<()> {
        let at = if self.noise.is_some() { 1 } else { 3 };
        let buf = if self.noise.is_some() { &mut tx.plain } else { &mut tx.wire };
        if buf.len() < at + data.len() {
            buf.resize(at + data.len(), 0);
        }
        buf[at..at + data.len()].copy_from_slice(data);
        self.frame_out(tx, header, data.len())
    }

    fn recv(&self, buf: &mut Vec<u8>, wait: Wait) -> Result<Option<bool>> {
        let mut rx = self.rx.lock();
        let out = self.recv_locked(&mut rx, buf, wait);
        self.buffered.store(rx.whole_frame().is_some(), Ordering::Release);
        if !matches!(out, Ok(Some(true))) {
            buf.clear();
        }
        out
    }

    fn recv_locked(&self, rx: &mut Rx, buf: &mut Vec<u8>, wait: Wait) -> Result<Option<bool>> {
        loop {
            match self.state.load(Ordering::Acquire) {
                OPEN => {}
                SHUT => return Ok(Some(false)),
                _ => {
                    return Err(peer_fail!(
                        Error::ConnectionReset,
                        "link: receive from {}: the stream is closed",
                        self.peer
                    ))
                }
            }
            match rx.frames(self.noise.as_ref()) {
                Ok(Got::Message) => {
                    std::mem::swap(buf, &mut rx.msg);
                    rx.msg.clear();
                    return Ok(Some(true));
                }
                Ok(Got::More) => {}
                Err(why) => {
                    self.close(BROKEN);
                    warn_limited!(
                        Reason::Malformed,
                        Some(self.peer.addr.ip()),
                        "link: closed the stream from {}: it sent {why}",
                        self.peer.addr
                    );
                    return Err(peer_fail!(
                        Error::InvalidValue,
                        "link: {} sent {why}: stream closed",
                        self.peer
                    ));
                }
            }
            if rx.eof {
                if rx.msg.is_empty() && rx.start == rx.end {
                    return Ok(Some(false));
                }
                self.close(BROKEN);
                return Err(peer_fail!(
                    Error::ConnectionReset,
                    "link: {} closed the stream inside a message",
                    self.peer
                ));
            }
            let flags = match wait {
                Wait::Block => RecvFlags::empty(),
                Wait::Never => RecvFlags::DONTWAIT,
                Wait::Until(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    let ts = rustix::event::Timespec {
                        tv_sec: left.as_secs() as i64,
                        tv_nsec: left.subsec_nanos() as _,
                    };
                    let mut fds = [rustix::event::PollFd::new(&self.sock, rustix::event::PollFlags::IN)];
                    match rustix::event::poll(&mut fds, Some(&ts)) {
                        Ok(0) => return Ok(None),
                        Ok(_) | Err(Errno::INTR) => {}
                        Err(e) => return Err(fail!(Error::OperatingSystem, "link: poll: {e}")),
                    }
                    RecvFlags::DONTWAIT
                }
            };
            match rx.fill(self.sock.as_fd(), flags) {
                Ok(_) => {}
                Err(Errno::AGAIN) => {
                    if matches!(wait, Wait::Never) {
                        return Ok(None);
                    }
                }
                Err(Errno::INTR) => {}
                Err(e) => {
                    self.close(BROKEN);
                    return Err(peer_fail!(Error::ConnectionReset, "link: receive from {}: {e}", self.peer));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A pair of streams over loopback: (the host's, the DPU's), encrypted with fresh keys or
    /// plaintext.
    pub(crate) fn pair(encrypted: bool) -> (Stream, Stream) {
        let dir = std::env::temp_dir().join(format!(
            "doca-link-pair-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        super::super::keys::generate(&dir, false).unwrap();
        let host = Keys::load(&dir, super::super::Role::Host).unwrap();
        let dpu = Keys::load(&dir, super::super::Role::Dpu).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (s, a) = l.accept().unwrap();
            let deadline = Instant::now() + Duration::from_secs(5);
            handshake(s, a, encrypted.then_some(&dpu), false, deadline, None).unwrap()
        });
        let s = dial(addr).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let h = handshake(s, addr, encrypted.then_some(&host), true, deadline, None).unwrap();
        (h, t.join().unwrap())
    }

    #[test]
    fn sizes_around_the_fragment_both_modes() {
        for encrypted in [true, false] {
            let (a, b) = pair(encrypted);
            let mut buf = Vec::new();
            for len in [0, 1, FRAGMENT - 1, FRAGMENT, FRAGMENT + 1, 3 * FRAGMENT, MAX_MESSAGE] {
                let msg: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
                a.send_parts(&[&msg[..len / 3], &msg[len / 3..]]).unwrap();
                assert_eq!(b.recv(&mut buf), Ok(true));
                assert_eq!(buf, msg, "len {len} encrypted {encrypted}");
            }
            assert_eq!(a.send(&vec![0; MAX_MESSAGE + 1]), Err(Error::InvalidValue));
            // The refused message sent nothing: the stream still works.
            b.send(b"back").unwrap();
            assert_eq!(a.recv(&mut buf), Ok(true));
            assert_eq!(buf, b"back");
            drop(a);
            assert_eq!(b.recv(&mut buf), Ok(false));
        }
    }

    /// A lent last part is given back once gathered, before the message's last frame is
    /// written: the peer has nothing of a one-frame message when the guard drops; a message of
    /// several frames arrives whole, its lent part gathered across fragments. Both modes.
    #[test]
    fn a_lent_part_is_given_back_before_the_last_frame_leaves() {
        use std::sync::atomic::AtomicUsize;
        /// Lends `bytes`; at drop, notes how many bytes the peer's socket holds.
        struct Lent<'a> {
            bytes: Vec<u8>,
            peer: &'a Stream,
            seen: &'a AtomicUsize,
        }
        impl Deref for Lent<'_> {
            type Target = [u8];
            fn deref(&self) -> &[u8] {
                &self.bytes
            }
        }
        impl Drop for Lent<'_> {
            fn drop(&mut self) {
                let mut probe = [0u8; 256];
                let flags = RecvFlags::PEEK | RecvFlags::DONTWAIT;
                let n = rustix::net::recv(self.peer.as_fd(), &mut probe, flags).map_or(0, |(n, _)| n);
                self.seen.store(n + 1, Ordering::SeqCst);
            }
        }
        for encrypted in [true, false] {
            let (a, b) = pair(encrypted);
            let mut buf = Vec::new();
            for len in [64, 3 * FRAGMENT + 5] {
                let lent: Vec<u8> = (0..len).map(|i| (i * 3) as u8).collect();
                let seen = AtomicUsize::new(0);
                let guard = Lent { bytes: lent.clone(), peer: &b, seen: &seen };
                if len < FRAGMENT {
                    a.send_lent(&[b"head"], guard).unwrap();
                    // One frame, written after the guard went: the peer had nothing then.
                    assert_eq!(seen.load(Ordering::SeqCst), 1, "encrypted {encrypted}: the peer had bytes");
                    assert_eq!(b.recv(&mut buf), Ok(true));
                } else {
                    // Several frames: the peer reads while they are written.
                    std::thread::scope(|s| {
                        let sender = s.spawn(|| a.send_lent(&[b"head"], guard));
                        assert_eq!(b.recv(&mut buf), Ok(true));
                        sender.join().unwrap().unwrap();
                    });
                    assert_ne!(seen.load(Ordering::SeqCst), 0, "the guard was dropped");
                }
                assert_eq!(buf[..4], *b"head");
                assert_eq!(buf[4..], lent[..], "len {len} encrypted {encrypted}");
            }
        }
    }

    #[test]
    fn try_recv_and_has_buffered() {
        let (a, b) = pair(true);
        let mut buf = Vec::new();
        assert_eq!(b.try_recv(&mut buf), Ok(None));
        assert!(!b.has_buffered());
        for i in 0..3u8 {
            a.send(&[i; 10]).unwrap();
        }
        // Wait until all three are readable, then take them: the first read brings all three.
        let mut fds = [rustix::event::PollFd::new(&b.inner.sock, rustix::event::PollFlags::IN)];
        rustix::event::poll(&mut fds, None).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(b.try_recv(&mut buf), Ok(Some(true)));
        assert_eq!(buf, [0; 10]);
        assert!(b.has_buffered(), "two more frames wait");
        assert_eq!(b.try_recv(&mut buf), Ok(Some(true)));
        assert_eq!(b.try_recv(&mut buf), Ok(Some(true)));
        assert_eq!(buf, [2; 10]);
        assert!(!b.has_buffered());
        assert_eq!(b.try_recv(&mut buf), Ok(None));
        assert_eq!(b.recv_timeout(&mut buf, Duration::from_millis(20)), Ok(None));
    }

    #[test]
    fn receiver_refuses_malformed_fragments() {
        for encrypted in [true, false] {
            // A message over MAX_MESSAGE in fragments that are each fine.
            let (a, b) = pair(encrypted);
            let t = std::thread::spawn(move || {
                let chunk = vec![1u8; FRAGMENT];
                for _ in 0..MAX_MESSAGE / FRAGMENT + 2 {
                    if a.send_raw_fragment(0, &chunk).is_err() {
                        break;
                    }
                }
                a
            });
            let mut buf = Vec::new();
            assert_eq!(b.recv(&mut buf), Err(Error::InvalidValue));
            assert_eq!(b.recv(&mut buf), Err(Error::ConnectionReset), "closed after");
            assert!(b.is_broken(), "failed, not shut down in order");
            drop(t.join().unwrap());
            // Unknown header bits; an empty middle fragment.
            for (header, data) in [(0x80u8, &b"x"[..]), (0, &b""[..])] {
                let (a, b) = pair(encrypted);
                a.send_raw_fragment(header, data).unwrap();
                assert_eq!(b.recv(&mut buf), Err(Error::InvalidValue));
            }
            // The stream ends inside a message.
            let (a, b) = pair(encrypted);
            a.send_raw_fragment(0, b"half").unwrap();
            drop(a);
            assert_eq!(b.recv(&mut buf), Err(Error::ConnectionReset));
            assert!(b.is_broken());
        }
    }

    #[test]
    fn tampered_frame_fails_authentication() {
        // A plaintext side cannot speak to an encrypted one; so tamper on the wire: a
        // frame whose bytes changed fails the tag check.
        let (a, b) = pair(true);
        let mut tx = a.inner.tx.lock();
        tx.plain.resize(16, 0);
        tx.plain[1..6].copy_from_slice(b"hello");
        tx.plain[0] = LAST;
        tx.wire.resize(64, 0);
        let noise = a.inner.noise.as_ref().unwrap();
        let Tx { nonce, plain, wire } = &mut *tx;
        let n = noise.write_message(*nonce, &plain[..6], &mut wire[2..]).unwrap();
        wire[..2].copy_from_slice(&(n as u16).to_be_bytes());
        wire[5] ^= 1;
        send_all(a.inner.sock.as_fd(), &wire[..2 + n]).unwrap();
        drop(tx);
        let mut buf = Vec::new();
        assert_eq!(b.recv(&mut buf), Err(Error::InvalidValue));
    }

    #[test]
    fn shutdown_wakes_a_blocked_receiver() {
        let (a, b) = pair(true);
        let b = Arc::new(b);
        let b2 = b.clone();
        let t = std::thread::spawn(move || {
            let mut buf = Vec::new();
            b2.recv(&mut buf)
        });
        std::thread::sleep(Duration::from_millis(50));
        b.shutdown();
        assert_eq!(t.join().unwrap(), Ok(false));
        let mut buf = Vec::new();
        assert_eq!(a.recv(&mut buf), Ok(false), "the peer sees the end");
        assert!(!a.is_broken() && !b.is_broken(), "ended in order on both sides");
        a.shutdown();
        assert!(!a.is_broken());
        assert_eq!(b.send(b"x"), Err(Error::ConnectionReset));
    }

    #[test]
    fn halves_send_and_receive_at_once() {
        let (a, b) = pair(true);
        let (atx, arx) = a.try_clone().unwrap();
        let (btx, brx) = b.try_clone().unwrap();
        drop((a, b));
        let echo = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut n = 0;
            while brx.recv(&mut buf).unwrap() {
                btx.send(&buf).unwrap();
                n += 1;
            }
            n
        });
        let reader = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let mut n = 0u32;
            while n < 200 {
                assert_eq!(arx.recv(&mut buf), Ok(true));
                assert_eq!(buf.len(), (n as usize * 997) % 70_000);
                n += 1;
            }
            arx
        });
        for n in 0..200u32 {
            atx.send(&vec![n as u8; (n as usize * 997) % 70_000]).unwrap();
        }
        let arx = reader.join().unwrap();
        atx.shutdown();
        drop((atx, arx));
        assert_eq!(echo.join().unwrap(), 200);
    }
}
