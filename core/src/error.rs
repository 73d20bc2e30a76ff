//! `doca_error_t`: the one error type of every DOCA call.
//!
//! [`Error`] mirrors the C enum value for value, so ported code can branch on exactly the
//! codes it branched on in C (`IN_PROGRESS` from an asynchronous start, `AGAIN` from a full
//! queue, …). Its variant `Success` exists only so that every numeric code round-trips;
//! no call of this project returns `Err(Error::Success)`.
//!
//! Calls that consume an object and may refuse (submitting a task, destroying a context)
//! hand the object back inside [`Refused`], exactly as the C API leaves ownership with the
//! caller on failure.

use std::fmt;

/// Result of every fallible DOCA call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

macro_rules! doca_errors {
    ($($variant:ident = $value:literal, $name:literal, $descr:literal;)*) => {
        /// `doca_error_t`: the 28 DOCA status codes, with DOCA's numeric values.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(i32)]
        pub enum Error {
            $(
                #[doc = concat!("`", $name, "` (", stringify!($value), "): ", $descr, ".")]
                $variant = $value,
            )*
        }

        impl Error {
            /// Every code, in DOCA's order (`Error::ALL[n]` has value `n`).
            pub const ALL: [Error; 28] = [$(Error::$variant),*];

            /// `doca_error_get_name`: the C enumerator, e.g. `"DOCA_ERROR_NOT_FOUND"`.
            pub const fn name(self) -> &'static str {
                match self { $(Error::$variant => $name,)* }
            }

            /// `doca_error_get_descr`: DOCA's description, e.g. `"Bad State"`.
            pub const fn descr(self) -> &'static str {
                match self { $(Error::$variant => $descr,)* }
            }
        }
    };
}

doca_errors! {
    Success = 0, "DOCA_SUCCESS", "Success";
    Unknown = 1, "DOCA_ERROR_UNKNOWN", "Unknown error";
    NotPermitted = 2, "DOCA_ERROR_NOT_PERMITTED", "Operation not permitted";
    InUse = 3, "DOCA_ERROR_IN_USE", "Resource already in use";
    NotSupported = 4, "DOCA_ERROR_NOT_SUPPORTED", "Operation not supported";
    Again = 5, "DOCA_ERROR_AGAIN", "Resource temporarily unavailable, try again";
    InvalidValue = 6, "DOCA_ERROR_INVALID_VALUE", "Invalid input";
    NoMemory = 7, "DOCA_ERROR_NO_MEMORY", "Memory allocation failure";
    Initialization = 8, "DOCA_ERROR_INITIALIZATION", "Resource initialization failure";
    TimeOut = 9, "DOCA_ERROR_TIME_OUT", "Timer expired waiting for resource";
    Shutdown = 10, "DOCA_ERROR_SHUTDOWN", "Shut down in process or completed";
    ConnectionReset = 11, "DOCA_ERROR_CONNECTION_RESET", "Connection reset by peer";
    ConnectionAborted = 12, "DOCA_ERROR_CONNECTION_ABORTED", "Connection aborted";
    ConnectionInProgress = 13, "DOCA_ERROR_CONNECTION_INPROGRESS", "Connection in progress";
    NotConnected = 14, "DOCA_ERROR_NOT_CONNECTED", "Not Connected";
    NoLock = 15, "DOCA_ERROR_NO_LOCK", "Unable to acquire required lock";
    NotFound = 16, "DOCA_ERROR_NOT_FOUND", "Requested Resource Not Found";
    IoFailed = 17, "DOCA_ERROR_IO_FAILED", "Input/Output Operation Failed";
    BadState = 18, "DOCA_ERROR_BAD_STATE", "Bad State";
    UnsupportedVersion = 19, "DOCA_ERROR_UNSUPPORTED_VERSION", "Unsupported version";
    OperatingSystem = 20, "DOCA_ERROR_OPERATING_SYSTEM", "Operating system call failure";
    Driver = 21, "DOCA_ERROR_DRIVER", "DOCA Driver call failure";
    Unexpected = 22, "DOCA_ERROR_UNEXPECTED", "An unexpected scenario was detected";
    AlreadyExist = 23, "DOCA_ERROR_ALREADY_EXIST", "Resource already exist";
    Full = 24, "DOCA_ERROR_FULL", "No more space in resource";
    Empty = 25, "DOCA_ERROR_EMPTY", "No entry is available in resource";
    InProgress = 26, "DOCA_ERROR_IN_PROGRESS", "Operation is in progress";
    TooBig = 27, "DOCA_ERROR_TOO_BIG", "Requested operation too big to be contained";
}

