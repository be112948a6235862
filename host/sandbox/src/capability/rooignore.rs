//! `.rooignore`, as Roo Code reads it: gitignore syntax at the workspace
//! root naming files the agent may neither read nor write. The host checks
//! every path a call declares against it before the call runs; listing and
//! search tools leave ignored files out themselves.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::dirfd::{EntryStat, Kind};
use super::{Workspace, WorkspaceId};

/// File name of the ignore list at the workspace root.
pub const ROOIGNORE: &str = ".rooignore";
/// Largest `.rooignore` read.
const MAX_ROOIGNORE: u64 = 1 << 20;

/// Most workspaces whose `.rooignore` is kept parsed (all are forgotten
/// past it).
const MAX_PARSED: usize = 256;
/// How long a `.rooignore` must have stood unchanged before its parse is
/// kept: a change within the file system's timestamp granularity of the
/// read could leave its change time, size and inode as they were (the
/// "racy git" problem); a change after this long cannot.
const SETTLED: Duration = Duration::from_secs(2);

/// The workspace's `.rooignore` patterns (none when the file is missing).
/// Cheap to clone: the parsed patterns are shared.
#[derive(Debug, Clone)]
pub struct RooIgnore {
    matcher: Option<Arc<Gitignore>>,
}

/// What identifies one version of a `.rooignore`: the file (device,
/// inode), its size and its change time, which every write moves and no
/// one can set back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    ctime: (i64, i64),
}

impl Stamp {
    /// The stamp of `st` when its parse may be kept: a regular file (a
    /// link's target could change under an unchanged link) whose last
    /// change is [`SETTLED`] in the past.
    fn keepable(st: &EntryStat, now: SystemTime) -> Option<Self> {
        if st.kind != Kind::File {
            return None;
        }
        let changed = u64::try_from(st.ctime.0).ok()?;
        let now = now.duration_since(UNIX_EPOCH).ok()?;
        (Duration::from_secs(changed).saturating_add(SETTLED) < now).then_some(Self {
            dev: st.dev,
            ino: st.ino,
            size: st.size,
            ctime: st.ctime,
        })
    }
}

/// Each workspace's `.rooignore` as last parsed, with the stamp it had: a
/// call checks it with one `stat` instead of reading and compiling the
/// patterns again (twice a call: the path gate and the sandbox).
static PARSED: LazyLock<Mutex<HashMap<WorkspaceId, (Stamp, RooIgnore)>>> =
    LazyLock::new(Mutex::default);

fn parsed() -> MutexGuard<'static, HashMap<WorkspaceId, (Stamp, RooIgnore)>> {
    // At worst a `.rooignore` is parsed again.
    PARSED.lock().unwrap_or_else(|p| p.into_inner())
}

impl RooIgnore {
    /// Read `workspace/.rooignore` through the workspace layer (a regular
    /// file inside the workspace, at most 1 MiB). Lines that do not parse
    /// are skipped with a warning, so one typo cannot switch the whole list
    /// off; a `.rooignore` that cannot be read safely (a FIFO, a device, a
    /// link out of the workspace) is reported and holds no patterns.
    pub fn load(workspace: &Path) -> Self {
        let none = Self { matcher: None };
        let ws = match Workspace::open(workspace) {
            Ok(ws) => ws,
            Err(e) => {
                tracing::warn!(".rooignore not read: {e}");
                return none;
            }
        };
        Self::load_in(&ws)
    }

    /// [`RooIgnore::load`] on an open workspace. A `.rooignore` that is a
    /// regular file unchanged since it was last parsed (same inode, size
    /// and change time, settled before that parse) is not read again; a
    /// view that knows the workspace has none looks nothing up.
    pub fn load_in(ws: &Workspace) -> Self {
        Self::load_in_at(ws, SystemTime::now())
    }

    /// [`RooIgnore::load_in`] with the clock reading `now`.
    fn load_in_at(ws: &Workspace, now: SystemTime) -> Self {
        let stamp = match ws.top_entry(ROOIGNORE) {
            Ok(None) => return Self { matcher: None },
            Ok(Some(st)) => Stamp::keepable(&st, now),
            // The read says why.
            Err(_) => None,
        };
        if let Some(stamp) = stamp
            && let Some((kept, ignore)) = parsed().get(&ws.id())
            && *kept == stamp
        {
            return ignore.clone();
        }
        let ignore = Self::read_in(ws);
        if let Some(stamp) = stamp {
            let mut all = parsed();
            if all.len() >= MAX_PARSED {
                all.clear();
            }
            all.insert(ws.id(), (stamp, ignore.clone()));
        }
        ignore
    }

    /// Read and parse `.rooignore` through `ws`.
    fn read_in(ws: &Workspace) -> Self {
        let text = match ws.read_text(ROOIGNORE, MAX_ROOIGNORE) {
            Ok(Some(t)) => t,
            Ok(None) => return Self { matcher: None },
            Err(e) => {
                tracing::warn!(".rooignore not read: {e}");
                return Self { matcher: None };
            }
        };
        let path = ws.host_path().join(ROOIGNORE);
        let mut b = GitignoreBuilder::new(ws.host_path());
        for line in text.lines() {
            if let Err(e) = b.add_line(Some(path.clone()), line) {
                tracing::warn!(file = %path.display(), "skipping .rooignore line {line:?}: {e}");
            }
        }
        match b.build() {
            Ok(m) => Self {
                matcher: Some(Arc::new(m)),
            },
            Err(e) => {
                tracing::warn!(file = %path.display(), ".rooignore unusable: {e}");
                Self { matcher: None }
            }
        }
    }

