//! Host and DPU apart, for tests: each side a process in PID, mount, IPC and UTS namespaces
//! of its own (and, as chosen, a network namespace of its own or one end of a veth pair),
//! sharing with the other side only what two containers would share as volumes — the fabric
//! directory, and folders or files the pair exchanges. `/tmp` and `/dev/shm` are fresh,
//! private tmpfs mounts in every side; the shared paths are bind-mounted back at their own
//! paths (or at paths the test chooses, [`Container::share_at`]); `/proc` shows the side's
//! own PID namespace. The TCP tests use the same sides, each with a fabric directory of its
//! own and a [`NetPair`] end.
//!
//! | item                  | what                                                           |
//! |-----------------------|----------------------------------------------------------------|
//! | [`containers`], [`network_pairs`], [`user_namespaces`] | whether this machine can (root, util-linux, iproute2); say why not |
//! | [`Volume`]            | a fresh 0700 directory, removed at drop: a fabric directory or an exchange folder |
//! | [`Container`]         | how one side runs: the fabric, what else is shared, its network, its environment, its uid |
//! | [`Container::spawn`]  | a [`Peer`] (stdin, stdout lines, stderr captured) in fresh namespaces |
//! | [`NetPair`]           | two named network namespaces joined by a veth pair, removed at drop (even on panic) |
//! | [`namespaces`], [`ns_pid`] | which namespaces a process is in; its pid in its own        |
//! | [`c_program`], [`sample_program`] | the C test programs and the Rust samples, built once |
//!
//! The namespaces come from `unshare(1)` (`--pid --fork --mount-proc --kill-child --mount
//! --propagation private --ipc --uts`, and `--net` for a network namespace of the side's
//! own), the mounts from `mount(8)` in a few lines of `sh` run as the namespace's pid 1,
//! which then `exec`s the program: the program is pid 1 of its PID namespace, as in a
//! container, and dies with its wrapper (`--kill-child`). To join a [`NetPair`] end,
//! `nsenter --net` runs first. Sides run as this user (root: CI), so both have the same uid,
//! as the fabric directory requires — or, as rootless containers, as another uid mapped to
//! root in a user namespace of their own ([`Container::user`]).

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::Peer;

/// A fresh number for names made in this process (with its pid: unique on the machine).
fn serial() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Whether `program` can be run (found on `PATH`).
fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok()
}

/// Whether this machine lets the tests run sides apart: root, `unshare(1)`, `mount(8)`, and
/// a trial side (new PID, mount and network namespaces, a tmpfs) that works. When not, says
/// so on stderr, naming `what` is skipped and why (fails under [`REQUIRE_ENV`]).
pub fn containers(what: &str) -> bool {
    static OK: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let ok = OK.get_or_init(|| {
        if !rustix::process::getuid().is_root() {
            return Err("not root (namespaces and mounts need it; CI runs as root)".into());
        }
        for tool in ["unshare", "mount", "nsenter"] {
            if !have(tool) {
                return Err(format!("{tool} is missing (util-linux)"));
            }
        }
        let trial = Command::new("unshare")
            .args(UNSHARE)
            .arg("--net")
            .args(["sh", "-c", "mount -t tmpfs -o mode=1777 doca-apart-trial /tmp"])
            .output();
        match trial {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(format!("a trial side failed: {}", String::from_utf8_lossy(&out.stderr).trim())),
            Err(e) => Err(format!("cannot run unshare: {e}")),
        }
    });
    match ok {
        Ok(()) => true,
        Err(why) => skip(what, &format!("containers: {why}")),
    }
}

/// Set (to anything) where the tests of sides apart must run, as CI sets it when it runs as
/// root: a machine that cannot run them fails them instead of skipping them.
pub const REQUIRE_ENV: &str = "DOCA_TEST_REQUIRE_APART";

