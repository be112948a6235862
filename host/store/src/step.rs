//! One step of a task as one transaction: a message of the API history,
//! the UI rows that show it, the task's usage and status, and the events
//! that announce it land together or not at all, so a front-end never hears
//! of a write that a crash could lose, and a turn pays for one commit per
//! step instead of one per row.
//!
//! Steps of many tasks share commits ([`Store::commit`]): a step is
//! prepared (serialised, redacted) by its own task, then queued; whoever
//! finds no commit under way commits everything queued in one transaction,
//! and when a step fails, each is committed alone (one step's failure is
//! its own).
//! Alone, a task commits its step at once, on its own thread; under load,
//! a thousand tasks' steps share a handful of commits instead of paying
//! for one each (a commit writes every page it touched to the WAL).

use foldhash::{HashMap, HashMapExt, HashSet};
use std::borrow::Cow;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use tokio::sync::oneshot;

use super::asks::{self, StoredAsk};
use super::creation::{self, NewRow};
use super::db::{Column, Conn, Dialect, Kept, Param, params};
use super::groups::PreparedGroup;
use super::{Store, StoreError, TaskStatus, TodoItem, now_ms, role_str};
use roost_protocol::conversation::{ContentBlock, Message, Usage};
use roost_protocol::{GroupRecord, UiRow};

/// Most steps one shared commit takes; the rest wait for the next. Ten
/// thousand tasks at once on PostgreSQL queue several hundred steps while
/// a commit is under way: a commit that takes them all (one committer,
/// whose transaction is a handful of statements however many steps it
/// holds) keeps none of them waiting for a second one — P8 on PostgreSQL
/// 17.5 s with 256, 14.2–14.5 s with 1,024, 16.2 s with 4,096 (longer
/// transactions, more memory); SQLite's batches stay under a hundred.
const MAX_BATCH: usize = 1024;

/// What a step without usage adds to the totals.
const NO_USAGE: Usage = Usage {
    input_tokens: 0,
    output_tokens: 0,
    cache_read_tokens: 0,
    cache_write_tokens: 0,
};

/// The history message a step writes.
#[derive(Debug)]
enum StepMessage<'a> {
    /// Appended with the next seq.
    Append(&'a Message),
    /// Replaces the message at this seq (tool results of one assistant
    /// message, filled in as its calls finish).
    Replace(i64, &'a Message),
}

/// The writes of one step of a task, built up and then committed with
/// [`Store::commit_step`] (or prepared for [`Store::commit`]). Every part
/// is optional.
#[derive(Debug, Default)]
pub struct Step<'a> {
    message: Option<StepMessage<'a>>,
    usage: Option<(&'a Usage, f64)>,
    ui: Vec<(UiRow, Cow<'a, str>)>,
    status: Option<TaskStatus>,
    mode: Option<&'a str>,
    condense: Option<Condensation<'a>>,
    todos: Option<&'a [TodoItem]>,
    trace: Vec<String>,
    ask: Option<&'a StoredAsk>,
    answer: Option<(&'a str, &'a str)>,
    group: Option<&'a GroupRecord>,
    events: Vec<StepEvent>,
}

/// An event a step records (JSON text), and whether the tool result it
/// announces keeps its output in the step's own message
/// ([`Step::result_event`]).
#[derive(Debug)]
struct StepEvent {
    json: String,
    output_in_message: bool,
}

/// Messages after the first, up to `upto` (seqs), condensed into a
/// summary.
#[derive(Debug, Clone, Copy)]
struct Condensation<'a> {
    first: i64,
    upto: i64,
    summary: &'a str,
}

/// What a store has written and what it cost ([`Store::stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Steps committed.
    pub steps: u64,
    /// Transactions they took (a shared commit takes many steps).
    pub transactions: u64,
    /// Round trips to a shared database (statements prepared, and each
    /// pipelined batch of statements once); none on SQLite.
    pub round_trips: u64,
    /// Of those, the statements prepared (once a statement a connection).
    pub prepared: u64,
}

/// Positions a committed step took.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Committed {
    /// Seq of the step's history message, if it wrote one.
    pub message: Option<i64>,
    /// Positions of its UI rows in the task's UI history, in order.
    pub ui: Vec<i64>,
    /// Positions of its events in the task's event log, in order.
    pub events: Vec<i64>,
}

impl Committed {
    /// What an empty step took: nothing.
    fn nothing() -> Self {
        Self {
            message: None,
            ui: Vec::new(),
            events: Vec::new(),
        }
    }
}

impl<'a> Step<'a> {
    /// A step that writes nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append `m` to the API history.
    pub fn append(mut self, m: &'a Message) -> Self {
        self.message = Some(StepMessage::Append(m));
        self
    }

    /// Append `m`, or replace the message at `seq` with it when there is one.
    pub fn put(mut self, seq: Option<i64>, m: &'a Message) -> Self {
        self.message = Some(match seq {
            Some(seq) => StepMessage::Replace(seq, m),
            None => StepMessage::Append(m),
        });
        self
    }

    /// Add a turn's usage and cost to the task's totals.
    pub fn usage(mut self, u: &'a Usage, cost: f64) -> Self {
        self.usage = Some((u, cost));
        self
    }

    /// What this step adds to the task's totals, if anything.
    pub fn usage_added(&self) -> Option<(&'a Usage, f64)> {
        self.usage
    }

    /// Add a UI row. Credentials in `text` are redacted when it is written.
    pub fn ui(mut self, row: UiRow, text: impl Into<Cow<'a, str>>) -> Self {
        self.ui.push((row, text.into()));
        self
    }

    /// Set the task's mode.
    pub fn mode(mut self, slug: &'a str) -> Self {
        self.mode = Some(slug);
        self
    }

    /// Hide the messages after `first` up to `upto` (seqs), condensed
    /// into `summary` (nothing is deleted).
    pub fn condense(mut self, first: i64, upto: i64, summary: &'a str) -> Self {
        self.condense = Some(Condensation {
            first,
            upto,
            summary,
        });
        self
    }

    /// Record trace entries (JSON lines) with this step, to be appended
    /// to the workspace's trace once the step is durable
    /// ([`Store::pending_trace`]).
    pub fn trace(mut self, lines: Vec<String>) -> Self {
        self.trace = lines;
        self
    }

    /// Replace the task's todo list.
    pub fn todos(mut self, items: &'a [TodoItem]) -> Self {
        self.todos = Some(items);
        self
    }

    /// Record the parallel group `group` the task coordinates, or its new
    /// state: with the step that announces it (started, a child started,
    /// ended), so the record and its events land together.
    pub fn group(mut self, group: &'a GroupRecord) -> Self {
        self.group = Some(group);
        self
    }

    /// Set the task's status.
    pub fn status(mut self, status: TaskStatus) -> Self {
        self.status = Some(status);
        self
    }

    /// Set the task's status to `status` unless the step sets one itself
    /// (a status owed from before gives way to the step's own).
    pub fn or_status(mut self, status: TaskStatus) -> Self {
        self.status.get_or_insert(status);
        self
    }

    /// Record the open ask `ask` (made with [`StoredAsk::open`]).
    pub fn ask(mut self, ask: &'a StoredAsk) -> Self {
        self.ask = Some(ask);
        self
    }

    /// Record `answer` (JSON text) for the open ask `ask_id`; the step
    /// fails with [`StoreError::AskNotOpen`] when that ask is not open.
    pub fn answer(mut self, ask_id: &'a str, answer: &'a str) -> Self {
        self.answer = Some((ask_id, answer));
        self
    }

    /// Record an event (JSON text) in the task's event log.
    pub fn event(mut self, json: String) -> Self {
        self.events.push(StepEvent {
            json,
            output_in_message: false,
        });
        self
    }

