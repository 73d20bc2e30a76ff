//! Capabilities (`doca_sync_event_cap_*`): what a device can do with sync events here. Every
//! CPU operation is supported on host and DPU devices; the 2.5/2.6 export to the DPU only
//! from a host device (as DOCA says: "exported from the Host CPU only"); remote network
//! (RDMA) export and import on host and DPU devices; DPA and GPU have no emulation:
//! `NOT_SUPPORTED`. Queries log nothing (an answer, not a failure).

use doca_core::{DevInfo, DeviceKind, Error, Result};

/// The get, notify-set, notify-add and wait tasks (`doca_sync_event_cap_task_*_is_supported`).
pub fn task_is_supported(_dev: &DevInfo) -> Result<()> {
    Ok(())
}

/// `doca_sync_event_cap_is_create_from_export_supported`: host and DPU devices.
pub fn is_create_from_export_supported(_dev: &DevInfo) -> Result<()> {
    Ok(())
}

/// `doca_sync_event_cap_is_export_to_remote_pci_supported` (2.7+): host and DPU devices.
pub fn is_export_to_remote_pci_supported(_dev: &DevInfo) -> Result<()> {
    Ok(())
}

/// `doca_sync_event_cap_is_export_to_dpu_supported` (2.5/2.6): host devices only.
pub fn is_export_to_dpu_supported(dev: &DevInfo) -> Result<()> {
    match dev.kind() {
        DeviceKind::Host => Ok(()),
        DeviceKind::Dpu => Err(Error::NotSupported),
    }
}

/// DPA and GPU sync events: never (no such hardware here).
pub fn is_dpa_or_gpu_supported(_dev: &DevInfo) -> Result<()> {
    Err(Error::NotSupported)
}

/// Remote-network (RDMA) sync events: export to an RDMA peer, create from such an export
/// (`doca_sync_event_cap_is_export_to_remote_net_supported`,
/// `_remote_net_is_create_from_export_supported`): host and DPU devices.
pub fn is_remote_net_supported(_dev: &DevInfo) -> Result<()> {
    Ok(())
}
