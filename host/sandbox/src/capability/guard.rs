//! Scopes finer than a directory, and authority files under a write root.
//! WASI preopens are whole directories, so the write root granted for the
//! glob `src/*.rs` would let a plugin write `src/notes.txt` as well, and the
//! root `.` would let it write `.git/config`. A [`WriteGuard`] is armed
//! before such a call: it records every entry under the write roots that
//! the rule does not allow (with the bytes of files, so they can be put
//! back). Checked after the call, it undoes every change to those paths
//! (new entries removed, changed or deleted ones restored) and reports
//! exactly what it undid, so no write outside the rule persists.
//!
//! The guard works only through directory handles ([`DirFd`]): it never
//! follows a symlink while recording, checking or restoring; a symlink or
//! special file swapped in where a directory or file was is a change to
//! remove. Its walk is bounded in depth, entries, bytes and time, and it
//! refuses to arm when it could not guarantee the restore.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::dirfd::{DirFd, EntryStat, Kind};
use super::workspace::{RelPath, Workspace, WorkspaceError};
use super::{Grant, authority};

/// How much a guard may keep and walk; a scope whose write roots hold more
/// than this outside the scope cannot be guarded, and the call is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GuardBudget {
    /// Total bytes of files outside the scope kept for restoring.
    pub bytes: u64,
    /// Entries recorded.
    pub entries: usize,
    /// Directory depth below a write root.
    pub depth: usize,
    /// Wall-clock time the recording walk may take.
    pub time: Duration,
    /// Wall-clock time undoing a call's changes may take before the call
    /// is reported as having cost the host too much. Undoing never stops
    /// early: everything is still put back.
    pub cleanup: Duration,
}

impl Default for GuardBudget {
    fn default() -> Self {
        Self {
            bytes: 256 << 20,
            entries: 200_000,
            depth: 128,
            time: Duration::from_secs(10),
            cleanup: Duration::from_secs(10),
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
        /// Workspace-relative path.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A write root is not a plain workspace directory.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// A write root is not a plain workspace-relative path.
    #[error(transparent)]
    Grant(#[from] super::GrantError),
}

/// What a guarded call may change, and where the walk must look.
pub struct GuardRule<'a> {
    /// Whether the call may change this workspace-relative path.
    pub allows: &'a (dyn Fn(&str) -> bool + Sync + 'a),
    /// Whether the directory `rel` may hold paths `allows` rejects; when it
    /// cannot, the walk skips it (a scope covering a whole root only needs
    /// its authority directories watched).
    pub watch_dir: &'a (dyn Fn(&str) -> bool + Sync + 'a),
}

/// An entry outside the scope as it was before the call.
#[derive(Debug)]
enum Kept {
    /// A file with its bytes, or only its stamp where the bytes are not
    /// kept (git's object store).
    File {
        bytes: Option<Vec<u8>>,
        st: EntryStat,
    },
    Dir {
        st: EntryStat,
    },
    Symlink {
        target: PathBuf,
        st: EntryStat,
    },
    /// Sockets, fifos, devices: recorded so their removal is noticed.
    Other {
        st: EntryStat,
    },
}

impl Kept {
    fn unchanged(&self, now: &EntryStat) -> bool {
        let same_inode = |st: &EntryStat| {
            st.ino == now.ino && st.dev == now.dev && st.size == now.size && st.ctime == now.ctime
        };
        match self {
            Kept::File { st, .. } => now.kind == Kind::File && same_inode(st),
            Kept::Dir { .. } => now.kind == Kind::Dir,
            Kept::Symlink { st, .. } => now.kind == Kind::Symlink && same_inode(st),
            Kept::Other { st } => now.kind == Kind::Special && same_inode(st),
        }
    }
}

