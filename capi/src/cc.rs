//! `doca_cc.h`: servers, clients, connections, send tasks and the receive, connection and
//! consumer events.

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr};
use std::rc::Rc;

use doca_cc::{Client, Connection, SendTask, Server};
use doca_core::{Ctx, Data, Error};

use crate::check::{bytes, non_null, out, refuse};
use crate::ctx::{DocaCtx, DocaData, CTXS};
use crate::dev::{dev, rep, DocaDev, DocaDevRep};
use crate::handles::{Handles, IdMap, Kind};
use crate::task::{complete, AnyTask, DocaTask, TaskTable};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// `struct doca_cc_server` and `struct doca_cc_client`: one side, its context handle, and the
/// handles it gave out for its connections and tasks.
pub struct DocaCcSide {
    role: Role,
    ctx: *mut DocaCtx,
    shared: Rc<Shared>,
    /// The device and representor handles it was created with (`*_get_device*`).
    dev: *mut DocaDev,
    rep: *mut DocaDevRep,
}

enum Role {
    Server(Server),
    Client(Client),
}

/// What the side's callbacks need: the C handles of its connections and tasks.
#[derive(Default)]
struct Shared {
    conns: RefCell<IdMap<u64, *mut DocaCcConnection>>,
    /// The connection found last and its handle (most sides talk on one connection: each
    /// message's callback finds it here without hashing).
    last: std::cell::Cell<Option<(u64, *mut DocaCcConnection)>>,
    tasks: Rc<TaskTable>,
    /// The received message, copied for the C callback (it may write its buffer).
    scratch: RefCell<Vec<u8>>,
    side: std::cell::Cell<*mut DocaCcSide>,
}

impl Shared {
    /// The C handle of `conn` (made at first sight).
    fn conn(&self, conn: &Connection) -> *mut DocaCcConnection {
        let id = conn.id();
        if let Some((last, h)) = self.last.get() {
            if last == id {
                return h;
            }
        }
        // Handles live as long as the side (removed only when it goes): a cached one stays valid.
        let h = *self
            .conns
            .borrow_mut()
            .entry(id)
            .or_insert_with(|| CONNS.add(DocaCcConnection { conn: conn.clone(), side: self.side.get() }));
        self.last.set(Some((id, h)));
        h
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        for (_, p) in self.conns.borrow_mut().drain() {
            // SAFETY: CONNS only holds DocaCcConnection handles; each is freed once, here.
            drop(unsafe { CONNS.remove(p) });
        }
    }
}

/// `struct doca_cc_connection`.
pub struct DocaCcConnection {
    pub(crate) conn: Connection,
    side: *mut DocaCcSide,
}

/// Servers and clients are handles of two kinds: a server call given a client (or the
/// reverse) refuses it.
static SERVERS: Handles = Handles::new(Kind::CcServer);
static CLIENTS: Handles = Handles::new(Kind::CcClient);
static CONNS: Handles = Handles::new(Kind::CcConnection);

/// Which kind of side a call takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Which {
    Server,
    Client,
}

impl Which {
    fn table(self) -> &'static Handles {
        match self {
            Which::Server => &SERVERS,
            Which::Client => &CLIENTS,
        }
    }
}

/// A live server (`which` = server) or client handle.
fn side<'a>(p: *const DocaCcSide, which: Which) -> Option<&'a DocaCcSide> {
    // SAFETY: SERVERS and CLIENTS only hold DocaCcSide handles.
    unsafe { which.table().get(p) }
}

pub(crate) fn conn<'a>(p: *const DocaCcConnection) -> Option<&'a DocaCcConnection> {
    // SAFETY: CONNS only holds DocaCcConnection handles.
    unsafe { CONNS.get(p) }
}

/// `doca_cc_task_send_completion_cb_t`.
pub type TaskSendCb = Option<unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData)>;
/// `doca_cc_event_msg_recv_cb_t` (2.6+). The length is passed as a 64-bit value: a 2.6
/// callback (`uint32_t msg_len`) reads its low half, and a 2.5 one (`size_t msg_len`) that
/// reached this symbol anyway (a program built against an older doca-emu header that cast
/// it) still reads the whole length. 2.5 programs register through the `_v25` symbol.
pub type MsgRecvCb = Option<unsafe extern "C" fn(*mut c_void, *mut u8, u64, *mut DocaCcConnection)>;
/// `doca_cc_event_connection_status_changed_cb_t`.
pub type ConnectionCb = Option<unsafe extern "C" fn(*mut c_void, *mut DocaCcConnection, u8)>;

