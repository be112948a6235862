//! Scopes finer than a directory. WASI preopens are whole directories, so
//! the write root granted for the glob `src/*.rs` would let a plugin write
//! `src/notes.txt` as well. A [`WriteGuard`] is armed before such a call: it
//! records every entry under the write roots that the scope does not allow
//! (with the bytes of files, so they can be put back). Checked after the
//! call, it undoes every change to those paths (new entries removed,
//! changed or deleted ones restored) and reports them, so no write outside
//! the scope persists.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::Grant;

/// How much a guard may keep in memory; a scope whose write roots hold
/// more bytes outside the scope than this cannot be guarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardBudget {
    /// Total bytes of files outside the scope kept for restoring.
    pub bytes: u64,
    /// Entries outside the scope recorded.
    pub entries: usize,
}

impl Default for GuardBudget {
    fn default() -> Self {
        Self {
            bytes: 256 << 20,
            entries: 200_000,
        }
    }
}

/// Why a guard cannot be armed (the call must then not run).
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    /// Too much outside the scope under the write roots to keep.
    #[error(
        "the write root `{root}` holds more than {limit} outside the owned scope; Roost cannot guarantee \
         they stay unchanged, so the call was not run. Narrow owned_scope (e.g. `{root}/sub/**` instead of a \
         pattern over `{root}`)"
    )]
    TooLarge {
        /// The write root.
        root: String,
        /// The budget that was exceeded, in words.
        limit: String,
    },
    /// A write root or an entry under it could not be read.
    #[error("cannot snapshot {path}: {source}")]
    Io {
        /// Host path.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A write root is not a plain workspace-relative path.
    #[error(transparent)]
    Grant(#[from] super::GrantError),
}

/// An entry outside the scope as it was before the call.
#[derive(Debug)]
enum Kept {
    File {
        bytes: Vec<u8>,
        mode: u32,
        /// Inode, size and change time: the guest can forge mtime but not
        /// ctime, so equal triples mean an untouched file.
        stamp: (u64, u64, i64, i64),
    },
    Dir,
    Symlink(PathBuf),
    /// Sockets, fifos, devices: recorded so their removal is noticed.
    Other,
}

/// What a checked guard found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GuardReport {
    /// Workspace-relative paths outside the scope whose change was undone.
    pub reverted: Vec<String>,
    /// Paths whose change could not be undone, with why.
    pub failed: Vec<(String, String)>,
}

impl GuardReport {
    /// Whether the call changed anything outside the scope.
    pub fn violated(&self) -> bool {
        !self.reverted.is_empty() || !self.failed.is_empty()
    }
}

/// Armed before a call, checked after it; see the module docs.
#[derive(Debug)]
pub struct WriteGuard {
    workspace: PathBuf,
    roots: Vec<PathBuf>,
    kept: BTreeMap<String, Kept>,
}

impl WriteGuard {
    /// Record the entries under `roots` (workspace-relative directories)
    /// that `allowed` rejects.
    pub fn arm(
        workspace: &Path,
        roots: &[PathBuf],
        allowed: &dyn Fn(&str) -> bool,
        budget: GuardBudget,
    ) -> Result<Self, GuardError> {
        let roots = outermost(roots)?;
        let mut kept = BTreeMap::new();
        let mut bytes = 0u64;
        for root in &roots {
            let root_name = rel_string(root);
            let mut over = None;
            walk(workspace, root, &mut |rel, path, meta| {
                if allowed(rel) {
                    return Ok(());
                }
                let entry = if meta.file_type().is_symlink() {
                    Kept::Symlink(std::fs::read_link(path).map_err(|source| GuardError::Io {
                        path: path.to_path_buf(),
                        source,
                    })?)
                } else if meta.is_dir() {
                    Kept::Dir
                } else if meta.is_file() {
                    bytes += meta.len();
                    if bytes > budget.bytes {
                        over = Some(format!("{} MiB of files", budget.bytes >> 20));
                        return Ok(());
                    }
                    Kept::File {
                        bytes: std::fs::read(path).map_err(|source| GuardError::Io {
                            path: path.to_path_buf(),
                            source,
                        })?,
                        mode: meta.permissions().mode(),
                        stamp: stamp(meta),
                    }
                } else {
                    Kept::Other
                };
                kept.insert(rel.to_owned(), entry);
                if kept.len() > budget.entries {
                    over = Some(format!("{} entries", budget.entries));
                }
                Ok(())
            })?;
            if let Some(limit) = over {
                return Err(GuardError::TooLarge {
                    root: root_name,
                    limit,
                });
            }
        }
        Ok(Self {
            workspace: workspace.to_path_buf(),
            roots,
            kept,
        })
    }

