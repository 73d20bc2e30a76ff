//! Doorbells registered with the owner of a shared object: how engines of other processes
//! that wait on it are woken, with no descriptor of anyone's named in shared memory.
//!
//! The owner (a sync event's exporter) keeps a [`Board`]: a fixed number of slots, each
//! holding at most one [`Doorbell`] (the ringing end of a socket pair an engine made). Its
//! shared memory keeps one *armed* flag per slot (the board reads them through the closure it
//! was made with): an engine arms its flag before it sleeps and clears it when it wakes.
//!
//! | who          | how                                                                 |
//! |--------------|---------------------------------------------------------------------|
//! | owner's engine | [`Board::register_local`]: a slot for its own doorbell            |
//! | importer     | [`take_board`]: the object's memfd *and* a connection the owner's memory service keeps ([`crate::rendezvous::Offer::Kept`], the board its keeper); [`BoardLink::register`] sends the ringing end of its doorbell over it (`SCM_RIGHTS`) and gets its slot back |
//! | owner updating | [`Board::ring_armed`]: rings every registered doorbell whose flag is armed |
//! | importer updating | [`BoardLink::ring`]: one datagram asking the owner's service to ring the armed ones |
//! | revocation   | [`Board::revoke_all`] (the offer withdrawn): every connection is shut down, so each importer reads end-of-file — only the owner decides that the object is gone |
//!
//! What a peer can do: write any bits into the armed flags (spurious or missed wake-ups of
//! engines that chose to sleep on this object: never a byte written anywhere else, never a
//! slot taken); register at most [`crate::budget::DOORBELLS_PER_PROCESS`] doorbells per peer
//! process (each a descriptor charged to its account in the ledger); keep at most what its
//! descriptor budget allows of connections; ask for rings (each request rings only armed,
//! registered doorbells; requests are read in bounded batches).

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use rustix::event::{PollFd, PollFlags};

use crate::budget::{Account, Hold, Limits, PeerId};
use crate::discard::PeerFd;
use crate::error::{bail, fail, peer_fail};
use crate::notify::Doorbell;
use crate::rendezvous::{Keeper, ServiceName, Taken, Token, REPLY_WAIT};
use crate::{Error, Recv, Result};

const REGISTER: &[u8; 8] = b"DOCABREG";
const RING: &[u8; 8] = b"DOCABRNG";
const ACCEPTED: &[u8; 8] = b"DOCABOK_";
const REFUSED: &[u8; 8] = b"DOCABNO_";
/// Ring requests read per readable connection at once (the rest wait for the next pass).
const BATCH: usize = 16;

/// Whether slot `i`'s engine is asleep, as the owner's shared memory says.
type Armed = Box<dyn Fn(usize) -> bool + Send + Sync>;

/// The owner's side: the registered doorbells of one object.
pub struct Board {
    armed: Armed,
    limits: Limits,
    state: Mutex<State>,
}

struct State {
    bells: Vec<Option<Bell>>,
    conns: HashMap<u64, Conn>,
    next: u64,
    revoked: bool,
}

struct Bell {
    ring: Doorbell,
    /// The connection it came over (`None`: this process's own engine).
    conn: Option<u64>,
    _hold: Option<Hold>,
}

struct Conn {
    sock: Arc<PeerFd>,
    account: Account,
    _hold: Hold,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state.lock();
        let used = s.bells.iter().filter(|b| b.is_some()).count();
        write!(f, "Board({used}/{} doorbells, {} connections)", s.bells.len(), s.conns.len())
    }
}

impl Board {
    /// A board of `slots` slots (the owner's shared memory has that many armed flags, read
    /// with `armed`); peers are held to `limits`.
    pub fn new(
        slots: usize,
        limits: Limits,
        armed: impl Fn(usize) -> bool + Send + Sync + 'static,
    ) -> Arc<Board> {
        Arc::new(Board {
            armed: Box::new(armed),
            limits,
            state: Mutex::new(State {
                bells: (0..slots).map(|_| None).collect(),
                conns: HashMap::new(),
                next: 0,
                revoked: false,
            }),
        })
    }

