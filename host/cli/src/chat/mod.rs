//! The interactive session (`roost`, `roost chat`): a conversation with
//! one task at a time, as in Roo Code or Claude Code. Each message starts
//! a task or goes on with the current one (a completed task takes a new
//! message and continues); the reply streams, calls, diffs and approvals
//! show inline; slash commands ([`commands`]) change the mode, the
//! model, the approvals, or the task.

mod commands;
mod editor;

use super::line::{notice, outln};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tokio::sync::mpsc;

use super::assemble::{DelegationArgs, ProviderArgs, RunOptions};
use super::drive::{Drive, Ended};
use super::interact::Terminal;
use super::sanitize::visible_line;
use commands::{Commands, Flow};
use editor::{Input, LineEditor};
use roost_core::config::{self, Config};
use roost_core::engine::{Engine, Records, ResumeSpec, TaskSpec};
use roost_core::modes::ModeSet;
use roost_core::session::{self, Owner};
use roost_core::task::{ApprovalPolicy, TaskOutcome};
use roost_protocol::DelegationLimits;

/// `roost chat` (and `roost` with no command).
#[derive(Debug, Args, Clone)]
pub struct ChatArgs {
    /// Workspace directory.
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// Mode slug (default `code`).
    #[arg(long, value_parser = super::modes::ModeSlug, hide_possible_values = true)]
    pub mode: Option<String>,
    /// Model selection.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Run options.
    #[command(flatten)]
    pub options: RunOptions,
    /// Bounds on subtasks of the tasks it starts.
    #[command(flatten)]
    pub delegation: DelegationArgs,
}

/// One person's conversation.
pub struct Session {
    engine: Arc<Engine>,
    config: Config,
    workspace: PathBuf,
    mode: String,
    /// The mode changed since the current task last ran.
    mode_changed: bool,
    provider: ProviderArgs,
    options: RunOptions,
    delegation: DelegationLimits,
    /// What the flags and `/approve` let run without asking.
    policy: Option<ApprovalPolicy>,
    task: Option<String>,
    commands: Arc<Commands>,
    editor: LineEditor,
    interrupts: mpsc::UnboundedReceiver<()>,
}

/// `roost chat`.
pub async fn run(args: ChatArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace_dir(&args.workspace)?;
    let config = config::load(args.provider.config.as_deref())?;
    let engine = super::assemble::engine(data_dir, &args.provider, &args.options)?;
    if let Some(hub) = engine.mcp() {
        super::mcp::ask_trust(hub, &workspace)?;
    }
    let commands = Arc::new(Commands::builtin());
    let (tx, rx) = mpsc::unbounded_channel();
    let editor = LineEditor::new(commands.names(), Some(data_dir.join("chat_history")), tx)?;
    let mut session = Session {
        policy: args.options.approval()?,
        engine,
        config,
        workspace,
        mode: String::new(),
        mode_changed: false,
        provider: args.provider,
        options: args.options,
        delegation: args.delegation.limits(),
        task: None,
        commands,
        editor,
        interrupts: rx,
    };
    session.set_mode(args.mode.as_deref().unwrap_or("code"))?;
    session.mode_changed = false;
    outln!(
        "Roost · {} · mode {} · /help for commands, Ctrl-D to leave",
        visible_line(&session.workspace.display().to_string()),
        visible_line(&session.mode)
    );
    session.converse().await
}

impl Session {
    async fn converse(&mut self) -> anyhow::Result<ExitCode> {
        let mut interrupted_once = false;
        loop {
            let prompt = format!("{}> ", self.mode);
            let editor = self.editor.clone();
            let input = tokio::task::spawn_blocking(move || editor.read_message(&prompt)).await?;
            let line = match input {
                Input::Eof => break,
                Input::Interrupted if interrupted_once => break,
                Input::Interrupted => {
                    interrupted_once = true;
                    notice!("(Ctrl-C again or Ctrl-D to leave)");
                    continue;
                }
                Input::Line(l) => l,
            };
            interrupted_once = false;
            let text = line.trim();
            if text.is_empty() {
                continue;
            }
            let flow = match text.strip_prefix('/') {
                Some(cmd) => self.command(cmd).await,
                None => self.send(line.clone()).await,
            };
            match flow {
                Ok(Flow::Exit) => break,
                Ok(Flow::Continue) => {}
                // A refused message or command is said; the session goes on.
                Err(e) => notice!("error: {}", visible_line(&format!("{e:#}"))),
            }
        }
        if let Some(id) = &self.task {
            notice!(
                "bye · `roost` then `/tasks {id}` (or `roost resume {id} -m …`) goes on with the task"
            );
        }
        Ok(ExitCode::SUCCESS)
    }

    /// Run slash command `line` (without its slash).
    async fn command(&mut self, line: &str) -> anyhow::Result<Flow> {
        let (name, args) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let commands = Arc::clone(&self.commands);
        match commands.find(name) {
            Some(c) => c.run(self, args).await,
            None => anyhow::bail!("unknown command /{name} (/help lists them)"),
        }
    }

