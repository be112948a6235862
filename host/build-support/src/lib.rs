//! Used from build scripts (`host/core/build.rs`, `tests/build.rs`) so that a plain
//! `cargo build` / `cargo test` also builds the plugin components, the way
//! substrate's wasm-builder does: a nested `cargo build` for
//! `wasm32-wasip2` in a target directory of its own.

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
/// Panics with the nested cargo's output on failure: this is build-script
/// code, where a panic is how an error reaches the user.
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
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run cargo to build {}: {e}", manifest.display()));
    if !out.status.success() {
        panic!(
            "building wasm plugins in {} failed (is the {TARGET} target installed? `rustup target add {TARGET}`):\n{}",
            manifest.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    target_dir.join(TARGET).join("release")
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
