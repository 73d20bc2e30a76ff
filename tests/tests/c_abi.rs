//! The C ABI (`capi/`): C programs of our own, in the shape of DOCA's samples, built with the
//! system C compiler against `capi/include` and `libdoca_capi.so`, run against each other
//! and against the Rust side (`cc_peer`) — the mixed pairs.

use std::path::{Path, PathBuf};
use std::process::Command;

const CC_PEER: &str = env!("CARGO_BIN_EXE_cc_peer");
const EP_PEER: &str = env!("CARGO_BIN_EXE_ep_peer");

/// Where cargo put `libdoca_capi.so` (a dependency of this crate: in the `deps` folder
/// beside this test binary).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("target/<profile>/deps/<test>");
    [deps.to_path_buf(), deps.parent().expect("target/<profile>").to_path_buf()]
        .into_iter()
        .find(|d| d.join("libdoca_capi.so").exists())
        .unwrap_or_else(|| panic!("libdoca_capi.so is not beside {}", exe.display()))
}

/// Compiles `capi/tests/c/<name>.c` into a program beside the library, once per run (tests
/// run in parallel); its path.
fn build(name: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(n, _)| n == name) {
        return p.clone();
    }
    let p = compile(name);
    built.push((name.to_string(), p.clone()));
    p
}

fn compile(name: &str) -> PathBuf {
    compile_source(name, &capi_dir().join("tests/c").join(format!("{name}.c")))
}

/// The `capi/` folder.
fn capi_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").join("capi")
}

/// The C compiler: `$CC`, else `cc`.
fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// Whether the C compiler accepts `flags` (an unknown `-Werror=` or `-std=` is an error).
fn cc_knows(flags: &[&str]) -> bool {
    Command::new(cc())
        .args(flags)
        .args(["-x", "c", "-c", "/dev/null", "-o", "/dev/null"])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {:?} (install one: .ci/run does): {e}", cc()))
        .success()
}

/// The warnings gcc 14 made errors (each only where this compiler knows it): code that
/// relies on an implicit declaration, an implicit int, an int used as a pointer, mismatched
/// pointer types, a `return` of the wrong kind or an untyped parameter does not build.
fn strict_flags() -> &'static [String] {
    static FLAGS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    FLAGS.get_or_init(|| {
        [
            "implicit-function-declaration",
            "implicit-int",
            "int-conversion",
            "incompatible-pointer-types",
            "return-mismatch",
            "declaration-missing-parameter-type",
        ]
        .iter()
        .map(|w| format!("-Werror={w}"))
        .filter(|f| cc_knows(&[f]))
        .collect()
    })
}

/// The two C standards every C program of ours builds with: gnu17, and gnu23 (gcc 15's
/// default: `bool` a keyword, `()` meaning `(void)`), or gnu2x where the compiler knows no
/// gnu23 yet.
fn standards() -> [&'static str; 2] {
    static NEW: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    ["-std=gnu17", NEW.get_or_init(|| if cc_knows(&["-std=gnu23"]) { "-std=gnu23" } else { "-std=gnu2x" })]
}

/// The flags every C program of ours builds with, but the standard: warnings as errors,
/// the strict flags, `capi/include` with the build configuration of `side` (`host`, `dpu`
/// or `any`) and the tests' own folder.
fn c_flags(side: &str) -> Vec<String> {
    let here = capi_dir();
    let mut flags: Vec<String> = ["-Wall", "-Wextra", "-Werror"].map(String::from).to_vec();
    flags.extend(strict_flags().iter().cloned());
    flags.push(format!("-I{}", here.join("include").display()));
    flags.push(format!("-I{}", here.join("include").join(side).display()));
    flags.push(format!("-I{}", here.join("tests/c").display()));
    flags
}

/// Compiles the C program `source` into a program named after `name` beside the library,
/// built for neither side (the side is decided at run time, as the tests choose).
fn compile_source(name: &str, source: &Path) -> PathBuf {
    compile_for(name, source, "any")
}

/// Compiles the C program `source`, built for `side` (`host`, `dpu` or `any`), into a
/// program named after `name` beside the library. It must build at both [`standards`] with
/// the strict flags; the program is the gnu17 build.
fn compile_for(name: &str, source: &Path, side: &str) -> PathBuf {
    let lib = lib_dir();
    let out = lib.join(format!("c-{name}-{}", std::process::id()));
    let [std17, std23] = standards();
    let check = Command::new(cc())
        .args([std23, "-fsyntax-only"])
        .args(c_flags(side))
        .arg(source)
        .status()
        .expect("run the C compiler");
    assert!(check.success(), "{name}.c does not build at {std23} against capi/include ({side})");
    let status = Command::new(cc())
        .args([std17, "-o"])
        .arg(&out)
        .arg(source)
        .args(c_flags(side))
        .arg(format!("-L{}", lib.display()))
        // DT_RPATH (not RUNPATH): this library, even when LD_LIBRARY_PATH (which cargo sets
        // for tests) names a folder with an older build of it.
        .arg("-Wl,--disable-new-dtags")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ldoca_capi")
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "{name}.c does not build at {std17} against capi/include ({side})");
    out
}

