//! Durable task state in SQLite (WAL): tasks, both histories (API messages
//! with tool_use/tool_result blocks, UI messages), todo lists, asks, and
//! each task's event log.
//!
//! Every write is committed before the call returns, so a message is
//! durable before any front-end hears of it; the writes of one step of a
//! task (message, UI rows, usage, status, events) are one transaction
//! ([`Step`]). The database runs
//! in WAL mode with `synchronous=NORMAL`: a committed write survives the
//! process being killed at any point (the WAL is in the OS before commit
//! returns); only a power loss can drop the last commits, which a
//! `--durability full` deployment would trade speed for (not yet exposed).

#![forbid(unsafe_code)]

mod approvals;
mod asks;
mod checkpoints;
mod claims;
mod creation;
pub mod db;
mod events;
mod export;
mod groups;
mod hosts;
mod inbox;
mod listen;
mod manage;
#[cfg(feature = "postgres")]
mod pg;
#[cfg(not(feature = "postgres"))]
#[path = "pg_absent.rs"]
mod pg;
#[cfg(feature = "postgres")]
mod pgtls;
#[cfg(not(feature = "postgres"))]
use pg as pgtls;
mod plugins;
mod queue;
mod sql;
pub mod status;
mod step;
mod todos;
mod tokens;
mod tree;

pub use approvals::SavedApproval;
pub use asks::StoredAsk;
pub use checkpoints::CheckpointRecord;
pub use claims::DEFAULT_LEASE;
pub use claims::TaskClaim;
pub use events::StoredEvent;
pub use inbox::HostRequest;
pub use listen::Notice;
pub use manage::TaskFilter;
pub use plugins::PluginRecord;
pub use status::TaskStatus;
pub use step::{Committed, OnCommit, PreparedStep, Step, StoreStats};
pub use todos::{TodoItem, TodoState};
pub use tokens::TokenRecord;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rusqlite::Connection;

use db::{Conn, Db, Row, params};

use roost_protocol::conversation::{ContentBlock, Message, Role, Usage};
use roost_protocol::{TaskSettings, UiRow};

const SCHEMA_VERSION: i64 = 15;

/// The tasks; `k` is the integer key the [`LOG_TABLES`] use.
const TASKS_TABLE: &str = "CREATE TABLE IF NOT EXISTS tasks (
    k INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    parent_id TEXT,
    root_id TEXT NOT NULL,
    mode TEXT NOT NULL,
    workspace TEXT NOT NULL,
    status TEXT NOT NULL,
    prompt TEXT NOT NULL,
    provider TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    base_url TEXT NOT NULL DEFAULT '',
    profile TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    tokens_in INTEGER NOT NULL DEFAULT 0,
    tokens_out INTEGER NOT NULL DEFAULT 0,
    cache_reads INTEGER NOT NULL DEFAULT 0,
    cache_writes INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    active_intent TEXT,
    settings TEXT,
    owner TEXT
)";

/// The other tables with a handful of rows a task, keyed by its id.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS asks (
    task_id TEXT NOT NULL REFERENCES tasks(id),
    ask_id TEXT PRIMARY KEY,
    call_id TEXT,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    answer TEXT,
    created_at INTEGER NOT NULL,
    answered_at INTEGER
);
CREATE INDEX IF NOT EXISTS asks_open ON asks (task_id, answer);
CREATE INDEX IF NOT EXISTS tasks_parent ON tasks (parent_id);
CREATE INDEX IF NOT EXISTS tasks_root ON tasks (root_id);
CREATE TABLE IF NOT EXISTS condensations (
    task_id TEXT NOT NULL REFERENCES tasks(id),
    upto_seq INTEGER NOT NULL,
    summary TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, upto_seq)
);
CREATE TABLE IF NOT EXISTS plugins (
    name TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    manifest TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    granted TEXT NOT NULL,
    tools TEXT NOT NULL,
    enabled INTEGER NOT NULL,
    size INTEGER NOT NULL,
    installed_at INTEGER NOT NULL,
    signer TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '',
    digest TEXT NOT NULL DEFAULT '',
    blake3 TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS claims (
    task_id TEXT PRIMARY KEY REFERENCES tasks(id),
    owner TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS pending_trace (
    task_id TEXT NOT NULL REFERENCES tasks(id),
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (task_id, seq)
);
CREATE TABLE IF NOT EXISTS saved_approvals (
    workspace TEXT NOT NULL,
    kind TEXT NOT NULL,
    name TEXT NOT NULL,
    saved_at INTEGER NOT NULL,
    PRIMARY KEY (workspace, kind, name)
);
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
    tenant TEXT NOT NULL,
    root TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    revoked_at INTEGER
);
CREATE TABLE IF NOT EXISTS task_groups (
    id TEXT PRIMARY KEY,
    coordinator TEXT NOT NULL REFERENCES tasks(id),
    call_id TEXT NOT NULL,
    body TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (coordinator, call_id)
);
CREATE TABLE IF NOT EXISTS checkpoints (
    task_id TEXT NOT NULL REFERENCES tasks(id),
    seq INTEGER NOT NULL,
    turn INTEGER NOT NULL,
    commit_id TEXT NOT NULL,
    tree TEXT NOT NULL,
    api_seq INTEGER NOT NULL,
    ui_seq INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (task_id, seq)
);
CREATE TABLE IF NOT EXISTS todos (
    task_id TEXT NOT NULL REFERENCES tasks(id),
    idx INTEGER NOT NULL,
    text TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (task_id, idx)
);
";

/// The tables that grow by many rows a task: each is keyed by the task's
/// integer key (`tasks.k`), not its id text, so an index entry is a few
/// bytes instead of forty and a batch of steps from many tasks dirties a
/// few index pages instead of one a task. `(name, columns after the key,
/// CREATE statement)`; the columns are what a migration copies.
const LOG_TABLES: [(&str, &str, &str); 3] = [
    (
        "api_messages",
        "seq, role, content, hidden, created_at",
        "CREATE TABLE IF NOT EXISTS api_messages (
            task INTEGER NOT NULL REFERENCES tasks(k),
            seq INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            hidden INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            PRIMARY KEY (task, seq)
        )",
    ),
    (
        "ui_messages",
        "seq, ts, kind, subtype, text",
        "CREATE TABLE IF NOT EXISTS ui_messages (
            task INTEGER NOT NULL REFERENCES tasks(k),
            seq INTEGER NOT NULL,
            ts INTEGER NOT NULL,
            kind TEXT NOT NULL,
            subtype TEXT NOT NULL,
            text TEXT NOT NULL,
            PRIMARY KEY (task, seq)
        )",
    ),
    (
        "events",
        "seq, ts, event",
        "CREATE TABLE IF NOT EXISTS events (
            task INTEGER NOT NULL REFERENCES tasks(k),
            seq INTEGER NOT NULL,
            ts INTEGER NOT NULL,
            event TEXT NOT NULL,
            result_in INTEGER,
            ui_seq INTEGER,
            ui_kind TEXT,
            ui_subtype TEXT,
            ui_text TEXT,
            PRIMARY KEY (task, seq)
        )",
    ),
];

