//! The person at the terminal: approvals, follow-up answers, completion
//! reviews and guidance. The subject of each question (the call, its
//! diff, the result) is printed first by the display; the question comes
//! after it, on its own line. Without a terminal nothing can be asked:
//! calls the policy does not cover are denied with a clear message (why,
//! and how to allow them), results are accepted *without review* (and
//! said to be), and questions go unanswered. Ctrl-C at a question is no
//! answer at all: the run is interrupted, and resumes.

use super::line::notice;
use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;
use std::sync::Arc;

use super::paint::{painted_diff, short_args};
use super::sanitize::{visible, visible_line};
use roost_core::asks::Ask;
use roost_core::engine::Approvals;
use roost_core::task::{Answer, Approval, CompletionAnswer};
use roost_core::tools::ToolGroup;
use roost_protocol::Grant;

/// What reading an answer gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// A line (without its line end).
    Line(String),
    /// End of input: nobody is there to answer.
    End,
    /// The person pressed Ctrl-C at the question: not an answer, an
    /// interruption (the task is cancelled and can be resumed).
    Interrupted,
}

impl Read {
    /// The line read, if one was.
    fn line(self) -> Option<String> {
        match self {
            Read::Line(l) => Some(l),
            Read::End | Read::Interrupted => None,
        }
    }
}

/// One line of input, read off the runtime: a plain read of stdin for
/// one-shot runs, the line editor in a session.
pub trait LineSource: Send + Sync {
    /// Show `prompt` and read a line, telling end of input from an
    /// interrupted question.
    fn read_line(&self, prompt: &str) -> Read;
}

/// Standard input, read a line at a time (its prompt on stderr).
pub struct Stdin;

impl LineSource for Stdin {
    fn read_line(&self, prompt: &str) -> Read {
        super::line::before_stderr();
        super::line::to_stderr(prompt);
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) => Read::End,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Read::Interrupted,
            Err(_) => Read::End,
            Ok(_) => Read::Line(line.trim_end_matches(['\n', '\r']).to_owned()),
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

    async fn ask_line(&self, prompt: String) -> Read {
        let input = Arc::clone(&self.input);
        tokio::task::spawn_blocking(move || input.read_line(&prompt))
            .await
            .unwrap_or(Read::End)
    }

