//! The checks every export makes on what C hands it, in one place, and the one log line a
//! refused call leaves.
//!
//! - [`Call`]: each export runs inside one (through [`crate::boundary`]'s `guarded` or
//!   `shielded`, which also turn a panic into `DOCA_ERROR_UNEXPECTED`), named after the C function; a check that refuses an argument
//!   notes why ([`note`]), and a call that then fails logs `"<function>: <why>"` once
//!   (target `doca_sdk`, level error). Calls nest (a callback calling the library inside
//!   `doca_pe_progress`): each logs its own reason under its own name. A call that refuses
//!   nothing touches no thread-local (see [`Call::leave`]).
//! - [`out`]: an out-parameter (NULL → `INVALID_VALUE`).
//! - [`bytes`] / [`bytes_mut`]: a pointer and a length made into a slice only after the
//!   length is checked against the most the call can use (never beyond `isize::MAX`, never
//!   beyond a descriptor's fixed length or a message's maximum), so a length such as
//!   `SIZE_MAX` is refused before any byte is touched.
//!
//! Handles are checked by their tables ([`crate::handles::Handles::get`]), which note their
//! own reasons (NULL, forged, destroyed, another kind).

use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{DocaError, DOCA_SUCCESS};

thread_local! {
    /// Why the running call refused an argument, when it did (the first reason counts).
    static REASON: Cell<Option<String>> = const { Cell::new(None) };
}

/// Reasons noted and not yet taken, all threads together. A call leaving finds it 0 unless
/// some call refused an argument meanwhile, and then looks at no thread-local: a library
/// loaded by C reaches its thread-locals through the dynamic linker (`__tls_get_addr`, a
/// call each time), which a task cycle of half a dozen C calls would pay at every one.
static PENDING: AtomicUsize = AtomicUsize::new(0);

/// One export's call: its name, for the log line of a reason noted while it runs.
pub(crate) struct Call {
    name: &'static str,
}

// The thread's reason may already be gone: C calls the library from its exit handlers and
// destructors too (`DOCA_LOG_REGISTER`'s unregistering one), after this thread's locals were
// destroyed. Then nothing is noted and nothing logged; the codes stay.

impl Call {
    /// Enters the C function `name`.
    #[inline]
    pub(crate) fn enter(name: &'static str) -> Call {
        Call { name }
    }

    /// Leaves it: logs the reason noted, if any, when the call `failed`. A call made from
    /// inside another (a callback of `doca_pe_progress` calling the library) takes what was
    /// noted before it too: the outer call refuses nothing once it runs callbacks.
    #[inline]
    pub(crate) fn leave(self, failed: bool) {
        if PENDING.load(Ordering::Relaxed) != 0 {
            Self::settle(self.name, failed);
        }
    }

    /// Takes this thread's reason, if it noted one, and logs it when the call `failed`.
    #[cold]
    fn settle(name: &'static str, failed: bool) {
        if let Ok(Some(reason)) = REASON.try_with(Cell::take) {
            PENDING.fetch_sub(1, Ordering::Relaxed);
            if failed {
                tracing::error!(target: "doca_sdk", "{name}: {reason}");
            }
        }
    }
}

/// Notes why the running call refuses an argument (kept if it is the first reason).
pub(crate) fn note(reason: impl FnOnce() -> String) {
    let _ = REASON.try_with(|r| {
        let pending = r.take();
        if pending.is_none() {
            PENDING.fetch_add(1, Ordering::Relaxed);
        }
        r.set(Some(pending.unwrap_or_else(reason)));
    });
}

/// `DOCA_ERROR_INVALID_VALUE`, noting `reason` for the call's log line.
pub(crate) fn refuse(reason: impl FnOnce() -> String) -> DocaError {
    note(reason);
    doca_core::Error::InvalidValue.code()
}

/// Writes `value` through the out-parameter `p` (`INVALID_VALUE` for NULL).
pub(crate) fn out<T>(p: *mut T, value: T) -> DocaError {
    if p.is_null() {
        return refuse(|| format!("NULL out-parameter (a {})", std::any::type_name::<T>()));
    }
    // a non-NULL out-parameter points to writable memory for a T (the caller's contract).
    // SAFETY: see above.
    unsafe { p.write(value) };
    DOCA_SUCCESS
}

/// Checks an argument that must not be NULL (`what` names it for the log).
pub(crate) fn non_null<T>(p: *const T, what: &str) -> Result<(), DocaError> {
    if p.is_null() {
        return Err(refuse(|| format!("NULL {what}")));
    }
    Ok(())
}

/// The longest slice made from C's memory: Rust's own limit for a slice of bytes.
const SLICE_MAX: usize = isize::MAX as usize;

/// Checks `len` (of `what`) against `max` and Rust's limit.
fn check_len(p: *const c_void, len: usize, max: usize, what: &str) -> Result<(), DocaError> {
    let max = max.min(SLICE_MAX);
    if len > max {
        return Err(refuse(|| format!("{what} of {len} bytes: at most {max}")));
    }
    if p.is_null() && len > 0 {
        return Err(refuse(|| format!("NULL {what} of {len} bytes")));
    }
    Ok(())
}

/// The `len` bytes at `p`, refused (`INVALID_VALUE`, nothing read) when `len` exceeds `max`
/// or `p` is NULL with a length; empty for a length of 0 (whatever `p` is).
///
/// # Safety
/// When `len <= max`, `p` points to `len` bytes readable for `'a` (the C caller's contract).
pub(crate) unsafe fn bytes<'a>(
    p: *const c_void,
    len: usize,
    max: usize,
    what: &str,
) -> Result<&'a [u8], DocaError> {
    check_len(p, len, max, what)?;
    if len == 0 {
        return Ok(&[]);
    }
    // non-NULL, at most isize::MAX bytes, readable (the caller's contract).
    // SAFETY: see above.
    Ok(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) })
}

/// [`bytes`] for memory the call writes.
///
/// # Safety
/// When `len <= max`, `p` points to `len` bytes writable for `'a` and used by nothing else
/// meanwhile (the C caller's contract).
pub(crate) unsafe fn bytes_mut<'a>(
    p: *mut c_void,
    len: usize,
    max: usize,
    what: &str,
) -> Result<&'a mut [u8], DocaError> {
    check_len(p, len, max, what)?;
    if len == 0 {
        return Ok(&mut []);
    }
    // non-NULL, at most isize::MAX bytes, writable and not aliased (the caller's contract).
    // SAFETY: see above.
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), len) })
}

/// `DOCA_ERROR_INVALID_VALUE` (logged with the reason a check noted, else as an invalid
/// argument).
pub(crate) fn invalid() -> DocaError {
    refuse(|| "invalid argument".into())
}
