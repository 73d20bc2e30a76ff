//! `doca_comm_channel.h`: the legacy endpoint API (DOCA 2.x names). An endpoint is a service
//! (DPU side, `listen`) or a client (host side, `connect`); peers are addresses it hands out,
//! one handle per peer for the endpoint's whole life.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::os::fd::AsRawFd;

use doca_cc::legacy::{self, Endpoint, MsgFlags, PeerAddr};
use parking_lot::Mutex;

use crate::check::{bytes, bytes_mut, out, refuse};
use crate::dev::{dev, rep, DocaDev, DocaDevRep, DocaDevinfo};
use crate::handles::{Handles, Kind};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};

/// `struct doca_comm_channel_ep_t`.
pub struct DocaCommChannelEp {
    ep: Endpoint,
    /// The C handles given to `ep_set_device` / `ep_set_device_rep` (for the getters).
    devs: Mutex<(*mut DocaDev, *mut DocaDevRep)>,
    /// The handle of each peer seen, by peer id.
    peers: Mutex<HashMap<u64, *mut DocaCommChannelAddr>>,
    /// The array `ep_get_peer_addr_list` gave last (valid until its next call).
    list: Mutex<Vec<*mut DocaCommChannelAddr>>,
}

/// `struct doca_comm_channel_addr_t`.
pub struct DocaCommChannelAddr(PeerAddr);

/// The longest message of the legacy API (its sizes are `uint16_t`).
const MSG_MAX: usize = u16::MAX as usize;

static EPS: Handles = Handles::new(Kind::CommChannelEp);
static ADDRS: Handles = Handles::new(Kind::CommChannelAddr);

fn ep<'a>(p: *const DocaCommChannelEp) -> Option<&'a DocaCommChannelEp> {
    // SAFETY: EPS only holds DocaCommChannelEp handles.
    unsafe { EPS.get(p) }
}

fn addr<'a>(p: *const DocaCommChannelAddr) -> Option<&'a PeerAddr> {
    // SAFETY: ADDRS only holds DocaCommChannelAddr handles.
    unsafe { ADDRS.get(p) }.map(|a| &a.0)
}

impl DocaCommChannelEp {
    /// The C handle of `peer` (made at first sight).
    fn handle(&self, peer: PeerAddr) -> *mut DocaCommChannelAddr {
        *self.peers.lock().entry(peer.id()).or_insert_with(|| ADDRS.add(DocaCommChannelAddr(peer)))
    }
}

/// `doca_comm_channel_ep_create`.
///
/// # Safety
/// `ep` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_create(ep: *mut *mut DocaCommChannelEp) -> DocaError {
    guarded("doca_comm_channel_ep_create", || {
        if let Err(e) = crate::check::non_null(ep, "ep") {
            return e;
        }
        match Endpoint::create() {
            Ok(e) => out(
                ep,
                EPS.add(DocaCommChannelEp {
                    ep: e,
                    devs: Mutex::new((std::ptr::null_mut(), std::ptr::null_mut())),
                    peers: Mutex::default(),
                    list: Mutex::default(),
                }),
            ),
            Err(e) => e.code(),
        }
    })
}

/// `doca_comm_channel_ep_destroy`: disconnects every peer; the peer handles go with it. An
/// endpoint that does not exist (NULL, or destroyed) is `NOT_CONNECTED`, the header's code.
///
/// # Safety
/// `ep` is NULL or a handle of this library, not used afterwards (nor its peers).
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_destroy(ep: *mut DocaCommChannelEp) -> DocaError {
    guarded("doca_comm_channel_ep_destroy", || {
        // SAFETY: EPS only holds DocaCommChannelEp handles; freed once, here.
        let Some(e) = (unsafe { EPS.remove(ep) }) else { return not_connected() };
        let DocaCommChannelEp { ep, peers, .. } = *e;
        for (_, p) in peers.into_inner() {
            // SAFETY: ADDRS only holds DocaCommChannelAddr handles; each freed once, here.
            drop(unsafe { ADDRS.remove(p) });
        }
        doca_core::Error::code_of(&ep.destroy())
    })
}

/// `doca_comm_channel_ep_set_device`.
#[no_mangle]
pub extern "C" fn doca_comm_channel_ep_set_device(
    ep: *mut DocaCommChannelEp,
    device: *mut DocaDev,
) -> DocaError {
    guarded("doca_comm_channel_ep_set_device", || {
        let (Some(e), Some(d)) = (self::ep(ep), dev(device)) else { return invalid() };
        let r = e.ep.set_device(&d.dev);
        if r.is_ok() {
            e.devs.lock().0 = device;
        }
        doca_core::Error::code_of(&r)
    })
}

