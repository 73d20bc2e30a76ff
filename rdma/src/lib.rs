//! DOCA RDMA (`doca_rdma.h`): connections between two RDMA contexts of (usually) two
//! processes, two-sided send/receive and one-sided read, write and atomic tasks, as a
//! library context on core's plug-in interface.
//!
//! | DOCA                                                   | here                                    |
//! |--------------------------------------------------------|-----------------------------------------|
//! | `struct doca_rdma`, `doca_rdma_create`/`_destroy`/`_as_ctx` | [`Rdma`]                           |
//! | `doca_rdma_cap_*`                                       | [`caps`]                               |
//! | `doca_rdma_set_*`/`_get_*`                              | [`Rdma::set_permissions`], … (one pair per setting) |
//! | `doca_rdma_export`/`_connect`, `struct doca_rdma_connection` | [`Rdma::export`], [`Rdma::connect`], [`Connection`] |
//! | each task type's `_set_conf`, `_allocate_init` and accessors | [`Rdma::task_send_set_conf`], [`SendTask`], [`ReceiveTask`], … |
//! | `struct doca_rdma_srq`, `doca_rdma_srq_*`, `doca_rdma_create_with_srq` (DPA data path) | [`srq`] |
//! | the connection manager: `doca_rdma_addr_create`, `_start_listen_to_port`, `_connect_to_addr`, `_connection_accept`/`_reject`/`_disconnect`, `_set_connection_state_callbacks` | [`cm`], [`Rdma::connect_to_addr`], … |
//!
//! **Connections.** [`Rdma::export`] makes a connection in the exported state and its
//! descriptor ([`wire::Desc`]): the name of this process's memory service (`doca_link`'s
//! rendezvous), a fresh 128-bit token of a connection offer, and this context's permissions.
//! The application carries it to the peer out of band (NVIDIA's samples: files). Both sides
//! export, then both call [`Rdma::connect`] with the other's descriptor: connecting opens a
//! `SOCK_SEQPACKET` socket to the peer's offer (same-uid credentials checked by the link) and
//! names itself with its own token. So each connection has two sockets, one per direction:
//! on the one a side opened it sends its messages and reads their acknowledgements; on the
//! one its offer accepted (adopted once it has connected itself, and only if the peer named
//! itself with the token of the descriptor it was given) it receives the peer's messages.
//! Both are non-blocking and registered in the progress engine's notification set.
//!
//! **Shared rings.** Between two processes of one kernel the sockets only set a connection
//! up, say goodbye and tell a peer's death: the connector's first packet hands over a sealed
//! memfd with two `doca_link::ring` rings (its messages, their answers) and a doorbell, the
//! offerer answers with its own doorbell ([`wire`]'s *shared rings*). Messages, their
//! acknowledgements and receiver-not-ready answers then travel through shared memory: a
//! progress pass reads and writes the rings with no system call; it looks at the sockets on
//! a cadence (`doca_link::cadence`: at most once every 50 µs while busy) and at once after a
//! wake-up. Before sleeping, a side arms its rings (the Dekker pattern of `doca_link::ring`);
//! the peer rings its doorbell after a batch only when it sleeps, so a sleeping application
//! wakes on a message, on an answer and — through the socket — on a peer's death. A message
//! longer than a ring record ([`wire::MSG_RECORD`], 16 KiB) goes as consecutive records,
//! pushed in one batch once the ring has room for the longest message the context may send;
//! the receiver puts it together in a buffer of the connection (allocated once, at its
//! first long message) and delivers it whole. Across the link (below) the sockets carry
//! everything, as before.
//! The connection manager ([`cm`]) makes the same connections by address and port: the
//! two descriptors travel over a listening port's socket instead of the application's
//! channel.
//! Host and DPU on two kernels ([`linked`]): a descriptor whose memory service is not in
//! this side's fabric directory is connected across the TCP link, each socket relayed packet
//! by packet; a connection is over once both its sockets have ended.
//!
//! **Two-sided.** A send's bytes travel in one ring message or socket packet (at most
//! [`caps::max_message_size`]).
//! The receiver delivers each message, in order, into the oldest posted receive task (the
//! received length and immediate data are the task's results) and acknowledges it; the send
//! completes at the acknowledgement. With no receive posted, the receiver answers
//! *receiver not ready* and drops later messages until the same one comes again: the sender
//! waits [`RNR_DELAY`] and resends from it, at most `rnr_retry_count` times in a row
//! ([`Rdma::set_rnr_retry_count`]; 7, the default, retries for ever, as in InfiniBand), then
//! the send fails with `TIME_OUT` — never lost. Up to [`WINDOW`] messages per connection are
//! in flight.
//!
//! **One-sided.** A read, write or atomic names a buffer of a map the peer exported with
//! `doca_mmap_export_rdma` and this side created from that export on the RDMA context's
//! device: the bytes are copied through `doca_mmap`'s import (this process's own mapping of
//! shared memory, or the exporter's library thread for memory registered by address), so the
//! peer's application threads take no part, as on the hardware. Operations on one connection
//! are carried out in submission order (a read or write waits for the sends before it to be
//! acknowledged). Atomics on shared memory (an export of memory the exporter allocated as
//! shared, `SharedMem`, and so mapped here) are one CPU atomic
//! instruction on the word itself (`MapAccess::atomic_cas_u64`/`_fetch_add_u64`): atomic
//! against the exporter's own CPU atomics and every other process's. On memory registered
//! by address (served by the exporter's library thread) they read, compute and write the 8
//! bytes with two copies: atomic against the other atomics of this context only.
//!
//! **The error rule.** As on an RC queue pair, a task that fails — a remote buffer whose
//! map or whose peer context lacks the permission (`NOT_PERMITTED`: the headers document no
//! status, these are this library's), a buffer out of range or too small (`INVALID_VALUE`),
//! a revoked export (`NOT_FOUND`), receiver-not-ready past the retry budget (`TIME_OUT`), a
//! peer gone (`CONNECTION_RESET`) — is fatal to its connection and to the context (DOCA's
//! engine rule, see `doca_core::queue`): the context moves to Stopping and every other task
//! completes with [`FLUSH_STATUS`]; every connection of the failed context closes with a
//! goodbye. A peer that stops its context (or fails) says goodbye (the connection becomes
//! disconnected, nothing fails); a peer that vanishes without it (killed) puts the
//! connection in the error state, which fails the context when tasks were waiting on the
//! connection, or receive tasks are posted with no live connection left.
//!
//! **Hostile peers.** Every packet is checked ([`wire::Hdr::parse`]: kind, lengths against
//! the receiver's limit, descriptors only where the handshake has them), every ring record
//! too ([`wire::Hdr::parse_record`], and a `MORE` only inside the message it continues), and
//! the ring checks the peer's indices; a malformed one closes that connection (error state,
//! logged). A peer can make this side do nothing but deliver what its posted
//! receives asked for.

#![forbid(unsafe_code)]

pub mod caps;
pub mod cm;
pub mod linked;
mod lists;
pub mod srq;
pub mod wire;

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::marker::PhantomData;
use std::os::fd::AsFd;

use doca_link::discard::PeerFd;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use doca_buf::Buf;
use doca_core::ctx::CtxCell;
use doca_core::{
    bail, fail, Ctx, CtxCore, CtxOps, CtxState, Data, Dev, Error, Now, Refused, Result, Started, TaskId,
    TaskLib, TaskPayload, TaskPool, TaskSubmitFlags,
};
use doca_link::cadence::Cadence;
use doca_link::notify::{Doorbell, EventFd, Timer, Watched};
use doca_link::rendezvous::{Offer, Offered, Token};
use doca_link::ring::{Area, End, Ring};
use doca_link::Recv;
use doca_mmap::AccessFlags;

use crate::wire::{
    records_for, Desc, Hdr, Kind, ACK_AT, ACK_SLOTS, AREA_LEN, CHUNK, FLAG_IMM, HDR_LEN, MSG_RECORD,
    MSG_SLOTS,
};

/// Status of the tasks a stop or a failure flushes: `DOCA_ERROR_SHUTDOWN`.
pub const FLUSH_STATUS: Error = doca_core::queue::FLUSH_STATUS;
/// How long a sender waits after a *receiver not ready* before sending again.
pub const RNR_DELAY: Duration = Duration::from_millis(1);
/// Messages (sends, writes with immediate) in flight per connection, unacknowledged.
pub const WINDOW: usize = 64;
/// `rnr_retry_count` that never gives up.
pub const RNR_INFINITE: u8 = 7;
/// Packets one pass reads from a connection's socket, each way, at most: a peer flooding its
/// socket (with packets that are dropped, such as messages out of sequence) does not hold
/// the pass; the rest is read at the next one (the watched socket stays readable).
pub const SOCKET_PACKETS_PER_PASS: usize = 256;

/// What is left of a pass's [`SOCKET_PACKETS_PER_PASS`] for one socket.
struct PacketBudget(usize);

impl PacketBudget {
    fn new() -> Self {
        PacketBudget(SOCKET_PACKETS_PER_PASS)
    }

    /// One more packet may be read (false: the pass's share is spent).
    fn take(&mut self) -> bool {
        let left = self.0 > 0;
        self.0 = self.0.saturating_sub(1);
        left
    }
}
/// How long a connection whose peer closed one of its two sockets waits for the other's end
/// (across the link each is relayed on a stream of its own, so their ends may come apart);
/// then it is over as if both had ended. A peer that keeps one open is no reason to wait longer.
pub const HALF_CLOSE_WAIT: Duration = Duration::from_secs(2);

/// `enum doca_rdma_transport_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportType {
    /// `DOCA_RDMA_TRANSPORT_TYPE_RC` (0).
    Rc = 0,
    /// `DOCA_RDMA_TRANSPORT_TYPE_DC` (1).
    Dc = 1,
}

impl TransportType {
    /// From the C value (`INVALID_VALUE` otherwise).
    pub fn from_raw(v: u32) -> Result<TransportType> {
        match v {
            0 => Ok(TransportType::Rc),
            1 => Ok(TransportType::Dc),
            _ => Err(fail!(Error::InvalidValue, "rdma: unknown transport type {v}")),
        }
    }
}

/// `enum doca_rdma_opcode`: what a receive task received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    /// `DOCA_RDMA_OPCODE_RECV_SEND` (0).
    RecvSend = 0,
    /// `DOCA_RDMA_OPCODE_RECV_SEND_WITH_IMM` (1).
    RecvSendWithImm = 1,
    /// `DOCA_RDMA_OPCODE_RECV_WRITE_WITH_IMM` (2).
    RecvWriteWithImm = 2,
}

/// `struct doca_rdma_connection`: one connection of a context (a copyable name; a name of a
/// connection of an earlier run, or of another context, is refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Connection {
    idx: u32,
    gen: u32,
}

impl Connection {
    /// `doca_rdma_connection_get_id`.
    pub fn id(&self) -> u32 {
        self.idx
    }
}

/// Where a connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    /// Exported, waiting for [`Rdma::connect`].
    Exported,
    /// Connected: tasks may use it.
    Connected,
    /// The peer stopped its context (a clean goodbye).
    Disconnected,
    /// The peer vanished, misbehaved, or a task on it failed.
    Error,
    /// Connection manager, server side: a client asked; waiting for
    /// [`Rdma::connection_accept`] or [`Rdma::connection_reject`].
    Requested,
    /// Connection manager, client side: asked the listener; waiting for its answer.
    Connecting,
}

impl ConnState {
    /// Counts against `max_num_connections` (not yet over).
    fn is_live(self) -> bool {
        !matches!(self, ConnState::Disconnected | ConnState::Error)
    }
}

/// The settings of a context (`doca_rdma_set_*`), fixed while it runs.
#[derive(Clone, Copy, Debug)]
struct Config {
    perms: u32,
    gid_index: u32,
    transport: TransportType,
    send_queue_size: u32,
    recv_queue_size: u32,
    max_send_buf_list_len: u32,
    recv_buf_list_len: u32,
    mtu: u32,
    grh: bool,
    sl: u32,
    max_conns: u16,
    conn_request_timeout: u16,
    rnr_retry: u8,
    /// DOCA 2.5/2.6's start: Starting until the connection is connected.
    running_on_connect: bool,
}

/// What each sending task type is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum Code {
    Send,
    SendImm,
    Read,
    Write,
    WriteImm,
    Cas,
    Fadd,
    SeGet,
    SeSet,
    SeAdd,
}

impl Code {
    fn is_message(self) -> bool {
        matches!(self, Code::Send | Code::SendImm | Code::WriteImm)
    }
}

/// A queued task: its type and id.
#[derive(Clone, Copy, Debug)]
struct Job {
    code: Code,
    id: TaskId,
}

/// The fields of every sending task type (send, send with immediate, read, write, write with
/// immediate, the two atomics).
#[derive(Default)]
#[doc(hidden)]
pub struct OpFields {
    conn: Option<Connection>,
    src: Option<Buf>,
    dst: Option<Buf>,
    imm: u32,
    a: u64,
    b: u64,
    result_len: u32,
    /// A write with immediate: its bytes were written (a resend only sends the notice).
    wrote: bool,
    /// The peer's sync event (the remote sync event tasks).
    se: Option<doca_sync_event::RemoteNet>,
}

/// A sending task's payload; `K` says which type.
#[doc(hidden)]
pub struct Op<K> {
    f: OpFields,
    _k: PhantomData<K>,
}

impl<K> Default for Op<K> {
    fn default() -> Self {
        Op { f: OpFields::default(), _k: PhantomData }
    }
}

/// A sending task type.
#[doc(hidden)]
pub trait OpKind: 'static {
    const CODE: Code;
    const FAULT: &'static str;
    fn pool(ops: &RdmaOps) -> &TaskPool<Op<Self>>
    where
        Self: Sized;
}

macro_rules! op_kinds {
    ($($k:ident $code:ident $fault:literal $pool:ident;)*) => {$(
        #[doc(hidden)]
        pub struct $k;
        impl OpKind for $k {
            const CODE: Code = Code::$code;
            const FAULT: &'static str = $fault;
            fn pool(ops: &RdmaOps) -> &TaskPool<Op<Self>> {
                &ops.$pool
            }
        }
    )*};
}

op_kinds! {
    SendK Send "rdma.send" send_pool;
    SendImmK SendImm "rdma.send_imm" send_imm_pool;
    ReadK Read "rdma.read" read_pool;
    WriteK Write "rdma.write" write_pool;
    WriteImmK WriteImm "rdma.write_imm" write_imm_pool;
    CasK Cas "rdma.atomic_cmp_swp" cas_pool;
    FaddK Fadd "rdma.atomic_fetch_add" fadd_pool;
    SeGetK SeGet "rdma.remote_net_sync_event_get" se_get_pool;
    SeSetK SeSet "rdma.remote_net_sync_event_notify_set" se_set_pool;
    SeAddK SeAdd "rdma.remote_net_sync_event_notify_add" se_add_pool;
}

impl<K: OpKind> TaskPayload for Op<K> {
    type Lib = RdmaOps;
    const FAULT_KIND: &'static str = K::FAULT;
}

/// A receive task's payload.
#[derive(Default)]
#[doc(hidden)]
pub struct RecvFields {
    dst: Option<Buf>,
    result_len: u32,
    imm: u32,
    opcode: Option<Opcode>,
    from: Option<Connection>,
}

impl TaskPayload for RecvFields {
    type Lib = RdmaOps;
    const FAULT_KIND: &'static str = "rdma.receive";
}

