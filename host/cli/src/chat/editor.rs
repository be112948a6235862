//! The session's line editor (rustyline): input history kept in Roost's
//! data dir, multi-line input (a line ending in `\`, Alt-Enter, or a
//! paste), slash commands completed with Tab. The same editor reads the
//! answers to the task's questions, so one thing owns the keyboard.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{Cmd, Config, Editor, EventHandler, Helper, KeyCode, KeyEvent, Modifiers};
use tokio::sync::mpsc;

use super::super::interact::{LineSource, Read};

/// What the person typed at the prompt.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// A message or a slash command (continuation backslashes removed).
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D (or the end of piped input).
    Eof,
}

/// Completes `/commands`; a trailing `\` continues the input on the next
/// line.
struct ChatHelper {
    commands: Vec<String>,
}

impl Completer for ChatHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let typed = line.get(..pos).unwrap_or("");
        if !typed.starts_with('/') || typed.contains(' ') {
            return Ok((0, Vec::new()));
        }
        let found = self
            .commands
            .iter()
            .filter(|c| c.starts_with(typed))
            .map(|c| Pair {
                display: c.clone(),
                replacement: format!("{c} "),
            })
            .collect();
        Ok((0, found))
    }
}

impl Hinter for ChatHelper {
    type Hint = String;
}

impl Highlighter for ChatHelper {
    fn highlight<'l>(&self, line: &'l str, _pos: usize) -> Cow<'l, str> {
        Cow::Borrowed(line)
    }
}

impl Validator for ChatHelper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        Ok(if ctx.input().ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for ChatHelper {}

/// The editor, shared by the prompt and the questions.
#[derive(Clone)]
pub struct LineEditor {
    editor: Arc<Mutex<Editor<ChatHelper, DefaultHistory>>>,
    history: Option<PathBuf>,
    /// Ctrl-C typed at a question: the driver cancels the turn.
    interrupts: mpsc::UnboundedSender<()>,
}

impl LineEditor {
    /// An editor completing `commands`, keeping its input history in
    /// `history`; Ctrl-C at a question is sent on `interrupts`.
    pub fn new(
        commands: Vec<String>,
        history: Option<PathBuf>,
        interrupts: mpsc::UnboundedSender<()>,
    ) -> anyhow::Result<Self> {
        let config = Config::builder()
            .auto_add_history(false)
            .history_ignore_dups(true)?
            .max_history_size(1000)?
            .bracketed_paste(true)
            .build();
        let mut editor = Editor::with_config(config)?;
        editor.set_helper(Some(ChatHelper { commands }));
        editor.bind_sequence(
            KeyEvent(KeyCode::Enter, Modifiers::ALT),
            EventHandler::Simple(Cmd::Newline),
        );
        if let Some(path) = &history {
            // No history yet is the usual first run.
            let _ = editor.load_history(path);
        }
        Ok(Self {
            editor: Arc::new(Mutex::new(editor)),
            history,
            interrupts,
        })
    }

    /// Read the next message at `prompt` (blocking: call off the runtime).
    pub fn read_message(&self, prompt: &str) -> Input {
        let mut editor = self.editor.lock().unwrap_or_else(|p| p.into_inner());
        match editor.readline(prompt) {
            Ok(line) => {
                let text = line.replace("\\\n", "\n");
                if !text.trim().is_empty() {
                    let _ = editor.add_history_entry(text.as_str());
                    if let Some(path) = &self.history
                        && let Err(e) = editor.save_history(path)
                    {
                        tracing::debug!("input history not saved: {e}");
                    }
                }
                Input::Line(text)
            }
            Err(ReadlineError::Interrupted) => Input::Interrupted,
            Err(ReadlineError::Eof) => Input::Eof,
            Err(e) => {
                tracing::warn!("cannot read the terminal: {e}");
                Input::Eof
            }
        }
    }
}

impl LineSource for LineEditor {
    /// A question: its subject (all but the last line) is printed, then
    /// the editor reads the answer after the last line.
    fn read_line(&self, prompt: &str) -> Read {
        let (subject, question) = match prompt.rsplit_once('\n') {
            Some((s, q)) => (format!("{s}\n"), q),
            None => (String::new(), prompt),
        };
        super::super::line::before_stderr();
        super::super::line::to_stderr(&subject);
        let mut editor = self.editor.lock().unwrap_or_else(|p| p.into_inner());
        match editor.readline(question) {
            Ok(line) => Read::Line(line),
            Err(ReadlineError::Interrupted) => {
                let _ = self.interrupts.send(());
                Read::Interrupted
            }
            Err(_) => Read::End,
        }
    }
}
