//! `roost run`, `roost resume` and `roost history`.

use super::line::notice;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use super::interact::Terminal;
use super::render::{self, Format};
use super::sanitize::{json_text, visible, visible_line};
use roost_core::config;
use roost_core::engine::{
    ConfigEndpoints, Endpoint, Engine, EngineBuilder, Listed, Records, ResumeSpec, TaskSpec,
};
use roost_core::events::EventBus;
use roost_core::task::{ApprovalPolicy, TaskOutcome};
use roost_sandbox::capability::Workspace;

/// Which model to talk to.
#[derive(Debug, Args, Clone)]
pub struct ProviderArgs {
    /// Provider: openai (any OpenAI-compatible server), anthropic, scripted.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id.
    #[arg(long)]
    pub model: Option<String>,
    /// API base URL (e.g. http://localhost:11434/v1 for Ollama).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Transcript for the scripted provider.
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// Profile from the config file.
    #[arg(long)]
    pub profile: Option<String>,
    /// Config file (default ~/.config/roost/config.toml).
    #[arg(long, env = "ROOST_CONFIG")]
    pub config: Option<PathBuf>,
}

/// How the task runs and shows itself.
#[derive(Debug, Args, Clone)]
pub struct RunOptions {
    /// Approve every tool call and accept the result: no questions.
    #[arg(short = 'y', long, conflicts_with = "approve")]
    pub yes: bool,
    /// Approve these tool groups without asking (e.g. read,edit).
    #[arg(long, value_name = "GROUPS")]
    pub approve: Option<String>,
    /// Print events as NDJSON.
    #[arg(long)]
    pub json: bool,
    /// Model requests before the task pauses (default 50; on resume, the
    /// task's own).
    #[arg(long)]
    pub max_turns: Option<u32>,
    /// Load a mode-hook component (world `mode-hook`) that modes can list in
    /// `hooks:` by the file's stem (`guard.wasm` → `guard`). Repeatable; the
    /// first-party `secret-guard` and `protected-paths` are always there.
    #[arg(long = "hook", value_name = "WASM")]
    pub hooks: Vec<PathBuf>,
}

/// `roost run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to do (`-` reads it from standard input).
    pub prompt: String,
    /// Workspace directory.
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// Mode slug.
    #[arg(long, default_value = "code")]
    pub mode: String,
    /// Model selection.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Run options.
    #[command(flatten)]
    pub options: RunOptions,
}

/// `roost resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// Task id (or a unique prefix).
    #[arg(required_unless_present = "last")]
    pub id: Option<String>,
    /// The most recent task that is not finished.
    #[arg(long, conflicts_with = "id")]
    pub last: bool,
    /// Model selection (defaults to the task's provider).
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Run options.
    #[command(flatten)]
    pub options: RunOptions,
}

/// `roost history`.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Recent tasks.
    List {
        /// How many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// One JSON object per task.
        #[arg(long)]
        json: bool,
    },
    /// One task's messages.
    Show {
        /// Task id (or a unique prefix).
        #[arg(required_unless_present = "last")]
        id: Option<String>,
        /// The most recent task.
        #[arg(long, conflicts_with = "id")]
        last: bool,
        /// Write Roo Code's files (api_conversation_history.json, …) here.
        #[arg(long)]
        export: Option<PathBuf>,
    },
}

impl ProviderArgs {
    /// The endpoint the flags name (all empty: the config's default, or on
    /// resume the task's own).
    fn endpoint(&self) -> Endpoint {
        Endpoint {
            profile: self.profile.clone(),
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            model: self.model.clone(),
        }
    }
}

impl RunOptions {
    /// The approval policy the flags name, if they name one.
    fn approval(&self) -> anyhow::Result<Option<ApprovalPolicy>> {
        if self.yes {
            return Ok(Some(ApprovalPolicy::yes()));
        }
        self.approve
            .as_deref()
            .map(ApprovalPolicy::from_groups)
            .transpose()
            .map_err(anyhow::Error::msg)
    }
}

/// The engine a run or resume drives, as the config file describes it,
/// with the flags' transcript and extra hooks.
fn engine(data_dir: &Path, args: &ProviderArgs, opts: &RunOptions) -> anyhow::Result<Arc<Engine>> {
    let cfg = config::load(args.config.as_deref())?;
    let endpoints = Arc::new(ConfigEndpoints::new(cfg.clone(), args.script.clone()));
    let mut builder = EngineBuilder::from_config(data_dir, &cfg)
        .endpoints(endpoints)
        .modes_dir(config::default_path().parent().map(Path::to_path_buf))
        .skill_sources(super::skills::sources())
        .before_compile(|| {
            notice!("preparing the sandboxed tools (the first run compiles them; a few seconds)…");
        });
    for path in &opts.hooks {
        builder = builder.hook_file(path);
    }
    Ok(builder.build()?)
}

