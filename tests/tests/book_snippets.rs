//! The book's shell snippets stay true.
//!
//! Every `sh` block of `book/src` is valid shell (`bash -n`), and none sets a variable for
//! one command only while a `$(…)` of that command needs it (`VAR=… cc $(pkg-config …)`:
//! the `$(…)` runs before the assignment takes effect).
//!
//! A block preceded by the line `<!-- book-test -->` is also **run**, with `bash -eu`, from
//! the workspace root (a block that builds `my_app.c`: from a folder of the test's holding
//! that file, where the harness then runs the program built, `a.out`), in a fabric directory of its own, with these rewrites and only
//! these (so that a test neither writes to `/opt` nor builds in release mode):
//!
//! | in the book | in the test |
//! |---|---|
//! | a `capi/install.sh …` line | removed: the harness installed the C ABI already (`capi/install.sh --lib <this build>`) |
//! | `/opt/doca-emu`, `/tmp/doca-emu` | that install's prefix |
//! | `/tmp/first-` | a temporary folder of the test |
//! | `--release`, `target/release/` | (none), `<target>/debug/` |
//!

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// The workspace's target folder (this binary is `<target>/<profile>/deps/<test>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    exe.ancestors().nth(3).expect("<target>/<profile>/deps/<test>").to_path_buf()
}

/// (file, first line number, marked to run, text) of every `sh` block of the book.
fn blocks() -> Vec<(String, usize, bool, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root().join("book/src")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read the book").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|x| x != "md") {
                continue;
            }
            let text = std::fs::read_to_string(&p).expect("read a page");
            let lines: Vec<&str> = text.lines().collect();
            let mut i = 0;
            while i < lines.len() {
                if lines[i].trim() == "```sh" {
                    let marked = i > 0 && lines[i - 1].trim() == "<!-- book-test -->";
                    let start = i + 1;
                    let mut j = start;
                    while j < lines.len() && lines[j].trim() != "```" {
                        j += 1;
                    }
                    let name = p.strip_prefix(root()).unwrap().display().to_string();
                    out.push((name, start + 1, marked, lines[start..j].join("\n") + "\n"));
                    i = j;
                }
                i += 1;
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_shell_block_of_the_book_parses_and_sets_no_variable_its_substitution_needs() {
    let all = blocks();
    assert!(all.len() > 10, "the book's shell blocks are found ({})", all.len());
    for (file, line, _, text) in &all {
        // `$ cmd` transcripts show a session: their commands are what is checked.
        let script: String = if text.lines().any(|l| l.starts_with("$ ")) {
            text.lines().filter_map(|l| l.strip_prefix("$ ")).map(|l| format!("{l}\n")).collect()
        } else {
            text.clone()
        };
        let out = Command::new("bash").args(["-n", "-c", &script]).output().expect("run bash -n");
        assert!(
            out.status.success(),
            "{file}:{line}: not valid shell: {}\n{script}",
            String::from_utf8_lossy(&out.stderr)
        );
        for (k, l) in script.lines().enumerate() {
            let words: Vec<&str> = l.split_whitespace().collect();
            let assigned: Vec<&str> = words
                .iter()
                .take_while(|w| w.split_once('=').is_some_and(|(n, _)| is_name(n)))
                .map(|w| w.split_once('=').unwrap().0)
                .collect();
            let rest = words[assigned.len()..].join(" ");
            if assigned.is_empty() || rest.is_empty() || !rest.contains("$(") {
                continue;
            }
            for name in &assigned {
                // What the substituted command reads: pkg-config reads PKG_CONFIG_PATH.
                let needs = (*name == "PKG_CONFIG_PATH" && rest.contains("$(pkg-config"))
                    || rest.contains(&format!("${name}"))
                    || rest.contains(&format!("${{{name}}}"));
                assert!(
                    !needs,
                    "{file}:{}: `{name}=…` is set for the command only, but its `$(…)` runs before and needs it: export it first\n{l}",
                    line + k
                );
            }
        }
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// The folder of `libdoca_capi.so` (a dependency of this crate: beside this binary).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let deps = exe.parent().expect("deps").to_path_buf();
    [deps.clone(), deps.parent().expect("profile").to_path_buf()]
        .into_iter()
        .find(|d| d.join("libdoca_capi.so").exists())
        .unwrap_or_else(|| panic!("libdoca_capi.so is not beside {}", exe.display()))
}

/// A C program for the blocks that build `my_app.c`: opens the DPU device by its PCI
/// address and prints "ok".
const MY_APP: &str = r#"#include <stdio.h>
#include <doca_dev.h>
#include <doca_error.h>

int main(void)
{
	struct doca_devinfo **list;
	uint32_t n = 0;
	if (doca_devinfo_create_list(&list, &n) != DOCA_SUCCESS || n == 0)
		return 1;
	doca_devinfo_destroy_list(list);
	printf("ok\n");
	return 0;
}
"#;

#[test]
fn the_marked_shell_blocks_of_the_book_run() {
    use std::os::unix::fs::PermissionsExt;
    let marked: Vec<_> = blocks().into_iter().filter(|b| b.2).collect();
    assert!(marked.len() >= 3, "the marked blocks are found: {marked:?}");
    let work = std::env::temp_dir().join(format!("book-snippets-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let prefix = work.join("prefix");
    let fabric = work.join("fabric");
    std::fs::create_dir_all(&fabric).expect("make the work folder");
    std::fs::set_permissions(&fabric, std::fs::Permissions::from_mode(0o700)).expect("chmod 0700");
    let status = Command::new("bash")
        .arg(root().join("capi/install.sh"))
        .arg("--lib")
        .arg(lib_dir())
        .arg(&prefix)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run capi/install.sh");
    assert!(status.success(), "capi/install.sh failed");
    std::fs::write(work.join("my_app.c"), MY_APP).expect("write my_app.c");
    let debug = format!("{}/", target_dir().join("debug").display());
    for (file, line, _, text) in &marked {
        let script: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("capi/install.sh"))
            .map(|l| {
                l.replace("/opt/doca-emu", prefix.to_str().unwrap())
                    .replace("/tmp/doca-emu", prefix.to_str().unwrap())
                    .replace("/tmp/first-", &format!("{}/first-", work.display()))
                    .replace("target/release/", &debug)
                    .replace(" --release", "")
                    + "\n"
            })
            .collect();
        let builds_my_app = script.contains("my_app.c");
        let out = Command::new("bash")
            .args(["-eu", "-c", &script])
            .current_dir(if builds_my_app { work.clone() } else { root() })
            .env("DOCA_EMU_FABRIC_DIR", &fabric)
            .env("CARGO_TARGET_DIR", target_dir())
            .env_remove("DOCA_EMU_SIDE")
            .output()
            .expect("run bash");
        assert!(
            out.status.success(),
            "{file}:{line} failed:\n{script}\n--- stdout\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if builds_my_app {
            let run = Command::new(work.join("a.out")).env("DOCA_EMU_FABRIC_DIR", &fabric).output();
            let run = run.expect("run the program the block built");
            assert_eq!(String::from_utf8_lossy(&run.stdout).trim(), "ok", "{file}:{line}: {run:?}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(&fabric).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(left.is_empty(), "the blocks' processes left {left:?} in the fabric directory");
    let _ = std::fs::remove_dir_all(&work);
}
