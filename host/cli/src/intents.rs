//! `roost intents list` and `roost trace`.

use super::line::{notice, outln};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::sanitize::{json_text, visible_line};
use roost_core::intents::{self, Trace};

/// `roost intents list`.
#[derive(Debug, Args)]
pub struct IntentsArgs {
    /// Workspace.
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// One JSON object per intent.
    #[arg(long)]
    pub json: bool,
}

/// `roost trace`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Workspace.
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
    /// Only entries of this intent.
    #[arg(long)]
    pub intent: Option<String>,
    /// Print raw JSON lines.
    #[arg(long)]
    pub json: bool,
}

/// List the workspace's intents.
pub fn list(args: IntentsArgs) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace_dir(&args.workspace)?;
    let args = IntentsArgs { workspace, ..args };
    if !intents::enabled(&args.workspace) {
        if args.json {
            return Ok(ExitCode::SUCCESS);
        }
        outln!(
            "intents are off: {} has no .orchestration/ directory",
            args.workspace.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    // Intents come from a workspace file: shown, not interpreted.
    for i in intents::load(&args.workspace)? {
        if args.json {
            outln!("{}", json_text(&serde_json::to_string(&i)?));
            continue;
        }
        outln!(
            "{:<10} {:<12} {:<40} {}",
            visible_line(&i.id),
            visible_line(&i.status),
            visible_line(&i.name),
            visible_line(&i.owned_scope.join(", "))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Show the agent trace.
pub fn trace(args: TraceArgs) -> anyhow::Result<ExitCode> {
    let workspace = super::workspace_dir(&args.workspace)?;
    let args = TraceArgs { workspace, ..args };
    let (entries, bad) = Trace::of(&args.workspace)
        .read(args.intent.as_deref())
        .context("cannot read the agent trace")?;
    for e in &entries {
        if args.json {
            outln!("{}", json_text(&serde_json::to_string(e)?));
            continue;
        }
        // The trace is a workspace file and quotes model-chosen arguments:
        // shown, not interpreted.
        outln!(
            "{} {:<9} {:<8} {:<10} {} {}",
            visible_line(&e.time),
            e.kind.as_str(),
            visible_line(e.intent_id.as_deref().unwrap_or("-")),
            visible_line(&e.tool),
            // Traces written before redaction existed are redacted on display.
            visible_line(&roost_secrets::redact(&e.args_summary)),
            visible_line(&roost_secrets::redact(e.detail.as_deref().unwrap_or("")))
        );
        for f in &e.files {
            let short = |h: &Option<String>| {
                h.as_deref().map_or("(none)".to_owned(), |h| {
                    visible_line(&h.chars().take(12).collect::<String>()).into_owned()
                })
            };
            outln!(
                "    {} {} → {} ({} lines)",
                visible_line(&f.path),
                short(&f.sha256_before),
                short(&f.sha256_after),
                f.lines_changed
            );
        }
    }
    if bad > 0 {
        notice!("warning: {bad} trace lines could not be read");
    }
    Ok(ExitCode::SUCCESS)
}
