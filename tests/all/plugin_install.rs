//! `roost plugin`: third-party plugins installed, used by tasks with at
//! most their grant, upgraded only with approval of what they add, and
//! removed; every refusal clear and leaving nothing half-installed.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::cli::{roost, text};
use roost_tests::fixture_wasm;

/// A plugin folder: `component` copied in as `<name>.wasm`, with a
/// manifest whose `[capabilities]` table is `caps` (hash filled in unless
/// `sha` is given).
pub(crate) fn plugin_dir(
    root: &Path,
    name: &str,
    version: &str,
    component: &Path,
    caps: &str,
    sha: Option<&str>,
) -> PathBuf {
    let dir = root.join(format!("{name}-{version}"));
    std::fs::create_dir_all(&dir).expect("mkdir");
    let file = format!("{name}.wasm");
    std::fs::copy(component, dir.join(&file)).expect("copy component");
    let bytes = std::fs::read(dir.join(&file)).expect("read");
    let sha = sha.map_or_else(|| roost_core::install::sha256_hex(&bytes), str::to_owned);
    // The legacy fixture was built against roost:plugin@0.1.0; the rest
    // on the SDK, against the latest.
    let wit = if component.to_string_lossy().contains("legacy") {
        "0.1.0"
    } else {
        "0.2.0"
    };
    std::fs::write(
        dir.join("plugin.toml"),
        format!(
            "[plugin]\nname = \"{name}\"\nversion = \"{version}\"\ndescription = \"A third party's plugin\"\nauthors = [\"Ada\"]\nworld = \"tool-plugin\"\nwit_version = \"{wit}\"\ncomponent = \"{file}\"\nsha256 = \"{sha}\"\n\n[capabilities]\n{caps}\n"
        ),
    )
    .expect("write manifest");
    dir
}

pub(crate) fn ok(o: &Output) -> String {
    let t = text(o);
    assert!(o.status.success(), "{t}");
    t
}

pub(crate) fn refused(o: &Output) -> String {
    let t = text(o);
    assert!(!o.status.success(), "accepted: {t}");
    t
}