    /// Whether this step's message answers call `call_id` with `output`,
    /// as a result that is not an error: then the event announcing that
    /// result need not keep a second copy of it ([`Step::result_event`]).
    pub fn holds_output(&self, call_id: &str, output: &str) -> bool {
        let Some(StepMessage::Append(m) | StepMessage::Replace(_, m)) = &self.message else {
            return false;
        };
        m.content.iter().any(|b| {
            matches!(b, ContentBlock::ToolResult { tool_use_id, content, is_error: false }
                if tool_use_id == call_id && content == output)
        })
    }

    /// Record the event announcing a tool result whose output this step's
    /// message holds ([`Step::holds_output`]), `json` with that output
    /// left empty: the log keeps where the output is (the message's seq)
    /// and reading it back fills it in ([`Store::events_after`]), so a
    /// turn writes a file it read once, not twice. A step without a
    /// message fails to commit.
    pub fn result_event(mut self, json: String) -> Self {
        self.events.push(StepEvent {
            json,
            output_in_message: true,
        });
        self
    }

    /// Whether the step writes nothing.
    pub fn is_empty(&self) -> bool {
        self.message.is_none()
            && self.usage.is_none()
            && self.ui.is_empty()
            && self.status.is_none()
            && self.mode.is_none()
            && self.condense.is_none()
            && self.todos.is_none()
            && self.trace.is_empty()
            && self.ask.is_none()
            && self.answer.is_none()
            && self.group.is_none()
            && self.events.is_empty()
    }

    /// The step as its rows will be written, owned: the message serialised
    /// and the UI rows redacted here, by the task itself, so a shared
    /// commit only inserts.
    pub fn prepare(self, task: &str) -> Result<PreparedStep, StoreError> {
        let content = |m: &Message, seq: i64| {
            let corrupt = |detail: String| StoreError::Corrupt {
                task: task.to_owned(),
                seq,
                detail,
            };
            let mut out = Vec::with_capacity(m.encoded_len_hint());
            roost_protocol::conversation::write_blocks(&mut out, &m.content)
                .map_err(|e| corrupt(e.to_string()))?;
            String::from_utf8(out).map_err(|e| corrupt(e.to_string()))
        };
        let message = match self.message {
            None => None,
            Some(StepMessage::Append(m)) => Some(PreparedMessage::Append {
                role: role_str(m.role),
                content: content(m, -1)?,
            }),
            Some(StepMessage::Replace(seq, m)) => Some(PreparedMessage::Replace {
                seq,
                content: content(m, seq)?,
            }),
        };
        let (usage, cost) = self.usage.unwrap_or((&NO_USAGE, 0.0));
        Ok(PreparedStep {
            empty: self.is_empty(),
            message,
            usage: *usage,
            cost,
            ui: self
                .ui
                .iter()
                .map(|(row, text)| (*row, roost_secrets::redact(text).into_owned()))
                .collect(),
            status: self.status,
            mode: self.mode.map(str::to_owned),
            // A summary may quote what the model saw; it keeps no credential.
            condense: self.condense.map(|c| {
                (
                    c.first,
                    c.upto,
                    roost_secrets::redact(c.summary).into_owned(),
                )
            }),
            todos: self.todos.map(<[TodoItem]>::to_vec),
            trace: self.trace,
            ask: self.ask.cloned(),
            answer: self
                .answer
                .map(|(id, text)| (id.to_owned(), text.to_owned())),
            group: self.group.map(PreparedGroup::of).transpose()?,
            events: self.events,
            release: None,
        })
    }
}

/// The message of a prepared step, serialised.
#[derive(Debug)]
enum PreparedMessage {
    Append { role: &'static str, content: String },
    Replace { seq: i64, content: String },
}

/// A [`Step`] ready to be written: owned, serialised and redacted, so it
/// can wait in the shared-commit queue ([`Store::commit`]).
#[derive(Debug)]
pub struct PreparedStep {
    empty: bool,
    message: Option<PreparedMessage>,
    usage: Usage,
    cost: f64,
    ui: Vec<(UiRow, String)>,
    status: Option<TaskStatus>,
    mode: Option<String>,
    condense: Option<(i64, i64, String)>,
    todos: Option<Vec<TodoItem>>,
    trace: Vec<String>,
    ask: Option<StoredAsk>,
    answer: Option<(String, String)>,
    group: Option<PreparedGroup>,
    events: Vec<StepEvent>,
    /// The owner whose claim on the task the step releases (its run ends).
    release: Option<String>,
}

impl PreparedStep {
    /// The step releasing `owner`'s claim on its task as well
    /// ([`super::TaskClaim::release`]).
    pub(super) fn releasing(mut self, owner: &str) -> Self {
        self.release = Some(owner.to_owned());
        self.empty = false;
        self
    }
}

/// A per-task log a step appends to.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Log {
    Api,
    Ui,
    Events,
}

impl Log {
    const ALL: [Log; 3] = [Log::Api, Log::Ui, Log::Events];

    /// One row appended: the task's key, its position, then the row's own
    /// columns ([`Log::columns`]).
    fn insert_sql(self) -> &'static str {
        match self {
            Log::Api => {
                "INSERT INTO api_messages (task, seq, role, content, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5)"
            }
            Log::Ui => {
                "INSERT INTO ui_messages (task, seq, ts, kind, subtype, text) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
            }
            Log::Events => {
                "INSERT INTO events (task, seq, ts, event, result_in, ui_seq, ui_kind, ui_subtype, ui_text) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
            }
        }
    }

    /// Many rows appended at once on PostgreSQL, a column an array.
    fn unnest_sql(self) -> &'static str {
        match self {
            Log::Api => {
                "INSERT INTO api_messages (task, seq, role, content, created_at) \
                 SELECT * FROM UNNEST(?1::int8[], ?2::int8[], ?3::text[], ?4::text[], ?5::int8[])"
            }
            Log::Ui => {
                "INSERT INTO ui_messages (task, seq, ts, kind, subtype, text) \
                 SELECT * FROM UNNEST(?1::int8[], ?2::int8[], ?3::int8[], ?4::text[], ?5::text[], ?6::text[])"
            }
            Log::Events => {
                "INSERT INTO events (task, seq, ts, event, result_in, ui_seq, ui_kind, ui_subtype, ui_text) \
                 SELECT * FROM UNNEST(?1::int8[], ?2::int8[], ?3::int8[], ?4::text[], ?5::int8[], \
                 ?6::int8[], ?7::text[], ?8::text[], ?9::text[])"
            }
        }
    }

    /// The empty columns of [`Log::insert_sql`]'s rows.
    fn columns(self) -> Vec<Column> {
        let int = || Column::Int(Vec::new());
        let text = || Column::Text(Vec::new());
        match self {
            Log::Api => vec![int(), int(), text(), text(), int()],
            Log::Ui => vec![int(), int(), int(), text(), text(), text()],
            Log::Events => vec![
                int(),
                int(),
                int(),
                text(),
                Column::OptInt(Vec::new()),
                Column::OptInt(Vec::new()),
                Column::OptText(Vec::new()),
                Column::OptText(Vec::new()),
                Column::OptText(Vec::new()),
            ],
        }
    }

    fn index(self) -> usize {
        match self {
            Log::Api => 0,
            Log::Ui => 1,
            Log::Events => 2,
        }
    }

    /// The last position in this log of the task keyed `?1`.
    fn last_sql(self) -> &'static str {
        match self {
            Log::Api => "SELECT COALESCE(MAX(seq), 0) FROM api_messages WHERE task = ?1",
            Log::Ui => LAST_UI_SEQ,
            Log::Events => "SELECT COALESCE(MAX(seq), 0) FROM events WHERE task = ?1",
        }
    }
}

