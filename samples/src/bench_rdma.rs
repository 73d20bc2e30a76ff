//! `doca_bench`'s RDMA rows: two processes, each with an RDMA context connected to the
//! other's. The peer ([`serve`]) exports a map for reads and writes and either echoes each
//! message it receives or only takes them; the measuring side ([`Side`]) times writes, reads,
//! send/receive round trips and a pipelined send rate.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::Instant;

use doca_buf::{Buf, Inventory};
use doca_core::{open_device_with_pci, Data, Dev, Error, Pe};
use doca_mmap::{AccessFlags, Mmap};
use doca_rdma::{Connection, Rdma, ReadTask, ReceiveTask, SendTask, WriteTask};

use crate::bench::{ns, GIVE_UP};

/// `doca_rdma_set_permissions`: local read/write, remote read and write.
const PERMS: u32 = 1 | 2 | 4;
/// Receive tasks each side keeps posted.
const POSTED: usize = 256;
/// Bytes of each side's map (the largest write, 1 MiB, twice over).
pub const MAP_BYTES: usize = 2 << 20;

/// One side: an RDMA context on its own engine, a map exported for RDMA, and counters of
/// what completed.
pub struct Side {
    _dev: Dev,
    /// The context's engine.
    pub pe: Pe,
    rdma: Rdma,
    map: Mmap,
    inv: Inventory,
    conn: Connection,
    remote: Option<Mmap>,
    /// Sends, writes and reads completed.
    pub done: Rc<Cell<u64>>,
    /// Messages received.
    pub received: Rc<Cell<u64>>,
    /// Tasks that failed.
    pub failed: Rc<Cell<u64>>,
    /// Receive tasks handed back, to be posted again (the echo answers first).
    back: Rc<RefCell<VecDeque<ReceiveTask>>>,
    /// The echo's source buffers, used in turn (fewer answers than these are ever in flight:
    /// the measuring side waits for each answer, or sends to a peer that does not echo).
    echo: Vec<Buf>,
    echoed: Cell<usize>,
}

fn cb_done<T>(done: &Rc<Cell<u64>>) -> impl Fn(T, Data, Data) + 'static {
    let d = done.clone();
    move |_t: T, _, _| d.set(d.get() + 1)
}

fn cb_failed<T>(failed: &Rc<Cell<u64>>) -> impl Fn(T, Data, Data) + 'static {
    let f = failed.clone();
    move |_t: T, _, _| f.set(f.get() + 1)
}

impl Side {
    /// A context, started, with its map and receive tasks posted; not connected yet.
    /// Returns the side and its two blobs (connection descriptor, map export).
    pub fn new() -> Result<(Side, Vec<u8>, Vec<u8>), Error> {
        let dev = open_device_with_pci("03:00.0", None)?;
        let pe = Pe::create()?;
        let rdma = Rdma::create(&dev)?;
        rdma.set_permissions(PERMS)?;
        rdma.set_send_queue_size(POSTED as u32)?;
        rdma.set_recv_queue_size(POSTED as u32)?;
        let (done, received, failed) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
        let back: Rc<RefCell<VecDeque<ReceiveTask>>> = Rc::default();
        rdma.task_send_set_conf(cb_done::<SendTask>(&done), cb_failed::<SendTask>(&failed), POSTED as u32)?;
        rdma.task_write_set_conf(cb_done::<WriteTask>(&done), cb_failed::<WriteTask>(&failed), 64)?;
        rdma.task_read_set_conf(cb_done::<ReadTask>(&done), cb_failed::<ReadTask>(&failed), 64)?;
        let (r, b) = (received.clone(), back.clone());
        rdma.task_receive_set_conf(
            move |t: ReceiveTask, _, _| {
                r.set(r.get() + 1);
                b.borrow_mut().push_back(t);
            },
            cb_failed::<ReceiveTask>(&failed),
            POSTED as u32,
        )?;
        pe.connect_ctx(&rdma.as_ctx())?;
        rdma.as_ctx().start()?;
        let map = Mmap::create()?;
        map.set_memrange(doca_mmap::SharedMem::alloc(MAP_BYTES)?)?;
        map.set_permissions(
            AccessFlags::LOCAL_READ_WRITE | AccessFlags::RDMA_READ | AccessFlags::RDMA_WRITE,
        )?;
        map.add_dev(&dev)?;
        map.start()?;
        let export = map.export_rdma(&dev)?;
        let inv = Inventory::create(2 * POSTED as u32 + 128)?;
        inv.start()?;
        let (desc, conn) = rdma.export()?;
        let echo = (0..64)
            .map(|i| inv.buf_get_at(&map, MAP_BYTES / 2 - (i + 1) * 4096, 4096))
            .collect::<Result<Vec<Buf>, Error>>()?;
        let side = Side {
            echo,
            echoed: Cell::new(0),
            _dev: dev,
            pe,
            rdma,
            map,
            inv,
            conn,
            remote: None,
            done,
            received,
            failed,
            back,
        };
        // Receives posted on the second half of the map, 4 KiB apart.
        for i in 0..POSTED {
            let b = side.inv.buf_get_at(&side.map, MAP_BYTES / 2 + (i % 256) * 4096, 4096)?;
            side.rdma.task_receive_alloc_init(Some(&b), Data::NONE)?.submit().map_err(|r| r.error)?;
        }
        Ok((side, desc, export))
    }

