//! Fault plans against the unmodified sample programs: each fault kind, decided in one
//! process, and what both sides saw — their DOCA codes, connection events and context
//! states in their logs, the record of fired faults — and that the next run is clean.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = env!("CARGO_BIN_EXE_cc_ctrl_path_server");
const CLIENT: &str = env!("CARGO_BIN_EXE_cc_ctrl_path_client");

/// A fabric directory of this test's own, so parallel runs never meet.
fn fabric(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("doca-fab-fault-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    dir
}

/// Starts `bin` on `fabric` under the fault plan `plan` (none: no plan), recording fired
/// faults in `record`.
fn run(bin: &str, args: &[&str], fabric: &Path, plan: Option<&str>, record: &Path) -> Child {
    let mut cmd = Command::new(bin);
    cmd.args(args)
        .env("DOCA_EMU_FABRIC_DIR", fabric)
        .env("DOCA_EMU_FAULTS_RECORD", record)
        .env_remove("DOCA_EMU_FAULTS_FILE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    match plan {
        Some(p) => cmd.env("DOCA_EMU_FAULTS", p),
        None => cmd.env_remove("DOCA_EMU_FAULTS"),
    };
    cmd.spawn().unwrap()
}

/// Waits for `child` (a generous bound: a hang fails the test); its exit code and log.
fn finish(mut child: Child) -> (Option<i32>, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let Output { stdout, stderr, .. } = child.wait_with_output().unwrap();
            panic!(
                "the sample hung:\n{}{}",
                String::from_utf8_lossy(&stderr),
                String::from_utf8_lossy(&stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
    (status.code(), String::from_utf8_lossy(&stderr).to_string() + &String::from_utf8_lossy(&stdout))
}

/// The fired-fault records in `path`, one JSON object per line (none when it does not exist).
fn records(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).map(|s| s.lines().map(String::from).collect()).unwrap_or_default()
}

/// A clean pair on `fab` (the server already running, or started here): both succeed.
fn clean_client(fab: &Path, record: &Path) {
    let (code, log) = finish(run(CLIENT, &[], fab, None, record));
    assert_eq!(code, Some(0), "a clean client after the fault:\n{log}");
    assert!(log.contains("Message received: 'Reply from the DPU'"), "{log}");
}

#[test]
fn the_client_drops_the_link_at_its_send() {
    let fab = fabric("cdrop");
    let rec = fab.join("faults.jsonl");
    let server = run(SERVER, &["-t", "Reply from the DPU"], &fab, None, &rec);
    let (code, clog) = finish(run(CLIENT, &[], &fab, Some("link.drop=nth(1)"), &rec));
    // The deciding side: its send failed with the code a dead link gives, the connection
    // ended and the context went Stopping, then Idle.
    assert_eq!(code, Some(1), "{clog}");
    assert!(clog.contains("Message failed to send with error = DOCA_ERROR_CONNECTION_RESET"), "{clog}");
    assert!(clog.contains("CC client context entered into stopping state"), "{clog}");
    assert!(clog.contains("CC client context has been stopped"), "{clog}");
    // The fault is on record, once, where it was decided.
    let r = records(&rec);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].starts_with("{\"seq\":1,") && r[0].contains("\"point\":\"link.drop\""), "{r:?}");
    assert!(r[0].contains("\"hit\":1,") && r[0].contains("cc_client connection #1 send"), "{r:?}");
    // Nothing else broke: the server keeps serving, and a clean client completes the pair.
    clean_client(&fab, &rec);
    let (scode, slog) = finish(server);
    assert_eq!(scode, Some(0), "{slog}");
    // The other side: the client connected, then vanished without a message (the cut), and
    // the next client was served.
    let cut = slog.find("A client has been disconnected from server").expect(&slog);
    let first_msg = slog.find("Message received: 'Message from the client'").expect(&slog);
    assert!(cut < first_msg, "the dropped message never arrived:\n{slog}");
    assert_eq!(slog.matches("New client connected to server").count(), 2, "{slog}");
    assert_eq!(records(&rec).len(), 1, "no other fault fired");
}

