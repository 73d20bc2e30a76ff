//! The command line: `doca_emu ls [--json]`, `doca_emu watch [--once]`, `doca_emu inject <pid|name>
//! <plan>`, `doca_emu clean`, `doca_emu keygen DIR [--force]`.
//!
//! Exit codes: 0 done (an injected plan accepted); 1 an error, or the plan refused or not
//! available in that process; 3 the plan was written but not read before the timeout (the
//! process does not progress).

use std::io::Write;
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use doca_core::status::now_ns;
use doca_link::FabricDir;

use crate::inject::{inject, Outcome};
use crate::report;
use crate::scan::{scan, Found, PageFile};
use crate::sockets::Orphan;

/// See and steer the processes of a running emulation (this user's, in the fabric
/// directory: DOCA_EMU_FABRIC_DIR, else $XDG_RUNTIME_DIR/doca-emu, else /tmp/doca-emu-UID).
#[derive(Parser, Debug)]
#[command(name = "doca_emu", version = doca_core::DOCA_VERSION)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// List the processes: engines, servers, clients, consumers, producers, counters.
    Ls {
        /// One JSON document instead of text.
        #[arg(long)]
        json: bool,
        /// Flag processes whose last progress is at least this old (seconds).
        #[arg(long, default_value = "1")]
        stall: f64,
        /// List what dead processes left one line each (default: one summary line).
        #[arg(long)]
        all: bool,
    },
    /// A live table of every engine and object (a terminal UI: q quit, p pause, s sort,
    /// / filter, arrows select, i inject a plan); frames of `ls`'s plain lines when not on a
    /// terminal; one frame of the table as plain text with `--once`.
    Watch {
        /// Print the table once as plain text (for scripts) and exit.
        #[arg(long)]
        once: bool,
        /// Seconds between frames.
        #[arg(long, default_value = "1")]
        interval: f64,
        /// Stop after this many frames (default: until interrupted).
        #[arg(long)]
        count: Option<u64>,
        /// Flag processes whose last progress is at least this old (seconds).
        #[arg(long, default_value = "1")]
        stall: f64,
        /// List what dead processes left one line each (default: one summary line).
        #[arg(long)]
        all: bool,
    },
    /// Hand a fault plan to a process: it reads it at its next progress and answers.
    Inject {
        /// The process: its pid, or its name when one live process has it.
        target: String,
        /// The plan's text.
        plan: String,
        /// Seconds to wait for the answer.
        #[arg(long, default_value = "5")]
        timeout: f64,
    },
    /// Remove what processes that are gone left: status pages, sockets, lock files.
    Clean,
    /// Make the remote link's keys (host and DPU on two machines): DIR, mode 0700, with
    /// host.key, host.pub, dpu.key, dpu.pub. The host needs host.key and dpu.pub, the DPU
    /// dpu.key and host.pub (DOCA_EMU_LINK_KEYS=DIR on both).
    Keygen {
        /// The key directory (made when missing).
        dir: std::path::PathBuf,
        /// Replace keys already there.
        #[arg(long)]
        force: bool,
    },
}

fn fabric() -> Result<FabricDir, String> {
    FabricDir::open().map_err(|e| format!("fabric directory: {e} (see DOCA_EMU_FABRIC_DIR)"))
}

fn list(dir: &FabricDir) -> Result<Vec<PageFile>, String> {
    scan(dir).map_err(|e| format!("reading {}: {e}", dir.path().display()))
}

fn orphans(dir: &FabricDir) -> Result<Vec<Orphan>, String> {
    crate::sockets::orphans(dir).map_err(|e| format!("reading {}: {e}", dir.path().display()))
}

fn seconds(s: f64) -> Duration {
    Duration::from_secs_f64(if s.is_finite() { s.clamp(0.0, 86_400.0) } else { 1.0 })
}