/// Says on stderr that `what` is skipped for want of `need`, and `false`; fails instead
/// when [`REQUIRE_ENV`] is set.
fn skip(what: &str, need: &str) -> bool {
    if std::env::var_os(REQUIRE_ENV).is_some() {
        panic!("{what} needs {need} ({REQUIRE_ENV} is set: it must run here)");
    }
    eprintln!("skipped: {what} needs {need}");
    false
}

/// Whether sides can run as another user in user namespaces of their own
/// ([`Container::user`]: `setpriv`, and user namespaces made by a user that is not root,
/// which some systems forbid, e.g. AppArmor's `restrict_unprivileged_userns`); says why not
/// (and skips even under [`REQUIRE_ENV`]).
pub fn user_namespaces(what: &str) -> bool {
    if !containers(what) {
        return false;
    }
    static OK: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    let ok = OK.get_or_init(|| {
        if !have("setpriv") {
            return Err("setpriv is missing (util-linux)".into());
        }
        let trial = Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "--",
                "unshare",
                "--user",
                "--map-root-user",
            ])
            .args(UNSHARE)
            .args(["--net", "sh", "-c", "mount -t tmpfs -o mode=1777 doca-apart-trial /tmp"])
            .output();
        match trial {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(format!(
                "a user namespace made by another user failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => Err(format!("cannot run setpriv: {e}")),
        }
    });
    match ok {
        Ok(()) => true,
        Err(why) => {
            eprintln!("skipped: {what} needs user namespaces: {why}");
            false
        }
    }
}

/// Whether [`NetPair`]s can be made (what [`containers`] needs, and `ip(8)`); says why not
/// (fails under [`REQUIRE_ENV`]).
pub fn network_pairs(what: &str) -> bool {
    if !containers(what) {
        return false;
    }
    if !have("ip") {
        return skip(what, "ip(8) (iproute2) for a veth pair");
    }
    true
}

/// A fresh directory of mode 0700 under the temporary directory, removed (with what is in
/// it) when dropped: a fabric directory the two sides share, or a folder for the files they
/// exchange.
pub struct Volume {
    path: PathBuf,
}

