//! `roost plugin new NAME --lang rust|python|js`: a plugin folder a third
//! party builds on its own, outside Roost's repository. Each holds a tool
//! with typed arguments and a unit test, the WIT it is built against
//! (copied out of this binary, with the WASI packages its world uses), a
//! `plugin.toml`, and a README with the build steps; the Rust one also the
//! SDK, the JavaScript one a pinned `package.json` and lockfile.

use std::path::Path;

use anyhow::{Context, bail};

/// The Rust SDK as this Roost ships it.
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
/// The new plugins' own code (files of their own: they are guest code).
const RUST_LIB: &str = include_str!("../templates/rust/lib.rs");
const PY_APP: &str = include_str!("../templates/python/app.py");
const PY_WORDS: &str = include_str!("../templates/python/words.py");
const PY_TEST: &str = include_str!("../templates/python/test_words.py");
const JS_PLUGIN: &str = include_str!("../templates/js/plugin.js");
const JS_WORDS: &str = include_str!("../templates/js/words.js");
const JS_WORKSPACE: &str = include_str!("../templates/js/workspace.js");
const JS_TEST: &str = include_str!("../templates/js/words.test.js");
/// The JavaScript toolchain, pinned: componentize-js and jco from npm.
pub const JS_PACKAGE: &str = include_str!("../templates/js/package.json");
/// Its lockfile (install with `npm install`; `npm ci` trips over optional
/// platform packages upstream never published).
pub const JS_LOCK: &str = include_str!("../templates/js/package-lock.json");

/// The componentize-py version the Python template is built with.
pub const COMPONENTIZE_PY: &str = "0.25.1";

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

/// A plugin's language, and what `new` writes for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// A crate on the Roost SDK, built with cargo.
    Rust,
    /// A module built with componentize-py.
    Python,
    /// An ES module built with componentize-js.
    Js,
}

impl Lang {
    /// The language named on the command line.
    pub fn parse(s: &str) -> anyhow::Result<Self> {
        Ok(match s {
            "rust" => Self::Rust,
            "python" => Self::Python,
            "js" | "javascript" => Self::Js,
            other => bail!("unknown language `{other}` (rust, python, js)"),
        })
    }

    /// Its name in a sentence.
    fn noun(self) -> &'static str {
        match self {
            Self::Rust => "Rust",
            Self::Python => "Python",
            Self::Js => "JavaScript",
        }
    }

    /// The commands that build the plugin `name` and install it, run in its
    /// folder, each with a note (or none): the same as its README says.
    pub fn build_steps(self, name: &str) -> Vec<(String, &'static str)> {
        let krate = name.replace('-', "_");
        match self {
            Self::Rust => vec![
                ("rustup target add wasm32-wasip2".to_owned(), "once"),
                (
                    "cargo build --release --target wasm32-wasip2".to_owned(),
                    "",
                ),
                ("roost plugin install .".to_owned(), ""),
            ],
            Self::Python => vec![
                (
                    format!("python3 -m pip install componentize-py=={COMPONENTIZE_PY}"),
                    "once",
                ),
                (componentize_py_command(&krate), ""),
                ("roost plugin install .".to_owned(), ""),
            ],
            Self::Js => vec![
                ("npm install".to_owned(), "the pinned toolchain"),
                ("npm run build".to_owned(), ""),
                ("roost plugin install .".to_owned(), ""),
            ],
        }
    }

    /// What its first install costs, honestly: Python and JavaScript
    /// components carry their interpreter.
    pub fn install_note(self) -> &'static str {
        match self {
            Self::Rust => {
                "Its first install compiles the component for this machine, once: a few seconds at most."
            }
            // Measured with a debug build on a busy 2-core machine: 25 s
            // for a 14 MB JavaScript component, 40 s for a 19 MB Python one.
            Self::Python | Self::Js => {
                "Its first install compiles the component for this machine, once: it carries its\ninterpreter (14-40 MB), so that takes 30 s to 2 min with a debug build of roost\non 2 cores, less with a release build."
            }
        }
    }
}

/// The componentize-py command that builds the Python plugin `krate`.
fn componentize_py_command(krate: &str) -> String {
    format!(
        "componentize-py -d wit -w tool-plugin --import-interface-name '{}' componentize app -o {krate}.wasm",
        types_rename()
    )
}

