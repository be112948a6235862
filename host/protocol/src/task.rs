//! A task as front-ends name and see it: what to create (its prompt,
//! workspace and the settings that belong to it alone), where it is in its
//! life, and the tokens it used.

use std::collections::BTreeSet;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::tool::ToolGroup;

/// A task as the store keeps it and every front-end sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TaskRecord {
    /// UUID v7.
    pub id: String,
    /// Task that started this one.
    pub parent_id: Option<String>,
    /// First task of the tree.
    pub root_id: String,
    /// Mode slug.
    pub mode: String,
    /// Workspace path.
    pub workspace: String,
    /// Status.
    pub status: TaskStatus,
    /// The user's first prompt.
    pub prompt: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Base URL of the provider's API the task was created with (empty for
    /// the scripted provider).
    pub base_url: String,
    /// Config profile the task was created with (empty: none).
    pub profile: String,
    /// Created (ms since epoch).
    pub created_at: i64,
    /// Last change (ms since epoch).
    pub updated_at: i64,
    /// Token totals.
    pub usage: Usage,
    /// Cost in USD.
    pub cost: f64,
    /// Active intent id.
    pub active_intent: Option<String>,
    /// The settings the task runs with (approval policy, turn limit); none
    /// for a task recorded before they were (it runs with the engine's).
    pub settings: Option<TaskSettings>,
    /// Who it belongs to (a server's tenant; `None` for a local user).
    pub owner: Option<String>,
}

/// Where a task is in its life (Roo Code's status machine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The loop is running (streaming, executing tools).
    Running,
    /// Waiting for the user to approve a tool call.
    WaitingForApproval,
    /// Waiting for the user to answer a question or review a result.
    WaitingForInput,
    /// Waiting for a subtask it delegated to (`new_task`) to end.
    WaitingForSubtask,
    /// Stopped without finishing; `roost resume` continues it.
    Paused,
    /// The user accepted the result.
    Completed,
    /// The user (or Ctrl-C) stopped it.
    Aborted,
    /// An error ended it.
    Failed,
}

impl TaskStatus {
    /// Stable text form (stored in the database).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::WaitingForApproval => "waiting_for_approval",
            Self::WaitingForInput => "waiting_for_input",
            Self::WaitingForSubtask => "waiting_for_subtask",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Aborted => "aborted",
            Self::Failed => "failed",
        }
    }

    /// Parse the stored text form.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "running" => Self::Running,
            "waiting_for_approval" => Self::WaitingForApproval,
            "waiting_for_input" => Self::WaitingForInput,
            "waiting_for_subtask" => Self::WaitingForSubtask,
            "paused" => Self::Paused,
            "completed" => Self::Completed,
            "aborted" => Self::Aborted,
            "failed" => Self::Failed,
            _ => return None,
        })
    }

    /// Whether the task is over (resume refuses completed tasks).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Token usage reported by a provider, accumulated per task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
}

impl Usage {
    /// Add another report to this one.
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
    }
}

/// Which calls of a task run without asking a person.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalPolicy {
    /// Approve everything (`--yes`).
    pub approve_all: bool,
    /// Groups approved without asking (`--approve read,edit`).
    pub auto_groups: BTreeSet<ToolGroup>,
    /// Single tools approved without asking (an "always allow" answer).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub auto_tools: BTreeSet<String>,
}

/// One "always allow" answer: a tool, or a whole tool group. Granted for
/// the rest of a task, and (saved by a front-end) for later tasks of the
/// same workspace.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", content = "name", rename_all = "snake_case")]
pub enum Grant {
    /// Every call of this tool.
    Tool(String),
    /// Every call of a tool of this group.
    Group(ToolGroup),
}

impl Grant {
    /// `tool write_to_file`, `group edit`.
    pub fn describe(&self) -> String {
        match self {
            Self::Tool(t) => format!("tool {t}"),
            Self::Group(g) => format!("group {g}"),
        }
    }
}

