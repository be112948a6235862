//! The person at the terminal: approvals, follow-up answers, completion
//! reviews and guidance, asked on a TTY. Without a TTY nothing can be asked:
//! calls the policy does not cover are denied with a clear message, results
//! are accepted, and questions go unanswered.

use super::line::notice;
use std::io::{BufRead, IsTerminal, Write};

use super::render::{painted_diff, short_args};
use super::sanitize::{visible, visible_line};
use roost_core::task::{Answers, Approval, CompletionAnswer};
use roost_core::tools::ToolGroup;

/// Asks on the terminal when there is one.
pub struct Terminal {
    tty: bool,
    assume_yes: bool,
}

impl Terminal {
    /// Detect whether stdin is a terminal.
    pub fn detect() -> Self {
        Self {
            tty: std::io::stdin().is_terminal(),
            assume_yes: false,
        }
    }

    /// `--yes`: no questions at all; the result is accepted too.
    pub fn assume_yes(mut self, yes: bool) -> Self {
        self.assume_yes = yes;
        self
    }
}

/// Print `prompt` on stderr and read one line from stdin (off the runtime).
async fn ask_line(prompt: String) -> Option<String> {
    tokio::task::spawn_blocking(move || {
        super::line::before_stderr();
        let mut err = std::io::stderr();
        let _ = write!(err, "{prompt}");
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
        }
    })
    .await
    .ok()
    .flatten()
}

/// One reading of a yes/no answer for every kind of question: `y`/`yes`
/// approves; an empty line, `n`/`no` or end of input denies; anything else
/// denies with that text as feedback for the model.
fn yes_no(answer: Option<&str>) -> Approval {
    match answer.map(str::trim) {
        Some(a) if a.eq_ignore_ascii_case("y") || a.eq_ignore_ascii_case("yes") => {
            Approval::Approve
        }
        Some(a) if a.is_empty() || a.eq_ignore_ascii_case("n") || a.eq_ignore_ascii_case("no") => {
            Approval::Deny { feedback: None }
        }
        None => Approval::Deny { feedback: None },
        Some(f) => Approval::Deny {
            feedback: Some(f.to_owned()),
        },
    }
}

/// The terminal's answer to each kind of question.
#[async_trait::async_trait]
impl Answers for Terminal {
    async fn approve(
        &self,
        tool: &str,
        group: ToolGroup,
        args: &serde_json::Value,
        preview: Option<&str>,
    ) -> Approval {
        let shown_tool = visible_line(tool);
        if !self.tty {
            notice!(
                "denied {shown_tool}: no terminal to ask, and the approval policy does not cover the `{group}` group (use --yes or --approve {group})"
            );
            return Approval::Deny {
                feedback: Some(format!(
                    "Denied automatically: running without a terminal and the approval policy does not allow `{group}` tools."
                )),
            };
        }
        // An edit shows the change it would make; other calls their arguments.
        let question = match preview {
            Some(p) => {
                let color = std::io::stderr().is_terminal();
                let lines: Vec<String> = painted_diff(p, color)
                    .into_iter()
                    .map(|l| format!("  {l}"))
                    .collect();
                format!(
                    "\n? Run {shown_tool}? It would make this change:\n{}\n  [y]es / [N]o / or type feedback: ",
                    lines.join("\n")
                )
            }
            None => format!(
                "\n? Run {shown_tool} {}  [y]es / [N]o / or type feedback: ",
                short_args(args)
            ),
        };
        let answer = ask_line(question).await;
        yes_no(answer.as_deref())
    }

    async fn scope_violation(&self, intent: &str, tool: &str, path: &str) -> Approval {
        let (intent, tool, path) = (visible_line(intent), visible_line(tool), visible_line(path));
        if !self.tty {
            notice!(
                "denied {tool} on {path}: outside the owned scope of {intent}, and no terminal to ask"
            );
            return Approval::Deny { feedback: None };
        }
        let q = format!(
            "\n? {tool} writes {path}, outside the owned scope of {intent}: approve once? [y]es / [N]o / feedback: "
        );
        yes_no(ask_line(q).await.as_deref())
    }

    async fn hook_question(&self, hook: &str, tool: &str, question: &str) -> Approval {
        let (shown_hook, tool, question) = (
            visible_line(hook),
            visible_line(tool),
            visible_line(question),
        );
        if !self.tty {
            notice!(
                "denied {tool}: hook `{shown_hook}` asks \"{question}\", and no terminal to ask"
            );
            return Approval::Deny {
                feedback: Some(format!(
                    "Denied automatically: hook `{hook}` needs the user's approval and nobody can be asked."
                )),
            };
        }
        let q = format!("\n? [{shown_hook}] {question} [y]es / [N]o / feedback: ");
        yes_no(ask_line(q).await.as_deref())
    }

    async fn followup(&self, question: &str, suggestions: &[String]) -> Option<String> {
        if !self.tty {
            return None;
        }
        let mut prompt = format!("\n? {}\n", visible(question));
        for (i, s) in suggestions.iter().enumerate() {
            prompt.push_str(&format!("  {}. {}\n", i + 1, visible_line(s)));
        }
        prompt.push_str("> ");
        let line = ask_line(prompt).await?;
        let pick = line
            .trim()
            .parse::<usize>()
            .ok()
            .and_then(|n| suggestions.get(n.wrapping_sub(1)));
        Some(pick.cloned().unwrap_or(line))
    }

    async fn completion(&self, result: &str) -> CompletionAnswer {
        if !self.tty || self.assume_yes {
            return CompletionAnswer::Accept;
        }
        let _ = result;
        match ask_line(
            "\n? Accept the result? [Enter] accept, n: not yet, or type feedback: ".into(),
        )
        .await
        {
            Some(l) if l.trim().is_empty() || matches!(l.trim(), "y" | "yes") => {
                CompletionAnswer::Accept
            }
            Some(l) if matches!(l.trim(), "n" | "no") => CompletionAnswer::Declined,
            Some(l) => CompletionAnswer::Feedback(l),
            // End of input is nobody's acceptance.
            None => CompletionAnswer::Declined,
        }
    }

    async fn guidance(&self, reason: &str) -> Option<String> {
        let reason = visible(reason);
        if !self.tty {
            notice!("{reason} No terminal to ask: stopping.");
            return None;
        }
        ask_line(format!(
            "\n! {reason}\n? Guidance to continue (empty to stop): "
        ))
        .await
        .filter(|l| !l.trim().is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_answer_denies_every_kind_of_question() {
        assert_eq!(yes_no(Some("")), Approval::Deny { feedback: None });
        assert_eq!(yes_no(Some("  ")), Approval::Deny { feedback: None });
        assert_eq!(yes_no(None), Approval::Deny { feedback: None });
        assert_eq!(yes_no(Some("N")), Approval::Deny { feedback: None });
        assert_eq!(yes_no(Some("Yes")), Approval::Approve);
        assert_eq!(yes_no(Some(" y ")), Approval::Approve);
        assert_eq!(
            yes_no(Some("use the other file")),
            Approval::Deny {
                feedback: Some("use the other file".into())
            }
        );
    }
}
