//! `doca_comm_channel_server`: DOCA's legacy Comm Channel server sample (`doca_comm_channel_ep_*`).

use std::process::ExitCode;

use doca_samples::{args, comm_channel};
use tracing::{error, info};

fn main() -> ExitCode {
    let cfg = args::init("doca_comm_channel_server", "03:00.0", "3b:00.0", "Message from the server");
    info!("Starting the sample");
    match comm_channel::run_server(&cfg.pci_addr, &cfg.rep_pci, &cfg.text) {
        Ok(()) => {
            info!("Sample finished successfully");
            ExitCode::SUCCESS
        }
        Err(e) => {
            error!("comm_channel_server() encountered an error: {e}");
            error!("Sample finished with errors");
            ExitCode::FAILURE
        }
    }
}
