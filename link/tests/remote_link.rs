//! The remote link in one process: a DPU side and a host side (two `Link`s) over loopback.
//! Every test has its own listener on a port of its own; log lines are captured by one
//! subscriber for the whole binary.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

use doca_link::remote::{self, keys, Config, Kind, Link, Role, Stream, MAX_MESSAGE};
use doca_link::Error;

static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

struct Capture;

impl Write for Capture {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn capture() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        tracing_subscriber::fmt()
            .with_writer(|| Capture)
            .with_ansi(false)
            .with_max_level(tracing::Level::DEBUG)
            .init();
    });
}

/// The captured lines containing every one of `needles`.
fn lines_with(needles: &[&str]) -> Vec<String> {
    let log = String::from_utf8_lossy(&LOG.lock().unwrap()).into_owned();
    log.lines().filter(|l| needles.iter().all(|n| l.contains(n))).map(str::to_owned).collect()
}

/// Waits (at most 10 s) for a line containing every one of `needles`.
fn wait_line(needles: &[&str]) -> Vec<String> {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let l = lines_with(needles);
        if !l.is_empty() || Instant::now() > until {
            return l;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

struct KeyDir(PathBuf);

impl KeyDir {
    fn new(name: &str) -> KeyDir {
        let d = std::env::temp_dir().join(format!("doca-link-remote-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        keys::generate(&d, false).unwrap();
        KeyDir(d)
    }
}

impl Drop for KeyDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dpu(keys: Option<&Path>) -> (Link, SocketAddr) {
    capture();
    let cfg = Config {
        role: Role::Dpu,
        addr: "127.0.0.1:0".parse().unwrap(),
        keys: keys.map(Path::to_path_buf).unwrap_or_default(),
        plaintext: keys.is_none(),
    };
    let link = Link::new(cfg).unwrap();
    let addr = link.listen().unwrap();
    assert_eq!(link.listen(), Ok(addr), "idempotent");
    (link, addr)
}

fn host(addr: SocketAddr, keys: Option<&Path>) -> Link {
    capture();
    let cfg = Config {
        role: Role::Host,
        addr,
        keys: keys.map(Path::to_path_buf).unwrap_or_default(),
        plaintext: keys.is_none(),
    };
    Link::new(cfg).unwrap()
}

/// Sends the request back, then echoes every message.
fn echo(stream: Stream, request: Vec<u8>) {
    if stream.send(&request).is_err() {
        return;
    }
    let mut buf = Vec::new();
    while let Ok(true) = stream.recv(&mut buf) {
        if stream.send(&buf).is_err() {
            return;
        }
    }
}

fn pattern(n: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(31) ^ n) as u8).collect()
}

#[test]
fn roundtrip_small_and_large_both_directions_at_once() {
    let k = KeyDir::new("roundtrip");
    let (d, addr) = dpu(Some(&k.0));
    d.serve(Kind::CcService, echo);
    let h = host(addr, Some(&k.0));
    let s = Arc::new(h.open(Kind::CcService, None, b"hello").unwrap());
    assert_eq!(s.peer().addr(), addr);
    assert!(s.peer().key().is_some());
    let mut buf = Vec::new();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert_eq!(buf, b"hello");
    let sizes = [0usize, 1, 64, 65_517, 65_518, 65_519, 200_000, MAX_MESSAGE];
    // A writer thread sends while this thread reads the echoes: both directions at once.
    let writer = {
        let s = s.clone();
        std::thread::spawn(move || {
            for round in 0..4 {
                for (i, len) in sizes.iter().enumerate() {
                    s.send(&pattern(round * 10 + i, *len)).unwrap();
                }
            }
        })
    };
    for round in 0..4 {
        for (i, len) in sizes.iter().enumerate() {
            assert_eq!(s.recv(&mut buf), Ok(true));
            assert_eq!(buf, pattern(round * 10 + i, *len), "round {round} size {len}");
        }
    }
    writer.join().unwrap();
    assert_eq!(s.send(&vec![0; MAX_MESSAGE + 1]), Err(Error::InvalidValue));
}

#[test]
fn open_reaches_only_a_served_kind() {
    let k = KeyDir::new("dispatch");
    let (d, addr) = dpu(Some(&k.0));
    d.serve(Kind::SyncEvent, echo);
    let h = host(addr, Some(&k.0));
    assert_eq!(h.open(Kind::Rdma, None, b"x").unwrap_err(), Error::NotFound);
    assert!(!wait_line(&["refused the rdma request: nothing serves it there"]).is_empty());
    let s = h.open(Kind::SyncEvent, None, &[7; 1000]).unwrap();
    let mut buf = Vec::new();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert_eq!(buf, [7; 1000]);
    // The handler ran on a thread named after its kind.
    fn named(stream: Stream, _: Vec<u8>) {
        let name = std::thread::current().name().unwrap_or("").to_owned();
        let _ = stream.send(name.as_bytes());
    }
    d.serve(Kind::Rdma, named);
    let s = h.open(Kind::Rdma, None, b"").unwrap();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert_eq!(buf, b"doca-link-rdma");
    // The host side does not listen; the DPU side needs a presence key to open.
    assert_eq!(h.listen(), Err(Error::InvalidValue));
    assert_eq!(d.open(Kind::Rdma, None, b"").unwrap_err(), Error::InvalidValue);
}

#[test]
fn wrong_key_is_refused_with_one_line_naming_the_peer() {
    let good = KeyDir::new("good");
    let other = KeyDir::new("other");
    let (d, addr) = dpu(Some(&good.0));
    d.serve(Kind::CcService, echo);
    // The host holds another pair's host key (and that pair's DPU key): refused by the DPU.
    let h = host(addr, Some(&other.0));
    assert_eq!(h.open(Kind::CcService, None, b"x").unwrap_err(), Error::NotPermitted);
    let refused =
        wait_line(&["WARN", "link: refused 127.0.0.1:", "authentication failed (wrong or missing key)"]);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(!lines_with(&["ERROR", "closed the link during the handshake: it refused this side's key"])
        .is_empty());
    // The right keys still get in.
    let h = host(addr, Some(&good.0));
    let s = h.open(Kind::CcService, None, b"in").unwrap();
    let mut buf = Vec::new();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert_eq!(buf, b"in");
}

#[test]
fn plaintext_and_encrypted_sides_refuse_each_other() {
    let k = KeyDir::new("mode");
    let (d, addr) = dpu(Some(&k.0));
    d.serve(Kind::CcService, echo);
    let plain = host(addr, None);
    assert_eq!(plain.open(Kind::CcService, None, b"x").unwrap_err(), Error::NotPermitted);
    assert!(!wait_line(&["WARN", "link: refused 127.0.0.1:", "it is plaintext and this side encrypted"])
        .is_empty());
    assert!(!lines_with(&[
        "ERROR",
        &format!("link: refused {addr}: it is encrypted and this side plaintext")
    ])
    .is_empty());
    // The other way round.
    let (d, addr) = dpu(None);
    d.serve(Kind::CcService, echo);
    let enc = host(addr, Some(&k.0));
    assert_eq!(enc.open(Kind::CcService, None, b"x").unwrap_err(), Error::NotPermitted);
    assert!(!lines_with(&[
        "ERROR",
        &format!("link: refused {addr}: it is plaintext and this side encrypted")
    ])
    .is_empty());
    // Both plaintext: works, and each stream says so at warn level.
    let plain = host(addr, None);
    let s = plain.open(Kind::CcService, None, b"clear").unwrap();
    assert!(s.peer().key().is_none());
    let mut buf = Vec::new();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert_eq!(buf, b"clear");
    assert!(!lines_with(&["WARN", &format!("link to {addr} is NOT encrypted (DOCA_EMU_LINK_PLAINTEXT=1)")])
        .is_empty());
}

#[test]
fn garbage_is_refused_and_the_listener_goes_on() {
    let k = KeyDir::new("garbage");
    let (d, addr) = dpu(Some(&k.0));
    d.serve(Kind::CcService, echo);
    // From an address of this test's own: the log lines below are about it alone.
    let mut raw = connect_from([127, 0, 0, 9], addr);
    let me = raw.local_addr().unwrap();
    raw.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let _ = raw.read_to_end(&mut got);
    assert_eq!(&got[..], b"DOCALNK1E", "the preface, then closed");
    assert!(
        !wait_line(&["WARN", &format!("link: refused {me}: not a doca-emu link (bad preface)")]).is_empty()
    );
    // A right preface, then a handshake message of absurd size.
    let mut raw = connect_from([127, 0, 0, 9], addr);
    raw.write_all(b"DOCALNK1E\xff\xff").unwrap();
    let mut got = Vec::new();
    let _ = raw.read_to_end(&mut got);
    assert_eq!(&got[..], b"DOCALNK1E");
    // Garbage of the right size as the first handshake message: authentication fails.
    let mut raw = connect_from([127, 0, 0, 9], addr);
    let me = raw.local_addr().unwrap();
    raw.write_all(b"DOCALNK1E\x00\x30").unwrap();
    raw.write_all(&[0x5a; 0x30]).unwrap();
    let mut got = Vec::new();
    let _ = raw.read_to_end(&mut got);
    assert_eq!(&got[..], b"DOCALNK1E");
    let refused =
        wait_line(&["WARN", &format!("link: refused {me}: authentication failed (wrong or missing key)")]);
    assert_eq!(refused.len(), 1);
    // The listener still serves.
    let h = host(addr, Some(&k.0));
    let s = h.open(Kind::CcService, None, b"still").unwrap();
    let mut buf = Vec::new();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert_eq!(buf, b"still");
}

/// A plaintext peer written by hand: preface, then frames as given.
fn raw_plaintext(addr: SocketAddr) -> TcpStream {
    let mut raw = TcpStream::connect(addr).unwrap();
    raw.write_all(b"DOCALNK1P").unwrap();
    let mut preface = [0u8; 9];
    raw.read_exact(&mut preface).unwrap();
    assert_eq!(&preface, b"DOCALNK1P");
    raw
}

fn frame(raw: &mut TcpStream, header: u8, data: &[u8]) -> std::io::Result<()> {
    let len = (1 + data.len()) as u16;
    raw.write_all(&len.to_be_bytes())?;
    raw.write_all(&[header])?;
    raw.write_all(data)
}

#[test]
fn oversize_and_malformed_frames_close_the_stream() {
    let (d, addr) = dpu(None);
    d.serve(Kind::CcService, echo);
    // A first message over MAX_MESSAGE, in fragments each of which is fine.
    let mut raw = raw_plaintext(addr);
    let me = raw.local_addr().unwrap();
    let chunk = vec![b'O'; 65_518];
    for _ in 0..=MAX_MESSAGE / chunk.len() + 1 {
        if frame(&mut raw, 0, &chunk).is_err() {
            break;
        }
    }
    raw.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut rest = Vec::new();
    let _ = raw.read_to_end(&mut rest);
    assert!(rest.is_empty(), "closed without an answer");
    let line = wait_line(&[
        "WARN",
        &format!("link: closed the stream from {me}: it sent a message over 1048576 bytes"),
    ]);
    assert!(!line.is_empty());
    // A header with unknown bits, inside an opened stream: the handler's receive fails.
    let mut raw = raw_plaintext(addr);
    frame(&mut raw, 1, &[b'O', Kind::CcService as u8, b'h', b'i']).unwrap();
    let mut answer = [0u8; 5];
    raw.read_exact(&mut answer).unwrap();
    assert_eq!(answer, [0, 3, 1, b'A', 0], "answered ok");
    let mut echoed = [0u8; 5];
    raw.read_exact(&mut echoed).unwrap();
    assert_eq!(echoed, [0, 3, 1, b'h', b'i']);
    frame(&mut raw, 0x41, b"x").unwrap();
    let mut rest = Vec::new();
    let _ = raw.read_to_end(&mut rest);
    assert!(rest.is_empty());
    // A first message that is no request.
    let mut raw = raw_plaintext(addr);
    frame(&mut raw, 1, b"Zzz").unwrap();
    let mut rest = Vec::new();
    let _ = raw.read_to_end(&mut rest);
    assert!(rest.is_empty());
}

/// Connects from a loopback address of its own (so that the per-address bound is this
/// test's alone).
fn connect_from(src: [u8; 4], to: SocketAddr) -> TcpStream {
    use rustix::net::{AddressFamily, SocketType};
    let sock = rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    let from = std::net::SocketAddrV4::new(src.into(), 0);
    rustix::net::bind(&sock, &from).unwrap();
    rustix::net::connect(&sock, &to).unwrap();
    TcpStream::from(sock)
}

#[test]
fn streams_per_peer_address_are_bounded() {
    let k = KeyDir::new("bound");
    let (_d, addr) = dpu(Some(&k.0));
    let mut held = Vec::new();
    for _ in 0..remote::MAX_STREAMS_PER_PEER {
        let mut s = connect_from([127, 0, 0, 7], addr);
        let mut preface = [0u8; 9];
        s.read_exact(&mut preface).unwrap();
        held.push(s);
    }
    let mut over = connect_from([127, 0, 0, 7], addr);
    over.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut got = Vec::new();
    let _ = over.read_to_end(&mut got);
    assert!(got.is_empty(), "closed at once, no preface");
    assert!(!wait_line(&["WARN", "streams from 127.0.0.7 already"]).is_empty());
    // Another address is not held back by that one's bound.
    let mut other = connect_from([127, 0, 0, 8], addr);
    let mut preface = [0u8; 9];
    other.read_exact(&mut preface).unwrap();
    // Room again once streams are gone (the listener counts them down as it closes them).
    drop(held);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let mut s = connect_from([127, 0, 0, 7], addr);
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        if s.read_exact(&mut preface).is_ok() {
            break;
        }
        assert!(Instant::now() < until, "the bound never freed");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The host's handler of reverse opens: tells what it got, then echoes.
fn host_side(stream: Stream, request: Vec<u8>) {
    let mut first = b"host got ".to_vec();
    first.extend_from_slice(&request);
    echo(stream, first);
}

#[test]
fn presence_and_reverse_open() {
    let k = KeyDir::new("presence");
    let (d, addr) = dpu(Some(&k.0));
    let h = host(addr, Some(&k.0));
    h.serve(Kind::MemoryImport, host_side);
    let key = 0x5eed_0000_0000_0042;
    assert_eq!(
        d.open(Kind::MemoryImport, Some(key), b"x").unwrap_err(),
        Error::NotFound,
        "nobody present yet"
    );
    assert_eq!(d.present(key).unwrap_err(), Error::InvalidValue, "the DPU side keeps no presence");
    let p = h.present(key).unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while !(d.is_present(key) && p.is_connected()) {
        assert!(Instant::now() < until, "the presence never arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
    let s = d.open(Kind::MemoryImport, Some(key), b"an import").unwrap();
    let mut buf = Vec::new();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert_eq!(buf, b"host got an import");
    let big = pattern(3, MAX_MESSAGE);
    s.send(&big).unwrap();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert!(buf == big);
    // Several at once.
    let d = Arc::new(d);
    let opens: Vec<_> = (0..8u8)
        .map(|i| {
            let d = d.clone();
            std::thread::spawn(move || {
                let s = d.open(Kind::MemoryImport, Some(key), &[i]).unwrap();
                let mut buf = Vec::new();
                s.recv(&mut buf).unwrap();
                buf
            })
        })
        .collect();
    for (i, t) in opens.into_iter().enumerate() {
        assert_eq!(t.join().unwrap(), [&b"host got "[..], &[i as u8]].concat());
    }
    // A kind the host does not serve: refused at once over the presence.
    let t = Instant::now();
    assert_eq!(d.open(Kind::Rdma, Some(key), b"").unwrap_err(), Error::NotFound);
    assert!(t.elapsed() < remote::REPLY_WAIT, "answered, not timed out");
    // The presence gone: the DPU forgets it.
    drop(p);
    let until = Instant::now() + Duration::from_secs(10);
    while d.is_present(key) {
        assert!(Instant::now() < until, "the presence stayed");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(d.open(Kind::MemoryImport, Some(key), b"x").unwrap_err(), Error::NotFound);
}

/// A presence written by hand over plaintext (the DPU side has no keys): announced, then the
/// first Dial read off it. The DPU's `open` for it runs on a thread of its own.
fn hand_presence(key: u64) -> (TcpStream, std::thread::JoinHandle<Result<Stream, Error>>, Arc<Link>) {
    let (d, addr) = dpu(None);
    let d = Arc::new(d);
    let mut raw = raw_plaintext(addr);
    frame(&mut raw, 1, &[&[b'P'][..], &key.to_le_bytes()].concat()).unwrap();
    let mut answer = [0u8; 5];
    raw.read_exact(&mut answer).unwrap();
    assert_eq!(answer, [0, 3, 1, b'A', 0], "the presence is taken");
    let until = Instant::now() + Duration::from_secs(10);
    while !d.is_present(key) {
        assert!(Instant::now() < until, "the presence never arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
    let opener = d.clone();
    let open = std::thread::spawn(move || opener.open(Kind::MemoryImport, Some(key), b"x"));
    // The Dial: frame length, header, 'D', its ticket, the kind, the request.
    let mut dial = [0u8; 2 + 1 + 1 + 16 + 1 + 1];
    raw.read_exact(&mut dial).unwrap();
    assert_eq!((dial[3], dial[20], dial[21]), (b'D', Kind::MemoryImport as u8, b'x'), "{dial:?}");
    (raw, open, d)
}

/// A host process whose presence was answered is found at once: it may ask the DPU for a
/// reverse open over another stream the moment it has the answer (the DPU recorded the
/// presence after answering, and such an open found nobody once in a while).
#[test]
fn a_presence_is_found_as_soon_as_it_is_answered() {
    let (d, addr) = dpu(None);
    let mut held = Vec::new();
    for i in 0..200u64 {
        let key = 0x5eed_0000_0001_0000 + i;
        // From an address of its own each (the listener bounds the streams of one address).
        let mut raw = connect_from([127, 0, 2, 1 + i as u8], addr);
        raw.set_nodelay(true).unwrap();
        raw.write_all(b"DOCALNK1P").unwrap();
        let mut preface = [0u8; 9];
        raw.read_exact(&mut preface).unwrap();
        frame(&mut raw, 1, &[&[b'P'][..], &key.to_le_bytes()].concat()).unwrap();
        let mut answer = [0u8; 5];
        raw.read_exact(&mut answer).unwrap();
        assert_eq!(answer, [0, 3, 1, b'A', 0], "the presence is taken");
        assert!(d.is_present(key), "presence {i}: answered, then not found");
        held.push(raw);
    }
}

/// A host process that closes its presence while the DPU's reverse open waits on it (it
/// withdrew it: its last export was revoked, or it exited) makes that open `NOT_FOUND`,
/// as one made just after; a presence that breaks (reset) makes it `CONNECTION_RESET`.
/// Either way at once, not after the reply wait.
#[test]
fn a_presence_closed_under_a_reverse_open_is_not_found_and_a_broken_one_reset() {
    let (raw, open, d) = hand_presence(0x5eed_0000_0000_0077);
    let t = Instant::now();
    raw.shutdown(std::net::Shutdown::Both).unwrap();
    drop(raw);
    assert_eq!(open.join().unwrap().unwrap_err(), Error::NotFound, "withdrawn");
    assert!(t.elapsed() < remote::REPLY_WAIT, "answered, not timed out");
    assert_eq!(d.open(Kind::MemoryImport, Some(0x5eed_0000_0000_0077), b"x").unwrap_err(), Error::NotFound);

    let (raw, open, _d) = hand_presence(0x5eed_0000_0000_0078);
    let t = Instant::now();
    // No lingering: the kernel resets the connection instead of closing it in order.
    rustix::net::sockopt::set_socket_linger(&raw, Some(Duration::ZERO)).unwrap();
    drop(raw);
    assert_eq!(open.join().unwrap().unwrap_err(), Error::ConnectionReset, "broken");
    assert!(t.elapsed() < remote::REPLY_WAIT, "answered, not timed out");
}

/// Two guards for one key share one presence: they do not replace each other at the
/// listener (a DPU that saw a presence replaced would log it), and the presence lasts until
/// the last guard drops.
#[test]
fn presences_of_one_key_are_shared() {
    let k = KeyDir::new("shared");
    let (d, addr) = dpu(Some(&k.0));
    let h = host(addr, Some(&k.0));
    h.serve(Kind::MemoryImport, host_side);
    let key = 0x5eed_0000_0000_0099;
    let a = h.present(key).unwrap();
    let b = h.present(key).unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while !(d.is_present(key) && a.is_connected() && b.is_connected()) {
        assert!(Instant::now() < until, "the presence never arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Stable: one stream, announced once.
    std::thread::sleep(Duration::from_millis(300));
    let announced = lines_with(&[&format!("host process {key:016x} present from")]);
    assert_eq!(announced.len(), 1, "{announced:?}");
    drop(a);
    std::thread::sleep(Duration::from_millis(100));
    assert!(d.is_present(key) && b.is_connected(), "the other guard keeps it");
    let s = d.open(Kind::MemoryImport, Some(key), b"still").unwrap();
    let mut buf = Vec::new();
    assert_eq!(s.recv(&mut buf), Ok(true));
    drop(b);
    let until = Instant::now() + Duration::from_secs(10);
    while d.is_present(key) {
        assert!(Instant::now() < until, "the presence stayed");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn presence_waits_for_the_listener_and_comes_back() {
    let k = KeyDir::new("comeback");
    // A port nothing listens on yet.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let h = host(addr, Some(&k.0));
    h.serve(Kind::MemoryImport, host_side);
    let key = 0x5eed_0000_0000_0077;
    let p = h.present(key).unwrap();
    let line = wait_line(&["WARN", &format!("{key:016x} cannot reach the DPU at {addr}")]);
    assert_eq!(line.len(), 1, "logged once: {line:?}");
    assert!(!p.is_connected());
    let cfg = Config { role: Role::Dpu, addr, keys: k.0.clone(), plaintext: false };
    let d = Link::new(cfg.clone()).unwrap();
    d.listen().unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while !d.is_present(key) {
        assert!(Instant::now() < until, "the presence never arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!wait_line(&["INFO", &format!("{key:016x} is present at {addr} again")]).is_empty());
    assert_eq!(lines_with(&[&format!("{key:016x} cannot reach the DPU")]).len(), 1, "still one line");
    // The listener goes away and comes back: the presence follows.
    drop(d);
    while p.is_connected() {
        assert!(Instant::now() < until, "the presence did not notice");
        std::thread::sleep(Duration::from_millis(20));
    }
    let d = Link::new(cfg).unwrap();
    d.listen().unwrap();
    while !d.is_present(key) {
        assert!(Instant::now() < until + Duration::from_secs(10), "the presence never came back");
        std::thread::sleep(Duration::from_millis(20));
    }
    let s = d.open(Kind::MemoryImport, Some(key), b"again").unwrap();
    let mut buf = Vec::new();
    assert_eq!(s.recv(&mut buf), Ok(true));
    assert_eq!(buf, b"host got again");
}

#[test]
fn nothing_listening_is_not_found_and_a_taken_address_is_in_use() {
    let k = KeyDir::new("nolisten");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let cfg = Config { role: Role::Dpu, addr, keys: k.0.clone(), plaintext: false };
    capture();
    let d = Link::new(cfg).unwrap();
    assert_eq!(d.listen(), Err(Error::InUse));
    assert_eq!(d.listen(), Err(Error::InUse), "remembered");
    assert_eq!(lines_with(&["ERROR", &format!("link: cannot listen on {addr}")]).len(), 1, "logged once");
    drop(taken);
    let h = host(addr, Some(&k.0));
    let t = Instant::now();
    assert_eq!(h.open(Kind::CcService, None, b"").unwrap_err(), Error::NotFound);
    eprintln!("nothing listening: NOT_FOUND after {:?}", t.elapsed());
    assert!(!lines_with(&["ERROR", &format!("link: nothing listens at {addr}")]).is_empty());
}

#[test]
fn keys_missing_or_open_to_others_are_refused_naming_the_file() {
    use std::os::unix::fs::PermissionsExt;
    capture();
    let k = KeyDir::new("perm");
    let key = k.0.join("dpu.key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let cfg =
        Config { role: Role::Dpu, addr: "127.0.0.1:0".parse().unwrap(), keys: k.0.clone(), plaintext: false };
    assert_eq!(Link::new(cfg.clone()).err(), Some(Error::NotPermitted));
    assert!(
        !lines_with(&["ERROR", &format!("private key {} is readable by others", key.display())]).is_empty()
    );
    std::fs::remove_file(k.0.join("host.pub")).unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(Link::new(cfg).err(), Some(Error::NotFound));
    assert!(!lines_with(&["ERROR", &format!("key file {} is missing", k.0.join("host.pub").display())])
        .is_empty());
}

/// A 64-byte round trip over loopback: the link (encrypted, plaintext) against a raw TCP
/// ping-pong. A measurement, not a test: `cargo test -p doca-link --test remote_link --
/// --ignored --nocapture measure`.
#[test]
#[ignore]
fn measure_round_trip_64_bytes() {
    const N: u32 = 20_000;
    let msg = [0x42u8; 64];
    let raw_tcp = || {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.set_nodelay(true).unwrap();
            let mut b = [0u8; 64];
            while s.read_exact(&mut b).is_ok() {
                s.write_all(&b).unwrap();
            }
        });
        let mut c = TcpStream::connect(a).unwrap();
        c.set_nodelay(true).unwrap();
        let mut b = [0u8; 64];
        let start = Instant::now();
        for _ in 0..N {
            c.write_all(&msg).unwrap();
            c.read_exact(&mut b).unwrap();
        }
        let rtt = start.elapsed() / N;
        drop(c);
        t.join().unwrap();
        rtt
    };
    let raw = raw_tcp();
    let k = KeyDir::new("measure");
    let mut results = vec![("raw TCP", raw)];
    for (name, keys) in [("link encrypted", Some(k.0.as_path())), ("link plaintext", None)] {
        let (d, addr) = dpu(keys);
        d.serve(Kind::CcService, echo);
        let h = host(addr, keys);
        let s = h.open(Kind::CcService, None, b"").unwrap();
        let mut buf = Vec::new();
        s.recv(&mut buf).unwrap();
        let start = Instant::now();
        for _ in 0..N {
            s.send(&msg).unwrap();
            s.recv(&mut buf).unwrap();
        }
        results.push((name, start.elapsed() / N));
        // Throughput: 1 MiB messages one way, echoed.
        let big = vec![7u8; MAX_MESSAGE];
        let start = Instant::now();
        for _ in 0..64 {
            s.send(&big).unwrap();
            s.recv(&mut buf).unwrap();
        }
        let mbps = 2.0 * 64.0 / start.elapsed().as_secs_f64();
        eprintln!("{name}: 1 MiB echoed: {mbps:.0} MiB/s (both directions counted)");
    }
    results.push(("raw TCP again", raw_tcp()));
    for (name, rtt) in results {
        eprintln!("{name}: 64 B round trip {rtt:?}");
    }
}
