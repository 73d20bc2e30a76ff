//! The status page's object rows as `doca_emu` reads them, on a page this test attaches
//! itself (no file is made): connection rows give way to the rows other objects need, and an
//! engine library context (core's queue kit) shows its state and counts its tasks.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Mutex, OnceLock};

use doca_core::queue::{Engine, EngineTask, Fifo, LibCtx, Sizes, Step};
use doca_core::status::{
    attach, Entry, EntryView, Identity, Page, Snapshot, ENTRIES, RESERVED_ROWS, ROLE_CONNECTION,
    ROLE_ENGINE_CTX, ROLE_OBJECT, W_CONNS_UNSHOWN, W_ENTRIES_UNSHOWN,
};
use doca_core::{Data, Pe, Result, Task, TaskId, TaskPayload, TaskPool};

/// The page of this process, attached once; the tests take turns on it.
fn page() -> &'static Page {
    static PAGE: OnceLock<&'static Page> = OnceLock::new();
    PAGE.get_or_init(|| {
        let p: &'static Page = Box::leak(Box::new(Page::new()));
        assert!(attach(p, 1), "nothing attached a page before this test");
        p
    })
}

static TURN: Mutex<()> = Mutex::new(());

fn snapshot() -> Snapshot {
    let bytes: Vec<u8> = page().0.iter().flat_map(|w| w.load(Relaxed).to_le_bytes()).collect();
    Snapshot::parse(&bytes, Some(&bytes)).expect("our own page parses")
}

fn word(i: usize) -> u64 {
    page().0[i].load(Relaxed)
}

fn id<'a>(kind: &'a str, name: &'a str, conn_id: u64) -> Identity<'a> {
    Identity { kind, dev: "03:00.0".parse().ok(), rep: None, name, conn_id }
}

#[test]
fn connections_never_take_the_last_reserved_rows_and_are_counted_while_they_last() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    page();
    let base = snapshot().entries.len();
    let server = Entry::claim(id("cc_server", "svc", 0));
    // Connections take rows while more than RESERVED_ROWS stay free, then go unshown.
    let free = ENTRIES - base - 1;
    let conns: Vec<Entry> = (1..=free as u64 + 3)
        .map(|n| {
            let e = Entry::claim_connection(id("cc_conn", "svc", n), &server);
            e.set_peer_pid(4000 + n as i32);
            e.set_connection_up(true);
            e
        })
        .collect();
    let shown = conns.iter().filter(|c| c.is_shown()).count();
    assert_eq!(shown, free - RESERVED_ROWS);
    let unshown = conns.len() - shown;
    assert_eq!(word(W_CONNS_UNSHOWN), unshown as u64);
    let s = snapshot();
    assert_eq!(s.unshown_conns, unshown as u64);
    let rows: Vec<&EntryView> = s.entries.iter().filter(|o| o.role == ROLE_CONNECTION).collect();
    assert_eq!(rows.len(), shown);
    let first = rows.iter().find(|o| o.conn_id == 1).expect("connection #1 has a row");
    assert_eq!((first.kind.as_str(), first.name.as_str()), ("cc_conn", "svc"));
    assert_eq!((first.peer_pid, first.ctx_state), (4001, Some("connected")));
    let srv = s.entries.iter().find(|o| o.kind == "cc_server").expect("the server's row");
    assert_eq!((srv.role, srv.parent), (ROLE_OBJECT, 0));
    assert!(rows.iter().all(|c| c.parent == srv.slot), "each connection names its server's row");

    // Counters go to the connection's own row.
    conns[0].sent(10);
    conns[0].sent(5);
    conns[0].received(7);
    conns[0].set_connection_up(false);
    let s = snapshot();
    let first = s.entries.iter().find(|o| o.role == ROLE_CONNECTION && o.conn_id == 1).unwrap();
    assert_eq!((first.sent, first.received, first.ctx_state), ((2, 15), (1, 7), Some("closing")));

    // The reserved rows are there for objects made after the connections.
    let unshown_objects = word(W_ENTRIES_UNSHOWN);
    let objects: Vec<Entry> = (0..RESERVED_ROWS).map(|_| Entry::claim(id("cc_client", "late", 0))).collect();
    assert!(objects.iter().all(Entry::is_shown), "every object made later has its row");
    assert_eq!(word(W_ENTRIES_UNSHOWN), unshown_objects);
    let one_more = Entry::claim(id("cc_client", "later", 0));
    assert!(!one_more.is_shown());
    assert_eq!(word(W_ENTRIES_UNSHOWN), unshown_objects + 1, "the page is full: counted");

    // A connection that goes frees its row (or its count); a new connection does not take
    // a freed row from the reserve.
    let mut conns = conns;
    conns.pop(); // unshown
    assert_eq!(word(W_CONNS_UNSHOWN), unshown as u64 - 1);
    conns.remove(0); // shown
    assert!(snapshot().entries.iter().all(|o| o.conn_id != 1), "connection #1's row is gone");
    let newcomer = Entry::claim_connection(id("cc_conn", "svc", 999), &server);
    assert!(!newcomer.is_shown(), "one row free is less than the reserve");
    drop((newcomer, conns, objects, one_more, server));
    assert_eq!(word(W_CONNS_UNSHOWN), 0);
    assert_eq!(snapshot().entries.len(), base);
}

