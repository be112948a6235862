//! `update_todo_list`: the model replaces the task's todo list (Roo's
//! markdown checklist).

use serde_json::{Value, json};

use crate::events::TaskEvent;
use crate::store::Step;
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{RunState, TaskError};
pub use roost_protocol::todos::{parse_todos, render_todos};
use roost_protocol::{ToolGroup, ToolSpec, UiSubtype};

/// Name of the tool that replaces the todo list.
pub const NAME: &str = "update_todo_list";

/// The `update_todo_list` tool.
pub(super) struct UpdateTodoList {
    spec: ToolSpec,
}

impl UpdateTodoList {
    pub(super) fn new() -> Self {
        Self {
            spec: host_spec(
                NAME,
                ToolGroup::Modes,
                "Replace the task's todo list with a markdown checklist: `[ ]` pending, `[-]` in \
                progress, `[x]` completed, one item per line. Send the whole list every time.",
                json!({
                    "type": "object",
                    "properties": {"todos": {"type": "string"}},
                    "required": ["todos"],
                    "additionalProperties": false
                }),
            ),
        }
    }
}

#[async_trait::async_trait]
impl ToolExecutor for UpdateTodoList {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn provider(&self) -> &str {
        HOST
    }

    fn always_available(&self) -> bool {
        true
    }

    /// It changes only the task's own notes.
    fn needs(&self, _state: &RunState, _args: &Value) -> Needs {
        Needs::Nothing
    }

    async fn run(&self, c: Invocation<'_>) -> Result<Outcome, TaskError> {
        let id = c.ctx.task.id.as_str();
        match parse_todos(c.args["todos"].as_str().unwrap_or_default()) {
            Ok(items) => {
                let markdown = render_todos(&items);
                // One step: the list and its announcement.
                let announce = TaskEvent::TodosUpdated {
                    markdown: markdown.clone(),
                };
                c.ctx
                    .events
                    .commit(
                        &c.agent.store,
                        id,
                        Step::new().todos(&items),
                        vec![announce],
                    )
                    .await?;
                // Like every tool, the call leaves its result in the UI history.
                Ok(Outcome::ok(format!("Todo list updated:\n{markdown}"))
                    .with_ui_row(UiSubtype::ToolResult, markdown))
            }
            Err(e) => Ok(Outcome::mistake(e)),
        }
    }
}
