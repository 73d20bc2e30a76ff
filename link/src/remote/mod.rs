//! The remote link: host and DPU on two kernels, talking over authenticated, encrypted TCP
//! streams.
//!
//! Locally everything goes through the fabric directory. Remotely nothing is shared, so a
//! connection is relayed by library threads at both ends (*stand-ins* that speak the local
//! protocol to the local application) and the two stand-ins exchange messages over one
//! [`Stream`] per relayed connection: back-pressure is TCP's own, and no connection waits
//! behind another.
//!
//! | module       | what                                                                 |
//! |--------------|----------------------------------------------------------------------|
//! | [`keys`]     | the static key pairs (`doca_emu keygen DIR`) and loading one side's keys |
//! | [`stream`]   | a stream: socket options, preface, Noise handshake, framing, sending and receiving |
//! | [`Link`]     | one side of the link: the DPU's listener, [`open`], [`serve`], [`present`] |
//!
//! # Roles and configuration
//!
//! The DPU side listens ([`LISTEN_ENV`], `DOCA_EMU_LINK_LISTEN=ADDR:PORT`), the host side
//! connects ([`CONNECT_ENV`]); [`KEYS_ENV`] names the directory of keys, and [`PLAINTEXT_ENV`]
//! `=1` turns encryption off (every stream then says so at warn level). [`config`] reads them
//! once. Streams are always dialed by the host side. The listener binds exactly the address
//! written (an IP address and a port; `0.0.0.0` only if written so); port 0 lets the system
//! choose (logged).
//!
//! # What goes over a stream
//!
//! On the wire, before anything else, each end sends a 9-byte preface in the clear: `DOCALNK1`
//! and a mode byte (`E` encrypted, `P` plaintext), so that a plaintext side and an encrypted
//! side refuse each other clearly. Then (encrypted mode) the two messages of the Noise
//! handshake `Noise_KK_25519_ChaChaPoly_BLAKE2s` (both static keys pinned; the host side is
//! the initiator; prologue `doca-emu link 1` + the pattern's name), each after its length
//! (u16, big-endian), the whole bounded by [`HANDSHAKE_WAIT`]. Then messages, each cut into
//! frames as [`stream`] tells. The first message on every stream is the dialer's (the host's);
//! the listener answers it with one message:
//!
//! | message  | bytes                                   | from → to | when |
//! |----------|-----------------------------------------|-----------|------|
//! | Open     | `O`, kind (u8), request                 | host → DPU | [`open`] on the host side: asks for the DPU's handler of `kind` |
//! | Presence | `P`, key (u64 LE)                       | host → DPU | [`present`]: the stream stays open as the presence of host process `key` |
//! | Ticket   | `T`, ticket (16 bytes)                  | host → DPU | a dial-back: the stream the DPU's reverse [`open`] waits for |
//! | Answer   | `A`, code (u8: 0 ok, else a DOCA code)  | DPU → host | to each of the three above; `NOT_FOUND` when nothing serves the kind or the ticket is unknown |
//! | Dial     | `D`, ticket (16), kind (u8), request    | DPU → host | over a presence: the DPU's reverse [`open`] asks the host process for a stream |
//! | Nope     | `N`, ticket (16), code (u8)             | host → DPU | over a presence: the host cannot serve that dial (no handler for the kind, dial failed) |
//!
//! After the answer `A ok` the stream belongs to the caller of [`open`] and to the handler
//! [`serve`] registered for the kind, on a named thread of its own (`doca-link-cc`,
//! `doca-link-mmap`, `doca-link-sync`, `doca-link-rdma`), with the request bytes.
//!
//! **Forward open** (host side, [`open`]`(kind, _, request)`): dials the listener (a refused
//! connection is retried for about [`DIAL_RETRY`], then `NOT_FOUND`: nothing listens), runs the
//! handshake, sends Open, waits at most [`REPLY_WAIT`] for the answer.
//!
//! **Reverse open** (DPU side, [`open`]`(kind, Some(key), request)`): the host process `key`
//! keeps a presence ([`present`]); the DPU draws a random ticket, sends Dial over the presence
//! and waits at most [`REPLY_WAIT`] for the host's library to dial a stream that carries the
//! ticket; that stream is returned, and on the host the handler registered for `kind` runs
//! with it and the request. No presence for `key` → `NOT_FOUND` at once; Nope → its code; the
//! presence lost while waiting → `CONNECTION_RESET`.
//!
//! **Presence** (host side): one thread (`doca-link-pres`) keeps the presence stream while the
//! [`Presence`] guard lives, reconnecting with a back-off from 100 ms to 2 s, and logs once
//! (at warn level) when it cannot reach the listener, and once when it is back. It answers
//! each Dial by dialing (on a thread named after the kind; at most [`MAX_DIALBACKS`] at once).
//! On the DPU a presence for a key replaces an older one for the same key.
//!
//! # Bounds and failures
//!
//! - The listener keeps at most [`MAX_STREAMS_PER_PEER`] streams per peer IP address
//!   (handshakes in progress included), and at most [`MAX_HANDSHAKES`] connections in their
//!   handshake over all peers; more are closed at once, logged (rate-limited).
//! - A peer that fails the handshake is refused with one warn line naming its address
//!   (`link: refused ADDR: authentication failed (wrong or missing key)`), rate-limited to
//!   one line a second per reason, as are a bad preface, a mode mismatch, a late handshake.
//! - Keepalive: `SO_KEEPALIVE` with `TCP_KEEPIDLE` 2 s, `TCP_KEEPINTVL` 1 s, `TCP_KEEPCNT` 3,
//!   and `TCP_USER_TIMEOUT` 5 s: a peer that stops answering is dead within about 5 s, and
//!   a blocked [`Stream::recv`] then fails. A send blocked for [`STALL`] fails (`TIME_OUT`)
//!   and closes the stream.
//! - A frame or message a peer sends that is malformed or over [`MAX_MESSAGE`] closes that
//!   stream (debug log with the reason, one rate-limited warn naming the address).
//!
//! Errors: `NOT_FOUND` nothing serves it on the other side (or nothing listens);
//! `CONNECTION_RESET` the link went down; `TIME_OUT`; `NOT_PERMITTED` authentication refused.

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

