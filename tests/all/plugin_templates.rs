//! Plugin templates and installs: names checked before compiling, template tools named after the plugin, progress while building.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::cli::{roost, text};
use crate::plugin_install::plugin_dir;
use roost_tests::fixture_wasm;

/// What a compile says on stderr when it starts (progress.rs).
const COMPILING: &str = "for this machine: once";

fn ok(o: &Output) -> String {
    let t = text(o);
    assert!(o.status.success(), "{t}");
    t
}

fn refused(o: &Output) -> String {
    let t = text(o);
    assert!(!o.status.success(), "accepted: {t}");
    t
}

/// `roost plugin new NAME --lang LANG`, run in `cwd` (the folder is
/// `cwd/NAME`).
fn new_plugin(data: &Path, cwd: &Path, name: &str, lang: &str) -> Output {
    roost(data)
        .args(["plugin", "new", name, "--lang", lang])
        .current_dir(cwd)
        .output()
        .expect("plugin new")
}

/// Every file under `dir`, with its text.
fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let t = std::fs::read_to_string(&p).unwrap_or_default();
                out.push((p, t));
            }
        }
    }
    out
}

/// Installed plugins' tool names, by plugin, from `plugin list --json`.
fn installed_tools(data: &Path) -> Vec<(String, Vec<String>)> {
    let o = roost(data)
        .args(["plugin", "list", "--json"])
        .output()
        .expect("list");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v.as_array()
        .expect("array")
        .iter()
        .map(|p| {
            let tools = p["tools"]
                .as_array()
                .expect("tools")
                .iter()
                .map(|t| t["name"].as_str().expect("name").to_owned())
                .collect();
            (p["name"].as_str().expect("name").to_owned(), tools)
        })
        .collect()
}

/// Each language's template names its tool after the plugin (`hello-py`
/// → `hello_py_count_words`) in its code, its plugin.toml's `tools` and
/// its README, so two templates never clash; no placeholder is left; the
/// README is titled with the plugin's name. A name whose tool would take
/// a prefix reserved for the host is refused with the reason.
#[test]
fn template_tools_are_named_after_the_plugin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let cases = [
        (
            "hello-rs",
            "rust",
            "src/lib.rs",
            "Tool::new(\"hello_rs_count_words\"",
        ),
        (
            "hello-py",
            "python",
            "app.py",
            "TOOL_NAME = \"hello_py_count_words\"",
        ),
        (
            "hello-js",
            "js",
            "src/plugin.js",
            "const TOOL_NAME = 'hello_js_count_words';",
        ),
    ];
    for (name, lang, source, line) in cases {
        ok(&new_plugin(&data, dir.path(), name, lang));
        let project = dir.path().join(name);
        let tool = format!("{}_count_words", name.replace('-', "_"));
        let code = std::fs::read_to_string(project.join(source)).expect("source");
        assert!(code.contains(line), "{lang}: {code}");
        let manifest = std::fs::read_to_string(project.join("plugin.toml")).expect("manifest");
        assert!(
            manifest.contains(&format!("tools = [\"{tool}\"]")),
            "{lang}: {manifest}"
        );
        let readme = std::fs::read_to_string(project.join("README.md")).expect("README");
        assert!(
            readme.starts_with(&format!("# {name}\n")),
            "{lang}: {readme}"
        );
        assert!(readme.contains(&tool), "{lang}: {readme}");
        for (path, text) in files(&project) {
            assert!(
                !text.contains("__TOOL_NAME__") && !text.contains("\"count_words\""),
                "{}: a placeholder or the shared name is left",
                path.display()
            );
        }
    }
    // A long name still gives a tool name of at most 64 characters.
    let long = format!("a{}", "b".repeat(63));
    ok(&new_plugin(&data, dir.path(), &long, "js"));
    let manifest =
        std::fs::read_to_string(dir.path().join(&long).join("plugin.toml")).expect("manifest");
    let declared = manifest
        .lines()
        .find_map(|l| l.strip_prefix("tools = [\""))
        .and_then(|l| l.strip_suffix("\"]"))
        .expect("tools line");
    assert!(declared.len() <= 64, "{declared}");
    assert!(declared.ends_with("_count_words"), "{declared}");
    // `roost-weather` → `roost_weather_count_words`: a prefix the host keeps.
    let t = refused(&new_plugin(&data, dir.path(), "roost-weather", "python"));
    assert!(
        t.contains("roost_weather_count_words") && t.contains("reserved for the host"),
        "{t}"
    );
    assert!(!dir.path().join("roost-weather").exists());
}

