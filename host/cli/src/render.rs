//! Shows a task's events: streamed text, tool calls with short arguments,
//! coloured diffs, a spinner while the model thinks; or NDJSON for scripts.

use super::line::outln;
use std::collections::{HashMap, HashSet};
use std::io::IsTerminal;
use std::sync::Arc;

use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::oneshot;

use super::interact::Terminal;
use super::live_tree::{LiveTree, short_id};
use super::paint::{Style, painted_diff, short_args};
use super::sanitize::{json_text, visible, visible_line};
use roost_core::asks::Ask;
use roost_core::engine::Engine;
use roost_core::events::{Envelope, TaskEvent};
use roost_core::session::{Owner, Session};
use roost_protocol::display::{CallContent, Display, DisplayItem, Ending, Note};

const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For people.
    Text,
    /// One JSON object per line.
    Json,
}

/// Streamed text lost to a lag is printed whole from the final message:
/// a display that fell behind the broadcast channel (a slow terminal, a
/// long reply) still shows everything the model said.
#[derive(Debug, Default)]
struct CatchUp {
    lagged: bool,
}

impl CatchUp {
    /// The display missed events.
    fn lagged(&mut self) {
        self.lagged = true;
    }

    /// What to print instead of `ev`'s usual text: the whole final message
    /// after a lag (empty when it has no text), else `None`.
    fn on_event(&mut self, ev: &TaskEvent) -> Option<String> {
        let TaskEvent::MessageFinal { text } = ev else {
            return None;
        };
        if !std::mem::take(&mut self.lagged) {
            return None;
        }
        Some(if text.is_empty() {
            String::new()
        } else {
            format!("\n{}\n", visible(text))
        })
    }
}

/// Who answers a task's questions as the display reaches them: the
/// question is put only after its subject (the call, its diff, the
/// result) is on the screen.
pub struct Asker {
    /// The engine the task runs in.
    pub engine: Arc<Engine>,
    /// The person (or the policy standing in for one).
    pub responder: Arc<Terminal>,
}

impl Asker {
    /// Answer ask `ask_id` of `task`. A question the person interrupted
    /// stays unanswered: the cancel that came with the Ctrl-C stops the
    /// task (interrupted, resumable); it is not their "no".
    async fn answer(&self, task: &str, ask_id: &str, ask: &Ask) {
        let Some(answer) = self.responder.respond(ask).await else {
            return;
        };
        if let Err(e) = self.session().answer(task, ask_id, answer).await {
            tracing::warn!("answer not taken: {e}");
        }
    }

    /// After the display fell behind: answer the open questions it may
    /// have missed (each question is put once).
    async fn answer_missed(&self, task: &str, answered: &mut HashSet<String>) {
        let Ok(open) = self.session().asks(task, false).await else {
            return;
        };
        for view in open {
            if answered.insert(view.ask_id.clone()) {
                self.answer(task, &view.ask_id, &view.ask).await;
            }
        }
    }

    /// The person at this host's session (every task of the store is
    /// theirs).
    fn session(&self) -> Session<'_> {
        Session::new(&self.engine, Owner::Host)
    }
}

