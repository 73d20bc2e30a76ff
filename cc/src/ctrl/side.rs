//! What a server and a client share: settings, the send task pool, the receive and consumer
//! callbacks, the table of established connections ([`Link`]s), the control set of
//! sockets, and the busy path over the links. The role-specific parts (listening,
//! connecting) are [`super::server`] and [`super::client`]; the public face is
//! [`super::api`].
//!
//! Busy path (every progress): each link delivers what its receive ring holds, writes the
//! sends waiting for room, and wakes a sleeping peer — no syscall. Control path (when the
//! [`Cadence`] says so, or after a wake-up): one `epoll_wait(0)` on the control set, then
//! the role's sockets, the links' control packets, the doorbells that rang (each link has
//! its own, in the control set, drained only when it rang), and the winding up of links
//! that ended.

use doca_link::discard::PeerFd;
use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::Instant;

use doca_core::{bail, fail, CbSlot, CtxCore, Data, Dev, Error, Result, TaskId, TaskPool};
use doca_link::notify::{Doorbell, EpollSet, Timer, Watched};
use slab::Slab;
use smallvec::SmallVec;

use super::link::{Link, RX_BATCH};
use super::send::{SendPayload, SendTask};
use crate::caps;
use crate::conn::registry::PeerEvent;
use crate::conn::{Connection, Owner, ThreadBound};
use crate::proto::state::ConnState;
use crate::proto::Ctrl;
use crate::transport::budget::ConnBudget;
use crate::transport::cadence::{Cadence, PassTime, CTRL_EVERY};
use crate::transport::channel::Channel;
use crate::transport::throttle::{held_back, Throttle};
use crate::transport::token;

/// Kinds of throttled log line beyond the protocol violations (0): a refused consumer, by
/// code.
const LOG_REFUSED: u32 = 100;

/// Control packets read per connection per control poll, at most.
pub(crate) const CTRL_BATCH: usize = 64;

/// Default receive queue size when none is set.
pub const DEFAULT_RECV_QUEUE_SIZE: u32 = 64;

/// `doca_cc_event_msg_recv_cb_t`: the message (valid only during the call) and the
/// connection it came on.
pub type MsgRecvCb = dyn FnMut(&[u8], &Connection);
/// `doca_cc_event_consumer_cb_t`: the connection and the remote consumer's id.
pub type ConsumerCb = dyn FnMut(&Connection, u32);

/// A remote consumer appeared (`new`) or expired on a connection.
pub(crate) struct ConsumerEvent {
    pub(crate) new: bool,
    pub(crate) conn: Connection,
    pub(crate) id: u32,
}

/// The descriptors a started side keeps: its control set (which holds the links' sockets and
/// doorbells) and its timer, each registered in the progress engine's notification set.
struct Resources {
    ctrl: EpollSet,
    _ctrl_watch: Watched<EpollSet>,
    timer: Watched<Timer>,
    /// Whether `timer` is armed and not yet seen expired: a wake-up reads it only then.
    timer_armed: Cell<bool>,
}

/// A connection that completed its handshake, ready to become a [`Link`].
pub(crate) struct NewLink {
    pub(crate) id: u64,
    pub(crate) pid: i32,
    pub(crate) sock: Watched<PeerFd>,
    pub(crate) channel: Channel,
    /// This side's doorbell for it (the peer holds the other end).
    pub(crate) bell: Doorbell,
    pub(crate) state: ConnState,
    /// What it holds of its peer process's budget.
    pub(crate) budget: Option<ConnBudget>,
}

