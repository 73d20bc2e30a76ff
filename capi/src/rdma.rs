//! `doca_rdma.h` at API level 2.7 (the DOCA 2.9/3.x shape: connections as arguments):
//! contexts, settings, descriptor export/connect and the send, send-immediate, receive,
//! read, write, write-immediate and atomic tasks. See the `doca_rdma` crate for the
//! connection model, the statuses and the error rule. Levels 2.5/2.6 (one implicit
//! connection per context, a context Starting until it connects) are the `_v26` exports;
//! 2.5's `bool` grh setting the `_v25` ones, its `_get_result_length` names plain exports
//! (the end of this file). The connection manager (`doca_rdma_start_listen_to_port`,
//! `_connect_to_addr`, …) is `doca_rdma::cm`.

use std::cell::RefCell;
use std::rc::Rc;

use doca_core::Data;
use doca_rdma::srq::{Srq, SrqType};
use doca_rdma::{
    caps, CmpSwpTask, Connection, FetchAddTask, Rdma, ReadTask, ReceiveTask, RemoteNetGetTask,
    RemoteNetNotifyAddTask, RemoteNetNotifySetTask, SendImmTask, SendTask, TransportType, WriteImmTask,
    WriteTask,
};

use crate::buf::DocaBuf;
use crate::check::{non_null, out};
use crate::ctx::{DocaCtx, DocaData};
use crate::dev::{DocaDev, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::libctx::{self, opt_buf, LibCtx, Library};
use crate::task::{as_task, complete, task, AnyTask, DocaTask, Of};
use crate::{guarded, invalid, DocaError};

/// `struct doca_rdma`.
pub type DocaRdma = LibCtx<Rdma>;

impl Library for Rdma {
    fn ctx(&self) -> doca_core::Ctx {
        self.as_ctx()
    }
    fn destroy(self) -> doca_core::Result<()> {
        Rdma::destroy(self).map_err(|r| r.error)
    }
}

static RDMAS: Handles = Handles::new(Kind::Rdma);
static CONNS: Handles = Handles::new(Kind::RdmaConn);

/// `struct doca_rdma_connection`: a connection of one context, and its descriptor (the
/// bytes `doca_rdma_export` points to, alive as long as the handle).
pub struct DocaRdmaConnection {
    rdma: *mut DocaRdma,
    conn: Connection,
    desc: Box<[u8]>,
    user_data: RefCell<Data>,
}

fn rdma<'a>(p: *const DocaRdma) -> Option<&'a DocaRdma> {
    libctx::get(&RDMAS, p)
}

fn conn<'a>(p: *const DocaRdmaConnection) -> Option<&'a DocaRdmaConnection> {
    // SAFETY: CONNS only holds DocaRdmaConnection handles.
    unsafe { CONNS.get(p) }
}

/// A task completion callback (`doca_rdma_task_*_completion_cb_t`).
pub type RdmaTaskCb = Option<unsafe extern "C" fn(*mut DocaTask, DocaData, DocaData)>;

/// `doca_rdma_create`.
///
/// # Safety
/// `rdma` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_create(dev: *mut DocaDev, rdma: *mut *mut DocaRdma) -> DocaError {
    guarded("doca_rdma_create", || libctx::create(&RDMAS, dev, rdma, "rdma", Rdma::create))
}

/// `doca_rdma_destroy`: Idle only.
///
/// # Safety
/// `rdma` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_destroy(rdma: *mut DocaRdma) -> DocaError {
    guarded("doca_rdma_destroy", || {
        // SAFETY: the caller's contract, as `libctx::destroy` states it.
        unsafe { libctx::destroy(&RDMAS, rdma) }
    })
}

/// `doca_rdma_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_rdma_as_ctx(rdma: *mut DocaRdma) -> *mut DocaCtx {
    crate::shielded("doca_rdma_as_ctx", std::ptr::null_mut(), || libctx::as_ctx(&RDMAS, rdma))
}

macro_rules! setters {
    ($($name:ident($ty:ty) => |$r:ident, $v:ident| $e:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: Idle only (see the `doca_rdma` crate).")]
        #[no_mangle]
        pub extern "C" fn $name(rdma: *mut DocaRdma, value: $ty) -> DocaError {
            guarded(stringify!($name), || match self::rdma(rdma) {
                Some(l) => {
                    let ($r, $v) = (&l.obj, value);
                    doca_core::Error::code_of(&$e)
                }
                None => invalid(),
            })
        }
    )*};
}

setters! {
    doca_rdma_set_permissions(u32) => |r, v| r.set_permissions(v);
    doca_rdma_set_gid_index(u32) => |r, v| r.set_gid_index(v);
    doca_rdma_set_max_num_connections(u16) => |r, v| r.set_max_num_connections(v);
    doca_rdma_set_transport_type(u32) => |r, v| idle_first(&r.as_ctx(), "doca_rdma_set_transport_type")
        .and_then(|()| TransportType::from_raw(v))
        .and_then(|t| r.set_transport_type(t));
    doca_rdma_set_send_queue_size(u32) => |r, v| r.set_send_queue_size(v);
    doca_rdma_set_recv_queue_size(u32) => |r, v| r.set_recv_queue_size(v);
    doca_rdma_set_sl(u32) => |r, v| r.set_sl(v);
    doca_rdma_set_rnr_retry_count(u8) => |r, v| r.set_rnr_retry_count(v);
    doca_rdma_set_grh_enabled(u8) => |r, v| r.set_grh_enabled(v != 0);
    doca_rdma_set_connection_request_timeout(u16) => |r, v| r.set_connection_request_timeout(v);
}

macro_rules! getters {
    ($($name:ident($p:ty, $ty:ty) => |$r:ident| $e:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        /// `value` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name(rdma: $p, value: *mut $ty) -> DocaError {
            guarded(stringify!($name), || match self::rdma(rdma) {
                Some(l) => {
                    let $r = &l.obj;
                    out(value, $e)
                }
                None => invalid(),
            })
        }
    )*};
}

getters! {
    doca_rdma_get_permissions(*mut DocaRdma, u32) => |r| r.permissions();
    doca_rdma_get_gid_index(*const DocaRdma, u32) => |r| r.gid_index();
    doca_rdma_get_max_num_connections(*mut DocaRdma, u16) => |r| r.max_num_connections();
    doca_rdma_get_transport_type(*const DocaRdma, u32) => |r| r.transport_type() as u32;
    doca_rdma_get_send_queue_size(*const DocaRdma, u32) => |r| r.send_queue_size();
    doca_rdma_get_sl(*const DocaRdma, u32) => |r| r.sl();
    doca_rdma_get_rnr_retry_count(*const DocaRdma, u8) => |r| r.rnr_retry_count();
    doca_rdma_get_grh_enabled(*const DocaRdma, u8) => |r| r.grh_enabled() as u8;
    doca_rdma_get_connection_request_timeout(*const DocaRdma, u16) => |r| r.connection_request_timeout();
}

macro_rules! task_caps {
    ($($name:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "`: on every device the topology gives RDMA.")]
        #[no_mangle]
        pub extern "C" fn $name(devinfo: *const DocaDevinfo) -> DocaError {
            guarded(stringify!($name), || match crate::dev::devinfo(devinfo) {
                Some(d) => doca_core::Error::code_of(&caps::is_supported(d)),
                None => invalid(),
            })
        }
    )*};
}

task_caps!(
    doca_rdma_cap_task_send_is_supported,
    doca_rdma_cap_task_send_imm_is_supported,
    doca_rdma_cap_task_receive_is_supported,
    doca_rdma_cap_task_read_is_supported,
    doca_rdma_cap_task_write_is_supported,
    doca_rdma_cap_task_write_imm_is_supported,
    doca_rdma_cap_task_atomic_cmp_swp_is_supported,
    doca_rdma_cap_task_atomic_fetch_add_is_supported,
    doca_rdma_cap_task_remote_net_sync_event_get_is_supported,
    doca_rdma_cap_task_remote_net_sync_event_notify_set_is_supported,
    doca_rdma_cap_task_remote_net_sync_event_notify_add_is_supported
);

macro_rules! devinfo_caps {
    ($($name:ident => $f:path;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        /// `value` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name(devinfo: *const DocaDevinfo, value: *mut u32) -> DocaError {
            guarded(stringify!($name), || match crate::dev::devinfo(devinfo) {
                Some(d) => match $f(d) {
                    Ok(v) => out(value, v),
                    Err(e) => e.code(),
                },
                None => invalid(),
            })
        }
    )*};
}

devinfo_caps! {
    doca_rdma_cap_get_max_send_queue_size => caps::max_send_queue_size;
    doca_rdma_cap_get_max_recv_queue_size => caps::max_recv_queue_size;
    doca_rdma_cap_get_max_message_size => caps::max_message_size;
    doca_rdma_cap_get_gid_table_size => caps::gid_table_size;
}

/// `doca_rdma_cap_transport_type_is_supported`.
#[no_mangle]
pub extern "C" fn doca_rdma_cap_transport_type_is_supported(
    devinfo: *const DocaDevinfo,
    transport_type: u32,
) -> DocaError {
    guarded("doca_rdma_cap_transport_type_is_supported", || match crate::dev::devinfo(devinfo) {
        Some(d) => doca_core::Error::code_of(
            &TransportType::from_raw(transport_type).and_then(|t| caps::transport_type_is_supported(d, t)),
        ),
        None => invalid(),
    })
}

/// DOCA 2.5 and 2.6 name the DC transport "currently not supported": their library answers
/// `NOT_SUPPORTED` for it, whatever the device.
fn dc_before_27(transport_type: u32, call: &str) -> Option<DocaError> {
    (transport_type == TransportType::Dc as u32).then(|| {
        doca_core::fail!(
            doca_core::Error::NotSupported,
            "{call}: the DC transport is not supported at DOCA 2.5/2.6 (API level 2.7 has it)"
        )
        .code()
    })
}

/// `doca_rdma_cap_transport_type_is_supported` at levels 2.5 and 2.6 (the header routes it
/// here): DC is `NOT_SUPPORTED`, as those releases' library answers; RC as at 2.7.
#[no_mangle]
pub extern "C" fn doca_rdma_cap_transport_type_is_supported_v26(
    devinfo: *const DocaDevinfo,
    transport_type: u32,
) -> DocaError {
    const CALL: &str = "doca_rdma_cap_transport_type_is_supported";
    guarded(CALL, || match crate::dev::devinfo(devinfo) {
        Some(d) => dc_before_27(transport_type, CALL).unwrap_or_else(|| {
            doca_core::Error::code_of(
                &TransportType::from_raw(transport_type)
                    .and_then(|t| caps::transport_type_is_supported(d, t)),
            )
        }),
        None => invalid(),
    })
}

