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
        if let Err(e) = self.session().answer(task, ask_id, answer) {
            tracing::warn!("answer not taken: {e}");
        }
    }

    /// After the display fell behind: answer the open questions it may
    /// have missed (each question is put once).
    async fn answer_missed(&self, task: &str, answered: &mut HashSet<String>) {
        let Ok(open) = self.session().asks(task, false) else {
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
    let mut previewed = HashSet::new();
    // What the display already said about a call: the output a command
    // streamed, and a denial (its error result repeats it for the model).
    let mut streamed: HashMap<String, String> = HashMap::new();
    let mut denied: HashSet<String> = HashSet::new();
    // Each call's tool, to name it where an event gives only the call id.
    let mut called: HashMap<String, String> = HashMap::new();
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
            // A change the person approved from its preview is not shown
            // a second time with the result.
            if let TaskEvent::AskRequired {
                ask:
                    Ask::Tool {
                        preview: Some(p), ..
                    }
                    | Ask::Scope {
                        preview: Some(p), ..
                    },
                ..
            } = ev
            {
                previewed.insert(p.clone());
            }
            match ev {
                TaskEvent::CommandOutput { id, chunk } => {
                    keep_tail(streamed.entry(id.clone()).or_default(), chunk);
                }
                TaskEvent::ToolCallDenied { id, .. } => {
                    denied.insert(id.clone());
                }
                TaskEvent::ToolCallRequested { id, tool, .. } => {
                    called.insert(id.clone(), tool.clone());
                }
                _ => {}
            }
            let result_seen = match ev {
                TaskEvent::ToolCallResult { id, result, .. } => {
                    let was_denied = denied.remove(id);
                    let output = streamed.remove(id);
                    if was_denied && result.is_err() {
                        Some(None)
                    } else {
                        output.map(Some)
                    }
                }
                _ => None,
            };
            let mut text = match (child, ev, result_seen) {
                // The denial was shown; its error result is for the model.
                (_, _, Some(None)) => String::new(),
                // A command's output was shown as it came: the rest of its
                // result (exit status, files changed), whole.
                (
                    child,
                    TaskEvent::ToolCallResult {
                        result: Ok(text),
                        diff,
                        ..
                    },
                    Some(Some(output)),
                ) => {
                    let rest = after_output(text, &output);
                    let mut shown = String::new();
                    for l in rest.lines().filter(|l| !l.trim().is_empty()) {
                        shown.push_str(&format!("  {}\n", style.paint("2", &visible_line(l))));
                    }
                    if let Some(d) = diff {
                        for l in painted_diff(d, style.color) {
                            shown.push_str(&format!("  {l}\n"));
                        }
                    }
                    match child {
                        Some(mode) => tagged(&shown, mode, &envelope.task_id, &style),
                        None => shown,
                    }
                }
                (child, TaskEvent::ToolCallDenied { id, feedback }, _) => {
                    let line = denied_text(
                        called.get(id).map(String::as_str),
                        feedback.as_deref(),
                        &style,
                    );
                    match child {
                        Some(mode) => tagged(&line, mode, &envelope.task_id, &style),
                        None => line,
                    }
                }
                (Some(mode), _, _) => child_text(ev, mode, &envelope.task_id, &style),
                (
                    None,
                    TaskEvent::ToolCallResult {
                        id,
                        tool,
                        result,
                        diff: Some(d),
                    },
                    _,
                ) if previewed.remove(d) => text_of(
                    &TaskEvent::ToolCallResult {
                        id: id.clone(),
                        tool: tool.clone(),
                        result: result.clone(),
                        diff: None,
                    },
                    &style,
                ),
                (None, _, _) => text_of(ev, &style),
            };
            // What is not the model's streamed text starts on a line of
            // its own.
            if !text.is_empty()
                && !matches!(
                    ev,
                    TaskEvent::MessagePartial { .. } | TaskEvent::CommandOutput { .. }
                )
                && super::line::stdout_mid_line()
            {
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

/// What the text format prints for one event (empty for nothing). Text from
/// the model, tools, hooks and the file system is made visible with
/// [`visible`] / [`visible_line`] before it is painted, so it cannot drive
/// the terminal; only Roost's own colour codes are escape sequences.
fn text_of(ev: &TaskEvent, style: &Style) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = match ev {
        // The header (with the endpoint) is printed by the driver.
        TaskEvent::TaskCreated { .. } => Ok(()),
        TaskEvent::MessagePartial { delta } => write!(out, "{}", visible(delta)),
        TaskEvent::MessageFinal { text } => {
            if text.is_empty() {
                Ok(())
            } else {
                writeln!(out)
            }
        }
        TaskEvent::ToolCallRequested { tool, args, .. } => writeln!(
            out,
            "{} {}",
            style.paint("1;36", &format!("⏺ {}", visible_line(tool))),
            style.paint("2", &short_args(args))
        ),
        TaskEvent::ToolCallDenied { feedback, .. } => {
            write!(out, "{}", denied_text(None, feedback.as_deref(), style))
        }
        TaskEvent::HookDecided {
            hook,
            decision,
            detail,
            ..
        } => writeln!(
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
        ),
        // The todo list was just shown by `TodosUpdated`: not twice.
        TaskEvent::ToolCallResult {
            tool,
            result: Ok(_),
            ..
        } if tool == roost_core::task::native::UPDATE_TODO_LIST => Ok(()),
        TaskEvent::ToolCallResult { result, diff, .. } => {
            match result {
                Ok(text) => {
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
                Err(e) => {
                    let _ = writeln!(
                        out,
                        "  {}",
                        style.paint(
                            "31",
                            &format!("error [{}]: {}", e.code, visible(&e.message))
                        )
                    );
                }
            }
            if let Some(d) = diff {
                for l in painted_diff(d, style.color) {
                    let _ = writeln!(out, "  {l}");
                }
            }
            Ok(())
        }
        TaskEvent::CheckpointSaved { checkpoint } => writeln!(
            out,
            "{}",
            style.paint(
                "2",
                &format!("◆ checkpoint {} (turn {})", checkpoint.id, checkpoint.turn)
            )
        ),
        // A running command's output, as it comes.
        TaskEvent::CommandOutput { chunk, .. } => {
            write!(out, "{}", style.paint("2", &visible(chunk)))
        }
        TaskEvent::Retrying {
            attempt,
            delay_ms,
            reason,
        } => writeln!(
            out,
            "{}",
            style.paint(
                "33",
                &format!(
                    "  retrying (attempt {attempt} failed: {}) in {delay_ms} ms",
                    visible_line(reason)
                )
            )
        ),
        TaskEvent::SkillLoaded {
            skill,
            path,
            origin,
        } => writeln!(
            out,
            "{}",
            style.paint(
                "36",
                &format!(
                    "  ✦ skill {} ({}){}",
                    visible_line(skill),
                    visible_line(origin),
                    path.as_deref()
                        .map(|p| format!(": {}", visible_line(p)))
                        .unwrap_or_default()
                )
            )
        ),
        TaskEvent::TodosUpdated { markdown } => writeln!(
            out,
            "{}\n{}",
            style.paint("1", "Todo list:"),
            visible(markdown)
        ),
        TaskEvent::AskRequired {
            ask: Ask::Completion { result },
            ..
        } => writeln!(
            out,
            "\n{}\n{}",
            style.paint("1;32", "✔ Result:"),
            visible(result)
        ),
        TaskEvent::Completed { usage, cost, .. } => writeln!(
            out,
            "{}",
            style.paint(
                "2",
                &format!(
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
                )
            )
        ),
        // A problem the task met that did not stop it (a skill skipped, an
        // MCP server unusable): one line each.
        TaskEvent::Warning { message } => writeln!(
            out,
            "{}",
            style.paint("33", &format!("warning: {}", visible_line(message)))
        ),
        TaskEvent::Aborted { reason } => writeln!(
            out,
            "{}",
            style.paint("33", &format!("aborted: {}", visible(reason)))
        ),
        TaskEvent::Failed { error } => writeln!(
            out,
            "{}",
            style.paint("31", &format!("failed: {}", visible(error)))
        ),
        TaskEvent::Paused { reason } => {
            writeln!(out, "{}", style.paint("33", &visible(reason)))
        }
        TaskEvent::SubtaskStarted {
            child_id,
            mode,
            message,
        } => writeln!(
            out,
            "{} {}",
            style.paint(
                "1;35",
                &format!("⤷ subtask {} · {}", short_id(child_id), visible_line(mode))
            ),
            style.paint("2", &visible_line(first_line(message)))
        ),
        TaskEvent::SubtaskFinished {
            child_id,
            status,
            result,
            ..
        } => writeln!(
            out,
            "{} {}",
            style.paint(
                "1;35",
                &format!("⤶ subtask {} {status}:", short_id(child_id))
            ),
            visible_line(first_line(result))
        ),
        TaskEvent::GroupStarted {
            group_id,
            strategy,
            children,
        } => writeln!(
            out,
            "{}",
            style.paint(
                "1;35",
                &format!(
                    "⤷ parallel group {} · {children} subtasks · {}",
                    short_id(group_id),
                    strategy.as_str()
                )
            )
        ),
        TaskEvent::GroupFinished {
            group_id,
            status,
            cost,
            ..
        } => writeln!(
            out,
            "{}",
            style.paint(
                "1;35",
                &format!(
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
                )
            )
        ),
        _ => Ok(()),
    };
    out
}

/// A text's first line.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// What the text format prints for an event of a subtask the driven task
/// follows: its replies whole (not streamed), its calls, results and
/// questions, each line under `[child <id> · <mode>]`.
fn child_text(ev: &TaskEvent, mode: &str, child: &str, style: &Style) -> String {
    let body = match ev {
        TaskEvent::MessagePartial { .. }
        | TaskEvent::ToolCallPartial { .. }
        | TaskEvent::RequestStarted { .. }
        | TaskEvent::TaskCreated { .. }
        | TaskEvent::TaskStarted { .. } => return String::new(),
        TaskEvent::MessageFinal { text } if !text.trim().is_empty() => {
            format!("{}\n", visible(text.trim_end()))
        }
        other => text_of(other, style),
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

/// Most of a command's streamed output kept to find where its result
/// goes on: a long output keeps its end (the result ends the output with
/// it), so the display's memory stays bounded.
const STREAMED_KEPT: usize = 64 * 1024;

/// Append `chunk` to `kept`, dropping the oldest text beyond
/// [`STREAMED_KEPT`] bytes.
fn keep_tail(kept: &mut String, chunk: &str) {
    kept.push_str(chunk);
    if kept.len() > STREAMED_KEPT {
        let mut from = kept.len() - STREAMED_KEPT / 4;
        while !kept.is_char_boundary(from) {
            from += 1;
        }
        kept.drain(..from);
    }
}

/// What a command's result says beyond the `output` already shown as it
/// streamed: the result holds the output whole, or (a long one) its head
/// and tail; what follows it is the exit status and the files changed.
fn after_output<'a>(result: &'a str, output: &str) -> &'a str {
    let out = output.trim_end();
    if out.is_empty() {
        return result;
    }
    if let Some(at) = result.find(out) {
        return result.get(at + out.len()..).unwrap_or_default();
    }
    // Cut in the middle: the result ends the output with its last line.
    let Some(last) = out.lines().last() else {
        return result;
    };
    let mut after = None;
    let mut at = 0;
    for line in result.split_inclusive('\n') {
        at += line.len();
        if line.trim_end_matches(['\n', '\r']) == last {
            after = Some(at);
        }
    }
    after.and_then(|a| result.get(a..)).unwrap_or(result)
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

    /// What follows a command's output in its result, whether the result
    /// holds the output whole or only its head and tail.
    #[test]
    fn the_rest_of_a_result_follows_its_output() {
        let result = "$ seq 3\n1\n2\n3\n[exit code 0]\nFiles changed (1):\n  created a\n";
        assert_eq!(
            after_output(result, "1\n2\n3\n"),
            "\n[exit code 0]\nFiles changed (1):\n  created a\n"
        );
        let cut = "$ seq 9\n1\n[… 5 lines …]\n9\n[exit code 0]\n";
        assert_eq!(
            after_output(cut, "1\n2\n3\n4\n5\n6\n7\n8\n9\n"),
            "[exit code 0]\n"
        );
        assert_eq!(after_output("x\n", ""), "x\n");
        let mut kept = String::new();
        for _ in 0..100 {
            keep_tail(&mut kept, &"é".repeat(1000));
        }
        assert!(kept.len() <= STREAMED_KEPT && kept.ends_with('é'));
    }

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
            let text = text_of(&ev, &style);
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
            let text = text_of(&ev, &style);
            assert_inert(&colour.replace_all(&text, ""));
            assert!(text.contains("\\e[2J"), "{ev:?}: {text}");
        }
        let painted = text_of(
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
            text_of(&ev, &style),
            "  1 | héllo\t🦀\n  @@ -1 +1 @@\n  -old\n  +new\n"
        );
        let ev = TaskEvent::MessagePartial {
            delta: "Hi,\nthere".into(),
        };
        assert_eq!(text_of(&ev, &style), "Hi,\nthere");
    }
}
