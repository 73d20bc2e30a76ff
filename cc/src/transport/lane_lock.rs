//! [`LaneLock`]: the lock of a remote consumer's rings, which every producer of this
//! process that sends to that consumer takes for each send.
//!
//! A send writes lines the consumer's core reads (the data, the completion record); a
//! `lock`-prefixed instruction right after those stores waits until they reach this core's
//! cache — a round trip to the other core per message. A general-purpose mutex unlocks with
//! such an instruction; this lock releases with a plain store, so the stores drain while the
//! producer goes on. It is held for one send: one copy, bounded by the largest buffer (which
//! may wait briefly for a tracker's lock when the consumer's memory is also mapped for
//! borrowing in this process); doorbells are rung and a peer's faults logged after it is
//! released. A waiter spins briefly, then yields the core; it never sleeps on a futex.

#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};

/// A lock for short critical sections, released with a plain store (see the module).
pub struct LaneLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and one guard exists at a time (the
// `locked` flag, taken with acquire and released with release ordering), so sharing the
// lock between threads hands the value from one thread to another, which `T: Send` allows.
unsafe impl<T: Send> Sync for LaneLock<T> {}

impl<T> LaneLock<T> {
    /// A lock holding `value`.
    pub fn new(value: T) -> LaneLock<T> {
        LaneLock { locked: AtomicBool::new(false), value: UnsafeCell::new(value) }
    }

    /// Waits for the lock: spins a little, then yields the core to the holder.
    pub fn lock(&self) -> LaneGuard<'_, T> {
        let mut spins = 0u32;
        while self.locked.compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            while self.locked.load(Ordering::Relaxed) {
                if spins < 64 {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        LaneGuard { lock: self, _value: PhantomData }
    }
}

/// The value of a [`LaneLock`], held; released on drop. Shared between threads only when
/// `T` is (it hands out `&T`), as a mutable reference would be.
pub struct LaneGuard<'a, T> {
    lock: &'a LaneLock<T>,
    _value: PhantomData<&'a mut T>,
}

impl<T> Deref for LaneGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: this guard is the only one (see `Sync`); the value lives as long as the
        // lock, which outlives the guard.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for LaneGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` keeps this reference unique.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for LaneGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::LaneLock;
    use std::sync::Arc;

    /// Increments from four threads under the lock all count: it excludes.
    #[test]
    fn excludes_across_threads() {
        let lock = Arc::new(LaneLock::new(0u64));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..50_000 {
                        let mut g = lock.lock();
                        // Read, yield now and then, write: an unguarded pair would lose counts.
                        let v = *g;
                        if v % 1000 == 0 {
                            std::thread::yield_now();
                        }
                        *g = v + 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), 200_000);
    }
}