/// `doca_comm_channel_ep_set_device_rep`.
#[no_mangle]
pub extern "C" fn doca_comm_channel_ep_set_device_rep(
    ep: *mut DocaCommChannelEp,
    device_rep: *mut DocaDevRep,
) -> DocaError {
    guarded("doca_comm_channel_ep_set_device_rep", || {
        let (Some(e), Some(r)) = (self::ep(ep), rep(device_rep)) else { return invalid() };
        let res = e.ep.set_device_rep(&r.rep);
        if res.is_ok() {
            e.devs.lock().1 = device_rep;
        }
        doca_core::Error::code_of(&res)
    })
}

/// `doca_comm_channel_ep_get_device`.
///
/// # Safety
/// `device` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_get_device(
    ep: *const DocaCommChannelEp,
    device: *mut *mut DocaDev,
) -> DocaError {
    guarded("doca_comm_channel_ep_get_device", || match self::ep(ep) {
        Some(e) => out(device, e.devs.lock().0),
        None => invalid(),
    })
}

/// `doca_comm_channel_ep_get_device_rep`.
///
/// # Safety
/// `device_rep` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_get_device_rep(
    ep: *const DocaCommChannelEp,
    device_rep: *mut *mut DocaDevRep,
) -> DocaError {
    guarded("doca_comm_channel_ep_get_device_rep", || match self::ep(ep) {
        Some(e) => out(device_rep, e.devs.lock().1),
        None => invalid(),
    })
}

macro_rules! sizes {
    ($($(#[$doc:meta])* $set:ident / $get:ident => $rs_set:ident / $rs_get:ident;)*) => {$(
        $(#[$doc])*
        #[no_mangle]
        pub extern "C" fn $set(ep: *mut DocaCommChannelEp, value: u16) -> DocaError {
            guarded(stringify!($set), || match self::ep(ep) {
                Some(e) => doca_core::Error::code_of(&e.ep.$rs_set(value)),
                None => invalid(),
            })
        }

        $(#[$doc])*
        ///
        /// # Safety
        /// `value` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $get(ep: *const DocaCommChannelEp, value: *mut u16) -> DocaError {
            guarded(stringify!($get), || match self::ep(ep) {
                Some(e) => out(value, e.ep.$rs_get()),
                None => invalid(),
            })
        }
    )*};
}

sizes! {
    /// `doca_comm_channel_ep_set_max_msg_size` / `_get_max_msg_size`: before listen or connect.
    doca_comm_channel_ep_set_max_msg_size / doca_comm_channel_ep_get_max_msg_size => set_max_msg_size / max_msg_size;
    /// `doca_comm_channel_ep_set_send_queue_size` / `_get_send_queue_size`.
    doca_comm_channel_ep_set_send_queue_size / doca_comm_channel_ep_get_send_queue_size => set_send_queue_size / send_queue_size;
    /// `doca_comm_channel_ep_set_recv_queue_size` / `_get_recv_queue_size`.
    doca_comm_channel_ep_set_recv_queue_size / doca_comm_channel_ep_get_recv_queue_size => set_recv_queue_size / recv_queue_size;
}

fn name_arg<'a>(name: *const c_char) -> Option<&'a str> {
    // SAFETY: NULL or a NUL-terminated C string for the call (the caller's contract).
    (!name.is_null()).then(|| unsafe { CStr::from_ptr(name) }.to_str().ok()).flatten()
}

/// `doca_comm_channel_ep_listen`: the service side.
///
/// # Safety
/// `name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_listen(
    ep: *mut DocaCommChannelEp,
    name: *const c_char,
) -> DocaError {
    guarded("doca_comm_channel_ep_listen", || match (self::ep(ep), name_arg(name)) {
        (Some(e), Some(name)) => doca_core::Error::code_of(&e.ep.listen(name)),
        _ => invalid(),
    })
}

/// `doca_comm_channel_ep_connect`: the client side; the handshake ends asynchronously
/// (`doca_comm_channel_peer_addr_update_info`).
///
/// # Safety
/// `name` is NULL or a C string; `peer_addr` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_connect(
    ep: *mut DocaCommChannelEp,
    name: *const c_char,
    peer_addr: *mut *mut DocaCommChannelAddr,
) -> DocaError {
    guarded("doca_comm_channel_ep_connect", || {
        let (Some(e), Some(name)) = (self::ep(ep), name_arg(name)) else { return invalid() };
        if let Err(e) = crate::check::non_null(peer_addr, "peer_addr") {
            return e;
        }
        match e.ep.connect(name) {
            Ok(peer) => out(peer_addr, e.handle(peer)),
            Err(err) => err.code(),
        }
    })
}

