//! The other side of the comm-channel tests, as a real process.
//!
//! ```text
//! cc_peer server <name>                  echo server; stdout: running, connected <id>,
//!                                        disconnected <id>, refused; stops on stdin EOF
//! cc_peer client <name> echo <n> <seed>  sends n checked messages of random sizes, verifies
//!                                        each echo, prints "ok <n>", exits 0
//! cc_peer client <name> burst <n> <seed> sends n checked messages back to back (pipelined),
//!                                        prints "sent <n>", waits for "done" from the server
//! cc_peer client <name> hold             stdout: running, recv <text>, state <s>;
//!                                        stdin: send <text>, stop, block (stops
//!                                        progressing and waits for the next line
//!                                        outside progress; prints "blocked"),
//!                                        send-block <text> (a send, then the same)
//! ```
//! Options after the mode: `--max-msg <n>` sets the max message size on either side;
//! `--freeze` makes the server stop progressing once a client is connected; `--nofile <n>`
//! limits the process to n file descriptors; `--accept-plans` registers a plan handler
//! (`doca_core::status::on_plan`) that prints `plan <text>` and accepts it, unless the text
//! holds "bad" (then it refuses it: "bad plan").

use std::cell::{Cell, RefCell};
use std::io::BufRead;
use std::process::ExitCode;
use std::rc::Rc;
use std::sync::mpsc::{self, Receiver, TryRecvError};

use doca_cc::{Client, Connection, Server};
use doca_core::{open_device_rep_with_pci, open_device_with_pci, CtxState, Pe, RepFilter};
use doca_tests::{checked, idle};

fn stdin_lines() -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn option(args: &[String], flag: &str) -> Option<u32> {
    args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok())
}

fn server(name: &str, max_msg: Option<u32>, freeze: bool) -> ExitCode {
    let dev = open_device_with_pci("03:00.0", None).expect("dpu");
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "b1:00.0").expect("rep");
    let pe = Pe::create().expect("pe");
    let srv = Server::create(&dev, &rep, name).expect("server");
    pe.connect_ctx(&srv.as_ctx()).expect("connect");
    if let Some(m) = max_msg {
        srv.set_max_msg_size(m).expect("max msg");
    }
    srv.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4096).expect("conf");
    srv.event_msg_recv_register(|msg, conn: &Connection| {
        let server = conn.server().expect("server");
        if let Ok(task) = server.task_send_alloc_init(conn, msg) {
            let _ = task.submit();
        }
    })
    .expect("msg cb");
    srv.event_connection_register(
        |c, ok| println!("{} {}", if ok { "connected" } else { "refused" }, c.id()),
        |c, _| println!("disconnected {}", c.id()),
    )
    .expect("conn cb");
    srv.as_ctx().start().expect("start");
    println!("running");
    let input = stdin_lines();
    while let Err(TryRecvError::Empty) = input.try_recv() {
        if freeze && srv.num_connections() > 0 {
            // Stop consuming: the client's sends pile up in flight. Nothing more to do
            // until the next line (or stdin's end).
            let _ = input.recv();
            break;
        }
        idle(&pe);
    }
    ExitCode::SUCCESS
}

