//! Whole pages of heap memory swapped for a shared memfd mapping while exported, so that an
//! importer in another process maps them and copies at memory speed (see [`crate::served`]
//! for the protocol, and for the partial pages at the ends, which stay served).
//!
//! **Swap in** (at the first export of a map of memory registered by address): under the
//! process-wide swap lock, `/proc/self/maps` must show every page of the span as private
//! anonymous read-write memory (the heap, an anonymous `mmap`; never the main thread's stack,
//! a file, or memory shared already — those stay served). A memfd of the span's size is
//! created and sealed against shrinking and growing (and, for a read-only export, against
//! any future write through a new mapping or `write`), then `F_SEAL_SEAL`: no importer can
//! ever resize it or lift a seal. It is mapped shared at a temporary address and populated;
//! then the span is **frozen** (`mprotect` read-only), copied, and the temporary mapping is
//! moved over the span in one `mremap(MREMAP_FIXED)` — atomic for every other thread: a
//! read sees the old page or the new one, both with the same bytes — and the span is thawed.
//!
//! **Other threads writing meanwhile.** A write into a frozen span faults. A `SIGSEGV`
//! handler, installed once (chaining to the handler it replaced for every fault that is not
//! ours), sees the fault address inside the frozen span, waits on a futex until the swap is
//! over and returns: the faulting instruction runs again, now on the new mapping, whose bytes
//! are the span's as of the freeze — no write is lost (a read-modify-write that faulted never
//! stored). A fault the handler meets after the thaw (its thread was slow to run it) is told
//! from a real one by asking the kernel whether the address is writable now
//! (`FUTEX_WAKE_OP` adding 0 to the word: atomic, changes nothing, `EFAULT` when not
//! writable): writable → retried, else → the previous handler. The handler uses atomics and
//! futex syscalls only (async-signal-safe), and the swapper neither allocates nor takes a
//! lock while a span is frozen (a thread waiting in the handler may hold `malloc`'s).
//! Limits: a system call writing into the span during the freeze (`read(2)` into the buffer)
//! fails with `EFAULT` instead of waiting — the freeze lasts one memcpy of the span (about
//! 25 µs per MiB), at export and at revocation only; a span on the stack of a thread without
//! an alternate signal stack cannot be frozen safely (that thread's own fault could not be
//! handled): memory registered from a thread's stack must not be exported while that thread
//! runs (the main thread's stack is never swapped).
//!
//! **fork().** A shared mapping stays shared in a child, where the heap was copy-on-write.
//! A `pthread_atfork` handler takes the swap lock in the parent before `fork` (no swap is
//! half done in the child), and in the child — one thread, async-signal-safe calls only —
//! swaps every live span back to private anonymous memory (copy, then `mremap` over it),
//! after checking with `/proc/self/maps` (read with `open`/`read` into a stack buffer) that
//! the pages are still the memfd's. The child thus owns a private copy as of the fork: its
//! writes reach neither the parent nor any importer. (`vfork` and `posix_spawn` run no
//! handler: their child shares the memory until it execs, as always.)
//!
//! **Revocation** (the map stopped or destroyed) swaps back the same way, freeze included,
//! but only the pieces `/proc/self/maps` still shows as this memfd's pages at their own
//! offsets, each restored with the protection it has now: a range the application freed or
//! unmapped (a bug, but no crash) is left alone, and whatever was mapped there since is
//! never touched. From then on the exporter's pages are private again: an importer's mapping
//! sees none of its later writes, and its own writes land in pages nobody else maps.

#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Spans swapped at one time in a process; beyond, exports stay served.
const MAX_SPANS: usize = 256;

/// The process-wide swap lock (0 free, 1 held): swaps one at a time, never during `fork`.
static LOCK: AtomicU32 = AtomicU32::new(0);
/// Odd while a span is frozen; the futex the handler waits on.
static FREEZE: AtomicU32 = AtomicU32::new(0);
static FROZEN_START: AtomicUsize = AtomicUsize::new(0);
static FROZEN_END: AtomicUsize = AtomicUsize::new(0);
/// `si_code` of a fault on a mapped page the access is not allowed to.
const SEGV_ACCERR: i32 = 2;
/// Writes that met a frozen span and waited (see [`frozen_writes`]).
static WAITED: AtomicU64 = AtomicU64::new(0);

