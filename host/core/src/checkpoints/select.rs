//! What a snapshot holds, decided by Roost before git runs: the
//! workspace is walked through its directory handles (no symlink
//! followed, no special file opened), each directory's `.gitignore` is
//! read the same way — a regular file or nothing; a FIFO, socket, device
//! or symlink there is left out, as git ≥ 2.32 leaves out a linked one —
//! and judged as git judges it (the deepest matching file decides, the
//! last matching line in it; an ignored directory is not entered). Then
//! Roost's own exclusions, which no `.gitignore` can undo because they
//! are not patterns among git's but a veto after them: `.git` anywhere,
//! `.orchestration/` at the top, what `.rooignore` hides, files over
//! [`MAX_FILE_BYTES`], special files, and names that are not UTF-8. Git is
//! then handed exactly the files that remain
//! ([`super::shadow::Shadow::stage`]), so it never walks the workspace and
//! never reads a `.gitignore` itself.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use roost_sandbox::capability::dirfd::{DirFd, EntryStat, Kind};
use roost_sandbox::capability::{RelPath, RooIgnore, Workspace, WorkspaceError};

/// Largest file a snapshot keeps; larger ones are left as they are.
pub const MAX_FILE_BYTES: u64 = 32 << 20;

/// The most entries a walk looks at: a larger workspace gets no
/// checkpoint (said plainly) rather than a partial one a restore would
/// misread as deletions.
pub const MAX_ENTRIES: usize = 500_000;

/// Largest `.gitignore` read; a larger one is left out (with a warning).
const MAX_GITIGNORE: u64 = 4 << 20;

/// Deeper than any real tree: a loop of bind mounts, not a project.
const MAX_DEPTH: usize = 256;

/// Why the workspace could not be walked.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The walk failed.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// Over the entry budget.
    #[error(
        "the workspace holds more than {MAX_ENTRIES} files and directories (not counting what .gitignore \
         leaves out); checkpoints are not taken of a tree that large"
    )]
    TooLarge,
    /// A walker panicked: no snapshot rather than one missing what it had
    /// still to walk.
    #[error("the walk of the workspace failed (a walker panicked)")]
    Panicked,
}

/// The files a snapshot holds, by workspace-relative path.
#[derive(Debug, Default)]
pub struct Selection {
    /// What git is handed: regular files Roost could open for reading,
    /// and symbolic links (whose target text is what is kept), each with
    /// what the walk found of it (so a file whose index entry records
    /// exactly that is not handed to git to look at again).
    pub files: BTreeMap<String, EntryStat>,
    /// Regular files Roost may keep but cannot read now (permissions): a
    /// snapshot keeps what it held of them, as `git add --ignore-errors`
    /// would.
    pub unreadable: BTreeSet<String>,
}

/// Roost's own exclusions, which hold whatever a `.gitignore` says.
pub struct Exclusions {
    rooignore: RooIgnore,
}

impl Exclusions {
    /// The exclusions of `ws` now (its `.rooignore` read through the
    /// workspace layer, as every gate of Roost reads it).
    pub fn of(ws: &Workspace) -> Self {
        Self {
            rooignore: RooIgnore::load_in(ws),
        }
    }

    /// Whether the workspace-relative `rel` is never part of a snapshot
    /// (nor written by a restore): inside `.git` at any depth or
    /// `.orchestration/` at the top, or hidden by `.rooignore` (itself or
    /// a directory above it).
    pub fn excludes(&self, rel: &str) -> bool {
        rel.split('/').any(|c| c == ".git")
            || rel.split('/').next() == Some(crate::intents::ORCHESTRATION_DIR)
            || self.rooignore.blocks(rel)
    }
}

/// One directory's `.gitignore`, matched against paths relative to it.
struct Level {
    /// Workspace-relative directory with a trailing `/` (`""` at the top).
    base: String,
    matcher: Gitignore,
}