    /// Connects to the peer's descriptor and imports its map.
    pub fn connect(&mut self, desc: &[u8], export: &[u8]) -> Result<(), Error> {
        self.rdma.connect(desc, self.conn)?;
        self.remote = Some(Mmap::create_from_export(None, export, &self._dev)?);
        Ok(())
    }

    /// Posts again the receives that completed; with `echo`, first answers each with a send
    /// of the bytes it received. Returns whether it did anything.
    pub fn repost(&self, echo: bool) -> bool {
        let mut any = false;
        while let Some(t) = self.back.borrow_mut().pop_front() {
            any = true;
            let Some(dst) = t.dst() else { continue };
            if echo {
                // An answer of the same length from the echo buffers (the bytes do not matter).
                let n = t.result_len() as usize;
                let k = self.echoed.get();
                self.echoed.set(k.wrapping_add(1));
                let b = &self.echo[k % self.echo.len()];
                let sent = b
                    .set_data(b.head().unwrap_or(0), n.min(4096))
                    .and_then(|()| self.rdma.task_send_alloc_init(self.conn, Some(b), Data::NONE))
                    .and_then(|s| s.submit().map_err(|r| r.error));
                if sent.is_err() {
                    self.failed.set(self.failed.get() + 1);
                }
            }
            let _ = dst.reset_data_len();
            if t.submit().is_err() {
                self.failed.set(self.failed.get() + 1);
            }
        }
        any
    }

    /// A buffer of `len` bytes of this side's map at `off` (its data: `len` bytes).
    pub fn local(&self, off: usize, len: usize) -> Result<Buf, Error> {
        let b = self.inv.buf_get_at(&self.map, off, len)?;
        b.set_data(b.head()?, len)?;
        Ok(b)
    }

    /// A buffer of `len` bytes of the peer's map at its start: holding them as data (a
    /// read's source) or empty (a write's destination).
    pub fn remote(&self, len: usize, data: bool) -> Result<Buf, Error> {
        let remote = self.remote.as_ref().ok_or(Error::BadState)?;
        let base = remote.memrange()?.0;
        if data {
            self.inv.buf_get_by_data(remote, base, len)
        } else {
            self.inv.buf_get_by_addr(remote, base, len)
        }
    }

    /// Progresses until `done` (false on the bench's time-out, or a failed task).
    pub fn until(&self, echo: bool, mut done: impl FnMut(&Side) -> bool) -> bool {
        let deadline = Instant::now() + GIVE_UP;
        let mut idle = 0u32;
        while !done(self) {
            let any = self.pe.progress() | self.repost(echo);
            if self.failed.get() > 0 {
                return false;
            }
            if !any {
                idle = idle.wrapping_add(1);
                if idle % 1024 == 0 && Instant::now() > deadline {
                    return false;
                }
                std::hint::spin_loop();
            }
        }
        true
    }