/// Fails unless `out` is a success whose output contains `want` (`who` names it).
fn expect_output(out: &std::process::Output, want: &str, who: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(want),
        "{who} failed (wanted {want:?}):\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts the C echo server on `name`.
fn start_c_server(name: &str) -> std::process::Child {
    Command::new(build("cc_server"))
        .arg(name)
        .env_remove("DOCA_EMU_SIDE")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the C server")
}

/// Runs the C client against `name` for `n` messages.
fn run_c_client(name: &str, n: u32) -> std::process::Output {
    Command::new(build("cc_client"))
        .args([name, &n.to_string()])
        .env_remove("DOCA_EMU_SIDE")
        .output()
        .expect("run the C client")
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

/// The application's own memory in a map, buffers by address, bytes through DOCA's pointers,
/// reference counts and the error paths, from C.
#[test]
fn a_c_program_maps_its_own_memory_and_uses_buffers_by_address() {
    run(&build("memory"), &[], None);
}

/// DMA from C, shaped like DOCA's pe_polling: memcpy tasks completed from doca_pe_progress,
/// the destination's data length, an empty source through the error callback, try_submit's
/// code and an empty pool.
#[test]
fn a_c_program_copies_with_dma_tasks_from_progress() {
    run(&build("dma_polling"), &[], None);
}

/// DMA over memory a C program exported, shaped like DOCA's dma_copy: the C host exports its
/// malloc'd buffer and blocks in `read()`; the C DPU's DMA reads the host's first half and
/// writes the second (the host checks both, byte by byte), then, the host gone, its next task
/// fails with `NOT_FOUND`.
#[test]
fn a_c_dpu_copies_both_ways_over_malloc_memory_a_c_host_exported_while_blocked_in_read() {
    use std::io::{BufRead, Write};
    use std::process::Stdio;
    let prog = build("dma_malloc");
    let len = (4 << 20) + 4096;
    let mut host = Command::new(&prog)
        .args(["host", &len.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the C host");
    let mut host_out = std::io::BufReader::new(host.stdout.take().expect("stdout"));
    let mut line = String::new();
    host_out.read_line(&mut line).expect("the host's descriptor");
    let mut words = line.split_whitespace();
    let (Some("desc"), Some(hex), Some(addr)) = (words.next(), words.next(), words.next()) else {
        let _ = host.kill();
        panic!("the C host said {line:?}");
    };
    let mut dpu = Command::new(&prog)
        .args(["dpu", hex, addr, &len.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the C DPU");
    let mut dpu_out = std::io::BufReader::new(dpu.stdout.take().expect("stdout"));
    let mut said = String::new();
    dpu_out.read_line(&mut said).expect("the DPU's progress");
    assert_eq!(said.trim(), "copied", "the C DPU failed before its copies");
    host.stdin.take().expect("stdin").write_all(b"\n").expect("wake the host");
    let mut host_said = String::new();
    host_out.read_line(&mut host_said).expect("the host's verdict");
    assert!(
        host.wait().expect("the host").success() && host_said.trim() == "ok",
        "the C host saw {host_said:?}"
    );
    dpu.stdin.take().expect("stdin").write_all(b"\n").expect("wake the DPU");
    let mut dpu_said = String::new();
    dpu_out.read_line(&mut dpu_said).expect("the DPU's verdict");
    assert!(dpu.wait().expect("the DPU").success() && dpu_said.trim() == "ok", "the C DPU saw {dpu_said:?}");
}

/// `doca_version.h` through `doca_compat.h` alone: its macros of both generations (checked
/// at build time by the program) and both functions say the version in `core/DOCA_VERSION`,
/// as `-v` prints it.
#[test]
fn a_c_program_sees_the_claimed_version_in_macros_and_functions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
    let claimed = std::fs::read_to_string(root.join("core/DOCA_VERSION")).expect("core/DOCA_VERSION");
    let claimed = claimed.trim();
    let out = Command::new(build("version")).output().expect("run the version program");
    for want in [
        format!("DOCA SDK     Version (Compilation): {claimed}\n"),
        format!("DOCA Runtime Version (Runtime):     {claimed}\n"),
        format!("numbers {claimed}\n"),
        "ok".to_string(),
    ] {
        expect_output(&out, &want, "version");
    }
}

/// 3.x's device queries as every 3.3 sample's `common.c` uses them
/// (`open_doca_device_with_sf_index`): an SF device found by its index, devices that are not
/// SFs skipped by their function type and refused an index (`NOT_SUPPORTED`), from a
/// topology file with `func=` and `sf=`.
#[test]
fn a_c_program_finds_a_device_by_sf_index() {
    let dir = lib_dir().join(format!("c-sf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder for the topology");
    let topo = dir.join("sf.topology");
    std::fs::write(
        &topo,
        "device 03:00.0 dpu\nrep b1:00.0 pf\ndevice b1:00.0 host\ndevice b1:00.2 host func=sf sf=5\n\
         device 03:00.2 dpu func=sf sf=6\n",
    )
    .expect("write the topology");
    let out = Command::new(build("sf_devices"))
        .env("DOCA_EMU_SIDE", "host")
        .env("DOCA_EMU_TOPOLOGY", &topo)
        .output()
        .expect("run sf_devices");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "sf_devices:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// DOCA 3.3's clocks from C, shaped like `clock_cross_timestamp`: each clock alone, the
/// cross-timestamps (the NIC reading within the error margin of the primary's), the error
/// paths; then a topology whose device has the free-running clock only (`clocks=fr`): its
/// other NIC clocks are `NOT_SUPPORTED`.
#[test]
fn a_c_program_reads_the_clocks_and_cross_timestamps() {
    run(&build("clock"), &[], None);
    let dir = lib_dir().join(format!("c-clock-topology-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder for the topology");
    let topo = dir.join("clock.topology");
    std::fs::write(&topo, "device 03:00.0 dpu clocks=fr\nrep b1:00.0 pf\ndevice b1:00.0 host\n")
        .expect("write the topology");
    let out = Command::new(build("clock"))
        .arg("limited")
        .env_remove("DOCA_EMU_SIDE")
        .env("DOCA_EMU_TOPOLOGY", &topo)
        .output()
        .expect("run clock limited");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "clock limited:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// DOCA 2.9's cache_invalidate flow from C: a DMA copy whose completion submits a
/// cache-invalidate task, whose completion ends the loop; its error paths, accessors and pool.
#[test]
fn a_c_program_invalidates_a_buffer_after_a_dma_copy() {
    run(&build("cache_invalidate"), &[], None);
}

// doca_sha
/// SHA from C, shaped like DOCA's file_integrity: a file's SHA-256 by one hash task and by a
/// partial-hash task over segments, both equal to what `sha256sum` prints for the file; the
/// destination and segment rules, a session's fixed destination, reset, the 2.5 names.
#[test]
fn a_c_program_hashes_a_file_like_file_integrity_and_matches_sha256sum() {
    let file = lib_dir().join(format!("sha-input-{}", std::process::id()));
    // 300 KiB and an odd tail of pseudo-random bytes: several segments of 1000 blocks.
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let data: Vec<u8> = (0..300 * 1024 + 77)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(&file, &data).unwrap();
    let out = Command::new("sha256sum").arg(&file).output().expect("run sha256sum");
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let hex = stdout.split_whitespace().next().unwrap();
    run(&build("sha_hash"), &[file.to_str().unwrap(), hex], None);
    let _ = std::fs::remove_file(&file);
}

/// The C echo server and the C client, each in its own process.
#[test]
fn a_c_client_and_a_c_server_talk_across_two_processes() {
    let name = format!("capi-c-c-{}", std::process::id());
    let mut srv = start_c_server(&name);
    expect_output(&run_c_client(&name, 200), "ok 200", "the C client");
    let served = srv.wait_with_output_or_kill();
    assert!(served.contains("served 200"), "the C server said: {served}");
}

/// The fast path from C (`doca_cc_consumer.h`, `doca_cc_producer.h`, the consumer events):
/// each side's consumer over malloc'd memory and producer; the client's messages reach the
/// server's consumer and come back through the server's producer, tasks re-posted from their
/// callbacks.
#[test]
fn a_c_fast_path_pair_moves_buffers_both_ways() {
    let prog = build("fast_path");
    fast_pair(&prog, &prog, &format!("capi-fast-{}", std::process::id()), 300);
}

/// Runs the fast-path program `server` as the server and `client` as the client on `name`
/// for `n` messages; both must say "ok n".
fn fast_pair(server: &Path, client: &Path, name: &str, n: u32) {
    let n = n.to_string();
    let mut srv = Command::new(server)
        .args(["server", name, &n])
        .env_remove("DOCA_EMU_SIDE")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the fast-path server");
    let out = Command::new(client)
        .args(["client", name, &n])
        .env_remove("DOCA_EMU_SIDE")
        .output()
        .expect("run the fast-path client");
    expect_output(&out, &format!("ok {n}"), "the fast-path client");
    let served = srv.wait_with_output_or_kill();
    assert!(served.contains(&format!("ok {n}")), "the fast-path server said: {served}");
}

/// `doca_log.h` and `doca_argp.h` from C: parameters of each type, the mandatory one, the
/// built-in `-l`, unknown flags, and DOCA-format lines filtered by level.
#[test]
fn a_c_program_parses_its_flags_and_logs_like_a_doca_sample() {
    let prog = build("log_argp");
    let run = |args: &[&str]| {
        let out = Command::new(&prog).args(args).output().expect("run log_argp");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "log_argp {args:?}:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
        stdout
    };
    let sdk = Command::new(&prog).args(["-p", "x"]).output().expect("run log_argp");
    let err = String::from_utf8_lossy(&sdk.stderr);
    let (_, disabled) = err.split_once("sdk level now DISABLE").expect("the first marker line");
    let (before, after) = disabled.split_once("sdk level now ERROR").expect("the second marker line");
    assert!(!before.contains("][DOCA][ERR]"), "the SDK level DISABLE holds at once:\n{err}");
    assert!(
        err.contains("doca_log_backend_set_sdk_level: invalid argument"),
        "a refused call logs one line naming the function (at WARNING):\n{err}"
    );
    assert_eq!(after.matches("][DOCA][ERR]").count(), 1, "and ERROR once set:\n{err}");
    let out = run(&["-p", "03:00.0", "--count=7", "-b", "-l", "60"]);
    assert!(out.contains("start DOCA_SUCCESS pci=03:00.0 n=7 b=1"), "{out}");
    for (line, shown) in
        [("crit", true), ("error 30", true), ("info", true), ("debug", true), ("trace", false)]
    {
        let found = out.lines().any(|l| {
            l.contains("][DOCA][")
                && l.contains("[LOG_ARGP_TEST::MAIN]")
                && l.ends_with(&format!("line at {line}"))
        });
        assert_eq!(found, shown, "line at {line} at level 60:\n{out}");
    }
    let out = run(&["--pci-addr", "b1:00.0"]);
    assert!(out.contains("start DOCA_SUCCESS pci=b1:00.0 n=0 b=0"), "{out}");
    assert!(!out.contains("line at debug") && out.contains("line at info"), "INFO by default:\n{out}");
    assert!(
        run(&["-p03:00.0", "-n=4"]).contains("start DOCA_SUCCESS pci=03:00.0 n=4 b=0"),
        "attached values"
    );
    assert!(
        run(&["-p", "x", "--flag=yes"]).contains("start DOCA_ERROR_INVALID_VALUE"),
        "a switch takes no value"
    );
    assert!(run(&["-n", "3"]).contains("start DOCA_ERROR_INVALID_VALUE"), "the mandatory -p is missing");
    assert!(run(&["-p", "x", "--bogus"]).contains("start DOCA_ERROR_NOT_SUPPORTED"), "an unknown flag");
    assert!(run(&["-p", "x", "-n", "seven"]).contains("start DOCA_ERROR_INVALID_VALUE"), "not a number");
    assert!(run(&["-p", "x", "-l", "55"]).contains("start DOCA_ERROR_INVALID_VALUE"), "not a level");
}

/// The DOCA 2.5 names from C: a client written against them (log2 task counts, `size_t`
/// lengths, a `size_t` receive callback) talks to the C server written with the 2.6 names.
#[test]
fn a_client_written_with_the_2_5_names_talks_to_a_2_6_server() {
    let name = format!("capi-25-{}", std::process::id());
    let mut srv = start_c_server(&name);
    let out = Command::new(build("client25"))
        .args([&name, "100"])
        .env_remove("DOCA_EMU_SIDE")
        .output()
        .expect("run the 2.5 client");
    expect_output(&out, "ok 100", "the 2.5 client");
    let served = srv.wait_with_output_or_kill();
    assert!(served.contains("served 100"), "the C server said: {served}");
}

/// The DOCA 2.7+ names: the fast-path program rewritten with `doca_comch_*` names and headers
/// (as DOCA renamed them; the producer's send takes immediate data) runs as the client
/// against the program with the 2.6 names as the server.
#[test]
fn a_client_written_with_the_comch_names_talks_to_a_2_6_server() {
    let source = std::fs::read_to_string(capi_dir().join("tests/c/fast_path.c")).expect("fast_path.c");
    let mut comch = source
        .replace("#include <doca_cc.h>", "#include <doca_comch.h>")
        .replace("#include <doca_cc_consumer.h>", "#include <doca_comch_consumer.h>")
        .replace("#include <doca_cc_producer.h>", "#include <doca_comch_producer.h>")
        .replace("doca_cc_", "doca_comch_");
    // The comch producer's send: (producer, buf, imm_data, imm_data_len, consumer_id, task).
    let call = "doca_comch_producer_task_send_alloc_init(producer, ";
    let mut at = 0;
    while let Some(i) = comch[at..].find(call) {
        let args = at + i + call.len();
        let second = args + comch[args..].find(", ").expect("a second argument") + 2;
        comch.insert_str(second, "NULL, 0, ");
        at = second;
    }
    assert!(!comch.contains("doca_cc_"), "every name is a comch name");
    let path = lib_dir().join(format!("comch_fast_path-{}.c", std::process::id()));
    std::fs::write(&path, comch).expect("write the comch program");
    let client = compile_source("comch_fast_path", &path);
    fast_pair(&build("fast_path"), &client, &format!("capi-comch-{}", std::process::id()), 100);
    // The control-path client too (connection counters included), against the C server.
    let source = std::fs::read_to_string(capi_dir().join("tests/c/cc_client.c")).expect("cc_client.c");
    let comch = source
        .replace("#include <doca_cc.h>", "#include <doca_comch.h>")
        .replace("doca_cc_", "doca_comch_")
        .replace("DOCA_CC_", "DOCA_COMCH_");
    let path = lib_dir().join(format!("comch_cc_client-{}.c", std::process::id()));
    std::fs::write(&path, comch).expect("write the comch client");
    let name = format!("capi-comch-ctrl-{}", std::process::id());
    let mut srv = start_c_server(&name);
    let out = Command::new(compile_source("comch_cc_client", &path))
        .args([&name, "50"])
        .env_remove("DOCA_EMU_SIDE")
        .output()
        .expect("run the comch client");
    expect_output(&out, "ok 50", "the comch-named control-path client");
    let served = srv.wait_with_output_or_kill();
    assert!(served.contains("served 50"), "the C server said: {served}");
}

/// Starts the C legacy service with `args` and waits for its "listening" line; the child and
/// the rest of its output.
fn start_c_service(args: &[&str]) -> (std::process::Child, std::io::BufReader<std::process::ChildStdout>) {
    let mut srv = Command::new(build("legacy"))
        .arg("service")
        .args(args)
        .env_remove("DOCA_EMU_SIDE")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the C service");
    let mut out = std::io::BufReader::new(srv.stdout.take().expect("piped"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).expect("the C service's first line");
    assert_eq!(line.trim(), "listening", "a client can connect once the service listens");
    (srv, out)
}

/// Waits for the C service to end; what it printed after "listening".
fn c_service_output(
    mut srv: std::process::Child,
    mut out: std::io::BufReader<std::process::ChildStdout>,
) -> String {
    srv.wait_with_output_or_kill();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut out, &mut rest);
    rest
}

/// `doca_comm_channel.h` from C: a service and a client in the shape of DOCA's comm_channel
/// samples, each asleep in epoll on its receive event channel between messages.
#[test]
fn a_c_legacy_service_and_client_talk_across_two_processes() {
    let name = format!("capi-legacy-{}", std::process::id());
    let (srv, out) = start_c_service(&[&name, "200"]);
    let client = Command::new(build("legacy"))
        .args(["client", &name, "200"])
        .env_remove("DOCA_EMU_SIDE")
        .output()
        .expect("run the C client");
    expect_output(&client, "ok 200", "the C legacy client");
    let served = c_service_output(srv, out);
    assert!(served.contains("ok 200"), "the C service said: {served}");
}

/// A mixed legacy pair: the C service against the Rust client (`ep_peer client`).
#[test]
fn the_c_legacy_service_answers_the_rust_client() {
    let name = format!("capi-legacy-rust-{}", std::process::id());
    let (srv, out) = start_c_service(&[&name, "1", "3b:00.0"]);
    let client = doca_tests::Peer::spawn(EP_PEER, &["client", &name, "legacy message 0"]);
    assert_eq!(client.line(), "reply legacy message 0");
    assert!(client.finish(), "the Rust client ends cleanly");
    let served = c_service_output(srv, out);
    assert!(served.contains("ok 1"), "the C service said: {served}");
}

trait WaitOrKill {
    fn wait_with_output_or_kill(&mut self) -> String;
}

impl WaitOrKill for std::process::Child {
    /// Waits up to a minute for the process, then kills it; its stdout.
    fn wait_with_output_or_kill(&mut self) -> String {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            if let Ok(Some(_)) = self.try_wait() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let _ = self.kill();
        let _ = self.wait();
        let mut out = String::new();
        if let Some(mut s) = self.stdout.take() {
            let _ = std::io::Read::read_to_string(&mut s, &mut out);
        }
        out
    }
}

/// A mixed pair: the C echo server against the Rust client (`cc_peer client … echo`).
#[test]
fn the_c_server_serves_the_rust_client() {
    let name = format!("capi-c-rust-{}", std::process::id());
    let mut srv = start_c_server(&name);
    let out = Command::new(CC_PEER)
        .args(["client", &name, "echo", "300", "7"])
        .output()
        .expect("run the Rust client");
    expect_output(&out, "ok 300", "the Rust client against the C server");
    let served = srv.wait_with_output_or_kill();
    assert!(served.contains("served 300"), "the C server said: {served}");
}

/// A mixed pair: the Rust echo server (`cc_peer server`) against the C client.
#[test]
fn the_rust_server_serves_the_c_client() {
    let name = format!("capi-rust-c-{}", std::process::id());
    let srv = doca_tests::Peer::spawn(CC_PEER, &["server", &name]);
    assert_eq!(srv.line(), "running");
    expect_output(&run_c_client(&name, 300), "ok 300", "the C client against the Rust server");
    assert!(srv.finish());
}

/// Each header builds on its own, at both standards with the strict flags, for each side;
/// and what C code written against DOCA takes from DOCA's headers without including it
/// itself is there: `<string.h>` and `<stdlib.h>` through `doca_compat.h` (every header),
/// `<stdlib.h>` through `doca_pe.h`, `doca_dev.h` through `doca_ctx.h`, `<stdbool.h>`
/// through `doca_cc.h`, `doca_mmap.h` and `doca_buf.h` (2.5's), and the build configuration's macros.
#[test]
fn every_header_stands_alone_and_brings_what_doca_s_brings() {
    let dir = lib_dir().join(format!("c-headers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder for the checks");
    let mut checks: Vec<(String, String)> = Vec::new();
    let mut headers: Vec<String> = std::fs::read_dir(capi_dir().join("include"))
        .expect("capi/include")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".h"))
        .collect();
    headers.sort();
    assert!(headers.len() > 15, "{headers:?}");
    for h in &headers {
        // strnlen, strcpy, malloc and free with no standard header of the program's own.
        checks.push((
            h.replace(".h", ""),
            format!(
                "#include <{h}>\nint use(const char *s, char *d)\n{{\n\tchar *p = malloc(8);\n\tfree(p);\n\tstrcpy(d, s);\n\treturn (int)strnlen(s, 4);\n}}\n"
            ),
        ));
    }
    checks.push((
        "pe_stdlib".into(),
        "#include <doca_pe.h>\nvoid *get(void)\n{\n\treturn calloc(1, 1);\n}\n".into(),
    ));
    checks.push((
        "ctx_dev".into(),
        "#include <doca_ctx.h>\nstruct cfg {\n\tchar pci[DOCA_DEVINFO_PCI_ADDR_SIZE];\n};\n\
         doca_error_t f(struct doca_devinfo *d, struct cfg *c)\n{\n\treturn doca_devinfo_get_pci_addr_str(d, c->pci);\n}\n"
            .into(),
    ));
    checks.push(("cc_bool".into(), "#include <doca_cc.h>\nbool yes(void)\n{\n\treturn true;\n}\n".into()));
    // 2.5 samples (pe_reactive, pe_task_error) keep a `bool` in their state, set from a
    // context's state callback, and include only doca_mmap.h, doca_buf.h and the library's
    // headers: DOCA 2.5's doca_mmap.h and doca_buf.h bring <stdbool.h>.
    for h in ["doca_mmap", "doca_buf"] {
        checks.push((
            format!("{h}_bool"),
            format!(
                "#include <{h}.h>\nstruct state {{\n\tbool run_main_loop;\n}};\n\
                 void stopped(struct state *s)\n{{\n\ts->run_main_loop = false;\n}}\n\
                 bool running(const struct state *s)\n{{\n\treturn s->run_main_loop == true;\n}}\n"
            ),
        ));
    }
    checks.push((
        "arch".into(),
        "#include <doca_error.h>\n#if !defined(DOCA_ARCH_X86) && !defined(DOCA_ARCH_ARM)\n#error no CPU macro\n#endif\n\
         #if defined(DOCA_ARCH_HOST) && defined(DOCA_ARCH_DPU)\n#error two sides\n#endif\nint x;\n"
            .into(),
    ));
    for (name, text) in &checks {
        let path = dir.join(format!("{name}.c"));
        std::fs::write(&path, text).expect("write a check");
        for side in ["host", "dpu", "any"] {
            for std in standards() {
                let out = Command::new(cc())
                    .args([std, "-fsyntax-only"])
                    .args(c_flags(side))
                    .arg(&path)
                    .output()
                    .expect("run the C compiler");
                assert!(
                    out.status.success(),
                    "{name} ({side}, {std}):\n{text}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
        }
    }
    // Without a side's folder, a clear error rather than a program built for no one.
    let out = Command::new(cc())
        .args(["-std=gnu17", "-fsyntax-only"])
        .arg(format!("-I{}", capi_dir().join("include").display()))
        .arg(dir.join("doca_dev.c"))
        .output()
        .expect("run the C compiler");
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("no doca_build_config.h"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// One source, three builds: for the host it sees `DOCA_ARCH_HOST` and lists the host's
/// functions only, for the DPU `DOCA_ARCH_DPU` and the DPU's device only, for neither the
/// side comes from `DOCA_EMU_SIDE`. `DOCA_EMU_SIDE` naming the side it was built for is
/// fine; naming the other is `NOT_PERMITTED` with a log line naming both.
#[test]
fn a_program_built_for_a_side_runs_on_that_side_only() {
    let source = capi_dir().join("tests/c/sides.c");
    let host = compile_for("sides-host", &source, "host");
    let dpu = compile_for("sides-dpu", &source, "dpu");
    let any = compile_for("sides-any", &source, "any");
    let out = run_sides(&host, None);
    assert!(out.contains("arch host\n") && !out.contains("no cpu macro"), "{out}");
    assert!(
        out.contains("dev 0000:b1:00.0")
            && !out.contains("dev 0000:03:00.0")
            && out.contains("list DOCA_SUCCESS"),
        "{out}"
    );
    let out = run_sides(&dpu, None);
    assert!(
        out.contains("arch dpu\n") && out.contains("dev 0000:03:00.0") && !out.contains("dev 0000:b1:00.0"),
        "{out}"
    );
    assert!(run_sides(&dpu, Some("dpu")).contains("list DOCA_SUCCESS"), "the same side in DOCA_EMU_SIDE");
    let out = run_sides(&dpu, Some("host"));
    assert!(out.contains("list DOCA_ERROR_NOT_PERMITTED"), "{out}");
    assert!(
        out.contains("built for the dpu side") && out.contains("DOCA_EMU_SIDE=host"),
        "names both: {out}"
    );
    let out = run_sides(&host, Some("dpu"));
    assert!(
        out.contains("list DOCA_ERROR_NOT_PERMITTED") && out.contains("built for the host side"),
        "{out}"
    );
    let out = run_sides(&any, Some("dpu"));
    assert!(
        out.contains("arch any\n") && out.contains("dev 0000:03:00.0") && !out.contains("dev 0000:b1:00.0"),
        "{out}"
    );
    let out = run_sides(&any, Some("host"));
    assert!(out.contains("dev 0000:b1:00.0") && !out.contains("dev 0000:03:00.0"), "{out}");
}

/// A program linked from parts built for the host and parts built for the DPU lists and
/// opens nothing: `NOT_PERMITTED`, logged naming both sides.
#[test]
fn a_program_with_parts_built_for_both_sides_opens_nothing() {
    let dir = lib_dir();
    let part = dir.join(format!("c-host-part-{}.c", std::process::id()));
    std::fs::write(
        &part,
        "#include <doca_types.h>\nint host_part(void);\nint host_part(void)\n{\n\treturn 1;\n}\n",
    )
    .expect("write the host part");
    let obj = dir.join(format!("c-host-part-{}.o", std::process::id()));
    let status = Command::new(cc())
        .args(["-std=gnu17", "-c", "-o"])
        .arg(&obj)
        .arg(&part)
        .args(c_flags("host"))
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "the host part does not build");
    let prog = dir.join(format!("c-sides-mixed-{}", std::process::id()));
    let status = Command::new(cc())
        .args(["-std=gnu17", "-o"])
        .arg(&prog)
        .arg(capi_dir().join("tests/c/sides.c"))
        .arg(&obj)
        .args(c_flags("dpu"))
        .arg(format!("-L{}", dir.display()))
        .arg("-Wl,--disable-new-dtags")
        .arg(format!("-Wl,-rpath,{}", dir.display()))
        .arg("-ldoca_capi")
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "the mixed program does not build");
    let out = run_sides(&prog, None);
    assert!(out.contains("list DOCA_ERROR_NOT_PERMITTED"), "{out}");
    assert!(out.contains("host side") && out.contains("dpu side"), "names both: {out}");
}

/// The fast-path program built twice, as DOCA's host and DPU programs are: the DPU build
/// serves, the host build is the client, no `DOCA_EMU_SIDE` anywhere.
#[test]
fn one_source_built_for_the_dpu_and_for_the_host_talks_to_itself() {
    let source = capi_dir().join("tests/c/fast_path.c");
    let dpu = compile_for("fast-dpu", &source, "dpu");
    let host = compile_for("fast-host", &source, "host");
    fast_pair(&dpu, &host, &format!("capi-sides-{}", std::process::id()), 50);
}

/// The documented install, laid out as DOCA's: the library under DOCA's sonames in
/// `lib/<multiarch>`, `doca.pc` and one `.pc` per library, `applications/VERSION` (the same
/// version as the `.pc` files), a build configuration per side. A C program then builds with
/// `pkg-config --cflags --libs doca` alone, for the host by default, for the DPU from the
/// `dpu/` folder or with `--define-variable`, and runs as what it was built for.
#[test]
fn the_install_gives_a_prefix_that_pkg_config_finds() {
    let prefix = install("pkg-config");
    let pc = pc_dir(&prefix);
    let libdir = pc.parent().expect("lib/<multiarch>").to_path_buf();
    for f in ["doca.pc", "doca-common.pc", "doca-argp.pc", "doca-comch.pc", "doca-cc.pc", "dpu/doca.pc"] {
        assert!(pc.join(f).exists(), "{f} was not installed in {}", pc.display());
    }
    for so in ["libdoca_common.so.2", "libdoca_common.so", "libdoca_argp.so.2", "libdoca_comch.so.2"] {
        let target =
            std::fs::canonicalize(libdir.join(so)).unwrap_or_else(|_| panic!("{so} was not installed"));
        assert_eq!(target.file_name().and_then(|n| n.to_str()), Some("libdoca_capi.so"), "{so}");
    }
    for f in [
        "include/doca_compat.h",
        "include/doca_config.h",
        "include/host/doca_build_config.h",
        "include/dpu/doca_build_config.h",
    ] {
        assert!(prefix.join(f).exists(), "{f} was not installed");
    }
    assert!(!prefix.join("include/doca_build_config.h").exists(), "no side is the headers' own");
    let version = std::fs::read_to_string(prefix.join("applications/VERSION")).expect("applications/VERSION");
    assert_eq!(pkg_config(&pc, &["--modversion", "doca-common"]), version.trim(), "one version everywhere");
    let sides = capi_dir().join("tests/c/sides.c");
    let host = build_with_pkg_config(&prefix, "host", &sides, &pc, &[]);
    let out = run_sides(&host, None);
    assert!(
        out.contains("arch host\n") && out.contains("dev 0000:b1:00.0") && !out.contains("dev 0000:03:00.0"),
        "{out}"
    );
    let dpu = build_with_pkg_config(&prefix, "dpu", &sides, &pc.join("dpu"), &[]);
    let out = run_sides(&dpu, None);
    assert!(
        out.contains("arch dpu\n") && out.contains("dev 0000:03:00.0") && !out.contains("dev 0000:b1:00.0"),
        "{out}"
    );
    let defined =
        build_with_pkg_config(&prefix, "defined", &sides, &pc, &["--define-variable=doca_emu_side=dpu"]);
    assert!(run_sides(&defined, None).contains("arch dpu\n"), "--define-variable picks the DPU side");
    let any =
        build_with_pkg_config(&prefix, "any", &capi_dir().join("tests/c/devices.c"), &pc.join("any"), &[]);
    run(&any, &[], None);
    let _ = std::fs::remove_dir_all(&prefix);
}

/// The `lib/<multiarch>/pkgconfig` folder of an install (the one folder under `lib/` that
/// holds `pkgconfig/doca.pc`).
fn pc_dir(prefix: &Path) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(prefix.join("lib"))
        .expect("lib/")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path().join("pkgconfig"))
        .filter(|p| p.join("doca.pc").exists())
        .collect();
    assert_eq!(found.len(), 1, "one lib/<multiarch>/pkgconfig in {}: {found:?}", prefix.display());
    found[0].clone()
}

/// `pkg-config args…` with `PKG_CONFIG_PATH=pc`; its output.
fn pkg_config(pc: &Path, args: &[&str]) -> String {
    let out = Command::new("pkg-config")
        .args(args)
        .env("PKG_CONFIG_PATH", pc)
        .output()
        .expect("run pkg-config (.ci/run installs it)");
    assert!(out.status.success(), "pkg-config {args:?} (PKG_CONFIG_PATH={}) failed", pc.display());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Builds `source` with `pkg-config --cflags --libs doca` (and `extra` pkg-config options)
/// alone, at gnu17 with the strict flags, into `<prefix>/<name>`.
fn build_with_pkg_config(prefix: &Path, name: &str, source: &Path, pc: &Path, extra: &[&str]) -> PathBuf {
    let mut args = extra.to_vec();
    args.extend(["--cflags", "--libs", "doca"]);
    let flags = pkg_config(pc, &args);
    let prog = prefix.join(name);
    let status = Command::new(cc())
        .args(["-std=gnu17", "-Wall", "-Werror"])
        .args(strict_flags())
        .arg("-o")
        .arg(&prog)
        .arg(source)
        .args(flags.split_whitespace())
        .status()
        .expect("run the C compiler");
    assert!(status.success(), "{} does not build with the pkg-config flags: {flags}", source.display());
    prog
}

/// Runs the `sides.c` program `prog` with `DOCA_EMU_SIDE` set to `side` (None: not set);
/// its stdout then its stderr.
fn run_sides(prog: &Path, side: Option<&str>) -> String {
    let mut cmd = Command::new(prog);
    // The installed library, through the program's run path: not whatever `libdoca_capi.so`
    // cargo's library path names (a stale one from an earlier `cargo build`).
    cmd.env_remove("LD_LIBRARY_PATH");
    match side {
        Some(s) => cmd.env("DOCA_EMU_SIDE", s),
        None => cmd.env_remove("DOCA_EMU_SIDE"),
    };
    let out = cmd.output().expect("run the sides program");
    assert!(
        out.status.success(),
        "{} failed ({}):\n{}{}",
        prog.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A prefix that holds a real DOCA (a header that is not ours, or a `libdoca_common.so*`
/// that is not our library) is refused and left as it was; our own install is installed
/// over again.
#[test]
fn the_install_refuses_a_prefix_that_holds_a_real_doca() {
    for (i, (file, text)) in [
        ("include/doca_version.h", "/* the vendor's header */\n"),
        ("lib/x86_64-linux-gnu/libdoca_common.so.2", "\x7fELF the vendor's library"),
        ("lib/libdoca_common.so", "\x7fELF the vendor's library"),
    ]
    .into_iter()
    .enumerate()
    {
        let prefix = std::env::temp_dir().join(format!("doca-emu-real-{i}-{}", std::process::id()));
        let path = prefix.join(file);
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("make the fake DOCA");
        std::fs::write(&path, text).expect("write the fake DOCA");
        let out = Command::new("bash")
            .arg(capi_dir().join("install.sh"))
            .arg("--lib")
            .arg(lib_dir())
            .arg(&prefix)
            .output()
            .expect("run capi/install.sh");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("holds a DOCA install"), "{file}: {err}");
        assert_eq!(std::fs::read_to_string(&path).expect("still there"), text, "{file} untouched");
        let entries = walk(&prefix);
        assert_eq!(entries, vec![path.clone()], "nothing written beside {file}");
        let _ = std::fs::remove_dir_all(&prefix);
    }
    let prefix = install("again");
    let status = Command::new("bash")
        .arg(capi_dir().join("install.sh"))
        .arg("--lib")
        .arg(lib_dir())
        .arg(&prefix)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run capi/install.sh");
    assert!(status.success(), "our own install is not a real DOCA");
    let _ = std::fs::remove_dir_all(&prefix);
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).expect("read a folder").filter_map(|e| e.ok()) {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            files.extend(walk(&e.path()));
        } else {
            files.push(e.path());
        }
    }
    files
}

/// Installs the library, headers and pkg-config files into a fresh temporary prefix.
fn install(what: &str) -> PathBuf {
    let prefix = std::env::temp_dir().join(format!("doca-emu-prefix-{what}-{}", std::process::id()));
    let status = Command::new("bash")
        .arg(capi_dir().join("install.sh"))
        .arg("--lib")
        .arg(lib_dir())
        .arg(&prefix)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run capi/install.sh");
    assert!(status.success(), "capi/install.sh failed");
    prefix
}

/// The documented meson flow: `PKG_CONFIG_PATH=<prefix>/lib/pkgconfig meson setup` of a
/// sample-shaped directory (`dependency('doca')`, `'doca-argp'`, `'doca-comch'`) builds its C
/// programs unchanged, and they run. Needs meson and ninja: `.ci/run` installs them and sets
/// `DOCA_EMU_REQUIRE_MESON`, which makes their absence a failure; elsewhere the test says it
/// did not run.
#[test]
fn a_sample_shaped_meson_project_builds_against_the_install() {
    let have = |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if !have("meson") || !have("ninja") {
        assert!(
            std::env::var_os("DOCA_EMU_REQUIRE_MESON").is_none(),
            "meson and ninja are required here (DOCA_EMU_REQUIRE_MESON is set)"
        );
        eprintln!("meson or ninja not installed: the meson build was NOT checked");
        return;
    }
    let prefix = install("meson");
    let pc = pc_dir(&prefix);
    let build = meson_build(&capi_dir().join("tests/meson"), &prefix.join("build"), &pc);
    let out = Command::new(build.join("doca_log_argp"))
        .args(["--pci-addr", "03:00.0", "-n", "2"])
        .output()
        .expect("run the meson-built program");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("start DOCA_SUCCESS pci=03:00.0 n=2"), "{stdout}");
    assert!(build.join("doca_cc_client").exists(), "the cc client was built too");
    let out = run_sides(&build.join("doca_sides"), None);
    assert!(out.contains("arch host\n") && !out.contains("dev 0000:03:00.0"), "the host's by default: {out}");
    // The same meson.build for the DPU: only the pkg-config folder differs.
    let dpu = meson_build(&capi_dir().join("tests/meson"), &prefix.join("build-dpu"), &pc.join("dpu"));
    let out = run_sides(&dpu.join("doca_sides"), None);
    assert!(
        out.contains("arch dpu\n") && out.contains("dev 0000:03:00.0") && !out.contains("dev 0000:b1:00.0"),
        "{out}"
    );
    let _ = std::fs::remove_dir_all(&prefix);
}

/// `meson setup build source` with `PKG_CONFIG_PATH=pc`, then `meson compile`; `build`.
fn meson_build(source: &Path, build: &Path, pc: &Path) -> PathBuf {
    let setup = Command::new("meson")
        .arg("setup")
        .arg(build)
        .arg(source)
        .env("PKG_CONFIG_PATH", pc)
        .output()
        .expect("run meson setup");
    assert!(setup.status.success(), "meson setup failed:\n{}", String::from_utf8_lossy(&setup.stdout));
    let compile =
        Command::new("meson").arg("compile").arg("-C").arg(build).output().expect("run meson compile");
    assert!(compile.status.success(), "meson compile failed:\n{}", String::from_utf8_lossy(&compile.stdout));
    build.to_path_buf()
}

/// The root-only install at DOCA's own place, `/opt/mellanox/doca`, where DOCA 2.5 and 2.9
/// sample meson files read `applications/VERSION`: a project shaped like theirs (its
/// version read from that file, `dependency('doca')`) configures, builds and runs. It writes
/// outside any temporary folder, so it runs only where `DOCA_EMU_TEST_OPT_INSTALL` is set
/// (`.ci/run` sets it), as root, with no `/opt/mellanox` there (no DOCA to touch); it
/// removes what it installed. Elsewhere it says it did not run.
#[test]
fn the_install_at_opt_mellanox_doca_serves_doca_s_sample_meson_files() {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false);
    let have = |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    let mellanox = Path::new("/opt/mellanox");
    if std::env::var_os("DOCA_EMU_TEST_OPT_INSTALL").is_none() || !root || mellanox.exists() || !have("meson")
    {
        eprintln!("the install at /opt/mellanox/doca was NOT checked (needs DOCA_EMU_TEST_OPT_INSTALL, root, meson and no /opt/mellanox)");
        return;
    }
    let prefix = mellanox.join("doca");
    let status = Command::new("bash")
        .arg(capi_dir().join("install.sh"))
        .arg("--lib")
        .arg(lib_dir())
        .arg(&prefix)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run capi/install.sh");
    let project = std::env::temp_dir().join(format!("doca-emu-opt-sample-{}", std::process::id()));
    let result = std::panic::catch_unwind(|| {
        assert!(status.success(), "capi/install.sh /opt/mellanox/doca failed");
        std::fs::create_dir_all(&project).expect("a project folder");
        std::fs::copy(capi_dir().join("tests/c/sides.c"), project.join("sides.c")).expect("copy sides.c");
        std::fs::write(
            project.join("meson.build"),
            "project('opt_check', 'C',\n\tversion: run_command(find_program('cat'),\n\t\t\
             files('/opt/mellanox/doca/applications/VERSION'), check: true).stdout().strip(),\n\t\
             meson_version: '>= 0.61.2')\n\
             add_project_arguments('-D DOCA_ALLOW_EXPERIMENTAL_API', language: ['c'])\n\
             message('version ' + meson.project_version())\n\
             executable('sides', files('sides.c'), dependencies: [dependency('doca')])\n",
        )
        .expect("write meson.build");
        let pc = pc_dir(&prefix);
        let build = meson_build(&project, &project.join("build"), &pc);
        let out = run_sides(&build.join("sides"), None);
        assert!(out.contains("arch host\n") && out.contains("list DOCA_SUCCESS"), "{out}");
        let version = std::fs::read_to_string(prefix.join("applications/VERSION")).expect("VERSION");
        let log = std::fs::read_to_string(build.join("meson-logs/meson-log.txt")).unwrap_or_default();
        assert!(log.contains(&format!("version {}", version.trim())), "the project's version is VERSION's");
    });
    let _ = std::fs::remove_dir_all(&project);
    let _ = std::fs::remove_dir_all(mellanox);
    if let Err(e) = result {
        std::panic::resume_unwind(e);
    }
}

/// Until the application creates an SDK log backend, the library's errors go to standard
/// error (DOCA would show nothing: a refused call would show only its code);
/// `DOCA_EMU_SDK_STDERR=0` keeps DOCA's silence.
#[test]
fn sdk_errors_are_visible_before_any_log_backend_exists() {
    let prog = build("sdk_default_log");
    let out = Command::new(&prog).output().expect("run sdk_default_log");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "DOCA_ERROR_INVALID_VALUE");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[DOCA][ERR]") && err.contains("doca_cc_server_create"), "{err}");
    let quiet = Command::new(&prog).env("DOCA_EMU_SDK_STDERR", "0").output().expect("run sdk_default_log");
    assert!(quiet.status.success());
    assert!(quiet.stderr.is_empty(), "{}", String::from_utf8_lossy(&quiet.stderr));
}
