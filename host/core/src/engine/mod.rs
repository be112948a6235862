//! The engine: many tasks at once in one process, each addressable by id,
//! each with its own settings and model, driven from any front-end. A task
//! is created (persisted, at once), started or resumed (its loop spawned
//! on the runtime under a supervisor, at once), watched (`subscribe`),
//! steered (`cancel`, `send_message`), questioned through durable asks
//! that any front-end lists (`pending_asks`) and answers (`answer`), and
//! waited for (`wait`). A finished task leaves memory; its record stays in
//! the store ([`Records`]). The CLI is its first client.

mod approvals;
mod builder;
mod checkpoints;
pub use checkpoints::UndoPlan;
mod delegation;
mod endpoints;
mod error;
mod hosts;
mod records;
mod tokens;

pub use approvals::{Approvals, workspace_key};
pub use builder::{BuildError, EngineBuilder};
pub use endpoints::{ConfigEndpoints, Endpoints, OneEndpoint, describe as describe_endpoint};
pub use error::EngineError;
pub use records::{Listed, Page, Records};
pub use roost_protocol::task::{Endpoint, TaskSpec};
// The store's types the engine's API speaks (records, tokens, listings):
// a front-end names them here and never imports the store.
pub use crate::store::{
    StoreError, StoreLocation, TaskFilter, TaskRecord, TodoItem, TodoState, TokenRecord, UiMessage,
    now_ms,
};
pub use tokens::{NewToken, TokenError, Tokens};

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::watch;

use crate::asks::Answer;
use crate::config::RecordedEndpoint;
use crate::events::{Envelope, EventBus, Subscription, recorded_after};
use crate::llm::Role;
use crate::store::{HostRequest, StoredAsk};
use crate::task::{
    Agent, ApprovalPolicy, Control, Creation, NewRun, Responder, TaskError, TaskOutcome,
    WorkspaceCheck, answer_asks,
};
use crate::turn::{Lent, SpawnHandle, Spawner, TaskSetup};
use roost_protocol::{TaskSettings, UiRow, UiSubtype};
use roost_sandbox::capability::Workspace;

/// Outcomes of finished tasks kept for a late [`Engine::wait`]; older ones
/// are read back from the store's event log.
const FINISHED_KEPT: usize = 1024;

/// What a resume may change: the endpoint (all empty: the task's own), the
/// approval policy and the turn limit (absent: the task's own).
#[derive(Debug, Clone, Default)]
pub struct ResumeSpec {
    /// Another endpoint to continue on.
    pub endpoint: Endpoint,
    /// Another approval policy.
    pub approval: Option<ApprovalPolicy>,
    /// Another turn limit.
    pub max_turns: Option<u32>,
    /// A new user message: it reopens a completed task, or joins a
    /// stopped one's conversation at its next turn.
    pub message: Option<String>,
    /// Another mode to continue in.
    pub mode: Option<String>,
}

/// A stored task made ready to continue.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Its full id.
    pub id: String,
    /// When it continues on another endpoint than it last ran on: `now
    /// (was before)`, also recorded in its history.
    pub endpoint_change: Option<String>,
}

/// A task this engine runs: its event bus, its control, its setup until
/// it starts, its outcome.
struct Running {
    events: EventBus,
    control: Control,
    /// Taken when the loop starts.
    setup: Option<TaskSetup>,
    /// How its loop begins; taken with `setup` when it starts.
    begin: Option<Begin>,
    /// What its front-end's session lent it (its subtasks get it too).
    lent: Lent,
    outcome: watch::Sender<Option<TaskOutcome>>,
}

/// How a held task's loop begins.
enum Begin {
    /// A new task, with the claim its creation took and its record as
    /// created (nothing changes it before it starts: a created task is
    /// not resumable elsewhere, and it is claimed).
    New(Box<NewRun>),
    /// A stored task, from its history (it claims the task as it starts).
    Resume,
}

#[derive(Default)]
struct Tasks {
    running: HashMap<String, Running>,
    finished: VecDeque<(String, TaskOutcome)>,
}

