//! Builds a Python plugin into a component with componentize-py (PyPI).
//! Used by the tests at run time (not by a build script), so a plain
//! `cargo build` of the workspace never needs Python.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `componentize-py` is: on `PATH`, or where `pip install --user`
/// and `pip install` put scripts (`~/.local/bin`, Python's scripts dir),
/// which are often not on `PATH`.
pub fn find_componentize_py() -> Option<PathBuf> {
    let on_path = Command::new("componentize-py")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if on_path {
        return Some(PathBuf::from("componentize-py"));
    }
    let mut candidates = Vec::new();
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(Path::new(&home).join(".local/bin/componentize-py"));
    }
    for scheme in ["", "posix_user"] {
        let code = if scheme.is_empty() {
            "import sysconfig; print(sysconfig.get_path('scripts'))".to_owned()
        } else {
            format!("import sysconfig; print(sysconfig.get_path('scripts', '{scheme}'))")
        };
        if let Ok(o) = Command::new("python3").args(["-c", &code]).output()
            && o.status.success()
        {
            let dir = String::from_utf8_lossy(&o.stdout).trim().to_owned();
            candidates.push(Path::new(&dir).join("componentize-py"));
        }
    }
    candidates.into_iter().find(|p| p.is_file())
}

/// Run `componentize-py` on `app_dir` (module `module`) against `world` of
/// the WIT package in `wit_dir`, writing `out`; `import_names` are its
/// `--import-interface-name` renames (`roost:plugin/types@0.2.0=types`: the
/// world has three interfaces named `types`, and Roost's keeps the name). Skips the work when `out` is
/// newer than every input. The output is written beside `out` and renamed
/// into place, so concurrent callers never see half a component.
pub fn componentize(
    app_dir: &Path,
    wit_dir: &Path,
    world: &str,
    module: &str,
    import_names: &[&str],
    out: &Path,
) -> Result<PathBuf, String> {
    if is_fresh(out, &[app_dir, wit_dir]) {
        return Ok(out.to_path_buf());
    }
    let tool = find_componentize_py().ok_or(
        "componentize-py not found; install it with `python3 -m pip install --user componentize-py==0.25.1`",
    )?;
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
    }
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    let mut cmd = Command::new(&tool);
    cmd.arg("-d").arg(wit_dir).arg("-w").arg(world);
    for name in import_names {
        cmd.arg("--import-interface-name").arg(name);
    }
    let status = cmd
        .arg("componentize")
        .arg("-p")
        .arg(app_dir)
        .arg(module)
        .arg("-o")
        .arg(&tmp)
        .status()
        .map_err(|e| format!("cannot run {}: {e}", tool.display()))?;
    if !status.success() {
        return Err(format!(
            "componentize-py failed for {} ({status})",
            app_dir.display()
        ));
    }
    std::fs::rename(&tmp, out).map_err(|e| format!("rename to {}: {e}", out.display()))?;
    Ok(out.to_path_buf())
}

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