doca_core::task_handle! {
    /// `struct doca_rdma_task_send`: sends the source's data to the peer's oldest receive.
    pub struct SendTask(Op<SendK>);
}
doca_core::task_handle! {
    /// `struct doca_rdma_task_send_imm`: a send with 32 bits of immediate data.
    pub struct SendImmTask(Op<SendImmK>);
}
doca_core::task_handle! {
    /// `struct doca_rdma_task_read`: reads the peer's memory (source) into a local buffer.
    pub struct ReadTask(Op<ReadK>);
}
doca_core::task_handle! {
    /// `struct doca_rdma_task_write`: writes a local buffer into the peer's memory.
    pub struct WriteTask(Op<WriteK>);
}
doca_core::task_handle! {
    /// `struct doca_rdma_task_write_imm`: a write, then immediate data to a peer's receive.
    pub struct WriteImmTask(Op<WriteImmK>);
}
doca_core::task_handle! {
    /// `struct doca_rdma_task_atomic_cmp_swp`: compare-and-swap of 8 bytes of the peer's memory.
    pub struct CmpSwpTask(Op<CasK>);
}
doca_core::task_handle! {
    /// `struct doca_rdma_task_atomic_fetch_add`: fetch-and-add on 8 bytes of the peer's memory.
    pub struct FetchAddTask(Op<FaddK>);
}
doca_core::task_handle! {
    /// `struct doca_rdma_task_receive`: a posted receive.
    pub struct ReceiveTask(RecvFields);
}
doca_core::task_handle! {
    /// `struct doca_rdma_task_remote_net_sync_event_get`: reads the peer's sync event's value
    /// (8 bytes, host order) into a local buffer.
    pub struct RemoteNetGetTask(Op<SeGetK>);
}
doca_core::task_handle! {
    /// `struct doca_rdma_task_remote_net_sync_event_notify_set`: sets the peer's sync event
    /// to the 8 bytes (host order) at a local buffer's data.
    pub struct RemoteNetNotifySetTask(Op<SeSetK>);
}
doca_core::task_handle! {
    /// `struct doca_rdma_task_remote_net_sync_event_notify_add`: adds to the peer's sync
    /// event; the value before lands in a local result buffer (8 bytes, host order).
    pub struct RemoteNetNotifyAddTask(Op<SeAddK>);
}

macro_rules! se_accessors {
    ($($t:ident),*) => {$(
        impl $t {
            /// `_get_sync_event`.
            pub fn sync_event(&self) -> Option<doca_sync_event::RemoteNet> {
                self.0.with_payload(|p| p.f.se.clone())
            }
            /// `_set_sync_event`.
            pub fn set_sync_event(&self, se: Option<&doca_sync_event::RemoteNet>) {
                self.0.with_payload(|p| p.f.se = se.cloned());
            }
        }
    )*};
}
se_accessors!(RemoteNetGetTask, RemoteNetNotifySetTask, RemoteNetNotifyAddTask);

impl RemoteNetGetTask {
    /// `_get_result_len`: bytes written to the destination (8 after completion).
    pub fn result_len(&self) -> u32 {
        self.0.with_payload(|p| p.f.result_len)
    }
}

impl RemoteNetNotifyAddTask {
    /// `_get_add_data`.
    pub fn add_data(&self) -> u64 {
        self.0.with_payload(|p| p.f.a)
    }
    /// `_set_add_data`.
    pub fn set_add_data(&self, v: u64) {
        self.0.with_payload(|p| p.f.a = v);
    }
}

macro_rules! common_accessors {
    ($($t:ident),*) => {$(
        impl $t {
            /// `_get_rdma_connection`.
            pub fn connection(&self) -> Option<Connection> {
                self.0.with_payload(|p| p.f.conn)
            }
            /// `_set_rdma_connection`.
            pub fn set_connection(&self, conn: Connection) {
                self.0.with_payload(|p| p.f.conn = Some(conn));
            }
        }
    )*};
}
common_accessors!(
    SendTask,
    SendImmTask,
    ReadTask,
    WriteTask,
    WriteImmTask,
    CmpSwpTask,
    FetchAddTask,
    RemoteNetGetTask,
    RemoteNetNotifySetTask,
    RemoteNetNotifyAddTask
);

macro_rules! src_accessors {
    ($($t:ident),*) => {$(
        impl $t {
            /// `_get_src_buf`.
            pub fn src(&self) -> Option<Buf> {
                self.0.with_payload(|p| p.f.src.clone())
            }
            /// `_set_src_buf`.
            pub fn set_src(&self, b: Option<&Buf>) {
                self.0.with_payload(|p| p.f.src = b.cloned());
            }
        }
    )*};
}
src_accessors!(SendTask, SendImmTask, ReadTask, WriteTask, WriteImmTask, RemoteNetNotifySetTask);

macro_rules! dst_accessors {
    ($($t:ident),*) => {$(
        impl $t {
            /// `_get_dst_buf`.
            pub fn dst(&self) -> Option<Buf> {
                self.0.with_payload(|p| p.f.dst.clone())
            }
            /// `_set_dst_buf`.
            pub fn set_dst(&self, b: Option<&Buf>) {
                self.0.with_payload(|p| p.f.dst = b.cloned());
            }
        }
    )*};
}
dst_accessors!(ReadTask, WriteTask, WriteImmTask, CmpSwpTask, FetchAddTask, RemoteNetGetTask);

macro_rules! imm_accessors {
    ($($t:ident),*) => {$(
        impl $t {
            /// `_get_immediate_data` (as given: big-endian in C).
            pub fn immediate_data(&self) -> u32 {
                self.0.with_payload(|p| p.f.imm)
            }
            /// `_set_immediate_data`.
            pub fn set_immediate_data(&self, imm: u32) {
                self.0.with_payload(|p| p.f.imm = imm);
            }
        }
    )*};
}
imm_accessors!(SendImmTask, WriteImmTask);

macro_rules! result_buf_accessors {
    ($($t:ident),*) => {$(
        impl $t {
            /// `_get_result_buf`: where the old 8 bytes land.
            pub fn result(&self) -> Option<Buf> {
                self.0.with_payload(|p| p.f.src.clone())
            }
            /// `_set_result_buf`.
            pub fn set_result(&self, b: Option<&Buf>) {
                self.0.with_payload(|p| p.f.src = b.cloned());
            }
        }
    )*};
}
result_buf_accessors!(CmpSwpTask, FetchAddTask, RemoteNetNotifyAddTask);

impl ReadTask {
    /// `doca_rdma_task_read_get_result_len`: bytes read (after completion).
    pub fn result_len(&self) -> u32 {
        self.0.with_payload(|p| p.f.result_len)
    }
}

impl CmpSwpTask {
    /// `_get_cmp_data`.
    pub fn cmp_data(&self) -> u64 {
        self.0.with_payload(|p| p.f.a)
    }
    /// `_set_cmp_data`.
    pub fn set_cmp_data(&self, v: u64) {
        self.0.with_payload(|p| p.f.a = v);
    }
    /// `_get_swap_data`.
    pub fn swap_data(&self) -> u64 {
        self.0.with_payload(|p| p.f.b)
    }
    /// `_set_swap_data`.
    pub fn set_swap_data(&self, v: u64) {
        self.0.with_payload(|p| p.f.b = v);
    }
}

impl FetchAddTask {
    /// `_get_add_data`.
    pub fn add_data(&self) -> u64 {
        self.0.with_payload(|p| p.f.a)
    }
    /// `_set_add_data`.
    pub fn set_add_data(&self, v: u64) {
        self.0.with_payload(|p| p.f.a = v);
    }
}

impl ReceiveTask {
    /// `doca_rdma_task_receive_get_dst_buf`.
    pub fn dst(&self) -> Option<Buf> {
        self.0.with_payload(|p| p.dst.clone())
    }
    /// `doca_rdma_task_receive_set_dst_buf`.
    pub fn set_dst(&self, b: Option<&Buf>) {
        self.0.with_payload(|p| p.dst = b.cloned());
    }
    /// `doca_rdma_task_receive_get_result_len`: bytes received.
    pub fn result_len(&self) -> u32 {
        self.0.with_payload(|p| p.result_len)
    }
    /// `doca_rdma_task_receive_get_result_immediate_data` (0 without).
    pub fn result_immediate_data(&self) -> u32 {
        self.0.with_payload(|p| p.imm)
    }
    /// `doca_rdma_task_receive_get_result_opcode` (`None` before completion).
    pub fn result_opcode(&self) -> Option<Opcode> {
        self.0.with_payload(|p| p.opcode)
    }
    /// `doca_rdma_task_receive_get_result_rdma_connection`.
    pub fn result_connection(&self) -> Option<Connection> {
        self.0.with_payload(|p| p.from)
    }
}

/// One direction's socket: the fd, a duplicate in the engine's notification set, and the
/// direction's shared rings when the peer is a process of this kernel.
struct Sock {
    /// Shared with the engine's set, not duplicated: whichever lets go last closes it as a
    /// peer's socket is closed ([`PeerFd`]).
    fd: Arc<PeerFd>,
    _watch: Option<Watched<Arc<PeerFd>>>,
    rings: Option<Box<Rings>>,
}

impl Sock {
    fn new(fd: PeerFd, core: &CtxCore) -> Sock {
        let fd = Arc::new(fd);
        let watch = core.watch(fd.clone()).ok();
        Sock { fd, _watch: watch, rings: None }
    }

    fn send(&self, bytes: &[u8]) -> doca_link::Result<()> {
        doca_link::send(self.fd.as_fd(), bytes, &[])
    }
}

/// One direction's pair of shared rings ([`wire`]'s *shared rings*): on the socket this side
/// opened, `tx` carries its messages and `rx` their answers; on the peer's socket, `rx` the
/// peer's messages and `tx` the answers.
struct Rings {
    tx: Ring,
    rx: Ring,
    /// Rings the peer's doorbell: after a batch, when the peer sleeps waiting for it (the
    /// connector has it once the offerer's `READY` came).
    peer: Option<Doorbell>,
    /// This side's doorbell for this direction, in the engine's notification set.
    wake: Watched<Doorbell>,
}

impl Rings {
    /// After a pass: rings the peer when it sleeps waiting for what this side published or
    /// freed (one fence for the two rings when either moved, a syscall only for a sleeping
    /// peer).
    fn wake_peer(&self) {
        let (a, b) = Ring::pair_needs_wakeup(&self.tx, &self.rx);
        if a || b {
            if let Some(p) = &self.peer {
                p.ring();
            }
        }
    }

    fn is_corrupt(&self) -> bool {
        self.tx.is_corrupt() || self.rx.is_corrupt()
    }
}

/// A message being put together from its ring records.
struct Assembly {
    hdr: Hdr,
    bytes: Vec<u8>,
}

/// One connection.
struct Conn {
    gen: u32,
    state: ConnState,
    desc: Vec<u8>,
    token: Token,
    /// The offer the peer connects to (withdrawn once its socket is adopted).
    offered: Option<Offered>,
    /// Where the offer's handler (the link's service thread) leaves the peer's socket.
    inbox: Arc<Mutex<Option<PeerFd>>>,
    remote: Option<Desc>,
    /// The socket this side opened: its messages out, acknowledgements in.
    out: Option<Sock>,
    /// The socket the peer opened: its messages in, acknowledgements out.
    inc: Option<Sock>,
    /// The peer named itself on `inc`.
    inc_named: bool,
    /// An acknowledgement the socket (or the answers ring) had no room for.
    pending_reply: Option<[u8; HDR_LEN]>,
    /// Shared rings: the message whose `MORE` records are coming (its bytes kept between
    /// messages: allocated once per connection, at its first long message).
    asm: Assembly,
    /// Shared rings: whether `asm` holds a message in progress.
    assembling: bool,
    queue: VecDeque<Job>,
    inflight: VecDeque<(u32, Job)>,
    next_seq: u32,
    rnr_retries: u32,
    backoff_until: Option<Instant>,
    /// One socket's end came, the other's not yet: when to stop waiting for it.
    half_closed: Option<Instant>,
    /// When the messages in flight have waited too long for an answer, and `answers` then
    /// (set by the first look, or sleep, that finds messages in flight; a look that finds
    /// `answers` moved on sets it again; no clock read on the message path).
    answer_due: Option<(Instant, u32)>,
    /// Answers (acknowledgements, receiver-not-ready) to the oldest message so far, wrapping.
    answers: u32,
    expect: u32,
    user_data: Data,
    /// The peer said goodbye.
    bye: bool,
    /// Made by the connection manager (its state callbacks report it).
    cm: Option<cm::CmConn>,
    /// Host side of a link: the presence that lets the DPU's connectors reach the offer.
    _presence: Option<doca_link::remote::Presence>,
    /// Its own row on the status page while it is connected (claimed once, at the first pass
    /// that finds it connected; let go once it is over): messages each way, its window.
    row: doca_core::status::Entry,
    /// A row was asked for (granted or not: never asked again).
    rowed: bool,
}

/// `struct doca_rdma`'s library part (named by the task payloads; reached through [`Rdma`]).
#[doc(hidden)]
pub struct RdmaOps {
    dev: Dev,
    cfg: Cell<Config>,
    conns: RefCell<Vec<Option<Conn>>>,
    next_gen: Cell<u32>,
    /// Tasks naming no live connection: failed at the next pass.
    stray: RefCell<VecDeque<Job>>,
    posted: RefCell<VecDeque<TaskId>>,
    bell: Arc<EventFd>,
    bell_watch: RefCell<Option<Watched<EventFd>>>,
    timer: RefCell<Option<Watched<Timer>>>,
    bytes_per_pass: Cell<usize>,
    /// How long a message waits for its answer (`rdma.ack_timeout_ms`).
    ack_timeout: Cell<Duration>,
    /// When a pass looks at the connections' sockets (shared rings carry the traffic; the
    /// sockets only a goodbye or the peer's end): on a cadence, and at once after a wake-up.
    cadence: Cadence,
    /// Stopped with connections: they close at the next progress.
    closing: Cell<bool>,
    max_msg: Cell<usize>,
    /// The longest read or write (`rdma.max_rdma_size`), read at start.
    max_rdma: Cell<u64>,
    rx: RefCell<Vec<u8>>,
    tx: RefCell<Vec<u8>>,
    send_pool: TaskPool<Op<SendK>>,
    send_imm_pool: TaskPool<Op<SendImmK>>,
    read_pool: TaskPool<Op<ReadK>>,
    write_pool: TaskPool<Op<WriteK>>,
    write_imm_pool: TaskPool<Op<WriteImmK>>,
    cas_pool: TaskPool<Op<CasK>>,
    fadd_pool: TaskPool<Op<FaddK>>,
    se_get_pool: TaskPool<Op<SeGetK>>,
    se_set_pool: TaskPool<Op<SeSetK>>,
    se_add_pool: TaskPool<Op<SeAddK>>,
    recv_pool: TaskPool<RecvFields>,
    /// The connection manager's listening ports, requests and pending callbacks.
    cm: cm::CmState,
    /// The shared receive queue of a context made by [`Rdma::create_with_srq`].
    srq: std::cell::OnceCell<srq::Attached>,
    /// This context's row on the status page (`doca_emu ls`/`watch`): live connections,
    /// receives posted, messages in flight of the window, messages and bytes each way.
    status: doca_core::status::Entry,
}

/// `struct doca_rdma`: an RDMA context on one device.
pub struct Rdma {
    cell: Rc<CtxCell<RdmaOps>>,
}

/// What a failure found in a pass: fatal to the context once the pass let go of its state.
pub(crate) type Fatal = Option<(Error, String)>;

impl Rdma {
    /// `doca_rdma_create`: a context on `dev` (`NOT_SUPPORTED` when the topology gives the
    /// device no RDMA).
    pub fn create(dev: &Dev) -> Result<Rdma> {
        doca_core::require(caps::is_supported(dev.as_devinfo()), "doca_rdma_create")?;
        linked::register();
        let info = dev.as_devinfo();
        let cfg = Config {
            perms: AccessFlags::LOCAL_READ_WRITE.bits(),
            gid_index: 0,
            transport: TransportType::Rc,
            send_queue_size: 64.min(caps::max_send_queue_size(info)?),
            recv_queue_size: 64.min(caps::max_recv_queue_size(info)?),
            max_send_buf_list_len: 1,
            recv_buf_list_len: 1,
            mtu: 1024,
            grh: false,
            sl: 0,
            max_conns: 1,
            conn_request_timeout: 5000,
            rnr_retry: RNR_INFINITE,
            running_on_connect: false,
        };
        let bell = Arc::new(EventFd::new()?);
        let cell = CtxCell::new(|weak| RdmaOps {
            dev: dev.clone(),
            cfg: Cell::new(cfg),
            conns: RefCell::new(Vec::new()),
            next_gen: Cell::new(1),
            stray: RefCell::default(),
            posted: RefCell::default(),
            bell,
            bell_watch: RefCell::new(None),
            timer: RefCell::new(None),
            bytes_per_pass: Cell::new(1 << 20),
            ack_timeout: Cell::new(Duration::from_millis(caps::ACK_TIMEOUT_MS.default)),
            cadence: Cadence::new(),
            closing: Cell::new(false),
            max_msg: Cell::new(65536),
            max_rdma: Cell::new(1 << 30),
            rx: RefCell::new(Vec::new()),
            tx: RefCell::new(Vec::new()),
            send_pool: TaskPool::new(weak.clone()),
            send_imm_pool: TaskPool::new(weak.clone()),
            read_pool: TaskPool::new(weak.clone()),
            write_pool: TaskPool::new(weak.clone()),
            write_imm_pool: TaskPool::new(weak.clone()),
            cas_pool: TaskPool::new(weak.clone()),
            fadd_pool: TaskPool::new(weak.clone()),
            se_get_pool: TaskPool::new(weak.clone()),
            se_set_pool: TaskPool::new(weak.clone()),
            se_add_pool: TaskPool::new(weak.clone()),
            recv_pool: TaskPool::new(weak.clone()),
            cm: cm::CmState::default(),
            srq: std::cell::OnceCell::new(),
            status: doca_core::status::Entry::claim(doca_core::status::Identity {
                kind: "rdma",
                dev: Some(dev.as_devinfo().pci_addr()),
                rep: None,
                name: "rdma context",
                conn_id: 0,
            }),
        });
        cell.core().show_state_in(&cell.ops().status);
        Ok(Rdma { cell })
    }

