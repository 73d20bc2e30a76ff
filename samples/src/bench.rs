//! The measurements of `doca_bench`. Each function measures one thing in this process,
//! talking to a peer process (the same binary, run with `--role …`).
//! Latencies are one-way: half of a round trip. Every figure is reported next to a baseline
//! measured in the same run.

use std::cell::{Cell, RefCell};
use std::os::fd::{AsFd, OwnedFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use doca_buf::{Buf, Inventory};
use doca_cc::{Client, Connection, Consumer, PostRecvTask, Producer, ProducerSendTask, Server};
use doca_core::{
    open_device_rep_with_pci, open_device_with_pci, Data, Error, Pe, RepFilter, TaskSubmitFlags,
};
use doca_mmap::{AccessFlags, Memory, Mmap, SharedMem};

/// How long any wait of the bench may last before it gives up (never spin without bound).
pub const GIVE_UP: Duration = Duration::from_secs(60);

/// Nanoseconds since `t`.
pub fn ns(t: Instant) -> f64 {
    t.elapsed().as_nanos() as f64
}

/// (p50, p99) of samples.
pub fn percentiles(mut v: Vec<f64>) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN); // the measurement failed: shown as NaN, not a panic
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() as f64 - 1.0) * q).round() as usize];
    (at(0.5), at(0.99))
}

/// A figure measured several times: the median of its repetitions and its spread, half the
/// range of the repetitions over the median (as `doca_bench --against` reports it). A figure
/// derived from another (a rate from a time, another unit) keeps its relative spread: exact
/// for a scale, to first order for an inverse.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Est {
    /// The median.
    pub v: f64,
    /// The spread, a fraction of the median (0.05: ±5 %).
    pub sp: f64,
}

impl Est {
    /// The median and spread of `values` (NaN when there are none: the measurement failed).
    pub fn of(values: &[f64]) -> Est {
        if values.is_empty() {
            return Est { v: f64::NAN, sp: 0.0 };
        }
        let (v, sp) = crate::against::median_spread(values);
        Est { v, sp }
    }

    /// A figure measured once (no repetitions: its spread is unknown, shown as `-`) or
    /// exact (a size).
    pub fn once(v: f64) -> Est {
        Est { v, sp: f64::NAN }
    }

    /// The same measurement in another unit (`f` monotonic: a scale, an inverse).
    pub fn map(self, f: impl FnOnce(f64) -> f64) -> Est {
        Est { v: f(self.v), sp: self.sp }
    }

    /// Whether the spread is beyond [`crate::against::NOISY`] (a figure measured once is
    /// not said to be noisy: nothing is known of its spread).
    pub fn noisy(self) -> bool {
        self.sp > crate::against::NOISY
    }
}

/// Blocks a latency series is cut into for its spread (see [`one_way`]).
pub const LATENCY_BLOCKS: usize = 5;

/// The one-way latency of round trips `rtts` (in order of measurement): half the p50, with
/// the spread of the p50s of [`LATENCY_BLOCKS`] consecutive blocks (a series has no
/// repetitions; its blocks are), and half the p99.
pub fn one_way(rtts: &[f64]) -> (Est, f64) {
    let (p50, p99) = percentiles(rtts.to_vec());
    let per = rtts.len() / LATENCY_BLOCKS;
    let sp = if per == 0 || !p50.is_finite() || p50 == 0.0 {
        f64::NAN // too few round trips for blocks: the spread is unknown
    } else {
        let blocks: Vec<f64> =
            rtts.chunks(per).take(LATENCY_BLOCKS).map(|b| percentiles(b.to_vec()).0).collect();
        let (lo, hi) =
            blocks.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
        (hi - lo) / 2.0 / p50
    };
    (Est { v: p50 / 2.0, sp }, p99 / 2.0)
}

