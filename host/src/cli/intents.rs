//! `roost intents list` and `roost trace`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use crate::intents::{self, Trace};

/// `roost intents list`.
#[derive(Debug, Args)]
pub struct IntentsArgs {
    /// Workspace.
    #[arg(long, default_value = ".")]
    pub workspace: PathBuf,
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
    if !intents::enabled(&args.workspace) {
        println!(
            "intents are off: {} has no .orchestration/ directory",
            args.workspace.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    for i in intents::load(&args.workspace)? {
        println!(
            "{:<10} {:<12} {:<40} {}",
            i.id,
            i.status,
            i.name,
            i.owned_scope.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Show the agent trace.
pub fn trace(args: TraceArgs) -> anyhow::Result<ExitCode> {
    let (entries, bad) = Trace::of(&args.workspace)
        .read(args.intent.as_deref())
        .context("cannot read the agent trace")?;
    for e in &entries {
        if args.json {
            println!("{}", serde_json::to_string(e)?);
            continue;
        }
        println!(
            "{} {:<9} {:<8} {:<10} {} {}",
            e.time,
            e.kind,
            e.intent_id.as_deref().unwrap_or("-"),
            e.tool,
            e.args_summary,
            e.detail.as_deref().unwrap_or("")
        );
        for f in &e.files {
            let short = |h: &Option<String>| {
                h.as_deref()
                    .map_or("(none)".to_owned(), |h| h[..12.min(h.len())].to_owned())
            };
            println!(
                "    {} {} → {} ({} lines)",
                f.path,
                short(&f.sha256_before),
                short(&f.sha256_after),
                f.lines_changed
            );
        }
    }
    if bad > 0 {
        eprintln!("warning: {bad} trace lines could not be read");
    }
    Ok(ExitCode::SUCCESS)
}
