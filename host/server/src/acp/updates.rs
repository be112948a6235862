//! The session service's display items as ACP `session/update`s: the
//! reply as `agent_message_chunk`, each call as `tool_call` then
//! `tool_call_update` (kind, status, locations, and what it showed), the
//! todo list as a `plan`, a mode change as `current_mode_update`, notes as
//! `agent_thought_chunk`. ACP's `content` of a call update replaces the
//! call's content, so a call's content is kept here and sent whole: its
//! text, and each edit as an ACP diff (the changed lines of each hunk,
//! before and after) the editor shows as one. Paths are absolute, as ACP
//! wants them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, CurrentModeUpdate, Diff, Plan, PlanEntry, PlanEntryPriority,
    PlanEntryStatus, SessionUpdate, TextContent, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
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

/// Words of the agent's own, as a message chunk.
pub(crate) fn said(words: impl Into<String>) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(text(words)))
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
#[derive(Debug)]
pub struct Updates {
    /// The session's workspace: calls name paths within it.
    workspace: PathBuf,
    /// Each open call's content so far.
    calls: HashMap<String, Kept>,
    /// What the session's task has cost so far, in USD.
    spent: f64,
}

/// What a call has shown.
#[derive(Debug, Default)]
struct Kept {
    /// Its text.
    text: String,
    /// Its edits.
    diffs: Vec<Diff>,
}

