//! A hostile local peer, as a real process: it speaks the comm-channel protocol by hand and
//! breaks it on purpose. Every mode prints what it observed on stdout, one line.
//!
//! ```text
//! hostile ring-tail <name>        handshake as a client of b1:00.0, then write an impossible
//!                                 `tail` into the ring the server reads: "closed" once the
//!                                 server hangs up
//! hostile ep-ring-tail <name>     the same against a legacy service of 3b:00.0
//! hostile consumers <name> <n>    handshake, then register n (valid) consumers:
//!                                 "closed after <k> acks" once the server hangs up
//! hostile bad-post <name>         handshake, then register a consumer whose one posted
//!                                 buffer lies outside the memory it shares: "registered";
//!                                 then holds the connection until the server hangs up
//! hostile silent <name> <n> [cc|ep] [k]
//!                                 open n sockets (to a legacy service of 3b:00.0 with ep) that never say anything: "dropped <k>" (how
//!                                 many the server closed at once or answered busy, once k
//!                                 were — a minute at most —, or after half a second without
//!                                 k); then waits for stdin EOF
//! hostile bells <name>            a Hello whose doorbells are a pipe: "dropped" or "answered"
//! hostile locked-bells <name>     the same with files of a pipe whose lock it holds (until
//!                                 stdin EOF, a minute at most), its own copies closed
//! hostile locked-flood <name> <n>  stalls each closing thread of the server (one Hello per
//!                                 thread, 20 ms apart, whose first doorbell is the last file
//!                                 of a pipe whose lock it holds), then sends n garbage
//!                                 handshakes carrying 253 descriptors each: "flooded"; holds
//!                                 the locks until a stdin line (a minute at most): "released";
//!                                 then waits for stdin EOF
//! hostile function <name> <pci>   a Hello claiming to run on another host function, sent to
//!                                 b1:00.0's socket: "refused <code>" or "accepted"
//! hostile listen-as <uid> <path>  (as root) become uid, listen at <path>, accept one client,
//!                                 hold it until stdin EOF; prints "listening"
//! hostile find-bells <pids> <uid> find the abstract socket names of processes <pids> (comma-
//!                                 separated) in /proc/net/unix, then as <uid> flood each:
//!                                 "found <n>, flooded <k>"
//! hostile huge-consumer <name> <bytes>
//!                                 handshake, then announce a consumer over a sparse memfd of
//!                                 <bytes> (all of it as its memory): "acked", "refused <code>"
//!                                 or "closed"; then holds everything until stdin EOF
//! hostile conns <name> <n>        n complete handshakes, one after the other, each handing
//!                                 over its doorbells and kept: "accepted <a> refused <r>
//!                                 <codes> lost <l>" (a lost one — no answer within 60 s —
//!                                 ends the attempts); then holds them until stdin EOF
//! hostile hello-and-leave <name>  a correct Hello, then the socket closed before any answer
//!                                 (as a client that gave up waiting and dialed again):
//!                                 "left"; then waits for stdin EOF
//! hostile ep-stamp-zero <name>    a legacy client of 3b:00.0 that stamps every message with
//!                                 send time 0 (the oldest there can be) and keeps its ring to
//!                                 the service full, never reading the echoes: "flooding";
//!                                 then "sent <n>" at the first stdin line (or EOF)
//! hostile served-stall <hex> <read|write> <len>
//!                                 against the served export of descriptor <hex>: asks to
//!                                 write (or read) bytes 0..<len> and never sends (or drains)
//!                                 them; "holding" once the exporter serves the first request;
//!                                 asks again each time the exporter closes the connection,
//!                                 until stdin EOF
//! hostile served-idle <hex> <n>   n imports of the served export <hex>, each a connection
//!                                 kept idle: "held <k> refused <r>"; then holds them until
//!                                 stdin EOF
//! hostile link-import <hex> <len> (the link's host side, from the environment) import
//!                                 streams across the link to the read-only export <hex> of
//!                                 <len> bytes, each breaking the protocol one way: one word
//!                                 per attempt, what came back (a DOCA code's short name, or
//!                                 "closed")
//! ```

use std::collections::HashSet;
use std::io::BufRead;
use std::os::fd::{AsFd, OwnedFd};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use doca_cc::proto::layout::KIND_POST;
use doca_cc::proto::records::{ring_slots, segment_len, Post, DONE_LEN, POST_LEN};
use doca_cc::proto::{Ctrl, Hello, PeerKind, Reply};
use doca_cc::transport::ring::{Area, End, Ring};
use doca_core::{Error, PciAddr};
use doca_link::notify::Doorbell;
use doca_link::Recv;
use doca_mmap::SharedMem;
use rustix::net::{AddressFamily, SendFlags, SocketAddrUnix, SocketType};

