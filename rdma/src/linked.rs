//! RDMA connections across the TCP link ([`doca_link::remote`]): host and DPU on two kernels,
//! where a peer's memory service is not in this side's fabric directory.
//!
//! A connection's two sockets carry plain packets ([`crate::wire::Hdr`], no file descriptor
//! ever rides on them), so across the link each socket is relayed as it is: the side that
//! connects gets one end of a local `SOCK_SEQPACKET` pair instead of the socket
//! [`doca_link::rendezvous::take_connection`] would have given, and a *relay* moves each
//! packet into one message of a [`Stream`] and back. The RDMA code paths are those of a
//! local connection.
//!
//! | side | what |
//! |------|------|
//! | connector | `take` (from `doca_rdma_connect`): when the descriptor's service is not in the local fabric directory and the link is configured, `remote::open(Kind::Rdma)` with the service and the offer's token (the DPU side names the exporting host process by its presence, the service's nonce; the host side dials the DPU's listener), then waits for the answer (a DOCA code); on success hands the RDMA code one end of a socket pair and relays the other end on a thread of its own |
//! | offerer's side | `handle`, the link's handler of [`Kind::Rdma`] (in the exporting host process, which keeps a presence at the listener while it has connections; on the DPU, the listening process): takes the connection **locally**, as a local connector does (an unknown token → `NOT_FOUND`), answers the code, then relays |
//! | connection manager | `connect_port` (from `doca_rdma_connect_to_addr` on the host side, at the link's address, when no local port answers): the request names a port; the DPU side's handler connects to that listening port locally (nobody there → `NOT_FOUND`: the client's failure) and relays its socket the same way |
//! | wire | request `DOCARDLQ`, version u16, 0 u16, the service (pid u32, nonce u64), the token (16 bytes) — or `DOCARDLP`, version u16, 0 u16, the port (u16), 0 u16; answer: a DOCA code (u32 LE, 0 ok); then one stream message per packet, either way |
//!
//! **Relay.** Two threads per relayed socket: *up* reads each packet the local side sends and
//! sends it as one message; *down* writes each message as one packet, waiting for room when
//! the local socket is full (back-pressure is then TCP's). A packet longer than
//! [`MAX_PACKET`], cut, or with descriptors attached (no RDMA packet has any) ends the relay
//! with a log line, as does a message from the other side that is empty or longer. The end
//! of either side propagates: the local side closing its socket ends the stream, the stream
//! ending (the other process stopped, was killed, or the link broke) shuts the local socket —
//! the RDMA code sees its peer gone without a goodbye and puts the connection in the error
//! state, as for a local peer that was killed.
//!
//! **Exit.** Locally a packet sent before `exit` waits in the kernel; here it may still be
//! in the relay's socket: an exiting process waits (at most [`EXIT_FLUSH`]) until its relays
//! forwarded what its application sent (a context's goodbye when it stops, the last
//! acknowledgement).
//!
//! **Bounds.** At most [`MAX_RELAYS`] relays per process (more: the connect fails with
//! `NO_MEMORY`); the connector waits at most [`PRESENCE_WAIT`] for the host process's
//! presence (DPU side) and the link's own answer time for the answer.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use doca_link::discard::PeerFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once, Weak};
use std::time::{Duration, Instant};

use doca_core::{bail, fail, peer_fail, Error, Result};
use doca_link::exchange::{self, Patience, Want};
use doca_link::remote::{self, Kind, Role, Stream};
use doca_link::rendezvous::{ServiceName, Token};
use doca_link::Recv;

use crate::wire::{Desc, HDR_LEN};

const REQUEST_MAGIC: &[u8; 8] = b"DOCARDLQ";
const VERSION: u16 = 1;
const REQUEST_LEN: usize = 12 + 12 + 16;

/// The longest packet relayed: a header and the largest message the link carries in one.
pub const MAX_PACKET: usize = remote::MAX_MESSAGE;
/// Relays one process runs at once.
pub const MAX_RELAYS: usize = 256;
/// How long a DPU-side connector waits for the exporting host process's presence.
pub const PRESENCE_WAIT: Duration = Duration::from_secs(3);
/// How long the connector waits for the other side's answer.
pub const ANSWER_WAIT: Duration = remote::REPLY_WAIT;
/// The longest an exiting process waits for its relays to forward what it sent.
pub const EXIT_FLUSH: Duration = Duration::from_secs(2);