/// `doca_comm_channel_ep_sendto`: no peer (NULL, or not an address) is `NOT_CONNECTED`, the
/// header's code; no message, an empty one, a flag (none is defined) or a message longer
/// than the endpoint's message size is `INVALID_VALUE`, refused before a byte is read.
///
/// # Safety
/// `msg` points to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_sendto(
    ep: *mut DocaCommChannelEp,
    msg: *const c_void,
    len: usize,
    flags: c_int,
    peer_addr: *mut DocaCommChannelAddr,
) -> DocaError {
    guarded("doca_comm_channel_ep_sendto", || {
        let Some(e) = self::ep(ep) else { return invalid() };
        let Some(peer) = addr(peer_addr) else { return not_connected() };
        if msg.is_null() || len == 0 {
            return refuse(|| format!("no message to send (msg {msg:?}, {len} bytes)"));
        }
        if flags != 0 {
            return refuse(|| format!("flags {flags:#x}: no flag is supported"));
        }
        let max = usize::from(e.ep.max_msg_size());
        // SAFETY: `msg` points to `len` readable bytes for the call (the caller's contract).
        let bytes = match unsafe { bytes(msg, len, max, "message") } {
            Ok(b) => b,
            Err(e) => return e,
        };
        doca_core::Error::code_of(&e.ep.sendto(bytes, MsgFlags::NONE, peer))
    })
}

/// `doca_comm_channel_ep_recvfrom`: `*len` is the buffer's size on entry, the message's on
/// return (also when the buffer is too small: `DOCA_ERROR_TOO_BIG`, the message stays). No
/// message is longer than 65535 bytes (the API's sizes are 16-bit): only that much of a
/// larger buffer is ever written.
///
/// # Safety
/// `msg` points to `*len` writable bytes; `len` and `peer_addr` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_recvfrom(
    ep: *mut DocaCommChannelEp,
    msg: *mut c_void,
    len: *mut usize,
    flags: c_int,
    peer_addr: *mut *mut DocaCommChannelAddr,
) -> DocaError {
    guarded("doca_comm_channel_ep_recvfrom", || {
        let Some(e) = self::ep(ep) else { return invalid() };
        if let Err(e) = crate::check::non_null(len, "len").and(crate::check::non_null(peer_addr, "peer_addr"))
        {
            return e;
        }
        if flags != 0 {
            return refuse(|| format!("flags {flags:#x}: no flag is supported"));
        }
        // SAFETY: `len` is readable (checked non-NULL; the caller's contract).
        let cap = unsafe { len.read() }.min(MSG_MAX);
        if msg.is_null() || cap == 0 {
            return refuse(|| format!("no buffer to receive into (msg {msg:?}, {cap} bytes)"));
        }
        // SAFETY: `msg` points to `*len` >= `cap` writable bytes for the call (the caller's
        // contract).
        let buf = match unsafe { bytes_mut(msg, cap, MSG_MAX, "message buffer") } {
            Ok(b) => b,
            Err(e) => return e,
        };
        match e.ep.recvfrom(buf, MsgFlags::NONE) {
            Ok((n, peer)) => {
                let h = e.handle(peer);
                // SAFETY: both writable (checked non-NULL; the caller's contract).
                unsafe {
                    len.write(n);
                    peer_addr.write(h);
                }
                DOCA_SUCCESS
            }
            Err(err) => {
                if let Some(needed) = err.needed {
                    // SAFETY: writable (checked non-NULL; the caller's contract).
                    unsafe { len.write(needed) };
                }
                err.error.code()
            }
        }
    })
}

/// `doca_comm_channel_ep_disconnect`: no endpoint `INVALID_VALUE`; no peer (NULL, or not an
/// address), or one disconnected already, `NOT_CONNECTED` — the header's codes.
#[no_mangle]
pub extern "C" fn doca_comm_channel_ep_disconnect(
    ep: *mut DocaCommChannelEp,
    peer_addr: *mut DocaCommChannelAddr,
) -> DocaError {
    guarded("doca_comm_channel_ep_disconnect", || {
        let Some(e) = self::ep(ep) else { return invalid() };
        match addr(peer_addr) {
            Some(p) => doca_core::Error::code_of(&e.ep.disconnect(p)),
            None => not_connected(),
        }
    })
}

