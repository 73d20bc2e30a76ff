//! What travels between two RDMA contexts (sans I/O): the connection descriptor an
//! application carries out of band, and the packets of a connection's two sockets. Every
//! field read from a peer is checked here before use.
//!
//! **Descriptor** (`doca_rdma_export`'s blob, [`DESC_LEN`] bytes, little-endian):
//! `DOCARDMA`, version (u16), transport (u8), path (u8: the MTU as log2(bytes / 256) in bits
//! 0–2, GRH enabled in bit 7, the other bits 0), the exporter's memory service (pid u32,
//! nonce u64), the offer's 128-bit token, the exporting context's permissions (u32), its GID
//! index (u32), its longest message (u32), the connection's id (u32), and a check of all that
//! (FNV-1a, u64): a blob changed on its way (a byte or a bit) is refused at connect, as
//! DOCA's header asks of corrupted connection details, rather than found out by a connection
//! that never answers. (A check, not a seal: the token is what admits a connector.)
//!
//! **Packets** ([`HDR_LEN`]-byte header, then the payload): kind (u8), 0 (u8, u16),
//! sequence number (u32), immediate data (u32, as the application gave it), length (u32).
//!
//! | kind        | way                   | payload / meaning                                  |
//! |-------------|-----------------------|----------------------------------------------------|
//! | `HELLO`     | connector → offerer   | the connector's own token (names its descriptor)   |
//! | `SEND`      | connector → offerer   | the message; `imm` with [`FLAG_IMM`]               |
//! | `WRITE_IMM` | connector → offerer   | none: `len` bytes were written, consume a receive  |
//! | `ACK`       | offerer → connector   | message `seq` was delivered                        |
//! | `RNR`       | offerer → connector   | no receive posted for `seq`: retry later (later messages are dropped until `seq` comes again) |
//! | `NAK`       | offerer → connector   | `seq` failed at the receiver (`imm`: the DOCA code) |
//! | `BYE`       | either                | the context stopped: a clean disconnection         |
//! | `READY`     | offerer → connector   | none; carries the offerer's doorbell (one fd): rings are in use |
//! | `MORE`      | connector → offerer   | the next part of message `seq` (shared rings only) |
//!
//! **Shared rings** (two processes of one kernel). The connector's `HELLO` may carry two
//! descriptors: a sealed memfd of [`AREA_LEN`] bytes holding two `doca_link::ring` rings —
//! messages at offset 0 ([`MSG_SLOTS`] records of up to [`MSG_RECORD`] bytes), answers at
//! [`ACK_AT`] ([`ACK_SLOTS`] records of [`HDR_LEN`] bytes) — and the socket that rings the
//! connector's doorbell. The offerer answers `READY` with the socket that rings its own. From
//! then on `SEND`, `WRITE_IMM`, `MORE`, `ACK`, `RNR` and `NAK` travel as ring records (the
//! record's kind is the packet's kind, its bytes the packet: header then payload); the socket
//! keeps `HELLO`, `READY`, `BYE` and its end (the peer's death). A message longer than a
//! record goes as a `SEND` (or `WRITE_IMM`) whose `len` is the whole message and whose payload
//! is its first part, followed at once by `MORE` records (their `len`: their own payload) until
//! the whole is there ([`Hdr::parse_record`] checks each). Across the link (relayed sockets)
//! no descriptor travels: `HELLO` carries none and everything stays on the sockets.

use doca_core::{bail, peer_fail, Error, Result};
use doca_link::rendezvous::{ServiceName, Token};

/// The MTUs an RDMA context may have (`doca_rdma_set_mtu`), in bytes.
pub const MTUS: [u32; 5] = [256, 512, 1024, 2048, 4096];

/// The descriptor's magic.
pub const DESC_MAGIC: &[u8; 8] = b"DOCARDMA";
/// The descriptor's version.
pub const DESC_VERSION: u16 = 3;
/// The descriptor's length.
pub const DESC_LEN: usize = 64;
/// Where the descriptor's check starts (it covers every byte before).
const DESC_CHECK_AT: usize = DESC_LEN - 8;

