//! The engine's side of checkpoints: list a task's, show what changed
//! since one, restore one — the files, the conversation or both — while
//! the task is not running. A restore is recorded in the task's history
//! and in the workspace's trace.

use std::sync::Arc;

use super::{Engine, EngineError};
use crate::intents::{self, Trace, TraceEntry};
use roost_protocol::{Checkpoint, RestoreMode, RestoreReport, TraceKind, UiRow, UiSubtype};
use roost_sandbox::capability::Workspace;

/// A task's checkpoints as an undo sees them (`/undo` in a chat, in an
/// editor).
#[derive(Debug, Clone)]
pub struct UndoPlan {
    /// The task's full id.
    pub id: String,
    /// Its checkpoints, oldest first.
    pub checkpoints: Vec<Checkpoint>,
    /// How many replies of the model its conversation holds now.
    pub replies: u32,
    /// The checkpoint an undo goes back to; none when nothing is left.
    pub target: Option<Checkpoint>,
}

impl UndoPlan {
    /// Whether `c`'s turn was taken back already (the conversation no
    /// longer reaches it).
    pub fn undone(&self, c: &Checkpoint) -> bool {
        c.turn > self.replies
    }
}

impl Engine {
    /// Task `task`'s workspace, opened as its starts open it (beneath its
    /// tenant's root on a server): a diff or a restore never follows a
    /// workspace swapped for a link to elsewhere.
    fn open_checked(&self, task: &crate::store::TaskRecord) -> Result<Workspace, EngineError> {
        Ok(self.workspace_check().open(&self.agent.store, task)?)
    }

    fn checkpoint_service(&self) -> Result<Arc<crate::checkpoints::Checkpoints>, EngineError> {
        self.agent
            .checkpoints
            .clone()
            .ok_or(EngineError::NoCheckpoints)
    }

    /// Task `id`'s checkpoints (an unambiguous prefix will do), oldest
    /// first, with the task's full id.
    pub fn checkpoints(&self, id: &str) -> Result<(String, Vec<Checkpoint>), EngineError> {
        let task = self.agent.store.find_task(id)?;
        let list = self
            .agent
            .store
            .checkpoints(&task.id)?
            .into_iter()
            .map(|c| c.view)
            .collect();
        Ok((task.id, list))
    }

    /// The checkpoints of task `id` (its full id: a session found it),
    /// oldest first, for a front-end's request: awaited.
    pub async fn read_checkpoints(&self, id: &str) -> Result<Vec<Checkpoint>, EngineError> {
        Ok(self
            .agent
            .store
            .read_checkpoints(id)
            .await?
            .into_iter()
            .map(|c| c.view)
            .collect())
    }

    /// Task `id`'s checkpoints as an undo sees them (an unambiguous prefix
    /// will do): which are undone already, and the one an undo goes back to.
    pub fn undo_plan(&self, id: &str) -> Result<UndoPlan, EngineError> {
        let (id, checkpoints) = self.checkpoints(id)?;
        let store = &self.agent.store;
        let replies = store
            .load_api(&id, true)?
            .iter()
            .filter(|m| m.message.role == crate::llm::Role::Assistant)
            .count();
        let replies = u32::try_from(replies).unwrap_or(u32::MAX);
        // When each of the person's messages came, oldest first.
        let mut said = Vec::new();
        let mut started = false;
        for row in store.load_ui(&id)? {
            match UiSubtype::parse(&row.subtype) {
                Some(UiSubtype::ApiReqStarted) => started = true,
                Some(UiSubtype::Text) if !started && said.is_empty() => said.push(row.ts),
                Some(UiSubtype::UserMessage) => said.push(row.ts),
                _ => {}
            }
        }
        if said.is_empty() {
            said.push(i64::MIN);
        }
        // The first checkpoint after the person's last message whose turns
        // changed files (and are still in the conversation): one undo takes
        // back everything one message did.
        let live: Vec<&Checkpoint> = checkpoints.iter().filter(|c| c.turn <= replies).collect();
        let mut target = None;
        let mut until = i64::MAX;
        for &from in said.iter().rev() {
            let first = live
                .iter()
                .filter(|c| c.created_at >= from && c.created_at < until)
                .min_by_key(|c| c.id);
            if let Some(c) = first {
                target = Some((*c).clone());
                break;
            }
            until = from;
        }
        Ok(UndoPlan {
            id,
            checkpoints,
            replies,
            target,
        })
    }

