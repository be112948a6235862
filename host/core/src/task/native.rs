//! Host-native tools: the ones that talk to the user or the task itself
//! rather than the workspace, so they run in the host, not a plugin:
//! `attempt_completion`, `ask_followup_question`, `update_todo_list`.

use serde_json::json;

use crate::tools::{ToolGroup, ToolSpec};

/// Name of the tool that ends a task.
pub const ATTEMPT_COMPLETION: &str = "attempt_completion";
/// Name of the tool that asks the user a question.
pub const ASK_FOLLOWUP: &str = "ask_followup_question";
/// Name of the tool that replaces the todo list.
pub const UPDATE_TODO_LIST: &str = "update_todo_list";
/// Name of the tool that picks the intent the task works under.
pub const SELECT_ACTIVE_INTENT: &str = "select_active_intent";
/// Name of the tool that changes the task's mode.
pub const SWITCH_MODE: &str = "switch_mode";

/// Specs of the host-native tools, offered to the model like plugin tools.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: ATTEMPT_COMPLETION.into(),
            description: "Present the result of your work to the user once the task is complete and verified. \
                The user may accept it or reply with feedback, in which case continue working. Do not end the \
                result with a question or an offer of further help."
                .into(),
            args_schema: json!({
                "type": "object",
                "properties": {"result": {"type": "string", "description": "The final result of the task."}},
                "required": ["result"],
                "additionalProperties": false
            }),
            group: ToolGroup::Modes,
            destructive: false,
            path_args: vec![],
        },
        ToolSpec {
            name: ASK_FOLLOWUP.into(),
            description: "Ask the user a question when you need information you cannot get with your tools. \
                Offer 2-4 suggested answers, each a complete, actionable answer."
                .into(),
            args_schema: json!({
                "type": "object",
                "properties": {
                    "question": {"type": "string"},
                    "follow_up": {"type": "array", "items": {"type": "string"}, "maxItems": 6}
                },
                "required": ["question"],
                "additionalProperties": false
            }),
            group: ToolGroup::Modes,
            destructive: false,
            path_args: vec![],
        },
        ToolSpec {
            name: SELECT_ACTIVE_INTENT.into(),
            description: "Select the intent (from .orchestration/active_intents.yaml) this work belongs to, before \
                any tool that changes the workspace. Returns the intent's scope, constraints, acceptance criteria \
                and recent history. Writes are limited to the intent's owned_scope."
                .into(),
            args_schema: json!({
                "type": "object",
                "properties": {"intent_id": {"type": "string"}},
                "required": ["intent_id"],
                "additionalProperties": false
            }),
            group: ToolGroup::Modes,
            destructive: false,
            path_args: vec![],
        },
        ToolSpec {
            name: SWITCH_MODE.into(),
            description: "Ask to switch the task to another mode (for example to `code` to implement a plan, or \
                `architect` to plan). The user must approve. Give the reason."
                .into(),
            args_schema: json!({
                "type": "object",
                "properties": {"mode_slug": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["mode_slug", "reason"],
                "additionalProperties": false
            }),
            group: ToolGroup::Modes,
            destructive: false,
            path_args: vec![],
        },
        ToolSpec {
            name: UPDATE_TODO_LIST.into(),
            description: "Replace the task's todo list with a markdown checklist: `[ ]` pending, `[-]` in \
                progress, `[x]` completed, one item per line. Send the whole list every time."
                .into(),
            args_schema: json!({
                "type": "object",
                "properties": {"todos": {"type": "string"}},
                "required": ["todos"],
                "additionalProperties": false
            }),
            group: ToolGroup::Modes,
            destructive: false,
            path_args: vec![],
        },
    ]
}

/// Whether `name` is a host-native tool.
pub fn is_native(name: &str) -> bool {
    matches!(
        name,
        ATTEMPT_COMPLETION | ASK_FOLLOWUP | UPDATE_TODO_LIST | SWITCH_MODE | SELECT_ACTIVE_INTENT
    )
}

pub use crate::store::{TodoItem, TodoState};

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
    fn every_native_tool_name_is_reserved_from_plugins() {
        for s in specs() {
            assert!(is_native(&s.name), "{}", s.name);
            assert!(
                crate::tools::reserved::reserved(&s.name).is_some(),
                "{} must be reserved",
                s.name
            );
        }
    }

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