/// What `roost plugin new` says for each language: the folder, the tool,
/// the real commands that build and install it (componentize-py's in full,
/// not a pointer to a README), and what the first install costs.
#[test]
fn plugin_new_says_the_real_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let mut all = String::new();
    for (name, lang) in [
        ("hello-rs", "rust"),
        ("hello-py", "python"),
        ("hello-js", "js"),
    ] {
        let o = new_plugin(&data, dir.path(), name, lang);
        ok(&o);
        all.push_str(&format!("$ roost plugin new {name} --lang {lang}\n"));
        all.push_str(&String::from_utf8_lossy(&o.stdout));
        assert!(o.stderr.is_empty(), "{}", text(&o));
    }
    assert!(
        !all.contains("in README.md`"),
        "a pointer instead of a command: {all}"
    );
    insta::assert_snapshot!("plugin_new_messages", all);
}

/// The second language's template, its tool renamed to one an installed
/// plugin has (as every template's `count_words` once was): `install`
/// refuses it naming the tool and its owner before compiling anything — no
/// compile line on stderr — and installs nothing. A declared name of a
/// built-in tool is refused the same way; a declared list the component
/// does not match is refused after the compile, naming `plugin.tools`.
#[test]
fn a_clashing_tool_name_is_refused_before_any_compile() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let root = dir.path();

    // The first plugin: its compile shows progress (what the refusal below
    // must not show).
    let first = plugin_dir(
        root,
        "first",
        "1.0.0",
        &fixture_wasm("conformance-rs"),
        "",
        None,
    );
    let shown = ok(&roost(&data)
        .args(["plugin", "install", "--yes"])
        .arg(&first)
        .output()
        .expect("install"));
    assert!(
        shown.contains("compiling first (") && shown.contains("compiled first in"),
        "{shown}"
    );
    let tools = installed_tools(&data);
    let taken = tools
        .first()
        .and_then(|(_, t)| t.first())
        .cloned()
        .expect("the first plugin's tool");

    // The second: a Python template whose tool is renamed to the taken
    // one, with a component beside it that was never compiled here.
    ok(&new_plugin(&data, root, "hello-py", "python"));
    let project = root.join("hello-py");
    std::fs::copy(fixture_wasm("egress"), project.join("hello_py.wasm")).expect("component");
    let manifest_path = project.join("plugin.toml");
    let manifest = std::fs::read_to_string(&manifest_path).expect("manifest");
    let declare = |tools: &str| {
        std::fs::write(
            &manifest_path,
            manifest.replace(
                "tools = [\"hello_py_count_words\"]",
                &format!("tools = [{tools}]"),
            ),
        )
        .expect("write manifest");
    };
    let install = || {
        roost(&data)
            .args(["plugin", "install", "--yes"])
            .arg(&project)
            .output()
            .expect("install")
    };

    declare(&format!("\"{taken}\""));
    let t = refused(&install());
    assert!(
        t.contains(&format!(
            "tool `{taken}` is already provided by the installed plugin `first`"
        )),
        "{t}"
    );
    assert!(!t.contains(COMPILING), "compiled before refusing: {t}");
    assert_eq!(installed_tools(&data).len(), 1, "{t}");

    // A built-in tool's name.
    declare("\"read_file\"");
    let t = refused(&install());
    assert!(t.contains("read_file") && t.contains("hello-py"), "{t}");
    assert!(!t.contains(COMPILING), "compiled before refusing: {t}");

    // A name that is free, but not the component's: found after compiling.
    declare("\"hello_py_count_words\"");
    let t = refused(&install());
    assert!(
        t.contains(
            "plugin.toml: plugin.tools: lists `hello_py_count_words`, but the component provides"
        ),
        "{t}"
    );
    assert!(t.contains(COMPILING), "{t}");
    assert_eq!(installed_tools(&data).len(), 1, "{t}");
}

/// On a terminal a compile shows a spinner with what is compiled, its
/// size, that it happens once, and the seconds; then the line that it
/// ended.
#[test]
fn a_compile_on_a_terminal_shows_a_spinner() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let first = plugin_dir(
        dir.path(),
        "first",
        "1.0.0",
        &fixture_wasm("conformance-rs"),
        "",
        None,
    );
    let mut cmd = roost(&data);
    cmd.args(["plugin", "install", "--yes"])
        .arg(&first)
        .env("TERM", "xterm");
    let mut p = crate::cli::on_pty(cmd);
    p.exp_string("| compiling first (")
        .expect("the spinner's first frame");
    p.exp_string(COMPILING).expect("what it costs");
    p.exp_string(" s").expect("the seconds");
    p.exp_string("compiled first in").expect("the end line");
    p.exp_string("installed first 1.0.0").expect("installed");
    p.exp_eof().expect("roost ends");
}
