//! The public face of servers and clients: [`Cc`], with [`Server`] and [`Client`] as its
//! two roles, and the context operations core drives.
//!
//! Every `doca_cc_server_*` and `doca_cc_client_*` function that both roles have is one
//! method of `Cc<R>` (written once, for both); the rest are methods of `Cc<ServerRole>` or
//! `Cc<ClientRole>` only, so calling a server's function on a client does not compile.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::rc::{Rc, Weak};

use doca_core::{
    bail, Ctx, CtxCell, CtxCore, CtxOps, CtxState, Data, Dev, DevRep, Error, Now, Refused, Result, Started,
    TaskId, TaskLib, TaskPayload, TaskPool,
};

use super::client::ClientState;
use super::send::{SendPayload, SendTask};
use super::server::ServerState;
use super::side::{Side, Unreached};
use crate::caps;
use crate::conn::Connection;
use crate::transport::token;

/// Marks a [`Cc`] as a server ([`Server`]).
#[derive(Debug)]
pub struct ServerRole(());

/// Marks a [`Cc`] as a client ([`Client`]).
#[derive(Debug)]
pub struct ClientRole(());

/// `struct doca_cc_server`: listens on a DPU device for the clients of one host function.
///
/// Start is synchronous (Running at once); clients connect whenever they come. Stopping
/// closes every connection.
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// use doca_cc::Server;
/// use doca_core::{open_device_rep_with_pci, open_device_with_pci, CtxState, Pe, RepFilter};
///
/// let dpu = open_device_with_pci("03:00.0", None)?;
/// let rep = open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.0")?;
/// let pe = Pe::create()?;
/// # let name = format!("doc-server-{}", std::process::id());
/// let server = Server::create(&dpu, &rep, &name)?;
/// pe.connect_ctx(&server.as_ctx())?;
/// server.event_msg_recv_register(|msg, conn| println!("{} bytes on #{}", msg.len(), conn.id()))?;
/// server.event_connection_register(|conn, ok| println!("#{} up: {ok}", conn.id()), |_, _| {})?;
/// server.task_send_set_conf(|_task, _, _| {}, |task, _, _| eprintln!("{:?}", task.status()), 64)?;
/// server.as_ctx().start()?;
/// assert_eq!(server.as_ctx().state(), CtxState::Running);
/// server.as_ctx().stop()?;
/// pe.progress();
/// server.destroy().map_err(|refused| refused.error)?;
/// # Ok::<(), doca_core::Error>(())
/// ```
pub type Server = Cc<ServerRole>;

/// `struct doca_cc_client`: connects a host function to a named server on its DPU.
///
/// Start is asynchronous: `start` returns `IN_PROGRESS` and the client is Running once the
/// server accepted it (it waits quietly while the server is not there yet).
///
/// ```
/// # let _fabric = doca_link::doctest::PrivateFabric::new();
/// use doca_cc::{Client, Server};
/// use doca_core::{open_device_rep_with_pci, open_device_with_pci, CtxState, Error, Pe, RepFilter};
///
/// # let name = format!("doc-client-{}", std::process::id());
/// # let dpu = open_device_with_pci("03:00.0", None)?;
/// # let rep = open_device_rep_with_pci(&dpu, RepFilter::NET, "b1:00.0")?;
/// # let server = Server::create(&dpu, &rep, &name)?;
/// let pe = Pe::create()?;
/// # pe.connect_ctx(&server.as_ctx())?;
/// # server.event_msg_recv_register(|msg, _| assert_eq!(msg, b"ping"))?;
/// # server.event_connection_register(|_, _| {}, |_, _| {})?;
/// # server.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 4)?;
/// # server.as_ctx().start()?;
/// let host = open_device_with_pci("b1:00.0", None)?;
/// let client = Client::create(&host, &name)?;
/// pe.connect_ctx(&client.as_ctx())?;
/// client.event_msg_recv_register(|_msg, _conn| {})?;
/// client.task_send_set_conf(|_, _, _| {}, |_, _, _| {}, 16)?;
/// assert_eq!(client.as_ctx().start(), Err(Error::InProgress));
/// for _ in 0..1_000_000 {
///     if client.as_ctx().state() == CtxState::Running {
///         break;
///     }
///     pe.progress();
/// }
/// let conn = client.get_connection()?;
/// client.task_send_alloc_init(&conn, b"ping")?.submit().map_err(|r| r.error)?;
/// # Ok::<(), doca_core::Error>(())
/// ```
pub type Client = Cc<ClientRole>;