/// componentize-py's rename that keeps Roost's `types` module named
/// `types` (the world has three interfaces of that name).
fn types_rename() -> String {
    let wit = roost_core::install::manifest::SUPPORTED_WIT
        .first()
        .copied()
        .unwrap_or_default();
    format!("roost:plugin/types@{wit}=types")
}

/// The suffix of the template's tool.
const TOOL_SUFFIX: &str = "_count_words";
/// Where the templates' sources name their tool.
const TOOL_PLACEHOLDER: &str = "__TOOL_NAME__";

/// The name of the template's tool for the plugin `name`: prefixed with
/// the plugin's, so two plugins made from templates never clash
/// (`hello-py` → `hello_py_count_words`), a valid identifier-like name in
/// every language's bindings and at most 64 characters.
pub fn tool_name(name: &str) -> anyhow::Result<String> {
    let prefix: String = name
        .replace('-', "_")
        .chars()
        .take(64 - TOOL_SUFFIX.len())
        .collect();
    let tool = format!("{prefix}{TOOL_SUFFIX}");
    if let Some(reason) = roost_core::tools::reserved::reserved(&tool) {
        bail!("`{name}` would name its tool `{tool}`, and {reason}; give the plugin another name");
    }
    Ok(tool)
}

/// Write a new plugin named `name` in `lang` into `dir` (which must not
/// exist); the name of its tool.
pub fn new(name: &str, lang: Lang, dir: &Path) -> anyhow::Result<String> {
    roost_core::install::manifest::check_name(name).map_err(anyhow::Error::msg)?;
    if dir.exists() {
        bail!("{} already exists", dir.display());
    }
    let tool = tool_name(name)?;
    let krate = name.replace('-', "_");
    let (component, mut files) = match lang {
        Lang::Rust => (
            format!("target/wasm32-wasip2/release/{krate}.wasm"),
            rust_files(name, &tool),
        ),
        Lang::Python => (format!("{krate}.wasm"), python_files(name, &krate, &tool)),
        Lang::Js => (format!("{name}.wasm"), js_files(name, &tool)),
    };
    files.push(("plugin.toml", manifest(name, &component, &tool)));
    files.extend(WIT.iter().map(|(rel, text)| (*rel, (*text).to_owned())));
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(tool)
}

/// What `roost plugin new` says: what it wrote, the commands that build
/// and install it, and what the install costs.
pub fn next_steps(name: &str, lang: Lang, dir: &Path, tool: &str) -> String {
    let mut out = format!(
        "wrote {}: a {} plugin with one tool, `{tool}`. Next, in {}:\n",
        dir.display(),
        lang.noun(),
        dir.display()
    );
    for (command, why) in lang.build_steps(name) {
        if why.is_empty() {
            out.push_str(&format!("  {command}\n"));
        } else {
            out.push_str(&format!("  {command}   # {why}\n"));
        }
    }
    out.push_str(lang.install_note());
    out.push_str("\nREADME.md there has the rest.\n");
    out
}

/// The plugin's `plugin.toml`: it reads the workspace, writes nothing,
/// calls no host.
fn manifest(name: &str, component: &str, tool: &str) -> String {
    let wit_version = roost_core::install::manifest::SUPPORTED_WIT
        .first()
        .copied()
        .unwrap_or_default();
    format!(
        r#"[plugin]
name = "{name}"
version = "0.1.0"
description = "Counts words in workspace files"
authors = []
world = "tool-plugin"
wit_version = "{wit_version}"
component = "{component}"
# The tools it provides, checked against the installed ones before the
# component is compiled; the component must provide exactly these.
tools = ["{tool}"]
# sha256 = "…"  # optional while developing; set it when you publish

[capabilities]
read = "workspace"
write = false
network = []   # e.g. ["api.example.com"]: the only hosts its requests may reach
secrets = []   # e.g. ["EXAMPLE_TOKEN"]: used as {{{{secret:EXAMPLE_TOKEN}}}} in a header
"#
    )
}

