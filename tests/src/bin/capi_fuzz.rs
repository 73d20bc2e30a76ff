//! A generated fuzzer of the C ABI: `capi_fuzz SEED CASES` builds a small world through the
//! C functions (progress engines, devices, a running server and client with their
//! connections, tasks, a started map, buffers, a consumer and a producer, legacy endpoints,
//! the argument parser), then makes CASES calls, each to an export picked at random, with
//! arguments drawn from a fixed seed: live handles, NULL, forged handles (pointers to
//! garbage memory this program owns, and token-shaped values), stale handles (of objects
//! destroyed during the setup), handles of another kind (a client for a server), NULL
//! out-parameters, and lengths of 0, small, `UINT32_MAX`, `PTRDIFF_MAX + 1` and `SIZE_MAX`.
//! Every callback it registers makes a random call of its own (calls from callbacks: stop,
//! destroy, progress, submit, free), and sometimes submits or frees its task again. Then
//! it runs fixed callback scenarios (a server destroyed from its own state callback, a
//! task re-submitted and freed from its completion callback, the argument parser destroyed
//! from a parameter's callback).
//!
//! Checked after each call: no crash (a debug build aborts on a slice made beyond
//! `isize::MAX`), no panic inside the library (even one its C boundary caught), a code DOCA
//! defines, and no `DOCA_SUCCESS` (nor a non-NULL pointer from a
//! cast) when an argument the call needs was bad. Prints each case on standard error before
//! making it (so a crash names its case), and `ok N cases` at the end. `capi_fuzz --exports`
//! lists the exports it covers (one per line). Environment: `CAPI_FUZZ_LOG` (the library's
//! log on standard output), `CAPI_FUZZ_KEEP_GOING` (report every failed case, not only the
//! first), `CAPI_FUZZ_SKIP=name,…` (leave exports out, to look past a known crash).
//!
//! Every pointer given to the library is NULL, points to memory this program owns and that
//! is large enough for what the call may write, or is a handle value; a length larger than
//! the memory behind it is only given where the call must refuse it before reading.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_void, CStr};
use std::io::Write;

use doca_capi::*;

/// The kinds of handle.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum K {
    Param,
    Inventory,
    Buf,
    Server,
    Client,
    Conn,
    Ctx,
    Devinfo,
    Dev,
    DevinfoRep,
    DevRep,
    Consumer,
    Producer,
    Ep,
    Addr,
    Mmap,
    Pe,
    Task,
    Dma,
    Clock,
    Advise,
    // doca_sha
    Sha,
    // doca_graph
    Graph,
    GraphNode,
    GraphInstance,
    // doca_sync_event
    SyncEvent,
    // doca_aes_gcm
    AesGcm,
    AesGcmKey,
    // doca_compress
    Compress,
    // doca_erasure_coding
    Ec,
    EcMatrix,
    // doca_rdma
    Rdma,
    RdmaConn,
    RdmaSrq,
}
const KINDS: usize = 34;
/// The size of the memory region maps and messages use.
const REGION_LEN: usize = 1 << 16;

/// The last pick of each class, to print with the case.
struct Frame {
    name: &'static str,
    /// Why the arguments are bad (empty: all fine).
    bad: Vec<String>,
    /// Out-parameters whose handle joins the live pool when the call succeeds.
    harvest: Vec<(usize, K)>,
}

/// The generator: a seeded random source, the pools of handles, this program's memory.
struct Gen {
    rng: Cell<u64>,
    live: RefCell<Vec<Vec<usize>>>,
    stale: RefCell<Vec<Vec<usize>>>,
    frames: RefCell<Vec<Frame>>,
    /// Garbage memory that forged handles point into.
    garbage: Box<[u64; 64]>,
    /// Out-parameter slots (each 256 bytes, 8-aligned), used round-robin.
    scratch: Box<[[u64; 32]; 128]>,
    next_scratch: Cell<usize>,
    /// Memory for maps (never freed) and messages: REGION_LEN bytes.
    region: *mut u8,
    /// Device lists handed out (live, destroyed), for the destroy-list calls.
    lists: RefCell<(Vec<usize>, Vec<usize>)>,
    rep_lists: RefCell<(Vec<usize>, Vec<usize>)>,
    /// Callback depth (a callback's call may run callbacks: at most two deep).
    depth: Cell<u32>,
    /// The table of exports.
    table: RefCell<Vec<Entry>>,
    cases: Cell<u64>,
    /// The world's DPU device, host device and representor (for the scenarios).
    devices: Cell<(usize, usize, usize)>,
}

/// One export: its name, whether a bad argument may still succeed, and how to call it.
struct Entry {
    name: &'static str,
    lenient: bool,
    call: fn(&Gen) -> Out,
}

/// What a call returned.
#[derive(Debug)]
enum Out {
    Code(i32),
    Ptr(usize),
    #[allow(dead_code)] // shown in the trace (Debug)
    Value(u64),
    Unit,
}

trait IntoOut {
    fn into_out(self) -> Out;
}
impl IntoOut for i32 {
    fn into_out(self) -> Out {
        Out::Code(self)
    }
}
impl IntoOut for u8 {
    fn into_out(self) -> Out {
        Out::Value(self.into())
    }
}
impl IntoOut for u32 {
    fn into_out(self) -> Out {
        Out::Value(self.into())
    }
}
impl IntoOut for u64 {
    fn into_out(self) -> Out {
        Out::Value(self)
    }
}
impl IntoOut for () {
    fn into_out(self) -> Out {
        Out::Unit
    }
}
impl<T> IntoOut for *mut T {
    fn into_out(self) -> Out {
        Out::Ptr(self as usize)
    }
}
impl<T> IntoOut for *const T {
    fn into_out(self) -> Out {
        Out::Ptr(self as usize)
    }
}
impl IntoOut for DocaData {
    fn into_out(self) -> Out {
        // SAFETY: both fields are 8 bytes of plain data.
        Out::Value(unsafe { self.u64 })
    }
}

impl Gen {
    fn next(&self) -> u64 {
        // xorshift64*
        let mut x = self.rng.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn bad(&self, why: impl Into<String>) {
        if let Some(f) = self.frames.borrow_mut().last_mut() {
            f.bad.push(why.into());
        }
    }

    fn scratch_slot(&self) -> *mut u64 {
        let i = self.next_scratch.get();
        self.next_scratch.set((i + 1) % self.scratch.len());
        let slot = &self.scratch[i];
        let p = slot.as_ptr() as *mut u64;
        // SAFETY: the slot is this program's memory, 256 bytes.
        unsafe { std::ptr::write_bytes(p, 0xa5, 32) };
        p
    }

    fn add_live(&self, k: K, h: usize) {
        if h == 0 {
            return;
        }
        let mut live = self.live.borrow_mut();
        let pool = &mut live[k as usize];
        if pool.contains(&h) {
            return;
        }
        if pool.len() < 24 {
            pool.push(h);
        } else {
            let i = self.below(pool.len() as u64) as usize;
            pool[i] = h;
        }
    }

    fn make_stale(&self, k: K, h: usize) {
        self.live.borrow_mut()[k as usize].retain(|&x| x != h);
        self.stale.borrow_mut()[k as usize].push(h);
    }

    fn pick_live(&self, k: K) -> Option<usize> {
        let live = self.live.borrow();
        let pool = &live[k as usize];
        (!pool.is_empty()).then(|| pool[self.below(pool.len() as u64) as usize])
    }

    /// A handle where a `k` is expected: live (sometimes) or bad.
    fn h<T>(&self, k: K) -> *mut T {
        if self.chance(55) {
            if let Some(h) = self.pick_live(k) {
                return h as *mut T;
            }
        }
        self.bad_handle(k) as *mut T
    }

    /// A handle where NULL is allowed (it means none): sometimes NULL, else as [`Gen::h`].
    fn hopt<T>(&self, k: K) -> *mut T {
        if self.chance(20) {
            return std::ptr::null_mut();
        }
        let h: *mut T = self.h(k);
        if h.is_null() {
            // NULL is allowed here: not a bad argument.
            if let Some(f) = self.frames.borrow_mut().last_mut() {
                f.bad.retain(|why| *why != format!("NULL {k:?}"));
            }
        }
        h
    }

    /// A handle for a destroying call: never a live one of the world.
    fn hn<T>(&self, k: K) -> *mut T {
        self.bad_handle(k) as *mut T
    }

    /// [`Gen::hn`] for a destroying call that takes NULL as "nothing to destroy" (as
    /// `free(NULL)`): NULL is not a bad argument there.
    fn hn_opt<T>(&self, k: K) -> *mut T {
        let h: *mut T = self.hn(k);
        if h.is_null() {
            if let Some(f) = self.frames.borrow_mut().last_mut() {
                f.bad.retain(|why| *why != format!("NULL {k:?}"));
            }
        }
        h
    }

    fn bad_handle(&self, k: K) -> usize {
        match self.below(8) {
            0 => {
                self.bad(format!("NULL {k:?}"));
                0
            }
            1 | 2 => {
                // a pointer into garbage memory this program owns
                let i = self.below(self.garbage.len() as u64) as usize;
                self.bad(format!("forged {k:?} (garbage memory)"));
                &self.garbage[i] as *const u64 as usize
            }
            3 => {
                // token-shaped: a live handle moved to a slot far beyond, another generation, misaligned
                let base = self.pick_live(k).unwrap_or(0x1000);
                self.bad(format!("forged {k:?} (token-shaped)"));
                match self.below(3) {
                    0 => base + (1 << 24),
                    1 => base ^ (1 << 30),
                    _ => base | 0x8,
                }
            }
            4 | 5 => {
                let stale = self.stale.borrow();
                let pool = &stale[k as usize];
                if pool.is_empty() {
                    drop(stale);
                    self.bad(format!("NULL {k:?}"));
                    return 0;
                }
                self.bad(format!("stale {k:?}"));
                pool[self.below(pool.len() as u64) as usize]
            }
            _ => {
                // another kind's live handle (a client for a server, and the reverse, often)
                let other = match (k, self.chance(60)) {
                    (K::Server, true) => K::Client,
                    (K::Client, true) => K::Server,
                    (K::Consumer, true) => K::Producer,
                    (K::Producer, true) => K::Consumer,
                    (K::Devinfo, true) => K::DevinfoRep,
                    (K::Dev, true) => K::DevRep,
                    _ => ALL[self.below(KINDS as u64) as usize],
                };
                if other == k {
                    self.bad(format!("NULL {k:?}"));
                    return 0;
                }
                match self.pick_live(other) {
                    Some(h) => {
                        self.bad(format!("a {other:?} for a {k:?}"));
                        h
                    }
                    None => {
                        self.bad(format!("NULL {k:?}"));
                        0
                    }
                }
            }
        }
    }

    /// A required out-parameter: NULL (bad) or room for what the call writes.
    fn out<T>(&self) -> *mut T {
        if self.chance(15) {
            self.bad("NULL out-parameter");
            return std::ptr::null_mut();
        }
        self.scratch_slot().cast()
    }

    /// An optional out-parameter: NULL or room.
    fn opt<T>(&self) -> *mut T {
        if self.chance(30) {
            return std::ptr::null_mut();
        }
        self.scratch_slot().cast()
    }

    /// A required out-parameter for a handle of kind `k`, which joins the pool on success.
    fn outh<T>(&self, k: K) -> *mut *mut T {
        let p: *mut *mut T = self.out();
        if !p.is_null() {
            if let Some(f) = self.frames.borrow_mut().last_mut() {
                f.harvest.push((p as usize, k));
            }
        }
        p
    }

    /// A C string: NULL (bad) or one of a few (names, PCI addresses, odd ones).
    fn cstr(&self) -> *const c_char {
        const STRS: [&CStr; 9] = [
            c"capi-fuzz",
            c"03:00.0",
            c"b1:00.0",
            c"0000:b1:00.1",
            c"",
            c"zz:zz.z",
            c"\xff\xfe not utf-8",
            c"a-name-that-is-far-too-long-for-any-service-name-a-name-that-is-far-too-long-for-any-service-name-a-name-that-is-far-too-long-for-any-service-name-a-name-that-is-far-too-long-for-any-service-name-a-name-that-is-far-too-long-for-any-service-name-a-name-that-is-far-too-long-for-any-service-name",
            c"--flag",
        ];
        if self.chance(15) {
            self.bad("NULL string");
            return std::ptr::null();
        }
        STRS[self.below(STRS.len() as u64) as usize].as_ptr()
    }

    /// A message and its length: fine (in this program's memory), or bad (NULL with a
    /// length, or a length beyond any message: the call must refuse it before reading).
    fn msg(&self) -> (*const c_void, usize) {
        let buf = self.region as *const c_void;
        match self.below(10) {
            0 => (std::ptr::null(), 0),
            1 => {
                self.bad("NULL message with a length");
                (std::ptr::null(), 1 + self.below(64) as usize)
            }
            2 => {
                self.bad("SIZE_MAX length");
                (buf, usize::MAX)
            }
            3 => {
                self.bad("PTRDIFF_MAX + 1 length");
                (buf, isize::MAX as usize + 1)
            }
            4 => {
                self.bad("UINT32_MAX length");
                (buf, u32::MAX as usize)
            }
            5 => {
                self.bad("1 GiB length");
                (buf, 1 << 30)
            }
            _ => (buf, self.below(512) as usize),
        }
    }

    /// [`Gen::msg`] with a 32-bit length.
    fn msg32(&self) -> (*const c_void, u32) {
        let (p, n) = self.msg();
        if let Ok(n) = u32::try_from(n) {
            return (p, n);
        }
        // a 64-bit length was drawn: its 32-bit extreme instead
        if let Some(f) = self.frames.borrow_mut().last_mut() {
            f.bad.pop();
        }
        self.bad("UINT32_MAX length");
        (p, u32::MAX)
    }

    /// An address, inside this program's region or not (checked by the library against a
    /// map's range, never read here unless inside it).
    fn addr(&self) -> *mut c_void {
        let base = self.region as usize;
        (match self.below(6) {
            0 => 0,
            1 => usize::MAX - 7,
            2 => base + REGION_LEN,
            _ => base + self.below(REGION_LEN as u64) as usize,
        }) as *mut c_void
    }

    /// A length for a range of a map (not read by the call itself).
    fn range_len(&self) -> usize {
        match self.below(6) {
            0 => 0,
            1 => usize::MAX,
            2 => isize::MAX as usize + 1,
            _ => self.below(4096) as usize,
        }
    }

    fn u32(&self) -> u32 {
        match self.below(8) {
            0 => 0,
            1 => u32::MAX,
            2 => 1 << 31,
            3 => 1,
            _ => self.below(300) as u32,
        }
    }

    fn u16(&self) -> u16 {
        match self.below(4) {
            0 => 0,
            1 => u16::MAX,
            _ => self.below(5000) as u16,
        }
    }

    fn i32(&self) -> i32 {
        match self.below(5) {
            0 => -1,
            1 => i32::MIN,
            2 => i32::MAX,
            _ => self.below(100) as i32,
        }
    }

    fn usize(&self) -> usize {
        match self.below(6) {
            0 => 0,
            1 => usize::MAX,
            2 => u32::MAX as usize,
            3 => 1usize << 40,
            _ => self.below(64) as usize,
        }
    }

    /// A `size_t` size of a 2.5 setter: one above the 32-bit range is bad.
    fn size32(&self) -> usize {
        let n = self.usize();
        if n > u32::MAX as usize {
            self.bad(format!("size {n} above 32 bits"));
        }
        n
    }

    fn u8(&self) -> u8 {
        match self.below(3) {
            0 => u8::MAX,
            1 => 0,
            _ => self.below(40) as u8,
        }
    }

    fn data(&self) -> DocaData {
        DocaData { u64: self.next() }
    }

    // doca_sha
    /// An `enum doca_sha_algorithm`: one of the three, or (bad) another number.
    fn sha_alg(&self) -> u32 {
        match self.below(8) {
            0 => {
                self.bad("not an enum doca_sha_algorithm value");
                [3, u32::MAX, 1 << 31][self.below(3) as usize]
            }
            v => (v % 3) as u32,
        }
    }

    // doca_aes_gcm
    /// An `enum doca_aes_gcm_key_type`: 1 or 2, or (bad) another number.
    fn aes_key_type(&self) -> u32 {
        match self.below(8) {
            0 => {
                self.bad("not an enum doca_aes_gcm_key_type value");
                [0, 3, u32::MAX][self.below(3) as usize]
            }
            v => 1 + (v % 2) as u32,
        }
    }

    // doca_erasure_coding
    /// An `enum doca_ec_matrix_type`: Cauchy or Vandermonde, or (bad) another number.
    fn ec_type(&self) -> u32 {
        match self.below(6) {
            0 => {
                self.bad("not an enum doca_ec_matrix_type value");
                [0, 3, u32::MAX][self.below(3) as usize]
            }
            v => 1 + (v % 2) as u32,
        }
    }

    /// Block indices: NULL (bad, with a count), a count of 0 or above 256 (bad), or up to 8
    /// indices in this program's memory.
    fn ec_indices(&self) -> (*mut u32, usize) {
        let p = self.region as *mut u32;
        match self.below(8) {
            0 => {
                self.bad("NULL indices");
                (std::ptr::null_mut(), 1 + self.below(4) as usize)
            }
            1 => {
                self.bad("no indices");
                (p, 0)
            }
            2 => {
                self.bad("more indices than blocks");
                (p, [257, usize::MAX][self.below(2) as usize])
            }
            _ => {
                let n = 1 + self.below(8) as usize;
                for i in 0..n {
                    // SAFETY: the region holds far more than 8 u32 and is this program's.
                    unsafe { p.add(i).write(self.below(12) as u32) };
                }
                (p, n)
            }
        }
    }

    /// A block count of a matrix (0 and above 255: bad).
    fn ec_count(&self) -> usize {
        let n = self.usize();
        if n == 0 || n > 255 {
            self.bad(format!("{n} blocks"));
        }
        n
    }

    // doca_rdma
    /// An `enum doca_rdma_addr_type` (IPv4, IPv6, GID), or (bad) another number.
    fn rdma_addr_type(&self) -> u32 {
        match self.below(6) {
            0 => {
                self.bad("not an enum doca_rdma_addr_type value");
                [3, u32::MAX, 1 << 31][self.below(3) as usize]
            }
            v => (v % 3) as u32,
        }
    }

    /// An address string for the connection manager: one of a few (IPv4, IPv6, a GID, odd
    /// ones), or any of [`Gen::cstr`]'s (NULL among them, bad).
    fn rdma_address(&self) -> *const c_char {
        const ADDRS: [&CStr; 5] = [
            c"127.0.0.1",
            c"::1",
            c"fe80:0000:0000:0000:0202:c9ff:fe00:0001",
            c"999.1.1.1",
            c"192.168.1.1:80",
        ];
        if self.chance(50) {
            return self.cstr();
        }
        ADDRS[self.below(ADDRS.len() as u64) as usize].as_ptr()
    }

    /// A `struct doca_rdma_addr *`: NULL or a pointer into this program's garbage memory
    /// (the fuzzer keeps none of the addresses it creates), both bad.
    fn rdma_addr<T>(&self) -> *mut T {
        if self.chance(50) {
            self.bad("NULL doca_rdma_addr");
            return std::ptr::null_mut();
        }
        self.bad("forged doca_rdma_addr (garbage memory)");
        let i = self.below(self.garbage.len() as u64) as usize;
        &self.garbage[i] as *const u64 as *mut T
    }

    /// A `struct doca_sync_event_remote_net *`: NULL or a pointer into this program's garbage
    /// memory (this fuzzer imports none), both bad.
    fn remote_net<T>(&self) -> *mut T {
        if self.chance(50) {
            self.bad("NULL doca_sync_event_remote_net");
            return std::ptr::null_mut();
        }
        self.bad("forged doca_sync_event_remote_net (garbage memory)");
        let i = self.below(self.garbage.len() as u64) as usize;
        &self.garbage[i] as *const u64 as *mut T
    }

    /// The connection request callback: NULL is allowed (a client only, which rejects a
    /// request reaching it: capi's `doca_rdma_set_connection_state_callbacks`).
    fn cb_rdma_request(&self) -> RdmaConnRequestCb {
        if self.chance(15) {
            return None;
        }
        Some(cb_rdma_request as unsafe extern "C" fn(*mut DocaRdmaConnection, DocaData))
    }

    fn cb_rdma_conn(&self) -> RdmaConnCb {
        self.opt_cb(cb_rdma_conn as unsafe extern "C" fn(*mut DocaRdmaConnection, DocaData, DocaData))
    }

    // doca_sync_event
    /// A wait mask: mostly one DOCA allows (0, or 1, 2, 4 or 8 consecutive 0xFF bytes; never
    /// 0 when `nonzero`), sometimes (bad) another.
    fn se_mask(&self, nonzero: bool) -> u64 {
        match self.below(8) {
            0 => {
                self.bad("not a mask of consecutive 0xFF bytes");
                [0xF0, 0xFFF, 0x00FF_FF00_0000_0000 | 1, 0xFF_FFFF][self.below(4) as usize]
            }
            1 if !nonzero => 0,
            v => [0xFF, 0xFFFF, 0xFFFF_FFFF, u64::MAX, 0xFF00, 0xFFFF_0000_0000_0000, 0xFF << 56]
                [v as usize % 7],
        }
    }

    /// The mask of a wait that must not block: 0 (every value passes through it as 0), or
    /// (bad) a mask DOCA does not allow.
    fn se_mask_zero(&self) -> u64 {
        if self.chance(20) {
            self.bad("not a mask of consecutive 0xFF bytes");
            return [0xF0, 0xFFF, 0xFF_FFFF][self.below(3) as usize];
        }
        0
    }

    /// A value for the event (any).
    fn u64(&self) -> u64 {
        match self.below(4) {
            0 => 0,
            1 => u64::MAX,
            _ => self.below(1000),
        }
    }

    fn cb_task(&self) -> TaskSendCb {
        self.opt_cb(cb_task as unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData))
    }

    fn cb_msg(&self) -> MsgRecvCb {
        self.opt_cb(cb_msg as unsafe extern "C" fn(*mut c_void, *mut u8, u64, *mut DocaCcConnection))
    }

    fn cb_msg25(&self) -> MsgRecvCb25 {
        self.opt_cb(cb_msg25 as unsafe extern "C" fn(*mut c_void, *mut u8, usize, *mut DocaCcConnection))
    }

    fn cb_conn25(&self) -> ConnectionCb25 {
        self.opt_cb(cb_conn25 as unsafe extern "C" fn(*mut c_void, *mut DocaCcConnection, bool))
    }

    fn cb_conn(&self) -> ConnectionCb {
        self.opt_cb(cb_conn as unsafe extern "C" fn(*mut c_void, *mut DocaCcConnection, u8))
    }

    fn cb_consumer(&self) -> ConsumerCb {
        self.opt_cb(cb_consumer as unsafe extern "C" fn(*mut c_void, *mut DocaCcConnection, u32))
    }

    fn cb_state(&self) -> DocaCtxStateChangedCb {
        self.opt_cb(cb_state as unsafe extern "C" fn(DocaData, *mut DocaCtx, u32, u32))
    }

    fn cb_param(&self) -> ParamCb {
        self.opt_cb(cb_param as unsafe extern "C" fn(*mut c_void, *mut c_void) -> i32)
    }

    fn cb_validate(&self) -> ValidationCb {
        self.opt_cb(cb_validate as unsafe extern "C" fn(*mut c_void) -> i32)
    }

    fn cb_free(&self) -> MemrangeFreeCb {
        self.opt_cb(cb_free as unsafe extern "C" fn(*mut c_void, usize, *mut c_void))
    }

    // doca_graph
    fn cb_graph(&self) -> DocaGraphCb {
        self.opt_cb(cb_graph as unsafe extern "C" fn(*mut DocaGraphInstance, DocaData, DocaData))
    }

    fn cb_user_node(&self) -> DocaGraphUserNodeCb {
        self.opt_cb(cb_user_node as unsafe extern "C" fn(*mut c_void) -> i32)
    }

    /// A user node's cookie: any pointer (the library never reads it; NULL is refused).
    fn cookie(&self) -> *mut c_void {
        match self.below(3) {
            0 => std::ptr::null_mut(),
            1 => self.garbage.as_ptr() as *mut c_void,
            _ => self.next() as usize as *mut c_void,
        }
    }

    fn opt_cb<F>(&self, f: F) -> Option<F> {
        if self.chance(15) {
            self.bad("NULL callback");
            return None;
        }
        Some(f)
    }

    /// A device list for a destroy-list call: never the world's live one.
    fn list<T>(&self, rep: bool) -> *mut *mut T {
        let lists = if rep { self.rep_lists.borrow() } else { self.lists.borrow() };
        let other = if rep { self.lists.borrow() } else { self.rep_lists.borrow() };
        let p = match self.below(4) {
            0 => {
                self.bad("NULL list");
                0
            }
            1 => {
                self.bad("forged list");
                self.garbage.as_ptr() as usize
            }
            2 if !lists.1.is_empty() => {
                self.bad("destroyed list");
                lists.1[0]
            }
            _ if !other.0.is_empty() => {
                self.bad("a list of the other kind");
                other.0[0]
            }
            _ => {
                self.bad("NULL list");
                0
            }
        };
        p as *mut *mut T
    }

    /// Runs one random case (from the main loop or a callback).
    fn case(&self) {
        let n = {
            let table = self.table.borrow();
            self.below(table.len() as u64) as usize
        };
        self.run(n);
    }

    /// Runs entry `n` with fresh arguments and checks what it returned.
    fn run(&self, n: usize) {
        let (name, lenient, call) = {
            let table = self.table.borrow();
            let e = &table[n];
            (e.name, e.lenient, e.call)
        };
        let case = self.cases.get();
        self.cases.set(case + 1);
        let depth = self.depth.get();
        let _ = writeln!(std::io::stderr(), "case {case} (depth {depth}): {name}");
        self.frames.borrow_mut().push(Frame { name, bad: Vec::new(), harvest: Vec::new() });
        let panics = PANICS.load(std::sync::atomic::Ordering::Relaxed);
        let out = call(self);
        let panicked = PANICS.load(std::sync::atomic::Ordering::Relaxed) != panics;
        let frame = self.frames.borrow_mut().pop().expect("the case's frame");
        let _ = writeln!(std::io::stderr(), "  -> {out:?} (bad: {:?})", frame.bad);
        check(&frame, lenient, &out, panicked);
        if matches!(out, Out::Code(0)) {
            for (slot, k) in frame.harvest {
                // SAFETY: the slot is this program's scratch memory, written by the call.
                let h = unsafe { (slot as *const usize).read() };
                self.add_live(k, h);
            }
        }
    }
}

/// Fails (exits 1) when `out` breaks the contract for the arguments of `frame` (with
/// `CAPI_FUZZ_KEEP_GOING` set: reports it and goes on, exiting 1 at the end).
fn check(frame: &Frame, lenient: bool, out: &Out, panicked: bool) {
    let fail = |why: String| {
        let _ = writeln!(std::io::stderr(), "FAILED: {}: {why} (bad arguments: {:?})", frame.name, frame.bad);
        if std::env::var_os("CAPI_FUZZ_KEEP_GOING").is_none() {
            std::process::exit(1);
        }
        FAILURES.set(FAILURES.get() + 1);
    };
    if panicked {
        fail("the library panicked (caught at its C boundary; see the panic above)".into());
    }
    if let Out::Code(c) = out {
        if *c != 0 && doca_core::Error::from_code(*c).is_none() {
            fail(format!("returned {c}, not a DOCA error code"));
        }
    }
    if frame.bad.is_empty() || lenient {
        return;
    }
    match out {
        Out::Code(0) => fail("DOCA_SUCCESS".into()),
        Out::Ptr(p) if *p != 0 => fail(format!("a pointer {p:#x}")),
        _ => {}
    }
}

const ALL: [K; KINDS] = [
    K::Param,
    K::Inventory,
    K::Buf,
    K::Server,
    K::Client,
    K::Conn,
    K::Ctx,
    K::Devinfo,
    K::Dev,
    K::DevinfoRep,
    K::DevRep,
    K::Consumer,
    K::Producer,
    K::Ep,
    K::Addr,
    K::Mmap,
    K::Pe,
    K::Task,
    K::Dma,
    K::Clock,
    K::Advise,
    // doca_sha
    K::Sha,
    // doca_graph
    K::Graph,
    K::GraphNode,
    K::GraphInstance,
    // doca_sync_event
    K::SyncEvent,
    // doca_aes_gcm
    K::AesGcm,
    K::AesGcmKey,
    // doca_compress
    K::Compress,
    // doca_erasure_coding
    K::Ec,
    K::EcMatrix,
    // doca_rdma
    K::Rdma,
    K::RdmaConn,
    K::RdmaSrq,
];

/// Panics inside the library (caught at its C boundary and turned into
/// `DOCA_ERROR_UNEXPECTED` or a fallback value: still a bug, bad input must be refused).
static PANICS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

thread_local! {
    static GEN: Cell<Option<&'static Gen>> = const { Cell::new(None) };
    static FAILURES: Cell<u64> = const { Cell::new(0) };
}

fn gen() -> &'static Gen {
    GEN.get().expect("the generator is set before any call")
}

