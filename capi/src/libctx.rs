//! What the C ABI keeps for a library context with tasks (DMA, SHA, mmap advise): the Rust
//! context, its `struct doca_ctx` handle and its tasks' handles — and the three calls every
//! such library has (`create`, `destroy`, `as_ctx`), written once.

use std::rc::Rc;

use doca_core::{Ctx, CtxState, Dev, Error, Result};

use crate::buf::{buf, DocaBuf};
use crate::check::{non_null, out};
use crate::ctx::{DocaCtx, CTXS};
use crate::dev::DocaDev;
use crate::handles::Handles;
use crate::task::TaskTable;
use crate::{invalid, DocaError};

/// A library context as C holds it (`struct doca_dma`, `struct doca_sha`, …).
pub struct LibCtx<T> {
    pub(crate) obj: T,
    pub(crate) ctx: *mut DocaCtx,
    pub(crate) tasks: Rc<TaskTable>,
}

/// What the generic calls need of a library's context.
pub(crate) trait Library: Sized {
    /// Its `doca_ctx`.
    fn ctx(&self) -> Ctx;
    /// Destroys it (Idle only).
    fn destroy(self) -> Result<()>;
    /// What `destroy` would refuse besides a context that is not Idle (asked before the
    /// handles go: a refused destroy leaves the context and its handles as they were).
    fn check_destroy(&self) -> Result<()> {
        Ok(())
    }
    /// The code of a destroy while the context is not Idle: `BAD_STATE` (what most headers
    /// document), or the one its header names (SHA's: `IN_USE`, "should be stopped before
    /// destruction").
    const NOT_IDLE: Error = Error::BadState;
}

/// The live context of `table` behind `p`.
pub(crate) fn get<'a, T>(table: &Handles, p: *const LibCtx<T>) -> Option<&'a LibCtx<T>> {
    // SAFETY: each library's table only holds LibCtx handles of its own T.
    unsafe { table.get(p) }
}

/// `doca_*_create`: the context `make` builds on `dev`, handed out through `out_p` (NULL or
/// writable; `name` is its parameter's name for the log).
pub(crate) fn create<T: Library>(
    table: &Handles,
    dev: *mut DocaDev,
    out_p: *mut *mut LibCtx<T>,
    name: &str,
    make: impl FnOnce(&Dev) -> Result<T>,
) -> DocaError {
    let Some(d) = crate::dev::dev(dev) else { return invalid() };
    if let Err(e) = non_null(out_p, name) {
        return e;
    }
    match make(&d.dev) {
        Ok(obj) => {
            let ctx = CTXS.add(DocaCtx(obj.ctx()));
            let tasks = Rc::new(TaskTable::default());
            tasks.1.set(ctx);
            out(out_p, table.add(LibCtx { obj, ctx, tasks }))
        }
        Err(e) => e.code(),
    }
}

/// `doca_*_destroy`: Idle only ([`Library::NOT_IDLE`]: `BAD_STATE` unless the library's
/// header names another code), and what the library refuses besides (the context stays, its
/// handles live); its context's and tasks' handles go with it.
///
/// # Safety
/// `p` is NULL or a handle of `table`, not used after a successful destroy.
pub(crate) unsafe fn destroy<T: Library>(table: &Handles, p: *mut LibCtx<T>) -> DocaError {
    let Some(l) = get(table, p) else { return invalid() };
    let state = l.obj.ctx().state();
    if state != CtxState::Idle {
        return doca_core::fail!(T::NOT_IDLE, "destroy: the context is {} (stop it first)", state.name())
            .code();
    }
    if let Err(e) = l.obj.check_destroy() {
        return e.code();
    }
    // SAFETY: the table only holds LibCtx<T> handles; freed once, here.
    let Some(l) = (unsafe { table.remove(p) }) else { return invalid() };
    let LibCtx { obj, ctx, tasks } = *l;
    // SAFETY: the context handle was made with the library context and goes with it.
    drop(unsafe { CTXS.remove(ctx) });
    drop(tasks);
    Error::code_of(&obj.destroy())
}

/// `doca_*_as_ctx`: NULL for a handle that is not a live context of `table`.
pub(crate) fn as_ctx<T>(table: &Handles, p: *mut LibCtx<T>) -> *mut DocaCtx {
    get(table, p).map_or(std::ptr::null_mut(), |l| l.ctx)
}

/// A buffer argument that may be NULL (none yet): `Err` for a non-NULL handle that is not a
/// live buffer.
pub(crate) fn opt_buf<'a>(p: *const DocaBuf) -> std::result::Result<Option<&'a doca_buf::Buf>, ()> {
    if p.is_null() {
        return Ok(None);
    }
    buf(p).map(Some).ok_or(())
}
