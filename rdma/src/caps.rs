//! Capabilities (`doca_rdma_cap_*`): limits read from the topology (`cap rdma.<name> <value>`),
//! with these defaults. Every query first checks the topology's `rdma.*` lines, so a misspelt
//! limit is an error naming its line instead of being ignored.

use doca_core::{bail, cap_no, CapSpec, DevInfo, Error, Result};

/// Whether the device can run RDMA contexts (`cap rdma.supported 0`: `NOT_SUPPORTED`).
pub const SUPPORTED: CapSpec =
    CapSpec { name: "rdma.supported", default: 1, descr: "RDMA contexts supported (1) or not (0)" };
/// `doca_rdma_cap_get_max_send_queue_size`: tasks of each sending type per context.
pub const MAX_SEND_QUEUE_SIZE: CapSpec = CapSpec {
    name: "rdma.max_send_queue_size",
    default: 8192,
    descr: "send queue size (tasks of each type)",
};
/// `doca_rdma_cap_get_max_recv_queue_size`: receive tasks per context.
pub const MAX_RECV_QUEUE_SIZE: CapSpec =
    CapSpec { name: "rdma.max_recv_queue_size", default: 8192, descr: "receive queue size (receive tasks)" };
/// `doca_rdma_cap_get_max_message_size`: the longest send (its bytes travel in one packet of
/// the connection's socket, so this stays well below the socket buffer).
pub const MAX_MESSAGE_SIZE: CapSpec =
    CapSpec { name: "rdma.max_message_size", default: 65536, descr: "longest send/receive message, bytes" };
/// The longest read or write (one-sided operations copy between maps, no packet).
pub const MAX_RDMA_SIZE: CapSpec =
    CapSpec { name: "rdma.max_rdma_size", default: 1 << 30, descr: "longest read/write, bytes" };
/// `doca_rdma_cap_get_gid_table_size`.
pub const GID_TABLE_SIZE: CapSpec =
    CapSpec { name: "rdma.gid_table_size", default: 4, descr: "entries of the device's GID table" };
/// `doca_rdma_cap_transport_type_is_supported(DC)`: RC is always supported.
pub const DC: CapSpec =
    CapSpec { name: "rdma.dc", default: 1, descr: "DC transport supported (1) or not (0)" };
/// Connections one context may hold (`doca_rdma_set_max_num_connections` at most).
pub const MAX_CONNECTIONS: CapSpec =
    CapSpec { name: "rdma.max_connections", default: 1024, descr: "connections per RDMA context" };
/// `doca_rdma_cap_get_max_send_buf_list_len` and
/// `doca_rdma_cap_task_receive_get_max_dst_buf_list_len`: buffers in the list a send or write
/// gathers from, or a receive or read scatters into.
pub const MAX_BUF_LIST_LEN: CapSpec =
    CapSpec { name: "rdma.max_buf_list_len", default: 16, descr: "buffers in one task's buffer list" };
/// Emulator-only: bytes one context copies for one-sided operations per progress pass.
pub const BYTES_PER_PASS: CapSpec = CapSpec {
    name: "rdma.bytes_per_pass",
    default: 1 << 20,
    descr: "bytes one RDMA context copies per progress pass",
};

/// Emulator-only: how long a message waits for the peer's answer before it fails with
/// `TIME_OUT` (a real queue pair's acknowledgement timeout and retries; here the peer's
/// progress answers, so the default is long).
pub const ACK_TIMEOUT_MS: CapSpec = CapSpec {
    name: "rdma.ack_timeout_ms",
    default: 30_000,
    descr: "milliseconds a message waits for the peer's answer before failing with TIME_OUT",
};

/// `doca_rdma_srq_cap_get_max_shared_recv_queue_size`: receives a shared receive queue holds.
pub const SRQ_MAX_SIZE: CapSpec =
    CapSpec { name: "rdma.srq_max_size", default: 8192, descr: "shared receive queue size (receives)" };
/// `doca_rdma_srq_cap_task_receive_get_max_dst_buf_list_len`: buffers in the list one receive
/// of a shared receive queue scatters into.
pub const SRQ_MAX_BUF_LIST_LEN: CapSpec = CapSpec {
    name: "rdma.srq_max_buf_list_len",
    default: 16,
    descr: "buffers in one shared-receive-queue receive's list",
};

/// Every capability this library reads.
pub const ALL: [CapSpec; 13] = [
    SUPPORTED,
    MAX_SEND_QUEUE_SIZE,
    MAX_RECV_QUEUE_SIZE,
    MAX_MESSAGE_SIZE,
    MAX_RDMA_SIZE,
    GID_TABLE_SIZE,
    DC,
    MAX_CONNECTIONS,
    BYTES_PER_PASS,
    ACK_TIMEOUT_MS,
    MAX_BUF_LIST_LEN,
    SRQ_MAX_SIZE,
    SRQ_MAX_BUF_LIST_LEN,
];

