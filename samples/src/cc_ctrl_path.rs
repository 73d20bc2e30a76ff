//! The `cc_ctrl_path` sample pair, step for step as DOCA's: the client sends its text, the
//! server prints it and answers with its own, the client prints the answer, and both exit.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use doca_cc::{Client, Connection, SendTask, Server};
use doca_core::{CtxState, Data, Error, Pe};
use tracing::{error, info};

use doca_common::{open_device, open_device_and_rep};

/// `CC_MAX_MSG_SIZE`.
pub const CC_MAX_MSG_SIZE: u32 = 4080;
/// `CC_REC_QUEUE_SIZE`.
pub const CC_REC_QUEUE_SIZE: u32 = 10;
/// `CC_SEND_TASK_NUM`.
pub const CC_SEND_TASK_NUM: u32 = 1024;
/// The server name both sides use.
pub const SERVER_NAME: &str = "cc_ctrl_path_sample_server";
/// `SLEEP_IN_NANOS`: the pause when progress found nothing to do.
pub const SLEEP: Duration = Duration::from_micros(10);

/// The text the samples send: at most `CC_MAX_MSG_SIZE` bytes (`strnlen(text, 4080)`).
fn msg_of(text: &str) -> &[u8] {
    &text.as_bytes()[..text.len().min(CC_MAX_MSG_SIZE as usize)]
}

/// Progress until `done`, sleeping 10 µs whenever there was nothing to do.
fn run_until(pe: &Pe, done: &Cell<bool>) {
    while !done.get() {
        if !pe.progress() {
            std::thread::sleep(SLEEP);
        }
    }
}

/// The send error callback of both samples: record the status, free the task, stop.
fn send_failed(result: &Cell<Result<(), Error>>, task: SendTask) {
    let status = task.status();
    error!("Message failed to send with error = {}", status.err().map_or("", |e| e.name()));
    result.set(status);
    let ctx = task.as_task().ctx();
    drop(task);
    let _ = ctx.stop();
}

struct ServerState {
    finish: Cell<bool>,
    result: Cell<Result<(), Error>>,
    num_connected_clients: Cell<u32>,
    text: String,
}

