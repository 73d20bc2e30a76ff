//! Helpers for the cross-process tests: a peer process driven line by line over its stdin
//! and stdout, with a deadline on every answer so that a stuck peer fails the test instead of
//! hanging it.

#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

/// How long a peer may take to answer one line.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(60);

/// A child process answering one line per command.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    name: String,
}

impl Peer {
    /// Starts `program` with `args`; its stderr goes to the test's stderr.
    pub fn spawn(program: &str, args: &[&str]) -> Peer {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Peer { child, stdin, lines, name: program.rsplit('/').next().unwrap_or(program).to_string() }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends one command line.
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}")
            .and_then(|_| stdin.flush())
            .unwrap_or_else(|e| panic!("{}: {e}", self.name));
    }

    /// The next line the peer prints (panics after [`ANSWER_DEADLINE`] or at its exit).
    pub fn line(&self) -> String {
        match self.lines.recv_timeout(ANSWER_DEADLINE) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => panic!("{}: no answer within {ANSWER_DEADLINE:?}", self.name),
            Err(RecvTimeoutError::Disconnected) => panic!("{}: exited without answering", self.name),
        }
    }

    /// Sends a command and returns the answer.
    pub fn ask(&mut self, line: &str) -> String {
        self.send(line);
        self.line()
    }

    /// Closes stdin and waits (bounded) for a clean exit; returns whether it exited 0.
    pub fn finish(mut self) -> bool {
        drop(self.stdin.take());
        for _ in 0..600 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{}: did not exit within a minute", self.name)
    }

    /// Kills the peer at once (SIGKILL) and reaps it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Hex text of bytes (descriptors travel as text between test processes).
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes of hex text; `None` if it is not hex.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}
