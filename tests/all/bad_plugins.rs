//! Bad plugins fail to load with a clear error naming the plugin, and
//! nothing else breaks.

use roost_core::first_party;
use roost_sandbox::capability::Grant;
use roost_sandbox::plugins::{
    CacheOutcome, ComponentFile, EngineConfig, PluginEngine, PluginError,
};
use roost_tests::{TestWorkspace, engine, fixture_wasm};

fn load_err(name: &str, bytes: &[u8]) -> PluginError {
    engine().load_bytes(name, bytes).expect_err("must not load")
}

async fn good_plugin_still_works() {
    let ws = TestWorkspace::new();
    let p = engine()
        .load_file("limits", &fixture_wasm("limits"))
        .expect("good plugin loads");
    assert_eq!(
        engine()
            .call(&p, "ok", "{}", &Grant::new(ws.path()))
            .await
            .expect("call")
            .text,
        "ok"
    );
}

#[tokio::test]
async fn not_wasm() {
    let e = load_err("notes", b"#!/bin/sh\necho hi\n");
    assert!(matches!(e, PluginError::NotWasm { .. }), "{e}");
    assert!(e.to_string().contains("`notes`"), "{e}");
    let e = load_err("empty", b"");
    assert!(matches!(e, PluginError::NotWasm { .. }), "{e}");
    good_plugin_still_works().await;
}

#[tokio::test]
async fn core_module_is_not_a_component() {
    let e = load_err("core", b"\0asm\x01\0\0\0");
    assert!(matches!(e, PluginError::CoreModule { .. }), "{e}");
    assert!(
        e.to_string().contains("`core`") && e.to_string().contains("component"),
        "{e}"
    );
    good_plugin_still_works().await;
}

#[tokio::test]
async fn truncated_component_fails_to_compile() {
    let bytes = &first_party::FS_TOOLS[..first_party::FS_TOOLS.len() / 2];
    let e = load_err("half", bytes);
    assert!(matches!(e, PluginError::Compile { .. }), "{e}");
    assert!(e.to_string().contains("`half`"), "{e}");
    good_plugin_still_works().await;
}

#[tokio::test]
pub(crate) async fn component_of_another_world() {
    for fixture in ["hook-fixture", "skill-fixture"] {
        let e = engine()
            .load_file(fixture, &fixture_wasm(fixture))
            .expect_err("not a tool plugin");
        assert!(
            matches!(e, PluginError::WrongWorld { .. }),
            "{fixture}: {e}"
        );
        let msg = e.to_string();
        assert!(
            msg.contains(fixture) && msg.contains("tool-plugin"),
            "{msg}"
        );
    }
    good_plugin_still_works().await;
}