/// The columns of an event's row that carry a UI row of the step that
/// wrote it (all NULL when it carries none): its position in the task's
/// UI log, kind, subtype and text; its time is the event's. A step's UI
/// rows and events come in pairs (a reply's text and its final message, a
/// call and its request, a result and its event), and a row and its index
/// entry in one log instead of two cut about 5% of a turn's CPU (P6):
/// each log's index gets a leaf dirtied for every task of a shared commit.
const UI_IN_EVENTS: [(&str, &str); 4] = [
    ("ui_seq", "INTEGER"),
    ("ui_kind", "TEXT"),
    ("ui_subtype", "TEXT"),
    ("ui_text", "TEXT"),
];

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database file cannot be opened or is not a Roost database.
    #[error("cannot open the task store {path}: {detail}")]
    Open {
        /// File.
        path: PathBuf,
        /// Cause.
        detail: String,
    },
    /// SQLite failed.
    #[error("task store: {0}")]
    Sql(#[from] rusqlite::Error),
    /// PostgreSQL failed.
    #[cfg(feature = "postgres")]
    #[error("task store: {0}")]
    Postgres(#[from] tokio_postgres::Error),
    /// The database cannot be reached (or refuses this Roost).
    #[error("task store: {0}")]
    Unavailable(String),
    /// A value read back is not of the type its column should hold.
    #[error("task store: {detail}")]
    Decode {
        /// What is wrong.
        detail: String,
    },
    /// A stored row does not decode.
    #[error("task store: task {task} row {seq} is corrupt: {detail}")]
    Corrupt {
        /// Task id.
        task: String,
        /// Row.
        seq: i64,
        /// What is wrong.
        detail: String,
    },
    /// No such task.
    #[error("no task with id {0}")]
    NotFound(String),
    /// `--last` found nothing: no task at all, or (`resumable`) none that
    /// is not finished.
    #[error("{}", if *resumable { "no resumable task: every task has finished" } else { "no task yet: start one with `roost run`" })]
    NoTask {
        /// Whether only unfinished tasks counted.
        resumable: bool,
    },
    /// An answer for an ask that is not open (unknown, another task's, or
    /// answered already); nothing of its step was written.
    #[error("task {task} has no open question {ask_id}")]
    AskNotOpen {
        /// Task id.
        task: String,
        /// Ask id.
        ask_id: String,
    },
    /// An id prefix that names more than one task.
    #[error("task id prefix `{prefix}` is ambiguous: it starts {}; type more of the id", candidates.join(", "))]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// Some of the tasks it matches.
        candidates: Vec<String>,
    },
    /// The task runs in a live process: it cannot be deleted now.
    #[error("task {0} is running; stop it before deleting it")]
    Live(String),
    /// Another live process or host runs the task: this one may not claim
    /// it, and (its own claim having lapsed and been taken over) nothing
    /// it writes to the task lands.
    #[error("task {0} is run by another process or host now; this one leaves it alone")]
    ClaimLost(String),
    /// A shared commit failed as a whole (every step in it fails).
    #[error("task store: commit failed: {0}")]
    Commit(String),
    /// Writing an export failed.
    #[error("export to {path}: {source}")]
    Export {
        /// File.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
}

/// A task as stored: the protocol's record.
pub use roost_protocol::task::TaskRecord;

/// A task created claimed ([`Store::create_claimed_task`]).
#[derive(Debug)]
pub struct ClaimedTask {
    /// Its record as inserted.
    pub task: TaskRecord,
    /// This process's claim on it.
    pub claim: TaskClaim,
    /// What its first step took: the positions of the events it recorded,
    /// for the run to announce as it starts.
    pub first: Committed,
}

/// What is needed to create a task (`Default`: empty fields, for tests
/// that need only some).
#[derive(Debug, Clone, Default)]
pub struct NewTask {
    /// Parent task, for subtasks.
    pub parent_id: Option<String>,
    /// Root task (defaults to the new task itself).
    pub root_id: Option<String>,
    /// Mode slug.
    pub mode: String,
    /// Workspace path.
    pub workspace: String,
    /// First prompt.
    pub prompt: String,
    /// Provider name.
    pub provider: String,
    /// Model id.
    pub model: String,
    /// Base URL of the provider's API.
    pub base_url: String,
    /// Config profile.
    pub profile: String,
    /// The settings it runs with.
    pub settings: Option<TaskSettings>,
    /// Who it belongs to (a server's tenant; none for a local user).
    pub owner: Option<String>,
    /// The intent it starts under (a subtask's, passed on by its parent).
    pub active_intent: Option<String>,
}

/// A UI message: the protocol's row of a task's UI history.
pub use roost_protocol::api::UiMessage;

/// An API message with its position and visibility.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    /// Order within the task.
    pub seq: i64,
    /// The message.
    pub message: Message,
    /// Hidden by context truncation (kept, not sent).
    pub hidden: bool,
    /// Time (ms since epoch).
    pub created_at: i64,
}

