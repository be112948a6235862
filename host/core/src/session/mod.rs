//! The session service every front-end uses (the CLI, the HTTP server,
//! later ACP): who may see a task ([`Owner`]), creating one, following its
//! events with replay from a sequence number ([`follow`]), its open
//! questions and the answers to them ([`asks`]), cancelling it and queueing
//! messages. A front-end only translates its transport to these calls, so
//! tenancy, replay and the meaning of an answer are decided once.

pub mod asks;
pub mod follow;

use crate::engine::{Engine, EngineError, Listed, Prepared, ResumeSpec, TaskSpec};
use crate::events::EventBus;
use crate::store::StoreError;
use crate::task::TaskOutcome;
use roost_protocol::display::Display;
use roost_protocol::{EngineErrorCode, ErrorBody};

pub use asks::Decided;
pub use follow::Follow;

/// Who a session acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// The person at this host's data directory (the CLI): every task in
    /// the store is theirs, as its files are.
    Host,
    /// A tenant of a server: only the tasks it created, by their exact id.
    Tenant(String),
}

impl Owner {
    /// Whether `listed` is this owner's to see and drive.
    fn owns(&self, listed: &Listed) -> bool {
        match self {
            Owner::Host => true,
            Owner::Tenant(t) => listed.task.owner.as_deref() == Some(t.as_str()),
        }
    }
}

/// Why a session refused.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No such task for this owner (another tenant's looks the same).
    #[error("no such task here")]
    NotFound,
    /// The request does not fit the task as it stands.
    #[error("{0}")]
    Conflict(String),
    /// The request itself is wrong.
    #[error("{0}")]
    Invalid(String),
    /// The engine refused.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<crate::store::StoreError> for SessionError {
    fn from(e: crate::store::StoreError) -> Self {
        Self::Engine(EngineError::from(e))
    }
}

impl SessionError {
    /// The stable code of this refusal.
    pub fn code(&self) -> EngineErrorCode {
        match self {
            Self::NotFound => EngineErrorCode::NotFound,
            Self::Conflict(_) => EngineErrorCode::Conflict,
            Self::Invalid(_) => EngineErrorCode::InvalidRequest,
            Self::Engine(e) => e.code(),
        }
    }

    /// The refusal as a front-end sends it.
    pub fn body(&self) -> ErrorBody {
        match self {
            Self::Engine(e) => e.body(),
            _ => ErrorBody {
                code: self.code(),
                message: self.to_string(),
            },
        }
    }
}

/// Where a created task runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// Created in this engine: the front-end starts it (now, or when it
    /// has a free slot).
    Here(String),
    /// Put on a shared store's work queue: a host with room takes it.
    Queued(String),
}

impl Created {
    /// The new task's id.
    pub fn id(&self) -> &str {
        match self {
            Created::Here(id) | Created::Queued(id) => id,
        }
    }
}

/// One owner's view of an engine's tasks.
pub struct Session<'e> {
    engine: &'e Engine,
    owner: Owner,
}

impl<'e> Session<'e> {
    /// A session of `owner` on `engine`.
    pub fn new(engine: &'e Engine, owner: Owner) -> Self {
        Self { engine, owner }
    }

    /// Who this session acts for.
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// How this engine's events are shown to a person: the one mapping
    /// from events to display items every front-end that shows a task
    /// uses (the CLI's text, an editor's), knowing the engine's tools.
    pub fn display(&self) -> Display {
        Display::new(self.engine.agent().registry.iter().map(|t| &t.spec))
    }

    /// Task `id` when it is this owner's: exactly that id for a tenant (no
    /// prefixes, which would let one tenant probe another's ids). Awaited:
    /// on a shared database a tenant's lookup is one round trip that parks
    /// no runtime worker ([`crate::engine::Records::read`]). Every command
    /// of the session finds its task this way first.
    pub async fn task(&self, id: &str) -> Result<Listed, SessionError> {
        let records = self.engine.records();
        let found = match self.owner {
            // The CLI names tasks by a unique prefix of their id.
            Owner::Host => match records.find(id) {
                Ok(t) => records.read(&t.id).await,
                Err(e) => Err(e),
            },
            Owner::Tenant(_) => records.read(id).await,
        };
        self.judged(found)
    }