/// Run a created (or prepared) task of `engine` to its end: render its
/// events, answer its questions on the terminal, and turn Ctrl-C or
/// SIGTERM into a clean cancel (the task stops between steps, ends
/// `aborted`, and resumes).
async fn drive(
    engine: &Arc<Engine>,
    id: &str,
    events: EventBus,
    opts: &RunOptions,
) -> anyhow::Result<ExitCode> {
    let format = if opts.json {
        Format::Json
    } else {
        Format::Text
    };
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let renderer = tokio::spawn(render::render(events.subscribe(), format, stopped));
    let terminal = Terminal::detect().assume_yes(opts.yes);
    let answering = engine.answer_with(id, &terminal)?;
    tokio::pin!(answering);
    // Both handlers are installed before the task starts, so a signal that
    // comes early is not missed.
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot watch for Ctrl-C")?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot watch for SIGTERM")?;
    let mut signal_name = None;
    engine.start(id)?;
    let outcome = loop {
        tokio::select! {
            o = engine.wait(id) => break o?,
            () = &mut answering => {}
            _ = interrupt.recv() => {
                if signal_name.is_some() {
                    // A second Ctrl-C while the cancel finishes the current
                    // call: leave now. The task stays interrupted (its
                    // history is durable) and `roost resume` continues it.
                    notice!("\nleaving now; task {id} is interrupted and `roost resume {id}` continues it");
                    let _ = stop.send(());
                    return Ok(ExitCode::from(130));
                }
                signal_name = Some("Ctrl-C");
                notice!("\ncancelling after the current step (Ctrl-C again leaves at once)…");
                engine.cancel(id, "interrupted (Ctrl-C)")?;
            }
            _ = terminate.recv(), if signal_name.is_none() => {
                signal_name = Some("SIGTERM");
                engine.cancel(id, "interrupted (SIGTERM)")?;
            }
        }
    };
    let code = match (&outcome, signal_name) {
        (TaskOutcome::Aborted { .. }, Some(name)) => {
            notice!("\ntask {id} aborted; `roost resume {id}` continues it");
            // The shell's convention: 128 + the signal's number.
            ExitCode::from(if name == "SIGTERM" { 143 } else { 130 })
        }
        (TaskOutcome::Completed { .. }, _) => ExitCode::SUCCESS,
        (TaskOutcome::Failed { .. }, _) => ExitCode::from(1),
        (TaskOutcome::Aborted { .. }, None) => ExitCode::from(2),
        (TaskOutcome::Paused { .. }, _) => ExitCode::from(3),
    };
    let _ = stop.send(());
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), renderer).await;
    Ok(code)
}

/// `roost run`.
pub async fn run(args: RunArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let workspace = Workspace::open(&args.workspace)
        .with_context(|| format!("workspace {} cannot be opened", args.workspace.display()))?
        .host_path()
        .to_path_buf();
    let prompt = if args.prompt == "-" {
        let mut p = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut p)
            .context("cannot read the prompt from standard input")?;
        if p.trim().is_empty() {
            bail!("the prompt read from standard input is empty");
        }
        p
    } else {
        args.prompt.clone()
    };
    let approval = args.options.approval()?;
    let engine = engine(data_dir, &args.provider, &args.options)?;
    let id = engine.create_task(&TaskSpec {
        prompt,
        workspace,
        mode: args.mode.clone(),
        approval,
        max_turns: args.options.max_turns,
        endpoint: args.provider.endpoint(),
    })?;
    let events = engine.events(&id)?;
    drive(&engine, &id, events, &args.options).await
}

/// `roost resume`: the task continues with the settings and endpoint it
/// recorded, unless flags name others.
pub async fn resume(args: ResumeArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let approval = args.options.approval()?;
    let engine = engine(data_dir, &args.provider, &args.options)?;
    let id = match &args.id {
        Some(id) => id.clone(),
        None => engine.records().last(true)?.id,
    };
    let prepared = engine.prepare_resume(
        &id,
        &ResumeSpec {
            endpoint: args.provider.endpoint(),
            approval,
            max_turns: args.options.max_turns,
        },
    )?;
    if let Some(change) = &prepared.endpoint_change {
        notice!(
            "resuming task {} on {}",
            visible_line(&prepared.id),
            visible_line(change)
        );
    }
    let events = engine.events(&prepared.id)?;
    drive(&engine, &prepared.id, events, &args.options).await
}

/// `roost history`.
pub fn history(cmd: HistoryCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let records = Records::open(data_dir)?;
    match cmd {
        HistoryCommand::List { limit, json } => {
            for Listed {
                task: t,
                interrupted,
            } in records.list(limit)?
            {
                let prompt: String = t
                    .prompt
                    .lines()
                    .next()
                    .unwrap_or("")
                    .chars()
                    .take(60)
                    .collect();
                if json {
                    let mut v = serde_json::to_value(&t)?;
                    v["interrupted"] = serde_json::Value::Bool(interrupted);
                    println!("{}", json_text(&v.to_string()));
                    continue;
                }
                let status = if interrupted {
                    "interrupted".to_owned()
                } else {
                    t.status.to_string()
                };
                println!(
                    "{}  {:<20} {:<10} in {:>7} out {:>6} ${:.4}  {}",
                    visible_line(&t.id),
                    status,
                    visible_line(&t.mode),
                    t.usage.input_tokens,
                    t.usage.output_tokens,
                    t.cost,
                    visible_line(&prompt)
                );
            }
        }
        HistoryCommand::Show {
            id,
            last: _,
            export,
        } => {
            let t = match &id {
                Some(id) => records.find(id)?,
                None => records.last(false)?,
            };
            println!(
                "task {} · {} · mode {} · {}",
                visible_line(&t.id),
                t.status,
                visible_line(&t.mode),
                visible_line(&t.workspace)
            );
            println!(
                "tokens in {} out {} · ${:.4}\n",
                t.usage.input_tokens, t.usage.output_tokens, t.cost
            );
            for m in records.ui_messages(&t.id)? {
                println!(
                    "[{} {}] {}",
                    visible_line(&m.kind),
                    visible_line(&m.subtype),
                    visible(&m.text)
                );
            }
            if let Some(dir) = export {
                records.export_roo(&t.id, &dir)?;
                println!("\nexported to {}", visible_line(&dir.display().to_string()));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
