//! Files from a peer that this process does not keep, and sockets a peer may have queued
//! files on, are closed on a thread of their own.
//!
//! Closing a file can wait on whoever else holds it: the last close of a pipe end takes the
//! pipe's lock, which a peer holding any file of that pipe can hold for as long as it likes
//! (a `splice` into it from an empty blocking socket); a file of a FUSE file system is
//! flushed, which waits for that file system's server. The wait is uninterruptible. So no
//! thread that matters (an application's, a library thread a stop joins) closes a file a peer
//! chose: [`discard`] hands it to a `doca-link-discard` thread, which closes files one after
//! the other and may wait there for ever without harm (another thread takes over the files
//! that come meanwhile, up to [`MAX_CLOSERS`]; when every one is stuck, files beyond
//! [`QUEUE_CAP`] wait in flight to a socket of this process's, sent there by a thread of
//! their own, where they take none of its descriptors, until a closing thread comes free).
//! The same holds for a socket a peer sent packets to: closing
//! it releases the files still queued on it, in the closing thread; [`PeerFd`] closes it so
//! that none is left there, or discards it too.
//!
//! Receiving with room for fewer descriptors than a packet carries is no way out either: the
//! kernel releases the rest in the receiving thread, on its way back from `recvmsg`. Receive
//! with room for [`MAX_FDS`], or refuse descriptors on the socket ([`refuse_descriptors`]).

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::net::SocketType;

use std::sync::{Condvar, Mutex, MutexGuard};

pub use crate::scm::MAX_FDS;

/// Files waiting to be closed, and the threads closing them, of one process (a child of
/// `fork` starts its own).
struct Grave {
    pid: u32,
    queue: std::collections::VecDeque<OwnedFd>,
    /// Per closing thread started: since when it is closing a file (`None`: it looks at the
    /// queue before it waits for work).
    busy: Vec<Option<std::time::Instant>>,
    /// Files put in flight to this process's own socket while every closing thread was stuck
    /// (see [`Limbo`]), by the limbo thread (started at the first need): how many batches
    /// of them are there (counted under the lock with each send; a closing thread claims one
    /// before it receives it) and how many files (batches vary in size).
    limbo: Option<std::sync::Arc<Limbo>>,
    batches_in_limbo: usize,
    files_in_limbo: usize,
    /// Whether the limbo thread runs, and whether it has work: more than [`QUEUE_CAP`] files
    /// wait and every closing thread is stuck.
    limbo_thread: bool,
    limbo_wanted: bool,
    /// How many files at the front of the queue the limbo thread found it may not take
    /// (batches are taken from the back, beyond them).
    kept_front: usize,
    /// Until when discards do not wait for the limbo thread (it did not catch up within
    /// [`CATCH_UP`] last time, or could not start).
    no_catch_up_until: Option<std::time::Instant>,
    /// The limbo takes nothing more for now: the kernel refused a batch, or [`limbo_cap`] is
    /// reached (until a closing thread takes a batch back), or its socket pair could not be
    /// made (until the time given).
    limbo_full: bool,
    limbo_retry_at: Option<std::time::Instant>,
    /// Batches the limbo thread has put in flight so far, and how many it had at the last
    /// catch-up wait that ran out: a wait runs out on a loaded machine while the limbo thread
    /// goes on, only slower; waiting is turned off only for one that sent nothing since.
    limbo_batches_sent: u64,
    limbo_sent_at_timeout: u64,
}

impl Grave {
    fn new(pid: u32) -> Grave {
        Grave {
            pid,
            queue: std::collections::VecDeque::new(),
            busy: Vec::new(),
            limbo: None,
            batches_in_limbo: 0,
            files_in_limbo: 0,
            limbo_thread: false,
            limbo_wanted: false,
            kept_front: 0,
            no_catch_up_until: None,
            limbo_full: false,
            limbo_retry_at: None,
            limbo_batches_sent: 0,
            limbo_sent_at_timeout: 0,
        }
    }

    /// How many closing threads are not closing a file (each waits for work, or is about to
    /// look at the queue).
    fn free_closers(&self) -> usize {
        self.busy.iter().filter(|b| b.is_none()).count()
    }

    /// Whether every closing thread has been closing one file for [`STUCK`] or longer (true
    /// when none was started).
    fn all_stuck(&self, now: std::time::Instant) -> bool {
        self.busy.iter().all(|b| b.is_some_and(|t| now.duration_since(t) >= STUCK))
    }

    /// How many waiting files the limbo thread may still look at (beyond those at the front it
    /// found it may not take).
    fn limbo_may_take(&self) -> usize {
        self.queue.len().saturating_sub(self.kept_front)
    }
}

