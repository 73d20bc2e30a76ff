//! This process's status file in the fabric directory: made once (core asks at the first
//! engine or device, see `doca_core::status::publish`), mapped shared, removed at exit.
//! `doca_core::status` has the layout of the page and writes it; [`Page`] is here because
//! the mapping is made here.
//!
//! The file is `status-<pid>.page`, mode 0600, in the fabric directory (closed to other
//! users, see [`super::FabricDir`]). A file of that name already there belongs to a dead
//! process whose pid was reused (or to this process before an `exec`): it is replaced.
//! A process killed by a signal leaves its file: `doca_emu ls` tells it apart by the pid and
//! start time written in it, and `doca_emu clean` removes it.
//!
//! [`mapped_by`] ties a page to its writer for tools such as `doca_emu`: a process's page
//! is the file that process maps, whatever the words in it say.
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

/// The file name of process `pid`'s page.
pub fn page_file(pid: u32) -> String {
    format!("{PAGE_PREFIX}{pid}{PAGE_SUFFIX}")
}

/// The pid a page file name stands for.
pub fn page_pid(file: &str) -> Option<u32> {
    file.strip_prefix(PAGE_PREFIX)?.strip_suffix(PAGE_SUFFIX)?.parse().ok().filter(|&p| p > 0)
}

/// What the exit handler removes: the fabric directory and the page's name in it.
static MADE: OnceLock<(OwnedFd, CString)> = OnceLock::new();

/// Makes this process's status file (`status-<pid>.page`, replacing one a dead process left
/// under this pid), maps it and hands the zeroed page to `attach`: when that takes it, the
/// file is removed at exit; when not (a page was attached already), it is removed at once.
pub fn create(attach: impl FnOnce(&'static Page) -> bool) -> Result<()> {
    let os = |what: &str, e: rustix::io::Errno| fail!(Error::OperatingSystem, "status page: {what}: {e}");
    let dir = FabricDir::open()?;
    let pid = std::process::id();
    let file = page_file(pid);
    let _ = rustix::fs::unlinkat(&dir.fd, file.as_str(), AtFlags::empty());
    let fd = rustix::fs::openat(
        &dir.fd,
        file.as_str(),
        OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::RUSR | Mode::WUSR,
    )
    .map_err(|e| os("create", e))?;
    rustix::fs::fchmod(&fd, Mode::RUSR | Mode::WUSR).map_err(|e| os("fchmod", e))?;
    rustix::fs::ftruncate(&fd, PAGE_BYTES as u64).map_err(|e| os("ftruncate", e))?;
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
        assert_eq!(page_pid(&page_file(1234)), Some(1234));
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
