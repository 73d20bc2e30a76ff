//! The comm channel across the TCP link ([`doca_link::remote`]): when host and DPU run on two
//! kernels, nothing is shared, so each side's library plays the other side locally.
//!
//! A **stand-in** speaks the local protocol to the local application exactly as a local peer
//! would — the handshake's answer, the two rings, the doorbells, the connection's socket —
//! and moves what the application writes across one encrypted TCP stream per connection.
//! The application's code paths (client, server, legacy endpoints, at every API level) are
//! those of a local connection; only where no local server listens does a client's dial
//! fall back to the link.
//!
//! | side | where | what the stand-in does |
//! |------|-------|------------------------|
//! | host (client) | [`dial`], called by [`super::dial::Dialing::start`] when no local server listens | hands the client one end of a socket pair; on a thread: reads its Hello, opens a stream ([`Kind::CcService`]), and answers the Hello with the real server's answer — a refusal as it came, an acceptance with a local segment laid out by the real server's limits and the real connection id |
//! | DPU (server) | [`serve`], the link's handler for [`Kind::CcService`] | connects to the named service in the local fabric directory as a local client would, sends the host's Hello, and sends the server's answer back |
//!
//! Then both sides run the same **pump**: one thread per direction. *Up* reads the ring the
//! local application writes and sends each message on the stream; *down* reads the stream
//! and writes the ring the application reads. Each thread sleeps on its own doorbell (the
//! stand-in hands the application two: messages and room), so no thread ever spins.
//! Back-pressure is the rings' and TCP's own: a full ring stops *down* from reading the
//! stream, TCP's window fills, the other side's *up* blocks in its send, the ring its
//! application writes fills, and that application's send answers `AGAIN` as locally.
//!
//! Stream messages after the open: `ANSWER reply` (DPU → host, once: the server's answer, a
//! refusal or an acceptance), `NONE` (no server of that name on the DPU: the client's
//! attempt fails and it tries again, as with a late local server), then `MSG kind:u32
//! payload` either way. The end of either (the application hung up or closed its socket,
//! the stream broke or timed out) closes both rings and the socket on each side: the peer
//! application sees its peer gone as it would locally.
//!
//! The fast path rides on the same stream (`CTRL` messages): consumers are fed and mirrored
//! by [`super::remote_fast`].
//!
//! Trust: what arrives on the stream comes from an authenticated peer, and is still checked:
//! the Hello and the answer are decoded by the same code as locally, and a message longer
//! than the ring's slot closes the connection with a log line.

use doca_link::discard::PeerFd;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use doca_core::{Error, PciAddr, Result};
use doca_link::exchange::{self, Patience, Want, Woke};
use doca_link::notify::Doorbell;
use doca_link::remote::{self, Kind, Role, Stream};
use doca_link::{connect_service, recv, send, socketpair, Recv};
use rustix::event::{PollFd, PollFlags};

use super::remote_fast::{Fast, CTRL};
use super::ring::Ring;
use super::setup::{self, answer, send_hello, Answer, Bells, Served};
use crate::proto::handshake::{Limits, Occupancy, MAX_QUEUE};
use crate::proto::{Ctrl, Hello, Reply};

/// Stand-ins (connections across the link) one process runs at once; beyond, a dial fails
/// as a busy server's would and the client tries again later.
pub const MAX_STAND_INS: usize = 256;
/// The longest the DPU's stand-in waits for the local server's answer.
const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// Largest handshake packet read.
const PACKET: usize = 512;

/// The kind of a relayed connection's row in the status page (`doca_emu ls`).
pub const LINK_ROW: &str = "cc_link";

const ANSWER: u8 = 3;
const NONE: u8 = 4;
const MSG: u8 = 1;

/// The stand-ins running in this process (at most [`MAX_STAND_INS`]).
static LIVE: remote::Quota = remote::Quota::new(MAX_STAND_INS);

/// Whether this process reaches servers across the link (the host side is configured).
pub fn is_host() -> bool {
    remote::config().is_some_and(|c| matches!(c.role, Role::Host))
}

