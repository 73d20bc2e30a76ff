//! The other side of the legacy endpoint tests, as a real process.
//!
//! ```text
//! ep_peer serve <name>                 service on 03:00.0 for 3b:00.0; prints "listening";
//!                                      stdin: send-later <ms> <text> | read-later <ms> | exit
//!                                      (read-later prints "read <n>")
//! ep_peer serve-asleep <name> <n>      a service that only ever sleeps in epoll on its receive
//!                                      event channel (as NVIDIA's secure_channel does); answers
//!                                      n messages with "ack <text>", prints "served <n>"
//! ep_peer serve-blocking <name>        a 1.x service whose calls block: answers every message
//!                                      with "ack <text>" until stdin closes; prints "listening"
//! ep_peer serve-echo <name>            a service (receive queue 8192) asleep on its receive
//!                                      event channel that
//!                                      echoes every message back to its sender (an echo that
//!                                      does not fit is dropped); prints "listening"; exits at
//!                                      stdin EOF
//! ep_peer echoes <name> <n>            a 1.x (blocking) client doing n echoes one after the
//!                                      other, each checked: prints "echoed <n> in <ms> ms"
//! ep_peer client <name> <text> [--blocking]
//!                                      connects, sends <text>, prints "reply <text>";
//!                                      stdin: disconnect (prints "disconnected") | EOF
//! ```

use std::io::BufRead;
use std::process::ExitCode;
use std::sync::mpsc::{self, TryRecvError};
use std::time::Duration;

use doca_cc::legacy::{Endpoint, InitAttr, MsgFlags};
use doca_core::{open_device_rep_with_pci, open_device_with_pci, Error, RepFilter};
use doca_tests::EpChannel;

fn stdin_lines() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// `ep` listening as service `name` on 03:00.0 for 3b:00.0; prints "listening".
fn listening(ep: Endpoint, name: &str) -> Endpoint {
    let dev = open_device_with_pci("03:00.0", None).unwrap();
    let rep = open_device_rep_with_pci(&dev, RepFilter::NET, "3b:00.0").unwrap();
    ep.set_device(&dev).unwrap();
    ep.set_device_rep(&rep).unwrap();
    ep.listen(name).unwrap();
    println!("listening");
    ep
}

fn serve(name: &str) -> ExitCode {
    let ep = listening(Endpoint::create().unwrap(), name);
    let input = stdin_lines();
    let mut buf = vec![0u8; 4080];
    let mut first = None;
    loop {
        match input.try_recv() {
            Ok(line) => {
                let mut w = line.splitn(3, ' ');
                match (w.next(), w.next(), w.next()) {
                    (Some("send-later"), Some(ms), Some(text)) => {
                        std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
                        let peer = ep
                            .peer_addr_list()
                            .unwrap()
                            .into_iter()
                            .next()
                            .or(first.clone())
                            .expect("a client");
                        ep.sendto(text.as_bytes(), MsgFlags::NONE, &peer).unwrap();
                    }
                    (Some("read-later"), Some(ms), None) => {
                        std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
                        let mut n = 0;
                        while let Ok((_, p)) = ep.recvfrom(&mut buf, MsgFlags::NONE) {
                            first.get_or_insert(p);
                            n += 1;
                        }
                        println!("read {n}");
                    }
                    _ => break,
                }
            }
            Err(TryRecvError::Disconnected) => break,
            Err(TryRecvError::Empty) => {
                ep.update_service_state_info().unwrap();
                doca_tests::ep_sleep(&ep, EpChannel::Recv);
            }
        }
    }
    ExitCode::SUCCESS
}

fn serve_asleep(name: &str, n: usize) -> ExitCode {
    use rustix::event::epoll;
    let ep = listening(Endpoint::create().unwrap(), name);
    let (_send, recv) = ep.get_event_channel().unwrap();
    let app = epoll::create(epoll::CreateFlags::CLOEXEC).unwrap();
    epoll::add(&app, recv, epoll::EventData::new_u64(1), epoll::EventFlags::IN).unwrap();
    let mut events =
        [epoll::Event { flags: epoll::EventFlags::empty(), data: epoll::EventData::new_u64(0) }; 4];
    let mut buf = vec![0u8; 4080];
    let mut served = 0;
    let mut wakeups = 0u64;
    while served < n {
        match ep.recvfrom(&mut buf, MsgFlags::NONE) {
            Ok((len, peer)) => {
                let reply = format!("ack {}", String::from_utf8_lossy(&buf[..len]));
                ep.sendto(reply.as_bytes(), MsgFlags::NONE, &peer).unwrap();
                served += 1;
            }
            Err(e) if e.error == Error::Again => {
                ep.event_handle_arm_recv().unwrap();
                // No timeout: only the channel may wake this service.
                epoll::wait(&app, &mut events[..], None).unwrap();
                wakeups += 1;
                assert!(wakeups < 100_000, "woken in a loop: the channel stays readable");
            }
            Err(e) => panic!("recvfrom: {e}"),
        }
    }
    println!("served {served}");
    for _ in std::io::stdin().lock().lines() {}
    ExitCode::SUCCESS
}

