//! Host-native tools: the ones that talk to the user or the task itself
//! rather than the workspace, so they run in the host, not a plugin:
//! `attempt_completion`, `ask_followup_question`, `update_todo_list`,
//! `select_active_intent`, `switch_mode`. Each is a [`NativeTool`] in
//! [`table`], registered in the task's [`Registry`](super::Registry) like a
//! plugin's tools and passed through the same gates (mode hooks included).

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::TaskError;
use super::call::CallResult;
use super::runner::{Agent, Ctx, RunState};
use crate::asks::{Ask, CompletionAnswer};
use crate::events::TaskEvent;
use crate::intents::{self, Scope, Trace};
use crate::store::Step;
use crate::tools::{ToolGroup, ToolSpec};
use roost_protocol::{UiRow, UiSubtype};

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

/// A tool the host runs itself: its spec and its handler.
pub(super) trait NativeTool: Send + Sync {
    /// What the model is told about it.
    fn spec(&self) -> ToolSpec;

    /// What a call needs from the approval gate: by default nothing (the
    /// tool talks to the user itself, or changes only the task's notes).
    fn needs(&self, _state: &RunState, _args: &Value) -> Needs {
        Needs::Nothing
    }

    /// Run it (every gate has passed).
    fn call<'a>(&'a self, call: NativeCall<'a>) -> BoxFuture<'a, Result<CallResult, TaskError>>;
}

/// What a host-native call needs before it may run.
pub(super) enum Needs {
    /// Nothing: it runs.
    Nothing,
    /// Approval under this group: the policy's, or a person's.
    Approval(ToolGroup),
    /// It cannot run: this is its result.
    Refused(CallResult),
}

/// One call of a host-native tool: the services, the task, the call.
pub(super) struct NativeCall<'a> {
    /// The services the task runs with.
    pub(super) agent: &'a Agent,
    /// The task.
    pub(super) ctx: &'a Ctx<'a>,
    /// Its run state (mode, intent), which some tools change.
    pub(super) state: &'a mut RunState,
    /// The model's call id.
    pub(super) call_id: &'a str,
    /// The arguments, past every gate.
    pub(super) args: &'a Value,
}

/// Every host-native tool.
pub(super) fn table() -> Vec<std::sync::Arc<dyn NativeTool>> {
    vec![
        std::sync::Arc::new(AttemptCompletion),
        std::sync::Arc::new(AskFollowup),
        std::sync::Arc::new(SelectActiveIntent),
        std::sync::Arc::new(SwitchMode),
        std::sync::Arc::new(UpdateTodoList),
    ]
}

/// The `attempt_completion` tool.
struct AttemptCompletion;

impl NativeTool for AttemptCompletion {
    fn spec(&self) -> ToolSpec {
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
            annotations: Default::default(),
        }
    }

    fn call<'a>(&'a self, c: NativeCall<'a>) -> BoxFuture<'a, Result<CallResult, TaskError>> {
        Box::pin(c.agent.attempt_completion(c.ctx, c.call_id, c.args))
    }
}

/// The `ask_followup_question` tool.
struct AskFollowup;

impl NativeTool for AskFollowup {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: ASK_FOLLOWUP.into(),
            description:
                "Ask the user a question when you need information you cannot get with your tools. \
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
            annotations: Default::default(),
        }
    }

    fn call<'a>(&'a self, c: NativeCall<'a>) -> BoxFuture<'a, Result<CallResult, TaskError>> {
        Box::pin(c.agent.ask_followup(c.ctx, c.call_id, c.args))
    }
}

/// The `select_active_intent` tool.
struct SelectActiveIntent;

impl NativeTool for SelectActiveIntent {
    fn spec(&self) -> ToolSpec {
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
            annotations: Default::default(),
        }
    }

    fn call<'a>(&'a self, c: NativeCall<'a>) -> BoxFuture<'a, Result<CallResult, TaskError>> {
        Box::pin(async move { c.agent.select_intent(c.ctx, c.state, c.args) })
    }
}