/// The server side (`cc_ctrl_path_server_sample.c`): `pci_addr` is the DPU device,
/// `rep_pci` the host function to serve.
pub fn run_server(pci_addr: &str, rep_pci: &str, text: &str) -> Result<(), Error> {
    let (dev, rep) = open_device_and_rep(pci_addr, rep_pci)?;

    // ANCHOR: server_create
    let pe = Pe::create().inspect_err(|e| error!("Failed creating pe with error = {e}"))?;
    let server = Server::create(&dev, &rep, SERVER_NAME)
        .inspect_err(|e| error!("Failed to create server with error = {e}"))?;
    let ctx = server.as_ctx();
    pe.connect_ctx(&ctx).inspect_err(|e| error!("Failed adding pe context to server with error = {e}"))?;
    // ANCHOR_END: server_create

    let st = Rc::new(ServerState {
        finish: Cell::new(false),
        result: Cell::new(Ok(())),
        num_connected_clients: Cell::new(0),
        text: text.to_string(),
    });
    let s = st.clone();
    ctx.set_state_changed_cb(move |_, _, _prev, next| match next {
        CtxState::Idle => {
            info!("CC server context has been stopped");
            s.finish.set(true);
        }
        CtxState::Starting => error!("CC server context entered into starting state. Unexpected transition"),
        CtxState::Running => info!("CC server context is running. Waiting for clients to connect"),
        CtxState::Stopping => {
            info!("CC server context entered into stopping state. Terminating connections with clients")
        }
    })?;
    let (s1, s2) = (st.clone(), st.clone());
    server
        .task_send_set_conf(
            move |task: SendTask, _, _| {
                info!("Task sent successfully");
                s1.result.set(Ok(()));
                let ctx = task.as_task().ctx();
                drop(task);
                let _ = ctx.stop();
            },
            move |task: SendTask, _, _| send_failed(&s2.result, task),
            CC_SEND_TASK_NUM,
        )
        .inspect_err(|e| error!("Failed to configure server task pool with error = {e}"))?;
    let s = st.clone();
    // ANCHOR: server_msg
    server
        .event_msg_recv_register(move |msg, conn: &Connection| {
            info!("Message received: '{}'", String::from_utf8_lossy(msg));
            let Ok(server) = conn.server() else { return };
            let reply = msg_of(&s.text);
            match server.task_send_alloc_init(conn, reply) {
                Ok(task) => {
                    task.set_user_data(Data::from_u64(0));
                    if let Err(r) = task.submit() {
                        error!("Failed to submit send task with error = {}", r.error);
                        s.result.set(Err(r.error));
                        drop(r);
                        let _ = server.as_ctx().stop();
                    }
                }
                Err(e) => {
                    error!("Failed to allocate task with error = {e}");
                    s.result.set(Err(e));
                    let _ = server.as_ctx().stop();
                }
            }
        })
        .inspect_err(|e| error!("Failed adding message receive event with error = {e}"))?;
    // ANCHOR_END: server_msg
    let (s1, s2) = (st.clone(), st.clone());
    server
        .event_connection_register(
            move |_conn, ok| {
                if !ok {
                    error!("Failed connection received");
                    return;
                }
                s1.num_connected_clients.set(s1.num_connected_clients.get() + 1);
                info!("New client connected to server");
            },
            move |_conn, ok| {
                if !ok {
                    error!("Failed disconnection received");
                    return;
                }
                s2.num_connected_clients.set(s2.num_connected_clients.get().saturating_sub(1));
                info!("A client has been disconnected from server");
            },
        )
        .inspect_err(|e| error!("Failed adding connection event with error = {e}"))?;
    server
        .set_max_msg_size(CC_MAX_MSG_SIZE)
        .inspect_err(|e| error!("Failed to set msg size property with error = {e}"))?;
    server
        .set_recv_queue_size(CC_REC_QUEUE_SIZE)
        .inspect_err(|e| error!("Failed to set msg size property with error = {e}"))?;
    ctx.set_user_data(Data::from_ptr(Rc::as_ptr(&st)));
    // ANCHOR: server_start
    match ctx.start() {
        Ok(()) => {}
        Err(e) => {
            error!("Failed to start server context with error = {e}");
            return Err(e);
        }
    }

    run_until(&pe, &st.finish);
    // ANCHOR_END: server_start

    server.destroy().map_err(|r| r.error).inspect_err(|e| error!("Failed to destroy server: {e}"))?;
    pe.destroy().map_err(|r| r.error).inspect_err(|e| error!("Failed to destroy pe: {e}"))?;
    st.result.get()
}

struct ClientState {
    finish: Cell<bool>,
    result: Cell<Result<(), Error>>,
    /// The server's reply arrived (what the client is for).
    replied: Cell<bool>,
    text: String,
    client: RefCell<Option<std::rc::Weak<Client>>>,
}

