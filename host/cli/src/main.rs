//! The `roost` binary; all behaviour lives in the `roost_cli` library.

/// One process runs many tasks whose futures move between runtime
/// workers; mimalloc frees across threads without the arena locks glibc
/// takes (see the workspace `Cargo.toml`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    roost_cli::main()
}
