//! Helpers for the cross-process tests: a peer process driven line by line over its stdin
//! and stdout, with a deadline on every answer so that a stuck peer fails the test instead of
//! hanging it.

#![forbid(unsafe_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

/// `DOCA_TEST_PEER_WRAP`: a command (words separated by spaces) every peer is started
/// under, e.g. `unshare --pid --fork --mount-proc --kill-child` to run each peer in a PID
/// namespace of its own, as a container would ("Host and DPU apart" in the book).
pub const PEER_WRAP_ENV: &str = "DOCA_TEST_PEER_WRAP";

/// The command that starts `program`, under [`PEER_WRAP_ENV`]'s wrapper if it is set.
pub fn wrapped(program: &str) -> Command {
    let wrap = std::env::var(PEER_WRAP_ENV).unwrap_or_default();
    let mut words = wrap.split_whitespace();
    match words.next() {
        None => Command::new(program),
        Some(first) => {
            let mut c = Command::new(first);
            c.args(words).arg(program);
            c
        }
    }
}

/// The first child of process `pid` (waiting a little for it to be started): the program a
/// wrapper such as `unshare --fork` runs.
pub fn child_of(pid: u32) -> u32 {
    find_child(pid, Wrapped::Child).unwrap_or_else(|| panic!("process {pid} started no program"))
}

/// How a [`Peer`]'s command starts its program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wrapped {
    /// The command is the program.
    No,
    /// A wrapper (`unshare --pid --fork …`) whose first child is the program.
    Child,
    /// A wrapper whose program is its first child in another PID namespace than its own
    /// (one that first runs other commands of its own, e.g. mount(8), as `apart`'s sides
    /// run as another user do).
    NewPidNamespace,
}

/// The child of `pid` that `how` names, waiting for it up to 5 s; `None` when there is none
/// (or `pid` is gone).
fn find_child(pid: u32, how: Wrapped) -> Option<u32> {
    let children = format!("/proc/{pid}/task/{pid}/children");
    let pid_ns = |p: u32| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok();
    let exited = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The state follows the command name's closing parenthesis: Z (or X) once it exited.
        stat.rsplit_once(')')
            .is_none_or(|(_, rest)| matches!(rest.split_whitespace().next(), Some("Z" | "X")))
    };
    for _ in 0..500 {
        if exited() {
            return None;
        }
        let list = std::fs::read_to_string(&children).ok()?;
        let mut kids = list.split_whitespace().filter_map(|p| p.parse::<u32>().ok());
        let found = match how {
            Wrapped::No => return Some(pid),
            Wrapped::Child => kids.next(),
            Wrapped::NewPidNamespace => {
                let own = pid_ns(pid)?;
                kids.find(|&k| pid_ns(k).is_some_and(|ns| ns != own))
            }
        };
        if found.is_some() {
            return found;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

/// Whether this machine lets the tests make PID namespaces (root and `unshare`): when not,
/// says so on stderr for `what`.
pub fn pid_namespaces(what: &str) -> bool {
    let ok = rustix::process::getuid().is_root()
        && std::process::Command::new("unshare")
            .args(["--pid", "--fork", "--mount-proc", "true"])
            .status()
            .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipped: {what} needs PID namespaces (root and unshare(1))");
    }
    ok
}

/// Whether this test process ignores `sig` (its children then ignore it too, and the library
/// leaves a signal alone unless it is at its default action): a suite started in the
/// background of a non-interactive shell ignores SIGINT. When it does, says so on stderr for
/// `what`, which is then skipped.
pub fn signal_ignored(sig: rustix::process::Signal, what: &str) -> bool {
    let mask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("SigIgn:").map(|m| m.trim().to_string())))
        .and_then(|m| u64::from_str_radix(&m, 16).ok())
        .unwrap_or(0);
    let ignored = mask & (1 << (sig.as_raw() - 1)) != 0;
    if ignored {
        eprintln!("skipped: {what} with {sig:?}: this test process ignores it (started in the background?)");
    }
    ignored
}

