//! `doca_emu` against real processes: a server and two clients, one of them blocked outside
//! progress; plans injected and answered (or left unread); pages of dead processes, of
//! another user, and garbage.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use doca_core::status::{Page, PageExt, PAGE_BYTES, W_PID, W_START};
use doca_link::status::page_pid;
use doca_link::FABRIC_ENV;
use doca_tests::Peer;
use serde_json::Value;

const PEER: &str = env!("CARGO_BIN_EXE_cc_peer");
const EMU: &str = env!("CARGO_BIN_EXE_emu_cli");
const EP_PEER: &str = env!("CARGO_BIN_EXE_ep_peer");
const DMA_PEER: &str = env!("CARGO_BIN_EXE_dma_peer");

/// A fabric directory of its own for one test, removed at the end.
struct Fabric {
    dir: PathBuf,
    logs: usize,
}

impl Fabric {
    fn new(tag: &str) -> Fabric {
        let dir = std::env::temp_dir().join(format!("emu-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir).expect("fabric directory");
        Fabric { dir, logs: 0 }
    }

    fn spawn(&mut self, args: &[&str]) -> Peer {
        self.spawn_program(PEER, args)
    }

    fn spawn_program(&mut self, program: &str, args: &[&str]) -> Peer {
        self.spawn_env(program, args, &[])
    }

    fn spawn_env(&mut self, program: &str, args: &[&str], env: &[(&str, &str)]) -> Peer {
        self.logs += 1;
        let log = std::env::temp_dir().join(format!(
            "{}-{}.log",
            self.dir.file_name().unwrap().to_str().unwrap(),
            self.logs
        ));
        let mut env = env.to_vec();
        env.push((FABRIC_ENV, self.dir.to_str().unwrap()));
        Peer::spawn_logged_env(program, args, &log, &env)
    }

    /// Runs `doca_emu args`: (exit code, stdout, stderr).
    fn emu(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(EMU).args(args).env(FABRIC_ENV, &self.dir).output().expect("doca_emu runs");
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
    }

    fn ls(&self) -> Value {
        let (code, out, err) = self.emu(&["ls", "--json"]);
        assert_eq!(code, 0, "ls --json: {err}");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("ls --json is not JSON ({e}): {out}"))
    }

    /// The log (stderr) of the `n`th peer spawned (from 1).
    fn log(&self, n: usize) -> PathBuf {
        std::env::temp_dir().join(format!("{}-{n}.log", self.dir.file_name().unwrap().to_str().unwrap()))
    }

    fn page(&self, pid: u32) -> PathBuf {
        // The page a process made (`status-<pid>-<nonce>.page`), or the name a test writes a
        // page of its own under (`status-<pid>.page`, which tools read too).
        std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.file_name().and_then(|n| n.to_str()).and_then(page_pid) == Some(pid))
            .unwrap_or_else(|| self.dir.join(format!("status-{pid}.page")))
    }
}

impl Drop for Fabric {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The live process `pid` in an `ls --json` document.
fn process(ls: &Value, pid: u32) -> Option<&Value> {
    ls["processes"].as_array()?.iter().find(|p| p["pid"] == pid)
}

fn pids_in(ls: &Value, list: &str) -> Vec<u64> {
    ls[list].as_array().map_or(Vec::new(), |a| a.iter().filter_map(|p| p["pid"].as_u64()).collect())
}

/// Reads the peer's lines until `want` (bounded by the peer's answer deadline per line).
fn expect(peer: &Peer, want: &str) {
    for _ in 0..100 {
        if peer.line() == want {
            return;
        }
    }
    panic!("no {want:?} among the peer's lines");
}

/// Asks `ls --json` until `ok` holds (bounded: 600 tries 100 ms apart).
fn ls_until(f: &Fabric, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..600 {
        let ls = f.ls();
        if ok(&ls) {
            return ls;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("ls never showed {what}: {}", f.ls());
}

fn only_object(p: &Value) -> &Value {
    let objects = p["objects"].as_array().expect("objects");
    assert_eq!(objects.len(), 1, "{p}");
    &objects[0]
}

/// The one object of process `p` whose role is `role`.
fn only_object_of<'a>(p: &'a Value, role: &str) -> &'a Value {
    let of = objects(p, role);
    assert_eq!(of.len(), 1, "one {role}: {p}");
    of[0]
}

/// The objects of process `p` whose role is `role` (`object`, `connection`, `engine_context`).
fn objects<'a>(p: &'a Value, role: &str) -> Vec<&'a Value> {
    p["objects"].as_array().expect("objects").iter().filter(|o| o["role"] == role).collect()
}

