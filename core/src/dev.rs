//! Devices and representors: `doca_devinfo`, `doca_dev`, `doca_devinfo_rep`, `doca_dev_rep`.
//!
//! A [`DevInfo`] describes a device of the [`Topology`]; [`DevInfo::open`] gives the [`Dev`]
//! that libraries are created on. Opening a device twice gives the same `Dev` (compare with
//! `==`). A DPU device lists its representors with [`Dev::rep_list`]; each
//! [`DevInfoRep`] opens into a [`DevRep`], which a comm-channel server is bound to.
//!
//! Handles are reference counted and `Send + Sync`: whatever uses a device keeps it alive, so
//! closing never fails with `IN_USE` as it can in C; [`Dev::close`] just lets the handle go.

use std::fmt;
use std::sync::{Arc, OnceLock};

use bitflags::bitflags;

use crate::error::{Error, Result};
use crate::pci::PciAddr;
use crate::topology::{CapSpec, DeviceKind, DeviceSpec, PciFuncType, RepKind, RepSpec, Topology};
use crate::{bail, fail};

pub use crate::topology::{IBDEV_NAME_SIZE, IFACE_NAME_SIZE, VUID_SIZE};

bitflags! {
    /// `enum doca_devinfo_rep_filter`: which representors [`Dev::rep_list`] returns.
    /// [`RepFilter::ALL`] (no bit) returns every one; bits select kinds.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct RepFilter: u32 {
        /// `DOCA_DEVINFO_REP_FILTER_NET` (2): network function representors.
        const NET = 1 << 1;
        /// `DOCA_DEVINFO_REP_FILTER_EMULATED` (4): emulated function representors.
        const EMULATED = 1 << 2;
    }
}

impl RepFilter {
    /// `DOCA_DEVINFO_REP_FILTER_ALL` (0).
    pub const ALL: RepFilter = RepFilter::empty();

    fn admits(self, kind: RepKind) -> bool {
        self.is_empty()
            || match kind {
                RepKind::Net => self.contains(RepFilter::NET),
                RepKind::Emulated => self.contains(RepFilter::EMULATED),
            }
    }
}

/// The environment variable that says which end of the link a process runs on: `host` or
/// `dpu` (see [`process_side`]).
pub const SIDE_ENV: &str = "DOCA_EMU_SIDE";

/// The side of the first device this process opened.
static OPENED_SIDE: OnceLock<DeviceKind> = OnceLock::new();

/// The side this program was built for ([`set_build_side`]).
static BUILD_SIDE: OnceLock<DeviceKind> = OnceLock::new();

/// Set when parts of this program were built for different sides: it then opens no device.
static MIXED_BUILD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The name of a side in log lines and in [`SIDE_ENV`]'s values.
fn side_name(kind: DeviceKind) -> &'static str {
    match kind {
        DeviceKind::Host => "host",
        DeviceKind::Dpu => "dpu",
    }
}

/// Records the side this program was built for: a C program built with the host's or the
/// DPU's `doca_build_config.h` calls this before `main` (`doca_emu_set_build_side`). From
/// then on it is the process's side ([`process_side`]). The same side again is `Ok`; the
/// other side (one program linked from parts built for two sides) is `NOT_PERMITTED`,
/// logged naming both, and from then on the process lists and opens no device; a first
/// device already opened on the other side is `NOT_PERMITTED` too.
pub fn set_build_side(kind: DeviceKind) -> Result<()> {
    let built = *BUILD_SIDE.get_or_init(|| kind);
    if built != kind {
        MIXED_BUILD.store(true, std::sync::atomic::Ordering::Relaxed);
        bail!(
            Error::NotPermitted,
            "this program has parts built for the {} side and parts built for the {} side (doca_build_config.h): one program runs on one side",
            side_name(built),
            side_name(kind)
        );
    }
    match OPENED_SIDE.get() {
        Some(&opened) if opened != kind => bail!(
            Error::NotPermitted,
            "built for the {} side, but a {} device was opened first",
            side_name(kind),
            side_name(opened)
        ),
        _ => Ok(()),
    }
}

