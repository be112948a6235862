//! The `roost` command line, the engine's first front-end: argument
//! parsing, terminal interaction and rendering. This is the binary's edge:
//! errors are `anyhow` here and become a message plus a non-zero exit code.

// The task loop's futures (spans around every call) nest deeper than
// rustc's default layout limit.
#![recursion_limit = "256"]
// No unsafe code but in the modules that say why they need it.
#![deny(unsafe_code)]

mod acp;
mod approvals;
mod assemble;
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
mod paint;
mod plugin;
mod progress;
mod render;
mod run;
pub mod sanitize;
mod serve;
mod signals;
mod skills;
mod store;
mod template;
mod tool;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::{PathBufValueParser, Resettable, TypedValueParser};
use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

/// Roost: an agent host whose tools run as sandboxed WebAssembly components.
#[derive(Debug, Parser)]
#[command(name = "roost", version, about)]
pub struct Cli {
    /// Data directory (component cache, task store). Defaults to the
    /// platform's data dir, e.g. ~/.local/share/roost.
    #[arg(long, env = "ROOST_DATA_DIR", global = true, value_parser = AbsolutePath)]
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
    /// Be an agent inside an editor (Zed, JetBrains, Neovim) over the
    /// Agent Client Protocol on stdio.
    Acp(acp::AcpArgs),
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
    ///
    /// Put it where the shell looks, making the folder first:
    ///
    /// bash: mkdir -p ~/.local/share/bash-completion/completions && roost completions bash > ~/.local/share/bash-completion/completions/roost
    ///
    /// fish: mkdir -p ~/.config/fish/completions && roost completions fish > ~/.config/fish/completions/roost.fish
    ///
    /// zsh: mkdir -p ~/.zfunc && roost completions zsh > ~/.zfunc/_roost, with `fpath+=~/.zfunc` before `compinit` in ~/.zshrc
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// The options every command reads, wherever on the line they stand: the
/// data dir, the store and the config file (shown in every command's help).
const EVERYWHERE: [&str; 3] = ["data_dir", "store", "config"];

/// The command line `roost` parses. Every option of the conversation (what
/// `roost` alone takes: `--workspace`, `--mode`, `--profile`, `--yes`, …)
/// is defined once, on `roost` itself, and is global: given before a
/// command, it reaches the command that takes an option of that name
/// (`roost --workspace W skills list` is `roost skills list --workspace W`),
/// and is refused by a command that has none ([`check_options`]), never
/// dropped. Commands without such an option get a hidden stand-in, so
/// their help lists only what they take.
pub fn cli_command() -> clap::Command {
    let cmd = Cli::command().mut_args(|a| a.global(true));
    let stand_ins: Vec<Arg> = cmd
        .get_arguments()
        .filter(|a| !EVERYWHERE.contains(&a.get_id().as_str()))
        .map(|a| {
            a.clone()
                .global(false)
                .hide(true)
                .conflicts_with(Resettable::<clap::Id>::Reset)
                .requires(Resettable::<clap::Id>::Reset)
        })
        .collect();
    with_stand_ins(cmd, &stand_ins)
}

/// `cmd` with its subcommands (at every depth) given a stand-in for each of
/// `shared` they do not define themselves.
fn with_stand_ins(cmd: clap::Command, shared: &[Arg]) -> clap::Command {
    cmd.mut_subcommands(|sub| {
        let missing: Vec<Arg> = shared
            .iter()
            .filter(|a| !sub.get_arguments().any(|own| own.get_id() == a.get_id()))
            .cloned()
            .collect();
        with_stand_ins(sub.args(missing), shared)
    })
}

/// Refuse an option of the conversation given (before or after the
/// command) to a command that does not take it: the message names the
/// option and the command, e.g. "`--workspace` does not apply to `roost
/// history list`".
fn check_options(matches: &ArgMatches) -> Result<(), String> {
    let own = Cli::command();
    // The command named, with the commands it lies under.
    let mut path = vec![&own];
    let mut names = vec!["roost".to_owned()];
    let mut at = matches;
    while let Some((name, sub)) = at.subcommand() {
        let Some(next) = path.last().and_then(|c| c.find_subcommand(name)) else {
            break;
        };
        path.push(next);
        names.push(name.to_owned());
        at = sub;
    }
    if path.len() == 1 {
        return Ok(());
    }
    let takes = |id: &clap::Id| {
        path.iter()
            .skip(1)
            .any(|c| c.get_arguments().any(|a| a.get_id() == id))
    };
    for arg in own.get_arguments() {
        let id = arg.get_id();
        if EVERYWHERE.contains(&id.as_str())
            || matches.value_source(id.as_str()) != Some(ValueSource::CommandLine)
            || takes(id)
        {
            continue;
        }
        let spelled = arg
            .get_long()
            .map(|l| format!("--{l}"))
            .unwrap_or_else(|| id.to_string());
        let command = names.join(" ");
        return Err(format!(
            "`{spelled}` does not apply to `{command}` (`{command} --help` lists what it takes)"
        ));
    }
    Ok(())
}

/// The command line, parsed (and checked by [`check_options`]); a
/// mistake exits with clap's message and code 2.
fn parse() -> Cli {
    let mut cmd = cli_command();
    let matches = cmd.get_matches_mut();
    if let Err(msg) = check_options(&matches) {
        // Said with the usage of the command named.
        let mut at = &matches;
        let mut leaf = &cmd;
        while let Some((name, sub)) = at.subcommand() {
            let Some(next) = leaf.find_subcommand(name) else {
                break;
            };
            leaf = next;
            at = sub;
        }
        leaf.clone().error(ErrorKind::ArgumentConflict, msg).exit();
    }
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.format(&mut cmd).exit())
}