/// Whether git's ignore rules leave `rel` out: the deepest `.gitignore`
/// with a matching line decides.
fn gitignored(levels: &[Arc<Level>], rel: &str, is_dir: bool) -> bool {
    for level in levels.iter().rev() {
        let Some(inner) = rel.strip_prefix(level.base.as_str()) else {
            continue;
        };
        match level.matcher.matched(inner, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

/// The `.gitignore` in `dir` (workspace-relative `base`), read as a
/// regular file through the handle; anything else there is left out.
fn level_of(dir: &DirFd, base: &str) -> Option<Level> {
    let name = OsStr::new(".gitignore");
    let st = dir.stat_opt(name).ok().flatten()?;
    match st.kind {
        Kind::File => {}
        Kind::Dir => return None,
        Kind::Symlink => {
            // Git (since 2.32) does not follow an in-tree .gitignore link.
            tracing::debug!("{base}.gitignore is a symbolic link: left out, as git leaves it out");
            return None;
        }
        Kind::Special => {
            tracing::warn!(
                "{base}.gitignore is a special file (FIFO, socket or device): left out of the checkpoint's rules"
            );
            return None;
        }
    }
    let bytes = match dir.read(name, MAX_GITIGNORE) {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!("{base}.gitignore not read for the checkpoint: {e}");
            return None;
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut b = GitignoreBuilder::new(".");
    for line in text.lines() {
        if let Err(e) = b.add_line(None, line) {
            tracing::debug!("{base}.gitignore: line {line:?} skipped: {e}");
        }
    }
    match b.build() {
        Ok(matcher) if !matcher.is_empty() => Some(Level {
            base: base.to_owned(),
            matcher,
        }),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!("{base}.gitignore unusable for the checkpoint: {e}");
            None
        }
    }
}

/// A directory still to walk.
struct Pending {
    dir: DirFd,
    base: String,
    levels: Vec<Arc<Level>>,
    depth: usize,
}

/// Walk `ws` and decide what a snapshot holds (see the module's doc).
/// `fence_attributes` also leaves out every directory whose
/// `.gitattributes` is not a regular file (for a git too old to be kept
/// from reading the workspace's attributes at all). Directories are
/// walked on up to [`WALKERS`] threads at once: a walk is an `lstat` of
/// every entry (git's own refresh spreads its `lstat`s over threads the
/// same way), and a snapshot waits for it before a turn's first change.
pub fn select(
    ws: &Workspace,
    exclusions: &Exclusions,
    fence_attributes: bool,
) -> Result<Selection, SelectError> {
    let walk = Walk {
        exclusions,
        fence_attributes,
        // Root opens every regular file: no need to try.
        privileged: rustix::process::geteuid().is_root(),
        seen: AtomicUsize::new(0),
    };
    let root = Pending {
        dir: ws.dir(&RelPath::root())?,
        base: String::new(),
        levels: Vec::new(),
        depth: 0,
    };
    // Asked once: std reads the cgroup's CPU quota to answer.
    static WALKERS_HERE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let walkers = *WALKERS_HERE
        .get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(WALKERS)));
    let queue = Queue {
        state: Mutex::new(QueueState {
            todo: vec![root],
            busy: 0,
            failed: None,
        }),
        moved: Condvar::new(),
    };
    let parts: Vec<std::thread::Result<Selection>> = std::thread::scope(|s| {
        let workers: Vec<_> = (1..walkers)
            .map(|_| s.spawn(|| queue.work(&walk)))
            .collect();
        let mut parts = vec![Ok(queue.work(&walk))];
        parts.extend(workers.into_iter().map(|w| w.join()));
        parts
    });
    if let Some(e) = lock(&queue.state).failed.take() {
        return Err(e);
    }
    // A walker that panicked took what it found with it: no snapshot
    // rather than one a restore would read as deletions.
    let Ok(parts) = parts.into_iter().collect::<Result<Vec<_>, _>>() else {
        return Err(SelectError::Panicked);
    };
    let mut out = Selection::default();
    for mut part in parts {
        out.files.append(&mut part.files);
        out.unreadable.append(&mut part.unreadable);
    }
    Ok(out)
}

/// Most threads a walk uses.
const WALKERS: usize = 4;

/// What every directory of one walk is judged by.
struct Walk<'a> {
    exclusions: &'a Exclusions,
    fence_attributes: bool,
    privileged: bool,
    /// Entries looked at so far, by every walker.
    seen: AtomicUsize,
}

/// The directories still to walk, shared by the walkers.
struct Queue {
    state: Mutex<QueueState>,
    /// Signalled when directories are added or a walker finishes one.
    moved: Condvar,
}

struct QueueState {
    todo: Vec<Pending>,
    /// Walkers in the middle of a directory (which may add more).
    busy: usize,
    /// The first error; the walk stops at it.
    failed: Option<SelectError>,
}