impl Tasks {
    /// Task `id`, held here and not started yet.
    fn unstarted(&mut self, id: &str) -> Result<&mut Running, EngineError> {
        let r = self
            .running
            .get_mut(id)
            .ok_or_else(|| EngineError::NotHere(id.to_owned()))?;
        if r.setup.is_none() {
            return Err(EngineError::AlreadyStarted(id.to_owned()));
        }
        Ok(r)
    }
}

/// Runs tasks concurrently on the current tokio runtime.
pub struct Engine {
    agent: Arc<Agent>,
    endpoints: Arc<dyn Endpoints>,
    tasks: Mutex<Tasks>,
    /// Each tree's slots for running subtasks (by root id).
    trees: delegation::TreeSlots,
    /// This engine, weakly (handed to the tasks it runs).
    this: Weak<Engine>,
    /// Its share of a store with other hosts.
    hosts: hosts::Hosts,
    /// How it opens a task's workspace at each start.
    workspace_check: Mutex<WorkspaceCheck>,
}

impl Engine {
    /// An engine running its tasks with `agent`'s tools and store, on the
    /// models `endpoints` opens.
    pub fn new(agent: Agent, endpoints: Arc<dyn Endpoints>) -> Arc<Self> {
        Arc::new_cyclic(|this| Self {
            agent: Arc::new(agent),
            endpoints,
            tasks: Mutex::new(Tasks::default()),
            trees: delegation::TreeSlots::default(),
            this: this.clone(),
            hosts: hosts::Hosts::default(),
            workspace_check: Mutex::new(WorkspaceCheck::AsNamed),
        })
    }

    /// Run tenants' tasks only beneath their tenants' roots (a server):
    /// from now on, every start of a task — created, resumed, continued,
    /// or taken from a shared store's work queue — opens its workspace
    /// beneath a root of its tenant (the roots of the tenant's valid
    /// tokens, and `local`'s root for the server's local tenant),
    /// following no symbolic link, or refuses it: the task ends `failed`
    /// with the reason and nothing of it runs.
    pub fn confine_to_tenant_roots(&self, local: Option<(&str, &std::path::Path)>) {
        *self
            .workspace_check
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = WorkspaceCheck::TenantRoots {
            local: local.map(|(t, r)| (t.to_owned(), r.to_path_buf())),
        };
    }