/// The last position in the UI log of the task keyed `?1`: its rows are
/// in `ui_messages` and, carried by the events of the steps that wrote
/// them, in `events` ([`write_step`]). A UI row's position grows with its
/// event's, so the last event that carries one has the highest (a
/// backward scan of the task's events that stops there).
const LAST_UI_SEQ: &str = "SELECT CASE WHEN a > b THEN a ELSE b END FROM (SELECT \
     (SELECT COALESCE(MAX(seq), 0) FROM ui_messages WHERE task = ?1) AS a, \
     COALESCE((SELECT ui_seq FROM events WHERE task = ?1 AND ui_seq IS NOT NULL \
     ORDER BY seq DESC LIMIT 1), 0) AS b) AS last";

/// What one write transaction has learnt of the tasks it writes: each
/// task's integer key and the next free position in each of its logs,
/// looked up once and then counted up. An append is then a plain INSERT,
/// instead of a sub-select and a `RETURNING` (which SQLite runs through a
/// temporary table) per row. Valid only inside the transaction that learnt
/// it, which holds the write lock from its start ([`write_transaction`]),
/// so no other connection can take a position meanwhile.
#[derive(Default)]
pub(super) struct Positions<'c> {
    keys: HashMap<String, i64>,
    next: HashMap<(Log, i64), i64>,
    /// Tasks whose claim this transaction has checked (once is enough:
    /// their rows stay locked until it commits).
    fenced: HashSet<String>,
    /// Messages already replaced, by task key and seq ([`Positions::learn`]).
    replaced: HashSet<(i64, i64)>,
    /// Asks already answered, by task id ([`Positions::learn`]).
    answered: HashMap<String, HashSet<String>>,
    /// Each task's last event written, announced once at the end
    /// ([`Positions::announce`]).
    announce: Vec<(String, i64)>,
    /// Tasks this transaction creates ([`Positions::created`]).
    new_tasks: HashSet<String>,
    /// On PostgreSQL, the rows appended to each log ([`Log::index`]), by
    /// column, sent at the end as one statement a log
    /// ([`Positions::finish`]): a shared commit of many tasks' steps is a
    /// handful of statements for the server, not one a row.
    appended: [Option<Vec<Column>>; 3],
    /// On PostgreSQL, what the transaction's steps change on each task's
    /// row (totals added up, the last status and mode), in the order the
    /// tasks were first touched, by key: one `UPDATE` at the end.
    totals: Vec<(i64, TaskTotals)>,
    /// On SQLite, each log's `INSERT` ([`Log::index`]) as the
    /// transaction's first row of it prepared it: its later rows bind and
    /// run it again, not looked up in the connection's statement cache
    /// and put back a row at a time.
    inserts: [Option<rusqlite::CachedStatement<'c>>; 3],
}

/// What a SQLite store's shared commits learnt of the tasks they wrote,
/// kept from one to the next while nothing else writes to the file
/// ([`Db::write_kept`](super::db::Db::write_kept)): each task's key and
/// the next free position in each of its logs, so a task's next step
/// looks neither up again. A task whose run ends is forgotten, and all of
/// it past [`MAX_TAILS`] tasks.
#[derive(Default)]
pub(super) struct Tails {
    keys: HashMap<String, i64>,
    next: HashMap<(Log, i64), i64>,
}

/// Most tasks whose [`Tails`] are kept (about 100 bytes each).
const MAX_TAILS: usize = 16_384;

/// What the steps of one transaction change on a task's row.
struct TaskTotals {
    tokens: [i64; 4],
    cost: f64,
    status: Option<TaskStatus>,
    mode: Option<String>,
    at: i64,
}

/// Many tasks' rows changed at once on PostgreSQL ([`Positions::totals`]).
const SET_TOTALS: &str = "UPDATE tasks AS t SET tokens_in = t.tokens_in + u.ti, \
     tokens_out = t.tokens_out + u.tout, cache_reads = t.cache_reads + u.cr, \
     cache_writes = t.cache_writes + u.cw, cost = t.cost + u.cost, \
     status = COALESCE(u.status, t.status), mode = COALESCE(u.mode, t.mode), updated_at = u.at \
     FROM UNNEST(?1::int8[], ?2::int8[], ?3::int8[], ?4::int8[], ?5::int8[], ?6::float8[], \
     ?7::text[], ?8::int8[], ?9::text[]) AS u(k, ti, tout, cr, cw, cost, status, at, mode) \
     WHERE t.k = u.k";

/// Lock the rows of the tasks whose ids are `?1` (comma-separated: task
/// ids are UUIDs), in byte order of their ids — the one order every
/// host's transactions lock tasks in, so two never wait on each other in a
/// ring — and give each one's integer key: one statement for a shared
/// commit's tasks, however many.
/// (The ids are split once, as a function scan joined on the `id`
/// index: `id = ANY(string_to_array(…))` is planned as a scan of every
/// task that splits the list again for each row.)
const LOCK_TASKS: &str = "SELECT t.id, t.k FROM unnest(string_to_array(?1, ',')) AS w(id) \
     JOIN tasks t ON t.id = w.id ORDER BY t.id COLLATE \"C\" FOR UPDATE OF t";

/// The last positions of the three logs of the tasks whose ids are `?1`
/// (as [`LOCK_TASKS`]): one statement, sent after the locks.
const LAST_SEQS: &str = "SELECT t.id, \
     (SELECT COALESCE(MAX(seq), 0) FROM api_messages WHERE task = t.k), \
     GREATEST((SELECT COALESCE(MAX(seq), 0) FROM ui_messages WHERE task = t.k), \
       COALESCE((SELECT ui_seq FROM events WHERE task = t.k AND ui_seq IS NOT NULL \
       ORDER BY seq DESC LIMIT 1), 0)), \
     (SELECT COALESCE(MAX(seq), 0) FROM events WHERE task = t.k) \
     FROM unnest(string_to_array(?1, ',')) AS w(id) JOIN tasks t ON t.id = w.id";

/// Longest `pg_notify` payload sent (PostgreSQL's limit is 8,000 bytes).
const NOTIFY_PAYLOAD: usize = 7_900;

impl<'c> Positions<'c> {
    /// Learn that `task`, keyed `key`, is inserted by this very
    /// transaction: it has no rows in any log yet, so nothing of it is
    /// looked up or locked, and its events are not announced (until the
    /// transaction commits no one knows its id, so no one follows it yet,
    /// and whoever follows it later reads its log first).
    pub(super) fn created(&mut self, task: &str, key: i64) {
        self.keys.insert(task.to_owned(), key);
        for log in Log::ALL {
            self.next.insert((log, key), 1);
        }
        self.new_tasks.insert(task.to_owned());
    }

