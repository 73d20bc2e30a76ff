//! `doca_argp.h`: the samples' argument parser. Parameters of type string, int and boolean,
//! short (`-p`, and names of several letters: `-ns`) and long (`--pci-addr`, `--pci-addr=…`)
//! names, mandatory parameters, a
//! version callback and a validation callback, and the built-in flags: `-h/--help`,
//! `-v/--version` (the DOCA version this emulator claims, [`doca_core::DOCA_VERSION`]),
//! `-l/--log-level`, `--sdk-log-level`, and `-j/--json <file>`: the flags read from a JSON file
//! (`json_flags`). Usage and version text go to the C library's standard output stream,
//! as the application's log lines do, so their order holds when the output is piped.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

use parking_lot::Mutex;

use crate::handles::{Handles, Kind};
use crate::{guarded, invalid, DocaError, DOCA_SUCCESS};
use doca_core::Error;

/// `doca_argp_param_cb_t`: the parameter's value (a C string, an `int *` or a `bool *`) and
/// the program's configuration.
pub type ParamCb = Option<unsafe extern "C" fn(*mut c_void, *mut c_void) -> DocaError>;

/// `doca_argp_validation_cb_t`: the program's configuration, once every flag was parsed.
pub type ValidationCb = Option<unsafe extern "C" fn(*mut c_void) -> DocaError>;

/// `enum doca_argp_type`.
const TYPE_STRING: c_uint = 1;
const TYPE_INT: c_uint = 2;
const TYPE_BOOLEAN: c_uint = 3;

/// `struct doca_argp_param`.
#[derive(Default)]
pub struct DocaArgpParam(Mutex<Fields>);

#[derive(Default, Clone)]
struct Fields {
    short: Option<String>,
    long: Option<String>,
    arguments: Option<String>,
    description: Option<String>,
    cb: ParamCb,
    kind: c_uint,
    mandatory: bool,
    multiple: bool,
}

struct Argp {
    /// None: `doca_argp_init(NULL, …)`, named after `argv[0]` by `doca_argp_start`.
    program: Option<String>,
    config: usize,
    params: Vec<*mut DocaArgpParam>,
    version: ParamCb,
    validation: ValidationCb,
}

// SAFETY: the parameter pointers are handles owned by the parser, only touched under its lock.
unsafe impl Send for Argp {}

static ARGP: Mutex<Option<Argp>> = Mutex::new(None);
static PARAMS: Handles = Handles::new(Kind::ArgpParam);

/// Runs `f` on the fields of a live parameter.
fn with_param<R>(p: *mut DocaArgpParam, f: impl FnOnce(&mut Fields) -> R) -> Option<R> {
    // SAFETY: PARAMS only holds DocaArgpParam handles.
    unsafe { PARAMS.get(p) }.map(|r: &DocaArgpParam| f(&mut r.0.lock()))
}

/// A copy of a live parameter's fields.
fn param(p: *mut DocaArgpParam) -> Option<Fields> {
    with_param(p, |f| f.clone())
}

/// A `doca_argp_param_set_*` call (no result in C: a bad handle is only logged).
fn setting(name: &'static str, p: *mut DocaArgpParam, f: impl FnOnce(&mut Fields)) {
    guarded(name, || match with_param(p, f) {
        Some(()) => DOCA_SUCCESS,
        None => invalid(),
    });
}

fn text(s: *const c_char) -> Option<String> {
    // SAFETY: NULL or a C string for the call (the caller's contract).
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
}

/// `doca_argp_init`: once (`BAD_STATE` before `doca_argp_destroy`). A NULL `program_name`
/// (DOCA 3.x samples pass one) names the program after `argv[0]` in `doca_argp_start`.
///
/// # Safety
/// `program_name` is NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn doca_argp_init(
    program_name: *const c_char,
    program_config: *mut c_void,
) -> DocaError {
    guarded("doca_argp_init", || {
        let program = text(program_name);
        let mut argp = ARGP.lock();
        if argp.is_some() {
            return Error::BadState.code();
        }
        *argp = Some(Argp {
            program,
            config: program_config as usize,
            params: Vec::new(),
            version: None,
            validation: None,
        });
        DOCA_SUCCESS
    })
}

