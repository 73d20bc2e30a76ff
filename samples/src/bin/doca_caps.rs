//! `doca_caps`: what the emulated machine offers — its devices, their representors and their
//! capabilities — in the spirit of DOCA's `doca_caps --list-devs`.

use std::process::ExitCode;

use clap::Parser;
use doca_common::log::{self, LogLevel};
use doca_core::{CapSpec, DevInfo, DeviceKind, PciFuncType, RepFilter, RepKind, Topology, TOPOLOGY_ENV};
use doca_mmap::Mmap;

/// List the emulated DOCA devices, representors and capabilities.
#[derive(Parser, Debug)]
#[command(name = "doca_caps", version = doca_core::DOCA_VERSION)]
struct Args {
    /// List devices with their properties (the default).
    #[arg(long)]
    list_devs: bool,
    /// List the representors of each DPU device.
    #[arg(long)]
    list_rep_devs: bool,
    /// Only the device with this PCI address (dddd:bb:dd.f or bb:dd.f).
    #[arg(short = 'p', long = "pci-addr")]
    pci_addr: Option<String>,
    /// Program log level: 10 disable … 70 trace.
    #[arg(short = 'l', long = "log-level", default_value = "50")]
    log_level: LogLevel,
    /// Library (SDK) log level.
    #[arg(long = "sdk-log-level", default_value = "40")]
    sdk_log_level: LogLevel,
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// A capability query's answer as `doca_caps` prints it: yes, no, or the error's name.
fn answer(r: Result<bool, doca_core::Error>) -> String {
    match r {
        Ok(b) => yes_no(b).to_string(),
        Err(e) => format!("no ({})", e.name()),
    }
}

/// The NIC clocks of the device (`doca_clock_cap_nic_*_is_supported`).
fn nic_clocks(info: &DevInfo) -> String {
    let names: Vec<&str> = doca_core::ClockType::ALL
        .into_iter()
        .filter(|c| c.is_nic() && info.clock_cap(*c))
        .filter_map(|c| c.topology_name())
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(",")
    }
}

/// The AES-GCM task types with the key and tag sizes each supports, or why none.
fn aes_gcm(info: &DevInfo) -> String {
    use doca_aes_gcm::{caps, KeyType, Op};
    let of = |op: Op| {
        caps::task_is_supported(info, op).map(|()| {
            let mut has = vec![];
            for (k, name) in [(KeyType::Aes128, "key 128"), (KeyType::Aes256, "key 256")] {
                if caps::key_type_is_supported(info, op, k).is_ok() {
                    has.push(name);
                }
            }
            for (t, name) in [(12, "tag 96"), (16, "tag 128")] {
                if caps::tag_is_supported(info, op, t).is_ok() {
                    has.push(name);
                }
            }
            format!("{} ({})", op.name(), has.join(", "))
        })
    };
    match (of(Op::Encrypt), of(Op::Decrypt)) {
        (Ok(e), Ok(d)) => format!("{e}; {d}"),
        (Ok(x), Err(_)) | (Err(_), Ok(x)) => x,
        (Err(e), Err(_)) => format!("not supported ({})", e.name()),
    }
}

/// The RDMA row: transports, GID table, tasks and the connection manager, or why not.
fn rdma(info: &DevInfo) -> String {
    use doca_rdma::{caps, TransportType};
    if let Err(e) = caps::is_supported(info) {
        return format!("not supported ({})", e.name());
    }
    let dc = if caps::transport_type_is_supported(info, TransportType::Dc).is_ok() { ", DC" } else { "" };
    let gids = caps::gid_table_size(info).map_or_else(|e| e.name().to_string(), |n| n.to_string());
    format!(
        "RC{dc}; {gids} GIDs; send, send_imm, receive, read, write, write_imm, atomics, remote sync event; connection manager (this machine's ports); shared receive queues (no CPU receives: their data path is the DPA's)"
    )
}

