//! `roost acp`: Roost inside an editor (Zed, the JetBrains IDEs, Neovim)
//! over the Agent Client Protocol on stdio. The editor starts it; standard
//! output then carries only ACP messages, and logs go to standard error.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::assemble::{ProviderArgs, RunOptions, engine};
use roost_core::config;

/// `roost acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// The directory every session's `cwd` must lie within (the editor's
    /// projects); by default the one `roost acp` starts in.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub workspace: PathBuf,
    /// The mode sessions start in.
    #[arg(long, default_value = "code", value_parser = super::modes::ModeSlug, hide_possible_values = true)]
    pub mode: String,
    /// Seconds an editor has to answer a permission request; past them
    /// the call is denied (an editor that shows no UI never hangs a task).
    #[arg(long, value_name = "SECONDS", default_value_t = 300)]
    pub ask_timeout: u64,
    /// The newest protocol version offered: 1, or 2 for the draft v2
    /// (a client asking for v1 still gets v1).
    #[arg(long, value_name = "VERSION", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub acp_version: u8,
    /// Model selection.
    #[command(flatten)]
    pub provider: ProviderArgs,
    /// Run options.
    #[command(flatten)]
    pub options: RunOptions,
}

/// Serve ACP on stdio until the editor closes it.
pub async fn acp(args: AcpArgs, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let root = Some(super::workspace_dir(&args.workspace)?);
    let approval = args.options.approval()?;
    let engine = engine(data_dir, &args.provider, &args.options)?;
    roost_server::acp::serve(
        engine,
        roost_server::acp::Settings {
            root,
            mode: args.mode,
            endpoint: args.provider.endpoint(),
            ask_timeout: Duration::from_secs(args.ask_timeout),
            modes_dir: config::default_path().parent().map(Path::to_path_buf),
            approval,
            max_turns: args.options.max_turns,
            draft_v2: args.acp_version == 2,
        },
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}