/// What a checked guard found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GuardReport {
    /// Workspace-relative paths outside the scope whose change was undone.
    pub reverted: Vec<String>,
    /// Paths whose change could not be undone, with why.
    pub failed: Vec<(String, String)>,
    /// How long undoing took, when that was longer than the budget's
    /// `cleanup` (everything was still undone): the call cost the host
    /// more than it may, and is reported so.
    pub overran: Option<Duration>,
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
    ws: Workspace,
    roots: Vec<RelPath>,
    kept: BTreeMap<RelPath, Kept>,
    budget: GuardBudget,
}

/// One step of a walk: an entry, its path, what it is (as the directory
/// listing says), the directory it is in and that directory's depth below
/// the root.
struct Visit<'a> {
    rel: &'a RelPath,
    name: &'a str,
    kind: Kind,
    dir: &'a DirFd,
    depth: usize,
}

impl WriteGuard {
    /// Record the entries under `roots` (workspace-relative directories)
    /// that `rule` does not allow.
    pub fn arm(
        ws: &Workspace,
        roots: &[PathBuf],
        rule: &GuardRule<'_>,
        budget: GuardBudget,
    ) -> Result<Self, GuardError> {
        let roots = outermost(roots)?;
        let started = Instant::now();
        let mut kept = BTreeMap::new();
        let mut bytes = 0u64;
        for root in &roots {
            let root_name = root.as_string();
            let mut over: Option<String> = None;
            let res = walk(
                ws,
                root,
                rule,
                budget.depth,
                &mut |v: Visit<'_>| {
                    if over.is_some() {
                        return Ok(false);
                    }
                    if started.elapsed() > budget.time {
                        over = Some(format!("what can be recorded in {:?}", budget.time));
                        return Ok(false);
                    }
                    if (rule.allows)(v.name) {
                        return Ok(true);
                    }
                    let st = v.dir.stat(last(v.rel)).map_err(|source| GuardError::Io {
                        path: v.name.to_owned(),
                        source,
                    })?;
                    let st = &st;
                    let entry = match st.kind {
                        Kind::Symlink => Kept::Symlink {
                            target: v.dir.readlink(last(v.rel)).map_err(|source| {
                                GuardError::Io {
                                    path: v.name.to_owned(),
                                    source,
                                }
                            })?,
                            st: *st,
                        },
                        Kind::Dir => Kept::Dir { st: *st },
                        Kind::File if authority::content_kept(v.name) => {
                            bytes = bytes.saturating_add(st.size);
                            if bytes > budget.bytes {
                                over = Some(format!("{} MiB of files", budget.bytes >> 20));
                                return Ok(false);
                            }
                            let content =
                                v.dir.read(last(v.rel), budget.bytes).map_err(|source| {
                                    GuardError::Io {
                                        path: v.name.to_owned(),
                                        source,
                                    }
                                })?;
                            Kept::File {
                                bytes: Some(content),
                                st: *st,
                            }
                        }
                        Kind::File => Kept::File {
                            bytes: None,
                            st: *st,
                        },
                        Kind::Special => Kept::Other { st: *st },
                    };
                    kept.insert(v.rel.clone(), entry);
                    if kept.len() > budget.entries {
                        over = Some(format!("{} entries", budget.entries));
                    }
                    Ok(true)
                },
                &mut |_, _| Err(WalkError::TooDeep),
            );
            match res {
                Ok(()) => {}
                Err(WalkError::TooDeep) => {
                    over = Some(format!("{} directory levels", budget.depth));
                }
                Err(WalkError::Guard(e)) => return Err(e),
            }
            if let Some(limit) = over {
                return Err(GuardError::TooLarge {
                    root: root_name,
                    limit,
                });
            }
        }
        Ok(Self {
            ws: ws.clone(),
            roots,
            kept,
            budget,
        })
    }

    /// Undo every change to a path outside the scope and report them.
    /// What the call created is removed as the walk finds it, through the
    /// handle of the directory it is in (so at any depth and whatever the
    /// length of its path), reading each directory once; what it changed or
    /// deleted is put back after the walk.
    pub fn check(self, rule: &GuardRule<'_>) -> GuardReport {
        let started = Instant::now();
        let mut report = GuardReport::default();
        let mut seen = BTreeSet::new();
        let mut changed: Vec<RelPath> = Vec::new();
        let mut deep = GuardReport::default();
        for root in &self.roots {
            let res = walk(
                &self.ws,
                root,
                rule,
                self.budget.depth,
                &mut |v: Visit<'_>| {
                    if (rule.allows)(v.name) {
                        return Ok(true);
                    }
                    let Some(k) = self.kept.get(v.rel) else {
                        // New: nothing the guard kept is below it.
                        let mut rel = v.name.to_owned();
                        self.purge(
                            v.dir,
                            last(v.rel),
                            &mut rel,
                            v.kind,
                            v.depth,
                            rule,
                            &mut report,
                        );
                        return Ok(false);
                    };
                    seen.insert(v.rel.clone());
                    match v.dir.stat(last(v.rel)) {
                        Ok(st) if k.unchanged(&st) => {}
                        _ => changed.push(v.rel.clone()),
                    }
                    Ok(true)
                },
                &mut |dir, rel| {
                    // Below the depth limit nothing was there when the guard
                    // was armed: everything there is new, and removed whole.
                    let mut path = rel.as_string();
                    self.sweep_all(dir, &mut path, &mut deep);
                    Ok(())
                },
            );
            match res {
                Ok(()) | Err(WalkError::TooDeep) => {}
                Err(WalkError::Guard(e)) => report.failed.push((root.as_string(), e.to_string())),
            }
        }
        report.reverted.append(&mut deep.reverted);
        report.failed.append(&mut deep.failed);
        let missing: Vec<RelPath> = self
            .kept
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        // Parents before children when putting things back.
        let mut restore: Vec<RelPath> = changed.into_iter().chain(missing).collect();
        restore.sort();
        restore.dedup();
        for rel in restore {
            let Some(k) = self.kept.get(&rel) else {
                continue;
            };
            match self.restore(&rel, k, &mut report) {
                Ok(()) => report.reverted.push(rel.as_string()),
                Err(e) => report
                    .failed
                    .push((rel.as_string(), format!("cannot restore: {e}"))),
            }
        }
        report.reverted.sort();
        report.reverted.dedup();
        let took = started.elapsed();
        if took > self.budget.cleanup {
            report.overran = Some(took);
        }
        report
    }

    /// Remove the new entry `name` of `parent` (at `rel`, in a directory
    /// `depth` levels below its root) and what is below it, except what
    /// the rule allows: a new directory holding allowed entries stays, as
    /// their container. Returns whether it is gone.
    #[allow(clippy::too_many_arguments)]
    fn purge(
        &self,
        parent: &DirFd,
        name: &std::ffi::OsStr,
        rel: &mut String,
        kind: Kind,
        depth: usize,
        rule: &GuardRule<'_>,
        report: &mut GuardReport,
    ) -> bool {
        if kind != Kind::Dir {
            return match parent.remove_file(name) {
                Ok(()) => {
                    report.reverted.push(rel.clone());
                    true
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
                Err(e) => {
                    report
                        .failed
                        .push((rel.clone(), format!("cannot remove: {e}")));
                    false
                }
            };
        }
        if depth + 1 >= self.budget.depth {
            // Past the depth limit: nothing was there when the guard was
            // armed, so it all goes, allowed or not.
            return match parent.remove_tree(name) {
                Ok(n) => {
                    report.reverted.push(if n > 1 {
                        format!(
                            "{rel} (and {} entries below the guard's depth limit)",
                            n - 1
                        )
                    } else {
                        rel.clone()
                    });
                    true
                }
                Err(e) => {
                    report
                        .failed
                        .push((rel.clone(), format!("cannot remove: {e}")));
                    false
                }
            };
        }
        let dir = match parent.open_dir(name) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
            Err(e) => {
                report
                    .failed
                    .push((rel.clone(), format!("cannot open to remove: {e}")));
                return false;
            }
        };
        if !self.sweep(&dir, rel, depth + 1, rule, report) {
            return false;
        }
        drop(dir);
        match parent.remove_dir(name) {
            Ok(()) => {
                report.reverted.push(rel.clone());
                true
            }
            Err(e) => {
                report
                    .failed
                    .push((rel.clone(), format!("cannot remove: {e}")));
                false
            }
        }
    }

    /// Remove from `dir` (at `rel`, `depth` levels below its root)
    /// everything the rule does not allow; allowed directories are swept
    /// too. Returns whether `dir` is now empty.
    fn sweep(
        &self,
        dir: &DirFd,
        rel: &mut String,
        depth: usize,
        rule: &GuardRule<'_>,
        report: &mut GuardReport,
    ) -> bool {
        let names = match dir.names() {
            Ok(n) => n,
            Err(e) => {
                report
                    .failed
                    .push((rel.clone(), format!("cannot list to remove: {e}")));
                return false;
            }
        };
        let mut empty = true;
        for (child, kind) in names {
            let len = rel.len();
            rel.push('/');
            rel.push_str(&child.to_string_lossy());
            if (rule.allows)(rel) {
                empty = false;
                if kind == Kind::Dir && (rule.watch_dir)(rel) {
                    if depth + 1 >= self.budget.depth {
                        if let Ok(sub) = dir.open_dir(&child) {
                            self.sweep_all(&sub, rel, report);
                        }
                    } else if let Ok(sub) = dir.open_dir(&child) {
                        self.sweep(&sub, rel, depth + 1, rule, report);
                    }
                }
            } else if !self.purge(dir, &child, rel, kind, depth, rule, report) {
                empty = false;
            }
            rel.truncate(len);
        }
        empty
    }

    /// Remove everything in `dir` (at `rel`), which lies past the depth
    /// limit, whole.
    fn sweep_all(&self, dir: &DirFd, rel: &mut String, report: &mut GuardReport) {
        let res = dir.names().and_then(|names| {
            let mut n = 0usize;
            for (name, _) in names {
                n += dir.remove_tree(&name)?;
            }
            Ok(n)
        });
        match res {
            Ok(0) => {}
            Ok(n) => report.reverted.push(format!(
                "{rel}/* ({n} entries below the guard's depth limit)"
            )),
            Err(e) => report
                .failed
                .push((rel.clone(), format!("cannot remove: {e}"))),
        }
    }

    /// Put `rel` back as it was. Every ancestor is made a real directory
    /// first (a symlink or file swapped in on the way is removed), and
    /// whatever is at `rel` now is removed, never written through.
    fn restore(&self, rel: &RelPath, k: &Kept, report: &mut GuardReport) -> std::io::Result<()> {
        let parts = rel.parts();
        let Some((name, ancestors)) = parts.split_last() else {
            return Ok(());
        };
        let mut dir = self.ws.root().try_clone()?;
        let mut sofar = RelPath::root();
        for c in ancestors {
            sofar = sofar.join(c);
            match dir.stat_opt(c)? {
                Some(st) if st.kind == Kind::Dir => {}
                Some(_) => {
                    dir.remove_tree(c)?;
                    dir.mkdir(c, 0o755)?;
                    report.reverted.push(sofar.as_string());
                }
                None => dir.mkdir(c, 0o755)?,
            }
            dir = dir.open_dir(c)?;
        }
        if let Some(now) = dir.stat_opt(name)? {
            if matches!(k, Kept::Dir { .. }) && now.kind == Kind::Dir {
                return Ok(());
            }
            dir.remove_tree(name)?;
        }
        match k {
            Kept::File {
                bytes: Some(bytes),
                st,
            } => dir.create_file(name, bytes, st.mode),
            Kept::File { bytes: None, .. } => Err(std::io::Error::other(
                "git's object store is not copied by the guard; run `git fsck` and restore the object",
            )),
            Kept::Dir { st } => dir.mkdir(name, st.mode),
            Kept::Symlink { target, .. } => dir.symlink(target, name),
            Kept::Other { .. } => Err(std::io::Error::other(
                "a special file was removed and cannot be recreated",
            )),
        }
    }
}

