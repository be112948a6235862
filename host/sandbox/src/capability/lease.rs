//! Write-root leases: a tool call holds its write roots for as long as it
//! runs, so two calls whose roots overlap never run at once in this
//! process. A [`WriteGuard`](super::WriteGuard) undoes every write under
//! its roots that its rule does not allow; without a lease it would also
//! undo another task's in-scope write made during the call, or the other
//! task's guard would undo this one's. Disjoint roots run in parallel.
//!
//! Leases are per process (one table for every engine in it), on absolute
//! paths, so nested workspaces (`/w` and `/w/sub`) are covered too. Other
//! processes on the same workspace are not: `SECURITY.md` says so.

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use tokio::sync::Notify;

use super::Workspace;

/// The table of held leases.
#[derive(Debug, Default)]
pub struct WriteLeases {
    held: Mutex<Held>,
    released: Notify,
}

#[derive(Debug, Default)]
struct Held {
    next: u64,
    leases: Vec<(u64, Vec<PathBuf>)>,
}

/// Roots held until dropped.
#[derive(Debug)]
#[must_use = "the roots are released when the lease is dropped"]
pub struct WriteLease {
    table: Arc<WriteLeases>,
    id: u64,
}

static PROCESS: LazyLock<Arc<WriteLeases>> = LazyLock::new(Arc::default);

/// Whether one of two absolute roots contains the other.
fn overlap(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

impl WriteLeases {
    /// The process's table, shared by every task in it.
    pub fn process() -> Arc<Self> {
        Arc::clone(&PROCESS)
    }

    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait until no held lease overlaps `roots` (workspace-relative
    /// directories of `ws`), then hold them.
    pub async fn acquire(self: &Arc<Self>, ws: &Workspace, roots: &[PathBuf]) -> WriteLease {
        let wanted: Vec<PathBuf> = roots
            .iter()
            .map(|r| {
                let rel = r.to_string_lossy();
                if rel.is_empty() || rel == "." {
                    ws.host_path().to_path_buf()
                } else {
                    ws.host_path().join(r)
                }
            })
            .collect();
        loop {
            // Registered before the check, so a release between the check
            // and the wait is not missed.
            let mut released = std::pin::pin!(self.released.notified());
            released.as_mut().enable();
            {
                let mut held = self.lock();
                let busy = held
                    .leases
                    .iter()
                    .any(|(_, h)| h.iter().any(|a| wanted.iter().any(|b| overlap(a, b))));
                if !busy {
                    held.next += 1;
                    let id = held.next;
                    held.leases.push((id, wanted));
                    return WriteLease {
                        table: Arc::clone(self),
                        id,
                    };
                }
            }
            tracing::debug!(roots = ?wanted, "waiting for an overlapping call to finish");
            released.await;
        }
    }

    /// How many leases are held (for tests and diagnostics).
    pub fn held(&self) -> usize {
        self.lock().leases.len()
    }
}

impl Drop for WriteLease {
    fn drop(&mut self) {
        self.table.lock().leases.retain(|(id, _)| *id != self.id);
        self.table.released.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn overlapping_roots_wait_and_disjoint_ones_do_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("src/a")).expect("mkdir");
        std::fs::create_dir_all(dir.path().join("docs")).expect("mkdir");
        let ws = Workspace::open(dir.path()).expect("ws");
        let table = Arc::new(WriteLeases::default());
        let src = table.acquire(&ws, &[PathBuf::from("src")]).await;
        // Disjoint: granted at once.
        let docs = table.acquire(&ws, &[PathBuf::from("docs")]).await;
        assert_eq!(table.held(), 2);
        // Nested under a held root: waits until it is released.
        let waiter = {
            let table = Arc::clone(&table);
            let ws = ws.clone();
            tokio::spawn(async move { table.acquire(&ws, &[PathBuf::from("src/a")]).await })
        };
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        drop(src);
        let nested = waiter.await.expect("acquired");
        assert_eq!(table.held(), 2);
        // The whole workspace overlaps everything.
        let whole = {
            let table = Arc::clone(&table);
            let ws = ws.clone();
            tokio::spawn(async move { table.acquire(&ws, &[PathBuf::from(".")]).await })
        };
        drop(docs);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!whole.is_finished());
        drop(nested);
        drop(whole.await.expect("acquired"));
        assert_eq!(table.held(), 0);
    }
}
