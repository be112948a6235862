//! How the CLI assembles the engine it drives from its flags and the
//! config file: the flag groups every command that runs tasks shares
//! (`run`, `resume`, `chat`, `serve`, `checkpoints`), the endpoints a
//! `--script` or an endpoint flag means, and the one [`engine`] function.

use super::line::notice;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::bail;
use clap::Args;

use super::sanitize::visible_line;
use roost_core::config;
use roost_core::config::{ConfigError, Profile, RecordedEndpoint};
use roost_core::engine::{ConfigEndpoints, Endpoint, Endpoints, Engine, EngineBuilder};
use roost_core::llm::Provider;
use roost_core::task::ApprovalPolicy;
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
    // This binary serves a command's network inside its sandbox, and
    // reads each command line in a bounded process of its own.
    if let Ok(me) = std::env::current_exe() {
        builder = builder.command_bridge(me.clone()).line_reader(me);
    }
    let engine = builder.build()?;
    if let Some(w) = engine.commands_warning() {
        notice!("warning: {w}");
    }
    Ok(engine)
}
