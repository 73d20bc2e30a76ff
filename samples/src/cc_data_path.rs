//! The `cc_data_path_high_speed` sample pair, step for step as DOCA's: over the control path
//! the client asks to start, then each side sends its text through a producer into the
//! other side's consumer, and the client asks to stop.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use doca_buf::Inventory;
use doca_cc::{Client, Connection, Consumer, PostRecvTask, Producer, ProducerSendTask, SendTask, Server};
use doca_core::{CtxState, Data, Dev, Error, Pe};
use doca_mmap::{AccessFlags, Memory, Mmap, SharedMem};
use tracing::{error, info};

use crate::cc_ctrl_path::{CC_MAX_MSG_SIZE, CC_REC_QUEUE_SIZE, SLEEP};
use doca_common::{open_device, open_device_and_rep, submit_retrying};

/// The server name both sides use.
pub const SERVER_NAME: &str = "cc_data_path_sample_server";
/// `TASK_NUM`: tasks per producer and consumer.
pub const TASK_NUM: u32 = 2;
/// The consumer's receive memory (`MAX_MSG_SIZE` of the data-path sample).
pub const RECV_MEM_SIZE: usize = 1 << 20;
/// Control message that opens the test.
pub const START_MSG: &str = "start_data_path_test";
/// Control message that closes it.
pub const STOP_MSG: &str = "stop_data_path_test";

/// What both sides track.
struct Shared {
    conn: RefCell<Option<Connection>>,
    remote_consumer_id: Cell<u32>,
    started: Cell<bool>,
    stopped: Cell<bool>,
    finish: Cell<bool>,
    result: Cell<Result<(), Error>>,
}

impl Shared {
    fn new() -> Rc<Shared> {
        Rc::new(Shared {
            conn: RefCell::new(None),
            remote_consumer_id: Cell::new(0),
            started: Cell::new(false),
            stopped: Cell::new(false),
            finish: Cell::new(false),
            result: Cell::new(Ok(())),
        })
    }
}

fn idle_sleep(any: bool) {
    if !any {
        std::thread::sleep(SLEEP);
    }
}

/// A one-buffer map and inventory over `memory` (the samples' `init_local_mem_bufs`).
fn local_mem(dev: &Dev, memory: Memory) -> Result<(Inventory, Mmap), Error> {
    let inv = Inventory::create(1).inspect_err(|e| error!("Unable to create buffer inventory: {e}"))?;
    inv.start().inspect_err(|e| error!("Unable to start buffer inventory: {e}"))?;
    let mmap = Mmap::create().inspect_err(|e| error!("Unable to create mmap: {e}"))?;
    mmap.add_dev(dev).inspect_err(|e| error!("Unable to add device to mmap: {e}"))?;
    mmap.set_permissions(AccessFlags::PCI_READ_WRITE)
        .inspect_err(|e| error!("Failed setting permissions: {e}"))?;
    mmap.set_memrange(memory).inspect_err(|e| error!("Failed setting memrange: {e}"))?;
    mmap.start().inspect_err(|e| error!("Failed to start mmap: {e}"))?;
    Ok((inv, mmap))
}

/// What both samples do when their one producer or consumer task is done: return the buffer
/// to its inventory, free the task, stop the context (so it goes straight to Idle).
fn end_task<T>(task: T, buf: doca_buf::Buf, ctx: doca_core::Ctx) {
    let _ = buf.dec_refcount();
    drop(task);
    let _ = ctx.stop();
}

macro_rules! end_task_of {
    ($task:expr) => {{
        let (buf, ctx) = ($task.buf(), $task.as_task().ctx());
        end_task($task, buf, ctx)
    }};
}

