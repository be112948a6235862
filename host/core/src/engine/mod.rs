//! The engine: many tasks at once in one process, each addressable by id,
//! driven from any front-end. A task is created (persisted, at once),
//! started or resumed (its loop spawned on the runtime, at once), watched
//! (`subscribe`), steered (`cancel`, `send_message`), questioned through
//! durable asks that any front-end lists (`pending_asks`) and answers
//! (`answer`), and waited for (`wait`). The CLI is its first client.

mod builder;

pub use builder::{BuildError, EngineBuilder};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::asks::Answer;
use crate::events::{Envelope, EventBus, ReplayError, Subscription, TaskEvent, recorded_after};
use crate::store::{StoreError, StoredAsk, TaskRecord};
use crate::task::{Agent, AskError, Control, Responder, TaskError, TaskOutcome, answer_asks};

/// What a new task is.
#[derive(Debug, Clone)]
pub struct TaskSpec {
    /// The user's prompt.
    pub prompt: String,
    /// The workspace it works in.
    pub workspace: PathBuf,
    /// Mode slug.
    pub mode: String,
}

/// Why the engine refused.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No task with this id runs (or ran) in this engine.
    #[error("no task {0} in this engine (create or resume it first)")]
    NotHere(String),
    /// The task was started already.
    #[error("task {0} was started already")]
    AlreadyStarted(String),
    /// The task's loop failed.
    #[error(transparent)]
    Task(#[from] TaskError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The event log could not be read back.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// An answer was not taken.
    #[error(transparent)]
    Ask(#[from] AskError),
    /// The task's loop ended without an outcome (it panicked).
    #[error("task {0} ended without an outcome")]
    Lost(String),
}

/// A task this engine runs: its event bus, its control, its outcome.
struct Running {
    events: EventBus,
    control: Control,
    started: bool,
    /// Whether starting it resumes stored history (else it is new).
    resume: bool,
    outcome: watch::Sender<Option<Result<TaskOutcome, String>>>,
}

/// Runs tasks concurrently on the current tokio runtime.
pub struct Engine {
    agent: Arc<Agent>,
    tasks: Mutex<HashMap<String, Running>>,
}

impl Engine {
    /// An engine running its tasks with `agent`'s model, tools and store.
    pub fn new(agent: Agent) -> Arc<Self> {
        Arc::new(Self {
            agent: Arc::new(agent),
            tasks: Mutex::new(HashMap::new()),
        })
    }

    /// The services the tasks run with.
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Running>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn register(&self, id: &str, resume: bool) -> (EventBus, Control) {
        let (outcome, _) = watch::channel(None);
        let events = EventBus::for_task(id, &self.agent.store);
        let control = Control::default();
        self.lock().insert(
            id.to_owned(),
            Running {
                events: events.clone(),
                control: control.clone(),
                started: false,
                resume,
                outcome,
            },
        );
        (events, control)
    }

    /// Create a task (persisted) and return its id at once; it runs when
    /// [`Engine::start`]ed. Subscribe in between to see all its events.
    pub fn create_task(&self, spec: &TaskSpec) -> Result<String, EngineError> {
        let task = self
            .agent
            .create(&spec.prompt, &spec.workspace, &spec.mode)?;
        self.register(&task.id, false);
        Ok(task.id)
    }

    /// Get a stored task (by id or unambiguous prefix) ready to resume and
    /// return its full id; it continues when [`Engine::start`]ed.
    /// Subscribe in between to see all its events.
    pub fn prepare_resume(&self, id: &str) -> Result<String, EngineError> {
        let task = self.agent.store.find_task(id)?;
        if task.status.is_final() {
            return Err(TaskError::NotResumable {
                id: task.id,
                status: task.status,
            }
            .into());
        }
        if self
            .lock()
            .get(&task.id)
            .is_some_and(|r| r.started && r.outcome.borrow().is_none())
        {
            return Err(EngineError::AlreadyStarted(task.id));
        }
        self.register(&task.id, true);
        Ok(task.id)
    }

    /// Resume a stored task at once ([`Engine::prepare_resume`], then
    /// [`Engine::start`]); returns its full id.
    pub fn resume(self: &Arc<Self>, id: &str) -> Result<String, EngineError> {
        let id = self.prepare_resume(id)?;
        self.start(&id)?;
        Ok(id)
    }

    /// Start a created (or prepared) task's loop on the runtime; returns
    /// at once.
    pub fn start(self: &Arc<Self>, id: &str) -> Result<(), EngineError> {
        let (events, control, resume) = {
            let mut tasks = self.lock();
            let r = tasks
                .get_mut(id)
                .ok_or_else(|| EngineError::NotHere(id.to_owned()))?;
            if r.started {
                return Err(EngineError::AlreadyStarted(id.to_owned()));
            }
            r.started = true;
            (r.events.clone(), r.control.clone(), r.resume)
        };
        let engine = Arc::clone(self);
        let id = id.to_owned();
        tokio::spawn(async move {
            let res = if resume {
                engine.agent.resume_with(&id, &events, &control).await
            } else {
                engine.announce_and_run(&id, &events, &control).await
            };
            engine.finish(&id, res);
        });
        Ok(())
    }

    /// Announce a new task (only now can anyone be subscribed) and run it.
    async fn announce_and_run(
        &self,
        id: &str,
        events: &EventBus,
        control: &Control,
    ) -> Result<TaskOutcome, TaskError> {
        let task = self.agent.store.get_task(id)?;
        events
            .publish(TaskEvent::TaskCreated {
                mode: task.mode.clone(),
                workspace: task.workspace.clone(),
            })
            .await;
        self.agent.run_record(task, events, control).await
    }

    fn finish(&self, id: &str, res: Result<TaskOutcome, TaskError>) {
        if let Some(r) = self.lock().get(id) {
            r.outcome.send_replace(Some(res.map_err(|e| e.to_string())));
        }
    }

    /// Wait for a started task's outcome.
    pub async fn wait(&self, id: &str) -> Result<TaskOutcome, EngineError> {
        let mut rx = self
            .lock()
            .get(id)
            .map(|r| r.outcome.subscribe())
            .ok_or_else(|| EngineError::NotHere(id.to_owned()))?;
        let done = rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| EngineError::Lost(id.to_owned()))?;
        match done.as_ref() {
            Some(Ok(o)) => Ok(o.clone()),
            Some(Err(e)) => Err(EngineError::Lost(format!("{id}: {e}"))),
            None => Err(EngineError::Lost(id.to_owned())),
        }
    }

    /// Ask a task to stop for `reason`: its current tool call finishes, its
    /// history is repaired, it ends `aborted` (and stays resumable).
    pub fn cancel(&self, id: &str, reason: &str) -> Result<(), EngineError> {
        self.control(id)?.cancel(reason);
        Ok(())
    }

    /// Queue a user message the task picks up at its next turn.
    pub fn send_message(&self, id: &str, text: &str) -> Result<(), EngineError> {
        self.control(id)?.send_message(text);
        Ok(())
    }

    fn control(&self, id: &str) -> Result<Control, EngineError> {
        self.lock()
            .get(id)
            .map(|r| r.control.clone())
            .ok_or_else(|| EngineError::NotHere(id.to_owned()))
    }

    /// Events of a task from now on.
    pub fn subscribe(&self, id: &str) -> Result<Subscription, EngineError> {
        self.lock()
            .get(id)
            .map(|r| r.events.subscribe())
            .ok_or_else(|| EngineError::NotHere(id.to_owned()))
    }

    /// Everything a front-end that saw task `id`'s events up to position
    /// `after` missed (0 for all): the recorded events after it and, when
    /// the task runs in this engine, a receiver for the rest, with none
    /// missed or repeated. A task of the store that is not running here
    /// has only its recorded events.
    pub fn events_after(
        &self,
        id: &str,
        after: i64,
    ) -> Result<(Vec<Envelope>, Option<Subscription>), EngineError> {
        let bus = self.lock().get(id).map(|r| r.events.clone());
        match bus {
            Some(bus) => {
                let (past, rx) = bus.replay(after)?;
                Ok((past, Some(rx)))
            }
            None => {
                let task = self.agent.store.get_task(id)?;
                Ok((recorded_after(&self.agent.store, &task.id, after)?, None))
            }
        }
    }

    /// The event bus of a task (to drive a front-end beside it).
    pub fn events(&self, id: &str) -> Result<EventBus, EngineError> {
        self.lock()
            .get(id)
            .map(|r| r.events.clone())
            .ok_or_else(|| EngineError::NotHere(id.to_owned()))
    }

    /// Answer the open question `ask_id` of task `task_id`.
    pub fn answer(&self, task_id: &str, ask_id: &str, answer: Answer) -> Result<(), EngineError> {
        Ok(self.agent.answer(task_id, ask_id, answer)?)
    }

    /// Answer every question task `id` asks with `responder` (a front-end
    /// that answers as questions come, like a terminal), until its event
    /// bus closes; run it beside [`Engine::wait`]. Subscribes at once.
    pub fn answer_with<'a>(
        &'a self,
        id: &str,
        responder: &'a dyn Responder,
    ) -> Result<impl std::future::Future<Output = ()> + 'a, EngineError> {
        let events = self.subscribe(id)?;
        Ok(answer_asks(
            events,
            &self.agent.asks,
            &self.agent.store,
            responder,
        ))
    }

    /// The questions task `task_id` waits on (open asks, oldest first).
    pub fn pending_asks(&self, task_id: &str) -> Result<Vec<StoredAsk>, EngineError> {
        Ok(self.agent.store.open_asks(task_id)?)
    }

    /// The most recent tasks of the store, newest first.
    pub fn list_tasks(&self, limit: usize) -> Result<Vec<TaskRecord>, EngineError> {
        Ok(self.agent.store.list_tasks(limit)?)
    }

    /// One task's record (by id or unambiguous prefix).
    pub fn get_task(&self, id: &str) -> Result<TaskRecord, EngineError> {
        Ok(self.agent.store.find_task(id)?)
    }
}