pub mod apart;
pub mod rdma_hand;

/// How long a peer may take to answer one line.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(60);

/// A child process answering one line per command.
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    name: String,
    /// Whether the program runs under a wrapper (`unshare …`): the child is the wrapper.
    wrapped: Wrapped,
    /// Its stderr, when captured ([`Peer::from_command`]).
    stderr: Option<std::sync::Arc<std::sync::Mutex<Vec<u8>>>>,
}

/// How a peer ended ([`Peer::output`]).
#[derive(Debug)]
pub struct Ended {
    /// Whether it exited 0.
    pub success: bool,
    /// The lines it printed that nobody read yet, each ending in a newline.
    pub stdout: String,
    /// Its stderr (its log), when captured.
    pub stderr: String,
}

impl Peer {
    /// Starts `program` with `args`; its stderr goes to the test's stderr.
    pub fn spawn(program: &str, args: &[&str]) -> Peer {
        Peer::start(program, args, Stdio::inherit(), &[])
    }

    /// Starts `program` with `args`, its stderr (its log) written to `log`.
    pub fn spawn_logged(program: &str, args: &[&str], log: &std::path::Path) -> Peer {
        Peer::spawn_logged_env(program, args, log, &[])
    }

    /// [`Peer::spawn_logged`] with environment variables `env` set for the peer alone.
    pub fn spawn_logged_env(
        program: &str,
        args: &[&str],
        log: &std::path::Path,
        env: &[(&str, &str)],
    ) -> Peer {
        let file =
            std::fs::File::create(log).unwrap_or_else(|e| panic!("cannot create {}: {e}", log.display()));
        Peer::start(program, args, Stdio::from(file), env)
    }

    /// Starts `program` with `args` under the command `prefix` (such as `ip netns exec
    /// NAME`, which runs it in another network namespace as the same process), with `env`,
    /// its stderr written to `log`.
    pub fn spawn_under(
        prefix: &[&str],
        program: &str,
        args: &[&str],
        log: &std::path::Path,
        env: &[(&str, &str)],
    ) -> Peer {
        let file =
            std::fs::File::create(log).unwrap_or_else(|e| panic!("cannot create {}: {e}", log.display()));
        let mut cmd = Command::new(prefix.first().copied().unwrap_or(program));
        if !prefix.is_empty() {
            cmd.args(&prefix[1..]).arg(program);
        }
        cmd.args(args).envs(env.iter().copied()).stderr(Stdio::from(file));
        Peer::launch(cmd, program, Wrapped::No, None)
    }

    fn start(program: &str, args: &[&str], stderr: Stdio, env: &[(&str, &str)]) -> Peer {
        let mut cmd = wrapped(program);
        cmd.args(args).envs(env.iter().copied()).stderr(stderr);
        let wrap = std::env::var_os(PEER_WRAP_ENV).is_some_and(|w| !w.is_empty());
        Peer::launch(cmd, program, if wrap { Wrapped::Child } else { Wrapped::No }, None)
    }

    /// Starts `cmd` (stdin and stdout piped, stderr captured: [`Peer::stderr`]), named
    /// `name` in messages; `wrapped` says how `cmd` starts the program ([`Peer::pid`]). The
    /// way [`apart`] starts its sides.
    pub fn from_command(mut cmd: Command, name: &str, wrapped: Wrapped) -> Peer {
        cmd.stderr(Stdio::piped());
        let captured = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut peer = Peer::launch(cmd, name, wrapped, Some(captured.clone()));
        if let Some(mut err) = peer.child.stderr.take() {
            std::thread::spawn(move || {
                use std::io::Read;
                let mut chunk = [0u8; 4096];
                while let Ok(n @ 1..) = err.read(&mut chunk) {
                    captured.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(&chunk[..n]);
                }
            });
        }
        peer
    }

