//! `read_skill(name?, path?)`: the instructions of a skill (its `SKILL.md`
//! body) or a file inside its folder, read by the host — read-only,
//! size-capped, no link followed — so a global skill is readable without
//! widening any file grant. Without a name it lists every skill of the
//! task's mode (those the prompt had no room for too). A load is traced
//! and announced; a skill with `allowed-tools` limits what the model may
//! call while following it (experimental).

use std::ffi::OsStr;
use std::sync::Arc;

use serde_json::{Value, json};

use super::{in_mode, unknown};
use crate::events::TaskEvent;
use crate::intents::{self, TraceEntry};
use crate::skills::{Catalog, Skill, SkillFocus};
use crate::tools::HOST;
use crate::tools::executor::{Effect, Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{RunState, TaskError};
use roost_protocol::{ErrorCode, ToolGroup, ToolSpec, TraceKind};
use roost_sandbox::capability::RelPath;
use roost_sandbox::capability::dirfd::{DirFd, Kind};

/// Name of the tool that loads a skill.
pub const NAME: &str = "read_skill";
/// Largest file of a skill's folder read.
const MAX_FILE: u64 = 256 << 10;
/// Most entries of a skill's folder listed.
const MAX_LISTED: usize = 100;
/// Deepest a skill's folder is listed.
const MAX_DEPTH: usize = 3;

/// The `read_skill` tool over a workspace's skills.
pub(super) struct ReadSkill {
    spec: ToolSpec,
    catalog: Arc<Catalog>,
}

impl ReadSkill {
    pub(super) fn new(catalog: Arc<Catalog>) -> Self {
        Self {
            spec: host_spec(
                NAME,
                ToolGroup::Read,
                "Load a skill: its instructions (SKILL.md), or with `path` a file inside its folder \
                    (a reference or template its instructions name). Without `name`, list every skill \
                    available in this mode.",
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "The skill's name, as listed."},
                        "path": {"type": "string", "description": "A file inside the skill's folder, relative to it."}
                    },
                    "additionalProperties": false
                }),
            ),
            catalog,
        }
    }
}

#[async_trait::async_trait]
impl ToolExecutor for ReadSkill {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> crate::tools::ToolKind {
        crate::tools::ToolKind::Skill
    }

    fn provider(&self) -> &str {
        HOST
    }

    /// Every mode may load its skills (the skills are filtered by mode).
    fn always_available(&self) -> bool {
        true
    }

    /// It reads only instructions the user installed as skills.
    fn needs(&self, _state: &RunState, _args: &Value) -> Needs {
        Needs::Nothing
    }

    async fn run(&self, c: Invocation<'_>) -> Result<Outcome, TaskError> {
        let skills = in_mode(&self.catalog, c.state);
        let cap = c.ctx.config.limits.output_bytes;
        let Some(name) = c.args.get("name").and_then(Value::as_str) else {
            return Ok(Outcome::ok(list(&skills.available, cap)));
        };
        let Some(skill) = skills.get(name) else {
            return Ok(Outcome::mistake(unknown(name, &c.state.mode.slug, &skills)));
        };
        let path = c.args.get("path").and_then(Value::as_str);
        let text = match path {
            None => instructions(&c, skill).await,
            Some(p) => match read_file(skill, p) {
                Ok(t) => t,
                Err(outcome) => return Ok(*outcome),
            },
        };
        c.ctx
            .events
            .publish(TaskEvent::SkillLoaded {
                skill: skill.name().to_owned(),
                path: path.map(str::to_owned),
                origin: skill.origin.to_string(),
            })
            .await;
        tracing::info!(task = %c.ctx.task.id, skill = skill.name(), path, "skill loaded");
        let mut outcome = Outcome::ok(text);
        if intents::enabled_in(&c.ctx.ws) {
            let mut entry = TraceEntry::now(
                TraceKind::SkillLoaded,
                &c.ctx.task.id,
                c.state.intent_id(),
                &c.state.mode.slug,
                NAME,
                c.args,
            );
            entry.detail = Some(format!("{} skill {}", skill.origin, skill.path.display()));
            outcome.trace.push(entry);
        }
        if path.is_none() {
            let focus = skill
                .manifest
                .allowed_tools
                .as_ref()
                .map(|tools| SkillFocus {
                    skill: skill.name().to_owned(),
                    tools: tools.clone(),
                });
            outcome = outcome.with_effect(Effect::FollowSkill(focus));
        }
        Ok(outcome)
    }
}

/// Every skill of the mode, one line each, within `cap` bytes.
fn list(skills: &[Arc<Skill>], cap: usize) -> String {
    if skills.is_empty() {
        return "No skills are available in this mode.".to_owned();
    }
    let mut out = format!("{} skills are available in this mode:\n", skills.len());
    for (i, s) in skills.iter().enumerate() {
        let d: String = s.manifest.description.chars().take(160).collect();
        let line = format!(
            "- {} ({}{}): {}\n",
            s.name(),
            s.origin,
            if s.component { ", has entries" } else { "" },
            d.replace('\n', " ")
        );
        if out.len() + line.len() + 64 > cap {
            out.push_str(&format!("… and {} more\n", skills.len() - i));
            break;
        }
        out.push_str(&line);
    }
    out
}

