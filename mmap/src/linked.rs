//! Exported memory across the TCP link: host and DPU on two kernels ([`doca_link::remote`]),
//! where nothing is shared and every access to imported memory is a message.
//!
//! | side     | what                                                                    |
//! |----------|-------------------------------------------------------------------------|
//! | importer | [`crate::Mmap::create_from_export`] of a descriptor whose memory service is not in this side's fabric directory, with the link configured: `remote::open(MemoryImport)` with the descriptor (the DPU side names the exporting host process by its presence, its service's nonce; the host side dials the DPU's listener); the answer is a welcome (the range's length and permissions, or the DOCA code of a refusal) |
//! | exporter's side | a handler on a library thread of that side (the exporting host process, which keeps a presence at the listener while it has exports; on the DPU, the listening process): imports the descriptor **locally, as any importer of that side does** (its memory service, the token checked: forged or revoked → `NOT_FOUND`), then answers the importer's requests from that local import |
//! | wire     | request `op u32, 0 u32, offset u64, len u64` (a write: then its bytes, in the same message); answer `status u32, 0 u32` (a DOCA code), a read's bytes after it when 0 |
//!
//! **Copies.** A copy is cut into pieces of [`PIECE`] bytes (one message each, well within
//! the link's `MAX_MESSAGE`); up to [`WINDOW`] pieces are in flight, so that the exporter's
//! side reads and sends piece *k + 1* while the importer receives piece *k*. One copy at a
//! time per import (others wait their turn). The exporter's side copies each piece out of (or
//! into) its memory under a borrow that lasts one memcpy, never while it waits for the
//! network: an importer that stalls blocks neither the exporter's own accesses nor its other
//! importers.
//!
//! **Failures.** Every wait of the importer is bounded: an answer that does not come within
//! [`STALL`] fails the copy with `TIME_OUT`. The link going down fails the copy in progress
//! with the link's code (`CONNECTION_RESET`); the exporter's side closing the stream (the
//! export revoked, the exporting process gone) fails it with `NOT_FOUND` (a killed exporting
//! process, whose kernel may reset the connection, gives either). Either way the
//! import is dead from then on: every later access is `NOT_FOUND`, as for a revoked local
//! export. A revoked export answers the request that finds it revoked with `NOT_FOUND` and
//! closes; an idle stream of a revoked export is closed within [`TICK`] (the importer's next
//! look finds it closed).
//!
//! **Trust.** The other side is authenticated by the link, but never trusted: every request
//! is checked (its size, the operation, the range against the export without overflow, a
//! write against the export's permissions — `PCI_READ_WRITE` or `RDMA_WRITE`, as locally)
//! before any byte moves; a piece is at most [`PIECE`] bytes, so nothing is allocated beyond
//! one piece per stream, whatever the peer says. A request that breaks the protocol closes
//! that one stream with a log line; a refused one (out of range, read-only) is answered with
//! its code and the stream goes on. At most [`MAX_STREAMS`] streams are served at once by one
//! process (more are refused with `NO_MEMORY`). A served export (memory registered by
//! address) is imported on the exporter's side through its own serving threads, all from one
//! process: at most [`crate::served::MAX_CONNS_PER_PEER`] importers across the link hold one
//! such export at once (more are `NOT_FOUND`, as a local process beyond its share). The
//! importer checks every answer (its size, its code) the same way; a broken answer closes the
//! import.
//!
//! **Cost.** Every piece crosses the network stack (and the link's encryption) once each
//! way, plus a copy on each side (the exporter's memory into the message, the message into
//! the destination): slower than a served export between local processes, which moves the
//! bytes through shared memory (see the book, "Exported memory across the link").

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once, Weak};
use std::time::Duration;

use doca_core::{fail, peer_fail, Error, PciAddr, Result};
use doca_link::remote::{self, Kind, Role, Stream};
use parking_lot::Mutex;

use crate::desc::{AccessFlags, Desc, EXPORT_DESC_LEN};

