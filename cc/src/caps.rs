//! Capabilities (`doca_cc_cap_*`): limits read from the topology (`cap cc.<name> <value>`),
//! with these defaults. Every query first checks the topology's `cc.*` lines, so a misspelt
//! limit is an error naming its line instead of being ignored.

use doca_core::{bail, cap_no, CapSpec, DevInfo, DeviceKind, Error, Result};

/// `doca_cc_cap_get_max_name_len`: longest server name, counting the terminating NUL.
pub const MAX_NAME_LEN: CapSpec =
    CapSpec { name: "cc.max_name_len", default: 120, descr: "longest server name, NUL included" };
/// `doca_cc_cap_get_max_msg_size`: largest control-path message.
pub const MAX_MSG_SIZE: CapSpec =
    CapSpec { name: "cc.max_msg_size", default: 4080, descr: "largest control-path message, bytes" };
/// `doca_cc_cap_get_max_recv_queue_size`.
pub const MAX_RECV_QUEUE_SIZE: CapSpec =
    CapSpec { name: "cc.max_recv_queue_size", default: 8192, descr: "deepest receive queue, messages" };
/// `doca_cc_cap_get_max_clients`: connections one server accepts.
pub const MAX_CLIENTS: CapSpec =
    CapSpec { name: "cc.max_clients", default: 512, descr: "clients per server" };
/// Connections one client process may hold on one server (emulator-only: one process must
/// not take every place of [`MAX_CLIENTS`]).
pub const MAX_CLIENTS_PER_PROCESS: CapSpec = CapSpec {
    name: "cc.max_clients_per_process",
    default: 128,
    descr: "clients one process may hold on one server",
};
/// `doca_cc_cap_get_max_send_tasks`.
pub const MAX_SEND_TASKS: CapSpec =
    CapSpec { name: "cc.max_send_tasks", default: 16384, descr: "send tasks per server or client" };
/// `doca_cc_consumer_cap_get_max_num_tasks` and `doca_cc_producer_cap_get_max_num_tasks`.
pub const MAX_FAST_PATH_TASKS: CapSpec = CapSpec {
    name: "cc.max_fast_path_tasks",
    default: 16384,
    descr: "post-recv or producer send tasks per context",
};
/// `doca_cc_consumer_cap_get_max_buf_size` and `doca_cc_producer_cap_get_max_buf_size`.
pub const MAX_BUF_SIZE: CapSpec =
    CapSpec { name: "cc.max_buf_size", default: 1 << 30, descr: "largest fast-path buffer, bytes" };
/// `doca_cc_consumer_cap_get_max_consumers`: consumers per connection.
pub const MAX_CONSUMERS: CapSpec =
    CapSpec { name: "cc.max_consumers", default: 256, descr: "consumers per connection" };
/// `doca_cc_producer_cap_get_max_producers`: producers per connection.
pub const MAX_PRODUCERS: CapSpec =
    CapSpec { name: "cc.max_producers", default: 256, descr: "producers per connection" };
/// Largest immediate data of a producer send (the comch-era extension).
pub const MAX_IMM_DATA_LEN: CapSpec =
    CapSpec { name: "cc.max_imm_data_len", default: 32, descr: "immediate data per fast-path send, bytes" };

/// `doca_cc_consumer_cap_is_supported` and `doca_cc_producer_cap_is_supported` (2.5:
/// `doca_cc_cap_is_consumer_supported`, `_producer_`): `cap cc.fast_path 0` emulates a
/// device without the fast path.
pub const FAST_PATH: CapSpec =
    CapSpec { name: "cc.fast_path", default: 1, descr: "consumers and producers supported (1) or not (0)" };

/// Every capability this library reads.
pub const ALL: [CapSpec; 12] = [
    MAX_NAME_LEN,
    MAX_MSG_SIZE,
    MAX_RECV_QUEUE_SIZE,
    MAX_CLIENTS,
    MAX_CLIENTS_PER_PROCESS,
    MAX_SEND_TASKS,
    MAX_FAST_PATH_TASKS,
    MAX_BUF_SIZE,
    MAX_CONSUMERS,
    MAX_PRODUCERS,
    MAX_IMM_DATA_LEN,
    FAST_PATH,
];

/// The value of `spec` for `dev` (after checking the topology's `cc.*` names).
pub fn get(dev: &DevInfo, spec: &CapSpec) -> Result<u32> {
    if let Err(e) = dev.topology().check_caps("cc", &ALL) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(spec).min(u32::MAX as u64) as u32)
}

/// `doca_cc_cap_get_max_name_len`.
pub fn max_name_len(dev: &DevInfo) -> Result<u32> {
    get(dev, &MAX_NAME_LEN)
}
/// `doca_cc_cap_get_max_msg_size`.
pub fn max_msg_size(dev: &DevInfo) -> Result<u32> {
    get(dev, &MAX_MSG_SIZE)
}
/// `doca_cc_cap_get_max_recv_queue_size`.
pub fn max_recv_queue_size(dev: &DevInfo) -> Result<u32> {
    get(dev, &MAX_RECV_QUEUE_SIZE)
}
/// `doca_cc_cap_get_max_clients`.
pub fn max_clients(dev: &DevInfo) -> Result<u32> {
    get(dev, &MAX_CLIENTS)
}
/// `doca_cc_cap_get_max_send_tasks`.
pub fn max_send_tasks(dev: &DevInfo) -> Result<u32> {
    get(dev, &MAX_SEND_TASKS)
}

/// `doca_cc_cap_server_is_supported`: on a DPU device; `NOT_SUPPORTED` on a host function.
pub fn server_is_supported(dev: &DevInfo) -> Result<()> {
    match dev.kind() {
        DeviceKind::Dpu => Ok(()),
        DeviceKind::Host => Err(Error::NotSupported),
    }
}

/// `doca_cc_cap_client_is_supported`: on a host function; `NOT_SUPPORTED` on a DPU device.
pub fn client_is_supported(dev: &DevInfo) -> Result<()> {
    match dev.kind() {
        DeviceKind::Host => Ok(()),
        DeviceKind::Dpu => Err(Error::NotSupported),
    }
}

/// `doca_cc_consumer_cap_is_supported`: on either side, unless the topology says `cap
/// cc.fast_path 0` (`NOT_SUPPORTED`; `Consumer::create` refuses the same way).
pub fn consumer_is_supported(dev: &DevInfo) -> Result<()> {
    fast_path_supported(dev, "consumers")
}

/// `doca_cc_producer_cap_is_supported`: as [`consumer_is_supported`].
pub fn producer_is_supported(dev: &DevInfo) -> Result<()> {
    fast_path_supported(dev, "producers")
}

fn fast_path_supported(dev: &DevInfo, what: &str) -> Result<()> {
    if get(dev, &FAST_PATH)? == 0 {
        cap_no!("{dev:?} has no fast path: {what} are not supported (topology: cap cc.fast_path 0)");
    }
    Ok(())
}

/// Checks a server name against `doca_cc_cap_get_max_name_len`: 1 byte up to the maximum
/// minus one (the NUL), no interior NUL (`INVALID_VALUE`).
pub fn check_name(dev: &DevInfo, name: &str) -> Result<()> {
    let max = max_name_len(dev)? as usize;
    if name.is_empty() || name.len() >= max || name.contains('\0') {
        bail!(
            Error::InvalidValue,
            "server name must be 1..{} bytes without NUL, got {} bytes{}",
            max - 1,
            name.len(),
            if name.contains('\0') { " with a NUL" } else { "" }
        );
    }
    Ok(())
}
