//! `watch` on a terminal: a live table (ratatui on crossterm) with one row per engine and
//! per library object of every live process, sorted and filtered by process, with keys to
//! pause, select a row and inject a fault plan into its process.
//!
//! The parts are kept apart so that each can be checked without a terminal: [`processes`]
//! turns a scan into rows, [`App::key`] turns a key into an [`Action`], [`draw`] renders the
//! state into any ratatui backend, and [`frame_text`] renders it into a `TestBackend` and
//! returns the screen as plain lines (`watch --once` prints that; the book's captured frame
//! is that too). Only [`run`] touches the terminal.
//!
//! | column   | engine row (`pe N`)  | object row (`cc_server`, …) | connection row (`  cc_conn`, under its server) | engine library context row (`dma`, `sha`, …) |
//! |----------|----------------------|-----------------------------|-----------------------------------|------------------------------|
//! | NAME     | connected contexts   | service name                | `pid N`: the process at the other end | its device              |
//! | STATE    | `running`, `asleep` (armed on its handle), `stalled` (no progress for `--stall` s), `never` | `listening`/`serving` (a server without/with connections), `connecting`/`connected` (a client), `open` (a consumer or producer); the context's state when not running | `connected`, `closing` | the context's state (`idle`, `starting`, `running`, `stopping`) |
//! | CONN     | —                    | open connections (`#id`: the connection a consumer or producer belongs to) | `#id`    | —                            |
//! | SENT, RECV | —                  | messages/bytes each way     | messages/bytes each way on it     | —                            |
//! | INFL     | tasks in flight      | a consumer's posted receive buffers | —                         | tasks queued (after its last pass) |
//! | DONE     | —                    | —                           | —                                 | tasks/bytes worked through   |
//! | RING     | —                    | send-ring fill/slots at the last send | the same, on it         | —                            |
//! | LAST     | seconds since its last progress | its engine's     | its server's engine's             | its engine's                 |
//!
//! A server's connections each have a row, indented under it, while rows are free on the
//! process's page (they never take the last `RESERVED_ROWS`: see
//! [`doca_core::status::Entry::claim_connection`]); the others are counted in a `(more)` row
//! as `+N conn`, their traffic in their server's row. A process with neither engine nor object
//! (a process that only opened devices) is one `process` row.

use std::io::IsTerminal;
use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use doca_core::status::{Snapshot, ROLE_CONNECTION, ROLE_ENGINE_CTX};
use ratatui::backend::{Backend, CrosstermBackend, TestBackend};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Paragraph, Row as TableRow, Table, TableState};
use ratatui::{Frame, Terminal, TerminalOptions, Viewport};

use crate::inject::{inject, Outcome};
use crate::scan::{Found, PageFile};
use crate::sockets::Orphan;

/// The table's columns, in order.
pub const COLUMNS: [&str; 12] =
    ["PID", "PROCESS", "OBJECT", "NAME", "STATE", "CONN", "SENT", "RECV", "INFL", "DONE", "RING", "LAST"];

const WIDTHS: [Constraint; 12] = [
    Constraint::Length(7),
    Constraint::Length(15),
    Constraint::Length(15),
    Constraint::Min(12),
    Constraint::Length(10),
    Constraint::Length(4),
    Constraint::Length(11),
    Constraint::Length(11),
    Constraint::Length(4),
    Constraint::Length(11),
    Constraint::Length(5),
    Constraint::Length(6),
];

/// The width `watch --once` renders at (and the book's frame).
pub const WIDTH: u16 = 124;

/// One row of the table: the cells as shown, and whether it is flagged (a stalled engine).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The cells, one per [`COLUMNS`] entry.
    pub cells: [String; 12],
    /// Shown highlighted: an engine without progress for the stall time.
    pub flagged: bool,
}

/// A live process and its rows, with what it is sorted by.
#[derive(Clone, Debug, PartialEq)]
pub struct Proc {
    /// Its pid (as seen from here).
    pub pid: u32,
    /// Its name.
    pub name: String,
    /// Bytes sent and received by its objects.
    pub traffic: u64,
    /// Seconds since its last progress (`None`: never, or no engine).
    pub idle: Option<f64>,
    /// Its rows.
    pub rows: Vec<Row>,
}