    /// A slot for a doorbell of this process (`ring`: the ringing end of a
    /// [`Doorbell::pair`]). `FULL` when every slot is taken.
    pub fn register_local(&self, ring: PeerFd) -> Result<usize> {
        let ring = Doorbell::from_peer(ring)?;
        let mut s = self.state.lock();
        let Some(slot) = s.bells.iter().position(Option::is_none) else {
            bail!(Error::Full, "all {} doorbell slots are taken", s.bells.len());
        };
        s.bells[slot] = Some(Bell { ring, conn: None, _hold: None });
        Ok(slot)
    }

    /// Gives a slot of [`Board::register_local`] back.
    pub fn unregister(&self, slot: usize) {
        let mut s = self.state.lock();
        if let Some(b) = s.bells.get_mut(slot) {
            if b.as_ref().is_some_and(|b| b.conn.is_none()) {
                *b = None;
            }
        }
    }

    /// Rings every registered doorbell whose flag is armed (one non-blocking send each).
    pub fn ring_armed(&self) {
        let s = self.state.lock();
        for (i, b) in s.bells.iter().enumerate() {
            if let Some(b) = b {
                if (self.armed)(i) {
                    b.ring.ring();
                }
            }
        }
    }

    /// Ends every importer's connection (each reads end-of-file: the object is gone) and
    /// takes their doorbells back; no connection is accepted after.
    pub fn revoke_all(&self) {
        let mut s = self.state.lock();
        s.revoked = true;
        for c in s.conns.values() {
            let _ = rustix::net::shutdown(c.sock.as_fd(), rustix::net::Shutdown::Both);
        }
        s.conns.clear();
        for b in s.bells.iter_mut() {
            if b.as_ref().is_some_and(|b| b.conn.is_some()) {
                *b = None;
            }
        }
    }

    /// Whether [`Board::revoke_all`] was called.
    pub fn is_revoked(&self) -> bool {
        self.state.lock().revoked
    }

    /// Keeps the connection of importer `peer`, charged one descriptor
    /// to a new account of its: its id, or `None` (refused, logged; the caller closes it).
    fn take(&self, sock: Arc<PeerFd>, peer: PeerId) -> Option<u64> {
        let account = Account::open(peer, self.limits);
        let hold = match account.claim(0, 1, "a kept importer connection") {
            Ok(h) => h,
            Err(r) => {
                let _ = peer_fail!(r.code, "doorbell board: {r}; refused");
                return None;
            }
        };
        let mut s = self.state.lock();
        if s.revoked {
            return None;
        }
        let id = s.next;
        s.next += 1;
        s.conns.insert(id, Conn { sock, account, _hold: hold });
        Some(id)
    }

    /// The connection `id` went away: its doorbells are taken back.
    pub(crate) fn closed(&self, id: u64) {
        let mut s = self.state.lock();
        s.conns.remove(&id);
        for b in s.bells.iter_mut() {
            if b.as_ref().is_some_and(|b| b.conn == Some(id)) {
                *b = None;
            }
        }
    }