/// `doca_argp_param_create`.
///
/// # Safety
/// `param` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn doca_argp_param_create(param: *mut *mut DocaArgpParam) -> DocaError {
    guarded("doca_argp_param_create", || {
        if let Err(e) = crate::check::non_null(param, "out-parameter") {
            return e;
        }
        if ARGP.lock().is_none() {
            return Error::BadState.code();
        }
        crate::check::out(param, PARAMS.add(DocaArgpParam::default()))
    })
}

macro_rules! setter {
    ($(#[$doc:meta])* $name:ident, $field:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// `value` is NULL or a C string.
        #[no_mangle]
        pub unsafe extern "C" fn $name(param: *mut DocaArgpParam, value: *const c_char) {
            setting(stringify!($name), param, |p| p.$field = text(value));
        }
    };
}

setter!(
    /// `doca_argp_param_set_short_name`.
    doca_argp_param_set_short_name, short
);
setter!(
    /// `doca_argp_param_set_long_name`.
    doca_argp_param_set_long_name, long
);
setter!(
    /// `doca_argp_param_set_arguments`: how the usage names the value.
    doca_argp_param_set_arguments, arguments
);
setter!(
    /// `doca_argp_param_set_description`.
    doca_argp_param_set_description, description
);

/// `doca_argp_param_set_callback`.
#[no_mangle]
pub extern "C" fn doca_argp_param_set_callback(param: *mut DocaArgpParam, callback: ParamCb) {
    setting("doca_argp_param_set_callback", param, |p| p.cb = callback);
}

/// `doca_argp_param_set_type`.
#[no_mangle]
pub extern "C" fn doca_argp_param_set_type(param: *mut DocaArgpParam, kind: c_uint) {
    setting("doca_argp_param_set_type", param, |p| p.kind = kind);
}

/// `doca_argp_param_set_mandatory`.
#[no_mangle]
pub extern "C" fn doca_argp_param_set_mandatory(param: *mut DocaArgpParam) {
    setting("doca_argp_param_set_mandatory", param, |p| p.mandatory = true);
}

/// `doca_argp_param_set_multiplicity`: may appear more than once.
#[no_mangle]
pub extern "C" fn doca_argp_param_set_multiplicity(param: *mut DocaArgpParam) {
    setting("doca_argp_param_set_multiplicity", param, |p| p.multiple = true);
}

/// `doca_argp_register_param`: the parser owns the parameter from now on. A parameter
/// without a name, a description, a callback or a type of string, int or boolean is
/// `INITIALIZATION`.
#[no_mangle]
pub extern "C" fn doca_argp_register_param(input_param: *mut DocaArgpParam) -> DocaError {
    guarded("doca_argp_register_param", || {
        let Some(p) = self::param(input_param) else { return invalid() };
        let mut argp = ARGP.lock();
        let Some(argp) = argp.as_mut() else { return Error::BadState.code() };
        if argp.params.contains(&input_param) {
            return Error::BadState.code();
        }
        let named = p.short.is_some() || p.long.is_some();
        let typed = matches!(p.kind, TYPE_STRING | TYPE_INT | TYPE_BOOLEAN);
        if !named || p.description.is_none() || p.cb.is_none() || !typed {
            return Error::Initialization.code();
        }
        argp.params.push(input_param);
        DOCA_SUCCESS
    })
}

/// `doca_argp_register_version_callback`: what `-v` runs instead of printing the version,
/// given NULL and the program's configuration. When it returns `DOCA_SUCCESS` the program
/// exits (status 0), as after the built-in `-v`; another code is `doca_argp_start`'s.
/// `BAD_STATE` before `doca_argp_init`, `INVALID_VALUE` for NULL.
#[no_mangle]
pub extern "C" fn doca_argp_register_version_callback(callback: ParamCb) -> DocaError {
    guarded("doca_argp_register_version_callback", || register(callback, |a, cb| a.version = cb))
}

/// `doca_argp_register_validation_callback`: run by `doca_argp_start` once every flag was
/// parsed and the mandatory ones were found, given the program's configuration; its code is
/// `doca_argp_start`'s. `BAD_STATE` before `doca_argp_init`, `INVALID_VALUE` for NULL.
#[no_mangle]
pub extern "C" fn doca_argp_register_validation_callback(callback: ValidationCb) -> DocaError {
    guarded("doca_argp_register_validation_callback", || register(callback, |a, cb| a.validation = cb))
}

/// Keeps a callback in the parser (`set`), refusing NULL and an uninitialized parser.
fn register<C>(callback: Option<C>, set: impl FnOnce(&mut Argp, Option<C>)) -> DocaError {
    if callback.is_none() {
        return crate::check::refuse(|| "NULL callback".into());
    }
    let mut argp = ARGP.lock();
    let Some(argp) = argp.as_mut() else { return Error::BadState.code() };
    set(argp, callback);
    DOCA_SUCCESS
}

/// What the built-in `-v` prints: the DOCA version this emulator claims, as compiled against
/// and as running.
fn version_text() -> String {
    let v = doca_core::DOCA_VERSION;
    format!("DOCA SDK     Version (Compilation): {v}\nDOCA Runtime Version (Runtime):     {v}\n")
}

/// The program's name for the usage: `doca_argp_init`'s, else `argv[0]`'s last component.
fn program_name(argp: &Argp, argv0: Option<&str>) -> String {
    match (&argp.program, argv0) {
        (Some(p), _) => p.clone(),
        (None, Some(a)) => a.rsplit('/').next().unwrap_or(a).to_string(),
        (None, None) => "doca".into(),
    }
}

/// The usage text: the program's flags, then the built-in ones.
fn usage(argp: &Argp, program: &str) -> String {
    let mut out = format!("Usage: {program} [DOCA Flags] [Program Flags]\n\nDOCA Flags:\n");
    out += "  -h, --help                        Print a help synopsis\n";
    out += "  -v, --version                     Print program version information\n";
    out += "  -j, --json <path>                 Parse all command flags from an input json file\n";
    out += "  -l, --log-level                   Set the (numeric) log level for the program <10=DISABLE, 20=CRITICAL, 30=ERROR, 40=WARNING, 50=INFO, 60=DEBUG, 70=TRACE>\n";
    out += "  --sdk-log-level                   Set the SDK (numeric) log level for the program <10=DISABLE, 20=CRITICAL, 30=ERROR, 40=WARNING, 50=INFO, 60=DEBUG, 70=TRACE>\n\nProgram Flags:\n";
    for &p in &argp.params {
        let Some(p) = param(p) else { continue };
        let names = match (&p.short, &p.long) {
            (Some(s), Some(l)) => format!("-{s}, --{l}"),
            (Some(s), None) => format!("-{s}"),
            (None, Some(l)) => format!("--{l}"),
            (None, None) => continue,
        };
        let names = format!("{names} {}", p.arguments.as_deref().unwrap_or(""));
        out += &format!("  {names:<34}{}\n", p.description.as_deref().unwrap_or(""));
    }
    out
}

/// An argument's flag and its value when attached. `--name=value` is a long name with its
/// value. A single dash introduces a short name, which is a string (NVIDIA's samples register
/// `ns`, `gid`, `rdma_dev`, given as `-ns 2`): the whole argument when it names a registered
/// short name (`is_short`), else the part before a `=` when that does (`-ns=2`), else a
/// one-letter name with its value attached as getopt's (`-p03:00.0`, `-p=03:00.0`).
fn split_flag(arg: &str, is_short: impl Fn(&str) -> bool) -> (String, Option<String>) {
    if let Some(long) = arg.strip_prefix("--") {
        return match long.split_once('=') {
            Some((f, v)) => (format!("--{f}"), Some(v.to_string())),
            None => (arg.to_string(), None),
        };
    }
    let Some(name) = arg.strip_prefix('-') else { return (arg.to_string(), None) };
    if name.is_empty() || is_short(name) {
        return (arg.to_string(), None);
    }
    if let Some((f, v)) = name.split_once('=') {
        if is_short(f) {
            return (format!("-{f}"), Some(v.to_string()));
        }
    }
    match name.char_indices().nth(1) {
        Some((at, _)) => {
            let v = &name[at..];
            (format!("-{}", &name[..at]), Some(v.strip_prefix('=').unwrap_or(v).to_string()))
        }
        None => (arg.to_string(), None),
    }
}

/// `doca_argp_start`: parses `argv` and calls each parameter's callback with its value
/// (string: a C string; int: an `int *`; boolean: a `bool *` to true) and the configuration.
/// `-j/--json <file>` gives the flags of a JSON file there (its `doca_general_flags` and
/// `doca_program_flags`, keyed by long names); a flag given on the command line after it
/// overrides the file's (its callback runs again).
/// Unknown flag → `NOT_SUPPORTED`; a missing or malformed value, or a mandatory parameter
/// absent → `INVALID_VALUE`; a callback's error is returned as is. `-h` and `-v` print and
/// exit the program, as DOCA's parser does.
///
/// A NULL `argv` with arguments (`argc` above 1) or a negative `argc` is `INVALID_VALUE`.
///
/// # Safety
/// `argv` is NULL or holds `argc` pointers, each NULL or a C string.
#[no_mangle]
pub unsafe extern "C" fn doca_argp_start(argc: c_int, argv: *mut *mut c_char) -> DocaError {
    guarded("doca_argp_start", || {
        let Ok(argc) = usize::try_from(argc) else {
            return crate::check::refuse(|| format!("argc {argc} is negative"));
        };
        if argc > 1 {
            if let Err(e) = crate::check::non_null(argv, "argv") {
                return e;
            }
        }
        let argv0 = (argc > 0 && !argv.is_null())
            // SAFETY: argv holds argc pointers (the caller's contract; checked non-NULL).
            .then(|| text(unsafe { *argv }))
            .flatten();
        let mut args: Vec<String> = (1..argc)
            // SAFETY: argv holds argc pointers (the caller's contract; checked non-NULL).
            .filter_map(|i| text(unsafe { *argv.add(i) }))
            .collect();
        let (params, config, help, version, validation) = {
            let argp = ARGP.lock();
            let Some(argp) = argp.as_ref() else { return Error::BadState.code() };
            let help = usage(argp, &program_name(argp, argv0.as_deref()));
            (argp.params.clone(), argp.config as *mut c_void, help, argp.version, argp.validation)
        };
        // How often each flag was given on the command line, and from JSON files (whose flags
        // a command-line one given after them overrides), with where the files' flags are.
        let mut seen = vec![0u32; params.len()];
        let mut seen_json = vec![0u32; params.len()];
        let mut json_at: Vec<std::ops::Range<usize>> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let from_json = json_at.iter().any(|r| r.contains(&i));
            let arg = &args[i];
            i += 1;
            let (flag, inline) = split_flag(arg, |short| {
                matches!(short, "h" | "v" | "l" | "j")
                    || params.iter().any(|&p| param(p).is_some_and(|p| p.short.as_deref() == Some(short)))
            });
            let mut value = |what: &str| -> Result<String, DocaError> {
                if let Some(v) = &inline {
                    return Ok(v.clone());
                }
                match args.get(i) {
                    Some(v) => {
                        i += 1;
                        Ok(v.clone())
                    }
                    None => {
                        eprintln!("{what} needs a value\n{help}");
                        Err(invalid())
                    }
                }
            };
            if flag == "-j" || flag == "--json" {
                // The file's flags take this argument's place, as if given here.
                let path = match value(&flag) {
                    Ok(v) => v,
                    Err(e) => return e,
                };
                let kinds: Vec<(String, c_uint)> =
                    params.iter().filter_map(|&p| param(p)).filter_map(|p| Some((p.long?, p.kind))).collect();
                match json_flags(&path, &kinds) {
                    Ok(flags) => {
                        json_at.push(i..i + flags.len());
                        args.splice(i..i, flags);
                    }
                    Err(why) => {
                        eprintln!("{flag} {path}: {why}\n{help}");
                        return invalid();
                    }
                }
                continue;
            }
            match flag.as_str() {
                "-h" | "--help" => {
                    crate::log::to_c_stdout(&help);
                    // exit(3): the C streams are flushed.
                    std::process::exit(0);
                }
                "-v" | "--version" => {
                    let r = match version {
                        // SAFETY: the application's callback, given NULL and its configuration.
                        Some(cb) => unsafe { cb(std::ptr::null_mut(), config) },
                        None => {
                            crate::log::to_c_stdout(&version_text());
                            DOCA_SUCCESS
                        }
                    };
                    if r != DOCA_SUCCESS {
                        return r;
                    }
                    std::process::exit(0);
                }
                "-l" | "--log-level" | "--sdk-log-level" => {
                    let v = match value(&flag) {
                        Ok(v) => v,
                        Err(e) => return e,
                    };
                    let n: u32 = v.trim().parse().unwrap_or(0);
                    let r = if flag == "--sdk-log-level" {
                        crate::log::set_sdk_level(n)
                    } else {
                        crate::log::set_app_level(n)
                    };
                    if r != DOCA_SUCCESS {
                        eprintln!("{flag}: {v:?} is not a log level\n{help}");
                        return r;
                    }
                    continue;
                }
                _ => {}
            }
            let found = params.iter().position(|&p| {
                param(p).is_some_and(|p| {
                    p.short.as_deref().is_some_and(|s| flag == format!("-{s}"))
                        || p.long.as_deref().is_some_and(|l| flag == format!("--{l}"))
                })
            });
            let Some(at) = found else {
                eprintln!("unknown flag {arg}\n{help}");
                return Error::NotSupported.code();
            };
            let Some(p) = param(params[at]) else {
                // a callback destroyed the parser meanwhile
                return crate::check::refuse(|| "the parser was destroyed by a callback".into());
            };
            let count = if from_json { &mut seen_json[at] } else { &mut seen[at] };
            *count += 1;
            if *count > 1 && !p.multiple {
                eprintln!("{flag} given twice\n{help}");
                return invalid();
            }
            let Some(cb) = p.cb else { return Error::Unexpected.code() };
            let r = match p.kind {
                TYPE_BOOLEAN => {
                    if inline.is_some() {
                        eprintln!("{flag} takes no value\n{help}");
                        return invalid();
                    }
                    let mut yes = true;
                    // SAFETY: the application's callback, given a bool and its configuration.
                    unsafe { cb(&mut yes as *mut bool as *mut c_void, config) }
                }
                TYPE_INT => {
                    let v = match value(&flag) {
                        Ok(v) => v,
                        Err(e) => return e,
                    };
                    let Ok(mut n) = v.trim().parse::<c_int>() else {
                        eprintln!("{flag}: {v:?} is not a number\n{help}");
                        return invalid();
                    };
                    // SAFETY: the application's callback, given an int and its configuration.
                    unsafe { cb(&mut n as *mut c_int as *mut c_void, config) }
                }
                _ => {
                    let v = match value(&flag) {
                        Ok(v) => v,
                        Err(e) => return e,
                    };
                    let Ok(s) = CString::new(v) else { return invalid() };
                    // SAFETY: the application's callback, given a C string valid for the call
                    // (it copies what it keeps, as DOCA documents) and its configuration.
                    unsafe { cb(s.as_ptr() as *mut c_void, config) }
                }
            };
            if r != DOCA_SUCCESS {
                return r;
            }
        }
        for (at, &p) in params.iter().enumerate() {
            if let Some(p) = param(p) {
                if p.mandatory && seen[at] + seen_json[at] == 0 {
                    let name = p.long.as_deref().or(p.short.as_deref()).unwrap_or("?");
                    eprintln!("missing mandatory flag {name}\n{help}");
                    return invalid();
                }
            }
        }
        match validation {
            // SAFETY: the application's callback, given its configuration.
            Some(cb) => unsafe { cb(config) },
            None => DOCA_SUCCESS,
        }
    })
}

