//! RDMA connections across the TCP link: host and DPU with fabric directories of their own
//! (nothing shared but the link), as on two machines. Each side is an `rdma_peer` with one
//! exported connection and 64 KiB of exported memory; the two connect with each other's
//! descriptors (the DPU's connect asks the exporting host process for a stream over its
//! presence, the host's dials the DPU's listener). Then sends both ways (with immediate data),
//! RDMA writes and reads of the other side's exported memory both ways, a clean stop that
//! disconnects without failing anything, and a side killed: what the other side had waiting
//! fails. First over the loopback (any user), then between two network namespaces joined by
//! a veth pair (root only; skipped with a line otherwise).

use doca_mmap::AccessFlags;
use doca_rdma::wire::Desc;
use doca_tests::link::{inside, pairs, veth_pair, Apart, DPU_IP};
use doca_tests::{from_hex, to_hex, Peer};

const PEER: &str = env!("CARGO_BIN_EXE_rdma_peer");

fn perms() -> String {
    (AccessFlags::LOCAL_READ_WRITE | AccessFlags::RDMA_READ | AccessFlags::RDMA_WRITE).bits().to_string()
}

/// The two sides (the DPU's first), connected with each other's descriptors; each has
/// imported the other's exported memory.
fn connected(apart: &Apart, prefixes: (&[&str], &[&str])) -> (Peer, Peer) {
    let p = perms();
    let args = [p.as_str(), p.as_str()];
    let mut dpu = Peer::spawn_under(prefixes.1, PEER, &args, &apart.log("dpu"), &pairs(&apart.dpu_env()));
    let mut host = Peer::spawn_under(prefixes.0, PEER, &args, &apart.log("host"), &pairs(&apart.host_env()));
    let descs = |p: &mut Peer| {
        let conn = p.line().strip_prefix("conn ").expect("a connection descriptor").to_owned();
        let mmap = p.line().strip_prefix("mmap ").expect("a map descriptor").to_owned();
        (conn, mmap)
    };
    let (dpu_conn, dpu_mmap) = descs(&mut dpu);
    let (host_conn, host_mmap) = descs(&mut host);
    assert_eq!(dpu.ask(&format!("connect {host_conn}")), "ok", "the DPU connects to the host's offer");
    assert_eq!(host.ask(&format!("connect {dpu_conn}")), "ok", "the host connects to the DPU's offer");
    assert_eq!(dpu.ask(&format!("import {host_mmap}")), "ok");
    assert_eq!(host.ask(&format!("import {dpu_mmap}")), "ok");
    (dpu, host)
}

/// Sends both ways (in order, with immediate data), writes and reads both ways.
fn exchange(dpu: &mut Peer, host: &mut Peer) {
    assert_eq!(host.ask("recv 2"), "ok");
    assert_eq!(dpu.ask("send hello host"), "ok");
    assert_eq!(dpu.ask("send_imm 77 second"), "ok");
    let first = host.ask("wait_recv");
    assert!(first.starts_with("received 10 0 ") && first.ends_with(&to_hex(b"hello host")), "{first}");
    let second = host.ask("wait_recv");
    assert!(second.starts_with("received 6 77 ") && second.ends_with(&to_hex(b"second")), "{second}");
    assert_eq!(dpu.ask("recv 1"), "ok");
    assert_eq!(host.ask("send_imm 5 hi dpu"), "ok");
    let got = dpu.ask("wait_recv");
    assert!(got.starts_with("received 6 5 ") && got.ends_with(&to_hex(b"hi dpu")), "{got}");

    // One-sided, the DPU into the host's memory and back out of it.
    assert_eq!(dpu.ask("write 100 written by the DPU"), "ok");
    assert_eq!(host.ask("hex 100 18"), format!("hex {}", to_hex(b"written by the DPU")));
    assert_eq!(host.ask("fill 2000 the host's own"), "ok");
    assert_eq!(dpu.ask("read 2000 14"), format!("hex {}", to_hex(b"the host's own")));
    // And the host into the DPU's.
    assert_eq!(host.ask("write 300 from the host"), "ok");
    assert_eq!(dpu.ask("hex 300 13"), format!("hex {}", to_hex(b"from the host")));
    assert_eq!(dpu.ask("fill 40000 dpu bytes"), "ok");
    assert_eq!(host.ask("read 40000 9"), format!("hex {}", to_hex(b"dpu bytes")));
    assert_eq!(host.ask("state"), "state Running");
    assert_eq!(dpu.ask("state"), "state Running");
}

