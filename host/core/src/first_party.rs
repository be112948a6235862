//! First-party plugins and mode hooks, built from `plugins/` by
//! `host/core/build.rs` and embedded in the binary so `roost` works from any
//! directory; with each, the sealed artifact the build precompiled for this
//! machine, so a first run loads them at once instead of compiling.

use std::borrow::Cow;
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

/// A component this binary embeds.
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    /// The plugin's name.
    pub name: &'static str,
    /// Its component's bytes.
    pub bytes: &'static [u8],
    /// The BLAKE3 hash of `bytes`, computed by the build: a start need
    /// not read 1.5 MB to learn it.
    pub blake3: [u8; 32],
}

/// Every first-party tool plugin.
pub const ALL: &[Embedded] = &[Embedded {
    name: "fs-tools",
    bytes: FS_TOOLS,
    blake3: *include_bytes!(concat!(env!("OUT_DIR"), "/fs_tools.blake3")),
}];

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
        .map(|c| {
            engine.load_component_hashed(
                c.name,
                Cow::Borrowed(c.bytes),
                blake3::Hash::from_bytes(c.blake3),
            )
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash the build recorded is the embedded bytes' own: a start
    /// that trusts it keys the component cache and the precompiled
    /// artifacts exactly as hashing the bytes would.
    #[test]
    fn each_embedded_hash_is_its_bytes_hash() {
        for c in ALL {
            assert_eq!(
                blake3::hash(c.bytes),
                blake3::Hash::from_bytes(c.blake3),
                "{}",
                c.name
            );
        }
    }
}
