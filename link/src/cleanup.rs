//! What a process stopped by SIGINT, SIGTERM or SIGHUP removes on its way out: the names it
//! made in the fabric directory (its status page, its servers' sockets and lock files, its
//! memory service's socket).
//!
//! Each of those names is [`register`]ed when made and unregistered (by dropping the
//! [`Registered`] guard) when its owner removes it the ordinary way. At the first
//! registration, a handler is installed for the three signals, each only if the program left
//! it at its default action (a program with its own handler, or one started with the signal
//! ignored, keeps what it chose). The handler does only what is async-signal-safe: for each
//! registered name made by this very process (not a forked child), `unlinkat` on a directory
//! descriptor held for the purpose; then it restores the default action and raises the
//! signal again, so the process ends as it would have (same signal, same exit status for the
//! shell).
//!
//! SIGKILL cannot be caught: a process killed by it leaves its names. Nothing depends on
//! them (a socket whose lock is free is replaced by the next server of that name, a page
//! whose lock is free is stale), and `doca_emu clean` removes them.
//!
//! The registry is a fixed table of [`SLOTS`] entries of atomics, so the handler reads it
//! without a lock or an allocation. A name longer than [`NAME_BYTES`] or beyond the table is
//! not registered (logged at debug level): it stays behind after a signal as after SIGKILL.
//!
//! One of the few modules with `unsafe`: `sigaction`, `raise` and raw `unlinkat` calls.

#![allow(unsafe_code)]

use std::os::fd::{AsFd, IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU8, Ordering};
use std::sync::Once;

/// How many names can be registered at once.
pub const SLOTS: usize = 256;
/// The longest name (in bytes) a slot holds.
pub const NAME_BYTES: usize = 95;

/// The signals whose default action (ending the process) is preceded by the cleanup.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

const FREE: u8 = 0;
const WRITING: u8 = 1;
const READY: u8 = 2;
/// Taken by the signal handler: its owner neither reuses it nor closes its descriptor.
const HANDLING: u8 = 3;

struct Slot {
    state: AtomicU8,
    /// The process that registered the name (a forked child must not remove it).
    pid: AtomicU32,
    /// A descriptor of the directory, the slot's own (closed when the slot is freed).
    dir: AtomicI32,
    len: AtomicU8,
    name: [AtomicU8; NAME_BYTES],
}

impl Slot {
    const fn new() -> Slot {
        Slot {
            state: AtomicU8::new(FREE),
            pid: AtomicU32::new(0),
            dir: AtomicI32::new(-1),
            len: AtomicU8::new(0),
            name: [const { AtomicU8::new(0) }; NAME_BYTES],
        }
    }
}

static TABLE: [Slot; SLOTS] = [const { Slot::new() }; SLOTS];
static INSTALL: Once = Once::new();

/// A registered name: dropping it unregisters the name (its owner removed it).
#[must_use = "dropping the guard unregisters the name at once"]
pub struct Registered {
    slot: Option<usize>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        let Some(i) = self.slot else { return };
        let s = &TABLE[i];
        let dir = s.dir.load(Ordering::Relaxed);
        // A slot the handler took stays as it is: the process is ending.
        if s.state.compare_exchange(READY, FREE, Ordering::AcqRel, Ordering::Relaxed).is_ok() {
            // SAFETY: `dir` is the slot's own descriptor (dup'ed at registration), closed once,
            // here, after the slot was freed so the handler can no longer use it.
            unsafe { libc::close(dir) };
        }
    }
}

/// Registers `name` in directory `dir` for removal if a terminating signal stops this
/// process (see the module docs). The returned guard unregisters it when dropped.
pub fn register(dir: impl AsFd, name: &str) -> Registered {
    let none = Registered { slot: None };
    if name.is_empty() || name.len() > NAME_BYTES || name.contains('\0') || name.contains('/') {
        tracing::debug!(target: "doca_sdk", "{name}: not removed on a signal (name too long)");
        return none;
    }
    INSTALL.call_once(install);
    let Some(i) = TABLE
        .iter()
        .position(|s| s.state.compare_exchange(FREE, WRITING, Ordering::Acquire, Ordering::Relaxed).is_ok())
    else {
        tracing::debug!(target: "doca_sdk", "{name}: not removed on a signal ({SLOTS} names registered already)");
        return none;
    };
    let s = &TABLE[i];
    let own: Option<OwnedFd> = dir.as_fd().try_clone_to_owned().ok();
    let Some(own) = own else {
        s.state.store(FREE, Ordering::Release);
        tracing::debug!(target: "doca_sdk", "{name}: not removed on a signal (no descriptor left)");
        return none;
    };
    s.pid.store(std::process::id(), Ordering::Relaxed);
    s.dir.store(own.into_raw_fd(), Ordering::Relaxed);
    for (b, cell) in name.bytes().zip(&s.name) {
        cell.store(b, Ordering::Relaxed);
    }
    s.len.store(name.len() as u8, Ordering::Relaxed);
    // Publishes the fields above to the handler's acquiring compare-exchange.
    s.state.store(READY, Ordering::Release);
    Registered { slot: Some(i) }
}

