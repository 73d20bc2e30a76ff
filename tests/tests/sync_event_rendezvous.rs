//! Issue 34 item 3 for sync events: an export blob names the exporter's memory service and a
//! token (as memory-map descriptors do, see `mmap_rendezvous.rs`); the page's memfd comes
//! over the service's socket, nothing is opened through `/proc/<pid>/fd`, so a blob naming a
//! FIFO, or a service that is no socket, fails at once with `NOT_FOUND`.

use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::OnceLock;

use doca_core::open_device_with_pci;
use doca_sync_event::{Location, SyncEvent};
use doca_tests::{to_hex, Peer};

const PEER: &str = env!("CARGO_BIN_EXE_se_peer");

/// A private fabric directory for this file's tests and their peers.
fn private_fabric() -> &'static std::path::Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("doca-se-rdv-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::set_permissions(&d, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        std::env::set_var("DOCA_EMU_FABRIC_DIR", &d);
        d
    })
}

/// An event of this process, started and exported for b1:00.0: the event and its blob.
fn exported() -> (SyncEvent, Vec<u8>) {
    private_fabric();
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let ev = SyncEvent::create().unwrap();
    ev.add_publisher_location(Location::RemotePci).unwrap();
    ev.add_subscriber_location(Location::Cpu(dev.as_devinfo().pci_addr())).unwrap();
    ev.start().unwrap();
    let blob = ev.export_to_remote_pci(&dev).unwrap();
    (ev, blob)
}

fn mkfifo(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo");
}

/// A blob whose old "fd" field (bytes 12..16, after the exporter's pid) names a FIFO of the
/// exporter with no writer: the importer used to open `/proc/<pid>/fd/<fd>` without
/// `O_NONBLOCK` and hang for ever. Now nothing is opened by name: `NOT_FOUND` at once (the
/// peer answers within the harness's deadline, or the test fails).
#[test]
fn a_blob_naming_a_fifo_fails_at_once() {
    let (ev, blob) = exported();
    let path = std::env::temp_dir().join(format!("doca-se-rdv-fifo-{}", std::process::id()));
    mkfifo(&path);
    let fifo: OwnedFd = rustix::fs::open(
        &path,
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    let mut forged = blob.clone();
    forged[12..16].copy_from_slice(&fifo.as_raw_fd().to_le_bytes());
    let mut peer = Peer::spawn(PEER, &[]);
    assert_eq!(peer.ask(&format!("import {}", to_hex(&forged))), "err DOCA_ERROR_NOT_FOUND");
    assert_eq!(peer.ask(&format!("import {}", to_hex(&blob))), "ok", "the real blob still imports");
    ev.update_set(41).unwrap();
    assert_eq!(peer.ask("get"), "value 41");
    assert!(peer.finish());
    let _ = std::fs::remove_file(&path);
}

/// A blob naming a service whose socket file in the fabric directory is a FIFO (with no
/// writer), or one that does not exist: `NOT_FOUND` at once, never a hang.
#[test]
fn a_blob_naming_a_bogus_service_fails_at_once() {
    let (_ev, blob) = exported();
    let pid = u32::from_le_bytes(blob[8..12].try_into().unwrap());
    let nonce: u64 = 0x0123_4567_89ab_cdef;
    mkfifo(&private_fabric().join(format!("mem-{pid}-{nonce:016x}.sock")));
    let mut fifo_service = blob.clone();
    fifo_service[12..20].copy_from_slice(&nonce.to_le_bytes());
    let mut no_service = blob.clone();
    no_service[12..20].copy_from_slice(&(nonce + 1).to_le_bytes());
    let mut peer = Peer::spawn(PEER, &[]);
    assert_eq!(peer.ask(&format!("import {}", to_hex(&fifo_service))), "err DOCA_ERROR_NOT_FOUND");
    assert_eq!(peer.ask(&format!("import {}", to_hex(&no_service))), "err DOCA_ERROR_NOT_FOUND");
    assert!(peer.finish());
}