/// The shared part of a server or client.
pub(crate) struct Side {
    /// `"cc_server"` or `"cc_client"`.
    pub(crate) kind: &'static str,
    pub(crate) dev: Dev,
    pub(crate) name: String,
    pub(crate) max_msg_size: Cell<u32>,
    pub(crate) recv_queue_size: Cell<u32>,
    pub(crate) pool: TaskPool<SendPayload>,
    pub(crate) msg_cb: CbSlot<MsgRecvCb>,
    pub(crate) new_consumer_cb: CbSlot<ConsumerCb>,
    pub(crate) expired_consumer_cb: CbSlot<ConsumerCb>,
    links: RefCell<Slab<Rc<Link>>>,
    /// The links, copied on change: the busy path walks it without borrowing the table.
    active: RefCell<Rc<[Rc<Link>]>>,
    res: RefCell<Option<Resources>>,
    cadence: Cadence,
    /// Passes of this side since it was made: a linked side asks its cadence only every
    /// [`CTRL_EVERY`]th pass, or when a look is due.
    tick: Cell<u32>,
    /// A look at the control sockets is due on the next pass: the cadence's own flag, which
    /// [`Side::soon`] sets beside it and [`Side::turn`] clears with it (the cadence keeps it
    /// private), read here without a call.
    look_due: Cell<bool>,
    /// Peer-caused log lines, at most one a second.
    throttle: RefCell<Throttle>,
    /// Consumer events not delivered yet: read from the control packets at this look, or cut
    /// off from their batch by a panicking callback (delivered first at the next look). See
    /// [`Side::deliver_consumer_events`].
    events_left: RefCell<Vec<ConsumerEvent>>,
    /// Closed connections whose report a panicking callback cut short, or did not reach:
    /// reported (again) at the next look, before the connections that close then.
    closing_left: RefCell<Vec<Connection>>,
    /// The context this side belongs to (what its connections report as their owner).
    owner: Weak<dyn Any>,
    /// This side's identity, as its connections record it (its context's address).
    side_id: usize,
    is_server: bool,
    /// Its row in the process's status page (`doca_emu`), shared with its links.
    status: Rc<doca_core::status::Entry>,
    /// The status-page number of the engine it was started on (its connections' rows say it).
    engine: Cell<u64>,
    /// Inside [`Side::progress_links`] before its wake-up check: a flushing send submitted
    /// now (from a receive callback) is covered by that check. (Left set by a callback that
    /// panics through the walk, until the next walk ends: sends meanwhile wait for that
    /// walk's check, as sends kept back by `doca_task_submit_ex` do.)
    in_links_pass: Cell<bool>,
    /// A flushing send was submitted during that window: the pass's check must run.
    wake_owed: Cell<bool>,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", self.kind, self.name)
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        // Connections still in the table (a side dropped without a stop) leave it with the
        // side: a handle kept elsewhere no longer counts as listed.
        for (_, link) in self.links.get_mut().iter() {
            link.conn.set_listed(false);
        }
    }
}

/// The items a loop over `items` has not reached when a callback in it panics: the drop hands
/// them to `keep` (a loop that ends normally leaves none), so that they are not lost with the
/// unwinding.
pub(crate) struct Unreached<T, F: FnMut(&mut std::vec::IntoIter<T>)> {
    pub(crate) items: std::vec::IntoIter<T>,
    keep: F,
}

impl<T, F: FnMut(&mut std::vec::IntoIter<T>)> Unreached<T, F> {
    pub(crate) fn new(items: Vec<T>, keep: F) -> Self {
        Unreached { items: items.into_iter(), keep }
    }
}

impl<T, F: FnMut(&mut std::vec::IntoIter<T>)> Drop for Unreached<T, F> {
    fn drop(&mut self) {
        if self.items.len() > 0 {
            (self.keep)(&mut self.items);
        }
    }
}

/// A closed connection's report under way, if a callback in it panics: while its expired
/// consumers' events are being delivered, the connection is reported again at the next look
/// (the events not delivered yet come first; `down` and the release follow); once the events
/// are delivered, `down`'s own panic counts as its report and only the release is left.
struct ClosingCut<'a> {
    side: &'a Side,
    conn: &'a Connection,
    down_due: bool,
}

impl Drop for ClosingCut<'_> {
    fn drop(&mut self) {
        if self.down_due {
            self.side.keep_closing(std::iter::once(self.conn.clone()));
        } else {
            self.conn.release_owner();
        }
    }
}

