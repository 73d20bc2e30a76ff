//! Host and DPU on two "machines": each side in PID, mount and network namespaces of its own,
//! each with a fabric directory of its own (nothing shared but the key files), talking over
//! the encrypted TCP link across a veth pair between their two network namespaces — the
//! unmodified Rust sample pairs and the C comch pair. Plus what needs no root: the same over
//! loopback with separate fabric directories, and a wrong key refused.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use doca_link::remote::{keys, CONNECT_ENV, KEYS_ENV, LISTEN_ENV};
use doca_tests::apart::{self, ended_well, wait_for_file, Container, NetPair, Volume};
use doca_tests::Peer;

/// Two machines: a veth pair between two network namespaces, a fabric directory per side,
/// the keys `doca_emu keygen` makes shared by both; the DPU listens on its end's address.
struct Machines {
    host: Container,
    dpu: Container,
    dpu_fabric: Volume,
    _host_fabric: Volume,
    _keys: Volume,
    pair: NetPair,
}

fn machines(tag: &str, subnet: u8) -> Option<Machines> {
    let what = format!("{tag} over the TCP link");
    if !apart::containers(&what) || !apart::network_pairs(&what) {
        return None;
    }
    let pair = NetPair::new([10, 232, subnet, 1].into(), [10, 232, subnet, 2].into(), 30);
    let keys = Volume::new(&format!("{tag}-keys"));
    keys::generate(keys.path(), true).expect("keys");
    let (host_fabric, dpu_fabric) = (Volume::new(&format!("{tag}-h")), Volume::new(&format!("{tag}-d")));
    let at = format!("{}:7431", pair.b.addr);
    let dpu = Container::new("the DPU machine", dpu_fabric.path())
        .net(pair.b.join())
        .share(keys.path())
        .env(LISTEN_ENV, &at)
        .env(KEYS_ENV, keys.path());
    let host = Container::new("the host machine", host_fabric.path())
        .net(pair.a.join())
        .share(keys.path())
        .env(CONNECT_ENV, &at)
        .env(KEYS_ENV, keys.path());
    Some(Machines { host, dpu, dpu_fabric, _host_fabric: host_fabric, _keys: keys, pair })
}

#[test]
fn the_ctrl_path_samples_talk_over_the_link() {
    let Some(m) = machines("ctrl", 1) else { return };
    let server = m.dpu.spawn(apart::sample_program("cc_ctrl_path_server"), &["-t", "Reply from the DPU"]);
    let client = m.host.spawn(apart::sample_program("cc_ctrl_path_client"), &["-t", "Hello from the host"]);
    let clog = ended_well("the client", client);
    let slog = ended_well("the server", server);
    assert!(slog.contains("Message received: 'Hello from the host'"), "{slog}");
    assert!(clog.contains("Message received: 'Reply from the DPU'"), "{clog}");
    for log in [&slog, &clog] {
        assert!(log.contains("Sample finished successfully"), "{log}");
        assert!(!log.contains("NOT encrypted"), "{log}");
    }
}

#[test]
fn the_data_path_samples_talk_over_the_link() {
    let Some(m) = machines("data", 2) else { return };
    let server =
        m.dpu.spawn(apart::sample_program("cc_data_path_high_speed_server"), &["-t", "Bulk from the DPU"]);
    let client =
        m.host.spawn(apart::sample_program("cc_data_path_high_speed_client"), &["-t", "Bulk from the host"]);
    let clog = ended_well("the client", client);
    let slog = ended_well("the server", server);
    // The producer's bytes landed in the consumer's posted buffer on the other machine.
    assert!(slog.contains("Message received: 'Bulk from the host'"), "{slog}");
    assert!(clog.contains("Message received: 'Bulk from the DPU'"), "{clog}");
    for log in [&slog, &clog] {
        assert!(log.contains("Got a new remote consumer with ID = ["), "{log}");
        assert!(log.contains("Received message: 'stop_data_path_test'"), "{log}");
        assert!(log.contains("Sample finished successfully"), "{log}");
    }
}