/// `doca_rdma_set_transport_type` at levels 2.5 and 2.6 (the header routes it here): DC is
/// `NOT_SUPPORTED` (after the state check, as at 2.7).
#[no_mangle]
pub extern "C" fn doca_rdma_set_transport_type_v26(rdma: *mut DocaRdma, transport_type: u32) -> DocaError {
    guarded("doca_rdma_set_transport_type", || match self::rdma(rdma) {
        Some(l) => {
            let r = &l.obj;
            if let Err(e) = idle_first(&r.as_ctx(), "doca_rdma_set_transport_type") {
                return e.code();
            }
            if let Some(e) = dc_before_27(transport_type, "doca_rdma_set_transport_type") {
                return e;
            }
            doca_core::Error::code_of(
                &TransportType::from_raw(transport_type).and_then(|t| r.set_transport_type(t)),
            )
        }
        None => invalid(),
    })
}

/// `doca_rdma_export` (level 2.7): a new connection and its descriptor; the descriptor's
/// bytes stay valid while the context is not destroyed.
///
/// # Safety
/// The out-pointers are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_export(
    rdma: *mut DocaRdma,
    local_rdma_conn_details: *mut *const std::ffi::c_void,
    local_rdma_conn_details_size: *mut usize,
    rdma_connection: *mut *mut DocaRdmaConnection,
) -> DocaError {
    guarded("doca_rdma_export", || {
        let Some(l) = self::rdma(rdma) else { return invalid() };
        for (p, n) in [
            (local_rdma_conn_details as *const (), "local_rdma_conn_details"),
            (local_rdma_conn_details_size as *const (), "local_rdma_conn_details_size"),
            (rdma_connection as *const (), "rdma_connection"),
        ] {
            if let Err(e) = non_null(p, n) {
                return e;
            }
        }
        match l.obj.export() {
            Ok((desc, c)) => {
                let h = CONNS.add(DocaRdmaConnection {
                    rdma,
                    conn: c,
                    desc: desc.into_boxed_slice(),
                    user_data: RefCell::new(Data::NONE),
                });
                CM_HANDLES.with(|m| m.borrow_mut().insert((l.ctx as usize, c), h as usize));
                let Some(hc) = conn(h) else { return invalid() };
                let r = out(local_rdma_conn_details, hc.desc.as_ptr() as *const std::ffi::c_void);
                if r != 0 {
                    return r;
                }
                let r = out(local_rdma_conn_details_size, hc.desc.len());
                if r != 0 {
                    return r;
                }
                out(rdma_connection, h)
            }
            Err(e) => e.code(),
        }
    })
}

/// `doca_rdma_connect` (level 2.7).
///
/// # Safety
/// `remote_rdma_conn_details` is NULL or readable for `remote_rdma_conn_details_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_connect(
    rdma: *mut DocaRdma,
    remote_rdma_conn_details: *const std::ffi::c_void,
    remote_rdma_conn_details_size: usize,
    rdma_connection: *mut DocaRdmaConnection,
) -> DocaError {
    guarded("doca_rdma_connect", || {
        let (Some(l), Some(c)) = (self::rdma(rdma), conn(rdma_connection)) else { return invalid() };
        if c.rdma != rdma || remote_rdma_conn_details.is_null() {
            return invalid();
        }
        if remote_rdma_conn_details_size > 4096 {
            // Not read: no descriptor is that long (the header's code for details that are
            // not a connection's).
            return doca_core::fail!(
                doca_core::Error::ConnectionAborted,
                "doca_rdma_connect: {remote_rdma_conn_details_size} bytes are no connection details"
            )
            .code();
        }
        // SAFETY: the caller's contract.
        let blob = unsafe {
            std::slice::from_raw_parts(remote_rdma_conn_details as *const u8, remote_rdma_conn_details_size)
        };
        doca_core::Error::code_of(&l.obj.connect(blob, c.conn))
    })
}

/// `doca_rdma_connection_set_user_data`.
#[no_mangle]
pub extern "C" fn doca_rdma_connection_set_user_data(
    rdma_connection: *mut DocaRdmaConnection,
    user_data: DocaData,
) -> DocaError {
    guarded("doca_rdma_connection_set_user_data", || match conn(rdma_connection) {
        Some(c) => {
            *c.user_data.borrow_mut() = user_data.to_data();
            // The connection manager's callbacks pass the library's copy.
            if let Some(l) = self::rdma(c.rdma) {
                let _ = l.obj.connection_set_user_data(c.conn, user_data.to_data());
            }
            0
        }
        None => invalid(),
    })
}

/// `doca_rdma_connection_get_user_data`.
///
/// # Safety
/// `user_data` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_connection_get_user_data(
    rdma_connection: *const DocaRdmaConnection,
    user_data: *mut DocaData,
) -> DocaError {
    guarded("doca_rdma_connection_get_user_data", || match conn(rdma_connection) {
        Some(c) => out(user_data, DocaData::from_data(*c.user_data.borrow())),
        None => invalid(),
    })
}

/// `doca_rdma_connection_get_id`.
///
/// # Safety
/// `connection_id` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_connection_get_id(
    rdma_connection: *const DocaRdmaConnection,
    connection_id: *mut u32,
) -> DocaError {
    guarded("doca_rdma_connection_get_id", || match conn(rdma_connection) {
        Some(c) => out(connection_id, c.conn.id()),
        None => invalid(),
    })
}

/// The handle of connection `c` of context `rdma`: the one handed out before (by export
/// or to an earlier callback), else a new one (a connection the connection manager made).
fn handle_of(rdma: *mut DocaRdma, c: Connection) -> *mut DocaRdmaConnection {
    let ctx = self::rdma(rdma).map_or(0, |l| l.ctx as usize);
    let known = CM_HANDLES.with(|m| m.borrow().get(&(ctx, c)).copied());
    if let Some(h) = known {
        // SAFETY: CONNS only holds DocaRdmaConnection handles; no log when it is gone.
        if unsafe { CONNS.peek(h as *const DocaRdmaConnection) }.is_some() {
            return h as *mut DocaRdmaConnection;
        }
    }
    let (desc, data) = match self::rdma(rdma) {
        Some(l) => (
            l.obj.with_descriptor(c, |d| d.to_vec()).unwrap_or_default(),
            l.obj.connection_user_data(c).unwrap_or(Data::NONE),
        ),
        None => (Vec::new(), Data::NONE),
    };
    let h = CONNS.add(DocaRdmaConnection {
        rdma,
        conn: c,
        desc: desc.into_boxed_slice(),
        user_data: RefCell::new(data),
    });
    CM_HANDLES.with(|m| m.borrow_mut().insert((ctx, c), h as usize));
    h
}

thread_local! {
    /// The handle of each connection handed to C, by (its context's `doca_ctx` handle,
    /// connection).
    static CM_HANDLES: RefCell<std::collections::HashMap<(usize, Connection), usize>> = RefCell::default();
}

static ADDRS: Handles = Handles::new(Kind::RdmaAddr);

/// `struct doca_rdma_addr`.
pub struct DocaRdmaAddr(doca_rdma::cm::Addr);

fn addr<'a>(p: *const DocaRdmaAddr) -> Option<&'a DocaRdmaAddr> {
    // SAFETY: ADDRS only holds DocaRdmaAddr handles.
    unsafe { ADDRS.get(p) }
}

/// `doca_rdma_addr_create`: `INVALID_VALUE` for an unknown type or text that is not an
/// address of that type.
///
/// # Safety
/// `address` is NULL or a NUL-terminated string; `addr` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_addr_create(
    addr_type: u32,
    address: *const std::ffi::c_char,
    port: u16,
    addr: *mut *mut DocaRdmaAddr,
) -> DocaError {
    guarded("doca_rdma_addr_create", || {
        if let Err(e) = non_null(addr, "addr") {
            return e;
        }
        if address.is_null() {
            tracing::error!(target: "doca_sdk", "doca_rdma_addr_create: NULL address");
            return invalid();
        }
        // SAFETY: the caller's contract.
        let text = unsafe { std::ffi::CStr::from_ptr(address) };
        let Ok(text) = text.to_str() else {
            tracing::error!(target: "doca_sdk", "doca_rdma_addr_create: the address is not UTF-8 text");
            return invalid();
        };
        match doca_rdma::cm::AddrType::from_raw(addr_type)
            .and_then(|t| doca_rdma::cm::Addr::create(t, text, port))
        {
            Ok(a) => out(addr, ADDRS.add(DocaRdmaAddr(a))),
            Err(e) => e.code(),
        }
    })
}

/// `doca_rdma_addr_destroy`.
///
/// # Safety
/// `addr` is NULL or a handle of `doca_rdma_addr_create`, not used after.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_addr_destroy(addr: *mut DocaRdmaAddr) -> DocaError {
    guarded("doca_rdma_addr_destroy", || {
        // SAFETY: ADDRS only holds DocaRdmaAddr handles; the caller's contract.
        match unsafe { ADDRS.remove(addr) } {
            Some(_) => 0,
            None => invalid(),
        }
    })
}

/// `doca_rdma_start_listen_to_port` (see `doca_rdma::cm`).
#[no_mangle]
pub extern "C" fn doca_rdma_start_listen_to_port(rdma: *mut DocaRdma, port: u16) -> DocaError {
    guarded("doca_rdma_start_listen_to_port", || match self::rdma(rdma) {
        Some(l) => doca_core::Error::code_of(&l.obj.start_listen_to_port(port)),
        None => invalid(),
    })
}

/// `doca_rdma_stop_listen_to_port`.
#[no_mangle]
pub extern "C" fn doca_rdma_stop_listen_to_port(rdma: *mut DocaRdma, port: u16) -> DocaError {
    guarded("doca_rdma_stop_listen_to_port", || match self::rdma(rdma) {
        Some(l) => doca_core::Error::code_of(&l.obj.stop_listen_to_port(port)),
        None => invalid(),
    })
}

/// `doca_rdma_connect_to_addr`: the outcome comes from progress (established or failure
/// callback).
#[no_mangle]
pub extern "C" fn doca_rdma_connect_to_addr(
    rdma: *mut DocaRdma,
    addr: *mut DocaRdmaAddr,
    user_data: DocaData,
) -> DocaError {
    guarded("doca_rdma_connect_to_addr", || {
        let Some(l) = self::rdma(rdma) else { return invalid() };
        let Some(a) = self::addr(addr) else { return invalid() };
        doca_core::Error::code_of(&l.obj.connect_to_addr(&a.0, user_data.to_data()))
    })
}

/// The context and connection behind a connection handle.
fn cm_parts<'a>(p: *mut DocaRdmaConnection) -> Option<(&'a DocaRdma, Connection)> {
    let c = conn(p)?;
    Some((self::rdma(c.rdma)?, c.conn))
}

