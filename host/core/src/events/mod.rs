//! The typed event stream of a task: everything a front-end shows (CLI
//! spinner and diffs, `--json` NDJSON, HTTP SSE) comes from here. Events are
//! published after the state they describe is durable, and are themselves
//! recorded in the task's event log (all but the streaming partials) before
//! anyone hears of them: each carries its task id and its position in that
//! log, so a front-end that reconnects reads what it missed from the store
//! ([`EventBus::replay`]) and continues with the live stream.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use crate::store::{Committed, Step, Store, StoreError};

use crate::asks::Ask;
use crate::llm::Usage;
use crate::tools::ToolError;

/// Capacity of each task's broadcast channel; a subscriber that lags further
/// behind skips events (recorded ones it can read back from the log; the
/// CLI prints a message whose streamed text it lost from the final one).
/// Slots are allocated up front, cache-line padded: 1,024 of them cost
/// ~180 KiB a task, which ten thousand tasks could not afford.
const CHANNEL_CAPACITY: usize = 256;

/// One thing that happened in a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TaskEvent {
    /// The task exists (persisted).
    TaskCreated {
        /// Mode slug.
        mode: String,
        /// Workspace path.
        workspace: String,
    },
    /// The loop started or resumed.
    TaskStarted {
        /// Whether this is a resume of earlier history.
        resumed: bool,
    },
    /// A model request is being made (turn number, attempt).
    RequestStarted {
        /// Turn number (1-based).
        turn: u32,
    },
    /// A provider error that will be retried.
    Retrying {
        /// Attempt that failed.
        attempt: u32,
        /// Delay before the next attempt, in ms.
        delay_ms: u64,
        /// Why.
        reason: String,
    },
    /// Streaming text from the model (not yet durable).
    MessagePartial {
        /// Text delta.
        delta: String,
    },
    /// Streaming arguments of a tool call (best-effort partial parse).
    ToolCallPartial {
        /// Call id.
        id: String,
        /// Tool name.
        tool: String,
        /// Arguments parsed so far.
        args: serde_json::Value,
    },
    /// A complete assistant message, now durable.
    MessageFinal {
        /// Assistant text of the message.
        text: String,
    },
    /// The model asked for a tool call.
    ToolCallRequested {
        /// Call id.
        id: String,
        /// Tool name.
        tool: String,
        /// Arguments.
        args: serde_json::Value,
    },
    /// A call was approved (by policy or the user).
    ToolCallApproved {
        /// Call id.
        id: String,
        /// Whether a policy (not a person) approved it.
        auto: bool,
    },
    /// A call was denied.
    ToolCallDenied {
        /// Call id.
        id: String,
        /// User feedback, if any.
        feedback: Option<String>,
    },
    /// A call finished (result durable in history).
    ToolCallResult {
        /// Call id.
        id: String,
        /// Tool name.
        tool: String,
        /// Output text, or the error.
        result: Result<String, ToolError>,
        /// Unified diff of the files the call changed, if any.
        diff: Option<String>,
    },
    /// A mode hook decided on a call (anything but a plain allow).
    HookDecided {
        /// Call id.
        id: String,
        /// Hook name.
        hook: String,
        /// `deny`, `ask`, `rewrite` or `failed`.
        decision: String,
        /// The reason, question, new arguments or failure.
        detail: String,
    },
    /// The task waits for the user.
    AskRequired {
        /// Id to answer it by.
        ask_id: String,
        /// The question in one line.
        text: String,
        /// What is asked (its `kind` says which question it is).
        ask: Ask,
    },
    /// The task completed.
    Completed {
        /// The completion result.
        result: String,
        /// Token totals.
        usage: Usage,
        /// Cost in USD.
        cost: f64,
    },
    /// The task was aborted.
    Aborted {
        /// Why.
        reason: String,
    },
    /// The task paused at a limit (`--max-turns`); it can be resumed.
    Paused {
        /// Why.
        reason: String,
    },
    /// The task failed.
    Failed {
        /// Why.
        error: String,
    },
    /// The task changed mode.
    ModeSwitched {
        /// New mode slug.
        mode: String,
    },
    /// Something the user should know that did not stop the task (an
    /// invalid mode file, …).
    Warning {
        /// What happened.
        message: String,
    },
    /// The todo list changed.
    TodosUpdated {
        /// The list as markdown.
        markdown: String,
    },
}

impl TaskEvent {
    /// Whether the event is recorded in the task's log. Streaming partials
    /// are not: the final message or call that follows them is.
    pub fn is_recorded(&self) -> bool {
        !matches!(
            self,
            Self::MessagePartial { .. } | Self::ToolCallPartial { .. }
        )
    }
}

/// An event as published: the task it belongs to and, for a recorded
/// event, its position in that task's log (1-based, no gaps). Serialised
/// flat: `{"task_id": …, "seq": …, "event": "…", …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// Task the event belongs to.
    pub task_id: String,
    /// Position in the task's event log; `None` for streaming partials
    /// (and on a bus with no log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<i64>,
    /// What happened.
    #[serde(flatten)]
    pub event: TaskEvent,
}

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

