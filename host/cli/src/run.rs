//! `roost run`, `roost resume` and `roost history`.

use super::line::notice;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;

use super::assemble::{DelegationArgs, ProviderArgs, RunOptions, engine};
use super::drive::{Drive, Ended, Signal};
use super::interact::Terminal;
use super::sanitize::visible_line;
use roost_core::engine::{Engine, ResumeSpec, TaskSpec};
use roost_core::session::{Owner, Session};
use roost_core::task::TaskOutcome;

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
    let created = Session::new(&engine, Owner::Host)
        .create(&TaskSpec {
            prompt,
            workspace: workspace.clone(),
            mode: args.mode.clone().unwrap_or_else(|| "code".to_owned()),
            approval,
            max_turns: args.options.max_turns,
            delegation: args.delegation.limits(),
            endpoint: args.provider.endpoint(),
            // Run from a traced job (CI), the task's trace continues it.
            traceparent: std::env::var("TRACEPARENT").ok(),
        })
        .await?;
    drive_to_end(&engine, created.id(), &args.options, &workspace).await
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
    let session = Session::new(&engine, Owner::Host);
    let prepared = session
        .resume(
            &id,
            &ResumeSpec {
                endpoint: args.provider.endpoint(),
                approval,
                max_turns: args.options.max_turns,
                message: args.message.clone(),
                mode: args.mode.clone(),
            },
        )
        .await?;
    if let Some(change) = &prepared.endpoint_change {
        notice!(
            "resuming task {} on {}",
            visible_line(&prepared.id),
            visible_line(change)
        );
    }
    let workspace = PathBuf::from(session.task(&prepared.id).await?.task.workspace);
    drive_to_end(&engine, &prepared.id, &args.options, &workspace).await
}
