//! The WIT is language-neutral: the same conformance cases pass against a
//! Rust plugin (on the SDK) and a Python plugin (componentize-py).

use std::sync::Arc;

use roost_core::tools::{ErrorCode, ToolGroup, ToolSpec};
use roost_sandbox::capability::{Grant, NetworkGrant};
use roost_sandbox::plugins::LoadedPlugin;
use roost_tests::http::Server;
use roost_tests::{TestWorkspace, engine, fixture_wasm, js_plugin_wasm, python_plugin_wasm};
use serde_json::{Value, json};

fn rust_plugin() -> Arc<LoadedPlugin> {
    engine()
        .load_file("conformance-rs", &fixture_wasm("conformance-rs"))
        .expect("rust plugin loads")
}

fn js_plugin() -> Arc<LoadedPlugin> {
    engine()
        .load_file("conformance-js", &js_plugin_wasm())
        .expect("javascript plugin loads")
}

/// The conformance plugin as built against roost:plugin@0.1.0.
fn legacy_plugin() -> Arc<LoadedPlugin> {
    engine()
        .load_file("legacy-v0-1-0", &fixture_wasm("legacy-v0-1-0"))
        .expect("0.1.0 plugin loads")
}

fn python_plugin() -> Arc<LoadedPlugin> {
    engine()
        .load_file("conformance-py", &python_plugin_wasm())
        .expect("python plugin loads")
}