#[test]
fn ls_shows_a_server_and_two_clients_one_blocked_outside_progress_and_inject_reaches_them() {
    let mut f = Fabric::new("ls");
    let name = format!("emu-ls-{}", std::process::id());
    let server = f.spawn(&["server", &name, "--accept-plans"]);
    expect(&server, "running");
    let mut a = f.spawn(&["client", &name, "hold"]);
    expect(&a, "running");
    let mut b = f.spawn(&["client", &name, "hold"]);
    expect(&b, "running");
    let say = |peer: &mut Peer, text: &str| {
        peer.send(&format!("send {text}"));
        expect(peer, &format!("recv {text}"));
    };
    say(&mut a, "one");
    say(&mut a, "two");
    say(&mut b, "three");
    b.send("block");
    expect(&b, "blocked");
    let (sp, ap, bp) = (server.pid(), a.pid(), b.pid());

    // b sits outside progress: its last progress grows old while the others keep going.
    let ls = ls_until(&f, "b without progress for 1.5 s", |ls| {
        process(ls, bp).and_then(|p| p["since_progress_s"].as_f64()).is_some_and(|s| s >= 1.5)
    });
    let (s, pa, pb) =
        (process(&ls, sp).expect("server"), process(&ls, ap).expect("a"), process(&ls, bp).expect("b"));
    for p in [s, pa, pb] {
        assert_eq!(p["name"], "cc_peer", "{p}");
        assert_eq!(p["alive"], true);
        let engines = p["engines"].as_array().expect("engines");
        assert_eq!(engines.len(), 1, "{p}");
        assert_eq!(engines[0]["contexts"], 1, "{p}");
        assert_eq!(engines[0]["inflight_tasks"], 0, "{p}");
        assert!(engines[0]["progress_calls"].as_u64().unwrap() > 0, "{p}");
    }
    let srv = only_object_of(s, "object");
    assert_eq!(srv["kind"], "cc_server");
    assert_eq!(srv["name"], name.as_str());
    assert_eq!(srv["dev"], "0000:03:00.0");
    assert_eq!(srv["rep"], "0000:b1:00.0");
    assert_eq!(srv["connections"], 2, "{srv}");
    assert_eq!(srv["received"]["messages"], 3, "{srv}");
    assert_eq!(srv["received"]["bytes"], 3 + 3 + 5, "{srv}");
    assert_eq!(srv["sent"]["messages"], 3, "the echoes: {srv}");
    assert!(srv["ring"]["slots"].as_u64().unwrap() > 0, "{srv}");
    // Each connection has its own row, with its own counts: a sent 2 messages, b 1.
    let conns = objects(s, "connection");
    assert_eq!(conns.len(), 2, "{s}");
    let conn_of = |pid: u32| {
        *conns
            .iter()
            .find(|c| c["peer_pid"] == pid)
            .unwrap_or_else(|| panic!("no row of pid {pid}'s connection: {s}"))
    };
    for (pid, msgs, bytes) in [(ap, 2, 6), (bp, 1, 5)] {
        let c = conn_of(pid);
        assert_eq!((c["kind"].as_str(), c["name"].as_str()), (Some("cc_conn"), Some(name.as_str())), "{c}");
        assert_eq!(
            (c["dev"].as_str(), c["state"].as_str()),
            (Some("0000:03:00.0"), Some("connected")),
            "{c}"
        );
        assert_eq!(
            (c["received"]["messages"].as_u64(), c["received"]["bytes"].as_u64()),
            (Some(msgs), Some(bytes)),
            "{c}"
        );
        assert_eq!(
            (c["sent"]["messages"].as_u64(), c["sent"]["bytes"].as_u64()),
            (Some(msgs), Some(bytes)),
            "the echoes: {c}"
        );
        assert!(c["ring"]["slots"].as_u64().unwrap() > 0, "{c}");
        assert_eq!(c["engine"], srv["engine"], "{c}");
        assert_eq!(c["owner_row"], srv["row"], "its server's row: {c}");
    }
    let (ida, idb) =
        (conn_of(ap)["connection_id"].as_u64().unwrap(), conn_of(bp)["connection_id"].as_u64().unwrap());
    assert!(ida != 0 && idb != 0 && ida != idb, "{s}");
    let (ca, cb) = (only_object(pa), only_object(pb));
    for (c, msgs, bytes) in [(ca, 2, 6), (cb, 1, 5)] {
        assert_eq!(c["kind"], "cc_client");
        assert_eq!(c["dev"], "0000:b1:00.0");
        assert_eq!(c["rep"], Value::Null);
        assert_eq!(c["connections"], 1, "{c}");
        assert_eq!(
            (c["sent"]["messages"].as_u64(), c["sent"]["bytes"].as_u64()),
            (Some(msgs), Some(bytes)),
            "{c}"
        );
        assert_eq!(c["received"]["messages"], msgs, "{c}");
    }
    let idle = |p: &Value| p["since_progress_s"].as_f64().unwrap();
    assert!(idle(pa) < idle(pb) && idle(s) < idle(pb), "only b stopped progressing: {ls}");
    assert_eq!(pb["engines"][0]["armed"], false, "b is not asleep on its handle: it is elsewhere");

    // The text view flags b; watch without a terminal prints plain frames.
    let (code, text, _) = f.emu(&["ls"]);
    assert_eq!(code, 0);
    assert!(text.contains(&format!("pid {bp} cc_peer  no progress for ")), "{text}");
    let under = format!("  cc_server {name:?} dev 0000:03:00.0 rep 0000:b1:00.0 pe ");
    let at = text.find(&under).unwrap_or_else(|| panic!("no server line: {text}"));
    let next: Vec<&str> = text[at..].lines().skip(1).take(2).collect();
    for (pid, id, way) in [(ap, ida, "2 msg 6B"), (bp, idb, "1 msg 5B")] {
        let line = format!("    conn #{id} peer pid {pid} [connected]: sent {way}, recv {way}, ring ");
        assert!(next.iter().any(|l| l.starts_with(&line)), "{line:?} under the server: {text}");
    }
    assert!(!text.contains(&format!("pid {ap} cc_peer  no progress")), "{text}");
    let (code, frames, err) = f.emu(&["watch", "--count", "2", "--interval", "0.1"]);
    assert_eq!(code, 0, "{err}");
    assert!(frames.contains("--- frame 0\n") && frames.contains("--- frame 1\n"), "{frames}");
    assert_eq!(frames.matches(&format!("cc_server {name:?}")).count(), 2, "{frames}");
    assert!(!frames.contains('\x1b'), "no terminal codes when stdout is not a terminal: {frames:?}");
    // `watch --once`: the table, once, as text: a row per engine and object.
    let (code, table, err) = f.emu(&["watch", "--once"]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(lines[1], doca_emu_tool::tui::COLUMNS, "{table}");
    let row = |pid: u32, object: &str| {
        lines
            .iter()
            .find(|w| w.len() == 12 && w[0] == pid.to_string() && w[2] == object)
            .unwrap_or_else(|| panic!("no {object} row of {pid}: {table}"))
            .clone()
    };
    assert_eq!(row(sp, "cc_server")[3..8], [name.as_str(), "serving", "2", "3/11B", "3/11B"], "{table}");
    assert_eq!(row(ap, "cc_client")[3..8], [name.as_str(), "connected", "1", "2/6B", "2/6B"], "{table}");
    assert_eq!(row(bp, "cc_client")[3..8], [name.as_str(), "connected", "1", "1/5B", "1/5B"], "{table}");
    // The server's connections, each a row under it ("  cc_conn", NAME "pid N").
    let conn_rows: Vec<&Vec<&str>> = lines.iter().filter(|w| w.len() == 13 && w[2] == "cc_conn").collect();
    assert_eq!(conn_rows.len(), 2, "{table}");
    for (pid, id, way) in [(ap, ida, "2/6B"), (bp, idb, "1/5B")] {
        let r = conn_rows.iter().find(|w| w[4] == pid.to_string()).unwrap_or_else(|| panic!("{table}"));
        assert_eq!(
            r[..9],
            [
                sp.to_string().as_str(),
                "cc_peer",
                "cc_conn",
                "pid",
                pid.to_string().as_str(),
                "connected",
                format!("#{id}").as_str(),
                way,
                way
            ],
            "{table}"
        );
    }
    let srv_line = table.lines().position(|l| l.contains(" cc_server ")).unwrap();
    let conn_lines: Vec<usize> =
        table.lines().enumerate().filter(|(_, l)| l.contains("   cc_conn ")).map(|(i, _)| i).collect();
    assert_eq!(conn_lines, [srv_line + 1, srv_line + 2], "indented right under their server: {table}");
    let engine_of_b = table.lines().find(|l| l.starts_with(&format!("{bp} ")) && l.contains(" pe 1 "));
    assert!(engine_of_b.is_some_and(|l| l.contains(" stalled ")), "b stopped progressing: {table}");
    assert!(!table.contains("q quit"), "no keys in a printed frame: {table}");

    // Inject: the server's own handler accepts or refuses; a (no handler of its own) takes it as
    // its fault plan; b does not progress.
    let sps = sp.to_string();
    let (code, out, err) = f.emu(&["inject", &sps, "delay 1ms"]);
    assert_eq!((code, out.trim()), (0, format!("pid {sp}: plan accepted").as_str()), "{err}");
    expect(&server, "plan delay 1ms");
    let (code, out, _) = f.emu(&["inject", &sps, "a bad plan"]);
    assert_eq!((code, out.trim()), (1, format!("pid {sp}: plan refused: bad plan").as_str()));
    // a registered no handler of its own: its fault plan takes the text (a plan that never fires here),
    // and a typo is refused naming the bad part.
    let plan = "task.dma.memcpy=nth(1000000):fail(IO_FAILED)";
    let (code, out, _) = f.emu(&["inject", &ap.to_string(), plan]);
    assert_eq!((code, out.trim()), (0, format!("pid {ap}: plan accepted").as_str()));
    let (code, out, _) = f.emu(&["inject", &ap.to_string(), "task.dma.memcpy=nth(1):fial"]);
    assert_eq!(code, 1);
    assert!(out.contains("plan refused") && out.contains("fial"), "{out}");
    let (code, out, _) = f.emu(&["inject", &bp.to_string(), plan, "--timeout", "0.5"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("plan written, not read yet (no progress for"), "{out}");
    let (code, _, err) = f.emu(&["inject", "cc_peer", "delay 1ms"]);
    assert_eq!(code, 1);
    assert!(err.contains("3 processes are named cc_peer"), "{err}");
    // Once b progresses again it reads the plan and answers in its page.
    b.send("go");
    expect(&b, "unblocked");
    ls_until(&f, "b's answer", |ls| {
        process(ls, bp)
            .is_some_and(|p| p["plan"]["answered"] == p["plan"]["seq"] && p["plan"]["answer"] == "accepted")
    });

    // A killed process leaves its page: stale, not live; `clean` removes it. A process that
    // exits removes its own.
    b.kill();
    let ls = ls_until(&f, "b stale and the server down to one connection", |ls| {
        pids_in(ls, "stale") == [bp as u64]
            && process(ls, sp).is_some_and(|s| only_object_of(s, "object")["connections"] == 1)
    });
    // b's connection row went with it; a's is there with its counts.
    let conns = objects(process(&ls, sp).unwrap(), "connection");
    assert_eq!(conns.len(), 1, "{ls}");
    assert_eq!(
        (conns[0]["peer_pid"].as_u64(), conns[0]["received"]["messages"].as_u64()),
        (Some(ap as u64), Some(2))
    );
    assert!(process(&ls, bp).is_none());
    let (code, out, _) = f.emu(&["clean"]);
    assert_eq!(code, 0);
    assert!(out.contains("1 stale page(s) removed"), "{out}");
    assert!(!f.page(bp).exists());
    a.send("stop");
    assert!(a.finish());
    assert!(!f.page(ap).exists(), "an exiting process removes its page");
    // a disconnected: the server has no connection row left.
    ls_until(&f, "the server without connections", |ls| {
        process(ls, sp)
            .is_some_and(|s| objects(s, "connection").is_empty() && only_object(s)["connections"] == 0)
    });
    assert!(server.finish());
    assert!(!f.page(sp).exists());
}

#[test]
fn pages_that_lie_are_garbage_or_of_another_user_are_never_trusted() {
    let mut f = Fabric::new("bad");
    let name = format!("emu-bad-{}", std::process::id());
    let server = f.spawn(&["server", &name]);
    expect(&server, "running");
    let real = std::fs::read(f.page(server.pid())).expect("the server's page");
    assert_eq!(real.len(), PAGE_BYTES);
    let write = |pid: u32, bytes: &[u8]| {
        let p = f.page(pid);
        std::fs::write(&p, bytes).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        p
    };
    // Garbage of the right size; a short file; the server's page under another pid's name; a
    // symbolic link to the server's page.
    let garbage: Vec<u8> = (0..PAGE_BYTES).map(|i| (i * 7 + 3) as u8).collect();
    write(999_991, &garbage);
    write(999_992, &real[..100]);
    write(999_993, &real);
    std::os::unix::fs::symlink(f.page(server.pid()), f.page(999_994)).unwrap();
    // A page whose pid is alive (this test) but whose start time is not its: a pid reused.
    let fake = Page::new();
    fake.init_header(1);
    let fake: Vec<u8> =
        fake.0.iter().flat_map(|w| w.load(std::sync::atomic::Ordering::Relaxed).to_le_bytes()).collect();
    write(std::process::id(), &fake);
    // Another user's page (only root can make one).
    let root = rustix::process::geteuid().is_root();
    if root {
        let p = write(999_995, &real);
        rustix::fs::chown(&p, Some(rustix::process::Uid::from_raw(4242)), None).unwrap();
    }

    let ls = f.ls();
    let live = pids_in(&ls, "processes");
    assert_eq!(live, [server.pid() as u64], "only the real server is live: {ls}");
    let mut invalid = pids_in(&ls, "invalid");
    invalid.sort();
    assert_eq!(invalid, [999_991, 999_992, 999_993, 999_994], "{ls}");
    assert_eq!(
        pids_in(&ls, "stale"),
        [std::process::id() as u64],
        "a reused pid is not the page's writer: {ls}"
    );
    if root {
        assert_eq!(pids_in(&ls, "foreign"), [999_995], "{ls}");
        assert_eq!(ls["foreign"][0]["uid"], 4242);
        let (code, _, err) = f.emu(&["inject", "999995", "delay 1ms"]);
        assert_eq!(code, 1);
        assert!(err.contains("belongs to uid 4242"), "{err}");
        let mut before = real.clone();
        before.truncate(PAGE_BYTES);
        assert_eq!(std::fs::read(f.page(999_995)).unwrap(), before, "not written");
    }
    let (code, _, err) = f.emu(&["inject", &std::process::id().to_string(), "delay 1ms"]);
    assert_eq!(code, 1);
    assert!(err.contains("is gone (stale page)"), "{err}");
    let (code, text, _) = f.emu(&["ls"]);
    assert_eq!(code, 0);
    assert!(text.contains("invalid: status-999991.page: no page magic"), "{text}");
    assert!(
        text.contains(&format!("invalid: status-999993.page: written by pid {}", server.pid())),
        "{text}"
    );
    // `clean` removes the stale page only.
    let (code, out, _) = f.emu(&["clean"]);
    assert_eq!(code, 0, "{out}");
    assert!(!f.page(std::process::id()).exists());
    assert!(f.page(999_991).exists() && Path::new(&f.page(server.pid())).exists());
    assert!(server.finish());

    // DOCA_EMU_STATUS=off: no page at all.
    let quiet =
        f.spawn_env(PEER, &["server", &format!("{name}-off")], &[(doca_core::status::STATUS_ENV, "off")]);
    expect(&quiet, "running");
    assert!(!f.page(quiet.pid()).exists(), "no page with the status page off");
    assert!(pids_in(&f.ls(), "processes").is_empty());
    assert!(quiet.finish());
}

/// A hostile process of the same user writes 500 bad plans into a server's mailbox, one
/// after the other, each answered (refused, naming the bad part): the server logs the
/// refusals at most once a second, each line counting those held back — not one line per
/// plan. The bound counts lines against the seconds the flood took (the throttle's own
/// rule: one line a second, plus the first), so it holds however slow the machine is.
#[test]
fn bad_plans_written_in_a_loop_are_logged_once_a_second_with_a_count() {
    use doca_emu_tool::inject::{inject, Outcome};
    let mut f = Fabric::new("flip");
    let name = format!("emu-flip-{}", std::process::id());
    let server = f.spawn(&["server", &name]);
    expect(&server, "running");
    let log = f.log(f.logs);
    let dir = std::fs::File::open(&f.dir).unwrap();
    let t0 = std::time::Instant::now();
    for i in 0..500 {
        let plan = format!("task.cc.send=nth({}):fial", i + 1);
        match inject(std::os::fd::AsFd::as_fd(&dir), server.pid(), &plan, Duration::from_secs(60)) {
            Ok(Outcome::Refused(why)) => assert!(why.contains("fial"), "{why}"),
            other => panic!("plan {i}: {other:?}"),
        }
    }
    let took = t0.elapsed();
    assert!(server.finish());
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("not installed")).collect();
    let allowed = took.as_secs() as usize + 2;
    assert!(
        !lines.is_empty() && lines.len() <= allowed,
        "{} lines for 500 refused plans in {took:?} (at most {allowed}):\n{text}",
        lines.len()
    );
    if lines.len() > 1 {
        assert!(
            lines[1..].iter().any(|l| l.contains("more like it")),
            "the count of those held back: {text}"
        );
    }
}

/// Progresses `pe` until `done` (bounded: a minute), sleeping on its notification handle
/// when idle.
fn run(pe: &doca_core::Pe, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
        doca_tests::idle(pe);
    }
}

