//! What a stopped process leaves in the fabric directory: nothing after SIGINT, SIGTERM or
//! SIGHUP (status page, server socket and lock, memory service socket); after SIGKILL its
//! names, which `doca_emu clean` removes while a live process keeps its own.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::DirBuilderExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use doca_link::FABRIC_ENV;

const PEER: &str = env!("CARGO_BIN_EXE_cc_peer");
const MEM_PEER: &str = env!("CARGO_BIN_EXE_mem_peer");
const EMU: &str = env!("CARGO_BIN_EXE_emu_cli");

/// A fabric directory of its own, removed at the end.
struct Fabric(PathBuf);

impl Fabric {
    fn new(tag: &str) -> Fabric {
        let dir = std::env::temp_dir().join(format!("cleanup-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir).expect("fabric directory");
        Fabric(dir)
    }

    /// The names in the directory, sorted.
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .expect("read the fabric directory")
            .map(|e| e.expect("entry").file_name().into_string().expect("UTF-8"))
            .collect();
        v.sort();
        v
    }

    fn emu(&self, args: &[&str]) -> (i32, String) {
        let out = Command::new(EMU).args(args).env(FABRIC_ENV, &self.0).output().expect("doca_emu runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.is_empty(), "doca_emu {args:?} complained: {err}");
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A peer started in the fabric directory, whose exit status the test reads.
struct Proc {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Proc {
    fn start(program: &str, args: &[&str], fabric: &Path) -> Proc {
        let mut child = Command::new(program)
            .args(args)
            .env(FABRIC_ENV, fabric)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the peer");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc { child, stdin, lines }
    }

    fn line(&self) -> String {
        self.lines.recv_timeout(Duration::from_secs(60)).expect("an answer from the peer")
    }

    fn ask(&mut self, line: &str) -> String {
        writeln!(self.stdin, "{line}").and_then(|_| self.stdin.flush()).expect("send to the peer");
        self.line()
    }

    /// Sends `sig` and returns the signal that ended the process.
    fn stop_with(mut self, sig: rustix::process::Signal) -> Option<i32> {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, sig).expect("signal the peer");
        let status = self.child.wait().expect("reap the peer");
        status.signal()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn kinds(names: &[String]) -> (usize, usize, usize) {
    let pages = names.iter().filter(|n| n.starts_with("status-") && n.ends_with(".page")).count();
    let socks = names.iter().filter(|n| n.ends_with(".sock")).count();
    let locks = names.iter().filter(|n| n.ends_with(".lock")).count();
    (pages, socks, locks)
}

#[test]
fn a_server_stopped_by_sigint_sigterm_or_sighup_leaves_nothing() {
    use rustix::process::Signal;
    for (sig, tag) in [(Signal::INT, "int"), (Signal::TERM, "term"), (Signal::HUP, "hup")] {
        if doca_tests::signal_ignored(sig, "a server's stop") {
            continue;
        }
        let f = Fabric::new(tag);
        let srv = Proc::start(PEER, &["server", "cleanup"], &f.0);
        assert_eq!(srv.line(), "running");
        let before = f.names();
        assert_eq!(kinds(&before), (1, 1, 1), "a page, a socket and its lock: {before:?}");
        assert_eq!(srv.stop_with(sig), Some(sig.as_raw()), "ended by the signal itself");
        assert!(f.names().is_empty(), "after {sig:?}: {:?}", f.names());
    }
}

#[test]
fn an_exporter_stopped_by_sigint_removes_its_memory_service_socket() {
    if doca_tests::signal_ignored(rustix::process::Signal::INT, "an exporter's stop") {
        return;
    }
    let f = Fabric::new("mem");
    let mut exp = Proc::start(MEM_PEER, &[], &f.0);
    let desc = exp.ask("export 4096 hello");
    assert!(desc.starts_with("desc "), "{desc}");
    let names = f.names();
    assert!(names.iter().any(|n| n.starts_with("mem-") && n.ends_with(".sock")), "{names:?}");
    assert_eq!(exp.stop_with(rustix::process::Signal::INT), Some(rustix::process::Signal::INT.as_raw()));
    assert!(f.names().is_empty(), "{:?}", f.names());
}

#[test]
fn what_sigkill_leaves_is_one_summary_line_and_clean_removes_it_but_never_a_live_one_s() {
    use rustix::process::Signal;
    let f = Fabric::new("kill");
    let live = Proc::start(PEER, &["server", "alive"], &f.0);
    assert_eq!(live.line(), "running");
    let live_names = f.names();
    let dead = Proc::start(PEER, &["server", "dead"], &f.0);
    assert_eq!(dead.line(), "running");
    let mut exp = Proc::start(MEM_PEER, &[], &f.0);
    assert!(exp.ask("export 4096 hello").starts_with("desc "));
    assert_eq!(dead.stop_with(Signal::KILL), Some(Signal::KILL.as_raw()));
    assert_eq!(exp.stop_with(Signal::KILL), Some(Signal::KILL.as_raw()));
    // A socket file nobody listens on any more, without a lock file (another program's
    // leftover), and one a live program listens on: only the first is an orphan.
    drop(std::os::unix::net::UnixListener::bind(f.0.join("gone.sock")).expect("bind"));
    let _busy = std::os::unix::net::UnixListener::bind(f.0.join("busy.sock")).expect("bind");
    let left = f.names();
    assert_eq!(kinds(&left), (3, 5, 3), "{left:?}");

    let (code, text) = f.emu(&["ls"]);
    assert_eq!(code, 0, "{text}");
    let summary: Vec<&str> = text.lines().filter(|l| l.starts_with("left by dead processes")).collect();
    assert_eq!(
        summary,
        ["left by dead processes: 2 stale page(s), 3 orphaned socket(s) (`--all` lists them, `doca_emu clean` removes them)"],
        "{text}"
    );
    assert!(!text.contains("stale: ") && !text.contains("orphaned: "), "{text}");
    let (_, all) = f.emu(&["ls", "--all"]);
    assert_eq!(all.lines().filter(|l| l.starts_with("stale: ")).count(), 2, "{all}");
    assert_eq!(all.lines().filter(|l| l.starts_with("orphaned: ")).count(), 3, "{all}");
    assert!(all.contains("orphaned: gone.sock") && !all.contains("busy.sock"), "{all}");
    let (_, json) = f.emu(&["ls", "--json"]);
    let json: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    assert_eq!(json["orphaned_sockets"].as_array().map(Vec::len), Some(3), "{json}");

    let (code, out) = f.emu(&["clean"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("2 stale page(s) removed, 5 socket and lock file(s) removed"), "{out}");
    let mut kept = live_names.clone();
    kept.push("busy.sock".into());
    kept.sort();
    assert_eq!(f.names(), kept, "the live server's names and the busy socket stay");
    let (_, text) = f.emu(&["ls"]);
    assert!(!text.contains("left by dead processes"), "{text}");
    assert!(text.contains(": 1 process(es)"), "{text}");
}