/// The side this program was built for, if it said ([`set_build_side`]).
pub fn build_side() -> Option<DeviceKind> {
    BUILD_SIDE.get().copied()
}

/// Which end of the emulated link this process runs on, as [`devinfo_create_list`] sees it.
/// In order of precedence: the side the program was built for ([`set_build_side`]; when
/// [`SIDE_ENV`] is also set it must agree, else `NOT_PERMITTED`, logged naming both);
/// [`SIDE_ENV`] when set (`host` or `dpu`; anything else is `INVALID_VALUE`); the side of
/// the first device the process opened (by PCI address, say); otherwise not known yet
/// (`None`). On the hardware a host process cannot see the DPU's device, nor the DPU the
/// host's.
pub fn process_side() -> Result<Option<DeviceKind>> {
    let env = match std::env::var_os(SIDE_ENV) {
        None => None,
        Some(v) => match v.to_str().map(str::trim) {
            Some(s) if s.eq_ignore_ascii_case("host") => Some(DeviceKind::Host),
            Some(s) if s.eq_ignore_ascii_case("dpu") => Some(DeviceKind::Dpu),
            _ => bail!(Error::InvalidValue, "{SIDE_ENV}={v:?}: expected host or dpu"),
        },
    };
    if MIXED_BUILD.load(std::sync::atomic::Ordering::Relaxed) {
        bail!(
            Error::NotPermitted,
            "this program has parts built for the host side and parts built for the dpu side (doca_build_config.h): it runs on neither"
        );
    }
    match (build_side(), env) {
        (Some(built), Some(env)) if built != env => bail!(
            Error::NotPermitted,
            "this program was built for the {} side (doca_build_config.h defines DOCA_ARCH_{}) but {SIDE_ENV}={} says it runs on the {} side",
            side_name(built),
            side_name(built).to_ascii_uppercase(),
            side_name(env),
            side_name(env)
        ),
        (Some(built), _) => Ok(Some(built)),
        (None, Some(env)) => Ok(Some(env)),
        (None, None) => Ok(OPENED_SIDE.get().copied()),
    }
}

/// [`SIDE_ENV`]'s side when it is set and valid.
fn env_side() -> Option<DeviceKind> {
    let v = std::env::var(SIDE_ENV).ok()?;
    match v.trim() {
        s if s.eq_ignore_ascii_case("host") => Some(DeviceKind::Host),
        s if s.eq_ignore_ascii_case("dpu") => Some(DeviceKind::Dpu),
        _ => None,
    }
}

fn article(kind: DeviceKind) -> &'static str {
    match kind {
        DeviceKind::Host => "the host",
        DeviceKind::Dpu => "the DPU",
    }
}

/// Logs `text()` once per `key` for the life of the process: through `tracing` at error
/// level when `error` (what comes before a failure: the C ABI shows the SDK's errors by
/// default), else at warning level; and on standard error in DOCA's shape while the program
/// has no log backend (as errors are, see `DOCA_EMU_SDK_STDERR`).
fn hint_once(key: &str, error: bool, text: impl FnOnce() -> String) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    {
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        if said.iter().any(|k| k == key) || said.len() >= 64 {
            return;
        }
        said.push(key.to_string());
    }
    let text = text();
    if error {
        tracing::error!(target: "doca_sdk", "{text}");
    } else {
        tracing::warn!(target: "doca_sdk", "{text}");
    }
    if !tracing::dispatcher::has_been_set()
        && std::env::var_os(doca_link::SDK_STDERR_ENV).is_none_or(|v| v != "0")
    {
        let lvl = if error { "ERR" } else { "WRN" };
        eprintln!("[{}][DOCA][{lvl}][doca_sdk] {text}", std::process::id());
    }
}