const REQUEST_MAGIC: &[u8; 8] = b"DOCAMMLQ";
const WELCOME_MAGIC: &[u8; 8] = b"DOCAMMLA";
const VERSION: u16 = 1;
/// The first message of an import stream: magic, version, 0, the export descriptor.
const REQUEST_LEN: usize = 12 + EXPORT_DESC_LEN;
/// The exporter's side's welcome: magic, status u32, 0 u32, length u64, permissions u32, 0 u32.
const WELCOME_LEN: usize = 32;
const OP_READ: u32 = 1;
const OP_WRITE: u32 = 2;
const OP_LEN: usize = 24;
const ANSWER_LEN: usize = 8;

/// The most bytes one request moves (one message of the link).
pub const PIECE: usize = 256 << 10;
/// Pieces of one copy in flight at once.
pub const WINDOW: usize = 8;
/// How long the importer waits for an answer (then the copy fails with `TIME_OUT`).
pub const STALL: Duration = crate::served::STALL;
/// How long the importer waits for the welcome.
pub const WELCOME_WAIT: Duration = doca_link::rendezvous::REPLY_WAIT;
/// How often an idle stream's serving thread looks whether its export was revoked.
pub const TICK: Duration = Duration::from_millis(250);
/// Import streams one process serves at once.
pub const MAX_STREAMS: usize = 64;
/// The kind of an import's row in the importer's status page (`doca_emu ls`).
pub const IMPORT_ROW: &str = "mmap_link_imp";
/// The kind of a served import stream's row in the exporter's side's status page.
pub const SERVE_ROW: &str = "mmap_link_srv";

const _: () = assert!(PIECE + OP_LEN <= remote::MAX_MESSAGE && PIECE + ANSWER_LEN <= remote::MAX_MESSAGE);

/// The link's configuration if `d`'s exporter is to be reached across it: the link is
/// configured and the exporter's memory service is not in this side's fabric directory.
pub(crate) fn across(d: &Desc) -> Option<&'static remote::Config> {
    let config = remote::config()?;
    match doca_link::fabric_dir() {
        Ok(dir) if dir.join(d.service.file()).symlink_metadata().is_ok() => None,
        _ => Some(config),
    }
}

/// The memory an import stream serves: the map this process imported, as a local importer
/// does, on behalf of the importer across the link (see [`ImportHere`]).
pub(crate) trait Range {
    /// The range's length.
    fn map_len(&self) -> usize;
    /// The export's permissions (told to the importer in the welcome).
    fn permissions(&self) -> AccessFlags;
    /// Whether the importer may write.
    fn is_writable(&self) -> bool;
    /// Whether the export is still there (false once revoked).
    fn is_live(&self) -> bool;
    /// Copies `dst.len()` bytes from `offset` of the range (checked there).
    fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()>;
    /// Copies `src` to `offset` of the range (checked there).
    fn write(&self, offset: usize, src: &[u8]) -> Result<()>;
}

/// How the serving thread imports the export a request describes: given by the map's
/// module at [`register`] (the token is checked by the exporter's memory service, as for any
/// local importer).
pub(crate) type ImportHere = fn(&Desc) -> Result<Box<dyn Range>>;

/// What [`register`] was given (the handler, a plain function, reads it).
static IMPORT: std::sync::OnceLock<ImportHere> = std::sync::OnceLock::new();

/// Registers this library's handler of import streams with the link (once per process;
/// nothing when the link is not configured), serving each with what `import` gives. Called
/// at every map's creation: a process of the exporter's side that accepts streams (the
/// DPU's listener) serves imports even if it exports nothing itself.
pub(crate) fn register(import: ImportHere) {
    static ONCE: Once = Once::new();
    if let Some(config) = remote::config() {
        ONCE.call_once(|| {
            let _ = IMPORT.set(import);
            remote::serve(Kind::MemoryImport, handle);
            // The DPU side listens from its first map on, so that the host's presences find
            // the listener before this process imports anything.
            if config.role == Role::Dpu {
                remote::ensure_listening();
            }
        });
    }
}

/// What keeps an export reachable from across the link while it lives: on the host side,
/// this process's presence at the DPU's listener (one per process, shared by its exports,
/// gone with the last); on the DPU side, nothing more than the listener.
pub(crate) struct Offered {
    _presence: Option<Arc<remote::Presence>>,
}

