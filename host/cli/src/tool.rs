//! `roost tool list` and `roost tool call`.

use super::line::{notice, outln};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use super::sanitize::{json_text, visible, visible_line};
use roost_core::call::direct::DirectCall;
use roost_core::call::grant::DirectGrant;
use roost_core::config::{self, Config, SecretStore};
use roost_core::engine::EngineBuilder;
use roost_core::task::Agent;
use roost_core::tools::component::describe_request;
use roost_sandbox::capability::{GuardBudget, Limits, NetworkGrant, Origin};

/// `roost tool …`
#[derive(Debug, Subcommand)]
pub enum ToolCommand {
    /// List the tools: first-party, installed and enabled, and any `--plugin`.
    List(PluginArgs),
    /// Call one tool in its sandbox and print its output.
    Call(Box<CallArgs>),
}

/// Extra plugins to load besides the first-party ones.
#[derive(Debug, Args)]
pub struct PluginArgs {
    /// Also load this tool plugin component (name = file stem). Repeatable.
    #[arg(long = "plugin", value_name = "FILE")]
    pub plugins: Vec<PathBuf>,
}

/// `roost tool call` arguments.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON object.
    #[arg(long, default_value = "{}")]
    pub args: String,
    /// Workspace directory.
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// Grant read access to the whole workspace.
    #[arg(long)]
    pub read: bool,
    /// The mode whose tool groups, file patterns and hooks judge the call,
    /// as they would a task's (default: `code`, as the workspace's
    /// `.roomodes` defines it).
    #[arg(long, value_name = "SLUG")]
    pub mode: Option<String>,
    /// Work under this intent (`.orchestration/active_intents.yaml`): its
    /// `owned_scope` bounds the writes and the trace names it.
    #[arg(long, value_name = "ID")]
    pub intent: Option<String>,
    /// Grant write access under this workspace-relative directory. Repeatable.
    #[arg(long = "write", value_name = "PATH", conflicts_with = "intent")]
    pub write: Vec<PathBuf>,
    /// Deadline of the call, in milliseconds.
    #[arg(long, default_value_t = 30_000)]
    pub deadline_ms: u64,
    /// Memory limit of the call, in MiB.
    #[arg(long, default_value_t = 256)]
    pub memory_mib: u64,
    /// Output cap, in bytes.
    #[arg(long, default_value_t = 1 << 20)]
    pub output_bytes: usize,
    /// Print the result as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Let a `--plugin` component's `wasi:http` requests reach this origin
    /// (`api.example.com`, `host:8443`, `http://127.0.0.1:8080`; plain http
    /// only to loopback). Repeatable. For developing a plugin: an installed
    /// plugin gets the network it was granted at install.
    #[arg(long = "allow-net", value_name = "ORIGIN")]
    pub allow_net: Vec<String>,
    /// Let the host put this secret into the `--plugin` component's
    /// requests where it writes `{{secret:NAME}}` in a header (value from
    /// `ROOST_SECRET_<NAME>` or the config's `[secrets.NAME]`). Repeatable.
    #[arg(long = "secret", value_name = "NAME")]
    pub secrets: Vec<String>,
    /// Config file, for its `[secrets]` (default ~/.config/roost/config.toml).
    #[arg(long, env = "ROOST_CONFIG")]
    pub config: Option<PathBuf>,
    /// Extra plugins.
    #[command(flatten)]
    pub plugins: PluginArgs,
}

