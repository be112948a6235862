//! The person at the terminal: approvals, follow-up answers, completion
//! reviews and guidance. The subject of each question (the call, its
//! diff, the result) is printed first by the display; the question comes
//! after it, on its own line. Without a terminal nothing can be asked:
//! calls the policy does not cover are denied with a clear message,
//! results are accepted *without review* (and said to be), and questions
//! go unanswered.

use super::line::notice;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::sync::Arc;

use super::render::{painted_diff, short_args};
use super::sanitize::{visible, visible_line};
use roost_core::engine::Approvals;
use roost_core::task::{Answers, Approval, CompletionAnswer};
use roost_core::tools::ToolGroup;
use roost_protocol::Grant;

/// One line of input, read off the runtime: a plain read of stdin for
/// one-shot runs, the line editor in a session.
pub trait LineSource: Send + Sync {
    /// Show `prompt` and read a line; `None` at end of input (or when the
    /// person interrupted the question).
    fn read_line(&self, prompt: &str) -> Option<String>;
}

/// Standard input, read a line at a time (its prompt on stderr).
pub struct Stdin;

impl LineSource for Stdin {
    fn read_line(&self, prompt: &str) -> Option<String> {
        super::line::before_stderr();
        super::line::to_stderr(prompt);
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\n', '\r']).to_owned()),
        }
    }
}

/// Asks on the terminal when there is one.
pub struct Terminal {
    tty: bool,
    assume_yes: bool,
    input: Arc<dyn LineSource>,
    /// Where "always allow" answers are saved, and for which workspace.
    remember: Option<(Approvals, PathBuf)>,
}

impl Terminal {
    /// Detect whether stdin is a terminal.
    pub fn detect() -> Self {
        Self {
            tty: std::io::stdin().is_terminal(),
            assume_yes: false,
            input: Arc::new(Stdin),
            remember: None,
        }
    }

    /// `--yes`: no questions at all; the result is accepted (by policy,
    /// and said so) too.
    pub fn assume_yes(mut self, yes: bool) -> Self {
        self.assume_yes = yes;
        self
    }

    /// Read answers from `input` (a session's line editor).
    pub fn input(mut self, input: Arc<dyn LineSource>) -> Self {
        self.input = input;
        self
    }

    /// Offer "always allow", saved for `workspace` in `approvals`.
    pub fn remember(mut self, approvals: Approvals, workspace: PathBuf) -> Self {
        self.remember = Some((approvals, workspace));
        self
    }

    async fn ask_line(&self, prompt: String) -> Option<String> {
        let input = Arc::clone(&self.input);
        tokio::task::spawn_blocking(move || input.read_line(&prompt))
            .await
            .ok()
            .flatten()
    }

    /// Save `grant` for the workspace (a failure is said, and the grant
    /// still holds for this task).
    fn save(&self, grant: &Grant) {
        let Some((approvals, workspace)) = &self.remember else {
            return;
        };
        let shown = visible_line(&grant.describe()).into_owned();
        match approvals.save(workspace, grant) {
            Ok(()) => notice!(
                "  always allowed here from now on: {shown} (`roost approvals revoke` takes it back)"
            ),
            Err(e) => notice!(
                "  allowed for this task, but not saved: {}",
                visible_line(&e.to_string())
            ),
        }
    }
}

/// What an approval answer means.
#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Once(Approval),
    AlwaysTool,
    AlwaysGroup,
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

/// A tool approval's answer: [`yes_no`], plus `a`/`always` (this tool)
/// and `g`/`group` (its whole group) when "always" is offered.
fn tool_reply(answer: Option<&str>, always: bool) -> Reply {
    match answer.map(str::trim) {
        Some(a) if always && (a.eq_ignore_ascii_case("a") || a.eq_ignore_ascii_case("always")) => {
            Reply::AlwaysTool
        }
        Some(a) if always && (a.eq_ignore_ascii_case("g") || a.eq_ignore_ascii_case("group")) => {
            Reply::AlwaysGroup
        }
        other => Reply::Once(yes_no(other)),
    }
}

