//! Hosts sharing a PostgreSQL store. Each host registers itself (with the
//! workspace roots it has) and renews its lease in `hosts` from a thread of
//! its own; a task's claim is alive while its host's lease is. A host that
//! dies stops renewing, and once its lease has run out another host may
//! claim its tasks and resume them from their durable history.
//!
//! Times here are the database's clock, so hosts with skewed clocks agree
//! on whose lease ran out.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use std::time::Duration;

use super::claims::ms;
use super::db::{DB_NOW, Db, params};
use super::{Store, StoreError};

impl Store {
    /// Set how long this host's claims outlive its last renewal (before it
    /// claims anything). Shorter: a dead host's tasks resume sooner; a
    /// renewal is sent every third of it.
    pub fn set_lease(&self, lease: Duration) {
        self.claims.host.lease_ms.store(ms(lease), Ordering::SeqCst);
    }

    /// This host's id in a shared store (it registers on first use); none
    /// for a SQLite store.
    pub fn host_id(&self) -> Result<Option<String>, StoreError> {
        if !self.is_shared() {
            return Ok(None);
        }
        Ok(Some(self.owner()?.token.clone()))
    }

    /// Whether this host's lease is current: false once renewals have
    /// failed for longer than the lease (another host may take its tasks).
    pub fn lease_held(&self) -> bool {
        if !self.is_shared() {
            return true;
        }
        let h = &self.claims.host;
        super::now_ms() - h.renewed_at.load(Ordering::SeqCst) < h.lease_ms.load(Ordering::SeqCst)
    }

    /// Advertise the workspace roots this host has (a host claims only
    /// tasks under them).
    pub fn advertise_roots(&self, roots: &[String]) -> Result<(), StoreError> {
        let Some(id) = self.host_id()? else {
            return Ok(());
        };
        let json = serde_json::to_string(roots).map_err(|e| StoreError::Decode {
            detail: e.to_string(),
        })?;
        self.db.run(|c| {
            c.exec(
                "UPDATE hosts SET roots = ?2 WHERE id = ?1",
                params![&id, &json],
            )
        })?;
        Ok(())
    }

    /// Leave: this host's row goes, and with it the life of its claims.
    pub fn leave(&self) -> Result<(), StoreError> {
        let Some(id) = self.claims.owner.get().map(|o| o.token.clone()) else {
            return Ok(());
        };
        if !self.is_shared() {
            return Ok(());
        }
        self.db
            .run(|c| c.exec("DELETE FROM hosts WHERE id = ?1", params![&id]))?;
        Ok(())
    }

    /// Register this host and start renewing its lease.
    pub(super) fn register_host(&self) -> Result<String, StoreError> {
        let id = uuid::Uuid::now_v7().to_string();
        let name = rustix::system::uname()
            .nodename()
            .to_string_lossy()
            .into_owned();
        let lease = self.claims.host.lease_ms.load(Ordering::SeqCst);
        self.db.run(|c| {
            c.exec(
                &format!(
                    "INSERT INTO hosts (id, name, roots, lease_ms, started_at, seen_at) \
                     VALUES (?1, ?2, '[]', ?3, {DB_NOW}, {DB_NOW})"
                ),
                params![&id, &name, lease],
            )
        })?;
        self.claims
            .host
            .renewed_at
            .store(super::now_ms(), Ordering::SeqCst);
        // Renewals have a connection of their own: a pool busy with a
        // thousand tasks' steps never makes a lease lapse.
        let Db::Pg(pool) = &*self.db else {
            return Ok(id);
        };
        let pool = pool.clone_config();
        let claims = Arc::downgrade(&self.claims);
        let host = id.clone();
        std::thread::Builder::new()
            .name("roost-lease".into())
            .spawn(move || renew(&pool, &claims, &host))
            .map_err(|e| StoreError::Unavailable(format!("cannot start the lease thread: {e}")))?;
        tracing::info!(host = %id, %name, lease_ms = lease, "registered with the shared task store");
        Ok(id)
    }
}

/// Renew `host`'s lease every third of it while its store is alive.
fn renew(pool: &super::pg::Pool, weak: &Weak<super::claims::Claims>, host: &str) {
    loop {
        let Some(claims) = weak.upgrade() else {
            return;
        };
        let lease = claims.host.lease_ms.load(Ordering::SeqCst);
        let every = Duration::from_millis(u64::try_from(lease / 3).unwrap_or(1000).max(50));
        drop(claims);
        std::thread::sleep(every);
        let Some(claims) = weak.upgrade() else {
            return;
        };
        let lease = claims.host.lease_ms.load(Ordering::SeqCst);
        let renewed = pool.get().and_then(|c| {
            c.exec(
                &format!("UPDATE hosts SET seen_at = {DB_NOW}, lease_ms = ?2 WHERE id = ?1"),
                params![host, lease],
            )
        });
        match renewed {
            Ok(_) => claims
                .host
                .renewed_at
                .store(super::now_ms(), Ordering::SeqCst),
            Err(e) => tracing::warn!(host, "renewing the host's lease: {e}"),
        }
    }
}
