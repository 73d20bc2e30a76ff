//! The layout of a message ring in shared memory, and the kinds of message its slots carry:
//! sizes both sides compute from the handshake's numbers (so a peer that lies about them is
//! caught), without I/O. `doca_link::ring` maps and uses the rings.
//!
//! A ring occupies [`RING_CTRL`] bytes of control lines, then a record area of `nslots + 1`
//! slots of [`slot_size`] bytes, where records (`len: u32`, `kind: u32`, payload) are packed.

pub use doca_link::ring::{ring_bytes, ring_bytes_checked, slot_size, LINE, RING_CTRL, SLOT_HEADER};

/// Slot kind: a 2024 control-path message.
pub const KIND_MSG: u32 = 1;
/// Slot kind: a consumer's posted receive buffer ([`super::records::Post`]).
pub const KIND_POST: u32 = 2;
/// Slot kind: a filled buffer ([`super::records::Done`]).
pub const KIND_DONE: u32 = 3;
/// Slot kind: a legacy endpoint message (its send stamp, then the message).
pub const KIND_EP_MSG: u32 = 4;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_whole_lines_and_overflow_is_caught() {
        assert_eq!(slot_size(0), LINE);
        assert_eq!(slot_size(LINE - SLOT_HEADER + 1), 2 * LINE);
        assert_eq!(ring_bytes(4, 100), RING_CTRL + 5 * 2 * LINE, "one slot more than the queue: the wrap");
        assert_eq!(ring_bytes_checked(4, 100), Some(ring_bytes(4, 100)));
        assert_eq!(ring_bytes_checked(u32::MAX, usize::MAX - 4), None);
    }
}
