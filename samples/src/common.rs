//! Device opening as all the comm-channel samples do it (DOCA's `samples/common.c`): the
//! failure is logged with the samples' wording and returned.

use doca_core::{open_device_rep_with_pci, open_device_with_pci, Dev, DevRep, Error, RepFilter};
use tracing::error;

/// The device at `pci_addr` (a host function, or the DPU device).
pub fn open_device(pci_addr: &str) -> Result<Dev, Error> {
    open_device_with_pci(pci_addr, None)
        .inspect_err(|e| error!("Failed to open Comm Channel DOCA device based on PCI address: {e}"))
}

/// The DPU device at `pci_addr` and its network representor of the host function `rep_pci`.
pub fn open_device_and_rep(pci_addr: &str, rep_pci: &str) -> Result<(Dev, DevRep), Error> {
    let dev = open_device(pci_addr)?;
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, rep_pci).inspect_err(|e| {
        error!("Failed to open Comm Channel DOCA device representor based on PCI address: {e}")
    })?;
    Ok((dev, rep))
}
