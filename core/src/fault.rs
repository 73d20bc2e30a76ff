//! Fault plans: declared faults that the libraries inject where they do the work, without
//! touching the application — for testing error paths the way the hardware would exercise
//! them (connection events, failed tasks with DOCA's codes, contexts going Idle).
//!
//! | what                                   | here                                          |
//! |----------------------------------------|-----------------------------------------------|
//! | a plan from the environment            | [`FAULTS_ENV`] (text), [`FAULTS_FILE_ENV`] (a file), read at the first DOCA call ([`check_env`]) |
//! | a plan from a Rust test                | [`Plan::parse`], [`install`], [`install_text`], [`clear`] |
//! | a bad plan                             | [`PlanError`]: names the bad part; `INVALID_VALUE` from every DOCA entry call |
//! | the points                             | [`POINTS`], [`TASK_KINDS`]                    |
//! | what fired                             | [`fired`], [`take_fired`], [`Fired`]; a JSON-lines file named by [`RECORD_ENV`] |
//! | the checks libraries make              | [`armed`] (one relaxed load), then [`on_message`], [`on_task`], [`on_alloc`] |
//!
//! # Grammar
//!
//! ```text
//! plan    := item { (';' | newline) item }        blank items and `#` comments are skipped
//! item    := 'seed=' N | point '=' rule
//! rule    := [count '*'] [trigger ':'] action  |  [count '*'] trigger   (the point's own action)
//! trigger := 'always' | 'nth(' N ')' | 'every(' K ')' | 'after(' N ')' | 'after_ms(' T ')' | P '%'
//! action  := 'drop' | 'reboot' | 'fail' [ '(' CODE ')' ] | 'delay(' MS ')'
//! ```
//!
//! Points ([`POINTS`]): `link.drop` (action `drop`: the cc connection is cut, as when the
//! peer dies), `peer.reboot` (action `reboot`: this process vanishes, exit code
//! [`REBOOT_EXIT_CODE`]), both hit at each control-path message this process sends or
//! receives and at each fast-path producer send about to go out; `task.<kind>` for each of [`TASK_KINDS`] (hit at each submit; `fail(CODE)`
//! completes the task with CODE through its error callback without doing the work,
//! `delay(MS)` delivers its completion no earlier than MS after the submit, MS at most
//! [`MAX_DELAY_MS`]); `alloc.task`,
//! `alloc.buf`, `alloc.mmap` (hit at each allocation; `fail`, by default `NO_MEMORY`).
//!
//! Triggers count the hits of their point: `nth(N)` fires at hit N only, `every(K)` at
//! hits K, 2K, …, `after(N)` at every hit after the first N, `after_ms(T)` at every hit T ms
//! or more after the plan was installed, `P%` at a fraction P of hits drawn from the plan's
//! seed (deterministic: the same seed and the same hits fire the same faults), `always` (the
//! default) at every hit. `count*` caps the rule at `count` firings. CODE is a DOCA name,
//! with or without its `DOCA_ERROR_` prefix.
//!
//! A delayed completion is held back, never slept on: the task is done, its completion waits
//! in its pool (and the context stays on its engine's list) until it is due, then a later
//! progress pass delivers it; an engine asleep on its notification handle is woken by a
//! timer when it is due. Every other completion, of that context or another, goes on
//! meanwhile; a context that stops waits for its held completions, as for any task in flight.
//!
//! Cost when no plan is set: [`armed`] is one relaxed atomic load; nothing else runs.

use std::fmt;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};

/// The environment variable holding a plan's text.
pub const FAULTS_ENV: &str = "DOCA_EMU_FAULTS";
/// The environment variable naming a file holding a plan (used when [`FAULTS_ENV`] is unset).
pub const FAULTS_FILE_ENV: &str = "DOCA_EMU_FAULTS_FILE";
/// The environment variable naming the JSON-lines file every fired fault is appended to.
pub const RECORD_ENV: &str = "DOCA_EMU_FAULTS_RECORD";
/// The exit status of a process that a `peer.reboot` fault took down.
pub const REBOOT_EXIT_CODE: i32 = 86;
/// The longest `delay(MS)` a plan may ask for (a minute): a longer one is a plan error. A
/// held completion costs nothing while it waits, but a test that waits longer for one is
/// more likely a typo (or a plan injected to stall a process) than a test.
pub const MAX_DELAY_MS: u64 = 60_000;

