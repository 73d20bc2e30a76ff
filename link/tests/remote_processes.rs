//! The remote link between processes, configured from the environment as a program is:
//! a DPU process and this test as the host (a peer killed mid-stream), and a DPU process and
//! a host process in two network namespaces joined by a veth pair (root only), where the
//! wire is then cut silently and keepalive must end the host's blocked receive.
//!
//! The children are this test binary again, running one of the ignored helpers below.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use doca_link::remote::{self, keys, Kind, Stream, CONNECT_ENV, KEYS_ENV, LISTEN_ENV, MAX_MESSAGE};

const CHILD_ENV: &str = "DOCA_LINK_TEST_CHILD";
const REVERSE_KEY: u64 = 0xabc;

struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        use std::os::unix::fs::DirBuilderExt;
        let d = std::env::temp_dir().join(format!("doca-link-proc-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        TempDir(d)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child killed when dropped.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads the child's output lines on a thread of their own.
fn lines(out: ChildStdout) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { return };
            eprintln!("  child: {line}");
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// What follows `prefix` in the first line holding it (at most 60 s; libtest may print its
/// `test NAME ... ` before it on the same line).
fn expect(rx: &mpsc::Receiver<String>, prefix: &str) -> String {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(prefix) => {
                return l[l.find(prefix).unwrap_or(0) + prefix.len()..].trim().to_owned()
            }
            Ok(_) => {}
            Err(e) => panic!("no line `{prefix}` from the child: {e}"),
        }
    }
}

/// This test binary running the ignored helper `name`, through `wrap` (e.g. `ip netns exec
/// NS`) when given.
fn child(wrap: &[&str], name: &str, role: &str, env: &[(&str, &str)], fabric: &Path) -> Kid {
    let exe = std::env::current_exe().unwrap();
    let exe = exe.to_str().unwrap();
    let mut argv: Vec<&str> = wrap.to_vec();
    argv.extend([exe, "--ignored", "--exact", name, "--nocapture", "--test-threads=1"]);
    let mut cmd = Command::new(argv[0]);
    cmd.args(&argv[1..])
        .env(CHILD_ENV, role)
        .env("DOCA_EMU_FABRIC_DIR", fabric)
        .env_remove(LISTEN_ENV)
        .env_remove(CONNECT_ENV)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    Kid(cmd.spawn().unwrap())
}

/// The DPU's comm channel handler: sends the request back, echoes every message, and for
/// `reverse KEY` opens a stream to host process KEY and tells what came over it.
fn dpu_cc(stream: Stream, request: Vec<u8>) {
    if stream.send(&request).is_err() {
        return;
    }
    let mut buf = Vec::new();
    while let Ok(true) = stream.recv(&mut buf) {
        let reply = match buf.strip_prefix(b"reverse ") {
            Some(key) => {
                let key =
                    std::str::from_utf8(key).ok().and_then(|k| u64::from_str_radix(k, 16).ok()).unwrap_or(0);
                match remote::open(Kind::MemoryImport, Some(key), b"from dpu") {
                    Ok(s) => {
                        let mut m = Vec::new();
                        match s.recv(&mut m) {
                            Ok(true) => [&b"reverse ok: "[..], &m].concat(),
                            r => format!("reverse: receive {r:?}").into_bytes(),
                        }
                    }
                    Err(e) => format!("reverse: open {e}").into_bytes(),
                }
            }
            None => std::mem::take(&mut buf),
        };
        if stream.send(&reply).is_err() {
            return;
        }
    }
}

/// The host's handler of reverse opens.
fn host_mem(stream: Stream, request: Vec<u8>) {
    let _ = stream.send(&[&b"host got "[..], &request].concat());
    let mut buf = Vec::new();
    while let Ok(true) = stream.recv(&mut buf) {}
}

