//! `roost skills list|show|validate`: the skills a workspace's tasks see
//! (after overrides), one skill in full, and a skill folder checked
//! against the Agent Skills specification before it is shared.

use super::line::{notice, outln};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;

use super::sanitize::{json_text, visible, visible_line};
use roost_core::first_party;
use roost_core::skills::{self, Catalog, Skill, SkillLibrary, Sources};
use roost_sandbox::plugins::PluginEngine;

/// `roost skills …`
#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// The skills a task in a mode sees, what each overrides, and the
    /// skills that were skipped and why.
    List {
        /// The mode whose skills to list (its own `skills-<mode>` folders
        /// and the generic ones).
        #[arg(
            long,
            default_value = "code",
            value_parser = super::modes::ModeSlug,
            hide_possible_values = true
        )]
        mode: String,
        /// Workspace whose project skills to read.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
        /// Print as JSON.
        #[arg(long)]
        json: bool,
    },
    /// One skill: its fields, folder, files, entries and instructions.
    Show {
        /// The skill's name.
        name: String,
        /// The mode whose skills to look in.
        #[arg(
            long,
            default_value = "code",
            value_parser = super::modes::ModeSlug,
            hide_possible_values = true
        )]
        mode: String,
        /// Workspace whose project skills to read.
        #[arg(long, default_value = ".")]
        workspace: PathBuf,
    },
    /// Check a skill folder (or a folder of skill folders) against the
    /// specification, and its component if it ships one.
    Validate {
        /// The folder.
        dir: PathBuf,
    },
}

/// Where global skills live for this user.
pub fn sources() -> Sources {
    Sources::from_env(
        roost_core::config::default_path()
            .parent()
            .map(Path::to_path_buf),
    )
}

/// Run a `roost skills` command.
pub async fn run(cmd: SkillsCommand, data_dir: &Path) -> anyhow::Result<ExitCode> {
    match cmd {
        SkillsCommand::List {
            mode,
            workspace,
            json,
        } => list(&mode, &workspace, json),
        SkillsCommand::Show {
            name,
            mode,
            workspace,
        } => show(&name, &mode, &workspace, data_dir).await,
        SkillsCommand::Validate { dir } => validate(&dir, data_dir).await,
    }
}

/// The skills a workspace's tasks see (the workspace opened through the
/// capability layer, as `roost run` opens it).
pub(crate) fn catalog(workspace: &Path) -> anyhow::Result<Catalog> {
    let workspace = super::workspace_dir(workspace)?;
    let ws = std::fs::canonicalize(&workspace).unwrap_or(workspace);
    Ok(Catalog::scan(&sources(), &ws))
}

