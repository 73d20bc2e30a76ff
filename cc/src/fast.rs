//! Fast-path state shared by everything on one side of a connection (any thread): the
//! consumers of this side, the peer's consumers as this side maps them, and the wire
//! records on their rings.
//!
//! A consumer owns a small segment with two rings: the **post ring** (consumer → producer
//! side: "buffer at offset O with R free bytes, token T") and the **completion ring**
//! (producer side → consumer: "token T got L bytes from producer P, immediate data …").
//! The producer side writes the payload straight into the consumer's memory, which it maps
//! (the consumer's own shared memory: one copy; or a shared shadow of it that the consumer
//! copies from: the documented slower fallback). The peer side's producers share each
//! remote consumer's ring ends behind a mutex, so sends from any thread stay in order.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use doca_core::notify::Doorbell;
use doca_core::{fail, Error, Result};
use doca_mmap::RemoteMem;
use parking_lot::Mutex;

use crate::proto::Ctrl;
use crate::transport::ring::{self, Area, End, Ring};
use crate::transport::{self};

/// Ring message kind: a posted receive buffer.
pub(crate) const KIND_POST: u32 = 2;
/// Ring message kind: a filled buffer.
pub(crate) const KIND_DONE: u32 = 3;
/// Post record: token, offset, room.
pub(crate) const POST_LEN: usize = 24;
/// Largest immediate data a send carries (the `cc.max_imm_data_len` default and ceiling).
pub const IMM_MAX: usize = 32;
/// Completion record: token, len, producer, status, imm_len, imm.
/// The immediate data of a fast-path receive, held inline (reading it allocates nothing):
/// derefs to `&[u8]` (`doca_comch_consumer_task_post_recv_get_imm_data` and, as `len()`,
/// `_get_imm_data_len`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ImmData {
    bytes: [u8; IMM_MAX],
    len: u8,
}

impl ImmData {
    pub(crate) fn new(bytes: [u8; IMM_MAX], len: usize) -> ImmData {
        ImmData { bytes, len: len.min(IMM_MAX) as u8 }
    }
}

impl std::ops::Deref for ImmData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl std::fmt::Debug for ImmData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

pub(crate) const DONE_LEN: usize = 8 + 8 + 4 + 4 + 4 + IMM_MAX;

/// Bytes of a consumer's segment with `slots` posts in flight at most.
pub(crate) fn segment_len(slots: u32) -> (usize, usize) {
    let post = ring::ring_bytes(slots, POST_LEN);
    (post + ring::ring_bytes(slots, DONE_LEN), post)
}

/// A posted buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Post {
    pub token: u64,
    pub offset: u64,
    pub room: u64,
}

impl Post {
    pub(crate) fn write(&self, b: &mut [u8]) {
        b[..8].copy_from_slice(&self.token.to_le_bytes());
        b[8..16].copy_from_slice(&self.offset.to_le_bytes());
        b[16..24].copy_from_slice(&self.room.to_le_bytes());
    }

    pub(crate) fn read(b: &[u8]) -> Option<Post> {
        let u = |i: usize| b.get(i..i + 8).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")));
        Some(Post { token: u(0)?, offset: u(8)?, room: u(16)? })
    }
}

/// A filled (or failed) buffer.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Done {
    pub token: u64,
    pub len: u64,
    pub producer: u32,
    pub status: i32,
    pub imm_len: u32,
    pub imm: [u8; IMM_MAX],
}

impl Done {
    pub(crate) fn write(&self, b: &mut [u8]) {
        b[..8].copy_from_slice(&self.token.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..20].copy_from_slice(&self.producer.to_le_bytes());
        b[20..24].copy_from_slice(&self.status.to_le_bytes());
        b[24..28].copy_from_slice(&self.imm_len.to_le_bytes());
        b[28..28 + IMM_MAX].copy_from_slice(&self.imm);
    }

