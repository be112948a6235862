//! Maps tool names to the plugin that provides them.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{ArgsValidator, ToolSpec};
use roost_sandbox::plugins::LoadedPlugin;

/// Two plugins may not claim the same tool name: the model could not tell
/// them apart.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A name is provided twice.
    #[error("tool `{tool}` is provided by both `{first}` and `{second}`")]
    Duplicate {
        /// Tool name.
        tool: String,
        /// Plugin registered first.
        first: String,
        /// Plugin registered second.
        second: String,
    },
    /// A plugin tries to register a name only the host may use.
    #[error("plugin `{plugin}` may not register tool `{tool}`: {reason}")]
    Reserved {
        /// Tool name.
        tool: String,
        /// Plugin.
        plugin: String,
        /// Why the name is reserved.
        reason: String,
    },
    /// A tool's argument schema does not compile.
    #[error("tool `{tool}` of `{plugin}` has an invalid args schema: {detail}")]
    BadSchema {
        /// Tool name.
        tool: String,
        /// Plugin.
        plugin: String,
        /// Compiler message.
        detail: String,
    },
}

/// A tool, its compiled argument schema, and the plugin that runs it.
#[derive(Clone)]
pub struct RegisteredTool {
    /// The tool's spec.
    pub spec: ToolSpec,
    /// Plugin providing it.
    pub plugin: Arc<LoadedPlugin>,
    /// The spec's schema, compiled once.
    pub validator: Arc<ArgsValidator>,
}

/// Every tool the host can offer, by name (sorted, so prompts are stable).
#[derive(Default, Clone)]
pub struct Registry {
    tools: BTreeMap<String, RegisteredTool>,
}

impl Registry {
    /// Empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Register every tool of `plugin`.
    pub fn add_plugin(&mut self, plugin: Arc<LoadedPlugin>) -> Result<(), RegistryError> {
        for spec in plugin.tools() {
            if let Some(reason) = super::reserved::reserved(&spec.name) {
                return Err(RegistryError::Reserved {
                    tool: spec.name.clone(),
                    plugin: plugin.name().to_owned(),
                    reason,
                });
            }
            if let Some(existing) = self.tools.get(&spec.name) {
                return Err(RegistryError::Duplicate {
                    tool: spec.name.clone(),
                    first: existing.plugin.name().to_owned(),
                    second: plugin.name().to_owned(),
                });
            }
        }
        let mut compiled = Vec::new();
        for spec in plugin.tools() {
            let validator = ArgsValidator::new(&spec.args_schema).map_err(|detail| {
                RegistryError::BadSchema {
                    tool: spec.name.clone(),
                    plugin: plugin.name().to_owned(),
                    detail,
                }
            })?;
            compiled.push((spec.clone(), Arc::new(validator)));
        }
        for (spec, validator) in compiled {
            let plugin = Arc::clone(&plugin);
            self.tools.insert(
                spec.name.clone(),
                RegisteredTool {
                    spec,
                    plugin,
                    validator,
                },
            );
        }
        Ok(())
    }

    /// Look a tool up by name.
    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.get(name)
    }

    /// All tools, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &RegisteredTool> {
        self.tools.values()
    }
}
