//! Floods of descriptors from a hostile local peer, as real processes: a server takes none of
//! them for good, and when a peer has stalled every one of its closing threads, the files
//! waiting to be closed do not fill its descriptor table. A test binary of its own: the
//! floods load both cores for a moment, which the timing-sensitive tests of `hostile_peer`
//! should not share; and the two tests here take turns for the same reason.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use doca_tests::Peer;

const HOSTILE: &str = env!("CARGO_BIN_EXE_hostile");
const CC_PEER: &str = env!("CARGO_BIN_EXE_cc_peer");

/// One flood at a time.
static TURN: Mutex<()> = Mutex::new(());

fn unique(tag: &str) -> String {
    format!("floods-{tag}-{}", std::process::id())
}

/// Whether an honest client of the server `name` gets its echoes (within a minute).
fn an_honest_client_is_served(name: &str) -> bool {
    let mut client = Peer::spawn(CC_PEER, &["client", name, "echo", "3", "5"]);
    let deadline = Instant::now() + Duration::from_secs(60);
    while !client.exited() {
        assert!(Instant::now() < deadline, "the honest client was not served within a minute");
        std::thread::sleep(Duration::from_millis(5));
    }
    client.finish()
}

/// What the descriptors of process `pid` are (their `/proc` links).
fn fd_targets(pid: u32) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return Vec::new() };
    dir.filter_map(|e| Some(std::fs::read_link(e.ok()?.path()).ok()?.to_string_lossy().into_owned()))
        .collect()
}

/// Descriptors open in process `pid` now.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0)
}

/// Handshakes that each carry as many descriptors as a packet can (copies of the sender's
/// own pipe end), to a server with the usual descriptor limit and to one with room for two
/// such packets only (the kernel then drops what does not fit): the server takes none of
/// them for good — once the flood is over its descriptor count is back where it was — and
/// still serves an honest client.
#[test]
fn a_flood_of_descriptors_leaves_none_of_them_open_in_the_server() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    use std::os::fd::AsFd;
    for (i, nofile) in [None, Some("600")].into_iter().enumerate() {
        let name = unique(&format!("fdflood{i}"));
        let mut args = vec!["server", name.as_str()];
        args.extend(nofile.iter().flat_map(|n| ["--nofile", n]));
        let server = Peer::spawn(CC_PEER, &args);
        assert_eq!(server.line(), "running");
        let before = open_fds(server.pid());
        let pci = doca_core::PciAddr::parse("b1:00.0").unwrap();
        let path = doca_link::service_path("cc", pci, &name).unwrap();
        let (r, _w) = rustix::pipe::pipe().unwrap();
        let many = vec![r.as_fd(); doca_link::discard::MAX_FDS];
        doca_tests::flood_with_descriptors(&path, &many, 200);
        let deadline = Instant::now() + Duration::from_secs(30);
        while open_fds(server.pid()) > before {
            let now = open_fds(server.pid());
            assert!(
                Instant::now() < deadline,
                "{nofile:?}: {now} descriptors open in the server, {before} before"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(an_honest_client_is_served(&name), "{nofile:?}: the honest client failed");
        assert!(server.finish());
    }
}

/// A hostile client stalls every closing thread of the server (the last files of pipes whose
/// locks it holds, sent as doorbells), then floods it with handshakes carrying 253
/// descriptors each. The files wait to be closed, but beyond a cap not in the server's
/// descriptor table (in flight to a socket of its own); the server serves an honest client
/// meanwhile, and once the locks go every file is closed.
#[test]
fn descriptors_behind_stalled_closes_do_not_fill_the_server_s_table() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let name = unique("lockflood");
    let server = Peer::spawn(CC_PEER, &["server", &name]);
    assert_eq!(server.line(), "running");
    let before = open_fds(server.pid());
    let pipes_before = fd_targets(server.pid()).iter().filter(|t| t.starts_with("pipe:")).count();
    let mut hostile = Peer::spawn(HOSTILE, &["locked-flood", &name, "100"]);
    assert_eq!(hostile.line(), "flooded");
    // The flood is read within moments; watch the server's table meanwhile: the files
    // waiting in the table (a discard waits a moment for the limbo thread beyond four times
    // the cap), one packet's just received, the limbo thread's batch in hand, the
    // handshakes' sockets: about 750 here, against every one of the 25 300 files without
    // the limbo. The bound leaves room for a slow machine.
    let bound = before + 2000;
    let mut most = 0;
    let until_t = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until_t {
        most = most.max(open_fds(server.pid()));
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(
        doca_link::discard::stuck_closing_threads(server.pid()),
        doca_link::discard::MAX_CLOSERS,
        "every closing thread is stuck"
    );
    assert!(most <= bound, "{most} descriptors open in the server at most ({before} before, bound {bound})");
    assert!(an_honest_client_is_served(&name), "the honest client failed");
    hostile.send("release");
    assert_eq!(hostile.line(), "released");
    // Every file the hostile client sent (all of them pipe ends) is closed: none in the
    // server's table, none in flight on any of its sockets.
    let pipes = |pid| fd_targets(pid).into_iter().filter(|t| t.starts_with("pipe:")).count();
    let deadline = Instant::now() + Duration::from_secs(30);
    while pipes(server.pid()) > pipes_before || doca_link::discard::files_in_flight_to(server.pid()) > 0 {
        let now = pipes(server.pid());
        assert!(
            Instant::now() < deadline,
            "{now} pipe ends open in the server after the locks went ({pipes_before} before)"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(hostile);
    assert!(server.finish());
}
