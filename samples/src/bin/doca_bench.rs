//! `doca_bench`: measures the emulator, each figure beside a baseline measured in the same
//! run (these machines are shared and noisy: ratios are stable, absolute times are not).
//!
//! Sections so far: the engine (empty progress with idle contexts, one local task cycle).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::hint::black_box;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::Instant;

use clap::Parser;
use doca_core::loopback::{EchoTask, Loopback};
use doca_core::{Pe, Started};

/// Measure the emulator against same-run baselines.
#[derive(Parser, Debug)]
#[command(name = "doca_bench", version)]
struct Args {
    /// Short run for CI: fewer iterations and repetitions (figures are rough).
    #[arg(long)]
    smoke: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

struct Row {
    name: String,
    ns: f64,
    baseline_name: &'static str,
    baseline_ns: f64,
}

/// Median over `reps` repetitions of the time per iteration of `f(iters)`, in nanoseconds.
fn measure(reps: usize, iters: u64, mut f: impl FnMut(u64)) -> f64 {
    f(iters / 10 + 1); // warm up
    let mut samples: Vec<f64> = (0..reps)
        .map(|_| {
            let t = Instant::now();
            f(iters);
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Baseline for an empty progress: one virtual call per context that reads one flag.
fn baseline_poll(n: usize, reps: usize, iters: u64) -> f64 {
    let flags: Vec<Rc<Cell<bool>>> = (0..n).map(|_| Rc::new(Cell::new(false))).collect();
    let polls: Vec<Box<dyn Fn() -> bool>> = flags
        .iter()
        .map(|f| {
            let f = f.clone();
            Box::new(move || f.get()) as Box<dyn Fn() -> bool>
        })
        .collect();
    measure(reps, iters, |k| {
        for _ in 0..k {
            let mut any = false;
            for p in black_box(&polls) {
                any |= p();
            }
            black_box(any);
        }
    })
}

fn engine_progress(n: usize, reps: usize, iters: u64) -> f64 {
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
    let ns = measure(reps, iters, |k| {
        for _ in 0..k {
            black_box(pe.progress());
        }
    });
    drop(ctxs);
    ns
}

/// Baseline for a task cycle: a free list, a ready queue and one boxed callback.
fn baseline_task_cycle(reps: usize, iters: u64) -> f64 {
    let mut free: Vec<u32> = (0..64).collect();
    let mut ready: VecDeque<u32> = VecDeque::with_capacity(64);
    let done = Rc::new(Cell::new(0u64));
    let d = done.clone();
    let mut cb: Box<dyn FnMut(u32)> = Box::new(move |_| d.set(d.get() + 1));
    measure(reps, iters, |k| {
        for _ in 0..k {
            let t = free.pop().expect("free slot");
            ready.push_back(black_box(t));
            let t = ready.pop_front().expect("ready");
            cb(t);
            free.push(t);
        }
    })
}

fn engine_task_cycle(reps: usize, iters: u64) -> f64 {
    let pe = Pe::create().expect("pe");
    let lb = Rc::new(Loopback::create(Started::Running));
    pe.connect_ctx(&lb.as_ctx()).expect("connect");
    let done = Rc::new(RefCell::new(0u64));
    let d = done.clone();
    lb.set_conf(move |t: EchoTask, _, _| *d.borrow_mut() += t.value(), |_, _, _| {}, 64).expect("conf");
    lb.as_ctx().start().expect("start");
    while pe.progress() {}
    measure(reps, iters, |k| {
        for _ in 0..k {
            lb.alloc_task(1).expect("alloc").submit().expect("submit");
            pe.progress();
        }
    })
}

fn main() -> ExitCode {
    let args = Args::parse();
    let (reps, iters) = if args.smoke { (3, 20_000) } else { (9, 2_000_000) };
    let mut rows = Vec::new();
    for n in [1usize, 16, 256] {
        let scale = (n as u64).max(1);
        let it = (iters / scale).max(1000);
        rows.push(Row {
            name: format!("engine: empty progress, {n} idle ctx"),
            ns: engine_progress(n, reps, it),
            baseline_name: "dyn poll loop",
            baseline_ns: baseline_poll(n, reps, it),
        });
    }
    rows.push(Row {
        name: "engine: local task alloc+submit+complete+free".into(),
        ns: engine_task_cycle(reps, iters),
        baseline_name: "free list+queue+dyn cb",
        baseline_ns: baseline_task_cycle(reps, iters),
    });

    println!("{:<48} {:>12} {:<24} {:>12} {:>8}", "measurement", "ns/op", "baseline", "ns/op", "ratio");
    for r in &rows {
        println!(
            "{:<48} {:>12.1} {:<24} {:>12.1} {:>7.2}x",
            r.name,
            r.ns,
            r.baseline_name,
            r.baseline_ns,
            r.ns / r.baseline_ns
        );
    }
    if let Some(path) = args.json {
        let items: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "  {{\"name\": \"{}\", \"ns_per_op\": {:.2}, \"baseline\": \"{}\", \"baseline_ns_per_op\": {:.2}, \"ratio\": {:.3}}}",
                    r.name,
                    r.ns,
                    r.baseline_name,
                    r.baseline_ns,
                    r.ns / r.baseline_ns
                )
            })
            .collect();
        if let Err(e) = std::fs::write(&path, format!("[\n{}\n]\n", items.join(",\n"))) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