/// `send_msg`: waits for the peer's consumer, then sends `text` through a producer.
fn send_msg(conn_pe: &Pe, st: &Shared, dev: &Dev, text: &'static [u8]) -> Result<(), Error> {
    while st.remote_consumer_id.get() == 0 {
        if st.conn.borrow().as_ref().is_some_and(|c| !c.is_connected()) {
            error!("The connection closed before the peer's consumer appeared");
            return Err(Error::NotConnected);
        }
        idle_sleep(conn_pe.progress());
    }
    let (inv, mmap) = local_mem(dev, Memory::from(text))?;
    let conn = st.conn.borrow().clone().ok_or(Error::BadState)?;
    let pe = Pe::create().inspect_err(|e| error!("Failed to create producer pe: {e}"))?;
    let producer =
        Rc::new(Producer::create(&conn).inspect_err(|e| error!("Failed to create producer: {e}"))?);
    let ctx = producer.as_ctx();
    pe.connect_ctx(&ctx)?;
    let finish = Rc::new(Cell::new(false));
    let result: Rc<Cell<Result<(), Error>>> = Rc::new(Cell::new(Ok(())));
    let (f, weak, consumer_id) = (finish.clone(), Rc::downgrade(&producer), st.remote_consumer_id.get());
    let (inv2, r0) = (Rc::new(inv), result.clone());
    let (inv_cb, map_cb) = (inv2.clone(), Rc::new(mmap));
    let map_for_cb = map_cb.clone();
    // ANCHOR: producer_running
    ctx.set_state_changed_cb(move |_, ctx, _, next| match next {
        CtxState::Running => {
            let Some(producer) = weak.upgrade() else { return };
            let sent = inv_cb
                .buf_get_data_at(&map_for_cb, 0, text.len())
                .and_then(|buf| producer.task_send_alloc_init(&buf, consumer_id))
                // The sample's `while (result == DOCA_ERROR_AGAIN)` submit loop.
                .and_then(|task| submit_retrying(task, Duration::MAX).map_err(|r| r.error));
            if let Err(e) = sent {
                error!("Failed to send through the producer: {e}");
                r0.set(Err(e));
                let _ = ctx.stop();
            }
        }
        CtxState::Idle => f.set(true),
        // ANCHOR_END: producer_running
        _ => {}
    })?;
    let (r1, r2) = (result.clone(), result.clone());
    producer.task_send_set_conf(
        move |task: ProducerSendTask, _, _| {
            info!("Producer task sent successfully");
            r1.set(Ok(()));
            end_task_of!(task);
        },
        move |task: ProducerSendTask, _, _| {
            error!("Producer task failed: {:?}", task.status());
            r2.set(task.status());
            end_task_of!(task);
        },
        TASK_NUM,
    )?;
    ctx.start().inspect_err(|e| error!("Failed to start producer context: {e}"))?;
    // The connection's engine too, as the consumer's loop does: it is where a peer's death
    // is noticed, which fails the sends still waiting for the peer's buffers.
    while !finish.get() {
        let any = conn_pe.progress() | pe.progress();
        idle_sleep(any);
    }
    Rc::try_unwrap(producer).map_err(|_| Error::InUse)?.destroy().map_err(|r| r.error)?;
    pe.destroy().map_err(|r| r.error)?;
    drop(ctx);
    let mmap = Rc::try_unwrap(map_cb).map_err(|_| Error::InUse)?;
    mmap.destroy().map_err(|r| r.error)?;
    Rc::try_unwrap(inv2).map_err(|_| Error::InUse)?.destroy().map_err(|r| r.error)?;
    result.get()
}

