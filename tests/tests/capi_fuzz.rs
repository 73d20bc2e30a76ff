//! The C ABI under a generated fuzzer (`src/bin/capi_fuzz.rs`): every export called with
//! NULL, forged, stale and wrong-kind handles, NULL out-parameters and extreme lengths, and
//! from inside the library's callbacks, with fixed seeds; no crash (a debug build aborts on
//! a slice made beyond `isize::MAX`), only DOCA's codes, never `DOCA_SUCCESS` for a bad
//! argument.

use std::path::PathBuf;
use std::process::Command;

const FUZZ: &str = env!("CARGO_BIN_EXE_capi_fuzz");

/// Runs the fuzzer with `seed` for `cases` calls; fails with the end of its trace unless it
/// says `ok`.
fn fuzz(seed: u64, cases: u64) {
    let out = Command::new(FUZZ)
        .args([seed.to_string(), cases.to_string()])
        .env_remove("DOCA_EMU_SIDE")
        .env_remove("CAPI_FUZZ_KEEP_GOING")
        .env_remove("CAPI_FUZZ_SKIP")
        .output()
        .expect("run capi_fuzz");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr.lines().rev().take(30).collect::<Vec<_>>().into_iter().rev().collect();
    assert!(
        out.status.success() && stdout.contains(&format!("ok {cases} cases")),
        "capi_fuzz {seed} {cases} failed ({}); the end of its trace:\n{}\n(rerun: {FUZZ} {seed} {cases})",
        out.status,
        tail.join("\n")
    );
}

#[test]
fn every_export_survives_bad_handles_lengths_and_calls_from_callbacks_seed_1() {
    fuzz(1, 20_000);
}

#[test]
fn every_export_survives_bad_handles_lengths_and_calls_from_callbacks_seed_2() {
    fuzz(2, 20_000);
}

#[test]
fn every_export_survives_bad_handles_lengths_and_calls_from_callbacks_seed_3() {
    fuzz(3, 20_000);
}

/// Where cargo put `libdoca_capi.so` (beside this test binary's `deps` folder).
fn cdylib() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("target/<profile>/deps");
    [deps.to_path_buf(), deps.parent().expect("target/<profile>").to_path_buf()]
        .into_iter()
        .map(|d| d.join("libdoca_capi.so"))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("libdoca_capi.so is not beside {}", exe.display()))
}

/// The fuzzer's table names every function the library exports (a new export without a
/// fuzz case fails here).
#[test]
fn the_fuzzer_covers_every_export() {
    let lib = cdylib();
    let nm = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(&lib)
        .output()
        .unwrap_or_else(|e| panic!("cannot run nm (binutils, installed with the C compiler): {e}"));
    assert!(nm.status.success(), "nm {} failed", lib.display());
    let mut exported: Vec<String> = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, kind, name) = (f.next()?, f.next()?, f.next()?);
            (kind == "T" && name.starts_with("doca_")).then(|| name.to_string())
        })
        .collect();
    exported.sort();
    let out = Command::new(FUZZ).arg("--exports").output().expect("run capi_fuzz --exports");
    let mut covered: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    covered.sort();
    let missing: Vec<&String> = exported.iter().filter(|e| !covered.contains(e)).collect();
    assert!(exported.len() > 200, "nm found {} exports in {}", exported.len(), lib.display());
    assert!(missing.is_empty(), "exports without a fuzz case in src/bin/capi_fuzz.rs: {missing:?}");
}