/// The process `target` names: a pid with a live page, or the one live process of that name.
fn resolve(pages: &[PageFile], target: &str) -> Result<u32, String> {
    if let Ok(pid) = target.parse::<u32>() {
        return match pages.iter().find(|p| p.pid == pid) {
            Some(PageFile { found: Found::Live(_), .. }) => Ok(pid),
            Some(PageFile { found: Found::Stale(_), .. }) => {
                Err(format!("process {pid} is gone (stale page)"))
            }
            Some(PageFile { found: Found::Foreign(uid), .. }) => {
                Err(format!("process {pid} belongs to uid {uid}: only its own user may inject"))
            }
            Some(PageFile { found: Found::Invalid(why), .. }) => Err(format!("process {pid}: {why}")),
            Some(PageFile { found: Found::Forged(_, why), file, .. }) => {
                Err(format!("{file} is forged, not injected into: {why}"))
            }
            Some(PageFile { found: Found::Elsewhere(_), file, .. }) => Err(format!(
                "{file}: process {pid} of another PID namespace: run doca_emu in that namespace to inject into it"
            )),
            None => Err(format!("no status page for pid {pid}")),
        };
    }
    let named: Vec<u32> = pages
        .iter()
        .filter_map(|p| match &p.found {
            Found::Live(s) if s.comm == target => Some(p.pid),
            _ => None,
        })
        .collect();
    match named.as_slice() {
        [pid] => Ok(*pid),
        [] => Err(format!("no running process named {target}")),
        pids => Err(format!("{} processes are named {target} (pids {pids:?}): give a pid", pids.len())),
    }
}

/// `doca_emu keygen`: the keys, then what to copy where.
fn keygen(dir: &std::path::Path, force: bool) -> Result<ExitCode, String> {
    use doca_link::remote::{keys, Keys, Role};
    keys::generate(dir, force).map_err(|e| match e {
        doca_link::Error::InUse => {
            format!("{}: keys are there already (--force replaces them)", dir.display())
        }
        e => format!("keygen {}: {e}", dir.display()),
    })?;
    let host = Keys::load(dir, Role::Host).map_err(|e| format!("reading the new keys: {e}"))?;
    let d = dir.display();
    println!("wrote {d}/host.key, {d}/host.pub, {d}/dpu.key, {d}/dpu.pub");
    println!(
        "host key {}, dpu key {} (log lines name a peer by these)",
        keys::fingerprint(host.public()),
        keys::fingerprint(host.peer())
    );
    println!("the host needs host.key and dpu.pub, the DPU dpu.key and host.pub; on both: DOCA_EMU_LINK_KEYS=<their directory>");
    Ok(ExitCode::SUCCESS)
}

