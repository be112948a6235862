//! The values and helpers every backend of the store shares: the
//! [`Param`]s statements take, the [`Row`]s of [`Value`]s they give back,
//! the dialect, and what a shared database's clients know of its health.
//! Below both backends (`db` dispatches, `pg` speaks PostgreSQL), so
//! neither imports the other for them.

#[cfg(feature = "postgres")]
use std::collections::HashMap;

use super::StoreError;

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

impl<'a> From<&'a Value> for Param<'a> {
    fn from(v: &'a Value) -> Self {
        match v {
            Value::Null => Param::Null,
            Value::Int(i) => Param::Int(*i),
            Value::Real(f) => Param::Real(*f),
            Value::Text(s) => Param::Text(s),
        }
    }
}

impl Param<'_> {
    /// The value owned, to be sent later.
    #[cfg_attr(
        not(feature = "postgres"),
        expect(dead_code, reason = "only PostgreSQL sends statements later")
    )]
    pub(crate) fn owned(&self) -> Value {
        match *self {
            Param::Null => Value::Null,
            Param::Int(i) => Value::Int(i),
            Param::Real(f) => Value::Real(f),
            Param::Text(s) => Value::Text(s.to_owned()),
        }
    }
}

/// One column of many rows, bound as one array: on PostgreSQL, a
/// transaction's new rows of a table go in one statement
/// (`INSERT … SELECT * FROM UNNEST(…)`) instead of one a row.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Column {
    /// Integers.
    Int(Vec<i64>),
    /// Floats.
    Real(Vec<f64>),
    /// Texts.
    Text(Vec<String>),
    /// Texts that may be NULL.
    OptText(Vec<Option<String>>),
    /// Integers that may be NULL.
    OptInt(Vec<Option<i64>>),
}

impl Column {
    /// Add `p` as this column's next row; `false` (nothing added) when it
    /// is not of the column's type.
    pub(crate) fn push(&mut self, p: Param<'_>) -> bool {
        match (self, p) {
            (Column::Int(v), Param::Int(i)) => v.push(i),
            (Column::Real(v), Param::Real(f)) => v.push(f),
            (Column::Text(v), Param::Text(t)) => v.push(t.to_owned()),
            (Column::OptText(v), Param::Text(t)) => v.push(Some(t.to_owned())),
            (Column::OptText(v), Param::Null) => v.push(None),
            (Column::OptInt(v), Param::Int(i)) => v.push(Some(i)),
            (Column::OptInt(v), Param::Null) => v.push(None),
            _ => return false,
        }
        true
    }
}

/// `[Param]` from a list of values: `params![id, 3, name]`.
macro_rules! params {
    () => { &[] as &[$crate::sql::Param<'_>] };
    ($($v:expr),+ $(,)?) => {
        &[$($crate::sql::Param::from($v)),+][..]
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

/// The database's clock in ms since the epoch (PostgreSQL).
pub(crate) const DB_NOW: &str = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)";

#[cfg(feature = "postgres")]
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

/// Statements a PostgreSQL connection has prepared, by their SQL.
#[cfg(feature = "postgres")]
pub(crate) type StatementCache = std::sync::Mutex<HashMap<String, tokio_postgres::Statement>>;

/// What a shared database's clients have seen of it lately: whether it
/// is down (an outage is being waited out) and when it was last probed.
#[derive(Debug, Default)]
pub(crate) struct Health {
    /// Whether an outage is being waited out.
    pub(super) down: std::sync::atomic::AtomicBool,
    /// When a probe last ran while down (ms since the epoch).
    probed_at: std::sync::atomic::AtomicI64,
}

impl Health {
    /// How often a front-end's requests may probe a database that is down.
    pub(crate) const PROBE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

    /// Record whether the database just answered.
    pub(super) fn observe(&self, answered: bool) {
        self.down
            .store(!answered, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether a probe is due now (and claim it: one caller probes).
    pub(super) fn probe_due(&self) -> bool {
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

/// Run `f`, which blocks this thread; on a worker of a multi-threaded
/// runtime its other tasks move to another thread meanwhile.
pub(crate) fn blocking<T>(f: impl FnOnce() -> T) -> T {
    let multi = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}