fn name_arg<'a>(name: *const c_char) -> Option<&'a str> {
    if name.is_null() {
        return None;
    }
    // SAFETY: a non-NULL name is a NUL-terminated C string that lives for the call.
    unsafe { CStr::from_ptr(name) }.to_str().ok()
}

fn hand_out_side(role: Role, ctx: Ctx, dev: *mut DocaDev, rep: *mut DocaDevRep) -> *mut DocaCcSide {
    let shared = Rc::new(Shared::default());
    let ctx = CTXS.add(DocaCtx(ctx));
    shared.tasks.1.set(ctx);
    let table = match role {
        Role::Server(_) => &SERVERS,
        Role::Client(_) => &CLIENTS,
    };
    let p = table.add(DocaCcSide { role, ctx, shared: shared.clone(), dev, rep });
    shared.side.set(p);
    p
}

/// `doca_cc_server_create`: on the DPU device `dev` for the host function `repr` stands for.
///
/// # Safety
/// `name` is NULL or a C string; `server` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_server_create(
    dev: *mut DocaDev,
    repr: *mut DocaDevRep,
    name: *const c_char,
    server: *mut *mut DocaCcSide,
) -> DocaError {
    guarded("doca_cc_server_create", || {
        let (Some(d), Some(r), Some(name)) = (self::dev(dev), rep(repr), name_arg(name)) else {
            return invalid();
        };
        if let Err(e) = crate::check::non_null(server, "server") {
            return e;
        }
        match Server::create(&d.dev, &r.rep, name) {
            Ok(s) => {
                let ctx = s.as_ctx();
                out(server, hand_out_side(Role::Server(s), ctx, dev, repr))
            }
            Err(e) => e.code(),
        }
    })
}

/// `doca_cc_client_create`: on host function `dev`, for the server `name`.
///
/// # Safety
/// `name` is NULL or a C string; `client` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_client_create(
    dev: *mut DocaDev,
    name: *const c_char,
    client: *mut *mut DocaCcSide,
) -> DocaError {
    guarded("doca_cc_client_create", || {
        let (Some(d), Some(name)) = (self::dev(dev), name_arg(name)) else { return invalid() };
        if let Err(e) = crate::check::non_null(client, "client") {
            return e;
        }
        match Client::create(&d.dev, name) {
            Ok(c) => {
                let ctx = c.as_ctx();
                out(client, hand_out_side(Role::Client(c), ctx, dev, std::ptr::null_mut()))
            }
            Err(e) => e.code(),
        }
    })
}

fn destroy_side(p: *mut DocaCcSide, which: Which) -> DocaError {
    let Some(s) = side(p, which) else { return invalid() };
    if s.ctx_ref().state() != doca_core::CtxState::Idle {
        return Error::InUse.code();
    }
    // SAFETY: SERVERS and CLIENTS only hold DocaCcSide handles; the handle is freed once, here.
    let Some(side) = (unsafe { which.table().remove(p) }) else { return invalid() };
    let DocaCcSide { role, ctx, shared, .. } = *side;
    // SAFETY: the context handle was made with the side and goes with it.
    drop(unsafe { CTXS.remove(ctx) });
    let r = match role {
        Role::Server(s) => s.destroy().map_err(|r| r.error),
        Role::Client(c) => c.destroy().map_err(|r| r.error),
    };
    drop(shared);
    doca_core::Error::code_of(&r)
}

impl DocaCcSide {
    fn ctx_ref(&self) -> Ctx {
        match &self.role {
            Role::Server(s) => s.as_ctx(),
            Role::Client(c) => c.as_ctx(),
        }
    }
}

/// `doca_cc_server_destroy`: Idle only (`IN_USE`).
#[no_mangle]
pub extern "C" fn doca_cc_server_destroy(server: *mut DocaCcSide) -> DocaError {
    guarded("doca_cc_server_destroy", || destroy_side(server, Which::Server))
}

