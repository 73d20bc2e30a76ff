//! `doca_bench`: measures the emulator, each figure beside a baseline measured in the same
//! run (these machines are shared and noisy: ratios are stable, absolute times are not).
//!
//! Two processes, pinned to different CPUs where the machine has them: this one measures,
//! a copy of itself (`--role …`) is the peer. Latencies are one-way (half a round trip),
//! reported as p50 and p99; rates are the median of several repetitions.

use std::cell::Cell;
use std::collections::VecDeque;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Command, ExitCode, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use clap::Parser;
use doca_core::loopback::{EchoTask, Loopback};
use doca_core::{Pe, Started};
use doca_link::notify::EventFd;
use doca_samples::bench::{self, ns, one_way, pin, run_until, CcSide, Est, FpSide, FpUse};
use doca_samples::bench_link::{self, LinkNet};

/// Measure the emulator against same-run baselines.
#[derive(Parser, Debug)]
#[command(name = "doca_bench", version)]
struct Args {
    /// Short run for CI: fewer iterations and smaller sizes (figures are rough).
    #[arg(long)]
    smoke: bool,
    /// Only these sections (engine, dma, ec, aes_gcm, compress, control, fast, link, rdma,
    /// or a part: fast-latency, fast-bandwidth);
    /// the baselines always run.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
    /// Compare with another build's `doca_bench`: both run alternately `--runs` times with
    /// the same `--smoke`/`--only`; per row each build's median, its spread and the ratio.
    #[arg(long, value_name = "OTHER_DOCA_BENCH")]
    against: Option<std::path::PathBuf>,
    /// Runs of each build with `--against`.
    #[arg(long, default_value = "3", value_parser = clap::value_parser!(u32).range(1..=50))]
    runs: u32,
    /// Internal: run as the peer process (or `cycle dma|dma4k|loopback|control|fast|empty|idle N`:
    /// only N cycles of one kind, a driver for profilers such as callgrind).
    #[arg(long, num_args = 1.., hide = true)]
    role: Vec<String>,
}

struct Row {
    section: &'static str,
    name: String,
    unit: &'static str,
    value: Est,
    p99: Option<f64>,
    baseline: String,
    base: Est,
    /// Whether smaller is better (times) or larger (rates).
    lower_is_better: bool,
}

impl Row {
    fn ratio(&self) -> f64 {
        if self.lower_is_better {
            self.value.v / self.base.v
        } else {
            self.base.v / self.value.v
        }
    }

    /// Whether the value's or the baseline's spread is beyond ±20 %: the ratio tells nothing.
    fn noisy(&self) -> bool {
        self.value.noisy() || self.base.noisy()
    }
}

struct Cfg {
    reps: usize,
    iters: u64,
    lat_n: u64,
    rate_n: u64,
    big: usize,
}

/// ns per iteration of `f(iters)`: the median of `reps` repetitions and their spread.
fn measure(reps: usize, iters: u64, mut f: impl FnMut(u64)) -> Est {
    f(iters / 10 + 1);
    let s: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f(iters);
            ns(t) / iters as f64
        })
        .collect();
    Est::of(&s)
}

/// As [`measure`] for two loops at once, their repetitions interleaved (a, b, a, b, …): a
/// shared machine's slow and fast phases then weigh on both alike. (ns per iteration of each.)
fn measure_pair(reps: usize, iters: u64, mut a: impl FnMut(u64), mut b: impl FnMut(u64)) -> (Est, Est) {
    a(iters / 10 + 1);
    b(iters / 10 + 1);
    let (mut sa, mut sb) = (Vec::with_capacity(reps), Vec::with_capacity(reps));
    for _ in 0..reps {
        let t = Instant::now();
        a(iters);
        sa.push(ns(t) / iters as f64);
        let t = Instant::now();
        b(iters);
        sb.push(ns(t) / iters as f64);
    }
    (Est::of(&sa), Est::of(&sb))
}

/// The peer process: `doca_bench --role <what> …`.
struct PeerProc {
    child: Child,
    out: std::io::Lines<BufReader<std::process::ChildStdout>>,
}

impl PeerProc {
    fn spawn(role: &[&str]) -> PeerProc {
        let exe = std::env::current_exe().expect("this program");
        PeerProc::start(Command::new(exe), role)
    }

    /// A peer on side `side` (0 host, 1 DPU) of the link rows' network, with `env`.
    fn spawn_on(net: &LinkNet, side: usize, role: &[&str], env: &[(&str, &str)]) -> PeerProc {
        let exe = std::env::current_exe().expect("this program");
        let mut cmd = net.command(side, &exe);
        for (k, v) in env {
            cmd.env(k, v);
        }
        PeerProc::start(cmd, role)
    }

    fn start(mut cmd: Command, role: &[&str]) -> PeerProc {
        let mut child = cmd
            .arg("--role")
            .args(role)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the peer");
        let out = BufReader::new(child.stdout.take().expect("piped")).lines();
        PeerProc { child, out }
    }