impl Updates {
    /// A session in `workspace`.
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        Self {
            workspace: workspace.into(),
            calls: HashMap::new(),
            spent: 0.0,
        }
    }

    /// The task had cost `spent` USD before these updates.
    pub fn spent(mut self, spent: f64) -> Self {
        self.spent = spent;
        self
    }

    /// Call `id` showed `diffs` (in a permission request): later updates
    /// of its content keep them.
    pub(crate) fn keep_diffs(&mut self, id: &str, diffs: &[Diff]) {
        let kept = self.calls.entry(id.to_owned()).or_default();
        for d in diffs {
            if !kept.diffs.contains(d) {
                kept.diffs.push(d.clone());
            }
        }
    }

    /// The ACP diffs of a unified diff.
    pub(crate) fn diffs(&self, unified: &str) -> Vec<Diff> {
        edits(unified)
            .into_iter()
            .map(|e| Diff::new(self.absolute(&e.path), e.new).old_text(e.old))
            .collect()
    }

    /// `path` (relative to the workspace, or absolute) as an absolute path.
    fn absolute(&self, path: &str) -> PathBuf {
        self.workspace.join(Path::new(path))
    }

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
                self.calls.insert(call.id.clone(), Kept::default());
                vec![SessionUpdate::ToolCall(
                    ToolCall::new(call.id.clone(), title(call))
                        .kind(kind(call.kind))
                        .status(ToolCallStatus::Pending)
                        .locations(
                            call.locations
                                .iter()
                                .map(|p| ToolCallLocation::new(self.absolute(p)))
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
            DisplayItem::Usage {
                usage,
                cost,
                context_window,
            } => {
                self.spent += cost;
                // What the context holds after the reply: the prompt
                // (cached or not) and the reply.
                let used = usage
                    .input_tokens
                    .saturating_add(usage.cache_read_tokens)
                    .saturating_add(usage.cache_write_tokens)
                    .saturating_add(usage.output_tokens);
                vec![SessionUpdate::UsageUpdate(
                    UsageUpdate::new(used, *context_window).cost(Cost::new(self.spent, "USD")),
                )]
            }
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
        let diffs: Vec<Diff> = content
            .iter()
            .filter_map(|c| match c {
                CallContent::Diff { diff } => Some(diff),
                _ => None,
            })
            .flat_map(|d| self.diffs(d))
            .collect();
        let entry = self.calls.entry(id.to_owned()).or_default();
        for d in diffs {
            if !entry.diffs.contains(&d) {
                entry.diffs.push(d);
            }
        }
        let kept = &mut entry.text;
        for c in content {
            match c {
                CallContent::Output { chunk } => kept.push_str(chunk),
                CallContent::Result { text: t, .. } => push_block(kept, t),
                // Sent as ACP diffs.
                CallContent::Diff { .. } => {}
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
            let mut shown: Vec<ToolCallContent> = entry
                .diffs
                .iter()
                .cloned()
                .map(ToolCallContent::Diff)
                .collect();
            if !entry.text.is_empty() {
                shown.push(ToolCallContent::from(text(entry.text.clone())));
            }
            fields = fields.content(shown);
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

/// One file's edit in a unified diff: its path and the lines of its hunks
/// before and after (`old` none for a new file).
#[derive(Debug, PartialEq)]
pub(crate) struct Edit {
    pub(crate) path: String,
    pub(crate) old: Option<String>,
    pub(crate) new: String,
}

/// The edits of a unified diff (`--- a/…`, `+++ b/…`, `@@` hunks), each
/// hunk's context and changed lines; hunks of one file are joined with a
/// line of their own between them. A diff that is not one gives nothing.
pub(crate) fn edits(unified: &str) -> Vec<Edit> {
    let mut out: Vec<Edit> = Vec::new();
    let mut created = false;
    let mut hunks = 0usize;
    for line in unified.lines() {
        if let Some(old) = line.strip_prefix("--- ") {
            created = old.trim() == "/dev/null";
            continue;
        }
        if let Some(new) = line.strip_prefix("+++ ") {
            let path = new.trim();
            let path = path.strip_prefix("b/").unwrap_or(path);
            out.push(Edit {
                path: path.to_owned(),
                old: (!created).then(String::new),
                new: String::new(),
            });
            hunks = 0;
            continue;
        }
        let Some(edit) = out.last_mut() else {
            continue;
        };
        if line.starts_with("@@") {
            hunks += 1;
            // A file that had no lines: it is new.
            if hunks == 1 && line.starts_with("@@ -0,0 ") {
                edit.old = None;
            }
            if hunks > 1 {
                if let Some(old) = edit.old.as_mut() {
                    old.push_str("⋮\n");
                }
                edit.new.push_str("⋮\n");
            }
            continue;
        }
        let (to_old, to_new, rest) = match line.split_at_checked(1) {
            Some((" ", rest)) => (true, true, rest),
            Some(("-", rest)) => (true, false, rest),
            Some(("+", rest)) => (false, true, rest),
            // "\ No newline at end of file", or a line the diff does not have.
            _ => continue,
        };
        if to_old && let Some(old) = edit.old.as_mut() {
            old.push_str(rest);
            old.push('\n');
        }
        if to_new {
            edit.new.push_str(rest);
            edit.new.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unified_diff_becomes_each_files_lines_before_and_after() {
        let d = [
            "--- a/src/lib.rs",
            "+++ b/src/lib.rs",
            "@@ -1,2 +1,2 @@",
            " fn a() {}",
            "-fn b() {}",
            "+fn b() -> u8 { 1 }",
            "@@ -9 +9 @@",
            "-x",
            "+y",
            "\\ No newline at end of file",
            "--- /dev/null",
            "+++ b/new.txt",
            "@@ -0,0 +1 @@",
            "+hello",
            "--- a/made.txt",
            "+++ b/made.txt",
            "@@ -0,0 +1 @@",
            "+made",
        ]
        .join("\n");
        let e = edits(&d);
        assert_eq!(
            e,
            vec![
                Edit {
                    path: "src/lib.rs".into(),
                    old: Some("fn a() {}\nfn b() {}\n⋮\nx\n".into()),
                    new: "fn a() {}\nfn b() -> u8 { 1 }\n⋮\ny\n".into(),
                },
                Edit {
                    path: "new.txt".into(),
                    old: None,
                    new: "hello\n".into(),
                },
                Edit {
                    path: "made.txt".into(),
                    old: None,
                    new: "made\n".into(),
                },
            ]
        );
        assert!(edits("not a diff at all\n+ stray").is_empty());
    }

    #[test]
    fn an_edit_is_an_acp_diff_with_an_absolute_path() {
        let mut u = Updates::new("/work/ws");
        let call = roost_protocol::display::CallView {
            id: "c1".into(),
            tool: "write_to_file".into(),
            title: "write_to_file".into(),
            kind: CallKind::Edit,
            locations: vec!["b.txt".into()],
            args: serde_json::json!({"path": "b.txt"}),
        };
        let shown = u.of(&DisplayItem::Call { call });
        let SessionUpdate::ToolCall(c) = &shown[0] else {
            panic!("{shown:?}");
        };
        assert_eq!(c.locations[0].path, PathBuf::from("/work/ws/b.txt"));
        let done = u.of(&DisplayItem::CallUpdate {
            id: "c1".into(),
            status: Some(CallStatus::Completed),
            content: vec![
                CallContent::Diff {
                    diff: "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-bee\n+bees\n".into(),
                },
                CallContent::Result {
                    text: "written".into(),
                    after_output: false,
                },
            ],
        });
        let SessionUpdate::ToolCallUpdate(up) = &done[0] else {
            panic!("{done:?}");
        };
        let content = up.fields.content.clone().unwrap_or_default();
        let ToolCallContent::Diff(d) = &content[0] else {
            panic!("{content:?}");
        };
        assert_eq!(d.path, PathBuf::from("/work/ws/b.txt"));
        assert_eq!(d.old_text.as_deref(), Some("bee\n"));
        assert_eq!(d.new_text, "bees\n");
        assert!(matches!(&content[1], ToolCallContent::Content(_)));
    }
}
