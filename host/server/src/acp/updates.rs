//! The session service's display items as ACP `session/update`s: the
//! reply as `agent_message_chunk`, each call as `tool_call` then
//! `tool_call_update` (kind, status, locations, and what it showed), the
//! todo list as a `plan`, a mode change as `current_mode_update`, notes as
//! `agent_thought_chunk`. ACP's `content` of a call update replaces the
//! call's content, so a call's content is kept here and sent whole.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, CurrentModeUpdate, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use roost_protocol::display::{
    CallContent, CallKind, CallStatus, CallView, DisplayItem, Ending, Note,
};
use roost_protocol::{Ask, TodoState};

/// Most of a call's text kept to send (a long command's output keeps its
/// end): an editor gets a bounded update whatever the call printed.
const MAX_CALL_TEXT: usize = 64 * 1024;

/// Text as an ACP content block.
pub(crate) fn text(t: impl Into<String>) -> ContentBlock {
    ContentBlock::Text(TextContent::new(t))
}

/// The ACP kind of a call.
pub(crate) fn kind(k: CallKind) -> ToolKind {
    match k {
        CallKind::Read => ToolKind::Read,
        CallKind::Edit => ToolKind::Edit,
        CallKind::Execute => ToolKind::Execute,
        CallKind::Fetch => ToolKind::Fetch,
        CallKind::Think => ToolKind::Think,
        CallKind::Other => ToolKind::Other,
    }
}

fn status(s: CallStatus) -> ToolCallStatus {
    match s {
        CallStatus::Pending => ToolCallStatus::Pending,
        CallStatus::InProgress => ToolCallStatus::InProgress,
        CallStatus::Completed => ToolCallStatus::Completed,
        CallStatus::Failed => ToolCallStatus::Failed,
    }
}

/// A call's title for an editor: its own title and the paths it names.
pub(crate) fn title(call: &CallView) -> String {
    match call.locations.as_slice() {
        [] => call.title.clone(),
        paths => format!("{} {}", call.title, paths.join(", ")),
    }
}

/// What one session has shown of its calls.
#[derive(Debug, Default)]
pub struct Updates {
    /// Each open call's text so far.
    calls: HashMap<String, String>,
}

impl Updates {
    /// The updates `item` makes.
    pub fn of(&mut self, item: &DisplayItem) -> Vec<SessionUpdate> {
        match item {
            DisplayItem::MessageChunk { text: t } => {
                vec![SessionUpdate::AgentMessageChunk(ContentChunk::new(text(
                    t.clone(),
                )))]
            }
            // Streamed already; a replayed reply is sent whole.
            DisplayItem::MessageDone { streamed: true, .. } => Vec::new(),
            DisplayItem::MessageDone { text: t, .. } if t.is_empty() => Vec::new(),
            DisplayItem::MessageDone { text: t, .. } => {
                vec![SessionUpdate::AgentMessageChunk(ContentChunk::new(text(
                    t.clone(),
                )))]
            }
            DisplayItem::Call { call } => {
                self.calls.insert(call.id.clone(), String::new());
                vec![SessionUpdate::ToolCall(
                    ToolCall::new(call.id.clone(), title(call))
                        .kind(kind(call.kind))
                        .status(ToolCallStatus::Pending)
                        .locations(
                            call.locations
                                .iter()
                                .map(|p| ToolCallLocation::new(p.clone()))
                                .collect(),
                        )
                        .raw_input(call.args.clone()),
                )]
            }
            DisplayItem::CallUpdate {
                id,
                status: s,
                content,
            } => self.call_update(id, *s, content),
            DisplayItem::Plan { entries, .. } => vec![SessionUpdate::Plan(Plan::new(
                entries
                    .iter()
                    .map(|e| {
                        PlanEntry::new(
                            e.text.clone(),
                            PlanEntryPriority::Medium,
                            match e.state {
                                TodoState::Pending => PlanEntryStatus::Pending,
                                TodoState::InProgress => PlanEntryStatus::InProgress,
                                TodoState::Completed => PlanEntryStatus::Completed,
                            },
                        )
                    })
                    .collect(),
            ))],
            DisplayItem::Question { ask, .. } => match question_text(ask) {
                Some(t) => vec![SessionUpdate::AgentMessageChunk(ContentChunk::new(text(t)))],
                // Approvals are asked with `session/request_permission`.
                None => Vec::new(),
            },
            DisplayItem::ModeChanged { mode } => vec![SessionUpdate::CurrentModeUpdate(
                CurrentModeUpdate::new(mode.clone()),
            )],
            DisplayItem::Note { note } => vec![SessionUpdate::AgentThoughtChunk(
                ContentChunk::new(text(note_text(note))),
            )],
            DisplayItem::Ended { ending } => match ending {
                Ending::Failed { error } => vec![SessionUpdate::AgentMessageChunk(
                    ContentChunk::new(text(format!("\n\nThe task failed: {error}"))),
                )],
                _ => Vec::new(),
            },
        }
    }