/// Called when a program compared PCI address `pci` with a device of its list and it did
/// not match (`doca_devinfo_is_equal_pci_addr` false, C's way of looking for a device): if
/// no device of this process's side has that address, says once why, as
/// [`open_device_with_pci`] does in Rust — the address names a device of the other side
/// (how this process got its side, and how to build or run it for the other), or no device
/// of this machine (the devices it has).
pub fn explain_unmatched_pci(pci: &str) {
    let Ok(want) = PciAddr::parse(pci) else { return };
    let Ok(topo) = Topology::global() else { return };
    let Ok(all) = topo.devinfo_list() else { return };
    let Ok(Some(side)) = process_side() else { return };
    if all.iter().any(|d| d.kind() == side && d.pci_addr() == want) {
        return;
    }
    hint_once(&format!("pci {want}"), true, || match all.iter().find(|d| d.pci_addr() == want) {
        Some(there) => {
            let how = match (build_side(), env_side()) {
                (Some(built), _) => format!(
                    "this program was built for the {} side (doca_build_config.h defines DOCA_ARCH_{}) and sees {} devices only: build it for the {} side, with the {} pkg-config folder (PKG_CONFIG_PATH=<prefix>/lib/<multiarch>/pkgconfig/{})",
                    side_name(built),
                    side_name(built).to_ascii_uppercase(),
                    side_name(built),
                    side_name(there.kind()),
                    side_name(there.kind()),
                    side_name(there.kind())
                ),
                (None, Some(env)) => format!(
                    "{SIDE_ENV}={} puts this process on the {} side: set {SIDE_ENV}={} or unset it",
                    side_name(env),
                    side_name(env),
                    side_name(there.kind())
                ),
                (None, None) => format!(
                    "this process opened a {} device first and stays on that side: one process, one side",
                    side_name(side)
                ),
            };
            format!(
                "PCI address {pci} is {} device {}, not one of this process's: {how}",
                article(there.kind()),
                want.bdf()
            )
        }
        None => {
            let here: Vec<String> =
                all.iter().map(|d| format!("{} ({:?})", d.pci_addr().bdf(), d.kind())).collect();
            format!(
                "no device of this machine has PCI address {pci}; it has {} (doca_caps --list-devs; {} names another topology)",
                here.join(", "),
                crate::TOPOLOGY_ENV
            )
        }
    });
}

/// `doca_devinfo_create_list`: the devices of the process-wide topology on this process's
/// side of the link ([`process_side`]): the host functions in a host process, the DPU's
/// device in a DPU process. While the side is not known yet, every device, host functions
/// first — so a port that takes the first device passing a capability check opens a host
/// function unless the check asks for the DPU (a server, representors). `NOT_FOUND` when
/// there is none; `INVALID_VALUE` when the topology file or [`SIDE_ENV`] is malformed (the
/// log says where). The whole topology in file order is [`Topology::devinfo_list`].
pub fn devinfo_create_list() -> Result<Vec<DevInfo>> {
    let side = process_side()?;
    let topo = Topology::global()?;
    let all = topo.devinfo_list()?;
    let list: Vec<DevInfo> = match side {
        Some(side) => all.into_iter().filter(|d| d.kind() == side).collect(),
        None => {
            let (mut host, dpu): (Vec<DevInfo>, Vec<DevInfo>) =
                all.into_iter().partition(|d| d.kind() == DeviceKind::Host);
            host.extend(dpu);
            host
        }
    };
    if list.is_empty() {
        bail!(
            Error::NotFound,
            "topology {} has no {side:?} device (this process is on the {side:?} side; {SIDE_ENV} sets it)",
            topo.source()
        );
    }
    Ok(list)
}

impl Topology {
    /// Every device of this topology, both sides of the link.
    pub fn devinfo_list(self: &Arc<Self>) -> Result<Vec<DevInfo>> {
        if self.devices().is_empty() {
            bail!(Error::NotFound, "topology {} has no devices", self.source());
        }
        Ok((0..self.devices().len()).map(|idx| DevInfo { topo: self.clone(), idx }).collect())
    }
}

/// `struct doca_devinfo`: a device as described by the topology, before it is opened.
#[derive(Clone)]
pub struct DevInfo {
    topo: Arc<Topology>,
    idx: usize,
}

