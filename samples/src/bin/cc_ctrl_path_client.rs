//! `doca_cc_ctrl_path_client`: DOCA's control-path client sample (runs on the host side).

use std::process::ExitCode;

use doca_samples::{args, cc_ctrl_path};
use tracing::{error, info};

fn main() -> ExitCode {
    let cfg = args::init("doca_cc_ctrl_path_client", "b1:00.0", "", "Message from the client");
    info!("Starting the sample");
    match cc_ctrl_path::run_client(&cfg.pci_addr, &cfg.text) {
        Ok(()) => {
            info!("Sample finished successfully");
            ExitCode::SUCCESS
        }
        Err(e) => {
            error!("cc_ctrl_path_client() encountered an error: {e}");
            error!("Sample finished with errors");
            ExitCode::FAILURE
        }
    }
}
