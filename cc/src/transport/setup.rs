//! Connection setup: the I/O around [`crate::proto::handshake`], one path for the four kinds
//! of ends (2024 server and client, legacy service and client). [`super::accept::Acceptor`]
//! runs the server half for a listening socket, [`super::dial::Dialing`] the client half.
//!
//! A server reads the client's Hello with [`serve`]: the handshake decides, then the shared
//! segment is created, its two rings laid out, and the reply sent with the segment and the
//! ends of the server's new doorbells for this client ([`Bells`]). A client sends its Hello
//! with [`send_hello`] (with the ends of its own [`Bells`]) and reads the answer with
//! [`answer`]. Both end with a [`Channel`]; the caller keeps the socket, whose end of file
//! tells that the peer is gone, and its ends of the doorbells, which only that peer can ring.

use doca_link::discard::PeerFd;
use std::fmt::Display;
use std::os::fd::{AsFd, BorrowedFd};

use doca_core::{Error, Result};
use doca_link::notify::Doorbell;

use super::channel::Channel;
use super::ring::{Area, End, Ring};
use crate::proto::handshake::{self, Accepted, Limits, Occupancy, Refusal, SegmentLayout};
use crate::proto::{Hello, Reply};
use doca_link::{recv, send, Recv};

/// Largest handshake packet read (a Hello with a name of the longest allowed length fits).
const PACKET: usize = 512;

/// What reading a client's handshake gave.
pub enum Served {
    /// Nothing yet: look again when the socket is readable.
    Waiting,
    /// The client left before its handshake completed — before its Hello, or before this
    /// side's answer reached it (its socket closed: `EPIPE`/`ECONNRESET` on the answer).
    /// Nobody is left to act on a refusal: logged at debug level, never reported as a failed
    /// connection.
    Gone,
    /// Refused (the answer, if any, sent; the caller logs `why`).
    Refused(Refusal),
    /// Accepted: the connection is up on this side; this side's doorbells for it.
    Up(Box<(Channel, Accepted, Bells)>),
}

/// The doorbells one side makes for one connection: Unix datagram socket pairs without an
/// address. This side keeps one end of each and watches it; the other ends go to the peer in
/// the handshake (messages; room), so that peer alone can ring them — nobody else can find
/// or reach them, and what the peer does to its ends touches this connection only.
pub struct Bells {
    /// Rung by the peer when it sent messages (and, without [`Bells::room`], when it made
    /// room).
    pub messages: Doorbell,
    /// Rung by the peer when it made room in the ring this side writes, for a side that
    /// sleeps on that apart (the legacy endpoint's send event channel).
    pub room: Option<Doorbell>,
    /// The peer's ends (messages; room: the same socket for [`Bells::one`]), closed on a
    /// closing thread (the peer holds them too, and could bind one and have files sent
    /// to it).
    theirs: (PeerFd, Option<PeerFd>),
}

impl Bells {
    /// One doorbell that the peer rings for both messages and room (a 2024 server or
    /// client: its engine sleeps on one set).
    pub fn one() -> Result<Bells> {
        let (messages, theirs) = Doorbell::pair()?;
        Ok(Bells { messages, room: None, theirs: (theirs, None) })
    }

    /// Two doorbells, for messages and for room (a legacy endpoint: two event channels).
    pub fn two() -> Result<Bells> {
        let (messages, theirs) = Doorbell::pair()?;
        let (room, theirs_room) = Doorbell::pair()?;
        Ok(Bells { messages, room: Some(room), theirs: (theirs, Some(theirs_room)) })
    }

    /// The ends to hand the peer (messages; room).
    pub fn theirs(&self) -> [BorrowedFd<'_>; 2] {
        let messages = self.theirs.0.as_fd();
        [messages, self.theirs.1.as_ref().map_or(messages, |r| r.as_fd())]
    }

    /// This side's ends (messages; room), once the peer's were handed over: this process's
    /// copies of those close.
    pub fn keep(self) -> (Doorbell, Option<Doorbell>) {
        (self.messages, self.room)
    }
}

/// Server side: reads the Hello waiting on `sock` (from process `pid`), decides with
/// `limits` while `live` connections exist (of them, `live.of_peer` of process `pid`), and
/// on acceptance creates connection `id`, giving the client the ends of this side's new
/// doorbells for it, made by `bells` (each connection its own pairs).
pub fn serve(
    who: &dyn Display,
    sock: BorrowedFd<'_>,
    pid: i32,
    limits: &Limits,
    live: Occupancy,
    id: u64,
    bells: MakeBells<'_>,
) -> Served {
    let mut buf = [0u8; PACKET];
    let (len, truncated, fds) = match recv(sock, &mut buf) {
        Ok(Recv::Empty) => return Served::Waiting,
        Ok(Recv::Closed) | Err(_) => {
            tracing::debug!(target: "doca_sdk", "{who}: pid {pid} left before its handshake");
            return Served::Gone;
        }
        Ok(Recv::Packet { len, truncated, fds }) => (len, truncated, fds),
    };
    serve_hello(who, sock, pid, (&buf[..len], truncated, fds), limits, live, id, bells)
}