impl Side {
    /// A side named `name` on `dev`, with the capability defaults. `owner` is the context
    /// being built; `pool` its send pool (made for that context).
    pub(crate) fn new(
        is_server: bool,
        dev: &Dev,
        name: &str,
        owner: Weak<dyn Any>,
        pool: TaskPool<SendPayload>,
        (max_msg_size, recv_queue_size): (u32, u32),
        rep: Option<doca_core::PciAddr>,
    ) -> Side {
        let kind = if is_server { "cc_server" } else { "cc_client" };
        let status = doca_core::status::Entry::claim(doca_core::status::Identity {
            kind,
            dev: Some(dev.as_devinfo().pci_addr()),
            rep,
            name,
            conn_id: 0,
        });
        Side {
            kind: if is_server { "cc_server" } else { "cc_client" },
            dev: dev.clone(),
            name: name.to_string(),
            max_msg_size: Cell::new(max_msg_size),
            recv_queue_size: Cell::new(recv_queue_size),
            pool,
            msg_cb: CbSlot::empty(),
            new_consumer_cb: CbSlot::empty(),
            expired_consumer_cb: CbSlot::empty(),
            links: RefCell::new(Slab::new()),
            active: RefCell::new(Rc::from(Vec::new())),
            res: RefCell::new(None),
            cadence: Cadence::new(),
            tick: Cell::new(0),
            look_due: Cell::new(true),
            throttle: RefCell::new(Throttle::new()),
            events_left: RefCell::new(Vec::new()),
            closing_left: RefCell::new(Vec::new()),
            side_id: owner.as_ptr().cast::<()>() as usize,
            owner,
            is_server,
            status: Rc::new(status),
            engine: Cell::new(0),
            in_links_pass: Cell::new(false),
            wake_owed: Cell::new(false),
        }
    }

    /// The default (max message size, receive queue size) on `dev`.
    pub(crate) fn default_limits(dev: &Dev) -> Result<(u32, u32)> {
        let info = dev.as_devinfo();
        Ok((caps::max_msg_size(info)?, DEFAULT_RECV_QUEUE_SIZE.min(caps::max_recv_queue_size(info)?)))
    }

    /// Stores `size` in `cell` if it is in `1..=cap`, else `INVALID_VALUE`. Idle only.
    pub(crate) fn set_bounded(
        &self,
        core: &CtxCore,
        cell: &Cell<u32>,
        what: &str,
        size: u32,
        cap: u32,
    ) -> Result<()> {
        core.require_idle(what)?;
        if size == 0 || size > cap {
            bail!(Error::InvalidValue, "{self}: {what} {size} outside 1..={cap} (exceeded capability)");
        }
        cell.set(size);
        Ok(())
    }

    /// The send task configuration (`*_task_send_set_conf`).
    pub(crate) fn set_send_conf(
        &self,
        core: &CtxCore,
        completion: impl FnMut(SendTask, Data, Data) + 'static,
        error: impl FnMut(SendTask, Data, Data) + 'static,
        num_tasks: u32,
    ) -> Result<()> {
        let cap = caps::max_send_tasks(self.dev.as_devinfo())?;
        if num_tasks > cap {
            bail!(Error::InvalidValue, "{self}: {num_tasks} send tasks exceed the capability {cap}");
        }
        let (mut c, mut e) = (completion, error);
        self.pool.set_conf(
            core,
            Box::new(move |t, td, cd| c(SendTask(t), td, cd)),
            Box::new(move |t, td, cd| e(SendTask(t), td, cd)),
            num_tasks,
        )
    }

    /// Its row on the status page (where its context's state is shown too).
    pub(crate) fn status_entry(&self) -> &doca_core::status::Entry {
        &self.status
    }

    /// At start: task slots with message buffers; the control set and the timer, registered
    /// with the progress engine (once: they live until destroy).
    pub(crate) fn prepare(&self, core: &CtxCore) -> Result<()> {
        // (Empty unless a stop raced a panicking callback: a new run starts without them.)
        self.events_left.borrow_mut().clear();
        self.closing_left.borrow_mut().clear();
        let max = self.max_msg_size.get() as usize;
        self.pool.prepare(|| SendPayload::with_capacity(max));
        if self.res.borrow().is_none() {
            let ctrl = EpollSet::new()?;
            let res = Resources {
                _ctrl_watch: core.watch(ctrl.clone())?,
                ctrl,
                timer: core.watch(Timer::new()?)?,
                timer_armed: Cell::new(false),
            };
            *self.res.borrow_mut() = Some(res);
        }
        self.soon();
        self.engine.set(core.engine_status_id());
        self.status.set_engine(self.engine.get());
        Ok(())
    }

