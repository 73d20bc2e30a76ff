//! A slot for a user callback that may be called while it reconfigures things.

use std::cell::Cell;

/// Holds a boxed callback. [`CbSlot::call`] takes it out for the duration of the call, so the
/// callback may freely touch the object that owns the slot (no borrow is held, nothing can
/// panic with "already borrowed"). If the callback installs a replacement for itself, the
/// replacement wins; if it clears its slot, the slot stays empty.
pub struct CbSlot<F: ?Sized> {
    f: Cell<Option<Box<F>>>,
    /// Whether a callback is installed, also while it is out of the slot for a call.
    installed: Cell<bool>,
}

impl<F: ?Sized> CbSlot<F> {
    /// An empty slot.
    pub const fn empty() -> Self {
        CbSlot { f: Cell::new(None), installed: Cell::new(false) }
    }

    /// Installs `f`, dropping any previous callback.
    pub fn set(&self, f: Box<F>) {
        self.f.set(Some(f));
        self.installed.set(true);
    }

    /// Empties the slot (from inside its callback too: the callback is dropped when it
    /// returns).
    pub fn clear(&self) {
        self.f.set(None);
        self.installed.set(false);
    }

    /// Whether a callback is installed, also while it runs (a call that needs the callbacks
    /// set may be made from inside one of them).
    pub fn is_set(&self) -> bool {
        self.installed.get()
    }

    /// Calls the callback through `invoke`; `None` when the slot is empty (or the callback is
    /// already running further up the stack). The callback goes back into the slot after the
    /// call, also when it panics (a caller that catches the panic keeps its callback).
    #[inline]
    pub fn call<R>(&self, invoke: impl FnOnce(&mut F) -> R) -> Option<R> {
        let f = self.f.take()?;
        let mut out = Unwinding { slot: self, f: Some(f) };
        let r = invoke(out.f.as_deref_mut()?);
        let f = out.f.take();
        std::mem::forget(out);
        self.put_back(f);
        Some(r)
    }

    /// Puts a callback back after its call, in one exchange: a replacement the callback
    /// installed meanwhile wins, and a slot it cleared stays empty.
    #[inline]
    fn put_back(&self, f: Option<Box<F>>) {
        if let Some(replacement) = self.f.replace(f) {
            self.f.set(Some(replacement));
        } else if !self.installed.get() {
            self.f.set(None);
        }
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
        self.slot.put_back(self.f.take());
    }
}

impl<F: ?Sized> Default for CbSlot<F> {
    fn default() -> Self {
        CbSlot::empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    type Slot = Rc<CbSlot<dyn FnMut()>>;

    #[test]
    fn a_running_callback_is_set_and_may_clear_or_replace_itself() {
        let slot: Slot = Rc::new(CbSlot::empty());
        assert!(!slot.is_set());
        let me = Rc::downgrade(&slot);
        slot.set(Box::new(move || {
            let s = me.upgrade().unwrap();
            assert!(s.is_set(), "installed while it runs");
            s.clear();
        }));
        assert!(slot.is_set());
        assert_eq!(slot.call(|f| f()), Some(()));
        assert!(!slot.is_set(), "it cleared itself");
        assert_eq!(slot.call(|f| f()), None, "and stays cleared");

        let calls = Rc::new(Cell::new(0));
        let (c, me) = (calls.clone(), Rc::downgrade(&slot));
        slot.set(Box::new(move || {
            let c = c.clone();
            me.upgrade().unwrap().set(Box::new(move || c.set(c.get() + 10)));
        }));
        slot.call(|f| f());
        slot.call(|f| f());
        assert_eq!(calls.get(), 10, "the replacement it installed runs next");
    }

    #[test]
    fn a_callback_that_panics_stays_installed() {
        let slot: Slot = Rc::new(CbSlot::empty());
        slot.set(Box::new(|| panic!("boom")));
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| slot.call(|f| f())));
        assert!(r.is_err());
        assert!(slot.is_set());
        assert!(slot.f.take().is_some(), "and back in its slot");
    }
}