    /// Reads what connection `id` sent (a bounded batch): registrations are answered, ring
    /// requests ring the armed doorbells once. `false`: the connection ended or misbehaved
    /// (closed by the caller).
    fn read_from(&self, id: u64, sock: &PeerFd) -> bool {
        let mut ring = false;
        let mut keep = true;
        for _ in 0..BATCH {
            let mut buf = [0u8; 9];
            match crate::fabric::recv(sock.as_fd(), &mut buf) {
                Ok(Recv::Empty) => break,
                Ok(Recv::Packet { len: 8, truncated: false, fds }) if &buf[..8] == RING && fds.is_empty() => {
                    ring = true;
                }
                Ok(Recv::Packet { len: 8, truncated: false, fds }) if &buf[..8] == REGISTER => {
                    let Ok([fd]) = <[PeerFd; 1]>::try_from(fds) else {
                        keep = false;
                        break;
                    };
                    self.register_remote(id, sock, fd);
                }
                Ok(Recv::Closed) | Err(_) => {
                    keep = false;
                    break;
                }
                Ok(Recv::Packet { .. }) => {
                    let peer = self.state.lock().conns.get(&id).map(|c| c.account.peer());
                    let _ = peer_fail!(
                        Error::InvalidValue,
                        "doorbell board: a malformed message from {peer:?}; closed"
                    );
                    keep = false;
                    break;
                }
            }
        }
        if ring {
            self.ring_armed();
        }
        if !keep {
            self.closed(id);
        }
        keep
    }

    fn register_remote(&self, id: u64, sock: &PeerFd, fd: PeerFd) {
        let answer = |head: &[u8; 8], v: u32| {
            let mut a = [0u8; 12];
            a[..8].copy_from_slice(head);
            a[8..].copy_from_slice(&v.to_le_bytes());
            let _ = crate::fabric::send(sock.as_fd(), &a, &[]);
        };
        let ring = match Doorbell::from_peer(fd) {
            Ok(r) => r,
            Err(e) => return answer(REFUSED, code_of(e)),
        };
        let mut s = self.state.lock();
        let Some(conn) = s.conns.get(&id) else { return };
        let peer = conn.account.peer();
        let hold = match conn.account.claim_doorbell("a doorbell") {
            Ok(h) => h,
            Err(r) => {
                tracing::warn!(target: "doca_sdk", "{}: {r}: its engine is not woken by updates (it sees them when it polls)", r.code.name());
                drop(s);
                return answer(REFUSED, code_of(r.code));
            }
        };
        let Some(slot) = s.bells.iter().position(Option::is_none) else {
            let n = s.bells.len();
            drop(s);
            let _ = peer_fail!(Error::Full, "doorbell board: all {n} slots are taken; {peer} refused");
            return answer(REFUSED, code_of(Error::Full));
        };
        s.bells[slot] = Some(Bell { ring, conn: Some(id), _hold: Some(hold) });
        drop(s);
        answer(ACCEPTED, slot as u32);
    }
}

impl Keeper for Board {
    fn accept(&self, sock: Arc<PeerFd>, peer: PeerId) -> Option<u64> {
        self.take(sock, peer)
    }

    fn readable(&self, id: u64, sock: &PeerFd) -> bool {
        self.read_from(id, sock)
    }

    fn revoke(&self) {
        self.revoke_all();
    }
}

/// A code on the wire (the index in this list; anything else reads as `IO_FAILED`).
const CODES: [Error; 4] = [Error::Full, Error::InvalidValue, Error::NoMemory, Error::NotFound];

fn code_of(e: Error) -> u32 {
    CODES.iter().position(|&c| c == e).unwrap_or(CODES.len()) as u32
}

/// An importer's connection to the owner of an object ([`take_board`]).
#[derive(Debug)]
pub struct BoardLink {
    /// Refusing descriptors once the answer is in (what the owner queued before stays on it:
    /// a [`PeerFd`] socket, emptied of its files when dropped).
    sock: Arc<PeerFd>,
    pid: u32,
}

/// Takes the memfd offered under `token` by service `name` as
/// [`crate::rendezvous::take_memfd_watched`] does, and keeps the connection: what was taken,
/// and the link.
pub fn take_board(name: ServiceName, token: &Token) -> Result<(Taken, BoardLink)> {
    let (taken, sock) = crate::rendezvous::take_memfd_kept(name, token)?;
    // The owner answers with codes from now on, never with files (where the kernel can
    // refuse them; the link is closed as a peer's socket is, [`PeerFd`]).
    crate::discard::refuse_descriptors(sock.as_fd());
    Ok((taken, BoardLink { sock: Arc::new(sock), pid: name.pid }))
}

