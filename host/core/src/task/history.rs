//! The task's visible API history, mirrored in memory: the store stays the
//! source of truth (every change is written first), but a turn neither
//! reloads nor re-parses the whole conversation.

use crate::events::{EventBus, TaskEvent};
use crate::llm::{Message, Role, Usage};
use crate::store::{Committed, Step, Store, StoreError, StoredMessage, TaskRecord};
use roost_protocol::{UiRow, UiSubtype};

/// The seq of the message a committed step wrote.
fn committed_seq(task: &str, c: Committed) -> Result<i64, StoreError> {
    c.message
        .ok_or_else(|| StoreError::NotFound(task.to_owned()))
}

/// What a tool result's step records besides the result: its UI row,
/// the task's new status, its trace lines, and tokens spent on the call's
/// behalf (a subtask's).
#[derive(Default)]
pub struct ResultStep<'a> {
    /// The call's UI row.
    pub ui: Option<(UiSubtype, &'a str)>,
    /// The task's status from this step on.
    pub status: Option<crate::store::TaskStatus>,
    /// Trace lines recorded with the result.
    pub trace: Vec<String>,
    /// Tokens and cost added to the task's totals.
    pub spent: Option<&'a (crate::llm::Usage, f64)>,
}

/// Visible history plus the latest condensation summary.
pub struct History {
    store: Store,
    task: String,
    visible: Vec<StoredMessage>,
    /// A revision per visible message, new whenever the message is
    /// (re)written, so what was derived from it (its encoding in a
    /// request) is known to be stale.
    revisions: Vec<u64>,
    /// The next revision to hand out; never reused within a run.
    next_revision: u64,
    summary: Option<String>,
    /// What the steps recorded through this history added to the task's
    /// totals (tokens and cost), so a run knows its task's totals without
    /// reading them back: its claim makes it their only writer.
    added: (Usage, f64),
}

/// The message a task opens its history with: its prompt, tagged. A new
/// task's first step appends it (at seq 1, [`History::opened`]).
pub fn opening_message(prompt: &str) -> Message {
    Message::user_text(format!("<task>\n{prompt}\n</task>"))
}

impl History {
    fn empty(store: &Store, task: &str) -> Self {
        Self {
            store: store.clone(),
            task: task.to_owned(),
            visible: Vec::new(),
            revisions: Vec::new(),
            next_revision: 1,
            summary: None,
            added: (Usage::default(), 0.0),
        }
    }

    /// Load a task's visible history.
    pub fn load(store: &Store, task: &str) -> Result<Self, StoreError> {
        let mut h = Self::empty(store, task);
        h.reload()?;
        Ok(h)
    }

    /// The history of `task` as its creation wrote it, without reading it
    /// back: its [`opening_message`] at seq 1, written with the task's
    /// record, and nothing since — for the run that created the task and
    /// holds its claim from that very transaction (no one else writes to
    /// it), before its first step. A resumed task [`History::load`]s.
    pub fn opened(store: &Store, task: &TaskRecord) -> Self {
        let mut h = Self::empty(store, &task.id);
        h.visible.push(StoredMessage {
            seq: 1,
            message: opening_message(&task.prompt),
            hidden: false,
            created_at: task.created_at,
        });
        let r = h.revision();
        h.revisions.push(r);
        h
    }

    /// Re-read from the store (after condensing).
    pub fn reload(&mut self) -> Result<(), StoreError> {
        (self.visible, self.summary) = self.store.load_history(&self.task)?;
        self.revisions = (0..self.visible.len()).map(|_| self.revision()).collect();
        Ok(())
    }

    fn revision(&mut self) -> u64 {
        let r = self.next_revision;
        self.next_revision += 1;
        r
    }

    /// Add `m` at `seq` in memory (it was just written).
    fn push(&mut self, seq: i64, m: Message) {
        self.visible.push(StoredMessage {
            seq,
            message: m,
            hidden: false,
            created_at: crate::store::now_ms(),
        });
        let r = self.revision();
        self.revisions.push(r);
    }

    /// Replace message `seq` in memory (it was just rewritten), or add it.
    fn put(&mut self, seq: i64, m: Message) {
        let r = self.revision();
        match self.visible.iter().rposition(|s| s.seq == seq) {
            Some(i) => {
                if let Some(slot) = self.visible.get_mut(i) {
                    slot.message = m;
                }
                if let Some(rev) = self.revisions.get_mut(i) {
                    *rev = r;
                }
            }
            None => self.push(seq, m),
        }
    }

    /// Append a message (durably, then in memory); returns its seq.
    pub fn append(&mut self, m: Message) -> Result<i64, StoreError> {
        let seq = self.store.append_api(&self.task, &m)?;
        self.push(seq, m);
        Ok(seq)
    }

