//! The pidfd of the process at the other end of a Unix socket (`SO_PEERPIDFD`, Linux 6.5 and
//! later): the process that connected, even if it is gone and its pid reused since. rustix
//! does not wrap this option, hence the one `getsockopt` here.

#![allow(unsafe_code)]

use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `SO_PEERPIDFD` on the architectures where it has the generic value (elsewhere the caller
/// opens a pidfd from the pid).
const SO_PEERPIDFD: Option<libc::c_int> = if cfg!(any(
    target_arch = "x86_64",
    target_arch = "x86",
    target_arch = "aarch64",
    target_arch = "arm",
    target_arch = "riscv64",
    target_arch = "loongarch64"
)) {
    Some(77)
} else {
    None
};

/// Whether the last failed call ran out of descriptors (`EMFILE`, `ENFILE`).
pub(crate) fn out_of_descriptors() -> bool {
    matches!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// The peer's pidfd (close-on-exec, as every pidfd), or `None` where the kernel (or this
/// architecture's build) does not offer it or no descriptor is left (then
/// `out_of_descriptors` says so, right after the call).
pub fn peer_pidfd(sock: BorrowedFd<'_>) -> Option<OwnedFd> {
    let option = SO_PEERPIDFD?;
    let mut fd: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `fd` and `len` are live locals of the sizes announced; the kernel writes at most
    // `len` bytes into `fd` and the new length into `len`.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&mut fd as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r != 0 || fd < 0 || len as usize != std::mem::size_of::<libc::c_int>() {
        return None;
    }
    // SAFETY: on success the kernel installed `fd` as a new descriptor of this process, owned
    // by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The uid and pid in the credentials of `sock`'s peer (`SO_PEERCRED`). The pid is 0 when
/// the peer lives in a PID namespace this process cannot see (rustix refuses that case,
/// hence this call).
pub fn peer_cred(sock: BorrowedFd<'_>) -> std::io::Result<(u32, i32)> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` and `len` are live locals of the sizes announced; the kernel writes at
    // most `len` bytes into `cred` and the new length into `len`.
    let r = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((cred.uid, cred.pid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    /// Both ends of a socket pair are this process: its pidfd names this process (where the
    /// kernel has the option; older kernels give none, and the caller falls back).
    #[test]
    fn the_pidfd_of_a_socket_pair_names_this_process() {
        let (a, _b) = crate::socketpair().unwrap();
        let Some(fd) = peer_pidfd(a.as_fd()) else { return };
        let me = std::process::id() as i32;
        let theirs = crate::budget::PeerId::from_pidfd(&fd, me).unwrap();
        assert_eq!(theirs, crate::budget::PeerId::of_pid(me).unwrap());
    }
}
