//! Slash commands: each is one [`SlashCommand`] in the registry, found by
//! name. The session only looks commands up; a new one registers itself
//! in [`Commands::builtin`] or through [`Commands::register`] without
//! touching the session. `/undo`, `/checkpoints`, `/skills` and `/mcp`
//! call the engine's APIs that `roost checkpoints`, `roost skills` and
//! `roost mcp` call; `/history` shows the conversation as the live view
//! did, through its renderer.

use super::super::line::outln;

use super::super::interact::{LineSource, Read};
use super::super::sanitize::{visible, visible_line};
use super::Session;
use roost_core::asks::Ask;
use roost_core::engine::{TodoState, UiMessage};
use roost_core::events::{Envelope, TaskEvent};
use roost_protocol::{Checkpoint, RestoreMode, UiSubtype};

/// What the session does after a command.
#[derive(Debug, PartialEq, Eq)]
pub enum Flow {
    /// Read the next input.
    Continue,
    /// Leave the session.
    Exit,
}

/// One slash command.
#[async_trait::async_trait]
pub trait SlashCommand: Send + Sync {
    /// Its name, without the slash.
    fn name(&self) -> &'static str;
    /// Its arguments, for `/help` (`<mode>`; empty for none).
    fn args(&self) -> &'static str {
        ""
    }
    /// What it does, in one line.
    fn about(&self) -> &'static str;
    /// Other names it answers to.
    fn aliases(&self) -> &'static [&'static str] {
        &[]
    }
    /// Run it with the rest of the line.
    async fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow>;
}

/// The registry.
pub struct Commands(Vec<Box<dyn SlashCommand>>);

impl Commands {
    /// The built-in commands.
    pub fn builtin() -> Self {
        let mut c = Self(Vec::new());
        c.register(Box::new(Help));
        c.register(Box::new(ModeCmd));
        c.register(Box::new(ModelCmd));
        c.register(Box::new(Approve));
        c.register(Box::new(Todos));
        c.register(Box::new(History));
        c.register(Box::new(Undo));
        c.register(Box::new(Checkpoints));
        c.register(Box::new(Skills));
        c.register(Box::new(Mcp));
        c.register(Box::new(Tasks));
        c.register(Box::new(New));
        c.register(Box::new(Exit));
        c
    }

    /// Add a command.
    pub fn register(&mut self, command: Box<dyn SlashCommand>) {
        self.0.push(command);
    }

    /// The command `name` answers to.
    pub fn find(&self, name: &str) -> Option<&dyn SlashCommand> {
        self.0
            .iter()
            .find(|c| c.name() == name || c.aliases().contains(&name))
            .map(Box::as_ref)
    }

    /// `/name` of each command, for completion.
    pub fn names(&self) -> Vec<String> {
        self.0.iter().map(|c| format!("/{}", c.name())).collect()
    }

    /// `/help`'s text.
    pub fn help(&self) -> String {
        let mut out = String::new();
        for c in &self.0 {
            let head = if c.args().is_empty() {
                format!("/{}", c.name())
            } else {
                format!("/{} {}", c.name(), c.args())
            };
            out.push_str(&format!("  {head:<22} {}\n", c.about()));
        }
        out.push_str(
            "\nA line ending in \\ (or Alt-Enter) goes on to the next line. Ctrl-C stops the \
             current turn (twice: leave); Ctrl-D leaves.\n",
        );
        out
    }
}

struct Help;

#[async_trait::async_trait]
impl SlashCommand for Help {
    fn name(&self) -> &'static str {
        "help"
    }
    fn about(&self) -> &'static str {
        "these commands"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["?"]
    }
    async fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        outln!("{}", session.commands_help());
        Ok(Flow::Continue)
    }
}

struct ModeCmd;

#[async_trait::async_trait]
impl SlashCommand for ModeCmd {
    fn name(&self) -> &'static str {
        "mode"
    }
    fn args(&self) -> &'static str {
        "[slug]"
    }
    fn about(&self) -> &'static str {
        "show the modes, or switch to one (from the next message on)"
    }
    async fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow> {
        let slug = args.trim();
        if slug.is_empty() {
            for (m, name) in session.modes() {
                let mark = if m == session.mode() { "*" } else { " " };
                outln!("{mark} {:<14} {}", visible_line(&m), visible_line(&name));
            }
            return Ok(Flow::Continue);
        }
        session.set_mode(slug)?;
        outln!("mode: {}", visible_line(slug));
        Ok(Flow::Continue)
    }
}

struct ModelCmd;