fn since(now: u64, then: u64) -> Option<f64> {
    (then != 0).then(|| now.saturating_sub(then) as f64 / 1e9)
}

fn secs(t: Option<f64>) -> String {
    t.map_or("-".into(), |t| if t < 100.0 { format!("{t:.1}s") } else { format!("{t:.0}s") })
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1}G", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1}M", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1}K", n as f64 / 1024.0),
        n => format!("{n}B"),
    }
}

fn way((msgs, b): (u64, u64)) -> String {
    format!("{msgs}/{}", bytes(b))
}

fn dash() -> String {
    "-".into()
}

/// The rows of one live process's snapshot at time `now` (coarse monotonic ns).
pub fn process(s: &Snapshot, now: u64, stall: f64) -> Proc {
    let head = |object: String, name: String| [s.pid.to_string(), s.comm.clone(), object, name];
    let mut rows = Vec::new();
    for e in &s.engines {
        let idle = since(now, e.last_progress_ns);
        let (state, flagged) = match idle {
            None => ("never", false),
            Some(t) if t >= stall && !e.armed => ("stalled", true),
            _ if e.armed => ("asleep", false),
            Some(_) => ("running", false),
        };
        let [a, b, c, d] = head(format!("pe {}", e.id), format!("{} ctx", e.ctxs));
        rows.push(Row {
            cells: [
                a,
                b,
                c,
                d,
                state.into(),
                dash(),
                dash(),
                dash(),
                e.inflight.to_string(),
                dash(),
                dash(),
                secs(idle),
            ],
            flagged,
        });
    }
    for (depth, o) in crate::report::grouped(&s.entries) {
        let last = s.engines.iter().find(|e| o.engine != 0 && e.id == o.engine);
        let last = last.map_or(dash(), |e| secs(since(now, e.last_progress_ns)));
        let ring = if o.ring.1 > 0 { format!("{}/{}", o.ring.0, o.ring.1) } else { dash() };
        let state = o.ctx_state.unwrap_or("-").to_string();
        if o.role == ROLE_CONNECTION {
            let object = if depth > 0 { format!("  {}", o.kind) } else { o.kind.clone() };
            let peer = if o.peer_pid != 0 { format!("pid {}", o.peer_pid) } else { o.name.clone() };
            let [a, b, c, d] = head(object, peer);
            let conn = format!("#{}", o.conn_id);
            let cells = [a, b, c, d, state, conn, way(o.sent), way(o.received), dash(), dash(), ring, last];
            rows.push(Row { cells, flagged: false });
            continue;
        }
        if o.role == ROLE_ENGINE_CTX {
            let [a, b, c, d] = head(o.kind.clone(), o.dev.map_or(dash(), |d| d.to_string()));
            let (queued, done, b_done) = o.tasks;
            let done = format!("{done}/{}", bytes(b_done));
            let cells = [a, b, c, d, state, dash(), dash(), dash(), queued.to_string(), done, dash(), last];
            rows.push(Row { cells, flagged: false });
            continue;
        }
        let server_side = o.kind == "cc_server" || (o.kind == "comm_channel_ep" && o.rep.is_some());
        let role = match o.kind.as_str() {
            "cc_consumer" | "cc_producer" => "open",
            _ if server_side && o.connections > 0 => "serving",
            _ if server_side => "listening",
            _ if o.connections > 0 => "connected",
            _ => "connecting",
        };
        // The context's own state where the page has it; what it does while running beside.
        let state = match o.ctx_state {
            Some("running") | None => role.to_string(),
            Some(st) => st.to_string(),
        };
        let conn = if o.conn_id != 0 { format!("#{}", o.conn_id) } else { o.connections.to_string() };
        let inflight = if o.kind == "cc_consumer" { o.posted.to_string() } else { dash() };
        let [a, b, c, d] = head(o.kind.clone(), o.name.clone());
        rows.push(Row {
            cells: [a, b, c, d, state, conn, way(o.sent), way(o.received), inflight, dash(), ring, last],
            flagged: false,
        });
    }
    let rest = || [dash(), dash(), dash(), dash(), dash(), dash(), dash()];
    if rows.is_empty() {
        let [a, b, c, d] = head("process".into(), dash());
        let [f, g, h, i, j, k, l] = rest();
        rows.push(Row { cells: [a, b, c, d, "no engine".into(), f, g, h, i, j, k, l], flagged: false });
    }
    if s.unshown != (0, 0) || s.unshown_conns != 0 {
        let mut more = Vec::new();
        for (n, what) in [(s.unshown.0, "pe"), (s.unshown.1, "obj"), (s.unshown_conns, "conn")] {
            if n > 0 {
                more.push(format!("+{n} {what}"));
            }
        }
        let [a, b, c, d] = head("(more)".into(), more.join(" "));
        let [f, g, h, i, j, k, l] = rest();
        rows.push(Row { cells: [a, b, c, d, "no row left".into(), f, g, h, i, j, k, l], flagged: false });
    }
    // A connection's traffic is its server's too: counted once.
    let traffic =
        s.entries.iter().filter(|o| o.role != ROLE_CONNECTION).map(|o| o.sent.1 + o.received.1).sum();
    let idle = if s.engines.is_empty() { None } else { since(now, s.last_progress_ns) };
    Proc { pid: s.pid, name: s.comm.clone(), traffic, idle, rows }
}

