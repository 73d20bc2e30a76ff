//! The handshake's decisions, as pure functions: what a server (2024 `doca_cc` server or
//! legacy service) answers to a client's [`Hello`], how the shared segment of an accepted
//! connection is laid out, and what a client accepts as the answer. The I/O around them
//! (sockets, memfds, doorbells) is `transport::setup`; all four setup paths (server, client,
//! legacy service, legacy client) go through these functions.
//!
//! ```text
//! client                                   server
//!   Hello{kind, sizes, function, name} ──▶ accept(hello, limits, live)
//!                                            ├─ Refusal{code, answer, report}  ──▶ Reply{status ≠ 0} or silence
//!                                            └─ Accepted{layout}               ──▶ Reply{layout} + segment + doorbells
//!   check_reply(reply, hello) ◀────────────
//! ```
//!
//! Every number a peer sends is checked here before anything is sized from it.

use std::time::Duration;

use doca_core::{Error, PciAddr, Result};

use super::layout;
use super::wire::{Hello, PeerKind, Reply};

/// How long an accepted socket may take to send its [`Hello`] before the server drops it.
pub const HELLO_DEADLINE: Duration = Duration::from_secs(5);
/// How long a 2024 client waits for the server's [`Reply`] before it starts over. Long: a
/// server that is alive but slow (a loaded machine, many clients at once) answers the socket
/// it has, and starting over would only add a second handshake — and, were the first answer
/// to land after the client gave up, show the server a connection that ends at once. A
/// server that goes away closes the socket, which the client sees at once.
pub const REPLY_DEADLINE: Duration = Duration::from_secs(30);
/// How long a legacy client's connection may stay `CONNECTION_INPROGRESS` before it is
/// reported `CONNECTION_ABORTED`.
pub const LEGACY_REPLY_DEADLINE: Duration = Duration::from_secs(10);
/// First pause of a 2024 client retrying a server that is not there yet; it doubles up to
/// [`MAX_RETRY`].
pub const FIRST_RETRY: Duration = Duration::from_millis(1);
/// Longest pause between two connection attempts of a 2024 client.
pub const MAX_RETRY: Duration = Duration::from_millis(50);
/// Handshakes one server or service has in progress at once (accepted sockets that have not
/// sent their [`Hello`] yet). Beyond it, new sockets are closed at once: a local process
/// cannot pin the server's memory or descriptors by connecting and saying nothing.
pub const MAX_HANDSHAKES: usize = 64;
/// Handshakes in progress one peer process may have on one server at once: a process that
/// opens silent sockets in a loop holds at most this many of the [`MAX_HANDSHAKES`] places.
/// Beyond it, its new sockets are answered "busy" ([`BUSY`]) and closed.
pub const MAX_HANDSHAKES_PER_PEER: usize = 16;
/// The code of a "busy, try again" answer: the server's handshake places are taken (a
/// client retries within its deadline).
pub const BUSY: Error = Error::Again;
/// Largest receive queue a peer may ask for (bounds what a [`Reply`] or [`Hello`] can make
/// the other side map, whatever the topology says).
pub const MAX_QUEUE: u32 = 1 << 16;

/// The next pause of a retrying client: double, at most [`MAX_RETRY`].
pub fn next_backoff(backoff: Duration) -> Duration {
    (backoff * 2).min(MAX_RETRY)
}

/// What a server or service accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The kind of client it serves (a 2024 server refuses legacy endpoints and back).
    pub kind: PeerKind,
    /// Its service name.
    pub name: String,
    /// The host function its representor stands for: clients on other functions are refused.
    pub function: PciAddr,
    /// Its maximum message size: a client (2024 or legacy) must ask for exactly this size.
    pub max_msg_size: u32,
    /// Its receive queue (the client → server ring).
    pub recv_queue_size: u32,
    /// Largest receive queue a client may ask for.
    pub max_recv_queue: u32,
    /// Connections it holds at most.
    pub max_connections: u32,
    /// Connections one client process may hold at most (one process must not take every
    /// place).
    pub max_connections_per_peer: u32,
}

