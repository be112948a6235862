//! `roost checkpoints list|diff|restore`: a task's snapshots of its
//! workspace, what changed since one, and going back to one — the files
//! (what commands changed included), the conversation, or both.

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::assemble::{ProviderArgs, RunOptions};
use super::line::outln;
use super::sanitize::{visible, visible_line};
use roost_protocol::RestoreMode;

/// `roost checkpoints …`
#[derive(Debug, Subcommand)]
pub enum CheckpointsCommand {
    /// A task's checkpoints, oldest first.
    List {
        /// Task id (or a unique prefix).
        task: String,
        /// One JSON object per checkpoint.
        #[arg(long)]
        json: bool,
    },
    /// What changed in the workspace since a checkpoint.
    Diff {
        /// Task id (or a unique prefix).
        task: String,
        /// The checkpoint's id (`list` shows them).
        checkpoint: u32,
    },
    /// Go back to a checkpoint.
    Restore(RestoreArgs),
}

/// `roost checkpoints restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Task id (or a unique prefix).
    task: String,
    /// The checkpoint's id.
    checkpoint: u32,
    /// Only the files.
    #[arg(long, conflicts_with_all = ["conversation_only", "both"])]
    files_only: bool,
    /// Only the conversation.
    #[arg(long, conflicts_with = "both")]
    conversation_only: bool,
    /// Files and conversation (the default).
    #[arg(long)]
    both: bool,
    /// Also overwrite files someone else changed since the task did.
    #[arg(long)]
    force: bool,
    /// Print what was done as JSON.
    #[arg(long)]
    json: bool,
}

/// Run a `roost checkpoints` command.
pub async fn run(cmd: CheckpointsCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let engine =
        super::assemble::engine(data_dir, &ProviderArgs::default(), &RunOptions::default())?;
    match cmd {
        CheckpointsCommand::List { task, json } => {
            let (id, list) = engine.checkpoints(&task)?;
            if json {
                for c in &list {
                    outln!("{}", serde_json::to_string(c)?);
                }
            } else if list.is_empty() {
                outln!("task {id} has no checkpoints (it changed nothing yet)");
            } else {
                outln!("{:>3}  {:<4}  CREATED", "ID", "TURN");
                for c in &list {
                    let at = humantime::format_rfc3339_seconds(
                        std::time::UNIX_EPOCH
                            + std::time::Duration::from_millis(
                                u64::try_from(c.created_at).unwrap_or(0),
                            ),
                    );
                    outln!("{:>3}  {:<4}  {at}", c.id, c.turn);
                }
            }
        }
        CheckpointsCommand::Diff { task, checkpoint } => {
            let diff = engine.checkpoint_diff(&task, checkpoint).await?;
            if diff.trim().is_empty() {
                outln!("nothing changed since checkpoint {checkpoint}");
            } else {
                outln!("{}", visible(diff.trim_end()));
            }
        }
        CheckpointsCommand::Restore(a) => {
            let mode = if a.files_only {
                RestoreMode::FilesOnly
            } else if a.conversation_only {
                RestoreMode::ConversationOnly
            } else {
                RestoreMode::Both
            };
            let report = engine
                .restore_checkpoint(&a.task, a.checkpoint, mode, a.force)
                .await?;
            if a.json {
                outln!("{}", serde_json::to_string(&report)?);
            } else {
                for p in &report.restored {
                    outln!("restored {}", visible_line(p));
                }
                for p in &report.removed {
                    outln!("removed  {}", visible_line(p));
                }
                if report.conversation {
                    outln!("the conversation is back at checkpoint {}", a.checkpoint);
                }
                for p in &report.conflicts {
                    outln!(
                        "conflict {}: changed by someone else since the task did; {}",
                        visible_line(p),
                        if a.force {
                            "overwritten (--force)"
                        } else {
                            "left alone (--force overwrites)"
                        }
                    );
                }
            }
            if !report.conflicts.is_empty() && !a.force {
                return Ok(ExitCode::from(3));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