/// A stream socket pair of this process's whose queue holds files sent to it (never handed
/// to anyone; a one-byte write carries each batch, read back one byte, and its files, at a
/// time). A file in flight takes none of this process's descriptors. Files wait there, out of
/// the descriptor table, while more than [`QUEUE_CAP`] wait behind closing threads that are
/// all stuck; a closing thread takes them back when it has nothing else to close.
///
/// Only a thread of its own (`doca-link-limbo`) sends there, never a thread that discards: a
/// send carrying descriptors may run the kernel's collection of unreachable sockets in the
/// sender (older kernels), and a close of the sent descriptor, though not the file's last
/// reference, still calls the file's `flush` (a FUSE file's waits on its server). So only
/// files of the kernel's own pseudo file systems go there (pipes, sockets, anonymous inodes:
/// none has a `flush` that waits on another process — io_uring's of Linux 5.5–5.11 returns at
/// once for a thread that never used it), told by their `/proc/self/fd` link, which no path
/// can look like (a path always starts with `/`).
struct Limbo {
    tx: OwnedFd,
    rx: OwnedFd,
}

// The standard library's lock and condition variables: each is a futex word and nothing
// more, so a child of `fork` inherits no record of the parent's waiting threads
// (`parking_lot` keeps its waiters in a table in the process's memory: a child's wake-up
// could pick one of the parent's threads, which the child does not have, or loop for ever).
static GRAVE: Mutex<Option<Grave>> = Mutex::new(None);
static WORK: Condvar = Condvar::new();
static LIMBO_WORK: Condvar = Condvar::new();
static LIMBO_DONE: Condvar = Condvar::new();

type GraveGuard = MutexGuard<'static, Option<Grave>>;

