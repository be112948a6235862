//! Modes, as in Roo Code: a mode is a role for the model plus the tool
//! groups it may use (an edit group may be narrowed to files matching a
//! regex), and Roost's own list of hook plugins. Built-in modes can be
//! overridden by slug from the global `custom_modes.yaml` and from the
//! workspace's `.roomodes` (project > global > built-in).

mod builtin;
mod file;
mod hooks;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use regex::Regex;
use serde::Serialize;

use roost_protocol::{ToolGroup, ToolSpec};
use roost_sandbox::capability::Workspace;

pub use file::ModeFileError;

/// A workspace's own modes file (Roo Code's name for it).
const PROJECT_FILE: &str = ".roomodes";
pub use hooks::HookRegistry;

/// Where a mode came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "path")]
pub enum ModeSource {
    /// Shipped with Roost.
    BuiltIn,
    /// The user's `custom_modes.yaml`.
    Global(PathBuf),
    /// The workspace's `.roomodes`.
    Project(PathBuf),
}

/// One group a mode enables, optionally narrowed to some files.
#[derive(Debug, Clone, Serialize)]
pub struct GroupGrant {
    /// The group.
    pub group: ToolGroup,
    /// Files edit tools may touch (`fileRegex`), if narrowed.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "regex_str")]
    pub file_regex: Option<Regex>,
    /// Human description of the restriction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn regex_str<S: serde::Serializer>(r: &Option<Regex>, s: S) -> Result<S::Ok, S::Error> {
    match r {
        Some(r) => s.serialize_str(r.as_str()),
        None => s.serialize_none(),
    }
}

/// A mode.
#[derive(Debug, Clone, Serialize)]
pub struct Mode {
    /// Identifier (`code`, `architect`, …).
    pub slug: String,
    /// Display name.
    pub name: String,
    /// The model's role in this mode.
    pub role_definition: String,
    /// When to pick this mode (shown to orchestrators).
    pub when_to_use: Option<String>,
    /// Short description.
    pub description: Option<String>,
    /// Extra instructions appended to the system prompt.
    pub custom_instructions: Option<String>,
    /// Enabled tool groups.
    pub groups: Vec<GroupGrant>,
    /// Hook plugins consulted on every call in this mode.
    pub hooks: Vec<String>,
    /// The command profile its commands run under (`commandProfile`).
    pub command_profile: Option<String>,
    /// Origin.
    pub source: ModeSource,
}

impl Mode {
    /// The grant for `group`, if the mode enables it.
    pub fn group(&self, group: ToolGroup) -> Option<&GroupGrant> {
        self.groups.iter().find(|g| g.group == group)
    }

    /// Whether the tool is offered to the model in this mode (`always`:
    /// it is one every mode has, see `ToolExecutor::always_available`).
    pub fn offers(&self, spec: &ToolSpec, always: bool) -> bool {
        always || self.group(spec.group).is_some()
    }

    /// The execution-time gate: the tool's group must be enabled, and every
    /// declared path must match the group's `fileRegex` (Roo's
    /// file-restriction message otherwise).
    pub fn check(
        &self,
        spec: &ToolSpec,
        args: &serde_json::Value,
        always: bool,
    ) -> Result<(), String> {
        if always {
            return Ok(());
        }
        let Some(grant) = self.group(spec.group) else {
            return Err(format!(
                "Tool `{}` is not allowed in {} mode (it needs the `{}` group). Use switch_mode to change to a mode that allows it.",
                spec.name, self.slug, spec.group
            ));
        };
        if let Some(re) = &grant.file_regex {
            for arg in &spec.path_args {
                if let Some(path) = args.get(arg).and_then(|v| v.as_str())
                    && !re.is_match(path)
                {
                    return Err(format!(
                        "FileRestrictionError: This mode ({}) can only edit files matching pattern: {}{}. Got: {path}",
                        self.name,
                        re.as_str(),
                        grant
                            .description
                            .as_deref()
                            .map(|d| format!(" ({d})"))
                            .unwrap_or_default()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The modes of a workspace, plus the problems found loading them.
#[derive(Debug, Clone)]
pub struct ModeSet {
    /// Shared with the process's built-ins where a mode is one.
    modes: BTreeMap<String, Arc<Mode>>,
    /// Mode files (or entries) that could not be used; the valid ones were.
    pub errors: Vec<ModeFileError>,
}

impl ModeSet {
    /// Built-ins, overridden by `<config_dir>/custom_modes.yaml`, overridden
    /// by `<workspace>/.roomodes`.
    pub fn load(workspace: &Path, config_dir: Option<&Path>) -> Self {
        Self::layered(config_dir, || {
            file::load(&workspace.join(PROJECT_FILE), true)
        })
    }

    /// [`ModeSet::load`] for a workspace the caller holds open: its
    /// `.roomodes` is read through that handle, so a task's modes come
    /// from the directory it runs in, not from its path opened again.
    pub fn load_in(ws: &Workspace, config_dir: Option<&Path>) -> Self {
        Self::layered(config_dir, || file::load_in(ws, PROJECT_FILE))
    }

    /// Built-ins, then the global file, then what `project` loads.
    fn layered(
        config_dir: Option<&Path>,
        project: impl FnOnce() -> (Vec<Mode>, Vec<ModeFileError>),
    ) -> Self {
        let mut modes: BTreeMap<String, Arc<Mode>> = builtin::modes()
            .iter()
            .map(|m| (m.slug.clone(), Arc::clone(m)))
            .collect();
        let mut errors = Vec::new();
        let mut layer = |(loaded, errs): (Vec<Mode>, Vec<ModeFileError>)| {
            errors.extend(errs);
            for m in loaded {
                modes.insert(m.slug.clone(), Arc::new(m));
            }
        };
        if let Some(dir) = config_dir {
            layer(file::load(&dir.join("custom_modes.yaml"), false));
        }
        layer(project());
        Self { modes, errors }
    }

    /// A mode by slug.
    pub fn get(&self, slug: &str) -> Option<&Mode> {
        self.modes.get(slug).map(Arc::as_ref)
    }

    /// All modes, by slug.
    pub fn iter(&self) -> impl Iterator<Item = &Mode> {
        self.modes.values().map(Arc::as_ref)
    }
}

#[cfg(test)]
mod tests;
