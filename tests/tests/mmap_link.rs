//! Exported memory across the TCP link: host and DPU with fabric directories of their own
//! (nothing shared but the link), as on two machines. The host (`mem_peer`) exports shared
//! memory and heap memory and then blocks reading its stdin; the DPU (`mem_peer` too) imports
//! the descriptors and its DMA engine reads and writes the host's bytes, checked on both
//! sides. A forged descriptor is `NOT_FOUND`, a revoked export too; a host killed in the
//! middle of copies fails the copy in progress and every later one, a stopped host times the
//! copy out — nothing hangs. Then the same over a veth pair between two network namespaces
//! (root only).

use std::path::Path;

use doca_tests::checked::fnv32;
use doca_tests::link::{cut, inside, pairs, veth_pair, Apart, DPU_IP};
use doca_tests::{from_hex, to_hex, Peer};

const PEER: &str = env!("CARGO_BIN_EXE_mem_peer");

/// `mem_peer`'s pattern of `seed`.
fn pattern(seed: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9).wrapping_add(seed) >> 3) as u8).collect()
}

/// The DPU and the host of `apart`, each under its prefix (a network namespace, or nothing).
fn sides(apart: &Apart, prefixes: (&[&str], &[&str])) -> (Peer, Peer) {
    let dpu = Peer::spawn_under(prefixes.1, PEER, &[], &apart.log("dpu"), &pairs(&apart.dpu_env()));
    let host = Peer::spawn_under(prefixes.0, PEER, &[], &apart.log("host"), &pairs(&apart.host_env()));
    (dpu, host)
}

/// The host exports `len` bytes (`cmd`: `export` or `export_heap`): the descriptor.
fn export(host: &mut Peer, cmd: &str, len: usize) -> Vec<u8> {
    let answer = host.ask(&format!("{cmd} {len} exported by the host"));
    from_hex(answer.strip_prefix("desc ").unwrap_or_else(|| panic!("the host said {answer:?}"))).unwrap()
}

/// The whole exchange on one export: DMA reads and writes checked on both sides (and the
/// import's stream in `doca_emu ls` of both sides' fabric directories), plain copies, a forged
/// descriptor refused, then the export revoked.
fn exchange(dpu: &mut Peer, host: &mut Peer, cmd: &str, fabrics: (&Path, &Path)) {
    // (`dpu` imports, `host` exports: the other way round in the reverse test.)
    let size = 8 << 20;
    let desc = export(host, cmd, size);
    // A forged descriptor (one bit of its token) names no export across the link either.
    let mut forged = desc.clone();
    forged[30] ^= 0x10;
    assert_eq!(dpu.ask(&format!("import {}", to_hex(&forged))), "err DOCA_ERROR_NOT_FOUND");
    assert_eq!(dpu.ask(&format!("import {}", to_hex(&desc))), "ok");

    // The DPU's DMA reads 3 MiB + 5 at an odd place (pieces and a window of them), then a
    // small read, each checked against what the host wrote.
    let (off, len) = (123_457usize, (3 << 20) + 5);
    assert_eq!(host.ask(&format!("host_fill 0 {off} {len} 7")), "ok");
    assert_eq!(dpu.ask(&format!("dma_fetch {off} {len}")), format!("fnv {}", fnv32(&pattern(7, len))));
    // `doca_emu ls` shows the import's stream on both sides, with the bytes it moved.
    let moved = |fabric: &Path, kind: &str, way: &str| -> u64 {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_emu_cli"))
            .args(["ls", "--json"])
            .env(doca_link::FABRIC_ENV, fabric)
            .output()
            .expect("doca_emu runs");
        let seen: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ls --json");
        let objects = seen["processes"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|p| p["objects"].as_array().into_iter().flatten());
        objects.filter(|o| o["kind"] == kind).filter_map(|o| o[way]["bytes"].as_u64()).sum()
    };
    let (imp, exp) =
        (moved(fabrics.0, "mmap_link_imp", "received"), moved(fabrics.1, "mmap_link_srv", "sent"));
    assert!(
        imp >= len as u64 && exp >= len as u64,
        "doca_emu ls: the importer received {imp}, the exporter sent {exp}"
    );
    assert_eq!(
        dpu.ask(&format!("dma_fetch {} 100", off + 1000)),
        format!("fnv {}", fnv32(&pattern(7, len)[1000..1100]))
    );
    // The DPU's DMA writes 2 MiB + 3 into the host's memory; the host sees exactly them.
    let (woff, wlen) = ((5 << 20) + 11, (2 << 20) + 3);
    assert_eq!(dpu.ask(&format!("dma_store {woff} {wlen} 99")), "ok");
    assert_eq!(host.ask(&format!("host_fnv 0 {woff} {wlen}")), format!("fnv {}", fnv32(&pattern(99, wlen))));
    assert_eq!(host.ask(&format!("host_hex 0 {} 4", woff + wlen)), "hex 00000000", "written past the end");
    // Plain copies and buffers through the import (no mapping here: copies only).
    assert_eq!(dpu.ask("fetch 0 20"), "data exported by the host");
    assert_eq!(dpu.ask("store 9 BY THE DPU!"), "ok");
    assert_eq!(host.ask("host_hex 0 9 4"), format!("hex {}", to_hex(b"BY T")));
    assert_eq!(dpu.ask("fetch 0 20"), "data exported BY THE DPU!");
    assert_eq!(dpu.ask(&format!("fetch {} 2", size - 1)), "err DOCA_ERROR_INVALID_VALUE");

    // Revoked: the next copy is NOT_FOUND, and so is every later one and a new import.
    assert_eq!(host.ask("stop 0"), "ok");
    assert_eq!(dpu.ask("dma_fetch 0 4096"), "err DOCA_ERROR_NOT_FOUND");
    assert_eq!(dpu.ask("fetch 0 4"), "err DOCA_ERROR_NOT_FOUND");
    assert_eq!(dpu.ask(&format!("import {}", to_hex(&desc))), "err DOCA_ERROR_NOT_FOUND");
}