/// What every callback does: a random call of its own, while not too deep.
fn from_callback() {
    let g = gen();
    if g.depth.get() >= 2 {
        return;
    }
    g.depth.set(g.depth.get() + 1);
    g.case();
    g.depth.set(g.depth.get() - 1);
}

unsafe extern "C" fn cb_task(task: *mut DocaTask, _: DocaData, _: DocaData) {
    let g = gen();
    match g.below(4) {
        0 => {
            let r = doca_task_submit(task);
            if r != 0 && doca_core::Error::from_code(r).is_none() {
                std::process::exit(1);
            }
        }
        1 => {
            // SAFETY: the task's own handle, not used after this.
            unsafe { doca_task_free(task) };
            g.make_stale(K::Task, task as usize);
        }
        _ => g.add_live(K::Task, task as usize),
    }
    from_callback();
}

unsafe extern "C" fn cb_msg(_: *mut c_void, _: *mut u8, _: u64, conn: *mut DocaCcConnection) {
    gen().add_live(K::Conn, conn as usize);
    from_callback();
}

unsafe extern "C" fn cb_conn(_: *mut c_void, conn: *mut DocaCcConnection, _: u8) {
    gen().add_live(K::Conn, conn as usize);
    from_callback();
}

unsafe extern "C" fn cb_msg25(_: *mut c_void, _: *mut u8, _: usize, conn: *mut DocaCcConnection) {
    gen().add_live(K::Conn, conn as usize);
    from_callback();
}

unsafe extern "C" fn cb_conn25(_: *mut c_void, conn: *mut DocaCcConnection, _: bool) {
    gen().add_live(K::Conn, conn as usize);
    from_callback();
}

unsafe extern "C" fn cb_consumer(_: *mut c_void, conn: *mut DocaCcConnection, _: u32) {
    gen().add_live(K::Conn, conn as usize);
    from_callback();
}

unsafe extern "C" fn cb_state(_: DocaData, _: *mut DocaCtx, _: u32, _: u32) {
    from_callback();
}

// doca_graph
unsafe extern "C" fn cb_graph(inst: *mut DocaGraphInstance, _: DocaData, _: DocaData) {
    gen().add_live(K::GraphInstance, inst as usize);
    from_callback();
}

unsafe extern "C" fn cb_user_node(_: *mut c_void) -> i32 {
    from_callback();
    if gen().chance(20) {
        doca_core::Error::IoFailed.code()
    } else {
        0
    }
}

// doca_rdma
unsafe extern "C" fn cb_rdma_request(conn: *mut DocaRdmaConnection, _: DocaData) {
    gen().add_live(K::RdmaConn, conn as usize);
    from_callback();
}

unsafe extern "C" fn cb_rdma_conn(conn: *mut DocaRdmaConnection, _: DocaData, _: DocaData) {
    gen().add_live(K::RdmaConn, conn as usize);
    from_callback();
}

unsafe extern "C" fn cb_validate(_: *mut c_void) -> i32 {
    from_callback();
    0
}

unsafe extern "C" fn cb_param(_: *mut c_void, _: *mut c_void) -> i32 {
    from_callback();
    0
}

unsafe extern "C" fn cb_free(_: *mut c_void, _: usize, _: *mut c_void) {
    from_callback();
}

/// `doca_log` as C declares it (variadic; the Rust item of that name takes no arguments).
mod variadic {
    use std::ffi::c_char;
    extern "C" {
        #[link_name = "doca_log"]
        pub fn doca_log(
            level: u32,
            source: i32,
            fname: *const c_char,
            line: i32,
            func: *const c_char,
            format: *const c_char,
            ...
        ) -> i32;
    }
}

/// A `DOCA_CLOCK_*` argument mostly one valid clock, sometimes 0, two bits or an
/// unknown bit (bad); `nic`: a valid clock that is not a NIC clock is bad too.
fn clock_bits(g: &Gen, nic: bool) -> u64 {
    let bits = match g.below(10) {
        0 => 0,
        1 => 0b11,
        2 => 1 << 9,
        3 => u64::MAX,
        _ => 1 << g.below(7),
    };
    if bits == 0 || bits.count_ones() != 1 || bits > 1 << 6 {
        g.bad("not one DOCA_CLOCK_* value");
    } else if nic && bits > 1 << 2 {
        g.bad("not a NIC clock");
    }
    bits
}

/// `f(args…)` as an [`Out`].
fn r<T: IntoOut>(v: T) -> Out {
    v.into_out()
}

