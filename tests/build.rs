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
    write_foreach(here);
    println!("cargo:rustc-env=ROOST_WASM_TARGET_DIR={}", target.display());
}

/// `$OUT_DIR/foreach.rs`: `foreach_route!` over every route of
/// `escape-routes.txt` and `foreach_fixture!` over every fixture component
/// under `fixtures/plugins/`, so the test binary can require, at build
/// time, a named test for each (in the style of wasmtime's
/// `foreach_p2!(assert_test_exists)`).
fn write_foreach(here: &Path) {
    let routes_file = here.join("escape-routes.txt");
    println!("cargo:rerun-if-changed={}", routes_file.display());
    let routes = std::fs::read_to_string(&routes_file).expect("tests/escape-routes.txt");
    let mut out = String::from(
        "/// Calls `$mac!(case, expectation)` for every route of `tests/escape-routes.txt`.\n\
         #[macro_export]\nmacro_rules! foreach_route {\n    ($mac:ident) => {\n",
    );
    for line in routes.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let (Some(case), Some(expect)) = (words.first(), words.get(1)) else {
            panic!("escape-routes.txt: `{line}` has no expectation");
        };
        if *expect == "door" {
            // A door out of the WebAssembly sandbox: a test of that name
            // in the module the line names.
            let Some(module) = words.get(2) else {
                panic!("escape-routes.txt: `{line}`: a door names its test module");
            };
            out.push_str(&format!("        $mac!({case}, door, {module});\n"));
        } else {
            out.push_str(&format!("        $mac!({case}, {expect});\n"));
        }
    }
    out.push_str("    };\n}\n\n");
    out.push_str(
        "/// Calls `$mac!(name)` for every fixture component under `tests/fixtures/plugins/` (dashes as underscores).\n\
         #[macro_export]\nmacro_rules! foreach_fixture {\n    ($mac:ident) => {\n",
    );
    let plugins = here.join("fixtures").join("plugins");
    let mut names: Vec<String> = std::fs::read_dir(&plugins)
        .expect("tests/fixtures/plugins")
        .filter_map(Result::ok)
        .filter(|e| e.path().join("Cargo.toml").exists())
        .filter_map(|e| e.file_name().to_str().map(|n| n.replace('-', "_")))
        .collect();
    names.sort();
    for n in names {
        out.push_str(&format!("        $mac!({n});\n"));
    }
    out.push_str("    };\n}\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("foreach.rs");
    std::fs::write(dest, out).expect("write foreach.rs");
}
