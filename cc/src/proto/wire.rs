//! The wire format of the handshake and of control packets: encode to bytes, decode from
//! bytes, and refuse anything malformed.
//!
//! Every packet starts with the 8-byte magic `DOCACC\0\x01` and a little-endian `u16`
//! protocol version, so a peer of another version is recognised and refused cleanly.
//!
//! ```text
//! Hello (client → server, with the client's two doorbell fds: messages, room):
//!   magic[8] version:u16 kind:u8 0:u8 max_msg_size:u32 recv_queue_size:u32
//!   function: domain:u16 bus:u8 device:u8 function:u8 0:u8   (the client's host function)
//!   name_len:u16 name
//! Reply (server → client; on acceptance with the segment memfd and the server's two doorbells):
//!   magic[8] version:u16 status:i32 conn_id:u64 server_recv_queue:u32 max_msg_size:u32
//!   segment_len:u64 c2s_offset:u64 s2c_offset:u64
//! Control, either way, after the handshake (fast-path bookkeeping):
//!   magic[8] version:u16 op:u8 0:u8 consumer_id:u32 … (see Ctrl)
//!   NewConsumer … one_copy:u8 0:u8[3] mem_offset:u64 mem_len:u64 slots:u32
//!       (with the consumer's ring segment, its memory memfd and its doorbell)
//!   ConsumerAck (with the acknowledging side's fast-path doorbell)
//!   ConsumerGone (destroyed), ConsumerPaused (stopped; may start again under the same id)
//!   ConsumerRefused … status:i32 (the receiver will not map that consumer: the DOCA code,
//!       e.g. NO_MEMORY beyond its budget for the sender's process)
//! ```

use doca_core::{Error, PciAddr, Result};

/// Packet magic.
pub const MAGIC: [u8; 8] = *b"DOCACC\0\x01";
/// This implementation's protocol version.
pub const VERSION: u16 = 7;

/// Who is connecting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum PeerKind {
    /// A 2024 `doca_cc` client.
    Client = 1,
    /// A legacy `doca_comm_channel_ep` endpoint.
    Endpoint = 2,
}

impl PeerKind {
    /// Bytes each ring slot carries beyond the application's message: the legacy endpoint
    /// stamps every message with its send time (informational: a receiver never orders by
    /// it, since the sender writes it); the 2024 API carries the message alone.
    pub fn msg_overhead(self) -> usize {
        match self {
            PeerKind::Client => 0,
            PeerKind::Endpoint => 8,
        }
    }
}

/// The client's opening packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    /// Client or legacy endpoint.
    pub kind: PeerKind,
    /// The client's maximum message size (must equal the server's).
    pub max_msg_size: u32,
    /// How many messages the client's receive queue holds (sizes the server→client ring).
    pub recv_queue_size: u32,
    /// The host function the client runs on (the server serves one function only).
    pub function: PciAddr,
    /// The service name the client asks for.
    pub name: String,
}

/// The server's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// `DOCA_SUCCESS` (0) when accepted, else the DOCA code of the refusal.
    pub status: i32,
    /// The server's id for the connection.
    pub conn_id: u64,
    /// The server's receive queue (sizes the client→server ring).
    pub server_recv_queue: u32,
    /// The agreed maximum message size.
    pub max_msg_size: u32,
    /// Size of the shared segment.
    pub segment_len: u64,
    /// Offset of the client→server ring.
    pub c2s_offset: u64,
    /// Offset of the server→client ring.
    pub s2c_offset: u64,
}

/// A control packet between connected peers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ctrl {
    /// A consumer started on the sender's side.
    NewConsumer {
        /// Its id.
        id: u32,
        /// Whether its memory is mapped directly (one copy) or through a shadow.
        one_copy: bool,
        /// Where the consumer's map starts in the memory memfd's data area.
        mem_offset: u64,
        /// The map's length.
        mem_len: u64,
        /// Post-receive tasks the consumer can have posted at once (ring slots).
        slots: u32,
    },
    /// The receiver registered the sender's consumer.
    ConsumerAck {
        /// The consumer.
        id: u32,
    },
    /// The sender's consumer was destroyed (the expired-consumer event).
    ConsumerGone {
        /// The consumer.
        id: u32,
    },
    /// The receiver refused the sender's consumer (it maps nothing of it): the consumer's
    /// start fails with `status`.
    ConsumerRefused {
        /// The consumer.
        id: u32,
        /// The DOCA code of the refusal (never 0).
        status: i32,
    },
    /// The sender's consumer stopped: its rings and buffers are no longer used; it may start
    /// again (announcing new rings under the same id) or be destroyed.
    ConsumerPaused {
        /// The consumer.
        id: u32,
    },
}

