//! The C declarations of `capi/include` as Rust function-pointer types: `uint32_t` → `u32`,
//! `size_t` → `usize`, `struct doca_x *` → `*mut` capi's type for it, `const T *` →
//! `*const T`, a callback typedef → `Option<unsafe extern "C" fn(..)>` of its own parameters.
//! A top-level `const` (on a value or on the pointer itself) is no part of the ABI and is
//! dropped; every other qualifier is kept, so a `const` that differs fails to match.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};

/// Where a callback of a 2.6-shaped export (any symbol but a `_v25` one) has a parameter of
/// a width or type of its own, on purpose: (the callback typedef, the parameter's index, the
/// type its C declaration maps to, capi's type, why). Each entry must still be met (the build
/// fails when no header declares it any more). The `_v25` symbols (the 2.5 shapes) have none.
pub const DELIBERATE: &[(&str, usize, &str, &str, &str)] = &[
    (
        "doca_cc_event_msg_recv_cb_t",
        2,
        "u32",
        "u64",
        "capi passes the length as 64 bits: a 2.6 callback (uint32_t) reads its low half, a 2.5 \
         one (size_t) that reaches a 2.6 symbol still reads all of it (capi/src/cc.rs, MsgRecvCb)",
    ),
    (
        "doca_cc_event_msg_recv_cb_t",
        2,
        "usize",
        "u64",
        "the doca_comch_* names at API level 25 (their callbacks in the 2.5 shape) bind to the 2.6 \
         symbols: the 64-bit length is the whole size_t (capi/src/cc.rs, MsgRecvCb)",
    ),
    (
        "doca_cc_event_connection_status_changed_cb_t",
        2,
        "bool",
        "u8",
        "the doca_comch_* names at API level 25 (a bool in the 2.5 shape) bind to the 2.6 \
         symbols, which pass 0 or 1: a valid bool (capi/src/cc.rs, ConnectionCb)",
    ),
];

/// The functions a Rust type cannot state: (name, why).
pub const UNCHECKED: &[(&str, &str)] = &[(
    "doca_log",
    "C-variadic: its Rust half is a naked trampoline into c/doca_log.c, which alone reads the arguments",
)];

/// The Rust type capi uses for `struct <tag>` / `union <tag>` (or a typedef of one).
fn struct_type(tag: &str) -> String {
    let tag = tag.strip_suffix("_t").unwrap_or(tag);
    let name = match tag {
        // one Rust type for both sides (capi/src/cc.rs)
        "doca_cc_server" | "doca_cc_client" => "DocaCcSide",
        // not emulated: one uninhabited type (capi/src/sync_event.rs)
        "doca_dpa" | "doca_gpu" => "DocaDpaOrGpu",
        // events are not objects of the emulator: capi's callbacks take `*mut c_void` there
        t if t.starts_with("doca_cc_event_") => return "core::ffi::c_void".into(),
        // every task type is one task handle (capi/src/task.rs)
        t if t == "doca_task" || t.contains("_task_") || t.ends_with("_task") => "DocaTask",
        t => {
            let camel: String = t
                .split('_')
                .map(|w| {
                    let mut c = w.chars();
                    c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
                })
                .collect();
            return format!("doca_capi::{camel}");
        }
    };
    format!("doca_capi::{name}")
}

/// A C type reduced to what the ABI sees.
#[derive(Clone, Debug)]
struct CType {
    /// The base type's qualifier (`const char`).
    base_const: bool,
    base: Base,
    /// One per `*`, outermost last: whether that pointer is itself `const`.
    stars: Vec<bool>,
}

#[derive(Clone, Debug)]
enum Base {
    /// `void`.
    Void,
    /// A Rust type, as written in the generated code.
    Rust(String),
    /// A function type (`typedef void (f)(..)`): a pointer to it is a callback.
    Function(String),
}

/// The top-level statements of a flattened header, brace bodies left out, whitespace made one
/// space.
fn statements(flat: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (mut stmt, mut depth) = (String::new(), 0usize);
    for c in flat.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ';' if depth == 0 => {
                out.push(stmt.split_whitespace().collect::<Vec<_>>().join(" "));
                stmt.clear();
            }
            _ if depth == 0 => stmt.push(c),
            _ => {}
        }
    }
    out
}

