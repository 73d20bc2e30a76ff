//! The host side: a Comm Channel client on the host function b1:00.0 that connects to the
//! server "first_comch", sends one message, logs the answer and stops.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use doca_cc::{Client, Connection, SendTask};
use doca_common::log::{self, LogLevel};
use doca_core::{CtxState, Error, InProgressOk, Pe};
use tracing::{error, info};

fn main() -> Result<(), Error> {
    log::init(LogLevel::Info, LogLevel::Warning);
    let dev = doca_common::open_device("b1:00.0")?;
    let pe = Pe::create()?;
    let client = Rc::new(Client::create(&dev, "first_comch")?);
    let ctx = client.as_ctx();
    pe.connect_ctx(&ctx)?;

    let (done, answered) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(false)));
    let (d, me) = (done.clone(), Rc::downgrade(&client));
    ctx.set_state_changed_cb(move |_, ctx, prev, next| {
        info!("client: {prev:?} -> {next:?}");
        d.set(next == CtxState::Idle);
        if next != CtxState::Running {
            return;
        }
        // Connected: the connection exists from Running on.
        let Some(client) = me.upgrade() else { return };
        let sent = client.get_connection().and_then(|conn| {
            let task = client.task_send_alloc_init(&conn, b"hello from the host")?;
            task.submit().map_err(|refused| refused.error)
        });
        if let Err(e) = sent {
            error!("client: cannot send: {e}");
            let _ = ctx.stop();
        }
    })?;
    client.task_send_set_conf(
        |_task: SendTask, _, _| info!("client: message sent"),
        |task: SendTask, _, _| error!("client: send failed: {:?}", task.status()),
        16,
    )?;
    let a = answered.clone();
    client.event_msg_recv_register(move |msg: &[u8], conn: &Connection| {
        info!("client: the server answered '{}'", String::from_utf8_lossy(msg));
        a.set(true);
        if let Ok(client) = conn.client() {
            let _ = client.as_ctx().stop(); // disconnects: the server stops too
        }
    })?;

    // A client starts asynchronously: `start` answers IN_PROGRESS, Running comes later.
    ctx.start().in_progress_ok()?;
    while !done.get() {
        if !pe.progress() {
            std::thread::sleep(Duration::from_micros(10));
        }
    }
    // Idle now: dropping the client and the engine (here, at the end of main) releases them
    // as doca_cc_client_destroy and doca_pe_destroy would.
    if answered.get() {
        Ok(())
    } else {
        Err(Error::ConnectionAborted)
    }
}
