//! `cc_chatter`: a Comm Channel pair that keeps talking, to watch with `doca_emu watch`.
//!
//! `cc_chatter server` serves on the DPU (03:00.0, representor b1:00.0) and echoes every
//! message; `cc_chatter client` connects from the host (b1:00.0) and sends a message of 16
//! to 1024 bytes `--rate` times a second (default 20), with up to `--window` sends in flight
//! (default 32), for `--seconds` (default: until Ctrl-C). Each side prints a line a second:
//! messages and bytes each way. A fault plan injected into the client shows in the view:
//! `task.cc.send=delay(300)` holds completions back (INFL grows), `task.cc.send=every(5):fail(IO_FAILED)`
//! makes every fifth send fail (the client counts the failures).

use std::cell::Cell;
use std::process::ExitCode;
use std::rc::Rc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use doca_cc::{Client, Connection, Server};
use doca_core::{open_device_rep_with_pci, open_device_with_pci, CtxState, Pe, RepFilter};
use tracing::{error, info};

/// A Comm Channel pair that keeps talking (to watch with `doca_emu watch`).
#[derive(Parser, Debug)]
#[command(name = "cc_chatter")]
struct Args {
    /// The service name both sides use.
    #[arg(long, default_value = "chatter")]
    name: String,
    /// Which side.
    #[command(subcommand)]
    side: Side,
}

#[derive(Subcommand, Debug)]
enum Side {
    /// Serve on the DPU and echo every message.
    Server {
        /// Stop after this many seconds (default: until Ctrl-C).
        #[arg(long)]
        seconds: Option<f64>,
    },
    /// Connect from the host and keep sending.
    Client {
        /// Messages a second.
        #[arg(long, default_value = "20")]
        rate: f64,
        /// Sends in flight at most.
        #[arg(long, default_value = "32")]
        window: u32,
        /// Stop after this many seconds (default: until Ctrl-C).
        #[arg(long)]
        seconds: Option<f64>,
    },
}

/// Counters a side prints once a second.
#[derive(Default)]
struct Counts {
    sent: Cell<(u64, u64)>,
    received: Cell<(u64, u64)>,
    failed: Cell<u64>,
}

impl Counts {
    fn add(c: &Cell<(u64, u64)>, bytes: usize) {
        let (m, b) = c.get();
        c.set((m + 1, b + bytes as u64));
    }

    fn line(&self, who: &str) {
        let ((sm, sb), (rm, rb)) = (self.sent.get(), self.received.get());
        info!("{who}: sent {sm} msg {sb} B, received {rm} msg {rb} B, {} failed", self.failed.get());
    }
}

fn deadline(seconds: Option<f64>) -> Option<Instant> {
    seconds
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Instant::now() + Duration::from_secs_f64(s.min(1e6)))
}

fn server(name: &str, seconds: Option<f64>) -> doca_core::Result<()> {
    let dev = open_device_with_pci("03:00.0", None)?;
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0")?;
    let pe = Pe::create()?;
    let srv = Server::create(&dev, &rep, name)?;
    pe.connect_ctx(&srv.as_ctx())?;
    let counts = Rc::new(Counts::default());
    let (c1, c2) = (counts.clone(), counts.clone());
    srv.task_send_set_conf(
        move |t, _, _| Counts::add(&c1.sent, t.msg_len()),
        move |_, _, _| c2.failed.set(c2.failed.get() + 1),
        1024,
    )?;
    let c = counts.clone();
    srv.event_msg_recv_register(move |msg, conn: &Connection| {
        Counts::add(&c.received, msg.len());
        // The echo: refused only when the send queue is full (the message is dropped then).
        if let Ok(server) = conn.server() {
            match server.task_send_alloc_init(conn, msg) {
                Ok(task) => {
                    if task.submit().is_err() {
                        c.failed.set(c.failed.get() + 1);
                    }
                }
                Err(_) => c.failed.set(c.failed.get() + 1),
            }
        }
    })?;
    srv.event_connection_register(
        |c, ok| info!("connection {} {}", c.id(), if ok { "accepted" } else { "refused" }),
        |c, _| info!("connection {} closed", c.id()),
    )?;
    srv.as_ctx().start()?;
    info!("serving {name:?}: start `cc_chatter client`, then `doca_emu watch`");
    let end = deadline(seconds);
    let mut tick = Instant::now() + Duration::from_secs(1);
    while end.is_none_or(|e| Instant::now() < e) {
        if !pe.progress() {
            pe.wait(Some(Duration::from_millis(50)))?;
        }
        if Instant::now() >= tick {
            counts.line("server");
            tick += Duration::from_secs(1);
        }
    }
    srv.as_ctx().stop()?;
    while srv.as_ctx().state() != CtxState::Idle {
        if !pe.progress() {
            pe.wait(Some(Duration::from_millis(10)))?;
        }
    }
    Ok(())
}

