//! The C ABI's contract, checked rather than typed twice: the functions `capi/include`
//! declares, over its API levels (25, 26, 27: `doca_emu_api_level.h`), are exactly the
//! `doca_*` functions `libdoca_capi.so` exports (`nm -D`), each a real symbol (no function is
//! a macro over another name or inline in a header, as NVIDIA's headers declare them all as
//! plain prototypes; a declaration with an asm label names the symbol it is routed to), and
//! an object compiled against each level's plain prototypes, taking every function's address
//! as a pointer of its declared type, links and runs; and, by types, each declaration at
//! each level is the Rust type of the export it binds to (`tests/build.rs` generates one
//! `const _: unsafe extern "C" fn(..) -> .. = doca_capi::<symbol>;` per function, compiled
//! here: a width, signedness, pointer-depth or `const` drift fails the build). Also the argument parser as DOCA's samples use it (`doca_argp_init(NULL, …)`,
//! version and validation callbacks, `-v`).
//!
//! Run with `--nocapture` to see the counts the book quotes (`abi counts: …`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../contract/headers.rs"]
mod headers;

use headers::{cc, declarations, LEVELS};

/// Every header of `capi/include`, by name.
fn headers() -> Vec<String> {
    headers::headers(&capi_dir())
}

/// Our headers preprocessed at API level `level` (`dir`: a scratch folder).
fn flattened(dir: &Path, level: u32) -> String {
    headers::flattened(&capi_dir(), dir, level)
}

/// Where cargo put `libdoca_capi.so`.
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("target/<profile>/deps");
    [deps.to_path_buf(), deps.parent().expect("target/<profile>").to_path_buf()]
        .into_iter()
        .find(|d| d.join("libdoca_capi.so").exists())
        .unwrap_or_else(|| panic!("libdoca_capi.so is not beside {}", exe.display()))
}

/// The `capi/` folder.
fn capi_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").join("capi")
}

/// A scratch folder of this test process.
fn scratch(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("doca-emu-contract-{what}-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("a scratch folder");
    d
}

/// Compiles and links `source` (with `-I` for each of `includes`) against the library into
/// `out`; fails with the compiler's output.
fn build(source: &Path, includes: &[PathBuf], out: &Path) {
    let lib = lib_dir();
    let mut cmd = Command::new(cc());
    cmd.args(["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-DDOCA_ALLOW_EXPERIMENTAL_API", "-o"])
        .arg(out)
        .arg(source);
    for i in includes {
        cmd.arg(format!("-I{}", i.display()));
    }
    // The build configuration that picks no side (the side comes from the first device).
    cmd.arg(format!("-I{}", capi_dir().join("include/any").display()));
    let res = cmd
        .arg(format!("-L{}", lib.display()))
        .arg("-Wl,--disable-new-dtags")
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-ldoca_capi")
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {:?}: {e}", cc()));
    assert!(
        res.status.success(),
        "{} does not build and link:\n{}",
        source.display(),
        String::from_utf8_lossy(&res.stderr)
    );
}

/// The `doca_*` functions the library exports (`nm -D --defined-only`).
fn exported() -> BTreeSet<String> {
    let lib = lib_dir().join("libdoca_capi.so");
    let nm = Command::new("nm").args(["-D", "--defined-only"]).arg(&lib).output().expect("run nm");
    assert!(nm.status.success(), "nm {} failed", lib.display());
    String::from_utf8_lossy(&nm.stdout)
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, kind, name) = (f.next()?, f.next()?, f.next()?);
            (kind == "T" && name.starts_with("doca_")).then(|| name.to_string())
        })
        .collect()
}

/// `decl` made into a constant pointer `p_<name>` of the declared type, set to the function.
fn pointer_to(name: &str, decl: &str) -> String {
    let decl = match decl.find("__asm__") {
        Some(at) if at > decl.find(name).unwrap_or(0) => decl[..at].trim_end(),
        _ => decl,
    };
    let decl = match decl.find("__attribute__") {
        Some(at) if at > decl.find(name).unwrap_or(0) => decl[..at].trim_end(),
        _ => decl,
    };
    let at = decl.find(&format!("{name}(")).expect("the name in its declaration");
    format!("{}(*const p_{name}){} = {name};", &decl[..at], &decl[at + name.len()..])
}