/// The live processes of a scan, by pid.
pub fn processes(pages: &[PageFile], now: u64, stall: f64) -> Vec<Proc> {
    pages
        .iter()
        .filter_map(|p| match &p.found {
            Found::Live(s) => Some(process(s, now, stall)),
            _ => None,
        })
        .collect()
}

/// The line under the table: what is not a live process (dead, forged, invalid, foreign,
/// elsewhere pages; orphaned sockets), counted; empty when there is none.
pub fn others(pages: &[PageFile], orphans: &[Orphan]) -> String {
    let mut n = [0usize; 5];
    for p in pages {
        match p.found {
            Found::Live(_) => {}
            Found::Stale(_) => n[0] += 1,
            Found::Forged(..) => n[1] += 1,
            Found::Invalid(_) => n[2] += 1,
            Found::Foreign(_) => n[3] += 1,
            Found::Elsewhere(_) => n[4] += 1,
        }
    }
    let mut parts: Vec<String> = ["stale", "forged", "invalid", "foreign", "elsewhere"]
        .iter()
        .zip(n)
        .filter(|(_, n)| *n > 0)
        .map(|(what, n)| format!("{n} {what}"))
        .collect();
    if !orphans.is_empty() {
        parts.push(format!("{} orphaned socket(s)", orphans.len()));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("not live: {} page(s) (`doca_emu ls` says which)", parts.join(", "))
    }
}

/// What the processes are sorted by (key `s` goes to the next).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    /// Pid, ascending.
    Pid,
    /// Name, then pid.
    Name,
    /// Bytes sent and received, most first.
    Traffic,
    /// Time since the last progress, longest first (never progressed first).
    Idle,
}

impl Sort {
    fn next(self) -> Sort {
        match self {
            Sort::Pid => Sort::Name,
            Sort::Name => Sort::Traffic,
            Sort::Traffic => Sort::Idle,
            Sort::Idle => Sort::Pid,
        }
    }

    fn label(self) -> &'static str {
        match self {
            Sort::Pid => "pid",
            Sort::Name => "name",
            Sort::Traffic => "traffic",
            Sort::Idle => "idle",
        }
    }
}

/// What the keyboard is typing into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// Keys are commands.
    None,
    /// The process filter (after `/`).
    Filter(String),
    /// A plan for process `pid` (after `i` on one of its rows).
    Plan(u32, String),
}

/// What a key asks the loop to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Nothing beyond the state change.
    None,
    /// Leave.
    Quit,
    /// Inject the plan (text) into the process (pid).
    Inject(u32, String),
}

/// The state of the view.
#[derive(Clone, Debug)]
pub struct App {
    /// The fabric directory shown in the title.
    pub fabric_dir: String,
    /// The processes of the last scan (not refreshed while paused).
    pub procs: Vec<Proc>,
    /// The line about pages that are not live processes.
    pub others: String,
    /// Sort order.
    pub sort: Sort,
    /// Only processes whose pid or name contains this.
    pub filter: String,
    /// No new scans while set (key `p` or space).
    pub paused: bool,
    /// The selected row among those shown.
    pub selected: usize,
    /// What is being typed.
    pub input: Input,
    /// The last message (an injection's outcome).
    pub message: String,
    /// The keys are listed at the bottom (not in `watch --once`'s frame).
    pub keys: bool,
}