fn list(mode: &str, workspace: &Path, json: bool) -> anyhow::Result<ExitCode> {
    let catalog = catalog(workspace)?;
    let seen = catalog.for_mode(mode);
    if json {
        let skills: Vec<serde_json::Value> = seen
            .available
            .iter()
            .map(|s| {
                let overrides: Vec<String> = seen
                    .overridden
                    .iter()
                    .filter(|(_, w)| Arc::ptr_eq(w, s))
                    .map(|(l, _)| l.path.display().to_string())
                    .collect();
                let mut v = serde_json::to_value(s.as_ref()).unwrap_or_default();
                v["overrides"] = serde_json::json!(overrides);
                v
            })
            .collect();
        let out = serde_json::json!({
            "mode": mode,
            "skills": skills,
            "issues": catalog.issues(),
        });
        outln!("{}", json_text(&serde_json::to_string_pretty(&out)?));
    } else {
        if seen.available.is_empty() {
            outln!("no skills for mode {}", visible_line(mode));
        } else {
            outln!(
                "{:<28} {:<14} {:<DESC_WIDTH$} FOLDER",
                "SKILL",
                "ORIGIN",
                "DESCRIPTION"
            );
        }
        // Names, descriptions and paths come from skill files: shown, not
        // interpreted. A description is cut at a word; a folder is whole.
        for s in &seen.available {
            let desc = format!(
                "{}{}",
                if s.component { "[entries] " } else { "" },
                visible_line(first_line(&s.manifest.description))
            );
            outln!(
                "{:<28} {:<14} {:<DESC_WIDTH$} {}",
                visible_line(s.name()),
                origin(s),
                super::line::fit(&desc, DESC_WIDTH),
                visible_line(&s.path.display().to_string())
            );
            for (lost, _) in seen.overridden.iter().filter(|(_, w)| Arc::ptr_eq(w, s)) {
                outln!(
                    "{:<28}   overrides {} ({})",
                    "",
                    visible_line(&lost.path.display().to_string()),
                    origin(lost)
                );
            }
        }
    }
    for i in catalog.issues() {
        notice!("warning: skill skipped: {}", visible(&i.to_string()));
    }
    Ok(if catalog.issues().is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Columns of a description in `skills list`.
const DESC_WIDTH: usize = 50;

/// A text's first line.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

fn origin(s: &Skill) -> String {
    match &s.mode {
        Some(m) => format!("{}:{}", s.origin, visible_line(m)),
        None => s.origin.to_string(),
    }
}

/// The plugin runtime on the data directory's cache, for a skill's
/// component.
fn runtime(data_dir: &Path) -> anyhow::Result<Arc<PluginEngine>> {
    Ok(Arc::new(PluginEngine::new(first_party::engine_config(
        data_dir.join("cache").join("components"),
    ))?))
}

async fn show(
    name: &str,
    mode: &str,
    workspace: &Path,
    data_dir: &Path,
) -> anyhow::Result<ExitCode> {
    let catalog = catalog(workspace)?;
    let seen = catalog.for_mode(mode);
    let Some(skill) = seen.get(name) else {
        let names: Vec<&str> = seen.available.iter().map(|s| s.name()).collect();
        anyhow::bail!(
            "no skill `{name}` for mode {mode} (available: {})",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        );
    };
    print_skill(skill, data_dir).await?;
    for (lost, _) in seen
        .overridden
        .iter()
        .filter(|(_, w)| Arc::ptr_eq(w, skill))
    {
        outln!(
            "overrides:    {} ({})",
            visible_line(&lost.path.display().to_string()),
            origin(lost)
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn print_skill(skill: &Skill, data_dir: &Path) -> anyhow::Result<()> {
    let m = &skill.manifest;
    outln!("name:         {}", visible_line(&m.name));
    outln!("description:  {}", visible_line(&m.description));
    outln!("origin:       {}", origin(skill));
    outln!(
        "folder:       {}",
        visible_line(&skill.path.display().to_string())
    );
    if let Some(l) = &m.license {
        outln!("license:      {}", visible_line(l));
    }
    if let Some(c) = &m.compatibility {
        outln!("compatibility: {}", visible_line(c));
    }
    for (k, v) in &m.metadata {
        outln!("metadata:     {} = {}", visible_line(k), visible_line(v));
    }
    if let Some(t) = &m.allowed_tools {
        outln!(
            "allowed-tools (experimental): {}",
            visible_line(&t.join(" "))
        );
    }
    if skill.component {
        let library = SkillLibrary::new(Sources::default());
        match library.component(&runtime(data_dir)?, skill).await {
            Ok(c) => {
                for e in c.entries() {
                    outln!(
                        "entry:        {}: {}",
                        visible_line(&e.name),
                        visible_line(&e.description)
                    );
                }
            }
            Err(e) => outln!("component:    unusable: {}", visible_line(&e.to_string())),
        }
    }
    outln!("\n{}", visible(&skill.body));
    Ok(())
}

async fn validate(dir: &Path, data_dir: &Path) -> anyhow::Result<ExitCode> {
    let folders: Vec<PathBuf> = if dir.join("SKILL.md").symlink_metadata().is_ok() {
        vec![dir.to_path_buf()]
    } else {
        let mut subs: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", dir.display()))?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        subs.sort();
        if subs.is_empty() {
            anyhow::bail!("{} holds no SKILL.md and no skill folders", dir.display());
        }
        subs
    };
    let mut bad = 0;
    let mut engine = None;
    for folder in folders {
        match skills::validate(&folder) {
            Ok(skill) => {
                let mut problems = Vec::new();
                if skill.component {
                    let runtime = match &engine {
                        Some(e) => Arc::clone(e),
                        None => {
                            let e = runtime(data_dir)?;
                            engine = Some(Arc::clone(&e));
                            e
                        }
                    };
                    let library = SkillLibrary::new(Sources::default());
                    if let Err(e) = library.component(&runtime, &skill).await {
                        problems.push(e.to_string());
                    }
                }
                for f in &skill.manifest.unknown {
                    notice!(
                        "warning: {}: `{}` is not a field of the specification; it is ignored",
                        visible_line(&folder.join("SKILL.md").display().to_string()),
                        visible_line(f)
                    );
                }
                if problems.is_empty() {
                    outln!("ok: {}", visible_line(&skill.path.display().to_string()));
                } else {
                    bad += 1;
                    for p in problems {
                        outln!("invalid: {}", visible_line(&p));
                    }
                }
            }
            Err(issues) => {
                bad += 1;
                for i in issues {
                    outln!("invalid: {}", visible_line(&i.to_string()));
                }
            }
        }
    }
    Ok(if bad == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