/// Installed plugins: names in `roost plugin list --json`.
pub(crate) fn installed(data: &Path) -> Vec<String> {
    let o = roost(data)
        .args(["plugin", "list", "--json"])
        .output()
        .expect("list");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    v.as_array()
        .expect("array")
        .iter()
        .map(|p| p["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// Files under the data dir's plugin folder.
pub(crate) fn plugin_files(data: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![data.join("plugins")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

/// Run a scripted task that reads `notes.txt` and writes `out.txt` with
/// the plugin's tools; the NDJSON events.
pub(crate) fn run_task(data: &Path, ws: &Path) -> String {
    let script = data.join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({"model": "scripted", "turns": [
            {"tool_calls": [{"name": "read_text", "args": {"path": "notes.txt"}}]},
            {"tool_calls": [{"name": "write_text", "args": {"path": "out.txt", "content": "written"}}]},
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}
        ]})
        .to_string(),
    )
    .expect("script");
    let o = roost(data)
        .args(["run", "use the plugin", "--yes", "--json", "--workspace"])
        .arg(ws)
        .arg("--script")
        .arg(&script)
        .output()
        .expect("run");
    ok(&o)
}

pub(crate) fn result_of<'a>(events: &'a str, tool: &str) -> &'a str {
    events
        .lines()
        .find(|l| l.contains("\"tool_call_result\"") && l.contains(&format!("\"tool\":\"{tool}\"")))
        .unwrap_or_else(|| panic!("no result of {tool} in {events}"))
}

#[test]
fn install_run_upgrade_inspect_remove_a_rust_plugin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("notes.txt"), "hello from the workspace").expect("notes");
    let conf = fixture_wasm("conformance-rs");

    // Version 1 asks to read, not to write.
    let v1 = plugin_dir(
        dir.path(),
        "notes",
        "1.0.0",
        &conf,
        "read = \"workspace\"\nwrite = false",
        None,
    );
    let shown = ok(&roost(&data)
        .args(["plugin", "install", "--yes"])
        .arg(&v1)
        .output()
        .expect("install"));
    assert!(
        shown.contains("read_text") && shown.contains("write: no"),
        "{shown}"
    );
    assert_eq!(installed(&data), ["notes"]);
    let tools = ok(&roost(&data).args(["tool", "list"]).output().expect("tools"));
    assert!(
        tools.contains("read_text") && tools.contains("notes"),
        "{tools}"
    );

    // A task uses it: the read works, the write is refused (not granted).
    let events = run_task(&data, &ws);
    assert!(
        result_of(&events, "read_text").contains("hello from the workspace"),
        "{events}"
    );
    assert!(
        result_of(&events, "write_text").contains("not granted write access"),
        "{events}"
    );
    assert!(!ws.join("out.txt").exists());

    // Version 2 asks to write too: refused without approval (no terminal,
    // no --yes), and version 1 keeps working.
    let v2 = plugin_dir(
        dir.path(),
        "notes",
        "2.0.0",
        &conf,
        "read = \"workspace\"\nwrite = true\nnetwork = [\"api.example.com\"]\nsecrets = [\"NOTES_TOKEN\"]\n[capabilities.limits]\ndeadline_ms = 30000",
        None,
    );
    let o = roost(&data)
        .args(["plugin", "upgrade", "notes"])
        .arg(&v2)
        .output()
        .expect("upgrade");
    let t = refused(&o);
    for line in [
        "+ write",
        "+ network: https://api.example.com:443",
        "+ secret: NOTES_TOKEN",
    ] {
        assert!(t.contains(line), "{line} not shown in {t}");
    }
    assert!(t.contains("1.0.0 keeps working"), "{t}");
    let inspect = ok(&roost(&data)
        .args(["plugin", "inspect", "notes", "--json"])
        .output()
        .expect("inspect"));
    let v: serde_json::Value = serde_json::from_str(inspect.trim()).expect("json");
    assert_eq!(v["version"], "1.0.0");
    assert_eq!(v["granted"]["write"], false);

    // Approved: recorded, and the task's write now lands.
    ok(&roost(&data)
        .args(["plugin", "upgrade", "notes", "--yes"])
        .arg(&v2)
        .output()
        .expect("upgrade"));
    let inspect = ok(&roost(&data)
        .args(["plugin", "inspect", "notes"])
        .output()
        .expect("inspect"));
    assert!(
        inspect.contains("notes 2.0.0") && inspect.contains("sha256:"),
        "{inspect}"
    );
    assert!(inspect.contains("secret: NOTES_TOKEN"), "{inspect}");
    run_task(&data, &ws);
    assert_eq!(
        std::fs::read_to_string(ws.join("out.txt")).expect("written"),
        "written"
    );
    assert_eq!(plugin_files(&data).len(), 1, "the old component is gone");

    // Disabled: its tools are not offered; enabled again: they are.
    ok(&roost(&data)
        .args(["plugin", "disable", "notes"])
        .output()
        .expect("disable"));
    let tools = ok(&roost(&data).args(["tool", "list"]).output().expect("tools"));
    assert!(!tools.contains("read_text"), "{tools}");
    ok(&roost(&data)
        .args(["plugin", "enable", "notes"])
        .output()
        .expect("enable"));

    // A component changed on disk after install is refused at load.
    let file = plugin_files(&data).pop().expect("component");
    let mut bytes = std::fs::read(&file).expect("read");
    bytes.push(0);
    std::fs::write(&file, &bytes).expect("tamper");
    let t = refused(&roost(&data).args(["tool", "list"]).output().expect("tools"));
    assert!(t.contains("changed on disk since it was installed"), "{t}");

    // Removed: gone from the list, the tools and the data dir.
    ok(&roost(&data)
        .args(["plugin", "remove", "notes"])
        .output()
        .expect("remove"));
    assert!(installed(&data).is_empty());
    assert!(plugin_files(&data).is_empty());
    let tools = ok(&roost(&data).args(["tool", "list"]).output().expect("tools"));
    assert!(!tools.contains("read_text"), "{tools}");
}

