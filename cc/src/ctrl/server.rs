//! The server's own part of a [`crate::Server`]: the representor it serves, its acceptor
//! (listening socket and handshakes in progress) and its connection callbacks.
//!
//! Each accepted client is a connection announced by the connection callback; a client that
//! leaves (stops, disconnects, dies) is announced by the disconnection callback after its
//! last messages were delivered. A handshake that fails for a reason the client can fix (a
//! max message size that does not match, too many clients) is announced as an unsuccessful
//! connection; garbage, truncated handshakes, other protocol versions and other users'
//! processes are dropped with a log line.

use std::cell::RefCell;
use std::time::Instant;

use doca_core::{CbSlot, DevRep, Result};

use super::side::{NewLink, Side};
use crate::caps;
use crate::conn::Connection;
use crate::proto::handshake::Limits;
use crate::proto::PeerKind;
use crate::transport::accept::{Acceptor, Incoming};
use crate::transport::setup::Bells;

/// `doca_cc_event_connection_status_changed_cb_t`: the connection and whether the change
/// (connect or disconnect) succeeded.
pub type ConnectionCb = dyn FnMut(&Connection, bool);

/// The server-specific state.
pub(crate) struct ServerState {
    pub(crate) rep: DevRep,
    acceptor: RefCell<Option<Acceptor>>,
    pub(crate) connect_cb: CbSlot<ConnectionCb>,
    pub(crate) disconnect_cb: CbSlot<ConnectionCb>,
}

impl ServerState {
    pub(crate) fn new(rep: &DevRep) -> ServerState {
        ServerState {
            rep: rep.clone(),
            acceptor: RefCell::new(None),
            connect_cb: CbSlot::empty(),
            disconnect_cb: CbSlot::empty(),
        }
    }

    /// What this server accepts, from its settings and the device's capabilities.
    fn limits(&self, side: &Side) -> Result<Limits> {
        let info = side.dev.as_devinfo();
        Ok(Limits {
            kind: PeerKind::Client,
            name: side.name.clone(),
            function: self.rep.as_devinfo().pci_addr(),
            max_msg_size: side.max_msg_size.get(),
            recv_queue_size: side.recv_queue_size.get(),
            max_recv_queue: caps::max_recv_queue_size(info)?,
            max_connections: caps::max_clients(info)?,
            max_connections_per_peer: caps::get(info, &caps::MAX_CLIENTS_PER_PROCESS)?,
        })
    }

    /// Starts listening.
    pub(crate) fn start(&self, side: &Side) -> Result<()> {
        let acceptor = Acceptor::listen(&side.ctrl()?, "cc", self.limits(side)?)?;
        tracing::debug!(target: "doca_sdk", "{side} listening at {}", acceptor.path().display());
        *self.acceptor.borrow_mut() = Some(acceptor);
        Ok(())
    }

    /// Stops listening (the socket files go) and drops the handshakes in progress.
    pub(crate) fn stop(&self) {
        self.acceptor.borrow_mut().take();
    }

    /// The control poll's server part: when the listener or a handshake socket is readable
    /// (`ready`) or a deadline passed, accept and read handshakes, and announce what came of
    /// them.
    pub(crate) fn poll(&self, side: &Side, now: Instant, ready: bool) -> bool {
        let mut incoming = Vec::new();
        {
            let mut acceptor = self.acceptor.borrow_mut();
            let Some(acceptor) = acceptor.as_mut() else { return false };
            if !ready && acceptor.next_deadline().is_none_or(|d| d > now) {
                return false;
            }
            let Ok(ctrl) = side.ctrl() else { return false };
            let live = side.num_links();
            let live_of = |peer| side.num_links_of(peer);
            acceptor.poll(side, &ctrl, now, live, &live_of, &Bells::one, &mut incoming);
        }
        let any = !incoming.is_empty();
        for inc in incoming {
            let (conn, ok) = match inc {
                Incoming::Up(up) => {
                    let up = *up;
                    let new = NewLink {
                        id: up.id,
                        pid: up.pid,
                        sock: up.sock,
                        channel: up.channel,
                        bell: up.bells.keep().0,
                        state: up.state,
                        budget: Some(up.budget),
                    };
                    match side.add_link(new) {
                        Ok(conn) => (conn, true),
                        Err(e) => {
                            tracing::error!(target: "doca_sdk", "{side}: connection from pid {} failed: {e}", up.pid);
                            let Ok(conn) = side.failed_connection(up.id, up.pid) else { continue };
                            (conn, false)
                        }
                    }
                }
                Incoming::Failed { id, pid, .. } => {
                    let Ok(conn) = side.failed_connection(id, pid) else { continue };
                    (conn, false)
                }
            };
            self.connect_cb.call(|cb| cb(&conn, ok));
            if !ok {
                conn.release_owner();
            }
        }
        any
    }

    /// A connection ended (announced after its last messages were delivered).
    pub(crate) fn link_down(&self, conn: &Connection) {
        self.disconnect_cb.call(|cb| cb(conn, true));
    }

    /// The next handshake deadline (or the end of an accept back-off).
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.acceptor.borrow().as_ref().and_then(Acceptor::next_deadline)
    }
}