    /// A call's update, its content whole.
    fn call_update(
        &mut self,
        id: &str,
        s: Option<CallStatus>,
        content: &[CallContent],
    ) -> Vec<SessionUpdate> {
        let kept = self.calls.entry(id.to_owned()).or_default();
        for c in content {
            match c {
                CallContent::Output { chunk } => kept.push_str(chunk),
                CallContent::Result { text: t, .. } => push_block(kept, t),
                CallContent::Diff { diff } => push_block(kept, &format!("```diff\n{diff}```")),
                CallContent::Error { error } => {
                    push_block(kept, &format!("error [{}]: {}", error.code, error.message));
                }
                CallContent::Denied { feedback, .. } => push_block(
                    kept,
                    &match feedback {
                        Some(f) => format!("denied: {f}"),
                        None => "denied".to_owned(),
                    },
                ),
                CallContent::Hook {
                    hook,
                    decision,
                    detail,
                } => push_block(kept, &format!("hook {hook}: {decision}: {detail}")),
            }
        }
        keep_tail(kept);
        let mut fields = ToolCallUpdateFields::new();
        if let Some(s) = s {
            fields = fields.status(status(s));
        }
        if !content.is_empty() {
            fields = fields.content(vec![ToolCallContent::from(text(kept.clone()))]);
        }
        if matches!(s, Some(CallStatus::Completed | CallStatus::Failed)) {
            self.calls.remove(id);
        }
        vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_owned(),
            fields,
        ))]
    }
}

/// Append a block of text, on a line of its own.
fn push_block(kept: &mut String, t: &str) {
    if !kept.is_empty() && !kept.ends_with('\n') {
        kept.push('\n');
    }
    kept.push_str(t);
}

/// Keep the end of a call's text past [`MAX_CALL_TEXT`] bytes.
fn keep_tail(kept: &mut String) {
    if kept.len() > MAX_CALL_TEXT {
        let mut from = kept.len() - MAX_CALL_TEXT / 2;
        while !kept.is_char_boundary(from) {
            from += 1;
        }
        kept.replace_range(..from, "…");
    }
}

/// A question that ends the turn, as the message the person reads (the
/// next prompt answers it, as in Roo Code); none for an approval.
pub(crate) fn question_text(ask: &Ask) -> Option<String> {
    match ask {
        Ask::Followup {
            question,
            suggestions,
        } => {
            let mut t = format!("\n\n{question}");
            for s in suggestions {
                t.push_str(&format!("\n- {s}"));
            }
            Some(t)
        }
        Ask::Completion { result } => Some(format!(
            "\n\n{result}\n\n(Reply to continue with feedback, or leave it here: the task is done when you say so.)"
        )),
        Ask::Guidance { reason, .. } => {
            Some(format!("\n\n{reason}\n\n(Reply with guidance to go on.)"))
        }
        Ask::Tool { .. } | Ask::Scope { .. } | Ask::Hook { .. } => None,
    }
}

/// A note in one line.
fn note_text(note: &Note) -> String {
    match note {
        Note::Checkpoint { checkpoint } => format!(
            "checkpoint {} saved (turn {})",
            checkpoint.id, checkpoint.turn
        ),
        Note::Retrying {
            attempt,
            delay_ms,
            reason,
        } => format!("attempt {attempt} failed ({reason}); retrying in {delay_ms} ms"),
        Note::Skill { skill, path, .. } => match path {
            Some(p) => format!("skill {skill}: {p}"),
            None => format!("skill {skill} loaded"),
        },
        Note::Warning { message } => format!("warning: {message}"),
        Note::SubtaskStarted { child_id, mode, .. } => {
            format!("subtask {child_id} started in mode {mode}")
        }
        Note::SubtaskFinished {
            child_id, status, ..
        } => format!("subtask {child_id} {status}"),
        Note::GroupStarted {
            group_id, children, ..
        } => format!("parallel group {group_id}: {children} subtasks"),
        Note::GroupFinished { group_id, .. } => format!("parallel group {group_id} ended"),
    }
}
