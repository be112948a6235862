//! The tools a workspace's skills bring, laid over the process's registry
//! for each task whose workspace has skills (a per-task overlay, rebuilt
//! when its skills change): [`read_skill`](read) loads a skill's
//! instructions or files, and [`run_skill`](run) runs an entry of a
//! skill's component in the sandbox. Both see the skills of the task's
//! current mode. Each is a [`ToolExecutor`](super::ToolExecutor) like any
//! tool and goes through the one dispatch.

pub(super) mod read;
pub(super) mod run;

use std::sync::Arc;

use super::access::Access;
use super::registry::{RegisteredTool, RegistryError};
use crate::skills::{Catalog, ModeSkills};
use crate::turn::RunState;

pub use read::NAME as READ_SKILL;
pub use run::NAME as RUN_SKILL;

/// The skill tools over `catalog`.
pub fn overlay(catalog: &Arc<Catalog>) -> Result<Vec<RegisteredTool>, RegistryError> {
    Ok(vec![
        RegisteredTool::new(
            Arc::new(read::ReadSkill::new(Arc::clone(catalog))),
            Access::FULL,
        )?,
        RegisteredTool::new(
            Arc::new(run::RunSkill::new(Arc::clone(catalog))),
            Access::FULL,
        )?,
    ])
}

/// The skills a call in `state`'s mode sees.
fn in_mode(catalog: &Catalog, state: &RunState) -> ModeSkills {
    catalog.for_mode(&state.mode.slug)
}

/// The refusal for a skill name the mode does not have: the model's
/// mistake, with the names it may use.
fn unknown(name: &str, mode: &str, skills: &ModeSkills) -> String {
    let names: Vec<&str> = skills.available.iter().take(50).map(|s| s.name()).collect();
    format!(
        "There is no skill `{name}` in mode `{mode}`. Skills available: {}.",
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    )
}