/// `doca_rdma_connection_accept`: a requested connection, with up to 255 bytes of private
/// data (NULL with length 0 for none).
///
/// # Safety
/// `private_data` is NULL or readable for `private_data_len` bytes.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_connection_accept(
    rdma_connection: *mut DocaRdmaConnection,
    private_data: *mut std::ffi::c_void,
    private_data_len: u8,
) -> DocaError {
    guarded("doca_rdma_connection_accept", || {
        let Some((l, c)) = cm_parts(rdma_connection) else { return invalid() };
        let private: &[u8] = match (private_data.is_null(), private_data_len) {
            (_, 0) => &[],
            (true, n) => {
                tracing::error!(target: "doca_sdk", "doca_rdma_connection_accept: NULL private data of {n} bytes");
                return invalid();
            }
            // SAFETY: the caller's contract.
            (false, n) => unsafe { std::slice::from_raw_parts(private_data as *const u8, n as usize) },
        };
        doca_core::Error::code_of(&l.obj.connection_accept(c, private))
    })
}

/// `doca_rdma_connection_reject`.
#[no_mangle]
pub extern "C" fn doca_rdma_connection_reject(rdma_connection: *mut DocaRdmaConnection) -> DocaError {
    guarded("doca_rdma_connection_reject", || match cm_parts(rdma_connection) {
        Some((l, c)) => doca_core::Error::code_of(&l.obj.connection_reject(c)),
        None => invalid(),
    })
}

/// `doca_rdma_connection_disconnect` (success on a connection over already).
#[no_mangle]
pub extern "C" fn doca_rdma_connection_disconnect(rdma_connection: *mut DocaRdmaConnection) -> DocaError {
    guarded("doca_rdma_connection_disconnect", || match cm_parts(rdma_connection) {
        Some((l, c)) => doca_core::Error::code_of(&l.obj.connection_disconnect(c)),
        None => invalid(),
    })
}

/// A connection state callback.
pub type RdmaConnCb = Option<unsafe extern "C" fn(*mut DocaRdmaConnection, DocaData, DocaData)>;
/// A connection request callback.
pub type RdmaConnRequestCb = Option<unsafe extern "C" fn(*mut DocaRdmaConnection, DocaData)>;

/// `doca_rdma_set_connection_state_callbacks`: Idle only. A NULL callback is not called
/// (a server without a request callback never accepts).
#[no_mangle]
pub extern "C" fn doca_rdma_set_connection_state_callbacks(
    rdma: *mut DocaRdma,
    request: RdmaConnRequestCb,
    established: RdmaConnCb,
    failure: RdmaConnCb,
    disconnect: RdmaConnCb,
) -> DocaError {
    guarded("doca_rdma_set_connection_state_callbacks", || {
        let Some(l) = self::rdma(rdma) else { return invalid() };
        // The request callback may be NULL (the header: for an application that is only a
        // client); the other three are required: a NULL one is refused rather than a
        // connection event silently dropped. A request reaching a context without one is
        // rejected (nobody could accept it), with a warning.
        if established.is_none() || failure.is_none() || disconnect.is_none() {
            return crate::check::refuse(|| {
                "the established, failure and disconnect callbacks are required (NULL given)".into()
            });
        }
        let wrap = |f: RdmaConnCb| {
            move |c: Connection, cd: Data, xd: Data| {
                if let Some(f) = f {
                    let h = handle_of(rdma, c);
                    // SAFETY: a callback the application registered, called as its type says.
                    unsafe { f(h, DocaData::from_data(cd), DocaData::from_data(xd)) }
                }
            }
        };
        let r = l.obj.set_connection_state_callbacks(
            move |c, xd| {
                let h = handle_of(rdma, c);
                match request {
                    // SAFETY: a callback the application registered, called as its type says.
                    Some(f) => unsafe { f(h, DocaData::from_data(xd)) },
                    None => {
                        tracing::warn!(
                            target: "doca_sdk",
                            "rdma: a connection request reached a context without a request callback \
                             (doca_rdma_set_connection_state_callbacks was given NULL): rejected"
                        );
                        let _ = doca_rdma_connection_reject(h);
                    }
                }
            },
            wrap(established),
            wrap(failure),
            wrap(disconnect),
        );
        doca_core::Error::code_of(&r)
    })
}

macro_rules! set_conf {
    ($($name:ident $set:ident $t:ident $v:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: Idle only; at most the queue size.")]
        #[no_mangle]
        pub extern "C" fn $name(rdma: *mut DocaRdma, done: RdmaTaskCb, failed: RdmaTaskCb, num_tasks: u32) -> DocaError {
            guarded(stringify!($name), || {
                let (Some(l), Some(done), Some(failed)) = (self::rdma(rdma), done, failed) else { return invalid() };
                let (w1, w2) = (Rc::downgrade(&l.tasks), Rc::downgrade(&l.tasks));
                let r = l.obj.$set(
                    move |t: $t, td: Data, cd: Data| complete(&w1, done, AnyTask::$v(t), td, cd),
                    move |t: $t, td: Data, cd: Data| complete(&w2, failed, AnyTask::$v(t), td, cd),
                    num_tasks,
                );
                doca_core::Error::code_of(&r)
            })
        }
    )*};
}

set_conf! {
    doca_rdma_task_send_set_conf task_send_set_conf SendTask RdmaSend;
    doca_rdma_task_send_imm_set_conf task_send_imm_set_conf SendImmTask RdmaSendImm;
    doca_rdma_task_receive_set_conf task_receive_set_conf ReceiveTask RdmaReceive;
    doca_rdma_task_read_set_conf task_read_set_conf ReadTask RdmaRead;
    doca_rdma_task_write_set_conf task_write_set_conf WriteTask RdmaWrite;
    doca_rdma_task_write_imm_set_conf task_write_imm_set_conf WriteImmTask RdmaWriteImm;
    doca_rdma_task_atomic_cmp_swp_set_conf task_atomic_cmp_swp_set_conf CmpSwpTask RdmaCmpSwp;
    doca_rdma_task_atomic_fetch_add_set_conf task_atomic_fetch_add_set_conf FetchAddTask RdmaFetchAdd;
    doca_rdma_task_remote_net_sync_event_get_set_conf task_remote_net_sync_event_get_set_conf RemoteNetGetTask RdmaSeGet;
    doca_rdma_task_remote_net_sync_event_notify_set_set_conf task_remote_net_sync_event_notify_set_set_conf RemoteNetNotifySetTask RdmaSeNotifySet;
    doca_rdma_task_remote_net_sync_event_notify_add_set_conf task_remote_net_sync_event_notify_add_set_conf RemoteNetNotifyAddTask RdmaSeNotifyAdd;
}

macro_rules! as_tasks {
    ($($name:ident $of:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: the same handle.")]
        #[no_mangle]
        pub extern "C" fn $name(task: *mut DocaTask) -> *mut DocaTask {
            as_task(stringify!($name), task, Of::$of)
        }
    )*};
}

as_tasks! {
    doca_rdma_task_send_as_task RdmaSend;
    doca_rdma_task_send_imm_as_task RdmaSendImm;
    doca_rdma_task_receive_as_task RdmaReceive;
    doca_rdma_task_read_as_task RdmaRead;
    doca_rdma_task_write_as_task RdmaWrite;
    doca_rdma_task_write_imm_as_task RdmaWriteImm;
    doca_rdma_task_atomic_cmp_swp_as_task RdmaCmpSwp;
    doca_rdma_task_atomic_fetch_add_as_task RdmaFetchAdd;
    doca_rdma_task_remote_net_sync_event_get_as_task RdmaSeGet;
    doca_rdma_task_remote_net_sync_event_notify_set_as_task RdmaSeNotifySet;
    doca_rdma_task_remote_net_sync_event_notify_add_as_task RdmaSeNotifyAdd;
}

/// Hands a new task out, remembering its C buffers (`src`, `dst`) for the getters.
fn hand_out(
    l: &DocaRdma,
    t: doca_core::Result<AnyTask>,
    src: *const DocaBuf,
    dst: *mut DocaBuf,
    task_p: *mut *mut DocaTask,
) -> DocaError {
    match t {
        Ok(t) => {
            let h = l.tasks.hand_out(t, src as *mut DocaBuf);
            if let Some(handle) = self::task(h) {
                handle.dst.set(dst);
            }
            out(task_p, h)
        }
        Err(e) => e.code(),
    }
}

/// The parts every allocate_init of a connection's task checks.
fn parts<'a>(
    rdma: *mut DocaRdma,
    c: *mut DocaRdmaConnection,
    task_p: *mut *mut DocaTask,
) -> std::result::Result<(&'a DocaRdma, Connection), DocaError> {
    let (Some(l), Some(c)) = (self::rdma(rdma), conn(c)) else { return Err(invalid()) };
    if c.rdma != rdma {
        return Err(invalid());
    }
    non_null(task_p, "task")?;
    Ok((l, c.conn))
}

/// `doca_rdma_task_send_allocate_init`.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_task_send_allocate_init(
    rdma: *mut DocaRdma,
    rdma_connection: *mut DocaRdmaConnection,
    src_buf: *const DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_rdma_task_send_allocate_init", || {
        let (l, c) = match parts(rdma, rdma_connection, task) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let Ok(s) = opt_buf(src_buf) else { return invalid() };
        let t = l.obj.task_send_alloc_init(c, s, user_data.to_data()).map(AnyTask::RdmaSend);
        hand_out(l, t, src_buf, std::ptr::null_mut(), task)
    })
}

/// `doca_rdma_task_send_imm_allocate_init` (`immediate_data` as given: big-endian).
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_task_send_imm_allocate_init(
    rdma: *mut DocaRdma,
    rdma_connection: *mut DocaRdmaConnection,
    src_buf: *const DocaBuf,
    immediate_data: u32,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_rdma_task_send_imm_allocate_init", || {
        let (l, c) = match parts(rdma, rdma_connection, task) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let Ok(s) = opt_buf(src_buf) else { return invalid() };
        let t = l
            .obj
            .task_send_imm_alloc_init(c, s, immediate_data, user_data.to_data())
            .map(AnyTask::RdmaSendImm);
        hand_out(l, t, src_buf, std::ptr::null_mut(), task)
    })
}

/// `doca_rdma_task_receive_allocate_init`.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_task_receive_allocate_init(
    rdma: *mut DocaRdma,
    dst_buf: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_rdma_task_receive_allocate_init", || {
        let Some(l) = self::rdma(rdma) else { return invalid() };
        if let Err(e) = non_null(task, "task") {
            return e;
        }
        let Ok(d) = opt_buf(dst_buf) else { return invalid() };
        let t = l.obj.task_receive_alloc_init(d, user_data.to_data()).map(AnyTask::RdmaReceive);
        hand_out(l, t, std::ptr::null(), dst_buf, task)
    })
}

macro_rules! two_buf_alloc {
    ($($name:ident $f:ident $v:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        /// `task` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            rdma: *mut DocaRdma,
            rdma_connection: *mut DocaRdmaConnection,
            src_buf: *const DocaBuf,
            dst_buf: *mut DocaBuf,
            user_data: DocaData,
            task: *mut *mut DocaTask,
        ) -> DocaError {
            guarded(stringify!($name), || {
                let (l, c) = match parts(rdma, rdma_connection, task) {
                    Ok(p) => p,
                    Err(e) => return e,
                };
                let (Ok(s), Ok(d)) = (opt_buf(src_buf), opt_buf(dst_buf)) else { return invalid() };
                let t = l.obj.$f(c, s, d, user_data.to_data()).map(AnyTask::$v);
                hand_out(l, t, src_buf, dst_buf, task)
            })
        }
    )*};
}

