//! What `ls` and `watch` show: a JSON document ([`json()`]) and lines of text ([`text`]),
//! both from the same scan.
//!
//! Times are "seconds since": the pages hold the coarse monotonic clock, which every process
//! of the machine shares, and the tool reads it too ([`doca_core::status::now_ns`]).

use std::fmt::Write as _;

use doca_core::status::{
    EngineView, EntryView, Snapshot, ANSWER_ACCEPTED, ANSWER_REFUSED, ANSWER_UNAVAILABLE, ROLE_CONNECTION,
    ROLE_ENGINE_CTX,
};
use serde_json::{json, Value};

use crate::scan::{Found, PageFile};
use crate::sockets::Orphan;

/// Seconds from `then` (coarse monotonic ns; 0 = never) to `now`.
fn since(now: u64, then: u64) -> Option<f64> {
    (then != 0).then(|| now.saturating_sub(then) as f64 / 1e9)
}

fn pci(p: Option<doca_core::PciAddr>) -> Value {
    p.map_or(Value::Null, |p| Value::String(p.to_string()))
}

fn answer_name(code: u64) -> Value {
    match code {
        ANSWER_ACCEPTED => json!("accepted"),
        ANSWER_REFUSED => json!("refused"),
        ANSWER_UNAVAILABLE => json!("unavailable"),
        _ => Value::Null,
    }
}

fn engine_json(e: &EngineView, now: u64) -> Value {
    json!({
        "id": e.id,
        "contexts": e.ctxs,
        "armed": e.armed,
        "inflight_tasks": e.inflight,
        "progress_calls": e.progress_calls,
        "since_progress_s": since(now, e.last_progress_ns),
    })
}

fn role_name(role: u64) -> &'static str {
    match role {
        ROLE_CONNECTION => "connection",
        ROLE_ENGINE_CTX => "engine_context",
        _ => "object",
    }
}

/// The objects of a process in the order they are shown: each object followed by its
/// connections (the connection rows that name its row), with their depth (0 an object, 1 a
/// connection under it); connections whose owner has no row come last, at depth 0.
pub fn grouped(entries: &[EntryView]) -> Vec<(usize, &EntryView)> {
    let is_conn = |o: &EntryView| o.role == ROLE_CONNECTION;
    let mut out = Vec::with_capacity(entries.len());
    let mut placed = vec![false; entries.len()];
    for o in entries.iter().filter(|o| !is_conn(o)) {
        out.push((0, o));
        for (i, c) in entries.iter().enumerate() {
            if is_conn(c) && !placed[i] && c.parent != 0 && c.parent == o.slot {
                placed[i] = true;
                out.push((1, c));
            }
        }
    }
    out.extend(entries.iter().enumerate().filter(|&(i, c)| is_conn(c) && !placed[i]).map(|(_, c)| (0, c)));
    out
}

fn entry_json(o: &EntryView) -> Value {
    json!({
        "role": role_name(o.role),
        "kind": o.kind,
        "name": o.name,
        "state": o.ctx_state,
        "dev": pci(o.dev),
        "rep": pci(o.rep),
        "engine": o.engine,
        "connections": o.connections,
        "connection_id": o.conn_id,
        "posted_buffers": o.posted,
        "ring": { "fill": o.ring.0, "slots": o.ring.1 },
        "sent": { "messages": o.sent.0, "bytes": o.sent.1 },
        "received": { "messages": o.received.0, "bytes": o.received.1 },
        "peer_pid": o.peer_pid,
        "row": o.slot,
        "owner_row": o.parent,
        "tasks": { "queued": o.tasks.0, "done": o.tasks.1, "bytes": o.tasks.2 },
    })
}

fn process_json(s: &Snapshot, now: u64, alive: bool) -> Value {
    json!({
        "pid": s.pid,
        "name": s.comm,
        "alive": alive,
        "start_time": s.start_time,
        "since_progress_s": since(now, s.last_progress_ns),
        "engines": s.engines.iter().map(|e| engine_json(e, now)).collect::<Vec<_>>(),
        "objects": s.entries.iter().map(entry_json).collect::<Vec<_>>(),
        "unshown": { "engines": s.unshown.0, "objects": s.unshown.1, "connections": s.unshown_conns },
        "plan": {
            "seq": s.plan_seq,
            "answered": s.answer.0,
            "answer": answer_name(s.answer.1),
            "text": s.answer.2,
        },
    })
}

/// `ls --json`: the live processes, then the stale, forged, invalid and foreign pages.
pub fn json(fabric_dir: &str, pages: &[PageFile], orphans: &[Orphan], now: u64) -> Value {
    let mut live = Vec::new();
    let mut stale = Vec::new();
    let mut invalid = Vec::new();
    let mut foreign = Vec::new();
    let mut forged = Vec::new();
    let mut elsewhere = Vec::new();
    for p in pages {
        match &p.found {
            Found::Live(s) => live.push(process_json(s, now, true)),
            Found::Stale(s) => stale.push(json!({"file": p.file, "pid": p.pid, "name": s.comm})),
            Found::Invalid(why) => invalid.push(json!({"file": p.file, "pid": p.pid, "why": why})),
            Found::Foreign(uid) => foreign.push(json!({"file": p.file, "pid": p.pid, "uid": uid})),
            Found::Forged(s, why) => {
                forged.push(json!({"file": p.file, "pid": p.pid, "claims": s.comm, "why": why}))
            }
            Found::Elsewhere(s) => elsewhere.push(json!({"file": p.file, "pid": p.pid, "name": s.comm})),
        }
    }
    json!({
        "fabric_dir": fabric_dir,
        "processes": live,
        "stale": stale,
        "forged": forged,
        "elsewhere": elsewhere,
        "invalid": invalid,
        "foreign": foreign,
        "orphaned_sockets": orphans.iter().map(|o| o.sock.as_str()).collect::<Vec<_>>(),
    })
}

