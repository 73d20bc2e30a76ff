//! DOCA's clocks (`doca_clock.h`, 3.3): the clocks of the device's NIC and of the host, read
//! one at a time or as a cross-timestamp — a NIC clock and another clock read together, with
//! how far apart the two readings can be.
//!
//! | DOCA                                  | here                                       |
//! |---------------------------------------|--------------------------------------------|
//! | `DOCA_CLOCK_*`                        | [`ClockType`] (one bit each)               |
//! | `union doca_clock_timespec_t`         | [`Timestamp`]: seconds and nanoseconds, or a counter |
//! | `doca_clock_cap_nic_*_is_supported`   | [`DevInfo::clock_cap`](crate::DevInfo::clock_cap) |
//! | `doca_clock_create` / `_destroy`      | [`HwClock::create`] / drop               |
//! | `doca_clock_get_timestamp`            | [`HwClock::timestamp`]                   |
//! | `doca_clock_get_crosstimestamp`       | [`HwClock::cross_timestamp`] → [`CrossTimestamp`] |
//!
//! The emulated clocks, and which system clock each one reads:
//!
//! | clock | reads | unit |
//! |---|---|---|
//! | NIC free-running | `CLOCK_MONOTONIC_RAW` plus the device's own offset (from its PCI address: every process sees the same NIC time) | s + ns |
//! | NIC real-time | `CLOCK_REALTIME` (a NIC synchronised to the host's time, as PTP would) | s + ns |
//! | NIC DPA timer | `CLOCK_MONOTONIC_RAW` plus another offset of the device | s + ns |
//! | host counter cycles | `CLOCK_MONOTONIC_RAW` in nanoseconds: a counter ticking at 1 GHz, not the CPU's TSC | cycles |
//! | host real-time | `CLOCK_REALTIME` | s + ns |
//! | host monotonic | `CLOCK_MONOTONIC` | s + ns |
//! | host monotonic raw | `CLOCK_MONOTONIC_RAW` | s + ns |
//!
//! Which NIC clocks a device has is the topology's `clocks=` of its `device` line (default:
//! all three); asking a device for a NIC clock it lacks is `NOT_SUPPORTED`.

use rustix::time::{clock_gettime, ClockId};

use crate::bail;
use crate::dev::Dev;
use crate::error::{Error, Result};
pub use crate::topology::ClockType;

/// `union doca_clock_timespec_t`: a time (seconds and nanoseconds) or, for
/// [`ClockType::HostCounterCycles`], a count of cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timestamp {
    /// `.ts`: seconds and nanoseconds (0..1e9).
    Time {
        /// `tv_sec`.
        secs: i64,
        /// `tv_nsec`.
        nsecs: i64,
    },
    /// `.counter`: cycles.
    Counter(u64),
}

impl Timestamp {
    /// One number: nanoseconds for a time, cycles for a counter (the unit of its clock).
    pub fn ticks(self) -> i128 {
        match self {
            Timestamp::Time { secs, nsecs } => secs as i128 * 1_000_000_000 + nsecs as i128,
            Timestamp::Counter(c) => c as i128,
        }
    }

    fn from_ticks(clock: ClockType, ticks: i128) -> Timestamp {
        match clock {
            ClockType::HostCounterCycles => Timestamp::Counter(ticks as u64),
            _ => Timestamp::Time {
                secs: ticks.div_euclid(1_000_000_000) as i64,
                nsecs: ticks.rem_euclid(1_000_000_000) as i64,
            },
        }
    }
}

/// What [`HwClock::cross_timestamp`] gives: the primary clock's time at the middle of the
/// window in which the NIC clock was read, the NIC clock's reading, and the error margin:
/// half that window, in the primary clock's unit (cycles for the host counter, else
/// nanoseconds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossTimestamp {
    /// The primary clock, at the middle of the window.
    pub primary: Timestamp,
    /// The NIC clock.
    pub nic: Timestamp,
    /// Half the window around the NIC reading (`error_margin_nsecs`).
    pub error_margin: u64,
}

/// How many windows a cross-timestamp tries; the narrowest is kept.
const CROSS_TRIES: usize = 3;

