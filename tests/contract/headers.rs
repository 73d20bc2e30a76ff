//! Reading `capi/include` as a compiler does: the headers flattened by the C preprocessor at
//! one API level, and the `doca_*` functions they declare. Shared by the build script (which
//! turns each declaration into a Rust type, `build.rs`) and `tests/c_contract.rs`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The API levels the headers declare (`DOCA_EMU_API_LEVEL`).
pub const LEVELS: [u32; 3] = [25, 26, 27];

/// The C compiler (`CC`, else `cc`).
pub fn cc() -> String {
    std::env::var("CC").unwrap_or_else(|_| "cc".into())
}

/// Every header of `capi/include`, by name.
pub fn headers(capi: &Path) -> Vec<String> {
    let mut hs: Vec<String> = std::fs::read_dir(capi.join("include"))
        .expect("capi/include")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".h"))
        .collect();
    hs.sort();
    hs
}

/// Our headers preprocessed into one text (macros expanded) at API level `level`, as an
/// object built with plain prototypes sees them; `dir` is a scratch folder.
pub fn flattened(capi: &Path, dir: &Path, level: u32) -> String {
    let all = dir.join("all.h");
    let text: String = headers(capi).iter().map(|h| format!("#include <{h}>\n")).collect();
    std::fs::write(&all, text).expect("write all.h");
    let out = Command::new(cc())
        .args(["-E", "-P", "-DDOCA_ALLOW_EXPERIMENTAL_API"])
        .arg(format!("-DDOCA_EMU_API_LEVEL={level}"))
        .arg(format!("-I{}", capi.join("include").display()))
        .arg(format!("-I{}", capi.join("include/any").display()))
        .arg(&all)
        .output()
        .expect("run the C preprocessor");
    assert!(out.status.success(), "the headers do not preprocess:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 headers")
}

/// A function the headers declare: its declaration (one line), the symbol it names (its asm
/// label, else its name) and whether it has a body.
pub struct Decl {
    pub text: String,
    pub symbol: String,
    pub inline: bool,
}

/// The `doca_*` functions declared at the top level of the flattened headers.
pub fn declarations(flat: &str) -> BTreeMap<String, Decl> {
    let mut out = BTreeMap::new();
    let mut stmt = String::new();
    let mut depth = 0usize;
    let mut body = false;
    for c in flat.chars() {
        match c {
            '{' => {
                depth += 1;
                if depth == 1 && stmt.trim_end().ends_with(')') && !stmt.contains('=') {
                    body = true;
                }
            }
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && body {
                    record(&mut out, &stmt, true);
                    stmt.clear();
                    body = false;
                }
            }
            ';' if depth == 0 => {
                record(&mut out, &stmt, false);
                stmt.clear();
            }
            _ if depth == 0 => stmt.push(c),
            _ => {}
        }
    }
    out
}

/// Records `stmt` when it declares a `doca_*` function (not a typedef, not a variable).
fn record(out: &mut BTreeMap<String, Decl>, stmt: &str, inline: bool) {
    let text = stmt.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.starts_with("typedef") || text.starts_with("extern \"C\"") {
        return;
    }
    // the first identifier directly followed by '(' names the function
    let bytes = text.as_bytes();
    let Some(open) = text.find('(') else { return };
    let mut start = open;
    while start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_') {
        start -= 1;
    }
    let name = &text[start..open];
    if name.starts_with("doca_") {
        let symbol = asm_label(&text).unwrap_or(name).to_string();
        out.insert(name.to_string(), Decl { text, symbol, inline });
    }
}

/// The symbol an asm label (`__asm__("name")`) routes a declaration to.
pub fn asm_label(decl: &str) -> Option<&str> {
    let at = decl.find("__asm__(\"")? + "__asm__(\"".len();
    let len = decl[at..].find('"')?;
    Some(&decl[at..at + len])
}