/// The role-specific part of a side.
pub(crate) enum RoleState {
    Server(ServerState),
    Client(ClientState),
}

/// The library part of a server or client context.
#[doc(hidden)] // named by the task payload (`TaskPayload::Lib`); reached through the handle types
pub struct SideOps {
    pub(crate) side: Side,
    pub(crate) role: RoleState,
    /// The C names the application uses for this context's functions (in log lines).
    c_names: std::cell::Cell<CNames>,
    /// Connections closed by `stop`, reported (disconnection, expired consumers) on the
    /// next progress: callbacks never run inside stop. The context stays Stopping until then.
    stopped: RefCell<Vec<Connection>>,
}

/// A comm-channel context: a [`Server`] or a [`Client`]. The methods without a role are the
/// `doca_cc_server_*` / `doca_cc_client_*` functions both have.
pub struct Cc<R> {
    ctx: Rc<CtxCell<SideOps>>,
    role: PhantomData<R>,
}

impl<R> std::fmt::Debug for Cc<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let side = &self.ctx.ops().side;
        write!(f, "{side} on {:?} ({:?})", side.dev, self.ctx.core().state())
    }
}

fn create_ops(dev: &Dev, name: &str, role: RoleState) -> Result<Rc<CtxCell<SideOps>>> {
    caps::check_name(dev.as_devinfo(), name)?;
    let limits = Side::default_limits(dev)?;
    let is_server = matches!(role, RoleState::Server(_));
    let rep = match &role {
        RoleState::Server(s) => Some(s.rep.as_devinfo().pci_addr()),
        RoleState::Client(_) => None,
    };
    let cell = CtxCell::new(|weak: &Weak<CtxCell<SideOps>>| SideOps {
        side: Side::new(is_server, dev, name, weak.clone(), TaskPool::new(weak.clone()), limits, rep),
        role,
        stopped: RefCell::new(Vec::new()),
        c_names: std::cell::Cell::new(CNames::Cc),
    });
    cell.core().show_state_in(cell.ops().side.status_entry());
    Ok(cell)
}

/// Which of DOCA's C names an application uses for a comm-channel context, so that a log
/// line tells it the function it called: `doca_cc_*` (2.5/2.6) or `doca_comch_*` (2.7+).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CNames {
    /// `doca_cc_server_*`, `doca_cc_client_*` (the default).
    #[default]
    Cc,
    /// `doca_comch_server_*`, `doca_comch_client_*`.
    Comch,
}

impl CNames {
    /// The C name of the `what` function (`task_send_set_conf`…) of a `role` (`server`,
    /// `client`) context. The connection events are `event_connection_register` in 2.5/2.6
    /// and `event_connection_status_changed_register` in 2.7+.
    ///
    /// ```
    /// # let _fabric = doca_link::doctest::PrivateFabric::new();
    /// use doca_cc::CNames;
    /// assert_eq!(CNames::Cc.of("server", "task_send_set_conf"), "doca_cc_server_task_send_set_conf");
    /// assert_eq!(
    ///     CNames::Comch.of("server", "event_connection_register"),
    ///     "doca_comch_server_event_connection_status_changed_register"
    /// );
    /// ```
    pub fn of(self, role: &str, what: &str) -> String {
        match (self, what) {
            (CNames::Cc, _) => format!("doca_cc_{role}_{what}"),
            (CNames::Comch, "event_connection_register") => {
                format!("doca_comch_{role}_event_connection_status_changed_register")
            }
            (CNames::Comch, _) => format!("doca_comch_{role}_{what}"),
        }
    }
}

impl<R> Cc<R> {
    fn from_ctx(ctx: Rc<CtxCell<SideOps>>) -> Cc<R> {
        Cc { ctx, role: PhantomData }
    }

