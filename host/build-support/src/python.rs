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
    if crate::output::is_fresh(out, &[app_dir, wit_dir]) {
        return Ok(out.to_path_buf());
    }
    let tool = find_componentize_py().ok_or(
        "componentize-py not found; install it with `python3 -m pip install --user componentize-py==0.25.1`",
    )?;
    crate::output::build_into(
        out,
        &format!("componentize-py for {}", app_dir.display()),
        |tmp| {
            let mut cmd = Command::new(&tool);
            // No __pycache__ beside the sources: a fixture folder a build
            // script watches would look changed after every test run.
            cmd.env("PYTHONDONTWRITEBYTECODE", "1");
            cmd.arg("-d").arg(wit_dir).arg("-w").arg(world);
            for name in import_names {
                cmd.arg("--import-interface-name").arg(name);
            }
            cmd.arg("componentize")
                .arg("-p")
                .arg(app_dir)
                .arg(module)
                .arg("-o")
                .arg(tmp);
            cmd
        },
    )
}
