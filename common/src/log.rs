//! `doca_log` for Rust programs: DOCA's numeric levels and its line format,
//! `[HH:MM:SS:usec][pid][DOCA][LVL][file:line][module] message` (time in UTC), on standard
//! error.
//!
//! | DOCA                                          | here                                  |
//! |-----------------------------------------------|---------------------------------------|
//! | `enum doca_log_level`, `DOCA_LOG_LEVEL_*`     | [`LogLevel`] (`"50".parse()` as `-l 50`) |
//! | `DOCA_LOG_REGISTER(NAME)`                     | nothing: the Rust module path names the source |
//! | `DOCA_LOG_CRIT/ERR/WARN/INFO/DBG/TRC`         | `tracing::error!` (CRIT too), `warn!`, `info!`, `debug!`, `trace!` |
//! | `doca_log_backend_create_standard` + `doca_log_level_set_global_lower_limit` | [`init`]`(app, …)` |
//! | `doca_log_level_set_global_sdk_limit`, the samples' `--sdk-log-level` | [`init`]`(…, sdk)` |
//!
//! The libraries of this project log under the `tracing` target `doca_sdk` (the SDK
//! level); everything else is the program's (the application level). DOCA programs default
//! to INFO for themselves and WARNING for the SDK: [`LogLevel::APP_DEFAULT`],
//! [`LogLevel::SDK_DEFAULT`].
//!
//! ```
//! use doca_common::log::{self, LogLevel};
//! log::init(LogLevel::APP_DEFAULT, LogLevel::SDK_DEFAULT);
//! tracing::info!("shown as [..][pid][DOCA][INF][file.rs:line][module] ...");
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::prelude::*;
use tracing_subscriber::registry::LookupSpan;

/// `enum doca_log_level`: 10 disable, 20 critical, 30 error, 40 warning, 50 info, 60 debug,
/// 70 trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// `DOCA_LOG_LEVEL_DISABLE` (10).
    Disable = 10,
    /// `DOCA_LOG_LEVEL_CRIT` (20).
    Crit = 20,
    /// `DOCA_LOG_LEVEL_ERROR` (30).
    Error = 30,
    /// `DOCA_LOG_LEVEL_WARNING` (40).
    Warning = 40,
    /// `DOCA_LOG_LEVEL_INFO` (50).
    Info = 50,
    /// `DOCA_LOG_LEVEL_DEBUG` (60).
    Debug = 60,
    /// `DOCA_LOG_LEVEL_TRACE` (70).
    Trace = 70,
}

impl LogLevel {
    /// The programs' own default level (DOCA's samples: INFO).
    pub const APP_DEFAULT: LogLevel = LogLevel::Info;
    /// The libraries' default level (DOCA's samples: WARNING).
    pub const SDK_DEFAULT: LogLevel = LogLevel::Warning;

    /// The `tracing` filter that shows this level and everything more severe.
    pub fn filter(self) -> LevelFilter {
        match self {
            LogLevel::Disable => LevelFilter::OFF,
            LogLevel::Crit | LogLevel::Error => LevelFilter::ERROR,
            LogLevel::Warning => LevelFilter::WARN,
            LogLevel::Info => LevelFilter::INFO,
            LogLevel::Debug => LevelFilter::DEBUG,
            LogLevel::Trace => LevelFilter::TRACE,
        }
    }
}

impl LogLevel {
    /// The level numbered `n` (10, 20, … 70), if any.
    pub fn from_number(n: i32) -> Option<LogLevel> {
        [
            LogLevel::Disable,
            LogLevel::Crit,
            LogLevel::Error,
            LogLevel::Warning,
            LogLevel::Info,
            LogLevel::Debug,
            LogLevel::Trace,
        ]
        .into_iter()
        .find(|l| *l as i32 == n)
    }
}

impl FromStr for LogLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let n: i32 = s.trim().parse().map_err(|_| format!("log level {s:?} is not a number (10..70)"))?;
        LogLevel::from_number(n)
            .ok_or_else(|| format!("log level {n} is not one of 10, 20, 30, 40, 50, 60, 70"))
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", *self as i32)
    }
}

/// Installs the logger: the program's own lines at `app`, the libraries' (target `doca_sdk`) at
/// `sdk`. A second call keeps the first logger (as in tests, where many call it).
pub fn init(app: LogLevel, sdk: LogLevel) {
    let filter = Targets::new().with_target("doca_sdk", sdk.filter()).with_default(app.filter());
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .event_format(DocaFormat)
        .with_writer(std::io::stderr);
    // A second init (e.g. in tests) keeps the first logger.
    let _ = tracing_subscriber::registry().with(layer.with_filter(filter)).try_init();
}

