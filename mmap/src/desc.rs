//! The export descriptor (what `doca_mmap_export_pci` gives and `_create_from_export`
//! takes) and the access flags it carries: plain data, read by the map ([`crate::Mmap`])
//! and by the link's service that serves maps across the TCP link ([`crate::linked`]).

use bitflags::bitflags;
use doca_core::{bail, Error, PciAddr, Result};

bitflags! {
    /// `enum doca_access_flag`, DOCA's exact values. Local read is always allowed
    /// ([`AccessFlags::LOCAL_READ_ONLY`] is 0).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct AccessFlags: u32 {
        /// `DOCA_ACCESS_FLAG_LOCAL_READ_WRITE` (1).
        const LOCAL_READ_WRITE = 1 << 0;
        /// `DOCA_ACCESS_FLAG_RDMA_READ` (2).
        const RDMA_READ = 1 << 1;
        /// `DOCA_ACCESS_FLAG_RDMA_WRITE` (4).
        const RDMA_WRITE = 1 << 2;
        /// `DOCA_ACCESS_FLAG_RDMA_ATOMIC` (8).
        const RDMA_ATOMIC = 1 << 3;
        /// `DOCA_ACCESS_FLAG_PCI_READ_ONLY` (16).
        const PCI_READ_ONLY = 1 << 4;
        /// `DOCA_ACCESS_FLAG_PCI_READ_WRITE` (32).
        const PCI_READ_WRITE = 1 << 5;
        /// `DOCA_ACCESS_FLAG_PCI_RELAXED_ORDERING` (64).
        const PCI_RELAXED_ORDERING = 1 << 6;
    }
}

impl AccessFlags {
    /// `DOCA_ACCESS_FLAG_LOCAL_READ_ONLY` (0).
    pub const LOCAL_READ_ONLY: AccessFlags = AccessFlags::empty();

    /// Checks a raw mask: unknown bits, or PCI read-only together with PCI read-write, are
    /// `INVALID_VALUE`.
    pub fn from_mask(mask: u32) -> Result<AccessFlags> {
        let Some(flags) = AccessFlags::from_bits(mask) else {
            bail!(Error::InvalidValue, "access mask {mask:#x} has undefined bits");
        };
        if flags.contains(AccessFlags::PCI_READ_ONLY | AccessFlags::PCI_READ_WRITE) {
            bail!(Error::InvalidValue, "PCI_READ_ONLY and PCI_READ_WRITE are mutually exclusive");
        }
        Ok(flags)
    }
}

const DESC_MAGIC: &[u8; 8] = b"DOCAMMEX";
const DESC_VERSION: u16 = 3;
/// The length of every export descriptor ([`crate::Mmap::export_pci`]);
/// [`crate::Mmap::create_from_export`] refuses any other length (`INVALID_VALUE`), and the C
/// ABI reads no more than this.
pub const EXPORT_DESC_LEN: usize = 76;
const DESC_LEN: usize = EXPORT_DESC_LEN;

/// Descriptor kinds: shared memory mapped by the importer, or memory served by the exporter.
pub(crate) const KIND_SEGMENT: u16 = 0;
pub(crate) const KIND_SERVED: u16 = 1;

/// What a descriptor says: written by [`Desc::encode`] at export, read back by
/// [`Desc::parse`] at import.
pub(crate) struct Desc {
    pub(crate) kind: u16,
    pub(crate) perms: AccessFlags,
    pub(crate) service: doca_link::rendezvous::ServiceName,
    pub(crate) token: doca_link::rendezvous::Token,
    pub(crate) offset: u64,
    pub(crate) len: u64,
    pub(crate) from: PciAddr,
    /// The exporter's address of the range's first byte.
    pub(crate) addr: u64,
}

impl Desc {
    /// The descriptor's bytes ([`EXPORT_DESC_LEN`] of them).
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut d = Vec::with_capacity(DESC_LEN);
        d.extend_from_slice(DESC_MAGIC);
        d.extend_from_slice(&DESC_VERSION.to_le_bytes());
        d.extend_from_slice(&self.kind.to_le_bytes());
        d.extend_from_slice(&self.perms.bits().to_le_bytes());
        d.extend_from_slice(&self.service.pid.to_le_bytes());
        d.extend_from_slice(&self.service.nonce.to_le_bytes());
        d.extend_from_slice(&self.token);
        d.extend_from_slice(&self.offset.to_le_bytes());
        d.extend_from_slice(&self.len.to_le_bytes());
        d.extend_from_slice(&self.from.domain().to_le_bytes());
        d.extend_from_slice(&[self.from.bus(), self.from.device(), self.from.function(), 0, 0, 0]);
        // Where the range starts in the exporter's address space: the importer accepts
        // the exporter's addresses (C code sends its own buffer addresses across).
        d.extend_from_slice(&self.addr.to_le_bytes());
        debug_assert_eq!(d.len(), DESC_LEN);
        d
    }

    pub(crate) fn parse(d: &[u8]) -> Result<Desc> {
        if d.len() != DESC_LEN {
            bail!(Error::InvalidValue, "mmap export descriptor of {} bytes (expected {DESC_LEN})", d.len());
        }
        if &d[..8] != DESC_MAGIC {
            bail!(Error::InvalidValue, "not a mmap export descriptor (bad magic)");
        }
        let u16_at = |i: usize| u16::from_le_bytes([d[i], d[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(d[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(d[i..i + 8].try_into().expect("8 bytes"));
        if u16_at(8) != DESC_VERSION {
            bail!(
                Error::InvalidValue,
                "mmap export descriptor version {} (expected {DESC_VERSION})",
                u16_at(8)
            );
        }
        let kind = u16_at(10);
        if kind != KIND_SEGMENT && kind != KIND_SERVED {
            bail!(Error::InvalidValue, "mmap export descriptor of unknown kind {kind}");
        }
        let perms = AccessFlags::from_mask(u32_at(12))?;
        let from = PciAddr::new(u16_at(60), d[62], d[63], d[64])?;
        // The exporter's addresses of the range must be addresses here too: a buffer's
        // address (base + offset) can then never overflow.
        let (addr, len) = (u64_at(68), u64_at(52));
        if addr.checked_add(len).is_none_or(|end| usize::try_from(end).is_err()) {
            bail!(
                Error::InvalidValue,
                "mmap export descriptor range {addr:#x}+{len} is not an address range"
            );
        }
        Ok(Desc {
            kind,
            perms,
            service: doca_link::rendezvous::ServiceName { pid: u32_at(16), nonce: u64_at(20) },
            token: d[28..44].try_into().expect("16 bytes"),
            offset: u64_at(44),
            len: u64_at(52),
            from,
            addr: u64_at(68),
        })
    }
}
