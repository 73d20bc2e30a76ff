//! `doca_error.h`.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use doca_core::Error;

use crate::DocaError;

/// Names and descriptions as C strings, indexed by code; the last entry is for codes DOCA
/// does not define.
fn table() -> &'static (Vec<CString>, Vec<CString>) {
    static TABLE: OnceLock<(Vec<CString>, Vec<CString>)> = OnceLock::new();
    TABLE.get_or_init(|| {
        let c = |s: &str| CString::new(s).expect("no NUL in DOCA's names");
        let mut names: Vec<CString> = Error::ALL.iter().map(|e| c(e.name())).collect();
        let mut descrs: Vec<CString> = Error::ALL.iter().map(|e| c(e.descr())).collect();
        names.push(c(doca_core::UNRECOGNIZED));
        descrs.push(c(doca_core::UNRECOGNIZED));
        (names, descrs)
    })
}

fn index(error: DocaError) -> usize {
    match Error::from_code(error) {
        Some(e) => Error::ALL.iter().position(|x| *x == e).unwrap_or(Error::ALL.len()),
        None => Error::ALL.len(),
    }
}

/// `doca_error_get_name`: the code's name (`"DOCA_ERROR_AGAIN"`), or "Unrecognized error
/// code"; a static string.
#[no_mangle]
pub extern "C" fn doca_error_get_name(error: DocaError) -> *const c_char {
    table().0[index(error)].as_ptr()
}

/// `doca_error_get_descr`: the code's description; a static string.
#[no_mangle]
pub extern "C" fn doca_error_get_descr(error: DocaError) -> *const c_char {
    table().1[index(error)].as_ptr()
}

/// The code of a Rust result.
pub(crate) fn code<T>(r: &doca_core::Result<T>) -> DocaError {
    doca_core::Error::code_of(r)
}
