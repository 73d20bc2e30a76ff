//! Shared memory files (memfd) as both processes of a link must see them: created sealed
//! against shrinking and growing, and checked for those seals when received. A peer can
//! then neither truncate a segment under its other side (which would turn the other side's
//! next access into `SIGBUS`) nor hand over one it could truncate later.

use std::os::fd::{AsFd, OwnedFd};

use crate::error::{fail, peer_fail};
use crate::error::{Error, Result};
use rustix::fs::{MemfdFlags, SealFlags};
use rustix::io::Errno;

/// The seals every shared segment carries: its size is fixed for good.
const SEALS: SealFlags = SealFlags::SHRINK.union(SealFlags::GROW).union(SealFlags::SEAL);

/// A new zero-filled memfd of `len` bytes, sealed: its size can never change again (the
/// contents stay writable). `NO_MEMORY` when the system refuses the size.
pub fn create_sealed(name: &str, len: usize) -> Result<OwnedFd> {
    let fd = rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)
        .map_err(|e| fail!(Error::OperatingSystem, "memfd_create: {e}"))?;
    let size = u64::try_from(len).map_err(|_| fail!(Error::NoMemory, "shared memory of {len} bytes"))?;
    rustix::fs::ftruncate(&fd, size).map_err(|e| match e {
        Errno::FBIG | Errno::NOSPC | Errno::NOMEM | Errno::INVAL => {
            fail!(Error::NoMemory, "shared memory of {len} bytes: {e}")
        }
        e => fail!(Error::OperatingSystem, "ftruncate {len}: {e}"),
    })?;
    rustix::fs::fcntl_add_seals(&fd, SEALS)
        .map_err(|e| fail!(Error::OperatingSystem, "sealing a memfd: {e}"))?;
    Ok(fd)
}

/// `statfs` type of tmpfs and shmem, where ordinary memfds live.
const TMPFS_MAGIC: u64 = 0x0102_1994;

/// Checks a memfd received from another process: it must be sealed against shrinking and
/// growing, be ordinary memory (not huge pages), and hold `expected` bytes when given. Returns its size. Anything else (not a
/// memfd, unsealed, another size) → `INVALID_VALUE` (the reason at debug level: the caller
/// logs).
pub fn check_sealed(fd: impl AsFd, expected: Option<usize>) -> Result<usize> {
    let seals = rustix::fs::fcntl_get_seals(&fd)
        .map_err(|e| peer_fail!(Error::InvalidValue, "shared memory from the peer is not a memfd ({e})"))?;
    if !seals.contains(SealFlags::SHRINK | SealFlags::GROW) {
        return Err(peer_fail!(
            Error::InvalidValue,
            "shared memory from the peer is not sealed against resizing (seals {seals:?}): refused"
        ));
    }
    // Ordinary (shmem) pages only: a hole the peer punches in them reads as zeros, where a
    // hugetlbfs one could need a huge page the pool no longer has — a SIGBUS here.
    let fs = rustix::fs::fstatfs(&fd).map_err(|e| peer_fail!(Error::OperatingSystem, "fstatfs: {e}"))?;
    if fs.f_type as u64 != TMPFS_MAGIC {
        return Err(peer_fail!(
            Error::InvalidValue,
            "shared memory from the peer is not ordinary memfd memory (file system {:#x}): refused",
            fs.f_type
        ));
    }
    let st = rustix::fs::fstat(&fd).map_err(|e| peer_fail!(Error::OperatingSystem, "fstat: {e}"))?;
    let size =
        usize::try_from(st.st_size).map_err(|_| peer_fail!(Error::InvalidValue, "negative memfd size"))?;
    if let Some(want) = expected {
        if size != want {
            return Err(peer_fail!(
                Error::InvalidValue,
                "shared memory from the peer is {size} bytes, expected {want}"
            ));
        }
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_memfds_cannot_be_resized_and_unsealed_ones_are_refused() {
        let fd = create_sealed("seal-test", 8192).unwrap();
        assert_eq!(rustix::fs::ftruncate(&fd, 0), Err(Errno::PERM), "cannot shrink");
        assert_eq!(rustix::fs::ftruncate(&fd, 1 << 20), Err(Errno::PERM), "cannot grow");
        assert_eq!(check_sealed(&fd, Some(8192)), Ok(8192));
        assert_eq!(check_sealed(&fd, Some(4096)), Err(Error::InvalidValue), "another size");

        let open = rustix::fs::memfd_create("unsealed", MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&open, 8192).unwrap();
        assert_eq!(check_sealed(&open, None), Err(Error::InvalidValue), "resizable");
        let (pipe, _w) = rustix::pipe::pipe().unwrap();
        assert_eq!(check_sealed(&pipe, None), Err(Error::InvalidValue), "not a memfd");
        assert_eq!(create_sealed("huge", usize::MAX).unwrap_err(), Error::NoMemory);
        // Sealed huge pages (where the kernel offers them): refused.
        let flags = MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING | MemfdFlags::HUGETLB;
        if let Ok(huge) = rustix::fs::memfd_create("huge-test", flags) {
            if rustix::fs::ftruncate(&huge, 2 << 20).is_ok()
                && rustix::fs::fcntl_add_seals(&huge, SEALS).is_ok()
            {
                assert_eq!(check_sealed(&huge, None), Err(Error::InvalidValue), "huge pages");
            }
        }
    }
}