#[test]
fn refusals_are_clear_and_leave_nothing_installed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let root = dir.path();
    let conf = fixture_wasm("conformance-rs");
    let not_component = root.join("text.wasm");
    std::fs::write(&not_component, "not wasm at all").expect("write");
    let core_module = root.join("core.wasm");
    std::fs::write(&core_module, b"\0asm\x01\0\0\0").expect("write");
    let bad_toml = plugin_dir(root, "badtoml", "1.0.0", &conf, "write = \"yes\"", None);
    let unknown_field = plugin_dir(root, "unknown", "1.0.0", &conf, "shell = true", None);
    let wrong_hash = plugin_dir(root, "hashy", "1.0.0", &conf, "", Some(&"0".repeat(64)));
    let shadow = plugin_dir(
        root,
        "shadow",
        "1.0.0",
        &fixture_wasm("fs-tools"),
        "write = true",
        None,
    );
    let first_party = root.join("fs_tools.wasm");
    std::fs::copy(fixture_wasm("fs-tools"), &first_party).expect("copy");
    let plain_http = plugin_dir(
        root,
        "plainhttp",
        "1.0.0",
        &conf,
        "network = [\"http://example.com\"]",
        None,
    );
    let greedy = plugin_dir(
        root,
        "greedy",
        "1.0.0",
        &conf,
        "[capabilities.limits]\nmemory_mb = 999999",
        None,
    );
    // An archive whose entry is an absolute path.
    let evil_archive = root.join("evil.tar.gz");
    let victim = plugin_dir(root, "victim", "1.0.0", &conf, "", None);
    let status = std::process::Command::new("tar")
        .arg("-czPf")
        .arg(&evil_archive)
        .arg(victim.join("plugin.toml"))
        .status()
        .expect("tar");
    assert!(status.success());
    let not_an_archive = root.join("plain.tar.gz");
    std::fs::write(&not_an_archive, "plain text").expect("write");
    let cases: Vec<(PathBuf, &str)> = vec![
        (not_component, "not a WebAssembly file"),
        (core_module, "core WebAssembly module"),
        (fixture_wasm("hook-fixture"), "tool-plugin"),
        (
            fixture_wasm("missing-import"),
            "imports something Roost does not provide",
        ),
        (bad_toml, "capabilities.write"),
        (unknown_field, "capabilities.shell"),
        (wrong_hash, "plugin.sha256"),
        (shadow, "read_file"),
        (first_party, "ships with Roost"),
        (plain_http, "capabilities.network[0]"),
        (greedy, "capabilities.limits.memory_mb"),
        (root.join("missing"), "missing"),
        (evil_archive, "leads outside"),
        (not_an_archive, "not a .tar.gz archive"),
    ];
    for (source, expect) in &cases {
        let o = roost(&data)
            .args(["plugin", "install", "--yes"])
            .arg(source)
            .output()
            .expect("install");
        let t = refused(&o);
        assert!(
            t.contains(expect),
            "{}: expected {expect:?} in {t}",
            source.display()
        );
        assert!(
            installed(&data).is_empty(),
            "{}: half-installed",
            source.display()
        );
        assert!(
            plugin_files(&data).is_empty(),
            "{}: files left",
            source.display()
        );
    }

    // A tool name another installed plugin has.
    let first = plugin_dir(root, "first", "1.0.0", &conf, "", None);
    ok(&roost(&data)
        .args(["plugin", "install", "--yes"])
        .arg(&first)
        .output()
        .expect("install"));
    let second = plugin_dir(root, "second", "1.0.0", &conf, "", None);
    let t = refused(
        &roost(&data)
            .args(["plugin", "install", "--yes"])
            .arg(&second)
            .output()
            .expect("install"),
    );
    assert!(
        t.contains("already provided by the installed plugin `first`"),
        "{t}"
    );
    assert_eq!(installed(&data), ["first"]);

    // No terminal and no --yes: nothing is installed.
    ok(&roost(&data)
        .args(["plugin", "remove", "first"])
        .output()
        .expect("remove"));
    let t = refused(
        &roost(&data)
            .args(["plugin", "install"])
            .arg(&first)
            .output()
            .expect("install"),
    );
    assert!(t.contains("pass --yes"), "{t}");
    assert!(installed(&data).is_empty());
    let t = refused(
        &roost(&data)
            .args(["plugin", "remove", "first"])
            .output()
            .expect("remove"),
    );
    assert!(t.contains("no installed plugin `first`"), "{t}");
}

