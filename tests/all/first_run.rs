//! The first run as fast as the hundredth: the first-party components come
//! precompiled by the build, sealed, and a fresh data dir compiles nothing;
//! an artifact that is damaged or made for another engine is never loaded:
//! the component is compiled instead, with the notice that says so.

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use roost_core::first_party;
use roost_sandbox::plugins::{CacheOutcome, EngineConfig, LoadedPlugin, PluginEngine};

use crate::cli::{roost, text};

/// Compiled artifacts the cache holds under `dir`.
fn cached_artifacts(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir.join("cache/components"))
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".cwasm"))
                .collect()
        })
        .unwrap_or_default()
}

/// `roost run` on an empty data dir: no compile notice, nothing compiled
/// into the cache, and the task does its work with the sandboxed tools.
#[test]
fn a_first_run_on_a_fresh_data_dir_compiles_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).expect("mkdir");
    std::fs::write(ws.join("notes.txt"), "first line\n").expect("write");
    let script = dir.path().join("read.json");
    std::fs::write(
        &script,
        serde_json::json!({"turns": [
            {"tool_calls": [{"name": "read_file", "args": {"path": "notes.txt"}}]},
            {"text": "Read it.", "tool_calls": [{"name": "attempt_completion", "args": {"result": "first line"}}]}
        ]})
        .to_string(),
    )
    .expect("write");
    let o = roost(&data)
        .args([
            "run",
            "read notes.txt",
            "--json",
            "--approve",
            "read",
            "--workspace",
        ])
        .arg(&ws)
        .arg("--script")
        .arg(&script)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("\"completed\"") && out.contains("first line"),
        "{}",
        text(&o)
    );
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("preparing the sandboxed tools"),
        "{}",
        text(&o)
    );
    assert_eq!(cached_artifacts(&data), Vec::<String>::new());
}

/// Records that a compile started.
struct Said(Arc<AtomicBool>);

impl roost_sandbox::plugins::CompileWatch for Said {
    fn started(&self, _component: &str, _bytes: usize) {
        self.0.store(true, Ordering::SeqCst);
    }
    fn finished(&self, _component: &str, _ok: bool) {}
}

/// Every first-party tool plugin and hook loads from the build's artifact.
#[test]
fn the_first_party_components_load_precompiled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = PluginEngine::new(first_party::engine_config(
        dir.path().join("cache/components"),
    ))
    .expect("engine");
    let said = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&said);
    engine.watch_compiles(Arc::new(Said(flag)));
    // Asked for its tools on this fresh cache: prepared at load.
    for p in first_party::load_all(&engine).expect("plugins") {
        assert_eq!(p.compiled(), Some(CacheOutcome::Prebuilt), "{}", p.name());
        assert!(!p.tools().is_empty());
    }
    // The hooks are prepared when first needed; from the build's artifact.
    for h in first_party::load_hooks(&engine).expect("hooks") {
        assert_eq!(h.compiled(), None, "{}", h.name());
        assert_eq!(
            engine.prepare_hook_now(&h).expect("prepares"),
            CacheOutcome::Prebuilt,
            "{}",
            h.name()
        );
    }
    // Known from the cache now: listed without preparing anything, and
    // prepared from the build's artifact when needed.
    for p in first_party::load_all(&engine).expect("plugins") {
        assert!(p.tools_from_cache(), "{}", p.name());
        assert_eq!(p.compiled(), None, "{}", p.name());
        assert_eq!(
            engine.prepare_now(&p).expect("prepares"),
            CacheOutcome::Prebuilt
        );
    }
    assert!(!said.load(Ordering::SeqCst), "nothing was compiled");
    assert_eq!(cached_artifacts(dir.path()), Vec::<String>::new());
}