/// Runs the command line `args` (without the program name's handling: clap does it).
pub fn run(args: Args) -> Result<ExitCode, String> {
    // keygen needs no fabric directory.
    let cmd = match args.cmd {
        Cmd::Keygen { dir, force } => return keygen(&dir, force),
        cmd => cmd,
    };
    let dir = fabric()?;
    let shown = dir.path().display().to_string();
    match cmd {
        Cmd::Ls { json, stall, all } => {
            let pages = list(&dir)?;
            let orphans = orphans(&dir)?;
            let now = now_ns();
            if json {
                println!("{}", report::json(&shown, &pages, &orphans, now));
            } else {
                print!("{}", report::text(&shown, &pages, &orphans, now, stall, all));
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Watch { once, interval, count, stall, all } => {
            if once {
                let mut app = crate::tui::App::new(&shown);
                let pages = list(&dir)?;
                let orphans = orphans(&dir)?;
                app.refresh(
                    crate::tui::processes(&pages, now_ns(), stall),
                    crate::tui::others(&pages, &orphans),
                );
                app.keys = false;
                let height = crate::tui::full_height(&app);
                print!("{}", crate::tui::frame_text(&app, crate::tui::WIDTH, height));
                return Ok(ExitCode::SUCCESS);
            }
            if crate::tui::is_interactive() {
                let fd = dir.as_fd().try_clone_to_owned().map_err(|e| format!("fabric directory: {e}"))?;
                let scan: crate::tui::Scan = Box::new(move || {
                    let pages = list(&dir)?;
                    let orphans = orphans(&dir)?;
                    Ok((crate::tui::processes(&pages, now_ns(), stall), crate::tui::others(&pages, &orphans)))
                });
                crate::tui::run(&shown, fd, scan, seconds(interval), count)?;
                return Ok(ExitCode::SUCCESS);
            }
            let mut frame = 0u64;
            while count.is_none_or(|c| frame < c) {
                let pages = list(&dir)?;
                let orphans = orphans(&dir)?;
                let body = report::text(&shown, &pages, &orphans, now_ns(), stall, all);
                let mut out = std::io::stdout().lock();
                // Not an interactive terminal (a pipe, a file, or stdin elsewhere): plain frames.
                let written = write!(out, "--- frame {frame}\n{body}");
                if written.and_then(|()| out.flush()).is_err() {
                    break; // the reader went away (a closed pipe)
                }
                drop(out);
                frame += 1;
                if count.is_none_or(|c| frame < c) {
                    std::thread::sleep(seconds(interval));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Inject { target, plan, timeout } => {
            let pages = list(&dir)?;
            let pid = resolve(&pages, &target)?;
            match inject(rustix::fd::AsFd::as_fd(&dir), pid, &plan, seconds(timeout))? {
                Outcome::Accepted => {
                    println!("pid {pid}: plan accepted");
                    Ok(ExitCode::SUCCESS)
                }
                Outcome::Refused(why) => {
                    println!("pid {pid}: plan refused: {why}");
                    Ok(ExitCode::from(1))
                }
                Outcome::Unavailable(why) => {
                    println!("pid {pid}: {why}");
                    Ok(ExitCode::from(1))
                }
                Outcome::Pending(idle) => {
                    let idle =
                        idle.map_or("it never progressed".into(), |t| format!("no progress for {t:.1} s"));
                    println!(
                        "pid {pid}: plan written, not read yet ({idle}): it is read at the next progress"
                    );
                    Ok(ExitCode::from(3))
                }
            }
        }
        Cmd::Keygen { dir: keys, force } => keygen(&keys, force),
        Cmd::Clean => {
            let pages = list(&dir)?;
            let mut removed = 0;
            for p in &pages {
                if let Found::Stale(s) = &p.found {
                    // Checked again just before: a process may have started with that pid.
                    if crate::scan::is_alive(s) {
                        continue;
                    }
                    match rustix::fs::unlinkat(&dir, p.file.as_str(), rustix::fs::AtFlags::empty()) {
                        Ok(()) => {
                            removed += 1;
                            println!("removed {} (pid {} {})", p.file, s.pid, s.comm);
                        }
                        Err(e) => eprintln!("cannot remove {}: {e}", p.file),
                    }
                }
            }
            let mut names = 0;
            for o in &orphans(&dir)? {
                for name in crate::sockets::remove(&dir, o) {
                    names += 1;
                    println!("removed {name} (its server is gone)");
                }
            }
            println!("{removed} stale page(s) removed, {names} socket and lock file(s) removed");
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The program: parses the command line, runs it, reports an error on stderr (exit 1).
pub fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(code) => code,
        Err(why) => {
            eprintln!("doca_emu: {why}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn keygen_makes_the_keys_and_keeps_them_unless_forced() {
        let dir = std::env::temp_dir().join(format!("doca-emu-keygen-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let run_keygen = |force: bool| {
            let mut argv = vec!["doca_emu".to_owned(), "keygen".to_owned(), dir.display().to_string()];
            if force {
                argv.push("--force".into());
            }
            run(Args::parse_from(argv))
        };
        assert_eq!(run_keygen(false), Ok(ExitCode::SUCCESS));
        let mode = |f: &str| std::fs::metadata(dir.join(f)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(""), 0o700);
        assert_eq!((mode("host.key"), mode("dpu.key")), (0o600, 0o600));
        let before = std::fs::read(dir.join("host.pub")).unwrap();
        assert_eq!(before.len(), 65, "64 hexadecimal digits and a newline");
        let refused = run_keygen(false).unwrap_err();
        assert!(refused.contains("--force"), "{refused}");
        assert_eq!(std::fs::read(dir.join("host.pub")).unwrap(), before, "kept");
        assert_eq!(run_keygen(true), Ok(ExitCode::SUCCESS));
        assert_ne!(std::fs::read(dir.join("host.pub")).unwrap(), before, "replaced");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
