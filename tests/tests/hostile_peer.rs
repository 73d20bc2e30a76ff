//! A connected peer that breaks the protocol on purpose, as a real process (`hostile`): the
//! server under attack drops that one connection, logs it, and keeps serving everyone else.

use std::time::{Duration, Instant};

use doca_cc::proto::handshake::{HELLO_DEADLINE, MAX_HANDSHAKES, MAX_HANDSHAKES_PER_PEER};
use doca_core::Error;
use doca_tests::harness::{harness, until, until_line, Harness};
use doca_tests::Peer;

const HOSTILE: &str = env!("CARGO_BIN_EXE_hostile");
const CC_PEER: &str = env!("CARGO_BIN_EXE_cc_peer");
const FP_PEER: &str = env!("CARGO_BIN_EXE_fp_peer");
const MEM_PEER: &str = env!("CARGO_BIN_EXE_mem_peer");

/// What this test process logs (every test's, together), for tests that look for a line.
static LOG: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Starts capturing this process's log (warnings and errors) into [`LOG`].
fn capture_log() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        tracing_subscriber::fmt()
            .with_writer(|| LogWriter)
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .init();
    });
}

/// The log lines captured so far that contain `needle`.
fn log_lines_with(needle: &str) -> Vec<String> {
    let text = String::from_utf8_lossy(&LOG.lock().unwrap()).into_owned();
    text.lines().filter(|l| l.contains(needle)).map(str::to_string).collect()
}

fn unique(tag: &str) -> String {
    format!("hostile-{tag}-{}", std::process::id())
}

/// Waits for the hostile peer's verdict while serving.
fn verdict(h: &Harness, peer: &Peer) -> String {
    let mut line = None;
    until(&h.pe, "the hostile peer's verdict", || {
        line = line.take().or_else(|| peer.try_line());
        line.is_some()
    });
    line.unwrap()
}

/// A real client is still served: it gets its echoes and leaves cleanly.
fn still_serving(h: &Harness, name: &str) {
    let mut client = Peer::spawn(CC_PEER, &["client", name, "echo", "5", "11"]);
    let mut exited = false;
    until(&h.pe, "a real client after the attack", || {
        exited = exited || client.exited();
        exited
    });
    assert!(client.finish(), "the server still serves real clients");
}

#[test]
fn a_ring_index_out_of_bounds_closes_that_connection_only() {
    let name = unique("tail");
    let h = harness(&name, false);
    let hostile = Peer::spawn(HOSTILE, &["ring-tail", &name]);
    assert_eq!(verdict(&h, &hostile), "closed", "the server hung up on the hostile peer");
    until(&h.pe, "the disconnection event", || h.disconnected.borrow().len() == 1);
    assert!(h.received.borrow().is_empty(), "no garbage was delivered");
    let h2 = harness(&unique("tail-after"), true);
    still_serving(&h2, &unique("tail-after"));
    drop(h);
}

#[test]
fn registering_more_consumers_than_the_cap_closes_the_connection() {
    let name = unique("consumers");
    let h = harness(&name, true);
    let cap = doca_cc::caps::MAX_CONSUMERS.default;
    let hostile = Peer::spawn(HOSTILE, &["consumers", &name, &(cap + 1).to_string()]);
    let line = verdict(&h, &hostile);
    assert_eq!(line, format!("closed after {cap} acks"), "every consumer up to the cap was registered");
    assert_eq!(h.consumers.borrow().len() as u64, cap, "one new-consumer event each, none beyond the cap");
    until(&h.pe, "the disconnection event", || h.disconnected.borrow().len() == 1);
    still_serving(&h, &name);
}

#[test]
fn a_consumer_with_more_buffers_than_a_consumer_can_post_closes_the_connection() {
    let name = unique("big-consumer");
    let h = harness(&name, true);
    // Rings sized to match: only the count is wrong (it sizes what this side maps).
    let slots = doca_cc::caps::MAX_FAST_PATH_TASKS.default + 1;
    let hostile = Peer::spawn(HOSTILE, &["big-consumer", &name, &slots.to_string()]);
    assert_eq!(verdict(&h, &hostile), "closed after 0 acks");
    assert!(h.consumers.borrow().is_empty(), "no new-consumer event");
    until(&h.pe, "the disconnection event", || h.disconnected.borrow().len() == 1);
    still_serving(&h, &name);
}

