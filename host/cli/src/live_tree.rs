//! The subtasks a driven task follows, as they stand: which run and what
//! each did last, which wait for an answer, which wait for a slot, how
//! many ended. The display prints it as one line when a group's child
//! ends, and keeps it on the status line of a terminal while children
//! run, so a person watching a fan-out sees the whole tree at a glance
//! instead of reading it out of interleaved `[child …]` lines.

use std::collections::HashMap;

use super::sanitize::visible_line;
use roost_protocol::{TaskEvent, TaskStatus};

/// Most running children named on the line; the rest are counted.
const NAMED: usize = 4;

/// Where one child stands.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Created, waiting for a slot of its tree.
    Queued,
    /// Running; the text is what it did last.
    Running(String),
    /// Waiting for a person's answer.
    Asking,
    /// Ended.
    Ended(TaskStatus),
}

#[derive(Debug)]
struct Child {
    mode: String,
    state: State,
}

/// The live tree under one driven task.
#[derive(Debug, Default)]
pub struct LiveTree {
    children: HashMap<String, Child>,
    /// Ids in the order they started, for a stable line.
    order: Vec<String>,
    /// Children of each task's open parallel group not yet started.
    unstarted: HashMap<String, usize>,
}

impl LiveTree {
    /// Take in one event (`task_id`: whose it is). Returns whether a
    /// child of a parallel group just ended: the moment to print where
    /// the tree stands.
    pub fn observe(&mut self, task_id: &str, ev: &TaskEvent) -> bool {
        match ev {
            TaskEvent::SubtaskStarted { child_id, mode, .. } => {
                if !self.children.contains_key(child_id) {
                    self.order.push(child_id.clone());
                    if let Some(n) = self.unstarted.get_mut(task_id) {
                        *n = n.saturating_sub(1);
                    }
                }
                self.children.insert(
                    child_id.clone(),
                    Child {
                        mode: mode.clone(),
                        state: State::Queued,
                    },
                );
                false
            }
            TaskEvent::SubtaskFinished {
                child_id, status, ..
            } => {
                self.set(child_id, State::Ended(*status));
                false
            }
            TaskEvent::GroupStarted { children, .. } => {
                self.unstarted
                    .insert(task_id.to_owned(), usize::try_from(*children).unwrap_or(0));
                false
            }
            TaskEvent::GroupFinished { .. } => {
                self.unstarted.remove(task_id);
                false
            }
            TaskEvent::GroupChildFinished {
                child_id, status, ..
            } => {
                if let Some(id) = child_id {
                    self.set(id, State::Ended(*status));
                }
                true
            }
            TaskEvent::Completed { .. } => {
                self.set(task_id, State::Ended(TaskStatus::Completed));
                false
            }
            TaskEvent::Failed { .. } => {
                self.set(task_id, State::Ended(TaskStatus::Failed));
                false
            }
            TaskEvent::Aborted { .. } => {
                self.set(task_id, State::Ended(TaskStatus::Aborted));
                false
            }
            TaskEvent::TaskStarted { .. } | TaskEvent::RequestStarted { .. } => {
                self.set(task_id, State::Running("thinking".into()));
                false
            }
            TaskEvent::ToolCallRequested { tool, .. } => {
                self.set(task_id, State::Running(format!("⏺ {}", visible_line(tool))));
                false
            }
            TaskEvent::AskRequired { .. } => {
                self.set(task_id, State::Asking);
                false
            }
            TaskEvent::ToolCallApproved { .. } | TaskEvent::ToolCallDenied { .. } => {
                if self.state(task_id) == Some(&State::Asking) {
                    self.set(task_id, State::Running("answered".into()));
                }
                false
            }
            _ => false,
        }
    }

    fn state(&self, id: &str) -> Option<&State> {
        self.children.get(id).map(|c| &c.state)
    }

    /// Change a known child's state (an ended child stays ended; events of
    /// the driven task itself are not a child's).
    fn set(&mut self, id: &str, state: State) {
        if let Some(c) = self.children.get_mut(id)
            && !matches!(c.state, State::Ended(_))
        {
            c.state = state;
        }
    }

    /// Whether any child has not ended (or not started yet).
    pub fn alive(&self) -> bool {
        self.unstarted.values().any(|n| *n > 0)
            || self
                .children
                .values()
                .any(|c| !matches!(c.state, State::Ended(_)))
    }

