//! `doca_emu` itself (the same code as the installed tool), built into this crate so that the
//! tests run it as a real process (`CARGO_BIN_EXE_emu_cli`).

fn main() -> std::process::ExitCode {
    doca_emu_tool::cli::main()
}
