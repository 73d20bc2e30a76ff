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
    loopback_program(&apart::sample_program(program), args, fabric, env)
}

/// [`loopback_side`] for any program (a test peer of this crate).
fn loopback_program(program: &Path, args: &[&str], fabric: &Path, env: &[(&str, &str)]) -> Peer {
    let mut cmd = Command::new(program);
    cmd.args(args).env(doca_link::FABRIC_ENV, fabric).env_remove(doca_link::remote::PLAINTEXT_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Peer::from_command(cmd, &program.to_string_lossy(), doca_tests::Wrapped::No)
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

/// Runs `start` (which starts processes) with this thread on one CPU alone, the first it may
/// use: what `start` starts inherits that set, each of its threads too. This thread's own set
/// is given back after.
fn on_one_cpu<T>(start: impl FnOnce() -> T) -> T {
    use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet};
    let mine = sched_getaffinity(None).expect("this thread's CPUs");
    let cpu = (0..CpuSet::MAX_CPU).find(|&c| mine.is_set(c)).expect("a CPU");
    let mut one = CpuSet::new();
    one.set(cpu);
    sched_setaffinity(None, &one).expect("pin this thread");
    let started = start();
    sched_setaffinity(None, &mine).expect("unpin this thread");
    started
}

/// The threads of process `pid` named `name` (as `/proc` shows names: their first 15 bytes).
fn threads_named(pid: u32, name: &str) -> Vec<i32> {
    let shown = &name[..name.len().min(15)];
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the process's threads")
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == shown))
        .filter_map(|t| t.file_name().to_str()?.parse().ok())
        .collect()
}

/// [`threads_named`] once it finds one, or after 10 s: a new thread names itself when it
/// first runs, which on a busy CPU can come after whatever made it was already answered.
fn wait_threads_named(pid: u32, name: &str) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let found = threads_named(pid, name);
        if !found.is_empty() || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Thread `tid` runs only when no other thread of its CPU wants to (`SCHED_IDLE`): any
/// thread woken on that CPU preempts it at once, wherever it is.
fn run_last(tid: i32) {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a system call on a thread id, with a parameter that outlives it.
    let r = unsafe { libc::sched_setscheduler(tid, libc::SCHED_IDLE, &param) };
    assert_eq!(r, 0, "SCHED_IDLE for thread {tid}: {}", std::io::Error::last_os_error());
}

/// A consumer across the link posts a buffer again as soon as its completion arrives, and
/// the producer fills it again at once. The producer side's stand-in reads each send's bytes
/// out of its mirror of the consumer's memory to forward them: its borrow of them must be
/// over before the completion can reach the peer, or the producer's next write into the
/// buffer finds it still borrowed (`IN_USE`: the bench's link rows failed so). Made certain
/// to show rather than rare: both processes on one CPU, the stand-in's mirror thread run
/// last, so that every thread the completion wakes on either side runs before it takes its
/// next step.
#[test]
fn a_buffer_reposted_across_the_link_can_be_filled_again_at_once() {
    const FP_PRODUCER: &str = env!("CARGO_BIN_EXE_fp_producer");
    const FP_PEER: &str = env!("CARGO_BIN_EXE_fp_peer");
    let (keys, fa, fb) = (Volume::new("refill-keys"), Volume::new("refill-d"), Volume::new("refill-h"));
    keys::generate(keys.path(), true).unwrap();
    let at = format!("127.0.0.1:{}", free_port());
    let k = keys.path().to_str().unwrap();
    let name = format!("link-refill-{}", std::process::id());
    // 1 MiB: a data piece and a completion carrying the last 64 bytes, as in the bench.
    let (count, size) = (32u64, 1usize << 20);
    let (mut producer, consumer) = on_one_cpu(|| {
        let producer = loopback_program(
            Path::new(FP_PRODUCER),
            &[&name, &count.to_string(), &size.to_string(), "4"],
            fa.path(),
            &[(LISTEN_ENV, &at), (KEYS_ENV, k)],
        );
        let consumer = loopback_program(
            Path::new(FP_PEER),
            &[&name, "1", &size.to_string(), "4", "shared", &count.to_string()],
            fb.path(),
            &[(CONNECT_ENV, &at), (KEYS_ENV, k)],
        );
        (producer, consumer)
    });
    let announced = producer.line();
    assert!(announced.starts_with("consumer "), "{announced}\n{}", producer.stderr());
    assert!(consumer.line().starts_with("consumers "));
    // The mirror of the consumer is made before the producer's side hears of the consumer.
    let mirror = wait_threads_named(producer.pid(), "doca-cc-link-mirror");
    assert_eq!(mirror.len(), 1, "one mirror thread in the producer's process");
    run_last(mirror[0]);
    producer.send("go");
    let sent = producer.line();
    assert_eq!(sent, format!("sent {count}"), "the producer's log:\n{}", producer.stderr());
    let got = consumer.line();
    assert!(got.starts_with(&format!("ok {} ", count * size as u64)), "{got}\n{}", consumer.stderr());
    assert!(consumer.finish());
    assert!(producer.finish());
}