const _: () = assert!(MAX_PACKET > HDR_LEN + 16);

/// The relays running in this process (at most [`MAX_RELAYS`]).
static LIVE: remote::Quota = remote::Quota::new(MAX_RELAYS);

/// The link's configuration if service `s` is to be reached across it: the link is
/// configured and the service is not in this side's fabric directory.
pub(crate) fn across(s: ServiceName) -> Option<&'static remote::Config> {
    let config = remote::config()?;
    match doca_link::fabric_dir() {
        Ok(dir) if dir.join(s.file()).symlink_metadata().is_ok() => None,
        _ => Some(config),
    }
}

/// Registers the handler of [`Kind::Rdma`] streams (once per process; nothing without a
/// link), and on the DPU side starts the listener: called at each context's creation, so
/// that a DPU process that connects nothing itself still answers the host's connectors and
/// presences.
pub(crate) fn register() {
    static ONCE: Once = Once::new();
    if let Some(config) = remote::config() {
        ONCE.call_once(|| remote::serve(Kind::Rdma, handle));
        if config.role == Role::Dpu {
            remote::ensure_listening();
        }
    }
}

/// What keeps a connection offer of service `s` reachable from across the link: on the host
/// side, this process's presence at the DPU's listener (shared with its other offers and
/// exports); nothing elsewhere. Logged when the presence cannot be had.
pub(crate) fn offered(s: ServiceName) -> Option<remote::Presence> {
    let config = remote::config()?;
    if config.role != Role::Host {
        return None;
    }
    match remote::present(s.nonce) {
        Ok(p) => Some(p),
        Err(e) => {
            tracing::warn!(target: "doca_sdk", "rdma export: connectors across the link cannot reach this connection (no presence at the DPU's listener: {e})");
            None
        }
    }
}

/// The socket of a connection to the offer `d` names: the local one, or one end of a pair
/// relayed across the link when `d`'s service is not local and the link is configured.
pub(crate) fn take(d: &Desc) -> Result<PeerFd> {
    match across(d.service) {
        None => doca_link::rendezvous::take_connection(d.service, &d.token)
            .map(|(fd, _peer)| fd)
            .map_err(|e| fail!(Error::from(e), "rdma connect: the peer's connection offer is gone")),
        Some(config) => connect_across(config, d.service, &d.token).map(PeerFd::socket),
    }
}

fn encode_request(s: ServiceName, token: &Token) -> [u8; REQUEST_LEN] {
    let mut r = [0u8; REQUEST_LEN];
    r[..8].copy_from_slice(REQUEST_MAGIC);
    r[8..10].copy_from_slice(&VERSION.to_le_bytes());
    r[12..16].copy_from_slice(&s.pid.to_le_bytes());
    r[16..24].copy_from_slice(&s.nonce.to_le_bytes());
    r[24..40].copy_from_slice(token);
    r
}

const PORT_MAGIC: &[u8; 8] = b"DOCARDLP";
const PORT_REQUEST_LEN: usize = 16;

fn encode_port_request(port: u16) -> [u8; PORT_REQUEST_LEN] {
    let mut r = [0u8; PORT_REQUEST_LEN];
    r[..8].copy_from_slice(PORT_MAGIC);
    r[8..10].copy_from_slice(&VERSION.to_le_bytes());
    r[12..14].copy_from_slice(&port.to_le_bytes());
    r
}

fn decode_port_request(r: &[u8]) -> Option<u16> {
    if r.len() != PORT_REQUEST_LEN || &r[..8] != PORT_MAGIC || r[8..12] != [1, 0, 0, 0] || r[14..] != [0, 0] {
        return None;
    }
    Some(u16::from_le_bytes([r[12], r[13]]))
}