/// The task store. Cheap to clone; calls are short and serialised.
#[derive(Clone)]
pub struct Store {
    db: Arc<Db>,
    location: Arc<StoreLocation>,
    claims: Arc<claims::Claims>,
    /// Steps waiting for a shared commit ([`Store::commit`]).
    group: Arc<step::GroupCommit>,
    /// Notices from other hosts (a shared store), once listened for.
    notices: Arc<std::sync::OnceLock<tokio::sync::broadcast::Sender<Notice>>>,
    /// Workspaces seen lately with no saved approval
    /// ([`Store::approvals_for_new_task`]).
    none_saved: Arc<approvals::NoneSaved>,
}

/// Where a store lives: an embedded SQLite file (one machine) or a
/// PostgreSQL database (many hosts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file.
    File(PathBuf),
    /// A `postgres://` URL.
    Postgres(String),
}

impl StoreLocation {
    /// Where the store is: `explicit` (`--store`, or `ROOST_STORE_URL`
    /// when `from_env`), else the config's `store`, else `roost.db` in the
    /// data directory.
    pub fn resolve(explicit: Option<&str>, configured: Option<&str>, data_dir: &Path) -> Self {
        let env = std::env::var("ROOST_STORE_URL").ok();
        match explicit
            .or(env.as_deref().filter(|s| !s.is_empty()))
            .or(configured)
        {
            Some(s) => Self::parse(s),
            None => StoreLocation::File(Store::default_path(data_dir)),
        }
    }

    /// `postgres://…` (or `postgresql://…`) names a database; anything
    /// else is a SQLite file's path.
    pub fn parse(s: &str) -> Self {
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            StoreLocation::Postgres(s.to_owned())
        } else {
            StoreLocation::File(PathBuf::from(s))
        }
    }
}

impl std::fmt::Display for StoreLocation {
    /// The location without a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::File(p) => write!(f, "{}", p.display()),
            StoreLocation::Postgres(url) => f.write_str(&pgtls::redacted(url)),
        }
    }
}

/// Milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Store {
    /// The database file under a data directory.
    pub fn default_path(data_dir: &Path) -> PathBuf {
        data_dir.join("roost.db")
    }

    /// Open the store at `location`, creating and migrating its schema as
    /// needed.
    pub fn open_at(location: &StoreLocation) -> Result<Self, StoreError> {
        match location {
            StoreLocation::File(path) => Self::open(path),
            StoreLocation::Postgres(url) => Self::connect(url),
        }
    }

    /// Connect to the PostgreSQL store at `url`, creating or migrating its
    /// schema.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = pg::Pool::new(url)?;
        pool.migrate()?;
        Ok(Self::with(
            Db::Pg(pool),
            StoreLocation::Postgres(url.to_owned()),
        ))
    }

    /// Bring the store at `location` to this Roost's schema: `(from, to)`
    /// versions. A store written by a newer Roost is refused.
    pub fn migrate(location: &StoreLocation) -> Result<(i64, i64), StoreError> {
        match location {
            StoreLocation::File(path) => {
                let before = sqlite_version(path)?;
                Self::open(path)?;
                Ok((before, SCHEMA_VERSION))
            }
            StoreLocation::Postgres(url) => pg::Pool::new(url)?.migrate(),
        }
    }

    fn with(db: Db, location: StoreLocation) -> Self {
        let committers = if matches!(db, Db::Lite(_)) { 1 } else { 2 };
        Self {
            db: Arc::new(db),
            location: Arc::new(location),
            claims: claims::shared(),
            group: Arc::new(step::GroupCommit::new(committers)),
            notices: Arc::default(),
            none_saved: Arc::default(),
        }
    }

    /// Open (creating if needed) the SQLite store at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let err = |detail: String| StoreError::Open {
            path: path.to_path_buf(),
            detail,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| err(e.to_string()))?;
        }
        let conn = Connection::open(path).map_err(|e| err(e.to_string()))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .map_err(|e| err(e.to_string()))?;
        // The first real read tells a non-database file apart.
        let mode: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(|e| err(format!("{e} (is it a SQLite database?)")))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(path = %path.display(), "task store runs in {mode} mode, not WAL");
        }
        // Checkpoints every 32 MiB of WAL instead of SQLite's 4 MiB: a task's
        // steps wait for a checkpoint eight times less often (P5's p99 fell
        // from 4–6 ms to under 1 ms), and pages rewritten in between are
        // copied back once.
        conn.execute_batch(
            "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; PRAGMA wal_autocheckpoint=8192;",
        )
        .map_err(|e| err(e.to_string()))?;
        conn.set_prepared_statement_cache_capacity(128);
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| err(e.to_string()))?;
        if version > SCHEMA_VERSION {
            return Err(err(format!(
                "written by a newer Roost (schema {version}, this one knows {SCHEMA_VERSION})"
            )));
        }
        // A database at this schema was created (or migrated) by an
        // earlier open, which set the version last: nothing to create.
        if version < SCHEMA_VERSION {
            conn.execute_batch(TASKS_TABLE)
                .map_err(|e| err(e.to_string()))?;
            conn.execute_batch(SCHEMA).map_err(|e| err(e.to_string()))?;
            for (_, _, create) in LOG_TABLES {
                conn.execute_batch(create).map_err(|e| err(e.to_string()))?;
            }
            migrate(&conn, version).map_err(|e| err(e.to_string()))?;
            conn.execute_batch(&format!("PRAGMA user_version={SCHEMA_VERSION}"))
                .map_err(|e| err(e.to_string()))?;
        }
        let reader = || {
            let reader = Connection::open(path).map_err(|e| err(e.to_string()))?;
            reader
                .busy_timeout(std::time::Duration::from_secs(10))
                .map_err(|e| err(e.to_string()))?;
            reader
                .execute_batch("PRAGMA query_only=ON")
                .map_err(|e| err(e.to_string()))?;
            Ok::<_, StoreError>(Mutex::new(reader))
        };
        let readers = [reader()?, reader()?, reader()?, reader()?];
        Ok(Self::with(
            Db::Lite(db::Lite {
                conn: Mutex::new(conn),
                readers,
            }),
            StoreLocation::File(path.to_path_buf()),
        ))
    }

    /// Where the store lives.
    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    /// Whether the database answers now (a server's readiness).
    pub fn ping(&self) -> Result<(), StoreError> {
        self.db.ping()
    }

    /// Whether the database is thought to answer, without waiting: false
    /// while a shared database's outage is being waited out (probed again
    /// at most once a second). SQLite always answers.
    pub fn reachable(&self) -> bool {
        self.db.reachable()
    }

    /// Whether this store is shared by hosts (PostgreSQL).
    pub fn is_shared(&self) -> bool {
        matches!(*self.location, StoreLocation::Postgres(_))
    }

    /// Record that a task continues on another endpoint (the user named it
    /// explicitly when resuming).
    pub fn set_endpoint(
        &self,
        id: &str,
        provider: &str,
        base_url: &str,
        model: &str,
        profile: &str,
    ) -> Result<(), StoreError> {
        self.db.run(|c| {
            c.exec(
                "UPDATE tasks SET provider = ?2, base_url = ?3, model = ?4, profile = ?5, updated_at = ?6 WHERE id = ?1",
                params![id, provider, base_url, model, profile, now_ms()],
            )
        })?;
        Ok(())
    }

    /// Record the settings a task runs with from now on (a resume that
    /// names others).
    pub fn set_settings(&self, id: &str, settings: &TaskSettings) -> Result<(), StoreError> {
        let json = settings_json(settings)?;
        self.db.run(|c| {
            c.exec(
                "UPDATE tasks SET settings = ?2, updated_at = ?3 WHERE id = ?1",
                params![id, &json, now_ms()],
            )
        })?;
        Ok(())
    }

    /// A task by id.
    pub fn get_task(&self, id: &str) -> Result<TaskRecord, StoreError> {
        self.db
            .run(|c| {
                c.opt(
                    &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1"),
                    params![id],
                )
            })?
            .map(task_row)
            .ok_or_else(|| StoreError::NotFound(id.to_owned()))?
    }

    /// A task by id, and whether a live process (or host) runs it, for a
    /// front-end's request on a runtime: awaited ([`db::Db::read`]), both
    /// in one round trip on PostgreSQL.
    pub async fn read_task(&self, id: &str) -> Result<(TaskRecord, bool), StoreError> {
        let (column, joins) = self.liveness();
        let cols = &*TASK_COLUMNS_OF_T;
        self.db
            .read_one(
                &format!("SELECT {cols}, {column} FROM tasks t {joins} WHERE t.id = ?1"),
                params![id],
            )
            .await?
            .into_iter()
            .next()
            .map(|row| self.with_liveness(row))
            .ok_or_else(|| StoreError::NotFound(id.to_owned()))?
    }

    /// A row of [`TASK_COLUMNS_OF_T`] and [`Store::liveness`]'s column as
    /// the task and whether a live process runs it.
    fn with_liveness(&self, row: Row) -> Result<(TaskRecord, bool), StoreError> {
        let seen = row.get(TASK_COLUMN_COUNT)?;
        Ok((task_row(row)?, self.live_in(seen)))
    }

    /// Find a task by id or unique id prefix (for the CLI).
    pub fn find_task(&self, prefix: &str) -> Result<TaskRecord, StoreError> {
        let ids: Vec<String> = self
            .db
            .run(|c| {
                c.query(
                    "SELECT id FROM tasks WHERE id LIKE CAST(?1 AS TEXT) || '%' ORDER BY id LIMIT 6",
                    params![prefix],
                )
            })?
            .iter()
            .map(|r| r.get(0))
            .collect::<Result<_, _>>()?;
        match ids.as_slice() {
            [] => Err(StoreError::NotFound(prefix.to_owned())),
            [one] => self.get_task(one),
            many => Err(StoreError::Ambiguous {
                prefix: prefix.to_owned(),
                candidates: many.to_vec(),
            }),
        }
    }

    /// The most recent task (`--last`); with `resumable`, the most recent
    /// one that is not finished.
    pub fn last_task(&self, resumable: bool) -> Result<TaskRecord, StoreError> {
        let mut offset = 0i64;
        loop {
            let batch = self
                .db
                .run(|c| {
                    c.query(
                        &format!(
                            "SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_at DESC, id DESC LIMIT 50 OFFSET ?1"
                        ),
                        params![offset],
                    )
                })?
                .into_iter()
                .map(task_row)
                .collect::<Result<Vec<_>, _>>()?;
            if batch.is_empty() {
                return Err(StoreError::NoTask { resumable });
            }
            offset += i64::try_from(batch.len()).unwrap_or(i64::MAX);
            if let Some(t) = batch
                .into_iter()
                .find(|t| !resumable || !t.status.is_final())
            {
                return Ok(t);
            }
        }
    }

    /// The most recent tasks, newest first.
    pub fn list_tasks(&self, limit: usize) -> Result<Vec<TaskRecord>, StoreError> {
        self.db
            .run(|c| {
                c.query(
                    &format!(
                        "SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_at DESC, id DESC LIMIT ?1"
                    ),
                    params![i64::try_from(limit).unwrap_or(i64::MAX)],
                )
            })?
            .into_iter()
            .map(task_row)
            .collect()
    }

    /// Change a task's status.
    pub fn set_status(&self, id: &str, status: TaskStatus) -> Result<(), StoreError> {
        self.touch(id, "status = ?2", Some(status.as_str()))
    }

    /// Change a task's mode.
    pub fn set_mode(&self, id: &str, mode: &str) -> Result<(), StoreError> {
        self.touch(id, "mode = ?2", Some(mode))
    }

    /// Record the active intent.
    pub fn set_active_intent(&self, id: &str, intent: Option<&str>) -> Result<(), StoreError> {
        self.touch(id, "active_intent = ?2", intent)
    }

    fn touch(&self, id: &str, set: &str, value: Option<&str>) -> Result<(), StoreError> {
        let n = self.fenced_write(id, |c| {
            c.exec(
                &format!("UPDATE tasks SET {set}, updated_at = ?3 WHERE id = ?1"),
                params![id, value, now_ms()],
            )
        })?;
        if n == 0 {
            Err(StoreError::NotFound(id.to_owned()))
        } else {
            Ok(())
        }
    }

    /// Append an API message; returns its sequence number. The number is
    /// taken inside the write transaction of the insert ([`Store::commit_step`]),
    /// so processes sharing a store never collide.
    pub fn append_api(&self, task: &str, m: &Message) -> Result<i64, StoreError> {
        self.commit_step(task, Step::new().append(m))?
            .message
            .ok_or_else(|| StoreError::NotFound(task.to_owned()))
    }

    /// Replace the content of API message `seq` (a tool-result message grows
    /// as the calls of one assistant message finish).
    pub fn update_api(&self, task: &str, seq: i64, m: &Message) -> Result<(), StoreError> {
        let content = serde_json::to_string(&m.content).map_err(|e| StoreError::Corrupt {
            task: task.to_owned(),
            seq,
            detail: e.to_string(),
        })?;
        self.fenced_write(task, |c| {
            c.exec(
                "UPDATE api_messages SET content = ?3, role = ?4 WHERE task = ?1 AND seq = ?2",
                params![task_key(c, task)?, seq, &content, role_str(m.role)],
            )
        })?;
        Ok(())
    }

    /// Hide API messages from the model (the store's own tests; tasks hide
    /// messages by condensing, [`Step::condense`]).
    #[cfg(test)]
    pub(crate) fn hide_api(&self, task: &str, seqs: &[i64]) -> Result<(), StoreError> {
        self.db.write(|c| {
            let key = task_key(c, task)?;
            for s in seqs {
                c.exec(
                    "UPDATE api_messages SET hidden = 1 WHERE task = ?1 AND seq = ?2",
                    params![key, s],
                )?;
            }
            Ok(())
        })
    }

    /// The API history in order; hidden messages only when asked.
    pub fn load_api(
        &self,
        task: &str,
        include_hidden: bool,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        api_messages(task, self.db.rows(LOAD_API, params![task])?, include_hidden)
    }

    /// [`Store::load_api`] for a front-end's request, awaited.
    pub async fn read_api(
        &self,
        task: &str,
        include_hidden: bool,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let rows = self.db.read_one(LOAD_API, params![task]).await?;
        api_messages(task, rows, include_hidden)
    }

    /// A task's visible API history and its latest condensation summary
    /// ([`Store::load_api`] and [`Store::latest_summary`]), in one round
    /// trip on PostgreSQL: what a task's run starts from.
    pub fn load_history(
        &self,
        task: &str,
    ) -> Result<(Vec<StoredMessage>, Option<String>), StoreError> {
        let answers = self
            .db
            .run(|c| c.query_all(&[(LOAD_API, params![task]), (LATEST_SUMMARY, params![task])]))?;
        let mut answers = answers.into_iter();
        let (Some(api), Some(summary)) = (answers.next(), answers.next()) else {
            return Err(StoreError::Decode {
                detail: "a history read answered short".into(),
            });
        };
        let summary = summary.into_iter().next().map(|r| r.get(0)).transpose()?;
        Ok((api_messages(task, api, false)?, summary))
    }

    /// Record that messages up to `upto_seq` (after the first) were
    /// condensed into `summary`, and hide them; nothing is deleted.
    pub fn condense(
        &self,
        task: &str,
        first_seq: i64,
        upto_seq: i64,
        summary: &str,
    ) -> Result<(), StoreError> {
        self.commit_step(task, Step::new().condense(first_seq, upto_seq, summary))
            .map(|_| ())
    }

    /// The latest condensation summary of a task, if any.
    pub fn latest_summary(&self, task: &str) -> Result<Option<String>, StoreError> {
        self.db
            .run(|c| c.opt(LATEST_SUMMARY, params![task]))?
            .map(|r| r.get(0))
            .transpose()
    }

    /// Every condensation of a task, oldest first: `(upto_seq, summary,
    /// created_at)`, for exports that mark what each summary replaced.
    pub fn condensations(&self, task: &str) -> Result<Vec<(i64, String, i64)>, StoreError> {
        self.db
            .run(|c| {
                c.query(
                    "SELECT upto_seq, summary, created_at FROM condensations WHERE task_id = ?1 ORDER BY upto_seq",
                    params![task],
                )
            })?
            .iter()
            .map(|r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .collect()
    }

    /// Append a UI message; returns its sequence number. Credentials in
    /// `text` are redacted first: the UI history is shown and exported, and
    /// nothing persisted keeps a secret.
    pub fn append_ui(&self, task: &str, row: UiRow, text: &str) -> Result<i64, StoreError> {
        // Redacted, and numbered as `append_api` numbers, by the step.
        self.commit_step(task, Step::new().ui(row, text))?
            .ui
            .first()
            .copied()
            .ok_or_else(|| StoreError::NotFound(task.to_owned()))
    }

    /// The UI history in order.
    pub fn load_ui(&self, task: &str) -> Result<Vec<UiMessage>, StoreError> {
        ui_rows(self.db.rows(UI_ROWS, params![task])?)
    }

    /// [`Store::load_ui`] for a front-end's request, awaited.
    pub async fn read_ui(&self, task: &str) -> Result<Vec<UiMessage>, StoreError> {
        ui_rows(self.db.read_one(UI_ROWS, params![task]).await?)
    }

    /// Trace entries recorded with a durable step and not yet appended to
    /// the workspace's trace: `(seq, JSON line)`, oldest first.
    pub fn pending_trace(&self, task: &str) -> Result<Vec<(i64, String)>, StoreError> {
        self.db
            .run(|c| {
                c.query(
                    "SELECT seq, entry FROM pending_trace WHERE task_id = ?1 ORDER BY seq",
                    params![task],
                )
            })?
            .into_iter()
            .map(|mut r| Ok((r.get(0)?, r.take_text(1)?)))
            .collect()
    }

    /// Forget the pending trace entries up to `seq` (they are in the trace).
    pub fn clear_pending_trace(&self, task: &str, upto: i64) -> Result<(), StoreError> {
        self.db.run(|c| {
            c.exec(
                "DELETE FROM pending_trace WHERE task_id = ?1 AND seq <= ?2",
                params![task, upto],
            )
        })?;
        Ok(())
    }

    /// The task's todo list.
    pub fn get_todos(&self, task: &str) -> Result<Vec<TodoItem>, StoreError> {
        todo_rows(task, self.db.rows(TODO_ROWS, params![task])?)
    }

    /// [`Store::get_todos`] for a front-end's request, awaited.
    pub async fn read_todos(&self, task: &str) -> Result<Vec<TodoItem>, StoreError> {
        todo_rows(task, self.db.read_one(TODO_ROWS, params![task]).await?)
    }

    /// The calls of the last assistant message that have no result yet
    /// (a crash or a kill stopped them): `(name, arguments)`, in order.
    pub fn dangling_tool_uses(
        &self,
        task: &str,
    ) -> Result<Vec<(String, serde_json::Value)>, StoreError> {
        let history = self.load_api(task, true)?;
        let Some(last_assistant) = history
            .iter()
            .rposition(|m| m.message.role == Role::Assistant)
        else {
            return Ok(Vec::new());
        };
        let answered: Vec<&str> = history
            .get(last_assistant + 1)
            .filter(|m| m.message.role == Role::User)
            .map(|m| {
                m.message
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(history[last_assistant]
            .message
            .content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::ToolUse { id, name, input } if !answered.contains(&id.as_str()) => {
                    Some((name.clone(), input.clone()))
                }
                _ => None,
            })
            .collect())
    }

    /// After a crash mid-tool: answer every tool_use of the last assistant
    /// message that has no tool_result with an "interrupted" error result,
    /// so the history is valid again. Returns how many were repaired.
    pub fn repair_dangling_tool_uses(&self, task: &str) -> Result<usize, StoreError> {
        let history = self.load_api(task, true)?;
        let Some(last_assistant) = history
            .iter()
            .rposition(|m| m.message.role == Role::Assistant)
        else {
            return Ok(0);
        };
        let wanted: Vec<String> = history[last_assistant]
            .message
            .tool_use_ids()
            .map(str::to_owned)
            .collect();
        if wanted.is_empty() {
            return Ok(0);
        }
        let results_msg = history
            .get(last_assistant + 1)
            .filter(|m| m.message.role == Role::User);
        let answered: Vec<String> = results_msg
            .map(|m| {
                m.message
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
                        _ => None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        // A call that started a subtask is never answered "interrupted":
        // its subtask holds its result, and a resume waits for it again.
        let delegated = self.subtask_calls(task)?;
        let missing: Vec<&String> = wanted
            .iter()
            .filter(|id| !answered.contains(id) && !delegated.contains(id))
            .collect();
        if missing.is_empty() {
            return Ok(0);
        }
        let mut blocks: Vec<ContentBlock> = results_msg
            .map(|m| m.message.content.clone())
            .unwrap_or_default();
        for id in &missing {
            blocks.push(ContentBlock::ToolResult {
                tool_use_id: (*id).clone(),
                content: "[ERROR] The tool call was interrupted (the task was stopped while it ran). Its effects, if any, \
                          are unknown: check the files before retrying."
                    .into(),
                is_error: true,
            });
        }
        let msg = Message {
            role: Role::User,
            content: blocks,
        };
        match results_msg {
            Some(m) => self.update_api(task, m.seq, &msg)?,
            None => {
                self.append_api(task, &msg)?;
            }
        }
        Ok(missing.len())
    }

    /// Write Roo Code's files for a task into `dir`.
    pub fn export_roo(&self, task: &str, dir: &Path) -> Result<(), StoreError> {
        export::write(self, task, dir)
    }
}

/// A task's API history, oldest first.
const LOAD_API: &str = "SELECT seq, role, content, hidden, created_at FROM api_messages \
     WHERE task = (SELECT k FROM tasks WHERE id = ?1) ORDER BY seq";

/// A task's latest condensation summary.
const LATEST_SUMMARY: &str =
    "SELECT summary FROM condensations WHERE task_id = ?1 ORDER BY upto_seq DESC LIMIT 1";

/// Decode [`LOAD_API`]'s rows of `task` (hidden ones only when asked).
fn api_messages(
    task: &str,
    rows: Vec<Row>,
    include_hidden: bool,
) -> Result<Vec<StoredMessage>, StoreError> {
    let mut out = Vec::with_capacity(rows.len());
    for mut row in rows {
        let seq: i64 = row.get(0)?;
        let hidden: bool = row.get(3)?;
        if hidden && !include_hidden {
            continue;
        }
        let corrupt = |detail: String| StoreError::Corrupt {
            task: task.to_owned(),
            seq,
            detail,
        };
        let role = match row.get::<String>(1)?.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => return Err(corrupt(format!("unknown role {other:?}"))),
        };
        let content: Vec<ContentBlock> =
            serde_json::from_str(&row.take_text(2)?).map_err(|e| corrupt(e.to_string()))?;
        out.push(StoredMessage {
            seq,
            message: Message { role, content },
            hidden,
            created_at: row.get(4)?,
        });
    }
    Ok(out)
}

const TASK_COLUMNS: &str = "id, parent_id, root_id, mode, workspace, status, prompt, provider, model, created_at, updated_at, \
     tokens_in, tokens_out, cache_reads, cache_writes, cost, active_intent, base_url, profile, settings, owner";

/// How many [`TASK_COLUMNS`] there are (a column selected after them is
/// at this index).
const TASK_COLUMN_COUNT: usize = 21;

/// [`TASK_COLUMNS`] of `tasks t`, for a query that joins other tables.
static TASK_COLUMNS_OF_T: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    TASK_COLUMNS
        .split(',')
        .map(|c| format!("t.{}", c.trim()))
        .collect::<Vec<_>>()
        .join(", ")
});

