// Build-script code: a panic is how an error reaches the user.
#![allow(clippy::expect_used, clippy::unwrap_used)]

//! Builds the first-party plugins (`plugins/`) for wasm32-wasip2 so the host
//! can embed them; see `roost-build`.

use std::path::Path;

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
    if let Ok(dir) = std::env::var("ROOST_FIRST_PARTY_DIR") {
        println!("cargo:rustc-env=ROOST_FIRST_PARTY_DIR={dir}");
        return;
    }
    roost_build::rerun_if_changed(&[&plugins, &root.join("sdk"), &root.join("wit")]);
    let target = roost_build::outer_target_dir(&root).join("wasm");
    let out = roost_build::build_wasm_workspace(&plugins.join("Cargo.toml"), &target);
    println!("cargo:rustc-env=ROOST_FIRST_PARTY_DIR={}", out.display());
}