/// How many writes of this process's threads met a span being swapped and waited for the
/// swap to finish (for tests: proof that the handler ran).
#[doc(hidden)]
pub fn frozen_writes() -> u64 {
    WAITED.load(Ordering::Relaxed)
}

/// A word for `FUTEX_WAKE_OP`'s first address (nobody waits on it).
static PROBE: AtomicU32 = AtomicU32::new(0);

/// A live span: state (0 free, 1 live), where, how long, the memfd's inode.
struct Entry {
    state: AtomicU32,
    start: AtomicUsize,
    len: AtomicUsize,
    ino: AtomicU64,
}

static TABLE: [Entry; MAX_SPANS] = [const {
    Entry {
        state: AtomicU32::new(0),
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        ino: AtomicU64::new(0),
    }
}; MAX_SPANS];

/// The handler `SIGSEGV` had before ours (written once, before ours is installed).
static mut PREVIOUS: std::mem::MaybeUninit<libc::sigaction> = std::mem::MaybeUninit::uninit();

fn futex_wait(word: &AtomicU32, val: u32) {
    // SAFETY: FUTEX_WAIT on a live static word; no timeout; returns at once if it changed.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            val,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a live static word.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, i32::MAX);
    }
}

fn lock() {
    while LOCK.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_err() {
        futex_wait(&LOCK, 1);
    }
}

fn unlock() {
    LOCK.store(0, Ordering::Release);
    futex_wake(&LOCK);
}

struct Locked;

impl Locked {
    fn take() -> Locked {
        lock();
        Locked
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        unlock();
    }
}

/// Whether `addr` is writable now, asked of the kernel without changing a byte: an atomic add
/// of 0 to the aligned word (`FUTEX_WAKE_OP`), which fails with `EFAULT` when it is not.
fn writable_now(addr: usize) -> bool {
    const ADD_ZERO: u32 = 1 << 28; // FUTEX_OP(FUTEX_OP_ADD, 0, FUTEX_OP_CMP_EQ, 0)
    let word = addr & !3;
    // SAFETY: the kernel checks `word` itself (EFAULT, no signal); PROBE is a live word.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            PROBE.as_ptr(),
            libc::FUTEX_WAKE_OP | libc::FUTEX_PRIVATE_FLAG,
            0,
            0usize,
            word as *mut u32,
            ADD_ZERO,
        )
    };
    r >= 0
}