/// Called at each export of memory of service `service` (this process's): `None` when the
/// link is not configured, or (logged) when this process cannot be present at the listener.
pub(crate) fn offered(service: doca_link::rendezvous::ServiceName, import: ImportHere) -> Option<Offered> {
    let config = remote::config()?;
    register(import);
    match config.role {
        Role::Dpu => {
            remote::ensure_listening();
            Some(Offered { _presence: None })
        }
        Role::Host => {
            /// This process's presence while one of its exports holds it (keyed by the
            /// service's nonce: a child of `fork` has a nonce of its own).
            static PRESENT: std::sync::Mutex<Option<(u64, Weak<remote::Presence>)>> =
                std::sync::Mutex::new(None);
            let mut present = PRESENT.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(p) =
                present.as_ref().filter(|(n, _)| *n == service.nonce).and_then(|(_, w)| w.upgrade())
            {
                return Some(Offered { _presence: Some(p) });
            }
            match remote::present(service.nonce) {
                Ok(p) => {
                    let p = Arc::new(p);
                    *present = Some((service.nonce, Arc::downgrade(&p)));
                    Some(Offered { _presence: Some(p) })
                }
                Err(e) => {
                    tracing::warn!(target: "doca_sdk", "mmap export: importers across the link cannot reach this export (no presence at the DPU's listener: {e})");
                    None
                }
            }
        }
    }
}

/// How long a DPU-side import waits for the exporting host process's presence at the
/// listener (its back-off between tries is at most 2 s: a listener that has just started,
/// or came back, is found within that).
pub const PRESENCE_WAIT: Duration = Duration::from_secs(3);

/// Opens the import stream: on the DPU side (`to` names the host process), a host process
/// not present yet is waited for, at most [`PRESENCE_WAIT`] (the listener may have started
/// just now, with this process's first map, and the host's presence comes back within its
/// back-off).
fn open_stream(to: Option<remote::PresenceKey>, req: &[u8]) -> doca_link::Result<Stream> {
    if let Some(key) = to {
        remote::ensure_listening();
        let deadline = std::time::Instant::now() + PRESENCE_WAIT;
        while !remote::is_present(key) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    remote::open(Kind::MemoryImport, to, req)
}

/// Waits at most `limit` for one whole message: `Ok(false)` when the other side closed.
fn recv_within(stream: &Stream, buf: &mut Vec<u8>, limit: Duration) -> Result<bool> {
    stream.recv_timeout(buf, limit)?.ok_or(Error::TimeOut)
}

fn op(code: u32, offset: usize, len: usize) -> [u8; OP_LEN] {
    let mut m = [0u8; OP_LEN];
    m[..4].copy_from_slice(&code.to_le_bytes());
    m[8..16].copy_from_slice(&(offset as u64).to_le_bytes());
    m[16..24].copy_from_slice(&(len as u64).to_le_bytes());
    m
}

fn status(r: &Result<()>) -> [u8; ANSWER_LEN] {
    let code = match r {
        Ok(()) => 0u32,
        Err(e) => e.code() as u32,
    };
    let mut a = [0u8; ANSWER_LEN];
    a[..4].copy_from_slice(&code.to_le_bytes());
    a
}

/// The DOCA code an answer or welcome carries: `Ok(Ok(()))` for 0, `Ok(Err(code))` for a
/// refusal, `Err(())` for a number that is no DOCA code (a broken peer).
fn code_at(bytes: &[u8]) -> std::result::Result<Result<()>, ()> {
    let code = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
    match code {
        0 => Ok(Ok(())),
        c => match Error::from_code(c as i32) {
            Some(e) if e != Error::Success => Ok(Err(e)),
            _ => Err(()),
        },
    }
}

/// An import across the link (see the module docs): copies in and out of the range.
pub(crate) struct Client {
    stream: Stream,
    /// One copy at a time; the buffer messages are received into.
    turn: Mutex<Vec<u8>>,
    /// The import's row in this process's status page (`doca_emu ls`): the other side's
    /// address and key, bytes each way (counted under `turn`: one writer at a time).
    row: doca_core::status::Entry,
    dead: AtomicBool,
    len: usize,
    writable: bool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "linked::Client({} bytes, {})", self.len, self.stream.peer())
    }
}