/// The grave, locked (a panic while it was held leaves nothing half-done: it is a queue of
/// files and counts).
fn grave() -> GraveGuard {
    GRAVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits on `cv` with the grave's lock given up meanwhile.
fn wait(cv: &Condvar, guard: GraveGuard) -> GraveGuard {
    cv.wait(guard).unwrap_or_else(|e| e.into_inner())
}

/// How long a discard waits at most for the limbo thread to catch up when more than four
/// times [`QUEUE_CAP`] files it may take wait (a peer sending files faster than they can be
/// put away is slowed down rather than allowed to fill the table). A wait that runs out
/// while the limbo thread sent nothing since the last one ran out turns the waiting off for
/// [`NO_CATCH_UP`]: a limbo thread that cannot go on holds up a discard that long about once
/// a second. One that did send is only slow (a loaded machine): the waits go on, and the
/// table stays bounded.
const CATCH_UP: std::time::Duration = std::time::Duration::from_millis(10);
const NO_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(1);

/// The fewest files the limbo thread sends at once (each batch takes room in the socket
/// pair's buffer, whatever its size).
const MIN_BATCH: usize = 32;

/// The most closing threads: each more one stands for a close that has waited (on a peer
/// holding a lock) for longer than [`STUCK`].
pub const MAX_CLOSERS: usize = 8;

/// How long a close takes before its thread counts as stuck (a close takes microseconds).
pub const STUCK: std::time::Duration = std::time::Duration::from_millis(20);

/// The most files kept open waiting for a closing thread while every one is stuck: beyond
/// it, pipes, sockets and anonymous inodes wait in flight (see `Limbo`), taking none of the
/// process's descriptors, as far as the kernel lets this process hold them so (for a process
/// without `CAP_SYS_RESOURCE`, a quarter of its descriptor limit: the kernel counts them
/// against the user's). Other files stay in the table.
pub const QUEUE_CAP: usize = 64;

/// Closes `fd` on a closing thread of its own (`doca-link-discard`, started at the first
/// call in this process). A close that waits for ever (a peer holding a pipe's lock) holds
/// up its thread only: a file that finds every closing thread stuck (closing one file for
/// longer than [`STUCK`]) gets another thread, up to [`MAX_CLOSERS`]. Beyond that, files
/// wait for a closing thread to come free; past [`QUEUE_CAP`] of them, in flight to a socket
/// of this process's rather than in its descriptor table (see `Limbo`). This call queues the
/// file, wakes or starts a thread, and while more than four times [`QUEUE_CAP`] files wait
/// may wait up to 10 ms for the limbo thread to catch up (only under a peer's flood; about
/// once a second when the limbo thread cannot go on at all). When no thread can
/// be started at all, the descriptor is kept open for the life of the process rather than
/// closed here.
pub fn discard(fd: OwnedFd) {
    let pid = std::process::id();
    let mut guard = grave();
    if guard.as_ref().is_none_or(|g| g.pid != pid) {
        // A child of `fork`: its copies of the parent's waiting files are closed by its own
        // closing threads (a close here, in the caller's thread, could wait like any);
        // its copy of the parent's limbo is left open — the parent takes the files in
        // flight there, and a close here could be the last one.
        let mut fresh = Grave::new(pid);
        if let Some(mut parents) = guard.take() {
            std::mem::forget(parents.limbo.take());
            fresh.queue = std::mem::take(&mut parents.queue);
        }
        *guard = Some(fresh);
    }
    let g = guard.as_mut().expect("made above");
    g.queue.push_back(fd);
    if g.free_closers() > 0 {
        WORK.notify_one();
        return;
    }
    let now = std::time::Instant::now();
    if !g.all_stuck(now) {
        return; // a closer takes it next
    }
    if g.busy.len() < MAX_CLOSERS {
        let id = g.busy.len();
        match std::thread::Builder::new().name("doca-link-discard".into()).spawn(move || close_files(id)) {
            Ok(_) => {
                g.busy.push(None);
                return;
            }
            Err(e) if id == 0 => {
                tracing::warn!(target: "doca_sdk", "no thread to close a peer's file on ({e}): it stays open");
                if let Some(fd) = g.queue.pop_back() {
                    std::mem::forget(fd);
                }
                return;
            }
            Err(e) => tracing::debug!(target: "doca_sdk", "no other thread to close peers' files on ({e})"),
        }
    }
    // Every closing thread is stuck and no other can start: what waits beyond the cap goes
    // in flight, out of the descriptor table, sent there by the limbo thread.
    let limbo_open = !g.limbo_full && g.limbo_retry_at.is_none_or(|t| now >= t);
    if limbo_open && g.limbo_may_take() > QUEUE_CAP {
        let waits = g.no_catch_up_until.is_none_or(|t| now >= t);
        if g.limbo_thread {
            g.limbo_wanted = true;
            LIMBO_WORK.notify_one();
        } else if !waits {
            return; // it could not start a moment ago
        } else if std::thread::Builder::new().name("doca-link-limbo".into()).spawn(send_to_limbo).is_ok() {
            g.limbo_thread = true;
            g.limbo_wanted = true;
        } else {
            g.no_catch_up_until = Some(now + NO_CATCH_UP);
            return;
        }
        if !waits {
            return;
        }
        let until = now + CATCH_UP;
        while guard.as_ref().is_some_and(|g| g.limbo_wanted && g.limbo_may_take() > 4 * QUEUE_CAP) {
            let left = until.saturating_duration_since(std::time::Instant::now());
            let (back, waited) = LIMBO_DONE.wait_timeout(guard, left).unwrap_or_else(|e| e.into_inner());
            guard = back;
            if waited.timed_out() {
                if let Some(g) = guard.as_mut() {
                    let alive = g.limbo_batches_sent != g.limbo_sent_at_timeout;
                    g.limbo_sent_at_timeout = g.limbo_batches_sent;
                    // A limbo thread that sent nothing since the last wait ran out cannot go
                    // on: no more waiting for a while. One that did is only slow (a loaded
                    // machine): the next discard waits again, and the table stays bounded.
                    if !alive {
                        g.no_catch_up_until = Some(std::time::Instant::now() + NO_CATCH_UP);
                    }
                }
                break;
            }
        }
    }
}

/// The limbo thread: once a discard found more than [`QUEUE_CAP`] files waiting with every
/// closing thread stuck, and while batches of at least `MIN_BATCH` remain beyond half of
/// [`QUEUE_CAP`] (and beyond the files it may not take), sends the newest ones that have no `flush` in flight to [`Limbo`] (as far
/// as the kernel and [`limbo_cap`] allow), closes its descriptors of them, and puts the
/// others back in front.
fn send_to_limbo() {
    let pid = std::process::id();
    let mut guard = grave();
    loop {
        let Some(g) = guard.as_mut().filter(|g| g.pid == pid) else { return };
        let room = limbo_cap().saturating_sub(g.files_in_limbo);
        if room == 0 {
            g.limbo_full = true;
        }
        let keep = g.kept_front.max(QUEUE_CAP / 2);
        let now = std::time::Instant::now();
        // Batches of at least `MIN_BATCH` (each takes room in the pair's buffer), only while
        // no closing thread could take the files itself.
        if !g.limbo_wanted || g.limbo_full || !g.all_stuck(now) || g.queue.len() < keep + MIN_BATCH {
            g.limbo_wanted = false;
            LIMBO_DONE.notify_all();
            guard = wait(&LIMBO_WORK, guard);
            continue;
        }
        if g.limbo.is_none() {
            g.limbo = Limbo::new().map(std::sync::Arc::new);
        }
        let Some(limbo) = g.limbo.clone() else {
            // (No socket pair now, most likely no descriptor for it: tried again in a second.)
            g.limbo_retry_at = Some(now + NO_CATCH_UP);
            g.limbo_wanted = false;
            continue;
        };
        let n = (g.queue.len() - keep).min(MAX_FDS).min(room);
        let batch: Vec<OwnedFd> = g.queue.drain(g.queue.len() - n..).collect();
        drop(guard);
        let (flushless, others): (Vec<OwnedFd>, Vec<OwnedFd>) = batch.into_iter().partition(has_no_flush);
        let sent = flushless.len();
        let kept = if flushless.is_empty() { Err(flushless) } else { limbo.put(flushless) };
        guard = grave();
        let Some(g) = guard.as_mut().filter(|g| g.pid == pid) else { return };
        let refused = match kept {
            Ok(()) => {
                g.batches_in_limbo += 1;
                g.limbo_batches_sent += 1;
                g.files_in_limbo += sent;
                Vec::new()
            }
            Err(back) => back,
        };
        let stop = !refused.is_empty();
        g.queue.extend(refused);
        // Files only a closing thread may close go to the front (batches are taken from the
        // back, beyond them), so that they are not looked at again.
        g.kept_front += others.len();
        for fd in others.into_iter().rev() {
            g.queue.push_front(fd);
        }
        if g.free_closers() > 0 {
            WORK.notify_all();
        }
        if stop {
            // The kernel's limit (buffer, descriptors in flight): the rest stays in the queue
            // until a closing thread takes a batch back.
            g.limbo_full = true;
            g.limbo_wanted = false;
        }
        LIMBO_DONE.notify_all();
    }
}

/// Whether `fd` is a file of one of the kernel's pseudo file systems that have no `flush`
/// (its close waits on nobody unless it is the last): a pipe, a socket, an anonymous inode.
/// Told by its `/proc/self/fd` link, which the kernel writes for these as `pipe:[…]`,
/// `socket:[…]`, `anon_inode:…`, and as an absolute path for any other file.
fn has_no_flush(fd: &OwnedFd) -> bool {
    let link = std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(fd)));
    link.is_ok_and(|l| {
        let l = l.as_os_str().as_encoded_bytes();
        l.starts_with(b"pipe:[") || l.starts_with(b"socket:[") || l.starts_with(b"anon_inode:")
    })
}

