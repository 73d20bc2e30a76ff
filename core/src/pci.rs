//! PCI addresses in DOCA's two spellings: `0000:b1:00.0` (domain:bus:device.function) and
//! the short BDF form `b1:00.0` (domain 0).

use std::fmt;
use std::str::FromStr;

use crate::error::Error;
use crate::fail;

/// `DOCA_DEVINFO_PCI_ADDR_SIZE`: "XXXX:XX:XX.X" plus the NUL.
pub const PCI_ADDR_SIZE: usize = 13;
/// `DOCA_DEVINFO_PCI_BDF_SIZE`: "XX:XX.X" plus the NUL.
pub const PCI_BDF_SIZE: usize = 8;

/// A PCI function address. Ordering and equality ignore the spelling it was parsed from.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PciAddr {
    domain: u16,
    bus: u8,
    device: u8,
    function: u8,
}

impl PciAddr {
    /// Builds an address; `device` must be below 32 and `function` below 8.
    pub fn new(domain: u16, bus: u8, device: u8, function: u8) -> Result<Self, Error> {
        if device > 0x1f || function > 7 {
            return Err(fail!(
                Error::InvalidValue,
                "PCI device {device:#x} or function {function} out of range"
            ));
        }
        Ok(PciAddr { domain, bus, device, function })
    }

    /// Parses `dddd:bb:dd.f` or `bb:dd.f` (hex, either case). Anything else is
    /// `INVALID_VALUE`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        Self::parse_quiet(s).ok_or_else(|| {
            fail!(Error::InvalidValue, "invalid PCI address {s:?}: expected dddd:bb:dd.f or bb:dd.f")
        })
    }

    pub(crate) fn parse_quiet(s: &str) -> Option<Self> {
        fn hex<T: TryFrom<u32>>(part: &str, digits: usize) -> Option<T> {
            if part.len() != digits || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            T::try_from(u32::from_str_radix(part, 16).ok()?).ok()
        }
        let (rest, function) = s.rsplit_once('.')?;
        let mut parts = rest.split(':').rev();
        let device: u8 = hex(parts.next()?, 2)?;
        let bus: u8 = hex(parts.next()?, 2)?;
        let domain: u16 = match parts.next() {
            Some(d) => hex(d, 4)?,
            None => 0,
        };
        if parts.next().is_some() {
            return None;
        }
        let function: u8 = hex(function, 1)?;
        if device > 0x1f || function > 7 {
            return None;
        }
        Some(PciAddr { domain, bus, device, function })
    }

    /// The PCI domain (0 for the short form).
    pub fn domain(self) -> u16 {
        self.domain
    }
    /// The bus number.
    pub fn bus(self) -> u8 {
        self.bus
    }
    /// The device number (0..32).
    pub fn device(self) -> u8 {
        self.device
    }
    /// The function number (0..8).
    pub fn function(self) -> u8 {
        self.function
    }

    /// The short form `bb:dd.f`, as `DOCA_DEVINFO_PCI_BDF_SIZE` holds it.
    pub fn bdf(self) -> String {
        format!("{:02x}:{:02x}.{:x}", self.bus, self.device, self.function)
    }

    /// True when `s` spells this address, in either form. An unparsable `s` is
    /// `INVALID_VALUE` (as `doca_devinfo_is_equal_pci_addr`).
    pub fn matches(self, s: &str) -> Result<bool, Error> {
        Ok(PciAddr::parse(s)? == self)
    }
}

impl fmt::Display for PciAddr {
    /// The long form `dddd:bb:dd.f` in lower case, as `doca_devinfo_get_pci_addr_str`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{}", self.domain, self.bdf())
    }
}

impl fmt::Debug for PciAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PciAddr({self})")
    }
}

impl FromStr for PciAddr {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        PciAddr::parse(s)
    }
}

/// The fabric names a host function by its address's parts.
impl From<PciAddr> for doca_link::HostFn {
    fn from(p: PciAddr) -> doca_link::HostFn {
        doca_link::HostFn { domain: p.domain(), bus: p.bus(), device: p.device(), function: p.function() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_parse_to_the_same_address() {
        let long = PciAddr::parse("0000:b1:00.0").unwrap();
        let short = PciAddr::parse("b1:00.0").unwrap();
        assert_eq!(long, short);
        assert_eq!(long.to_string(), "0000:b1:00.0");
        assert_eq!(short.bdf(), "b1:00.0");
        assert_eq!(PciAddr::parse("0000:B1:1F.7").unwrap().to_string(), "0000:b1:1f.7");
        assert!(long.matches("b1:00.0").unwrap());
        assert!(!long.matches("b1:00.1").unwrap());
        assert_eq!(PciAddr::parse("0001:03:00.0").unwrap().domain(), 1);
        assert!(PciAddr::parse("0001:03:00.0").unwrap() != PciAddr::parse("03:00.0").unwrap());
    }

    #[test]
    fn malformed_addresses_are_invalid_value() {
        for bad in [
            "",
            "b1",
            "b1:00",
            "b1:00.",
            "b1:00.8",
            "b1:20.0",
            "g1:00.0",
            "b1:0.0",
            "1b1:00.0",
            "00000:b1:00.0",
            "0:0000:b1:00.0",
            "b1:00.0 ",
            " b1:00.0",
            "b1-00.0",
            "b1:00.00",
        ] {
            assert_eq!(PciAddr::parse(bad), Err(Error::InvalidValue), "{bad:?}");
        }
        assert_eq!(PciAddr::parse("03:00.0").unwrap().matches("zz"), Err(Error::InvalidValue));
        assert_eq!(PciAddr::new(0, 0, 32, 0), Err(Error::InvalidValue));
    }
}