    /// The shared part of destroy: `IN_USE` unless Idle; else closes the descriptors.
    pub(crate) fn release(&self, core: &CtxCore) -> Result<()> {
        if core.state() != doca_core::CtxState::Idle {
            bail!(Error::InUse, "{self} destroy: stop it first (state {:?})", core.state());
        }
        self.res.borrow_mut().take();
        Ok(())
    }

    /// The control set (`BAD_STATE` before the first start).
    pub(crate) fn ctrl(&self) -> Result<EpollSet> {
        match self.res.borrow().as_ref() {
            Some(r) => Ok(r.ctrl.clone()),
            None => Err(fail!(Error::BadState, "{self}: not started")),
        }
    }

    /// `*_task_send_alloc_init`'s checks before a task is taken (the caller takes it from
    /// the pool, filled by [`SendPayload::fill`]). Longer than the max message size →
    /// `INVALID_VALUE`; a connection of another context → `INVALID_VALUE`; a connection of
    /// this one that is gone → `NOT_CONNECTED`.
    pub(crate) fn check_send(&self, conn: &Connection, msg: &[u8]) -> Result<()> {
        let max = self.max_msg_size.get() as usize;
        if msg.len() > max {
            // DOCA's own wording (libdoca_cc), then the size asked for.
            bail!(
                Error::InvalidValue,
                "Msg size larger than maximal msg size which is {max}. (asked: {} bytes)",
                msg.len()
            );
        }
        // In this side's table: its own connection, listed (one load each, no table look).
        if conn.side() != self.side_id() || !conn.is_listed() {
            if conn.side() == self.side_id() {
                bail!(Error::NotConnected, "{self}: connection #{} is closed", conn.id());
            }
            bail!(Error::InvalidValue, "{self}: the connection belongs to another server or client");
        }
        Ok(())
    }

    /// This side's identity, as its connections record it.
    fn side_id(&self) -> usize {
        self.side_id
    }

    /// Task submission: written now if the ring has room and nothing waits before it, else
    /// queued; a connection that is gone fails it (`CONNECTION_RESET`, delivered on the next
    /// progress). A flushing submission (`doca_task_submit`) also wakes the peer if it
    /// sleeps: as hardware posts a send at once, the message must reach a sleeping peer even
    /// when this application does not progress its engine afterwards (it sleeps, computes,
    /// or blocks elsewhere, as NVIDIA's sync_event sample does after sending its blob).
    /// Outside this side's pass that is one load of the peer's flag, no fence (a fence per
    /// send halved the pipelined rate): a peer asleep before the send wakes at once, and one
    /// arming in the same instant is found by the fenced check this side still owes, at its
    /// next pass or sleep. A send from a receive callback leaves it all to the end of the
    /// pass, one fence for the batch, and so does a send kept back by `doca_task_submit_ex`
    /// without the flush flag. A peer that asked for it (a link stand-in) gets the fenced
    /// check at each flushing send.
    pub(crate) fn submit(&self, core: &CtxCore, id: TaskId, flush: bool) -> Result<()> {
        // One look at the slot: its connection's link is found and the message written while
        // the payload is at hand (the link borrowed from the table: nothing in a write
        // changes the table).
        let links = self.links.borrow();
        let found = self.pool.with_payload(id, |p| {
            let conn = p.conn.as_ref()?;
            let status = match links.get(conn.key()).filter(|l| l.conn == *conn) {
                Some(link) => {
                    let status = link.submit(id, p);
                    if flush && matches!(status, Some(Ok(()))) {
                        if link.peer_wants_eager() {
                            link.wake_peer();
                        } else if self.in_links_pass.get() {
                            self.wake_owed.set(true);
                        } else {
                            link.wake_peer_asleep_now();
                        }
                    }
                    status
                }
                None => Some(Err(Error::ConnectionReset)),
            };
            Some(status)
        });
        drop(links);
        let Some(status) = found.flatten() else {
            bail!(Error::InvalidValue, "{self}: a send task without its connection");
        };
        if let Some(status) = status {
            self.pool.finish_in(core, id, status);
        }
        Ok(())
    }

    /// Makes the next pass look at the control sockets (something is known to wait, or the
    /// side just woke up).
    pub(crate) fn soon(&self) {
        self.look_due.set(true);
        self.cadence.soon();
    }