/// A skill's instructions, the files beside them, and its entries.
async fn instructions(c: &Invocation<'_>, skill: &Skill) -> String {
    let mut out = format!(
        "<skill name=\"{}\" origin=\"{}\">\n{}\n</skill>\n",
        skill.name(),
        skill.origin,
        skill.body.trim_end()
    );
    let files = files_of(skill);
    if !files.is_empty() {
        out.push_str(&format!(
            "\nFiles in this skill (load one with read_skill and `path`): {}\n",
            files.join(", ")
        ));
    }
    if files.iter().any(|f| f.starts_with("scripts/")) {
        out.push_str(
            "\nThis skill's scripts/ were not run by loading it. Roost never runs them natively; they may run only through a command tool, in its sandbox and after approval, where this host offers one.\n",
        );
    }
    if let Some(tools) = &skill.manifest.allowed_tools {
        out.push_str(&format!(
            "\nWhile you follow this skill you may call only: {} (and the tools every mode has). Load another skill to change this.\n",
            tools.join(", ")
        ));
    }
    if skill.component {
        match c.agent.skills.component(&c.agent.engine, skill).await {
            Ok(component) => {
                out.push_str(
                    "\nEntries (call run_skill with the skill, the entry and its args):\n",
                );
                for e in component.entries() {
                    out.push_str(&format!(
                        "- {}: {}\n  args schema: {}\n",
                        e.name, e.description, e.args_schema
                    ));
                }
            }
            Err(e) => out.push_str(&format!("\nIts component cannot be used: {e}\n")),
        }
    }
    out
}

/// The files of a skill's folder (no link followed), relative to it.
fn files_of(skill: &Skill) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(root) = DirFd::open_resolved(&skill.dir) else {
        return out;
    };
    let mut stack = vec![(root, String::new(), 0usize)];
    while let Some((dir, prefix, depth)) = stack.pop() {
        let Ok(mut names) = dir.names() else { continue };
        names.sort_by(|a, b| b.0.cmp(&a.0));
        for (name, kind) in names {
            let Some(n) = name.to_str() else { continue };
            let rel = format!("{prefix}{n}");
            if rel == "SKILL.md" || rel == crate::skills::catalog::COMPONENT_FILE {
                continue;
            }
            if out.len() >= MAX_LISTED {
                out.push("…".to_owned());
                return out;
            }
            match kind {
                Kind::Dir if depth + 1 < MAX_DEPTH => {
                    if let Ok(sub) = dir.open_dir(&name) {
                        stack.push((sub, format!("{rel}/"), depth + 1));
                    }
                }
                Kind::File => out.push(rel),
                _ => {}
            }
        }
    }
    out.sort();
    out
}

/// The text file `path` inside `skill`'s folder, reached without following
/// any link and at most [`MAX_FILE`] bytes; or the call's refusal.
fn read_file(skill: &Skill, path: &str) -> Result<String, Box<Outcome>> {
    let rel = RelPath::parse(path).map_err(|e| {
        Box::new(Outcome::mistake(format!(
            "`{path}` is not a path inside the skill's folder: {e}"
        )))
    })?;
    let parts = rel.parts();
    let Some((file, dirs)) = parts.split_last() else {
        return Err(Box::new(Outcome::mistake(
            "`path` names the skill's folder itself; name a file in it",
        )));
    };
    let not_found = |e: std::io::Error| {
        let code = match e.kind() {
            std::io::ErrorKind::NotFound => ErrorCode::NotFound,
            std::io::ErrorKind::FileTooLarge => ErrorCode::LimitExceeded,
            _ => ErrorCode::PermissionDenied,
        };
        let why = match e.kind() {
            std::io::ErrorKind::FileTooLarge => format!("it is larger than {MAX_FILE} bytes"),
            std::io::ErrorKind::NotFound => "there is no such file".to_owned(),
            _ => format!("it must be a regular file reached without links ({e})"),
        };
        Box::new(Outcome::error(
            code,
            format!("cannot read `{path}` of skill `{}`: {why}", skill.name()),
        ))
    };
    let bytes = DirFd::open_resolved(&skill.dir)
        .and_then(|root| root.open_dir_path(dirs))
        .and_then(|dir| dir.read(OsStr::new(file), MAX_FILE))
        .map_err(not_found)?;
    String::from_utf8(bytes).map_err(|_| {
        Box::new(Outcome::error(
            ErrorCode::InvalidArgs,
            format!("`{path}` of skill `{}` is not UTF-8 text", skill.name()),
        ))
    })
}