/// The most files this process puts in flight to [`Limbo`]: unbounded for a process the
/// kernel does not count files in flight for (`CAP_SYS_RESOURCE` or `CAP_SYS_ADMIN` in the
/// first user namespace); else a quarter of its descriptor limit at the first need, since the
/// kernel counts them against the whole user's (the rest stays for this user's other
/// processes to pass descriptors — several such processes under attack at once share it).
fn limbo_cap() -> usize {
    static CAP: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CAP.get_or_init(|| {
        let caps = std::fs::read_to_string("/proc/self/status").ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        });
        const CAP_SYS_ADMIN: u32 = 21;
        const CAP_SYS_RESOURCE: u32 = 24;
        // The kernel asks for them in the first user namespace: a process in another one (a
        // rootless container) shows them but is counted all the same.
        let first_ns = std::fs::read_to_string("/proc/self/uid_map")
            .is_ok_and(|m| m.split_whitespace().collect::<Vec<_>>() == ["0", "0", "4294967295"]);
        if first_ns && caps.is_some_and(|c| c & (1 << CAP_SYS_ADMIN | 1 << CAP_SYS_RESOURCE) != 0) {
            return usize::MAX;
        }
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile).current.unwrap_or(1024);
        usize::try_from(soft / 4).unwrap_or(usize::MAX)
    })
}

impl Limbo {
    /// A stream pair: its queue is bounded by bytes (its send buffer, made as large as the
    /// system allows), not by a count of packets as a datagram pair's is (ten by default).
    fn new() -> Option<Limbo> {
        let flags = rustix::net::SocketFlags::CLOEXEC | rustix::net::SocketFlags::NONBLOCK;
        let (tx, rx) =
            rustix::net::socketpair(rustix::net::AddressFamily::UNIX, SocketType::STREAM, flags, None)
                .ok()?;
        let _ = rustix::net::sockopt::set_socket_send_buffer_size(&tx, 16 << 20);
        Some(Limbo { tx, rx })
    }

    /// Sends `batch` (at most [`MAX_FDS`] files without a `flush`) in flight with one byte (their
    /// count) and
    /// closes the descriptors (neither the files' last references nor a `flush`: no wait); the
    /// batch back when the kernel refuses.
    fn put(&self, batch: Vec<OwnedFd>) -> Result<(), Vec<OwnedFd>> {
        let fds: Vec<BorrowedFd<'_>> = batch.iter().map(AsFd::as_fd).collect();
        let sent = crate::scm::send(self.tx.as_fd(), &[batch.len() as u8], &fds).is_ok();
        drop(fds);
        if sent {
            drop(batch);
            Ok(())
        } else {
            Err(batch)
        }
    }