/// `doca_cc_client_destroy`: Idle only (`IN_USE`).
#[no_mangle]
pub extern "C" fn doca_cc_client_destroy(client: *mut DocaCcSide) -> DocaError {
    guarded("doca_cc_client_destroy", || destroy_side(client, Which::Client))
}

/// `doca_cc_server_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_cc_server_as_ctx(server: *mut DocaCcSide) -> *mut DocaCtx {
    crate::shielded("doca_cc_server_as_ctx", std::ptr::null_mut(), || {
        side(server, Which::Server).map_or(std::ptr::null_mut(), |s| s.ctx)
    })
}

/// `doca_cc_client_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_cc_client_as_ctx(client: *mut DocaCcSide) -> *mut DocaCtx {
    crate::shielded("doca_cc_client_as_ctx", std::ptr::null_mut(), || {
        side(client, Which::Client).map_or(std::ptr::null_mut(), |s| s.ctx)
    })
}

macro_rules! both {
    ($s:expr, $x:ident => $e:expr) => {
        match &$s.role {
            Role::Server($x) => $e,
            Role::Client($x) => $e,
        }
    };
}

pub(crate) fn set_conf(
    p: *mut DocaCcSide,
    which: Which,
    completion: TaskSendCb,
    error: TaskSendCb,
    num: u32,
) -> DocaError {
    let Some(s) = side(p, which) else { return invalid() };
    let (Some(completion), Some(error)) = (completion, error) else {
        return refuse(|| "NULL completion or error callback".into());
    };
    let (w1, w2) = (Rc::downgrade(&s.shared.tasks), Rc::downgrade(&s.shared.tasks));
    let deliver = |cb: unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData),
                   w: std::rc::Weak<TaskTable>| {
        move |t: SendTask, task_data: Data, ctx_data: Data| {
            complete(&w, cb, AnyTask::Send(t), task_data, ctx_data)
        }
    };
    let r = both!(s, x => x.task_send_set_conf(deliver(completion, w1), deliver(error, w2), num));
    doca_core::Error::code_of(&r)
}

/// `doca_cc_server_task_send_set_conf`.
#[no_mangle]
pub extern "C" fn doca_cc_server_task_send_set_conf(
    server: *mut DocaCcSide,
    completion: TaskSendCb,
    error: TaskSendCb,
    num_send_tasks: u32,
) -> DocaError {
    guarded("doca_cc_server_task_send_set_conf", || {
        set_conf(server, Which::Server, completion, error, num_send_tasks)
    })
}

/// `doca_cc_client_task_send_set_conf`.
#[no_mangle]
pub extern "C" fn doca_cc_client_task_send_set_conf(
    client: *mut DocaCcSide,
    completion: TaskSendCb,
    error: TaskSendCb,
    num_send_tasks: u32,
) -> DocaError {
    guarded("doca_cc_client_task_send_set_conf", || {
        set_conf(client, Which::Client, completion, error, num_send_tasks)
    })
}

/// A receive callback in the shape of the API level it was registered through.
#[derive(Clone, Copy)]
pub(crate) enum RecvCb {
    /// 2.6+ (`uint32_t msg_len`), given the length as a 64-bit value: see [`MsgRecvCb`].
    Len32(unsafe extern "C" fn(*mut c_void, *mut u8, u64, *mut DocaCcConnection)),
    /// 2.5 (`size_t msg_len`).
    Size(unsafe extern "C" fn(*mut c_void, *mut u8, usize, *mut DocaCcConnection)),
}

pub(crate) fn msg_recv(p: *mut DocaCcSide, which: Which, cb: Option<RecvCb>) -> DocaError {
    let Some(s) = side(p, which) else { return invalid() };
    let Some(cb) = cb else { return refuse(|| "NULL callback".into()) };
    let w = Rc::downgrade(&s.shared);
    let r = both!(s, x => x.event_msg_recv_register({
        let w = w.clone();
        move |msg: &[u8], c: &Connection| {
            let Some(shared) = w.upgrade() else { return };
            let handle = shared.conn(c);
            let mut scratch = shared.scratch.borrow_mut();
            scratch.clear();
            scratch.extend_from_slice(msg);
            let (buf, len) = (scratch.as_mut_ptr(), scratch.len());
            drop(scratch);
            // the application's receive callback; the copy it gets lives until the
            // next message (it is only read during the call, as DOCA documents).
            match cb {
                // SAFETY: see above.
                RecvCb::Len32(f) => unsafe { f(std::ptr::null_mut(), buf, len as u64, handle) },
                // SAFETY: see above.
                RecvCb::Size(f) => unsafe { f(std::ptr::null_mut(), buf, len, handle) },
            }
        }
    }));
    doca_core::Error::code_of(&r)
}