/// The connections a server holds while it decides on a handshake.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Occupancy {
    /// All of them.
    pub total: usize,
    /// Those of the process asking.
    pub of_peer: usize,
}

/// One ring of a connection segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingGeom {
    /// Byte offset in the segment.
    pub offset: usize,
    /// Slots (messages it holds).
    pub nslots: u32,
    /// Largest payload of a slot, in bytes.
    pub payload: usize,
}

/// The layout of a connection's shared segment: the client → server ring, then the
/// server → client ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentLayout {
    /// Segment size in bytes.
    pub len: usize,
    /// Client → server ring (sized by the server's receive queue).
    pub c2s: RingGeom,
    /// Server → client ring (sized by the client's receive queue).
    pub s2c: RingGeom,
}

impl SegmentLayout {
    /// The layout for the given queues and slot payload; `INVALID_VALUE` for empty or
    /// oversized queues (above [`MAX_QUEUE`]) or a size that does not fit in memory.
    pub fn new(server_queue: u32, client_queue: u32, payload: usize) -> Result<SegmentLayout> {
        let ok = |q: u32| (1..=MAX_QUEUE).contains(&q);
        if !ok(server_queue) || !ok(client_queue) || payload > u32::MAX as usize {
            return Err(Error::InvalidValue);
        }
        let c2s_len = layout::ring_bytes_checked(server_queue, payload).ok_or(Error::InvalidValue)?;
        let s2c_len = layout::ring_bytes_checked(client_queue, payload).ok_or(Error::InvalidValue)?;
        Ok(SegmentLayout {
            len: c2s_len.checked_add(s2c_len).ok_or(Error::InvalidValue)?,
            c2s: RingGeom { offset: 0, nslots: server_queue, payload },
            s2c: RingGeom { offset: c2s_len, nslots: client_queue, payload },
        })
    }

    /// The acceptance a server sends for this layout.
    pub fn reply(&self, conn_id: u64, max_msg_size: u32) -> Reply {
        Reply {
            status: 0,
            conn_id,
            server_recv_queue: self.c2s.nslots,
            max_msg_size,
            segment_len: self.len as u64,
            c2s_offset: self.c2s.offset as u64,
            s2c_offset: self.s2c.offset as u64,
        }
    }
}

/// A server's yes: how to lay out the connection, and the message size agreed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The client's request.
    pub hello: Hello,
    /// The agreed maximum message size (what the application may send).
    pub max_msg_size: u32,
    /// The segment to create.
    pub layout: SegmentLayout,
}

/// A server's no.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The DOCA code of the refusal.
    pub code: Error,
    /// Whether the client gets a [`Reply`] carrying the code (else its socket is just closed:
    /// garbage, truncated or fd-less handshakes get no answer).
    pub answer: bool,
    /// Whether the server reports it as an unsuccessful connection (the connection callback
    /// with `false`): a real client with settings it can fix. Garbage is only logged.
    pub report: bool,
    /// Why, for the one log line.
    pub why: String,
}

impl Refusal {
    fn drop(code: Error, why: String) -> Refusal {
        Refusal { code, answer: false, report: false, why }
    }

    fn answer(code: Error, why: String) -> Refusal {
        Refusal { code, answer: true, report: false, why }
    }

    fn report(code: Error, why: String) -> Refusal {
        Refusal { code, answer: true, report: true, why }
    }
}