impl Volume {
    /// A new, empty one whose name says `tag`, this process and a serial number.
    pub fn new(tag: &str) -> Volume {
        use std::os::unix::fs::DirBuilderExt;
        let path = std::env::temp_dir().join(format!("doca-apart-{tag}-{}-{}", std::process::id(), serial()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .unwrap_or_else(|e| panic!("cannot make {}: {e}", path.display()));
        Volume { path }
    }

    /// Its path (the same in every side that shares it).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Gives it to `uid` (and group `uid`): for sides run as that user ([`Container::user`]).
    pub fn chown(&self, uid: u32) {
        std::os::unix::fs::chown(&self.path, Some(uid), Some(uid))
            .unwrap_or_else(|e| panic!("cannot give {} to uid {uid}: {e}", self.path.display()));
    }
}

impl Drop for Volume {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The network a side has.
#[derive(Clone, Debug)]
pub enum Net {
    /// This process's network namespace (only PID and mount namespaces are new).
    Shared,
    /// A network namespace of its own, with nothing in it (not even `lo` up): Unix sockets
    /// in a shared directory still connect, TCP reaches nothing.
    Own,
    /// A network namespace made beforehand ([`NetPair::a`] or [`NetPair::b`]), by its path
    /// (`/run/netns/<name>`).
    Join(PathBuf),
}

/// The options of `unshare(1)` every side runs under: PID, mount, IPC and UTS namespaces of
/// its own (as docker gives each container), the side's pid 1 killed with its wrapper.
const UNSHARE: &[&str] = &[
    "--pid",
    "--fork",
    "--mount-proc",
    "--kill-child",
    "--mount",
    "--propagation",
    "private",
    "--ipc",
    "--uts",
];

/// Runs in the side's new mount namespace, as root: `$1` pairs of (source, target) follow,
/// then the command to `exec` (the program, or the next stage). Each source is opened
/// (descriptors 3 and up) before `/tmp` and `/dev/shm` are covered by fresh tmpfs mounts,
/// then bind-mounted at its target through the descriptor (a path under the old `/tmp` no
/// longer reaches it; `--no-canonicalize` keeps mount(8) from turning the descriptor back
/// into that path).
const SETUP: &str = r#"set -e
n=$1; shift
k=0
while [ "$k" -lt "$n" ]; do
    eval "exec $((k + 3))<\"\$1\""
    eval "t$k=\$2"
    shift 2
    k=$((k + 1))
done
mount -t tmpfs -o mode=1777,size=64m doca-apart-tmp /tmp
if [ -d /dev/shm ]; then mount -t tmpfs -o mode=1777,size=64m doca-apart-shm /dev/shm; fi
k=0
while [ "$k" -lt "$n" ]; do
    eval "t=\$t$k"
    fd=$((k + 3))
    if [ -d "/proc/self/fd/$fd" ]; then
        mkdir -p "$t"
    else
        mkdir -p "$(dirname "$t")"
        [ -e "$t" ] || : > "$t"
    fi
    mount --no-canonicalize --bind "/proc/self/fd/$fd" "$t"
    eval "exec $fd<&-"
    k=$((k + 1))
done
exec "$@"
"#;

/// The second stage of a side run as another user ([`Container::user`]), its pid 1 in its
/// user namespace: `$1` says whether it gets a root file system of its own, `$2` shared
/// paths follow (already mounted by [`SETUP`]), then the program. A root of its own (as a
/// container's image is) is a tmpfs of the side's root holding the machine's top
/// directories bound in — but `/tmp`, a fresh tmpfs of the side's root with the shared
/// paths bound in, and `/proc`, the side's — entered with chroot(8).
const OWN_ROOT: &str = r#"set -e
own_root=$1; n=$2; shift 2
k=0
while [ "$k" -lt "$n" ]; do
    eval "t$k=\$1"
    shift
    k=$((k + 1))
done
if [ "$own_root" != 1 ]; then exec "$@"; fi
base=/tmp/.doca-apart-root
mkdir "$base"
mount -t tmpfs -o mode=755 doca-apart-root "$base"
for d in /*; do
    name=${d#/}
    case "$name" in tmp|proc) continue ;; esac
    if [ -L "$d" ]; then
        ln -s "$(readlink "$d")" "$base/$name"
    elif [ -d "$d" ]; then
        mkdir "$base/$name"
        mount --rbind "$d" "$base/$name"
    fi
done
mkdir "$base/tmp" "$base/proc"
mount -t tmpfs -o mode=1777,size=64m doca-apart-tmp "$base/tmp"
mount --rbind /proc "$base/proc"
k=0
while [ "$k" -lt "$n" ]; do
    eval "t=\$t$k"
    if [ -d "$t" ]; then
        mkdir -p "$base$t"
    else
        mkdir -p "$(dirname "$base$t")"
        [ -e "$base$t" ] || : > "$base$t"
    fi
    mount --rbind "$t" "$base$t"
    k=$((k + 1))
done
exec chroot "$base" "$@"
"#;

/// At most this many shared paths per side (`sh` redirects descriptors 3 to 9).
const MAX_SHARED: usize = 7;

/// How one side runs apart: in PID and mount namespaces of its own (and the network of
/// [`Container::net`], by default one of its own), with fresh `/tmp` and `/dev/shm`, seeing
/// of this machine's temporary files only the fabric directory and what [`Container::share`]
/// adds. `DOCA_EMU_FABRIC_DIR` names the fabric directory in the side.
#[derive(Clone, Debug)]
pub struct Container {
    name: String,
    fabric: PathBuf,
    shared: Vec<(PathBuf, PathBuf)>,
    net: Net,
    env: Vec<(OsString, Option<OsString>)>,
    user: Option<u32>,
    own_root: bool,
}

impl Container {
    /// A side named `name` (in messages) whose fabric directory is `fabric`, in a network
    /// namespace of its own.
    pub fn new(name: &str, fabric: &Path) -> Container {
        Container {
            name: name.to_string(),
            fabric: fabric.to_path_buf(),
            shared: vec![(fabric.to_path_buf(), fabric.to_path_buf())],
            net: Net::Own,
            env: Vec::new(),
            user: None,
            own_root: true,
        }
    }

    /// Whether a side run as another user ([`Container::user`]) has a root file system of
    /// its own, as a container has its image (default: it has): a tmpfs of its root holding
    /// the machine's top directories. Without, its `/` (and `/tmp`) are the machine's root's,
    /// a user outside its user namespace (as in a shell of `unshare -r`).
    pub fn own_root(mut self, own: bool) -> Container {
        self.own_root = own;
        self
    }

    /// Runs the side as `uid` of this machine (its groups: `uid` alone), root in a user
    /// namespace of its own that maps its uid 0 to `uid` and nothing else — a rootless
    /// container (podman, or docker with user namespaces) — with a root file system of its
    /// own ([`Container::own_root`]). The shared paths must be that uid's to be of use
    /// ([`Volume::chown`]). Check [`user_namespaces`] first.
    pub fn user(mut self, uid: u32) -> Container {
        self.user = Some(uid);
        self
    }

    /// Shares `path` (a directory or a file that exists) with the side at the same path.
    pub fn share(self, path: &Path) -> Container {
        self.share_at(path, path)
    }

    /// Shares `source` (a directory or a file that exists) with the side at `target` (as
    /// `docker run -v source:target`): e.g. a file of an exchange folder as the
    /// `/tmp/export_desc.txt` a sample writes or reads.
    pub fn share_at(mut self, source: &Path, target: &Path) -> Container {
        assert!(source.exists(), "{}: cannot share {}: it does not exist", self.name, source.display());
        assert!(self.shared.len() < MAX_SHARED, "{}: at most {MAX_SHARED} shared paths per side", self.name);
        self.shared.push((source.to_path_buf(), target.to_path_buf()));
        self
    }

    /// The network the side has (default: [`Net::Own`]).
    pub fn net(mut self, net: Net) -> Container {
        self.net = net;
        self
    }

    /// Sets `key` to `value` in the side's environment.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Container {
        self.env.push((key.as_ref().to_owned(), Some(value.as_ref().to_owned())));
        self
    }

    /// Removes `key` from the side's environment.
    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Container {
        self.env.push((key.as_ref().to_owned(), None));
        self
    }

    /// The fabric directory.
    pub fn fabric(&self) -> &Path {
        &self.fabric
    }

    /// The command that runs `program` with `args` in the side (a wrapper: the program is
    /// its first child, [`crate::child_of`]).
    pub fn command(&self, program: impl AsRef<OsStr>, args: &[&str]) -> Command {
        let mut shared = self.shared.clone();
        // A build under the temporary directory (CARGO_TARGET_DIR=/tmp/…) would be hidden
        // by the fresh /tmp: share it too.
        if let Some(target) = target_dir().filter(|t| t.starts_with(std::env::temp_dir())) {
            if !shared.iter().any(|(_, t)| target.starts_with(t)) {
                shared.push((target.clone(), target));
            }
        }
        let mut words: Vec<OsString> = Vec::new();
        if let Net::Join(ns) = &self.net {
            // First, as root: joining a network namespace takes it.
            words.extend(["nsenter".into(), format!("--net={}", ns.display()).into(), "--".into()]);
        }
        let new_net = matches!(self.net, Net::Own).then_some("--net");
        match self.user {
            None => {
                words.push("unshare".into());
                words.extend(UNSHARE.iter().chain(&new_net).map(OsString::from));
                words.extend(["--", "sh", "-c", SETUP, "doca-apart-side"].map(OsString::from));
                words.push(shared.len().to_string().into());
                words.extend(shared.iter().flat_map(|(s, t)| [s.into(), t.into()]));
            }
            Some(uid) => {
                // The mounts by root (as a container engine makes them: a side of another
                // uid need not be able to open what it is given), then `uid`, which a new
                // user namespace (owning the side's other namespaces) maps to its root.
                words.extend(["unshare", "--mount", "--propagation", "private", "--"].map(OsString::from));
                words.extend(["sh", "-c", SETUP, "doca-apart-mounts"].map(OsString::from));
                words.push(shared.len().to_string().into());
                words.extend(shared.iter().flat_map(|(s, t)| [s.into(), t.into()]));
                let (u, g) = (format!("--reuid={uid}"), format!("--regid={uid}"));
                words.extend([
                    OsString::from("setpriv"),
                    u.into(),
                    g.into(),
                    "--clear-groups".into(),
                    "--".into(),
                ]);
                words.extend(["unshare", "--user", "--map-root-user"].map(OsString::from));
                words.extend(UNSHARE.iter().chain(&new_net).map(OsString::from));
                words.extend(["--", "sh", "-c", OWN_ROOT, "doca-apart-side"].map(OsString::from));
                words.push(if self.own_root { "1" } else { "0" }.into());
                words.push(shared.len().to_string().into());
                words.extend(shared.iter().map(|(_, t)| t.into()));
            }
        }
        words.push(program.as_ref().into());
        words.extend(args.iter().map(OsString::from));
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]);
        cmd.env(doca_link::FABRIC_ENV, &self.fabric).env_remove(crate::PEER_WRAP_ENV);
        for (k, v) in &self.env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd
    }

    /// Starts `program` with `args` in the side: a [`Peer`] driven over stdin and stdout,
    /// its stderr captured ([`Peer::stderr`], [`Peer::output`]).
    pub fn spawn(&self, program: impl AsRef<Path>, args: &[&str]) -> Peer {
        let program = program.as_ref();
        let shown = format!(
            "{} in {}",
            program.file_name().unwrap_or(program.as_os_str()).to_string_lossy(),
            self.name
        );
        Peer::from_command(self.command(program, args), &shown, crate::Wrapped::NewPidNamespace)
    }
}

/// The target folder (`target/`) of the running test binary, when it is one (a side shares
/// it when it lies under `/tmp`, as in a CI clone there: the programs it runs are in it).
pub fn target_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let deps = exe.parent()?;
    (deps.file_name()? == "deps").then(|| deps.parent()?.parent().map(Path::to_path_buf))?
}

/// The namespaces process `pid` is in: (PID, mount, network), as the inodes of
/// `/proc/<pid>/ns/{pid,mnt,net}`; `None` once it is gone.
pub fn namespaces(pid: u32) -> Option<(u64, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let ino = |ns: &str| std::fs::metadata(format!("/proc/{pid}/ns/{ns}")).ok().map(|m| m.ino());
    Some((ino("pid")?, ino("mnt")?, ino("net")?))
}

/// The pid process `pid` (as this process sees it) has in its own PID namespace (the last
/// number of `NSpid` in its status); `None` once it is gone.
pub fn ns_pid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("NSpid:"))?.split_whitespace().last()?.parse().ok()
}

/// One end of a [`NetPair`]: a named network namespace with one end of the veth pair.
#[derive(Debug)]
pub struct NetEnd {
    /// The namespace's name (`ip netns`).
    pub name: String,
    /// The veth interface in it.
    pub ifname: String,
    /// Its address on the pair.
    pub addr: std::net::Ipv4Addr,
}

impl NetEnd {
    /// The namespace's file (`/run/netns/<name>`), for [`Net::Join`] or `nsenter --net=`.
    pub fn path(&self) -> PathBuf {
        Path::new(NETNS_DIR).join(&self.name)
    }

    /// [`Net::Join`] of this end.
    pub fn join(&self) -> Net {
        Net::Join(self.path())
    }
}

const NETNS_DIR: &str = "/run/netns";

/// Names of network namespaces made by this module: `doca-apart-<pid>-<serial>-<a|b>`.
const NETNS_PREFIX: &str = "doca-apart-";

/// Two network namespaces joined by a veth pair, each end with its address and `lo` up,
/// nothing else in them (traffic goes between the two only). Both namespaces (and with them
/// the pair) are removed when it drops, also when a test panics. Names carry this process's
/// pid: parallel test processes never meet; namespaces left by a process that is gone
/// (killed before its drop) are removed when the next pair is made.
#[derive(Debug)]
pub struct NetPair {
    /// The first end.
    pub a: NetEnd,
    /// The second end.
    pub b: NetEnd,
}

/// Runs `ip` with `args`; the error names the command and what it said.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip {}: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl NetPair {
    /// Makes the pair: `a` and `b` the two addresses, in one subnet of `prefix` bits (e.g.
    /// 10.231.7.1 and 10.231.7.2 with 30). Panics, after removing what it made, when a step
    /// fails (check [`network_pairs`] first).
    pub fn new(a: std::net::Ipv4Addr, b: std::net::Ipv4Addr, prefix: u8) -> NetPair {
        remove_stale_namespaces();
        let (pid, n) = (std::process::id(), serial());
        let end = |side: &str, addr| NetEnd {
            name: format!("{NETNS_PREFIX}{pid}-{n}-{side}"),
            // At most 15 bytes: "dv" + pid (≤ 7 hex digits) + side + serial.
            ifname: format!("dv{pid:x}{side}{n:x}"),
            addr,
        };
        let pair = NetPair { a: end("a", a), b: end("b", b) };
        if let Err(e) = pair.make(prefix) {
            drop(pair);
            panic!("cannot make a veth pair between two network namespaces: {e}");
        }
        pair
    }

    fn make(&self, prefix: u8) -> Result<(), String> {
        let (a, b) = (&self.a, &self.b);
        ip(&["netns", "add", &a.name])?;
        ip(&["netns", "add", &b.name])?;
        ip(&[
            "link", "add", &a.ifname, "netns", &a.name, "type", "veth", "peer", "name", &b.ifname, "netns",
            &b.name,
        ])?;
        for end in [a, b] {
            let cidr = format!("{}/{prefix}", end.addr);
            ip(&["-n", &end.name, "addr", "add", &cidr, "dev", &end.ifname])?;
            ip(&["-n", &end.name, "link", "set", &end.ifname, "up"])?;
            ip(&["-n", &end.name, "link", "set", "lo", "up"])?;
        }
        Ok(())
    }
}

impl Drop for NetPair {
    fn drop(&mut self) {
        for end in [&self.a, &self.b] {
            if Path::new(NETNS_DIR).join(&end.name).exists() {
                if let Err(e) = ip(&["netns", "del", &end.name]) {
                    eprintln!("warning: {e}");
                }
            }
        }
    }
}

/// Removes the network namespaces this module made in processes that are gone.
fn remove_stale_namespaces() {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else { return };
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(NETNS_PREFIX).and_then(|r| r.split('-').next()) else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

/// The `deps` folder of the running test binary, where cargo put `libdoca_capi.so` (this
/// crate depends on `doca-capi`).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("target/<profile>/deps/<test>");
    [deps.to_path_buf(), deps.parent().expect("target/<profile>").to_path_buf()]
        .into_iter()
        .find(|d| d.join("libdoca_capi.so").exists())
        .unwrap_or_else(|| panic!("libdoca_capi.so is not beside {}", exe.display()))
}

/// `capi/tests/c/<name>.c` built (once per process) against `capi/include` and
/// `libdoca_capi.so` at gnu17, with warnings and gcc 14's errors as errors, for neither side
/// (decided at run time by the device opened); the program's path, beside the library.
pub fn c_program(name: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(n, _)| n == name) {
        return p.clone();
    }
    let capi = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").join("capi");
    let lib = lib_dir();
    let out = private_bin_dir().join(name);
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let strict: Vec<String> =
        ["implicit-function-declaration", "int-conversion", "incompatible-pointer-types"]
            .iter()
            .map(|w| format!("-Werror={w}"))
            .collect();
    let status = Command::new(&cc)
        .args(["-std=gnu17", "-Wall", "-Wextra", "-Werror"])
        .args(&strict)
        .arg(format!("-I{}", capi.join("include").display()))
        .arg(format!("-I{}", capi.join("include/any").display()))
        .arg(format!("-I{}", capi.join("tests/c").display()))
        .arg("-o")
        .arg(&out)
        .arg(capi.join("tests/c").join(format!("{name}.c")))
        .arg(format!("-L{}", lib.display()))
        .arg("-Wl,--disable-new-dtags")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ldoca_capi")
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?}: {e}"));
    assert!(status.success(), "{name}.c does not build against capi/include");
    built.push((name.to_string(), out.clone()));
    out
}

/// The Rust samples' programs (`samples/src/bin`) [`sample_program`] builds, all at once.
pub const SAMPLES: [&str; 7] = [
    "cc_ctrl_path_server",
    "cc_ctrl_path_client",
    "cc_data_path_high_speed_server",
    "cc_data_path_high_speed_client",
    "comm_channel_server",
    "comm_channel_client",
    "cc_chatter",
];

/// A folder of this process's own beside the test binary (`target/<profile>/apart-bin-<pid>`)
/// for the programs the sides run: the C programs built here, and hard links to the Rust
/// samples, which another cargo build replacing `target/<profile>/<sample>` cannot pull
/// from under a side. Made on first use, after removing those of processes that are gone.
fn private_bin_dir() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary");
        let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf();
        if let Ok(entries) = std::fs::read_dir(&profile_dir) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let Some(pid) = name.strip_prefix("apart-bin-").and_then(|p| p.parse::<u32>().ok()) else {
                    continue;
                };
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = profile_dir.join(format!("apart-bin-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap_or_else(|e| panic!("cannot make {}: {e}", dir.display()));
        dir
    })
    .clone()
}

/// The path of the Rust sample `name` (one of [`SAMPLES`]), unmodified, built by cargo into
/// this test binary's target folder and profile on the first call (cargo test of this crate
/// alone does not build another crate's programs), and linked into this process's own
/// folder.
pub fn sample_program(name: &str) -> PathBuf {
    assert!(SAMPLES.contains(&name), "{name} is not one of the samples built here");
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let exe = std::env::current_exe().expect("the test binary");
        let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>").to_path_buf();
        let target = target_dir().expect("a test binary in target/<profile>/deps");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").into());
        let mut cmd = Command::new(cargo);
        cmd.args(["build", "-q", "-p", "doca-samples"]).env("CARGO_TARGET_DIR", &target);
        match profile_dir.file_name().and_then(OsStr::to_str) {
            Some("debug") => {}
            Some("release") => {
                cmd.arg("--release");
            }
            Some(other) => {
                cmd.args(["--profile", other]);
            }
            None => panic!("no profile folder above {}", exe.display()),
        }
        for s in SAMPLES {
            cmd.args(["--bin", s]);
        }
        let out = cmd.output().expect("run cargo build");
        assert!(out.status.success(), "the samples do not build:\n{}", String::from_utf8_lossy(&out.stderr));
        let dir = private_bin_dir();
        for s in SAMPLES {
            std::fs::hard_link(profile_dir.join(s), dir.join(s))
                .unwrap_or_else(|e| panic!("cannot link {s} into {}: {e}", dir.display()));
        }
        dir
    });
    dir.join(name)
}

/// Waits for `p` to end and checks it ended well: its stdout and stderr together, for the
/// checks (panics with them when it failed).
pub fn ended_well(who: &str, p: Peer) -> String {
    let out = p.output();
    let text = format!("{}{}", out.stderr, out.stdout);
    assert!(out.success, "{who} failed:\n{text}");
    text
}

/// Waits (at most a minute) until a file whose name satisfies `is` is in `dir`.
pub fn wait_for_file(dir: &Path, what: &str, is: impl Fn(&str) -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if std::fs::read_dir(dir).unwrap().flatten().any(|e| is(&e.file_name().to_string_lossy())) {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{what} never appeared in {}", dir.display());
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
