//! A Rust program that installed no `tracing` subscriber still sees why the library refused
//! a call: the error line goes to standard error (DOCA_EMU_SDK_STDERR=0 keeps DOCA's silence).

use std::process::Command;

/// Run in a child process of its own (no subscriber there): a refused call.
#[test]
fn child_refused_call() {
    if std::env::var_os("DOCA_EMU_UNLOGGED_CHILD").is_none() {
        return;
    }
    assert_eq!(doca_core::open_device_with_pci("ff:00.0", None).unwrap_err(), doca_core::Error::NotFound);
}

fn child(quiet: bool) -> String {
    let mut cmd = Command::new(std::env::current_exe().expect("this test binary"));
    cmd.args(["child_refused_call", "--exact", "--nocapture", "--test-threads=1"]);
    cmd.env("DOCA_EMU_UNLOGGED_CHILD", "1");
    if quiet {
        cmd.env(doca_core::SDK_STDERR_ENV, "0");
    } else {
        cmd.env_remove(doca_core::SDK_STDERR_ENV);
    }
    let out = cmd.output().expect("run the child");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_program_without_a_subscriber_sees_the_library_s_error_lines() {
    let err = child(false);
    assert!(
        err.contains("[DOCA][ERR][doca_sdk] DOCA_ERROR_NOT_FOUND: Matching device not found (PCI address"),
        "{err}"
    );
    let quiet = child(true);
    assert!(!quiet.contains("DOCA_ERROR_NOT_FOUND"), "{quiet}");
}