impl BoardLink {
    /// Registers a doorbell (`ring`: the ringing end of a [`Doorbell::pair`], handed over):
    /// the slot whose armed flag this engine sets before it sleeps (below `slots`, else the
    /// owner's answer is refused). `FULL` (budget or slots) and others as the owner answers;
    /// `NOT_FOUND` when the owner is gone; `TIME_OUT` after [`REPLY_WAIT`].
    pub fn register(&self, ring: PeerFd, slots: usize) -> Result<usize> {
        crate::fabric::send(self.sock.as_fd(), REGISTER, &[ring.as_fd()]).map_err(|e| {
            fail!(Error::NotFound, "the exporting process {} closed ({})", self.pid, e.name())
        })?;
        drop(ring);
        let deadline = Instant::now() + REPLY_WAIT;
        loop {
            let mut buf = [0u8; 13];
            match crate::fabric::recv(self.sock.as_fd(), &mut buf)? {
                Recv::Empty => {}
                Recv::Closed => {
                    bail!(Error::NotFound, "the exporting process {} revoked it or exited", self.pid)
                }
                Recv::Packet { len: 12, truncated: false, .. } if &buf[..8] == ACCEPTED => {
                    let slot = u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes")) as usize;
                    if slot >= slots {
                        return Err(peer_fail!(
                            Error::NotFound,
                            "the exporter's answer names slot {slot} of {slots}"
                        ));
                    }
                    return Ok(slot);
                }
                Recv::Packet { len: 12, truncated: false, .. } if &buf[..8] == REFUSED => {
                    let code = u32::from_le_bytes(buf[8..12].try_into().expect("4 bytes")) as usize;
                    return Err(CODES.get(code).copied().unwrap_or(Error::IoFailed));
                }
                Recv::Packet { .. } => {
                    return Err(peer_fail!(Error::NotFound, "the exporter's answer is not one"))
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(Error::TimeOut, "the exporting process {} did not answer in {REPLY_WAIT:?}", self.pid);
            }
            let mut fds = [PollFd::new(&self.sock, PollFlags::IN)];
            let ts = rustix::event::Timespec::try_from(left).unwrap_or_default();
            match rustix::event::poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => bail!(Error::OperatingSystem, "poll: {e}"),
            }
        }
    }

    /// Asks the owner to ring the armed doorbells: one datagram that never blocks (a full
    /// queue means requests are waiting already).
    pub fn ring(&self) {
        let _ = crate::fabric::send(self.sock.as_fd(), RING, &[]);
    }

    /// Whether the owner ended the connection (revoked the object, or exited): one `poll`
    /// that does not wait; stray packets are read and dropped.
    pub fn is_closed(&self) -> bool {
        for _ in 0..BATCH {
            let mut fds = [PollFd::new(&self.sock, PollFlags::IN | PollFlags::RDHUP)];
            match rustix::event::poll(&mut fds, Some(&rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 })) {
                Ok(0) | Err(rustix::io::Errno::INTR) => return false,
                Ok(_) => {}
                Err(_) => return true,
            }
            let ev = fds[0].revents();
            if ev.intersects(PollFlags::HUP | PollFlags::RDHUP | PollFlags::ERR | PollFlags::NVAL) {
                return true;
            }
            let mut buf = [0u8; 16];
            match crate::fabric::recv(self.sock.as_fd(), &mut buf) {
                Ok(Recv::Closed) | Err(_) => return true,
                Ok(_) => {}
            }
        }
        false
    }

    /// The connection, shared (not duplicated: whichever holder lets go last closes it as
    /// [`PeerFd`] says), to watch in an epoll set: readable once the owner ends it (the link
    /// is told with [`BoardLink::is_closed`]).
    pub fn watchable(&self) -> Arc<PeerFd> {
        self.sock.clone()
    }
}

impl AsFd for BoardLink {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}
