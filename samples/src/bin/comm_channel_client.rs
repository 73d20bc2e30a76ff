//! `doca_comm_channel_client`: DOCA's legacy Comm Channel client sample (`doca_comm_channel_ep_*`).

use std::process::ExitCode;

use doca_samples::{args, comm_channel};
use tracing::{error, info};

fn main() -> ExitCode {
    let cfg = args::init("doca_comm_channel_client", "3b:00.0", "", "Message from the client");
    info!("Starting the sample");
    match comm_channel::run_client(&cfg.pci_addr, &cfg.text) {
        Ok(()) => {
            info!("Sample finished successfully");
            ExitCode::SUCCESS
        }
        Err(e) => {
            error!("comm_channel_client() encountered an error: {e}");
            error!("Sample finished with errors");
            ExitCode::FAILURE
        }
    }
}
