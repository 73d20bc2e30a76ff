//! Finding, checking and reading status pages.
//!
//! A page file `status-<pid>-<nonce>.page` is opened through the fabric directory's
//! descriptor without following links, and must be a regular file of this user,
//! [`PAGE_BYTES`] long. It is read twice ([`Snapshot::parse`] keeps the objects whose
//! identity was not being rewritten meanwhile), and its pid must be the one in its name.
//! Pid and start time are only what the page says, though, and any process of this user can
//! write a file: a page is a process's only when the process maps this very file (its
//! device and inode are among `/proc/<pid>/maps`, see [`doca_link::status::mapped_by`]).
//!
//! | the page                                                            | is listed as |
//! |---------------------------------------------------------------------|--------------|
//! | its pid runs, started when the page says, and maps it                | live         |
//! | its writer's lock is held ([`doca_link::status::writer_alive`]) and a process of this PID namespace maps it (a process of a nested namespace — a container started from here — wrote its own pid) | live, under the pid it has here |
//! | its writer's lock is held and no process visible here maps it        | elsewhere: a process of another PID namespace (a sibling container), not verifiable from here, never injected into (run `doca_emu` there) |
//! | its pid runs and started when the page says, but does not map it     | forged: never shown as that process nor injected into |
//! | otherwise                                                           | stale |

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::FileExt;

use doca_core::status::{process_start_time, Snapshot, PAGE_BYTES};
use doca_link::status::page_pid;
use rustix::fs::{Mode, OFlags};

/// What a page file turned out to be.
#[derive(Debug)]
pub enum Found {
    /// The page of a running process.
    Live(Box<Snapshot>),
    /// The page of a process that is gone (or whose pid a later process took).
    Stale(Box<Snapshot>),
    /// A page naming a live process that does not map it (written by someone else): what
    /// it claims, and why it is not that process's.
    Forged(Box<Snapshot>, String),
    /// The page of a live process of a PID namespace this one cannot see (its writer holds
    /// the page's lock; no process here maps it): what it says, unverified.
    Elsewhere(Box<Snapshot>),
    /// Not a readable page: why.
    Invalid(String),
    /// A file of another user (uid): not read.
    Foreign(u32),
}

/// One page file in the fabric directory.
#[derive(Debug)]
pub struct PageFile {
    /// Its name in the fabric directory.
    pub file: String,
    /// The pid its name carries.
    pub pid: u32,
    /// What it holds.
    pub found: Found,
}

/// Opens page `file` of the directory `dir` (read-only, or read-write for a mailbox) after
/// checking it belongs to this user and has a page's size.
pub fn open_page(dir: BorrowedFd<'_>, file: &str, write: bool) -> Result<File, Found> {
    let mode = if write { OFlags::RDWR } else { OFlags::RDONLY };
    let fd: OwnedFd = rustix::fs::openat(
        dir,
        file,
        mode | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
        Mode::empty(),
    )
    .map_err(|e| Found::Invalid(format!("cannot open: {e}")))?;
    let st = rustix::fs::fstat(&fd).map_err(|e| Found::Invalid(format!("fstat: {e}")))?;
    if st.st_uid != rustix::process::getuid().as_raw() {
        return Err(Found::Foreign(st.st_uid));
    }
    if !rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() {
        return Err(Found::Invalid("not a regular file".into()));
    }
    if st.st_size != PAGE_BYTES as i64 {
        return Err(Found::Invalid(format!("{} bytes, not {PAGE_BYTES}", st.st_size)));
    }
    Ok(File::from(fd))
}

/// Reads the page in `f` (twice, see the module docs).
pub fn read_page(f: &File) -> Result<Snapshot, String> {
    let mut a = vec![0u8; PAGE_BYTES];
    let mut b = vec![0u8; PAGE_BYTES];
    f.read_exact_at(&mut a, 0).map_err(|e| format!("read: {e}"))?;
    f.read_exact_at(&mut b, 0).map_err(|e| format!("read: {e}"))?;
    Snapshot::parse(&a, Some(&b)).map_err(|e| e.to_string())
}

/// Whether the writer of `snap` still runs.
pub fn is_alive(snap: &Snapshot) -> bool {
    process_start_time(snap.pid) == Some(snap.start_time)
}

/// Whether the page file `f` is the page process `pid` writes (it maps that file):
/// `Err(why)` when not, or when that cannot be checked.
pub fn is_mapped_by(pid: u32, f: &File) -> Result<(), String> {
    match doca_link::status::mapped_by(pid, f) {
        Some(true) => Ok(()),
        Some(false) => Err(format!("process {pid} does not map this file: someone else wrote it")),
        None => Err(format!("cannot read /proc/{pid}/maps to check that process {pid} maps this file")),
    }
}

/// Looks at page `file` of `dir`: what it is, and the pid of its writer as this process
/// sees it (the name's, or the pid here of a nested namespace's writer).
pub fn look(dir: BorrowedFd<'_>, file: &str, pid: u32) -> (Found, u32) {
    let f = match open_page(dir, file, false) {
        Ok(f) => f,
        Err(found) => return (found, pid),
    };
    let found = match read_page(&f) {
        Err(why) => Found::Invalid(why),
        Ok(snap) if snap.pid != pid => {
            Found::Invalid(format!("written by pid {}, named for {pid}", snap.pid))
        }
        Ok(snap) if snap.uid != rustix::process::getuid().as_raw() => Found::Foreign(snap.uid),
        Ok(snap) if is_alive(&snap) && is_mapped_by(pid, &f).is_ok() => Found::Live(Box::new(snap)),
        Ok(mut snap) if doca_link::status::writer_alive(&f) => match doca_link::status::mapper(&f) {
            Some(here) => {
                snap.pid = here;
                return (Found::Live(Box::new(snap)), here);
            }
            None if is_alive(&snap) => {
                let why = is_mapped_by(pid, &f).err().unwrap_or_default();
                Found::Forged(Box::new(snap), why)
            }
            None => Found::Elsewhere(Box::new(snap)),
        },
        Ok(snap) if is_alive(&snap) => {
            Found::Forged(Box::new(snap), is_mapped_by(pid, &f).err().unwrap_or_default())
        }
        Ok(snap) => Found::Stale(Box::new(snap)),
    };
    (found, pid)
}

/// Every page file in the fabric directory `dir`, by pid.
pub fn scan(dir: &impl AsFd) -> std::io::Result<Vec<PageFile>> {
    let mut names: Vec<(u32, String)> = Vec::new();
    // A new open of the directory (its own position), bounded by the directory's size; a
    // name that is not a page is skipped.
    for entry in rustix::fs::Dir::read_from(dir.as_fd())? {
        let entry = entry?;
        let Ok(name) = entry.file_name().to_str() else { continue };
        if let Some(pid) = page_pid(name) {
            names.push((pid, name.to_string()));
        }
    }
    names.sort();
    Ok(names
        .into_iter()
        .map(|(pid, file)| {
            let (found, pid) = look(dir.as_fd(), &file, pid);
            PageFile { found, file, pid }
        })
        .collect())
}
