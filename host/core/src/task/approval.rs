//! Approvals: a policy auto-approves tool calls by group; anything else is
//! put to the user through the front-end's [`Interaction`].

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::tools::ToolGroup;

/// Which calls run without asking.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalPolicy {
    /// Approve everything (`--yes`).
    pub approve_all: bool,
    /// Groups approved without asking (`--approve read,edit`).
    pub auto_groups: BTreeSet<ToolGroup>,
}

impl ApprovalPolicy {
    /// Approve everything.
    pub fn yes() -> Self {
        Self {
            approve_all: true,
            auto_groups: BTreeSet::new(),
        }
    }

    /// Parse `read,edit,…`.
    pub fn from_groups(list: &str) -> Result<Self, String> {
        let mut auto_groups = BTreeSet::new();
        for g in list.split(',').map(str::trim).filter(|g| !g.is_empty()) {
            let group = match g {
                "read" => ToolGroup::Read,
                "edit" => ToolGroup::Edit,
                "command" => ToolGroup::Command,
                "browser" => ToolGroup::Browser,
                "mcp" => ToolGroup::Mcp,
                "modes" => ToolGroup::Modes,
                other => {
                    return Err(format!(
                        "unknown tool group `{other}` (read, edit, command, browser, mcp, modes)"
                    ));
                }
            };
            auto_groups.insert(group);
        }
        Ok(Self {
            approve_all: false,
            auto_groups,
        })
    }

    /// Whether a call of `group` runs without asking.
    pub fn covers(&self, group: ToolGroup) -> bool {
        self.approve_all || self.auto_groups.contains(&group)
    }
}

/// The user's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run it.
    Approve,
    /// Do not run it; the feedback (if any) goes to the model.
    Deny {
        /// What the user said.
        feedback: Option<String>,
    },
}

/// The user's answer to `attempt_completion`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionAnswer {
    /// The task is done.
    Accept,
    /// Not done: the feedback goes to the model and the loop continues.
    Feedback(String),
}

/// How the task loop talks to the person driving it (a TTY, an HTTP client,
/// a test script). Every method may take as long as the person does.
#[async_trait::async_trait]
pub trait Interaction: Send + Sync {
    /// May `tool` run with `args`? `preview` is the diff an edit would make
    /// (computed by a dry run before the question), when there is one.
    async fn approve(
        &self,
        tool: &str,
        group: ToolGroup,
        args: &serde_json::Value,
        preview: Option<&str>,
    ) -> Approval;
    /// Answer a follow-up question; `None` when nobody can answer.
    async fn followup(&self, question: &str, suggestions: &[String]) -> Option<String>;
    /// Accept the result, or send feedback.
    async fn completion(&self, result: &str) -> CompletionAnswer;
    /// A call's declared `path` lies outside the owned scope of `intent`:
    /// allow it once, or refuse (a `scope_violation`).
    async fn scope_violation(&self, intent: &str, tool: &str, path: &str) -> Approval;
    /// Mode hook `hook` wants the user to confirm a call of `tool`:
    /// `question` is the hook's own words.
    async fn hook_question(&self, hook: &str, tool: &str, question: &str) -> Approval;
    /// The model is stuck (too many mistakes in a row, or the same call
    /// repeated): guidance to continue with, or `None` to stop the task.
    async fn guidance(&self, reason: &str) -> Option<String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_groups() {
        let p = ApprovalPolicy::from_groups("read, edit").expect("parses");
        assert!(p.covers(ToolGroup::Read) && p.covers(ToolGroup::Edit));
        assert!(!p.covers(ToolGroup::Command));
        assert!(ApprovalPolicy::from_groups("read,launch").is_err());
        assert!(ApprovalPolicy::yes().covers(ToolGroup::Command));
    }
}