/// `doca_cc_server_event_msg_recv_register`.
#[no_mangle]
pub extern "C" fn doca_cc_server_event_msg_recv_register(
    server: *mut DocaCcSide,
    cb: MsgRecvCb,
) -> DocaError {
    guarded("doca_cc_server_event_msg_recv_register", || {
        msg_recv(server, Which::Server, cb.map(RecvCb::Len32))
    })
}

/// `doca_cc_client_event_msg_recv_register`.
#[no_mangle]
pub extern "C" fn doca_cc_client_event_msg_recv_register(
    client: *mut DocaCcSide,
    cb: MsgRecvCb,
) -> DocaError {
    guarded("doca_cc_client_event_msg_recv_register", || {
        msg_recv(client, Which::Client, cb.map(RecvCb::Len32))
    })
}

/// A connection callback in the shape of the API level it was registered through.
#[derive(Clone, Copy)]
pub(crate) enum ConnCb {
    /// 2.6+ (`uint8_t change_successful`).
    Byte(unsafe extern "C" fn(*mut c_void, *mut DocaCcConnection, u8)),
    /// 2.5 (`bool change_successful`).
    Bool(unsafe extern "C" fn(*mut c_void, *mut DocaCcConnection, bool)),
}

pub(crate) fn connection_events(
    server: *mut DocaCcSide,
    connect: Option<ConnCb>,
    disconnect: Option<ConnCb>,
) -> DocaError {
    let Some(s) = side(server, Which::Server) else { return invalid() };
    let (Some(connect), Some(disconnect)) = (connect, disconnect) else {
        return refuse(|| "NULL connect or disconnect callback".into());
    };
    let Role::Server(srv) = &s.role else { return invalid() };
    let event = |cb: ConnCb, w: std::rc::Weak<Shared>| {
        move |c: &Connection, ok: bool| {
            let Some(shared) = w.upgrade() else { return };
            let handle = shared.conn(c);
            // the application's connection callback, given the connection's handle
            // (valid while its server lives).
            match cb {
                // SAFETY: see above.
                ConnCb::Byte(f) => unsafe { f(std::ptr::null_mut(), handle, ok as u8) },
                // SAFETY: see above.
                ConnCb::Bool(f) => unsafe { f(std::ptr::null_mut(), handle, ok) },
            }
        }
    };
    let r = srv.event_connection_register(
        event(connect, Rc::downgrade(&s.shared)),
        event(disconnect, Rc::downgrade(&s.shared)),
    );
    doca_core::Error::code_of(&r)
}

/// `doca_cc_server_event_connection_register`.
#[no_mangle]
pub extern "C" fn doca_cc_server_event_connection_register(
    server: *mut DocaCcSide,
    connect: ConnectionCb,
    disconnect: ConnectionCb,
) -> DocaError {
    guarded("doca_cc_server_event_connection_register", || {
        connection_events(server, connect.map(ConnCb::Byte), disconnect.map(ConnCb::Byte))
    })
}

/// `doca_cc_event_consumer_cb_t`: a consumer of the peer started (or was destroyed).
pub type ConsumerCb = Option<unsafe extern "C" fn(*mut c_void, *mut DocaCcConnection, u32)>;

fn consumer_events(p: *mut DocaCcSide, which: Which, new: ConsumerCb, expired: ConsumerCb) -> DocaError {
    let Some(s) = side(p, which) else { return invalid() };
    let (Some(new), Some(expired)) = (new, expired) else {
        return refuse(|| "NULL new or expired consumer callback".into());
    };
    let event = |cb: unsafe extern "C" fn(*mut c_void, *mut DocaCcConnection, u32),
                 w: std::rc::Weak<Shared>| {
        move |c: &Connection, id: u32| {
            let Some(shared) = w.upgrade() else { return };
            let handle = shared.conn(c);
            // the application's consumer callback, given the connection's handle (valid
            // while its side lives) and the remote consumer's id.
            // SAFETY: see above.
            unsafe { cb(std::ptr::null_mut(), handle, id) };
        }
    };
    let (w1, w2) = (Rc::downgrade(&s.shared), Rc::downgrade(&s.shared));
    let r = both!(s, x => x.event_consumer_register(event(new, w1), event(expired, w2)));
    doca_core::Error::code_of(&r)
}

