//! Capabilities (`doca_aes_gcm_cap_*`): limits read from the topology
//! (`cap aes_gcm.<name> <value>`), with these defaults. Encrypt and decrypt tasks share one
//! set of limits (DOCA asks for them per task type; the emulated engine has one). Every query
//! first checks the topology's `aes_gcm.*` lines, so a misspelt limit is an error naming its
//! line instead of being ignored.

use doca_core::{bail, cap_no, CapSpec, DevInfo, Error, Result};

use crate::{KeyType, Op, MAX_IV_LEN};

/// `doca_aes_gcm_cap_task_encrypt_is_supported`: `cap aes_gcm.encrypt 0` emulates a device
/// without encrypt tasks (and `AesGcm::create` refuses a device with neither task type).
pub const ENCRYPT: CapSpec =
    CapSpec { name: "aes_gcm.encrypt", default: 1, descr: "encrypt tasks supported (1) or not (0)" };
/// `doca_aes_gcm_cap_task_decrypt_is_supported`.
pub const DECRYPT: CapSpec =
    CapSpec { name: "aes_gcm.decrypt", default: 1, descr: "decrypt tasks supported (1) or not (0)" };
/// `doca_aes_gcm_cap_task_*_is_key_type_supported(DOCA_AES_GCM_KEY_128)`.
pub const KEY_128: CapSpec =
    CapSpec { name: "aes_gcm.key_128", default: 1, descr: "128-bit keys supported (1) or not (0)" };
/// `doca_aes_gcm_cap_task_*_is_key_type_supported(DOCA_AES_GCM_KEY_256)`.
pub const KEY_256: CapSpec =
    CapSpec { name: "aes_gcm.key_256", default: 1, descr: "256-bit keys supported (1) or not (0)" };
/// `doca_aes_gcm_cap_task_*_is_tag_96_supported`: 12-byte tags.
pub const TAG_96: CapSpec =
    CapSpec { name: "aes_gcm.tag_96", default: 1, descr: "12-byte (96-bit) tags supported (1) or not (0)" };
/// `doca_aes_gcm_cap_task_*_is_tag_128_supported`: 16-byte tags.
pub const TAG_128: CapSpec =
    CapSpec { name: "aes_gcm.tag_128", default: 1, descr: "16-byte (128-bit) tags supported (1) or not (0)" };
/// `doca_aes_gcm_cap_task_*_get_max_iv_len`: the longest IV in bytes (at most 12, DOCA's
/// documented range; a larger value is lowered to 12).
pub const MAX_IV_LEN_CAP: CapSpec =
    CapSpec { name: "aes_gcm.max_iv_len", default: MAX_IV_LEN as u64, descr: "longest IV, bytes (0..=12)" };
/// `doca_aes_gcm_cap_get_max_num_tasks`: encrypt and decrypt tasks of one context together.
pub const MAX_NUM_TASKS: CapSpec = CapSpec {
    name: "aes_gcm.max_num_tasks",
    default: 16384,
    descr: "encrypt and decrypt tasks of one AES-GCM context together",
};
/// `doca_aes_gcm_cap_task_*_get_max_buf_size`: the largest source of a task (all elements of
/// a list together, AAD and tag included).
pub const MAX_BUF_SIZE: CapSpec =
    CapSpec { name: "aes_gcm.max_buf_size", default: 2 << 20, descr: "largest source of a task, bytes" };
/// `doca_aes_gcm_cap_task_*_get_max_list_buf_num_elem`: elements of a source or destination
/// list (1: no lists).
pub const MAX_LIST_BUF_NUM_ELEM: CapSpec = CapSpec {
    name: "aes_gcm.max_list_buf_num_elem",
    default: 16,
    descr: "elements of a source or destination buffer list",
};
/// Emulator-only: how many bytes one AES-GCM context works through per progress pass. A
/// task is worked in one go (its tag covers every byte), so a pass ends after the task that
/// spends the budget; at least 4 KiB.
pub const BYTES_PER_PASS: CapSpec = CapSpec {
    name: "aes_gcm.bytes_per_pass",
    default: 1 << 20,
    descr: "bytes one AES-GCM context works through per progress pass",
};

/// The smallest [`BYTES_PER_PASS`] used (a smaller value is raised to it).
pub const MIN_BYTES_PER_PASS: u64 = 4096;

/// Every capability this library reads.
pub const ALL: [CapSpec; 11] = [
    ENCRYPT,
    DECRYPT,
    KEY_128,
    KEY_256,
    TAG_96,
    TAG_128,
    MAX_IV_LEN_CAP,
    MAX_NUM_TASKS,
    MAX_BUF_SIZE,
    MAX_LIST_BUF_NUM_ELEM,
    BYTES_PER_PASS,
];

