//! `roost serve` (the engine over HTTP for a team on one machine) and
//! `roost token create|list|revoke` (who may use it, for which tenant
//! and workspace root).

use super::line::{notice, outln};
use std::net::SocketAddr;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};

use super::assemble::{ProviderArgs, RunOptions};
use super::sanitize::visible_line;
use roost_core::config;
use roost_core::engine::Tokens;
use roost_server::{ServerConfig, ServerState};

/// `roost serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:7878")]
    pub listen: SocketAddr,
    /// No tokens: every caller is the one local tenant (loopback only).
    #[arg(long)]
    pub no_auth: bool,
    /// Without auth: the workspace root tasks must lie under.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Tasks running at once; more wait in a queue.
    #[arg(long, default_value_t = 16)]
    pub max_running: usize,
    /// Tasks waiting for a slot; more are refused with 503.
    #[arg(long, default_value_t = 256)]
    pub max_queued: usize,
    /// Requests per second each token may make, sustained.
    #[arg(long, default_value_t = NonZeroU32::MIN.saturating_add(199))]
    pub requests_per_second: NonZeroU32,
    /// Requests a token may make at once above that rate.
    #[arg(long, default_value_t = NonZeroU32::MIN.saturating_add(399))]
    pub burst: NonZeroU32,
    /// Another origin allowed to send state-changing requests (a web UI
    /// served elsewhere). Repeatable.
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// Another `Host` requests may name (`host` for any port, or
    /// `host:port`): the name a proxy in front, or the clients, reach the
    /// server by. Besides it, only `localhost`, `127.0.0.1`, `[::1]` and
    /// the bound address with its port are answered (no DNS rebinding).
    /// Repeatable.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Let tasks run shell commands, sandboxed (see `roost run --help`).
    #[arg(long)]
    pub allow_commands: bool,
    /// With a shared PostgreSQL store: how long this host's tasks stay
    /// its own after it stops renewing its lease (it died); then another
    /// host resumes them.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub lease: std::time::Duration,
    /// Serve the metrics on `/metrics` in the Prometheus text format
    /// (token usage, durations, sandboxed calls, refusals, tasks, queue).
    #[arg(long)]
    pub metrics: bool,
    /// The bearer token a scrape of `/metrics` must bring, read from this
    /// file (required off loopback; Prometheus: `authorization:
    /// credentials_file`).
    #[arg(long, value_name = "FILE", requires = "metrics")]
    pub metrics_token_file: Option<PathBuf>,
    /// Model selection (the default endpoint of tasks that name no
    /// profile).
    #[command(flatten)]
    pub provider: ProviderArgs,
}

/// `roost token …`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token for a tenant; prints the token (one line, nothing
    /// else) — it is not stored, only its hash.
    Create {
        /// The tenant it acts for (a-z, 0-9, `_`, `-`).
        #[arg(long)]
        tenant: String,
        /// The tenant's workspace root: its tasks must lie under it.
        #[arg(long)]
        root: PathBuf,
        /// It stops working after this long (`30d`, `12h`).
        #[arg(long, value_parser = humantime::parse_duration)]
        expires: Option<Duration>,
    },
    /// The tokens (ids, tenants, roots; never the tokens).
    List,
    /// Revoke a token by its id.
    Revoke {
        /// Its id (`roost token list`).
        id: String,
    },
}

