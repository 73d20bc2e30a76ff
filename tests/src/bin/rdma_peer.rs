//! The other side of an RDMA connection, for the RDMA tests: a device, a progress engine, a
//! started RDMA context with one exported connection, and 64 KiB of exported shared memory.
//! Arguments: the context's permissions and the map's (`DOCA_ACCESS_FLAG_*` masks, decimal),
//! then optionally the connection manager instead of an exported connection: `listen:PORT`
//! (accepts every request) or `dial:IPV4:PORT` (its `conn` line is then `conn cm`).
//! It prints `conn <hex>` (its connection descriptor) and `mmap <hex>` (the map's RDMA export
//! descriptor), then one answer line per stdin line, progressing its engine between lines:
//!
//! - `connect <hex>`: `doca_rdma_connect` with the test's descriptor → `ok` / `err <code>`
//! - `recv <n>`: posts `n` receive tasks of 256 bytes each → `ok`
//! - `wait_recv`: progresses until the oldest posted receive completes →
//!   `received <len> <imm> <opcode> <hex>` or `err <code>` (at most 20 s: `err TIME_OUT`)
//! - `send <text>` / `send_imm <imm> <text>`: sends and waits for the completion → `ok` / `err <code>`
//! - `hex <offset> <len>`: the exported memory's bytes → `hex <hex>`
//! - `fill <offset> <text>`: writes the exported memory → `ok`
//! - `import <hex>`: creates a map from the peer's RDMA export descriptor → `ok` / `err <code>`
//! - `write <offset> <text>`: an RDMA write of `text` into the imported map at `offset`,
//!   waited for → `ok` / `err <code>`
//! - `read <offset> <len>`: an RDMA read of the imported map, waited for → `hex <hex>` / `err <code>`
//! - `post_send <text>`: submits a send without waiting → `ok` / `err <code>`; `wait_send`
//!   waits for the oldest send's completion → `ok` / `err <code>`
//! - `wait_established`: progresses until the connection manager's connection is up →
//!   `established` / `failure` (at most 20 s: `err TIME_OUT`)
//! - `cpu_add <offset> <n>`: starts a thread making `n` CPU fetch-and-adds of 1 on the
//!   exported memory's 8 bytes at `offset` → `ok`; `cpu_join` waits for it → `ok`
//! - `state`: the context's state → `state <Running|Stopping|Idle|...>`
//! - `stop`: stops the context (a goodbye to the peer) → `ok`

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::BufRead;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use doca_buf::Inventory;
use doca_core::{open_device_with_pci, Data, Error, Pe};
use doca_mmap::{AccessFlags, Mmap, SharedMem};
use doca_rdma::cm::{Addr, AddrType};
use doca_rdma::{Connection, Rdma, ReadTask, ReceiveTask, SendImmTask, SendTask, WriteTask};
use doca_tests::{from_hex, to_hex};

