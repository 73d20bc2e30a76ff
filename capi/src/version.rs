//! `doca_version.h`: the DOCA version this emulator claims ([`doca_core::DOCA_VERSION`]), as
//! the header's macros say it and as the two functions return it.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

/// [`doca_core::DOCA_VERSION`] as a static C string.
fn version() -> *const c_char {
    static V: OnceLock<CString> = OnceLock::new();
    V.get_or_init(|| CString::new(doca_core::DOCA_VERSION).expect("no NUL in the version")).as_ptr()
}

/// `doca_version`: the version a program was built against — the header's
/// `DOCA_VERSION_STRING`, which is the claimed version (DOCA makes this function inline; it
/// is a real export here, so both kinds of program find it); a static string.
#[no_mangle]
pub extern "C" fn doca_version() -> *const c_char {
    version()
}

/// `doca_version_runtime`: the version of the library running; a static string.
#[no_mangle]
pub extern "C" fn doca_version_runtime() -> *const c_char {
    version()
}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    /// `#define <name> <value>` of `doca_version.h`.
    fn define(name: &str) -> String {
        let header = include_str!("../include/doca_version.h");
        header
            .lines()
            .find_map(|l| {
                let mut f = l.split_whitespace();
                (f.next() == Some("#define") && f.next() == Some(name))
                    .then(|| f.collect::<Vec<_>>().join(" "))
            })
            .unwrap_or_else(|| panic!("doca_version.h defines no {name}"))
    }

    /// The header's numbers and string are the claimed version's (core/DOCA_VERSION): a
    /// version bump that forgets the header fails here.
    #[test]
    fn the_header_says_the_claimed_version() {
        let claimed = doca_core::DOCA_VERSION;
        let parts: Vec<&str> = claimed.split('.').collect();
        assert_eq!(parts.len(), 3, "core/DOCA_VERSION is major.minor.patch: {claimed}");
        for (name, want) in
            ["DOCA_VERSION_MAJOR", "DOCA_VERSION_MINOR", "DOCA_VERSION_PATCH"].iter().zip(&parts)
        {
            let got: u32 = define(name).parse().unwrap_or_else(|_| panic!("{name} is a number"));
            let want: u32 = want.parse().expect("a number in core/DOCA_VERSION");
            assert_eq!(got, want, "{name} of doca_version.h against core/DOCA_VERSION {claimed}");
        }
        assert_eq!(define("DOCA_VERSION_STRING"), format!("\"{claimed}\""));
        assert_eq!(define("DOCA_VER_STRING"), "DOCA_VERSION_STRING");
    }

    #[test]
    fn both_functions_return_the_claimed_version() {
        // SAFETY: static NUL-terminated strings of this library.
        let (a, b) =
            unsafe { (CStr::from_ptr(super::doca_version()), CStr::from_ptr(super::doca_version_runtime())) };
        assert_eq!(a.to_str(), Ok(doca_core::DOCA_VERSION));
        assert_eq!(b.to_str(), Ok(doca_core::DOCA_VERSION));
    }
}