fn last(rel: &RelPath) -> &std::ffi::OsStr {
    rel.parts().last().copied().unwrap_or_default()
}

/// Normalised roots without those nested in another root.
fn outermost(roots: &[PathBuf]) -> Result<Vec<RelPath>, GuardError> {
    let mut norm: Vec<RelPath> = Vec::new();
    for r in roots {
        let p = Grant::normalize_root(r)?;
        norm.push(RelPath::parse(&p.to_string_lossy())?);
    }
    norm.sort();
    norm.dedup();
    let mut out: Vec<RelPath> = Vec::new();
    for r in norm {
        if !out.iter().any(|o| r.starts_with(o)) {
            out.push(r);
        }
    }
    Ok(out)
}

enum WalkError {
    TooDeep,
    Guard(GuardError),
}

impl From<GuardError> for WalkError {
    fn from(e: GuardError) -> Self {
        Self::Guard(e)
    }
}

/// Visit every entry below `root` through directory handles, never
/// following a symlink. `visit` returns whether to go on into a directory;
/// `too_deep` gets each directory at the depth limit instead of its entries.
/// A root that is missing has no entries; one that is not a plain
/// directory (a symlink swapped in) is an error.
fn walk(
    ws: &Workspace,
    root: &RelPath,
    rule: &GuardRule<'_>,
    max_depth: usize,
    visit: &mut dyn FnMut(Visit<'_>) -> Result<bool, GuardError>,
    too_deep: &mut dyn FnMut(&DirFd, &RelPath) -> Result<(), WalkError>,
) -> Result<(), WalkError> {
    let start = match ws.dir(root) {
        Ok(d) => d,
        Err(e) if e.is_not_found() => return Ok(()),
        Err(e) => return Err(WalkError::Guard(e.into())),
    };
    let mut stack: Vec<(DirFd, RelPath, usize)> = vec![(start, root.clone(), 0)];
    while let Some((dir, rel_dir, depth)) = stack.pop() {
        let mut names = dir.names().map_err(|source| GuardError::Io {
            path: rel_dir.as_string(),
            source,
        })?;
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in names {
            let rel = rel_dir.join(&name);
            let rel_s = rel.as_string();
            let go_on = visit(Visit {
                rel: &rel,
                name: &rel_s,
                kind,
                dir: &dir,
                depth,
            })?;
            if go_on && kind == Kind::Dir && (rule.watch_dir)(&rel_s) {
                let sub = match dir.open_dir(&name) {
                    Ok(d) => d,
                    // Gone, or swapped for something else since the listing.
                    Err(e)
                        if e.kind() == std::io::ErrorKind::NotFound
                            || e.raw_os_error()
                                == Some(rustix::io::Errno::NOTDIR.raw_os_error())
                            || e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) =>
                    {
                        continue;
                    }
                    Err(source) => {
                        return Err(WalkError::Guard(GuardError::Io {
                            path: rel_s.clone(),
                            source,
                        }));
                    }
                };
                if depth + 1 >= max_depth {
                    too_deep(&sub, &rel)?;
                    continue;
                }
                stack.push((sub, rel, depth + 1));
            }
        }
    }
    Ok(())
}