/// Helper: the DPU side (from the environment), until its standard input closes.
#[test]
#[ignore]
fn dpu_child() {
    if std::env::var(CHILD_ENV).as_deref() != Ok("dpu") {
        eprintln!("a helper of the tests of this file: runs only as their child");
        return;
    }
    remote::serve(Kind::CcService, dpu_cc);
    remote::ensure_listening();
    let addr = remote::listening().expect("the DPU side listens");
    println!("PORT {}", addr.port());
    std::io::stdout().flush().unwrap();
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
}

/// The host's part of the scenario (this process configured from the environment): a forward
/// open with small and large messages, a presence and a reverse open through the DPU. Gives
/// the forward stream.
fn host_scenario() -> Stream {
    remote::serve(Kind::MemoryImport, host_mem);
    let s = remote::open(Kind::CcService, None, b"hello").unwrap();
    let mut buf = Vec::new();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert_eq!(buf, b"hello");
    let big: Vec<u8> = (0..MAX_MESSAGE).map(|i| (i % 251) as u8).collect();
    s.send(&big).unwrap();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert!(buf == big);
    let presence = remote::present(REVERSE_KEY).unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while !presence.is_connected() {
        assert!(Instant::now() < until, "the presence never connected");
        std::thread::sleep(Duration::from_millis(10));
    }
    s.send(format!("reverse {REVERSE_KEY:x}").as_bytes()).unwrap();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert_eq!(String::from_utf8_lossy(&buf), "reverse ok: host got from dpu");
    std::mem::forget(presence); // kept for the process's life
    s
}

/// Helper: the host side in a network namespace: the scenario, then `READY`, then a receive
/// that must end once the parent cuts the wire (keepalive).
#[test]
#[ignore]
fn host_child() {
    if std::env::var(CHILD_ENV).as_deref() != Ok("host") {
        eprintln!("a helper of the tests of this file: runs only as their child");
        return;
    }
    let s = host_scenario();
    println!("SCENARIO ok");
    println!("READY");
    std::io::stdout().flush().unwrap();
    // Waits until the parent has cut the wire.
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let t = Instant::now();
    let mut buf = Vec::new();
    let r = s.recv(&mut buf);
    println!("ENDED {:?} after {} ms", r, t.elapsed().as_millis());
    std::io::stdout().flush().unwrap();
}

