//! Files a peer sent, waiting to be closed behind closing threads that are all stuck (a peer
//! holding the locks of as many pipes), take none of this process's descriptors beyond a
//! cap, and are all closed once the locks go. Its own test process: the closing threads are
//! the process's, and this test holds every one of them up for a while.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use doca_link::discard::{discard, LockedPipe, MAX_CLOSERS, QUEUE_CAP, STUCK};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// Whether the read end of the pipe whose write end is `w` is closed.
fn reader_gone(w: &OwnedFd) -> bool {
    matches!(rustix::io::write(w, b"x"), Err(rustix::io::Errno::PIPE))
}

#[test]
fn files_waiting_behind_stuck_closes_take_no_descriptors_beyond_the_cap() {
    // SIGPIPE would end the test at the first write to a pipe with no reader.
    // SAFETY: ignoring a signal, before any other thread of this test writes to a pipe.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    // Every closing thread stuck: each on the last file of a pipe whose lock is held.
    let mut locked: Vec<LockedPipe> = (0..MAX_CLOSERS).map(|_| LockedPipe::new(1).unwrap()).collect();
    for p in &mut locked {
        discard(p.files.pop().unwrap());
        std::thread::sleep(STUCK + STUCK / 2);
    }
    // Files nobody else holds: the read ends of pipes whose write ends the test keeps.
    const FILES: usize = 2000;
    let before = open_fds();
    let mut writers = Vec::with_capacity(FILES);
    for _ in 0..FILES {
        let (r, w) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)
                .unwrap();
        writers.push(w);
        discard(r);
    }
    // (The two sockets files in flight wait on are the process's own, made meanwhile.)
    let held = open_fds() - before - FILES;
    assert!(held <= QUEUE_CAP + 2, "{held} discarded files held open (cap {QUEUE_CAP})");
    assert!(writers.iter().all(|w| !reader_gone(w)), "a file was closed while every closer was stuck");
    // The locks go: every file is closed, and the descriptors with them.
    for mut p in locked {
        p.release();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while !writers.iter().all(reader_gone) {
        assert!(Instant::now() < deadline, "files left unclosed after the locks went");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(open_fds() <= before + FILES + 2, "descriptors left open");
}