two_buf_alloc! {
    doca_rdma_task_read_allocate_init task_read_alloc_init RdmaRead;
    doca_rdma_task_write_allocate_init task_write_alloc_init RdmaWrite;
}

/// `doca_rdma_task_write_imm_allocate_init`.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_task_write_imm_allocate_init(
    rdma: *mut DocaRdma,
    rdma_connection: *mut DocaRdmaConnection,
    src_buf: *const DocaBuf,
    dst_buf: *mut DocaBuf,
    immediate_data: u32,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_rdma_task_write_imm_allocate_init", || {
        let (l, c) = match parts(rdma, rdma_connection, task) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (Ok(s), Ok(d)) = (opt_buf(src_buf), opt_buf(dst_buf)) else { return invalid() };
        let t = l
            .obj
            .task_write_imm_alloc_init(c, s, d, immediate_data, user_data.to_data())
            .map(AnyTask::RdmaWriteImm);
        hand_out(l, t, src_buf, dst_buf, task)
    })
}

/// `doca_rdma_task_atomic_cmp_swp_allocate_init`.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_task_atomic_cmp_swp_allocate_init(
    rdma: *mut DocaRdma,
    rdma_connection: *mut DocaRdmaConnection,
    dst_buf: *mut DocaBuf,
    result_buf: *mut DocaBuf,
    cmp_data: u64,
    swap_data: u64,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_rdma_task_atomic_cmp_swp_allocate_init", || {
        let (l, c) = match parts(rdma, rdma_connection, task) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (Ok(d), Ok(r)) = (opt_buf(dst_buf), opt_buf(result_buf)) else { return invalid() };
        let t = l
            .obj
            .task_atomic_cmp_swp_alloc_init(c, d, r, cmp_data, swap_data, user_data.to_data())
            .map(AnyTask::RdmaCmpSwp);
        hand_out(l, t, result_buf, dst_buf, task)
    })
}

/// `doca_rdma_task_atomic_fetch_add_allocate_init`.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_task_atomic_fetch_add_allocate_init(
    rdma: *mut DocaRdma,
    rdma_connection: *mut DocaRdmaConnection,
    dst_buf: *mut DocaBuf,
    result_buf: *mut DocaBuf,
    add_data: u64,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_rdma_task_atomic_fetch_add_allocate_init", || {
        let (l, c) = match parts(rdma, rdma_connection, task) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (Ok(d), Ok(r)) = (opt_buf(dst_buf), opt_buf(result_buf)) else { return invalid() };
        let t = l
            .obj
            .task_atomic_fetch_add_alloc_init(c, d, r, add_data, user_data.to_data())
            .map(AnyTask::RdmaFetchAdd);
        hand_out(l, t, result_buf, dst_buf, task)
    })
}

/// The receive task behind `p`.
fn receive<R>(p: *const DocaTask, f: impl FnOnce(&ReceiveTask) -> R) -> Option<R> {
    task(p)?.with(|t| match t {
        AnyTask::RdmaReceive(t) => Some(f(t)),
        _ => None,
    })?
}

/// `doca_rdma_task_receive_get_dst_buf`.
#[no_mangle]
pub extern "C" fn doca_rdma_task_receive_get_dst_buf(task: *const DocaTask) -> *mut DocaBuf {
    crate::shielded("doca_rdma_task_receive_get_dst_buf", std::ptr::null_mut(), || {
        // A freed handle is never live again (its token's generation is spent).
        if let Some((_, dst)) = crate::task::freed_bufs(task) {
            tracing::debug!(target: "doca_sdk", "doca_rdma_task_receive_get_dst_buf: on a freed task (its buffer as it was)");
            return dst;
        }
        match receive(task, |_| ()) {
            Some(()) => self::task(task).map_or(std::ptr::null_mut(), |h| h.dst.get()),
            None => std::ptr::null_mut(),
        }
    })
}

/// `doca_rdma_task_receive_get_result_rdma_connection`: the connection a completed receive
/// task's message came on (NULL before completion).
#[no_mangle]
pub extern "C" fn doca_rdma_task_receive_get_result_rdma_connection(
    task: *const DocaTask,
) -> *const DocaRdmaConnection {
    crate::shielded("doca_rdma_task_receive_get_result_rdma_connection", std::ptr::null(), || {
        let Some(c) = receive(task, |t| t.result_connection()).flatten() else { return std::ptr::null() };
        let ctx = crate::task::ctx_of(task) as usize;
        match CM_HANDLES.with(|m| m.borrow().get(&(ctx, c)).copied()) {
            Some(h) => h as *const DocaRdmaConnection,
            None => std::ptr::null(),
        }
    })
}

/// `doca_rdma_task_receive_get_result_len`.
#[no_mangle]
pub extern "C" fn doca_rdma_task_receive_get_result_len(task: *const DocaTask) -> u32 {
    crate::shielded("doca_rdma_task_receive_get_result_len", 0, || {
        receive(task, |t| t.result_len()).unwrap_or(0)
    })
}

/// `doca_rdma_task_receive_get_result_immediate_data` (as the sender gave it).
#[no_mangle]
pub extern "C" fn doca_rdma_task_receive_get_result_immediate_data(task: *const DocaTask) -> u32 {
    crate::shielded("doca_rdma_task_receive_get_result_immediate_data", 0, || {
        receive(task, |t| t.result_immediate_data()).unwrap_or(0)
    })
}

/// `doca_rdma_task_receive_get_result_opcode`.
#[no_mangle]
pub extern "C" fn doca_rdma_task_receive_get_result_opcode(task: *const DocaTask) -> u32 {
    crate::shielded("doca_rdma_task_receive_get_result_opcode", 0, || {
        receive(task, |t| t.result_opcode().map_or(0, |o| o as u32)).unwrap_or(0)
    })
}

/// `doca_rdma_task_send_get_src_buf`.
#[no_mangle]
pub extern "C" fn doca_rdma_task_send_get_src_buf(task: *const DocaTask) -> *const DocaBuf {
    crate::shielded("doca_rdma_task_send_get_src_buf", std::ptr::null(), || {
        // A freed handle is never live again (its token's generation is spent).
        if let Some((src, _)) = crate::task::freed_bufs(task) {
            tracing::debug!(target: "doca_sdk", "doca_rdma_task_send_get_src_buf: on a freed task (its buffer as it was)");
            return src as *const DocaBuf;
        }
        let ok =
            self::task(task).and_then(|h| h.with(|t| matches!(t, AnyTask::RdmaSend(_)))).unwrap_or(false);
        if ok {
            self::task(task).map_or(std::ptr::null(), |h| h.buf.get() as *const DocaBuf)
        } else {
            std::ptr::null()
        }
    })
}

/// `doca_rdma_task_read_get_result_len`.
#[no_mangle]
pub extern "C" fn doca_rdma_task_read_get_result_len(task: *const DocaTask) -> u32 {
    crate::shielded("doca_rdma_task_read_get_result_len", 0, || {
        self::task(task)
            .and_then(|h| {
                h.with(|t| match t {
                    AnyTask::RdmaRead(t) => Some(t.result_len()),
                    _ => None,
                })
            })
            .flatten()
            .unwrap_or(0)
    })
}

/// [`hand_out`] for a remote sync event task, remembering its event's handle for the getter.
fn hand_out_with_event(
    l: &DocaRdma,
    t: doca_core::Result<AnyTask>,
    src: *const DocaBuf,
    dst: *mut DocaBuf,
    event: *mut core::ffi::c_void,
    task_p: *mut *mut DocaTask,
) -> DocaError {
    let r = hand_out(l, t, src, dst, task_p);
    if r == 0 {
        // SAFETY: hand_out wrote the new handle through task_p (checked writable by it).
        let h = unsafe { task_p.read() };
        if let Some(h) = self::task(h) {
            h.event.set(event);
        }
    }
    r
}

/// The remote net sync event behind a handle C gave (NULL: none yet).
fn opt_remote_net<'a>(
    p: *const crate::sync_event::DocaSyncEventRemoteNet,
) -> std::result::Result<Option<&'a doca_sync_event::RemoteNet>, ()> {
    if p.is_null() {
        return Ok(None);
    }
    crate::sync_event::remote_net(p).map(|r| Some(&r.0)).ok_or(())
}

/// `doca_rdma_task_remote_net_sync_event_get_allocate_init`: the peer's event's value into
/// `dst_buf` (8 bytes).
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_task_remote_net_sync_event_get_allocate_init(
    rdma: *mut DocaRdma,
    rdma_connection: *mut DocaRdmaConnection,
    event: *const crate::sync_event::DocaSyncEventRemoteNet,
    dst_buf: *mut DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_rdma_task_remote_net_sync_event_get_allocate_init", || {
        let (l, c) = match parts(rdma, rdma_connection, task) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (Ok(se), Ok(d)) = (opt_remote_net(event), opt_buf(dst_buf)) else { return invalid() };
        let t = l
            .obj
            .task_remote_net_sync_event_get_alloc_init(c, se, d, user_data.to_data())
            .map(AnyTask::RdmaSeGet);
        hand_out_with_event(l, t, std::ptr::null(), dst_buf, event as *mut core::ffi::c_void, task)
    })
}

/// `doca_rdma_task_remote_net_sync_event_notify_set_allocate_init`: sets the peer's event to
/// the 8 bytes at `src_buf`'s data.
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_task_remote_net_sync_event_notify_set_allocate_init(
    rdma: *mut DocaRdma,
    rdma_connection: *mut DocaRdmaConnection,
    event: *mut crate::sync_event::DocaSyncEventRemoteNet,
    src_buf: *const DocaBuf,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_rdma_task_remote_net_sync_event_notify_set_allocate_init", || {
        let (l, c) = match parts(rdma, rdma_connection, task) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (Ok(se), Ok(s)) = (opt_remote_net(event), opt_buf(src_buf)) else { return invalid() };
        let t = l
            .obj
            .task_remote_net_sync_event_notify_set_alloc_init(c, se, s, user_data.to_data())
            .map(AnyTask::RdmaSeNotifySet);
        hand_out_with_event(l, t, src_buf, std::ptr::null_mut(), event as *mut core::ffi::c_void, task)
    })
}

