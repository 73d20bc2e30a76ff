//! The process's status page: what `doca_emu` shows of a running emulation without asking
//! the process anything, and the mailbox through which it hands the process a fault plan.
//!
//! | part                         | what                                                      |
//! |------------------------------|-----------------------------------------------------------|
//! | [`Page`], the `*_BASE`/`W_*` constants | the layout: 64-bit words, one field a word       |
//! | [`publish`], [`attach`], [`is_attached`] | the shared mapping ([`doca_link::status`] makes the file in the fabric directory) |
//! | [`EngineSlot`], [`EngineRow`] | a progress engine's row (core fills it from [`crate::Pe`] and its contexts' tasks) |
//! | [`Entry`]                    | a library object's row (server, client, consumer, …): counters the library bumps |
//! | [`on_plan`]                  | who receives an injected plan (the fault-plan installer registers here) |
//! | [`Snapshot`]                 | a reader's validated copy: parsed from bytes, never trusted |
//!
//! **Writing.** Each word is an `AtomicU64` written by this process with relaxed stores; a
//! row has one writer (the thread of its engine or context), so a counter is a relaxed load
//! and store, no locked instruction, no syscall, no allocation. Rows are claimed and released
//! under a lock (context creation, not the data path); a row's identity (kind, devices, name)
//! is written between two increments of its generation word, odd meanwhile, so a reader that
//! sees the same even generation before and after knows the identity is whole. Counters are
//! single words: a reader never sees one torn.
//!
//! **Before the mapping exists** (no library made it yet) rows live in a page in this
//! process's memory; [`attach`] copies it into the mapping and switches. Increments made by
//! other threads during that copy may be lost (counters only, once).
//!
//! **Progress** ([`EngineSlot`]): each pass bumps a count of the engine's own, writes it and
//! the time to the row every [`TIME_EVERY`] passes (the coarse monotonic clock, read through
//! the vDSO; see [`E_LAST`]) and does one relaxed load of the mailbox's sequence; only when that changed does it read
//! the plan and call the handler. An engine's row is one cache line: engines on different
//! threads never write the same line.
//!
//! **Reading** ([`Snapshot::parse`]): size, magic and version are checked, every count and
//! length is bounded, texts are cut at their length and decoded lossily; garbage gives an
//! error or odd numbers, never a panic.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed, Ordering::Release};
use std::sync::{Mutex, OnceLock};

use crate::pci::PciAddr;
use crate::throttle::{held_back, Throttle};

/// `"DOCA-EMU"`, little-endian: the first word of a page.
pub const MAGIC: u64 = u64::from_le_bytes(*b"DOCA-EMU");
/// The layout's version (word [`W_VERSION`]).
pub const VERSION: u64 = 2;
pub use doca_link::status::{Page, PAGE_BYTES, PAGE_WORDS};

/// Header word: [`MAGIC`] (written last, with release: a page without it is not ready).
pub const W_MAGIC: usize = 0;
/// Header word: [`VERSION`].
pub const W_VERSION: usize = 1;
/// Header word: [`PAGE_BYTES`].
pub const W_SIZE: usize = 2;
/// Header word: the writer's pid.
pub const W_PID: usize = 3;
/// Header word: the writer's uid.
pub const W_UID: usize = 4;
/// Header word: the writer's start time (`/proc/<pid>/stat` field 22, clock ticks since
/// boot): with the pid, tells the writer from a later process that reuses its pid.
pub const W_START: usize = 5;
/// Header word: when the page was made (coarse monotonic ns).
pub const W_CREATED: usize = 6;
/// Header words 7–8: the process's name (`/proc/self/comm`, 16 bytes, NUL-padded).
pub const W_COMM: usize = 7;
/// Header word: connections open now without a row of their own ([`Entry::claim_connection`]:
/// connections never take the last [`RESERVED_ROWS`] free rows). Unlike the two counts below,
/// a gauge: it goes down when such a connection goes.
pub const W_CONNS_UNSHOWN: usize = 9;
/// Header word: engines made but not shown (all [`ENGINES`] rows taken).
pub const W_ENGINES_UNSHOWN: usize = 10;
/// Header word: objects made but not shown (all [`ENTRIES`] rows taken).
pub const W_ENTRIES_UNSHOWN: usize = 11;

/// First word of the engine rows.
pub const ENGINE_BASE: usize = 16;
/// Number of engine rows.
pub const ENGINES: usize = 8;
/// Words per engine row.
pub const ENGINE_WORDS: usize = 8;
/// Engine word: 1 while the engine lives.
pub const E_USED: usize = 0;
/// Engine word: its number in this process (1, 2, … in creation order).
pub const E_ID: usize = 1;
/// Engine word: connected contexts.
pub const E_CTXS: usize = 2;
/// Engine word: 1 while notification is requested (the application sleeps on the handle).
pub const E_ARMED: usize = 3;
/// Engine word: submitted, not yet completed tasks of its contexts.
pub const E_INFLIGHT: usize = 4;
/// Engine word: progress calls, written with [`E_LAST`] (so up to [`TIME_EVERY`] − 1 calls
/// behind a busy engine's own count; exact for an engine asleep on its handle).
pub const E_PROGRESS: usize = 5;
/// Engine word: time of a recent progress (coarse monotonic ns; 0 never): recorded at the
/// first progress call and every [`TIME_EVERY`] calls after, and when the engine arms or
/// leaves notification — so a busy engine never reads the clock more than once per
/// [`TIME_EVERY`] passes, and an engine that progresses rarely with nothing to do may look
/// up to [`TIME_EVERY`] calls older than it is.
pub const E_LAST: usize = 6;
/// See [`E_LAST`].
pub const TIME_EVERY: u64 = 16;