    fn launch(
        mut cmd: Command,
        program: &str,
        wrapped: Wrapped,
        stderr: Option<std::sync::Arc<std::sync::Mutex<Vec<u8>>>>,
    ) -> Peer {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let name = program.rsplit('/').next().unwrap_or(program).to_string();
        Peer { child, stdin, lines, name, wrapped, stderr }
    }

    /// What it wrote on stderr so far (empty unless captured: [`Peer::from_command`]).
    pub fn stderr(&self) -> String {
        self.stderr.as_ref().map_or_else(String::new, |s| {
            String::from_utf8_lossy(&s.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
        })
    }

    /// Closes stdin, waits (at most [`ANSWER_DEADLINE`]) for the exit and for the end of its
    /// output: whether it exited 0, the lines nobody read and its captured stderr. Panics,
    /// naming the peer and with what it wrote, when it does not exit in time.
    pub fn output(mut self) -> Ended {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + ANSWER_DEADLINE;
        let status = loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("{}: did not exit within {ANSWER_DEADLINE:?}; its log:\n{}", self.name, self.stderr());
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let mut stdout = String::new();
        // The reader ends at the end of the pipe: every holder of its end has exited.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            stdout.push_str(&line);
            stdout.push('\n');
        }
        // The stderr reader likewise (bounded: a grandchild may hold the pipe).
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while self.stderr.as_ref().is_some_and(|s| std::sync::Arc::strong_count(s) > 1)
            && std::time::Instant::now() < end
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        Ended { success: status.success(), stdout, stderr: self.stderr() }
    }

    /// The process id (under a [`PEER_WRAP_ENV`] wrapper: the peer program's, the
    /// wrapper's child, as this process sees it).
    pub fn pid(&self) -> u32 {
        let outer = self.child.id();
        find_child(outer, self.wrapped)
            .unwrap_or_else(|| panic!("{}: process {outer} started no program", self.name))
    }

    /// The program's pid while it runs (under a wrapper: the wrapper's first child); `None`
    /// once it is gone. Never waits long: for a program that may be done before it is
    /// looked at.
    pub fn running_pid(&mut self) -> Option<u32> {
        if self.child.try_wait().ok().flatten().is_some() {
            return None;
        }
        find_child(self.child.id(), self.wrapped)
    }

    /// The pid of the program a wrapper started (`unshare … program`: the wrapper's child).
    pub fn wrapped_pid(&self) -> u32 {
        child_of(self.child.id())
    }

    /// How another peer's log names this peer: `pid N`, or — each peer in a PID namespace of
    /// its own under [`PEER_WRAP_ENV`], where no peer sees another's pid — the words the
    /// library uses for such a process.
    pub fn as_named_by_peers(&self) -> String {
        if self.wrapped != Wrapped::No {
            "a process of another PID namespace".into()
        } else {
            format!("pid {}", self.pid())
        }
    }

