//! What a task asks a person and what the person answers, as data: stored
//! with the task, announced in events, answered by any front-end. Every
//! question to a person goes through one ask path (the engine's durable
//! asks); a policy's auto-approval happens before an ask exists.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::records::{UiRow, UiSubtype};
use crate::task::{Grant, TaskStatus};
use crate::tool::ToolGroup;

/// The user's answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// Run it.
    Approve,
    /// Run it, and every call `grant` covers for the rest of the task
    /// without asking (a front-end may also save the grant).
    Always(Grant),
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
    /// Not accepted, without words (a "no"): the model is told so and
    /// the loop continues. Never an acceptance.
    Declined,
    /// Nobody reviewed it, and the front-end ends the task as the user
    /// told it to (`--yes`, or no one to ask): said as such, never as the
    /// user's acceptance.
    Unreviewed(String),
}

/// What the loop asks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Ask {
    /// May this call run? (`preview`: the diff an edit would make.)
    Tool {
        /// Tool name.
        tool: String,
        /// Its group.
        group: ToolGroup,
        /// Arguments (credentials redacted).
        args: Value,
        /// The change an edit would make, computed by a dry run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<String>,
        /// Why a person must decide even where the policy would approve
        /// (a command no rule allows).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        why: Option<String>,
    },
    /// The model's question (`ask_followup_question`).
    Followup {
        /// The question.
        question: String,
        /// Suggested answers.
        #[serde(default)]
        suggestions: Vec<String>,
    },
    /// Accept the result, or send feedback.
    Completion {
        /// The result the model reported.
        result: String,
    },
    /// A declared path lies outside the active intent's owned scope: allow
    /// it for this call?
    Scope {
        /// Intent id.
        intent: String,
        /// Tool name.
        tool: String,
        /// The path.
        path: String,
        /// The diff the call would make, when it is an edit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<String>,
    },
    /// A mode hook wants the person to confirm a call.
    Hook {
        /// Hook name.
        hook: String,
        /// Tool name.
        tool: String,
        /// The hook's own words.
        question: String,
    },
    /// The model is stuck (mistakes in a row, or one call repeated): give
    /// guidance to go on, or stop.
    Guidance {
        /// What happened.
        reason: String,
        /// Whether a repeated call (rather than the mistake limit) asks.
        #[serde(default)]
        repetition: bool,
    },
}

impl Ask {
    /// The kind, as stored and announced.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Tool { .. } => "tool",
            Self::Followup { .. } => "followup",
            Self::Completion { .. } => "completion",
            Self::Scope { .. } => "scope",
            Self::Hook { .. } => "hook",
            Self::Guidance { .. } => "guidance",
        }
    }

    /// The status a task has while it waits for this answer.
    pub fn waiting_status(&self) -> TaskStatus {
        match self {
            Self::Tool { .. } | Self::Scope { .. } | Self::Hook { .. } => {
                TaskStatus::WaitingForApproval
            }
            _ => TaskStatus::WaitingForInput,
        }
    }

    /// The question in one line, for people.
    pub fn question(&self) -> String {
        match self {
            Self::Tool { tool, .. } => format!("run {tool}?"),
            Self::Followup { question, .. } => question.clone(),
            Self::Completion { result } => result.clone(),
            Self::Scope {
                intent, tool, path, ..
            } => {
                format!("{tool} writes {path}, outside the owned scope of {intent}: approve once?")
            }
            Self::Hook { question, .. } => question.clone(),
            Self::Guidance { reason, .. } => reason.clone(),
        }
    }

    /// The UI-history row that records the question, in Roo's shapes.
    pub fn ui_row(&self) -> (UiRow, String) {
        match self {
            Self::Tool {
                tool,
                args,
                preview,
                ..
            } => (
                UiRow::ask(UiSubtype::Tool),
                serde_json::json!({"tool": tool, "args": args, "diff": preview}).to_string(),
            ),
            Self::Followup { question, .. } => (UiRow::ask(UiSubtype::Followup), question.clone()),
            Self::Completion { result } => {
                (UiRow::say(UiSubtype::CompletionResult), result.clone())
            }
            Self::Scope {
                intent, tool, path, ..
            } => (
                UiRow::ask(UiSubtype::Scope),
                format!("{intent}: {tool} {path}"),
            ),
            Self::Hook { hook, question, .. } => {
                (UiRow::ask(UiSubtype::Hook), format!("{hook}: {question}"))
            }
            Self::Guidance {
                reason,
                repetition: true,
            } => (UiRow::ask(UiSubtype::Repetition), reason.clone()),
            Self::Guidance { reason, .. } => {
                (UiRow::ask(UiSubtype::MistakeLimitReached), reason.clone())
            }
        }
    }
}