    fn ops(&self) -> &RdmaOps {
        self.cell.ops()
    }

    fn core(&self) -> &CtxCore {
        self.cell.core()
    }

    /// `doca_rdma_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        Ctx::from(self.cell.clone())
    }

    /// `doca_rdma_destroy`: Idle only (`BAD_STATE`, and the context back).
    pub fn destroy(self) -> Result<(), Refused<Rdma>> {
        match self.cell.core().destroy() {
            Ok(()) => {
                self.ops().conns.borrow_mut().clear();
                Ok(())
            }
            Err(e) => Err(Refused::new(e, self)),
        }
    }

    /// The device.
    pub fn dev(&self) -> &Dev {
        &self.ops().dev
    }

    fn configure(&self, what: &str, f: impl FnOnce(&mut Config)) -> Result<()> {
        self.core().require_idle(what)?;
        let mut c = self.ops().cfg.get();
        f(&mut c);
        self.ops().cfg.set(c);
        Ok(())
    }

    fn cfg(&self) -> Config {
        self.ops().cfg.get()
    }

    /// `doca_rdma_set_permissions`: what the peer may do to memory through this context
    /// (`DOCA_ACCESS_FLAG_*`: LOCAL_READ_WRITE, RDMA_READ, RDMA_WRITE, RDMA_ATOMIC; others
    /// `INVALID_VALUE`). Idle only.
    pub fn set_permissions(&self, mask: u32) -> Result<()> {
        self.core().require_idle("rdma set_permissions")?; // the state first, as DOCA's library
        let allowed = (AccessFlags::LOCAL_READ_WRITE
            | AccessFlags::RDMA_READ
            | AccessFlags::RDMA_WRITE
            | AccessFlags::RDMA_ATOMIC)
            .bits();
        if mask & !allowed != 0 {
            bail!(
                Error::InvalidValue,
                "rdma set_permissions: {mask:#x} holds flags an RDMA context does not take"
            );
        }
        self.configure("set_permissions", |c| c.perms = mask)
    }

    /// `doca_rdma_get_permissions`.
    pub fn permissions(&self) -> u32 {
        self.cfg().perms
    }

    /// `doca_rdma_set_gid_index`: below `rdma.gid_table_size` (`INVALID_VALUE`). Idle only.
    pub fn set_gid_index(&self, index: u32) -> Result<()> {
        self.core().require_idle("rdma set_gid_index")?; // the state first, as DOCA's library
        let n = caps::gid_table_size(self.dev().as_devinfo())?;
        if index >= n {
            bail!(
                Error::InvalidValue,
                "rdma set_gid_index: {index} beyond the GID table of {n} (cap rdma.gid_table_size)"
            );
        }
        self.configure("set_gid_index", |c| c.gid_index = index)
    }

    /// `doca_rdma_get_gid_index`.
    pub fn gid_index(&self) -> u32 {
        self.cfg().gid_index
    }

    /// `doca_rdma_set_transport_type`: RC, or DC where the device has it. Idle only.
    pub fn set_transport_type(&self, t: TransportType) -> Result<()> {
        self.core().require_idle("rdma set_transport_type")?; // the state first, as DOCA's library
        doca_core::require(
            caps::transport_type_is_supported(self.dev().as_devinfo(), t),
            "doca_rdma_set_transport_type",
        )?;
        self.configure("set_transport_type", |c| c.transport = t)
    }

    /// `doca_rdma_get_transport_type`.
    pub fn transport_type(&self) -> TransportType {
        self.cfg().transport
    }

    /// `doca_rdma_set_send_queue_size`: 0 is `INVALID_VALUE`, above `rdma.max_send_queue_size`
    /// `NOT_SUPPORTED`; rounded up to a power of 2. Idle only (checked first: `BAD_STATE`).
    pub fn set_send_queue_size(&self, n: u32) -> Result<()> {
        self.core().require_idle("rdma set_send_queue_size")?; // the state first, as DOCA's library
        let max = caps::max_send_queue_size(self.dev().as_devinfo())?;
        if n == 0 {
            bail!(Error::InvalidValue, "rdma set_send_queue_size: a queue of 0");
        }
        if n > max {
            bail!(
                Error::NotSupported,
                "rdma set_send_queue_size: {n} above the device's {max} (cap rdma.max_send_queue_size)"
            );
        }
        // Rounded up to a power of 2, as DOCA's (the getter answers the size in use).
        let n = n.checked_next_power_of_two().unwrap_or(max).min(max);
        self.configure("set_send_queue_size", |c| c.send_queue_size = n)
    }

    /// `doca_rdma_get_send_queue_size`.
    pub fn send_queue_size(&self) -> u32 {
        self.cfg().send_queue_size
    }

    /// `doca_rdma_set_recv_queue_size`: as [`Rdma::set_send_queue_size`]
    /// (`rdma.max_recv_queue_size`). Idle only.
    pub fn set_recv_queue_size(&self, n: u32) -> Result<()> {
        self.core().require_idle("rdma set_recv_queue_size")?; // the state first, as DOCA's library
        srq::refuse_receive(self.ops(), "set_recv_queue_size", Error::BadState)?;
        let max = caps::max_recv_queue_size(self.dev().as_devinfo())?;
        if n == 0 {
            bail!(Error::InvalidValue, "rdma set_recv_queue_size: a queue of 0");
        }
        if n > max {
            bail!(
                Error::NotSupported,
                "rdma set_recv_queue_size: {n} above the device's {max} (cap rdma.max_recv_queue_size)"
            );
        }
        // Rounded up to a power of 2, as DOCA's (the getter answers the size in use).
        let n = n.checked_next_power_of_two().unwrap_or(max).min(max);
        self.configure("set_recv_queue_size", |c| c.recv_queue_size = n)
    }

    /// `doca_rdma_get_recv_queue_size`.
    pub fn recv_queue_size(&self) -> u32 {
        self.cfg().recv_queue_size
    }

    /// `doca_rdma_set_max_send_buf_list_len`: the longest buffer list a send, send with
    /// immediate, write or write with immediate gathers from, 1..=`rdma.max_buf_list_len`
    /// (`INVALID_VALUE` beyond). Idle only.
    pub fn set_max_send_buf_list_len(&self, n: u32) -> Result<()> {
        self.core().require_idle("rdma set_max_send_buf_list_len")?; // the state first, as DOCA's library
        let max = caps::max_buf_list_len(self.dev().as_devinfo())?;
        if n == 0 || n > max {
            bail!(
                Error::InvalidValue,
                "rdma set_max_send_buf_list_len: {n} outside 1..={max} (cap rdma.max_buf_list_len)"
            );
        }
        self.configure("set_max_send_buf_list_len", |c| c.max_send_buf_list_len = n)
    }

    /// `doca_rdma_get_max_send_buf_list_len`.
    pub fn max_send_buf_list_len(&self) -> u32 {
        self.cfg().max_send_buf_list_len
    }

    /// `doca_rdma_task_receive_set_dst_buf_list_len`: the longest buffer list a receive
    /// scatters into, 1..=`rdma.max_buf_list_len` (`INVALID_VALUE` beyond). Idle only.
    pub fn set_recv_buf_list_len(&self, n: u32) -> Result<()> {
        self.core().require_idle("rdma set_recv_buf_list_len")?; // the state first, as DOCA's library
        srq::refuse_receive(self.ops(), "task_receive_set_dst_buf_list_len", Error::BadState)?;
        let max = caps::max_buf_list_len(self.dev().as_devinfo())?;
        if n == 0 || n > max {
            bail!(
                Error::InvalidValue,
                "rdma task_receive_set_dst_buf_list_len: {n} outside 1..={max} (cap rdma.max_buf_list_len)"
            );
        }
        self.configure("task_receive_set_dst_buf_list_len", |c| c.recv_buf_list_len = n)
    }

    /// `doca_rdma_task_receive_get_dst_buf_list_len`.
    pub fn recv_buf_list_len(&self) -> u32 {
        self.cfg().recv_buf_list_len
    }

    /// `doca_rdma_set_mtu`: 256, 512, 1024, 2048 or 4096 bytes (`INVALID_VALUE`). Idle only.
    pub fn set_mtu(&self, bytes: u32) -> Result<()> {
        self.core().require_idle("rdma set_mtu")?; // the state first, as DOCA's library
        if !wire::MTUS.contains(&bytes) {
            bail!(Error::InvalidValue, "rdma set_mtu: {bytes} is not an IB MTU");
        }
        self.configure("set_mtu", |c| c.mtu = bytes)
    }

    /// `doca_rdma_get_mtu`, in bytes.
    pub fn mtu(&self) -> u32 {
        self.cfg().mtu
    }

    /// `doca_rdma_set_grh_enabled`. Idle only.
    pub fn set_grh_enabled(&self, on: bool) -> Result<()> {
        self.core().require_idle("rdma set_grh_enabled")?; // the state first, as DOCA's library
        self.configure("set_grh_enabled", |c| c.grh = on)
    }

    /// `doca_rdma_get_grh_enabled`.
    pub fn grh_enabled(&self) -> bool {
        self.cfg().grh
    }

    /// `doca_rdma_set_sl`: service level 0..=15. Idle only.
    pub fn set_sl(&self, sl: u32) -> Result<()> {
        self.core().require_idle("rdma set_sl")?; // the state first, as DOCA's library
        if sl > 15 {
            bail!(Error::InvalidValue, "rdma set_sl: service level {sl} above 15");
        }
        self.configure("set_sl", |c| c.sl = sl)
    }

    /// `doca_rdma_get_sl`.
    pub fn sl(&self) -> u32 {
        self.cfg().sl
    }

    /// `doca_rdma_set_max_num_connections`: 0 is `NOT_SUPPORTED` (the header's code), above
    /// `rdma.max_connections` `INVALID_VALUE`. Idle only.
    pub fn set_max_num_connections(&self, n: u16) -> Result<()> {
        self.core().require_idle("rdma set_max_num_connections")?; // the state first, as DOCA's library
        let max = caps::max_connections(self.dev().as_devinfo())?;
        if n == 0 {
            // The header's code for a count "smaller than minimum value supported".
            bail!(Error::NotSupported, "rdma set_max_num_connections: 0 connections");
        }
        if n as u32 > max {
            bail!(
                Error::InvalidValue,
                "rdma set_max_num_connections: {n} above {max} (cap rdma.max_connections)"
            );
        }
        self.configure("set_max_num_connections", |c| c.max_conns = n)
    }

    /// `doca_rdma_get_max_num_connections`.
    pub fn max_num_connections(&self) -> u16 {
        self.cfg().max_conns
    }

    /// `doca_rdma_set_connection_request_timeout` (ms; kept, used by the connection manager).
    pub fn set_connection_request_timeout(&self, ms: u16) -> Result<()> {
        self.core().require_idle("rdma set_connection_request_timeout")?; // the state first, as DOCA's library
        self.configure("set_connection_request_timeout", |c| c.conn_request_timeout = ms)
    }

    /// `doca_rdma_get_connection_request_timeout`.
    pub fn connection_request_timeout(&self) -> u16 {
        self.cfg().conn_request_timeout
    }

    /// `doca_rdma_set_rnr_retry_count`: 0..=7, 7 for ever. Idle only.
    pub fn set_rnr_retry_count(&self, n: u8) -> Result<()> {
        self.core().require_idle("rdma set_rnr_retry_count")?; // the state first, as DOCA's library
        if n > RNR_INFINITE {
            bail!(Error::InvalidValue, "rdma set_rnr_retry_count: {n} above 7");
        }
        self.configure("set_rnr_retry_count", |c| c.rnr_retry = n)
    }

    /// DOCA 2.5/2.6's start (the C ABI's level-2.6 `doca_rdma_create`): `start` leaves the
    /// context Starting (`IN_PROGRESS`); it becomes Running when [`Rdma::connect`]
    /// connects, as NVIDIA's 2.6 samples expect (they export and connect in their Starting
    /// callback). A remote sync event get of such a context writes the value as its
    /// destination's data (at the data address, data length 8) instead of appending it, as
    /// the 2.5/2.6 samples read it. Idle only.
    pub fn set_running_on_connect(&self, on: bool) -> Result<()> {
        self.configure("set_running_on_connect", |c| c.running_on_connect = on)
    }

    /// `doca_rdma_get_rnr_retry_count`.
    pub fn rnr_retry_count(&self) -> u8 {
        self.cfg().rnr_retry
    }

    /// `doca_rdma_export`: a new connection in the exported state and its descriptor, for
    /// the peer's [`Rdma::connect`]. Starting or Running (`BAD_STATE` otherwise); at most
    /// `max_num_connections` connections (`FULL`).
    pub fn export(&self) -> Result<(Vec<u8>, Connection)> {
        // After start only, as DOCA's (the header: BAD_STATE "if called before calling
        // ctx_start()"); a 2.5/2.6 context exports while Starting (it runs once connected).
        match self.core().state() {
            CtxState::Starting | CtxState::Running => {}
            CtxState::Idle => {
                bail!(Error::BadState, "rdma export: the context is not started (doca_ctx_start first)")
            }
            CtxState::Stopping => bail!(Error::BadState, "rdma export: the context is stopping"),
        }
        let conn = self.ops().new_conn(ConnState::Exported, None, None, "export")?;
        tracing::debug!(target: "doca_sdk", "rdma: exported connection {}", conn.idx);
        let desc = self.with_descriptor(conn, |d| d.to_vec())?;
        Ok((desc, conn))
    }

    /// The descriptor [`Rdma::export`] returned for `conn` (the C ABI hands out a pointer to
    /// it, valid while the connection is).
    pub fn with_descriptor<R>(&self, conn: Connection, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
        let conns = self.ops().conns.borrow();
        match lookup(&conns, conn) {
            Some(c) => Ok(f(&c.desc)),
            None => Err(fail!(Error::NotFound, "rdma: no such connection (stale or of another context)")),
        }
    }

    /// `doca_rdma_connect`: connects exported `conn` to the peer whose descriptor is
    /// `remote` (`CONNECTION_ABORTED` for a blob that is not one, of another transport, MTU
    /// or GRH setting, or whose offer is gone; `BAD_STATE` when `conn` is already connected). The connection is usable at
    /// once: the peer's side follows when it connects in turn. Starting or Running.
    pub fn connect(&self, remote: &[u8], conn: Connection) -> Result<()> {
        if !matches!(self.core().state(), CtxState::Running | CtxState::Starting) {
            bail!(Error::BadState, "rdma connect: the context is not running ({:?})", self.core().state());
        }
        // A descriptor that is not one, or of another transport, and a peer that cannot be
        // reached are CONNECTION_ABORTED: the header's code for "connection failed or
        // connection details object was corrupted" (DOCA's library answers both so).
        let d = Desc::parse(remote).map_err(|_| {
            fail!(
                Error::ConnectionAborted,
                "rdma connect: the remote connection details are not a descriptor"
            )
        })?;
        let ops = self.ops();
        let cfg = ops.cfg.get();
        if d.transport != cfg.transport as u8 {
            bail!(
                Error::ConnectionAborted,
                "rdma connect: the peer's transport type differs from this context's"
            );
        }
        // DOCA's library refuses a peer whose MTU or GRH setting is not this context's.
        if d.mtu != cfg.mtu {
            bail!(
                Error::ConnectionAborted,
                "rdma connect: the MTU differs between this context ({}) and the peer ({})",
                cfg.mtu,
                d.mtu
            );
        }
        if d.grh != cfg.grh {
            bail!(
                Error::ConnectionAborted,
                "rdma connect: GRH is {} here and {} on the peer (doca_rdma_set_grh_enabled must agree)",
                if cfg.grh { "enabled" } else { "disabled" },
                if d.grh { "enabled" } else { "disabled" }
            );
        }
        let mut conns = ops.conns.borrow_mut();
        let Some(c) = lookup_mut(&mut conns, conn) else {
            bail!(Error::NotFound, "rdma connect: no such connection (stale or of another context)");
        };
        if c.state != ConnState::Exported {
            bail!(Error::BadState, "rdma connect: the connection is {:?}, not exported", c.state);
        }
        ops.connect_out(c, d, self.core()).map_err(|e| match e {
            Error::BadState | Error::InvalidValue => e,
            _ => fail!(Error::ConnectionAborted, "rdma connect: the peer cannot be reached ({})", e.name()),
        })?;
        drop(conns);
        if cfg.running_on_connect {
            self.core().set_running();
        }
        self.core().activate();
        tracing::debug!(target: "doca_sdk", "rdma: connection {} connected to pid {}", conn.idx, d.service.pid);
        Ok(())
    }

    /// The state of `conn` (`NOT_FOUND` for a stale name).
    pub fn connection_state(&self, conn: Connection) -> Result<ConnState> {
        let conns = self.ops().conns.borrow();
        lookup(&conns, conn)
            .map(|c| c.state)
            .ok_or_else(|| fail!(Error::NotFound, "rdma: no such connection"))
    }

    /// `doca_rdma_connection_set_user_data`.
    pub fn connection_set_user_data(&self, conn: Connection, data: Data) -> Result<()> {
        let mut conns = self.ops().conns.borrow_mut();
        match lookup_mut(&mut conns, conn) {
            Some(c) => {
                c.user_data = data;
                Ok(())
            }
            None => Err(fail!(Error::NotFound, "rdma: no such connection")),
        }
    }

    /// `doca_rdma_connection_get_user_data`.
    pub fn connection_user_data(&self, conn: Connection) -> Result<Data> {
        let conns = self.ops().conns.borrow();
        lookup(&conns, conn)
            .map(|c| c.user_data)
            .ok_or_else(|| fail!(Error::NotFound, "rdma: no such connection"))
    }

    fn set_conf<P, H>(
        &self,
        completion: impl FnMut(H, Data, Data) + 'static,
        error: impl FnMut(H, Data, Data) + 'static,
        num: u32,
    ) -> Result<()>
    where
        P: TaskPayload<Lib = RdmaOps>,
        RdmaOps: TaskLib<P>,
        H: From<doca_core::Task<P>>,
    {
        // The pool is not bounded by the queue sizes: DOCA documents no such bound, and
        // NVIDIA's storage application asks for more tasks than the default queue holds.
        let (mut done, mut failed) = (completion, error);
        TaskLib::<P>::pool(self.ops()).set_conf(
            self.core(),
            Box::new(move |t, td, cd| done(H::from(t), td, cd)),
            Box::new(move |t, td, cd| failed(H::from(t), td, cd)),
            num,
        )
    }

    fn alloc_op<K: OpKind>(
        &self,
        user_data: Data,
        init: impl FnOnce(&mut OpFields),
    ) -> Result<doca_core::Task<Op<K>>> {
        // The handle's count on the context from the one held here, the user data set in the
        // same visit of the slot.
        TaskPool::<Op<K>>::alloc_in(&self.cell, user_data, |p| {
            p.f = OpFields::default();
            init(&mut p.f);
            Ok(())
        })
    }
}