    /// Append the model's reply to the history in `step` (its UI rows and
    /// usage), with the `events` announcing it, in one transaction (then
    /// in memory, then the events go out); returns its seq.
    pub async fn append_reply(
        &mut self,
        m: Message,
        step: Step<'_>,
        announce: (&EventBus, Vec<TaskEvent>),
    ) -> Result<i64, StoreError> {
        let step = step.append(&m);
        let added = step.usage_added().map(|(u, cost)| (*u, cost));
        let (bus, events) = announce;
        let seq = committed_seq(
            &self.task,
            bus.commit(&self.store, &self.task, step, events).await?,
        )?;
        if let Some((usage, cost)) = added {
            self.add(&usage, cost);
        }
        self.push(seq, m);
        Ok(seq)
    }

    /// Record that the messages after the first, up to `upto`, were
    /// condensed into `summary` by a request that spent `usage` and
    /// `cost`, with its UI row, in one step; then read the history again.
    pub fn condense(
        &mut self,
        first: i64,
        upto: i64,
        summary: &str,
        (usage, cost): (&Usage, f64),
    ) -> Result<(), StoreError> {
        self.store.commit_step(
            &self.task,
            Step::new()
                .condense(first, upto, summary)
                .ui(UiRow::say(UiSubtype::CondenseContext), summary)
                .usage(usage, cost),
        )?;
        self.add(usage, cost);
        self.reload()
    }

    fn add(&mut self, usage: &Usage, cost: f64) {
        self.added.0.add(usage);
        self.added.1 += cost;
    }

    /// The task's totals (tokens and cost) now: `start`, its record when
    /// this history was loaded, plus what was recorded through it since.
    pub fn totals(&self, start: &TaskRecord) -> (Usage, f64) {
        let mut usage = start.usage;
        usage.add(&self.added.0);
        (usage, start.cost + self.added.1)
    }

    /// Record the message of tool results (appended when `seq` is `None`,
    /// else replaced) with the call's UI row, the task's new status, its
    /// trace entries (pending until appended) and the `events` announcing
    /// it, in one transaction (then in memory, then the events go out);
    /// returns its seq.
    pub async fn record_result(
        &mut self,
        seq: Option<i64>,
        m: Message,
        with: ResultStep<'_>,
        announce: (&EventBus, Vec<TaskEvent>),
    ) -> Result<i64, StoreError> {
        let mut step = Step::new().put(seq, &m).trace(with.trace);
        if let Some((usage, cost)) = with.spent {
            step = step.usage(usage, *cost);
        }
        if let Some((subtype, text)) = with.ui {
            step = step.ui(UiRow::say(subtype), text);
        }
        if let Some(status) = with.status {
            step = step.status(status);
        }
        let (bus, events) = announce;
        let seq = committed_seq(
            &self.task,
            bus.commit(&self.store, &self.task, step, events).await?,
        )?;
        if let Some((usage, cost)) = with.spent {
            self.add(usage, *cost);
        }
        self.put(seq, m);
        Ok(seq)
    }

    /// Replace message `seq` (durably, then in memory).
    pub fn update(&mut self, seq: i64, m: Message) -> Result<(), StoreError> {
        self.store.update_api(&self.task, seq, &m)?;
        if self.visible.iter().any(|s| s.seq == seq) {
            self.put(seq, m);
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

    /// The revision of each visible message (same order): it changes
    /// whenever the message does.
    pub fn revisions(&self) -> &[u64] {
        &self.revisions
    }

    /// The latest condensation summary.
    pub fn summary(&self) -> Option<&str> {
        self.summary.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewTask, StoreLocation};

    /// A task created as a run creates it: the history that run starts
    /// from without reading it back is the one the store holds, on both
    /// backends.
    fn a_new_tasks_history_is_what_its_creation_wrote(location: &StoreLocation) {
        let store = Store::open_at(location).expect("store");
        let prompt = "fix \"it\"\n<b>now</b> ✓";
        let new = NewTask {
            parent_id: None,
            root_id: None,
            mode: "code".into(),
            workspace: "/ws".into(),
            prompt: prompt.into(),
            provider: "scripted".into(),
            model: "m".into(),
            base_url: String::new(),
            profile: String::new(),
            settings: None,
            owner: None,
            active_intent: None,
        };
        let first = opening_message(prompt);
        let step = Step::new()
            .ui(UiRow::say(UiSubtype::Text), prompt)
            .append(&first);
        let task = store.create_claimed_task(&new, step).expect("created").task;
        let opened = History::opened(&store, &task);
        let loaded = History::load(&store, &task.id).expect("loaded");
        assert_eq!(opened.visible(), loaded.visible());
        assert_eq!(opened.summary(), loaded.summary());
        assert_eq!(opened.visible().len(), 1);
    }

    #[test]
    fn a_new_tasks_history_is_what_its_creation_wrote_on_sqlite() {
        let dir = tempfile::tempdir().expect("dir");
        a_new_tasks_history_is_what_its_creation_wrote(&StoreLocation::File(
            dir.path().join("roost.db"),
        ));
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_new_tasks_history_is_what_its_creation_wrote_on_postgres() {
        roost_testpg::skip_without_postgres!();
        let url = roost_testpg::shared()
            .and_then(|pg| pg.fresh_database())
            .unwrap_or_else(|e| panic!("{e}"));
        a_new_tasks_history_is_what_its_creation_wrote(&StoreLocation::Postgres(url));
    }
}