/// The task kinds whose tasks can be failed or delayed (`task.<kind>`). A library names
/// its task type's kind with [`crate::TaskPayload::FAULT_KIND`].
pub const TASK_KINDS: &[&str] = &[
    "cc.send",
    "cc.producer.send",
    "cc.consumer.post_recv",
    "dma.memcpy",
    "sha.hash",
    "sha.partial_hash",
    "aes_gcm.encrypt",
    "aes_gcm.decrypt",
    "compress.compress_deflate",
    "compress.decompress_deflate",
    "compress.decompress_lz4",
    "compress.decompress_lz4_stream",
    "compress.decompress_lz4_block",
    "ec.create",
    "ec.update",
    "ec.recover",
    "ec.galois_mul",
    "sync_event.wait",
    "loopback.echo",
    "rdma.send",
    "rdma.send_imm",
    "rdma.receive",
    "rdma.read",
    "rdma.write",
    "rdma.write_imm",
    "rdma.atomic_cmp_swp",
    "rdma.atomic_fetch_add",
    "rdma.remote_net_sync_event_get",
    "rdma.remote_net_sync_event_notify_set",
    "rdma.remote_net_sync_event_notify_add",
];

/// Every point name outside the `task.<kind>` family.
pub const POINTS: &[&str] = &["link.drop", "peer.reboot", "alloc.task", "alloc.buf", "alloc.mmap"];

/// Classes of points, one bit each in the armed mask ([`armed`]).
pub mod class {
    /// `link.drop` and `peer.reboot`: control-path messages and producer sends.
    pub const MESSAGE: u32 = 1 << 0;
    /// `task.<kind>`: task submissions.
    pub const TASK: u32 = 1 << 1;
    /// `alloc.task`.
    pub const ALLOC_TASK: u32 = 1 << 2;
    /// `alloc.buf`.
    pub const ALLOC_BUF: u32 = 1 << 3;
    /// `alloc.mmap`.
    pub const ALLOC_MMAP: u32 = 1 << 4;
}

/// Classes of the points the active plan can still fire: zero without a plan.
static ARMED: AtomicU32 = AtomicU32::new(0);

/// Whether the active plan has a rule for a point of `class` ([`class`]) that can still
/// fire: one relaxed load, the only cost a disabled point has. Call the matching `on_*`
/// only when it is true.
#[inline(always)]
pub fn armed(class: u32) -> bool {
    ARMED.load(Ordering::Relaxed) & class != 0
}

/// Where a fault applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    LinkDrop,
    PeerReboot,
    Task(&'static str),
    AllocTask,
    AllocBuf,
    AllocMmap,
}

impl Point {
    fn parse(name: &str) -> Option<Point> {
        Some(match name {
            "link.drop" => Point::LinkDrop,
            "peer.reboot" => Point::PeerReboot,
            "alloc.task" => Point::AllocTask,
            "alloc.buf" => Point::AllocBuf,
            "alloc.mmap" => Point::AllocMmap,
            _ => {
                let kind = name.strip_prefix("task.")?;
                Point::Task(TASK_KINDS.iter().find(|k| **k == kind)?)
            }
        })
    }

    fn class(self) -> u32 {
        match self {
            Point::LinkDrop | Point::PeerReboot => class::MESSAGE,
            Point::Task(_) => class::TASK,
            Point::AllocTask => class::ALLOC_TASK,
            Point::AllocBuf => class::ALLOC_BUF,
            Point::AllocMmap => class::ALLOC_MMAP,
        }
    }

    /// The action a rule without one takes.
    fn default_action(self) -> Option<Action> {
        match self {
            Point::LinkDrop => Some(Action::Drop),
            Point::PeerReboot => Some(Action::Reboot),
            Point::Task(_) => None,
            Point::AllocTask | Point::AllocBuf | Point::AllocMmap => Some(Action::Fail(Error::NoMemory)),
        }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Point::LinkDrop => f.write_str("link.drop"),
            Point::PeerReboot => f.write_str("peer.reboot"),
            Point::Task(kind) => write!(f, "task.{kind}"),
            Point::AllocTask => f.write_str("alloc.task"),
            Point::AllocBuf => f.write_str("alloc.buf"),
            Point::AllocMmap => f.write_str("alloc.mmap"),
        }
    }
}

/// When a rule fires, counted in hits of its point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum When {
    Always,
    Nth(u64),
    Every(u64),
    After(u64),
    AfterMs(u64),
    /// Parts per million.
    Fraction(u32),
}

