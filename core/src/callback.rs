//! A slot for a user callback that may be called while it reconfigures things.

use std::cell::Cell;

/// Holds a boxed callback. [`CbSlot::call`] takes it out for the duration of the call, so the
/// callback may freely touch the object that owns the slot (no borrow is held, nothing can
/// panic with "already borrowed"). If the callback installs a replacement for itself, the
/// replacement wins.
pub struct CbSlot<F: ?Sized>(Cell<Option<Box<F>>>);

impl<F: ?Sized> CbSlot<F> {
    /// An empty slot.
    pub const fn empty() -> Self {
        CbSlot(Cell::new(None))
    }

    /// Installs `f`, dropping any previous callback.
    pub fn set(&self, f: Box<F>) {
        self.0.set(Some(f));
    }

    /// Empties the slot.
    pub fn clear(&self) {
        self.0.set(None);
    }

    /// Whether a callback is installed (and not currently running).
    pub fn is_set(&self) -> bool {
        let f = self.0.take();
        let set = f.is_some();
        self.0.set(f);
        set
    }

    /// Calls the callback through `invoke`; `None` when the slot is empty (or the callback is
    /// already running further up the stack). The callback goes back into the slot after the
    /// call, also when it panics (a caller that catches the panic keeps its callback).
    #[inline]
    pub fn call<R>(&self, invoke: impl FnOnce(&mut F) -> R) -> Option<R> {
        let f = self.0.take()?;
        let mut out = Unwinding { slot: self, f: Some(f) };
        let r = invoke(out.f.as_deref_mut()?);
        let f = out.f.take();
        std::mem::forget(out);
        // Put back in one exchange; a replacement the callback installed meanwhile wins.
        if let Some(replacement) = self.0.replace(f) {
            self.0.set(Some(replacement));
        }
        Some(r)
    }
}

/// A callback taken out of its slot for a call, if that call unwinds (the callback panicked):
/// its drop puts the callback back (a normal return puts it back itself and forgets this).
struct Unwinding<'a, F: ?Sized> {
    slot: &'a CbSlot<F>,
    f: Option<Box<F>>,
}

impl<F: ?Sized> Drop for Unwinding<'_, F> {
    #[cold]
    fn drop(&mut self) {
        if let Some(replacement) = self.slot.0.replace(self.f.take()) {
            self.slot.0.set(Some(replacement));
        }
    }
}

impl<F: ?Sized> Default for CbSlot<F> {
    fn default() -> Self {
        CbSlot::empty()
    }
}
