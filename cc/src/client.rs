//! `doca_cc_client`: connects a host function to a named server on its DPU.
//!
//! Start is asynchronous: `start` returns `IN_PROGRESS` and the client stays Starting —
//! retrying quietly while the server is not there yet — until the handshake completes
//! (Running) or the server refuses it (Idle, logged with the reason). A client has exactly
//! one connection; when the server goes away (stops, disconnects the client, dies) the
//! client leaves Running: its waiting sends fail, and it reaches Idle once its tasks are
//! freed.

use std::cell::RefCell;
use std::os::fd::{AsFd, OwnedFd};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use doca_core::notify::Doorbell;
use doca_core::{
    bail, fail, CtxCell, CtxCore, CtxOps, CtxState, Dev, Error, Refused, Result, Started, TaskId, TaskLib,
    TaskOwner, TaskPool,
};
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec,
};

use crate::caps;
use crate::conn::{self, Connection, OwnerRef};
use crate::endpoint::{Common, Link, SendPayload};
use crate::proto::{Hello, PeerKind, Reply};
use crate::transport::ring::{Area, End, Ring};
use crate::transport::{self, Recv};

const LINK_TOKEN: u64 = 1;
const FIRST_RETRY: Duration = Duration::from_millis(1);
const MAX_RETRY: Duration = Duration::from_millis(50);
/// How long to wait for the server's answer before trying again from scratch.
const REPLY_DEADLINE: Duration = Duration::from_secs(5);

enum Phase {
    Idle,
    Connecting { next_try: Instant, backoff: Duration },
    Handshaking { sock: OwnedFd, since: Instant },
    Up,
}

pub(crate) struct ClientOps {
    common: Common,
    phase: RefCell<Phase>,
    timer: RefCell<Option<OwnedFd>>,
}

/// `struct doca_cc_client`.
pub struct Client {
    ctx: Rc<CtxCell<ClientOps>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Client(to {:?} from {:?}, {:?})",
            self.ops().common.name,
            self.ops().common.dev,
            self.ctx.core().state()
        )
    }
}

impl Client {
    pub(crate) fn from_rc(ctx: Rc<CtxCell<ClientOps>>) -> Client {
        Client { ctx }
    }

    fn ops(&self) -> &ClientOps {
        self.ctx.ops()
    }

    fn core(&self) -> &CtxCore {
        self.ctx.core()
    }

    /// `doca_cc_client_create`: a client on host function `dev` for the server `name`. A
    /// DPU device → `NOT_SUPPORTED`; a bad name → `INVALID_VALUE`.
    pub fn create(dev: &Dev, name: &str) -> Result<Client> {
        if caps::client_is_supported(dev.as_devinfo()).is_err() {
            bail!(
                Error::NotSupported,
                "cc client on {dev:?}: clients run on a host function, not the DPU device"
            );
        }
        caps::check_name(dev.as_devinfo(), name)?;
        let key = conn::new_owner_key();
        let limits = Common::default_limits(dev)?;
        let ctx = CtxCell::new(|weak: &Weak<CtxCell<ClientOps>>| {
            let owner: Weak<dyn TaskOwner<SendPayload>> = weak.clone();
            ClientOps {
                common: Common::new("cc_client", dev.clone(), name.to_string(), key, owner, limits),
                phase: RefCell::new(Phase::Idle),
                timer: RefCell::new(None),
            }
        });
        conn::register_owner(key, OwnerRef::Client(Rc::downgrade(&ctx)));
        Ok(Client { ctx })
    }

    /// `doca_cc_client_destroy`: Idle only (`IN_USE`, and the client back).
    pub fn destroy(self) -> Result<(), Refused<Client>> {
        if let Err(e) = self.ops().common.release(self.core()) {
            return Err(Refused::new(e, self));
        }
        if let Some(t) = self.ops().timer.borrow_mut().take() {
            let _ = self.core().unwatch_fd(t.as_fd());
        }
        self.core().destroy().map_err(|e| Refused::new(e, Client { ctx: self.ctx.clone() }))
    }

    /// The name of the server this client connects to.
    pub fn server_name(&self) -> &str {
        &self.ops().common.name
    }

    /// `doca_cc_client_get_connection`: the connection once Running (`BAD_STATE` before).
    pub fn get_connection(&self) -> Result<Connection> {
        match self.ops().common.links.borrow().first() {
            Some(l) if self.core().state() != CtxState::Idle => Ok(l.conn.clone()),
            _ => Err(fail!(
                Error::BadState,
                "cc client get_connection: not connected (state {:?})",
                self.core().state()
            )),
        }
    }
}

