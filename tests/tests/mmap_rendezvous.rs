//! Issue 34 item 3: one rendezvous for memory. An export's descriptor names the exporter's
//! memory service and a token; nothing is opened through `/proc/<pid>/fd`, no public name
//! shows the token, a revoked export is `NOT_FOUND` at once whatever took its old name, and
//! importers in another PID namespace or of a non-dumpable exporter are served.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::OnceLock;
use std::time::Duration;

use doca_core::{open_device_with_pci, Dev, Error};
use doca_mmap::{AccessFlags, Mmap, SharedMem};
use doca_tests::{from_hex, to_hex, Peer};

const PEER: &str = env!("CARGO_BIN_EXE_mem_peer");

/// A private fabric directory for this file's tests and their peers.
fn private_fabric() {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("doca-rdv-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        std::env::set_var("DOCA_EMU_FABRIC_DIR", &d);
        d
    });
}

/// A started map of `len` bytes (shared memory or heap memory), exported for b1:00.0.
fn exported(shared: bool, text: &[u8]) -> (Mmap, Vec<u8>, Dev) {
    private_fabric();
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let map = Mmap::create().unwrap();
    if shared {
        let mem = SharedMem::alloc(1 << 16).unwrap();
        mem.write(0, text).unwrap();
        map.set_memrange(mem).unwrap();
    } else {
        let mut v = vec![0u8; 1 << 16];
        v[..text.len()].copy_from_slice(text);
        map.set_memrange(v).unwrap();
    }
    map.set_permissions(AccessFlags::PCI_READ_WRITE | AccessFlags::LOCAL_READ_WRITE).unwrap();
    map.add_dev(&dev).unwrap();
    map.start().unwrap();
    let desc = map.export_pci(&dev).unwrap();
    (map, desc, dev)
}

/// `create_from_export` of `desc` in a thread: its answer, or `None` if it takes longer than
/// a generous liveness bound (20 s: the honest answer is immediate).
fn import_within_bound(desc: Vec<u8>) -> Option<Result<(), Error>> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let dev = open_device_with_pci("03:00.0", None).unwrap();
        let _ = tx.send(Mmap::create_from_export(None, &desc, &dev).map(drop));
    });
    rx.recv_timeout(Duration::from_secs(20)).ok()
}