extern "C" fn on_segv(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel hands a valid siginfo to an SA_SIGINFO handler.
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    let f = FREEZE.load(Ordering::SeqCst);
    if f % 2 == 1 && FROZEN_START.load(Ordering::SeqCst) <= addr && addr < FROZEN_END.load(Ordering::SeqCst) {
        while FREEZE.load(Ordering::SeqCst) == f {
            futex_wait(&FREEZE, f);
        }
        WAITED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    if code == SEGV_ACCERR && writable_now(addr) {
        return;
    }
    // Not ours: the previous handler's business.
    // SAFETY: PREVIOUS was written before this handler was installed and never since.
    let prev = unsafe { (*std::ptr::addr_of!(PREVIOUS)).assume_init_ref() };
    let h = prev.sa_sigaction;
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        // SAFETY: a plain sigaction call (async-signal-safe): the fault comes again on return
        // and takes the default action.
        unsafe {
            let mut dfl: libc::sigaction = std::mem::zeroed();
            dfl.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &dfl, std::ptr::null_mut());
        }
    } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the handler the process had installed, called as it expects.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, ctx);
    } else {
        // SAFETY: as above, a one-argument handler.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

extern "C" fn before_fork() {
    lock();
}

extern "C" fn after_fork_parent() {
    unlock();
}

extern "C" fn after_fork_child() {
    // One thread, async-signal-safe calls only: every live span back to private memory.
    for e in &TABLE {
        if e.state.load(Ordering::Relaxed) == 1 {
            let (start, len, ino) = (
                e.start.load(Ordering::Relaxed),
                e.len.load(Ordering::Relaxed),
                e.ino.load(Ordering::Relaxed),
            );
            let mut pieces = Pieces::new();
            if our_pieces(start, len, ino, &mut pieces) {
                for p in pieces.list() {
                    let _ = back_to_private(*p, false);
                }
            }
            e.state.store(0, Ordering::Relaxed);
        }
    }
    LOCK.store(0, Ordering::Relaxed);
}

/// Installs the fault handler and the fork handlers, once; false when that failed (no swap
/// then).
fn install() -> bool {
    static DONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DONE.get_or_init(|| {
        // Our code must stay mapped while the handlers are installed: a library loaded with
        // dlopen is made undeletable (dlclose leaves it).
        // SAFETY: dladdr on one of our functions; dlopen with RTLD_NOLOAD only adds a flag
        // to an object loaded already (the main program's null name is refused harmlessly).
        unsafe {
            let mut dl: libc::Dl_info = std::mem::zeroed();
            if libc::dladdr(on_segv as *const libc::c_void, &mut dl) != 0 && !dl.dli_fname.is_null() {
                let h = libc::dlopen(dl.dli_fname, libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE);
                let _ = h; // never closed: the reference stays with the object
            }
        }
        // SAFETY: sigaction with a zeroed struct filled with our handler; the previous one is
        // saved before ours can run (PREVIOUS is written here only, once).
        let ok = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGSEGV, std::ptr::null(), &mut old) != 0 {
                return false;
            }
            (*std::ptr::addr_of_mut!(PREVIOUS)).write(old);
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_segv as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(libc::SIGSEGV, &act, std::ptr::null_mut()) == 0
        };
        if !ok {
            tracing::warn!(target: "doca_sdk", "mmap export: no SIGSEGV handler, heap exports stay served");
            return false;
        }
        // SAFETY: registering three handlers of this module (kept mapped, see above).
        let r = unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork_parent), Some(after_fork_child)) };
        if r != 0 {
            tracing::warn!(target: "doca_sdk", "mmap export: pthread_atfork failed, heap exports stay served");
            return false;
        }
        true
    })
}

/// A piece of a span to swap: start, length, protection to give it.
#[derive(Clone, Copy)]
struct Piece {
    start: usize,
    len: usize,
    prot: i32,
}

/// Pieces found in `/proc/self/maps` (a fixed array: no allocation in the fork child).
struct Pieces {
    at: [Piece; 16],
    n: usize,
    overflow: bool,
}

impl Pieces {
    fn new() -> Pieces {
        Pieces { at: [Piece { start: 0, len: 0, prot: 0 }; 16], n: 0, overflow: false }
    }

    fn push(&mut self, p: Piece) {
        match self.at.get_mut(self.n) {
            Some(slot) => {
                *slot = p;
                self.n += 1;
            }
            None => self.overflow = true,
        }
    }

    fn list(&self) -> &[Piece] {
        &self.at[..self.n]
    }
}

/// One line of `/proc/self/maps`.
struct Vma<'a> {
    start: usize,
    end: usize,
    perms: &'a [u8],
    offset: usize,
    inode: u64,
    path: &'a [u8],
}

fn hex(s: &[u8]) -> Option<usize> {
    let mut v: usize = 0;
    if s.is_empty() {
        return None;
    }
    for &c in s {
        let d = (c as char).to_digit(16)?;
        v = v.checked_mul(16)?.checked_add(d as usize)?;
    }
    Some(v)
}

fn dec(s: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    for &c in s {
        let d = (c as char).to_digit(10)?;
        v = v.checked_mul(10)?.checked_add(u64::from(d))?;
    }
    Some(v)
}