/// First word of the object rows.
pub const ENTRY_BASE: usize = ENGINE_BASE + ENGINES * ENGINE_WORDS;
/// Number of object rows.
pub const ENTRIES: usize = 48;
/// Words per object row.
pub const ENTRY_WORDS: usize = 32;
/// Free object rows a connection's row never takes ([`Entry::claim_connection`]): however
/// many connections a server has, this many objects made after them still get a row.
pub const RESERVED_ROWS: usize = 16;
/// Object word: generation (odd while the identity is being written).
pub const O_GEN: usize = 0;
/// Object word: 1 while the object lives.
pub const O_USED: usize = 1;
/// Object words 2–3: its kind (`cc_server`, `cc_client`, …; 16 bytes, NUL-padded).
pub const O_KIND: usize = 2;
/// Object word: its device's PCI address ([`pack_pci`]; `u64::MAX` none).
pub const O_DEV: usize = 4;
/// Object word: its representor's PCI address (servers; `u64::MAX` none).
pub const O_REP: usize = 5;
/// Object word: the number of the engine its context is connected to (0 none yet).
pub const O_ENGINE: usize = 6;
/// Object word: its context's state, for objects that are contexts, or a connection's
/// ([`state_code`], [`CONN_CONNECTED`], [`CONN_CLOSING`]; 0: not told).
pub const O_STATE: usize = 7;
/// Object word: length of its name in bytes.
pub const O_NAME_LEN: usize = 8;
/// Object words 9–14: its name (service name; 48 bytes at most, cut at a character).
pub const O_NAME: usize = 9;
/// Object word: open connections.
pub const O_CONNS: usize = 15;
/// Object word: posted receive buffers (consumers).
pub const O_POSTED: usize = 16;
/// Object word: send-ring slots in use at the last send, as this side last saw the peer's
/// position (an upper bound).
pub const O_RING_FILL: usize = 17;
/// Object word: slots of that ring.
pub const O_RING_SLOTS: usize = 18;
/// Object word: messages sent.
pub const O_MSGS_SENT: usize = 19;
/// Object word: bytes sent.
pub const O_BYTES_SENT: usize = 20;
/// Object word: messages received.
pub const O_MSGS_RECV: usize = 21;
/// Object word: bytes received.
pub const O_BYTES_RECV: usize = 22;
/// Object word: the connection it belongs to (consumers and producers), or that it is
/// (connection rows; 0 none).
pub const O_CONN_ID: usize = 23;
/// Object word: the pid of the process at the other end (connection rows; 0 none).
pub const O_PEER_PID: usize = 24;
/// Object word: tasks submitted and not yet worked through (engine library contexts: the
/// length of its queue at the end of its last progress pass).
pub const O_QUEUED: usize = 25;
/// Object word: tasks its engine worked through (engine library contexts; completed
/// successfully or failed, flushed ones not counted).
pub const O_TASKS_DONE: usize = 26;
/// Object word: bytes its engine worked through (engine library contexts).
pub const O_BYTES_DONE: usize = 27;
/// Object word: what the row is: [`ROLE_OBJECT`], [`ROLE_CONNECTION`] or
/// [`ROLE_ENGINE_CTX`].
pub const O_ROLE: usize = 28;
/// Object word: a connection row's owner (a server, an RDMA context): the number of the
/// owner's row (its index from 1; 0 none: the owner has no row).
pub const O_PARENT: usize = 29;
// Object words 30–31: reserved (0).

/// [`O_ROLE`]: a library object (a server, client, consumer, …: [`Entry::claim`]).
pub const ROLE_OBJECT: u64 = 0;
/// [`O_ROLE`]: one connection of an object ([`Entry::claim_connection`]).
pub const ROLE_CONNECTION: u64 = 1;
/// [`O_ROLE`]: an engine library context (DMA, SHA, …: [`Entry::claim_engine_ctx`]), whose
/// words [`O_QUEUED`], [`O_TASKS_DONE`] and [`O_BYTES_DONE`] count its tasks.
pub const ROLE_ENGINE_CTX: u64 = 2;

/// First word of the mailbox.
pub const MAIL_BASE: usize = ENTRY_BASE + ENTRIES * ENTRY_WORDS;
/// Mailbox word: the plan's sequence number, written by `doca_emu inject` after the text.
pub const M_PLAN_SEQ: usize = MAIL_BASE;
/// Mailbox word: the plan's length in bytes (at most [`PLAN_MAX`]).
pub const M_PLAN_LEN: usize = MAIL_BASE + 1;
/// Mailbox words: the plan's text (UTF-8).
pub const M_PLAN_TEXT: usize = MAIL_BASE + 2;
/// Longest plan in bytes.
pub const PLAN_MAX: usize = 2048;
/// Mailbox word: the sequence number of the plan answered (written by the process last,
/// with release).
pub const M_ANSWER_SEQ: usize = M_PLAN_TEXT + PLAN_MAX / 8;
/// Mailbox word: the answer: [`ANSWER_ACCEPTED`], [`ANSWER_REFUSED`] or [`ANSWER_UNAVAILABLE`].
pub const M_ANSWER_CODE: usize = M_ANSWER_SEQ + 1;
/// Mailbox word: the answer text's length.
pub const M_ANSWER_LEN: usize = M_ANSWER_SEQ + 2;
/// Mailbox words: the answer text (the handler's error, or why nothing handled it).
pub const M_ANSWER_TEXT: usize = M_ANSWER_SEQ + 3;
/// Longest answer text in bytes.
pub const ANSWER_MAX: usize = 256;
/// The handler installed the plan.
pub const ANSWER_ACCEPTED: u64 = 1;
/// The handler refused the plan (the text says why).
pub const ANSWER_REFUSED: u64 = 2;
/// No handler is registered in this process ([`on_plan`]).
pub const ANSWER_UNAVAILABLE: u64 = 3;
/// What an unavailable answer says.
pub const UNAVAILABLE_TEXT: &str = "fault plans are not available in this process";

const _: () = assert!(M_ANSWER_TEXT + ANSWER_MAX / 8 <= PAGE_WORDS);
const _: () = assert!(O_ROLE < ENTRY_WORDS && RESERVED_ROWS < ENTRIES);

/// A PCI address as one word (`domain << 16 | bus << 8 | device << 3 | function`).
pub fn pack_pci(pci: PciAddr) -> u64 {
    (pci.domain() as u64) << 16 | (pci.bus() as u64) << 8 | (pci.device() as u64) << 3 | pci.function() as u64
}

/// The PCI address of a word [`pack_pci`] made (`None` for `u64::MAX` or nonsense).
pub fn unpack_pci(w: u64) -> Option<PciAddr> {
    if w > 0xffff_ffff {
        return None;
    }
    PciAddr::new((w >> 16) as u16, (w >> 8) as u8, ((w >> 3) & 0x1f) as u8, (w & 7) as u8).ok()
}

/// Words and texts of a [`Page`] (the layout's accessors).
trait Words {
    fn w(&self, i: usize) -> &AtomicU64;
    fn write_text(&self, at: usize, words: usize, text: &[u8]);
    fn read_text(&self, at: usize, len: usize) -> Vec<u8>;
}

impl Words for Page {
    fn w(&self, i: usize) -> &AtomicU64 {
        &self.0[i]
    }

    fn write_text(&self, at: usize, words: usize, text: &[u8]) {
        for i in 0..words {
            let mut b = [0u8; 8];
            for (j, x) in b.iter_mut().enumerate() {
                *x = text.get(i * 8 + j).copied().unwrap_or(0);
            }
            self.w(at + i).store(u64::from_le_bytes(b), Relaxed);
        }
    }

    fn read_text(&self, at: usize, len: usize) -> Vec<u8> {
        (0..len.div_ceil(8)).flat_map(|i| self.w(at + i).load(Relaxed).to_le_bytes()).take(len).collect()
    }
}

/// What this layout writes into a [`Page`] besides rows.
pub trait PageExt {
    /// Fills the header of a fresh page for this process (magic last, with release).
    fn init_header(&self, start_time: u64);
}

