//! Builds a JavaScript plugin into a component with componentize-js (npm).
//! Used by the tests at run time (not by a build script), so a plain
//! `cargo build` of the workspace never needs Node.

use std::path::{Path, PathBuf};
use std::process::Command;

/// In `project` (a folder with `package.json` and `package-lock.json`),
/// install the pinned toolchain unless it is there, and build `entry`
/// against `world` of the WIT package in `wit_dir` into `out`. Skips the
/// work when `out` is newer than every input; writes beside `out` and
/// renames, so concurrent callers never see half a component.
pub fn componentize(
    project: &Path,
    entry: &Path,
    wit_dir: &Path,
    world: &str,
    out: &Path,
) -> Result<PathBuf, String> {
    let inputs = [entry, wit_dir, &project.join("package.json")];
    if crate::output::is_fresh(out, &inputs) {
        return Ok(out.to_path_buf());
    }
    let cli = project.join("node_modules/.bin/componentize-js");
    if !cli.is_file() {
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund"])
            .current_dir(project)
            .status()
            .map_err(|e| format!("cannot run npm (install Node.js and npm): {e}"))?;
        if !status.success() {
            return Err(format!(
                "npm install failed in {} ({status})",
                project.display()
            ));
        }
    }
    crate::output::build_into(
        out,
        &format!("componentize-js for {}", entry.display()),
        |tmp| {
            let mut cmd = Command::new(&cli);
            cmd.arg(entry)
                .arg("--wit")
                .arg(wit_dir)
                .arg("--world-name")
                .arg(world)
                .arg("--out")
                .arg(tmp)
                .current_dir(project);
            cmd
        },
    )
}
