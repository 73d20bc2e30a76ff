//! The legacy `comm_channel` sample pair (`doca_comm_channel_ep_*`), step for step as DOCA's:
//! the client connects, sends its text (with its trailing NUL), prints the server's answer;
//! the server prints the client's text and answers once.

use std::time::Duration;

use doca_cc::legacy::{Endpoint, MsgFlags};
use doca_core::Error;
use tracing::{error, info, warn};

use doca_common::{open_device, open_device_and_rep, retry_while};

/// The service name both sides use.
pub const SERVICE_NAME: &str = "cc_sample_server";
/// `MAX_MSG_SIZE`.
pub const MAX_MSG_SIZE: u16 = 4080;
/// `CC_MAX_QUEUE_SIZE`.
pub const QUEUE_SIZE: u16 = 10;

/// The text as the samples send it: `strlen(text) + 1` bytes, NUL included.
fn with_nul(text: &str) -> Vec<u8> {
    let mut v = text.as_bytes().to_vec();
    v.push(0);
    v
}

fn shown(msg: &[u8]) -> String {
    let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
    String::from_utf8_lossy(&msg[..end]).into_owned()
}

/// The samples' `while (result == busy)` loops: as long as it takes, as in C.
fn retry<T>(busy: Error, op: impl FnMut() -> Result<T, Error>) -> Result<T, Error> {
    retry_while(busy, Duration::MAX, op)
}

/// The server side (`comm_channel_server_sample.c`).
pub fn run_server(pci_addr: &str, rep_pci: &str, text: &str) -> Result<(), Error> {
    let ep = Endpoint::create().inspect_err(|e| error!("Failed to create Comm Channel endpoint: {e}"))?;
    let (dev, rep) = open_device_and_rep(pci_addr, rep_pci)?;
    ep.set_device(&dev).inspect_err(|e| error!("Failed to set DOCA device property: {e}"))?;
    ep.set_max_msg_size(MAX_MSG_SIZE).inspect_err(|e| error!("Failed to set max_msg_size property: {e}"))?;
    ep.set_send_queue_size(QUEUE_SIZE)
        .inspect_err(|e| error!("Failed to set snd_queue_size property: {e}"))?;
    ep.set_recv_queue_size(QUEUE_SIZE)
        .inspect_err(|e| error!("Failed to set rcv_queue_size property: {e}"))?;
    ep.set_device_rep(&rep).inspect_err(|e| error!("Failed to set DOCA device representor property: {e}"))?;
    // ANCHOR: server
    ep.listen(SERVICE_NAME).inspect_err(|e| error!("Comm Channel endpoint couldn't start listening: {e}"))?;
    info!("Server started Listening, waiting for new connections");

    let mut buf = vec![0u8; MAX_MSG_SIZE as usize];
    let (len, peer) = retry(Error::Again, || ep.recvfrom(&mut buf, MsgFlags::NONE).map_err(|e| e.error))
        .inspect_err(|e| error!("Message was not received: {e}"))?;
    info!("Received message: {}", shown(&buf[..len]));
    // ANCHOR_END: server
    let reply = with_nul(text);
    let _ = retry(Error::Again, || ep.sendto(&reply, MsgFlags::NONE, &peer))
        .inspect_err(|e| warn!("Response was not sent successfully: {e}"));
    ep.disconnect(&peer).inspect_err(|e| error!("Failed to disconnect channel: {e}"))?;
    ep.destroy()
}

/// The client side (`comm_channel_client_sample.c`).
pub fn run_client(pci_addr: &str, text: &str) -> Result<(), Error> {
    let ep = Endpoint::create().inspect_err(|e| error!("Failed to create Comm Channel endpoint: {e}"))?;
    let dev = open_device(pci_addr)?;
    ep.set_device(&dev).inspect_err(|e| error!("Failed to set DOCA device property: {e}"))?;
    ep.set_max_msg_size(MAX_MSG_SIZE).inspect_err(|e| error!("Failed to set max_msg_size property: {e}"))?;
    ep.set_send_queue_size(QUEUE_SIZE)
        .inspect_err(|e| error!("Failed to set snd_queue_size property: {e}"))?;
    ep.set_recv_queue_size(QUEUE_SIZE)
        .inspect_err(|e| error!("Failed to set rcv_queue_size property: {e}"))?;
    // ANCHOR: client
    let peer = ep
        .connect(SERVICE_NAME)
        .inspect_err(|e| error!("Couldn't establish a connection with the server: {e}"))?;
    retry(Error::ConnectionInProgress, || peer.update_info())
        .inspect_err(|e| error!("Failed to validate the connection with the DPU: {e}"))?;
    info!("Connection to server was established successfully");
    let msg = with_nul(text);
    retry(Error::Again, || ep.sendto(&msg, MsgFlags::NONE, &peer))
        .inspect_err(|e| error!("Message was not sent: {e}"))?;
    let mut buf = vec![0u8; MAX_MSG_SIZE as usize];
    let (len, _) = retry(Error::Again, || ep.recvfrom(&mut buf, MsgFlags::NONE).map_err(|e| e.error))
        .inspect_err(|e| error!("Response was not received: {e}"))?;
    info!("Server response: {}", shown(&buf[..len]));
    // ANCHOR_END: client
    ep.disconnect(&peer).inspect_err(|e| error!("Failed to disconnect channel: {e}"))?;
    ep.destroy()
}