#[test]
fn consumers_and_producers_show_their_posted_buffers_and_traffic() {
    use doca_buf::Inventory;
    use doca_cc::{Client, Consumer, Producer, Server};
    use doca_core::{open_device_rep_with_pci, open_device_with_pci, CtxState, Pe, RepFilter};
    use doca_mmap::{AccessFlags, Mmap, SharedMem};

    // This process's own page goes to the fabric directory of its environment: a fresh
    // process with one of its own.
    let _dir = Fabric::new("fp");
    doca_tests::in_fresh_process!(&[(FABRIC_ENV, Some(_dir.dir.to_str().unwrap()))]);
    let f = Fabric { dir: std::env::var_os(FABRIC_ENV).unwrap().into(), logs: 0 };
    let name = format!("emu-fp-{}", std::process::id());
    let dpu = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.0").unwrap();
    let pe = Pe::create().unwrap();
    let server = Server::create(&dpu, &rep, &name).unwrap();
    pe.connect_ctx(&server.as_ctx()).unwrap();
    server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    server.event_msg_recv_register(|_, _| {}).unwrap();
    server.event_connection_register(|_, _| {}, |_, _| {}).unwrap();
    server.as_ctx().start().unwrap();
    let client = Client::create(&open_device_with_pci("b1:00.0", None).unwrap(), &name).unwrap();
    pe.connect_ctx(&client.as_ctx()).unwrap();
    client.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    client.event_msg_recv_register(|_, _| {}).unwrap();
    let _ = client.as_ctx().start();
    run(&pe, "the connection", || {
        client.as_ctx().state() == CtxState::Running && server.num_connections() == 1
    });
    let server_conn = server.connections().pop().unwrap();
    let client_conn = client.get_connection().unwrap();

    let map = Mmap::create().unwrap();
    map.set_memrange(SharedMem::alloc(4 * 64).unwrap()).unwrap();
    map.set_permissions(AccessFlags::LOCAL_READ_WRITE | AccessFlags::PCI_READ_WRITE).unwrap();
    map.start().unwrap();
    let consumer = Consumer::create(&server_conn, &map).unwrap();
    pe.connect_ctx(&consumer.as_ctx()).unwrap();
    let got = std::rc::Rc::new(std::cell::Cell::new(0));
    let g = got.clone();
    consumer.task_post_recv_set_conf(move |_, _, _| g.set(g.get() + 1), |_, _, _| {}, 4).unwrap();
    let _ = consumer.as_ctx().start();
    run(&pe, "the consumer", || consumer.as_ctx().state() == CtxState::Running);
    let inv = Inventory::create(8).unwrap();
    inv.start().unwrap();
    for i in 0..4 {
        consumer
            .task_post_recv_alloc_init(&inv.buf_get_at(&map, i * 64, 64).unwrap())
            .unwrap()
            .submit()
            .unwrap();
    }
    let producer = Producer::create(&client_conn).unwrap();
    pe.connect_ctx(&producer.as_ctx()).unwrap();
    producer.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4).unwrap();
    producer.as_ctx().start().unwrap();
    let src = Mmap::create().unwrap();
    src.set_memrange(&b"abcdefghi"[..]).unwrap();
    src.start().unwrap();
    run(&pe, "the consumer known to the producer's side", || {
        producer
            .task_send_alloc_init(&inv.buf_get_data_at(&src, 0, 4).unwrap(), consumer.id())
            .is_ok_and(|t| t.submit().is_ok())
    });
    let second =
        producer.task_send_alloc_init(&inv.buf_get_data_at(&src, 4, 5).unwrap(), consumer.id()).unwrap();
    second.submit().map_err(|r| r.error).unwrap();
    run(&pe, "two messages", || got.get() == 2);

    let ls = f.ls();
    let me = process(&ls, std::process::id()).unwrap_or_else(|| panic!("this process: {ls}"));
    let objects = me["objects"].as_array().unwrap();
    let of =
        |kind: &str| objects.iter().find(|o| o["kind"] == kind).unwrap_or_else(|| panic!("{kind}: {me}"));
    let (c, p) = (of("cc_consumer"), of("cc_producer"));
    assert_eq!(c["posted_buffers"], 2, "4 posted, 2 filled: {c}");
    assert_eq!(
        (c["received"]["messages"].as_u64(), c["received"]["bytes"].as_u64()),
        (Some(2), Some(9)),
        "{c}"
    );
    assert_eq!(c["connection_id"], server_conn.id(), "{c}");
    assert_eq!(c["name"], format!("#{}", consumer.id()));
    assert_eq!((p["sent"]["messages"].as_u64(), p["sent"]["bytes"].as_u64()), (Some(2), Some(9)), "{p}");
    assert_eq!(p["connection_id"], client_conn.id(), "{p}");
    assert_eq!(c["engine"], pe.status_id());
    assert_eq!(me["engines"][0]["contexts"], 4, "server, client, consumer, producer: {me}");
    assert_eq!(of("cc_server")["connections"], 1);
}

