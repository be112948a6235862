//! `roost run`, `roost resume` and `roost history`.

use super::line::notice;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;

use super::drive::{Drive, Ended, Signal};
use super::interact::Terminal;
use super::sanitize::visible_line;
use roost_core::config;
use roost_core::config::{ConfigError, Profile, RecordedEndpoint};
use roost_core::engine::{
    ConfigEndpoints, Endpoint, Endpoints, Engine, EngineBuilder, ResumeSpec, TaskSpec,
};
use roost_core::llm::Provider;
use roost_core::task::{ApprovalPolicy, TaskOutcome};
use roost_protocol::DelegationLimits;

/// Which model to talk to.
#[derive(Debug, Args, Clone, Default)]
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
    /// Transcript for the scripted provider: replays it instead of
    /// calling a model, whatever profile the config or the task names.
    #[arg(long)]
    pub script: Option<PathBuf>,
    /// Profile from the config file.
    #[arg(long)]
    pub profile: Option<String>,
    /// Config file (default ~/.config/roost/config.toml).
    #[arg(long, env = "ROOST_CONFIG", value_parser = super::AbsolutePath)]
    pub config: Option<PathBuf>,
}

/// How the task runs and shows itself.
#[derive(Debug, Args, Clone, Default)]
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
    /// Let tasks run shell commands (`execute_command`), sandboxed, as the
    /// config's [commands] table says (even where it leaves them off).
    #[arg(long)]
    pub allow_commands: bool,
    /// The engine serves several tenants (`roost serve`): commands see
    /// the system and their own workspace, not the whole file system.
    #[arg(skip)]
    pub shared_host: bool,
}

/// Bounds on the subtasks a new task may start; they only tighten the
/// config's `[delegation]` table.
#[derive(Debug, Args, Clone, Default)]
pub struct DelegationArgs {
    /// Deepest a subtask may be (the task itself is 0).
    #[arg(long, value_name = "N")]
    pub max_depth: Option<u32>,
    /// Most subtasks the task's tree may start in all.
    #[arg(long, value_name = "N")]
    pub max_total_children: Option<u32>,
    /// Most subtasks of the tree running at once (more wait their turn).
    #[arg(long, value_name = "N")]
    pub max_concurrent_children: Option<u32>,
    /// Seconds a subtask may run before it is stopped.
    #[arg(long, value_name = "SECS")]
    pub child_timeout_secs: Option<u64>,
}

impl DelegationArgs {
    /// The limits these flags set.
    pub fn limits(&self) -> DelegationLimits {
        DelegationLimits {
            max_depth: self.max_depth,
            max_total_children: self.max_total_children,
            max_concurrent_children: self.max_concurrent_children,
            child_timeout_secs: self.child_timeout_secs,
        }
    }
}

/// `roost run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// What to do (`-` reads it from standard input).
    pub prompt: String,
    /// Workspace directory.
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// Mode slug (default `code`; with `--continue`, the task's own).
    #[arg(long, value_parser = super::modes::ModeSlug, hide_possible_values = true)]
    pub mode: Option<String>,
    /// Give the prompt to an earlier task instead of starting one: the
    /// most recent task, or `--continue=ID`. A completed task goes on.
    #[arg(
        long = "continue",
        value_name = "ID",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub continue_task: Option<String>,
    /// Model selection.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Run options.
    #[command(flatten)]
    pub options: RunOptions,
    /// Bounds on subtasks.
    #[command(flatten)]
    pub delegation: DelegationArgs,
}

/// `roost resume`.
#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// Task id (or a unique prefix); none with `--last`.
    pub id: Option<String>,
    /// The most recent task that is not finished (with `--message`: the
    /// most recent task).
    #[arg(long, conflicts_with = "id")]
    pub last: bool,
    /// A new message for the task; a completed task takes it and goes on.
    #[arg(short = 'm', long)]
    pub message: Option<String>,
    /// Continue in another mode.
    #[arg(long, value_parser = super::modes::ModeSlug, hide_possible_values = true)]
    pub mode: Option<String>,
    /// Model selection (defaults to the task's provider).
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Run options.
    #[command(flatten)]
    pub options: RunOptions,
}