impl PageExt for Page {
    fn init_header(&self, start_time: u64) {
        self.w(W_VERSION).store(VERSION, Relaxed);
        self.w(W_SIZE).store(PAGE_BYTES as u64, Relaxed);
        self.w(W_PID).store(std::process::id() as u64, Relaxed);
        self.w(W_UID).store(rustix::process::getuid().as_raw() as u64, Relaxed);
        self.w(W_START).store(start_time, Relaxed);
        self.w(W_CREATED).store(now_ns(), Relaxed);
        let comm = std::fs::read("/proc/self/comm").unwrap_or_default();
        let comm = comm.strip_suffix(b"\n").unwrap_or(&comm);
        self.write_text(W_COMM, 2, &comm[..comm.len().min(16)]);
        self.w(W_MAGIC).store(MAGIC, Release);
    }
}

/// The rows written before a mapping exists.
static LOCAL: Page = Page::new();
/// The shared mapping, once attached.
static SHARED: OnceLock<&'static Page> = OnceLock::new();
/// Claims, releases and the switch to the mapping.
static ROWS: Mutex<()> = Mutex::new(());
/// Engine numbers.
static NEXT_ENGINE: AtomicU64 = AtomicU64::new(1);
/// The plan sequence last taken by this process.
static PLAN_SEEN: AtomicU64 = AtomicU64::new(0);

/// The page rows are written to now.
#[inline]
fn page() -> &'static Page {
    match SHARED.get() {
        Some(p) => p,
        None => &LOCAL,
    }
}

/// Environment variable: `off` turns the status page off for the process (no page file, no
/// writes; progress does not look at the mailbox).
pub const STATUS_ENV: &str = "DOCA_EMU_STATUS";

/// Whether the status page is on (see [`STATUS_ENV`]; read once).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(STATUS_ENV).is_none_or(|v| v != "off"))
}

/// The coarse monotonic clock in ns (a vDSO read, no syscall; a few ms of resolution).
#[inline]
pub fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicCoarse);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Makes `shared` (a zeroed page, mapped from a file others can read) this process's status
/// page: fills its header, copies the rows written so far, and writes there from now on.
/// `false` when a page was attached already (`shared` is then left alone).
pub fn attach(shared: &'static Page, start_time: u64) -> bool {
    let _rows = ROWS.lock().unwrap_or_else(|e| e.into_inner());
    if SHARED.get().is_some() {
        return false;
    }
    for i in ENGINE_BASE..MAIL_BASE {
        shared.w(i).store(LOCAL.w(i).load(Relaxed), Relaxed);
    }
    for i in [W_CONNS_UNSHOWN, W_ENGINES_UNSHOWN, W_ENTRIES_UNSHOWN] {
        shared.w(i).store(LOCAL.w(i).load(Relaxed), Relaxed);
    }
    shared.init_header(start_time);
    SHARED.set(shared).is_ok()
}

/// Makes this process's status file in the fabric directory and attaches it, once (not when
/// [`STATUS_ENV`] is `off`); a failure is logged (the process runs on, unseen by
/// `doca_emu`). Core calls it at the process's first engine ([`crate::Pe::create`]) and
/// first device ([`crate::DevInfo::open`]), so every process that uses the library, Rust or
/// C, whatever libraries it uses, is seen; libraries need not call it.
pub fn publish() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if is_attached() || !enabled() {
            return;
        }
        let start = process_start_time(std::process::id()).unwrap_or(0);
        if let Err(e) = doca_link::status::create(|page| attach(page, start)) {
            tracing::warn!(target: "doca_sdk", "status page not made (doca_emu will not see this process): {}", crate::Error::from(e));
        }
    });
}

/// Whether a shared page is attached.
pub fn is_attached() -> bool {
    SHARED.get().is_some()
}

/// One word of a row: a relaxed load and store (each row has one writer thread).
#[inline]
fn bump(w: &AtomicU64, by: u64) {
    w.store(w.load(Relaxed).wrapping_add(by), Relaxed);
}

/// A progress engine's row (held by the engine; freed on drop). All engines beyond
/// [`ENGINES`] share no row: they are counted in [`W_ENGINES_UNSHOWN`].
pub struct EngineSlot {
    row: Option<usize>,
    id: u64,
    on: bool,
    /// The page the row is in, found once at the claim: the engine's hot path writes it
    /// without asking which page is in use. (Core attaches the shared page in
    /// [`publish`], which [`crate::Pe::create`] runs before it claims a row, so the page of
    /// an engine never changes after its claim.)
    page: &'static Page,
    /// The row's pass count, found once at the claim (written without an index).
    progress: Option<&'static AtomicU64>,
    /// Passes so far, written to the row's count with each stamp of its time (and when the
    /// engine arms or leaves notification): a pass adds to a word of its own, which no
    /// reader looks at (a read-modify-write of the shared word each pass cost an empty pass
    /// about 1 ns here).
    passes: std::cell::Cell<u64>,
}

impl EngineSlot {
    /// Claims a row for a new engine.
    pub fn claim() -> EngineSlot {
        let id = NEXT_ENGINE.fetch_add(1, Relaxed);
        if !enabled() {
            return EngineSlot {
                row: None,
                id,
                on: false,
                page: &LOCAL,
                progress: None,
                passes: Default::default(),
            };
        }
        let _rows = ROWS.lock().unwrap_or_else(|e| e.into_inner());
        let p = page();
        let row = (0..ENGINES)
            .map(|i| ENGINE_BASE + i * ENGINE_WORDS)
            .find(|&r| p.w(r + E_USED).load(Relaxed) == 0);
        match row {
            Some(r) => {
                for k in 0..ENGINE_WORDS {
                    p.w(r + k).store(0, Relaxed);
                }
                p.w(r + E_ID).store(id, Relaxed);
                p.w(r + E_USED).store(1, Release);
            }
            None => bump(p.w(W_ENGINES_UNSHOWN), 1),
        }
        EngineSlot {
            row,
            id,
            on: true,
            page: p,
            progress: row.map(|r| p.w(r + E_PROGRESS)),
            passes: Default::default(),
        }
    }

    /// The count and time of the last pass (one pass in [`TIME_EVERY`]).
    #[cold]
    fn stamp(&self, calls: u64) {
        if let (Some(r), Some(w)) = (self.row, self.progress) {
            w.store(calls, Relaxed);
            self.page.w(r + E_LAST).store(now_ns(), Relaxed);
        }
    }

    /// The engine's number in this process.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// A progress pass: its count and time. True when a new plan waits in the mailbox: the
    /// engine then takes it with [`EngineSlot::take_plan`] (inside the call, as it runs
    /// callbacks).
    #[inline]
    pub fn progressed(&self) -> bool {
        if !self.on {
            return false;
        }
        let p = self.page;
        let calls = self.passes.get().wrapping_add(1);
        self.passes.set(calls);
        if calls % TIME_EVERY == 1 {
            self.stamp(calls);
        }
        p.w(M_PLAN_SEQ).load(Relaxed) != PLAN_SEEN.load(Relaxed)
    }