impl Ctrl {
    /// Encodes the packet.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(48);
        v.extend_from_slice(&MAGIC);
        v.extend_from_slice(&VERSION.to_le_bytes());
        let (op, id) = match self {
            Ctrl::NewConsumer { id, .. } => (1u8, *id),
            Ctrl::ConsumerAck { id } => (2, *id),
            Ctrl::ConsumerGone { id } => (3, *id),
            Ctrl::ConsumerPaused { id } => (4, *id),
            Ctrl::ConsumerRefused { id, .. } => (5, *id),
        };
        v.push(op);
        v.push(0);
        v.extend_from_slice(&id.to_le_bytes());
        if let Ctrl::NewConsumer { one_copy, mem_offset, mem_len, slots, .. } = self {
            v.push(*one_copy as u8);
            v.extend_from_slice(&[0; 3]);
            v.extend_from_slice(&mem_offset.to_le_bytes());
            v.extend_from_slice(&mem_len.to_le_bytes());
            v.extend_from_slice(&slots.to_le_bytes());
        }
        if let Ctrl::ConsumerRefused { status, .. } = self {
            v.extend_from_slice(&status.to_le_bytes());
        }
        v
    }

    /// Decodes a packet (`INVALID_VALUE` when malformed, `UNSUPPORTED_VERSION` for another
    /// version).
    pub fn decode(b: &[u8]) -> Result<Ctrl> {
        let (v, mut r) = open(b)?;
        if v != VERSION {
            return Err(Error::UnsupportedVersion);
        }
        let op = r.u8()?;
        r.u8()?;
        let id = r.u32()?;
        let c = match op {
            1 => {
                let one_copy = r.u8()? != 0;
                r.take(3)?;
                Ctrl::NewConsumer { id, one_copy, mem_offset: r.u64()?, mem_len: r.u64()?, slots: r.u32()? }
            }
            2 => Ctrl::ConsumerAck { id },
            3 => Ctrl::ConsumerGone { id },
            4 => Ctrl::ConsumerPaused { id },
            5 => match r.u32()? as i32 {
                0 => return Err(Error::InvalidValue),
                status => Ctrl::ConsumerRefused { id, status },
            },
            _ => return Err(Error::InvalidValue),
        };
        if r.at != b.len() {
            return Err(Error::InvalidValue);
        }
        Ok(c)
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let s = self.b.get(self.at..self.at + n).ok_or(Error::InvalidValue)?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
}

/// Checks the magic and returns the version (and a reader past it). Not our magic →
/// `INVALID_VALUE`.
fn open(b: &[u8]) -> Result<(u16, Reader<'_>)> {
    let mut r = Reader { b, at: 0 };
    if r.take(8).map_err(|_| Error::InvalidValue)? != MAGIC {
        return Err(Error::InvalidValue);
    }
    let v = r.u16()?;
    Ok((v, r))
}

/// The protocol version a packet claims (for a clear refusal of other versions).
pub fn version_of(b: &[u8]) -> Result<u16> {
    Ok(open(b)?.0)
}

impl Hello {
    /// Encodes the packet.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(28 + self.name.len());
        v.extend_from_slice(&MAGIC);
        v.extend_from_slice(&VERSION.to_le_bytes());
        v.push(self.kind as u8);
        v.push(0);
        v.extend_from_slice(&self.max_msg_size.to_le_bytes());
        v.extend_from_slice(&self.recv_queue_size.to_le_bytes());
        v.extend_from_slice(&self.function.domain().to_le_bytes());
        v.extend_from_slice(&[self.function.bus(), self.function.device(), self.function.function(), 0]);
        v.extend_from_slice(&(self.name.len() as u16).to_le_bytes());
        v.extend_from_slice(self.name.as_bytes());
        v
    }

    /// Decodes a packet: wrong magic, truncation, trailing bytes, a bad kind or name →
    /// `INVALID_VALUE`; another version → `UNSUPPORTED_VERSION`.
    pub fn decode(b: &[u8]) -> Result<Hello> {
        let (v, mut r) = open(b)?;
        if v != VERSION {
            return Err(Error::UnsupportedVersion);
        }
        let kind = match r.u8()? {
            1 => PeerKind::Client,
            2 => PeerKind::Endpoint,
            _ => return Err(Error::InvalidValue),
        };
        r.u8()?;
        let max_msg_size = r.u32()?;
        let recv_queue_size = r.u32()?;
        let domain = r.u16()?;
        let (bus, device, func) = (r.u8()?, r.u8()?, r.u8()?);
        r.u8()?;
        if device > 0x1f || func > 7 {
            return Err(Error::InvalidValue);
        }
        let function = PciAddr::new(domain, bus, device, func)?;
        let n = r.u16()? as usize;
        let name = std::str::from_utf8(r.take(n)?).map_err(|_| Error::InvalidValue)?.to_string();
        if r.at != b.len() || name.is_empty() || name.contains('\0') {
            return Err(Error::InvalidValue);
        }
        Ok(Hello { kind, max_msg_size, recv_queue_size, function, name })
    }
}