impl PartialEq for DevInfo {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.topo, &other.topo) && self.idx == other.idx
    }
}
impl Eq for DevInfo {}

impl fmt::Debug for DevInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DevInfo({} {:?} {})", self.pci_addr(), self.kind(), self.ibdev_name())
    }
}

impl DevInfo {
    fn spec(&self) -> &DeviceSpec {
        &self.topo.devices()[self.idx]
    }

    /// The topology this device belongs to.
    pub fn topology(&self) -> &Arc<Topology> {
        &self.topo
    }

    /// DPU or host side.
    pub fn kind(&self) -> DeviceKind {
        self.spec().kind
    }

    /// The PCI address.
    pub fn pci_addr(&self) -> PciAddr {
        self.spec().pci
    }

    /// `doca_devinfo_get_pci_addr_str`: `dddd:bb:dd.f`, lower case.
    pub fn pci_addr_str(&self) -> String {
        self.pci_addr().to_string()
    }

    /// `doca_devinfo_is_equal_pci_addr`: accepts both spellings; unparsable → `INVALID_VALUE`.
    pub fn is_equal_pci_addr(&self, pci: &str) -> Result<bool> {
        self.pci_addr().matches(pci)
    }

    /// `doca_devinfo_get_iface_name`.
    pub fn iface_name(&self) -> &str {
        &self.spec().iface
    }

    /// `doca_devinfo_get_ibdev_name`.
    pub fn ibdev_name(&self) -> &str {
        &self.spec().ibdev
    }

    /// `doca_devinfo_get_pci_func_type`: the topology's `func=` (PF by default).
    pub fn pci_func_type(&self) -> PciFuncType {
        self.spec().func_type
    }

    /// `doca_devinfo_get_sf_index`: the topology's `sf=` of an SF device; a device that is
    /// not an SF has no index: `NOT_SUPPORTED` (DOCA's samples ask [`DevInfo::pci_func_type`]
    /// first and skip non-SF devices).
    pub fn sf_index(&self) -> Result<u32> {
        match self.spec().sf_index {
            Some(index) => Ok(index),
            None => {
                tracing::debug!(
                    target: "doca_sdk",
                    "sf index: {} is a {:?} function, not an SF: it has no SF index",
                    self.pci_addr(),
                    self.pci_func_type()
                );
                Err(Error::NotSupported)
            }
        }
    }

    /// `doca_clock_cap_nic_free_running_is_supported`, `_nic_real_time_`, `_nic_dpa_timer_`
    /// (3.3): whether the device has the NIC clock `clock` (the topology's `clocks=`; all
    /// three by default). The host's clocks are every device's: true.
    pub fn clock_cap(&self, clock: crate::ClockType) -> bool {
        !clock.is_nic() || self.spec().nic_clocks & clock as u64 != 0
    }

    /// `doca_devinfo_rep_cap_is_filter_all_supported`: true on a DPU device; a host function
    /// exposes no representors → `NOT_SUPPORTED` (how applications tell the sides apart).
    pub fn rep_cap_is_filter_all_supported(&self) -> Result<bool> {
        self.rep_cap("all")
    }

    /// `doca_devinfo_rep_cap_is_filter_net_supported`: as
    /// [`DevInfo::rep_cap_is_filter_all_supported`].
    pub fn rep_cap_is_filter_net_supported(&self) -> Result<bool> {
        self.rep_cap("net")
    }

    /// `doca_devinfo_rep_cap_is_filter_emulated_supported`: as
    /// [`DevInfo::rep_cap_is_filter_all_supported`].
    pub fn rep_cap_is_filter_emulated_supported(&self) -> Result<bool> {
        self.rep_cap("emulated")
    }

    fn rep_cap(&self, filter: &str) -> Result<bool> {
        match self.kind() {
            DeviceKind::Dpu => Ok(true),
            DeviceKind::Host => {
                tracing::debug!(
                    target: "doca_sdk",
                    "rep filter {filter} capability: {} is a host function, it exposes no representors",
                    self.pci_addr()
                );
                Err(Error::NotSupported)
            }
        }
    }