/// The `switch_mode` tool.
struct SwitchMode;

impl NativeTool for SwitchMode {
    fn spec(&self) -> ToolSpec {
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
            annotations: Default::default(),
        }
    }

    /// A switch to another known mode is approved like any call of the
    /// `modes` group; an unknown mode is refused before anyone is asked.
    fn needs(&self, state: &RunState, args: &Value) -> Needs {
        let slug = args["mode_slug"].as_str().unwrap_or_default();
        match state.modes.get(slug) {
            None => {
                let known: Vec<&str> = state.modes.iter().map(|m| m.slug.as_str()).collect();
                Needs::Refused(CallResult::mistake(format!(
                    "[ERROR] Unknown mode `{slug}`. Available modes: {}.",
                    known.join(", ")
                )))
            }
            Some(target) if target.slug == state.mode.slug => Needs::Nothing,
            Some(_) => Needs::Approval(ToolGroup::Modes),
        }
    }

    fn call<'a>(&'a self, c: NativeCall<'a>) -> BoxFuture<'a, Result<CallResult, TaskError>> {
        Box::pin(async move { c.agent.switch_mode(c.ctx, c.state, c.args).await })
    }
}

/// The `update_todo_list` tool.
struct UpdateTodoList;

impl NativeTool for UpdateTodoList {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: UPDATE_TODO_LIST.into(),
            description:
                "Replace the task's todo list with a markdown checklist: `[ ]` pending, `[-]` in \
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
            annotations: Default::default(),
        }
    }

    fn call<'a>(&'a self, c: NativeCall<'a>) -> BoxFuture<'a, Result<CallResult, TaskError>> {
        Box::pin(async move { c.agent.update_todos(c.ctx, c.args).await })
    }
}

impl Agent {
    async fn attempt_completion(
        &self,
        ctx: &Ctx<'_>,
        call_id: &str,
        args: &Value,
    ) -> Result<CallResult, TaskError> {
        let id = ctx.task.id.as_str();
        let result = args["result"].as_str().unwrap_or_default().to_owned();
        let answer = self
            .ask(
                ctx,
                Some(call_id),
                Ask::Completion {
                    result: result.clone(),
                },
            )
            .await?
            .completion();
        Ok(match answer {
            CompletionAnswer::Accept => CallResult {
                completed: Some(result),
                ..CallResult::ok("The user accepted the result.")
            },
            CompletionAnswer::Declined => {
                self.store
                    .append_ui(id, UiRow::say(UiSubtype::UserFeedback), "(not accepted)")?;
                CallResult::ok(
                    "The user did not accept the result and gave no feedback. Check your work against the task, \
                     then attempt completion again, or ask the user what is missing with ask_followup_question.",
                )
            }
            CompletionAnswer::Feedback(f) => {
                self.store
                    .append_ui(id, UiRow::say(UiSubtype::UserFeedback), &f)?;
                CallResult::ok(format!(
                    "The user has provided feedback on the result. Consider it, continue the task, and then attempt \
                     completion again.\n<feedback>\n{f}\n</feedback>"
                ))
            }
        })
    }

