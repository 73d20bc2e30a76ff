//! The book's "Your first program", Rust half: the standalone crate `book/first-program/rust`
//! (outside the workspace, path dependencies, as a user's own crate) builds with `--locked`
//! from the files the page includes, and its server and client talk as two processes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// The workspace's target folder (this test binary lives in `<target>/<profile>/deps`), so
/// the crates are built once on a small machine.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    exe.ancestors().nth(3).expect("<target>/<profile>/deps/<test>").to_path_buf()
}

/// A fresh fabric directory (mode 0700), so the pair meets nobody else.
fn fabric(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("doca-emu-first-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("make the fabric directory");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod 0700");
    dir
}

/// Waits for `child` at most `limit` (generous: a stuck pair fails instead of hanging).
fn finish(mut child: std::process::Child, limit: Duration, who: &str) -> Output {
    let end = Instant::now() + limit;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect output");
            panic!("{who} did not finish: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("collect output")
}

#[test]
fn the_rust_first_program_builds_locked_and_its_pair_talks() {
    let manifest = root().join("book/first-program/rust/Cargo.toml");
    let target = target_dir();
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "--locked", "--bins", "--manifest-path"]).arg(&manifest);
    // The workspace's own per-package optimisation, so its compiled crates are reused.
    for pkg in ["doca-core", "doca-cc", "doca-mmap", "doca-buf", "doca-common"] {
        build.args(["--config", &format!("profile.dev.package.{pkg}.opt-level=2")]);
    }
    let out = build.env("CARGO_TARGET_DIR", &target).output().expect("run cargo build");
    assert!(
        out.status.success(),
        "the first program does not build:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let bin = target.join("debug");
    let fab = fabric("rust");
    // The client first: it waits for the server, as the page says.
    let client = Command::new(bin.join("client"))
        .env("DOCA_EMU_FABRIC_DIR", &fab)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the client");
    std::thread::sleep(Duration::from_millis(200));
    let server = Command::new(bin.join("server"))
        .env("DOCA_EMU_FABRIC_DIR", &fab)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let s = finish(server, Duration::from_secs(60), "the server");
    let c = finish(client, Duration::from_secs(60), "the client");
    let (slog, clog) = (String::from_utf8_lossy(&s.stderr), String::from_utf8_lossy(&c.stderr));
    assert!(s.status.success() && c.status.success(), "server:\n{slog}\nclient:\n{clog}");
    // The server stops from its disconnection callback: at once to Idle, or through Stopping
    // when its reply's completion is still to come (the client may leave first).
    for want in ["server: received 'hello from the host'", "server: the client left, stopping", " -> Idle"] {
        assert!(slog.contains(want), "the server's log lacks {want:?}:\n{slog}");
    }
    for want in ["client: Idle -> Starting", "client: the server answered 'HELLO FROM THE HOST'"] {
        assert!(clog.contains(want), "the client's log lacks {want:?}:\n{clog}");
    }
    assert!(clog.contains("][DOCA][INF][client.rs:"), "DOCA's line format: {clog}");
    // The pair ends by dropping its objects, not destroying them: nothing is left behind.
    let left: Vec<_> = std::fs::read_dir(&fab).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "dropped objects left {left:?} in the fabric directory");
    let _ = std::fs::remove_dir_all(&fab);
}
