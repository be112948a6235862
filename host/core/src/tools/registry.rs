//! Every tool a task can call, by name, with what runs it (a
//! [`ToolExecutor`]: a component plugin in the sandbox, a host-native
//! handler, later skills and MCP servers) and the most its calls may be
//! granted. A task may see the process's registry with tools of its own
//! laid over it ([`Registry::with_overlay`]: a workspace's MCP servers and
//! skills). A tool is offered, gated and run the same way whoever provides
//! it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use super::access::Access;
use super::component::ComponentTool;
use super::executor::{HOST, ToolExecutor};
use super::native;
use crate::llm::{ToolDefinition, WireFormat};
use crate::tools::{ArgsValidator, ToolSpec, reserved};
use roost_sandbox::plugins::LoadedPlugin;

/// Two providers may not claim the same tool name: the model could not
/// tell them apart.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A name is provided twice.
    #[error("tool `{tool}` is provided by both `{first}` and `{second}`")]
    Duplicate {
        /// Tool name.
        tool: String,
        /// Provider registered first.
        first: String,
        /// Provider registered second.
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

/// A tool, its compiled argument schema, and what runs it.
#[derive(Clone)]
pub struct RegisteredTool {
    /// The tool's spec.
    pub spec: ToolSpec,
    /// The spec's schema, compiled once.
    pub validator: Arc<ArgsValidator>,
    /// What runs it.
    pub executor: Arc<dyn ToolExecutor>,
    /// The most its calls may be granted.
    pub access: Access,
}

impl RegisteredTool {
    /// A tool run by `executor`, its calls granted at most `access`; its
    /// schema compiled.
    pub fn new(executor: Arc<dyn ToolExecutor>, access: Access) -> Result<Self, RegistryError> {
        let spec = executor.spec().clone();
        let validator =
            ArgsValidator::new(&spec.args_schema).map_err(|detail| RegistryError::BadSchema {
                tool: spec.name.clone(),
                plugin: executor.provider().to_owned(),
                detail,
            })?;
        Ok(Self {
            spec,
            validator: Arc::new(validator),
            executor,
            access,
        })
    }

    /// [`Self::new`] for a tool whose schema is known to compile: the
    /// host's own tools (their tests compile each schema), or a plugin's
    /// that this host compiled when it first loaded the plugin (its tool
    /// list came from the component cache). Compiled when a call first
    /// needs it, so a start that only lists tools compiles none.
    pub fn known(executor: Arc<dyn ToolExecutor>, access: Access) -> Self {
        let spec = executor.spec().clone();
        Self {
            validator: Arc::new(ArgsValidator::deferred(spec.args_schema.clone())),
            spec,
            executor,
            access,
        }
    }

    /// Who provides the tool: the plugin's name, or [`HOST`].
    pub fn provider(&self) -> &str {
        self.executor.provider()
    }

    /// What kind of thing runs the tool.
    pub fn kind(&self) -> super::ToolKind {
        self.executor.kind()
    }

    /// The component plugin that runs the tool, if one does.
    pub fn component(&self) -> Option<&Arc<LoadedPlugin>> {
        self.executor.component()
    }

    /// Whether the host runs the tool itself.
    pub fn is_native(&self) -> bool {
        self.executor.provider() == HOST
    }
}

/// Most tool lists whose encodings a registry keeps (one per mode, in
/// practice; custom modes could make more).
const MAX_ENCODINGS: usize = 64;

/// Every tool the host can offer, by name (sorted, so prompts are stable).
pub struct Registry {
    tools: BTreeMap<String, RegisteredTool>,
    /// Tool lists as a wire format encodes them, by wire and tool names:
    /// every task offered the same tools sends the same bytes, so they
    /// are encoded once per process, not once per task.
    encodings: Mutex<HashMap<String, Bytes>>,
}

impl Clone for Registry {
    /// A copy with the same tools and no encodings (it may gain tools of
    /// its own).
    fn clone(&self) -> Self {
        Self {
            tools: self.tools.clone(),
            encodings: Mutex::default(),
        }
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// A registry holding the host-native tools.
    pub fn new() -> Self {
        let mut tools = BTreeMap::new();
        // The native schemas are the host's own: a unit test compiles
        // each, so a start need not.
        for executor in native::all() {
            let t = RegisteredTool::known(executor, Access::FULL);
            tools.insert(t.spec.name.clone(), t);
        }
        Self {
            tools,
            encodings: Mutex::default(),
        }
    }

    /// This registry with `extra` tools laid over it, for one task (a
    /// workspace's MCP servers and skills): each must have a name of its
    /// own, never one already here.
    pub fn with_overlay(&self, extra: Vec<RegisteredTool>) -> Result<Self, RegistryError> {
        let mut out = self.clone();
        for t in extra {
            out.add(t)?;
        }
        Ok(out)
    }

    /// Add one tool; its name must be free (and, for a component's tool,
    /// not reserved for the host: the host's own executors — natives,
    /// commands, skills, MCP servers' `mcp__` tools — may use those).
    pub fn add(&mut self, tool: RegisteredTool) -> Result<(), RegistryError> {
        if tool.component().is_some()
            && let Some(reason) = reserved::reserved(&tool.spec.name)
        {
            return Err(RegistryError::Reserved {
                tool: tool.spec.name.clone(),
                plugin: tool.provider().to_owned(),
                reason,
            });
        }
        if let Some(existing) = self.tools.get(&tool.spec.name) {
            return Err(RegistryError::Duplicate {
                tool: tool.spec.name.clone(),
                first: existing.provider().to_owned(),
                second: tool.provider().to_owned(),
            });
        }
        self.encodings_lock().clear();
        self.tools.insert(tool.spec.name.clone(), tool);
        Ok(())
    }

    /// Register every tool of `plugin`; nothing is registered when one of
    /// its names is reserved, taken, or has a schema that does not compile.
    pub fn add_plugin(&mut self, plugin: Arc<LoadedPlugin>) -> Result<(), RegistryError> {
        self.add_plugin_with(plugin, Access::FULL)
    }

    /// Register every tool of `plugin`, its calls granted at most `access`.
    pub fn add_plugin_with(
        &mut self,
        plugin: Arc<LoadedPlugin>,
        access: Access,
    ) -> Result<(), RegistryError> {
        for spec in plugin.tools() {
            if let Some(reason) = reserved::reserved(&spec.name) {
                return Err(RegistryError::Reserved {
                    tool: spec.name.clone(),
                    plugin: plugin.name().to_owned(),
                    reason,
                });
            }
            if let Some(existing) = self.tools.get(&spec.name) {
                return Err(RegistryError::Duplicate {
                    tool: spec.name.clone(),
                    first: existing.provider().to_owned(),
                    second: plugin.name().to_owned(),
                });
            }
        }
        let mut compiled = Vec::new();
        for spec in plugin.tools() {
            let executor = Arc::new(ComponentTool::new(Arc::clone(&plugin), spec.clone()));
            compiled.push(if plugin.tools_from_cache() {
                RegisteredTool::known(executor, access.clone())
            } else {
                RegisteredTool::new(executor, access.clone())?
            });
        }
        self.encodings_lock().clear();
        for t in compiled {
            self.tools.insert(t.spec.name.clone(), t);
        }
        Ok(())
    }

    /// Look a tool up by name.
    pub fn get(&self, name: &str) -> Option<&RegisteredTool> {
        self.tools.get(name)
    }

    /// Whether `name` is a host-native tool.
    pub fn is_native(&self, name: &str) -> bool {
        self.get(name).is_some_and(RegisteredTool::is_native)
    }

    /// All tools, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &RegisteredTool> {
        self.tools.values()
    }

    fn encodings_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Bytes>> {
        // A map of finished encodings stays consistent whatever panicked.
        self.encodings.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The tool list `offered` (tools of this registry) as `wire` encodes
    /// it (the portable subset of each schema). Encoded once, then shared
    /// by every task offered it.
    pub fn encoded_tools(
        &self,
        wire: &dyn WireFormat,
        offered: &[&ToolSpec],
    ) -> Result<Bytes, serde_json::Error> {
        // Sized first: asked every turn, it would otherwise grow (and copy
        // itself) several times for a mode's dozen or so tools.
        let len = offered
            .iter()
            .fold(wire.id().len(), |n, s| n + 1 + s.name.len());
        let mut key = String::with_capacity(len);
        key.push_str(wire.id());
        for s in offered {
            key.push('\0');
            key.push_str(&s.name);
        }
        if let Some(bytes) = self.encodings_lock().get(&key) {
            return Ok(bytes.clone());
        }
        let mut out = Vec::new();
        wire.tools(&mut out, &definitions(offered))?;
        let bytes = Bytes::from(out);
        let mut map = self.encodings_lock();
        if map.len() >= MAX_ENCODINGS {
            map.clear();
        }
        map.insert(key, bytes.clone());
        Ok(bytes)
    }
}

/// The tools `offered` as the model is told of them: the portable subset
/// of each schema (calls are checked against the full one).
fn definitions(offered: &[&ToolSpec]) -> Vec<ToolDefinition> {
    offered
        .iter()
        .map(|s| ToolDefinition {
            name: s.name.clone(),
            description: s.description.clone(),
            parameters: crate::llm::schema::portable(&s.args_schema),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The native tools' schemas are compiled on a call's first need, not
    /// at registration: each must compile, and refuse what it should.
    #[test]
    fn every_native_schema_compiles() {
        for t in native::all() {
            let spec = t.spec();
            let v = ArgsValidator::new(&spec.args_schema)
                .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            assert!(
                v.check(&serde_json::json!(42)).is_err(),
                "{} accepts a number for its arguments",
                spec.name
            );
        }
    }

    #[test]
    fn every_native_tool_registers_and_its_name_is_reserved_from_plugins() {
        let registry = Registry::new();
        let natives: Vec<&RegisteredTool> = registry.iter().filter(|t| t.is_native()).collect();
        assert_eq!(natives.len(), native::all().len());
        assert_eq!(native::names().count(), native::all().len());
        for t in natives {
            assert!(
                reserved::reserved(&t.spec.name).is_some(),
                "{} must be reserved",
                t.spec.name
            );
            assert_eq!(t.provider(), HOST);
        }
    }

    /// A tool list is encoded once per wire and list, and the bytes are
    /// the wire's own encoding of the tools' portable schemas; another
    /// list, another wire or a copy of the registry gets its own.
    #[test]
    fn tool_lists_are_encoded_once_and_shared() {
        use crate::llm::anthropic::AnthropicWire;
        use crate::llm::openai::OpenAiWire;
        let registry = Registry::new();
        let all: Vec<&ToolSpec> = registry.iter().map(|t| &t.spec).collect();
        let some = &all[..2];
        let first = registry.encoded_tools(&OpenAiWire, &all).expect("encodes");
        let again = registry.encoded_tools(&OpenAiWire, &all).expect("encodes");
        assert!(
            std::ptr::eq(first.as_ptr(), again.as_ptr()),
            "the same list is shared"
        );
        let mut direct = Vec::new();
        OpenAiWire
            .tools(&mut direct, &definitions(&all))
            .expect("encodes");
        assert_eq!(&first[..], &direct[..]);
        let fewer = registry.encoded_tools(&OpenAiWire, some).expect("encodes");
        assert_ne!(&first[..], &fewer[..]);
        let other_wire = registry
            .encoded_tools(&AnthropicWire, &all)
            .expect("encodes");
        assert_ne!(&first[..], &other_wire[..]);
        let copy = registry.clone();
        let copied = copy.encoded_tools(&OpenAiWire, &all).expect("encodes");
        assert!(
            !std::ptr::eq(first.as_ptr(), copied.as_ptr()),
            "a copy keeps its own"
        );
        assert_eq!(&first[..], &copied[..]);
    }
}