    /// How a task's start (or a diff, a restore) opens its workspace now.
    fn workspace_check(&self) -> WorkspaceCheck {
        self.workspace_check
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The services the tasks run with: the engine's own, and its tests'
    /// and benches' (feature `test-support`). A front-end goes through
    /// sessions and the engine's methods, never around them.
    #[cfg(feature = "test-support")]
    pub fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The services the tasks run with (the engine's own).
    #[cfg(not(feature = "test-support"))]
    pub(crate) fn agent(&self) -> &Agent {
        &self.agent
    }

    /// The tools a task may be offered, as a front-end lists them.
    pub fn tools(&self) -> Vec<roost_protocol::api::ToolView> {
        self.agent
            .registry
            .iter()
            .map(|t| roost_protocol::api::ToolView {
                name: t.spec.name.clone(),
                group: t.spec.group,
                provider: t.provider().to_owned(),
                description: t.spec.description.clone(),
            })
            .collect()
    }

    /// The store's records, read-only.
    pub fn records(&self) -> Records {
        Records::new(self.agent.store.clone())
    }

    /// The server tokens of this engine's store.
    pub fn tokens(&self) -> Tokens {
        Tokens::new(self.agent.store.clone())
    }

    /// Why commands are less safe than they should be, to show at every
    /// start (they run unconfined).
    pub fn commands_warning(&self) -> Option<&'static str> {
        self.agent.commands.as_ref().and_then(|c| c.warning())
    }

    /// The MCP servers of every workspace (to trust a workspace's own
    /// before its task starts).
    pub fn mcp(&self) -> Option<&Arc<crate::mcp::McpHub>> {
        self.agent.mcp.as_ref()
    }

    /// The approvals saved per workspace ("always allow" answers).
    pub fn approvals(&self) -> Approvals {
        Approvals::new(self.agent.store.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tasks> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A weak handle a task's loop reaches this engine through.
    pub fn spawner(&self) -> SpawnHandle {
        let this: Weak<dyn Spawner> = self.this.clone();
        SpawnHandle::new(this)
    }

    fn register(&self, id: &str, setup: TaskSetup, begin: Begin) -> (EventBus, Control) {
        let (outcome, _) = watch::channel(None);
        let events = match begin {
            Begin::New(..) => EventBus::for_new_task(id, &self.agent.store),
            Begin::Resume => EventBus::for_task(id, &self.agent.store),
        };
        let control = Control::default();
        self.lock().running.insert(
            id.to_owned(),
            Running {
                events: events.clone(),
                control: control.clone(),
                lent: setup.lent.clone(),
                setup: Some(setup),
                begin: Some(begin),
                outcome,
            },
        );
        (events, control)
    }

    /// The model and config of a task with `settings`, on the endpoint
    /// `want` (resuming `recorded`, a scripted transcript at reply
    /// `scripted_start`).
    fn setup(
        &self,
        want: &Endpoint,
        recorded: Option<RecordedEndpoint<'_>>,
        scripted_start: usize,
        settings: &TaskSettings,
    ) -> Result<TaskSetup, EngineError> {
        let (provider, profile) = self.endpoints.open(want, recorded, scripted_start)?;
        let mut config = self.agent.config.clone();
        profile.apply(&mut config);
        Ok(TaskSetup {
            provider,
            config: config.with_settings(settings),
            spawner: self.spawner(),
            lent: Lent::default(),
            trace_parent: None,
        })
    }

    /// Lend a created (or prepared) task what its front-end's session
    /// holds (an editor's MCP servers and buffers), from its start on; the
    /// subtasks it starts are lent it too. Refused once it runs.
    pub fn lend(&self, id: &str, lent: Lent) -> Result<(), EngineError> {
        let mut tasks = self.lock();
        let r = tasks.unstarted(id)?;
        if let Some(setup) = r.setup.as_mut() {
            setup.lent = lent.clone();
        }
        r.lent = lent;
        Ok(())
    }

    /// What task `id`, running here, was lent (nothing when it is not).
    fn lent_to(&self, id: &str) -> Lent {
        self.lock()
            .running
            .get(id)
            .map(|r| r.lent.clone())
            .unwrap_or_default()
    }

    /// The settings `spec` asks for, the engine's defaults where it is
    /// silent.
    fn settings_of(&self, spec: &TaskSpec) -> TaskSettings {
        let defaults = self.agent.config.settings();
        TaskSettings {
            approval: spec.approval.clone().unwrap_or(defaults.approval),
            max_turns: spec.max_turns.unwrap_or(defaults.max_turns),
            inherited: defaults.inherited,
            delegation: spec.delegation,
            trace: None,
        }
    }

    /// Create a task (persisted, with its settings and endpoint) and return
    /// its id at once; it runs when [`Engine::start`]ed. Subscribe in
    /// between to see all its events. An unknown mode, a workspace that
    /// does not open or an endpoint that cannot be opened is refused
    /// before anything is stored.
    pub async fn create_task(&self, spec: &TaskSpec) -> Result<String, EngineError> {
        self.create(spec, None).await
    }

    /// [`Engine::create_task`] for `owner` (a server's tenant): the task
    /// is recorded as theirs, and so are the subtasks it starts.
    pub async fn create_task_for(
        &self,
        spec: &TaskSpec,
        owner: &str,
    ) -> Result<String, EngineError> {
        self.create(spec, Some(owner)).await
    }

    /// [`Engine::create_task_for`] on a shared store, for the work queue:
    /// recorded, never held here, so whichever host takes it from the
    /// queue (this one too) resumes it from the store.
    pub async fn enqueue_task_for(
        &self,
        spec: &TaskSpec,
        owner: &str,
    ) -> Result<String, EngineError> {
        let ws = open_workspace(spec)?;
        let (settings, setup) = self.prepare_new(spec, &ws)?;
        // The work queue is woken in the creating transaction.
        let task = self
            .agent
            .create(&creation(spec, &setup, &settings, Some(owner), &ws))
            .await?;
        Ok(task.id)
    }

    /// Create the task `spec` describes for `owner`, claimed and held here
    /// to run; its creation rides a shared commit with the steps of the
    /// tasks running meanwhile.
    async fn create(&self, spec: &TaskSpec, owner: Option<&str>) -> Result<String, EngineError> {
        let ws = open_workspace(spec)?;
        let (settings, setup) = self.prepare_new(spec, &ws)?;
        let new = self
            .agent
            .create_claimed_shared(&creation(spec, &setup, &settings, owner, &ws))
            .await?;
        let id = new.task.id.clone();
        self.register(&id, setup, Begin::New(Box::new(new)));
        Ok(id)
    }

    /// The settings and the setup a new top-level task that `spec`
    /// describes runs with: what the person saved for its workspace holds
    /// for each task they start in it, and a front-end's incoming trace is
    /// the one it continues.
    fn prepare_new(
        &self,
        spec: &TaskSpec,
        ws: &Workspace,
    ) -> Result<(TaskSettings, TaskSetup), EngineError> {
        let mut settings = self.settings_of(spec);
        self.approvals().widen(ws, &mut settings.approval)?;
        let mut setup = self.setup(&spec.endpoint, None, 0, &settings)?;
        setup.trace_parent = spec
            .traceparent
            .as_deref()
            .and_then(crate::telemetry::spans::remote_parent);
        Ok((settings, setup))
    }

    /// Get a stored task (by id or unambiguous prefix) ready to resume with
    /// its own settings and endpoint, or those `spec` names instead (a
    /// change of endpoint is recorded in its history and said in the
    /// result). It continues when [`Engine::start`]ed; subscribe in
    /// between to see all its events.
    pub fn prepare_resume(&self, id: &str, spec: &ResumeSpec) -> Result<Prepared, EngineError> {
        let store = &self.agent.store;
        let mut task = store.find_task(id)?;
        if self.lock().running.contains_key(&task.id) {
            return Err(EngineError::AlreadyStarted(task.id));
        }
        // Another host runs it: resuming it here too would race that run
        // for its history. (On one machine the run's own claim refuses a
        // second process when it starts.)
        if store.is_shared() && store.runner_elsewhere(&task.id)?.is_some() {
            return Err(EngineError::AlreadyStarted(task.id));
        }
        if let Some(mode) = &spec.mode {
            self.agent.switch_mode(&task.id, mode)?;
        }
        let mut reopened = false;
        if task.status.is_final() {
            match &spec.message {
                Some(m) => {
                    self.agent.reopen(&task.id, m)?;
                    task = store.get_task(&task.id)?;
                    reopened = true;
                }
                None => {
                    return Err(TaskError::NotResumable {
                        id: task.id,
                        status: task.status,
                    }
                    .into());
                }
            }
        }
        // A scripted transcript continues after the replies in history.
        let replies = store
            .load_api(&task.id, true)?
            .iter()
            .filter(|m| m.message.role == Role::Assistant)
            .count();
        let mut settings = task
            .settings
            .clone()
            .unwrap_or_else(|| self.agent.config.settings());
        let recorded_settings = settings.clone();
        if let Some(a) = &spec.approval {
            settings.approval = a.clone();
        }
        if let Some(m) = spec.max_turns {
            settings.max_turns = m;
        }
        let recorded = RecordedEndpoint {
            provider: &task.provider,
            base_url: &task.base_url,
            model: &task.model,
            profile: &task.profile,
        };
        let setup = self.setup(&spec.endpoint, Some(recorded), replies, &settings)?;
        if task.settings.as_ref() != Some(&recorded_settings) || settings != recorded_settings {
            store.set_settings(&task.id, &settings)?;
        }
        let p = &setup.provider;
        let was = endpoints::describe(&task.provider, &task.base_url, &task.model);
        let now = endpoints::describe(p.name(), p.base_url(), p.model());
        let endpoint_change = if was == now {
            None
        } else {
            store.set_endpoint(&task.id, p.name(), p.base_url(), p.model(), p.profile())?;
            let change = format!("{now} (was {was})");
            store.append_ui(&task.id, UiRow::say(UiSubtype::EndpointChanged), &change)?;
            Some(change)
        };
        let (_, control) = self.register(&task.id, setup, Begin::Resume);
        // A stopped task's new message joins at its next turn (after any
        // call that waits for a person); a reopened one's is in already.
        if let Some(m) = &spec.message
            && !reopened
        {
            control.send_message(m);
        }
        Ok(Prepared {
            id: task.id,
            endpoint_change,
        })
    }

    /// Resume a stored task at once ([`Engine::prepare_resume`], then
    /// [`Engine::start`]).
    pub fn resume(&self, id: &str, spec: &ResumeSpec) -> Result<Prepared, EngineError> {
        let prepared = self.prepare_resume(id, spec)?;
        self.start(&prepared.id)?;
        Ok(prepared)
    }

    /// Start a created (or prepared) task's loop on the runtime, in a task
    /// that also ends it; returns at once. Whatever ends the loop — an outcome,
    /// an error, a panic — ends the task with an outcome [`Engine::wait`]
    /// returns, and the task leaves memory.
    pub fn start(&self, id: &str) -> Result<(), EngineError> {
        let (events, control, begin, setup) = {
            let mut tasks = self.lock();
            let r = tasks.unstarted(id)?;
            let (Some(setup), Some(begin)) = (r.setup.take(), r.begin.take()) else {
                return Err(EngineError::AlreadyStarted(id.to_owned()));
            };
            (r.events.clone(), r.control.clone(), begin, setup)
        };
        let agent = Arc::clone(&self.agent);
        let this = self.this.clone();
        let task_id = id.to_owned();
        let loop_events = events.clone();
        let check = self.workspace_check();
        // Boxed: the task below holds the loop's future (kilobytes of
        // state) once, not once as its capture and again as it runs.
        let run = Box::pin(async move {
            match begin {
                Begin::Resume => {
                    agent
                        .resume(&task_id, setup, &check, &loop_events, &control)
                        .await
                }
                Begin::New(new) => {
                    agent
                        .run_created(*new, setup, &check, &loop_events, &control)
                        .await
                }
            }
        });
        let agent = Arc::clone(&self.agent);
        let id = id.to_owned();
        // One task runs the loop and then ends it: a panic in the loop is
        // caught here, as a task's own would be by its join.
        tokio::spawn(async move {
            let ran = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run)).await;
            let error = match ran {
                Ok(Ok(outcome)) => {
                    finish(&this, &id, outcome);
                    return;
                }
                // Another process or host runs it now (it took the task over
                // while this host's lease had lapsed, whatever then stopped
                // this loop): this one lets go without writing anything —
                // the other's history is not this one's to repair or end.
                Ok(Err(e))
                    if matches!(e, TaskError::Store(StoreError::ClaimLost(_)))
                        || agent.store.is_live(&id) =>
                {
                    tracing::warn!(task = %id, "another process or host runs the task now; this one leaves it without writing ({e})");
                    let reason = "another process or host runs the task now".to_owned();
                    finish(&this, &id, TaskOutcome::Aborted { reason });
                    return;
                }
                Ok(Err(e)) => format!("the task could not go on: {e}"),
                Err(payload) => format!("the task's loop panicked: {}", panic_text(&*payload)),
            };
            tracing::error!(task = %id, "{error}");
            if let Err(e) = agent.end_failed(&id, &error, &events).await {
                tracing::error!(task = %id, "cannot record that the task failed: {e}");
            }
            finish(&this, &id, TaskOutcome::Failed { error });
        });
        Ok(())
    }

    /// Wait for a started task's outcome; for one that has finished (and
    /// left memory), how its last run ended, from the store.
    pub async fn wait(&self, id: &str) -> Result<TaskOutcome, EngineError> {
        let rx = self.lock().running.get(id).map(|r| r.outcome.subscribe());
        if let Some(mut rx) = rx
            && let Some(outcome) = rx
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|v| v.clone())
        {
            return Ok(outcome);
        }
        if let Some(outcome) = finished_outcome(&self.lock(), id) {
            return Ok(outcome);
        }
        self.records()
            .outcome(id)?
            .ok_or_else(|| EngineError::NotHere(id.to_owned()))
    }

