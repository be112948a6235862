//! Builds a Python plugin into a component with componentize-py (PyPI).

use std::path::{Path, PathBuf};
use std::process::Command;

/// Run `componentize-py` on `app_dir` (module `module`) against `world` of
/// the WIT package in `wit_dir`, writing `out`. Skips the work when `out` is
/// newer than every input. Panics with a clear message when componentize-py
/// is missing or fails (build-script code).
pub fn componentize(
    app_dir: &Path,
    wit_dir: &Path,
    world: &str,
    module: &str,
    out: &Path,
) -> PathBuf {
    crate::rerun_if_changed(&[app_dir, wit_dir]);
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("create {}: {e}", parent.display()));
    }
    let status = Command::new("componentize-py")
        .arg("-d")
        .arg(wit_dir)
        .arg("-w")
        .arg(world)
        .arg("componentize")
        .arg("-p")
        .arg(app_dir)
        .arg(module)
        .arg("-o")
        .arg(out)
        .status()
        .unwrap_or_else(|e| {
            panic!("componentize-py not found ({e}); install it with `pip install componentize-py==0.25.1`")
        });
    if !status.success() {
        panic!(
            "componentize-py failed for {} ({status})",
            app_dir.display()
        );
    }
    out.to_path_buf()
}