/// `recv_msg`: a consumer over 1 MiB receives one message and prints it.
fn recv_msg(conn_pe: &Pe, st: &Shared, dev: &Dev) -> Result<(), Error> {
    // ANCHOR: consumer_create
    let (inv, mmap) = local_mem(dev, Memory::from(SharedMem::alloc(RECV_MEM_SIZE)?))?;
    let conn = st.conn.borrow().clone().ok_or(Error::BadState)?;
    let pe = Pe::create().inspect_err(|e| error!("Failed to create consumer pe: {e}"))?;
    let consumer =
        Rc::new(Consumer::create(&conn, &mmap).inspect_err(|e| error!("Failed to create consumer: {e}"))?);
    let ctx = consumer.as_ctx();
    pe.connect_ctx(&ctx)?;
    // ANCHOR_END: consumer_create
    let finish = Rc::new(Cell::new(false));
    let result: Rc<Cell<Result<(), Error>>> = Rc::new(Cell::new(Ok(())));
    let (f, weak, r0) = (finish.clone(), Rc::downgrade(&consumer), result.clone());
    let (inv, mmap) = (Rc::new(inv), Rc::new(mmap));
    let (inv_cb, map_cb) = (inv.clone(), mmap.clone());
    // ANCHOR: consumer_running
    ctx.set_state_changed_cb(move |_, ctx, _, next| match next {
        CtxState::Running => {
            let Some(consumer) = weak.upgrade() else { return };
            let posted = inv_cb
                .buf_get_at(&map_cb, 0, RECV_MEM_SIZE)
                .and_then(|buf| consumer.task_post_recv_alloc_init(&buf))
                .and_then(|task| task.submit().map_err(|r| r.error));
            if let Err(e) = posted {
                error!("Failed to post a receive buffer: {e}");
                r0.set(Err(e));
                let _ = ctx.stop();
            }
        }
        CtxState::Idle => f.set(true),
        // ANCHOR_END: consumer_running
        _ => {}
    })?;
    let (r1, r2) = (result.clone(), result.clone());
    consumer.task_post_recv_set_conf(
        move |task: PostRecvTask, _, _| {
            let buf = task.buf();
            match buf.data_to_vec() {
                Ok(data) => info!("Message received: '{}'", String::from_utf8_lossy(&data)),
                Err(e) => r1.set(Err(e)),
            }
            let ctx = task.as_task().ctx();
            end_task(task, buf, ctx);
        },
        move |task: PostRecvTask, _, _| {
            error!("Consumer task failed: {:?}", task.status());
            r2.set(task.status());
            end_task_of!(task);
        },
        TASK_NUM,
    )?;
    match ctx.start() {
        Err(Error::InProgress) => {}
        Ok(()) => return Err(Error::BadState),
        Err(e) => {
            error!("Failed to start consumer context: {e}");
            return Err(e);
        }
    }
    while !finish.get() {
        let any = conn_pe.progress() | pe.progress();
        idle_sleep(any);
    }
    Rc::try_unwrap(consumer).map_err(|_| Error::InUse)?.destroy().map_err(|r| r.error)?;
    pe.destroy().map_err(|r| r.error)?;
    drop(ctx);
    Rc::try_unwrap(mmap).map_err(|_| Error::InUse)?.destroy().map_err(|r| r.error)?;
    Rc::try_unwrap(inv).map_err(|_| Error::InUse)?.destroy().map_err(|r| r.error)?;
    result.get()
}

fn send_ctrl(
    st: &Shared,
    send: impl Fn(&Connection, &[u8]) -> Result<SendTask, Error>,
    msg: &str,
) -> Result<(), Error> {
    let conn = st.conn.borrow().clone().ok_or(Error::BadState)?;
    send(&conn, msg.as_bytes())?.submit().map_err(|r| r.error)
}

fn leak(text: &str) -> &'static [u8] {
    // The producer's memory is the text itself, as in DOCA's sample; it lives to the end.
    Box::leak(text.as_bytes()[..text.len().min(RECV_MEM_SIZE)].to_vec().into_boxed_slice())
}

/// The server side (`cc_data_path_high_speed_server_sample.c`).
pub fn run_server(pci_addr: &str, rep_pci: &str, text: &str) -> Result<(), Error> {
    let (dev, rep) = open_device_and_rep(pci_addr, rep_pci)?;
    let pe = Pe::create()?;
    let server = Rc::new(
        Server::create(&dev, &rep, SERVER_NAME)
            .inspect_err(|e| error!("Failed to create server with error = {e}"))?,
    );
    let ctx = server.as_ctx();
    pe.connect_ctx(&ctx)?;
    let st = Shared::new();
    let s = st.clone();
    ctx.set_state_changed_cb(move |_, _, _, next| {
        if next == CtxState::Idle {
            info!("CC server context has been stopped");
            s.finish.set(true);
        }
    })?;
    let (s1, s2) = (st.clone(), st.clone());
    server.task_send_set_conf(
        move |_, _, _| s1.result.set(Ok(())),
        move |t, _, _| {
            error!("Message failed to send with error = {:?}", t.status());
            s2.result.set(t.status());
        },
        TASK_NUM * 4,
    )?;
    let s = st.clone();
    server.event_msg_recv_register(move |msg, conn: &Connection| {
        info!("Received message: '{}'", String::from_utf8_lossy(msg));
        s.conn.replace(Some(conn.clone()));
        let Ok(server) = conn.server() else { return };
        if msg == START_MSG.as_bytes() || msg == STOP_MSG.as_bytes() {
            if let Ok(task) = server.task_send_alloc_init(conn, msg) {
                let _ = task.submit();
            }
            if msg == START_MSG.as_bytes() {
                s.started.set(true);
            } else {
                s.stopped.set(true);
                let _ = server.as_ctx().stop();
            }
        }
    })?;
    let s = st.clone();
    server.event_connection_register(
        move |conn, ok| {
            if ok {
                info!("New client connected to server");
                s.conn.replace(Some(conn.clone()));
            } else {
                error!("Failed connection received");
            }
        },
        |_, _| info!("A client has been disconnected from server"),
    )?;
    // ANCHOR: consumer_event
    let s = st.clone();
    server.event_consumer_register(
        move |_, id| {
            info!("Got a new remote consumer with ID = [{id}]");
            s.remote_consumer_id.set(id);
        },
        |_, _| {},
    )?;
    // ANCHOR_END: consumer_event
    server.set_max_msg_size(CC_MAX_MSG_SIZE)?;
    server.set_recv_queue_size(CC_REC_QUEUE_SIZE)?;
    ctx.set_user_data(Data::from_ptr(Rc::as_ptr(&st)));
    ctx.start().inspect_err(|e| error!("Failed to start server context with error = {e}"))?;

    while !st.started.get() {
        idle_sleep(pe.progress());
    }
    recv_msg(&pe, &st, &dev)?;
    send_msg(&pe, &st, &dev, leak(text))?;
    while !st.finish.get() {
        idle_sleep(pe.progress());
    }
    drop(ctx);
    Rc::try_unwrap(server).map_err(|_| Error::InUse)?.destroy().map_err(|r| r.error)?;
    pe.destroy().map_err(|r| r.error)?;
    st.result.get()
}