use crate::error::{fail, peer_fail};
use crate::error::{Error, Result};

pub mod keys;
mod link;
pub mod stream;

pub use keys::Keys;
pub use link::{Handler, Link, Presence};
pub use stream::{Peer, Stream, StreamRx, StreamTx};

/// `ADDR:PORT` this process (the DPU side) listens on.
pub const LISTEN_ENV: &str = "DOCA_EMU_LINK_LISTEN";
/// `ADDR:PORT` of the listener this process (the host side) connects to.
pub const CONNECT_ENV: &str = "DOCA_EMU_LINK_CONNECT";
/// The key directory `doca_emu keygen DIR` made.
pub const KEYS_ENV: &str = "DOCA_EMU_LINK_KEYS";
/// `1`: no encryption, no authentication (logged at warn level at each stream).
pub const PLAINTEXT_ENV: &str = "DOCA_EMU_LINK_PLAINTEXT";

/// Largest message one `send` carries (a 64 MiB DMA is cut by the callers into pieces).
pub const MAX_MESSAGE: usize = 1 << 20;
/// The longest the preface and handshake of a stream may take (and, on the listener, the
/// first message after them).
pub const HANDSHAKE_WAIT: Duration = Duration::from_secs(5);
/// The longest [`open`] waits for the other side's answer (or, for a reverse open, for the
/// host's dial-back).
pub const REPLY_WAIT: Duration = Duration::from_secs(10);
/// The longest one send may stay blocked (the peer reads nothing) before it fails.
pub const STALL: Duration = Duration::from_secs(10);
/// How long a refused connection is retried before [`open`] answers `NOT_FOUND`.
pub const DIAL_RETRY: Duration = Duration::from_secs(2);
/// Streams the listener keeps at once per peer IP address.
pub const MAX_STREAMS_PER_PEER: usize = 64;
/// Connections the listener takes through their handshake at once, over all peers (each
/// for at most [`HANDSHAKE_WAIT`]).
pub const MAX_HANDSHAKES: usize = 256;
/// Dial-backs a host process runs at once.
pub const MAX_DIALBACKS: usize = 64;