/// Per-task broadcast of [`Envelope`]s, recorded in the task's event log
/// once the bus is bound to its task ([`EventBus::bind`]). Cheap to clone
/// (clones share the binding); publishing with no subscriber is fine.
#[derive(Clone)]
pub struct EventBus {
    tx: broadcast::Sender<Arc<Envelope>>,
    /// The log, held while publishing so log order is broadcast order.
    log: Arc<Mutex<Option<EventLog>>>,
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
            log: Arc::new(Mutex::new(None)),
        }
    }

    /// A bus recording into `task_id`'s log in `store`.
    pub fn for_task(task_id: &str, store: &Store) -> Self {
        let bus = Self::new();
        bus.bind(task_id, store);
        bus
    }

    fn lock(&self) -> MutexGuard<'_, Option<EventLog>> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Record this bus's events into `task_id`'s log from now on (a bus
    /// reused for a later task follows it).
    pub fn bind(&self, task_id: &str, store: &Store) {
        *self.lock() = Some(EventLog {
            task_id: task_id.to_owned(),
            store: store.clone(),
        });
    }

    /// The task this bus is bound to.
    pub fn task_id(&self) -> Option<String> {
        self.lock().as_ref().map(|l| l.task_id.clone())
    }

    /// Record `event` (unless it is a partial) and publish it to every
    /// current subscriber. A log that cannot be written is reported in the
    /// logs and the event still goes out, without a position.
    pub fn publish(&self, event: TaskEvent) {
        let log = self.lock();
        let (task_id, seq) = match log.as_ref() {
            Some(log) if event.is_recorded() => {
                let seq = serde_json::to_string(&event)
                    .map_err(|e| e.to_string())
                    .and_then(|json| {
                        log.store
                            .append_event(&log.task_id, &json)
                            .map_err(|e| e.to_string())
                    });
                match seq {
                    Ok(seq) => (log.task_id.clone(), Some(seq)),
                    Err(e) => {
                        tracing::warn!(task_id = %log.task_id, "event not recorded: {e}");
                        (log.task_id.clone(), None)
                    }
                }
            }
            Some(log) => (log.task_id.clone(), None),
            None => (String::new(), None),
        };
        let _ = self.tx.send(Arc::new(Envelope {
            task_id,
            seq,
            event,
        }));
        drop(log);
    }

    /// Commit `step` for `task` with `events` recorded in the same
    /// transaction, then publish them: a front-end hears of a step only
    /// once all of it is durable, and the step costs one commit. When the
    /// bus is not bound to `task` the events go out without positions.
    /// A step that fails to commit publishes nothing.
    pub fn commit(
        &self,
        store: &Store,
        task: &str,
        mut step: Step<'_>,
        events: Vec<TaskEvent>,
    ) -> Result<Committed, StoreError> {
        let log = self.lock();
        let bound = log.as_ref().is_some_and(|l| l.task_id == task);
        let mut recorded = Vec::with_capacity(events.len());
        for (i, event) in events.iter().enumerate() {
            if !(bound && event.is_recorded()) {
                continue;
            }
            match serde_json::to_string(event) {
                Ok(json) => {
                    step = step.event(json);
                    recorded.push(i);
                }
                Err(e) => tracing::warn!(task_id = task, "event not recorded: {e}"),
            }
        }
        let committed = store.commit_step(task, &step)?;
        let mut seqs = vec![None; events.len()];
        for (slot, seq) in recorded.iter().zip(&committed.events) {
            if let Some(s) = seqs.get_mut(*slot) {
                *s = Some(*seq);
            }
        }
        for (event, seq) in events.into_iter().zip(seqs) {
            let _ = self.tx.send(Arc::new(Envelope {
                task_id: task.to_owned(),
                seq,
                event,
            }));
        }
        drop(log);
        Ok(committed)
    }

    /// Receive events published from now on.
    pub fn subscribe(&self) -> Subscription {
        self.tx.subscribe()
    }

    /// Subscribe, and read back every recorded event after position
    /// `after` (0 for all): the past from the log, the rest from the
    /// receiver, none missed or repeated (nothing is published in between).
    pub fn replay(&self, after: i64) -> Result<(Vec<Envelope>, Subscription), ReplayError> {
        let log = self.lock();
        let rx = self.tx.subscribe();
        let past = match log.as_ref() {
            Some(log) => recorded_after(&log.store, &log.task_id, after)?,
            None => Vec::new(),
        };
        Ok((past, rx))
    }
}

/// Every recorded event of `task` after position `after`, decoded.
pub fn recorded_after(store: &Store, task: &str, after: i64) -> Result<Vec<Envelope>, ReplayError> {
    store
        .events_after(task, after, usize::MAX)?
        .into_iter()
        .map(|row| {
            serde_json::from_str::<TaskEvent>(&row.event)
                .map(|event| Envelope {
                    task_id: task.to_owned(),
                    seq: Some(row.seq),
                    event,
                })
                .map_err(|e| ReplayError::Corrupt {
                    task: task.to_owned(),
                    seq: row.seq,
                    detail: e.to_string(),
                })
        })
        .collect()
}