/// [`serve`] for a Hello already read from `sock` (the packet, whether it was truncated,
/// the descriptors it carried): a link stand-in reads the Hello first, asks the real server
/// across the link, then answers with the real server's limits.
#[allow(clippy::too_many_arguments)]
pub fn serve_hello(
    who: &dyn Display,
    sock: BorrowedFd<'_>,
    pid: i32,
    (packet, truncated, fds): (&[u8], bool, Vec<PeerFd>),
    limits: &Limits,
    live: Occupancy,
    id: u64,
    bells: MakeBells<'_>,
) -> Served {
    let refused = |r: Refusal| {
        if r.answer {
            let _ = send(sock, &Reply::refuse(r.code).encode(), &[]);
        }
        Served::Refused(r)
    };
    let accepted = match handshake::accept(packet, truncated, fds.len(), limits, live) {
        Ok(a) => a,
        Err(r) => return refused(r),
    };
    let (peer_bell, peer_room_bell) = match peer_bells(fds) {
        Ok(bells) => bells,
        Err(e) => {
            return refused(Refusal { code: e, answer: false, report: false, why: format!("doorbells: {e}") })
        }
    };
    let fail = |code: Error, why: String| refused(Refusal { code, answer: true, report: true, why });
    let (rx, tx, area) = match map_new(&accepted.layout) {
        Ok(parts) => parts,
        Err(e) => return fail(e, format!("cannot create the connection's shared memory: {e}")),
    };
    let reply = accepted.layout.reply(id, accepted.max_msg_size);
    let bells = match bells() {
        Ok(bells) => bells,
        Err(e) => {
            return refused(Refusal { code: e, answer: false, report: true, why: format!("doorbells: {e}") })
        }
    };
    let [bell, room] = bells.theirs();
    match send(sock, &reply.encode(), &[area.as_fd(), bell, room]) {
        Ok(()) => {}
        // The client closed its socket after its Hello (it gave up and may be trying again
        // on a new one): not a connection the server failed.
        Err(doca_link::Error::ConnectionReset) => {
            tracing::debug!(target: "doca_sdk", "{who}: pid {pid} left before the answer to its handshake");
            return Served::Gone;
        }
        Err(e) => return fail(e.into(), format!("cannot answer the handshake: {e}")),
    }
    Served::Up(Box::new((Channel::new(tx, rx, peer_bell, peer_room_bell), accepted, bells)))
}

/// Creates a segment with `layout` and attaches the server's ends: (client → server ring to
/// read, server → client ring to write, the segment).
fn map_new(layout: &SegmentLayout) -> Result<(Ring, Ring, std::sync::Arc<Area>)> {
    let area = Area::create("doca-cc-conn", layout.len)?;
    let (c2s, s2c) = (layout.c2s, layout.s2c);
    Ring::init(&area, c2s.offset, c2s.nslots, c2s.payload)?;
    Ring::init(&area, s2c.offset, s2c.nslots, s2c.payload)?;
    let rx = Ring::attach(&area, c2s.offset, c2s.nslots, c2s.payload, End::Consumer)?;
    let tx = Ring::attach(&area, s2c.offset, s2c.nslots, s2c.payload, End::Producer)?;
    Ok((rx, tx, area))
}

/// Makes this side's doorbells for one new connection.
pub type MakeBells<'a> = &'a dyn Fn() -> Result<Bells>;

/// Client side: sends `hello` on a connected socket with the peer's ends of this side's
/// doorbells (messages; room: [`Bells::theirs`]).
pub fn send_hello(sock: BorrowedFd<'_>, hello: &Hello, bells: [BorrowedFd<'_>; 2]) -> Result<()> {
    Ok(send(sock, &hello.encode(), &bells)?)
}

/// What reading the server's answer gave.
pub enum Answer {
    /// Nothing yet.
    Waiting,
    /// The server closed the socket without answering.
    Lost,
    /// The server said no with this code (or speaks another protocol version:
    /// `UNSUPPORTED_VERSION`).
    Refused(Error),
    /// The answer was malformed or its memory or doorbells were refused: the code, and why.
    Broken(Error, String),
    /// Accepted: the connection is up.
    Up(Box<(Channel, Reply)>),
}

