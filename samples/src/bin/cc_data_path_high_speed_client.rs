//! `doca_cc_data_path_client`: DOCA's fast-path client sample (runs on the host side).

use std::process::ExitCode;

use doca_samples::{args, cc_data_path};
use tracing::{error, info};

fn main() -> ExitCode {
    let cfg = args::init("doca_cc_data_path_client", "b1:00.0", "", "Message from the client");
    info!("Starting the sample");
    match cc_data_path::run_client(&cfg.pci_addr, &cfg.text) {
        Ok(()) => {
            info!("Sample finished successfully");
            ExitCode::SUCCESS
        }
        Err(e) => {
            error!("cc_data_path_high_speed_client() encountered an error: {e}");
            error!("Sample finished with errors");
            ExitCode::FAILURE
        }
    }
}
