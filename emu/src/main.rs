//! `doca_emu`: see and steer a running emulation (see the crate documentation).

fn main() -> std::process::ExitCode {
    doca_emu_tool::cli::main()
}