#[async_trait::async_trait]
impl SlashCommand for ModelCmd {
    fn name(&self) -> &'static str {
        "model"
    }
    fn args(&self) -> &'static str {
        "[profile]"
    }
    fn about(&self) -> &'static str {
        "show the config's profiles, or switch to one"
    }
    async fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow> {
        let name = args.trim();
        if name.is_empty() {
            let current = session.profile();
            let profiles = session.profiles();
            if profiles.is_empty() {
                outln!("no profiles in the config (add [profiles.NAME] to config.toml)");
            }
            for (p, describe) in profiles {
                let mark = if Some(p.as_str()) == current.as_deref() {
                    "*"
                } else {
                    " "
                };
                outln!(
                    "{mark} {:<14} {}",
                    visible_line(&p),
                    visible_line(&describe)
                );
            }
            return Ok(Flow::Continue);
        }
        session.set_profile(name)?;
        outln!("model: profile {}", visible_line(name));
        Ok(Flow::Continue)
    }
}

struct Approve;

#[async_trait::async_trait]
impl SlashCommand for Approve {
    fn name(&self) -> &'static str {
        "approve"
    }
    fn args(&self) -> &'static str {
        "<groups>"
    }
    fn about(&self) -> &'static str {
        "run these tool groups without asking in this session (read,edit,…)"
    }
    async fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow> {
        let now = session.approve(args.trim())?;
        outln!("approved without asking: {}", visible_line(&now));
        Ok(Flow::Continue)
    }
}

struct Todos;

#[async_trait::async_trait]
impl SlashCommand for Todos {
    fn name(&self) -> &'static str {
        "todos"
    }
    fn about(&self) -> &'static str {
        "the current task's todo list"
    }
    async fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        let Some(id) = session.task() else {
            outln!("no task yet: type a message to start one");
            return Ok(Flow::Continue);
        };
        let todos = session.records().todos(&id).await?;
        if todos.is_empty() {
            outln!("the task has no todo list");
        }
        for t in todos {
            let mark = match t.state {
                TodoState::Pending => "[ ]",
                TodoState::InProgress => "[-]",
                TodoState::Completed => "[x]",
            };
            outln!("{mark} {}", visible_line(&t.text));
        }
        Ok(Flow::Continue)
    }
}

struct History;

#[async_trait::async_trait]
impl SlashCommand for History {
    fn name(&self) -> &'static str {
        "history"
    }
    fn about(&self) -> &'static str {
        "the current task's messages"
    }
    async fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        let Some(id) = session.task() else {
            outln!("no task yet: type a message to start one");
            return Ok(Flow::Continue);
        };
        replay(session, &id).await?;
        Ok(Flow::Continue)
    }
}

/// `/history`: the task's conversation as the live view showed it — its
/// rows (the conversation of record: an undone turn is gone from it) as
/// the events the renderer draws, the person's messages and what has no
/// event of its own in one line each.
async fn replay(session: &Session, id: &str) -> anyhow::Result<()> {
    let records = session.records();
    let t = records.find(id)?;
    let rows = records.ui_messages(&t.id).await?;
    let (_, checkpoints) = session.engine.checkpoints(&t.id)?;
    outln!(
        "task {} · {} · mode {}",
        visible_line(&t.id),
        t.status,
        visible_line(&t.mode)
    );
    let mut batch = Vec::new();
    // The tool of the last call shown, for its result.
    let mut tool = String::new();
    // The checkpoint of the turn shown, drawn before its first result
    // as it was live.
    let mut checkpoint: Option<Checkpoint> = None;
    let mut started = false;
    for row in &rows {
        let subtype = UiSubtype::parse(&row.subtype);
        if row.kind == "ask" {
            flush(&mut batch).await;
            outln!("? {}", visible_line(first_line(&row.text)));
            continue;
        }
        match subtype {
            Some(UiSubtype::ApiReqStarted) => {
                started = true;
                if let Some(cp) = checkpoint.take() {
                    batch.push(TaskEvent::CheckpointSaved { checkpoint: cp });
                }
                checkpoint = turn_checkpoint(row, &checkpoints);
            }
            // What the person said: the prompt (before any reply) and the
            // messages that went on with the task.
            Some(UiSubtype::Text) if !started => {
                flush(&mut batch).await;
                outln!("› {}", visible(&row.text));
            }
            Some(UiSubtype::UserMessage) => {
                flush(&mut batch).await;
                outln!("› {}", visible(&row.text));
            }
            Some(UiSubtype::Text) => {
                batch.push(TaskEvent::MessagePartial {
                    delta: row.text.clone(),
                });
                batch.push(TaskEvent::MessageFinal {
                    text: row.text.clone(),
                });
            }
            Some(UiSubtype::Tool) => {
                let call: serde_json::Value =
                    serde_json::from_str(&row.text).unwrap_or(serde_json::Value::Null);
                let Some(name) = call.get("tool").and_then(|t| t.as_str()) else {
                    // Not a call as the loop records one: shown as it is.
                    flush(&mut batch).await;
                    outln!("  {}", other_row(row));
                    continue;
                };
                tool = name.to_owned();
                batch.push(TaskEvent::ToolCallRequested {
                    id: String::new(),
                    tool: tool.clone(),
                    args: call.get("args").cloned().unwrap_or(serde_json::Value::Null),
                });
            }
            Some(UiSubtype::ToolResult) => {
                if let Some(cp) = checkpoint.take() {
                    batch.push(TaskEvent::CheckpointSaved { checkpoint: cp });
                }
                batch.push(TaskEvent::ToolCallResult {
                    id: String::new(),
                    tool: tool.clone(),
                    result: Ok(row.text.clone()),
                    diff: None,
                });
            }
            Some(UiSubtype::CompletionResult) => batch.push(TaskEvent::AskRequired {
                ask_id: String::new(),
                text: row.text.clone(),
                ask: Ask::Completion {
                    result: row.text.clone(),
                },
            }),
            Some(UiSubtype::Paused) => batch.push(TaskEvent::Paused {
                reason: row.text.clone(),
            }),
            // A new run starts with the message shown above it.
            Some(UiSubtype::Resume) => {}
            _ => {
                flush(&mut batch).await;
                outln!("  {}", other_row(row));
            }
        }
    }
    if let Some(cp) = checkpoint.take() {
        batch.push(TaskEvent::CheckpointSaved { checkpoint: cp });
    }
    flush(&mut batch).await;
    Ok(())
}

