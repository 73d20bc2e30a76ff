//! This process's status file in the fabric directory: made once (core asks at the first
//! engine or device, see `doca_core::status::publish`), mapped shared, removed at exit.
//! `doca_core::status` has the layout of the page and writes it; [`Page`] is here because
//! the mapping is made here.
//!
//! The file is `status-<pid>-<nonce>.page`, mode 0600, in the fabric directory (closed to
//! other users, see [`super::FabricDir`]): the nonce is random per process, so that two
//! processes with one pid — in two PID namespaces sharing the fabric directory, as two
//! containers do — never take each other's file. It is made under a hidden name, locked
//! (a POSIX record lock on the whole file, held by the writer for its whole life through a
//! descriptor it never closes) and only then renamed into place: a page whose lock is free
//! has no writer any more ([`writer_alive`]), whatever PID namespace the reader is in. The
//! file is removed at exit, and when SIGINT, SIGTERM or SIGHUP stops the process
//! ([`crate::cleanup`]); a process killed by SIGKILL (or another signal) leaves its file:
//! `doca_emu ls` counts it as stale and `doca_emu clean` removes it.
//!
//! [`mapped_by`] and [`mapper`] tie a page to its writer for tools such as `doca_emu`: a
//! process's page is the file that process maps, whatever the words in it say.
//!
//! One of the few modules with `unsafe`: the mapping is made here and viewed as a page of
//! atomics for the rest of the process's life.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::OnceLock;

use std::sync::atomic::AtomicU64;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::mm::{MapFlags, ProtFlags};

use crate::error::fail;
use crate::{Error, FabricDir, Result};

/// Size of a page in bytes.
pub const PAGE_BYTES: usize = 16384;
/// Size of a page in words.
pub const PAGE_WORDS: usize = PAGE_BYTES / 8;

/// A status page: [`PAGE_WORDS`] words (the layout is in `doca_core::status`).
#[repr(C, align(4096))]
pub struct Page(pub [AtomicU64; PAGE_WORDS]);

impl Page {
    /// A zeroed page in ordinary memory.
    pub const fn new() -> Page {
        Page([const { AtomicU64::new(0) }; PAGE_WORDS])
    }
}

impl Default for Page {
    fn default() -> Self {
        Page::new()
    }
}

/// File names of status pages start with this.
pub const PAGE_PREFIX: &str = "status-";
/// File names of status pages end with this.
pub const PAGE_SUFFIX: &str = ".page";

/// The file name of a page of process `pid` (as it sees itself) with `nonce`.
pub fn page_file(pid: u32, nonce: u64) -> String {
    format!("{PAGE_PREFIX}{pid}-{nonce:016x}{PAGE_SUFFIX}")
}

/// The pid a page file name stands for (`status-<pid>-<nonce>.page`, or an older
/// `status-<pid>.page`).
pub fn page_pid(file: &str) -> Option<u32> {
    let body = file.strip_prefix(PAGE_PREFIX)?.strip_suffix(PAGE_SUFFIX)?;
    let pid = match body.split_once('-') {
        Some((pid, nonce)) if nonce.len() == 16 && nonce.bytes().all(|b| b.is_ascii_hexdigit()) => pid,
        Some(_) => return None,
        None => body,
    };
    pid.parse().ok().filter(|&p| p > 0)
}

/// What the exit handler removes: the fabric directory and the page's name in it.
static MADE: OnceLock<(OwnedFd, CString)> = OnceLock::new();
/// The page's file, open (and locked) for the life of the process.
static HELD: OnceLock<OwnedFd> = OnceLock::new();
/// The page's name, removed if a signal stops the process (see [`crate::cleanup`]).
static ON_SIGNAL: OnceLock<crate::cleanup::Registered> = OnceLock::new();