/// Print events until `stop` fires (then print what is still queued) or the
/// channel closes, answering the task's questions with `asker` in order.
pub async fn render(
    mut rx: Receiver<std::sync::Arc<Envelope>>,
    format: Format,
    mut stop: oneshot::Receiver<()>,
    asker: Option<Asker>,
    mut display: Display,
) {
    let style = Style {
        color: std::io::stdout().is_terminal(),
    };
    let spin_ok = std::io::stderr().is_terminal() && format == Format::Text;
    let mut spinning = false;
    let mut frame = 0usize;
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
    let mut stopping = false;
    let mut catch_up = CatchUp::default();
    let mut missed = false;
    let mut answered = HashSet::new();
    // Subtasks the task follows (theirs and their own subtasks' events
    // come through it), with their modes.
    let mut children: HashMap<String, String> = HashMap::new();
    let mut tree = LiveTree::default();
    loop {
        let ev = if stopping {
            match rx.try_recv() {
                Ok(ev) => Ok(ev),
                Err(TryRecvError::Lagged(n)) => Err(RecvError::Lagged(n)),
                Err(_) => break,
            }
        } else {
            tokio::select! {
            ev = rx.recv() => ev,
            _ = &mut stop => {
                stopping = true;
                continue;
            }
            _ = tick.tick(), if spinning || (spin_ok && tree.alive()) => {
                frame += 1;
                // While subtasks run, the status line is the tree.
                let what = match tree.summary() {
                    // One line: a wrapped status line cannot be redrawn.
                    Some(line) if tree.alive() => {
                        let room = super::line::terminal_width().saturating_sub(3);
                        let line = visible_line(&line);
                        if line.chars().count() > room {
                            format!("{}…", line.chars().take(room.saturating_sub(1)).collect::<String>())
                        } else {
                            line.into_owned()
                        }
                    }
                    _ => "thinking…".to_owned(),
                };
                super::line::to_stderr(&format!("\r\x1b[2K{} {what}", SPINNER[frame % SPINNER.len()]));
                super::line::spinner_drawn(true);
                spinning = true;
                continue;
            }
            }
        };
        let envelope = match ev {
            Ok(ev) => ev,
            Err(RecvError::Lagged(n)) => {
                tracing::debug!("display fell {n} events behind");
                catch_up.lagged();
                missed = true;
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        let ask = match &envelope.event {
            TaskEvent::AskRequired { ask_id, ask, .. } => Some((ask_id.as_str(), ask)),
            _ => None,
        };
        let ev = &envelope.event;
        // What the event shows, decided once for every front-end (the
        // display remembers what it already showed).
        let items = match format {
            Format::Text => display.items(&envelope),
            Format::Json => Vec::new(),
        };
        if let TaskEvent::SubtaskStarted { child_id, mode, .. } = ev {
            children.insert(child_id.clone(), mode.clone());
        }
        let child_ended = tree.observe(&envelope.task_id, ev);
        let child = children.get(&envelope.task_id);
        if format == Format::Text
            && child.is_none()
            && let Some(whole) = catch_up.on_event(ev)
        {
            if !whole.is_empty() {
                super::line::to_stdout(&whole);
            }
            continue;
        }
        if spinning && !matches!(ev, TaskEvent::Retrying { .. }) {
            super::line::to_stderr("\r\x1b[2K");
            super::line::spinner_drawn(false);
            spinning = false;
        }
        if format == Format::Json {
            if let Ok(line) = serde_json::to_string(&*envelope).map(|l| json_text(&l).into_owned())
            {
                outln!("{line}");
            }
        } else {
            if child.is_none() && matches!(ev, TaskEvent::RequestStarted { .. }) {
                spinning = spin_ok;
            }
            let mut text: String = items
                .iter()
                .map(|item| match child {
                    Some(mode) => child_text(item, mode, &envelope.task_id, &style),
                    None => item_text(item, &style),
                })
                .collect();
            // What is not the model's streamed text starts on a line of
            // its own.
            if !text.is_empty() && !items.iter().all(streams) && super::line::stdout_mid_line() {
                text.insert(0, '\n');
            }
            if !text.is_empty() {
                super::line::to_stdout(&text);
            }
            // A group's child ended: where the whole tree stands.
            if child_ended && let Some(line) = tree.summary() {
                super::line::to_stdout(&format!("{}\n", style.paint("2", &format!("⋯ {line}"))));
            }
        }
        // The subject is on the screen: now the question.
        if let (Some(asker), Some((ask_id, ask)), false) = (&asker, ask, stopping)
            && answered.insert(ask_id.to_owned())
        {
            // The run may end while the question waits (Ctrl-C cancels
            // it): stop waiting then, and print how it ended.
            tokio::select! {
                () = asker.answer(&envelope.task_id, ask_id, ask) => {}
                _ = &mut stop => stopping = true,
            }
        }
        if std::mem::take(&mut missed)
            && let Some(asker) = &asker
        {
            asker.answer_missed(&envelope.task_id, &mut answered).await;
        }
    }
}

/// What the text format prints for one display item (empty for nothing).
/// Text from the model, tools, hooks and the file system is made visible
/// with [`visible`] / [`visible_line`] before it is painted, so it cannot
/// drive the terminal; only Roost's own colour codes are escape sequences.
fn item_text(item: &DisplayItem, style: &Style) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = match item {
        DisplayItem::MessageChunk { text } => write!(out, "{}", visible(text)),
        // Its chunks were shown; a reply is whole after a lag (see `CatchUp`).
        DisplayItem::MessageDone { text, .. } => {
            if text.is_empty() {
                Ok(())
            } else {
                writeln!(out)
            }
        }
        DisplayItem::Call { call } => writeln!(
            out,
            "{} {}",
            style.paint("1;36", &format!("⏺ {}", visible_line(&call.tool))),
            style.paint("2", &short_args(&call.args))
        ),
        DisplayItem::CallUpdate { content, .. } => {
            for c in content {
                out.push_str(&content_text(c, style));
            }
            Ok(())
        }
        DisplayItem::Plan { markdown, .. } => writeln!(
            out,
            "{}\n{}",
            style.paint("1", "Todo list:"),
            visible(markdown)
        ),
        DisplayItem::Question {
            ask: Ask::Completion { result },
            ..
        } => writeln!(
            out,
            "\n{}\n{}",
            style.paint("1;32", "✔ Result:"),
            visible(result)
        ),
        // The asker puts the other questions.
        DisplayItem::Question { .. }
        | DisplayItem::ModeChanged { .. }
        | DisplayItem::Usage { .. } => Ok(()),
        DisplayItem::Note { note } => write!(out, "{}", note_text(note, style)),
        DisplayItem::Ended { ending } => write!(out, "{}", ending_text(ending, style)),
    };
    out
}

/// Whether `item` is streamed text (the model's reply, a command's output)
/// that goes on the line it is on.
fn streams(item: &DisplayItem) -> bool {
    match item {
        DisplayItem::MessageChunk { .. } => true,
        DisplayItem::CallUpdate { content, .. } => content
            .iter()
            .all(|c| matches!(c, CallContent::Output { .. })),
        _ => false,
    }
}

/// What a call showed, indented under it.
fn content_text(content: &CallContent, style: &Style) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    match content {
        // A running command's output, as it comes.
        CallContent::Output { chunk } => {
            let _ = write!(out, "{}", style.paint("2", &visible(chunk)));
        }
        // A command's output was shown as it came: the rest of its
        // result (exit status, files changed), whole.
        CallContent::Result {
            text,
            after_output: true,
        } => {
            for l in text.lines().filter(|l| !l.trim().is_empty()) {
                let _ = writeln!(out, "  {}", style.paint("2", &visible_line(l)));
            }
        }
        CallContent::Result { text, .. } => {
            let lines: Vec<&str> = text.lines().collect();
            for l in lines.iter().take(6) {
                let _ = writeln!(out, "  {}", style.paint("2", &visible_line(l)));
            }
            if lines.len() > 6 {
                let _ = writeln!(
                    out,
                    "  {}",
                    style.paint("2", &format!("… {} more lines", lines.len() - 6))
                );
            }
        }
        CallContent::Diff { diff } => {
            for l in painted_diff(diff, style.color) {
                let _ = writeln!(out, "  {l}");
            }
        }
        CallContent::Error { error } => {
            let _ = writeln!(
                out,
                "  {}",
                style.paint(
                    "31",
                    &format!("error [{}]: {}", error.code, visible(&error.message))
                )
            );
        }
        CallContent::Denied { tool, feedback } => {
            out = denied_text(
                Some(tool.as_str()).filter(|t| !t.is_empty()),
                feedback.as_deref(),
                style,
            );
        }
        CallContent::Hook {
            hook,
            decision,
            detail,
        } => {
            let _ = writeln!(
                out,
                "{}",
                style.paint(
                    "35",
                    &format!(
                        "  ⚑ hook {}: {}: {}",
                        visible_line(hook),
                        decision.as_str(),
                        visible_line(detail)
                    )
                )
            );
        }
    }
    out
}