#[test]
fn the_server_drops_the_link_when_the_message_arrives() {
    let fab = fabric("sdrop");
    let rec = fab.join("faults.jsonl");
    let server = run(SERVER, &["-t", "Reply from the DPU"], &fab, Some("link.drop=nth(1)"), &rec);
    let (code, clog) = finish(run(CLIENT, &[], &fab, None, &rec));
    // The other side sees what a dead server shows: its connection reset, the context
    // leaving Running for Idle, no reply.
    assert_eq!(code, Some(1), "{clog}");
    assert!(clog.contains("DOCA_ERROR_CONNECTION_RESET"), "{clog}");
    assert!(clog.contains("CC client context entered into stopping state"), "{clog}");
    assert!(clog.contains("CC client context has been stopped"), "{clog}");
    assert!(!clog.contains("Message received"), "{clog}");
    let r = records(&rec);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(
        r[0].contains("\"point\":\"link.drop\"") && r[0].contains("cc_server connection #1 recv"),
        "{r:?}"
    );
    // The rule fired once (nth(1)): the next client's message is hit 2, delivered.
    clean_client(&fab, &rec);
    let (scode, slog) = finish(server);
    assert_eq!(scode, Some(0), "{slog}");
    // The deciding side: the message that was cut never reached the callback; its
    // connection ended with a disconnection event.
    assert_eq!(slog.matches("Message received: 'Message from the client'").count(), 1, "{slog}");
    let cut = slog.find("A client has been disconnected from server").expect(&slog);
    assert!(cut < slog.find("Message received").unwrap(), "{slog}");
    assert_eq!(records(&rec).len(), 1);
}

#[test]
fn a_rebooted_server_vanishes_and_comes_back() {
    let fab = fabric("reboot");
    let rec = fab.join("faults.jsonl");
    let server = run(SERVER, &["-t", "Reply from the DPU"], &fab, Some("peer.reboot=nth(1)"), &rec);
    let (code, clog) = finish(run(CLIENT, &[], &fab, None, &rec));
    let (scode, slog) = finish(server);
    // It went at once, as a killed process does: no goodbye, no "finished" line.
    assert_eq!(scode, Some(doca_core::fault::REBOOT_EXIT_CODE), "{slog}");
    assert!(!slog.contains("Sample finished"), "{slog}");
    assert!(!slog.contains("Message received"), "{slog}");
    assert_eq!(code, Some(1), "{clog}");
    assert!(clog.contains("DOCA_ERROR_CONNECTION_RESET"), "{clog}");
    assert!(clog.contains("CC client context has been stopped"), "{clog}");
    let r = records(&rec);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"point\":\"peer.reboot\"") && r[0].contains("\"action\":\"reboot\""), "{r:?}");
    // The fabric stayed: the server comes back under the same name (its stale socket is
    // replaced) and serves.
    let server = run(SERVER, &["-t", "Reply from the DPU"], &fab, None, &rec);
    clean_client(&fab, &rec);
    let (scode, slog) = finish(server);
    assert_eq!(scode, Some(0), "{slog}");
}

#[test]
fn a_send_task_completes_with_the_chosen_code() {
    let fab = fabric("code");
    let rec = fab.join("faults.jsonl");
    let server = run(SERVER, &["-t", "Reply from the DPU"], &fab, None, &rec);
    let (code, clog) = finish(run(CLIENT, &[], &fab, Some("task.cc.send=fail(AGAIN)"), &rec));
    assert_eq!(code, Some(1), "{clog}");
    assert!(clog.contains("Message failed to send with error = DOCA_ERROR_AGAIN"), "{clog}");
    let r = records(&rec);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"point\":\"task.cc.send\"") && r[0].contains("fail(DOCA_ERROR_AGAIN)"), "{r:?}");
    clean_client(&fab, &rec);
    let (scode, slog) = finish(server);
    assert_eq!(scode, Some(0), "{slog}");
    // The failed send sent nothing: the server saw one message, from the clean client.
    assert_eq!(slog.matches("Message received").count(), 1, "{slog}");
}

#[test]
fn a_refused_task_allocation_is_no_memory() {
    let fab = fabric("nomem");
    let rec = fab.join("faults.jsonl");
    let server = run(SERVER, &["-t", "Reply from the DPU"], &fab, Some("alloc.task=nth(1)"), &rec);
    let (code, clog) = finish(run(CLIENT, &[], &fab, None, &rec));
    let (scode, slog) = finish(server);
    // The server's reply could not be allocated: the sample reports NO_MEMORY and stops.
    assert!(
        slog.contains(
            "Failed to allocate task with error = Memory allocation failure (DOCA_ERROR_NO_MEMORY)"
        ),
        "{slog}"
    );
    assert_eq!(scode, Some(1), "{slog}");
    // Its client saw the server stop before replying.
    assert_eq!(code, Some(1), "{clog}");
    assert!(!clog.contains("Message received"), "{clog}");
    let r = records(&rec);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"point\":\"alloc.task\"") && r[0].contains("\"detail\":\"cc.send\""), "{r:?}");
}