    /// Sends one command line.
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{line}")
            .and_then(|_| stdin.flush())
            .unwrap_or_else(|e| panic!("{}: {e}", self.name));
    }

    /// The next line the peer prints (panics after [`ANSWER_DEADLINE`] or at its exit).
    pub fn line(&self) -> String {
        match self.lines.recv_timeout(ANSWER_DEADLINE) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => panic!("{}: no answer within {ANSWER_DEADLINE:?}", self.name),
            Err(RecvTimeoutError::Disconnected) => panic!("{}: exited without answering", self.name),
        }
    }

    /// The next line if one is already there (never waits).
    pub fn try_line(&self) -> Option<String> {
        self.lines.try_recv().ok()
    }

    /// Whether the process has exited (never waits).
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Sends a command and returns the answer.
    pub fn ask(&mut self, line: &str) -> String {
        self.send(line);
        self.line()
    }

    /// Closes stdin and waits (bounded) for a clean exit; returns whether it exited 0.
    pub fn finish(mut self) -> bool {
        drop(self.stdin.take());
        for _ in 0..600 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.success();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{}: did not exit within a minute", self.name)
    }

    /// Kills the peer at once (SIGKILL) and reaps it.
    pub fn kill(mut self) {
        if self.wrapped != Wrapped::No {
            if let Some(pid) = rustix::process::Pid::from_raw(self.pid() as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A fabric directory of this test process's own, set once as its [`doca_link::FABRIC_ENV`]
/// before its first DOCA object ([`doca_link::doctest::PrivateFabric`], kept for the
/// process's life): the one Cargo's runner gives the test binary, or, for a binary run
/// directly, a fresh 0700 directory. The tests of one binary run in parallel threads and
/// share it (name ports per test).
pub fn private_fabric() {
    static DIR: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    DIR.get_or_init(|| std::mem::forget(doca_link::doctest::PrivateFabric::new()));
}

/// The longest one sleep of [`idle`] lasts: how soon a condition the engine cannot signal
/// (a peer's exit, a line on its stdout or stdin) is looked at again.
pub const RECHECK: Duration = Duration::from_millis(10);

/// One step of a test's or test peer's event loop: `pe.progress()`, and when it ran
/// nothing, sleep on the engine's notification handle (DOCA's pattern: request
/// notification, `epoll_wait` on the handle, clear) until the engine has work, at most
/// [`RECHECK`]. Many peers on two cores then sleep instead of spinning (DESIGN §3).
pub fn idle(pe: &doca_core::Pe) {
    if !pe.progress() {
        pe.wait(Some(RECHECK)).expect("sleep on the engine's notification handle");
    }
}

/// [`idle`] for a process with several engines: progresses each, and when none ran
/// anything sleeps until one of them has work (at most [`RECHECK`]). Allocates only on
/// the way to sleep.
pub fn idle_all<'a>(pes: impl Iterator<Item = &'a doca_core::Pe> + Clone) {
    let mut any = false;
    for pe in pes.clone() {
        any |= pe.progress();
    }
    if any {
        return;
    }
    let pes: Vec<&doca_core::Pe> = pes.collect();
    doca_core::Pe::wait_any(&pes, Some(RECHECK)).expect("sleep on the engines' notification handles");
}

/// Which event channel of a legacy endpoint [`ep_sleep`] sleeps on.
#[derive(Clone, Copy, Debug)]
pub enum EpChannel {
    /// Readable when a send can proceed.
    Send,
    /// Readable when a message (or, for a service, a client) arrives.
    Recv,
}

/// Arms a legacy endpoint's send or receive handle and sleeps until it is readable, at
/// most [`RECHECK`] (after which the caller looks again: a handshake in progress, stdin):
/// the legacy API's way to wait instead of a sleep-and-retry loop.
pub fn ep_sleep(ep: &doca_cc::legacy::Endpoint, which: EpChannel) {
    let (send, recv) = ep.get_event_channel().expect("the event channels after listen or connect");
    let fd = match which {
        EpChannel::Send => {
            ep.event_handle_arm_send().expect("arm send");
            send
        }
        EpChannel::Recv => {
            ep.event_handle_arm_recv().expect("arm recv");
            recv
        }
    };
    let mut fds = [rustix::event::PollFd::from_borrowed_fd(fd, rustix::event::PollFlags::IN)];
    let timeout = rustix::time::Timespec { tv_sec: 0, tv_nsec: RECHECK.as_nanos() as i64 };
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(_) | Err(rustix::io::Errno::INTR) => {}
        Err(e) => panic!("poll on the event channel: {e}"),
    }
}

/// A DMA context on the DPU device (03:00.0) with its engine, for the cross-process DMA
/// tests: one memcpy task at a time.
pub struct DpuDma {
    /// The engine.
    pub pe: doca_core::Pe,
    /// The context.
    pub dma: doca_dma::Dma,
    seen: std::rc::Rc<std::cell::RefCell<Vec<Result<(), doca_core::Error>>>>,
}

impl DpuDma {
    /// Created, connected, configured for 8 tasks and started.
    pub fn new() -> DpuDma {
        let dev = doca_core::open_device_with_pci("03:00.0", None).unwrap();
        let pe = doca_core::Pe::create().unwrap();
        let dma = doca_dma::Dma::create(&dev).unwrap();
        pe.connect_ctx(&dma.as_ctx()).unwrap();
        let seen: std::rc::Rc<std::cell::RefCell<Vec<Result<(), doca_core::Error>>>> = Default::default();
        let (a, b) = (seen.clone(), seen.clone());
        dma.task_memcpy_set_conf(
            move |t: doca_dma::MemcpyTask, _, _| a.borrow_mut().push(t.status()),
            move |t: doca_dma::MemcpyTask, _, _| b.borrow_mut().push(t.status()),
            8,
        )
        .unwrap();
        dma.as_ctx().start().unwrap();
        DpuDma { pe, dma, seen }
    }

    /// One task, progressed until it completes (bounded); its status. A failed task stops
    /// the context (as DOCA's engine does): it must reach Idle, and is started again.
    pub fn copy(&self, src: &doca_buf::Buf, dst: &doca_buf::Buf) -> Result<(), doca_core::Error> {
        let before = self.seen.borrow().len();
        self.dma
            .task_memcpy_alloc_init(Some(src), Some(dst), doca_core::Data::NONE)
            .unwrap()
            .submit()
            .unwrap();
        for _ in 0..10_000_000 {
            if self.seen.borrow().len() > before {
                let status = *self.seen.borrow().last().unwrap();
                if status.is_err() {
                    for _ in 0..100 {
                        if self.dma.as_ctx().state() == doca_core::CtxState::Idle {
                            break;
                        }
                        self.pe.progress();
                    }
                    assert_eq!(
                        self.dma.as_ctx().state(),
                        doca_core::CtxState::Idle,
                        "a failed task stops its context"
                    );
                    self.dma.as_ctx().start().unwrap();
                }
                return status;
            }
            self.pe.progress();
        }
        panic!("the DMA engine did not finish");
    }
}

impl Default for DpuDma {
    fn default() -> Self {
        DpuDma::new()
    }
}

/// Sends `packets` garbage handshakes to the service socket at `path`, each on a new
/// connection and carrying `fds`: a hostile peer's descriptor flood. A connection refused
/// for now, a full socket or (not root) this user's full budget of files in flight is
/// retried after a moment; a reset (the server already dropped the connection) counts as
/// sent.
pub fn flood_with_descriptors(path: &std::path::Path, fds: &[std::os::fd::BorrowedFd<'_>], packets: usize) {
    use std::os::fd::AsFd;
    let mut sent = 0;
    while sent < packets {
        match doca_link::connect(path) {
            Ok(Some(sock)) => match doca_link::send(sock.as_fd(), b"not a handshake", fds) {
                Ok(()) | Err(doca_link::Error::ConnectionReset) => sent += 1,
                Err(doca_link::Error::Again) => std::thread::sleep(std::time::Duration::from_millis(1)),
                Err(e) => panic!("send: {e:?}"),
            },
            Err(doca_link::Error::Again) => std::thread::sleep(std::time::Duration::from_micros(200)),
            other => panic!("connect: {other:?}"),
        }
    }
}

/// Hex text of bytes (descriptors travel as text between test processes).
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes of hex text; `None` if it is not hex.
pub fn from_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok()).collect()
}

