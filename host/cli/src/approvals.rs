//! `roost approvals`: the "always allow" answers saved per workspace, in
//! Roost's data dir (never in the workspace: a repository cannot grant
//! itself anything).

use super::line::outln;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;
use clap::Subcommand;

use super::sanitize::visible_line;
use roost_core::engine::Approvals;
use roost_core::tools::ToolGroup;
use roost_protocol::Grant;

/// `roost approvals …`
#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// What runs without asking in a workspace (or in every one).
    List {
        /// Workspace directory.
        #[arg(long, default_value = ".", conflicts_with = "all")]
        workspace: PathBuf,
        /// Every workspace.
        #[arg(long)]
        all: bool,
    },
    /// Take back a saved approval: a tool (`write_to_file`) or a group
    /// (`group:edit`).
    Revoke {
        /// `TOOL` or `group:GROUP`; `--all` takes back every one.
        #[arg(required_unless_present = "all")]
        what: Option<String>,
        /// Every approval saved for the workspace.
        #[arg(long)]
        all: bool,
        /// Workspace directory.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
}

/// `group:edit` → the group, anything else → a tool.
fn parse_grant(what: &str) -> anyhow::Result<Grant> {
    match what.strip_prefix("group:") {
        Some(g) => match ToolGroup::parse(g) {
            Some(g) => Ok(Grant::Group(g)),
            None => bail!("unknown tool group `{g}` (read, edit, command, browser, mcp, modes)"),
        },
        None if what.trim().is_empty() => bail!("name a tool, or `group:GROUP`"),
        None => Ok(Grant::Tool(what.to_owned())),
    }
}

/// How a grant is written on the command line.
fn spelled(grant: &Grant) -> String {
    match grant {
        Grant::Tool(t) => t.clone(),
        Grant::Group(g) => format!("group:{g}"),
    }
}

/// `roost approvals`.
pub fn run(cmd: ApprovalsCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let approvals = Approvals::open(&super::store::location_default(data_dir))?;
    match cmd {
        ApprovalsCommand::List { workspace, all } => {
            let ws = (!all)
                .then(|| super::workspace_dir(&workspace))
                .transpose()?;
            let saved = approvals.list(ws.as_deref())?;
            if saved.is_empty() {
                match &ws {
                    Some(ws) => outln!(
                        "nothing is always allowed in {} (answer `a` or `g` to an approval to save one)",
                        visible_line(&ws.display().to_string())
                    ),
                    None => outln!("no saved approvals"),
                }
            }
            let mut current = None;
            for s in saved {
                if current.as_deref() != Some(s.workspace.as_str()) {
                    outln!("{}", visible_line(&s.workspace));
                    current = Some(s.workspace.clone());
                }
                outln!("  {}", visible_line(&spelled(&s.grant)));
            }
        }
        ApprovalsCommand::Revoke {
            what,
            all,
            workspace,
        } => {
            let ws = super::workspace_dir(&workspace)?;
            let grants = if all {
                approvals
                    .list(Some(&ws))?
                    .into_iter()
                    .map(|s| s.grant)
                    .collect()
            } else {
                vec![parse_grant(what.as_deref().unwrap_or(""))?]
            };
            let mut revoked = 0usize;
            for g in &grants {
                if approvals.revoke(&ws, g)? {
                    revoked += 1;
                    outln!("revoked {}", visible_line(&spelled(g)));
                } else {
                    bail!(
                        "{} is not always allowed in {} (`roost approvals list` shows what is)",
                        visible_line(&spelled(g)),
                        visible_line(&ws.display().to_string())
                    );
                }
            }
            if all && revoked == 0 {
                outln!("nothing to revoke");
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_spelled_as_they_are_parsed() {
        for g in [
            Grant::Tool("write_to_file".into()),
            Grant::Group(ToolGroup::Edit),
        ] {
            assert_eq!(parse_grant(&spelled(&g)).expect("parses"), g);
        }
        assert!(parse_grant("group:launch").is_err());
        assert!(parse_grant(" ").is_err());
    }
}