/// Host side: a socket that behaves as one connected to service `name` of namespace `ns`
/// for host function `pci` — the client's end of a pair whose other end a stand-in serves
/// across the link. `Ok(None)` when this process is not on the host side of a link.
pub fn dial(ns: &str, pci: PciAddr, name: &str) -> Result<Option<OwnedFd>> {
    if !is_host() {
        return Ok(None);
    }
    register();
    let Some(slot) = LIVE.take() else {
        tracing::debug!(target: "doca_sdk", "cc over the link: {MAX_STAND_INS} connections run already");
        return Err(Error::Again);
    };
    let (app, ours) = socketpair()?;
    let request = encode_request(ns, pci);
    let who = format!("cc link stand-in for service {name:?}");
    std::thread::Builder::new()
        .name("doca-cc-link".into())
        .spawn(move || {
            let _slot = slot;
            host_stand_in(&who, PeerFd::socket(ours), &request);
        })
        .map_err(|e| doca_core::fail!(Error::NoMemory, "cc over the link: cannot start a thread: {e}"))?;
    Ok(Some(app))
}

/// Registers the DPU side's handler (idempotent); the link calls [`serve`] for each stream
/// opened for [`Kind::CcService`].
pub fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| remote::serve(Kind::CcService, serve));
}

/// DPU side: makes this process answer remote clients when it is the DPU side of a link
/// (called when a server or a legacy service starts listening).
pub fn listen_if_dpu() {
    if remote::config().is_some_and(|c| matches!(c.role, Role::Dpu)) {
        register();
        remote::ensure_listening();
    }
}

/// The open request's head: the namespace and the host function (the client's Hello, which
/// names the service, follows).
fn encode_request(ns: &str, pci: PciAddr) -> Vec<u8> {
    let pci = pci.to_string();
    let mut r = Vec::with_capacity(2 + ns.len() + pci.len() + PACKET);
    r.push(ns.len() as u8);
    r.extend_from_slice(ns.as_bytes());
    r.push(pci.len() as u8);
    r.extend_from_slice(pci.as_bytes());
    r
}

/// The namespace (lower-case letters), the host function and the Hello of a request.
fn decode_request(r: &[u8]) -> Option<(String, PciAddr, Hello)> {
    let (&n, r) = r.split_first()?;
    let (ns, r) = (r.get(..n as usize)?, r.get(n as usize..)?);
    let (&p, r) = r.split_first()?;
    let (pci, hello) = (r.get(..p as usize)?, r.get(p as usize..)?);
    let ns = std::str::from_utf8(ns).ok()?;
    if ns.is_empty() || !ns.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    let pci = PciAddr::parse(std::str::from_utf8(pci).ok()?).ok()?;
    Some((ns.to_owned(), pci, Hello::decode(hello).ok()?))
}

/// Waits until `fd` is readable (or hung up) or `until` passes; false on time out.
fn readable(fd: BorrowedFd<'_>, until: Instant) -> bool {
    let left = until.saturating_duration_since(Instant::now());
    matches!(exchange::wait(fd, Want::Read, Patience::new(None, left)), Ok(Woke::Ready | Woke::HungUp))
}

fn host_stand_in(who: &str, ours: PeerFd, request: &[u8]) {
    // The client sends its Hello right after connecting.
    if !readable(ours.as_fd(), Instant::now() + ANSWER_WAIT) {
        return;
    }
    let mut buf = [0u8; PACKET];
    let (len, truncated, fds) = match recv(ours.as_fd(), &mut buf) {
        Ok(Recv::Packet { len, truncated, fds }) => (len, truncated, fds),
        _ => return,
    };
    let Ok(hello) = Hello::decode(&buf[..len]) else {
        tracing::debug!(target: "doca_sdk", "{who}: the local client's Hello is malformed");
        return;
    };
    let mut open = request.to_vec();
    open.extend_from_slice(&buf[..len]);
    let stream = match remote::open(Kind::CcService, None, &open) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            // As with a local server not listening yet: the attempt fails, the client tries again.
            tracing::debug!(target: "doca_sdk", "{who}: the DPU side did not take the connection ({e})");
            return;
        }
    };
    let mut msg = Vec::new();
    let reply = match stream.recv(&mut msg) {
        Ok(true) if msg.first() == Some(&ANSWER) => match Reply::decode(&msg[1..]) {
            Ok(r) => r,
            Err(_) => {
                tracing::warn!(target: "doca_sdk", "{who}: malformed answer from {}", stream.peer());
                return;
            }
        },
        Ok(true) if msg.first() == Some(&NONE) => {
            tracing::debug!(target: "doca_sdk", "{who}: no such server on the DPU side yet");
            return;
        }
        Ok(true) => {
            tracing::warn!(target: "doca_sdk", "{who}: unexpected message from {}", stream.peer());
            return;
        }
        Ok(false) | Err(_) => return,
    };
    if reply.status != 0 {
        let _ = send(ours.as_fd(), &reply.encode(), &[]);
        return;
    }
    // Answer the local client as the real server did: its queue and message size, its id.
    let limits = Limits {
        kind: hello.kind,
        name: hello.name.clone(),
        function: hello.function,
        max_msg_size: reply.max_msg_size,
        recv_queue_size: reply.server_recv_queue,
        max_recv_queue: MAX_QUEUE,
        max_connections: u32::MAX,
        max_connections_per_peer: u32::MAX,
    };
    let pid = std::process::id() as i32;
    let served = setup::serve_hello(
        &who,
        ours.as_fd(),
        pid,
        (&buf[..len], truncated, fds),
        &limits,
        Occupancy::default(),
        reply.conn_id,
        &Bells::two,
    );
    let Served::Up(up) = served else {
        tracing::debug!(target: "doca_sdk", "{who}: the local client left during its handshake");
        return;
    };
    let (channel, _accepted, bells) = *up;
    pump(who, channel.into_parts(), bells.keep(), ours, stream);
}

