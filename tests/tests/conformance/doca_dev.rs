//! `doca_dev.h`: device lists, opening, PCI addresses, representors and their capabilities,
//! plus the samples' device helpers (`samples/common.c`).

use doca_core::dev::{IBDEV_NAME_SIZE, IFACE_NAME_SIZE, VUID_SIZE};
use doca_core::pci::{PCI_ADDR_SIZE, PCI_BDF_SIZE};
use doca_core::{
    devinfo_create_list, open_device_rep_with_pci, open_device_with_capabilities, open_device_with_pci,
    process_side, set_build_side, DeviceKind, Error, PciFuncType, RepFilter, Topology, SIDE_ENV,
    TOPOLOGY_ENV,
};
use doca_tests::in_fresh_process;

fn pcis(list: &[doca_core::DevInfo]) -> Vec<String> {
    list.iter().map(|d| d.pci_addr_str()).collect()
}

#[test]
fn doca_devinfo_create_list_in_a_host_process_lists_the_host_functions() {
    in_fresh_process!(&[(SIDE_ENV, Some("host"))]);
    assert_eq!(process_side(), Ok(Some(DeviceKind::Host)));
    let list = devinfo_create_list().unwrap();
    assert_eq!(pcis(&list), ["0000:b1:00.0", "0000:b1:00.1", "0000:3b:00.0"]);
    assert!(list.iter().all(|d| d.kind() == DeviceKind::Host));
}

#[test]
fn doca_devinfo_create_list_in_a_dpu_process_lists_the_dpu_device() {
    in_fresh_process!(&[(SIDE_ENV, Some("dpu"))]);
    let list = devinfo_create_list().unwrap();
    assert_eq!(pcis(&list), ["0000:03:00.0"]);
    // An explicit address still reaches a device of the other side (one process may play both).
    assert!(open_device_with_pci("b1:00.0", None).is_ok());
    assert_eq!(pcis(&devinfo_create_list().unwrap()), ["0000:03:00.0"], "the variable decides");
}

/// A program built for the DPU (`doca_build_config.h`, told before `main`): its side is the
/// DPU's whatever it opens, a host function is out of reach even by address, and parts built
/// for the host side turn it away from every device.
#[test]
fn a_program_built_for_the_dpu_opens_the_dpu_s_device_only() {
    in_fresh_process!(&[(SIDE_ENV, None)]);
    assert_eq!(set_build_side(DeviceKind::Dpu), Ok(()));
    assert_eq!(process_side(), Ok(Some(DeviceKind::Dpu)));
    assert_eq!(pcis(&devinfo_create_list().unwrap()), ["0000:03:00.0"]);
    let all = Topology::global().unwrap().devinfo_list().unwrap();
    let host = all.iter().find(|d| d.kind() == DeviceKind::Host).unwrap();
    assert_eq!(host.open().unwrap_err(), Error::NotPermitted);
    // The samples' helper goes on to the next device, then reports none found.
    assert_eq!(open_device_with_pci("b1:00.0", None).unwrap_err(), Error::NotFound);
    assert!(open_device_with_pci("03:00.0", None).is_ok());
    assert_eq!(set_build_side(DeviceKind::Dpu), Ok(()), "told again: nothing changes");
    assert_eq!(set_build_side(DeviceKind::Host), Err(Error::NotPermitted), "a part built for the host");
    assert_eq!(process_side(), Err(Error::NotPermitted));
    assert_eq!(devinfo_create_list().unwrap_err(), Error::NotPermitted);
    let dpu = all.iter().find(|d| d.kind() == DeviceKind::Dpu).unwrap();
    assert_eq!(dpu.open().unwrap_err(), Error::NotPermitted);
}

/// The side a program was built for wins; `DOCA_EMU_SIDE` naming the other is an error.
#[test]
fn doca_emu_side_must_agree_with_the_side_a_program_was_built_for() {
    in_fresh_process!(&[(SIDE_ENV, Some("host"))]);
    assert_eq!(set_build_side(DeviceKind::Dpu), Ok(()));
    assert_eq!(process_side(), Err(Error::NotPermitted));
    assert_eq!(devinfo_create_list().unwrap_err(), Error::NotPermitted);
}