/// What `doca_error_get_name` and `doca_error_get_descr` return for a value outside 0..=27.
pub const UNRECOGNIZED: &str = "Unrecognized error code";

impl Error {
    /// The numeric `doca_error_t` value.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The code with this value, or `None` when DOCA defines no such code.
    pub const fn from_code(code: i32) -> Option<Error> {
        if code >= 0 && code < Error::ALL.len() as i32 {
            Some(Error::ALL[code as usize])
        } else {
            None
        }
    }

    /// `DOCA_IS_ERROR`: true for every code but `Success`.
    pub const fn is_error(self) -> bool {
        !matches!(self, Error::Success)
    }

    /// `doca_error_get_name` for a raw value: unknown values give [`UNRECOGNIZED`].
    pub fn name_of(code: i32) -> &'static str {
        Error::from_code(code).map_or(UNRECOGNIZED, Error::name)
    }

    /// `doca_error_get_descr` for a raw value: unknown values give [`UNRECOGNIZED`].
    pub fn descr_of(code: i32) -> &'static str {
        Error::from_code(code).map_or(UNRECOGNIZED, Error::descr)
    }

    /// Turns a raw status (as carried in a task or on the wire) back into a `Result`.
    pub fn check(code: i32) -> Result<()> {
        match Error::from_code(code) {
            Some(Error::Success) => Ok(()),
            Some(e) => Err(e),
            None => Err(Error::Unknown),
        }
    }

    /// The raw value of a `Result`: `DOCA_SUCCESS` for `Ok`.
    pub fn code_of<T>(result: &Result<T>) -> i32 {
        match result {
            Ok(_) => Error::Success.code(),
            Err(e) => e.code(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.descr(), self.name())
    }
}

impl std::error::Error for Error {}

impl From<Error> for i32 {
    fn from(e: Error) -> i32 {
        e.code()
    }
}

/// A numeric value that is not a `doca_error_t` code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnrecognizedCode(pub i32);

impl fmt::Display for UnrecognizedCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{UNRECOGNIZED} {}", self.0)
    }
}

impl std::error::Error for UnrecognizedCode {}

impl TryFrom<i32> for Error {
    type Error = UnrecognizedCode;
    fn try_from(code: i32) -> std::result::Result<Error, UnrecognizedCode> {
        Error::from_code(code).ok_or(UnrecognizedCode(code))
    }
}

/// A call that consumes its object refused: the error, and the object back.
///
/// `?` turns it into the plain [`Error`] (dropping the object, which frees it), which is what
/// the DOCA samples do on failure anyway. Keep the object with [`Refused::into_inner`].
pub struct Refused<T> {
    /// Why the call refused.
    pub error: Error,
    /// The object, still owned by the caller.
    pub value: T,
}

impl<T> Refused<T> {
    /// Bundles an error and the object it concerns.
    pub fn new(error: Error, value: T) -> Self {
        Refused { error, value }
    }

    /// The object, for a retry (e.g. after `AGAIN`).
    pub fn into_inner(self) -> T {
        self.value
    }

    /// The same refusal of the object `f` makes of this one (e.g. a library's handle
    /// around a generic one).
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Refused<U> {
        Refused { error: self.error, value: f(self.value) }
    }
}

impl<T> fmt::Debug for Refused<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Refused").field("error", &self.error).finish_non_exhaustive()
    }
}

impl<T> fmt::Display for Refused<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<T> std::error::Error for Refused<T> {}

impl<T> From<Refused<T>> for Error {
    fn from(r: Refused<T>) -> Error {
        r.error
    }
}