    /// Which C names this context's log lines give for the functions the application calls
    /// (the C ABI's `doca_comch_*_create` sets [`CNames::Comch`]).
    pub fn set_c_names(&self, names: CNames) {
        self.ctx.ops().c_names.set(names);
    }

    fn side(&self) -> &Side {
        &self.ctx.ops().side
    }

    fn core(&self) -> &CtxCore {
        self.ctx.core()
    }

    /// `doca_cc_server_as_ctx` / `doca_cc_client_as_ctx`.
    pub fn as_ctx(&self) -> Ctx {
        Ctx::from(self.ctx.clone())
    }

    /// `doca_cc_server_destroy` / `doca_cc_client_destroy`: Idle only (`IN_USE`, and the
    /// context back).
    pub fn destroy(self) -> Result<(), Refused<Self>> {
        if let Err(e) = self.side().release(self.core()) {
            return Err(Refused::new(e, self));
        }
        match self.core().destroy() {
            Ok(()) => Ok(()),
            Err(e) => Err(Refused::new(e, self)),
        }
    }

    /// `doca_cc_server_set_max_msg_size` / `doca_cc_client_set_max_msg_size`: Idle only; 0
    /// or above the capability → `INVALID_VALUE`. Server and client must use the same size.
    pub fn set_max_msg_size(&self, size: u32) -> Result<()> {
        let cap = caps::max_msg_size(self.side().dev.as_devinfo())?;
        self.side().set_bounded(self.core(), &self.side().max_msg_size, "set_max_msg_size", size, cap)
    }

    /// `doca_cc_server_get_max_msg_size` / `doca_cc_client_get_max_msg_size`.
    pub fn max_msg_size(&self) -> u32 {
        self.side().max_msg_size.get()
    }

    /// `doca_cc_server_set_recv_queue_size` / `doca_cc_client_set_recv_queue_size`: messages
    /// the peer can queue to this side before its sends wait. Idle only; 0 or above the
    /// capability → `INVALID_VALUE`.
    pub fn set_recv_queue_size(&self, size: u32) -> Result<()> {
        let cap = caps::max_recv_queue_size(self.side().dev.as_devinfo())?;
        self.side().set_bounded(self.core(), &self.side().recv_queue_size, "set_recv_queue_size", size, cap)
    }

    /// `doca_cc_server_get_recv_queue_size` / `doca_cc_client_get_recv_queue_size`.
    pub fn recv_queue_size(&self) -> u32 {
        self.side().recv_queue_size.get()
    }

    /// `doca_cc_server_get_device` / `doca_cc_client_get_device`.
    pub fn device(&self) -> Dev {
        self.side().dev.clone()
    }

    /// `doca_cc_server_task_send_set_conf` / `doca_cc_client_task_send_set_conf`: Idle only;
    /// more than the capability → `INVALID_VALUE`.
    pub fn task_send_set_conf(
        &self,
        completion: impl FnMut(SendTask, Data, Data) + 'static,
        error: impl FnMut(SendTask, Data, Data) + 'static,
        num_send_tasks: u32,
    ) -> Result<()> {
        self.side().set_send_conf(self.core(), completion, error, num_send_tasks)
    }

    /// `doca_cc_server_task_send_alloc_init` / `doca_cc_client_task_send_alloc_init`: a task
    /// sending `msg` (copied) on `peer`. Not running → `BAD_STATE`; longer than the max
    /// message size or a connection of another context → `INVALID_VALUE`; a connection of
    /// this one that closed → `NOT_CONNECTED`; pool empty → `NO_MEMORY`.
    pub fn task_send_alloc_init(&self, peer: &Connection, msg: &[u8]) -> Result<SendTask> {
        self.core().require_running("task_send_alloc_init")?;
        self.side().check_send(peer, msg)?;
        // From the context's own handle: the task's count on it is taken without upgrading
        // the pool's link.
        let task = TaskPool::alloc_in(&self.ctx, Data::NONE, |p: &mut SendPayload| {
            p.fill(peer, msg);
            Ok(())
        })?;
        Ok(SendTask(task))
    }