/// A person's answer to an ask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Answer {
    /// Yes: approve the call, accept the result.
    Yes,
    /// Yes to an approval, and to every call `grant` covers for the rest
    /// of the task (to any other question: a yes).
    Always {
        /// What is granted.
        grant: Grant,
    },
    /// No, with optional feedback for the model.
    No {
        /// What the model should do instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        feedback: Option<String>,
    },
    /// Nobody looked: the front-end accepts a result on the user's
    /// standing instruction (`why`). To an approval it is a no.
    Unreviewed {
        /// Why nobody reviewed it (`--yes`, no terminal).
        why: String,
    },
    /// Words: a follow-up's answer, guidance, feedback on a result (and,
    /// to an approval, a no with these words as feedback).
    Text {
        /// The words.
        text: String,
    },
}

impl Answer {
    /// As an approval: only `Yes` approves.
    pub fn approval(self) -> Approval {
        match self {
            Self::Yes => Approval::Approve,
            Self::Always { grant } => Approval::Always(grant),
            Self::Unreviewed { why } => Approval::Deny {
                feedback: Some(format!("Nobody could review this call ({why}).")),
            },
            Self::No { feedback } => Approval::Deny { feedback },
            Self::Text { text } => Approval::Deny {
                feedback: Some(text),
            },
        }
    }

    /// As a review of a result: yes accepts, words are feedback, a no
    /// without words declines (only a yes is an acceptance).
    pub fn completion(self) -> CompletionAnswer {
        match self {
            Self::Yes | Self::Always { .. } => CompletionAnswer::Accept,
            Self::Unreviewed { why } => CompletionAnswer::Unreviewed(why),
            Self::Text { text }
            | Self::No {
                feedback: Some(text),
            } if !text.trim().is_empty() => CompletionAnswer::Feedback(text),
            _ => CompletionAnswer::Declined,
        }
    }

    /// As words: `None` when there are none (nobody answered, or no).
    pub fn words(self) -> Option<String> {
        match self {
            Self::Text { text } if !text.trim().is_empty() => Some(text),
            _ => None,
        }
    }
}

impl From<Approval> for Answer {
    fn from(a: Approval) -> Self {
        match a {
            Approval::Approve => Self::Yes,
            Approval::Always(grant) => Self::Always { grant },
            Approval::Deny { feedback } => Self::No { feedback },
        }
    }
}

impl From<CompletionAnswer> for Answer {
    fn from(a: CompletionAnswer) -> Self {
        match a {
            CompletionAnswer::Accept => Self::Yes,
            CompletionAnswer::Feedback(text) => Self::Text { text },
            CompletionAnswer::Declined => Self::No { feedback: None },
            CompletionAnswer::Unreviewed(why) => Self::Unreviewed { why },
        }
    }
}

impl From<Option<String>> for Answer {
    fn from(words: Option<String>) -> Self {
        match words {
            Some(text) => Self::Text { text },
            None => Self::No { feedback: None },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_mean_one_thing_per_kind_of_question() {
        assert_eq!(Answer::Yes.approval(), Approval::Approve);
        assert_eq!(
            Answer::Text {
                text: "no, x".into()
            }
            .approval(),
            Approval::Deny {
                feedback: Some("no, x".into())
            }
        );
        assert_eq!(Answer::Yes.completion(), CompletionAnswer::Accept);
        assert_eq!(
            Answer::No { feedback: None }.completion(),
            CompletionAnswer::Declined,
            "a no is never an acceptance"
        );
        assert_eq!(
            Answer::Text { text: " ".into() }.completion(),
            CompletionAnswer::Declined
        );
        assert_eq!(
            Answer::Text {
                text: "more".into()
            }
            .completion(),
            CompletionAnswer::Feedback("more".into())
        );
        assert_eq!(Answer::Text { text: " ".into() }.words(), None);
        assert_eq!(Answer::Yes.words(), None);
        let a = Ask::Guidance {
            reason: "r".into(),
            repetition: true,
        };
        let back: Ask =
            serde_json::from_str(&serde_json::to_string(&a).expect("json")).expect("parses");
        assert_eq!(back, a);
        assert_eq!(a.waiting_status(), TaskStatus::WaitingForInput);
    }
}