    /// Append `row` ([`Log::insert_sql`]'s parameters) to `log`: now on
    /// SQLite, with the transaction's other rows of that log at its end on
    /// PostgreSQL ([`Positions::finish`]).
    fn append(&mut self, c: &Conn<'c>, log: Log, row: &[Param<'_>]) -> Result<(), StoreError> {
        if let Conn::Lite(conn) = c {
            let slot = self
                .inserts
                .get_mut(log.index())
                .ok_or_else(|| StoreError::Commit(format!("no log at {}", log.index())))?;
            let insert = match slot {
                Some(insert) => insert,
                None => slot.insert(conn.prepare_cached(log.insert_sql())?),
            };
            insert.execute(rusqlite::params_from_iter(row.iter()))?;
            return Ok(());
        }
        let columns = self.appended[log.index()].get_or_insert_with(|| log.columns());
        if columns.len() != row.len() || !columns.iter_mut().zip(row).all(|(col, p)| col.push(*p)) {
            return Err(StoreError::Commit(format!(
                "a row of the wrong shape for {}",
                log.insert_sql()
            )));
        }
        Ok(())
    }

    /// Add what `step` changes on the row of the task keyed `key` to the
    /// transaction's [`Positions::totals`] (PostgreSQL).
    fn add_totals(&mut self, key: i64, step: &PreparedStep, now: i64) {
        let u = &step.usage;
        let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let add = [
            i(u.input_tokens),
            i(u.output_tokens),
            i(u.cache_read_tokens),
            i(u.cache_write_tokens),
        ];
        match self.totals.iter_mut().find(|(k, _)| *k == key) {
            Some((_, t)) => {
                for (sum, n) in t.tokens.iter_mut().zip(add) {
                    *sum = sum.saturating_add(n);
                }
                t.cost += step.cost;
                t.status = step.status.or(t.status);
                if let Some(mode) = &step.mode {
                    t.mode = Some(mode.clone());
                }
                t.at = t.at.max(now);
            }
            None => self.totals.push((
                key,
                TaskTotals {
                    tokens: add,
                    cost: step.cost,
                    status: step.status,
                    mode: step.mode.clone(),
                    at: now,
                },
            )),
        }
    }

    /// End the transaction's writes: on PostgreSQL send the tasks' totals
    /// and the rows appended, one statement a table; then announce the
    /// tasks' events.
    fn finish(&mut self, c: &Conn<'_>) -> Result<(), StoreError> {
        if !self.totals.is_empty() {
            let n = self.totals.len();
            let (mut keys, mut tokens, mut costs, mut statuses, mut ats, mut modes) = (
                Vec::with_capacity(n),
                [(); 4].map(|()| Vec::with_capacity(n)),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
            );
            for (key, t) in std::mem::take(&mut self.totals) {
                keys.push(key);
                for (column, n) in tokens.iter_mut().zip(t.tokens) {
                    column.push(n);
                }
                costs.push(t.cost);
                statuses.push(t.status.map(|s| s.as_str().to_owned()));
                ats.push(t.at);
                modes.push(t.mode);
            }
            let [ti, tout, cr, cw] = tokens.map(Column::Int);
            c.later_columns(
                SET_TOTALS,
                vec![
                    Column::Int(keys),
                    ti,
                    tout,
                    cr,
                    cw,
                    Column::Real(costs),
                    Column::OptText(statuses),
                    Column::Int(ats),
                    Column::OptText(modes),
                ],
            )?;
        }
        for log in Log::ALL {
            self.flush(c, log)?;
        }
        self.announce(c)
    }

    /// On PostgreSQL, queue the rows appended to `log` so far, before a
    /// statement that reads or changes that log's rows (SQLite writes each
    /// row as it is appended).
    fn flush(&mut self, c: &Conn<'_>, log: Log) -> Result<(), StoreError> {
        match self.appended.get_mut(log.index()).and_then(Option::take) {
            Some(columns) => c.later_columns(log.unnest_sql(), columns),
            None => Ok(()),
        }
    }

    /// Leave what this transaction learnt of its tasks in `tails` for the
    /// next one, but for the tasks whose run `steps` end.
    fn keep(&mut self, steps: &[(&str, &PreparedStep)], tails: &mut Tails) {
        for (task, _) in steps.iter().filter(|(_, s)| s.release.is_some()) {
            if let Some(key) = self.keys.remove(*task) {
                for log in Log::ALL {
                    self.next.remove(&(log, key));
                }
            }
        }
        if self.keys.len() <= MAX_TAILS {
            tails.keys = std::mem::take(&mut self.keys);
            tails.next = std::mem::take(&mut self.next);
        }
    }

    /// Take the next position in `log` of the task keyed `key`.
    fn take(&mut self, c: &Conn<'_>, log: Log, key: i64) -> Result<i64, StoreError> {
        let next = match self.next.get(&(log, key)) {
            Some(n) => *n,
            None => c.one(log.last_sql(), params![key])?.get::<i64>(0)? + 1,
        };
        self.next.insert((log, key), next + 1);
        Ok(next)
    }

    /// On PostgreSQL, before writing `steps`: lock their tasks' rows (in one
    /// order, so two hosts' transactions never wait on each other in a
    /// ring), then learn each task's key and log positions, check that
    /// `owner` still holds the claims of `fenced`, and replace the messages
    /// the steps replace, and record the answers they give to asks opened
    /// before this transaction — all in one round trip. Each statement after the
    /// locks reads a snapshot taken once every lock is held, so another
    /// host that wrote to a task before this transaction locked it is seen.
    /// On SQLite (one writer, answers in microseconds) nothing is learnt
    /// ahead: positions are looked up as they are needed.
    fn learn(
        &mut self,
        c: &Conn<'_>,
        steps: &[(&str, &PreparedStep)],
        fenced: &[&str],
        owner: Option<&str>,
        now: i64,
    ) -> Result<(), StoreError> {
        if c.dialect() == Dialect::Sqlite {
            if let Some(owner) = owner {
                super::claims::check_fences(c, fenced, owner)?;
            }
            return Ok(());
        }
        let mut tasks: Vec<&str> = steps
            .iter()
            .map(|(t, _)| *t)
            .filter(|t| !self.new_tasks.contains(*t))
            .collect();
        tasks.sort_unstable();
        tasks.dedup();
        // Only tasks this transaction creates: nothing to learn or lock.
        if tasks.is_empty() {
            return Ok(());
        }
        let ids = tasks.join(",");
        let ids = [Param::Text(&ids)];
        let mut queries: Vec<(&str, &[Param<'_>])> = Vec::with_capacity(3 + steps.len());
        queries.push((LOCK_TASKS, &ids));
        queries.push((LAST_SEQS, &ids));
        let joined = fenced.join(",");
        let fence_params = owner
            .filter(|_| !fenced.is_empty())
            .map(|o| [Param::Text(o), Param::Text(&joined)]);
        if let Some(ps) = &fence_params {
            queries.push((super::claims::FENCES, ps));
        }
        let replaces: Vec<(&str, i64, [Param<'_>; 3])> = steps
            .iter()
            .filter_map(|(task, step)| match &step.message {
                Some(PreparedMessage::Replace { seq, content }) => Some((
                    *task,
                    *seq,
                    [Param::Text(task), Param::Int(*seq), Param::Text(content)],
                )),
                _ => None,
            })
            .collect();
        for (_, _, ps) in &replaces {
            queries.push((REPLACE_BY_ID, ps));
        }
        // An answer to an ask a step of this very batch opens is recorded in
        // the batch's order instead ([`write_step`]).
        let opened: HashSet<(&str, &str)> = steps
            .iter()
            .filter_map(|(task, step)| Some((*task, step.ask.as_ref()?.ask_id.as_str())))
            .collect();
        let given: Vec<(&str, &str, [Param<'_>; 4])> = steps
            .iter()
            .filter_map(|(task, step)| {
                let (ask_id, answer) = step.answer.as_ref()?;
                (!opened.contains(&(*task, ask_id.as_str()))).then(|| {
                    (
                        *task,
                        ask_id.as_str(),
                        [
                            Param::Text(task),
                            Param::Text(ask_id),
                            Param::Text(answer),
                            Param::Int(now),
                        ],
                    )
                })
            })
            .collect();
        for (_, _, ps) in &given {
            queries.push((asks::ANSWER_RETURNING, ps));
        }
        let mut answers = c.query_all(&queries)?.into_iter();
        let mut keys = HashMap::with_capacity(tasks.len());
        for mut row in answers.next().unwrap_or_default() {
            keys.insert(row.take_text(0)?, row.get::<i64>(1)?);
        }
        let mut last = HashMap::with_capacity(tasks.len());
        for mut row in answers.next().unwrap_or_default() {
            let seqs = [row.get::<i64>(1)?, row.get::<i64>(2)?, row.get::<i64>(3)?];
            last.insert(row.take_text(0)?, seqs);
        }
        for task in &tasks {
            let (Some(key), Some(seqs)) = (keys.get(*task), last.get(*task)) else {
                return Err(StoreError::NotFound((*task).to_owned()));
            };
            for (log, seq) in [Log::Api, Log::Ui, Log::Events].into_iter().zip(seqs) {
                self.next.insert((log, *key), seq + 1);
            }
            self.keys.insert((*task).to_owned(), *key);
        }
        if fence_params.is_some() {
            let held = answers.next().unwrap_or_default();
            super::claims::fences_held(held, fenced)?;
            self.fenced.extend(fenced.iter().map(|t| (*t).to_owned()));
        }
        for (task, seq, _) in &replaces {
            if answers.next().is_none_or(|rows| rows.is_empty()) {
                return Err(StoreError::Corrupt {
                    task: (*task).to_owned(),
                    seq: *seq,
                    detail: "no such message to replace".into(),
                });
            }
            if let Some(key) = self.keys.get(*task) {
                self.replaced.insert((*key, *seq));
            }
        }
        // A second answer to one ask (two front-ends at once) finds it
        // answered by the first, here as anywhere.
        for (task, ask_id, _) in &given {
            if answers.next().is_none_or(|rows| rows.is_empty()) {
                return Err(StoreError::AskNotOpen {
                    task: (*task).to_owned(),
                    ask_id: (*ask_id).to_owned(),
                });
            }
            self.answered
                .entry((*task).to_owned())
                .or_default()
                .insert((*ask_id).to_owned());
        }
        Ok(())
    }

    /// Tell the hosts following these tasks that their events are
    /// committed: on PostgreSQL, one notification for many tasks (sent with
    /// the `COMMIT`, heard once it lands), `task:seq` entries a line each.
    fn announce(&mut self, c: &Conn<'_>) -> Result<(), StoreError> {
        if c.dialect() != Dialect::Postgres || self.announce.is_empty() {
            return Ok(());
        }
        let mut payload = String::new();
        for (task, seq) in std::mem::take(&mut self.announce) {
            let entry = format!("{task}:{seq}");
            if !payload.is_empty() && payload.len() + 1 + entry.len() > NOTIFY_PAYLOAD {
                c.later("SELECT pg_notify('roost_events', ?1)", params![&payload])?;
                payload.clear();
            }
            if !payload.is_empty() {
                payload.push('\n');
            }
            payload.push_str(&entry);
        }
        c.later("SELECT pg_notify('roost_events', ?1)", params![&payload])
    }
}

/// Replace a message's content by task id and seq; a row back when it was
/// there.
const REPLACE_BY_ID: &str = "UPDATE api_messages SET content = ?3 \
     WHERE task = (SELECT k FROM tasks WHERE id = ?1) AND seq = ?2 RETURNING seq";

/// Write the first step of `task`, which the caller's write transaction
/// ([`super::db::Db::write`]) creates ([`Positions::created`]), unless it
/// is empty. Its events are not announced to other hosts (an announcement
/// is a `NOTIFY`, whose lock every announcing commit of the database takes
/// in turn: P8 on PostgreSQL ran 0.93× without a creation's
/// notifications).
pub(super) fn write_opening<'c>(
    conn: &Conn<'c>,
    task: &str,
    step: &PreparedStep,
    now: i64,
    positions: &mut Positions<'c>,
) -> Result<Committed, StoreError> {
    if step.empty {
        return Ok(Committed::nothing());
    }
    let committed = write_step(conn, task, step, now, positions, None)?;
    positions.finish(conn)?;
    Ok(committed)
}

/// Write `step` of `task` inside the caller's write transaction
/// (`positions` belongs to it). On SQLite the transaction holds the
/// database's write lock; on PostgreSQL the task's row is locked first, so
/// a host answering an ask of a task another host runs takes positions in
/// turn with it. With `fence` (the owner this host runs the task as), the
/// step lands only while that owner still holds the task's claim
/// ([`super::claims::check_fence`]), checked under the row lock.
fn write_step<'a, 'c>(
    conn: &Conn<'c>,
    task: &'a str,
    step: &'a PreparedStep,
    now: i64,
    positions: &mut Positions<'c>,
    fence: Option<&str>,
) -> Result<Committed, StoreError> {
    let mut committed = Committed {
        message: None,
        ui: Vec::with_capacity(step.ui.len()),
        events: Vec::with_capacity(step.events.len()),
    };
    // Touching the task first makes a missing task an error before
    // anything else is written, and gives the integer key the history,
    // UI and event rows are filed under.
    let i = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    let u = &step.usage;
    // A step that changes neither the totals nor the status only looks the
    // key up: rewriting the task's row would dirty its page (one page a task
    // in a batch of many) for nothing but `updated_at`.
    let touches_task =
        step.status.is_some() || step.mode.is_some() || step.cost != 0.0 || *u != NO_USAGE;
    // The task's totals, status and mode after the step, on its row (`?1`).
    macro_rules! set_totals {
        ($row:literal) => {
            concat!(
                "UPDATE tasks SET tokens_in = tokens_in + ?2, tokens_out = tokens_out + ?3, \
                 cache_reads = cache_reads + ?4, cache_writes = cache_writes + ?5, \
                 cost = cost + ?6, status = COALESCE(?7, status), mode = COALESCE(?9, mode), \
                 updated_at = ?8 ",
                $row
            )
        };
    }
    let totals = |row: Param<'a>| -> [Param<'a>; 9] {
        [
            row,
            Param::Int(i(u.input_tokens)),
            Param::Int(i(u.output_tokens)),
            Param::Int(i(u.cache_read_tokens)),
            Param::Int(i(u.cache_write_tokens)),
            Param::Real(step.cost),
            Param::from(step.status.map(TaskStatus::as_str)),
            Param::Int(now),
            Param::from(step.mode.as_deref()),
        ]
    };
    let key: Option<i64> = match positions.keys.get(task).copied() {
        // Known (and its row locked) already: the totals go with the next
        // round trip.
        Some(k) => {
            if touches_task {
                match conn.dialect() {
                    Dialect::Sqlite => {
                        conn.later(set_totals!("WHERE k = ?1"), &totals(Param::Int(k)))?;
                    }
                    Dialect::Postgres => positions.add_totals(k, step, now),
                }
            }
            Some(k)
        }
        None if !touches_task => conn
            .opt(
                match conn.dialect() {
                    Dialect::Sqlite => "SELECT k FROM tasks WHERE id = ?1",
                    Dialect::Postgres => "SELECT k FROM tasks WHERE id = ?1 FOR UPDATE",
                },
                params![task],
            )?
            .map(|r| r.get(0))
            .transpose()?,
        None => conn
            .opt(
                set_totals!("WHERE id = ?1 RETURNING k"),
                &totals(Param::Text(task)),
            )?
            .map(|r| r.get(0))
            .transpose()?,
    };
    let Some(key) = key else {
        return Err(StoreError::NotFound(task.to_owned()));
    };
    if !positions.keys.contains_key(task) {
        positions.keys.insert(task.to_owned(), key);
    }
    if let Some(owner) = fence
        && positions.fenced.insert(task.to_owned())
    {
        super::claims::check_fence(conn, task, owner)?;
    }
    committed.message = match &step.message {
        None => None,
        Some(PreparedMessage::Append { role, content }) => {
            let seq = positions.take(conn, Log::Api, key)?;
            positions.append(conn, Log::Api, params![key, seq, *role, content, now])?;
            Some(seq)
        }
        Some(PreparedMessage::Replace { seq, .. }) if positions.replaced.contains(&(key, *seq)) => {
            Some(*seq)
        }
        Some(PreparedMessage::Replace { seq, content }) => {
            // The message may be one this transaction appended.
            positions.flush(conn, Log::Api)?;
            let n = conn.exec(
                "UPDATE api_messages SET content = ?3 WHERE task = ?1 AND seq = ?2",
                params![key, seq, content],
            )?;
            if n == 0 {
                return Err(StoreError::Corrupt {
                    task: task.to_owned(),
                    seq: *seq,
                    detail: "no such message to replace".into(),
                });
            }
            Some(*seq)
        }
    };
    if let Some((first, upto, summary)) = &step.condense {
        // Messages this transaction appended are hidden too.
        positions.flush(conn, Log::Api)?;
        conn.later(
            "UPDATE api_messages SET hidden = 1 WHERE task = ?1 AND seq > ?2 AND seq <= ?3",
            params![key, first, upto],
        )?;
        conn.later(
            "INSERT INTO condensations (task_id, upto_seq, summary, created_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (task_id, upto_seq) DO UPDATE SET summary = excluded.summary, created_at = excluded.created_at",
            params![task, upto, summary, now],
        )?;
    }
    if let Some(items) = &step.todos {
        super::write_todos(conn, task, items)?;
    }
    if let Some(group) = &step.group {
        group.write(conn, task)?;
    }
    for line in &step.trace {
        conn.later(
            "INSERT INTO pending_trace (task_id, seq, entry) \
             SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2 FROM pending_trace WHERE task_id = ?1",
            params![task, line],
        )?;
    }
    // The step's UI rows: the first ones ride in the rows of its events
    // (one row, one index entry, where a row of each log would be two
    // of each), the rest, beyond its events, go to their own table.
    for (i, (row, text)) in step.ui.iter().enumerate() {
        let seq = positions.take(conn, Log::Ui, key)?;
        if i >= step.events.len() {
            let (kind, subtype) = (row.kind.as_str(), row.subtype.as_str());
            positions.append(conn, Log::Ui, params![key, seq, now, kind, subtype, text])?;
        }
        committed.ui.push(seq);
    }
    if let Some(ask) = &step.ask {
        if ask.task_id != task {
            return Err(StoreError::Commit(format!(
                "ask {} belongs to task {}, not {task}",
                ask.ask_id, ask.task_id
            )));
        }
        asks::insert(conn, ask)?;
    }
    if let Some((ask_id, answer)) = &step.answer
        && !positions
            .answered
            .get(task)
            .is_some_and(|given| given.contains(ask_id))
        && !asks::record_answer(conn, task, ask_id, answer, now)?
    {
        return Err(StoreError::AskNotOpen {
            task: task.to_owned(),
            ask_id: ask_id.clone(),
        });
    }
    for (i, event) in step.events.iter().enumerate() {
        let output_in = match (event.output_in_message, committed.message) {
            (false, _) => None,
            (true, Some(m)) => Some(m),
            (true, None) => {
                return Err(StoreError::Commit(format!(
                    "task {task}: a result's event points to the step's message, and the step has none"
                )));
            }
        };
        let seq = positions.take(conn, Log::Events, key)?;
        let carried = step.ui.get(i).zip(committed.ui.get(i));
        let [ui_seq, ui_kind, ui_subtype, ui_text] = match carried {
            Some(((row, text), ui_seq)) => [
                Param::Int(*ui_seq),
                Param::Text(row.kind.as_str()),
                Param::Text(row.subtype.as_str()),
                Param::Text(text),
            ],
            None => [Param::Null; 4],
        };
        positions.append(
            conn,
            Log::Events,
            &[
                Param::Int(key),
                Param::Int(seq),
                Param::Int(now),
                Param::Text(event.json.as_str()),
                Param::from(output_in),
                ui_seq,
                ui_kind,
                ui_subtype,
                ui_text,
            ],
        )?;
        committed.events.push(seq);
    }
    // Hosts following this task hear of its events at commit.
    if let Some(last) = committed.events.last()
        && !positions.new_tasks.contains(task)
    {
        positions.announce.push((task.to_owned(), *last));
    }
    if let Some(owner) = &step.release {
        conn.later(super::claims::RELEASE, params![task, owner])?;
    }
    Ok(committed)
}

/// Write `steps` of many tasks, in order, in the caller's transaction
/// (one shared commit's), after inserting the tasks `created` (whose
/// first steps are among `steps`); `fenced` the tasks whose claim `owner`
/// must still hold.
pub(super) fn write_batch(
    c: &Conn<'_>,
    created: &[&NewRow],
    steps: &[(&str, &PreparedStep)],
    fenced: &[&str],
    owner: Option<&str>,
    now: i64,
    mut tails: Option<&mut Tails>,
) -> Result<Vec<Committed>, StoreError> {
    let mut positions = Positions::default();
    if let Some(t) = tails.as_deref_mut() {
        positions.keys = std::mem::take(&mut t.keys);
        positions.next = std::mem::take(&mut t.next);
    }
    // A new task's first step is dated with its row, as its record is.
    let mut born = HashMap::with_capacity(created.len());
    for row in created {
        creation::insert_row(c, row, &mut positions)?;
        born.insert(row.id(), row.at());
    }
    positions.learn(c, steps, fenced, owner, now)?;
    let mut committed = Vec::with_capacity(steps.len());
    for (task, step) in steps {
        let at = born.get(task).copied().unwrap_or(now);
        committed.push(write_step(c, task, step, at, &mut positions, None)?);
    }
    positions.finish(c)?;
    if let Some(t) = tails {
        positions.keep(steps, t);
    }
    Ok(committed)
}

/// Write `step` of `task` in a transaction of its own (`c`'s): learnt
/// ahead (one round trip on PostgreSQL, the claim checked in it when
/// `fence` is given), written, announced.
fn write_alone(
    c: &Conn<'_>,
    task: &str,
    step: &PreparedStep,
    now: i64,
    fence: Option<&str>,
) -> Result<Committed, StoreError> {
    let mut positions = Positions::default();
    let fenced: &[&str] = if fence.is_some() { &[task] } else { &[] };
    positions.learn(c, &[(task, step)], fenced, fence, now)?;
    let committed = write_step(c, task, step, now, &mut positions, fence)?;
    positions.finish(c)?;
    Ok(committed)
}

/// What runs the moment a step is durable, on the committing thread,
/// before the step's task hears of it: the event bus publishes the step's
/// events from here, so a front-end learns of a commit without waiting
/// for the task to be scheduled again.
pub type OnCommit = Box<dyn FnOnce(&Committed) + Send>;

/// The lead of the shared commits, held by a step's task while it lets
/// others queue theirs: a task cancelled meanwhile hands the lead to a
/// committer of its own ([`Store::hand_over`]), so the steps queued behind
/// it are still committed.
struct Lead<'s> {
    store: &'s Store,
    held: bool,
}

impl Lead<'_> {
    /// Commit what is queued, then let go of the lead (or hand it over when
    /// more was queued meanwhile).
    fn commit(mut self) {
        self.held = false;
        self.store.commit_queued();
        if !self.store.group.release() {
            self.store.hand_over();
        }
    }
}

impl Drop for Lead<'_> {
    fn drop(&mut self) {
        if self.held {
            self.store.hand_over();
        }
    }
}