    /// `doca_cc_server_event_msg_recv_register` / `doca_cc_client_event_msg_recv_register`:
    /// Idle only.
    pub fn event_msg_recv_register(&self, cb: impl FnMut(&[u8], &Connection) + 'static) -> Result<()> {
        self.core().require_idle("event_msg_recv_register")?;
        self.side().msg_cb.set(Box::new(cb));
        Ok(())
    }

    /// `doca_cc_server_event_consumer_register` / `doca_cc_client_event_consumer_register`:
    /// the peer's new and expired consumers. Idle only.
    pub fn event_consumer_register(
        &self,
        new_consumer: impl FnMut(&Connection, u32) + 'static,
        expired_consumer: impl FnMut(&Connection, u32) + 'static,
    ) -> Result<()> {
        self.core().require_idle("event_consumer_register")?;
        self.side().new_consumer_cb.set(Box::new(new_consumer));
        self.side().expired_consumer_cb.set(Box::new(expired_consumer));
        Ok(())
    }
}

impl Cc<ServerRole> {
    fn server(&self) -> &ServerState {
        match &self.ctx.ops().role {
            RoleState::Server(s) => s,
            RoleState::Client(_) => unreachable!("a Cc<ServerRole> is built with a server state"),
        }
    }

    /// `doca_cc_server_create`: a server named `name` on DPU device `dev` for the host
    /// function `rep` stands for. A host device → `NOT_SUPPORTED`; a representor of another
    /// device or a bad name → `INVALID_VALUE`.
    pub fn create(dev: &Dev, rep: &DevRep, name: &str) -> Result<Server> {
        if caps::server_is_supported(dev.as_devinfo()).is_err() {
            bail!(
                Error::NotSupported,
                "cc server on {dev:?}: servers run on the DPU device, not a host function"
            );
        }
        if rep.dev() != dev {
            bail!(Error::InvalidValue, "cc server: {rep:?} is not a representor of {dev:?}");
        }
        Ok(Cc::from_ctx(create_ops(dev, name, RoleState::Server(ServerState::new(rep)))?))
    }

    /// `doca_cc_server_get_device_repr`.
    pub fn device_rep(&self) -> DevRep {
        self.server().rep.clone()
    }

    /// The server name.
    pub fn name(&self) -> &str {
        &self.side().name
    }

    /// `doca_cc_server_event_connection_register`: Idle only.
    pub fn event_connection_register(
        &self,
        connect: impl FnMut(&Connection, bool) + 'static,
        disconnect: impl FnMut(&Connection, bool) + 'static,
    ) -> Result<()> {
        self.core().require_idle("event_connection_register")?;
        self.server().connect_cb.set(Box::new(connect));
        self.server().disconnect_cb.set(Box::new(disconnect));
        Ok(())
    }

    /// `doca_comch_server_disconnect` (comch era): closes the connection; its pending sends
    /// fail and the disconnection callback follows on the next progress. Not a connection of
    /// this server → `NOT_FOUND`; a connection with consumers or producers of this side
    /// (created on it and not destroyed) → `IN_USE` (destroy them first).
    pub fn disconnect(&self, conn: &Connection) -> Result<()> {
        self.side().disconnect(conn)
    }

    /// The connections currently established (an extension: DOCA reports them only
    /// through the connection callback).
    pub fn connections(&self) -> Vec<Connection> {
        self.side().connections()
    }

    /// Connections currently established.
    pub fn num_connections(&self) -> usize {
        self.side().num_links()
    }
}

impl Cc<ClientRole> {
    /// `doca_cc_client_create`: a client on host function `dev` for the server `name`. A
    /// DPU device → `NOT_SUPPORTED`; a bad name → `INVALID_VALUE`.
    pub fn create(dev: &Dev, name: &str) -> Result<Client> {
        if caps::client_is_supported(dev.as_devinfo()).is_err() {
            bail!(
                Error::NotSupported,
                "cc client on {dev:?}: clients run on a host function, not the DPU device"
            );
        }
        Ok(Cc::from_ctx(create_ops(dev, name, RoleState::Client(ClientState::new()))?))
    }

    /// The name of the server this client connects to.
    pub fn server_name(&self) -> &str {
        &self.side().name
    }

