//! `doca_log.h`: sources, levels and the standard backends. The `DOCA_LOG_*` macros call
//! [`doca_log`], a real export as in DOCA (objects built with NVIDIA's headers link to it):
//! it jumps to its C half (`c/doca_log.c`, which alone can read C variadic arguments), which
//! formats the line and hands it to [`doca_emu_log_write`]; the libraries' own lines (the SDK
//! level) go through Rust's logger.

use std::ffi::{c_char, c_int, c_void, CStr, CString};

extern "C" {
    /// The C library's standard output stream (`FILE *`).
    static mut stdout: *mut c_void;
    fn fputs(s: *const c_char, stream: *mut c_void) -> c_int;
}

use parking_lot::Mutex;

use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// The application's lower limit (`doca_log_level_set_global_lower_limit`; INFO by default)
/// and the SDK's (`doca_log_backend_set_sdk_level`; WARNING by default), read at every line.
static LEVELS: doca_common::log::Levels = doca_common::log::Levels::new();
/// Registered source names, by id.
static SOURCES: Mutex<Vec<Option<String>>> = Mutex::new(Vec::new());

/// A level number (10, 20, …, 70) as the Rust level; None for any other number.
fn level(n: u32) -> Option<doca_common::log::LogLevel> {
    doca_common::log::LogLevel::from_number(i32::try_from(n).ok()?)
}

/// Installs the Rust logger for the libraries' lines (levels read at every line), once.
fn install() {
    doca_common::log::init_dynamic(&LEVELS);
}

/// Environment variable: `0` keeps the libraries silent until the application creates an SDK
/// log backend, as DOCA does.
pub const SDK_STDERR_ENV: &str = "DOCA_EMU_SDK_STDERR";

/// Whether the application set the SDK level itself.
static SDK_LEVEL_SET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// At the first call of the library: until the application creates an SDK log backend, the
/// libraries' errors go to standard error (DOCA shows nothing then: a refused call would show
/// only its code), unless [`SDK_STDERR_ENV`] is `0`.
pub(crate) fn default_sdk_log() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if std::env::var_os(SDK_STDERR_ENV).is_some_and(|v| v == "0") {
            return;
        }
        if !SDK_LEVEL_SET.load(std::sync::atomic::Ordering::Relaxed) {
            LEVELS.set_sdk(doca_common::log::LogLevel::Error);
        }
        install();
        levels_changed();
    });
}

/// The logger's filter decides once per log statement whether it is on (tracing caches the
/// answer per call site): after a level changes, every statement is asked again, so that a
/// line logged before (at WARNING, say) is not shown once the level is DISABLE.
fn levels_changed() {
    tracing::callsite::rebuild_interest_cache();
}

/// Sets the application's level (also for the argument parser's `-l`).
pub(crate) fn set_app_level(n: u32) -> DocaError {
    match level(n) {
        Some(l) => {
            LEVELS.set_app(l);
            levels_changed();
            DOCA_SUCCESS
        }
        None => invalid(),
    }
}

/// Sets the SDK's level (also for the argument parser's `--sdk-log-level`).
pub(crate) fn set_sdk_level(n: u32) -> DocaError {
    match level(n) {
        Some(l) => {
            SDK_LEVEL_SET.store(true, std::sync::atomic::Ordering::Relaxed);
            LEVELS.set_sdk(l);
            levels_changed();
            DOCA_SUCCESS
        }
        None => invalid(),
    }
}

/// `doca_log_backend_create_standard`: the application's lines on standard output.
#[no_mangle]
pub extern "C" fn doca_log_backend_create_standard() -> DocaError {
    guarded("doca_log_backend_create_standard", || {
        install();
        DOCA_SUCCESS
    })
}

/// `struct doca_log_backend`: the one SDK backend (lines on standard error).
pub struct DocaLogBackend {
    _private: (),
}

static SDK_BACKEND: DocaLogBackend = DocaLogBackend { _private: () };

/// `doca_log_backend_create_with_file_sdk`: the libraries' lines. They go to standard error
/// whatever `fptr` is (the emulator's libraries log through Rust's logger).
///
/// # Safety
/// `backend` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_log_backend_create_with_file_sdk(
    fptr: *mut c_void,
    backend: *mut *mut DocaLogBackend,
) -> DocaError {
    guarded("doca_log_backend_create_with_file_sdk", || {
        if let Err(e) = crate::check::non_null(fptr, "fptr").and(crate::check::non_null(backend, "backend")) {
            return e;
        }
        // The backend's own default (WARNING), unless the application chose a level.
        if !SDK_LEVEL_SET.load(std::sync::atomic::Ordering::Relaxed) {
            LEVELS.set_sdk(doca_common::log::LogLevel::Warning);
            levels_changed();
        }
        install();
        // SAFETY: `backend` is writable (checked non-NULL; the caller's contract).
        // (a `struct doca_log_backend *` as C declares it: only compared, never written through)
        unsafe { backend.write(std::ptr::addr_of!(SDK_BACKEND).cast_mut()) };
        DOCA_SUCCESS
    })
}

/// `doca_log_backend_set_sdk_level`: 10 (disable) … 70 (trace); another number is
/// `INVALID_VALUE`.
#[no_mangle]
pub extern "C" fn doca_log_backend_set_sdk_level(backend: *mut DocaLogBackend, level: u32) -> DocaError {
    guarded("doca_log_backend_set_sdk_level", || {
        if !std::ptr::eq(backend, &SDK_BACKEND) {
            return crate::check::refuse(|| format!("{backend:p} is not the SDK backend"));
        }
        set_sdk_level(level)
    })
}

