//! First-party plugins and mode hooks, built from `plugins/` by
//! `host/core/build.rs` and embedded in the binary so `roost` works from any
//! directory; with each, the sealed artifact the build precompiled for this
//! machine, so a first run loads them at once instead of compiling.

use std::path::PathBuf;
use std::sync::Arc;

use roost_sandbox::plugins::{EngineConfig, LoadedHook, LoadedPlugin, PluginEngine, PluginError};

/// `plugins/fs-tools`: Roo Code's file tools.
pub const FS_TOOLS: &[u8] =
    include_bytes!(concat!(env!("ROOST_FIRST_PARTY_DIR"), "/fs_tools.wasm"));

/// `plugins/secret-guard`: a mode hook that refuses edits adding
/// credentials or touching `.env*` files.
pub const SECRET_GUARD: &[u8] =
    include_bytes!(concat!(env!("ROOST_FIRST_PARTY_DIR"), "/secret_guard.wasm"));

/// `plugins/protected-paths`: a mode hook that asks before edits to Roo's
/// protected configuration files.
pub const PROTECTED_PATHS: &[u8] = include_bytes!(concat!(
    env!("ROOST_FIRST_PARTY_DIR"),
    "/protected_paths.wasm"
));

/// The sealed precompiled artifacts of [`FS_TOOLS`], [`SECRET_GUARD`]
/// and [`PROTECTED_PATHS`], compiled by the build with the runtime's own
/// engine config (`roost-engine-config`).
pub const PREBUILT: &[&[u8]] = &[
    include_bytes!(concat!(env!("OUT_DIR"), "/fs_tools.sealed")),
    include_bytes!(concat!(env!("OUT_DIR"), "/secret_guard.sealed")),
    include_bytes!(concat!(env!("OUT_DIR"), "/protected_paths.sealed")),
];

/// Every first-party tool plugin: (name, component bytes).
pub const ALL: &[(&str, &[u8])] = &[("fs-tools", FS_TOOLS)];

/// Every first-party mode hook: (name modes use in `hooks:`, component bytes).
pub const HOOKS: &[(&str, &[u8])] = &[
    ("secret-guard", SECRET_GUARD),
    ("protected-paths", PROTECTED_PATHS),
];

/// The plugin engine's configuration as a Roost host runs it: compiled
/// components cached in `cache_dir`, and the first-party ones loaded from
/// the build's precompiled artifacts.
pub fn engine_config(cache_dir: impl Into<PathBuf>) -> EngineConfig {
    EngineConfig::with_cache_dir(cache_dir).with_prebuilt(PREBUILT)
}

/// Load every first-party tool plugin.
pub fn load_all(engine: &PluginEngine) -> Result<Vec<Arc<LoadedPlugin>>, PluginError> {
    ALL.iter()
        .map(|(name, bytes)| engine.load_bytes(name, bytes))
        .collect()
}

/// Every first-party mode hook, prepared on first use (most modes use
/// none, and a start should not pay for them).
pub fn load_hooks(engine: &PluginEngine) -> Result<Vec<Arc<LoadedHook>>, PluginError> {
    HOOKS
        .iter()
        .map(|(name, bytes)| engine.load_hook_deferred(name, bytes))
        .collect()
}
