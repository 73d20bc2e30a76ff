//! `doca_clock.h` (3.3): a device's NIC clocks and the host's clocks, read one at a time or
//! as a cross-timestamp. See `doca_core::hwclock` for what each emulated clock reads.

use std::ffi::c_long;

use doca_core::{ClockType, HwClock, Timestamp};

use crate::check::{non_null, out, refuse};
use crate::dev::{DocaDev, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// `struct doca_clock`.
pub struct DocaClock(HwClock);

static CLOCKS: Handles = Handles::new(Kind::Clock);

fn clock<'a>(p: *const DocaClock) -> Option<&'a HwClock> {
    // SAFETY: CLOCKS only holds DocaClock handles.
    unsafe { CLOCKS.get(p) }.map(|c| &c.0)
}

/// `struct timespec` of the `.ts` member.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CTimespec {
    /// `tv_sec`.
    pub tv_sec: c_long,
    /// `tv_nsec`.
    pub tv_nsec: c_long,
}

/// `union doca_clock_timespec_t`: `.ts` for a time, `.counter` for the host's counter.
#[repr(C)]
#[derive(Clone, Copy)]
pub union DocaClockTimespec {
    /// seconds and nanoseconds
    pub ts: CTimespec,
    /// cycles (`DOCA_CLOCK_HOST_COUNTER_CYCLES`)
    pub counter: u64,
}

impl From<Timestamp> for DocaClockTimespec {
    fn from(t: Timestamp) -> Self {
        match t {
            Timestamp::Time { secs, nsecs } => {
                DocaClockTimespec { ts: CTimespec { tv_sec: secs as c_long, tv_nsec: nsecs as c_long } }
            }
            Timestamp::Counter(c) => DocaClockTimespec { counter: c },
        }
    }
}

/// The clock a C `uint64_t` names (`what` for the log): one `DOCA_CLOCK_*` bit.
fn clock_of(bits: u64, what: &str) -> Result<ClockType, DocaError> {
    ClockType::from_bits(bits)
        .ok_or_else(|| refuse(|| format!("{what} {bits:#x} is not one DOCA_CLOCK_* value")))
}

fn cap(name: &'static str, devinfo: *const DocaDevinfo, clock: ClockType) -> DocaError {
    guarded(name, || match crate::dev::devinfo(devinfo) {
        Some(d) if d.clock_cap(clock) => DOCA_SUCCESS,
        Some(_) => doca_core::Error::NotSupported.code(),
        None => invalid(),
    })
}

/// `doca_clock_cap_nic_free_running_is_supported`: `DOCA_SUCCESS` when the device has the
/// NIC's free-running clock, else `DOCA_ERROR_NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_clock_cap_nic_free_running_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    cap("doca_clock_cap_nic_free_running_is_supported", devinfo, ClockType::NicFreeRunning)
}

/// `doca_clock_cap_nic_real_time_is_supported`: as the free-running one.
#[no_mangle]
pub extern "C" fn doca_clock_cap_nic_real_time_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    cap("doca_clock_cap_nic_real_time_is_supported", devinfo, ClockType::NicRealTime)
}

/// `doca_clock_cap_nic_dpa_timer_is_supported`: as the free-running one.
#[no_mangle]
pub extern "C" fn doca_clock_cap_nic_dpa_timer_is_supported(devinfo: *const DocaDevinfo) -> DocaError {
    cap("doca_clock_cap_nic_dpa_timer_is_supported", devinfo, ClockType::NicDpaTimer)
}

/// `doca_clock_create`: the clocks of `dev`.
///
/// # Safety
/// `clock` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_clock_create(dev: *mut DocaDev, clock: *mut *mut DocaClock) -> DocaError {
    guarded("doca_clock_create", || {
        let Some(d) = crate::dev::dev(dev) else { return invalid() };
        if let Err(e) = non_null(clock, "clock") {
            return e;
        }
        match HwClock::create(&d.dev) {
            Ok(c) => out(clock, CLOCKS.add(DocaClock(c))),
            Err(e) => e.code(),
        }
    })
}

/// `doca_clock_destroy`.
///
/// # Safety
/// `clock` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_clock_destroy(clock: *mut DocaClock) -> DocaError {
    guarded("doca_clock_destroy", || {
        // SAFETY: CLOCKS only holds DocaClock handles; freed once, here.
        match unsafe { CLOCKS.remove(clock) } {
            Some(c) => {
                drop(c);
                DOCA_SUCCESS
            }
            None => invalid(),
        }
    })
}

/// `doca_clock_get_timestamp`: `clock_type` now (`.counter` for the host's counter, `.ts`
/// otherwise); a NIC clock the device lacks: `DOCA_ERROR_NOT_SUPPORTED`.
///
/// # Safety
/// `timestamp` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_clock_get_timestamp(
    clock: *const DocaClock,
    clock_type: u64,
    timestamp: *mut DocaClockTimespec,
) -> DocaError {
    guarded("doca_clock_get_timestamp", || {
        let Some(c) = self::clock(clock) else { return invalid() };
        let kind = match clock_of(clock_type, "clock_type") {
            Ok(k) => k,
            Err(e) => return e,
        };
        if let Err(e) = non_null(timestamp, "timestamp") {
            return e;
        }
        match c.timestamp(kind) {
            Ok(t) => out(timestamp, t.into()),
            Err(e) => e.code(),
        }
    })
}

/// `doca_clock_get_crosstimestamp`: the NIC clock `nic_clock` read between two readings of
/// `primary_clock`; the primary's time is the middle of that window and
/// `error_margin_nsecs` half its width (in cycles when the primary is the host's counter).
/// A second clock that is not a NIC clock: `DOCA_ERROR_INVALID_VALUE`.
///
/// # Safety
/// Each out-parameter is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_clock_get_crosstimestamp(
    clock: *const DocaClock,
    primary_clock: u64,
    nic_clock: u64,
    primary_timestamp: *mut DocaClockTimespec,
    nic_timestamp: *mut DocaClockTimespec,
    error_margin_nsecs: *mut u64,
) -> DocaError {
    guarded("doca_clock_get_crosstimestamp", || {
        let Some(c) = self::clock(clock) else { return invalid() };
        let (primary, nic) =
            match (clock_of(primary_clock, "primary_clock"), clock_of(nic_clock, "nic_clock")) {
                (Ok(p), Ok(n)) => (p, n),
                (Err(e), _) | (_, Err(e)) => return e,
            };
        for (p, what) in [(primary_timestamp, "primary_timestamp"), (nic_timestamp, "nic_timestamp")] {
            if let Err(e) = non_null(p, what) {
                return e;
            }
        }
        if let Err(e) = non_null(error_margin_nsecs, "error_margin_nsecs") {
            return e;
        }
        match c.cross_timestamp(primary, nic) {
            Ok(x) => {
                out(primary_timestamp, x.primary.into());
                out(nic_timestamp, x.nic.into());
                out(error_margin_nsecs, x.error_margin)
            }
            Err(e) => e.code(),
        }
    })
}
