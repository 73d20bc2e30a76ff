//! Helpers shared by the in-process doca-cc tests.

#![allow(dead_code)]

use std::time::{Duration, Instant};

use doca_core::Pe;

/// A service name no other test (or parallel run) uses.
pub fn unique(name: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{name}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Progresses `pes` until `done`, failing the test after 20 s.
pub fn until(pes: &[&Pe], mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "condition not reached in time");
        let mut any = false;
        for pe in pes {
            any |= pe.progress();
        }
        if !any {
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}
