//! The typed event stream of a task: everything a front-end shows (CLI
//! spinner and diffs, `--json` NDJSON, HTTP SSE) comes from here. Events are
//! published after the state they describe is durable, and are themselves
//! recorded in the task's event log (all but the live signals of a request
//! in flight: request started, streamed text and arguments) before
//! anyone hears of them: each carries its task id and its position in that
//! log, so a front-end that reconnects reads what it missed from the store
//! ([`EventBus::replay`]) and continues with the live stream.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;

use crate::store::{Committed, OnCommit, Step, Store, StoreError, StoredEvent, TaskStatus};

/// Capacity of each task's broadcast channel; a subscriber that lags further
/// behind skips events (recorded ones it can read back from the log; the
/// CLI prints a message whose streamed text it lost from the final one).
/// Slots are allocated up front, cache-line padded: 1,024 of them cost
/// ~180 KiB a task, which ten thousand tasks could not afford.
const CHANNEL_CAPACITY: usize = 256;

pub use roost_protocol::events::{Envelope, TaskEvent};

/// A live stream of a task's events.
pub type Subscription = broadcast::Receiver<Arc<Envelope>>;

/// Why the log could not be read back.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A recorded event does not decode (written by another version?).
    #[error("task {task}: recorded event {seq} does not decode: {detail}")]
    Corrupt {
        /// Task id.
        task: String,
        /// Position.
        seq: i64,
        /// Decoder message.
        detail: String,
    },
}

/// Where a bus records its events.
#[derive(Clone)]
struct EventLog {
    task_id: String,
    store: Store,
}

/// A bus's log and how far its broadcast has got.
#[derive(Default)]
struct LogState {
    log: Option<EventLog>,
    /// Highest position broadcast so far: a recorded event above it is
    /// committed but not yet sent, so a replay leaves it to the receiver.
    published: i64,
    /// The status the task's next step through this bus sets unless it
    /// sets one itself ([`EventBus::owe_status`]).
    owed: Option<TaskStatus>,
}

/// Per-task broadcast of [`Envelope`]s, recorded in the task's event log
/// once the bus is bound to its task ([`EventBus::bind`]). Cheap to clone
/// (clones share the binding); publishing with no subscriber is fine.
///
/// One writer per task (its loop, and the engine announcing it before the
/// loop starts): events are recorded and sent in the order they were
/// committed, and a front-end reading the log while the task runs
/// ([`EventBus::replay`]) gets every event once, none missed.
#[derive(Clone)]
pub struct EventBus {
    tx: broadcast::Sender<Arc<Envelope>>,
    state: Arc<Mutex<LogState>>,
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("task_id", &self.task_id())
            .finish()
    }
}

impl Default for EventBus {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBus {
    /// A bus not yet bound to a task (the loop binds it when the task is
    /// created or loaded).
    pub fn new() -> Self {
        let (tx, _) = broadcast::channel(CHANNEL_CAPACITY);
        Self {
            tx,
            state: Arc::default(),
        }
    }

    /// A bus recording into `task_id`'s log in `store`.
    pub fn for_task(task_id: &str, store: &Store) -> Self {
        let bus = Self::new();
        bus.bind(task_id, store);
        bus
    }

    /// A bus recording into the log of `task_id`, created just now: the
    /// events its creation recorded are not broadcast until its run
    /// announces them ([`EventBus::announce_opening`]), so none counts as
    /// published and nothing is read (on PostgreSQL a round trip fewer a
    /// task).
    pub fn for_new_task(task_id: &str, store: &Store) -> Self {
        let bus = Self::new();
        bus.bind_at(task_id, store, Some(0));
        bus
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Record this bus's events into `task_id`'s log from now on (a bus
    /// reused for a later task follows it). What the log already holds
    /// counts as published.
    pub fn bind(&self, task_id: &str, store: &Store) {
        self.bind_at(task_id, store, None);
    }

    /// [`EventBus::bind`], with the log's last position when the caller
    /// knows it.
    fn bind_at(&self, task_id: &str, store: &Store, last: Option<i64>) {
        let mut state = self.lock();
        if state.log.as_ref().is_some_and(|l| l.task_id == task_id) {
            return;
        }
        state.published = match last.map_or_else(|| store.last_event_seq(task_id), Ok) {
            Ok(seq) => seq,
            Err(e) => {
                tracing::warn!(task_id, "event log position unknown: {e}");
                0
            }
        };
        state.log = Some(EventLog {
            task_id: task_id.to_owned(),
            store: store.clone(),
        });
        state.owed = None;
    }

    /// Have the next step this bus commits for its task set `status`
    /// unless that step sets one itself: a question's answer sets the task
    /// running again with the step its asker takes at once (the approval's
    /// announcement, the call's result) rather than a step of its own.
    /// False (nothing owed) when the bus records no task.
    pub(crate) fn owe_status(&self, status: TaskStatus) -> bool {
        let mut state = self.lock();
        if state.log.is_none() {
            return false;
        }
        state.owed = Some(status);
        true
    }

    /// `step` with the status owed for `task`, if any (taken: owed once).
    fn settle<'a>(&self, task: &str, step: Step<'a>) -> Step<'a> {
        let mut state = self.lock();
        if state.log.as_ref().is_none_or(|l| l.task_id != task) {
            return step;
        }
        match state.owed.take() {
            Some(status) => step.or_status(status),
            None => step,
        }
    }

