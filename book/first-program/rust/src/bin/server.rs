//! The DPU side: a Comm Channel server named "first_comch" on the DPU device 03:00.0, serving
//! the host function b1:00.0. It answers each message with the same text in capitals and
//! stops when its client disconnects.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use doca_cc::{Connection, SendTask, Server};
use doca_common::log::{self, LogLevel};
use doca_core::{CtxState, Error, Pe};
use tracing::{error, info};

fn main() -> Result<(), Error> {
    log::init(LogLevel::Info, LogLevel::Warning); // your lines at INFO, the library's at WARNING
    let (dev, rep) = doca_common::open_device_and_rep("03:00.0", "b1:00.0")?;
    let pe = Pe::create()?;
    let server = Server::create(&dev, &rep, "first_comch")?;
    let ctx = server.as_ctx();
    pe.connect_ctx(&ctx)?;

    let done = Rc::new(Cell::new(false));
    let d = done.clone();
    ctx.set_state_changed_cb(move |_, _, prev, next| {
        info!("server: {prev:?} -> {next:?}");
        d.set(next == CtxState::Idle);
    })?;
    // Tasks come from a pool of 16; dropping a task frees it back to the pool.
    server.task_send_set_conf(
        |_task: SendTask, _, _| info!("server: reply sent"),
        |task: SendTask, _, _| error!("server: reply failed: {:?}", task.status()),
        16,
    )?;
    server.event_msg_recv_register(|msg: &[u8], conn: &Connection| {
        let text = String::from_utf8_lossy(msg);
        info!("server: received '{text}'");
        let Ok(server) = conn.server() else { return };
        let reply = text.to_uppercase();
        match server.task_send_alloc_init(conn, reply.as_bytes()) {
            Ok(task) => {
                if let Err(refused) = task.submit() {
                    error!("server: submit refused: {}", refused.error);
                }
            }
            Err(e) => error!("server: no task for the reply: {e}"),
        }
    })?;
    server.event_connection_register(
        |_conn, _ok| info!("server: a client connected"),
        |conn, _ok| {
            info!("server: the client left, stopping");
            if let Ok(server) = conn.server() {
                let _ = server.as_ctx().stop();
            }
        },
    )?;

    ctx.start()?; // a server is Running at once
    while !done.get() {
        if !pe.progress() {
            std::thread::sleep(Duration::from_micros(10)); // nothing to do: let the core rest
        }
    }
    // Idle now: dropping the server (its socket goes) and the engine releases them;
    // `destroy()` does the same and says IN_USE if a context is not Idle yet.
    Ok(())
}