    /// Whether there is nothing to hide (no `.rooignore`, or no pattern).
    pub fn is_empty(&self) -> bool {
        self.matcher.as_ref().is_none_or(|m| m.is_empty())
    }

    /// Whether the workspace-relative `rel` (or a directory above it) is
    /// ignored. `rel` must already be normalised ([`Workspace::normalize`]);
    /// callers check the resolved path too ([`Workspace::resolve`]).
    pub fn blocks(&self, rel: &str) -> bool {
        let Some(m) = &self.matcher else {
            return false;
        };
        let rel = rel.trim().trim_start_matches("./").trim_end_matches('/');
        // Not normalised: no answer (a name with `..` inside, `a..b`, is
        // a name like any other).
        if rel.is_empty() || rel == "." || rel.starts_with('/') || rel.split('/').any(|c| c == "..")
        {
            return false;
        }
        m.matched_path_or_any_parents(rel, false).is_ignore()
    }

    /// Roo's message for a blocked path.
    pub fn message(rel: &str) -> String {
        format!(
            "Access to {rel} is blocked by the .rooignore file settings. You must try to continue in the task \
             without using this file, or ask the user to update the .rooignore file."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_files_dirs_and_negations() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            d.path().join(".rooignore"),
            "secrets/\n*.key\n!public.key\n[bad\n",
        )
        .expect("write");
        let r = RooIgnore::load(d.path());
        assert!(r.blocks("secrets/a.txt"));
        assert!(r.blocks("./secrets/deep/b.txt"));
        assert!(r.blocks("conf/server.key"));
        assert!(!r.blocks("public.key"));
        assert!(!r.blocks("src/main.rs"));
        // A name with `..` inside it is matched like any other (found by
        // the capability properties: `secret..key` escaped `*.key`).
        assert!(r.blocks("conf/secret..key"));
        assert!(r.blocks("secrets/a..b/c.txt"));
        assert!(!r.blocks("secrets/../src/main.rs"));
        assert!(!RooIgnore::load(&d.path().join("missing")).blocks("secrets/a.txt"));
    }

    fn same(a: &RooIgnore, b: &RooIgnore) -> bool {
        match (&a.matcher, &b.matcher) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// A `.rooignore` written just now is read again at each load: a
    /// rewrite of the same size within the file system's timestamp
    /// granularity is seen, though it may leave the stamp as it was.
    #[test]
    fn a_rooignore_changed_just_now_is_read_again() {
        let d = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::open(d.path()).expect("workspace");
        std::fs::write(d.path().join(ROOIGNORE), "secrets/\n").expect("write");
        let first = RooIgnore::load_in(&ws);
        assert!(first.blocks("secrets/a") && !first.blocks("private/a"));
        std::fs::write(d.path().join(ROOIGNORE), "private/\n").expect("rewrite");
        let second = RooIgnore::load_in(&ws);
        assert!(second.blocks("private/a") && !second.blocks("secrets/a"));
        assert!(!same(&first, &second));
    }

    /// A settled `.rooignore` is parsed once; a new file put in its place,
    /// its removal, or a link in its place is seen at the next load.
    #[test]
    fn a_settled_rooignore_is_kept_until_it_changes() {
        let later = SystemTime::now() + Duration::from_secs(60);
        let d = tempfile::tempdir().expect("tempdir");
        let ws = Workspace::open(d.path()).expect("workspace");
        std::fs::write(d.path().join(ROOIGNORE), "secrets/\n").expect("write");
        let first = RooIgnore::load_in_at(&ws, later);
        assert!(first.blocks("secrets/a"));
        assert!(same(&first, &RooIgnore::load_in_at(&ws, later)), "kept");
        // Another file renamed into place: another inode.
        std::fs::write(d.path().join("next"), "private/\n").expect("write");
        std::fs::rename(d.path().join("next"), d.path().join(ROOIGNORE)).expect("rename");
        let renamed = RooIgnore::load_in_at(&ws, later);
        assert!(renamed.blocks("private/a") && !renamed.blocks("secrets/a"));
        std::fs::remove_file(d.path().join(ROOIGNORE)).expect("remove");
        assert!(RooIgnore::load_in_at(&ws, later).is_empty());
        // A link is never kept: its target could change under it.
        std::fs::write(d.path().join("target.txt"), "linked/\n").expect("write");
        std::os::unix::fs::symlink("target.txt", d.path().join(ROOIGNORE)).expect("link");
        let linked = RooIgnore::load_in_at(&ws, later);
        assert!(linked.blocks("linked/a"));
        assert!(
            !same(&linked, &RooIgnore::load_in_at(&ws, later)),
            "a link is read again"
        );
    }
}