#[tokio::test]
pub(crate) async fn component_with_an_import_roost_does_not_provide() {
    let e = engine()
        .load_file("missing-import", &fixture_wasm("missing-import"))
        .expect_err("unsatisfied import");
    assert!(matches!(e, PluginError::UnsatisfiedImport { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("missing-import") && msg.contains("evil:thing/secrets"),
        "{msg}"
    );
    good_plugin_still_works().await;
}

#[tokio::test]
async fn missing_file() {
    let e = engine()
        .load_file("ghost", std::path::Path::new("/nonexistent/ghost.wasm"))
        .expect_err("missing");
    assert!(matches!(e, PluginError::Read { .. }), "{e}");
    assert!(e.to_string().contains("ghost"), "{e}");
    good_plugin_still_works().await;
}

/// A tampered cache entry is never loaded: its MAC fails and the component
/// is recompiled from its bytes.
#[test]
fn tampered_cache_entry_is_recompiled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = std::fs::read(fixture_wasm("limits")).expect("fixture");
    let engine = PluginEngine::new(EngineConfig::with_cache_dir(dir.path())).expect("engine");
    assert_eq!(
        engine.compile("limits", &bytes).expect("compiles").1,
        CacheOutcome::Compiled
    );
    assert_eq!(
        engine.compile("limits", &bytes).expect("loads").1,
        CacheOutcome::Hit
    );

    let entry = std::fs::read_dir(dir.path())
        .expect("cache dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .expect("a cache entry");
    let mut art = std::fs::read(&entry).expect("read entry");
    let mid = art.len() / 2;
    art[mid] ^= 0xff;
    std::fs::write(&entry, &art).expect("tamper");
    assert_eq!(
        engine.compile("limits", &bytes).expect("recompiles").1,
        CacheOutcome::Compiled
    );
    assert_eq!(
        engine.compile("limits", &bytes).expect("loads").1,
        CacheOutcome::Hit
    );

    // A foreign file planted under the right name (no valid MAC) is ignored too.
    std::fs::write(entry.with_extension("cwasm.mac"), "0".repeat(64)).expect("plant mac");
    assert_eq!(
        engine.compile("limits", &bytes).expect("recompiles").1,
        CacheOutcome::Compiled
    );
    let garbage = dir.path().join("cache.key");
    std::fs::write(&garbage, "not hex").expect("corrupt key");
    let engine2 =
        PluginEngine::new(EngineConfig::with_cache_dir(dir.path())).expect("engine with new key");
    assert_eq!(
        engine2.compile("limits", &bytes).expect("recompiles").1,
        CacheOutcome::Compiled
    );
}

/// A plugin's tool list is read from the cache on the next load (no
/// instance is made to ask again); a tampered, forged or foreign list is
/// never believed: the component is asked again and says the truth.
#[test]
fn the_cached_tool_list_is_used_and_a_tampered_one_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bytes = std::fs::read(fixture_wasm("conformance-rs")).expect("fixture");
    let open = || PluginEngine::new(EngineConfig::with_cache_dir(dir.path())).expect("engine");
    let first = open().load_bytes("conf", &bytes).expect("loads");
    assert!(
        !first.tools_from_cache(),
        "the first load asks the component"
    );
    let again = open().load_bytes("conf", &bytes).expect("loads");
    assert!(
        again.tools_from_cache(),
        "a later start reads the kept list"
    );
    assert_eq!(again.tools(), first.tools());
    assert!(first.tools().iter().any(|t| t.destructive));

    let answer = std::fs::read_dir(dir.path())
        .expect("cache dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains(".plugin-"))
        .expect("a kept tool list");
    let kept = std::fs::read(&answer).expect("read");
    // Every destructive tool claimed harmless, with the old MAC.
    let forged = String::from_utf8(kept.clone())
        .expect("text")
        .replace("\"destructive\":true", "\"destructive\":false");
    assert_ne!(forged.as_bytes(), &kept[..]);
    std::fs::write(&answer, &forged).expect("forge");
    let after = open().load_bytes("conf", &bytes).expect("loads");
    assert!(!after.tools_from_cache(), "a forged list is not believed");
    assert_eq!(after.tools(), first.tools());
    // Another component's list planted under this one's name: not believed.
    let other = std::fs::read(fixture_wasm("limits")).expect("fixture");
    open().load_bytes("limits", &other).expect("loads");
    let foreign = std::fs::read_dir(dir.path())
        .expect("cache dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p != &answer && p.to_string_lossy().contains(".plugin-"))
        .expect("the other list");
    std::fs::copy(&foreign, &answer).expect("plant");
    let planted = open().load_bytes("conf", &bytes).expect("loads");
    assert!(!planted.tools_from_cache());
    assert_eq!(planted.tools(), first.tools());
}

/// A component the cache knows is kept as its open file from load to its
/// first call, which reads it again: bytes changed on disk in between are
/// refused with an error naming the plugin; a file renamed over its path is
/// not the one read (the handle is); a file the cache does not know is
/// handed back to be read whole.
#[tokio::test]
async fn a_component_changed_on_disk_after_load_is_refused_at_its_first_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = TestWorkspace::new();
    let cache = dir.path().join("cache");
    let open = || PluginEngine::new(EngineConfig::with_cache_dir(&cache)).expect("engine");
    let bytes = std::fs::read(fixture_wasm("limits")).expect("fixture");
    let mut changed = bytes.clone();
    if let Some(b) = changed.last_mut() {
        *b ^= 1;
    }
    let path = dir.path().join("limits.wasm");
    std::fs::write(&path, &bytes).expect("write");
    // The first load asks the component; the cache keeps its tool list.
    assert!(
        !open()
            .load_bytes("limits", &bytes)
            .expect("loads")
            .tools_from_cache()
    );
    let known = |engine: &PluginEngine| {
        let file = ComponentFile::open(&path).expect("open");
        assert_eq!(file.hash(), blake3::hash(&bytes));
        engine
            .load_known_file("limits", file)
            .expect("known to the cache")
    };

    // Intact: its first call reads it again, and it runs.
    let engine = open();
    let plugin = known(&engine);
    assert!(plugin.tools_from_cache());
    let out = engine
        .call(&plugin, "ok", "{}", &Grant::new(ws.path()))
        .await
        .expect("an intact component runs");
    assert_eq!(out.text, "ok");

    // Changed in place between load and first call: refused, every time.
    let engine = open();
    let plugin = known(&engine);
    std::fs::write(&path, &changed).expect("tamper in place");
    for _ in 0..2 {
        let e = engine
            .call(&plugin, "ok", "{}", &Grant::new(ws.path()))
            .await
            .expect_err("changed after load");
        assert!(
            e.message.contains("plugin `limits`")
                && e.message.contains("changed on disk since it was loaded"),
            "{e:?}"
        );
    }

    // Renamed over its path: the handle still reads what was checked.
    std::fs::write(&path, &bytes).expect("intact again");
    let engine = open();
    let plugin = known(&engine);
    let other = dir.path().join("other.wasm");
    std::fs::write(&other, &changed).expect("write");
    std::fs::rename(&other, &path).expect("rename over");
    let out = engine
        .call(&plugin, "ok", "{}", &Grant::new(ws.path()))
        .await
        .expect("the held file is the one read");
    assert_eq!(out.text, "ok");

    // Bytes the cache does not know: the file comes back to its caller.
    let file = ComponentFile::open(&path).expect("open");
    assert_eq!(file.hash(), blake3::hash(&changed));
    let file = open()
        .load_known_file("limits", file)
        .expect_err("unknown to the cache");
    assert_eq!(file.read_checked("limits").expect("unchanged"), changed);
    std::fs::write(&path, &bytes).expect("changed again");
    let e = file
        .read_checked("limits")
        .expect_err("changed since opened");
    assert!(matches!(e, PluginError::Changed { .. }), "{e}");
}

/// Mode hooks are checked the same way: garbage, a core module and a
/// component of another world fail with an error naming the hook.
#[tokio::test]
async fn bad_hooks_fail_to_load_with_a_clear_error() {
    let e = engine()
        .load_hook_bytes("junk-hook", b"not wasm at all")
        .expect_err("garbage");
    assert!(
        matches!(e, PluginError::NotWasm { .. }) && e.to_string().contains("`junk-hook`"),
        "{e}"
    );
    let e = engine()
        .load_hook_bytes("core-hook", b"\0asm\x01\0\0\0")
        .expect_err("core module");
    assert!(matches!(e, PluginError::CoreModule { .. }), "{e}");
    let e = engine()
        .load_hook_bytes("fs-tools", first_party::FS_TOOLS)
        .expect_err("a tool plugin is not a hook");
    assert!(
        matches!(e, PluginError::WrongWorld { .. }) && e.to_string().contains("mode-hook"),
        "{e}"
    );
    // A hook loaded deferred is checked when first needed, as strictly.
    let e = engine()
        .load_hook_deferred("junk-hook", b"not wasm at all")
        .expect_err("garbage");
    assert!(matches!(e, PluginError::NotWasm { .. }), "{e}");
    let deferred = engine()
        .load_hook_deferred("fs-tools", first_party::FS_TOOLS)
        .expect("only the header is checked at load");
    let e = engine()
        .prepare_hook_now(&deferred)
        .expect_err("a tool plugin is not a hook");
    assert!(
        matches!(e, PluginError::WrongWorld { .. }) && e.to_string().contains("mode-hook"),
        "{e}"
    );
    let e = engine()
        .load_hook_file("gone", std::path::Path::new("/nonexistent/gone.wasm"))
        .expect_err("missing file");
    assert!(e.to_string().contains("gone"), "{e}");
    engine()
        .load_hook_file("hook-fixture", &fixture_wasm("hook-fixture"))
        .expect("a good hook still loads");
    good_plugin_still_works().await;
}
