//! Skill components (world `skill`): the scripts of a skill folder built
//! as one component. Roost never runs a skill's scripts natively; an entry
//! runs like a tool call, in a fresh store sandboxed by the call's grant
//! (the workspace read-only, writable only where the grant says, no
//! network), so an entry that traps, overruns or loops is a [`ToolError`]
//! and never a host crash.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use wasmtime::Store;

use super::PluginEngine;
use super::bindings::since_v0_1_0;
use super::bindings::skill::SkillPre as LatestPre;
use super::bindings::tool_plugin::roost::plugin::types as wit;
use super::engine::{
    MAX_TOOLS, WIT_VERSIONS, cap_output, convert_code, valid_tool_name, wrong_world,
};
use super::error::PluginError;
use super::state::{CallState, cut};
use crate::capability::Grant;
use crate::tool::{ToolError, ToolOutput};

/// Largest `args-schema` of one entry, in bytes.
const MAX_SCHEMA: usize = 64 << 10;
/// Longest entry or skill description kept, in bytes.
const MAX_DESCRIPTION: usize = 1024;

/// A skill component's prepared instance, by the `roost:plugin` version it
/// was built against.
#[derive(Clone)]
enum SkillPre {
    /// The latest version (0.2.0).
    Latest(LatestPre<CallState>),
    /// 0.1.0, through [`since_v0_1_0`] (no filesystem).
    V0_1_0(since_v0_1_0::skill::SkillPre<CallState>),
}

impl SkillPre {
    fn wit_version(&self) -> &'static str {
        match self {
            Self::Latest(_) => WIT_VERSIONS[0],
            Self::V0_1_0(_) => "0.1.0",
        }
    }

    async fn metadata(&self, store: &mut Store<CallState>) -> wasmtime::Result<wit::SkillMetadata> {
        Ok(match self {
            Self::Latest(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_skill_runner()
                    .call_metadata(&mut *store)
                    .await?
            }
            Self::V0_1_0(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_skill_runner()
                    .call_metadata(&mut *store)
                    .await?
                    .into()
            }
        })
    }

    async fn run(
        &self,
        store: &mut Store<CallState>,
        entry: &str,
        args: &str,
    ) -> wasmtime::Result<Result<wit::ToolOutput, wit::ToolError>> {
        Ok(match self {
            Self::Latest(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_skill_runner()
                    .call_run(&mut *store, entry, args)
                    .await?
            }
            Self::V0_1_0(pre) => {
                let inst = pre.instantiate_async(&mut *store).await?;
                inst.roost_plugin_skill_runner()
                    .call_run(&mut *store, entry, args)
                    .await?
                    .map(Into::into)
                    .map_err(Into::into)
            }
        })
    }
}

/// One callable entry of a skill component, as its metadata describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillEntry {
    /// Entry name, passed to `run`.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments (an object).
    pub args_schema: Value,
}

/// A loaded skill component: its prepared instance and what it offers.
pub struct LoadedSkill {
    name: String,
    pre: SkillPre,
    skill: String,
    description: String,
    entries: Vec<SkillEntry>,
    hash: blake3::Hash,
}

impl LoadedSkill {
    /// The name it was loaded under (its folder's skill).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The skill name its metadata gives (must match `SKILL.md`).
    pub fn declared_name(&self) -> &str {
        &self.skill
    }

    /// Its metadata's description.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Its callable entries.
    pub fn entries(&self) -> &[SkillEntry] {
        &self.entries
    }

    /// One entry by name.
    pub fn entry(&self, name: &str) -> Option<&SkillEntry> {
        self.entries.iter().find(|e| e.name == name)
    }

    /// Content hash of the component.
    pub fn content_hash(&self) -> String {
        self.hash.to_hex().to_string()
    }

    /// The `roost:plugin` version it was built against.
    pub fn wit_version(&self) -> &'static str {
        self.pre.wit_version()
    }
}

impl std::fmt::Debug for LoadedSkill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedSkill")
            .field("name", &self.name)
            .field("entries", &self.entries.len())
            .finish()
    }
}