impl Rdma {
    #[doc = "`doca_rdma_task_send_set_conf`: Idle only."]
    pub fn task_send_set_conf(
        &self,
        completion: impl FnMut(SendTask, Data, Data) + 'static,
        error: impl FnMut(SendTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.set_conf::<Op<SendK>, SendTask>(completion, error, num_tasks)
    }

    #[doc = "`doca_rdma_task_send_imm_set_conf`."]
    pub fn task_send_imm_set_conf(
        &self,
        completion: impl FnMut(SendImmTask, Data, Data) + 'static,
        error: impl FnMut(SendImmTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.set_conf::<Op<SendImmK>, SendImmTask>(completion, error, num_tasks)
    }

    #[doc = "`doca_rdma_task_read_set_conf`."]
    pub fn task_read_set_conf(
        &self,
        completion: impl FnMut(ReadTask, Data, Data) + 'static,
        error: impl FnMut(ReadTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.set_conf::<Op<ReadK>, ReadTask>(completion, error, num_tasks)
    }

    #[doc = "`doca_rdma_task_write_set_conf`."]
    pub fn task_write_set_conf(
        &self,
        completion: impl FnMut(WriteTask, Data, Data) + 'static,
        error: impl FnMut(WriteTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.set_conf::<Op<WriteK>, WriteTask>(completion, error, num_tasks)
    }

    #[doc = "`doca_rdma_task_write_imm_set_conf`."]
    pub fn task_write_imm_set_conf(
        &self,
        completion: impl FnMut(WriteImmTask, Data, Data) + 'static,
        error: impl FnMut(WriteImmTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.set_conf::<Op<WriteImmK>, WriteImmTask>(completion, error, num_tasks)
    }

    #[doc = "`doca_rdma_task_atomic_cmp_swp_set_conf`."]
    pub fn task_atomic_cmp_swp_set_conf(
        &self,
        completion: impl FnMut(CmpSwpTask, Data, Data) + 'static,
        error: impl FnMut(CmpSwpTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.set_conf::<Op<CasK>, CmpSwpTask>(completion, error, num_tasks)
    }

    #[doc = "`doca_rdma_task_atomic_fetch_add_set_conf`."]
    pub fn task_atomic_fetch_add_set_conf(
        &self,
        completion: impl FnMut(FetchAddTask, Data, Data) + 'static,
        error: impl FnMut(FetchAddTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.set_conf::<Op<FaddK>, FetchAddTask>(completion, error, num_tasks)
    }

    #[doc = "`doca_rdma_task_remote_net_sync_event_get_set_conf`."]
    pub fn task_remote_net_sync_event_get_set_conf(
        &self,
        completion: impl FnMut(RemoteNetGetTask, Data, Data) + 'static,
        error: impl FnMut(RemoteNetGetTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.set_conf::<Op<SeGetK>, RemoteNetGetTask>(completion, error, num_tasks)
    }

    #[doc = "`doca_rdma_task_remote_net_sync_event_notify_set_set_conf`."]
    pub fn task_remote_net_sync_event_notify_set_set_conf(
        &self,
        completion: impl FnMut(RemoteNetNotifySetTask, Data, Data) + 'static,
        error: impl FnMut(RemoteNetNotifySetTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.set_conf::<Op<SeSetK>, RemoteNetNotifySetTask>(completion, error, num_tasks)
    }

    #[doc = "`doca_rdma_task_remote_net_sync_event_notify_add_set_conf`."]
    pub fn task_remote_net_sync_event_notify_add_set_conf(
        &self,
        completion: impl FnMut(RemoteNetNotifyAddTask, Data, Data) + 'static,
        error: impl FnMut(RemoteNetNotifyAddTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        self.set_conf::<Op<SeAddK>, RemoteNetNotifyAddTask>(completion, error, num_tasks)
    }

    #[doc = "`doca_rdma_task_receive_set_conf`: Idle only."]
    pub fn task_receive_set_conf(
        &self,
        completion: impl FnMut(ReceiveTask, Data, Data) + 'static,
        error: impl FnMut(ReceiveTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        srq::refuse_receive(self.ops(), "task_receive_set_conf", Error::InvalidValue)?;
        self.set_conf::<RecvFields, ReceiveTask>(completion, error, num_tasks)
    }
}

impl Rdma {
    /// `doca_rdma_task_send_allocate_init`: nothing is checked before submission. Running
    /// only (`BAD_STATE`); every task out: `NO_MEMORY`.
    pub fn task_send_alloc_init(
        &self,
        conn: Connection,
        src: Option<&Buf>,
        user_data: Data,
    ) -> Result<SendTask> {
        self.alloc_op::<SendK>(user_data, |f| {
            f.conn = Some(conn);
            f.src = src.cloned();
        })
        .map(SendTask)
    }

    /// `doca_rdma_task_send_imm_allocate_init`.
    pub fn task_send_imm_alloc_init(
        &self,
        conn: Connection,
        src: Option<&Buf>,
        imm: u32,
        user_data: Data,
    ) -> Result<SendImmTask> {
        self.alloc_op::<SendImmK>(user_data, |f| {
            f.conn = Some(conn);
            f.src = src.cloned();
            f.imm = imm;
        })
        .map(SendImmTask)
    }

    /// `doca_rdma_task_read_allocate_init`: `src` in the peer's memory, `dst` local.
    pub fn task_read_alloc_init(
        &self,
        conn: Connection,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<ReadTask> {
        self.alloc_op::<ReadK>(user_data, |f| {
            f.conn = Some(conn);
            f.src = src.cloned();
            f.dst = dst.cloned();
        })
        .map(ReadTask)
    }

    /// `doca_rdma_task_write_allocate_init`: `src` local, `dst` in the peer's memory.
    pub fn task_write_alloc_init(
        &self,
        conn: Connection,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<WriteTask> {
        self.alloc_op::<WriteK>(user_data, |f| {
            f.conn = Some(conn);
            f.src = src.cloned();
            f.dst = dst.cloned();
        })
        .map(WriteTask)
    }

    /// `doca_rdma_task_write_imm_allocate_init`.
    pub fn task_write_imm_alloc_init(
        &self,
        conn: Connection,
        src: Option<&Buf>,
        dst: Option<&Buf>,
        imm: u32,
        user_data: Data,
    ) -> Result<WriteImmTask> {
        self.alloc_op::<WriteImmK>(user_data, |f| {
            f.conn = Some(conn);
            f.src = src.cloned();
            f.dst = dst.cloned();
            f.imm = imm;
        })
        .map(WriteImmTask)
    }

    /// `doca_rdma_task_atomic_cmp_swp_allocate_init`: `dst` 8 bytes of the peer's memory,
    /// `result` local room for the 8 bytes found there.
    pub fn task_atomic_cmp_swp_alloc_init(
        &self,
        conn: Connection,
        dst: Option<&Buf>,
        result: Option<&Buf>,
        cmp: u64,
        swap: u64,
        user_data: Data,
    ) -> Result<CmpSwpTask> {
        self.alloc_op::<CasK>(user_data, |f| {
            f.conn = Some(conn);
            f.dst = dst.cloned();
            f.src = result.cloned();
            f.a = cmp;
            f.b = swap;
        })
        .map(CmpSwpTask)
    }

    /// `doca_rdma_task_atomic_fetch_add_allocate_init`.
    pub fn task_atomic_fetch_add_alloc_init(
        &self,
        conn: Connection,
        dst: Option<&Buf>,
        result: Option<&Buf>,
        add: u64,
        user_data: Data,
    ) -> Result<FetchAddTask> {
        self.alloc_op::<FaddK>(user_data, |f| {
            f.conn = Some(conn);
            f.dst = dst.cloned();
            f.src = result.cloned();
            f.a = add;
        })
        .map(FetchAddTask)
    }

    /// `doca_rdma_task_remote_net_sync_event_get_allocate_init`: the value of the peer's
    /// event `se` into `dst`'s room.
    pub fn task_remote_net_sync_event_get_alloc_init(
        &self,
        conn: Connection,
        se: Option<&doca_sync_event::RemoteNet>,
        dst: Option<&Buf>,
        user_data: Data,
    ) -> Result<RemoteNetGetTask> {
        self.alloc_op::<SeGetK>(user_data, |f| {
            f.conn = Some(conn);
            f.se = se.cloned();
            f.dst = dst.cloned();
        })
        .map(RemoteNetGetTask)
    }

    /// `doca_rdma_task_remote_net_sync_event_notify_set_allocate_init`: sets the peer's
    /// event `se` to the 8 bytes at `src`'s data.
    pub fn task_remote_net_sync_event_notify_set_alloc_init(
        &self,
        conn: Connection,
        se: Option<&doca_sync_event::RemoteNet>,
        src: Option<&Buf>,
        user_data: Data,
    ) -> Result<RemoteNetNotifySetTask> {
        self.alloc_op::<SeSetK>(user_data, |f| {
            f.conn = Some(conn);
            f.se = se.cloned();
            f.src = src.cloned();
        })
        .map(RemoteNetNotifySetTask)
    }

    /// `doca_rdma_task_remote_net_sync_event_notify_add_allocate_init`: adds `add` to the
    /// peer's event `se`; the value before lands in `result`.
    pub fn task_remote_net_sync_event_notify_add_alloc_init(
        &self,
        conn: Connection,
        se: Option<&doca_sync_event::RemoteNet>,
        result: Option<&Buf>,
        add: u64,
        user_data: Data,
    ) -> Result<RemoteNetNotifyAddTask> {
        self.alloc_op::<SeAddK>(user_data, |f| {
            f.conn = Some(conn);
            f.se = se.cloned();
            f.src = result.cloned();
            f.a = add;
        })
        .map(RemoteNetNotifyAddTask)
    }

    /// `doca_rdma_task_receive_allocate_init`: a receive into `dst`'s room.
    pub fn task_receive_alloc_init(&self, dst: Option<&Buf>, user_data: Data) -> Result<ReceiveTask> {
        srq::refuse_receive(self.ops(), "task_receive_allocate_init", Error::NoMemory)?;
        let t = self.ops().recv_pool.alloc(|p| {
            *p = RecvFields { dst: dst.cloned(), ..RecvFields::default() };
            Ok(())
        })?;
        t.set_user_data(user_data);
        Ok(ReceiveTask(t))
    }
}

fn lookup(conns: &[Option<Conn>], c: Connection) -> Option<&Conn> {
    conns.get(c.idx as usize)?.as_ref().filter(|x| x.gen == c.gen)
}

fn lookup_mut(conns: &mut [Option<Conn>], c: Connection) -> Option<&mut Conn> {
    conns.get_mut(c.idx as usize)?.as_mut().filter(|x| x.gen == c.gen)
}

/// Which permission a one-sided operation needs of the peer.
fn needed(code: Code) -> (AccessFlags, &'static str) {
    match code {
        Code::Read => (AccessFlags::RDMA_READ, "DOCA_ACCESS_FLAG_RDMA_READ"),
        Code::Cas | Code::Fadd | Code::SeAdd => (AccessFlags::RDMA_ATOMIC, "DOCA_ACCESS_FLAG_RDMA_ATOMIC"),
        Code::SeGet => (AccessFlags::RDMA_READ, "DOCA_ACCESS_FLAG_RDMA_READ"),
        _ => (AccessFlags::RDMA_WRITE, "DOCA_ACCESS_FLAG_RDMA_WRITE"),
    }
}

impl RdmaOps {
    /// A new connection in `state` with a fresh offer (its descriptor kept), at most
    /// `max_num_connections` live ones (`FULL`; `what` names the caller in the log).
    fn new_conn(
        &self,
        state: ConnState,
        remote: Option<Desc>,
        cm: Option<cm::CmConn>,
        what: &str,
    ) -> Result<Connection> {
        let cfg = self.cfg.get();
        let mut conns = self.conns.borrow_mut();
        let live = conns.iter().flatten().filter(|c| c.state.is_live()).count();
        if live >= cfg.max_conns as usize {
            bail!(
                Error::Full,
                "rdma {what}: the context has its {} connections (doca_rdma_set_max_num_connections)",
                cfg.max_conns
            );
        }
        let inbox: Arc<Mutex<Option<PeerFd>>> = Arc::default();
        let (slot, bell) = (inbox.clone(), self.bell.clone());
        let offered = doca_link::rendezvous::offer(Offer::Connection(Box::new(move |fd, peer| {
            let mut s = slot.lock().unwrap_or_else(|e| e.into_inner());
            if s.is_some() {
                tracing::debug!(target: "doca_sdk", "rdma: a second connection to one offer (pid {}) closed", peer.pid());
                return;
            }
            *s = Some(fd);
            drop(s);
            bell.ring();
        })))?;
        // A free slot; else, once the table is large, the oldest connection that is over
        // (its name goes stale); else a new one.
        let idx = match conns.iter().position(Option::is_none) {
            Some(i) => i,
            None => match conns.iter().position(|c| c.as_ref().is_some_and(|c| !c.state.is_live())) {
                Some(i) if conns.len() >= 4 * cfg.max_conns as usize + 4 => i,
                _ => {
                    conns.push(None);
                    conns.len() - 1
                }
            },
        };
        let gen = self.next_gen.get();
        self.next_gen.set(gen.wrapping_add(1).max(1));
        let desc = Desc {
            transport: cfg.transport as u8,
            mtu: cfg.mtu,
            grh: cfg.grh,
            service: offered.service(),
            token: offered.token(),
            perms: cfg.perms,
            gid_index: cfg.gid_index,
            max_msg: self.max_msg.get() as u32,
            conn_id: idx as u32,
        };
        conns[idx] = Some(Conn {
            gen,
            state,
            desc: desc.encode(),
            token: offered.token(),
            offered: Some(offered),
            inbox,
            remote,
            out: None,
            inc: None,
            inc_named: false,
            pending_reply: None,
            asm: Assembly {
                hdr: Hdr { kind: Kind::Send, flags: 0, seq: 0, imm: 0, len: 0 },
                bytes: Vec::new(),
            },
            assembling: false,
            queue: VecDeque::new(),
            inflight: VecDeque::new(),
            next_seq: 0,
            rnr_retries: 0,
            backoff_until: None,
            half_closed: None,
            answer_due: None,
            answers: 0,
            expect: 0,
            user_data: Data::default(),
            bye: false,
            cm,
            _presence: linked::offered(desc.service),
            row: doca_core::status::Entry::none(),
            rowed: false,
        });
        Ok(Connection { idx: idx as u32, gen })
    }

    /// Opens this side's socket to the peer's offer `d` and names itself: the connection
    /// is then connected (the peer's socket is adopted when it arrives). A peer of this
    /// kernel gets the direction's shared rings and this side's doorbell with the name.
    fn connect_out(&self, c: &mut Conn, d: Desc, core: &CtxCore) -> Result<()> {
        let local = linked::across(d.service).is_none();
        let fd = linked::take(&d)?;
        let mut hello = Hdr { kind: Kind::Hello, flags: 0, seq: 0, imm: 0, len: 0 }.encode().to_vec();
        hello.extend_from_slice(&c.token);
        let mut rings = None;
        let sent = if local {
            let area = Area::create("doca-rdma-conn", AREA_LEN)?;
            Ring::init(&area, 0, MSG_SLOTS, MSG_RECORD)?;
            Ring::init(&area, ACK_AT, ACK_SLOTS, HDR_LEN)?;
            let tx = Ring::attach(&area, 0, MSG_SLOTS, MSG_RECORD, End::Producer)?;
            let rx = Ring::attach(&area, ACK_AT, ACK_SLOTS, HDR_LEN, End::Consumer)?;
            let (wake, ringer) = Doorbell::pair()?;
            let sent = doca_link::send(fd.as_fd(), &hello, &[area.as_fd(), ringer.as_fd()]);
            rings = Some(Box::new(Rings { tx, rx, peer: None, wake: core.watch(wake)? }));
            sent
        } else {
            doca_link::send(fd.as_fd(), &hello, &[])
        };
        sent.map_err(|e| fail!(Error::from(e), "rdma connect: the peer closed the connection"))?;
        c.remote = Some(d);
        let mut out = Sock::new(fd, core);
        out.rings = rings;
        c.out = Some(out);
        c.state = ConnState::Connected;
        Ok(())
    }

    /// Offerer side: the connector's `HELLO` brought shared rings (`fds`: the area, the socket
    /// that rings the connector): attaches to them and answers `READY` with this side's
    /// doorbell. `Err` names what was wrong (the caller closes the connection).
    fn accept_rings(
        &self,
        inc: &mut Sock,
        fds: Vec<PeerFd>,
        core: &CtxCore,
    ) -> std::result::Result<(), &'static str> {
        let [area, ringer]: [PeerFd; 2] =
            fds.try_into().map_err(|_| "a HELLO with a wrong number of descriptors")?;
        let area = Area::open(area, AREA_LEN)
            .map_err(|_| "a shared area that is not a sealed memfd of the agreed size")?;
        let rx = Ring::attach(&area, 0, MSG_SLOTS, MSG_RECORD, End::Consumer)
            .map_err(|_| "a shared messages ring of another geometry")?;
        let tx = Ring::attach(&area, ACK_AT, ACK_SLOTS, HDR_LEN, End::Producer)
            .map_err(|_| "a shared answers ring of another geometry")?;
        let peer = Doorbell::from_peer(ringer).map_err(|_| "a doorbell that is not a datagram socket")?;
        let (wake, mine) = Doorbell::pair().map_err(|_| "no doorbell could be made here")?;
        let wake = core.watch(wake).map_err(|_| "no doorbell could be watched here")?;
        let ready = Hdr { kind: Kind::Ready, flags: 0, seq: 0, imm: 0, len: 0 }.encode();
        // A peer that went already (stopped right after connecting) left a goodbye or its end
        // on the socket: the reader finds it next.
        let _ = doca_link::send(inc.fd.as_fd(), &ready, &[mine.as_fd()]);
        inc.rings = Some(Box::new(Rings { tx, rx, peer: Some(peer), wake }));
        Ok(())
    }

    fn with_job<R>(&self, job: Job, f: impl FnOnce(&mut OpFields) -> R) -> Option<R> {
        match job.code {
            Code::Send => self.send_pool.with_payload(job.id, |p| f(&mut p.f)),
            Code::SendImm => self.send_imm_pool.with_payload(job.id, |p| f(&mut p.f)),
            Code::Read => self.read_pool.with_payload(job.id, |p| f(&mut p.f)),
            Code::Write => self.write_pool.with_payload(job.id, |p| f(&mut p.f)),
            Code::WriteImm => self.write_imm_pool.with_payload(job.id, |p| f(&mut p.f)),
            Code::Cas => self.cas_pool.with_payload(job.id, |p| f(&mut p.f)),
            Code::Fadd => self.fadd_pool.with_payload(job.id, |p| f(&mut p.f)),
            Code::SeGet => self.se_get_pool.with_payload(job.id, |p| f(&mut p.f)),
            Code::SeSet => self.se_set_pool.with_payload(job.id, |p| f(&mut p.f)),
            Code::SeAdd => self.se_add_pool.with_payload(job.id, |p| f(&mut p.f)),
        }
    }

    fn finish(&self, job: Job, status: Result<()>) {
        match job.code {
            Code::Send => self.send_pool.finish(job.id, status),
            Code::SendImm => self.send_imm_pool.finish(job.id, status),
            Code::Read => self.read_pool.finish(job.id, status),
            Code::Write => self.write_pool.finish(job.id, status),
            Code::WriteImm => self.write_imm_pool.finish(job.id, status),
            Code::Cas => self.cas_pool.finish(job.id, status),
            Code::Fadd => self.fadd_pool.finish(job.id, status),
            Code::SeGet => self.se_get_pool.finish(job.id, status),
            Code::SeSet => self.se_set_pool.finish(job.id, status),
            Code::SeAdd => self.se_add_pool.finish(job.id, status),
        };
    }

    /// Queues `job` on its connection (or as a stray, failed at the next pass). A send
    /// (`at_once`) that can go at once goes into the shared ring now ([`RdmaOps::send_now`]).
    fn enqueue(&self, job: Job, at_once: bool) {
        let conn = self.with_job(job, |f| f.conn).flatten();
        let mut conns = self.conns.borrow_mut();
        match conn.and_then(|c| lookup_mut(&mut conns, c)) {
            Some(c) => {
                c.queue.push_back(job);
                if at_once && c.queue.len() == 1 {
                    self.send_now(c, job);
                }
            }
            None => self.stray.borrow_mut().push_back(job),
        }
    }

    /// A send submitted to a connection with nothing queued before it, over shared rings,
    /// with room in its window and in the ring and no receiver-not-ready back-off, goes into
    /// the ring at its submission (as a doorbell starts it on the hardware) instead of at the
    /// next pass: a reply sent from a completion callback does not wait for another pass.
    /// Anything else, a failure included, is left queued: the pass does it, or fails the
    /// task, as for any other (no callback and no state change can happen in a submission).
    fn send_now(&self, c: &mut Conn, job: Job) {
        // A connection the pass has not yet seen connected has no status row to count on.
        if c.state != ConnState::Connected
            || !c.rowed
            || c.backoff_until.is_some()
            || c.inflight.len() >= WINDOW
        {
            return;
        }
        let Some(r) = c.out.as_ref().and_then(|s| s.rings.as_deref()) else { return };
        let need = records_for(HDR_LEN + self.max_msg.get()) as u64;
        if r.is_corrupt()
            || (r.tx.capacity() - r.tx.fill_seen() < need && r.tx.capacity() - r.tx.in_flight() < need)
        {
            return;
        }
        let mut tx = self.tx.borrow_mut();
        let seq = c.next_seq;
        if self.build_message(job, seq, &mut tx).is_err() || push_records(&r.tx, &tx, seq).is_err() {
            return;
        }
        r.wake_peer();
        self.went_out(c, job, seq, &tx);
    }

    /// The message `tx` (sequence number `seq`) of `c`'s first queued task, `job`, went out:
    /// counted on the status rows, and the task waits in the window for its answer.
    fn went_out(&self, c: &mut Conn, job: Job, seq: u32, tx: &[u8]) {
        let bytes = if tx[0] == Kind::Send as u8 { tx.len() - HDR_LEN } else { 0 };
        self.status.sent(bytes);
        c.row.sent(bytes);
        c.queue.pop_front();
        c.inflight.push_back((seq, job));
        c.next_seq = seq.wrapping_add(1);
    }

    /// A local buffer this context's device may use (`write`: it is written).
    fn check_local(&self, buf: &Buf, what: &str, write: bool) -> Result<()> {
        let map = buf.map();
        let Some(perms) = map.dev_permissions(&self.dev) else {
            bail!(Error::NotPermitted, "rdma: the {what}'s map was not added to the RDMA context's device");
        };
        map.check_live()?;
        if map.is_from_export() {
            bail!(Error::NotPermitted, "rdma: the {what} must be local memory, not a map from export");
        }
        if write && !perms.contains(AccessFlags::LOCAL_READ_WRITE) {
            bail!(Error::NotPermitted, "rdma: the {what}'s map lacks DOCA_ACCESS_FLAG_LOCAL_READ_WRITE");
        }
        Ok(())
    }

    /// A buffer of the peer's memory: a map created from an RDMA export on this device,
    /// whose export and whose peer context both grant the access.
    fn check_remote(&self, buf: &Buf, what: &str, code: Code, peer_perms: u32) -> Result<()> {
        let (flag, name) = needed(code);
        let map = buf.map();
        if !map.is_from_export() {
            bail!(
                Error::NotPermitted,
                "rdma: the {what} must be the peer's memory (a map from doca_mmap_export_rdma)"
            );
        }
        let Some(perms) = map.dev_permissions(&self.dev) else {
            bail!(Error::NotPermitted, "rdma: the {what}'s map was created from export on another device");
        };
        map.check_live()?;
        if !perms.contains(flag) {
            bail!(Error::NotPermitted, "rdma: the peer exported the {what}'s memory without {name}");
        }
        if peer_perms & flag.bits() == 0 {
            bail!(
                Error::NotPermitted,
                "rdma: the peer's RDMA context does not grant {name} (doca_rdma_set_permissions)"
            );
        }
        Ok(())
    }

    /// The bytes of data a read's (the peer's buffer) or a write's (the local list) source
    /// holds: a task with no destination is valid only without any.
    fn source_data(&self, code: Code, src: &Buf) -> Result<usize> {
        if code == Code::Read {
            src.data_len()
        } else {
            Ok(doca_buf::list::total(&self.send_side_list(src, "source", false, false)?))
        }
    }

    /// Carries out a one-sided operation at once.
    fn one_sided(&self, job: Job, peer_perms: u32, max: u64) -> Result<usize> {
        let r = self.with_job(job, |f| -> Result<usize> {
            match job.code {
                Code::Read | Code::Write | Code::WriteImm => {
                    // No source: no data to move (the header's "may be NULL when wishing to
                    // read/write no data"); no destination: only for a source without data.
                    let (Some(src), Some(dst)) = (&f.src, &f.dst) else {
                        if let Some(src) = &f.src {
                            let data = self.source_data(job.code, src)?;
                            if data > 0 {
                                bail!(
                                    Error::InvalidValue,
                                    "rdma: the destination buffer is NULL, yet the source buffer has {data} bytes of data"
                                );
                            }
                        }
                        f.result_len = 0;
                        f.wrote = true;
                        return Ok(0);
                    };
                    let (s, d) = if job.code == Code::Read {
                        self.check_remote(src, "source", job.code, peer_perms)?;
                        (
                            self.remote_seg(src, "source", false)?,
                            self.send_side_list(dst, "destination", true, true)?,
                        )
                    } else {
                        self.check_remote(dst, "destination", job.code, peer_perms)?;
                        (
                            self.send_side_list(src, "source", false, false)?,
                            self.remote_seg(dst, "destination", true)?,
                        )
                    };
                    let len = doca_buf::list::total(&s);
                    if len as u64 > max {
                        bail!(
                            Error::InvalidValue,
                            "rdma: {len} bytes exceed the maximum {max} (cap rdma.max_rdma_size)"
                        );
                    }
                    let n = doca_buf::list::copy(&s, &d, "rdma")?;
                    f.result_len = n as u32;
                    f.wrote = true;
                    Ok(n)
                }
                Code::Cas | Code::Fadd => {
                    let (Some(dst), Some(res)) = (&f.dst, &f.src) else {
                        bail!(
                            Error::InvalidValue,
                            "rdma: the atomic task has no destination or no result buffer"
                        );
                    };
                    self.check_remote(dst, "destination", job.code, peer_perms)?;
                    self.check_local(res, "result buffer", true)?;
                    let (d, r) = (dst.shape()?, res.shape()?);
                    if d.data % 8 != 0 || d.head + d.len < d.data + 8 {
                        bail!(
                            Error::InvalidValue,
                            "rdma: an atomic needs 8 aligned bytes at the destination's data"
                        );
                    }
                    if r.room() < 8 {
                        bail!(Error::InvalidValue, "rdma: the result buffer has no room for 8 bytes");
                    }
                    let old = if dst.map().is_mapped_here() {
                        // Shared memory (an export of memory the exporter allocated as
                        // shared): one CPU atomic on the very word, atomic against the
                        // exporter's own atomics and every other context's.
                        if job.code == Code::Cas {
                            dst.map().atomic_cas_u64(d.data, f.a, f.b)?
                        } else {
                            dst.map().atomic_fetch_add_u64(d.data, f.a)?
                        }
                    } else {
                        // Memory registered by address, served by the exporter's library:
                        // read, compute, write (atomic against this context's atomics only).
                        let mut old = [0u8; 8];
                        dst.map().read(d.data, &mut old)?;
                        let v = u64::from_ne_bytes(old);
                        let new = match job.code {
                            Code::Cas => (v == f.a).then_some(f.b),
                            _ => Some(v.wrapping_add(f.a)),
                        };
                        if let Some(n) = new {
                            dst.map().write(d.data, &n.to_ne_bytes())?;
                        }
                        v
                    };
                    res.map().write(r.data_end(), &old.to_ne_bytes())?;
                    res.increase_data_len(8)?;
                    Ok(8)
                }
                Code::SeGet | Code::SeSet | Code::SeAdd => self.sync_event_op(job.code, f, peer_perms),
                _ => Err(Error::BadState),
            }
        });
        r.unwrap_or(Err(Error::BadState))
    }

    /// A remote sync event task: the peer's event (mapped, as its memory is), this side's
    /// 8-byte buffer. The peer's context must grant what a read (get) or an atomic (set,
    /// add) of its memory needs.
    fn sync_event_op(&self, code: Code, f: &mut OpFields, peer_perms: u32) -> Result<usize> {
        let Some(se) = f.se.clone() else {
            bail!(Error::InvalidValue, "rdma: the remote sync event task names no event");
        };
        let (flag, name) = needed(code);
        if peer_perms & flag.bits() == 0 {
            bail!(
                Error::NotPermitted,
                "rdma: the peer's RDMA context does not grant {name} (doca_rdma_set_permissions), which a remote sync event task needs"
            );
        }
        let buf = if code == Code::SeGet { f.dst.clone() } else { f.src.clone() };
        let Some(buf) = buf else {
            bail!(Error::InvalidValue, "rdma: the remote sync event task has no buffer");
        };
        self.check_local(&buf, "sync event task's buffer", code != Code::SeSet)?;
        let b = buf.shape()?;
        match code {
            Code::SeSet => {
                let segs = self.send_side_list(&buf, "notify-set's source", false, false)?;
                let mut v = Vec::with_capacity(8);
                doca_buf::list::gather(&segs, &mut v)?;
                if v.len() < 8 {
                    bail!(
                        Error::InvalidValue,
                        "rdma: a notify-set's source holds {} bytes (the value takes 8)",
                        v.len()
                    );
                }
                se.set(u64::from_ne_bytes(v[..8].try_into().map_err(|_| Error::InvalidValue)?))?;
            }
            Code::SeGet if self.cfg.get().running_on_connect => {
                // DOCA 2.5/2.6: the value becomes the destination's data (at its data
                // address, data length 8), so one get task resubmitted into one buffer reads
                // the latest value where it read the first (NVIDIA's 2.5/2.6 samples poll so).
                if b.head + b.len < b.data + 8 {
                    bail!(
                        Error::InvalidValue,
                        "rdma: the buffer has no room for the 8-byte value at its data"
                    );
                }
                let v = se.get()?;
                buf.map().write(b.data, &v.to_ne_bytes())?;
                buf.set_data_offset(b.data, 8)?;
                f.result_len = 8;
            }
            _ => {
                let segs = self.send_side_list(&buf, "sync event task's buffer", true, true)?;
                if doca_buf::list::total(&segs) < 8 {
                    bail!(Error::InvalidValue, "rdma: the buffer has no room for the 8-byte value");
                }
                let v = if code == Code::SeGet { se.get()? } else { se.add(f.a)? };
                doca_buf::list::scatter(&segs, &v.to_ne_bytes(), "rdma")?;
                f.result_len = 8;
            }
        }
        Ok(8)
    }

    /// The packet of a message task into `tx` (its bytes read from the source).
    fn build_message(&self, job: Job, seq: u32, tx: &mut Vec<u8>) -> Result<()> {
        let max = self.max_msg.get();
        let r = self.with_job(job, |f| -> Result<()> {
            tx.clear();
            match job.code {
                Code::Send | Code::SendImm => {
                    // No source: an empty message (the header's "may be NULL when wishing to
                    // send an empty message").
                    let segs = match &f.src {
                        Some(src) => self.send_side_list(src, "source", false, false)?,
                        None => doca_buf::list::Segs::Many(Vec::new()),
                    };
                    let len = doca_buf::list::total(&segs);
                    if len > max {
                        bail!(
                            Error::InvalidValue,
                            "rdma: a send of {len} bytes (at most {max}: cap rdma.max_message_size)"
                        );
                    }
                    let flags = if job.code == Code::SendImm { FLAG_IMM } else { 0 };
                    let h = Hdr { kind: Kind::Send, flags, seq, imm: f.imm, len: len as u32 };
                    tx.extend_from_slice(&h.encode());
                    doca_buf::list::gather(&segs, tx)?;
                    Ok(())
                }
                Code::WriteImm => {
                    let h = Hdr { kind: Kind::WriteImm, flags: FLAG_IMM, seq, imm: f.imm, len: f.result_len };
                    tx.extend_from_slice(&h.encode());
                    Ok(())
                }
                _ => Err(Error::BadState),
            }
        });
        r.unwrap_or(Err(Error::BadState))
    }

    /// A message delivered (answered `ACK`) counts on the status rows (the context's and its
    /// connection's `row`) as received.
    fn counted(&self, h: &Hdr, payload: usize, reply: &Hdr, row: &doca_core::status::Entry) {
        if reply.kind == Kind::Ack {
            let bytes = if h.kind == Kind::Send { payload } else { 0 };
            self.status.received(bytes);
            row.received(bytes);
        }
    }

    /// Connection `idx`'s row, before a pass works on it: claimed the first time it is found
    /// connected (while rows are free: `doca_core::status::Entry::claim_connection`), so its
    /// first messages count.
    fn claim_row(&self, c: &mut Conn, idx: usize, core: &CtxCore) {
        if c.state == ConnState::Connected && !c.rowed {
            c.rowed = true;
            let row = doca_core::status::Entry::claim_connection(
                doca_core::status::Identity {
                    kind: "rdma_conn",
                    dev: Some(self.dev.as_devinfo().pci_addr()),
                    rep: None,
                    name: "rdma context",
                    conn_id: idx as u64,
                },
                &self.status,
            );
            row.set_engine(core.engine_status_id());
            row.set_connection_up(true);
            // A peer of this kernel (shared rings): the process at the other end of the
            // socket this side opened (across the link it would be the relay's).
            if let Some(out) = c.out.as_ref().filter(|o| o.rings.is_some()) {
                if let Ok(pid) = doca_link::peer_pid(out.fd.as_fd()) {
                    row.set_peer_pid(pid);
                }
            }
            c.row = row;
        }
    }

    /// Connection `c`'s row after a pass: its window's messages in flight (sent, not
    /// answered); let go once the connection is over.
    fn show_conn(&self, c: &mut Conn) {
        if !c.state.is_live() && c.rowed {
            c.row = doca_core::status::Entry::none();
        }
        c.row.ring_fill(c.inflight.len() as u64, WINDOW as u64);
    }

    /// The status row after a pass: live connections, receives posted, messages in flight
    /// (sent, not answered) of the connections' windows (`inflight`, counted by the pass).
    /// Relaxed stores, no syscall.
    fn show(&self, live: usize, inflight: usize) {
        self.status.set_connections(live);
        self.status.set_posted(self.posted.borrow().len());
        self.status.ring_fill(inflight as u64, (WINDOW * live) as u64);
    }

    /// Every task of the context handed back with `status` (the failing one aside), every
    /// connection closed with a goodbye. Returns whether anything was flushed.
    fn flush_all(&self, status: Error) -> bool {
        let mut jobs: Vec<Job> = self.stray.borrow_mut().drain(..).collect();
        let mut conns = self.conns.borrow_mut();
        for c in conns.iter_mut().flatten() {
            jobs.extend(c.inflight.drain(..).map(|(_, j)| j));
            jobs.extend(c.queue.drain(..));
        }
        drop(conns);
        let posted: Vec<TaskId> = self.posted.borrow_mut().drain(..).collect();
        let any = !jobs.is_empty() || !posted.is_empty();
        for j in jobs {
            self.finish(j, Err(status));
        }
        for id in posted {
            self.recv_pool.finish(id, Err(status));
        }
        any
    }

    /// Sends a goodbye on both sockets of `c` and closes them.
    fn say_bye(&self, c: &mut Conn) {
        let bye = Hdr { kind: Kind::Bye, flags: 0, seq: 0, imm: 0, len: 0 }.encode();
        for s in [&c.out, &c.inc].into_iter().flatten() {
            let _ = s.send(&bye);
        }
        // The peer's socket may still wait in the inbox (not adopted by a progress pass yet):
        // it gets the goodbye too, or the peer would see it close without one.
        let waiting = c.inbox.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(fd) = waiting {
            let _ = doca_link::send(fd.as_fd(), &bye, &[]);
        }
        c.out = None;
        c.inc = None;
        c.half_closed = None;
        c.row = doca_core::status::Entry::none(); // over: its row goes now
    }

    /// Closes every connection (a goodbye on each socket first) and the connection
    /// manager's ports.
    fn close_all(&self) {
        self.cm_close();
        let mut conns = self.conns.borrow_mut();
        for c in conns.iter_mut().flatten() {
            self.say_bye(c);
        }
        conns.clear();
    }

    /// Adopts the peer's socket for a connected connection.
    fn adopt(&self, c: &mut Conn, core: &CtxCore) {
        if c.inc.is_some() || c.remote.is_none() {
            return;
        }
        let fd = c.inbox.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(fd) = fd {
            c.inc = Some(Sock::new(fd, core));
            c.offered = None; // nobody else may connect to it
        }
    }

    /// Reads the answers to this side's messages: from the shared answers ring, then (in
    /// socket mode, until the peer's `READY`, or when `look`) from `out`. Returns whether
    /// anything happened.
    fn read_acks(&self, c: &mut Conn, now: &Now<'_>, look: bool, fatal: &mut Fatal) -> bool {
        let Some(mut did) = self.ring_answers(c, now, fatal) else { return true };
        let Some(out) = &c.out else { return did };
        if out.rings.as_ref().is_some_and(|r| r.peer.is_some()) && !look {
            return did;
        }
        let mut buf = [0u8; HDR_LEN + 16];
        let mut packets = PacketBudget::new();
        while let Some(out) = &c.out {
            if !packets.take() {
                break;
            }
            match doca_link::recv(out.fd.as_fd(), &mut buf) {
                Ok(Recv::Empty) => break,
                Ok(Recv::Closed) | Err(_) => {
                    // The peer answered in the ring before it closed its socket (a receiver
                    // that takes the message, disconnects and exits): those answers are
                    // there to take before the socket and its rings go, or a send the peer
                    // acknowledged would fail with the connection.
                    let Some(more) = self.ring_answers(c, now, fatal) else { return true };
                    did |= more;
                    did |= self.peer_gone(c, true, "its acknowledgements' socket closed", now, fatal);
                    break;
                }
                Ok(Recv::Packet { len, truncated, fds }) => {
                    did = true;
                    let h = match Hdr::parse(&buf[..len], 0) {
                        Ok(h) if !truncated && (fds.is_empty() || h.kind == Kind::Ready) => h,
                        _ => {
                            self.hostile(c, "a malformed acknowledgement", fatal);
                            break;
                        }
                    };
                    if h.kind == Kind::Ready {
                        // The offerer's doorbell: the shared rings are both sides' now.
                        let rings = c.out.as_mut().and_then(|s| s.rings.as_deref_mut());
                        let peer = match (rings, <[PeerFd; 1]>::try_from(fds)) {
                            (Some(r), Ok([fd])) if r.peer.is_none() => {
                                Doorbell::from_peer(fd).ok().map(|p| (r, p))
                            }
                            _ => None,
                        };
                        let Some((r, p)) = peer else {
                            self.hostile(c, "a READY out of place", fatal);
                            break;
                        };
                        p.ring(); // what was published before it came, in case it sleeps
                        r.peer = Some(p);
                        continue;
                    }
                    if matches!(h.kind, Kind::Ack | Kind::Rnr | Kind::Nak)
                        && c.out.as_ref().is_some_and(|s| s.rings.is_some())
                    {
                        self.hostile(c, "an answer on the socket while the rings carry them", fatal);
                        break;
                    }
                    if self.on_answer(c, h, now, fatal) {
                        return true;
                    }
                }
            }
        }
        did
    }

    /// The answers waiting in the shared answers ring (when there is one), at most one ring's
    /// worth ([`ACK_SLOTS`]) a call: a peer that refills the ring as fast as this side reads
    /// it (answers to nothing in flight are ignored, not refused) would otherwise hold the
    /// pass; the rest is read at the next pass. `None` when one failed the connection
    /// (`fatal` set, or the peer broke the ring: closed as hostile); else whether any was
    /// taken.
    fn ring_answers(&self, c: &mut Conn, now: &Now<'_>, fatal: &mut Fatal) -> Option<bool> {
        let mut did = false;
        let mut taken = 0;
        while let Some(r) = c.out.as_ref().and_then(|s| s.rings.as_deref()) {
            if taken >= ACK_SLOTS {
                break; // `did` is set: the engine calls again
            }
            taken += 1;
            if r.is_corrupt() {
                self.hostile(c, "shared ring indices out of bounds", fatal);
                return None;
            }
            let Some(slot) = r.rx.peek() else { break };
            let h = match slot.bytes().map(|p| Hdr::parse_record(p, 0)) {
                Some(Ok(h))
                    if slot.kind() == h.kind as u32
                        && matches!(h.kind, Kind::Ack | Kind::Rnr | Kind::Nak) =>
                {
                    h
                }
                _ => {
                    self.hostile(c, "a malformed answer record", fatal);
                    return None;
                }
            };
            slot.consume();
            did = true;
            if self.on_answer(c, h, now, fatal) {
                return None;
            }
        }
        Some(did)
    }

    /// One answer (or goodbye) to this side's messages. Returns true when it failed the
    /// connection (`fatal` set).
    fn on_answer(&self, c: &mut Conn, h: Hdr, now: &Now<'_>, fatal: &mut Fatal) -> bool {
        let front = c.inflight.front().map(|&(s, _)| s);
        match h.kind {
            Kind::Ack if front == Some(h.seq) => {
                let (_, job) = c.inflight.pop_front().expect("front checked");
                c.rnr_retries = 0;
                c.answers = c.answers.wrapping_add(1);
                self.finish(job, Ok(()));
            }
            Kind::Rnr if front == Some(h.seq) => {
                c.rnr_retries = c.rnr_retries.saturating_add(1);
                let budget = self.cfg.get().rnr_retry;
                if budget != RNR_INFINITE && c.rnr_retries > budget as u32 {
                    let (_, job) = c.inflight.pop_front().expect("front checked");
                    self.finish(job, Err(Error::TimeOut));
                    c.state = ConnState::Error;
                    *fatal = Some((
                        Error::TimeOut,
                        format!("the peer had no receive posted after {budget} retries (rnr_retry_count)"),
                    ));
                    return true;
                }
                // Go back: resend from this message, after the delay.
                while let Some((_, j)) = c.inflight.pop_back() {
                    c.queue.push_front(j);
                }
                c.next_seq = h.seq;
                c.backoff_until = Some(now.get() + RNR_DELAY);
                c.answers = c.answers.wrapping_add(1);
            }
            Kind::Nak if front == Some(h.seq) => {
                let (_, job) = c.inflight.pop_front().expect("front checked");
                // A refusal says why with an error code; anything else (success included) is
                // the peer's nonsense, reported as UNEXPECTED, never as an Err(Success).
                let e = Error::from_code(h.imm as i32).filter(|e| e.is_error()).unwrap_or(Error::Unexpected);
                self.finish(job, Err(e));
                c.state = ConnState::Error;
                *fatal = Some((e, "the peer could not take the message".into()));
                return true;
            }
            Kind::Bye => {
                c.bye = true;
            }
            _ => {
                tracing::debug!(target: "doca_sdk", "rdma: an acknowledgement {:?} {} not for the oldest message, ignored", h.kind, h.seq);
            }
        }
        false
    }

    /// Reads the peer's messages: from the shared messages ring, then (in socket mode, until
    /// the peer named itself, or when `look`) from `inc`. Returns whether anything happened.
    fn read_messages(
        &self,
        c: &mut Conn,
        me: Connection,
        look: bool,
        core: &CtxCore,
        now: &Now<'_>,
        fatal: &mut Fatal,
    ) -> bool {
        let Some(mut did) = self.take_ring_messages(c, me, fatal) else { return true };
        if c.inc.as_ref().is_some_and(|s| s.rings.is_some()) && !look {
            return did;
        }
        let max = self.max_msg.get();
        let mut rx = self.rx.borrow_mut();
        rx.resize(HDR_LEN + max + 1, 0);
        let mut packets = PacketBudget::new();
        loop {
            // An acknowledgement not yet sent goes first; nothing more is read until it is.
            if let (Some(r), Some(inc)) = (c.pending_reply, &c.inc) {
                if inc.rings.is_none() {
                    match inc.send(&r) {
                        Ok(()) => c.pending_reply = None,
                        Err(doca_link::Error::Again) => break,
                        Err(_) => {
                            did |= self.peer_gone(c, false, "its messages' socket closed", now, fatal);
                            break;
                        }
                    }
                }
            }
            let Some(inc) = &c.inc else { break };
            if !packets.take() {
                break;
            }
            let (len, truncated, fds) = match doca_link::recv(inc.fd.as_fd(), &mut rx) {
                Ok(Recv::Empty) => break,
                Ok(Recv::Closed) | Err(_) => {
                    // Messages the peer put in the ring before it closed its socket are
                    // delivered before the socket and its rings go (a window of them, as a
                    // pass takes).
                    let Some(more) = self.take_ring_messages(c, me, fatal) else { return true };
                    did |= more;
                    did |= self.peer_gone(c, false, "its messages' socket closed", now, fatal);
                    break;
                }
                Ok(Recv::Packet { len, truncated, fds }) => (len, truncated, fds),
            };
            did = true;
            let h = match Hdr::parse(&rx[..len], max) {
                Ok(h) if !truncated && (fds.is_empty() || h.kind == Kind::Hello) => h,
                _ => {
                    self.hostile(c, "a malformed message", fatal);
                    break;
                }
            };
            let ringed = c.inc.as_ref().is_some_and(|s| s.rings.is_some());
            match h.kind {
                Kind::Hello if !c.inc_named => {
                    let named = c.remote.is_some_and(|r| rx[HDR_LEN..HDR_LEN + 16] == r.token);
                    if !named {
                        self.hostile(c, "a peer that is not the one connected to", fatal);
                        break;
                    }
                    if !fds.is_empty() {
                        let inc = c.inc.as_mut().expect("read from it above");
                        if let Err(what) = self.accept_rings(inc, fds, core) {
                            self.hostile(c, what, fatal);
                            break;
                        }
                    }
                    c.inc_named = true;
                }
                Kind::Send | Kind::WriteImm if c.inc_named && !ringed => {
                    if h.seq != c.expect {
                        continue; // after a receiver-not-ready: the sender goes back to `expect`
                    }
                    let reply = self.deliver(&h, &rx[HDR_LEN..len], me, fatal);
                    self.counted(&h, len - HDR_LEN, &reply, &c.row);
                    c.pending_reply = Some(reply.encode());
                    if reply.kind == Kind::Ack {
                        c.expect = c.expect.wrapping_add(1);
                    }
                    if fatal.is_some() {
                        c.state = ConnState::Error;
                        if let (Some(r), Some(inc)) = (c.pending_reply.take(), &c.inc) {
                            let _ = inc.send(&r);
                        }
                        break;
                    }
                }
                Kind::Bye => c.bye = true,
                _ => {
                    self.hostile(c, "a packet out of place", fatal);
                    break;
                }
            }
        }
        did
    }

    /// [`RdmaOps::ring_messages`] for a pass: `None` when the connection failed (a broken
    /// ring closes it as hostile, or a message set `fatal`), else whether anything happened.
    fn take_ring_messages(&self, c: &mut Conn, me: Connection, fatal: &mut Fatal) -> Option<bool> {
        match self.ring_messages(c, me, fatal) {
            Ok(did) if fatal.is_none() => Some(did),
            Ok(_) => None,
            Err(what) => {
                self.hostile(c, what, fatal);
                None
            }
        }
    }

    /// The peer's messages in the shared messages ring (when there is one): each delivered
    /// and answered in the answers ring. `Err` names what the peer broke (the caller closes
    /// the connection).
    fn ring_messages(
        &self,
        c: &mut Conn,
        me: Connection,
        fatal: &mut Fatal,
    ) -> std::result::Result<bool, &'static str> {
        let max = self.max_msg.get();
        let Conn { inc, pending_reply, expect, asm, assembling, state, row, .. } = c;
        let Some(r) = inc.as_ref().and_then(|s| s.rings.as_deref()) else { return Ok(false) };
        let mut did = false;
        // At most a window of messages per pass: a sender that refills the ring as fast as
        // this side answers would otherwise keep one pass delivering until the posted
        // receives ran out, the application's callbacks (which post them again) waiting for
        // the pass to end.
        let mut taken = 0;
        loop {
            // An answer not yet sent goes first; nothing more is read until it is.
            if let Some(reply) = *pending_reply {
                match r.tx.push_with(u32::from(reply[0]), HDR_LEN, |b| b.copy_from_slice(&reply)) {
                    Ok(true) => *pending_reply = None,
                    Ok(false) if r.tx.is_corrupt() => return Err("shared ring indices out of bounds"),
                    Ok(false) => break, // the peer reads its answers first
                    Err(_) => return Err("an answer the ring cannot carry"),
                }
            }
            if taken >= WINDOW {
                break; // the rest at the next pass (`did` is set: the engine calls again)
            }
            if r.is_corrupt() {
                return Err("shared ring indices out of bounds");
            }
            let Some(slot) = r.rx.peek() else { break };
            did = true;
            let Some(p) = slot.bytes() else { return Err("a record longer than its slot") };
            let h = match Hdr::parse_record(p, max) {
                Ok(h) if slot.kind() == h.kind as u32 => h,
                _ => return Err("a malformed message record"),
            };
            let part = &p[HDR_LEN..];
            let reply = match h.kind {
                Kind::Send | Kind::WriteImm => {
                    if *assembling {
                        return Err("a new message before the last one's end");
                    }
                    if h.seq != *expect {
                        slot.consume(); // after a receiver-not-ready: the sender goes back to `expect`
                        continue;
                    }
                    if h.kind == Kind::Send && part.len() < h.len as usize {
                        asm.hdr = h;
                        asm.bytes.clear();
                        asm.bytes.extend_from_slice(part);
                        *assembling = true;
                        slot.consume();
                        continue;
                    }
                    let reply = self.deliver(&h, part, me, fatal);
                    self.counted(&h, part.len(), &reply, row);
                    slot.consume();
                    reply
                }
                Kind::More if *assembling && h.seq == asm.hdr.seq => {
                    if asm.bytes.len() + part.len() > asm.hdr.len as usize {
                        return Err("a message longer than it said");
                    }
                    asm.bytes.extend_from_slice(part);
                    slot.consume();
                    if asm.bytes.len() < asm.hdr.len as usize {
                        continue;
                    }
                    *assembling = false;
                    let reply = self.deliver(&asm.hdr, &asm.bytes, me, fatal);
                    self.counted(&asm.hdr, asm.bytes.len(), &reply, row);
                    reply
                }
                Kind::More if !*assembling && h.seq != *expect => {
                    slot.consume(); // the rest of a message dropped after a receiver-not-ready
                    continue;
                }
                _ => return Err("a record out of place"),
            };
            *pending_reply = Some(reply.encode());
            taken += 1;
            if reply.kind == Kind::Ack {
                *expect = expect.wrapping_add(1);
            }
            if fatal.is_some() {
                *state = ConnState::Error;
                if let Some(reply) = pending_reply.take() {
                    let _ = r.tx.push_with(u32::from(reply[0]), HDR_LEN, |b| b.copy_from_slice(&reply));
                    r.wake_peer();
                }
                break;
            }
        }
        Ok(did)
    }

    /// Delivers a message into the oldest posted receive: the answer for the sender.
    fn deliver(&self, h: &Hdr, payload: &[u8], me: Connection, fatal: &mut Fatal) -> Hdr {
        let mut reply = Hdr { kind: Kind::Ack, flags: 0, seq: h.seq, imm: 0, len: 0 };
        let Some(id) = self.posted.borrow_mut().pop_front() else {
            reply.kind = Kind::Rnr;
            return reply;
        };
        let r = self.recv_pool.with_payload(id, |p| -> Result<()> {
            let n = if h.kind == Kind::Send { payload.len() } else { 0 };
            // A receive without a buffer takes messages without bytes (a write's immediate
            // data, an empty send), as DOCA's write-immediate samples post it.
            match &p.dst {
                None if n > 0 => bail!(
                    Error::InvalidValue,
                    "rdma: a message of {n} bytes for a receive task without a buffer"
                ),
                None => {}
                Some(dst) => {
                    let segs = self.recv_list(dst)?;
                    let room = doca_buf::list::total(&segs);
                    if room < n {
                        bail!(
                            Error::InvalidValue,
                            "rdma: a message of {n} bytes, the receive buffer has room for {room}"
                        );
                    }
                    if n > 0 {
                        doca_buf::list::scatter(&segs, payload, "rdma")?;
                    }
                }
            }
            p.result_len = if h.kind == Kind::Send { n as u32 } else { h.len };
            p.imm = if h.flags & FLAG_IMM != 0 { h.imm } else { 0 };
            p.opcode = Some(match (h.kind, h.flags & FLAG_IMM != 0) {
                (Kind::WriteImm, _) => Opcode::RecvWriteWithImm,
                (_, true) => Opcode::RecvSendWithImm,
                _ => Opcode::RecvSend,
            });
            p.from = Some(me);
            Ok(())
        });
        let r = r.unwrap_or(Err(Error::BadState));
        match r {
            Ok(()) => {
                self.recv_pool.finish(id, Ok(()));
            }
            Err(e) => {
                self.recv_pool.finish(id, Err(e));
                reply.kind = Kind::Nak;
                reply.imm = e.code() as u32;
                *fatal = Some((e, "a receive task could not take a message".into()));
            }
        }
        reply
    }

    /// The peer's end of one socket closed (`on_out`: the one this side opened): a goodbye
    /// before it means disconnected, else the error state — once the other socket, if open,
    /// has ended too.
    fn peer_gone(&self, c: &mut Conn, on_out: bool, why: &str, now: &Now<'_>, fatal: &mut Fatal) -> bool {
        if matches!(c.state, ConnState::Disconnected | ConnState::Error) {
            return false;
        }
        // Across the link each socket is relayed on a stream of its own: the other socket's
        // last packets (an acknowledgement, a goodbye) may come after this one's end. The
        // connection is over when both have ended (locally they end together).
        // The peer's socket may still wait in the inbox (its dial arrived, not yet adopted by
        // a pass): it is open all the same.
        let other_open = if on_out {
            c.inc.is_some() || c.inbox.lock().unwrap_or_else(|e| e.into_inner()).is_some()
        } else {
            c.out.is_some()
        };
        if other_open {
            if on_out {
                c.out = None;
            } else {
                c.inc = None;
            }
            c.half_closed = Some(now.get() + HALF_CLOSE_WAIT);
            tracing::debug!(target: "doca_sdk", "rdma: {why}; waiting for the other socket's end");
            return true;
        }
        // One socket closed: a goodbye may wait on the other (a peer that stopped before
        // its service handed it this side's socket says goodbye on its own socket only).
        // What else is there is not for a connection that is going away.
        if !c.bye {
            let mut buf = [0u8; HDR_LEN + 16];
            for s in [&c.out, &c.inc].into_iter().flatten() {
                while let Ok(Recv::Packet { len, .. }) = doca_link::recv(s.fd.as_fd(), &mut buf) {
                    if Hdr::parse(&buf[..len.min(buf.len())], 0).is_ok_and(|h| h.kind == Kind::Bye) {
                        c.bye = true;
                    }
                }
            }
        }
        c.out = None;
        c.inc = None;
        c.half_closed = None;
        if c.bye {
            c.state = ConnState::Disconnected;
            tracing::debug!(target: "doca_sdk", "rdma: the peer disconnected ({why})");
        } else {
            c.state = ConnState::Error;
            tracing::error!(target: "doca_sdk", "rdma: the peer vanished without disconnecting ({why}): the connection is in error");
        }
        if self.fail_waiting(c) {
            let e = Error::ConnectionReset;
            *fatal = Some((e, format!("the peer is gone with tasks waiting on the connection ({why})")));
        }
        true
    }

    /// The oldest message in flight got no answer in time (a peer that took it and went
    /// silent, or stopped): it fails with `TIME_OUT`, as a queue pair's retries running out
    /// fail it, and the connection goes to the error state. Returns whether it did anything.
    fn answer_late(&self, c: &mut Conn, fatal: &mut Fatal) -> bool {
        c.answer_due = None;
        let Some((_, job)) = c.inflight.pop_front() else { return false };
        self.finish(job, Err(Error::TimeOut));
        c.state = ConnState::Error;
        let waited = self.ack_timeout.get();
        *fatal = Some((
            Error::TimeOut,
            format!("the peer did not answer a message in {waited:?} (cap rdma.ack_timeout_ms)"),
        ));
        true
    }

    /// The tasks waiting on a connection that broke fail with `CONNECTION_RESET`; returns
    /// whether there were any.
    fn fail_waiting(&self, c: &mut Conn) -> bool {
        let jobs: Vec<Job> = c.inflight.drain(..).map(|(_, j)| j).chain(c.queue.drain(..)).collect();
        for &j in &jobs {
            self.finish(j, Err(Error::ConnectionReset));
        }
        !jobs.is_empty()
    }

    fn hostile(&self, c: &mut Conn, what: &str, fatal: &mut Fatal) {
        tracing::error!(target: "doca_sdk", "rdma: the peer sent {what}: connection closed");
        c.out = None;
        c.inc = None;
        c.half_closed = None;
        c.state = ConnState::Error;
        if self.fail_waiting(c) {
            *fatal = Some((Error::ConnectionReset, format!("the peer sent {what}")));
        }
    }

    /// Works through a connection's queue. Returns whether anything happened.
    fn advance(&self, c: &mut Conn, now: &Now<'_>, budget: &mut usize, fatal: &mut Fatal) -> bool {
        if c.backoff_until.is_some_and(|t| now.get() < t) {
            return false;
        }
        c.backoff_until = None;
        let mut did = false;
        let max_rdma = self.max_rdma.get();
        while let Some(&job) = c.queue.front() {
            if c.state != ConnState::Connected {
                c.queue.pop_front();
                let e = if c.state == ConnState::Exported { Error::BadState } else { Error::ConnectionReset };
                self.finish(job, Err(e));
                *fatal = Some((e, format!("a task on a connection that is {:?}", c.state)));
                return true;
            }
            let peer_perms = c.remote.map_or(0, |r| r.perms);
            if job.code == Code::WriteImm && !self.with_job(job, |f| f.wrote).unwrap_or(true) {
                if !c.inflight.is_empty() {
                    break;
                }
                if let Err(e) = self.one_sided(job, peer_perms, max_rdma) {
                    c.queue.pop_front();
                    self.finish(job, Err(e));
                    c.state = ConnState::Error;
                    *fatal = Some((e, "a write with immediate failed".into()));
                    return true;
                }
            }
            if job.code.is_message() {
                if c.inflight.len() >= WINDOW {
                    break;
                }
                let Some(out) = &c.out else { break };
                if let Some(r) = &out.rings {
                    // Room for the longest message this context may send, before its bytes are
                    // read: a full ring costs no copy.
                    // What this side last saw of the reader first (no shared line read);
                    // the reader's position only when that is not enough.
                    let need = records_for(HDR_LEN + self.max_msg.get()) as u64;
                    if r.tx.capacity() - r.tx.fill_seen() < need
                        && (r.tx.capacity() - r.tx.in_flight() < need || r.is_corrupt())
                    {
                        break;
                    }
                }
                let mut tx = self.tx.borrow_mut();
                let seq = c.next_seq;
                if let Err(e) = self.build_message(job, seq, &mut tx) {
                    c.queue.pop_front();
                    self.finish(job, Err(e));
                    c.state = ConnState::Error;
                    *fatal = Some((e, "a send task failed".into()));
                    return true;
                }
                let sent = match &out.rings {
                    Some(r) => push_records(&r.tx, &tx, seq),
                    None => out.send(&tx),
                };
                match sent {
                    Ok(()) => {
                        self.went_out(c, job, seq, &tx);
                        did = true;
                    }
                    Err(doca_link::Error::Again) => break,
                    Err(_) => break, // the reader notices the closed socket
                }
            } else {
                if !c.inflight.is_empty() || *budget == 0 {
                    break;
                }
                c.queue.pop_front();
                did = true;
                match self.one_sided(job, peer_perms, max_rdma) {
                    Ok(n) => {
                        *budget = budget.saturating_sub(n.max(1));
                        self.finish(job, Ok(()));
                    }
                    Err(e) => {
                        self.finish(job, Err(e));
                        c.state = ConnState::Error;
                        *fatal = Some((e, format!("an RDMA {:?} task failed", job.code)));
                        return true;
                    }
                }
            }
        }
        did
    }
}

/// Puts one message's packet (`tx`: header, then the message) into the messages ring: the
/// first record holds the header and as much of the message as fits, `MORE` records the rest
/// (the caller made sure of the room, so the whole message goes in one batch).
fn push_records(ring: &Ring, tx: &[u8], seq: u32) -> doca_link::Result<()> {
    let first = tx.len().min(MSG_RECORD);
    if !ring.push_with(u32::from(tx[0]), first, |b| b.copy_from_slice(&tx[..first]))? {
        return Err(doca_link::Error::Again);
    }
    for part in tx[first..].chunks(CHUNK) {
        let h = Hdr { kind: Kind::More, flags: 0, seq, imm: 0, len: part.len() as u32 }.encode();
        let pushed = ring.push_with(Kind::More as u32, HDR_LEN + part.len(), |b| {
            b[..HDR_LEN].copy_from_slice(&h);
            b[HDR_LEN..].copy_from_slice(part);
        })?;
        if !pushed {
            // Room was checked: only a corrupt ring refuses; the caller closes it.
            return Err(doca_link::Error::IoFailed);
        }
    }
    Ok(())
}

impl CtxOps for RdmaOps {
    fn kind(&self) -> &'static str {
        "rdma"
    }

    fn start(&self, core: &CtxCore) -> Result<Started> {
        srq::check_start(self)?;
        let info = self.dev.as_devinfo();
        self.bytes_per_pass.set(caps::bytes_per_pass(info)?);
        self.ack_timeout.set(caps::ack_timeout(info)?);
        self.max_msg.set(caps::max_message_size(info)? as usize);
        self.max_rdma.set(caps::max_rdma_size(info)?);
        self.send_pool.prepare(Op::default);
        self.send_imm_pool.prepare(Op::default);
        self.read_pool.prepare(Op::default);
        self.write_pool.prepare(Op::default);
        self.write_imm_pool.prepare(Op::default);
        self.cas_pool.prepare(Op::default);
        self.fadd_pool.prepare(Op::default);
        self.se_get_pool.prepare(Op::default);
        self.se_set_pool.prepare(Op::default);
        self.se_add_pool.prepare(Op::default);
        self.recv_pool.prepare(RecvFields::default);
        if self.bell_watch.borrow().is_none() {
            let dup = self
                .bell
                .as_fd()
                .try_clone_to_owned()
                .map_err(|e| fail!(Error::OperatingSystem, "dup: {e}"))?;
            *self.bell_watch.borrow_mut() = Some(core.watch(EventFd::from_fd(dup))?);
        }
        if self.timer.borrow().is_none() {
            *self.timer.borrow_mut() = Some(core.watch(Timer::new()?)?);
        }
        self.status.set_engine(core.engine_status_id());
        Ok(if self.cfg.get().running_on_connect { Started::Starting } else { Started::Running })
    }

    /// Every task is handed back with [`FLUSH_STATUS`] (delivered at the next progress:
    /// callbacks never run inside stop). Connections (each says goodbye) and listening
    /// ports close: from inside a callback of the context's engine at the next progress, so
    /// a context that has any stops through Stopping there (NVIDIA's sync event sample
    /// expects `IN_PROGRESS` from a stop in a callback); outside one at once, so a context
    /// with no task left stops synchronously (NVIDIA's storage application stops an RDMA
    /// context whose engine it no longer progresses, and waits for Idle).
    fn stop(&self, core: &CtxCore) {
        self.flush_all(FLUSH_STATUS);
        self.cm_stop_listening();
        if core.engine_in_progress() {
            self.closing.set(!self.conns.borrow().is_empty());
        } else {
            self.close_all();
        }
    }

    fn is_busy(&self, _core: &CtxCore) -> bool {
        self.closing.get()
    }

    fn needs_poll(&self, _core: &CtxCore) -> bool {
        !self
            .conns
            .borrow()
            .iter()
            .flatten()
            .all(|c| c.out.is_none() && c.inc.is_none() && c.queue.is_empty())
            || !self.posted.borrow().is_empty()
            || !self.stray.borrow().is_empty()
            || self.cm_busy()
            || self.conns.borrow().iter().flatten().any(|c| c.cm.as_ref().is_some_and(|m| m.is_waiting()))
    }

    fn progress(&self, core: &CtxCore, now: &Now<'_>) -> bool {
        if core.state() == CtxState::Starting {
            // DOCA 2.5/2.6's start: exported connections wait for `connect` (a program may
            // progress while it waits for its peer's descriptor).
            return false;
        }
        if core.state() != CtxState::Running {
            let any = self.flush_all(FLUSH_STATUS);
            self.close_all();
            return any | self.closing.replace(false);
        }
        let mut fatal: Fatal = None;
        let mut did = false;
        let strays: Vec<Job> = if self.stray.borrow().is_empty() {
            Vec::new()
        } else {
            self.stray.borrow_mut().drain(..).collect()
        };
        for j in strays {
            self.finish(j, Err(Error::InvalidValue));
            fatal = Some((Error::InvalidValue, "a task names no connection of this context".into()));
            did = true;
        }
        // The sockets (a goodbye, the peer's end, the connection manager's listening ports and
        // the requests waiting on them) are looked at on a cadence or after a wake-up; shared
        // rings on every pass, without a syscall. The clock is read only when a time is
        // needed (a receiver-not-ready back-off, a deadline).
        let look = self.cadence.turn(now);
        if look {
            did |= self.cm_listen(core, now);
        }
        let mut budget = self.bytes_per_pass.get();
        let n = self.conns.borrow().len();
        let (mut live, mut broken, mut inflight) = (0, 0, 0);
        for i in 0..n {
            if fatal.is_some() {
                break;
            }
            let mut conns = self.conns.borrow_mut();
            let Some(c) = conns[i].as_mut() else { continue };
            let me = Connection { idx: i as u32, gen: c.gen };
            self.adopt(c, core);
            self.claim_row(c, i, core);
            did |= self.read_acks(c, now, look, &mut fatal);
            if fatal.is_none() {
                did |= self.read_messages(c, me, look, core, now, &mut fatal);
            }
            if fatal.is_none() {
                did |= self.advance(c, now, &mut budget, &mut fatal);
            }
            // The answers' clock, at the looks only (they read the clock anyway).
            if look && fatal.is_none() {
                match c.answer_due {
                    _ if c.inflight.is_empty() => c.answer_due = None,
                    Some((t, n)) if n == c.answers && now.get() >= t => {
                        did |= self.answer_late(c, &mut fatal)
                    }
                    Some((_, n)) if n == c.answers => {}
                    _ => c.answer_due = Some((now.get() + self.ack_timeout.get(), c.answers)),
                }
            }
            if fatal.is_none() && c.half_closed.is_some_and(|t| now.get() >= t) {
                let why = "one socket ended and the other stayed open";
                did |= self.peer_gone(c, c.inc.is_none(), why, now, &mut fatal);
            }
            for s in [&c.out, &c.inc] {
                if let Some(r) = s.as_ref().and_then(|s| s.rings.as_deref()) {
                    r.wake_peer();
                }
            }
            did |= self.cm_step(c, me, core, now, &mut fatal);
            self.show_conn(c);
            inflight += c.inflight.len();
            if c.state.is_live() {
                live += 1;
            } else if c.state == ConnState::Error {
                broken += 1;
            }
        }
        self.show(live, inflight);
        // Receives posted while every connection is over and one of them broke (a peer that
        // vanished) would wait for ever: they fail. After clean goodbyes they keep waiting.
        if fatal.is_none() && live == 0 && broken > 0 && !self.posted.borrow().is_empty() {
            let posted: Vec<TaskId> = self.posted.borrow_mut().drain(..).collect();
            for id in posted {
                self.recv_pool.finish(id, Err(Error::ConnectionReset));
            }
            fatal =
                Some((Error::ConnectionReset, "receive tasks are posted and no connection is left".into()));
        }
        if let Some((e, why)) = fatal {
            // Fatal to the context: every task flushed, every connection closed (with a
            // goodbye: the peers see a disconnection); a restart exports and connects anew.
            self.flush_all(FLUSH_STATUS);
            self.close_all();
            core.fail(e, &why);
            return true;
        }
        did |= self.cm_deliver(core);
        did
    }

    fn request_notification(&self, core: &CtxCore) -> bool {
        // The engine's clock, as every deadline here is set by it (a test's manual clock).
        let now = core.now();
        let mut conns = self.conns.borrow_mut();
        let mut due: Option<Instant> = None;
        let need = records_for(HDR_LEN + self.max_msg.get()) as u64;
        for c in conns.iter_mut().flatten() {
            // Messages in flight since the last pass (sent from a callback): their answers'
            // clock starts now, so that a sleeper wakes when it runs out.
            if !c.inflight.is_empty() && c.answer_due.is_none_or(|(_, n)| n != c.answers) {
                c.answer_due = Some((now + self.ack_timeout.get(), c.answers));
            }
            // Shared rings: sleep armed, unless something came meanwhile (Dekker: the peer
            // publishing after the arming sees the flag and rings this side's doorbell).
            let (out, inc) = (
                c.out.as_ref().and_then(|s| s.rings.as_deref()),
                c.inc.as_ref().and_then(|s| s.rings.as_deref()),
            );
            for r in [out, inc].into_iter().flatten() {
                if r.rx.arm_for_data() {
                    return true;
                }
            }
            if let (Some(r), Some(_)) = (inc, c.pending_reply) {
                if r.tx.arm_for_room() {
                    return true;
                }
            }
            let answer_due = c.answer_due.filter(|_| !c.inflight.is_empty()).map(|(t, _)| t);
            for t in [c.half_closed, answer_due].into_iter().flatten().filter(|_| c.state.is_live()) {
                due = Some(due.map_or(t, |d| d.min(t)));
            }
            // What the queue's front waits for. The answers to the messages in flight (armed
            // above; a socket's are watched): a full window, or a one-sided task (a write with
            // immediate too) behind them. Nothing for a message while this side's socket is
            // closed (the other's end or its deadline settles the connection). Else room in
            // the ring.
            let front = c.queue.front().map(|j| j.code);
            let behind_answers =
                !c.inflight.is_empty() && front.is_some_and(|k| !k.is_message() || k == Code::WriteImm);
            // (A one-sided task needs no socket: with the window empty it may still run.)
            let no_way = c.out.is_none() && front.is_some_and(Code::is_message);
            let stuck = behind_answers || c.inflight.len() >= WINDOW || no_way;
            match c.backoff_until {
                Some(t) => due = Some(due.map_or(t, |d| d.min(t))),
                None if front.is_some() && c.state == ConnState::Connected && !stuck => match out {
                    Some(r) => {
                        let _ = r.tx.arm_for_room();
                        if r.tx.capacity() - r.tx.in_flight() >= need {
                            return true;
                        }
                    }
                    // A socket: it had no room (or a pass's budget ran out).
                    None => return true,
                },
                None => {}
            }
        }
        if !self.stray.borrow().is_empty() || self.cm_has_events() {
            return true;
        }
        if let Some(t) = self.cm_due(&conns) {
            due = Some(due.map_or(t, |d| d.min(t)));
        }
        if let (Some(t), Some(timer)) = (due, self.timer.borrow().as_ref()) {
            timer.arm_at(t, now);
        }
        false
    }

    fn clear_notification(&self, _core: &CtxCore) {
        if let Some(t) = self.timer.borrow().as_ref() {
            t.drain();
        }
        let _ = self.bell.drain();
        // Woken: the next pass looks at the sockets (a goodbye or a peer's end may be what
        // woke it), and the rings are disarmed.
        self.cadence.soon();
        for s in self.conns.borrow().iter().flatten().flat_map(|c| [&c.out, &c.inc]).flatten() {
            if let Some(r) = s.rings.as_deref() {
                r.rx.disarm_data();
                r.tx.disarm_room();
                let _ = r.wake.drain();
            }
        }
    }
}

impl<K: OpKind> TaskLib<Op<K>> for RdmaOps {
    fn pool(&self) -> &TaskPool<Op<K>> {
        K::pool(self)
    }

    /// Queued on its connection as it is: checked when the engine reaches it. A send that can
    /// go at once goes into the shared ring now ([`RdmaOps::send_now`]).
    fn submit(&self, core: &CtxCore, task: TaskId) -> Result<()> {
        TaskLib::<Op<K>>::submit_ex(self, core, task, TaskSubmitFlags::FLUSH)
    }

    /// Without `FLUSH` a send waits for the next pass (with what is submitted after it).
    fn submit_ex(&self, _core: &CtxCore, task: TaskId, flags: TaskSubmitFlags) -> Result<()> {
        let job = Job { code: K::CODE, id: task };
        self.with_job(job, |f| f.wrote = false);
        let at_once = flags.contains(TaskSubmitFlags::FLUSH) && matches!(K::CODE, Code::Send | Code::SendImm);
        self.enqueue(job, at_once);
        Ok(())
    }

    /// `doca_task_try_submit`: the connection, then the fields the task cannot run without
    /// (its buffers, a send's length against `max_message_size`, a sync event task's
    /// event), each `INVALID_VALUE`, as the engine would fail the task later (and with it the
    /// context). What needs the peer (its memory, its permissions) is still the engine's.
    fn check(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        let job = Job { code: K::CODE, id: task };
        let conn = self.with_job(job, |f| f.conn).flatten();
        {
            let conns = self.conns.borrow();
            match conn.and_then(|c| lookup(&conns, c)) {
                Some(c) if c.state == ConnState::Connected => {}
                _ => bail!(
                    Error::InvalidValue,
                    "rdma: try_submit refused the task (its connection is not connected)"
                ),
            }
        }
        let max = self.max_msg.get();
        let r = self.with_job(job, |f| -> Result<()> {
            let missing = |what: &str| fail!(Error::InvalidValue, "rdma: try_submit refused the task: it has no {what}");
            match job.code {
                Code::Send | Code::SendImm => {
                    let len = match &f.src {
                        Some(src) => doca_buf::list::total(&self.send_side_list(src, "source", false, false)?),
                        None => 0,
                    };
                    if len > max {
                        bail!(
                            Error::InvalidValue,
                            "rdma: try_submit refused a send of {len} bytes (at most {max}: cap rdma.max_message_size)"
                        );
                    }
                }
                Code::Read | Code::Write | Code::WriteImm => {
                    if let (Some(src), None) = (&f.src, &f.dst) {
                        if self.source_data(job.code, src)? > 0 {
                            return Err(missing("destination (its source has data)"));
                        }
                    }
                }
                Code::Cas | Code::Fadd => {
                    f.dst.as_ref().ok_or_else(|| missing("destination"))?;
                    f.src.as_ref().ok_or_else(|| missing("result buffer"))?;
                }
                Code::SeGet | Code::SeSet | Code::SeAdd => {
                    f.se.as_ref().ok_or_else(|| missing("remote sync event"))?;
                    let buf = if job.code == Code::SeGet { &f.dst } else { &f.src };
                    buf.as_ref().ok_or_else(|| missing("buffer"))?;
                }
            }
            Ok(())
        });
        r.unwrap_or(Ok(()))
    }
}

impl TaskLib<RecvFields> for RdmaOps {
    fn pool(&self) -> &TaskPool<RecvFields> {
        &self.recv_pool
    }

    /// Posted: it takes the next message of any connection.
    fn submit(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        self.recv_pool.with_payload(task, |p| {
            p.result_len = 0;
            p.imm = 0;
            p.opcode = None;
            p.from = None;
        });
        self.posted.borrow_mut().push_back(task);
        Ok(())
    }

    /// `doca_task_try_submit`: a destination list longer than the receive list length
    /// (`doca_rdma_task_receive_set_dst_buf_list_len`), or an element that cannot be
    /// written, is refused before it is posted (`INVALID_VALUE`, DOCA's library's check);
    /// no destination is an empty message's receive.
    fn check(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        let dst = self.recv_pool.with_payload(task, |p| p.dst.clone()).flatten();
        match dst {
            Some(dst) => self.recv_list(&dst).map(drop),
            None => Ok(()),
        }
    }
}