    /// `select_active_intent`: check the intent and make it the task's.
    fn select_intent(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        args: &Value,
    ) -> Result<CallResult, TaskError> {
        let id = ctx.task.id.as_str();
        let wanted = args["intent_id"].as_str().unwrap_or_default();
        let structured = |v: Value| CallResult::error(format!("[ERROR] {v}"));
        if !intents::enabled_in(&ctx.ws) {
            return Ok(structured(serde_json::json!({
                "code": "intents_off", "message": "this workspace has no .orchestration/ directory, so intents are off"
            })));
        }
        let all = match intents::load(&ctx.workspace) {
            Ok(all) => all,
            Err(e) => {
                return Ok(structured(
                    serde_json::json!({"code": "intents_file_invalid", "message": e.to_string()}),
                ));
            }
        };
        let Some(intent) = all.iter().find(|i| i.id == wanted).cloned() else {
            let available: Vec<&str> = all.iter().map(|i| i.id.as_str()).collect();
            return Ok(CallResult {
                mistake: true,
                ..structured(
                    serde_json::json!({"code": "unknown_intent", "intent_id": wanted, "available": available}),
                )
            });
        };
        if intent.status != "IN_PROGRESS" {
            return Ok(structured(serde_json::json!({
                "code": "intent_not_in_progress", "intent_id": wanted, "status": intent.status,
                "message": "only an IN_PROGRESS intent can be selected"
            })));
        }
        let scope = match Scope::new(&ctx.workspace, &intent) {
            Ok(s) => s,
            Err(e) => {
                return Ok(structured(
                    serde_json::json!({"code": "intent_scope_invalid", "message": e.to_string()}),
                ));
            }
        };
        let recent = Trace::of(&ctx.workspace)
            .read(Some(&intent.id))
            .map(|(e, _)| e)
            .unwrap_or_default();
        let recent = &recent[recent.len().saturating_sub(10)..];
        let block = intents::context_block(&ctx.workspace, &intent, recent);
        self.store.set_active_intent(id, Some(&intent.id))?;
        self.store
            .append_ui(id, UiRow::say(UiSubtype::IntentSelected), &intent.id)?;
        state.intent = Some((intent, scope));
        Ok(CallResult::ok(block))
    }

    /// `switch_mode`, approved by the approval gate: change the mode.
    async fn switch_mode(
        &self,
        ctx: &Ctx<'_>,
        state: &mut RunState,
        args: &Value,
    ) -> Result<CallResult, TaskError> {
        let id = ctx.task.id.as_str();
        let slug = args["mode_slug"].as_str().unwrap_or_default();
        let reason = args["reason"].as_str().unwrap_or_default();
        let Some(target) = state.modes.get(slug).cloned() else {
            return Ok(CallResult::mistake(format!(
                "[ERROR] Unknown mode `{slug}`."
            )));
        };
        if target.slug == state.mode.slug {
            return Ok(CallResult::ok(format!("Already in {} mode.", target.name)));
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
            .commit(&self.store, id, step, vec![announce])
            .await?;
        let msg = format!(
            "Switched from {} mode to {} mode because: {reason}",
            state.mode.slug, target.slug
        );
        state.mode = target;
        Ok(CallResult::ok(msg))
    }

    async fn ask_followup(
        &self,
        ctx: &Ctx<'_>,
        call_id: &str,
        args: &Value,
    ) -> Result<CallResult, TaskError> {
        let id = ctx.task.id.as_str();
        let question = args["question"].as_str().unwrap_or_default();
        let suggestions: Vec<String> = args["follow_up"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let answer = self
            .ask(
                ctx,
                Some(call_id),
                Ask::Followup {
                    question: question.to_owned(),
                    suggestions,
                },
            )
            .await?
            .words();
        Ok(match answer {
            Some(a) => {
                self.store
                    .append_ui(id, UiRow::say(UiSubtype::UserFeedback), &a)?;
                CallResult::ok(format!("<answer>\n{a}\n</answer>"))
            }
            None => CallResult::ok(
                "No one is available to answer (non-interactive run). Continue with your best judgement and state \
                 your assumptions.",
            ),
        })
    }

    async fn update_todos(&self, ctx: &Ctx<'_>, args: &Value) -> Result<CallResult, TaskError> {
        let id = ctx.task.id.as_str();
        match parse_todos(args["todos"].as_str().unwrap_or_default()) {
            Ok(items) => {
                self.store.set_todos(id, &items)?;
                let markdown = render_todos(&items);
                ctx.events
                    .publish(TaskEvent::TodosUpdated {
                        markdown: markdown.clone(),
                    })
                    .await;
                // Like every tool, the call leaves its result in the UI history.
                Ok(CallResult {
                    ui_row: Some((UiSubtype::ToolResult, markdown.clone())),
                    ..CallResult::ok(format!("Todo list updated:\n{markdown}"))
                })
            }
            Err(e) => Ok(CallResult::mistake(format!("[ERROR] {e}"))),
        }
    }
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