/// Messages that carry their own sequence number and checksum, for loss, order and
/// corruption checks across processes.
pub mod checked {
    /// A small deterministic generator (xorshift64*), so both sides agree on sizes.
    pub struct Rng(u64);

    impl Rng {
        /// Seeded generator (a zero seed is replaced).
        pub fn new(seed: u64) -> Rng {
            Rng(seed.max(1))
        }

        /// The next value.
        pub fn next_u64(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    /// FNV-1a over `bytes`.
    pub fn fnv32(bytes: &[u8]) -> u32 {
        bytes.iter().fold(0x811c_9dc5u32, |h, &b| (h ^ b as u32).wrapping_mul(0x0100_0193))
    }

    /// Header bytes: sequence number, payload length, payload checksum.
    pub const HEADER: usize = 12;

    /// A message of random size in `HEADER..=max` with sequence number `seq`.
    pub fn message(rng: &mut Rng, seq: u32, max: usize) -> Vec<u8> {
        let len = HEADER + (rng.next_u64() as usize) % (max - HEADER + 1);
        let mut m = vec![0u8; len];
        for b in m[HEADER..].iter_mut() {
            *b = rng.next_u64() as u8;
        }
        let sum = fnv32(&m[HEADER..]);
        m[..4].copy_from_slice(&seq.to_le_bytes());
        m[4..8].copy_from_slice(&((len - HEADER) as u32).to_le_bytes());
        m[8..12].copy_from_slice(&sum.to_le_bytes());
        m
    }

    /// The sequence number of an intact message; `None` when it is damaged.
    pub fn verify(m: &[u8]) -> Option<u32> {
        let word = |i: usize| u32::from_le_bytes(m.get(i..i + 4)?.try_into().ok()?).into();
        let (seq, len, sum): (Option<u32>, Option<u32>, Option<u32>) = (word(0), word(4), word(8));
        let body = m.get(HEADER..)?;
        (body.len() == len? as usize && fnv32(body) == sum?).then_some(seq?)
    }
}

/// Fast-path payloads: `tag`, `seq`, a checksum, then pseudo-random words; cheap to make
/// and check at memory speed.
pub mod bulk {
    /// Bytes before the payload words.
    pub const HEADER: usize = 24;