/// A path option made absolute against the current directory where it is
/// read (a relative `ROOST_DATA_DIR` would reach bubblewrap, git and the
/// store as a path relative to wherever they run).
#[derive(Debug, Clone, Copy)]
pub struct AbsolutePath;

impl TypedValueParser for AbsolutePath {
    type Value = PathBuf;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&Arg>,
        value: &OsStr,
    ) -> Result<PathBuf, clap::Error> {
        let path = PathBufValueParser::new().parse_ref(cmd, arg, value)?;
        std::path::absolute(&path).map_err(|e| {
            let name = arg.map(ToString::to_string).unwrap_or_default();
            clap::Error::raw(
                ErrorKind::ValueValidation,
                format!("{name}: cannot make {} absolute: {e}\n", path.display()),
            )
        })
    }
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

/// Where telemetry goes: the standard variables over the config file's
/// `[telemetry]` table (a config that cannot be read is the command's to
/// report; telemetry then follows the variables alone); `prometheus`:
/// keep metrics for `roost serve --metrics`.
fn telemetry_config(
    config: Option<&std::path::Path>,
    prometheus: bool,
) -> roost_core::telemetry::TelemetryConfig {
    let mut t = roost_core::telemetry::TelemetryConfig::from_env();
    if let Ok(file) = roost_core::config::load(config) {
        t = t.with_table(&file.telemetry, |k| std::env::var_os(k).is_some());
    }
    t.prometheus = prometheus;
    t
}

