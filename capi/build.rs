//! Builds the C half of `doca_log` (`c/doca_log.c`): the one export whose C variadic
//! arguments only C can read.

fn main() {
    println!("cargo:rerun-if-changed=c/doca_log.c");
    // A soname, as DOCA's libraries have: a program linked against the library by its path
    // (meson resolves a pkg-config `-l` to one) then records this name, not the path, and
    // finds the library through its run path or `LD_LIBRARY_PATH` wherever it is installed.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdoca_capi.so");
    cc::Build::new().file("c/doca_log.c").flag_if_supported("-fvisibility=hidden").compile("doca_emu_c");
}