fn rust_files(name: &str, tool: &str) -> Vec<(&'static str, String)> {
    vec![
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
        ("src/lib.rs", RUST_LIB.replace(TOOL_PLACEHOLDER, tool)),
        (
            "README.md",
            format!(
                "# {name}\n\nA Roost tool plugin in Rust; its tool is `{tool}`.\n\n```sh\nrustup target add wasm32-wasip2   # once\ncargo build --release --target wasm32-wasip2\nroost plugin install .\n```\n\nUnit tests run natively: `cargo test`. Declare path arguments with `.paths(&[..])`\nso Roost checks them against the task's scope before the call. Network:\n`roost_sdk::http::get(url)` reaches the hosts listed under `network` in\n`plugin.toml` once the user grants them; nothing else.\n"
            ),
        ),
        ("roost-sdk/Cargo.toml", SDK_MANIFEST.to_owned()),
        ("roost-sdk/src/lib.rs", SDK_LIB.to_owned()),
        ("roost-sdk/src/host.rs", SDK_HOST.to_owned()),
        ("roost-sdk/src/workspace.rs", SDK_WORKSPACE.to_owned()),
        ("roost-sdk/src/http.rs", SDK_HTTP.to_owned()),
        (".gitignore", "/target\n".to_owned()),
    ]
}

fn python_files(name: &str, krate: &str, tool: &str) -> Vec<(&'static str, String)> {
    let rename = types_rename();
    vec![
        ("app.py", PY_APP.replace(TOOL_PLACEHOLDER, tool)),
        ("words.py", PY_WORDS.to_owned()),
        ("test_words.py", PY_TEST.to_owned()),
        (
            "README.md",
            format!(
                "# {name}\n\nA Roost tool plugin in Python; its tool is `{tool}`.\n\n```sh\npython3 -m pip install componentize-py=={COMPONENTIZE_PY}   # once\ncomponentize-py -d wit -w tool-plugin \\\n  --import-interface-name '{rename}' \\\n  componentize app -o {krate}.wasm\nroost plugin install .\n```\n\nUnit tests run natively: `python3 -m unittest`. The workspace is\nmounted read-only at `/workspace` (plain `open()` works). Network: the\n`wasi:http` bindings in `wit_world.imports.outgoing_handler` reach the\nhosts listed under `network` in `plugin.toml` once the user grants them.\n(`--import-interface-name` keeps Roost's types module named `types`:\nthe world has three interfaces of that name.)\n"
            ),
        ),
        (".gitignore", "/*.wasm\n__pycache__/\n".to_owned()),
    ]
}

fn js_files(name: &str, tool: &str) -> Vec<(&'static str, String)> {
    let package = JS_PACKAGE
        .replace(
            "\"name\": \"roost-js-plugin\"",
            &format!("\"name\": \"{name}\""),
        )
        .replace("--out plugin.wasm", &format!("--out {name}.wasm"));
    vec![
        ("package.json", package),
        ("package-lock.json", JS_LOCK.to_owned()),
        ("src/plugin.js", JS_PLUGIN.replace(TOOL_PLACEHOLDER, tool)),
        ("src/words.js", JS_WORDS.to_owned()),
        ("src/workspace.js", JS_WORKSPACE.to_owned()),
        ("test/words.test.js", JS_TEST.to_owned()),
        (
            "README.md",
            format!(
                "# {name}\n\nA Roost tool plugin in JavaScript, built with componentize-js; its tool is `{tool}`.\n\n```sh\nnpm install       # the pinned toolchain, from package-lock.json\nnpm run build     # writes {name}.wasm\nroost plugin install .\n```\n\nUnit tests run on Node: `npm test`. Inside the sandbox there is no Node\n`fs`: `src/workspace.js` reads the workspace through WASI's filesystem.\n`fetch()` reaches the hosts listed under `network` in `plugin.toml` once\nthe user grants them; nothing else.\n"
            ),
        ),
        (".gitignore", "node_modules/\n/*.wasm\n".to_owned()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_named_after_their_plugin() {
        assert_eq!(tool_name("hello-py").unwrap(), "hello_py_count_words");
        assert_eq!(tool_name("words").unwrap(), "words_count_words");
        let long = format!("a{}", "b".repeat(63));
        let t = tool_name(&long).unwrap();
        assert_eq!(t.len(), 64);
        assert!(roost_core::install::manifest::valid_tool_name(&t));
        for reserved in ["roost-weather", "host-x", "mcp_"] {
            assert!(tool_name(reserved).is_err(), "{reserved}");
        }
    }
}
