//! The backend seam: the SQL the store speaks, on SQLite (one machine) or
//! PostgreSQL (many hosts on one database).
//!
//! The store's modules write their statements once, in the dialect both
//! databases share (`?N` placeholders, `ON CONFLICT … DO UPDATE`,
//! `RETURNING`, `COALESCE`, `CAST`), and run them through a [`Conn`]; the
//! few places where the two differ ask [`Conn::dialect`]. Values cross the
//! seam as [`Param`]s and come back as [`Row`]s of [`Value`]s, so no
//! module names a driver's types.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::StoreError;
use super::pg::PgConn;

/// Which database a statement runs on, for the few places their SQL
/// differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Embedded SQLite.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

/// A value bound to a statement, borrowed from the caller.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Param<'a> {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Real(f64),
    /// Text.
    Text(&'a str),
}

impl From<i64> for Param<'_> {
    fn from(v: i64) -> Self {
        Param::Int(v)
    }
}

impl From<&i64> for Param<'_> {
    fn from(v: &i64) -> Self {
        Param::Int(*v)
    }
}

impl From<u32> for Param<'_> {
    fn from(v: u32) -> Self {
        Param::Int(i64::from(v))
    }
}

impl From<f64> for Param<'_> {
    fn from(v: f64) -> Self {
        Param::Real(v)
    }
}

impl From<bool> for Param<'_> {
    fn from(v: bool) -> Self {
        Param::Int(i64::from(v))
    }
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a String> for Param<'a> {
    fn from(v: &'a String) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a &str> for Param<'a> {
    fn from(v: &'a &str) -> Self {
        Param::Text(v)
    }
}

impl<'a> From<&'a Option<String>> for Param<'a> {
    fn from(v: &'a Option<String>) -> Self {
        v.as_deref().map_or(Param::Null, Param::Text)
    }
}

impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(v: Option<&'a str>) -> Self {
        v.map_or(Param::Null, Param::Text)
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(v: Option<i64>) -> Self {
        v.map_or(Param::Null, Param::Int)
    }
}

impl From<&Option<i64>> for Param<'_> {
    fn from(v: &Option<i64>) -> Self {
        v.map_or(Param::Null, Param::Int)
    }
}

/// `[Param]` from a list of values: `params![id, 3, name]`.
macro_rules! params {
    () => { &[] as &[$crate::store::db::Param<'_>] };
    ($($v:expr),+ $(,)?) => {
        &[$($crate::store::db::Param::from($v)),+][..]
    };
}
pub(crate) use params;

/// A value read back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// SQL NULL.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Real(f64),
    /// Text.
    Text(String),
}

/// One row of a result.
#[derive(Debug, Clone)]
pub(crate) struct Row(pub(crate) Vec<Value>);

impl Row {
    /// Column `i` as a `T`; a missing column or another type is an error
    /// (a corrupt or foreign database), never a panic.
    pub(crate) fn get<T: FromValue>(&self, i: usize) -> Result<T, StoreError> {
        let v = self.0.get(i).ok_or_else(|| StoreError::Decode {
            detail: format!("no column {i}"),
        })?;
        T::from_value(v).ok_or_else(|| StoreError::Decode {
            detail: format!("column {i} holds {v:?}, not {}", T::NAME),
        })
    }

    /// Column `i` as owned text, taken out of the row.
    pub(crate) fn take_text(&mut self, i: usize) -> Result<String, StoreError> {
        match self.0.get_mut(i) {
            Some(Value::Text(s)) => Ok(std::mem::take(s)),
            other => Err(StoreError::Decode {
                detail: format!("column {i} holds {other:?}, not text"),
            }),
        }
    }
}

/// What a column can be read as.
pub(crate) trait FromValue: Sized {
    /// For errors.
    const NAME: &'static str;
    /// The value as `Self`, if it is one.
    fn from_value(v: &Value) -> Option<Self>;
}

impl FromValue for i64 {
    const NAME: &'static str = "an integer";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
}

impl FromValue for u32 {
    const NAME: &'static str = "a count";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => u32::try_from(*i).ok(),
            _ => None,
        }
    }
}

impl FromValue for f64 {
    const NAME: &'static str = "a number";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Real(f) => Some(*f),
            Value::Int(i) => Some(int_to_f64(*i)),
            _ => None,
        }
    }
}

impl FromValue for bool {
    const NAME: &'static str = "a flag";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Int(i) => Some(*i != 0),
            _ => None,
        }
    }
}