#[test]
fn legacy_endpoints_show_their_devices_and_traffic() {
    let mut f = Fabric::new("ep");
    let name = format!("emu-ep-{}", std::process::id());
    let service = f.spawn_program(EP_PEER, &["serve-blocking", &name]);
    expect(&service, "listening");
    let client = f.spawn_program(EP_PEER, &["client", &name, "hello"]);
    expect(&client, "reply ack hello");
    let ls = f.ls();
    let row = |pid: u32| only_object(process(&ls, pid).unwrap_or_else(|| panic!("pid {pid}: {ls}"))).clone();
    let (s, c) = (row(service.pid()), row(client.pid()));
    assert_eq!(
        (s["kind"].as_str(), s["name"].as_str()),
        (Some("comm_channel_ep"), Some(name.as_str())),
        "{s}"
    );
    assert_eq!((s["dev"].as_str(), s["rep"].as_str()), (Some("0000:03:00.0"), Some("0000:3b:00.0")), "{s}");
    assert_eq!(
        (s["received"]["messages"].as_u64(), s["received"]["bytes"].as_u64()),
        (Some(1), Some(5)),
        "{s}"
    );
    assert_eq!((s["sent"]["messages"].as_u64(), s["sent"]["bytes"].as_u64()), (Some(1), Some(9)), "{s}");
    assert_eq!((c["dev"].as_str(), c["rep"].as_str()), (Some("0000:3b:00.0"), None), "{c}");
    assert_eq!((c["sent"]["messages"].as_u64(), c["sent"]["bytes"].as_u64()), (Some(1), Some(5)), "{c}");
    assert_eq!(
        (c["received"]["messages"].as_u64(), c["received"]["bytes"].as_u64()),
        (Some(1), Some(9)),
        "{c}"
    );
    assert!(process(&ls, client.pid()).unwrap()["engines"].as_array().unwrap().is_empty(), "no engine: {ls}");
    let (_, text, _) = f.emu(&["ls"]);
    assert!(text.contains(&format!("pid {} ep_peer\n", client.pid())), "no engine, no stall flag: {text}");
    drop(client);
    drop(service);
}