/// `doca_cc_server_event_consumer_register`: Idle only.
#[no_mangle]
pub extern "C" fn doca_cc_server_event_consumer_register(
    server: *mut DocaCcSide,
    new_consumer_event_cb: ConsumerCb,
    expired_consumer_event_cb: ConsumerCb,
) -> DocaError {
    guarded("doca_cc_server_event_consumer_register", || {
        consumer_events(server, Which::Server, new_consumer_event_cb, expired_consumer_event_cb)
    })
}

/// `doca_cc_client_event_consumer_register`: Idle only.
#[no_mangle]
pub extern "C" fn doca_cc_client_event_consumer_register(
    client: *mut DocaCcSide,
    new_consumer_event_cb: ConsumerCb,
    expired_consumer_event_cb: ConsumerCb,
) -> DocaError {
    guarded("doca_cc_client_event_consumer_register", || {
        consumer_events(client, Which::Client, new_consumer_event_cb, expired_consumer_event_cb)
    })
}

/// `doca_cc_client_get_connection`: once Running (`BAD_STATE` before).
///
/// # Safety
/// `connection` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_client_get_connection(
    client: *const DocaCcSide,
    connection: *mut *mut DocaCcConnection,
) -> DocaError {
    guarded("doca_cc_client_get_connection", || {
        let Some(s) = side(client, Which::Client) else { return invalid() };
        let Role::Client(c) = &s.role else { return invalid() };
        // The arguments first, as every getter checks them (the state comes after).
        if let Err(e) = non_null(connection, "connection") {
            return e;
        }
        match c.get_connection() {
            Ok(conn) => out(connection, s.shared.conn(&conn)),
            Err(e) => e.code(),
        }
    })
}

pub(crate) fn alloc(
    p: *mut DocaCcSide,
    which: Which,
    peer: *mut DocaCcConnection,
    msg: *const c_void,
    len: usize,
    task_out: *mut *mut DocaTask,
) -> DocaError {
    let (Some(s), Some(c)) = (side(p, which), conn(peer)) else { return invalid() };
    if let Err(e) = non_null(task_out, "task out-parameter") {
        return e;
    }
    // Nothing longer than the side's message size is ever sent: a longer length is refused
    // before a byte of `msg` is read.
    let max = both!(s, x => x.max_msg_size()) as usize;
    if len > max {
        // The line the Rust API (and DOCA's libdoca_cc) logs, so C and Rust read alike.
        return refuse(|| {
            format!("Msg size larger than maximal msg size which is {max}. (asked: {len} bytes)")
        });
    }
    // SAFETY: `msg` points to `len` readable bytes for the call (the caller's contract).
    let bytes = match unsafe { bytes(msg, len, max, "message") } {
        Ok(b) => b,
        Err(e) => return e,
    };
    match both!(s, x => x.task_send_alloc_init(&c.conn, bytes)) {
        Ok(t) => out(task_out, s.shared.tasks.hand_out(AnyTask::Send(t), std::ptr::null_mut())),
        Err(e) => e.code(),
    }
}

/// `doca_cc_server_task_send_alloc_init`: a task sending `len` bytes of `msg` (copied) on
/// `peer`.
#[no_mangle]
pub extern "C" fn doca_cc_server_task_send_alloc_init(
    server: *mut DocaCcSide,
    peer: *mut DocaCcConnection,
    msg: *const c_void,
    len: u32,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_cc_server_task_send_alloc_init", || {
        alloc(server, Which::Server, peer, msg, len as usize, task)
    })
}

/// `doca_cc_client_task_send_alloc_init`.
#[no_mangle]
pub extern "C" fn doca_cc_client_task_send_alloc_init(
    client: *mut DocaCcSide,
    peer: *mut DocaCcConnection,
    msg: *const c_void,
    len: u32,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_cc_client_task_send_alloc_init", || {
        alloc(client, Which::Client, peer, msg, len as usize, task)
    })
}