    /// Takes the plan waiting in the mailbox ([`EngineSlot::progressed`] said one does): the
    /// handler ([`on_plan`]) gets it and its answer goes back.
    #[cold]
    pub fn take_plan(&self) {
        let seq = self.page.w(M_PLAN_SEQ).load(Relaxed);
        if seq != PLAN_SEEN.load(Relaxed) {
            let handler = PLAN_HANDLER.get().copied().unwrap_or(install_fault_plan);
            take_plan(self.page, seq, &PLAN_SEEN, Some(handler));
        }
    }

    /// The handle its contexts count their tasks through.
    pub fn row(&self) -> EngineRow {
        EngineRow(self.row.map(|r| self.page.w(r + E_INFLIGHT)), self.id)
    }

    /// Connected contexts now.
    pub fn set_ctxs(&self, n: usize) {
        if let Some(r) = self.row {
            self.page.w(r + E_CTXS).store(n as u64, Relaxed);
        }
    }

    /// Whether the application sleeps on the notification handle (the time is recorded
    /// too: it goes to sleep or wakes up in its progress loop).
    pub fn set_armed(&self, armed: bool) {
        if let Some(r) = self.row {
            let p = self.page;
            p.w(r + E_ARMED).store(armed as u64, Relaxed);
            p.w(r + E_PROGRESS).store(self.passes.get(), Relaxed);
            p.w(r + E_LAST).store(now_ns(), Relaxed);
        }
    }
}

impl Drop for EngineSlot {
    fn drop(&mut self) {
        if let Some(r) = self.row {
            let _rows = ROWS.lock().unwrap_or_else(|e| e.into_inner());
            self.page.w(r + E_USED).store(0, Release);
        }
    }
}

/// An engine's row as its contexts hold it (on the engine's thread): its in-flight word,
/// and the engine's number.
#[derive(Clone, Copy, Debug, Default)]
pub struct EngineRow(Option<&'static AtomicU64>, u64);

impl EngineRow {
    /// The engine's number (0: not connected to an engine).
    pub fn id(self) -> u64 {
        self.1
    }

    /// Tasks submitted (`delta` > 0) or completed.
    #[inline]
    pub fn add_inflight(self, delta: isize) {
        if let Some(w) = self.0 {
            bump(w, delta as u64);
        }
    }
}

/// What a library object shows about itself.
#[derive(Clone, Copy, Debug)]
pub struct Identity<'a> {
    /// Its kind (`cc_server`, …; 16 bytes at most).
    pub kind: &'a str,
    /// Its device.
    pub dev: Option<PciAddr>,
    /// Its representor (servers).
    pub rep: Option<PciAddr>,
    /// Its name (cut to 48 bytes).
    pub name: &'a str,
    /// The connection it belongs to (consumers, producers).
    pub conn_id: u64,
}

/// A library object's row (a server, a client, a consumer, a connection, …), freed on drop.
/// Beyond [`ENTRIES`] objects share no row: they are counted in [`W_ENTRIES_UNSHOWN`] and
/// their counters go nowhere. Every setter is a relaxed store: call it from the object's
/// thread.
pub struct Entry {
    row: Option<usize>,
    /// The row's words, found once at the claim: a counter on a message's path writes them
    /// without asking which page is in use (as an engine's row, [`EngineSlot`]: the page is
    /// attached at the process's first engine or device, before any object claims a row).
    words: Option<&'static [AtomicU64; ENTRY_WORDS]>,
    /// A connection without a row, counted in [`W_CONNS_UNSHOWN`] until it goes.
    unshown_conn: bool,
}

impl Entry {
    /// An object without a row, on purpose (not counted as unshown): its setters do nothing.
    pub const fn none() -> Entry {
        Entry { row: None, words: None, unshown_conn: false }
    }

    /// Claims a row for an object with `id`.
    pub fn claim(id: Identity<'_>) -> Entry {
        Entry::claim_leaving(id, 0, (ROLE_OBJECT, 0))
    }

    /// Claims a row for an engine library context with `id` (core's queue kit does, for
    /// every such library).
    pub fn claim_engine_ctx(id: Identity<'_>) -> Entry {
        Entry::claim_leaving(id, 0, (ROLE_ENGINE_CTX, 0))
    }

    /// Claims a row for a connection of `owner` with `id` (`id.conn_id` is its number; the row
    /// names its owner's, [`O_PARENT`]), only while more
    /// than [`RESERVED_ROWS`] rows are free: a server with hundreds of connections shows the
    /// first ones each in its row and never takes the rows the objects made after them need
    /// (a connection refused a row stays without one; one closing frees its row for the
    /// next). A connection without a row is counted in [`W_CONNS_UNSHOWN`] while it lasts;
    /// its traffic still shows in its server's row.
    pub fn claim_connection(id: Identity<'_>, owner: &Entry) -> Entry {
        Entry::claim_leaving(id, RESERVED_ROWS, (ROLE_CONNECTION, owner.row.map_or(0, row_number)))
    }

    /// Claims a free row for a `role` object (owned by row number `parent`, 0 none) if more
    /// than `reserve` rows are free.
    fn claim_leaving(id: Identity<'_>, reserve: usize, (role, parent): (u64, u64)) -> Entry {
        if !enabled() {
            return Entry::none();
        }
        let _rows = ROWS.lock().unwrap_or_else(|e| e.into_inner());
        let p = page();
        let mut free = (0..ENTRIES)
            .map(|i| ENTRY_BASE + i * ENTRY_WORDS)
            .filter(|&r| p.w(r + O_USED).load(Relaxed) == 0);
        let row = free.next();
        let row = if reserve == 0 { row } else { row.filter(|_| free.count() >= reserve) };
        let Some(r) = row else {
            if reserve == 0 {
                bump(p.w(W_ENTRIES_UNSHOWN), 1);
            } else {
                bump(p.w(W_CONNS_UNSHOWN), 1);
            }
            return Entry { row: None, words: None, unshown_conn: reserve != 0 };
        };
        bump(p.w(r + O_GEN), 1); // odd: identity being written
        for k in O_USED..ENTRY_WORDS {
            p.w(r + k).store(0, Relaxed);
        }
        let kind = id.kind.as_bytes();
        p.write_text(r + O_KIND, 2, &kind[..kind.len().min(16)]);
        p.w(r + O_DEV).store(id.dev.map_or(u64::MAX, pack_pci), Relaxed);
        p.w(r + O_REP).store(id.rep.map_or(u64::MAX, pack_pci), Relaxed);
        let mut cut = id.name.len().min(48);
        while !id.name.is_char_boundary(cut) {
            cut -= 1;
        }
        p.w(r + O_NAME_LEN).store(cut as u64, Relaxed);
        p.write_text(r + O_NAME, 6, &id.name.as_bytes()[..cut]);
        p.w(r + O_CONN_ID).store(id.conn_id, Relaxed);
        p.w(r + O_ROLE).store(role, Relaxed);
        p.w(r + O_PARENT).store(parent, Relaxed);
        p.w(r + O_USED).store(1, Relaxed);
        p.w(r + O_GEN).fetch_add(1, Release); // even: whole
        let words = p.0.get(r..r + ENTRY_WORDS).and_then(|w| w.try_into().ok());
        Entry { row: Some(r), words, unshown_conn: false }
    }