/// A note beside the conversation, in one line.
fn note_text(note: &Note, style: &Style) -> String {
    let (colour, line) = match note {
        Note::Checkpoint { checkpoint } => (
            "2",
            format!("◆ checkpoint {} (turn {})", checkpoint.id, checkpoint.turn),
        ),
        Note::Retrying {
            attempt,
            delay_ms,
            reason,
        } => (
            "33",
            format!(
                "  retrying (attempt {attempt} failed: {}) in {delay_ms} ms",
                visible_line(reason)
            ),
        ),
        Note::Skill {
            skill,
            path,
            origin,
        } => (
            "36",
            format!(
                "  ✦ skill {} ({}){}",
                visible_line(skill),
                visible_line(origin),
                path.as_deref()
                    .map(|p| format!(": {}", visible_line(p)))
                    .unwrap_or_default()
            ),
        ),
        // A problem the task met that did not stop it (a skill skipped, an
        // MCP server unusable): one line each.
        Note::Warning { message } => ("33", format!("warning: {}", visible_line(message))),
        Note::SubtaskStarted {
            child_id,
            mode,
            message,
        } => {
            return format!(
                "{} {}\n",
                style.paint(
                    "1;35",
                    &format!("⤷ subtask {} · {}", short_id(child_id), visible_line(mode))
                ),
                style.paint("2", &visible_line(first_line(message)))
            );
        }
        Note::SubtaskFinished {
            child_id,
            status,
            result,
        } => {
            return format!(
                "{} {}\n",
                style.paint(
                    "1;35",
                    &format!("⤶ subtask {} {status}:", short_id(child_id))
                ),
                visible_line(first_line(result))
            );
        }
        Note::GroupStarted {
            group_id,
            strategy,
            children,
        } => (
            "1;35",
            format!(
                "⤷ parallel group {} · {children} subtasks · {}",
                short_id(group_id),
                strategy.as_str()
            ),
        ),
        Note::GroupFinished {
            group_id,
            status,
            cost,
        } => (
            "1;35",
            format!(
                "⤶ parallel group {} {}{}",
                short_id(group_id),
                serde_json::to_value(status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                if *cost > 0.0 {
                    format!(" (${cost:.4})")
                } else {
                    String::new()
                }
            ),
        ),
    };
    format!("{}\n", style.paint(colour, &line))
}

/// How the run ended, in one line.
fn ending_text(ending: &Ending, style: &Style) -> String {
    let (colour, line) = match ending {
        Ending::Completed { usage, cost, .. } => (
            "2",
            format!(
                "completed · tokens in {} out {} (cache read {} write {}){}",
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                cost_text(
                    *cost,
                    usage.input_tokens.saturating_add(usage.output_tokens)
                )
                .map(|c| format!(" · {c}"))
                .unwrap_or_default()
            ),
        ),
        Ending::Aborted { reason } => ("33", format!("aborted: {}", visible(reason))),
        Ending::Failed { error } => ("31", format!("failed: {}", visible(error))),
        Ending::Paused { reason } => ("33", visible(reason).into_owned()),
    };
    format!("{}\n", style.paint(colour, &line))
}

/// A text's first line.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// What the text format prints for an item of a subtask the driven task
/// follows: its replies whole (not streamed), its calls, results and
/// questions, each line under `[child <id> · <mode>]`.
fn child_text(item: &DisplayItem, mode: &str, child: &str, style: &Style) -> String {
    let body = match item {
        DisplayItem::MessageChunk { .. } => return String::new(),
        DisplayItem::MessageDone { text, .. } if !text.trim().is_empty() => {
            format!("{}\n", visible(text.trim_end()))
        }
        other => item_text(other, style),
    };
    tagged(&body, mode, child, style)
}

/// A denial in one line: `✗ denied <tool>: <why>`.
fn denied_text(tool: Option<&str>, feedback: Option<&str>, style: &Style) -> String {
    format!(
        "{}\n",
        style.paint(
            "33",
            &format!(
                "  ✗ denied{}{}",
                tool.map(|t| format!(" {}", visible_line(t)))
                    .unwrap_or_default(),
                feedback
                    .map(|f| format!(": {}", visible_line(f)))
                    .unwrap_or_default()
            )
        )
    )
}

/// Each non-empty line of `body` under `[child <id> · <mode>]`.
fn tagged(body: &str, mode: &str, child: &str, style: &Style) -> String {
    let tag = style.paint(
        "35",
        &format!("[child {} · {}]", short_id(child), visible_line(mode)),
    );
    body.lines()
        .filter(|l| !l.is_empty())
        .map(|l| format!("{tag} {l}\n"))
        .collect()
}

/// A task's cost for people: dollars when a price is known; "no price
/// known" when tokens were spent at no price (a model without one in the
/// config); nothing when nothing was spent.
pub fn cost_text(cost: f64, tokens: u64) -> Option<String> {
    if cost > 0.0 {
        Some(if cost < 0.0001 {
            "<$0.0001".to_owned()
        } else {
            format!("${cost:.4}")
        })
    } else if tokens > 0 {
        Some("no price known".to_owned())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A display that fell behind prints the final message whole, made
    /// visible; one that kept up prints nothing extra.
    #[test]
    fn a_lagging_display_prints_the_final_message_whole() {
        let final_msg = TaskEvent::MessageFinal {
            text: "Hello \x1b[2Jworld".into(),
        };
        let mut kept_up = CatchUp::default();
        assert_eq!(kept_up.on_event(&final_msg), None);
        let mut behind = CatchUp::default();
        behind.lagged();
        assert_eq!(
            behind.on_event(&TaskEvent::MessagePartial {
                delta: "Hel".into()
            }),
            None
        );
        let whole = behind.on_event(&final_msg).expect("printed whole");
        assert!(
            whole.contains("Hello") && whole.contains("world"),
            "{whole}"
        );
        assert!(!whole.contains('\x1b'), "{whole:?}");
        // Caught up: the next final message is rendered as usual.
        assert_eq!(behind.on_event(&final_msg), None);
    }

    /// Through a real channel: a receiver that fell behind gets `Lagged`
    /// and then the final message, which the catch-up prints.
    #[tokio::test]
    async fn a_lagged_receiver_still_gets_the_final_text() {
        let (tx, mut rx) = tokio::sync::broadcast::channel::<TaskEvent>(4);
        for i in 0..20 {
            let _ = tx.send(TaskEvent::MessagePartial {
                delta: format!("part {i} "),
            });
        }
        let _ = tx.send(TaskEvent::MessageFinal {
            text: "the whole answer".into(),
        });
        drop(tx);
        let mut catch_up = CatchUp::default();
        let mut printed = Vec::new();
        loop {
            match rx.recv().await {
                Ok(ev) => printed.extend(catch_up.on_event(&ev)),
                Err(RecvError::Lagged(_)) => catch_up.lagged(),
                Err(RecvError::Closed) => break,
            }
        }
        assert_eq!(printed, vec!["\nthe whole answer\n".to_owned()]);
    }
    use roost_core::tools::{ErrorCode, ToolError};

    const EVIL: &str = "a\x1b[2J\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\u{9b}31m\r\x08\x7f\u{202e}z";

    fn events() -> Vec<TaskEvent> {
        vec![
            TaskEvent::MessagePartial { delta: EVIL.into() },
            TaskEvent::ToolCallRequested {
                id: "c1".into(),
                tool: EVIL.into(),
                args: serde_json::json!({ "path": EVIL, EVIL: 1 }),
            },
            TaskEvent::ToolCallDenied {
                id: "c1".into(),
                feedback: Some(EVIL.into()),
            },
            TaskEvent::HookDecided {
                id: "c1".into(),
                hook: EVIL.into(),
                decision: roost_protocol::HookVerdict::Deny,
                detail: EVIL.into(),
            },
            TaskEvent::ToolCallResult {
                id: "c1".into(),
                tool: "read_file".into(),
                result: Ok(format!("{EVIL}\n{EVIL}")),
                diff: Some(format!(
                    "--- a\n+++ b\n@@ -1 +1 @@\n-{EVIL}\n+{EVIL}\n {EVIL}\n"
                )),
            },
            TaskEvent::ToolCallResult {
                id: "c2".into(),
                tool: "read_file".into(),
                result: Err(ToolError::new(ErrorCode::NotFound, EVIL)),
                diff: None,
            },
            TaskEvent::Retrying {
                attempt: 1,
                delay_ms: 10,
                reason: EVIL.into(),
            },
            TaskEvent::TodosUpdated {
                markdown: EVIL.into(),
            },
            TaskEvent::SkillLoaded {
                skill: EVIL.into(),
                path: Some(EVIL.into()),
                origin: EVIL.into(),
            },
            TaskEvent::AskRequired {
                ask_id: EVIL.into(),
                text: EVIL.into(),
                ask: Ask::Completion {
                    result: EVIL.into(),
                },
            },
            TaskEvent::Aborted {
                reason: EVIL.into(),
            },
            TaskEvent::Failed { error: EVIL.into() },
        ]
    }

    /// What the text format prints for `ev` alone.
    fn event_text(ev: &TaskEvent, style: &Style) -> String {
        let mut display = Display::default();
        display
            .items(&Envelope {
                task_id: "t1".into(),
                seq: None,
                event: ev.clone(),
            })
            .iter()
            .map(|item| item_text(item, style))
            .collect()
    }

    /// No control character but `\n`, and no bidi control.
    fn assert_inert(s: &str) {
        assert!(
            !s.chars()
                .any(|c| (c.is_control() && c != '\n') || matches!(c, '\u{202a}'..='\u{202e}')),
            "{s:?}"
        );
    }

    #[test]
    fn untrusted_text_is_shown_not_interpreted() {
        let style = Style { color: false };
        for ev in events() {
            let text = event_text(&ev, &style);
            assert!(!text.is_empty(), "{ev:?}");
            assert_inert(&text);
            assert!(text.contains("\\e[2J"), "{ev:?}: {text}");
        }
    }

    #[test]
    fn only_roosts_own_colour_codes_reach_the_terminal() {
        let style = Style { color: true };
        let colour = regex::Regex::new(r"\x1b\[[0-9;]*m").expect("regex");
        for ev in events() {
            let text = event_text(&ev, &style);
            assert_inert(&colour.replace_all(&text, ""));
            assert!(text.contains("\\e[2J"), "{ev:?}: {text}");
        }
        let painted = event_text(
            &TaskEvent::Failed {
                error: "boom".into(),
            },
            &style,
        );
        assert_eq!(painted, "\x1b[31mfailed: boom\x1b[0m\n");
    }

    #[test]
    fn plain_text_is_unchanged() {
        let style = Style { color: false };
        let ev = TaskEvent::ToolCallResult {
            id: "c1".into(),
            tool: "read_file".into(),
            result: Ok("1 | héllo\t🦀".into()),
            diff: Some("@@ -1 +1 @@\n-old\n+new".into()),
        };
        assert_eq!(
            event_text(&ev, &style),
            "  1 | héllo\t🦀\n  @@ -1 +1 @@\n  -old\n  +new\n"
        );
        let ev = TaskEvent::MessagePartial {
            delta: "Hi,\nthere".into(),
        };
        assert_eq!(event_text(&ev, &style), "Hi,\nthere");
    }
}