/// Write `bytes`' minisign signature by `kp` beside `component`.
fn sign(kp: &minisign::KeyPair, bytes: &[u8], component: &Path) {
    let sig = minisign::sign(
        Some(&kp.pk),
        &kp.sk,
        std::io::Cursor::new(bytes),
        None,
        None,
    )
    .expect("sign");
    let mut name = component.file_name().expect("name").to_os_string();
    name.push(".minisig");
    std::fs::write(component.with_file_name(name), sig.to_string()).expect("write signature");
}

#[test]
fn signatures_are_verified_against_trusted_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let data = root.join("data");
    std::fs::create_dir_all(&data).expect("data");
    let conf = fixture_wasm("conformance-rs");
    let bytes = std::fs::read(&conf).expect("component");
    let ada = minisign::KeyPair::generate_unencrypted_keypair().expect("key");
    let mallory = minisign::KeyPair::generate_unencrypted_keypair().expect("key");
    let trust = data.join("trust.toml");
    std::fs::write(
        &trust,
        format!(
            "[plugins]\ntrusted_keys = {{ ada = \"{}\" }}\n",
            ada.pk.to_base64()
        ),
    )
    .expect("config");
    let install = |source: &Path, required: bool| {
        let mut c = roost(&data);
        c.env("ROOST_CONFIG", &trust)
            .args(["plugin", "install", "--yes"]);
        if required {
            c.arg("--require-signed");
        }
        c.arg(source).output().expect("install")
    };

    // Unsigned, or signed by a key nobody trusts: refused when required.
    let unsigned = plugin_dir(root, "unsigned", "1.0.0", &conf, "", None);
    let t = refused(&install(&unsigned, true));
    assert!(t.contains("unsigned"), "{t}");
    let stranger = plugin_dir(root, "stranger", "1.0.0", &conf, "", None);
    sign(&mallory, &bytes, &stranger.join("stranger.wasm"));
    let t = refused(&install(&stranger, true));
    assert!(t.contains("not a trusted one"), "{t}");
    // A signature by a trusted key over other bytes: refused, required or not.
    let forged = plugin_dir(root, "forged", "1.0.0", &conf, "", None);
    sign(&ada, b"some other component", &forged.join("forged.wasm"));
    let t = refused(&install(&forged, false));
    assert!(t.contains("does not match the component"), "{t}");
    assert!(installed(&data).is_empty());
    assert!(plugin_files(&data).is_empty());

    // Signed by Ada: installed, and `inspect` says who signed.
    let signed = plugin_dir(root, "signed", "1.0.0", &conf, "", None);
    sign(&ada, &bytes, &signed.join("signed.wasm"));
    let shown = ok(&install(&signed, true));
    assert!(shown.contains("signed by: ada"), "{shown}");
    let o = roost(&data)
        .env("ROOST_CONFIG", &trust)
        .args(["plugin", "inspect", "signed"])
        .output()
        .expect("inspect");
    assert!(ok(&o).contains("signed by: ada (a trusted key)"));
    // Without the requirement an unsigned plugin installs, shown as such.
    ok(&roost(&data)
        .args(["plugin", "remove", "signed"])
        .output()
        .expect("remove"));
    let shown = ok(&install(&unsigned, false));
    assert!(
        shown.contains("signed by: no trusted key (unsigned)"),
        "{shown}"
    );
}