/// Which side of the link this process is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// The host side: connects.
    Host,
    /// The DPU side: listens.
    Dpu,
}

impl Role {
    /// The other side.
    pub fn other(self) -> Role {
        match self {
            Role::Host => Role::Dpu,
            Role::Dpu => Role::Host,
        }
    }
}

/// The link's configuration (see the module documentation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// This process's side.
    pub role: Role,
    /// The DPU side's address: listened on (DPU) or connected to (host).
    pub addr: SocketAddr,
    /// The key directory (empty when plaintext).
    pub keys: PathBuf,
    /// No encryption ([`PLAINTEXT_ENV`]).
    pub plaintext: bool,
}

impl Config {
    /// The configuration the variables give (`get` reads one): `Ok(None)` when neither
    /// [`LISTEN_ENV`] nor [`CONNECT_ENV`] is set, `Err(why)` when they are inconsistent.
    pub fn from_vars(get: impl Fn(&str) -> Option<OsString>) -> std::result::Result<Option<Config>, String> {
        let var = |name: &str| -> std::result::Result<Option<String>, String> {
            match get(name) {
                None => Ok(None),
                Some(v) if v.is_empty() => Ok(None),
                Some(v) => v.into_string().map(Some).map_err(|v| format!("link: {name}={v:?} is not text")),
            }
        };
        let listen = var(LISTEN_ENV)?;
        let connect = var(CONNECT_ENV)?;
        let (role, name, text) = match (listen, connect) {
            (None, None) => return Ok(None),
            (Some(_), Some(_)) => {
                return Err(format!(
                    "link: both {LISTEN_ENV} and {CONNECT_ENV} are set: a process is the DPU side \
                     (listens) or the host side (connects), not both; no remote link"
                ))
            }
            (Some(l), None) => (Role::Dpu, LISTEN_ENV, l),
            (None, Some(c)) => (Role::Host, CONNECT_ENV, c),
        };
        let addr: SocketAddr = text.trim().parse().map_err(|_| {
            format!(
                "link: {name}={text:?} is not an IP address and port (e.g. 192.0.2.1:7000 or \
                 [fd00::1]:7000); no remote link"
            )
        })?;
        if role == Role::Host && addr.port() == 0 {
            return Err(format!("link: {name}={text:?}: port 0 cannot be connected to; no remote link"));
        }
        let plaintext = match var(PLAINTEXT_ENV)?.as_deref() {
            None | Some("0") => false,
            Some("1") => true,
            Some(v) => {
                return Err(format!("link: {PLAINTEXT_ENV}={v:?}: only 1 (plaintext) or 0; no remote link"))
            }
        };
        let keys = match var(KEYS_ENV)? {
            Some(k) => PathBuf::from(k),
            None if plaintext => PathBuf::new(),
            None => {
                return Err(format!(
                    "link: {name} is set but {KEYS_ENV} is not: name the key directory `doca_emu \
                     keygen DIR` made (or set {PLAINTEXT_ENV}=1 for a link without encryption); \
                     no remote link"
                ))
            }
        };
        Ok(Some(Config { role, addr, keys, plaintext }))
    }
}

/// The link's configuration, read once from the environment: `None` when no link is
/// configured, or (one error logged) when the variables are inconsistent.
pub fn config() -> Option<&'static Config> {
    static CONFIG: OnceLock<Option<Config>> = OnceLock::new();
    CONFIG
        .get_or_init(|| match Config::from_vars(|k| std::env::var_os(k)) {
            Ok(c) => c,
            Err(why) => {
                fail!(Error::InvalidValue, "{why}");
                None
            }
        })
        .as_ref()
}