    /// Send `text`: a new task, or the current task's next message.
    async fn send(&mut self, text: String) -> anyhow::Result<Flow> {
        let id = match self.task.clone() {
            None => session::Session::new(&self.engine, Owner::Host)
                .create(&TaskSpec {
                    prompt: text,
                    workspace: self.workspace.clone(),
                    mode: self.mode.clone(),
                    approval: self.policy.clone(),
                    max_turns: self.options.max_turns,
                    delegation: self.delegation,
                    endpoint: self.provider.endpoint(),
                    traceparent: None,
                })
                .await?
                .id()
                .to_owned(),
            Some(id) => {
                let approval = self.policy_for(&id)?;
                let mode = std::mem::take(&mut self.mode_changed).then(|| self.mode.clone());
                session::Session::new(&self.engine, Owner::Host)
                    .resume(
                        &id,
                        &ResumeSpec {
                            endpoint: self.provider.endpoint(),
                            approval,
                            max_turns: self.options.max_turns,
                            message: Some(text),
                            mode,
                        },
                    )
                    .await?
                    .id
            }
        };
        self.task = Some(id.clone());
        let terminal = Terminal::detect()
            .assume_yes(self.options.yes)
            .input(Arc::new(self.editor.clone()))
            .remember(self.engine.approvals(), self.workspace.clone());
        // Interrupts typed before this turn are not for it.
        while self.interrupts.try_recv().is_ok() {}
        let ended = Drive {
            engine: &self.engine,
            id: &id,
            json: self.options.json,
            terminal,
            interrupts: Some(&mut self.interrupts),
        }
        .run()
        .await?;
        match ended {
            Ended::Left => return Ok(Flow::Exit),
            Ended::Outcome(TaskOutcome::Completed { .. }, _) => {
                notice!("(done · type to go on with this task, /new for a new one)");
            }
            Ended::Outcome(TaskOutcome::Aborted { .. }, _) => {
                notice!("(stopped · type to go on, /new for a new task)");
            }
            Ended::Outcome(TaskOutcome::Paused { .. }, _) => {
                notice!("(paused at the turn limit · type to go on)");
            }
            Ended::Outcome(TaskOutcome::Failed { .. }, _) => {
                notice!("(failed · type to try again, /new for a new task)");
            }
        }
        Ok(Flow::Continue)
    }

    /// The policy a resumed task continues with: its own (with the
    /// "always" answers it recorded), widened by this session's flags and
    /// `/approve`; `None` when the session adds nothing.
    fn policy_for(&self, id: &str) -> anyhow::Result<Option<ApprovalPolicy>> {
        let Some(extra) = &self.policy else {
            return Ok(None);
        };
        let task = self.records().find(id)?;
        let mut policy = task.settings.map(|s| s.approval).unwrap_or_default();
        policy.approve_all |= extra.approve_all;
        policy.auto_groups.extend(extra.auto_groups.iter().copied());
        policy.auto_tools.extend(extra.auto_tools.iter().cloned());
        Ok(Some(policy))
    }

    // What the slash commands read and change.

    fn commands_help(&self) -> String {
        self.commands.help()
    }

    fn records(&self) -> Records {
        self.engine.records()
    }

    fn task(&self) -> Option<String> {
        self.task.clone()
    }

    fn mode(&self) -> String {
        self.mode.clone()
    }

    fn mode_set(&self) -> ModeSet {
        ModeSet::load(
            &self.workspace,
            config::default_path()
                .parent()
                .map(Path::to_path_buf)
                .as_deref(),
        )
    }

    /// Each mode's slug and name.
    fn modes(&self) -> Vec<(String, String)> {
        self.mode_set()
            .iter()
            .map(|m| (m.slug.clone(), m.name.clone()))
            .collect()
    }

    fn set_mode(&mut self, slug: &str) -> anyhow::Result<()> {
        let modes = self.mode_set();
        if modes.get(slug).is_none() {
            let known: Vec<&str> = modes.iter().map(|m| m.slug.as_str()).collect();
            anyhow::bail!("unknown mode `{slug}` (available: {})", known.join(", "));
        }
        self.mode = slug.to_owned();
        self.mode_changed = true;
        Ok(())
    }

    fn profile(&self) -> Option<String> {
        self.provider
            .profile
            .clone()
            .or_else(|| self.config.default_profile.clone())
    }

    /// Each profile of the config with its provider and model.
    fn profiles(&self) -> Vec<(String, String)> {
        self.config
            .profiles
            .iter()
            .map(|(name, p)| {
                let provider = p.provider.as_deref().unwrap_or("openai");
                let model = p.model.as_deref().unwrap_or("(default model)");
                (name.clone(), format!("{provider} {model}"))
            })
            .collect()
    }

    fn set_profile(&mut self, name: &str) -> anyhow::Result<()> {
        if !self.config.profiles.contains_key(name) {
            let known: Vec<&str> = self.config.profiles.keys().map(String::as_str).collect();
            anyhow::bail!(
                "no profile `{name}` in the config (profiles: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            );
        }
        // A profile names the whole endpoint: flags naming parts of
        // another one no longer apply.
        self.provider.profile = Some(name.to_owned());
        self.provider.provider = None;
        self.provider.base_url = None;
        self.provider.model = None;
        Ok(())
    }

    /// Add `groups` to what runs without asking; the policy, described.
    fn approve(&mut self, groups: &str) -> anyhow::Result<String> {
        if groups.is_empty() {
            anyhow::bail!("name the groups: /approve read,edit");
        }
        let add = ApprovalPolicy::from_groups(groups).map_err(anyhow::Error::msg)?;
        let policy = self.policy.get_or_insert_with(ApprovalPolicy::default);
        policy.auto_groups.extend(add.auto_groups);
        Ok(policy.describe())
    }

    fn switch_to(&mut self, id: &str, mode: &str) {
        self.task = Some(id.to_owned());
        self.mode = mode.to_owned();
        self.mode_changed = false;
    }

    fn new_task(&mut self) {
        self.task = None;
    }
}