    fn words(tag: u64, seq: u64) -> impl Iterator<Item = u64> {
        let mut x = (tag << 32 ^ seq).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        std::iter::repeat_with(move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
    }

    /// Fills `buf` (a multiple of 8 bytes, at least [`HEADER`]) with message `seq` of `tag`.
    pub fn fill(buf: &mut [u8], tag: u64, seq: u64) {
        let mut sum = 0u64;
        for (chunk, w) in buf[HEADER..].chunks_exact_mut(8).zip(words(tag, seq)) {
            chunk.copy_from_slice(&w.to_le_bytes());
            sum = sum.wrapping_add(w);
        }
        buf[..8].copy_from_slice(&tag.to_le_bytes());
        buf[8..16].copy_from_slice(&seq.to_le_bytes());
        buf[16..24].copy_from_slice(&sum.to_le_bytes());
    }

    /// `(tag, seq)` of an intact message; `None` when it is damaged.
    pub fn verify(buf: &[u8]) -> Option<(u64, u64)> {
        if buf.len() < HEADER || buf.len() % 8 != 0 {
            return None;
        }
        let w = |i: usize| u64::from_le_bytes(buf[i..i + 8].try_into().expect("8 bytes"));
        let (tag, seq, sum) = (w(0), w(8), w(16));
        let mut got = 0u64;
        for (chunk, want) in buf[HEADER..].chunks_exact(8).zip(words(tag, seq)) {
            let v = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            if v != want {
                return None;
            }
            got = got.wrapping_add(v);
        }
        (got == sum).then_some((tag, seq))
    }
}

pub mod link;

/// A 2024 comm-channel server on `03:00.0` for host function `b1:00.0`, started, that records
/// the peer's consumers as they are announced and as they expire: the producer side of the
/// fast-path tests.
pub struct FastServer {
    /// The server's engine.
    pub pe: doca_core::Pe,
    /// The server.
    pub server: doca_cc::Server,
    /// Consumers announced, in order.
    pub consumers: std::rc::Rc<std::cell::RefCell<Vec<u32>>>,
    /// Consumers expired, in order.
    pub expired: std::rc::Rc<std::cell::RefCell<Vec<u32>>>,
}

impl FastServer {
    /// Serves `name`.
    pub fn serve(name: &str) -> FastServer {
        use doca_core::{open_device_rep_with_pci, open_device_with_pci, RepFilter};
        let dev = open_device_with_pci("03:00.0", None).unwrap();
        let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0").unwrap();
        let pe = doca_core::Pe::create().unwrap();
        let server = doca_cc::Server::create(&dev, &rep, name).unwrap();
        pe.connect_ctx(&server.as_ctx()).unwrap();
        let consumers: std::rc::Rc<std::cell::RefCell<Vec<u32>>> = std::rc::Rc::default();
        let expired: std::rc::Rc<std::cell::RefCell<Vec<u32>>> = std::rc::Rc::default();
        let (c, e) = (consumers.clone(), expired.clone());
        server
            .event_consumer_register(
                move |_, id| c.borrow_mut().push(id),
                move |_, id| e.borrow_mut().push(id),
            )
            .unwrap();
        server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 16).unwrap();
        server.event_msg_recv_register(|_, _| {}).unwrap();
        server.event_connection_register(|_, _| {}, |_, _| {}).unwrap();
        server.as_ctx().start().unwrap();
        FastServer { pe, server, consumers, expired }
    }
}

/// A producer's source memory: `slots` buffers of `size` bytes in shared memory (a started
/// map) and an inventory for their buffers.
pub fn source_buffers(size: usize, slots: usize) -> (doca_mmap::Mmap, doca_buf::Inventory) {
    let map = doca_mmap::Mmap::create().unwrap();
    map.set_memrange(doca_mmap::SharedMem::alloc(size * slots).unwrap()).unwrap();
    map.start().unwrap();
    let inv = doca_buf::Inventory::create(slots as u32).unwrap();
    inv.start().unwrap();
    (map, inv)
}

/// A 2024 comm-channel server in the test process that records what happens: the side the
/// cross-process tests attack or serve.
pub mod harness {
    use std::cell::RefCell;
    use std::rc::Rc;
    use std::time::{Duration, Instant};