impl ClientOps {
    fn schedule_retry(&self, backoff: Duration) {
        let next = (backoff * 2).min(MAX_RETRY);
        *self.phase.borrow_mut() = Phase::Connecting { next_try: Instant::now() + backoff, backoff: next };
    }

    fn try_connect(&self) -> Result<()> {
        let pci = self.common.dev.as_devinfo().pci_addr();
        let path = transport::service_path("cc", pci, &self.common.name)?;
        let Some(sock) = transport::connect(&path)? else {
            return Err(Error::Again);
        };
        let hello = Hello {
            kind: PeerKind::Client,
            max_msg_size: self.common.max_msg_size.get(),
            recv_queue_size: self.common.recv_queue_size.get(),
            name: self.common.name.clone(),
        };
        // The same doorbell serves "messages arrived" and "room appeared".
        self.common.with_bell(|bell| {
            transport::send(sock.as_fd(), &hello.encode(), &[bell.as_fd(), bell.as_fd()])
        })??;
        self.common.watch_ctrl(&sock, LINK_TOKEN)?;
        *self.phase.borrow_mut() = Phase::Handshaking { sock, since: Instant::now() };
        Ok(())
    }

    /// Reads the server's answer; `Ok(true)` when connected.
    fn read_reply(&self, core: &CtxCore) -> Result<bool> {
        let (len, fds) = {
            let phase = self.phase.borrow();
            let Phase::Handshaking { sock, since } = &*phase else { return Ok(false) };
            let mut buf = [0u8; 128];
            match transport::recv(sock.as_fd(), &mut buf)? {
                Recv::Empty if since.elapsed() < REPLY_DEADLINE => return Ok(false),
                Recv::Empty | Recv::Closed => return Err(Error::Again),
                Recv::Packet { truncated: true, .. } => return Err(Error::InvalidValue),
                Recv::Packet { len, fds, .. } => {
                    let reply = Reply::decode(&buf[..len]);
                    (reply, fds)
                }
            }
        };
        let reply = match len {
            Ok(r) => r,
            Err(Error::UnsupportedVersion) => {
                core.abort_start(Error::UnsupportedVersion, "the server speaks another protocol version");
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        if reply.status != 0 {
            let e = Error::from_code(reply.status).unwrap_or(Error::Unknown);
            let why = match e {
                Error::InvalidValue => {
                    "the server refused the connection (max message size or queue size mismatch)"
                }
                Error::Full => "the server refused the connection: it has its maximum number of clients",
                _ => "the server refused the connection",
            };
            self.close_handshake();
            core.abort_start(e, why);
            return Ok(false);
        }
        let mut fds = fds.into_iter();
        let (Some(seg), Some(bell), Some(room_bell)) = (fds.next(), fds.next(), fds.next()) else {
            return Err(fail!(
                Error::InvalidValue,
                "cc client: server reply without its segment and doorbell"
            ));
        };
        let max = reply.max_msg_size as usize;
        let area = Area::open(seg, reply.segment_len as usize)?;
        let tx = Ring::attach(&area, reply.c2s_offset as usize, reply.server_recv_queue, max, End::Producer)?;
        let rx = Ring::attach(
            &area,
            reply.s2c_offset as usize,
            self.common.recv_queue_size.get(),
            max,
            End::Consumer,
        )?;
        let Phase::Handshaking { sock, .. } = std::mem::replace(&mut *self.phase.borrow_mut(), Phase::Up)
        else {
            unreachable!("checked above")
        };
        let pid = transport::peer_uid(sock.as_fd()).map(|(_, p)| p).unwrap_or(0);
        let conn = Connection::new(reply.conn_id, self.common.key, false, pid, self.common.dev.clone())?;
        conn.fast().set_socket(sock.as_fd());
        let link =
            Rc::new(Link::new(conn, sock, tx, rx, (Doorbell::from_fd(bell), Doorbell::from_fd(room_bell))));
        self.common.links.borrow_mut().push(link);
        Ok(true)
    }

    fn close_handshake(&self) {
        let phase = std::mem::replace(&mut *self.phase.borrow_mut(), Phase::Idle);
        if let Phase::Handshaking { sock, .. } = phase {
            self.common.unwatch_ctrl(&sock);
        }
    }

    fn progress_starting(&self, core: &CtxCore) -> bool {
        let due = match &*self.phase.borrow() {
            Phase::Connecting { next_try, backoff } => Some((*next_try, *backoff)),
            _ => None,
        };
        if let Some((next_try, backoff)) = due {
            if Instant::now() < next_try {
                return false;
            }
            return match self.try_connect() {
                Ok(()) => false,
                Err(Error::Again) | Err(Error::ConnectionReset) => {
                    self.schedule_retry(backoff);
                    false
                }
                Err(e) => {
                    core.abort_start(e, "cannot reach the fabric directory");
                    true
                }
            };
        }
        match self.read_reply(core) {
            Ok(true) => {
                core.set_running();
                true
            }
            Ok(false) => core.state() != CtxState::Starting,
            Err(e) => {
                tracing::debug!(target: "doca_sdk", "cc_client {:?}: handshake failed ({e}); retrying", self.common.name);
                self.close_handshake();
                self.schedule_retry(FIRST_RETRY);
                false
            }
        }
    }

    fn ctrl_poll(&self, core: &CtxCore) -> bool {
        let link = self.common.links.borrow().first().cloned();
        let Some(link) = link else { return false };
        let mut events = Vec::new();
        if !self.common.ctrl_ready().is_empty() && !self.common.read_ctrl(&link, &mut events) {
            link.closing.set(true);
        }
        let any = self.common.deliver_consumer_events(events);
        if !link.closing.get() {
            return any;
        }
        self.common.drop_link(&link, Error::ConnectionReset);
        core.fail(Error::ConnectionReset, "the server closed the connection");
        true
    }

    fn arm_timer(&self) {
        let next = match &*self.phase.borrow() {
            Phase::Connecting { next_try, .. } => *next_try,
            _ => return,
        };
        let timer = self.timer.borrow();
        let Some(timer) = timer.as_ref() else { return };
        let wait = next.saturating_duration_since(Instant::now()).max(Duration::from_micros(1));
        let spec = Itimerspec {
            it_interval: Timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: Timespec { tv_sec: wait.as_secs() as i64, tv_nsec: wait.subsec_nanos().into() },
        };
        let _ = timerfd_settime(timer, TimerfdTimerFlags::empty(), &spec);
    }
}

crate::endpoint::endpoint_api!(Client, "client");

impl CtxOps for ClientOps {
    fn kind(&self) -> &'static str {
        "cc_client"
    }

    fn start(&self, core: &CtxCore) -> Result<Started> {
        self.common.prepare(core)?;
        if self.timer.borrow().is_none() {
            let t = timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC)
                .map_err(|e| fail!(Error::OperatingSystem, "timerfd_create: {e}"))?;
            core.watch_fd(t.as_fd())?;
            *self.timer.borrow_mut() = Some(t);
        }
        *self.phase.borrow_mut() = Phase::Connecting { next_try: Instant::now(), backoff: FIRST_RETRY };
        Ok(Started::Starting)
    }