macro_rules! entries {
    ($($(#[$lenient:ident])? $name:ident => |$g:ident| $body:expr;)*) => {
        vec![$(Entry {
            name: stringify!($name),
            lenient: entries!(@lenient $($lenient)?),
            call: |$g: &Gen| -> Out {
                // Every pointer the generator makes is NULL, this program's memory of the
                // size the call may write, or a handle value; a length beyond the memory
                // behind it is only given where the call must refuse it before reading.
                // SAFETY: as above.
                let out = unsafe { $body };
                out
            },
        }),*]
    };
    (@lenient lenient) => { true };
    (@lenient) => { false };
}

/// The table: every export of the library.
#[allow(unused_unsafe, clippy::unit_arg)] // `r(f())` for every result, `()` too
fn table() -> Vec<Entry> {
    entries! {
        // doca_error.h
        #[lenient] doca_error_get_name => |g| r(doca_error_get_name(g.i32()));
        #[lenient] doca_error_get_descr => |g| r(doca_error_get_descr(g.i32()));
        // doca_argp.h
        // a NULL name is allowed (named after argv[0])
        doca_argp_init => |g| r(doca_argp_init(if g.chance(15) { std::ptr::null() } else { c"capi_fuzz".as_ptr() }, g.garbage.as_ptr() as *mut c_void));
        doca_argp_register_version_callback => |g| r(doca_argp_register_version_callback(g.cb_param()));
        doca_argp_register_validation_callback => |g| r(doca_argp_register_validation_callback(g.cb_validate()));
        doca_argp_param_create => |g| r(doca_argp_param_create(g.outh(K::Param)));
        doca_argp_param_set_short_name => |g| r(doca_argp_param_set_short_name(g.h(K::Param), g.cstr()));
        doca_argp_param_set_long_name => |g| r(doca_argp_param_set_long_name(g.h(K::Param), g.cstr()));
        doca_argp_param_set_arguments => |g| r(doca_argp_param_set_arguments(g.h(K::Param), g.cstr()));
        doca_argp_param_set_description => |g| r(doca_argp_param_set_description(g.h(K::Param), g.cstr()));
        doca_argp_param_set_callback => |g| r(doca_argp_param_set_callback(g.h(K::Param), g.cb_param()));
        doca_argp_param_set_type => |g| r(doca_argp_param_set_type(g.h(K::Param), g.u32()));
        doca_argp_param_set_mandatory => |g| r(doca_argp_param_set_mandatory(g.h(K::Param)));
        doca_argp_param_set_multiplicity => |g| r(doca_argp_param_set_multiplicity(g.h(K::Param)));
        doca_argp_register_param => |g| r(doca_argp_register_param(g.h(K::Param)));
        doca_argp_start => |g| {
            static mut ARGV: [*mut c_char; 6] = [std::ptr::null_mut(); 6];
            const ARGS: [&CStr; 6] = [c"prog", c"--fuzz", c"7", c"-f", c"-l", c"60"];
            let argv = &raw mut ARGV;
            for (i, a) in ARGS.iter().enumerate() {
                (*argv)[i] = a.as_ptr() as *mut c_char;
            }
            let argc = [-1, 0, 1, 3, 6, 16][g.below(6) as usize];
            let null = argc > 6 || g.chance(30);
            if argc < 0 {
                g.bad("negative argc");
            } else if null && argc > 1 {
                g.bad("NULL argv with arguments");
            }
            r(doca_argp_start(argc, if null { std::ptr::null_mut() } else { argv.cast() }))
        };
        #[lenient] doca_argp_destroy => |_g| r(doca_argp_destroy());
        // doca_log.h
        #[lenient] doca_log_backend_create_standard => |_g| r(doca_log_backend_create_standard());
        doca_log_backend_create_with_file_sdk => |g| {
            let f = if g.chance(20) { g.bad("NULL FILE"); std::ptr::null_mut() } else { g.garbage.as_ptr() as *mut c_void };
            r(doca_log_backend_create_with_file_sdk(f, g.out()))
        };
        doca_log_backend_set_sdk_level => |g| {
            let b: *mut DocaLogBackend = if g.chance(50) {
                let mut p: *mut DocaLogBackend = std::ptr::null_mut();
                doca_log_backend_create_with_file_sdk(g.garbage.as_ptr() as *mut c_void, &mut p);
                p
            } else {
                g.bad("forged backend");
                g.garbage.as_ptr().cast_mut().cast()
            };
            r(doca_log_backend_set_sdk_level(b, [10, 30, 50, 70][g.below(4) as usize]))
        };
        #[lenient] doca_log_level_set_global_lower_limit => |g| r(doca_log_level_set_global_lower_limit([10, 20, 30, 40, 50, 60, 70, 0, 99][g.below(9) as usize]));
        #[lenient] doca_log_level_get_global_lower_limit => |_g| r(doca_log_level_get_global_lower_limit());
        #[lenient] doca_log_level_set_global_sdk_limit => |g| r(doca_log_level_set_global_sdk_limit([10, 20, 30, 40, 50, 0, 99][g.below(7) as usize]));
        doca_log_register_source => |g| r(doca_log_register_source(g.cstr(), g.out()));
        #[lenient] doca_log_unregister_source => |g| r(doca_log_unregister_source(g.i32()));
        doca_log => |g| {
            let format = if g.chance(10) {
                g.bad("NULL format");
                std::ptr::null()
            } else {
                c"fuzz %s %d %.3f %zu".as_ptr()
            };
            // levels 0 and 10: formatted, never printed (the fuzzer's output stays its own)
            let level = [0, 10][g.below(2) as usize];
            let name = if g.chance(20) { std::ptr::null() } else { c"capi_fuzz.rs".as_ptr() }; // NULL file and function: allowed
            r(variadic::doca_log(level, g.i32(), name, g.i32(), name, format, c"text".as_ptr(), g.i32(), 0.5f64, usize::MAX))
        };
        #[lenient] doca_emu_log_write => |g| r(doca_emu_log_write(0, g.i32(), g.cstr(), g.i32(), g.cstr()));
        // doca_config.h: only values that are no side (a side would bind this process to it)
        doca_emu_set_build_side => |g| {
            g.bad("not a side");
            r(doca_emu_set_build_side([0, 3, -1, i32::MIN, i32::MAX][g.below(5) as usize]))
        };
        // doca_dev.h
        doca_devinfo_create_list => |g| {
            let (list, n): (*mut *mut *mut DocaDevinfo, *mut u32) = (g.out(), g.out());
            let rc = doca_devinfo_create_list(list, n);
            if rc == 0 {
                // destroyed at once: a stale list for the destroy calls (its devinfos, stale)
                let l = *list;
                for i in 0..*n as usize {
                    g.stale.borrow_mut()[K::Devinfo as usize].push(*l.add(i) as usize);
                }
                if doca_devinfo_destroy_list(l) != 0 {
                    std::process::exit(1);
                }
                g.lists.borrow_mut().1.push(l as usize);
            }
            r(rc)
        };
        doca_devinfo_destroy_list => |g| r(doca_devinfo_destroy_list(g.list(false)));
        doca_devinfo_get_pci_addr_str => |g| r(doca_devinfo_get_pci_addr_str(g.h(K::Devinfo), g.out()));
        doca_devinfo_is_equal_pci_addr => |g| r(doca_devinfo_is_equal_pci_addr(g.h(K::Devinfo), g.cstr(), g.out()));
        doca_devinfo_get_iface_name => |g| r(doca_devinfo_get_iface_name(g.h(K::Devinfo), g.out(), 256));
        doca_devinfo_get_ibdev_name => |g| r(doca_devinfo_get_ibdev_name(g.h(K::Devinfo), g.out(), 256));
        doca_devinfo_rep_cap_is_filter_all_supported => |g| r(doca_devinfo_rep_cap_is_filter_all_supported(g.h(K::Devinfo), g.out()));
        doca_devinfo_rep_cap_is_filter_net_supported => |g| r(doca_devinfo_rep_cap_is_filter_net_supported(g.h(K::Devinfo), g.out()));
        doca_devinfo_rep_cap_is_filter_emulated_supported => |g| r(doca_devinfo_rep_cap_is_filter_emulated_supported(g.h(K::Devinfo), g.out()));
        doca_devinfo_cap_is_hotplug_manager_supported => |g| r(doca_devinfo_cap_is_hotplug_manager_supported(g.h(K::Devinfo), g.out()));
        doca_dev_open => |g| r(doca_dev_open(g.h(K::Devinfo), g.outh(K::Dev)));
        doca_dev_close => |g| r(doca_dev_close(g.hn_opt(K::Dev)));
        doca_dev_as_devinfo => |g| r(doca_dev_as_devinfo(g.h(K::Dev)));
        doca_devinfo_rep_create_list => |g| {
            let (list, n): (*mut *mut *mut DocaDevinfoRep, *mut u32) = (g.out(), g.out());
            let rc = doca_devinfo_rep_create_list(g.h(K::Dev), [0, 2, 4, 6, -1][g.below(5) as usize], list, n);
            if rc == 0 {
                let l = *list;
                for i in 0..*n as usize {
                    g.stale.borrow_mut()[K::DevinfoRep as usize].push(*l.add(i) as usize);
                }
                if doca_devinfo_rep_destroy_list(l) != 0 {
                    std::process::exit(1);
                }
                g.rep_lists.borrow_mut().1.push(l as usize);
            }
            r(rc)
        };
        doca_devinfo_rep_destroy_list => |g| r(doca_devinfo_rep_destroy_list(g.list(true)));
        doca_devinfo_rep_get_pci_addr_str => |g| r(doca_devinfo_rep_get_pci_addr_str(g.h(K::DevinfoRep), g.out()));
        doca_devinfo_rep_is_equal_pci_addr => |g| r(doca_devinfo_rep_is_equal_pci_addr(g.h(K::DevinfoRep), g.cstr(), g.out()));
        doca_devinfo_rep_get_vuid => |g| r(doca_devinfo_rep_get_vuid(g.h(K::DevinfoRep), g.out(), 256));
        // doca_dev.h, 3.x
        doca_devinfo_get_pci_func_type => |g| r(doca_devinfo_get_pci_func_type(g.h(K::Devinfo), g.out()));
        doca_devinfo_get_sf_index => |g| r(doca_devinfo_get_sf_index(g.h(K::Devinfo), g.out()));
        doca_devinfo_rep_get_pci_func_type => |g| r(doca_devinfo_rep_get_pci_func_type(g.h(K::DevinfoRep), g.out()));
        doca_devinfo_rep_get_is_hotplug => |g| r(doca_devinfo_rep_get_is_hotplug(g.h(K::DevinfoRep), g.out()));
        doca_dev_rep_open => |g| r(doca_dev_rep_open(g.h(K::DevinfoRep), g.outh(K::DevRep)));
        doca_dev_rep_close => |g| r(doca_dev_rep_close(g.hn(K::DevRep)));
        doca_dev_rep_as_devinfo => |g| r(doca_dev_rep_as_devinfo(g.h(K::DevRep)));
        // doca_pe.h, doca_ctx.h, tasks
        doca_pe_create => |g| r(doca_pe_create(g.outh(K::Pe)));
        doca_pe_destroy => |g| r(doca_pe_destroy(g.hn(K::Pe)));
        doca_pe_progress => |g| r(doca_pe_progress(g.h(K::Pe)));
        doca_pe_get_num_inflight_tasks => |g| r(doca_pe_get_num_inflight_tasks(g.h(K::Pe), g.out()));
        doca_pe_get_notification_handle => |g| r(doca_pe_get_notification_handle(g.h(K::Pe), g.out()));
        doca_pe_request_notification => |g| r(doca_pe_request_notification(g.h(K::Pe)));
        doca_pe_clear_notification => |g| r(doca_pe_clear_notification(g.h(K::Pe), 0));
        doca_pe_connect_ctx => |g| r(doca_pe_connect_ctx(g.h(K::Pe), g.h(K::Ctx)));
        doca_ctx_start => |g| r(doca_ctx_start(g.h(K::Ctx)));
        doca_ctx_stop => |g| r(doca_ctx_stop(if g.chance(10) { g.h(K::Ctx) } else { g.hn(K::Ctx) }));
        doca_ctx_get_state => |g| r(doca_ctx_get_state(g.h(K::Ctx), g.out()));
        doca_ctx_set_user_data => |g| r(doca_ctx_set_user_data(g.h(K::Ctx), g.data()));
        doca_ctx_get_user_data => |g| r(doca_ctx_get_user_data(g.h(K::Ctx), g.out()));
        doca_ctx_flush_tasks => |g| r(doca_ctx_flush_tasks(g.h(K::Ctx)));
        doca_ctx_get_num_inflight_tasks => |g| r(doca_ctx_get_num_inflight_tasks(g.h(K::Ctx), g.out()));
        doca_ctx_set_state_changed_cb => |g| r(doca_ctx_set_state_changed_cb(g.h(K::Ctx), g.cb_state()));
        doca_task_submit => |g| r(doca_task_submit(g.h(K::Task)));
        doca_task_submit_ex => |g| r(doca_task_submit_ex(g.h(K::Task), [0, 1, 2, u32::MAX][g.below(4) as usize]));
        doca_task_try_submit => |g| r(doca_task_try_submit(g.h(K::Task)));
        doca_task_free => |g| r(doca_task_free(g.hn(K::Task)));
        doca_task_get_status => |g| r(doca_task_get_status(g.h(K::Task)));
        doca_task_set_user_data => |g| r(doca_task_set_user_data(g.h(K::Task), g.data()));
        doca_task_get_user_data => |g| r(doca_task_get_user_data(g.h(K::Task)));
        doca_task_get_ctx => |g| r(doca_task_get_ctx(g.h(K::Task)));
        // doca_mmap.h
        doca_mmap_create => |g| r(doca_mmap_create(g.outh(K::Mmap)));
        doca_mmap_destroy => |g| r(doca_mmap_destroy(g.hn(K::Mmap)));
        doca_mmap_set_memrange => |g| {
            let base = g.region;
            let (addr, len): (*mut c_void, usize) = match g.below(6) {
                0 => { g.bad("NULL range"); (std::ptr::null_mut(), 64) }
                1 => { g.bad("SIZE_MAX range"); (base.cast(), usize::MAX) }
                2 => { g.bad("PTRDIFF_MAX + 1 range"); (base.cast(), isize::MAX as usize + 1) }
                3 => { g.bad("a wrapping range"); ((usize::MAX - 4095) as *mut c_void, 8192) }
                _ => (base.cast(), 1 + g.below(REGION_LEN as u64) as usize),
            };
            r(doca_mmap_set_memrange(g.h(K::Mmap), addr, len))
        };
        doca_mmap_get_memrange => |g| r(doca_mmap_get_memrange(g.h(K::Mmap), g.out(), g.out()));
        doca_mmap_set_permissions => |g| r(doca_mmap_set_permissions(g.h(K::Mmap), [1, 0x20, 0x21, u32::MAX][g.below(4) as usize]));
        doca_mmap_add_dev => |g| r(doca_mmap_add_dev(g.h(K::Mmap), g.h(K::Dev)));
        doca_mmap_rm_dev => |g| r(doca_mmap_rm_dev(g.h(K::Mmap), g.h(K::Dev)));
        doca_mmap_start => |g| r(doca_mmap_start(g.h(K::Mmap)));
        doca_mmap_enable_thread_safety => |g| r(doca_mmap_enable_thread_safety(g.h(K::Mmap)));
        doca_mmap_stop => |g| r(doca_mmap_stop(if g.chance(10) { g.h(K::Mmap) } else { g.hn(K::Mmap) }));
        doca_mmap_get_num_bufs => |g| r(doca_mmap_get_num_bufs(g.h(K::Mmap), g.out()));
        doca_mmap_set_free_cb => |g| r(doca_mmap_set_free_cb(g.h(K::Mmap), g.cb_free(), std::ptr::null_mut()));
        doca_mmap_set_user_data => |g| r(doca_mmap_set_user_data(g.h(K::Mmap), g.data()));
        doca_mmap_get_user_data => |g| r(doca_mmap_get_user_data(g.h(K::Mmap), g.out()));
        doca_mmap_set_max_num_devices => |g| r(doca_mmap_set_max_num_devices(g.h(K::Mmap), g.u32()));
        doca_mmap_get_max_num_devices => |g| r(doca_mmap_get_max_num_devices(g.h(K::Mmap), g.out()));
        doca_mmap_get_exported => |g| r(doca_mmap_get_exported(g.h(K::Mmap), g.out()));
        doca_mmap_get_from_export => |g| r(doca_mmap_get_from_export(g.h(K::Mmap), g.out()));
        doca_mmap_export_pci => |g| r(doca_mmap_export_pci(g.h(K::Mmap), g.h(K::Dev), g.out(), g.out()));
        doca_mmap_export_rdma => |g| r(doca_mmap_export_rdma(g.h(K::Mmap), g.h(K::Dev), g.out(), g.out()));
        doca_mmap_create_from_export => |g| {
            // a descriptor's worth of garbage, or extreme lengths (refused before reading)
            let (desc, len): (*const c_void, usize) = match g.below(5) {
                0 => { g.bad("SIZE_MAX descriptor"); (g.garbage.as_ptr().cast(), usize::MAX) }
                1 => { g.bad("PTRDIFF_MAX + 1 descriptor"); (g.garbage.as_ptr().cast(), isize::MAX as usize + 1) }
                2 => { g.bad("NULL descriptor"); (std::ptr::null(), 76) }
                3 => { g.bad("a 1 GiB descriptor"); (g.garbage.as_ptr().cast(), 1 << 30) }
                _ => { g.bad("a garbage descriptor"); (g.garbage.as_ptr().cast(), g.below(128) as usize) }
            };
            let data = g.data();
            r(doca_mmap_create_from_export(if g.chance(50) { &data } else { std::ptr::null() }, desc, len, g.h(K::Dev), g.outh(K::Mmap)))
        };
        doca_mmap_cap_is_export_pci_supported => |g| r(doca_mmap_cap_is_export_pci_supported(g.h(K::Devinfo), g.out()));
        doca_mmap_cap_is_create_from_export_pci_supported => |g| r(doca_mmap_cap_is_create_from_export_pci_supported(g.h(K::Devinfo), g.out()));
        // doca_buf_inventory.h, doca_buf.h
        doca_buf_inventory_create => |g| {
            let n = [0usize, 1, 16, 1024, u32::MAX as usize + 1, usize::MAX][g.below(6) as usize];
            r(doca_buf_inventory_create(n, g.outh(K::Inventory)))
        };
        doca_buf_inventory_destroy => |g| r(doca_buf_inventory_destroy(g.hn(K::Inventory)));
        doca_buf_inventory_start => |g| r(doca_buf_inventory_start(g.h(K::Inventory)));
        doca_buf_inventory_stop => |g| r(doca_buf_inventory_stop(if g.chance(10) { g.h(K::Inventory) } else { g.hn(K::Inventory) }));
        doca_buf_inventory_get_num_free_elements => |g| r(doca_buf_inventory_get_num_free_elements(g.h(K::Inventory), g.out()));
        doca_buf_inventory_get_num_elements => |g| r(doca_buf_inventory_get_num_elements(g.h(K::Inventory), g.out()));
        doca_buf_inventory_set_user_data => |g| r(doca_buf_inventory_set_user_data(g.h(K::Inventory), g.data()));
        doca_buf_inventory_get_user_data => |g| r(doca_buf_inventory_get_user_data(g.h(K::Inventory), g.out()));
        doca_buf_inventory_buf_get_by_args => |g| r(doca_buf_inventory_buf_get_by_args(g.h(K::Inventory), g.h(K::Mmap), g.addr(), g.range_len(), g.addr(), g.range_len(), g.outh(K::Buf)));
        doca_buf_inventory_buf_get_by_addr => |g| r(doca_buf_inventory_buf_get_by_addr(g.h(K::Inventory), g.h(K::Mmap), g.addr(), g.range_len(), g.outh(K::Buf)));
        doca_buf_inventory_buf_reuse_by_addr => |g| r(doca_buf_inventory_buf_reuse_by_addr(g.h(K::Buf), g.addr(), g.range_len()));
        doca_buf_inventory_buf_reuse_by_data => |g| r(doca_buf_inventory_buf_reuse_by_data(g.h(K::Buf), g.addr(), g.range_len()));
        doca_buf_inventory_buf_get_by_data => |g| r(doca_buf_inventory_buf_get_by_data(g.h(K::Inventory), g.h(K::Mmap), g.addr(), g.range_len(), g.outh(K::Buf)));
        doca_buf_inventory_buf_dup => |g| r(doca_buf_inventory_buf_dup(g.h(K::Inventory), g.h(K::Buf), g.outh(K::Buf)));
        doca_buf_get_head => |g| r(doca_buf_get_head(g.h(K::Buf), g.out()));
        doca_buf_get_len => |g| r(doca_buf_get_len(g.h(K::Buf), g.out()));
        doca_buf_get_data => |g| r(doca_buf_get_data(g.h(K::Buf), g.out()));
        doca_buf_get_data_len => |g| r(doca_buf_get_data_len(g.h(K::Buf), g.out()));
        doca_buf_set_data => |g| r(doca_buf_set_data(g.h(K::Buf), g.addr(), g.range_len()));
        doca_buf_reset_data_len => |g| r(doca_buf_reset_data_len(g.h(K::Buf)));
        doca_buf_get_refcount => |g| r(doca_buf_get_refcount(g.h(K::Buf), g.out()));
        doca_buf_inc_refcount => |g| r(doca_buf_inc_refcount(g.h(K::Buf), g.opt()));
        doca_buf_dec_refcount => |g| r(doca_buf_dec_refcount(g.hn(K::Buf), g.opt()));
        doca_buf_chain_list => |g| r(doca_buf_chain_list(g.h(K::Buf), g.h(K::Buf)));
        doca_buf_unchain_list => |g| r(doca_buf_unchain_list(g.h(K::Buf), g.h(K::Buf)));
        doca_buf_get_next_in_list => |g| r(doca_buf_get_next_in_list(g.h(K::Buf), g.out()));
        doca_buf_get_last_in_list => |g| r(doca_buf_get_last_in_list(g.h(K::Buf), g.out()));
        doca_buf_is_first_in_list => |g| r(doca_buf_is_first_in_list(g.h(K::Buf), g.out()));
        doca_buf_is_last_in_list => |g| r(doca_buf_is_last_in_list(g.h(K::Buf), g.out()));
        doca_buf_is_in_list => |g| r(doca_buf_is_in_list(g.h(K::Buf), g.out()));
        doca_buf_get_list_len => |g| r(doca_buf_get_list_len(g.h(K::Buf), g.out()));
        // doca_dma.h
        doca_dma_create => |g| r(doca_dma_create(g.h(K::Dev), g.outh(K::Dma)));
        doca_dma_destroy => |g| r(doca_dma_destroy(g.hn(K::Dma)));
        doca_dma_as_ctx => |g| r(doca_dma_as_ctx(g.h(K::Dma)));
        doca_dma_cap_get_max_num_tasks => |g| r(doca_dma_cap_get_max_num_tasks(g.h(K::Dma), g.out()));
        doca_dma_cap_task_memcpy_is_supported => |g| r(doca_dma_cap_task_memcpy_is_supported(g.h(K::Devinfo)));
        doca_dma_cap_task_memcpy_get_max_buf_size => |g| r(doca_dma_cap_task_memcpy_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_dma_cap_task_memcpy_get_max_buf_list_len => |g| r(doca_dma_cap_task_memcpy_get_max_buf_list_len(g.h(K::Devinfo), g.out()));
        doca_dma_task_memcpy_set_conf => |g| r(doca_dma_task_memcpy_set_conf(g.h(K::Dma), g.cb_task(), g.cb_task(), g.u32()));
        doca_dma_task_memcpy_alloc_init => |g| r(doca_dma_task_memcpy_alloc_init(g.h(K::Dma), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_dma_task_memcpy_as_task => |g| r(doca_dma_task_memcpy_as_task(g.h(K::Task)));
        doca_dma_task_memcpy_set_src => |g| r(doca_dma_task_memcpy_set_src(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_dma_task_memcpy_get_src => |g| r(doca_dma_task_memcpy_get_src(g.h(K::Task)));
        doca_dma_task_memcpy_set_dst => |g| r(doca_dma_task_memcpy_set_dst(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_dma_task_memcpy_get_dst => |g| r(doca_dma_task_memcpy_get_dst(g.h(K::Task)));
        // doca_version.h
        #[lenient] doca_version => |_g| r(doca_version());
        #[lenient] doca_version_runtime => |_g| r(doca_version_runtime());
        // doca_clock.h; a NIC clock the device lacks is NOT_SUPPORTED, never success
        doca_clock_cap_nic_free_running_is_supported => |g| r(doca_clock_cap_nic_free_running_is_supported(g.h(K::Devinfo)));
        doca_clock_cap_nic_real_time_is_supported => |g| r(doca_clock_cap_nic_real_time_is_supported(g.h(K::Devinfo)));
        doca_clock_cap_nic_dpa_timer_is_supported => |g| r(doca_clock_cap_nic_dpa_timer_is_supported(g.h(K::Devinfo)));
        doca_clock_create => |g| r(doca_clock_create(g.h(K::Dev), g.outh(K::Clock)));
        doca_clock_destroy => |g| r(doca_clock_destroy(g.hn(K::Clock)));
        doca_clock_get_timestamp => |g| r(doca_clock_get_timestamp(g.h(K::Clock), clock_bits(g, false), g.out()));
        doca_clock_get_crosstimestamp => |g| r(doca_clock_get_crosstimestamp(g.h(K::Clock), clock_bits(g, false), clock_bits(g, true), g.out(), g.out(), g.out()));
        // doca_mmap_advise.h
        doca_mmap_advise_create => |g| r(doca_mmap_advise_create(g.h(K::Dev), g.outh(K::Advise)));
        doca_mmap_advise_destroy => |g| r(doca_mmap_advise_destroy(g.hn(K::Advise)));
        doca_mmap_advise_as_ctx => |g| r(doca_mmap_advise_as_ctx(g.h(K::Advise)));
        doca_mmap_advise_cap_task_cache_invalidate_is_supported => |g| r(doca_mmap_advise_cap_task_cache_invalidate_is_supported(g.h(K::Devinfo)));
        doca_mmap_advise_task_cache_invalidate_get_max_buf_size => |g| r(doca_mmap_advise_task_cache_invalidate_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_mmap_advise_task_invalidate_cache_set_conf => |g| r(doca_mmap_advise_task_invalidate_cache_set_conf(g.h(K::Advise), g.cb_task(), g.cb_task(), g.u32()));
        doca_mmap_advise_task_invalidate_cache_alloc_init => |g| r(doca_mmap_advise_task_invalidate_cache_alloc_init(g.h(K::Advise), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_mmap_advise_task_invalidate_cache_as_doca_task => |g| r(doca_mmap_advise_task_invalidate_cache_as_doca_task(g.h(K::Task)));
        doca_mmap_advise_task_invalidate_cache_set_buf => |g| r(doca_mmap_advise_task_invalidate_cache_set_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_mmap_advise_task_invalidate_cache_get_buf => |g| r(doca_mmap_advise_task_invalidate_cache_get_buf(g.h(K::Task)));
        // doca_graph.h
        doca_graph_create => |g| r(doca_graph_create(g.h(K::Pe), g.outh(K::Graph)));
        doca_graph_destroy => |g| r(doca_graph_destroy(g.hn(K::Graph)));
        doca_graph_set_conf => |g| r(doca_graph_set_conf(g.h(K::Graph), g.cb_graph(), g.cb_graph(), g.u8() as u32));
        doca_graph_set_user_data => |g| r(doca_graph_set_user_data(g.h(K::Graph), g.data()));
        doca_graph_get_user_data => |g| r(doca_graph_get_user_data(g.h(K::Graph), g.out()));
        doca_graph_node_create_from_ctx => |g| r(doca_graph_node_create_from_ctx(g.h(K::Graph), g.h(K::Ctx), g.outh(K::GraphNode)));
        doca_graph_node_create_from_user => |g| r(doca_graph_node_create_from_user(g.h(K::Graph), g.cb_user_node(), g.outh(K::GraphNode)));
        doca_graph_node_create_from_graph => |g| r(doca_graph_node_create_from_graph(g.h(K::Graph), g.h(K::Graph), g.outh(K::GraphNode)));
        doca_graph_add_dependency => |g| r(doca_graph_add_dependency(g.h(K::Graph), g.h(K::GraphNode), g.h(K::GraphNode)));
        doca_graph_start => |g| r(doca_graph_start(g.h(K::Graph)));
        doca_graph_stop => |g| r(doca_graph_stop(g.h(K::Graph)));
        doca_graph_instance_create => |g| r(doca_graph_instance_create(g.h(K::Graph), g.outh(K::GraphInstance)));
        doca_graph_instance_destroy => |g| r(doca_graph_instance_destroy(g.hn(K::GraphInstance)));
        doca_graph_instance_set_user_data => |g| r(doca_graph_instance_set_user_data(g.h(K::GraphInstance), g.data()));
        doca_graph_instance_get_user_data => |g| r(doca_graph_instance_get_user_data(g.h(K::GraphInstance), g.out()));
        doca_graph_instance_set_ctx_node_data => |g| r(doca_graph_instance_set_ctx_node_data(g.h(K::GraphInstance), g.h(K::GraphNode), g.h(K::Task)));
        doca_graph_instance_set_user_node_data => |g| r(doca_graph_instance_set_user_node_data(g.h(K::GraphInstance), g.h(K::GraphNode), g.cookie()));
        doca_graph_instance_set_sub_graph_node_data => |g| r(doca_graph_instance_set_sub_graph_node_data(g.h(K::GraphInstance), g.h(K::GraphNode), g.h(K::GraphInstance)));
        doca_graph_instance_submit => |g| r(doca_graph_instance_submit(g.h(K::GraphInstance)));
        // doca_sync_event.h (the blocking waits get arguments whose condition holds at once,
        // else a bad mask or a bad handle: the fuzzer never blocks)
        doca_sync_event_create => |g| r(doca_sync_event_create(g.outh(K::SyncEvent)));
        doca_sync_event_create_from_export => |g| { let (p, n) = g.msg(); r(doca_sync_event_create_from_export(g.h(K::Dev), p.cast(), n, g.outh(K::SyncEvent))) };
        doca_sync_event_cap_is_create_from_export_supported => |g| r(doca_sync_event_cap_is_create_from_export_supported(g.h(K::Devinfo)));
        doca_sync_event_remote_net_create_from_export => |g| { let (p, n) = g.msg(); r(doca_sync_event_remote_net_create_from_export(g.h(K::Dev), p.cast(), n, g.out())) };
        doca_sync_event_cap_remote_net_is_create_from_export_supported => |g| r(doca_sync_event_cap_remote_net_is_create_from_export_supported(g.h(K::Devinfo)));
        doca_sync_event_destroy => |g| r(doca_sync_event_destroy(g.hn(K::SyncEvent)));
        doca_sync_event_remote_net_destroy => |g| r(doca_sync_event_remote_net_destroy(g.opt()));
        doca_sync_event_add_publisher_location_cpu => |g| r(doca_sync_event_add_publisher_location_cpu(g.h(K::SyncEvent), g.h(K::Dev)));
        doca_sync_event_add_publisher_location_dpa => |g| r(doca_sync_event_add_publisher_location_dpa(g.h(K::SyncEvent), g.opt()));
        doca_sync_event_add_publisher_location_gpu => |g| r(doca_sync_event_add_publisher_location_gpu(g.h(K::SyncEvent), g.opt()));
        doca_sync_event_add_publisher_location_dpu => |g| r(doca_sync_event_add_publisher_location_dpu(g.h(K::SyncEvent)));
        doca_sync_event_add_publisher_location_remote_pci => |g| r(doca_sync_event_add_publisher_location_remote_pci(g.h(K::SyncEvent)));
        doca_sync_event_add_publisher_location_remote_net => |g| r(doca_sync_event_add_publisher_location_remote_net(g.h(K::SyncEvent)));
        doca_sync_event_add_subscriber_location_cpu => |g| r(doca_sync_event_add_subscriber_location_cpu(g.h(K::SyncEvent), g.h(K::Dev)));
        doca_sync_event_add_subscriber_location_dpa => |g| r(doca_sync_event_add_subscriber_location_dpa(g.h(K::SyncEvent), g.opt()));
        doca_sync_event_add_subscriber_location_gpu => |g| r(doca_sync_event_add_subscriber_location_gpu(g.h(K::SyncEvent), g.opt()));
        doca_sync_event_add_subscriber_location_dpu => |g| r(doca_sync_event_add_subscriber_location_dpu(g.h(K::SyncEvent)));
        doca_sync_event_add_subscriber_location_remote_pci => |g| r(doca_sync_event_add_subscriber_location_remote_pci(g.h(K::SyncEvent)));
        // this program's memory, for the program's life
        doca_sync_event_set_addr => |g| r(doca_sync_event_set_addr(g.h(K::SyncEvent), g.out()));
        doca_sync_event_start => |g| r(doca_sync_event_start(g.h(K::SyncEvent)));
        doca_sync_event_stop => |g| r(doca_sync_event_stop(g.h(K::SyncEvent)));
        doca_sync_event_as_ctx => |g| r(doca_sync_event_as_ctx(g.h(K::SyncEvent)));
        doca_sync_event_cap_task_get_is_supported => |g| r(doca_sync_event_cap_task_get_is_supported(g.h(K::Devinfo)));
        doca_sync_event_cap_task_notify_set_is_supported => |g| r(doca_sync_event_cap_task_notify_set_is_supported(g.h(K::Devinfo)));
        doca_sync_event_cap_task_notify_add_is_supported => |g| r(doca_sync_event_cap_task_notify_add_is_supported(g.h(K::Devinfo)));
        doca_sync_event_cap_task_wait_gt_is_supported => |g| r(doca_sync_event_cap_task_wait_gt_is_supported(g.h(K::Devinfo)));
        doca_sync_event_cap_task_wait_eq_is_supported => |g| r(doca_sync_event_cap_task_wait_eq_is_supported(g.h(K::Devinfo)));
        doca_sync_event_cap_task_wait_neq_is_supported => |g| r(doca_sync_event_cap_task_wait_neq_is_supported(g.h(K::Devinfo)));
        doca_sync_event_task_get_set_conf => |g| r(doca_sync_event_task_get_set_conf(g.h(K::SyncEvent), g.cb_task(), g.cb_task(), g.u32()));
        doca_sync_event_task_notify_set_set_conf => |g| r(doca_sync_event_task_notify_set_set_conf(g.h(K::SyncEvent), g.cb_task(), g.cb_task(), g.u32()));
        doca_sync_event_task_notify_add_set_conf => |g| r(doca_sync_event_task_notify_add_set_conf(g.h(K::SyncEvent), g.cb_task(), g.cb_task(), g.u32()));
        doca_sync_event_task_wait_gt_set_conf => |g| r(doca_sync_event_task_wait_gt_set_conf(g.h(K::SyncEvent), g.cb_task(), g.cb_task(), g.u32()));
        doca_sync_event_task_wait_eq_set_conf => |g| r(doca_sync_event_task_wait_eq_set_conf(g.h(K::SyncEvent), g.cb_task(), g.cb_task(), g.u32()));
        doca_sync_event_task_wait_neq_set_conf => |g| r(doca_sync_event_task_wait_neq_set_conf(g.h(K::SyncEvent), g.cb_task(), g.cb_task(), g.u32()));
        doca_sync_event_task_get_alloc_init => |g| r(doca_sync_event_task_get_alloc_init(g.h(K::SyncEvent), g.opt(), g.data(), g.outh(K::Task)));
        doca_sync_event_task_notify_set_alloc_init => |g| r(doca_sync_event_task_notify_set_alloc_init(g.h(K::SyncEvent), g.u64(), g.data(), g.outh(K::Task)));
        doca_sync_event_task_notify_add_alloc_init => |g| r(doca_sync_event_task_notify_add_alloc_init(g.h(K::SyncEvent), g.u64(), g.opt(), g.data(), g.outh(K::Task)));
        doca_sync_event_task_wait_gt_alloc_init => |g| r(doca_sync_event_task_wait_gt_alloc_init(g.h(K::SyncEvent), g.u64(), g.se_mask(false), g.data(), g.outh(K::Task)));
        doca_sync_event_task_wait_eq_alloc_init => |g| r(doca_sync_event_task_wait_eq_alloc_init(g.h(K::SyncEvent), g.u64(), g.se_mask(false), g.data(), g.outh(K::Task)));
        doca_sync_event_task_wait_neq_alloc_init => |g| r(doca_sync_event_task_wait_neq_alloc_init(g.h(K::SyncEvent), g.u64(), g.se_mask(false), g.data(), g.outh(K::Task)));
        doca_sync_event_task_get_as_doca_task => |g| r(doca_sync_event_task_get_as_doca_task(g.h(K::Task)));
        doca_sync_event_task_notify_set_as_doca_task => |g| r(doca_sync_event_task_notify_set_as_doca_task(g.h(K::Task)));
        doca_sync_event_task_notify_add_as_doca_task => |g| r(doca_sync_event_task_notify_add_as_doca_task(g.h(K::Task)));
        doca_sync_event_task_wait_gt_as_doca_task => |g| r(doca_sync_event_task_wait_gt_as_doca_task(g.h(K::Task)));
        doca_sync_event_task_wait_eq_as_doca_task => |g| r(doca_sync_event_task_wait_eq_as_doca_task(g.h(K::Task)));
        doca_sync_event_task_wait_neq_as_doca_task => |g| r(doca_sync_event_task_wait_neq_as_doca_task(g.h(K::Task)));
        doca_sync_event_task_get_set_ret_val_ptr => |g| r(doca_sync_event_task_get_set_ret_val_ptr(g.h(K::Task), g.opt()));
        #[lenient] doca_sync_event_task_get_get_ret_val_ptr => |g| r(doca_sync_event_task_get_get_ret_val_ptr(g.h(K::Task)));
        doca_sync_event_task_notify_set_set_set_val => |g| r(doca_sync_event_task_notify_set_set_set_val(g.h(K::Task), g.u64()));
        #[lenient] doca_sync_event_task_notify_set_get_set_val => |g| r(doca_sync_event_task_notify_set_get_set_val(g.h(K::Task)));
        doca_sync_event_task_notify_add_set_inc_val => |g| r(doca_sync_event_task_notify_add_set_inc_val(g.h(K::Task), g.u64()));
        #[lenient] doca_sync_event_task_notify_add_get_inc_val => |g| r(doca_sync_event_task_notify_add_get_inc_val(g.h(K::Task)));
        doca_sync_event_task_notify_add_set_fetched_val_ptr => |g| r(doca_sync_event_task_notify_add_set_fetched_val_ptr(g.h(K::Task), g.opt()));
        #[lenient] doca_sync_event_task_notify_add_get_fetched_val_ptr => |g| r(doca_sync_event_task_notify_add_get_fetched_val_ptr(g.h(K::Task)));
        doca_sync_event_task_wait_gt_set_wait_val => |g| r(doca_sync_event_task_wait_gt_set_wait_val(g.h(K::Task), g.u64()));
        #[lenient] doca_sync_event_task_wait_gt_get_wait_val => |g| r(doca_sync_event_task_wait_gt_get_wait_val(g.h(K::Task)));
        doca_sync_event_task_wait_gt_set_mask => |g| r(doca_sync_event_task_wait_gt_set_mask(g.h(K::Task), g.se_mask(false)));
        #[lenient] doca_sync_event_task_wait_gt_get_mask => |g| r(doca_sync_event_task_wait_gt_get_mask(g.h(K::Task)));
        doca_sync_event_task_wait_eq_set_wait_val => |g| r(doca_sync_event_task_wait_eq_set_wait_val(g.h(K::Task), g.u64()));
        #[lenient] doca_sync_event_task_wait_eq_get_wait_val => |g| r(doca_sync_event_task_wait_eq_get_wait_val(g.h(K::Task)));
        doca_sync_event_task_wait_eq_set_mask => |g| r(doca_sync_event_task_wait_eq_set_mask(g.h(K::Task), g.se_mask(false)));
        #[lenient] doca_sync_event_task_wait_eq_get_mask => |g| r(doca_sync_event_task_wait_eq_get_mask(g.h(K::Task)));
        doca_sync_event_task_wait_neq_set_wait_val => |g| r(doca_sync_event_task_wait_neq_set_wait_val(g.h(K::Task), g.u64()));
        #[lenient] doca_sync_event_task_wait_neq_get_wait_val => |g| r(doca_sync_event_task_wait_neq_get_wait_val(g.h(K::Task)));
        doca_sync_event_task_wait_neq_set_mask => |g| r(doca_sync_event_task_wait_neq_set_mask(g.h(K::Task), g.se_mask(false)));
        #[lenient] doca_sync_event_task_wait_neq_get_mask => |g| r(doca_sync_event_task_wait_neq_get_mask(g.h(K::Task)));
        doca_sync_event_export_to_dpu => |g| r(doca_sync_event_export_to_dpu(g.h(K::SyncEvent), g.h(K::Dev), g.out(), g.out()));
        doca_sync_event_cap_is_export_to_dpu_supported => |g| r(doca_sync_event_cap_is_export_to_dpu_supported(g.h(K::Devinfo)));
        doca_sync_event_export_to_remote_pci => |g| r(doca_sync_event_export_to_remote_pci(g.h(K::SyncEvent), g.h(K::Dev), g.out(), g.out()));
        doca_sync_event_cap_is_export_to_remote_pci_supported => |g| r(doca_sync_event_cap_is_export_to_remote_pci_supported(g.h(K::Devinfo)));
        doca_sync_event_export_to_dpa => |g| r(doca_sync_event_export_to_dpa(g.h(K::SyncEvent), g.opt(), g.out()));
        doca_sync_event_get_dpa_handle => |g| r(doca_sync_event_get_dpa_handle(g.h(K::SyncEvent), g.opt(), g.out()));
        doca_sync_event_cap_is_export_to_dpa_supported => |g| r(doca_sync_event_cap_is_export_to_dpa_supported(g.h(K::Devinfo)));
        doca_sync_event_export_to_gpu => |g| r(doca_sync_event_export_to_gpu(g.h(K::SyncEvent), g.opt(), g.out()));
        doca_sync_event_get_gpu_handle => |g| r(doca_sync_event_get_gpu_handle(g.h(K::SyncEvent), g.opt(), g.out()));
        doca_sync_event_cap_is_export_to_gpu_supported => |g| r(doca_sync_event_cap_is_export_to_gpu_supported(g.h(K::Devinfo)));
        doca_sync_event_export_to_remote_net => |g| r(doca_sync_event_export_to_remote_net(g.h(K::SyncEvent), g.out(), g.out()));
        doca_sync_event_cap_is_export_to_remote_net_supported => |g| r(doca_sync_event_cap_is_export_to_remote_net_supported(g.h(K::Devinfo)));
        doca_sync_event_remote_net_export_to_dpa => |g| r(doca_sync_event_remote_net_export_to_dpa(g.opt(), g.opt(), g.out()));
        doca_sync_event_remote_net_get_dpa_handle => |g| r(doca_sync_event_remote_net_get_dpa_handle(g.opt(), g.opt(), g.out()));
        doca_sync_event_cap_remote_net_is_export_to_dpa_supported => |g| r(doca_sync_event_cap_remote_net_is_export_to_dpa_supported(g.h(K::Devinfo)));
        doca_sync_event_remote_net_export_to_gpu => |g| r(doca_sync_event_remote_net_export_to_gpu(g.opt(), g.opt(), g.out()));
        doca_sync_event_remote_net_get_gpu_handle => |g| r(doca_sync_event_remote_net_get_gpu_handle(g.opt(), g.opt(), g.out()));
        doca_sync_event_cap_remote_net_is_export_to_gpu_supported => |g| r(doca_sync_event_cap_remote_net_is_export_to_gpu_supported(g.h(K::Devinfo)));
        doca_sync_event_get => |g| r(doca_sync_event_get(g.h(K::SyncEvent), g.out()));
        doca_sync_event_update_add => |g| r(doca_sync_event_update_add(g.h(K::SyncEvent), g.u64(), g.out()));
        doca_sync_event_update_set => |g| r(doca_sync_event_update_set(g.h(K::SyncEvent), g.u64()));
        // value & 0 == 0 and value & 0 != 1 hold at once; gt: the value is set to all ones
        // first, and the mask is not 0
        doca_sync_event_wait_eq => |g| r(doca_sync_event_wait_eq(g.h(K::SyncEvent), 0, g.se_mask_zero()));
        doca_sync_event_wait_eq_yield => |g| r(doca_sync_event_wait_eq_yield(g.h(K::SyncEvent), 0, g.se_mask_zero()));
        doca_sync_event_wait_neq => |g| r(doca_sync_event_wait_neq(g.h(K::SyncEvent), 1, g.se_mask_zero()));
        doca_sync_event_wait_neq_yield => |g| r(doca_sync_event_wait_neq_yield(g.h(K::SyncEvent), 1, g.se_mask_zero()));
        doca_sync_event_wait_gt => |g| { let e = g.h(K::SyncEvent); doca_sync_event_update_set(e, u64::MAX); r(doca_sync_event_wait_gt(e, 0, g.se_mask(true))) };
        doca_sync_event_wait_gt_yield => |g| { let e = g.h(K::SyncEvent); doca_sync_event_update_set(e, u64::MAX); r(doca_sync_event_wait_gt_yield(e, 0, g.se_mask(true))) };
        // doca_compress.h
        doca_compress_create => |g| r(doca_compress_create(g.h(K::Dev), g.outh(K::Compress)));
        doca_compress_destroy => |g| r(doca_compress_destroy(g.hn(K::Compress)));
        doca_compress_as_ctx => |g| r(doca_compress_as_ctx(g.h(K::Compress)));
        doca_compress_cap_get_max_num_tasks => |g| r(doca_compress_cap_get_max_num_tasks(g.h(K::Compress), g.out()));
        doca_compress_get_max_num_tasks => |g| r(doca_compress_get_max_num_tasks(g.h(K::Compress), g.out()));
        doca_compress_cap_task_compress_deflate_is_supported => |g| r(doca_compress_cap_task_compress_deflate_is_supported(g.h(K::Devinfo)));
        doca_compress_cap_task_compress_deflate_get_max_buf_size => |g| r(doca_compress_cap_task_compress_deflate_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_compress_cap_task_compress_deflate_get_max_buf_list_len => |g| r(doca_compress_cap_task_compress_deflate_get_max_buf_list_len(g.h(K::Devinfo), g.out()));
        doca_compress_task_compress_deflate_set_conf => |g| r(doca_compress_task_compress_deflate_set_conf(g.h(K::Compress), g.cb_task(), g.cb_task(), g.u32()));
        doca_compress_task_compress_deflate_alloc_init => |g| r(doca_compress_task_compress_deflate_alloc_init(g.h(K::Compress), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_compress_task_compress_deflate_as_task => |g| r(doca_compress_task_compress_deflate_as_task(g.h(K::Task)));
        doca_compress_task_compress_deflate_set_src => |g| r(doca_compress_task_compress_deflate_set_src(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_compress_task_compress_deflate_get_src => |g| r(doca_compress_task_compress_deflate_get_src(g.h(K::Task)));
        doca_compress_task_compress_deflate_set_dst => |g| r(doca_compress_task_compress_deflate_set_dst(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_compress_task_compress_deflate_get_dst => |g| r(doca_compress_task_compress_deflate_get_dst(g.h(K::Task)));
        #[lenient] doca_compress_task_compress_deflate_get_crc_cs => |g| r(doca_compress_task_compress_deflate_get_crc_cs(g.h(K::Task)));
        #[lenient] doca_compress_task_compress_deflate_get_adler_cs => |g| r(doca_compress_task_compress_deflate_get_adler_cs(g.h(K::Task)));
        doca_compress_cap_task_decompress_deflate_is_supported => |g| r(doca_compress_cap_task_decompress_deflate_is_supported(g.h(K::Devinfo)));
        doca_compress_cap_task_decompress_deflate_get_max_buf_size => |g| r(doca_compress_cap_task_decompress_deflate_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_compress_cap_task_decompress_deflate_get_max_buf_list_len => |g| r(doca_compress_cap_task_decompress_deflate_get_max_buf_list_len(g.h(K::Devinfo), g.out()));
        doca_compress_task_decompress_deflate_set_conf => |g| r(doca_compress_task_decompress_deflate_set_conf(g.h(K::Compress), g.cb_task(), g.cb_task(), g.u32()));
        doca_compress_task_decompress_deflate_alloc_init => |g| r(doca_compress_task_decompress_deflate_alloc_init(g.h(K::Compress), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_compress_task_decompress_deflate_as_task => |g| r(doca_compress_task_decompress_deflate_as_task(g.h(K::Task)));
        doca_compress_task_decompress_deflate_set_src => |g| r(doca_compress_task_decompress_deflate_set_src(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_compress_task_decompress_deflate_get_src => |g| r(doca_compress_task_decompress_deflate_get_src(g.h(K::Task)));
        doca_compress_task_decompress_deflate_set_dst => |g| r(doca_compress_task_decompress_deflate_set_dst(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_compress_task_decompress_deflate_get_dst => |g| r(doca_compress_task_decompress_deflate_get_dst(g.h(K::Task)));
        #[lenient] doca_compress_task_decompress_deflate_get_crc_cs => |g| r(doca_compress_task_decompress_deflate_get_crc_cs(g.h(K::Task)));
        #[lenient] doca_compress_task_decompress_deflate_get_adler_cs => |g| r(doca_compress_task_decompress_deflate_get_adler_cs(g.h(K::Task)));
        doca_compress_cap_task_decompress_lz4_is_supported => |g| r(doca_compress_cap_task_decompress_lz4_is_supported(g.h(K::Devinfo)));
        doca_compress_cap_task_decompress_lz4_get_max_buf_size => |g| r(doca_compress_cap_task_decompress_lz4_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_compress_cap_task_decompress_lz4_get_max_buf_list_len => |g| r(doca_compress_cap_task_decompress_lz4_get_max_buf_list_len(g.h(K::Devinfo), g.out()));
        doca_compress_task_decompress_lz4_set_conf => |g| r(doca_compress_task_decompress_lz4_set_conf(g.h(K::Compress), g.cb_task(), g.cb_task(), g.u32()));
        doca_compress_task_decompress_lz4_alloc_init => |g| r(doca_compress_task_decompress_lz4_alloc_init(g.h(K::Compress), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_compress_task_decompress_lz4_as_task => |g| r(doca_compress_task_decompress_lz4_as_task(g.h(K::Task)));
        doca_compress_task_decompress_lz4_set_src => |g| r(doca_compress_task_decompress_lz4_set_src(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_compress_task_decompress_lz4_get_src => |g| r(doca_compress_task_decompress_lz4_get_src(g.h(K::Task)));
        doca_compress_task_decompress_lz4_set_dst => |g| r(doca_compress_task_decompress_lz4_set_dst(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_compress_task_decompress_lz4_get_dst => |g| r(doca_compress_task_decompress_lz4_get_dst(g.h(K::Task)));
        #[lenient] doca_compress_task_decompress_lz4_get_crc_cs => |g| r(doca_compress_task_decompress_lz4_get_crc_cs(g.h(K::Task)));
        #[lenient] doca_compress_task_decompress_lz4_get_adler_cs => |g| r(doca_compress_task_decompress_lz4_get_adler_cs(g.h(K::Task)));
        doca_compress_cap_task_decompress_lz4_stream_is_supported => |g| r(doca_compress_cap_task_decompress_lz4_stream_is_supported(g.h(K::Devinfo)));
        doca_compress_cap_task_decompress_lz4_stream_get_max_buf_size => |g| r(doca_compress_cap_task_decompress_lz4_stream_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_compress_cap_task_decompress_lz4_stream_get_max_buf_list_len => |g| r(doca_compress_cap_task_decompress_lz4_stream_get_max_buf_list_len(g.h(K::Devinfo), g.out()));
        doca_compress_task_decompress_lz4_stream_set_conf => |g| r(doca_compress_task_decompress_lz4_stream_set_conf(g.h(K::Compress), g.cb_task(), g.cb_task(), g.u32()));
        doca_compress_task_decompress_lz4_stream_alloc_init => |g| r(doca_compress_task_decompress_lz4_stream_alloc_init(g.h(K::Compress), g.u8(), g.u8(), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_compress_task_decompress_lz4_stream_set_has_block_checksum => |g| r(doca_compress_task_decompress_lz4_stream_set_has_block_checksum(g.h(K::Task), g.u8()));
        #[lenient] doca_compress_task_decompress_lz4_stream_get_has_block_checksum => |g| r(doca_compress_task_decompress_lz4_stream_get_has_block_checksum(g.h(K::Task)));
        doca_compress_task_decompress_lz4_stream_set_are_blocks_independent => |g| r(doca_compress_task_decompress_lz4_stream_set_are_blocks_independent(g.h(K::Task), g.u8()));
        #[lenient] doca_compress_task_decompress_lz4_stream_get_are_blocks_independent => |g| r(doca_compress_task_decompress_lz4_stream_get_are_blocks_independent(g.h(K::Task)));
        doca_compress_task_decompress_lz4_stream_as_task => |g| r(doca_compress_task_decompress_lz4_stream_as_task(g.h(K::Task)));
        doca_compress_task_decompress_lz4_stream_set_src => |g| r(doca_compress_task_decompress_lz4_stream_set_src(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_compress_task_decompress_lz4_stream_get_src => |g| r(doca_compress_task_decompress_lz4_stream_get_src(g.h(K::Task)));
        doca_compress_task_decompress_lz4_stream_set_dst => |g| r(doca_compress_task_decompress_lz4_stream_set_dst(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_compress_task_decompress_lz4_stream_get_dst => |g| r(doca_compress_task_decompress_lz4_stream_get_dst(g.h(K::Task)));
        #[lenient] doca_compress_task_decompress_lz4_stream_get_crc_cs => |g| r(doca_compress_task_decompress_lz4_stream_get_crc_cs(g.h(K::Task)));
        #[lenient] doca_compress_task_decompress_lz4_stream_get_xxh_cs => |g| r(doca_compress_task_decompress_lz4_stream_get_xxh_cs(g.h(K::Task)));
        doca_compress_cap_task_decompress_lz4_block_is_supported => |g| r(doca_compress_cap_task_decompress_lz4_block_is_supported(g.h(K::Devinfo)));
        doca_compress_cap_task_decompress_lz4_block_get_max_buf_size => |g| r(doca_compress_cap_task_decompress_lz4_block_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_compress_cap_task_decompress_lz4_block_get_max_buf_list_len => |g| r(doca_compress_cap_task_decompress_lz4_block_get_max_buf_list_len(g.h(K::Devinfo), g.out()));
        doca_compress_task_decompress_lz4_block_set_conf => |g| r(doca_compress_task_decompress_lz4_block_set_conf(g.h(K::Compress), g.cb_task(), g.cb_task(), g.u32()));
        doca_compress_task_decompress_lz4_block_alloc_init => |g| r(doca_compress_task_decompress_lz4_block_alloc_init(g.h(K::Compress), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_compress_task_decompress_lz4_block_as_task => |g| r(doca_compress_task_decompress_lz4_block_as_task(g.h(K::Task)));
        doca_compress_task_decompress_lz4_block_set_src => |g| r(doca_compress_task_decompress_lz4_block_set_src(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_compress_task_decompress_lz4_block_get_src => |g| r(doca_compress_task_decompress_lz4_block_get_src(g.h(K::Task)));
        doca_compress_task_decompress_lz4_block_set_dst => |g| r(doca_compress_task_decompress_lz4_block_set_dst(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_compress_task_decompress_lz4_block_get_dst => |g| r(doca_compress_task_decompress_lz4_block_get_dst(g.h(K::Task)));
        #[lenient] doca_compress_task_decompress_lz4_block_get_crc_cs => |g| r(doca_compress_task_decompress_lz4_block_get_crc_cs(g.h(K::Task)));
        #[lenient] doca_compress_task_decompress_lz4_block_get_xxh_cs => |g| r(doca_compress_task_decompress_lz4_block_get_xxh_cs(g.h(K::Task)));
        // doca_sha.h
        doca_sha_create => |g| r(doca_sha_create(g.h(K::Dev), g.outh(K::Sha)));
        doca_sha_destroy => |g| r(doca_sha_destroy(g.hn(K::Sha)));
        doca_sha_as_ctx => |g| r(doca_sha_as_ctx(g.h(K::Sha)));
        doca_sha_cap_task_hash_get_supported => |g| r(doca_sha_cap_task_hash_get_supported(g.h(K::Devinfo), g.sha_alg()));
        doca_sha_cap_task_partial_hash_get_supported => |g| r(doca_sha_cap_task_partial_hash_get_supported(g.h(K::Devinfo), g.sha_alg()));
        doca_sha_cap_get_max_list_buf_num_elem => |g| r(doca_sha_cap_get_max_list_buf_num_elem(g.h(K::Devinfo), g.out()));
        doca_sha_cap_get_max_src_buf_size => |g| r(doca_sha_cap_get_max_src_buf_size(g.h(K::Devinfo), g.out()));
        doca_sha_cap_get_max_src_buffer_size => |g| r(doca_sha_cap_get_max_src_buffer_size(g.h(K::Devinfo), g.out()));
        doca_sha_cap_get_min_dst_buf_size => |g| r(doca_sha_cap_get_min_dst_buf_size(g.h(K::Devinfo), g.sha_alg(), g.out()));
        doca_sha_cap_get_min_dst_buffer_size => |g| r(doca_sha_cap_get_min_dst_buffer_size(g.h(K::Devinfo), g.sha_alg(), g.out()));
        doca_sha_cap_get_partial_hash_block_size => |g| r(doca_sha_cap_get_partial_hash_block_size(g.h(K::Devinfo), g.sha_alg(), g.out()));
        doca_sha_task_hash_set_conf => |g| r(doca_sha_task_hash_set_conf(g.h(K::Sha), g.cb_task(), g.cb_task(), g.u8()));
        doca_sha_task_hash_alloc_init => |g| r(doca_sha_task_hash_alloc_init(g.h(K::Sha), g.sha_alg(), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_sha_task_hash_as_task => |g| r(doca_sha_task_hash_as_task(g.h(K::Task)));
        doca_sha_task_hash_set_src => |g| r(doca_sha_task_hash_set_src(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_sha_task_hash_get_src => |g| r(doca_sha_task_hash_get_src(g.h(K::Task)));
        doca_sha_task_hash_set_dst => |g| r(doca_sha_task_hash_set_dst(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_sha_task_hash_get_dst => |g| r(doca_sha_task_hash_get_dst(g.h(K::Task)));
        doca_sha_task_hash_set_algorithm => |g| r(doca_sha_task_hash_set_algorithm(g.h(K::Task), g.sha_alg()));
        #[lenient] doca_sha_task_hash_get_algorithm => |g| r(doca_sha_task_hash_get_algorithm(g.h(K::Task)));
        doca_sha_task_partial_hash_set_conf => |g| r(doca_sha_task_partial_hash_set_conf(g.h(K::Sha), g.cb_task(), g.cb_task(), g.u8()));
        doca_sha_task_partial_hash_alloc_init => |g| r(doca_sha_task_partial_hash_alloc_init(g.h(K::Sha), g.sha_alg(), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_sha_task_partial_hash_as_task => |g| r(doca_sha_task_partial_hash_as_task(g.h(K::Task)));
        doca_sha_task_partial_hash_reset => |g| r(doca_sha_task_partial_hash_reset(g.h(K::Task)));
        doca_sha_task_partial_hash_set_src => |g| r(doca_sha_task_partial_hash_set_src(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_sha_task_partial_hash_get_src => |g| r(doca_sha_task_partial_hash_get_src(g.h(K::Task)));
        doca_sha_task_partial_hash_set_dst => |g| r(doca_sha_task_partial_hash_set_dst(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_sha_task_partial_hash_get_dst => |g| r(doca_sha_task_partial_hash_get_dst(g.h(K::Task)));
        doca_sha_task_partial_hash_set_algorithm => |g| r(doca_sha_task_partial_hash_set_algorithm(g.h(K::Task), g.sha_alg()));
        #[lenient] doca_sha_task_partial_hash_get_algorithm => |g| r(doca_sha_task_partial_hash_get_algorithm(g.h(K::Task)));
        // doca_erasure_coding.h
        doca_ec_create => |g| r(doca_ec_create(g.h(K::Dev), g.outh(K::Ec)));
        doca_ec_destroy => |g| r(doca_ec_destroy(g.hn(K::Ec)));
        doca_ec_as_ctx => |g| r(doca_ec_as_ctx(g.h(K::Ec)));
        doca_ec_cap_get_max_block_size => |g| r(doca_ec_cap_get_max_block_size(g.h(K::Devinfo), g.out()));
        doca_ec_cap_get_max_buf_list_len => |g| r(doca_ec_cap_get_max_buf_list_len(g.h(K::Devinfo), g.out()));
        doca_ec_matrix_create => |g| r(doca_ec_matrix_create(g.h(K::Ec), g.ec_type(), g.ec_count(), g.ec_count(), g.outh(K::EcMatrix)));
        doca_ec_matrix_create_from_raw => |g| {
            let (k, m) = (g.ec_count(), g.ec_count());
            let data = if g.chance(10) { g.bad("NULL data"); std::ptr::null_mut() } else { g.region };
            r(doca_ec_matrix_create_from_raw(g.h(K::Ec), data, k, m, g.outh(K::EcMatrix)))
        };
        doca_ec_matrix_create_update => |g| {
            let (idx, n) = g.ec_indices();
            r(doca_ec_matrix_create_update(g.h(K::Ec), g.h(K::EcMatrix), idx, n, g.outh(K::EcMatrix)))
        };
        doca_ec_matrix_create_recover => |g| {
            let (idx, n) = g.ec_indices();
            r(doca_ec_matrix_create_recover(g.h(K::Ec), g.h(K::EcMatrix), idx, n, g.outh(K::EcMatrix)))
        };
        doca_ec_matrix_destroy => |g| r(doca_ec_matrix_destroy(g.hn(K::EcMatrix)));
        doca_ec_cap_task_create_is_supported => |g| r(doca_ec_cap_task_create_is_supported(g.h(K::Devinfo)));
        doca_ec_task_create_set_conf => |g| r(doca_ec_task_create_set_conf(g.h(K::Ec), g.cb_task(), g.cb_task(), g.u32()));
        doca_ec_task_create_allocate_init => |g| r(doca_ec_task_create_allocate_init(g.h(K::Ec), g.hopt(K::EcMatrix), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_ec_task_create_as_task => |g| r(doca_ec_task_create_as_task(g.h(K::Task)));
        #[lenient] doca_ec_task_create_set_coding_matrix => |g| r(doca_ec_task_create_set_coding_matrix(g.h(K::Task), g.hopt(K::EcMatrix)));
        #[lenient] doca_ec_task_create_get_coding_matrix => |g| r(doca_ec_task_create_get_coding_matrix(g.h(K::Task)));
        #[lenient] doca_ec_task_create_set_original_data_blocks => |g| r(doca_ec_task_create_set_original_data_blocks(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_ec_task_create_get_original_data_blocks => |g| r(doca_ec_task_create_get_original_data_blocks(g.h(K::Task)));
        #[lenient] doca_ec_task_create_set_rdnc_blocks => |g| r(doca_ec_task_create_set_rdnc_blocks(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_ec_task_create_get_rdnc_blocks => |g| r(doca_ec_task_create_get_rdnc_blocks(g.h(K::Task)));
        doca_ec_cap_task_update_is_supported => |g| r(doca_ec_cap_task_update_is_supported(g.h(K::Devinfo)));
        doca_ec_task_update_set_conf => |g| r(doca_ec_task_update_set_conf(g.h(K::Ec), g.cb_task(), g.cb_task(), g.u32()));
        doca_ec_task_update_allocate_init => |g| r(doca_ec_task_update_allocate_init(g.h(K::Ec), g.hopt(K::EcMatrix), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_ec_task_update_as_task => |g| r(doca_ec_task_update_as_task(g.h(K::Task)));
        #[lenient] doca_ec_task_update_set_update_matrix => |g| r(doca_ec_task_update_set_update_matrix(g.h(K::Task), g.hopt(K::EcMatrix)));
        #[lenient] doca_ec_task_update_get_update_matrix => |g| r(doca_ec_task_update_get_update_matrix(g.h(K::Task)));
        #[lenient] doca_ec_task_update_set_original_updated_and_rdnc_blocks => |g| r(doca_ec_task_update_set_original_updated_and_rdnc_blocks(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_ec_task_update_get_original_updated_and_rdnc_blocks => |g| r(doca_ec_task_update_get_original_updated_and_rdnc_blocks(g.h(K::Task)));
        #[lenient] doca_ec_task_update_set_updated_rdnc_blocks => |g| r(doca_ec_task_update_set_updated_rdnc_blocks(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_ec_task_update_get_updated_rdnc_blocks => |g| r(doca_ec_task_update_get_updated_rdnc_blocks(g.h(K::Task)));
        doca_ec_cap_task_recover_is_supported => |g| r(doca_ec_cap_task_recover_is_supported(g.h(K::Devinfo)));
        doca_ec_task_recover_set_conf => |g| r(doca_ec_task_recover_set_conf(g.h(K::Ec), g.cb_task(), g.cb_task(), g.u32()));
        doca_ec_task_recover_allocate_init => |g| r(doca_ec_task_recover_allocate_init(g.h(K::Ec), g.hopt(K::EcMatrix), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_ec_task_recover_as_task => |g| r(doca_ec_task_recover_as_task(g.h(K::Task)));
        #[lenient] doca_ec_task_recover_set_recover_matrix => |g| r(doca_ec_task_recover_set_recover_matrix(g.h(K::Task), g.hopt(K::EcMatrix)));
        #[lenient] doca_ec_task_recover_get_recover_matrix => |g| r(doca_ec_task_recover_get_recover_matrix(g.h(K::Task)));
        #[lenient] doca_ec_task_recover_set_available_blocks => |g| r(doca_ec_task_recover_set_available_blocks(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_ec_task_recover_get_available_blocks => |g| r(doca_ec_task_recover_get_available_blocks(g.h(K::Task)));
        #[lenient] doca_ec_task_recover_set_recovered_data_blocks => |g| r(doca_ec_task_recover_set_recovered_data_blocks(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_ec_task_recover_get_recovered_data => |g| r(doca_ec_task_recover_get_recovered_data(g.h(K::Task)));
        doca_ec_cap_task_galois_mul_is_supported => |g| r(doca_ec_cap_task_galois_mul_is_supported(g.h(K::Devinfo)));
        doca_ec_task_galois_mul_set_conf => |g| r(doca_ec_task_galois_mul_set_conf(g.h(K::Ec), g.cb_task(), g.cb_task(), g.u32()));
        doca_ec_task_galois_mul_allocate_init => |g| r(doca_ec_task_galois_mul_allocate_init(g.h(K::Ec), g.hopt(K::EcMatrix), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_ec_task_galois_mul_as_task => |g| r(doca_ec_task_galois_mul_as_task(g.h(K::Task)));
        #[lenient] doca_ec_task_galois_mul_set_coding_matrix => |g| r(doca_ec_task_galois_mul_set_coding_matrix(g.h(K::Task), g.hopt(K::EcMatrix)));
        #[lenient] doca_ec_task_galois_mul_get_coding_matrix => |g| r(doca_ec_task_galois_mul_get_coding_matrix(g.h(K::Task)));
        #[lenient] doca_ec_task_galois_mul_set_src_buf => |g| r(doca_ec_task_galois_mul_set_src_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_ec_task_galois_mul_get_src_buf => |g| r(doca_ec_task_galois_mul_get_src_buf(g.h(K::Task)));
        #[lenient] doca_ec_task_galois_mul_set_dst_buf => |g| r(doca_ec_task_galois_mul_set_dst_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_ec_task_galois_mul_get_dst_buf => |g| r(doca_ec_task_galois_mul_get_dst_buf(g.h(K::Task)));
        doca_sha_task_partial_hash_set_is_final_buf => |g| r(doca_sha_task_partial_hash_set_is_final_buf(g.h(K::Task)));
        doca_sha_task_partial_hash_set_is_final_buffer => |g| r(doca_sha_task_partial_hash_set_is_final_buffer(g.h(K::Task)));
        #[lenient] doca_sha_task_partial_hash_get_is_final => |g| r(doca_sha_task_partial_hash_get_is_final(g.h(K::Task)));
        #[lenient] doca_sha_task_partial_hash_get_has_result => |g| r(doca_sha_task_partial_hash_get_has_result(g.h(K::Task)));
        // doca_aes_gcm.h
        doca_aes_gcm_create => |g| r(doca_aes_gcm_create(g.h(K::Dev), g.outh(K::AesGcm)));
        doca_aes_gcm_destroy => |g| r(doca_aes_gcm_destroy(g.hn(K::AesGcm)));
        doca_aes_gcm_as_ctx => |g| r(doca_aes_gcm_as_ctx(g.h(K::AesGcm)));
        doca_aes_gcm_cap_get_max_num_tasks => |g| r(doca_aes_gcm_cap_get_max_num_tasks(g.h(K::AesGcm), g.out()));
        // the raw key: NULL or this program's region (64 KiB: any key length fits)
        doca_aes_gcm_key_create => |g| { let m: *const c_void = if g.chance(12) { g.bad("NULL raw key"); std::ptr::null() } else { g.region as *const c_void }; r(doca_aes_gcm_key_create(g.h(K::AesGcm), m, g.aes_key_type(), g.outh(K::AesGcmKey))) };
        doca_aes_gcm_key_destroy => |g| r(doca_aes_gcm_key_destroy(g.hn(K::AesGcmKey)));
        doca_aes_gcm_cap_task_encrypt_is_supported => |g| r(doca_aes_gcm_cap_task_encrypt_is_supported(g.h(K::Devinfo)));
        doca_aes_gcm_cap_task_encrypt_get_max_iv_len => |g| r(doca_aes_gcm_cap_task_encrypt_get_max_iv_len(g.h(K::Devinfo), g.out()));
        doca_aes_gcm_cap_task_encrypt_get_max_iv_length => |g| r(doca_aes_gcm_cap_task_encrypt_get_max_iv_length(g.h(K::Devinfo), g.out()));
        doca_aes_gcm_cap_task_encrypt_is_tag_96_supported => |g| r(doca_aes_gcm_cap_task_encrypt_is_tag_96_supported(g.h(K::Devinfo)));
        doca_aes_gcm_cap_task_encrypt_is_tag_128_supported => |g| r(doca_aes_gcm_cap_task_encrypt_is_tag_128_supported(g.h(K::Devinfo)));
        doca_aes_gcm_cap_task_encrypt_is_key_type_supported => |g| r(doca_aes_gcm_cap_task_encrypt_is_key_type_supported(g.h(K::Devinfo), g.aes_key_type()));
        doca_aes_gcm_cap_task_encrypt_get_max_buf_size => |g| r(doca_aes_gcm_cap_task_encrypt_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_aes_gcm_cap_task_encrypt_get_max_list_buf_num_elem => |g| r(doca_aes_gcm_cap_task_encrypt_get_max_list_buf_num_elem(g.h(K::Devinfo), g.out()));
        doca_aes_gcm_task_encrypt_set_conf => |g| r(doca_aes_gcm_task_encrypt_set_conf(g.h(K::AesGcm), g.cb_task(), g.cb_task(), g.u32()));
        // the IV: NULL or this program's region, with a length that may be beyond 12 (refused before reading)
        doca_aes_gcm_task_encrypt_alloc_init => |g| { let (iv, n) = g.msg32(); r(doca_aes_gcm_task_encrypt_alloc_init(g.h(K::AesGcm), g.hopt(K::Buf), g.hopt(K::Buf), g.hopt(K::AesGcmKey), iv.cast(), n, g.u32(), g.u32(), g.data(), g.outh(K::Task))) };
        doca_aes_gcm_task_encrypt_as_task => |g| r(doca_aes_gcm_task_encrypt_as_task(g.h(K::Task)));
        #[lenient] doca_aes_gcm_task_encrypt_set_src => |g| r(doca_aes_gcm_task_encrypt_set_src(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_aes_gcm_task_encrypt_get_src => |g| r(doca_aes_gcm_task_encrypt_get_src(g.h(K::Task)));
        #[lenient] doca_aes_gcm_task_encrypt_set_dst => |g| r(doca_aes_gcm_task_encrypt_set_dst(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_aes_gcm_task_encrypt_get_dst => |g| r(doca_aes_gcm_task_encrypt_get_dst(g.h(K::Task)));
        #[lenient] doca_aes_gcm_task_encrypt_set_key => |g| r(doca_aes_gcm_task_encrypt_set_key(g.h(K::Task), g.hopt(K::AesGcmKey)));
        #[lenient] doca_aes_gcm_task_encrypt_get_key => |g| r(doca_aes_gcm_task_encrypt_get_key(g.h(K::Task)));
        #[lenient] doca_aes_gcm_task_encrypt_set_iv => |g| { let (iv, n) = g.msg32(); r(doca_aes_gcm_task_encrypt_set_iv(g.h(K::Task), iv.cast(), n)) };
        #[lenient] doca_aes_gcm_task_encrypt_get_iv => |g| r(doca_aes_gcm_task_encrypt_get_iv(g.h(K::Task), if g.chance(20) { std::ptr::null_mut() } else { g.out() }));
        #[lenient] doca_aes_gcm_task_encrypt_set_tag_size => |g| r(doca_aes_gcm_task_encrypt_set_tag_size(g.h(K::Task), g.u32()));
        #[lenient] doca_aes_gcm_task_encrypt_get_tag_size => |g| r(doca_aes_gcm_task_encrypt_get_tag_size(g.h(K::Task)));
        #[lenient] doca_aes_gcm_task_encrypt_set_aad_size => |g| r(doca_aes_gcm_task_encrypt_set_aad_size(g.h(K::Task), g.u32()));
        #[lenient] doca_aes_gcm_task_encrypt_get_aad_size => |g| r(doca_aes_gcm_task_encrypt_get_aad_size(g.h(K::Task)));
        doca_aes_gcm_cap_task_decrypt_is_supported => |g| r(doca_aes_gcm_cap_task_decrypt_is_supported(g.h(K::Devinfo)));
        doca_aes_gcm_cap_task_decrypt_get_max_iv_len => |g| r(doca_aes_gcm_cap_task_decrypt_get_max_iv_len(g.h(K::Devinfo), g.out()));
        doca_aes_gcm_cap_task_decrypt_get_max_iv_length => |g| r(doca_aes_gcm_cap_task_decrypt_get_max_iv_length(g.h(K::Devinfo), g.out()));
        doca_aes_gcm_cap_task_decrypt_is_tag_96_supported => |g| r(doca_aes_gcm_cap_task_decrypt_is_tag_96_supported(g.h(K::Devinfo)));
        doca_aes_gcm_cap_task_decrypt_is_tag_128_supported => |g| r(doca_aes_gcm_cap_task_decrypt_is_tag_128_supported(g.h(K::Devinfo)));
        doca_aes_gcm_cap_task_decrypt_is_key_type_supported => |g| r(doca_aes_gcm_cap_task_decrypt_is_key_type_supported(g.h(K::Devinfo), g.aes_key_type()));
        doca_aes_gcm_cap_task_decrypt_get_max_buf_size => |g| r(doca_aes_gcm_cap_task_decrypt_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_aes_gcm_cap_task_decrypt_get_max_list_buf_num_elem => |g| r(doca_aes_gcm_cap_task_decrypt_get_max_list_buf_num_elem(g.h(K::Devinfo), g.out()));
        doca_aes_gcm_task_decrypt_set_conf => |g| r(doca_aes_gcm_task_decrypt_set_conf(g.h(K::AesGcm), g.cb_task(), g.cb_task(), g.u32()));
        // the IV: NULL or this program's region, with a length that may be beyond 12 (refused before reading)
        doca_aes_gcm_task_decrypt_alloc_init => |g| { let (iv, n) = g.msg32(); r(doca_aes_gcm_task_decrypt_alloc_init(g.h(K::AesGcm), g.hopt(K::Buf), g.hopt(K::Buf), g.hopt(K::AesGcmKey), iv.cast(), n, g.u32(), g.u32(), g.data(), g.outh(K::Task))) };
        doca_aes_gcm_task_decrypt_as_task => |g| r(doca_aes_gcm_task_decrypt_as_task(g.h(K::Task)));
        #[lenient] doca_aes_gcm_task_decrypt_set_src => |g| r(doca_aes_gcm_task_decrypt_set_src(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_aes_gcm_task_decrypt_get_src => |g| r(doca_aes_gcm_task_decrypt_get_src(g.h(K::Task)));
        #[lenient] doca_aes_gcm_task_decrypt_set_dst => |g| r(doca_aes_gcm_task_decrypt_set_dst(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_aes_gcm_task_decrypt_get_dst => |g| r(doca_aes_gcm_task_decrypt_get_dst(g.h(K::Task)));
        #[lenient] doca_aes_gcm_task_decrypt_set_key => |g| r(doca_aes_gcm_task_decrypt_set_key(g.h(K::Task), g.hopt(K::AesGcmKey)));
        #[lenient] doca_aes_gcm_task_decrypt_get_key => |g| r(doca_aes_gcm_task_decrypt_get_key(g.h(K::Task)));
        #[lenient] doca_aes_gcm_task_decrypt_set_iv => |g| { let (iv, n) = g.msg32(); r(doca_aes_gcm_task_decrypt_set_iv(g.h(K::Task), iv.cast(), n)) };
        #[lenient] doca_aes_gcm_task_decrypt_get_iv => |g| r(doca_aes_gcm_task_decrypt_get_iv(g.h(K::Task), if g.chance(20) { std::ptr::null_mut() } else { g.out() }));
        #[lenient] doca_aes_gcm_task_decrypt_set_tag_size => |g| r(doca_aes_gcm_task_decrypt_set_tag_size(g.h(K::Task), g.u32()));
        #[lenient] doca_aes_gcm_task_decrypt_get_tag_size => |g| r(doca_aes_gcm_task_decrypt_get_tag_size(g.h(K::Task)));
        #[lenient] doca_aes_gcm_task_decrypt_set_aad_size => |g| r(doca_aes_gcm_task_decrypt_set_aad_size(g.h(K::Task), g.u32()));
        #[lenient] doca_aes_gcm_task_decrypt_get_aad_size => |g| r(doca_aes_gcm_task_decrypt_get_aad_size(g.h(K::Task)));
        // doca_rdma.h (level 2.7)
        doca_rdma_create => |g| r(doca_rdma_create(g.h(K::Dev), g.outh(K::Rdma)));
        doca_rdma_destroy => |g| r(doca_rdma_destroy(g.hn(K::Rdma)));
        doca_rdma_as_ctx => |g| r(doca_rdma_as_ctx(g.h(K::Rdma)));
        doca_rdma_export => |g| r(doca_rdma_export(g.h(K::Rdma), g.out(), g.out(), g.outh(K::RdmaConn)));
        // the peer's descriptor: NULL or bytes of this program's region (not a descriptor),
        // with a length that may be beyond any descriptor (refused before reading)
        doca_rdma_connect => |g| {
            let (m, n) = g.msg();
            g.bad("not a descriptor");
            r(doca_rdma_connect(g.h(K::Rdma), m, n, g.h(K::RdmaConn)))
        };
        doca_rdma_connection_set_user_data => |g| r(doca_rdma_connection_set_user_data(g.h(K::RdmaConn), g.data()));
        doca_rdma_connection_get_user_data => |g| r(doca_rdma_connection_get_user_data(g.h(K::RdmaConn), g.out()));
        doca_rdma_connection_get_id => |g| r(doca_rdma_connection_get_id(g.h(K::RdmaConn), g.out()));
        // the connection manager: not emulated, every call refuses (NOT_SUPPORTED)
        doca_rdma_addr_create => |g| r(doca_rdma_addr_create(g.rdma_addr_type(), g.rdma_address(), g.u16(), g.out()));
        doca_rdma_addr_destroy => |g| r(doca_rdma_addr_destroy(g.rdma_addr()));
        doca_rdma_start_listen_to_port => |g| r(doca_rdma_start_listen_to_port(g.h(K::Rdma), g.u16()));
        doca_rdma_stop_listen_to_port => |g| r(doca_rdma_stop_listen_to_port(g.h(K::Rdma), g.u16()));
        doca_rdma_connect_to_addr => |g| r(doca_rdma_connect_to_addr(g.h(K::Rdma), g.rdma_addr(), g.data()));
        doca_rdma_connection_accept => |g| {
            let p: *mut c_void = if g.chance(30) { std::ptr::null_mut() } else { g.region.cast() };
            r(doca_rdma_connection_accept(g.h(K::RdmaConn), p, g.u8()))
        };
        doca_rdma_connection_reject => |g| r(doca_rdma_connection_reject(g.h(K::RdmaConn)));
        doca_rdma_connection_disconnect => |g| r(doca_rdma_connection_disconnect(g.h(K::RdmaConn)));
        doca_rdma_set_connection_state_callbacks => |g| {
            r(doca_rdma_set_connection_state_callbacks(g.h(K::Rdma), g.cb_rdma_request(), g.cb_rdma_conn(), g.cb_rdma_conn(), g.cb_rdma_conn()))
        };
        doca_rdma_cap_get_max_recv_queue_size => |g| r(doca_rdma_cap_get_max_recv_queue_size(g.h(K::Devinfo), g.out()));
        doca_rdma_cap_get_max_send_queue_size => |g| r(doca_rdma_cap_get_max_send_queue_size(g.h(K::Devinfo), g.out()));
        doca_rdma_cap_get_max_message_size => |g| r(doca_rdma_cap_get_max_message_size(g.h(K::Devinfo), g.out()));
        doca_rdma_cap_get_gid_table_size => |g| r(doca_rdma_cap_get_gid_table_size(g.h(K::Devinfo), g.out()));
        doca_rdma_cap_transport_type_is_supported => |g| r(doca_rdma_cap_transport_type_is_supported(g.h(K::Devinfo), g.u32()));
        doca_rdma_set_permissions => |g| r(doca_rdma_set_permissions(g.h(K::Rdma), g.u32()));
        doca_rdma_get_permissions => |g| r(doca_rdma_get_permissions(g.h(K::Rdma), g.out()));
        doca_rdma_set_gid_index => |g| r(doca_rdma_set_gid_index(g.h(K::Rdma), g.u32()));
        doca_rdma_get_gid_index => |g| r(doca_rdma_get_gid_index(g.h(K::Rdma), g.out()));
        doca_rdma_set_max_num_connections => |g| r(doca_rdma_set_max_num_connections(g.h(K::Rdma), g.u16()));
        doca_rdma_get_max_num_connections => |g| r(doca_rdma_get_max_num_connections(g.h(K::Rdma), g.out()));
        doca_rdma_set_transport_type => |g| r(doca_rdma_set_transport_type(g.h(K::Rdma), g.u32()));
        doca_rdma_get_transport_type => |g| r(doca_rdma_get_transport_type(g.h(K::Rdma), g.out()));
        doca_rdma_set_send_queue_size => |g| r(doca_rdma_set_send_queue_size(g.h(K::Rdma), g.u32()));
        doca_rdma_get_send_queue_size => |g| r(doca_rdma_get_send_queue_size(g.h(K::Rdma), g.out()));
        doca_rdma_set_recv_queue_size => |g| r(doca_rdma_set_recv_queue_size(g.h(K::Rdma), g.u32()));
        doca_rdma_get_recv_queue_size => |g| r(doca_rdma_get_recv_queue_size(g.h(K::Rdma), g.out()));
        doca_rdma_set_sl => |g| r(doca_rdma_set_sl(g.h(K::Rdma), g.u32()));
        doca_rdma_get_sl => |g| r(doca_rdma_get_sl(g.h(K::Rdma), g.out()));
        doca_rdma_get_dpa_handle => |g| r(doca_rdma_get_dpa_handle(g.h(K::Rdma), g.out()));
        doca_rdma_get_dpa_handle_v26 => |g| r(doca_rdma_get_dpa_handle_v26(g.h(K::Rdma), g.out()));
        doca_rdma_get_gpu_handle => |g| r(doca_rdma_get_gpu_handle(g.h(K::Rdma), g.out()));
        doca_rdma_set_rnr_retry_count => |g| r(doca_rdma_set_rnr_retry_count(g.h(K::Rdma), g.u8()));
        doca_rdma_get_rnr_retry_count => |g| r(doca_rdma_get_rnr_retry_count(g.h(K::Rdma), g.out()));
        doca_rdma_set_grh_enabled => |g| r(doca_rdma_set_grh_enabled(g.h(K::Rdma), g.u8()));
        doca_rdma_get_grh_enabled => |g| r(doca_rdma_get_grh_enabled(g.h(K::Rdma), g.out()));
        doca_rdma_set_connection_request_timeout => |g| r(doca_rdma_set_connection_request_timeout(g.h(K::Rdma), g.u16()));
        doca_rdma_get_connection_request_timeout => |g| r(doca_rdma_get_connection_request_timeout(g.h(K::Rdma), g.out()));
        doca_rdma_cap_task_send_is_supported => |g| r(doca_rdma_cap_task_send_is_supported(g.h(K::Devinfo)));
        doca_rdma_task_send_set_conf => |g| r(doca_rdma_task_send_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_send_allocate_init => |g| r(doca_rdma_task_send_allocate_init(g.h(K::Rdma), g.h(K::RdmaConn), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_send_as_task => |g| r(doca_rdma_task_send_as_task(g.h(K::Task)));
        // (lenient: on a task freed by this thread lately, the buffer it held, as NVIDIA's
        // samples read it after doca_task_free: capi/src/task.rs freed_bufs)
        #[lenient] doca_rdma_task_send_get_src_buf => |g| r(doca_rdma_task_send_get_src_buf(g.h(K::Task)));
        doca_rdma_cap_task_send_imm_is_supported => |g| r(doca_rdma_cap_task_send_imm_is_supported(g.h(K::Devinfo)));
        doca_rdma_task_send_imm_set_conf => |g| r(doca_rdma_task_send_imm_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_send_imm_allocate_init => |g| r(doca_rdma_task_send_imm_allocate_init(g.h(K::Rdma), g.h(K::RdmaConn), g.hopt(K::Buf), g.u32(), g.data(), g.outh(K::Task)));
        doca_rdma_task_send_imm_as_task => |g| r(doca_rdma_task_send_imm_as_task(g.h(K::Task)));
        doca_rdma_cap_task_receive_is_supported => |g| r(doca_rdma_cap_task_receive_is_supported(g.h(K::Devinfo)));
        doca_rdma_task_receive_set_conf => |g| r(doca_rdma_task_receive_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_receive_allocate_init => |g| r(doca_rdma_task_receive_allocate_init(g.h(K::Rdma), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_receive_as_task => |g| r(doca_rdma_task_receive_as_task(g.h(K::Task)));
        #[lenient] doca_rdma_task_receive_get_dst_buf => |g| r(doca_rdma_task_receive_get_dst_buf(g.h(K::Task)));
        doca_rdma_task_receive_get_result_opcode => |g| r(doca_rdma_task_receive_get_result_opcode(g.h(K::Task)));
        doca_rdma_task_receive_get_result_len => |g| r(doca_rdma_task_receive_get_result_len(g.h(K::Task)));
        doca_rdma_task_receive_get_result_immediate_data => |g| r(doca_rdma_task_receive_get_result_immediate_data(g.h(K::Task)));
        doca_rdma_cap_task_read_is_supported => |g| r(doca_rdma_cap_task_read_is_supported(g.h(K::Devinfo)));
        doca_rdma_task_read_set_conf => |g| r(doca_rdma_task_read_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_read_allocate_init => |g| r(doca_rdma_task_read_allocate_init(g.h(K::Rdma), g.h(K::RdmaConn), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_read_as_task => |g| r(doca_rdma_task_read_as_task(g.h(K::Task)));
        doca_rdma_task_read_get_result_len => |g| r(doca_rdma_task_read_get_result_len(g.h(K::Task)));
        doca_rdma_cap_task_write_is_supported => |g| r(doca_rdma_cap_task_write_is_supported(g.h(K::Devinfo)));
        doca_rdma_task_write_set_conf => |g| r(doca_rdma_task_write_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_write_allocate_init => |g| r(doca_rdma_task_write_allocate_init(g.h(K::Rdma), g.h(K::RdmaConn), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_write_as_task => |g| r(doca_rdma_task_write_as_task(g.h(K::Task)));
        doca_rdma_cap_task_write_imm_is_supported => |g| r(doca_rdma_cap_task_write_imm_is_supported(g.h(K::Devinfo)));
        doca_rdma_task_write_imm_set_conf => |g| r(doca_rdma_task_write_imm_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_write_imm_allocate_init => |g| r(doca_rdma_task_write_imm_allocate_init(g.h(K::Rdma), g.h(K::RdmaConn), g.hopt(K::Buf), g.hopt(K::Buf), g.u32(), g.data(), g.outh(K::Task)));
        doca_rdma_task_write_imm_as_task => |g| r(doca_rdma_task_write_imm_as_task(g.h(K::Task)));
        doca_rdma_cap_task_atomic_cmp_swp_is_supported => |g| r(doca_rdma_cap_task_atomic_cmp_swp_is_supported(g.h(K::Devinfo)));
        doca_rdma_task_atomic_cmp_swp_set_conf => |g| r(doca_rdma_task_atomic_cmp_swp_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_atomic_cmp_swp_allocate_init => |g| r(doca_rdma_task_atomic_cmp_swp_allocate_init(g.h(K::Rdma), g.h(K::RdmaConn), g.hopt(K::Buf), g.hopt(K::Buf), g.u64(), g.u64(), g.data(), g.outh(K::Task)));
        doca_rdma_task_atomic_cmp_swp_as_task => |g| r(doca_rdma_task_atomic_cmp_swp_as_task(g.h(K::Task)));
        doca_rdma_cap_task_atomic_fetch_add_is_supported => |g| r(doca_rdma_cap_task_atomic_fetch_add_is_supported(g.h(K::Devinfo)));
        doca_rdma_task_atomic_fetch_add_set_conf => |g| r(doca_rdma_task_atomic_fetch_add_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_atomic_fetch_add_allocate_init => |g| r(doca_rdma_task_atomic_fetch_add_allocate_init(g.h(K::Rdma), g.h(K::RdmaConn), g.hopt(K::Buf), g.hopt(K::Buf), g.u64(), g.data(), g.outh(K::Task)));
        doca_rdma_task_atomic_fetch_add_as_task => |g| r(doca_rdma_task_atomic_fetch_add_as_task(g.h(K::Task)));
        // doca_rdma.h: the task accessors (2.6 and 3.x share them)
        #[lenient] doca_rdma_task_send_set_src_buf => |g| r(doca_rdma_task_send_set_src_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_send_imm_set_src_buf => |g| r(doca_rdma_task_send_imm_set_src_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_send_imm_get_src_buf => |g| r(doca_rdma_task_send_imm_get_src_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_send_get_rdma_connection => |g| r(doca_rdma_task_send_get_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_send_set_rdma_connection => |g| r(doca_rdma_task_send_set_rdma_connection(g.h(K::Task), g.h(K::RdmaConn)));
        #[lenient] doca_rdma_task_send_imm_get_rdma_connection => |g| r(doca_rdma_task_send_imm_get_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_send_imm_set_rdma_connection => |g| r(doca_rdma_task_send_imm_set_rdma_connection(g.h(K::Task), g.h(K::RdmaConn)));
        #[lenient] doca_rdma_task_read_get_rdma_connection => |g| r(doca_rdma_task_read_get_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_read_set_rdma_connection => |g| r(doca_rdma_task_read_set_rdma_connection(g.h(K::Task), g.h(K::RdmaConn)));
        #[lenient] doca_rdma_task_write_get_rdma_connection => |g| r(doca_rdma_task_write_get_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_write_set_rdma_connection => |g| r(doca_rdma_task_write_set_rdma_connection(g.h(K::Task), g.h(K::RdmaConn)));
        #[lenient] doca_rdma_task_write_imm_get_rdma_connection => |g| r(doca_rdma_task_write_imm_get_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_write_imm_set_rdma_connection => |g| r(doca_rdma_task_write_imm_set_rdma_connection(g.h(K::Task), g.h(K::RdmaConn)));
        #[lenient] doca_rdma_task_atomic_cmp_swp_get_rdma_connection => |g| r(doca_rdma_task_atomic_cmp_swp_get_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_atomic_cmp_swp_set_rdma_connection => |g| r(doca_rdma_task_atomic_cmp_swp_set_rdma_connection(g.h(K::Task), g.h(K::RdmaConn)));
        #[lenient] doca_rdma_task_atomic_fetch_add_get_rdma_connection => |g| r(doca_rdma_task_atomic_fetch_add_get_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_atomic_fetch_add_set_rdma_connection => |g| r(doca_rdma_task_atomic_fetch_add_set_rdma_connection(g.h(K::Task), g.h(K::RdmaConn)));
        #[lenient] doca_rdma_task_remote_net_sync_event_get_get_rdma_connection => |g| r(doca_rdma_task_remote_net_sync_event_get_get_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_get_set_rdma_connection => |g| r(doca_rdma_task_remote_net_sync_event_get_set_rdma_connection(g.h(K::Task), g.h(K::RdmaConn)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_set_get_rdma_connection => |g| r(doca_rdma_task_remote_net_sync_event_notify_set_get_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_set_set_rdma_connection => |g| r(doca_rdma_task_remote_net_sync_event_notify_set_set_rdma_connection(g.h(K::Task), g.h(K::RdmaConn)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_add_get_rdma_connection => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_get_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_add_set_rdma_connection => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_set_rdma_connection(g.h(K::Task), g.h(K::RdmaConn)));
        #[lenient] doca_rdma_task_send_imm_set_immediate_data => |g| r(doca_rdma_task_send_imm_set_immediate_data(g.h(K::Task), g.u32()));
        #[lenient] doca_rdma_task_send_imm_get_immediate_data => |g| r(doca_rdma_task_send_imm_get_immediate_data(g.h(K::Task)));
        #[lenient] doca_rdma_task_receive_set_dst_buf => |g| r(doca_rdma_task_receive_set_dst_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_receive_get_result_rdma_connection => |g| r(doca_rdma_task_receive_get_result_rdma_connection(g.h(K::Task)));
        #[lenient] doca_rdma_task_read_set_src_buf => |g| r(doca_rdma_task_read_set_src_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_read_get_src_buf => |g| r(doca_rdma_task_read_get_src_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_read_set_dst_buf => |g| r(doca_rdma_task_read_set_dst_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_read_get_dst_buf => |g| r(doca_rdma_task_read_get_dst_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_write_set_src_buf => |g| r(doca_rdma_task_write_set_src_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_write_get_src_buf => |g| r(doca_rdma_task_write_get_src_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_write_set_dst_buf => |g| r(doca_rdma_task_write_set_dst_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_write_get_dst_buf => |g| r(doca_rdma_task_write_get_dst_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_write_imm_set_src_buf => |g| r(doca_rdma_task_write_imm_set_src_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_write_imm_get_src_buf => |g| r(doca_rdma_task_write_imm_get_src_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_write_imm_set_dst_buf => |g| r(doca_rdma_task_write_imm_set_dst_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_write_imm_get_dst_buf => |g| r(doca_rdma_task_write_imm_get_dst_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_write_imm_set_immediate_data => |g| r(doca_rdma_task_write_imm_set_immediate_data(g.h(K::Task), g.u32()));
        #[lenient] doca_rdma_task_write_imm_get_immediate_data => |g| r(doca_rdma_task_write_imm_get_immediate_data(g.h(K::Task)));
        #[lenient] doca_rdma_task_atomic_cmp_swp_set_dst_buf => |g| r(doca_rdma_task_atomic_cmp_swp_set_dst_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_atomic_cmp_swp_get_dst_buf => |g| r(doca_rdma_task_atomic_cmp_swp_get_dst_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_atomic_cmp_swp_set_result_buf => |g| r(doca_rdma_task_atomic_cmp_swp_set_result_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_atomic_cmp_swp_get_result_buf => |g| r(doca_rdma_task_atomic_cmp_swp_get_result_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_atomic_cmp_swp_set_cmp_data => |g| r(doca_rdma_task_atomic_cmp_swp_set_cmp_data(g.h(K::Task), g.u64()));
        #[lenient] doca_rdma_task_atomic_cmp_swp_get_cmp_data => |g| r(doca_rdma_task_atomic_cmp_swp_get_cmp_data(g.h(K::Task)));
        #[lenient] doca_rdma_task_atomic_cmp_swp_set_swap_data => |g| r(doca_rdma_task_atomic_cmp_swp_set_swap_data(g.h(K::Task), g.u64()));
        #[lenient] doca_rdma_task_atomic_cmp_swp_get_swap_data => |g| r(doca_rdma_task_atomic_cmp_swp_get_swap_data(g.h(K::Task)));
        #[lenient] doca_rdma_task_atomic_fetch_add_set_dst_buf => |g| r(doca_rdma_task_atomic_fetch_add_set_dst_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_atomic_fetch_add_get_dst_buf => |g| r(doca_rdma_task_atomic_fetch_add_get_dst_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_atomic_fetch_add_set_result_buf => |g| r(doca_rdma_task_atomic_fetch_add_set_result_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_atomic_fetch_add_get_result_buf => |g| r(doca_rdma_task_atomic_fetch_add_get_result_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_atomic_fetch_add_set_add_data => |g| r(doca_rdma_task_atomic_fetch_add_set_add_data(g.h(K::Task), g.u64()));
        #[lenient] doca_rdma_task_atomic_fetch_add_get_add_data => |g| r(doca_rdma_task_atomic_fetch_add_get_add_data(g.h(K::Task)));
        // doca_rdma.h: remote-net sync event tasks (the event: NULL or garbage here, bad)
        doca_rdma_cap_task_remote_net_sync_event_get_is_supported => |g| r(doca_rdma_cap_task_remote_net_sync_event_get_is_supported(g.h(K::Devinfo)));
        doca_rdma_cap_task_remote_net_sync_event_notify_set_is_supported => |g| r(doca_rdma_cap_task_remote_net_sync_event_notify_set_is_supported(g.h(K::Devinfo)));
        doca_rdma_cap_task_remote_net_sync_event_notify_add_is_supported => |g| r(doca_rdma_cap_task_remote_net_sync_event_notify_add_is_supported(g.h(K::Devinfo)));
        doca_rdma_task_remote_net_sync_event_get_set_conf => |g| r(doca_rdma_task_remote_net_sync_event_get_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_remote_net_sync_event_notify_set_set_conf => |g| r(doca_rdma_task_remote_net_sync_event_notify_set_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_remote_net_sync_event_notify_add_set_conf => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_set_conf(g.h(K::Rdma), g.cb_task(), g.cb_task(), g.u32()));
        doca_rdma_task_remote_net_sync_event_get_allocate_init => |g| r(doca_rdma_task_remote_net_sync_event_get_allocate_init(g.h(K::Rdma), g.h(K::RdmaConn), g.remote_net(), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_remote_net_sync_event_notify_set_allocate_init => |g| r(doca_rdma_task_remote_net_sync_event_notify_set_allocate_init(g.h(K::Rdma), g.h(K::RdmaConn), g.remote_net(), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_remote_net_sync_event_notify_add_allocate_init => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_allocate_init(g.h(K::Rdma), g.h(K::RdmaConn), g.remote_net(), g.hopt(K::Buf), g.u64(), g.data(), g.outh(K::Task)));
        doca_rdma_task_remote_net_sync_event_get_as_task => |g| r(doca_rdma_task_remote_net_sync_event_get_as_task(g.h(K::Task)));
        doca_rdma_task_remote_net_sync_event_notify_set_as_task => |g| r(doca_rdma_task_remote_net_sync_event_notify_set_as_task(g.h(K::Task)));
        doca_rdma_task_remote_net_sync_event_notify_add_as_task => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_as_task(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_get_set_sync_event => |g| r(doca_rdma_task_remote_net_sync_event_get_set_sync_event(g.h(K::Task), g.remote_net()));
        #[lenient] doca_rdma_task_remote_net_sync_event_get_get_sync_event => |g| r(doca_rdma_task_remote_net_sync_event_get_get_sync_event(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_get_set_dst_buf => |g| r(doca_rdma_task_remote_net_sync_event_get_set_dst_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_remote_net_sync_event_get_get_dst_buf => |g| r(doca_rdma_task_remote_net_sync_event_get_get_dst_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_get_get_result_len => |g| r(doca_rdma_task_remote_net_sync_event_get_get_result_len(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_set_set_sync_event => |g| r(doca_rdma_task_remote_net_sync_event_notify_set_set_sync_event(g.h(K::Task), g.remote_net()));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_set_get_sync_event => |g| r(doca_rdma_task_remote_net_sync_event_notify_set_get_sync_event(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_set_set_src_buf => |g| r(doca_rdma_task_remote_net_sync_event_notify_set_set_src_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_set_get_src_buf => |g| r(doca_rdma_task_remote_net_sync_event_notify_set_get_src_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_add_set_sync_event => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_set_sync_event(g.h(K::Task), g.remote_net()));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_add_get_sync_event => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_get_sync_event(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_add_set_result_buf => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_set_result_buf(g.h(K::Task), g.hopt(K::Buf)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_add_get_result_buf => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_get_result_buf(g.h(K::Task)));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_add_set_add_data => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_set_add_data(g.h(K::Task), g.u64()));
        #[lenient] doca_rdma_task_remote_net_sync_event_notify_add_get_add_data => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_get_add_data(g.h(K::Task)));
        // doca_rdma.h at level 2.6: the 2.6 shapes (no connection argument; export and connect
        // of the context's one connection)
        doca_rdma_create_v26 => |g| r(doca_rdma_create_v26(g.h(K::Dev), g.outh(K::Rdma)));
        doca_rdma_cap_transport_type_is_supported_v26 => |g| r(doca_rdma_cap_transport_type_is_supported_v26(g.h(K::Devinfo), g.u32()));
        doca_rdma_set_transport_type_v26 => |g| r(doca_rdma_set_transport_type_v26(g.h(K::Rdma), g.u32()));
        doca_rdma_export_v26 => |g| r(doca_rdma_export_v26(g.h(K::Rdma), g.out(), g.out()));
        doca_rdma_connect_v26 => |g| { let (m, n) = g.msg(); r(doca_rdma_connect_v26(g.h(K::Rdma), m.cast(), n)) };
        doca_rdma_task_send_allocate_init_v26 => |g| r(doca_rdma_task_send_allocate_init_v26(g.h(K::Rdma), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_send_imm_allocate_init_v26 => |g| r(doca_rdma_task_send_imm_allocate_init_v26(g.h(K::Rdma), g.hopt(K::Buf), g.u32(), g.data(), g.outh(K::Task)));
        doca_rdma_task_read_allocate_init_v26 => |g| r(doca_rdma_task_read_allocate_init_v26(g.h(K::Rdma), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_write_allocate_init_v26 => |g| r(doca_rdma_task_write_allocate_init_v26(g.h(K::Rdma), g.hopt(K::Buf), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_write_imm_allocate_init_v26 => |g| r(doca_rdma_task_write_imm_allocate_init_v26(g.h(K::Rdma), g.hopt(K::Buf), g.hopt(K::Buf), g.u32(), g.data(), g.outh(K::Task)));
        doca_rdma_task_atomic_cmp_swp_allocate_init_v26 => |g| r(doca_rdma_task_atomic_cmp_swp_allocate_init_v26(g.h(K::Rdma), g.hopt(K::Buf), g.hopt(K::Buf), g.u64(), g.u64(), g.data(), g.outh(K::Task)));
        doca_rdma_task_atomic_fetch_add_allocate_init_v26 => |g| r(doca_rdma_task_atomic_fetch_add_allocate_init_v26(g.h(K::Rdma), g.hopt(K::Buf), g.hopt(K::Buf), g.u64(), g.data(), g.outh(K::Task)));
        doca_rdma_task_remote_net_sync_event_get_allocate_init_v26 => |g| r(doca_rdma_task_remote_net_sync_event_get_allocate_init_v26(g.h(K::Rdma), g.remote_net(), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_remote_net_sync_event_notify_set_allocate_init_v26 => |g| r(doca_rdma_task_remote_net_sync_event_notify_set_allocate_init_v26(g.h(K::Rdma), g.remote_net(), g.hopt(K::Buf), g.data(), g.outh(K::Task)));
        doca_rdma_task_remote_net_sync_event_notify_add_allocate_init_v26 => |g| r(doca_rdma_task_remote_net_sync_event_notify_add_allocate_init_v26(g.h(K::Rdma), g.remote_net(), g.hopt(K::Buf), g.u64(), g.data(), g.outh(K::Task)));
        // doca_rdma.h: the MTU, buffer-list and GID settings and caps
        doca_rdma_set_mtu => |g| r(doca_rdma_set_mtu(g.h(K::Rdma), g.u32()));
        doca_rdma_get_mtu => |g| r(doca_rdma_get_mtu(g.h(K::Rdma), g.out()));
        doca_rdma_set_max_send_buf_list_len => |g| r(doca_rdma_set_max_send_buf_list_len(g.h(K::Rdma), g.u32()));
        doca_rdma_get_max_send_buf_list_len => |g| r(doca_rdma_get_max_send_buf_list_len(g.h(K::Rdma), g.out()));
        doca_rdma_task_receive_set_dst_buf_list_len => |g| r(doca_rdma_task_receive_set_dst_buf_list_len(g.h(K::Rdma), g.u32()));
        doca_rdma_task_receive_get_dst_buf_list_len => |g| r(doca_rdma_task_receive_get_dst_buf_list_len(g.h(K::Rdma), g.out()));
        doca_rdma_cap_get_max_send_buf_list_len => |g| r(doca_rdma_cap_get_max_send_buf_list_len(g.h(K::Devinfo), g.out()));
        doca_rdma_cap_task_receive_get_max_dst_buf_list_len => |g| r(doca_rdma_cap_task_receive_get_max_dst_buf_list_len(g.h(K::Devinfo), g.u32(), g.out()));
        // (the scratch slot holds 16 entries of 16 bytes)
        doca_rdma_cap_get_gid => |g| r(doca_rdma_cap_get_gid(g.h(K::Devinfo), g.u32() % 8, u32::from(g.u8() % 17), g.out()));
        // doca_rdma.h at level 2.5: the bool grh setting and 2.5's result getter names
        doca_rdma_set_grh_enabled_v25 => |g| r(doca_rdma_set_grh_enabled_v25(g.h(K::Rdma), g.u8() & 1 == 1));
        doca_rdma_get_grh_enabled_v25 => |g| r(doca_rdma_get_grh_enabled_v25(g.h(K::Rdma), g.out()));
        doca_rdma_task_receive_get_result_length => |g| r(doca_rdma_task_receive_get_result_length(g.h(K::Task)));
        doca_rdma_task_read_get_result_length => |g| r(doca_rdma_task_read_get_result_length(g.h(K::Task)));
        doca_rdma_task_remote_net_sync_event_get_get_result_length => |g| r(doca_rdma_task_remote_net_sync_event_get_get_result_length(g.h(K::Task)));
        // doca_rdma.h's shared receive queues (levels 2.6 and 2.7)
        doca_rdma_srq_create => |g| r(doca_rdma_srq_create(g.h(K::Dev), g.outh(K::RdmaSrq)));
        doca_rdma_srq_destroy => |g| r(doca_rdma_srq_destroy(g.hn(K::RdmaSrq)));
        doca_rdma_srq_as_ctx => |g| r(doca_rdma_srq_as_ctx(g.h(K::RdmaSrq)));
        doca_rdma_srq_cap_get_max_shared_recv_queue_size => |g| r(doca_rdma_srq_cap_get_max_shared_recv_queue_size(g.h(K::Devinfo), g.out()));
        doca_rdma_srq_cap_task_receive_get_max_dst_buf_list_len => |g| r(doca_rdma_srq_cap_task_receive_get_max_dst_buf_list_len(g.h(K::Devinfo), g.out()));
        doca_rdma_srq_set_shared_recv_queue_size => |g| r(doca_rdma_srq_set_shared_recv_queue_size(g.h(K::RdmaSrq), g.u32()));
        doca_rdma_srq_get_shared_recv_queue_size => |g| r(doca_rdma_srq_get_shared_recv_queue_size(g.h(K::RdmaSrq), g.out()));
        doca_rdma_srq_task_receive_set_dst_buf_list_len => |g| r(doca_rdma_srq_task_receive_set_dst_buf_list_len(g.h(K::RdmaSrq), g.u32()));
        doca_rdma_srq_task_receive_get_dst_buf_list_len => |g| r(doca_rdma_srq_task_receive_get_dst_buf_list_len(g.h(K::RdmaSrq), g.out()));
        doca_rdma_srq_set_type => |g| r(doca_rdma_srq_set_type(g.h(K::RdmaSrq), g.u32() % 4));
        doca_rdma_srq_get_type => |g| r(doca_rdma_srq_get_type(g.h(K::RdmaSrq), g.out()));
        doca_rdma_srq_get_dpa_handle => |g| r(doca_rdma_srq_get_dpa_handle(g.h(K::RdmaSrq), g.out()));
        doca_rdma_create_with_srq => |g| r(doca_rdma_create_with_srq(g.h(K::Dev), g.h(K::RdmaSrq), g.outh(K::Rdma)));
        doca_rdma_create_with_srq_v26 => |g| r(doca_rdma_create_with_srq_v26(g.h(K::Dev), g.h(K::RdmaSrq), g.outh(K::Rdma)));
        // doca_cc.h
        doca_cc_server_create => |g| r(doca_cc_server_create(g.h(K::Dev), g.h(K::DevRep), g.cstr(), g.outh(K::Server)));
        doca_cc_client_create => |g| r(doca_cc_client_create(g.h(K::Dev), g.cstr(), g.outh(K::Client)));
        doca_cc_server_destroy => |g| r(doca_cc_server_destroy(g.hn(K::Server)));
        doca_cc_client_destroy => |g| r(doca_cc_client_destroy(g.hn(K::Client)));
        doca_cc_server_as_ctx => |g| r(doca_cc_server_as_ctx(g.h(K::Server)));
        doca_cc_client_as_ctx => |g| r(doca_cc_client_as_ctx(g.h(K::Client)));
        doca_cc_server_task_send_set_conf => |g| r(doca_cc_server_task_send_set_conf(g.h(K::Server), g.cb_task(), g.cb_task(), g.u32()));
        doca_cc_client_task_send_set_conf => |g| r(doca_cc_client_task_send_set_conf(g.h(K::Client), g.cb_task(), g.cb_task(), g.u32()));
        doca_cc_server_event_msg_recv_register => |g| r(doca_cc_server_event_msg_recv_register(g.h(K::Server), g.cb_msg()));
        doca_cc_client_event_msg_recv_register => |g| r(doca_cc_client_event_msg_recv_register(g.h(K::Client), g.cb_msg()));
        doca_cc_server_event_connection_register => |g| r(doca_cc_server_event_connection_register(g.h(K::Server), g.cb_conn(), g.cb_conn()));
        doca_cc_server_event_consumer_register => |g| r(doca_cc_server_event_consumer_register(g.h(K::Server), g.cb_consumer(), g.cb_consumer()));
        doca_cc_client_event_consumer_register => |g| r(doca_cc_client_event_consumer_register(g.h(K::Client), g.cb_consumer(), g.cb_consumer()));
        doca_cc_client_get_connection => |g| r(doca_cc_client_get_connection(g.h(K::Client), g.outh(K::Conn)));
        doca_cc_server_task_send_alloc_init => |g| { let (m, n) = g.msg32(); r(doca_cc_server_task_send_alloc_init(g.h(K::Server), g.h(K::Conn), m, n, g.outh(K::Task))) };
        doca_cc_client_task_send_alloc_init => |g| { let (m, n) = g.msg32(); r(doca_cc_client_task_send_alloc_init(g.h(K::Client), g.h(K::Conn), m, n, g.outh(K::Task))) };
        doca_cc_task_send_as_task => |g| r(doca_cc_task_send_as_task(g.h(K::Task)));
        doca_cc_connection_set_user_data => |g| r(doca_cc_connection_set_user_data(g.h(K::Conn), g.data()));
        #[lenient] doca_cc_connection_get_user_data => |g| r(doca_cc_connection_get_user_data(g.h(K::Conn)));
        doca_cc_server_get_server_ctx => |g| r(doca_cc_server_get_server_ctx(g.h(K::Conn)));
        doca_cc_client_get_client_ctx => |g| r(doca_cc_client_get_client_ctx(g.h(K::Conn)));
        doca_cc_server_set_max_msg_size => |g| r(doca_cc_server_set_max_msg_size(g.h(K::Server), g.u32()));
        doca_cc_server_get_max_msg_size => |g| r(doca_cc_server_get_max_msg_size(g.h(K::Server), g.out()));
        doca_cc_server_set_recv_queue_size => |g| r(doca_cc_server_set_recv_queue_size(g.h(K::Server), g.u32()));
        doca_cc_server_get_recv_queue_size => |g| r(doca_cc_server_get_recv_queue_size(g.h(K::Server), g.out()));
        doca_cc_client_set_max_msg_size => |g| r(doca_cc_client_set_max_msg_size(g.h(K::Client), g.u32()));
        doca_cc_client_get_max_msg_size => |g| r(doca_cc_client_get_max_msg_size(g.h(K::Client), g.out()));
        doca_cc_client_set_recv_queue_size => |g| r(doca_cc_client_set_recv_queue_size(g.h(K::Client), g.u32()));
        doca_cc_client_get_recv_queue_size => |g| r(doca_cc_client_get_recv_queue_size(g.h(K::Client), g.out()));
        doca_cc_server_get_device => |g| r(doca_cc_server_get_device(g.h(K::Server), g.out()));
        doca_cc_server_get_device_repr => |g| r(doca_cc_server_get_device_repr(g.h(K::Server), g.out()));
        doca_cc_client_get_device => |g| r(doca_cc_client_get_device(g.h(K::Client), g.out()));
        doca_cc_cap_get_max_msg_size => |g| r(doca_cc_cap_get_max_msg_size(g.h(K::Devinfo), g.out()));
        doca_cc_cap_get_max_recv_queue_size => |g| r(doca_cc_cap_get_max_recv_queue_size(g.h(K::Devinfo), g.out()));
        doca_cc_cap_get_max_name_len => |g| r(doca_cc_cap_get_max_name_len(g.h(K::Devinfo), g.out()));
        doca_cc_cap_get_max_clients => |g| r(doca_cc_cap_get_max_clients(g.h(K::Devinfo), g.out()));
        doca_cc_cap_get_max_send_tasks => |g| r(doca_cc_cap_get_max_send_tasks(g.h(K::Devinfo), g.out()));
        doca_cc_cap_server_is_supported => |g| r(doca_cc_cap_server_is_supported(g.h(K::Devinfo)));
        doca_cc_cap_client_is_supported => |g| r(doca_cc_cap_client_is_supported(g.h(K::Devinfo)));
        doca_comch_server_disconnect => |g| r(doca_comch_server_disconnect(g.h(K::Server), if g.chance(90) { g.hn(K::Conn) } else { g.h(K::Conn) }));
        doca_cc_connection_update_info => |g| r(doca_cc_connection_update_info(g.h(K::Conn)));
        doca_cc_connection_get_counter => |g| r(doca_cc_connection_get_counter(g.h(K::Conn), [1, 2, 3, 4, 0, 99][g.below(6) as usize], g.out()));
        // DOCA 2.5 shapes of 2.6 names (the `_v25` symbols an API level 2.5 install routes to)
        doca_cc_server_event_msg_recv_register_v25 => |g| r(doca_cc_server_event_msg_recv_register_v25(g.h(K::Server), g.cb_msg25()));
        doca_cc_client_event_msg_recv_register_v25 => |g| r(doca_cc_client_event_msg_recv_register_v25(g.h(K::Client), g.cb_msg25()));
        doca_cc_server_event_connection_register_v25 => |g| r(doca_cc_server_event_connection_register_v25(g.h(K::Server), g.cb_conn25(), g.cb_conn25()));
        doca_cc_server_set_max_msg_size_v25 => |g| r(doca_cc_server_set_max_msg_size_v25(g.h(K::Server), g.size32()));
        doca_cc_server_get_max_msg_size_v25 => |g| r(doca_cc_server_get_max_msg_size_v25(g.h(K::Server), g.out()));
        doca_cc_server_set_recv_queue_size_v25 => |g| r(doca_cc_server_set_recv_queue_size_v25(g.h(K::Server), g.size32()));
        doca_cc_server_get_recv_queue_size_v25 => |g| r(doca_cc_server_get_recv_queue_size_v25(g.h(K::Server), g.out()));
        doca_cc_client_set_max_msg_size_v25 => |g| r(doca_cc_client_set_max_msg_size_v25(g.h(K::Client), g.size32()));
        doca_cc_client_get_max_msg_size_v25 => |g| r(doca_cc_client_get_max_msg_size_v25(g.h(K::Client), g.out()));
        doca_cc_client_set_recv_queue_size_v25 => |g| r(doca_cc_client_set_recv_queue_size_v25(g.h(K::Client), g.size32()));
        doca_cc_client_get_recv_queue_size_v25 => |g| r(doca_cc_client_get_recv_queue_size_v25(g.h(K::Client), g.out()));
        doca_cc_cap_get_max_msg_size_v25 => |g| r(doca_cc_cap_get_max_msg_size_v25(g.h(K::Devinfo), g.out()));
        doca_cc_cap_get_max_recv_queue_size_v25 => |g| r(doca_cc_cap_get_max_recv_queue_size_v25(g.h(K::Devinfo), g.out()));
        doca_cc_cap_get_max_clients_v25 => |g| r(doca_cc_cap_get_max_clients_v25(g.h(K::Devinfo), g.out()));
        doca_cc_cap_get_max_send_tasks_v25 => |g| r(doca_cc_cap_get_max_send_tasks_v25(g.h(K::Devinfo), g.out()));
        doca_cc_consumer_cap_get_max_buf_size_v25 => |g| r(doca_cc_consumer_cap_get_max_buf_size_v25(g.h(K::Devinfo), g.out()));
        doca_cc_producer_cap_get_max_buf_size_v25 => |g| r(doca_cc_producer_cap_get_max_buf_size_v25(g.h(K::Devinfo), g.out()));
        // DOCA 2.5 names
        doca_cc_server_send_task_set_conf => |g| r(doca_cc_server_send_task_set_conf(g.h(K::Server), g.cb_task(), g.cb_task(), g.u8()));
        doca_cc_client_send_task_set_conf => |g| r(doca_cc_client_send_task_set_conf(g.h(K::Client), g.cb_task(), g.cb_task(), g.u8()));
        doca_cc_server_send_task_alloc_init => |g| { let (m, n) = g.msg(); r(doca_cc_server_send_task_alloc_init(g.h(K::Server), g.h(K::Conn), m, n, g.outh(K::Task))) };
        doca_cc_client_send_task_alloc_init => |g| { let (m, n) = g.msg(); r(doca_cc_client_send_task_alloc_init(g.h(K::Client), g.h(K::Conn), m, n, g.outh(K::Task))) };
        doca_cc_send_task_as_task => |g| r(doca_cc_send_task_as_task(g.h(K::Task)));
        doca_cc_cap_is_consumer_supported => |g| r(doca_cc_cap_is_consumer_supported(g.h(K::Devinfo)));
        doca_cc_cap_is_producer_supported => |g| r(doca_cc_cap_is_producer_supported(g.h(K::Devinfo)));
        doca_cc_consumer_cap_get_max_log_num_tasks => |g| r(doca_cc_consumer_cap_get_max_log_num_tasks(g.h(K::Devinfo), g.out()));
        doca_cc_producer_cap_get_max_log_num_tasks => |g| r(doca_cc_producer_cap_get_max_log_num_tasks(g.h(K::Devinfo), g.out()));
        doca_cc_consumer_post_recv_task_set_conf => |g| r(doca_cc_consumer_post_recv_task_set_conf(g.h(K::Consumer), g.cb_task(), g.cb_task(), g.usize()));
        doca_cc_consumer_post_recv_task_alloc_init => |g| r(doca_cc_consumer_post_recv_task_alloc_init(g.h(K::Consumer), g.h(K::Buf), g.outh(K::Task)));
        doca_cc_consumer_post_recv_task_get_buf => |g| r(doca_cc_consumer_post_recv_task_get_buf(g.h(K::Task)));
        doca_cc_consumer_post_recv_task_set_buf => |g| r(doca_cc_consumer_post_recv_task_set_buf(g.h(K::Task), g.h(K::Buf)));
        doca_cc_consumer_post_recv_task_as_task => |g| r(doca_cc_consumer_post_recv_task_as_task(g.h(K::Task)));
        doca_cc_producer_send_task_set_conf => |g| r(doca_cc_producer_send_task_set_conf(g.h(K::Producer), g.cb_task(), g.cb_task(), g.usize()));
        doca_cc_producer_send_task_alloc_init => |g| r(doca_cc_producer_send_task_alloc_init(g.h(K::Producer), g.h(K::Buf), g.i32(), g.outh(K::Task)));
        doca_cc_producer_send_task_get_buf => |g| r(doca_cc_producer_send_task_get_buf(g.h(K::Task)));
        doca_cc_producer_send_task_set_buf => |g| r(doca_cc_producer_send_task_set_buf(g.h(K::Task), g.h(K::Buf)));
        #[lenient] doca_cc_producer_send_task_get_consumer_id => |g| r(doca_cc_producer_send_task_get_consumer_id(g.h(K::Task)) as u32);
        doca_cc_producer_send_task_set_consumer_id => |g| r(doca_cc_producer_send_task_set_consumer_id(g.h(K::Task), g.i32()));
        doca_cc_producer_send_task_as_task => |g| r(doca_cc_producer_send_task_as_task(g.h(K::Task)));
        // doca_cc_consumer.h, doca_cc_producer.h
        doca_cc_consumer_create => |g| r(doca_cc_consumer_create(g.h(K::Conn), g.h(K::Mmap), g.outh(K::Consumer)));
        doca_cc_consumer_destroy => |g| r(doca_cc_consumer_destroy(g.hn(K::Consumer)));
        doca_cc_consumer_as_ctx => |g| r(doca_cc_consumer_as_ctx(g.h(K::Consumer)));
        doca_cc_consumer_get_id => |g| r(doca_cc_consumer_get_id(g.h(K::Consumer), g.out()));
        doca_cc_consumer_task_post_recv_set_conf => |g| r(doca_cc_consumer_task_post_recv_set_conf(g.h(K::Consumer), g.cb_task(), g.cb_task(), g.u32()));
        doca_cc_consumer_task_post_recv_alloc_init => |g| r(doca_cc_consumer_task_post_recv_alloc_init(g.h(K::Consumer), g.h(K::Buf), g.outh(K::Task)));
        doca_cc_consumer_task_post_recv_get_buf => |g| r(doca_cc_consumer_task_post_recv_get_buf(g.h(K::Task)));
        doca_cc_consumer_task_post_recv_set_buf => |g| r(doca_cc_consumer_task_post_recv_set_buf(g.h(K::Task), g.h(K::Buf)));
        #[lenient] doca_cc_consumer_task_post_recv_get_producer_id => |g| r(doca_cc_consumer_task_post_recv_get_producer_id(g.h(K::Task)));
        doca_cc_consumer_task_post_recv_as_task => |g| r(doca_cc_consumer_task_post_recv_as_task(g.h(K::Task)));
        doca_cc_producer_create => |g| r(doca_cc_producer_create(g.h(K::Conn), g.outh(K::Producer)));
        doca_cc_producer_destroy => |g| r(doca_cc_producer_destroy(g.hn(K::Producer)));
        doca_cc_producer_as_ctx => |g| r(doca_cc_producer_as_ctx(g.h(K::Producer)));
        doca_cc_producer_get_id => |g| r(doca_cc_producer_get_id(g.h(K::Producer), g.out()));
        doca_cc_producer_task_send_set_conf => |g| r(doca_cc_producer_task_send_set_conf(g.h(K::Producer), g.cb_task(), g.cb_task(), g.u32()));
        doca_cc_producer_task_send_alloc_init => |g| r(doca_cc_producer_task_send_alloc_init(g.h(K::Producer), g.h(K::Buf), g.u32(), g.outh(K::Task)));
        doca_cc_producer_task_send_get_buf => |g| r(doca_cc_producer_task_send_get_buf(g.h(K::Task)));
        doca_cc_producer_task_send_set_buf => |g| r(doca_cc_producer_task_send_set_buf(g.h(K::Task), g.h(K::Buf)));
        #[lenient] doca_cc_producer_task_send_get_consumer_id => |g| r(doca_cc_producer_task_send_get_consumer_id(g.h(K::Task)));
        doca_cc_producer_task_send_set_consumer_id => |g| r(doca_cc_producer_task_send_set_consumer_id(g.h(K::Task), g.u32()));
        doca_cc_producer_task_send_as_task => |g| r(doca_cc_producer_task_send_as_task(g.h(K::Task)));
        doca_cc_consumer_cap_is_supported => |g| r(doca_cc_consumer_cap_is_supported(g.h(K::Devinfo)));
        doca_cc_producer_cap_is_supported => |g| r(doca_cc_producer_cap_is_supported(g.h(K::Devinfo)));
        doca_cc_consumer_cap_get_max_num_tasks => |g| r(doca_cc_consumer_cap_get_max_num_tasks(g.h(K::Devinfo), g.out()));
        doca_cc_consumer_cap_get_max_buf_size => |g| r(doca_cc_consumer_cap_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_cc_consumer_cap_get_max_consumers => |g| r(doca_cc_consumer_cap_get_max_consumers(g.h(K::Devinfo), g.out()));
        doca_cc_producer_cap_get_max_num_tasks => |g| r(doca_cc_producer_cap_get_max_num_tasks(g.h(K::Devinfo), g.out()));
        doca_cc_producer_cap_get_max_buf_size => |g| r(doca_cc_producer_cap_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_cc_producer_cap_get_max_producers => |g| r(doca_cc_producer_cap_get_max_producers(g.h(K::Devinfo), g.out()));
        // doca_comch*.h: the doca_cc_* functions under their 2.7+ names
        doca_comch_cap_client_is_supported => |g| r(doca_comch_cap_client_is_supported(g.h(K::Devinfo)));
        doca_comch_cap_server_is_supported => |g| r(doca_comch_cap_server_is_supported(g.h(K::Devinfo)));
        doca_comch_client_as_ctx => |g| r(doca_comch_client_as_ctx(g.h(K::Client)));
        doca_comch_client_destroy => |g| r(doca_comch_client_destroy(g.hn(K::Client)));
        doca_comch_client_event_consumer_register => |g| r(doca_comch_client_event_consumer_register(g.h(K::Client), g.cb_consumer(), g.cb_consumer()));
        doca_comch_client_event_msg_recv_register => |g| r(doca_comch_client_event_msg_recv_register(g.h(K::Client), g.cb_msg()));
        doca_comch_client_get_client_ctx => |g| r(doca_comch_client_get_client_ctx(g.h(K::Conn)));
        doca_comch_client_set_max_msg_size => |g| r(doca_comch_client_set_max_msg_size(g.h(K::Client), g.u32()));
        doca_comch_client_set_recv_queue_size => |g| r(doca_comch_client_set_recv_queue_size(g.h(K::Client), g.u32()));
        doca_comch_client_task_send_alloc_init => |g| { let (m, n) = g.msg32(); r(doca_comch_client_task_send_alloc_init(g.h(K::Client), g.h(K::Conn), m, n, g.outh(K::Task))) };
        doca_comch_client_task_send_set_conf => |g| r(doca_comch_client_task_send_set_conf(g.h(K::Client), g.cb_task(), g.cb_task(), g.u32()));
        #[lenient] doca_comch_connection_get_user_data => |g| r(doca_comch_connection_get_user_data(g.h(K::Conn)));
        doca_comch_connection_set_user_data => |g| r(doca_comch_connection_set_user_data(g.h(K::Conn), g.data()));
        doca_comch_connection_update_info => |g| r(doca_comch_connection_update_info(g.h(K::Conn)));
        doca_comch_consumer_as_ctx => |g| r(doca_comch_consumer_as_ctx(g.h(K::Consumer)));
        doca_comch_consumer_cap_is_supported => |g| r(doca_comch_consumer_cap_is_supported(g.h(K::Devinfo)));
        doca_comch_consumer_task_post_recv_as_task => |g| r(doca_comch_consumer_task_post_recv_as_task(g.h(K::Task)));
        doca_comch_consumer_task_post_recv_get_buf => |g| r(doca_comch_consumer_task_post_recv_get_buf(g.h(K::Task)));
        #[lenient] doca_comch_consumer_task_post_recv_get_producer_id => |g| r(doca_comch_consumer_task_post_recv_get_producer_id(g.h(K::Task)));
        doca_comch_consumer_task_post_recv_set_buf => |g| r(doca_comch_consumer_task_post_recv_set_buf(g.h(K::Task), g.h(K::Buf)));
        doca_comch_consumer_task_post_recv_set_conf => |g| r(doca_comch_consumer_task_post_recv_set_conf(g.h(K::Consumer), g.cb_task(), g.cb_task(), g.u32()));
        doca_comch_producer_as_ctx => |g| r(doca_comch_producer_as_ctx(g.h(K::Producer)));
        doca_comch_producer_cap_is_supported => |g| r(doca_comch_producer_cap_is_supported(g.h(K::Devinfo)));
        doca_comch_producer_task_send_as_task => |g| r(doca_comch_producer_task_send_as_task(g.h(K::Task)));
        doca_comch_producer_task_send_get_buf => |g| r(doca_comch_producer_task_send_get_buf(g.h(K::Task)));
        #[lenient] doca_comch_producer_task_send_get_consumer_id => |g| r(doca_comch_producer_task_send_get_consumer_id(g.h(K::Task)));
        doca_comch_producer_task_send_set_buf => |g| r(doca_comch_producer_task_send_set_buf(g.h(K::Task), g.h(K::Buf)));
        doca_comch_producer_task_send_set_conf => |g| r(doca_comch_producer_task_send_set_conf(g.h(K::Producer), g.cb_task(), g.cb_task(), g.u32()));
        doca_comch_producer_task_send_set_consumer_id => |g| r(doca_comch_producer_task_send_set_consumer_id(g.h(K::Task), g.u32()));
        doca_comch_server_as_ctx => |g| r(doca_comch_server_as_ctx(g.h(K::Server)));
        doca_comch_server_destroy => |g| r(doca_comch_server_destroy(g.hn(K::Server)));
        doca_comch_server_event_connection_register => |g| r(doca_comch_server_event_connection_register(g.h(K::Server), g.cb_conn(), g.cb_conn()));
        doca_comch_server_event_connection_status_changed_register => |g| r(doca_comch_server_event_connection_status_changed_register(g.h(K::Server), g.cb_conn(), g.cb_conn()));
        doca_comch_server_event_consumer_register => |g| r(doca_comch_server_event_consumer_register(g.h(K::Server), g.cb_consumer(), g.cb_consumer()));
        doca_comch_server_event_msg_recv_register => |g| r(doca_comch_server_event_msg_recv_register(g.h(K::Server), g.cb_msg()));
        doca_comch_server_get_server_ctx => |g| r(doca_comch_server_get_server_ctx(g.h(K::Conn)));
        doca_comch_server_set_max_msg_size => |g| r(doca_comch_server_set_max_msg_size(g.h(K::Server), g.u32()));
        doca_comch_server_set_recv_queue_size => |g| r(doca_comch_server_set_recv_queue_size(g.h(K::Server), g.u32()));
        doca_comch_server_task_send_alloc_init => |g| { let (m, n) = g.msg32(); r(doca_comch_server_task_send_alloc_init(g.h(K::Server), g.h(K::Conn), m, n, g.outh(K::Task))) };
        doca_comch_server_task_send_set_conf => |g| r(doca_comch_server_task_send_set_conf(g.h(K::Server), g.cb_task(), g.cb_task(), g.u32()));
        doca_comch_task_send_as_task => |g| r(doca_comch_task_send_as_task(g.h(K::Task)));
        doca_comch_consumer_cap_get_max_num_tasks => |g| r(doca_comch_consumer_cap_get_max_num_tasks(g.h(K::Devinfo), g.out()));
        doca_comch_consumer_cap_get_max_buf_size => |g| r(doca_comch_consumer_cap_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_comch_consumer_cap_get_max_consumers => |g| r(doca_comch_consumer_cap_get_max_consumers(g.h(K::Devinfo), g.out()));
        doca_comch_producer_cap_get_max_num_tasks => |g| r(doca_comch_producer_cap_get_max_num_tasks(g.h(K::Devinfo), g.out()));
        doca_comch_producer_cap_get_max_buf_size => |g| r(doca_comch_producer_cap_get_max_buf_size(g.h(K::Devinfo), g.out()));
        doca_comch_producer_cap_get_max_producers => |g| r(doca_comch_producer_cap_get_max_producers(g.h(K::Devinfo), g.out()));
        doca_comch_cap_get_max_clients => |g| r(doca_comch_cap_get_max_clients(g.h(K::Devinfo), g.out()));
        doca_comch_cap_get_max_msg_size => |g| r(doca_comch_cap_get_max_msg_size(g.h(K::Devinfo), g.out()));
        doca_comch_cap_get_max_name_len => |g| r(doca_comch_cap_get_max_name_len(g.h(K::Devinfo), g.out()));
        doca_comch_cap_get_max_recv_queue_size => |g| r(doca_comch_cap_get_max_recv_queue_size(g.h(K::Devinfo), g.out()));
        doca_comch_cap_get_max_send_tasks => |g| r(doca_comch_cap_get_max_send_tasks(g.h(K::Devinfo), g.out()));
        doca_comch_client_create => |g| r(doca_comch_client_create(g.h(K::Dev), g.cstr(), g.outh(K::Client)));
        doca_comch_client_get_connection => |g| r(doca_comch_client_get_connection(g.h(K::Client), g.outh(K::Conn)));
        doca_comch_client_get_device => |g| r(doca_comch_client_get_device(g.h(K::Client), g.out()));
        doca_comch_client_get_max_msg_size => |g| r(doca_comch_client_get_max_msg_size(g.h(K::Client), g.out()));
        doca_comch_client_get_recv_queue_size => |g| r(doca_comch_client_get_recv_queue_size(g.h(K::Client), g.out()));
        doca_comch_connection_get_counter => |g| r(doca_comch_connection_get_counter(g.h(K::Conn), [1, 2, 3, 4, 0, 99][g.below(6) as usize], g.out()));
        doca_comch_consumer_create => |g| r(doca_comch_consumer_create(g.h(K::Conn), g.h(K::Mmap), g.outh(K::Consumer)));
        doca_comch_consumer_destroy => |g| r(doca_comch_consumer_destroy(g.hn(K::Consumer)));
        doca_comch_consumer_get_id => |g| r(doca_comch_consumer_get_id(g.h(K::Consumer), g.out()));
        doca_comch_consumer_task_post_recv_alloc_init => |g| r(doca_comch_consumer_task_post_recv_alloc_init(g.h(K::Consumer), g.h(K::Buf), g.outh(K::Task)));
        doca_comch_producer_create => |g| r(doca_comch_producer_create(g.h(K::Conn), g.outh(K::Producer)));
        doca_comch_producer_destroy => |g| r(doca_comch_producer_destroy(g.hn(K::Producer)));
        doca_comch_producer_get_id => |g| r(doca_comch_producer_get_id(g.h(K::Producer), g.out()));
        doca_comch_server_create => |g| r(doca_comch_server_create(g.h(K::Dev), g.h(K::DevRep), g.cstr(), g.outh(K::Server)));
        doca_comch_server_get_device => |g| r(doca_comch_server_get_device(g.h(K::Server), g.out()));
        doca_comch_server_get_device_repr => |g| r(doca_comch_server_get_device_repr(g.h(K::Server), g.out()));
        doca_comch_server_get_max_msg_size => |g| r(doca_comch_server_get_max_msg_size(g.h(K::Server), g.out()));
        doca_comch_server_get_recv_queue_size => |g| r(doca_comch_server_get_recv_queue_size(g.h(K::Server), g.out()));
        doca_comch_producer_task_send_alloc_init => |g| { let (m, n) = g.msg32(); r(doca_comch_producer_task_send_alloc_init(g.h(K::Producer), g.h(K::Buf), m.cast_mut().cast(), n, g.u32(), g.outh(K::Task))) };
        #[lenient] doca_comch_consumer_task_post_recv_get_imm_data => |g| r(doca_comch_consumer_task_post_recv_get_imm_data(g.h(K::Task)));
        #[lenient] doca_comch_consumer_task_post_recv_get_imm_data_len => |g| r(doca_comch_consumer_task_post_recv_get_imm_data_len(g.h(K::Task)));
        doca_comch_consumer_cap_get_max_imm_data_len => |g| r(doca_comch_consumer_cap_get_max_imm_data_len(g.h(K::Devinfo), g.out()));
        // doca_comm_channel.h
        doca_comm_channel_ep_create => |g| r(doca_comm_channel_ep_create(g.outh(K::Ep)));
        doca_comm_channel_ep_destroy => |g| r(doca_comm_channel_ep_destroy(g.hn(K::Ep)));
        doca_comm_channel_ep_set_device => |g| r(doca_comm_channel_ep_set_device(g.h(K::Ep), g.h(K::Dev)));
        doca_comm_channel_ep_set_device_rep => |g| r(doca_comm_channel_ep_set_device_rep(g.h(K::Ep), g.h(K::DevRep)));
        doca_comm_channel_ep_get_device => |g| r(doca_comm_channel_ep_get_device(g.h(K::Ep), g.out()));
        doca_comm_channel_ep_get_device_rep => |g| r(doca_comm_channel_ep_get_device_rep(g.h(K::Ep), g.out()));
        doca_comm_channel_ep_set_max_msg_size => |g| r(doca_comm_channel_ep_set_max_msg_size(g.h(K::Ep), g.u16()));
        doca_comm_channel_ep_get_max_msg_size => |g| r(doca_comm_channel_ep_get_max_msg_size(g.h(K::Ep), g.out()));
        doca_comm_channel_ep_set_send_queue_size => |g| r(doca_comm_channel_ep_set_send_queue_size(g.h(K::Ep), g.u16()));
        doca_comm_channel_ep_get_send_queue_size => |g| r(doca_comm_channel_ep_get_send_queue_size(g.h(K::Ep), g.out()));
        doca_comm_channel_ep_set_recv_queue_size => |g| r(doca_comm_channel_ep_set_recv_queue_size(g.h(K::Ep), g.u16()));
        doca_comm_channel_ep_get_recv_queue_size => |g| r(doca_comm_channel_ep_get_recv_queue_size(g.h(K::Ep), g.out()));
        doca_comm_channel_ep_listen => |g| r(doca_comm_channel_ep_listen(g.h(K::Ep), g.cstr()));
        doca_comm_channel_ep_connect => |g| r(doca_comm_channel_ep_connect(g.h(K::Ep), g.cstr(), g.outh(K::Addr)));
        doca_comm_channel_ep_sendto => |g| { let (m, n) = g.msg(); r(doca_comm_channel_ep_sendto(g.h(K::Ep), m, n, 1, g.h(K::Addr))) };
        doca_comm_channel_ep_recvfrom => |g| {
            // the buffer holds any legacy message (65535 bytes); the length claimed may be
            // larger (only that much is ever written)
            let len: *mut usize = g.out();
            if !len.is_null() {
                *len = [0usize, 16, 4096, 65535, usize::MAX, isize::MAX as usize + 1][g.below(6) as usize];
            }
            let buf: *mut c_void = if g.chance(10) { g.bad("NULL buffer"); std::ptr::null_mut() } else { g.region.cast() };
            if buf.is_null() && !len.is_null() && *len == 0 {
                // NULL with no room is fine
                g.frames.borrow_mut().last_mut().map(|f| f.bad.pop());
            }
            r(doca_comm_channel_ep_recvfrom(g.h(K::Ep), buf, len, 1, g.outh(K::Addr)))
        };
        doca_comm_channel_ep_disconnect => |g| r(doca_comm_channel_ep_disconnect(g.h(K::Ep), g.hn(K::Addr)));
        doca_comm_channel_ep_get_event_channel => |g| r(doca_comm_channel_ep_get_event_channel(g.h(K::Ep), g.opt(), g.opt()));
        doca_comm_channel_ep_get_service_event_channel => |g| r(doca_comm_channel_ep_get_service_event_channel(g.h(K::Ep), g.out()));
        doca_comm_channel_ep_event_handle_arm_send => |g| r(doca_comm_channel_ep_event_handle_arm_send(g.h(K::Ep)));
        doca_comm_channel_ep_event_handle_arm_recv => |g| r(doca_comm_channel_ep_event_handle_arm_recv(g.h(K::Ep)));
        doca_comm_channel_ep_update_service_state_info => |g| r(doca_comm_channel_ep_update_service_state_info(g.h(K::Ep)));
        doca_comm_channel_ep_get_peer_addr_list => |g| r(doca_comm_channel_ep_get_peer_addr_list(g.h(K::Ep), g.out(), g.out()));
        doca_comm_channel_ep_get_pending_connections => |g| r(doca_comm_channel_ep_get_pending_connections(g.h(K::Ep), g.out()));
        doca_comm_channel_peer_addr_update_info => |g| r(doca_comm_channel_peer_addr_update_info(g.h(K::Addr)));
        doca_comm_channel_peer_addr_set_user_data => |g| r(doca_comm_channel_peer_addr_set_user_data(g.h(K::Addr), g.next()));
        doca_comm_channel_peer_addr_get_user_data => |g| r(doca_comm_channel_peer_addr_get_user_data(g.h(K::Addr), g.out()));
        doca_comm_channel_peer_addr_get_send_messages => |g| r(doca_comm_channel_peer_addr_get_send_messages(g.h(K::Addr), g.out()));
        doca_comm_channel_peer_addr_get_send_bytes => |g| r(doca_comm_channel_peer_addr_get_send_bytes(g.h(K::Addr), g.out()));
        doca_comm_channel_peer_addr_get_recv_messages => |g| r(doca_comm_channel_peer_addr_get_recv_messages(g.h(K::Addr), g.out()));
        doca_comm_channel_peer_addr_get_recv_bytes => |g| r(doca_comm_channel_peer_addr_get_recv_bytes(g.h(K::Addr), g.out()));
        doca_comm_channel_peer_addr_get_send_in_flight_messages => |g| r(doca_comm_channel_peer_addr_get_send_in_flight_messages(g.h(K::Addr), g.out()));
        doca_comm_channel_get_max_service_name_len => |g| r(doca_comm_channel_get_max_service_name_len(g.out()));
        doca_comm_channel_get_max_message_size => |g| r(doca_comm_channel_get_max_message_size(g.h(K::Devinfo), g.out()));
        doca_comm_channel_get_max_send_queue_size => |g| r(doca_comm_channel_get_max_send_queue_size(g.h(K::Devinfo), g.out()));
        doca_comm_channel_get_max_recv_queue_size => |g| r(doca_comm_channel_get_max_recv_queue_size(g.h(K::Devinfo), g.out()));
        doca_comm_channel_get_service_max_num_connections => |g| r(doca_comm_channel_get_service_max_num_connections(g.h(K::Devinfo), g.out()));
    }
}

/// `rc` must be `want` (the setup's steps).
fn must(rc: i32, want: i32, what: &str) {
    if rc != want {
        let _ = writeln!(
            std::io::stderr(),
            "FAILED: setup: {what}: {} (wanted {})",
            // SAFETY: a static C string.
            unsafe { CStr::from_ptr(doca_error_get_name(rc)) }.to_string_lossy(),
            // SAFETY: a static C string.
            unsafe { CStr::from_ptr(doca_error_get_name(want)) }.to_string_lossy()
        );
        std::process::exit(1);
    }
}

/// Progresses `pes` until `done` (the setup fails after a minute). When no engine ran
/// anything it sleeps on their notification handles, as a C program does: request
/// notification, poll the handles (at most 10 ms), clear.
fn until(pes: &[*mut DocaPe], what: &str, mut done: impl FnMut() -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !done() {
        if std::time::Instant::now() > end {
            let _ = writeln!(std::io::stderr(), "FAILED: setup: {what} never happened");
            std::process::exit(1);
        }
        let mut any = false;
        for &pe in pes {
            any |= doca_pe_progress(pe) != 0;
        }
        if any {
            continue;
        }
        let handles: Vec<std::ffi::c_int> = pes
            .iter()
            .map(|&pe| {
                let mut h: std::ffi::c_int = -1;
                // SAFETY: `h` is a local, writable.
                must(unsafe { doca_pe_get_notification_handle(pe, &mut h) }, 0, "notification handle");
                must(doca_pe_request_notification(pe), 0, "request notification");
                h
            })
            .collect();
        let mut fds: Vec<rustix::event::PollFd<'_>> = handles
            .iter()
            .map(|&h| {
                // SAFETY: `h` is an engine's notification handle (its epoll fd), open while
                // the engine lives; every engine of `pes` outlives this call.
                let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(h) };
                rustix::event::PollFd::from_borrowed_fd(fd, rustix::event::PollFlags::IN)
            })
            .collect();
        let timeout = rustix::time::Timespec { tv_sec: 0, tv_nsec: 10_000_000 };
        let _ = rustix::event::poll(&mut fds, Some(&timeout));
        for (&pe, &h) in pes.iter().zip(&handles) {
            must(doca_pe_clear_notification(pe, h), 0, "clear notification");
        }
    }
}

static SERVER_CONNS: setup_conns::Conns = setup_conns::Conns::new();

/// The server's connections as the connection callback sees them (the setup's own callback).
mod setup_conns {
    use std::sync::Mutex;

    pub struct Conns(Mutex<Vec<usize>>);

    impl Conns {
        pub const fn new() -> Conns {
            Conns(Mutex::new(Vec::new()))
        }
        pub fn push(&self, c: usize) {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).push(c);
        }
        pub fn first(&self) -> Option<usize> {
            self.0.lock().unwrap_or_else(|e| e.into_inner()).first().copied()
        }
    }
}

unsafe extern "C" fn setup_connected(_: *mut c_void, conn: *mut DocaCcConnection, ok: u8) {
    if ok != 0 {
        SERVER_CONNS.push(conn as usize);
    }
}

unsafe extern "C" fn setup_msg(_: *mut c_void, _: *mut u8, _: u64, _: *mut DocaCcConnection) {}

unsafe extern "C" fn setup_task(task: *mut DocaTask, _: DocaData, _: DocaData) {
    // SAFETY: the task's own handle.
    unsafe { doca_task_free(task) };
}

/// Builds the world through the C functions; returns the live handles by kind.
///
/// # Safety
/// Single-threaded; called once.
unsafe fn setup(g: &Gen, name: &CStr) {
    // SAFETY: every pointer below is this function's own memory or a handle just made.
    unsafe {
        let add = |k: K, h: usize| g.live.borrow_mut()[k as usize].push(h);
        let stale = |k: K, h: usize| g.stale.borrow_mut()[k as usize].push(h);
        // devices
        let mut list: *mut *mut DocaDevinfo = std::ptr::null_mut();
        let mut n = 0u32;
        must(doca_devinfo_create_list(&mut list, &mut n), 0, "devinfo list");
        g.lists.borrow_mut().0.push(list as usize);
        let (mut dpu, mut host) = (std::ptr::null_mut(), std::ptr::null_mut());
        for i in 0..n as usize {
            let info = *list.add(i);
            add(K::Devinfo, info as usize);
            let mut eq = 0u8;
            must(doca_devinfo_is_equal_pci_addr(info, c"03:00.0".as_ptr(), &mut eq), 0, "pci compare");
            if eq == 1 {
                must(doca_dev_open(info, &mut dpu), 0, "open the DPU device");
            }
            must(doca_devinfo_is_equal_pci_addr(info, c"b1:00.0".as_ptr(), &mut eq), 0, "pci compare");
            if eq == 1 {
                must(doca_dev_open(info, &mut host), 0, "open the host device");
            }
            must(doca_devinfo_is_equal_pci_addr(info, c"b1:00.1".as_ptr(), &mut eq), 0, "pci compare");
            if eq == 1 {
                // opened and closed: a stale device handle
                let mut d = std::ptr::null_mut();
                must(doca_dev_open(info, &mut d), 0, "open b1:00.1");
                must(doca_dev_close(d), 0, "close b1:00.1");
                stale(K::Dev, d as usize);
            }
        }
        if dpu.is_null() || host.is_null() {
            must(-1, 0, "the topology has 03:00.0 and b1:00.0");
        }
        add(K::Dev, dpu as usize);
        add(K::Dev, host as usize);
        let mut reps: *mut *mut DocaDevinfoRep = std::ptr::null_mut();
        must(doca_devinfo_rep_create_list(dpu, 0, &mut reps, &mut n), 0, "representors");
        g.rep_lists.borrow_mut().0.push(reps as usize);
        let mut rep = std::ptr::null_mut();
        for i in 0..n as usize {
            let info = *reps.add(i);
            add(K::DevinfoRep, info as usize);
            let mut eq = 0u8;
            must(doca_devinfo_rep_is_equal_pci_addr(info, c"b1:00.0".as_ptr(), &mut eq), 0, "rep compare");
            if eq == 1 {
                must(doca_dev_rep_open(info, &mut rep), 0, "open the representor");
                let mut old = std::ptr::null_mut();
                must(doca_dev_rep_open(info, &mut old), 0, "open the representor again");
                must(doca_dev_rep_close(old), 0, "close it");
                stale(K::DevRep, old as usize);
            }
        }
        add(K::DevRep, rep as usize);
        g.devices.set((dpu as usize, host as usize, rep as usize));
        // engines
        let (mut spe, mut cpe, mut old) = (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        must(doca_pe_create(&mut spe), 0, "pe");
        must(doca_pe_create(&mut cpe), 0, "pe");
        must(doca_pe_create(&mut old), 0, "pe");
        must(doca_pe_destroy(old), 0, "pe destroy");
        stale(K::Pe, old as usize);
        add(K::Pe, spe as usize);
        add(K::Pe, cpe as usize);
        // a DMA context destroyed at once (stale), then a live one running on the host engine
        let mut d = std::ptr::null_mut();
        must(doca_dma_create(host, &mut d), 0, "dma");
        must(doca_dma_destroy(d), 0, "dma destroy");
        stale(K::Dma, d as usize);
        let mut dma = std::ptr::null_mut();
        must(doca_dma_create(host, &mut dma), 0, "dma");
        must(doca_dma_task_memcpy_set_conf(dma, Some(cb_task), Some(cb_task), 8), 0, "dma conf");
        let dctx = doca_dma_as_ctx(dma);
        must(doca_pe_connect_ctx(cpe, dctx), 0, "dma connect");
        must(doca_ctx_start(dctx), 0, "dma start");
        add(K::Dma, dma as usize);
        add(K::Ctx, dctx as usize);
        // clocks one destroyed at once (stale), one live on the host function
        let mut c = std::ptr::null_mut();
        must(doca_clock_create(host, &mut c), 0, "clock");
        must(doca_clock_destroy(c), 0, "clock destroy");
        stale(K::Clock, c as usize);
        let mut clock = std::ptr::null_mut();
        must(doca_clock_create(host, &mut clock), 0, "clock");
        add(K::Clock, clock as usize);
        // mmap advise one destroyed at once (stale), one running on the host engine
        let mut a = std::ptr::null_mut();
        must(doca_mmap_advise_create(host, &mut a), 0, "mmap advise");
        must(doca_mmap_advise_destroy(a), 0, "mmap advise destroy");
        stale(K::Advise, a as usize);
        let mut advise = std::ptr::null_mut();
        must(doca_mmap_advise_create(host, &mut advise), 0, "mmap advise");
        must(
            doca_mmap_advise_task_invalidate_cache_set_conf(advise, Some(cb_task), Some(cb_task), 8),
            0,
            "advise conf",
        );
        let actx = doca_mmap_advise_as_ctx(advise);
        must(doca_pe_connect_ctx(cpe, actx), 0, "advise connect");
        must(doca_ctx_start(actx), 0, "advise start");
        add(K::Advise, advise as usize);
        add(K::Ctx, actx as usize);
        let mut dt = std::ptr::null_mut();
        must(
            doca_dma_task_memcpy_alloc_init(
                dma,
                std::ptr::null(),
                std::ptr::null_mut(),
                DocaData { u64: 0 },
                &mut dt,
            ),
            0,
            "dma task",
        );
        add(K::Task, dt as usize);
        // doca_graph: a graph destroyed at once (stale), then a live one on the host engine
        // (a DMA node running the DMA task above, then a user node) with one instance, and a
        // destroyed instance (stale)
        let mut gr = std::ptr::null_mut();
        must(doca_graph_create(cpe, &mut gr), 0, "graph");
        must(doca_graph_destroy(gr), 0, "graph destroy");
        stale(K::Graph, gr as usize);
        let mut graph = std::ptr::null_mut();
        must(doca_graph_create(cpe, &mut graph), 0, "graph");
        let (mut dn, mut un) = (std::ptr::null_mut(), std::ptr::null_mut());
        must(doca_graph_node_create_from_ctx(graph, dctx, &mut dn), 0, "graph ctx node");
        must(doca_graph_node_create_from_user(graph, Some(cb_user_node), &mut un), 0, "graph user node");
        must(doca_graph_add_dependency(graph, dn, un), 0, "graph dependency");
        must(doca_graph_set_conf(graph, Some(cb_graph), Some(cb_graph), 4), 0, "graph conf");
        must(doca_graph_start(graph), 0, "graph start");
        let mut gi = std::ptr::null_mut();
        must(doca_graph_instance_create(graph, &mut gi), 0, "graph instance");
        must(doca_graph_instance_destroy(gi), 0, "graph instance destroy");
        stale(K::GraphInstance, gi as usize);
        let mut inst = std::ptr::null_mut();
        must(doca_graph_instance_create(graph, &mut inst), 0, "graph instance");
        must(doca_graph_instance_set_ctx_node_data(inst, dn, dt), 0, "graph ctx node data");
        must(
            // Any cookie but NULL (refused: invalid input); the node never reads it.
            doca_graph_instance_set_user_node_data(inst, un, inst.cast()),
            0,
            "graph user node data",
        );
        add(K::Graph, graph as usize);
        add(K::GraphNode, dn as usize);
        add(K::GraphNode, un as usize);
        add(K::GraphInstance, inst as usize);
        // doca_sha: a SHA context destroyed at once (stale), then a live one on the host
        // engine with a hash task and a partial-hash task
        let mut sh = std::ptr::null_mut();
        must(doca_sha_create(host, &mut sh), 0, "sha");
        must(doca_sha_destroy(sh), 0, "sha destroy");
        stale(K::Sha, sh as usize);
        let mut sha = std::ptr::null_mut();
        must(doca_sha_create(host, &mut sha), 0, "sha");
        must(doca_sha_task_hash_set_conf(sha, Some(cb_task), Some(cb_task), 3), 0, "sha hash conf");
        must(
            doca_sha_task_partial_hash_set_conf(sha, Some(cb_task), Some(cb_task), 3),
            0,
            "sha partial conf",
        );
        let shctx = doca_sha_as_ctx(sha);
        must(doca_pe_connect_ctx(cpe, shctx), 0, "sha connect");
        must(doca_ctx_start(shctx), 0, "sha start");
        add(K::Sha, sha as usize);
        add(K::Ctx, shctx as usize);
        for partial in [false, true] {
            let mut st = std::ptr::null_mut();
            let (null_src, null_dst, none) = (std::ptr::null(), std::ptr::null_mut(), DocaData { u64: 0 });
            let code = if partial {
                doca_sha_task_partial_hash_alloc_init(sha, 1, null_src, null_dst, none, &mut st)
            } else {
                doca_sha_task_hash_alloc_init(sha, 1, null_src, null_dst, none, &mut st)
            };
            must(code, 0, "sha task");
            add(K::Task, st as usize);
        }
        // doca_aes_gcm: a context destroyed at once (stale), then a live one on the host
        // engine with both task types, a key (and a destroyed one), and a task of each type
        let mut ag = std::ptr::null_mut();
        must(doca_aes_gcm_create(host, &mut ag), 0, "aes_gcm");
        must(doca_aes_gcm_destroy(ag), 0, "aes_gcm destroy");
        stale(K::AesGcm, ag as usize);
        let mut gcm = std::ptr::null_mut();
        must(doca_aes_gcm_create(host, &mut gcm), 0, "aes_gcm");
        must(
            doca_aes_gcm_task_encrypt_set_conf(gcm, Some(cb_task), Some(cb_task), 4),
            0,
            "aes_gcm encrypt conf",
        );
        must(
            doca_aes_gcm_task_decrypt_set_conf(gcm, Some(cb_task), Some(cb_task), 4),
            0,
            "aes_gcm decrypt conf",
        );
        let agctx = doca_aes_gcm_as_ctx(gcm);
        must(doca_pe_connect_ctx(cpe, agctx), 0, "aes_gcm connect");
        must(doca_ctx_start(agctx), 0, "aes_gcm start");
        add(K::AesGcm, gcm as usize);
        add(K::Ctx, agctx as usize);
        let raw = [7u8; 32];
        let (mut gone, mut key) = (std::ptr::null_mut(), std::ptr::null_mut());
        must(doca_aes_gcm_key_create(gcm, raw.as_ptr().cast(), 2, &mut gone), 0, "aes_gcm key");
        must(doca_aes_gcm_key_destroy(gone), 0, "aes_gcm key destroy");
        stale(K::AesGcmKey, gone as usize);
        must(doca_aes_gcm_key_create(gcm, raw.as_ptr().cast(), 1, &mut key), 0, "aes_gcm key");
        add(K::AesGcmKey, key as usize);
        for decrypt in [false, true] {
            let mut at = std::ptr::null_mut();
            let (null_src, null_dst, none) = (std::ptr::null(), std::ptr::null_mut(), DocaData { u64: 0 });
            let iv = [0u8; 12];
            let code = if decrypt {
                doca_aes_gcm_task_decrypt_alloc_init(
                    gcm,
                    null_src,
                    null_dst,
                    key,
                    iv.as_ptr(),
                    12,
                    12,
                    0,
                    none,
                    &mut at,
                )
            } else {
                doca_aes_gcm_task_encrypt_alloc_init(
                    gcm,
                    null_src,
                    null_dst,
                    key,
                    iv.as_ptr(),
                    12,
                    16,
                    0,
                    none,
                    &mut at,
                )
            };
            must(code, 0, "aes_gcm task");
            add(K::Task, at as usize);
        }
        // doca_compress: a context destroyed at once (stale), then a live one on the host
        // engine with every task type configured and one task of each
        let mut cm = std::ptr::null_mut();
        must(doca_compress_create(host, &mut cm), 0, "compress");
        must(doca_compress_destroy(cm), 0, "compress destroy");
        stale(K::Compress, cm as usize);
        let mut cmp = std::ptr::null_mut();
        must(doca_compress_create(host, &mut cmp), 0, "compress");
        must(
            doca_compress_task_compress_deflate_set_conf(cmp, Some(cb_task), Some(cb_task), 4),
            0,
            "compress conf",
        );
        must(
            doca_compress_task_decompress_deflate_set_conf(cmp, Some(cb_task), Some(cb_task), 4),
            0,
            "compress conf",
        );
        must(
            doca_compress_task_decompress_lz4_set_conf(cmp, Some(cb_task), Some(cb_task), 4),
            0,
            "compress conf",
        );
        must(
            doca_compress_task_decompress_lz4_stream_set_conf(cmp, Some(cb_task), Some(cb_task), 4),
            0,
            "compress conf",
        );
        must(
            doca_compress_task_decompress_lz4_block_set_conf(cmp, Some(cb_task), Some(cb_task), 4),
            0,
            "compress conf",
        );
        let cmctx = doca_compress_as_ctx(cmp);
        must(doca_pe_connect_ctx(cpe, cmctx), 0, "compress connect");
        must(doca_ctx_start(cmctx), 0, "compress start");
        add(K::Compress, cmp as usize);
        add(K::Ctx, cmctx as usize);
        {
            let (null_src, null_dst, none) = (std::ptr::null(), std::ptr::null_mut(), DocaData { u64: 0 });
            let mut ts = [std::ptr::null_mut(); 5];
            must(
                doca_compress_task_compress_deflate_alloc_init(cmp, null_src, null_dst, none, &mut ts[0]),
                0,
                "compress task",
            );
            must(
                doca_compress_task_decompress_deflate_alloc_init(cmp, null_src, null_dst, none, &mut ts[1]),
                0,
                "compress task",
            );
            must(
                doca_compress_task_decompress_lz4_alloc_init(cmp, null_src, null_dst, none, &mut ts[2]),
                0,
                "compress task",
            );
            must(
                doca_compress_task_decompress_lz4_stream_alloc_init(
                    cmp, 1, 0, null_src, null_dst, none, &mut ts[3],
                ),
                0,
                "compress task",
            );
            must(
                doca_compress_task_decompress_lz4_block_alloc_init(cmp, null_src, null_dst, none, &mut ts[4]),
                0,
                "compress task",
            );
            for t in ts {
                add(K::Task, t as usize);
            }
        }
        // doca_erasure_coding: a context destroyed at once (stale), then a live one on the host
        // engine with every task type configured and one task of each; a coding matrix, a
        // recover matrix, and a matrix destroyed at once (stale)
        let mut ecd = std::ptr::null_mut();
        must(doca_ec_create(host, &mut ecd), 0, "ec");
        must(doca_ec_destroy(ecd), 0, "ec destroy");
        stale(K::Ec, ecd as usize);
        let mut ec = std::ptr::null_mut();
        must(doca_ec_create(host, &mut ec), 0, "ec");
        must(doca_ec_task_create_set_conf(ec, Some(cb_task), Some(cb_task), 4), 0, "ec create conf");
        must(doca_ec_task_update_set_conf(ec, Some(cb_task), Some(cb_task), 4), 0, "ec update conf");
        must(doca_ec_task_recover_set_conf(ec, Some(cb_task), Some(cb_task), 4), 0, "ec recover conf");
        must(doca_ec_task_galois_mul_set_conf(ec, Some(cb_task), Some(cb_task), 4), 0, "ec galois conf");
        let ecctx = doca_ec_as_ctx(ec);
        must(doca_pe_connect_ctx(cpe, ecctx), 0, "ec connect");
        must(doca_ctx_start(ecctx), 0, "ec start");
        add(K::Ec, ec as usize);
        add(K::Ctx, ecctx as usize);
        let (mut coding, mut gone, mut rec) =
            (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        must(doca_ec_matrix_create(ec, 1, 4, 2, &mut coding), 0, "ec matrix");
        must(doca_ec_matrix_create(ec, 2, 3, 3, &mut gone), 0, "ec matrix");
        must(doca_ec_matrix_destroy(gone), 0, "ec matrix destroy");
        stale(K::EcMatrix, gone as usize);
        let mut missing = [1u32, 4];
        must(
            doca_ec_matrix_create_recover(ec, coding, missing.as_mut_ptr(), 2, &mut rec),
            0,
            "ec recover matrix",
        );
        add(K::EcMatrix, coding as usize);
        add(K::EcMatrix, rec as usize);
        {
            let none = DocaData { u64: 0 };
            let (ns, nd) = (std::ptr::null(), std::ptr::null_mut());
            let mut t = std::ptr::null_mut();
            must(doca_ec_task_create_allocate_init(ec, coding, ns, nd, none, &mut t), 0, "ec task");
            add(K::Task, t as usize);
            must(doca_ec_task_update_allocate_init(ec, std::ptr::null(), ns, nd, none, &mut t), 0, "ec task");
            add(K::Task, t as usize);
            must(doca_ec_task_recover_allocate_init(ec, rec, ns, nd, none, &mut t), 0, "ec task");
            add(K::Task, t as usize);
            must(doca_ec_task_galois_mul_allocate_init(ec, coding, ns, nd, none, &mut t), 0, "ec task");
            add(K::Task, t as usize);
        }
        // doca_rdma: a context destroyed at once (stale), then a live one running on the host
        // engine with every task type configured, two connections exported and connected to
        // each other (a loopback in this process), and one task of each type on the first;
        // a context stopped and destroyed after exporting a connection leaves that
        // connection's handle orphaned (live, refused beside any live context)
        let mut rd = std::ptr::null_mut();
        must(doca_rdma_create(host, &mut rd), 0, "rdma");
        must(doca_rdma_destroy(rd), 0, "rdma destroy");
        stale(K::Rdma, rd as usize);
        let mut rdma = std::ptr::null_mut();
        must(doca_rdma_create(host, &mut rdma), 0, "rdma");
        let cb = Some(cb_task as unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData));
        must(doca_rdma_task_send_set_conf(rdma, cb, cb, 4), 0, "rdma send conf");
        must(doca_rdma_task_send_imm_set_conf(rdma, cb, cb, 4), 0, "rdma send imm conf");
        must(doca_rdma_task_receive_set_conf(rdma, cb, cb, 4), 0, "rdma receive conf");
        must(doca_rdma_task_read_set_conf(rdma, cb, cb, 4), 0, "rdma read conf");
        must(doca_rdma_task_write_set_conf(rdma, cb, cb, 4), 0, "rdma write conf");
        must(doca_rdma_task_write_imm_set_conf(rdma, cb, cb, 4), 0, "rdma write imm conf");
        must(doca_rdma_task_atomic_cmp_swp_set_conf(rdma, cb, cb, 4), 0, "rdma cmp swp conf");
        must(doca_rdma_task_atomic_fetch_add_set_conf(rdma, cb, cb, 4), 0, "rdma fetch add conf");
        must(doca_rdma_set_max_num_connections(rdma, 4), 0, "rdma max connections");
        let rdctx = doca_rdma_as_ctx(rdma);
        must(doca_pe_connect_ctx(cpe, rdctx), 0, "rdma connect");
        must(doca_ctx_start(rdctx), 0, "rdma start");
        add(K::Rdma, rdma as usize);
        add(K::Ctx, rdctx as usize);
        let mut conns = [std::ptr::null_mut(); 2];
        let mut descs = [(std::ptr::null(), 0usize); 2];
        for (c, d) in conns.iter_mut().zip(descs.iter_mut()) {
            must(doca_rdma_export(rdma, &mut d.0, &mut d.1, c), 0, "rdma export");
            add(K::RdmaConn, *c as usize);
        }
        must(doca_rdma_connect(rdma, descs[1].0, descs[1].1, conns[0]), 0, "rdma loopback connect");
        must(doca_rdma_connect(rdma, descs[0].0, descs[0].1, conns[1]), 0, "rdma loopback connect");
        {
            let (ns, nd, none) = (std::ptr::null(), std::ptr::null_mut(), DocaData { u64: 0 });
            let c = conns[0];
            let mut t = [std::ptr::null_mut(); 8];
            must(doca_rdma_task_send_allocate_init(rdma, c, ns, none, &mut t[0]), 0, "rdma task");
            must(doca_rdma_task_send_imm_allocate_init(rdma, c, ns, 7, none, &mut t[1]), 0, "rdma task");
            must(doca_rdma_task_receive_allocate_init(rdma, nd, none, &mut t[2]), 0, "rdma task");
            must(doca_rdma_task_read_allocate_init(rdma, c, ns, nd, none, &mut t[3]), 0, "rdma task");
            must(doca_rdma_task_write_allocate_init(rdma, c, ns, nd, none, &mut t[4]), 0, "rdma task");
            must(doca_rdma_task_write_imm_allocate_init(rdma, c, ns, nd, 7, none, &mut t[5]), 0, "rdma task");
            must(
                doca_rdma_task_atomic_cmp_swp_allocate_init(rdma, c, nd, nd, 1, 2, none, &mut t[6]),
                0,
                "rdma task",
            );
            must(
                doca_rdma_task_atomic_fetch_add_allocate_init(rdma, c, nd, nd, 1, none, &mut t[7]),
                0,
                "rdma task",
            );
            for t in t {
                add(K::Task, t as usize);
            }
        }
        let mut orphan_ctx = std::ptr::null_mut();
        must(doca_rdma_create(host, &mut orphan_ctx), 0, "rdma");
        let octx = doca_rdma_as_ctx(orphan_ctx);
        must(doca_pe_connect_ctx(cpe, octx), 0, "rdma connect");
        must(doca_ctx_start(octx), 0, "rdma start");
        let (mut od, mut on, mut orphan) = (std::ptr::null(), 0usize, std::ptr::null_mut());
        must(doca_rdma_export(orphan_ctx, &mut od, &mut on, &mut orphan), 0, "rdma export");
        let rc = doca_ctx_stop(octx);
        if rc != 0 && rc != doca_core::Error::InProgress.code() {
            must(rc, 0, "rdma stop");
        }
        let mut state = 1u32;
        until(&[cpe], "the orphan's context idle", || {
            doca_ctx_get_state(octx, &mut state);
            state == 0
        });
        must(doca_rdma_destroy(orphan_ctx), 0, "rdma destroy");
        stale(K::Rdma, orphan_ctx as usize);
        add(K::RdmaConn, orphan as usize);
        // doca_rdma's shared receive queues: one destroyed at once (stale); one started on
        // the host engine, and an RDMA context created with it, started (no CPU receives)
        let mut sq = std::ptr::null_mut();
        must(doca_rdma_srq_create(host, &mut sq), 0, "rdma srq");
        must(doca_rdma_srq_destroy(sq), 0, "rdma srq destroy");
        stale(K::RdmaSrq, sq as usize);
        let mut srq = std::ptr::null_mut();
        must(doca_rdma_srq_create(host, &mut srq), 0, "rdma srq");
        let sctx = doca_rdma_srq_as_ctx(srq);
        must(doca_pe_connect_ctx(cpe, sctx), 0, "rdma srq connect");
        must(doca_ctx_start(sctx), 0, "rdma srq start");
        add(K::RdmaSrq, srq as usize);
        add(K::Ctx, sctx as usize);
        let mut on_srq = std::ptr::null_mut();
        must(doca_rdma_create_with_srq(host, srq, &mut on_srq), 0, "rdma with srq");
        must(doca_rdma_task_send_set_conf(on_srq, cb, cb, 4), 0, "rdma with srq send conf");
        let octx = doca_rdma_as_ctx(on_srq);
        must(doca_pe_connect_ctx(cpe, octx), 0, "rdma with srq connect");
        must(doca_ctx_start(octx), 0, "rdma with srq start");
        add(K::Rdma, on_srq as usize);
        add(K::Ctx, octx as usize);
        // doca_sync_event: one destroyed at once (stale); one started standalone and exported,
        // one imported from that export (in this process) and started; one a context running
        // on the host engine with every task type configured and one task of each
        let mut se = std::ptr::null_mut();
        must(doca_sync_event_create(&mut se), 0, "sync event");
        must(doca_sync_event_destroy(se), 0, "sync event destroy");
        stale(K::SyncEvent, se as usize);
        let mut exp = std::ptr::null_mut();
        must(doca_sync_event_create(&mut exp), 0, "sync event");
        must(doca_sync_event_add_publisher_location_remote_pci(exp), 0, "sync event location");
        must(doca_sync_event_start(exp), 0, "sync event start");
        let (mut blob, mut blob_len) = (std::ptr::null(), 0usize);
        must(
            doca_sync_event_export_to_remote_pci(exp, host, &mut blob, &mut blob_len),
            0,
            "sync event export",
        );
        let mut imp = std::ptr::null_mut();
        must(doca_sync_event_create_from_export(dpu, blob, blob_len, &mut imp), 0, "sync event import");
        must(doca_sync_event_start(imp), 0, "sync event import start");
        add(K::SyncEvent, exp as usize);
        add(K::SyncEvent, imp as usize);
        let mut sev = std::ptr::null_mut();
        must(doca_sync_event_create(&mut sev), 0, "sync event");
        let cb = Some(cb_task as unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData));
        must(doca_sync_event_task_get_set_conf(sev, cb, cb, 2), 0, "se get conf");
        must(doca_sync_event_task_notify_set_set_conf(sev, cb, cb, 2), 0, "se set conf");
        must(doca_sync_event_task_notify_add_set_conf(sev, cb, cb, 2), 0, "se add conf");
        must(doca_sync_event_task_wait_gt_set_conf(sev, cb, cb, 2), 0, "se gt conf");
        must(doca_sync_event_task_wait_eq_set_conf(sev, cb, cb, 2), 0, "se eq conf");
        must(doca_sync_event_task_wait_neq_set_conf(sev, cb, cb, 2), 0, "se neq conf");
        let sectx = doca_sync_event_as_ctx(sev);
        must(doca_pe_connect_ctx(cpe, sectx), 0, "se connect");
        must(doca_ctx_start(sectx), 0, "se start");
        add(K::SyncEvent, sev as usize);
        add(K::Ctx, sectx as usize);
        let none = DocaData { u64: 0 };
        let mut tasks = [std::ptr::null_mut(); 6];
        must(doca_sync_event_task_get_alloc_init(sev, g.scratch_slot(), none, &mut tasks[0]), 0, "se task");
        must(doca_sync_event_task_notify_set_alloc_init(sev, 1, none, &mut tasks[1]), 0, "se task");
        must(
            doca_sync_event_task_notify_add_alloc_init(sev, 1, g.scratch_slot(), none, &mut tasks[2]),
            0,
            "se task",
        );
        must(doca_sync_event_task_wait_gt_alloc_init(sev, 0, 0xFF, none, &mut tasks[3]), 0, "se task");
        must(doca_sync_event_task_wait_eq_alloc_init(sev, 0, 0, none, &mut tasks[4]), 0, "se task");
        must(doca_sync_event_task_wait_neq_alloc_init(sev, 0, u64::MAX, none, &mut tasks[5]), 0, "se task");
        for t in tasks {
            add(K::Task, t as usize);
        }
        // a server and a client destroyed at once (stale), then the live ones
        let mut s = std::ptr::null_mut();
        must(doca_cc_server_create(dpu, rep, name.as_ptr(), &mut s), 0, "server");
        stale(K::Ctx, doca_cc_server_as_ctx(s) as usize);
        must(doca_cc_server_destroy(s), 0, "server destroy");
        stale(K::Server, s as usize);
        let mut c = std::ptr::null_mut();
        must(doca_cc_client_create(host, name.as_ptr(), &mut c), 0, "client");
        must(doca_cc_client_destroy(c), 0, "client destroy");
        stale(K::Client, c as usize);
        let mut server = std::ptr::null_mut();
        must(doca_cc_server_create(dpu, rep, name.as_ptr(), &mut server), 0, "server");
        let sctx = doca_cc_server_as_ctx(server);
        must(doca_pe_connect_ctx(spe, sctx), 0, "connect the server");
        must(doca_cc_server_task_send_set_conf(server, Some(cb_task), Some(cb_task), 16), 0, "server conf");
        must(doca_cc_server_event_msg_recv_register(server, Some(setup_msg)), 0, "server recv");
        must(
            doca_cc_server_event_connection_register(server, Some(setup_connected), Some(cb_conn)),
            0,
            "server events",
        );
        must(
            doca_cc_server_event_consumer_register(server, Some(cb_consumer), Some(cb_consumer)),
            0,
            "server consumers",
        );
        must(doca_ctx_set_state_changed_cb(sctx, Some(cb_state)), 0, "server state cb");
        must(doca_ctx_start(sctx), 0, "server start");
        let mut client = std::ptr::null_mut();
        must(doca_cc_client_create(host, name.as_ptr(), &mut client), 0, "client");
        let cctx = doca_cc_client_as_ctx(client);
        must(doca_pe_connect_ctx(cpe, cctx), 0, "connect the client");
        must(
            doca_cc_client_task_send_set_conf(client, Some(setup_task), Some(setup_task), 16),
            0,
            "client conf",
        );
        must(doca_cc_client_event_msg_recv_register(client, Some(cb_msg)), 0, "client recv");
        must(
            doca_cc_client_event_consumer_register(client, Some(cb_consumer), Some(cb_consumer)),
            0,
            "client consumers",
        );
        must(doca_ctx_start(cctx), doca_core::Error::InProgress.code(), "client start");
        let mut state = 0u32;
        until(&[spe, cpe], "the client running", || {
            doca_ctx_get_state(cctx, &mut state);
            state == 2 && SERVER_CONNS.first().is_some()
        });
        add(K::Server, server as usize);
        add(K::Client, client as usize);
        add(K::Ctx, sctx as usize);
        add(K::Ctx, cctx as usize);
        let mut conn = std::ptr::null_mut();
        must(doca_cc_client_get_connection(client, &mut conn), 0, "client connection");
        add(K::Conn, conn as usize);
        let sconn = SERVER_CONNS.first().expect("a server connection") as *mut DocaCcConnection;
        add(K::Conn, sconn as usize);
        // tasks: one live on each side, one freed
        let mut t = std::ptr::null_mut();
        must(
            doca_cc_client_task_send_alloc_init(client, conn, c"hello".as_ptr().cast(), 5, &mut t),
            0,
            "task",
        );
        add(K::Task, t as usize);
        must(
            doca_cc_server_task_send_alloc_init(server, sconn, c"hello".as_ptr().cast(), 5, &mut t),
            0,
            "task",
        );
        add(K::Task, t as usize);
        must(doca_cc_client_task_send_alloc_init(client, conn, c"bye".as_ptr().cast(), 3, &mut t), 0, "task");
        doca_task_free(t);
        stale(K::Task, t as usize);
        // memory: a started map over this program's region, an inventory and buffers
        let mut map = std::ptr::null_mut();
        must(doca_mmap_create(&mut map), 0, "mmap");
        must(doca_mmap_set_memrange(map, g.region.cast(), REGION_LEN), 0, "memrange");
        must(doca_mmap_set_permissions(map, 0x21), 0, "permissions");
        must(doca_mmap_add_dev(map, host), 0, "add dev");
        must(doca_mmap_add_dev(map, dpu), 0, "add dev");
        must(doca_mmap_start(map), 0, "mmap start");
        add(K::Mmap, map as usize);
        let mut gone = std::ptr::null_mut();
        must(doca_mmap_create(&mut gone), 0, "mmap");
        must(doca_mmap_destroy(gone), 0, "mmap destroy");
        stale(K::Mmap, gone as usize);
        let mut inv = std::ptr::null_mut();
        must(doca_buf_inventory_create(64, &mut inv), 0, "inventory");
        must(doca_buf_inventory_start(inv), 0, "inventory start");
        add(K::Inventory, inv as usize);
        let mut old_inv = std::ptr::null_mut();
        must(doca_buf_inventory_create(4, &mut old_inv), 0, "inventory");
        must(doca_buf_inventory_destroy(old_inv), 0, "inventory destroy");
        stale(K::Inventory, old_inv as usize);
        let base = g.region;
        for i in 0..4 {
            let mut b = std::ptr::null_mut();
            // even ones empty (to post), odd ones full of data (to send)
            let get = if i % 2 == 0 {
                doca_buf_inventory_buf_get_by_addr
            } else {
                doca_buf_inventory_buf_get_by_data
            };
            must(get(inv, map, base.add(i * 512).cast(), 512, &mut b), 0, "buf");
            add(K::Buf, b as usize);
        }
        let mut b = std::ptr::null_mut();
        must(doca_buf_inventory_buf_get_by_data(inv, map, base.add(4096).cast(), 64, &mut b), 0, "buf");
        must(doca_buf_dec_refcount(b, std::ptr::null_mut()), 0, "buf back");
        stale(K::Buf, b as usize);
        // the fast path: a consumer on the server's connection, a producer on the client's
        let mut consumer = std::ptr::null_mut();
        must(doca_cc_consumer_create(sconn, map, &mut consumer), 0, "consumer");
        must(doca_pe_connect_ctx(spe, doca_cc_consumer_as_ctx(consumer)), 0, "connect the consumer");
        must(
            doca_cc_consumer_task_post_recv_set_conf(consumer, Some(cb_task), Some(cb_task), 8),
            0,
            "consumer conf",
        );
        let r = doca_ctx_start(doca_cc_consumer_as_ctx(consumer));
        if r != 0 && r != doca_core::Error::InProgress.code() {
            must(r, 0, "consumer start");
        }
        add(K::Consumer, consumer as usize);
        add(K::Ctx, doca_cc_consumer_as_ctx(consumer) as usize);
        let mut producer = std::ptr::null_mut();
        must(doca_cc_producer_create(conn, &mut producer), 0, "producer");
        must(doca_pe_connect_ctx(cpe, doca_cc_producer_as_ctx(producer)), 0, "connect the producer");
        must(
            doca_cc_producer_task_send_set_conf(producer, Some(cb_task), Some(cb_task), 8),
            0,
            "producer conf",
        );
        let r = doca_ctx_start(doca_cc_producer_as_ctx(producer));
        if r != 0 && r != doca_core::Error::InProgress.code() {
            must(r, 0, "producer start");
        }
        add(K::Producer, producer as usize);
        add(K::Ctx, doca_cc_producer_as_ctx(producer) as usize);
        let (mut k2, mut p2) = (std::ptr::null_mut(), std::ptr::null_mut());
        must(doca_cc_consumer_create(sconn, map, &mut k2), 0, "consumer");
        must(doca_cc_consumer_destroy(k2), 0, "consumer destroy");
        stale(K::Consumer, k2 as usize);
        must(doca_cc_producer_create(conn, &mut p2), 0, "producer");
        must(doca_cc_producer_destroy(p2), 0, "producer destroy");
        stale(K::Producer, p2 as usize);
        until(&[spe, cpe], "the consumer and producer started", || {
            let (mut a, mut b) = (0u32, 0u32);
            doca_ctx_get_state(doca_cc_consumer_as_ctx(consumer), &mut a);
            doca_ctx_get_state(doca_cc_producer_as_ctx(producer), &mut b);
            a == 2 && b == 2
        });
        let mut pr = std::ptr::null_mut();
        let bufs = g.live.borrow()[K::Buf as usize].clone();
        must(
            doca_cc_consumer_task_post_recv_alloc_init(consumer, bufs[0] as *mut DocaBuf, &mut pr),
            0,
            "post recv",
        );
        add(K::Task, pr as usize);
        let mut ps = std::ptr::null_mut();
        let mut id = 0u32;
        must(doca_cc_consumer_get_id(consumer, &mut id), 0, "consumer id");
        until(&[spe, cpe], "the consumer announced", || {
            doca_cc_producer_task_send_alloc_init(producer, bufs[1] as *mut DocaBuf, id, &mut ps) == 0
        });
        add(K::Task, ps as usize);
        // legacy endpoints: a service and a client connected to it, one destroyed
        let (mut svc, mut cli, mut gone_ep) =
            (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
        must(doca_comm_channel_ep_create(&mut svc), 0, "ep");
        must(doca_comm_channel_ep_set_device(svc, dpu), 0, "ep dev");
        must(doca_comm_channel_ep_set_device_rep(svc, rep), 0, "ep rep");
        let ep_name = format!("{}-ep\0", name.to_string_lossy());
        must(doca_comm_channel_ep_listen(svc, ep_name.as_ptr().cast()), 0, "listen");
        must(doca_comm_channel_ep_create(&mut cli), 0, "ep");
        must(doca_comm_channel_ep_set_device(cli, host), 0, "ep dev");
        let mut peer = std::ptr::null_mut();
        must(doca_comm_channel_ep_connect(cli, ep_name.as_ptr().cast(), &mut peer), 0, "connect");
        add(K::Ep, svc as usize);
        add(K::Ep, cli as usize);
        add(K::Addr, peer as usize);
        must(doca_comm_channel_ep_create(&mut gone_ep), 0, "ep");
        must(doca_comm_channel_ep_destroy(gone_ep), 0, "ep destroy");
        stale(K::Ep, gone_ep as usize);
        // the argument parser with one parameter registered, and one destroyed with an
        // earlier parser (a case run from a callback of the set-up above may have made a
        // parser already: a second init is BAD_STATE, so that one goes first)
        doca_argp_destroy();
        must(doca_argp_init(c"capi_fuzz".as_ptr(), std::ptr::null_mut()), 0, "argp");
        let mut p = std::ptr::null_mut();
        must(doca_argp_param_create(&mut p), 0, "param");
        doca_argp_param_set_long_name(p, c"gone".as_ptr());
        doca_argp_param_set_description(p, c"gone".as_ptr());
        doca_argp_param_set_callback(p, Some(cb_param));
        doca_argp_param_set_type(p, 3);
        must(doca_argp_register_param(p), 0, "register");
        must(doca_argp_destroy(), 0, "argp destroy");
        stale(K::Param, p as usize);
        must(doca_argp_init(c"capi_fuzz".as_ptr(), std::ptr::null_mut()), 0, "argp");
        must(doca_argp_param_create(&mut p), 0, "param");
        doca_argp_param_set_long_name(p, c"fuzz".as_ptr());
        doca_argp_param_set_description(p, c"a flag".as_ptr());
        doca_argp_param_set_callback(p, Some(cb_param));
        doca_argp_param_set_type(p, 2);
        must(doca_argp_register_param(p), 0, "register");
        add(K::Param, p as usize);
        must(doca_argp_param_create(&mut p), 0, "param");
        add(K::Param, p as usize);
    }
}

/// The fixed callback scenarios (after the random cases).
mod scenes {
    use super::*;

    thread_local! {
        static SERVER: Cell<usize> = const { Cell::new(0) };
        static DESTROYED: Cell<i32> = const { Cell::new(-1) };
        static SUBMITS: Cell<u32> = const { Cell::new(0) };
        static SEEN: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
        // doca_graph
        static GRAPH: Cell<usize> = const { Cell::new(0) };
        static GRAPH_REPORTS: Cell<u32> = const { Cell::new(0) };
    }

    // doca_graph
    /// A graph's callback (its instance failed: the DMA task has no buffers): destroys the
    /// instance, stops and destroys the graph, all from inside the graph's own report.
    unsafe extern "C" fn graph_teardown(inst: *mut DocaGraphInstance, _: DocaData, _: DocaData) {
        GRAPH_REPORTS.set(GRAPH_REPORTS.get() + 1);
        let graph = GRAPH.get() as *mut DocaGraph;
        // SAFETY: the callback's own instance and the scene's graph, each destroyed once (the
        // second destroy is refused).
        unsafe {
            let rc = doca_graph_instance_destroy(inst);
            if rc != 0 {
                note(format!("graph instance destroy from its callback gave {rc}"));
            }
            let rc = doca_graph_stop(graph);
            if rc != 0 {
                note(format!("graph stop from its callback gave {rc}"));
            }
            let rc = doca_graph_destroy(graph);
            if rc != 0 {
                note(format!("graph destroy from its callback gave {rc}"));
            }
            if doca_graph_destroy(graph) == 0 {
                note("a graph destroyed from its callback was destroyed again".into());
            }
        }
    }

    fn note(what: String) {
        SEEN.with_borrow_mut(|s| s.push(what));
    }

    /// The server's state callback: at Idle it destroys its own server.
    unsafe extern "C" fn destroy_on_idle(_: DocaData, _: *mut DocaCtx, _: u32, next: u32) {
        if next == 0 {
            let rc = doca_cc_server_destroy(SERVER.get() as *mut DocaCcSide);
            DESTROYED.set(rc);
            // and the wrong kind, from inside a callback too
            let wrong = doca_cc_client_destroy(SERVER.get() as *mut DocaCcSide);
            if wrong != doca_core::Error::InvalidValue.code() {
                note(format!("client_destroy(server) from a callback gave {wrong}"));
            }
        }
    }

    /// A send completion: submits the same task again three times, then frees it; tries to
    /// destroy the engine from inside its own progress.
    unsafe extern "C" fn resubmit(task: *mut DocaTask, _: DocaData, ctx: DocaData) {
        let n = SUBMITS.get();
        SUBMITS.set(n + 1);
        // SAFETY: the context's user data is the engine's handle (set by the scene); the task
        // is the callback's own, freed once (the second free is refused).
        unsafe {
            let pe = ctx.u64 as usize as *mut DocaPe;
            if doca_pe_destroy(pe) == 0 {
                note("doca_pe_destroy succeeded inside the engine's own callback".into());
            }
            if n < 3 {
                let rc = doca_task_submit(task);
                if rc != 0 {
                    note(format!("resubmit from the completion callback gave {rc}"));
                }
            } else {
                doca_task_free(task);
                doca_task_free(task);
                if doca_task_get_status(task) == 0 {
                    note("a freed task is still live".into());
                }
            }
        }
    }

    unsafe extern "C" fn destroy_argp(_: *mut c_void, _: *mut c_void) -> i32 {
        let rc = doca_argp_destroy();
        if rc != 0 {
            note(format!("doca_argp_destroy from a parameter callback gave {rc}"));
        }
        0
    }

    unsafe extern "C" fn connected(_: *mut c_void, conn: *mut DocaCcConnection, ok: u8) {
        if ok != 0 {
            SCENE_CONN.set(conn as usize);
        }
    }

    thread_local! {
        static SCENE_CONN: Cell<usize> = const { Cell::new(0) };
    }

    /// Runs the scenarios; the failures found.
    ///
    /// # Safety
    /// Single-threaded, after the setup.
    pub(super) unsafe fn run(g: &Gen, name: &CStr) -> Vec<String> {
        // SAFETY: every pointer is this function's own memory or a handle it made.
        unsafe {
            let (dpu, host, rep) = g.devices.get();
            let (dpu, host, rep) = (dpu as *mut DocaDev, host as *mut DocaDev, rep as *mut DocaDevRep);
            let (mut spe, mut cpe) = (std::ptr::null_mut(), std::ptr::null_mut());
            must(doca_pe_create(&mut spe), 0, "pe");
            must(doca_pe_create(&mut cpe), 0, "pe");
            let mut server = std::ptr::null_mut();
            must(doca_cc_server_create(dpu, rep, name.as_ptr(), &mut server), 0, "server");
            SERVER.set(server as usize);
            let sctx = doca_cc_server_as_ctx(server);
            must(doca_pe_connect_ctx(spe, sctx), 0, "connect");
            must(doca_cc_server_task_send_set_conf(server, Some(setup_task), Some(setup_task), 8), 0, "conf");
            must(doca_cc_server_event_msg_recv_register(server, Some(setup_msg)), 0, "recv");
            must(
                doca_cc_server_event_connection_register(server, Some(connected), Some(connected)),
                0,
                "events",
            );
            must(doca_ctx_set_state_changed_cb(sctx, Some(destroy_on_idle)), 0, "state cb");
            must(doca_ctx_start(sctx), 0, "start");
            let mut client = std::ptr::null_mut();
            must(doca_cc_client_create(host, name.as_ptr(), &mut client), 0, "client");
            let cctx = doca_cc_client_as_ctx(client);
            must(doca_pe_connect_ctx(cpe, cctx), 0, "connect");
            must(doca_cc_client_task_send_set_conf(client, Some(resubmit), Some(resubmit), 8), 0, "conf");
            must(doca_cc_client_event_msg_recv_register(client, Some(setup_msg)), 0, "recv");
            must(doca_ctx_set_user_data(cctx, DocaData { u64: cpe as usize as u64 }), 0, "user data");
            must(doca_ctx_start(cctx), doca_core::Error::InProgress.code(), "start");
            let mut state = 0u32;
            until(&[spe, cpe], "the scene's client running", || {
                doca_ctx_get_state(cctx, &mut state);
                state == 2 && SCENE_CONN.get() != 0
            });
            // completion callbacks re-submit and free their task
            let mut conn = std::ptr::null_mut();
            must(doca_cc_client_get_connection(client, &mut conn), 0, "connection");
            let mut t = std::ptr::null_mut();
            must(
                doca_cc_client_task_send_alloc_init(client, conn, c"x".as_ptr().cast(), 1, &mut t),
                0,
                "task",
            );
            must(doca_task_submit(t), 0, "submit");
            until(&[spe, cpe], "four completions", || SUBMITS.get() >= 4);
            // the server stopped: its state callback destroys it at Idle
            let rc = doca_ctx_stop(sctx);
            if rc != 0 && rc != doca_core::Error::InProgress.code() {
                note(format!("server stop gave {rc}"));
            }
            until(&[spe, cpe], "the server's Idle callback", || DESTROYED.get() != -1);
            let rc = DESTROYED.get();
            if rc != 0 && doca_core::Error::from_code(rc).is_none() {
                note(format!("server destroy from its state callback gave {rc}"));
            }
            if rc == 0 && doca_cc_server_destroy(server) == 0 {
                note("a server destroyed from its callback was destroyed again".into());
            }
            for _ in 0..50 {
                doca_pe_progress(spe);
                doca_pe_progress(cpe);
            }
            // the argument parser destroyed by a parameter's callback
            doca_argp_destroy();
            must(doca_argp_init(c"scene".as_ptr(), std::ptr::null_mut()), 0, "argp");
            let mut p = std::ptr::null_mut();
            must(doca_argp_param_create(&mut p), 0, "param");
            doca_argp_param_set_long_name(p, c"boom".as_ptr());
            doca_argp_param_set_description(p, c"destroys the parser".as_ptr());
            doca_argp_param_set_callback(p, Some(destroy_argp));
            doca_argp_param_set_type(p, 3);
            must(doca_argp_register_param(p), 0, "register");
            let mut argv = [
                c"prog".as_ptr() as *mut c_char,
                c"--boom".as_ptr() as *mut c_char,
                c"--boom".as_ptr() as *mut c_char,
            ];
            let rc = doca_argp_start(3, argv.as_mut_ptr());
            if rc == 0 {
                note("doca_argp_start succeeded though its parser was destroyed by a callback".into());
            }
            // doca_graph: an instance fails (a DMA node's task has no buffers); its callback
            // destroys the instance, then the graph; the engine is free afterwards
            let mut gpe = std::ptr::null_mut();
            must(doca_pe_create(&mut gpe), 0, "pe");
            let mut dma = std::ptr::null_mut();
            must(doca_dma_create(host, &mut dma), 0, "dma");
            must(doca_dma_task_memcpy_set_conf(dma, Some(setup_task), Some(setup_task), 2), 0, "dma conf");
            let dctx = doca_dma_as_ctx(dma);
            must(doca_pe_connect_ctx(gpe, dctx), 0, "dma connect");
            must(doca_ctx_start(dctx), 0, "dma start");
            let mut dt = std::ptr::null_mut();
            must(
                doca_dma_task_memcpy_alloc_init(
                    dma,
                    std::ptr::null(),
                    std::ptr::null_mut(),
                    DocaData { u64: 0 },
                    &mut dt,
                ),
                0,
                "dma task",
            );
            let (mut graph, mut node, mut inst) =
                (std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut());
            must(doca_graph_create(gpe, &mut graph), 0, "graph");
            GRAPH.set(graph as usize);
            must(doca_graph_node_create_from_ctx(graph, dctx, &mut node), 0, "graph node");
            must(doca_graph_set_conf(graph, Some(graph_teardown), Some(graph_teardown), 1), 0, "graph conf");
            must(doca_graph_start(graph), 0, "graph start");
            must(doca_graph_instance_create(graph, &mut inst), 0, "graph instance");
            must(doca_graph_instance_set_ctx_node_data(inst, node, dt), 0, "graph node data");
            must(doca_graph_instance_submit(inst), 0, "graph submit");
            until(&[gpe], "the graph's report", || GRAPH_REPORTS.get() > 0);
            if doca_graph_instance_submit(inst) == 0 {
                note("a destroyed graph instance was submitted".into());
            }
            doca_task_free(dt);
            until(&[gpe], "the failed DMA context idle", || {
                let mut st = 2u32;
                doca_ctx_get_state(dctx, &mut st);
                st == 0
            });
            must(doca_dma_destroy(dma), 0, "dma destroy");
            let rc = doca_pe_destroy(gpe);
            if rc != 0 {
                note(format!("the engine of a destroyed graph could not be destroyed: {rc}"));
            }
            SEEN.take()
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--exports") {
        for e in table() {
            println!("{}", e.name);
        }
        return;
    }
    if std::env::var_os("CAPI_FUZZ_LOG").is_some() {
        doca_log_backend_create_standard();
        doca_log_level_set_global_sdk_limit(60);
    } else {
        // Thousands of refused calls: keep the library's default error lines off.
        // SAFETY: no other thread runs yet.
        unsafe { std::env::set_var("DOCA_EMU_SDK_STDERR", "0") };
    }
    // a panic the library catches at its C boundary is counted (and still printed)
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        hook(info)
    }));
    let seed: u64 = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let cases: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(5000);
    // SAFETY: not called by any other thread yet.
    unsafe { std::env::remove_var("DOCA_EMU_SIDE") };
    let g: &'static Gen = Box::leak(Box::new(Gen {
        rng: Cell::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1),
        live: RefCell::new(vec![Vec::new(); KINDS]),
        stale: RefCell::new(vec![Vec::new(); KINDS]),
        frames: RefCell::new(Vec::new()),
        garbage: Box::new(std::array::from_fn(|i| (i as u64).wrapping_mul(0x0123_4567_89ab_cdef) | 1)),
        scratch: Box::new([[0; 32]; 128]),
        next_scratch: Cell::new(0),
        region: Box::leak(vec![0u8; REGION_LEN].into_boxed_slice()).as_mut_ptr(),
        lists: RefCell::default(),
        rep_lists: RefCell::default(),
        depth: Cell::new(0),
        table: RefCell::new({
            // CAPI_FUZZ_SKIP=name,name: leave exports out (to look past a known crash)
            let skip = std::env::var("CAPI_FUZZ_SKIP").unwrap_or_default();
            table().into_iter().filter(|e| !skip.split(',').any(|s| s == e.name)).collect()
        }),
        cases: Cell::new(0),
        devices: Cell::new((0, 0, 0)),
    }));
    GEN.set(Some(g));
    let name = std::ffi::CString::new(format!("capi-fuzz-{}", std::process::id())).expect("no NUL");
    // SAFETY: single-threaded, once.
    unsafe { setup(g, &name) };
    // every export once, then at random
    let n = g.table.borrow().len();
    for i in 0..n {
        g.run(i);
    }
    while g.cases.get() < cases {
        g.case();
    }
    let scene = std::ffi::CString::new(format!("capi-fuzz-scene-{}", std::process::id())).expect("no NUL");
    // SAFETY: single-threaded, after the setup.
    let failures = unsafe { scenes::run(g, &scene) };
    if !failures.is_empty() {
        let _ = writeln!(std::io::stderr(), "FAILED: callback scenarios: {failures:#?}");
        std::process::exit(1);
    }
    if FAILURES.get() > 0 {
        let _ = writeln!(std::io::stderr(), "FAILED: {} cases", FAILURES.get());
        std::process::exit(1);
    }
    println!("ok {} cases", g.cases.get());
}