impl Reply {
    /// A refusal with `status`.
    pub fn refuse(status: Error) -> Reply {
        Reply {
            status: status.code(),
            conn_id: 0,
            server_recv_queue: 0,
            max_msg_size: 0,
            segment_len: 0,
            c2s_offset: 0,
            s2c_offset: 0,
        }
    }

    /// Encodes the packet.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(58);
        v.extend_from_slice(&MAGIC);
        v.extend_from_slice(&VERSION.to_le_bytes());
        v.extend_from_slice(&self.status.to_le_bytes());
        v.extend_from_slice(&self.conn_id.to_le_bytes());
        v.extend_from_slice(&self.server_recv_queue.to_le_bytes());
        v.extend_from_slice(&self.max_msg_size.to_le_bytes());
        v.extend_from_slice(&self.segment_len.to_le_bytes());
        v.extend_from_slice(&self.c2s_offset.to_le_bytes());
        v.extend_from_slice(&self.s2c_offset.to_le_bytes());
        v
    }

    /// Decodes a packet (see [`Hello::decode`] for the errors). A refusal from a server of
    /// another version still decodes as far as its status.
    pub fn decode(b: &[u8]) -> Result<Reply> {
        let (v, mut r) = open(b)?;
        let status = r.u32()? as i32;
        if v != VERSION {
            return Err(Error::UnsupportedVersion);
        }
        let reply = Reply {
            status,
            conn_id: r.u64()?,
            server_recv_queue: r.u32()?,
            max_msg_size: r.u32()?,
            segment_len: r.u64()?,
            c2s_offset: r.u64()?,
            s2c_offset: r.u64()?,
        };
        if r.at != b.len() {
            return Err(Error::InvalidValue);
        }
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_round_trip_and_garbage_is_refused() {
        let function = PciAddr::parse("b1:00.0").unwrap();
        let h = Hello {
            kind: PeerKind::Client,
            max_msg_size: 4080,
            recv_queue_size: 10,
            function,
            name: "svc".into(),
        };
        let b = h.encode();
        assert_eq!(Hello::decode(&b), Ok(h));
        for n in 0..b.len() {
            assert!(Hello::decode(&b[..n]).is_err(), "truncated at {n}");
        }
        let mut other = b.clone();
        other[8] = 9;
        assert_eq!(Hello::decode(&other), Err(Error::UnsupportedVersion));
        assert_eq!(version_of(&other), Ok(9));
        assert_eq!(Hello::decode(b"garbage garbage garbage"), Err(Error::InvalidValue));
        let mut trailing = b.clone();
        trailing.push(0);
        assert_eq!(Hello::decode(&trailing), Err(Error::InvalidValue));

        let r = Reply {
            status: 0,
            conn_id: 7,
            server_recv_queue: 10,
            max_msg_size: 4080,
            segment_len: 4096,
            c2s_offset: 64,
            s2c_offset: 1024,
        };
        assert_eq!(Reply::decode(&r.encode()), Ok(r));
        for c in [
            Ctrl::NewConsumer { id: 3, one_copy: true, mem_offset: 4096, mem_len: 1 << 20, slots: 2 },
            Ctrl::ConsumerAck { id: 3 },
            Ctrl::ConsumerGone { id: 3 },
            Ctrl::ConsumerRefused { id: 3, status: Error::NoMemory.code() },
        ] {
            assert_eq!(Ctrl::decode(&c.encode()), Ok(c.clone()));
            let b = c.encode();
            assert_eq!(Ctrl::decode(&b[..b.len() - 1]), Err(Error::InvalidValue));
        }
        let refusal = Reply::refuse(Error::InvalidValue);
        assert_eq!(Reply::decode(&refusal.encode()).unwrap().status, Error::InvalidValue.code());
    }
}