impl PluginEngine {
    /// Load a skill component from a file (see [`Self::load_skill_bytes`]).
    pub fn load_skill_file(
        &self,
        name: &str,
        path: &Path,
    ) -> Result<Arc<LoadedSkill>, PluginError> {
        let bytes = std::fs::read(path).map_err(|source| PluginError::Read {
            plugin: name.to_owned(),
            path: path.to_path_buf(),
            source,
        })?;
        self.load_skill_bytes(name, &bytes)
    }

    /// Load a skill component from its bytes: a component of world
    /// `skill` (any version the host loads), compiled (or taken from the
    /// cache) and linked, its metadata asked for in a call granted
    /// nothing and checked (entry names, unique, schemas that are JSON
    /// objects). Blocks while it compiles.
    pub fn load_skill_bytes(
        &self,
        name: &str,
        bytes: &[u8],
    ) -> Result<Arc<LoadedSkill>, PluginError> {
        let hash = blake3::hash(bytes);
        let (instance_pre, _) = self.prepare(name, bytes, &hash)?;
        let pre = match LatestPre::new(instance_pre.clone()) {
            Ok(pre) => SkillPre::Latest(pre),
            Err(latest) => match since_v0_1_0::skill::SkillPre::new(instance_pre) {
                Ok(pre) => SkillPre::V0_1_0(pre),
                Err(_) => return Err(wrong_world(name, "roost:plugin/skill", &latest)),
            },
        };
        let bad = |detail: String| PluginError::BadTools {
            plugin: name.to_owned(),
            detail,
        };
        let meta = self
            .at_load(name, async |store: &mut Store<CallState>| {
                pre.metadata(store).await
            })
            .map_err(|e| bad(format!("`metadata` {e}")))?;
        if meta.entries.len() > MAX_TOOLS {
            return Err(bad(format!(
                "lists {} entries; at most {MAX_TOOLS} are accepted",
                meta.entries.len()
            )));
        }
        let mut entries: Vec<SkillEntry> = Vec::with_capacity(meta.entries.len());
        for e in meta.entries {
            if !valid_tool_name(&e.name) {
                return Err(bad(format!(
                    "invalid entry name {:?} (want 1-64 of [A-Za-z0-9_-])",
                    e.name
                )));
            }
            if entries.iter().any(|x| x.name == e.name) {
                return Err(bad(format!("entry `{}` is listed twice", e.name)));
            }
            if e.args_schema.len() > MAX_SCHEMA {
                return Err(bad(format!(
                    "entry `{}` has an args schema of {} bytes; at most {MAX_SCHEMA}",
                    e.name,
                    e.args_schema.len()
                )));
            }
            let schema: Value = serde_json::from_str(&e.args_schema).map_err(|err| {
                bad(format!(
                    "entry `{}` has an args schema that is not JSON: {err}",
                    e.name
                ))
            })?;
            if !schema.is_object() {
                return Err(bad(format!(
                    "entry `{}` has an args schema that is not a JSON object",
                    e.name
                )));
            }
            entries.push(SkillEntry {
                name: e.name,
                description: cut(&e.description, MAX_DESCRIPTION).to_owned(),
                args_schema: schema,
            });
        }
        Ok(Arc::new(LoadedSkill {
            name: name.to_owned(),
            pre,
            skill: cut(&meta.name, 128).to_owned(),
            description: cut(&meta.description, MAX_DESCRIPTION).to_owned(),
            entries,
            hash: blake3::hash(bytes),
        }))
    }

    /// Run `entry` of `skill` with `args` (JSON text) under `grant`: a
    /// fresh store, the grant's sandbox and limits, and no network.
    pub async fn run_skill(
        &self,
        skill: &LoadedSkill,
        entry: &str,
        args: &str,
        grant: &Grant,
    ) -> Result<ToolOutput, ToolError> {
        let pre = skill.pre.clone();
        let (entry, args) = (entry.to_owned(), args.to_owned());
        let res = self
            .bounded(
                &skill.name,
                grant,
                async move |store: &mut Store<CallState>| pre.run(store, &entry, &args).await,
            )
            .await?;
        match res {
            Ok(out) => Ok(cap_output(&skill.name, out, grant.limits.output_bytes)),
            Err(e) => Err(ToolError::new(
                convert_code(e.code),
                cut(&e.message, grant.limits.output_bytes),
            )),
        }
    }
}