#[test]
fn the_dpu_dma_reads_and_writes_shared_host_memory_across_the_link() {
    let apart = Apart::loopback("shared");
    let (mut dpu, mut host) = sides(&apart, (&[], &[]));
    exchange(&mut dpu, &mut host, "export", (&apart.dpu_fabric(), &apart.host_fabric()));
    assert!(host.finish() && dpu.finish());
}

/// Heap memory (registered by address, as a C host's malloc): the host's main thread blocks
/// reading its stdin while its library serves the DPU.
#[test]
fn the_dpu_dma_reads_and_writes_host_heap_memory_across_the_link_while_the_host_blocks_in_read() {
    let apart = Apart::loopback("heap");
    let (mut dpu, mut host) = sides(&apart, (&[], &[]));
    exchange(&mut dpu, &mut host, "export_heap", (&apart.dpu_fabric(), &apart.host_fabric()));
    assert!(host.finish() && dpu.finish());
}

/// The host killed while the DPU's DMA copies 16 MiB again and again: the copy in progress
/// fails (`NOT_FOUND` when the host's side closed the stream, `CONNECTION_RESET` when the
/// link broke under it), every later access is `NOT_FOUND`, nothing hangs.
#[test]
fn a_host_killed_in_the_middle_of_copies_fails_them_across_the_link() {
    for cmd in ["export", "export_heap"] {
        let apart = Apart::loopback("killed");
        let (mut dpu, mut host) = sides(&apart, (&[], &[]));
        let len = 16 << 20;
        let desc = export(&mut host, cmd, len);
        assert_eq!(dpu.ask(&format!("import {}", to_hex(&desc))), "ok");
        dpu.send(&format!("dma_until_error {len}"));
        assert_eq!(dpu.line(), "looping");
        std::thread::sleep(std::time::Duration::from_millis(300));
        host.kill();
        let said = dpu.line();
        let mut words = said.split_whitespace();
        assert_eq!(words.next(), Some("failed"), "{cmd}: {said}");
        let copies: u64 = words.next().and_then(|n| n.parse().ok()).expect("a count");
        let code = words.next().unwrap_or_default();
        assert!(
            ["DOCA_ERROR_NOT_FOUND", "DOCA_ERROR_CONNECTION_RESET"].contains(&code),
            "{cmd}: the copy in progress failed with {code}"
        );
        assert!(copies > 0, "{cmd}: no copy succeeded before the kill");
        assert_eq!(dpu.ask("fetch 0 4"), "err DOCA_ERROR_NOT_FOUND", "{cmd}");
        assert_eq!(dpu.ask("dma_fetch 0 4"), "err DOCA_ERROR_NOT_FOUND", "{cmd}");
        assert!(dpu.finish());
    }
}

/// The host stopped (SIGSTOP): its kernel still keeps the link up, but nobody answers: the
/// copy fails with `TIME_OUT` after the stall limit, later ones with `NOT_FOUND` even once
/// the host runs again.
#[test]
fn a_stopped_host_times_the_copy_out_across_the_link() {
    use rustix::process::{kill_process, Pid, Signal};
    let apart = Apart::loopback("stopped");
    let (mut dpu, mut host) = sides(&apart, (&[], &[]));
    let desc = export(&mut host, "export_heap", 1 << 16);
    assert_eq!(dpu.ask(&format!("import {}", to_hex(&desc))), "ok");
    assert_eq!(dpu.ask("fetch 0 8"), "data exported");
    let pid = Pid::from_raw(host.pid() as i32).unwrap();
    kill_process(pid, Signal::STOP).unwrap();
    // A stop is delivered to each thread on its next way through the kernel: the copy is
    // asked only once every thread of the host (its serving threads too) is stopped.
    let stopped = || {
        std::fs::read_dir(format!("/proc/{}/task", host.pid())).unwrap().flatten().all(|t| {
            let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
            stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('T') || rest.starts_with('t'))
        })
    };
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !stopped() {
        assert!(std::time::Instant::now() < until, "the host never stopped");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let said = dpu.ask("dma_fetch 0 4096");
    kill_process(pid, Signal::CONT).unwrap();
    assert_eq!(said, "err DOCA_ERROR_TIME_OUT");
    assert_eq!(dpu.ask("fetch 0 8"), "err DOCA_ERROR_NOT_FOUND");
    assert_eq!(host.ask("host_hex 0 0 4"), format!("hex {}", to_hex(b"expo")), "the host runs on");
    assert!(host.finish() && dpu.finish());
}

