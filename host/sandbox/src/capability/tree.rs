//! What is under a workspace's directories, entry by entry, without
//! reading a byte of content: kind, size, inode and change time. Two
//! listings taken around a native command say which files it created,
//! changed or removed (a change time moves with every write and cannot be
//! forged by the writer), so only those are read and hashed afterwards.
//! Walked through directory handles like everything the host does in a
//! workspace: no symlink followed, no special file opened.

use std::collections::BTreeMap;
use std::ffi::OsStr;

use super::dirfd::{DirFd, EntryStat, Kind};
use super::workspace::{RelPath, Workspace, WorkspaceError};

/// Entries under some directories of a workspace, by workspace-relative
/// path (`a/b.txt`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeStat {
    entries: BTreeMap<String, EntryStat>,
    /// The walk stopped at its entry budget: changes past it are not seen.
    pub truncated: bool,
}

/// How an entry differs between two listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeChange {
    /// It is new.
    Created,
    /// It is there in both, with other content or another kind.
    Modified,
    /// It is gone.
    Removed,
}

impl TreeStat {
    /// List everything under `roots` (workspace-relative directories; `.`
    /// is the whole workspace), at most `max_entries` entries; directories
    /// named in `skip` (by name, anywhere: `.git`) are not entered.
    pub fn take(
        ws: &Workspace,
        roots: &[RelPath],
        skip: &[&str],
        max_entries: usize,
    ) -> Result<Self, WorkspaceError> {
        let mut out = Self::default();
        for root in roots {
            let dir = match ws.dir(root) {
                Ok(d) => d,
                Err(e) if e.is_not_found() => continue,
                Err(e) => return Err(e),
            };
            let prefix = if root.is_root() {
                String::new()
            } else {
                format!("{}/", root.as_string())
            };
            out.walk(&dir, &prefix, skip, max_entries, 0)
                .map_err(|cause| WorkspaceError::Io {
                    path: root.as_string(),
                    cause,
                })?;
        }
        Ok(out)
    }

    fn walk(
        &mut self,
        dir: &DirFd,
        prefix: &str,
        skip: &[&str],
        max: usize,
        depth: usize,
    ) -> std::io::Result<()> {
        // Deeper than any real tree: a loop of bind mounts, not a project.
        if depth > 256 {
            return Ok(());
        }
        let mut names = dir.entries()?;
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, stat) in names {
            if self.entries.len() >= max {
                self.truncated = true;
                return Ok(());
            }
            let Some(n) = name.to_str() else {
                // A name that is not UTF-8 cannot be reported by path.
                continue;
            };
            let rel = format!("{prefix}{n}");
            let kind = stat.kind;
            self.entries.insert(rel.clone(), stat);
            if kind == Kind::Dir && !skip.contains(&n) {
                match dir.open_dir(OsStr::new(n)) {
                    Ok(child) => self.walk(&child, &format!("{rel}/"), skip, max, depth + 1)?,
                    // Gone since the listing, or not ours to open.
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                        ) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// How many entries it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every entry, in path order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &EntryStat)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The entry at `rel`, if listed.
    pub fn get(&self, rel: &str) -> Option<&EntryStat> {
        self.entries.get(rel)
    }

    /// Every non-directory entry that differs from `before` to `self`, in
    /// path order (directories only hold what is reported inside them).
    pub fn changes_since(&self, before: &Self) -> Vec<(String, TreeChange)> {
        let mut out = Vec::new();
        for (rel, now) in &self.entries {
            if now.kind == Kind::Dir {
                continue;
            }
            match before.entries.get(rel) {
                None => out.push((rel.clone(), TreeChange::Created)),
                Some(was) if was.kind == Kind::Dir => out.push((rel.clone(), TreeChange::Created)),
                Some(was) if same(was, now) => {}
                Some(_) => out.push((rel.clone(), TreeChange::Modified)),
            }
        }
        for (rel, was) in &before.entries {
            if was.kind == Kind::Dir {
                continue;
            }
            match self.entries.get(rel) {
                None => out.push((rel.clone(), TreeChange::Removed)),
                Some(now) if now.kind == Kind::Dir => out.push((rel.clone(), TreeChange::Removed)),
                _ => {}
            }
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

/// The same inode, untouched since.
fn same(a: &EntryStat, b: &EntryStat) -> bool {
    a.kind == b.kind
        && a.size == b.size
        && a.ino == b.ino
        && a.dev == b.dev
        && a.ctime == b.ctime
        && a.mode == b.mode
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Created, modified and removed files are told apart; untouched ones
    /// and directories are not reported; a skipped directory is not
    /// entered; the budget stops the walk and says so.
    #[test]
    fn two_listings_tell_what_changed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).expect("mkdir");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::write(root.join("src/a.rs"), "a").expect("write");
        std::fs::write(root.join("src/deep/b.rs"), "b").expect("write");
        std::fs::write(root.join("gone.txt"), "x").expect("write");
        std::fs::write(root.join(".git/HEAD"), "ref").expect("write");
        let ws = Workspace::open(root).expect("ws");
        let all = [RelPath::root()];
        let before = TreeStat::take(&ws, &all, &[".git"], 1000).expect("before");
        assert!(before.get(".git/HEAD").is_none());
        assert!(before.get("src/deep/b.rs").is_some());
        // ctime has a coarse clock on some file systems: wait it out.
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(root.join("src/a.rs"), "aa").expect("write");
        std::fs::write(root.join("src/new.rs"), "n").expect("write");
        std::fs::remove_file(root.join("gone.txt")).expect("rm");
        let after = TreeStat::take(&ws, &all, &[".git"], 1000).expect("after");
        assert_eq!(
            after.changes_since(&before),
            vec![
                ("gone.txt".to_owned(), TreeChange::Removed),
                ("src/a.rs".to_owned(), TreeChange::Modified),
                ("src/new.rs".to_owned(), TreeChange::Created),
            ]
        );
        let small = TreeStat::take(&ws, &all, &[], 2).expect("small");
        assert!(small.truncated);
        assert_eq!(small.len(), 2);
        let sub =
            TreeStat::take(&ws, &[RelPath::parse("src/deep").expect("rel")], &[], 10).expect("sub");
        assert!(sub.get("src/deep/b.rs").is_some());
    }
}