/// A queued step and where its outcome goes.
struct Job {
    task: String,
    step: PreparedStep,
    /// The task's row, when the step is the first of a task this commit
    /// creates ([`Store::create_claimed_task_shared`]).
    creation: Option<Box<NewRow>>,
    on_commit: Option<OnCommit>,
    done: oneshot::Sender<Result<Committed, StoreError>>,
}

/// Steps that must be waiting before a second shared commit goes to a
/// shared database while one is in flight: the database then works on one
/// batch while Roost builds the next, where one committer left both idle
/// in turn (P8 on PostgreSQL 9.7 → 8.2–8.3 s). A smaller queue waits for
/// the committer, whose larger batches cost fewer round trips (a lower
/// backlog split P6's batches and slowed it; a higher one gave P8
/// nothing; BENCHMARKS.md, nineteenth sitting).
const BACKLOG_FOR_A_SECOND_COMMITTER: usize = 128;

/// The queue of steps waiting for a shared commit, and how many are
/// committing (they take what is queued meanwhile).
#[derive(Default)]
pub(super) struct GroupCommit {
    queue: Mutex<Vec<Job>>,
    /// Shared commits in flight.
    committing: AtomicUsize,
    /// How many may be in flight at once: one on SQLite (one writer at a
    /// time), two on a shared database (see
    /// [`BACKLOG_FOR_A_SECOND_COMMITTER`]); zero reads as one.
    most: usize,
    /// Steps committed, and the transactions they took ([`Store::stats`]).
    steps: AtomicU64,
    transactions: AtomicU64,
    /// Tasks being created ([`Store::commit_creation`]).
    creating: AtomicUsize,
    /// What the shared commits learnt of their tasks, on SQLite.
    tails: Mutex<Kept<Tails>>,
}