const HOST: &str = "b1:00.0";
/// The host function the legacy services of the tests serve.
const EP_HOST: &str = "3b:00.0";

fn hello(name: &str, function: PciAddr) -> Hello {
    Hello { kind: PeerKind::Client, max_msg_size: 4080, recv_queue_size: 16, function, name: name.into() }
}

fn connect(name: &str) -> OwnedFd {
    let path = doca_link::service_path("cc", PciAddr::parse(HOST).unwrap(), name).unwrap();
    doca_link::connect(&path).unwrap().expect("the server listens")
}

/// Sleeps until `fd` is readable or `deadline` passes (whichever first): waiting for the
/// server's answer instead of polling for it.
fn wait_readable(fd: std::os::fd::BorrowedFd<'_>, deadline: Instant) {
    let left = deadline.saturating_duration_since(Instant::now());
    let timeout =
        rustix::time::Timespec { tv_sec: left.as_secs() as i64, tv_nsec: left.subsec_nanos().into() };
    let mut fds = [rustix::event::PollFd::from_borrowed_fd(fd, rustix::event::PollFlags::IN)];
    let _ = rustix::event::poll(&mut fds, Some(&timeout));
}

/// Waits (at most a minute) for a packet or the end of file on `sock`.
fn next(sock: &OwnedFd) -> Recv {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut buf = [0u8; 512];
    loop {
        match doca_link::recv(sock.as_fd(), &mut buf) {
            Ok(Recv::Empty) if Instant::now() < deadline => wait_readable(sock.as_fd(), deadline),
            Ok(Recv::Packet { len, truncated, fds }) => {
                PACKET.with(|p| p.borrow_mut().copy_from_slice(&buf));
                let reply = Reply::decode(&buf[..len]);
                if let Ok(r) = reply {
                    LAST.with(|l| l.set(Some(r.status)));
                }
                return Recv::Packet { len, truncated, fds };
            }
            Ok(r) => return r,
            Err(_) => return Recv::Closed,
        }
    }
}

thread_local! {
    static LAST: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
    /// The last packet `next` read.
    static PACKET: std::cell::RefCell<[u8; 512]> = const { std::cell::RefCell::new([0; 512]) };
}

/// This side's doorbell and the end of it handed to the server.
type Bell = (Doorbell, doca_link::discard::PeerFd);

/// A complete, correct handshake: (socket, segment, reply, this side's doorbell).
fn handshake(name: &str) -> (OwnedFd, OwnedFd, Reply, Bell) {
    handshake_on(connect(name), hello(name, PciAddr::parse(HOST).unwrap()))
}

/// [`handshake`] with Hello `h` on a socket connected to a server.
fn handshake_on(sock: OwnedFd, h: Hello) -> (OwnedFd, OwnedFd, Reply, Bell) {
    let bell = Doorbell::pair().unwrap();
    doca_link::send(sock.as_fd(), &h.encode(), &[bell.1.as_fd(), bell.1.as_fd()]).unwrap();
    let mut buf = [0u8; 512];
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match doca_link::recv(sock.as_fd(), &mut buf).unwrap() {
            Recv::Packet { len, fds, .. } => {
                let reply = Reply::decode(&buf[..len]).unwrap();
                assert_eq!(reply.status, 0, "the server accepted");
                let seg = fds.into_iter().next().unwrap().into_inner();
                return (sock, seg, reply, bell);
            }
            Recv::Closed => panic!("the server dropped a correct handshake"),
            Recv::Empty => {
                assert!(Instant::now() < deadline);
                wait_readable(sock.as_fd(), deadline);
            }
        }
    }
}

/// Reads until the server hangs up; returns how many packets came first.
fn until_closed(sock: &OwnedFd) -> usize {
    let mut n = 0;
    loop {
        match next(sock) {
            Recv::Closed => return n,
            Recv::Packet { .. } => n += 1,
            Recv::Empty => return usize::MAX,
        }
    }
}

fn ring_tail(name: &str) -> String {
    let (sock, seg, reply, _bell) = handshake(name);
    // The client → server ring's `tail` sits one cache line into the ring.
    let tail_at = reply.c2s_offset + 64;
    rustix::io::pwrite(&seg, &(1u64 << 40).to_ne_bytes(), tail_at).unwrap();
    match until_closed(&sock) {
        usize::MAX => "still open".into(),
        _ => "closed".into(),
    }
}

