//! Creating a task: its row, its first step, and its claim when this
//! process runs it, in one transaction — its own ([`Store::create_task_with`],
//! [`Store::create_claimed_task`]) or a shared commit's with other tasks'
//! steps ([`Store::create_claimed_task_shared`]).

use super::db::{self, Conn, params};
use super::step::{self, Committed, Positions, PreparedStep, Step};
use super::{
    ClaimedTask, NewTask, Store, StoreError, TaskRecord, TaskStatus, now_ms, settings_json,
};
use roost_protocol::conversation::Usage;

/// A task's row as it is to be inserted: owned, so a creation can wait in
/// the shared-commit queue with the steps of other tasks.
#[derive(Debug)]
pub(super) struct NewRow {
    id: String,
    new: NewTask,
    root: String,
    /// Its settings, encoded.
    settings: Option<String>,
    /// The owner whose claim is taken in the creating transaction.
    claimed_by: Option<String>,
    /// Its creation time (ms since the epoch).
    at: i64,
}

impl NewRow {
    /// The row of task `id` that `new` describes, claimed by `claimed_by`.
    fn new(id: &str, new: &NewTask, claimed_by: Option<&str>) -> Result<Self, StoreError> {
        Ok(Self {
            id: id.to_owned(),
            root: new.root_id.clone().unwrap_or_else(|| id.to_owned()),
            settings: new.settings.as_ref().map(settings_json).transpose()?,
            new: new.clone(),
            claimed_by: claimed_by.map(str::to_owned),
            at: now_ms(),
        })
    }

    /// The task's id.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// The owner whose claim is taken in the creating transaction.
    pub(super) fn claimed_by(&self) -> Option<&str> {
        self.claimed_by.as_deref()
    }

    /// When it was created (ms since the epoch): its first step's time too.
    pub(super) fn at(&self) -> i64 {
        self.at
    }

    /// The task's record as inserted.
    fn record(&self) -> TaskRecord {
        let new = &self.new;
        TaskRecord {
            id: self.id.clone(),
            parent_id: new.parent_id.clone(),
            root_id: self.root.clone(),
            mode: new.mode.clone(),
            workspace: new.workspace.clone(),
            status: TaskStatus::Running,
            prompt: new.prompt.clone(),
            provider: new.provider.clone(),
            model: new.model.clone(),
            base_url: new.base_url.clone(),
            profile: new.profile.clone(),
            created_at: self.at,
            updated_at: self.at,
            usage: Usage::default(),
            cost: 0.0,
            active_intent: new.active_intent.clone(),
            settings: new.settings.clone(),
            owner: new.owner.clone(),
        }
    }
}

/// Insert `row` in the caller's write transaction, with its claim, and
/// give `positions` its key: its logs are empty, so nothing of them is
/// looked up. On PostgreSQL nothing is asked of the database: its key was
/// taken ahead, and its statements go with the transaction's next round
/// trip.
pub(super) fn insert_row<'c>(
    c: &Conn<'c>,
    row: &NewRow,
    positions: &mut Positions<'c>,
) -> Result<(), StoreError> {
    let new = &row.new;
    /// The new task's row; `?15` its key (on SQLite, `NULL` for the next).
    macro_rules! insert_task {
        ($tail:literal) => {
            concat!(
                "INSERT INTO tasks (k, id, parent_id, root_id, mode, workspace, status, prompt, provider, model, base_url, profile, created_at, updated_at, settings, owner, active_intent) \
                 VALUES (?15, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12, ?13, ?14, ?16)",
                $tail
            )
        };
    }
    let key = c.task_key()?;
    let values = params![
        &row.id,
        &new.parent_id,
        &row.root,
        &new.mode,
        &new.workspace,
        TaskStatus::Running.as_str(),
        &new.prompt,
        &new.provider,
        &new.model,
        &new.base_url,
        &new.profile,
        row.at,
        &row.settings,
        &new.owner,
        key,
        &new.active_intent
    ];
    let key: i64 = match key {
        Some(k) => {
            c.later(insert_task!(""), values)?;
            k
        }
        None => c.one(insert_task!(" RETURNING k"), values)?.get(0)?,
    };
    positions.created(&row.id, key);
    if let Some(owner) = &row.claimed_by {
        c.later(
            "INSERT INTO claims (task_id, owner) VALUES (?1, ?2)",
            params![&row.id, owner],
        )?;
    }
    // A top-level task no host holds wakes the hosts' work queues (a
    // shared store); one this host claimed as it created it is for no
    // queue.
    if c.dialect() == db::Dialect::Postgres && new.parent_id.is_none() && row.claimed_by.is_none() {
        c.later("SELECT pg_notify('roost_queue', '')", params![])?;
    }
    Ok(())
}