/// The screens a program drew on a `rows` x `cols` terminal: the text it wrote, placed where
/// its cursor moves (`ESC [ row ; col H`) put it, one screen taken each time it hides the
/// cursor (`ESC [ ? 25 l`, which ends every ratatui draw). Other sequences (colours,
/// modes) are read past. Enough for ratatui's crossterm output, which writes only the cells
/// that changed.
fn screens(raw: &str, rows: usize, cols: usize) -> Vec<Vec<String>> {
    let mut grid = vec![vec![' '; cols]; rows];
    let (mut y, mut x) = (0usize, 0usize);
    let mut out = Vec::new();
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.next_if_eq(&'[').is_none() {
                chars.next();
                continue;
            }
            let mut params = String::new();
            let mut fin = ' ';
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    fin = c;
                    break;
                }
                params.push(c);
            }
            match (fin, params.as_str()) {
                ('H', p) => {
                    let mut it = p.split(';').map(|n| n.parse::<usize>().unwrap_or(1).max(1) - 1);
                    y = it.next().unwrap_or(0);
                    x = it.next().unwrap_or(0);
                }
                ('J', "2") => grid.iter_mut().for_each(|r| r.fill(' ')),
                ('l', "?25") => out.push(grid.iter().map(|r| r.iter().collect::<String>()).collect()),
                _ => {}
            }
        } else if c == '\n' || c == '\r' {
            continue;
        } else {
            if y < rows && x < cols {
                grid[y][x] = c;
            }
            x += 1;
        }
    }
    out
}

