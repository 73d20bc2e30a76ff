//! A child of `fork` discards files with closing threads of its own, whatever the parent's
//! were doing at the fork. Its own test process: it forks.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use doca_link::discard::discard;

/// Whether the read end of the pipe whose write end is `w` is closed.
fn reader_gone(w: &OwnedFd) -> bool {
    matches!(rustix::io::write(w, b"x"), Err(rustix::io::Errno::PIPE))
}

/// Whether this process has closing threads and each sleeps in `futex` (`/proc`'s view:
/// state `S`, system call `futex`), i.e. waits for work.
fn closers_asleep() -> bool {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return false };
    let mut closers = 0;
    for t in tasks.flatten() {
        let dir = t.path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if !comm.starts_with("doca-link-disc") {
            continue;
        }
        closers += 1;
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
        let syscall = std::fs::read_to_string(dir.join("syscall")).unwrap_or_default();
        let in_futex = syscall.split_whitespace().next() == Some(libc::SYS_futex.to_string().as_str());
        if state != Some('S') || !in_futex {
            return false;
        }
    }
    closers > 0
}

/// The parent's closing thread waits for work at the fork (it closed one file). The child
/// discards two files: each is closed (the parent's waiting thread, which the child does not
/// have, is not what the child's wake-ups reach), and the child's discards return.
#[test]
fn a_child_of_fork_discards_with_threads_of_its_own() {
    // SAFETY: ignoring a signal, before this test writes to a pipe with no reader.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let (r, w) = rustix::pipe::pipe().unwrap();
    discard(r);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !reader_gone(&w) {
        assert!(Instant::now() < deadline, "the parent's closing thread never closed its file");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Its closing thread goes to sleep, waiting for work (in `futex`): fork then.
    while !closers_asleep() {
        assert!(Instant::now() < deadline, "the parent's closing thread never went to sleep");
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: the child calls only what this test gives it and leaves with `_exit`.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork failed");
    if child == 0 {
        let mut code = 0;
        for _ in 0..3 {
            let (r, w) = rustix::pipe::pipe().unwrap();
            discard(r);
            let deadline = Instant::now() + Duration::from_secs(5);
            while !reader_gone(&w) {
                if Instant::now() >= deadline {
                    code = 3;
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut status = 0;
    loop {
        // SAFETY: waits for the child this test made.
        let done = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
        if done == child {
            break;
        }
        if Instant::now() >= deadline {
            // SAFETY: ends the child this test made.
            unsafe { libc::kill(child, libc::SIGKILL) };
            // SAFETY: reaps it.
            unsafe { libc::waitpid(child, &mut status, 0) };
            panic!("the child of fork hung in its discards");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(libc::WIFEXITED(status), "the child did not exit: status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "a file the child discarded was never closed");
}