/// [`ring_tail`] against a legacy service of 3b:00.0 (the endpoint API's namespace).
fn ep_ring_tail(name: &str) -> String {
    let function = PciAddr::parse(EP_HOST).unwrap();
    let path = doca_link::service_path("ep", function, name).unwrap();
    let sock = doca_link::connect(&path).unwrap().expect("the service listens");
    let h = Hello {
        kind: PeerKind::Endpoint,
        max_msg_size: 4080,
        recv_queue_size: 16,
        function,
        name: name.into(),
    };
    let (sock, seg, reply, _bell) = handshake_on(sock, h);
    rustix::io::pwrite(&seg, &(1u64 << 40).to_ne_bytes(), reply.c2s_offset + 64).unwrap();
    match until_closed(&sock) {
        usize::MAX => "still open".into(),
        _ => "closed".into(),
    }
}

fn consumers(name: &str, n: u32) -> String {
    let (sock, _seg, _reply, bell) = handshake(name);
    let mut keep = Vec::new();
    for i in 0..n {
        let (area, _) = consumer_rings();
        let mem = SharedMem::alloc(4096).unwrap();
        if !register_consumer(&sock, &bell, 2 * i + 2, &area, &mem) {
            break;
        }
        keep.push((area, mem));
    }
    let acks = until_closed(&sock);
    format!("closed after {acks} acks")
}

/// Announces one consumer of `slots` buffers (its rings sized to match), then waits.
fn big_consumer(name: &str, slots: u32) -> String {
    let (sock, _seg, _reply, bell) = handshake(name);
    let (area, _) = consumer_rings_of(slots);
    let mem = SharedMem::alloc(4096).unwrap();
    register_consumer_of(&sock, &bell, 2, &area, &mem, slots);
    let acks = until_closed(&sock);
    format!("closed after {acks} acks")
}

/// A consumer's segment with its two rings initialized (4 posts in flight), and the post
/// ring's slot count.
fn consumer_rings() -> (std::sync::Arc<Area>, u32) {
    consumer_rings_of(4)
}

/// [`consumer_rings`] for `slots` posts in flight.
fn consumer_rings_of(slots: u32) -> (std::sync::Arc<Area>, u32) {
    let (len, done_at) = segment_len(slots).unwrap();
    let area = Area::create("hostile-consumer", len).unwrap();
    let n = ring_slots(slots);
    Ring::init(&area, 0, n, POST_LEN).unwrap();
    Ring::init(&area, done_at, n, DONE_LEN).unwrap();
    (area, n)
}

/// Announces consumer `id` with `area`'s rings and `mem` as its memory; false when the
/// server hung up.
fn register_consumer(sock: &OwnedFd, bell: &Bell, id: u32, area: &Area, mem: &SharedMem) -> bool {
    register_consumer_of(sock, bell, id, area, mem, 4)
}

/// [`register_consumer`] announcing `slots` buffers.
fn register_consumer_of(
    sock: &OwnedFd,
    bell: &Bell,
    id: u32,
    area: &Area,
    mem: &SharedMem,
    slots: u32,
) -> bool {
    let region = mem.share().unwrap();
    let ctrl = Ctrl::NewConsumer {
        id,
        one_copy: true,
        mem_offset: region.offset as u64,
        mem_len: region.len as u64,
        slots,
    };
    doca_link::send(sock.as_fd(), &ctrl.encode(), &[area.as_fd(), region.fd.as_fd(), bell.1.as_fd()]).is_ok()
}

fn bad_post(name: &str) -> String {
    let (sock, _seg, _reply, bell) = handshake(name);
    let (area, n) = consumer_rings();
    let post = Ring::attach_sequenced(&area, 0, n, POST_LEN, End::Producer, KIND_POST).unwrap();
    // 64 bytes of room a terabyte into 4096 shared bytes.
    let bad = Post { token: 1, offset: 1 << 40, room: 64 };
    assert!(post.push_with(KIND_POST, POST_LEN, |b| bad.write(b)).unwrap());
    let mem = SharedMem::alloc(4096).unwrap();
    assert!(register_consumer(&sock, &bell, 2, &area, &mem), "the server hung up");
    println!("registered");
    until_closed(&sock);
    String::new()
}