/// The link's handler for [`Kind::CcService`] on the DPU side: connects to the local server
/// the request names and relays.
pub fn serve(stream: Stream, request: Vec<u8>) {
    let stream = Arc::new(stream);
    let Some((ns, pci, hello)) = decode_request(&request) else {
        tracing::warn!(target: "doca_sdk", "cc over the link: malformed request from {}", stream.peer());
        return;
    };
    let who = format!("cc link stand-in for {} (service {:?})", stream.peer(), hello.name);
    let Some(slot) = LIVE.take() else {
        let _ = stream.send_parts(&[&[ANSWER], &Reply::refuse(Error::Again).encode()]);
        return;
    };
    let _slot = slot;
    let sock = match connect_service(&ns, pci, &hello.name) {
        Ok(Some(s)) => PeerFd::socket(s),
        Ok(None) | Err(_) => {
            let _ = stream.send(&[NONE]);
            return;
        }
    };
    let bells = match Bells::two() {
        Ok(b) => b,
        Err(_) => return,
    };
    if send_hello(sock.as_fd(), &hello, bells.theirs()).is_err() {
        let _ = stream.send(&[NONE]);
        return;
    }
    let bells = bells.keep();
    let until = Instant::now() + ANSWER_WAIT;
    let (channel, reply) = loop {
        if !readable(sock.as_fd(), until) {
            return;
        }
        match answer(sock.as_fd(), &hello) {
            Answer::Waiting => continue,
            Answer::Up(up) => break *up,
            Answer::Refused(e) => {
                let _ = stream.send_parts(&[&[ANSWER], &Reply::refuse(e).encode()]);
                return;
            }
            Answer::Lost | Answer::Broken(..) => {
                let _ = stream.send(&[NONE]);
                return;
            }
        }
    };
    if stream.send_parts(&[&[ANSWER], &reply.encode()]).is_err() {
        return;
    }
    pump(&who, channel.into_parts(), bells, sock, stream);
}

/// Relays one established connection until either end goes: `rings` are this side's parts
/// of the local channel (the ring the application reads, the ring it writes, the
/// application's messages and room doorbells), `bells` this side's own (rung by the
/// application: messages; room), `sock` the connection's local socket (its end of file: the
/// application is gone).
fn pump(
    who: &str,
    (tx, rx, app_bell, app_room_bell): (Ring, Ring, Doorbell, Doorbell),
    (our_msgs, our_room): (Doorbell, Option<Doorbell>),
    sock: PeerFd,
    stream: Arc<Stream>,
) {
    let Some(our_room) = our_room else {
        tracing::error!(target: "doca_sdk", "{who}: a stand-in needs two doorbells");
        return;
    };
    let sock = Arc::new(sock);
    // Nothing but the doorbell wakes the up thread: the application checks it at each
    // flushing send (before the thread first arms).
    rx.set_eager();
    let _flush = super::exit_flush::register(&rx);
    // The connection's row in this process's status page (`doca_emu ls`): the peer's
    // address and key, bytes each way. Sent bytes are counted by the up thread, received by
    // the down thread: one writer per word.
    let row = Arc::new(doca_core::status::Entry::claim(doca_core::status::Identity {
        kind: LINK_ROW,
        dev: None,
        rep: None,
        name: &stream.peer().to_string(),
        conn_id: 0,
    }));
    row.set_connections(1);
    let fast = Fast::new(who, stream.clone(), sock.clone(), tx.signal());
    let down = {
        let (stream, sock, who, fast, row) =
            (stream.clone(), sock.clone(), who.to_owned(), fast.clone(), row.clone());
        std::thread::Builder::new()
            .name("doca-cc-link-down".into())
            .spawn(move || down(&who, tx, app_bell, our_room, &sock, &stream, &fast, &row))
    };
    let down = match down {
        Ok(h) => h,
        Err(e) => {
            tracing::error!(target: "doca_sdk", "{who}: cannot start a thread: {e}");
            rx.close();
            return;
        }
    };
    up(who, &rx, &app_room_bell, &our_msgs, &sock, &stream, &fast, &row);
    tracing::debug!(target: "doca_sdk", "{who}: the local side is done");
    // This side is over: the peer's stand-in reads the end of the stream; the local
    // application sees its rings closed and its socket's end of file.
    rx.close();
    stream.shutdown();
    doca_link::exchange::hang_up(sock.as_fd());
    let _ = down.join();
    fast.close();
    row.set_connections(0);
}

