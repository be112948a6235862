//! Every fuzz target keeps passing its seeds and every input its
//! campaigns kept (`fuzz/seeds/<target>`, `fuzz/kept/<target>`): each one
//! through the target's `run` — the production parser and what must hold
//! of its result — in the build the suite already makes. A crash a
//! campaign found and fixed stays fixed here on every test run; the
//! campaigns themselves (`scripts/fuzz.sh`, libFuzzer with coverage) are
//! FUZZING.md's.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

/// The inputs of `target`, seeds first, each folder in name order.
fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut out = Vec::new();
    for dir in ["seeds", "kept"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

/// Run every input of `target` through `run`; name each that panics.
fn replay(target: &str, run: fn(&[u8])) {
    let all = inputs(target);
    assert!(!all.is_empty(), "{target}: no seeds (fuzz/seeds/{target})");
    let failed: Vec<String> = all
        .iter()
        .filter(|path| {
            let data = std::fs::read(path).expect("input");
            catch_unwind(AssertUnwindSafe(|| run(&data))).is_err()
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "{target}: {} of {} inputs fail (replay one with `cargo fuzz run {target} FILE --fuzz-dir fuzz`): {failed:?}",
        failed.len(),
        all.len()
    );
}

macro_rules! targets {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                replay(stringify!($name), roost_tests::fuzz::$name::run);
            }
        )*
    };
}

targets!(
    acp,
    command_policy,
    command_policy_bash,
    config_toml,
    error_body,
    http_api,
    intents,
    mcp_client,
    mcp_config,
    mcp_server,
    modes,
    plugin_manifest,
    registry,
    skill_manifest,
    sse_stream,
    tool_args,
);

/// Every target of the fuzz crate is replayed above.
#[test]
fn every_target_is_replayed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/fuzz_targets");
    let mut names: Vec<String> = std::fs::read_dir(root)
        .expect("fuzz_targets")
        .flatten()
        .filter_map(|e| {
            e.path()
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        })
        .collect();
    names.sort();
    let replayed = [
        "acp",
        "command_policy",
        "command_policy_bash",
        "config_toml",
        "error_body",
        "http_api",
        "intents",
        "mcp_client",
        "mcp_config",
        "mcp_server",
        "modes",
        "plugin_manifest",
        "registry",
        "skill_manifest",
        "sse_stream",
        "tool_args",
    ];
    assert_eq!(names, replayed);
}