fn silent(name: &str, n: usize, legacy: bool, expect: Option<usize>) -> String {
    let path = match legacy {
        true => doca_link::service_path("ep", PciAddr::parse(EP_HOST).unwrap(), name).unwrap(),
        false => doca_link::service_path("cc", PciAddr::parse(HOST).unwrap(), name).unwrap(),
    };
    let socks: Vec<OwnedFd> =
        (0..n).map(|_| doca_link::connect(&path).unwrap().expect("the server listens")).collect();
    // Waits for the server's verdicts instead of a fixed pause: until `expect` sockets were
    // dropped (a minute at most), or, without `expect`, for half a second.
    let deadline = Instant::now() + expect.map_or(Duration::from_millis(500), |_| Duration::from_secs(60));
    let mut open: Vec<&OwnedFd> = socks.iter().collect();
    let mut dropped = 0;
    loop {
        // Closed at once, or first answered "busy, try again".
        open.retain(|s| {
            let mut buf = [0u8; 64];
            let gone = matches!(doca_link::recv(s.as_fd(), &mut buf), Ok(Recv::Closed | Recv::Packet { .. }));
            dropped += gone as usize;
            !gone
        });
        let now = Instant::now();
        if expect.is_some_and(|k| dropped >= k) || now >= deadline || open.is_empty() {
            break;
        }
        let left = deadline - now;
        let timeout =
            rustix::time::Timespec { tv_sec: left.as_secs() as i64, tv_nsec: left.subsec_nanos().into() };
        let mut fds: Vec<rustix::event::PollFd<'_>> =
            open.iter().map(|s| rustix::event::PollFd::new(*s, rustix::event::PollFlags::IN)).collect();
        let _ = rustix::event::poll(&mut fds, Some(&timeout));
    }
    println!("dropped {dropped}");
    for _ in std::io::stdin().lock().lines() {}
    drop(socks);
    String::new()
}

fn bells(name: &str) -> String {
    let sock = connect(name);
    let (_r, w) = rustix::pipe::pipe().unwrap();
    let h = hello(name, PciAddr::parse(HOST).unwrap());
    doca_link::send(sock.as_fd(), &h.encode(), &[w.as_fd(), w.as_fd()]).unwrap();
    match next(&sock) {
        Recv::Closed => "dropped".into(),
        _ => "answered".into(),
    }
}

/// A Hello whose doorbells are files of a pipe this process holds the lock of (a splice
/// from an empty socket), this process's own copies closed once sent: whoever closes the
/// server's copies waits for the lock. "dropped" or "answered", then the lock is held until
/// stdin's end (a minute at most: a server that froze fails its test instead of hanging it).
fn locked_bells(name: &str) -> String {
    // Until the server holds the last copies (it may close its copies before this process
    // closes its own: then nothing of the server's waited, and it is tried again).
    let (pipe, sock) = (0..100)
        .find_map(|_| {
            let mut pipe = doca_link::discard::LockedPipe::new(2).unwrap();
            let sock = connect(name);
            let h = hello(name, PciAddr::parse(HOST).unwrap());
            let files = std::mem::take(&mut pipe.files);
            doca_link::send(sock.as_fd(), &h.encode(), &[files[0].as_fd(), files[1].as_fd()]).unwrap();
            close_before_them(files).then_some((pipe, sock))
        })
        .expect("the server kept closing first");
    let verdict = match next(&sock) {
        Recv::Closed => "dropped",
        _ => "answered",
    };
    println!("{verdict}");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for _ in std::io::stdin().lock().lines() {}
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(Duration::from_secs(60));
    drop(pipe);
    String::new()
}

/// Closes this process's copies `files` of what it just sent, on a thread of its own (the
/// server may have closed its copies first: then this close is the last, and waits for the
/// lock): whether it returned within 100 ms, i.e. whether the server holds the last copies.
fn close_before_them<T: Send + 'static>(files: T) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(files);
        let _ = tx.send(());
    });
    rx.recv_timeout(Duration::from_millis(100)).is_ok()
}