/// What a stream is opened for: which handler ([`serve`]) takes it on the other side.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A Comm Channel connection.
    CcService = 1,
    /// An import of memory (a served export).
    MemoryImport = 2,
    /// A sync event's page and doorbells.
    SyncEvent = 3,
    /// An RDMA connection.
    Rdma = 4,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 4] = [Kind::CcService, Kind::MemoryImport, Kind::SyncEvent, Kind::Rdma];

    /// The kind of a byte on the wire.
    pub fn from_u8(b: u8) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| *k as u8 == b)
    }

    /// The name of the threads that run its handler.
    pub fn thread_name(self) -> &'static str {
        match self {
            Kind::CcService => "doca-link-cc",
            Kind::MemoryImport => "doca-link-mmap",
            Kind::SyncEvent => "doca-link-sync",
            Kind::Rdma => "doca-link-rdma",
        }
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::CcService => "comm channel",
            Kind::MemoryImport => "memory import",
            Kind::SyncEvent => "sync event",
            Kind::Rdma => "rdma",
        })
    }
}

/// Names a host process for the DPU side: the memory service's nonce
/// ([`crate::rendezvous::ServiceName::nonce`]).
pub type PresenceKey = u64;

/// This process's side of the link from [`config`]: `None` without a configuration; the
/// keys' error (logged once) when they cannot be loaded.
fn global() -> Option<Result<&'static Link>> {
    static LINK: OnceLock<Option<Result<Link>>> = OnceLock::new();
    LINK.get_or_init(|| config().map(|c| Link::new(c.clone()))).as_ref().map(|r| r.as_ref().map_err(|e| *e))
}

fn no_link() -> Error {
    peer_fail!(Error::NotFound, "link: no remote link configured ({LISTEN_ENV} / {CONNECT_ENV} unset)")
}

/// Opens a stream to the other side for a request of `kind` (first message = kind + request
/// bytes). Host side: dials the listener (`to` is not needed: there is one listener). DPU
/// side: `to` names the host process (its presence key); asks for a dial-back and waits (at
/// most [`REPLY_WAIT`]) for it. `NOT_FOUND` without a configured link.
pub fn open(kind: Kind, to: Option<PresenceKey>, request: &[u8]) -> Result<Stream> {
    match global() {
        None => Err(no_link()),
        Some(Err(e)) => Err(e),
        Some(Ok(link)) => link.open(kind, to, request),
    }
}

/// The accepting end of a kind: called on a named thread of its own with the stream and the
/// request (the DPU side for forward opens, the host side for reverse opens). Replaces an
/// earlier handler of that kind. Without a configured link there is nothing to serve.
pub fn serve(kind: Kind, handler: Handler) {
    if let Some(Ok(link)) = global() {
        link.serve(kind, handler);
    }
}

/// Host side: keep a presence at the listener for `key` (until the returned guard drops).
/// `NOT_FOUND` without a configured link; `INVALID_VALUE` on the DPU side.
pub fn present(key: PresenceKey) -> Result<Presence> {
    match global() {
        None => Err(no_link()),
        Some(Err(e)) => Err(e),
        Some(Ok(link)) => link.present(key),
    }
}

/// Starts the listener if this process is the DPU side (idempotent; a bind failure is logged
/// once, and not retried).
pub fn ensure_listening() {
    if let Some(Ok(link)) = global() {
        if link.config().role == Role::Dpu {
            let _ = link.listen();
        }
    }
}

/// DPU side: whether host process `key` keeps a presence at this process's listener now
/// (for a caller that waits for it before a reverse [`open`], which answers `NOT_FOUND` at
/// once, logged, when it is not there).
pub fn is_present(key: PresenceKey) -> bool {
    matches!(global(), Some(Ok(link)) if link.is_present(key))
}