    /// Whether the object has a row (its counters are shown).
    pub fn is_shown(&self) -> bool {
        self.row.is_some()
    }

    #[inline]
    fn word(&self, k: usize) -> Option<&'static AtomicU64> {
        self.words.map(|w| &w[k])
    }

    /// The row's words (the counters below then index a fixed-size array).
    #[inline]
    fn words(&self) -> Option<&'static [AtomicU64; ENTRY_WORDS]> {
        self.words
    }

    /// A message of `bytes` sent.
    #[inline]
    pub fn sent(&self, bytes: usize) {
        if let Some(w) = self.words() {
            bump(&w[O_MSGS_SENT], 1);
            bump(&w[O_BYTES_SENT], bytes as u64);
        }
    }

    /// A message of `bytes` sent, after which the send ring holds `fill` of its `slots`
    /// ([`Entry::sent`] and [`Entry::ring_fill`] in one).
    #[inline]
    pub fn sent_filled(&self, bytes: usize, fill: u64, slots: u64) {
        if let Some(w) = self.words() {
            bump(&w[O_MSGS_SENT], 1);
            bump(&w[O_BYTES_SENT], bytes as u64);
            w[O_RING_FILL].store(fill, Relaxed);
            w[O_RING_SLOTS].store(slots, Relaxed);
        }
    }

    /// A message of `bytes` received.
    #[inline]
    pub fn received(&self, bytes: usize) {
        if let Some(w) = self.words() {
            bump(&w[O_MSGS_RECV], 1);
            bump(&w[O_BYTES_RECV], bytes as u64);
        }
    }

    /// Send-ring slots in use after a send, of `slots`.
    #[inline]
    pub fn ring_fill(&self, fill: u64, slots: u64) {
        if let Some(w) = self.words() {
            w[O_RING_FILL].store(fill, Relaxed);
            w[O_RING_SLOTS].store(slots, Relaxed);
        }
    }

    /// Open connections now.
    pub fn set_connections(&self, n: usize) {
        if let Some(w) = self.word(O_CONNS) {
            w.store(n as u64, Relaxed);
        }
    }

    /// Posted receive buffers now.
    #[inline]
    pub fn set_posted(&self, n: usize) {
        if let Some(w) = self.word(O_POSTED) {
            w.store(n as u64, Relaxed);
        }
    }

    /// Where the object's context writes its state ([`StateSlot`]; `None` without a row).
    pub fn state_slot(&self) -> Option<StateSlot> {
        let r = self.row?;
        Some(StateSlot { row: r, gen: page().w(r + O_GEN).load(Relaxed) })
    }

    /// The engine (its [`EngineSlot::id`]) the object's context is connected to.
    pub fn set_engine(&self, engine: u64) {
        if let Some(w) = self.word(O_ENGINE) {
            w.store(engine, Relaxed);
        }
    }

    /// A connection row: the pid of the process at the other end.
    pub fn set_peer_pid(&self, pid: i32) {
        if let Some(w) = self.word(O_PEER_PID) {
            w.store(u64::try_from(pid).unwrap_or(0), Relaxed);
        }
    }

    /// A connection row: up ([`CONN_CONNECTED`]) or being closed ([`CONN_CLOSING`]).
    pub fn set_connection_up(&self, up: bool) {
        if let Some(w) = self.word(O_STATE) {
            w.store(if up { CONN_CONNECTED } else { CONN_CLOSING }, Relaxed);
        }
    }

    /// An engine library context after a progress pass: `queued` tasks wait, and the pass
    /// worked through `done` more tasks and `bytes` more bytes (three relaxed stores and two
    /// loads, once a pass whatever its number of tasks).
    #[inline]
    pub fn engine_pass(&self, queued: usize, done: u64, bytes: u64) {
        if let Some(w) = self.words() {
            w[O_QUEUED].store(queued as u64, Relaxed);
            bump(&w[O_TASKS_DONE], done);
            bump(&w[O_BYTES_DONE], bytes);
        }
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        if self.unshown_conn {
            let _rows = ROWS.lock().unwrap_or_else(|e| e.into_inner());
            bump(page().w(W_CONNS_UNSHOWN), u64::MAX); // minus one
        }
        if let Some(r) = self.row {
            let _rows = ROWS.lock().unwrap_or_else(|e| e.into_inner());
            let p = page();
            bump(p.w(r + O_GEN), 1);
            p.w(r + O_USED).store(0, Relaxed);
            p.w(r + O_GEN).fetch_add(1, Release);
        }
    }
}

/// A context's state word in its object's row: written on each state change, only while the
/// row is still the one the object claimed (its generation unchanged), so a context that
/// outlives its row never writes into another object's.
#[derive(Clone, Copy, Debug)]
pub struct StateSlot {
    row: usize,
    gen: u64,
}

impl StateSlot {
    /// Records `state` (a relaxed store; state changes are rare).
    pub fn write(self, state: crate::CtxState) {
        let p = page();
        if p.w(self.row + O_GEN).load(Relaxed) == self.gen {
            p.w(self.row + O_STATE).store(state_code(state), Relaxed);
        }
    }
}

/// The number of the row at word `r` (from 1).
fn row_number(r: usize) -> u64 {
    ((r - ENTRY_BASE) / ENTRY_WORDS + 1) as u64
}

/// A connection's state word: up.
pub const CONN_CONNECTED: u64 = 5;
/// A connection's state word: being closed (by this side, the peer, or a fault plan).
pub const CONN_CLOSING: u64 = 6;

/// The page's code of a context state: 1 Idle, 2 Starting, 3 Running, 4 Stopping.
pub fn state_code(state: crate::CtxState) -> u64 {
    match state {
        crate::CtxState::Idle => 1,
        crate::CtxState::Starting => 2,
        crate::CtxState::Running => 3,
        crate::CtxState::Stopping => 4,
    }
}

/// A state word read from a page (anything else than 1–6: none).
pub fn state_name(code: u64) -> Option<&'static str> {
    match code {
        1 => Some("idle"),
        2 => Some("starting"),
        3 => Some("running"),
        4 => Some("stopping"),
        CONN_CONNECTED => Some("connected"),
        CONN_CLOSING => Some("closing"),
        _ => None,
    }
}

/// What receives an injected plan: `Ok` when installed, else why not.
pub type PlanHandler = fn(&str) -> Result<(), String>;

static PLAN_HANDLER: OnceLock<PlanHandler> = OnceLock::new();

