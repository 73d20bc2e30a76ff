//! A value that lives in a `Send + Sync` object but is touched only on the thread that put
//! it there: how a [`super::Connection`] (shared with producer and consumer threads) knows its
//! server or client (a single-threaded context) without any global registry.
//!
//! The value is read (cloned) and cleared only on its thread; elsewhere reads give
//! `NOT_PERMITTED` and clears do nothing. If the last handle drops on another thread while
//! the value is still there, it is leaked rather than dropped off its thread — owners clear
//! it on their thread when they let a connection go, so this does not happen in practice.

#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::thread::{self, ThreadId};

use doca_core::{Error, Result};

/// See the module documentation.
pub(crate) struct ThreadBound<T> {
    thread: ThreadId,
    value: UnsafeCell<Option<T>>,
}

// SAFETY: the value is only ever reached on `thread` (every access checks the current
// thread first, and `Drop` leaks it elsewhere), so moving or sharing the wrapper between
// threads never moves or shares the value itself.
unsafe impl<T> Send for ThreadBound<T> {}
// SAFETY: as above: `&ThreadBound` gives other threads no access to the value.
unsafe impl<T> Sync for ThreadBound<T> {}

impl<T: Clone> ThreadBound<T> {
    /// Holds `value` for the current thread.
    pub(crate) fn new(value: T) -> ThreadBound<T> {
        ThreadBound { thread: thread::current().id(), value: UnsafeCell::new(Some(value)) }
    }

    fn on_owner_thread(&self) -> bool {
        thread::current().id() == self.thread
    }

    /// A clone of the value: `NOT_PERMITTED` on another thread, `NOT_FOUND` once cleared.
    pub(crate) fn get(&self) -> Result<T> {
        if !self.on_owner_thread() {
            return Err(Error::NotPermitted);
        }
        // on the owner thread, the only thread that ever touches the value; no
        // reference to it outlives this call (clearing cannot run during the clone, which
        // calls no user code).
        // SAFETY: see above.
        let value = unsafe { &*self.value.get() };
        value.clone().ok_or(Error::NotFound)
    }

    /// Drops the value (on the owner thread; elsewhere nothing happens).
    pub(crate) fn clear(&self) {
        if self.on_owner_thread() {
            // SAFETY: owner thread, no outstanding reference (see `get`).
            let old = unsafe { (*self.value.get()).take() };
            drop(old);
        }
    }
}

impl<T> Drop for ThreadBound<T> {
    fn drop(&mut self) {
        let value = self.value.get_mut().take();
        if thread::current().id() != self.thread {
            // Dropping it here would touch it off its thread: leak it instead.
            std::mem::forget(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;

    #[test]
    fn only_the_owner_thread_reads_or_clears_the_value() {
        let slot = std::sync::Arc::new(ThreadBound::new(Rc::new(5)));
        assert_eq!(*slot.get().unwrap(), 5);
        let other = slot.clone();
        let seen = thread::spawn(move || {
            other.clear();
            other.get().map(|_| ())
        })
        .join()
        .unwrap();
        assert_eq!(seen, Err(Error::NotPermitted));
        assert_eq!(*slot.get().unwrap(), 5, "another thread's clear did nothing");
        slot.clear();
        assert_eq!(slot.get().map(|_| ()), Err(Error::NotFound));
    }
}
