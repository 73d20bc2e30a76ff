//! A TCP probe, to show which sides can reach which ([`doca_tests::apart`]):
//!
//! - `listen <addr:port>`: binds there, prints `listening`, accepts one connection, answers
//!   the line it reads with `echo <line>`, prints `served`
//! - `connect <addr:port> <word>`: connects (3 s at most), sends the word, prints the answer,
//!   or `unreachable <error>`

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let addr = |i: usize| -> SocketAddr {
        args.get(i).and_then(|a| a.parse().ok()).unwrap_or_else(|| panic!("an address as argument {i}"))
    };
    match args.get(1).map(String::as_str) {
        Some("listen") => {
            let listener = TcpListener::bind(addr(2)).expect("bind");
            println!("listening");
            let (sock, _) = listener.accept().expect("accept");
            let mut line = String::new();
            BufReader::new(&sock).read_line(&mut line).expect("read");
            writeln!(&sock, "echo {}", line.trim()).expect("write");
            println!("served");
            ExitCode::SUCCESS
        }
        Some("connect") => {
            let word = args.get(3).map(String::as_str).unwrap_or("hello");
            match TcpStream::connect_timeout(&addr(2), Duration::from_secs(3)) {
                Ok(sock) => {
                    writeln!(&sock, "{word}").expect("write");
                    let mut line = String::new();
                    BufReader::new(&sock).read_line(&mut line).expect("read");
                    println!("{}", line.trim());
                }
                Err(e) => println!("unreachable {}", e.kind()),
            }
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("usage: net_probe listen <addr:port> | connect <addr:port> <word>");
            ExitCode::FAILURE
        }
    }
}