    /// Undo every change to a path outside the scope and report them.
    pub fn check(self, allowed: &dyn Fn(&str) -> bool) -> GuardReport {
        let mut report = GuardReport::default();
        let mut seen = BTreeSet::new();
        let mut added: Vec<String> = Vec::new();
        let mut changed: Vec<String> = Vec::new();
        for root in &self.roots {
            let res = walk(&self.workspace, root, &mut |rel, _path, meta| {
                if allowed(rel) {
                    return Ok(());
                }
                seen.insert(rel.to_owned());
                match self.kept.get(rel) {
                    None => added.push(rel.to_owned()),
                    Some(k) if !same(k, meta) => changed.push(rel.to_owned()),
                    Some(_) => {}
                }
                Ok(())
            });
            if let Err(e) = res {
                report.failed.push((rel_string(root), e.to_string()));
            }
        }
        // Deepest first, so a new directory is empty once its new entries
        // are gone (a new directory holding allowed files stays).
        added.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        for rel in added {
            let path = self.workspace.join(&rel);
            let res = match path.symlink_metadata() {
                Ok(m) if m.is_dir() => match std::fs::remove_dir(&path) {
                    // It holds files the scope allows: a container, kept.
                    Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => continue,
                    r => r,
                },
                Ok(_) => std::fs::remove_file(&path),
                Err(e) => Err(e),
            };
            match res {
                Ok(()) => report.reverted.push(rel),
                Err(e) => report.failed.push((rel, format!("cannot remove: {e}"))),
            }
        }
        let missing: Vec<String> = self
            .kept
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        // Parents before children when putting things back.
        let mut restore: Vec<String> = changed.into_iter().chain(missing).collect();
        restore.sort();
        for rel in restore {
            let Some(k) = self.kept.get(&rel) else {
                continue;
            };
            match self.restore(&rel, k) {
                Ok(()) => report.reverted.push(rel),
                Err(e) => report.failed.push((rel, format!("cannot restore: {e}"))),
            }
        }
        report.reverted.sort();
        report.reverted.dedup();
        report
    }

    fn restore(&self, rel: &str, k: &Kept) -> std::io::Result<()> {
        let path = self.workspace.join(rel);
        if let Ok(m) = path.symlink_metadata() {
            match k {
                Kept::Dir if m.is_dir() => return Ok(()),
                _ if m.is_dir() => std::fs::remove_dir_all(&path)?,
                // Never write through what is there now: it may be a symlink
                // or a hard link to a file inside the scope.
                _ => std::fs::remove_file(&path)?,
            }
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match k {
            Kept::File { bytes, mode, .. } => {
                std::fs::write(&path, bytes)?;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode))
            }
            Kept::Dir => std::fs::create_dir(&path),
            Kept::Symlink(target) => std::os::unix::fs::symlink(target, &path),
            Kept::Other => Err(std::io::Error::other(
                "a special file was removed and cannot be recreated",
            )),
        }
    }
}

fn stamp(m: &std::fs::Metadata) -> (u64, u64, i64, i64) {
    (m.ino(), m.len(), m.ctime(), m.ctime_nsec())
}

fn same(k: &Kept, m: &std::fs::Metadata) -> bool {
    match k {
        Kept::File { stamp: s, .. } => m.is_file() && stamp(m) == *s,
        Kept::Dir => m.is_dir(),
        // A replaced symlink has a new inode; compare kinds only here and
        // let the missing/added logic handle renames.
        Kept::Symlink(_) => m.file_type().is_symlink(),
        Kept::Other => !(m.is_file() || m.is_dir() || m.file_type().is_symlink()),
    }
}

/// Normalised roots without those nested in another root.
fn outermost(roots: &[PathBuf]) -> Result<Vec<PathBuf>, GuardError> {
    let mut norm: Vec<PathBuf> = roots
        .iter()
        .map(|r| Grant::normalize_root(r))
        .collect::<Result<_, _>>()?;
    norm.sort();
    norm.dedup();
    let mut out: Vec<PathBuf> = Vec::new();
    for r in norm {
        if !out.iter().any(|o| r.starts_with(o)) {
            out.push(r);
        }
    }
    Ok(out)
}

fn rel_string(p: &Path) -> String {
    if p.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        p.to_string_lossy().into_owned()
    }
}

type Visit<'a> = dyn FnMut(&str, &Path, &std::fs::Metadata) -> Result<(), GuardError> + 'a;