    /// The task this bus is bound to.
    pub fn task_id(&self) -> Option<String> {
        self.lock().log.as_ref().map(|l| l.task_id.clone())
    }

    /// Record `event` (unless it is a streaming partial) and publish it to
    /// every current subscriber once it is durable. A log that cannot be
    /// written is reported in the logs and the event still goes out,
    /// without a position.
    pub async fn publish(&self, event: TaskEvent) {
        let log = self.lock().log.clone();
        match log {
            Some(log) if event.is_recorded() => {
                if let Err(e) = self
                    .commit(&log.store, &log.task_id, Step::new(), vec![event.clone()])
                    .await
                {
                    tracing::warn!(task_id = %log.task_id, "event not recorded: {e}");
                    self.send(&log.task_id, vec![(event, None)]);
                }
            }
            Some(log) => self.send(&log.task_id, vec![(event, None)]),
            None => self.send("", vec![(event, None)]),
        }
    }

    /// Commit `step` for `task` with `events` recorded in the same
    /// transaction (shared with other tasks' steps, see
    /// [`Store::commit`]), then publish them: a front-end hears of a step
    /// only once all of it is durable. When the bus is not bound to
    /// `task` the events go out without positions. A step that fails to
    /// commit publishes nothing.
    pub async fn commit(
        &self,
        store: &Store,
        task: &str,
        step: Step<'_>,
        mut events: Vec<TaskEvent>,
    ) -> Result<Committed, StoreError> {
        let step = self.settle(task, step);
        let (step, recorded) = self.record(task, step, &mut events);
        let bus = self.clone();
        let owner = task.to_owned();
        // Published by the committer the moment the step is durable.
        let publish: OnCommit =
            Box::new(move |committed| bus.announce(&owner, events, &recorded, committed));
        store
            .commit_then(task, step.prepare(task)?, Some(publish))
            .await
    }

    /// [`EventBus::commit`] in a transaction of its own, now, for the
    /// rare step taken where the loop cannot wait (a failure report).
    pub fn commit_now(
        &self,
        store: &Store,
        task: &str,
        step: Step<'_>,
        mut events: Vec<TaskEvent>,
    ) -> Result<Committed, StoreError> {
        let step = self.settle(task, step);
        let (step, recorded) = self.record(task, step, &mut events);
        let committed = store.commit_step(task, step)?;
        self.announce(task, events, &recorded, &committed);
        Ok(committed)
    }

    /// Add the events to be recorded (when the bus is bound to `task`) to
    /// `step`; returns it and which of `events` it records.
    fn record<'a>(
        &self,
        task: &str,
        step: Step<'a>,
        events: &mut [TaskEvent],
    ) -> (Step<'a>, Vec<usize>) {
        let bound = self.lock().log.as_ref().is_some_and(|l| l.task_id == task);
        record_in(task, step, events, bound)
    }

    /// Broadcast the events a new task's creation recorded
    /// ([`record_in`], positions in `committed`), as its run starts on
    /// this bus: they were durable before anyone could follow the task.
    pub(crate) fn announce_opening(
        &self,
        task: &str,
        events: Vec<TaskEvent>,
        recorded: &[usize],
        committed: &Committed,
    ) {
        self.announce(task, events, recorded, committed);
    }

    /// Broadcast `events` of a committed step, the recorded ones (at
    /// `recorded`) with the positions the commit gave them.
    fn announce(
        &self,
        task: &str,
        events: Vec<TaskEvent>,
        recorded: &[usize],
        committed: &Committed,
    ) {
        let mut seqs = vec![None; events.len()];
        for (slot, seq) in recorded.iter().zip(&committed.events) {
            if let Some(s) = seqs.get_mut(*slot) {
                *s = Some(*seq);
            }
        }
        self.send(task, events.into_iter().zip(seqs).collect());
    }

    /// Broadcast events (recorded ones with their positions, in order).
    fn send(&self, task: &str, events: Vec<(TaskEvent, Option<i64>)>) {
        let mut state = self.lock();
        for (event, seq) in events {
            if let Some(seq) = seq {
                state.published = state.published.max(seq);
                tracing::trace!(target: "roost::events::publish", task, seq, "event published");
            }
            let _ = self.tx.send(Arc::new(Envelope {
                task_id: task.to_owned(),
                seq,
                event,
            }));
        }
    }

