//! First-party plugins, built from `plugins/` by `host/build.rs` and
//! embedded in the binary so `roost` works from any directory.

use std::sync::Arc;

use super::{LoadedPlugin, PluginEngine, PluginError};

/// `plugins/fs-tools`: Roo Code's file tools.
pub const FS_TOOLS: &[u8] =
    include_bytes!(concat!(env!("ROOST_FIRST_PARTY_DIR"), "/fs_tools.wasm"));

/// Every first-party plugin: (name, component bytes).
pub const ALL: &[(&str, &[u8])] = &[("fs-tools", FS_TOOLS)];

/// Load every first-party plugin.
pub fn load_all(engine: &PluginEngine) -> Result<Vec<Arc<LoadedPlugin>>, PluginError> {
    ALL.iter()
        .map(|(name, bytes)| engine.load_bytes(name, bytes))
        .collect()
}