    /// `doca_cc_client_get_connection`: the connection once Running (`BAD_STATE` before).
    pub fn get_connection(&self) -> Result<Connection> {
        match self.side().connections().pop() {
            Some(conn) if self.core().state() != CtxState::Idle => Ok(conn),
            _ => Err(doca_core::fail!(
                Error::BadState,
                "cc client get_connection: not connected (state {:?})",
                self.core().state()
            )),
        }
    }
}

impl Connection {
    #[inline]
    fn owner<R>(&self, server: bool, what: &str) -> Result<Cc<R>> {
        let any = self.owner_ctx(server, what)?;
        let ctx = any.downcast::<CtxCell<SideOps>>().map_err(|_| Error::Unexpected)?;
        Ok(Cc::from_ctx(ctx))
    }

    /// `doca_cc_server_get_server_ctx`: the server this connection belongs to. A client's
    /// connection → `INVALID_VALUE`; called off the server's thread → `NOT_PERMITTED`; a
    /// connection the server already let go → `NOT_FOUND`.
    pub fn server(&self) -> Result<Server> {
        self.owner(true, "doca_cc_server_get_server_ctx")
    }

    /// `doca_cc_client_get_client_ctx`: the client this connection belongs to (codes as for
    /// [`Connection::server`]).
    pub fn client(&self) -> Result<Client> {
        self.owner(false, "doca_cc_client_get_client_ctx")
    }
}

impl SideOps {
    /// The control poll: one look at the control set, then the role's sockets, the links'
    /// control packets, and the links that ended.
    fn poll_ctrl(&self, core: &CtxCore, now: &Now<'_>) -> bool {
        let side = &self.side;
        let mut role_ready = false;
        let mut events = Vec::new();
        for t in side.ctrl_ready() {
            match token::kind(t) {
                token::LINK => side.read_link_ctrl(token::key(t), &mut events),
                token::BELL => side.drain_link_bell(token::key(t)),
                _ => role_ready = true,
            }
        }
        // The events wait beside those a panicking callback left until they are delivered
        // below: the role's poll runs callbacks too (a server's connection callback).
        side.keep_events(events);
        let mut any = match &self.role {
            RoleState::Server(s) => core.state() == CtxState::Running && s.poll(side, now.get(), role_ready),
            RoleState::Client(c) => c.poll(side, core, now.get()),
        };
        any |= side.deliver_consumer_events();
        // The links that ended join the closed connections whose reports are due (kept first
        // if a panicking callback cut a report short or kept it from running), one by one, as
        // each is wound up: a message callback run while one is wound up may panic too.
        side.wind_up();
        let closed = side.take_closing_left();
        if !closed.is_empty() {
            any |= self.report_all(core, closed, |rest| side.keep_closing(rest));
        }
        any
    }

    /// Reports each of `conns`; if a callback panics, `keep` gets those not reached (their
    /// reports are not lost with the unwinding). Whether there was any.
    fn report_all(
        &self,
        core: &CtxCore,
        conns: Vec<Connection>,
        keep: impl FnMut(&mut std::vec::IntoIter<Connection>),
    ) -> bool {
        let any = !conns.is_empty();
        let mut rest = Unreached::new(conns, keep);
        for conn in rest.items.by_ref() {
            self.report(core, conn);
        }
        any
    }

    /// Reports a closed connection: expired consumers, then the server's disconnection
    /// callback (a client leaves Running).
    fn report(&self, core: &CtxCore, conn: Connection) {
        self.side.report_closed(conn, |conn| match &self.role {
            RoleState::Server(s) => s.link_down(conn),
            RoleState::Client(c) => c.link_down(core, conn),
        });
    }

    fn next_deadline(&self) -> Option<std::time::Instant> {
        match &self.role {
            RoleState::Server(s) => s.next_deadline(),
            RoleState::Client(c) => c.next_deadline(),
        }
    }