impl Client {
    /// Opens the import of `d` (its bytes `desc`) on the other side of the link.
    pub(crate) fn open(d: &Desc, desc: &[u8], config: &remote::Config, dev: PciAddr) -> Result<Client> {
        let len = match usize::try_from(d.len) {
            Ok(l) if l > 0 => l,
            _ => doca_core::bail!(Error::InvalidValue, "mmap export descriptor of {} bytes", d.len),
        };
        let to = match config.role {
            Role::Dpu => Some(d.service.nonce),
            Role::Host => None,
        };
        let mut req = [0u8; REQUEST_LEN];
        req[..8].copy_from_slice(REQUEST_MAGIC);
        req[8..10].copy_from_slice(&VERSION.to_le_bytes());
        req[12..].copy_from_slice(desc);
        let stream = open_stream(to, &req).map_err(|e| {
            fail!(
                Error::from(e),
                "mmap create_from_export: the exporter's side of the link took no import (process {} of {}: {e})",
                d.service.pid,
                d.from
            )
        })?;
        let mut w = Vec::with_capacity(WELCOME_LEN);
        match recv_within(&stream, &mut w, WELCOME_WAIT) {
            Ok(true) => {}
            Ok(false) => doca_core::bail!(
                Error::NotFound,
                "mmap create_from_export: the exporter's side of the link closed without an answer"
            ),
            Err(e) => {
                stream.shutdown();
                doca_core::bail!(
                    e,
                    "mmap create_from_export: no answer from the exporter's side of the link"
                );
            }
        }
        if w.len() != WELCOME_LEN || &w[..8] != WELCOME_MAGIC {
            stream.shutdown();
            doca_core::bail!(
                Error::NotFound,
                "mmap create_from_export: the other side's answer is not a welcome"
            );
        }
        match code_at(&w[8..12]) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => doca_core::bail!(
                e,
                "mmap create_from_export: the exporter's side of the link refused the import (revoked, stale or forged?)"
            ),
            Err(()) => doca_core::bail!(Error::NotFound, "mmap create_from_export: the other side answered no DOCA code"),
        }
        let served_len = u64::from_le_bytes(w[16..24].try_into().expect("8 bytes"));
        let served_perms = u32::from_le_bytes(w[24..28].try_into().expect("4 bytes"));
        if served_len != d.len || served_perms != d.perms.bits() {
            stream.shutdown();
            doca_core::bail!(
                Error::NotFound,
                "mmap create_from_export: the export served is not the one described"
            );
        }
        let writable = d.perms.intersects(AccessFlags::PCI_READ_WRITE | AccessFlags::RDMA_WRITE);
        let row = doca_core::status::Entry::claim(doca_core::status::Identity {
            kind: IMPORT_ROW,
            dev: Some(dev),
            rep: None,
            name: &stream.peer().to_string(),
            conn_id: 0,
        });
        row.set_connections(1);
        Ok(Client { stream, turn: Mutex::new(Vec::new()), row, dead: AtomicBool::new(false), len, writable })
    }

    /// The range's length.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether writes are allowed.
    pub(crate) fn is_writable(&self) -> bool {
        self.writable
    }

    /// Whether the import is still served: false once the other side closed the stream
    /// (revoked, exited), the link failed, or a copy failed for good.
    pub(crate) fn live(&self) -> bool {
        if self.dead.load(Ordering::Acquire) {
            return false;
        }
        // A copy in progress finds out for itself.
        let Some(mut buf) = self.turn.try_lock() else { return true };
        // Between copies nothing may arrive: anything (the end of the stream included) means
        // the other side is gone or broke the protocol.
        match self.stream.try_recv(&mut buf) {
            Ok(None) => true,
            _ => {
                self.kill();
                false
            }
        }
    }

    fn kill(&self) {
        self.dead.store(true, Ordering::Release);
        self.stream.shutdown();
        self.row.set_connections(0);
    }

    fn check_dead(&self) -> Result<()> {
        if self.dead.load(Ordering::Acquire) {
            return Err(fail!(
                Error::NotFound,
                "the exporter of this map is gone (revoked, exited, or the link failed)"
            ));
        }
        Ok(())
    }

    /// A stream failure in a copy: the import is dead; the copy fails with the link's code.
    fn broke(&self, e: doca_link::Error) -> Error {
        self.kill();
        fail!(Error::from(e), "mmap: the link to the exporter's side failed during a copy")
    }

    /// A broken answer: the import is dead.
    fn violation(&self, what: &str) -> Error {
        self.kill();
        fail!(
            Error::NotFound,
            "mmap: the exporter's side of the link broke the protocol ({what}); import closed"
        )
    }

    fn recv(&self, buf: &mut Vec<u8>) -> Result<()> {
        match recv_within(&self.stream, buf, STALL) {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.kill();
                Err(fail!(
                    Error::NotFound,
                    "the exporter's side of the link closed the import (revoked, or the exporter exited)"
                ))
            }
            Err(Error::TimeOut) => {
                self.kill();
                Err(fail!(Error::TimeOut, "the exporter's side of the link did not answer in {STALL:?}"))
            }
            Err(e) => {
                self.kill();
                Err(fail!(e, "mmap: the link to the exporter's side failed during a copy"))
            }
        }
    }

    /// Checks an answer of `data` bytes expected on success: `Ok(Ok)` for those bytes,
    /// `Ok(Err(code))` for a refusal; a broken answer kills the import.
    fn answer(&self, buf: &[u8], data: usize) -> Result<Result<()>> {
        if buf.len() < ANSWER_LEN {
            return Err(self.violation("a short answer"));
        }
        match code_at(buf) {
            Ok(Ok(())) if buf.len() == ANSWER_LEN + data => Ok(Ok(())),
            Ok(Err(e)) if buf.len() == ANSWER_LEN => Ok(Err(e)),
            Ok(_) => Err(self.violation("an answer of the wrong size")),
            Err(()) => Err(self.violation("an answer with no DOCA code")),
        }
    }

    fn bounds(&self, offset: usize, len: usize) -> Result<()> {
        if offset.checked_add(len).is_none_or(|e| e > self.len) || len == 0 {
            return Err(fail!(
                Error::InvalidValue,
                "range {offset}+{len} outside the map's {} bytes",
                self.len
            ));
        }
        Ok(())
    }

    /// Runs one copy of `len` bytes from `offset` in pieces: `send(at, n)` sends the request
    /// of piece `at..at+n` (of the copy), `got(at, bytes)` takes a read's bytes.
    fn copy(
        &self,
        offset: usize,
        len: usize,
        data: bool,
        mut send: impl FnMut(&Stream, usize, usize) -> doca_link::Result<()>,
        mut got: impl FnMut(usize, &[u8]),
    ) -> Result<()> {
        let mut buf = self.turn.lock();
        self.check_dead()?;
        let pieces = len.div_ceil(PIECE);
        let piece = |k: usize| (k * PIECE, PIECE.min(len - k * PIECE));
        let (mut sent, mut answered) = (0, 0);
        let mut refused: Option<Error> = None;
        loop {
            // After a refusal nothing more is asked; the answers in flight are drained.
            while refused.is_none() && sent < pieces && sent - answered < WINDOW {
                let (at, n) = piece(sent);
                send(&self.stream, offset + at, n).map_err(|e| self.broke(e))?;
                self.row.sent(OP_LEN + if data { 0 } else { n });
                sent += 1;
            }
            if answered == sent {
                break;
            }
            self.recv(&mut buf)?;
            self.row.received(buf.len());
            let (at, n) = piece(answered);
            answered += 1;
            match self.answer(&buf, if data { n } else { 0 })? {
                Ok(()) if refused.is_none() => got(at, &buf[ANSWER_LEN..]),
                Ok(()) => {}
                Err(Error::NotFound) => {
                    // Revoked: the other side closes the stream after this answer.
                    self.kill();
                    return Err(fail!(Error::NotFound, "the exporter of this map revoked it"));
                }
                Err(e) => {
                    refused.get_or_insert(e);
                }
            }
        }
        match refused {
            Some(e) => Err(fail!(e, "the exporter's side of the link refused the copy")),
            None => Ok(()),
        }
    }

    /// Copies `dst.len()` bytes from `offset` of the range into `dst`.
    pub(crate) fn read(&self, offset: usize, dst: &mut [u8]) -> Result<()> {
        self.bounds(offset, dst.len())?;
        self.copy(
            offset,
            dst.len(),
            true,
            |s, at, n| s.send(&op(OP_READ, at, n)),
            |at, bytes| dst[at..at + bytes.len()].copy_from_slice(bytes),
        )
    }

    /// Copies `src` to `offset` of the range.
    pub(crate) fn write(&self, offset: usize, src: &[u8]) -> Result<()> {
        self.bounds(offset, src.len())?;
        if !self.writable {
            return Err(fail!(Error::NotPermitted, "the export is read-only"));
        }
        self.copy(
            offset,
            src.len(),
            false,
            |s, at, n| s.send_parts(&[&op(OP_WRITE, at, n), &src[at - offset..at - offset + n]]),
            |_, _| {},
        )
    }
}

