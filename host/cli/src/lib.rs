//! The `roost` command line, the engine's first front-end: argument
//! parsing, terminal interaction and rendering. This is the binary's edge:
//! errors are `anyhow` here and become a message plus a non-zero exit code.

mod intents;
mod interact;
mod line;
mod modes;
mod plugin;
mod render;
mod run;
pub mod sanitize;
mod skills;
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
    /// Command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a task: stream the model, run tools, ask for approvals.
    Run(run::RunArgs),
    /// Continue an interrupted task from its history.
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
    /// Past tasks.
    #[command(subcommand)]
    History(run::HistoryCommand),
    /// Install and manage third-party tool plugins.
    Plugin(plugin::PluginArgs),
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

/// Parse the command line, run it, and turn the outcome into an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("ROOST_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(line::LogWriter)
        // Colour codes only for a person at a terminal, never in a log file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let data_dir = cli.data_dir.clone().unwrap_or_else(default_data_dir);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = rt.block_on(async {
        match cli.command {
            Command::Run(args) => run::run(args, &data_dir).await,
            Command::Resume(args) => run::resume(args, &data_dir).await,
            Command::History(cmd) => run::history(cmd, &data_dir),
            Command::Modes(cmd) => modes::run(cmd),
            Command::Skills(cmd) => skills::run(cmd, &data_dir).await,
            Command::Intents(IntentsCommand::List(args)) => intents::list(args),
            Command::Trace(args) => intents::trace(args),
            Command::Tool(cmd) => tool::run(cmd, &data_dir).await,
            Command::Plugin(cmd) => plugin::run(cmd, &data_dir),
            Command::Completions { shell } => {
                let mut cmd = <Cli as clap::CommandFactory>::command();
                clap_complete::generate(shell, &mut cmd, "roost", &mut std::io::stdout());
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
            eprintln!("error: {}", sanitize::visible(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}