/// `watch` on a terminal (a pty from util-linux's `script`, in bsdutils, essential on Debian
/// and Ubuntu) is the live table: it takes the alternate screen, draws the columns and a row
/// per engine and object, and obeys its keys — pause, sort, filter by pid, select a row and
/// inject a plan into its process (the server's own handler takes it and says so), quit.
#[test]
fn watch_on_a_terminal_is_a_live_table_that_pauses_sorts_filters_and_injects() {
    use std::io::Write;
    use std::process::Stdio;
    let mut f = Fabric::new("tty");
    let name = format!("emu-tty-{}", std::process::id());
    let server = f.spawn(&["server", &name, "--accept-plans"]);
    expect(&server, "running");
    let client = f.spawn(&["client", &name, "hold"]);
    expect(&client, "running");
    let sp = server.pid();
    let cmd = format!("stty cols 110 rows 20; {EMU} watch --interval 0.2");
    let mut tty = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env(FABRIC_ENV, &f.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("script(1) runs");
    let mut keys = tty.stdin.take().unwrap();
    // What the terminal shows, read as it comes: the keys wait for the table's first draw
    // (typed earlier, they would sit in the terminal's line buffer before raw mode).
    let shown = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let reader = {
        let shown = shown.clone();
        let mut stdout = tty.stdout.take().unwrap();
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = std::io::Read::read(&mut stdout, &mut chunk) {
                shown.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        })
    };
    for _ in 0..300 {
        if String::from_utf8_lossy(&shown.lock().unwrap()).contains("PROCESS") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut press = |k: &str| {
        std::thread::sleep(Duration::from_millis(400));
        keys.write_all(k.as_bytes()).and_then(|()| keys.flush()).expect("a key to the terminal");
    };
    press("p");
    press("p");
    press("s");
    press(&format!("/{sp}\r"));
    press("i");
    press("delay 1ms\r");
    // The plan went from the table to the server, whose handler took it.
    expect(&server, "plan delay 1ms");
    press("q");
    drop(keys);
    let status = tty.wait().expect("script ends");
    reader.join().unwrap();
    let raw = String::from_utf8_lossy(&shown.lock().unwrap()).into_owned();
    assert!(status.success(), "{raw:?}");
    assert!(
        raw.contains("\x1b[?1049h") && raw.contains("\x1b[?1049l"),
        "alternate screen in and out: {raw:?}"
    );
    assert!(!raw.contains("--- frame"), "{raw:?}");
    let shots = screens(&raw, 20, 110);
    let shown = |what: &str, ok: &dyn Fn(&[String]) -> bool| {
        assert!(
            shots.iter().any(|s| ok(s)),
            "no screen with {what}; the last:\n{}",
            shots.last().map(|s| s.join("\n")).unwrap_or_default()
        );
    };
    let header = |s: &[String]| {
        let words: Vec<&str> = s[1].split_whitespace().collect();
        words == doca_emu_tool::tui::COLUMNS
    };
    shown("the columns", &header);
    let row = |s: &[String], pid: u32, object: &str, state: &str| {
        s.iter().any(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            w.len() == 12 && w[0] == pid.to_string() && w[2] == object && w[4] == state
        })
    };
    let (cp, sps) = (client.pid(), sp.to_string());
    shown("both processes' rows, engines and objects", &|s| {
        let engine = |pid: u32| s.iter().any(|l| l.starts_with(&format!("{pid} ")) && l.contains(" pe 1 "));
        row(s, sp, "cc_server", "serving") && row(s, cp, "cc_client", "connected") && engine(sp) && engine(cp)
    });
    shown("the server's connection under it", &|s| {
        let at = s.iter().position(|l| l.starts_with(&format!("{sp} ")) && l.contains(" cc_server "));
        let next = at.and_then(|i| s.get(i + 1)).map_or(vec![], |l| l.split_whitespace().collect::<Vec<_>>());
        next.len() == 13 && next[2..7] == ["cc_conn", "pid", cp.to_string().as_str(), "connected", "#1"]
    });
    shown("PAUSED", &|s| s[0].contains("PAUSED"));
    shown("sorted by name", &|s| s[0].contains("sort name") && !s[0].contains("PAUSED"));
    shown("the filter", &|s| {
        s[0].contains(&format!("1 process(es) of 2 · sort name · filter \"{sps}\""))
            && row(s, sp, "cc_server", "serving")
            && !s.iter().any(|l| l.contains("cc_client"))
    });
    shown("the plan typed", &|s| {
        s.iter()
            .any(|l| l.contains(&format!("plan for pid {sp} (Enter to inject, Esc to cancel): delay 1ms")))
    });
    shown("the answer", &|s| s.iter().any(|l| l.trim_end() == format!("pid {sp}: plan accepted")));
    drop(server);
    drop(client);
}

