//! Writing a plan into a process's mailbox, and waiting for its answer.
//!
//! The injector takes an exclusive `flock` on the page file (one injector at a time), writes
//! the text and its length, then the next sequence number: the process reads the sequence
//! once per progress pass and, when it changed, the plan (`doca_core::status`). Its answer
//! (accepted, refused with a reason, or unavailable: no handler) comes back in the page,
//! tagged with the same sequence number. A process that does not progress leaves the plan
//! unread: the wait ends after its timeout with [`Outcome::Pending`]. Only a page the named
//! process maps is written into (a forged page is refused, see [`crate::scan`]).

use std::os::fd::BorrowedFd;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant};

use doca_core::status::{
    Snapshot, ANSWER_ACCEPTED, ANSWER_UNAVAILABLE, M_ANSWER_SEQ, M_PLAN_LEN, M_PLAN_SEQ, M_PLAN_TEXT,
    PLAN_MAX,
};
use rustix::fs::FlockOperation;

use crate::scan::{is_mapped_by, open_page, read_page, Found};

/// How an injection ended.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The process installed the plan.
    Accepted,
    /// The process's handler refused it: why.
    Refused(String),
    /// The process has no handler (`doca_core::status::on_plan`).
    Unavailable(String),
    /// Not read before the timeout: seconds since the process's last progress (`None`:
    /// never progressed).
    Pending(Option<f64>),
}

/// Writes `plan` into the mailbox of `pid` and waits up to `timeout` for the answer.
pub fn inject(dir: BorrowedFd<'_>, pid: u32, plan: &str, timeout: Duration) -> Result<Outcome, String> {
    if plan.len() > PLAN_MAX {
        return Err(format!("plan of {} bytes: at most {PLAN_MAX}", plan.len()));
    }
    // The page of the live process `pid` is (here) the process's (scan: it maps the file).
    let pages = crate::scan::scan(&dir).map_err(|e| format!("reading the fabric directory: {e}"))?;
    let Some(file) =
        pages.iter().find(|p| p.pid == pid && matches!(p.found, Found::Live(_))).map(|p| p.file.clone())
    else {
        return Err(format!("process {pid} is not running (no live page of its)"));
    };
    let f = open_page(dir, &file, true).map_err(|found| match found {
        Found::Foreign(uid) => format!("{file} belongs to uid {uid}: only its own user may inject"),
        Found::Invalid(why) => format!("{file}: {why}"),
        other => format!("{file}: {other:?}"),
    })?;
    let snap = read_page(&f).map_err(|why| format!("{file}: {why}"))?;
    // The very file opened here must be the one the process maps: a page anyone wrote for a
    // live pid is never written into.
    is_mapped_by(pid, &f).map_err(|why| format!("{file} is forged, not injected into: {why}"))?;
    // One injector at a time (bounded wait: another injector holds it only while writing).
    let deadline = Instant::now() + timeout;
    loop {
        match rustix::fs::flock(&f, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => break,
            Err(rustix::io::Errno::WOULDBLOCK) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => return Err(format!("{file}: flock: {e}")),
        }
    }
    let seq = snap.plan_seq.wrapping_add(1).max(1);
    let mut text = plan.as_bytes().to_vec();
    text.resize(plan.len().div_ceil(8) * 8, 0);
    let at = |word: usize| (word * 8) as u64;
    f.write_all_at(&text, at(M_PLAN_TEXT)).map_err(|e| format!("write plan: {e}"))?;
    f.write_all_at(&(plan.len() as u64).to_le_bytes(), at(M_PLAN_LEN))
        .map_err(|e| format!("write plan: {e}"))?;
    f.write_all_at(&seq.to_le_bytes(), at(M_PLAN_SEQ)).map_err(|e| format!("write plan: {e}"))?;
    let answered = |f: &std::fs::File| -> Result<Option<Snapshot>, String> {
        let mut w = [0u8; 8];
        f.read_exact_at(&mut w, at(M_ANSWER_SEQ)).map_err(|e| format!("read answer: {e}"))?;
        if u64::from_le_bytes(w) != seq {
            return Ok(None);
        }
        read_page(f).map(Some).map_err(|why| format!("{file}: {why}"))
    };
    loop {
        if let Some(s) = answered(&f)? {
            let (_, code, text) = s.answer;
            return Ok(match code {
                ANSWER_ACCEPTED => Outcome::Accepted,
                ANSWER_UNAVAILABLE => Outcome::Unavailable(text),
                _ => Outcome::Refused(text),
            });
        }
        if Instant::now() >= deadline {
            let s = read_page(&f).map_err(|why| format!("{file}: {why}"))?;
            let now = doca_core::status::now_ns();
            let idle = (s.last_progress_ns != 0).then(|| now.saturating_sub(s.last_progress_ns) as f64 / 1e9);
            return Ok(Outcome::Pending(idle));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
