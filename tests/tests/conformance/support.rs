//! What the conformance modules share: unique names, waiting on an engine, started maps and
//! inventories.

use std::time::{Duration, Instant};

use doca_buf::Inventory;
use doca_core::Pe;
use doca_mmap::Mmap;

/// A service or server name no other test (or parallel run) uses.
pub fn unique(name: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("conf-{name}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Progresses `pe` until `done`, sleeping on its notification handle when idle
/// ([`doca_tests::idle`]); fails after a minute (a liveness bound, generous for a loaded
/// machine).
pub fn until(pe: &Pe, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "condition not reached in time");
        doca_tests::idle(pe);
    }
}

/// A started map of `len` zeroed bytes of private memory.
pub fn started_map(len: usize) -> Mmap {
    let map = Mmap::create().unwrap();
    map.set_memrange(vec![0u8; len]).unwrap();
    map.start().unwrap();
    map
}

/// A started inventory of `n` buffers.
pub fn started_inventory(n: u32) -> Inventory {
    let inv = Inventory::create(n).unwrap();
    inv.start().unwrap();
    inv
}