/// `doca_log_level_set_global_lower_limit`: the application's level.
#[no_mangle]
pub extern "C" fn doca_log_level_set_global_lower_limit(level: u32) -> DocaError {
    guarded("doca_log_level_set_global_lower_limit", || set_app_level(level))
}

/// `doca_log_level_get_global_lower_limit`.
#[no_mangle]
pub extern "C" fn doca_log_level_get_global_lower_limit() -> u32 {
    LEVELS.app() as u32
}

/// `doca_log_level_set_global_sdk_limit`.
#[no_mangle]
pub extern "C" fn doca_log_level_set_global_sdk_limit(level: u32) -> DocaError {
    guarded("doca_log_level_set_global_sdk_limit", || set_sdk_level(level))
}

/// `doca_log_register_source`: a source named `source_name` (the `DOCA_LOG_REGISTER` macro
/// calls it before `main`).
///
/// # Safety
/// `source_name` is NULL or a C string; `source` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_log_register_source(
    source_name: *const c_char,
    source: *mut c_int,
) -> DocaError {
    guarded("doca_log_register_source", || {
        if let Err(e) =
            crate::check::non_null(source_name, "source_name").and(crate::check::non_null(source, "source"))
        {
            return e;
        }
        // SAFETY: a NUL-terminated C string for the call (the caller's contract).
        let name = unsafe { CStr::from_ptr(source_name) }.to_string_lossy().into_owned();
        let mut sources = SOURCES.lock();
        sources.push(Some(name));
        // SAFETY: `source` is writable (checked non-NULL; the caller's contract).
        unsafe { source.write((sources.len() - 1) as c_int) };
        DOCA_SUCCESS
    })
}

/// `doca_log_unregister_source`.
#[no_mangle]
pub extern "C" fn doca_log_unregister_source(source: c_int) -> DocaError {
    guarded("doca_log_unregister_source", || match SOURCES.lock().get_mut(source as usize) {
        Some(s @ Some(_)) => {
            *s = None;
            DOCA_SUCCESS
        }
        _ => invalid(),
    })
}

extern "C" {
    /// The C half of [`doca_log`] (`c/doca_log.c`, hidden in this library).
    fn doca_emu_log_format(
        level: u32,
        source: c_int,
        fname: *const c_char,
        line: c_int,
        func: *const c_char,
        format: *const c_char,
        ...
    ) -> DocaError;
}

/// `doca_log(level, source, fname, line, func, format, ...)`: one application line, formatted
/// as `printf` does (the whole line, however long, as DOCA's library writes it), shown when `level` is within the application's
/// limit; a NULL `format` is `INVALID_VALUE`. C declares it variadic; Rust cannot define a
/// C-variadic function, so this is a jump, with every register and the stack untouched, to
/// the C function that reads the arguments (`doca_emu_log_format`): to Rust it takes none.
///
/// # Safety
/// Called from C with DOCA's prototype: `fname`, `func` NULL or C strings, `format` a
/// `printf` format matching the arguments that follow.
#[unsafe(naked)]
#[no_mangle]
pub unsafe extern "C" fn doca_log() -> DocaError {
    #[cfg(target_arch = "x86_64")]
    core::arch::naked_asm!("jmp {}", sym doca_emu_log_format);
    #[cfg(target_arch = "aarch64")]
    core::arch::naked_asm!("b {}", sym doca_emu_log_format);
}

/// Writes `text` on the C library's standard output stream: the stream the application's
/// log lines and its own `printf` output go to, so that what the library prints there (the
/// argument parser's usage and version) keeps its place among them when piped.
pub(crate) fn to_c_stdout(text: &str) {
    if let Ok(text) = CString::new(text) {
        // SAFETY: `stdout` is the C library's stream (valid for the process's life) and
        // `text` a C string for the call.
        unsafe { fputs(text.as_ptr(), std::ptr::addr_of!(stdout).read()) };
    }
}

/// Writes one application line, already formatted by [`doca_log`] (or by the inline
/// `doca_log` of headers before it was exported), in DOCA's
/// format (`[time][pid][DOCA][LVL][file:line][source] message`) on the C library's standard
/// output stream (in order with the program's printf output), when
/// `level` is within the application's limit.
///
/// # Safety
/// `file` and `msg` are NULL or C strings.
#[no_mangle]
pub unsafe extern "C" fn doca_emu_log_write(
    level: u32,
    source: c_int,
    file: *const c_char,
    line: c_int,
    msg: *const c_char,
) -> DocaError {
    guarded("doca_emu_log_write", || {
        if msg.is_null() || level > LEVELS.app() as u32 || level <= 10 {
            return DOCA_SUCCESS;
        }
        let text = |p: *const c_char| {
            // SAFETY: NULL or a C string (the caller's contract).
            (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        let file = text(file).unwrap_or_default();
        let file = file.rsplit('/').next().unwrap_or_default();
        let src = SOURCES.lock().get(source as usize).cloned().flatten().unwrap_or_default();
        let lvl = match level {
            0..=20 => "CRT",
            21..=30 => "ERR",
            31..=40 => "WRN",
            41..=50 => "INF",
            51..=60 => "DBG",
            _ => "TRC",
        };
        let line = doca_common::log::line(lvl, file, line as u32, &src, &text(msg).unwrap_or_default());
        to_c_stdout(&line);
        DOCA_SUCCESS
    })
}
