//! The TCP link's rows of `doca_bench`: the comm channel and the fast path between two
//! "machines" — two network namespaces joined by a veth pair when run as root (each side
//! with a fabric directory of its own), else two processes on loopback with separate fabric
//! directories — beside raw TCP over the very same path, measured in the same run.
//!
//! The sides are copies of `doca_bench` (`--role …`): the DPU side runs the echo server or
//! the fast-path sink with `DOCA_EMU_LINK_LISTEN`, the host side measures with
//! `DOCA_EMU_LINK_CONNECT`; a raw TCP echo (`tcp-echo`) on the DPU side is the baseline.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::bench::{self, ns, percentiles, run_until, CcSide, FpSide, FpUse};

/// Where the two sides run.
pub struct LinkNet {
    /// The two network namespaces (host, DPU), when made (root).
    ns: Option<[String; 2]>,
    /// The DPU side's address.
    pub dpu: std::net::IpAddr,
    /// The host side's address.
    pub host: std::net::IpAddr,
}

fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).output().is_ok_and(|o| o.status.success())
}

impl Default for LinkNet {
    /// Two network namespaces over a veth pair (root, `ip` present), else loopback.
    fn default() -> LinkNet {
        let pid = std::process::id();
        let root = rustix::process::geteuid().is_root();
        if root {
            let names = [format!("doca-bench-{pid}-h"), format!("doca-bench-{pid}-d")];
            let (vh, vd) = (format!("dbh{pid:x}"), format!("dbd{pid:x}"));
            let ok = ip(&["netns", "add", &names[0]])
                && ip(&["netns", "add", &names[1]])
                && ip(&[
                    "link", "add", &vh, "netns", &names[0], "type", "veth", "peer", "name", &vd, "netns",
                    &names[1],
                ])
                && ip(&["-n", &names[0], "addr", "add", "10.233.0.1/30", "dev", &vh])
                && ip(&["-n", &names[1], "addr", "add", "10.233.0.2/30", "dev", &vd])
                && [&names[0], &names[1]].iter().all(|n| ip(&["-n", n, "link", "set", "lo", "up"]))
                && ip(&["-n", &names[0], "link", "set", &vh, "up"])
                && ip(&["-n", &names[1], "link", "set", &vd, "up"]);
            if ok {
                return LinkNet {
                    ns: Some(names),
                    dpu: [10, 233, 0, 2].into(),
                    host: [10, 233, 0, 1].into(),
                };
            }
            for n in &names {
                ip(&["netns", "del", n]);
            }
            eprintln!("doca_bench: no veth pair between two namespaces: the link rows run on loopback");
        }
        LinkNet { ns: None, dpu: [127, 0, 0, 1].into(), host: [127, 0, 0, 1].into() }
    }
}

impl LinkNet {
    /// What the rows say about the path.
    pub fn path(&self) -> &'static str {
        if self.ns.is_some() {
            "veth"
        } else {
            "loopback"
        }
    }

    /// `cmd` run in side `side` (0 host, 1 DPU).
    pub fn command(&self, side: usize, exe: &std::path::Path) -> Command {
        match &self.ns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &ns[side]]).arg(exe);
                c
            }
            None => Command::new(exe),
        }
    }
}

impl Drop for LinkNet {
    fn drop(&mut self) {
        if let Some(ns) = &self.ns {
            for n in ns {
                ip(&["netns", "del", n]);
            }
        }
    }
}

/// The DPU side's raw TCP baseline: accepts connections one after the other; each starts
/// with `P` (ping-pong: echo 64-byte messages until the end) or `S` (sink: read until the
/// end, then answer the byte count).
pub fn tcp_echo(addr: &str) -> std::io::Result<()> {
    let listener = TcpListener::bind(addr)?;
    println!("ready");
    let _ = std::io::stdout().flush();
    for conn in listener.incoming() {
        let mut conn = conn?;
        conn.set_nodelay(true)?;
        let mut kind = [0u8; 1];
        if conn.read_exact(&mut kind).is_err() {
            continue;
        }
        let mut buf = vec![0u8; 1 << 20];
        match kind[0] {
            b'P' => {
                let mut m = [0u8; 64];
                while conn.read_exact(&mut m).is_ok() {
                    if conn.write_all(&m).is_err() {
                        break;
                    }
                }
            }
            b'S' => {
                let mut total = 0u64;
                while let Ok(n @ 1..) = conn.read(&mut buf) {
                    total += n as u64;
                }
                let _ = conn.write_all(&total.to_le_bytes());
            }
            _ => {}
        }
    }
    Ok(())
}