/// `DOCA_ERROR_NOT_CONNECTED` for an argument that names no endpoint or peer (the reason the
/// handle check noted is the call's log line).
fn not_connected() -> DocaError {
    crate::check::note(|| "no such endpoint or peer address".into());
    doca_core::Error::NotConnected.code()
}

/// `doca_comm_channel_ep_get_event_channel`: the send and receive handles (file
/// descriptors), after listen or connect.
///
/// # Safety
/// `send_channel` and `recv_channel` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_get_event_channel(
    ep: *mut DocaCommChannelEp,
    send_channel: *mut c_int,
    recv_channel: *mut c_int,
) -> DocaError {
    guarded("doca_comm_channel_ep_get_event_channel", || {
        let Some(e) = self::ep(ep) else { return invalid() };
        if send_channel.is_null() && recv_channel.is_null() {
            return refuse(|| "both event channel out-parameters are NULL".into());
        }
        match e.ep.get_event_channel() {
            Ok((tx, rx)) => {
                // SAFETY: each NULL or writable (the caller's contract); NULL ones are skipped.
                unsafe {
                    if !send_channel.is_null() {
                        send_channel.write(tx.as_raw_fd());
                    }
                    if !recv_channel.is_null() {
                        recv_channel.write(rx.as_raw_fd());
                    }
                }
                DOCA_SUCCESS
            }
            Err(err) => err.code(),
        }
    })
}

/// `doca_comm_channel_ep_get_service_event_channel`: service only.
///
/// # Safety
/// `service_event_channel` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_get_service_event_channel(
    ep: *mut DocaCommChannelEp,
    service_event_channel: *mut c_int,
) -> DocaError {
    guarded("doca_comm_channel_ep_get_service_event_channel", || {
        let Some(e) = self::ep(ep) else { return invalid() };
        match e.ep.get_service_event_channel() {
            Ok(fd) => out(service_event_channel, fd.as_raw_fd()),
            Err(err) => err.code(),
        }
    })
}

/// `doca_comm_channel_ep_event_handle_arm_send`.
#[no_mangle]
pub extern "C" fn doca_comm_channel_ep_event_handle_arm_send(ep: *mut DocaCommChannelEp) -> DocaError {
    guarded("doca_comm_channel_ep_event_handle_arm_send", || match self::ep(ep) {
        Some(e) => doca_core::Error::code_of(&e.ep.event_handle_arm_send()),
        None => invalid(),
    })
}

/// `doca_comm_channel_ep_event_handle_arm_recv`.
#[no_mangle]
pub extern "C" fn doca_comm_channel_ep_event_handle_arm_recv(ep: *mut DocaCommChannelEp) -> DocaError {
    guarded("doca_comm_channel_ep_event_handle_arm_recv", || match self::ep(ep) {
        Some(e) => doca_core::Error::code_of(&e.ep.event_handle_arm_recv()),
        None => invalid(),
    })
}

/// `doca_comm_channel_ep_update_service_state_info`: service only.
#[no_mangle]
pub extern "C" fn doca_comm_channel_ep_update_service_state_info(ep: *mut DocaCommChannelEp) -> DocaError {
    guarded("doca_comm_channel_ep_update_service_state_info", || match self::ep(ep) {
        Some(e) => doca_core::Error::code_of(&e.ep.update_service_state_info()),
        None => invalid(),
    })
}

/// `doca_comm_channel_ep_get_peer_addr_list`: the peers at the last service state update;
/// the array is the library's, valid until the next call.
///
/// # Safety
/// `peer_addr_array` and `peer_addr_array_len` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_get_peer_addr_list(
    ep: *const DocaCommChannelEp,
    peer_addr_array: *mut *mut *mut DocaCommChannelAddr,
    peer_addr_array_len: *mut u32,
) -> DocaError {
    guarded("doca_comm_channel_ep_get_peer_addr_list", || {
        let Some(e) = self::ep(ep) else { return invalid() };
        if let Err(e) = crate::check::non_null(peer_addr_array, "peer_addr_array")
            .and(crate::check::non_null(peer_addr_array_len, "peer_addr_array_len"))
        {
            return e;
        }
        match e.ep.peer_addr_list() {
            Ok(peers) => {
                let handles: Vec<_> = peers.into_iter().map(|p| e.handle(p)).collect();
                let mut list = e.list.lock();
                *list = handles;
                // SAFETY: both writable (checked non-NULL; the caller's contract); the array
                // stays allocated until the next call or the endpoint's destruction.
                unsafe {
                    peer_addr_array.write(list.as_mut_ptr());
                    peer_addr_array_len.write(list.len() as u32);
                }
                DOCA_SUCCESS
            }
            Err(err) => err.code(),
        }
    })
}