type Seen = Rc<RefCell<VecDeque<Result<String, Error>>>>;

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .init();
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let (ctx_perms, map_perms): (u32, u32) =
        (argv[0].parse().expect("a mask"), argv[1].parse().expect("a mask"));
    let cm_mode = argv.get(2).cloned();
    let dev = open_device_with_pci("03:00.0", None).expect("device");
    let pe = Pe::create().expect("pe");
    let rdma = Rc::new(Rdma::create(&dev).expect("rdma"));
    // The connection manager's connection, once established ("established"/"failure" events).
    let cm_conn: Rc<RefCell<Option<Connection>>> = Rc::default();
    let cm_events: Seen = Rc::default();
    if cm_mode.is_some() {
        let me = Rc::downgrade(&rdma);
        let (c1, e1, e2, e3) = (cm_conn.clone(), cm_events.clone(), cm_events.clone(), cm_events.clone());
        rdma.set_connection_state_callbacks(
            move |c, _| {
                if let Some(r) = me.upgrade() {
                    let _ = r.connection_accept(c, &[]);
                }
            },
            move |c, _, _| {
                *c1.borrow_mut() = Some(c);
                e1.borrow_mut().push_back(Ok("established".into()));
            },
            move |_, _, _| e2.borrow_mut().push_back(Ok("failure".into())),
            move |_, _, _| e3.borrow_mut().push_back(Ok("disconnected".into())),
        )
        .unwrap();
    }
    rdma.set_permissions(ctx_perms).expect("permissions");
    let received: Seen = Rc::default();
    let sent: Seen = Rc::default();
    let (r1, r2, s1, s2, s3, s4) =
        (received.clone(), received.clone(), sent.clone(), sent.clone(), sent.clone(), sent.clone());
    rdma.task_receive_set_conf(
        move |t: ReceiveTask, _, _| {
            let b = t.dst().unwrap();
            let bytes = b.data_to_vec().unwrap();
            let opcode = t.result_opcode().map_or(9, |o| o as u32);
            r1.borrow_mut().push_back(Ok(format!(
                "received {} {} {opcode} {}",
                t.result_len(),
                t.result_immediate_data(),
                to_hex(&bytes)
            )));
            let _ = b.dec_refcount();
        },
        move |t: ReceiveTask, _, _| {
            r2.borrow_mut().push_back(Err(t.status().unwrap_err()));
            let _ = t.dst().unwrap().dec_refcount();
        },
        64,
    )
    .unwrap();
    rdma.task_send_set_conf(
        move |_: SendTask, _, _| s1.borrow_mut().push_back(Ok("ok".into())),
        move |t: SendTask, _, _| s2.borrow_mut().push_back(Err(t.status().unwrap_err())),
        8,
    )
    .unwrap();
    rdma.task_send_imm_set_conf(
        move |_: SendImmTask, _, _| s3.borrow_mut().push_back(Ok("ok".into())),
        move |t: SendImmTask, _, _| s4.borrow_mut().push_back(Err(t.status().unwrap_err())),
        8,
    )
    .unwrap();
    let oneway: Seen = Rc::default();
    let (o1, o2, o3, o4) = (oneway.clone(), oneway.clone(), oneway.clone(), oneway.clone());
    rdma.task_write_set_conf(
        move |_: WriteTask, _, _| o1.borrow_mut().push_back(Ok("ok".into())),
        move |t: WriteTask, _, _| o2.borrow_mut().push_back(Err(t.status().unwrap_err())),
        8,
    )
    .unwrap();
    rdma.task_read_set_conf(
        move |t: ReadTask, _, _| {
            let bytes = t.dst().unwrap().data_to_vec().unwrap();
            o3.borrow_mut().push_back(Ok(format!("hex {}", to_hex(&bytes))))
        },
        move |t: ReadTask, _, _| o4.borrow_mut().push_back(Err(t.status().unwrap_err())),
        8,
    )
    .unwrap();
    pe.connect_ctx(&rdma.as_ctx()).unwrap();
    rdma.as_ctx().start().unwrap();
    let mut imported: Option<Mmap> = None;

    let mem = SharedMem::alloc(1 << 16).unwrap();
    let map = Mmap::create().unwrap();
    map.set_memrange(mem).unwrap();
    map.set_permissions_mask(map_perms).unwrap();
    map.add_dev(&dev).unwrap();
    map.start().unwrap();
    let local = Mmap::create().unwrap();
    local.set_memrange(vec![0u8; 1 << 16]).unwrap();
    local.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
    local.add_dev(&dev).unwrap();
    local.start().unwrap();
    let inv = Inventory::create(256).unwrap();
    inv.start().unwrap();

    let mut exported = None;
    match cm_mode.as_deref().map(|m| m.split_once(':').unwrap_or((m, ""))) {
        None => {
            let (desc, conn) = rdma.export().unwrap();
            exported = Some(conn);
            println!("conn {}", to_hex(&desc));
        }
        Some(("listen", port)) => {
            rdma.start_listen_to_port(port.parse().unwrap()).unwrap();
            println!("conn cm");
        }
        Some(("dial", at)) => {
            let (ip, port) = at.rsplit_once(':').unwrap();
            let addr = Addr::create(AddrType::Ipv4, ip, port.parse().unwrap()).unwrap();
            rdma.connect_to_addr(&addr, Data::NONE).unwrap();
            println!("conn cm");
        }
        Some((m, _)) => panic!("unknown mode {m}"),
    }
    let conn_of = || exported.or(*cm_conn.borrow()).expect("a connection");
    println!(
        "mmap {}",
        map.export_rdma(&dev).map(|d| to_hex(&d)).unwrap_or_else(|e| format!("err {}", e.name()))
    );

    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut next_slot = 0usize;
    let mut adder: Option<std::thread::JoinHandle<()>> = None;
    let wait = |q: &Seen| -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(r) = q.borrow_mut().pop_front() {
                return match r {
                    Ok(s) => s,
                    Err(e) => format!("err {}", e.name()),
                };
            }
            doca_tests::idle(&pe);
        }
        "err TIME_OUT".into()
    };
    loop {
        let line = match rx.try_recv() {
            Ok(l) => l,
            Err(mpsc::TryRecvError::Empty) => {
                doca_tests::idle(&pe);
                continue;
            }
            Err(mpsc::TryRecvError::Disconnected) => break,
        };
        let (cmd, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
        let answer = match cmd {
            "wait_established" => wait(&cm_events),
            "connect" => match rdma.connect(&from_hex(rest).unwrap_or_default(), conn_of()) {
                Ok(()) => "ok".into(),
                Err(e) => format!("err {}", e.name()),
            },
            "recv" => {
                let n: usize = rest.parse().unwrap();
                for _ in 0..n {
                    let b = inv.buf_get_at(&local, (next_slot % 256) * 256, 256).unwrap();
                    next_slot += 1;
                    rdma.task_receive_alloc_init(Some(&b), Data::NONE)
                        .unwrap()
                        .submit()
                        .map_err(|r| r.error)
                        .unwrap();
                }
                "ok".into()
            }
            "wait_recv" => wait(&received),
            "send" | "send_imm" => {
                let (imm, text) = if cmd == "send_imm" {
                    let (i, t) = rest.split_once(' ').unwrap_or((rest, ""));
                    (Some(i.parse::<u32>().unwrap()), t)
                } else {
                    (None, rest)
                };
                let b = inv.buf_get_at(&local, (next_slot % 256) * 256, 256).unwrap();
                next_slot += 1;
                b.append(text.as_bytes()).unwrap();
                let r = match imm {
                    Some(i) => rdma
                        .task_send_imm_alloc_init(conn_of(), Some(&b), i, Data::NONE)
                        .and_then(|t| t.submit().map_err(|r| r.error)),
                    None => rdma
                        .task_send_alloc_init(conn_of(), Some(&b), Data::NONE)
                        .and_then(|t| t.submit().map_err(|r| r.error)),
                };
                match r {
                    Ok(()) => wait(&sent),
                    Err(e) => format!("err {}", e.name()),
                }
            }
            "import" => match Mmap::create_from_export(None, &from_hex(rest).unwrap_or_default(), &dev) {
                Ok(m) => {
                    imported = Some(m);
                    "ok".into()
                }
                Err(e) => format!("err {}", e.name()),
            },
            "write" | "read" => {
                let (o, arg) = rest.split_once(' ').unwrap();
                let o: usize = o.parse().unwrap();
                let remote = imported.as_ref().expect("import first");
                let base = remote.memrange().unwrap().0;
                let local_buf = inv.buf_get_at(&local, (next_slot % 256) * 256, 256).unwrap();
                next_slot += 1;
                let r = if cmd == "write" {
                    local_buf.append(arg.as_bytes()).unwrap();
                    let dst = inv.buf_get_by_addr(remote, base + o, arg.len()).unwrap();
                    rdma.task_write_alloc_init(conn_of(), Some(&local_buf), Some(&dst), Data::NONE)
                        .and_then(|t| t.submit().map_err(|r| r.error))
                } else {
                    let src = inv.buf_get_by_data(remote, base + o, arg.parse().unwrap()).unwrap();
                    rdma.task_read_alloc_init(conn_of(), Some(&src), Some(&local_buf), Data::NONE)
                        .and_then(|t| t.submit().map_err(|r| r.error))
                };
                match r {
                    Ok(()) => wait(&oneway),
                    Err(e) => format!("err {}", e.name()),
                }
            }
            "post_send" => {
                let b = inv.buf_get_at(&local, (next_slot % 256) * 256, 256).unwrap();
                next_slot += 1;
                b.append(rest.as_bytes()).unwrap();
                match rdma
                    .task_send_alloc_init(conn_of(), Some(&b), Data::NONE)
                    .and_then(|t| t.submit().map_err(|r| r.error))
                {
                    Ok(()) => "ok".into(),
                    Err(e) => format!("err {}", e.name()),
                }
            }
            "wait_send" => wait(&sent),
            "hex" => {
                let (o, l) = rest.split_once(' ').unwrap();
                let (o, l): (usize, usize) = (o.parse().unwrap(), l.parse().unwrap());
                let mut v = vec![0u8; l];
                map.access().unwrap().read(o, &mut v).unwrap();
                format!("hex {}", to_hex(&v))
            }
            "fill" => {
                let (o, t) = rest.split_once(' ').unwrap();
                map.access().unwrap().write(o.parse().unwrap(), t.as_bytes()).unwrap();
                "ok".into()
            }
            "cpu_add" => {
                let (o, n) = rest.split_once(' ').unwrap();
                let (o, n): (usize, u64) = (o.parse().unwrap(), n.parse().unwrap());
                let a = map.access().unwrap();
                adder = Some(std::thread::spawn(move || {
                    for _ in 0..n {
                        a.atomic_fetch_add_u64(o, 1).unwrap();
                    }
                }));
                "ok".into()
            }
            "cpu_join" => match adder.take().map(|t| t.join()) {
                Some(Ok(())) => "ok".into(),
                _ => "err BAD_STATE".into(),
            },
            "state" => format!("state {:?}", rdma.as_ctx().state()),
            "stop" => {
                let _ = rdma.as_ctx().stop();
                for _ in 0..1000 {
                    if rdma.as_ctx().state() == doca_core::CtxState::Idle {
                        break;
                    }
                    doca_tests::idle(&pe);
                }
                "ok".into()
            }
            _ => format!("err unknown command {cmd}"),
        };
        println!("{answer}");
    }
    let _ = rdma.as_ctx().stop();
    for _ in 0..1000 {
        if rdma.as_ctx().state() == doca_core::CtxState::Idle {
            break;
        }
        doca_tests::idle(&pe);
    }
}