/// Bring a store written by an older Roost up to [`SCHEMA_VERSION`].
fn migrate(conn: &Connection, from: i64) -> rusqlite::Result<()> {
    if from == 1 {
        // Version 2 records the endpoint a task was created with, so a
        // resume never silently switches to another one.
        let has = |col: &str| has_column(conn, "tasks", col);
        if !has("base_url")? {
            conn.execute_batch("ALTER TABLE tasks ADD COLUMN base_url TEXT NOT NULL DEFAULT ''")?;
        }
        if !has("profile")? {
            conn.execute_batch("ALTER TABLE tasks ADD COLUMN profile TEXT NOT NULL DEFAULT ''")?;
        }
    }
    // Version 7 records each task's own settings (approval policy, turn
    // limit); older tasks have none and run with the engine's.
    if !has_column(conn, "tasks", "settings")? {
        conn.execute_batch("ALTER TABLE tasks ADD COLUMN settings TEXT")?;
    }
    // Version 9 records who a task belongs to (a server's tenant); older
    // tasks belong to the local user.
    if !has_column(conn, "tasks", "owner")? {
        conn.execute_batch("ALTER TABLE tasks ADD COLUMN owner TEXT")?;
    }
    // Version 3 adds the `events` table, version 4 the `claims` table and
    // version 5 the `plugins` table, version 8 `saved_approvals`, version 9
    // `tokens`, version 10 `task_groups` and the tree indexes, version 11
    // `checkpoints`, which
    // `SCHEMA` creates when missing; older tasks simply have no
    // recorded events, and no claim (lock files of version 3 are ignored).
    if !has_column(conn, "tasks", "k")? {
        key_log_tables(conn)?;
    }
    // Version 12 records where each plugin came from (its source and,
    // from a registry, the manifest digest); older installs were local.
    // Version 13 records each component's BLAKE3 hash; older installs are
    // checked by their SHA-256 until they are installed again.
    for col in ["source", "digest", "blake3"] {
        if !has_column(conn, "plugins", col)? {
            conn.execute_batch(&format!(
                "ALTER TABLE plugins ADD COLUMN {col} TEXT NOT NULL DEFAULT ''"
            ))?;
        }
    }
    // Version 14 lets a tool result's event keep its output in the
    // conversation message that holds it; older events hold their own.
    if !has_column(conn, "events", "result_in")? {
        conn.execute_batch("ALTER TABLE events ADD COLUMN result_in INTEGER")?;
    }
    // Version 15 lets an event's row carry a UI row its step wrote
    // ([`UI_IN_EVENTS`]); older UI rows are all in `ui_messages`.
    for (col, ty) in UI_IN_EVENTS {
        if !has_column(conn, "events", col)? {
            conn.execute_batch(&format!("ALTER TABLE events ADD COLUMN {col} {ty}"))?;
        }
    }
    Ok(())
}