impl App {
    /// An empty view of `fabric_dir`.
    pub fn new(fabric_dir: &str) -> App {
        App {
            fabric_dir: fabric_dir.into(),
            procs: Vec::new(),
            others: String::new(),
            sort: Sort::Pid,
            filter: String::new(),
            paused: false,
            selected: 0,
            input: Input::None,
            message: String::new(),
            keys: true,
        }
    }

    /// The processes shown: filtered, then sorted.
    pub fn shown(&self) -> Vec<&Proc> {
        let f = self.filter.to_lowercase();
        let mut v: Vec<&Proc> = self
            .procs
            .iter()
            .filter(|p| f.is_empty() || p.pid.to_string().contains(&f) || p.name.to_lowercase().contains(&f))
            .collect();
        match self.sort {
            Sort::Pid => v.sort_by_key(|p| p.pid),
            Sort::Name => v.sort_by(|a, b| a.name.cmp(&b.name).then(a.pid.cmp(&b.pid))),
            Sort::Traffic => v.sort_by(|a, b| b.traffic.cmp(&a.traffic).then(a.pid.cmp(&b.pid))),
            Sort::Idle => v.sort_by(|a, b| {
                let key = |p: &Proc| p.idle.unwrap_or(f64::INFINITY);
                key(b).total_cmp(&key(a)).then(a.pid.cmp(&b.pid))
            }),
        }
        v
    }

    /// The rows shown, in order.
    pub fn rows(&self) -> Vec<&Row> {
        self.shown().into_iter().flat_map(|p| p.rows.iter()).collect()
    }

    /// The pid of the selected row.
    pub fn selected_pid(&self) -> Option<u32> {
        self.rows().get(self.selected).and_then(|r| r.cells[0].parse().ok())
    }

    /// Takes a new scan (kept as is while paused).
    pub fn refresh(&mut self, procs: Vec<Proc>, others: String) {
        if self.paused {
            return;
        }
        self.procs = procs;
        self.others = others;
        self.clamp();
    }

    fn clamp(&mut self) {
        self.selected = self.selected.min(self.rows().len().saturating_sub(1));
    }

    /// Handles one key press.
    pub fn key(&mut self, k: KeyEvent) -> Action {
        let ctrl_c = k.modifiers.contains(KeyModifiers::CONTROL) && k.code == KeyCode::Char('c');
        if ctrl_c {
            return Action::Quit;
        }
        match std::mem::replace(&mut self.input, Input::None) {
            Input::Filter(mut text) => {
                match k.code {
                    KeyCode::Enter => self.filter = text,
                    KeyCode::Esc => {}
                    KeyCode::Backspace => {
                        text.pop();
                        self.input = Input::Filter(text);
                    }
                    KeyCode::Char(c) => {
                        text.push(c);
                        self.input = Input::Filter(text);
                    }
                    _ => self.input = Input::Filter(text),
                }
                self.clamp();
                Action::None
            }
            Input::Plan(pid, mut text) => match k.code {
                KeyCode::Enter if !text.trim().is_empty() => {
                    self.message = format!("pid {pid}: injecting {text:?}…");
                    Action::Inject(pid, text)
                }
                KeyCode::Esc => Action::None,
                KeyCode::Backspace => {
                    text.pop();
                    self.input = Input::Plan(pid, text);
                    Action::None
                }
                KeyCode::Char(c) => {
                    text.push(c);
                    self.input = Input::Plan(pid, text);
                    Action::None
                }
                _ => {
                    self.input = Input::Plan(pid, text);
                    Action::None
                }
            },
            Input::None => {
                match k.code {
                    KeyCode::Char('q') | KeyCode::Esc => return Action::Quit,
                    KeyCode::Char('p') | KeyCode::Char(' ') => self.paused = !self.paused,
                    KeyCode::Char('s') => self.sort = self.sort.next(),
                    KeyCode::Char('/') => self.input = Input::Filter(self.filter.clone()),
                    KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
                    KeyCode::Down | KeyCode::Char('j') => {
                        self.selected += 1;
                        self.clamp();
                    }
                    KeyCode::Char('i') => match self.selected_pid() {
                        Some(pid) => self.input = Input::Plan(pid, String::new()),
                        None => self.message = "no process selected".into(),
                    },
                    _ => {}
                }
                Action::None
            }
        }
    }
}

