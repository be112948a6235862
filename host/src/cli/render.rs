//! Shows a task's events: streamed text, tool calls with short arguments,
//! coloured diffs, a spinner while the model thinks; or NDJSON for scripts.

use std::io::{IsTerminal, Write};

use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::oneshot;

use super::interact::short_args;
use crate::events::TaskEvent;

const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// For people.
    Text,
    /// One JSON object per line.
    Json,
}

struct Style {
    color: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    }
}

/// Print events until `stop` fires (then print what is still queued) or the
/// channel closes.
pub async fn render(mut rx: Receiver<TaskEvent>, format: Format, mut stop: oneshot::Receiver<()>) {
    let style = Style {
        color: std::io::stdout().is_terminal(),
    };
    let spin_ok = std::io::stderr().is_terminal() && format == Format::Text;
    let mut spinning = false;
    let mut frame = 0usize;
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
    let mut stopping = false;
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
            _ = tick.tick(), if spinning => {
                frame += 1;
                eprint!("\r{} thinking…", SPINNER[frame % SPINNER.len()]);
                continue;
            }
            }
        };
        let ev = match ev {
            Ok(ev) => ev,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!("display fell {n} events behind");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        if spinning && !matches!(ev, TaskEvent::Retrying { .. }) {
            eprint!("\r\x1b[2K");
            spinning = false;
        }
        if format == Format::Json {
            if let Ok(line) = serde_json::to_string(&ev) {
                println!("{line}");
            }
            continue;
        }
        let mut out = std::io::stdout().lock();
        let _ = match &ev {
            TaskEvent::TaskCreated {
                task_id,
                mode,
                workspace,
            } => {
                writeln!(
                    out,
                    "{}",
                    style.paint("2", &format!("task {task_id} · mode {mode} · {workspace}"))
                )
            }
            TaskEvent::RequestStarted { .. } => {
                spinning = spin_ok;
                Ok(())
            }
            TaskEvent::MessagePartial { delta } => write!(out, "{delta}"),
            TaskEvent::MessageFinal { text } => {
                if text.is_empty() {
                    Ok(())
                } else {
                    writeln!(out)
                }
            }
            TaskEvent::ToolCallRequested { tool, args, .. } => {
                writeln!(
                    out,
                    "{} {}",
                    style.paint("1;36", &format!("⏺ {tool}")),
                    style.paint("2", &short_args(args))
                )
            }
            TaskEvent::ToolCallDenied { feedback, .. } => {
                writeln!(
                    out,
                    "{}",
                    style.paint(
                        "33",
                        &format!(
                            "  ✗ denied{}",
                            feedback
                                .as_deref()
                                .map(|f| format!(": {f}"))
                                .unwrap_or_default()
                        )
                    )
                )
            }
            TaskEvent::HookDecided {
                hook,
                decision,
                detail,
                ..
            } => writeln!(
                out,
                "{}",
                style.paint("35", &format!("  ⚑ hook {hook}: {decision}: {detail}"))
            ),
            TaskEvent::ToolCallResult { result, diff, .. } => {
                match result {
                    Ok(text) => {
                        let lines: Vec<&str> = text.lines().collect();
                        for l in lines.iter().take(6) {
                            let _ = writeln!(out, "  {}", style.paint("2", l));
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
                            style.paint("31", &format!("error [{}]: {}", e.code, e.message))
                        );
                    }
                }
                if let Some(d) = diff {
                    for l in d.lines() {
                        let painted = if l.starts_with('+') && !l.starts_with("+++") {
                            style.paint("32", l)
                        } else if l.starts_with('-') && !l.starts_with("---") {
                            style.paint("31", l)
                        } else if l.starts_with("@@") {
                            style.paint("36", l)
                        } else {
                            l.to_owned()
                        };
                        let _ = writeln!(out, "  {painted}");
                    }
                }
                Ok(())
            }
            TaskEvent::Retrying {
                attempt,
                delay_ms,
                reason,
            } => {
                writeln!(
                    out,
                    "{}",
                    style.paint(
                        "33",
                        &format!(
                            "  retrying (attempt {attempt} failed: {reason}) in {delay_ms} ms"
                        )
                    )
                )
            }
            TaskEvent::TodosUpdated { markdown } => {
                writeln!(out, "{}\n{markdown}", style.paint("1", "Todo list:"))
            }
            TaskEvent::AskRequired { kind, text } if kind == "completion_result" => {
                writeln!(out, "\n{}\n{text}", style.paint("1;32", "✔ Result:"))
            }
            TaskEvent::Completed { usage, cost, .. } => writeln!(
                out,
                "{}",
                style.paint(
                    "2",
                    &format!(
                        "completed · tokens in {} out {} (cache read {} write {}) · ${cost:.4}",
                        usage.input_tokens,
                        usage.output_tokens,
                        usage.cache_read_tokens,
                        usage.cache_write_tokens
                    )
                )
            ),
            TaskEvent::Aborted { reason } => {
                writeln!(out, "{}", style.paint("33", &format!("aborted: {reason}")))
            }
            TaskEvent::Failed { error } => {
                writeln!(out, "{}", style.paint("31", &format!("failed: {error}")))
            }
            _ => Ok(()),
        };
        let _ = out.flush();
    }
}
