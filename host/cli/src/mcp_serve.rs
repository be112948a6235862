//! `roost mcp serve`: Roost's sandboxed tools for other agents over MCP
//! (stdio by default, streamable HTTP with `--http`). Every call runs in
//! Roost's sandbox with the grant given here; see `roost_server::mcp`.
//!
//! On stdio, stdout carries the protocol and nothing else: every notice
//! and log line goes to stderr.

use super::line::notice;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::sanitize::visible;
use roost_core::config::{self, Config};
use roost_core::engine::EngineBuilder;
use roost_server::mcp::{self, DirectGrant, HttpOptions, RoostMcp};

/// `roost mcp serve` arguments.
#[derive(Debug, Args)]
pub struct McpServeArgs {
    /// The workspace every call works in.
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// Let calls read the whole workspace.
    #[arg(long)]
    pub read: bool,
    /// Let calls write under this workspace-relative directory. Repeatable.
    #[arg(long = "write", value_name = "PATH", conflicts_with = "intent")]
    pub write: Vec<PathBuf>,
    /// Let calls write what this intent (`.orchestration/active_intents.yaml`)
    /// owns: each `owned_scope` glob must name a whole directory
    /// (`src/auth/**`); destructive calls are traced under it.
    #[arg(long, value_name = "ID")]
    pub intent: Option<String>,
    /// The mode whose tool groups, file patterns and hooks judge every
    /// call, as they would a task's (default: `code`, as the workspace's
    /// `.roomodes` defines it).
    #[arg(long, value_name = "SLUG")]
    pub mode: Option<String>,
    /// Serve streamable HTTP on this address (e.g. 127.0.0.1:8765) at
    /// `/mcp` instead of stdio. Off loopback a token is required.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Another `Host` clients may use to reach the HTTP server (`name` for
    /// any port, or `name:port`); loopback names with the bound port are
    /// always allowed. Repeatable.
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,
    /// The bearer token HTTP clients must send (`Authorization: Bearer …`);
    /// required when `--http` is not a loopback address.
    #[arg(long, env = "ROOST_MCP_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Config file, for sandbox limits and installed plugins' secrets
    /// (default ~/.config/roost/config.toml).
    #[arg(long, env = "ROOST_CONFIG")]
    pub config: Option<PathBuf>,
}

/// Run `roost mcp serve`.
pub async fn serve(args: McpServeArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let options = HttpOptions {
        allowed_hosts: args.allowed_hosts.clone(),
        token: args.token.clone().filter(|_| args.http.is_some()),
    };
    // Refuse an exposed server before loading anything.
    if let Some(addr) = args.http {
        mcp::check_exposure(addr, &options)?;
    }
    let workspace = super::workspace_dir(&args.workspace)?;
    let grant = match &args.intent {
        Some(id) => DirectGrant::for_intent(&workspace, args.read, id)?,
        None => DirectGrant::new(&workspace, args.read, &args.write)?,
    }
    .with_mode(args.mode.clone());
    // The config sets limits and installed plugins' secrets; a broken one
    // is said, and the defaults serve.
    let cfg = match config::load(args.config.as_deref()) {
        Ok(cfg) => cfg,
        Err(e) => {
            notice!(
                "warning: {}; serving with the default configuration",
                visible(&e.to_string())
            );
            Config::default()
        }
    };
    let agent = EngineBuilder::from_config(data_dir, &cfg)
        .store(super::store::location(data_dir, Some(&cfg)))
        .skill_sources(super::skills::sources())
        .watch_compiles(super::progress::CompileProgress::shared())
        .build_agent()?;
    let server = RoostMcp::new(agent, grant);
    let grant = visible(&server.grant().describe()).into_owned();
    match args.http {
        None => {
            notice!("roost mcp serve: MCP on stdio for {grant}");
            mcp::serve_stdio(server).await?;
        }
        Some(addr) => {
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr}"))?;
            let bound = listener.local_addr().unwrap_or(addr);
            notice!(
                "roost mcp serve: listening on http://{bound}{} for {grant} (Ctrl-C or SIGTERM stops it)",
                mcp::MCP_PATH
            );
            mcp::serve_http(listener, server, options, super::signals::stop_signal()).await?;
            notice!("roost mcp serve: stopped");
        }
    }
    Ok(ExitCode::SUCCESS)
}