/// Makes this process's status file (`status-<pid>-<nonce>.page`, locked, see the module
/// docs), maps it and hands the zeroed page to `attach`: when that takes it, the file is
/// removed at exit; when not (a page was attached already), it is removed at once.
pub fn create(attach: impl FnOnce(&'static Page) -> bool) -> Result<()> {
    let os = |what: &str, e: rustix::io::Errno| fail!(Error::OperatingSystem, "status page: {what}: {e}");
    let dir = FabricDir::open()?;
    let pid = std::process::id();
    let nonce = u64::from_le_bytes(crate::rendezvous::new_token()?[..8].try_into().expect("8 bytes"));
    let file = page_file(pid, nonce);
    let hidden = format!(".{file}.new");
    let fd = rustix::fs::openat(
        &dir.fd,
        hidden.as_str(),
        OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::RUSR | Mode::WUSR,
    )
    .map_err(|e| os("create", e))?;
    let placed = (|| {
        rustix::fs::fchmod(&fd, Mode::RUSR | Mode::WUSR).map_err(|e| os("fchmod", e))?;
        rustix::fs::ftruncate(&fd, PAGE_BYTES as u64).map_err(|e| os("ftruncate", e))?;
        rustix::fs::fcntl_lock(&fd, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .map_err(|e| os("lock", e))?;
        rustix::fs::renameat(&dir.fd, hidden.as_str(), &dir.fd, file.as_str()).map_err(|e| os("rename", e))
    })();
    if let Err(e) = placed {
        let _ = rustix::fs::unlinkat(&dir.fd, hidden.as_str(), AtFlags::empty());
        return Err(e);
    }
    const { assert!(std::mem::size_of::<Page>() == PAGE_BYTES) };
    // SAFETY: a new shared mapping of a file we just made; it affects no existing memory.
    let p = unsafe {
        rustix::mm::mmap(
            std::ptr::null_mut(),
            PAGE_BYTES,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::SHARED,
            &fd,
            0,
        )
    }
    .map_err(|e| os("mmap", e))?;
    // The mapping is PAGE_BYTES long, page-aligned (Page asks for 4096) and zeroed (a new
    // file), and never unmapped. A Page is only atomics, valid for any bits and for writes by
    // other processes (the injector's mailbox). Only a same-user process that truncates the
    // file could make an access fault; that user can end this process anyway.
    // SAFETY: as above, a `'static` reference to this mapping is sound.
    let page: &'static Page = unsafe { &*p.cast::<Page>() };
    if !attach(page) {
        let _ = rustix::fs::unlinkat(&dir.fd, file.as_str(), AtFlags::empty());
        return Ok(());
    }
    // Held open for the life of the process: its lock says the writer lives.
    let _ = HELD.set(fd);
    let _ = ON_SIGNAL.set(crate::cleanup::register(&dir.fd, &file));
    let name = CString::new(file).map_err(|_| fail!(Error::InvalidValue, "status page name"))?;
    if MADE.set((dir.fd, name)).is_ok() {
        // SAFETY: registers a plain function without arguments; it runs once at exit.
        unsafe { libc::atexit(remove_at_exit) };
    }
    Ok(())
}

/// Whether process `pid` maps the file `file` (a page file it would write), by the file's
/// device and inode among the lines of `/proc/<pid>/maps`: a page only its writer's mapping
/// makes is tied to that process, where pid and start time in the page could be written by
/// anyone. `None` when the process's mappings cannot be read (gone, or not dumpable).
pub fn mapped_by(pid: u32, file: impl AsFd) -> Option<bool> {
    let st = rustix::fs::fstat(file).ok()?;
    let (major, minor) = (rustix::fs::major(st.st_dev), rustix::fs::minor(st.st_dev));
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    Some(maps.lines().any(|line| maps_line_is(line, major, minor, st.st_ino as u64)))
}

/// The process of this PID namespace that maps `file` (a page file), found among every
/// `/proc/<pid>/maps` this process may read: how a tool finds the writer of a page that a
/// process of a nested PID namespace wrote under its own pid. `None`: no process visible
/// here maps it.
pub fn mapper(file: impl AsFd) -> Option<u32> {
    let st = rustix::fs::fstat(file).ok()?;
    let (major, minor) = (rustix::fs::major(st.st_dev), rustix::fs::minor(st.st_dev));
    for entry in std::fs::read_dir("/proc").ok()? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else { continue };
        if maps.lines().any(|line| maps_line_is(line, major, minor, st.st_ino as u64)) {
            return Some(pid);
        }
    }
    None
}

/// Whether the process that made page `file` still runs: its lock is held (see the module
/// docs). Works whatever PID namespace the writer and the caller are in, on a file opened
/// for reading only (`F_GETLK` asks, takes nothing).
pub fn writer_alive(file: impl AsFd) -> bool {
    // SAFETY: an all-zero `flock` is a valid value of this plain C struct.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = libc::F_WRLCK as libc::c_short;
    lock.l_whence = libc::SEEK_SET as libc::c_short;
    // SAFETY: `lock` is a live, writable `flock`; the kernel writes the conflicting lock (or
    // F_UNLCK) into it.
    let r = unsafe { libc::fcntl(file.as_fd().as_raw_fd(), libc::F_GETLK, &mut lock as *mut libc::flock) };
    r == 0 && lock.l_type != libc::F_UNLCK as libc::c_short
}

/// Whether one line of `/proc/<pid>/maps` (`start-end perms offset major:minor inode path`)
/// maps inode `ino` of device `major:minor`.
fn maps_line_is(line: &str, major: u32, minor: u32, ino: u64) -> bool {
    let mut fields = line.split_ascii_whitespace().skip(3);
    let (Some(dev), Some(inode)) = (fields.next(), fields.next()) else { return false };
    let Some((ma, mi)) = dev.split_once(':') else { return false };
    u32::from_str_radix(ma, 16) == Ok(major)
        && u32::from_str_radix(mi, 16) == Ok(minor)
        && inode.parse::<u64>() == Ok(ino)
}

/// At exit: the page goes (only the pid that made it removes it, not a forked child).
extern "C" fn remove_at_exit() {
    if let Some((dir, name)) = MADE.get() {
        let mine = name.to_str().ok().and_then(page_pid) == Some(std::process::id());
        if mine {
            // SAFETY: a directory descriptor we hold and a NUL-terminated name.
            unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_names_carry_the_pid() {
        assert_eq!(page_pid(&page_file(1234, 0xabc)), Some(1234));
        assert_eq!(page_pid("status-1234.page"), Some(1234), "the older form");
        assert_eq!(page_pid("status-1234-xyz.page"), None);
        assert_eq!(page_pid(".status-1234-0000000000000abc.page.new"), None, "not placed yet");
        assert_eq!(page_pid("status-0.page"), None);
        assert_eq!(page_pid("status-12x.page"), None);
        assert_eq!(page_pid("cc-b1000-1.sock"), None);
    }

    #[test]
    fn a_file_is_mapped_by_the_process_that_maps_it_only() {
        assert!(maps_line_is("7f00-7f04 rw-s 00000000 00:1a 4242 /run/x/status-1.page", 0, 0x1a, 4242));
        assert!(!maps_line_is("7f00-7f04 rw-s 00000000 00:1a 4243 /run/x/status-1.page", 0, 0x1a, 4242));
        assert!(!maps_line_is("7f00-7f04 rw-s 00000000 08:01 4242 /x", 0, 0x1a, 4242));
        assert!(!maps_line_is("garbage", 0, 0x1a, 4242));
        // This process maps its own executable, and no file it merely opened.
        let exe = std::fs::File::open("/proc/self/exe").unwrap();
        assert_eq!(mapped_by(std::process::id(), &exe), Some(true));
        let other = crate::memfd::create_sealed("not-mapped", 4096).unwrap();
        assert_eq!(mapped_by(std::process::id(), &other), Some(false));
    }
}