/// FNV-1a over `b`: any change of one byte changes it.
fn fnv1a(b: &[u8]) -> u64 {
    b.iter().fold(0xcbf2_9ce4_8422_2325, |h, &x| (h ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// A connection descriptor's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc {
    /// The transport type's code (0 RC, 1 DC).
    pub transport: u8,
    /// The exporting context's MTU in bytes (`doca_rdma_set_mtu`: 256 to 4096, a power of 2).
    pub mtu: u32,
    /// Whether it has GRH enabled (`doca_rdma_set_grh_enabled`).
    pub grh: bool,
    /// Where the exporter's offer is.
    pub service: ServiceName,
    /// The offer's secret.
    pub token: Token,
    /// The exporting context's permissions (`doca_rdma_set_permissions`).
    pub perms: u32,
    /// Its GID index.
    pub gid_index: u32,
    /// The longest message it receives.
    pub max_msg: u32,
    /// The connection's id in the exporter.
    pub conn_id: u32,
}

impl Desc {
    /// The blob.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(DESC_LEN);
        v.extend_from_slice(DESC_MAGIC);
        v.extend_from_slice(&DESC_VERSION.to_le_bytes());
        v.push(self.transport);
        debug_assert!(MTUS.contains(&self.mtu), "an IB MTU");
        let mtu_code = (self.mtu.max(256) / 256).trailing_zeros() as u8 & 0x7;
        v.push(mtu_code | if self.grh { 0x80 } else { 0 });
        v.extend_from_slice(&self.service.pid.to_le_bytes());
        v.extend_from_slice(&self.service.nonce.to_le_bytes());
        v.extend_from_slice(&self.token);
        v.extend_from_slice(&self.perms.to_le_bytes());
        v.extend_from_slice(&self.gid_index.to_le_bytes());
        v.extend_from_slice(&self.max_msg.to_le_bytes());
        v.extend_from_slice(&self.conn_id.to_le_bytes());
        let check = fnv1a(&v);
        v.extend_from_slice(&check.to_le_bytes());
        debug_assert_eq!(v.len(), DESC_LEN);
        v
    }

    /// Reads a blob: `INVALID_VALUE` unless it is one (length, magic, version, fields).
    pub fn parse(b: &[u8]) -> Result<Desc> {
        if b.len() != DESC_LEN {
            bail!(
                Error::InvalidValue,
                "rdma connect: a descriptor of {} bytes (an RDMA one has {DESC_LEN})",
                b.len()
            );
        }
        if &b[..8] != DESC_MAGIC {
            bail!(Error::InvalidValue, "rdma connect: not an RDMA connection descriptor (magic)");
        }
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        if u16_at(8) != DESC_VERSION {
            bail!(
                Error::InvalidValue,
                "rdma connect: descriptor version {} (this library reads {DESC_VERSION})",
                u16_at(8)
            );
        }
        let check = u64::from_le_bytes(b[DESC_CHECK_AT..].try_into().expect("8 bytes"));
        if fnv1a(&b[..DESC_CHECK_AT]) != check {
            bail!(
                Error::InvalidValue,
                "rdma connect: the descriptor was changed on its way (its check does not match)"
            );
        }
        let transport = b[10];
        if transport > 1 {
            bail!(Error::InvalidValue, "rdma connect: descriptor of unknown transport {transport}");
        }
        let path = b[11];
        let mtu = 256u32 << (path & 0x7);
        if path & 0x78 != 0 || !MTUS.contains(&mtu) {
            bail!(Error::InvalidValue, "rdma connect: descriptor of unknown MTU or path bits {path:#x}");
        }
        let pid = u32_at(12);
        let nonce = u64::from_le_bytes(b[16..24].try_into().expect("8 bytes"));
        let token: Token = b[24..40].try_into().expect("16 bytes");
        Ok(Desc {
            transport,
            mtu,
            grh: path & 0x80 != 0,
            service: ServiceName { pid, nonce },
            token,
            perms: u32_at(40),
            gid_index: u32_at(44),
            max_msg: u32_at(48),
            conn_id: u32_at(52),
        })
    }
}

/// The packet header's length.
pub const HDR_LEN: usize = 16;
/// Messages ring: records in flight at most (a message of [`MSG_RECORD`] bytes or less is one
/// record; a 1 MiB one, the longest a topology may allow, is 65).
pub const MSG_SLOTS: u32 = 128;
/// Messages ring: the longest record (header included).
pub const MSG_RECORD: usize = 16 << 10;
/// Message bytes in a `MORE` record at most.
pub const CHUNK: usize = MSG_RECORD - HDR_LEN;
/// Answers ring: records in flight at most (at most one answer per message of the window).
pub const ACK_SLOTS: u32 = 128;
/// Where the answers ring starts in the shared area.
pub const ACK_AT: usize = doca_link::ring::ring_bytes(MSG_SLOTS, MSG_RECORD);
/// The shared area's length.
pub const AREA_LEN: usize = ACK_AT + doca_link::ring::ring_bytes(ACK_SLOTS, HDR_LEN);

/// Ring records a message of `len` bytes (header included) takes.
pub fn records_for(len: usize) -> usize {
    if len <= MSG_RECORD {
        1
    } else {
        1 + (len - MSG_RECORD).div_ceil(CHUNK)
    }
}
/// `SEND` carries immediate data.
pub const FLAG_IMM: u8 = 1;

/// A packet's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// The connector names itself.
    Hello = 1,
    /// A message.
    Send = 2,
    /// A write with immediate data landed: consume a receive.
    WriteImm = 3,
    /// Delivered.
    Ack = 4,
    /// Receiver not ready.
    Rnr = 5,
    /// Failed at the receiver.
    Nak = 6,
    /// Clean disconnection.
    Bye = 7,
    /// The offerer's doorbell (shared rings in use).
    Ready = 8,
    /// The next part of a message (shared rings only).
    More = 9,
}