fn parse(line: &[u8]) -> Option<Vma<'_>> {
    let mut f = line.splitn(6, |&c| c == b' ');
    let range = f.next()?;
    let perms = f.next()?;
    let offset = hex(f.next()?)?;
    let _dev = f.next()?;
    let inode = dec(f.next()?)?;
    let path = f.next().unwrap_or(b"");
    let path = &path[path.iter().position(|&c| c != b' ').unwrap_or(path.len())..];
    let dash = range.iter().position(|&c| c == b'-')?;
    Some(Vma { start: hex(&range[..dash])?, end: hex(&range[dash + 1..])?, perms, offset, inode, path })
}

/// Calls `each` for every mapping of this process, in address order, until it returns false;
/// false when the table could not be read. Async-signal-safe (open, read, close; a stack
/// buffer): usable in a fork child. A line too long for the buffer is skipped.
fn for_each_vma(mut each: impl FnMut(&Vma<'_>) -> bool) -> bool {
    const PATH: &[u8] = b"/proc/self/maps\0";
    // SAFETY: a NUL-terminated path; the descriptor is owned from here.
    let fd = unsafe { libc::open(PATH.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return false;
    }
    // SAFETY: a descriptor just opened, owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut buf = [0u8; 8192];
    let (mut have, mut skipping) = (0usize, false);
    loop {
        // SAFETY: reading into the free tail of the buffer.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf[have..].as_mut_ptr().cast(), buf.len() - have) };
        if n < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return false;
        }
        let n = n as usize;
        if n == 0 {
            return true; // a last line without newline never happens in this file
        }
        have += n;
        let mut from = 0;
        while let Some(nl) = buf[from..have].iter().position(|&c| c == b'\n') {
            let line = &buf[from..from + nl];
            if !skipping {
                if let Some(v) = parse(line) {
                    if !each(&v) {
                        return true;
                    }
                }
            }
            skipping = false;
            from += nl + 1;
        }
        buf.copy_within(from..have, 0);
        have -= from;
        if have == buf.len() {
            // A line longer than the buffer: its rest is skipped.
            have = 0;
            skipping = true;
        }
    }
}

fn prot_of(perms: &[u8]) -> i32 {
    let mut p = 0;
    if perms.first() == Some(&b'r') {
        p |= libc::PROT_READ;
    }
    if perms.get(1) == Some(&b'w') {
        p |= libc::PROT_WRITE;
    }
    if perms.get(2) == Some(&b'x') {
        p |= libc::PROT_EXEC;
    }
    p
}

/// Whether `start..start+len` overlaps the calling thread's stack (which it writes while the
/// span is frozen: it would wait for itself). Unknown → true.
fn on_my_stack(start: usize, len: usize) -> bool {
    // SAFETY: the attributes of the calling thread, read into a zeroed struct and destroyed.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return true;
        }
        let (mut base, mut size) = (std::ptr::null_mut(), 0usize);
        let r = libc::pthread_attr_getstack(&attr, &mut base, &mut size);
        libc::pthread_attr_destroy(&mut attr);
        if r != 0 {
            return true;
        }
        let (s, e) = (base as usize, base as usize + size);
        start < e && s < start + len
    }
}

/// Whether every page of `start..start+len` is private anonymous read-write memory (not the
/// main thread's stack).
fn is_private_heap(start: usize, len: usize) -> bool {
    let end = start + len;
    let mut next = start;
    let read = for_each_vma(|v| {
        if v.end <= next {
            return true;
        }
        if v.start > next {
            return false; // a hole
        }
        // Unnamed, the heap, or anonymous memory named with `PR_SET_VMA_ANON_NAME` (glibc
        // names its arenas so when asked to).
        let anon =
            v.inode == 0 && (v.path.is_empty() || v.path == b"[heap]" || v.path.starts_with(b"[anon:"));
        if !anon || v.perms.get(..4) != Some(b"rw-p") {
            return false;
        }
        next = v.end;
        next < end
    });
    read && next >= end
}