    /// [`PeerProc::spawn`] with environment variables set for the peer alone.
    fn spawn_env(role: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> PeerProc {
        let exe = std::env::current_exe().expect("this program");
        let mut child = Command::new(exe)
            .arg("--role")
            .args(role)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start the peer");
        let out = BufReader::new(child.stdout.take().expect("piped")).lines();
        PeerProc { child, out }
    }

    fn line(&mut self) -> String {
        self.out.next().and_then(Result::ok).unwrap_or_default()
    }

    fn send(&mut self, line: &str) {
        if let Some(stdin) = self.child.stdin.as_mut() {
            let _ = writeln!(stdin, "{line}").and_then(|()| stdin.flush());
        }
    }

    fn finish(mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A peer process and the eventfd pair this process exchanged with it over a Unix socket
/// (the peer connects to the socket path its role is given, sends its eventfd, takes ours).
struct Belled {
    peer: PeerProc,
    sock: OwnedFd,
    /// The eventfd this side waits on (the peer rings it).
    mine: EventFd,
    /// The peer's eventfd (this side rings it).
    theirs: EventFd,
    /// The socket's folder (removed by the caller when done).
    dir: std::path::PathBuf,
}

impl Belled {
    /// Spawns the peer role `role(socket path)` and exchanges the eventfds with it.
    fn spawn(tag: &str, role: impl FnOnce(&str) -> Vec<String>) -> Belled {
        let dir = std::env::temp_dir().join(format!("doca-bench-{tag}-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("bells.sock");
        let listener = doca_link::Listener::bind(&path).expect("bind");
        let path = path.to_str().expect("a UTF-8 path").to_string();
        let role = role(&path);
        let peer = PeerProc::spawn(&role.iter().map(String::as_str).collect::<Vec<_>>());
        let deadline = Instant::now() + bench::GIVE_UP;
        let sock = loop {
            if let Ok(Some(s)) = listener.accept() {
                break s;
            }
            assert!(Instant::now() < deadline, "the peer never connected");
            std::thread::sleep(Duration::from_micros(100));
        };
        let mine = EventFd::new().expect("eventfd");
        let theirs = bench::recv_doorbell(sock.as_fd()).expect("the peer sent no doorbell");
        doca_link::send(sock.as_fd(), b"bells", &[mine.as_fd()]).expect("send");
        Belled { peer, sock, mine, theirs, dir }
    }
}

/// Runs a peer role; returns when the parent closes stdin./// Runs a peer role; returns when the parent closes stdin.
fn peer(role: &[String]) -> ExitCode {
    if let Some(r) = role.first().and_then(|r| r.strip_prefix("se-link-")) {
        return se_link_peer(r, role.get(1).and_then(|n| n.parse().ok()).unwrap_or(0));
    }
    // The link rows' sides are not pinned: each has library threads (the link's stand-ins)
    // that must run beside its engine.
    if std::env::var_os(doca_link::remote::LISTEN_ENV).is_none()
        && std::env::var_os(doca_link::remote::CONNECT_ENV).is_none()
        && role.first().is_none_or(|r| r != "tcp-echo")
    {
        pin(1);
    }
    if role.first().is_some_and(|r| r == "rdma") {
        // The peer of the RDMA rows: echoes each message, or only takes them ("sink"). Its
        // first input line is the measuring side's connect line; then stdin's end stops it.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let mut tx = Some(tx);
        let line = || {
            let mut first = String::new();
            let _ = std::io::stdin().read_line(&mut first);
            let tx = tx.take()?;
            std::thread::spawn(move || {
                for _ in std::io::stdin().lock().lines() {}
                let _ = tx.send(());
            });
            Some(first)
        };
        let done = || !matches!(rx.try_recv(), Err(std::sync::mpsc::TryRecvError::Empty));
        let echo = role.get(1).is_some_and(|m| m == "echo");
        let ok = doca_samples::bench_rdma::serve(echo, done, line);
        return if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE };
    }
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        for _ in std::io::stdin().lock().lines() {}
        let _ = tx.send(());
    });
    let done = || !matches!(rx.try_recv(), Err(std::sync::mpsc::TryRecvError::Empty));
    let arg = |i: usize| role.get(i).map(String::as_str).unwrap_or("");
    match arg(0) {
        "raw" => {
            let num = |i: usize| arg(i).parse::<u64>().unwrap_or(0);
            if bench::raw_peer(num(1) as u32, num(2) as i32, num(3) as usize, num(4)).is_err() {
                return ExitCode::FAILURE;
            }
        }
        "sock" => {
            let Some((sock, mine, their_bell)) = bench::bells_to(arg(1)) else { return ExitCode::FAILURE };
            let mut buf = [0u8; 64];
            let _ = rustix::io::ioctl_fionbio(&sock, false);
            let n: u64 = arg(2).parse().unwrap_or(0);
            for _ in 0..n {
                let Ok(k) = rustix::net::recv(&sock, &mut buf, rustix::net::RecvFlags::empty()) else {
                    break;
                };
                if k.0 == 0
                    || rustix::net::send(&sock, &buf[..k.0], rustix::net::SendFlags::NOSIGNAL).is_err()
                {
                    break;
                }
            }
            bench::eventfd_pingpong(&mine, &their_bell, n, false);
        }
        "tcp-echo" => {
            // Served on a thread; the process ends when the parent closes stdin.
            let addr = arg(1).to_string();
            std::thread::spawn(move || {
                if let Err(e) = bench_link::tcp_echo(&addr) {
                    eprintln!("doca_bench tcp-echo {addr}: {e}");
                    std::process::exit(1);
                }
            });
            while !done() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        "link-measure" => {
            // The host side of the link rows: one measurement, printed on one line.
            let num = |i: usize| arg(i).parse::<u64>().unwrap_or(0);
            let addr = || arg(2).parse::<std::net::SocketAddr>().ok();
            let out = match arg(1) {
                "tcp-lat" => addr()
                    .and_then(|a| bench_link::tcp_latency(a, num(3)).ok())
                    .map(|(a, b)| format!("{a} {b}")),
                "cc-lat" => bench_link::cc_latency(arg(2), num(3)).map(|(a, b)| format!("{a} {b}")),
                "tcp-bw" => addr()
                    .and_then(|a| bench_link::tcp_bandwidth(a, num(3) as usize, num(4)).ok())
                    .map(|g| g.to_string()),
                "fp-bw" => bench_link::fp_bandwidth(arg(2), num(3) as usize, num(4)).map(|g| g.to_string()),
                _ => None,
            };
            match out {
                Some(line) => println!("{line}"),
                None => return ExitCode::FAILURE,
            }
        }
        "cc-echo-bell" => {
            // The asleep row's peer: an echo server and an eventfd pair, asleep in one poll.
            let Ok(side) = CcSide::server(arg(1), true, 0, 1024) else { return ExitCode::FAILURE };
            let Some((_sock, mine, theirs)) = bench::bells_to(arg(2)) else { return ExitCode::FAILURE };
            println!("ready");
            bench::serve_beside_bell(&side.pe, &mine, &theirs, done);
        }
        "cc-echo" | "cc-sink" => {
            let sink: u64 = arg(3).parse().unwrap_or(0);
            let side = CcSide::server(arg(1), arg(0) == "cc-echo", sink, 1024).unwrap();
            println!("ready");
            side.serve(arg(2) == "sleep", done);
        }
        #[cfg(feature = "iceoryx2")]
        "iox" => {
            if let Err(e) = doca_samples::iox::pong(arg(1), arg(2).parse().unwrap_or(64)) {
                eprintln!("iceoryx2 peer: {e}");
                return ExitCode::FAILURE;
            }
        }
        "capi-echo" => {
            // The C ABI control-path row's echo servers, one thread: a C server (see
            // `bench_capi`) named `<name>-c` and a Rust one named `<name>-rust`, each pass
            // progressing both (`beside`: only the Rust one when a second argument says so).
            let Ok(name) = std::ffi::CString::new(format!("{}-c", arg(1))) else { return ExitCode::FAILURE };
            let Ok(rust) = CcSide::server(&format!("{}-rust", arg(1)), true, 0, 1024) else {
                return ExitCode::FAILURE;
            };
            if let Err(e) = doca_samples::bench_capi::comch_echo_server(&name, done, || rust.pe.progress()) {
                eprintln!("doca_bench C ABI echo server: {e}");
                return ExitCode::FAILURE;
            }
        }
        "fp" => {
            // With "control", the server also echoes control-path messages and its engine is
            // progressed at every pass (the interleaved comparison of the two paths). With
            // "sleep", an idle pass sleeps on both engines' notification handles instead of
            // spinning (across the link: see `link_rows`).
            let control = arg(6) == "control";
            let sleep = arg(6) == "sleep";
            let side = CcSide::server(arg(1), control, 0, 64).unwrap();
            println!("ready");
            let conn = side.wait_connection().unwrap();
            let size: usize = arg(2).parse().unwrap();
            let slots: usize = arg(3).parse().unwrap();
            let echo = arg(4) == "echo";
            let how = if arg(5) == "recycled" { FpUse::Recycled } else { FpUse::PerMessage };
            let fp = FpSide::new(&conn, size, slots, &side.pe, how).unwrap();
            if !run_until(&[&side.pe, &fp.pe], false, || !side.remote.borrow().is_empty()) {
                return ExitCode::FAILURE;
            }
            let to = side.remote.borrow()[0];
            let mut answered = 0u64;
            let deadline = Instant::now() + bench::GIVE_UP * 10;
            // The harness looks at its stop conditions every 1024 passes: the loop is the
            // library's (progress and the echo), not the clock's or stdin's. The connection's
            // engine has nothing to do once the fast path runs (control packets only): it is
            // progressed every 64 passes, the fast path's at every pass — as on the measuring
            // side, which waits on its fast-path engine alone. A filled buffer is answered
            // before the other engine's pass, as the control path's echo answers inside its
            // receive callback: a reply never waits for a pass of the engine it does not use.
            let mut pass = 0u32;
            while pass % 1024 != 0 || (!done() && Instant::now() < deadline) {
                pass = pass.wrapping_add(1);
                let mut any = fp.pe.progress();
                if echo {
                    let (n, bytes) = fp.filled.get();
                    while answered < n {
                        let len = (bytes / n.max(1)) as usize;
                        if !fp.send(to, len.max(1)) {
                            break;
                        }
                        answered += 1;
                        any = true;
                    }
                }
                if control || sleep || pass % 64 == 0 {
                    any |= side.pe.progress();
                }
                if !any {
                    if sleep {
                        let _ = Pe::wait_any(&[&fp.pe, &side.pe], Some(Duration::from_millis(100)));
                    } else {
                        std::hint::spin_loop();
                    }
                }
            }
            bench::keep(&fp.maps());
        }
        "cycle" => {
            // A profiling driver (callgrind): only `n` task cycles of one kind after a warm-up,
            // as the "dma small memcpy task cycle" row and its loopback baseline run them.
            let n: u64 = arg(2).parse().unwrap_or(0);
            match arg(1) {
                "dma" => {
                    let (mut f, failed) = dma_cycle_loop();
                    f(n / 10 + 1);
                    f(n);
                    if failed.get() > 0 {
                        return ExitCode::FAILURE;
                    }
                }
                "dma4k" => {
                    // The "dma 4 KiB tasks, D in flight" row's loop (`cycle dma4k N D`, D 1 by
                    // default): N tasks completed, kept tasks resubmitted.
                    let depth: usize = arg(3).parse().unwrap_or(1).max(1);
                    let rig = doca_samples::bench::dma::Rig::new("b1:00.0", 64, true).expect("dma context");
                    let src = rig.local_map_paged(4096 * depth, 1).expect("map");
                    let dst = rig.local_map_paged(4096 * depth, 0).expect("map");
                    rig.tasks(&src, &dst, depth, 4096).expect("dma tasks");
                    if !(rig.cycle(n / 10 + 1, depth) && rig.cycle(n, depth)) {
                        return ExitCode::FAILURE;
                    }
                    rig.clear();
                }
                "capi-dma" => {
                    // The "C ABI: dma small memcpy task cycle" row's loop.
                    let Ok(mut f) = doca_samples::bench_capi::dma_cycle_loop() else {
                        return ExitCode::FAILURE;
                    };
                    f(n / 10 + 1);
                    f(n);
                }
                "capi-control" => {
                    // The "C ABI: one-way 64 B" row's round trips, `n` of them, the C echo
                    // server in a peer process (`valgrind --trace-children=yes` follows it).
                    let name = format!("bench-cycle-capi-{}", std::process::id());
                    let mut p = PeerProc::spawn(&["capi-echo", &name]);
                    let Ok(cname) = std::ffi::CString::new(format!("{name}-c")) else {
                        return ExitCode::FAILURE;
                    };
                    let client = (p.line() == "ready")
                        .then(|| doca_samples::bench_capi::comch_client(&cname, bench::GIVE_UP * 10).ok())
                        .flatten();
                    let Some(mut round_trip) = client else { return ExitCode::FAILURE };
                    let ok = (0..n / 10 + 1 + n).all(|_| round_trip(&[5u8; 64]));
                    p.finish();
                    if !ok {
                        return ExitCode::FAILURE;
                    }
                }
                "loopback" => {
                    let mut f = loopback_loop();
                    f(n / 10 + 1);
                    f(n);
                }
                "empty" => {
                    // `n` progress calls of an engine with one idle context (the "empty
                    // progress, 1 idle ctx" row).
                    let Ok(pe) = Pe::create() else { return ExitCode::FAILURE };
                    let lb = Loopback::create(Started::Running);
                    let ready = pe.connect_ctx(&lb.as_ctx()).is_ok()
                        && lb.set_conf(|_, _, _| {}, |_, _, _| {}, 1).is_ok()
                        && lb.as_ctx().start().is_ok();
                    if !ready {
                        return ExitCode::FAILURE;
                    }
                    while pe.progress() {}
                    for _ in 0..n / 10 + 1 + n {
                        black_box(pe.progress());
                    }
                }
                "control" => {
                    // Both ends of the control path in this one process (a server echoing, a
                    // client), one thread: `n` 64-byte round trips, each the client's send,
                    // the server's receive and echo, the client's receive.
                    let Some((server, client)) = cycle_pair("bench-cycle", true) else {
                        return ExitCode::FAILURE;
                    };
                    let msg = [5u8; 64];
                    for _ in 0..n / 10 + 1 + n {
                        let before = client.received.get();
                        if !client.send(&msg)
                            || !run_until(&[&client.pe, &server.pe], false, || client.received.get() > before)
                        {
                            return ExitCode::FAILURE;
                        }
                    }
                    eprintln!("{} round trips", client.received.get());
                }
                "rate" => {
                    // The pipelined rate's messages with both ends in this one process and
                    // thread: the client sends 64-byte messages until one is refused, then
                    // both engines make a pass; `n` messages received by the server (a sink).
                    let Some((server, client)) = cycle_pair("bench-cycle-rate", false) else {
                        return ExitCode::FAILURE;
                    };
                    let msg = [3u8; 64];
                    for goal in [n / 10 + 1, n / 10 + 1 + n] {
                        let deadline = Instant::now() + bench::GIVE_UP;
                        while server.received.get() < goal && Instant::now() < deadline {
                            let mut sent = server.received.get();
                            while sent < goal && client.send(&msg) {
                                sent += 1;
                            }
                            client.pe.progress();
                            server.pe.progress();
                        }
                    }
                    eprintln!("{} messages", server.received.get());
                }
                "idle" => {
                    // `n` progress calls of a connected server's engine with nothing arriving
                    // (after one round trip): the pass a busy receiver spins on; a message
                    // that lands waits half of one on average before it is seen.
                    let Some((server, client)) = cycle_pair("bench-cycle-idle", true) else {
                        return ExitCode::FAILURE;
                    };
                    if !client.send(&[5u8; 64])
                        || !run_until(&[&client.pe, &server.pe], false, || client.received.get() > 0)
                    {
                        return ExitCode::FAILURE;
                    }
                    for _ in 0..n / 10 + 1 + n {
                        black_box(server.pe.progress());
                    }
                }
                "fast" => {
                    // The fast path's 64-byte echo (tasks reused) with both ends in this one
                    // process and thread: `n` round trips, each the client's producer send
                    // into the server's consumer, the server's send back, the client's
                    // consumer filled.
                    let name = format!("bench-cycle-fp-{}", std::process::id());
                    let Ok(server) = CcSide::server(&name, false, 0, 64) else { return ExitCode::FAILURE };
                    let Ok(client) = CcSide::client_beside(&name, 64, 1024, &[&server.pe]) else {
                        return ExitCode::FAILURE;
                    };
                    let Some(conn) = server.wait_connection() else { return ExitCode::FAILURE };
                    let Some(cconn) = client.conn.borrow().clone() else { return ExitCode::FAILURE };
                    let Ok(sfp) =
                        FpSide::new_beside(&conn, (64, 8), &server.pe, FpUse::Recycled, &[&client.pe])
                    else {
                        return ExitCode::FAILURE;
                    };
                    let beside = [&server.pe, &sfp.pe];
                    let Ok(cfp) = FpSide::new_beside(&cconn, (64, 8), &client.pe, FpUse::Recycled, &beside)
                    else {
                        return ExitCode::FAILURE;
                    };
                    let pes = [&server.pe, &client.pe, &sfp.pe, &cfp.pe];
                    if !run_until(&pes, false, || {
                        !server.remote.borrow().is_empty() && !client.remote.borrow().is_empty()
                    }) {
                        return ExitCode::FAILURE;
                    }
                    let (to_server, to_client) = (client.remote.borrow()[0], server.remote.borrow()[0]);
                    let fps = [&sfp.pe, &cfp.pe];
                    for _ in 0..n / 10 + 1 + n {
                        let before = cfp.filled.get().0;
                        let echoed = sfp.filled.get().0;
                        if !cfp.send(to_server, 64)
                            || !run_until(&fps, false, || sfp.filled.get().0 > echoed)
                            || !sfp.send(to_client, 64)
                            || !run_until(&fps, false, || cfp.filled.get().0 > before)
                        {
                            return ExitCode::FAILURE;
                        }
                    }
                    eprintln!("{} round trips", cfp.filled.get().0);
                    bench::keep(&(sfp.maps(), cfp.maps()));
                }
                "rdma" => {
                    // Two RDMA contexts of this one process, connected to each other and
                    // progressed in turn by this one thread: `n` 64-byte round trips, each a
                    // send, its receive and echo on the other side, the echo's receive, and
                    // both acknowledgements.
                    use doca_samples::bench_rdma::Side;
                    let (Ok((mut a, da, ea)), Ok((mut b, db, eb))) = (Side::new(), Side::new()) else {
                        return ExitCode::FAILURE;
                    };
                    if a.connect(&db, &eb).is_err() || b.connect(&da, &ea).is_err() {
                        return ExitCode::FAILURE;
                    }
                    let Ok(src) = a.local(0, 64) else { return ExitCode::FAILURE };
                    let deadline = Instant::now() + bench::GIVE_UP;
                    let mut passes = 0u64;
                    for _ in 0..n / 10 + 1 + n {
                        let before = a.received.get();
                        if !a.send(&src) {
                            return ExitCode::FAILURE;
                        }
                        let mut pass = 0u32;
                        while a.received.get() == before {
                            let _ = a.pe.progress() | a.repost(false) | b.pe.progress() | b.repost(true);
                            pass = pass.wrapping_add(1);
                            passes += 1;
                            if a.failures() + b.failures() > 0
                                || (pass % 1024 == 0 && Instant::now() > deadline)
                            {
                                return ExitCode::FAILURE;
                            }
                        }
                    }
                    eprintln!("{} round trips, {passes} passes of each engine", a.received.get());
                    if arg(3) == "idle" {
                        // Then `n` passes of one side with nothing arriving: the pass a busy
                        // receiver spins on (`cycle rdma N idle` minus `cycle rdma N`).
                        for _ in 0..n / 10 + 1 + n {
                            black_box(a.pe.progress());
                        }
                    }
                }
                _ => return ExitCode::FAILURE,
            }
        }
        which @ ("dma-host" | "dma-host-heap") => {
            // The host of the DPU-reads-host rows: shared memory (or heap memory, served by
            // the library's threads) exported to the DPU, kept until the parent closes stdin.
            let size: usize = arg(1).parse().unwrap_or(0);
            let Ok(map) = dma_host_export(size, which == "dma-host-heap") else { return ExitCode::FAILURE };
            let hex: String = map.1.iter().map(|b| format!("{b:02x}")).collect();
            println!("desc {hex}");
            let _ = std::io::stdout().flush();
            while !done() {
                std::thread::sleep(Duration::from_millis(5));
            }
            drop(map);
        }
        which @ ("link-host" | "link-host-heap") => {
            // The host of the DMA-across-the-link rows (its own fabric directory and the
            // link's host role, from its environment): the export, and a raw TCP server at
            // `arg(2)` answering each 24-byte request with `size` bytes (the baseline), until
            // stdin closes.
            let size: usize = arg(1).parse().unwrap_or(0);
            let Ok(map) = dma_host_export(size, which == "link-host-heap") else { return ExitCode::FAILURE };
            let Ok(raw) = std::net::TcpListener::bind(arg(2)) else { return ExitCode::FAILURE };
            let at = raw.local_addr().map_or_else(|_| String::new(), |a| a.to_string());
            std::thread::spawn(move || raw_tcp_server(&raw, size));
            let hex: String = map.1.iter().map(|b| format!("{b:02x}")).collect();
            println!("desc {hex} {at}");
            let _ = std::io::stdout().flush();
            while !done() {
                std::thread::sleep(Duration::from_millis(5));
            }
            drop(map);
        }
        "link-dpu" => {
            // The DPU of the DMA-across-the-link rows (its own fabric directory and the link's
            // DPU role): imports the host's export and measures a DMA read of it beside the
            // raw TCP request of the same bytes from the host's server at `arg(3)`, interleaved.
            pin(0);
            let num = |i: usize| arg(i).parse::<usize>().unwrap_or(0);
            let (size, reps, iters) = (num(1), num(4), num(5) as u64);
            match link_dpu(size, arg(2), arg(3), reps.max(1), iters.max(1)) {
                Ok((t_dma, t_raw)) => println!("result {} {} {} {}", t_dma.v, t_dma.sp, t_raw.v, t_raw.sp),
                Err(e) => {
                    eprintln!("link dpu: {e}");
                    return ExitCode::FAILURE;
                }
            }
            let _ = std::io::stdout().flush();
            while !done() {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        _ => return ExitCode::FAILURE,
    }
    ExitCode::SUCCESS
}

/// Answers each 24-byte request on one accepted connection with `size` bytes (the raw TCP
/// baseline of the DMA-across-the-link rows: what a read of `size` bytes costs on a bare
/// socket over the same path).
fn raw_tcp_server(listener: &std::net::TcpListener, size: usize) {
    use std::io::Read;
    let Ok((mut sock, _)) = listener.accept() else { return };
    let _ = sock.set_nodelay(true);
    let bytes = vec![0x5au8; size];
    let mut req = [0u8; 24];
    while sock.read_exact(&mut req).is_ok() {
        if sock.write_all(&bytes).is_err() {
            return;
        }
    }
}

/// The DPU's side of a DMA-across-the-link row: (ns per DMA read of `size` bytes of the
/// export `desc`, ns per raw TCP request of `size` bytes from the server at `raw_at`),
/// interleaved.
fn link_dpu(size: usize, desc: &str, raw_at: &str, reps: usize, iters: u64) -> Result<(Est, Est), String> {
    use doca_samples::bench::dma::Rig;
    use std::io::Read;
    let desc = from_hex(desc).ok_or("a descriptor in hex")?;
    let dpu = Rig::new("03:00.0", 1, true).map_err(|e| format!("dma: {e}"))?;
    let remote =
        doca_mmap::Mmap::create_from_export(None, &desc, &dpu.dev).map_err(|e| format!("import: {e}"))?;
    let local = dpu.local_map(size, 0).map_err(|e| format!("map: {e}"))?;
    dpu.tasks(&remote, &local, 1, size).map_err(|e| format!("task: {e}"))?;
    let mut raw = std::net::TcpStream::connect(raw_at).map_err(|e| format!("raw tcp: {e}"))?;
    raw.set_nodelay(true).map_err(|e| format!("raw tcp: {e}"))?;
    let mut into = vec![0u8; size];
    let tcp = |k: u64| {
        for _ in 0..k {
            raw.write_all(&[1u8; 24]).expect("raw tcp request");
            raw.read_exact(&mut into).expect("raw tcp answer");
            black_box(&into);
        }
    };
    let dma = |k| assert!(dpu.cycle(k, 1), "dma copy across the link failed");
    let (t_dma, t_raw) = measure_pair(reps, iters, dma, tcp);
    dpu.clear();
    Ok((t_dma, t_raw))
}

/// Shared memory of `size` bytes (filled), exported from host function b1:00.0; with `heap`,
/// heap memory registered as it is (its export served by the library's threads).
fn dma_host_export(size: usize, heap: bool) -> Result<(doca_mmap::Mmap, Vec<u8>), doca_core::Error> {
    let host = doca_core::open_device_with_pci("b1:00.0", None)?;
    let map = doca_mmap::Mmap::create()?;
    if heap {
        map.set_memrange(vec![0x5a; size])?;
    } else {
        let mem = doca_mmap::SharedMem::alloc(size)?;
        mem.write(0, &vec![0x5a; size])?;
        map.set_memrange(mem)?;
    }
    map.set_permissions(doca_mmap::AccessFlags::PCI_READ_WRITE)?;
    map.add_dev(&host)?;
    map.start()?;
    let desc = map.export_pci(&host)?;
    Ok((map, desc))
}

fn engine(cfg: &Cfg, rows: &mut Vec<Row>) {
    for n in [1usize, 16, 256] {
        let it = (cfg.iters / n as u64).max(1000);
        let pe = Pe::create().expect("pe");
        let ctxs: Vec<Loopback> = (0..n)
            .map(|_| {
                let lb = Loopback::create(Started::Running);
                pe.connect_ctx(&lb.as_ctx()).expect("connect");
                lb.set_conf(|_, _, _| {}, |_, _, _| {}, 1).expect("conf");
                lb.as_ctx().start().expect("start");
                lb
            })
            .collect();
        while pe.progress() {}
        let value = measure(cfg.reps, it, |k| {
            for _ in 0..k {
                black_box(pe.progress());
            }
        });
        drop(ctxs);
        let flags: Vec<Rc<Cell<bool>>> = (0..n).map(|_| Rc::new(Cell::new(false))).collect();
        let polls: Vec<Box<dyn Fn() -> bool>> = flags
            .iter()
            .map(|f| {
                Box::new({
                    let f = f.clone();
                    move || f.get()
                }) as Box<dyn Fn() -> bool>
            })
            .collect();
        let base = measure(cfg.reps, it, |k| {
            for _ in 0..k {
                let mut any = false;
                for p in black_box(&polls) {
                    any |= p();
                }
                black_box(any);
            }
        });
        rows.push(Row {
            section: "engine",
            name: format!("empty progress, {n} idle ctx"),
            unit: "ns",
            value,
            p99: None,
            baseline: "dyn poll loop".into(),
            base,
            lower_is_better: true,
        });
    }
    let value = loopback_cycle(cfg);
    let mut free: Vec<u32> = (0..64).collect();
    let mut ready: VecDeque<u32> = VecDeque::with_capacity(64);
    let done = Rc::new(Cell::new(0u64));
    let d = done.clone();
    let mut cb: Box<dyn FnMut(u32)> = Box::new(move |_| d.set(d.get() + 1));
    let base = measure(cfg.reps, cfg.iters, |k| {
        for _ in 0..k {
            let t = free.pop().expect("free");
            ready.push_back(black_box(t));
            let t = ready.pop_front().expect("ready");
            cb(t);
            free.push(t);
        }
    });
    rows.push(Row {
        section: "engine",
        name: "local task alloc+submit+complete+free".into(),
        unit: "ns",
        value,
        p99: None,
        baseline: "free list+queue+dyn cb".into(),
        base,
        lower_is_better: true,
    });
}

/// A control-path server (echoing, or a sink) and a client connected to it, both in this
/// process (the profiling loops' pair), named `tag` and this process's id.
fn cycle_pair(tag: &str, echo: bool) -> Option<(CcSide, CcSide)> {
    let name = format!("{tag}-{}", std::process::id());
    let server = CcSide::server(&name, echo, 0, 1024).ok()?;
    let client = CcSide::client_beside(&name, 1024, 1024, &[&server.pe]).ok()?;
    Some((server, client))
}

/// The core loopback context's task cycle (alloc, submit, one progress that completes it and
/// frees it in its callback), ns.
fn loopback_cycle(cfg: &Cfg) -> Est {
    measure(cfg.reps, cfg.iters, loopback_loop())
}

/// A loop of `k` loopback task cycles.
fn loopback_loop() -> impl FnMut(u64) {
    let pe = Pe::create().expect("pe");
    let lb = Loopback::create(Started::Running);
    pe.connect_ctx(&lb.as_ctx()).expect("connect");
    lb.set_conf(|t: EchoTask, _, _| drop(black_box(t)), |_, _, _| {}, 64).expect("conf");
    lb.as_ctx().start().expect("start");
    while pe.progress() {}
    move |k| {
        for _ in 0..k {
            lb.alloc_task(1).expect("alloc").submit().expect("submit");
            pe.progress();
        }
    }
}

/// A loop of `k` small DMA task cycles (alloc a 64-byte memcpy, submit, one progress that
/// copies and completes it, freed in its callback; the destination emptied for the next),
/// and the count of failed tasks.
fn dma_cycle_loop() -> (impl FnMut(u64), Rc<Cell<u64>>) {
    let rig = doca_samples::bench::dma::Rig::new("b1:00.0", 64, false).expect("dma context");
    let src = rig.local_map(4096, 1).expect("map");
    let dst = rig.local_map(4096, 0).expect("map");
    let (s, d) = rig.pair(&src, 0, &dst, 0, 64).expect("buffers");
    let failed = rig.failed.clone();
    let cycle = move |k| {
        let _maps = (&src, &dst);
        for _ in 0..k {
            let _ = d.reset_data_len();
            rig.dma
                .task_memcpy_alloc_init(Some(&s), Some(&d), doca_core::Data::NONE)
                .expect("alloc")
                .submit()
                .expect("submit");
            rig.pe.progress();
        }
    };
    (cycle, failed)
}

fn kib(size: usize) -> String {
    if size >= 1 << 20 {
        format!("{} MiB", size >> 20)
    } else {
        format!("{} KiB", size >> 10)
    }
}

/// Iterations that copy about `total` bytes in `size`-byte copies.
fn copies(total: usize, size: usize) -> u64 {
    (total / size).clamp(4, 100_000) as u64
}

/// A loop of memcpy of `size` bytes from the start of `src` to the start of `dst` — the
/// very bytes the DMA rows copy (same memory, same alignment, same pages). The bytes are
/// borrowed for each loop only (a DMA task cannot copy borrowed bytes: `IN_USE`).
fn memcpy_maps(src: &doca_mmap::Mmap, dst: &doca_mmap::Mmap, size: usize) -> impl FnMut(u64) {
    memcpy_chunks(src, dst, size, 1)
}

/// [`memcpy_maps`] over `n` chunks of `size` bytes (chunk `i` at `i * size` of each map, as
/// the `n` tasks of a row with `n` in flight copy them), one after the other: the copies
/// touch as much memory as the row's tasks do, not one chunk that stays in the first-level
/// cache.
fn memcpy_chunks(src: &doca_mmap::Mmap, dst: &doca_mmap::Mmap, size: usize, n: usize) -> impl FnMut(u64) {
    let (a, b) = (src.access().expect("started"), dst.access().expect("started"));
    move |k| {
        let from = a.bytes(0, size * n).expect("nothing borrows the source");
        let mut to = b.bytes_mut(0, size * n).expect("nothing borrows the destination");
        let mut i = 0;
        for _ in 0..k {
            let at = i * size;
            to[at..at + size].copy_from_slice(black_box(&from[at..at + size]));
            black_box(&*to);
            i = if i + 1 == n { 0 } else { i + 1 };
        }
    }
}

/// DMA rows: local memcpy task bandwidth beside memcpy, the small task's cycle beside the
/// loopback context's, the DPU reading host memory across processes beside memcpy, and task
/// throughput with 1, 8 and 64 tasks in flight beside memcpy of the same size. Each memcpy
/// baseline copies the very bytes its row's tasks copy (same maps, same offsets), right after
/// the row: only the engine's work differs.
fn dma_rows(cfg: &Cfg, rows: &mut Vec<Row>) {
    use doca_samples::bench::dma::Rig;
    let total = if cfg.reps < 5 { 16usize << 20 } else { 256 << 20 };
    let row = |name: String, unit, value, baseline: String, base, lower_is_better| Row {
        section: "dma",
        name,
        unit,
        value,
        p99: None,
        baseline,
        base,
        lower_is_better,
    };
    // One task of `size` bytes, resubmitted as soon as it completes, beside memcpy of the
    // same bytes (GB/s of each).
    let bandwidth = |rig: &Rig, src: &doca_mmap::Mmap, dst: &doca_mmap::Mmap, size: usize| {
        rig.tasks(src, dst, 1, size).expect("dma task");
        let dma = |k| assert!(rig.cycle(k, 1), "dma copy failed");
        let (t_dma, t_memcpy) = measure_pair(cfg.reps, copies(total, size), dma, memcpy_maps(src, dst, size));
        rig.clear();
        (t_dma.map(|t| size as f64 / t), t_memcpy.map(|t| size as f64 / t))
    };
    let rig = Rig::new("b1:00.0", 64, true).expect("dma context");
    for size in [64usize << 10, 1 << 20, cfg.big] {
        let src = rig.local_map(size, 1).expect("map");
        let dst = rig.local_map(size, 0).expect("map");
        let (value, base) = bandwidth(&rig, &src, &dst, size);
        rows.push(row(
            format!("dma memcpy bandwidth {}", kib(size)),
            "GB/s",
            value,
            format!("memcpy {}", kib(size)),
            base,
            false,
        ));
    }

    // The small task's whole cycle: alloc, submit, one progress that copies it and completes
    // it (freed in its callback), the destination emptied for the next.
    let (dma, failed) = dma_cycle_loop();
    let (value, base) = measure_pair(cfg.reps, cfg.iters, dma, loopback_loop());
    assert_eq!(failed.get(), 0, "dma copy failed");
    rows.push(row(
        "dma small memcpy task cycle (64 B)".into(),
        "ns",
        value,
        "loopback task cycle".into(),
        base,
        true,
    ));

    // The same cycle as a C program makes it (`doca_dma_task_memcpy_alloc_init`,
    // `doca_task_submit`, `doca_pe_progress`, a C callback freeing the task), beside the
    // cycle through the Rust API: what the C ABI adds.
    let c_dma = doca_samples::bench_capi::dma_cycle_loop().expect("dma context through the C ABI");
    let (dma, failed) = dma_cycle_loop();
    let (value, base) = measure_pair(cfg.reps, cfg.iters, c_dma, dma);
    assert_eq!(failed.get(), 0, "dma copy failed");
    rows.push(row(
        "C ABI: dma small memcpy task cycle (64 B)".into(),
        "ns",
        value,
        "the same through the Rust API".into(),
        base,
        true,
    ));

    // The DPU reads host memory: a peer process (the host) exports shared memory, this one
    // imports it on the DPU device and copies from it, named by the host's addresses.
    let dpu = Rig::new("03:00.0", 64, true).expect("dma context");
    let big = if cfg.reps < 5 { 2 << 20 } else { 8 << 20 };
    for size in [1usize << 20, big] {
        let mut host = PeerProc::spawn(&["dma-host", &size.to_string()]);
        let line = host.line();
        let desc = line.strip_prefix("desc ").and_then(from_hex).expect("the host's export descriptor");
        let remote = doca_mmap::Mmap::create_from_export(None, &desc, &dpu.dev).expect("import");
        let local = dpu.local_map(size, 0).expect("map");
        let (value, base) = bandwidth(&dpu, &remote, &local, size);
        drop(remote);
        host.finish();
        rows.push(row(
            format!("dma DPU reads host memory {}", kib(size)),
            "GB/s",
            value,
            format!("memcpy {}", kib(size)),
            base,
            false,
        ));
    }

    // The DPU reads host heap memory (registered by address, as a C host's malloc): its whole
    // pages mapped here (swapped for shared memory by the host's library), the partial ends
    // served by the host library's thread. The baseline is memcpy between two local maps of
    // the same size.
    for size in [1usize << 20, big] {
        let mut host = PeerProc::spawn(&["dma-host-heap", &size.to_string()]);
        let line = host.line();
        let desc = line.strip_prefix("desc ").and_then(from_hex).expect("the host's export descriptor");
        let remote = doca_mmap::Mmap::create_from_export(None, &desc, &dpu.dev).expect("import");
        let local = dpu.local_map(size, 0).expect("map");
        let twin = dpu.local_map(size, 0x5a).expect("map");
        dpu.tasks(&remote, &local, 1, size).expect("dma task");
        let dma = |k| assert!(dpu.cycle(k, 1), "dma copy failed");
        let (t_dma, t_memcpy) =
            measure_pair(cfg.reps, copies(total, size), dma, memcpy_maps(&twin, &local, size));
        dpu.clear();
        drop(remote);
        host.finish();
        rows.push(row(
            format!("dma DPU reads host heap memory (served) {}", kib(size)),
            "GB/s",
            t_dma.map(|t| size as f64 / t),
            format!("memcpy {}", kib(size)),
            t_memcpy.map(|t| size as f64 / t),
            false,
        ));
    }

    // Throughput of 4 KiB tasks with 1, 8 and 64 in flight, beside memcpy of the same 4 KiB
    // chunks, one after the other (with 64 in flight they are 256 KiB each way: not the
    // first-level cache's, for the tasks nor for the baseline).
    let size = 4096;
    for n in [1usize, 8, 64] {
        // Page-aligned, so that the row does not move with where the heap puts its buffers.
        let src = rig.local_map_paged(size * n, 1).expect("map");
        let dst = rig.local_map_paged(size * n, 0).expect("map");
        rig.tasks(&src, &dst, n, size).expect("dma tasks");
        let dma = |k| assert!(rig.cycle(k, n), "dma copy failed");
        let (t_per, t_memcpy) =
            measure_pair(cfg.reps, cfg.iters / 4, dma, memcpy_chunks(&src, &dst, size, n));
        rig.clear();
        let base = t_memcpy.map(|t| 1e3 / t);
        rows.push(row(
            format!("dma 4 KiB tasks, {n} in flight"),
            "Mtask/s",
            t_per.map(|t| 1e3 / t),
            "memcpy 4 KiB".into(),
            base,
            false,
        ));
    }
}

/// AES-GCM rows: one encrypt task of `size` bytes (256-bit key, 12-byte IV, 16-byte tag),
/// resubmitted as soon as it completes, beside the `aes-gcm` crate called directly on a
/// buffer of the same size in the same run (GB/s of plaintext each): what the context adds
/// is DOCA's plumbing (task, queue, buffers, the copy of the source into the destination).
fn aes_gcm_rows(cfg: &Cfg, rows: &mut Vec<Row>) {
    use aes_gcm::aead::{consts::U12, KeyInit};
    use aes_gcm::AeadInPlace;
    type Aes256Gcm = aes_gcm::AesGcm<aes::Aes256, U12>;
    use doca_aes_gcm::{AesGcm, EncryptTask, KeyType};
    use doca_core::{open_device_with_pci, Data};

    let total = if cfg.reps < 5 { 16usize << 20 } else { 256 << 20 };
    let raw_key = [7u8; 32];
    let iv = [9u8; 12];
    let dev = open_device_with_pci("b1:00.0", None).expect("device");
    let pe = Pe::create().expect("engine");
    let gcm = AesGcm::create(&dev).expect("aes_gcm context");
    pe.connect_ctx(&gcm.as_ctx()).expect("connect");
    let back: Rc<std::cell::RefCell<Option<EncryptTask>>> = Rc::default();
    let failed = Rc::new(Cell::new(0u64));
    let (b, f) = (back.clone(), failed.clone());
    gcm.task_encrypt_set_conf(
        move |t: EncryptTask, _, _| *b.borrow_mut() = Some(t),
        move |t: EncryptTask, _, _| {
            eprintln!("aes_gcm bench: a task failed: {:?}", t.status());
            f.set(f.get() + 1);
        },
        1,
    )
    .expect("task conf");
    gcm.as_ctx().start().expect("start");
    let key = gcm.key_create(&raw_key, KeyType::Aes256).expect("key");
    let inv = doca_buf::Inventory::create(4).expect("inventory");
    inv.start().expect("inventory start");
    let direct_cipher = Aes256Gcm::new_from_slice(&raw_key).expect("key");
    for size in [64usize << 10, 1 << 20] {
        let map = |len: usize, fill: u8| {
            let m = doca_mmap::Mmap::create().expect("map");
            m.set_memrange(vec![fill; len]).expect("memrange");
            m.set_permissions(doca_mmap::AccessFlags::LOCAL_READ_WRITE).expect("permissions");
            m.add_dev(&dev).expect("add_dev");
            m.start().expect("map start");
            m
        };
        let (src_map, dst_map) = (map(size, 1), map(size + 16, 0));
        let src = inv.buf_get_data_at(&src_map, 0, size).expect("source");
        let dst = inv.buf_get_at(&dst_map, 0, size + 16).expect("destination");
        let task = gcm
            .task_encrypt_alloc_init(Some(&src), Some(&dst), Some(&key), &iv, 16, 0, Data::NONE)
            .expect("task");
        *back.borrow_mut() = Some(task);
        let doca = |k: u64| {
            for _ in 0..k {
                let t = back.borrow_mut().take().expect("the task is back");
                let _ = dst.reset_data_len();
                assert!(t.submit().is_ok(), "aes_gcm submit");
                while back.borrow().is_none() {
                    pe.progress();
                    assert_eq!(failed.get(), 0, "aes_gcm task failed");
                }
            }
        };
        let mut plain = vec![1u8; size];
        let direct = |k: u64| {
            for _ in 0..k {
                let tag = direct_cipher
                    .encrypt_in_place_detached(iv.as_slice().into(), &[], black_box(&mut plain[..]))
                    .expect("encrypt");
                black_box(tag);
            }
        };
        let (t_doca, t_direct) = measure_pair(cfg.reps, copies(total, size), doca, direct);
        if let Some(t) = back.borrow_mut().take() {
            t.set_src(None);
            t.set_dst(None);
        }
        drop((src, dst));
        rows.push(Row {
            section: "aes_gcm",
            name: format!("aes_gcm encrypt task {} (256-bit key)", kib(size)),
            unit: "GB/s",
            value: t_doca.map(|t| size as f64 / t),
            p99: None,
            baseline: format!("aes-gcm crate {}", kib(size)),
            base: t_direct.map(|t| size as f64 / t),
            lower_is_better: false,
        });
        // The machine's OpenSSL on blocks of the same size, as a reference (its own process
        // and second, right after the pair above).
        match doca_samples::bench_sysref::openssl_aes256gcm(size) {
            Ok(bytes_per_s) => rows.push(Row {
                section: "aes_gcm",
                name: format!("aes_gcm encrypt task {} (reference)", kib(size)),
                unit: "GB/s",
                value: t_doca.map(|t| size as f64 / t),
                p99: None,
                baseline: format!("openssl speed aes-256-gcm {}", kib(size)),
                base: Est { v: bytes_per_s / 1e9, sp: 0.0 },
                lower_is_better: false,
            }),
            Err(why) => eprintln!("doca_bench: the OpenSSL reference row is skipped: {why}"),
        }
    }
}

fn from_hex(s: &str) -> Option<Vec<u8>> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// Baselines: raw ring one-way latencies per message size, the raw streaming rate,
/// seqpacket and eventfd one-way latencies (p50, p99).
struct Base {
    /// (message size, (p50, p99)) of the raw ping-pong.
    ring: Vec<(usize, (Est, f64))>,
    /// Messages per second through the raw streaming ring.
    stream: Est,
    sock: (Est, f64),
    eventfd: (Est, f64),
}

impl Base {
    /// The raw ring's one-way p50 for messages of `size` bytes (the nearest size of the
    /// baselines), measured again now, close to the row it is the baseline of (no other
    /// process of the bench may be running: the control rows take theirs just before their
    /// peer starts, the fast-path rows just after theirs stops): the machine's slow and fast
    /// phases last seconds, so a baseline taken minutes earlier can be in another phase.
    fn ring_now(&self, cfg: &Cfg, size: usize) -> (String, Est) {
        let (s, _) =
            *self.ring.iter().min_by_key(|(s, _)| s.abs_diff(size)).expect("the raw ring was measured");
        (format!("raw shm ring {s} B"), raw_ring(cfg, s).0)
    }
}

/// The raw ping-pong of `size`-byte messages, one-way (p50, p99).
fn raw_ring(cfg: &Cfg, size: usize) -> (Est, f64) {
    let shm = bench::raw::Shm::create(bench::raw::PINGPONG_LEN).expect("shared memory");
    let pid = std::process::id().to_string();
    let (fd, n) = (shm.fd().to_string(), cfg.lat_n.to_string());
    let mut p = PeerProc::spawn(&["raw", &pid, &fd, &size.to_string(), &n]);
    assert_eq!(p.line(), "ready");
    let rtts = bench::raw::PingPong::new(&shm, size).ping(cfg.lat_n, Instant::now() + bench::GIVE_UP);
    p.finish();
    one_way(&rtts)
}

/// The raw streaming ring's rate (messages per second; median of repetitions).
fn raw_stream(cfg: &Cfg) -> Est {
    let mut rates = Vec::new();
    for _ in 0..cfg.reps.min(5) {
        let shm = bench::raw::Shm::create(bench::raw::STREAM_LEN).expect("shared memory");
        let pid = std::process::id().to_string();
        let (fd, n) = (shm.fd().to_string(), cfg.rate_n.to_string());
        let mut p = PeerProc::spawn(&["raw", &pid, &fd, "0", &n]);
        assert_eq!(p.line(), "ready");
        let stream = bench::raw::Stream::new(&shm);
        let deadline = Instant::now() + bench::GIVE_UP;
        let t = Instant::now();
        if stream.produce(cfg.rate_n, deadline) && stream.wait_consumed(cfg.rate_n, deadline) {
            rates.push(cfg.rate_n as f64 / (ns(t) / 1e9));
        }
        p.finish();
    }
    Est::of(&rates)
}

fn baselines(cfg: &Cfg) -> Base {
    let ring = [64usize, 1024, 4080].into_iter().map(|size| (size, raw_ring(cfg, size))).collect();
    let stream = raw_stream(cfg);

    let n = cfg.lat_n.to_string();
    let Belled { peer: p, sock, mine, theirs: their_bell, dir } =
        Belled::spawn("pp", |path| vec!["sock".into(), path.into(), n]);
    let mut buf = [0u8; 64];
    let _ = rustix::io::ioctl_fionbio(&sock, false);
    let mut rtts = Vec::new();
    for _ in 0..cfg.lat_n {
        let t = Instant::now();
        if rustix::net::send(&sock, &[7u8; 64], rustix::net::SendFlags::NOSIGNAL).is_err() {
            break;
        }
        if rustix::net::recv(&sock, &mut buf, rustix::net::RecvFlags::empty()).is_err() {
            break;
        }
        rtts.push(ns(t));
    }
    let sockl = one_way(&rtts);
    let rtts = bench::eventfd_pingpong(&mine, &their_bell, cfg.lat_n, true);
    let eventfd = one_way(&rtts);
    p.finish();
    let _ = std::fs::remove_dir_all(&dir);
    Base { ring, stream, sock: sockl, eventfd }
}

fn memcpy_gbps(size: usize, reps: usize) -> Est {
    let src = vec![1u8; size];
    let mut dst = vec![0u8; size];
    let iters = ((256usize << 20) / size).clamp(4, 100_000) as u64;
    let t_per = measure(reps, iters, |k| {
        for _ in 0..k {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        }
    });
    t_per.map(|t| size as f64 / t)
}

/// memcpy between two buffers of the shared allocator (memfd pages, as the fast path copies).
fn memcpy_shared_gbps(size: usize, reps: usize) -> Est {
    let src_mem = doca_mmap::SharedMem::alloc(size).expect("shared memory");
    let dst_mem = doca_mmap::SharedMem::alloc(size).expect("shared memory");
    let mut src = src_mem.bytes_mut(0, size).expect("a fresh allocation");
    src.fill(1);
    let mut dst = dst_mem.bytes_mut(0, size).expect("a fresh allocation");
    let iters = ((256usize << 20) / size).clamp(4, 100_000) as u64;
    let t_per = measure(reps, iters, |k| {
        for _ in 0..k {
            dst.copy_from_slice(black_box(&src));
            black_box(&*dst);
        }
    });
    t_per.map(|t| size as f64 / t)
}

fn control_path(cfg: &Cfg, base: &Base, rows: &mut Vec<Row>, (latency, rate, scale): (bool, bool, bool)) {
    let pid = std::process::id();
    if latency {
        // Busy rows compare with the raw ring measured just before the peer starts (it spins
        // once up, and would slow the ring down).
        let sizes = [64usize, 1024, 4080];
        let mut adjacent: Vec<_> = sizes.iter().map(|&size| base.ring_now(cfg, size)).rev().collect();
        let name = format!("bench-busy-{pid}");
        let mut p = PeerProc::spawn(&["cc-echo", &name, "busy"]);
        assert_eq!(p.line(), "ready");
        let c = CcSide::client(&name, 1024, 1024).expect("client");
        for size in sizes {
            let msg = vec![5u8; size];
            let n = cfg.lat_n;
            let mut rtts = Vec::with_capacity(n as usize);
            for i in 0..n + n / 10 {
                if i == n / 10 {
                    rtts.clear(); // the first tenth warms up
                }
                let before = c.received.get();
                let t = Instant::now();
                if !c.send(&msg) || !run_until(&[&c.pe], false, || c.received.get() > before) {
                    break;
                }
                rtts.push(ns(t));
            }
            let baseline = adjacent.pop().expect("a ring per size");
            rows.push(latency_row(
                "control path",
                format!("one-way {size} B, busy progress"),
                rtts,
                baseline,
            ));
        }
        p.finish();
        rows.push(asleep_row(cfg, pid));
        // The 64 B busy round trips as a C program makes them (a C client sending with
        // `doca_comch_client_task_send_alloc_init` and `doca_task_submit`, a C echo server
        // answering from its receive callback, both through `libdoca_capi`'s exports), beside
        // the same through the Rust API, in blocks taking turns: one peer thread serves both
        // (each of its passes progresses both servers) and this one holds both clients.
        let name = format!("bench-capi-{pid}");
        let mut p = PeerProc::spawn(&["capi-echo", &name]);
        assert_eq!(p.line(), "ready");
        let cname = std::ffi::CString::new(format!("{name}-c")).expect("no NUL");
        let mut c_trip = doca_samples::bench_capi::comch_client(&cname, bench::GIVE_UP).expect("C client");
        let rust = CcSide::client(&format!("{name}-rust"), 1024, 1024).expect("client");
        let msg = [5u8; 64];
        let mut rust_trip = |msg: &[u8]| {
            let before = rust.received.get();
            rust.send(msg) && run_until(&[&rust.pe], false, || rust.received.get() > before)
        };
        let block = (cfg.lat_n / 5).max(1);
        let (mut c_rtts, mut rust_rtts) = (Vec::new(), Vec::new());
        'blocks: for rep in 0..6 {
            for (trip, rtts) in [
                (&mut c_trip as &mut dyn FnMut(&[u8]) -> bool, &mut c_rtts),
                (&mut rust_trip, &mut rust_rtts),
            ] {
                for _ in 0..block {
                    let t = Instant::now();
                    if !trip(&msg) {
                        break 'blocks;
                    }
                    rtts.push(ns(t));
                }
                if rep == 0 {
                    rtts.clear(); // the first block of each warms up
                }
            }
        }
        p.finish();
        let base = ("the same through the Rust API".to_string(), one_way(&rust_rtts).0);
        rows.push(latency_row("control path", "C ABI: one-way 64 B, busy progress".into(), c_rtts, base));
    }
    if rate {
        // Pipelined one-way rate.
        let name = format!("bench-rate-{pid}");
        let mut p = PeerProc::spawn(&["cc-sink", &name, "busy", &cfg.rate_n.to_string()]);
        assert_eq!(p.line(), "ready");
        let c = CcSide::client(&name, 1024, 1024).expect("client");
        let msg = [3u8; 64];
        let mut rates = Vec::new();
        // One repetition more than counted: the first warms up (the ring's and the pools'
        // pages, both engines' lists) and is dropped, as the latency rows drop their first tenth.
        for rep in 0..=cfg.reps.min(5) {
            if rep == 1 {
                rates.clear();
            }
            let before = c.received.get();
            let t = Instant::now();
            let mut sent = 0;
            while sent < cfg.rate_n {
                if c.send(&msg) {
                    sent += 1;
                } else {
                    c.pe.progress();
                }
            }
            if !run_until(&[&c.pe], false, || c.received.get() > before) {
                break;
            }
            rates.push(cfg.rate_n as f64 / (ns(t) / 1e9));
        }
        p.finish();
        rows.push(Row {
            section: "control path",
            name: "pipelined one-way rate, 64 B".into(),
            unit: "Mmsg/s",
            value: Est::of(&rates).map(|r| r / 1e6),
            p99: None,
            baseline: "raw SPSC stream, 64 B slots".into(),
            base: base.stream.map(|r| r / 1e6),
            lower_is_better: false,
        });
    }
    // Scale: 1, 8, 64 clients on one server, the same total number of messages, each client
    // with up to 1024 sends in flight (64 Ki in flight with 64 clients).
    let mut one = 0.0;
    let msg = [3u8; 64];
    for clients in [1usize, 8, 64].into_iter().filter(|_| scale) {
        let per_client = (cfg.rate_n / clients as u64).max(1000);
        let name = format!("bench-scale-{clients}-{pid}");
        let mut p = PeerProc::spawn(&["cc-sink", &name, "busy", &per_client.to_string()]);
        assert_eq!(p.line(), "ready");
        let sides: Vec<CcSide> =
            (0..clients).map(|_| CcSide::client(&name, 256, 1024).expect("client")).collect();
        let t = Instant::now();
        let mut sent = vec![0u64; clients];
        let deadline = Instant::now() + bench::GIVE_UP;
        while sides.iter().any(|s| s.received.get() == 0) && Instant::now() < deadline {
            for (i, s) in sides.iter().enumerate() {
                while sent[i] < per_client && s.send(&msg) {
                    sent[i] += 1;
                }
                s.pe.progress();
            }
        }
        let rate = (clients as u64 * per_client) as f64 / (ns(t) / 1e9);
        p.finish();
        if clients == 1 {
            one = rate;
        }
        rows.push(Row {
            section: "scale",
            name: format!("aggregate rate, {clients} client(s)"),
            unit: "Mmsg/s",
            value: Est::once(rate / 1e6),
            p99: None,
            baseline: "1 client".into(),
            base: Est::once(one / 1e6),
            lower_is_better: false,
        });
    }
    if scale {
        // Mapped, not touched: records are packed, so a ring touches what it carries.
        let per_conn = 2 * doca_cc::proto::layout::ring_bytes(doca_cc::DEFAULT_RECV_QUEUE_SIZE, 4080);
        rows.push(Row {
            section: "scale",
            name: "shared memory mapped per connection (default)".into(),
            unit: "KiB",
            value: Est::once(per_conn as f64 / 1024.0),
            p99: None,
            baseline: "-".into(),
            base: Est::once(per_conn as f64 / 1024.0),
            lower_is_better: true,
        });
    }
}

/// The asleep row: 64-byte round trips with both sides asleep on their engine's notification
/// handle between messages, beside an eventfd ping-pong between the same two processes, in
/// blocks taking turns (six each, the first of each dropped): the peer sleeps in one `poll`
/// on its engine's handle and its eventfd and answers whichever rang, so both measurements
/// see the same minutes of the machine and the same placement of the two processes.
fn asleep_row(cfg: &Cfg, pid: u32) -> Row {
    let name = format!("bench-sleep-{pid}");
    let Belled { peer: mut p, sock: _sock, mine, theirs, dir } =
        Belled::spawn("asleep", |path| vec!["cc-echo-bell".into(), name.clone(), path.into()]);
    assert_eq!(p.line(), "ready");
    let c = CcSide::client(&name, 1024, 1024).expect("client");
    let msg = [5u8; 64];
    let block = (cfg.lat_n / 4 / 5).max(1);
    let (mut ours, mut efd) = (Vec::new(), Vec::new());
    for rep in 0..6 {
        for _ in 0..block {
            let before = c.received.get();
            let t = Instant::now();
            if !c.send(&msg) || !run_until(&[&c.pe], true, || c.received.get() > before) {
                break;
            }
            ours.push(ns(t));
        }
        efd.extend(bench::eventfd_pingpong(&mine, &theirs, block, true));
        if rep == 0 {
            ours.clear(); // the first block of each warms up
            efd.clear();
        }
    }
    p.finish();
    let _ = std::fs::remove_dir_all(&dir);
    let base = ("eventfd ping-pong, interleaved".to_string(), one_way(&efd).0);
    latency_row("control path", "one-way 64 B, asleep on notification handle".into(), ours, base)
}

/// iceoryx2 publish-subscribe one-way latency (copied payloads), beside the same raw ring
/// floor as the library's rows.
#[cfg(feature = "iceoryx2")]
fn iceoryx2_rows(cfg: &Cfg, base: &Base, rows: &mut Vec<Row>) {
    let pid = std::process::id();
    for size in [64usize, 4096] {
        let name = format!("doca-bench-iox-{size}-{pid}");
        let mut p = PeerProc::spawn(&["iox", &name, &size.to_string()]);
        assert_eq!(p.line(), "ready");
        match doca_samples::iox::ping(&name, size, cfg.lat_n + cfg.lat_n / 10) {
            Ok(mut rtts) => {
                rtts.drain(..rtts.len().min(cfg.lat_n as usize / 10)); // the first tenth warms up
                let name = format!("one-way {size} B publish-subscribe, copied");
                p.finish();
                rows.push(latency_row("iceoryx2", name, rtts, base.ring_now(cfg, size)));
                continue;
            }
            Err(e) => eprintln!("iceoryx2 {size} B: {e}"),
        }
        p.finish();
    }
}

/// A one-way latency row (half the round trips' p50 and p99) beside the raw ring's row.
fn latency_row(section: &'static str, name: String, rtts: Vec<f64>, (baseline, base): (String, Est)) -> Row {
    let (p50, p99) = one_way(&rtts);
    Row { section, name, unit: "ns", value: p50, p99: Some(p99), baseline, base, lower_is_better: true }
}

fn fast_path(cfg: &Cfg, base: &Base, rows: &mut Vec<Row>, latency: bool, bandwidth: bool) {
    let pid = std::process::id();
    // Latency: echo through the peer's producer back into our consumer; both sides use their
    // tasks alike (recycled, or a task and a buffer per message as the sample does).
    let uses =
        [(FpUse::Recycled, "recycled", "tasks reused"), (FpUse::PerMessage, "per-message", "task per msg")];
    for ((how, arg, label), size) in
        uses.into_iter().flat_map(|u| [(u, 64usize), (u, 4096)]).filter(|_| latency)
    {
        let name = format!("bench-fp-lat-{size}-{arg}-{pid}");
        let (p, _c, fp, to) = fp_peer(&name, (size, 8, how), &["echo", arg]);
        let mut rtts = Vec::new();
        for i in 0..cfg.lat_n + cfg.lat_n / 10 {
            if i == cfg.lat_n / 10 {
                rtts.clear(); // the first tenth warms up
            }
            let before = fp.filled.get().0;
            let t = Instant::now();
            if !fp.send(to, size) || !run_until(&[&fp.pe], false, || fp.filled.get().0 > before) {
                break;
            }
            rtts.push(ns(t));
        }
        p.finish();
        rows.push(latency_row(
            "fast path",
            format!("one-way {size} B producer→consumer, {label}"),
            rtts,
            base.ring_now(cfg, size),
        ));
        bench::keep(&fp.maps());
    }
    if latency {
        rows.push(fast_against_control(cfg));
    }
    // Bandwidth: pipelined sends; a send completes once its bytes are in the consumer's buffer.
    for size in [64usize << 10, 1 << 20, cfg.big].into_iter().filter(|_| bandwidth) {
        let slots = 4;
        let name = format!("bench-fp-bw-{size}-{pid}");
        let (p, _c, fp, to) = fp_peer(&name, (size, slots, FpUse::PerMessage), &["sink", "per-message"]);
        let total = ((1usize << 30) / size).clamp(8, 4096) as u64 / if cfg.reps < 5 { 8 } else { 1 };
        let mut rates = Vec::new();
        for _ in 0..cfg.reps.min(5) {
            let start = fp.sent.get();
            let t = Instant::now();
            let mut queued = 0;
            let deadline = Instant::now() + bench::GIVE_UP;
            while fp.sent.get() - start < total && Instant::now() < deadline {
                while queued < total && fp.send(to, size) {
                    queued += 1;
                }
                fp.pe.progress();
            }
            rates.push((total as usize * size) as f64 / ns(t));
        }
        p.finish();
        let gbps = Est::of(&rates);
        let label =
            if size >= 1 << 20 { format!("{} MiB", size >> 20) } else { format!("{} KiB", size >> 10) };
        let baselines = [
            ("memcpy same size", memcpy_gbps(size, cfg.reps)),
            ("memcpy, memfd buffers", memcpy_shared_gbps(size, cfg.reps)),
        ];
        for (baseline, base) in baselines {
            rows.push(Row {
                section: "fast path",
                name: format!("bandwidth {label}"),
                unit: "GB/s",
                value: gbps,
                p99: None,
                baseline: baseline.into(),
                base,
                lower_is_better: false,
            });
        }
        bench::keep(&fp.maps());
    }
}

/// A fast-path peer process (the "fp" role with `role` after its size and slots) and this
/// side's client of it with a fast-path side of `slots` buffers of `size` bytes used `how`;
/// returns them with the id of the peer's consumer.
fn fp_peer(
    name: &str,
    (size, slots, how): (usize, usize, FpUse),
    role: &[&str],
) -> (PeerProc, CcSide, FpSide, u32) {
    let (size_arg, slots_arg) = (size.to_string(), slots.to_string());
    let args: Vec<&str> =
        ["fp", name, &size_arg, &slots_arg].into_iter().chain(role.iter().copied()).collect();
    let mut p = PeerProc::spawn(&args);
    assert_eq!(p.line(), "ready");
    let c = CcSide::client(name, 64, 1024).expect("client");
    let conn = c.conn.borrow().clone().expect("connection");
    let fp = FpSide::new(&conn, size, slots, &c.pe, how).expect("fast path");
    assert!(run_until(&[&c.pe, &fp.pe], false, || !c.remote.borrow().is_empty()), "peer consumer");
    let to = c.remote.borrow()[0];
    (p, c, fp, to)
}

/// The fast path (64 B, tasks reused) against the control path (64 B) on one connection,
/// measured in alternating blocks of round trips so that both see the same phases of a noisy
/// machine: the ratio is the issue's "fast path ≤ control path" goal. The peer echoes both
/// and progresses both of its engines at every pass.
fn fast_against_control(cfg: &Cfg) -> Row {
    let name = format!("bench-fp-vs-cc-{}", std::process::id());
    let (p, c, fp, to) = fp_peer(&name, (64, 8, FpUse::Recycled), &["echo", "recycled", "control"]);
    let msg = [5u8; 64];
    let (mut fast, mut control) = (Vec::new(), Vec::new());
    let block = (cfg.lat_n / 20).max(100);
    'blocks: for round in 0..22 {
        for i in 0..2 * block {
            let t = Instant::now();
            let done = if i < block {
                let before = c.received.get();
                c.send(&msg) && run_until(&[&c.pe], false, || c.received.get() > before)
            } else {
                let before = fp.filled.get().0;
                fp.send(to, 64) && run_until(&[&fp.pe], false, || fp.filled.get().0 > before)
            };
            if !done {
                break 'blocks;
            }
            // The first two rounds warm up.
            if round >= 2 {
                if i < block { &mut control } else { &mut fast }.push(ns(t));
            }
        }
    }
    p.finish();
    bench::keep(&fp.maps());
    let (control, _) = one_way(&control);
    latency_row(
        "fast path",
        "one-way 64 B, tasks reused, interleaved".into(),
        fast,
        ("control path 64 B, interleaved".into(), control),
    )
}

/// The TCP link's rows (see `doca_samples::bench_link`): the comm channel's one-way 64 B
/// and the fast path's bandwidth between two sides that share nothing but an encrypted TCP
/// link, each beside raw TCP over the same path, the two measured alternately.
fn link_rows(cfg: &Cfg, rows: &mut Vec<Row>) {
    let pid = std::process::id();
    let net = LinkNet::default();
    let dir = std::env::temp_dir().join(format!("doca-bench-link-{pid}"));
    let _ = std::fs::remove_dir_all(&dir);
    let (keys, fab_h, fab_d) = (dir.join("keys"), dir.join("host"), dir.join("dpu"));
    {
        use std::os::unix::fs::DirBuilderExt;
        let mut b = std::fs::DirBuilder::new();
        b.mode(0o700).recursive(true);
        for d in [&fab_h, &fab_d] {
            b.create(d).expect("a fabric directory");
        }
    }
    doca_link::remote::keys::generate(&keys, true).expect("keys");
    let port = if net.path() == "veth" {
        7431
    } else {
        std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map_or(7431, |a| a.port())
    };
    let (link_at, raw_at) = (format!("{}:{port}", net.dpu), format!("{}:{}", net.dpu, port + 1));
    let s = |p: &std::path::Path| p.to_str().expect("a UTF-8 temp dir").to_string();
    let (keys, fab_h, fab_d) = (s(&keys), s(&fab_h), s(&fab_d));
    let dpu_env = [
        (doca_link::FABRIC_ENV, fab_d.as_str()),
        (doca_link::remote::LISTEN_ENV, link_at.as_str()),
        (doca_link::remote::KEYS_ENV, keys.as_str()),
    ];
    let host_env = [
        (doca_link::FABRIC_ENV, fab_h.as_str()),
        (doca_link::remote::CONNECT_ENV, link_at.as_str()),
        (doca_link::remote::KEYS_ENV, keys.as_str()),
    ];
    let mut raw = PeerProc::spawn_on(&net, 1, &["tcp-echo", &raw_at], &[]);
    assert_eq!(raw.line(), "ready");
    let measure = |args: &[&str]| -> Option<String> {
        let role: Vec<&str> = ["link-measure"].into_iter().chain(args.iter().copied()).collect();
        let mut m = PeerProc::spawn_on(&net, 0, &role, &host_env);
        let line = m.line();
        m.finish();
        (!line.is_empty()).then_some(line)
    };
    let pair = |line: Option<String>| {
        line.and_then(|l| {
            let mut it = l.split_whitespace().map(|v| v.parse::<f64>().ok());
            Some((it.next()??, it.next()??))
        })
    };
    let n = (cfg.lat_n / 10).max(200).to_string();
    // Latency: the echo server asleep on its notification handle, as the client.
    let name = format!("bench-link-{pid}");
    let mut echo = PeerProc::spawn_on(&net, 1, &["cc-echo", &name, "sleep"], &dpu_env);
    assert_eq!(echo.line(), "ready");
    let (mut link, mut tcp) = (Vec::new(), Vec::new());
    for _ in 0..cfg.reps.min(5) {
        if let Some(v) = pair(measure(&["cc-lat", &name, &n])) {
            link.push(v);
        }
        if let Some(v) = pair(measure(&["tcp-lat", &raw_at, &n])) {
            tcp.push(v);
        }
    }
    echo.finish();
    let med = |v: &[(f64, f64)], i: usize| {
        Est::of(&v.iter().map(|p| if i == 0 { p.0 } else { p.1 }).collect::<Vec<_>>())
    };
    if !link.is_empty() && !tcp.is_empty() {
        rows.push(Row {
            section: "link",
            name: format!("control path one-way 64 B over TCP ({}), asleep", net.path()),
            unit: "ns",
            value: med(&link, 0),
            p99: Some(med(&link, 1).v),
            baseline: format!("raw TCP ping-pong ({})", net.path()),
            base: med(&tcp, 0),
            lower_is_better: true,
        });
    } else {
        eprintln!("doca_bench: the link latency rows failed");
    }
    // Bandwidth: the fast path into the DPU side's consumer, beside a raw TCP stream. Both
    // sides sleep on their engines when idle: on one shared machine a spinning side would
    // take the core the link's threads (cipher, copies) run on.
    for size in [1usize << 20, cfg.big] {
        let total = ((256usize << 20) / size).clamp(4, 256) as u64 / if cfg.reps < 5 { 4 } else { 1 };
        let name = format!("bench-link-fp-{size}-{pid}");
        let (sz, slots) = (size.to_string(), "4".to_string());
        let mut sink = PeerProc::spawn_on(
            &net,
            1,
            &["fp", &name, &sz, &slots, "sink", "per-message", "sleep"],
            &dpu_env,
        );
        assert_eq!(sink.line(), "ready");
        let tot = total.to_string();
        let (mut fp, mut tcp) = (Vec::new(), Vec::new());
        if let Some(v) = measure(&["fp-bw", &name, &sz, &tot]).and_then(|l| l.parse::<f64>().ok()) {
            fp.push(v);
        }
        sink.finish();
        for _ in 0..cfg.reps.min(3) {
            if let Some(v) = measure(&["tcp-bw", &raw_at, &sz, &tot]).and_then(|l| l.parse::<f64>().ok()) {
                tcp.push(v);
            }
        }
        if fp.is_empty() || tcp.is_empty() {
            eprintln!("doca_bench: the link bandwidth row of {size} B failed");
            continue;
        }
        rows.push(Row {
            section: "link",
            name: format!("fast path bandwidth {} MiB over TCP ({})", size >> 20, net.path()),
            unit: "GB/s",
            value: Est::of(&fp),
            p99: None,
            baseline: format!("raw TCP stream ({})", net.path()),
            base: Est::of(&tcp),
            lower_is_better: false,
        });
    }
    raw.finish();
    link_dma_rows(cfg, rows, &net, &host_env, &dpu_env);
    drop(net);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The DMA-across-the-link rows: the DPU side's DMA reads 1 MiB of the host side's export
/// (shared memory and heap memory encrypted, shared memory in plaintext), beside a raw TCP
/// request of 1 MiB from the host side over the same path, measured alternately in the DPU
/// side's process.
fn link_dma_rows(
    cfg: &Cfg,
    rows: &mut Vec<Row>,
    net: &LinkNet,
    host_env: &[(&str, &str)],
    dpu_env: &[(&str, &str)],
) {
    let size = 1usize << 20;
    let total = if cfg.reps < 5 { 16usize << 20 } else { 256 << 20 };
    let raw_bind = format!("{}:0", net.host);
    for (heap, plaintext) in [(false, false), (true, false), (false, true)] {
        let plain = plaintext.then_some((doca_link::remote::PLAINTEXT_ENV, "1"));
        let h_env: Vec<(&str, &str)> = host_env.iter().copied().chain(plain).collect();
        let d_env: Vec<(&str, &str)> = dpu_env.iter().copied().chain(plain).collect();
        let role = if heap { "link-host-heap" } else { "link-host" };
        let mut host = PeerProc::spawn_on(net, 0, &[role, &size.to_string(), &raw_bind], &h_env);
        let line = host.line();
        let mut words = line.split_whitespace().skip(1);
        let (Some(desc), Some(raw_at)) = (words.next(), words.next()) else {
            eprintln!("doca_bench: the DMA-across-the-link host said {line:?}");
            host.finish();
            continue;
        };
        let (reps, iters) = (cfg.reps.to_string(), copies(total, size).to_string());
        let mut dpu =
            PeerProc::spawn_on(net, 1, &["link-dpu", &size.to_string(), desc, raw_at, &reps, &iters], &d_env);
        let result = dpu.line();
        dpu.finish();
        host.finish();
        let nums: Vec<f64> = result.split_whitespace().skip(1).filter_map(|w| w.parse().ok()).collect();
        let [t_dma, sp_dma, t_raw, sp_raw] = nums[..] else {
            eprintln!("doca_bench: the DMA-across-the-link DPU said {result:?}");
            continue;
        };
        rows.push(Row {
            section: "link",
            name: format!(
                "DMA read of host {} {} over TCP ({}{})",
                if heap { "heap memory" } else { "memory" },
                kib(size),
                net.path(),
                if plaintext { ", plaintext" } else { "" }
            ),
            unit: "GB/s",
            value: Est { v: size as f64 / t_dma, sp: sp_dma },
            p99: None,
            baseline: format!("raw TCP request {} ({})", kib(size), net.path()),
            base: Est { v: size as f64 / t_raw, sp: sp_raw },
            lower_is_better: false,
        });
    }
}

/// Erasure coding rows: a create task (8 data + 4 redundancy blocks, Cauchy) over 64 KiB and
/// 1 MiB of data, resubmitted as soon as it completes, beside the same matrix applied to the
/// very same bytes by calling the crate directly (`Matrix::apply`: the same GF(2^8) code, no
/// context, task or queue). GB/s of data coded.
fn ec_rows(cfg: &Cfg, rows: &mut Vec<Row>) {
    use doca_erasure_coding::{CreateTask, Ec, MatrixType};
    let dev = doca_core::open_device_with_pci("03:00.0", None).expect("device");
    let pe = Pe::create().expect("pe");
    let ec = Ec::create(&dev).expect("ec context");
    pe.connect_ctx(&ec.as_ctx()).expect("connect");
    let (done, failed) = (Rc::new(Cell::new(0u64)), Rc::new(Cell::new(0u64)));
    let (d, f) = (done.clone(), failed.clone());
    ec.task_create_set_conf(
        move |_: CreateTask, _, _| d.set(d.get() + 1),
        move |_: CreateTask, _, _| f.set(f.get() + 1),
        4,
    )
    .expect("conf");
    ec.as_ctx().start().expect("start");
    let inv = doca_buf::Inventory::create(8).expect("inventory");
    inv.start().expect("inventory start");
    let map = |data: Vec<u8>| {
        let m = doca_mmap::Mmap::create().expect("map");
        m.set_memrange(data).expect("memrange");
        m.set_permissions(doca_mmap::AccessFlags::LOCAL_READ_WRITE).expect("permissions");
        m.add_dev(&dev).expect("add dev");
        m.start().expect("map start");
        m
    };
    let (k, m) = (8usize, 4usize);
    let coding = ec.matrix_create(MatrixType::Cauchy, k, m).expect("matrix");
    let total = if cfg.reps < 5 { 32usize << 20 } else { 512 << 20 };
    for size in [64usize << 10, 1 << 20] {
        let block = size / k;
        let data: Vec<u8> =
            (0..size).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3]).collect();
        let (sm, dm) = (map(data), map(vec![0; m * block]));
        let src = inv.buf_get_data_at(&sm, 0, size).expect("source");
        let dst = inv.buf_get_at(&dm, 0, m * block).expect("destination");
        let task = |n: u64| {
            for _ in 0..n {
                let t = ec.task_create_alloc_init(
                    Some(&coding),
                    Some(&src),
                    Some(&dst),
                    doca_core::Data::from_u64(0),
                );
                t.expect("task").submit().expect("submit");
                let want = done.get() + 1;
                while done.get() < want && failed.get() == 0 {
                    pe.progress();
                }
                dst.reset_data_len().expect("reset");
            }
        };
        let (a, b) = (sm.access().expect("started"), dm.access().expect("started"));
        let direct = |n: u64| {
            let from = a.bytes(0, size).expect("nothing borrows the source");
            let mut to = b.bytes_mut(0, m * block).expect("nothing borrows the destination");
            let ins: Vec<&[u8]> = from.chunks(block).collect();
            let mut outs: Vec<&mut [u8]> = to.chunks_mut(block).collect();
            for _ in 0..n {
                coding.apply(black_box(&ins), &mut outs).expect("apply");
            }
        };
        let (t_task, t_direct) = measure_pair(cfg.reps, copies(total, size), task, direct);
        assert_eq!(failed.get(), 0, "an erasure coding task failed");
        rows.push(Row {
            section: "ec",
            name: format!("ec create task 8+4, {} of data", kib(size)),
            unit: "GB/s",
            value: t_task.map(|t| size as f64 / t),
            p99: None,
            baseline: format!("Matrix::apply {}", kib(size)),
            base: t_direct.map(|t| size as f64 / t),
            lower_is_better: false,
        });
        drop((src, dst));
    }
}

/// DOCA Compress: a compress-deflate task (raw DEFLATE level 6, with the CRC-32 and Adler-32
/// a task reports) resubmitted as it completes, beside the same work done by the same crates
/// called directly (`miniz_oxide` at level 6, `crc32fast`, `adler2`) in the same run.
fn compress_rows(cfg: &Cfg, rows: &mut Vec<Row>) {
    use doca_compress::{Compress, CompressDeflateTask};
    use miniz_oxide::deflate::core::{compress, CompressorOxide, TDEFLFlush};
    use miniz_oxide::DataFormat;
    let dev = doca_core::open_device_with_pci("03:00.0", None).expect("device");
    let pe = Pe::create().expect("pe");
    let cm = Compress::create(&dev).expect("compress context");
    pe.connect_ctx(&cm.as_ctx()).expect("connect");
    let (done, failed) = (Rc::new(Cell::new(0u64)), Rc::new(Cell::new(0u64)));
    let (d, f) = (done.clone(), failed.clone());
    cm.task_compress_deflate_set_conf(
        move |_: CompressDeflateTask, _, _| d.set(d.get() + 1),
        move |_: CompressDeflateTask, _, _| f.set(f.get() + 1),
        4,
    )
    .expect("conf");
    cm.as_ctx().start().expect("start");
    let inv = doca_buf::Inventory::create(8).expect("inventory");
    inv.start().expect("inventory start");
    let map = |data: Vec<u8>| {
        let m = doca_mmap::Mmap::create().expect("map");
        m.set_memrange(data).expect("memrange");
        m.set_permissions(doca_mmap::AccessFlags::LOCAL_READ_WRITE).expect("permissions");
        m.add_dev(&dev).expect("add dev");
        m.start().expect("map start");
        m
    };
    let total = if cfg.reps < 5 { 16usize << 20 } else { 128 << 20 };
    let zlib = doca_samples::bench_sysref::Zlib::load();
    for size in [64usize << 10, 1 << 20] {
        // Text-like data that compresses about 3:1.
        let mut data = Vec::with_capacity(size);
        let mut x = 0x9e37_79b9u32;
        while data.len() < size {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            data.extend_from_slice(format!("line {} holds {} ", data.len() % 997, x % 1000).as_bytes());
        }
        data.truncate(size);
        let room = size + size / 8 + 1024;
        let (sm, dm) = (map(data), map(vec![0; room]));
        let src = inv.buf_get_data_at(&sm, 0, size).expect("source");
        let dst = inv.buf_get_at(&dm, 0, room).expect("destination");
        let task = |n: u64| {
            for _ in 0..n {
                let t =
                    cm.task_compress_deflate_alloc_init(Some(&src), Some(&dst), doca_core::Data::from_u64(0));
                t.expect("task").submit().expect("submit");
                let want = done.get() + 1;
                while done.get() < want && failed.get() == 0 {
                    pe.progress();
                }
                dst.reset_data_len().expect("reset");
            }
        };
        let (a, b) = (sm.access().expect("started"), dm.access().expect("started"));
        let mut c = Box::<CompressorOxide>::default();
        let direct = |n: u64| {
            let from = a.bytes(0, size).expect("nothing borrows the source");
            let mut to = b.bytes_mut(0, room).expect("nothing borrows the destination");
            for _ in 0..n {
                c.reset();
                c.set_format_and_level(DataFormat::Raw, 6);
                let (_, _, written) = compress(&mut c, black_box(&from), &mut to, TDEFLFlush::Finish);
                black_box((written, crc32fast::hash(&from), adler2::adler32_slice(&from)));
            }
        };
        // A row of the task's rate beside a baseline's, both in MB/s of input.
        let row = |name: String, t_task: Est, baseline: String, t_base: Est| Row {
            section: "compress",
            name,
            unit: "MB/s",
            value: t_task.map(|t| size as f64 / t * 1e3),
            p99: None,
            baseline,
            base: t_base.map(|t| size as f64 / t * 1e3),
            lower_is_better: false,
        };
        let (t_task, t_direct) = measure_pair(cfg.reps, copies(total, size), &task, direct);
        assert_eq!(failed.get(), 0, "a compress task failed");
        rows.push(row(
            format!("compress deflate task, {}", kib(size)),
            t_task,
            format!("miniz_oxide+crc+adler {}", kib(size)),
            t_direct,
        ));
        // The system zlib at the same level (compress2: deflate and Adler-32, then crc32), as
        // a reference, interleaved with the task again.
        match &zlib {
            Ok(z) => {
                let from = a.bytes(0, size).expect("nothing borrows the source").to_vec();
                let mut to = vec![0u8; room];
                let system = |n: u64| {
                    for _ in 0..n {
                        black_box(z.compress_crc(black_box(&from), &mut to, 6).expect("zlib compress2"));
                    }
                };
                let (t_task, t_zlib) = measure_pair(cfg.reps, copies(total, size), &task, system);
                assert_eq!(failed.get(), 0, "a compress task failed");
                rows.push(row(
                    format!("compress deflate task, {} (reference)", kib(size)),
                    t_task,
                    format!("system zlib level 6 + crc32 {}", kib(size)),
                    t_zlib,
                ));
            }
            Err(why) => eprintln!("doca_bench: the zlib reference row is skipped: {why}"),
        }
        drop((src, dst));
    }
}

/// The two sides of the link rows (`--role se-link-host|se-link-dpu N`), each with its own
/// fabric directory and the link's variables, on loopback.
///
/// The DPU side echoes 8-byte messages on a plain TCP socket (the baseline: its listener's
/// port is printed first), imports the host's event as a context and, `N` times, sleeps in
/// epoll on its engine until a wait task for the host's odd value completes, then sets the
/// next even value (one request over the link); then it echoes on until its stdin closes. The host side exports the event, and per
/// iteration sets an odd value and blocks until the DPU's even value is there: one round
/// trip. It measures both, interleaved, and prints `se P50 P99 SPREAD` and `tcp P50 P99 SPREAD` (ns; the
/// p50's spread as [`one_way`] has it).
fn se_link_peer(role: &str, n: u64) -> ExitCode {
    use doca_sync_event::{Cmp, SyncEvent, WaitMode};
    let mut stdin = std::io::stdin().lock().lines();
    let mut read = || stdin.next().and_then(Result::ok).unwrap_or_default();
    let fail = |what: &str, e: doca_core::Error| {
        eprintln!("doca_bench link peer ({role}): {what}: {}", e.name());
        ExitCode::FAILURE
    };
    match role {
        "dpu" => {
            pin(1);
            let Ok(tcp) = std::net::TcpListener::bind("127.0.0.1:0") else { return ExitCode::FAILURE };
            println!("port {}", tcp.local_addr().map(|a| a.port()).unwrap_or(0));
            std::thread::spawn(move || {
                let Ok((mut s, _)) = tcp.accept() else { return };
                let _ = s.set_nodelay(true);
                let mut b = [0u8; 8];
                while std::io::Read::read_exact(&mut s, &mut b).is_ok() {
                    if std::io::Write::write_all(&mut s, &b).is_err() {
                        return;
                    }
                }
            });
            let blob = read();
            let Some(blob) = blob.strip_prefix("blob ").and_then(from_hex) else { return ExitCode::FAILURE };
            let run = || -> Result<(), doca_core::Error> {
                let dev = doca_core::open_device_with_pci("03:00.0", None)?;
                let ev = SyncEvent::create_from_export(&dev, &blob)?;
                let pe = Pe::create()?;
                let ctx = ev.as_ctx()?;
                pe.connect_ctx(&ctx)?;
                let status: Rc<Cell<Option<Result<(), doca_core::Error>>>> = Rc::default();
                let (a, b) = (status.clone(), status.clone());
                ev.task_wait_eq_set_conf(
                    move |t, _, _| a.set(Some(t.status())),
                    move |t, _, _| b.set(Some(t.status())),
                    1,
                )?;
                ctx.start()?;
                while pe.progress() {}
                println!("ok");
                let _ = std::io::stdout().flush();
                for i in 1..=n {
                    ev.task_wait_eq_alloc_init(2 * i - 1, u64::MAX, doca_core::Data::NONE)?
                        .submit()
                        .map_err(|r| r.error)?;
                    let done = loop {
                        while pe.progress() {}
                        if let Some(s) = status.take() {
                            break s;
                        }
                        pe.wait(None)?;
                    };
                    if done.is_err() {
                        return Ok(()); // the host destroyed the event: the end
                    }
                    ev.update_set(2 * i)?;
                }
                Ok(())
            };
            if let Err(e) = run() {
                return fail("the event", e);
            }
            // The host side's last raw TCP round trip comes after this side's last update:
            // the echo thread (and so the process) stays until the bench closes stdin.
            for _ in stdin {}
        }
        "host" => {
            pin(0);
            let mut run = || -> Result<(Vec<f64>, Vec<f64>), doca_core::Error> {
                let dev = doca_core::open_device_with_pci("b1:00.0", None)?;
                let ev = SyncEvent::create()?;
                ev.add_publisher_location(doca_sync_event::Location::RemotePci)?;
                ev.start()?;
                let blob = ev.export_to_remote_pci(&dev)?;
                println!("blob {}", blob.iter().map(|b| format!("{b:02x}")).collect::<String>());
                let _ = std::io::stdout().flush();
                let port = read();
                let port: u16 = port.strip_prefix("port ").and_then(|p| p.parse().ok()).unwrap_or(0);
                let mut tcp = std::net::TcpStream::connect(("127.0.0.1", port))
                    .map_err(|_| doca_core::Error::NotFound)?;
                let _ = tcp.set_nodelay(true);
                let (mut se, mut raw) = (Vec::with_capacity(n as usize), Vec::with_capacity(n as usize));
                let mut i = 0u64;
                let mut b = [7u8; 8];
                // Blocks of each, alternated: a noisy machine's phases weigh on both alike.
                let block = (n / 10).max(1);
                while i < n {
                    for _ in 0..block.min(n - i) {
                        i += 1;
                        let t = Instant::now();
                        ev.update_set(2 * i - 1)?;
                        ev.wait(Cmp::Eq, 2 * i, u64::MAX, WaitMode::Sleep)?;
                        se.push(ns(t));
                        let t = Instant::now();
                        std::io::Write::write_all(&mut tcp, &b).map_err(|_| doca_core::Error::IoFailed)?;
                        std::io::Read::read_exact(&mut tcp, &mut b)
                            .map_err(|_| doca_core::Error::IoFailed)?;
                        raw.push(ns(t));
                    }
                }
                let _ = ev.stop();
                let _ = ev.destroy();
                Ok((se, raw))
            };
            match run() {
                Ok((se, raw)) => {
                    // The first tenth is a warm-up.
                    let skip = |v: Vec<f64>| v[v.len() / 10..].to_vec();
                    // Round trips: p50, p99 and the p50's spread (see `one_way`).
                    for (tag, v) in [("se", se), ("tcp", raw)] {
                        let (p50, p99) = one_way(&skip(v));
                        println!("{tag} {} {} {}", 2.0 * p50.v, 2.0 * p99, p50.sp);
                    }
                }
                Err(e) => return fail("the event", e),
            }
        }
        _ => return ExitCode::FAILURE,
    }
    ExitCode::SUCCESS
}

/// The link rows of sync events: an update→wake round trip between two processes that share
/// nothing but the encrypted TCP link on loopback (a fabric directory each), beside a raw
/// TCP ping-pong of 8 bytes between the same two processes.
fn se_link_rows(cfg: &Cfg, rows: &mut Vec<Row>) {
    use doca_link::remote::{keys, CONNECT_ENV, KEYS_ENV, LISTEN_ENV};
    let dir = std::env::temp_dir().join(format!("doca-bench-link-{}", std::process::id()));
    let (k, fh, fd) = (dir.join("keys"), dir.join("h"), dir.join("d"));
    let made = (|| -> std::io::Result<()> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().mode(0o700).recursive(true).create(&fh)?;
        std::fs::DirBuilder::new().mode(0o700).recursive(true).create(&fd)?;
        Ok(())
    })();
    if made.is_err() || keys::generate(&k, true).is_err() {
        eprintln!("doca_bench: cannot make {}: no link rows", dir.display());
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let at = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.to_string())
        .unwrap_or_default();
    let n = (cfg.lat_n / 10).max(200).to_string();
    let fabric = doca_link::FABRIC_ENV;
    let mut dpu = PeerProc::spawn_env(
        &["se-link-dpu", &n],
        &[(LISTEN_ENV, at.as_ref()), (KEYS_ENV, k.as_os_str()), (fabric, fd.as_os_str())],
    );
    let mut host = PeerProc::spawn_env(
        &["se-link-host", &n],
        &[(CONNECT_ENV, at.as_ref()), (KEYS_ENV, k.as_os_str()), (fabric, fh.as_os_str())],
    );
    let port = dpu.line();
    let blob = host.line();
    dpu.send(&blob);
    let imported = dpu.line();
    host.send(&port);
    let parse = |l: String, tag: &str| -> Option<(Est, f64)> {
        let mut w = l.strip_prefix(tag)?.split_whitespace().map(|x| x.parse::<f64>().ok());
        let (p50, p99, sp) = (w.next()??, w.next()??, w.next()??);
        Some((Est { v: p50, sp }, p99))
    };
    let se = parse(host.line(), "se ");
    let tcp = parse(host.line(), "tcp ");
    host.finish();
    dpu.finish();
    let _ = std::fs::remove_dir_all(&dir);
    let (Some(se), Some(tcp), "ok") = (se, tcp, imported.as_str()) else {
        eprintln!("doca_bench: the link rows failed (import: {imported:?})");
        return;
    };
    rows.push(Row {
        section: "baseline",
        name: "raw TCP ping-pong RTT 8 B, loopback".into(),
        unit: "ns",
        value: tcp.0,
        p99: Some(tcp.1),
        baseline: "-".into(),
        base: tcp.0,
        lower_is_better: true,
    });
    rows.push(Row {
        section: "link",
        name: "sync event update→wake RTT, loopback".into(),
        unit: "ns",
        value: se.0,
        p99: Some(se.1),
        baseline: "raw TCP ping-pong RTT".into(),
        base: tcp.0,
        lower_is_better: true,
    });
}

/// A spread as the table shows it: `±x %`, or `-` for a figure measured once.
fn spread_text(e: Est) -> String {
    if e.sp.is_finite() {
        format!("{:.0}%", e.sp * 100.0)
    } else {
        "-".into()
    }
}

/// A number for the JSON file (`null` when not finite).
fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.4}")
    } else {
        "null".into()
    }
}