/// Local application → stream, until the application hangs up or the stream fails.
#[allow(clippy::too_many_arguments)]
fn up(
    who: &str,
    rx: &Ring,
    app_room_bell: &Doorbell,
    our_msgs: &Doorbell,
    sock: &PeerFd,
    stream: &Stream,
    fast: &Arc<Fast>,
    row: &doca_core::status::Entry,
) {
    let mut packet = [0u8; PACKET];
    loop {
        if !forward(who, rx, app_room_bell, stream, row) || rx.is_corrupt() {
            return;
        }
        if rx.is_closed() {
            // Closed after its last publish: one more look sends what came in between.
            forward(who, rx, app_room_bell, stream, row);
            return;
        }
        if rx.arm_for_data() {
            rx.disarm_data();
            continue;
        }
        // The stream's end is seen by the down thread, which then shuts the local socket
        // down: that wakes this poll too.
        let mut fds = [PollFd::new(our_msgs, PollFlags::IN), PollFd::new(sock, PollFlags::IN)];
        let woke = rustix::event::poll(&mut fds, None);
        rx.disarm_data();
        if woke.is_err() {
            continue;
        }
        if !fds[0].revents().is_empty() {
            our_msgs.drain();
        }
        if fds[1].revents().is_empty() {
            continue;
        }
        match recv(sock.as_fd(), &mut packet) {
            Ok(Recv::Empty) => {}
            // The application closed its socket: what it published before goes first.
            Ok(Recv::Closed) | Err(_) => {
                forward(who, rx, app_room_bell, stream, row);
                return;
            }
            Ok(Recv::Packet { len, truncated: false, fds }) => match Ctrl::decode(&packet[..len]) {
                Ok(ctrl) => {
                    if fast.from_app(ctrl, fds).is_err() {
                        return;
                    }
                }
                Err(_) => {
                    tracing::warn!(target: "doca_sdk", "{who}: malformed control packet from the local peer");
                    return;
                }
            },
            Ok(Recv::Packet { .. }) => {
                tracing::warn!(target: "doca_sdk", "{who}: oversized control packet from the local peer");
                return;
            }
        }
    }
}

/// Sends what the application published; false when the stream or the ring broke.
fn forward(
    who: &str,
    rx: &Ring,
    app_room_bell: &Doorbell,
    stream: &Stream,
    row: &doca_core::status::Entry,
) -> bool {
    let mut sent = 0u32;
    while let Some(slot) = rx.peek() {
        let kind = slot.kind();
        let Some(bytes) = slot.bytes() else {
            tracing::warn!(target: "doca_sdk", "{who}: the local peer broke its ring");
            return false;
        };
        if stream.send_parts(&[&[MSG], &kind.to_le_bytes(), bytes]).is_err() {
            return false;
        }
        row.sent(bytes.len());
        slot.consume();
        sent += 1;
        // Free the application's room as we go on a long batch: it may sleep on it.
        if sent % 32 == 0 && rx.peer_needs_wakeup() {
            app_room_bell.ring();
        }
    }
    if rx.peer_needs_wakeup() {
        app_room_bell.ring();
    }
    true
}