#[test]
fn doca_devinfo_create_list_follows_the_first_device_opened() {
    in_fresh_process!(&[(SIDE_ENV, None)]);
    assert_eq!(process_side(), Ok(None), "nothing set, nothing opened: not known yet");
    assert_eq!(
        pcis(&devinfo_create_list().unwrap()),
        ["0000:b1:00.0", "0000:b1:00.1", "0000:3b:00.0", "0000:03:00.0"],
        "every device, host functions first"
    );
    open_device_with_pci("03:00.0", None).unwrap();
    assert_eq!(process_side(), Ok(Some(DeviceKind::Dpu)));
    assert_eq!(pcis(&devinfo_create_list().unwrap()), ["0000:03:00.0"]);
    open_device_with_pci("b1:00.0", None).unwrap();
    assert_eq!(process_side(), Ok(Some(DeviceKind::Dpu)), "only the first device counts");
}

#[test]
fn open_doca_device_with_capabilities_with_no_side_known_takes_a_host_function_unless_the_check_wants_the_dpu(
) {
    in_fresh_process!(&[(SIDE_ENV, None)]);
    let server = |d: &doca_core::DevInfo| doca_cc::caps::server_is_supported(d);
    let client = |d: &doca_core::DevInfo| doca_cc::caps::client_is_supported(d);
    assert_eq!(open_device_with_capabilities(&client).unwrap().as_devinfo().pci_addr_str(), "0000:b1:00.0");
    // Opening a host function made this a host process: the DPU's device is out of sight now.
    assert_eq!(open_device_with_capabilities(&server).unwrap_err(), Error::NotFound);
}

#[test]
fn open_doca_device_with_capabilities_as_a_dpu_port_with_no_configuration_finds_the_dpu_device() {
    in_fresh_process!(&[(SIDE_ENV, None)]);
    let server = |d: &doca_core::DevInfo| doca_cc::caps::server_is_supported(d);
    assert_eq!(open_device_with_capabilities(&server).unwrap().as_devinfo().pci_addr_str(), "0000:03:00.0");
    assert_eq!(process_side(), Ok(Some(DeviceKind::Dpu)));
}

#[test]
fn doca_devinfo_create_list_with_a_malformed_side_is_invalid_value() {
    in_fresh_process!(&[(SIDE_ENV, Some("arm"))]);
    assert_eq!(devinfo_create_list().unwrap_err(), Error::InvalidValue);
}

