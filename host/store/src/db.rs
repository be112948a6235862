//! The backend seam: the SQL the store speaks, on SQLite (one machine) or
//! PostgreSQL (many hosts on one database).
//!
//! The store's modules write their statements once, in the dialect both
//! databases share (`?N` placeholders, `ON CONFLICT … DO UPDATE`,
//! `RETURNING`, `COALESCE`, `CAST`), and run them through a [`Conn`]; the
//! few places where the two differ ask [`Conn::dialect`]. Values cross the
//! seam as [`Param`]s and come back as [`Row`]s of [`Value`]s, so no
//! module names a driver's types.

use std::sync::{Mutex, MutexGuard};

use super::StoreError;
use super::pg::{Answer, Ask, CommitError, PgConn};
pub(crate) use super::sql::{Column, DB_NOW, Dialect, Health, Param, Row, Value, blocking, params};

/// A connection (or an open transaction on one) statements run on.
pub(crate) enum Conn<'c> {
    /// SQLite.
    Lite(&'c rusqlite::Connection),
    /// PostgreSQL.
    Pg(&'c PgConn),
}

impl Conn<'_> {
    /// Which database this is.
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Conn::Lite(_) => Dialect::Sqlite,
            Conn::Pg(_) => Dialect::Postgres,
        }
    }

    /// Run one statement; how many rows it changed.
    pub(crate) fn exec(&self, sql: &str, params: &[Param<'_>]) -> Result<usize, StoreError> {
        match self {
            Conn::Lite(c) => Ok(c
                .prepare_cached(sql)?
                .execute(rusqlite::params_from_iter(params.iter()))?),
            Conn::Pg(c) => c.exec(sql, params),
        }
    }

    /// Run one statement whose outcome the caller does not wait for: on
    /// PostgreSQL it goes with the next statement that is waited for (or
    /// the transaction's `COMMIT`), and its failure fails that one; on
    /// SQLite, which answers in microseconds, it runs now.
    pub(crate) fn later(&self, sql: &str, params: &[Param<'_>]) -> Result<(), StoreError> {
        match self {
            Conn::Lite(_) => self.exec(sql, params).map(drop),
            Conn::Pg(c) => c.later(sql, params),
        }
    }

    /// Queue one statement whose parameters are whole columns, each bound
    /// as an array, on PostgreSQL; SQLite appends row by row as it goes
    /// (each row costs it microseconds, not a statement on a server).
    pub(crate) fn later_columns(&self, sql: &str, columns: Vec<Column>) -> Result<(), StoreError> {
        match self {
            Conn::Lite(_) => Err(StoreError::Commit(
                "statements of whole columns are PostgreSQL's".into(),
            )),
            Conn::Pg(c) => c.later_columns(sql, columns),
        }
    }

    /// Every row of each query, in order; on PostgreSQL all of them (and
    /// whatever is pending) in one round trip.
    pub(crate) fn query_all(
        &self,
        queries: &[(&str, &[Param<'_>])],
    ) -> Result<Vec<Vec<Row>>, StoreError> {
        match self {
            Conn::Lite(_) => queries
                .iter()
                .map(|(sql, ps)| self.query(sql, ps))
                .collect(),
            Conn::Pg(c) => c.query_all(queries),
        }
    }

    /// Every row of a query.
    pub(crate) fn query(&self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StoreError> {
        match self {
            Conn::Lite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let n = stmt.column_count();
                let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(lite_row(r, n)?);
                }
                Ok(out)
            }
            Conn::Pg(c) => c.query(sql, params),
        }
    }

    /// The first row of a query, if any.
    pub(crate) fn opt(&self, sql: &str, params: &[Param<'_>]) -> Result<Option<Row>, StoreError> {
        match self {
            Conn::Lite(c) => {
                let mut stmt = c.prepare_cached(sql)?;
                let n = stmt.column_count();
                let mut rows = stmt.query(rusqlite::params_from_iter(params.iter()))?;
                match rows.next()? {
                    Some(r) => Ok(Some(lite_row(r, n)?)),
                    None => Ok(None),
                }
            }
            Conn::Pg(c) => Ok(c.query(sql, params)?.into_iter().next()),
        }
    }

    /// The first row of a query that always returns one (an aggregate).
    pub(crate) fn one(&self, sql: &str, params: &[Param<'_>]) -> Result<Row, StoreError> {
        self.opt(sql, params)?.ok_or_else(|| StoreError::Decode {
            detail: format!("no row from {sql}"),
        })
    }

    /// The rows of `sql` run in a transaction of its own that is rolled
    /// back (a probe that writes to find something out, and keeps
    /// nothing): one round trip on PostgreSQL.
    pub(crate) fn query_rolled_back(
        &self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<Row>, StoreError> {
        match self {
            Conn::Lite(c) => {
                c.execute_batch("SAVEPOINT probe")?;
                let rows = self.query(sql, params);
                c.execute_batch("ROLLBACK TO probe; RELEASE probe")?;
                rows
            }
            Conn::Pg(c) => {
                let mut answers = c
                    .trip(&[
                        Ask::Batch("BEGIN"),
                        Ask::Query(sql, params),
                        Ask::Batch("ROLLBACK"),
                    ])?
                    .into_iter()
                    .skip(1);
                match answers.next() {
                    Some(Answer::Rows(rows)) => Ok(rows),
                    _ => Err(StoreError::Decode {
                        detail: format!("no rows from {sql}"),
                    }),
                }
            }
        }
    }

    /// On PostgreSQL, a key for a new task's row, given without asking the
    /// database (most of the time: [`PgConn::task_key`]); on SQLite none:
    /// the row's insert gives its key back at once.
    pub(crate) fn task_key(&self) -> Result<Option<i64>, StoreError> {
        match self {
            Conn::Lite(_) => Ok(None),
            Conn::Pg(c) => c.task_key().map(Some),
        }
    }
}

impl rusqlite::ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, ValueRef};
        Ok(ToSqlOutput::Borrowed(match self {
            Param::Null => ValueRef::Null,
            Param::Int(i) => ValueRef::Integer(*i),
            Param::Real(f) => ValueRef::Real(*f),
            Param::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

/// A SQLite row as a [`Row`].
fn lite_row(r: &rusqlite::Row<'_>, n: usize) -> Result<Row, StoreError> {
    use rusqlite::types::ValueRef;
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(match r.get_ref(i)? {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(v) => Value::Int(v),
            ValueRef::Real(v) => Value::Real(v),
            ValueRef::Text(t) => Value::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Value::Text(String::from_utf8_lossy(b).into_owned()),
        });
    }
    Ok(Row(out))
}

/// The SQLite connections of a store: `conn` writes (and does a task's
/// short reads); the readers do a front-end's reads, each on a WAL
/// snapshot, so a front-end catching up on a long log never holds up a
/// task's steps. There are several: requests on different runtime workers
/// read at once (WAL lets readers run together), as they did when a
/// request's two reads were on the two connections.
pub(crate) struct Lite {
    pub(crate) conn: Mutex<rusqlite::Connection>,
    pub(crate) readers: [Mutex<rusqlite::Connection>; READERS],
}

/// How many reading connections a SQLite store keeps.
pub(crate) const READERS: usize = 4;

impl Lite {
    pub(crate) fn conn(&self) -> MutexGuard<'_, rusqlite::Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent
        // (transactions roll back), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A reading connection: the first free one, else the first.
    fn reader(&self) -> MutexGuard<'_, rusqlite::Connection> {
        for r in &self.readers {
            match r.try_lock() {
                Ok(g) => return g,
                Err(std::sync::TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
        let [first, ..] = &self.readers;
        first.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `$trip` on a connection of the pool `$pool`, awaited; an outage waited
/// out as [`Db::run`] waits it out, asleep on the runtime's timer. (A
/// macro: a helper taking the trip as a closure over a borrowed connection
/// cannot promise its future is `Send` for every borrow.)
macro_rules! awaited_through_outages {
    ($pool:expr, |$c:ident| $trip:expr) => {{
        let pool = $pool;
        let mut outage = Outage::new();
        loop {
            let attempt = match pool.get_async().await {
                Ok($c) => $trip.await,
                Err(e) => Err(e),
            };
            match outage.after(&pool.health, attempt) {
                Next::Done(outcome) => break outcome,
                Next::Pause(d) => tokio::time::sleep(d).await,
            }
        }
    }};
}

/// What SQLite write transactions learn and keep for the next
/// ([`Db::write_kept`]), with the state of the file it is true of.
#[derive(Default)]
pub(crate) struct Kept<K> {
    /// `PRAGMA data_version` and the writing connection's count of changed
    /// rows as the last transaction that kept `value` committed; `None`
    /// while one is under way, and after one failed.
    at: Option<(i64, u64)>,
    value: K,
}

/// A store's database.
#[cfg_attr(
    not(feature = "postgres"),
    expect(
        clippy::large_enum_variant,
        reason = "the PostgreSQL variant cannot be built without the feature"
    )
)]
pub(crate) enum Db {
    /// An embedded SQLite file.
    Lite(Lite),
    /// A PostgreSQL database shared by hosts.
    Pg(super::pg::Pool),
}

impl Db {
    /// Every row of each query, for a caller on a Tokio runtime (a
    /// front-end's request): on PostgreSQL in one round trip that is
    /// awaited, parking no runtime worker, and an outage waited out as
    /// [`Db::run`] waits it out, asleep on the runtime's timer. SQLite
    /// answers at once, on the connection that never holds up a write
    /// ([`Db::read_long`]'s).
    pub(crate) async fn read(
        &self,
        queries: &[(&str, &[Param<'_>])],
    ) -> Result<Vec<Vec<Row>>, StoreError> {
        match self {
            Db::Lite(l) => Conn::Lite(&l.reader()).query_all(queries),
            Db::Pg(p) => awaited_through_outages!(p, |c| c.query_all_async(queries)),
        }
    }

    /// The rows of one query, as [`Db::read`] reads them.
    pub(crate) async fn read_one(
        &self,
        sql: &str,
        params: &[Param<'_>],
    ) -> Result<Vec<Row>, StoreError> {
        Ok(self
            .read(&[(sql, params)])
            .await?
            .into_iter()
            .next()
            .unwrap_or_default())
    }

    /// Run each statement for a caller on a Tokio runtime, as [`Db::read`]
    /// reads: on PostgreSQL in one round trip that is awaited (parking no
    /// runtime worker), an outage waited out asleep; on SQLite at once, on
    /// the writing connection. How many rows each changed.
    pub(crate) async fn exec_each(
        &self,
        statements: &[(&str, &[Param<'_>])],
    ) -> Result<Vec<u64>, StoreError> {
        match self {
            Db::Lite(l) => {
                let c = l.conn();
                let conn = Conn::Lite(&c);
                statements
                    .iter()
                    .map(|(sql, ps)| {
                        conn.exec(sql, ps)
                            .map(|n| u64::try_from(n).unwrap_or(u64::MAX))
                    })
                    .collect()
            }
            Db::Pg(p) => awaited_through_outages!(p, |c| c.exec_all_async(statements)),
        }
    }

    /// The rows of one query, waited for on this thread ([`Db::run`]).
    pub(crate) fn rows(&self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>, StoreError> {
        self.run(|c| c.query(sql, params))
    }

    /// Run `f` on a connection, each statement committing on its own. On
    /// PostgreSQL an outage is waited out ([`outage`]): `f` runs again once
    /// the database answers.
    pub(crate) fn run<T>(
        &self,
        f: impl Fn(&Conn<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self {
            Db::Lite(l) => f(&Conn::Lite(&l.conn())),
            Db::Pg(p) => outage(&p.health, || {
                let c = p.get()?;
                let out = f(&Conn::Pg(&c))?;
                c.flush()?;
                Ok(out)
            }),
        }
    }

    /// Round trips made to a shared database (none to SQLite).
    pub(crate) fn round_trips(&self) -> u64 {
        match self {
            Db::Lite(_) => 0,
            Db::Pg(p) => p.round_trips(),
        }
    }

    /// Statements prepared on a shared database's connections (of the
    /// round trips, those each connection makes once a statement).
    pub(crate) fn prepared(&self) -> u64 {
        match self {
            Db::Lite(_) => 0,
            Db::Pg(p) => p.prepared(),
        }
    }

    /// Whether the database answers now (no waiting).
    pub(crate) fn ping(&self) -> Result<(), StoreError> {
        match self {
            Db::Lite(l) => Ok(l.conn().execute_batch("SELECT 1")?),
            Db::Pg(p) => {
                let answered = p.get().and_then(|c| c.batch("SELECT 1"));
                p.health.observe(answered.is_ok());
                answered
            }
        }
    }

    /// Whether the database is thought to answer, without waiting for it:
    /// false while an outage is being waited out, re-checked with a ping at
    /// most once a [`Health::PROBE_EVERY`]. A front-end answers requests at
    /// once meanwhile instead of holding them for the outage.
    pub(crate) fn reachable(&self) -> bool {
        match self {
            Db::Lite(_) => true,
            Db::Pg(p) => {
                if !p.health.down.load(std::sync::atomic::Ordering::SeqCst) {
                    return true;
                }
                if !p.health.probe_due() {
                    return false;
                }
                self.ping().is_ok()
            }
        }
    }

    /// Run `f` for a long read: on SQLite a snapshot that never holds up
    /// writers.
    pub(crate) fn read_long<T>(
        &self,
        f: impl Fn(&Conn<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self {
            Db::Lite(l) => f(&Conn::Lite(&l.reader())),
            Db::Pg(_) => self.run(f),
        }
    }

    /// Run `f` in one write transaction: all of it commits, or (on an
    /// error) none. On SQLite it takes the write lock at once (`BEGIN
    /// IMMEDIATE`), so what it reads stays true until it commits.
    pub(crate) fn write<T>(
        &self,
        f: impl Fn(&Conn<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_with(f, None)
    }

    /// [`Db::write`] with what the last such transaction on SQLite left in
    /// `kept`, given to `f` to read and change. It is trusted only when no
    /// other write reached the file since that transaction committed: the
    /// writing connection's count of changed rows and `PRAGMA data_version`
    /// (other connections' commits) are as they were then; otherwise `f`
    /// starts from `K::default()`, as it does after a transaction of its
    /// own that failed. On PostgreSQL (other hosts write at any moment)
    /// `f` gets nothing.
    pub(crate) fn write_kept<T, K: Default>(
        &self,
        kept: &Mutex<Kept<K>>,
        f: impl Fn(&Conn<'_>, Option<&mut K>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self {
            Db::Lite(l) => {
                let mut conn = l.conn();
                // Only ever taken with the writing connection held.
                let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                let tx =
                    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                let version: i64 = tx
                    .prepare_cached("PRAGMA data_version")?
                    .query_row([], |r| r.get(0))?;
                if kept.at.take() != Some((version, tx.total_changes())) {
                    kept.value = K::default();
                }
                let out = f(&Conn::Lite(&tx), Some(&mut kept.value))?;
                let changes = tx.total_changes();
                tx.commit()?;
                kept.at = Some((version, changes));
                Ok(out)
            }
            Db::Pg(_) => self.write(|c| f(c, None)),
        }
    }

    /// [`Db::write`] for a transaction that asks nothing of the database
    /// before it commits: on PostgreSQL it begins and commits in one round
    /// trip. Cut off before the transaction's id came back, `landed` is
    /// asked (on another connection, once the database answers) whether
    /// it committed; it must wait out a transaction still running.
    pub(crate) fn write_once<T>(
        &self,
        f: impl Fn(&Conn<'_>) -> Result<T, StoreError>,
        landed: impl Fn(&Conn<'_>) -> Result<bool, StoreError>,
    ) -> Result<T, StoreError> {
        self.write_with(f, Some(&landed))
    }

    /// [`Db::write`], or with `landed` [`Db::write_once`].
    #[expect(
        clippy::type_complexity,
        reason = "a check passed by reference, used in one place"
    )]
    fn write_with<T>(
        &self,
        f: impl Fn(&Conn<'_>) -> Result<T, StoreError>,
        landed: Option<&dyn Fn(&Conn<'_>) -> Result<bool, StoreError>>,
    ) -> Result<T, StoreError> {
        match self {
            Db::Lite(l) => {
                let mut conn = l.conn();
                let tx =
                    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                let out = f(&Conn::Lite(&tx))?;
                tx.commit()?;
                Ok(out)
            }
            Db::Pg(p) => outage(&p.health, || {
                let c = p.get()?;
                // `BEGIN` goes with the transaction's first round trip.
                c.begin_later();
                let out = match f(&Conn::Pg(&c)) {
                    Ok(out) => out,
                    Err(e) => {
                        // A broken connection rolls back by itself (and is
                        // not pooled again).
                        c.discard();
                        let _ = c.batch("ROLLBACK");
                        return Err(e);
                    }
                };
                let committed = match landed {
                    Some(_) => c.commit_at_once(),
                    None => c.commit(),
                };
                match committed {
                    Ok(()) => Ok(out),
                    // Cut off while committing: it may have landed. Ask the
                    // database (once it answers) rather than write it twice.
                    Err(CommitError::CutOff(txid, e)) => {
                        drop(c);
                        if outage(&p.health, || p.get()?.committed(txid))? {
                            Ok(out)
                        } else {
                            Err(e)
                        }
                    }
                    // Cut off before even its id came back: the caller
                    // knows what to look for.
                    Err(CommitError::Unknown(e)) => {
                        drop(c);
                        let Some(landed) = landed else {
                            return Err(e);
                        };
                        if outage(&p.health, || {
                            let again = p.get()?;
                            landed(&Conn::Pg(&again))
                        })? {
                            Ok(out)
                        } else {
                            Err(e)
                        }
                    }
                    Err(CommitError::Failed(e)) => {
                        let _ = c.batch("ROLLBACK");
                        Err(e)
                    }
                }
            }),
        }
    }
}

/// How long a PostgreSQL outage is waited out before the error reaches
/// the caller (a task then fails, resumable).
const OUTAGE_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Run `attempt` until it succeeds, fails for a reason other than an
/// unreachable database, or the database has been unreachable for
/// [`OUTAGE_LIMIT`]: tasks pause while it is down and go on when it is
/// back, losing nothing. Waits back off from 100 ms to 5 s.
fn outage<T>(
    health: &Health,
    attempt: impl Fn() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let mut outage = Outage::new();
    loop {
        match outage.after(health, attempt()) {
            Next::Done(outcome) => return outcome,
            Next::Pause(d) => pause(d),
        }
    }
}

/// An attempt's callers waiting out an outage: since when, the next pause
/// (backing off from 100 ms to 5 s), and whether it was said.
struct Outage {
    started: std::time::Instant,
    backoff: std::time::Duration,
    warned: bool,
}

/// What to do after an attempt.
enum Next<T> {
    /// Give the caller this.
    Done(Result<T, StoreError>),
    /// Pause this long, then try again.
    Pause(std::time::Duration),
}

impl Outage {
    fn new() -> Self {
        Self {
            started: std::time::Instant::now(),
            backoff: std::time::Duration::from_millis(100),
            warned: false,
        }
    }

    /// What follows `attempt`: its outcome, unless the database did not
    /// answer and has not been down for [`OUTAGE_LIMIT`] yet.
    fn after<T>(&mut self, health: &Health, attempt: Result<T, StoreError>) -> Next<T> {
        match attempt {
            Err(e) if super::pg::transient(&e) && self.started.elapsed() < OUTAGE_LIMIT => {
                health.observe(false);
                if !self.warned {
                    tracing::warn!("the task store does not answer ({e}); waiting for it");
                    self.warned = true;
                }
                let pause = self.backoff;
                self.backoff = (self.backoff * 2).min(std::time::Duration::from_secs(5));
                Next::Pause(pause)
            }
            Ok(v) => {
                if self.warned {
                    tracing::info!("the task store answers again");
                }
                health.observe(true);
                Next::Done(Ok(v))
            }
            Err(e) => Next::Done(Err(e)),
        }
    }
}

/// Sleep on this thread without holding up a runtime worker's other tasks.
fn pause(d: std::time::Duration) {
    blocking(|| std::thread::sleep(d));
}
