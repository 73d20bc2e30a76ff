//! Builds the C half of `doca_log` (`c/doca_log.c`): the one export whose C variadic
//! arguments only C can read.

fn main() {
    println!("cargo:rerun-if-changed=c/doca_log.c");
    cc::Build::new().file("c/doca_log.c").flag_if_supported("-fvisibility=hidden").compile("doca_emu_c");
}