#[test]
fn doca_devinfo_create_list_with_no_device_on_this_side_is_not_found() {
    let dir = std::env::temp_dir().join(format!("doca-conf-topo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("hosts-only.topology");
    std::fs::write(&file, "device b1:00.0 host\n").unwrap();
    let path = file.to_str().unwrap().to_string();
    in_fresh_process!(&[(SIDE_ENV, Some("dpu")), (TOPOLOGY_ENV, Some(path.as_str()))]);
    assert_eq!(devinfo_create_list().unwrap_err(), Error::NotFound);
}

#[test]
fn doca_devinfo_create_list_with_a_malformed_topology_is_invalid_value() {
    let dir = std::env::temp_dir().join(format!("doca-conf-topo-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.topology");
    std::fs::write(&file, "device b1:00.0 hots\n").unwrap();
    let path = file.to_str().unwrap().to_string();
    in_fresh_process!(&[(TOPOLOGY_ENV, Some(path.as_str()))]);
    assert_eq!(devinfo_create_list().unwrap_err(), Error::InvalidValue);
    assert_eq!(open_device_with_pci("b1:00.0", None).unwrap_err(), Error::InvalidValue);
}

#[test]
fn doca_dev_open_twice_gives_the_same_device_and_close_keeps_it_for_other_users() {
    let all = Topology::global().unwrap().devinfo_list().unwrap();
    let a = all[1].open().unwrap();
    let b = all[1].open().unwrap();
    assert_eq!(a, b, "reopening the same device returns the same instance");
    assert_ne!(a, all[0].open().unwrap());
    assert_eq!(a.as_devinfo(), &all[1], "doca_dev_as_devinfo");
    a.close();
    assert_eq!(b.as_devinfo().pci_addr_str(), all[1].pci_addr_str(), "the other handle still works");
}

#[test]
fn doca_devinfo_get_pci_addr_str_and_is_equal_pci_addr() {
    let dev = open_device_with_pci("0000:B1:00.0", None).unwrap();
    let info = dev.as_devinfo();
    assert_eq!(info.pci_addr_str(), "0000:b1:00.0");
    assert_eq!(info.pci_addr_str().len() + 1, PCI_ADDR_SIZE, "DOCA_DEVINFO_PCI_ADDR_SIZE counts the NUL");
    assert_eq!("b1:00.0".len() + 1, PCI_BDF_SIZE);
    assert_eq!(info.is_equal_pci_addr("b1:00.0"), Ok(true));
    assert_eq!(info.is_equal_pci_addr("0000:b1:00.0"), Ok(true));
    assert_eq!(info.is_equal_pci_addr("b1:00.1"), Ok(false));
    assert_eq!(info.is_equal_pci_addr("b1-00.0"), Err(Error::InvalidValue));
    assert_eq!(info.is_equal_pci_addr(""), Err(Error::InvalidValue));
}

#[test]
fn doca_devinfo_get_iface_name_and_get_ibdev_name() {
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    assert_eq!(dpu.as_devinfo().iface_name(), "p0");
    assert_eq!(dpu.as_devinfo().ibdev_name(), "mlx5_0");
    let host = open_device_with_pci("b1:00.1", None).unwrap();
    assert_eq!((host.as_devinfo().iface_name(), host.as_devinfo().ibdev_name()), ("ens1f1np1", "mlx5_1"));
    assert_eq!((IFACE_NAME_SIZE, IBDEV_NAME_SIZE, VUID_SIZE), (256, 64, 128), "DOCA_DEVINFO_*_SIZE");
}

#[test]
fn doca_devinfo_rep_cap_is_filter_all_net_emulated_supported() {
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let info = dpu.as_devinfo();
    assert_eq!(info.rep_cap_is_filter_all_supported(), Ok(true));
    assert_eq!(info.rep_cap_is_filter_net_supported(), Ok(true));
    assert_eq!(info.rep_cap_is_filter_emulated_supported(), Ok(true));
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    let info = host.as_devinfo();
    for r in [
        info.rep_cap_is_filter_all_supported(),
        info.rep_cap_is_filter_net_supported(),
        info.rep_cap_is_filter_emulated_supported(),
    ] {
        assert_eq!(r, Err(Error::NotSupported), "a host function exposes no representors");
    }
}

#[test]
fn doca_devinfo_cap_is_hotplug_manager_supported() {
    let t = Topology::parse("t", "device 03:00.0 dpu\nrep b1:00.0 pf\nrep b1:00.1 vf emulated hotplug\ndevice 04:00.0 dpu\nrep 3b:00.0 pf\n").unwrap();
    let list = t.devinfo_list().unwrap();
    assert!(list[0].cap_is_hotplug_manager_supported());
    assert!(!list[1].cap_is_hotplug_manager_supported());
}

#[test]
fn doca_devinfo_rep_create_list_filters_and_is_not_supported_on_a_host_function() {
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let all = dpu.rep_list(RepFilter::ALL).unwrap();
    assert_eq!(
        all.iter().map(|r| r.pci_addr_str()).collect::<Vec<_>>(),
        ["0000:b1:00.0", "0000:b1:00.1", "0000:3b:00.0"]
    );
    assert_eq!(dpu.rep_list(RepFilter::NET).unwrap().len(), 3);
    assert!(dpu.rep_list(RepFilter::EMULATED).unwrap().is_empty());
    assert_eq!(RepFilter::NET.bits(), 2);
    assert_eq!(RepFilter::EMULATED.bits(), 4);
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    assert_eq!(host.rep_list(RepFilter::ALL).unwrap_err(), Error::NotSupported);
}

#[test]
fn doca_devinfo_rep_get_pci_addr_str_vuid_pci_func_type_is_hotplug_is_equal_pci_addr() {
    let t = Topology::parse("t", "device 03:00.0 dpu\nrep b1:00.2 vf emulated hotplug vuid=MYVUID0001\n")
        .unwrap();
    let dpu = t.devinfo_list().unwrap()[0].open().unwrap();
    let rep = &dpu.rep_list(RepFilter::ALL).unwrap()[0];
    assert_eq!(rep.pci_addr_str(), "0000:b1:00.2");
    assert_eq!(rep.vuid(), "MYVUID0001");
    assert_eq!(rep.pci_func_type(), PciFuncType::Vf);
    assert_eq!(PciFuncType::Vf as u32, 1);
    assert!(rep.is_hotplug());
    assert_eq!(rep.is_equal_pci_addr("b1:00.2"), Ok(true));
    assert_eq!(rep.is_equal_pci_addr("b1:00.0"), Ok(false));
    assert_eq!(rep.is_equal_pci_addr("zz"), Err(Error::InvalidValue));
    let opened = rep.open().unwrap();
    assert_eq!(opened.as_devinfo(), rep, "doca_dev_rep_as_devinfo");
    opened.close();
}

#[test]
fn open_doca_device_with_pci_and_rep_with_pci_as_the_samples() {
    assert_eq!(open_device_with_pci("aa:00.0", None).unwrap_err(), Error::NotFound);
    assert_eq!(open_device_with_pci("not an address", None).unwrap_err(), Error::InvalidValue);
    let refuse = |_: &doca_core::DevInfo| Err(Error::NotSupported);
    assert_eq!(
        open_device_with_pci("b1:00.0", Some(&refuse)).unwrap_err(),
        Error::NotFound,
        "the check refuses"
    );
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    assert!(open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.1").is_ok());
    assert_eq!(open_device_rep_with_pci(&dpu, RepFilter::NET, "aa:00.0").unwrap_err(), Error::NotFound);
    assert_eq!(open_device_rep_with_pci(&dpu, RepFilter::EMULATED, "b1:00.0").unwrap_err(), Error::NotFound);
    let host = open_device_with_pci("b1:00.0", None).unwrap();
    assert_eq!(
        open_device_rep_with_pci(&host, RepFilter::NET, "b1:00.0").unwrap_err(),
        Error::InvalidValue,
        "the samples' helper turns the host's NOT_SUPPORTED into INVALID_VALUE"
    );
}

#[test]
fn open_doca_device_with_capabilities_never_opens_the_dpu_device_on_the_host() {
    in_fresh_process!(&[(SIDE_ENV, Some("host"))]);
    // A literal port: the first device whose capability check passes. Every device passes
    // this one, so only the list decides.
    let any = |_: &doca_core::DevInfo| Ok(());
    let dev = open_device_with_capabilities(&any).unwrap();
    assert_eq!(dev.as_devinfo().kind(), DeviceKind::Host);
    let server_only = |d: &doca_core::DevInfo| doca_cc::caps::server_is_supported(d);
    assert_eq!(open_device_with_capabilities(&server_only).unwrap_err(), Error::NotFound);
    let exportable = |d: &doca_core::DevInfo| match doca_mmap::Mmap::cap_is_export_pci_supported(d) {
        Ok(true) => Ok(()),
        _ => Err(Error::NotSupported),
    };
    assert_eq!(
        open_device_with_capabilities(&exportable).unwrap().as_devinfo().pci_addr_str(),
        "0000:b1:00.0"
    );
}

#[test]
fn open_doca_device_with_capabilities_on_the_dpu_opens_the_dpu_device() {
    in_fresh_process!(&[(SIDE_ENV, Some("dpu"))]);
    let server = |d: &doca_core::DevInfo| doca_cc::caps::server_is_supported(d);
    assert_eq!(open_device_with_capabilities(&server).unwrap().as_devinfo().pci_addr_str(), "0000:03:00.0");
}
