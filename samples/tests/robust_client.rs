//! What a robust client does when its link drops, tested under a fault plan set through the
//! Rust API (`doca_core::fault`) in this process, against the unmodified `cc_ctrl_path`
//! server: it notices the end of its connection (its context going Idle on its own, its send
//! failing with `CONNECTION_RESET`), starts over with a new client, and gets its answer.
//! Its own test binary: a plan and the fabric directory are process-wide.

use std::cell::{Cell, RefCell};
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::time::{Duration, Instant};

use doca_cc::{Client, SendTask};
use doca_core::{fault, open_device_with_pci, CtxState, Dev, Error, Pe};

const SERVER_NAME: &str = "cc_ctrl_path_sample_server";

// ANCHOR: attempt
/// One attempt: a new client connects, sends `text` and waits for the reply. The reply, or
/// the code that ended the attempt (its send's status, else `CONNECTION_RESET` when the
/// connection ended without a reply).
fn attempt(dev: &Dev, text: &'static str) -> Result<Vec<u8>, Error> {
    let pe = Pe::create()?;
    let client = Rc::new(Client::create(dev, SERVER_NAME)?);
    let ctx = client.as_ctx();
    pe.connect_ctx(&ctx)?;
    let reply: Rc<RefCell<Option<Vec<u8>>>> = Rc::default();
    let failed: Rc<Cell<Option<Error>>> = Rc::default();
    let (weak, f) = (Rc::downgrade(&client), failed.clone());
    ctx.set_state_changed_cb(move |_, ctx, _, next| {
        if next != CtxState::Running {
            return;
        }
        let Some(client) = weak.upgrade() else { return };
        let sent = client
            .get_connection()
            .and_then(|conn| client.task_send_alloc_init(&conn, text.as_bytes()))
            .and_then(|task| task.submit().map_err(|r| r.error));
        if let Err(e) = sent {
            f.set(Some(e));
            let _ = ctx.stop();
        }
    })?;
    let f = failed.clone();
    client.task_send_set_conf(
        |_: SendTask, _, _| {},
        move |task: SendTask, _, _| {
            f.set(task.status().err());
            let _ = task.as_task().ctx().stop();
        },
        4,
    )?;
    let r = reply.clone();
    client.event_msg_recv_register(move |msg, conn| {
        *r.borrow_mut() = Some(msg.to_vec());
        if let Ok(client) = conn.client() {
            let _ = client.as_ctx().stop();
        }
    })?;
    match ctx.start() {
        Ok(()) | Err(Error::InProgress) => {}
        Err(e) => return Err(e),
    }
    // Idle again: we stopped after the reply, or the link ended (the server went, or the
    // link dropped) — the context leaves Running on its own then.
    let deadline = Instant::now() + Duration::from_secs(30);
    while ctx.state() != CtxState::Idle {
        if Instant::now() > deadline {
            let _ = ctx.stop();
        }
        if !pe.progress() {
            std::thread::sleep(Duration::from_micros(10));
        }
    }
    drop(ctx);
    Rc::try_unwrap(client).map_err(|_| Error::InUse)?.destroy().map_err(|r| r.error)?;
    pe.destroy().map_err(|r| r.error)?;
    let got = reply.borrow_mut().take();
    got.ok_or(failed.get().unwrap_or(Error::ConnectionReset))
}

/// Retries [`attempt`] while the failure is one a link drop causes, with a growing pause.
fn robust_exchange(dev: &Dev, text: &'static str, tries: u32) -> Result<(Vec<u8>, u32), Error> {
    let mut pause = Duration::from_millis(20);
    for n in 1..=tries {
        match attempt(dev, text) {
            Ok(reply) => return Ok((reply, n)),
            Err(Error::ConnectionReset | Error::ConnectionAborted | Error::NotConnected) if n < tries => {
                std::thread::sleep(pause);
                pause *= 2;
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::ConnectionReset)
}
// ANCHOR_END: attempt

#[test]
fn a_robust_client_starts_over_after_its_link_drops() {
    let fab = std::env::temp_dir().join(format!("doca-fab-robust-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&fab);
    std::fs::create_dir_all(&fab).unwrap();
    std::fs::set_permissions(&fab, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    // Before any DOCA call and any other thread of this test binary.
    std::env::set_var("DOCA_EMU_FABRIC_DIR", &fab);
    let server = Command::new(env!("CARGO_BIN_EXE_cc_ctrl_path_server"))
        .args(["-t", "Reply from the DPU"])
        .env("DOCA_EMU_FABRIC_DIR", &fab)
        .env_remove("DOCA_EMU_FAULTS")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // ANCHOR: plan
    fault::install_text("link.drop=1*nth(1)").expect("the plan parses");
    // ANCHOR_END: plan
    let dev = open_device_with_pci("b1:00.0", None).unwrap();
    let (reply, tries) = robust_exchange(&dev, "Message from the client", 5).expect("the exchange");
    assert_eq!(reply, b"Reply from the DPU");
    assert_eq!(tries, 2, "the first attempt lost its link, the second got through");
    let fired = fault::fired();
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!((fired[0].point.as_str(), fired[0].hit), ("link.drop", 1));
    assert!(fired[0].detail.ends_with("send"), "{fired:?}");
    let out = server.wait_with_output().unwrap();
    let slog = String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{slog}");
    assert_eq!(slog.matches("New client connected to server").count(), 2, "{slog}");
    assert_eq!(slog.matches("Message received: 'Message from the client'").count(), 1, "{slog}");
}