/// Stream → local application, until the stream ends or the application is gone.
#[allow(clippy::too_many_arguments)]
fn down(
    who: &str,
    tx: Ring,
    app_bell: Doorbell,
    our_room: Doorbell,
    sock: &PeerFd,
    stream: &Stream,
    fast: &Arc<Fast>,
    row: &doca_core::status::Entry,
) {
    let mut msg = Vec::new();
    'stream: while let Ok(true) = stream.recv(&mut msg) {
        match msg.split_first() {
            Some((&MSG, rest)) if rest.len() >= 4 => {
                let kind = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
                let payload = &rest[4..];
                loop {
                    match tx.push_with(kind, payload.len(), |b| b.copy_from_slice(payload)) {
                        Ok(true) => {
                            row.received(payload.len());
                            break;
                        }
                        Ok(false) => {
                            // Full: wake the application if it sleeps, then sleep until it
                            // makes room (or leaves).
                            if tx.peer_needs_wakeup() {
                                app_bell.ring();
                            }
                            if tx.is_closed() || tx.is_corrupt() {
                                break 'stream;
                            }
                            if tx.arm_for_room() {
                                tx.disarm_room();
                                continue;
                            }
                            let mut fds =
                                [PollFd::new(&our_room, PollFlags::IN), PollFd::new(sock, PollFlags::RDHUP)];
                            let _ = rustix::event::poll(&mut fds, None);
                            tx.disarm_room();
                            our_room.drain();
                            if !fds[1].revents().is_empty() {
                                break 'stream;
                            }
                        }
                        Err(_) => {
                            tracing::warn!(
                                target: "doca_sdk",
                                "{who}: a message of {} bytes from {} does not fit the connection",
                                payload.len(),
                                stream.peer()
                            );
                            break 'stream;
                        }
                    }
                }
                // Wake a sleeping application once nothing more is at hand.
                if !stream.has_buffered() && tx.peer_needs_wakeup() {
                    app_bell.ring();
                }
            }
            Some((&CTRL, rest)) => {
                if fast.from_stream(rest).is_err() {
                    break;
                }
            }
            _ => {
                tracing::warn!(target: "doca_sdk", "{who}: malformed message from {}", stream.peer());
                break;
            }
        }
    }
    tracing::debug!(target: "doca_sdk", "{who}: the stream ended");
    tx.close();
    if tx.peer_needs_wakeup() {
        app_bell.ring();
    }
    stream.shutdown();
    doca_link::exchange::hang_up(sock.as_fd());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::PeerKind;

    fn hello() -> Hello {
        Hello {
            kind: PeerKind::Client,
            max_msg_size: 4080,
            recv_queue_size: 10,
            function: PciAddr::parse("b1:00.0").unwrap(),
            name: "svc".into(),
        }
    }

    #[test]
    fn a_request_names_the_namespace_the_function_and_the_hello() {
        let mut r = encode_request("cc", PciAddr::parse("b1:00.0").unwrap());
        r.extend_from_slice(&hello().encode());
        let (ns, pci, h) = decode_request(&r).expect("well formed");
        assert_eq!((ns.as_str(), pci, h), ("cc", PciAddr::parse("b1:00.0").unwrap(), hello()));
    }

    /// What an authenticated but broken peer may send is refused, never a panic: cut at every
    /// length, a namespace that is no name (it becomes part of a file name), a bad function.
    #[test]
    fn malformed_requests_are_refused() {
        let mut r = encode_request("cc", PciAddr::parse("b1:00.0").unwrap());
        r.extend_from_slice(&hello().encode());
        for cut in 0..r.len() {
            assert!(decode_request(&r[..cut]).is_none(), "cut at {cut}");
        }
        for ns in ["", "../x", "CC", "c c"] {
            let mut bad = encode_request(ns, PciAddr::parse("b1:00.0").unwrap());
            bad.extend_from_slice(&hello().encode());
            assert!(decode_request(&bad).is_none(), "namespace {ns:?}");
        }
        let mut bad = vec![2, b'c', b'c', 3, b'x', b'y', b'z'];
        bad.extend_from_slice(&hello().encode());
        assert!(decode_request(&bad).is_none(), "no PCI address");
        let mut long = vec![255u8];
        long.extend_from_slice(&[b'a'; 10]);
        assert!(decode_request(&long).is_none(), "a length beyond the request");
    }

    #[test]
    fn without_a_link_a_dial_falls_through_to_the_local_answer() {
        // No link configured in the unit tests' process: the client sees "no server".
        if remote::config().is_none() {
            assert!(dial("cc", PciAddr::parse("b1:00.0").unwrap(), "nobody").unwrap().is_none());
        }
    }
}