/// `doca_cc_task_send_as_task`: the same handle, as a generic task.
#[no_mangle]
pub extern "C" fn doca_cc_task_send_as_task(task: *mut DocaTask) -> *mut DocaTask {
    crate::task::as_task("doca_cc_task_send_as_task", task, crate::task::Of::Send)
}

/// `doca_cc_connection_set_user_data`.
#[no_mangle]
pub extern "C" fn doca_cc_connection_set_user_data(
    connection: *mut DocaCcConnection,
    user_data: DocaData,
) -> DocaError {
    guarded("doca_cc_connection_set_user_data", || match conn(connection) {
        Some(c) => {
            c.conn.set_user_data(user_data.to_data());
            DOCA_SUCCESS
        }
        None => invalid(),
    })
}

/// `doca_cc_connection_get_user_data`.
#[no_mangle]
pub extern "C" fn doca_cc_connection_get_user_data(connection: *const DocaCcConnection) -> DocaData {
    crate::shielded("doca_cc_connection_get_user_data", DocaData { u64: 0 }, || {
        conn(connection).map_or(DocaData { u64: 0 }, |c| DocaData::from_data(c.conn.user_data()))
    })
}

/// `doca_cc_server_get_server_ctx`: the server of a server-side connection (NULL otherwise).
#[no_mangle]
pub extern "C" fn doca_cc_server_get_server_ctx(connection: *const DocaCcConnection) -> *mut DocaCcSide {
    crate::shielded("doca_cc_server_get_server_ctx", std::ptr::null_mut(), || match conn(connection) {
        Some(c) if c.conn.is_server_side() => c.side,
        Some(_) => {
            crate::check::note(|| "a client's connection".into());
            std::ptr::null_mut()
        }
        None => std::ptr::null_mut(),
    })
}

/// `doca_cc_client_get_client_ctx`: the client of a client-side connection (NULL otherwise).
#[no_mangle]
pub extern "C" fn doca_cc_client_get_client_ctx(connection: *const DocaCcConnection) -> *mut DocaCcSide {
    crate::shielded("doca_cc_client_get_client_ctx", std::ptr::null_mut(), || match conn(connection) {
        Some(c) if !c.conn.is_server_side() => c.side,
        Some(_) => {
            crate::check::note(|| "a server's connection".into());
            std::ptr::null_mut()
        }
        None => std::ptr::null_mut(),
    })
}

/// Makes the server or client `p` name its functions in log lines as `names` (the comch
/// entry points: an application that created it with `doca_comch_*_create` calls the
/// `doca_comch_*` names).
pub(crate) fn use_c_names(p: *mut DocaCcSide, which: Which, names: doca_cc::CNames) {
    if let Some(s) = side(p, which) {
        both!(s, x => x.set_c_names(names));
    }
}

fn set_size(p: *mut DocaCcSide, which: Which, size: u32, queue: bool) -> DocaError {
    let Some(s) = side(p, which) else { return invalid() };
    let r = if queue {
        both!(s, x => x.set_recv_queue_size(size))
    } else {
        both!(s, x => x.set_max_msg_size(size))
    };
    doca_core::Error::code_of(&r)
}

fn get_size(p: *const DocaCcSide, which: Which, out_size: *mut u32, queue: bool) -> DocaError {
    let Some(s) = side(p, which) else { return invalid() };
    let v = if queue { both!(s, x => x.recv_queue_size()) } else { both!(s, x => x.max_msg_size()) };
    out(out_size, v)
}

/// `doca_cc_server_set_max_msg_size`: Idle only; 0 or above the capability → `INVALID_VALUE`.
#[no_mangle]
pub extern "C" fn doca_cc_server_set_max_msg_size(server: *mut DocaCcSide, size: u32) -> DocaError {
    guarded("doca_cc_server_set_max_msg_size", || set_size(server, Which::Server, size, false))
}

/// `doca_cc_server_get_max_msg_size`.
///
/// # Safety
/// `size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_server_get_max_msg_size(
    server: *const DocaCcSide,
    size: *mut u32,
) -> DocaError {
    guarded("doca_cc_server_get_max_msg_size", || get_size(server, Which::Server, size, false))
}