/// What a fired rule does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Drop,
    Reboot,
    Fail(Error),
    Delay(Duration),
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Drop => f.write_str("drop"),
            Action::Reboot => f.write_str("reboot"),
            Action::Fail(e) => write!(f, "fail({})", e.name()),
            Action::Delay(d) => write!(f, "delay({})", d.as_millis()),
        }
    }
}

#[derive(Clone, Debug)]
struct Rule {
    point: Point,
    when: When,
    max: Option<u64>,
    action: Action,
    /// The item as written (for the record and logs).
    text: String,
    hits: u64,
    fired: u64,
    rng: u64,
}

impl Rule {
    fn exhausted(&self) -> bool {
        self.max.is_some_and(|m| self.fired >= m)
    }

    /// Counts a hit; whether the rule fires at it.
    fn hit(&mut self, elapsed: Duration) -> bool {
        self.hits += 1;
        // Drawn at every hit, fired or not: the sequence depends on the seed and the hits only.
        let draw = splitmix(&mut self.rng) % 1_000_000;
        if self.exhausted() {
            return false;
        }
        let fires = match self.when {
            When::Always => true,
            When::Nth(n) => self.hits == n,
            When::Every(k) => self.hits % k == 0,
            When::After(n) => self.hits > n,
            When::AfterMs(t) => elapsed >= Duration::from_millis(t),
            When::Fraction(ppm) => draw < u64::from(ppm),
        };
        if fires {
            self.fired += 1;
        }
        fires
    }
}

/// SplitMix64: a small, well-mixed generator (enough for choosing which hits fire).
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fnv64(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// A plan that did not parse: the part that is wrong and why. Its code is `INVALID_VALUE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError {
    /// The item (as written) that is wrong.
    pub part: String,
    /// What is wrong with it.
    pub why: String,
}

impl PlanError {
    fn new(part: &str, why: impl Into<String>) -> PlanError {
        PlanError { part: part.to_string(), why: why.into() }
    }

    /// The DOCA code a bad plan gives: `INVALID_VALUE`.
    pub fn code(&self) -> Error {
        Error::InvalidValue
    }
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fault plan: bad part `{}`: {}", self.part, self.why)
    }
}

impl std::error::Error for PlanError {}

impl From<PlanError> for Error {
    fn from(e: PlanError) -> Error {
        e.code()
    }
}

/// A parsed fault plan ([`Plan::parse`]), ready to [`install`].
#[derive(Clone, Debug)]
pub struct Plan {
    rules: Vec<Rule>,
    seed: u64,
    text: String,
}

impl Plan {
    /// Parses a plan (the grammar is in the [module documentation](self)). An unknown point,
    /// trigger, action or code, an action the point cannot take, or a malformed number is an
    /// error naming the part.
    pub fn parse(text: &str) -> Result<Plan, PlanError> {
        let mut rules = Vec::new();
        let mut seed = 0u64;
        let items = text
            .lines()
            .map(|line| line.split('#').next().unwrap_or(""))
            .flat_map(|line| line.split(';'))
            .map(str::trim)
            .filter(|item| !item.is_empty());
        for item in items {
            let Some((name, rule)) = item.split_once('=') else {
                return Err(PlanError::new(item, "expected `point=rule` or `seed=N`"));
            };
            let (name, rule) = (name.trim(), rule.trim());
            if rule.contains('=') {
                return Err(PlanError::new(item, "two `=` in one item: is a `;` missing between two rules?"));
            }
            if name == "seed" {
                seed = number(item, rule)?;
                continue;
            }
            let Some(point) = Point::parse(name) else {
                return Err(PlanError::new(
                    item,
                    format!(
                        "unknown point `{name}` (points: {}, task.<kind> with kind one of {})",
                        POINTS.join(", "),
                        TASK_KINDS.join(", ")
                    ),
                ));
            };
            rules.push(parse_rule(item, point, rule)?);
        }
        for (i, rule) in rules.iter_mut().enumerate() {
            rule.rng = seed ^ fnv64(&rule.text) ^ (i as u64).wrapping_mul(0x9E37_79B9);
        }
        Ok(Plan { rules, seed, text: text.to_string() })
    }

    /// The plan's text as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The seed (`seed=N`; 0 when not given).
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether the plan has no rule (installing it disables every point).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

fn number(item: &str, s: &str) -> Result<u64, PlanError> {
    s.trim().parse::<u64>().map_err(|_| PlanError::new(item, format!("`{s}` is not a whole number")))
}

/// `name(arg)` → `Some(arg)` when `s` has that shape.
fn call<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    s.strip_prefix(name)?.trim_start().strip_prefix('(')?.strip_suffix(')').map(str::trim)
}

