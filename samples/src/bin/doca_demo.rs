//! `doca_demo`: the host/DPU demo. Runs DOCA's control-path sample pair, then its fast-path
//! (producer/consumer) pair, each as two processes on the embedded default topology — the
//! server on the DPU device `03:00.0` serving host function `b1:00.0`, the client on
//! `b1:00.0` — and shows both sides' output.
//!
//! The client starts first on purpose: it waits, retrying quietly, until the server listens.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::thread;

use doca_common::log::{self, LogLevel};
use doca_samples::{cc_ctrl_path, cc_data_path};

fn role(name: &str) -> ExitCode {
    log::init(LogLevel::Info, LogLevel::Warning);
    let r = match name {
        "server" => cc_ctrl_path::run_server("03:00.0", "b1:00.0", "Hello from the DPU server"),
        "client" => cc_ctrl_path::run_client("b1:00.0", "Hello from the host client"),
        "dp-server" => cc_data_path::run_server("03:00.0", "b1:00.0", "Fast-path hello from the DPU server"),
        "dp-client" => cc_data_path::run_client("b1:00.0", "Fast-path hello from the host client"),
        _ => return ExitCode::FAILURE,
    };
    match r {
        Ok(()) => {
            tracing::info!("Sample finished successfully");
            ExitCode::SUCCESS
        }
        Err(e) => {
            tracing::error!("Sample finished with errors: {e}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, name] = args.as_slice() {
        if flag == "--role" {
            return role(name);
        }
    }
    if args.len() > 1 {
        eprintln!("usage: doca_demo   (runs the host/DPU control-path demo)");
        return ExitCode::FAILURE;
    }
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("cannot find this program: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("doca_demo: DOCA Comm Channel, host and DPU as two processes");
    println!("           DPU server 03:00.0 (representor b1:00.0)  <->  host client b1:00.0\n");
    let mut ok = true;
    for (title, client, server) in [
        ("control path: a message each way (cc_ctrl_path samples)", "client", "server"),
        (
            "fast path: a producer into the peer's consumer, each way (cc_data_path_high_speed samples)",
            "dp-client",
            "dp-server",
        ),
    ] {
        println!("== {title}");
        ok &= run_pair(&exe, client, server);
        println!();
    }
    println!("doca_demo: {}", if ok { "both sides finished successfully" } else { "a side failed" });
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Runs one sample pair as two processes and prints their lines in time order.
fn run_pair(exe: &std::path::Path, client: &str, server: &str) -> bool {
    // Both sides' lines are gathered and shown in time order (each line carries DOCA's
    // timestamp), so the exchange reads top to bottom.
    let (tx, rx) = mpsc::channel::<(String, usize, String)>();
    let mut seq = 0usize;
    let mut forward = |stream: Box<dyn Read + Send>, label: &'static str| {
        let tx = tx.clone();
        let base = seq;
        seq += 1_000_000;
        thread::spawn(move || {
            for (i, line) in BufReader::new(stream).lines().map_while(Result::ok).enumerate() {
                let stamp = line.get(..17).filter(|s| s.starts_with('[')).unwrap_or("").to_string();
                let _ = tx.send((stamp, base + i, format!("{label} {line}")));
            }
        })
    };
    let mut children = Vec::new();
    for (role, label) in [(client, "[host client]"), (server, "[DPU server ]")] {
        match Command::new(exe).args(["--role", role]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn() {
            Ok(mut child) => {
                let out = forward(Box::new(child.stdout.take().expect("piped")), label);
                let err = forward(Box::new(child.stderr.take().expect("piped")), label);
                children.push((child, out, err));
            }
            Err(e) => {
                eprintln!("cannot start the {role}: {e}");
                return false;
            }
        }
    }
    drop(tx);
    let mut ok = true;
    for (mut child, out, err) in children {
        ok &= child.wait().map(|s| s.success()).unwrap_or(false);
        let _ = out.join();
        let _ = err.join();
    }
    let mut lines: Vec<(String, usize, String)> = rx.into_iter().collect();
    lines.sort();
    for (_, _, line) in lines {
        println!("{line}");
    }
    ok
}