/// Every function our headers declare, at each API level, is a real export of the library
/// (under its asm label where it has one: the 2.5 shapes at level 25), and every `doca_*`
/// export is declared at some level; none is inline or a macro over another name; at each
/// level an object built against the plain prototypes takes each one's address through a
/// pointer of its declared type, links (an undefined symbol fails the link) and runs. A name
/// routed to a symbol of its own at one level names its own symbol at the others.
#[test]
fn the_headers_declare_exactly_the_exports_and_an_object_of_plain_prototypes_links() {
    let dir = scratch("abi");
    let exports = exported();
    // a function name defined as a macro over another function's name (as doca_comch_* were,
    // and the 2.5 callback casts of the registrations)
    let mut renamed = Vec::new();
    for h in headers() {
        let text = std::fs::read_to_string(capi_dir().join("include").join(&h)).expect("a header");
        for line in text.lines() {
            let mut f = line.split_whitespace();
            if let (Some("#define"), Some(name), Some(_)) = (f.next(), f.next(), f.next()) {
                let name = name.split('(').next().unwrap_or(name);
                if exports.contains(name) {
                    renamed.push(format!("{h}: {name}"));
                }
            }
        }
    }
    assert!(renamed.is_empty(), "function names that are macros: {renamed:?}");
    let mut all_symbols = BTreeSet::new();
    let mut per_level = Vec::new();
    for level in LEVELS {
        let flat = flattened(&dir, level);
        let decls = declarations(&flat);
        let inline: Vec<&String> = decls.iter().filter(|(_, d)| d.inline).map(|(n, _)| n).collect();
        assert!(
            inline.is_empty(),
            "inline in our headers at level {level} (NVIDIA's declare them, an object built with those misses them): {inline:?}"
        );
        let symbols: BTreeSet<String> = decls.values().map(|d| d.symbol.clone()).collect();
        let missing: Vec<&String> = symbols.difference(&exports).collect();
        assert!(
            missing.is_empty(),
            "declared by capi/include at level {level} but not exported: {missing:?}"
        );
        let routed: Vec<String> = decls
            .iter()
            .filter(|(n, d)| **n != d.symbol)
            .map(|(n, d)| format!("{n} -> {}", d.symbol))
            .collect();
        // Level 25 routes the names 2.6 reshaped to <name>_v25, level 26 the names 2.7
        // reshaped (doca_rdma's) to <name>_v26; level 27 routes nothing.
        match level {
            25 => {
                assert!(!routed.is_empty(), "level 25 routes the names 2.6 reshaped to symbols of their own")
            }
            26 => {
                let odd: Vec<&String> = routed.iter().filter(|r| !r.ends_with("_v26")).collect();
                assert!(
                    !routed.is_empty() && odd.is_empty(),
                    "level 26 routes to <name>_v26 only: {routed:?}"
                );
            }
            _ => assert!(routed.is_empty(), "level {level} routes nothing: {routed:?}"),
        }
        all_symbols.extend(symbols);

        // The object: the flattened prototypes, one pointer per function, and a main that runs.
        let mut c = String::from("/* generated by tests/tests/c_contract.rs */\n#include \"flat.h\" /* our headers, flattened: stdio.h among them */\n\n");
        for (name, d) in &decls {
            c += &pointer_to(name, &d.text);
            c.push('\n');
        }
        c += "\nstatic const void *const all[] = {\n";
        for name in decls.keys() {
            c += &format!("\t(const void *)p_{name},\n");
        }
        c += "};\n\nint main(void)\n{\n\tsize_t n = 0;\n\n\tfor (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)\n\t\tn += all[i] != (const void *)0;\n";
        c += "\tprintf(\"%zu %s\\n\", n, p_doca_error_get_name(DOCA_SUCCESS));\n\treturn 0;\n}\n";
        std::fs::write(dir.join("flat.h"), &flat).expect("write flat.h");
        let source = dir.join(format!("plain_prototypes{level}.c"));
        std::fs::write(&source, c).expect("write the object's source");
        let prog = dir.join(format!("plain_prototypes{level}"));
        build(&source, std::slice::from_ref(&dir), &prog);
        let out = Command::new(&prog).output().expect("run the object");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.trim() == format!("{} DOCA_SUCCESS", decls.len()),
            "the program of plain prototypes of level {level} said: {stdout}"
        );
        per_level.push(format!("{level}:{}/{}routed", decls.len(), routed.len()));
    }
    let undeclared: Vec<&String> = exports.difference(&all_symbols).collect();
    assert!(undeclared.is_empty(), "exported but declared by no header at any level: {undeclared:?}");
    let comch = exports.iter().filter(|n| n.starts_with("doca_comch_")).count();
    println!(
        "abi counts: headers={} declared={} exported={} comch={} levels={} (doca_emu_log_write among them: the emulator's own)",
        headers().len(),
        all_symbols.len(),
        exports.len(),
        comch,
        per_level.join(",")
    );
    // The C chapter of the book quotes the total: it must be this one.
    let book = capi_dir().join("../book/src/c-abi.md");
    let book = std::fs::read_to_string(&book).expect("book/src/c-abi.md");
    let quoted = format!("{} functions (`nm -D libdoca_capi.so`", exports.len());
    assert!(book.contains(&quoted), "book/src/c-abi.md must say \"{quoted}\" (the count of exports)");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The C declarations as Rust types (`tests/build.rs`): one constant per function and API