    /// The config's named profiles a person may choose a task's model by,
    /// with one line each, and the default one (see
    /// [`Endpoints::profiles`]).
    pub fn profiles(&self) -> (Vec<(String, String)>, Option<String>) {
        self.endpoints.profiles()
    }

    /// Ask a task to stop for `reason`: its current tool call finishes, its
    /// history is repaired, it ends `aborted` (and stays resumable).
    /// A task another host runs is asked through the store, awaited.
    pub async fn cancel(&self, id: &str, reason: &str) -> Result<(), EngineError> {
        match self.control(id) {
            Ok(c) => c.cancel(reason),
            Err(e) => {
                let reason = reason.to_owned();
                if !self.route(id, &HostRequest::Cancel { reason }).await? {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Queue a user message the task picks up at its next turn (on the
    /// host that runs it, asked through the store, awaited).
    pub async fn send_message(&self, id: &str, text: &str) -> Result<(), EngineError> {
        match self.control(id) {
            Ok(c) => c.send_message(text),
            Err(e) => {
                let text = text.to_owned();
                if !self.route(id, &HostRequest::Message { text }).await? {
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    fn control(&self, id: &str) -> Result<Control, EngineError> {
        self.lock()
            .running
            .get(id)
            .map(|r| r.control.clone())
            .ok_or_else(|| EngineError::NotHere(id.to_owned()))
    }

    /// Events of a task from now on.
    pub fn subscribe(&self, id: &str) -> Result<Subscription, EngineError> {
        Ok(self.events(id)?.subscribe())
    }

    /// Everything a front-end that saw task `id`'s events up to position
    /// `after` missed (0 for all): the recorded events after it and, when
    /// the task runs in this engine, a receiver for the rest, with none
    /// missed or repeated. A task of the store that is not running here
    /// has only its recorded events. Awaited: the log is read without
    /// parking a runtime worker or holding up the task's publishing.
    pub async fn events_after(
        &self,
        id: &str,
        after: i64,
    ) -> Result<(Vec<Envelope>, Option<Subscription>), EngineError> {
        let found = self.records().read(id).await?;
        self.events_of(&found, after).await
    }

    /// [`Engine::events_after`] of `task`, as a session found it.
    pub(crate) async fn events_of(
        &self,
        task: &Listed,
        after: i64,
    ) -> Result<(Vec<Envelope>, Option<Subscription>), EngineError> {
        let id = task.task.id.as_str();
        let bus = self.lock().running.get(id).map(|r| r.events.clone());
        match bus {
            Some(bus) => {
                let (past, rx) = bus.replay(after).await?;
                Ok((past, Some(rx)))
            }
            None => {
                // Another host runs it: its events are relayed here as they
                // are committed there (subscribed before the past is read,
                // so none falls between). A task no one runs (it ended, or
                // waits for a host) has only its past: who runs it is not
                // asked then.
                let live = if task.is_running() {
                    self.follow_elsewhere(id).await?
                } else {
                    None
                };
                Ok((recorded_after(&self.agent.store, id, after).await?, live))
            }
        }
    }

    /// The event bus of a task (to drive a front-end beside it).
    pub fn events(&self, id: &str) -> Result<EventBus, EngineError> {
        self.lock()
            .running
            .get(id)
            .map(|r| r.events.clone())
            .ok_or_else(|| EngineError::NotHere(id.to_owned()))
    }

    /// Answer the open question `ask_id` of task `task_id`: recorded in a
    /// shared commit, awaited.
    pub async fn answer(
        &self,
        task_id: &str,
        ask_id: &str,
        answer: Answer,
    ) -> Result<(), EngineError> {
        self.agent.answer(task_id, ask_id, answer).await?;
        // Recorded; the loop waiting for it may be on another host.
        if !self.lock().running.contains_key(task_id) {
            self.route(
                task_id,
                &HostRequest::Answered {
                    ask_id: ask_id.to_owned(),
                },
            )
            .await?;
        }
        Ok(())
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
        let id = id.to_owned();
        // What a front-end that fell behind answers: the open questions of
        // the task and of its subtasks (theirs come on its bus too).
        let open = move || {
            let id = id.clone();
            async move {
                self.read_pending_asks(&id, true).await.unwrap_or_else(|e| {
                    tracing::warn!(task = %id, "open questions not looked up: {e}");
                    Vec::new()
                })
            }
        };
        Ok(answer_asks(
            events,
            &self.agent.asks,
            &self.agent.store,
            responder,
            open,
        ))
    }

    /// The questions task `task_id` waits on (open asks, oldest first).
    pub fn pending_asks(&self, task_id: &str) -> Result<Vec<StoredAsk>, EngineError> {
        Ok(self.agent.store.open_asks(task_id)?)
    }

    /// [`Engine::pending_asks`] for a front-end, awaited; with `below`,
    /// those of the task's subtasks too, in the same statement (one
    /// approver answers for a tree).
    pub async fn read_pending_asks(
        &self,
        task_id: &str,
        below: bool,
    ) -> Result<Vec<StoredAsk>, EngineError> {
        let store = &self.agent.store;
        Ok(if below {
            store.read_open_asks_below(task_id).await?
        } else {
            store.read_open_asks(task_id).await?
        })
    }

    /// How many tasks this engine holds in memory (created, running, or
    /// prepared): finished ones leave.
    pub fn in_memory(&self) -> usize {
        self.lock().running.len()
    }
}

/// Record `outcome` for task `id` and let the task leave memory.
fn finish(engine: &Weak<Engine>, id: &str, outcome: TaskOutcome) {
    let Some(engine) = engine.upgrade() else {
        return;
    };
    let running = {
        let mut tasks = engine.lock();
        tasks.finished.push_back((id.to_owned(), outcome.clone()));
        while tasks.finished.len() > FINISHED_KEPT {
            tasks.finished.pop_front();
        }
        tasks.running.remove(id)
    };
    // Whoever `wait`s is woken only once this task holds the engine no
    // more: a front-end that drops the engine after the last outcome
    // really ends it.
    drop(engine);
    if let Some(r) = running {
        r.outcome.send_replace(Some(outcome));
    }
}

fn finished_outcome(tasks: &Tasks, id: &str) -> Option<TaskOutcome> {
    tasks
        .finished
        .iter()
        .rev()
        .find(|(t, _)| t == id)
        .map(|(_, o)| o.clone())
}

/// What a panic said.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned())
}

/// The workspace of the top-level task `spec` describes, opened once for
/// its creation: its saved approvals are keyed by it and its modes read
/// through it.
fn open_workspace(spec: &TaskSpec) -> Result<Workspace, EngineError> {
    Ok(Workspace::open(&spec.workspace).map_err(crate::task::TaskError::from)?)
}

/// The creation of the top-level task `spec` describes, for `owner`, run
/// with `settings` and `setup` ([`Engine::prepare_new`]), in `ws`.
fn creation<'a>(
    spec: &'a TaskSpec,
    setup: &'a TaskSetup,
    settings: &'a TaskSettings,
    owner: Option<&'a str>,
    ws: &'a Workspace,
) -> Creation<'a> {
    Creation {
        prompt: &spec.prompt,
        workspace: &spec.workspace,
        opened: Some(ws),
        mode: if spec.mode.is_empty() {
            "code"
        } else {
            spec.mode.as_str()
        },
        provider: setup.provider.as_ref(),
        settings,
        parent: None,
        owner,
        todos: None,
        intent: None,
    }
}