fn bytes(n: u64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1}G", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1}M", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1}K", n as f64 / 1024.0),
        n => format!("{n}B"),
    }
}

/// `ls` and each frame of `watch`: one block per live process, then one line per invalid,
/// foreign, forged or elsewhere page; what dead processes left (stale pages, orphaned
/// sockets) is one summary line, or one line each with `all`. A process whose last progress
/// is `stall` seconds old or more is flagged "no progress for N s".
pub fn text(
    fabric_dir: &str,
    pages: &[PageFile],
    orphans: &[Orphan],
    now: u64,
    stall: f64,
    all: bool,
) -> String {
    let mut out = String::new();
    let live = pages.iter().filter(|p| matches!(p.found, Found::Live(_))).count();
    let _ = writeln!(out, "fabric directory {fabric_dir}: {live} process(es)");
    for p in pages {
        let Found::Live(s) = &p.found else { continue };
        let idle = since(now, s.last_progress_ns);
        let flag = match idle {
            // A process without engines (legacy endpoints only) makes progress in its calls.
            _ if s.engines.is_empty() => String::new(),
            None => "  never progressed".to_string(),
            Some(t) if t >= stall => format!("  no progress for {t:.1} s"),
            Some(_) => String::new(),
        };
        let _ = writeln!(out, "pid {} {}{flag}", s.pid, s.comm);
        for e in &s.engines {
            let last = since(now, e.last_progress_ns).map_or("never".into(), |t| format!("{t:.1} s ago"));
            let _ = writeln!(
                out,
                "  pe {}: {} ctx, {} in flight, {} progress calls, last {last}{}",
                e.id,
                e.ctxs,
                e.inflight,
                e.progress_calls,
                if e.armed { ", asleep on its handle" } else { "" }
            );
        }
        for (depth, o) in grouped(&s.entries) {
            if depth > 0 {
                // A connection under its server: its number, peer, state and traffic.
                let peer = if o.peer_pid != 0 { format!(" peer pid {}", o.peer_pid) } else { String::new() };
                let _ = writeln!(
                    out,
                    "    conn #{}{peer} [{}]: sent {} msg {}, recv {} msg {}, ring {}/{}",
                    o.conn_id,
                    o.ctx_state.unwrap_or("?"),
                    o.sent.0,
                    bytes(o.sent.1),
                    o.received.0,
                    bytes(o.received.1),
                    o.ring.0,
                    o.ring.1
                );
                continue;
            }
            let mut what = format!("  {}", o.kind);
            if !o.name.is_empty() {
                let _ = write!(what, " {:?}", o.name);
            }
            if let Some(d) = o.dev {
                let _ = write!(what, " dev {d}");
            }
            if let Some(r) = o.rep {
                let _ = write!(what, " rep {r}");
            }
            if o.engine != 0 {
                let _ = write!(what, " pe {}", o.engine);
            }
            if o.conn_id != 0 {
                let _ = write!(what, " conn #{}", o.conn_id);
            }
            if o.peer_pid != 0 {
                let _ = write!(what, " peer pid {}", o.peer_pid);
            }
            if let Some(st) = o.ctx_state {
                let _ = write!(what, " [{st}]");
            }
            if o.role == ROLE_ENGINE_CTX {
                let (queued, done, b) = o.tasks;
                let _ = writeln!(out, "{what}: {queued} task(s) queued, {done} done ({})", bytes(b));
                continue;
            }
            let _ = writeln!(
                out,
                "{what}: {} conn, sent {} msg {}, recv {} msg {}, ring {}/{}, posted {}",
                o.connections,
                o.sent.0,
                bytes(o.sent.1),
                o.received.0,
                bytes(o.received.1),
                o.ring.0,
                o.ring.1,
                o.posted
            );
        }
        if s.unshown != (0, 0) {
            let _ = writeln!(
                out,
                "  (+{} engines, +{} objects not shown: no row left)",
                s.unshown.0, s.unshown.1
            );
        }
        if s.unshown_conns != 0 {
            let _ = writeln!(
                out,
                "  (+{} connections without a row of their own: counted in their server's)",
                s.unshown_conns
            );
        }
    }
    for p in pages {
        let line = match &p.found {
            Found::Live(_) => continue,
            Found::Stale(_) if !all => continue,
            Found::Stale(s) => {
                format!("stale: {} (pid {} {} is gone; `doca_emu clean` removes it)", p.file, s.pid, s.comm)
            }
            Found::Invalid(why) => format!("invalid: {}: {why}", p.file),
            Found::Foreign(uid) => format!("foreign: {} belongs to uid {uid}: not read", p.file),
            Found::Forged(s, why) => {
                format!(
                    "forged: {} (claims to be pid {} {}): {why}; never injected into",
                    p.file, s.pid, s.comm
                )
            }
            Found::Elsewhere(s) => format!(
                "elsewhere: {} (pid {} {} of another PID namespace, alive; run doca_emu there to see or inject into it)",
                p.file, s.pid, s.comm
            ),
        };
        let _ = writeln!(out, "{line}");
    }
    let stale = pages.iter().filter(|p| matches!(p.found, Found::Stale(_))).count();
    if all {
        for o in orphans {
            let _ = writeln!(out, "orphaned: {} (its server is gone; `doca_emu clean` removes it)", o.sock);
        }
    } else if stale + orphans.len() > 0 {
        let _ = writeln!(
            out,
            "left by dead processes: {stale} stale page(s), {} orphaned socket(s) (`--all` lists them, `doca_emu clean` removes them)",
            orphans.len()
        );
    }
    out
}
