//! Host and DPU apart over the TCP link ([`doca_link::remote`]) on one machine: each side
//! with a fabric directory of its own (nothing shared but the link), the link's keys, an
//! address; the environment each side's processes get; and, as root, the two sides in two
//! network namespaces joined by a veth pair, so that the link crosses a (virtual) wire.
//!
//! | item        | what                                                                  |
//! |-------------|-----------------------------------------------------------------------|
//! | [`Apart`]   | two private fabric directories, a key directory, the DPU's address, the sides' logs; removed at drop (kept when the test fails) |
//! | [`free_port`] | a TCP port free on the loopback now                                 |
//! | [`veth_pair`], [`inside`], [`cut`] | two network namespaces joined by a veth pair (the apart harness's [`NetPair`]), a program run in one, the wire cut |

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use doca_link::remote::{CONNECT_ENV, KEYS_ENV, LISTEN_ENV};

use crate::apart::{NetEnd, NetPair};

fn serial() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A TCP port nobody listens on at this moment (the system's pick for a socket bound to
/// port 0 of the loopback, released at once).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}

/// The two sides of a pair apart: what each side's processes need in their environment.
pub struct Apart {
    root: PathBuf,
    /// The DPU's listening address (`ip:port`).
    pub addr: String,
}

impl Apart {
    /// A pair whose DPU listens on `ip` (a free port of the loopback's when `ip` is
    /// 127.0.0.1, else `port`), with fresh fabric directories and keys.
    pub fn new(tag: &str, ip: &str, port: u16) -> Apart {
        use std::os::unix::fs::DirBuilderExt;
        let root = std::env::temp_dir().join(format!("doca-link-{tag}-{}-{}", std::process::id(), serial()));
        let _ = std::fs::remove_dir_all(&root);
        let mut b = std::fs::DirBuilder::new();
        b.mode(0o700);
        for d in ["", "host-fabric", "dpu-fabric"] {
            b.create(root.join(d)).unwrap_or_else(|e| panic!("cannot make {}: {e}", root.join(d).display()));
        }
        doca_link::remote::keys::generate(&root.join("keys"), false).expect("the link's keys");
        Apart { root, addr: format!("{ip}:{port}") }
    }

    /// A pair on the loopback.
    pub fn loopback(tag: &str) -> Apart {
        Apart::new(tag, "127.0.0.1", free_port())
    }

    /// The host side's fabric directory.
    pub fn host_fabric(&self) -> PathBuf {
        self.root.join("host-fabric")
    }

    /// The DPU side's fabric directory.
    pub fn dpu_fabric(&self) -> PathBuf {
        self.root.join("dpu-fabric")
    }

    /// Where a side's log goes (in the pair's directory).
    pub fn log(&self, side: &str) -> PathBuf {
        self.root.join(format!("{side}.log"))
    }

    /// The key directory (both roles' keys).
    pub fn keys(&self) -> PathBuf {
        self.root.join("keys")
    }

    /// The environment of a host-side process: its fabric directory, the DPU's address to
    /// connect to, the keys.
    pub fn host_env(&self) -> Vec<(&'static str, String)> {
        vec![
            (doca_link::FABRIC_ENV, path(&self.host_fabric())),
            (CONNECT_ENV, self.addr.clone()),
            (KEYS_ENV, path(&self.keys())),
        ]
    }

    /// The environment of a DPU-side process: its fabric directory, the address to listen
    /// on, the keys.
    pub fn dpu_env(&self) -> Vec<(&'static str, String)> {
        vec![
            (doca_link::FABRIC_ENV, path(&self.dpu_fabric())),
            (LISTEN_ENV, self.addr.clone()),
            (KEYS_ENV, path(&self.keys())),
        ]
    }
}

impl Drop for Apart {
    /// Removes the directories; a failing test's are kept (their logs), and named.
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept {} (the sides' logs)", self.root.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

fn path(p: &Path) -> String {
    p.to_str().expect("a UTF-8 temporary path").to_string()
}

/// `env` as the `(&str, &str)` pairs [`crate::Peer`]'s constructors take.
pub fn pairs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// The host's address on a veth pair ([`crate::apart::NetPair`]'s first end).
pub const HOST_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 77, 0, 1);
/// The DPU's address on a veth pair (its second end).
pub const DPU_IP: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 77, 0, 2);

/// Two network namespaces joined by a veth pair, the host's end first ([`HOST_IP`]) and the
/// DPU's second ([`DPU_IP`]), removed when dropped; `None` (with a line saying why `what` is
/// skipped) where this machine cannot make them ([`crate::apart::network_pairs`]).
pub fn veth_pair(what: &str) -> Option<NetPair> {
    crate::apart::network_pairs(what).then(|| NetPair::new(HOST_IP, DPU_IP, 24))
}

/// The command prefix that runs a program in the namespace of `end`.
pub fn inside(end: &NetEnd) -> [&str; 4] {
    ["ip", "netns", "exec", &end.name]
}

/// Cuts the wire at `end`: its veth interface goes down. Nothing passes any more, and nothing
/// says so either (no reset): what a pulled cable does.
pub fn cut(end: &NetEnd) {
    let out = std::process::Command::new("ip")
        .args(["-n", &end.name, "link", "set", &end.ifname, "down"])
        .output()
        .expect("ip(8)");
    assert!(out.status.success(), "the wire not cut: {}", String::from_utf8_lossy(&out.stderr));
}