    /// What changed in task `id`'s workspace since its checkpoint `cp`.
    pub async fn checkpoint_diff(&self, id: &str, cp: u32) -> Result<String, EngineError> {
        let cps = self.checkpoint_service()?;
        let check = self.workspace_check();
        let store = self.agent.store.clone();
        let id = id.to_owned();
        // The task's lookup, its workspace's opening and git's walk all
        // wait on a thread of their own, not on a runtime worker.
        tokio::task::spawn_blocking(move || {
            let task = store.find_task(&id)?;
            let ws = check.open(&store, &task)?;
            let _pin = ws.pin();
            Ok(cps.diff(&store, &task.id, cp, &ws)?)
        })
        .await
        .map_err(|e| {
            EngineError::Checkpoint(crate::checkpoints::CheckpointError::Write {
                path: String::new(),
                why: e.to_string(),
            })
        })?
    }

    /// Restore task `id` to its checkpoint `cp` (see
    /// [`crate::checkpoints::Checkpoints::restore`]); refused while the
    /// task runs.
    pub async fn restore_checkpoint(
        &self,
        id: &str,
        cp: u32,
        mode: RestoreMode,
        force: bool,
    ) -> Result<RestoreReport, EngineError> {
        let cps = self.checkpoint_service()?;
        let task = self.agent.store.find_task(id)?;
        // Not while it runs, here or in another process.
        if self.lock().running.contains_key(&task.id) || self.agent.store.is_live(&task.id) {
            return Err(EngineError::AlreadyStarted(task.id));
        }
        let ws = self.open_checked(&task)?;
        // Any other open of its path meanwhile must reach this directory.
        let _pin = ws.pin();
        let store = self.agent.store.clone();
        let (tid, ws2) = (task.id.clone(), ws.clone());
        let report =
            tokio::task::spawn_blocking(move || cps.restore(&store, &tid, cp, &ws2, mode, force))
                .await
                .map_err(|e| {
                    EngineError::Checkpoint(crate::checkpoints::CheckpointError::Write {
                        path: String::new(),
                        why: e.to_string(),
                    })
                })??;
        let what = match mode {
            RestoreMode::Both => "files and conversation",
            RestoreMode::FilesOnly => "files",
            RestoreMode::ConversationOnly => "conversation",
        };
        let mut line = format!(
            "Restored checkpoint {cp} ({what}): {} file(s) brought back, {} removed",
            report.restored.len(),
            report.removed.len()
        );
        if !report.conflicts.is_empty() {
            line.push_str(&format!(
                "; {} changed by someone else since{}: {}",
                report.conflicts.len(),
                if force {
                    " (overwritten: --force)"
                } else {
                    " (left alone)"
                },
                report.conflicts.join(", ")
            ));
        }
        self.agent
            .store
            .append_ui(&task.id, UiRow::say(UiSubtype::CheckpointRestored), &line)?;
        if intents::enabled_in(&ws) {
            let mut entry = TraceEntry::now(
                TraceKind::Mutation,
                &task.id,
                task.active_intent.as_deref(),
                &task.mode,
                "checkpoint_restore",
                &serde_json::json!({"checkpoint": cp, "mode": mode, "force": force}),
            );
            entry.detail = Some(line);
            if let Err(e) = Trace::of(std::path::Path::new(&task.workspace)).append(&entry) {
                tracing::error!(task = %task.id, "cannot trace the restore: {e}");
            }
        }
        Ok(report)
    }
}