/// A packet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hdr {
    /// Its kind.
    pub kind: Kind,
    /// [`FLAG_IMM`] or 0.
    pub flags: u8,
    /// The sender's message sequence number.
    pub seq: u32,
    /// Immediate data (or a DOCA code in a `NAK`).
    pub imm: u32,
    /// The payload's length (`SEND`) or the bytes written (`WRITE_IMM`).
    pub len: u32,
}

impl Hdr {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HDR_LEN] {
        let mut h = [0u8; HDR_LEN];
        h[0] = self.kind as u8;
        h[1] = self.flags;
        h[4..8].copy_from_slice(&self.seq.to_le_bytes());
        h[8..12].copy_from_slice(&self.imm.to_le_bytes());
        h[12..16].copy_from_slice(&self.len.to_le_bytes());
        h
    }

    /// Reads a packet of `n` bytes: its header, checked against the packet's length (a
    /// `SEND`'s payload is exactly `len` bytes and at most `max_payload`; other kinds carry
    /// none, but `HELLO`, which carries a token). `INVALID_VALUE` for anything else.
    pub fn parse(p: &[u8], max_payload: usize) -> Result<Hdr> {
        if p.len() < HDR_LEN {
            bail!(Error::InvalidValue, "rdma: a packet of {} bytes (header {HDR_LEN})", p.len());
        }
        let kind = match p[0] {
            1 => Kind::Hello,
            2 => Kind::Send,
            3 => Kind::WriteImm,
            4 => Kind::Ack,
            5 => Kind::Rnr,
            6 => Kind::Nak,
            7 => Kind::Bye,
            8 => Kind::Ready,
            9 => Kind::More,
            k => bail!(Error::InvalidValue, "rdma: a packet of unknown kind {k}"),
        };
        let u32_at = |i: usize| u32::from_le_bytes(p[i..i + 4].try_into().expect("4 bytes"));
        let h = Hdr { kind, flags: p[1], seq: u32_at(4), imm: u32_at(8), len: u32_at(12) };
        let payload = p.len() - HDR_LEN;
        let ok = match kind {
            Kind::Send => payload == h.len as usize && payload <= max_payload && h.flags & !FLAG_IMM == 0,
            Kind::Hello => payload == 16,
            Kind::More => false,
            _ => payload == 0,
        };
        if !ok {
            bail!(
                Error::InvalidValue,
                "rdma: a malformed {kind:?} packet ({payload} payload bytes, length field {})",
                h.len
            );
        }
        Ok(h)
    }
}

