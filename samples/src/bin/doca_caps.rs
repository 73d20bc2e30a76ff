//! `doca_caps`: what the emulated machine offers — its devices, their representors and their
//! capabilities — in the spirit of DOCA's `doca_caps --list-devs`.

use std::process::ExitCode;

use clap::Parser;
use doca_core::{
    devinfo_create_list, DevInfo, DeviceKind, PciFuncType, RepFilter, RepKind, Topology, TOPOLOGY_ENV,
};
use doca_samples::log::{self, LogLevel};

/// List the emulated DOCA devices, representors and capabilities.
#[derive(Parser, Debug)]
#[command(name = "doca_caps", version)]
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
        ("rep_filter_all", yes_no(info.rep_cap_is_filter_all_supported()).to_string()),
        ("rep_filter_net", yes_no(info.rep_cap_is_filter_net_supported()).to_string()),
        ("rep_filter_emulated", yes_no(info.rep_cap_is_filter_emulated_supported()).to_string()),
        ("hotplug_manager", yes_no(info.cap_is_hotplug_manager_supported()).to_string()),
    ];
    for (k, v) in rows {
        println!("        {k:<32}{v}");
    }
    let side = |ok: bool| if ok { "supported" } else { "not supported" };
    println!("        {:<32}{}", "cc server", side(doca_cc::caps::server_is_supported(info).is_ok()));
    println!("        {:<32}{}", "cc client", side(doca_cc::caps::client_is_supported(info).is_ok()));
    for spec in doca_cc::caps::ALL {
        match doca_cc::caps::get(info, &spec) {
            Ok(v) => println!("        {:<32}{v:<12} {}", spec.name, spec.descr),
            Err(e) => println!("        {:<32}{e}", spec.name),
        }
    }
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
                    match r.pci_func_type() {
                        PciFuncType::Pf => "PF",
                        PciFuncType::Vf => "VF",
                        PciFuncType::Sf => "SF",
                    },
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
    let devs = match devinfo_create_list() {
        Ok(d) => d,
        Err(e) => {
            tracing::error!("Failed to list devices: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut shown = 0;
    println!("Topology: {}", topo.source());
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
    if !topo.caps().is_empty() {
        println!("Capabilities set by the topology:");
        for c in topo.caps() {
            println!("        {:<32}{} (line {})", c.name, c.value, c.line);
        }
    }
    ExitCode::SUCCESS
}