/// `struct doca_clock`: a device's clocks.
#[derive(Clone, Debug)]
pub struct HwClock {
    dev: Dev,
    /// Offsets (ns) of the free-running clock and the DPA timer against `CLOCK_MONOTONIC_RAW`.
    fr_offset: i128,
    dpa_offset: i128,
}

impl HwClock {
    /// `doca_clock_create`: the clocks of `dev`.
    pub fn create(dev: &Dev) -> Result<HwClock> {
        // A per-device offset every process derives alike: the device's NIC time does not
        // start at the host's boot.
        let pci = dev.as_devinfo().pci_addr();
        let seed = pci
            .to_string()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3));
        let fr_offset = (seed % (1 << 40)) as i128 * 1000; // up to ~12 days, whole microseconds
        let dpa_offset = ((seed >> 24) % (1 << 30)) as i128 * 1000;
        Ok(HwClock { dev: dev.clone(), fr_offset, dpa_offset })
    }

    /// The device the clocks belong to.
    pub fn dev(&self) -> &Dev {
        &self.dev
    }

    /// `doca_clock_get_timestamp`: `clock` now. A NIC clock the device lacks:
    /// `NOT_SUPPORTED`.
    pub fn timestamp(&self, clock: ClockType) -> Result<Timestamp> {
        self.check(clock)?;
        Ok(Timestamp::from_ticks(clock, self.read(clock)))
    }

    /// `doca_clock_get_crosstimestamp`: `nic` (a NIC clock, else `INVALID_VALUE`) read
    /// between two readings of `primary`; the primary's time is the middle of the narrowest
    /// of a few such windows and the margin half its width (see [`CrossTimestamp`]).
    pub fn cross_timestamp(&self, primary: ClockType, nic: ClockType) -> Result<CrossTimestamp> {
        if !nic.is_nic() {
            bail!(Error::InvalidValue, "cross-timestamp: the second clock must be a NIC clock, got {nic:?}");
        }
        self.check(primary)?;
        self.check(nic)?;
        let mut best: Option<(i128, i128, i128)> = None; // (window, primary middle, nic)
        for _ in 0..CROSS_TRIES {
            let before = self.read(primary);
            let at = self.read(nic);
            let after = self.read(primary);
            let window = (after - before).max(0);
            if best.is_none_or(|(w, _, _)| window < w) {
                best = Some((window, before + window / 2, at));
            }
        }
        let (window, middle, at) = best.expect("at least one try");
        Ok(CrossTimestamp {
            primary: Timestamp::from_ticks(primary, middle),
            nic: Timestamp::from_ticks(nic, at),
            error_margin: (window as u64).div_ceil(2),
        })
    }

    fn check(&self, clock: ClockType) -> Result<()> {
        if clock.is_nic() && !self.dev.as_devinfo().clock_cap(clock) {
            bail!(
                Error::NotSupported,
                "device {} has no {clock:?} clock (the topology's clocks= of its device line)",
                self.dev.as_devinfo().pci_addr()
            );
        }
        Ok(())
    }

    /// `clock` now, in its unit.
    fn read(&self, clock: ClockType) -> i128 {
        let ns = |id: ClockId| {
            let t = clock_gettime(id);
            t.tv_sec as i128 * 1_000_000_000 + t.tv_nsec as i128
        };
        match clock {
            ClockType::NicFreeRunning => ns(ClockId::MonotonicRaw) + self.fr_offset,
            ClockType::NicRealTime | ClockType::HostRealTime => ns(ClockId::Realtime),
            ClockType::NicDpaTimer => ns(ClockId::MonotonicRaw) + self.dpa_offset,
            ClockType::HostCounterCycles | ClockType::HostMonotonicRaw => ns(ClockId::MonotonicRaw),
            ClockType::HostMonotonic => ns(ClockId::Monotonic),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Topology;

    fn devs() -> Vec<Dev> {
        let t = Topology::parse(
            "t",
            "device 03:00.0 dpu\ndevice 03:00.1 dpu clocks=fr\ndevice 03:00.2 dpu clocks=none\n",
        )
        .unwrap();
        t.devinfo_list().unwrap().iter().map(|d| d.open().unwrap()).collect()
    }

    #[test]
    fn clock_types_are_single_known_bits() {
        assert_eq!(ClockType::from_bits(1 << 3), Some(ClockType::HostCounterCycles));
        for bad in [0, 3, 1 << 7, u64::MAX] {
            assert_eq!(ClockType::from_bits(bad), None, "{bad:#x}");
        }
        let nic: Vec<ClockType> = ClockType::ALL.into_iter().filter(|c| c.is_nic()).collect();
        assert_eq!(nic, [ClockType::NicFreeRunning, ClockType::NicRealTime, ClockType::NicDpaTimer]);
    }

    #[test]
    fn each_clock_reads_in_its_unit_and_the_device_says_which_nic_clocks_it_has() {
        let devs = devs();
        let clock = HwClock::create(&devs[0]).unwrap();
        for c in ClockType::ALL {
            let t = clock.timestamp(c).unwrap();
            match (c, t) {
                (ClockType::HostCounterCycles, Timestamp::Counter(n)) => assert!(n > 0),
                (ClockType::HostCounterCycles, t) => panic!("the counter as a time: {t:?}"),
                (_, Timestamp::Time { secs, nsecs }) => {
                    assert!(secs > 0 && (0..1_000_000_000).contains(&nsecs))
                }
                (c, t) => panic!("{c:?} as a counter: {t:?}"),
            }
        }
        let a = clock.timestamp(ClockType::HostMonotonicRaw).unwrap().ticks();
        let b = clock.timestamp(ClockType::HostMonotonicRaw).unwrap().ticks();
        assert!(b >= a, "monotonic");
        let only_fr = HwClock::create(&devs[1]).unwrap();
        assert!(only_fr.timestamp(ClockType::NicFreeRunning).is_ok());
        assert_eq!(only_fr.timestamp(ClockType::NicDpaTimer), Err(Error::NotSupported));
        assert_eq!(
            only_fr.cross_timestamp(ClockType::HostRealTime, ClockType::NicRealTime),
            Err(Error::NotSupported)
        );
        let info = devs[2].as_devinfo();
        assert!(!info.clock_cap(ClockType::NicFreeRunning) && !info.clock_cap(ClockType::NicRealTime));
        assert!(info.clock_cap(ClockType::HostMonotonic), "the host's clocks are every device's");
        assert!(devs[0].as_devinfo().clock_cap(ClockType::NicDpaTimer), "all three by default");
    }

    /// The NIC's free-running time is the same for every clock object of one device (every
    /// process derives the same offset) and differs between devices.
    #[test]
    fn a_device_has_one_nic_time() {
        let devs = devs();
        let (a, b, other) = (
            HwClock::create(&devs[0]).unwrap(),
            HwClock::create(&devs[0]).unwrap(),
            HwClock::create(&devs[1]).unwrap(),
        );
        assert_eq!((a.fr_offset, a.dpa_offset), (b.fr_offset, b.dpa_offset));
        assert_ne!(a.fr_offset, other.fr_offset);
    }

    /// The NIC reading lies within the error margin of the primary's time: the free-running
    /// clock minus its offset is `CLOCK_MONOTONIC_RAW`, the primary here, so the two must
    /// agree within the margin — a margin that is not half the bracketing window, or a
    /// primary time not its middle, fails.
    #[test]
    fn a_cross_timestamp_brackets_the_nic_reading() {
        let devs = devs();
        let clock = HwClock::create(&devs[0]).unwrap();
        for _ in 0..100 {
            let x = clock.cross_timestamp(ClockType::HostMonotonicRaw, ClockType::NicFreeRunning).unwrap();
            let nic_as_raw = x.nic.ticks() - clock.fr_offset;
            let diff = (nic_as_raw - x.primary.ticks()).unsigned_abs();
            assert!(diff <= x.error_margin as u128, "{x:?}: the NIC time is {diff} ns from the primary's");
        }
        let x = clock.cross_timestamp(ClockType::HostCounterCycles, ClockType::NicRealTime).unwrap();
        assert!(matches!(x.primary, Timestamp::Counter(_)) && matches!(x.nic, Timestamp::Time { .. }));
        assert_eq!(
            clock.cross_timestamp(ClockType::HostRealTime, ClockType::HostMonotonic),
            Err(Error::InvalidValue),
            "the second clock is a NIC clock"
        );
    }
}
