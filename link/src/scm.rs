//! One packet and the descriptors it carries (`SCM_RIGHTS`), sent or received without
//! blocking: the calls under `fabric`'s packets, `discard`'s draining of a
//! peer's sockets and its limbo. Each caller maps the `errno` to its own codes.
//!
//! A receive always has room for [`MAX_FDS`] descriptors: with less, the kernel would
//! release the rest in the receiving thread on its way back from `recvmsg`, and that release
//! can wait on whoever holds the file ([`crate::discard`]).

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};

/// The most descriptors one packet can carry (the kernel's `SCM_MAX_FD`).
pub const MAX_FDS: usize = 253;

/// Room for the control message of a packet carrying [`MAX_FDS`] descriptors.
type Room = [MaybeUninit<u8>; rustix::cmsg_space!(ScmRights(MAX_FDS))];

/// What one receive found.
pub(crate) struct Packet {
    /// Bytes copied into the buffer.
    pub(crate) len: usize,
    /// Whether the packet was longer than the buffer.
    pub(crate) truncated: bool,
    /// The descriptors it carried (no allocation when none).
    pub(crate) fds: Vec<OwnedFd>,
}

/// Sends `bytes` as one packet with `fds` attached (none: a plain send), without blocking
/// and without `SIGPIPE`: the bytes sent. More than [`MAX_FDS`] descriptors is `EINVAL`, as
/// the kernel says.
pub(crate) fn send(sock: BorrowedFd<'_>, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> rustix::io::Result<usize> {
    let mut room: Room = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut room);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(Errno::INVAL);
    }
    rustix::net::sendmsg(
        sock,
        &[IoSlice::new(bytes)],
        &mut control,
        SendFlags::NOSIGNAL | SendFlags::DONTWAIT,
    )
}

/// Receives one packet into `buf` without blocking, with room for every descriptor it
/// carries (close-on-exec).
pub(crate) fn recv(sock: BorrowedFd<'_>, buf: &mut [u8]) -> rustix::io::Result<Packet> {
    let mut room: Room = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut room);
    let msg = rustix::net::recvmsg(
        sock,
        &mut [IoSliceMut::new(buf)],
        &mut control,
        RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
    )?;
    let mut fds = Vec::new();
    for m in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = m {
            fds.extend(received);
        }
    }
    Ok(Packet { len: msg.bytes.min(buf.len()), truncated: msg.flags.contains(ReturnFlags::TRUNC), fds })
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;

    /// A packet carrying as many descriptors as the kernel allows arrives with all of them
    /// and its bytes; one more is refused before anything is sent.
    #[test]
    fn a_packet_carries_up_to_max_fds_descriptors() {
        let (a, b) = crate::fabric::socketpair().unwrap();
        let (r, _w) = rustix::pipe::pipe().unwrap();
        let many = vec![r.as_fd(); MAX_FDS];
        assert_eq!(send(a.as_fd(), b"full", &many), Ok(4));
        let mut buf = [0u8; 2];
        let got = recv(b.as_fd(), &mut buf).unwrap();
        assert_eq!((got.len, got.truncated, got.fds.len(), &buf), (2, true, MAX_FDS, b"fu"));
        let too_many = vec![r.as_fd(); MAX_FDS + 1];
        assert_eq!(send(a.as_fd(), b"x", &too_many), Err(Errno::INVAL));
        assert_eq!(recv(b.as_fd(), &mut buf).err(), Some(Errno::AGAIN));
    }
}