/// The pieces of `start..start+len` still mapped from memfd `ino` at their own offsets.
/// False when the table could not be read or has too many pieces.
fn our_pieces(start: usize, len: usize, ino: u64, out: &mut Pieces) -> bool {
    let end = start + len;
    let read = for_each_vma(|v| {
        if v.end <= start {
            return true;
        }
        if v.start >= end {
            return false;
        }
        let (s, e) = (v.start.max(start), v.end.min(end));
        let ours = v.inode == ino
            && v.path.starts_with(b"/memfd:doca-emu-swap")
            && v.perms.get(3) == Some(&b's')
            && v.offset.checked_add(s - v.start) == Some(s - start);
        if ours {
            out.push(Piece { start: s, len: e - s, prot: prot_of(v.perms) });
        }
        true
    });
    read && !out.overflow
}

/// Freezes `start..start+len` (read-only, the handler told): other threads' writes wait.
fn freeze(start: usize, len: usize) -> bool {
    FROZEN_START.store(start, Ordering::SeqCst);
    FROZEN_END.store(start + len, Ordering::SeqCst);
    FREEZE.fetch_add(1, Ordering::SeqCst);
    // SAFETY: page-aligned range of this process's own mapping (checked by the caller).
    let r = unsafe { libc::mprotect(start as *mut libc::c_void, len, libc::PROT_READ) };
    if r != 0 {
        thaw();
        return false;
    }
    true
}

fn thaw() {
    FREEZE.fetch_add(1, Ordering::SeqCst);
    futex_wake(&FREEZE);
}

/// Copies the frozen `span` into `tmp` (a fresh mapping of the same length) and moves `tmp`
/// over it. On failure, the span is as it was (protection `prot` again) and `tmp` is gone.
///
/// # Safety
/// `span` is a page-aligned range of this process's memory, readable; `tmp` a mapping of
/// `span.len` bytes nothing else uses.
unsafe fn move_over(span: Piece, tmp: *mut libc::c_void, prot: i32, frozen: bool) -> bool {
    if frozen && !freeze(span.start, span.len) {
        // SAFETY: the caller's fresh mapping.
        unsafe { libc::munmap(tmp, span.len) };
        return false;
    }
    // SAFETY: both ranges are mapped and readable/writable for `len` bytes and disjoint.
    unsafe { std::ptr::copy_nonoverlapping(span.start as *const u8, tmp.cast::<u8>(), span.len) };
    // SAFETY: moves the caller's mapping over the span (the caller checked it is ours).
    let moved = unsafe {
        libc::mremap(tmp, span.len, span.len, libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED, span.start)
    };
    let ok = moved as usize == span.start;
    // SAFETY: restoring protections of the span (the old mapping's on failure, the new one's
    // wanted protection on success), and dropping `tmp` on failure.
    unsafe {
        if ok {
            if prot != libc::PROT_READ | libc::PROT_WRITE {
                libc::mprotect(span.start as *mut libc::c_void, span.len, prot);
            }
        } else {
            if frozen {
                libc::mprotect(span.start as *mut libc::c_void, span.len, prot);
            }
            libc::munmap(tmp, span.len);
        }
    }
    if frozen {
        thaw();
    }
    ok
}

/// Puts a piece back to private anonymous memory (its bytes kept, its protection `p.prot`).
fn back_to_private(p: Piece, frozen: bool) -> bool {
    // SAFETY: a fresh private anonymous mapping.
    let tmp = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            p.len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if tmp == libc::MAP_FAILED {
        return false;
    }
    // SAFETY: `p` was found mapped from our memfd just now (the caller holds the swap lock
    // or is the only thread); `tmp` is fresh.
    unsafe { move_over(p, tmp, p.prot, frozen) }
}

/// The whole pages of a heap range, shared through a memfd while this lives (see the module
/// docs). Dropping it swaps them back to private memory.
pub(crate) struct Swapped {
    slot: usize,
    pid: u32,
    start: usize,
    len: usize,
    ino: u64,
    fd: OwnedFd,
}

impl std::fmt::Debug for Swapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Swapped({:#x}+{})", self.start, self.len)
    }
}