/// Draw `batch` with the live view's renderer, and empty it.
async fn flush(batch: &mut Vec<TaskEvent>) {
    if batch.is_empty() {
        return;
    }
    let (tx, rx) = tokio::sync::broadcast::channel(batch.len());
    for event in batch.drain(..) {
        // The receiver is alive: a send cannot fail.
        let _ = tx.send(std::sync::Arc::new(Envelope {
            task_id: String::new(),
            seq: None,
            event,
        }));
    }
    // Closed: the renderer draws what is queued and returns.
    drop(tx);
    let (_stop, stop) = tokio::sync::oneshot::channel();
    // History is drawn as text only: no tool's kind or locations needed.
    let display = roost_protocol::display::Display::default();
    super::super::render::render(rx, super::super::render::Format::Text, stop, None, display).await;
}

/// The checkpoint taken in the turn whose request row is `row`: the one
/// of its turn number taken after it started (an undone turn's
/// checkpoint of the same number is older).
fn turn_checkpoint(row: &UiMessage, checkpoints: &[Checkpoint]) -> Option<Checkpoint> {
    let turn: u32 = row.text.strip_prefix("turn ")?.trim().parse().ok()?;
    checkpoints
        .iter()
        .rfind(|c| c.turn == turn && c.created_at >= row.ts)
        .cloned()
}

/// A row the live view has no event for, in one line.
fn other_row(row: &UiMessage) -> String {
    let text = visible_line(first_line(&row.text));
    match UiSubtype::parse(&row.subtype) {
        Some(UiSubtype::Error) => format!("! {text}"),
        Some(UiSubtype::UserFeedback) => format!("↳ {text}"),
        Some(UiSubtype::CheckpointRestored) => format!("↺ {text}"),
        Some(UiSubtype::CondenseContext) => "⋯ older messages condensed into a summary".to_owned(),
        _ => format!("· {}: {text}", visible_line(&row.subtype)),
    }
}

/// A text's first line.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// Assistant replies in task `id`'s conversation now: a checkpoint of a
/// later turn was undone (the conversation went back before it).
/// `YYYY-MM-DD HH:MM:SS` (UTC) for a time in ms since the epoch.
fn when(ms: i64) -> String {
    let t =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(t)
        .to_string()
        .replace('T', " ")
        .trim_end_matches('Z')
        .to_owned()
}

struct Undo;