/// Pins this process to one CPU when the machine has more than one (best effort). The CPU
/// count comes from `DOCA_BENCH_CPUS` when set (a pinned parent passes the count it saw
/// before pinning itself, since its children inherit its one-CPU mask).
pub fn pin(cpu: usize) {
    let n = std::env::var("DOCA_BENCH_CPUS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    std::env::set_var("DOCA_BENCH_CPUS", n.to_string());
    if n > 1 {
        let mut set = rustix::thread::CpuSet::new();
        set.set(cpu % n);
        let _ = rustix::thread::sched_setaffinity(None, &set);
    }
}

/// Raw shared memory between the two processes, with no library in between: the floor of
/// every busy-polling row. Its own memfd mapping (not a DOCA map), so nothing of ours is
/// measured.
pub mod raw {
    #![allow(unsafe_code)]

    use std::os::fd::{AsRawFd, OwnedFd};
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::Instant;

    use rustix::mm::{MapFlags, ProtFlags};

    /// Where the pong half starts: 8 KiB after the ping half, so the two directions never
    /// share a cache line nor an adjacent-line prefetch pair, whatever the payload (≤ 4 KiB).
    const PONG: usize = 8192;
    /// Bytes of the ping-pong mapping.
    pub const PINGPONG_LEN: usize = 2 * PONG;
    /// Slots of the streaming ring (64 bytes each: 56 payload bytes and a sequence number).
    pub const STREAM_SLOTS: usize = 1024;
    /// Bytes of the streaming mapping: the slots, then the consumer's head on its own page.
    pub const STREAM_LEN: usize = STREAM_SLOTS * 64 + 4096;

    /// A shared mapping of a memfd.
    pub struct Shm {
        ptr: *mut u8,
        len: usize,
        fd: OwnedFd,
    }

    impl Shm {
        /// Fresh zeroed shared memory of `len` bytes.
        pub fn create(len: usize) -> rustix::io::Result<Shm> {
            let fd = rustix::fs::memfd_create("doca-bench-raw", rustix::fs::MemfdFlags::CLOEXEC)?;
            rustix::fs::ftruncate(&fd, len as u64)?;
            Shm::map(fd, len)
        }

        /// The memory of `create` in process `pid` (its fd number `fd`).
        pub fn open(pid: u32, fd: i32, len: usize) -> rustix::io::Result<Shm> {
            let path = format!("/proc/{pid}/fd/{fd}");
            let fd = rustix::fs::open(
                path.as_str(),
                rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )?;
            Shm::map(fd, len)
        }

        fn map(fd: OwnedFd, len: usize) -> rustix::io::Result<Shm> {
            // A fresh shared mapping of the whole file; unmapped in Drop only.
            // SAFETY: no existing memory is affected (null hint, no MAP_FIXED).
            let ptr = unsafe {
                rustix::mm::mmap(
                    std::ptr::null_mut(),
                    len,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::SHARED,
                    &fd,
                    0,
                )?
            };
            Ok(Shm { ptr: ptr.cast(), len, fd })
        }

        /// The fd number, for the peer's [`Shm::open`].
        pub fn fd(&self) -> i32 {
            self.fd.as_raw_fd()
        }

        fn word(&self, at: usize) -> &AtomicU64 {
            assert!(at % 8 == 0 && at + 8 <= self.len);
            // In bounds and aligned (checked above; the mapping is page-aligned); the word is
            // only ever accessed atomically, here and in the peer.
            // SAFETY: see above.
            unsafe { &*(self.ptr.add(at) as *const AtomicU64) }
        }

        /// Copies `src` to `at` (plain bytes, published by a later Release store).
        fn put(&self, at: usize, src: &[u8]) {
            assert!(at + src.len() <= self.len);
            // In bounds (checked); the peer reads these bytes only after the Acquire load that
            // pairs with our Release store of the sequence number.
            // SAFETY: see above.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(at), src.len()) }
        }

        /// Copies `dst.len()` bytes from `at`.
        fn get(&self, at: usize, dst: &mut [u8]) {
            assert!(at + dst.len() <= self.len);
            // In bounds (checked); written by the peer before its Release store we acquired.
            // SAFETY: see above.
            unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(at), dst.as_mut_ptr(), dst.len()) }
        }
    }

    impl Drop for Shm {
        fn drop(&mut self) {
            // The mapping made in `map`, unmapped once.
            // SAFETY: nothing borrows it any more (borrows are tied to &self).
            unsafe {
                let _ = rustix::mm::munmap(self.ptr.cast(), self.len);
            }
        }
    }

    fn wait(line: &AtomicU64, value: u64, deadline: Instant) -> bool {
        let mut spins = 0u32;
        // Acquire pairs with the other side's Release store of the same word.
        while line.load(Ordering::Acquire) != value {
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins % 65536 == 0 && Instant::now() > deadline {
                return false;
            }
        }
        true
    }

    /// One message of `size` bytes each way per round trip: the payload is copied in, then
    /// the sequence number (in the message's last 8 bytes' line) is published; the receiver
    /// waits for it and copies the payload out, as any message transport must.
    pub struct PingPong<'a> {
        shm: &'a Shm,
        size: usize,
    }

    impl<'a> PingPong<'a> {
        /// Over `shm` (at least [`PINGPONG_LEN`] bytes) with `size`-byte messages (8..=4096).
        pub fn new(shm: &'a Shm, size: usize) -> PingPong<'a> {
            assert!((8..=4096).contains(&size) && shm.len >= PINGPONG_LEN);
            PingPong { shm, size }
        }

        fn send(&self, half: usize, seq: u64, payload: &[u8]) {
            self.shm.put(half, &payload[..self.size - 8]);
            self.shm.word(half + self.size - 8).store(seq, Ordering::Release);
        }

        fn recv(&self, half: usize, seq: u64, out: &mut [u8], deadline: Instant) -> bool {
            if !wait(self.shm.word(half + self.size - 8), seq, deadline) {
                return false;
            }
            self.shm.get(half, &mut out[..self.size - 8]);
            true
        }

        /// Initiator: `n` round trips after `n / 10` warm-up ones (timed as the library's rows
        /// are: one `Instant` per round trip); their times in nanoseconds.
        pub fn ping(&self, n: u64, deadline: Instant) -> Vec<f64> {
            let payload = vec![7u8; self.size];
            let mut back = vec![0u8; self.size];
            let mut out = Vec::with_capacity(n as usize);
            for i in 1..=n + n / 10 {
                if i == n / 10 + 1 {
                    out.clear();
                }
                let t = Instant::now();
                self.send(0, i, &payload);
                if !self.recv(PONG, i, &mut back, deadline) {
                    break;
                }
                out.push(super::ns(t));
            }
            std::hint::black_box(&back);
            out
        }

        /// Responder: answers `n + n / 10` pings with the same bytes.
        pub fn pong(&self, n: u64, deadline: Instant) {
            let mut msg = vec![0u8; self.size];
            for i in 1..=n + n / 10 {
                if !self.recv(0, i, &mut msg, deadline) {
                    return;
                }
                self.send(PONG, i, &msg);
            }
        }
    }

    /// A single-producer single-consumer ring of 64-byte slots (56 payload bytes and a
    /// sequence number each); the consumer publishes its head every quarter ring, the producer
    /// reads it only when the ring looks full: the floor of a pipelined message rate.
    pub struct Stream<'a> {
        shm: &'a Shm,
    }

    impl<'a> Stream<'a> {
        /// Over `shm` (at least [`STREAM_LEN`] bytes).
        pub fn new(shm: &'a Shm) -> Stream<'a> {
            assert!(shm.len >= STREAM_LEN);
            Stream { shm }
        }

        fn head(&self) -> &AtomicU64 {
            self.shm.word(STREAM_SLOTS * 64)
        }

        /// Producer: `n` messages; false on time-out.
        pub fn produce(&self, n: u64, deadline: Instant) -> bool {
            let payload = [3u8; 56];
            let mut head = 0u64;
            for seq in 1..=n {
                while seq - head > STREAM_SLOTS as u64 {
                    head = self.head().load(Ordering::Acquire);
                    if seq - head > STREAM_SLOTS as u64 {
                        std::hint::spin_loop();
                        if Instant::now() > deadline {
                            return false;
                        }
                    }
                }
                let at = ((seq - 1) as usize % STREAM_SLOTS) * 64;
                self.shm.put(at, &payload);
                self.shm.word(at + 56).store(seq, Ordering::Release);
            }
            true
        }

        /// Producer: waits until the consumer has read all `n` messages; false on time-out.
        pub fn wait_consumed(&self, n: u64, deadline: Instant) -> bool {
            wait(self.head(), n, deadline)
        }

        /// Consumer: `n` messages, copied out; false on time-out.
        pub fn consume(&self, n: u64, deadline: Instant) -> bool {
            let mut msg = [0u8; 56];
            for seq in 1..=n {
                let at = ((seq - 1) as usize % STREAM_SLOTS) * 64;
                if !wait(self.shm.word(at + 56), seq, deadline) {
                    return false;
                }
                self.shm.get(at, &mut msg);
                if seq % (STREAM_SLOTS as u64 / 4) == 0 || seq == n {
                    self.head().store(seq, Ordering::Release);
                }
            }
            std::hint::black_box(&msg);
            true
        }
    }
}