impl ProviderArgs {
    /// The endpoint the flags name (all empty: the config's default, or on
    /// resume the task's own).
    pub fn endpoint(&self) -> Endpoint {
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
    pub fn approval(&self) -> anyhow::Result<Option<ApprovalPolicy>> {
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

/// The endpoints of an engine given `--script`: every task replays the
/// transcript. Without this a config's `default_profile`, a named profile
/// or a resumed task's recorded endpoint would pick the provider, and the
/// prompt would go to that profile's model (a paid API) instead.
struct Replayed(ConfigEndpoints);

impl Endpoints for Replayed {
    fn open(
        &self,
        want: &Endpoint,
        recorded: Option<RecordedEndpoint<'_>>,
        scripted_start: usize,
    ) -> Result<(Arc<dyn Provider>, Profile), ConfigError> {
        let want = Endpoint {
            provider: Some(SCRIPTED.to_owned()),
            ..want.clone()
        };
        self.0.open(&want, recorded, scripted_start)
    }
}

/// The endpoints of an engine whose flags name an endpoint (`roost serve
/// --profile P`, `--model M`): a new task that names none gets the flags'
/// instead of the config's `default_profile`; a task that names one, or a
/// resumed task with its own recorded endpoint, keeps it.
struct FlagsDefault {
    inner: Arc<dyn Endpoints>,
    flags: Endpoint,
}

impl Endpoints for FlagsDefault {
    fn open(
        &self,
        want: &Endpoint,
        recorded: Option<RecordedEndpoint<'_>>,
        scripted_start: usize,
    ) -> Result<(Arc<dyn Provider>, Profile), ConfigError> {
        if *want == Endpoint::default() && recorded.is_none() {
            return self.inner.open(&self.flags, recorded, scripted_start);
        }
        self.inner.open(want, recorded, scripted_start)
    }
}

/// The provider `--script` means.
const SCRIPTED: &str = "scripted";

/// The engine a run or resume drives, as the config file describes it,
/// with the flags' transcript and extra hooks.
pub fn engine(
    data_dir: &Path,
    args: &ProviderArgs,
    opts: &RunOptions,
) -> anyhow::Result<Arc<Engine>> {
    let cfg = config::load(args.config.as_deref())?;
    let config_endpoints = ConfigEndpoints::new(cfg.clone(), args.script.clone());
    let endpoints: Arc<dyn Endpoints> = match (&args.script, args.provider.as_deref()) {
        (None, _) => Arc::new(config_endpoints),
        (Some(_), None | Some(SCRIPTED)) => Arc::new(Replayed(config_endpoints)),
        (Some(_), Some(other)) => bail!(
            "--script replays a transcript (the scripted provider); it cannot go with --provider {}",
            visible_line(other)
        ),
    };
    let flags = args.endpoint();
    let endpoints: Arc<dyn Endpoints> = if flags == Endpoint::default() {
        endpoints
    } else {
        Arc::new(FlagsDefault {
            inner: endpoints,
            flags,
        })
    };
    let mut builder = EngineBuilder::from_config(data_dir, &cfg)
        .store(super::store::location(data_dir, Some(&cfg)))
        .endpoints(endpoints)
        .modes_dir(config::default_path().parent().map(Path::to_path_buf))
        .skill_sources(super::skills::sources())
        .watch_compiles(super::progress::CompileProgress::shared());
    for path in &opts.hooks {
        builder = builder.hook_file(path);
    }
    if opts.allow_commands {
        builder = builder.commands(cfg.commands.clone(), cfg.command_profiles.clone());
    }
    if opts.shared_host {
        builder = builder.shared_host();
    }
    // This binary serves a command's network inside its sandbox.
    if let Ok(me) = std::env::current_exe() {
        builder = builder.command_bridge(me);
    }
    let engine = builder.build()?;
    if let Some(w) = engine.commands_warning() {
        notice!("warning: {w}");
    }
    Ok(engine)
}

/// Run a created (or prepared) task of `engine` to its end on the
/// terminal, and turn how it ended into the exit code.
async fn drive_to_end(
    engine: &Arc<Engine>,
    id: &str,
    opts: &RunOptions,
    workspace: &Path,
) -> anyhow::Result<ExitCode> {
    let terminal = Terminal::detect()
        .assume_yes(opts.yes)
        .remember(engine.approvals(), workspace.to_path_buf());
    let ended = Drive {
        engine,
        id,
        json: opts.json,
        terminal,
        interrupts: None,
    }
    .run()
    .await?;
    Ok(match ended {
        Ended::Left => ExitCode::from(130),
        Ended::Outcome(TaskOutcome::Aborted { .. }, Some(signal)) => {
            notice!("task {id} aborted; `roost resume {id}` continues it");
            // The shell's convention: 128 + the signal's number.
            ExitCode::from(match signal {
                Signal::Terminate => 143,
                Signal::Interrupt => 130,
            })
        }
        Ended::Outcome(TaskOutcome::Completed { .. }, _) => ExitCode::SUCCESS,
        Ended::Outcome(TaskOutcome::Failed { .. }, _) => ExitCode::from(1),
        Ended::Outcome(TaskOutcome::Aborted { .. }, None) => ExitCode::from(2),
        Ended::Outcome(TaskOutcome::Paused { .. }, _) => ExitCode::from(3),
    })
}

/// The prompt `arg` names: itself, or standard input for `-`.
fn prompt_text(arg: &str) -> anyhow::Result<String> {
    if arg != "-" {
        return Ok(arg.to_owned());
    }
    let mut p = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut p)
        .context("cannot read the prompt from standard input")?;
    if p.trim().is_empty() {
        bail!("the prompt read from standard input is empty");
    }
    Ok(p)
}

/// `roost run` (`--continue`: a new message for an earlier task).
pub async fn run(args: RunArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let prompt = prompt_text(&args.prompt)?;
    if let Some(which) = &args.continue_task {
        let resume = ResumeArgs {
            id: (!which.is_empty()).then(|| which.clone()),
            last: which.is_empty(),
            message: Some(prompt),
            mode: args.mode.clone(),
            provider: args.provider,
            options: args.options,
        };
        return self::resume(resume, data_dir).await;
    }
    let workspace = super::workspace_dir(&args.workspace)?;
    let approval = args.options.approval()?;
    let engine = engine(data_dir, &args.provider, &args.options)?;
    if let Some(hub) = engine.mcp() {
        super::mcp::ask_trust(hub, &workspace)?;
    }
    let id = engine.create_task(&TaskSpec {
        prompt,
        workspace: workspace.clone(),
        mode: args.mode.clone().unwrap_or_else(|| "code".to_owned()),
        approval,
        max_turns: args.options.max_turns,
        delegation: args.delegation.limits(),
        endpoint: args.provider.endpoint(),
    })?;
    drive_to_end(&engine, &id, &args.options, &workspace).await
}

/// `roost resume`: the task continues with the settings and endpoint it
/// recorded, unless flags name others; with a message, also a completed
/// task goes on.
pub async fn resume(args: ResumeArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let approval = args.options.approval()?;
    let engine = engine(data_dir, &args.provider, &args.options)?;
    let id = match &args.id {
        Some(id) => id.clone(),
        // A message may continue a finished task; without one only an
        // unfinished task can go on.
        None if args.last => engine.records().last(args.message.is_none())?.id,
        None => bail!(
            "which task? `roost resume ID` (an id or its prefix: `roost history list` shows them), or `roost resume --last` for the most recent unfinished one"
        ),
    };
    let prepared = engine.prepare_resume(
        &id,
        &ResumeSpec {
            endpoint: args.provider.endpoint(),
            approval,
            max_turns: args.options.max_turns,
            message: args.message.clone(),
            mode: args.mode.clone(),
        },
    )?;
    if let Some(change) = &prepared.endpoint_change {
        notice!(
            "resuming task {} on {}",
            visible_line(&prepared.id),
            visible_line(change)
        );
    }
    let workspace = PathBuf::from(engine.records().find(&prepared.id)?.workspace);
    drive_to_end(&engine, &prepared.id, &args.options, &workspace).await
}
