//! What one call changed, found once. A mutating call's change set holds
//! the files it declares, read before and after it (for the diff and the
//! hashes), and a listing of its write roots (for what it changed beyond
//! them: a command's files, a plugin's or an MCP server's undeclared
//! writes). The diff, the checkpoint, the trace, the post-tool hooks and a
//! command's own report of its files all read this one account; nothing
//! else walks the tree after a call.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::OnceLock;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::intents::FileChange;
use crate::tools::ToolSpec;
use crate::tools::snapshot::{self, Snapshot};
use roost_sandbox::capability::{RelPath, TreeChange, TreeStat, Workspace};

/// Most entries listed under a call's write roots; past it the listing
/// says it stopped.
const MAX_LISTED: usize = 200_000;

/// Largest changed file hashed for the trace.
const MAX_HASHED: u64 = 1 << 30;

/// A call's files before it ran, and what it changed once asked.
#[derive(Debug, Default)]
pub struct ChangeSet {
    /// Its declared files before it ran.
    declared: Snapshot,
    /// Its write roots and their tree before it ran.
    listed: Option<(Vec<RelPath>, TreeStat)>,
    /// The tree's changes, listed the first time they are asked for.
    tree: OnceLock<TreeChanges>,
}

/// What changed under a call's write roots.
#[derive(Debug, Default)]
pub struct TreeChanges {
    /// Each changed path and how, in path order.
    pub changes: Vec<(String, TreeChange)>,
    /// The same paths with their hashes after (none when removed, too
    /// large, or declared: a declared file's account is its snapshot), in
    /// the same order.
    pub files: Vec<FileChange>,
    /// The listing stopped at its budget: changes past it are not seen.
    pub truncated: bool,
}

impl ChangeSet {
    /// A call that changes nothing: no files read, no tree listed.
    pub(crate) fn none() -> Self {
        Self::default()
    }

    /// A mutating call's account before it runs: its declared files and
    /// the tree under `roots` (workspace-relative; `.` is all of it).
    pub(crate) fn before(ws: &Workspace, spec: &ToolSpec, args: &Value, roots: &[PathBuf]) -> Self {
        let rels: Vec<RelPath> = roots
            .iter()
            .filter_map(|r| RelPath::parse(&r.to_string_lossy()).ok())
            .collect();
        let listed = match TreeStat::take(ws, &rels, &[".git"], MAX_LISTED) {
            Ok(tree) => Some((rels, tree)),
            Err(e) => {
                tracing::warn!(
                    "the write roots cannot be listed: {e}; changes beyond the declared files are not seen"
                );
                None
            }
        };
        Self {
            declared: snapshot::before(ws, spec, args),
            listed,
            tree: OnceLock::new(),
        }
    }

    /// What changed under the write roots since the call began. Listed
    /// the first time it is asked (an executor may ask once its work is
    /// done, to report it); the after stage reuses that listing.
    pub fn tree(&self, ws: &Workspace) -> &TreeChanges {
        self.tree.get_or_init(|| self.list_changes(ws))
    }

    fn list_changes(&self, ws: &Workspace) -> TreeChanges {
        let Some((rels, before)) = &self.listed else {
            return TreeChanges::default();
        };
        let now = match TreeStat::take(ws, rels, &[".git"], MAX_LISTED) {
            Ok(now) => now,
            Err(e) => {
                tracing::warn!("the write roots cannot be listed after the call: {e}");
                return TreeChanges::default();
            }
        };
        let changes = now.changes_since(before);
        // A declared file's hashes come from its snapshot: not read twice.
        let declared: BTreeSet<&str> = self.declared.iter().map(|(p, _)| p.as_str()).collect();
        let files = changes
            .iter()
            .map(|(path, change)| FileChange {
                path: path.clone(),
                sha256_before: None,
                sha256_after: match change {
                    TreeChange::Removed => None,
                    _ if declared.contains(path.as_str()) => None,
                    _ => sha256(ws, path),
                },
                lines_changed: 0,
            })
            .collect();
        TreeChanges {
            changes,
            files,
            truncated: now.truncated,
        }
    }

    /// The account after the call: the declared files read again (their
    /// permission bits put back), and the tree's changes.
    pub(crate) fn settle(mut self, ws: &Workspace) -> Settled {
        let after = snapshot::after(ws, &self.declared);
        snapshot::restore_modes(ws, &self.declared, &after);
        let tree = match self.tree.take() {
            Some(tree) => tree,
            None => self.list_changes(ws),
        };
        Settled {
            before: self.declared,
            after,
            tree,
        }
    }
}