/// Import streams being served in this process (at most [`MAX_STREAMS`]).
static STREAMS: remote::Quota = remote::Quota::new(MAX_STREAMS);

fn welcome(stream: &Stream, r: Result<(usize, AccessFlags)>) {
    let mut w = [0u8; WELCOME_LEN];
    w[..8].copy_from_slice(WELCOME_MAGIC);
    let (len, perms) = match &r {
        Ok((len, perms)) => (*len as u64, perms.bits()),
        Err(_) => (0, 0),
    };
    w[8..12].copy_from_slice(&status(&r.map(drop))[..4]);
    w[16..24].copy_from_slice(&len.to_le_bytes());
    w[24..28].copy_from_slice(&perms.to_le_bytes());
    if let Err(e) = stream.send(&w) {
        tracing::debug!(target: "doca_sdk", "mmap across the link: welcoming {}: {e}", stream.peer());
    }
}

/// The export descriptor a stream's first message carries.
fn parse_request(req: &[u8]) -> std::result::Result<&[u8], String> {
    if req.len() != REQUEST_LEN || &req[..8] != REQUEST_MAGIC {
        return Err(format!("{} bytes that are no import request", req.len()));
    }
    let version = u16::from_le_bytes([req[8], req[9]]);
    if version != VERSION {
        return Err(format!("version {version} (this side speaks {VERSION})"));
    }
    Ok(&req[12..])
}

