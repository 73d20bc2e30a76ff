//! Capabilities (`doca_dma_cap_*`): limits read from the topology (`cap dma.<name> <value>`),
//! with these defaults. Every query first checks the topology's `dma.*` lines, so a misspelt
//! limit is an error naming its line instead of being ignored.

use doca_core::{bail, cap_no, CapSpec, DevInfo, Result};

/// `doca_dma_cap_task_memcpy_is_supported`: `cap dma.memcpy 0` emulates a device without
/// DMA (`NOT_SUPPORTED`, and `Dma::create` refuses the same way).
pub const MEMCPY: CapSpec =
    CapSpec { name: "dma.memcpy", default: 1, descr: "memcpy tasks supported (1) or not (0)" };
/// `doca_dma_cap_get_max_num_tasks`.
pub const MAX_NUM_TASKS: CapSpec =
    CapSpec { name: "dma.max_num_tasks", default: 16384, descr: "memcpy tasks per DMA context" };
/// `doca_dma_cap_task_memcpy_get_max_buf_size`: the largest copy (the source's data, all
/// elements of a list together).
pub const MAX_BUF_SIZE: CapSpec =
    CapSpec { name: "dma.max_buf_size", default: 1 << 31, descr: "largest memcpy task, bytes" };
/// `doca_dma_cap_task_memcpy_get_max_buf_list_len`: elements of a source or destination
/// list (1: no lists).
pub const MAX_BUF_LIST_LEN: CapSpec =
    CapSpec { name: "dma.max_buf_list_len", default: 16, descr: "elements of a memcpy buffer list" };
/// Emulator-only: how many bytes one DMA context copies per progress pass (at least 4 KiB),
/// so that a large copy is spread over passes and does not stall other contexts.
pub const BYTES_PER_PASS: CapSpec = CapSpec {
    name: "dma.bytes_per_pass",
    default: 1 << 20,
    descr: "bytes one DMA context copies per progress pass",
};

/// The smallest [`BYTES_PER_PASS`] used (a smaller value is raised to it).
pub const MIN_BYTES_PER_PASS: u64 = 4096;

/// Every capability this library reads.
pub const ALL: [CapSpec; 5] = [MEMCPY, MAX_NUM_TASKS, MAX_BUF_SIZE, MAX_BUF_LIST_LEN, BYTES_PER_PASS];

/// The value of `spec` for `dev` (after checking the topology's `dma.*` names).
pub fn get(dev: &DevInfo, spec: &CapSpec) -> Result<u64> {
    if let Err(e) = dev.topology().check_caps("dma", &ALL) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(spec))
}

/// `doca_dma_cap_task_memcpy_is_supported`: on host and DPU devices alike, unless the
/// topology says `cap dma.memcpy 0` (`NOT_SUPPORTED`).
pub fn task_memcpy_is_supported(dev: &DevInfo) -> Result<()> {
    if get(dev, &MEMCPY)? == 0 {
        cap_no!("dma: the topology says this device has no DMA (cap dma.memcpy 0)");
    }
    Ok(())
}

/// `doca_dma_cap_task_memcpy_get_max_buf_size`.
pub fn task_memcpy_max_buf_size(dev: &DevInfo) -> Result<u64> {
    get(dev, &MAX_BUF_SIZE)
}

/// `doca_dma_cap_task_memcpy_get_max_buf_list_len`.
pub fn task_memcpy_max_buf_list_len(dev: &DevInfo) -> Result<u32> {
    Ok(get(dev, &MAX_BUF_LIST_LEN)?.clamp(1, u32::MAX as u64) as u32)
}

/// The number behind `doca_dma_cap_get_max_num_tasks`.
pub fn max_num_tasks(dev: &DevInfo) -> Result<u32> {
    Ok(get(dev, &MAX_NUM_TASKS)?.min(u32::MAX as u64) as u32)
}

/// The bytes one context copies per progress pass.
pub fn bytes_per_pass(dev: &DevInfo) -> Result<usize> {
    Ok(get(dev, &BYTES_PER_PASS)?.max(MIN_BYTES_PER_PASS).min(usize::MAX as u64) as usize)
}
