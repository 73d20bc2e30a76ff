//! `doca_cc_task_send`: a control-path message, copied into the task at allocation.

use crate::conn::Connection;

/// Messages up to this many bytes are kept in the task slot itself, beside its other fields:
/// many sends in flight then touch one array, not one heap block (and page) each.
const INLINE: usize = 64;

/// The library part of a send task: the connection and the message. It keeps both after
/// completion, so a completed task can be submitted again as it is.
pub struct SendPayload {
    pub(crate) conn: Option<Connection>,
    len: usize,
    inline: [u8; INLINE],
    buf: Box<[u8]>,
}

impl Default for SendPayload {
    fn default() -> Self {
        SendPayload { conn: None, len: 0, inline: [0; INLINE], buf: Box::default() }
    }
}

impl SendPayload {
    /// A slot's payload: room for `max_msg_size` bytes, allocated once per start.
    pub(crate) fn with_capacity(max_msg_size: usize) -> SendPayload {
        let heap = if max_msg_size > INLINE { max_msg_size } else { 0 };
        SendPayload { buf: vec![0u8; heap].into_boxed_slice(), ..SendPayload::default() }
    }

    /// Fills a free send task's payload with `msg` for `conn` (both checked by
    /// [`Side::check_send`](super::side::Side::check_send)); the connection's handle is
    /// cloned only when the slot last carried another one.
    pub(crate) fn fill(&mut self, conn: &Connection, msg: &[u8]) {
        self.set_msg(msg);
        if self.conn.as_ref() != Some(conn) {
            self.conn = Some(conn.clone());
        }
    }

    /// Takes `msg` as the message (it fits: the caller checked the maximum size).
    fn set_msg(&mut self, msg: &[u8]) {
        let room = if msg.len() <= INLINE { &mut self.inline[..] } else { &mut self.buf[..] };
        room[..msg.len()].copy_from_slice(msg);
        self.len = msg.len();
    }

    /// The message.
    pub(crate) fn msg(&self) -> &[u8] {
        if self.len <= INLINE {
            &self.inline[..self.len]
        } else {
            &self.buf[..self.len]
        }
    }

    /// The message's length.
    pub(crate) fn len(&self) -> usize {
        self.len
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
        self.0.with_payload(|p| p.len())
    }
}
