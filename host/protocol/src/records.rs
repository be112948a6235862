//! The kinds of what a task records, as enums: the rows of its UI history
//! (Roo Code's `ask`/`say` messages and their types), the entries of the
//! agent trace, and what a mode hook decided. Stored and exported by
//! their `as_str` names, which stay stable.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether a UI row asked the person something or said something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UiKind {
    /// A question to the person.
    Ask,
    /// Something the task said or did.
    Say,
}

impl UiKind {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Say => "say",
        }
    }

    /// The kind stored as `s`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "ask" => Some(Self::Ask),
            "say" => Some(Self::Say),
            _ => None,
        }
    }
}

/// Declares [`UiSubtype`] with its stored names, once.
macro_rules! ui_subtypes {
    ($($(#[$doc:meta])* $variant:ident = $name:literal,)*) => {
        /// What a UI row is (Roo Code's `say`/`ask` types, and Roost's own).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum UiSubtype {
            $($(#[$doc])* $variant,)*
        }

        impl UiSubtype {
            /// Every subtype.
            pub const ALL: &'static [UiSubtype] = &[$(Self::$variant,)*];

            /// The stored name.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $name,)*
                }
            }

            /// The subtype stored as `s`.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($name => Some(Self::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

ui_subtypes! {
    /// The user's prompt, or the model's text.
    Text = "text",
    /// Something went wrong (a refused call, a failed request).
    Error = "error",
    /// A model request started.
    ApiReqStarted = "api_req_started",
    /// A tool call the model made (said), or may it run? (asked).
    Tool = "tool",
    /// A tool call's output (a preview of it).
    ToolResult = "tool_result",
    /// What a person said back (feedback, an answer, a denial).
    UserFeedback = "user_feedback",
    /// A message queued while the task ran.
    UserMessage = "user_message",
    /// The result the model reported.
    CompletionResult = "completion_result",
    /// Older history was condensed into this summary.
    CondenseContext = "condense_context",
    /// The task changed mode.
    ModeSwitch = "mode_switch",
    /// The task selected an intent.
    IntentSelected = "intent_selected",
    /// A mode hook rewrote a call's arguments.
    HookRewrite = "hook_rewrite",
    /// A mode hook denied a call.
    HookDenied = "hook_denied",
    /// A call's outgoing requests.
    Network = "network",
    /// The task paused at a limit.
    Paused = "paused",
    /// The task resumed.
    Resume = "resume",
    /// The task was resumed against another endpoint.
    EndpointChanged = "endpoint_changed",
    /// A declared path left the workspace.
    PathError = "path_error",
    /// A declared path is hidden by `.rooignore`.
    RooignoreError = "rooignore_error",
    /// The task delegated to a subtask (its id, mode and instructions).
    Subtask = "subtask",
    /// A subtask's result as it came back to the task.
    SubtaskResult = "subtask_result",
    /// The workspace (and maybe the conversation) went back to a
    /// checkpoint.
    CheckpointRestored = "checkpoint_restored",
    /// A question: the model's follow-up.
    Followup = "followup",
    /// A question: a write outside the intent's scope, once?
    Scope = "scope",
    /// A question: a mode hook asks.
    Hook = "hook",
    /// A question: the same call again and again.
    Repetition = "repetition",
    /// A question: too many mistakes in a row.
    MistakeLimitReached = "mistake_limit_reached",
}

/// One UI row's kind and subtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct UiRow {
    /// Ask or say.
    pub kind: UiKind,
    /// What it is.
    pub subtype: UiSubtype,
}

impl UiRow {
    /// A `say` row of `subtype`.
    pub const fn say(subtype: UiSubtype) -> Self {
        Self {
            kind: UiKind::Say,
            subtype,
        }
    }

    /// An `ask` row of `subtype`.
    pub const fn ask(subtype: UiSubtype) -> Self {
        Self {
            kind: UiKind::Ask,
            subtype,
        }
    }

    /// The row stored as `kind`/`subtype`.
    pub fn parse(kind: &str, subtype: &str) -> Option<Self> {
        Some(Self {
            kind: UiKind::parse(kind)?,
            subtype: UiSubtype::parse(subtype)?,
        })
    }
}

/// What an entry of `.orchestration/agent_trace.jsonl` records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceKind {
    /// A call that may have changed the workspace, with file hashes.
    Mutation,
    /// A call that wrote where it may not (undone).
    Violation,
    /// A person approved a call.
    Approval,
    /// A mode hook's verdict.
    Hook,
    /// A call's outgoing requests.
    Network,
    /// An intent was selected.
    IntentSelected,
    /// A skill's instructions or files were loaded.
    SkillLoaded,
}

impl TraceKind {
    /// The name written in the trace.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mutation => "mutation",
            Self::Violation => "violation",
            Self::Approval => "approval",
            Self::Hook => "hook",
            Self::Network => "network",
            Self::IntentSelected => "intent_selected",
            Self::SkillLoaded => "skill_loaded",
        }
    }
}

impl std::fmt::Display for TraceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a mode hook decided about a call, when it did more than allow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookVerdict {
    /// The call may not run.
    Deny,
    /// A person must confirm it.
    Ask,
    /// Its arguments were replaced.
    Rewrite,
    /// The hook failed (so the call is denied: hooks fail closed).
    Failed,
}

impl HookVerdict {
    /// The name in events and traces.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Ask => "ask",
            Self::Rewrite => "rewrite",
            Self::Failed => "failed",
        }
    }
}

impl std::fmt::Display for HookVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_round_trip() {
        for s in UiSubtype::ALL {
            assert_eq!(UiSubtype::parse(s.as_str()), Some(*s));
            for row in [UiRow::say(*s), UiRow::ask(*s)] {
                assert_eq!(
                    UiRow::parse(row.kind.as_str(), row.subtype.as_str()),
                    Some(row),
                    "{row:?}"
                );
            }
        }
        assert_eq!(UiRow::parse("say", "nonsense"), None);
    }
}