    /// What the store `found` for this owner: its task, or not found.
    fn judged(&self, found: Result<Listed, StoreError>) -> Result<Listed, SessionError> {
        match found {
            Ok(l) if self.owner.owns(&l) => Ok(l),
            Ok(_) => Err(SessionError::NotFound),
            // A tenant learns nothing of the id; the host is told what the
            // store found (which prefix matched nothing, or too much).
            Err(e) => match EngineError::from(e) {
                e if e.code() == EngineErrorCode::NotFound
                    && matches!(self.owner, Owner::Tenant(_)) =>
                {
                    Err(SessionError::NotFound)
                }
                e => Err(SessionError::Engine(e)),
            },
        }
    }

    /// Create a task for this owner. On a shared store a tenant's task
    /// goes to the work queue; otherwise it is created here.
    pub async fn create(&self, spec: &TaskSpec) -> Result<Created, SessionError> {
        if spec.prompt.trim().is_empty() {
            return Err(SessionError::Invalid("the prompt is empty".into()));
        }
        Ok(match &self.owner {
            Owner::Host => Created::Here(self.engine.create_task(spec).await?),
            Owner::Tenant(t) if self.engine.is_shared() => {
                Created::Queued(self.engine.enqueue_task_for(spec, t).await?)
            }
            Owner::Tenant(t) => Created::Here(self.engine.create_task_for(spec, t).await?),
        })
    }

    /// Stop task `id` (resumable), for `reason`; a task that is not
    /// running is a conflict.
    pub async fn cancel(&self, id: &str, reason: &str) -> Result<Listed, SessionError> {
        let task = self.task(id).await?;
        match self.engine.cancel(&task.task.id, reason).await {
            Ok(()) => Ok(task),
            Err(EngineError::NotHere(_)) => {
                Err(SessionError::Conflict("the task is not running".into()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Start task `id` (created or prepared in this engine).
    pub async fn start(&self, id: &str) -> Result<(), SessionError> {
        let task = self.task(id).await?;
        Ok(self.engine.start(&task.task.id)?)
    }

    /// Lend task `id` (created or prepared, not started) what this
    /// front-end's session holds: its MCP servers, its buffers.
    pub async fn lend(&self, id: &str, lent: crate::turn::Lent) -> Result<(), SessionError> {
        let task = self.task(id).await?;
        Ok(self.engine.lend(&task.task.id, lent)?)
    }

    /// Wait for the run of task `id` in this engine to end.
    pub async fn wait(&self, id: &str) -> Result<TaskOutcome, SessionError> {
        let task = self.task(id).await?;
        Ok(self.engine.wait(&task.task.id).await?)
    }

    /// The live events of task `id` while it is in this engine (created,
    /// prepared or running), for a front-end that renders them as they
    /// come; [`Session::follow`] replays what it missed.
    pub async fn live(&self, id: &str) -> Result<EventBus, SessionError> {
        let task = self.task(id).await?;
        Ok(self.engine.events(&task.task.id)?)
    }

    /// Prepare task `id` to continue from its history (the front-end
    /// starts it).
    pub async fn resume(&self, id: &str, spec: &ResumeSpec) -> Result<Prepared, SessionError> {
        let task = self.task(id).await?;
        Ok(self.engine.prepare_resume(&task.task.id, spec)?)
    }

    /// Queue `text` for task `id`'s next turn; false when its loop is not
    /// in this engine (the front-end resumes it with the text instead).
    pub async fn send_message(&self, id: &str, text: &str) -> Result<bool, SessionError> {
        let task = self.task(id).await?;
        Ok(self.engine.send_message(&task.task.id, text).await.is_ok())
    }
}