/// A Rust process that uses DMA alone (no comm channel, no export) is seen from its first
/// engine or device on, and takes a plan injected into its page at its next progress.
#[test]
fn a_dma_only_rust_process_is_listed_and_takes_an_injected_plan() {
    let mut f = Fabric::new("dma-only");
    let mut peer = f.spawn_program(DMA_PEER, &[]);
    expect(&peer, "running");
    let pid = peer.pid();
    let ls = ls_until(&f, "the DMA-only process", |ls| process(ls, pid).is_some());
    let engines = process(&ls, pid).unwrap()["engines"].as_array().cloned().unwrap_or_default();
    assert_eq!(engines.len(), 1, "one engine: {ls}");
    assert_eq!(engines[0]["contexts"], 1, "its DMA context: {ls}");
    let (code, table, _) = f.emu(&["watch", "--once"]);
    assert_eq!(code, 0);
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with(&format!("{pid} "))).collect();
    assert_eq!(rows.len(), 2, "its engine's row and its DMA context's: {table}");
    assert!(
        rows[0].contains(" dma_peer ") && rows[0].contains(" pe 1 ") && rows[0].contains(" 1 ctx "),
        "{table}"
    );
    let words: Vec<&str> = rows[1].split_whitespace().collect();
    assert_eq!(words[2..10], ["dma", "0000:03:00.0", "running", "-", "-", "-", "0", "0/0B"], "{table}");

    // Its row counts the copies and says its state.
    let dma_row = |ls: &Value| process(ls, pid).map(|p| only_object_of(p, "engine_context").clone());
    let row = dma_row(&f.ls()).expect("the DMA context's row");
    assert_eq!((row["kind"].as_str(), row["dev"].as_str()), (Some("dma"), Some("0000:03:00.0")), "{row}");
    assert_eq!((row["state"].as_str(), row["engine"].as_u64()), (Some("running"), Some(1)), "{row}");
    peer.send("copy 10");
    expect(&peer, "copied 10");
    let row = dma_row(&f.ls()).unwrap();
    assert_eq!(row["tasks"], serde_json::json!({"queued": 0, "done": 10, "bytes": 10 * 4096}), "{row}");
    let (_, text, _) = f.emu(&["ls"]);
    assert!(
        text.contains("  dma dev 0000:03:00.0 pe 1 [running]: 0 task(s) queued, 10 done (40.0K)\n"),
        "{text}"
    );
    peer.send("stop");
    expect(&peer, "idle");
    let row = dma_row(&f.ls()).unwrap();
    assert_eq!((row["state"].as_str(), row["tasks"]["done"].as_u64()), (Some("idle"), Some(10)), "{row}");
    // Its fault plan takes the text (a plan that never fires here); a typo is refused.
    let plan = "task.dma.memcpy=nth(1000000):fail(IO_FAILED)";
    let (code, out, err) = f.emu(&["inject", &pid.to_string(), plan]);
    assert_eq!((code, out.trim()), (0, format!("pid {pid}: plan accepted").as_str()), "{err}");
    let (code, out, _) = f.emu(&["inject", &pid.to_string(), "task.dma.memcpy=nth(1):fial"]);
    assert_eq!(code, 1);
    assert!(out.contains("plan refused") && out.contains("fial"), "{out}");
    assert!(peer.finish());
    assert!(process(&f.ls(), pid).is_none(), "gone with its process");
}

/// A page written for a live process that is no DOCA process (a `sleep` child), with that
/// process's true pid and start time and a server claiming 99 connections: every check of
/// the page's words passes, but the process does not map the file. `ls` lists it as forged,
/// and `inject` refuses it without writing a byte.
#[test]
fn a_forged_page_for_a_live_process_is_listed_as_forged_and_never_injected_into() {
    let f = Fabric::new("forged");
    let mut sleeper = Command::new("sleep").arg("600").spawn().expect("sleep runs");
    let pid = sleeper.id();
    let start = doca_core::status::process_start_time(pid).expect("the sleep's start time");
    let fake = Page::new();
    fake.init_header(start);
    fake.0[W_PID].store(pid as u64, std::sync::atomic::Ordering::Relaxed);
    fake.0[W_START].store(start, std::sync::atomic::Ordering::Relaxed);
    let bytes: Vec<u8> =
        fake.0.iter().flat_map(|w| w.load(std::sync::atomic::Ordering::Relaxed).to_le_bytes()).collect();
    let page = f.page(pid);
    std::fs::write(&page, &bytes).unwrap();
    std::fs::set_permissions(&page, std::fs::Permissions::from_mode(0o600)).unwrap();

    let ls = f.ls();
    assert!(process(&ls, pid).is_none(), "a forgery is no process: {ls}");
    assert_eq!(pids_in(&ls, "forged"), [pid as u64], "{ls}");
    let (code, text, _) = f.emu(&["ls"]);
    assert_eq!(code, 0);
    let name = page.file_name().unwrap().to_str().unwrap();
    assert!(text.contains(&format!("forged: {name} (claims to be pid {pid}")), "{text}");
    let (code, out, err) = f.emu(&["inject", &pid.to_string(), "delay 1ms", "--timeout", "0.2"]);
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("is forged, not injected into"), "{err}");
    assert_eq!(std::fs::read(&page).unwrap(), bytes, "not written");
    let _ = sleeper.kill();
    let _ = sleeper.wait();
}