/// `doca_cc_server_set_recv_queue_size`.
#[no_mangle]
pub extern "C" fn doca_cc_server_set_recv_queue_size(server: *mut DocaCcSide, size: u32) -> DocaError {
    guarded("doca_cc_server_set_recv_queue_size", || set_size(server, Which::Server, size, true))
}

/// `doca_cc_server_get_recv_queue_size`.
///
/// # Safety
/// `size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_server_get_recv_queue_size(
    server: *const DocaCcSide,
    size: *mut u32,
) -> DocaError {
    guarded("doca_cc_server_get_recv_queue_size", || get_size(server, Which::Server, size, true))
}

/// `doca_cc_client_set_max_msg_size`.
#[no_mangle]
pub extern "C" fn doca_cc_client_set_max_msg_size(client: *mut DocaCcSide, size: u32) -> DocaError {
    guarded("doca_cc_client_set_max_msg_size", || set_size(client, Which::Client, size, false))
}

/// `doca_cc_client_get_max_msg_size`.
///
/// # Safety
/// `size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_client_get_max_msg_size(
    client: *const DocaCcSide,
    size: *mut u32,
) -> DocaError {
    guarded("doca_cc_client_get_max_msg_size", || get_size(client, Which::Client, size, false))
}

/// `doca_cc_client_set_recv_queue_size`.
#[no_mangle]
pub extern "C" fn doca_cc_client_set_recv_queue_size(client: *mut DocaCcSide, size: u32) -> DocaError {
    guarded("doca_cc_client_set_recv_queue_size", || set_size(client, Which::Client, size, true))
}

/// `doca_cc_client_get_recv_queue_size`.
///
/// # Safety
/// `size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_client_get_recv_queue_size(
    client: *const DocaCcSide,
    size: *mut u32,
) -> DocaError {
    guarded("doca_cc_client_get_recv_queue_size", || get_size(client, Which::Client, size, true))
}

/// `doca_cc_server_get_device`: the device handle the server was created with.
///
/// # Safety
/// `dev` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_server_get_device(
    server: *const DocaCcSide,
    dev: *mut *mut DocaDev,
) -> DocaError {
    guarded("doca_cc_server_get_device", || match side(server, Which::Server) {
        Some(s) => out(dev, s.dev),
        None => invalid(),
    })
}

/// `doca_cc_server_get_device_repr`: the representor handle the server was created with.
///
/// # Safety
/// `repr` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_server_get_device_repr(
    server: *const DocaCcSide,
    repr: *mut *mut DocaDevRep,
) -> DocaError {
    guarded("doca_cc_server_get_device_repr", || match side(server, Which::Server) {
        Some(s) if !s.rep.is_null() => out(repr, s.rep),
        _ => invalid(),
    })
}

/// `doca_cc_client_get_device`.
///
/// # Safety
/// `dev` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_client_get_device(
    client: *const DocaCcSide,
    dev: *mut *mut DocaDev,
) -> DocaError {
    guarded("doca_cc_client_get_device", || match side(client, Which::Client) {
        Some(s) => out(dev, s.dev),
        None => invalid(),
    })
}

/// Writes a capability of the device behind `devinfo`.
pub(crate) fn cap(
    devinfo: *const crate::dev::DocaDevinfo,
    value: *mut u32,
    get: fn(&doca_core::DevInfo) -> doca_core::Result<u32>,
) -> DocaError {
    match crate::dev::devinfo(devinfo) {
        Some(d) => match get(d) {
            Ok(v) => out(value, v),
            Err(e) => e.code(),
        },
        None => invalid(),
    }
}

/// `doca_cc_cap_get_max_msg_size`.
///
/// # Safety
/// `max_msg_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_cap_get_max_msg_size(
    devinfo: *const crate::dev::DocaDevinfo,
    max_msg_size: *mut u32,
) -> DocaError {
    guarded("doca_cc_cap_get_max_msg_size", || cap(devinfo, max_msg_size, doca_cc::caps::max_msg_size))
}

/// `doca_cc_cap_get_max_recv_queue_size`.
///
/// # Safety
/// `max_recv_queue_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_cap_get_max_recv_queue_size(
    devinfo: *const crate::dev::DocaDevinfo,
    max_recv_queue_size: *mut u32,
) -> DocaError {
    guarded("doca_cc_cap_get_max_recv_queue_size", || {
        cap(devinfo, max_recv_queue_size, doca_cc::caps::max_recv_queue_size)
    })
}