/// Progresses `pes` until `done` or the deadline; false on time-out. Busy, or asleep on the
/// notification handles when `sleep`.
pub fn run_until(pes: &[&Pe], sleep: bool, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + GIVE_UP;
    let mut idle = 0u32;
    while !done() {
        let mut any = false;
        for pe in pes {
            any |= pe.progress();
        }
        if !any {
            // The clock is read every 1024 empty passes, as the raw baselines do: a spin
            // waiting for an answer is the library's loop, not the clock's.
            idle = idle.wrapping_add(1);
            if idle % 1024 == 0 && Instant::now() > deadline {
                return false;
            }
            if sleep {
                let _ = Pe::wait_any(pes, Some(Duration::from_millis(100)));
            } else {
                std::hint::spin_loop();
            }
        }
    }
    true
}

/// A server (peer side) or client (measuring side) with its engine.
pub struct CcSide {
    /// The engine of the server or client.
    pub pe: Pe,
    /// The connection (client side: once Running).
    pub conn: Rc<RefCell<Option<Connection>>>,
    /// Messages received (count).
    pub received: Rc<Cell<u64>>,
    /// The peer's consumers, as announced.
    pub remote: Rc<RefCell<Vec<u32>>>,
    server: Option<Server>,
    client: Option<Client>,
}