fn decode_request(r: &[u8]) -> Option<(ServiceName, Token)> {
    if r.len() != REQUEST_LEN || &r[..8] != REQUEST_MAGIC || r[8..12] != [1, 0, 0, 0] {
        return None;
    }
    let pid = u32::from_le_bytes(r[12..16].try_into().ok()?);
    let nonce = u64::from_le_bytes(r[16..24].try_into().ok()?);
    Some((ServiceName { pid, nonce }, r[24..40].try_into().ok()?))
}

fn connect_across(config: &remote::Config, s: ServiceName, token: &Token) -> Result<OwnedFd> {
    let to = match config.role {
        Role::Host => None,
        Role::Dpu => {
            remote::ensure_listening();
            let deadline = Instant::now() + PRESENCE_WAIT;
            while !remote::is_present(s.nonce) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            Some(s.nonce)
        }
    };
    open_relayed(to, &encode_request(s, token), &format!("pid {}", s.pid))
        .map_err(|e| fail!(e, "rdma connect: the peer's connection offer across the link cannot be reached"))
}

/// Whether `ip` names the DPU side across the link from this process: the host side of a
/// configured link, and `ip` the address its link connects to.
pub(crate) fn reaches_dpu_at(ip: std::net::IpAddr) -> bool {
    remote::config().is_some_and(|c| c.role == Role::Host && c.addr.ip() == ip)
}

