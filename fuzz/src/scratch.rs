//! One scratch directory per fuzzing process (targets that read files
//! through the production path write the input there first), and one
//! runtime for the async targets.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A directory this process owns for its life (removed at exit only by
/// the OS's temp cleaning: libFuzzer exits without unwinding).
pub fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(
        || match tempfile::Builder::new().prefix("roost-fuzz-").tempdir() {
            Ok(d) => d.keep(),
            Err(e) => panic!("cannot make a scratch directory: {e}"),
        },
    )
}

/// A fresh empty directory `name` under [`dir`].
pub fn fresh(name: &str) -> PathBuf {
    let path = dir().join(name);
    let _ = std::fs::remove_dir_all(&path);
    if let Err(e) = std::fs::create_dir_all(&path) {
        panic!("cannot make {}: {e}", path.display());
    }
    path
}

/// The process's runtime (current-thread: a fuzz run is one thread).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => panic!("cannot start a runtime: {e}"),
        }
    })
}