    /// The answer to `ask`, or `None` when the person interrupted the
    /// question (Ctrl-C): an interruption is no answer — the cancel that
    /// comes with it stops the task, which can be resumed — never a "no".
    pub async fn respond(&self, ask: &Ask) -> Option<Answer> {
        Some(match ask {
            Ask::Tool {
                tool,
                group,
                args,
                preview,
                why,
            } => self
                .approve(tool, *group, args, preview.as_deref(), why.as_deref())
                .await?
                .into(),
            Ask::Followup {
                question,
                suggestions,
            } => self.followup(question, suggestions).await?.into(),
            Ask::Completion { .. } => self.completion().await?.into(),
            Ask::Scope {
                intent,
                tool,
                path,
                preview,
            } => self
                .scope_violation(intent, tool, path, preview.as_deref())
                .await?
                .into(),
            Ask::Hook {
                hook,
                tool,
                question,
            } => self.hook_question(hook, tool, question).await?.into(),
            Ask::Guidance { reason, .. } => self.guidance(reason).await?.into(),
        })
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

/// The terminal's answer to each kind of question; `None` when the person
/// interrupted it. Without a terminal a call is denied with feedback that
/// says why and how to allow it (the display shows it once, as the
/// denial).
impl Terminal {
    async fn approve(
        &self,
        tool: &str,
        group: ToolGroup,
        args: &serde_json::Value,
        preview: Option<&str>,
        why: Option<&str>,
    ) -> Option<Approval> {
        let shown_tool = visible_line(tool);
        if !self.tty {
            let feedback = match why {
                // No rule allows it: the policy (and so --yes) cannot.
                Some(why) => format!(
                    "Denied automatically: {why}. --yes and --approve cover only commands a rule \
                     allows, and there is no terminal to ask: add a rule to `allowed_commands` in the \
                     config's [commands] table, or run on a terminal to approve it."
                ),
                None => format!(
                    "Denied automatically: there is no terminal to ask, and the approval policy does not \
                     cover `{group}` tools (run with --yes or --approve {group})."
                ),
            };
            return Some(Approval::Deny {
                feedback: Some(feedback),
            });
        }
        // The subject first: why a person must decide, an edit's change
        // (the call itself was shown as it was requested), then the
        // question on its own line.
        let mut subject = why
            .map(|w| format!("  {}\n", visible_line(w)))
            .unwrap_or_default();
        subject.push_str(&match preview {
            Some(p) => shown_diff(p),
            None => format!("  {}\n", short_args(args)),
        });
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
        if answer == Read::Interrupted {
            return None;
        }
        Some(match tool_reply(answer.line().as_deref(), always) {
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
        })
    }

    async fn scope_violation(
        &self,
        intent: &str,
        tool: &str,
        path: &str,
        preview: Option<&str>,
    ) -> Option<Approval> {
        if !self.tty {
            return Some(Approval::Deny {
                feedback: Some(format!(
                    "Denied automatically: {tool} writes {path}, outside the owned scope of {intent}, \
                     and there is no terminal to ask the user to allow it."
                )),
            });
        }
        let (intent, tool, path) = (visible_line(intent), visible_line(tool), visible_line(path));
        let subject = preview.map(shown_diff).unwrap_or_default();
        let q = format!(
            "{subject}? {tool} writes {path}, outside the owned scope of {intent}: approve once? [y]es / [N]o / feedback: "
        );
        match self.ask_line(q).await {
            Read::Interrupted => None,
            read => Some(yes_no(read.line().as_deref())),
        }
    }

    async fn hook_question(&self, hook: &str, tool: &str, question: &str) -> Option<Approval> {
        if !self.tty {
            return Some(Approval::Deny {
                feedback: Some(format!(
                    "Denied automatically: hook `{hook}` asks \"{question}\" about {tool}, and there is \
                     no terminal to ask the user."
                )),
            });
        }
        let (shown_hook, question) = (visible_line(hook), visible_line(question));
        let q = format!("? [{shown_hook}] {question} [y]es / [N]o / feedback: ");
        match self.ask_line(q).await {
            Read::Interrupted => None,
            read => Some(yes_no(read.line().as_deref())),
        }
    }

    async fn followup(&self, question: &str, suggestions: &[String]) -> Option<Option<String>> {
        if !self.tty {
            return Some(None);
        }
        let mut prompt = format!("? {}\n", visible(question));
        for (i, s) in suggestions.iter().enumerate() {
            prompt.push_str(&format!("  {}. {}\n", i + 1, visible_line(s)));
        }
        prompt.push_str("> ");
        let line = match self.ask_line(prompt).await {
            Read::Interrupted => return None,
            Read::End => return Some(None),
            Read::Line(l) => l,
        };
        let pick = line
            .trim()
            .parse::<usize>()
            .ok()
            .and_then(|n| suggestions.get(n.wrapping_sub(1)));
        Some(Some(pick.cloned().unwrap_or(line)))
    }

    async fn completion(&self) -> Option<CompletionAnswer> {
        if self.assume_yes {
            return Some(CompletionAnswer::Unreviewed("accepted by --yes".to_owned()));
        }
        // Said once, by the result's own line.
        if !self.tty {
            return Some(CompletionAnswer::Unreviewed(
                "no terminal to ask".to_owned(),
            ));
        }
        Some(
            match self
                .ask_line(
                    "? Accept the result? [Enter] accept, n: not yet, or type feedback: ".into(),
                )
                .await
            {
                Read::Interrupted => return None,
                Read::Line(l) if l.trim().is_empty() || matches!(l.trim(), "y" | "yes") => {
                    CompletionAnswer::Accept
                }
                Read::Line(l) if matches!(l.trim(), "n" | "no") => CompletionAnswer::Declined,
                Read::Line(l) => CompletionAnswer::Feedback(l),
                // End of input is nobody's acceptance.
                Read::End => CompletionAnswer::Declined,
            },
        )
    }

    async fn guidance(&self, reason: &str) -> Option<Option<String>> {
        let reason = visible(reason);
        if !self.tty {
            notice!("{reason} No terminal to ask: stopping.");
            return Some(None);
        }
        match self
            .ask_line(format!(
                "! {reason}\n? Guidance to continue (empty to stop): "
            ))
            .await
        {
            Read::Interrupted => None,
            read => Some(read.line().filter(|l| !l.trim().is_empty())),
        }
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
