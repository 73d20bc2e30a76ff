//! The emulated machine: which devices exist, which representors a DPU device has, and the
//! capability limits libraries report.
//!
//! Every process reads the same description, so a "host" process and a "DPU" process agree
//! on the machine. Without configuration the embedded default applies (shown below); the
//! environment variable [`TOPOLOGY_ENV`] names a file in the same format that replaces it.
//!
//! ```text
#![doc = include_str!("default.topology")]
//! ```
//!
//! Capability lines are free-form `library.name value` pairs: core stores them, each library
//! declares the names it reads as [`CapSpec`]s with their defaults and refuses unknown names
//! in its own namespace (see [`Topology::check_caps`]). A malformed file is refused as a
//! whole with an error that names the file and the line.

use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use crate::error::Error;
use crate::fail;
use crate::pci::PciAddr;

/// Environment variable naming a topology file that replaces the embedded default.
pub const TOPOLOGY_ENV: &str = "DOCA_EMU_TOPOLOGY";

/// The embedded default topology, in the file format.
pub const DEFAULT_TOPOLOGY: &str = include_str!("default.topology");

/// Which side of the PCIe link a device lives on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceKind {
    /// A BlueField's own device, seen from its Arm cores: servers and representors live here.
    Dpu,
    /// A host PCI function: clients live here.
    Host,
}

/// `enum doca_pci_func_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum PciFuncType {
    /// `DOCA_PCI_FUNC_TYPE_PF` (0): physical function.
    Pf = 0,
    /// `DOCA_PCI_FUNC_TYPE_VF` (1): virtual function.
    Vf = 1,
    /// `DOCA_PCI_FUNC_TYPE_SF` (2): scalable function.
    Sf = 2,
}

/// What a representor stands for; [`crate::RepFilter`] selects on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RepKind {
    /// A network function representor (`DOCA_DEVINFO_REP_FILTER_NET`).
    Net,
    /// An emulated function representor (`DOCA_DEVINFO_REP_FILTER_EMULATED`).
    Emulated,
}

/// One device line of a topology.
#[derive(Clone, Debug)]
pub struct DeviceSpec {
    /// Its PCI address.
    pub pci: PciAddr,
    /// DPU or host.
    pub kind: DeviceKind,
    /// `doca_devinfo_get_ibdev_name`.
    pub ibdev: String,
    /// `doca_devinfo_get_iface_name`.
    pub iface: String,
    /// `doca_devinfo_get_pci_func_type` (`func=pf|vf|sf`; default PF).
    pub func_type: PciFuncType,
    /// `doca_devinfo_get_sf_index` (`sf=<index>`): set exactly when the function is an SF.
    pub sf_index: Option<u32>,
    /// The NIC clocks the device has (`clocks=fr,rt,dpa` or `clocks=none`; default: all
    /// three), as a mask of [`ClockType`] bits.
    pub nic_clocks: u64,
    /// Representors (DPU devices only).
    pub reps: Vec<RepSpec>,
    /// Line in the source it came from.
    pub line: usize,
}

/// One representor line of a topology.
#[derive(Clone, Debug)]
pub struct RepSpec {
    /// The host function it stands for.
    pub pci: PciAddr,
    /// PF, VF or SF.
    pub func_type: PciFuncType,
    /// Network or emulated.
    pub kind: RepKind,
    /// Its netdev name on the DPU.
    pub iface: String,
    /// `doca_devinfo_rep_get_vuid`.
    pub vuid: String,
    /// `doca_devinfo_rep_get_is_hotplug`.
    pub hotplug: bool,
    /// Line in the source it came from.
    pub line: usize,
}

pub use doca_link::CapSpec;

/// A `cap` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapEntry {
    /// `library.name`.
    pub name: String,
    /// Its value.
    pub value: u64,
    /// Line in the source it came from.
    pub line: usize,
}

/// A topology file that could not be used: where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopologyError {
    /// File name, or "embedded default".
    pub source: String,
    /// 1-based line number; 0 when the file as a whole is at fault.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl TopologyError {
    /// The DOCA code callers see: `INVALID_VALUE`.
    pub fn code(&self) -> Error {
        Error::InvalidValue
    }
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "topology {}: {}", self.source, self.message)
        } else {
            write!(f, "topology {} line {}: {}", self.source, self.line, self.message)
        }
    }
}

