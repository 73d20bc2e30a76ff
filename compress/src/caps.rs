//! Capabilities (`doca_compress_cap_*`): limits read from the topology
//! (`cap compress.<name> <value>`), with these defaults. Every query first checks the
//! topology's `compress.*` lines, so a misspelt limit is an error naming its line instead of
//! being ignored. One size limit and one list limit serve every task type (DOCA asks per task
//! type; here they answer alike); each task type can be taken away on its own.

use doca_core::{bail, cap_no, CapSpec, DevInfo, Result};

/// `doca_compress_cap_task_compress_deflate_is_supported`: `cap compress.compress_deflate 0`
/// emulates a device that only decompresses (as a BlueField-3 does).
pub const COMPRESS_DEFLATE: CapSpec = CapSpec {
    name: "compress.compress_deflate",
    default: 1,
    descr: "compress deflate tasks supported (1) or not (0)",
};
/// `doca_compress_cap_task_decompress_deflate_is_supported`.
pub const DECOMPRESS_DEFLATE: CapSpec = CapSpec {
    name: "compress.decompress_deflate",
    default: 1,
    descr: "decompress deflate tasks supported (1) or not (0)",
};
/// `doca_compress_cap_task_decompress_lz4_is_supported` (the 2.5/2.6 LZ4 task: whole frames).
pub const DECOMPRESS_LZ4: CapSpec = CapSpec {
    name: "compress.decompress_lz4",
    default: 1,
    descr: "decompress LZ4 (frame) tasks supported (1) or not (0)",
};
/// `doca_compress_cap_task_decompress_lz4_stream_is_supported`.
pub const DECOMPRESS_LZ4_STREAM: CapSpec = CapSpec {
    name: "compress.decompress_lz4_stream",
    default: 1,
    descr: "decompress LZ4 stream tasks supported (1) or not (0)",
};
/// `doca_compress_cap_task_decompress_lz4_block_is_supported`.
pub const DECOMPRESS_LZ4_BLOCK: CapSpec = CapSpec {
    name: "compress.decompress_lz4_block",
    default: 1,
    descr: "decompress LZ4 block tasks supported (1) or not (0)",
};
/// `doca_compress_cap_get_max_num_tasks`: the tasks of every type together.
pub const MAX_NUM_TASKS: CapSpec = CapSpec {
    name: "compress.max_num_tasks",
    default: 16384,
    descr: "tasks of all types together per compress context",
};
/// `doca_compress_cap_task_*_get_max_buf_size`: the largest source of a task (all elements
/// of a list together), and of a destination's room.
pub const MAX_BUF_SIZE: CapSpec = CapSpec {
    name: "compress.max_buf_size",
    default: 1 << 27,
    descr: "largest source of a compress task, bytes",
};
/// `doca_compress_cap_task_*_get_max_buf_list_len`: elements of a source or destination list
/// (1: no lists).
pub const MAX_BUF_LIST_LEN: CapSpec = CapSpec {
    name: "compress.max_buf_list_len",
    default: 16,
    descr: "elements of a compress task's buffer list",
};
/// Emulator-only: how many source bytes one compress context works through per progress pass
/// (at least 4 KiB), so that a large task is spread over passes and does not stall other
/// contexts.
pub const BYTES_PER_PASS: CapSpec = CapSpec {
    name: "compress.bytes_per_pass",
    default: 1 << 20,
    descr: "source bytes one compress context works through per progress pass",
};

/// The smallest [`BYTES_PER_PASS`] used (a smaller value is raised to it).
pub const MIN_BYTES_PER_PASS: u64 = 4096;

/// Every capability this library reads.
pub const ALL: [CapSpec; 9] = [
    COMPRESS_DEFLATE,
    DECOMPRESS_DEFLATE,
    DECOMPRESS_LZ4,
    DECOMPRESS_LZ4_STREAM,
    DECOMPRESS_LZ4_BLOCK,
    MAX_NUM_TASKS,
    MAX_BUF_SIZE,
    MAX_BUF_LIST_LEN,
    BYTES_PER_PASS,
];

