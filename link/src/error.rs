//! The link's own error: the few DOCA codes its calls return, with DOCA's names, so that
//! `doca_core::Error` (which depends on this crate) converts from it one to one.
//!
//! A failure is logged where it happens, as core's `fail!` does: at error level for this
//! process's own failures, at debug level for input a peer sent (`peer_fail!`: a hostile peer
//! can send bad input in a loop; the caller that knows the context logs one rate-limited
//! line).

use std::fmt;

/// Result of every fallible call of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The DOCA codes (`doca_error_t`) the link's calls return; each converts into the
/// `doca_core::Error` of the same name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// `DOCA_ERROR_NOT_PERMITTED`.
    NotPermitted,
    /// `DOCA_ERROR_IN_USE`.
    InUse,
    /// `DOCA_ERROR_AGAIN`.
    Again,
    /// `DOCA_ERROR_INVALID_VALUE`.
    InvalidValue,
    /// `DOCA_ERROR_NO_MEMORY`.
    NoMemory,
    /// `DOCA_ERROR_CONNECTION_RESET`.
    ConnectionReset,
    /// `DOCA_ERROR_NOT_FOUND`.
    NotFound,
    /// `DOCA_ERROR_IO_FAILED`.
    IoFailed,
    /// `DOCA_ERROR_OPERATING_SYSTEM`.
    OperatingSystem,
    /// `DOCA_ERROR_FULL`.
    Full,
    /// `DOCA_ERROR_TIME_OUT`.
    TimeOut,
}

impl Error {
    /// The C enumerator, e.g. `"DOCA_ERROR_NOT_FOUND"` (as `doca_error_get_name`).
    pub const fn name(self) -> &'static str {
        match self {
            Error::NotPermitted => "DOCA_ERROR_NOT_PERMITTED",
            Error::InUse => "DOCA_ERROR_IN_USE",
            Error::Again => "DOCA_ERROR_AGAIN",
            Error::InvalidValue => "DOCA_ERROR_INVALID_VALUE",
            Error::NoMemory => "DOCA_ERROR_NO_MEMORY",
            Error::ConnectionReset => "DOCA_ERROR_CONNECTION_RESET",
            Error::NotFound => "DOCA_ERROR_NOT_FOUND",
            Error::IoFailed => "DOCA_ERROR_IO_FAILED",
            Error::OperatingSystem => "DOCA_ERROR_OPERATING_SYSTEM",
            Error::Full => "DOCA_ERROR_FULL",
            Error::TimeOut => "DOCA_ERROR_TIME_OUT",
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::error::Error for Error {}

/// `DOCA_EMU_SDK_STDERR`: DOCA's SDK writes its messages only to log backends the
/// application created, so a program without one sees a refused call as a bare code. The
/// emulator is friendlier: until the program installs a `tracing` subscriber (Rust) or
/// creates an SDK log backend (C), the library's error lines go to standard error.
/// `DOCA_EMU_SDK_STDERR=0` keeps DOCA's silence.
pub const SDK_STDERR_ENV: &str = "DOCA_EMU_SDK_STDERR";

/// The error line of a failure in a program with no `tracing` subscriber: on standard
/// error, in DOCA's shape (`name` is the code's C enumerator), unless [`SDK_STDERR_ENV`] is
/// `0`.
#[doc(hidden)]
pub fn unlogged(name: &str, msg: fmt::Arguments<'_>) {
    static QUIET: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *QUIET.get_or_init(|| std::env::var_os(SDK_STDERR_ENV).is_some_and(|v| v == "0")) {
        return;
    }
    eprintln!("[{}][DOCA][ERR][doca_sdk] {name}: {msg}", std::process::id());
}

/// Logs `msg` with the code at error level, then returns the error (core's `fail!`).
macro_rules! fail {
    ($err:expr, $($arg:tt)+) => {{
        let err: $crate::Error = $err;
        ::tracing::error!(target: "doca_sdk", "{}: {}", err.name(), format_args!($($arg)+));
        if !::tracing::dispatcher::has_been_set() {
            $crate::error::unlogged(err.name(), format_args!($($arg)+));
        }
        err
    }};
}

/// [`fail!`] for input a peer sent: the reason goes to the debug log only.
macro_rules! peer_fail {
    ($err:expr, $($arg:tt)+) => {{
        let err: $crate::Error = $err;
        ::tracing::debug!(target: "doca_sdk", "{}: {}", err.name(), format_args!($($arg)+));
        err
    }};
}

/// `return Err(fail!(..))` in one word.
macro_rules! bail {
    ($err:expr, $($arg:tt)+) => {
        return ::core::result::Result::Err($crate::error::fail!($err, $($arg)+).into())
    };
}

pub(crate) use {bail, fail, peer_fail};
