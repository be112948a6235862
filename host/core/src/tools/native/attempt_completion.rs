//! `attempt_completion`: the model reports its result and a person
//! reviews it. Accepted, the task is complete; feedback or a "no" sends
//! the model back to work.

use serde_json::{Value, json};

use crate::asks::{Ask, CompletionAnswer, Resume};
use crate::tools::HOST;
use crate::tools::executor::{Effect, Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{RunState, TaskError};
use roost_protocol::{ToolGroup, ToolSpec, UiRow, UiSubtype};

/// Name of the tool that ends a task.
pub const NAME: &str = "attempt_completion";

/// The `attempt_completion` tool.
pub(super) struct AttemptCompletion {
    spec: ToolSpec,
}

impl AttemptCompletion {
    pub(super) fn new() -> Self {
        Self {
            spec: host_spec(
                NAME,
                ToolGroup::Modes,
                "Present the result of your work to the user once the task is complete and verified. \
                        The user may accept it or reply with feedback, in which case continue working. Do not end the \
                        result with a question or an offer of further help.",
                json!({
                    "type": "object",
                    "properties": {"result": {"type": "string", "description": "The final result of the task."}},
                    "required": ["result"],
                    "additionalProperties": false
                }),
            ),
        }
    }
}

#[async_trait::async_trait]
impl ToolExecutor for AttemptCompletion {
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
        let result = c.args["result"].as_str().unwrap_or_default().to_owned();
        // A subtask's result goes to the task that started it, whose model
        // reviews it; a person is asked only where the policy would ask
        // them about delegation itself (Roo's "finish subtask" approval).
        if c.ctx.task.parent_id.is_some() && c.state.policy.covers(NAME, ToolGroup::Modes) {
            return Ok(
                Outcome::ok("The result goes back to the task that started this subtask.")
                    .with_effect(Effect::Complete(result)),
            );
        }
        let answer = c
            .agent
            .ask(
                c.ctx,
                Some(c.call_id),
                Ask::Completion {
                    result: result.clone(),
                },
                // The answer is the call's result (with the task's end
                // when accepted), recorded at once.
                Resume::WithNextStep,
            )
            .await?
            .completion();
        Ok(match answer {
            CompletionAnswer::Accept => {
                Outcome::ok("The user accepted the result.").with_effect(Effect::Complete(result))
            }
            CompletionAnswer::Unreviewed(why) => {
                c.agent.store.append_ui(
                    id,
                    UiRow::say(UiSubtype::UserFeedback),
                    &format!("(accepted without review: {why})"),
                )?;
                Outcome::ok(format!(
                    "The result was accepted without a review by the user ({why})."
                ))
                .with_effect(Effect::Complete(result))
            }
            CompletionAnswer::Declined => {
                c.agent.store.append_ui(
                    id,
                    UiRow::say(UiSubtype::UserFeedback),
                    "(not accepted)",
                )?;
                Outcome::ok(
                    "The user did not accept the result and gave no feedback. Check your work against the task, \
                     then attempt completion again, or ask the user what is missing with ask_followup_question.",
                )
            }
            CompletionAnswer::Feedback(f) => {
                c.agent
                    .store
                    .append_ui(id, UiRow::say(UiSubtype::UserFeedback), &f)?;
                Outcome::ok(format!(
                    "The user has provided feedback on the result. Consider it, continue the task, and then attempt \
                     completion again.\n<feedback>\n{f}\n</feedback>"
                ))
            }
        })
    }
}