impl Hdr {
    /// Reads a ring record (a packet in a shared ring): `SEND` whose first part is the whole
    /// message or [`CHUNK`] bytes of it, `len` at most `max_msg`; `MORE` with exactly `len` bytes, at most
    /// [`CHUNK`]; `WRITE_IMM`, `ACK`, `RNR`, `NAK` with none. `HELLO`, `READY` and `BYE`
    /// never travel in a ring. `INVALID_VALUE` otherwise (logged at debug level: the caller
    /// closes the connection and says so).
    pub fn parse_record(p: &[u8], max_msg: usize) -> Result<Hdr> {
        if p.len() < HDR_LEN {
            return Err(peer_fail!(
                Error::InvalidValue,
                "rdma: a record of {} bytes (header {HDR_LEN})",
                p.len()
            ));
        }
        let kind = match p[0] {
            2 => Kind::Send,
            3 => Kind::WriteImm,
            4 => Kind::Ack,
            5 => Kind::Rnr,
            6 => Kind::Nak,
            9 => Kind::More,
            k => return Err(peer_fail!(Error::InvalidValue, "rdma: a record of kind {k}")),
        };
        let u32_at = |i: usize| u32::from_le_bytes(p[i..i + 4].try_into().expect("4 bytes"));
        let h = Hdr { kind, flags: p[1], seq: u32_at(4), imm: u32_at(8), len: u32_at(12) };
        let part = p.len() - HDR_LEN;
        let ok = match kind {
            Kind::Send => {
                part == (h.len as usize).min(CHUNK) && h.len as usize <= max_msg && h.flags & !FLAG_IMM == 0
            }
            Kind::More => part == h.len as usize && part <= CHUNK && h.flags == 0 && part > 0,
            _ => part == 0,
        };
        if !ok {
            return Err(peer_fail!(
                Error::InvalidValue,
                "rdma: a malformed {kind:?} record ({part} payload bytes, length field {})",
                h.len
            ));
        }
        Ok(h)
    }
}

/// The connection manager's packets' magic (on a listening port's socket).
pub const CM_MAGIC: &[u8; 8] = b"DOCARDCM";
/// The most private data an accept carries (`doca_rdma_connection_accept`'s length is a u8).
pub const CM_PRIVATE_MAX: usize = 255;

/// A connection manager packet: `DOCARDCM`, kind (u8), private data length (u8), 0 (u16),
/// then the sender's connection descriptor ([`DESC_LEN`] bytes) for `REQUEST` and
/// `ACCEPT`, then the private data (`ACCEPT` only).
///
/// | kind          | way               | meaning                                                   |
/// |---------------|-------------------|-----------------------------------------------------------|
/// | `REQUEST` (1) | client → listener | connect to me (the client's descriptor of a fresh offer)  |
/// | `ACCEPT` (2)  | listener → client | accepted: the server connected to the client's offer; here is its own |
/// | `REJECT` (3)  | listener → client | refused (the application's reject, or no room for a connection) |
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CmMsg {
    /// A client asks for a connection.
    Request(Desc),
    /// The server accepted, with its descriptor and private data.
    Accept(Desc, Vec<u8>),
    /// The server refused.
    Reject,
}

/// The longest connection manager packet.
pub const CM_MAX_LEN: usize = 12 + DESC_LEN + CM_PRIVATE_MAX;

impl CmMsg {
    /// The packet.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(CM_MAX_LEN);
        v.extend_from_slice(CM_MAGIC);
        let (kind, desc, private): (u8, Option<&Desc>, &[u8]) = match self {
            CmMsg::Request(d) => (1, Some(d), &[]),
            CmMsg::Accept(d, p) => (2, Some(d), &p[..p.len().min(CM_PRIVATE_MAX)]),
            CmMsg::Reject => (3, None, &[]),
        };
        v.push(kind);
        v.push(private.len() as u8);
        v.extend_from_slice(&[0, 0]);
        if let Some(d) = desc {
            v.extend_from_slice(&d.encode());
        }
        v.extend_from_slice(private);
        v
    }

    /// Reads a packet: `INVALID_VALUE` unless it is exactly one.
    pub fn parse(p: &[u8]) -> Result<CmMsg> {
        if p.len() < 12 || &p[..8] != CM_MAGIC || p[10] != 0 || p[11] != 0 {
            bail!(Error::InvalidValue, "rdma cm: not a connection manager packet ({} bytes)", p.len());
        }
        let private = p[9] as usize;
        match p[8] {
            1 if p.len() == 12 + DESC_LEN && private == 0 => Ok(CmMsg::Request(Desc::parse(&p[12..])?)),
            2 if p.len() == 12 + DESC_LEN + private => {
                Ok(CmMsg::Accept(Desc::parse(&p[12..12 + DESC_LEN])?, p[12 + DESC_LEN..].to_vec()))
            }
            3 if p.len() == 12 && private == 0 => Ok(CmMsg::Reject),
            k => bail!(Error::InvalidValue, "rdma cm: a malformed packet of kind {k} ({} bytes)", p.len()),
        }
    }
}