    use doca_cc::{Connection, Server};
    use doca_core::{open_device_rep_with_pci, open_device_with_pci, Pe, RepFilter};

    /// Messages received: (connection id, bytes).
    pub type Inbox = Rc<RefCell<Vec<(u64, Vec<u8>)>>>;

    /// A server for the host function b1:00.0 with its engine and what it saw.
    pub struct Harness {
        /// Its engine.
        pub pe: Pe,
        /// The server.
        pub server: Rc<Server>,
        /// Connection events: (connection id, successful).
        pub connected: Rc<RefCell<Vec<(u64, bool)>>>,
        /// Disconnection events: connection ids.
        pub disconnected: Rc<RefCell<Vec<u64>>>,
        /// Messages received (unless it echoes them).
        pub received: Inbox,
        /// New-consumer events: (connection id, consumer id).
        pub consumers: Rc<RefCell<Vec<(u64, u32)>>>,
    }

    /// A running server named `name`; with `echo` it sends every message back. The process
    /// may use as many descriptors as its hard limit allows (up to 65536), as a server would:
    /// one peer process may hold a quarter of them (`doca_mmap::budget`), and the tests open
    /// a hundred connections from one.
    pub fn harness(name: &str, echo: bool) -> Harness {
        let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        let want = nofile.maximum.unwrap_or(65536).min(65536);
        if nofile.current.is_some_and(|c| c < want) {
            let raised = rustix::process::Rlimit { current: Some(want), maximum: nofile.maximum };
            let _ = rustix::process::setrlimit(rustix::process::Resource::Nofile, raised);
        }
        let dev = open_device_with_pci("03:00.0", None).unwrap();
        let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0").unwrap();
        let pe = Pe::create().unwrap();
        let server = Rc::new(Server::create(&dev, &rep, name).unwrap());
        pe.connect_ctx(&server.as_ctx()).unwrap();
        let connected: Rc<RefCell<Vec<(u64, bool)>>> = Rc::default();
        let disconnected: Rc<RefCell<Vec<u64>>> = Rc::default();
        let received: Inbox = Rc::default();
        let consumers: Rc<RefCell<Vec<(u64, u32)>>> = Rc::default();
        let (c, d, r, k) = (connected.clone(), disconnected.clone(), received.clone(), consumers.clone());
        server
            .event_connection_register(
                move |conn, ok| c.borrow_mut().push((conn.id(), ok)),
                move |conn, _| d.borrow_mut().push(conn.id()),
            )
            .unwrap();
        server
            .event_msg_recv_register(move |msg, conn: &Connection| {
                if echo {
                    let s = conn.server().unwrap();
                    s.task_send_alloc_init(conn, msg).unwrap().submit().unwrap();
                } else {
                    r.borrow_mut().push((conn.id(), msg.to_vec()));
                }
            })
            .unwrap();
        server
            .event_consumer_register(move |conn, id| k.borrow_mut().push((conn.id(), id)), |_, _| {})
            .unwrap();
        server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4096).unwrap();
        server.as_ctx().start().unwrap();
        Harness { pe, server, connected, disconnected, received, consumers }
    }