    /// A pass with something to do (or no connection): connections closed by a stop
    /// reported, then the links' work and the cadence's look at the control sockets.
    #[inline(never)]
    fn busy_pass(&self, core: &CtxCore, now: &Now<'_>) -> bool {
        if !self.stopped.borrow().is_empty() {
            let stopped = std::mem::take(&mut *self.stopped.borrow_mut());
            return self.report_all(core, stopped, |rest| {
                if let Ok(mut stopped) = self.stopped.try_borrow_mut() {
                    stopped.extend(rest);
                }
            });
        }
        let mut any = self.side.progress_links(core);
        // Without an established connection, every call may look (time-limited only): a
        // rarely progressed server or client is served at once, not after CTRL_EVERY calls.
        if self.side.turn(now, self.side.num_links() != 0) {
            any |= self.poll_ctrl(core, now);
        }
        any
    }
}

impl CtxOps for SideOps {
    fn kind(&self) -> &'static str {
        self.side.kind
    }

    /// The mandatory configuration (DOCA Comm Channel guide) is checked first:
    /// `INVALID_VALUE`, naming what is missing.
    fn start(&self, core: &CtxCore) -> Result<Started> {
        let side = &self.side;
        let mut missing: Vec<String> = Vec::new();
        let role = if matches!(self.role, RoleState::Server(_)) { "server" } else { "client" };
        let names = self.c_names.get();
        if !side.pool.is_configured() {
            missing.push(format!("the send task ({})", names.of(role, "task_send_set_conf")));
        }
        if !side.msg_cb.is_set() {
            missing
                .push(format!("the message receive event ({})", names.of(role, "event_msg_recv_register")));
        }
        if let RoleState::Server(s) = &self.role {
            if !s.connect_cb.is_set() || !s.disconnect_cb.is_set() {
                missing
                    .push(format!("the connection events ({})", names.of(role, "event_connection_register")));
            }
        }
        if !missing.is_empty() {
            bail!(Error::InvalidValue, "{side}: start: call {} first", missing.join(", "));
        }
        self.side.prepare(core)?;
        match &self.role {
            RoleState::Server(s) => {
                s.start(&self.side)?;
                Ok(Started::Running)
            }
            RoleState::Client(c) => {
                c.start(core.now());
                Ok(Started::Starting)
            }
        }
    }

    fn stop(&self, _core: &CtxCore) {
        match &self.role {
            RoleState::Server(s) => s.stop(),
            RoleState::Client(c) => c.stop(),
        }
        let server = matches!(self.role, RoleState::Server(_));
        for conn in self.side.close_all() {
            // A server reports every connection (its disconnection callback); a client only
            // one whose peer had consumers (their expired events).
            if server || conn.fast().has_announced() {
                self.stopped.borrow_mut().push(conn);
            } else {
                conn.release_owner();
            }
        }
    }

    fn is_busy(&self, _core: &CtxCore) -> bool {
        !self.stopped.borrow().is_empty() || self.side.has_leftovers()
    }

    #[inline]
    fn progress(&self, core: &CtxCore, now: &Now<'_>) -> bool {
        // A pass of a connected side whose links are all quiet: the rings' looks and a few
        // loads, then the cadence (no call, no copy of the list). Connections closed by a
        // stop wait only while the table is empty (stop empties it; nothing adds to it
        // before the next progress reports them), so they need no look here.
        if self.side.links_quiet() {
            if self.side.turn(now, true) {
                return self.poll_ctrl(core, now);
            }
            return false;
        }
        self.busy_pass(core, now)
    }

    fn request_notification(&self, core: &CtxCore) -> bool {
        let left = self.side.has_leftovers();
        if left {
            // (What a panicking callback left: the next pass looks at once.)
            self.side.soon();
        }
        left | !self.stopped.borrow().is_empty() | self.side.arm(core, self.next_deadline())
    }

    fn clear_notification(&self, _core: &CtxCore) {
        self.side.disarm();
    }
}

impl TaskPayload for SendPayload {
    type Lib = SideOps;
    const FAULT_KIND: &'static str = "cc.send";
}

impl TaskLib<SendPayload> for SideOps {
    fn pool(&self) -> &TaskPool<SendPayload> {
        &self.side.pool
    }

    fn submit(&self, core: &CtxCore, task: TaskId) -> Result<()> {
        self.side.submit(core, task, true)
    }

    fn submit_ex(&self, core: &CtxCore, task: TaskId, _flags: doca_core::TaskSubmitFlags) -> Result<()> {
        self.side.submit(core, task, false)
    }
}