/// A descriptor whose old "fd" field (bytes 20..24) names a FIFO of the exporter with no
/// writer: the importer used to open `/proc/<pid>/fd/<fd>` without `O_NONBLOCK` and hang
/// for ever. Now nothing is opened by name: `NOT_FOUND` at once.
#[test]
fn a_descriptor_naming_a_fifo_fails_at_once() {
    let (_map, desc, _dev) = exported(true, b"fifo");
    let path = std::env::temp_dir().join(format!("doca-rdv-fifo-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let made = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(made.success(), "mkfifo");
    let fifo: OwnedFd = rustix::fs::open(
        &path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    let mut forged = desc.clone();
    forged[20..24].copy_from_slice(&fifo.as_raw_fd().to_le_bytes());
    let mut peer = Peer::spawn(PEER, &[]);
    // (The peer answers within the harness's deadline, or the test fails.)
    assert_eq!(peer.ask(&format!("import {}", to_hex(&forged))), "err DOCA_ERROR_NOT_FOUND");
    assert_eq!(peer.ask(&format!("import {}", to_hex(&desc))), "ok", "the real descriptor still imports");
    assert_eq!(peer.ask("read 0 4"), "data fifo");
    assert!(peer.finish());
    let _ = std::fs::remove_file(&path);
}

/// No socket name any user can list (`/proc/net/unix`) shows an export's token: a process
/// never given the descriptor cannot rebuild it (it used to read the served export's abstract
/// socket `@doca-emu/mmap/<pid>/<token>` there).
#[test]
fn no_public_socket_name_shows_an_export_s_token() {
    for shared in [false, true] {
        let (_map, desc, _dev) = exported(shared, b"secret");
        let token = &desc[28..44];
        let halves = [
            u64::from_le_bytes(token[..8].try_into().unwrap()),
            u64::from_le_bytes(token[8..].try_into().unwrap()),
        ];
        let as_bytes: String = token.iter().map(|b| format!("{b:02x}")).collect();
        let listed = std::fs::read_to_string("/proc/net/unix").unwrap();
        for needle in [format!("{:016x}", halves[0]), format!("{:016x}", halves[1]), as_bytes] {
            assert!(!listed.contains(&needle), "the token {needle} is public (shared memory: {shared})");
        }
    }
}

/// After revocation, whatever now listens under the export's old public name (with its
/// backlog full) does not hold up an honest import: `NOT_FOUND` at once (it used to block in
/// `connect()` while the backlog stayed full).
#[test]
fn a_revoked_export_is_not_found_at_once_whatever_took_its_old_name() {
    let (map, desc, _dev) = exported(false, b"revoked");
    map.stop().unwrap();
    // What the old design named the export by: an abstract socket with the pid and token.
    let pid = u32::from_le_bytes(desc[16..20].try_into().unwrap());
    let t = &desc[28..44];
    let name = format!(
        "doca-emu/mmap/{pid}/{:016x}{:016x}",
        u64::from_le_bytes(t[..8].try_into().unwrap()),
        u64::from_le_bytes(t[8..].try_into().unwrap())
    );
    use rustix::net::{AddressFamily, SocketAddrUnix, SocketFlags, SocketType};
    let squatter =
        rustix::net::socket_with(AddressFamily::UNIX, SocketType::SEQPACKET, SocketFlags::CLOEXEC, None)
            .unwrap();
    let addr = SocketAddrUnix::new_abstract_name(name.as_bytes()).unwrap();
    rustix::net::bind(&squatter, &addr).unwrap();
    rustix::net::listen(&squatter, 0).unwrap();
    let mut fillers = Vec::new();
    for _ in 0..4 {
        let s = rustix::net::socket_with(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC | SocketFlags::NONBLOCK,
            None,
        )
        .unwrap();
        let _ = rustix::net::connect(&s, &addr);
        fillers.push(s);
    }
    assert_eq!(import_within_bound(desc), Some(Err(Error::NotFound)), "not NOT_FOUND within 20 s");
}

/// An importer in another PID namespace (where the exporter's pid means nothing and
/// `/proc/<pid>/fd` does not exist) imports both kinds of export. Needs `unshare` and root
/// (CI); skipped with a message elsewhere.
#[test]
fn an_importer_in_another_pid_namespace_imports_both_kinds() {
    private_fabric();
    let works = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        eprintln!("skipped: `unshare --pid --fork --mount-proc` is not available here (needs root)");
        return;
    }
    let (_shared, sdesc, _dev) = exported(true, b"mapped across namespaces");
    let (_heap, hdesc, _dev) = exported(false, b"served across namespaces");
    let mut peer = Peer::spawn("unshare", &["--pid", "--fork", "--mount-proc", PEER]);
    assert_eq!(peer.ask(&format!("import {}", to_hex(&sdesc))), "ok");
    assert_eq!(peer.ask("read 0 24"), "data mapped across namespaces");
    // (The served import's welcome came over the connection: the import is live.)
    assert_eq!(peer.ask(&format!("import {}", to_hex(&hdesc))), "ok");
    assert!(peer.finish());
}

/// A non-dumpable exporter (`PR_SET_DUMPABLE` 0: its `/proc/<pid>/fd` belongs to root) still
/// exports both kinds.
#[test]
fn a_non_dumpable_exporter_still_exports() {
    private_fabric();
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let mut peer = Peer::spawn(PEER, &[]);
    assert_eq!(peer.ask("nondumpable"), "ok");
    for cmd in ["export", "export_heap"] {
        let answer = peer.ask(&format!("{cmd} 8192 from a non-dumpable process"));
        let desc = from_hex(answer.strip_prefix("desc ").expect("a descriptor")).unwrap();
        let map = Mmap::create_from_export(None, &desc, &dev).unwrap();
        let mut got = [0u8; 27];
        map.access().unwrap().read(0, &mut got).unwrap();
        assert_eq!(&got, b"from a non-dumpable process", "{cmd}");
    }
    assert!(peer.finish());
}