impl std::error::Error for TopologyError {}

/// `DOCA_DEVINFO_IFACE_NAME_SIZE`.
pub const IFACE_NAME_SIZE: usize = 256;
/// `DOCA_DEVINFO_IBDEV_NAME_SIZE`.
pub const IBDEV_NAME_SIZE: usize = 64;
/// `DOCA_DEVINFO_VUID_SIZE` and `DOCA_DEVINFO_REP_VUID_SIZE`.
pub const VUID_SIZE: usize = 128;

/// A parsed machine description.
pub struct Topology {
    source: String,
    devices: Vec<DeviceSpec>,
    caps: Vec<CapEntry>,
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology")
            .field("source", &self.source)
            .field("devices", &self.devices)
            .field("caps", &self.caps)
            .finish()
    }
}

impl Topology {
    /// Parses topology text; `source` names it in error messages.
    pub fn parse(source: &str, text: &str) -> Result<Arc<Topology>, TopologyError> {
        Parser { source, devices: Vec::new(), caps: Vec::new() }.run(text)
    }

    /// The embedded default of DESIGN §3 (one DPU `03:00.0`, host functions `b1:00.0`,
    /// `b1:00.1`, `3b:00.0`).
    pub fn embedded_default() -> Arc<Topology> {
        Topology::parse("embedded default", DEFAULT_TOPOLOGY).expect("the embedded default topology parses")
    }

    /// Reads and parses a topology file.
    pub fn from_file(path: &Path) -> Result<Arc<Topology>, TopologyError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| TopologyError {
            source: source.clone(),
            line: 0,
            message: format!("cannot read: {e}"),
        })?;
        Topology::parse(&source, &text)
    }

    /// The process-wide topology: the file named by [`TOPOLOGY_ENV`] if set, else the
    /// embedded default. Read once; a bad file is logged and every device query then fails
    /// with `INVALID_VALUE`.
    pub fn global() -> Result<Arc<Topology>, Error> {
        // The first device call of a process is where a bad fault plan is reported.
        crate::fault::check_env()?;
        static GLOBAL: OnceLock<Result<Arc<Topology>, TopologyError>> = OnceLock::new();
        let loaded = GLOBAL.get_or_init(|| match std::env::var_os(TOPOLOGY_ENV) {
            Some(path) if !path.is_empty() => Topology::from_file(Path::new(&path)),
            _ => Ok(Topology::embedded_default()),
        });
        match loaded {
            Ok(t) => Ok(t.clone()),
            Err(e) => Err(fail!(e.code(), "{e} (set by {TOPOLOGY_ENV})")),
        }
    }

    /// Where this topology came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Device descriptions, in file order.
    pub fn devices(&self) -> &[DeviceSpec] {
        &self.devices
    }

    /// Every `cap` line, in file order.
    pub fn caps(&self) -> &[CapEntry] {
        &self.caps
    }

    /// The value of a capability: the topology's if set, else its default.
    pub fn cap(&self, spec: &CapSpec) -> u64 {
        self.caps.iter().rev().find(|c| c.name == spec.name).map_or(spec.default, |c| c.value)
    }

    /// Refuses `cap` lines in `namespace.` whose name no spec in `known` declares: a
    /// library calls this so that a typo in a limit is an error naming the line, not a
    /// silently ignored setting.
    pub fn check_caps(&self, namespace: &str, known: &[CapSpec]) -> Result<(), TopologyError> {
        for c in &self.caps {
            let in_ns = c.name.strip_prefix(namespace).is_some_and(|r| r.starts_with('.'));
            if in_ns && !known.iter().any(|k| k.name == c.name) {
                let names: Vec<&str> = known.iter().map(|k| k.name).collect();
                return Err(TopologyError {
                    source: self.source.clone(),
                    line: c.line,
                    message: format!("unknown capability {:?} (known: {})", c.name, names.join(", ")),
                });
            }
        }
        Ok(())
    }
}

struct Parser<'a> {
    source: &'a str,
    devices: Vec<DeviceSpec>,
    caps: Vec<CapEntry>,
}