/// The value of `spec` for `dev` (after checking the topology's `rdma.*` names).
pub fn get(dev: &DevInfo, spec: &CapSpec) -> Result<u64> {
    if let Err(e) = dev.topology().check_caps("rdma", &ALL) {
        bail!(e.code(), "{e}");
    }
    Ok(dev.cap(spec))
}

fn get_u32(dev: &DevInfo, spec: &CapSpec) -> Result<u32> {
    Ok(get(dev, spec)?.min(u32::MAX as u64) as u32)
}

/// Whether `dev` runs RDMA contexts: every `doca_rdma_cap_task_*_is_supported`.
pub fn is_supported(dev: &DevInfo) -> Result<()> {
    if get(dev, &SUPPORTED)? == 0 {
        cap_no!("rdma: the topology says this device has no RDMA (cap rdma.supported 0)");
    }
    Ok(())
}

/// `doca_rdma_cap_get_max_send_queue_size`.
pub fn max_send_queue_size(dev: &DevInfo) -> Result<u32> {
    get_u32(dev, &MAX_SEND_QUEUE_SIZE)
}

/// `doca_rdma_cap_get_max_recv_queue_size`.
pub fn max_recv_queue_size(dev: &DevInfo) -> Result<u32> {
    get_u32(dev, &MAX_RECV_QUEUE_SIZE)
}

/// `doca_rdma_cap_get_max_message_size`.
pub fn max_message_size(dev: &DevInfo) -> Result<u32> {
    Ok(get_u32(dev, &MAX_MESSAGE_SIZE)?.clamp(64, 1 << 20))
}

/// The longest read or write.
pub fn max_rdma_size(dev: &DevInfo) -> Result<u64> {
    get(dev, &MAX_RDMA_SIZE)
}

/// `doca_rdma_cap_get_gid_table_size`.
pub fn gid_table_size(dev: &DevInfo) -> Result<u32> {
    Ok(get_u32(dev, &GID_TABLE_SIZE)?.clamp(1, 256))
}

/// Buffers in one task's list (at least 1).
pub fn max_buf_list_len(dev: &DevInfo) -> Result<u32> {
    Ok(get_u32(dev, &MAX_BUF_LIST_LEN)?.max(1))
}

/// `doca_rdma_srq_cap_get_max_shared_recv_queue_size` (at least 1; `NOT_SUPPORTED` on a
/// device without RDMA).
pub fn srq_max_size(dev: &DevInfo) -> Result<u32> {
    is_supported(dev)?;
    Ok(get_u32(dev, &SRQ_MAX_SIZE)?.max(1))
}

/// `doca_rdma_srq_cap_task_receive_get_max_dst_buf_list_len` (at least 1; `NOT_SUPPORTED` on
/// a device without RDMA).
pub fn srq_max_buf_list_len(dev: &DevInfo) -> Result<u32> {
    is_supported(dev)?;
    Ok(get_u32(dev, &SRQ_MAX_BUF_LIST_LEN)?.max(1))
}

/// Connections per context.
pub fn max_connections(dev: &DevInfo) -> Result<u32> {
    Ok(get_u32(dev, &MAX_CONNECTIONS)?.clamp(1, u16::MAX as u32))
}

/// `doca_rdma_cap_transport_type_is_supported`.
pub fn transport_type_is_supported(dev: &DevInfo, t: crate::TransportType) -> Result<()> {
    is_supported(dev)?;
    if t == crate::TransportType::Dc && get(dev, &DC)? == 0 {
        cap_no!("rdma: the topology says this device has no DC transport (cap rdma.dc 0)");
    }
    Ok(())
}

/// The bytes one context copies per pass (at least 4 KiB).
pub fn bytes_per_pass(dev: &DevInfo) -> Result<usize> {
    Ok(get(dev, &BYTES_PER_PASS)?.max(4096).min(usize::MAX as u64) as usize)
}

/// How long a message waits for its answer (at least 1 ms).
pub fn ack_timeout(dev: &DevInfo) -> Result<std::time::Duration> {
    Ok(std::time::Duration::from_millis(get(dev, &ACK_TIMEOUT_MS)?.max(1)))
}

/// `doca_rdma_cap_get_gid`: entry `index` of the device's GID table — an IPv4-mapped
/// address 127.0.0.N (N the entry), since connections of this emulation meet through the
/// fabric directory rather than a network.
pub fn gid(dev: &DevInfo, index: u32) -> Result<[u8; 16]> {
    let n = gid_table_size(dev)?;
    if index >= n {
        bail!(
            Error::InvalidValue,
            "rdma: GID index {index} beyond the table of {n} (cap rdma.gid_table_size)"
        );
    }
    let mut g = [0u8; 16];
    g[10] = 0xff;
    g[11] = 0xff;
    g[12] = 127;
    g[15] = (index + 1) as u8;
    Ok(g)
}