    /// The tree in one line: `subtasks: 2 of 5 ended · running: 1a2b3c4d
    /// code ⏺ write_to_file, … · asking: 9c0d1e2f · 1 queued`; `None`
    /// before the first subtask.
    pub fn summary(&self) -> Option<String> {
        if self.order.is_empty() {
            return None;
        }
        let mut running = Vec::new();
        let mut asking = Vec::new();
        let waiting: usize = self.unstarted.values().sum();
        let (mut queued, mut ended) = (waiting, 0usize);
        for id in &self.order {
            let Some(c) = self.children.get(id) else {
                continue;
            };
            match &c.state {
                State::Queued => queued += 1,
                State::Running(last) => {
                    running.push(format!("{} {} {last}", short_id(id), visible_line(&c.mode)))
                }
                State::Asking => asking.push(short_id(id).to_owned()),
                State::Ended(_) => ended += 1,
            }
        }
        let mut parts = vec![format!(
            "subtasks: {ended} of {} ended",
            self.order.len().saturating_add(waiting)
        )];
        if !running.is_empty() {
            let more = running.len().saturating_sub(NAMED);
            running.truncate(NAMED);
            let mut r = format!("running: {}", running.join(", "));
            if more > 0 {
                r.push_str(&format!(" (+{more} more)"));
            }
            parts.push(r);
        }
        if !asking.is_empty() {
            parts.push(format!("asking: {}", asking.join(", ")));
        }
        if queued > 0 {
            parts.push(format!("{queued} queued"));
        }
        Some(parts.join(" · "))
    }
}

/// A task id's last 8 characters: ids begin with their creation time,
/// so a parent's subtasks share their first characters and differ at the
/// end.
pub fn short_id(id: &str) -> &str {
    id.len()
        .checked_sub(8)
        .and_then(|start| id.get(start..))
        .unwrap_or(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use roost_protocol::Ask;
    use serde_json::json;

    fn started(id: &str, mode: &str) -> TaskEvent {
        TaskEvent::SubtaskStarted {
            child_id: id.into(),
            mode: mode.into(),
            message: "do it".into(),
        }
    }

    /// Children go queued → running (with their last call) → asking →
    /// ended, and the line says so; a group's child ending is the moment
    /// to print it.
    #[test]
    fn the_line_follows_each_child() {
        let mut t = LiveTree::default();
        assert_eq!(t.summary(), None);
        t.observe(
            "root",
            &TaskEvent::GroupStarted {
                group_id: "g".into(),
                strategy: roost_protocol::GroupStrategy::All,
                children: 4,
            },
        );
        for (id, mode) in [
            ("t-0001-aaaaaaaa", "code"),
            ("t-0001-bbbbbbbb", "ask"),
            ("t-0001-cccccccc", "code"),
        ] {
            assert!(!t.observe("root", &started(id, mode)));
        }
        assert_eq!(
            t.summary().as_deref(),
            Some("subtasks: 0 of 4 ended · 4 queued")
        );
        t.observe("t-0001-aaaaaaaa", &TaskEvent::RequestStarted { turn: 1 });
        t.observe(
            "t-0001-aaaaaaaa",
            &TaskEvent::ToolCallRequested {
                id: "c1".into(),
                tool: "write_to_file".into(),
                args: json!({}),
            },
        );
        t.observe("t-0001-bbbbbbbb", &TaskEvent::RequestStarted { turn: 1 });
        t.observe(
            "t-0001-bbbbbbbb",
            &TaskEvent::AskRequired {
                ask_id: "a1".into(),
                text: "ok?".into(),
                ask: Ask::Followup {
                    question: "ok?".into(),
                    suggestions: vec![],
                },
            },
        );
        assert!(t.alive());
        assert_eq!(
            t.summary().as_deref(),
            Some(
                "subtasks: 0 of 4 ended · running: aaaaaaaa code ⏺ write_to_file · asking: bbbbbbbb · 2 queued"
            )
        );
        assert!(t.observe(
            "root",
            &TaskEvent::GroupChildFinished {
                group_id: "g".into(),
                index: 0,
                child_id: Some("t-0001-aaaaaaaa".into()),
                status: TaskStatus::Completed,
            }
        ));
        // A late event of an ended child does not bring it back.
        t.observe("t-0001-aaaaaaaa", &TaskEvent::RequestStarted { turn: 2 });
        t.observe(
            "t-0001-bbbbbbbb",
            &TaskEvent::Aborted {
                reason: "cancelled".into(),
            },
        );
        t.observe(
            "t-0001-cccccccc",
            &TaskEvent::Failed {
                error: "boom".into(),
            },
        );
        assert!(t.alive());
        assert_eq!(
            t.summary().as_deref(),
            Some("subtasks: 3 of 4 ended · 1 queued")
        );
        // The group ended without starting its fourth child.
        t.observe(
            "root",
            &TaskEvent::GroupFinished {
                group_id: "g".into(),
                status: roost_protocol::GroupStatus::Failed,
                usage: Default::default(),
                cost: 0.0,
            },
        );
        assert!(!t.alive());
        assert_eq!(t.summary().as_deref(), Some("subtasks: 3 of 3 ended"));
    }

    /// Many running children: four are named, the rest counted; text
    /// from the model is made visible.
    #[test]
    fn many_children_are_counted_and_names_made_visible() {
        let mut t = LiveTree::default();
        for k in 0..6 {
            let id = format!("task-{k:08}");
            t.observe("root", &started(&id, "co\x1b[2Jde"));
            t.observe(&id, &TaskEvent::RequestStarted { turn: 1 });
        }
        let line = t.summary().expect("a line");
        assert!(line.contains("(+2 more)"), "{line}");
        assert!(!line.contains('\x1b'), "{line}");
    }
}