/// The link's handler of import streams (on a thread of its own): imports the descriptor
/// here and serves the importer's requests until it leaves, the export is revoked or the
/// importer breaks the protocol.
fn handle(stream: Stream, request: Vec<u8>) {
    let Some(_place) = STREAMS.take() else {
        tracing::warn!(target: "doca_sdk", "mmap across the link: {} refused: {MAX_STREAMS} imports are served already", stream.peer());
        welcome(&stream, Err(Error::NoMemory));
        stream.shutdown();
        return;
    };
    let desc = match parse_request(&request) {
        Ok(d) => d,
        Err(why) => {
            tracing::warn!(target: "doca_sdk", "mmap across the link: a malformed import request from {} ({why}); closed", stream.peer());
            stream.shutdown();
            return;
        }
    };
    // As a local importer does: the token checked by the exporter's memory service.
    let import = IMPORT.get().copied().ok_or(Error::NotSupported);
    let access = match import.and_then(|import| Desc::parse(desc).and_then(|d| import(&d))) {
        Ok(access) => access,
        Err(e) => {
            tracing::info!(target: "doca_sdk", "mmap across the link: the import asked by {} is refused: {}", stream.peer(), e.name());
            welcome(&stream, Err(e));
            stream.shutdown();
            return;
        }
    };
    welcome(&stream, Ok((access.map_len(), access.permissions())));
    let row = doca_core::status::Entry::claim(doca_core::status::Identity {
        kind: SERVE_ROW,
        dev: None,
        rep: None,
        name: &stream.peer().to_string(),
        conn_id: 0,
    });
    row.set_connections(1);
    serve(&stream, &*access, &row);
    stream.shutdown();
}