/// `roost serve`.
pub async fn serve(
    args: ServeArgs,
    data_dir: &Path,
    scrape: Option<roost_core::telemetry::Scrape>,
) -> anyhow::Result<ExitCode> {
    let metrics = match (args.metrics, scrape) {
        (false, _) => None,
        (true, None) => {
            anyhow::bail!("--metrics: the metrics could not be set up (see the warning above)")
        }
        (true, Some(scrape)) => {
            let token =
                match &args.metrics_token_file {
                    Some(f) => Some(std::fs::read_to_string(f).with_context(|| {
                        format!("cannot read the metrics token {}", f.display())
                    })?),
                    None => None,
                };
            if token.as_deref().is_some_and(|t| t.trim().len() < 16) {
                anyhow::bail!("--metrics-token-file: the token must be at least 16 characters");
            }
            Some(roost_server::MetricsPage::new(scrape, token.as_deref()))
        }
    };
    let opts = RunOptions {
        yes: false,
        approve: None,
        json: false,
        max_turns: None,
        hooks: Vec::new(),
        allow_commands: args.allow_commands,
        shared_host: true,
    };
    let engine = super::assemble::engine(data_dir, &args.provider, &opts)?;
    // The profiles tasks may name (`GET /v1/profiles`, the web UI's list).
    let profiles = roost_server::profiles_of(&config::load(args.provider.config.as_deref())?);
    let local_root = super::workspace_dir(&args.root)?;
    let state = ServerState::new(
        engine,
        ServerConfig {
            auth: !args.no_auth,
            local_root,
            max_running: args.max_running,
            max_queued: args.max_queued,
            requests_per_second: args.requests_per_second,
            burst: args.burst,
            allowed_origins: args.allow_origins.clone(),
            allowed_hosts: args.allowed_hosts.clone(),
            modes_dir: config::default_path().parent().map(Path::to_path_buf),
            profiles,
            metrics,
            ..ServerConfig::default()
        },
    );
    roost_server::check_exposure(args.listen, &state)?;
    state.engine.set_lease(args.lease);
    if state.join_hosts()? {
        notice!(
            "roost serve: sharing {} with other hosts (their tasks and this one's, through its work queue)",
            super::store::location_default(data_dir)
        );
    } else {
        let resumed = state.resume_stopped().await;
        if resumed > 0 {
            notice!("resumed {resumed} task(s) the last stop interrupted");
        }
    }
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr().unwrap_or(args.listen);
    if args.no_auth {
        notice!(
            "WARNING: no authentication: anyone who can reach {addr} runs tasks under {} (loopback only)",
            visible_line(&state.config.local_root.display().to_string())
        );
    }
    for line in started(addr, args.no_auth) {
        notice!("{line}");
    }
    let hosts = roost_server::allowed_hosts(addr, &state)?;
    if addr.ip().is_unspecified() {
        notice!(
            "roost serve: it answers requests for {} only; add --allowed-host NAME for each name or address clients use",
            visible_line(&hosts.names().join(", "))
        );
    }
    let shutdown = super::signals::stop_signal();
    roost_server::serve(listener, state, shutdown).await?;
    notice!("roost serve: stopped; interrupted tasks resume with `POST /v1/tasks/{{id}}/resume`");
    Ok(ExitCode::SUCCESS)
}

/// What `roost serve` says once it listens on `addr`: where, and the
/// addresses of its web UI and API (on a wildcard address, as this
/// machine reaches them: through loopback, which it always answers).
fn started(addr: SocketAddr, no_auth: bool) -> [String; 3] {
    let mut local = addr;
    if local.ip().is_unspecified() {
        local.set_ip(match addr {
            SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
            SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
        });
    }
    let sign_in = if no_auth {
        "no token needed: --no-auth"
    } else {
        "sign in with a token from `roost token create`"
    };
    [
        format!("roost serve: listening on {addr} (Ctrl-C or SIGTERM stops it)"),
        format!("  web UI: http://{local}/  ({sign_in})"),
        format!("  API:    http://{local}/v1  (OpenAPI document: http://{local}/v1/openapi.json)"),
    ]
}

/// `roost token`.
pub fn token(cmd: TokenCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let tokens = Tokens::open(&super::store::location_default(data_dir))?;
    match cmd {
        TokenCommand::Create {
            tenant,
            root,
            expires,
        } => {
            let made = tokens.create(&tenant, &root, expires)?;
            // Only the token on stdout: `TOKEN=$(roost token create …)`.
            outln!("{}", made.token);
            notice!(
                "token {} for tenant {} (root {}){}",
                made.record.id,
                visible_line(&made.record.tenant),
                visible_line(&made.record.root),
                made.record
                    .expires_at
                    .map(|_| format!(
                        ", expires in {}",
                        humantime::format_duration(expires.unwrap_or_default())
                    ))
                    .unwrap_or_default()
            );
        }
        TokenCommand::List => {
            let all = tokens.list()?;
            if all.is_empty() {
                outln!("no tokens (`roost token create --tenant T --root DIR` makes one)");
            } else {
                outln!("{:<12}  {:<16} {:<9} ROOT", "ID", "TENANT", "STATE");
            }
            let now = roost_core::engine::now_ms();
            for t in all {
                let state = if t.revoked_at.is_some() {
                    "revoked"
                } else if t.valid_at(now) {
                    "valid"
                } else {
                    "expired"
                };
                outln!(
                    "{:<12}  {:<16} {:<9} {}",
                    visible_line(&t.id),
                    visible_line(&t.tenant),
                    state,
                    visible_line(&t.root)
                );
            }
        }
        TokenCommand::Revoke { id } => {
            if tokens.revoke(&id)? {
                outln!("revoked {}", visible_line(&id));
            } else {
                anyhow::bail!(
                    "no live token {} (`roost token list` shows them)",
                    visible_line(&id)
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