impl Parser<'_> {
    fn err(&self, line: usize, message: impl Into<String>) -> TopologyError {
        TopologyError { source: self.source.to_string(), line, message: message.into() }
    }

    fn run(mut self, text: &str) -> Result<Arc<Topology>, TopologyError> {
        for (n, raw) in text.lines().enumerate() {
            let line = n + 1;
            let content = raw.split('#').next().unwrap_or("");
            let mut words = content.split_whitespace();
            let Some(keyword) = words.next() else { continue };
            let words: Vec<&str> = words.collect();
            match keyword {
                "device" => self.device(line, &words)?,
                "rep" => self.rep(line, &words)?,
                "cap" => self.cap(line, &words)?,
                other => {
                    return Err(
                        self.err(line, format!("unknown statement {other:?}: expected device, rep or cap"))
                    )
                }
            }
        }
        if self.devices.is_empty() {
            return Err(self.err(0, "no device lines: a topology needs at least one device"));
        }
        Ok(Arc::new(Topology { source: self.source.to_string(), devices: self.devices, caps: self.caps }))
    }

    fn pci(&self, line: usize, word: Option<&&str>, what: &str) -> Result<PciAddr, TopologyError> {
        let word = word.ok_or_else(|| self.err(line, format!("missing {what} PCI address")))?;
        PciAddr::parse_quiet(word)
            .ok_or_else(|| self.err(line, format!("invalid {what} PCI address {word:?}")))
    }

    fn device(&mut self, line: usize, words: &[&str]) -> Result<(), TopologyError> {
        let pci = self.pci(line, words.first(), "device")?;
        let kind = match words.get(1).copied() {
            Some("dpu") => DeviceKind::Dpu,
            Some("host") => DeviceKind::Host,
            other => return Err(self.err(line, format!("device kind must be dpu or host, got {other:?}"))),
        };
        if let Some(prev) = self.devices.iter().find(|d| d.pci == pci) {
            return Err(self.err(line, format!("device {pci} already declared on line {}", prev.line)));
        }
        let n = self.devices.len();
        let mut spec = DeviceSpec {
            pci,
            kind,
            ibdev: format!("mlx5_{n}"),
            iface: format!("emu{n}"),
            func_type: PciFuncType::Pf,
            sf_index: None,
            nic_clocks: ClockType::ALL.iter().filter(|c| c.is_nic()).fold(0, |m, c| m | *c as u64),
            reps: Vec::new(),
            line,
        };
        for w in &words[2..] {
            match w.split_once('=') {
                Some(("ibdev", v)) => spec.ibdev = self.name(line, "ibdev", v, IBDEV_NAME_SIZE)?,
                Some(("iface", v)) => spec.iface = self.name(line, "iface", v, IFACE_NAME_SIZE)?,
                Some(("func", v)) => {
                    spec.func_type = match v {
                        "pf" => PciFuncType::Pf,
                        "vf" => PciFuncType::Vf,
                        "sf" => PciFuncType::Sf,
                        _ => return Err(self.err(line, format!("func must be pf, vf or sf, got {v:?}"))),
                    }
                }
                Some(("sf", v)) => {
                    let index = v.parse::<u32>().map_err(|_| {
                        self.err(line, format!("sf must be an SF index (0..{}), got {v:?}", u32::MAX))
                    })?;
                    spec.sf_index = Some(index);
                }
                Some(("clocks", v)) => spec.nic_clocks = self.clocks(line, v)?,
                _ => {
                    return Err(self.err(
                        line,
                        format!(
                            "unknown device attribute {w:?}: expected ibdev=, iface=, func=, sf= or clocks="
                        ),
                    ))
                }
            }
        }
        match (spec.func_type, spec.sf_index) {
            (PciFuncType::Sf, None) => return Err(self.err(line, "an SF device (func=sf) needs sf=<index>")),
            (PciFuncType::Pf | PciFuncType::Vf, Some(_)) => {
                return Err(self.err(line, "sf=<index> belongs to an SF device: add func=sf"))
            }
            (PciFuncType::Sf, Some(index)) => {
                let same = self.devices.iter().find(|d| d.kind == kind && d.sf_index == Some(index));
                if let Some(prev) = same {
                    return Err(self.err(
                        line,
                        format!("SF index {index} already belongs to {} (line {})", prev.pci, prev.line),
                    ));
                }
            }
            _ => {}
        }
        self.devices.push(spec);
        Ok(())
    }

    /// `clocks=`: `none`, or NIC clock names separated by commas.
    fn clocks(&self, line: usize, v: &str) -> Result<u64, TopologyError> {
        if v == "none" {
            return Ok(0);
        }
        let mut mask = 0;
        for name in v.split(',') {
            let clock = ClockType::ALL.into_iter().find(|c| c.topology_name() == Some(name));
            let Some(clock) = clock else {
                return Err(
                    self.err(line, format!("clocks: {name:?} is no NIC clock: expected fr, rt, dpa or none"))
                );
            };
            mask |= clock as u64;
        }
        Ok(mask)
    }

    fn name(&self, line: usize, what: &str, v: &str, size: usize) -> Result<String, TopologyError> {
        if v.is_empty() || v.len() >= size {
            return Err(self.err(line, format!("{what} must be 1..{} bytes, got {}", size - 1, v.len())));
        }
        Ok(v.to_string())
    }

    fn rep(&mut self, line: usize, words: &[&str]) -> Result<(), TopologyError> {
        let pci = self.pci(line, words.first(), "representor")?;
        let func_type = match words.get(1).copied() {
            Some("pf") => PciFuncType::Pf,
            Some("vf") => PciFuncType::Vf,
            Some("sf") => PciFuncType::Sf,
            other => {
                return Err(self.err(line, format!("representor type must be pf, vf or sf, got {other:?}")))
            }
        };
        let Some(dpu_idx) = self.devices.iter().rposition(|_| true) else {
            return Err(self.err(line, "rep before any device: representors follow their dpu device"));
        };
        if self.devices[dpu_idx].kind != DeviceKind::Dpu {
            return Err(self.err(
                line,
                format!(
                    "rep follows host device {} (line {}): representors belong to a dpu device",
                    self.devices[dpu_idx].pci, self.devices[dpu_idx].line
                ),
            ));
        }
        for d in &self.devices {
            if let Some(r) = d.reps.iter().find(|r| r.pci == pci) {
                return Err(self.err(
                    line,
                    format!("host function {pci} already has a representor on {} (line {})", d.pci, r.line),
                ));
            }
        }
        let dpu = &self.devices[dpu_idx];
        let n = dpu.reps.len();
        let mut spec = RepSpec {
            pci,
            func_type,
            kind: RepKind::Net,
            iface: format!("{}hpf{n}", dpu.iface),
            vuid: format!(
                "EMU{}{}",
                dpu.pci.bdf().replace([':', '.'], ""),
                pci.bdf().replace([':', '.'], "")
            ),
            hotplug: false,
            line,
        };
        for w in &words[2..] {
            match w.split_once('=') {
                None if *w == "net" => spec.kind = RepKind::Net,
                None if *w == "emulated" => spec.kind = RepKind::Emulated,
                None if *w == "hotplug" => spec.hotplug = true,
                Some(("iface", v)) => spec.iface = self.name(line, "iface", v, IFACE_NAME_SIZE)?,
                Some(("vuid", v)) => spec.vuid = self.name(line, "vuid", v, VUID_SIZE)?,
                _ => {
                    return Err(self.err(
                        line,
                        format!("unknown representor attribute {w:?}: expected net, emulated, hotplug, iface= or vuid="),
                    ))
                }
            }
        }
        self.devices[dpu_idx].reps.push(spec);
        Ok(())
    }

    fn cap(&mut self, line: usize, words: &[&str]) -> Result<(), TopologyError> {
        let [name, value] = words else {
            return Err(self.err(line, "cap needs exactly a name and a value: cap <library>.<name> <value>"));
        };
        let well_formed = name.split_once('.').is_some_and(|(ns, key)| {
            let ok = |s: &str| {
                !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            };
            ok(ns) && ok(key)
        });
        if !well_formed {
            return Err(
                self.err(line, format!("capability name {name:?} must look like library.name (lower case)"))
            );
        }
        let value = parse_value(value).ok_or_else(|| {
            self.err(
                line,
                format!("capability value {value:?} must be an integer (decimal, 0x hex, or K/M/G suffix)"),
            )
        })?;
        self.caps.push(CapEntry { name: name.to_string(), value, line });
        Ok(())
    }
}

