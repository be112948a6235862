//! Builds the Rust fixture plugins so `cargo test` runs against real
//! components. The Python fixture is built by the tests themselves
//! (`python_plugin_wasm`), so building the workspace never needs Python.

use std::path::Path;

fn main() {
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let here = Path::new(&manifest_dir);
    let root = here.parent().expect("tests/ has a parent").to_path_buf();
    let fixtures = here.join("fixtures");
    roost_build::rerun_if_changed(&[&fixtures, &root.join("sdk"), &root.join("wit")]);
    let target = roost_build::outer_target_dir(&root).join("wasm");
    let out = roost_build::build_wasm_workspace(&fixtures.join("Cargo.toml"), &target);
    println!("cargo:rustc-env=ROOST_FIXTURES_DIR={}", out.display());
    println!("cargo:rustc-env=ROOST_WASM_TARGET_DIR={}", target.display());
}