#[async_trait::async_trait]
impl SlashCommand for Undo {
    fn name(&self) -> &'static str {
        "undo"
    }
    fn args(&self) -> &'static str {
        "[checkpoint]"
    }
    fn about(&self) -> &'static str {
        "take back what your last message changed: files and conversation (or go back to a checkpoint)"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["rewind", "restore"]
    }
    async fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow> {
        let wanted = match args.trim() {
            "" => None,
            n => Some(n.parse::<u32>().map_err(|_| {
                anyhow::anyhow!(
                    "`{}` is not a checkpoint number: /undo, or /undo N with N from /checkpoints",
                    visible_line(n)
                )
            })?),
        };
        let Some(id) = session.task() else {
            outln!("nothing to undo: no task yet");
            return Ok(Flow::Continue);
        };
        let plan = session.engine.undo_plan(&id)?;
        let (id, list) = (plan.id.clone(), &plan.checkpoints);
        let target = match wanted {
            Some(n) => match list.iter().find(|c| c.id == n) {
                Some(c) => c.clone(),
                None => anyhow::bail!("the task has no checkpoint {n} (/checkpoints lists them)"),
            },
            None => match plan.target.clone() {
                Some(c) => c,
                None => {
                    outln!(
                        "nothing to undo: {}",
                        if list.is_empty() {
                            "the task changed no files yet"
                        } else {
                            "what the task changed is undone already (/checkpoints lists the checkpoints; /undo N goes back to one)"
                        }
                    );
                    return Ok(Flow::Continue);
                }
            },
        };
        // What goes back, before it does.
        let diff = session.engine.checkpoint_diff(&id, target.id).await?;
        let stat: Vec<&str> = diff
            .lines()
            .take_while(|l| !l.starts_with("diff --git"))
            .filter(|l| !l.trim().is_empty())
            .collect();
        outln!(
            "back to checkpoint {} (before turn {}): the files as they were then, and the conversation \
             without that turn and those after it",
            target.id,
            target.turn
        );
        if stat.is_empty() {
            outln!("  no file changed since");
        }
        for l in &stat {
            outln!("  {}", visible_line(l.trim()));
        }
        if !session.options.yes {
            let editor = session.editor.clone();
            let read =
                tokio::task::spawn_blocking(move || editor.read_line("Undo? [y/N] ")).await?;
            if !matches!(read, Read::Line(ref a) if matches!(a.trim(), "y" | "Y" | "yes")) {
                outln!("not undone");
                return Ok(Flow::Continue);
            }
        }
        let report = session
            .engine
            .restore_checkpoint(&id, target.id, RestoreMode::Both, false)
            .await?;
        for p in &report.restored {
            outln!("restored {}", visible_line(p));
        }
        for p in &report.removed {
            outln!("removed  {}", visible_line(p));
        }
        for p in &report.conflicts {
            outln!(
                "conflict {}: changed by someone else since the task did; left alone",
                visible_line(p)
            );
        }
        outln!(
            "undone: back at checkpoint {} · your next message goes on from there (say what to do instead)",
            target.id
        );
        Ok(Flow::Continue)
    }
}

struct Checkpoints;

#[async_trait::async_trait]
impl SlashCommand for Checkpoints {
    fn name(&self) -> &'static str {
        "checkpoints"
    }
    fn about(&self) -> &'static str {
        "the current task's checkpoints (/undo N goes back to one)"
    }
    async fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        let Some(id) = session.task() else {
            outln!("no task yet: type a message to start one");
            return Ok(Flow::Continue);
        };
        let plan = session.engine.undo_plan(&id)?;
        if plan.checkpoints.is_empty() {
            outln!("the task has no checkpoints (it changed no files yet)");
            return Ok(Flow::Continue);
        }
        let next = plan.target.as_ref().map(|c| c.id);
        outln!("{:>4}  {:<5} TAKEN (UTC)", "ID", "TURN");
        for c in &plan.checkpoints {
            let note = if plan.undone(c) {
                "undone"
            } else if Some(c.id) == next {
                "← /undo goes back here"
            } else {
                ""
            };
            let line = format!(
                "{:>4}  {:<5} {:<20} {note}",
                c.id,
                c.turn,
                when(c.created_at)
            );
            outln!("{}", line.trim_end());
        }
        outln!(
            "each holds the files as they were before its turn changed them; /undo N goes back to one"
        );
        Ok(Flow::Continue)
    }
}

struct Skills;