fn client(name: &str, mode: &str, n: u64, seed: u64, max_msg: Option<u32>) -> ExitCode {
    let dev = open_device_with_pci("b1:00.0", None).expect("host");
    let pe = Pe::create().expect("pe");
    let cli = Rc::new(Client::create(&dev, name).expect("client"));
    pe.connect_ctx(&cli.as_ctx()).expect("connect");
    let max = max_msg.unwrap_or(4080);
    cli.set_max_msg_size(max).expect("max msg");
    let received: Rc<RefCell<Vec<Vec<u8>>>> = Rc::default();
    let r = received.clone();
    cli.event_msg_recv_register(move |msg, _| r.borrow_mut().push(msg.to_vec())).expect("msg cb");
    let sent = Rc::new(Cell::new(0u64));
    let s = sent.clone();
    cli.task_send_set_conf(
        move |_, _, _| s.set(s.get() + 1),
        |t, _, _| eprintln!("send failed: {:?}", t.status()),
        64,
    )
    .expect("conf");
    let state = Rc::new(Cell::new(CtxState::Idle));
    let st = state.clone();
    cli.as_ctx()
        .set_state_changed_cb(move |_, _, _, next| {
            st.set(next);
            println!("state {}", format!("{next:?}").to_lowercase());
        })
        .expect("state cb");
    let _ = cli.as_ctx().start();
    while state.get() != CtxState::Running {
        if state.get() == CtxState::Idle && cli.as_ctx().state() == CtxState::Idle {
            eprintln!("connection refused");
            return ExitCode::FAILURE;
        }
        idle(&pe);
    }
    let conn = cli.get_connection().expect("connection");
    println!("running");
    let mut rng = checked::Rng::new(seed);
    match mode {
        "echo" => {
            for seq in 0..n {
                let msg = checked::message(&mut rng, seq as u32, max as usize);
                cli.task_send_alloc_init(&conn, &msg).expect("alloc").submit().expect("submit");
                while received.borrow().is_empty() {
                    if cli.as_ctx().state() != CtxState::Running {
                        eprintln!("lost the server");
                        return ExitCode::FAILURE;
                    }
                    idle(&pe);
                }
                let echo = received.borrow_mut().remove(0);
                if echo != msg {
                    eprintln!("echo {seq} differs");
                    return ExitCode::FAILURE;
                }
            }
            println!("ok {n}");
        }
        "burst" => {
            let mut seq = 0u64;
            let mut next: Option<Vec<u8>> = None;
            while sent.get() < n {
                while seq < n {
                    let msg =
                        next.take().unwrap_or_else(|| checked::message(&mut rng, seq as u32, max as usize));
                    match cli.task_send_alloc_init(&conn, &msg) {
                        Ok(task) => {
                            task.submit().expect("submit");
                            seq += 1;
                        }
                        Err(_) => {
                            // Pool empty: keep this message for when a task comes back.
                            next = Some(msg);
                            break;
                        }
                    }
                }
                idle(&pe);
            }
            println!("sent {n}");
            while !received.borrow().iter().any(|m| m == b"done") {
                idle(&pe);
            }
        }
        "hold" => {
            let input = stdin_lines();
            loop {
                for msg in received.borrow_mut().drain(..) {
                    println!("recv {}", String::from_utf8_lossy(&msg));
                }
                if cli.as_ctx().state() == CtxState::Idle {
                    break;
                }
                match input.try_recv() {
                    Ok(line) if line == "stop" => {
                        let _ = cli.as_ctx().stop();
                    }
                    Ok(line) if line == "block" => {
                        // As if in getchar(): no progress until the next line.
                        println!("blocked");
                        let _ = input.recv();
                        println!("unblocked");
                    }
                    Ok(line) if line.starts_with("send-block ") => {
                        // A send, then no progress until the next line (a submit followed
                        // by a blocking wait elsewhere): the peer must see it all the same.
                        let text = &line["send-block ".len()..];
                        match cli.task_send_alloc_init(&conn, text.as_bytes()).map(|t| t.submit()) {
                            Ok(Ok(())) => println!("blocked"),
                            other => println!("send-error {:?}", other.err()),
                        }
                        let _ = input.recv();
                        println!("unblocked");
                    }
                    Ok(line) => {
                        if let Some(text) = line.strip_prefix("send ") {
                            match cli.task_send_alloc_init(&conn, text.as_bytes()).map(|t| t.submit()) {
                                Ok(Ok(())) => {}
                                other => println!("send-error {:?}", other.err()),
                            }
                        }
                    }
                    Err(TryRecvError::Disconnected) => {
                        let _ = cli.as_ctx().stop();
                    }
                    Err(TryRecvError::Empty) => {}
                }
                idle(&pe);
            }
        }
        _ => return ExitCode::FAILURE,
    }
    if cli.as_ctx().state() != CtxState::Idle {
        let _ = cli.as_ctx().stop();
    }
    while cli.as_ctx().state() != CtxState::Idle {
        idle(&pe);
    }
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .init();
    let args: Vec<String> = std::env::args().collect();
    let max_msg = option(&args, "--max-msg");
    if let Some(n) = option(&args, "--nofile") {
        let limit = rustix::process::Rlimit { current: Some(n as u64), maximum: Some(n as u64) };
        rustix::process::setrlimit(rustix::process::Resource::Nofile, limit).expect("setrlimit");
    }
    if args.iter().any(|a| a == "--accept-plans") {
        doca_core::status::on_plan(|plan| {
            if plan.contains("bad") {
                return Err("bad plan".into());
            }
            println!("plan {plan}");
            Ok(())
        });
    }
    let word = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    match (word(1), word(2), word(3)) {
        ("server", name, _) if !name.is_empty() => {
            server(name, max_msg, args.iter().any(|a| a == "--freeze"))
        }
        ("client", name, mode) if !name.is_empty() => {
            let n = args.get(4).and_then(|v| v.parse().ok()).unwrap_or(0);
            let seed = args.get(5).and_then(|v| v.parse().ok()).unwrap_or(1);
            client(name, mode, n, seed, max_msg)
        }
        _ => {
            eprintln!("usage: see the module documentation of cc_peer");
            ExitCode::FAILURE
        }
    }
}
