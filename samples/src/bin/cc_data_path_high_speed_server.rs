//! `doca_cc_data_path_server`: DOCA's fast-path server sample (runs on the DPU side).

use std::process::ExitCode;

use doca_samples::{args, cc_data_path};
use tracing::{error, info};

fn main() -> ExitCode {
    // DOCA's server sample defaults its text to "Message from the client" too (sic).
    let cfg = args::init("doca_cc_data_path_server", "03:00.0", "b1:00.0", "Message from the client");
    info!("Starting the sample");
    match cc_data_path::run_server(&cfg.pci_addr, &cfg.rep_pci, &cfg.text) {
        Ok(()) => {
            info!("Sample finished successfully");
            ExitCode::SUCCESS
        }
        Err(e) => {
            error!("cc_data_path_high_speed_server() encountered an error: {e}");
            error!("Sample finished with errors");
            ExitCode::FAILURE
        }
    }
}