/// The value of `spec` for `dev` (after checking the topology's `aes_gcm.*` names).
pub fn get(dev: &DevInfo, spec: &CapSpec) -> Result<u64> {
    if let Err(e) = dev.topology().check_caps("aes_gcm", &ALL) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(spec))
}

/// Whether the device has AES-GCM at all (either task type): the other queries answer
/// `NOT_SUPPORTED` otherwise, and `AesGcm::create` refuses.
pub fn is_supported(dev: &DevInfo) -> Result<()> {
    if get(dev, &ENCRYPT)? == 0 && get(dev, &DECRYPT)? == 0 {
        cap_no!("aes_gcm: the topology says this device has no AES-GCM (cap aes_gcm.encrypt/decrypt 0)");
    }
    Ok(())
}

/// `doca_aes_gcm_cap_task_encrypt_is_supported` / `_decrypt_is_supported`: on host and DPU
/// devices alike, unless the topology says otherwise.
pub fn task_is_supported(dev: &DevInfo, op: Op) -> Result<()> {
    let spec = match op {
        Op::Encrypt => ENCRYPT,
        Op::Decrypt => DECRYPT,
    };
    if get(dev, &spec)? == 0 {
        cap_no!("aes_gcm: the topology says this device has no {} tasks (cap {} 0)", op.name(), spec.name);
    }
    Ok(())
}

/// `doca_aes_gcm_cap_task_*_is_key_type_supported`.
pub fn key_type_is_supported(dev: &DevInfo, op: Op, key_type: KeyType) -> Result<()> {
    task_is_supported(dev, op)?;
    let spec = match key_type {
        KeyType::Aes128 => KEY_128,
        KeyType::Aes256 => KEY_256,
    };
    if get(dev, &spec)? == 0 {
        cap_no!(
            "aes_gcm: the topology says this device has no {}-bit keys (cap {} 0)",
            key_type.bits(),
            spec.name
        );
    }
    Ok(())
}

/// `doca_aes_gcm_cap_task_*_is_tag_96_supported`.
pub fn tag_96_is_supported(dev: &DevInfo, op: Op) -> Result<()> {
    tag_is_supported(dev, op, 12)
}

/// `doca_aes_gcm_cap_task_*_is_tag_128_supported`.
pub fn tag_128_is_supported(dev: &DevInfo, op: Op) -> Result<()> {
    tag_is_supported(dev, op, 16)
}

/// Whether a tag of `tag_size` bytes (12 or 16) is supported for `op`; another size is
/// `INVALID_VALUE` (DOCA supports only these two).
pub fn tag_is_supported(dev: &DevInfo, op: Op, tag_size: u32) -> Result<()> {
    task_is_supported(dev, op)?;
    let spec = match tag_size {
        12 => TAG_96,
        16 => TAG_128,
        _ => bail!(Error::InvalidValue, "aes_gcm: a tag of {tag_size} bytes (DOCA supports 12 and 16 only)"),
    };
    if get(dev, &spec)? == 0 {
        cap_no!("aes_gcm: the topology says this device has no {tag_size}-byte tags (cap {} 0)", spec.name);
    }
    Ok(())
}

/// `doca_aes_gcm_cap_task_*_get_max_iv_len` (2.5: `_get_max_iv_length`).
pub fn max_iv_len(dev: &DevInfo, op: Op) -> Result<u32> {
    task_is_supported(dev, op)?;
    Ok(get(dev, &MAX_IV_LEN_CAP)?.min(MAX_IV_LEN as u64) as u32)
}

/// `doca_aes_gcm_cap_task_*_get_max_buf_size`.
pub fn max_buf_size(dev: &DevInfo, op: Op) -> Result<u64> {
    task_is_supported(dev, op)?;
    get(dev, &MAX_BUF_SIZE)
}

/// `doca_aes_gcm_cap_task_*_get_max_list_buf_num_elem`.
pub fn max_list_buf_num_elem(dev: &DevInfo, op: Op) -> Result<u32> {
    task_is_supported(dev, op)?;
    Ok(get(dev, &MAX_LIST_BUF_NUM_ELEM)?.clamp(1, u32::MAX as u64) as u32)
}

/// `doca_aes_gcm_cap_get_max_num_tasks`: encrypt and decrypt pools together.
pub fn max_num_tasks(dev: &DevInfo) -> Result<u32> {
    Ok(get(dev, &MAX_NUM_TASKS)?.min(u32::MAX as u64) as u32)
}

/// The bytes one context works through per progress pass.
pub fn bytes_per_pass(dev: &DevInfo) -> Result<usize> {
    Ok(get(dev, &BYTES_PER_PASS)?.max(MIN_BYTES_PER_PASS).min(usize::MAX as u64) as usize)
}