impl CcSide {
    /// A server that answers every message with the same bytes (`echo`) or counts them and
    /// answers `done` after `sink` of them.
    pub fn server(name: &str, echo: bool, sink: u64, queue: u32) -> Result<CcSide, Error> {
        let dev = open_device_with_pci("03:00.0", None)?;
        let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0")?;
        let pe = Pe::create()?;
        let server = Server::create(&dev, &rep, name)?;
        pe.connect_ctx(&server.as_ctx())?;
        server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4096)?;
        server.set_recv_queue_size(queue)?;
        let received = Rc::new(Cell::new(0u64));
        let r = received.clone();
        // Per-connection counts, indexed by connection id (small sequential numbers): the sink
        // must cost next to nothing, or it and not the library is what the rate measures.
        let counts: Rc<RefCell<Vec<u64>>> = Rc::default();
        server.event_msg_recv_register(move |msg, conn| {
            r.set(r.get() + 1);
            if echo {
                if let Ok(s) = conn.server() {
                    if let Ok(t) = s.task_send_alloc_init(conn, msg) {
                        let _ = t.submit();
                    }
                }
                return;
            }
            let id = conn.id() as usize;
            let mut c = counts.borrow_mut();
            if c.len() <= id {
                c.resize(id + 1, 0);
            }
            c[id] += 1;
            if c[id] == sink {
                c[id] = 0;
                drop(c);
                if let Ok(s) = conn.server() {
                    if let Ok(t) = s.task_send_alloc_init(conn, b"done") {
                        let _ = t.submit();
                    }
                }
            }
        })?;
        let remote: Rc<RefCell<Vec<u32>>> = Rc::default();
        let (rm, cn) = (remote.clone(), Rc::new(RefCell::new(None::<Connection>)));
        let c2 = cn.clone();
        server.event_consumer_register(
            move |conn, id| {
                rm.borrow_mut().push(id);
                c2.replace(Some(conn.clone()));
            },
            |_, _| {},
        )?;
        server.event_connection_register(|_, _| {}, |_, _| {})?;
        server.as_ctx().start()?;
        Ok(CcSide { pe, conn: cn, received, remote, server: Some(server), client: None })
    }

    /// A client of `name` with a receive queue of `queue` messages and `tasks` send tasks,
    /// Running when this returns.
    pub fn client(name: &str, queue: u32, tasks: u32) -> Result<CcSide, Error> {
        CcSide::client_beside(name, queue, tasks, &[])
    }

    /// As [`CcSide::client`], progressing `beside` too while it connects (a server in this
    /// same thread).
    pub fn client_beside(name: &str, queue: u32, tasks: u32, beside: &[&Pe]) -> Result<CcSide, Error> {
        let dev = open_device_with_pci("b1:00.0", None)?;
        let pe = Pe::create()?;
        let client = Client::create(&dev, name)?;
        pe.connect_ctx(&client.as_ctx())?;
        client.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, tasks)?;
        client.set_recv_queue_size(queue)?;
        let received = Rc::new(Cell::new(0u64));
        let r = received.clone();
        client.event_msg_recv_register(move |_, _| r.set(r.get() + 1))?;
        let remote: Rc<RefCell<Vec<u32>>> = Rc::default();
        let rm = remote.clone();
        client.event_consumer_register(move |_, id| rm.borrow_mut().push(id), |_, _| {})?;
        match client.as_ctx().start() {
            Err(Error::InProgress) => {}
            other => return Err(other.err().unwrap_or(Error::BadState)),
        }
        let ctx = client.as_ctx();
        let pes: Vec<&Pe> = std::iter::once(&pe).chain(beside.iter().copied()).collect();
        if !run_until(&pes, false, || ctx.state() == doca_core::CtxState::Running) {
            return Err(Error::TimeOut);
        }
        let conn = Rc::new(RefCell::new(Some(client.get_connection()?)));
        Ok(CcSide { pe, conn, received, remote, server: None, client: Some(client) })
    }

    /// Sends `msg` on the connection (client side); false when the pool or queue is full.
    pub fn send(&self, msg: &[u8]) -> bool {
        let conn = self.conn.borrow();
        let (Some(c), Some(conn)) = (&self.client, conn.as_ref()) else { return false };
        match c.task_send_alloc_init(conn, msg) {
            Ok(t) => t.submit().is_ok(),
            Err(_) => false,
        }
    }

    /// The server's connection once a client is there (peer role).
    pub fn wait_connection(&self) -> Option<Connection> {
        let srv = self.server.as_ref()?;
        run_until(&[&self.pe], false, || !srv.connections().is_empty());
        srv.connections().pop()
    }

    /// Serves until `stop` says so (peer role).
    pub fn serve(&self, sleep: bool, stop: impl Fn() -> bool) {
        let deadline = Instant::now() + GIVE_UP * 10;
        // Stop conditions every 1024 passes (see `run_until`).
        let mut pass = 0u32;
        while pass % 1024 != 0 || (!stop() && Instant::now() < deadline) {
            pass = pass.wrapping_add(1);
            if !self.pe.progress() {
                if sleep {
                    let _ = self.pe.wait(Some(Duration::from_millis(100)));
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        let _ = &self.server;
    }
}

/// How a fast-path side uses its tasks and buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FpUse {
    /// As the DOCA sample does: a buffer and a send task per message, freed in the completion
    /// callback; a received buffer is posted again with a new task.
    PerMessage,
    /// Tasks recycled from their callbacks (DOCA's high-rate pattern): a completed send task
    /// keeps its buffer and is submitted again; a receive task is submitted again as it is,
    /// without `FLUSH` (`submit_ex`: posts go out together at the engine's next pass, as
    /// DOCA's own high-rate applications batch them). The application keeps its buffers by slot and finds a task's through the task's user
    /// data, as C applications keep their `doca_buf` pointers (`task.buf()` clones a handle:
    /// two atomic operations per call).
    Recycled,
}

/// One side of the fast-path measurements: a producer and a consumer with their engines, on
/// the connection of a server or client.
pub struct FpSide {
    /// The engine of the producer and the consumer (one engine: lower latency).
    pub pe: Pe,
    producer: Producer,
    consumer: Rc<Consumer>,
    src_map: Mmap,
    src_inv: Inventory,
    dst_map: Mmap,
    dst_inv: Rc<Inventory>,
    /// Buffers filled (count, bytes).
    pub filled: Rc<Cell<(u64, u64)>>,
    /// Producer sends completed.
    pub sent: Rc<Cell<u64>>,
    free_src: Rc<RefCell<Vec<usize>>>,
    /// Completed send tasks kept for reuse ([`FpUse::Recycled`]), each with its buffer.
    kept: Rc<RefCell<Vec<ProducerSendTask>>>,
    /// The source buffer of each slot ([`FpUse::Recycled`]: a kept task's user data is its
    /// slot, so a send reaches its buffer without `task.buf()`, which clones a handle).
    src_bufs: RefCell<Vec<Option<Buf>>>,
    how: FpUse,
    size: usize,
}

impl FpSide {
    /// A producer and a consumer on `conn`, each with `slots` buffers of `size` bytes
    /// (consumer memory from the shared allocator: the one-copy path), using tasks `how`.
    pub fn new(
        conn: &Connection,
        size: usize,
        slots: usize,
        owner_pe: &Pe,
        how: FpUse,
    ) -> Result<FpSide, Error> {
        FpSide::new_beside(conn, (size, slots), owner_pe, how, &[])
    }

    /// As [`FpSide::new`], progressing `beside` too while the consumer starts (the peer's
    /// engines in this same thread).
    pub fn new_beside(
        conn: &Connection,
        (size, slots): (usize, usize),
        owner_pe: &Pe,
        how: FpUse,
        beside: &[&Pe],
    ) -> Result<FpSide, Error> {
        let pe = Pe::create()?;
        let producer = Producer::create(conn)?;
        pe.connect_ctx(&producer.as_ctx())?;
        let sent = Rc::new(Cell::new(0u64));
        let free_src: Rc<RefCell<Vec<usize>>> = Rc::new(RefCell::new((0..slots).rev().collect()));
        let kept: Rc<RefCell<Vec<ProducerSendTask>>> = Rc::new(RefCell::new(Vec::with_capacity(slots)));
        let (s, f, k) = (sent.clone(), free_src.clone(), kept.clone());
        producer.task_send_set_conf(
            move |t: ProducerSendTask, _, _| {
                s.set(s.get() + 1);
                if how == FpUse::Recycled {
                    k.borrow_mut().push(t);
                    return;
                }
                let buf = t.buf();
                f.borrow_mut().push(buf.head_offset().unwrap_or(0) / size);
                let _ = buf.dec_refcount();
            },
            |t: ProducerSendTask, _, _| {
                let _ = t.buf().dec_refcount();
            },
            slots as u32,
        )?;
        producer.as_ctx().start()?;
        let src_map = Mmap::create()?;
        src_map.set_memrange(SharedMem::alloc(size * slots)?)?;
        src_map.start()?;
        let src_inv = Inventory::create(slots as u32)?;
        src_inv.start()?;
        let dst_map = Mmap::create()?;
        dst_map.set_memrange(Memory::from(SharedMem::alloc(size * slots)?))?;
        dst_map.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE)?;
        dst_map.start()?;
        let dst_inv = Rc::new(Inventory::create(slots as u32)?);
        dst_inv.start()?;
        let dst_bufs: Rc<Vec<Buf>> = Rc::new(
            (0..slots).map(|i| dst_inv.buf_get_at(&dst_map, i * size, size)).collect::<Result<_, _>>()?,
        );
        let consumer = Rc::new(Consumer::create(conn, &dst_map)?);
        pe.connect_ctx(&consumer.as_ctx())?;
        let filled = Rc::new(Cell::new((0u64, 0u64)));
        let (fl, w, bufs) = (filled.clone(), Rc::downgrade(&consumer), dst_bufs.clone());
        consumer.task_post_recv_set_conf(
            move |t: PostRecvTask, task_data, _| {
                let (n, b) = fl.get();
                if how == FpUse::Recycled {
                    // Post the buffer again, found by slot; kept back (no FLUSH) until the
                    // engine's next pass, after the reply (DOCA's batched re-post).
                    let buf = &bufs[u64::from(task_data) as usize];
                    fl.set((n + 1, b + buf.data_len().unwrap_or(0) as u64));
                    let _ = buf.reset_data_len();
                    let _ = t.submit_ex(TaskSubmitFlags::empty());
                    return;
                }
                let buf = t.buf();
                fl.set((n + 1, b + buf.data_len().unwrap_or(0) as u64));
                let _ = buf.reset_data_len();
                drop(t);
                if let Some(c) = w.upgrade() {
                    if let Ok(t) = c.task_post_recv_alloc_init(&buf) {
                        let _ = t.submit();
                    }
                }
            },
            |t: PostRecvTask, _, _| {
                let _ = t.buf().dec_refcount();
            },
            slots as u32,
        )?;
        let _ = consumer.as_ctx().start();
        let ctx = consumer.as_ctx();
        let pes: Vec<&Pe> = [owner_pe, &pe].into_iter().chain(beside.iter().copied()).collect();
        if !run_until(&pes, false, || ctx.state() == doca_core::CtxState::Running) {
            return Err(Error::TimeOut);
        }
        for (i, buf) in dst_bufs.iter().enumerate() {
            let task = consumer.task_post_recv_alloc_init(buf)?;
            task.set_user_data(Data::from(i));
            task.submit().map_err(|r| r.error)?;
        }
        Ok(FpSide {
            pe,
            producer,
            consumer,
            src_map,
            src_inv,
            dst_map,
            dst_inv,
            filled,
            sent,
            free_src,
            kept,
            src_bufs: RefCell::new(vec![None; slots]),
            how,
            size,
        })
    }

    /// Sends `len` bytes to consumer `to`: false when every source buffer is in flight.
    pub fn send(&self, to: u32, len: usize) -> bool {
        if self.how == FpUse::Recycled {
            let kept = self.kept.borrow_mut().pop();
            if let Some(t) = kept {
                // The task's own buffer (found by slot), its data resized; the same consumer
                // or another.
                let slot = u64::from(t.user_data()) as usize;
                let resized = match &self.src_bufs.borrow()[slot] {
                    Some(buf) => buf.set_data_offset(slot * self.size, len),
                    None => Err(Error::BadState),
                };
                t.set_consumer_id(to);
                return match resized {
                    Ok(()) => t.submit().map_err(|r| self.kept.borrow_mut().push(r.value)).is_ok(),
                    Err(_) => {
                        self.kept.borrow_mut().push(t);
                        false
                    }
                };
            }
        }
        // A new buffer and task (always as the sample does; the first use of each slot when
        // recycling).
        let Some(slot) = self.free_src.borrow_mut().pop() else { return false };
        let sent = (|| {
            let buf: Buf = self.src_inv.buf_get_data_at(&self.src_map, slot * self.size, len)?;
            match self.producer.task_send_alloc_init(&buf, to) {
                Ok(t) => {
                    if self.how == FpUse::Recycled {
                        t.set_user_data(Data::from(slot));
                        self.src_bufs.borrow_mut()[slot] = Some(buf);
                    }
                    t.submit().map_err(|r| r.error)
                }
                Err(e) => {
                    let _ = buf.dec_refcount();
                    Err(e)
                }
            }
        })();
        if sent.is_err() {
            self.free_src.borrow_mut().push(slot);
        }
        sent.is_ok()
    }

    /// This side's consumer id.
    pub fn consumer_id(&self) -> u32 {
        self.consumer.id()
    }

    /// Keeps the maps alive as long as the side (they are used through buffers).
    pub fn maps(&self) -> (&Mmap, &Mmap, &Inventory) {
        (&self.src_map, &self.dst_map, &self.dst_inv)
    }
}