impl FromValue for String {
    const NAME: &'static str = "text";
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    const NAME: &'static str = T::NAME;
    fn from_value(v: &Value) -> Option<Self> {
        match v {
            Value::Null => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// An integer as a float (counts and costs; exact up to 2^53).
fn int_to_f64(i: i64) -> f64 {
    // Lossless for every integer a store holds as a number; the string
    // route avoids an `as` cast.
    i.to_string().parse().unwrap_or(0.0)
}

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

/// `?N` placeholders as PostgreSQL's `$N` (the store's statements hold no
/// `?` anywhere else).
pub(crate) fn pg_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    out
}

/// The two SQLite connections of a store: `conn` writes (and does short
/// reads); `reader` does long reads (event replays) on a WAL snapshot, so
/// a front-end catching up on a long log never holds up a task's steps.
pub(crate) struct Lite {
    pub(crate) conn: Mutex<rusqlite::Connection>,
    pub(crate) reader: Mutex<rusqlite::Connection>,
}

impl Lite {
    pub(crate) fn conn(&self) -> MutexGuard<'_, rusqlite::Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent
        // (transactions roll back), so a poisoned lock is still usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn reader(&self) -> MutexGuard<'_, rusqlite::Connection> {
        self.reader.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A store's database.
pub(crate) enum Db {
    /// An embedded SQLite file.
    Lite(Lite),
    /// A PostgreSQL database shared by hosts.
    Pg(super::pg::Pool),
}

impl Db {
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
                f(&Conn::Pg(&c))
            }),
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
                let txid = c.begin()?;
                let out = match f(&Conn::Pg(&c)) {
                    Ok(out) => out,
                    Err(e) => {
                        // A broken connection rolls back by itself (and is
                        // not pooled again).
                        let _ = c.batch("ROLLBACK");
                        return Err(e);
                    }
                };
                match c.batch("COMMIT") {
                    Ok(()) => Ok(out),
                    // Cut off while committing: it may have landed. Ask the
                    // database (once it answers) rather than write it twice.
                    Err(e) if super::pg::transient(&e) => {
                        drop(c);
                        if outage(&p.health, || p.get()?.committed(txid))? {
                            Ok(out)
                        } else {
                            Err(e)
                        }
                    }
                    Err(e) => Err(e),
                }
            }),
        }
    }
}

/// Statements a PostgreSQL connection has prepared, by their SQL.
pub(crate) type StatementCache = RefCell<HashMap<String, tokio_postgres::Statement>>;

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
    let started = std::time::Instant::now();
    let mut backoff = std::time::Duration::from_millis(100);
    let mut warned = false;
    loop {
        match attempt() {
            Err(e) if super::pg::transient(&e) && started.elapsed() < OUTAGE_LIMIT => {
                health.observe(false);
                if !warned {
                    tracing::warn!("the task store does not answer ({e}); waiting for it");
                    warned = true;
                }
                pause(backoff);
                backoff = (backoff * 2).min(std::time::Duration::from_secs(5));
            }
            Ok(v) => {
                if warned {
                    tracing::info!("the task store answers again");
                }
                health.observe(true);
                return Ok(v);
            }
            Err(e) => return Err(e),
        }
    }
}

/// What a shared database's clients have seen of it lately: whether it
/// is down (an outage is being waited out) and when it was last probed.
#[derive(Debug, Default)]
pub(crate) struct Health {
    down: std::sync::atomic::AtomicBool,
    /// When a probe last ran while down (ms since the epoch).
    probed_at: std::sync::atomic::AtomicI64,
}

impl Health {
    /// How often a front-end's requests may probe a database that is down.
    pub(crate) const PROBE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

    /// Record whether the database just answered.
    fn observe(&self, answered: bool) {
        self.down
            .store(!answered, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether a probe is due now (and claim it: one caller probes).
    fn probe_due(&self) -> bool {
        let now = super::now_ms();
        let last = self.probed_at.load(std::sync::atomic::Ordering::SeqCst);
        let every = i64::try_from(Self::PROBE_EVERY.as_millis()).unwrap_or(1000);
        now - last >= every
            && self
                .probed_at
                .compare_exchange(
                    last,
                    now,
                    std::sync::atomic::Ordering::SeqCst,
                    std::sync::atomic::Ordering::SeqCst,
                )
                .is_ok()
    }
}

/// Sleep on this thread without holding up a runtime worker's other tasks.
fn pause(d: std::time::Duration) {
    super::pg::blocking(|| std::thread::sleep(d));
}
