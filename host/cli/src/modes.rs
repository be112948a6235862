//! `roost modes list`: the modes a workspace sees, and problems in its mode files.

use super::line::{notice, outln};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};

use super::sanitize::{json_text, visible, visible_line};
use roost_core::modes::{ModeSet, ModeSource};

/// The built-in modes' slugs, as shell completion offers them.
const BUILT_IN: [&str; 5] = ["code", "architect", "ask", "debug", "orchestrator"];

/// A mode's slug on the command line (`--mode`): any slug is taken (a
/// project's `.roomodes` or the global `custom_modes.yaml` may define it,
/// and the task says when none does); shell completion offers the built-in
/// modes instead of file names.
#[derive(Debug, Clone, Copy)]
pub struct ModeSlug;

impl TypedValueParser for ModeSlug {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(BUILT_IN.into_iter().map(PossibleValue::new)))
    }
}

/// `roost modes …`
#[derive(Debug, Subcommand)]
pub enum ModesCommand {
    /// Built-in, global and project modes, after overrides.
    List {
        /// Workspace whose `.roomodes` to read.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Run a `roost modes` command.
pub fn run(cmd: ModesCommand) -> anyhow::Result<ExitCode> {
    let ModesCommand::List { workspace, json } = cmd;
    let workspace = super::workspace_dir(&workspace)?;
    let config_dir = roost_core::config::default_path()
        .parent()
        .map(Path::to_path_buf);
    let set = ModeSet::load(&workspace, config_dir.as_deref());
    if json {
        let modes: Vec<_> = set.iter().collect();
        outln!("{}", json_text(&serde_json::to_string_pretty(&modes)?));
    } else {
        // Modes come from workspace and global files: shown, not interpreted.
        for m in set.iter() {
            let groups: Vec<String> = m
                .groups
                .iter()
                .map(|g| match &g.file_regex {
                    Some(r) => format!("{}({})", g.group, r.as_str()),
                    None => g.group.to_string(),
                })
                .collect();
            let source = match &m.source {
                ModeSource::BuiltIn => "built-in".to_owned(),
                ModeSource::Global(p) | ModeSource::Project(p) => p.display().to_string(),
            };
            let hooks = if m.hooks.is_empty() {
                String::new()
            } else {
                format!("  hooks: {}", m.hooks.join(", "))
            };
            outln!(
                "{:<14} {:<22} {:<40} {}{}",
                visible_line(&m.slug),
                visible_line(&m.name),
                visible_line(&groups.join(",")),
                visible_line(&source),
                visible_line(&hooks)
            );
        }
    }
    for e in &set.errors {
        notice!("warning: {}", visible(&e.to_string()));
    }
    Ok(if set.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Completion offers exactly the built-in modes.
    #[test]
    fn completion_offers_the_built_in_modes() {
        let dir = tempfile::tempdir().unwrap();
        let mut built_in: Vec<String> = ModeSet::load(dir.path(), None)
            .iter()
            .map(|m| m.slug.clone())
            .collect();
        let mut offered: Vec<String> = BUILT_IN.iter().map(|s| (*s).to_owned()).collect();
        built_in.sort();
        offered.sort();
        assert_eq!(offered, built_in);
    }
}
