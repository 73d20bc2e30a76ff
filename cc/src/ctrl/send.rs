//! `doca_cc_task_send`: a control-path message, copied into the task at allocation.

use crate::conn::Connection;

/// The library part of a send task: the connection and the message. It keeps both after
/// completion, so a completed task can be submitted again as it is.
#[derive(Default)]
pub struct SendPayload {
    pub(crate) conn: Option<Connection>,
    pub(crate) len: usize,
    pub(crate) buf: Box<[u8]>,
}

impl SendPayload {
    /// A slot's payload: a buffer of `max_msg_size` bytes, allocated once per start.
    pub(crate) fn with_capacity(max_msg_size: usize) -> SendPayload {
        SendPayload { conn: None, len: 0, buf: vec![0u8; max_msg_size].into_boxed_slice() }
    }

    /// The message.
    pub(crate) fn msg(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// Where the connection sits in its owner's table, and which connection it is.
    pub(crate) fn target(&self) -> Option<(usize, *const ())> {
        self.conn.as_ref().map(|c| (c.key(), std::sync::Arc::as_ptr(&c.inner).cast()))
    }
}

doca_core::task_handle! {
/// `struct doca_cc_task_send`: a control-path message to send. Dropping it frees it; a
/// completed task may be submitted again (from its completion callback too).
    pub struct SendTask(SendPayload);
}

impl SendTask {
    /// The connection the message goes to.
    pub fn connection(&self) -> Option<Connection> {
        self.0.with_payload(|p| p.conn.clone())
    }

    /// The message length.
    pub fn msg_len(&self) -> usize {
        self.0.with_payload(|p| p.len)
    }
}
