//! The control-path samples as a user runs them: two processes, DOCA's log lines, exit codes.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A fabric directory of this test's own, so parallel runs never meet.
fn fabric(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("doca-fab-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    dir
}

fn run(bin: &str, args: &[&str], fabric: &PathBuf) -> std::process::Child {
    Command::new(bin)
        .args(args)
        .env("DOCA_EMU_FABRIC_DIR", fabric)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn finish(child: std::process::Child) -> (bool, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut child = child;
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "sample did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
    (status.success(), String::from_utf8_lossy(&stderr).to_string() + &String::from_utf8_lossy(&stdout))
}

#[test]
fn the_sample_pair_exchanges_its_messages_and_exits() {
    let fab = fabric("pair");
    let server = run(env!("CARGO_BIN_EXE_cc_ctrl_path_server"), &["-t", "Reply from the DPU"], &fab);
    let client = run(env!("CARGO_BIN_EXE_cc_ctrl_path_client"), &[], &fab);
    let (cok, clog) = finish(client);
    let (sok, slog) = finish(server);
    assert!(sok && cok, "server:\n{slog}\nclient:\n{clog}");
    assert!(slog.contains("Message received: 'Message from the client'"), "{slog}");
    assert!(slog.contains("New client connected to server"), "{slog}");
    assert!(clog.contains("Message received: 'Reply from the DPU'"), "{clog}");
    for log in [&slog, &clog] {
        assert!(log.contains("Starting the sample") && log.contains("Sample finished successfully"), "{log}");
        assert!(log.contains("[DOCA][INF]"), "DOCA's line format: {log}");
    }
}

/// A Rust server run with the wrong `DOCA_EMU_SIDE` is served (it names its device by
/// address) but told, once, that a host process could not see the DPU's device.
#[test]
fn a_server_run_with_the_host_side_set_is_told_once() {
    let fab = fabric("wrong-side");
    let mut server = Command::new(env!("CARGO_BIN_EXE_cc_ctrl_path_server"));
    server.env("DOCA_EMU_FABRIC_DIR", &fab).env("DOCA_EMU_SIDE", "host");
    let server = server.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let client = run(env!("CARGO_BIN_EXE_cc_ctrl_path_client"), &[], &fab);
    let (cok, clog) = finish(client);
    let (sok, slog) = finish(server);
    assert!(sok && cok, "server:\n{slog}\nclient:\n{clog}");
    let want = "DOCA_EMU_SIDE=host says this process runs on the host side, but it opens the DPU device 0000:03:00.0";
    assert_eq!(slog.matches(want).count(), 1, "{slog}");
    assert!(slog.contains("set DOCA_EMU_SIDE=dpu or unset it"), "{slog}");
    assert!(!clog.contains("DOCA_EMU_SIDE"), "{clog}");
}

#[test]
fn the_demo_runs_both_sides() {
    let fab = fabric("demo");
    let (ok, out) = finish(run(env!("CARGO_BIN_EXE_doca_demo"), &[], &fab));
    assert!(ok, "{out}");
    assert!(
        out.contains("[DPU server ]") && out.contains("Message received: 'Hello from the host client'"),
        "{out}"
    );
    assert!(
        out.contains("[host client]") && out.contains("Message received: 'Hello from the DPU server'"),
        "{out}"
    );
    assert!(out.contains("Message received: 'Fast-path hello from the host client'"), "{out}");
    assert!(out.contains("Message received: 'Fast-path hello from the DPU server'"), "{out}");
    assert!(out.contains("both sides finished successfully"), "{out}");
}

#[test]
fn the_data_path_pair_exchanges_through_producers_and_consumers() {
    let fab = fabric("datapath");
    let server =
        run(env!("CARGO_BIN_EXE_cc_data_path_high_speed_server"), &["-t", "Bulk from the DPU"], &fab);
    let client =
        run(env!("CARGO_BIN_EXE_cc_data_path_high_speed_client"), &["-t", "Bulk from the host"], &fab);
    let (cok, clog) = finish(client);
    let (sok, slog) = finish(server);
    assert!(sok && cok, "server:\n{slog}\nclient:\n{clog}");
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

#[test]
fn bad_input_fails_like_doca() {
    let fab = fabric("bad");
    let (ok, log) = finish(run(env!("CARGO_BIN_EXE_cc_ctrl_path_client"), &["-p", "ff:00.0"], &fab));
    assert!(!ok);
    assert!(log.contains("Sample finished with errors"), "{log}");
    // The way out: the addresses this machine has.
    assert!(log.contains("b1:00.0 (Host)") && log.contains("03:00.0 (Dpu)"), "{log}");
    let (ok, log) = finish(run(env!("CARGO_BIN_EXE_cc_ctrl_path_server"), &["-r", "ff:00.0"], &fab));
    assert!(!ok);
    assert!(log.contains("its representors: b1:00.0, b1:00.1, 3b:00.0"), "{log}");
    let (ok, log) = finish(run(env!("CARGO_BIN_EXE_cc_ctrl_path_server"), &["-p", "b1:00.0"], &fab));
    assert!(!ok, "a server on a host function");
    assert!(log.contains("available only on DPU"), "{log}");
    let (ok, _) = finish(run(env!("CARGO_BIN_EXE_cc_ctrl_path_client"), &["-l", "55"], &fab));
    assert!(!ok);
    let long = "x".repeat(4097);
    let (ok, log) = finish(run(env!("CARGO_BIN_EXE_cc_ctrl_path_client"), &["-t", &long], &fab));
    assert!(!ok && log.contains("exceeded buffer size"), "{log}");
}

#[test]
fn the_legacy_comm_channel_pair_exchanges_with_trailing_nuls() {
    let fab = fabric("legacy");
    let server = run(env!("CARGO_BIN_EXE_comm_channel_server"), &[], &fab);
    // As in DOCA, the legacy client fails when no service listens yet: wait for its socket.
    let deadline = Instant::now() + Duration::from_secs(60);
    let listening = || {
        std::fs::read_dir(&fab).unwrap().flatten().any(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.starts_with("ep-") && n.ends_with(".sock")
        })
    };
    while !listening() {
        assert!(Instant::now() < deadline, "the service never listened");
        std::thread::sleep(Duration::from_millis(5));
    }
    let client = run(env!("CARGO_BIN_EXE_comm_channel_client"), &[], &fab);
    let (cok, clog) = finish(client);
    let (sok, slog) = finish(server);
    assert!(sok && cok, "server:\n{slog}\nclient:\n{clog}");
    assert!(slog.contains("Server started Listening, waiting for new connections"), "{slog}");
    assert!(slog.contains("Received message: Message from the client"), "{slog}");
    assert!(clog.contains("Connection to server was established successfully"), "{clog}");
    assert!(clog.contains("Server response: Message from the server"), "{clog}");
}

/// A client the server refuses (here a server that takes no client) fails and says so: a
/// non-zero exit, "Sample finished with errors", never "successfully".
#[test]
fn a_client_that_cannot_connect_exits_with_an_error() {
    let fab = fabric("refused");
    let topo = fab.join("no-clients.topology");
    let default = include_str!("../../core/src/default.topology");
    std::fs::write(&topo, format!("{default}\ncap cc.max_clients 0\n")).unwrap();
    let server = Command::new(env!("CARGO_BIN_EXE_cc_ctrl_path_server"))
        .env("DOCA_EMU_FABRIC_DIR", &fab)
        .env("DOCA_EMU_TOPOLOGY", &topo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (ok, log) = finish(run(env!("CARGO_BIN_EXE_cc_ctrl_path_client"), &[], &fab));
    let mut server = server;
    let _ = server.kill();
    let _ = server.wait();
    assert!(!ok, "{log}");
    assert!(log.contains("failed to connect") && log.contains("Sample finished with errors"), "{log}");
    assert!(!log.contains("Sample finished successfully"), "{log}");
}

/// A client started without a server explains, after a couple of seconds, what it waits for:
/// the server's name, the host function, the fabric directory and the likely causes.
#[test]
fn a_waiting_client_says_what_it_waits_for() {
    let fab = fabric("waiting");
    let mut client = run(env!("CARGO_BIN_EXE_cc_ctrl_path_client"), &[], &fab);
    std::thread::sleep(Duration::from_millis(3500));
    let _ = client.kill();
    let (_, log) = finish(client);
    assert!(log.contains("still waiting after"), "{log}");
    assert!(log.contains("no server named \"cc_ctrl_path_sample_server\""), "{log}");
    assert!(log.contains("b1:00.0") && log.contains(&fab.display().to_string()), "{log}");
    assert!(log.contains("DOCA_EMU_FABRIC_DIR"), "{log}");
}