    /// Whether this pass looks at the control sockets: [`Cadence::turn`] for a side with
    /// links, [`Cadence::turn_unlinked`] for one without. A linked side's pass that has no
    /// look due and is not a [`CTRL_EVERY`]th one is decided here with two loads (no call,
    /// no clock); the others ask the cadence, which looks when told to or when its period
    /// passed — as `turn` itself does at those calls.
    #[inline]
    pub(crate) fn turn(&self, now: &impl PassTime, linked: bool) -> bool {
        let t = self.tick.get().wrapping_add(1);
        self.tick.set(t);
        if linked && !self.look_due.get() && t % CTRL_EVERY != 0 {
            return false;
        }
        self.ask_cadence(now)
    }

    #[inline(never)]
    fn ask_cadence(&self, now: &impl PassTime) -> bool {
        self.look_due.set(false);
        self.cadence.turn_unlinked(now)
    }

    /// Whether this side has established connections and every one is quiet
    /// ([`Link::quiet`]): then [`Side::progress_links`] would do nothing, and the pass is
    /// the rings' looks (no copy of the list, no call).
    #[inline]
    pub(crate) fn links_quiet(&self) -> bool {
        let active = self.active.borrow();
        !active.is_empty() && active.iter().all(|link| link.quiet())
    }

    /// The busy path: received messages, queued sends, wake-ups. Asks for a control poll
    /// when a link is ending.
    pub(crate) fn progress_links(&self, core: &CtxCore) -> bool {
        // Callbacks run from here on (they may change the table): the walk holds a copy.
        let active = self.active.borrow().clone();
        let (mut any, mut check) = (false, false);
        self.in_links_pass.set(true);
        for link in active.iter() {
            if link.has_data() {
                any |= self.deliver(link, RX_BATCH) > 0;
            }
            if link.has_pending() {
                link.push_pending(&self.pool, |id, status| {
                    any = true;
                    self.pool.finish_in(core, id, status);
                });
            }
            check |= link.wakeup_check_due();
            if link.is_ending() || link.signalled() {
                self.soon();
            }
        }
        self.in_links_pass.set(false);
        let owed = self.wake_owed.take();
        if check || owed {
            // One fence for every link of the pass (Dekker with the peers' arming), then
            // each link's flags: a server with many connections pays it once, not per link.
            // (Links join at the control look, never inside this walk: the copy has every
            // link a receive callback may send on.)
            std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
            for link in active.iter() {
                link.wake_peer_fenced();
            }
        }
        any
    }

    /// Delivers up to `max` messages of `link` to the msg-recv callback.
    fn deliver(&self, link: &Link, max: usize) -> usize {
        link.poll_rx(max, self, |bytes, conn| {
            if self.msg_cb.call(|cb| cb(bytes, conn)).is_none() {
                tracing::debug!(target: "doca_sdk", "{self}: message dropped: no msg-recv callback registered");
            }
        })
    }

    /// The tokens of the control sockets that are readable (one `epoll_wait(0)`).
    pub(crate) fn ctrl_ready(&self) -> SmallVec<[u64; 32]> {
        match self.res.borrow().as_ref() {
            Some(r) => r.ctrl.ready(),
            None => SmallVec::new(),
        }
    }

    /// Silences link `key`'s doorbell, which rang (the control set said so): one ring per
    /// wake-up (the peer rings once per sleep of ours; a second ring wakes the set again).
    pub(crate) fn drain_link_bell(&self, key: usize) {
        if let Some(link) = self.links.borrow().get(key) {
            link.bell.drain_once();
        }
    }