fn serve_echo(name: &str) -> ExitCode {
    use rustix::event::epoll;
    let ep = Endpoint::create().unwrap();
    // The largest receive queue: a client may keep thousands of messages waiting.
    ep.set_recv_queue_size(8191).unwrap();
    let ep = listening(ep, name);
    std::thread::spawn(|| {
        for _ in std::io::stdin().lock().lines() {}
        std::process::exit(0);
    });
    let (_send, recv) = ep.get_event_channel().unwrap();
    let app = epoll::create(epoll::CreateFlags::CLOEXEC).unwrap();
    epoll::add(&app, recv, epoll::EventData::new_u64(1), epoll::EventFlags::IN).unwrap();
    let mut events =
        [epoll::Event { flags: epoll::EventFlags::empty(), data: epoll::EventData::new_u64(0) }; 4];
    let mut buf = vec![0u8; 4080];
    loop {
        match ep.recvfrom(&mut buf, MsgFlags::NONE) {
            Ok((len, peer)) => {
                // A sender that does not read its echoes gets AGAIN here: dropped.
                let _ = ep.sendto(&buf[..len], MsgFlags::NONE, &peer);
            }
            Err(e) if e.error == Error::Again => {
                ep.event_handle_arm_recv().unwrap();
                epoll::wait(&app, &mut events[..], None).unwrap();
            }
            Err(e) => panic!("recvfrom: {e}"),
        }
    }
}

fn echoes(name: &str, n: usize) -> ExitCode {
    let attr = InitAttr { cookie: 3, flags: 0, maxmsgs: 16, msgsize: 4080 };
    let ep = Endpoint::create_with_attr(&attr).unwrap();
    ep.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
    let peer = ep.connect(name).unwrap();
    while let Err(e) = peer.update_info() {
        if e != Error::ConnectionInProgress {
            println!("err {}", e.name());
            return ExitCode::FAILURE;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    let t0 = std::time::Instant::now();
    let mut buf = vec![0u8; 4080];
    for i in 0..n {
        let msg = format!("echo {i}");
        let echoed = ep
            .sendto(msg.as_bytes(), MsgFlags::NONE, &peer)
            .map_err(|e| e.name().to_string())
            .and_then(|()| ep.recvfrom(&mut buf, MsgFlags::NONE).map_err(|e| e.error.name().to_string()));
        match echoed {
            Ok((len, _)) if buf[..len] == *msg.as_bytes() => {}
            Ok((len, _)) => {
                println!("err echo {i} came back as {:?}", String::from_utf8_lossy(&buf[..len]));
                return ExitCode::FAILURE;
            }
            Err(e) => {
                println!("err {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!("echoed {n} in {} ms", t0.elapsed().as_millis());
    ExitCode::SUCCESS
}

fn serve_blocking(name: &str) -> ExitCode {
    let attr = InitAttr { cookie: 2, flags: 0, maxmsgs: 16, msgsize: 4080 };
    let ep = listening(Endpoint::create_with_attr(&attr).unwrap(), name);
    let input = stdin_lines();
    let mut buf = vec![0u8; 4080];
    // Blocks in recvfrom; a thread watching stdin ends the process when it closes.
    std::thread::spawn(move || {
        while input.recv().is_ok() {}
        std::process::exit(0);
    });
    loop {
        match ep.recvfrom(&mut buf, MsgFlags::NONE) {
            Ok((len, peer)) => {
                let reply = format!("ack {}", String::from_utf8_lossy(&buf[..len]));
                let _ = ep.sendto(reply.as_bytes(), MsgFlags::NONE, &peer);
            }
            // A client that left: keep serving the others.
            Err(e) if e.error == Error::ConnectionReset => {}
            Err(e) => panic!("recvfrom: {e}"),
        }
    }
}

fn client(name: &str, text: &str, blocking: bool) -> ExitCode {
    let ep = if blocking {
        Endpoint::create_with_attr(&InitAttr { cookie: 1, flags: 0, maxmsgs: 16, msgsize: 4080 }).unwrap()
    } else {
        Endpoint::create().unwrap()
    };
    ep.set_device(&open_device_with_pci("3b:00.0", None).unwrap()).unwrap();
    let peer = ep.connect(name).unwrap();
    while let Err(e) = peer.update_info() {
        if e != Error::ConnectionInProgress {
            println!("err {}", e.name());
            return ExitCode::FAILURE;
        }
        doca_tests::ep_sleep(&ep, EpChannel::Recv);
    }
    let flags = MsgFlags::NONE;
    loop {
        match ep.sendto(text.as_bytes(), flags, &peer) {
            Ok(()) => break,
            Err(Error::Again) if !blocking => doca_tests::ep_sleep(&ep, EpChannel::Send),
            Err(e) => {
                println!("err {}", e.name());
                return ExitCode::FAILURE;
            }
        }
    }
    let mut buf = vec![0u8; 4080];
    let n = loop {
        match ep.recvfrom(&mut buf, flags) {
            Ok((n, _)) => break n,
            Err(e) if e.error == Error::Again && !blocking => doca_tests::ep_sleep(&ep, EpChannel::Recv),
            Err(e) => {
                println!("err {}", e.error.name());
                return ExitCode::FAILURE;
            }
        }
    };
    println!("reply {}", String::from_utf8_lossy(&buf[..n]));
    for line in std::io::stdin().lock().lines().map_while(Result::ok) {
        if line == "disconnect" {
            ep.disconnect(&peer).unwrap();
            println!("disconnected");
        }
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
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [_, "serve", name] => serve(name),
        [_, "serve-blocking", name] => serve_blocking(name),
        [_, "serve-asleep", name, n] => serve_asleep(name, n.parse().unwrap()),
        [_, "serve-echo", name] => serve_echo(name),
        [_, "echoes", name, n] => echoes(name, n.parse().unwrap()),
        [_, "client", name, text] => client(name, text, false),
        [_, "client", name, text, "--blocking"] => client(name, text, true),
        _ => {
            eprintln!("usage: see the module documentation of ep_peer");
            ExitCode::FAILURE
        }
    }
}
