//! `roost plugin new NAME --lang rust`: a plugin folder a third party
//! builds on its own. It holds the plugin crate (a tool with typed
//! arguments and a unit test), the Roost SDK and the WIT it is built from
//! (copied out of this binary, so it needs nothing from Roost's
//! repository), a `plugin.toml`, and a README with the build steps.

use std::path::Path;

use anyhow::{Context, bail};

/// The SDK and WIT as this Roost ships them.
const SDK_LIB: &str = include_str!("../../../sdk/src/lib.rs");
const SDK_HOST: &str = include_str!("../../../sdk/src/host.rs");
const SDK_WORKSPACE: &str = include_str!("../../../sdk/src/workspace.rs");
const SDK_HTTP: &str = include_str!("../../../sdk/src/http.rs");
/// The WIT package and the WASI packages its worlds use.
const WIT: &[(&str, &str)] = &[
    ("wit/roost.wit", include_str!("../../../wit/roost.wit")),
    (
        "wit/deps/cli.wit",
        include_str!("../../../wit/deps/cli.wit"),
    ),
    (
        "wit/deps/clocks.wit",
        include_str!("../../../wit/deps/clocks.wit"),
    ),
    (
        "wit/deps/filesystem.wit",
        include_str!("../../../wit/deps/filesystem.wit"),
    ),
    (
        "wit/deps/http.wit",
        include_str!("../../../wit/deps/http.wit"),
    ),
    ("wit/deps/io.wit", include_str!("../../../wit/deps/io.wit")),
    (
        "wit/deps/random.wit",
        include_str!("../../../wit/deps/random.wit"),
    ),
    (
        "wit/deps/sockets.wit",
        include_str!("../../../wit/deps/sockets.wit"),
    ),
];
/// The new plugin's tool (a file of its own: it is the guest's code).
const RUST_LIB: &str = include_str!("../templates/rust/lib.rs");

/// The SDK's manifest outside Roost's workspace: plain versions.
const SDK_MANIFEST: &str = r#"[package]
name = "roost-sdk"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
wit-bindgen = "0.63"
serde = { version = "1", features = ["derive"] }
serde_json = "1"
schemars = "1"
"#;

/// Write a new Rust plugin named `name` into `dir` (which must not exist).
pub fn rust(name: &str, dir: &Path) -> anyhow::Result<()> {
    roost_core::install::manifest::check_name(name).map_err(anyhow::Error::msg)?;
    if dir.exists() {
        bail!("{} already exists", dir.display());
    }
    let krate = name.replace('-', "_");
    let wit_version = roost_core::install::manifest::SUPPORTED_WIT
        .first()
        .copied()
        .unwrap_or_default();
    let files: Vec<(&str, String)> = vec![
        (
            "Cargo.toml",
            format!(
                r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
roost-sdk = {{ path = "roost-sdk" }}
serde = {{ version = "1", features = ["derive"] }}
schemars = "1"

# Its own workspace, wherever the folder is.
[workspace]

[profile.release]
opt-level = "s"
strip = true
"#
            ),
        ),
        ("src/lib.rs", RUST_LIB.to_owned()),
        (
            "plugin.toml",
            format!(
                r#"[plugin]
name = "{name}"
version = "0.1.0"
description = "Counts words in workspace files"
authors = []
world = "tool-plugin"
wit_version = "{wit_version}"
component = "target/wasm32-wasip2/release/{krate}.wasm"
# sha256 = "…"  # optional while developing; set it when you publish

[capabilities]
read = "workspace"
write = false
network = []
secrets = []
"#
            ),
        ),
        (
            "README.md",
            format!(
                "# {name}\n\nA Roost tool plugin.\n\n```sh\nrustup target add wasm32-wasip2   # once\ncargo build --release --target wasm32-wasip2\nroost plugin install .\n```\n\nUnit tests run natively: `cargo test`. Declare path arguments with `.paths(&[..])`\nso Roost checks them against the task's scope before the call.\n"
            ),
        ),
        ("roost-sdk/Cargo.toml", SDK_MANIFEST.to_owned()),
        ("roost-sdk/src/lib.rs", SDK_LIB.to_owned()),
        ("roost-sdk/src/host.rs", SDK_HOST.to_owned()),
        ("roost-sdk/src/workspace.rs", SDK_WORKSPACE.to_owned()),
        ("roost-sdk/src/http.rs", SDK_HTTP.to_owned()),
        (".gitignore", "/target\n".to_owned()),
    ];
    let files = files
        .into_iter()
        .chain(WIT.iter().map(|(rel, text)| (*rel, (*text).to_owned())));
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}