/// The client side (`cc_data_path_high_speed_client_sample.c`).
pub fn run_client(pci_addr: &str, text: &str) -> Result<(), Error> {
    let dev = open_device(pci_addr)?;
    let pe = Pe::create()?;
    let client = Rc::new(
        Client::create(&dev, SERVER_NAME)
            .inspect_err(|e| error!("Failed to create client with error = {e}"))?,
    );
    let ctx = client.as_ctx();
    pe.connect_ctx(&ctx)?;
    let st = Shared::new();
    let (s, weak) = (st.clone(), Rc::downgrade(&client));
    ctx.set_state_changed_cb(move |_, _, _, next| match next {
        CtxState::Starting => {
            info!("CC client context entered into starting state. Waiting for connection establishment")
        }
        CtxState::Running => {
            if let Some(c) = weak.upgrade() {
                s.conn.replace(c.get_connection().ok());
            }
        }
        CtxState::Idle => {
            info!("CC client context has been stopped");
            s.finish.set(true);
        }
        CtxState::Stopping => {}
    })?;
    let (s1, s2) = (st.clone(), st.clone());
    client.task_send_set_conf(
        move |_, _, _| s1.result.set(Ok(())),
        move |t, _, _| {
            error!("Message failed to send with error = {:?}", t.status());
            s2.result.set(t.status());
        },
        TASK_NUM * 4,
    )?;
    let s = st.clone();
    client.event_msg_recv_register(move |msg, conn: &Connection| {
        info!("Received message: '{}'", String::from_utf8_lossy(msg));
        if msg == START_MSG.as_bytes() {
            s.started.set(true);
        } else if msg == STOP_MSG.as_bytes() {
            s.stopped.set(true);
            if let Ok(c) = conn.client() {
                let _ = c.as_ctx().stop();
            }
        }
    })?;
    let s = st.clone();
    client.event_consumer_register(
        move |_, id| {
            info!("Got a new remote consumer with ID = [{id}]");
            s.remote_consumer_id.set(id);
        },
        |_, _| {},
    )?;
    client.set_max_msg_size(CC_MAX_MSG_SIZE)?;
    client.set_recv_queue_size(CC_REC_QUEUE_SIZE)?;
    ctx.set_user_data(Data::from_ptr(Rc::as_ptr(&st)));
    match ctx.start() {
        Err(Error::InProgress) => {}
        other => {
            error!("Failed to start client context: {other:?}");
            return Err(other.err().unwrap_or(Error::BadState));
        }
    }
    while st.conn.borrow().is_none() {
        if st.finish.get() {
            error!("The client stopped before connecting");
            return Err(Error::NotConnected);
        }
        idle_sleep(pe.progress());
    }
    let sender = |c: &Connection, m: &[u8]| client.task_send_alloc_init(c, m);
    send_ctrl(&st, sender, START_MSG)?;
    while !st.started.get() {
        idle_sleep(pe.progress());
    }
    send_msg(&pe, &st, &dev, leak(text))?;
    recv_msg(&pe, &st, &dev)?;
    send_ctrl(&st, sender, STOP_MSG)?;
    while !st.finish.get() {
        idle_sleep(pe.progress());
    }
    drop(ctx);
    Rc::try_unwrap(client).map_err(|_| Error::InUse)?.destroy().map_err(|r| r.error)?;
    pe.destroy().map_err(|r| r.error)?;
    st.result.get()
}