/// The task types of a compress context, each with its capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskType {
    /// `doca_compress_task_compress_deflate`.
    CompressDeflate,
    /// `doca_compress_task_decompress_deflate`.
    DecompressDeflate,
    /// `doca_compress_task_decompress_lz4` (DOCA 2.5/2.6).
    DecompressLz4,
    /// `doca_compress_task_decompress_lz4_stream` (DOCA 2.7 on).
    DecompressLz4Stream,
    /// `doca_compress_task_decompress_lz4_block` (DOCA 2.7 on).
    DecompressLz4Block,
}

impl TaskType {
    /// Every task type.
    pub const ALL: [TaskType; 5] = [
        TaskType::CompressDeflate,
        TaskType::DecompressDeflate,
        TaskType::DecompressLz4,
        TaskType::DecompressLz4Stream,
        TaskType::DecompressLz4Block,
    ];

    /// The capability that says whether the device offers it.
    pub fn spec(self) -> &'static CapSpec {
        match self {
            TaskType::CompressDeflate => &COMPRESS_DEFLATE,
            TaskType::DecompressDeflate => &DECOMPRESS_DEFLATE,
            TaskType::DecompressLz4 => &DECOMPRESS_LZ4,
            TaskType::DecompressLz4Stream => &DECOMPRESS_LZ4_STREAM,
            TaskType::DecompressLz4Block => &DECOMPRESS_LZ4_BLOCK,
        }
    }

    /// Its name in logs ("compress deflate").
    pub fn name(self) -> &'static str {
        match self {
            TaskType::CompressDeflate => "compress deflate",
            TaskType::DecompressDeflate => "decompress deflate",
            TaskType::DecompressLz4 => "decompress LZ4",
            TaskType::DecompressLz4Stream => "decompress LZ4 stream",
            TaskType::DecompressLz4Block => "decompress LZ4 block",
        }
    }
}

/// The value of `spec` for `dev` (after checking the topology's `compress.*` names).
pub fn get(dev: &DevInfo, spec: &CapSpec) -> Result<u64> {
    if let Err(e) = dev.topology().check_caps("compress", &ALL) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(spec))
}

/// `doca_compress_cap_task_<type>_is_supported`: on host and DPU devices alike, unless the
/// topology takes the task type away (`NOT_SUPPORTED`).
pub fn task_is_supported(dev: &DevInfo, task: TaskType) -> Result<()> {
    let spec = task.spec();
    if get(dev, spec)? == 0 {
        cap_no!("compress: the topology says this device has no {} tasks (cap {} 0)", task.name(), spec.name);
    }
    Ok(())
}

/// Whether the device has any compress task type: `Compress::create` refuses one with none.
pub fn is_supported(dev: &DevInfo) -> Result<()> {
    for t in TaskType::ALL {
        if get(dev, t.spec())? != 0 {
            return Ok(());
        }
    }
    cap_no!("compress: the topology says this device has no compress engine (every compress.* task is 0)")
}

/// `doca_compress_cap_task_<type>_get_max_buf_size` (`NOT_SUPPORTED` without the task type).
pub fn task_max_buf_size(dev: &DevInfo, task: TaskType) -> Result<u64> {
    task_is_supported(dev, task)?;
    get(dev, &MAX_BUF_SIZE)
}

/// `doca_compress_cap_task_<type>_get_max_buf_list_len` (`NOT_SUPPORTED` without the task
/// type).
pub fn task_max_buf_list_len(dev: &DevInfo, task: TaskType) -> Result<u32> {
    task_is_supported(dev, task)?;
    Ok(get(dev, &MAX_BUF_LIST_LEN)?.clamp(1, u32::MAX as u64) as u32)
}

/// `doca_compress_cap_get_max_num_tasks`.
pub fn max_num_tasks(dev: &DevInfo) -> Result<u32> {
    Ok(get(dev, &MAX_NUM_TASKS)?.min(u32::MAX as u64) as u32)
}

/// The source bytes one context works through per progress pass.
pub fn bytes_per_pass(dev: &DevInfo) -> Result<usize> {
    Ok(get(dev, &BYTES_PER_PASS)?.max(MIN_BYTES_PER_PASS).min(usize::MAX as u64) as usize)
}