#[derive(Default)]
struct Bytes {
    n: usize,
}

struct Ops {
    pool: TaskPool<Bytes>,
}

impl TaskPayload for Bytes {
    type Lib = Fifo<Ops>;
}

impl Engine for Ops {
    type Job = TaskId;
    const KIND: &'static str = "rows-test";
    const FAILED: &'static str = "a test task failed";

    fn start(&self) -> Result<Sizes> {
        self.pool.prepare(Bytes::default);
        Ok(Sizes { tasks: self.pool.capacity() as usize, bytes_per_pass: 100 })
    }

    fn step(&self, id: TaskId, _budget: usize) -> Step {
        Step::Done(self.pool.with_payload(id, |p| p.n).unwrap_or(0))
    }

    fn finish(&self, id: TaskId, status: Result<()>) {
        self.pool.finish(id, status);
    }

    fn device(&self) -> Option<doca_core::PciAddr> {
        "b1:00.0".parse().ok()
    }
}

impl EngineTask<Bytes> for Ops {
    fn pool(&self) -> &TaskPool<Bytes> {
        &self.pool
    }

    fn job(id: TaskId) -> TaskId {
        id
    }

    fn validate(&self, _id: TaskId) -> Result<()> {
        Ok(())
    }
}

#[test]
fn an_engine_library_context_shows_its_state_its_queue_and_its_work() -> Result<()> {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    page();
    let row = || snapshot().entries.into_iter().find(|o| o.kind == "rows-test").expect("the context's row");
    let lib = LibCtx::new(|weak| Ops { pool: TaskPool::new(weak.clone()) });
    let r = row();
    assert_eq!((r.role, r.ctx_state, r.engine), (ROLE_ENGINE_CTX, Some("idle"), 0));
    assert_eq!(r.dev, "b1:00.0".parse().ok());
    lib.set_conf(|_: Task<Bytes>, _, _| {}, |_: Task<Bytes>, _, _| {}, 8, 8)?;
    let pe = Pe::create()?;
    pe.connect_ctx(&lib.as_ctx())?;
    lib.as_ctx().start()?;
    let r = row();
    assert_eq!(r.ctx_state, Some("running"));
    assert_ne!(r.engine, 0, "its engine's number");
    for n in [10, 20, 30] {
        let t = lib.alloc(Data::NONE, |p: &mut Bytes| p.n = n)?;
        t.submit().map_err(|r| r.error)?;
    }
    assert_eq!(row().tasks, (0, 0, 0), "written by the pass, not by submit");
    while pe.progress() {}
    assert_eq!(row().tasks, (0, 3, 60));
    lib.as_ctx().stop()?;
    while pe.progress() {}
    assert_eq!(row().ctx_state, Some("idle"));
    lib.destroy().map_err(|r| r.error)?;
    assert!(snapshot().entries.iter().all(|o| o.kind != "rows-test"), "its row goes with it");
    Ok(())
}