/// `doca_rdma_task_remote_net_sync_event_notify_add_allocate_init`: adds `add_data` to the
/// peer's event; the value before lands in `result_buf` (8 bytes).
///
/// # Safety
/// `task` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_task_remote_net_sync_event_notify_add_allocate_init(
    rdma: *mut DocaRdma,
    rdma_connection: *mut DocaRdmaConnection,
    event: *mut crate::sync_event::DocaSyncEventRemoteNet,
    result_buf: *mut DocaBuf,
    add_data: u64,
    user_data: DocaData,
    task: *mut *mut DocaTask,
) -> DocaError {
    guarded("doca_rdma_task_remote_net_sync_event_notify_add_allocate_init", || {
        let (l, c) = match parts(rdma, rdma_connection, task) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let (Ok(se), Ok(r)) = (opt_remote_net(event), opt_buf(result_buf)) else { return invalid() };
        let t = l
            .obj
            .task_remote_net_sync_event_notify_add_alloc_init(c, se, r, add_data, user_data.to_data())
            .map(AnyTask::RdmaSeNotifyAdd);
        hand_out_with_event(l, t, result_buf, std::ptr::null_mut(), event as *mut core::ffi::c_void, task)
    })
}

/// `doca_rdma_task_remote_net_sync_event_get_get_dst_buf`.
#[no_mangle]
pub extern "C" fn doca_rdma_task_remote_net_sync_event_get_get_dst_buf(
    task: *const DocaTask,
) -> *mut DocaBuf {
    crate::shielded("doca_rdma_task_remote_net_sync_event_get_get_dst_buf", std::ptr::null_mut(), || {
        match self::task(task) {
            Some(h) if h.with(|t| matches!(t, AnyTask::RdmaSeGet(_))) == Some(true) => h.dst.get(),
            _ => std::ptr::null_mut(),
        }
    })
}

/// `doca_rdma_task_remote_net_sync_event_get_get_result_len`: 8 after completion.
#[no_mangle]
pub extern "C" fn doca_rdma_task_remote_net_sync_event_get_get_result_len(task: *const DocaTask) -> u32 {
    crate::shielded("doca_rdma_task_remote_net_sync_event_get_get_result_len", 0, || {
        self::task(task)
            .and_then(|h| {
                h.with(|t| match t {
                    AnyTask::RdmaSeGet(t) => Some(t.result_len()),
                    _ => None,
                })
            })
            .flatten()
            .unwrap_or(0)
    })
}

/// `doca_rdma_task_remote_net_sync_event_notify_set_get_src_buf`.
#[no_mangle]
pub extern "C" fn doca_rdma_task_remote_net_sync_event_notify_set_get_src_buf(
    task: *const DocaTask,
) -> *const DocaBuf {
    crate::shielded("doca_rdma_task_remote_net_sync_event_notify_set_get_src_buf", std::ptr::null(), || {
        match self::task(task) {
            Some(h) if h.with(|t| matches!(t, AnyTask::RdmaSeNotifySet(_))) == Some(true) => h.buf.get(),
            _ => std::ptr::null(),
        }
    })
}

/// `doca_rdma_task_remote_net_sync_event_notify_add_get_result_buf`.
#[no_mangle]
pub extern "C" fn doca_rdma_task_remote_net_sync_event_notify_add_get_result_buf(
    task: *const DocaTask,
) -> *mut DocaBuf {
    crate::shielded(
        "doca_rdma_task_remote_net_sync_event_notify_add_get_result_buf",
        std::ptr::null_mut(),
        || match self::task(task) {
            Some(h) if h.with(|t| matches!(t, AnyTask::RdmaSeNotifyAdd(_))) == Some(true) => h.buf.get(),
            _ => std::ptr::null_mut(),
        },
    )
}

// ---- API level 2.6: one connection per context, no argument for it ----

thread_local! {
    /// Level 2.6: each context's one connection (made by its export or connect), by the
    /// context's `doca_ctx` handle.
    static IMPLICIT: RefCell<std::collections::HashMap<usize, usize>> = RefCell::default();
}

/// The context's 2.6 connection while it names a live connection of it.
fn implicit(l: &DocaRdma) -> Option<*mut DocaRdmaConnection> {
    let h = IMPLICIT.with(|m| m.borrow().get(&(l.ctx as usize)).copied())? as *mut DocaRdmaConnection;
    // SAFETY: CONNS only holds DocaRdmaConnection handles; no log when it is gone.
    let c = unsafe { CONNS.peek(h as *const DocaRdmaConnection) }?;
    l.obj.connection_state(c.conn).ok().map(|_| h)
}

/// The context's 2.6 connection, exported now if it has none that is still exported.
fn implicit_exported(
    l: &DocaRdma,
    rdma: *mut DocaRdma,
) -> std::result::Result<*mut DocaRdmaConnection, DocaError> {
    if let Some(h) = implicit(l) {
        let exported =
            conn(h).is_some_and(|c| l.obj.connection_state(c.conn) == Ok(doca_rdma::ConnState::Exported));
        if exported {
            return Ok(h);
        }
    }
    let (mut p, mut n, mut h) = (std::ptr::null::<std::ffi::c_void>(), 0usize, std::ptr::null_mut());
    // SAFETY: the out-pointers are this frame's locals.
    let r = unsafe { doca_rdma_export(rdma, &mut p, &mut n, &mut h) };
    if r != 0 {
        return Err(r);
    }
    IMPLICIT.with(|m| m.borrow_mut().insert(l.ctx as usize, h as usize));
    Ok(h)
}

/// The context's 2.6 connection for a task allocator: `BAD_STATE` before export/connect.
fn implicit_for_task(
    rdma: *mut DocaRdma,
    what: &str,
) -> std::result::Result<*mut DocaRdmaConnection, DocaError> {
    let Some(l) = self::rdma(rdma) else { return Err(invalid()) };
    implicit(l).ok_or_else(|| {
        doca_core::fail!(
            doca_core::Error::BadState,
            "{what}: the context has no connection yet (doca_rdma_export or doca_rdma_connect first)"
        )
        .code()
    })
}

/// `doca_rdma_create` at level 2.6: the context starts as DOCA 2.6's did — `doca_ctx_start`
/// answers `IN_PROGRESS` and the context becomes Running when `doca_rdma_connect` connects.
///
/// # Safety
/// `rdma` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_create_v26(dev: *mut DocaDev, rdma: *mut *mut DocaRdma) -> DocaError {
    guarded("doca_rdma_create", || {
        libctx::create(&RDMAS, dev, rdma, "rdma", |d| {
            let r = Rdma::create(d)?;
            r.set_running_on_connect(true)?;
            Ok(r)
        })
    })
}

/// `doca_rdma_export` at level 2.6: the context's connection (a new one when it has none
/// still exported) and its descriptor.
///
/// # Safety
/// The out-pointers are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_export_v26(
    rdma: *const DocaRdma,
    local_rdma_conn_details: *mut *const std::ffi::c_void,
    local_rdma_conn_details_size: *mut usize,
) -> DocaError {
    guarded("doca_rdma_export", || {
        // A handle is a token: the const of 2.6's prototype changes nothing.
        let rdma = rdma as *mut DocaRdma;
        let Some(l) = self::rdma(rdma) else { return invalid() };
        for (p, n) in [
            (local_rdma_conn_details as *const (), "local_rdma_conn_details"),
            (local_rdma_conn_details_size as *const (), "local_rdma_conn_details_size"),
        ] {
            if let Err(e) = non_null(p, n) {
                return e;
            }
        }
        let h = match implicit_exported(l, rdma) {
            Ok(h) => h,
            Err(e) => return e,
        };
        let Some(c) = conn(h) else { return invalid() };
        let r = out(local_rdma_conn_details, c.desc.as_ptr() as *const std::ffi::c_void);
        if r != 0 {
            return r;
        }
        out(local_rdma_conn_details_size, c.desc.len())
    })
}

/// `doca_rdma_connect` at level 2.6: connects the context's connection (exported now when
/// the application did not export: a DC requester only reads the peer's details).
///
/// # Safety
/// `remote_rdma_conn_details` is NULL or readable for `remote_rdma_conn_details_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_connect_v26(
    rdma: *mut DocaRdma,
    remote_rdma_conn_details: *const std::ffi::c_void,
    remote_rdma_conn_details_size: usize,
) -> DocaError {
    guarded("doca_rdma_connect", || {
        let Some(l) = self::rdma(rdma) else { return invalid() };
        // One connection a context at this level: once it left Exported (connected, or
        // connected and then lost), the instance is connected already.
        let state = implicit(l).and_then(|h| conn(h)).map(|c| l.obj.connection_state(c.conn));
        if let Some(Ok(s)) = state {
            if s != doca_rdma::ConnState::Exported {
                return doca_core::fail!(
                    doca_core::Error::BadState,
                    "doca_rdma_connect: the context is connected already ({s:?}; stop and start it to connect again)"
                )
                .code();
            }
        }
        let h = match implicit_exported(l, rdma) {
            Ok(h) => h,
            Err(e) => return e,
        };
        // SAFETY: the caller's contract, passed on.
        unsafe { doca_rdma_connect(rdma, remote_rdma_conn_details, remote_rdma_conn_details_size, h) }
    })
}

macro_rules! v26_alloc {
    ($($v26:ident => $v27:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[doc = concat!("`", stringify!($v27), "` at level 2.6: on the context's connection (`BAD_STATE` before export or connect).")]
        ///
        /// # Safety
        /// `task` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $v26(rdma: *mut DocaRdma, $($arg: $ty,)* user_data: DocaData, task: *mut *mut DocaTask) -> DocaError {
            let c = match implicit_for_task(rdma, stringify!($v27)) {
                Ok(c) => c,
                Err(e) => return e,
            };
            // SAFETY: the caller's contract, passed on.
            unsafe { $v27(rdma, c, $($arg,)* user_data, task) }
        }
    )*};
}

v26_alloc! {
    doca_rdma_task_send_allocate_init_v26 => doca_rdma_task_send_allocate_init(src_buf: *const DocaBuf);
    doca_rdma_task_send_imm_allocate_init_v26 => doca_rdma_task_send_imm_allocate_init(src_buf: *const DocaBuf, immediate_data: u32);
    doca_rdma_task_read_allocate_init_v26 => doca_rdma_task_read_allocate_init(src_buf: *const DocaBuf, dst_buf: *mut DocaBuf);
    doca_rdma_task_write_allocate_init_v26 => doca_rdma_task_write_allocate_init(src_buf: *const DocaBuf, dst_buf: *mut DocaBuf);
    doca_rdma_task_write_imm_allocate_init_v26 => doca_rdma_task_write_imm_allocate_init(src_buf: *const DocaBuf, dst_buf: *mut DocaBuf, immediate_data: u32);
    doca_rdma_task_atomic_cmp_swp_allocate_init_v26 => doca_rdma_task_atomic_cmp_swp_allocate_init(dst_buf: *mut DocaBuf, result_buf: *mut DocaBuf, cmp_data: u64, swap_data: u64);
    doca_rdma_task_atomic_fetch_add_allocate_init_v26 => doca_rdma_task_atomic_fetch_add_allocate_init(dst_buf: *mut DocaBuf, result_buf: *mut DocaBuf, add_data: u64);
    doca_rdma_task_remote_net_sync_event_get_allocate_init_v26 => doca_rdma_task_remote_net_sync_event_get_allocate_init(event: *const crate::sync_event::DocaSyncEventRemoteNet, dst_buf: *mut DocaBuf);
    doca_rdma_task_remote_net_sync_event_notify_set_allocate_init_v26 => doca_rdma_task_remote_net_sync_event_notify_set_allocate_init(event: *mut crate::sync_event::DocaSyncEventRemoteNet, src_buf: *const DocaBuf);
    doca_rdma_task_remote_net_sync_event_notify_add_allocate_init_v26 => doca_rdma_task_remote_net_sync_event_notify_add_allocate_init(event: *mut crate::sync_event::DocaSyncEventRemoteNet, result_buf: *mut DocaBuf, add_data: u64);
}