/// What must agree between the two: names, groups, flags, path args, and
/// the required properties with their types.
fn essentials(spec: &ToolSpec) -> (String, ToolGroup, bool, Vec<String>, Vec<(String, String)>) {
    let mut required: Vec<String> = spec.args_schema["required"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    required.sort();
    let props = required
        .iter()
        .map(|r| {
            (
                r.clone(),
                spec.args_schema["properties"][r]["type"]
                    .as_str()
                    .unwrap_or("?")
                    .to_owned(),
            )
        })
        .collect();
    (
        spec.name.clone(),
        spec.group,
        spec.destructive,
        spec.path_args.clone(),
        props,
    )
}

#[test]
fn every_plugin_declares_the_same_tools() {
    let rs: Vec<_> = rust_plugin().tools().iter().map(essentials).collect();
    let py: Vec<_> = python_plugin().tools().iter().map(essentials).collect();
    let js: Vec<_> = js_plugin().tools().iter().map(essentials).collect();
    let legacy: Vec<_> = legacy_plugin().tools().iter().map(essentials).collect();
    assert_eq!(rs.len(), 7);
    assert_eq!(rs, py);
    assert_eq!(rs, js);
    // 0.1.0 had no network: the same tools but `fetch`.
    assert_eq!(rs[..6], legacy[..]);
    for p in [rust_plugin(), python_plugin(), js_plugin()] {
        let fetch = p.tools().iter().find(|t| t.name == "fetch").expect("fetch");
        assert!(fetch.annotations.open_world, "{}", p.name());
    }
}

/// A component built against roost:plugin@0.1.0 loads after the WIT moved
/// to 0.2.0, says so, and gets the defaults for what 0.1.0 could not
/// express.
#[test]
pub(crate) fn a_0_1_0_plugin_loads_with_default_annotations() {
    let legacy = legacy_plugin();
    assert_eq!(legacy.wit_version(), "0.1.0");
    assert_eq!(rust_plugin().wit_version(), "0.2.0");
    for t in legacy.tools() {
        assert_eq!(t.annotations, Default::default(), "{}", t.name);
    }
}

/// The cases every plugin passes; with `network`, also a request to a
/// granted server on 127.0.0.1, and one to a server it was not granted.
async fn conformance(plugin: Arc<LoadedPlugin>, network: bool) {
    let ws = TestWorkspace::new();
    ws.write("hello.txt", "hello from the workspace\n");
    std::fs::create_dir(ws.path().join("out")).expect("mkdir");
    let e = engine();
    let read = Grant::new(ws.path()).read();
    let write = Grant::new(ws.path()).read().write("out");
    let name = plugin.name().to_owned();
    let call = |tool: &'static str, args: Value, grant: Grant| {
        let plugin = Arc::clone(&plugin);
        let e = Arc::clone(&e);
        async move { e.call(&plugin, tool, &args.to_string(), &grant).await }
    };

    let out = call("echo", json!({"text": "héllo"}), Grant::new(ws.path()))
        .await
        .expect("echo");
    assert_eq!(out.text, "héllo", "{name}");
    assert_eq!(out.data, Some(json!({"len": 5})), "{name}");

    let out = call("read_text", json!({"path": "hello.txt"}), read.clone())
        .await
        .expect("read");
    assert_eq!(out.text, "hello from the workspace\n", "{name}");
    let err = call("read_text", json!({"path": "missing.txt"}), read.clone())
        .await
        .expect_err("missing");
    assert_eq!(err.code, ErrorCode::NotFound, "{name}: {err}");
    let err = call(
        "read_text",
        json!({"path": "hello.txt"}),
        Grant::new(ws.path()),
    )
    .await
    .expect_err("no grant");
    assert!(
        matches!(err.code, ErrorCode::NotFound | ErrorCode::PermissionDenied),
        "{name}: {err}"
    );
    let err = call(
        "read_text",
        json!({"path": "../canary/secret.txt"}),
        read.clone(),
    )
    .await
    .expect_err("escape");
    assert_eq!(err.code, ErrorCode::PermissionDenied, "{name}: {err}");

    let out = call(
        "write_text",
        json!({"path": "out/new.txt", "content": "abc"}),
        write.clone(),
    )
    .await
    .expect("write");
    assert_eq!(out.text, "wrote 3 bytes", "{name}");
    assert_eq!(ws.read("out/new.txt"), "abc");
    let err = call(
        "write_text",
        json!({"path": "hello.txt", "content": "x"}),
        write.clone(),
    )
    .await
    .expect_err("ro");
    assert_eq!(err.code, ErrorCode::PermissionDenied, "{name}: {err}");
    assert_eq!(ws.read("hello.txt"), "hello from the workspace\n");

    for (code, expected) in [
        ("invalid-args", ErrorCode::InvalidArgs),
        ("not-found", ErrorCode::NotFound),
        ("permission-denied", ErrorCode::PermissionDenied),
        ("limit-exceeded", ErrorCode::LimitExceeded),
        ("internal", ErrorCode::Internal),
    ] {
        let err = call(
            "fail",
            json!({"code": code, "message": "boom"}),
            Grant::new(ws.path()),
        )
        .await
        .expect_err("fail");
        assert_eq!(
            (err.code, err.message.as_str()),
            (expected, "boom"),
            "{name}"
        );
    }

    let out = call("workspace_info", json!({}), write.clone())
        .await
        .expect("info");
    assert_eq!(
        out.data,
        Some(json!({"root": "/workspace", "readable": true, "write_roots": ["out"]})),
        "{name}"
    );
    assert_eq!(
        call("log", json!({"message": "hi"}), Grant::new(ws.path()))
            .await
            .expect("log")
            .text,
        "ok"
    );

    for bad in [json!({}), json!({"text": 3}), json!([1, 2])] {
        let err = call("echo", bad.clone(), Grant::new(ws.path()))
            .await
            .expect_err("bad args");
        assert_eq!(err.code, ErrorCode::InvalidArgs, "{name}: {bad}: {err}");
    }
    let err = e
        .call(&plugin, "echo", "{not json", &Grant::new(ws.path()))
        .await
        .expect_err("malformed");
    assert_eq!(err.code, ErrorCode::InvalidArgs, "{name}: {err}");
    let err = call("no_such_tool", json!({}), Grant::new(ws.path()))
        .await
        .expect_err("unknown");
    assert_eq!(err.code, ErrorCode::NotFound, "{name}: {err}");
    if network {
        fetches_only_from_granted_origins(&plugin).await;
    }
}