/// Whether `table` has a column `column`.
fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    conn.prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")?
        .exists([table, column])
}

/// Version 6: give every task an integer key and key the [`LOG_TABLES`]
/// by it. The tables are rebuilt (SQLite cannot add a primary key in
/// place) in one transaction with foreign keys off, as SQLite's documented
/// procedure for schema changes goes, and checked before it commits.
fn key_log_tables(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch("PRAGMA foreign_keys=OFF")?;
    let rebuilt = (|| {
        let tx = conn.unchecked_transaction()?;
        tx.execute_batch(&TASKS_TABLE.replace("IF NOT EXISTS tasks", "tasks_v6"))?;
        tx.execute_batch(&format!(
            "INSERT INTO tasks_v6 (k, {TASK_COLUMNS}) SELECT rowid, {TASK_COLUMNS} FROM tasks"
        ))?;
        for (table, columns, create) in LOG_TABLES {
            // A table `SCHEMA` created just now already has the new shape.
            if !has_column(&tx, table, "task_id")? {
                continue;
            }
            let old_columns = columns
                .split(", ")
                .map(|c| format!("o.{c}"))
                .collect::<Vec<_>>()
                .join(", ");
            tx.execute_batch(&format!(
                "ALTER TABLE {table} RENAME TO {table}_v5;
                 {create};
                 INSERT INTO {table} (task, {columns})
                   SELECT t.k, {old_columns} FROM {table}_v5 o JOIN tasks_v6 t ON t.id = o.task_id;
                 DROP TABLE {table}_v5;"
            ))?;
        }
        tx.execute_batch("DROP TABLE tasks; ALTER TABLE tasks_v6 RENAME TO tasks;")?;
        if tx.prepare("PRAGMA foreign_key_check")?.exists([])? {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT),
                Some("a row refers to a task that does not exist".into()),
            ));
        }
        tx.commit()
    })();
    conn.execute_batch("PRAGMA foreign_keys=ON")?;
    rebuilt
}

