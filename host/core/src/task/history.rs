//! The task's visible API history, mirrored in memory: the store stays the
//! source of truth (every change is written first), but a turn neither
//! reloads nor re-parses the whole conversation.

use crate::events::{EventBus, TaskEvent};
use crate::llm::{Message, Role};
use crate::store::{Committed, Step, Store, StoreError, StoredMessage};

/// The seq of the message a committed step wrote.
fn committed_seq(task: &str, c: Committed) -> Result<i64, StoreError> {
    c.message
        .ok_or_else(|| StoreError::NotFound(task.to_owned()))
}

/// Visible history plus the latest condensation summary.
pub struct History {
    store: Store,
    task: String,
    visible: Vec<StoredMessage>,
    summary: Option<String>,
}

impl History {
    /// Load a task's visible history.
    pub fn load(store: &Store, task: &str) -> Result<Self, StoreError> {
        let mut h = Self {
            store: store.clone(),
            task: task.to_owned(),
            visible: Vec::new(),
            summary: None,
        };
        h.reload()?;
        Ok(h)
    }

    /// Re-read from the store (after condensing).
    pub fn reload(&mut self) -> Result<(), StoreError> {
        self.visible = self.store.load_api(&self.task, false)?;
        self.summary = self.store.latest_summary(&self.task)?;
        Ok(())
    }

    /// Append a message (durably, then in memory); returns its seq.
    pub fn append(&mut self, m: Message) -> Result<i64, StoreError> {
        let seq = self.store.append_api(&self.task, &m)?;
        self.visible.push(StoredMessage {
            seq,
            message: m,
            hidden: false,
            created_at: crate::store::now_ms(),
        });
        Ok(seq)
    }

    /// Append the model's reply with its UI row (`ui_text`, if any), its
    /// usage and the `events` announcing it, in one transaction (then in
    /// memory, then the events go out); returns its seq.
    pub fn append_reply(
        &mut self,
        m: Message,
        ui_text: Option<&str>,
        usage: &crate::llm::Usage,
        cost: f64,
        announce: (&EventBus, Vec<TaskEvent>),
    ) -> Result<i64, StoreError> {
        let mut step = Step::new().append(&m).usage(usage, cost);
        if let Some(text) = ui_text {
            step = step.ui("say", "text", text);
        }
        let (bus, events) = announce;
        let seq = committed_seq(
            &self.task,
            bus.commit(&self.store, &self.task, step, events)?,
        )?;
        self.visible.push(StoredMessage {
            seq,
            message: m,
            hidden: false,
            created_at: crate::store::now_ms(),
        });
        Ok(seq)
    }

    /// Record the message of tool results (appended when `seq` is `None`,
    /// else replaced) with the call's UI row, the task's new status and the
    /// `events` announcing it, in one transaction (then in memory, then the
    /// events go out); returns its seq.
    pub fn record_result(
        &mut self,
        seq: Option<i64>,
        m: Message,
        ui: Option<(&str, &str)>,
        status: Option<crate::store::TaskStatus>,
        announce: (&EventBus, Vec<TaskEvent>),
    ) -> Result<i64, StoreError> {
        let mut step = Step::new().put(seq, &m);
        if let Some((subtype, text)) = ui {
            step = step.ui("say", subtype, text);
        }
        if let Some(status) = status {
            step = step.status(status);
        }
        let (bus, events) = announce;
        let seq = committed_seq(
            &self.task,
            bus.commit(&self.store, &self.task, step, events)?,
        )?;
        match self.visible.iter_mut().find(|s| s.seq == seq) {
            Some(slot) => slot.message = m,
            None => self.visible.push(StoredMessage {
                seq,
                message: m,
                hidden: false,
                created_at: crate::store::now_ms(),
            }),
        }
        Ok(seq)
    }

    /// Replace message `seq` (durably, then in memory).
    pub fn update(&mut self, seq: i64, m: Message) -> Result<(), StoreError> {
        self.store.update_api(&self.task, seq, &m)?;
        if let Some(slot) = self.visible.iter_mut().find(|s| s.seq == seq) {
            slot.message = m;
        }
        Ok(())
    }

    /// Add text to the last message when it is the user's, else append a
    /// user message (so roles keep alternating).
    pub fn add_user_text(&mut self, text: String) -> Result<(), StoreError> {
        match self.visible.last() {
            Some(last) if last.message.role == Role::User => {
                let seq = last.seq;
                let mut m = last.message.clone();
                m.content.push(crate::llm::ContentBlock::Text { text });
                self.update(seq, m)
            }
            _ => self.append(Message::user_text(text)).map(|_| ()),
        }
    }

    /// The visible messages with their seqs.
    pub fn visible(&self) -> &[StoredMessage] {
        &self.visible
    }

    /// The latest condensation summary.
    pub fn summary(&self) -> Option<&str> {
        self.summary.as_deref()
    }
}