    /// `doca_devinfo_cap_is_hotplug_manager_supported`: true on a DPU device that has a
    /// hot-pluggable representor.
    pub fn cap_is_hotplug_manager_supported(&self) -> bool {
        self.spec().reps.iter().any(|r| r.hotplug)
    }

    /// A library capability of this device: the topology's value or the spec's default.
    pub fn cap(&self, spec: &CapSpec) -> u64 {
        self.topo.cap(spec)
    }

    /// `doca_dev_open`. Opening an already open device gives a handle equal to the first.
    /// The first device a process opens sets its side when [`SIDE_ENV`] does not
    /// ([`process_side`]). A program built for one side ([`set_build_side`]) cannot open a device of the other:
    /// `NOT_PERMITTED`, logged naming both.
    pub fn open(&self) -> Result<Dev> {
        if MIXED_BUILD.load(std::sync::atomic::Ordering::Relaxed) {
            bail!(
                Error::NotPermitted,
                "device {}: this program has parts built for the host side and parts built for the dpu side",
                self.pci_addr()
            );
        }
        if let Some(built) = build_side() {
            if built != self.kind() {
                bail!(
                    Error::NotPermitted,
                    "device {} is on the {} side, and this program was built for the {} side (doca_build_config.h defines DOCA_ARCH_{})",
                    self.pci_addr(),
                    side_name(self.kind()),
                    side_name(built),
                    side_name(built).to_ascii_uppercase()
                );
            }
        }
        if let Some(env) = env_side() {
            if env != self.kind() {
                // A Rust program names its device by address and is served whatever the
                // variable says; told once, as the hardware would not let it.
                hint_once(&format!("open {}", self.pci_addr()), false, || {
                    format!(
                        "{SIDE_ENV}={} says this process runs on the {} side, but it opens {} device {} (a {} process could not see it on the hardware): set {SIDE_ENV}={} or unset it",
                        side_name(env),
                        side_name(env),
                        article(self.kind()),
                        self.pci_addr(),
                        side_name(env),
                        side_name(self.kind())
                    )
                });
            }
        }
        let _ = OPENED_SIDE.get_or_init(|| self.kind());
        tracing::debug!(target: "doca_sdk", "opened device {} ({:?})", self.pci_addr(), self.kind());
        // Every process is visible to doca_emu from its first device on (once per process).
        crate::status::publish();
        Ok(Dev { inner: Arc::new(DevInner { info: self.clone() }) })
    }
}

struct DevInner {
    info: DevInfo,
}

/// `struct doca_dev`: an open device. Cheap to clone; equal when it is the same device
/// (however often it was opened).
#[derive(Clone)]
pub struct Dev {
    inner: Arc<DevInner>,
}

impl Dev {
    /// How many handles to this open device exist (the device is in use by whatever holds
    /// the others: a map it was added to, a server or client created on it, ...).
    pub fn handle_count(&self) -> usize {
        Arc::strong_count(&self.inner)
    }
}

impl PartialEq for Dev {
    fn eq(&self, other: &Self) -> bool {
        self.inner.info == other.inner.info
    }
}
impl Eq for Dev {}

impl fmt::Debug for Dev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dev({} {:?})", self.inner.info.pci_addr(), self.inner.info.kind())
    }
}

impl Dev {
    /// `doca_dev_as_devinfo`.
    pub fn as_devinfo(&self) -> &DevInfo {
        &self.inner.info
    }

    /// `doca_dev_close`: drops this handle. The device stays open while anything (another
    /// handle, a map, a context) still uses it.
    pub fn close(self) {}