/// Client side: reads the answer to `hello` waiting on `sock`.
pub fn answer(sock: BorrowedFd<'_>, hello: &Hello) -> Answer {
    let mut buf = [0u8; PACKET];
    let (len, truncated, fds) = match recv(sock, &mut buf) {
        Ok(Recv::Empty) => return Answer::Waiting,
        Ok(Recv::Closed) | Err(_) => return Answer::Lost,
        Ok(Recv::Packet { len, truncated, fds }) => (len, truncated, fds),
    };
    let (reply, layout) = match handshake::check_reply(&buf[..len], truncated, fds.len(), hello) {
        Ok(r) => r,
        Err(e @ Error::InvalidValue) if !is_refusal(&buf[..len]) => {
            return Answer::Broken(
                e,
                format!("malformed answer to the handshake ({len} bytes, {} fds)", fds.len()),
            );
        }
        Err(e) => return Answer::Refused(e),
    };
    let mut fds = fds.into_iter();
    let seg = fds.next().expect("check_reply counted three descriptors");
    match map_received(seg, &layout).and_then(|rings| Ok((rings, peer_bells(fds.collect())?))) {
        Ok(((tx, rx), (peer_bell, peer_room_bell))) => {
            Answer::Up(Box::new((Channel::new(tx, rx, peer_bell, peer_room_bell), reply)))
        }
        Err(e) => Answer::Broken(e, format!("the server's rings or doorbells are unusable ({})", e.name())),
    }
}

/// The peer's two doorbells (messages; room): Unix datagram sockets, rung without ever
/// blocking (`INVALID_VALUE` for anything else).
fn peer_bells(fds: Vec<PeerFd>) -> Result<(Doorbell, Doorbell)> {
    let [bell, room]: [PeerFd; 2] = fds.try_into().map_err(|_| Error::InvalidValue)?;
    Ok((Doorbell::from_peer(bell)?, Doorbell::from_peer(room)?))
}

/// Whether `packet` is a well-formed refusal (an `INVALID_VALUE` the server chose, not a
/// malformed answer).
fn is_refusal(packet: &[u8]) -> bool {
    Reply::decode(packet).is_ok_and(|r| r.status != 0)
}