/// `victim` killed while `survivor` has a receive posted and a send waiting for a receive
/// the victim never posts: both fail, the context stops.
fn killed(survivor: &mut Peer, victim: Peer) {
    assert_eq!(survivor.ask("recv 1"), "ok");
    assert_eq!(survivor.ask("post_send to the dead"), "ok");
    std::thread::sleep(std::time::Duration::from_millis(200));
    victim.kill();
    let a = survivor.ask("wait_recv");
    let b = survivor.ask("wait_send");
    for said in [&a, &b] {
        assert!(said.starts_with("err DOCA_ERROR_") && !said.contains("TIME_OUT"), "{a} / {b}");
    }
    assert!(
        [&a, &b].iter().any(|s| s.as_str() == "err DOCA_ERROR_CONNECTION_RESET"),
        "one of the waiting tasks fails with the connection's reset: {a} / {b}"
    );
    let mut state = String::new();
    for _ in 0..100 {
        state = survivor.ask("state");
        if state == "state Idle" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(state, "state Idle", "the failed context stops");
}

#[test]
fn send_receive_write_and_read_across_the_link() {
    let apart = Apart::loopback("rdma");
    let (mut dpu, mut host) = connected(&apart, (&[], &[]));
    exchange(&mut dpu, &mut host);
    // A clean stop of the host: a goodbye, the DPU's context runs on.
    assert_eq!(host.ask("stop"), "ok");
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(dpu.ask("state"), "state Running");
    assert!(host.finish() && dpu.finish());
}

#[test]
fn a_killed_dpu_fails_what_the_host_had_waiting() {
    let apart = Apart::loopback("rdma-kill-dpu");
    let (dpu, mut host) = connected(&apart, (&[], &[]));
    killed(&mut host, dpu);
    assert!(host.finish());
}

#[test]
fn a_killed_host_fails_what_the_dpu_had_waiting() {
    let apart = Apart::loopback("rdma-kill-host");
    let (mut dpu, host) = connected(&apart, (&[], &[]));
    killed(&mut dpu, host);
    assert!(dpu.finish());
}

/// The same between two network namespaces joined by a veth pair (root only).
#[test]
fn rdma_between_two_network_namespaces_over_a_veth_pair() {
    let Some(net) = veth_pair("rdma across a veth pair") else { return };
    let apart = Apart::new("rdma-netns", &DPU_IP.to_string(), 18525);
    let (mut dpu, mut host) = connected(&apart, (&inside(&net.a), &inside(&net.b)));
    exchange(&mut dpu, &mut host);
    killed(&mut host, dpu);
    assert!(host.finish());
}

/// Descriptors that name nothing on the other side: a forged token is found as locally (the
/// offering process closes the socket: the connection fails at its first use); a service
/// that is not on the other side is `CONNECTION_ABORTED` at the connect (the header's code
/// for a connection that failed), from either side.
#[test]
fn forged_descriptors_across_the_link_connect_nothing() {
    let apart = Apart::loopback("rdma-forged");
    let p = perms();
    let args = [p.as_str(), p.as_str()];
    let mut dpu = Peer::spawn_under(&[], PEER, &args, &apart.log("dpu"), &pairs(&apart.dpu_env()));
    let mut host = Peer::spawn_under(&[], PEER, &args, &apart.log("host"), &pairs(&apart.host_env()));
    let conn_of = |p: &mut Peer| {
        let conn = from_hex(p.line().strip_prefix("conn ").expect("a connection descriptor")).unwrap();
        let _mmap = p.line();
        conn
    };
    let (dpu_conn, host_conn) = (conn_of(&mut dpu), conn_of(&mut host));
    // A byte changed on the way: the descriptor's check refuses it at once.
    let mut changed = host_conn.clone();
    changed[30] ^= 0x10;
    assert_eq!(dpu.ask(&format!("connect {}", to_hex(&changed))), "err DOCA_ERROR_CONNECTION_ABORTED");
    // Forged under a valid check (what a hostile peer can write): the service's nonce
    // changed, no such service on the other side.
    let forge = |blob: &[u8], edit: &dyn Fn(&mut Desc)| {
        let mut d = Desc::parse(blob).expect("a descriptor");
        edit(&mut d);
        to_hex(&d.encode())
    };
    let elsewhere = forge(&dpu_conn, &|d| d.service.nonce ^= 1 << 22);
    assert_eq!(host.ask(&format!("connect {elsewhere}")), "err DOCA_ERROR_CONNECTION_ABORTED");
    let elsewhere = forge(&host_conn, &|d| d.service.nonce ^= 1 << 22);
    assert_eq!(dpu.ask(&format!("connect {elsewhere}")), "err DOCA_ERROR_CONNECTION_ABORTED");
    // The token forged: the connect goes through, the first send fails.
    let forged = forge(&host_conn, &|d| d.token[6] ^= 0x10);
    assert_eq!(dpu.ask(&format!("connect {forged}")), "ok");
    let said = dpu.ask("send to nobody");
    assert!(said.starts_with("err DOCA_ERROR_"), "{said}");
    assert_eq!(host.ask("state"), "state Running", "the host's context is untouched");
    assert!(host.finish() && dpu.finish());
}

/// The connection manager across the link: the DPU side listens on a port, the host side
/// connects to the link's address and that port (its own fabric directory has no such port);
/// sends both ways and a write into the DPU's memory. A port nobody listens on across the
/// link is the client's failure.
fn cm_across(apart: &Apart, prefixes: (&[&str], &[&str]), dpu_ip: &str) {
    let p = perms();
    let port = doca_tests::link::free_port().to_string();
    let listen = format!("listen:{port}");
    let mut dpu = Peer::spawn_under(
        prefixes.1,
        PEER,
        &[p.as_str(), p.as_str(), listen.as_str()],
        &apart.log("dpu"),
        &pairs(&apart.dpu_env()),
    );
    assert_eq!(dpu.line(), "conn cm");
    let dpu_mmap = dpu.line().strip_prefix("mmap ").expect("a map descriptor").to_owned();
    let dial = |port: &str, log: &str| {
        let at = format!("dial:{dpu_ip}:{port}");
        let host = Peer::spawn_under(
            prefixes.0,
            PEER,
            &[p.as_str(), p.as_str(), at.as_str()],
            &apart.log(log),
            &pairs(&apart.host_env()),
        );
        assert_eq!(host.line(), "conn cm");
        let _mmap = host.line();
        host
    };
    let mut nobody = dial("1", "host-nobody");
    assert_eq!(nobody.ask("wait_established"), "failure");
    assert!(nobody.finish());

    let mut host = dial(&port, "host");
    assert_eq!(host.ask("wait_established"), "established");
    assert_eq!(dpu.ask("wait_established"), "established");
    assert_eq!(dpu.ask("recv 1"), "ok");
    assert_eq!(host.ask("send_imm 9 by address"), "ok");
    let got = dpu.ask("wait_recv");
    assert!(got.starts_with("received 10 9 ") && got.ends_with(&to_hex(b"by address")), "{got}");
    assert_eq!(host.ask("recv 1"), "ok");
    assert_eq!(dpu.ask("send back"), "ok");
    let got = host.ask("wait_recv");
    assert!(got.starts_with("received 4 0 ") && got.ends_with(&to_hex(b"back")), "{got}");
    assert_eq!(host.ask(&format!("import {dpu_mmap}")), "ok");
    assert_eq!(host.ask("write 500 cm write"), "ok");
    assert_eq!(dpu.ask("hex 500 8"), format!("hex {}", to_hex(b"cm write")));
    assert_eq!(host.ask("stop"), "ok");
    assert!(host.finish() && dpu.finish());
}

#[test]
fn the_connection_manager_reaches_the_dpu_sides_port_across_the_link() {
    let apart = Apart::loopback("rdma-cm");
    cm_across(&apart, (&[], &[]), "127.0.0.1");
}

/// The same between two network namespaces (root only).
#[test]
fn the_connection_manager_across_a_veth_pair() {
    let Some(net) = veth_pair("rdma cm across a veth pair") else { return };
    let apart = Apart::new("rdma-cm-netns", &DPU_IP.to_string(), 18526);
    cm_across(&apart, (&inside(&net.a), &inside(&net.b)), &DPU_IP.to_string());
}