/// `roost plugin new NAME --lang LANG` into a fresh folder outside Roost's
/// repository; the folder.
fn new_plugin(data: &Path, root: &Path, name: &str, lang: &str) -> PathBuf {
    let project = root.join(name);
    ok(&roost(data)
        .args(["plugin", "new", name, "--lang", lang, "--dir"])
        .arg(&project)
        .output()
        .expect("new"));
    project
}

/// Run `program args` in `dir`, as the template's README says to.
fn build_step(dir: &Path, program: &str, args: &[&str]) {
    let o = std::process::Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTFLAGS")
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(o.status.success(), "{program} {args:?}: {}", text(&o));
}

/// Install the built template as it is, and call its tool (`tool`, named
/// after the plugin) on a file.
fn installs_and_counts(data: &Path, root: &Path, project: &Path, tool: &str) {
    let shown = ok(&roost(data)
        .args(["plugin", "install", "--yes"])
        .arg(project)
        .output()
        .expect("install"));
    assert!(
        shown.contains(tool) && shown.contains("write: no"),
        "{shown}"
    );
    let ws = root.join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("t.txt"), "one two three").expect("file");
    let out = ok(&roost(data)
        .args([
            "tool",
            "call",
            tool,
            "--read",
            "--args",
            r#"{"path":"t.txt"}"#,
            "--workspace",
        ])
        .arg(&ws)
        .output()
        .expect("call"));
    assert!(out.contains("3 words"), "{out}");
}

/// `roost plugin new` writes a Rust plugin that builds outside Roost's
/// repository with `cargo build --release --target wasm32-wasip2` alone,
/// installs as it is, and works in a tool call.
#[test]
fn a_new_rust_plugin_builds_installs_and_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let project = new_plugin(&data, dir.path(), "word-count", "rust");
    // The manifest documents secrets in the placeholder form the host
    // fills (format!'s brace escaping once turned it into `{secret:…}`).
    let manifest = std::fs::read_to_string(project.join("plugin.toml")).expect("plugin.toml");
    assert!(
        manifest.contains(&format!(
            "{}EXAMPLE_TOKEN}}}}",
            roost_sandbox::capability::network::SECRET_OPEN
        )),
        "{manifest}"
    );
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    build_step(
        &project,
        &cargo,
        &["build", "--release", "--target", "wasm32-wasip2"],
    );
    installs_and_counts(&data, dir.path(), &project, "word_count_count_words");
}

/// The Python template: its unit test passes natively, and the
/// componentize-py command of its README builds a component that installs
/// as it is and works.
#[test]
fn a_new_python_plugin_builds_installs_and_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let project = new_plugin(&data, dir.path(), "word-count-py", "python");
    build_step(&project, "python3", &["-m", "unittest", "-q"]);
    let tool = roost_build::python::find_componentize_py().expect(
        "componentize-py (scripts/test.sh installs it: pip install --user componentize-py==0.25.1)",
    );
    build_step(
        &project,
        &tool.to_string_lossy(),
        &[
            "-d",
            "wit",
            "-w",
            "tool-plugin",
            "--import-interface-name",
            "roost:plugin/types@0.2.0=types",
            "componentize",
            "app",
            "-o",
            "word_count_py.wasm",
        ],
    );
    installs_and_counts(&data, dir.path(), &project, "word_count_py_count_words");
}

/// The JavaScript template: `npm install` of its pinned toolchain, `npm
/// test` on Node, `npm run build` with componentize-js; the component
/// installs as it is and works.
#[test]
fn a_new_javascript_plugin_builds_installs_and_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let project = new_plugin(&data, dir.path(), "word-count-js", "js");
    build_step(&project, "npm", &["install", "--no-audit", "--no-fund"]);
    build_step(&project, "npm", &["test"]);
    build_step(&project, "npm", &["run", "build"]);
    installs_and_counts(&data, dir.path(), &project, "word_count_js_count_words");
    let t = refused(
        &roost(&data)
            .args(["plugin", "new", "p", "--lang", "cobol"])
            .output()
            .expect("new"),
    );
    assert!(t.contains("unknown language"), "{t}");
}