/// Maps the segment a server sent and attaches the client's ends: (client → server ring to
/// write, server → client ring to read).
fn map_received(seg: PeerFd, layout: &SegmentLayout) -> Result<(Ring, Ring)> {
    let area = Area::open(seg, layout.len)?;
    let (c2s, s2c) = (layout.c2s, layout.s2c);
    let tx = Ring::attach(&area, c2s.offset, c2s.nslots, c2s.payload, End::Producer)?;
    let rx = Ring::attach(&area, s2c.offset, s2c.nslots, s2c.payload, End::Consumer)?;
    Ok((tx, rx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::PeerKind;
    use doca_core::PciAddr;
    use doca_link::socketpair;

    fn limits() -> Limits {
        Limits {
            kind: PeerKind::Client,
            name: "svc".into(),
            function: PciAddr::parse("b1:00.0").unwrap(),
            max_msg_size: 128,
            recv_queue_size: 4,
            max_recv_queue: 64,
            max_connections: 8,
            max_connections_per_peer: 8,
        }
    }

    fn hello() -> Hello {
        Hello {
            kind: PeerKind::Client,
            max_msg_size: 128,
            recv_queue_size: 2,
            function: PciAddr::parse("b1:00.0").unwrap(),
            name: "svc".into(),
        }
    }

    /// Both halves of the handshake over a socketpair, without the fabric directory.
    #[test]
    fn a_handshake_over_a_socketpair_gives_two_ends_of_one_channel() {
        let (client_sock, server_sock) = socketpair().unwrap();
        let cb = Bells::one().unwrap();
        let h = hello();
        assert!(matches!(answer(client_sock.as_fd(), &h), Answer::Waiting));
        send_hello(client_sock.as_fd(), &h, cb.theirs()).unwrap();
        let (cb, _) = cb.keep();
        let served =
            serve(&"server", server_sock.as_fd(), 1, &limits(), Occupancy::default(), 42, &Bells::one);
        let Served::Up(up) = served else { panic!("refused") };
        let (server, accepted, sb) = *up;
        let (sb, _) = sb.keep();
        assert_eq!(accepted.layout.s2c.nslots, 2);
        let Answer::Up(up) = answer(client_sock.as_fd(), &h) else { panic!("no answer") };
        let (client, reply) = *up;
        assert_eq!(reply.conn_id, 42);

        assert!(client.send(1, 5, |b| b.copy_from_slice(b"hello")).unwrap());
        let slot = server.recv().expect("the message crossed");
        assert_eq!(slot.bytes(), Some(&b"hello"[..]));
        slot.consume();
        for i in 0..2u8 {
            assert!(server.send(1, 1, |b| b[0] = i).unwrap());
        }
        assert!(!server.send(1, 1, |_| {}).unwrap(), "the client's queue of 2 is full");
        assert!(client.arm_for_data(), "messages wait: do not sleep");
        server.wake_peer();
        assert!(cb.drain(), "the armed client's doorbell was rung");
        assert!(!server.arm_for_data(), "nothing waits for the server: it may sleep");
        assert!(client.send(1, 1, |b| b[0] = 9).unwrap());
        client.wake_peer();
        assert!(sb.drain(), "the armed server's doorbell was rung, through the end it handed over");
        client.hang_up();
        assert!(server.peer_hung_up());
    }

    /// A hostile server answers with a segment it could truncate later (turning the client's
    /// next access into SIGBUS): the client refuses it before mapping anything.
    #[test]
    fn a_segment_that_is_not_sealed_against_resizing_is_refused() {
        let (client_sock, server_sock) = socketpair().unwrap();
        let (_bell, ring) = Doorbell::pair().unwrap();
        let h = hello();
        send_hello(client_sock.as_fd(), &h, [ring.as_fd(), ring.as_fd()]).unwrap();
        let accepted = handshake::accept(&h.encode(), false, 2, &limits(), Occupancy::default()).unwrap();
        let unsealed = rustix::fs::memfd_create("hostile", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&unsealed, accepted.layout.len as u64).unwrap();
        let reply = accepted.layout.reply(1, accepted.max_msg_size).encode();
        send(server_sock.as_fd(), &reply, &[unsealed.as_fd(), ring.as_fd(), ring.as_fd()]).unwrap();
        assert!(matches!(answer(client_sock.as_fd(), &h), Answer::Broken(Error::InvalidValue, _)));
    }

    /// Doorbells that are not Unix sockets (here a pipe, which could block the side ringing
    /// it) are refused at the handshake, on both sides.
    #[test]
    fn doorbells_that_are_not_unix_sockets_are_refused() {
        let (client_sock, server_sock) = socketpair().unwrap();
        let (_r, pipe) = rustix::pipe::pipe().unwrap();
        let h = hello();
        send_hello(client_sock.as_fd(), &h, [pipe.as_fd(), pipe.as_fd()]).unwrap();
        let served =
            serve(&"server", server_sock.as_fd(), 1, &limits(), Occupancy::default(), 1, &Bells::one);
        assert!(matches!(served, Served::Refused(Refusal { code: Error::InvalidValue, answer: false, .. })));

        // A stream socket: its end would read end of file for ever once the peer shut its
        // own down.
        let (stream, _other) = socketpair().unwrap();
        let (client_sock, server_sock) = socketpair().unwrap();
        let bells = Bells::one().unwrap();
        send_hello(client_sock.as_fd(), &h, [bells.theirs()[0], stream.as_fd()]).unwrap();
        let served =
            serve(&"server", server_sock.as_fd(), 1, &limits(), Occupancy::default(), 1, &Bells::one);
        assert!(matches!(served, Served::Refused(Refusal { code: Error::InvalidValue, answer: false, .. })));

        // This test's server hands over a pipe.
        let (client_sock, server_sock) = socketpair().unwrap();
        send_hello(client_sock.as_fd(), &h, bells.theirs()).unwrap();
        let accepted = handshake::accept(&h.encode(), false, 2, &limits(), Occupancy::default()).unwrap();
        let (_, _, area) = map_new(&accepted.layout).unwrap();
        let reply = accepted.layout.reply(1, accepted.max_msg_size).encode();
        send(server_sock.as_fd(), &reply, &[area.as_fd(), pipe.as_fd(), bells.theirs()[0]]).unwrap();
        assert!(matches!(answer(client_sock.as_fd(), &h), Answer::Broken(Error::InvalidValue, _)));
    }

    #[test]
    fn a_refused_client_reads_the_code_and_a_vanished_server_is_lost() {
        let (client_sock, server_sock) = socketpair().unwrap();
        let bells = Bells::one().unwrap();
        let h = Hello { max_msg_size: 64, ..hello() };
        send_hello(client_sock.as_fd(), &h, bells.theirs()).unwrap();
        let served =
            serve(&"server", server_sock.as_fd(), 1, &limits(), Occupancy::default(), 1, &Bells::one);
        assert!(matches!(served, Served::Refused(Refusal { code: Error::InvalidValue, report: true, .. })));
        assert!(matches!(answer(client_sock.as_fd(), &h), Answer::Refused(Error::InvalidValue)));
        drop(server_sock);
        assert!(matches!(answer(client_sock.as_fd(), &h), Answer::Lost));
    }
}