fn parse_rule(item: &str, point: Point, rule: &str) -> Result<Rule, PlanError> {
    let (max, rest) = match rule.split_once('*') {
        Some((count, rest)) => {
            let n = number(item, count)?;
            if n == 0 {
                return Err(PlanError::new(item, "a count of 0 never fires"));
            }
            (Some(n), rest.trim())
        }
        None => (None, rule),
    };
    let (when, action) = match rest.split_once(':') {
        Some((when, action)) => (parse_when(item, when.trim())?, parse_action(item, point, action.trim())?),
        None => match parse_when(item, rest) {
            Ok(when) => {
                let Some(action) = point.default_action() else {
                    return Err(PlanError::new(
                        item,
                        format!("`{point}` needs an action: fail(CODE) or delay(MS)"),
                    ));
                };
                (when, action)
            }
            Err(e)
                if ["always", "nth", "every", "after"].iter().any(|t| rest.starts_with(t))
                    || rest.ends_with('%') =>
            {
                return Err(e)
            }
            Err(_) => (When::Always, parse_action(item, point, rest)?),
        },
    };
    Ok(Rule { point, when, max, action, text: item.to_string(), hits: 0, fired: 0, rng: 0 })
}

fn parse_when(item: &str, s: &str) -> Result<When, PlanError> {
    let positive = |arg: &str, what: &str| -> Result<u64, PlanError> {
        let n = number(item, arg)?;
        if n == 0 {
            return Err(PlanError::new(item, format!("{what}(0) never fires: counts start at 1")));
        }
        Ok(n)
    };
    if s == "always" {
        Ok(When::Always)
    } else if let Some(arg) = call(s, "nth") {
        Ok(When::Nth(positive(arg, "nth")?))
    } else if let Some(arg) = call(s, "every") {
        Ok(When::Every(positive(arg, "every")?))
    } else if let Some(arg) = call(s, "after_ms") {
        Ok(When::AfterMs(number(item, arg)?))
    } else if let Some(arg) = call(s, "after") {
        Ok(When::After(number(item, arg)?))
    } else if let Some(p) = s.strip_suffix('%') {
        let p: f64 = p
            .trim()
            .parse()
            .ok()
            .filter(|p: &f64| (0.0..=100.0).contains(p))
            .ok_or_else(|| PlanError::new(item, format!("`{s}` is not a percentage from 0 to 100")))?;
        Ok(When::Fraction((p * 10_000.0).round() as u32))
    } else {
        Err(PlanError::new(
            item,
            format!("unknown trigger `{s}` (always, nth(N), every(K), after(N), after_ms(T), P%)"),
        ))
    }
}

fn parse_code(item: &str, s: &str) -> Result<Error, PlanError> {
    let upper = s.to_ascii_uppercase();
    let full = if upper.starts_with("DOCA_") { upper } else { format!("DOCA_ERROR_{upper}") };
    Error::ALL
        .iter()
        .copied()
        .find(|e| e.name() == full && e.is_error())
        .ok_or_else(|| PlanError::new(item, format!("unknown DOCA error code `{s}`")))
}

fn parse_action(item: &str, point: Point, s: &str) -> Result<Action, PlanError> {
    let action = if s == "drop" {
        Action::Drop
    } else if s == "reboot" {
        Action::Reboot
    } else if s == "fail" {
        match point.default_action() {
            Some(a @ Action::Fail(_)) => a,
            _ => return Err(PlanError::new(item, format!("`{point}` needs fail(CODE): which code?"))),
        }
    } else if let Some(code) = call(s, "fail") {
        Action::Fail(parse_code(item, code)?)
    } else if let Some(ms) = call(s, "delay") {
        let ms = number(item, ms)?;
        if ms > MAX_DELAY_MS {
            return Err(PlanError::new(
                item,
                format!("delay({ms}) is longer than the bound of {MAX_DELAY_MS} ms"),
            ));
        }
        Action::Delay(Duration::from_millis(ms))
    } else {
        return Err(PlanError::new(
            item,
            format!("unknown action `{s}` (drop, reboot, fail, fail(CODE), delay(MS))"),
        ));
    };
    let fits = matches!(
        (point, action),
        (Point::LinkDrop, Action::Drop)
            | (Point::PeerReboot, Action::Reboot)
            | (Point::Task(_), Action::Fail(_) | Action::Delay(_))
            | (Point::AllocTask | Point::AllocBuf | Point::AllocMmap, Action::Fail(_))
    );
    if !fits {
        return Err(PlanError::new(item, format!("`{point}` cannot take the action `{s}`")));
    }
    Ok(action)
}