/// Whether part `p` of a section runs: every part unless some `<prefix>…` part is named.
fn part_wanted(only: &[String], prefix: &str, p: &str) -> bool {
    !only.iter().any(|o| o.starts_with(prefix)) || only.iter().any(|o| o == p)
}

/// `--against`: alternates this build and `other` (see [`doca_samples::against`]).
fn against(args: &Args, other: &std::path::Path) -> ExitCode {
    use doca_samples::against::{compare, run_once, table};
    let me = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("doca_bench: cannot find this program: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut flags = Vec::new();
    if args.smoke {
        flags.push("--smoke".to_string());
    }
    if !args.only.is_empty() {
        flags.push("--only".to_string());
        flags.push(args.only.join(","));
    }
    let dir = std::env::temp_dir().join(format!("doca-bench-against-{}", std::process::id()));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("doca_bench: {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let (mut mine, mut theirs) = (Vec::new(), Vec::new());
    let runs = args.runs as usize;
    for i in 0..runs {
        eprintln!("doca_bench --against: run {} of {runs} (this build, then the other)", i + 1);
        for (program, tag, out) in [(&me, "this", &mut mine), (&other.to_path_buf(), "other", &mut theirs)] {
            match run_once(program, &flags, &dir, &format!("{tag}-{i}")) {
                Ok(rows) => out.push(rows),
                Err(why) => {
                    eprintln!("doca_bench --against: {why}");
                    let _ = std::fs::remove_dir_all(&dir);
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    print!("{}", table(&compare(&mine, &theirs), runs, other));
    ExitCode::SUCCESS
}

/// The RDMA rows: two processes, a context each, connected. Write bandwidth beside memcpy of
/// the same size (interleaved), send/receive one-way 64 B beside the Comm Channel control
/// path's one-way measured just before, a 64 B read's round trip beside the raw ring's round
/// trip, and a pipelined send rate (64 in flight) beside the raw SPSC stream.
fn rdma_rows(cfg: &Cfg, base: &Base, rows: &mut Vec<Row>) {
    use doca_samples::bench_rdma::{from_hex, hex, Side};
    let pid = std::process::id();
    // The control path's one-way, 64 B, busy: the baseline of the send/receive row.
    let name = format!("bench-rdma-cc-{pid}");
    let mut p = PeerProc::spawn(&["cc-echo", &name, "busy"]);
    assert_eq!(p.line(), "ready");
    let c = CcSide::client(&name, 1024, 1024).expect("client");
    let msg = [5u8; 64];
    let mut rtts = Vec::with_capacity(cfg.lat_n as usize);
    for i in 0..cfg.lat_n + cfg.lat_n / 10 {
        if i == cfg.lat_n / 10 {
            rtts.clear();
        }
        let before = c.received.get();
        let t = Instant::now();
        if !c.send(&msg) || !run_until(&[&c.pe], false, || c.received.get() > before) {
            break;
        }
        rtts.push(ns(t));
    }
    drop(c);
    p.finish();
    let cc_one_way = one_way(&rtts).0;

    let connect = |mode: &str| -> (Side, PeerProc) {
        let (mut side, desc, export) = Side::new().expect("an RDMA context");
        let mut p = PeerProc::spawn(&["rdma", mode]);
        let line = p.line();
        let mut w = line.split_whitespace().skip(1).map(from_hex);
        let (Some(Some(d)), Some(Some(e))) = (w.next(), w.next()) else { panic!("rdma peer: {line}") };
        side.connect(&d, &e).expect("connect");
        p.send(&format!("connect {} {}", hex(&desc), hex(&export)));
        assert_eq!(p.line(), "ready");
        (side, p)
    };
    let (side, p) = connect("echo");
    let rtts = side.ping(64, cfg.lat_n);
    let name = "send/receive one-way 64 B, busy progress".to_string();
    rows.push(latency_row("rdma", name, rtts, ("cc control path one-way 64 B".into(), cc_one_way)));
    // A read's round trip: the peer's bytes into this side's buffer.
    let (src, dst) = (side.remote(64, true).expect("remote"), side.local(4096, 64).expect("local"));
    let mut rtts = Vec::with_capacity(cfg.lat_n as usize);
    for i in 0..cfg.lat_n + cfg.lat_n / 10 {
        if i == cfg.lat_n / 10 {
            rtts.clear();
        }
        let t = Instant::now();
        if !side.read_once(&src, &dst) {
            break;
        }
        rtts.push(ns(t));
    }
    let (p50, p99) = one_way(&rtts);
    let ring_rtt = base.ring_now(cfg, 64).1.map(|t| 2.0 * t);
    rows.push(Row {
        section: "rdma",
        name: "read round trip 64 B".into(),
        unit: "ns",
        value: p50.map(|t| 2.0 * t),
        p99: Some(2.0 * p99),
        baseline: "raw shm ring round trip 64 B".into(),
        base: ring_rtt,
        lower_is_better: true,
    });
    for size in [64usize << 10, 1 << 20] {
        let (src, dst) = (side.local(0, size).expect("local"), side.remote(size, false).expect("remote"));
        let (from, mut to) = (vec![1u8; size], vec![0u8; size]);
        let iters = ((cfg.big * 4) / size).clamp(16, 100_000) as u64;
        let mut ok = true;
        let (t_write, t_copy) = measure_pair(
            cfg.reps,
            iters,
            |k| {
                for _ in 0..k {
                    ok &= side.write_once(&src, &dst);
                }
            },
            |k| {
                for _ in 0..k {
                    to.copy_from_slice(black_box(&from));
                    black_box(&to);
                }
            },
        );
        rows.push(Row {
            section: "rdma",
            name: format!("write bandwidth {}", kib(size)),
            unit: "GB/s",
            value: if ok { t_write.map(|t| size as f64 / t) } else { Est::once(f64::NAN) },
            p99: None,
            baseline: format!("memcpy {}", kib(size)),
            base: t_copy.map(|t| size as f64 / t),
            lower_is_better: false,
        });
    }
    drop(side);
    p.finish();
    let (side, p) = connect("sink");
    let mut rates = Vec::new();
    for _ in 0..cfg.reps.min(5) {
        rates.push(side.rate(64, cfg.rate_n / 4, 64));
    }
    drop(side);
    p.finish();
    rows.push(Row {
        section: "rdma",
        name: "send rate 64 B, 64 in flight".into(),
        unit: "Mmsg/s",
        value: Est::of(&rates).map(|r| r / 1e6),
        p99: None,
        baseline: "raw SPSC stream, 64 B slots".into(),
        base: base.stream.map(|r| r / 1e6),
        lower_is_better: false,
    });
}

fn main() -> ExitCode {
    let args = Args::parse();
    if !args.role.is_empty() {
        return peer(&args.role);
    }
    if let Some(other) = &args.against {
        return against(&args, other);
    }
    pin(0);
    let cfg = if args.smoke {
        Cfg { reps: 3, iters: 20_000, lat_n: 2_000, rate_n: 20_000, big: 8 << 20 }
    } else {
        Cfg { reps: 7, iters: 2_000_000, lat_n: 100_000, rate_n: 1_000_000, big: 64 << 20 }
    };
    let mut rows = Vec::new();
    let wanted =
        |s: &str| args.only.is_empty() || args.only.iter().any(|o| o == s || o.starts_with(&format!("{s}-")));
    if wanted("engine") {
        engine(&cfg, &mut rows);
    }
    if wanted("dma") {
        dma_rows(&cfg, &mut rows);
    }
    if wanted("ec") {
        ec_rows(&cfg, &mut rows);
    }
    if wanted("aes_gcm") {
        aes_gcm_rows(&cfg, &mut rows);
    }
    if wanted("compress") {
        compress_rows(&cfg, &mut rows);
    }
    let base = baselines(&cfg);
    let rings = base.ring.iter().map(|(size, v)| (format!("raw shm ring one-way {size} B"), *v));
    let kernel = [("SEQPACKET ping-pong", base.sock), ("eventfd ping-pong", base.eventfd)]
        .into_iter()
        .map(|(name, v)| (format!("{name} one-way"), v));
    for (name, v) in rings.chain(kernel) {
        rows.push(Row {
            section: "baseline",
            name,
            unit: "ns",
            value: v.0,
            p99: Some(v.1),
            baseline: "-".into(),
            base: v.0,
            lower_is_better: true,
        });
    }
    rows.push(Row {
        section: "baseline",
        name: "raw SPSC stream rate, 64 B slots".into(),
        unit: "Mmsg/s",
        value: base.stream.map(|r| r / 1e6),
        p99: None,
        baseline: "-".into(),
        base: base.stream.map(|r| r / 1e6),
        lower_is_better: false,
    });
    if wanted("control") {
        let part = |p: &str| part_wanted(&args.only, "control-", p);
        let parts = (part("control-latency"), part("control-rate"), part("control-scale"));
        control_path(&cfg, &base, &mut rows, parts);
    }
    if wanted("fast") {
        let part = |p: &str| part_wanted(&args.only, "fast-", p);
        fast_path(&cfg, &base, &mut rows, part("fast-latency"), part("fast-bandwidth"));
    }
    if wanted("link") {
        link_rows(&cfg, &mut rows);
    }
    if wanted("rdma") {
        rdma_rows(&cfg, &base, &mut rows);
    }
    if wanted("link") {
        se_link_rows(&cfg, &mut rows);
    }
    #[cfg(feature = "iceoryx2")]
    if wanted("iceoryx2") {
        iceoryx2_rows(&cfg, &base, &mut rows);
    }

    println!(
        "{:<14} {:<48} {:>10} {:>5} {:>10} {:<7} {:<26} {:>10} {:>5} {:>7}",
        "section", "measurement", "p50/value", "±", "p99", "unit", "baseline", "value", "±", "ratio"
    );
    for r in &rows {
        let p99 = r.p99.map_or(String::from("-"), |v| format!("{v:.1}"));
        println!(
            "{:<14} {:<48} {:>10.2} {:>5} {:>10} {:<7} {:<26} {:>10.2} {:>5} {:>6.2}x{}",
            r.section,
            r.name,
            r.value.v,
            spread_text(r.value),
            p99,
            r.unit,
            r.baseline,
            r.base.v,
            spread_text(r.base),
            r.ratio(),
            if r.noisy() { "  noisy" } else { "" }
        );
    }
    println!("(ratio: how many times worse than the baseline; 1.00x = as good, below 1 = better)");
    println!(
        "(±: the spread of a figure's repetitions, half their range over the median (a latency's: of its {} blocks' p50s); \
         \"noisy\": a spread beyond ±{:.0} % on either side, the ratio tells nothing; -: measured once)",
        bench::LATENCY_BLOCKS,
        doca_samples::against::NOISY * 100.0
    );
    if let Some(path) = args.json {
        let items: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "  {{\"section\": \"{}\", \"name\": \"{}\", \"unit\": \"{}\", \"value\": {:.3}, \"spread\": {}, \"p99\": {}, \"baseline\": \"{}\", \"baseline_value\": {:.3}, \"baseline_spread\": {}, \"ratio\": {:.3}, \"noisy\": {}}}",
                    r.section,
                    r.name,
                    r.unit,
                    r.value.v,
                    json_num(r.value.sp),
                    r.p99.map_or("null".to_string(), |v| format!("{v:.3}")),
                    r.baseline,
                    r.base.v,
                    json_num(r.base.sp),
                    r.ratio(),
                    r.noisy()
                )
            })
            .collect();
        let mut f = match std::fs::File::create(&path) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("cannot write {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        };
        let _ = writeln!(f, "[\n{}\n]", items.join(",\n"));
    }
    ExitCode::SUCCESS
}
