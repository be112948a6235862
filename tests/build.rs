//! Builds the fixture plugins (Rust ones with cargo, the Python one with
//! componentize-py) so `cargo test` runs against real components.

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

    let py_out = target.join("python");
    let python = roost_build::python::componentize(
        &fixtures.join("python-plugin"),
        &root.join("wit"),
        "tool-plugin",
        "app",
        &py_out.join("python_plugin.wasm"),
    );
    println!("cargo:rustc-env=ROOST_PYTHON_PLUGIN={}", python.display());
}