    /// Takes one batch of files back (one byte: how many were sent), with room for all it carries (files the descriptor
    /// table has no room for are released by the kernel, in the calling thread: call it on a
    /// closing thread, without the grave's lock). `None` when there is none.
    fn take(&self) -> Option<(Vec<OwnedFd>, usize)> {
        let mut count = [0u8; 1];
        match crate::scm::recv(self.rx.as_fd(), &mut count) {
            Ok(packet) if packet.len == 1 => Some((packet.fds, usize::from(count[0]))),
            _ => None,
        }
    }
}

/// Closing thread `id`: takes the oldest waiting file, closes it, and so on.
fn close_files(id: usize) {
    let pid = std::process::id();
    let mut guard = grave();
    loop {
        let Some(g) = guard.as_mut().filter(|g| g.pid == pid) else { return };
        if let Some(fd) = g.queue.pop_front() {
            g.kept_front = g.kept_front.saturating_sub(1);
            g.busy[id] = Some(std::time::Instant::now());
            drop(guard);
            drop(fd);
            guard = grave();
            if let Some(g) = guard.as_mut().filter(|g| g.pid == pid) {
                g.busy[id] = None;
            }
            continue;
        }
        if let (true, Some(limbo)) = (g.batches_in_limbo > 0, g.limbo.clone()) {
            // Received without the lock: a file the table has no room for is released in
            // this thread, which may then wait like any close here.
            g.batches_in_limbo -= 1;
            g.busy[id] = Some(std::time::Instant::now());
            drop(guard);
            let came = limbo.take();
            guard = grave();
            let Some(g) = guard.as_mut().filter(|g| g.pid == pid) else { return };
            g.busy[id] = None;
            match came {
                Some((fds, sent)) => {
                    // (Files the table had no room for were released: they count as taken.)
                    g.files_in_limbo = g.files_in_limbo.saturating_sub(sent);
                    g.limbo_full = false;
                    g.queue.extend(fds);
                    // (This thread is one of the free ones: others help with the batch.)
                    if g.free_closers() > 1 {
                        WORK.notify_all();
                    }
                    continue;
                }
                // Not taken after all (a transient failure): the claim goes back, and this
                // thread waits for the next file (unless files came meanwhile) instead of
                // trying again at once.
                None => {
                    g.batches_in_limbo += 1;
                    if !g.queue.is_empty() {
                        continue;
                    }
                }
            }
        }
        if guard.as_ref().is_none_or(|g| g.pid != pid) {
            return;
        }
        guard = wait(&WORK, guard);
    }
}

/// A descriptor a peer chose, or a socket of this process's a peer sends to, closed so that
/// the closing thread never waits on the peer.
///
/// - A file the peer sent ([`PeerFd::new`]), socket or not: [`discard`]ed, untouched (the
///   peer may hold the same socket, and set options or send urgent data on it that make a
///   receive release files in the receiving thread).
/// - A socket this process made, accepted or connected ([`PeerFd::socket`]): it refuses
///   descriptors from now on ([`refuse_descriptors`]) and is shut down (nobody can queue
///   anything more on it, on any kernel). When the kernel counts no file on its queue
///   (`scm_fds`), it is closed in place; else a datagram or seqpacket socket has the packets
///   with files taken off (the files [`discard`]ed) and is closed in place, and a stream
///   socket (whose urgent data a receive would drop, files and all) is [`discard`]ed.
///
/// Share one rather than duplicate it (an `Arc<PeerFd>` in an epoll set): a plain duplicate
/// closed last would release what is left on the queue in its closing thread.
#[derive(Debug)]
pub struct PeerFd {
    fd: Option<OwnedFd>,
    ours: bool,
}

impl PeerFd {
    /// Wraps a file the peer sent.
    pub fn new(fd: OwnedFd) -> PeerFd {
        PeerFd { fd: Some(fd), ours: false }
    }

    /// Wraps a socket of this process's (made, accepted, connected: nobody else holds it)
    /// that a peer sends to.
    pub fn socket(fd: OwnedFd) -> PeerFd {
        PeerFd { fd: Some(fd), ours: true }
    }

    /// The descriptor itself, for an owner that takes over closing it (a file checked to be
    /// one that closes without waiting on anyone, a memfd; or this process's own end).
    pub fn into_inner(mut self) -> OwnedFd {
        self.fd.take().expect("taken only once")
    }
}

impl From<OwnedFd> for PeerFd {
    /// [`PeerFd::new`]: a file the peer sent.
    fn from(fd: OwnedFd) -> PeerFd {
        PeerFd::new(fd)
    }
}

impl AsFd for PeerFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_ref().expect("taken only when dropped").as_fd()
    }
}