fn parse_value(s: &str) -> Option<u64> {
    let (digits, mult) = match s.as_bytes().last()? {
        b'K' | b'k' => (&s[..s.len() - 1], 1u64 << 10),
        b'M' | b'm' => (&s[..s.len() - 1], 1u64 << 20),
        b'G' | b'g' => (&s[..s.len() - 1], 1u64 << 30),
        _ => (s, 1),
    };
    let base = match digits.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<u64>().ok()?,
    };
    base.checked_mul(mult)
}

/// `DOCA_CLOCK_*`: one clock, a bit each (the values are this emulator's: a call takes one
/// bit; a mask of several is refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum ClockType {
    /// `DOCA_CLOCK_NIC_FREE_RUNNING`: the NIC's free-running clock.
    NicFreeRunning = 1 << 0,
    /// `DOCA_CLOCK_NIC_REAL_TIME`: the NIC's real-time clock.
    NicRealTime = 1 << 1,
    /// `DOCA_CLOCK_NIC_DPA_TIMER`: the timer of the NIC's DPA.
    NicDpaTimer = 1 << 2,
    /// `DOCA_CLOCK_HOST_COUNTER_CYCLES`: the host's cycle counter (a [`crate::Timestamp::Counter`]).
    HostCounterCycles = 1 << 3,
    /// `DOCA_CLOCK_HOST_REAL_TIME`: the host's `CLOCK_REALTIME`.
    HostRealTime = 1 << 4,
    /// `DOCA_CLOCK_HOST_MONOTONIC`: the host's `CLOCK_MONOTONIC`.
    HostMonotonic = 1 << 5,
    /// `DOCA_CLOCK_HOST_MONOTONIC_RAW`: the host's `CLOCK_MONOTONIC_RAW`.
    HostMonotonicRaw = 1 << 6,
}

