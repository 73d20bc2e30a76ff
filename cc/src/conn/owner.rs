//! A value that lives in a `Send + Sync` object but is touched only on the thread that put
//! it there: how a [`super::Connection`] (shared with producer and consumer threads) knows its
//! server or client (a single-threaded context) without any global registry.
//!
//! The value is read (cloned) and cleared only on its thread; elsewhere reads give
//! `NOT_PERMITTED` and clears do nothing. If the last handle drops on another thread while
//! the value is still there, it is leaked rather than dropped off its thread — owners clear
//! it on their thread when they let a connection go, so this does not happen in practice.

#![allow(unsafe_code)]

use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicU64, Ordering};

use doca_core::{Error, Result};

/// The next thread number to hand out (0 means "not yet numbered").
static NEXT_THREAD: AtomicU64 = AtomicU64::new(1);

std::thread_local! {
    /// This thread's number, given at its first look (a plain thread-local word: reading it is
    /// one load, where `thread::current().id()` goes through the thread's handle).
    static THIS_THREAD: Cell<u64> = const { Cell::new(0) };
}

/// A number that tells the calling thread apart from every other thread the process ever ran
/// (numbers are never reused: a thread that ends takes its number with it).
fn this_thread() -> u64 {
    THIS_THREAD.with(|me| match me.get() {
        0 => {
            let n = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
            me.set(n);
            n
        }
        n => n,
    })
}

/// See the module documentation.
pub(crate) struct ThreadBound<T> {
    thread: u64,
    value: UnsafeCell<Option<T>>,
}

// SAFETY: the value is only ever reached on `thread` (every access checks the current
// thread first, and `Drop` leaks it elsewhere), so moving or sharing the wrapper between
// threads never moves or shares the value itself.
unsafe impl<T> Send for ThreadBound<T> {}
// SAFETY: as above: `&ThreadBound` gives other threads no access to the value.
unsafe impl<T> Sync for ThreadBound<T> {}

impl<T> ThreadBound<T> {
    /// Holds `value` for the current thread.
    pub(crate) fn new(value: T) -> ThreadBound<T> {
        ThreadBound { thread: this_thread(), value: UnsafeCell::new(Some(value)) }
    }

    fn on_owner_thread(&self) -> bool {
        this_thread() == self.thread
    }

    /// `look` at the value (it must not reach this wrapper again, nor run user code):
    /// `NOT_PERMITTED` on another thread, `NOT_FOUND` once cleared.
    #[inline]
    pub(crate) fn with<R>(&self, look: impl FnOnce(&T) -> R) -> Result<R> {
        if !self.on_owner_thread() {
            return Err(Error::NotPermitted);
        }
        // on the owner thread, the only thread that ever touches the value; the reference
        // lives for `look` only, which neither clears the value nor calls user code.
        // SAFETY: see above.
        let value = unsafe { &*self.value.get() };
        value.as_ref().map(look).ok_or(Error::NotFound)
    }

    /// Drops the value (on the owner thread; elsewhere nothing happens).
    pub(crate) fn clear(&self) {
        if self.on_owner_thread() {
            // SAFETY: owner thread, no outstanding reference (see `with`).
            let old = unsafe { (*self.value.get()).take() };
            drop(old);
        }
    }
}

impl<T> Drop for ThreadBound<T> {
    fn drop(&mut self) {
        let value = self.value.get_mut().take();
        if !self.on_owner_thread() {
            // Dropping it here would touch it off its thread: leak it instead.
            std::mem::forget(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;
    use std::thread;

    use super::*;

    #[test]
    fn only_the_owner_thread_reads_or_clears_the_value() {
        let slot = std::sync::Arc::new(ThreadBound::new(Rc::new(5)));
        assert_eq!(slot.with(|v| **v), Ok(5));
        let other = slot.clone();
        let seen = thread::spawn(move || {
            other.clear();
            other.with(|_| ())
        })
        .join()
        .unwrap();
        assert_eq!(seen, Err(Error::NotPermitted));
        assert_eq!(slot.with(|v| **v), Ok(5), "another thread's clear did nothing");
        slot.clear();
        assert_eq!(slot.with(|_| ()), Err(Error::NotFound));
    }
}