/// Insert `row` and write its first step in a transaction of its own
/// (`c`'s).
pub(super) fn write_alone(
    c: &Conn<'_>,
    row: &NewRow,
    first: &PreparedStep,
) -> Result<Committed, StoreError> {
    let mut positions = Positions::default();
    insert_row(c, row, &mut positions)?;
    step::write_opening(c, row.id(), first, row.at, &mut positions)
}

/// Whether the task `id`, whose creating transaction was cut off before
/// its id came back, was created: an insert of the same id waits for a
/// transaction still inserting it, then finds it there or not (and is
/// rolled back either way).
fn task_landed(c: &Conn<'_>, id: &str) -> Result<bool, StoreError> {
    let probe = c.query_rolled_back(
        "INSERT INTO tasks (id, root_id, mode, workspace, status, prompt, created_at, updated_at) \
         VALUES (?1, ?1, '', '', 'failed', '', 0, 0) ON CONFLICT (id) DO NOTHING RETURNING id",
        params![id],
    )?;
    Ok(probe.is_empty())
}

impl Store {
    /// Create a task (status running) and return it.
    pub fn create_task(&self, new: &NewTask) -> Result<TaskRecord, StoreError> {
        self.create_task_with(new, Step::new())
    }

    /// Create a task (status running) with `first` (its opening messages)
    /// written in the same transaction, and return it: a task is never on
    /// record without them, and creating one costs a single commit.
    pub fn create_task_with(
        &self,
        new: &NewTask,
        first: Step<'_>,
    ) -> Result<TaskRecord, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        self.insert_task(&id, new, first, None)
            .map(|(task, _)| task)
    }

    /// [`Store::create_task_with`] in a shared commit with the steps of the
    /// tasks running meanwhile ([`Store::commit`]), for a task no one
    /// holds yet: a shared store's work queue is woken in the same
    /// transaction. Many front-ends queueing tasks at once cost the
    /// database a commit between them, and none parks a runtime worker.
    pub async fn create_task_shared(
        &self,
        new: &NewTask,
        first: Step<'_>,
    ) -> Result<TaskRecord, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        let first = first.prepare(&id)?;
        let row = NewRow::new(&id, new, None)?;
        let task = row.record();
        self.commit_creation(row, first).await?;
        Ok(task)
    }

    /// [`Store::create_task_with`] for a task this process runs: its claim
    /// is taken in the creating transaction, not in one of its own when
    /// the task starts (a task's claim is new, so no one else can hold
    /// it). Dropping the claim releases it, as [`Store::claim`]'s does.
    pub fn create_claimed_task(
        &self,
        new: &NewTask,
        first: Step<'_>,
    ) -> Result<ClaimedTask, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        let (claim, mine) = self.claim_new(&id)?;
        let (task, first) = self.insert_task(&id, new, first, Some(&mine))?;
        Ok(ClaimedTask { task, claim, first })
    }

    /// [`Store::create_claimed_task`] in a shared commit: the task's
    /// creation waits for the steps other tasks queue, and commits with
    /// them ([`Store::commit`]). Many front-ends creating tasks at once
    /// then cost the database a commit between them, not one each.
    pub async fn create_claimed_task_shared(
        &self,
        new: &NewTask,
        first: Step<'_>,
    ) -> Result<ClaimedTask, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        let first = first.prepare(&id)?;
        let (claim, mine) = self.claim_new(&id)?;
        let row = NewRow::new(&id, new, Some(&mine))?;
        let task = row.record();
        let first = self.commit_creation(row, first).await?;
        Ok(ClaimedTask { task, claim, first })
    }

    /// Insert task `id` with its first step, claimed by `claimed_by` when
    /// given, in one transaction; its record as inserted and what the
    /// step took.
    fn insert_task(
        &self,
        id: &str,
        new: &NewTask,
        first: Step<'_>,
        claimed_by: Option<&str>,
    ) -> Result<(TaskRecord, Committed), StoreError> {
        let first = first.prepare(id)?;
        let row = NewRow::new(id, new, claimed_by)?;
        let committed = self.insert_alone(&row, &first)?;
        step::durable(id, &committed);
        Ok((row.record(), committed))
    }

    /// Create `row` with its first step in a transaction of its own. On
    /// PostgreSQL one round trip: its key is taken ahead, so its row, its
    /// first step's rows, its claim or the work queue's wake-up all go
    /// with the `BEGIN` and the `COMMIT`.
    pub(super) fn insert_alone(
        &self,
        row: &NewRow,
        first: &PreparedStep,
    ) -> Result<Committed, StoreError> {
        self.db
            .write_once(|c| write_alone(c, row, first), |c| task_landed(c, row.id()))
    }
}
