//! The `roost` binary; all behaviour lives in the `roost_cli` library.

fn main() -> std::process::ExitCode {
    roost_cli::main()
}