fn lock(m: &Mutex<QueueState>) -> std::sync::MutexGuard<'_, QueueState> {
    // A walker's panic leaves the queue's state whole (it is only ever
    // changed in place under the lock).
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Queue {
    /// Walk directories from the queue until none is left and no walker
    /// could add one (or one failed); what this walker found.
    fn work(&self, walk: &Walk<'_>) -> Selection {
        let mut out = Selection::default();
        let mut children = Vec::new();
        let mut state = lock(&self.state);
        loop {
            if state.failed.is_some() {
                break;
            }
            let Some(next) = state.todo.pop() else {
                if state.busy == 0 {
                    break;
                }
                state = self
                    .moved
                    .wait(state)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                continue;
            };
            state.busy += 1;
            drop(state);
            let done = {
                // Counted out again even if the visit unwinds, so no other
                // walker waits for it forever.
                let _busy = Busy(self);
                visit(walk, next, &mut out, &mut children)
            };
            state = lock(&self.state);
            match done {
                Ok(()) => state.todo.append(&mut children),
                Err(e) => {
                    state.failed.get_or_insert(e);
                }
            }
            self.moved.notify_all();
        }
        drop(state);
        self.moved.notify_all();
        out
    }
}

/// A walker in the middle of a directory: counted out when it ends.
struct Busy<'q>(&'q Queue);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.0.state);
        state.busy = state.busy.saturating_sub(1);
        drop(state);
        self.0.moved.notify_all();
    }
}