/// Logs `msg` with the code at error level (as DOCA's SDK log does), then returns the error.
///
/// `return Err(fail!(Error::InvalidValue, "name too long: {} bytes", n))` or with `?`:
/// the log line carries the context the bare code cannot. A program that installed no
/// `tracing` subscriber (no log backend) still sees the line, on standard error (see
/// [`SDK_STDERR_ENV`]).
#[macro_export]
macro_rules! fail {
    ($err:expr, $($arg:tt)+) => {{
        let err: $crate::Error = $err;
        ::tracing::error!(target: "doca_sdk", "{}: {}", err.name(), format_args!($($arg)+));
        if !::tracing::dispatcher::has_been_set() {
            $crate::__unlogged(err, format_args!($($arg)+));
        }
        err
    }};
}

pub use doca_link::SDK_STDERR_ENV;

/// The error line of [`fail!`] in a program with no `tracing` subscriber: on standard
/// error, in DOCA's shape, unless [`SDK_STDERR_ENV`] is `0`.
#[doc(hidden)]
pub fn unlogged(err: Error, msg: fmt::Arguments<'_>) {
    doca_link::error::unlogged(err.name(), msg);
}

/// The link's codes are DOCA codes of the same name.
impl From<doca_link::Error> for Error {
    fn from(e: doca_link::Error) -> Error {
        use doca_link::Error as L;
        match e {
            L::NotPermitted => Error::NotPermitted,
            L::InUse => Error::InUse,
            L::Again => Error::Again,
            L::InvalidValue => Error::InvalidValue,
            L::NoMemory => Error::NoMemory,
            L::ConnectionReset => Error::ConnectionReset,
            L::NotFound => Error::NotFound,
            L::IoFailed => Error::IoFailed,
            L::OperatingSystem => Error::OperatingSystem,
            L::Full => Error::Full,
            L::TimeOut => Error::TimeOut,
        }
    }
}

/// [`fail!`] for input a peer sent (a handshake, a descriptor, a ring index): the reason
/// goes to the debug log only, because a hostile peer can send bad input in a loop. The
/// caller that knows the context logs one rate-limited line.
#[macro_export]
macro_rules! peer_fail {
    ($err:expr, $($arg:tt)+) => {{
        let err: $crate::Error = $err;
        ::tracing::debug!(target: "doca_sdk", "{}: {}", err.name(), format_args!($($arg)+));
        err
    }};
}

/// A capability query's "no": `return Err(NOT_SUPPORTED)` with the reason in the debug log
/// only. DOCA's `*_cap_*` queries answer quietly — programs probe every device with them
/// (NVIDIA's samples' device-opening loops), and an error line per device that lacks a
/// capability would be noise. A call that *needs* the capability (a context's `create`)
/// logs the refusal with this reason: see [`require`].
#[macro_export]
macro_rules! cap_no {
    ($($arg:tt)+) => {
        return ::core::result::Result::Err($crate::__cap_no(::std::format!($($arg)+)).into())
    };
}