    pub(crate) fn read(b: &[u8]) -> Option<Done> {
        if b.len() != DONE_LEN {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let imm_len = u32_at(24);
        if imm_len as usize > IMM_MAX {
            return None;
        }
        Some(Done {
            token: u64_at(0),
            len: u64_at(8),
            producer: u32_at(16),
            status: u32_at(20) as i32,
            imm_len,
            imm: b[28..28 + IMM_MAX].try_into().expect("IMM_MAX bytes"),
        })
    }
}

/// A consumer of this side, as the connection's owner sees it.
pub(crate) struct LocalConsumer {
    pub(crate) acked: AtomicBool,
    /// The peer side's fast-path doorbell (from its acknowledgement): rung after posting when
    /// the peer's producers sleep.
    pub(crate) peer_bell: OnceLock<Doorbell>,
}

/// A consumer of the peer, mapped here for this side's producers.
pub(crate) struct RemoteConsumer {
    pub(crate) id: u32,
    pub(crate) one_copy: bool,
    pub(crate) mem: RemoteMem,
    /// (post ring, consumer end; completion ring, producer end).
    pub(crate) rings: Mutex<(Ring, Ring)>,
    pub(crate) bell: Doorbell,
    pub(crate) alive: AtomicBool,
}

impl RemoteConsumer {
    /// Maps what a `NewConsumer` packet brought.
    pub(crate) fn open(
        id: u32,
        one_copy: bool,
        mem_offset: u64,
        mem_len: u64,
        slots: u32,
        fds: Vec<OwnedFd>,
    ) -> Result<RemoteConsumer> {
        let [seg, mem, bell]: [OwnedFd; 3] = fds.try_into().map_err(|_| Error::InvalidValue)?;
        let (len, comp_at) = segment_len(slots);
        let area = Area::open(seg, len)?;
        let post = Ring::attach(&area, 0, slots, POST_LEN, End::Consumer)?;
        let comp = Ring::attach(&area, comp_at, slots, DONE_LEN, End::Producer)?;
        let mem = RemoteMem::open(mem, mem_offset as usize, mem_len as usize)?;
        Ok(RemoteConsumer {
            id,
            one_copy,
            mem,
            rings: Mutex::new((post, comp)),
            bell: Doorbell::from_fd(bell),
            alive: AtomicBool::new(true),
        })
    }
}

/// One side's fast-path state of a connection.
pub(crate) struct FastConn {
    side: u32,
    next_id: AtomicU32,
    sock: OnceLock<OwnedFd>,
    /// Rung by the peer's consumers when they post while this side's producers sleep.
    pub(crate) bell: Doorbell,
    pub(crate) local: Mutex<HashMap<u32, Arc<LocalConsumer>>>,
    pub(crate) remote: Mutex<HashMap<u32, Arc<RemoteConsumer>>>,
    /// Producers and consumers of this side that exist (created, not yet dropped).
    pub(crate) producers: AtomicU32,
    pub(crate) consumers: AtomicU32,
}

impl FastConn {
    pub(crate) fn new(is_server: bool) -> Result<FastConn> {
        Ok(FastConn {
            side: if is_server { 1 } else { 2 },
            next_id: AtomicU32::new(0),
            sock: OnceLock::new(),
            bell: Doorbell::new()?,
            local: Mutex::new(HashMap::new()),
            remote: Mutex::new(HashMap::new()),
            producers: AtomicU32::new(0),
            consumers: AtomicU32::new(0),
        })
    }

    /// Counts one more producer or consumer in `count`; `NO_MEMORY` once it holds `max`
    /// (`caps::MAX_PRODUCERS`, `caps::MAX_CONSUMERS`). The context's drop gives it back.
    pub(crate) fn claim(count: &AtomicU32, max: u32, what: &str) -> Result<()> {
        match count.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| (n < max).then_some(n + 1)) {
            Ok(_) => Ok(()),
            Err(_) => {
                Err(fail!(Error::NoMemory, "cc {what}: the connection already has its maximum of {max}"))
            }
        }
    }

    /// An id for a new consumer or producer of this side: unique on the connection (the
    /// server's are odd, the client's even), never 0.
    pub(crate) fn new_id(&self) -> u32 {
        self.next_id.fetch_add(1, Ordering::Relaxed) * 2 + self.side
    }

    /// Lets any thread send control packets on the connection's socket.
    pub(crate) fn set_socket(&self, sock: BorrowedFd<'_>) {
        if let Ok(dup) = sock.try_clone_to_owned() {
            let _ = self.sock.set(dup);
        }
    }

    /// Sends a control packet to the peer (atomic per packet, from any thread).
    pub(crate) fn send(&self, ctrl: &Ctrl, fds: &[BorrowedFd<'_>]) -> Result<()> {
        let sock = self.sock.get().ok_or(Error::NotConnected)?;
        transport::send(sock.as_fd(), &ctrl.encode(), fds)
    }

    /// The connection ended: every remote consumer is gone.
    pub(crate) fn shut(&self) {
        for rc in self.remote.lock().drain() {
            rc.1.alive.store(false, Ordering::Release);
        }
    }
}

/// Counters of the fast path in this process (see [`fast_path_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FastPathStats {
    /// Producer sends written straight into the consumer's memory (exactly one copy).
    pub one_copy_sends: u64,
    /// Producer sends written into a consumer's shadow (the fallback for memory that is not
    /// from the shared allocator).
    pub staged_sends: u64,
    /// Copies consumers made from their shadow into their memory (the fallback's second copy).
    pub staged_copies: u64,
    /// Payload bytes producers wrote.
    pub bytes: u64,
}

pub(crate) static ONE_COPY: AtomicU64 = AtomicU64::new(0);
pub(crate) static STAGED: AtomicU64 = AtomicU64::new(0);
pub(crate) static STAGED_COPIES: AtomicU64 = AtomicU64::new(0);
pub(crate) static BYTES: AtomicU64 = AtomicU64::new(0);

/// The fast-path counters of this process: proof of which copy path the data took.
pub fn fast_path_stats() -> FastPathStats {
    FastPathStats {
        one_copy_sends: ONE_COPY.load(Ordering::Relaxed),
        staged_sends: STAGED.load(Ordering::Relaxed),
        staged_copies: STAGED_COPIES.load(Ordering::Relaxed),
        bytes: BYTES.load(Ordering::Relaxed),
    }
}
