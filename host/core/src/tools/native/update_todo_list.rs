//! `update_todo_list`: the model replaces the task's todo list (Roo's
//! markdown checklist).

use serde_json::{Value, json};

use crate::events::TaskEvent;
use crate::store::{Step, TodoItem, TodoState};
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{RunState, TaskError};
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

/// Parse Roo's markdown checklist; lines that are not items are an error
/// so the model learns the format.
pub fn parse_todos(markdown: &str) -> Result<Vec<TodoItem>, String> {
    let mut items = Vec::new();
    for (i, raw) in markdown.lines().enumerate() {
        let line = raw.trim().trim_start_matches(['-', '*']).trim_start();
        if line.is_empty() {
            continue;
        }
        let (state, rest) = if let Some(r) = line.strip_prefix("[ ]") {
            (TodoState::Pending, r)
        } else if let Some(r) = line.strip_prefix("[-]") {
            (TodoState::InProgress, r)
        } else if let Some(r) = line
            .strip_prefix("[x]")
            .or_else(|| line.strip_prefix("[X]"))
        {
            (TodoState::Completed, r)
        } else {
            return Err(format!(
                "line {}: {raw:?} is not a checklist item; use `[ ] item`, `[-] item` or `[x] item`",
                i + 1
            ));
        };
        let text = rest.trim();
        if text.is_empty() {
            return Err(format!("line {}: empty todo item", i + 1));
        }
        items.push(TodoItem {
            text: text.to_owned(),
            state,
        });
    }
    Ok(items)
}

/// Render a todo list back to markdown.
pub fn render_todos(items: &[TodoItem]) -> String {
    items
        .iter()
        .map(|t| {
            let mark = match t.state {
                TodoState::Pending => "[ ]",
                TodoState::InProgress => "[-]",
                TodoState::Completed => "[x]",
            };
            format!("{mark} {}", t.text)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn todos_round_trip() {
        let md = "[x] read the code\n- [-] fix the bug\n[ ] write tests\n";
        let items = parse_todos(md).expect("parses");
        assert_eq!(items.len(), 3);
        assert_eq!(items[1].state, TodoState::InProgress);
        assert_eq!(
            render_todos(&items),
            "[x] read the code\n[-] fix the bug\n[ ] write tests"
        );
        assert!(parse_todos("just text").is_err());
    }
}
