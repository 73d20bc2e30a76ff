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
/// run in parallel); its path. A name ending in `25` is written against the DOCA 2.5 headers:
/// it is built at API level 25 (`DOCA_EMU_API_LEVEL=25`), the others at the source tree's.
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
    let source = capi_dir().join("tests/c").join(format!("{name}.c"));
    if name.ends_with("25") {
        compile_with(name, &source, "any", &["-DDOCA_EMU_API_LEVEL=25"])
    } else {
        compile_source(name, &source)
    }
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

/// The flags every C program of ours builds with, but the standard: warnings as errors
/// (`-Wshadow` among them: a local named like `check.h`'s failure count would hide every
/// failed check of its function), the strict flags, `capi/include` with the build configuration of `side` (`host`, `dpu`
/// or `any`) and the tests' own folder.
fn c_flags(side: &str) -> Vec<String> {
    let here = capi_dir();
    let mut flags: Vec<String> = ["-Wall", "-Wextra", "-Wshadow", "-Werror"].map(String::from).to_vec();
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
    compile_with(name, source, side, &[])
}

/// [`compile_for`] with `extra` compiler flags (an API level: `-DDOCA_EMU_API_LEVEL=25`).
fn compile_with(name: &str, source: &Path, side: &str, extra: &[&str]) -> PathBuf {
    let lib = lib_dir();
    let out = lib.join(format!("c-{name}-{}", std::process::id()));
    let [std17, std23] = standards();
    let check = Command::new(cc())
        .args([std23, "-fsyntax-only"])
        .args(c_flags(side))
        .args(extra)
        .arg(source)
        .status()
        .expect("run the C compiler");
    assert!(check.success(), "{name}.c does not build at {std23} against capi/include ({side})");
    let status = Command::new(cc())
        .args([std17, "-o"])
        .arg(&out)
        .arg(source)
        .args(c_flags(side))
        .args(extra)
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

/// Two C threads taking turns with an inventory's one buffer: a handle lives from its get to
/// its last `doca_buf_dec_refcount`, whatever the other thread gives back meanwhile.
#[test]
fn two_c_threads_taking_turns_with_one_buffer_keep_their_handles() {
    run(&build("buf_threads"), &[], None);
}

/// DMA from C, shaped like DOCA's pe_polling: memcpy tasks completed from doca_pe_progress,
/// the destination's data length, an empty source through the error callback, try_submit's
/// code and an empty pool.
#[test]
fn a_c_program_copies_with_dma_tasks_from_progress() {
    run(&build("dma_polling"), &[], None);
}

/// DOCA's graph sample from C: two DMA context nodes and a user node comparing their
/// destinations, 10 instances at once, then resubmitted with one failing user node; the
/// codes of `doca_graph.h` (IN_USE, NOT_PERMITTED, BAD_STATE, NO_MEMORY) on the way.
#[test]
fn a_c_program_runs_a_graph_of_dma_nodes_and_a_user_node() {
    run(&build("graph_sample"), &[], None);
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
    // The host, blocked in read() with no comm channel at all, is on doca_emu's map.
    let ls =
        Command::new(env!("CARGO_BIN_EXE_emu_cli")).args(["ls", "--json"]).output().expect("doca_emu runs");
    let ls = String::from_utf8_lossy(&ls.stdout);
    assert!(
        ls.contains(&format!("\"pid\": {}", host.id())) || ls.contains(&format!("\"pid\":{}", host.id())),
        "{ls}"
    );
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

/// The same C pair with host and DPU apart, as on two machines: fabric directories of their
/// own, nothing shared but the TCP link (its keys made by `doca_link::remote::keys`), on the
/// loopback. The host's library serves the DPU's DMA across the link while the host blocks
/// in `read()`; once the host is gone, the DPU's next task fails with `NOT_FOUND`.
#[test]
fn a_c_dpu_copies_both_ways_over_malloc_memory_of_a_c_host_across_the_link() {
    let apart = doca_tests::link::Apart::loopback("c-dma");
    dma_malloc_apart(&apart, (&[], &[]));
}

/// The same with host and DPU in two network namespaces joined by a veth pair (root).
#[test]
fn a_c_dpu_copies_both_ways_over_malloc_memory_of_a_c_host_in_another_network_namespace() {
    use doca_tests::link::{inside, veth_pair, DPU_IP};
    let Some(net) = veth_pair("the C dma pair across a veth pair") else { return };
    let apart = doca_tests::link::Apart::new("c-dma-veth", &DPU_IP.to_string(), 18517);
    dma_malloc_apart(&apart, (&inside(&net.a), &inside(&net.b)));
}

/// `dma_malloc`'s host and DPU with the environments of `apart`, each under its prefix.
fn dma_malloc_apart(apart: &doca_tests::link::Apart, (host_at, dpu_at): (&[&str], &[&str])) {
    use std::io::{BufRead, Write};
    use std::process::Stdio;
    let prog = build("dma_malloc");
    let under = |prefix: &[&str]| match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(&prog);
            c
        }
        None => Command::new(&prog),
    };
    let len = (4 << 20) + 4096;
    let mut host = under(host_at)
        .args(["host", &len.to_string()])
        .envs(apart.host_env())
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
    let mut dpu = under(dpu_at)
        .args(["dpu", hex, addr, &len.to_string()])
        .envs(apart.dpu_env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the C DPU");
    let mut dpu_out = std::io::BufReader::new(dpu.stdout.take().expect("stdout"));
    let mut said = String::new();
    dpu_out.read_line(&mut said).expect("the DPU's progress");
    if said.trim() != "copied" {
        let _ = host.kill();
        panic!("the C DPU failed before its copies: {said:?}");
    }
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

/// DOCA's capability queries answer "no" quietly (programs probe every device with them);
/// the create that needs the capability logs the refusal and its reason once.
#[test]
fn a_capability_query_says_no_quietly_and_the_refused_create_says_why() {
    let dir = lib_dir().join(format!("c-cap-quiet-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder for the topology");
    let topo = dir.join("nodma.topology");
    std::fs::write(
        &topo,
        "device 03:00.0 dpu\nrep b1:00.0 pf\ndevice b1:00.0 host\ncap dma.memcpy 0\ncap sha.hash 0\ncap sha.partial_hash 0\n",
    )
    .expect("write the topology");
    let out = Command::new(build("cap_quiet"))
        .env("DOCA_EMU_SIDE", "host")
        .env("DOCA_EMU_TOPOLOGY", &topo)
        .output()
        .expect("run cap_quiet");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && stdout.trim() == "ok", "cap_quiet:\n{stdout}{stderr}");
    let (queries, creates) = stderr.split_once("--- create ---").expect("the program's marker line");
    assert!(!queries.contains("NOT_SUPPORTED"), "a query's \"no\" logged a line:\n{stderr}");
    assert!(
        creates.contains("doca_dma_create") && creates.contains("cap dma.memcpy 0"),
        "the refused DMA create says why:\n{stderr}"
    );
    assert!(
        creates.contains("doca_sha_create") && creates.contains("sha.hash"),
        "the refused SHA create says why:\n{stderr}"
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

// doca_aes_gcm
/// AES-GCM from C: the GCM specification's test case 16 encrypted (AAD, ciphertext, tag) and
/// decrypted back, the 12-byte tag, keys, accessors, and each failure with its status.
#[test]
fn a_c_program_encrypts_and_decrypts_the_gcm_test_vector() {
    run(&build("aes_gcm"), &[], None);
}
/// DOCA Compress from C at each API level (`capi/tests/c/compress.c`): a file compressed and
/// decompressed back with zlib's checksums; at 2.5/2.6 an LZ4 frame, at 2.7 its block
/// sequence (stream task) and one LZ4 block; the documented failures (too small a
/// destination, corrupt input, try_submit without a destination).
#[test]
fn a_c_program_compresses_and_decompresses_at_every_api_level() {
    use std::io::Write as _;
    let dir = lib_dir();
    let tag = std::process::id();
    // 400 KiB of compressible text with pseudo-random numbers in it.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut data = Vec::new();
    while data.len() < 400 << 10 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        data.extend_from_slice(
            format!("line {} of the compress test: {}\n", data.len(), x % 1000).as_bytes(),
        );
    }
    let info = lz4_flex::frame::FrameInfo::new()
        .block_checksums(true)
        .content_checksum(true)
        .block_size(lz4_flex::frame::BlockSize::Max64KB)
        .block_mode(lz4_flex::frame::BlockMode::Linked);
    let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
    enc.write_all(&data).unwrap();
    let frame = enc.finish().unwrap();
    // The block sequence: after the 7-byte header (no content size, no dictionary), before
    // the end mark and the content checksum.
    assert_eq!(frame[4] & 0x09, 0, "a header of 7 bytes");
    let stream = &frame[7..frame.len() - 8];
    let block = lz4_flex::block::compress(&data);
    let files: Vec<PathBuf> = ["data", "frame", "stream", "block"]
        .iter()
        .map(|n| dir.join(format!("compress-{n}-{tag}")))
        .collect();
    for (f, bytes) in files.iter().zip([&data[..], &frame[..], stream, &block[..]]) {
        std::fs::write(f, bytes).unwrap();
    }
    let crc = format!("{:x}", crc32fast::hash(&data));
    let adler = format!("{:x}", adler2::adler32_slice(&data));
    let xxh = format!("{:x}", xxhash_rust::xxh32::xxh32(&data, 0).swap_bytes());
    let mut args: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();
    args.extend([crc.as_str(), adler.as_str(), xxh.as_str()]);
    let source = capi_dir().join("tests/c/compress.c");
    for level in [25, 26, 27] {
        let prog = compile_with(
            &format!("compress{level}l"),
            &source,
            "any",
            &[&format!("-DDOCA_EMU_API_LEVEL={level}")],
        );
        run(&prog, &args, None);
    }
    for f in files {
        let _ = std::fs::remove_file(f);
    }
}
/// Erasure coding from C in the erasure_coding_recover sample's flow (`ec_recover.c`):
/// encode through buffer lists, lose two data blocks, recover them byte for byte (Cauchy and
/// Vandermonde); update against a fresh encode, a raw matrix's Galois multiplication; the
/// matrix rules and two task failures, each fatal to the context.
#[test]
fn a_c_program_encodes_loses_and_recovers_blocks() {
    run(&build("ec_recover"), &[], None);
}

/// The C echo server and the C client, each in its own process.
#[test]
fn a_c_client_and_a_c_server_talk_across_two_processes() {
    let name = format!("capi-c-c-{}", std::process::id());
    let mut srv = start_c_server(&name);
    let client = run_c_client(&name, 200);
    expect_output(&client, "ok 200", "the C client");
    // The line the book quotes, as the Rust API logs it.
    let log = String::from_utf8_lossy(&client.stderr);
    assert!(
        log.contains("Msg size larger than maximal msg size which is 4080. (asked: 5000 bytes)"),
        "{log}"
    );
    let served = srv.wait_with_output_or_kill();
    assert!(served.contains("served 200"), "the C server said: {served}");
}

/// A C server stopped by Ctrl-C (SIGINT) or SIGTERM removes what it made in the fabric
/// directory (its status page, its socket and lock file) and still ends by that signal.
#[test]
fn a_c_server_stopped_by_sigint_or_sigterm_leaves_an_empty_fabric_directory() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::ExitStatusExt;
    for sig in [rustix::process::Signal::INT, rustix::process::Signal::TERM] {
        if doca_tests::signal_ignored(sig, "a C server's stop") {
            continue;
        }
        let fabric =
            std::env::temp_dir().join(format!("doca-emu-c-signal-{}-{}", sig.as_raw(), std::process::id()));
        let _ = std::fs::remove_dir_all(&fabric);
        std::fs::create_dir(&fabric).expect("a fabric directory of its own");
        std::fs::set_permissions(&fabric, std::fs::Permissions::from_mode(0o700)).expect("chmod 0700");
        let mut srv = Command::new(build("cc_server"))
            .arg(format!("capi-signal-{}", std::process::id()))
            .env_remove("DOCA_EMU_SIDE")
            .env("DOCA_EMU_FABRIC_DIR", &fabric)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("start the C server");
        let mut out = std::io::BufReader::new(srv.stdout.take().expect("piped"));
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line).expect("the server's first line");
        assert_eq!(line.trim(), "running");
        let names = || -> Vec<String> {
            std::fs::read_dir(&fabric)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect()
        };
        assert_eq!(names().len(), 3, "a page, a socket and its lock: {:?}", names());
        rustix::process::kill_process(rustix::process::Pid::from_child(&srv), sig).expect("signal");
        let status = srv.wait().expect("reap the server");
        assert_eq!(status.signal(), Some(sig.as_raw()), "ended by {sig:?}");
        assert!(names().is_empty(), "after {sig:?}: {:?}", names());
        let _ = std::fs::remove_dir_all(&fabric);
    }
}

/// A C program that looks for a device it cannot have is told why, once, as a Rust program
/// is: the DPU device from a program built for the host side (build it for the DPU), or
/// from a process that `DOCA_EMU_SIDE` puts on the host side; an address no device of the
/// machine has (the devices it has).
#[test]
fn a_c_program_looking_for_a_device_it_cannot_have_is_told_why_once() {
    let source = capi_dir().join("tests/c/pci_hint.c");
    let host = compile_for("pci-hint-host", &source, "host");
    let any = compile_for("pci-hint-any", &source, "any");
    let run = |prog: &Path, pci: &str, side: Option<&str>| {
        let mut cmd = Command::new(prog);
        cmd.arg(pci).env_remove("DOCA_EMU_SDK_STDERR");
        match side {
            Some(s) => cmd.env("DOCA_EMU_SIDE", s),
            None => cmd.env_remove("DOCA_EMU_SIDE"),
        };
        let out = cmd.output().expect("run the C program");
        assert!(out.status.success(), "{out:?}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let once = |err: &str, want: &str| {
        assert_eq!(err.matches(want).count(), 1, "once, {want:?}:\n{err}");
    };
    let (out, err) = run(&host, "03:00.0", None);
    assert!(out.starts_with("not found (DOCA_ERROR_NOT_FOUND)"), "{out}");
    once(&err, "PCI address 03:00.0 is the DPU device 03:00.0, not one of this process's: this program was built for the host side");
    assert!(err.contains("build it for the dpu side, with the dpu pkg-config folder (PKG_CONFIG_PATH=<prefix>/lib/<multiarch>/pkgconfig/dpu)"), "{err}");
    let (out, err) = run(&any, "03:00.0", Some("host"));
    assert!(out.starts_with("not found"), "{out}");
    once(&err, "DOCA_EMU_SIDE=host puts this process on the host side: set DOCA_EMU_SIDE=dpu or unset it");
    let (out, err) = run(&host, "07:00.0", None);
    assert!(out.starts_with("not found"), "{out}");
    once(&err, "no device of this machine has PCI address 07:00.0; it has ");
    assert!(err.contains("03:00.0 (Dpu)") && err.contains("b1:00.0 (Host)"), "{err}");
    // A device it can have: found, and no hint at all.
    let (out, err) = run(&host, "b1:00.1", None);
    assert_eq!(out.trim(), "found");
    assert!(err.is_empty(), "{err}");
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

/// The fast path in the shape of NVIDIA's 2.9+ `secure_channel` (`fast_threads.c`): each
/// side's producer and consumer made on the main thread's connection by two threads with
/// engines of their own; the consumer re-posts every task, then frees its buffers and its
/// posted tasks and stops. Both directions carry every message, each consumer's stop ends
/// (it stayed Stopping: the tasks were not freed, and they came back through the error
/// callback after the application freed them), and both sides exit 0. A private fabric
/// directory. The programs bound their own waits (a stop: 10 s, the whole: 60 s).
#[test]
fn a_c_pair_shaped_like_secure_channel_runs_its_fast_path_from_threads_and_stops() {
    let prog = build("fast_threads");
    let fabric = std::env::temp_dir().join(format!("doca-emu-fast-threads-{}", std::process::id()));
    std::fs::create_dir(&fabric).expect("a fabric directory of its own");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fabric, std::fs::Permissions::from_mode(0o700)).expect("chmod 0700");
    }
    let start = |role: &str| {
        Command::new(&prog)
            .args([role, "sc-shaped", "300"])
            .env("DOCA_EMU_FABRIC_DIR", &fabric)
            .env_remove("DOCA_EMU_SIDE")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start a fast_threads process")
    };
    let mut server = start("server");
    let mut client = start("client");
    let c = client.wait_with_output_or_kill();
    let s = server.wait_with_output_or_kill();
    let errors = |p: &mut std::process::Child| {
        let mut e = String::new();
        if let Some(mut s) = p.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut s, &mut e);
        }
        e
    };
    let (ce, se) = (errors(&mut client), errors(&mut server));
    let _ = std::fs::remove_dir_all(&fabric);
    assert!(c.contains("ok 300 300"), "the client said:\n{c}{ce}");
    assert!(s.contains("ok 300 300"), "the server said:\n{s}{se}");
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
    assert!(out.contains("wf=0"), "{out}");
    // A short name of two letters is that flag, not `-w` with the value `f`.
    let wf = run(&["-p", "03:00.0", "-wf"]);
    assert!(wf.contains("start DOCA_SUCCESS") && wf.contains("wf=1"), "{wf}");
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
    let whole = format!("long line {} end", "x".repeat(4000));
    assert!(out.lines().any(|l| l.ends_with(&whole)), "a 4000-byte message is written whole");
    let out = run(&["--pci-addr", "b1:00.0"]);
    assert!(out.contains("start DOCA_SUCCESS pci=b1:00.0 n=0 b=0"), "{out}");
    assert!(!out.contains("line at debug") && out.contains("line at info"), "INFO by default:\n{out}");
    assert!(
        run(&["-p03:00.0", "-n=4"]).contains("start DOCA_SUCCESS pci=03:00.0 n=4 b=0"),
        "attached values"
    );
    assert!(
        run(&["-p", "x", "-ns", "5"]).contains("start DOCA_SUCCESS pci=x n=5 b=0"),
        "a short name of two letters (erasure_coding_recover's -ns) is not -n with a value"
    );
    assert!(
        run(&["-p", "x", "--flag=yes"]).contains("start DOCA_ERROR_INVALID_VALUE"),
        "a switch takes no value"
    );
    assert!(run(&["-n", "3"]).contains("start DOCA_ERROR_INVALID_VALUE"), "the mandatory -p is missing");
    assert!(run(&["-p", "x", "--bogus"]).contains("start DOCA_ERROR_NOT_SUPPORTED"), "an unknown flag");
    assert!(run(&["-p", "x", "-n", "seven"]).contains("start DOCA_ERROR_INVALID_VALUE"), "not a number");
    assert!(run(&["-p", "x", "-l", "55"]).contains("start DOCA_ERROR_INVALID_VALUE"), "not a level");

    // The flags of a JSON configuration file (`-j`/`--json`), keyed by long names, with the
    // comments DOCA's configuration files carry; a flag given after the file comes after it.
    let dir = std::env::temp_dir().join(format!("argp-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let good = file(
        "good.json",
        "/* the program's flags */\n{\n  \"doca_general_flags\": { \"log-level\": 60 }, // debug\n  \"doca_program_flags\": {\n    \"pci-addr\": \"03:00.0\", \"count\": 7, \"flag\": true, \"with-frame\": false\n  }\n}\n",
    );
    let out = run(&["-j", &good]);
    assert!(out.contains("start DOCA_SUCCESS pci=03:00.0 n=7 b=1") && out.contains("wf=0"), "{out}");
    assert!(out.contains("line at debug"), "the file's log level:\n{out}");
    assert!(run(&["--json", &good, "-n", "9"]).contains("n=9"), "a flag after the file wins");
    assert!(
        run(&["--json=".to_string() + &good].iter().map(String::as_str).collect::<Vec<_>>())
            .contains("start DOCA_SUCCESS pci=03:00.0"),
        "an attached path"
    );
    let bad_type = file("type.json", r#"{"doca_program_flags": {"pci-addr": "x", "count": true}}"#);
    assert!(
        run(&["-j", &bad_type]).contains("start DOCA_ERROR_INVALID_VALUE"),
        "a switch's value for a number"
    );
    let unknown = file("unknown.json", r#"{"doca_program_flags": {"pci-addr": "x", "bogus": 1}}"#);
    assert!(run(&["-j", &unknown]).contains("start DOCA_ERROR_NOT_SUPPORTED"), "an unknown flag");
    let broken = file("broken.json", "{\"doca_program_flags\": {");
    assert!(run(&["-j", &broken]).contains("start DOCA_ERROR_INVALID_VALUE"), "not JSON");
    assert!(
        run(&["-j", &dir.join("absent.json").to_string_lossy()]).contains("start DOCA_ERROR_INVALID_VALUE"),
        "no such file"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Short names of several letters, as NVIDIA's samples register them (`ns`, `nd`, `gid`, the
/// switch `cm`), given after one dash; beside them a one-letter `n` keeps its attached value.
#[test]
fn a_c_program_parses_short_names_of_several_letters() {
    let prog = build("argp_short_names");
    let run = |args: &[&str]| {
        let out = Command::new(&prog).args(args).output().expect("run argp_short_names");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{args:?}:\n{stdout}{}", String::from_utf8_lossy(&out.stderr));
        stdout
    };
    let out = run(&["-ns", "2", "-nd", "3", "-gid", "7", "-cm", "-n", "4"]);
    assert!(out.contains("start DOCA_SUCCESS n=4 ns=2 nd=3 gid=7 cm=1"), "{out}");
    let out = run(&["-ns=5", "-n6", "--num-dst-buf", "8", "--gid-index=x"]);
    assert!(out.contains("start DOCA_SUCCESS n=6 ns=5 nd=8 gid=x cm=0"), "{out}");
    assert!(run(&["-n=9"]).contains("start DOCA_SUCCESS n=9 ns=0"), "a one-letter name's attached value");
    assert!(run(&["-nx"]).contains("start DOCA_ERROR_INVALID_VALUE"), "-n with the value x: not a number");
    assert!(
        run(&["-gidx"]).contains("start DOCA_ERROR_NOT_SUPPORTED"),
        "no attached value after a longer name"
    );
    assert!(run(&["-cm=1"]).contains("start DOCA_ERROR_INVALID_VALUE"), "a switch takes no value");
    assert!(run(&["-ns"]).contains("start DOCA_ERROR_INVALID_VALUE"), "-ns needs its value");
    assert!(run(&["-", "1"]).contains("start DOCA_ERROR_NOT_SUPPORTED"), "a lone dash");
}

/// The DOCA 2.5 API from C: a client written against the 2.5 headers (API level 25: log2 task
/// counts, `size_t` lengths and sizes, a `size_t` receive callback) talks to the C server
/// written against the 2.6 headers: the two levels meet on the wire.
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

/// A server and a client written against the DOCA 2.5 headers (API level 25), in the shape of
/// NVIDIA's 2.5 cc_ctrl_path samples: every `size_t` size getter writes all 8 bytes (each is
/// handed a value with every bit set: 2.6's 4-byte write would leave the upper half), a
/// `size_t` size above the 32-bit range is `INVALID_VALUE` rather than cut to its low half,
/// the receive callback gets its `size_t` length and the connection callbacks their `bool`;
/// 100 messages echo.
#[test]
fn a_2_5_server_and_client_get_full_width_sizes_and_2_5_callbacks() {
    let name = format!("capi-25-25-{}", std::process::id());
    let mut srv = Command::new(build("server25"))
        .arg(&name)
        .env_remove("DOCA_EMU_SIDE")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("start the 2.5 server");
    let out = Command::new(build("client25"))
        .args([&name, "100"])
        .env_remove("DOCA_EMU_SIDE")
        .output()
        .expect("run the 2.5 client");
    expect_output(&out, "ok 100", "the 2.5 client");
    let served = srv.wait_with_output_or_kill();
    assert!(served.contains("served 100"), "the 2.5 server said: {served}");
}

/// `capi/tests/c/fast_path.c` rewritten against the DOCA 2.5 headers, as NVIDIA's 2.5
/// cc_data_path_high_speed samples are written: the 2.5 task names
/// (`doca_cc_send_task`, `doca_cc_consumer_post_recv_task_*`, `doca_cc_producer_send_task_*`),
/// task counts as base-2 logarithms, the `size_t` receive and `bool` connection callbacks,
/// `int` consumer ids, `doca_cc_cap_is_consumer_supported` and the `size_t` log2 task cap.
fn fast_path_25() -> String {
    let source = std::fs::read_to_string(capi_dir().join("tests/c/fast_path.c")).expect("fast_path.c");
    let edits: &[(&str, &str)] = &[
        ("doca_cc_task_send", "doca_cc_send_task"),
        ("doca_cc_consumer_task_post_recv", "doca_cc_consumer_post_recv_task"),
        ("doca_cc_producer_task_send", "doca_cc_producer_send_task"),
        ("_task_send_set_conf(server, send_task_cb, send_task_cb, 4)", "_send_task_set_conf(server, send_task_cb, send_task_cb, 2)"),
        ("_task_send_set_conf(client, send_task_cb, send_task_cb, 4)", "_send_task_set_conf(client, send_task_cb, send_task_cb, 2)"),
        ("consumer_done, consumer_failed, SLOTS)", "consumer_done, consumer_failed, 3)"),
        ("producer_done, producer_failed, SLOTS)", "producer_done, producer_failed, 3)"),
        ("uint8_t *buf, uint32_t len,", "uint8_t *buf, size_t len,"),
        ("struct doca_cc_connection *c, uint8_t ok)", "struct doca_cc_connection *c, bool ok)"),
        ("\t\t\t  uint8_t ok)", "\t\t\t  bool ok)"),
        (" ||\n\t    doca_cc_consumer_post_recv_task_get_producer_id(task) == 0)", ")"),
        ("doca_cc_consumer_cap_is_supported(", "doca_cc_cap_is_consumer_supported("),
        (
            "doca_cc_producer_cap_get_max_num_tasks(doca_dev_as_devinfo(dev), &max) != DOCA_SUCCESS || max < SLOTS",
            "doca_cc_producer_cap_get_max_log_num_tasks(doca_dev_as_devinfo(dev), &max_log) != DOCA_SUCCESS || max_log < 3",
        ),
        ("\tuint32_t id, max;\n", "\tuint32_t id, max;\n\tsize_t max_log = SIZE_MAX;\n"),
        (
            "doca_cc_producer_send_task_get_consumer_id(task) != remote_id",
            "(uint32_t)doca_cc_producer_send_task_get_consumer_id(task) != remote_id",
        ),
        ("#include <stdio.h>\n", "#include <stdbool.h>\n#include <stdint.h>\n#include <stdio.h>\n"),
    ];
    let mut text = source;
    for (from, to) in edits {
        assert!(text.contains(from), "fast_path.c no longer has {from:?}: update fast_path_25");
        text = text.replace(from, to);
    }
    for gone in ["_task_send", "_task_post_recv", "uint8_t ok", "uint32_t len", "get_max_num_tasks"] {
        assert!(!text.contains(gone), "{gone:?} is a 2.6 shape");
    }
    text
}

/// The fast path written against the DOCA 2.5 headers ([`fast_path_25`], built at API level
/// 25), both ends: 100 messages through 2.5-named consumers and producers and back; and its
/// client against the 2.6 program's server, 50 more.
#[test]
fn a_2_5_fast_path_pair_moves_buffers_both_ways() {
    let path = lib_dir().join(format!("fast25-{}.c", std::process::id()));
    std::fs::write(&path, fast_path_25()).expect("write the 2.5 fast path");
    let fast25 = compile_with("fast25", &path, "any", &["-DDOCA_EMU_API_LEVEL=25"]);
    fast_pair(&fast25, &fast25, &format!("capi-fast25-{}", std::process::id()), 100);
    fast_pair(&build("fast_path"), &fast25, &format!("capi-fast25-26-{}", std::process::id()), 50);
}

/// A callback of the wrong shape is a compile error under the strict flags, at every API
/// level, for each registration whose callback 2.6 reshaped (no macro casts it away): a 2.6
/// receive callback (`uint32_t` length) or connection callback (`uint8_t`) does not build at
/// level 25, a 2.5 one (`size_t`, `bool`) does not build at 26 or 27; the right shape builds.
#[test]
fn a_callback_of_the_wrong_shape_does_not_compile_at_any_level() {
    let dir = lib_dir().join(format!("c-shapes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder for the checks");
    let source = |len: &str, ok: &str| {
        format!(
            "#include <stdbool.h>\n#include <doca_cc.h>\n\
             static void on_msg(struct doca_cc_event_msg_recv *e, uint8_t *b, {len} n, struct doca_cc_connection *c)\n\
             {{\n\t(void)e;\n\t(void)b;\n\t(void)n;\n\t(void)c;\n}}\n\
             static void on_conn(struct doca_cc_event_connection_status_changed *e, struct doca_cc_connection *c, {ok} s)\n\
             {{\n\t(void)e;\n\t(void)c;\n\t(void)s;\n}}\n\
             doca_error_t reg(struct doca_cc_server *s, struct doca_cc_client *c, int which)\n{{\n\
             \tif (which == 0)\n\t\treturn doca_cc_server_event_msg_recv_register(s, on_msg);\n\
             \tif (which == 1)\n\t\treturn doca_cc_client_event_msg_recv_register(c, on_msg);\n\
             \treturn doca_cc_server_event_connection_register(s, on_conn, on_conn);\n}}\n"
        )
    };
    let compiles = |name: &str, text: &str, level: u32, std: &str| {
        let path = dir.join(format!("{name}-{level}.c"));
        std::fs::write(&path, text).expect("write a check");
        let out = Command::new(cc())
            .args([std, "-fsyntax-only"])
            .args(c_flags("any"))
            .arg(format!("-DDOCA_EMU_API_LEVEL={level}"))
            .arg(&path)
            .output()
            .expect("run the C compiler");
        (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let shapes25 = source("size_t", "bool");
    let shapes26 = source("uint32_t", "uint8_t");
    // one wrong callback at a time: each registration is checked on its own
    let wrong_msg25 = source("uint32_t", "bool");
    let wrong_conn25 = source("size_t", "uint8_t");
    let wrong_msg26 = source("size_t", "uint8_t");
    let wrong_conn26 = source("uint32_t", "bool");
    for std in standards() {
        let (ok, err) = compiles("right25", &shapes25, 25, std);
        assert!(ok, "the 2.5 shapes at level 25 ({std}):\n{err}");
        for level in [26, 27] {
            let (ok, err) = compiles("right26", &shapes26, level, std);
            assert!(ok, "the 2.6 shapes at level {level} ({std}):\n{err}");
        }
        for (name, text, levels, what) in [
            ("msg25", &wrong_msg25, &[25][..], "doca_cc_server_event_msg_recv_register"),
            ("conn25", &wrong_conn25, &[25][..], "doca_cc_server_event_connection_register"),
            ("msg26", &wrong_msg26, &[26, 27][..], "doca_cc_server_event_msg_recv_register"),
            ("conn26", &wrong_conn26, &[26, 27][..], "doca_cc_server_event_connection_register"),
        ] {
            for &level in levels {
                let (ok, err) = compiles(name, text, level, std);
                assert!(
                    !ok && err.contains("incompatible-pointer-types") && err.contains(what),
                    "{name} at level {level} ({std}) must not build:\n{err}"
                );
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
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

/// Each header builds on its own, at both standards with the strict flags, for each side and
/// (built for no side) at each API level (25, 26, 27);
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
        // each side at the source tree's API level, and the "any" side at every level
        let builds = [("host", ""), ("dpu", ""), ("any", "")]
            .into_iter()
            .chain(["25", "26", "27"].map(|l| ("any", l)));
        for (side, level) in builds {
            for std in standards() {
                let out = Command::new(cc())
                    .args([std, "-fsyntax-only"])
                    .args(c_flags(side))
                    .args((!level.is_empty()).then(|| format!("-DDOCA_EMU_API_LEVEL={level}")))
                    .arg(&path)
                    .output()
                    .expect("run the C compiler");
                assert!(
                    out.status.success(),
                    "{name} ({side}, level {level:?}, {std}):\n{text}\n{}",
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
/// `lib/<multiarch>`, `doca.pc` and (API level 2.7) one `.pc` per library,
/// `applications/VERSION` (the same version as the `.pc` files), a build configuration per side. A C program then builds with
/// `pkg-config --cflags --libs doca` alone, for the host by default, for the DPU from the
/// `dpu/` folder or with `--define-variable`, and runs as what it was built for.
#[test]
fn the_install_gives_a_prefix_that_pkg_config_finds() {
    let prefix = install_level("pkg-config", Some("2.7"));
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

/// Installs the library, headers and pkg-config files into a fresh temporary prefix, at the
/// default API level (the claimed DOCA version's).
fn install(what: &str) -> PathBuf {
    install_level(what, None)
}

/// [`install`] at the API level `level` (`--api-level`; None: the default).
fn install_level(what: &str, level: Option<&str>) -> PathBuf {
    let prefix = std::env::temp_dir().join(format!("doca-emu-prefix-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prefix);
    let status = Command::new("bash")
        .arg(capi_dir().join("install.sh"))
        .arg("--lib")
        .arg(lib_dir())
        .args(level.map(|l| ["--api-level", l]).iter().flatten())
        .arg(&prefix)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run capi/install.sh");
    assert!(status.success(), "capi/install.sh failed");
    prefix
}

/// The documented meson flow: `PKG_CONFIG_PATH=<prefix>/lib/pkgconfig meson setup` of a
/// sample-shaped directory (`dependency('doca')`, `'doca-argp'`, `'doca-comch'`: an API
/// level 2.7 install) builds its C
/// programs unchanged, and they run. Needs meson and ninja: `.ci/run` installs them and sets
/// `DOCA_EMU_REQUIRE_MESON`, which makes their absence a failure; elsewhere the test says it
/// did not run.
#[test]
fn a_sample_shaped_meson_project_builds_against_the_install() {
    if !meson_here("the meson build was") {
        return;
    }
    let prefix = install_level("meson", Some("2.7"));
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

/// The book's "Your first program", C half: `book/first-program/c` (a server and a client in
/// DOCA's style and their `meson.build`, as the page includes them) builds through meson
/// against a temporary install — the server with the DPU's pkg-config files, the client with
/// the host's, at gnu17 with gcc 14's errors — and the pair talks as two processes.
#[test]
fn the_c_first_program_builds_with_meson_and_its_pair_talks() {
    if !meson_here("the first C program was") {
        return;
    }
    // doca_caps, which the install carries as DOCA's SDK carries its tools (cargo test of
    // this crate alone does not build it).
    let caps = Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", "doca-samples", "--bin", "doca_caps"])
        .env(
            "CARGO_TARGET_DIR",
            lib_dir().ancestors().find(|d| d.join("debug").is_dir()).expect("the target folder"),
        )
        .status()
        .expect("run cargo build");
    assert!(caps.success(), "doca_caps builds");
    let prefix = install("first");
    let map = Command::new(prefix.join("tools/doca_caps")).output().expect("the installed doca_caps runs");
    let map = String::from_utf8_lossy(&map.stdout);
    assert!(
        map.contains("serves clients on b1:00.0"),
        "the installed doca_caps shows who serves whom:\n{map}"
    );
    let pc = pc_dir(&prefix);
    let source = capi_dir().parent().expect("the workspace").join("book/first-program/c");
    let cflags = format!("-Wall -Werror {}", strict_flags().join(" "));
    let build = |dir: &str, pc: &Path| meson_build_with(&source, &prefix.join(dir), pc, &cflags);
    let dpu = build("build-dpu", &pc.join("dpu"));
    let host = build("build-host", &pc.join("host"));
    // Each build directory holds the program of its side only.
    assert!(dpu.join("first_comch_server").exists() && !dpu.join("first_comch_client").exists());
    assert!(host.join("first_comch_client").exists() && !host.join("first_comch_server").exists());
    let fabric = prefix.join("fabric");
    std::fs::create_dir(&fabric).expect("a fabric directory of its own");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fabric, std::fs::Permissions::from_mode(0o700)).expect("chmod 0700");
    }
    let start = |prog: PathBuf| {
        Command::new(prog)
            .env("DOCA_EMU_FABRIC_DIR", &fabric)
            .env_remove("LD_LIBRARY_PATH")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start a first-program process")
    };
    // The client first: it waits for the server.
    let mut client = start(host.join("first_comch_client"));
    let mut server = start(dpu.join("first_comch_server"));
    let s = server.wait_with_output_or_kill();
    let c = client.wait_with_output_or_kill();
    let ok = |p: &mut std::process::Child| p.try_wait().ok().flatten().is_some_and(|st| st.success());
    assert!(ok(&mut server) && ok(&mut client), "both exit 0; server:\n{s}\nclient:\n{c}");
    for want in [
        "server: received 'hello from the host'",
        "server: the client left, stopping",
        "server: RUNNING -> IDLE",
    ] {
        assert!(s.contains(want), "the server's output lacks {want:?}:\n{s}");
    }
    for want in [
        "client: IDLE -> STARTING",
        "client: the server answered 'HELLO FROM THE HOST'",
        "client: RUNNING -> IDLE",
    ] {
        assert!(c.contains(want), "the client's output lacks {want:?}:\n{c}");
    }
    let _ = std::fs::remove_dir_all(&prefix);
}

/// Whether meson and ninja are here. Where `DOCA_EMU_REQUIRE_MESON` is set (`.ci/run` sets
/// it) their absence fails the test; elsewhere the test says what it did `not_checked` and
/// returns.
fn meson_here(not_checked: &str) -> bool {
    let have = |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if have("meson") && have("ninja") {
        return true;
    }
    assert!(
        std::env::var_os("DOCA_EMU_REQUIRE_MESON").is_none(),
        "meson and ninja are required here (DOCA_EMU_REQUIRE_MESON is set)"
    );
    eprintln!("meson or ninja not installed: {not_checked} NOT checked");
    false
}

/// `meson setup build source` with `PKG_CONFIG_PATH=pc`, then `meson compile`; `build`.
fn meson_build(source: &Path, build: &Path, pc: &Path) -> PathBuf {
    meson_build_with(source, build, pc, "")
}

/// [`meson_build`] with `CFLAGS=cflags` at setup.
fn meson_build_with(source: &Path, build: &Path, pc: &Path, cflags: &str) -> PathBuf {
    let setup = Command::new("meson")
        .arg("setup")
        .arg(build)
        .arg(source)
        .env("PKG_CONFIG_PATH", pc)
        .env("CFLAGS", cflags)
        .output()
        .expect("run meson setup");
    assert!(setup.status.success(), "meson setup failed:\n{}", String::from_utf8_lossy(&setup.stdout));
    let compile =
        Command::new("meson").arg("compile").arg("-C").arg(build).output().expect("run meson compile");
    assert!(compile.status.success(), "meson compile failed:\n{}", String::from_utf8_lossy(&compile.stdout));
    build.to_path_buf()
}

/// One install per API level: `capi/install.sh --api-level 2.5|2.6|2.7` into a temporary
/// prefix lays out that level (`doca.pc` alone at 2.5 and 2.6, the per-library files at 2.7;
/// `applications/VERSION` and the `.pc` version the level's), fixes the level in its headers
/// (a program asking for another does not build), and the level's meson project of C programs
/// shaped like DOCA's sample families (capi/tests/meson/level25, level26, and the 2.7 one)
/// configures against it with `dependency('doca')`, checks the level, builds at gnu17 and at
/// gnu23 with the strict flags, and its programs run in pairs from the install: the 2.5 cc
/// server and client (full-width sizes, 2.5 callbacks), the 2.6 ones and the fast path, the
/// legacy comm channel, DMA on a progress engine.
#[test]
fn each_api_level_installs_and_its_sample_shaped_programs_build_and_run_through_meson() {
    if !meson_here("the API levels' meson builds were") {
        return;
    }
    let pid = std::process::id();
    // Without --api-level: the claimed version's level (core/DOCA_VERSION), the source tree's
    // default too.
    let claimed =
        std::fs::read_to_string(capi_dir().join("../core/DOCA_VERSION")).expect("core/DOCA_VERSION");
    let claimed = claimed.trim();
    let mut parts = claimed.split('.').map(|p| p.parse::<u32>().expect("a number"));
    let (major, minor) = (parts.next().expect("major"), parts.next().expect("minor"));
    let claimed_level = if (major, minor) <= (2, 6) { major * 10 + minor } else { 27 };
    let default = install_level("leveldefault", None);
    let fixed =
        std::fs::read_to_string(default.join("include/doca_emu_api_level.h")).expect("the level header");
    assert!(fixed.contains(&format!("#define DOCA_EMU_API_LEVEL {claimed_level}\n")), "{fixed}");
    let source =
        std::fs::read_to_string(capi_dir().join("include/doca_emu_api_level.h")).expect("the level header");
    assert!(
        source.contains(&format!("#define DOCA_EMU_API_LEVEL {claimed_level}\n")),
        "the source tree's default"
    );
    let version = std::fs::read_to_string(default.join("applications/VERSION")).expect("VERSION");
    assert_eq!(version.trim(), claimed, "the default install's version is the claimed one");
    let _ = std::fs::remove_dir_all(&default);
    for (level, dir, version, per_library) in [
        ("2.5", "tests/meson/level25", "2.5.0", false),
        ("2.6", "tests/meson/level26", "2.6.0", false),
        ("2.7", "tests/meson", "2.7.0", true),
    ] {
        let prefix = install_level(&format!("level{level}"), Some(level));
        let pc = pc_dir(&prefix);
        let installed = std::fs::read_to_string(prefix.join("applications/VERSION")).expect("VERSION");
        assert_eq!(installed.trim(), version, "applications/VERSION at {level}");
        assert_eq!(pkg_config(&pc, &["--modversion", "doca"]), version, "doca.pc's version at {level}");
        for f in ["doca-common.pc", "doca-argp.pc", "doca-comch.pc", "dpu/doca-common.pc"] {
            assert_eq!(pc.join(f).exists(), per_library, "{f} at {level}");
        }
        // The level is fixed: asking the installed headers for another is an error.
        let other = if level == "2.5" { "26" } else { "25" };
        let out = Command::new(cc())
            .args(["-std=gnu17", "-fsyntax-only", &format!("-DDOCA_EMU_API_LEVEL={other}")])
            .args(pkg_config(&pc, &["--cflags", "doca"]).split_whitespace())
            .arg(capi_dir().join("tests/c/devices.c"))
            .output()
            .expect("run the C compiler");
        assert!(
            !out.status.success()
                && String::from_utf8_lossy(&out.stderr).contains(&format!("API level {level}")),
            "an install of level {level} asked for level {other}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Built for no side (the any/ folder): each program plays the end it opens.
        for std in standards() {
            let mut cflags = vec![std.to_string(), "-Wall".into(), "-Wextra".into(), "-Werror".into()];
            cflags.extend(strict_flags().iter().cloned());
            let build = meson_build_with(
                &capi_dir().join(dir),
                &prefix.join(format!("build{}", std.trim_start_matches("-std="))),
                &pc.join("any"),
                &cflags.join(" "),
            );
            match level {
                "2.5" => {
                    let name = format!("meson-25-{pid}");
                    let mut srv = spawn_installed(&build.join("server25"), &[&name]);
                    let out = run_installed(&build.join("client25"), &[&name, "20"]);
                    expect_output(&out, "ok 20", "the installed 2.5 client");
                    let served = srv.wait_with_output_or_kill();
                    assert!(served.contains("served 20"), "the installed 2.5 server said: {served}");
                }
                "2.6" => {
                    let name = format!("meson-26-{pid}");
                    let mut srv = spawn_installed(&build.join("cc_server"), &[&name]);
                    let out = run_installed(&build.join("cc_client"), &[&name, "20"]);
                    expect_output(&out, "ok 20", "the installed 2.6 client");
                    let served = srv.wait_with_output_or_kill();
                    assert!(served.contains("served 20"), "the installed 2.6 server said: {served}");
                    let name = format!("meson-26-fast-{pid}");
                    let mut srv = spawn_installed(&build.join("fast_path"), &["server", &name, "20"]);
                    let out = run_installed(&build.join("fast_path"), &["client", &name, "20"]);
                    expect_output(&out, "ok 20", "the installed fast-path client");
                    let served = srv.wait_with_output_or_kill();
                    assert!(served.contains("ok 20"), "the installed fast-path server said: {served}");
                }
                _ => {
                    let out =
                        run_installed(&build.join("doca_log_argp"), &["--pci-addr", "03:00.0", "-n", "2"]);
                    expect_output(&out, "start DOCA_SUCCESS pci=03:00.0 n=2", "the installed argp program");
                }
            }
            if level != "2.7" {
                let name = format!("meson-legacy-{}-{pid}", level.replace('.', ""));
                let mut srv = spawn_installed(&build.join("legacy"), &["service", &name, "5"]);
                let mut said = std::io::BufReader::new(srv.stdout.take().expect("piped"));
                let mut line = String::new();
                std::io::BufRead::read_line(&mut said, &mut line).expect("the service's first line");
                assert_eq!(line.trim(), "listening", "the installed legacy service listens");
                let out = run_installed(&build.join("legacy"), &["client", &name, "5"]);
                expect_output(&out, "ok 5", "the installed legacy client");
                let served = c_service_output(srv, said);
                assert!(served.contains("ok 5"), "the installed legacy service said: {served}");
                let out = run_installed(&build.join("dma_polling"), &[]);
                expect_output(&out, "ok", "the installed DMA program");
            }
        }
        let _ = std::fs::remove_dir_all(&prefix);
    }
}

/// Starts an installed program (its run path names the install's library) with `args`, its
/// standard output piped.
fn spawn_installed(prog: &Path, args: &[&str]) -> std::process::Child {
    Command::new(prog)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("DOCA_EMU_SIDE")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", prog.display()))
}

/// Runs an installed program with `args`; its output.
fn run_installed(prog: &Path, args: &[&str]) -> std::process::Output {
    Command::new(prog)
        .args(args)
        .env_remove("LD_LIBRARY_PATH")
        .env_remove("DOCA_EMU_SIDE")
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", prog.display()))
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

/// A C program under a fault plan: `plan` in `DOCA_EMU_FAULTS`, fired faults recorded in
/// `record`.
fn with_plan(cmd: &mut Command, plan: Option<&str>, record: &Path) {
    cmd.env_remove("DOCA_EMU_SIDE").env_remove("DOCA_EMU_FAULTS_FILE").env("DOCA_EMU_FAULTS_RECORD", record);
    match plan {
        Some(p) => cmd.env("DOCA_EMU_FAULTS", p),
        None => cmd.env_remove("DOCA_EMU_FAULTS"),
    };
}

/// The C echo pair on `name` for `n` messages, each side under its plan: the server's exit
/// status and stdout, the client's output, the fired-fault records.
fn c_pair_under(
    name: &str,
    server_plan: Option<&str>,
    client_plan: Option<&str>,
    n: u32,
) -> (Option<i32>, String, std::process::Output, Vec<String>) {
    let record = lib_dir().join(format!("{name}.faults.jsonl"));
    let _ = std::fs::remove_file(&record);
    let mut cmd = Command::new(build("cc_server"));
    cmd.arg(name).stdout(std::process::Stdio::piped());
    with_plan(&mut cmd, server_plan, &record);
    let mut srv = cmd.spawn().expect("start the C server");
    let mut cmd = Command::new(build("cc_client"));
    cmd.args([name, &n.to_string()]);
    with_plan(&mut cmd, client_plan, &record);
    let client = cmd.output().expect("run the C client");
    let served = srv.wait_with_output_or_kill();
    let code = srv.try_wait().ok().flatten().and_then(|s| s.code());
    let records =
        std::fs::read_to_string(&record).map(|s| s.lines().map(String::from).collect()).unwrap_or_default();
    (code, served, client, records)
}

/// The link dropped by the C client at its 5th message (the send of message 2, after two
/// echoes): its send fails with CONNECTION_RESET; the server saw exactly the two messages
/// before the cut and the disconnection event, and exits cleanly.
#[test]
fn a_c_client_dropping_the_link_and_its_server_see_the_same_cut() {
    let name = format!("capi-fault-cdrop-{}", std::process::id());
    let (code, served, client, r) = c_pair_under(&name, None, Some("link.drop=nth(5)"), 5);
    let err = String::from_utf8_lossy(&client.stderr);
    assert_eq!(client.status.code(), Some(1), "{err}");
    assert!(err.contains("send failed: DOCA_ERROR_CONNECTION_RESET"), "{err}");
    assert!(err.contains("echoed=2 of 5"), "{err}");
    // Its log says its own plan cut the link, not that the server closed it.
    assert!(err.contains("fault plan cut the connection (link.drop)"), "{err}");
    assert!(!err.contains("the server closed the connection"), "{err}");
    assert_eq!(code, Some(0), "the server: {served}");
    assert!(served.contains("served 2"), "the server: {served}");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"point\":\"link.drop\"") && r[0].contains("\"hit\":5,"), "{r:?}");
    assert!(r[0].contains("cc_client connection #1 send"), "{r:?}");
}

/// The C server drops the link when message 1 arrives (its 3rd message: receive, echo,
/// receive): message 1 is never echoed, the server sees its disconnection, and the client
/// sees its context go Idle on its own (the connection ended) instead of waiting for ever.
#[test]
fn a_c_server_dropping_the_link_and_its_client_see_the_same_cut() {
    let name = format!("capi-fault-sdrop-{}", std::process::id());
    let (code, served, client, r) = c_pair_under(&name, Some("link.drop=nth(3)"), None, 5);
    let err = String::from_utf8_lossy(&client.stderr);
    assert_eq!(client.status.code(), Some(1), "{err}");
    assert!(err.contains("client: the connection ended"), "{err}");
    assert!(err.contains("echoed=1 of 5"), "{err}");
    // From the client's side the server closed it (the server's plan is not its own).
    assert!(err.contains("the server closed the connection"), "{err}");
    assert_eq!(code, Some(0), "the server: {served}");
    assert!(served.contains("served 1"), "the server: {served}");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("cc_server connection #1 recv") && r[0].contains("\"hit\":3,"), "{r:?}");
}

/// A send task of the C client completes with the code the plan chose (every 3rd send),
/// through the C error callback and doca_task_get_status.
#[test]
fn a_c_send_task_completes_with_the_chosen_code() {
    let name = format!("capi-fault-code-{}", std::process::id());
    let (code, served, client, r) =
        c_pair_under(&name, None, Some("task.cc.send=every(3):fail(NOT_PERMITTED)"), 5);
    let err = String::from_utf8_lossy(&client.stderr);
    assert_eq!(client.status.code(), Some(1), "{err}");
    assert!(err.contains("send failed: DOCA_ERROR_NOT_PERMITTED"), "{err}");
    assert!(err.contains("echoed=2 of 5"), "{err}");
    // The failed send sent nothing: two messages served, then the client's orderly stop.
    assert_eq!(code, Some(0), "the server: {served}");
    assert!(served.contains("served 2"), "the server: {served}");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"point\":\"task.cc.send\"") && r[0].contains("\"hit\":3,"), "{r:?}");
}

/// A rebooted C server (at its 4th message) vanishes with the reboot status; the C client
/// sees the connection end; a new server under the same name serves the next client.
#[test]
fn a_rebooted_c_server_comes_back() {
    let name = format!("capi-fault-reboot-{}", std::process::id());
    let (code, _, client, r) = c_pair_under(&name, Some("peer.reboot=nth(4)"), None, 5);
    let err = String::from_utf8_lossy(&client.stderr);
    assert_eq!(code, Some(doca_core::fault::REBOOT_EXIT_CODE));
    assert_eq!(client.status.code(), Some(1), "{err}");
    assert!(err.contains("client: the connection ended"), "{err}");
    assert!(err.contains("echoed=1 of 5") || err.contains("echoed=2 of 5"), "{err}");
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("\"point\":\"peer.reboot\""), "{r:?}");
    let mut srv = start_c_server(&name);
    expect_output(&run_c_client(&name, 3), "ok 3", "the C client after the reboot");
    assert!(srv.wait_with_output_or_kill().contains("served 3"));
}

/// A plan with a typo fails the C program's first DOCA call (here opening its device) with
/// INVALID_VALUE and an SDK log line naming the bad part.
#[test]
fn a_c_program_under_a_plan_with_a_typo_fails_its_first_call() {
    let name = format!("capi-fault-typo-{}", std::process::id());
    let mut cmd = Command::new(build("cc_client"));
    cmd.args([&name, "1"]);
    let record = lib_dir().join(format!("{name}.faults.jsonl"));
    with_plan(&mut cmd, Some("task.cc.send=every(3):fail(NOT_PERMITED)"), &record);
    let out = cmd.output().expect("run the C client");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("client setup failed"), "{err}");
    assert!(err.contains("bad part `task.cc.send=every(3):fail(NOT_PERMITED)`"), "{err}");
    assert!(err.contains("unknown DOCA error code `NOT_PERMITED`"), "{err}");
    assert!(!record.exists());
}

/// Deterministic from the seed: the same C pair under the same seeded fraction fails the
/// same send, run after run (the hit the record names, and what each side saw).
#[test]
fn a_seeded_fraction_fires_at_the_same_hit_every_run() {
    let plan = "seed=1234; task.cc.send=1*20%:fail(NOT_PERMITTED)";
    let runs: Vec<(String, String, String)> = (0..2)
        .map(|i| {
            let name = format!("capi-fault-seed{i}-{}", std::process::id());
            let (_, served, client, r) = c_pair_under(&name, None, Some(plan), 30);
            let err = String::from_utf8_lossy(&client.stderr).to_string();
            assert!(err.contains("send failed: DOCA_ERROR_NOT_PERMITTED"), "{err}");
            assert_eq!(r.len(), 1, "{r:?}");
            let hit = r[0].split("\"hit\":").nth(1).and_then(|s| s.split(',').next()).unwrap().to_string();
            let echoed = err.lines().find(|l| l.contains("echoed=")).unwrap_or_default().to_string();
            (hit, echoed, served.trim().to_string())
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
}

/// The C sync event program (`capi/tests/c/sync_event.c`) as two processes: the DPU (the
/// Comm Channel server) and the host (its client), `exporter` exporting, in the API shape
/// `api` (25: `export_to_dpu`, `wait_gt`; 29: `export_to_remote_pci`, `wait_eq`) and the
/// mode `mode` (sync, async, die). Both must print "ok".
fn sync_event_pair(exporter: &str, api: &str, mode: &str) {
    let name = format!("capi-se-{exporter}-{api}-{mode}-{}", std::process::id());
    let prog = build("sync_event");
    // A fabric directory of its own (the Comm Channel's and the memory service's sockets).
    let fabric = std::env::temp_dir().join(&name);
    let _ = std::fs::remove_dir_all(&fabric);
    std::fs::create_dir(&fabric).expect("a fabric directory of its own");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fabric, std::fs::Permissions::from_mode(0o700)).expect("chmod 0700");
    }
    let mut dpu = Command::new(&prog)
        .args([name.as_str(), "dpu", exporter, api, mode])
        .env_remove("DOCA_EMU_SIDE")
        .env("DOCA_EMU_FABRIC_DIR", &fabric)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the DPU side");
    let mut out = std::io::BufReader::new(dpu.stdout.take().expect("piped"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).expect("the DPU side's first line");
    if line.trim() != "running" {
        let _ = dpu.kill();
        let err = dpu.wait_with_output().map(|o| String::from_utf8_lossy(&o.stderr).into_owned());
        panic!("the DPU side did not start ({line:?}): {err:?}");
    }
    let host = Command::new(&prog)
        .args([name.as_str(), "host", exporter, api, mode])
        .env_remove("DOCA_EMU_SIDE")
        .env("DOCA_EMU_FABRIC_DIR", &fabric)
        .output()
        .expect("run the host side");
    let stderr = dpu.stderr.take();
    dpu.wait_with_output_or_kill();
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut out, &mut rest);
    let mut dpu_err = String::new();
    if let Some(mut e) = stderr {
        let _ = std::io::Read::read_to_string(&mut e, &mut dpu_err);
    }
    let host_out = String::from_utf8_lossy(&host.stdout);
    assert!(
        host.status.success() && host_out.trim() == "ok",
        "host ({exporter} exports, {api}, {mode}): {host_out}{}",
        String::from_utf8_lossy(&host.stderr)
    );
    let _ = std::fs::remove_dir_all(&fabric);
    assert_eq!(rest.trim(), "ok", "DPU ({exporter} exports, {api}, {mode}): {dpu_err}");
}

/// DOCA 2.5/2.6's sync_event_host / sync_event_dpu: the host exports (`export_to_dpu`), the
/// DPU imports the blob it received over Comm Channel; each side waits (`wait_gt`, the
/// exporter with `_yield`) for the other's update — synchronously, then with tasks on a
/// progress engine asleep on its notification handle between passes.
#[test]
fn c_sync_event_host_exports_to_the_dpu_2_5_shape() {
    sync_event_pair("host", "25", "sync");
    sync_event_pair("host", "25", "async");
}

/// DOCA 2.7+'s sync_event_local_pci / sync_event_remote_pci (`export_to_remote_pci`,
/// `wait_eq`), with either side exporting, synchronously and with tasks.
#[test]
fn c_sync_event_either_side_exports_to_remote_pci_2_9_shape() {
    sync_event_pair("dpu", "29", "sync");
    sync_event_pair("host", "29", "async");
    sync_event_pair("dpu", "29", "async");
    sync_event_pair("host", "29", "sync");
}

/// The exporter process exits without destroying its event: the importer's blocking wait
/// returns `NOT_FOUND`, as do its get and update.
#[test]
fn c_sync_event_importer_of_a_dead_exporter_gets_not_found() {
    sync_event_pair("host", "29", "die");
    sync_event_pair("dpu", "29", "die");
}

/// DOCA RDMA from C at API level 2.7 (`capi/tests/c/rdma.c`): the connection manager on a
/// port of this machine, each task kind on the connection it made (send with immediate,
/// write, read, write with immediate, the atomics, the remote sync event tasks), the
/// failure callback for a port nobody listens on, and the failure rule (NOT_PERMITTED, the
/// rest flushed with SHUTDOWN, the peer told of the disconnection).
#[test]
fn a_c_program_runs_every_rdma_task_over_a_connection_manager_connection() {
    let source = capi_dir().join("tests/c/rdma.c");
    let prog = compile_with("rdma27", &source, "any", &["-DDOCA_EMU_API_LEVEL=27"]);
    let dir = std::env::temp_dir().join(format!("rdma-c-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let port = (30000 + std::process::id() % 20000).to_string();
    let out = Command::new(&prog)
        .arg(&port)
        .env("DOCA_EMU_FABRIC_DIR", &dir)
        .env_remove("DOCA_EMU_SIDE")
        .output()
        .expect("run the C program");
    let _ = std::fs::remove_dir_all(&dir);
    expect_output(&out, "ok", "rdma.c");
}

/// DOCA RDMA's shared receive queues from C (`capi/tests/c/rdma_srq.c`) at API levels 2.7
/// and 2.6 (where `doca_rdma_create_with_srq` makes a context Starting until it connects):
/// caps, settings and their codes, the queue's states, its DPA handle refused
/// (`BAD_STATE`), an RDMA context created with it refusing CPU receives, the queue stopping
/// only once that context stops; then a topology without RDMA (`NOT_SUPPORTED`); and the
/// names are not declared at level 2.5 (DOCA 2.5 has no shared receive queue).
#[test]
fn a_c_program_configures_a_shared_receive_queue_and_an_rdma_context_on_it() {
    let source = capi_dir().join("tests/c/rdma_srq.c");
    for level in ["27", "26"] {
        let prog = compile_with(
            &format!("rdma_srq{level}"),
            &source,
            "any",
            &[&format!("-DDOCA_EMU_API_LEVEL={level}")],
        );
        run(&prog, &[], None);
        if level == "27" {
            let dir = lib_dir().join(format!("c-srq-topology-{}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("a folder for the topology");
            let topo = dir.join("nordma.topology");
            std::fs::write(
                &topo,
                "device 03:00.0 dpu\nrep b1:00.0 pf\ndevice b1:00.0 host\ncap rdma.supported 0\n",
            )
            .expect("write the topology");
            let out = Command::new(&prog)
                .arg("nordma")
                .env_remove("DOCA_EMU_SIDE")
                .env("DOCA_EMU_TOPOLOGY", &topo)
                .output()
                .expect("run rdma_srq nordma");
            let _ = std::fs::remove_dir_all(&dir);
            expect_output(&out, "ok", "rdma_srq nordma");
        }
    }
    let at25 = Command::new(cc())
        .args(["-std=gnu17", "-fsyntax-only"])
        .args(c_flags("any"))
        .arg("-DDOCA_EMU_API_LEVEL=25")
        .arg(&source)
        .output()
        .expect("run the C compiler");
    let err = String::from_utf8_lossy(&at25.stderr);
    assert!(
        !at25.status.success() && err.contains("doca_rdma_srq_create"),
        "level 2.5 must not declare the shared receive queue functions:\n{err}"
    );
}

/// DOCA RDMA from C at API level 2.5 (`capi/tests/c/rdma25.c`), two processes exchanging
/// descriptors through files as NVIDIA's 2.5 samples do: the 2.5 start (Starting until
/// connected), export and connect without a connection argument, the `bool` grh setting,
/// the MTU and buffer-list settings and their limits, a send gathered from a list of two
/// buffers into a receive scattering into a list of two, and a read of the peer's exported
/// bytes into a list of two; the lengths read with 2.5's `_get_result_length` getters.
#[test]
fn two_c_programs_at_api_level_25_send_receive_and_read_through_buffer_lists() {
    let prog = build("rdma25");
    let dir = std::env::temp_dir().join(format!("rdma25-c-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let fabric = dir.join("fabric");
    std::fs::create_dir_all(&fabric).unwrap();
    std::fs::set_permissions(&fabric, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let run = |role: &str| {
        Command::new(&prog)
            .args([role, dir.to_str().unwrap()])
            .env("DOCA_EMU_FABRIC_DIR", &fabric)
            .env_remove("DOCA_EMU_SIDE")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start rdma25")
    };
    let a = run("a");
    let b = run("b");
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    let _ = std::fs::remove_dir_all(&dir);
    expect_output(&b, "ok", "rdma25 b");
    expect_output(&a, "ok", "rdma25 a");
}

/// What NVIDIA's storage application needs of DOCA Core, from C: a map from export exported
/// on for RDMA, thread-safe maps destroyed with buffers out, buffers reused (3.x).
#[test]
fn a_c_program_reexports_an_import_for_rdma_and_reuses_buffers_on_a_thread_safe_map() {
    run(&build("storage_support"), &[], None);
}
