//! Capabilities: limits read from the topology (`cap mmap_advise.<name> <value>`), with these
//! defaults. Every query first checks the topology's `mmap_advise.*` lines, so a misspelt
//! limit is an error naming its line instead of being ignored.

use doca_core::{bail, cap_no, CapSpec, DevInfo, Result};

/// `doca_mmap_advise_cap_task_cache_invalidate_is_supported`: `cap mmap_advise.cache_invalidate
/// 0` emulates a device without it (`NOT_SUPPORTED`, and `MmapAdvise::create` refuses the
/// same way).
pub const CACHE_INVALIDATE: CapSpec = CapSpec {
    name: "mmap_advise.cache_invalidate",
    default: 1,
    descr: "cache-invalidate tasks supported (1) or not (0)",
};
/// `doca_mmap_advise_task_cache_invalidate_get_max_buf_size`: the largest buffer (its whole
/// length) a task may name.
pub const MAX_BUF_SIZE: CapSpec = CapSpec {
    name: "mmap_advise.max_buf_size",
    default: 1 << 31,
    descr: "largest cache-invalidate buffer, bytes",
};
/// The largest pool `doca_mmap_advise_task_invalidate_cache_set_conf` accepts (DOCA has no
/// query for it).
pub const MAX_NUM_TASKS: CapSpec = CapSpec {
    name: "mmap_advise.max_num_tasks",
    default: 16384,
    descr: "cache-invalidate tasks per context",
};

/// Every capability this library reads.
pub const ALL: [CapSpec; 3] = [CACHE_INVALIDATE, MAX_BUF_SIZE, MAX_NUM_TASKS];

/// The value of `spec` for `dev` (after checking the topology's `mmap_advise.*` names).
pub fn get(dev: &DevInfo, spec: &CapSpec) -> Result<u64> {
    if let Err(e) = dev.topology().check_caps("mmap_advise", &ALL) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(spec))
}

/// `doca_mmap_advise_cap_task_cache_invalidate_is_supported`: on host and DPU devices alike,
/// unless the topology says `cap mmap_advise.cache_invalidate 0` (`NOT_SUPPORTED`).
pub fn task_cache_invalidate_is_supported(dev: &DevInfo) -> Result<()> {
    if get(dev, &CACHE_INVALIDATE)? == 0 {
        cap_no!(
            "mmap advise: the topology says this device cannot invalidate caches (cap mmap_advise.cache_invalidate 0)"
        );
    }
    Ok(())
}

/// `doca_mmap_advise_task_cache_invalidate_get_max_buf_size`.
pub fn task_cache_invalidate_max_buf_size(dev: &DevInfo) -> Result<u64> {
    get(dev, &MAX_BUF_SIZE)
}

/// The largest task pool.
pub fn max_num_tasks(dev: &DevInfo) -> Result<u32> {
    Ok(get(dev, &MAX_NUM_TASKS)?.min(u32::MAX as u64) as u32)
}