impl ClockType {
    /// Every clock, in bit order.
    pub const ALL: [ClockType; 7] = [
        ClockType::NicFreeRunning,
        ClockType::NicRealTime,
        ClockType::NicDpaTimer,
        ClockType::HostCounterCycles,
        ClockType::HostRealTime,
        ClockType::HostMonotonic,
        ClockType::HostMonotonicRaw,
    ];

    /// The clock of a C `uint64_t`: exactly one known bit, else `None`.
    pub fn from_bits(bits: u64) -> Option<ClockType> {
        ClockType::ALL.into_iter().find(|c| *c as u64 == bits)
    }

    /// Whether it is one of the NIC's clocks.
    pub fn is_nic(self) -> bool {
        matches!(self, ClockType::NicFreeRunning | ClockType::NicRealTime | ClockType::NicDpaTimer)
    }

    /// The topology's name of a NIC clock (`clocks=fr,rt,dpa`).
    pub fn topology_name(self) -> Option<&'static str> {
        match self {
            ClockType::NicFreeRunning => Some("fr"),
            ClockType::NicRealTime => Some("rt"),
            ClockType::NicDpaTimer => Some("dpa"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_topology_has_the_sample_devices() {
        let t = Topology::embedded_default();
        let pcis: Vec<String> = t.devices().iter().map(|d| d.pci.bdf()).collect();
        assert_eq!(pcis, ["03:00.0", "b1:00.0", "b1:00.1", "3b:00.0"]);
        assert_eq!(t.devices()[0].kind, DeviceKind::Dpu);
        let reps: Vec<String> = t.devices()[0].reps.iter().map(|r| r.pci.bdf()).collect();
        assert_eq!(reps, ["b1:00.0", "b1:00.1", "3b:00.0"]);
        assert!(t.devices()[1..].iter().all(|d| d.kind == DeviceKind::Host && d.reps.is_empty()));
    }

    #[test]
    fn devices_are_pfs_unless_a_func_says_otherwise() {
        let t = Topology::parse(
            "t",
            "device 03:00.0 dpu\ndevice 03:00.2 dpu sf=7 func=sf\ndevice b1:00.0 host func=vf\n\
             device b1:00.1 host func=sf sf=7\n",
        )
        .unwrap();
        let d = t.devices();
        assert_eq!((d[0].func_type, d[0].sf_index), (PciFuncType::Pf, None));
        assert_eq!((d[1].func_type, d[1].sf_index), (PciFuncType::Sf, Some(7)));
        assert_eq!((d[2].func_type, d[2].sf_index), (PciFuncType::Vf, None));
        assert_eq!((d[3].func_type, d[3].sf_index), (PciFuncType::Sf, Some(7)), "the host's SF 7 is its own");
        let all = Topology::embedded_default();
        assert!(all.devices().iter().all(|d| d.func_type == PciFuncType::Pf && d.sf_index.is_none()));
    }

    #[test]
    fn caps_override_defaults_and_accept_suffixes() {
        let t = Topology::parse("t", "device 03:00.0 dpu\ncap cc.max_msg_size 8K\ncap cc.max_buf 0x10\n")
            .unwrap();
        let spec = CapSpec { name: "cc.max_msg_size", default: 4080, descr: "" };
        let other = CapSpec { name: "cc.max_clients", default: 512, descr: "" };
        assert_eq!(t.cap(&spec), 8192);
        assert_eq!(t.cap(&other), 512);
        let err = t.check_caps("cc", &[spec, other]).unwrap_err();
        assert_eq!((err.line, err.code()), (3, Error::InvalidValue));
        assert!(err.to_string().contains("cc.max_buf"), "{err}");
        assert!(t.check_caps("mmap", &[]).is_ok());
        assert_eq!(parse_value("1G"), Some(1 << 30));
        assert_eq!(parse_value("99999999999999999999"), None);
        assert_eq!(parse_value("17179869184G"), None);
    }

    #[test]
    fn malformed_files_name_the_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("device 03:00.0 dpu\nfrobnicate\n", 2, "unknown statement"),
            ("device zz:00.0 dpu\n", 1, "invalid device PCI address"),
            ("device 03:00.0 gpu\n", 1, "dpu or host"),
            ("device 03:00.0 dpu colour=red\n", 1, "unknown device attribute"),
            ("rep b1:00.0 pf\n", 1, "before any device"),
            ("device b1:00.0 host\nrep b1:00.0 pf\n", 2, "belong to a dpu"),
            ("device 03:00.0 dpu\nrep b1:00.0 xf\n", 2, "pf, vf or sf"),
            ("device 03:00.0 dpu\nrep b1:00.0 pf\nrep b1:00.0 vf\n", 3, "already has a representor"),
            ("device 03:00.0 dpu\n\n# note\ndevice 0000:03:00.0 host\n", 4, "already declared on line 1"),
            ("device 03:00.0 dpu\ncap cc.x\n", 2, "exactly a name and a value"),
            ("device 03:00.0 dpu\ncap CC.x 1\n", 2, "library.name"),
            ("device 03:00.0 dpu\ncap cc.x ten\n", 2, "must be an integer"),
            ("# empty\n", 0, "no device lines"),
            ("device 03:00.0 dpu func=xf\n", 1, "pf, vf or sf"),
            ("device 03:00.0 dpu clocks=fr,tsc\n", 1, "\"tsc\" is no NIC clock"),
            ("device 03:00.0 dpu clocks=\n", 1, "is no NIC clock"),
            ("device 03:00.0 dpu func=sf\n", 1, "needs sf=<index>"),
            ("device 03:00.0 dpu sf=2\n", 1, "add func=sf"),
            ("device 03:00.0 dpu func=vf sf=2\n", 1, "add func=sf"),
            ("device 03:00.0 dpu func=sf sf=-1\n", 1, "an SF index"),
            ("device 03:00.0 dpu func=sf sf=4294967296\n", 1, "an SF index"),
            ("device 03:00.0 dpu func=sf sf=1\ndevice 03:00.1 dpu func=sf sf=1\n", 2, "already belongs to"),
        ];
        for (text, line, needle) in cases {
            let err = Topology::parse("case", text).unwrap_err();
            assert_eq!(err.line, *line, "{text:?}: {err}");
            assert!(err.to_string().contains(needle), "{text:?}: {err}");
            if *line > 0 {
                assert!(err.to_string().contains(&format!("line {line}")), "{err}");
            }
        }
    }
}