// ---- The getters and setters of allocated tasks ----

/// Runs `f` on the task behind `p` when it is a task of the kind `want` held by the
/// application (not submitted); logs and returns `None` otherwise.
fn held<R>(name: &str, p: *const DocaTask, f: impl FnOnce(&AnyTask, &DocaTask) -> Option<R>) -> Option<R> {
    let h = self::task(p)?;
    let r = h.with(|t| f(t, h)).flatten();
    if r.is_none() {
        tracing::error!(target: "doca_sdk", "{name}: not a task of this kind held by the application (submitted, or another kind)");
    }
    r
}

/// The buffer accessors of a task type: a getter answers the handle C last gave (NULL for a
/// handle that is not a live task of that type, logged); a setter checks the buffer handle
/// (NULL: none) and gives it to the task.
macro_rules! buf_getters {
    ($($name:ident: $variant:ident, $field:ident, *$ptr:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        #[no_mangle]
        pub extern "C" fn $name(task: *const DocaTask) -> *$ptr DocaBuf {
            crate::shielded(stringify!($name), std::ptr::null_mut(), || {
                held(stringify!($name), task, |t, h| matches!(t, AnyTask::$variant(_)).then(|| h.$field.get()))
                    .unwrap_or(std::ptr::null_mut())
            })
        }
    )*};
}

/// See [`buf_getters`].
macro_rules! buf_setters {
    ($($name:ident: $variant:ident, $method:ident, $field:ident, *$ptr:ident;)*) => {$(
        #[doc = concat!("`", stringify!($name), "` (NULL: none).")]
        #[no_mangle]
        pub extern "C" fn $name(task: *mut DocaTask, buf: *$ptr DocaBuf) {
            crate::shielded(stringify!($name), (), || {
                let Ok(b) = opt_buf(buf) else {
                    tracing::error!(target: "doca_sdk", "{}: not a live buffer handle", stringify!($name));
                    return;
                };
                held(stringify!($name), task, |t, h| match t {
                    AnyTask::$variant(t) => {
                        t.$method(b);
                        h.$field.set(buf.cast_mut_buf());
                        Some(())
                    }
                    _ => None,
                });
            })
        }
    )*};
}

/// A buffer handle as the task handle keeps it (C's `const` changes nothing: a handle is a
/// token).
trait CastMutBuf {
    fn cast_mut_buf(self) -> *mut DocaBuf;
}

impl CastMutBuf for *const DocaBuf {
    fn cast_mut_buf(self) -> *mut DocaBuf {
        self.cast_mut()
    }
}

impl CastMutBuf for *mut DocaBuf {
    fn cast_mut_buf(self) -> *mut DocaBuf {
        self
    }
}

buf_getters! {
    doca_rdma_task_send_imm_get_src_buf: RdmaSendImm, buf, *const;
    doca_rdma_task_read_get_src_buf: RdmaRead, buf, *const;
    doca_rdma_task_read_get_dst_buf: RdmaRead, dst, *mut;
    doca_rdma_task_write_get_src_buf: RdmaWrite, buf, *const;
    doca_rdma_task_write_get_dst_buf: RdmaWrite, dst, *mut;
    doca_rdma_task_write_imm_get_src_buf: RdmaWriteImm, buf, *const;
    doca_rdma_task_write_imm_get_dst_buf: RdmaWriteImm, dst, *mut;
    doca_rdma_task_atomic_cmp_swp_get_dst_buf: RdmaCmpSwp, dst, *mut;
    doca_rdma_task_atomic_cmp_swp_get_result_buf: RdmaCmpSwp, buf, *mut;
    doca_rdma_task_atomic_fetch_add_get_dst_buf: RdmaFetchAdd, dst, *mut;
    doca_rdma_task_atomic_fetch_add_get_result_buf: RdmaFetchAdd, buf, *mut;
}

buf_setters! {
    doca_rdma_task_send_imm_set_src_buf: RdmaSendImm, set_src, buf, *const;
    doca_rdma_task_send_set_src_buf: RdmaSend, set_src, buf, *const;
    doca_rdma_task_receive_set_dst_buf: RdmaReceive, set_dst, dst, *mut;
    doca_rdma_task_read_set_src_buf: RdmaRead, set_src, buf, *const;
    doca_rdma_task_read_set_dst_buf: RdmaRead, set_dst, dst, *mut;
    doca_rdma_task_write_set_src_buf: RdmaWrite, set_src, buf, *const;
    doca_rdma_task_write_set_dst_buf: RdmaWrite, set_dst, dst, *mut;
    doca_rdma_task_write_imm_set_src_buf: RdmaWriteImm, set_src, buf, *const;
    doca_rdma_task_write_imm_set_dst_buf: RdmaWriteImm, set_dst, dst, *mut;
    doca_rdma_task_atomic_cmp_swp_set_dst_buf: RdmaCmpSwp, set_dst, dst, *mut;
    doca_rdma_task_atomic_cmp_swp_set_result_buf: RdmaCmpSwp, set_result, buf, *mut;
    doca_rdma_task_atomic_fetch_add_set_dst_buf: RdmaFetchAdd, set_dst, dst, *mut;
    doca_rdma_task_atomic_fetch_add_set_result_buf: RdmaFetchAdd, set_result, buf, *mut;
    doca_rdma_task_remote_net_sync_event_get_set_dst_buf: RdmaSeGet, set_dst, dst, *mut;
    doca_rdma_task_remote_net_sync_event_notify_set_set_src_buf: RdmaSeNotifySet, set_src, buf, *const;
    doca_rdma_task_remote_net_sync_event_notify_add_set_result_buf: RdmaSeNotifyAdd, set_result, buf, *mut;
}

/// The value accessors of a task type (`get_x` / `set_x` pairs of a number): the getter
/// answers 0 for a handle that is not a live task of that type, the setter does nothing
/// then (both logged).
macro_rules! value_accessors {
    ($($get:ident / $set:ident: $variant:ident, $ty:ty, $getter:ident / $setter:ident;)*) => {$(
        #[doc = concat!("`", stringify!($get), "`.")]
        #[no_mangle]
        pub extern "C" fn $get(task: *const DocaTask) -> $ty {
            crate::shielded(stringify!($get), 0, || {
                held(stringify!($get), task, |t, _| match t {
                    AnyTask::$variant(t) => Some(t.$getter()),
                    _ => None,
                })
                .unwrap_or(0)
            })
        }

        #[doc = concat!("`", stringify!($set), "`.")]
        #[no_mangle]
        pub extern "C" fn $set(task: *mut DocaTask, value: $ty) {
            crate::shielded(stringify!($set), (), || {
                held(stringify!($set), task, |t, _| match t {
                    AnyTask::$variant(t) => {
                        t.$setter(value);
                        Some(())
                    }
                    _ => None,
                });
            })
        }
    )*};
}

value_accessors! {
    doca_rdma_task_send_imm_get_immediate_data / doca_rdma_task_send_imm_set_immediate_data: RdmaSendImm, u32, immediate_data / set_immediate_data;
    doca_rdma_task_write_imm_get_immediate_data / doca_rdma_task_write_imm_set_immediate_data: RdmaWriteImm, u32, immediate_data / set_immediate_data;
    doca_rdma_task_atomic_cmp_swp_get_cmp_data / doca_rdma_task_atomic_cmp_swp_set_cmp_data: RdmaCmpSwp, u64, cmp_data / set_cmp_data;
    doca_rdma_task_atomic_cmp_swp_get_swap_data / doca_rdma_task_atomic_cmp_swp_set_swap_data: RdmaCmpSwp, u64, swap_data / set_swap_data;
    doca_rdma_task_atomic_fetch_add_get_add_data / doca_rdma_task_atomic_fetch_add_set_add_data: RdmaFetchAdd, u64, add_data / set_add_data;
    doca_rdma_task_remote_net_sync_event_notify_add_get_add_data / doca_rdma_task_remote_net_sync_event_notify_add_set_add_data: RdmaSeNotifyAdd, u64, add_data / set_add_data;
}

/// The sync-event accessors of the remote-net tasks: a getter answers the handle C last gave
/// (NULL for a handle that is not a live task of that type, logged); a setter checks the
/// event handle (NULL: none) and gives it to the task.
macro_rules! event_accessors {
    ($($get:ident / $set:ident: $variant:ident, *$gptr:ident / *$sptr:ident;)*) => {$(
        #[doc = concat!("`", stringify!($get), "`.")]
        #[no_mangle]
        pub extern "C" fn $get(task: *const DocaTask) -> *$gptr crate::sync_event::DocaSyncEventRemoteNet {
            crate::shielded(stringify!($get), std::ptr::null_mut(), || {
                held(stringify!($get), task, |t, h| matches!(t, AnyTask::$variant(_)).then(|| h.event.get().cast()))
                    .unwrap_or(std::ptr::null_mut())
            })
        }

        #[doc = concat!("`", stringify!($set), "` (NULL: none).")]
        #[no_mangle]
        pub extern "C" fn $set(task: *mut DocaTask, event: *$sptr crate::sync_event::DocaSyncEventRemoteNet) {
            crate::shielded(stringify!($set), (), || {
                let Ok(se) = opt_remote_net(event) else {
                    tracing::error!(target: "doca_sdk", "{}: not a live remote net sync event handle", stringify!($set));
                    return;
                };
                held(stringify!($set), task, |t, h| match t {
                    AnyTask::$variant(t) => {
                        t.set_sync_event(se);
                        h.event.set(event as *mut core::ffi::c_void);
                        Some(())
                    }
                    _ => None,
                });
            })
        }
    )*};
}

event_accessors! {
    doca_rdma_task_remote_net_sync_event_get_get_sync_event / doca_rdma_task_remote_net_sync_event_get_set_sync_event: RdmaSeGet, *const / *const;
    doca_rdma_task_remote_net_sync_event_notify_set_get_sync_event / doca_rdma_task_remote_net_sync_event_notify_set_set_sync_event: RdmaSeNotifySet, *mut / *mut;
    doca_rdma_task_remote_net_sync_event_notify_add_get_sync_event / doca_rdma_task_remote_net_sync_event_notify_add_set_sync_event: RdmaSeNotifyAdd, *mut / *mut;
}

// ---- The remaining 2.6 settings and capabilities ----