thread_local! {
    /// The reason of this thread's last [`cap_no!`], for [`require`].
    static LAST_CAP_NO: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

#[doc(hidden)]
pub fn cap_no(reason: String) -> Error {
    tracing::debug!(target: "doca_sdk", "{}: {reason}", Error::NotSupported.name());
    LAST_CAP_NO.with(|r| *r.borrow_mut() = reason);
    Error::NotSupported
}

/// A capability that `call` needs, from a query written with [`cap_no!`]: its "no" becomes
/// this call's error line, with the query's reason.
pub fn require(answer: Result<(), Error>, call: &str) -> Result<(), Error> {
    answer.map_err(|e| {
        if e != Error::NotSupported {
            return e; // not a capability's "no": the query logged it already
        }
        let why = LAST_CAP_NO.with(|r| std::mem::take(&mut *r.borrow_mut()));
        if why.is_empty() {
            fail!(e, "{call}: this device lacks the capability")
        } else {
            fail!(e, "{call}: {why}")
        }
    })
}

/// `return Err(fail!(..))` in one word.
#[macro_export]
macro_rules! bail {
    ($err:expr, $($arg:tt)+) => {
        return ::core::result::Result::Err($crate::fail!($err, $($arg)+).into())
    };
}

/// `Err(InProgress)` read as what it is for `start` and `stop`: accepted, finishing later
/// (from progress). DOCA answers `DOCA_ERROR_IN_PROGRESS` from `doca_ctx_start` of a context
/// that starts asynchronously (a Comm Channel client) and from `doca_ctx_stop` with tasks in
/// flight; `?` would treat it as a failure.
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// use doca_core::loopback::Loopback;
/// use doca_core::{CtxState, InProgressOk, Pe, Started};
///
/// let pe = Pe::create()?;
/// let lb = Loopback::create(Started::Starting); // starts asynchronously, like a cc client
/// let ctx = lb.as_ctx();
/// pe.connect_ctx(&ctx)?;
/// let now = ctx.start().in_progress_ok()?; // any other error still goes up through `?`
/// assert!(!now); // Running comes later, from progress
/// assert_eq!(ctx.state(), CtxState::Starting);
/// # Ok::<(), doca_core::Error>(())
/// ```
pub trait InProgressOk {
    /// `Ok(true)`: done at once; `Ok(false)`: `IN_PROGRESS`, done later from progress; any
    /// other error unchanged.
    fn in_progress_ok(self) -> Result<bool>;
}

impl InProgressOk for Result<()> {
    fn in_progress_ok(self) -> Result<bool> {
        match self {
            Ok(()) => Ok(true),
            Err(Error::InProgress) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_codes_convert_to_the_code_of_the_same_name() {
        use doca_link::Error as L;
        for l in [
            L::NotPermitted,
            L::InUse,
            L::Again,
            L::InvalidValue,
            L::NoMemory,
            L::ConnectionReset,
            L::NotFound,
            L::IoFailed,
            L::OperatingSystem,
            L::Full,
            L::TimeOut,
        ] {
            assert_eq!(Error::from(l).name(), l.name());
        }
    }

    #[test]
    fn codes_names_and_descriptions_match_doca() {
        assert_eq!(Error::ALL.len(), 28);
        for (n, e) in Error::ALL.iter().enumerate() {
            assert_eq!(e.code(), n as i32);
            assert_eq!(Error::from_code(n as i32), Some(*e));
            assert_eq!(Error::try_from(n as i32), Ok(*e));
            assert_eq!(i32::from(*e), n as i32);
            assert!(e.name().starts_with("DOCA_"));
        }
        assert_eq!(Error::NotFound.name(), "DOCA_ERROR_NOT_FOUND");
        assert_eq!(Error::NotFound.descr(), "Requested Resource Not Found");
        assert_eq!(Error::BadState.descr(), "Bad State");
        assert_eq!(Error::Success.name(), "DOCA_SUCCESS");
        assert_eq!(Error::TooBig.code(), 27);
        assert_eq!(Error::InProgress.code(), 26);
        assert_eq!(Error::Again.descr(), "Resource temporarily unavailable, try again");
        assert_eq!(Error::ConnectionInProgress.name(), "DOCA_ERROR_CONNECTION_INPROGRESS");
        assert_eq!(Error::BadState.to_string(), "Bad State (DOCA_ERROR_BAD_STATE)");
        assert!(!Error::Success.is_error() && Error::Unknown.is_error());
    }

    #[test]
    fn unknown_codes_are_unrecognized() {
        for code in [-1, 28, 1000, i32::MIN] {
            assert_eq!(Error::from_code(code), None);
            assert_eq!(Error::name_of(code), "Unrecognized error code");
            assert_eq!(Error::descr_of(code), "Unrecognized error code");
            assert_eq!(Error::try_from(code), Err(UnrecognizedCode(code)));
            assert_eq!(Error::check(code), Err(Error::Unknown));
        }
        assert_eq!(Error::name_of(16), "DOCA_ERROR_NOT_FOUND");
        assert_eq!(Error::check(0), Ok(()));
        assert_eq!(Error::check(5), Err(Error::Again));
        assert_eq!(Error::code_of(&Ok::<(), Error>(())), 0);
        assert_eq!(Error::code_of::<()>(&Err(Error::Again)), 5);
    }

    #[test]
    fn refused_gives_the_object_back_or_converts_with_question_mark() {
        fn consume(v: Vec<u8>) -> Result<(), Refused<Vec<u8>>> {
            Err(Refused::new(Error::Again, v))
        }
        let r = consume(vec![1, 2]).unwrap_err();
        assert_eq!(r.error, Error::Again);
        assert_eq!(r.into_inner(), vec![1, 2]);
        fn with_question_mark() -> Result<()> {
            consume(vec![3])?;
            Ok(())
        }
        assert_eq!(with_question_mark(), Err(Error::Again));
    }
}