#[test]
fn the_legacy_samples_talk_over_the_link() {
    let Some(m) = machines("legacy", 3) else { return };
    let server = m.dpu.spawn(apart::sample_program("comm_channel_server"), &[]);
    // As in DOCA, the legacy client fails when no service listens yet.
    wait_for_file(m.dpu_fabric.path(), "the service's socket", |n| {
        n.starts_with("ep-") && n.ends_with(".sock")
    });
    let client = m.host.spawn(apart::sample_program("comm_channel_client"), &[]);
    let clog = ended_well("the client", client);
    let slog = ended_well("the server", server);
    assert!(slog.contains("Received message: Message from the client"), "{slog}");
    assert!(clog.contains("Server response: Message from the server"), "{clog}");
}

#[test]
fn the_c_comch_pair_talks_over_the_link() {
    let Some(m) = machines("c-comch", 4) else { return };
    let name = format!("link-c-{}", std::process::id());
    let server = m.dpu.env_remove("DOCA_EMU_SIDE").spawn(apart::c_program("cc_server"), &[&name]);
    assert_eq!(server.line(), "running");
    let client = m.host.env_remove("DOCA_EMU_SIDE").spawn(apart::c_program("cc_client"), &[&name, "200"]);
    let clog = ended_well("the C client", client);
    assert!(clog.contains("ok 200"), "{clog}");
    let slog = ended_well("the C server", server);
    assert!(slog.contains("served 200"), "{slog}");
}