/// Registers the receiver of plans that `doca_emu inject` writes into this process's page
/// (once per process: `false` when one is registered already), in place of the default,
/// which installs the text as this process's fault plan ([`crate::fault::install_text`]).
/// Each answer is logged, at most one line per kind of answer and second (the page's
/// mailbox is writable by every process of the user).
/// The handler runs inside a progress call, on the engine's thread. ([`ANSWER_UNAVAILABLE`]
/// is what a mailbox read with no handler at all answers.)
pub fn on_plan(handler: PlanHandler) -> bool {
    PLAN_HANDLER.set(handler).is_ok()
}

/// The default receiver of injected plans: the text replaces this process's fault plan (a
/// bad one is refused, the error naming the bad part, and the old plan stays).
fn install_fault_plan(text: &str) -> Result<(), String> {
    crate::fault::install_injected(text).map_err(|e| e.to_string())
}

/// The mailbox's log lines, rate-limited: any process of the user can write plans into the
/// page in a loop, so each kind of answer (accepted, refused, no handler) logs at most one
/// line a second, the next one counting those held back.
static PLAN_LOG: Mutex<Option<Throttle>> = Mutex::new(None);

/// Whether a line about an answer of `code` may be logged now (`Some(held back)`).
fn admit_plan_log(code: u64) -> Option<u64> {
    let mut t = PLAN_LOG.lock().unwrap_or_else(|p| p.into_inner());
    t.get_or_insert_with(Throttle::new).admit(code as u32, std::time::Instant::now())
}

/// Reads the plan of sequence `seq` in `p` and answers it with `handler` (the cold part of
/// a progress pass); `taken` is the last sequence taken.
#[cold]
#[inline(never)]
fn take_plan(p: &Page, seq: u64, taken: &AtomicU64, handler: Option<PlanHandler>) {
    let seen = taken.load(Relaxed);
    // One engine of the process takes it (others, on other threads, see it taken).
    if taken.compare_exchange(seen, seq, Relaxed, Relaxed).is_err() {
        return;
    }
    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    let len = p.w(M_PLAN_LEN).load(Relaxed) as usize;
    let mut installed = String::new();
    let (code, text) = if len > PLAN_MAX {
        (ANSWER_REFUSED, format!("plan of {len} bytes: longer than {PLAN_MAX}"))
    } else {
        let bytes = p.read_text(M_PLAN_TEXT, len);
        if p.w(M_PLAN_SEQ).load(std::sync::atomic::Ordering::Acquire) != seq {
            return; // rewritten while read: the newer plan is taken on the next pass
        }
        match String::from_utf8(bytes) {
            Err(_) => (ANSWER_REFUSED, "plan is not UTF-8".to_string()),
            Ok(plan) => match handler {
                None => (ANSWER_UNAVAILABLE, UNAVAILABLE_TEXT.to_string()),
                Some(h) => match h(&plan) {
                    Ok(()) => {
                        installed = plan.trim().to_string();
                        (ANSWER_ACCEPTED, String::new())
                    }
                    Err(why) => (ANSWER_REFUSED, why),
                },
            },
        }
    };
    if let Some(held) = admit_plan_log(code) {
        let held = held_back(held);
        match code {
            ANSWER_ACCEPTED => {
                tracing::info!(target: "doca_sdk", "status page: plan #{seq} installed: {installed}{held}")
            }
            _ => tracing::error!(
                target: "doca_sdk",
                "status page: plan #{seq} ({len} bytes) not installed: {text}{held}"
            ),
        }
    }
    let mut cut = text.len().min(ANSWER_MAX);
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    p.w(M_ANSWER_CODE).store(code, Relaxed);
    p.w(M_ANSWER_LEN).store(cut as u64, Relaxed);
    p.write_text(M_ANSWER_TEXT, ANSWER_MAX / 8, &text.as_bytes()[..cut]);
    p.w(M_ANSWER_SEQ).store(seq, Release);
}

/// Why bytes are not a status page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageError {
    /// Not [`PAGE_BYTES`] long.
    Size(usize),
    /// No [`MAGIC`] (not a page, or not ready yet).
    Magic,
    /// Another layout version.
    Version(u64),
    /// A header field is out of range.
    Header(&'static str),
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageError::Size(n) => write!(f, "{n} bytes, not {PAGE_BYTES}"),
            PageError::Magic => write!(f, "no page magic (not a status page, or not ready)"),
            PageError::Version(v) => write!(f, "layout version {v}, this tool reads {VERSION}"),
            PageError::Header(what) => write!(f, "bad header: {what}"),
        }
    }
}

/// An engine, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineView {
    /// Its number in its process.
    pub id: u64,
    /// Connected contexts.
    pub ctxs: u64,
    /// Sleeping on its notification handle.
    pub armed: bool,
    /// Tasks in flight.
    pub inflight: u64,
    /// Progress calls.
    pub progress_calls: u64,
    /// Time of its last progress (coarse monotonic ns; 0 never).
    pub last_progress_ns: u64,
}

/// A library object, as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryView {
    /// Its row's generation (changes when the row is reused).
    pub gen: u64,
    /// `cc_server`, `cc_client`, …
    pub kind: String,
    /// Its device.
    pub dev: Option<PciAddr>,
    /// Its representor.
    pub rep: Option<PciAddr>,
    /// Its engine's number (0 none).
    pub engine: u64,
    /// Its name.
    pub name: String,
    /// Open connections.
    pub connections: u64,
    /// Posted receive buffers.
    pub posted: u64,
    /// Send-ring fill at the last send, and the ring's slots.
    pub ring: (u64, u64),
    /// Messages and bytes sent.
    pub sent: (u64, u64),
    /// Messages and bytes received.
    pub received: (u64, u64),
    /// The connection it belongs to (0 none).
    pub conn_id: u64,
    /// Its context's state (`idle`, `starting`, `running`, `stopping`), for objects that are
    /// contexts and told the page; a connection's (`connected`, `closing`).
    pub ctx_state: Option<&'static str>,
    /// What the row is ([`ROLE_OBJECT`], [`ROLE_CONNECTION`], [`ROLE_ENGINE_CTX`]; another
    /// number is read as an object).
    pub role: u64,
    /// Its row's number (from 1).
    pub slot: u64,
    /// A connection row's owner: the [`EntryView::slot`] of its row (0 none).
    pub parent: u64,
    /// The pid at the other end (connection rows; 0 none).
    pub peer_pid: u64,
    /// Engine library contexts: tasks waiting in its queue, tasks and bytes worked through.
    pub tasks: (u64, u64, u64),
}