/// Text with every `__attribute__((..))`, `__asm__(..)` and storage keyword removed.
fn strip_extensions(text: &str) -> String {
    let mut s = text.to_string();
    for kw in ["__attribute__", "__asm__"] {
        while let Some(at) = s.find(kw) {
            let open = at + s[at..].find('(').expect("( after an extension");
            let close = matching(&s, open);
            s.replace_range(at..=close, " ");
        }
    }
    s.split_whitespace()
        .filter(|w| !matches!(*w, "extern" | "static" | "inline" | "__inline" | "__extension__"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The index of the `)` closing the `(` at `open`.
fn matching(s: &str, open: usize) -> usize {
    let mut depth = 0usize;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return open + i;
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses in {s:?}")
}

/// `a, b(c, d), e` split at its top-level commas.
fn split_params(list: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0usize);
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// The C types of one flattened header: its typedefs and enums.
pub struct Types {
    /// typedef name → its statement (without `typedef `).
    typedefs: BTreeMap<String, String>,
    /// enums with a negative enumerator (`int`; the others are `unsigned int`, as GCC lays
    /// them out).
    signed_enums: BTreeSet<String>,
    /// Which [`DELIBERATE`] entries were used.
    used: RefCell<BTreeSet<usize>>,
    /// Whether the declaration being mapped binds to a `_v25` symbol.
    v25: Cell<bool>,
}

impl Types {
    pub fn new(flat: &str) -> Types {
        let mut typedefs = BTreeMap::new();
        for s in statements(flat) {
            let Some(def) = s.strip_prefix("typedef ") else { continue };
            let def = strip_extensions(def);
            let name = if let Some(open) = def.find('(') {
                // R (*name)(..) or R (name)(..)
                let close = matching(&def, open);
                def[open + 1..close].trim_start_matches('*').trim().to_string()
            } else {
                def.rsplit(' ').next().unwrap_or_default().to_string()
            };
            typedefs.insert(name, def);
        }
        let mut signed_enums = BTreeSet::new();
        let mut rest = flat;
        while let Some(at) = rest.find("enum ") {
            rest = &rest[at + 5..];
            let head: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            let after = rest[head.len()..].trim_start();
            if let (false, Some(body)) = (head.is_empty(), after.strip_prefix('{')) {
                let body = &body[..body.find('}').unwrap_or(body.len())];
                if body.contains('-') {
                    signed_enums.insert(head);
                }
            }
        }
        Types { typedefs, signed_enums, used: RefCell::new(BTreeSet::new()), v25: Cell::new(false) }
    }

    /// The Rust type of the C type `text` (a parameter, its name dropped, or a return type).
    fn parse(&self, text: &str) -> CType {
        let text = strip_extensions(text);
        if text.contains('(') {
            // a function-pointer parameter written out: R (*name)(..)
            let open = text.find('(').expect("(");
            let close = matching(&text, open);
            let inner = text[open + 1..close].trim();
            assert!(inner.starts_with('*'), "unsupported declarator {text:?}");
            let f = self.function(&text[..open], &text[close + 1..]);
            return CType { base_const: false, base: Base::Rust(f), stars: Vec::new() };
        }
        let spaced = text.replace('*', " * ");
        let words: Vec<&str> = spaced.split_whitespace().collect();
        let mut i = 0;
        let mut base_const = false;
        let mut base_words: Vec<&str> = Vec::new();
        while i < words.len() && words[i] != "*" {
            match words[i] {
                "const" => base_const = true,
                "volatile" | "restrict" | "__restrict" => {}
                w @ ("struct" | "union" | "enum") => {
                    base_words.push(w);
                    i += 1;
                    base_words.push(words[i]);
                }
                w @ ("unsigned" | "signed" | "int" | "long" | "short" | "char" | "void" | "_Bool"
                | "float" | "double") => base_words.push(w),
                // a typedef name, or the parameter's name after the base
                w if base_words.is_empty() => base_words.push(w),
                _ => {}
            }
            i += 1;
        }
        let mut ty = self.base(&base_words, &text);
        if base_const {
            match ty.stars.last_mut() {
                Some(last) => *last = true,
                None => ty.base_const = true,
            }
        }
        for w in &words[i..] {
            match *w {
                "*" => ty.stars.push(false),
                "const" => *ty.stars.last_mut().expect("a star") = true,
                _ => {} // restrict, or the parameter's name
            }
        }
        ty
    }

    /// The type named by `words` (`unsigned int`, `struct doca_buf`, `uint32_t`, a typedef).
    fn base(&self, words: &[&str], whole: &str) -> CType {
        let rust = |t: &str| CType { base_const: false, base: Base::Rust(t.into()), stars: Vec::new() };
        let joined = words.join(" ");
        match joined.as_str() {
            "void" => return CType { base_const: false, base: Base::Void, stars: Vec::new() },
            "char" => return rust("core::ffi::c_char"),
            "signed char" | "int8_t" => return rust("i8"),
            "unsigned char" | "uint8_t" => return rust("u8"),
            "short" | "short int" | "int16_t" => return rust("i16"),
            "unsigned short" | "unsigned short int" | "uint16_t" => return rust("u16"),
            "int" | "signed" | "signed int" => return rust("core::ffi::c_int"),
            "int32_t" => return rust("i32"),
            "unsigned" | "unsigned int" => return rust("core::ffi::c_uint"),
            "uint32_t" => return rust("u32"),
            "long" | "long int" => return rust("core::ffi::c_long"),
            "unsigned long" | "unsigned long int" => return rust("core::ffi::c_ulong"),
            "long long" | "long long int" | "int64_t" => return rust("i64"),
            "unsigned long long" | "unsigned long long int" | "uint64_t" => return rust("u64"),
            "size_t" | "uintptr_t" => return rust("usize"),
            "ssize_t" | "intptr_t" => return rust("isize"),
            "_Bool" | "bool" => return rust("bool"),
            "float" => return rust("f32"),
            "double" => return rust("f64"),
            // capi never reads a FILE: it takes the pointer as `*mut c_void`
            "FILE" => return rust("core::ffi::c_void"),
            _ => {}
        }
        match words {
            ["struct" | "union", tag] => rust(&struct_type(tag)),
            ["enum", "doca_error"] => rust("doca_capi::DocaError"),
            ["enum", tag] if self.signed_enums.contains(*tag) => rust("core::ffi::c_int"),
            ["enum", _] => rust("core::ffi::c_uint"),
            [name] => {
                let def = self
                    .typedefs
                    .get(*name)
                    .unwrap_or_else(|| panic!("{name} (in {whole:?}) is no type the headers define"));
                if let Some(open) = def.find('(') {
                    let close = matching(def, open);
                    let f = self.function_named(&def[..open], &def[close + 1..], name);
                    if def[open + 1..close].trim_start().starts_with('*') {
                        CType { base_const: false, base: Base::Rust(f), stars: Vec::new() }
                    } else {
                        CType { base_const: false, base: Base::Function(f), stars: Vec::new() }
                    }
                } else {
                    let ty = def.rsplit_once(' ').map_or("", |(t, _)| t);
                    self.parse(ty)
                }
            }
            _ => panic!("unsupported C type {whole:?}"),
        }
    }

    /// `Option<unsafe extern "C" fn(..) -> ..>` for return type `ret` and the parameter
    /// list `params` (`(..)`, with anything after it).
    fn function(&self, ret: &str, params: &str) -> String {
        self.function_named(ret, params, "")
    }

    fn function_named(&self, ret: &str, params: &str, typedef: &str) -> String {
        let (args, variadic) = self.signature(ret, params, typedef, self.v25.get());
        assert!(!variadic, "a variadic callback {typedef:?}");
        format!("Option<{args}>")
    }

    /// `unsafe extern "C" fn(..) -> ..` and whether the list ends in `...`.
    fn signature(&self, ret: &str, params: &str, typedef: &str, v25: bool) -> (String, bool) {
        let open = params.find('(').expect("a parameter list");
        let list = &params[open + 1..matching(params, open)];
        let mut args = Vec::new();
        let mut variadic = false;
        for (i, p) in split_params(list).iter().enumerate() {
            if p == "..." {
                variadic = true;
                continue;
            }
            let t = self.parse(p);
            if matches!(t.base, Base::Void) && t.stars.is_empty() {
                continue; // (void)
            }
            let mut r = render(&t);
            for (k, (td, at, c, rust, _)) in DELIBERATE.iter().enumerate() {
                if !v25 && *td == typedef && *at == i && *c == r {
                    r = (*rust).to_string();
                    self.used.borrow_mut().insert(k);
                }
            }
            args.push(r);
        }
        let ret = self.parse(ret);
        let ret = match (&ret.base, ret.stars.is_empty()) {
            (Base::Void, true) => String::new(),
            _ => format!(" -> {}", render(&ret)),
        };
        (format!("unsafe extern \"C\" fn({}){ret}", args.join(", ")), variadic)
    }

    /// The Rust function-pointer type of the declaration `decl` of `name`; None when it is
    /// C-variadic.
    /// `symbol`: the export it binds to (a `_v25` one is checked without [`DELIBERATE`]).
    pub fn declaration(&self, name: &str, decl: &str, symbol: &str) -> Option<String> {
        let v25 = symbol.ends_with("_v25");
        self.v25.set(v25);
        let decl = strip_extensions(decl);
        let at = decl.find(&format!("{name}(")).expect("the name in its declaration");
        let (sig, variadic) = self.signature(&decl[..at], &decl[at + name.len()..], "", v25);
        (!variadic).then_some(sig)
    }

    /// The [`DELIBERATE`] entries these types used.
    pub fn used(&self) -> BTreeSet<usize> {
        self.used.borrow().clone()
    }
}

/// `t` as Rust: pointers outermost first, each `*const` when what it points to is `const`.
fn render(t: &CType) -> String {
    let (mut ty, mut stars, mut pointee_const) = match &t.base {
        Base::Void => ("core::ffi::c_void".to_string(), &t.stars[..], t.base_const),
        Base::Rust(r) => (r.clone(), &t.stars[..], t.base_const),
        // a pointer to a function type is the callback itself
        Base::Function(f) => {
            let (first, rest) = t.stars.split_first().expect("a function type is used through a pointer");
            (f.clone(), rest, *first)
        }
    };
    while let Some((q, rest)) = stars.split_first() {
        ty = format!("*{} {ty}", if pointee_const { "const" } else { "mut" });
        pointee_const = *q;
        stars = rest;
    }
    ty
}