/// A plugin folder packed as a `.tar.gz` (as a third party ships it)
/// installs like the folder; nothing of the unpacked archive is left
/// outside the data directory's plugin folder.
#[test]
fn a_plugin_installs_from_a_tar_gz() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let folder = plugin_dir(
        dir.path(),
        "packed",
        "1.0.0",
        &fixture_wasm("conformance-rs"),
        "",
        None,
    );
    let archive = dir.path().join("packed-1.0.0.tar.gz");
    let status = std::process::Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(dir.path())
        .arg(folder.file_name().expect("name"))
        .status()
        .expect("tar");
    assert!(status.success());
    let o = roost(&data)
        .args(["plugin", "install", "--yes"])
        .arg(&archive)
        .output()
        .expect("install");
    let t = ok(&o);
    assert!(t.contains("packed"), "{t}");
    assert_eq!(installed(&data), vec!["packed".to_owned()]);
    let files = plugin_files(&data);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].to_string_lossy().ends_with(".wasm"), "{files:?}");
}

/// A plugin record that no longer decodes (a damaged store, another
/// version's row, a component hash that is not one) is a clear error
/// naming the plugin wherever plugins are loaded, and `remove` still gets
/// rid of it.
#[test]
fn a_record_that_does_not_decode_is_named_and_removable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let folder = plugin_dir(
        dir.path(),
        "damaged",
        "1.0.0",
        &fixture_wasm("conformance-rs"),
        "",
        None,
    );
    ok(&roost(&data)
        .args(["plugin", "install", "--yes"])
        .arg(&folder)
        .output()
        .expect("install"));
    let store = roost_core::store::Store::open(&roost_core::store::Store::default_path(&data))
        .expect("store");
    let mut record = store
        .get_plugin("damaged")
        .expect("read")
        .expect("recorded");
    let granted = std::mem::replace(&mut record.granted, "{not json".into());
    store.put_plugin(&record).expect("damaged");
    drop(store);
    check_named_as_not_decoding(&data);
    // A recorded component hash that is not one is the same.
    let store = roost_core::store::Store::open(&roost_core::store::Store::default_path(&data))
        .expect("store");
    record.granted = granted;
    record.blake3 = "not a hash".into();
    store.put_plugin(&record).expect("damaged hash");
    drop(store);
    check_named_as_not_decoding(&data);
    let t = ok(&roost(&data)
        .args(["plugin", "remove", "damaged"])
        .output()
        .expect("remove"));
    assert!(t.contains("removed damaged"), "{t}");
    assert!(installed(&data).is_empty());
    assert!(plugin_files(&data).is_empty());
    let t = refused(
        &roost(&data)
            .args(["plugin", "remove", "damaged"])
            .output()
            .expect("remove again"),
    );
    assert!(t.contains("no installed plugin"), "{t}");
}

fn check_named_as_not_decoding(data: &Path) {
    for args in [
        vec!["plugin", "list"],
        vec!["plugin", "inspect", "damaged"],
        vec!["tool", "list"],
    ] {
        let t = refused(&roost(data).args(&args).output().expect("runs"));
        assert!(
            t.contains("damaged") && t.contains("does not decode"),
            "{args:?}: {t}"
        );
    }
}

