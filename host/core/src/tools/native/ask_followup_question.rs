//! `ask_followup_question`: the model asks the person a question, with
//! suggested answers; with no one to answer, it is told to go on.

use serde_json::{Value, json};

use crate::asks::{Ask, Resume};
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{RunState, TaskError};
use roost_protocol::{ToolGroup, ToolSpec, UiRow, UiSubtype};

/// Name of the tool that asks the user a question.
pub const NAME: &str = "ask_followup_question";

/// The `ask_followup_question` tool.
pub(super) struct AskFollowup {
    spec: ToolSpec,
}

impl AskFollowup {
    pub(super) fn new() -> Self {
        Self {
            spec: host_spec(
                NAME,
                ToolGroup::Modes,
                "Ask the user a question when you need information you cannot get with your tools. \
                        Offer 2-4 suggested answers, each a complete, actionable answer.",
                json!({
                    "type": "object",
                    "properties": {
                        "question": {"type": "string"},
                        "follow_up": {"type": "array", "items": {"type": "string"}, "maxItems": 6}
                    },
                    "required": ["question"],
                    "additionalProperties": false
                }),
            ),
        }
    }
}

#[async_trait::async_trait]
impl ToolExecutor for AskFollowup {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn provider(&self) -> &str {
        HOST
    }

    fn always_available(&self) -> bool {
        true
    }

    /// It is itself a question to the person.
    fn needs(&self, _state: &RunState, _args: &Value) -> Needs {
        Needs::Nothing
    }

    async fn run(&self, c: Invocation<'_>) -> Result<Outcome, TaskError> {
        let id = c.ctx.task.id.as_str();
        let question = c.args["question"].as_str().unwrap_or_default();
        let suggestions: Vec<String> = c.args["follow_up"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let answer = c
            .agent
            .ask(
                c.ctx,
                Some(c.call_id),
                Ask::Followup {
                    question: question.to_owned(),
                    suggestions,
                },
                // The answer is the call's result, recorded at once.
                Resume::WithNextStep,
            )
            .await?
            .words();
        Ok(match answer {
            Some(a) => {
                c.agent
                    .store
                    .append_ui(id, UiRow::say(UiSubtype::UserFeedback), &a)?;
                Outcome::ok(format!("<answer>\n{a}\n</answer>"))
            }
            None => Outcome::ok(
                "No one is available to answer (non-interactive run). Continue with your best judgement and state \
                 your assumptions.",
            ),
        })
    }
}