/// See the module docs (`locked-flood`).
fn locked_flood(name: &str, packets: usize) -> String {
    use doca_link::discard::{LockedPipe, MAX_CLOSERS, MAX_FDS, STUCK};
    let (plain, _plain_w) = rustix::pipe::pipe().unwrap();
    let mut locked = Vec::new();
    let mut attempts = 0;
    while locked.len() <= MAX_CLOSERS {
        attempts += 1;
        assert!(attempts < 100, "the server kept closing first");
        let mut pipe = LockedPipe::new(1).unwrap();
        let sock = connect(name);
        let file = pipe.files.pop().unwrap();
        let h = hello(name, PciAddr::parse(HOST).unwrap());
        doca_link::send(sock.as_fd(), &h.encode(), &[file.as_fd(), plain.as_fd()]).unwrap();
        let last_is_theirs = close_before_them(file);
        let _ = next(&sock);
        if last_is_theirs {
            locked.push(pipe);
            std::thread::sleep(STUCK * 2);
        } else {
            // Ours was the last close, waiting in a thread: let it go and try again.
            drop(pipe);
        }
    }
    let path = doca_link::service_path("cc", PciAddr::parse(HOST).unwrap(), name).unwrap();
    let many = vec![plain.as_fd(); MAX_FDS];
    doca_tests::flood_with_descriptors(&path, &many, packets);
    println!("flooded");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::stdin().lock().lines();
        let _ = lines.next();
        let _ = tx.send(());
        for _ in lines {}
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(Duration::from_secs(60));
    drop(locked);
    println!("released");
    let _ = rx.recv_timeout(Duration::from_secs(60));
    String::new()
}

fn function(name: &str, pci: &str) -> String {
    let sock = connect(name);
    let (_bell, ring) = Doorbell::pair().unwrap();
    let h = hello(name, PciAddr::parse(pci).unwrap());
    doca_link::send(sock.as_fd(), &h.encode(), &[ring.as_fd(), ring.as_fd()]).unwrap();
    match next(&sock) {
        Recv::Packet { .. } => match LAST.with(|l| l.get()) {
            Some(0) => "accepted".into(),
            Some(code) => format!("refused {}", Error::name_of(code)),
            None => "garbage".into(),
        },
        _ => "dropped".into(),
    }
}

/// The inodes of process `pid`'s sockets (read through `/proc/<pid>/fd`, as its own user).
fn socket_inodes(pid: &str) -> HashSet<String> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return HashSet::new() };
    dir.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| Some(l.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.to_string()))
        .collect()
}

/// Looks for the doorbells of processes `pids` as a stranger would, knowing even which
/// sockets are theirs: every abstract name in `/proc/net/unix` (readable by every user) of
/// one of their sockets. Then, as user `uid`, floods each name found until its queue is
/// full. Prints "found N, flooded K" (names found; names that took a datagram).
fn find_bells(pids: &str, uid: u32) -> String {
    let inodes: HashSet<String> = pids.split(',').flat_map(socket_inodes).collect();
    let table = std::fs::read_to_string("/proc/net/unix").unwrap();
    let names: Vec<Vec<u8>> = table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (inode, path) = (f.get(6)?, f.get(7)?);
            let name = path.strip_prefix('@')?;
            inodes.contains(*inode).then(|| name.as_bytes().to_vec())
        })
        .collect();
    let uid = rustix::process::Uid::from_raw(uid);
    rustix::thread::set_thread_res_uid(uid, uid, uid).expect("setresuid");
    let sock = rustix::net::socket(AddressFamily::UNIX, SocketType::DGRAM, None).unwrap();
    let mut flooded = 0;
    for name in &names {
        let Ok(addr) = SocketAddrUnix::new_abstract_name(name) else { continue };
        let mut sent = 0;
        while sent < 100_000 && rustix::net::sendto(&sock, &[1], SendFlags::DONTWAIT, &addr).is_ok() {
            sent += 1;
        }
        flooded += (sent > 0) as usize;
    }
    format!("found {}, flooded {flooded}", names.len())
}

fn listen_as(uid: u32, path: &str) -> String {
    let uid = rustix::process::Uid::from_raw(uid);
    rustix::thread::set_thread_res_uid(uid, uid, uid).expect("setresuid (run as root)");
    let listener = doca_link::Listener::bind(std::path::Path::new(path)).expect("bind");
    println!("listening");
    let deadline = Instant::now() + Duration::from_secs(60);
    let _client = loop {
        if let Ok(Some(s)) = listener.accept() {
            break s;
        }
        if Instant::now() > deadline {
            return "nobody came".into();
        }
        wait_readable(listener.as_fd(), deadline);
    };
    for _ in std::io::stdin().lock().lines() {}
    String::new()
}