    /// `doca_devinfo_rep_create_list`: the representors of this DPU device that `filter`
    /// admits. On a host device → `NOT_SUPPORTED`.
    pub fn rep_list(&self, filter: RepFilter) -> Result<Vec<DevInfoRep>> {
        let info = self.as_devinfo();
        if info.kind() != DeviceKind::Dpu {
            bail!(
                Error::NotSupported,
                "device {} is a host function: representors are listed on the DPU device",
                info.pci_addr()
            );
        }
        Ok(info
            .spec()
            .reps
            .iter()
            .enumerate()
            .filter(|(_, r)| filter.admits(r.kind))
            .map(|(idx, _)| DevInfoRep { dev: self.clone(), idx })
            .collect())
    }
}

/// `struct doca_devinfo_rep`: a representor of an open DPU device, before it is opened.
#[derive(Clone, PartialEq, Eq)]
pub struct DevInfoRep {
    dev: Dev,
    idx: usize,
}

impl fmt::Debug for DevInfoRep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DevInfoRep({} on {})", self.pci_addr(), self.dev.as_devinfo().pci_addr())
    }
}

impl DevInfoRep {
    fn spec(&self) -> &RepSpec {
        &self.dev.as_devinfo().spec().reps[self.idx]
    }

    /// The DPU device this representor belongs to.
    pub fn dev(&self) -> &Dev {
        &self.dev
    }

    /// The host function it stands for.
    pub fn pci_addr(&self) -> PciAddr {
        self.spec().pci
    }

    /// `doca_devinfo_rep_get_pci_addr_str`.
    pub fn pci_addr_str(&self) -> String {
        self.pci_addr().to_string()
    }

    /// `doca_devinfo_rep_is_equal_pci_addr`: both spellings; unparsable → `INVALID_VALUE`.
    pub fn is_equal_pci_addr(&self, pci: &str) -> Result<bool> {
        self.pci_addr().matches(pci)
    }

    /// `doca_devinfo_rep_get_vuid`.
    pub fn vuid(&self) -> &str {
        &self.spec().vuid
    }

    /// `doca_devinfo_rep_get_pci_func_type`.
    pub fn pci_func_type(&self) -> PciFuncType {
        self.spec().func_type
    }

    /// `doca_devinfo_rep_get_is_hotplug`.
    pub fn is_hotplug(&self) -> bool {
        self.spec().hotplug
    }

    /// Network or emulated (what [`RepFilter`] selects on).
    pub fn kind(&self) -> RepKind {
        self.spec().kind
    }

    /// The representor's netdev name on the DPU.
    pub fn iface_name(&self) -> &str {
        &self.spec().iface
    }

    /// `doca_dev_rep_open`.
    pub fn open(&self) -> Result<DevRep> {
        Ok(DevRep { inner: Arc::new(self.clone()) })
    }
}

/// `struct doca_dev_rep`: an open representor. Equal when it stands for the same function
/// of the same device.
#[derive(Clone)]
pub struct DevRep {
    inner: Arc<DevInfoRep>,
}

impl PartialEq for DevRep {
    fn eq(&self, other: &Self) -> bool {
        *self.inner == *other.inner
    }
}
impl Eq for DevRep {}

impl fmt::Debug for DevRep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DevRep({} on {})", self.inner.pci_addr(), self.inner.dev.as_devinfo().pci_addr())
    }
}

impl DevRep {
    /// `doca_dev_rep_as_devinfo`.
    pub fn as_devinfo(&self) -> &DevInfoRep {
        &self.inner
    }

    /// The DPU device the representor belongs to.
    pub fn dev(&self) -> &Dev {
        &self.inner.dev
    }

    /// `doca_dev_rep_close`: drops this handle.
    pub fn close(self) {}
}

/// The capability check of [`open_device_with_pci`] (the samples' `tasks_check`).
pub type DevCheck = dyn Fn(&DevInfo) -> Result<()>;

