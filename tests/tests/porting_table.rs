//! The book's porting tables stay true: every Rust item they name exists in the sources, and
//! (where the fact sheet `../shared/spec/doca-api.md` is present, as in CI) every C function
//! of its sections 2 to 7 has a row.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// (C cell, Rust cell) of every table row of the porting chapters.
fn rows() -> Vec<(String, String)> {
    let dir = root().join("book/src/porting");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if cells.len() == 4 && cells[1] != "C" && !cells[1].starts_with("---") {
                out.push((cells[1].to_string(), cells[2].to_string()));
            }
        }
    }
    assert!(out.len() > 150, "the porting tables are there ({} rows)", out.len());
    out
}

fn backticked(cell: &str) -> Vec<String> {
    cell.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

/// All Rust source text of the workspace.
fn sources() -> String {
    let mut text = String::new();
    let mut stack = vec![root()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = entry.path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() && name != "target" && !name.starts_with('.') && name != "book" {
                stack.push(p);
            } else if name.ends_with(".rs") {
                text.push_str(&std::fs::read_to_string(&p).unwrap());
            }
        }
    }
    text
}

/// The names a Rust cell token stands for: `A::B::{c, d}(x)` → [`c`, `d`]; `A::b` → [`b`].
fn names(token: &str) -> Vec<String> {
    let t = token.split('(').next().unwrap().trim();
    let t = t.split('<').next().unwrap();
    if let Some(i) = t.find("::{") {
        let inner = t[i + 3..].trim_end_matches('}');
        return inner.split(',').map(|s| s.trim().to_string()).collect();
    }
    vec![t.rsplit("::").next().unwrap().to_string()]
}

fn defined(src: &str, name: &str) -> bool {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return true; // prose, not an item
    }
    let first = name.chars().next().unwrap();
    if name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
        return src.contains(&format!("const {name}"));
    }
    if first.is_ascii_uppercase() {
        return [
            format!("struct {name}"),
            format!("enum {name}"),
            format!("type {name}"),
            format!("trait {name}"),
            format!("    {name} = "),
            format!("    {name},"),
            format!("{name}::"),
        ]
        .iter()
        .any(|p| src.contains(p.as_str()));
    }
    src.contains(&format!("fn {name}("))
        || src.contains(&format!("fn {name}<"))
        || src.contains(&format!("mod {name}"))
}

#[test]
fn every_rust_item_named_in_the_porting_tables_exists() {
    let src = sources();
    let mut missing = Vec::new();
    for (_, rust) in rows() {
        for token in backticked(&rust) {
            if !token.contains("::") && !token.chars().next().is_some_and(|c| c.is_ascii_uppercase()) {
                continue; // a closure shape, a flag value, prose
            }
            let std_names = [
                "AsFd", "AsRawFd", "TryFrom", "Copy", "Deref", "Send", "Sync", "Vec", "Option", "Some",
                "None",
            ];
            if token.starts_with("FnMut")
                || token.starts_with("std::")
                || token.starts_with("Result")
                || std_names.iter().any(|n| token.starts_with(n))
                || (!token.contains("::") && token.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
            {
                continue;
            }
            for name in names(&token) {
                if !defined(&src, &name) {
                    missing.push(format!("{name} (from `{token}`)"));
                }
            }
        }
    }
    assert!(missing.is_empty(), "porting tables name items that do not exist: {missing:#?}");
}

/// C functions a cell covers, expanding `/ _suffix` shorthands against the cell's full names.
fn covered(cell: &str, spec: &BTreeSet<String>) -> BTreeSet<String> {
    let tokens = backticked(cell);
    let full: Vec<&String> = tokens.iter().filter(|t| t.starts_with("doca_")).collect();
    let mut out = BTreeSet::new();
    for t in &tokens {
        let t = t.split('(').next().unwrap().trim();
        if t.starts_with("doca_") {
            out.insert(t.to_string());
        } else if t.starts_with('_') {
            for f in &full {
                let parts: Vec<&str> = f.split('_').collect();
                for k in 1..parts.len() {
                    let candidate = format!("{}{t}", parts[..k].join("_"));
                    if spec.contains(&candidate) {
                        out.insert(candidate);
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_c_function_of_the_fact_sheet_has_a_row() {
    let spec_path = root().join("../shared/spec/doca-api.md");
    let Ok(spec) = std::fs::read_to_string(&spec_path) else {
        eprintln!("{} not found: the coverage half of this check runs in CI", spec_path.display());
        return;
    };
    let start = spec.find("## 2. DOCA Core").expect("section 2");
    let end = spec.find("## 8. Official sample flows").expect("section 8");
    let body = &spec[start..end];
    let mut functions = BTreeSet::new();
    for (i, _) in body.match_indices("doca_") {
        if body[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue; // inside another name (e.g. the samples' open_doca_device_with_pci)
        }
        let name: String = body[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        let after = &body[i + name.len()..];
        if after.starts_with('(') && !name.ends_with('_') {
            functions.insert(name);
        }
    }
    assert!(functions.len() > 150, "found {} functions", functions.len());
    let mut have = BTreeSet::new();
    for (c, _) in rows() {
        have.extend(covered(&c, &functions));
    }
    let missing: Vec<&String> = functions.iter().filter(|f| !have.contains(*f)).collect();
    assert!(missing.is_empty(), "C functions without a porting-table row: {missing:#?}");
}

#[test]
fn every_relative_link_and_include_of_the_book_resolves() {
    let src = root().join("book/src");
    let mut broken = Vec::new();
    let mut stack = vec![src.clone()];
    let mut pages = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.extension().is_none_or(|e| e != "md") {
                continue;
            }
            pages += 1;
            let text = std::fs::read_to_string(&p).unwrap();
            let here = p.parent().unwrap();
            // Markdown links: ](target) that are not URLs or anchors.
            for part in text.split("](").skip(1) {
                let target = part.split(')').next().unwrap().split('#').next().unwrap();
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                if !here.join(target).exists() {
                    broken.push(format!("{}: link {target}", p.display()));
                }
            }
            // {{#include path:anchor}}: the file exists and has the anchor.
            for part in text.split("{{#include ").skip(1) {
                let spec = part.split("}}").next().unwrap().trim();
                let (file, anchor) = match spec.rsplit_once(':') {
                    Some((f, a)) if !a.contains('/') => (f, Some(a)),
                    _ => (spec, None),
                };
                match std::fs::read_to_string(here.join(file)) {
                    Ok(body) => {
                        if let Some(a) = anchor {
                            if !body.contains(&format!("ANCHOR: {a}"))
                                || !body.contains(&format!("ANCHOR_END: {a}"))
                            {
                                broken.push(format!("{}: include {file} has no anchor {a}", p.display()));
                            }
                        }
                    }
                    Err(_) => broken.push(format!("{}: include {file} missing", p.display())),
                }
            }
        }
    }
    assert!(pages > 10, "the book is there");
    assert!(broken.is_empty(), "broken links or includes: {broken:#?}");
}