/// Levels that may change while the program runs (C programs set the SDK level after they
/// created their backends): [`init_dynamic`] reads them at every line.
pub struct Levels {
    app: AtomicI32,
    sdk: AtomicI32,
}

impl Levels {
    /// The defaults: the program at INFO, the libraries at WARNING.
    pub const fn new() -> Levels {
        Levels {
            app: AtomicI32::new(LogLevel::APP_DEFAULT as i32),
            sdk: AtomicI32::new(LogLevel::SDK_DEFAULT as i32),
        }
    }

    /// The program's level.
    pub fn app(&self) -> LogLevel {
        level_of(self.app.load(Ordering::Relaxed))
    }

    /// The libraries' level.
    pub fn sdk(&self) -> LogLevel {
        level_of(self.sdk.load(Ordering::Relaxed))
    }

    /// Sets the program's level.
    pub fn set_app(&self, level: LogLevel) {
        self.app.store(level as i32, Ordering::Relaxed);
    }

    /// Sets the libraries' level.
    pub fn set_sdk(&self, level: LogLevel) {
        self.sdk.store(level as i32, Ordering::Relaxed);
    }
}

impl Default for Levels {
    fn default() -> Self {
        Levels::new()
    }
}

fn level_of(n: i32) -> LogLevel {
    LogLevel::from_number(n).unwrap_or(LogLevel::APP_DEFAULT)
}

/// Installs the logger like [`init`], with the levels read from `levels` at every line. A
/// second call (of either) keeps the first logger.
pub fn init_dynamic(levels: &'static Levels) {
    let filter = tracing_subscriber::filter::filter_fn(move |meta| {
        let level = if meta.target() == "doca_sdk" { levels.sdk() } else { levels.app() };
        level.filter() >= *meta.level()
    });
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .event_format(DocaFormat)
        .with_writer(std::io::stderr);
    let _ = tracing_subscriber::registry().with(layer.with_filter(filter)).try_init();
}

struct DocaFormat;

/// DOCA's line prefix, `[HH:MM:SS:usec][pid][DOCA][LVL][file:line][source] ` (time in UTC).
fn prefix(lvl: &str, file: &str, line: u32, source: &str) -> String {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs() % 86_400;
    format!(
        "[{:02}:{:02}:{:02}:{:06}][{}][DOCA][{lvl}][{file}:{line}][{source}] ",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        now.subsec_micros(),
        std::process::id(),
    )
}

/// A whole line in DOCA's format, ending in a newline: for lines formatted elsewhere (the C
/// ABI's `DOCA_LOG_*`). `lvl` is DOCA's three-letter level (`CRT`, `ERR`, `WRN`, `INF`,
/// `DBG`, `TRC`).
pub fn line(lvl: &str, file: &str, line: u32, source: &str, msg: &str) -> String {
    format!("{}{msg}\n", prefix(lvl, file, line, source))
}

impl<S, N> FormatEvent<S, N> for DocaFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(&self, ctx: &FmtContext<'_, S, N>, mut w: Writer<'_>, event: &Event<'_>) -> fmt::Result {
        let meta = event.metadata();
        let lvl = match *meta.level() {
            Level::ERROR => "ERR",
            Level::WARN => "WRN",
            Level::INFO => "INF",
            Level::DEBUG => "DBG",
            Level::TRACE => "TRC",
        };
        let file = meta.file().map(|f| f.rsplit('/').next().unwrap_or(f)).unwrap_or("?");
        let source = meta.module_path().unwrap_or(meta.target());
        write!(w, "{}", prefix(lvl, file, meta.line().unwrap_or(0), source))?;
        ctx.format_fields(w.by_ref(), event)?;
        writeln!(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_levels_parse_like_doca_argp() {
        assert_eq!("50".parse::<LogLevel>(), Ok(LogLevel::Info));
        assert_eq!("10".parse::<LogLevel>(), Ok(LogLevel::Disable));
        assert_eq!("70".parse::<LogLevel>().unwrap().filter(), LevelFilter::TRACE);
        assert!("55".parse::<LogLevel>().is_err());
        assert!("info".parse::<LogLevel>().is_err());
        assert_eq!(LogLevel::Warning.to_string(), "40");
    }
}