    /// One write of `src` into `dst` (the peer's), waited for.
    pub fn write_once(&self, src: &Buf, dst: &Buf) -> bool {
        let before = self.done.get();
        let _ = dst.reset_data_len();
        let ok = self
            .rdma
            .task_write_alloc_init(self.conn, Some(src), Some(dst), Data::NONE)
            .and_then(|t| t.submit().map_err(|r| r.error))
            .is_ok();
        ok && self.until(false, |s| s.done.get() > before)
    }

    /// One read of `src` (the peer's) into `dst`, waited for.
    pub fn read_once(&self, src: &Buf, dst: &Buf) -> bool {
        let before = self.done.get();
        let _ = dst.reset_data_len();
        let ok = self
            .rdma
            .task_read_alloc_init(self.conn, Some(src), Some(dst), Data::NONE)
            .and_then(|t| t.submit().map_err(|r| r.error))
            .is_ok();
        ok && self.until(false, |s| s.done.get() > before)
    }

    /// One send of `src`'s data (a task allocated and submitted; false if either failed).
    pub fn send(&self, src: &Buf) -> bool {
        self.rdma
            .task_send_alloc_init(self.conn, Some(src), Data::NONE)
            .and_then(|s| s.submit().map_err(|r| r.error))
            .is_ok()
    }

    /// Tasks that failed so far.
    pub fn failures(&self) -> u64 {
        self.failed.get()
    }

    /// Round trips of `len`-byte messages to an echoing peer (ns each; the first tenth
    /// warms up and is left out).
    pub fn ping(&self, len: usize, n: u64) -> Vec<f64> {
        let Ok(src) = self.local(0, len) else { return Vec::new() };
        let mut rtts = Vec::with_capacity(n as usize);
        for i in 0..n + n / 10 {
            if i == n / 10 {
                rtts.clear();
            }
            let before = self.received.get();
            let t = Instant::now();
            if !self.send(&src) || !self.until(false, |s| s.received.get() > before) {
                break;
            }
            rtts.push(ns(t));
        }
        rtts
    }

    /// Messages per second of `n` sends of `len` bytes with `depth` in flight to a peer that
    /// takes them (each completes at the peer's acknowledgement).
    pub fn rate(&self, len: usize, n: u64, depth: u64) -> f64 {
        let Ok(src) = self.local(0, len) else { return f64::NAN };
        let start = self.done.get();
        let t = Instant::now();
        let mut submitted = 0u64;
        let ok = self.until(false, |s| {
            while submitted < n && submitted - (s.done.get() - start) < depth {
                let sent = s
                    .rdma
                    .task_send_alloc_init(s.conn, Some(&src), Data::NONE)
                    .and_then(|t| t.submit().map_err(|r| r.error));
                if sent.is_err() {
                    s.failed.set(s.failed.get() + 1);
                    return true;
                }
                submitted += 1;
            }
            s.done.get() - start >= n
        });
        if !ok || self.failed.get() > 0 {
            return f64::NAN;
        }
        n as f64 / (ns(t) / 1e9)
    }
}

/// The peer process: prints `conn <hex> <hex>` (its descriptor and map export), reads the
/// measuring side's `connect <hex> <hex>`, prints `ready`, then serves — echoing each message
/// with `echo` — until `done`.
pub fn serve(echo: bool, mut done: impl FnMut() -> bool, mut line: impl FnMut() -> Option<String>) -> bool {
    let Ok((mut side, desc, export)) = Side::new() else { return false };
    println!("conn {} {}", hex(&desc), hex(&export));
    let Some(answer) = line() else { return false };
    let mut words = answer.split_whitespace().skip(1).map(from_hex);
    let (Some(Some(d)), Some(Some(e))) = (words.next(), words.next()) else { return false };
    if side.connect(&d, &e).is_err() {
        return false;
    }
    println!("ready");
    let mut pass = 0u32;
    while pass % 1024 != 0 || !done() {
        pass = pass.wrapping_add(1);
        let any = side.pe.progress() | side.repost(echo);
        if !any {
            std::hint::spin_loop();
        }
    }
    side.failed.get() == 0
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes of a hex string (`None` when it is not one).
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}
