//! Capabilities (`doca_sha_cap_*`): limits read from the topology (`cap sha.<name> <value>`),
//! with these defaults; the digest sizes and block sizes are the algorithms' own. Every query
//! first checks the topology's `sha.*` lines, so a misspelt limit is an error naming its line
//! instead of being ignored.

use doca_core::{bail, cap_no, CapSpec, DevInfo, Result};

use crate::Algorithm;

/// `doca_sha_cap_task_hash_get_supported`: `cap sha.hash 0` emulates a device without SHA
/// hash tasks (and `Sha::create` refuses a device with neither task type).
pub const HASH: CapSpec =
    CapSpec { name: "sha.hash", default: 1, descr: "hash tasks supported (1) or not (0)" };
/// `doca_sha_cap_task_partial_hash_get_supported`.
pub const PARTIAL_HASH: CapSpec =
    CapSpec { name: "sha.partial_hash", default: 1, descr: "partial hash tasks supported (1) or not (0)" };
/// The algorithms the device offers, one bit each by `enum doca_sha_algorithm` value
/// (bit 0 SHA-1, bit 1 SHA-256, bit 2 SHA-512): `cap sha.algorithms 2` is a SHA-256-only
/// device.
pub const ALGORITHMS: CapSpec =
    CapSpec { name: "sha.algorithms", default: 0b111, descr: "supported algorithms, bit per enum value" };
/// The largest pool: `log_num_tasks` of a `*_set_conf` gives `1 << log_num_tasks` tasks.
pub const MAX_NUM_TASKS: CapSpec =
    CapSpec { name: "sha.max_num_tasks", default: 16384, descr: "tasks of one type per SHA context" };
/// `doca_sha_cap_get_max_src_buf_size`: the largest source (all elements of a list
/// together), per task or per partial segment.
pub const MAX_SRC_BUF_SIZE: CapSpec =
    CapSpec { name: "sha.max_src_buf_size", default: 1 << 31, descr: "largest source of a task, bytes" };
/// `doca_sha_cap_get_max_list_buf_num_elem`: elements of a source list (1: no lists).
pub const MAX_LIST_BUF_NUM_ELEM: CapSpec =
    CapSpec { name: "sha.max_list_buf_num_elem", default: 16, descr: "elements of a source buffer list" };
/// Emulator-only: how many bytes one SHA context hashes per progress pass (at least 4 KiB),
/// so that a large hash is spread over passes and does not stall other contexts.
pub const BYTES_PER_PASS: CapSpec = CapSpec {
    name: "sha.bytes_per_pass",
    default: 1 << 20,
    descr: "bytes one SHA context hashes per progress pass",
};

/// The smallest [`BYTES_PER_PASS`] used (a smaller value is raised to it).
pub const MIN_BYTES_PER_PASS: u64 = 4096;

/// Every capability this library reads.
pub const ALL: [CapSpec; 7] =
    [HASH, PARTIAL_HASH, ALGORITHMS, MAX_NUM_TASKS, MAX_SRC_BUF_SIZE, MAX_LIST_BUF_NUM_ELEM, BYTES_PER_PASS];

/// The value of `spec` for `dev` (after checking the topology's `sha.*` names).
pub fn get(dev: &DevInfo, spec: &CapSpec) -> Result<u64> {
    if let Err(e) = dev.topology().check_caps("sha", &ALL) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(spec))
}

/// Whether the device offers `algorithm` (`NOT_SUPPORTED` when `sha.algorithms` lacks it).
pub fn algorithm_is_supported(dev: &DevInfo, algorithm: Algorithm) -> Result<()> {
    if get(dev, &ALGORITHMS)? & (1 << algorithm as u32) == 0 {
        cap_no!("sha: the topology says this device has no {} (cap sha.algorithms)", algorithm.name());
    }
    Ok(())
}

/// `doca_sha_cap_task_hash_get_supported`: on host and DPU devices alike, unless the
/// topology says otherwise (`sha.hash`, `sha.algorithms`).
pub fn task_hash_is_supported(dev: &DevInfo, algorithm: Algorithm) -> Result<()> {
    if get(dev, &HASH)? == 0 {
        cap_no!("sha: the topology says this device has no hash tasks (cap sha.hash 0)");
    }
    algorithm_is_supported(dev, algorithm)
}

/// `doca_sha_cap_task_partial_hash_get_supported`.
pub fn task_partial_hash_is_supported(dev: &DevInfo, algorithm: Algorithm) -> Result<()> {
    if get(dev, &PARTIAL_HASH)? == 0 {
        cap_no!("sha: the topology says this device has no partial hash tasks (cap sha.partial_hash 0)");
    }
    algorithm_is_supported(dev, algorithm)
}

/// Whether the device has SHA at all (either task type, some algorithm): the other queries
/// answer `NOT_SUPPORTED` otherwise, and `Sha::create` refuses.
pub fn is_supported(dev: &DevInfo) -> Result<()> {
    if (get(dev, &HASH)? == 0 && get(dev, &PARTIAL_HASH)? == 0) || get(dev, &ALGORITHMS)? & 0b111 == 0 {
        cap_no!("sha: the topology says this device has no SHA (cap sha.hash/partial_hash/algorithms)");
    }
    Ok(())
}

/// `doca_sha_cap_get_max_list_buf_num_elem`.
pub fn max_list_buf_num_elem(dev: &DevInfo) -> Result<u32> {
    is_supported(dev)?;
    Ok(get(dev, &MAX_LIST_BUF_NUM_ELEM)?.clamp(1, u32::MAX as u64) as u32)
}

/// `doca_sha_cap_get_max_src_buf_size`.
pub fn max_src_buf_size(dev: &DevInfo) -> Result<u64> {
    is_supported(dev)?;
    get(dev, &MAX_SRC_BUF_SIZE)
}

/// `doca_sha_cap_get_min_dst_buf_size`: the algorithm's digest length (20, 32 or 64 bytes),
/// which is also what a task writes.
pub fn min_dst_buf_size(dev: &DevInfo, algorithm: Algorithm) -> Result<u32> {
    algorithm_is_supported(dev, algorithm)?;
    Ok(algorithm.digest_len() as u32)
}

/// `doca_sha_cap_get_partial_hash_block_size`: the algorithm's block size (64 bytes for
/// SHA-1 and SHA-256, 128 for SHA-512).
pub fn partial_hash_block_size(dev: &DevInfo, algorithm: Algorithm) -> Result<u32> {
    algorithm_is_supported(dev, algorithm)?;
    Ok(algorithm.block_len() as u32)
}

/// The number behind the pool sizes (`1 << log_num_tasks` at most this).
pub fn max_num_tasks(dev: &DevInfo) -> Result<u32> {
    Ok(get(dev, &MAX_NUM_TASKS)?.min(u32::MAX as u64) as u32)
}

/// The bytes one context hashes per progress pass.
pub fn bytes_per_pass(dev: &DevInfo) -> Result<usize> {
    Ok(get(dev, &BYTES_PER_PASS)?.max(MIN_BYTES_PER_PASS).min(usize::MAX as u64) as usize)
}