impl ApprovalPolicy {
    /// Approve everything.
    pub fn yes() -> Self {
        Self {
            approve_all: true,
            ..Self::default()
        }
    }

    /// Parse `read,edit,…`.
    pub fn from_groups(list: &str) -> Result<Self, String> {
        let mut auto_groups = BTreeSet::new();
        for g in list.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            let group = ToolGroup::parse(g).ok_or_else(|| {
                format!("unknown tool group `{g}` (read, edit, command, browser, mcp, modes)")
            })?;
            auto_groups.insert(group);
        }
        Ok(Self {
            approve_all: false,
            auto_groups,
            auto_tools: BTreeSet::new(),
        })
    }

    /// Whether a call of `tool` (of `group`) runs without asking.
    pub fn covers(&self, tool: &str, group: ToolGroup) -> bool {
        self.approve_all || self.auto_groups.contains(&group) || self.auto_tools.contains(tool)
    }

    /// Add `grant` (the policy only widens by what a person granted).
    pub fn grant(&mut self, grant: &Grant) {
        match grant {
            Grant::Tool(t) => {
                self.auto_tools.insert(t.clone());
            }
            Grant::Group(g) => {
                self.auto_groups.insert(*g);
            }
        }
    }

    /// What both policies allow: a child's policy is at most its parent's.
    pub fn narrowed_to(&self, other: &Self) -> Self {
        match (self.approve_all, other.approve_all) {
            (true, true) => Self::yes(),
            (true, false) => other.clone(),
            (false, true) => self.clone(),
            (false, false) => Self {
                approve_all: false,
                auto_groups: self
                    .auto_groups
                    .intersection(&other.auto_groups)
                    .copied()
                    .collect(),
                auto_tools: self
                    .auto_tools
                    .iter()
                    .filter(|t| other.auto_tools.contains(*t))
                    .cloned()
                    .collect(),
            },
        }
    }

    /// The groups as `read,edit` (`all` when everything is approved).
    pub fn describe(&self) -> String {
        if self.approve_all {
            return "all".to_owned();
        }
        self.auto_groups
            .iter()
            .map(|g| g.as_str())
            .chain(self.auto_tools.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The model endpoint a task talks to: a profile of the config, or a
/// provider, base URL and model named directly (each overriding the
/// profile's). Recorded with the task: a resumed task goes back to it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Endpoint {
    /// A profile of the config file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// `openai`, `anthropic` or `scripted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// API base URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Model id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A new task: what it is asked, where, and the settings that belong to it
/// alone (one engine runs tasks with different policies and models at
/// once). Missing settings are the engine's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskSpec {
    /// The user's prompt.
    pub prompt: String,
    /// The workspace it works in.
    pub workspace: PathBuf,
    /// Mode slug (`code` when empty).
    #[serde(default)]
    pub mode: String,
    /// Which calls run without asking; the engine's default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<ApprovalPolicy>,
    /// Most model requests before the task pauses; the engine's default
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Bounds on the subtasks it may start, never wider than the
    /// engine's `[delegation]` config.
    #[serde(default, skip_serializing_if = "DelegationLimits::is_empty")]
    pub delegation: DelegationLimits,
    /// The model endpoint; the engine's default when empty.
    #[serde(default)]
    pub endpoint: Endpoint,
    /// The W3C `traceparent` its trace continues (a front-end's incoming
    /// request's); none, or one that is not valid: a trace of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// The settings a task runs with, as recorded with it (a resumed task gets
/// its own back).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskSettings {
    /// Which calls run without asking.
    pub approval: ApprovalPolicy,
    /// Most model requests before the task pauses.
    pub max_turns: u32,
    /// What a delegated task got from the tasks above it (a root task
    /// has nothing here).
    #[serde(default, skip_serializing_if = "Inherited::is_root")]
    pub inherited: Inherited,
    /// Bounds on its tree's subtasks set for this task (its root's, for a
    /// subtask); they only narrow the engine's.
    #[serde(default, skip_serializing_if = "DelegationLimits::is_empty")]
    pub delegation: DelegationLimits,
    /// The W3C `traceparent` of the task's latest traced run (its
    /// `invoke_agent` span), when telemetry is on: the next run — a
    /// resume — links to it, so a task's runs can be followed across
    /// traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

/// Bounds on a tree of tasks set for one task (absent: the engine's). A
/// task's can only narrow what the engine allows, and its subtasks carry
/// their root's, so one person's or one tenant's task can be held tighter
/// than the host's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelegationLimits {
    /// Deepest a subtask may be (a root task is 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
    /// Most subtasks the tree may start in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_children: Option<u32>,
    /// Most subtasks of the tree running at once; more wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_children: Option<u32>,
    /// Seconds a subtask may run before it is stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_timeout_secs: Option<u64>,
}

impl DelegationLimits {
    /// Nothing set: the engine's bounds hold.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// What a delegated task inherits from the tasks above it: bounds it can
/// never leave, whatever its own mode or intents say. Recorded with the
/// task, so a resumed child is bounded as it was.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Inherited {
    /// How deep in its tree it is (a root task is 0).
    #[serde(default)]
    pub depth: u32,
    /// The globs it may write within (its parent's active scope, or a
    /// narrower one it was given; empty: nothing). `None`: the whole
    /// workspace, as its parent had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_bound: Option<Vec<String>>,
    /// Mode hooks of its ancestors, run on its calls before its own
    /// mode's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<String>,
    /// The parent's tool call that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The parallel group it belongs to, when it is one of several.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The command profile its parent's commands ran under: its own
    /// commands run under it too (or under `read-only`), never a wider
    /// one its own mode or intent names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_profile: Option<String>,
    /// The intent its parent worked under, passed on: it starts under it,
    /// narrowed to `write_bound`, and may select it again; no other intent
    /// wider than `write_bound`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
}

impl Inherited {
    /// Whether nothing was inherited (a root task).
    pub fn is_root(&self) -> bool {
        *self == Self::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_and_cover() {
        let p = ApprovalPolicy::from_groups("read, edit").expect("parses");
        assert!(p.covers("read_file", ToolGroup::Read) && p.covers("x", ToolGroup::Edit));
        assert!(!p.covers("x", ToolGroup::Command));
        assert_eq!(p.describe(), "read,edit");
        assert!(ApprovalPolicy::from_groups("read,launch").is_err());
        assert!(ApprovalPolicy::yes().covers("x", ToolGroup::Command));
    }

    /// A grant widens by exactly one tool or group; narrowing keeps only
    /// what both policies allow, tools included.
    #[test]
    fn grants_widen_and_narrowing_intersects() {
        let mut p = ApprovalPolicy::from_groups("read").expect("parses");
        p.grant(&Grant::Tool("write_to_file".into()));
        assert!(p.covers("write_to_file", ToolGroup::Edit));
        assert!(!p.covers("apply_diff", ToolGroup::Edit));
        p.grant(&Grant::Group(ToolGroup::Edit));
        assert!(p.covers("apply_diff", ToolGroup::Edit));
        assert_eq!(p.describe(), "read,edit,write_to_file");
        let parent = ApprovalPolicy::from_groups("read").expect("parses");
        let child = p.narrowed_to(&parent);
        assert!(child.covers("read_file", ToolGroup::Read));
        assert!(!child.covers("write_to_file", ToolGroup::Edit));
        assert_eq!(p.narrowed_to(&ApprovalPolicy::yes()), p);
        // Old records without `auto_tools` still read.
        let old: ApprovalPolicy =
            serde_json::from_str(r#"{"approve_all":false,"auto_groups":["read"]}"#).expect("old");
        assert!(old.auto_tools.is_empty());
        for s in ["running", "waiting_for_input", "completed", "failed"] {
            assert_eq!(TaskStatus::parse(s).map(TaskStatus::as_str), Some(s));
        }
    }
}