/// A component is checked at load against the BLAKE3 hash its install
/// recorded; one installed before that record (its BLAKE3 empty) is checked
/// by its SHA-256 instead. Either way a component changed on disk is
/// refused, and an intact one loads.
#[test]
fn a_component_is_checked_by_its_recorded_blake3_or_else_its_sha256() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let component = fixture_wasm("conformance-rs");
    let folder = plugin_dir(dir.path(), "hashed", "1.0.0", &component, "", None);
    ok(&roost(&data)
        .args(["plugin", "install", "--yes"])
        .arg(&folder)
        .output()
        .expect("install"));
    let path = roost_core::store::Store::default_path(&data);
    let store = roost_core::store::Store::open(&path).expect("store");
    let mut record = store.get_plugin("hashed").expect("read").expect("recorded");
    let bytes = std::fs::read(&component).expect("component");
    assert_eq!(record.blake3, blake3::hash(&bytes).to_hex().as_str());
    drop(store);
    let file = plugin_files(&data).pop().expect("installed component");
    for recorded in ["blake3", "sha256 only"] {
        if recorded == "sha256 only" {
            let store = roost_core::store::Store::open(&path).expect("store");
            record.blake3.clear();
            store
                .put_plugin(&record)
                .expect("an older install's record");
        }
        std::fs::write(&file, &bytes).expect("intact");
        let tools = ok(&roost(&data).args(["tool", "list"]).output().expect("tools"));
        assert!(tools.contains("hashed"), "{recorded}: {tools}");
        let mut changed = bytes.clone();
        if let Some(b) = changed.last_mut() {
            *b ^= 1;
        }
        std::fs::write(&file, &changed).expect("tamper");
        let t = refused(&roost(&data).args(["tool", "list"]).output().expect("tools"));
        assert!(
            t.contains("`hashed` changed on disk since it was installed"),
            "{recorded}: {t}"
        );
    }
}

/// Install the conformance plugin `component` (in whichever language) as
/// `name`, asking to read the workspace and to reach `server`; run a task
/// that reads a file and fetches from the server with it; inspect it;
/// remove it.
fn install_use_inspect_remove(name: &str, component: &Path, wit: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("ws");
    std::fs::write(ws.join("notes.txt"), "hello from the workspace").expect("notes");
    let server = roost_tests::http::Server::ok("hello from the network");
    let folder = dir.path().join(name);
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::copy(component, folder.join("plugin.wasm")).expect("copy");
    std::fs::write(
        folder.join("plugin.toml"),
        format!(
            "[plugin]\nname = \"{name}\"\nversion = \"1.0.0\"\nworld = \"tool-plugin\"\nwit_version = \"{wit}\"\ncomponent = \"plugin.wasm\"\n\n[capabilities]\nread = \"workspace\"\nnetwork = [\"{}\"]\n",
            server.base()
        ),
    )
    .expect("manifest");
    let shown = ok(&roost(&data)
        .args(["plugin", "install", "--yes"])
        .arg(&folder)
        .output()
        .expect("install"));
    assert!(
        shown.contains("read_text") && shown.contains(&server.base()),
        "{name}: {shown}"
    );
    // A fresh data dir compiles the component: said when it starts and
    // when it ends (a JavaScript or Python one takes tens of seconds).
    assert!(
        shown.contains(&format!("compiling {name} ("))
            && shown.contains(&format!("compiled {name} in ")),
        "{name}: no progress while compiling: {shown}"
    );
    let script = dir.path().join("script.json");
    std::fs::write(
        &script,
        serde_json::json!({"model": "scripted", "turns": [
            {"tool_calls": [{"name": "read_text", "args": {"path": "notes.txt"}}]},
            {"tool_calls": [{"name": "fetch", "args": {"url": server.url("/hello")}}]},
            {"tool_calls": [{"name": "attempt_completion", "args": {"result": "done"}}]}
        ]})
        .to_string(),
    )
    .expect("script");
    let events = ok(&roost(&data)
        .args(["run", "use the plugin", "--yes", "--json", "--workspace"])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .output()
        .expect("run"));
    assert!(
        result_of(&events, "read_text").contains("hello from the workspace"),
        "{name}: {events}"
    );
    assert!(
        result_of(&events, "fetch").contains("hello from the network"),
        "{name}: {events}"
    );
    assert_eq!(server.received().len(), 1, "{name}");
    let inspect = ok(&roost(&data)
        .args(["plugin", "inspect", name, "--json"])
        .output()
        .expect("inspect"));
    let v: serde_json::Value = serde_json::from_str(inspect.trim()).expect("json");
    assert_eq!(v["wit_version"], wit, "{name}");
    assert_eq!(
        v["granted"]["network"],
        serde_json::json!([server.base()]),
        "{name}: {v}"
    );
    ok(&roost(&data)
        .args(["plugin", "remove", name])
        .output()
        .expect("remove"));
    assert!(installed(&data).is_empty(), "{name}");
    assert!(plugin_files(&data).is_empty(), "{name}");
}