setters! {
    doca_rdma_set_max_send_buf_list_len(u32) => |r, v| r.set_max_send_buf_list_len(v);
    doca_rdma_task_receive_set_dst_buf_list_len(u32) => |r, v| r.set_recv_buf_list_len(v);
    doca_rdma_set_mtu(u32) => |r, v| idle_first(&r.as_ctx(), "doca_rdma_set_mtu")
        .and_then(|()| mtu_bytes(v))
        .and_then(|b| r.set_mtu(b));
}

getters! {
    doca_rdma_get_max_send_buf_list_len(*const DocaRdma, u32) => |r| r.max_send_buf_list_len();
    doca_rdma_get_mtu(*const DocaRdma, u32) => |r| mtu_enum(r.mtu());
}

/// `enum doca_mtu_size` (256 bytes is 0, … 4 KiB is 4) to bytes; 5 (raw Ethernet, reserved)
/// and beyond are `INVALID_VALUE`.
fn mtu_bytes(v: u32) -> doca_core::Result<u32> {
    match v {
        0..=4 => Ok(256 << v),
        // `DOCA_MTU_SIZE_RAW_ETHERNET`: a value of the enum, reserved: not an MTU an RDMA
        // context runs with (the header's code for an MTU not supported).
        5 => Err(doca_core::fail!(
            doca_core::Error::NotSupported,
            "doca_rdma_set_mtu: DOCA_MTU_SIZE_RAW_ETHERNET is reserved, not an MTU an RDMA context supports"
        )),
        _ => Err(doca_core::fail!(
            doca_core::Error::InvalidValue,
            "doca_rdma_set_mtu: {v} is not an IB MTU of enum doca_mtu_size (0..=4)"
        )),
    }
}

/// A setter's state check before its value is converted: a started context is `BAD_STATE`
/// whatever the value (the state first, as DOCA's library and the other setters).
fn idle_first(ctx: &doca_core::Ctx, what: &str) -> doca_core::Result<()> {
    match ctx.state() {
        doca_core::CtxState::Idle => Ok(()),
        s => Err(doca_core::fail!(
            doca_core::Error::BadState,
            "{what}: only before the context starts (it is {})",
            s.name()
        )),
    }
}

/// Bytes (one of 256 … 4096, as [`Rdma::set_mtu`] keeps them) to `enum doca_mtu_size`.
fn mtu_enum(bytes: u32) -> u32 {
    (bytes / 256).trailing_zeros()
}

devinfo_caps! {
    doca_rdma_cap_get_max_send_buf_list_len => caps::max_buf_list_len;
}

/// `doca_rdma_cap_task_receive_get_max_dst_buf_list_len`: the same limit for both transports
/// (an unknown transport is `INVALID_VALUE`).
///
/// # Safety
/// `value` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_cap_task_receive_get_max_dst_buf_list_len(
    devinfo: *const DocaDevinfo,
    transport_type: u32,
    value: *mut u32,
) -> DocaError {
    guarded("doca_rdma_cap_task_receive_get_max_dst_buf_list_len", || match crate::dev::devinfo(devinfo) {
        Some(d) => match TransportType::from_raw(transport_type)
            .and_then(|t| caps::transport_type_is_supported(d, t))
            .and_then(|()| caps::max_buf_list_len(d))
        {
            Ok(v) => out(value, v),
            Err(e) => e.code(),
        },
        None => invalid(),
    })
}

/// `doca_rdma_cap_get_gid`: `num_entries` entries of the device's GID table from
/// `start_index` (16 bytes each) into `gid_array`; a range beyond the table
/// (`doca_rdma_cap_get_gid_table_size`) or an empty one is `INVALID_VALUE`.
///
/// # Safety
/// `gid_array` is NULL or holds `num_entries` writable 16-byte entries.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_cap_get_gid(
    devinfo: *mut DocaDevinfo,
    start_index: u32,
    num_entries: u32,
    gid_array: *mut DocaRdmaGid,
) -> DocaError {
    guarded("doca_rdma_cap_get_gid", || {
        let Some(d) = crate::dev::devinfo(devinfo) else { return invalid() };
        if gid_array.is_null() || num_entries == 0 {
            tracing::error!(target: "doca_sdk", "doca_rdma_cap_get_gid: no array, or no entries asked");
            return invalid();
        }
        let Some(end) = start_index.checked_add(num_entries) else { return invalid() };
        let mut gids = Vec::with_capacity(num_entries as usize);
        for i in start_index..end {
            match caps::gid(d, i) {
                Ok(g) => gids.push(g),
                Err(e) => return e.code(),
            }
        }
        for (i, g) in gids.into_iter().enumerate() {
            // SAFETY: the caller gives num_entries writable entries.
            unsafe { gid_array.add(i).write(DocaRdmaGid { raw: g }) };
        }
        crate::DOCA_SUCCESS
    })
}

/// `struct doca_rdma_gid`.
#[repr(C)]
pub struct DocaRdmaGid {
    /// The GID's 16 bytes.
    pub raw: [u8; 16],
}

// ---- API level 2.5: the names and shapes that differ from 2.6 ----

/// `doca_rdma_set_grh_enabled` at level 2.5 (a `bool`; 2.6 takes a `uint8_t`).
#[no_mangle]
pub extern "C" fn doca_rdma_set_grh_enabled_v25(rdma: *mut DocaRdma, grh_enabled: bool) -> DocaError {
    doca_rdma_set_grh_enabled(rdma, grh_enabled as u8)
}

/// `doca_rdma_get_grh_enabled` at level 2.5 (writes a `bool`).
///
/// # Safety
/// `grh_enabled` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_get_grh_enabled_v25(
    rdma: *const DocaRdma,
    grh_enabled: *mut bool,
) -> DocaError {
    guarded("doca_rdma_get_grh_enabled", || match self::rdma(rdma) {
        Some(l) => out(grh_enabled, l.obj.grh_enabled()),
        None => invalid(),
    })
}

/// `doca_rdma_task_receive_get_result_length`: DOCA 2.5's name of
/// [`doca_rdma_task_receive_get_result_len`].
#[no_mangle]
pub extern "C" fn doca_rdma_task_receive_get_result_length(task: *const DocaTask) -> u32 {
    doca_rdma_task_receive_get_result_len(task)
}

/// `doca_rdma_task_read_get_result_length`: DOCA 2.5's name of
/// [`doca_rdma_task_read_get_result_len`].
#[no_mangle]
pub extern "C" fn doca_rdma_task_read_get_result_length(task: *const DocaTask) -> u32 {
    doca_rdma_task_read_get_result_len(task)
}

/// `doca_rdma_task_remote_net_sync_event_get_get_result_length`: DOCA 2.5's name of
/// [`doca_rdma_task_remote_net_sync_event_get_get_result_len`].
#[no_mangle]
pub extern "C" fn doca_rdma_task_remote_net_sync_event_get_get_result_length(task: *const DocaTask) -> u32 {
    doca_rdma_task_remote_net_sync_event_get_get_result_len(task)
}

// ---- Shared receive queues (DOCA 2.6, levels 2.6 and 2.7): `doca_rdma::srq` ----
//
// A queue is a context with no tasks; its receives are posted from the DPA, which is not
// emulated (`doca_rdma_srq_get_dpa_handle` answers the header's BAD_STATE). An RDMA context
// created with one has no receive queue of its own: its receive settings and their getters
// are BAD_STATE (the header's code), its receive configuration INVALID_VALUE and a receive
// allocation NO_MEMORY (this library's codes).

/// `struct doca_rdma_srq`.
pub type DocaRdmaSrq = LibCtx<Srq>;

/// `struct doca_dpa_dev_rdma_srq`: never handed out (no DPA here).
pub enum DocaDpaDevRdmaSrq {}

impl Library for Srq {
    fn ctx(&self) -> doca_core::Ctx {
        self.as_ctx()
    }
    fn destroy(self) -> doca_core::Result<()> {
        Srq::destroy(self).map_err(|r| r.error)
    }
}

static SRQS: Handles = Handles::new(Kind::RdmaSrq);

fn srq<'a>(p: *const DocaRdmaSrq) -> Option<&'a DocaRdmaSrq> {
    libctx::get(&SRQS, p)
}

/// `doca_rdma_srq_create`: `NOT_SUPPORTED` on a device without RDMA.
///
/// # Safety
/// `rdma_srq` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_srq_create(
    dev: *mut DocaDev,
    rdma_srq: *mut *mut DocaRdmaSrq,
) -> DocaError {
    guarded("doca_rdma_srq_create", || libctx::create(&SRQS, dev, rdma_srq, "rdma_srq", Srq::create))
}

/// `doca_rdma_srq_destroy`: Idle only (`BAD_STATE`; a queue stopped while RDMA contexts
/// using it run stays Stopping until they stop).
///
/// # Safety
/// `rdma_srq` is NULL or a handle of this library, not used after a successful destroy.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_srq_destroy(rdma_srq: *mut DocaRdmaSrq) -> DocaError {
    guarded("doca_rdma_srq_destroy", || {
        let Some(l) = srq(rdma_srq) else { return invalid() };
        let state = l.obj.as_ctx().state();
        if state != doca_core::CtxState::Idle {
            crate::check::note(|| {
                format!(
                    "the queue's context is {} (stop it, and first the {} RDMA context(s) using it)",
                    state.name(),
                    l.obj.num_running_users()
                )
            });
            return doca_core::Error::BadState.code();
        }
        // SAFETY: the caller's contract, as `libctx::destroy` states it.
        unsafe { libctx::destroy(&SRQS, rdma_srq) }
    })
}

/// `doca_rdma_srq_as_ctx`.
#[no_mangle]
pub extern "C" fn doca_rdma_srq_as_ctx(rdma_srq_ctx: *mut DocaRdmaSrq) -> *mut DocaCtx {
    crate::shielded("doca_rdma_srq_as_ctx", std::ptr::null_mut(), || libctx::as_ctx(&SRQS, rdma_srq_ctx))
}

devinfo_caps! {
    doca_rdma_srq_cap_get_max_shared_recv_queue_size => caps::srq_max_size;
    doca_rdma_srq_cap_task_receive_get_max_dst_buf_list_len => caps::srq_max_buf_list_len;
}