/// `PF`, `VF` or `SF`.
fn func_type(t: PciFuncType) -> &'static str {
    match t {
        PciFuncType::Pf => "PF",
        PciFuncType::Vf => "VF",
        PciFuncType::Sf => "SF",
    }
}

fn print_dev(info: &DevInfo, with_reps: bool) {
    println!("PCI: {}", info.pci_addr_str());
    let kind = match info.kind() {
        DeviceKind::Dpu => "DPU device (Arm side): servers, representors",
        DeviceKind::Host => "host function: clients",
    };
    let rows = [
        ("side", kind.to_string()),
        ("ibdev_name", info.ibdev_name().to_string()),
        ("iface_name", info.iface_name().to_string()),
        ("pci_func_type", func_type(info.pci_func_type()).to_string()),
        ("sf_index", info.sf_index().map_or_else(|e| format!("none ({})", e.name()), |i| i.to_string())),
        ("nic clocks", nic_clocks(info)),
        ("rep_filter_all", answer(info.rep_cap_is_filter_all_supported())),
        ("rep_filter_net", answer(info.rep_cap_is_filter_net_supported())),
        ("rep_filter_emulated", answer(info.rep_cap_is_filter_emulated_supported())),
        ("hotplug_manager", yes_no(info.cap_is_hotplug_manager_supported()).to_string()),
        ("mmap export_pci", answer(Mmap::cap_is_export_pci_supported(info))),
        ("mmap create_from_export_pci", answer(Mmap::cap_is_create_from_export_pci_supported(info))),
    ];
    for (k, v) in rows {
        println!("        {k:<32}{v}");
    }
    let side = |ok: bool| if ok { "supported" } else { "not supported" };
    println!("        {:<32}{}", "cc server", side(doca_cc::caps::server_is_supported(info).is_ok()));
    println!("        {:<32}{}", "cc client", side(doca_cc::caps::client_is_supported(info).is_ok()));
    println!("        {:<32}{}", "cc consumer", side(doca_cc::caps::consumer_is_supported(info).is_ok()));
    println!("        {:<32}{}", "cc producer", side(doca_cc::caps::producer_is_supported(info).is_ok()));
    println!("        {:<32}{}", "aes_gcm", aes_gcm(info));
    println!("        {:<32}{}", "rdma", rdma(info));
    if !with_reps || info.kind() != DeviceKind::Dpu {
        return;
    }
    match info.open().and_then(|dev| dev.rep_list(RepFilter::ALL)) {
        Ok(reps) => {
            println!("        representors ({}):", reps.len());
            for r in reps {
                println!(
                    "                PCI: {}  {}  {}  iface {}  vuid {}{}",
                    r.pci_addr_str(),
                    func_type(r.pci_func_type()),
                    match r.kind() {
                        RepKind::Net => "net",
                        RepKind::Emulated => "emulated",
                    },
                    r.iface_name(),
                    r.vuid(),
                    if r.is_hotplug() { "  hotplug" } else { "" }
                );
            }
        }
        Err(e) => println!("        representors: {e}"),
    }
}

/// One limit row: its value from the topology (or the default), or why it cannot be read.
fn limit_row(info: &DevInfo, ns: &str, all: &[CapSpec], spec: &CapSpec) {
    match info.topology().check_caps(ns, all) {
        Ok(()) => println!("        {:<32}{:<12} {}", spec.name, info.topology().cap(spec), spec.descr),
        Err(e) => println!("        {:<32}{e}", spec.name),
    }
}