#[test]
fn delayed_completions_still_complete() {
    let fab = fabric("delay");
    let rec = fab.join("faults.jsonl");
    let server = run(SERVER, &["-t", "Reply from the DPU"], &fab, None, &rec);
    let start = Instant::now();
    let (code, clog) = finish(run(CLIENT, &[], &fab, Some("task.cc.send=delay(300)"), &rec));
    assert_eq!(code, Some(0), "{clog}");
    assert!(start.elapsed() >= Duration::from_millis(300), "the completion waited");
    let (scode, slog) = finish(server);
    assert_eq!(scode, Some(0), "{slog}");
    let r = records(&rec);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"action\":\"delay(300)\""), "{r:?}");
}

#[test]
fn a_plan_with_a_typo_fails_the_first_call() {
    let fab = fabric("typo");
    let rec = fab.join("faults.jsonl");
    for (plan, part, why) in [
        ("link.dorp=nth(3)", "link.dorp=nth(3)", "unknown point `link.dorp`"),
        (
            "seed=1; task.cc.send=5%:fial(AGAIN)",
            "task.cc.send=5%:fial(AGAIN)",
            "unknown action `fial(AGAIN)`",
        ),
        ("link.drop=nth(3) link.drop=nth(4)", "link.drop=nth(3) link.drop=nth(4)", "is a `;` missing"),
    ] {
        let (code, log) = finish(run(CLIENT, &[], &fab, Some(plan), &rec));
        assert_eq!(code, Some(1), "{log}");
        assert!(log.contains(&format!("DOCA_ERROR_INVALID_VALUE: fault plan: bad part `{part}`")), "{log}");
        assert!(log.contains(why), "{log}");
        assert!(log.contains("Sample finished with errors"), "{log}");
        // It failed at its first DOCA call, before trying to reach any server.
        assert!(!log.contains("context"), "{log}");
    }
    // A plan file: the bad line is named too.
    let file = fab.join("plan.txt");
    std::fs::write(&file, "# two rules\nlink.drop=nth(3)\ntask.dma.memcpy=fail(IO_FAILD)\n").unwrap();
    let child = Command::new(CLIENT)
        .env("DOCA_EMU_FABRIC_DIR", &fab)
        .env_remove("DOCA_EMU_FAULTS")
        .env("DOCA_EMU_FAULTS_FILE", &file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (code, log) = finish(child);
    assert_eq!(code, Some(1), "{log}");
    assert!(
        log.contains("bad part `task.dma.memcpy=fail(IO_FAILD)`: unknown DOCA error code `IO_FAILD`"),
        "{log}"
    );
    assert!(records(&rec).is_empty(), "nothing fired");
}

const DP_SERVER: &str = env!("CARGO_BIN_EXE_cc_data_path_high_speed_server");
const DP_CLIENT: &str = env!("CARGO_BIN_EXE_cc_data_path_high_speed_client");

/// Runs the data-path pair with `server_plan` and `client_plan`: both logs and exit codes,
/// and the record of fired faults.
fn data_path_pair(
    tag: &str,
    server_plan: Option<&str>,
    client_plan: Option<&str>,
) -> (Option<i32>, String, Option<i32>, String, Vec<String>) {
    let fab = fabric(tag);
    let rec = fab.join("faults.jsonl");
    let server = run(DP_SERVER, &["-t", "Bulk from the DPU"], &fab, server_plan, &rec);
    let client = run(DP_CLIENT, &["-t", "Bulk from the host"], &fab, client_plan, &rec);
    let (ccode, clog) = finish(client);
    let (scode, slog) = finish(server);
    (scode, slog, ccode, clog, records(&rec))
}

/// A peer that went away, as the data-path client reports it: whichever step it was at.
fn saw_the_peer_go(log: &str) -> bool {
    ["DOCA_ERROR_CONNECTION_ABORTED", "DOCA_ERROR_CONNECTION_RESET", "DOCA_ERROR_NOT_CONNECTED"]
        .iter()
        .any(|code| log.contains(code))
}

#[test]
fn a_producer_send_completes_with_the_chosen_code() {
    let (scode, slog, ccode, clog, r) =
        data_path_pair("prod", None, Some("task.cc.producer.send=nth(1):fail(IO_FAILED)"));
    assert_eq!(ccode, Some(1), "{clog}");
    assert!(clog.contains("Producer task failed: Err(IoFailed)"), "{clog}");
    assert!(!slog.contains("Message received: 'Bulk from the host'"), "nothing was sent:\n{slog}");
    // The server saw its client go, and its consumer's posted buffer came back.
    assert_eq!(scode, Some(1), "{slog}");
    assert!(slog.contains("A client has been disconnected from server"), "{slog}");
    assert!(slog.contains("Consumer task failed: Err(Shutdown)"), "{slog}");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"point\":\"task.cc.producer.send\"") && r[0].contains("cc_producer"), "{r:?}");
}