/// Renders the view into `f`: a title line, the table, the line about pages that are not
/// live, and the keys (or what is being typed, or the last message).
pub fn draw(f: &mut Frame<'_>, app: &App) {
    let [title, table, others, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(2),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(f.area());
    let shown = app.shown();
    let mut head = format!("doca_emu watch — {}: {} process(es)", app.fabric_dir, shown.len());
    if shown.len() != app.procs.len() {
        head += &format!(" of {}", app.procs.len());
    }
    head += &format!(" · sort {}", app.sort.label());
    if !app.filter.is_empty() {
        head += &format!(" · filter {:?}", app.filter);
    }
    if app.paused {
        head += " · PAUSED";
    }
    f.render_widget(Paragraph::new(head), title);
    let rows = shown.iter().flat_map(|p| p.rows.iter()).map(|r| {
        let style = if r.flagged { Style::new().add_modifier(Modifier::BOLD) } else { Style::new() };
        TableRow::new(r.cells.iter().map(|c| Cell::from(c.as_str()))).style(style)
    });
    let header =
        TableRow::new(COLUMNS).style(Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
    let t = Table::new(rows, WIDTHS)
        .header(header)
        .column_spacing(1)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
    let mut state = TableState::default().with_selected(Some(app.selected));
    f.render_stateful_widget(t, table, &mut state);
    f.render_widget(Paragraph::new(app.others.as_str()), others);
    let foot_text = match &app.input {
        Input::Filter(text) => format!("filter (pid or name, Enter to apply, Esc to cancel): {text}"),
        Input::Plan(pid, text) => format!("plan for pid {pid} (Enter to inject, Esc to cancel): {text}"),
        Input::None if !app.message.is_empty() => app.message.clone(),
        Input::None if !app.keys => String::new(),
        Input::None => "q quit · p pause · s sort · / filter · ↑↓ select · i inject a plan".into(),
    };
    f.render_widget(Paragraph::new(Line::from(foot_text)), foot);
}

/// The screen [`draw`] makes for `app` on a `width` × `height` terminal, as lines of text
/// without trailing blanks (styles dropped).
pub fn frame_text(app: &App, width: u16, height: u16) -> String {
    let mut term = match Terminal::new(TestBackend::new(width, height)) {
        Ok(t) => t,
        Err(e) => return format!("cannot render: {e}\n"),
    };
    if let Err(e) = term.draw(|f| draw(f, app)) {
        return format!("cannot render: {e}\n");
    }
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut line = String::new();
        for x in 0..buf.area.width {
            line += buf[(x, y)].symbol();
        }
        out += line.trim_end();
        out.push('\n');
    }
    out
}

/// The height that shows every row of `app` (title, header, rows, two lines under).
pub fn full_height(app: &App) -> u16 {
    u16::try_from(app.rows().len() + 4).unwrap_or(u16::MAX).max(6)
}

/// Whether `watch` should take the terminal: stdin and stdout are terminals.
pub fn is_interactive() -> bool {
    std::io::stdout().is_terminal() && std::io::stdin().is_terminal()
}

/// The scan `watch` shows: processes and the line about the rest.
pub type Scan = Box<dyn FnMut() -> Result<(Vec<Proc>, String), String>>;

/// Runs the view on the terminal until `q` (or `count` frames drawn): a new scan every
/// `interval` unless paused; a plan is injected in a thread (the view keeps refreshing)
/// and its outcome shown at the bottom.
pub fn run(
    fabric_dir: &str,
    dir: OwnedFd,
    mut scan: Scan,
    interval: Duration,
    count: Option<u64>,
) -> Result<(), String> {
    let mut app = App::new(fabric_dir);
    let mut term = ratatui::try_init().map_err(|e| format!("terminal: {e}"))?;
    // A terminal that does not tell its size (a serial console, a pty nobody sized) says
    // 0 x 0: draw into 80 x 24 then.
    if term.size().is_ok_and(|s| s.width == 0 || s.height == 0) {
        let fixed = TerminalOptions { viewport: Viewport::Fixed(Rect::new(0, 0, 80, 24)) };
        match Terminal::with_options(CrosstermBackend::new(std::io::stdout()), fixed) {
            Ok(t) => term = t,
            Err(e) => {
                ratatui::restore();
                return Err(format!("terminal: {e}"));
            }
        }
    }
    let (tx, rx) = mpsc::channel::<String>();
    let mut frames = 0u64;
    let mut next_scan = Instant::now();
    let result = loop {
        if Instant::now() >= next_scan {
            match scan() {
                Ok((procs, others)) => app.refresh(procs, others),
                Err(e) => break Err(e),
            }
            next_scan = Instant::now() + interval;
        }
        while let Ok(m) = rx.try_recv() {
            app.message = m;
        }
        if let Err(e) = term.draw(|f| draw(f, &app)) {
            break Err(format!("terminal: {e}"));
        }
        frames += 1;
        if count.is_some_and(|c| frames >= c) {
            break Ok(());
        }
        let wait = next_scan.saturating_duration_since(Instant::now()).min(Duration::from_millis(200));
        match event::poll(wait) {
            Ok(false) => continue,
            Ok(true) => {}
            Err(e) => break Err(format!("terminal: {e}")),
        }
        let k = match event::read() {
            Ok(Event::Key(k)) if k.kind == KeyEventKind::Press => k,
            Ok(_) => continue,
            Err(e) => break Err(format!("terminal: {e}")),
        };
        match app.key(k) {
            Action::None => {}
            Action::Quit => break Ok(()),
            Action::Inject(pid, plan) => {
                let tx = tx.clone();
                let dir = match dir.try_clone() {
                    Ok(d) => d,
                    Err(e) => {
                        app.message = format!("pid {pid}: cannot inject: {e}");
                        continue;
                    }
                };
                std::thread::spawn(move || {
                    let said =
                        match inject(std::os::fd::AsFd::as_fd(&dir), pid, &plan, Duration::from_secs(5)) {
                            Ok(Outcome::Accepted) => format!("pid {pid}: plan accepted"),
                            Ok(Outcome::Refused(why)) => format!("pid {pid}: plan refused: {why}"),
                            Ok(Outcome::Unavailable(why)) => format!("pid {pid}: {why}"),
                            Ok(Outcome::Pending(_)) => {
                                format!(
                                    "pid {pid}: plan written, not read yet: it is read at the next progress"
                                )
                            }
                            Err(why) => format!("pid {pid}: {why}"),
                        };
                    let _ = tx.send(said);
                });
            }
        }
    };
    ratatui::restore();
    let _ = Backend::flush(term.backend_mut());
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use doca_core::status::{EngineView, EntryView};

    const S: u64 = 1_000_000_000;

    fn snap(pid: u32, comm: &str, engines: Vec<EngineView>, entries: Vec<EntryView>) -> Snapshot {
        let last = engines.iter().map(|e| e.last_progress_ns).max().unwrap_or(0);
        Snapshot {
            pid,
            uid: 0,
            start_time: 1,
            created_ns: 1,
            comm: comm.into(),
            last_progress_ns: last,
            unshown: (0, 0),
            unshown_conns: 0,
            engines,
            entries,
            plan_seq: 0,
            answer: (0, 0, String::new()),
        }
    }

    fn engine(id: u64, armed: bool, inflight: u64, last: u64) -> EngineView {
        EngineView { id, ctxs: 1, armed, inflight, progress_calls: 10, last_progress_ns: last }
    }

    fn entry(kind: &str, connections: u64, bytes: u64) -> EntryView {
        EntryView {
            gen: 2,
            kind: kind.into(),
            dev: None,
            rep: None,
            engine: 1,
            name: "svc".into(),
            connections,
            posted: 3,
            ring: (1, 64),
            sent: (1, bytes),
            received: (2, bytes),
            conn_id: 0,
            ctx_state: Some("running"),
            role: doca_core::status::ROLE_OBJECT,
            slot: 1,
            parent: 0,
            peer_pid: 0,
            tasks: (0, 0, 0),
        }
    }

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    fn app() -> App {
        let now = 100 * S;
        let mut a = App::new("/tmp/f");
        a.refresh(
            vec![
                process(&snap(30, "zeta", vec![engine(1, false, 0, now - 5 * S)], vec![]), now, 1.0),
                process(
                    &snap(10, "beta", vec![engine(1, true, 0, now)], vec![entry("cc_server", 0, 10)]),
                    now,
                    1.0,
                ),
                process(
                    &snap(20, "alpha", vec![engine(1, false, 2, now)], vec![entry("cc_client", 1, 5000)]),
                    now,
                    1.0,
                ),
                process(&snap(40, "bare", vec![], vec![]), now, 1.0),
            ],
            String::new(),
        );
        a
    }

    #[test]
    fn rows_say_state_traffic_in_flight_ring_and_last_progress() {
        let a = app();
        let cells = |pid: u32, object: &str| {
            a.rows()
                .into_iter()
                .find(|r| r.cells[0] == pid.to_string() && r.cells[2] == object)
                .unwrap()
                .clone()
        };
        let stalled = cells(30, "pe 1");
        assert_eq!(
            (stalled.cells[4].as_str(), stalled.flagged, stalled.cells[11].as_str()),
            ("stalled", true, "5.0s")
        );
        assert_eq!(cells(10, "pe 1").cells[4], "asleep");
        assert_eq!(cells(20, "pe 1").cells[8], "2", "tasks in flight");
        let srv = cells(10, "cc_server").cells;
        assert_eq!(&srv[4..], ["listening", "0", "1/10B", "2/10B", "-", "-", "1/64", "0.0s"]);
        let cli = cells(20, "cc_client").cells;
        assert_eq!(&cli[4..8], ["connected", "1", "1/4.9K", "2/4.9K"]);
        assert_eq!(
            cells(40, "process").cells[4],
            "no engine",
            "a process with nothing yet still has its row"
        );
    }

    #[test]
    fn connections_sit_under_their_server_and_engine_contexts_count_their_tasks() {
        use doca_core::status::{ROLE_CONNECTION, ROLE_ENGINE_CTX};
        let now = 100 * S;
        let conn = |id: u64, peer: u64, msgs: u64| EntryView {
            role: ROLE_CONNECTION,
            slot: 10 + id,
            parent: 3,
            conn_id: id,
            peer_pid: peer,
            connections: 0,
            posted: 0,
            sent: (msgs, msgs * 10),
            received: (msgs, msgs * 10),
            ctx_state: Some("connected"),
            ..entry("cc_conn", 0, 0)
        };
        let dma = EntryView {
            role: ROLE_ENGINE_CTX,
            kind: "dma".into(),
            name: String::new(),
            dev: "03:00.0".parse().ok(),
            ring: (0, 0),
            tasks: (2, 7, 7 << 20),
            ..entry("dma", 0, 0)
        };
        // A connection whose owner has no row comes last, unindented.
        let stray = EntryView { parent: 0, ..conn(9, 77, 1) };
        let entries = vec![
            conn(1, 41, 3),
            stray,
            EntryView { slot: 3, ..entry("cc_server", 2, 50) },
            dma,
            conn(2, 42, 5),
            EntryView { slot: 4, ..entry("cc_client", 1, 1) },
        ];
        let mut s = snap(10, "srv", vec![engine(1, false, 0, now)], entries);
        s.unshown_conns = 498;
        let p = process(&s, now, 1.0);
        let cells: Vec<Vec<&str>> =
            p.rows.iter().map(|r| r.cells[2..].iter().map(|c| c.as_str()).collect()).collect();
        assert_eq!(cells[1][..2], ["cc_server", "svc"]);
        assert_eq!(
            cells[2],
            ["  cc_conn", "pid 41", "connected", "#1", "3/30B", "3/30B", "-", "-", "1/64", "0.0s"]
        );
        assert_eq!(cells[3][..6], ["  cc_conn", "pid 42", "connected", "#2", "5/50B", "5/50B"]);
        assert_eq!(cells[4], ["dma", "0000:03:00.0", "running", "-", "-", "-", "2", "7/7.0M", "-", "0.0s"]);
        assert_eq!(cells[5][0], "cc_client");
        assert_eq!(cells[6][..4], ["cc_conn", "pid 77", "connected", "#9"]);
        assert_eq!(cells[7][..3], ["(more)", "+498 conn", "no row left"]);
        assert_eq!(p.traffic, 50 * 2 + 2, "the connections' bytes are their server's: counted once");
    }

    #[test]
    fn keys_sort_filter_pause_select_and_inject() {
        let mut a = app();
        let order = |a: &App| a.shown().iter().map(|p| p.pid).collect::<Vec<_>>();
        assert_eq!(order(&a), [10, 20, 30, 40]);
        a.key(key(KeyCode::Char('s')));
        assert_eq!(order(&a), [20, 40, 10, 30], "by name");
        a.key(key(KeyCode::Char('s')));
        assert_eq!(order(&a), [20, 10, 30, 40], "by traffic, most first");
        a.key(key(KeyCode::Char('s')));
        assert_eq!(order(&a), [40, 30, 10, 20], "by idle time: no progress ever first");
        a.key(key(KeyCode::Char('s')));
        assert_eq!(order(&a), [10, 20, 30, 40], "back to pids");

        for k in "/ta".chars() {
            a.key(key(KeyCode::Char(k)));
        }
        assert_eq!(order(&a), [10, 20, 30, 40], "not applied while typing");
        a.key(key(KeyCode::Enter));
        assert_eq!(order(&a), [10, 30], "beta and zeta contain \"ta\"");
        a.key(key(KeyCode::Char('/')));
        a.key(key(KeyCode::Backspace));
        a.key(key(KeyCode::Backspace));
        a.key(key(KeyCode::Enter));
        assert_eq!(order(&a), [10, 20, 30, 40], "an empty filter shows all");

        a.key(key(KeyCode::Char('p')));
        assert!(a.paused);
        a.refresh(Vec::new(), "x".into());
        assert_eq!(order(&a), [10, 20, 30, 40], "a pause keeps the last scan");
        a.key(key(KeyCode::Char(' ')));
        assert!(!a.paused);

        // Rows: 10 pe, 10 cc_server, 20 pe, 20 cc_client, ...: the third is process 20's.
        a.key(key(KeyCode::Down));
        a.key(key(KeyCode::Down));
        assert_eq!(a.selected_pid(), Some(20));
        a.key(key(KeyCode::Char('i')));
        assert_eq!(a.input, Input::Plan(20, String::new()));
        assert_eq!(a.key(key(KeyCode::Enter)), Action::None, "an empty plan is not sent");
        assert_eq!(a.input, Input::Plan(20, String::new()));
        for k in "delay 1ms".chars() {
            assert_eq!(a.key(key(KeyCode::Char(k))), Action::None, "typing: q and p are letters here");
        }
        assert_eq!(a.key(key(KeyCode::Enter)), Action::Inject(20, "delay 1ms".into()));
        assert_eq!(a.input, Input::None);
        a.key(key(KeyCode::Char('i')));
        a.key(key(KeyCode::Char('q')));
        assert_eq!(a.key(key(KeyCode::Esc)), Action::None, "Esc cancels the plan");
        assert_eq!(a.input, Input::None);

        for _ in 0..20 {
            a.key(key(KeyCode::Down));
        }
        assert_eq!(a.selected, a.rows().len() - 1, "the selection stays on the table");
        assert_eq!(a.key(key(KeyCode::Char('q'))), Action::Quit);
        assert_eq!(a.key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)), Action::Quit);
    }

    #[test]
    fn the_frame_has_the_title_the_columns_and_the_keys() {
        let a = app();
        let text = frame_text(&a, WIDTH, full_height(&a));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "doca_emu watch — /tmp/f: 4 process(es) · sort pid");
        assert_eq!(lines[1].split_whitespace().collect::<Vec<_>>(), COLUMNS);
        assert_eq!(lines.len(), 2 + a.rows().len() + 2, "{text}");
        assert!(lines.last().unwrap().starts_with("q quit · p pause"), "{text}");
    }
}