/// An artifact that fails its seal, or that wasmtime finds made for another
/// engine, is never loaded: the component is compiled (with the notice),
/// and it works the same.
#[test]
fn a_damaged_or_foreign_artifact_is_compiled_instead() {
    let sealed = first_party::PREBUILT[0];
    assert_eq!(
        roost_engine_config::Sealed::component_of(sealed),
        Some(blake3::hash(first_party::FS_TOOLS)),
        "PREBUILT[0] is fs-tools'"
    );
    let mut flipped = sealed.to_vec();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x5a;
    let mut truncated = sealed.to_vec();
    truncated.truncate(sealed.len() - 4096);
    // The same component, precompiled and properly sealed, but by an
    // engine configured differently from the runtime's (no epoch
    // interruption: its code would never yield or meet a deadline).
    let mut other = roost_engine_config::config();
    other.epoch_interruption(false);
    let foreign = wasmtime::Engine::new(&other)
        .and_then(|e| e.precompile_component(first_party::FS_TOOLS))
        .expect("precompiles");
    let foreign = roost_engine_config::seal(first_party::FS_TOOLS, &foreign);

    let good = {
        let engine = PluginEngine::new(EngineConfig {
            prebuilt: vec![Cow::Borrowed(sealed)],
            ..EngineConfig::default()
        })
        .expect("engine");
        let p = engine
            .load_bytes("fs-tools", first_party::FS_TOOLS)
            .expect("loads");
        assert_eq!(p.compiled(), Some(CacheOutcome::Prebuilt));
        p.tools().to_vec()
    };
    for (case, bad) in [
        ("a flipped byte", flipped),
        ("a truncated file", truncated),
        ("another engine's artifact", foreign),
    ] {
        let engine = PluginEngine::new(EngineConfig {
            prebuilt: vec![Cow::Owned(bad)],
            ..EngineConfig::default()
        })
        .expect("engine");
        let said = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&said);
        engine.watch_compiles(Arc::new(Said(flag)));
        let p = engine
            .load_bytes("fs-tools", first_party::FS_TOOLS)
            .expect("compiles instead");
        assert_eq!(p.compiled(), Some(CacheOutcome::Compiled), "{case}");
        assert!(said.load(Ordering::SeqCst), "{case}: the notice was said");
        assert_eq!(p.tools(), &good[..], "{case}");
    }
}

/// `plugin` (the conformance fixture) called in a fresh workspace answers
/// its `echo`: the call that prepares it works.
async fn echoes(engine: &PluginEngine, plugin: &LoadedPlugin) {
    let ws = tempfile::tempdir().expect("ws");
    let grant = roost_sandbox::capability::Grant::new(ws.path());
    let out = engine
        .call(plugin, "echo", r#"{"text":"hi"}"#, &grant)
        .await
        .expect("its first call prepares it and runs");
    assert!(out.text.contains("hi"), "{}", out.text);
}

/// A plugin known from the cache is prepared on its first call; if its
/// compiled artifact has gone meanwhile, that call compiles it and works.
#[tokio::test]
async fn a_known_plugin_whose_artifact_went_is_compiled_on_its_first_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let bytes = std::fs::read(roost_tests::fixture_wasm("conformance-rs")).expect("fixture");
    let first = PluginEngine::new(EngineConfig::with_cache_dir(&cache)).expect("engine");
    let asked = first.load_bytes("conf", &bytes).expect("loads");
    assert_eq!(asked.compiled(), Some(CacheOutcome::Compiled));
    for e in std::fs::read_dir(&cache).expect("cache").flatten() {
        if e.file_name().to_string_lossy().ends_with(".cwasm") {
            std::fs::remove_file(e.path()).expect("remove");
        }
    }
    let engine = PluginEngine::new(EngineConfig::with_cache_dir(&cache)).expect("engine");
    let known = engine.load_bytes("conf", &bytes).expect("loads");
    assert!(known.tools_from_cache());
    assert_eq!(known.compiled(), None);
    assert_eq!(known.tools(), asked.tools());
    echoes(&engine, &known).await;
    assert_eq!(known.compiled(), Some(CacheOutcome::Compiled));
}

/// A start whose components the cache knows makes no wasmtime engine: no
/// pool of call slots reserved, no host interface linked (`roost tool
/// list` never calls). The first call makes it, and finds the compiled
/// code the start before kept: an engine with a pool and one without name
/// the cache's entries alike.
#[tokio::test]
async fn a_start_that_only_lists_known_tools_makes_no_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let bytes = std::fs::read(roost_tests::fixture_wasm("conformance-rs")).expect("fixture");
    let open = || PluginEngine::new(first_party::engine_config(&cache)).expect("engine");
    let first = open();
    assert!(!first.runtime_started(), "made before anything needs it");
    first_party::load_all(&first).expect("first-party plugins");
    let asked = first.load_bytes("conf", &bytes).expect("loads");
    assert_eq!(asked.compiled(), Some(CacheOutcome::Compiled));
    assert!(first.runtime_started() && first.is_pooled());
    drop(first);

    let engine = open();
    let listed = first_party::load_all(&engine).expect("first-party plugins");
    let known = engine.load_bytes("conf", &bytes).expect("loads");
    assert!(listed.iter().all(|p| p.tools_from_cache()) && known.tools_from_cache());
    assert!(!engine.runtime_started(), "a listing start made the engine");

    echoes(&engine, &known).await;
    assert!(engine.runtime_started() && engine.is_pooled());
    assert_eq!(known.compiled(), Some(CacheOutcome::Hit));
}