/// Serves one import stream until it ends (counting the bytes in `row`).
fn serve(stream: &Stream, access: &dyn Range, row: &doca_core::status::Entry) {
    let mut msg = Vec::new();
    let mut bounce = Vec::new();
    loop {
        // Idle, the importer may wait as long as it likes; the export's revocation is looked
        // at every tick.
        match stream.recv_timeout(&mut msg, TICK) {
            Ok(Some(true)) => {}
            Ok(Some(false)) => return,
            Err(e) => {
                tracing::debug!(target: "doca_sdk", "mmap across the link: the stream of {} failed: {e}", stream.peer());
                return;
            }
            Ok(None) => {
                if !access.is_live() {
                    tracing::debug!(target: "doca_sdk", "mmap across the link: the export {} imports was revoked; closed", stream.peer());
                    return;
                }
                continue;
            }
        }
        row.received(msg.len());
        match serve_one(stream, access, &msg, &mut bounce) {
            Ok(Some(sent)) => row.sent(sent),
            Ok(None) => return,
            Err(why) => {
                tracing::warn!(target: "doca_sdk", "mmap across the link: {} broke the protocol ({why}); closed", stream.peer());
                return;
            }
        }
    }
}

/// Answers one request: `Ok(Some(bytes sent))`, `Ok(None)` when the stream is to end
/// (revoked, or the answer could not be sent), `Err` for a request that breaks the protocol.
fn serve_one(
    stream: &Stream,
    access: &dyn Range,
    msg: &[u8],
    bounce: &mut Vec<u8>,
) -> std::result::Result<Option<usize>, String> {
    if msg.len() < OP_LEN {
        return Err(format!("a request of {} bytes", msg.len()));
    }
    let u64_at = |i: usize| u64::from_le_bytes(msg[i..i + 8].try_into().expect("8 bytes"));
    let (code, offset, len) =
        (u32::from_le_bytes(msg[..4].try_into().expect("4 bytes")), u64_at(8), u64_at(16));
    // The range against the export, without overflow (refused with its code, not closed).
    let range = || -> Result<(usize, usize)> {
        match (usize::try_from(offset), usize::try_from(len)) {
            (Ok(o), Ok(n)) if n > 0 && o.checked_add(n).is_some_and(|e| e <= access.map_len()) => Ok((o, n)),
            _ => Err(peer_fail!(
                Error::InvalidValue,
                "mmap across the link: a request for {offset}+{len} outside the exported {} bytes",
                access.map_len()
            )),
        }
    };
    let sent = match code {
        OP_READ => {
            if msg.len() != OP_LEN {
                return Err(format!("a read request of {} bytes", msg.len()));
            }
            if len > PIECE as u64 {
                return Err(format!("a read of {len} bytes in one piece (at most {PIECE})"));
            }
            let r = range().and_then(|(o, n)| {
                bounce.resize(n, 0);
                access.read(o, &mut bounce[..n]).map(|()| n)
            });
            match r {
                Ok(n) => stream.send_parts(&[&status(&Ok(())), &bounce[..n]]).map(|()| ANSWER_LEN + n),
                Err(e) => {
                    let sent = stream.send(&status(&Err(e)));
                    if e == Error::NotFound {
                        return Ok(None);
                    }
                    sent.map(|()| ANSWER_LEN)
                }
            }
        }
        OP_WRITE => {
            let bytes = &msg[OP_LEN..];
            if len != bytes.len() as u64 || bytes.len() > PIECE {
                return Err(format!("a write of {len} bytes carrying {}", bytes.len()));
            }
            let r = range().and_then(|(o, _)| {
                if !access.is_writable() {
                    return Err(peer_fail!(
                        Error::NotPermitted,
                        "mmap across the link: a write into a read-only export"
                    ));
                }
                access.write(o, bytes)
            });
            let sent = stream.send(&status(&r));
            if r == Err(Error::NotFound) {
                return Ok(None);
            }
            sent.map(|()| ANSWER_LEN)
        }
        other => return Err(format!("unknown request {other}")),
    };
    match sent {
        Ok(n) => Ok(Some(n)),
        Err(e) => {
            tracing::debug!(target: "doca_sdk", "mmap across the link: answering {}: {e}", stream.peer());
            Ok(None)
        }
    }
}