/// The capability limits, once: they are the same for every device of a topology.
fn print_limits(info: &DevInfo) {
    println!("Limits (the same for every device; `cap <name> <value>` in a topology file changes one):");
    for spec in doca_cc::caps::ALL {
        match doca_cc::caps::get(info, &spec) {
            Ok(v) => println!("        {:<32}{v:<12} {}", spec.name, spec.descr),
            Err(e) => println!("        {:<32}{e}", spec.name),
        }
    }
    let legacy = [doca_cc::legacy::MAX_CONNECTIONS, doca_cc::legacy::MAX_CONNECTIONS_PER_PROCESS];
    for spec in &legacy {
        limit_row(info, "ep", &legacy, spec);
    }
    // What one peer process may make this process map and hold (doca_mmap::budget).
    for spec in &doca_mmap::budget::CAPS {
        limit_row(info, "peer", &doca_mmap::budget::CAPS, spec);
    }
    for spec in &doca_dma::caps::ALL {
        limit_row(info, "dma", &doca_dma::caps::ALL, spec);
    }
    for spec in &doca_compress::caps::ALL {
        limit_row(info, "compress", &doca_compress::caps::ALL, spec);
    }
    for spec in &doca_erasure_coding::caps::ALL {
        limit_row(info, "ec", &doca_erasure_coding::caps::ALL, spec);
    }
    for spec in &doca_aes_gcm::caps::ALL {
        limit_row(info, "aes_gcm", &doca_aes_gcm::caps::ALL, spec);
    }
    for spec in &doca_rdma::caps::ALL {
        limit_row(info, "rdma", &doca_rdma::caps::ALL, spec);
    }
}

/// Who serves whom: each DPU device's representors and the host functions whose clients
/// their servers serve; the fabric directory and the side this process would use.
fn print_map(devs: &[DevInfo]) {
    println!("Who serves whom:");
    for dpu in devs.iter().filter(|d| d.kind() == DeviceKind::Dpu) {
        let reps = match dpu.open().and_then(|dev| dev.rep_list(RepFilter::ALL)) {
            Ok(reps) => reps,
            Err(e) => {
                println!("        {}: representors: {e}", dpu.pci_addr().bdf());
                continue;
            }
        };
        for r in reps {
            let f = r.pci_addr().bdf();
            let host = devs.iter().any(|d| d.kind() == DeviceKind::Host && d.pci_addr() == r.pci_addr());
            println!(
                "        a server on {} with representor {f} serves clients on {f}{}",
                dpu.pci_addr().bdf(),
                if host { "" } else { " (no host device of that address in this topology)" }
            );
        }
    }
    match doca_link::fabric_dir() {
        Ok(p) => {
            println!("Fabric directory: {} (set {} for another)", p.display(), doca_link::FABRIC_ENV)
        }
        Err(e) => println!("Fabric directory: unusable: {e}"),
    }
    match std::env::var(doca_core::SIDE_ENV) {
        Ok(side) => println!("This process's side: {side} ({} is set)", doca_core::SIDE_ENV),
        Err(_) => println!(
            "This process's side: the side of the first device a program opens ({} not set; C programs built for a side say it themselves)",
            doca_core::SIDE_ENV
        ),
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    log::init(args.log_level, args.sdk_log_level);
    let topo = match Topology::global() {
        Ok(t) => t,
        Err(e) => {
            tracing::error!("Failed to load the topology named by {TOPOLOGY_ENV}: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The whole emulated machine, both sides of the link (a program's own
    // `devinfo_create_list` sees only its side).
    let devs = match topo.devinfo_list() {
        Ok(d) => d,
        Err(e) => {
            tracing::error!("Failed to list devices: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut shown = 0;
    println!("DOCA version: {} (emulated)", doca_core::DOCA_VERSION);
    println!("Topology: {}", topo.source());
    if args.pci_addr.is_none() {
        print_map(&devs);
    }
    for info in &devs {
        if let Some(pci) = &args.pci_addr {
            match info.is_equal_pci_addr(pci) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    tracing::error!("Invalid PCI address {pci:?}: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        print_dev(info, args.list_rep_devs || !args.list_devs);
        shown += 1;
    }
    if shown == 0 {
        tracing::error!("No device matches {:?}", args.pci_addr.unwrap_or_default());
        return ExitCode::FAILURE;
    }
    if let Some(first) = devs.first() {
        print_limits(first);
    }
    if !topo.caps().is_empty() {
        println!("Capabilities set by the topology:");
        for c in topo.caps() {
            println!("        {:<32}{} (line {})", c.name, c.value, c.line);
        }
    }
    ExitCode::SUCCESS
}