/// A validated copy of a status page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The writer's pid.
    pub pid: u32,
    /// The writer's uid.
    pub uid: u32,
    /// The writer's start time (clock ticks since boot).
    pub start_time: u64,
    /// When the page was made (coarse monotonic ns).
    pub created_ns: u64,
    /// The process's name.
    pub comm: String,
    /// The most recent [`EngineView::last_progress_ns`] of its engines (0 never).
    pub last_progress_ns: u64,
    /// Engines and objects made without a row (counts since the process began).
    pub unshown: (u64, u64),
    /// Connections open now without a row of their own.
    pub unshown_conns: u64,
    /// Live engines.
    pub engines: Vec<EngineView>,
    /// Live objects whose identity was whole.
    pub entries: Vec<EntryView>,
    /// Last plan written, and last plan answered (sequence numbers).
    pub plan_seq: u64,
    /// The answer: sequence, code, text.
    pub answer: (u64, u64, String),
}

fn word(b: &[u8], i: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[i * 8..i * 8 + 8]);
    u64::from_le_bytes(w)
}

fn text(b: &[u8], at: usize, len: usize) -> String {
    let bytes = &b[at * 8..at * 8 + len];
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(len);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

impl Snapshot {
    /// Parses the page in `bytes`, trusting nothing. `again`, a second read of the same page
    /// taken after `bytes`, keeps only the objects whose generation is the same even number in
    /// both (their identity was not being rewritten); without it every live object is kept.
    pub fn parse(bytes: &[u8], again: Option<&[u8]>) -> Result<Snapshot, PageError> {
        if bytes.len() != PAGE_BYTES {
            return Err(PageError::Size(bytes.len()));
        }
        if word(bytes, W_MAGIC) != MAGIC {
            return Err(PageError::Magic);
        }
        if word(bytes, W_VERSION) != VERSION {
            return Err(PageError::Version(word(bytes, W_VERSION)));
        }
        if word(bytes, W_SIZE) != PAGE_BYTES as u64 {
            return Err(PageError::Header("size"));
        }
        let pid = u32::try_from(word(bytes, W_PID)).ok().filter(|&p| p > 0 && p <= i32::MAX as u32);
        let Some(pid) = pid else { return Err(PageError::Header("pid")) };
        let uid = u32::try_from(word(bytes, W_UID)).map_err(|_| PageError::Header("uid"))?;
        let again = again.filter(|a| a.len() == PAGE_BYTES);
        let engines: Vec<EngineView> = (0..ENGINES)
            .map(|i| ENGINE_BASE + i * ENGINE_WORDS)
            .filter(|&r| word(bytes, r + E_USED) == 1)
            .map(|r| EngineView {
                id: word(bytes, r + E_ID),
                ctxs: word(bytes, r + E_CTXS),
                armed: word(bytes, r + E_ARMED) == 1,
                inflight: word(bytes, r + E_INFLIGHT),
                progress_calls: word(bytes, r + E_PROGRESS),
                last_progress_ns: word(bytes, r + E_LAST),
            })
            .collect();
        let entries = (0..ENTRIES)
            .map(|i| ENTRY_BASE + i * ENTRY_WORDS)
            .filter(|&r| word(bytes, r + O_USED) == 1)
            .filter(|&r| {
                let g = word(bytes, r + O_GEN);
                g % 2 == 0 && again.is_none_or(|a| word(a, r + O_GEN) == g)
            })
            .map(|r| EntryView {
                gen: word(bytes, r + O_GEN),
                kind: text(bytes, r + O_KIND, 16),
                dev: unpack_pci(word(bytes, r + O_DEV)),
                rep: unpack_pci(word(bytes, r + O_REP)),
                engine: word(bytes, r + O_ENGINE),
                name: text(bytes, r + O_NAME, (word(bytes, r + O_NAME_LEN) as usize).min(48)),
                connections: word(bytes, r + O_CONNS),
                posted: word(bytes, r + O_POSTED),
                ring: (word(bytes, r + O_RING_FILL), word(bytes, r + O_RING_SLOTS)),
                sent: (word(bytes, r + O_MSGS_SENT), word(bytes, r + O_BYTES_SENT)),
                received: (word(bytes, r + O_MSGS_RECV), word(bytes, r + O_BYTES_RECV)),
                conn_id: word(bytes, r + O_CONN_ID),
                ctx_state: state_name(word(bytes, r + O_STATE)),
                role: match word(bytes, r + O_ROLE) {
                    w @ (ROLE_CONNECTION | ROLE_ENGINE_CTX) => w,
                    _ => ROLE_OBJECT,
                },
                slot: row_number(r),
                parent: word(bytes, r + O_PARENT),
                peer_pid: word(bytes, r + O_PEER_PID),
                tasks: (
                    word(bytes, r + O_QUEUED),
                    word(bytes, r + O_TASKS_DONE),
                    word(bytes, r + O_BYTES_DONE),
                ),
            })
            .collect();
        Ok(Snapshot {
            pid,
            uid,
            start_time: word(bytes, W_START),
            created_ns: word(bytes, W_CREATED),
            comm: text(bytes, W_COMM, 16),
            last_progress_ns: engines.iter().map(|e| e.last_progress_ns).max().unwrap_or(0),
            unshown: (word(bytes, W_ENGINES_UNSHOWN), word(bytes, W_ENTRIES_UNSHOWN)),
            unshown_conns: word(bytes, W_CONNS_UNSHOWN),
            engines,
            entries,
            plan_seq: word(bytes, M_PLAN_SEQ),
            answer: (
                word(bytes, M_ANSWER_SEQ),
                word(bytes, M_ANSWER_CODE),
                text(bytes, M_ANSWER_TEXT, (word(bytes, M_ANSWER_LEN) as usize).min(ANSWER_MAX)),
            ),
        })
    }
}

/// The start time of process `pid` (`/proc/<pid>/stat` field 22), if it exists.
pub fn process_start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name (field 2) is in parentheses and may hold anything: count after its last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of(p: &Page) -> Vec<u8> {
        p.0.iter().flat_map(|w| w.load(Relaxed).to_le_bytes()).collect()
    }

    #[test]
    fn a_page_round_trips_through_its_bytes() {
        let p = Page::new();
        p.init_header(42);
        let b = bytes_of(&p);
        let s = Snapshot::parse(&b, Some(&b)).expect("valid");
        assert_eq!((s.pid, s.start_time), (std::process::id(), 42));
        assert_eq!(s.uid, rustix::process::getuid().as_raw());
        assert!(s.engines.is_empty() && s.entries.is_empty());
    }

    #[test]
    fn garbage_is_refused_or_bounded_never_a_panic() {
        assert_eq!(Snapshot::parse(&[0; 100], None), Err(PageError::Size(100)));
        assert_eq!(Snapshot::parse(&vec![0; PAGE_BYTES], None), Err(PageError::Magic));
        // Every word 0xff.. except a valid magic, version and size: lengths are bounded.
        let mut b = vec![0xffu8; PAGE_BYTES];
        b[..8].copy_from_slice(&MAGIC.to_le_bytes());
        assert_eq!(Snapshot::parse(&b, None), Err(PageError::Version(u64::MAX)));
        b[8..16].copy_from_slice(&VERSION.to_le_bytes());
        assert_eq!(Snapshot::parse(&b, None), Err(PageError::Header("size")));
        b[16..24].copy_from_slice(&(PAGE_BYTES as u64).to_le_bytes());
        assert_eq!(Snapshot::parse(&b, None), Err(PageError::Header("pid")));
        b[24..32].copy_from_slice(&7u64.to_le_bytes());
        b[32..40].copy_from_slice(&7u64.to_le_bytes());
        // Rows with used = 0xff..: not live. Now mark one object live with garbage elsewhere.
        let r = ENTRY_BASE + 3 * ENTRY_WORDS;
        b[(r + O_USED) * 8..(r + O_USED) * 8 + 8].copy_from_slice(&1u64.to_le_bytes());
        b[(r + O_GEN) * 8..(r + O_GEN) * 8 + 8].copy_from_slice(&2u64.to_le_bytes());
        let s = Snapshot::parse(&b, None).expect("header valid");
        assert_eq!(s.entries.len(), 1);
        assert_eq!(s.entries[0].name.len(), s.entries[0].name.chars().map(char::len_utf8).sum::<usize>());
        assert!(s.entries[0].dev.is_none());
        assert!(s.answer.2.chars().count() <= ANSWER_MAX);
    }

    #[test]
    fn an_object_being_rewritten_is_left_out() {
        let p = Page::new();
        p.init_header(1);
        let r = ENTRY_BASE;
        p.w(r + O_USED).store(1, Relaxed);
        p.w(r + O_GEN).store(3, Relaxed); // odd: identity being written
        assert!(Snapshot::parse(&bytes_of(&p), None).unwrap().entries.is_empty());
        p.w(r + O_GEN).store(4, Relaxed);
        let first = bytes_of(&p);
        assert_eq!(Snapshot::parse(&first, None).unwrap().entries.len(), 1);
        p.w(r + O_GEN).store(6, Relaxed); // rewritten between the two reads
        assert!(Snapshot::parse(&first, Some(&bytes_of(&p))).unwrap().entries.is_empty());
    }

    /// Writes `plan` into the mailbox of `p` as `doca_emu inject` does (text, length, then
    /// the next sequence number).
    fn inject(p: &Page, plan: &[u8]) -> u64 {
        p.write_text(M_PLAN_TEXT, PLAN_MAX / 8, plan);
        p.w(M_PLAN_LEN).store(plan.len() as u64, Relaxed);
        let seq = p.w(M_PLAN_SEQ).load(Relaxed) + 1;
        p.w(M_PLAN_SEQ).store(seq, Release);
        seq
    }

    fn answer(p: &Page) -> (u64, u64, String) {
        let len = p.w(M_ANSWER_LEN).load(Relaxed) as usize;
        let text = String::from_utf8(p.read_text(M_ANSWER_TEXT, len)).unwrap();
        (p.w(M_ANSWER_SEQ).load(Relaxed), p.w(M_ANSWER_CODE).load(Relaxed), text)
    }

    static HANDLED: Mutex<Vec<String>> = Mutex::new(Vec::new());

    fn handler(plan: &str) -> Result<(), String> {
        HANDLED.lock().unwrap().push(plan.to_string());
        if plan == "refuse me" {
            Err("refused as asked".into())
        } else {
            Ok(())
        }
    }

    /// What a progress pass does with the mailbox of `p` (as [`EngineSlot::progressed`],
    /// on a page and a handler of the test's own).
    fn pass(p: &Page, taken: &AtomicU64, h: Option<PlanHandler>) {
        let seq = p.w(M_PLAN_SEQ).load(Relaxed);
        if seq != taken.load(Relaxed) {
            take_plan(p, seq, taken, h);
        }
    }

    #[test]
    fn a_plan_is_taken_once_at_the_next_pass_and_answered() {
        let p = Box::new(Page::new());
        let taken = AtomicU64::new(0);
        let seq = inject(&p, b"delay 1ms");
        pass(&p, &taken, Some(handler));
        pass(&p, &taken, Some(handler));
        assert_eq!(*HANDLED.lock().unwrap(), ["delay 1ms"], "taken once");
        assert_eq!(answer(&p), (seq, ANSWER_ACCEPTED, String::new()));

        let seq = inject(&p, b"refuse me");
        pass(&p, &taken, Some(handler));
        assert_eq!(answer(&p), (seq, ANSWER_REFUSED, "refused as asked".to_string()));

        // Nonsense from the injector is answered without reaching the handler.
        let seq = inject(&p, &[0xff, 0xfe]);
        pass(&p, &taken, Some(handler));
        assert_eq!(answer(&p), (seq, ANSWER_REFUSED, "plan is not UTF-8".to_string()));
        p.w(M_PLAN_LEN).store(u64::MAX, Relaxed);
        p.w(M_PLAN_SEQ).store(seq + 1, Release);
        pass(&p, &taken, Some(handler));
        assert_eq!(answer(&p).1, ANSWER_REFUSED);
        assert!(answer(&p).2.contains("longer than 2048"), "{:?}", answer(&p));
        assert_eq!(HANDLED.lock().unwrap().len(), 2);

        // Without a handler: unavailable, with the text doca_emu prints.
        let seq = inject(&p, b"delay 1ms");
        pass(&p, &taken, None);
        assert_eq!(answer(&p), (seq, ANSWER_UNAVAILABLE, UNAVAILABLE_TEXT.to_string()));
    }

    /// What `doca_emu` reads of a busy engine's passes is at most [`TIME_EVERY`] − 1 behind
    /// (the first pass shows at once), and exact once the engine goes to sleep.
    #[test]
    fn an_engine_s_row_shows_its_passes_at_each_stamp_and_when_it_sleeps() {
        if !enabled() {
            eprintln!("skipped: {STATUS_ENV}=off, engines have no rows");
            return;
        }
        let slot = EngineSlot::claim();
        let r = slot.row.expect("a row for this test's engine (the unit tests claim fewer than ENGINES)");
        let shown = || slot.page.w(r + E_PROGRESS).load(Relaxed);
        slot.progressed();
        assert_eq!(shown(), 1, "the first pass");
        for _ in 1..TIME_EVERY + 4 {
            slot.progressed();
        }
        assert_eq!(shown(), TIME_EVERY + 1, "the last stamp's count");
        slot.set_armed(true);
        assert_eq!(shown(), TIME_EVERY + 4, "asleep: every pass");
    }

    #[test]
    fn one_plan_handler_per_process() {
        assert!(on_plan(|_| Ok(())));
        assert!(!on_plan(handler));
    }

    #[test]
    fn pci_addresses_pack_into_a_word_and_back() {
        let a: PciAddr = "0000:b1:00.1".parse().unwrap();
        assert_eq!(unpack_pci(pack_pci(a)), Some(a));
        assert_eq!(unpack_pci(u64::MAX), None);
    }

    #[test]
    fn this_process_has_a_start_time() {
        let t = process_start_time(std::process::id()).expect("own stat");
        assert!(t > 0);
        assert_eq!(process_start_time(u32::MAX), None);
    }
}
