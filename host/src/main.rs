//! The `roost` binary; all behaviour lives in the library's `cli` module.

fn main() -> std::process::ExitCode {
    roost::cli::main()
}
