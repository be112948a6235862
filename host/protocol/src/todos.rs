//! A task's todo list (Roo's `update_todo_list`): Roo's markdown checklist
//! (`[ ]`, `[-]`, `[x]`), its items as the store keeps them and as a
//! front-end shows them as a plan.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// State of one todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoState {
    /// `[ ]`
    Pending,
    /// `[-]`
    InProgress,
    /// `[x]`
    Completed,
}

/// One todo item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoItem {
    /// Item text.
    pub text: String,
    /// State.
    pub state: TodoState,
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