fn client(name: &str, rate: f64, window: u32, seconds: Option<f64>) -> doca_core::Result<()> {
    let dev = open_device_with_pci("b1:00.0", None)?;
    let pe = Pe::create()?;
    let cli = Client::create(&dev, name)?;
    pe.connect_ctx(&cli.as_ctx())?;
    let counts = Rc::new(Counts::default());
    let inflight = Rc::new(Cell::new(0u32));
    let (c1, c2, i1, i2) = (counts.clone(), counts.clone(), inflight.clone(), inflight.clone());
    cli.task_send_set_conf(
        move |t, _, _| {
            Counts::add(&c1.sent, t.msg_len());
            i1.set(i1.get() - 1);
        },
        move |_, _, _| {
            c2.failed.set(c2.failed.get() + 1);
            i2.set(i2.get() - 1);
        },
        window.max(1),
    )?;
    let c = counts.clone();
    cli.event_msg_recv_register(move |msg, _| Counts::add(&c.received, msg.len()))?;
    // A client's start answers InProgress: it is running once the server accepted it.
    let _ = cli.as_ctx().start();
    let wait_until = Instant::now() + Duration::from_secs(10);
    while cli.as_ctx().state() != CtxState::Running {
        if cli.as_ctx().state() == CtxState::Idle || Instant::now() >= wait_until {
            error!("no server {name:?} answered: start `cc_chatter server` first");
            return Err(doca_core::Error::NotConnected);
        }
        if !pe.progress() {
            pe.wait(Some(Duration::from_millis(10)))?;
        }
    }
    let conn = cli.get_connection()?;
    info!("connected to {name:?}: sending {rate} msg/s");
    let period = Duration::from_secs_f64(1.0 / rate.clamp(0.1, 100_000.0));
    let end = deadline(seconds);
    let mut next = Instant::now();
    let mut tick = Instant::now() + Duration::from_secs(1);
    let mut seq = 0u64;
    let mut msg = Vec::with_capacity(1024);
    while end.is_none_or(|e| Instant::now() < e) {
        if cli.as_ctx().state() != CtxState::Running {
            error!("the connection ended");
            return Err(doca_core::Error::NotConnected);
        }
        let now = Instant::now();
        if now >= next && inflight.get() < window {
            // 16 to 1024 bytes, the size walking up and down.
            let len = 16 + (seq * 37 % 1009) as usize;
            msg.clear();
            msg.extend((0..len).map(|i| (seq as usize + i) as u8));
            // No free task (all `window` in flight): a later pass sends it.
            if let Ok(task) = cli.task_send_alloc_init(&conn, &msg) {
                match task.submit() {
                    Ok(()) => {
                        inflight.set(inflight.get() + 1);
                        seq += 1;
                        next += period;
                        if next < now {
                            next = now; // fell behind (a held-back plan): no burst to catch up
                        }
                    }
                    Err(_) => counts.failed.set(counts.failed.get() + 1),
                }
            }
        }
        if now >= tick {
            counts.line("client");
            tick += Duration::from_secs(1);
        }
        if !pe.progress() {
            let wait = next.saturating_duration_since(Instant::now()).min(Duration::from_millis(50));
            pe.wait(Some(wait))?;
        }
    }
    counts.line("client");
    cli.as_ctx().stop()?;
    while cli.as_ctx().state() != CtxState::Idle {
        if !pe.progress() {
            pe.wait(Some(Duration::from_millis(10)))?;
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_max_level(tracing::Level::INFO).init();
    let args = Args::parse();
    let result = match args.side {
        Side::Server { seconds } => server(&args.name, seconds),
        Side::Client { rate, window, seconds } => client(&args.name, rate, window, seconds),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            error!("cc_chatter: {e}");
            ExitCode::FAILURE
        }
    }
}