/// The other way round: the DPU side exports (its listener's process serves the imports),
/// the host side imports and copies (its opens dial the listener).
#[test]
fn the_host_reads_and_writes_memory_the_dpu_side_exported_across_the_link() {
    for cmd in ["export", "export_heap"] {
        let apart = Apart::loopback("reverse");
        let (mut dpu, mut host) = sides(&apart, (&[], &[]));
        exchange(&mut host, &mut dpu, cmd, (&apart.host_fabric(), &apart.dpu_fabric()));
        assert!(host.finish() && dpu.finish());
    }
}

/// An importer across the link that breaks the protocol: a request that is no import and a
/// forged token are refused (closed, `NOT_FOUND`); on a proper import, requests out of range
/// (overflowing, empty) and a write into the read-only export are answered with their codes
/// and the stream goes on serving; a read larger than a piece, an unknown request, a short
/// one, a write carrying other bytes than it says each close their stream. A proper importer
/// is served all along, and the exporter's bytes are untouched.
#[test]
fn a_hostile_importer_across_the_link_gets_codes_or_a_closed_stream() {
    let apart = Apart::loopback("hostile");
    let (mut dpu, mut host) = sides(&apart, (&[], &[]));
    let len = 1 << 20;
    let desc = export(&mut dpu, "export_ro", len);
    assert_eq!(host.ask(&format!("import {}", to_hex(&desc))), "ok");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hostile"))
        .args(["link-import", &to_hex(&desc), &len.to_string()])
        .envs(apart.host_env())
        .output()
        .expect("run the hostile importer");
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        said.trim(),
        "closed NOT_FOUND OK INVALID_VALUE INVALID_VALUE INVALID_VALUE NOT_PERMITTED OK closed closed closed closed",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(host.ask("fetch 0 20"), "data exported by the host");
    assert_eq!(host.ask("store 0 x"), "err DOCA_ERROR_NOT_PERMITTED");
    assert_eq!(dpu.ask("host_hex 0 0 4"), format!("hex {}", to_hex(b"expo")));
    let log = std::fs::read_to_string(apart.log("dpu")).unwrap_or_default();
    assert!(log.contains("broke the protocol") && log.contains("malformed import request"), "{log}");
    assert!(host.finish() && dpu.finish());
}

/// The same exchanges with host and DPU in two network namespaces joined by a veth pair:
/// the link crosses a wire (root only).
#[test]
fn host_and_dpu_in_two_network_namespaces_share_memory_over_a_veth_pair() {
    let Some(net) = veth_pair("memory across a veth pair") else { return };
    for cmd in ["export", "export_heap"] {
        let apart = Apart::new("netns", &DPU_IP.to_string(), 18515);
        let (mut dpu, mut host) = sides(&apart, (&inside(&net.a), &inside(&net.b)));
        exchange(&mut dpu, &mut host, cmd, (&apart.dpu_fabric(), &apart.host_fabric()));
        assert!(host.finish() && dpu.finish());
    }
}

/// The wire cut (the veth pair's host end down: no reset, only silence) while the DPU's DMA
/// copies 16 MiB of host heap memory again and again: the copy in progress fails — the link's
/// keepalive ends the stream (`CONNECTION_RESET`) or the answer's wait runs out (`TIME_OUT`) —
/// and every later access is `NOT_FOUND`; nothing hangs (root only).
#[test]
fn a_wire_cut_in_the_middle_of_copies_fails_them_instead_of_hanging() {
    let Some(net) = veth_pair("a wire cut between two network namespaces") else { return };
    let apart = Apart::new("cut", &DPU_IP.to_string(), 18516);
    let (mut dpu, mut host) = sides(&apart, (&inside(&net.a), &inside(&net.b)));
    let len = 16 << 20;
    let desc = export(&mut host, "export_heap", len);
    assert_eq!(dpu.ask(&format!("import {}", to_hex(&desc))), "ok");
    dpu.send(&format!("dma_until_error {len}"));
    assert_eq!(dpu.line(), "looping");
    std::thread::sleep(std::time::Duration::from_millis(300));
    cut(&net.a);
    let cut = std::time::Instant::now();
    let said = dpu.line();
    eprintln!("the copy in progress failed {:?} after the cut: {said}", cut.elapsed());
    let mut words = said.split_whitespace();
    assert_eq!(words.next(), Some("failed"), "{said}");
    let copies: u64 = words.next().and_then(|n| n.parse().ok()).expect("a count");
    assert!(copies > 0, "no copy succeeded before the cut");
    let code = words.next().unwrap_or_default();
    assert!(["DOCA_ERROR_CONNECTION_RESET", "DOCA_ERROR_TIME_OUT"].contains(&code), "{said}");
    assert_eq!(dpu.ask("fetch 0 4"), "err DOCA_ERROR_NOT_FOUND");
    assert!(dpu.finish());
    host.kill();
}