impl Drop for PeerFd {
    fn drop(&mut self) {
        let Some(fd) = self.fd.take() else { return };
        if !self.ours {
            discard(fd);
            return;
        }
        let _ = refuse_descriptors(fd.as_fd());
        // Shut down, it takes nothing more on any kernel (the peer's sends fail), and its
        // count of queued descriptors is final. Its peer sees it gone at once, as at a close.
        let _ = rustix::net::shutdown(&fd, rustix::net::Shutdown::Both);
        if holds_no_files(fd.as_fd()) {
            drop(fd);
        } else {
            discard(fd);
        }
    }
}

/// Whether the socket `sock` (this process's, shut down) holds none of a peer's files on its
/// queue, after taking off (and [`discard`]ing) those of a datagram or seqpacket socket's
/// queue. A stream socket's are not taken off (a receive would drop urgent data, and the
/// files with it, in this thread): false when it holds any.
fn holds_no_files(sock: BorrowedFd<'_>) -> bool {
    let Some(n) = queued_files(sock) else { return holds_no_files_blind(sock) };
    if n == 0 {
        return true;
    }
    if !matches!(rustix::net::sockopt::socket_type(sock), Ok(SocketType::DGRAM | SocketType::SEQPACKET)) {
        return false;
    }
    // Bounded: what is queued is all there is (a shut-down socket takes nothing more).
    for _ in 0..2 * most_queued() + 16 {
        match recv_discarding(sock, &mut [0u8; 256]) {
            Ok((_, true)) => {
                if queued_files(sock) == Some(0) {
                    return true;
                }
            }
            // (A reset is the peer's close with this side's bytes unread: read once.)
            Ok(_) | Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::CONNRESET) => {}
            Err(_) => break,
        }
    }
    queued_files(sock) == Some(0)
}