/// One fault that fired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fired {
    /// 1 for the first fault that fired in this process under the active plan, then 2, …
    pub seq: u64,
    /// The point (e.g. `"link.drop"`, `"task.cc.send"`).
    pub point: String,
    /// The plan item that fired, as written (e.g. `"link.drop=nth(3)"`).
    pub rule: String,
    /// What it did (e.g. `"drop"`, `"fail(DOCA_ERROR_AGAIN)"`).
    pub action: String,
    /// Which hit of the point it was (1-based).
    pub hit: u64,
    /// Milliseconds since the plan was installed.
    pub ms: u64,
    /// Where (e.g. `"cc_client connection #1 recv"`, a task or allocation kind).
    pub detail: String,
}

impl Fired {
    /// The record as one JSON object (one line of the [`RECORD_ENV`] file).
    pub fn to_json(&self) -> String {
        format!(
            "{{\"seq\":{},\"pid\":{},\"point\":{},\"rule\":{},\"action\":{},\"hit\":{},\"ms\":{},\"detail\":{}}}",
            self.seq,
            std::process::id(),
            json_str(&self.point),
            json_str(&self.rule),
            json_str(&self.action),
            self.hit,
            self.ms,
            json_str(&self.detail)
        )
    }
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

struct Active {
    plan: Plan,
    since: Instant,
    seq: u64,
}

struct Registry {
    active: Option<Active>,
    fired: Vec<Fired>,
    record: Option<File>,
    record_tried: bool,
}

static REGISTRY: Mutex<Registry> =
    Mutex::new(Registry { active: None, fired: Vec::new(), record: None, record_tried: false });

fn registry() -> MutexGuard<'static, Registry> {
    // A panic while holding the lock leaves plain data behind: keep using it.
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

fn rearm(reg: &Registry) {
    let mask = reg
        .active
        .as_ref()
        .map_or(0, |a| a.plan.rules.iter().filter(|r| !r.exhausted()).fold(0, |m, r| m | r.point.class()));
    ARMED.store(mask, Ordering::Relaxed);
}

/// The environment's plan, read once: `Ok` when there is none or it parsed.
static ENV: OnceLock<Result<(), PlanError>> = OnceLock::new();

fn read_env() -> Result<(), PlanError> {
    let text = match std::env::var(FAULTS_ENV) {
        Ok(text) => text,
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(PlanError::new(FAULTS_ENV, "the plan is not valid UTF-8"));
        }
        Err(std::env::VarError::NotPresent) => match std::env::var_os(FAULTS_FILE_ENV) {
            Some(path) if !path.is_empty() => std::fs::read_to_string(&path).map_err(|e| {
                PlanError::new(
                    &path.to_string_lossy(),
                    format!("cannot read the plan file ({FAULTS_FILE_ENV}): {e}"),
                )
            })?,
            _ => return Ok(()),
        },
    };
    if text.trim().is_empty() {
        return Ok(());
    }
    let plan = Plan::parse(&text)?;
    install_plan(plan);
    Ok(())
}

/// Reads the environment's plan ([`FAULTS_ENV`], else the file named by [`FAULTS_FILE_ENV`])
/// the first time it is called, and installs it. Every DOCA entry call that can be a
/// process's first (creating a progress engine, listing or opening devices, creating a map
/// or an inventory) calls it: while the environment's plan is bad, each of them fails with
/// `INVALID_VALUE` and a log line naming the bad part — a plan is never ignored.
pub fn check_env() -> Result<()> {
    match ENV.get_or_init(read_env) {
        Ok(()) => Ok(()),
        Err(e) => Err(crate::fail!(e.code(), "{e} (set by {FAULTS_ENV} or {FAULTS_FILE_ENV})")),
    }
}

fn install_plan(plan: Plan) {
    let mut reg = registry();
    reg.active = Some(Active { plan, since: Instant::now(), seq: 0 });
    rearm(&reg);
}

/// Replaces the active plan (the environment's included) with `plan`; its hit counts and
/// clock start now, the record of fired faults is kept.
pub fn install(plan: Plan) {
    let _ = ENV.get_or_init(read_env);
    tracing::info!(target: "doca_sdk", "fault plan installed: {}", plan.text().trim());
    install_plan(plan);
}

