//! `roost mcp list|trust|serve`: the MCP servers a workspace's tasks use
//! (each one's status, tools, resources and last errors), trusting a
//! workspace's own servers, and serving Roost's sandboxed tools to other
//! agents over MCP.

use super::line::{notice, outln};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};

use super::sanitize::{json_text, visible_line};
use roost_core::commands::CommandHost;
use roost_core::config::{self, Config};
use roost_core::mcp::trust::disclosure;
use roost_core::mcp::{ConfigIssue, McpHub, ServerEntry, ServerState, ServerStatus, WorkspaceMcp};

/// `roost mcp …`
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// The MCP servers a workspace's tasks use: status, tools, resources
    /// and last errors (starts the ones that may start).
    List(ListArgs),
    /// Trust a workspace's own MCP servers (`.roo/mcp.json`, `.mcp.json`)
    /// so its tasks start them.
    Trust(TrustArgs),
    /// Call one tool of a configured MCP server and print its result
    /// (debugging; a project server must be trusted first).
    Call(CallArgs),
    /// Serve Roost's sandboxed tools over MCP (stdio, or streamable HTTP).
    Serve(super::mcp_serve::McpServeArgs),
}

/// `roost mcp list` arguments.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The workspace whose servers to list (with the global ones).
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
    /// Config file (default ~/.config/roost/config.toml).
    #[arg(long, env = "ROOST_CONFIG")]
    pub config: Option<PathBuf>,
}

/// `roost mcp call` arguments.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The server's name.
    pub server: String,
    /// The tool's name on the server.
    pub tool: String,
    /// Arguments as a JSON object.
    #[arg(long, default_value = "{}")]
    pub args: String,
    /// The workspace whose servers to use (with the global ones).
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// Config file (default ~/.config/roost/config.toml).
    #[arg(long, env = "ROOST_CONFIG")]
    pub config: Option<PathBuf>,
}

/// `roost mcp trust` arguments.
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The workspace whose servers to trust.
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// The servers to trust (default: all of the workspace's).
    pub names: Vec<String>,
}

