//! Host and DPU apart as two containers on one machine (issue 35): every side runs in PID,
//! mount and network namespaces of its own, with fresh `/tmp` and `/dev/shm`, sharing only
//! the fabric directory (and, for the pairs that exchange files, one exchange folder) — what
//! two containers sharing a volume have (`doca_tests::apart`). The unmodified Rust sample
//! pairs, the C comch pair, a dma_copy-shaped C pair and a sync-event pair each run so; a
//! hostile peer of another PID namespace is held to the budgets of one process, and two
//! peers that are both pid 1 of their namespaces are charged apart. Skipped, saying so,
//! where the machine does not allow namespaces (not root).

use std::path::Path;
use std::time::{Duration, Instant};

use doca_tests::apart::{self, ended_well, namespaces, ns_pid, Container, NetPair, Volume};
use doca_tests::Peer;

const CC_PEER: &str = env!("CARGO_BIN_EXE_cc_peer");
const HOSTILE: &str = env!("CARGO_BIN_EXE_hostile");
const SE_PEER: &str = env!("CARGO_BIN_EXE_se_peer");
const NET_PROBE: &str = env!("CARGO_BIN_EXE_net_probe");

/// The host side and the DPU side over the fabric directory `fabric`, each in a network
/// namespace of its own.
fn sides(fabric: &Volume) -> (Container, Container) {
    (Container::new("the host container", fabric.path()), Container::new("the DPU container", fabric.path()))
}

/// `a` and `b` (running peers) are apart: PID, mount and network namespaces differ from each
/// other's and from this process's, and each is pid 1 of its own PID namespace.
fn assert_apart(a: &Peer, b: &Peer) {
    let here = namespaces(std::process::id()).unwrap();
    let (na, nb) =
        (namespaces(a.pid()).expect("a running peer"), namespaces(b.pid()).expect("a running peer"));
    for (what, x, y, z) in
        [("PID", na.0, nb.0, here.0), ("mount", na.1, nb.1, here.1), ("network", na.2, nb.2, here.2)]
    {
        assert!(x != y && x != z && y != z, "{what} namespaces: {x} {y} (this process: {z})");
    }
    assert_eq!(
        (ns_pid(a.pid()), ns_pid(b.pid())),
        (Some(1), Some(1)),
        "each side's program is its namespace's pid 1"
    );
}

/// A sample pair's server is apart from this process (pid 1 of its own namespaces), and its
/// client, while it runs (a sample client may be done before it is looked at), from both.
fn assert_sample_apart(server: &Peer, client: &mut Peer) {
    let here = namespaces(std::process::id()).unwrap();
    let s = namespaces(server.pid()).expect("the server runs until its client is done");
    assert!(s.0 != here.0 && s.1 != here.1 && s.2 != here.2, "{s:?} {here:?}");
    assert_eq!(ns_pid(server.pid()), Some(1));
    if let Some(c) = client.running_pid().and_then(namespaces) {
        assert!(c.0 != s.0 && c.1 != s.1 && c.2 != s.2 && c.0 != here.0, "{c:?} {s:?} {here:?}");
    }
}