/// `doca_comm_channel_ep_get_pending_connections`: service only.
///
/// # Safety
/// `pending_connections` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_ep_get_pending_connections(
    ep: *const DocaCommChannelEp,
    pending_connections: *mut u32,
) -> DocaError {
    guarded("doca_comm_channel_ep_get_pending_connections", || {
        match self::ep(ep).map(|e| e.ep.pending_connections()) {
            Some(Ok(n)) => out(pending_connections, n),
            Some(Err(err)) => err.code(),
            None => invalid(),
        }
    })
}

/// `doca_comm_channel_peer_addr_update_info`: `CONNECTION_INPROGRESS` while the handshake
/// runs; takes the statistics snapshot.
#[no_mangle]
pub extern "C" fn doca_comm_channel_peer_addr_update_info(peer_addr: *mut DocaCommChannelAddr) -> DocaError {
    guarded("doca_comm_channel_peer_addr_update_info", || match addr(peer_addr) {
        Some(p) => doca_core::Error::code_of(&p.update_info()),
        None => invalid(),
    })
}

/// `doca_comm_channel_peer_addr_set_user_data`.
#[no_mangle]
pub extern "C" fn doca_comm_channel_peer_addr_set_user_data(
    peer_addr: *mut DocaCommChannelAddr,
    user_context: u64,
) -> DocaError {
    guarded("doca_comm_channel_peer_addr_set_user_data", || match addr(peer_addr) {
        Some(p) => {
            p.set_user_data(user_context);
            DOCA_SUCCESS
        }
        None => invalid(),
    })
}

macro_rules! peer_getters {
    ($($(#[$doc:meta])* $name:ident => $method:ident;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `value` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name(peer_addr: *const DocaCommChannelAddr, value: *mut u64) -> DocaError {
            guarded(stringify!($name), || match addr(peer_addr) {
                Some(p) => out(value, p.$method()),
                None => invalid(),
            })
        }
    )*};
}

peer_getters! {
    /// `doca_comm_channel_peer_addr_get_user_data` (0 until set).
    doca_comm_channel_peer_addr_get_user_data => user_data;
    /// `doca_comm_channel_peer_addr_get_send_messages` (at the last update_info).
    doca_comm_channel_peer_addr_get_send_messages => send_messages;
    /// `doca_comm_channel_peer_addr_get_send_bytes`.
    doca_comm_channel_peer_addr_get_send_bytes => send_bytes;
    /// `doca_comm_channel_peer_addr_get_recv_messages`.
    doca_comm_channel_peer_addr_get_recv_messages => recv_messages;
    /// `doca_comm_channel_peer_addr_get_recv_bytes`.
    doca_comm_channel_peer_addr_get_recv_bytes => recv_bytes;
    /// `doca_comm_channel_peer_addr_get_send_in_flight_messages`.
    doca_comm_channel_peer_addr_get_send_in_flight_messages => send_in_flight_messages;
}

/// `doca_comm_channel_get_max_service_name_len`.
///
/// # Safety
/// `max_service_name_len` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_comm_channel_get_max_service_name_len(
    max_service_name_len: *mut u32,
) -> DocaError {
    guarded("doca_comm_channel_get_max_service_name_len", || {
        out(max_service_name_len, legacy::get_max_service_name_len())
    })
}

macro_rules! legacy_caps {
    ($($(#[$doc:meta])* $name:ident => $f:path;)*) => {$(
        $(#[$doc])*
        ///
        /// # Safety
        /// `value` is NULL or writable.
        #[no_mangle]
        pub unsafe extern "C" fn $name(devinfo: *const DocaDevinfo, value: *mut u32) -> DocaError {
            guarded(stringify!($name), || crate::cc::cap(devinfo, value, $f))
        }
    )*};
}

legacy_caps! {
    /// `doca_comm_channel_get_max_message_size`.
    doca_comm_channel_get_max_message_size => legacy::get_max_message_size;
    /// `doca_comm_channel_get_max_send_queue_size`.
    doca_comm_channel_get_max_send_queue_size => legacy::get_max_send_queue_size;
    /// `doca_comm_channel_get_max_recv_queue_size`.
    doca_comm_channel_get_max_recv_queue_size => legacy::get_max_recv_queue_size;
    /// `doca_comm_channel_get_service_max_num_connections`.
    doca_comm_channel_get_service_max_num_connections => legacy::get_service_max_num_connections;
}
