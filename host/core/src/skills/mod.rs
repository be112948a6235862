//! Skills: folder-based capability packs in the Agent Skills format
//! (agentskills.io), as Roo Code, Codex, Claude Code and OpenCode use them.
//! A skill is a folder with a `SKILL.md` whose front-matter names and
//! describes it and whose body is instructions the model loads when the
//! skill applies; it may ship a component (`skill.wasm`, WIT world
//! `skill`) whose entries run sandboxed like any tool.
//!
//! - [`sources`]: where skills live, in precedence order;
//! - [`manifest`]: a `SKILL.md` parsed and checked against the specification;
//! - [`catalog`]: a workspace's skills found, checked and resolved per mode;
//! - [`prompt`]: the system prompt's skills section, within its budget;
//! - [`library`]: every workspace's catalog kept fresh (hot reload), and
//!   skill components loaded once;
//! - `presence`: whether a folder of skills could have appeared, from one
//!   read of what inotify queued.
//!
//! A skill's `scripts/` never run by loading it: only its component's
//! entries run, through `run_skill`, sandboxed and approved like any call.

pub mod catalog;
pub mod files;
pub mod library;
pub mod manifest;
mod presence;
pub mod prompt;
pub mod sources;

pub use catalog::{Catalog, Issue, ModeSkills, Skill, validate};
pub use library::{SkillError, SkillLibrary};
pub use manifest::{Manifest, Problem};
pub use sources::{Origin, Sources};

/// The skill a task is following, when that skill limits which tools may
/// be called (`allowed-tools`, experimental as in the specification).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFocus {
    /// The skill.
    pub skill: String,
    /// The tools it allows.
    pub tools: Vec<String>,
}

impl SkillFocus {
    /// Whether the skill allows calling `tool`.
    pub fn allows(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }
}
