//! Capabilities (`doca_ec_cap_*`): limits read from the topology (`cap ec.<name> <value>`),
//! with these defaults. Every query first checks the topology's `ec.*` lines, so a misspelt
//! limit is an error naming its line instead of being ignored.

use doca_core::{bail, cap_no, CapSpec, DevInfo, Result};

/// `doca_ec_cap_task_create_is_supported`: `cap ec.create 0` emulates a device without
/// create (encode) tasks.
pub const CREATE: CapSpec =
    CapSpec { name: "ec.create", default: 1, descr: "create tasks supported (1) or not (0)" };
/// `doca_ec_cap_task_update_is_supported`.
pub const UPDATE: CapSpec =
    CapSpec { name: "ec.update", default: 1, descr: "update tasks supported (1) or not (0)" };
/// `doca_ec_cap_task_recover_is_supported`.
pub const RECOVER: CapSpec =
    CapSpec { name: "ec.recover", default: 1, descr: "recover tasks supported (1) or not (0)" };
/// `doca_ec_cap_task_galois_mul_is_supported`.
pub const GALOIS_MUL: CapSpec = CapSpec {
    name: "ec.galois_mul",
    default: 1,
    descr: "Galois multiplication tasks supported (1) or not (0)",
};
/// `doca_ec_cap_get_max_block_size`: the largest block of a task, bytes.
pub const MAX_BLOCK_SIZE: CapSpec =
    CapSpec { name: "ec.max_block_size", default: 16 << 20, descr: "largest block of a task, bytes" };
/// `doca_ec_cap_get_max_buf_list_len`: elements of a source or destination list (1: no
/// lists).
pub const MAX_BUF_LIST_LEN: CapSpec =
    CapSpec { name: "ec.max_buf_list_len", default: 32, descr: "elements of a source or destination list" };
/// The most data blocks of a coding matrix (DOCA's samples name 128).
pub const MAX_DATA_BLOCKS: CapSpec =
    CapSpec { name: "ec.max_data_blocks", default: 128, descr: "data blocks of a coding matrix" };
/// The most redundancy blocks of a coding matrix (DOCA's samples name 32).
pub const MAX_RDNC_BLOCKS: CapSpec =
    CapSpec { name: "ec.max_rdnc_blocks", default: 32, descr: "redundancy blocks of a coding matrix" };
/// The largest pool of one task type.
pub const MAX_NUM_TASKS: CapSpec =
    CapSpec { name: "ec.max_num_tasks", default: 16384, descr: "tasks of one type per EC context" };
/// Emulator-only: how many source bytes one EC context codes per progress pass (at least
/// 4 KiB), so that a large task is spread over passes and does not stall other contexts.
pub const BYTES_PER_PASS: CapSpec = CapSpec {
    name: "ec.bytes_per_pass",
    default: 1 << 20,
    descr: "source bytes one EC context codes per progress pass",
};

/// The smallest [`BYTES_PER_PASS`] used (a smaller value is raised to it).
pub const MIN_BYTES_PER_PASS: u64 = 4096;

/// The block alignment DOCA asks for: blocks are multiples of 64 bytes, at least 64.
pub const BLOCK_ALIGN: usize = 64;

/// Every capability this library reads.
pub const ALL: [CapSpec; 10] = [
    CREATE,
    UPDATE,
    RECOVER,
    GALOIS_MUL,
    MAX_BLOCK_SIZE,
    MAX_BUF_LIST_LEN,
    MAX_DATA_BLOCKS,
    MAX_RDNC_BLOCKS,
    MAX_NUM_TASKS,
    BYTES_PER_PASS,
];

/// The value of `spec` for `dev` (after checking the topology's `ec.*` names).
pub fn get(dev: &DevInfo, spec: &CapSpec) -> Result<u64> {
    if let Err(e) = dev.topology().check_caps("ec", &ALL) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(spec))
}

/// The four task types, for the `*_is_supported` queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskType {
    /// Create (encode) tasks.
    Create,
    /// Update tasks.
    Update,
    /// Recover (decode) tasks.
    Recover,
    /// Galois multiplication tasks.
    GaloisMul,
}

impl TaskType {
    fn spec(self) -> CapSpec {
        match self {
            TaskType::Create => CREATE,
            TaskType::Update => UPDATE,
            TaskType::Recover => RECOVER,
            TaskType::GaloisMul => GALOIS_MUL,
        }
    }
}

/// `doca_ec_cap_task_{create,update,recover,galois_mul}_is_supported`: on host and DPU
/// devices alike, unless the topology takes the task type away.
pub fn task_is_supported(dev: &DevInfo, t: TaskType) -> Result<()> {
    let spec = t.spec();
    if get(dev, &spec)? == 0 {
        cap_no!("ec: the topology says this device has no {:?} tasks (cap {} 0)", t, spec.name);
    }
    Ok(())
}

/// Whether the device has erasure coding at all (some task type): `Ec::create` refuses it
/// otherwise, and the limit queries answer `NOT_SUPPORTED`.
pub fn is_supported(dev: &DevInfo) -> Result<()> {
    let mut any = false;
    for t in [TaskType::Create, TaskType::Update, TaskType::Recover, TaskType::GaloisMul] {
        any |= get(dev, &t.spec())? != 0;
    }
    if !any {
        cap_no!(
            "ec: the topology says this device has no erasure coding (cap ec.create/update/recover/galois_mul all 0)"
        );
    }
    Ok(())
}

/// `doca_ec_cap_get_max_block_size` (at least 64 bytes).
pub fn max_block_size(dev: &DevInfo) -> Result<u64> {
    is_supported(dev)?;
    Ok(get(dev, &MAX_BLOCK_SIZE)?.max(BLOCK_ALIGN as u64))
}

/// `doca_ec_cap_get_max_buf_list_len` (at least 1).
pub fn max_buf_list_len(dev: &DevInfo) -> Result<u32> {
    is_supported(dev)?;
    Ok(get(dev, &MAX_BUF_LIST_LEN)?.clamp(1, u32::MAX as u64) as u32)
}

/// The most data blocks of a matrix (1 to 255).
pub fn max_data_blocks(dev: &DevInfo) -> Result<usize> {
    Ok(get(dev, &MAX_DATA_BLOCKS)?.clamp(1, 255) as usize)
}

/// The most redundancy blocks of a matrix (1 to 255).
pub fn max_rdnc_blocks(dev: &DevInfo) -> Result<usize> {
    Ok(get(dev, &MAX_RDNC_BLOCKS)?.clamp(1, 255) as usize)
}

/// The number behind the pool sizes.
pub fn max_num_tasks(dev: &DevInfo) -> Result<u32> {
    Ok(get(dev, &MAX_NUM_TASKS)?.min(u32::MAX as u64) as u32)
}

/// The source bytes one context codes per progress pass.
pub fn bytes_per_pass(dev: &DevInfo) -> Result<usize> {
    Ok(get(dev, &BYTES_PER_PASS)?.max(MIN_BYTES_PER_PASS).min(usize::MAX as u64) as usize)
}