/// Parses `text` and, when it parses, replaces the active plan with it ([`install`]); when
/// it does not, the active plan stays and the error names the bad part. What a live
/// injection (`doca_emu inject`) calls.
pub fn install_text(text: &str) -> Result<(), PlanError> {
    let plan =
        Plan::parse(text).inspect_err(|e| tracing::error!(target: "doca_sdk", "{e}: plan not installed"))?;
    install(plan);
    Ok(())
}

/// [`install_text`] without its log lines, for a plan written into the status page's
/// mailbox: the mailbox logs the answer itself, rate-limited (any process of the user can
/// write plans there in a loop).
pub(crate) fn install_injected(text: &str) -> Result<(), PlanError> {
    let plan = Plan::parse(text)?;
    let _ = ENV.get_or_init(read_env);
    install_plan(plan);
    Ok(())
}

/// Removes the active plan: every point is disabled again (the record is kept).
pub fn clear() {
    let _ = ENV.get_or_init(read_env);
    let mut reg = registry();
    reg.active = None;
    rearm(&reg);
}

/// The text of the active plan, if any.
pub fn active() -> Option<String> {
    registry().active.as_ref().map(|a| a.plan.text.clone())
}

/// Every fault fired so far in this process, in order.
pub fn fired() -> Vec<Fired> {
    registry().fired.clone()
}

/// [`fired`], emptying the record.
pub fn take_fired() -> Vec<Fired> {
    std::mem::take(&mut registry().fired)
}

/// Counts a hit of every rule for `point`; the action of the first that fires (recorded).
#[cold]
fn hit(point: Point, detail: &dyn fmt::Display) -> Option<Action> {
    let mut reg = registry();
    let reg = &mut *reg;
    let active = reg.active.as_mut()?;
    let elapsed = active.since.elapsed();
    let mut fired: Option<(usize, Action)> = None;
    for (i, rule) in active.plan.rules.iter_mut().enumerate() {
        if rule.point == point && rule.hit(elapsed) && fired.is_none() {
            fired = Some((i, rule.action));
        }
    }
    let (i, action) = fired?;
    active.seq += 1;
    let rule = &active.plan.rules[i];
    let record = Fired {
        seq: active.seq,
        point: point.to_string(),
        rule: rule.text.clone(),
        action: action.to_string(),
        hit: rule.hits,
        ms: elapsed.as_millis() as u64,
        detail: detail.to_string(),
    };
    tracing::warn!(
        target: "doca_sdk",
        "fault injected: {} ({}, hit {}): {}",
        record.rule,
        record.action,
        record.hit,
        record.detail
    );
    if !reg.record_tried {
        reg.record_tried = true;
        if let Some(path) = std::env::var_os(RECORD_ENV).filter(|p| !p.is_empty()) {
            match std::fs::OpenOptions::new().create(true).append(true).open(&path) {
                Ok(f) => reg.record = Some(f),
                Err(e) => tracing::error!(
                    target: "doca_sdk",
                    "fault record {}: cannot open ({e}); faults are recorded in memory only",
                    path.to_string_lossy()
                ),
            }
        }
    }
    if let Some(file) = reg.record.as_mut() {
        // One write per line: appends from several processes sharing the file do not mix.
        let line = record.to_json() + "\n";
        let _ = file.write_all(line.as_bytes());
    }
    reg.fired.push(record);
    rearm(reg);
    Some(action)
}

/// What a control-path message hit: [`on_message`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageFault {
    /// Cut the link now, as the peer's death would (`link.drop`).
    Drop,
}

/// A message is sent or received (a control-path message, or a producer send about to go
/// out; call when [`armed`]`(class::MESSAGE)`):
/// `peer.reboot` firing ends the process here (exit status [`REBOOT_EXIT_CODE`], no
/// goodbye: the peer sees what a crash shows); `link.drop` firing returns
/// [`MessageFault::Drop`] and the caller cuts the link without delivering the message.
#[cold]
pub fn on_message(detail: &dyn fmt::Display) -> Option<MessageFault> {
    if let Some(Action::Reboot) = hit(Point::PeerReboot, detail) {
        tracing::error!(target: "doca_sdk", "fault plan: this process reboots now (exit {REBOOT_EXIT_CODE})");
        std::process::exit(REBOOT_EXIT_CODE);
    }
    match hit(Point::LinkDrop, detail) {
        Some(Action::Drop) => Some(MessageFault::Drop),
        _ => None,
    }
}

/// What a submitted task hit: [`on_task`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskFault {
    /// Complete the task with this code, without doing its work.
    Fail(Error),
    /// Deliver its completion no earlier than this long after the submit.
    Delay(Duration),
}