/// The client side (`cc_ctrl_path_client_sample.c`): `pci_addr` is the host function.
pub fn run_client(pci_addr: &str, text: &str) -> Result<(), Error> {
    let dev = open_device(pci_addr)?;
    let pe = Pe::create().inspect_err(|e| error!("Failed creating pe with error = {e}"))?;
    let client = Rc::new(
        Client::create(&dev, SERVER_NAME)
            .inspect_err(|e| error!("Failed to create client with error = {e}"))?,
    );
    let ctx = client.as_ctx();
    pe.connect_ctx(&ctx).inspect_err(|e| error!("Failed adding pe context to client with error = {e}"))?;

    let st = Rc::new(ClientState {
        finish: Cell::new(false),
        result: Cell::new(Ok(())),
        replied: Cell::new(false),
        text: text.to_string(),
        client: RefCell::new(Some(Rc::downgrade(&client))),
    });
    let s = st.clone();
    ctx.set_state_changed_cb(move |_, ctx, prev, next| match next {
        CtxState::Idle => {
            if prev == CtxState::Starting {
                // The library logged why (the server refused, or went away).
                error!("CC client failed to connect to the server");
                s.result.set(Err(Error::ConnectionAborted));
            }
            info!("CC client context has been stopped");
            s.finish.set(true);
        }
        CtxState::Starting => {
            info!("CC client context entered into starting state. Waiting for connection establishment")
        }
        // ANCHOR: client_running
        CtxState::Running => {
            info!("CC client context is running. Sending message");
            let Some(client) = s.client.borrow().as_ref().and_then(std::rc::Weak::upgrade) else { return };
            let conn = match client.get_connection() {
                Ok(c) => c,
                Err(e) => {
                    error!("Failed to get connection from cc client with error = {e}");
                    s.result.set(Err(e));
                    let _ = ctx.stop();
                    return;
                }
            };
            conn.set_user_data(Data::from_ptr(Rc::as_ptr(&s)));
            match client.task_send_alloc_init(&conn, msg_of(&s.text)) {
                Ok(task) => {
                    if let Err(r) = task.submit() {
                        error!("Failed submitting send task with error = {}", r.error);
                        s.result.set(Err(r.error));
                        drop(r);
                        let _ = ctx.stop();
                    }
                }
                Err(e) => {
                    error!("Failed allocating send task with error = {e}");
                    s.result.set(Err(e));
                    let _ = ctx.stop();
                }
            }
        }
        // ANCHOR_END: client_running
        CtxState::Stopping => {
            info!("CC client context entered into stopping state. Waiting for the context to be idle")
        }
    })?;
    let (s1, s2, s3) = (st.clone(), st.clone(), st.clone());
    client
        .task_send_set_conf(
            move |_task: SendTask, _, _| {
                s1.result.set(Ok(()));
                info!("Task sent successfully");
            },
            move |task: SendTask, _, _| send_failed(&s2.result, task),
            CC_SEND_TASK_NUM,
        )
        .inspect_err(|e| error!("Failed to configure client task pool with error = {e}"))?;
    client
        .event_msg_recv_register(move |msg, conn: &Connection| {
            info!("Message received: '{}'", String::from_utf8_lossy(msg));
            s3.replied.set(true);
            if let Ok(client) = conn.client() {
                let _ = client.as_ctx().stop();
            }
        })
        .inspect_err(|e| error!("Failed adding message receive event with error = {e}"))?;
    client
        .set_max_msg_size(CC_MAX_MSG_SIZE)
        .inspect_err(|e| error!("Failed to set msg size property with error = {e}"))?;
    client
        .set_recv_queue_size(CC_REC_QUEUE_SIZE)
        .inspect_err(|e| error!("Failed to set msg size property with error = {e}"))?;
    ctx.set_user_data(Data::from_ptr(Rc::as_ptr(&st)));
    // ANCHOR: client_start
    match ctx.start() {
        Err(Error::InProgress) => {}
        Ok(()) => {
            error!("Failed to start client context: expected an asynchronous start");
            return Err(Error::BadState);
        }
        Err(e) => {
            error!("Failed to start client context with error = {e}");
            return Err(e);
        }
    }

    run_until(&pe, &st.finish);
    // ANCHOR_END: client_start

    st.client.borrow_mut().take();
    let client = Rc::try_unwrap(client).map_err(|_| Error::InUse)?;
    client.destroy().map_err(|r| r.error).inspect_err(|e| error!("Failed to destroy client: {e}"))?;
    pe.destroy().map_err(|r| r.error).inspect_err(|e| error!("Failed to destroy pe: {e}"))?;
    if st.result.get().is_ok() && !st.replied.get() {
        error!("CC client stopped before the server's reply arrived");
        return Err(Error::ConnectionReset);
    }
    st.result.get()
}