/// The samples' `open_doca_device_with_pci`: the first device whose address is `pci` and that
/// `check` accepts (when given). `NOT_FOUND` ("Matching device not found") otherwise. The
/// address names the device, whatever side the process is on: any device of the topology.
pub fn open_device_with_pci(pci: &str, check: Option<&DevCheck>) -> Result<Dev> {
    PciAddr::parse(pci)?;
    for info in Topology::global()?.devinfo_list()? {
        if !info.is_equal_pci_addr(pci)? {
            continue;
        }
        if let Some(check) = check {
            if check(&info).is_err() {
                continue;
            }
        }
        if let Ok(dev) = info.open() {
            return Ok(dev);
        }
    }
    let here: Vec<String> = Topology::global()?
        .devinfo_list()?
        .iter()
        .map(|d| format!("{} ({:?})", d.pci_addr().bdf(), d.kind()))
        .collect();
    Err(fail!(
        Error::NotFound,
        "Matching device not found (PCI address {pci}); this machine has {} (doca_caps --list-devs; {} names another topology)",
        here.join(", "),
        crate::TOPOLOGY_ENV
    ))
}

/// The samples' `open_doca_device_with_capabilities`: the first device of
/// [`devinfo_create_list`] (this process's side) that `check` accepts. `NOT_FOUND`
/// ("Matching device not found") when none does.
pub fn open_device_with_capabilities(check: &DevCheck) -> Result<Dev> {
    for info in devinfo_create_list()? {
        if check(&info).is_ok() {
            if let Ok(dev) = info.open() {
                return Ok(dev);
            }
        }
    }
    Err(fail!(
        Error::NotFound,
        "Matching device not found (no {:?}-side device has the capability)",
        process_side()?
    ))
}