/// A task of `kind` (one of [`TASK_KINDS`]) is submitted (call when
/// [`armed`]`(class::TASK)`).
#[cold]
pub fn on_task(kind: &'static str, detail: &dyn fmt::Display) -> Option<TaskFault> {
    if kind.is_empty() {
        return None;
    }
    match hit(Point::Task(kind), detail)? {
        Action::Fail(e) => Some(TaskFault::Fail(e)),
        Action::Delay(d) => Some(TaskFault::Delay(d)),
        Action::Drop | Action::Reboot => None,
    }
}

/// What an allocation can be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alloc {
    /// A task from its context's pool (`alloc.task`).
    Task,
    /// A buffer from an inventory (`alloc.buf`).
    Buf,
    /// A memory map (`alloc.mmap`).
    Mmap,
}

impl Alloc {
    /// The class to test with [`armed`] first.
    pub const fn class(self) -> u32 {
        match self {
            Alloc::Task => class::ALLOC_TASK,
            Alloc::Buf => class::ALLOC_BUF,
            Alloc::Mmap => class::ALLOC_MMAP,
        }
    }
}

/// An allocation (call when [`armed`]`(alloc.class())`): the code to refuse it with.
#[cold]
pub fn on_alloc(alloc: Alloc, detail: &dyn fmt::Display) -> Option<Error> {
    let point = match alloc {
        Alloc::Task => Point::AllocTask,
        Alloc::Buf => Point::AllocBuf,
        Alloc::Mmap => Point::AllocMmap,
    };
    match hit(point, detail)? {
        Action::Fail(e) => Some(e),
        _ => None,
    }
}