/// A task's creation in flight, counted in [`GroupCommit::creating`]
/// while it lives.
struct Creating<'g>(&'g GroupCommit);

impl<'g> Creating<'g> {
    /// Count a creation in `group`; whether no other was in flight.
    fn enter(group: &'g GroupCommit) -> (Self, bool) {
        let before = group.creating.fetch_add(1, Ordering::SeqCst);
        (Self(group), before == 0)
    }
}

impl Drop for Creating<'_> {
    fn drop(&mut self) {
        self.0.creating.fetch_sub(1, Ordering::SeqCst);
    }
}

impl GroupCommit {
    fn queue(&self) -> std::sync::MutexGuard<'_, Vec<Job>> {
        // A queue of owned jobs stays consistent whatever panicked.
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A queue whose shared commits may go `most` at a time.
    pub(super) fn new(most: usize) -> Self {
        Self {
            most,
            ..Self::default()
        }
    }

    /// Become a committer: when nobody is committing, or when a backlog
    /// of [`BACKLOG_FOR_A_SECOND_COMMITTER`] steps waits and fewer than
    /// `most` are.
    fn try_lead(&self) -> bool {
        let most = self.most.max(1);
        self.committing
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                let lead =
                    n == 0 || (n < most && self.queue().len() >= BACKLOG_FOR_A_SECOND_COMMITTER);
                lead.then_some(n + 1)
            })
            .is_ok()
    }

    /// Up to [`MAX_BATCH`] queued jobs, oldest first.
    fn take(&self) -> Vec<Job> {
        let mut q = self.queue();
        if q.len() <= MAX_BATCH {
            std::mem::take(&mut *q)
        } else {
            q.drain(..MAX_BATCH).collect()
        }
    }

    fn is_empty(&self) -> bool {
        self.queue().is_empty()
    }

    /// Count `steps` committed in `transactions`.
    fn counted(&self, steps: usize, transactions: u64) {
        self.steps
            .fetch_add(u64::try_from(steps).unwrap_or(u64::MAX), Ordering::Relaxed);
        self.transactions.fetch_add(transactions, Ordering::Relaxed);
    }

    /// Stop committing. False when a job arrived meanwhile and this caller
    /// is a committer again (a job pushed after the last `take` saw a
    /// committer and queued itself, trusting it to be taken).
    fn release(&self) -> bool {
        self.committing.fetch_sub(1, Ordering::SeqCst);
        self.is_empty() || !self.try_lead()
    }
}