    fn stop(&self, _core: &CtxCore) {
        self.close_handshake();
        *self.phase.borrow_mut() = Phase::Idle;
        let links: Vec<Rc<Link>> = self.common.links.borrow_mut().drain(..).collect();
        for link in links {
            let _ = rustix::net::shutdown(&link.sock, rustix::net::Shutdown::Both);
            self.common.unwatch_ctrl(&link.sock);
            self.common.fail_pending(&link, Error::ConnectionReset);
            link.conn.mark_down();
        }
    }

    fn progress(&self, core: &CtxCore) -> bool {
        match core.state() {
            CtxState::Starting => self.progress_starting(core),
            CtxState::Running => {
                let mut any = self.common.progress_links();
                if self.common.ctrl_turn() {
                    any |= self.ctrl_poll(core);
                }
                any
            }
            _ => self.common.progress_links(),
        }
    }

    fn request_notification(&self, core: &CtxCore) -> bool {
        if core.state() == CtxState::Starting {
            self.arm_timer();
            return matches!(&*self.phase.borrow(), Phase::Connecting { next_try, .. } if *next_try <= Instant::now());
        }
        self.common.arm()
    }

    fn clear_notification(&self, _core: &CtxCore) {
        if let Some(timer) = self.timer.borrow().as_ref() {
            let mut b = [0u8; 8];
            let _ = rustix::io::read(timer, &mut b);
        }
        self.common.disarm();
    }
}

impl TaskLib<SendPayload> for ClientOps {
    fn pool(&self) -> &TaskPool<SendPayload> {
        &self.common.pool
    }

    fn submit(&self, _core: &CtxCore, task: TaskId) -> Result<()> {
        self.common.submit(task)
    }
}