/// A free TCP port on loopback (bound, then released for the test's listener).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A side on this machine with a fabric directory of its own: nothing shared with the other.
fn loopback_side(program: &str, args: &[&str], fabric: &Path, env: &[(&str, &str)]) -> Peer {
    let mut cmd = Command::new(apart::sample_program(program));
    cmd.args(args).env(doca_link::FABRIC_ENV, fabric).env_remove(doca_link::remote::PLAINTEXT_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Peer::from_command(cmd, program, doca_tests::Wrapped::No)
}

/// No root needed: two processes of this machine with separate fabric directories meet
/// only through the link on loopback.
#[test]
fn the_ctrl_path_samples_talk_over_loopback_with_nothing_shared() {
    let (keys, fa, fb) = (Volume::new("lo-keys"), Volume::new("lo-d"), Volume::new("lo-h"));
    keys::generate(keys.path(), true).unwrap();
    let at = format!("127.0.0.1:{}", free_port());
    let k = keys.path().to_str().unwrap();
    let server = loopback_side(
        "cc_ctrl_path_server",
        &["-t", "Reply over loopback"],
        fa.path(),
        &[(LISTEN_ENV, &at), (KEYS_ENV, k)],
    );
    let client = loopback_side("cc_ctrl_path_client", &[], fb.path(), &[(CONNECT_ENV, &at), (KEYS_ENV, k)]);
    let clog = ended_well("the client", client);
    let slog = ended_well("the server", server);
    assert!(clog.contains("Message received: 'Reply over loopback'"), "{clog}");
    assert!(slog.contains("Sample finished successfully"), "{slog}");
    assert!(std::fs::read_dir(fb.path())
        .unwrap()
        .flatten()
        .all(|e| !e.file_name().to_string_lossy().starts_with("cc-")));
}

/// A host whose keys are not the pair the DPU pins is refused at the handshake, with a log
/// line naming its address; its client never connects.
#[test]
fn a_peer_with_the_wrong_key_is_refused() {
    let (good, bad, fa, fb) =
        (Volume::new("k-good"), Volume::new("k-bad"), Volume::new("k-d"), Volume::new("k-h"));
    keys::generate(good.path(), true).unwrap();
    keys::generate(bad.path(), true).unwrap();
    let at = format!("127.0.0.1:{}", free_port());
    let server = loopback_side(
        "cc_ctrl_path_server",
        &[],
        fa.path(),
        &[(LISTEN_ENV, &at), (KEYS_ENV, good.path().to_str().unwrap())],
    );
    let client = loopback_side(
        "cc_ctrl_path_client",
        &[],
        fb.path(),
        &[(CONNECT_ENV, &at), (KEYS_ENV, bad.path().to_str().unwrap())],
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while !server.stderr().contains("authentication failed") {
        assert!(Instant::now() < deadline, "no refusal logged:\n{}", server.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    let refusal = server.stderr();
    let line = refusal.lines().find(|l| l.contains("authentication failed")).unwrap();
    assert!(line.contains("127.0.0.1:"), "the refusal names the address: {line}");
    assert!(!refusal.contains("New client connected"), "{refusal}");
    client.kill();
    server.kill();
}

/// Waits (at most a minute) until `peer` wrote `needle` on stderr.
fn wait_stderr(peer: &Peer, who: &str, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !peer.stderr().contains(needle) {
        assert!(Instant::now() < deadline, "{who} never said {needle:?}:\n{}", peer.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The wire between the two machines goes silent (no address resolution any more on either
/// end: packets leave nowhere, nothing fails locally): each side sees its peer dead — the
/// client's context fails with `CONNECTION_RESET`, the server closes the connection — within
/// the link's keepalive bound (about 5 s, not asserted here: timing belongs to the bench).
#[test]
fn a_silent_link_is_a_dead_peer_on_both_sides() {
    let Some(m) = machines("cut", 5) else { return };
    let server = m.dpu.spawn(apart::sample_program("cc_chatter"), &["server"]);
    let client = m.host.spawn(apart::sample_program("cc_chatter"), &["client"]);
    wait_stderr(&server, "the server", "connection 1 accepted");
    wait_stderr(&client, "the client", "connected to");
    wait_stderr(&server, "the server", "server: sent");
    for end in [&m.pair.a, &m.pair.b] {
        for args in [&["link", "set", &end.ifname, "arp", "off"][..], &["neigh", "flush", "dev", &end.ifname]]
        {
            let ok = Command::new("ip").args(["-n", &end.name]).args(args).status().unwrap();
            assert!(ok.success(), "ip -n {} {args:?}", end.name);
        }
    }
    wait_stderr(&server, "the server", "connection 1 closed");
    wait_stderr(&client, "the client", "DOCA_ERROR_CONNECTION_RESET");
    let out = client.output();
    assert!(!out.success, "the client fails once its server is gone:\n{}", out.stderr);
    server.kill();
}

/// A fault plan's `link.drop` in the host's process cuts its connection as locally: across
/// the link the DPU's server sees its client leave.
#[test]
fn a_fault_plan_cuts_the_link_too() {
    let (keys, fa, fb) = (Volume::new("f-keys"), Volume::new("f-d"), Volume::new("f-h"));
    keys::generate(keys.path(), true).unwrap();
    let at = format!("127.0.0.1:{}", free_port());
    let k = keys.path().to_str().unwrap();
    let mut cmd = Command::new(apart::sample_program("cc_chatter"));
    cmd.arg("server").env(doca_link::FABRIC_ENV, fa.path()).env(LISTEN_ENV, &at).env(KEYS_ENV, k);
    let server = Peer::from_command(cmd, "cc_chatter server", doca_tests::Wrapped::No);
    let mut cmd = Command::new(apart::sample_program("cc_chatter"));
    cmd.arg("client")
        .env(doca_link::FABRIC_ENV, fb.path())
        .env(CONNECT_ENV, &at)
        .env(KEYS_ENV, k)
        .env("DOCA_EMU_FAULTS", "link.drop=nth(30):drop");
    let client = Peer::from_command(cmd, "cc_chatter client", doca_tests::Wrapped::No);
    wait_stderr(&server, "the server", "connection 1 accepted");
    wait_stderr(&server, "the server", "connection 1 closed");
    wait_stderr(&client, "the client", "the connection ended");
    client.kill();
    server.kill();
}
