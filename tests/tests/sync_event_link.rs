//! Sync events across the remote link: host and DPU share no fabric directory and no page
//! (two processes with a fabric directory each, over loopback; or two "machines" — network
//! namespaces over a veth pair — as root). The host exports, the DPU imports, as NVIDIA's
//! `sync_event_local_pci` / `sync_event_remote_pci` pair does (and the other way round);
//! updates go both ways, an engine asleep in epoll is woken by the other machine's update,
//! and an exporter that dies or destroys the event fails the importer's wait, without a
//! hang. The exporter's side never trusts its peer: malformed requests, wrong tokens.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use doca_link::remote::{keys, CONNECT_ENV, KEYS_ENV, LISTEN_ENV, PLAINTEXT_ENV};
use doca_tests::apart::{self, Container, NetPair, Volume};
use doca_tests::{from_hex, Peer};

const SE_PEER: &str = env!("CARGO_BIN_EXE_se_peer");
const NOT_FOUND: &str = "err DOCA_ERROR_NOT_FOUND";

/// A free TCP port on loopback (bound, then released for the DPU's listener).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// What the two sides on this machine use: the keys and a fabric directory each (removed
/// at drop: keep it while they run).
struct Dirs(#[allow(dead_code)] [Volume; 3]);

fn side(side: &str, fabric: &Path, env: &[(&str, &str)]) -> Peer {
    let mut cmd = Command::new(SE_PEER);
    cmd.arg(side).env(doca_link::FABRIC_ENV, fabric).env_remove(PLAINTEXT_ENV);
    for (k, v) in env {
        cmd.env(k, v);
    }
    Peer::from_command(cmd, &format!("se_peer ({side})"), doca_tests::Wrapped::No)
}

/// The two sides on this machine, the link on loopback: (directories, host, DPU).
fn loopback(tag: &str) -> (Dirs, Peer, Peer) {
    let keys = Volume::new(&format!("sel-{tag}-keys"));
    keys::generate(keys.path(), true).unwrap();
    let (fh, fd) = (Volume::new(&format!("sel-{tag}-h")), Volume::new(&format!("sel-{tag}-d")));
    let at = format!("127.0.0.1:{}", free_port());
    let k = keys.path().to_str().unwrap();
    let dpu = side("dpu", fd.path(), &[(LISTEN_ENV, &at), (KEYS_ENV, k)]);
    let host = side("host", fh.path(), &[(CONNECT_ENV, &at), (KEYS_ENV, k)]);
    (Dirs([keys, fh, fd]), host, dpu)
}

fn blob(p: &mut Peer, cmd: &str) -> String {
    let a = p.ask(cmd);
    a.strip_prefix("blob ").unwrap_or_else(|| panic!("{cmd}: {a}\n{}", p.stderr())).to_owned()
}

/// Nothing answered within `ms`: the side still waits.
fn still_waiting(p: &Peer, what: &str, ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
    assert_eq!(p.try_line(), None, "{what}");
}

/// The shape of NVIDIA's `sync_event_local_pci` (host) and `sync_event_remote_pci` (DPU),
/// standalone and synchronous: the host exports, the DPU imports; the DPU waits for 1, the
/// host sets it; the host waits for 2, the DPU adds 1 (or sets 2).
fn the_samples_flow(host: &mut Peer, dpu: &mut Peer, api: &str, atomic: bool) {
    let b = blob(host, &format!("export host {api}"));
    assert_eq!(dpu.ask(&format!("import {b}")), "ok", "{}", dpu.stderr());
    assert_eq!(dpu.ask("across"), "value 1", "the import went over the link");
    dpu.send("wait_eq 1");
    still_waiting(dpu, "the DPU's wait blocks until the host's update", 200);
    assert_eq!(host.ask("set 1"), "ok");
    assert_eq!(dpu.line(), "ok", "the host's update woke the DPU\n{}", dpu.stderr());
    host.send("wait_eq 2");
    still_waiting(host, "the host's wait blocks until the DPU's update", 200);
    if atomic {
        assert_eq!(dpu.ask("add 1"), "value 1", "the value before the addition");
    } else {
        assert_eq!(dpu.ask("set 2"), "ok");
    }
    assert_eq!(host.line(), "ok", "the DPU's update woke the host\n{}", host.stderr());
    assert_eq!(dpu.ask("get"), "value 2");
    assert_eq!(host.ask("get"), "value 2");
}

#[test]
fn the_host_exports_and_the_dpu_imports_over_loopback() {
    let (_dirs, mut host, mut dpu) = loopback("flow");
    the_samples_flow(&mut host, &mut dpu, "29", true);
    // 2.5/2.6's export_to_dpu, and the non-atomic update.
    the_samples_flow(&mut host, &mut dpu, "25", false);
    // Each operation is atomic on the exporter's page: adds from both sides add up.
    for _ in 0..50 {
        assert!(dpu.ask("add 3").starts_with("value "));
        assert!(host.ask("add 1").starts_with("value "));
    }
    assert_eq!(dpu.ask("get"), "value 202");
    assert_eq!(dpu.ask("add 18446744073709551615"), "value 202", "wraps as locally");
    assert_eq!(host.ask("get"), "value 201");
    // The exporter destroys it: the importer is told.
    dpu.send("wait_eq 1000");
    still_waiting(&dpu, "waits", 100);
    assert_eq!(host.ask("destroy"), "ok");
    assert_eq!(dpu.line(), NOT_FOUND, "the exporter's destroy ended the DPU's wait");
    assert_eq!(dpu.ask("get"), NOT_FOUND);
    assert_eq!(dpu.ask("set 1"), NOT_FOUND);
    assert!(host.finish());
    assert!(dpu.finish());
}

/// The other way round: the DPU exports (its process listens), the host imports by dialing.
#[test]
fn the_dpu_exports_and_the_host_imports_over_loopback() {
    let (_dirs, mut host, mut dpu) = loopback("rev");
    let b = blob(&mut dpu, "export dpu 29");
    assert_eq!(host.ask(&format!("import {b}")), "ok", "{}", host.stderr());
    assert_eq!(host.ask("across"), "value 1");
    host.send("wait_gt 4");
    still_waiting(&host, "the host's wait blocks", 200);
    assert_eq!(dpu.ask("set 5"), "ok");
    assert_eq!(host.line(), "ok", "{}", host.stderr());
    dpu.send("wait_neq 5");
    still_waiting(&dpu, "the DPU's wait blocks", 200);
    assert_eq!(host.ask("add 1"), "value 5");
    assert_eq!(dpu.line(), "ok");
    assert_eq!(dpu.ask("get"), "value 6");
    assert!(host.finish());
    assert!(dpu.finish());
}

/// Contexts: the DPU's engine asleep in epoll on its notification handle with a wait task is
/// woken by the host's update (and only a few times: no polling); the host exporter's engine
/// likewise by the DPU's update; get, set and add tasks go over the link.
#[test]
fn engines_asleep_in_epoll_are_woken_across_the_link() {
    let (_dirs, mut host, mut dpu) = loopback("ctx");
    let b = blob(&mut host, "export_ctx host 29");
    assert_eq!(dpu.ask(&format!("import_ctx {b}")), "ok", "{}", dpu.stderr());
    assert_eq!(dpu.ask("across"), "value 1");
    // Each sleep of the DPU's engine lasts up to 30 s: only the update can end it in time.
    dpu.send("task_wait_eq 7 30000");
    still_waiting(&dpu, "the DPU's wait task waits for the host's update", 500);
    let t = Instant::now();
    assert_eq!(host.ask("task_set 7"), "ok");
    let woke = dpu.line();
    assert!(t.elapsed() < Duration::from_secs(5), "woken at once, not by a timeout");
    let sleeps: u32 = woke.strip_prefix("ok ").unwrap_or_else(|| panic!("{woke}")).parse().unwrap();
    assert!((1..=3).contains(&sleeps), "the engine slept and was woken {sleeps} times (no polling)");
    // The host exporter's engine, woken by the DPU's task.
    host.send("task_wait_eq 9 30000");
    still_waiting(&host, "the host's wait task waits for the DPU's update", 300);
    assert_eq!(dpu.ask("task_add 2"), "value 7");
    let woke = host.line();
    assert!(woke.starts_with("ok "), "{woke}\n{}", host.stderr());
    assert_eq!(dpu.ask("task_get"), "value 9");
    assert_eq!(dpu.ask("task_set 11"), "ok");
    assert_eq!(host.ask("task_get"), "value 11");
    // A wait task that holds already completes without waiting for a change.
    assert!(dpu.ask("task_wait_eq 11 30000").starts_with("ok "));
    // The exporter killed: the DPU's waiting task completes with NOT_FOUND, its engine woken.
    dpu.send("task_wait_eq 100 30000");
    still_waiting(&dpu, "waits", 200);
    let t = Instant::now();
    host.kill();
    assert_eq!(dpu.line(), NOT_FOUND, "{}", dpu.stderr());
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(dpu.ask("task_get"), NOT_FOUND);
    assert!(dpu.finish());
}

/// The exporter killed while the importer sleeps in a blocking wait: the wait fails at once
/// (the kernel closed the exporter's end of the stream), no hang.
#[test]
fn the_exporter_killed_fails_the_importers_wait() {
    let (_dirs, mut host, mut dpu) = loopback("kill");
    let b = blob(&mut host, "export host 29");
    assert_eq!(dpu.ask(&format!("import {b}")), "ok", "{}", dpu.stderr());
    dpu.send("wait_eq 5");
    still_waiting(&dpu, "waits", 200);
    let t = Instant::now();
    host.kill();
    assert_eq!(dpu.line(), NOT_FOUND, "{}", dpu.stderr());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    // A new import of the dead exporter's blob is refused.
    assert_eq!(dpu.ask(&format!("import {b}")), NOT_FOUND);
    assert!(dpu.finish());
}

/// A blob whose token is wrong (forged) is refused by the exporter's side as locally; the
/// exporter goes on serving the genuine importer.
#[test]
fn a_forged_blob_is_refused_across_the_link() {
    let (_dirs, mut host, mut dpu) = loopback("forged");
    let b = blob(&mut host, "export host 29");
    let mut forged = from_hex(&b).unwrap();
    forged[25] ^= 0x5a; // inside the token
    let forged: String = forged.iter().map(|x| format!("{x:02x}")).collect();
    assert_eq!(dpu.ask(&format!("import {forged}")), NOT_FOUND);
    assert_eq!(dpu.ask(&format!("import {b}")), "ok");
    assert_eq!(host.ask("set 4"), "ok");
    assert_eq!(dpu.ask("get"), "value 4");
    assert!(host.finish());
    assert!(dpu.finish());
}

/// Two machines: network namespaces over a veth pair, a fabric directory each (root; skipped
/// with a message otherwise). The samples' flow, an engine woken across, and the exporter's
/// death.
#[test]
fn a_sync_event_across_two_machines() {
    let what = "sync events over the TCP link between two network namespaces";
    if !apart::containers(what) || !apart::network_pairs(what) {
        return;
    }
    let pair = NetPair::new([10, 232, 41, 1].into(), [10, 232, 41, 2].into(), 30);
    let keys = Volume::new("sel-ns-keys");
    keys::generate(keys.path(), true).unwrap();
    let (fh, fd) = (Volume::new("sel-ns-h"), Volume::new("sel-ns-d"));
    let at = format!("{}:7441", pair.b.addr);
    let dpu = Container::new("the DPU machine", fd.path())
        .net(pair.b.join())
        .share(keys.path())
        .env(LISTEN_ENV, &at)
        .env(KEYS_ENV, keys.path());
    let host = Container::new("the host machine", fh.path())
        .net(pair.a.join())
        .share(keys.path())
        .env(CONNECT_ENV, &at)
        .env(KEYS_ENV, keys.path());
    let mut d = dpu.spawn(SE_PEER, &["dpu"]);
    let mut h = host.spawn(SE_PEER, &["host"]);
    the_samples_flow(&mut h, &mut d, "29", true);
    let b = blob(&mut h, "export_ctx host 29");
    assert_eq!(d.ask(&format!("import_ctx {b}")), "ok", "{}", d.stderr());
    d.send("task_wait_eq 3 30000");
    still_waiting(&d, "the DPU's engine sleeps", 300);
    assert_eq!(h.ask("task_set 3"), "ok");
    assert!(d.line().starts_with("ok "), "{}", d.stderr());
    d.send("task_wait_eq 4 30000");
    still_waiting(&d, "waits", 200);
    h.kill();
    assert_eq!(d.line(), NOT_FOUND, "{}", d.stderr());
    assert!(d.finish());
}

fn link(role: doca_link::remote::Role, addr: std::net::SocketAddr, keys: &Path) -> doca_link::remote::Link {
    let cfg = doca_link::remote::Config { role, addr, keys: keys.to_path_buf(), plaintext: false };
    doca_link::remote::Link::new(cfg).unwrap()
}

/// The next message on `s` within 5 s (`None`: the stream ended or broke).
fn next(s: &doca_link::remote::Stream) -> Option<Vec<u8>> {
    let mut buf = Vec::new();
    match s.recv_timeout(&mut buf, Duration::from_secs(5)) {
        Ok(Some(true)) => Some(buf),
        Ok(None) => panic!("no message within 5 s"),
        Ok(Some(false)) | Err(_) => None,
    }
}

/// A hostile importer on the DPU (this test, holding the link's DPU side itself) against a
/// host exporter: a request of the wrong size, a wrong token, malformed messages are
/// refused or end that stream alone; watches asked for without reading bring one change
/// at most; the exporter goes on serving.
#[test]
fn a_hostile_importer_cannot_harm_the_exporter() {
    use doca_link::remote::{Kind, Role};
    let keys = Volume::new("sel-hi-keys");
    keys::generate(keys.path(), true).unwrap();
    let fh = Volume::new("sel-hi-h");
    let d = link(Role::Dpu, "127.0.0.1:0".parse().unwrap(), keys.path());
    let at = d.listen().unwrap().to_string();
    let mut host = side("host", fh.path(), &[(CONNECT_ENV, &at), (KEYS_ENV, keys.path().to_str().unwrap())]);
    let b = from_hex(&blob(&mut host, "export host 29")).unwrap();
    let nonce = u64::from_le_bytes(b[12..20].try_into().unwrap());
    let until = Instant::now() + Duration::from_secs(10);
    while !d.is_present(nonce) {
        assert!(Instant::now() < until, "the exporter's presence never came");
        std::thread::sleep(Duration::from_millis(10));
    }
    let request = &b[8..36];
    let open = |req: &[u8]| d.open(Kind::SyncEvent, Some(nonce), req).unwrap();
    // A request of the wrong size: INVALID_VALUE (code 3), then the end.
    let s = open(b"short");
    assert_eq!(next(&s).unwrap(), [b'X', 3]);
    assert_eq!(next(&s), None);
    // A wrong token: NOT_FOUND (code 1), as a forged blob locally.
    let mut wrong = request.to_vec();
    wrong[20] ^= 1;
    let s = open(&wrong);
    assert_eq!(next(&s).unwrap(), [b'X', 1]);
    assert_eq!(next(&s), None);
    // Malformed messages after a good open end that stream.
    for bad in [&b"Z"[..], b"S12345", b"G1", &[b'A'; 12]] {
        let s = open(request);
        assert_eq!(next(&s).unwrap()[0], b'R');
        s.send(bad).unwrap();
        assert_eq!(next(&s), None, "{bad:?} ends the stream");
    }
    // Watches asked for and never read: each answered, one change told at most.
    let s = open(request);
    assert_eq!(next(&s).unwrap(), [&[b'R'][..], &0u64.to_le_bytes()].concat());
    for _ in 0..100 {
        s.send(b"W").unwrap();
    }
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(host.ask("set 77"), "ok");
    assert_eq!(host.ask("set 78"), "ok");
    let mut got = Vec::new();
    let mut buf = Vec::new();
    while let Ok(Some(true)) = s.recv_timeout(&mut buf, Duration::from_millis(500)) {
        got.push(buf.clone());
    }
    let answers = got.iter().filter(|m| m[0] == b'V' && m.len() == 17).count();
    let told: Vec<_> = got.iter().filter(|m| m[0] == b'N').collect();
    assert_eq!(answers, 100, "every watch answered");
    assert_eq!(told.len(), 1, "one change told, not one per update or per watch: {got:?}");
    assert_eq!(got.len(), 101);
    // Its set is applied to the exporter's page (it holds the token: it is an importer).
    s.send(&[&[b'S'][..], &5u64.to_le_bytes()].concat()).unwrap();
    let v = next(&s).unwrap();
    assert_eq!(v, [&[b'V'][..], &78u64.to_le_bytes(), &5u64.to_le_bytes()].concat());
    assert_eq!(host.ask("get"), "value 5");
    assert_eq!(host.ask("add 1"), "value 5", "the exporter works on");
    // The exporter destroys it: the stream is told, then ends.
    assert_eq!(host.ask("destroy"), "ok");
    let mut last = Vec::new();
    while let Some(m) = next(&s) {
        last = m;
    }
    assert_eq!(last, [b'X', 1], "told NOT_FOUND");
    assert!(host.finish());
}

/// What the hostile exporter's side of [`a_hostile_exporter_side_ends_only_that_import`]
/// does: 1 a first answer of the wrong size; 2 an unasked-for change; 3 answers of the wrong
/// size.
static MODE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

fn hostile_exporter(s: doca_link::remote::Stream, _request: Vec<u8>) {
    let mode = MODE.load(std::sync::atomic::Ordering::SeqCst);
    if mode == 1 {
        let _ = s.send(b"R12");
        return;
    }
    let _ = s.send(&[&[b'R'][..], &5u64.to_le_bytes()].concat());
    if mode == 2 {
        let _ = s.send(&[&[b'N'][..], &9u64.to_le_bytes()].concat());
    }
    let mut buf = Vec::new();
    while let Ok(true) = s.recv(&mut buf) {
        let _ = s.send(b"V1234");
    }
}

/// A hostile exporter's side (this test, holding the link's host side itself) against an
/// importer on the DPU: a malformed first answer fails the import with `NOT_FOUND`; an
/// unasked-for change, a malformed answer make the event gone (`NOT_FOUND`) — the importing
/// process goes on.
#[test]
fn a_hostile_exporter_side_ends_only_that_import() {
    use doca_link::remote::{Kind, Role};
    let keys = Volume::new("sel-he-keys");
    keys::generate(keys.path(), true).unwrap();
    let fd = Volume::new("sel-he-d");
    let at: std::net::SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut dpu =
        side("dpu", fd.path(), &[(LISTEN_ENV, &at.to_string()), (KEYS_ENV, keys.path().to_str().unwrap())]);
    let h = link(Role::Host, at, keys.path());
    h.serve(Kind::SyncEvent, hostile_exporter);
    let nonce = 0x0bad_5eed_0000_0001u64;
    let _presence = h.present(nonce).unwrap();
    let mut b = b"DOCASEB1".to_vec();
    b.extend_from_slice(&4242u32.to_le_bytes());
    b.extend_from_slice(&nonce.to_le_bytes());
    b.extend_from_slice(&[7u8; 16]);
    b.resize(48, 0);
    let b: String = b.iter().map(|x| format!("{x:02x}")).collect();
    MODE.store(1, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(dpu.ask(&format!("import {b}")), NOT_FOUND, "{}", dpu.stderr());
    MODE.store(2, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(dpu.ask(&format!("import {b}")), "ok", "{}", dpu.stderr());
    assert_eq!(dpu.ask("wait_eq 9"), NOT_FOUND, "a change nobody watched");
    MODE.store(3, std::sync::atomic::Ordering::SeqCst);
    assert_eq!(dpu.ask(&format!("import {b}")), "ok");
    assert_eq!(dpu.ask("get"), NOT_FOUND, "a malformed answer");
    assert_eq!(dpu.ask("add 1"), NOT_FOUND, "gone for good");
    assert!(dpu.stderr().contains("malformed message"), "{}", dpu.stderr());
    assert!(dpu.finish(), "the importing process goes on and exits cleanly");
}

/// The C pair in the shape of NVIDIA's samples (`capi/tests/c/sync_event.c`: the blob
/// crosses over Comm Channel, as the samples send it) on two sides that share nothing but
/// the link on loopback: 2.5's and 2.9's flows, synchronous and with tasks on engines asleep
/// on their notification handles, either side exporting, and an exporter that exits.
#[test]
fn the_c_sync_event_pair_over_loopback() {
    for (exporter, api, mode) in [
        ("host", "25", "sync"),
        ("host", "29", "sync"),
        ("host", "25", "async"),
        ("host", "29", "async"),
        ("dpu", "29", "sync"),
        ("dpu", "29", "async"),
        ("host", "29", "die"),
        ("dpu", "29", "die"),
    ] {
        let keys = Volume::new("sel-c-keys");
        keys::generate(keys.path(), true).unwrap();
        let (fh, fd) = (Volume::new("sel-c-h"), Volume::new("sel-c-d"));
        let at = format!("127.0.0.1:{}", free_port());
        let k = keys.path().to_str().unwrap();
        let name = format!("se-link-{exporter}-{api}-{mode}-{}", std::process::id());
        let run = |side: &str, fabric: &Path, env: (&str, &str)| {
            let mut cmd = Command::new(apart::c_program("sync_event"));
            cmd.args([name.as_str(), side, exporter, api, mode])
                .env(doca_link::FABRIC_ENV, fabric)
                .env_remove("DOCA_EMU_SIDE")
                .env_remove(PLAINTEXT_ENV)
                .env(env.0, env.1)
                .env(KEYS_ENV, k);
            Peer::from_command(cmd, &format!("sync_event.c ({side})"), doca_tests::Wrapped::No)
        };
        let dpu = run("dpu", fd.path(), (LISTEN_ENV, &at));
        assert_eq!(dpu.line(), "running", "{}", dpu.stderr());
        let host = run("host", fh.path(), (CONNECT_ENV, &at));
        let what = format!("{exporter} exports, {api}, {mode}");
        let h = host.output();
        assert!(h.success && h.stdout.trim() == "ok", "host ({what}): {}{}", h.stdout, h.stderr);
        let d = dpu.output();
        assert!(d.success && d.stdout.trim() == "ok", "DPU ({what}): {}{}", d.stdout, d.stderr);
    }
}