/// The registry is process-wide: tests that install plans take this lock so they do not
/// see each other's faults.
#[doc(hidden)]
pub fn test_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> PlanError {
        Plan::parse(text).expect_err(text)
    }

    #[test]
    fn grammar_accepts_every_form() {
        let plan = Plan::parse(
            "seed=7; link.drop=nth(4)\n# a comment\npeer.reboot = 1*after_ms(500)\n\
             task.cc.send=every(3):fail(AGAIN); task.dma.memcpy=25%:fail(DOCA_ERROR_IO_FAILED)\n\
             task.cc.consumer.post_recv=delay(20); alloc.buf=2*after(1); alloc.task=fail; alloc.mmap=always:fail(no_memory)",
        )
        .unwrap();
        assert_eq!(plan.seed(), 7);
        assert_eq!(plan.len(), 8);
        let r = &plan.rules;
        assert_eq!((r[0].point, r[0].when, r[0].action), (Point::LinkDrop, When::Nth(4), Action::Drop));
        assert_eq!((r[1].max, r[1].when, r[1].action), (Some(1), When::AfterMs(500), Action::Reboot));
        assert_eq!(r[2].action, Action::Fail(Error::Again));
        assert_eq!((r[3].when, r[3].action), (When::Fraction(250_000), Action::Fail(Error::IoFailed)));
        assert_eq!((r[4].when, r[4].action), (When::Always, Action::Delay(Duration::from_millis(20))));
        assert_eq!(
            (r[5].max, r[5].when, r[5].action),
            (Some(2), When::After(1), Action::Fail(Error::NoMemory))
        );
        assert_eq!(r[6].action, Action::Fail(Error::NoMemory));
        assert_eq!(r[7].action, Action::Fail(Error::NoMemory));
        assert!(Plan::parse("  ;\n# nothing\n").unwrap().is_empty());
    }

    #[test]
    fn errors_name_the_bad_part() {
        let e = err("link.drop=nth(3); link.dorp=nth(3)");
        assert_eq!(e.part, "link.dorp=nth(3)");
        assert!(e.why.contains("unknown point `link.dorp`"), "{e}");
        assert!(e.to_string().contains("`link.dorp=nth(3)`"));
        assert_eq!(e.code(), Error::InvalidValue);
        assert!(err("task.cc.sned=fail(AGAIN)").why.contains("unknown point"));
        assert!(err("link.drop=nht(3)").why.contains("unknown action `nht(3)`"));
        assert!(err("link.drop=nht(3):drop").why.contains("unknown trigger `nht(3)`"));
        assert!(err("task.cc.send=fail(AGIAN)").why.contains("unknown DOCA error code `AGIAN`"));
        assert!(err("task.cc.send=fail(SUCCESS)").why.contains("unknown DOCA error code"));
        assert!(err("task.cc.send=nth(2)").why.contains("needs an action"));
        assert!(err("task.cc.send=fail").why.contains("needs fail(CODE)"));
        assert!(err("link.drop=fail(AGAIN)").why.contains("cannot take the action"));
        assert!(err("alloc.buf=delay(3)").why.contains("cannot take the action"));
        assert!(err("link.drop=nth(0)").why.contains("never fires"));
        assert!(err("link.drop=0*nth(1)").why.contains("never fires"));
        assert!(err("link.drop=150%").why.contains("percentage"));
        assert!(err("seed=x").why.contains("whole number"));
        assert!(err("link.drop").why.contains("point=rule"));
        assert!(err("link.drop=nth(3) link.drop=nth(4)").why.contains("a `;` missing"));
        assert!(err("task.dma.memcpy=delay(ten)").why.contains("whole number"));
        let e = err("task.cc.send=1*delay(4000000000000)");
        assert!(e.why.contains("longer than the bound of 60000 ms"), "{e}");
        assert!(err("task.cc.send=delay(60001)").why.contains("bound"));
        assert!(Plan::parse("task.cc.send=delay(60000)").is_ok());
    }

    fn hits(plan: &str, n: u64) -> Vec<u64> {
        let mut plan = Plan::parse(plan).unwrap();
        let rule = &mut plan.rules[0];
        (1..=n).filter(|_| rule.hit(Duration::ZERO)).collect()
    }

    #[test]
    fn triggers_count_hits() {
        assert_eq!(hits("link.drop=nth(3)", 10), [3]);
        assert_eq!(hits("link.drop=every(4)", 10), [4, 8]);
        assert_eq!(hits("link.drop=after(7)", 10), [8, 9, 10]);
        assert_eq!(hits("link.drop=2*after(7)", 10), [8, 9]);
        assert_eq!(hits("link.drop=always", 3), [1, 2, 3]);
        assert_eq!(hits("link.drop=after_ms(0)", 2), [1, 2]);
        assert!(hits("link.drop=after_ms(10)", 2).is_empty());
        assert!(hits("link.drop=0%", 1000).is_empty());
        assert_eq!(hits("link.drop=100%", 5), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn fractions_are_deterministic_from_the_seed() {
        let a = hits("seed=1; link.drop=30%", 2000);
        assert_eq!(a, hits("seed=1; link.drop=30%", 2000), "same seed, same firings");
        assert_ne!(a, hits("seed=2; link.drop=30%", 2000), "another seed, other firings");
        // Roughly the fraction asked for.
        assert!((450..750).contains(&a.len()), "{}", a.len());
    }

    #[test]
    fn installed_plans_fire_record_and_disarm() {
        let _g = test_lock();
        take_fired();
        assert!(!armed(class::ALLOC_BUF));
        install_text("alloc.buf=1*nth(2)").unwrap();
        assert!(armed(class::ALLOC_BUF) && !armed(class::TASK) && !armed(class::MESSAGE));
        assert_eq!(on_alloc(Alloc::Buf, &"first"), None);
        assert_eq!(on_alloc(Alloc::Buf, &"second"), Some(Error::NoMemory));
        // Its one firing done, the rule no longer arms its class: disabled points cost a load.
        assert!(!armed(class::ALLOC_BUF));
        let f = take_fired();
        assert_eq!(f.len(), 1);
        assert_eq!((f[0].seq, f[0].point.as_str(), f[0].hit), (1, "alloc.buf", 2));
        assert_eq!(
            (f[0].rule.as_str(), f[0].action.as_str(), f[0].detail.as_str()),
            ("alloc.buf=1*nth(2)", "fail(DOCA_ERROR_NO_MEMORY)", "second")
        );
        let json = f[0].to_json();
        assert!(
            json.starts_with("{\"seq\":1,\"pid\":") && json.contains("\"point\":\"alloc.buf\""),
            "{json}"
        );
        // A bad text leaves the active plan in place.
        install_text("task.cc.send=every(2):fail(AGAIN)").unwrap();
        assert!(install_text("task.cc.send=every(2):fial(AGAIN)").is_err());
        assert_eq!(active().as_deref(), Some("task.cc.send=every(2):fail(AGAIN)"));
        assert_eq!(on_task("cc.send", &"t"), None);
        assert_eq!(on_task("cc.send", &"t"), Some(TaskFault::Fail(Error::Again)));
        assert_eq!(on_task("dma.memcpy", &"t"), None, "another kind is another point");
        clear();
        assert!(!armed(u32::MAX));
        assert_eq!(take_fired().len(), 1);
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
