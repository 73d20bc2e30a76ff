//! `doca_graph`: DOCA's graph sample (two DMA context nodes and a user node, 10 instances).

use std::process::ExitCode;

use doca_common::log::LogLevel;
use tracing::{error, info};

fn main() -> ExitCode {
    doca_common::log::init(LogLevel::APP_DEFAULT, LogLevel::SDK_DEFAULT);
    info!("Starting the sample");
    match doca_samples::graph::run() {
        Ok(()) => {
            info!("Sample finished successfully");
            ExitCode::SUCCESS
        }
        Err(e) => {
            error!("run_graph_sample() encountered an error: {}", e.descr());
            info!("Sample finished with errors");
            ExitCode::FAILURE
        }
    }
}