impl Store {
    /// Commit `step` for `task` in one transaction of its own, now. A task
    /// that does not exist gets nothing written. An empty step commits
    /// nothing.
    pub fn commit_step(&self, task: &str, step: Step<'_>) -> Result<Committed, StoreError> {
        let prepared = step.prepare(task)?;
        if prepared.empty {
            return Ok(Committed::nothing());
        }
        let fence = self.fence_for(task);
        let committed = self
            .db
            .write(|c| write_alone(c, task, &prepared, now_ms(), fence.as_deref()))?;
        self.group.counted(1, 1);
        durable(task, &committed);
        Ok(committed)
    }

    /// What this store (and its clones) has written and what it cost: steps
    /// committed, the transactions they took, and the round trips made to a
    /// shared database.
    pub fn stats(&self) -> StoreStats {
        StoreStats {
            steps: self.group.steps.load(Ordering::Relaxed),
            transactions: self.group.transactions.load(Ordering::Relaxed),
            round_trips: self.db.round_trips(),
            prepared: self.db.prepared(),
        }
    }

    /// Commit a prepared step of `task`, sharing the transaction with the
    /// steps other tasks queued meanwhile; returns once it is durable. A
    /// step that fails (its task does not exist, say) fails alone.
    pub async fn commit(&self, task: &str, step: PreparedStep) -> Result<Committed, StoreError> {
        self.commit_then(task, step, None).await
    }

    /// [`Store::commit`], running `on_commit` the moment the step is
    /// durable (not when it fails).
    pub async fn commit_then(
        &self,
        task: &str,
        step: PreparedStep,
        on_commit: Option<OnCommit>,
    ) -> Result<Committed, StoreError> {
        if step.empty {
            let nothing = Committed::nothing();
            if let Some(f) = on_commit {
                f(&nothing);
            }
            return Ok(nothing);
        }
        self.share(task.to_owned(), step, None, on_commit).await
    }

    /// Create the task `row` with its `first` step: in a transaction of
    /// its own when no other creation is in flight (one round trip on
    /// PostgreSQL, where a shared commit would make it wait for the
    /// running tasks' batch: 10,000 tasks created one after another took
    /// 41 s that way instead of 7 s), else in a shared commit with the
    /// creations made meanwhile and the steps queued with them.
    pub(super) async fn commit_creation(
        &self,
        row: NewRow,
        first: PreparedStep,
    ) -> Result<Committed, StoreError> {
        let (_creating, alone) = Creating::enter(&self.group);
        if !alone {
            return self
                .share(row.id().to_owned(), first, Some(Box::new(row)), None)
                .await;
        }
        // Let the creations made at the same moment see this one in
        // flight, and queue theirs together.
        tokio::task::yield_now().await;
        let committed = self.insert_alone(&row, &first)?;
        self.group.counted(1, 1);
        durable(row.id(), &committed);
        Ok(committed)
    }

    /// A task created for a caller that is gone (its request was
    /// cancelled while the creation waited for the shared commit): its
    /// claim, taken in the creating transaction, is let go, so the task
    /// stays on record and resumable, as after a crash, rather than held
    /// by a process that never runs it.
    fn orphaned(&self, row: &NewRow) {
        let Some(owner) = row.claimed_by() else {
            return;
        };
        tracing::info!(task = %row.id(), "created for a caller that is gone: left resumable");
        if let Err(e) = self
            .db
            .run(|c| c.exec(super::claims::RELEASE, params![row.id(), owner]))
        {
            tracing::warn!(task = %row.id(), "releasing the claim: {e}");
        }
    }

    /// Queue `step` of `task` (created by it when `creation` is given) for
    /// a shared commit and wait for its outcome, leading the commit when no
    /// one else is.
    async fn share(
        &self,
        task: String,
        step: PreparedStep,
        creation: Option<Box<NewRow>>,
        on_commit: Option<OnCommit>,
    ) -> Result<Committed, StoreError> {
        let (done, outcome) = oneshot::channel();
        self.group.queue().push(Job {
            task,
            step,
            creation,
            on_commit,
            done,
        });
        if self.group.try_lead() {
            // Let the tasks ready to run on this worker queue their steps
            // first, into the same transaction: a commit is written on the
            // worker it starts on, so with one runtime worker (a one-CPU
            // machine) nothing else ran while it was written and every
            // step took a transaction of its own (19,000 for P6's 19,000
            // steps; about 1,600 with the yield).
            let lead = Lead {
                store: self,
                held: true,
            };
            tokio::task::yield_now().await;
            // Commit what is queued (this step first of all); hand what
            // others queue meanwhile to a committer of its own, so this
            // task is not held up committing everyone's steps.
            lead.commit();
        }
        outcome.await.unwrap_or_else(|_| {
            Err(StoreError::Commit(
                "the shared commit ended without an outcome".into(),
            ))
        })
    }