#[test]
fn host_and_dpu_in_two_processes() {
    let k = TempDir::new("keys");
    std::fs::remove_dir(&k.0).unwrap();
    keys::generate(&k.0, false).unwrap();
    let fabric = TempDir::new("dpu-fabric");
    let keydir = k.0.to_str().unwrap();
    let mut dpu =
        child(&[], "dpu_child", "dpu", &[(LISTEN_ENV, "127.0.0.1:0"), (KEYS_ENV, keydir)], &fabric.0);
    let out = lines(dpu.0.stdout.take().unwrap());
    let port = expect(&out, "PORT ");
    // This process is the host side: configured before its first use of the link.
    std::env::set_var(CONNECT_ENV, format!("127.0.0.1:{port}"));
    std::env::set_var(KEYS_ENV, keydir);
    let s = host_scenario();
    // The DPU process killed: the stream ends (the kernel closed its sockets).
    dpu.0.kill().unwrap();
    dpu.0.wait().unwrap();
    let t = Instant::now();
    let mut buf = Vec::new();
    let r = s.recv_timeout(&mut buf, Duration::from_secs(60));
    eprintln!("DPU killed: the receive ended with {r:?} after {:?}", t.elapsed());
    assert!(matches!(r, Ok(Some(false)) | Err(_)), "{r:?}");
    // Sends fail once the peer's reset came back (the first may still be taken by the kernel).
    let until = Instant::now() + Duration::from_secs(10);
    while s.send(b"more").is_ok() {
        assert!(Instant::now() < until, "sends never failed");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Nothing listens any more.
    assert_eq!(remote::open(Kind::CcService, None, b"").unwrap_err(), doca_link::Error::NotFound);
}

/// Two network namespaces joined by a veth pair, removed when dropped.
struct Netns {
    names: [String; 2],
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Netns {
    /// Namespaces `dl-dpu-PID` (10.231.0.1/30 on `dlvPIDd`) and `dl-host-PID` (10.231.0.2/30
    /// on `dlvPIDh`).
    fn new() -> Result<Netns, String> {
        let pid = std::process::id();
        let n = Netns { names: [format!("dl-dpu-{pid}"), format!("dl-host-{pid}")] };
        let (d, h) = (&n.names[0], &n.names[1]);
        let (vd, vh) = (format!("dlv{pid}d"), format!("dlv{pid}h"));
        ip(&["netns", "add", d])?;
        ip(&["netns", "add", h])?;
        ip(&["link", "add", &vd, "type", "veth", "peer", "name", &vh])?;
        ip(&["link", "set", &vd, "netns", d])?;
        ip(&["link", "set", &vh, "netns", h])?;
        ip(&["-n", d, "addr", "add", "10.231.0.1/30", "dev", &vd])?;
        ip(&["-n", h, "addr", "add", "10.231.0.2/30", "dev", &vh])?;
        for (ns, dev) in [(d, &vd), (h, &vh)] {
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(n)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of the veth pair, and so the pair; a pair
        // still in this namespace (a failed setup) is deleted by name.
        for n in &self.names {
            if let Err(e) = ip(&["netns", "del", n]) {
                eprintln!("cleanup: {e}");
            }
        }
        let _ = ip(&["link", "del", &format!("dlv{}d", std::process::id())]);
    }
}

#[test]
fn stream_between_two_network_namespaces() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: network namespaces need root");
        return;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        eprintln!("skipped: no `ip` command (iproute2)");
        return;
    }
    let pid = std::process::id();
    let ns = match Netns::new() {
        Ok(ns) => ns,
        Err(e) => {
            // Whatever was made is removed by the partial value's drop below.
            let _ = Netns { names: [format!("dl-dpu-{pid}"), format!("dl-host-{pid}")] };
            eprintln!("skipped: cannot make network namespaces here: {e}");
            return;
        }
    };
    let k = TempDir::new("nskeys");
    std::fs::remove_dir(&k.0).unwrap();
    keys::generate(&k.0, false).unwrap();
    let keydir = k.0.to_str().unwrap();
    let (fd, fh) = (TempDir::new("ns-dpu-fabric"), TempDir::new("ns-host-fabric"));
    let wrap_d = ["ip", "netns", "exec", &ns.names[0]];
    let wrap_h = ["ip", "netns", "exec", &ns.names[1]];
    let mut dpu =
        child(&wrap_d, "dpu_child", "dpu", &[(LISTEN_ENV, "10.231.0.1:0"), (KEYS_ENV, keydir)], &fd.0);
    let port = expect(&lines(dpu.0.stdout.take().unwrap()), "PORT ");
    let connect = format!("10.231.0.1:{port}");
    let mut host =
        child(&wrap_h, "host_child", "host", &[(CONNECT_ENV, &connect), (KEYS_ENV, keydir)], &fh.0);
    let out = lines(host.0.stdout.take().unwrap());
    expect(&out, "SCENARIO ok");
    expect(&out, "READY");
    // Cut the wire without a word: the DPU's end goes down, nothing (no FIN, no RST) reaches
    // the host. Keepalive must end the host's blocked receive.
    ip(&["-n", &ns.names[0], "link", "set", &format!("dlv{pid}d"), "down"]).unwrap();
    let t = Instant::now();
    host.0.stdin.as_mut().unwrap().write_all(b"cut\n").unwrap();
    let ended = expect(&out, "ENDED ");
    eprintln!("wire cut: the host's receive ended: {ended} (seen here after {:?})", t.elapsed());
    assert!(ended.starts_with("Err(ConnectionReset)"), "{ended}");
    let status = host.0.wait().unwrap();
    assert!(status.success(), "{status}");
    drop(dpu);
    drop(ns);
    assert!(!Path::new(&format!("/run/netns/dl-dpu-{pid}")).exists(), "namespace removed");
}