/// The samples' `open_doca_device_rep_with_pci`: the first representor of `dev` that `filter`
/// admits and whose address is `pci`. On a host device the representor list cannot be made:
/// logged as in the samples and returned as `INVALID_VALUE`; no match → `NOT_FOUND`.
pub fn open_device_rep_with_pci(dev: &Dev, filter: RepFilter, pci: &str) -> Result<DevRep> {
    PciAddr::parse(pci)?;
    let reps = dev.rep_list(filter).map_err(|_| {
        fail!(
            Error::InvalidValue,
            "Failed to create devinfo representor list. Representor devices are available only on DPU, do not run on Host"
        )
    })?;
    for rep in &reps {
        if rep.is_equal_pci_addr(pci)? {
            if let Ok(opened) = rep.open() {
                return Ok(opened);
            }
        }
    }
    let here: Vec<String> = reps.iter().map(|r| r.pci_addr().bdf().to_string()).collect();
    Err(fail!(
        Error::NotFound,
        "Matching representor not found (PCI address {pci} on {}); its representors: {} (doca_caps --list-rep-devs)",
        dev.as_devinfo().pci_addr(),
        if here.is_empty() { "none".to_string() } else { here.join(", ") }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Arc<Topology> {
        Topology::parse(
            "t",
            "device 03:00.0 dpu ibdev=mlx5_0 iface=p0\n\
             rep b1:00.0 pf iface=pf0hpf vuid=V0\n\
             rep b1:00.1 vf emulated hotplug\n\
             device b1:00.0 host ibdev=mlx5_2 iface=ens1\n\
             device b1:00.2 host func=sf sf=3\n",
        )
        .unwrap()
    }

    /// Function types and SF indexes as the topology gives them; as 3.3's
    /// `open_doca_device_with_sf_index` finds a device: skip what is not an SF, match the index.
    #[test]
    fn function_types_and_sf_indexes() {
        let list = topo().devinfo_list().unwrap();
        assert_eq!(list[0].pci_func_type(), PciFuncType::Pf);
        assert_eq!(list[0].sf_index(), Err(Error::NotSupported), "a PF has no SF index");
        assert_eq!((list[2].pci_func_type(), list[2].sf_index()), (PciFuncType::Sf, Ok(3)));
        let found: Vec<&DevInfo> = list
            .iter()
            .filter(|d| d.pci_func_type() == PciFuncType::Sf)
            .filter(|d| d.sf_index() == Ok(3))
            .collect();
        assert_eq!(found.len(), 1);
        assert!(found[0].is_equal_pci_addr("b1:00.2").unwrap());
    }

    #[test]
    fn devices_open_once_and_report_their_names() {
        let list = topo().devinfo_list().unwrap();
        assert_eq!(list.len(), 3);
        let dpu = list[0].open().unwrap();
        assert_eq!(dpu, list[0].open().unwrap(), "opening twice gives the same device");
        assert_ne!(dpu, list[1].open().unwrap());
        let info = dpu.as_devinfo();
        assert_eq!((info.ibdev_name(), info.iface_name()), ("mlx5_0", "p0"));
        assert_eq!(info.pci_addr_str(), "0000:03:00.0");
        assert!(info.is_equal_pci_addr("0000:03:00.0").unwrap());
        assert!(info.is_equal_pci_addr("03:00.0").unwrap());
        assert_eq!(info.is_equal_pci_addr("3:0.0"), Err(Error::InvalidValue));
        assert!(info.cap_is_hotplug_manager_supported());
        assert!(!list[1].cap_is_hotplug_manager_supported());
        assert_eq!(list[0].rep_cap_is_filter_net_supported(), Ok(true));
        assert_eq!(list[1].rep_cap_is_filter_all_supported(), Err(Error::NotSupported), "a host function");
    }

    #[test]
    fn representor_filters_and_attributes() {
        let list = topo().devinfo_list().unwrap();
        let dpu = list[0].open().unwrap();
        assert_eq!(dpu.rep_list(RepFilter::ALL).unwrap().len(), 2);
        let net = dpu.rep_list(RepFilter::NET).unwrap();
        assert_eq!(net.len(), 1);
        assert_eq!((net[0].vuid(), net[0].iface_name()), ("V0", "pf0hpf"));
        assert_eq!(net[0].pci_func_type(), PciFuncType::Pf);
        let emu = dpu.rep_list(RepFilter::EMULATED).unwrap();
        assert_eq!(emu.len(), 1);
        assert_eq!((emu[0].pci_func_type(), emu[0].is_hotplug()), (PciFuncType::Vf, true));
        assert_eq!(dpu.rep_list(RepFilter::NET | RepFilter::EMULATED).unwrap().len(), 2);
        let rep = net[0].open().unwrap();
        assert_eq!(rep, net[0].open().unwrap());
        assert_eq!(rep.dev(), &dpu);
        assert!(rep.as_devinfo().is_equal_pci_addr("0000:b1:00.0").unwrap());
        assert_eq!(RepFilter::NET.bits(), 2);
        assert_eq!(RepFilter::EMULATED.bits(), 4);
        assert_eq!(RepFilter::ALL.bits(), 0);

        let host = list[1].open().unwrap();
        assert_eq!(host.rep_list(RepFilter::ALL).unwrap_err(), Error::NotSupported);
        assert_eq!(
            open_device_rep_with_pci(&host, RepFilter::NET, "b1:00.0").unwrap_err(),
            Error::InvalidValue
        );
        assert_eq!(open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.1").unwrap_err(), Error::NotFound);
        assert_eq!(open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.0").unwrap(), rep);
    }

    #[test]
    fn sample_helpers_on_the_default_topology() {
        let dpu = open_device_with_pci("03:00.0", None).unwrap();
        assert_eq!(dpu, open_device_with_pci("0000:03:00.0", None).unwrap());
        assert_eq!(open_device_with_pci("ff:00.0", None).unwrap_err(), Error::NotFound);
        assert_eq!(open_device_with_pci("nonsense", None).unwrap_err(), Error::InvalidValue);
        let refuse: &DevCheck = &|_| Err(Error::NotSupported);
        assert_eq!(open_device_with_pci("03:00.0", Some(refuse)).unwrap_err(), Error::NotFound);
        for pci in ["b1:00.0", "b1:00.1", "3b:00.0"] {
            let rep = open_device_rep_with_pci(&dpu, RepFilter::NET, pci).unwrap();
            assert!(rep.as_devinfo().is_equal_pci_addr(pci).unwrap());
            open_device_with_pci(pci, None).unwrap();
        }
    }
}
