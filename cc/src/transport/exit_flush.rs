//! The exit flush of the link's stand-ins: locally a message published before the process
//! exits waits in shared memory for its peer; across the link it is still in this process
//! (in a ring a stand-in thread forwards), so a normal exit (`exit`, a return from `main`)
//! waits — at most [`EXIT_FLUSH`] — until every registered ring was forwarded.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::ring::{Probe, Ring};

/// The longest a process's exit waits for its stand-ins to forward what its application
/// published (a server that answers, then returns from `main`).
pub const EXIT_FLUSH: Duration = Duration::from_secs(2);

/// The rings of this process's running stand-ins that its application writes.
static OUTBOUND: parking_lot::Mutex<Vec<std::sync::Weak<Probe>>> = parking_lot::Mutex::new(Vec::new());

/// At exit: waits (at most [`EXIT_FLUSH`]) until every stand-in forwarded what its
/// application published. Locally a message published before exiting waits in shared
/// memory; across the link it is still in this process, so the exit waits for it.
extern "C" fn flush_at_exit() {
    let until = Instant::now() + EXIT_FLUSH;
    loop {
        let pending = {
            let mut out = OUTBOUND.lock();
            out.retain(|p| p.strong_count() > 0);
            out.iter().filter_map(std::sync::Weak::upgrade).any(|p| p.pending())
        };
        if !pending || Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Registers `rx` for the exit flush (and the flush itself, once per process).
pub fn register(rx: &Ring) -> Arc<Probe> {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if !doca_link::cleanup::at_exit(flush_at_exit) {
            tracing::debug!(target: "doca_sdk", "cc over the link: no exit flush (atexit table full)");
        }
    });
    let probe = Arc::new(rx.probe());
    OUTBOUND.lock().push(Arc::downgrade(&probe));
    probe
}
