//! Opaque handles: boxed Rust values whose addresses C holds. Each kind keeps the set of
//! addresses it handed out, so a NULL or freed handle is refused instead of dereferenced.

use std::collections::HashSet;

use parking_lot::Mutex;

/// The live handles of one kind.
pub(crate) struct Handles(Mutex<Option<HashSet<usize>>>);

impl Handles {
    pub(crate) const fn new() -> Handles {
        Handles(Mutex::new(None))
    }

    /// Hands `value` out as a handle.
    pub(crate) fn add<T>(&self, value: T) -> *mut T {
        let p = Box::into_raw(Box::new(value));
        self.0.lock().get_or_insert_with(HashSet::new).insert(p as usize);
        p
    }

    /// Whether `p` is a live handle of this kind.
    pub(crate) fn live<T>(&self, p: *const T) -> bool {
        !p.is_null() && self.0.lock().as_ref().is_some_and(|s| s.contains(&(p as usize)))
    }

    /// The value behind a live handle.
    ///
    /// # Safety
    /// Handles of this kind must only ever come from [`Handles::add`] with the same `T`; the
    /// value must not be removed while the reference is used (the C caller's contract: no
    /// use of a handle concurrently with its destruction).
    pub(crate) unsafe fn get<'a, T>(&self, p: *const T) -> Option<&'a T> {
        // a live address came from Box::into_raw of a T (caller's contract) and is
        // still allocated (it leaves the set before it is freed).
        // SAFETY: see above.
        self.live(p).then(|| unsafe { &*p })
    }

    /// Takes a live handle back (it is no longer live).
    ///
    /// # Safety
    /// As [`Handles::get`].
    pub(crate) unsafe fn remove<T>(&self, p: *mut T) -> Option<Box<T>> {
        let removed = self.0.lock().as_mut().is_some_and(|s| s.remove(&(p as usize)));
        // the address came from Box::into_raw of a T and was live until now; it is
        // freed once, here (it left the set above, under the lock).
        // SAFETY: see above.
        removed.then(|| unsafe { Box::from_raw(p) })
    }
}