    /// Hand the lead held to a committer of its own: on the runtime when
    /// there is one, else committing here until the queue is empty.
    fn hand_over(&self) {
        let store = self.clone();
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move { store.keep_committing().await });
            }
            Err(_) => loop {
                store.commit_queued();
                if store.group.is_empty() && store.group.release() {
                    return;
                }
            },
        }
    }

    /// The committer that took over: commit batches while steps keep
    /// coming, letting other tasks run between them (they queue more).
    async fn keep_committing(self) {
        loop {
            self.commit_queued();
            tokio::task::yield_now().await;
            if self.group.is_empty() && self.group.release() {
                return;
            }
        }
    }

    /// Commit one batch of queued steps and tell each its outcome.
    ///
    /// The batch is written in one transaction without savepoints (a
    /// savepoint copies every page a step touches into a sub-journal, which
    /// cost as much as the writes). Steps almost never fail; when one does,
    /// the whole transaction is rolled back and each step is committed in a
    /// transaction of its own, so the failing one fails alone.
    fn commit_queued(&self) {
        let jobs = self.group.take();
        if jobs.is_empty() {
            return;
        }
        let now = now_ms();
        // A task this commit creates has a claim no one else can hold yet.
        let fences: Vec<Option<String>> = jobs
            .iter()
            .map(|j| match j.creation {
                Some(_) => None,
                None => self.fence_for(&j.task),
            })
            .collect();
        // The batch checks its tasks' claims once, after every task's row is
        // locked; a step that fails it fails alone below, checked by itself.
        let mut fenced: Vec<&str> = jobs
            .iter()
            .zip(&fences)
            .filter(|(_, f)| f.is_some())
            .map(|(j, _)| j.task.as_str())
            .collect();
        fenced.sort_unstable();
        fenced.dedup();
        let owner = fences.iter().flatten().next();
        let steps: Vec<(&str, &PreparedStep)> =
            jobs.iter().map(|j| (j.task.as_str(), &j.step)).collect();
        let created: Vec<&NewRow> = jobs.iter().filter_map(|j| j.creation.as_deref()).collect();
        let together = self.db.write_kept(&self.group.tails, |c, tails| {
            write_batch(
                c,
                &created,
                &steps,
                &fenced,
                owner.map(String::as_str),
                now,
                tails,
            )
        });
        let outcomes: Vec<Result<Committed, StoreError>> = match together {
            Ok(committed) => {
                self.group.counted(committed.len(), 1);
                committed.into_iter().map(Ok).collect()
            }
            // One at a time: the failing step gets its own error, the others
            // commit.
            Err(_) => jobs
                .iter()
                .zip(&fences)
                .map(|(job, fence)| {
                    let alone = match &job.creation {
                        Some(row) => self.insert_alone(row, &job.step),
                        None => self
                            .db
                            .write(|c| write_alone(c, &job.task, &job.step, now, fence.as_deref())),
                    };
                    if alone.is_ok() {
                        self.group.counted(1, 1);
                    }
                    alone
                })
                .collect(),
        };
        for (job, outcome) in jobs.into_iter().zip(outcomes) {
            if let Ok(c) = &outcome {
                durable(&job.task, c);
            }
            if let (Ok(c), Some(f)) = (&outcome, job.on_commit) {
                f(c);
            }
            if let (Err(Ok(_)), Some(row)) = (job.done.send(outcome), &job.creation) {
                self.orphaned(row);
            }
        }
    }
}

/// Trace the moment `task`'s events in `committed` became durable, however
/// they were committed (the server benchmark times delivery from here).
pub(super) fn durable(task: &str, committed: &Committed) {
    if let (Some(first), Some(last)) = (committed.events.first(), committed.events.last()) {
        tracing::trace!(target: "roost::store::commit", task, first, last, "events committed");
    }
}

#[cfg(test)]
mod committers {
    use super::*;

    /// `n` empty jobs, queued on `group`.
    fn queue_jobs(group: &GroupCommit, n: usize) {
        let mut q = group.queue();
        for i in 0..n {
            let (done, _) = oneshot::channel();
            q.push(Job {
                task: format!("t{i}"),
                step: Step::new().prepare("t").expect("prepared"),
                creation: None,
                on_commit: None,
                done,
            });
        }
    }

    /// One committer at a time on SQLite; on a shared database a second
    /// joins only for a backlog that fills a transaction of its own, and
    /// never a third.
    #[test]
    fn a_second_committer_joins_only_a_backlog_on_a_shared_database() {
        let shared = GroupCommit::new(2);
        assert!(shared.try_lead(), "the first committer");
        queue_jobs(&shared, BACKLOG_FOR_A_SECOND_COMMITTER - 1);
        assert!(!shared.try_lead(), "a small queue waits for the committer");
        queue_jobs(&shared, 1);
        assert!(shared.try_lead(), "a backlog gets a second committer");
        queue_jobs(&shared, BACKLOG_FOR_A_SECOND_COMMITTER);
        assert!(!shared.try_lead(), "never a third");
        // The first finishes with steps still queued: it commits again.
        assert!(!shared.release());
        drop(shared.take());
        // Both finish with nothing queued; then one may lead again.
        assert!(shared.release());
        assert!(shared.release());
        assert!(shared.try_lead());

        let lite = GroupCommit::new(1);
        assert!(lite.try_lead());
        queue_jobs(&lite, 2 * BACKLOG_FOR_A_SECOND_COMMITTER);
        assert!(!lite.try_lead(), "SQLite has one writer");
    }
}

#[cfg(test)]
mod tails {
    use super::*;

    /// Positions of `tasks` (keyed 1, 2, …) in every log, as a
    /// transaction learns them.
    fn learnt(tasks: &[&str]) -> Positions<'static> {
        let mut p = Positions::default();
        for (key, task) in (1..).zip(tasks) {
            p.keys.insert((*task).to_owned(), key);
            for log in Log::ALL {
                p.next.insert((log, key), 10);
            }
        }
        p
    }

    /// What a commit keeps for the next: every task it wrote but those
    /// whose run its steps end, and nothing once it knows of more than
    /// [`MAX_TAILS`] tasks (the next commits look them up again).
    #[test]
    fn a_commit_keeps_its_tasks_but_those_whose_run_ends_and_not_too_many() {
        let going = Step::new().prepare("a").expect("prepared");
        let ending = Step::new()
            .prepare("b")
            .expect("prepared")
            .releasing("owner");
        let mut tails = Tails::default();
        learnt(&["a", "b"]).keep(&[("a", &going), ("b", &ending)], &mut tails);
        assert_eq!(tails.keys.keys().collect::<Vec<_>>(), vec!["a"]);
        assert_eq!(tails.next.len(), 3, "a's three logs");
        assert!(tails.next.keys().all(|(_, key)| *key == 1));

        let many: Vec<String> = (0..=MAX_TAILS).map(|n| format!("t{n}")).collect();
        let names: Vec<&str> = many.iter().map(String::as_str).collect();
        let mut tails = Tails::default();
        learnt(&names).keep(&[("a", &going)], &mut tails);
        assert!(tails.keys.is_empty() && tails.next.is_empty());
    }
}