/// The server's decision on one handshake packet: `packet` as received (`truncated` when it
/// was longer than the buffer), with `nfds` descriptors attached, while the server holds
/// `live` connections (of them, `live.of_peer` of the asking process).
pub fn accept(
    packet: &[u8],
    truncated: bool,
    nfds: usize,
    limits: &Limits,
    live: Occupancy,
) -> std::result::Result<Accepted, Refusal> {
    if truncated {
        return Err(Refusal::drop(Error::InvalidValue, "oversized handshake".into()));
    }
    let hello = match Hello::decode(packet) {
        Ok(h) => h,
        Err(Error::UnsupportedVersion) => {
            return Err(Refusal::answer(
                Error::UnsupportedVersion,
                format!(
                    "protocol version {:?}, this side speaks {}",
                    super::wire::version_of(packet).ok(),
                    super::wire::VERSION
                ),
            ))
        }
        Err(_) => {
            return Err(Refusal::drop(
                Error::InvalidValue,
                format!("malformed handshake ({} bytes)", packet.len()),
            ))
        }
    };
    if nfds != 2 {
        return Err(Refusal::drop(
            Error::InvalidValue,
            format!("handshake with {nfds} descriptors instead of its two doorbells"),
        ));
    }
    if hello.kind != limits.kind {
        return Err(Refusal::answer(Error::NotSupported, format!("a {:?} handshake", hello.kind)));
    }
    if hello.name != limits.name {
        return Err(Refusal::answer(Error::NotFound, format!("asks for service {:?}", hello.name)));
    }
    if hello.function != limits.function {
        return Err(Refusal::answer(
            Error::NotPermitted,
            format!("client on {} but this server serves {}", hello.function, limits.function),
        ));
    }
    if live.total >= limits.max_connections as usize {
        return Err(Refusal::report(
            Error::Full,
            format!("the server already has its maximum of {} clients", limits.max_connections),
        ));
    }
    if live.of_peer >= limits.max_connections_per_peer as usize {
        return Err(Refusal::report(
            Error::Full,
            format!(
                "that process already holds {} of this server's clients, the most one process may",
                live.of_peer
            ),
        ));
    }
    let q = hello.recv_queue_size;
    if q == 0 || q > limits.max_recv_queue.min(MAX_QUEUE) {
        return Err(Refusal::report(
            Error::InvalidValue,
            format!("client receive queue size {q} outside 1..={}", limits.max_recv_queue.min(MAX_QUEUE)),
        ));
    }
    // Both kinds must agree on the message size, as DOCA's libraries require (a 2024 client
    // and its server, a legacy endpoint and its service: "MTU mismatch", the connection is
    // dropped).
    if hello.max_msg_size != limits.max_msg_size {
        return Err(Refusal::report(
            Error::InvalidValue,
            format!(
                "max message size {} does not match the {}'s {}",
                hello.max_msg_size,
                if limits.kind == PeerKind::Client { "server" } else { "service" },
                limits.max_msg_size
            ),
        ));
    }
    let max_msg_size = limits.max_msg_size;
    let payload = max_msg_size as usize + limits.kind.msg_overhead();
    match SegmentLayout::new(limits.recv_queue_size, q, payload) {
        Ok(layout) => Ok(Accepted { hello, max_msg_size, layout }),
        Err(e) => {
            Err(Refusal::report(e, format!("no segment for queues {} and {q}", limits.recv_queue_size)))
        }
    }
}