/// level, of the type its declaration maps to, set to the export it binds to. A width,
/// signedness, pointer-depth or `const` drift fails to compile this file.
mod c_types {
    include!(concat!(env!("OUT_DIR"), "/c_types.rs"));
}

/// The typed check covers every function the headers declare at every level, each bound to
/// the symbol its declaration names (the `_v25` symbols at level 25), except the C-variadic
/// `doca_log`; and what it compares is the declared shape: the 2.5 and 2.6 sizes, `const`
/// where the header has it and only there.
#[test]
fn every_declaration_at_every_level_is_checked_against_the_type_of_its_export() {
    let dir = scratch("types");
    let mut counts = Vec::new();
    for level in LEVELS {
        let decls = declarations(&flattened(&dir, level));
        let mut declared: BTreeSet<(&str, &str)> =
            decls.iter().map(|(n, d)| (n.as_str(), d.symbol.as_str())).collect();
        let (_, checked) = c_types::CHECKED.iter().find(|(l, _)| *l == level).expect("the level is checked");
        let checked: BTreeSet<(&str, &str)> = checked.iter().copied().collect();
        let unchecked: Vec<(&str, &str)> = declared.difference(&checked).copied().collect();
        assert_eq!(
            unchecked,
            [("doca_log", "doca_log")],
            "at level {level}, only the C-variadic doca_log is unchecked"
        );
        declared.remove(&("doca_log", "doca_log"));
        assert_eq!(declared, checked, "at level {level}");
        counts.push(format!("{level}:{}", checked.len()));
    }
    println!("typed abi counts: {}", counts.join(","));
    let generated = std::fs::read_to_string(concat!(env!("OUT_DIR"), "/c_types.rs")).expect("c_types.rs");
    for line in [
        // a size_t in 2.5, bound to its own symbol; a uint32_t from 2.6
        "const _: unsafe extern \"C\" fn(*mut doca_capi::DocaCcSide, usize) -> doca_capi::DocaError = doca_capi::doca_cc_server_set_max_msg_size_v25;",
        "const _: unsafe extern \"C\" fn(*mut doca_capi::DocaCcSide, u32) -> doca_capi::DocaError = doca_capi::doca_cc_server_set_max_msg_size;",
        // const kept where the header has it (the buffer), not where it has not (immediate data)
        "const _: unsafe extern \"C\" fn(*mut doca_capi::DocaCcProducer, *const doca_capi::DocaBuf, *mut u8, u32, u32, *mut *mut doca_capi::DocaTask) -> doca_capi::DocaError = doca_capi::doca_comch_producer_task_send_alloc_init;",
        // a callback typedef, its parameters mapped too
        "const _: unsafe extern \"C\" fn(*mut doca_capi::DocaCcSide, Option<unsafe extern \"C\" fn(*mut core::ffi::c_void, *mut u8, usize, *mut doca_capi::DocaCcConnection)>) -> doca_capi::DocaError = doca_capi::doca_cc_server_event_msg_recv_register_v25;",
        // pointer depth: an out-array of device handles
        "const _: unsafe extern \"C\" fn(*mut *mut *mut doca_capi::DocaDevinfo, *mut u32) -> doca_capi::DocaError = doca_capi::doca_devinfo_create_list;",
    ] {
        assert!(generated.contains(line), "c_types.rs has no line {line}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The DOCA version this emulator claims (`core/DOCA_VERSION`, its one place).
fn doca_version() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace");
    std::fs::read_to_string(root.join("core/DOCA_VERSION")).expect("core/DOCA_VERSION").trim().to_string()
}

/// `capi/tests/c/argp_version.c`, built once per run.
fn argp_program() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = scratch("argp").join("argp_version");
            let c = capi_dir();
            build(&c.join("tests/c/argp_version.c"), &[c.join("include"), c.join("tests/c")], &out);
            out
        })
        .clone()
}

