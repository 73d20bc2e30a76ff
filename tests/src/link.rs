//! Host and DPU apart over the TCP link ([`doca_link::remote`]) on one machine: each side
//! with a fabric directory of its own (nothing shared but the link), the link's keys, an
//! address; the environment each side's processes get; and, as root, two network
//! namespaces joined by a veth pair, so that the link crosses a (virtual) wire.
//!
//! | item        | what                                                                  |
//! |-------------|-----------------------------------------------------------------------|
//! | [`Apart`]   | two private fabric directories, a key directory, the DPU's address, the sides' logs; removed at drop (kept when the test fails) |
//! | [`free_port`] | a TCP port free on the loopback now                                 |
//! | [`Netns`]   | two network namespaces and a veth pair between them, removed at drop (even on panic) |

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use doca_link::remote::{CONNECT_ENV, KEYS_ENV, LISTEN_ENV};

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

/// Two network namespaces, the host's and the DPU's, joined by a veth pair (the host's end
/// 10.77.0.1/24, the DPU's 10.77.0.2/24; loopbacks up), removed when dropped. Nothing else
/// is in them: traffic only between the two ends.
pub struct Netns {
    host: String,
    dpu: String,
    /// The host's end of the veth pair.
    wire: String,
}

/// The host's address on the veth pair.
pub const HOST_IP: &str = "10.77.0.1";
/// The DPU's address on the veth pair.
pub const DPU_IP: &str = "10.77.0.2";

fn ip(args: &[&str]) -> Result<(), String> {
    let out = std::process::Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Netns {
    /// Makes the pair, or says on stderr why `what` is skipped (not root, no `ip`, no
    /// namespaces) and returns `None`.
    pub fn new(what: &str) -> Option<Netns> {
        if !rustix::process::getuid().is_root() {
            eprintln!("skipped: {what} needs network namespaces (root and ip(8))");
            return None;
        }
        let tag = format!("{:x}{}", std::process::id() % 0xfffff, serial());
        let (vh, vd) = (format!("vh{tag}"), format!("vd{tag}"));
        let ns = Netns { host: format!("doca-h{tag}"), dpu: format!("doca-d{tag}"), wire: vh.clone() };
        let made = (|| {
            ip(&["netns", "add", &ns.host])?;
            ip(&["netns", "add", &ns.dpu])?;
            ip(&["link", "add", &vh, "type", "veth", "peer", "name", &vd])?;
            ip(&["link", "set", &vh, "netns", &ns.host])?;
            ip(&["link", "set", &vd, "netns", &ns.dpu])?;
            for (n, dev, addr) in [(&ns.host, &vh, HOST_IP), (&ns.dpu, &vd, DPU_IP)] {
                ip(&["-n", n, "addr", "add", &format!("{addr}/24"), "dev", dev])?;
                ip(&["-n", n, "link", "set", dev, "up"])?;
                ip(&["-n", n, "link", "set", "lo", "up"])?;
            }
            Ok::<(), String>(())
        })();
        match made {
            Ok(()) => Some(ns),
            Err(why) => {
                // The veth's host end, if it never moved, goes with it.
                let _ = ip(&["link", "del", &vh]);
                eprintln!("skipped: {what} needs network namespaces: {why}");
                None
            }
        }
    }

    /// The command prefix that runs a program in the host's namespace.
    pub fn host(&self) -> [&str; 4] {
        ["ip", "netns", "exec", &self.host]
    }

    /// The command prefix that runs a program in the DPU's namespace.
    pub fn dpu(&self) -> [&str; 4] {
        ["ip", "netns", "exec", &self.dpu]
    }

    /// Cuts the wire: the host's end of the veth pair goes down. Nothing passes any more, and
    /// nothing says so either (no reset): what a pulled cable does.
    pub fn cut(&self) {
        ip(&["-n", &self.host, "link", "set", &self.wire, "down"]).expect("the wire cut");
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of the veth pair, and the pair with it.
        let _ = ip(&["netns", "del", &self.host]);
        let _ = ip(&["netns", "del", &self.dpu]);
    }
}