/// Kept for the peer role: unused fields would otherwise be dropped early.
pub fn keep<T>(_: &T) {}

/// The raw baselines' peer: map the parent's memory (`pid`, `fd`) and answer `n` pings of
/// `size` bytes, or consume `n` streamed messages (`size` 0).
pub fn raw_peer(pid: u32, fd: i32, size: usize, n: u64) -> Result<(), Error> {
    let deadline = Instant::now() + GIVE_UP;
    if size == 0 {
        let shm = raw::Shm::open(pid, fd, raw::STREAM_LEN).map_err(|_| Error::OperatingSystem)?;
        println!("ready");
        raw::Stream::new(&shm).consume(n, deadline);
    } else {
        let shm = raw::Shm::open(pid, fd, raw::PINGPONG_LEN).map_err(|_| Error::OperatingSystem)?;
        println!("ready");
        raw::PingPong::new(&shm, size).pong(n, deadline);
    }
    Ok(())
}

/// The peer's eventfd, passed as a file descriptor over the non-blocking socket `sock`;
/// `None` after [`GIVE_UP`].
pub fn recv_doorbell(sock: std::os::fd::BorrowedFd<'_>) -> Option<doca_link::notify::EventFd> {
    let deadline = Instant::now() + GIVE_UP;
    let mut buf = [0u8; 64];
    while Instant::now() < deadline {
        if let Ok(doca_link::Recv::Packet { mut fds, .. }) = doca_link::recv(sock, &mut buf) {
            if let Some(fd) = fds.pop() {
                // The bench's own baseline peer: trusted.
                return Some(doca_link::notify::EventFd::from_fd(fd.into_inner()));
            }
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    None
}

/// The peer's side of [`recv_doorbell`]'s exchange: connects to the socket at `path`, sends
/// a new eventfd (this side waits on it), takes the other side's (this side rings it).
pub fn bells_to(path: &str) -> Option<(OwnedFd, doca_link::notify::EventFd, doca_link::notify::EventFd)> {
    let sock = doca_link::connect(std::path::Path::new(path)).ok()??;
    let mine = doca_link::notify::EventFd::new().ok()?;
    doca_link::send(sock.as_fd(), b"bells", &[mine.as_fd()]).ok()?;
    let theirs = recv_doorbell(sock.as_fd())?;
    Some((sock, mine, theirs))
}

/// An eventfd ping-pong over two eventfds passed through a socket: this side waits on
/// `mine` and rings `theirs`. Returns round-trip times (initiator) or answers (responder).
pub fn eventfd_pingpong(
    mine: &doca_link::notify::EventFd,
    theirs: &doca_link::notify::EventFd,
    n: u64,
    initiator: bool,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(n as usize);
    let wait = |bell: &doca_link::notify::EventFd| {
        let mut fds = [rustix::event::PollFd::new(bell, rustix::event::PollFlags::IN)];
        let t = rustix::time::Timespec { tv_sec: 5, tv_nsec: 0 };
        let _ = rustix::event::poll(&mut fds, Some(&t));
        bell.drain()
    };
    for _ in 0..n {
        if initiator {
            let t = Instant::now();
            theirs.ring();
            if !wait(mine) {
                break;
            }
            out.push(ns(t));
        } else {
            if !wait(mine) {
                break;
            }
            theirs.ring();
        }
    }
    let _ = mine.as_fd();
    out
}

/// Serves an engine and an eventfd ping-pong at once, asleep in one `poll` on both between
/// wake-ups, until `stop`: a ring on `mine` is answered on `theirs` at once (before the
/// engine is looked at, as the plain ping-pong's responder answers), and the engine, armed
/// once and re-armed only after a pass, makes its passes when its handle woke the poll.
pub fn serve_beside_bell(
    pe: &Pe,
    mine: &doca_link::notify::EventFd,
    theirs: &doca_link::notify::EventFd,
    stop: impl Fn() -> bool,
) {
    use rustix::event::{poll, PollFd, PollFlags};
    let deadline = Instant::now() + GIVE_UP * 10;
    let _ = pe.request_notification();
    while !stop() && Instant::now() < deadline {
        let mut fds = [
            PollFd::from_borrowed_fd(pe.notification_handle(), PollFlags::IN),
            PollFd::new(mine, PollFlags::IN),
        ];
        let t = rustix::time::Timespec { tv_sec: 0, tv_nsec: 100_000_000 };
        let woke = poll(&mut fds, Some(&t)).unwrap_or(0);
        let (engine, bell) =
            (fds[0].revents().contains(PollFlags::IN), fds[1].revents().contains(PollFlags::IN));
        if bell {
            mine.drain();
            theirs.ring();
        }
        if engine || woke == 0 {
            let _ = pe.clear_notification();
            while pe.progress() {}
            let _ = pe.request_notification();
        }
    }
    let _ = pe.clear_notification();
}

/// The DMA rows' rig: one engine, one DMA context, an inventory; completed tasks come back
/// to the caller (or are freed), counted.
pub mod dma {
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;

    use doca_buf::{Buf, Inventory};
    use doca_core::{open_device_with_pci, Data, Error, Pe};
    use doca_dma::{Dma, MemcpyTask};
    use doca_mmap::Mmap;

    /// A DMA context on a device with its engine and an inventory.
    pub struct Rig {
        /// The engine.
        pub pe: Pe,
        /// The DMA context (Running).
        pub dma: Dma,
        /// Buffers for the tasks.
        pub inv: Inventory,
        /// The device (maps must be added to it, or imported with it).
        pub dev: doca_core::Dev,
        /// Tasks completed, and failed.
        pub done: Rc<Cell<u64>>,
        /// Tasks failed (any is a bug of the bench: it stops).
        pub failed: Rc<Cell<u64>>,
        /// Completed tasks handed back (when kept).
        pub back: Rc<RefCell<Vec<MemcpyTask>>>,
    }

    impl Rig {
        /// A rig on the device at `pci` with `tasks` tasks; completed tasks are handed back
        /// when `keep`, else freed in their callback.
        pub fn new(pci: &str, tasks: u32, keep: bool) -> Result<Rig, Error> {
            let dev = open_device_with_pci(pci, None)?;
            let pe = Pe::create()?;
            let dma = Dma::create(&dev)?;
            pe.connect_ctx(&dma.as_ctx())?;
            let (done, failed) = (Rc::new(Cell::new(0u64)), Rc::new(Cell::new(0u64)));
            let back: Rc<RefCell<Vec<MemcpyTask>>> =
                Rc::new(RefCell::new(Vec::with_capacity(tasks as usize)));
            let (d, b) = (done.clone(), back.clone());
            let f = failed.clone();
            dma.task_memcpy_set_conf(
                move |t: MemcpyTask, _, _| {
                    d.set(d.get() + 1);
                    if keep {
                        b.borrow_mut().push(t);
                    }
                },
                move |t: MemcpyTask, _, _| {
                    eprintln!("dma bench: a task failed: {:?}", t.status());
                    f.set(f.get() + 1);
                },
                tasks,
            )?;
            dma.as_ctx().start()?;
            let inv = Inventory::create(4 * tasks + 8)?;
            inv.start()?;
            Ok(Rig { pe, dma, inv, dev, done, failed, back })
        }

        /// As [`Rig::local_map`], over page-aligned memory: two such maps always sit at the
        /// same offset within a page (as an application's page-aligned buffers do), where
        /// heap buffers land wherever the allocator's state puts them — and a copy's speed
        /// depends on the two addresses' distance modulo 4 KiB (the 4 KiB rows moved by 25 %
        /// between two builds that differed only in what ran before them).
        pub fn local_map_paged(&self, len: usize, fill: u8) -> Result<Mmap, Error> {
            let mem = doca_mmap::SharedMem::alloc(len)?;
            mem.write(0, &vec![fill; len])?;
            let m = Mmap::create()?;
            m.set_memrange(mem)?;
            m.add_dev(&self.dev)?;
            m.start()?;
            Ok(m)
        }

        /// A local map of `len` bytes filled with `fill`, added to the rig's device.
        pub fn local_map(&self, len: usize, fill: u8) -> Result<Mmap, Error> {
            let m = Mmap::create()?;
            m.set_memrange(vec![fill; len])?;
            m.add_dev(&self.dev)?;
            m.start()?;
            Ok(m)
        }

        /// `n` kept tasks, task i copying `size` bytes at `i * size` of `src` (whole data)
        /// to the same offset of `dst` (empty room), waiting in [`Rig::back`].
        pub fn tasks(&self, src: &Mmap, dst: &Mmap, n: usize, size: usize) -> Result<(), Error> {
            for i in 0..n {
                let (s, d) = self.pair(src, i * size, dst, i * size, size)?;
                let t = self.dma.task_memcpy_alloc_init(Some(&s), Some(&d), Data::NONE)?;
                self.back.borrow_mut().push(t);
            }
            Ok(())
        }

        /// A source of `len` bytes of data at `soff` of `src` (by address, as the map counts
        /// them: the exporter's for an import) and a destination of `len` bytes of room at
        /// `doff` of `dst`.
        pub fn pair(
            &self,
            src: &Mmap,
            soff: usize,
            dst: &Mmap,
            doff: usize,
            len: usize,
        ) -> Result<(Buf, Buf), Error> {
            let (base, _) = src.memrange()?;
            let s = self.inv.buf_get_by_data(src, base + soff, len)?;
            let d = self.inv.buf_get_at(dst, doff, len)?;
            Ok((s, d))
        }

        /// Frees the tasks handed back and returns their buffers to the inventory.
        pub fn clear(&self) {
            for t in self.back.borrow_mut().drain(..) {
                for b in [t.src(), t.dst()].into_iter().flatten() {
                    let _ = b.dec_refcount();
                }
            }
        }

        /// Resubmits every task handed back (destination emptied first) until `k` more have
        /// completed, `depth` at most in flight; false if one failed or on time-out.
        pub fn cycle(&self, k: u64, depth: usize) -> bool {
            let target = self.done.get() + k;
            let mut submitted = 0u64;
            let mut in_flight = 0usize;
            let mut last = self.done.get();
            let mut passes = 0u32;
            let deadline = std::time::Instant::now() + super::GIVE_UP;
            while self.done.get() < target {
                let now = self.done.get();
                in_flight -= (now - last) as usize;
                last = now;
                while submitted < k && in_flight < depth {
                    let Some(t) = self.back.borrow_mut().pop() else { break };
                    if let Some(d) = t.dst() {
                        let _ = d.reset_data_len();
                    }
                    if t.submit().is_err() {
                        return false;
                    }
                    submitted += 1;
                    in_flight += 1;
                }
                self.pe.progress();
                passes = passes.wrapping_add(1);
                if self.failed.get() > 0 || (passes % 1024 == 0 && std::time::Instant::now() > deadline) {
                    return false;
                }
            }
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{one_way, Est, LATENCY_BLOCKS};

    #[test]
    fn a_figure_carries_its_median_and_spread() {
        let e = Est::of(&[10.0, 12.0, 11.0, 30.0, 11.0]);
        assert_eq!(e.v, 11.0);
        assert!((e.sp - 10.0 / 11.0).abs() < 1e-9, "half of 30 − 10 over 11: {}", e.sp);
        assert!(e.noisy());
        let rate = e.map(|t| 1e3 / t);
        assert!((rate.v - 1e3 / 11.0).abs() < 1e-9 && rate.sp == e.sp);
        assert!(Est::of(&[]).v.is_nan(), "no repetition: NaN, not a panic");
        assert!(!Est::once(5.0).noisy() && Est::once(5.0).sp.is_nan());
        let steady = Est::of(&[100.0, 101.0, 99.0]);
        assert!(!steady.noisy() && (steady.sp - 0.01).abs() < 1e-9);
    }

    #[test]
    fn a_latency_series_is_spread_by_its_blocks() {
        // Steady round trips of 200 ns: one way 100 ns, no spread.
        let steady = vec![200.0; 1000];
        let (p50, p99) = one_way(&steady);
        assert_eq!((p50.v, p50.sp, p99), (100.0, 0.0, 100.0));
        // One block of five twice as slow (a slow phase of the machine): its p50 is 400, the
        // others' 200, the whole series' 200: ±50 %, noisy.
        let mut phased = vec![200.0; 1000];
        phased[800..].fill(400.0);
        let (p50, _) = one_way(&phased);
        assert_eq!(LATENCY_BLOCKS, 5);
        assert_eq!(p50.v, 100.0);
        assert!((p50.sp - 0.5).abs() < 1e-9 && p50.noisy(), "{p50:?}");
        // Too short a series for blocks: its spread is unknown, not zero.
        assert!(one_way(&[300.0, 100.0]).0.sp.is_nan());
    }
}
