//! Per-call limits: deadline, memory, output size, stack. After each breach
//! the host and the plugin keep working.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use roost_core::tools::ErrorCode;
use roost_sandbox::capability::{Grant, Limits};
use roost_sandbox::plugins::LoadedPlugin;
use roost_tests::{TestWorkspace, engine, fixture_wasm};

fn limits() -> Arc<LoadedPlugin> {
    engine()
        .load_file("limits", &fixture_wasm("limits"))
        .expect("limits fixture loads")
}

async fn ok_still_works(plugin: &LoadedPlugin, ws: &TestWorkspace) {
    let out = engine()
        .call(plugin, "ok", "{}", &Grant::new(ws.path()))
        .await
        .expect("second call succeeds");
    assert_eq!(out.text, "ok");
}

#[tokio::test]
pub(crate) async fn infinite_loop_stops_at_the_deadline() {
    let ws = TestWorkspace::new();
    let plugin = limits();
    let deadline = Duration::from_millis(500);
    let grant = Grant::new(ws.path()).limits(Limits {
        deadline,
        ..Limits::default()
    });
    let err = engine()
        .call(&plugin, "spin", "{}", &grant)
        .await
        .expect_err("spin must be stopped");
    // The outcome. The stop comes at the first epoch tick past the
    // deadline (see `plugins::engine`); tests assert no durations.
    assert_eq!(err.code, ErrorCode::LimitExceeded, "{err}");
    assert!(err.message.contains("deadline"), "{err}");
    ok_still_works(&plugin, &ws).await;
}

#[tokio::test]
async fn memory_bomb_is_limit_exceeded() {
    let ws = TestWorkspace::new();
    let plugin = limits();
    let grant = Grant::new(ws.path()).limits(Limits {
        memory_bytes: 64 << 20,
        ..Limits::default()
    });
    let err = engine()
        .call(&plugin, "membomb", "{}", &grant)
        .await
        .expect_err("bomb must fail");
    assert_eq!(err.code, ErrorCode::LimitExceeded, "{err}");
    assert!(err.message.contains("memory limit of 64 MiB"), "{err}");
    ok_still_works(&plugin, &ws).await;
}

#[tokio::test]
async fn default_memory_limit_holds() {
    let ws = TestWorkspace::new();
    let plugin = limits();
    let err = engine()
        .call(&plugin, "membomb", "{}", &Grant::new(ws.path()))
        .await
        .expect_err("bomb must fail");
    assert_eq!(err.code, ErrorCode::LimitExceeded, "{err}");
    ok_still_works(&plugin, &ws).await;
}

#[tokio::test]
async fn huge_output_is_truncated_to_the_cap() {
    let ws = TestWorkspace::new();
    let plugin = limits();
    let out = engine()
        .call(
            &plugin,
            "big_output",
            r#"{"mib":100}"#,
            &Grant::new(ws.path()),
        )
        .await
        .expect("output is truncated, not an error");
    let cap = Limits::default().output_bytes;
    assert!(out.truncated);
    assert!(out.text.len() <= cap + 200, "{} bytes", out.text.len());
    assert!(
        out.text.ends_with("cap 1048576 bytes]"),
        "marker missing: {}",
        &out.text[out.text.len() - 80..]
    );
    ok_still_works(&plugin, &ws).await;
}

#[tokio::test]
async fn small_output_is_untouched() {
    let ws = TestWorkspace::new();
    let out = engine()
        .call(
            &limits(),
            "big_output",
            r#"{"mib":0}"#,
            &Grant::new(ws.path()),
        )
        .await
        .expect("ok");
    assert!(!out.truncated);
    assert!(out.text.is_empty());
}

#[tokio::test]
async fn deep_recursion_is_an_error() {
    let ws = TestWorkspace::new();
    let plugin = limits();
    let err = engine()
        .call(
            &plugin,
            "recurse",
            r#"{"depth":100000000}"#,
            &Grant::new(ws.path()),
        )
        .await
        .expect_err("recursion must fail");
    assert!(
        matches!(err.code, ErrorCode::LimitExceeded | ErrorCode::Internal),
        "{err}"
    );
    ok_still_works(&plugin, &ws).await;
}

/// A plugin spinning until its deadline does not hold up other calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runaway_plugin_does_not_stall_other_calls() {
    let ws = TestWorkspace::new();
    let plugin = limits();
    let spin_done = Arc::new(AtomicBool::new(false));
    let spinner = {
        let plugin = Arc::clone(&plugin);
        let done = Arc::clone(&spin_done);
        let grant = Grant::new(ws.path()).limits(Limits {
            deadline: Duration::from_secs(3),
            ..Limits::default()
        });
        tokio::spawn(async move {
            let r = engine().call(&plugin, "spin", "{}", &grant).await;
            done.store(true, Ordering::SeqCst);
            r
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    for _ in 0..20 {
        ok_still_works(&plugin, &ws).await;
    }
    assert!(
        !spin_done.load(Ordering::SeqCst),
        "the ok calls waited for the spinning plugin"
    );
    let r = spinner.await.expect("join");
    assert_eq!(r.expect_err("spin stopped").code, ErrorCode::LimitExceeded);
}
