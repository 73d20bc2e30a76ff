//! DOCA RDMA across two processes: this test process and `rdma_peer`, each with an RDMA
//! context, connected by exchanging descriptors (as NVIDIA's samples do with files). Every
//! task kind, the permission rule, receiver-not-ready and a killed peer.

use std::cell::RefCell;
use std::rc::Rc;

use doca_buf::{Buf, Inventory};
use doca_core::{open_device_with_pci, CtxState, Data, Dev, Error, Pe};
use doca_mmap::{AccessFlags, Mmap};
use doca_rdma::{
    CmpSwpTask, Connection, FetchAddTask, Opcode, Rdma, ReadTask, ReceiveTask, SendImmTask, SendTask,
    WriteImmTask, WriteTask,
};
use doca_tests::{from_hex, to_hex, Peer};

const PEER: &str = env!("CARGO_BIN_EXE_rdma_peer");
const LOCAL_RW: u32 = 1;
const READ: u32 = 2;
const WRITE: u32 = 4;
const ATOMIC: u32 = 8;

/// A private fabric directory (0700) for this test binary.
fn fabric() {
    doca_tests::private_fabric();
}

type Log = Rc<RefCell<Vec<(&'static str, Result<(), Error>, u32, u32)>>>;

struct Side {
    dev: Dev,
    pe: Pe,
    rdma: Rdma,
    conn: Connection,
    log: Log,
    local: Mmap,
    inv: Inventory,
    peer: Peer,
    remote: Option<Mmap>,
}

macro_rules! conf {
    ($rdma:expr, $log:expr, $set:ident, $t:ty, $name:literal, $len:expr, $imm:expr) => {{
        let (a, b) = ($log.clone(), $log.clone());
        $rdma
            .$set(
                move |t: $t, _, _| a.borrow_mut().push(($name, Ok(()), $len(&t), $imm(&t))),
                move |t: $t, _, _| b.borrow_mut().push(($name, t.status(), 0, 0)),
                16,
            )
            .unwrap();
    }};
}

impl Side {
    /// This side (context permissions `perms`, RNR retries `rnr`) and a peer whose context
    /// grants `peer_ctx` and whose exported map grants `peer_map`; connected both ways.
    fn new(perms: u32, rnr: u8, peer_ctx: u32, peer_map: u32) -> Side {
        Side::new_with(perms, rnr, peer_ctx, peer_map, |_| {})
    }

    /// [`Side::new`] with more settings (`set`) before the start.
    fn new_with(perms: u32, rnr: u8, peer_ctx: u32, peer_map: u32, set: impl FnOnce(&Rdma)) -> Side {
        fabric();
        let dev = open_device_with_pci("03:00.0", None).unwrap();
        let pe = Pe::create().unwrap();
        let rdma = Rdma::create(&dev).unwrap();
        rdma.set_permissions(perms).unwrap();
        rdma.set_rnr_retry_count(rnr).unwrap();
        let log: Log = Rc::default();
        conf!(rdma, log, task_send_set_conf, SendTask, "send", |_: &_| 0u32, |_: &_| 0u32);
        conf!(rdma, log, task_send_imm_set_conf, SendImmTask, "send_imm", |_: &_| 0u32, |_: &_| 0u32);
        conf!(rdma, log, task_read_set_conf, ReadTask, "read", |t: &ReadTask| t.result_len(), |_: &_| 0u32);
        conf!(rdma, log, task_write_set_conf, WriteTask, "write", |_: &_| 0u32, |_: &_| 0u32);
        conf!(rdma, log, task_write_imm_set_conf, WriteImmTask, "write_imm", |_: &_| 0u32, |_: &_| 0u32);
        conf!(rdma, log, task_atomic_cmp_swp_set_conf, CmpSwpTask, "cas", |_: &_| 0u32, |_: &_| 0u32);
        conf!(rdma, log, task_atomic_fetch_add_set_conf, FetchAddTask, "fadd", |_: &_| 0u32, |_: &_| 0u32);
        conf!(
            rdma,
            log,
            task_receive_set_conf,
            ReceiveTask,
            "recv",
            |t: &ReceiveTask| t.result_len(),
            |t: &ReceiveTask| t.result_immediate_data()
        );
        set(&rdma);
        pe.connect_ctx(&rdma.as_ctx()).unwrap();
        rdma.as_ctx().start().unwrap();
        let mut peer = Peer::spawn(PEER, &[&peer_ctx.to_string(), &peer_map.to_string()]);
        let peer_desc = from_hex(peer.line().strip_prefix("conn ").unwrap()).unwrap();
        let mmap_line = peer.line();
        let (desc, conn) = rdma.export().unwrap();
        rdma.connect(&peer_desc, conn).unwrap();
        assert_eq!(peer.ask(&format!("connect {}", to_hex(&desc))), "ok");
        let remote = mmap_line
            .strip_prefix("mmap ")
            .and_then(from_hex)
            .map(|d| Mmap::create_from_export(None, &d, &dev).unwrap());
        let local = Mmap::create().unwrap();
        local.set_memrange(vec![0u8; 1 << 16]).unwrap();
        local.set_permissions(AccessFlags::LOCAL_READ_WRITE).unwrap();
        local.add_dev(&dev).unwrap();
        local.start().unwrap();
        let inv = Inventory::create(64).unwrap();
        inv.start().unwrap();
        Side { dev, pe, rdma, conn, log, local, inv, peer, remote }
    }

    fn data(&self, off: usize, bytes: &[u8]) -> Buf {
        let b = self.inv.buf_get_at(&self.local, off, 4096).unwrap();
        b.append(bytes).unwrap();
        b
    }

    fn room(&self, off: usize) -> Buf {
        self.inv.buf_get_at(&self.local, off, 4096).unwrap()
    }

    fn remote_at(&self, off: usize, len: usize) -> Buf {
        let r = self.remote.as_ref().expect("the peer exported its map");
        let (base, _) = r.memrange().unwrap();
        self.inv.buf_get_by_addr(r, base + off, len).unwrap()
    }

    /// Progresses until `n` completions are logged (bounded); returns them.
    fn wait(&self, n: usize) -> Vec<(&'static str, Result<(), Error>, u32, u32)> {
        for _ in 0..200_000 {
            if self.log.borrow().len() >= n {
                break;
            }
            doca_tests::idle(&self.pe);
        }
        let got: Vec<_> = self.log.borrow_mut().drain(..).collect();
        assert!(got.len() >= n, "only {got:?} of {n} completions");
        got
    }

    fn settle_idle(&self) {
        for _ in 0..1000 {
            if self.rdma.as_ctx().state() == CtxState::Idle {
                return;
            }
            doca_tests::idle(&self.pe);
        }
        panic!("the context did not reach Idle ({:?})", self.rdma.as_ctx().state());
    }
}

#[test]
fn send_and_receive_both_ways_with_length_immediate_and_order() {
    let mut s = Side::new(LOCAL_RW, 7, LOCAL_RW, LOCAL_RW | READ | WRITE);
    assert_eq!(s.peer.ask("recv 3"), "ok");
    s.rdma.task_send_alloc_init(s.conn, Some(&s.data(0, b"first")), Data::NONE).unwrap().submit().unwrap();
    s.rdma
        .task_send_imm_alloc_init(s.conn, Some(&s.data(4096, b"second")), 0xfeed, Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    s.rdma.task_send_alloc_init(s.conn, Some(&s.data(8192, b"")), Data::NONE).unwrap().submit().unwrap();
    let got = s.wait(3);
    assert!(got.iter().all(|(_, r, _, _)| r.is_ok()), "{got:?}");
    assert_eq!(
        s.peer.ask("wait_recv"),
        format!("received 5 0 {} {}", Opcode::RecvSend as u32, to_hex(b"first"))
    );
    assert_eq!(
        s.peer.ask("wait_recv"),
        format!("received 6 {} {} {}", 0xfeed, Opcode::RecvSendWithImm as u32, to_hex(b"second"))
    );
    assert_eq!(s.peer.ask("wait_recv"), format!("received 0 0 {} ", Opcode::RecvSend as u32));

    // The other way: a receive posted here gets the peer's message.
    let room = s.room(12288);
    s.rdma.task_receive_alloc_init(Some(&room), Data::NONE).unwrap().submit().unwrap();
    s.peer.send("send_imm 77 hello from the peer");
    let got = s.wait(1);
    assert_eq!(got, vec![("recv", Ok(()), 19, 77)]);
    assert_eq!(room.data_to_vec().unwrap(), b"hello from the peer");
    assert_eq!(s.peer.line(), "ok");
    assert!(s.peer.finish());
}

#[test]
fn write_read_and_atomics_on_the_peers_memory_without_its_application() {
    let mut s = Side::new(LOCAL_RW, 7, READ | WRITE | ATOMIC, LOCAL_RW | READ | WRITE | ATOMIC);
    // Write into the peer's memory at 100.
    s.rdma
        .task_write_alloc_init(
            s.conn,
            Some(&s.data(0, b"written by RDMA")),
            Some(&s.remote_at(100, 64)),
            Data::NONE,
        )
        .unwrap()
        .submit()
        .unwrap();
    assert_eq!(s.wait(1), vec![("write", Ok(()), 0, 0)]);
    assert_eq!(s.peer.ask("hex 100 15"), format!("hex {}", to_hex(b"written by RDMA")));
    // Read what the peer wrote itself.
    assert_eq!(s.peer.ask("fill 2000 the peer's bytes"), "ok");
    let into = s.room(4096);
    let from = s
        .inv
        .buf_get_by_data(
            s.remote.as_ref().unwrap(),
            s.remote.as_ref().unwrap().memrange().unwrap().0 + 2000,
            16,
        )
        .unwrap();
    s.rdma.task_read_alloc_init(s.conn, Some(&from), Some(&into), Data::NONE).unwrap().submit().unwrap();
    assert_eq!(s.wait(1), vec![("read", Ok(()), 16, 0)]);
    assert_eq!(&into.data_to_vec().unwrap()[..16], b"the peer's bytes");
    // Atomics on 8 aligned bytes at 4096: fetch-add twice, compare-and-swap (hit, miss).
    let target = s.remote_at(4096, 8);
    let r1 = s.room(8192);
    s.rdma
        .task_atomic_fetch_add_alloc_init(s.conn, Some(&target), Some(&r1), 5, Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    let r2 = s.room(12288);
    s.rdma
        .task_atomic_fetch_add_alloc_init(s.conn, Some(&target), Some(&r2), 7, Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    let r3 = s.room(16384);
    s.rdma
        .task_atomic_cmp_swp_alloc_init(s.conn, Some(&target), Some(&r3), 12, 1000, Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    let r4 = s.room(20480);
    s.rdma
        .task_atomic_cmp_swp_alloc_init(s.conn, Some(&target), Some(&r4), 12, 5, Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    assert!(s.wait(4).iter().all(|(_, r, _, _)| r.is_ok()));
    let old = |b: &Buf| u64::from_ne_bytes(b.data_to_vec().unwrap()[..8].try_into().unwrap());
    assert_eq!((old(&r1), old(&r2), old(&r3), old(&r4)), (0, 5, 12, 1000));
    assert_eq!(s.peer.ask("hex 4096 8"), format!("hex {}", to_hex(&1000u64.to_ne_bytes())));
    // Write with immediate: the bytes, then a receive of the peer completes with the
    // immediate and the written length.
    assert_eq!(s.peer.ask("recv 1"), "ok");
    s.rdma
        .task_write_imm_alloc_init(
            s.conn,
            Some(&s.data(24576, b"imm write")),
            Some(&s.remote_at(300, 64)),
            42,
            Data::NONE,
        )
        .unwrap()
        .submit()
        .unwrap();
    assert_eq!(s.wait(1), vec![("write_imm", Ok(()), 0, 0)]);
    assert_eq!(s.peer.ask("wait_recv"), format!("received 9 42 {} ", Opcode::RecvWriteWithImm as u32));
    assert_eq!(s.peer.ask("hex 300 9"), format!("hex {}", to_hex(b"imm write")));
    assert!(s.peer.finish());
}

#[test]
fn a_write_the_peer_does_not_grant_fails_and_flushes_the_rest() {
    // The peer's map allows RDMA writes, its context only reads.
    let s = Side::new(LOCAL_RW, 7, READ, LOCAL_RW | READ | WRITE);
    let w = s
        .rdma
        .task_write_alloc_init(s.conn, Some(&s.data(0, b"no")), Some(&s.remote_at(0, 8)), Data::NONE)
        .unwrap();
    let r = s
        .rdma
        .task_read_alloc_init(s.conn, Some(&s.remote_at(0, 8)), Some(&s.room(4096)), Data::NONE)
        .unwrap();
    w.submit().unwrap();
    r.submit().unwrap();
    let got = s.wait(2);
    // (Completions are delivered pool by pool: look them up by kind.)
    let of = |k: &str| got.iter().find(|g| g.0 == k).unwrap().1;
    assert_eq!(of("write"), Err(Error::NotPermitted), "{got:?}");
    assert_eq!(of("read"), Err(doca_rdma::FLUSH_STATUS));
    s.settle_idle();
    drop(s);

    // The map lacks RDMA_WRITE although the context grants it; and a read out of range is
    // refused by the import already.
    let s = Side::new(LOCAL_RW, 7, READ | WRITE, LOCAL_RW | READ);
    s.rdma
        .task_write_alloc_init(s.conn, Some(&s.data(0, b"no")), Some(&s.remote_at(0, 8)), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    assert_eq!(s.wait(1)[0].1, Err(Error::NotPermitted));
    let r = s.remote.as_ref().unwrap();
    assert!(s.inv.buf_get_by_addr(r, r.memrange().unwrap().0 + (1 << 16) - 4, 8).is_err());
    s.settle_idle();
}

#[test]
fn a_send_without_a_posted_receive_waits_then_fails_after_its_retries() {
    // Retries for ever (7): the send waits until the peer posts a receive.
    let mut s = Side::new(LOCAL_RW, 7, LOCAL_RW, LOCAL_RW | READ);
    s.rdma.task_send_alloc_init(s.conn, Some(&s.data(0, b"patience")), Data::NONE).unwrap().submit().unwrap();
    for _ in 0..50 {
        doca_tests::idle(&s.pe);
    }
    assert!(s.log.borrow().is_empty(), "the send completed with no receive posted");
    assert_eq!(s.peer.ask("recv 1"), "ok");
    assert_eq!(s.wait(1), vec![("send", Ok(()), 0, 0)]);
    assert_eq!(s.peer.ask("wait_recv"), format!("received 8 0 0 {}", to_hex(b"patience")));
    drop(s);

    // Two retries: the send fails with TIME_OUT, and the context stops.
    let mut s = Side::new(LOCAL_RW, 2, LOCAL_RW, LOCAL_RW | READ);
    s.rdma.task_send_alloc_init(s.conn, Some(&s.data(0, b"lost?")), Data::NONE).unwrap().submit().unwrap();
    assert_eq!(s.wait(1), vec![("send", Err(Error::TimeOut), 0, 0)]);
    s.settle_idle();
    // Not delivered later either: the peer's receive gets nothing.
    assert_eq!(s.peer.ask("recv 1"), "ok");
    assert_eq!(s.peer.ask("state"), "state Running");
}

#[test]
fn a_killed_peer_fails_the_waiting_tasks_and_a_stopped_one_disconnects_cleanly() {
    // A receive posted here, a send waiting for the peer's receive: the peer is killed.
    let s = Side::new(LOCAL_RW, 7, LOCAL_RW, LOCAL_RW | READ);
    s.rdma.task_receive_alloc_init(Some(&s.room(0)), Data::NONE).unwrap().submit().unwrap();
    s.rdma
        .task_send_alloc_init(s.conn, Some(&s.data(4096, b"to the dead")), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    for _ in 0..20 {
        doca_tests::idle(&s.pe);
    }
    let Side { peer, log, pe, rdma, .. } = s;
    peer.kill();
    let mut got = Vec::new();
    for _ in 0..100_000 {
        got.extend(log.borrow_mut().drain(..));
        if got.len() >= 2 {
            break;
        }
        doca_tests::idle(&pe);
    }
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got.iter().any(|(_, r, _, _)| *r == Err(Error::ConnectionReset)), "{got:?}");
    assert!(got.iter().all(|(_, r, _, _)| r.is_err()));
    for _ in 0..1000 {
        if rdma.as_ctx().state() == CtxState::Idle {
            break;
        }
        doca_tests::idle(&pe);
    }
    assert_eq!(rdma.as_ctx().state(), CtxState::Idle);

    // The peer stops its context: a goodbye, nothing fails here.
    let mut s = Side::new(LOCAL_RW, 7, LOCAL_RW, LOCAL_RW | READ);
    assert_eq!(s.peer.ask("stop"), "ok");
    for _ in 0..50 {
        doca_tests::idle(&s.pe);
    }
    assert_eq!(s.rdma.as_ctx().state(), CtxState::Running);
    assert_eq!(s.rdma.connection_state(s.conn).unwrap(), doca_rdma::ConnState::Disconnected);
    let _ = &s.dev;
}

/// `n` bytes of room at `off` of this side's memory.
fn room_of(s: &Side, off: usize, n: usize) -> Buf {
    s.inv.buf_get_at(&s.local, off, n).unwrap()
}

#[test]
fn buffer_lists_gather_and_scatter_within_their_limits() {
    let mut s = Side::new_with(LOCAL_RW, 7, LOCAL_RW | READ | WRITE, LOCAL_RW | READ | WRITE, |r| {
        assert_eq!(
            r.set_max_send_buf_list_len(17),
            Err(Error::InvalidValue),
            "beyond cap rdma.max_buf_list_len"
        );
        r.set_max_send_buf_list_len(3).unwrap();
        r.set_recv_buf_list_len(2).unwrap();
    });
    // A send gathered from three buffers: one message of the three data lengths.
    assert_eq!(s.peer.ask("recv 1"), "ok");
    let h = s.data(0, b"gathered ");
    h.chain_list(&s.data(4096, b"from three ")).unwrap();
    h.chain_list(&s.data(8192, b"buffers")).unwrap();
    s.rdma.task_send_alloc_init(s.conn, Some(&h), Data::NONE).unwrap().submit().unwrap();
    assert_eq!(s.wait(1), vec![("send", Ok(()), 0, 0)]);
    let msg = b"gathered from three buffers";
    assert_eq!(s.peer.ask("wait_recv"), format!("received {} 0 0 {}", msg.len(), to_hex(msg)));

    // A write gathered from two buffers into the peer's memory.
    let w = s.data(12288, b"two ");
    w.chain_list(&s.data(16384, b"pieces")).unwrap();
    s.rdma
        .task_write_alloc_init(s.conn, Some(&w), Some(&s.remote_at(100, 64)), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    assert_eq!(s.wait(1), vec![("write", Ok(()), 0, 0)]);
    assert_eq!(s.peer.ask("hex 100 10"), format!("hex {}", to_hex(b"two pieces")));

    // A read scattered into rooms of 6 and 64 bytes: each element's data grows.
    assert_eq!(s.peer.ask("fill 2000 the peer's bytes"), "ok");
    let (r1, r2) = (room_of(&s, 20480, 6), room_of(&s, 24576, 64));
    r1.chain_list(&r2).unwrap();
    let from = {
        let r = s.remote.as_ref().unwrap();
        s.inv.buf_get_by_data(r, r.memrange().unwrap().0 + 2000, 16).unwrap()
    };
    s.rdma.task_read_alloc_init(s.conn, Some(&from), Some(&r1), Data::NONE).unwrap().submit().unwrap();
    assert_eq!(s.wait(1), vec![("read", Ok(()), 16, 0)]);
    assert_eq!(r1.data_to_vec().unwrap(), b"the pe");
    assert_eq!(r2.data_to_vec().unwrap(), b"er's bytes");

    // A receive scattering into rooms of 4 and 64 bytes.
    let (q1, q2) = (room_of(&s, 28672, 4), room_of(&s, 32768, 64));
    q1.chain_list(&q2).unwrap();
    s.rdma.task_receive_alloc_init(Some(&q1), Data::NONE).unwrap().submit().unwrap();
    s.peer.send("send_imm 9 hello from the peer");
    assert_eq!(s.wait(1), vec![("recv", Ok(()), 19, 9)]);
    assert_eq!(s.peer.line(), "ok");
    assert_eq!(
        (q1.data_to_vec().unwrap(), q2.data_to_vec().unwrap()),
        (b"hell".to_vec(), b"o from the peer".to_vec())
    );

    // The peer's side of a one-sided operation is one buffer, not a list.
    let (d1, d2) = (s.remote_at(200, 8), s.remote_at(300, 8));
    d1.chain_list(&d2).unwrap();
    s.rdma
        .task_write_alloc_init(s.conn, Some(&s.data(36864, b"x")), Some(&d1), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    assert_eq!(s.wait(1), vec![("write", Err(Error::InvalidValue), 0, 0)]);
    s.settle_idle();
    assert!(s.peer.finish());
}

#[test]
fn a_list_longer_than_the_limit_fails_its_task() {
    // max_send_buf_list_len 2: a send of three buffers is INVALID_VALUE, fatal to the context.
    let s =
        Side::new_with(LOCAL_RW, 7, LOCAL_RW, LOCAL_RW | READ, |r| r.set_max_send_buf_list_len(2).unwrap());
    let h = s.data(0, b"a");
    h.chain_list(&s.data(4096, b"b")).unwrap();
    h.chain_list(&s.data(8192, b"c")).unwrap();
    s.rdma.task_send_alloc_init(s.conn, Some(&h), Data::NONE).unwrap().submit().unwrap();
    assert_eq!(s.wait(1), vec![("send", Err(Error::InvalidValue), 0, 0)]);
    s.settle_idle();
    drop(s);

    // A receive list of two when the receive list length is 1 (the default).
    let mut s = Side::new(LOCAL_RW, 7, LOCAL_RW, LOCAL_RW | READ);
    let q = room_of(&s, 0, 4);
    q.chain_list(&room_of(&s, 4096, 64)).unwrap();
    s.rdma.task_receive_alloc_init(Some(&q), Data::NONE).unwrap().submit().unwrap();
    s.peer.send("send_imm 1 too long for four bytes");
    assert_eq!(s.wait(1), vec![("recv", Err(Error::InvalidValue), 0, 0)]);
    s.settle_idle();
}

#[test]
fn remote_fetch_adds_and_the_peers_cpu_atomics_on_one_word_lose_nothing() {
    // The peer's memory is shared (SharedMem): a remote atomic is a CPU atomic on the word.
    let mut s = Side::new(LOCAL_RW, 7, ATOMIC, LOCAL_RW | READ | WRITE | ATOMIC);
    const CPU: u64 = 300_000;
    const REMOTE: usize = 4000;
    assert_eq!(s.peer.ask(&format!("cpu_add 512 {CPU}")), "ok");
    let target = s.remote_at(512, 8);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..REMOTE / 16 {
        let rooms: Vec<Buf> = (0..16).map(|i| room_of(&s, 8 * i, 8)).collect();
        for r in &rooms {
            s.rdma
                .task_atomic_fetch_add_alloc_init(s.conn, Some(&target), Some(r), 1 << 32, Data::NONE)
                .unwrap()
                .submit()
                .unwrap();
        }
        assert!(s.wait(16).iter().all(|(_, r, _, _)| r.is_ok()));
        for r in rooms {
            let old = u64::from_ne_bytes(r.data_to_vec().unwrap()[..8].try_into().unwrap());
            assert!(seen.insert(old >> 32), "two remote fetch-and-adds saw the same value");
            r.dec_refcount().unwrap();
        }
    }
    assert_eq!(s.peer.ask("cpu_join"), "ok");
    let want = (REMOTE as u64) << 32 | CPU;
    assert_eq!(s.peer.ask("hex 512 8"), format!("hex {}", to_hex(&want.to_ne_bytes())));
    let Side { peer, .. } = s;
    assert!(peer.finish());

    // Memory exported with RDMA_ATOMIC but not RDMA_WRITE takes atomics, not writes.
    let mut s = Side::new(LOCAL_RW, 7, WRITE | ATOMIC, LOCAL_RW | READ | ATOMIC);
    let r = room_of(&s, 0, 8);
    s.rdma
        .task_atomic_cmp_swp_alloc_init(s.conn, Some(&s.remote_at(64, 8)), Some(&r), 0, 99, Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    assert_eq!(s.wait(1), vec![("cas", Ok(()), 0, 0)]);
    assert_eq!(s.peer.ask("hex 64 8"), format!("hex {}", to_hex(&99u64.to_ne_bytes())));
    s.rdma
        .task_write_alloc_init(s.conn, Some(&s.data(4096, b"no")), Some(&s.remote_at(128, 8)), Data::NONE)
        .unwrap()
        .submit()
        .unwrap();
    assert_eq!(s.wait(1), vec![("write", Err(Error::NotPermitted), 0, 0)]);
    s.settle_idle();
    assert!(s.peer.finish());
}