/// Run a `roost mcp` command.
pub async fn run(cmd: McpCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    match cmd {
        McpCommand::List(a) => list(a, data_dir).await,
        McpCommand::Trust(a) => {
            let workspace = super::workspace_dir(&a.workspace)?;
            let hub = hub(data_dir, &Config::default())?;
            let names = (!a.names.is_empty()).then_some(a.names.as_slice());
            let known = hub.config(&workspace);
            for n in &a.names {
                if !known
                    .servers
                    .get(n)
                    .is_some_and(|e| e.source == roost_core::mcp::Source::Project)
                {
                    anyhow::bail!(
                        "this workspace configures no MCP server `{}` (.roo/mcp.json, .mcp.json)",
                        visible_line(n)
                    );
                }
            }
            let trusted = hub.trust(&workspace, names)?;
            if trusted.is_empty() {
                outln!("this workspace configures no MCP servers of its own");
            }
            // Exactly what was trusted, as the prompt shows it.
            for e in &trusted {
                outln!("trusted: {}", visible_line(&heading(e)));
                for line in disclosure(e) {
                    outln!("  {}", visible_line(&line));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        McpCommand::Call(a) => call(a, data_dir).await,
        McpCommand::Serve(a) => super::mcp_serve::serve(a, data_dir).await,
    }
}

/// The global configuration directory (`mcp_settings.json` lives there).
pub fn global_dir() -> Option<PathBuf> {
    config::default_path().parent().map(Path::to_path_buf)
}

/// A hub as a task's engine makes it: the command sandbox's settings from
/// `cfg`, this binary as the network bridge.
fn hub(data_dir: &Path, cfg: &Config) -> anyhow::Result<McpHub> {
    // Hidden as a task's engine hides them: the config dir and file, the
    // store wherever they are.
    let hidden = roost_core::engine::EngineBuilder::from_config(data_dir, cfg)
        .store(super::store::location(data_dir, Some(cfg)))
        .modes_dir(global_dir())
        .hidden_paths();
    let mut host = CommandHost::new(
        &cfg.commands,
        &cfg.command_profiles,
        data_dir,
        hidden,
        cfg.secret_store(),
    )?;
    host.bridge = std::env::current_exe().ok();
    Ok(McpHub::new(global_dir(), data_dir, Arc::new(host)))
}

/// The servers `workspace`'s tasks use, started as a task starts them,
/// each with its status: tools marked as a task is offered them (of two
/// that collide, the one offered and the one refused).
pub(crate) async fn started(
    hub: &McpHub,
    workspace: &Path,
) -> (Arc<WorkspaceMcp>, Vec<(ServerEntry, ServerStatus)>) {
    let servers = hub.servers(workspace);
    servers.start().await;
    let statuses = servers
        .servers
        .values()
        .map(|s| s.entry.clone())
        .zip(servers.statuses())
        .collect();
    (servers, statuses)
}

/// A server's name and the file that configures it.
fn heading(e: &ServerEntry) -> String {
    format!("{} ({})", e.name, e.file.display())
}

async fn list(a: ListArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace_dir(&a.workspace)?;
    let cfg = config::load(a.config.as_deref())?;
    let hub = hub(data_dir, &cfg)?;
    let (servers, statuses) = started(&hub, &workspace).await;
    if a.json {
        let v = serde_json::json!({
            "servers": statuses.iter().map(|(e, s)| serde_json::json!({
                "name": s.name,
                "source": e.source,
                "file": e.file,
                "transport": e.summary(),
                "expands": e.host_vars,
                "status": s.state,
                "tools": s.tools,
                "resources": s.resources.iter().map(|(u, n)| serde_json::json!({"uri": u, "name": n})).collect::<Vec<_>>(),
                "skills": s.skills,
                "errors": s.errors,
                "log_messages": s.log_messages,
                "restarts": s.restarts,
            })).collect::<Vec<_>>(),
            "issues": servers.config.issues.iter().map(|i| serde_json::json!({
                "file": i.file, "server": i.server, "field": i.field, "message": i.message,
            })).collect::<Vec<_>>(),
        });
        outln!("{}", json_text(&v.to_string()));
        hub.shutdown();
        return Ok(ExitCode::SUCCESS);
    }
    print(&statuses, &servers.config.issues, &workspace);
    hub.shutdown();
    Ok(ExitCode::SUCCESS)
}

/// The servers a workspace's tasks use, each with its state, tools,
/// resources and last errors, then the configuration's issues: as `roost
/// mcp list` and the conversation's `/mcp` show them.
pub(crate) fn print(
    statuses: &[(ServerEntry, ServerStatus)],
    issues: &[ConfigIssue],
    workspace: &Path,
) {
    if statuses.is_empty() && issues.is_empty() {
        outln!(
            "no MCP servers: configure them in {} or the workspace's .roo/mcp.json",
            global_dir()
                .map(|d| d.join("mcp_settings.json").display().to_string())
                .unwrap_or_else(|| "mcp_settings.json".into())
        );
    }
    for (e, s) in statuses {
        let state = match &s.state {
            ServerState::Ready => "ready".to_owned(),
            ServerState::Disabled => "disabled".to_owned(),
            ServerState::Untrusted => format!(
                "not trusted in this workspace (roost mcp trust --workspace {} {})",
                workspace.display(),
                s.name
            ),
            ServerState::Idle | ServerState::Starting => "starting".to_owned(),
            ServerState::Restarting(w) => format!("restarting: {w}"),
            ServerState::Failed(w) => format!("failed: {w}"),
        };
        outln!(
            "{} ({}, {}) — {}",
            visible_line(&s.name),
            e.source.as_str(),
            visible_line(&e.summary()),
            visible_line(&state)
        );
        for t in &s.tools {
            match &t.refused {
                None => outln!(
                    "  tool {}{}{}",
                    visible_line(&t.offered),
                    if t.read_only { " (read-only)" } else { "" },
                    if t.always_allow {
                        " (always allowed)"
                    } else {
                        ""
                    }
                ),
                Some(why) => outln!(
                    "  tool {} NOT OFFERED: {}",
                    visible_line(&t.name),
                    visible_line(why)
                ),
            }
        }
        for (uri, name) in &s.resources {
            outln!("  resource {} {}", visible_line(uri), visible_line(name));
        }
        for skill in &s.skills {
            outln!(
                "  skill {} (read with access_mcp_resource; never run on its own)",
                visible_line(skill)
            );
        }
        if s.log_messages > 0 {
            outln!("  log messages: {}", s.log_messages);
        }
        for err in &s.errors {
            outln!("  ! {}", visible_line(err));
        }
    }
    for i in issues {
        notice!("{}", visible_line(&i.to_string()));
    }
}

async fn call(a: CallArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let args: serde_json::Value = serde_json::from_str(&a.args)
        .map_err(|e| anyhow::anyhow!("--args is not valid JSON: {e}"))?;
    let serde_json::Value::Object(args) = args else {
        anyhow::bail!("--args must be a JSON object");
    };
    let workspace = super::workspace_dir(&a.workspace)?;
    let cfg = config::load(a.config.as_deref())?;
    let hub = hub(data_dir, &cfg)?;
    let servers = hub.servers(&workspace);
    let Some(server) = servers.servers.get(&a.server) else {
        let names: Vec<&str> = servers.servers.keys().map(String::as_str).collect();
        anyhow::bail!(
            "no MCP server `{}` is configured here; servers: {}",
            visible_line(&a.server),
            names.join(", ")
        );
    };
    let result = server.call(&a.tool, args).await;
    hub.shutdown();
    match result {
        Ok(v) => {
            outln!("{}", json_text(&v.to_string()));
            let failed = v.get("isError").and_then(serde_json::Value::as_bool) == Some(true);
            Ok(if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }
        Err(e) => anyhow::bail!("{}", visible_line(&e.to_string())),
    }
}

/// Before a task starts in `workspace`: its project servers not trusted
/// yet are trusted if a person says so at a terminal (`--yes` does not:
/// a repository must not launch processes by being opened).
pub fn ask_trust(hub: &McpHub, workspace: &Path) -> anyhow::Result<()> {
    let untrusted = hub.untrusted(workspace);
    if untrusted.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = untrusted.iter().map(|e| e.name.clone()).collect();
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        notice!(
            "this workspace configures MCP servers that are not started until you trust them: {} \
             (roost mcp trust --workspace {})",
            visible_line(&names.join(", ")),
            workspace.display()
        );
        return Ok(());
    }
    let mut err = std::io::stderr();
    writeln!(err, "This workspace's MCP configuration wants to start:")?;
    for e in &untrusted {
        writeln!(err, "  {}", visible_line(&heading(e)))?;
        for line in disclosure(e) {
            writeln!(err, "    {}", visible_line(&line))?;
        }
    }
    write!(err, "Trust and start them in this workspace? [y/N] ")?;
    err.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if matches!(line.trim(), "y" | "Y" | "yes") {
        // What was shown, not what the files say by now.
        hub.trust_entries(workspace, &untrusted)?;
    } else {
        notice!("not started; `roost mcp trust` trusts them later");
    }
    Ok(())
}