/// Waits (at most a minute, and while `maker` runs) until a file whose name satisfies `is`
/// is in `dir`; fails with `maker`'s log.
fn wait_for_file(dir: &Path, maker: &mut Peer, what: &str, is: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let found = std::fs::read_dir(dir).unwrap().flatten().any(|e| is(&e.file_name().to_string_lossy()));
        if found {
            return;
        }
        if maker.exited() || Instant::now() > deadline {
            panic!("{what} never appeared in {}; its maker's log:\n{}", dir.display(), maker.stderr());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What a side sees: `/tmp` holding only the fabric directory's path, `/dev/shm` empty, its
/// own `/proc` (it is pid 1, alone), no network but its own `lo`; what it writes into the
/// fabric directory is seen here, what it writes into its `/tmp` is not.
#[test]
fn a_side_sees_only_what_two_containers_share() {
    if !apart::containers("a side apart") {
        return;
    }
    let fabric = Volume::new("sees");
    // Something else of the machine's /tmp, which the side must not see.
    let outside = Volume::new("outside");
    let script = r#"
        echo "pid $$"
        echo "procs $(cat /proc/[0-9]*/comm | sort -u | tr '\n' ' ')"
        echo "tmp $(find /tmp -mindepth 1 -maxdepth 3 | sort | tr '\n' ' ')"
        echo "shm $(ls -A /dev/shm | wc -l)"
        echo "links $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' ')"
        echo "fabric $DOCA_EMU_FABRIC_DIR $(stat -c %a "$DOCA_EMU_FABRIC_DIR")"
        echo inside > "$DOCA_EMU_FABRIC_DIR/written-inside"
        echo private > /tmp/private-file
        echo private > /dev/shm/private-shm
    "#;
    let side = Container::new("a side", fabric.path()).spawn("sh", &["-c", script]);
    let text = ended_well("the side", side);
    assert!(text.contains("pid 1\n"), "{text}");
    let procs = text.lines().find_map(|l| l.strip_prefix("procs ")).expect("the processes line");
    assert!(
        procs.split_whitespace().all(|c| ["sh", "cat", "sort", "tr"].contains(&c)),
        "only itself and its helpers in its /proc: {text}"
    );
    // What the side's /tmp holds: the fabric directory (and the folders above it), and the
    // test build's folder when it lies under /tmp (the harness shares it: the programs are
    // in it) — nothing else of the machine's /tmp.
    let tmp_line = text.lines().find_map(|l| l.strip_prefix("tmp ")).expect("the /tmp line");
    let shared: Vec<std::path::PathBuf> = std::iter::once(fabric.path().to_path_buf())
        .chain(apart::target_dir().filter(|t| t.starts_with(std::env::temp_dir())))
        .collect();
    for seen in tmp_line.split_whitespace().map(Path::new) {
        assert!(
            shared.iter().any(|s| s.starts_with(seen) || seen.starts_with(s)),
            "/tmp holds {} besides what is shared ({shared:?}): {text}",
            seen.display()
        );
    }
    assert!(
        tmp_line.split_whitespace().any(|p| Path::new(p) == fabric.path()),
        "the fabric directory is there: {text}"
    );
    assert!(!text.contains(&outside.path().display().to_string()), "{text}");
    assert!(text.contains("shm 0\n"), "{text}");
    assert!(text.contains("links lo \n"), "a network of its own, lo alone: {text}");
    assert!(text.contains(&format!("fabric {} 700\n", fabric.path().display())), "{text}");
    assert_eq!(std::fs::read_to_string(fabric.path().join("written-inside")).unwrap(), "inside\n");
    assert!(!std::env::temp_dir().join("private-file").exists(), "the side's /tmp is its own");
    assert!(!Path::new("/dev/shm/private-shm").exists(), "the side's /dev/shm is its own");
}

/// Two sides joined by a veth pair reach each other over TCP at the addresses chosen (and a
/// side with a network of its own reaches neither); the namespaces and the pair are gone
/// once the pair is dropped, also by a test that panics.
#[test]
fn a_veth_pair_joins_two_sides_and_goes_at_the_end() {
    if !apart::network_pairs("a veth pair") {
        return;
    }
    let fabric = Volume::new("veth");
    let pair = NetPair::new([10, 231, 7, 1].into(), [10, 231, 7, 2].into(), 30);
    let listener = Container::new("side b", fabric.path()).net(pair.b.join());
    let server = listener.spawn(NET_PROBE, &["listen", "10.231.7.2:7070"]);
    assert_eq!(server.line(), "listening");
    let lonely =
        Container::new("a side alone", fabric.path()).spawn(NET_PROBE, &["connect", "10.231.7.2:7070", "x"]);
    let lonely = ended_well("the lonely side", lonely);
    assert!(lonely.contains("unreachable"), "{lonely}");
    let client = Container::new("side a", fabric.path())
        .net(pair.a.join())
        .spawn(NET_PROBE, &["connect", "10.231.7.2:7070", "over-the-pair"]);
    assert!(ended_well("side a", client).contains("echo over-the-pair"));
    assert_eq!(server.line(), "served");
    assert!(server.finish());
    let names = [pair.a.path(), pair.b.path()];
    let ifname = pair.a.ifname.clone();
    drop(pair);
    assert!(names.iter().all(|n| !n.exists()), "the namespaces are removed");
    let links = std::process::Command::new("ip").args(["-o", "link"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&links.stdout).contains(&ifname), "the veth pair is gone");

    // Also when the test using it panics.
    let (tx, rx) = std::sync::mpsc::channel();
    let panicked = std::thread::spawn(move || {
        let pair = NetPair::new([10, 231, 8, 1].into(), [10, 231, 8, 2].into(), 30);
        tx.send([pair.a.path(), pair.b.path()]).unwrap();
        panic!("a test failing with its pair made");
    })
    .join();
    assert!(panicked.is_err());
    let names = rx.recv().unwrap();
    assert!(names.iter().all(|n| !n.exists()), "the namespaces are removed after a panic");
}

/// The unmodified `cc_ctrl_path_server` (DPU) and `cc_ctrl_path_client` (host), apart.
#[test]
fn the_ctrl_path_samples_talk_apart() {
    if !apart::containers("the control-path samples apart") {
        return;
    }
    let fabric = Volume::new("ctrl");
    let (host, dpu) = sides(&fabric);
    let mut server = dpu.spawn(apart::sample_program("cc_ctrl_path_server"), &["-t", "Reply from the DPU"]);
    wait_for_file(fabric.path(), &mut server, "the server's rendezvous socket", |n| n.starts_with("cc-"));
    let mut client = host.spawn(apart::sample_program("cc_ctrl_path_client"), &[]);
    assert_sample_apart(&server, &mut client);
    let clog = ended_well("the client", client);
    let slog = ended_well("the server", server);
    assert!(slog.contains("New client connected to server"), "{slog}");
    assert!(slog.contains("Message received: 'Message from the client'"), "{slog}");
    assert!(clog.contains("Message received: 'Reply from the DPU'"), "{clog}");
    for log in [&slog, &clog] {
        assert!(log.contains("Sample finished successfully"), "{log}");
    }
}

/// The unmodified `cc_data_path_high_speed_server` and `_client`: the control path, then
/// producers and consumers over the fast path (memory handed over by `SCM_RIGHTS`), apart.
#[test]
fn the_data_path_samples_talk_apart() {
    if !apart::containers("the data-path samples apart") {
        return;
    }
    let fabric = Volume::new("data");
    let (host, dpu) = sides(&fabric);
    let mut server =
        dpu.spawn(apart::sample_program("cc_data_path_high_speed_server"), &["-t", "Bulk from the DPU"]);
    wait_for_file(fabric.path(), &mut server, "the server's rendezvous socket", |n| n.starts_with("cc-"));
    let mut client =
        host.spawn(apart::sample_program("cc_data_path_high_speed_client"), &["-t", "Bulk from the host"]);
    assert_sample_apart(&server, &mut client);
    let clog = ended_well("the client", client);
    let slog = ended_well("the server", server);
    assert!(slog.contains("Message received: 'Bulk from the host'"), "{slog}");
    assert!(clog.contains("Message received: 'Bulk from the DPU'"), "{clog}");
    for log in [&slog, &clog] {
        assert!(log.contains("Got a new remote consumer with ID = ["), "{log}");
        assert!(log.contains("Producer task sent successfully"), "{log}");
        assert!(log.contains("Received message: 'start_data_path_test'"), "{log}");
        assert!(log.contains("Received message: 'stop_data_path_test'"), "{log}");
        assert!(log.contains("Sample finished successfully"), "{log}");
    }
}

/// The unmodified legacy `comm_channel_server` and `comm_channel_client`, apart.
#[test]
fn the_legacy_samples_talk_apart() {
    if !apart::containers("the legacy samples apart") {
        return;
    }
    let fabric = Volume::new("legacy");
    let (host, dpu) = sides(&fabric);
    let mut server = dpu.spawn(apart::sample_program("comm_channel_server"), &[]);
    // As in DOCA, the legacy client fails when no service listens yet.
    wait_for_file(fabric.path(), &mut server, "the service's socket", |n| {
        n.starts_with("ep-") && n.ends_with(".sock")
    });
    let mut client = host.spawn(apart::sample_program("comm_channel_client"), &[]);
    assert_sample_apart(&server, &mut client);
    let clog = ended_well("the client", client);
    let slog = ended_well("the server", server);
    assert!(slog.contains("Received message: Message from the client"), "{slog}");
    assert!(clog.contains("Connection to server was established successfully"), "{clog}");
    assert!(clog.contains("Server response: Message from the server"), "{clog}");
}

/// The C comch pair (`capi/tests/c/cc_server.c`, `cc_client.c`) built against the C ABI:
/// 200 messages echoed, apart.
#[test]
fn the_c_comch_pair_talks_apart() {
    if !apart::containers("the C comch pair apart") {
        return;
    }
    let fabric = Volume::new("c-comch");
    let (host, dpu) = sides(&fabric);
    let name = format!("apart-c-{}", std::process::id());
    let server = dpu.env_remove("DOCA_EMU_SIDE").spawn(apart::c_program("cc_server"), &[&name]);
    assert_eq!(server.line(), "running");
    let mut client = host.env_remove("DOCA_EMU_SIDE").spawn(apart::c_program("cc_client"), &[&name, "200"]);
    assert_sample_apart(&server, &mut client);
    let clog = ended_well("the C client", client);
    assert!(clog.contains("ok 200"), "{clog}");
    let slog = ended_well("the C server", server);
    assert!(slog.contains("served 200"), "{slog}");
}

/// dma_copy's shape in C (`capi/tests/c/dma_malloc.c`): the host exports its malloc'd buffer,
/// writes the descriptor into a file of the folder both sides share, and blocks in `read()`;
/// the DPU reads the file, imports, DMA-reads the host's first half and writes the second
/// (each side checks the bytes); the host gone, the DPU's next copy fails with `NOT_FOUND`.
#[test]
fn a_dpu_apart_copies_host_memory_exported_through_a_shared_file() {
    if !apart::containers("the DMA pair apart") {
        return;
    }
    let fabric = Volume::new("dma");
    let exchange = Volume::new("dma-exchange");
    let (host, dpu) = sides(&fabric);
    let (host, dpu) = (host.share(exchange.path()), dpu.share(exchange.path()));
    let desc = exchange.path().join("export_desc.txt");
    let desc = desc.to_str().unwrap();
    let len = ((4 << 20) + 4096).to_string();
    let prog = apart::c_program("dma_malloc");
    let mut host = host.spawn(&prog, &["host", &len, desc]);
    assert_eq!(host.line(), "exported", "{}", host.stderr());
    let mut dpu = dpu.spawn(&prog, &["dpu-file", desc, &len]);
    assert_apart(&host, &dpu);
    assert_eq!(dpu.line(), "copied", "the DPU's copies: {}", dpu.stderr());
    host.send(""); // out of read(): the host checks its memory
    let hlog = ended_well("the C host", host);
    assert!(hlog.trim_end().ends_with("ok"), "{hlog}");
    dpu.send("");
    let dlog = ended_well("the C DPU", dpu);
    assert!(dlog.trim_end().ends_with("ok"), "{dlog}");
}

/// A sync event across: the host exports (2.5's `export_to_dpu`), the DPU imports; each
/// side's blocking wait returns at the other's update, not before; the host destroys it and
/// the DPU is told `NOT_FOUND`. Then the DPU exports (2.9's `export_to_remote_pci`) and
/// dies: the host's sleeping wait ends with `NOT_FOUND`.
#[test]
fn a_sync_event_wakes_each_side_apart() {
    if !apart::containers("the sync-event pair apart") {
        return;
    }
    let fabric = Volume::new("sync");
    let (host, dpu) = sides(&fabric);
    let mut host = host.spawn(SE_PEER, &["host"]);
    let mut dpu = dpu.spawn(SE_PEER, &["dpu"]);
    assert_apart(&host, &dpu);
    let blob = host.ask("export host 25");
    let blob = blob.strip_prefix("blob ").unwrap_or_else(|| panic!("{blob}: {}", host.stderr()));
    assert_eq!(dpu.ask(&format!("import {blob}")), "ok", "{}", dpu.stderr());
    dpu.send("wait_eq 5");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(dpu.try_line(), None, "the DPU's wait blocks until the update");
    assert_eq!(host.ask("set 5"), "ok");
    assert_eq!(dpu.line(), "ok", "the host's update woke the DPU");
    host.send("wait_gt 5");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(host.try_line(), None, "the host's wait blocks until the update");
    assert_eq!(dpu.ask("add 1"), "value 5");
    assert_eq!(host.line(), "ok", "the DPU's update woke the host");
    assert_eq!(dpu.ask("get"), "value 6");
    assert_eq!(host.ask("destroy"), "ok");
    assert_eq!(dpu.ask("wait_eq 100"), "err DOCA_ERROR_NOT_FOUND", "the exporter revoked it");

    let blob = dpu.ask("export dpu 29");
    let blob = blob.strip_prefix("blob ").unwrap_or_else(|| panic!("{blob}: {}", dpu.stderr()));
    assert_eq!(host.ask(&format!("import {blob}")), "ok", "{}", host.stderr());
    host.send("wait_eq 3");
    assert_eq!(dpu.ask("set 3"), "ok");
    assert_eq!(host.line(), "ok");
    host.send("wait_eq 9");
    std::thread::sleep(Duration::from_millis(100));
    dpu.send("die");
    assert_eq!(host.line(), "err DOCA_ERROR_NOT_FOUND", "the exporter's death woke the host");
    assert!(dpu.output().success);
    assert!(host.finish());
}

/// The server's descriptor limit in the budget tests, and what one peer process may hold of
/// it (`peer.fds_per_process_pct`, 25 %): in connections of `CONN_FDS` descriptors.
const NOFILE: u64 = 256;
const SHARE: u64 = NOFILE * 25 / 100 / doca_cc::transport::budget::CONN_FDS;

/// Parses the hostile peer's `accepted <a> refused <r> <codes> lost <l>`.
fn conns_verdict(line: &str) -> (u64, u64, String, u64) {
    let w: Vec<&str> = line.split(' ').collect();
    assert!(w.len() == 7 && w[0] == "accepted" && w[2] == "refused" && w[5] == "lost", "{line}");
    (w[1].parse().unwrap(), w[3].parse().unwrap(), w[4].to_string(), w[6].parse().unwrap())
}

/// A server (DPU side) limited to 256 descriptors, in a container.
fn budget_server(dpu: &Container, name: &str) -> Peer {
    let server = dpu.spawn(CC_PEER, &["server", name, "--nofile", &NOFILE.to_string()]);
    assert_eq!(server.line(), "running", "{}", server.stderr());
    server
}

/// An honest client from a container of its own is served.
fn honest_client_served(fabric: &Volume, name: &str) {
    let client = Container::new("an honest container", fabric.path())
        .spawn(CC_PEER, &["client", name, "echo", "3", "9"]);
    ended_well("the honest client", client);
}

/// A hostile peer in another container (pid 0 to the server: its pid means nothing there)
/// opening connection after connection gets its one process's share and no more — `FULL`
/// beyond it, one log line naming it as a process of another PID namespace and the budget —
/// exactly as a local one (`hostile_peer.rs`); an honest client is still served.
#[test]
fn a_hostile_peer_apart_is_held_to_one_process_share() {
    if !apart::containers("the hostile peer apart") {
        return;
    }
    let fabric = Volume::new("hostile");
    let (host, dpu) = sides(&fabric);
    let name = format!("apart-hostile-{}", std::process::id());
    let server = budget_server(&dpu, &name);
    let mut hostile = host.spawn(HOSTILE, &["conns", &name, "40"]);
    assert_apart(&server, &hostile);
    let (accepted, refused, codes, lost) = conns_verdict(&hostile.line());
    assert_eq!((accepted, refused, codes.as_str(), lost), (SHARE, 40 - SHARE, "DOCA_ERROR_FULL", 0));
    honest_client_served(&fabric, &name);
    hostile.send("bye");
    assert!(hostile.finish());
    let log = ended_well("the server", server);
    assert!(
        log.lines()
            .any(|l| l.contains("a process of another PID namespace (#")
                && l.contains("peer.fds_per_process_pct")),
        "the refusal names the peer as a process of another namespace, and the budget:\n{log}"
    );
}

/// Two hostile peers in two sibling containers, both pid 1 there and both pid 0 to the
/// server (in a third): each is charged its own share — the second gets as many connections
/// as the first, not what the first left — and an honest client is still served.
#[test]
fn two_peers_with_one_pid_in_sibling_namespaces_are_charged_apart() {
    if !apart::containers("peers with one pid apart") {
        return;
    }
    let fabric = Volume::new("same-pid");
    let name = format!("apart-same-pid-{}", std::process::id());
    let server = budget_server(&Container::new("the DPU container", fabric.path()), &name);
    let mut first = Container::new("container one", fabric.path()).spawn(HOSTILE, &["conns", &name, "20"]);
    let mut second = Container::new("container two", fabric.path()).spawn(HOSTILE, &["conns", &name, "20"]);
    assert_apart(&first, &second);
    assert_apart(&first, &server);
    let one = conns_verdict(&first.line());
    let two = conns_verdict(&second.line());
    let want = (SHARE, 20 - SHARE, "DOCA_ERROR_FULL".to_string(), 0);
    assert_eq!(one, want, "the first container's process");
    assert_eq!(two, want, "the second container's process, also pid 1, has a share of its own");
    honest_client_served(&fabric, &name);
    for h in [&mut first, &mut second] {
        h.send("bye");
    }
    assert!(first.finish() && second.finish());
    ended_well("the server", server);
}

const MEM_PEER: &str = env!("CARGO_BIN_EXE_mem_peer");

/// Memory exported by the host, imported by the DPU apart: shared memory (a memfd handed
/// over by the exporter's memory service, mapped by the DPU) and heap memory (served by the
/// host library's threads while its main thread blocks reading stdin), read and written
/// both ways; the host container killed, the DPU's next access fails with `NOT_FOUND`.
#[test]
fn shared_and_served_exports_cross_apart_until_the_host_is_killed() {
    if !apart::containers("memory exports apart") {
        return;
    }
    let fabric = Volume::new("exports");
    let (host, dpu) = sides(&fabric);
    let mut host = host.spawn(MEM_PEER, &[]);
    let mut dpu = dpu.spawn(MEM_PEER, &[]);
    assert_apart(&host, &dpu);
    let desc =
        |answer: String| answer.strip_prefix("desc ").unwrap_or_else(|| panic!("{answer}")).to_string();

    let shared = desc(host.ask("export 65536 shared by the host"));
    assert_eq!(dpu.ask(&format!("import {shared}")), "ok", "{}", dpu.stderr());
    assert_eq!(dpu.ask("read 0 18"), "data shared by the host");
    assert_eq!(dpu.ask("write 4096 written by the DPU"), "ok");
    assert_eq!(host.ask("host_hex 0 4096 7"), format!("hex {}", doca_tests::to_hex(b"written")));

    let served = desc(host.ask("export_heap 65536 heap of the host"));
    assert_eq!(dpu.ask(&format!("import {served}")), "ok", "{}", dpu.stderr());
    assert_eq!(dpu.ask("fetch 0 16"), "data heap of the host");
    assert_eq!(dpu.ask("store 8192 stored by the DPU"), "ok");
    assert_eq!(host.ask("host_hex 1 8192 6"), format!("hex {}", doca_tests::to_hex(b"stored")));

    host.kill();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match dpu.ask("fetch 0 16").as_str() {
            "err DOCA_ERROR_NOT_FOUND" => break,
            // The host's death reaches the importer through its connection, soon after.
            "data heap of the host" => {
                assert!(Instant::now() < deadline, "the killed host's export still answers")
            }
            other => panic!("after the host's death: {other}"),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(dpu.finish());
}

/// The server's container killed (SIGKILL to its pid 1: the whole PID namespace dies), the
/// host's client notices — its context leaves Running for Idle.
#[test]
fn a_killed_dpu_container_makes_the_host_client_leave_running() {
    if !apart::containers("a killed server apart") {
        return;
    }
    let fabric = Volume::new("killed");
    let (host, dpu) = sides(&fabric);
    let name = format!("apart-killed-{}", std::process::id());
    let server = dpu.spawn(CC_PEER, &["server", &name]);
    assert_eq!(server.line(), "running", "{}", server.stderr());
    let client = host.spawn(CC_PEER, &["client", &name, "hold"]);
    assert_apart(&server, &client);
    assert_eq!(client.line(), "state starting");
    assert_eq!(client.line(), "state running");
    assert_eq!(client.line(), "running");
    server.kill();
    assert_eq!(client.line(), "state stopping", "{}", client.stderr());
    assert_eq!(client.line(), "state idle");
    // Its context Idle, the client exits by itself.
    assert!(client.output().success);
}

/// A host client started before its server connects when the server appears in the other
/// container (the rendezvous is the fabric directory they share).
#[test]
fn a_host_client_apart_waits_for_a_late_dpu_server() {
    if !apart::containers("a late server apart") {
        return;
    }
    let fabric = Volume::new("late");
    let (host, dpu) = sides(&fabric);
    let name = format!("apart-late-{}", std::process::id());
    let client = host.spawn(CC_PEER, &["client", &name, "echo", "5", "3"]);
    assert_eq!(client.line(), "state starting", "{}", client.stderr());
    std::thread::sleep(Duration::from_millis(300));
    let server = dpu.spawn(CC_PEER, &["server", &name]);
    assert_eq!(server.line(), "running", "{}", server.stderr());
    let log = ended_well("the late server's client", client);
    assert!(log.contains("ok 5"), "{log}");
    drop(server);
}

/// Rootless containers: both sides run as one uid of this machine (not root), each root in a
/// user namespace of its own mapping its root to that uid, with a root file system of its
/// own; the fabric directory is that uid's. The control-path samples talk. A third
/// container mapped to another uid cannot use the fabric directory: its client fails, and
/// says why. A fourth, of the right uid but on the machine's own `/` and `/tmp` (as in a
/// shell of `unshare -r`), whose owner it cannot know, is refused too, and told so (it used
/// to be told that "uid 65534" could replace the fabric directory).
#[test]
fn rootless_containers_of_one_uid_talk_and_another_uid_is_refused() {
    if !apart::user_namespaces("rootless containers") {
        return;
    }
    // Uids no account is likely to have (a side needs none: only the mapping).
    let (uid, stranger) = (42_420, 42_421);
    let fabric = Volume::new("rootless");
    fabric.chown(uid);
    let (host, dpu) = sides(&fabric);
    let (host, dpu) = (host.user(uid), dpu.user(uid));
    let mut server = dpu.spawn(apart::sample_program("cc_ctrl_path_server"), &["-t", "Reply from the DPU"]);
    wait_for_file(fabric.path(), &mut server, "the server's rendezvous socket", |n| n.starts_with("cc-"));
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.pid())).unwrap();
    assert!(status.lines().any(|l| l.starts_with("Uid:") && l.contains(&uid.to_string())), "{status}");
    let uid_map = std::fs::read_to_string(format!("/proc/{}/uid_map", server.pid())).unwrap();
    assert_eq!(uid_map.split_whitespace().collect::<Vec<_>>(), ["0", &uid.to_string(), "1"]);

    let intruder = Container::new("a container of another uid", fabric.path()).user(stranger);
    let refused = intruder.spawn(apart::sample_program("cc_ctrl_path_client"), &[]).output();
    let text = format!("{}{}", refused.stderr, refused.stdout);
    assert!(!refused.success, "{text}");
    assert!(text.contains("DOCA_ERROR_NOT_PERMITTED") && text.contains("fabric directory"), "{text}");

    let shared_root =
        Container::new("a container on the machine's root", fabric.path()).user(uid).own_root(false);
    let refused = shared_root.spawn(apart::sample_program("cc_ctrl_path_client"), &[]).output();
    let text = format!("{}{}", refused.stderr, refused.stdout);
    assert!(!refused.success, "{text}");
    let want = "its parent directory /tmp belongs to a user outside this user namespace (shown as uid 65534)";
    assert!(text.contains(want), "{text}");

    let mut client = host.spawn(apart::sample_program("cc_ctrl_path_client"), &[]);
    assert_sample_apart(&server, &mut client);
    let clog = ended_well("the client", client);
    let slog = ended_well("the server", server);
    assert!(slog.contains("Message received: 'Message from the client'"), "{slog}");
    assert!(clog.contains("Message received: 'Reply from the DPU'"), "{clog}");
}