/// The client's check of the server's answer to `hello`: the layout to map, or the code to
/// report (the server's refusal code; `UNSUPPORTED_VERSION`; `INVALID_VALUE` for a reply that
/// is malformed, lacks its three descriptors or describes another layout than the one the
/// two sides' settings give).
pub fn check_reply(
    packet: &[u8],
    truncated: bool,
    nfds: usize,
    hello: &Hello,
) -> Result<(Reply, SegmentLayout)> {
    if truncated {
        return Err(Error::InvalidValue);
    }
    let reply = Reply::decode(packet)?;
    if reply.status != 0 {
        return Err(Error::from_code(reply.status).unwrap_or(Error::Unknown));
    }
    if nfds != 3 {
        return Err(Error::InvalidValue);
    }
    if reply.max_msg_size != hello.max_msg_size {
        return Err(Error::InvalidValue);
    }
    let payload = reply.max_msg_size as usize + hello.kind.msg_overhead();
    let layout = SegmentLayout::new(reply.server_recv_queue, hello.recv_queue_size, payload)?;
    let same = layout.len as u64 == reply.segment_len
        && layout.c2s.offset as u64 == reply.c2s_offset
        && layout.s2c.offset as u64 == reply.s2c_offset;
    if !same {
        return Err(Error::InvalidValue);
    }
    Ok((reply, layout))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pci(s: &str) -> PciAddr {
        PciAddr::parse(s).unwrap()
    }

    fn limits(kind: PeerKind) -> Limits {
        Limits {
            kind,
            name: "svc".into(),
            function: pci("b1:00.0"),
            max_msg_size: 4080,
            recv_queue_size: 64,
            max_recv_queue: 8192,
            max_connections: 2,
            max_connections_per_peer: 1,
        }
    }

    fn hello(kind: PeerKind) -> Hello {
        Hello { kind, max_msg_size: 4080, recv_queue_size: 16, function: pci("b1:00.0"), name: "svc".into() }
    }

    fn refusal(packet: &[u8], nfds: usize, l: &Limits, live: Occupancy) -> Refusal {
        accept(packet, false, nfds, l, live).unwrap_err()
    }

    #[test]
    fn an_accepted_hello_and_its_reply_agree_on_the_layout() {
        let l = limits(PeerKind::Client);
        let h = hello(PeerKind::Client);
        let a = accept(&h.encode(), false, 2, &l, Occupancy::default()).unwrap();
        assert_eq!((a.layout.c2s.nslots, a.layout.s2c.nslots, a.max_msg_size), (64, 16, 4080));
        let reply = a.layout.reply(7, a.max_msg_size);
        let (r, layout) = check_reply(&reply.encode(), false, 3, &h).unwrap();
        assert_eq!((r.conn_id, layout), (7, a.layout));
    }

    #[test]
    fn garbage_truncated_and_fd_less_handshakes_are_dropped_without_an_answer() {
        let l = limits(PeerKind::Client);
        let good = hello(PeerKind::Client).encode();
        for (packet, nfds) in
            [(&b"garbage"[..], 2), (&good[..good.len() - 1], 2), (&good[..], 0), (&good[..], 1)]
        {
            let r = refusal(packet, nfds, &l, Occupancy::default());
            assert!(!r.answer && !r.report, "{r:?}");
        }
        assert!(!accept(&good, true, 2, &l, Occupancy::default()).unwrap_err().answer, "oversized");
    }

    #[test]
    fn another_protocol_version_is_answered_with_unsupported_version() {
        let mut packet = hello(PeerKind::Client).encode();
        packet[8] = 99;
        let r = refusal(&packet, 2, &limits(PeerKind::Client), Occupancy::default());
        assert_eq!((r.code, r.answer, r.report), (Error::UnsupportedVersion, true, false));
        assert!(r.why.contains("protocol version Some(99)"), "{}", r.why);
    }

    #[test]
    fn a_client_of_another_kind_name_or_host_function_is_refused() {
        let l = limits(PeerKind::Client);
        let cases = [
            (Hello { kind: PeerKind::Endpoint, ..hello(PeerKind::Client) }, Error::NotSupported),
            (Hello { name: "other".into(), ..hello(PeerKind::Client) }, Error::NotFound),
            (Hello { function: pci("b1:00.1"), ..hello(PeerKind::Client) }, Error::NotPermitted),
        ];
        for (h, code) in cases {
            let r = refusal(&h.encode(), 2, &l, Occupancy::default());
            assert_eq!((r.code, r.answer, r.report), (code, true, false));
        }
    }

    #[test]
    fn settings_a_client_can_fix_are_reported_as_failed_connections() {
        let l = limits(PeerKind::Client);
        let cases = [
            (Hello { max_msg_size: 2000, ..hello(PeerKind::Client) }, (0, 0), Error::InvalidValue),
            (Hello { recv_queue_size: 0, ..hello(PeerKind::Client) }, (0, 0), Error::InvalidValue),
            (Hello { recv_queue_size: 8193, ..hello(PeerKind::Client) }, (0, 0), Error::InvalidValue),
            (hello(PeerKind::Client), (2, 0), Error::Full),
            // One process holds the one place a process may have, of two.
            (hello(PeerKind::Client), (1, 1), Error::Full),
        ];
        for (h, (total, of_peer), code) in cases {
            let r = refusal(&h.encode(), 2, &l, Occupancy { total, of_peer });
            assert_eq!((r.code, r.answer, r.report), (code, true, true), "{h:?}");
        }
    }

    #[test]
    fn a_legacy_connection_needs_the_same_message_size_on_both_ends() {
        let mut l = limits(PeerKind::Endpoint);
        l.max_msg_size = 1024;
        let h = Hello { max_msg_size: 1024, ..hello(PeerKind::Endpoint) };
        let a = accept(&h.encode(), false, 2, &l, Occupancy::default()).unwrap();
        assert_eq!(a.max_msg_size, 1024);
        assert_eq!(a.layout.c2s.payload, 1024 + 8, "the send stamp rides in each slot");
        let reply = a.layout.reply(1, a.max_msg_size);
        assert!(check_reply(&reply.encode(), false, 3, &h).is_ok());
        for size in [256, 4080] {
            let other = Hello { max_msg_size: size, ..h.clone() };
            let r = refusal(&other.encode(), 2, &l, Occupancy::default());
            assert_eq!((r.code, r.answer), (Error::InvalidValue, true), "{size} against 1024");
            // A reply of another size than asked is refused by the client too.
            assert_eq!(check_reply(&reply.encode(), false, 3, &other).err(), Some(Error::InvalidValue));
        }
    }

    #[test]
    fn a_reply_that_lies_about_the_layout_is_refused_by_the_client() {
        let h = hello(PeerKind::Client);
        let a = accept(&h.encode(), false, 2, &limits(PeerKind::Client), Occupancy::default()).unwrap();
        let good = a.layout.reply(1, 4080);
        let lies = [
            Reply { segment_len: good.segment_len + 4096, ..good.clone() },
            Reply { s2c_offset: 0, ..good.clone() },
            Reply { max_msg_size: 100, ..good.clone() },
            Reply { server_recv_queue: 0, ..good.clone() },
            Reply { server_recv_queue: u32::MAX, ..good.clone() },
        ];
        for r in lies {
            assert_eq!(check_reply(&r.encode(), false, 3, &h).unwrap_err(), Error::InvalidValue, "{r:?}");
        }
        assert_eq!(check_reply(&good.encode(), false, 2, &h).unwrap_err(), Error::InvalidValue, "fds");
        assert_eq!(check_reply(&good.encode(), true, 3, &h).unwrap_err(), Error::InvalidValue, "truncated");
        let refused = Reply::refuse(Error::Full).encode();
        assert_eq!(check_reply(&refused, false, 0, &h).unwrap_err(), Error::Full);
    }

    #[test]
    fn layouts_refuse_sizes_that_overflow() {
        assert_eq!(SegmentLayout::new(MAX_QUEUE + 1, 1, 64), Err(Error::InvalidValue));
        assert_eq!(SegmentLayout::new(1, 1, usize::MAX), Err(Error::InvalidValue));
        assert!(SegmentLayout::new(MAX_QUEUE, MAX_QUEUE, 4088).is_ok());
    }

    #[test]
    fn client_back_off_doubles_up_to_its_ceiling() {
        let mut b = FIRST_RETRY;
        let mut seen = vec![b];
        for _ in 0..8 {
            b = next_backoff(b);
            seen.push(b);
        }
        assert_eq!(&seen[..4], &[1, 2, 4, 8].map(Duration::from_millis));
        assert_eq!(*seen.last().unwrap(), MAX_RETRY);
    }
}