/// Two containers on one machine, as PID namespaces sharing the fabric directory: two
/// servers that are both pid 1 in their own namespaces each keep their own page (neither
/// takes the other's file); `ls` here lists both alive under the pids they have here; `ls`
/// run in a third namespace, which sees neither, lists both as alive elsewhere, not stale.
#[test]
fn processes_of_two_pid_namespaces_keep_their_pages_and_are_seen_from_each() {
    if !doca_tests::pid_namespaces("listing processes of other PID namespaces") {
        return;
    }
    let mut f = Fabric::new("pidns");
    let wrap = ["--pid", "--fork", "--mount-proc", "--kill-child", PEER];
    let servers: Vec<Peer> = ["a", "b"]
        .iter()
        .map(|tag| {
            let name = format!("pidns-{tag}-{}", std::process::id());
            let s = f.spawn_program("unshare", &[&wrap[..], &["server", &name]].concat());
            expect(&s, "running");
            s
        })
        .collect();
    let pids: Vec<u32> = servers.iter().map(|s| s.wrapped_pid()).collect();
    let files: Vec<String> = std::fs::read_dir(&f.dir)
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| page_pid(n) == Some(1))
        .collect();
    assert_eq!(files.len(), 2, "one page each, though both are pid 1: {files:?}");
    let ls = f.ls();
    for pid in &pids {
        assert!(process(&ls, *pid).is_some(), "pid {pid} is listed alive under its pid here: {ls}");
    }
    let out = Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", EMU, "ls", "--json"])
        .env(FABRIC_ENV, &f.dir)
        .output()
        .expect("doca_emu in a PID namespace of its own");
    let seen: Value = serde_json::from_slice(&out.stdout).expect("ls --json");
    assert_eq!(pids_in(&seen, "elsewhere"), [1, 1], "both alive in another namespace: {seen}");
    assert!(pids_in(&seen, "stale").is_empty(), "{seen}");
    drop(servers);
}

/// The frame the book shows (book/src/doca-emu.md, the block after `<!-- watch-frame -->`) is
/// what the code draws for the processes it describes: a `cc_chatter` pair, the client with a
/// delay plan holding six sends, and a DMA-only Rust process that stopped progressing.
#[test]
fn the_books_watch_frame_is_what_the_table_draws() {
    use doca_core::status::{EngineView, EntryView, Snapshot};
    use doca_emu_tool::tui::{frame_text, full_height, process, App, WIDTH};
    const S: u64 = 1_000_000_000;
    let now = 1000 * S;
    let snap = |pid: u32, comm: &str, engines: Vec<EngineView>, entries: Vec<EntryView>| Snapshot {
        pid,
        uid: 1000,
        start_time: 1,
        created_ns: 1,
        comm: comm.into(),
        last_progress_ns: engines.iter().map(|e| e.last_progress_ns).max().unwrap_or(0),
        unshown: (0, 0),
        unshown_conns: 0,
        engines,
        entries,
        plan_seq: 0,
        answer: (0, 0, String::new()),
    };
    let pe = |ctxs: u64, armed: bool, inflight: u64, ago_ms: u64| EngineView {
        id: 1,
        ctxs,
        armed,
        inflight,
        progress_calls: 1000,
        last_progress_ns: now - ago_ms * S / 1000,
    };
    let obj = |kind: &str, sent: (u64, u64), received: (u64, u64), ring: (u64, u64)| EntryView {
        gen: 2,
        kind: kind.into(),
        dev: None,
        rep: None,
        engine: 1,
        name: "chatter".into(),
        connections: 1,
        posted: 0,
        ring,
        sent,
        received,
        conn_id: 0,
        ctx_state: Some("running"),
        role: doca_core::status::ROLE_OBJECT,
        slot: 1,
        parent: 0,
        peer_pid: 0,
        tasks: (0, 0, 0),
    };
    let conn = EntryView {
        role: doca_core::status::ROLE_CONNECTION,
        slot: 2,
        parent: 1,
        kind: "cc_conn".into(),
        conn_id: 1,
        peer_pid: 4250,
        connections: 0,
        ctx_state: Some("connected"),
        ..obj("", (1183, 603_211), (1183, 603_211), (3, 64))
    };
    let dma = EntryView {
        role: doca_core::status::ROLE_ENGINE_CTX,
        kind: "dma".into(),
        name: String::new(),
        dev: "03:00.0".parse().ok(),
        connections: 0,
        tasks: (1, 1532, 1532 << 20),
        ..obj("", (0, 0), (0, 0), (0, 0))
    };
    let mut app = App::new("/run/user/1000/doca-emu");
    app.refresh(
        vec![
            process(
                &snap(
                    4242,
                    "cc_chatter",
                    vec![pe(1, true, 0, 12)],
                    vec![obj("cc_server", (1183, 603_211), (1183, 603_211), (3, 64)), conn],
                ),
                now,
                1.0,
            ),
            process(
                &snap(
                    4250,
                    "cc_chatter",
                    vec![pe(1, false, 6, 3)],
                    vec![obj("cc_client", (1183, 603_211), (1189, 606_240), (9, 64))],
                ),
                now,
                1.0,
            ),
            process(&snap(4261, "my_dma", vec![pe(1, false, 1, 12_400)], vec![dma]), now, 1.0),
        ],
        "not live: 2 stale page(s) (`doca_emu ls` says which)".into(),
    );
    let drawn = frame_text(&app, WIDTH, full_height(&app));
    let book =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../book/src/doca-emu.md")).unwrap();
    let block = book
        .split("<!-- watch-frame -->\n```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```\n").next())
        .unwrap_or_else(|| panic!("no <!-- watch-frame --> text block in the book"));
    assert_eq!(block, drawn, "the book's frame differs from what the code draws; the code draws:\n{drawn}");
}
