//! The fast path: producers ([`Producer`]) write straight into the buffers that the peer's
//! consumers ([`Consumer`]) posted, the analogue of the DMA write on real hardware.
//!
//! A consumer owns a small segment with two rings (records in [`crate::proto::records`]):
//! the post ring carries its posted buffers to the producer side, the completion ring
//! carries "filled" back. The producer side writes the payload straight into the consumer's
//! memory, which it maps (the consumer's own shared memory: one copy; or a shared shadow of
//! it that the consumer copies from: the documented slower fallback). Registration — how the
//! producer side learns of a consumer — runs over the connection's socket and is kept per
//! connection (see `conn::registry`).

mod consumer;
mod producer;

pub use consumer::{Consumer, PostRecvPayload, PostRecvTask};
pub use producer::{Producer, ProducerSendPayload, ProducerSendTask};

/// Largest immediate data a send carries (the `cc.max_imm_data_len` default and ceiling).
pub use crate::proto::records::IMM_MAX;

/// The immediate data of a fast-path receive, held inline (reading it allocates nothing):
/// derefs to `&[u8]` (`doca_comch_consumer_task_post_recv_get_imm_data` and, as `len()`,
/// `_get_imm_data_len`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct ImmData {
    bytes: [u8; IMM_MAX],
    len: u8,
}

impl ImmData {
    pub(crate) fn new(bytes: [u8; IMM_MAX], len: usize) -> ImmData {
        ImmData { bytes, len: len.min(IMM_MAX) as u8 }
    }
}

impl std::ops::Deref for ImmData {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
}

impl std::fmt::Debug for ImmData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}