    /// Pass on an event of another task (a subtask's, as its parent
    /// follows it) to this bus's subscribers, live only: it keeps its own
    /// task id, loses its position (which is in its own task's log) and is
    /// not recorded here.
    pub fn forward(&self, envelope: &Envelope) {
        let _ = self.tx.send(Arc::new(Envelope {
            task_id: envelope.task_id.clone(),
            seq: None,
            event: envelope.event.clone(),
        }));
    }

    /// Pass on a recorded event of this bus's task committed by another
    /// host, as it is (its position kept): a front-end here follows a task
    /// that runs there.
    pub fn relay(&self, envelope: Envelope) {
        let _ = self.tx.send(Arc::new(envelope));
    }

    /// How many receivers listen.
    pub fn receivers(&self) -> usize {
        self.tx.receiver_count()
    }

    /// Receive events published from now on.
    pub fn subscribe(&self) -> Subscription {
        self.tx.subscribe()
    }

    /// Subscribe, and read back every recorded event after position
    /// `after` (0 for all): the past from the log, the rest from the
    /// receiver, none missed or repeated. Events committed but not yet
    /// broadcast are left to the receiver. The log is read after the bus's
    /// lock is let go (what was published by then is durable): a
    /// front-end's replay never holds up the task's publishing.
    pub async fn replay(&self, after: i64) -> Result<(Vec<Envelope>, Subscription), ReplayError> {
        let (rx, published, log) = {
            let state = self.lock();
            let log = state
                .log
                .as_ref()
                .map(|l| (l.store.clone(), l.task_id.clone()));
            (self.tx.subscribe(), state.published, log)
        };
        let past = match log {
            Some((store, task)) => {
                let mut past = recorded_after(&store, &task, after).await?;
                past.retain(|e| e.seq.is_none_or(|s| s <= published));
                past
            }
            None => Vec::new(),
        };
        Ok((past, rx))
    }
}

/// Add `events` that are recorded (all of them when `bound`: the bus the
/// step goes through follows `task`'s log) to `step`; returns it and which
/// of `events` it records.
pub(crate) fn record_in<'a>(
    task: &str,
    mut step: Step<'a>,
    events: &mut [TaskEvent],
    bound: bool,
) -> (Step<'a>, Vec<usize>) {
    let mut recorded = Vec::with_capacity(events.len());
    for (i, event) in events.iter_mut().enumerate() {
        if !(bound && event.is_recorded()) {
            continue;
        }
        // A result whose output the step's message holds is recorded
        // without a second copy of it (read back from the message):
        // the output is set aside while the event is written.
        let kept = match event {
            TaskEvent::ToolCallResult {
                id,
                result: Ok(output),
                ..
            } if step.holds_output(id, output) => Some(std::mem::take(output)),
            _ => None,
        };
        let json = serde_json::to_string(&*event);
        let lean = kept.is_some();
        if let (Some(output), TaskEvent::ToolCallResult { result, .. }) = (kept, &mut *event) {
            *result = Ok(output);
        }
        match json {
            Ok(json) => {
                step = if lean {
                    step.result_event(json)
                } else {
                    step.event(json)
                };
                recorded.push(i);
            }
            Err(e) => tracing::warn!(task_id = task, "event not recorded: {e}"),
        }
    }
    (step, recorded)
}

/// Events a replay reads at a time: between pages the read connection is
/// free for another front-end's replay.
const REPLAY_PAGE: usize = 512;

/// Every recorded event of `task` after position `after`, decoded, read
/// in pages through the store's read connection (a long log never holds
/// up the task's commits), awaited: a front-end's stream that follows a
/// task from a position parks no runtime worker on a shared database.
pub async fn recorded_after(
    store: &Store,
    task: &str,
    after: i64,
) -> Result<Vec<Envelope>, ReplayError> {
    let mut out = Vec::new();
    let mut from = after;
    loop {
        let page = store.read_events_after(task, from, REPLAY_PAGE).await?;
        let full = page.len() == REPLAY_PAGE;
        for row in page {
            from = row.seq;
            out.push(envelope_of(task, row)?);
        }
        if !full {
            return Ok(out);
        }
    }
}

/// The event `row` of `task`'s log, decoded, with a result's output kept
/// in the conversation read back into it.
fn envelope_of(task: &str, row: StoredEvent) -> Result<Envelope, ReplayError> {
    let corrupt = |detail: String| ReplayError::Corrupt {
        task: task.to_owned(),
        seq: row.seq,
        detail,
    };
    let mut event =
        serde_json::from_str::<TaskEvent>(&row.event).map_err(|e| corrupt(e.to_string()))?;
    if let Some(output) = row.output {
        match &mut event {
            TaskEvent::ToolCallResult { result, .. } => *result = Ok(output),
            _ => {
                return Err(corrupt(
                    "an output kept for an event that is not a result".into(),
                ));
            }
        }
    }
    Ok(Envelope {
        task_id: task.to_owned(),
        seq: Some(row.seq),
        event,
    })
}