/// The flags a JSON configuration file gives (`-j/--json <file>`), as command-line arguments:
/// its `doca_general_flags` (`log-level`, `sdk-log-level`) and `doca_program_flags` objects, keyed
/// by long names (`kinds`: the program's, with each one's type). A string or number is the flag's
/// value; `true` gives a switch, `false` leaves it out; an array gives a flag of multiplicity once
/// per element. `doca_dpdk_flags` has no meaning here and is left aside. C and C++ comments are
/// allowed, as DOCA's configuration files carry them. A file that cannot be read or parsed, or a
/// value of the wrong shape, is named in the error.
fn json_flags(path: &str, kinds: &[(String, c_uint)]) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let doc: serde_json::Value =
        serde_json::from_str(&without_comments(&text)).map_err(|e| format!("not JSON: {e}"))?;
    let serde_json::Value::Object(sections) = doc else { return Err("not a JSON object".into()) };
    let mut out = Vec::new();
    for (section, flags) in &sections {
        let general = match section.as_str() {
            "doca_general_flags" => {
                if let Some(other) = flags
                    .as_object()
                    .and_then(|f| f.keys().find(|k| !matches!(k.as_str(), "log-level" | "sdk-log-level")))
                {
                    return Err(format!(
                        "doca_general_flags.{other}: not a general flag (log-level, sdk-log-level)"
                    ));
                }
                true
            }
            "doca_program_flags" => false,
            "doca_dpdk_flags" => continue,
            other => return Err(format!("unknown section {other:?}")),
        };
        let serde_json::Value::Object(flags) = flags else {
            return Err(format!("{section} is not an object"));
        };
        for (name, value) in flags {
            if matches!(name.as_str(), "json" | "help" | "version") {
                return Err(format!("{section}.{name}: a command-line flag only"));
            }
            let switch = !general && kinds.iter().any(|(l, k)| l == name && *k == TYPE_BOOLEAN);
            let values = match value {
                serde_json::Value::Array(items) => items.iter().collect(),
                one => vec![one],
            };
            for v in values {
                match v {
                    serde_json::Value::Bool(true) if switch => out.push(format!("--{name}")),
                    serde_json::Value::Bool(false) if switch => {}
                    serde_json::Value::String(s) if !switch => out.extend([format!("--{name}"), s.clone()]),
                    serde_json::Value::Number(n) if !switch => {
                        out.extend([format!("--{name}"), n.to_string()])
                    }
                    other => return Err(format!("{section}.{name}: {other} is not a value for this flag")),
                }
            }
        }
    }
    Ok(out)
}

/// `text` with its `//` and `/* */` comments blanked (outside strings), for a JSON parser.
fn without_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => out.extend(chars.next()),
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for c in chars.by_ref() {
                    if last == '*' && c == '/' {
                        break;
                    }
                    if c == '\n' {
                        out.push('\n');
                    }
                    last = c;
                }
                out.push(' ');
            }
            _ => out.push(c),
        }
    }
    out
}

/// `doca_argp_destroy`: frees the parameters; `BAD_STATE` when not initialized.
#[no_mangle]
pub extern "C" fn doca_argp_destroy() -> DocaError {
    guarded("doca_argp_destroy", || {
        let Some(argp) = ARGP.lock().take() else { return Error::BadState.code() };
        for p in argp.params {
            // SAFETY: PARAMS only holds DocaArgpParam handles; the parser owned these.
            drop(unsafe { PARAMS.remove(p) });
        }
        DOCA_SUCCESS
    })
}