/// The server's consumer fails its post-receive: the server gives up, and the client, whose
/// producer waits for that buffer, learns that its peer went instead of waiting for ever.
#[test]
fn a_consumer_post_receive_completes_with_the_chosen_code() {
    let (scode, slog, ccode, clog, r) =
        data_path_pair("cons", Some("task.cc.consumer.post_recv=nth(1):fail(AGAIN)"), None);
    assert_eq!(scode, Some(1), "{slog}");
    assert!(slog.contains("Consumer task failed: Err(Again)"), "{slog}");
    assert_eq!(ccode, Some(1), "{clog}");
    // Either the connection's end reached the client first, or the server's consumer's
    // expiry did (its send then names a consumer the peer no longer has): both tell the
    // client its peer went, neither waits for ever.
    let consumer_expired = clog.contains("is out of range (not a consumer of the peer)");
    assert!(saw_the_peer_go(&clog) || consumer_expired, "{clog}");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"point\":\"task.cc.consumer.post_recv\""), "{r:?}");
}

#[test]
fn refused_maps_and_buffers_are_no_memory() {
    for (plan, line, point) in [
        (
            "alloc.mmap=nth(1)",
            "Unable to create mmap: Memory allocation failure (DOCA_ERROR_NO_MEMORY)",
            "alloc.mmap",
        ),
        (
            "alloc.buf=nth(1)",
            "Failed to post a receive buffer: Memory allocation failure (DOCA_ERROR_NO_MEMORY)",
            "alloc.buf",
        ),
    ] {
        let (scode, slog, ccode, clog, r) = data_path_pair(point, Some(plan), None);
        assert_eq!(scode, Some(1), "{slog}");
        assert!(slog.contains(line), "{slog}");
        assert_eq!(ccode, Some(1), "{clog}");
        assert!(saw_the_peer_go(&clog), "{clog}");
        assert_eq!(r.len(), 1, "{r:?}");
        assert!(r[0].contains(&format!("\"point\":\"{point}\"")), "{r:?}");
    }
}

/// A plan in a file (`DOCA_EMU_FAULTS_FILE`): comments and one rule per line, read as the
/// variable is.
#[test]
fn a_plan_file_is_read_like_the_variable() {
    let fab = fabric("file");
    let rec = fab.join("faults.jsonl");
    let plan = fab.join("plan.txt");
    std::fs::write(&plan, "# the client's first send fails\nseed=3\ntask.cc.send=1*always:fail(AGAIN)\n")
        .unwrap();
    let server = run(SERVER, &["-t", "Reply from the DPU"], &fab, None, &rec);
    let mut cmd = Command::new(CLIENT);
    cmd.env("DOCA_EMU_FABRIC_DIR", &fab)
        .env("DOCA_EMU_FAULTS_RECORD", &rec)
        .env_remove("DOCA_EMU_FAULTS")
        .env("DOCA_EMU_FAULTS_FILE", &plan)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (code, clog) = finish(cmd.spawn().unwrap());
    assert_eq!(code, Some(1), "{clog}");
    assert!(clog.contains("Message failed to send with error = DOCA_ERROR_AGAIN"), "{clog}");
    let r = records(&rec);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"rule\":\"task.cc.send=1*always:fail(AGAIN)\""), "{r:?}");
    clean_client(&fab, &rec);
    let (scode, slog) = finish(server);
    assert_eq!(scode, Some(0), "{slog}");
}

/// `link.drop` counts fast-path sends too: the client's 3rd message (start sent, start
/// received, then its producer's send) cuts the link from the producer's thread; the send
/// fails as a send to a gone consumer does, the server sees the disconnection and its
/// consumer's posted buffer comes back with SHUTDOWN; nothing was delivered.
#[test]
fn a_link_drop_at_a_producer_send_cuts_the_fast_path_too() {
    let (scode, slog, ccode, clog, r) = data_path_pair("fpdrop", None, Some("link.drop=nth(3)"));
    assert_eq!(ccode, Some(1), "{clog}");
    assert!(clog.contains("Producer task failed: Err(ConnectionAborted)"), "{clog}");
    assert_eq!(scode, Some(1), "{slog}");
    assert!(slog.contains("A client has been disconnected from server"), "{slog}");
    assert!(slog.contains("Consumer task failed: Err(Shutdown)"), "{slog}");
    assert!(!slog.contains("Message received: 'Bulk from the host'"), "{slog}");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"hit\":3,") && r[0].contains("cc_producer") && r[0].contains("send"), "{r:?}");
}