/// Announces one consumer whose memory is a sparse memfd of `bytes`, all of it.
fn huge_consumer(name: &str, bytes: usize) -> String {
    let (sock, _seg, _reply, bell) = handshake(name);
    let (area, _) = consumer_rings();
    let mem = SharedMem::alloc(bytes).unwrap();
    assert!(register_consumer(&sock, &bell, 2, &area, &mem), "the server hung up");
    let verdict = loop {
        match next(&sock) {
            Recv::Packet { len, .. } => match Ctrl::decode(&last_packet(len)) {
                Ok(Ctrl::ConsumerAck { .. }) => break "acked".to_string(),
                Ok(Ctrl::ConsumerRefused { status, .. }) => {
                    break format!("refused {}", Error::name_of(status))
                }
                _ => continue,
            },
            _ => break "closed".into(),
        }
    };
    println!("{verdict}");
    for _ in std::io::stdin().lock().lines() {}
    drop((sock, area, mem));
    String::new()
}

/// The first `len` bytes of the packet [`next`] read last.
fn last_packet(len: usize) -> Vec<u8> {
    PACKET.with(|p| p.borrow()[..len].to_vec())
}

/// One handshake that may be refused: the kept parts, a refusal's code, or nothing within
/// `wait`.
fn try_handshake(name: &str, wait: Duration) -> Result<(OwnedFd, OwnedFd, Bell), Option<i32>> {
    let sock = connect(name);
    let bell = Doorbell::pair().unwrap();
    let h = hello(name, PciAddr::parse(HOST).unwrap());
    // A server that refuses at once may have answered and closed before this send: the
    // answer is read all the same.
    let _ = doca_link::send(sock.as_fd(), &h.encode(), &[bell.1.as_fd(), bell.1.as_fd()]);
    let mut buf = [0u8; 512];
    let deadline = Instant::now() + wait;
    loop {
        match doca_link::recv(sock.as_fd(), &mut buf) {
            Ok(Recv::Packet { len, fds, .. }) => {
                return match Reply::decode(&buf[..len]) {
                    Ok(r) if r.status == 0 => Ok((sock, fds.into_iter().next().unwrap().into_inner(), bell)),
                    Ok(r) => Err(Some(r.status)),
                    Err(_) => Err(None),
                };
            }
            Ok(Recv::Empty) if Instant::now() < deadline => wait_readable(sock.as_fd(), deadline),
            _ => return Err(None),
        }
    }
}

fn conns(name: &str, n: usize) -> String {
    // This side keeps ~5 descriptors per connection: allow itself all it may have.
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let raised = rustix::process::Rlimit { current: limit.maximum, maximum: limit.maximum };
    let _ = rustix::process::setrlimit(rustix::process::Resource::Nofile, raised);
    let (mut kept, mut refused, mut codes, mut lost) = (Vec::new(), 0, Vec::new(), 0);
    for _ in 0..n {
        // A live server answers every handshake (or closes the socket, seen at once): the
        // wait is a liveness bound, generous for a loaded machine.
        match try_handshake(name, Duration::from_secs(60)) {
            Ok(parts) => kept.push(parts),
            Err(Some(code)) => {
                refused += 1;
                let code = Error::name_of(code).to_string();
                if !codes.contains(&code) {
                    codes.push(code);
                }
            }
            Err(None) => {
                lost += 1;
                break;
            }
        }
    }
    println!("accepted {} refused {refused} {} lost {lost}", kept.len(), codes.join(","));
    for _ in std::io::stdin().lock().lines() {}
    drop(kept);
    String::new()
}

/// Sends a correct Hello with its doorbells and closes the socket without reading the
/// answer; the process stays (as a client that gave up on this socket).
fn hello_and_leave(name: &str) -> String {
    let sock = connect(name);
    let bell = Doorbell::pair().unwrap();
    let h = hello(name, PciAddr::parse(HOST).unwrap());
    doca_link::send(sock.as_fd(), &h.encode(), &[bell.1.as_fd(), bell.1.as_fd()]).unwrap();
    drop(sock);
    println!("left");
    for _ in std::io::stdin().lock().lines() {}
    String::new()
}