impl Swapped {
    /// Swaps the whole pages of `addr..addr+len` for a shared memfd mapping, or says why not
    /// (`Err`: the range stays served, logged at debug level by the caller).
    /// `read_only`: the memfd is sealed against every future writable mapping and write.
    pub(crate) fn swap_in(addr: usize, len: usize, read_only: bool) -> std::result::Result<Swapped, String> {
        let page = rustix::param::page_size();
        let start = addr.checked_add(page - 1).map(|a| a / page * page).ok_or("address overflow")?;
        let end = addr.checked_add(len).ok_or("address overflow")? / page * page;
        if end <= start {
            return Err(format!("no whole page in {len} bytes at {addr:#x}"));
        }
        let span = end - start;
        if !install() {
            return Err("no fault handler".into());
        }
        if on_my_stack(start, span) {
            return Err(format!("{span} bytes at {start:#x} are on this thread's stack"));
        }
        let _lock = Locked::take();
        if !is_private_heap(start, span) {
            return Err(format!(
                "{span} bytes at {start:#x} are not all private anonymous read-write memory"
            ));
        }
        let slot = TABLE
            .iter()
            .position(|e| e.state.load(Ordering::Relaxed) == 0)
            .ok_or_else(|| format!("{MAX_SPANS} spans swapped already"))?;
        use rustix::fs::{MemfdFlags, SealFlags};
        let os = |what: &str, e: rustix::io::Errno| format!("{what}: {e}");
        let fd = rustix::fs::memfd_create("doca-emu-swap", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)
            .map_err(|e| os("memfd_create", e))?;
        rustix::fs::ftruncate(&fd, span as u64).map_err(|e| format!("memfd of {span} bytes: {e}"))?;
        rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW).map_err(|e| os("seal", e))?;
        let ino = rustix::fs::fstat(&fd).map_err(|e| os("fstat", e))?.st_ino;
        // SAFETY: a fresh shared mapping of our memfd.
        let tmp = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                span,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if tmp == libc::MAP_FAILED {
            return Err(format!("mapping a memfd of {span} bytes failed"));
        }
        // The mapping made before keeps its write access; any later one cannot have it.
        let mut seals = SealFlags::SEAL;
        if read_only {
            seals |= SealFlags::FUTURE_WRITE;
        }
        if let Err(e) = rustix::fs::fcntl_add_seals(&fd, seals) {
            // SAFETY: our fresh mapping.
            unsafe { libc::munmap(tmp, span) };
            return Err(os("sealing", e));
        }
        // Pages allocated before the freeze, so the freeze lasts one copy (best effort).
        // SAFETY: advice on our fresh mapping.
        unsafe {
            libc::madvise(tmp, span, 23 /* MADV_POPULATE_WRITE */)
        };
        let piece = Piece { start, len: span, prot: libc::PROT_READ | libc::PROT_WRITE };
        // SAFETY: the span is our private anonymous read-write memory (checked under the swap
        // lock), `tmp` our fresh mapping of its length.
        if !unsafe { move_over(piece, tmp, piece.prot, true) } {
            return Err(format!("swapping {span} bytes at {start:#x} failed"));
        }
        let e = &TABLE[slot];
        e.start.store(start, Ordering::Relaxed);
        e.len.store(span, Ordering::Relaxed);
        e.ino.store(ino, Ordering::Relaxed);
        e.state.store(1, Ordering::Release);
        tracing::debug!(target: "doca_sdk", "mmap export: {span} bytes at {start:#x} swapped for shared memory");
        Ok(Swapped { slot, pid: std::process::id(), start, len: span, ino, fd })
    }

    /// Where the shared pages start, from `addr` (the range's start).
    pub(crate) fn head(&self, addr: usize) -> usize {
        self.start - addr
    }

    /// How many bytes are shared.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The memfd (for the importers).
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }
}

