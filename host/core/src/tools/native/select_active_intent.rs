//! `select_active_intent`: the task works under an intent from
//! `.orchestration/active_intents.yaml` from now on; the model gets the
//! intent's context (scope, constraints, acceptance criteria, recent trace).
//! A subtask may select only what `intents::bound::hold` lets it hold.

use serde_json::{Value, json};

use crate::intents::bound::{HoldError, hold};
use crate::intents::{self, Trace};
use crate::tools::HOST;
use crate::tools::executor::{Effect, Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{RunState, TaskError};
use roost_protocol::{ErrorCode, ToolGroup, ToolSpec, UiRow, UiSubtype};

/// Name of the tool that picks the intent the task works under.
pub const NAME: &str = "select_active_intent";

/// The `select_active_intent` tool.
pub(super) struct SelectActiveIntent {
    spec: ToolSpec,
}

impl SelectActiveIntent {
    pub(super) fn new() -> Self {
        Self {
            spec: host_spec(
                NAME,
                ToolGroup::Modes,
                "Select the intent (from .orchestration/active_intents.yaml) this work belongs to, before \
                any tool that changes the workspace. Returns the intent's scope, constraints, acceptance criteria \
                and recent history. Writes are limited to the intent's owned_scope (a subtask starts under its parent's intent, \
                limited to its own scope).",
                json!({
                    "type": "object",
                    "properties": {"intent_id": {"type": "string"}},
                    "required": ["intent_id"],
                    "additionalProperties": false
                }),
            ),
        }
    }
}

/// A refusal the model reads as structured data.
fn refused(v: Value) -> Outcome {
    Outcome::error(ErrorCode::PermissionDenied, v.to_string())
}

#[async_trait::async_trait]
impl ToolExecutor for SelectActiveIntent {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn provider(&self) -> &str {
        HOST
    }

    fn always_available(&self) -> bool {
        true
    }

    fn needs_intents(&self) -> bool {
        true
    }

    /// It changes only the task's own notes.
    fn needs(&self, _state: &RunState, _args: &Value) -> Needs {
        Needs::Nothing
    }

    async fn run(&self, c: Invocation<'_>) -> Result<Outcome, TaskError> {
        let (ctx, id) = (c.ctx, c.ctx.task.id.as_str());
        let wanted = c.args["intent_id"].as_str().unwrap_or_default();
        if !intents::enabled_in(&ctx.ws) {
            return Ok(refused(json!({
                "code": "intents_off", "message": "this workspace has no .orchestration/ directory, so intents are off"
            })));
        }
        let all = match intents::load(&ctx.workspace) {
            Ok(all) => all,
            Err(e) => {
                return Ok(refused(
                    json!({"code": "intents_file_invalid", "message": e.to_string()}),
                ));
            }
        };
        let Some(intent) = all.iter().find(|i| i.id == wanted).cloned() else {
            let available: Vec<&str> = all.iter().map(|i| i.id.as_str()).collect();
            return Ok(Outcome::mistake(
                json!({"code": "unknown_intent", "intent_id": wanted, "available": available})
                    .to_string(),
            ));
        };
        if intent.status != "IN_PROGRESS" {
            return Ok(refused(json!({
                "code": "intent_not_in_progress", "intent_id": wanted, "status": intent.status,
                "message": "only an IN_PROGRESS intent can be selected"
            })));
        }
        // A subtask works inside its parent's scope: an intent inside it,
        // or the one its parent passed on (narrowed to it); nothing else.
        let inherited = ctx.config.inherited.intent.as_deref();
        let (intent, scope) = match hold(&ctx.workspace, intent, c.state.bound.as_ref(), inherited)
        {
            Ok(held) => held,
            Err(HoldError::OutsideParentScope {
                owned_scope,
                bound,
                inherited,
                ..
            }) => {
                return Ok(refused(json!({
                    "code": "intent_outside_parent_scope", "intent_id": wanted,
                    "owned_scope": owned_scope, "parent_scope": bound,
                    "inherited_intent": inherited,
                    "message": "a subtask may select an intent whose owned_scope lies inside the scope of the task \
                        that started it, or the intent that task passed on (held narrowed to this subtask's scope)"
                })));
            }
            Err(HoldError::Invalid(e)) => {
                return Ok(refused(
                    json!({"code": "intent_scope_invalid", "message": e.to_string()}),
                ));
            }
        };
        let recent = Trace::of(&ctx.workspace)
            .read(Some(&intent.id))
            .map(|(e, _)| e)
            .unwrap_or_default();
        let recent = &recent[recent.len().saturating_sub(10)..];
        let block = intents::context_block(&ctx.workspace, &intent, &scope, recent);
        c.agent.store.set_active_intent(id, Some(&intent.id))?;
        c.agent
            .store
            .append_ui(id, UiRow::say(UiSubtype::IntentSelected), &intent.id)?;
        Ok(Outcome::ok(block).with_effect(Effect::SelectIntent(Box::new((intent, scope)))))
    }
}