/// A rule for `allows`, watching every directory.
pub fn rule(allows: &(dyn Fn(&str) -> bool + Sync)) -> GuardRule<'_> {
    GuardRule {
        allows,
        watch_dir: &|_| true,
    }
}

/// Whether a guard over the workspace-relative root `root` must watch the
/// directory `dir` when the scope allows everything under the root except
/// authority files.
pub fn watch_authority_only(dir: &str) -> bool {
    authority::is_authority(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Workspace) {
        let d = tempfile::tempdir().expect("tempdir");
        let w = d.path().join("ws");
        std::fs::create_dir_all(w.join("src/auth")).expect("mkdir");
        std::fs::write(w.join("src/a.rs"), "a").expect("write");
        std::fs::write(w.join("src/notes.txt"), "keep me").expect("write");
        std::fs::write(w.join("src/auth/b.rs"), "b").expect("write");
        std::fs::create_dir_all(d.path().join("canary")).expect("mkdir");
        std::fs::write(d.path().join("canary/c.txt"), "canary").expect("write");
        let ws = Workspace::open(&w).expect("ws");
        (d, ws)
    }

    fn rs_only(rel: &str) -> bool {
        rel.ends_with(".rs")
    }

    #[test]
    fn undoes_every_change_outside_the_scope_and_keeps_the_rest() {
        let (_d, ws) = setup();
        let w = ws.host_path().to_path_buf();
        let r = rule(&rs_only);
        let g = WriteGuard::arm(&ws, &[PathBuf::from("src")], &r, GuardBudget::default())
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
        let report = g.check(&r);
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
        let (_d, ws) = setup();
        let w = ws.host_path().to_path_buf();
        let r = rule(&rs_only);
        let g = WriteGuard::arm(&ws, &[PathBuf::from("src")], &r, GuardBudget::default())
            .expect("arms");
        std::fs::rename(w.join("src/notes.txt"), w.join("src/notes.rs")).expect("rename");
        let report = g.check(&r);
        assert_eq!(report.reverted, vec!["src/notes.txt"]);
        assert_eq!(
            std::fs::read_to_string(w.join("src/notes.txt")).expect("read"),
            "keep me"
        );

        let g = WriteGuard::arm(&ws, &[PathBuf::from("src")], &r, GuardBudget::default())
            .expect("arms");
        std::fs::remove_file(w.join("src/notes.txt")).expect("rm");
        std::fs::hard_link(w.join("src/a.rs"), w.join("src/notes.txt")).expect("link");
        let report = g.check(&r);
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

    /// The red team's swap: a directory holding out-of-scope files replaced
    /// by a symlink to a directory outside the workspace. Restoring must
    /// remove the link and never create or delete anything through it.
    #[test]
    fn a_directory_swapped_for_a_symlink_is_put_back_without_following_it() {
        let (d, ws) = setup();
        let w = ws.host_path().to_path_buf();
        // Scope: `src/auth` itself may change, its files may not.
        let allows = |rel: &str| rel == "src/auth";
        let r = rule(&allows);
        let g = WriteGuard::arm(&ws, &[PathBuf::from("src")], &r, GuardBudget::default())
            .expect("arms");
        std::fs::rename(w.join("src/auth"), w.join("src/moved")).expect("rename");
        std::os::unix::fs::symlink(d.path().join("canary"), w.join("src/auth")).expect("symlink");
        let report = g.check(&r);
        assert!(report.failed.is_empty(), "{report:?}");
        assert!(
            report.reverted.contains(&"src/auth/b.rs".to_owned()),
            "{report:?}"
        );
        assert!(
            report.reverted.contains(&"src/moved".to_owned()),
            "{report:?}"
        );
        assert!(w.join("src/auth").symlink_metadata().expect("dir").is_dir());
        assert_eq!(
            std::fs::read_to_string(w.join("src/auth/b.rs")).expect("read"),
            "b"
        );
        let canary: Vec<_> = std::fs::read_dir(d.path().join("canary"))
            .expect("canary")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(
            canary,
            vec![std::ffi::OsString::from("c.txt")],
            "nothing written outside"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("canary/c.txt")).expect("read"),
            "canary"
        );
    }

    #[test]
    fn deep_trees_and_budgets() {
        let (_d, ws) = setup();
        let w = ws.host_path().to_path_buf();
        let r = rule(&rs_only);
        let g = WriteGuard::arm(
            &ws,
            &[PathBuf::from("src"), PathBuf::from("src/auth")],
            &r,
            GuardBudget::default(),
        )
        .expect("arms");
        assert!(!g.check(&r).violated());
        let tiny = GuardBudget {
            bytes: 3,
            entries: 10,
            ..GuardBudget::default()
        };
        let err = WriteGuard::arm(&ws, &[PathBuf::from("src")], &r, tiny).expect_err("over");
        assert!(err.to_string().contains("owned_scope"), "{err}");
        assert!(WriteGuard::arm(&ws, &[PathBuf::from("../x")], &r, tiny).is_err());

        // A chain deeper than the budget cannot be guarded: refused.
        let shallow = GuardBudget {
            depth: 4,
            ..GuardBudget::default()
        };
        std::fs::create_dir_all(w.join("src/d1/d2/d3/d4/d5")).expect("mkdir");
        let err = WriteGuard::arm(&ws, &[PathBuf::from("src")], &r, shallow).expect_err("deep");
        assert!(err.to_string().contains("directory levels"), "{err}");
        std::fs::remove_dir_all(w.join("src/d1")).expect("rm");

        // A chain the call creates past the depth limit (and past PATH_MAX)
        // is removed whole.
        let g = WriteGuard::arm(&ws, &[PathBuf::from("src")], &r, GuardBudget::default())
            .expect("arms");
        let top = DirFd::open_ambient(&w.join("src")).expect("open");
        top.mkdir(std::ffi::OsStr::new("deep"), 0o755)
            .expect("mkdir");
        let mut cur = top.open_dir(std::ffi::OsStr::new("deep")).expect("open");
        for _ in 0..2100 {
            cur.mkdir(std::ffi::OsStr::new("d"), 0o755).expect("mkdir");
            cur = cur.open_dir(std::ffi::OsStr::new("d")).expect("open");
        }
        cur.create_file(std::ffi::OsStr::new("x.txt"), b"x", 0o644)
            .expect("file");
        let report = g.check(&r);
        assert!(report.failed.is_empty(), "{report:?}");
        assert!(!w.join("src/deep").exists(), "{report:?}");
    }

    #[test]
    fn authority_files_under_a_covered_root_are_restored() {
        let (_d, ws) = setup();
        let w = ws.host_path().to_path_buf();
        std::fs::create_dir_all(w.join(".git/hooks")).expect("mkdir");
        std::fs::create_dir_all(w.join(".git/objects/ab")).expect("mkdir");
        std::fs::write(w.join(".git/config"), "[core]\n").expect("write");
        std::fs::write(w.join(".git/objects/ab/cd"), "obj").expect("write");
        std::fs::create_dir_all(w.join(".orchestration")).expect("mkdir");
        std::fs::write(w.join(".orchestration/active_intents.yaml"), "x").expect("write");
        let allows = |rel: &str| !authority::is_authority(rel);
        let r = GuardRule {
            allows: &allows,
            watch_dir: &watch_authority_only,
        };
        let g =
            WriteGuard::arm(&ws, &[PathBuf::from(".")], &r, GuardBudget::default()).expect("arms");
        std::fs::write(w.join(".git/config"), "[core]\nfsmonitor = evil\n").expect("write");
        std::fs::write(w.join(".git/hooks/post-checkout"), "#!/bin/sh\nevil\n").expect("write");
        std::fs::write(w.join(".orchestration/active_intents.yaml"), "widened").expect("write");
        std::fs::write(w.join("src/fine.rs"), "ok").expect("write");
        std::fs::write(w.join(".git/objects/ab/new"), "new").expect("write");
        let report = g.check(&r);
        assert!(report.failed.is_empty(), "{report:?}");
        assert_eq!(
            report.reverted,
            vec![
                ".git/config",
                ".git/hooks/post-checkout",
                ".git/objects/ab/new",
                ".orchestration/active_intents.yaml"
            ]
        );
        assert_eq!(
            std::fs::read_to_string(w.join(".git/config")).expect("read"),
            "[core]\n"
        );
        assert!(w.join("src/fine.rs").exists());
    }
}