/// The address the process-wide listener is bound to (`None` before [`ensure_listening`]
/// bound it, or on the host side): with port 0 configured, the port the system chose.
pub fn listening() -> Option<SocketAddr> {
    match global() {
        Some(Ok(link)) => link.local_addr(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn parse(vars: &[(&str, &str)]) -> std::result::Result<Option<Config>, String> {
        let map: HashMap<String, OsString> =
            vars.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        Config::from_vars(|k| map.get(k).cloned())
    }

    #[test]
    fn config_from_vars() {
        assert_eq!(parse(&[]), Ok(None));
        assert_eq!(parse(&[(KEYS_ENV, "/k")]), Ok(None));
        let c = parse(&[(LISTEN_ENV, "10.1.2.3:7000"), (KEYS_ENV, "/k")]).unwrap().unwrap();
        assert_eq!(c.role, Role::Dpu);
        assert_eq!(c.addr, "10.1.2.3:7000".parse().unwrap());
        assert_eq!(c.keys, PathBuf::from("/k"));
        assert!(!c.plaintext);
        let c = parse(&[(CONNECT_ENV, "[::1]:9"), (PLAINTEXT_ENV, "1")]).unwrap().unwrap();
        assert_eq!((c.role, c.plaintext, c.keys), (Role::Host, true, PathBuf::new()));
        let both = parse(&[(LISTEN_ENV, "1.2.3.4:1"), (CONNECT_ENV, "1.2.3.4:1"), (KEYS_ENV, "/k")]);
        assert!(both.unwrap_err().contains("both"));
        let nokeys = parse(&[(CONNECT_ENV, "1.2.3.4:1")]).unwrap_err();
        assert!(nokeys.contains(KEYS_ENV) && nokeys.contains(PLAINTEXT_ENV), "{nokeys}");
        assert!(parse(&[(CONNECT_ENV, "host:1"), (KEYS_ENV, "/k")]).unwrap_err().contains("not an IP"));
        assert!(parse(&[(CONNECT_ENV, "1.2.3.4:0"), (KEYS_ENV, "/k")]).unwrap_err().contains("port 0"));
        assert!(parse(&[(LISTEN_ENV, "1.2.3.4:0"), (KEYS_ENV, "/k")]).unwrap().is_some());
        assert!(parse(&[(CONNECT_ENV, "1.2.3.4:1"), (PLAINTEXT_ENV, "yes")]).unwrap_err().contains("only 1"));
    }

    #[test]
    fn kinds_round_trip() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_u8(k as u8), Some(k));
        }
        assert_eq!(Kind::from_u8(0), None);
        assert_eq!(Kind::from_u8(5), None);
    }
}

/// A process-wide bound on what the link's users run at once (relayed connections, serving
/// threads): `take` gives a place while fewer than the bound are taken, and the place is
/// given back when its guard drops. One relaxed counter, no lock.
pub struct Quota {
    taken: std::sync::atomic::AtomicUsize,
    max: usize,
}

/// A place of a [`Quota`], given back on drop.
#[must_use = "the place is given back when this is dropped"]
pub struct Place(&'static Quota);

impl Quota {
    /// A quota of `max` places.
    pub const fn new(max: usize) -> Quota {
        Quota { taken: std::sync::atomic::AtomicUsize::new(0), max }
    }

    /// A place, or `None` when all `max` are taken.
    pub fn take(&'static self) -> Option<Place> {
        use std::sync::atomic::Ordering::Relaxed;
        self.taken
            .fetch_update(Relaxed, Relaxed, |n| (n < self.max).then_some(n + 1))
            .ok()
            .map(|_| Place(self))
    }

    /// Places taken now.
    pub fn taken(&self) -> usize {
        self.taken.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.0.taken.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[cfg(test)]
mod quota_tests {
    use super::Quota;

    #[test]
    fn a_quota_gives_its_places_and_takes_them_back() {
        static Q: Quota = Quota::new(2);
        let (a, b) = (Q.take().expect("one"), Q.take().expect("two"));
        assert!(Q.take().is_none(), "no third place");
        drop(a);
        let c = Q.take().expect("a place given back is taken again");
        assert_eq!(Q.taken(), 2);
        drop((b, c));
        assert_eq!(Q.taken(), 0);
    }
}
