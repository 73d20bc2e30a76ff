//! `doca_clock.h` (DOCA 3.3): the NIC's and the host's clocks of a device, alone and as a
//! cross-timestamp, and the caps that say which NIC clocks a device has.

use doca_core::{open_device_with_pci, ClockType, CrossTimestamp, Error, HwClock, Timestamp, TOPOLOGY_ENV};
use doca_tests::in_fresh_process;

fn clock() -> HwClock {
    HwClock::create(&open_device_with_pci("b1:00.0", None).unwrap()).unwrap()
}

/// A topology file of one host function with the NIC clocks `clocks` (`none`, or names).
fn topology_with_clocks(clocks: &str) -> String {
    let dir = std::env::temp_dir().join(format!("doca-conf-clock-{clocks}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("clocks.topology");
    std::fs::write(&file, format!("device 03:00.0 dpu\ndevice b1:00.0 host clocks={clocks}\n")).unwrap();
    file.to_str().unwrap().to_string()
}

#[test]
fn doca_clock_cap_nic_clocks_are_supported_by_default() {
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    for c in [ClockType::NicFreeRunning, ClockType::NicRealTime, ClockType::NicDpaTimer] {
        assert!(dev.as_devinfo().clock_cap(c), "{c:?}");
    }
}

#[test]
fn doca_clock_cap_nic_clocks_follow_the_topology() {
    let path = topology_with_clocks("rt");
    in_fresh_process!(&[(TOPOLOGY_ENV, Some(path.as_str()))]);
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let info = dev.as_devinfo();
    assert!(info.clock_cap(ClockType::NicRealTime));
    assert!(!info.clock_cap(ClockType::NicFreeRunning));
    assert!(!info.clock_cap(ClockType::NicDpaTimer));
    // The host's clocks are no NIC's: always there.
    assert!(info.clock_cap(ClockType::HostMonotonic));
    let c = HwClock::create(&dev).unwrap();
    assert_eq!(c.timestamp(ClockType::NicFreeRunning).unwrap_err(), Error::NotSupported);
    assert!(c.timestamp(ClockType::NicRealTime).is_ok());
    assert_eq!(
        c.cross_timestamp(ClockType::HostRealTime, ClockType::NicDpaTimer).unwrap_err(),
        Error::NotSupported
    );
}

#[test]
fn doca_clock_get_timestamp_host_counter_cycles_is_a_counter_and_the_others_times() {
    let c = clock();
    for kind in ClockType::ALL {
        match c.timestamp(kind).unwrap() {
            Timestamp::Counter(_) => assert_eq!(kind, ClockType::HostCounterCycles),
            Timestamp::Time { nsecs, .. } => {
                assert_ne!(kind, ClockType::HostCounterCycles);
                assert!((0..1_000_000_000).contains(&nsecs), "{kind:?}: {nsecs} ns");
            }
        }
    }
}

#[test]
fn doca_clock_get_timestamp_moves_forward_on_monotonic_clocks() {
    let c = clock();
    for kind in [
        ClockType::NicFreeRunning,
        ClockType::HostMonotonic,
        ClockType::HostMonotonicRaw,
        ClockType::HostCounterCycles,
    ] {
        let a = c.timestamp(kind).unwrap().ticks();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = c.timestamp(kind).unwrap().ticks();
        assert!(b > a, "{kind:?}: {a} then {b}");
    }
}

#[test]
fn doca_clock_get_timestamp_is_the_same_nic_time_for_every_user_of_the_device() {
    // Two clocks of one device (as two processes would create) read one NIC time.
    let (a, b) = (clock(), clock());
    let x = a.timestamp(ClockType::NicFreeRunning).unwrap().ticks();
    let y = b.timestamp(ClockType::NicFreeRunning).unwrap().ticks();
    assert!((y - x).abs() < 1_000_000_000, "{x} vs {y}");
}

#[test]
fn doca_clock_get_crosstimestamp_brackets_the_nic_reading() {
    let c = clock();
    let CrossTimestamp { primary, nic, error_margin } =
        c.cross_timestamp(ClockType::HostRealTime, ClockType::NicRealTime).unwrap();
    // The NIC's real-time clock is the host's real time here: the two agree within the margin
    // (plus a little for the reading itself).
    let gap = (primary.ticks() - nic.ticks()).unsigned_abs();
    assert!(gap <= error_margin as u128 + 1_000, "gap {gap} ns, margin {error_margin} ns");
    assert!(matches!(primary, Timestamp::Time { .. }) && matches!(nic, Timestamp::Time { .. }));
}

#[test]
fn doca_clock_get_crosstimestamp_with_the_host_counter_gives_cycles() {
    let c = clock();
    let x = c.cross_timestamp(ClockType::HostCounterCycles, ClockType::NicFreeRunning).unwrap();
    assert!(matches!(x.primary, Timestamp::Counter(_)));
    assert!(matches!(x.nic, Timestamp::Time { .. }));
}

#[test]
fn doca_clock_get_crosstimestamp_second_clock_not_a_nic_clock_is_invalid_value() {
    let c = clock();
    assert_eq!(
        c.cross_timestamp(ClockType::HostRealTime, ClockType::HostMonotonic).unwrap_err(),
        Error::InvalidValue
    );
}

#[test]
fn doca_clock_type_values_are_single_bits() {
    for kind in ClockType::ALL {
        let bits = kind as u64;
        assert_eq!(bits.count_ones(), 1, "{kind:?}");
        assert_eq!(ClockType::from_bits(bits), Some(kind));
    }
    assert_eq!(ClockType::from_bits(0b11), None, "two clocks at once are none");
}