/// Runs the argp program with `args` (`callbacks`: both callbacks registered), its output
/// piped; (success, stdout).
fn argp(args: &[&str], callbacks: bool) -> (bool, String) {
    let mut cmd = Command::new(argp_program());
    cmd.args(args);
    if callbacks {
        cmd.env("ARGP_CALLBACKS", "1");
    } else {
        cmd.env_remove("ARGP_CALLBACKS");
    }
    let out = cmd.output().expect("run argp_version");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `-v` prints the DOCA version the emulator claims (not the crate's), after the log line
/// the program wrote before the parse: both on the C stream, in order when piped.
#[test]
fn dash_v_prints_the_claimed_doca_version_in_order_with_the_log_lines() {
    let (ok, out) = argp(&["-v"], false);
    assert!(ok, "-v exits with success:\n{out}");
    let version = format!("DOCA SDK     Version (Compilation): {}", doca_version());
    let log = out.find("before the parse").unwrap_or_else(|| panic!("the log line:\n{out}"));
    let v = out.find(&version).unwrap_or_else(|| panic!("{version:?}:\n{out}"));
    assert!(log < v, "the log line written first comes first:\n{out}");
    assert!(!out.contains("start "), "-v ends the program:\n{out}");
}

/// `doca_argp_init(NULL, …)` (every DOCA 3.x sample): the usage names the program after
/// `argv[0]`; `-h` text goes through the same stream, after the log line.
#[test]
fn a_parser_made_without_a_name_is_named_after_argv0() {
    let (ok, out) = argp(&["-h"], false);
    assert!(ok, "-h exits with success:\n{out}");
    let usage = out.find("Usage: argp_version [DOCA Flags]").unwrap_or_else(|| panic!("the usage:\n{out}"));
    assert!(out.find("before the parse").is_some_and(|l| l < usage), "log line first:\n{out}");
    let (ok, out) = argp(&["-n", "3"], false);
    assert!(ok && out.contains("start DOCA_SUCCESS n=3 validated=0"), "{out}");
}

/// The version callback replaces the built-in `-v` (given NULL and the configuration; the
/// program exits after it); the validation callback sees the parsed configuration and its
/// code is `doca_argp_start`'s.
#[test]
fn version_and_validation_callbacks_run_as_registered() {
    let (ok, out) = argp(&["-v"], true);
    assert!(ok && out.contains("version callback param=NULL config=ours"), "{out}");
    assert!(!out.contains("DOCA SDK") && !out.contains("start "), "the callback replaces the text:\n{out}");
    let (ok, out) = argp(&["-n", "5"], true);
    assert!(ok && out.contains("start DOCA_SUCCESS n=5 validated=1"), "{out}");
    let (ok, out) = argp(&["--count", "50"], true);
    assert!(
        ok && out.contains("start DOCA_ERROR_INVALID_VALUE n=50 validated=1"),
        "the validation's code:\n{out}"
    );
}

/// A program linked against a vendor-shaped library (soname `libdoca_common.so.2`, its
/// symbols under a version node) runs on this library through `LD_LIBRARY_PATH` once this
/// library is reachable under that soname: the loader accepts an unversioned definition for
/// a versioned reference (and says "no version information available" on standard error).
#[test]
fn a_program_linked_against_a_versioned_soname_runs_on_this_library() {
    let dir = scratch("soname");
    let (vendor, emu) = (dir.join("vendor"), dir.join("emu"));
    std::fs::create_dir_all(&vendor).expect("vendor folder");
    std::fs::create_dir_all(&emu).expect("emu folder");
    std::fs::write(
        dir.join("lib.c"),
        "const char *doca_error_get_name(int e) { (void)e; return \"VENDOR\"; }\n",
    )
    .expect("lib.c");
    std::fs::write(dir.join("lib.map"), "DOCA_2 { global: doca_error_get_name; local: *; };\n")
        .expect("lib.map");
    std::fs::write(
        dir.join("app.c"),
        "#include <stdio.h>\nconst char *doca_error_get_name(int e);\nint main(void) { printf(\"%s\\n\", doca_error_get_name(0)); return 0; }\n",
    )
    .expect("app.c");
    let run = |args: &[&str]| {
        let out = Command::new(cc()).current_dir(&dir).args(args).output().expect("run the C compiler");
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    run(&["-shared", "-fPIC", "-o", "vendor/libdoca_common.so.2", "-Wl,-soname,libdoca_common.so.2"]
        .into_iter()
        .chain(["-Wl,--version-script,lib.map", "lib.c"])
        .collect::<Vec<_>>());
    std::os::unix::fs::symlink("libdoca_common.so.2", vendor.join("libdoca_common.so")).expect("symlink");
    run(&["-o", "app", "app.c", "-Lvendor", "-ldoca_common"]);
    let app =
        |libs: &Path| Command::new(dir.join("app")).env("LD_LIBRARY_PATH", libs).output().expect("run app");
    let out = app(&vendor);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "VENDOR",
        "the program runs on the vendor library"
    );
    std::os::unix::fs::symlink(lib_dir().join("libdoca_capi.so"), emu.join("libdoca_common.so.2"))
        .expect("symlink");
    let out = app(&emu);
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "DOCA_SUCCESS",
        "the same program on this library: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