    /// Reads the control packets of link `key` (fast-path bookkeeping) into `events`, at
    /// most [`CTRL_BATCH`] per call (a peer cannot keep this side reading). A packet that
    /// breaks the protocol closes the connection.
    pub(crate) fn read_link_ctrl(&self, key: usize, events: &mut Vec<ConsumerEvent>) {
        let Some(link) = self.links.borrow().get(key).cloned() else { return };
        let more = link.read_ctrl(CTRL_BATCH, |bytes, fds| {
            let event = match Ctrl::decode(bytes) {
                Ok(ctrl) => link.conn.fast().on_packet(ctrl, fds),
                Err(e) => Some(PeerEvent::Violation(format!(
                    "malformed control packet ({} bytes, {})",
                    bytes.len(),
                    e.name()
                ))),
            };
            match event {
                None => true,
                Some(PeerEvent::NewConsumer(id)) => {
                    events.push(ConsumerEvent { new: true, conn: link.conn.clone(), id });
                    true
                }
                Some(PeerEvent::ExpiredConsumer(id)) => {
                    events.push(ConsumerEvent { new: false, conn: link.conn.clone(), id });
                    true
                }
                Some(PeerEvent::Refused(code, why)) => {
                    let kind = LOG_REFUSED + code.code() as u32;
                    if let Some(held) = self.throttle.borrow_mut().admit(kind, Instant::now()) {
                        tracing::warn!(
                            target: "doca_sdk",
                            "{self}: connection #{}: refused {}: {why}{}",
                            link.conn.id(),
                            code.name(),
                            held_back(held)
                        );
                    }
                    true
                }
                Some(PeerEvent::Violation(why)) => {
                    link.violated(why, self);
                    false
                }
            }
        });
        if more || link.is_ending() {
            self.soon();
        }
    }

    /// Adds an established connection to the table.
    pub(crate) fn add_link(&self, new: NewLink) -> Result<Connection> {
        let mut links = self.links.borrow_mut();
        let entry = links.vacant_entry();
        let key = entry.key();
        // Shared with the connection (for control packets from any thread), not duplicated:
        // whichever lets go last closes it as a peer's socket is closed ([`PeerFd`]).
        let shared = Arc::new(new.sock.into_inner());
        let sock = self.ctrl()?.watch(shared.clone(), token::link(key))?;
        let bell = self.ctrl()?.watch(new.bell, token::bell(key))?;
        let owner = Owner { ctx: ThreadBound::new(self.owner.clone()), key, side: self.side_id() };
        let signal = new.channel.signal();
        let (peer, dev) = ((new.pid, new.budget), self.dev.clone());
        let conn = Connection::new(new.id, self.is_server, owner, peer, dev, Some((shared, signal)))?;
        let max_pending = self.pool.capacity() as usize;
        let rows = (self.status.clone(), self.connection_row(new.id, new.pid));
        entry.insert(Rc::new(Link::new(conn.clone(), sock, bell, new.channel, new.state, max_pending, rows)));
        self.status.set_connections(links.len());
        drop(links);
        conn.set_listed(true);
        self.rebuild_active();
        Ok(conn)
    }

    /// A server's connection `id` with process `pid` gets a row of its own on the status page
    /// while rows are free ([`doca_core::status::Entry::claim_connection`]); a client's
    /// connection is its client's row.
    fn connection_row(&self, id: u64, pid: i32) -> doca_core::status::Entry {
        if !self.is_server {
            return doca_core::status::Entry::none();
        }
        let row = doca_core::status::Entry::claim_connection(
            doca_core::status::Identity {
                kind: "cc_conn",
                dev: Some(self.dev.as_devinfo().pci_addr()),
                rep: None,
                name: &self.name,
                conn_id: id,
            },
            &self.status,
        );
        row.set_engine(self.engine.get());
        row.set_peer_pid(pid);
        row.set_connection_up(true);
        row
    }

    /// A connection that never came up (a refused handshake the server reports): owned by
    /// this side for the duration of the callback only ([`Connection::release_owner`]).
    pub(crate) fn failed_connection(&self, id: u64, pid: i32) -> Result<Connection> {
        let owner =
            Owner { ctx: ThreadBound::new(self.owner.clone()), key: usize::MAX, side: self.side_id() };
        Connection::new(id, self.is_server, owner, (pid, None), self.dev.clone(), None)
    }

    fn rebuild_active(&self) {
        let active: Rc<[Rc<Link>]> = self.links.borrow().iter().map(|(_, l)| l.clone()).collect();
        *self.active.borrow_mut() = active;
    }