#[test]
fn silent_sockets_beyond_one_process_share_of_handshakes_are_closed_at_once() {
    let name = unique("silent");
    let h = harness(&name, true);
    let cap = doca_cc::proto::handshake::MAX_HANDSHAKES_PER_PEER;
    let mut hostile = Peer::spawn(HOSTILE, &["silent", &name, &(cap + 40).to_string(), "cc", "40"]);
    let line = verdict(&h, &hostile);
    assert_eq!(
        line, "dropped 40",
        "beyond {cap} handshakes in progress of one process, new sockets are closed"
    );
    hostile.send("bye");
    assert!(hostile.finish());
    still_serving(&h, &name);
}

/// A hostile client's Hello (mode `mode` of the hostile binary) whose doorbells the server
/// refuses: the connection is dropped, none comes of it, and real clients are still served.
fn bells_refused(mode: &str) {
    let name = unique(mode);
    let h = harness(&name, true);
    let hostile = Peer::spawn(HOSTILE, &[mode, &name]);
    assert_eq!(verdict(&h, &hostile), "dropped");
    assert!(h.connected.borrow().is_empty(), "no connection came of it");
    still_serving(&h, &name);
}

#[test]
fn doorbells_that_are_not_unix_sockets_are_refused_at_the_handshake() {
    bells_refused("bells");
}

/// The doorbells are the last files of a pipe whose lock the hostile client holds: the
/// server's thread, which refuses them, never waits to close them (they go to a closing
/// thread), and goes on serving.
#[test]
fn doorbells_of_a_locked_pipe_freeze_no_server_thread() {
    bells_refused("locked-bells");
}

#[test]
fn a_client_claiming_another_host_function_is_refused() {
    let name = unique("function");
    let h = harness(&name, true);
    let hostile = Peer::spawn(HOSTILE, &["function", &name, "b1:00.1"]);
    assert_eq!(verdict(&h, &hostile), "refused DOCA_ERROR_NOT_PERMITTED");
    assert!(h.connected.borrow().is_empty());
    still_serving(&h, &name);
}

/// A stranger — a process of another user (when run as root; else of this user) that reads
/// `/proc/net/unix`, and even knows which sockets are the server's and the client's — finds
/// no doorbell to send to: they have no address. (They were abstract names: a flood from
/// uid 65534 filled their queues, honest rings failed with `EAGAIN`, and an idle server
/// spun.) The connection keeps working.
#[test]
fn a_stranger_finds_no_doorbell_to_flood() {
    let name = unique("stranger");
    let h = harness(&name, true);
    let mut client = Peer::spawn(CC_PEER, &["client", &name, "hold"]);
    until(&h.pe, "the client's connection", || h.connected.borrow().len() == 1);
    let uid = match rustix::process::getuid().as_raw() {
        0 => 65534,
        me => me,
    };
    let pids = format!("{},{}", std::process::id(), client.pid());
    let stranger = Peer::spawn(HOSTILE, &["find-bells", &pids, &uid.to_string()]);
    assert_eq!(verdict(&h, &stranger), "found 0, flooded 0");
    client.send("send after the stranger");
    let mut line = None;
    until(&h.pe, "the echo", || {
        line = line.take().or_else(|| client.try_line().filter(|l| l.starts_with("recv")));
        line.is_some()
    });
    assert_eq!(line.unwrap(), "recv after the stranger");
    client.send("stop");
    assert!(client.finish());
}