async fn fetches_only_from_granted_origins(plugin: &LoadedPlugin) {
    let name = plugin.name();
    let granted = Server::ok("hello from the network");
    let other = Server::ok("must not be read");
    let ws = TestWorkspace::new();
    let grant = Grant::new(ws.path()).network(NetworkGrant::allow([granted.origin()]));
    let report = engine()
        .call_with_report(
            plugin,
            "fetch",
            &json!({"url": granted.url("/hello")}).to_string(),
            &grant,
        )
        .await;
    let out = report.result.expect("granted fetch");
    assert_eq!(out.text, "hello from the network", "{name}");
    assert_eq!(out.data, Some(json!({"status": 200})), "{name}");
    assert_eq!(granted.received().len(), 1, "{name}");
    let rec = &report.network.records[..];
    assert!(
        rec.len() == 1 && rec[0].allowed && rec[0].status == Some(200),
        "{name}: {rec:?}"
    );
    let report = engine()
        .call_with_report(
            plugin,
            "fetch",
            &json!({"url": other.url("/secret")}).to_string(),
            &grant,
        )
        .await;
    let err = report.result.expect_err("ungranted fetch");
    assert!(
        matches!(err.code, ErrorCode::PermissionDenied | ErrorCode::Internal),
        "{name}: {err}"
    );
    // The refusal reached the guest as an error it caught (a rejected
    // promise in JavaScript, an exception in Python, an `Err` in Rust) and
    // reported itself — not a trap.
    let m = err.message.to_ascii_lowercase();
    assert!(
        !m.contains("trap") && !m.contains("unreachable"),
        "{name}: the refusal trapped the guest: {err}"
    );
    assert!(
        err.code == ErrorCode::PermissionDenied || err.message.contains(&other.url("/secret")),
        "{name}: the guest did not see the refusal as an error: {err}"
    );
    assert!(other.received().is_empty(), "{name}: the request went out");
    let rec = &report.network.records[..];
    assert!(
        rec.len() == 1 && !rec[0].allowed && rec[0].refused.is_some(),
        "{name}: {rec:?}"
    );
}

#[tokio::test]
pub(crate) async fn rust_plugin_conforms() {
    conformance(rust_plugin(), true).await;
}

#[tokio::test]
async fn javascript_plugin_conforms() {
    conformance(js_plugin(), true).await;
}

#[tokio::test]
async fn a_0_1_0_plugin_conforms() {
    conformance(legacy_plugin(), false).await;
}

#[tokio::test]
async fn python_plugin_conforms() {
    conformance(python_plugin(), true).await;
}

/// The `bench-marker` fixture, as the `tool list` benchmark uses it: a copy
/// whose marker bytes are replaced loads as a plugin of its own, with its
/// own tool names, and its tools work.
#[tokio::test]
pub(crate) async fn bench_marker_copies_have_their_own_tools() {
    let bytes = std::fs::read(fixture_wasm("bench-marker")).expect("fixture");
    let marker = b"MARKERxx";
    let mut copy = bytes.clone();
    let mut replaced = 0;
    let mut i = 0;
    while i + marker.len() <= copy.len() {
        if &copy[i..i + marker.len()] == marker {
            copy[i..i + marker.len()].copy_from_slice(b"m0000042");
            replaced += 1;
            i += marker.len();
        } else {
            i += 1;
        }
    }
    assert!(replaced >= 3, "the marker is in every tool name");
    let plugin = engine()
        .load_bytes("bench-42", &copy)
        .expect("the copy loads");
    let mut names: Vec<String> = plugin.tools().iter().map(|t| t.name.clone()).collect();
    names.sort();
    assert_eq!(names, ["count_m0000042", "echo_m0000042", "upper_m0000042"]);
    let ws = TestWorkspace::new();
    let out = engine()
        .call(
            &plugin,
            "count_m0000042",
            &json!({"text": "one two three"}).to_string(),
            &Grant::new(ws.path()),
        )
        .await
        .expect("runs");
    assert_eq!(out.text, "3");
}