/// The fabric namespace of the connection manager's listening ports (`doca_link`'s named
/// ports: `rdma-cm-<port>`).
pub const PORT_NS: &str = "rdma-cm";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_round_trip_and_bad_ones_are_refused() {
        let d = Desc {
            transport: 0,
            mtu: 2048,
            grh: true,
            service: ServiceName { pid: 42, nonce: 7 },
            token: [9; 16],
            perms: 6,
            gid_index: 1,
            max_msg: 4096,
            conn_id: 3,
        };
        let b = d.encode();
        assert_eq!(Desc::parse(&b), Ok(d));
        assert_eq!(Desc::parse(&b[..40]).err(), Some(Error::InvalidValue));
        let mut bad = b.clone();
        bad[0] = b'X';
        assert_eq!(Desc::parse(&bad).err(), Some(Error::InvalidValue));
        let mut bad = b.clone();
        bad[8] = 9;
        assert_eq!(Desc::parse(&bad).err(), Some(Error::InvalidValue));
        for mtu in MTUS {
            for grh in [false, true] {
                let d = Desc { mtu, grh, ..d };
                assert_eq!(Desc::parse(&d.encode()), Ok(d), "MTU {mtu}, GRH {grh}");
            }
        }
        // Any one bit changed anywhere, the check's own included, is refused.
        for at in 0..DESC_LEN {
            for bit in 0..8 {
                let mut bad = b.clone();
                bad[at] ^= 1 << bit;
                assert_eq!(Desc::parse(&bad).err(), Some(Error::InvalidValue), "byte {at} bit {bit}");
            }
        }
    }

    #[test]
    fn connection_manager_packets_round_trip_and_bad_ones_are_refused() {
        let d = Desc {
            transport: 0,
            mtu: 1024,
            grh: false,
            service: ServiceName { pid: 1, nonce: 2 },
            token: [3; 16],
            perms: 1,
            gid_index: 0,
            max_msg: 64,
            conn_id: 0,
        };
        for m in [CmMsg::Request(d), CmMsg::Accept(d, b"hi".to_vec()), CmMsg::Reject] {
            assert_eq!(CmMsg::parse(&m.encode()), Ok(m));
        }
        let mut req = CmMsg::Request(d).encode();
        req.push(0);
        assert_eq!(CmMsg::parse(&req).err(), Some(Error::InvalidValue), "trailing bytes");
        let mut acc = CmMsg::Accept(d, b"hi".to_vec()).encode();
        acc[9] = 3;
        assert_eq!(CmMsg::parse(&acc).err(), Some(Error::InvalidValue), "private length lies");
        let mut rej = CmMsg::Reject.encode();
        rej[8] = 9;
        assert_eq!(CmMsg::parse(&rej).err(), Some(Error::InvalidValue), "unknown kind");
    }

    #[test]
    fn packets_are_checked_against_their_length() {
        let h = Hdr { kind: Kind::Send, flags: FLAG_IMM, seq: 5, imm: 0xabcd, len: 3 };
        let mut p = h.encode().to_vec();
        p.extend_from_slice(b"abc");
        assert_eq!(Hdr::parse(&p, 16), Ok(h));
        assert_eq!(Hdr::parse(&p, 2).err(), Some(Error::InvalidValue), "above the receiver's limit");
        assert_eq!(Hdr::parse(&p[..18], 16).err(), Some(Error::InvalidValue), "length field lies");
        let ack = Hdr { kind: Kind::Ack, flags: 0, seq: 5, imm: 0, len: 0 }.encode();
        assert!(Hdr::parse(&ack, 16).is_ok());
        let mut junk = ack;
        junk[0] = 99;
        assert_eq!(Hdr::parse(&junk, 16).err(), Some(Error::InvalidValue));
    }
}
