//! Files a peer sent, waiting to be closed behind closing threads that are all stuck (a peer
//! holding the locks of as many pipes), take none of this process's descriptors beyond a
//! cap, and are all closed once the locks go. Its own test process: the closing threads are
//! the process's, and this test holds every one of them up for a while.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use doca_link::discard::{discard, stuck_closing_threads, LockedPipe, MAX_CLOSERS, QUEUE_CAP, STUCK};

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

/// Whether the read end of the pipe whose write end is `w` is closed.
fn reader_gone(w: &OwnedFd) -> bool {
    matches!(rustix::io::write(w, b"x"), Err(rustix::io::Errno::PIPE))
}

#[test]
fn files_waiting_behind_stuck_closes_take_no_descriptors_beyond_the_cap() {
    // Room for the test's pipes: the soft descriptor limit raised to the hard one.
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    if lim.maximum.is_some_and(|m| m < 8192) {
        eprintln!(
            "skipped: a descriptor limit of {:?} leaves no room for the test's 4 000 descriptors",
            lim.maximum
        );
        return;
    }
    let raised = rustix::process::Rlimit { current: lim.maximum, maximum: lim.maximum };
    rustix::process::setrlimit(rustix::process::Resource::Nofile, raised).unwrap();
    // SIGPIPE would end the test at the first write to a pipe with no reader.
    // SAFETY: ignoring a signal, before any other thread of this test writes to a pipe.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    // Every closing thread stuck: each on the last file of a pipe whose lock is held.
    let mut locked: Vec<LockedPipe> = (0..MAX_CLOSERS).map(|_| LockedPipe::new(1).unwrap()).collect();
    for (i, p) in locked.iter_mut().enumerate() {
        discard(p.files.pop().unwrap());
        let deadline = Instant::now() + Duration::from_secs(10);
        while stuck_closing_threads(std::process::id()) < i + 1 {
            assert!(Instant::now() < deadline, "closing thread {i} never got stuck");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Stuck for longer than the pool's rule: the next file gets a thread of its own.
        std::thread::sleep(STUCK + STUCK / 4);
    }
    assert_eq!(stuck_closing_threads(std::process::id()), MAX_CLOSERS);
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
    // The limbo thread moves them while they come; let it finish. (The two sockets files in
    // flight wait on are the process's own, made meanwhile.)
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut held = open_fds() - before - FILES;
    while held > QUEUE_CAP + 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
        held = open_fds() - before - FILES;
    }
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
