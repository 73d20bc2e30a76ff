//! A child of `fork` discards files with closing threads of its own, whatever the parent's
//! were doing at the fork. Its own test process: it forks.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use doca_link::discard::discard;

/// Whether the read end of the pipe whose write end is `w` is closed.
fn reader_gone(w: &OwnedFd) -> bool {
    matches!(rustix::io::write(w, b"x"), Err(rustix::io::Errno::PIPE))
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
    // (Its closing thread is now asleep, waiting for work.)
    std::thread::sleep(Duration::from_millis(20));
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
