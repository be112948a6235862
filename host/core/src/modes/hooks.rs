//! The mode hooks a host knows, by the names modes list in `hooks:`. A mode
//! naming a hook that is not here gets every call denied (hooks fail
//! closed), so a typo can never silently switch a guard off.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::first_party;
use roost_sandbox::plugins::{LoadedHook, PluginEngine, PluginError};

/// Hook components by name.
#[derive(Debug, Default, Clone)]
pub struct HookRegistry {
    hooks: BTreeMap<String, Arc<LoadedHook>>,
}

impl HookRegistry {
    /// No hooks.
    pub fn new() -> Self {
        Self::default()
    }

    /// The first-party hooks (`secret-guard`, `protected-paths`).
    pub fn first_party(engine: &PluginEngine) -> Result<Self, PluginError> {
        let mut r = Self::new();
        for h in first_party::load_hooks(engine)? {
            r.add(h);
        }
        Ok(r)
    }

    /// Add (or replace) a hook under its own name.
    pub fn add(&mut self, hook: Arc<LoadedHook>) {
        self.hooks.insert(hook.name().to_owned(), hook);
    }

    /// Look a hook up by name.
    pub fn get(&self, name: &str) -> Option<&Arc<LoadedHook>> {
        self.hooks.get(name)
    }

    /// Every hook, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<LoadedHook>> {
        self.hooks.values()
    }
}
