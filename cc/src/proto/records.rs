//! The fast path's ring records, without I/O. A consumer owns a segment with two rings: the
//! **post ring** (consumer → producer side: [`Post`], "buffer at offset O with R free bytes,
//! token T") and the **completion ring** (producer side → consumer: [`Done`], "token T got L
//! bytes from producer P, immediate data …").

use super::layout::ring_bytes_checked;

/// Post record: token, offset, room.
pub const POST_LEN: usize = 24;
/// Largest immediate data a send carries (the `cc.max_imm_data_len` default and ceiling).
pub const IMM_MAX: usize = 32;

/// Completion record: token, len, producer, status, imm_len, imm — with its ring header, one
/// cache line.
pub const DONE_LEN: usize = 8 + 4 + 4 + 4 + 4 + IMM_MAX;

/// Slots of each of a consumer's rings with `slots` posts in flight at most: twice as many,
/// so that the writer of a ring that is always full (every buffer posted) does not read the
/// reader's position — a line the other core just wrote — at every record, only once per
/// `slots` records.
pub fn ring_slots(slots: u32) -> u32 {
    slots.saturating_mul(2)
}

/// Bytes of a consumer's segment with `slots` posts in flight at most, and where its
/// completion ring starts; `None` when that does not fit in `usize` (a peer's count).
pub fn segment_len(slots: u32) -> Option<(usize, usize)> {
    let post = ring_bytes_checked(ring_slots(slots), POST_LEN)?;
    Some((post.checked_add(ring_bytes_checked(ring_slots(slots), DONE_LEN)?)?, post))
}

/// A posted buffer.
#[derive(Clone, Copy, Debug)]
pub struct Post {
    /// The posting task's id (`TaskId::to_bits`), echoed in its completion.
    pub token: u64,
    /// Where the free room starts in the consumer's memory.
    pub offset: u64,
    /// Free bytes there.
    pub room: u64,
}

impl Post {
    /// Encodes the record into a slot.
    pub fn write(&self, b: &mut [u8]) {
        b[..8].copy_from_slice(&self.token.to_le_bytes());
        b[8..16].copy_from_slice(&self.offset.to_le_bytes());
        b[16..24].copy_from_slice(&self.room.to_le_bytes());
    }

    /// Decodes a record (`None` when too short).
    pub fn read(b: &[u8]) -> Option<Post> {
        let u = |i: usize| b.get(i..i + 8).map(|s| u64::from_le_bytes(s.try_into().expect("8 bytes")));
        Some(Post { token: u(0)?, offset: u(8)?, room: u(16)? })
    }
}

/// A filled (or failed) buffer.
#[derive(Clone, Copy, Debug)]
pub struct Done {
    /// The token of the post it fills.
    pub token: u64,
    /// Bytes written (a fast-path buffer is at most `u32::MAX` bytes).
    pub len: u32,
    /// The producer's id.
    pub producer: u32,
    /// A DOCA code (0: success).
    pub status: i32,
    /// Bytes of immediate data.
    pub imm_len: u32,
    /// The immediate data.
    pub imm: [u8; IMM_MAX],
}

impl Done {
    /// Encodes the record into a slot.
    pub fn write(&self, b: &mut [u8]) {
        b[..8].copy_from_slice(&self.token.to_le_bytes());
        b[8..12].copy_from_slice(&self.len.to_le_bytes());
        b[12..16].copy_from_slice(&self.producer.to_le_bytes());
        b[16..20].copy_from_slice(&self.status.to_le_bytes());
        b[20..24].copy_from_slice(&self.imm_len.to_le_bytes());
        b[24..24 + IMM_MAX].copy_from_slice(&self.imm);
    }

    /// Decodes a record (`None` when malformed).
    pub fn read(b: &[u8]) -> Option<Done> {
        if b.len() != DONE_LEN {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let imm_len = u32_at(20);
        if imm_len as usize > IMM_MAX {
            return None;
        }
        Some(Done {
            token: u64_at(0),
            len: u32_at(8),
            producer: u32_at(12),
            status: u32_at(16) as i32,
            imm_len,
            imm: b[24..24 + IMM_MAX].try_into().expect("IMM_MAX bytes"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_bad_ones_are_refused() {
        let mut b = [0u8; POST_LEN];
        let p = Post { token: 1, offset: 2, room: 3 };
        p.write(&mut b);
        let q = Post::read(&b).unwrap();
        assert_eq!((q.token, q.offset, q.room), (1, 2, 3));
        assert!(Post::read(&b[..POST_LEN - 1]).is_none());
        let mut b = [0u8; DONE_LEN];
        let d = Done { token: 9, len: 5, producer: 7, status: 0, imm_len: 3, imm: [1; IMM_MAX] };
        d.write(&mut b);
        assert_eq!(Done::read(&b).map(|d| (d.token, d.len, d.producer, d.imm_len)), Some((9, 5, 7, 3)));
        b[20] = IMM_MAX as u8 + 1;
        assert!(Done::read(&b).is_none(), "more immediate data than a record holds");
        assert!(Done::read(&b[..DONE_LEN - 1]).is_none());
    }

    #[test]
    fn a_completion_with_its_header_is_one_cache_line() {
        use super::super::layout::{LINE, SLOT_HEADER};
        assert_eq!(DONE_LEN + SLOT_HEADER, LINE);
    }
}