macro_rules! srq_setters {
    ($($name:ident => |$s:ident, $v:ident| $e:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`: Idle only (see `doca_rdma::srq`).")]
        #[no_mangle]
        pub extern "C" fn $name(rdma_srq: *mut DocaRdmaSrq, value: u32) -> DocaError {
            guarded(stringify!($name), || match self::srq(rdma_srq) {
                Some(l) => {
                    let ($s, $v) = (&l.obj, value);
                    doca_core::Error::code_of(&$e)
                }
                None => invalid(),
            })
        }
    )*};
}

srq_setters! {
    doca_rdma_srq_set_shared_recv_queue_size => |s, v| s.set_shared_recv_queue_size(v);
    doca_rdma_srq_task_receive_set_dst_buf_list_len => |s, v| s.set_dst_buf_list_len(v);
    doca_rdma_srq_set_type => |s, v| idle_first(&s.as_ctx(), "doca_rdma_srq_set_type")
        .and_then(|()| SrqType::from_raw(v))
        .and_then(|t| s.set_type(t));
}

macro_rules! srq_getters {
    ($($name:ident($p:ty) => |$s:ident| $e:expr;)*) => {$(
        #[doc = concat!("`", stringify!($name), "`.")]
        ///
        /// # Safety
        /// `value` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name(rdma_srq: $p, value: *mut u32) -> DocaError {
            guarded(stringify!($name), || match self::srq(rdma_srq) {
                Some(l) => {
                    let $s = &l.obj;
                    out(value, $e)
                }
                None => invalid(),
            })
        }
    )*};
}

srq_getters! {
    doca_rdma_srq_get_type(*mut DocaRdmaSrq) => |s| s.srq_type() as u32;
    doca_rdma_srq_task_receive_get_dst_buf_list_len(*const DocaRdmaSrq) => |s| s.dst_buf_list_len();
    doca_rdma_srq_get_shared_recv_queue_size(*const DocaRdmaSrq) => |s| s.shared_recv_queue_size();
}

/// `doca_rdma_srq_get_dpa_handle`: `BAD_STATE` (before start, and after it: the queue is
/// not on the DPA data path, which this emulation does not have); nothing is written.
///
/// # Safety
/// `dpa_rdma_srq` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_srq_get_dpa_handle(
    rdma_srq: *const DocaRdmaSrq,
    dpa_rdma_srq: *mut *mut DocaDpaDevRdmaSrq,
) -> DocaError {
    guarded("doca_rdma_srq_get_dpa_handle", || {
        let Some(l) = srq(rdma_srq) else { return invalid() };
        if let Err(e) = non_null(dpa_rdma_srq, "dpa_rdma_srq") {
            return e;
        }
        match l.obj.dpa_handle() {
            Ok(never) => match never {},
            Err(e) => e.code(),
        }
    })
}

/// `doca_rdma_create_with_srq` in either level's shape (`running_on_connect`: 2.6's start).
fn create_with_srq(
    name: &'static str,
    dev: *mut DocaDev,
    rdma_srq: *mut DocaRdmaSrq,
    rdma: *mut *mut DocaRdma,
    running_on_connect: bool,
) -> DocaError {
    guarded(name, || {
        let Some(s) = srq(rdma_srq) else { return invalid() };
        libctx::create(&RDMAS, dev, rdma, "rdma", |d| {
            let r = Rdma::create_with_srq(d, &s.obj)?;
            if running_on_connect {
                r.set_running_on_connect(true)?;
            }
            Ok(r)
        })
    })
}

/// `doca_rdma_create_with_srq` (level 2.7): `BAD_STATE` unless the queue is started.
///
/// # Safety
/// `rdma` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_create_with_srq(
    dev: *mut DocaDev,
    rdma_srq: *mut DocaRdmaSrq,
    rdma: *mut *mut DocaRdma,
) -> DocaError {
    create_with_srq("doca_rdma_create_with_srq", dev, rdma_srq, rdma, false)
}

/// `doca_rdma_create_with_srq` at level 2.6: the context is Starting until it connects, as
/// `doca_rdma_create`'s at that level.
///
/// # Safety
/// `rdma` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_create_with_srq_v26(
    dev: *mut DocaDev,
    rdma_srq: *mut DocaRdmaSrq,
    rdma: *mut *mut DocaRdma,
) -> DocaError {
    create_with_srq("doca_rdma_create_with_srq", dev, rdma_srq, rdma, true)
}

/// A receive setting's getter: `BAD_STATE` for a context created with a shared receive
/// queue (the header's code), else the value.
fn receive_getter(
    name: &'static str,
    rdma: *const DocaRdma,
    value: *mut u32,
    get: fn(&Rdma) -> u32,
) -> DocaError {
    guarded(name, || match self::rdma(rdma) {
        Some(l) if l.obj.has_srq() => {
            crate::check::note(|| {
                "the context was created with a shared receive queue: its receives are the queue's".into()
            });
            doca_core::Error::BadState.code()
        }
        Some(l) => out(value, get(&l.obj)),
        None => invalid(),
    })
}

/// `doca_rdma_get_recv_queue_size`: `BAD_STATE` for a context with a shared receive queue.
///
/// # Safety
/// `recv_queue_size` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_get_recv_queue_size(
    rdma: *const DocaRdma,
    recv_queue_size: *mut u32,
) -> DocaError {
    receive_getter("doca_rdma_get_recv_queue_size", rdma, recv_queue_size, Rdma::recv_queue_size)
}

/// `doca_rdma_task_receive_get_dst_buf_list_len`: `BAD_STATE` for a context with a shared
/// receive queue.
///
/// # Safety
/// `buf_list_len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_rdma_task_receive_get_dst_buf_list_len(
    rdma: *const DocaRdma,
    buf_list_len: *mut u32,
) -> DocaError {
    receive_getter("doca_rdma_task_receive_get_dst_buf_list_len", rdma, buf_list_len, Rdma::recv_buf_list_len)
}

/// `struct doca_dpa_dev_rdma` (DOCA 2.5/2.6): a context's handle in a DPA's memory. No DPA is
/// emulated: never made.
pub enum DocaDpaDevRdma {}

/// `struct doca_gpu_dev_rdma`: a context's handle in a GPU's memory. No GPU is emulated:
/// never made.
pub enum DocaGpuDevRdma {}

/// The handle getters' answer for a context that runs on the CPU: `BAD_STATE`, the header's
/// code for a context "not assigned to" a DPA or GPU data path (no context here can be).
fn no_device_handle(name: &'static str, rdma: *const DocaRdma, out_null: bool, what: &str) -> DocaError {
    guarded(name, || {
        if self::rdma(rdma).is_none() || out_null {
            return invalid();
        }
        doca_core::fail!(
            doca_core::Error::BadState,
            "{name}: the context runs on the CPU, not on a {what} data path (no {what} is emulated)"
        )
        .code()
    })
}

/// `doca_rdma_get_dpa_handle` (3.x shape: a 64-bit `doca_dpa_dev_rdma_t`): `BAD_STATE`:
/// no context here runs on a DPA data path.
#[no_mangle]
pub extern "C" fn doca_rdma_get_dpa_handle(rdma: *mut DocaRdma, dpa_rdma: *mut u64) -> DocaError {
    no_device_handle("doca_rdma_get_dpa_handle", rdma, dpa_rdma.is_null(), "DPA")
}

/// `doca_rdma_get_dpa_handle` at levels 2.5/2.6 (a `struct doca_dpa_dev_rdma *`):
/// `BAD_STATE`: no context here runs on a DPA data path.
#[no_mangle]
pub extern "C" fn doca_rdma_get_dpa_handle_v26(
    rdma: *mut DocaRdma,
    dpa_rdma: *mut *mut DocaDpaDevRdma,
) -> DocaError {
    no_device_handle("doca_rdma_get_dpa_handle", rdma, dpa_rdma.is_null(), "DPA")
}

/// `doca_rdma_get_gpu_handle` (3.x): `BAD_STATE`: no context here runs on a GPU data path.
#[no_mangle]
pub extern "C" fn doca_rdma_get_gpu_handle(
    rdma: *mut DocaRdma,
    gpu_rdma: *mut *mut DocaGpuDevRdma,
) -> DocaError {
    no_device_handle("doca_rdma_get_gpu_handle", rdma, gpu_rdma.is_null(), "GPU")
}

/// The connection accessors of the sending task types (DOCA 3.x: `_get_rdma_connection` /
/// `_set_rdma_connection`): the getter answers the connection's handle (NULL for a handle
/// that is not a live task of that type, logged); the setter takes a connection of the
/// task's own context (another context's, or a stale handle: logged, nothing changes).
macro_rules! connection_accessors {
    ($($get:ident / $set:ident: $variant:ident;)*) => {$(
        #[doc = concat!("`", stringify!($get), "`.")]
        #[no_mangle]
        pub extern "C" fn $get(task: *const DocaTask) -> *const DocaRdmaConnection {
            crate::shielded(stringify!($get), std::ptr::null(), || {
                let Some(c) = held(stringify!($get), task, |t, _| match t {
                    AnyTask::$variant(t) => Some(t.connection()),
                    _ => None,
                })
                .flatten() else {
                    return std::ptr::null();
                };
                let ctx = crate::task::ctx_of(task) as usize;
                CM_HANDLES.with(|m| m.borrow().get(&(ctx, c)).copied()).map_or(std::ptr::null(), |h| h as *const _)
            })
        }

        #[doc = concat!("`", stringify!($set), "`.")]
        #[no_mangle]
        pub extern "C" fn $set(task: *mut DocaTask, rdma_connection: *mut DocaRdmaConnection) {
            crate::shielded(stringify!($set), (), || {
                let ctx = crate::task::ctx_of(task) as usize;
                let Some(c) = conn(rdma_connection)
                    .filter(|c| self::rdma(c.rdma).is_some_and(|l| l.ctx as usize == ctx))
                    .map(|c| c.conn)
                else {
                    tracing::error!(
                        target: "doca_sdk",
                        "{}: not a live connection of the task's context: the task keeps its connection",
                        stringify!($set)
                    );
                    return;
                };
                held(stringify!($set), task, |t, _| match t {
                    AnyTask::$variant(t) => {
                        t.set_connection(c);
                        Some(())
                    }
                    _ => None,
                });
            })
        }
    )*};
}

connection_accessors! {
    doca_rdma_task_send_get_rdma_connection / doca_rdma_task_send_set_rdma_connection: RdmaSend;
    doca_rdma_task_send_imm_get_rdma_connection / doca_rdma_task_send_imm_set_rdma_connection: RdmaSendImm;
    doca_rdma_task_read_get_rdma_connection / doca_rdma_task_read_set_rdma_connection: RdmaRead;
    doca_rdma_task_write_get_rdma_connection / doca_rdma_task_write_set_rdma_connection: RdmaWrite;
    doca_rdma_task_write_imm_get_rdma_connection / doca_rdma_task_write_imm_set_rdma_connection: RdmaWriteImm;
    doca_rdma_task_atomic_cmp_swp_get_rdma_connection / doca_rdma_task_atomic_cmp_swp_set_rdma_connection: RdmaCmpSwp;
    doca_rdma_task_atomic_fetch_add_get_rdma_connection / doca_rdma_task_atomic_fetch_add_set_rdma_connection: RdmaFetchAdd;
    doca_rdma_task_remote_net_sync_event_get_get_rdma_connection / doca_rdma_task_remote_net_sync_event_get_set_rdma_connection: RdmaSeGet;
    doca_rdma_task_remote_net_sync_event_notify_set_get_rdma_connection / doca_rdma_task_remote_net_sync_event_notify_set_set_rdma_connection: RdmaSeNotifySet;
    doca_rdma_task_remote_net_sync_event_notify_add_get_rdma_connection / doca_rdma_task_remote_net_sync_event_notify_add_set_rdma_connection: RdmaSeNotifyAdd;
}
