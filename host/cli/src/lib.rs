//! The `roost` command line, the engine's first front-end: argument
//! parsing, terminal interaction and rendering. This is the binary's edge:
//! errors are `anyhow` here and become a message plus a non-zero exit code.

mod approvals;
mod chat;
mod checkpoints;
mod command_bridge;
mod doctor;
mod drive;
mod history;
mod intents;
mod interact;
mod line;
mod live_tree;
mod mcp;
mod mcp_serve;
mod modes;
mod plugin;
mod progress;
mod render;
mod run;
pub mod sanitize;
mod serve;
mod skills;
mod store;
mod template;
mod tool;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Roost: an agent host whose tools run as sandboxed WebAssembly components.
#[derive(Debug, Parser)]
#[command(name = "roost", version, about)]
pub struct Cli {
    /// Data directory (component cache, task store). Defaults to the
    /// platform's data dir, e.g. ~/.local/share/roost.
    #[arg(long, env = "ROOST_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
    /// The task store: a SQLite file, or a `postgres://` URL several
    /// `roost serve` hosts share. Defaults to the config's `store`, else
    /// `roost.db` in the data dir.
    #[arg(long, env = "ROOST_STORE_URL", global = true, value_name = "PATH|URL")]
    pub store: Option<String>,
    /// Command to run (none: a conversation, as `roost chat`).
    #[command(subcommand)]
    pub command: Option<Command>,
    /// The conversation's options, when no command is given.
    #[command(flatten)]
    pub chat: chat::ChatArgs,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// A conversation: type messages, see the work, approve it as it goes
    /// (what `roost` alone does).
    Chat(chat::ChatArgs),
    /// Run a task: stream the model, run tools, ask for approvals.
    Run(run::RunArgs),
    /// Continue a task: an interrupted one from its history, or (with
    /// `--message`) any task with a new message.
    Resume(run::ResumeArgs),
    /// Modes (built-in, global, project).
    #[command(subcommand)]
    Modes(modes::ModesCommand),
    /// Skills (`SKILL.md` folders): list, show, validate.
    #[command(subcommand)]
    Skills(skills::SkillsCommand),
    /// Intents of a workspace (`.orchestration/active_intents.yaml`).
    #[command(subcommand)]
    Intents(IntentsCommand),
    /// The agent trace (`.orchestration/agent_trace.jsonl`).
    Trace(intents::TraceArgs),
    /// Past tasks: list, search, show, delete.
    #[command(subcommand)]
    History(history::HistoryCommand),
    /// A task's checkpoints: list, diff, restore (files, conversation).
    #[command(subcommand)]
    Checkpoints(checkpoints::CheckpointsCommand),
    /// What runs without asking ("always allow" answers, per workspace).
    #[command(subcommand)]
    Approvals(approvals::ApprovalsCommand),
    /// Check the set-up: toolchain, data dir, config, endpoints, caches,
    /// optional parts.
    Doctor(doctor::DoctorArgs),
    /// The configuration.
    #[command(subcommand)]
    Config(doctor::ConfigCommand),
    /// Serve the engine over HTTP: a REST API, live events, tenants.
    Serve(serve::ServeArgs),
    /// Tokens of `roost serve`: create, list, revoke.
    #[command(subcommand)]
    Token(serve::TokenCommand),
    /// The task store: where it is, and migrating its schema.
    #[command(subcommand)]
    Store(store::StoreCommand),
    /// Install and manage third-party tool plugins.
    Plugin(plugin::PluginArgs),
    /// MCP: the servers tasks use (list, trust), and Roost's tools served
    /// to other agents (serve).
    #[command(subcommand)]
    Mcp(mcp::McpCommand),
    /// List or call tools directly (debugging, scripts, benchmarks).
    #[command(subcommand)]
    Tool(tool::ToolCommand),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// `roost intents …`
#[derive(Debug, Subcommand)]
pub enum IntentsCommand {
    /// List the intents and their scopes.
    List(intents::IntentsArgs),
}

/// A workspace named on the command line: it must be an existing directory
/// (a file or a missing path is refused with a clear error).
pub fn workspace_dir(path: &std::path::Path) -> anyhow::Result<PathBuf> {
    use anyhow::Context;
    let ws = roost_sandbox::capability::Workspace::open(path).with_context(|| {
        format!(
            "workspace {} is not a directory Roost can open",
            path.display()
        )
    })?;
    Ok(ws.host_path().to_path_buf())
}

/// Where Roost keeps its data when no `--data-dir` is given.
pub fn default_data_dir() -> PathBuf {
    directories::ProjectDirs::from("", "", "roost")
        .map(|d| d.data_dir().to_path_buf())
        .unwrap_or_else(|| PathBuf::from(".roost"))
}

/// Logs on stderr. Asked for (`ROOST_LOG`), they are full log lines;
/// otherwise only warnings show, as short lines a person reads (no
/// timestamps or module paths in the middle of a task's output).
fn init_logging() {
    let asked = tracing_subscriber::EnvFilter::try_from_env("ROOST_LOG").ok();
    // Colour codes only for a person at a terminal, never in a log file.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_writer(line::LogWriter)
        .with_ansi(ansi);
    match asked {
        Some(filter) => builder.with_env_filter(filter).init(),
        None => builder
            .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
            .without_time()
            .with_target(false)
            .init(),
    }
}

/// Parse the command line, run it, and turn the outcome into an exit code.
pub fn main() -> ExitCode {
    // Inside a command's sandbox, before anything else.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == command_bridge::NAME) {
        return command_bridge::run(args.get(2..).unwrap_or_default());
    }
    let cli = Cli::parse();
    init_logging();
    let data_dir = cli.data_dir.clone().unwrap_or_else(default_data_dir);
    store::set_explicit(cli.store.clone());
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            line::to_stderr(&format!("error: cannot start the async runtime: {e}\n"));
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async {
        let Some(command) = cli.command else {
            return chat::run(cli.chat, &data_dir).await;
        };
        match command {
            Command::Chat(args) => chat::run(args, &data_dir).await,
            Command::Run(args) => run::run(args, &data_dir).await,
            Command::Resume(args) => run::resume(args, &data_dir).await,
            Command::History(cmd) => history::run(cmd, &data_dir),
            Command::Approvals(cmd) => approvals::run(cmd, &data_dir),
            Command::Checkpoints(cmd) => checkpoints::run(cmd, &data_dir).await,
            Command::Doctor(args) => doctor::run(args, &data_dir).await,
            Command::Config(cmd) => doctor::config(cmd),
            Command::Serve(args) => serve::serve(args, &data_dir).await,
            Command::Token(cmd) => serve::token(cmd, &data_dir),
            Command::Store(cmd) => store::run(cmd, &data_dir),
            Command::Modes(cmd) => modes::run(cmd),
            Command::Skills(cmd) => skills::run(cmd, &data_dir).await,
            Command::Mcp(cmd) => mcp::run(cmd, &data_dir).await,
            Command::Intents(IntentsCommand::List(args)) => intents::list(args),
            Command::Trace(args) => intents::trace(args),
            Command::Tool(cmd) => tool::run(cmd, &data_dir).await,
            Command::Plugin(cmd) => plugin::run(cmd, &data_dir),
            Command::Completions { shell } => {
                let mut cmd = <Cli as clap::CommandFactory>::command();
                let mut script = Vec::new();
                clap_complete::generate(shell, &mut cmd, "roost", &mut script);
                line::to_stdout(&String::from_utf8_lossy(&script));
                Ok(ExitCode::SUCCESS)
            }
        }
    });
    // Do not wait for blocking-pool threads (a store commit, a listing)
    // to wind down: their work is done or no longer wanted.
    rt.shutdown_background();
    match result {
        Ok(code) => code,
        Err(e) => {
            // Errors quote file names, plugin and server messages: shown, not interpreted.
            line::notice!("error: {}", sanitize::visible(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}
