//! Used from build scripts (`host/core/build.rs`, `tests/build.rs`) so that a plain
//! `cargo build` / `cargo test` also builds the plugin components, the way
//! substrate's wasm-builder does: a nested `cargo build` for
//! `wasm32-wasip2` in a target directory of its own.

#![forbid(unsafe_code)]

pub mod js;
pub mod output;
pub mod python;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The wasm target every Roost plugin is built for.
pub const TARGET: &str = "wasm32-wasip2";

/// Environment variables of the outer cargo that must not leak into the
/// nested build (they carry host flags, wrappers or the outer target dir).
const SCRUBBED_ENV: &[&str] = &[
    "CARGO_ENCODED_RUSTFLAGS",
    "RUSTFLAGS",
    "CARGO_BUILD_RUSTFLAGS",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_TARGET",
    "CARGO_BUILD_TARGET_DIR",
    "RUSTC_WORKSPACE_WRAPPER",
    "RUSTC_WRAPPER",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_LLVM_COV",
    "LLVM_PROFILE_FILE",
    "CARGO_INCREMENTAL",
];

/// Directory the outer build writes to (`CARGO_TARGET_DIR` or `<workspace>/target`).
pub fn outer_target_dir(workspace_root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root.join("target"))
}

/// Build every crate of the wasm workspace at `manifest` in release mode
/// into `target_dir` and return the directory holding the `.wasm` files.
/// The nested cargo's progress goes to the build script's stderr, which
/// cargo shows live with `-vv` (and in full when the build fails); a line
/// on stdout says what is being built and, after, how long it took. Panics
/// on failure: this is build-script code, where a panic is how an error
/// reaches the user.
pub fn build_wasm_workspace(manifest: &Path, target_dir: &Path) -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.arg("build")
        .arg("--release")
        .arg("--workspace")
        .arg("--target")
        .arg(TARGET)
        .arg("--manifest-path")
        .arg(manifest)
        .arg("--target-dir")
        .arg(target_dir);
    for var in SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    for (key, _) in std::env::vars_os() {
        if let Some(k) = key.to_str()
            && (k.starts_with("CARGO_PROFILE_")
                || k.starts_with("CARGO_CFG_")
                || k.starts_with("CARGO_FEATURE_"))
        {
            cmd.env_remove(k);
        }
    }
    // Its stdout carries nothing; its stderr (progress, errors) is the
    // build script's.
    cmd.stdout(std::process::Stdio::null());
    progress(&format!(
        "building the components of {} for {TARGET} (a nested release build; a few minutes the first time, seconds after)",
        manifest.display()
    ));
    let started = std::time::Instant::now();
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo to build {}: {e}", manifest.display()));
    if !status.success() {
        panic!(
            "building wasm plugins in {} failed ({status}; its output is above; is the {TARGET} target installed? `rustup target add {TARGET}`)",
            manifest.display(),
        );
    }
    progress(&format!(
        "built the components of {} in {}",
        manifest.display(),
        elapsed(started)
    ));
    target_dir.join(TARGET).join("release")
}

/// One line of a build script's progress: on stdout, which cargo shows live
/// with `-vv` and keeps in the build's `output` file. Not a
/// `cargo:warning`: those are shown only once the script has finished, and
/// would flag a normal build as having a problem.
pub fn progress(line: &str) {
    println!("roost-build: {line}");
}

/// `12.3 s` since `started`.
pub fn elapsed(started: std::time::Instant) -> String {
    format!("{:.1} s", started.elapsed().as_secs_f64())
}

/// Tell cargo to rebuild when anything under these paths changes.
pub fn rerun_if_changed(paths: &[&Path]) {
    for p in paths {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    for var in ["CARGO_TARGET_DIR", "ROOST_SKIP_WASM_BUILD"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
}