/// A client checks who answers: a process of another user is refused. (Needs root to run a
/// process as another user; elsewhere it says so and checks nothing.)
#[test]
fn a_server_process_of_another_user_is_refused() {
    if rustix::process::getuid().as_raw() != 0 {
        eprintln!("skipped: running a peer as another user needs root");
        return;
    }
    let dir = std::env::temp_dir().join(format!("doca-foreign-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let path = dir.join("foreign.sock");
    let foreign = Peer::spawn(HOSTILE, &["listen-as", "65534", path.to_str().unwrap()]);
    assert_eq!(foreign.line(), "listening");
    let sock = doca_link::connect(&path).unwrap().expect("the foreign process listens");
    assert_eq!(doca_link::peer_pid(std::os::fd::AsFd::as_fd(&sock)), Err(doca_link::Error::NotPermitted));
    drop(sock);
    drop(foreign);
    let _ = std::fs::remove_dir_all(&dir);
    std::thread::sleep(Duration::from_millis(1));
}

/// Checks the rate limit on `lines` log lines of one kind logged by a server that lived
/// within `lived` (measured around its whole life): at least one, and at most one a second
/// (one, then one per full second that passed). A bound on the count for the time taken,
/// not on the time: a slow, loaded machine only allows more lines.
fn at_most_one_a_second(lines: usize, lived: Duration, what: &str, text: &str) {
    let most = 1 + lived.as_secs() as usize;
    assert!((1..=most).contains(&lines), "{lines} {what} in {lived:?} (at most {most}):\n{text}");
}

/// Reads a peer's log file.
fn log_of(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Connects `n` sockets to server `name` and sends garbage on each (a Hello it cannot parse).
fn garbage_handshakes(name: &str, n: usize) {
    let pci = doca_core::PciAddr::parse("b1:00.0").unwrap();
    let path = doca_link::service_path("cc", pci, name).unwrap();
    let (_bell, ring) = doca_link::notify::Doorbell::pair().unwrap();
    use std::os::fd::AsFd;
    let mut sent = 0;
    while sent < n {
        match doca_link::connect(&path) {
            Ok(Some(sock)) => {
                match doca_link::send(sock.as_fd(), b"not a handshake", &[ring.as_fd(), ring.as_fd()]) {
                    // Reset: the server already dropped this socket (a flood past its cap of
                    // pending handshakes is refused at once) — as good as read.
                    Ok(()) | Err(doca_link::Error::ConnectionReset) => sent += 1,
                    Err(e) => panic!("send: {e:?}"),
                }
            }
            // The backlog is full for a moment: the server accepts as fast as it can.
            Err(doca_link::Error::Again) => std::thread::sleep(Duration::from_micros(200)),
            other => panic!("connect: {other:?}"),
        }
    }
}

#[test]
fn a_flood_of_garbage_costs_one_log_line_a_second_not_one_per_packet() {
    let name = unique("flood");
    let log = std::env::temp_dir().join(format!("hostile-{name}.log"));
    let born = std::time::Instant::now();
    let server = Peer::spawn_logged(CC_PEER, &["server", &name], &log);
    assert_eq!(server.line(), "running");
    garbage_handshakes(&name, 300);
    // Served still: a real client gets its echoes.
    let mut client = Peer::spawn(CC_PEER, &["client", &name, "echo", "3", "5"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !client.exited() {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(client.finish());
    assert!(server.finish());
    let lived = born.elapsed();
    let text = log_of(&log);
    let lines = text.lines().filter(|l| l.contains("malformed handshake")).count();
    at_most_one_a_second(lines, lived, "lines for 300 garbage handshakes", &text);
    let _ = std::fs::remove_file(&log);
}

#[test]
fn a_server_out_of_file_descriptors_rests_and_serves_again() {
    let name = unique("nofile");
    let log = std::env::temp_dir().join(format!("hostile-{name}.log"));
    // The peer budgets off (one peer may take every descriptor): the server runs out.
    let topology = std::env::temp_dir().join(format!("hostile-{name}.topology"));
    std::fs::write(&topology, format!("{}\ncap peer.fds_per_process_pct 1000\ncap peer.fds_per_conn_pct 1000\ncap peer.fd_reserve_pct 0\n", doca_core::topology::DEFAULT_TOPOLOGY)).unwrap();
    let env = [(doca_core::TOPOLOGY_ENV, topology.to_str().unwrap())];
    let born = std::time::Instant::now();
    let server = Peer::spawn_logged_env(CC_PEER, &["server", &name, "--nofile", "24"], &log, &env);
    assert_eq!(server.line(), "running");
    let mut hostile = Peer::spawn(HOSTILE, &["silent", &name, "60"]);
    let dropped = hostile.line();
    assert!(dropped.starts_with("dropped"), "{dropped}");
    hostile.send("bye");
    assert!(hostile.finish());
    // Once the hostile peer's sockets are gone, descriptors are free again.
    let mut client = Peer::spawn(CC_PEER, &["client", &name, "echo", "3", "7"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !client.exited() {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = client.output();
    assert!(out.success, "served after running out of descriptors: {} {}", out.stdout, out.stderr);
    assert!(server.finish());
    let lived = born.elapsed();
    let text = log_of(&log);
    let lines = text.lines().filter(|l| l.contains("out of file descriptors")).count();
    at_most_one_a_second(lines, lived, "lines about running out of descriptors", &text);
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&topology);
}

/// One process opens connection after connection (each handing over its doorbells, each
/// costing the server its socket, their doorbells, a segment…) to a server limited to 256
/// descriptors: beyond its share (a quarter) it is refused with `FULL` and a log line naming
/// it, and an honest client from another process is still served. (Without the budget it
/// took every descriptor: honest clients were not even accepted.)
#[test]
fn one_process_cannot_take_the_descriptors_honest_clients_need() {
    let name = unique("fds");
    let log = std::env::temp_dir().join(format!("hostile-{name}.log"));
    let born = std::time::Instant::now();
    let server = Peer::spawn_logged(CC_PEER, &["server", &name, "--nofile", "256"], &log);
    assert_eq!(server.line(), "running");
    let mut hostile = Peer::spawn(HOSTILE, &["conns", &name, "96"]);
    let line = hostile.line();
    let mut client = Peer::spawn(CC_PEER, &["client", &name, "echo", "3", "9"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !client.exited() {
        assert!(std::time::Instant::now() < deadline, "the honest client was not served");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(client.finish(), "the honest client was served while the hostile one holds its share ({line})");
    let words: Vec<&str> = line.split(' ').collect();
    let (accepted, refused): (usize, usize) = (words[1].parse().unwrap(), words[3].parse().unwrap());
    assert!(accepted >= 1 && refused >= 1 && accepted + refused == 96, "{line}");
    assert_eq!(words[4], "DOCA_ERROR_FULL", "{line}");
    // Its share: 25 % of 256 descriptors, CONN_FDS per connection.
    assert!(accepted as u64 <= 64 / doca_cc::transport::budget::CONN_FDS, "{line}");
    let pid = hostile.as_named_by_peers();
    hostile.send("bye");
    assert!(hostile.finish());
    assert!(server.finish());
    let lived = born.elapsed();
    let text = log_of(&log);
    let lines = text.lines().filter(|l| l.contains(&pid) && l.contains("peer.fds_per_process_pct")).count();
    at_most_one_a_second(lines, lived, &format!("lines naming {pid} and its budget"), &text);
    let _ = std::fs::remove_file(&log);
}

/// A peer announces a consumer over a sparse memfd of almost 16 TiB (the whole of what this
/// process maps of others' memory): that consumer is refused (`NO_MEMORY`, with a line naming
/// the peer and the budget) and its connection stays; an honest client in another process
/// then announces a consumer, which runs and receives. (Before the budget the huge one was
/// mapped, and the honest one was refused as a peer that "broke the protocol".)
#[test]
fn a_consumer_over_a_huge_sparse_memfd_is_refused_and_honest_consumers_are_still_served() {
    use doca_buf::Inventory;
    use doca_mmap::Mmap;

    capture_log();
    let name = unique("huge");
    let h = harness(&name, true);
    // Its segment (data and header page) is then one page short of 16 TiB.
    let bytes = (16usize << 40) - 2 * 4096;
    let mut hostile = Peer::spawn(HOSTILE, &["huge-consumer", &name, &bytes.to_string()]);
    let refused = verdict(&h, &hostile);
    let honest = Peer::spawn(FP_PEER, &[&name, "1", "4096", "4", "shared", "1"]);
    let mut line = None;
    until(&h.pe, "the honest consumer", || {
        line = line.take().or_else(|| honest.try_line());
        line.is_some()
    });
    let line = line.unwrap();
    assert!(line.starts_with("consumers "), "{line}");
    let (conn_id, id) = *h.consumers.borrow().last().expect("the honest consumer's event");
    let conn = h.server.connections().into_iter().find(|c| c.id() == conn_id).unwrap();
    let (producer, done) = recording_producer(&h, &conn);
    let mut msg = vec![0u8; 4096];
    doca_tests::bulk::fill(&mut msg, 1, 0);
    let src = Mmap::create().unwrap();
    src.set_memrange(msg).unwrap();
    src.start().unwrap();
    let inv = Inventory::create(1).unwrap();
    inv.start().unwrap();
    let buf = inv.buf_get_data_at(&src, 0, 4096).unwrap();
    producer.task_send_alloc_init(&buf, id).unwrap().submit().map_err(|r| r.error).unwrap();
    let mut got = None;
    until(&h.pe, "the honest consumer's receipt", || {
        got = got.take().or_else(|| honest.try_line());
        got.is_some()
    });
    assert!(got.unwrap().starts_with("ok 4096"), "the honest consumer received the message");
    // The consumer may print its receipt before this engine's pass completes the send.
    until(&h.pe, "the send's completion", || !done.borrow().is_empty());
    assert_eq!(*done.borrow(), vec![Ok(())]);
    assert_eq!(refused, "refused DOCA_ERROR_NO_MEMORY");
    assert_eq!(h.consumers.borrow().len(), 1, "no new-consumer event for the refused one");
    assert!(h.disconnected.borrow().is_empty(), "both connections stay up");
    let pid = format!("pid {}", hostile.pid());
    let lines = log_lines_with(&pid);
    assert!(
        lines.iter().any(|l| l.contains("peer.mem_per_conn")),
        "no line names {pid} and its budget: {lines:?}"
    );
    assert!(log_lines_with("broke the protocol")
        .iter()
        .all(|l| !l.contains(&format!("pid {}", honest.pid()))));
    hostile.send("bye");
    drop((buf, inv, producer, honest));
}

/// A consumer of the peer posts a buffer outside the memory it shared: the send to it fails
/// (`CONNECTION_ABORTED`: that consumer is dropped on this side) without touching memory out
/// of bounds, and the server goes on serving.
#[test]
fn a_posted_buffer_outside_the_shared_memory_fails_the_send_and_drops_that_consumer() {
    use doca_buf::Inventory;
    use doca_mmap::Mmap;

    let name = unique("bad-post");
    let h = harness(&name, true);
    let hostile = Peer::spawn(HOSTILE, &["bad-post", &name]);
    assert_eq!(verdict(&h, &hostile), "registered");
    until(&h.pe, "the new-consumer event", || h.consumers.borrow().len() == 1);
    let conn = h.server.connections().pop().expect("the hostile peer's connection");
    let (producer, done) = recording_producer(&h, &conn);
    let src = Mmap::create().unwrap();
    src.set_memrange(&b"out of bounds"[..]).unwrap();
    src.start().unwrap();
    let inv = Inventory::create(1).unwrap();
    inv.start().unwrap();
    let buf = inv.buf_get_data_at(&src, 0, 13).unwrap();
    let id = h.consumers.borrow()[0].1;
    producer.task_send_alloc_init(&buf, id).unwrap().submit().map_err(|r| r.error).unwrap();
    until(&h.pe, "the send's completion", || !done.borrow().is_empty());
    assert_eq!(*done.borrow(), vec![Err(Error::ConnectionAborted)]);
    // The consumer is gone for this side: a second send to it fails too.
    match producer.task_send_alloc_init(&buf, id) {
        Ok(task) => {
            task.submit().map_err(|r| r.error).unwrap();
            until(&h.pe, "the second send's completion", || done.borrow().len() == 2);
            assert_eq!(done.borrow()[1], Err(Error::ConnectionAborted));
        }
        Err(e) => assert_eq!(e, Error::InvalidValue),
    }
    still_serving(&h, &name);
}

/// Processes that each open more silent sockets than one process may have handshakes in
/// progress, together holding every handshake place of the server.
fn attackers(name: &str, legacy: bool) -> Vec<Peer> {
    let n = (MAX_HANDSHAKES / MAX_HANDSHAKES_PER_PEER).to_string();
    let each = (MAX_HANDSHAKES_PER_PEER + 8).to_string();
    let mode = if legacy { "ep" } else { "cc" };
    (0..n.parse::<usize>().unwrap())
        .map(|_| Peer::spawn(HOSTILE, &["silent", name, &each, mode, "8"]))
        .collect()
}

/// Every handshake place is held by silent sockets of other processes: an honest client
/// still connects at once (the process holding the most places gives up its oldest silent
/// socket), not after the silent sockets' Hello deadline.
#[test]
fn an_honest_client_connects_while_other_processes_hold_every_handshake_place() {
    let name = unique("fair");
    let h = harness(&name, true);
    let mut attackers = attackers(&name, false);
    let mut verdicts: Vec<Option<String>> = vec![None; attackers.len()];
    until(&h.pe, "the attackers' verdicts", || {
        for (a, v) in attackers.iter().zip(verdicts.iter_mut()) {
            *v = v.take().or_else(|| a.try_line());
        }
        verdicts.iter().all(Option::is_some)
    });
    let expected = format!("dropped {}", 8);
    assert!(verdicts.iter().all(|v| v.as_deref() == Some(expected.as_str())), "{verdicts:?}");
    let t0 = Instant::now();
    let mut client = Peer::spawn(CC_PEER, &["client", &name, "hold"]);
    until_line(&h.pe, &client, "running");
    let waited = t0.elapsed();
    assert!(
        waited < HELLO_DEADLINE,
        "the honest client waited {waited:?}: as long as the attackers' deadline"
    );
    client.send("stop");
    until(&h.pe, "the honest client to leave", || client.exited());
    assert!(client.finish());
    for a in attackers.iter_mut() {
        a.send("bye");
    }
    for a in attackers {
        assert!(a.finish());
    }
}

/// Statuses of a producer's sends, in completion order.
type Statuses = std::rc::Rc<std::cell::RefCell<Vec<Result<(), Error>>>>;

/// A started producer on `conn` (one send task) that records its sends' statuses.
fn recording_producer(h: &Harness, conn: &doca_cc::Connection) -> (doca_cc::Producer, Statuses) {
    use doca_cc::{Producer, ProducerSendTask};
    let producer = Producer::create(conn).unwrap();
    h.pe.connect_ctx(&producer.as_ctx()).unwrap();
    let done: Statuses = Default::default();
    let (ok, err) = (done.clone(), done.clone());
    producer
        .task_send_set_conf(
            move |t: ProducerSendTask, _, _| ok.borrow_mut().push(t.status()),
            move |t: ProducerSendTask, _, _| err.borrow_mut().push(t.status()),
            1,
        )
        .unwrap();
    producer.as_ctx().start().unwrap();
    (producer, done)
}

/// How long an honest side may wait to be served while an attacker holds its request open:
/// generous (a loaded machine), and well under the exporter's stall limit (10 s), which is
/// what the attack used to cost: every try answered `IN_USE` until then, and again after
/// each reconnection.
const SERVED_WITHIN: Duration = Duration::from_secs(5);

/// Tries `op` until it is not `IN_USE`, for at most [`SERVED_WITHIN`]: its last result, and
/// how many tries answered `IN_USE`.
fn served_within<T>(mut op: impl FnMut() -> Result<T, String>) -> (Result<T, String>, u32) {
    let deadline = Instant::now() + SERVED_WITHIN;
    let mut in_use = 0;
    loop {
        match op() {
            Err(e) if e.contains("IN_USE") && Instant::now() < deadline => {
                in_use += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            r => return (r, in_use),
        }
    }
}

/// A private fabric directory for the peers of one test.
/// Its directory, the exporter's log, and a log per other peer (`log(i)`).
fn fabric_env(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!("hostile-fabric-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    // 0700: the library refuses a fabric directory other users could enter.
    std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
    let log = dir.join("exporter.log");
    (dir, log)
}

/// A served (heap) export of 8 MiB in this process. A hostile process asks to write the
/// last window's worth of the range (1 MiB) and then neither reads an answer nor asks again;
/// later another does the same with a read. Meanwhile an honest importer (another process)
/// reads and writes, and the exporter reads and writes its own bytes: each is served within
/// [`SERVED_WITHIN`] (measured; normally at the first try). Once, the exporter held its borrow
/// of the whole range while waiting on the attacker: every one of them answered `IN_USE` for
/// the 10 s stall limit, and again after each reconnection; until the bytes went through a
/// window of shared memory, the serving thread then still waited on the attacker's pipe.
#[test]
fn a_stalled_copy_of_a_served_export_blocks_neither_other_importers_nor_the_exporter() {
    // The exporter is this test's own process: it runs in a fresh process whose fabric
    // directory is the peers' (the descriptor names a service in the exporter's directory).
    let made = std::env::var_os(doca_tests::fresh::CHILD_ENV)
        .is_none()
        .then(|| fabric_env(&unique("served-stall")).0);
    doca_tests::in_fresh_process!(&[(
        doca_link::FABRIC_ENV,
        made.as_ref().map(|d| d.to_str().expect("a UTF-8 temp dir"))
    )]);
    let fabric =
        std::path::PathBuf::from(std::env::var_os(doca_link::FABRIC_ENV).expect("set by the parent"));
    let log = fabric.join("exporter.log");
    let env = [("DOCA_EMU_FABRIC_DIR", fabric.to_str().unwrap())];
    let len = 8 << 20;
    let host = doca_core::open_device_with_pci("b1:00.0", None).unwrap();
    let map = doca_mmap::Mmap::create().unwrap();
    map.set_memrange((0..len).map(|i| b'a' + (i % 26) as u8).collect::<Vec<u8>>()).unwrap();
    map.set_permissions(doca_mmap::AccessFlags::LOCAL_READ_WRITE | doca_mmap::AccessFlags::PCI_READ_WRITE)
        .unwrap();
    map.add_dev(&host).unwrap();
    map.start().unwrap();
    let hex = doca_tests::to_hex(&map.export_pci(&host).unwrap());
    let mut honest = Peer::spawn_logged_env(MEM_PEER, &[], &fabric.join("honest.log"), &env);
    assert_eq!(honest.ask(&format!("import {hex}")), "ok");
    let access = map.access().unwrap();
    let ask = |peer: &mut Peer, line: &str| {
        let a = peer.ask(line);
        if a.starts_with("err") {
            Err(a)
        } else {
            Ok(a)
        }
    };
    for mode in ["write", "read"] {
        let mut attacker = Peer::spawn_logged_env(
            HOSTILE,
            &["served-stall", &hex, mode, &len.to_string()],
            &fabric.join(format!("attacker-{mode}.log")),
            &env,
        );
        assert_eq!(attacker.line(), "holding", "the {mode} attack got its request served");
        let t0 = Instant::now();
        let (read, r_busy) = served_within(|| ask(&mut honest, "fetch 1000 4"));
        let (write, w_busy) = served_within(|| ask(&mut honest, &format!("store 2000 {mode}")));
        let (own_write, o_busy) =
            served_within(|| access.write(3000, b"own").map_err(|e| e.name().to_string()));
        let mut back = [0u8; 5];
        let (own_read, b_busy) =
            served_within(|| access.read(2000, &mut back).map_err(|e| e.name().to_string()));
        let waited = t0.elapsed();
        eprintln!("{mode} attack: served in {waited:?}, IN_USE answers {r_busy}/{w_busy}/{o_busy}/{b_busy}");
        let expected: String = (1000..1004).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        assert_eq!(read, Ok(format!("data {expected}")), "the honest importer's read ({mode} attack)");
        assert_eq!(write, Ok("ok".into()), "the honest importer's write ({mode} attack)");
        assert_eq!(own_write, Ok(()), "the exporter's own write ({mode} attack)");
        assert_eq!(own_read, Ok(()), "the exporter's own read ({mode} attack)");
        assert_eq!(&back[..mode.len()], mode.as_bytes());
        // The attacker still holds its request: what was served, was served meanwhile.
        assert!(!attacker.exited(), "the attacker left early");
        attacker.send("bye");
        assert!(attacker.finish());
    }
    assert!(honest.finish());
    map.stop().unwrap();
    let _ = std::fs::remove_dir_all(&fabric);
    let _ = std::fs::remove_file(&log);
}

fn proc_count(pid: u32, what: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/{what}")).map_or(0, |d| d.count())
}

/// Four processes hold 16 idle connections each to a served export of another process: all
/// 64 places. An honest importer (a fifth process) still imports within [`SERVED_WITHIN`]
/// (the process holding the most places gives its oldest idle connection away), and keeps
/// its place when yet another process comes. Before, the honest import was
/// `NOT_FOUND` until the attackers left. The exporter's threads and descriptors stay within
/// the places (measured).
#[test]
fn an_honest_importer_is_served_while_other_processes_hold_every_place_of_a_served_export() {
    let name = unique("served-places");
    let (fabric, log) = fabric_env(&name);
    let env = [("DOCA_EMU_FABRIC_DIR", fabric.to_str().unwrap())];
    let mut exporter = Peer::spawn_logged_env(MEM_PEER, &[], &log, &env);
    let answer = exporter.ask("export_heap 4096 served to the honest one");
    let hex = answer.strip_prefix("desc ").expect("a descriptor").to_string();
    let (before_threads, before_fds) = (proc_count(exporter.pid(), "task"), proc_count(exporter.pid(), "fd"));
    let per = doca_mmap::served::MAX_CONNS_PER_PEER;
    let attackers: Vec<Peer> = (0..doca_mmap::served::MAX_CONNS / per)
        .map(|i| {
            Peer::spawn_logged_env(
                HOSTILE,
                &["served-idle", &hex, &per.to_string()],
                &fabric.join(format!("attacker-{i}.log")),
                &env,
            )
        })
        .collect();
    for a in &attackers {
        assert_eq!(a.line(), format!("held {per} refused 0"));
    }
    let (threads, fds) = (proc_count(exporter.pid(), "task"), proc_count(exporter.pid(), "fd"));
    let t0 = Instant::now();
    let mut honest = Peer::spawn_logged_env(MEM_PEER, &[], &fabric.join("honest.log"), &env);
    let (import, _) = served_within(|| {
        let a = honest.ask(&format!("import {hex}"));
        if a == "ok" {
            Ok(a)
        } else {
            // NOT_FOUND (no place): counted as a busy answer, tried again until the bound.
            Err(format!("IN_USE ({a})"))
        }
    });
    let waited = t0.elapsed();
    eprintln!(
        "exporter: {before_threads} threads, {before_fds} fds before; {threads}, {fds} with 64 idle importers; honest import after {waited:?}"
    );
    assert_eq!(import, Ok("ok".into()), "the honest import");
    assert_eq!(honest.ask("fetch 0 9"), "data served to");
    // Threads: one per place, the accepting one and this process's own; descriptors: five
    // per place (charged to each importer's process in the ledger) and this process's own.
    assert!(threads <= before_threads + 1 + 64, "{threads} threads");
    assert!(fds <= before_fds + 1 + 5 * 64, "{fds} descriptors");
    // One more newcomer process is admitted the same way, at the cost of a process holding
    // 16, never of the honest one (which holds 1): it keeps its place.
    let mut again =
        Peer::spawn_logged_env(HOSTILE, &["served-idle", &hex, "1"], &fabric.join("again.log"), &env);
    assert_eq!(again.line(), "held 1 refused 0");
    again.send("bye");
    assert!(again.finish());
    assert_eq!(honest.ask("fetch 0 6"), "data served");
    for mut a in attackers {
        a.send("bye");
        assert!(a.finish());
    }
    assert!(honest.finish());
    assert!(exporter.finish());
    let _ = std::fs::remove_dir_all(&fabric);
    let _ = std::fs::remove_file(&log);
}

/// The exporter charges each importer's process, in its peer ledger, for the thread and the
/// descriptors it keeps for each connection: with `cap peer.threads_per_process 4`, one
/// process gets 4 connections to a served export, not 16; another process is still served.
#[test]
fn a_served_export_s_threads_are_charged_to_the_importer_s_process() {
    let name = unique("served-ledger");
    let (fabric, log) = fabric_env(&name);
    let topology = std::env::temp_dir().join(format!("hostile-{name}.topology"));
    std::fs::write(
        &topology,
        format!("{}\ncap peer.threads_per_process 4\n", doca_core::topology::DEFAULT_TOPOLOGY),
    )
    .unwrap();
    let env = [
        ("DOCA_EMU_FABRIC_DIR", fabric.to_str().unwrap()),
        (doca_core::TOPOLOGY_ENV, topology.to_str().unwrap()),
    ];
    let mut exporter = Peer::spawn_logged_env(MEM_PEER, &[], &log, &env);
    let answer = exporter.ask("export_heap 4096 charged");
    let hex = answer.strip_prefix("desc ").expect("a descriptor").to_string();
    let plain = [("DOCA_EMU_FABRIC_DIR", fabric.to_str().unwrap())];
    let mut greedy =
        Peer::spawn_logged_env(HOSTILE, &["served-idle", &hex, "16"], &fabric.join("greedy.log"), &plain);
    assert_eq!(greedy.line(), "held 4 refused 12");
    let mut honest = Peer::spawn_logged_env(MEM_PEER, &[], &fabric.join("honest.log"), &plain);
    assert_eq!(honest.ask(&format!("import {hex}")), "ok");
    assert_eq!(honest.ask("fetch 0 7"), "data charged");
    greedy.send("bye");
    assert!(greedy.finish());
    assert!(honest.finish());
    assert!(exporter.finish());
    let text = log_of(&log);
    assert!(text.contains("peer.threads_per_process"), "the refusal names the cap:\n{text}");
    let _ = std::fs::remove_dir_all(&fabric);
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&topology);
}