/// The schema version of the SQLite file at `path` (0: none yet).
fn sqlite_version(path: &Path) -> Result<i64, StoreError> {
    if !path.exists() {
        return Ok(0);
    }
    let conn = Connection::open(path).map_err(|e| StoreError::Open {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// A task's UI history, by its id (`?1`): its rows of `ui_messages` and
/// those its events carry ([`UI_IN_EVENTS`]).
const UI_ROWS: &str = "SELECT seq, ts, kind, subtype, text FROM ui_messages \
     WHERE task = (SELECT k FROM tasks WHERE id = ?1) \
     UNION ALL SELECT ui_seq, ts, ui_kind, ui_subtype, ui_text FROM events \
     WHERE task = (SELECT k FROM tasks WHERE id = ?1) AND ui_seq IS NOT NULL ORDER BY 1";

/// [`UI_ROWS`]' rows as messages.
fn ui_rows(rows: Vec<Row>) -> Result<Vec<UiMessage>, StoreError> {
    rows.into_iter()
        .map(|mut r| {
            Ok(UiMessage {
                seq: r.get(0)?,
                ts: r.get(1)?,
                kind: r.take_text(2)?,
                subtype: r.take_text(3)?,
                text: r.take_text(4)?,
            })
        })
        .collect()
}

/// A task's todo list, by its id (`?1`).
const TODO_ROWS: &str = "SELECT idx, text, state FROM todos WHERE task_id = ?1 ORDER BY idx";

/// [`TODO_ROWS`]' rows, `task`'s list.
fn todo_rows(task: &str, rows: Vec<Row>) -> Result<Vec<TodoItem>, StoreError> {
    let mut out = Vec::with_capacity(rows.len());
    for mut row in rows {
        let idx: i64 = row.get(0)?;
        let text = row.take_text(1)?;
        let state = match row.get::<String>(2)?.as_str() {
            "pending" => TodoState::Pending,
            "in_progress" => TodoState::InProgress,
            "completed" => TodoState::Completed,
            other => {
                return Err(StoreError::Corrupt {
                    task: task.to_owned(),
                    seq: idx,
                    detail: format!("todo state {other:?}"),
                });
            }
        };
        out.push(TodoItem { text, state });
    }
    Ok(out)
}

fn task_row(r: Row) -> Result<TaskRecord, StoreError> {
    let mut r = r;
    let id = r.take_text(0)?;
    let status_text: String = r.get(5)?;
    let u = |i: usize| r.get::<i64>(i).map(|v| u64::try_from(v).unwrap_or(0));
    let Some(status) = TaskStatus::parse(&status_text) else {
        return Err(StoreError::Corrupt {
            task: id,
            seq: 0,
            detail: format!("unknown status {status_text:?}"),
        });
    };
    let settings_text: Option<String> = r.get(19)?;
    let settings = match settings_text.as_deref().map(serde_json::from_str) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            return Err(StoreError::Corrupt {
                task: id,
                seq: 0,
                detail: format!("its settings do not decode: {e}"),
            });
        }
    };
    let usage = Usage {
        input_tokens: u(11)?,
        output_tokens: u(12)?,
        cache_read_tokens: u(13)?,
        cache_write_tokens: u(14)?,
    };
    Ok(TaskRecord {
        parent_id: r.get(1)?,
        root_id: r.take_text(2)?,
        mode: r.take_text(3)?,
        workspace: r.take_text(4)?,
        status,
        prompt: r.take_text(6)?,
        provider: r.take_text(7)?,
        model: r.take_text(8)?,
        created_at: r.get(9)?,
        updated_at: r.get(10)?,
        usage,
        cost: r.get(15)?,
        active_intent: r.get(16)?,
        base_url: r.take_text(17)?,
        profile: r.take_text(18)?,
        settings,
        owner: r.get(20)?,
        id,
    })
}

/// A task's settings as stored.
fn settings_json(s: &TaskSettings) -> Result<String, StoreError> {
    serde_json::to_string(s).map_err(|e| StoreError::Corrupt {
        task: String::new(),
        seq: 0,
        detail: format!("task settings do not encode: {e}"),
    })
}

fn role_str(r: Role) -> &'static str {
    match r {
        Role::User => "user",
        Role::Assistant => "assistant",
    }
}

/// The integer key of task `id` (what the [`LOG_TABLES`] are keyed by).
fn task_key(c: &Conn<'_>, id: &str) -> Result<i64, StoreError> {
    c.opt("SELECT k FROM tasks WHERE id = ?1", params![id])?
        .ok_or_else(|| StoreError::NotFound(id.to_owned()))?
        .get(0)
}

#[cfg(test)]
mod tests;

/// Replace `task`'s todo list with `items` (inside a step's transaction).
fn write_todos(c: &Conn<'_>, task: &str, items: &[TodoItem]) -> Result<(), StoreError> {
    c.later("DELETE FROM todos WHERE task_id = ?1", params![task])?;
    for (i, t) in items.iter().enumerate() {
        let state = match t.state {
            TodoState::Pending => "pending",
            TodoState::InProgress => "in_progress",
            TodoState::Completed => "completed",
        };
        c.later(
            "INSERT INTO todos (task_id, idx, text, state) VALUES (?1, ?2, ?3, ?4)",
            params![task, i64::try_from(i).unwrap_or(i64::MAX), &t.text, state],
        )?;
    }
    Ok(())
}