#[async_trait::async_trait]
impl SlashCommand for Skills {
    fn name(&self) -> &'static str {
        "skills"
    }
    fn about(&self) -> &'static str {
        "the skills the current mode's tasks see, and the ones skipped (why)"
    }
    async fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        let catalog = super::super::skills::catalog(&session.workspace)?;
        let mode = session.mode();
        let seen = catalog.for_mode(&mode);
        if seen.available.is_empty() {
            outln!(
                "no skills for mode {} (a skill is a folder with a SKILL.md in .roo/skills/)",
                visible_line(&mode)
            );
        } else {
            outln!("skills for mode {}:", visible_line(&mode));
        }
        // Names, descriptions and paths come from skill files: shown, not
        // interpreted.
        for s in &seen.available {
            let origin = match &s.mode {
                Some(m) => format!("{}:{}", s.origin, visible_line(m)),
                None => s.origin.to_string(),
            };
            outln!(
                "  {} ({origin}{}) {}",
                visible_line(s.name()),
                if s.component { ", entries" } else { "" },
                visible_line(&s.manifest.description)
            );
            outln!("    {}", visible_line(&s.path.display().to_string()));
            for (lost, _) in seen
                .overridden
                .iter()
                .filter(|(_, w)| std::sync::Arc::ptr_eq(w, s))
            {
                outln!(
                    "    overrides {}",
                    visible_line(&lost.path.display().to_string())
                );
            }
        }
        if !catalog.issues().is_empty() {
            outln!("skipped:");
        }
        for i in catalog.issues() {
            outln!("  {}", visible(&i.to_string()));
        }
        Ok(Flow::Continue)
    }
}

struct Mcp;

#[async_trait::async_trait]
impl SlashCommand for Mcp {
    fn name(&self) -> &'static str {
        "mcp"
    }
    fn about(&self) -> &'static str {
        "the MCP servers the tasks here use: their state and tools"
    }
    async fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        let Some(hub) = session.engine.mcp() else {
            outln!("MCP is off in this session");
            return Ok(Flow::Continue);
        };
        let (servers, statuses) = super::super::mcp::started(hub, &session.workspace).await;
        super::super::mcp::print(&statuses, &servers.config.issues, &session.workspace);
        Ok(Flow::Continue)
    }
}

struct Tasks;

#[async_trait::async_trait]
impl SlashCommand for Tasks {
    fn name(&self) -> &'static str {
        "tasks"
    }
    fn args(&self) -> &'static str {
        "[id]"
    }
    fn about(&self) -> &'static str {
        "recent tasks, or go on with one of them"
    }
    async fn run(&self, session: &mut Session, args: &str) -> anyhow::Result<Flow> {
        let records = session.records();
        let id = args.trim();
        if !id.is_empty() {
            let t = records.find(id)?;
            session.switch_to(&t.id, &t.mode);
            outln!(
                "task {} ({}): your next message continues it",
                visible_line(&t.id),
                t.status
            );
            return Ok(Flow::Continue);
        }
        let listed = records.list(15)?;
        if listed.is_empty() {
            outln!("no tasks yet");
        }
        for l in listed {
            let current = session.task().as_deref() == Some(l.task.id.as_str());
            let prompt: String = l.task.prompt.chars().take(50).collect();
            outln!(
                "{} {}  {:<12} {}",
                if current { "*" } else { " " },
                visible_line(&l.task.id),
                if l.interrupted {
                    "interrupted".to_owned()
                } else {
                    l.task.status.to_string()
                },
                visible(&prompt).replace('\n', " ")
            );
        }
        Ok(Flow::Continue)
    }
}

struct New;

#[async_trait::async_trait]
impl SlashCommand for New {
    fn name(&self) -> &'static str {
        "new"
    }
    fn about(&self) -> &'static str {
        "start a new task with the next message"
    }
    async fn run(&self, session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        session.new_task();
        outln!("your next message starts a new task");
        Ok(Flow::Continue)
    }
}

struct Exit;

#[async_trait::async_trait]
impl SlashCommand for Exit {
    fn name(&self) -> &'static str {
        "exit"
    }
    fn about(&self) -> &'static str {
        "leave (the task stays in the history)"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["quit", "q"]
    }
    async fn run(&self, _session: &mut Session, _args: &str) -> anyhow::Result<Flow> {
        Ok(Flow::Exit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_found_by_name_and_alias() {
        let c = Commands::builtin();
        for name in [
            "mode", "model", "approve", "todos", "history", "new", "tasks", "help", "exit",
        ] {
            assert_eq!(c.find(name).map(|c| c.name()), Some(name));
        }
        assert_eq!(c.find("quit").map(|c| c.name()), Some("exit"));
        for name in ["undo", "checkpoints", "skills", "mcp"] {
            assert_eq!(c.find(name).map(|c| c.name()), Some(name));
            assert!(c.help().contains(&format!("/{name}")), "{}", c.help());
        }
        assert!(c.help().contains("/mode [slug]"));
    }
}