/// Parse the command line, run it, and turn the outcome into an exit code.
pub fn main() -> ExitCode {
    // Inside a command's sandbox, before anything else.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == command_bridge::NAME) {
        return command_bridge::run(args.get(2..).unwrap_or_default());
    }
    if args
        .get(1)
        .is_some_and(|a| a == roost_core::commands::policy::isolated::NAME)
    {
        return roost_core::commands::policy::isolated::serve(args.get(2..).unwrap_or_default());
    }
    let cli = parse();
    init_logging();
    let data_dir = cli.data_dir.clone().unwrap_or_else(default_data_dir);
    // The config in effect: `--config` wherever it stood, or ROOST_CONFIG.
    let config = cli.chat.provider.config.clone();
    store::set_explicit(cli.store.clone(), config.clone());
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
    // Traces go where the standard OpenTelemetry variables say (nowhere
    // by default); every command's tasks are in them.
    let telemetry = rt.block_on(async {
        match roost_core::telemetry::Telemetry::start(&telemetry_config(
            config.as_deref(),
            matches!(&cli.command, Some(Command::Serve(a)) if a.metrics),
        )) {
            Ok(t) => Some(t),
            Err(e) => {
                line::notice!("warning: telemetry is off: {e}");
                None
            }
        }
    });
    let result = rt.block_on(async {
        let Some(command) = cli.command else {
            return chat::run(cli.chat, &data_dir).await;
        };
        match command {
            Command::Chat(args) => chat::run(args, &data_dir).await,
            Command::Run(args) => run::run(args, &data_dir).await,
            Command::Resume(args) => run::resume(args, &data_dir).await,
            Command::History(cmd) => history::run(cmd, &data_dir).await,
            Command::Approvals(cmd) => approvals::run(cmd, &data_dir),
            Command::Checkpoints(cmd) => checkpoints::run(cmd, &data_dir).await,
            Command::Doctor(args) => doctor::run(args, &data_dir).await,
            Command::Config(cmd) => doctor::config(cmd, config.as_deref()),
            Command::Serve(args) => {
                let scrape = telemetry.as_ref().and_then(|t| t.scrape());
                serve::serve(args, &data_dir, scrape).await
            }
            Command::Acp(args) => acp::acp(args, &data_dir).await,
            Command::Token(cmd) => serve::token(cmd, &data_dir),
            Command::Store(cmd) => store::run(cmd, &data_dir),
            Command::Modes(cmd) => modes::run(cmd),
            Command::Skills(cmd) => skills::run(cmd, &data_dir).await,
            Command::Mcp(cmd) => mcp::run(cmd, &data_dir).await,
            Command::Intents(IntentsCommand::List(args)) => intents::list(args),
            Command::Trace(args) => intents::trace(args),
            Command::Tool(cmd) => tool::run(cmd, &data_dir).await,
            Command::Plugin(cmd) => plugin::run(cmd, &data_dir).await,
            Command::Completions { shell } => {
                let mut cmd = cli_command();
                let mut script = Vec::new();
                clap_complete::generate(shell, &mut cmd, "roost", &mut script);
                line::to_stdout(&String::from_utf8_lossy(&script));
                Ok(ExitCode::SUCCESS)
            }
        }
    });
    // What is queued is sent (bounded by the exporter's timeout).
    if let Some(t) = telemetry {
        rt.block_on(async { tokio::task::spawn_blocking(move || t.shutdown()).await.ok() });
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own checks (unique names, relations that exist) on the
    /// whole tree, stand-ins included.
    #[test]
    fn the_command_line_is_well_formed() {
        cli_command().debug_assert();
    }

    /// A value given before a command is read through the command's own
    /// definition of the option: both must hold the same kind of value.
    #[test]
    fn a_shared_option_holds_one_kind_of_value_everywhere() {
        fn walk(cmd: &clap::Command, top: &clap::Command) {
            for sub in cmd.get_subcommands() {
                for a in sub.get_arguments() {
                    if let Some(t) = top.get_arguments().find(|t| t.get_id() == a.get_id()) {
                        assert_eq!(
                            t.get_value_parser().type_id(),
                            a.get_value_parser().type_id(),
                            "--{} of {}",
                            a.get_id(),
                            sub.get_name()
                        );
                    }
                }
                walk(sub, top);
            }
        }
        let top = Cli::command();
        walk(&top, &top);
    }

    fn parsed(args: &[&str]) -> Result<Cli, String> {
        let mut cmd = cli_command();
        let m = cmd
            .try_get_matches_from_mut(args)
            .map_err(|e| e.to_string())?;
        check_options(&m)?;
        Cli::from_arg_matches(&m).map_err(|e| e.to_string())
    }

    /// Before or after the command, the same; a command without the
    /// option refuses it by name.
    #[test]
    fn options_before_the_command_reach_it() {
        let Some(Command::Run(run)) = parsed(&[
            "roost",
            "--workspace",
            "w",
            "--mode",
            "ask",
            "--yes",
            "run",
            "hi",
        ])
        .unwrap()
        .command
        else {
            panic!("not run");
        };
        assert_eq!(run.workspace, PathBuf::from("w"));
        assert_eq!(run.mode.as_deref(), Some("ask"));
        assert!(run.options.yes);
        // Not given anywhere: the command's own default, not the
        // conversation's.
        let Some(Command::Run(run)) = parsed(&["roost", "run", "hi"]).unwrap().command else {
            panic!("not run");
        };
        assert_eq!(run.mode, None);
        let e = parsed(&["roost", "--workspace", "w", "history", "list"])
            .err()
            .unwrap();
        assert!(
            e.contains("`--workspace` does not apply to `roost history list`"),
            "{e}"
        );
        let e = parsed(&["roost", "history", "list", "--yes"])
            .err()
            .unwrap();
        assert!(e.contains("`--yes` does not apply"), "{e}");
    }
}
