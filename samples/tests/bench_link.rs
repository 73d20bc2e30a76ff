//! `doca_bench`'s two peers of the sync-event link row (`--role se-link-dpu N` and
//! `--role se-link-host N`) run as the bench runs them: two processes with a fabric directory
//! each, meeting only through the link on loopback, the lines between them passed on here.

use std::io::{BufRead, BufReader, Lines, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use doca_link::remote::{keys, CONNECT_ENV, KEYS_ENV, LISTEN_ENV};

/// A fresh 0700 directory of this test's own, removed at drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let dir = std::env::temp_dir().join(format!("doca-bench-test-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).recursive(true).create(&dir).unwrap();
        Dir(dir)
    }

    fn sub(&self, name: &str) -> PathBuf {
        let d = self.0.join(name);
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        d
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One peer: its stdout's lines, its stderr in a file.
struct Side {
    child: Child,
    out: Lines<BufReader<ChildStdout>>,
    log: PathBuf,
}

impl Side {
    fn spawn(role: &str, n: u64, env: &[(&str, &Path)], log: PathBuf) -> Side {
        let mut child = Command::new(env!("CARGO_BIN_EXE_doca_bench"))
            .args(["--role", role, &n.to_string()])
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap()).lines();
        Side { child, out, log }
    }

    fn line(&mut self) -> String {
        self.out.next().and_then(Result::ok).unwrap_or_default()
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").and_then(|()| stdin.flush()).unwrap();
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Whether it exits within `wait` (then: whether it exited 0).
    fn exits_within(&mut self, wait: Duration) -> Option<bool> {
        let end = Instant::now() + wait;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return Some(status.success());
            }
            if Instant::now() > end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The host side measures a raw TCP round trip after each sync-event round trip, the last
/// one after the DPU side's last update: the DPU side (and its TCP echo) must stay until the
/// bench closes its stdin, or that last round trip meets a closed socket and the row fails
/// (`DOCA_ERROR_IO_FAILED` from the host side).
#[test]
fn the_dpu_peer_keeps_its_echo_until_its_stdin_closes() {
    let dir = Dir::new("se-link");
    let (k, fh, fd) = (dir.0.join("keys"), dir.sub("h"), dir.sub("d"));
    keys::generate(&k, true).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let at = PathBuf::from(format!("127.0.0.1:{port}"));
    let fabric = doca_link::FABRIC_ENV;
    let n = 50;
    let mut dpu = Side::spawn(
        "se-link-dpu",
        n,
        &[(LISTEN_ENV, &at), (KEYS_ENV, &k), (fabric, &fd)],
        dir.0.join("dpu.log"),
    );
    let mut host = Side::spawn(
        "se-link-host",
        n,
        &[(CONNECT_ENV, &at), (KEYS_ENV, &k), (fabric, &fh)],
        dir.0.join("host.log"),
    );
    let port_line = dpu.line();
    assert!(port_line.starts_with("port "), "{port_line:?}\n{}", dpu.log());
    let blob = host.line();
    assert!(blob.starts_with("blob "), "{blob:?}\n{}", host.log());
    dpu.send(&blob);
    assert_eq!(dpu.line(), "ok", "the DPU side imports the event:\n{}", dpu.log());
    host.send(&port_line);
    let (se, tcp) = (host.line(), host.line());
    assert!(se.starts_with("se ") && tcp.starts_with("tcp "), "{se:?} {tcp:?}\n{}", host.log());
    assert_eq!(host.exits_within(Duration::from_secs(60)), Some(true), "{}", host.log());
    // The host side is done; the DPU side stays until its stdin closes, and then ends well.
    assert_eq!(dpu.exits_within(Duration::from_millis(500)), None, "the DPU side left on its own");
    drop(dpu.child.stdin.take());
    assert_eq!(dpu.exits_within(Duration::from_secs(60)), Some(true), "{}", dpu.log());
}