    /// Winds up every link that ended (this side closing it, the peer gone): delivers what
    /// the peer already sent, fails the sends still waiting with `CONNECTION_RESET`, hangs
    /// up, and removes it. Their connections, still owned, join the closed ones whose reports
    /// are due ([`Side::take_closing_left`], then [`Side::report_closed`]).
    pub(crate) fn wind_up(&self) {
        let ending: Vec<usize> =
            self.links.borrow().iter().filter(|(_, l)| l.is_ending()).map(|(k, _)| k).collect();
        if ending.is_empty() {
            return;
        }
        // (A message callback that panics while a link is wound up leaves the connections
        // removed so far kept: the next pass looks and reports them.)
        self.soon();
        for key in ending {
            if let Some(conn) = self.remove_link(key, Error::ConnectionReset) {
                self.closing_left.borrow_mut().push(conn);
            }
        }
    }

    /// Closes every link (this side stops).
    pub(crate) fn close_all(&self) -> Vec<Connection> {
        let keys: Vec<usize> = self.links.borrow().iter().map(|(k, _)| k).collect();
        keys.into_iter()
            .filter_map(|key| {
                if let Some(link) = self.links.borrow().get(key) {
                    link.set_state(ConnState::Closing(Error::ConnectionReset), self);
                }
                self.remove_link(key, Error::ConnectionReset)
            })
            .collect()
    }

    fn remove_link(&self, key: usize, code: Error) -> Option<Connection> {
        let link = self.links.borrow().get(key).cloned()?;
        // What the peer sent before it left is still delivered (the ring holds that much).
        self.deliver(&link, link.rx_capacity());
        link.fail_pending(code, |id, status| {
            self.pool.finish(id, status);
        });
        link.hang_up();
        link.set_state(ConnState::Down(code), self);
        self.links.borrow_mut().try_remove(key);
        link.conn.set_listed(false);
        self.status.set_connections(self.links.borrow().len());
        self.rebuild_active();
        match link.violation() {
            Some(why) => {
                if let Some(held) = self.throttle.borrow_mut().admit(0, Instant::now()) {
                    tracing::error!(
                        target: "doca_sdk",
                        "{self}: connection #{} (pid {}) closed: the peer broke the protocol: {why}{}",
                        link.conn.id(),
                        link.conn.peer_pid(),
                        held_back(held)
                    );
                }
            }
            None if link.conn.cut_by_fault_plan() => tracing::warn!(
                target: "doca_sdk",
                "{self}: connection #{} closed: this process's fault plan cut it (link.drop)",
                link.conn.id()
            ),
            None => tracing::debug!(target: "doca_sdk", "{self}: connection #{} closed", link.conn.id()),
        }
        Some(link.conn.clone())
    }

    /// Marks connection `conn` closing (`NOT_FOUND` when it is not a live connection of this
    /// side); it is wound up on the next progress.
    pub(crate) fn disconnect(&self, conn: &Connection) -> Result<()> {
        // A clone: the table is not borrowed while the state changes (not a busy path).
        let link = self.links.borrow().get(conn.key()).filter(|l| l.conn == *conn).cloned();
        let Some(link) = link else {
            bail!(Error::NotFound, "{self} disconnect: not a live connection of this side");
        };
        use std::sync::atomic::Ordering::Relaxed;
        let fast = conn.fast();
        let (consumers, producers) = (fast.consumers.load(Relaxed), fast.producers.load(Relaxed));
        if consumers + producers > 0 {
            bail!(
                Error::InUse,
                "{self} disconnect: the connection still has {consumers} consumer(s) and {producers} producer(s) of this side: destroy them first"
            );
        }
        link.set_state(ConnState::Closing(Error::ConnectionReset), self);
        self.soon();
        Ok(())
    }

    /// The established connections.
    pub(crate) fn connections(&self) -> Vec<Connection> {
        self.links.borrow().iter().map(|(_, l)| l.conn.clone()).collect()
    }

    /// Established connections.
    pub(crate) fn num_links(&self) -> usize {
        self.links.borrow().len()
    }

    /// Established connections with process `peer`.
    pub(crate) fn num_links_of(&self, peer: doca_link::budget::PeerId) -> usize {
        self.links.borrow().iter().filter(|(_, l)| l.conn.peer_id() == Some(peer)).count()
    }

