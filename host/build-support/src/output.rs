//! What the component builders share about their output: whether it is
//! already up to date, and writing it so no one sees half of it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether `out` exists and is newer than every file under `inputs`.
pub fn is_fresh(out: &Path, inputs: &[&Path]) -> bool {
    let Ok(built) = std::fs::metadata(out).and_then(|m| m.modified()) else {
        return false;
    };
    fn newest(p: &Path) -> Option<std::time::SystemTime> {
        let m = std::fs::metadata(p).ok()?;
        let mut t = m.modified().ok()?;
        if m.is_dir() {
            for e in std::fs::read_dir(p).ok()?.flatten() {
                if let Some(c) = newest(&e.path()) {
                    t = t.max(c);
                }
            }
        }
        Some(t)
    }
    inputs.iter().all(|i| newest(i).is_some_and(|t| t <= built))
}

/// Run the command `make` returns for a temporary path beside `out`, then
/// rename what it wrote to `out`, so concurrent callers never see half a
/// component. `what` names the build in errors.
pub(crate) fn build_into(
    out: &Path,
    what: &str,
    make: impl FnOnce(&Path) -> Command,
) -> Result<PathBuf, String> {
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
    }
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    let mut cmd = make(&tmp);
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run {}: {e}", cmd.get_program().to_string_lossy()))?;
    if !status.success() {
        return Err(format!("{what} failed ({status})"));
    }
    std::fs::rename(&tmp, out).map_err(|e| format!("rename to {}: {e}", out.display()))?;
    Ok(out.to_path_buf())
}
