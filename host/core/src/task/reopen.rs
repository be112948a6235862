//! A completed task takes a new message and goes on, as in Roo Code: the
//! message joins the conversation (after the accepted
//! `attempt_completion`'s result) and the task becomes resumable again.

use super::history::History;
use std::path::Path;

use crate::call::Agent;
use crate::modes::ModeSet;
use crate::store::TaskStatus;
use crate::turn::TaskError;
use roost_protocol::{UiRow, UiSubtype};

impl Agent {
    /// Reopen completed task `id` with the user's `message`, durably: the
    /// message is in both histories and the task is `paused` (resumable)
    /// before this returns. A task that is not completed is left alone
    /// (its message is queued for its next turn instead).
    pub(crate) fn reopen(&self, id: &str, message: &str) -> Result<(), TaskError> {
        let task = self.store.get_task(id)?;
        if task.status != TaskStatus::Completed {
            return Ok(());
        }
        let mut history = History::load(&self.store, id)?;
        history.add_user_text(format!("<user_message>\n{message}\n</user_message>"))?;
        self.store
            .append_ui(id, UiRow::say(UiSubtype::UserMessage), message)?;
        self.store.set_status(id, TaskStatus::Paused)?;
        Ok(())
    }
}

impl Agent {
    /// Switch stored task `id` to `mode` before it continues (the person
    /// chose another mode, as Roo's mode selector does); an unknown mode
    /// is refused and nothing changes.
    pub(crate) fn switch_mode(&self, id: &str, mode: &str) -> Result<(), TaskError> {
        let task = self.store.get_task(id)?;
        let modes = ModeSet::load(Path::new(&task.workspace), self.modes_dir.as_deref());
        if modes.get(mode).is_none() {
            let available: Vec<&str> = modes.iter().map(|m| m.slug.as_str()).collect();
            return Err(TaskError::UnknownMode {
                mode: mode.to_owned(),
                available: available.join(", "),
            });
        }
        if task.mode != mode {
            self.store.set_mode(id, mode)?;
            self.store.append_ui(
                id,
                UiRow::say(UiSubtype::ModeSwitch),
                &format!("switched to mode {mode} by the user"),
            )?;
        }
        Ok(())
    }
}
