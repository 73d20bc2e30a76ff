//! C programs of our own, in the shape of DOCA's samples, built with the system C compiler
//! against `capi/include` and this crate's shared library, and run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where cargo put this crate's shared library (beside the `deps` folder of this test).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let dir = exe.parent().and_then(Path::parent).expect("target/<profile>/deps/<test>");
    assert!(dir.join("libdoca_capi.so").exists(), "libdoca_capi.so is not in {}", dir.display());
    dir.to_path_buf()
}

/// Compiles `tests/c/<name>.c` into a program beside the library; its path.
fn build(name: &str) -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = lib_dir();
    let out = lib.join(format!("c-{name}"));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "-o"])
        .arg(&out)
        .arg(here.join("tests/c").join(format!("{name}.c")))
        .arg(format!("-I{}", here.join("include").display()))
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ldoca_capi")
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {cc:?} (install one: .ci/run does): {e}"));
    assert!(status.success(), "{name}.c does not build against capi/include");
    out
}

/// Runs `prog` with `args` and the process side `side` (None: not set); fails unless it
/// printed "ok".
fn run(prog: &Path, args: &[&str], side: Option<&str>) {
    let mut cmd = Command::new(prog);
    cmd.args(args);
    match side {
        Some(s) => cmd.env("DOCA_EMU_SIDE", s),
        None => cmd.env_remove("DOCA_EMU_SIDE"),
    };
    let out = cmd.output().expect("run the C program");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "{} {args:?} failed:\n{}{}",
        prog.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_c_program_opens_devices_and_representors_and_meets_every_error_path() {
    let prog = build("devices");
    run(&prog, &[], None); // the DPU side: opening the DPU device by address settles it
    run(&prog, &["host"], Some("host"));
}