/// Host side, raw TCP: one-way 64 B (p50, p99 in ns) over `n` round trips.
pub fn tcp_latency(addr: SocketAddr, n: u64) -> std::io::Result<(f64, f64)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    s.write_all(b"P")?;
    let (out, mut back) = ([7u8; 64], [0u8; 64]);
    let mut rtts = Vec::with_capacity(n as usize);
    for i in 0..n + n / 10 {
        let t = Instant::now();
        s.write_all(&out)?;
        s.read_exact(&mut back)?;
        if i >= n / 10 {
            rtts.push(ns(t));
        }
    }
    let (a, b) = percentiles(rtts);
    Ok((a / 2.0, b / 2.0))
}

/// Host side, raw TCP: a stream of `total` writes of `size` bytes (GB/s, until the sink
/// counted them all).
pub fn tcp_bandwidth(addr: SocketAddr, size: usize, total: u64) -> std::io::Result<f64> {
    let mut s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    s.write_all(b"S")?;
    let buf = vec![9u8; size];
    let t = Instant::now();
    for _ in 0..total {
        s.write_all(&buf)?;
    }
    s.shutdown(std::net::Shutdown::Write)?;
    let mut count = [0u8; 8];
    s.read_exact(&mut count)?;
    Ok((size as u64 * total) as f64 / ns(t))
}

/// Host side, the comm channel across the link: one-way 64 B (p50, p99 in ns) to the echo
/// server `name` on the DPU side, both engines asleep on their notification handles between
/// messages (the stand-in threads wake them).
pub fn cc_latency(name: &str, n: u64) -> Option<(f64, f64)> {
    let c = CcSide::client(name, 1024, 1024).ok()?;
    let msg = [5u8; 64];
    let mut rtts = Vec::with_capacity(n as usize);
    for i in 0..n + n / 10 {
        let before = c.received.get();
        let t = Instant::now();
        if !c.send(&msg) || !run_until(&[&c.pe], true, || c.received.get() > before) {
            return None;
        }
        if i >= n / 10 {
            rtts.push(ns(t));
        }
    }
    let (a, b) = percentiles(rtts);
    Some((a / 2.0, b / 2.0))
}

/// Host side, the fast path across the link: `total` pipelined sends of `size` bytes into
/// the DPU side's consumer (GB/s, once the last send completed: its bytes were delivered).
pub fn fp_bandwidth(name: &str, size: usize, total: u64) -> Option<f64> {
    let c = CcSide::client(name, 64, 1024).ok()?;
    let conn = c.conn.borrow().clone()?;
    let fp = FpSide::new(&conn, size, 4, &c.pe, FpUse::PerMessage).ok()?;
    if !run_until(&[&c.pe, &fp.pe], true, || !c.remote.borrow().is_empty()) {
        return None;
    }
    let to = c.remote.borrow()[0];
    let start = fp.sent.get();
    let t = Instant::now();
    let deadline = Instant::now() + bench::GIVE_UP;
    let mut queued = 0;
    while fp.sent.get() - start < total {
        if Instant::now() > deadline {
            return None;
        }
        while queued < total && fp.send(to, size) {
            queued += 1;
        }
        if !fp.pe.progress() {
            // Asleep on the engine's notification handle until a post or a completion comes
            // (the link's threads need the CPU this side would spin on).
            let _ = fp.pe.wait(Some(Duration::from_millis(100)));
        }
    }
    let gbps = (total as usize * size) as f64 / ns(t);
    bench::keep(&fp.maps());
    Some(gbps)
}