/// What a call changed, once it has run.
#[derive(Debug)]
pub(crate) struct Settled {
    /// Its declared files before it ran.
    before: Snapshot,
    /// The same files after.
    after: Snapshot,
    /// What changed under its write roots.
    tree: TreeChanges,
}

impl Settled {
    /// The unified diff of the declared files that changed.
    pub(crate) fn diff(&self) -> Option<String> {
        snapshot::diff(&self.before, &self.after)
    }

    /// Every path the call changed: its declared files, then the rest of
    /// what changed under its write roots.
    pub(crate) fn paths(&self) -> Vec<String> {
        let mut paths = snapshot::changed(&self.before, &self.after);
        let declared: BTreeSet<String> = paths.iter().cloned().collect();
        paths.extend(
            self.tree
                .changes
                .iter()
                .filter(|(p, _)| !declared.contains(p))
                .map(|(p, _)| p.clone()),
        );
        paths
    }

    /// The trace's record of every changed file: the declared ones with
    /// their hashes before and after and the lines changed, the rest with
    /// their hashes after.
    pub(crate) fn trace_files(&self) -> Vec<FileChange> {
        let mut files = snapshot::changes(&self.before, &self.after);
        let declared: BTreeSet<String> = self.before.iter().map(|(p, _)| p.clone()).collect();
        files.extend(
            self.tree
                .files
                .iter()
                .filter(|f| !declared.contains(&f.path))
                .cloned(),
        );
        files
    }
}

/// A file's SHA-256, read through the workspace; none when it cannot be
/// read or is too large.
fn sha256(ws: &Workspace, rel: &str) -> Option<String> {
    let rel = RelPath::parse(rel).ok()?;
    let mut f = ws.open_file(&rel).ok()??;
    let size = f.metadata().ok()?.len();
    if size > MAX_HASHED {
        return None;
    }
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).ok()?;
    Some(format!("{:x}", h.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolGroup;

    fn spec() -> ToolSpec {
        ToolSpec {
            name: "t".into(),
            description: String::new(),
            args_schema: serde_json::json!({}),
            group: ToolGroup::Edit,
            destructive: true,
            path_args: vec!["path".into()],
            annotations: Default::default(),
        }
    }

    #[test]
    fn one_account_names_declared_and_undeclared_changes_once() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join("a.txt"), "one\n").expect("write");
        std::fs::write(d.path().join("gone.txt"), "x\n").expect("write");
        let ws = Workspace::open(d.path()).expect("ws");
        let args = serde_json::json!({"path": "a.txt"});
        let set = ChangeSet::before(&ws, &spec(), &args, &[PathBuf::from(".")]);
        std::fs::write(d.path().join("a.txt"), "two\n").expect("write");
        std::fs::write(d.path().join("b.txt"), "new\n").expect("write");
        std::fs::remove_file(d.path().join("gone.txt")).expect("rm");
        let settled = set.settle(&ws);
        assert_eq!(settled.paths(), ["a.txt", "b.txt", "gone.txt"]);
        let files = settled.trace_files();
        let names: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(names, ["a.txt", "b.txt", "gone.txt"]);
        // The declared file has both hashes and its lines; the others what is known after.
        assert!(files[0].sha256_before.is_some() && files[0].lines_changed == 2);
        assert!(files[1].sha256_before.is_none() && files[1].sha256_after.is_some());
        assert!(files[2].sha256_after.is_none());
        assert!(settled.diff().is_some_and(|d| d.contains("-one\n+two")));
    }

    #[test]
    fn the_tree_is_listed_once_when_the_executor_asks_first() {
        let d = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::open(d.path()).expect("ws");
        let set = ChangeSet::before(&ws, &spec(), &serde_json::json!({}), &[PathBuf::from(".")]);
        std::fs::write(d.path().join("made.txt"), "x\n").expect("write");
        assert_eq!(set.tree(&ws).changes.len(), 1);
        // Written after the executor's report: the after stage keeps its listing.
        std::fs::write(d.path().join("later.txt"), "y\n").expect("write");
        assert_eq!(set.settle(&ws).paths(), ["made.txt"]);
    }

    #[test]
    fn a_call_that_changes_nothing_lists_nothing() {
        let d = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::open(d.path()).expect("ws");
        let set = ChangeSet::none();
        std::fs::write(d.path().join("made.txt"), "x\n").expect("write");
        assert!(set.tree(&ws).changes.is_empty());
        assert!(set.settle(&ws).paths().is_empty());
    }
}