/// Visit every entry below `root` without following symlinks; paths are
/// workspace-relative with `/` separators. A missing root has no entries.
fn walk(workspace: &Path, root: &Path, visit: &mut Visit<'_>) -> Result<(), GuardError> {
    let start = workspace.join(root);
    match start.symlink_metadata() {
        Ok(m) if m.is_dir() => {}
        _ => return Ok(()),
    }
    let mut stack = vec![(start, root.to_path_buf())];
    while let Some((dir, rel_dir)) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|source| GuardError::Io {
            path: dir.clone(),
            source,
        })?;
        for entry in entries {
            let entry = entry.map_err(|source| GuardError::Io {
                path: dir.clone(),
                source,
            })?;
            let path = entry.path();
            let meta = path.symlink_metadata().map_err(|source| GuardError::Io {
                path: path.clone(),
                source,
            })?;
            let rel_path = rel_dir.join(entry.file_name());
            let rel = rel_path.to_string_lossy().into_owned();
            visit(&rel, &path, &meta)?;
            if meta.is_dir() {
                stack.push((path, rel_path));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> tempfile::TempDir {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(d.path().join("src/auth")).expect("mkdir");
        std::fs::write(d.path().join("src/a.rs"), "a").expect("write");
        std::fs::write(d.path().join("src/notes.txt"), "keep me").expect("write");
        std::fs::write(d.path().join("src/auth/b.rs"), "b").expect("write");
        d
    }

    fn rs_only(rel: &str) -> bool {
        rel.ends_with(".rs")
    }

    #[test]
    fn undoes_every_change_outside_the_scope_and_keeps_the_rest() {
        let d = setup();
        let w = d.path();
        let g = WriteGuard::arm(w, &[PathBuf::from("src")], &rs_only, GuardBudget::default())
            .expect("arms");
        std::fs::write(w.join("src/a.rs"), "changed").expect("write");
        std::fs::write(w.join("src/new.rs"), "new").expect("write");
        std::fs::write(w.join("src/notes.txt"), "clobbered").expect("write");
        std::fs::write(w.join("src/evil.txt"), "x").expect("write");
        std::fs::create_dir_all(w.join("src/newdir/deeper")).expect("mkdir");
        std::fs::write(w.join("src/newdir/deeper/x.bin"), "x").expect("write");
        std::fs::create_dir_all(w.join("src/keepdir")).expect("mkdir");
        std::fs::write(w.join("src/keepdir/ok.rs"), "ok").expect("write");
        std::os::unix::fs::symlink("/etc/passwd", w.join("src/link")).expect("symlink");
        let report = g.check(&rs_only);
        assert!(report.failed.is_empty(), "{report:?}");
        assert_eq!(
            report.reverted,
            vec![
                "src/evil.txt",
                "src/link",
                "src/newdir",
                "src/newdir/deeper",
                "src/newdir/deeper/x.bin",
                "src/notes.txt"
            ]
        );
        assert_eq!(
            std::fs::read_to_string(w.join("src/a.rs")).expect("read"),
            "changed"
        );
        assert_eq!(
            std::fs::read_to_string(w.join("src/new.rs")).expect("read"),
            "new"
        );
        assert_eq!(
            std::fs::read_to_string(w.join("src/notes.txt")).expect("read"),
            "keep me"
        );
        assert!(!w.join("src/evil.txt").exists());
        assert!(!w.join("src/newdir").exists());
        assert!(w.join("src/link").symlink_metadata().is_err());
        assert!(
            w.join("src/keepdir/ok.rs").exists(),
            "allowed files in new dirs stay"
        );
    }

    #[test]
    fn restores_deleted_renamed_and_relinked_files() {
        let d = setup();
        let w = d.path();
        let g = WriteGuard::arm(w, &[PathBuf::from("src")], &rs_only, GuardBudget::default())
            .expect("arms");
        std::fs::rename(w.join("src/notes.txt"), w.join("src/notes.rs")).expect("rename");
        let report = g.check(&rs_only);
        assert_eq!(report.reverted, vec!["src/notes.txt"]);
        assert_eq!(
            std::fs::read_to_string(w.join("src/notes.txt")).expect("read"),
            "keep me"
        );

        let g = WriteGuard::arm(w, &[PathBuf::from("src")], &rs_only, GuardBudget::default())
            .expect("arms");
        std::fs::remove_file(w.join("src/notes.txt")).expect("rm");
        std::fs::hard_link(w.join("src/a.rs"), w.join("src/notes.txt")).expect("link");
        let report = g.check(&rs_only);
        assert_eq!(report.reverted, vec!["src/notes.txt"]);
        assert_eq!(
            std::fs::read_to_string(w.join("src/notes.txt")).expect("read"),
            "keep me"
        );
        assert_eq!(
            std::fs::read_to_string(w.join("src/a.rs")).expect("read"),
            "a",
            "restoring must not write through a hard link into the scope"
        );
    }

    #[test]
    fn an_untouched_tree_reports_nothing_and_budgets_hold() {
        let d = setup();
        let w = d.path();
        let g = WriteGuard::arm(
            w,
            &[PathBuf::from("src"), PathBuf::from("src/auth")],
            &rs_only,
            GuardBudget::default(),
        )
        .expect("arms");
        assert!(!g.check(&rs_only).violated());
        let tiny = GuardBudget {
            bytes: 3,
            entries: 10,
        };
        let err = WriteGuard::arm(w, &[PathBuf::from("src")], &rs_only, tiny).expect_err("over");
        assert!(err.to_string().contains("owned_scope"), "{err}");
        assert!(WriteGuard::arm(w, &[PathBuf::from("../x")], &rs_only, tiny).is_err());
    }
}
