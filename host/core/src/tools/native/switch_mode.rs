//! `switch_mode`: the model asks to continue in another mode; approved
//! like any call of the `modes` group.

use serde_json::{Value, json};

use crate::events::TaskEvent;
use crate::store::Step;
use crate::tools::HOST;
use crate::tools::executor::{Effect, Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{RunState, TaskError};
use roost_protocol::{ToolGroup, ToolSpec, UiRow, UiSubtype};

/// Name of the tool that changes the task's mode.
pub const NAME: &str = "switch_mode";

/// The `switch_mode` tool.
pub(super) struct SwitchMode {
    spec: ToolSpec,
}

impl SwitchMode {
    pub(super) fn new() -> Self {
        Self {
            spec: host_spec(
                NAME,
                ToolGroup::Modes,
                "Ask to switch the task to another mode (for example to `code` to implement a plan, or \
                `architect` to plan). The user must approve. Give the reason.",
                json!({
                    "type": "object",
                    "properties": {"mode_slug": {"type": "string"}, "reason": {"type": "string"}},
                    "required": ["mode_slug", "reason"],
                    "additionalProperties": false
                }),
            ),
        }
    }
}

#[async_trait::async_trait]
impl ToolExecutor for SwitchMode {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn provider(&self) -> &str {
        HOST
    }

    fn always_available(&self) -> bool {
        true
    }

    /// A switch to another known mode is approved like any call of the
    /// `modes` group; an unknown mode is refused before anyone is asked.
    fn needs(&self, state: &RunState, args: &Value) -> Needs {
        let slug = args["mode_slug"].as_str().unwrap_or_default();
        match state.modes.get(slug) {
            None => {
                let known: Vec<&str> = state.modes.iter().map(|m| m.slug.as_str()).collect();
                Needs::Refused(Box::new(Outcome::mistake(format!(
                    "Unknown mode `{slug}`. Available modes: {}.",
                    known.join(", ")
                ))))
            }
            Some(target) if target.slug == state.mode.slug => Needs::Nothing,
            Some(_) => Needs::Approval(ToolGroup::Modes),
        }
    }

    async fn run(&self, c: Invocation<'_>) -> Result<Outcome, TaskError> {
        let (ctx, state) = (c.ctx, c.state);
        let id = ctx.task.id.as_str();
        let slug = c.args["mode_slug"].as_str().unwrap_or_default();
        let reason = c.args["reason"].as_str().unwrap_or_default();
        let Some(target) = state.modes.get(slug).cloned() else {
            return Ok(Outcome::mistake(format!("Unknown mode `{slug}`.")));
        };
        if target.slug == state.mode.slug {
            return Ok(Outcome::ok(format!("Already in {} mode.", target.name)));
        }
        // One step: the mode, its UI row and its announcement.
        let row = format!("{} ({reason})", target.slug);
        let step = Step::new()
            .mode(&target.slug)
            .ui(UiRow::say(UiSubtype::ModeSwitch), row.as_str());
        let announce = TaskEvent::ModeSwitched {
            mode: target.slug.clone(),
        };
        ctx.events
            .commit(&c.agent.store, id, step, vec![announce])
            .await?;
        let msg = format!(
            "Switched from {} mode to {} mode because: {reason}",
            state.mode.slug, target.slug
        );
        Ok(Outcome::ok(msg).with_effect(Effect::SwitchMode(Box::new(target))))
    }
}
