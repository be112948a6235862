//! `roost tool list` and `roost tool call`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use super::sanitize::{json_text, visible, visible_line};
use roost_core::config::{self, SecretStore};
use roost_core::first_party;
use roost_core::install::Plugins;
use roost_core::store::Store;
use roost_core::task::paths;
use roost_core::task::{Registry, WriteRule, WriteSession, write_session};
use roost_sandbox::capability::{
    Grant, GuardBudget, Limits, NetworkGrant, Origin, RooIgnore, Workspace,
};
use roost_sandbox::plugins::{EngineConfig, LoadedPlugin, NetworkRecord, PluginEngine};

/// `roost tool …`
#[derive(Debug, Subcommand)]
pub enum ToolCommand {
    /// List the tools: first-party, installed and enabled, and any `--plugin`.
    List(PluginArgs),
    /// Call one tool in its sandbox and print its output.
    Call(CallArgs),
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
    /// Grant write access under this workspace-relative directory. Repeatable.
    #[arg(long = "write", value_name = "PATH")]
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
            let (_engine, registry) = load(data_dir, &p, SecretStore::from_env())?;
            for t in registry.iter() {
                let first_line = t.spec.description.lines().next().unwrap_or("");
                // Names and descriptions come from plugins.
                println!(
                    "{:<20} {:<8} {:<12} {}",
                    visible_line(&t.spec.name),
                    t.spec.group,
                    visible_line(t.provider()),
                    visible_line(first_line)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        ToolCommand::Call(c) => call(c, data_dir).await,
    }
}

fn load(
    data_dir: &Path,
    extra: &PluginArgs,
    secrets: SecretStore,
) -> anyhow::Result<(Arc<PluginEngine>, Registry)> {
    let engine = Arc::new(PluginEngine::new(EngineConfig::with_cache_dir(
        data_dir.join("cache").join("components"),
    ))?);
    if first_party::needs_compile(&engine, false) {
        eprintln!("preparing the sandboxed tools (the first run compiles them; a few seconds)…");
    }
    let mut plugins: Vec<Arc<LoadedPlugin>> = first_party::load_all(&engine)?;
    for path in &extra.plugins {
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .with_context(|| format!("cannot name plugin {}", path.display()))?;
        plugins.push(engine.load_file(name, path)?);
    }
    let mut registry = Registry::new();
    for p in plugins {
        registry.add_plugin(p)?;
    }
    // Installed plugins, each with at most what it was granted.
    let store = Store::open(&Store::default_path(data_dir))?;
    Plugins::new(data_dir, &store, &engine, Limits::default())
        .with_secrets(secrets)
        .load_enabled(&mut registry)?;
    Ok((engine, registry))
}

async fn call(c: CallArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let args: serde_json::Value = serde_json::from_str(&c.args)
        .with_context(|| format!("--args is not valid JSON: {}", c.args))?;
    if !args.is_object() {
        bail!("--args must be a JSON object, got {}", c.args);
    }
    // The config only matters here for secrets: a broken one is an error
    // when `--secret` asks for one, else a warning.
    let (secrets, budget) = match config::load(c.config.as_deref()) {
        Ok(cfg) => (cfg.secret_store(), cfg.sandbox.guard_budget()),
        Err(e) if !c.secrets.is_empty() => return Err(e.into()),
        Err(e) => {
            eprintln!(
                "warning: {}; secrets come from ROOST_SECRET_* variables only",
                visible(&e.to_string())
            );
            (SecretStore::from_env(), GuardBudget::default())
        }
    };
    let (engine, registry) = load(data_dir, &c.plugins, secrets.clone())?;
    let Some(tool) = registry.get(&c.name) else {
        let known: Vec<_> = registry.iter().map(|t| t.spec.name.as_str()).collect();
        bail!(
            "unknown tool `{}`; known tools: {}",
            c.name,
            known.join(", ")
        );
    };
    let Some(plugin) = tool.component() else {
        bail!(
            "`{}` is a host-native tool: it talks to the person or the task, so it runs only inside a task",
            c.name
        );
    };
    // Declared paths get the same gate as in a task: normalised, refused
    // when they leave the workspace, are ignored by .rooignore, or (for a
    // destructive tool) name an authority file.
    let mut args = args;
    let ws = Workspace::open(&c.workspace)
        .with_context(|| format!("cannot open workspace {}", c.workspace.display()))?;
    if let Err(r) = paths::check(&ws, &RooIgnore::load_in(&ws), &tool.spec, &mut args) {
        bail!("{}", visible(&r.message));
    }
    let memory_bytes = c
        .memory_mib
        .checked_mul(1 << 20)
        .with_context(|| format!("--memory-mib {} is too large", c.memory_mib))?;
    // An installed plugin gets at most what it was granted at install.
    let access = &tool.access;
    if c.read && !access.read {
        bail!(
            "plugin `{}` was not granted read access at install",
            visible_line(plugin.name())
        );
    }
    if !c.write.is_empty() && !access.write {
        bail!(
            "plugin `{}` was not granted write access at install",
            visible_line(plugin.name())
        );
    }
    let mut grant = Grant::new(&c.workspace).limits(access.limits(Limits {
        deadline: Duration::from_millis(c.deadline_ms),
        memory_bytes,
        output_bytes: c.output_bytes,
    }));
    if c.read {
        grant = grant.read();
    }
    for w in &c.write {
        grant = grant.write(w);
    }
    if let Some(network) = network_of(&c, access.network.as_deref(), plugin, &secrets)? {
        grant = grant.network(network);
    }
    // The same write session as a task's calls: a lease on the roots and
    // a guard that undoes any change to an authority file under them.
    let session = if c.write.is_empty() {
        None
    } else {
        Some(
            WriteSession::open(&ws, &c.write, WriteRule::default(), budget)
                .await
                .map_err(|e| anyhow::anyhow!("{}", visible(&e.to_string())))?,
        )
    };
    let report = engine
        .call_with_report(plugin, &c.name, &args.to_string(), &grant)
        .await;
    let mut result = report.result;
    if let Some((guarded, _lease)) = session.map(WriteSession::close)
        && let Some(v) = write_session::violation(&guarded, &c.name, None)
    {
        result = Err(v);
    }
    let mut network = report.network.records;
    for r in &mut network {
        roost_core::intents::redact_record(r);
    }
    if c.json {
        let mut v = match &result {
            Ok(out) => serde_json::json!({ "ok": out }),
            Err(e) => serde_json::json!({ "error": e }),
        };
        if !network.is_empty() {
            v["network"] = serde_json::json!(network);
        }
        println!("{}", json_text(&v.to_string()));
    } else {
        for r in &network {
            eprintln!("network: {}", visible_line(&describe(r)));
        }
        // Tool output (file contents, file names) is shown, not interpreted.
        match &result {
            Ok(out) => {
                print!("{}", visible(&out.text));
                if !out.text.ends_with('\n') {
                    println!();
                }
            }
            Err(e) => eprintln!("error [{}]: {}", e.code, visible(&e.message)),
        }
    }
    Ok(if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The network of a direct call: an installed plugin's recorded grant, or
/// for a `--plugin` component what `--allow-net` and `--secret` name.
/// First-party plugins get none.
fn network_of(
    c: &CallArgs,
    installed: Option<&NetworkGrant>,
    plugin: &LoadedPlugin,
    secrets: &SecretStore,
) -> anyhow::Result<Option<NetworkGrant>> {
    if c.allow_net.is_empty() && c.secrets.is_empty() {
        return Ok(installed.cloned());
    }
    let name = visible_line(plugin.name());
    if installed.is_some()
        || !c
            .plugins
            .plugins
            .iter()
            .any(|p| p.file_stem().is_some_and(|s| s == plugin.name()))
    {
        bail!(
            "--allow-net and --secret are for components given with --plugin; `{name}` gets the network it was granted at install (first-party plugins get none)"
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

/// One request of a call, in a line.
fn describe(r: &NetworkRecord) -> String {
    match (&r.refused, r.status, &r.error) {
        (Some(why), _, _) => format!("{} {} refused: {why}", r.method, r.url),
        (None, Some(s), None) => format!("{} {} -> {s} ({} bytes)", r.method, r.url, r.bytes),
        (None, _, Some(e)) => format!("{} {} failed: {e}", r.method, r.url),
        (None, None, None) => format!("{} {} (no response)", r.method, r.url),
    }
}