#[test]
fn a_rust_plugin_installs_works_with_its_grant_and_removes() {
    install_use_inspect_remove("conf-rust", &fixture_wasm("conformance-rs"), "0.2.0");
}

#[test]
fn a_python_plugin_installs_works_with_its_grant_and_removes() {
    install_use_inspect_remove("conf-python", &roost_tests::python_plugin_wasm(), "0.2.0");
}

#[test]
fn a_javascript_plugin_installs_works_with_its_grant_and_removes() {
    install_use_inspect_remove("conf-js", &roost_tests::js_plugin_wasm(), "0.2.0");
}

/// Each widening alone (write, a host, a secret, larger limits) is refused
/// without approval, with its line shown and the old version working;
/// approved, it is recorded.
#[test]
fn each_widening_is_refused_until_approved() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = fixture_wasm("conformance-rs");
    let base = "read = \"workspace\"\nwrite = false\n[capabilities.limits]\ndeadline_ms = 5000\nmemory_mb = 64";
    let widenings = [
        (
            "write = true\n[capabilities.limits]\ndeadline_ms = 5000\nmemory_mb = 64",
            "+ write",
        ),
        (
            "network = [\"api.example.com\"]\n[capabilities.limits]\ndeadline_ms = 5000\nmemory_mb = 64",
            "+ network: https://api.example.com:443",
        ),
        (
            "secrets = [\"TOKEN\"]\n[capabilities.limits]\ndeadline_ms = 5000\nmemory_mb = 64",
            "+ secret: TOKEN",
        ),
        (
            "[capabilities.limits]\ndeadline_ms = 20000\nmemory_mb = 64",
            "deadline",
        ),
        (
            "[capabilities.limits]\ndeadline_ms = 5000\nmemory_mb = 128",
            "memory",
        ),
    ];
    for (n, (caps, line)) in widenings.iter().enumerate() {
        let data = dir.path().join(format!("data{n}"));
        let v1 = plugin_dir(
            &dir.path().join(format!("v1-{n}")),
            "wide",
            "1.0.0",
            &conf,
            base,
            None,
        );
        ok(&roost(&data)
            .args(["plugin", "install", "--yes"])
            .arg(&v1)
            .output()
            .expect("install"));
        let v2 = plugin_dir(
            &dir.path().join(format!("v2-{n}")),
            "wide",
            "2.0.0",
            &conf,
            caps,
            None,
        );
        let t = refused(
            &roost(&data)
                .args(["plugin", "upgrade", "wide"])
                .arg(&v2)
                .output()
                .expect("upgrade"),
        );
        assert!(t.contains(line), "{line} not shown in {t}");
        assert!(t.contains("1.0.0 keeps working"), "{t}");
        let tools = ok(&roost(&data).args(["tool", "list"]).output().expect("tools"));
        assert!(tools.contains("read_text"), "{tools}");
        ok(&roost(&data)
            .args(["plugin", "upgrade", "wide", "--yes"])
            .arg(&v2)
            .output()
            .expect("upgrade"));
        let inspect = ok(&roost(&data)
            .args(["plugin", "inspect", "wide", "--json"])
            .output()
            .expect("inspect"));
        let v: serde_json::Value = serde_json::from_str(inspect.trim()).expect("json");
        assert_eq!(v["version"], "2.0.0", "{line}");
    }
}
