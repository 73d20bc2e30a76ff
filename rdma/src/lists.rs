//! Buffer lists of RDMA tasks (`doca_buf_chain_list`): a send, send with immediate, write or
//! write with immediate gathers its local source list (at most `max_send_buf_list_len`
//! buffers, [`crate::Rdma::set_max_send_buf_list_len`]); a receive scatters into its
//! destination list (at most the receive list length,
//! [`crate::Rdma::set_recv_buf_list_len`]), a read and a remote sync event get or add into
//! theirs (at most `max_send_buf_list_len`, as DOCA's header says). Lengths are the sums of
//! the elements'; each element is checked as a local buffer of its own (its map on the
//! context's device). The peer's side of a read or write is one buffer: the remote key and
//! address of one region, as on the hardware.

use std::fmt;

use doca_buf::list::{self, Seg, Segs};
use doca_buf::Buf;
use doca_core::{bail, Error, Result};

use crate::RdmaOps;

impl RdmaOps {
    /// The local list headed by `head` within the send-side limit: its data (`room`
    /// false) or its free room, each element checked (`write`: it is written).
    pub(crate) fn send_side_list(&self, head: &Buf, what: &str, room: bool, write: bool) -> Result<Segs> {
        let max = self.cfg.get().max_send_buf_list_len;
        self.local_list(head, what, room, write, max, "doca_rdma_set_max_send_buf_list_len")
    }

    /// A receive's destination list within the receive list length: its free room.
    pub(crate) fn recv_list(&self, head: &Buf) -> Result<Segs> {
        let max = self.cfg.get().recv_buf_list_len;
        self.local_list(
            head,
            "receive destination",
            true,
            true,
            max,
            "doca_rdma_task_receive_set_dst_buf_list_len",
        )
    }

    fn local_list(
        &self,
        head: &Buf,
        what: &str,
        room: bool,
        write: bool,
        max: u32,
        limit: &str,
    ) -> Result<Segs> {
        let named = Named(what);
        let segs =
            if room { list::room(head, max, named, limit)? } else { list::data(head, max, named, limit)? };
        for s in segs.iter() {
            self.check_local(&s.buf, what, write)?;
        }
        Ok(segs)
    }

    /// The peer's buffer of a read (its data) or a write (its room): one buffer, not a list.
    pub(crate) fn remote_seg(&self, buf: &Buf, what: &str, room: bool) -> Result<Segs> {
        let s = buf.shape()?;
        if s.in_list {
            bail!(
                Error::InvalidValue,
                "rdma: the {what} (the peer's memory) is one buffer, not a list: a remote key names one region"
            );
        }
        let (at, len) = if room { (s.data_end(), s.room()) } else { (s.data, s.data_len) };
        Ok(Segs::One([Seg { buf: buf.clone(), at, len }]))
    }
}

/// A list's name in a log line (`rdma: the {what}`), written only when a line is.
#[derive(Clone, Copy)]
struct Named<'a>(&'a str);

impl fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rdma: the {}", self.0)
    }
}
