// Build-script code: a panic is how an error reaches the user.
#![allow(clippy::expect_used, clippy::unwrap_used)]

//! Builds the first-party plugins (`plugins/`) for wasm32-wasip2 so the host
//! can embed them (see `roost-build`), and precompiles each for this
//! machine with the runtime's own engine config, sealed, so a first run
//! loads them at once instead of compiling for seconds
//! (`roost-engine-config`).

use std::path::{Path, PathBuf};

/// The first-party components, by file stem (`first_party.rs` embeds
/// `<stem>.wasm`, `<stem>.sealed` and `<stem>.blake3`).
const COMPONENTS: &[&str] = &["fs_tools", "secret_guard", "protected_paths"];

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest_dir)
        .ancestors()
        .nth(2)
        .expect("host/core/ is two levels below the repository root")
        .to_path_buf();
    let plugins = root.join("plugins");
    println!("cargo:rerun-if-env-changed=ROOST_FIRST_PARTY_DIR");
    // Packagers (and offline rebuilds) may point at prebuilt components.
    let dir = match std::env::var("ROOST_FIRST_PARTY_DIR") {
        Ok(dir) => PathBuf::from(dir),
        Err(_) => {
            roost_build::rerun_if_changed(&[&plugins, &root.join("sdk"), &root.join("wit")]);
            let target = roost_build::outer_target_dir(&root).join("wasm");
            roost_build::build_wasm_workspace(&plugins.join("Cargo.toml"), &target)
        }
    };
    println!("cargo:rustc-env=ROOST_FIRST_PARTY_DIR={}", dir.display());
    // Components handed in from outside are inputs to watch. Those the
    // nested build above writes are not: it runs during this script, so
    // their mtimes are newer than the run cargo records, and watching them
    // made the next `cargo build` rerun this script and recompile
    // roost-core and everything above it with nothing changed. Their
    // sources (plugins/, sdk/, wit/) are watched instead.
    let external = std::env::var_os("ROOST_FIRST_PARTY_DIR").is_some();
    precompile(&dir, external);
}

/// Precompile and seal every first-party component into `$OUT_DIR`;
/// `watch`: rerun when a component changes.
fn precompile(dir: &Path, watch: bool) {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    for stem in COMPONENTS {
        let src = dir.join(format!("{stem}.wasm"));
        if watch {
            println!("cargo:rerun-if-changed={}", src.display());
        }
        let wasm =
            std::fs::read(&src).unwrap_or_else(|e| panic!("cannot read {}: {e}", src.display()));
        let started = std::time::Instant::now();
        let sealed = roost_engine_config::precompile(&wasm)
            .unwrap_or_else(|e| panic!("cannot precompile {}: {e:#}", src.display()));
        roost_build::progress(&format!(
            "precompiled {stem}.wasm ({} KB) for this machine in {}",
            wasm.len() / 1000,
            roost_build::elapsed(started)
        ));
        let dst = out.join(format!("{stem}.sealed"));
        std::fs::write(&dst, sealed)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", dst.display()));
        // The component's BLAKE3 hash, so a start need not hash the bytes
        // the binary embeds.
        let dst = out.join(format!("{stem}.blake3"));
        std::fs::write(&dst, blake3::hash(&wasm).as_bytes())
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", dst.display()));
    }
}