/// How many names are registered now (for tests).
pub fn registered() -> usize {
    TABLE.iter().filter(|s| s.state.load(Ordering::Acquire) == READY).count()
}

/// Installs the handler for each signal still at its default action.
fn install() {
    for sig in SIGNALS {
        // SAFETY: all-zero is a valid `sigaction` (no handler, empty mask, no flags).
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: queries the current action into a valid `sigaction`.
        if unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) } != 0
            || old.sa_sigaction != libc::SIG_DFL
        {
            continue;
        }
        // SAFETY: as above.
        let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
        act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        act.sa_flags = libc::SA_RESTART;
        // SAFETY: `act.sa_mask` is a valid sigset; the three signals are blocked while the
        // handler runs, so it is never entered twice on one thread.
        unsafe {
            libc::sigemptyset(&mut act.sa_mask);
            for s in SIGNALS {
                libc::sigaddset(&mut act.sa_mask, s);
            }
        }
        // SAFETY: installs a handler that only makes async-signal-safe calls.
        if unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) } != 0 {
            tracing::debug!(target: "doca_sdk", "signal {sig}: cleanup handler not installed");
        }
    }
}

/// The handler: removes this process's registered names, then ends the process by the same
/// signal at its default action. Async-signal-safe calls only (getpid, unlinkat, sigaction,
/// raise), no allocation, no lock.
extern "C" fn on_signal(sig: libc::c_int) {
    // SAFETY: getpid is async-signal-safe.
    let me = unsafe { libc::getpid() } as u32;
    for s in &TABLE {
        if s.state.compare_exchange(READY, HANDLING, Ordering::AcqRel, Ordering::Relaxed).is_err() {
            continue;
        }
        if s.pid.load(Ordering::Relaxed) != me {
            continue;
        }
        let mut buf = [0u8; NAME_BYTES + 1];
        let len = (s.len.load(Ordering::Relaxed) as usize).min(NAME_BYTES);
        for (b, cell) in buf.iter_mut().zip(&s.name[..len]) {
            *b = cell.load(Ordering::Relaxed);
        }
        // SAFETY: the slot's directory descriptor stays open (its owner does not close a
        // slot in HANDLING) and `buf` is NUL-terminated (one byte more than any name).
        unsafe { libc::unlinkat(s.dir.load(Ordering::Relaxed), buf.as_ptr().cast(), 0) };
    }
    // SAFETY: restores the default action and raises the signal again: it is blocked while
    // this handler runs, so it is delivered (ending the process) as the handler returns.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut dfl.sa_mask);
        libc::sigaction(sig, &dfl, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// Runs `f` when the process exits normally (`exit`, or a return from `main`), while its
/// other threads still run: for library threads that must finish their work first (a link
/// stand-in forwarding what the application published just before exiting). `false` when
/// the C library's table is full.
pub fn at_exit(f: extern "C" fn()) -> bool {
    // SAFETY: `atexit` only stores the function pointer; `f` is a plain `extern "C" fn()`.
    unsafe { libc::atexit(f) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guard_frees_its_slot_and_long_names_are_refused() {
        let dir = std::fs::File::open(std::env::temp_dir()).unwrap();
        let g = register(&dir, "status-1-0000000000000000.page");
        let i = g.slot.expect("registered");
        assert_eq!(TABLE[i].state.load(Ordering::Acquire), READY);
        drop(g);
        assert_eq!(TABLE[i].state.load(Ordering::Acquire), FREE);
        assert!(register(&dir, &"x".repeat(NAME_BYTES + 1)).slot.is_none());
        assert!(register(&dir, "a/b").slot.is_none());
    }
}