/// Run a `roost tool` command.
pub async fn run(cmd: ToolCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    match cmd {
        ToolCommand::List(p) => {
            let agent = tools(data_dir, &p, None)?;
            let width = super::line::terminal_width();
            let name_w = agent
                .registry
                .iter()
                .map(|t| t.spec.name.chars().count())
                .max()
                .unwrap_or(4)
                .clamp(4, 32);
            outln!(
                "{:<name_w$} {:<8} {:<16} DESCRIPTION",
                "TOOL",
                "GROUP",
                "FROM"
            );
            for t in agent.registry.iter() {
                let first_line = t.spec.description.lines().next().unwrap_or("");
                // Names and descriptions come from plugins; a description
                // is cut to the terminal's width, never wrapped.
                // The group as a string: padding applies to strings, not
                // to a type's own Display.
                let head = format!(
                    "{:<name_w$} {:<8} {:<16} ",
                    visible_line(&t.spec.name),
                    t.spec.group.to_string(),
                    visible_line(t.provider())
                );
                let room = width.saturating_sub(head.chars().count()).max(20);
                outln!(
                    "{head}{}",
                    super::line::fit(&visible_line(first_line), room)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ToolCommand::Call(c) => call(*c, data_dir).await,
    }
}

/// The tools a task would be offered (first-party, installed and enabled,
/// each with at most its grant), and the `--plugin` components, assembled
/// the way every engine is.
fn tools(data_dir: &Path, extra: &PluginArgs, cfg: Option<&Config>) -> anyhow::Result<Agent> {
    let empty = Config::default();
    let mut builder = EngineBuilder::from_config(data_dir, cfg.unwrap_or(&empty))
        .store(super::store::location(data_dir, cfg))
        .watch_compiles(super::progress::CompileProgress::shared());
    for path in &extra.plugins {
        builder = builder.plugin_file(path);
    }
    Ok(builder.build_agent()?)
}

async fn call(c: CallArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let args: serde_json::Value = serde_json::from_str(&c.args)
        .with_context(|| format!("--args is not valid JSON: {}", c.args))?;
    if !args.is_object() {
        bail!("--args must be a JSON object, got {}", c.args);
    }
    // The config only matters here for secrets and the guard's budget: a
    // broken one is an error when `--secret` asks for one, else a warning.
    let cfg = match config::load(c.config.as_deref()) {
        Ok(cfg) => Some(cfg),
        Err(e) if !c.secrets.is_empty() => return Err(e.into()),
        Err(e) => {
            notice!(
                "warning: {}; secrets come from ROOST_SECRET_* variables only",
                visible(&e.to_string())
            );
            None
        }
    };
    let secrets = cfg
        .as_ref()
        .map_or_else(SecretStore::from_env, Config::secret_store);
    let budget = cfg
        .as_ref()
        .map_or_else(GuardBudget::default, |c| c.sandbox.guard_budget());
    let agent = tools(data_dir, &c.plugins, cfg.as_ref())?;
    let memory_bytes = c
        .memory_mib
        .checked_mul(1 << 20)
        .with_context(|| format!("--memory-mib {} is too large", c.memory_mib))?;
    let grant = match &c.intent {
        Some(id) => DirectGrant::for_intent(&c.workspace, c.read, id),
        None => DirectGrant::new(&c.workspace, c.read, &c.write),
    }
    .map_err(|e| anyhow::anyhow!("{}", visible(&e.to_string())))?
    .with_mode(c.mode.clone());
    let outcome = agent
        .call_direct(DirectCall {
            caller: "cli",
            name: &c.name,
            args,
            grant: &grant,
            limits: Limits {
                deadline: Duration::from_millis(c.deadline_ms),
                memory_bytes,
                output_bytes: c.output_bytes,
            },
            network: dev_network(&c, &secrets, &agent)?,
            guard_budget: budget,
            traceparent: None,
        })
        .await
        .map_err(|e| anyhow::anyhow!("{}", visible(&e.to_string())))?;
    let (result, network) = (outcome.result, outcome.network);
    if c.json {
        let mut v = match &result {
            Ok(out) => serde_json::json!({ "ok": out }),
            Err(e) => serde_json::json!({ "error": e }),
        };
        if !network.is_empty() {
            v["network"] = serde_json::json!(network);
        }
        outln!("{}", json_text(&v.to_string()));
    } else {
        for r in &network {
            notice!("network: {}", visible_line(&describe_request(r)));
        }
        // Tool output (file contents, file names) is shown, not interpreted.
        match &result {
            Ok(out) => {
                super::line::to_stdout(&visible(&out.text));
                if !out.text.ends_with('\n') {
                    outln!();
                }
            }
            Err(e) => notice!("error [{}]: {}", e.code, visible(&e.message)),
        }
    }
    Ok(if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The network `--allow-net` and `--secret` name, for a component given
/// with `--plugin` only (an installed plugin gets the network it was
/// granted at install, a first-party one none).
fn dev_network(
    c: &CallArgs,
    secrets: &SecretStore,
    agent: &Agent,
) -> anyhow::Result<Option<NetworkGrant>> {
    if c.allow_net.is_empty() && c.secrets.is_empty() {
        return Ok(None);
    }
    let provider = agent.registry.get(&c.name).map(|t| t.provider());
    let given = c
        .plugins
        .plugins
        .iter()
        .any(|p| p.file_stem().and_then(|s| s.to_str()) == provider);
    if !given {
        bail!(
            "--allow-net and --secret are for components given with --plugin; `{}` gets the network it was granted at install (first-party plugins get none)",
            visible_line(&c.name)
        );
    }
    if c.allow_net.is_empty() {
        bail!("--secret needs --allow-net: a secret only goes to an allowed origin");
    }
    let allow = c
        .allow_net
        .iter()
        .map(|o| Origin::parse(o).with_context(|| format!("--allow-net {}", visible_line(o))))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if let Some(bad) = c
        .secrets
        .iter()
        .find(|s| !config::secrets::is_secret_name(s))
    {
        bail!(
            "--secret {}: not a secret name like GITHUB_TOKEN",
            visible_line(bad)
        );
    }
    Ok(Some(secrets.network_grant(allow, &c.secrets)))
}