/// Judge one directory's entries into `out`; the directories below it to
/// walk go to `children`.
fn visit(
    walk: &Walk<'_>,
    Pending {
        dir,
        base,
        mut levels,
        depth,
    }: Pending,
    out: &mut Selection,
    children: &mut Vec<Pending>,
) -> Result<(), SelectError> {
    let io = |cause| WorkspaceError::Io {
        path: if base.is_empty() {
            ".".to_owned()
        } else {
            base.trim_end_matches('/').to_owned()
        },
        cause,
    };
    let entries = match dir.entries() {
        Ok(e) => e,
        // Gone since it was listed, or not ours to read.
        Err(e)
            if depth > 0
                && matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                ) =>
        {
            tracing::debug!("{base}: not walked for the checkpoint: {e}");
            return Ok(());
        }
        Err(e) => return Err(io(e).into()),
    };
    if walk
        .seen
        .fetch_add(entries.len(), Ordering::Relaxed)
        .saturating_add(entries.len())
        > MAX_ENTRIES
    {
        return Err(SelectError::TooLarge);
    }
    if walk.fence_attributes
        && entries
            .iter()
            .any(|(n, st)| n == ".gitattributes" && !matches!(st.kind, Kind::File | Kind::Dir))
    {
        tracing::warn!(
            "{base}.gitattributes is not a regular file: {} left out of the checkpoint",
            if base.is_empty() {
                "the workspace"
            } else {
                base.as_str()
            }
        );
        return Ok(());
    }
    if let Some(level) = level_of(&dir, &base) {
        levels.push(Arc::new(level));
    }
    for (name, st) in entries {
        let Some(n) = name.to_str() else {
            tracing::debug!(
                "{base}{}: not UTF-8, left out of the checkpoint",
                Path::new(&name).display()
            );
            continue;
        };
        // Git never tracks a `.git`, whatever it is.
        if n == ".git" {
            continue;
        }
        let rel = format!("{base}{n}");
        let is_dir = st.kind == Kind::Dir;
        // Git's decision first, then Roost's veto: both must keep it.
        if gitignored(&levels, &rel, is_dir) || walk.exclusions.excludes(&rel) {
            continue;
        }
        match st.kind {
            Kind::Dir => {
                if depth >= MAX_DEPTH {
                    continue;
                }
                match dir.open_dir(&name) {
                    Ok(child) => children.push(Pending {
                        dir: child,
                        base: format!("{rel}/"),
                        levels: levels.clone(),
                        depth: depth + 1,
                    }),
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                        ) =>
                    {
                        tracing::debug!("{rel}: not walked for the checkpoint: {e}");
                    }
                    Err(e) => return Err(io(e).into()),
                }
            }
            Kind::File if st.size > MAX_FILE_BYTES => {}
            Kind::File => {
                // Opened as git will open it (never blocking, never
                // through a link): one it cannot read keeps its last
                // snapshot rather than failing the whole one.
                if walk.privileged || dir.open_read(&name).is_ok() {
                    out.files.insert(rel, st);
                } else {
                    out.unreadable.insert(rel);
                }
            }
            Kind::Symlink => {
                out.files.insert(rel, st);
            }
            Kind::Special => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What git itself would add to a fresh index of `root`.
    fn git_untracked(root: &Path, git_dir: &Path) -> BTreeSet<String> {
        let git = |args: &[&str]| {
            let mut c = std::process::Command::new("git");
            if args[0] == "init" {
                c.args(args).arg(git_dir);
            } else {
                c.arg("--git-dir")
                    .arg(git_dir)
                    .arg("--work-tree")
                    .arg(root)
                    .args(args);
            }
            c.current_dir(root)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .expect("git")
        };
        assert!(git(&["init", "--quiet", "--bare"]).status.success());
        let out = git(&["ls-files", "-z", "--others", "--exclude-standard"]);
        assert!(out.status.success(), "{out:?}");
        out.stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect()
    }

    /// On a workspace without special files, the selection is exactly
    /// what git's own ignore rules keep: nested files, negations, anchored
    /// and directory-only patterns, `**`, escapes and trailing spaces.
    #[test]
    fn the_selection_is_what_git_keeps() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ws");
        let files = [
            ("a.log", ""),
            ("keep.log", ""),
            ("src/x.log", ""),
            ("src/y.log", ""),
            ("src/main.rs", ""),
            ("src/lib.txt", ""),
            ("src/build/out", ""),
            ("build/out", ""),
            ("docs/a.md", ""),
            ("docs/README.md", ""),
            ("docs/sub/b.md", ""),
            ("x/tmp/f", ""),
            ("tmp", ""),
            ("sub/deep/f", ""),
            ("other/sub/deep/f", ""),
            ("#hash", ""),
            ("trailing", ""),
            ("nested/only-here", ""),
            ("nested/inner/only-here", ""),
            ("dir-only/f", ""),
            ("also/dir-only", ""),
            ("ws.cfg", ""),
            ("ws.cfg.d/x", ""),
        ];
        for (f, c) in files {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(p, c).expect("write");
        }
        std::fs::write(
            root.join(".gitignore"),
            "# comment\n*.log\n/build/\n!keep.log\ndocs/*.md\n!docs/README.md\n**/tmp\nsub/deep/\n\\#hash\ntrailing   \ndir-only/\n*.cfg*\n!ws.cfg.d/\r\n",
        )
        .expect("write");
        std::fs::write(root.join("src/.gitignore"), "!x.log\n*.rs\n").expect("write");
        std::fs::write(root.join("nested/.gitignore"), "/only-here\n").expect("write");
        std::os::unix::fs::symlink("a.log", root.join("link")).expect("link");
        std::os::unix::fs::symlink("keep.log", root.join("ign.log")).expect("link");
        let ws = Workspace::open(&root).expect("ws");
        let ours = select(&ws, &Exclusions::of(&ws), false).expect("select");
        let names: BTreeSet<String> = ours.files.keys().cloned().collect();
        assert_eq!(names, git_untracked(&root, &dir.path().join("g.git")));
        assert!(ours.files.contains_key("src/x.log") && !ours.files.contains_key("a.log"));
    }

    /// Roost's exclusions hold whatever `.gitignore` re-includes, and a
    /// special `.gitignore` is left out (without blocking) rather than
    /// leaving its directory out.
    #[test]
    fn roosts_exclusions_and_special_files_hold() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join(".orchestration")).expect("mkdir");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(
            root.join(".gitignore"),
            "!.env\n!big.bin\n!.orchestration/**\n*.o\n",
        )
        .expect("write");
        std::fs::write(root.join(".rooignore"), ".env\nsecrets/\n").expect("write");
        std::fs::write(root.join(".env"), "x").expect("write");
        std::fs::create_dir_all(root.join("secrets")).expect("mkdir");
        std::fs::write(root.join("secrets/key"), "x").expect("write");
        std::fs::write(root.join(".orchestration/agent_trace.jsonl"), "x").expect("write");
        std::fs::write(root.join("src/a.rs"), "x").expect("write");
        std::fs::write(root.join("src/a.o"), "x").expect("write");
        std::fs::File::create(root.join("big.bin"))
            .and_then(|f| f.set_len(MAX_FILE_BYTES + 1))
            .expect("big");
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("src/.gitignore"))
            .arg(root.join("fifo"))
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let ws = Workspace::open(&root).expect("ws");
        let ex = Exclusions::of(&ws);
        let ours = select(&ws, &ex, false).expect("select");
        let want: BTreeSet<String> = [".gitignore", ".rooignore", "src/a.rs"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        assert!(ours.files.keys().eq(want.iter()));
        assert!(
            ex.excludes(".env") && ex.excludes("secrets/key") && ex.excludes(".orchestration/x")
        );
        assert!(ex.excludes("vendor/.git/config") && !ex.excludes("src/a.rs"));
        // An old git would read the attributes: a special one leaves its
        // directory out.
        let made = std::process::Command::new("mkfifo")
            .arg(root.join("src/.gitattributes"))
            .status()
            .expect("mkfifo");
        assert!(made.success());
        let fenced = select(&ws, &ex, true).expect("select");
        assert!(!fenced.files.contains_key("src/a.rs") && fenced.files.contains_key(".gitignore"));
    }
}
