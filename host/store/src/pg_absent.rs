//! The PostgreSQL backend when this Roost was built without it (cargo
//! feature `postgres` off, a CLI-only build): the same names as
//! [`pg`](self) with types nobody can construct, so the store's modules
//! keep one shape and every way to reach a shared database answers with
//! the reason instead.

use std::convert::Infallible;

use super::StoreError;
use super::sql::{Column, Health, Param, Row};

/// Why a shared store cannot be opened by this build.
fn absent() -> StoreError {
    StoreError::Unavailable(
        "this Roost was built without PostgreSQL (cargo feature `postgres`); \
         use a SQLite store or a build with the feature"
            .into(),
    )
}

/// Whether `e` is worth waiting out: never here (no database to wait for).
pub(crate) fn transient(e: &StoreError) -> bool {
    let _ = e;
    false
}

/// The database runtime does not exist in this build.
pub(crate) fn spawn(
    f: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), StoreError> {
    drop(f);
    Err(absent())
}

/// A connection: none can exist.
pub(crate) struct PgConn {
    never: Infallible,
}

impl PgConn {
    pub(crate) fn exec(&self, _: &str, _: &[Param<'_>]) -> Result<usize, StoreError> {
        match self.never {}
    }

    pub(crate) fn query(&self, _: &str, _: &[Param<'_>]) -> Result<Vec<Row>, StoreError> {
        match self.never {}
    }

    pub(crate) fn batch(&self, _: &str) -> Result<(), StoreError> {
        match self.never {}
    }

    pub(crate) fn later(&self, _: &str, _: &[Param<'_>]) -> Result<(), StoreError> {
        match self.never {}
    }

    pub(crate) fn later_columns(&self, _: &str, _: Vec<Column>) -> Result<(), StoreError> {
        match self.never {}
    }

    pub(crate) fn trip(&self, _: &[Ask<'_>]) -> Result<Vec<Answer>, StoreError> {
        match self.never {}
    }

    pub(crate) fn query_all(
        &self,
        _: &[(&str, &[Param<'_>])],
    ) -> Result<Vec<Vec<Row>>, StoreError> {
        match self.never {}
    }

    pub(crate) async fn query_all_async(
        &self,
        _: &[(&str, &[Param<'_>])],
    ) -> Result<Vec<Vec<Row>>, StoreError> {
        match self.never {}
    }

    pub(crate) async fn exec_all_async(
        &self,
        _: &[(&str, &[Param<'_>])],
    ) -> Result<Vec<u64>, StoreError> {
        match self.never {}
    }

    pub(crate) fn flush(&self) -> Result<(), StoreError> {
        match self.never {}
    }

    pub(crate) fn discard(&self) {
        match self.never {}
    }

    pub(crate) fn begin_later(&self) {
        match self.never {}
    }

    pub(crate) fn commit(&self) -> Result<(), CommitError> {
        match self.never {}
    }

    pub(crate) fn committed(&self, _: i64) -> Result<bool, StoreError> {
        match self.never {}
    }

    pub(crate) fn commit_at_once(&self) -> Result<(), CommitError> {
        match self.never {}
    }

    pub(crate) fn task_key(&self) -> Result<i64, StoreError> {
        match self.never {}
    }
}

/// A statement a round trip ends with (never sent in this build).
#[expect(
    dead_code,
    reason = "no PostgreSQL in this build: nothing is sent or answered"
)]
pub(crate) enum Ask<'a> {
    /// Its rows.
    Query(&'a str, &'a [Param<'a>]),
    /// Statements without parameters, in one simple query.
    Batch(&'a str),
}

/// The answer to an [`Ask`] (none in this build).
#[expect(
    dead_code,
    reason = "no PostgreSQL in this build: nothing is sent or answered"
)]
pub(crate) enum Answer {
    /// Rows read.
    Rows(Vec<Row>),
    /// Rows changed.
    Count(u64),
    /// A batch ran.
    Done,
}

/// Why a commit did not land (never, in this build).
#[expect(
    dead_code,
    reason = "no PostgreSQL in this build: nothing is sent or answered"
)]
pub(crate) enum CommitError {
    /// Cut off while committing.
    CutOff(i64, StoreError),
    /// Did not commit.
    Failed(StoreError),
    /// Cut off before the transaction's id came back.
    Unknown(StoreError),
}

/// A pool: none can exist ([`Pool::new`] refuses).
pub(crate) struct Pool {
    /// Whether the database answers.
    pub(crate) health: Health,
    never: Infallible,
}

impl Pool {
    /// Refused: this build has no PostgreSQL client.
    pub(crate) fn new(url: &str) -> Result<Self, StoreError> {
        let _ = url;
        Err(absent())
    }

    pub(crate) fn get(&self) -> Result<Box<PgConn>, StoreError> {
        match self.never {}
    }

    pub(crate) async fn get_async(&self) -> Result<Box<PgConn>, StoreError> {
        match self.never {}
    }

    pub(crate) fn clone_config(&self) -> Self {
        match self.never {}
    }

    pub(crate) fn migrate(&self) -> Result<(i64, i64), StoreError> {
        match self.never {}
    }

    pub(crate) fn round_trips(&self) -> u64 {
        match self.never {}
    }

    pub(crate) fn prepared(&self) -> u64 {
        match self.never {}
    }

    /// Uninhabited: code behind a pool never runs.
    pub(crate) fn never(&self) -> ! {
        match self.never {}
    }
}

/// The location without a password (no URL parser in this build: the
/// scheme alone).
pub(crate) fn redacted(url: &str) -> String {
    let _ = url;
    "postgres://…".into()
}