    /// Reports a connection that closed: an expired-consumer event for each consumer the peer
    /// still had on it, then `down` (the role's disconnection report); the connection is
    /// then let go.
    pub(crate) fn report_closed(&self, conn: Connection, down: impl FnOnce(&Connection)) {
        let expired = conn.fast().expire_all();
        let events =
            expired.into_iter().map(|id| ConsumerEvent { new: false, conn: conn.clone(), id }).collect();
        let mut cut = ClosingCut { side: self, conn: &conn, down_due: true };
        self.keep_events(events);
        self.deliver_consumer_events();
        cut.down_due = false;
        down(&conn);
        std::mem::forget(cut);
        conn.release_owner();
    }

    /// The closed connections whose report is due again (see [`ClosingCut`]).
    pub(crate) fn take_closing_left(&self) -> Vec<Connection> {
        std::mem::take(&mut *self.closing_left.borrow_mut())
    }

    /// Keeps `conns`, whose reports a panicking callback kept from running, for the next look.
    pub(crate) fn keep_closing(&self, conns: impl Iterator<Item = Connection>) {
        if let Ok(mut left) = self.closing_left.try_borrow_mut() {
            left.extend(conns);
        }
        self.soon();
    }

    /// Consumer events read from the control packets, kept until
    /// [`Side::deliver_consumer_events`] delivers them (after the events a panicking callback
    /// left, in order).
    pub(crate) fn keep_events(&self, events: Vec<ConsumerEvent>) {
        if !events.is_empty() {
            self.events_left.borrow_mut().extend(events);
        }
    }

    /// Whether consumer events or closing reports a panicking callback cut off wait for the
    /// next look (a stop waits for them: they are delivered before the context is Idle).
    pub(crate) fn has_leftovers(&self) -> bool {
        !self.events_left.borrow().is_empty() || !self.closing_left.borrow().is_empty()
    }

    /// Runs the new- and expired-consumer callbacks of the events kept so far
    /// ([`Side::keep_events`]), in order; whether there was any.
    pub(crate) fn deliver_consumer_events(&self) -> bool {
        let events = std::mem::take(&mut *self.events_left.borrow_mut());
        if events.is_empty() {
            return false;
        }
        // A callback that panics leaves the events after its own for the next look, in their
        // order.
        let mut rest = Unreached::new(events, |rest| {
            if let Ok(mut left) = self.events_left.try_borrow_mut() {
                left.extend(rest);
            }
            self.soon();
        });
        for ev in rest.items.by_ref() {
            let slot = if ev.new { &self.new_consumer_cb } else { &self.expired_consumer_cb };
            slot.call(|cb| cb(&ev.conn, ev.id));
        }
        true
    }

    /// Before the application sleeps: arms every link, and the timer for `deadline` (the
    /// role's next deadline). True when work is already waiting.
    pub(crate) fn arm(&self, core: &CtxCore, deadline: Option<Instant>) -> bool {
        let mut ready = false;
        for link in self.active.borrow().iter() {
            ready |= link.arm();
        }
        if let (Some(deadline), Some(res)) = (deadline, self.res.borrow().as_ref()) {
            let now = core.now();
            ready |= deadline <= now;
            res.timer.arm_at(deadline, now);
            res.timer_armed.set(true);
        }
        ready
    }

    /// After waking: disarm, silence the timer, and find out what woke the side. A link
    /// whose peer took its armed flag rang its doorbell: that doorbell is drained here (one
    /// `recv` each). When only such rings woke the side, the next pass needs no look at the
    /// control set (the `epoll_wait` that would tell which doorbells rang); otherwise — a
    /// ring expected but not there yet, the timer, or nothing known (a new client, a control
    /// packet, an end of file) — it looks. Whatever else is readable keeps the notification
    /// handle readable (every watch is level-triggered): a sleep meanwhile returns at once and
    /// that wake-up looks.
    pub(crate) fn disarm(&self) {
        let (mut rang, mut unknown) = (false, false);
        for link in self.active.borrow().iter() {
            for _ in 0..link.disarm() {
                if link.bell.drain_once() {
                    rang = true;
                } else {
                    unknown = true;
                }
            }
        }
        if let Some(res) = self.res.borrow().as_ref().filter(|r| r.timer_armed.get()) {
            // Still armed until seen expired (read before its deadline: not yet).
            let fired = res.timer.drain();
            res.timer_armed.set(!fired);
            unknown |= fired;
        }
        if !rang || unknown {
            self.soon();
        }
    }
}