/// `diff` indented, painted when stderr is a terminal.
fn shown_diff(diff: &str) -> String {
    let color = std::io::stderr().is_terminal();
    painted_diff(diff, color)
        .into_iter()
        .map(|l| format!("  {l}\n"))
        .collect()
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
        // The subject first: an edit's change (the call itself was shown
        // as it was requested), then the question on its own line.
        let subject = match preview {
            Some(p) => shown_diff(p),
            None => format!("  {}\n", short_args(args)),
        };
        let always = self.remember.is_some();
        let choices = if always {
            format!(
                "[y]es / [a]lways {shown_tool} here / [g]roup: always `{group}` tools here / [N]o / or type feedback"
            )
        } else {
            "[y]es / [N]o / or type feedback".to_owned()
        };
        let answer = self
            .ask_line(format!("{subject}? Run {shown_tool}? {choices}: "))
            .await;
        match tool_reply(answer.as_deref(), always) {
            Reply::Once(a) => a,
            Reply::AlwaysTool => {
                let grant = Grant::Tool(tool.to_owned());
                self.save(&grant);
                Approval::Always(grant)
            }
            Reply::AlwaysGroup => {
                let grant = Grant::Group(group);
                self.save(&grant);
                Approval::Always(grant)
            }
        }
    }

    async fn scope_violation(
        &self,
        intent: &str,
        tool: &str,
        path: &str,
        preview: Option<&str>,
    ) -> Approval {
        let (intent, tool, path) = (visible_line(intent), visible_line(tool), visible_line(path));
        if !self.tty {
            notice!(
                "denied {tool} on {path}: outside the owned scope of {intent}, and no terminal to ask"
            );
            return Approval::Deny { feedback: None };
        }
        let subject = preview.map(shown_diff).unwrap_or_default();
        let q = format!(
            "{subject}? {tool} writes {path}, outside the owned scope of {intent}: approve once? [y]es / [N]o / feedback: "
        );
        yes_no(self.ask_line(q).await.as_deref())
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
        let q = format!("? [{shown_hook}] {question} [y]es / [N]o / feedback: ");
        yes_no(self.ask_line(q).await.as_deref())
    }

    async fn followup(&self, question: &str, suggestions: &[String]) -> Option<String> {
        if !self.tty {
            return None;
        }
        let mut prompt = format!("? {}\n", visible(question));
        for (i, s) in suggestions.iter().enumerate() {
            prompt.push_str(&format!("  {}. {}\n", i + 1, visible_line(s)));
        }
        prompt.push_str("> ");
        let line = self.ask_line(prompt).await?;
        let pick = line
            .trim()
            .parse::<usize>()
            .ok()
            .and_then(|n| suggestions.get(n.wrapping_sub(1)));
        Some(pick.cloned().unwrap_or(line))
    }

    async fn completion(&self, _result: &str) -> CompletionAnswer {
        if self.assume_yes {
            return CompletionAnswer::Unreviewed("accepted by --yes".to_owned());
        }
        if !self.tty {
            notice!("the result was accepted without review: no terminal to ask");
            return CompletionAnswer::Unreviewed("no terminal to ask".to_owned());
        }
        match self
            .ask_line("? Accept the result? [Enter] accept, n: not yet, or type feedback: ".into())
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
        self.ask_line(format!(
            "! {reason}\n? Guidance to continue (empty to stop): "
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

    /// "Always" is an answer only where it is offered; elsewhere `a` is
    /// feedback like any other words.
    #[test]
    fn always_is_an_answer_only_where_offered() {
        assert_eq!(tool_reply(Some("a"), true), Reply::AlwaysTool);
        assert_eq!(tool_reply(Some(" Always "), true), Reply::AlwaysTool);
        assert_eq!(tool_reply(Some("g"), true), Reply::AlwaysGroup);
        assert_eq!(tool_reply(Some("y"), true), Reply::Once(Approval::Approve));
        assert_eq!(
            tool_reply(Some("a"), false),
            Reply::Once(Approval::Deny {
                feedback: Some("a".into())
            })
        );
        assert_eq!(
            tool_reply(None, true),
            Reply::Once(Approval::Deny { feedback: None })
        );
    }
}