impl Drop for Swapped {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            return; // a fork child: swapped back at the fork already
        }
        let _lock = Locked::take();
        let e = &TABLE[self.slot];
        let mut pieces = Pieces::new();
        let found = our_pieces(self.start, self.len, self.ino, &mut pieces);
        let mut back = 0;
        if found {
            for p in pieces.list() {
                if back_to_private(*p, true) {
                    back += p.len;
                }
            }
        }
        e.state.store(0, Ordering::Release);
        drop(_lock);
        if back == self.len {
            tracing::debug!(target: "doca_sdk", "mmap export revoked: {} bytes at {:#x} private again", self.len, self.start);
        } else if back == 0 {
            // The application gave the whole range back first (NVIDIA's dma_copy frees its
            // buffer before destroying its map): an ordinary order, nothing of it to keep.
            tracing::debug!(target: "doca_sdk", "mmap export revoked: the {} bytes at {:#x} were unmapped by the application before", self.len, self.start);
        } else {
            tracing::warn!(target: "doca_sdk", "mmap export revoked: of {} bytes at {:#x} shared, {back} were still mapped and made private again (the rest was unmapped or remapped by the application)", self.len, self.start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mapping line of `addr` in `/proc/self/maps`: (perms, path).
    fn vma_of(addr: usize) -> (String, String) {
        let mut found = (String::new(), String::new());
        for_each_vma(|v| {
            if v.start <= addr && addr < v.end {
                found = (
                    String::from_utf8_lossy(v.perms).into_owned(),
                    String::from_utf8_lossy(v.path).into_owned(),
                );
                return false;
            }
            true
        });
        found
    }

    /// A heap range's whole pages become the memfd's (same bytes, same addresses, shared)
    /// and private again when the swap ends, bytes kept; writes in between stay.
    #[test]
    fn heap_pages_are_swapped_in_and_back_with_their_bytes() {
        let mut v: Vec<u8> = (0..5 * PAGE_TEST + 100).map(|i| (i % 251) as u8).collect();
        let addr = v.as_mut_ptr() as usize + 50;
        let len = 4 * PAGE_TEST + 10;
        let s = Swapped::swap_in(addr, len, false).unwrap();
        let start = addr + s.head(addr);
        assert_eq!(start % PAGE_TEST, 0);
        assert!(s.head(addr) < PAGE_TEST && s.len() >= 3 * PAGE_TEST);
        let (perms, path) = vma_of(start);
        assert!(perms.ends_with('s') && path.starts_with("/memfd:doca-emu-swap"), "{perms} {path}");
        assert!(v.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8), "bytes kept by the swap");
        let k = start - v.as_ptr() as usize;
        v[k] = 7;
        drop(s);
        let (perms, path) = vma_of(start);
        assert!(perms == "rw-p" && path.is_empty(), "{perms} {path}");
        assert_eq!(v[k], 7, "a write while shared kept");
        v[k] = (k % 251) as u8;
        assert!(v.iter().enumerate().all(|(i, &b)| b == (i % 251) as u8), "bytes kept by the swap back");
    }

    const PAGE_TEST: usize = 4096;

    /// Not swapped: a range without a whole page, the calling thread's stack, a file mapping
    /// (this program's text), memory swapped already.
    #[test]
    fn what_cannot_be_swapped_is_refused_with_a_reason() {
        let v = vec![1u8; 8 * PAGE_TEST];
        let a = v.as_ptr() as usize;
        assert!(Swapped::swap_in(a.div_ceil(PAGE_TEST) * PAGE_TEST + 1, PAGE_TEST, false).is_err());
        let on_stack = [0u8; 4 * PAGE_TEST];
        let why = Swapped::swap_in(on_stack.as_ptr() as usize, on_stack.len(), false).unwrap_err();
        assert!(why.contains("stack"), "{why}");
        let text = heap_pages_are_swapped_in_and_back_with_their_bytes as *const () as usize;
        let why = Swapped::swap_in(text / PAGE_TEST * PAGE_TEST, PAGE_TEST, false).unwrap_err();
        assert!(why.contains("not all private anonymous"), "{why}");
        let s = Swapped::swap_in(a, v.len(), true).unwrap();
        let why = Swapped::swap_in(a, v.len(), false).unwrap_err();
        assert!(why.contains("not all private anonymous"), "{why}");
        drop(s);
        assert!(v.iter().all(|&b| b == 1));
    }
}