fn served_stall(hex: &str, write: bool, len: u64) -> String {
    let desc = doca_tests::from_hex(hex).expect("a descriptor in hex");
    // The most one request may ask for: the window's worth at the end of the range.
    let n = len.min(doca_mmap::served::WINDOW as u64);
    let at = len - n;
    let first = doca_mmap::stalled_served_request(&desc, write, at, n);
    match &first {
        Ok(_) => println!("holding"),
        Err(e) => println!("refused {}", e.name()),
    }
    std::thread::spawn(move || {
        let mut held = first.ok();
        loop {
            // The exporter closes a stalled copy after its stall limit: ask again at once.
            if let Some(r) = &held {
                while !r.closed_within(Duration::from_secs(3600)) {}
            }
            held = doca_mmap::stalled_served_request(&desc, write, at, n).ok();
            if held.is_none() {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    });
    for _ in std::io::stdin().lock().lines() {}
    String::new()
}

/// A legacy client that claims every message was sent at time 0 and keeps the service's
/// receive ring full (sleeping on its room doorbell while it is), until a line on stdin.
fn ep_stamp_zero(name: &str) -> String {
    use doca_cc::proto::layout::KIND_EP_MSG;
    use doca_cc::transport::setup::{self, Answer, Bells};
    let function = PciAddr::parse(EP_HOST).unwrap();
    let path = doca_link::service_path("ep", function, name).unwrap();
    let sock = doca_link::connect(&path).unwrap().expect("the service listens");
    let h = Hello {
        kind: PeerKind::Endpoint,
        max_msg_size: 4080,
        recv_queue_size: 16,
        function,
        name: name.into(),
    };
    let bells = Bells::two().unwrap();
    setup::send_hello(sock.as_fd(), &h, bells.theirs()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let channel = loop {
        match setup::answer(sock.as_fd(), &h) {
            Answer::Up(up) => break up.0,
            Answer::Waiting if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            _ => return "refused".into(),
        }
    };
    let (_messages, room) = bells.keep();
    let room = room.expect("two doorbells");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().lock().lines().next();
        s.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    println!("flooding");
    let payload = [b'x'; 4080];
    let mut sent = 0u64;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let pushed = channel
            .send(KIND_EP_MSG, 8 + payload.len(), |b| {
                b[..8].copy_from_slice(&0u64.to_le_bytes());
                b[8..].copy_from_slice(&payload);
            })
            .unwrap_or(false);
        if pushed {
            sent += 1;
            channel.wake_peer();
        } else if channel.peer_hung_up() {
            break;
        } else if !channel.arm_for_room() {
            // Full: sleep until the service makes room (bounded, to notice stdin's end).
            let _ = rustix::event::poll(
                &mut [rustix::event::PollFd::new(&room, rustix::event::PollFlags::IN)],
                Some(&rustix::time::Timespec { tv_sec: 0, tv_nsec: 100_000_000 }),
            );
            room.drain();
            channel.disarm();
        }
    }
    format!("sent {sent}")
}

fn served_idle(hex: &str, n: usize) -> String {
    let desc = doca_tests::from_hex(hex).expect("a descriptor in hex");
    let dpu = doca_core::open_device_with_pci("03:00.0", None).expect("dpu device");
    let (mut held, mut refused) = (Vec::new(), 0);
    for _ in 0..n {
        match doca_mmap::Mmap::create_from_export(None, &desc, &dpu) {
            Ok(m) => held.push(m),
            Err(_) => refused += 1,
        }
    }
    println!("held {} refused {refused}", held.len());
    for _ in std::io::stdin().lock().lines() {}
    drop(held);
    String::new()
}

/// One message on an import stream across the link, and what came back within 5 s: the
/// answer's DOCA code (short name, `OK` for 0), `closed`, or `silent`.
fn link_ask(stream: &doca_link::remote::Stream, msg: &[u8]) -> String {
    if stream.send(msg).is_err() {
        return "closed".into();
    }
    let mut buf = Vec::new();
    match stream.recv_timeout(&mut buf, Duration::from_secs(5)) {
        Ok(Some(true)) if buf.len() >= 8 => {
            let code = u32::from_le_bytes(buf[..4].try_into().unwrap());
            if code == 0 {
                return "OK".into();
            }
            Error::from_code(code as i32)
                .map_or(format!("code{code}"), |e| e.name().trim_start_matches("DOCA_ERROR_").to_string())
        }
        Ok(Some(true)) => format!("short{}", buf.len()),
        Ok(Some(false)) | Err(_) => "closed".into(),
        Ok(None) => "silent".into(),
    }
}

/// The first message of an import stream (mmap's wire: magic, version 1, 0, descriptor).
fn link_request(magic: &[u8; 8], desc: &[u8]) -> Vec<u8> {
    let mut req = magic.to_vec();
    req.extend_from_slice(&1u16.to_le_bytes());
    req.extend_from_slice(&[0, 0]);
    req.extend_from_slice(desc);
    req
}

/// A request on an import stream: op, 0, offset, length (then `bytes`).
fn link_op(op: u32, offset: u64, len: u64, bytes: &[u8]) -> Vec<u8> {
    let mut m = op.to_le_bytes().to_vec();
    m.extend_from_slice(&[0; 4]);
    m.extend_from_slice(&offset.to_le_bytes());
    m.extend_from_slice(&len.to_le_bytes());
    m.extend_from_slice(bytes);
    m
}

fn link_import(hex: &str, len: u64) -> String {
    use doca_link::remote::{open, Kind};
    let desc = doca_tests::from_hex(hex).expect("a descriptor in hex");
    let good = link_request(b"DOCAMMLQ", &desc);
    let mut out = Vec::new();
    let stream = |req: &[u8]| open(Kind::MemoryImport, None, req).expect("the DPU's listener");
    // The welcome of a request, as link_ask reads an answer (status at bytes 8..12).
    let welcome = |s: &doca_link::remote::Stream| {
        let mut buf = Vec::new();
        match s.recv_timeout(&mut buf, Duration::from_secs(5)) {
            Ok(Some(true)) if buf.len() == 32 => {
                let code = u32::from_le_bytes(buf[8..12].try_into().unwrap());
                if code == 0 {
                    "OK".to_string()
                } else {
                    Error::from_code(code as i32).map_or(format!("code{code}"), |e| {
                        e.name().trim_start_matches("DOCA_ERROR_").to_string()
                    })
                }
            }
            Ok(Some(true)) => format!("short{}", buf.len()),
            Ok(Some(false)) | Err(_) => "closed".into(),
            Ok(None) => "silent".into(),
        }
    };
    // Not an import request at all.
    out.push(welcome(&stream(&link_request(b"NOTMMLQ!", &desc))));
    // A forged token.
    let mut forged = desc.clone();
    forged[30] ^= 0x10;
    out.push(welcome(&stream(&link_request(b"DOCAMMLQ", &forged))));
    // A proper import, then refused requests on it (the stream goes on), then one too big.
    let s = stream(&good);
    out.push(welcome(&s));
    out.push(link_ask(&s, &link_op(1, len - 1, 2, &[])));
    out.push(link_ask(&s, &link_op(1, u64::MAX, 1, &[])));
    out.push(link_ask(&s, &link_op(1, 0, 0, &[])));
    out.push(link_ask(&s, &link_op(2, 0, 4, b"evil")));
    out.push(link_ask(&s, &link_op(1, 0, 4, &[])));
    out.push(link_ask(&s, &link_op(1, 0, 1 << 30, &[])));
    // Protocol breaks, one stream each: an unknown request, a short one, a write whose length
    // is not what it carries.
    for msg in [link_op(77, 0, 4, &[]), vec![1, 2, 3], link_op(2, 0, 100, b"four")] {
        let s = stream(&good);
        let w = welcome(&s);
        out.push(if w == "OK" { link_ask(&s, &msg) } else { format!("welcome-{w}") });
    }
    out.join(" ")
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or_default();
    let out = match arg(0) {
        "ring-tail" => ring_tail(arg(1)),
        "ep-ring-tail" => ep_ring_tail(arg(1)),
        "consumers" => consumers(arg(1), arg(2).parse().unwrap()),
        "big-consumer" => big_consumer(arg(1), arg(2).parse().unwrap()),
        "bad-post" => bad_post(arg(1)),
        "silent" => silent(arg(1), arg(2).parse().unwrap(), arg(3) == "ep", arg(4).parse().ok()),
        "bells" => bells(arg(1)),
        "locked-bells" => locked_bells(arg(1)),
        "locked-flood" => locked_flood(arg(1), arg(2).parse().unwrap()),
        "function" => function(arg(1), arg(2)),
        "listen-as" => listen_as(arg(1).parse().unwrap(), arg(2)),
        "find-bells" => find_bells(arg(1), arg(2).parse().unwrap()),
        "huge-consumer" => huge_consumer(arg(1), arg(2).parse().unwrap()),
        "conns" => conns(arg(1), arg(2).parse().unwrap()),
        "hello-and-leave" => hello_and_leave(arg(1)),
        "ep-stamp-zero" => ep_stamp_zero(arg(1)),
        "served-stall" => served_stall(arg(1), arg(2) == "write", arg(3).parse().unwrap()),
        "served-idle" => served_idle(arg(1), arg(2).parse().unwrap()),
        "link-import" => link_import(arg(1), arg(2).parse().unwrap()),
        other => {
            eprintln!("hostile: unknown mode {other:?}");
            return ExitCode::FAILURE;
        }
    };
    if !out.is_empty() {
        println!("{out}");
    }
    ExitCode::SUCCESS
}