/// `doca_cc_cap_get_max_name_len`.
///
/// # Safety
/// `max_name_len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_cap_get_max_name_len(
    devinfo: *const crate::dev::DocaDevinfo,
    max_name_len: *mut u32,
) -> DocaError {
    guarded("doca_cc_cap_get_max_name_len", || cap(devinfo, max_name_len, doca_cc::caps::max_name_len))
}

/// `doca_cc_cap_get_max_clients`.
///
/// # Safety
/// `max_clients` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_cap_get_max_clients(
    devinfo: *const crate::dev::DocaDevinfo,
    max_clients: *mut u32,
) -> DocaError {
    guarded("doca_cc_cap_get_max_clients", || cap(devinfo, max_clients, doca_cc::caps::max_clients))
}

/// `doca_cc_cap_get_max_send_tasks`.
///
/// # Safety
/// `max_send_tasks` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_cap_get_max_send_tasks(
    devinfo: *const crate::dev::DocaDevinfo,
    max_send_tasks: *mut u32,
) -> DocaError {
    guarded("doca_cc_cap_get_max_send_tasks", || cap(devinfo, max_send_tasks, doca_cc::caps::max_send_tasks))
}

/// `doca_cc_cap_server_is_supported`: the DPU device; a host function is `NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_cc_cap_server_is_supported(devinfo: *const crate::dev::DocaDevinfo) -> DocaError {
    guarded("doca_cc_cap_server_is_supported", || match crate::dev::devinfo(devinfo) {
        Some(d) => doca_core::Error::code_of(&doca_cc::caps::server_is_supported(d)),
        None => invalid(),
    })
}

/// `doca_cc_cap_client_is_supported`: a host function; the DPU device is `NOT_SUPPORTED`.
#[no_mangle]
pub extern "C" fn doca_cc_cap_client_is_supported(devinfo: *const crate::dev::DocaDevinfo) -> DocaError {
    guarded("doca_cc_cap_client_is_supported", || match crate::dev::devinfo(devinfo) {
        Some(d) => doca_core::Error::code_of(&doca_cc::caps::client_is_supported(d)),
        None => invalid(),
    })
}

/// `doca_comch_server_disconnect` (DOCA 2.7+): closes `connection`; the disconnection
/// callback follows on a later progress. Not this server's → `NOT_FOUND`.
#[no_mangle]
pub extern "C" fn doca_comch_server_disconnect(
    server: *mut DocaCcSide,
    connection: *mut DocaCcConnection,
) -> DocaError {
    guarded("doca_comch_server_disconnect", || {
        let (Some(s), Some(c)) = (side(server, Which::Server), conn(connection)) else { return invalid() };
        let Role::Server(srv) = &s.role else { return invalid() };
        doca_core::Error::code_of(&srv.disconnect(&c.conn))
    })
}

/// `doca_cc_connection_update_info`: snapshots the counters; a disconnected connection
/// still snapshots, then answers `CONNECTION_ABORTED`.
#[no_mangle]
pub extern "C" fn doca_cc_connection_update_info(connection: *mut DocaCcConnection) -> DocaError {
    guarded("doca_cc_connection_update_info", || match conn(connection) {
        Some(c) => doca_core::Error::code_of(&c.conn.update_info()),
        None => invalid(),
    })
}

/// `doca_cc_connection_get_counter`: the value at the last update (`enum doca_cc_counter`:
/// 1 sent messages, 2 sent bytes, 3 received messages, 4 received bytes).
///
/// # Safety
/// `value` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_cc_connection_get_counter(
    connection: *const DocaCcConnection,
    counter: u32,
    value: *mut u64,
) -> DocaError {
    guarded("doca_cc_connection_get_counter", || {
        let Some(c) = conn(connection) else { return invalid() };
        let counter = match counter {
            1 => doca_cc::Counter::SentMessages,
            2 => doca_cc::Counter::SentBytes,
            3 => doca_cc::Counter::RecvMessages,
            4 => doca_cc::Counter::RecvBytes,
            _ => return invalid(),
        };
        out(value, c.conn.counter(counter))
    })
}