/// Host side: a socket connected to the connection manager's listening `port` on the DPU
/// side, relayed across the link; `Ok(None)` when nobody listens there.
pub(crate) fn connect_port(port: u16) -> Result<Option<OwnedFd>> {
    match open_relayed(None, &encode_port_request(port), &format!("port {port}")) {
        Ok(fd) => Ok(Some(fd)),
        Err(Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Opens a stream for `request`, waits for the answer and relays: the local end.
fn open_relayed(to: Option<remote::PresenceKey>, request: &[u8], what: &str) -> Result<OwnedFd> {
    let Some(slot) = LIVE.take() else {
        bail!(Error::NoMemory, "rdma over the link: {MAX_RELAYS} connections across the link run already");
    };
    let stream = remote::open(Kind::Rdma, to, request)?;
    let mut answer = Vec::new();
    match stream.recv_timeout(&mut answer, ANSWER_WAIT) {
        Ok(Some(true)) if answer.len() == 4 => {}
        Ok(Some(true)) => {
            bail!(Error::ConnectionReset, "rdma over the link: a malformed answer from {}", stream.peer())
        }
        Ok(None) => {
            bail!(Error::TimeOut, "rdma over the link: {} did not answer in {ANSWER_WAIT:?}", stream.peer())
        }
        Ok(Some(false)) | Err(_) => {
            bail!(Error::NotFound, "rdma over the link: {} closed before answering", stream.peer())
        }
    }
    match u32::from_le_bytes(answer[..4].try_into().expect("4 bytes")) {
        0 => {}
        c => match Error::from_code(c as i32) {
            Some(e) if e != Error::Success => {
                bail!(e, "rdma over the link: {} refused ({what})", stream.peer())
            }
            _ => bail!(
                Error::ConnectionReset,
                "rdma over the link: an answer of unknown code {c} from {}",
                stream.peer()
            ),
        },
    }
    let (app, ours) = doca_link::socketpair()?;
    let who = format!("rdma link relay to {} ({what})", stream.peer());
    std::thread::Builder::new()
        .name("doca-rdma-link".into())
        .spawn(move || {
            let _slot = slot;
            relay(&who, PeerFd::socket(ours), stream);
        })
        .map_err(|e| fail!(Error::NoMemory, "rdma over the link: cannot start a thread: {e}"))?;
    Ok(app)
}

/// The link's handler of [`Kind::Rdma`]: takes the connection the request names locally,
/// answers, and relays.
fn handle(stream: Stream, request: Vec<u8>) {
    let answer = |e: Option<Error>| {
        let code = e.map_or(0u32, |e| e.code() as u32);
        stream.send(&code.to_le_bytes())
    };
    enum Asked {
        Conn(ServiceName, Token),
        Port(u16),
    }
    let asked = match (decode_request(&request), decode_port_request(&request)) {
        (Some((s, token)), _) => Asked::Conn(s, token),
        (None, Some(port)) => Asked::Port(port),
        (None, None) => {
            tracing::warn!(target: "doca_sdk", "rdma over the link: a malformed request from {}", stream.peer());
            let _ = answer(Some(Error::InvalidValue));
            return;
        }
    };
    let Some(slot) = LIVE.take() else {
        tracing::warn!(target: "doca_sdk", "rdma over the link: {MAX_RELAYS} connections run already; {} refused", stream.peer());
        let _ = answer(Some(Error::NoMemory));
        return;
    };
    let _slot = slot;
    let (sock, what) = match asked {
        // Only services of this side: a request naming one that is not here is not relayed on.
        Asked::Conn(s, token) => (
            match doca_link::fabric_dir() {
                Ok(dir) if dir.join(s.file()).symlink_metadata().is_ok() => {
                    doca_link::rendezvous::take_connection(s, &token).map(|(fd, _)| fd).map_err(Error::from)
                }
                _ => Err(peer_fail!(
                    Error::NotFound,
                    "rdma over the link: {} asks for service of pid {}, which is not here",
                    stream.peer(),
                    s.pid
                )),
            },
            format!("pid {}", s.pid),
        ),
        Asked::Port(port) => (
            match doca_link::connect_port(crate::wire::PORT_NS, port) {
                Ok(Some(fd)) => Ok(PeerFd::socket(fd)),
                Ok(None) => Err(peer_fail!(
                    Error::NotFound,
                    "rdma over the link: {} asks for port {port}, where nobody listens",
                    stream.peer()
                )),
                Err(e) => Err(Error::from(e)),
            },
            format!("port {port}"),
        ),
    };
    let sock = match sock {
        Ok(fd) => fd,
        Err(e) => {
            let _ = answer(Some(e));
            return;
        }
    };
    if answer(None).is_err() {
        return;
    }
    let who = format!("rdma link relay for {} ({what})", stream.peer());
    relay(&who, sock, stream);
}

/// What an exiting process looks at: a relay's socket and whether its up thread holds a
/// packet it has not sent yet.
struct Probe {
    sock: Arc<PeerFd>,
    holding: AtomicBool,
}

impl Probe {
    fn pending(&self) -> bool {
        if self.holding.load(Ordering::Acquire) {
            return true;
        }
        !exchange::is_quiet(self.sock.as_fd())
    }
}

static PROBES: std::sync::Mutex<Vec<Weak<Probe>>> = std::sync::Mutex::new(Vec::new());

extern "C" fn flush_at_exit() {
    let until = Instant::now() + EXIT_FLUSH;
    loop {
        let pending = {
            let mut p = PROBES.lock().unwrap_or_else(|e| e.into_inner());
            p.retain(|w| w.strong_count() > 0);
            p.iter().filter_map(Weak::upgrade).any(|p| p.pending())
        };
        if !pending || Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn watch_at_exit(sock: &Arc<PeerFd>) -> Arc<Probe> {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if !doca_link::cleanup::at_exit(flush_at_exit) {
            tracing::debug!(target: "doca_sdk", "rdma over the link: no exit flush (atexit table full)");
        }
    });
    let probe = Arc::new(Probe { sock: sock.clone(), holding: AtomicBool::new(false) });
    PROBES.lock().unwrap_or_else(|e| e.into_inner()).push(Arc::downgrade(&probe));
    probe
}

/// Waits until `fd` is ready for `want` (or hangs up); false when the poll itself fails.
fn wait(fd: BorrowedFd<'_>, want: Want) -> bool {
    exchange::wait(fd, want, Patience::endless(None)).is_ok()
}

/// Relays the local socket `sock` and `stream` until either ends (see the module docs).
fn relay(who: &str, sock: PeerFd, stream: Stream) {
    // RDMA's packets carry no descriptors (a local peer's would close the relay).
    doca_link::discard::refuse_descriptors(sock.as_fd());
    let sock = Arc::new(sock);
    let stream = Arc::new(stream);
    let probe = watch_at_exit(&sock);
    let down = {
        let (sock, stream, who) = (sock.clone(), stream.clone(), who.to_owned());
        std::thread::Builder::new()
            .name("doca-rdma-link-down".into())
            .spawn(move || down(&who, &sock, &stream))
    };
    let down = match down {
        Ok(h) => Some(h),
        Err(e) => {
            tracing::error!(target: "doca_sdk", "{who}: cannot start a thread: {e}");
            None
        }
    };
    if down.is_some() {
        up(who, &sock, &stream, &probe);
    }
    tracing::debug!(target: "doca_sdk", "{who}: the local side is done");
    stream.shutdown();
    doca_link::exchange::hang_up(sock.as_fd());
    if let Some(h) = down {
        let _ = h.join();
    }
}

/// Local socket → stream.
fn up(who: &str, sock: &PeerFd, stream: &Stream, probe: &Probe) {
    let mut packet = vec![0u8; MAX_PACKET];
    loop {
        probe.holding.store(true, Ordering::Release);
        let got = doca_link::recv(sock.as_fd(), &mut packet);
        let sent = match got {
            Ok(Recv::Empty) => {
                probe.holding.store(false, Ordering::Release);
                if !wait(sock.as_fd(), Want::Read) {
                    return;
                }
                continue;
            }
            Ok(Recv::Closed) | Err(_) => return,
            Ok(Recv::Packet { fds, .. }) if !fds.is_empty() => {
                tracing::warn!(target: "doca_sdk", "{who}: a local packet with descriptors attached (RDMA sends none); closed");
                return;
            }
            Ok(Recv::Packet { truncated: true, .. }) => {
                tracing::warn!(target: "doca_sdk", "{who}: a local packet longer than {MAX_PACKET} bytes; closed");
                return;
            }
            Ok(Recv::Packet { len, .. }) => stream.send(&packet[..len]),
        };
        probe.holding.store(false, Ordering::Release);
        if let Err(e) = sent {
            tracing::debug!(target: "doca_sdk", "{who}: the stream broke ({e})");
            return;
        }
    }
}

/// Stream → local socket.
fn down(who: &str, sock: &PeerFd, stream: &Stream) {
    let mut msg = Vec::new();
    'stream: loop {
        match stream.recv(&mut msg) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                tracing::debug!(target: "doca_sdk", "{who}: the stream broke ({e})");
                break;
            }
        }
        if msg.is_empty() || msg.len() > MAX_PACKET {
            tracing::warn!(target: "doca_sdk", "{who}: a message of {} bytes from {} is no packet; closed", msg.len(), stream.peer());
            break;
        }
        loop {
            match doca_link::send(sock.as_fd(), &msg, &[]) {
                Ok(()) => break,
                Err(doca_link::Error::Again) => {
                    if !wait(sock.as_fd(), Want::Write) {
                        break 'stream;
                    }
                }
                Err(_) => break 'stream,
            }
        }
    }
    tracing::debug!(target: "doca_sdk", "{who}: the stream ended");
    stream.shutdown();
    doca_link::exchange::hang_up(sock.as_fd());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_bad_ones_are_refused() {
        let s = ServiceName { pid: 7, nonce: 0x1122_3344_5566_7788 };
        let r = encode_request(s, &[5; 16]);
        assert_eq!(decode_request(&r), Some((s, [5; 16])));
        for cut in 0..r.len() {
            assert_eq!(decode_request(&r[..cut]), None, "cut at {cut}");
        }
        let mut bad = r;
        bad[0] = b'X';
        assert_eq!(decode_request(&bad), None, "magic");
        let mut bad = r;
        bad[8] = 2;
        assert_eq!(decode_request(&bad), None, "version");
        let mut long = r.to_vec();
        long.push(0);
        assert_eq!(decode_request(&long), None, "trailing bytes");
    }

    /// Without a link every service is reached locally (no relay is ever made).
    #[test]
    fn without_a_link_nothing_is_across() {
        if remote::config().is_none() {
            assert!(across(ServiceName { pid: 1, nonce: 2 }).is_none());
        }
    }
}