/// How many descriptors wait on the queue of the Unix socket `sock`: the kernel's count
/// (`scm_fds` in `/proc/self/fdinfo`, Linux 5.x and later). `None` where it is not shown.
fn queued_files(sock: BorrowedFd<'_>) -> Option<usize> {
    use std::io::Read;
    let path = format!("/proc/self/fdinfo/{}", std::os::fd::AsRawFd::as_raw_fd(&sock));
    let mut info = [0u8; 512];
    let mut f = std::fs::File::open(path).ok()?;
    let mut len = 0;
    while len < info.len() {
        match f.read(&mut info[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(_) => return None,
        }
    }
    scm_fds(std::str::from_utf8(&info[..len]).ok()?)
}

/// The count of descriptors queued on a Unix socket, read off its `/proc/*/fdinfo` text.
fn scm_fds(fdinfo: &str) -> Option<usize> {
    fdinfo.lines().find_map(|l| l.strip_prefix("scm_fds:")).and_then(|v| v.trim().parse().ok())
}

/// For tests and attack harnesses: how many descriptors wait on the queues of the sockets of
/// process `pid` (this one's or another's), in flight to it (`/proc`'s view).
#[doc(hidden)]
pub fn files_in_flight_to(pid: u32) -> usize {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fdinfo")) else { return 0 };
    dir.filter_map(|e| scm_fds(&std::fs::read_to_string(e.ok()?.path()).ok()?)).sum()
}

/// [`holds_no_files`] where the kernel does not count: a datagram socket is read to `EAGAIN`;
/// a seqpacket socket, whose empty queue reads empty packets once shut down, past as many
/// empty packets as a sender could have queued.
fn holds_no_files_blind(sock: BorrowedFd<'_>) -> bool {
    let empties = match rustix::net::sockopt::socket_type(sock) {
        Ok(SocketType::DGRAM) => usize::MAX,
        Ok(SocketType::SEQPACKET) => most_queued(),
        _ => return false,
    };
    let mut run = 0;
    for _ in 0..4 * most_queued() + 16 {
        match recv_discarding(sock, &mut [0u8; 256]) {
            Ok((0, false)) => {
                run += 1;
                if run > empties {
                    return true;
                }
            }
            Ok(_) => run = 0,
            Err(rustix::io::Errno::AGAIN) => return true,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
    false
}

/// How many packets one sender can have queued on a socket at most: each takes at least
/// 512 bytes of its send buffer (768 measured on x86-64 Linux 6.18 for an empty one),
/// which is at most twice `net.core.wmem_max` without `CAP_NET_ADMIN` (trusted, as root
/// is).
fn most_queued() -> usize {
    static MOST: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MOST.get_or_init(|| {
        let wmem_max = std::fs::read_to_string("/proc/sys/net/core/wmem_max")
            .ok()
            .and_then(|s| s.trim().parse::<usize>().ok())
            .unwrap_or(4 << 20);
        (2 * wmem_max / 512 + 64).clamp(1024, 1 << 20)
    })
}

/// Receives one packet from the socket `sock` (of this process: nobody else sets its
/// options) into `buf` without blocking, with room for every descriptor it carries, each
/// [`discard`]ed: its length (what fitted) and whether it carried any.
pub(crate) fn recv_discarding(sock: BorrowedFd<'_>, buf: &mut [u8]) -> rustix::io::Result<(usize, bool)> {
    let packet = crate::scm::recv(sock, buf)?;
    let carried = !packet.fds.is_empty();
    packet.fds.into_iter().for_each(discard);
    Ok((packet.len, carried))
}

/// `SO_PASSRIGHTS` (Linux 6.16 and later; not in every `libc` yet).
const SO_PASSRIGHTS: libc::c_int = 83;

/// Makes the socket `sock` refuse descriptors from now on: a peer's `sendmsg` carrying any
/// fails (`EPERM`) instead of queueing them here (what it queued before stays: receive with
/// room for [`MAX_FDS`] and [`discard`] what comes). False when the kernel cannot (before
/// Linux 6.16).
pub fn refuse_descriptors(sock: BorrowedFd<'_>) -> bool {
    let off: libc::c_int = 0;
    // SAFETY: a valid descriptor, and a pointer to an int of the size given.
    let r = unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&sock),
            libc::SOL_SOCKET,
            SO_PASSRIGHTS,
            (&off as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// For tests and attack harnesses: how many closing threads of process `pid` (this one's
/// or another's) are seen waiting uninterruptibly, i.e. stuck on a close (`/proc`'s view).
#[doc(hidden)]
pub fn stuck_closing_threads(pid: u32) -> usize {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0 };
    tasks
        .filter_map(|t| {
            let dir = t.ok()?.path();
            let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
            (comm.starts_with("doca-link-disc") && thread_state(&dir)? == 'D').then_some(())
        })
        .count()
}

/// The scheduler state of the thread whose `/proc` directory is `task` (`R`, `S`, `D`, …):
/// the first field of its `stat` after the command name, which may itself hold `)`.
fn thread_state(task: &std::path::Path) -> Option<char> {
    let stat = std::fs::read_to_string(task.join("stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

/// For tests and attack harnesses: a pipe whose lock a thread of this process holds (a
/// `splice` into it from a socket with nothing to read), with `files` of its read end of
/// their own, opened before the lock was taken: the last close of each takes the lock, so it
/// waits until [`LockedPipe::release`] (or the drop, which releases first).
#[doc(hidden)]
pub struct LockedPipe {
    /// Files of the pipe, each closed last by whoever holds it when the lock goes.
    pub files: Vec<OwnedFd>,
    release: OwnedFd,
    holder: Option<std::thread::JoinHandle<()>>,
    _ends: (OwnedFd, OwnedFd),
}

impl LockedPipe {
    /// A pipe, `files` files of its read end, and a thread holding its lock.
    pub fn new(files: usize) -> std::io::Result<LockedPipe> {
        let (r, w) = rustix::pipe::pipe()?;
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&r));
        let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC;
        let files = (0..files)
            .map(|_| rustix::fs::open(path.as_str(), flags, rustix::fs::Mode::empty()))
            .collect::<rustix::io::Result<Vec<_>>>()?;
        let (held, release) = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::STREAM,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        )?;
        let w2 = w.try_clone()?;
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let holder = std::thread::spawn(move || {
            let _ = tid_tx.send(rustix::thread::gettid().as_raw_nonzero().get());
            let _ = rustix::pipe::splice(&held, None, &w2, None, 16, rustix::pipe::SpliceFlags::empty());
        });
        let mut pipe = LockedPipe { files, release, holder: Some(holder), _ends: (r, w) };
        let tid = tid_rx.recv().map_err(|_| std::io::Error::other("the locking thread ended"))?;
        // The splice holds the lock from before it waits for the socket's bytes until it
        // returns: the thread asleep inside it holds the lock.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !Self::asleep_in_splice(tid) {
            if std::time::Instant::now() >= deadline {
                pipe.release();
                return Err(std::io::Error::other("the locking thread never slept in its splice"));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        Ok(pipe)
    }

    /// Whether thread `tid` of this process sleeps inside `splice` (`/proc`'s view of it).
    fn asleep_in_splice(tid: i32) -> bool {
        let task = std::path::PathBuf::from(format!("/proc/self/task/{tid}"));
        let in_splice = std::fs::read_to_string(task.join("syscall"))
            .is_ok_and(|s| s.split_whitespace().next() == Some(libc::SYS_splice.to_string().as_str()));
        in_splice && thread_state(&task) == Some('S')
    }

    /// Lets the lock go (the splice gets its bytes and returns).
    pub fn release(&mut self) {
        if let Some(h) = self.holder.take() {
            let _ = rustix::io::write(&self.release, b"go");
            let _ = h.join();
        }
    }
}

impl Drop for LockedPipe {
    fn drop(&mut self) {
        self.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A discarded file is closed (on a closing thread): the other end of a pipe sees it
    /// go.
    #[test]
    fn a_discarded_file_is_closed() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        discard(r);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            match rustix::io::write(&w, b"x") {
                Err(rustix::io::Errno::PIPE) => break,
                _ => assert!(std::time::Instant::now() < deadline, "the read end was never closed"),
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    /// The helper the hostile tests rely on holds what it says: the last close of one of its
    /// files waits until it lets the lock go (else those tests would pass testing nothing).
    #[test]
    fn a_locked_pipe_s_last_close_waits_until_released() {
        let mut pipe = LockedPipe::new(1).unwrap();
        let file = pipe.files.pop().unwrap();
        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let closer = std::thread::spawn(move || {
            drop(file);
            let _ = done_tx.send(());
        });
        let early = done_rx.recv_timeout(std::time::Duration::from_millis(50)).is_ok();
        pipe.release();
        closer.join().unwrap();
        assert!(!early, "the close did not wait for the lock");
        assert!(done_rx.try_recv().is_ok());
    }

    /// A close that waits for ever (the last file of a pipe whose lock is held) holds up its
    /// closing thread only: a file discarded after it is closed all the same.
    #[test]
    fn a_stuck_close_holds_up_no_other_file() {
        let mut pipe = LockedPipe::new(1).unwrap();
        discard(pipe.files.pop().unwrap());
        std::thread::sleep(STUCK * 3);
        let (r, w) = rustix::pipe::pipe().unwrap();
        discard(r);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let closed = loop {
            match rustix::io::write(&w, b"x") {
                Err(rustix::io::Errno::PIPE) => break true,
                _ if std::time::Instant::now() >= deadline => break false,
                _ => std::thread::sleep(std::time::Duration::from_millis(5)),
            }
        };
        pipe.release();
        assert!(closed, "a file waited behind a stuck close");
    }

    /// A socket refusing descriptors makes its peer's `sendmsg` of one fail, where the
    /// kernel supports it; a plain packet still goes through.
    #[test]
    fn a_socket_refusing_descriptors_gets_none() {
        let (a, b) = crate::socketpair().unwrap();
        if !refuse_descriptors(b.as_fd()) {
            eprintln!("skipped: this kernel has no SO_PASSRIGHTS (Linux 6.16)");
            return;
        }
        let (r, _w) = rustix::pipe::pipe().unwrap();
        assert!(crate::send(a.as_fd(), b"with a file", &[r.as_fd()]).is_err());
        assert!(crate::send(a.as_fd(), b"plain", &[]).is_ok());
    }

    /// Dropping a peer's socket with one of the peer's files still queued on it returns at
    /// once, even when closing that file would wait (a pipe whose lock the peer holds): the
    /// file is taken off the queue and closed on a closing thread.
    #[test]
    fn dropping_a_peer_socket_waits_on_no_file_queued_on_it() {
        let mut pipe = LockedPipe::new(4).unwrap();
        let (seq, dgram) = (rustix::net::SocketType::SEQPACKET, rustix::net::SocketType::DGRAM);
        // (kind, whether the peer closed its end after sending, whether the socket is one a
        // peer sent rather than this process's own)
        for (kind, peer_gone, sent) in
            [(seq, false, false), (seq, true, false), (dgram, false, false), (seq, false, true)]
        {
            let (peer, ours) = rustix::net::socketpair(
                rustix::net::AddressFamily::UNIX,
                kind,
                rustix::net::SocketFlags::CLOEXEC | rustix::net::SocketFlags::NONBLOCK,
                None,
            )
            .unwrap();
            let file = pipe.files.pop().unwrap();
            crate::send(peer.as_fd(), b"", &[]).unwrap();
            crate::send(peer.as_fd(), b"a file", &[file.as_fd()]).unwrap();
            // The queued copy is the last of its file now (this close is not: it takes no lock).
            drop(file);
            let peer = if peer_gone {
                drop(peer);
                None
            } else {
                Some(peer)
            };
            let ours = if sent { PeerFd::new(ours) } else { PeerFd::socket(ours) };
            let dropper = std::thread::spawn(move || drop(ours));
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            while !dropper.is_finished() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            let done = dropper.is_finished();
            if !done {
                pipe.release();
            }
            assert!(
                done,
                "dropping a {kind:?} socket waited on the peer's file (peer gone: {peer_gone}, sent: {sent})"
            );
            dropper.join().unwrap();
            // Its peer sees it gone.
            if let (Some(peer), false) = (peer, sent) {
                assert!(crate::send(peer.as_fd(), b"more", &[]).is_err(), "{kind:?}");
            }
        }
    }
}
