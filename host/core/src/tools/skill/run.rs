//! `run_skill(skill, entry, args)`: one entry of a skill's component
//! (`skill.wasm`, WIT world `skill`), never implicit: the model asks, the
//! gates and the approval (group `command`, as a script is) pass, and the
//! entry runs in a fresh sandbox — the workspace read-only, writable only
//! in the call's write session (the active intent's scope), no network,
//! the task's limits. The arguments are checked against the entry's own
//! schema first.

use std::sync::Arc;

use serde_json::json;

use super::{in_mode, unknown};
use crate::skills::Catalog;
use crate::tools::executor::{Invocation, Outcome, ToolExecutor};
use crate::tools::{ArgsValidator, HOST};
use crate::turn::TaskError;
use roost_protocol::{ErrorCode, ToolGroup, ToolSpec};
use roost_sandbox::capability::Grant;

/// Name of the tool that runs a skill's entry.
pub const NAME: &str = "run_skill";

/// The `run_skill` tool over a workspace's skills.
pub(super) struct RunSkill {
    spec: ToolSpec,
    catalog: Arc<Catalog>,
}

impl RunSkill {
    pub(super) fn new(catalog: Arc<Catalog>) -> Self {
        Self {
            spec: ToolSpec {
                name: NAME.into(),
                description: "Run an entry of a skill's component in the sandbox (the workspace read-only, writes \
                    only where the current grant allows). Load the skill with read_skill first: it lists its \
                    entries and their argument schemas."
                    .into(),
                args_schema: json!({
                    "type": "object",
                    "properties": {
                        "skill": {"type": "string", "description": "The skill's name."},
                        "entry": {"type": "string", "description": "The entry to run."},
                        "args": {"type": "object", "description": "The entry's arguments, as its schema says."}
                    },
                    "required": ["skill", "entry"],
                    "additionalProperties": false
                }),
                group: ToolGroup::Command,
                destructive: true,
                path_args: vec![],
                annotations: Default::default(),
            },
            catalog,
        }
    }
}

#[async_trait::async_trait]
impl ToolExecutor for RunSkill {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> crate::tools::ToolKind {
        crate::tools::ToolKind::Skill
    }

    fn provider(&self) -> &str {
        HOST
    }

    async fn run(&self, c: Invocation<'_>) -> Result<Outcome, TaskError> {
        let skills = in_mode(&self.catalog, c.state);
        let name = c.args["skill"].as_str().unwrap_or_default();
        let entry_name = c.args["entry"].as_str().unwrap_or_default();
        let args = c.args.get("args").cloned().unwrap_or_else(|| json!({}));
        let Some(skill) = skills.get(name) else {
            return Ok(Outcome::mistake(unknown(name, &c.state.mode.slug, &skills)));
        };
        let component = match c.agent.skills.component(&c.agent.engine, skill).await {
            Ok(component) => component,
            Err(e) => return Ok(Outcome::error(ErrorCode::NotFound, e.to_string())),
        };
        let Some(entry) = component.entry(entry_name) else {
            let entries: Vec<&str> = component
                .entries()
                .iter()
                .map(|e| e.name.as_str())
                .collect();
            return Ok(Outcome::mistake(format!(
                "Skill `{name}` has no entry `{entry_name}`. Its entries: {}.",
                entries.join(", ")
            )));
        };
        let validator = match ArgsValidator::new(&entry.args_schema) {
            Ok(v) => v,
            Err(detail) => {
                return Ok(Outcome::error(
                    ErrorCode::Internal,
                    format!(
                        "entry `{entry_name}` of skill `{name}` has an invalid args schema: {detail}"
                    ),
                ));
            }
        };
        if let Some(msg) = validator.explain(&format!("{name}/{entry_name}"), &args) {
            return Ok(Outcome::mistake(msg));
        }
        let mut grant = Grant::on_held(&c.ctx.workspace, &c.ctx.ws)
            .limits(c.access.limits(c.ctx.config.limits))
            .read();
        for r in c.write_roots {
            grant = grant.write(r);
        }
        let result = c
            .agent
            .engine
            .run_skill(&component, entry_name, &args.to_string(), &grant)
            .await;
        Ok(Outcome::of(result))
    }
}