    /// Progresses `pe` until `done`, failing the test after a minute; between progress
    /// calls that ran nothing it sleeps on the engine's notification handle (see
    /// [`crate::idle`]), so a test beside many peers does not spin.
    pub fn until(pe: &Pe, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            crate::idle(pe);
        }
    }

    /// Progresses `pe` (see [`until`]) until `peer` prints the line `want` (the lines before
    /// it are passed over).
    pub fn until_line(pe: &Pe, peer: &crate::Peer, want: &str) {
        let mut line = String::new();
        until(pe, want, || {
            if let Some(l) = peer.try_line() {
                line = l;
            }
            line == want
        });
    }
}

/// Parts of a test that need a process of their own: process-wide state such as the side of
/// the link ([`doca_core::SIDE_ENV`], the first device opened) or the topology file.
pub mod fresh {
    use std::process::Command;

    /// Set in the child to the name of the test it runs.
    pub const CHILD_ENV: &str = "DOCA_TESTS_FRESH_CHILD";

    /// Whether this process was started to run `test`.
    pub fn is_child(test: &str) -> bool {
        std::env::var(CHILD_ENV).is_ok_and(|v| v == test)
    }

    /// Runs `test` (its path in this test binary) alone in a new process of this binary,
    /// with `env` set (`None` removes a variable), and fails unless it ran and passed.
    pub fn run(test: &str, env: &[(&str, Option<&str>)]) {
        let exe = std::env::current_exe().expect("the test binary");
        let mut cmd = Command::new(exe);
        cmd.args([test, "--exact", "--nocapture", "--test-threads=1"]).env(CHILD_ENV, test);
        for (k, v) in env {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        let out = cmd.output().expect("start the test binary again");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{test} in a fresh process with {env:?}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Runs the rest of the calling test in a fresh process of the test binary, with the given
/// environment (`&[(name, Some(value) or None)]`), via [`fresh::run`].
#[macro_export]
macro_rules! in_fresh_process {
    ($env:expr) => {{
        fn here() {}
        let full = ::std::any::type_name_of_val(&here);
        let path = full.strip_suffix("::here").expect("a function path");
        let name = path.split_once("::").map_or(path, |(_, rest)| rest);
        if !$crate::fresh::is_child(name) {
            $crate::fresh::run(name, $env);
            return;
        }
    }};
}
