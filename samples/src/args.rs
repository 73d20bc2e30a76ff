//! The command line every comm-channel sample shares, as DOCA's argp defines it.

use clap::{ArgAction, CommandFactory, FromArgMatches, Parser};

use doca_common::log::LogLevel;

/// Longest PCI address argument DOCA accepts ("dddd:bb:dd.f").
pub const MAX_PCI_ADDR_LEN: usize = 12;
/// Longest text argument DOCA accepts.
pub const MAX_TEXT_LEN: usize = 4096;

// The flags: `-p/--pci-addr`, `-r/--rep-pci`, `-t/--text`, `-l/--log-level`,
// `--sdk-log-level`, `-h/--help`, `-v/--version`.
/// A DOCA Comm Channel sample.
#[derive(Parser, Debug, Clone)]
#[command(version, disable_version_flag = true)]
pub struct CcArgs {
    /// DOCA Comm Channel device PCI address
    #[arg(short = 'p', long = "pci-addr")]
    pub pci_addr: Option<String>,
    /// DOCA Comm Channel device representor PCI address (needed only on DPU)
    #[arg(short = 'r', long = "rep-pci")]
    pub rep_pci: Option<String>,
    /// Text to be sent to the other side of channel
    #[arg(short = 't', long = "text")]
    pub text: Option<String>,
    /// Set the (numeric) log level for the program <10=DISABLE, 20=CRITICAL, 30=ERROR,
    /// 40=WARNING, 50=INFO, 60=DEBUG, 70=TRACE>
    #[arg(short = 'l', long = "log-level", default_value = "50")]
    pub log_level: LogLevel,
    /// Set the (numeric) log level for the SDK <10=DISABLE, 20=CRITICAL, 30=ERROR,
    /// 40=WARNING, 50=INFO, 60=DEBUG, 70=TRACE>
    #[arg(long = "sdk-log-level", default_value = "40")]
    pub sdk_log_level: LogLevel,
    /// Print program version information
    #[arg(short = 'v', long = "version", action = ArgAction::Version)]
    pub version: Option<bool>,
}

/// The settings a sample runs with, after defaults and checks.
#[derive(Debug, Clone)]
pub struct CcConfig {
    /// Device PCI address.
    pub pci_addr: String,
    /// Representor PCI address (server side).
    pub rep_pci: String,
    /// The text to send.
    pub text: String,
}

impl CcArgs {
    /// Applies the sample's defaults and DOCA's length checks (an error message on failure).
    pub fn config(&self, pci: &str, rep: &str, text: &str) -> Result<CcConfig, String> {
        let cfg = CcConfig {
            pci_addr: self.pci_addr.clone().unwrap_or_else(|| pci.to_string()),
            rep_pci: self.rep_pci.clone().unwrap_or_else(|| rep.to_string()),
            text: self.text.clone().unwrap_or_else(|| text.to_string()),
        };
        for (what, v) in [("device PCI address", &cfg.pci_addr), ("representor PCI address", &cfg.rep_pci)] {
            if v.len() > MAX_PCI_ADDR_LEN {
                return Err(format!("Entered {what} exceeding the maximum size of {MAX_PCI_ADDR_LEN}"));
            }
        }
        if cfg.text.len() > MAX_TEXT_LEN {
            return Err(format!("Entered text exceeded buffer size of: {MAX_TEXT_LEN}"));
        }
        Ok(cfg)
    }
}

/// Parses the command line, sets up logging, applies defaults; exits 1 with DOCA's message
/// on a bad argument.
pub fn init(prog: &'static str, pci: &str, rep: &str, text: &str) -> CcConfig {
    // DOCA's argp exits with EXIT_FAILURE on a bad argument (help and version exit 0).
    let parsed = CcArgs::command()
        .name(prog)
        .bin_name(prog)
        .try_get_matches()
        .and_then(|m| CcArgs::from_arg_matches(&m));
    let args = match parsed {
        Ok(a) => a,
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let _ = e.print();
            std::process::exit(1);
        }
    };
    doca_common::log::init(args.log_level, args.sdk_log_level);
    match args.config(pci, rep, text) {
        Ok(cfg) => cfg,
        Err(msg) => {
            tracing::error!("{msg}");
            std::process::exit(1);
        }
    }
}
