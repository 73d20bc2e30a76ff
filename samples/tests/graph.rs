//! `doca_graph` (DOCA's graph sample) as a user runs it.

use std::process::Command;

#[test]
fn the_graph_sample_completes_every_instance() {
    let out = Command::new(env!("CARGO_BIN_EXE_doca_graph")).output().expect("doca_graph runs");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("All instances completed"), "{all}");
    assert!(all.contains("Sample finished successfully"), "{all}");
    assert_eq!(all.matches("user callback").count(), 10, "one user node run per instance: {all}");
}
