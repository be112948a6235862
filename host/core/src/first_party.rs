//! First-party plugins and mode hooks, built from `plugins/` by
//! `host/core/build.rs` and embedded in the binary so `roost` works from any
//! directory.

use std::sync::Arc;

use roost_sandbox::plugins::{LoadedHook, LoadedPlugin, PluginEngine, PluginError};

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

/// Every first-party tool plugin: (name, component bytes).
pub const ALL: &[(&str, &[u8])] = &[("fs-tools", FS_TOOLS)];

/// Every first-party mode hook: (name modes use in `hooks:`, component bytes).
pub const HOOKS: &[(&str, &[u8])] = &[
    ("secret-guard", SECRET_GUARD),
    ("protected-paths", PROTECTED_PATHS),
];

/// Whether loading the first-party components will compile some (the
/// first run on a machine, or after an upgrade): a front-end says so, as
/// it takes seconds.
pub fn needs_compile(engine: &PluginEngine, with_hooks: bool) -> bool {
    let Some(cache) = engine.cache() else {
        return true;
    };
    let hooks: &[(&str, &[u8])] = if with_hooks { HOOKS } else { &[] };
    ALL.iter()
        .chain(hooks)
        .any(|(_, bytes)| !cache.has_entry(bytes))
}

/// Load every first-party tool plugin.
pub fn load_all(engine: &PluginEngine) -> Result<Vec<Arc<LoadedPlugin>>, PluginError> {
    ALL.iter()
        .map(|(name, bytes)| engine.load_bytes(name, bytes))
        .collect()
}

/// Load every first-party mode hook.
pub fn load_hooks(engine: &PluginEngine) -> Result<Vec<Arc<LoadedHook>>, PluginError> {
    HOOKS
        .iter()
        .map(|(name, bytes)| engine.load_hook_bytes(name, bytes))
        .collect()
}
