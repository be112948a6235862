//! A workspace's shadow repository: a bare git repository in Roost's data
//! directory whose work tree is the workspace, driven through the `git`
//! binary. Never the user's `.git`: the workspace need not be a
//! repository at all, and one that is is not touched. Each task keeps its
//! own index (so concurrent tasks on one workspace never disturb each
//! other) and its own refs; objects are shared.
//!
//! Git never decides on its own what it reads in the workspace: what a
//! snapshot holds is chosen first ([`super::select`]) and git is handed
//! exactly those files ([`Shadow::stage`]), so it never walks the tree and
//! never opens a `.gitignore`; the workspace's `.gitattributes` are never
//! read either (attributes come from the empty tree, `GIT_ATTR_SOURCE`),
//! so no filter, encoding or line-ending rule of the workspace changes
//! what is kept, and the user's and the system's git configuration have no
//! say. Every git run is bounded by a deadline: one that overruns (a file
//! swapped for a FIFO between Roost's look and git's open, say) is killed
//! and is an error, and the task goes on.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::index::IndexStamps;
use super::select::Selection;

/// Held while a shadow repository is made.
static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How long one git run may take before it is killed.
pub const GIT_DEADLINE: Duration = Duration::from_secs(120);

/// The empty tree (SHA-1): where attributes are read from instead of the
/// workspace. Git knows it without it being stored.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// What the shadow's own `info/attributes` says, for a git too old for
/// `GIT_ATTR_SOURCE` (< 2.40), which still reads the workspace's
/// `.gitattributes`: it has the last word, and turns every conversion off
/// (a snapshot keeps the bytes as they are).
const ATTRIBUTES: &str = "* -text -eol -ident -filter -working-tree-encoding\n";

/// Why a checkpoint operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
    /// `git` is not there.
    #[error("checkpoints need the `git` program, which is not installed")]
    NoGit,
    /// git said no.
    #[error("git {what} failed: {why}")]
    Git {
        /// What was run.
        what: String,
        /// What git said.
        why: String,
    },
    /// git ran past its deadline and was killed.
    #[error(
        "git {what} did not finish within {secs} s and was stopped (something in the workspace may block a \
         reader: a file swapped for a FIFO while git ran, say)"
    )]
    Overran {
        /// What was run.
        what: String,
        /// The deadline, in seconds.
        secs: u64,
    },
    /// The file system failed.
    #[error("checkpoint store: {0}")]
    Io(#[from] std::io::Error),
}

/// One workspace's shadow repository.
#[derive(Debug, Clone)]
pub struct Shadow {
    git_dir: PathBuf,
    work_tree: PathBuf,
    deadline: Duration,
    /// The workspace as the task holds it: git then starts in that very
    /// directory (`/proc/self/fd/N`), not at a path that could have been
    /// swapped for a link since the workspace was checked.
    held: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
}

/// What a tree holds at one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TreeEntry {
    /// A regular file: its bytes, and whether it is executable.
    File {
        /// Content.
        bytes: Vec<u8>,
        /// Mode 100755.
        executable: bool,
    },
    /// A symbolic link and its target, as stored.
    Symlink(Vec<u8>),
    /// Nothing there.
    Missing,
    /// Something a restore leaves alone (a submodule link of an older
    /// snapshot).
    Other,
}

/// A task-owned ref name: `refs/roost/<task>/<name>`, the task id made
/// safe for a ref.
fn task_ref(task: &str, name: &str) -> String {
    let safe: String = task
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("refs/roost/{safe}/{name}")
}

/// The `git` program to run: by its path on `PATH`, found once. Named by
/// its path, git starts through `posix_spawn` (the child borrows the
/// host's memory until it execs); named bare with the child's `PATH` set,
/// std falls back to `fork`, which copies the page tables of a host whose
/// address space the plugin engine makes large and then makes every page
/// the host writes a copy-on-write fault (P15 spent half its CPU there).
/// Not found, the bare name is run, and fails as [`ShadowError::NoGit`].
fn git_program() -> Command {
    static FOUND: OnceLock<PathBuf> = OnceLock::new();
    if let Some(path) = FOUND.get() {
        return Command::new(path);
    }
    match std::env::var_os("PATH").and_then(|path| find_on_path("git", &path)) {
        Some(path) => Command::new(FOUND.get_or_init(|| path)),
        None => Command::new("git"),
    }
}

/// The first executable file named `name` in a directory of `path` (a
/// `PATH` value), as `execvp` would find it; relative entries are left
/// out (not a program picked by where the host happens to stand).
fn find_on_path(name: &str, path: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

fn spawn_error(e: std::io::Error) -> ShadowError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ShadowError::NoGit,
        _ => ShadowError::Io(e),
    }
}

/// Run `cmd` (stdout and stderr piped) with `input` on its stdin, killed
/// when it runs past `deadline`.
fn bounded(
    mut cmd: Command,
    input: Option<Vec<u8>>,
    deadline: Duration,
    what: &str,
) -> Result<Output, ShadowError> {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(spawn_error)?;
    let pid = rustix::process::Pid::from_child(&child);
    // A pidfd names this very process, even once it has exited.
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok();
    let writer = match (child.stdin.take(), input) {
        (Some(mut stdin), Some(bytes)) => Some(std::thread::spawn(move || {
            // A git that stops reading (it failed, or was killed) is
            // reported by its exit, not here.
            let _ = stdin.write_all(&bytes);
        })),
        _ => None,
    };
    let (done, finished) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || match finished.recv_timeout(deadline) {
        Err(RecvTimeoutError::Timeout) => {
            let killed = match &pidfd {
                Some(fd) => rustix::process::pidfd_send_signal(fd, rustix::process::Signal::KILL),
                // No pidfd (an old kernel): the child is not reaped before
                // `done` is sent, so its pid is still its own.
                None => rustix::process::kill_process(pid, rustix::process::Signal::KILL),
            };
            if let Err(e) = killed {
                tracing::debug!("git past its deadline not killed: {e}");
            }
            true
        }
        _ => false,
    });
    let out = child.wait_with_output();
    let _ = done.send(());
    let overran = watchdog.join().unwrap_or(true);
    if let Some(w) = writer {
        let _ = w.join();
    }
    let out = out?;
    if overran {
        return Err(ShadowError::Overran {
            what: what.to_owned(),
            secs: deadline.as_secs(),
        });
    }
    Ok(out)
}

/// Whether this machine's git reads attributes from `GIT_ATTR_SOURCE`
/// (2.40 and later); asked once.
pub fn git_honours_attr_source() -> bool {
    static ANSWER: OnceLock<bool> = OnceLock::new();
    *ANSWER.get_or_init(|| {
        let mut c = git_program();
        c.arg("version")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        let Ok(out) = bounded(c, None, GIT_DEADLINE, "version") else {
            return false;
        };
        // `git version 2.47.3` (vendors add suffixes after the numbers).
        let text = String::from_utf8_lossy(&out.stdout);
        let mut nums = text
            .split_whitespace()
            .nth(2)
            .unwrap_or_default()
            .split('.')
            .map(|n| n.parse::<u32>().unwrap_or(0));
        let (major, minor) = (nums.next().unwrap_or(0), nums.next().unwrap_or(0));
        (major, minor) >= (2, 40)
    })
}

impl Shadow {
    /// The shadow repository of the workspace `work_tree` (absolute,
    /// canonical) under `root`, made on first use.
    pub fn open(root: &Path, work_tree: &Path) -> Result<Self, ShadowError> {
        let key = Sha256::digest(work_tree.as_os_str().as_encoded_bytes());
        let name: String = key.iter().take(12).map(|b| format!("{b:02x}")).collect();
        let git_dir = root.join(format!("{name}.git"));
        let shadow = Self {
            git_dir,
            work_tree: work_tree.to_path_buf(),
            deadline: GIT_DEADLINE,
            held: None,
        };
        if !shadow.git_dir.join("HEAD").is_file() {
            // Two tasks starting on one workspace at once make it once
            // (another process may still race: then its HEAD is there).
            let _one = INIT.lock().unwrap_or_else(|p| p.into_inner());
            if !shadow.git_dir.join("HEAD").is_file() {
                std::fs::create_dir_all(&shadow.git_dir)?;
                let mut c = git_program();
                c.args(["init", "--bare", "--quiet"]).arg(&shadow.git_dir);
                shadow.isolate(&mut c);
                let out = bounded(c, None, shadow.deadline, "init")?;
                if !out.status.success() && !shadow.git_dir.join("HEAD").is_file() {
                    return Err(ShadowError::Git {
                        what: "init".into(),
                        why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
                    });
                }
            }
        }
        shadow.write_attributes()?;
        Ok(shadow)
    }

    /// The same repository, each git run bounded by `deadline` instead.
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The shadow's own `info/attributes` (see [`ATTRIBUTES`]), replaced
    /// whole when it says anything else.
    fn write_attributes(&self) -> Result<(), ShadowError> {
        let info = self.git_dir.join("info");
        let path = info.join("attributes");
        if std::fs::read_to_string(&path).ok().as_deref() == Some(ATTRIBUTES) {
            return Ok(());
        }
        std::fs::create_dir_all(&info)?;
        let tmp = info.join(format!("attributes.{}", uuid::Uuid::now_v7().simple()));
        std::fs::File::create(&tmp)?.write_all(ATTRIBUTES.as_bytes())?;
        std::fs::rename(&tmp, &path)?;
        Ok(())
    }

    /// Keep `c` from everything but the shadow's own configuration: no
    /// inherited environment, no system or global config, a home with
    /// nothing in it (no `core.excludesFile` or `core.attributesFile`
    /// default), attributes from the empty tree, no prompt.
    fn isolate(&self, c: &mut Command) {
        let home = self.git_dir.join("no-home");
        c.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", &home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_ATTR_SOURCE", EMPTY_TREE)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0");
    }

    /// The index file of `task`.
    fn index(&self, task: &str) -> PathBuf {
        self.git_dir
            .join(format!("index-{}", task_ref(task, "").replace('/', "_")))
    }

    /// Start `to`'s index as a copy of `from`'s (when `from` has one).
    pub fn copy_index(&self, from: &str, to: &str) {
        let (a, b) = (self.index(from), self.index(to));
        if a.is_file()
            && let Err(e) = std::fs::copy(&a, &b)
        {
            tracing::debug!("checkpoint index not copied: {e}");
        }
    }

    /// Drop `task`'s index (a scratch one).
    pub fn forget_index(&self, task: &str) {
        if let Err(e) = std::fs::remove_file(self.index(task))
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::debug!("checkpoint index not removed: {e}");
        }
    }

    /// Run git in the workspace held by `dir` (a handle on the directory
    /// `work_tree` named when it was checked) rather than at its path.
    pub fn held_by(mut self, dir: std::os::fd::OwnedFd) -> Self {
        self.held = Some(std::sync::Arc::new(dir));
        self
    }

    fn command(&self, index: Option<&Path>) -> Command {
        use std::os::fd::AsRawFd;
        let mut c = git_program();
        // By handle where there is one: the child starts in the directory
        // itself (its descriptor is open until exec), git takes it as `.`.
        let (work_tree, cwd) = match &self.held {
            Some(fd) => (
                PathBuf::from("."),
                PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())),
            ),
            None => (self.work_tree.clone(), self.work_tree.clone()),
        };
        c.arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&work_tree)
            .args([
                "-c",
                "core.autocrlf=false",
                "-c",
                "core.safecrlf=false",
                "-c",
                "core.fileMode=true",
                "-c",
                "core.symlinks=true",
                "-c",
                "core.quotePath=false",
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "core.fsmonitor=false",
                "-c",
                "core.untrackedCache=false",
                "-c",
                "core.splitIndex=false",
                "-c",
                "gc.auto=0",
                "-c",
                "commit.gpgSign=false",
                "-c",
                "user.name=Roost",
                "-c",
                "user.email=roost@localhost",
            ])
            .current_dir(&cwd);
        // The user's git configuration has no say over the shadow.
        self.isolate(&mut c);
        if let Some(i) = index {
            c.env("GIT_INDEX_FILE", i);
        }
        c
    }

    /// Run git with `args` (and `input` on its stdin) under the deadline.
    fn exec(
        &self,
        index: Option<&Path>,
        args: &[&str],
        input: Option<Vec<u8>>,
        what: &str,
    ) -> Result<Vec<u8>, ShadowError> {
        let mut c = self.command(index);
        c.args(args);
        let out = bounded(c, input, self.deadline, what)?;
        if !out.status.success() {
            return Err(ShadowError::Git {
                what: what.to_owned(),
                why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(out.stdout)
    }

    fn run(&self, index: Option<&Path>, args: &[&str], what: &str) -> Result<Vec<u8>, ShadowError> {
        self.exec(index, args, None, what)
    }

    fn text(&self, index: Option<&Path>, args: &[&str], what: &str) -> Result<String, ShadowError> {
        Ok(String::from_utf8_lossy(&self.run(index, args, what)?)
            .trim()
            .to_owned())
    }

    /// Make `task`'s index hold exactly `selection` (only for paths in
    /// `scope`, when given: the rest stays as it was) and return the tree
    /// it makes. Git is handed only the files whose stat differs from
    /// what the index records of them ([`super::index`]: the others it
    /// would find unchanged itself, after an `lstat` of each), and reads
    /// only those whose stamp moved; what the index held that the
    /// selection no longer does leaves it.
    pub fn stage(
        &self,
        task: &str,
        selection: &Selection,
        scope: Option<&[String]>,
    ) -> Result<String, ShadowError> {
        let index = self.index(task);
        let scope: Option<std::collections::HashSet<&str>> =
            scope.map(|s| s.iter().map(String::as_str).collect());
        let in_scope = |p: &str| {
            let Some(s) = &scope else { return true };
            // The path itself or a directory above it.
            let mut at = p;
            loop {
                if s.contains(at) {
                    return true;
                }
                match at.rfind('/') {
                    Some(i) => at = &at[..i],
                    None => return false,
                }
            }
        };
        // A task's first snapshot starts from no index: nothing to list,
        // every file to hand over. Otherwise the index is read here: what
        // it lists, and which files it records exactly as the walk found
        // them (those git would find unchanged without reading them, so
        // they are not handed to it). An index this reader does not follow
        // is listed by git and every file handed over, as before.
        let stamps = if index.is_file() {
            read_stamps(&index)
        } else {
            None
        };
        let listed = match &stamps {
            Some(s) => s.listed().to_vec(),
            None if index.is_file() => {
                self.run(Some(&index), &["ls-files", "-z", "--cached"], "ls-files")?
            }
            None => Vec::new(),
        };
        let mut gone = Vec::new();
        for path in listed.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            let keep = std::str::from_utf8(path).is_ok_and(|p| {
                !in_scope(p) || selection.files.contains_key(p) || selection.unreadable.contains(p)
            });
            if !keep {
                gone.extend_from_slice(path);
                gone.push(0);
            }
        }
        if !gone.is_empty() {
            self.exec(
                Some(&index),
                &["update-index", "-z", "--force-remove", "--stdin"],
                Some(gone),
                "update-index",
            )?;
        }
        let mut paths = Vec::new();
        for (path, st) in &selection.files {
            let unchanged = stamps.as_ref().is_some_and(|s| s.unchanged(path, st));
            if in_scope(path) && !unchanged {
                paths.extend_from_slice(path.as_bytes());
                paths.push(0);
            }
        }
        if !paths.is_empty() {
            // `--remove`: a file gone since the walk leaves the index;
            // `--replace`: a file where a directory was (or the reverse).
            self.exec(
                Some(&index),
                &[
                    "update-index",
                    "-z",
                    "--add",
                    "--remove",
                    "--replace",
                    "--stdin",
                ],
                Some(paths),
                "update-index",
            )?;
        }
        self.text(Some(&index), &["write-tree"], "write-tree")
    }

    /// Record `tree` as a commit after `parent`.
    pub fn commit(
        &self,
        tree: &str,
        parent: Option<&str>,
        message: &str,
    ) -> Result<String, ShadowError> {
        let mut args = vec!["commit-tree", tree, "-m", message];
        if let Some(p) = parent {
            args.extend(["-p", p]);
        }
        self.text(None, &args, "commit-tree")
    }

    /// Point `task`'s ref `name` at `commit`.
    pub fn set_ref(&self, task: &str, name: &str, commit: &str) -> Result<(), ShadowError> {
        self.set_refs(task, &[name], commit)
    }

    /// Point each of `task`'s refs `names` at `commit`, in one git run and
    /// one transaction (all move, or none).
    pub fn set_refs(&self, task: &str, names: &[&str], commit: &str) -> Result<(), ShadowError> {
        let refused = |why: String| ShadowError::Git {
            what: "update-ref".into(),
            why,
        };
        if commit.is_empty() || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(refused(format!("{commit:?} does not name a commit")));
        }
        let mut lines = String::from("start\n");
        for name in names {
            // Nothing in a line may end it or start another field: the
            // task part is made safe by `task_ref`, the name is checked.
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(refused(format!("{name:?} is not a checkpoint ref name")));
            }
            lines.push_str(&format!("update {} {commit}\n", task_ref(task, name)));
        }
        lines.push_str("commit\n");
        self.exec(
            None,
            &["update-ref", "--stdin"],
            Some(lines.into_bytes()),
            "update-ref",
        )?;
        Ok(())
    }

    /// Where `task`'s ref `name` points, if anywhere.
    pub fn get_ref(&self, task: &str, name: &str) -> Option<String> {
        self.text(
            None,
            &["rev-parse", "--verify", "--quiet", &task_ref(task, name)],
            "rev-parse",
        )
        .ok()
        .filter(|s| !s.is_empty())
    }

    /// The tree of `commit`.
    pub fn tree_of(&self, commit: &str) -> Result<String, ShadowError> {
        self.text(
            None,
            &["rev-parse", &format!("{commit}^{{tree}}")],
            "rev-parse",
        )
    }

    /// The unified diff from tree `from` to tree `to`, with a summary.
    pub fn diff(&self, from: &str, to: &str) -> Result<String, ShadowError> {
        let out = self.run(
            None,
            &[
                "diff",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--stat",
                "--patch",
                "--no-renames",
                from,
                to,
            ],
            "diff",
        )?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// Paths that differ between trees `from` and `to`.
    pub fn changed(&self, from: &str, to: &str) -> Result<Vec<String>, ShadowError> {
        let out = self.run(
            None,
            &["diff", "--name-only", "-z", "--no-renames", from, to],
            "diff",
        )?;
        Ok(out
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect())
    }

    /// What tree `tree` holds at `path`.
    pub fn entry(&self, tree: &str, path: &str) -> Result<TreeEntry, ShadowError> {
        let listing = self.run(
            None,
            &["--literal-pathspecs", "ls-tree", "-z", tree, "--", path],
            "ls-tree",
        )?;
        let Some(entry) = listing.split(|b| *b == 0).find(|e| !e.is_empty()) else {
            return Ok(TreeEntry::Missing);
        };
        let entry = String::from_utf8_lossy(entry);
        // `<mode> <type> <sha>\t<path>`
        let (head, listed) = entry.split_once('\t').unwrap_or((&entry, ""));
        if listed != path {
            return Ok(TreeEntry::Missing);
        }
        let mut head = head.split(' ');
        let (Some(mode), Some(kind), Some(sha)) = (head.next(), head.next(), head.next()) else {
            return Ok(TreeEntry::Other);
        };
        if kind != "blob" {
            return Ok(TreeEntry::Other);
        }
        let bytes = self.run(None, &["cat-file", "blob", sha], "cat-file")?;
        Ok(match mode {
            "120000" => TreeEntry::Symlink(bytes),
            "100755" => TreeEntry::File {
                bytes,
                executable: true,
            },
            "100644" => TreeEntry::File {
                bytes,
                executable: false,
            },
            _ => TreeEntry::Other,
        })
    }
}

/// The shadow index at `path` as a hint ([`IndexStamps`]); `None` when it
/// cannot be read or followed (then git is asked about every file).
fn read_stamps(path: &Path) -> Option<IndexStamps> {
    use std::os::unix::fs::MetadataExt;
    // Its date before its bytes: an index replaced in between is dated
    // older than what was read, which can only make more entries racy
    // (handed to git), never fewer.
    let written = std::fs::metadata(path).ok()?.mtime();
    let stamps = IndexStamps::parse(&std::fs::read(path).ok()?, written);
    if stamps.is_none() {
        tracing::debug!(
            "{}: not an index this reader follows; git looks at every file",
            path.display()
        );
    }
    stamps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A checkpoint's refs move together, in one git run; a name or
    /// commit that could smuggle another line into git's `--stdin` is
    /// refused before git runs, and moves nothing.
    #[test]
    fn refs_move_together_and_a_hostile_name_moves_nothing() {
        let root = tempfile::tempdir().expect("tempdir");
        let ws = tempfile::tempdir().expect("tempdir");
        std::fs::write(ws.path().join("a.txt"), "a\n").expect("write");
        let ws_path = ws.path().canonicalize().expect("canonical");
        let shadow = Shadow::open(root.path(), &ws_path).expect("shadow");
        let st = roost_sandbox::capability::dirfd::DirFd::open_ambient(&ws_path)
            .and_then(|d| d.stat(std::ffi::OsStr::new("a.txt")))
            .expect("stat");
        let selection = Selection {
            files: std::iter::once(("a.txt".to_owned(), st)).collect(),
            ..Selection::default()
        };
        let tree = shadow.stage("t-1", &selection, None).expect("stage");
        let commit = shadow.commit(&tree, None, "first").expect("commit");
        shadow
            .set_refs("t-1", &["1", "head"], &commit)
            .expect("refs set");
        assert_eq!(shadow.get_ref("t-1", "1").as_deref(), Some(commit.as_str()));
        assert_eq!(
            shadow.get_ref("t-1", "head").as_deref(),
            Some(commit.as_str())
        );
        for (names, target) in [
            (&["2", "head\ndelete refs/roost/t-1/1"][..], commit.as_str()),
            (&["2 x"][..], commit.as_str()),
            (&[""][..], commit.as_str()),
            (&["2"][..], "HEAD\ndelete refs/roost/t-1/1"),
            (&["2"][..], ""),
        ] {
            let e = shadow.set_refs("t-1", names, target).expect_err("refused");
            assert!(matches!(e, ShadowError::Git { .. }), "{e}");
        }
        assert_eq!(shadow.get_ref("t-1", "2"), None);
        assert_eq!(shadow.get_ref("t-1", "1").as_deref(), Some(commit.as_str()));
    }

    /// A snapshot hands git only the files whose stat moved since the
    /// index recorded them: with nothing changed git is handed nothing
    /// (the index is not even rewritten), and a file rewritten in place
    /// with its modification time put back is still handed over and
    /// snapshotted as it now is. (Git itself compares the change time
    /// to the second only: a rewrite of the same size within the second
    /// the index recorded is one it finds unchanged, handed over or not;
    /// `index`'s tests show the reader hands such a file over.)
    #[test]
    fn only_files_whose_stat_moved_are_handed_to_git() {
        use std::os::unix::fs::MetadataExt;
        let data = tempfile::tempdir().expect("tempdir");
        let ws_dir = tempfile::tempdir().expect("tempdir");
        let root = ws_dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(root.join("sub")).expect("mkdir");
        let old = filetime::FileTime::from_unix_time(1_600_000_000, 0);
        for (name, body) in [
            ("a.txt", "one\n"),
            ("b.txt", "two\n"),
            ("sub/c.txt", "three\n"),
        ] {
            std::fs::write(root.join(name), body).expect("write");
            filetime::set_file_mtime(root.join(name), old).expect("mtime");
        }
        let ws = roost_sandbox::capability::Workspace::open(&root).expect("ws");
        let cps = crate::checkpoints::Checkpoints::new(data.path());
        let (shadow, first) = cps.snapshot("t", &ws).expect("first");
        let index = shadow.index("t");
        let written = std::fs::metadata(&index).expect("index").ino();
        let (_, same) = cps.snapshot("t", &ws).expect("again");
        assert_eq!(same, first);
        assert_eq!(
            std::fs::metadata(&index).expect("index").ino(),
            written,
            "nothing changed: git was handed nothing and left the index as it was"
        );
        // Its mtime put back: the size and the change time tell.
        std::fs::write(root.join("b.txt"), "TWO!\n").expect("write");
        filetime::set_file_mtime(root.join("b.txt"), old).expect("mtime");
        let (shadow, changed) = cps.snapshot("t", &ws).expect("changed");
        assert_ne!(changed, first);
        let blob = shadow
            .text(
                None,
                &["cat-file", "-p", &format!("{changed}:b.txt")],
                "cat-file",
            )
            .expect("blob");
        assert_eq!(blob, "TWO!");
        // Removed: gone from the next snapshot too.
        std::fs::remove_file(root.join("sub/c.txt")).expect("rm");
        let (shadow, removed) = cps.snapshot("t", &ws).expect("removed");
        let listed = shadow
            .text(None, &["ls-tree", "-r", "--name-only", &removed], "ls-tree")
            .expect("ls-tree");
        assert_eq!(listed, "a.txt\nb.txt");
    }

    /// Git is run by its path (so std starts it with `posix_spawn`, not a
    /// `fork` of the whole host): the path is the first executable `git`
    /// in an absolute directory of `PATH`.
    #[test]
    fn git_is_run_by_its_path_found_as_execvp_would() {
        use std::os::unix::fs::PermissionsExt;
        assert!(
            Path::new(git_program().get_program()).is_absolute(),
            "git is on this machine's PATH"
        );
        let dirs = tempfile::tempdir().expect("tempdir");
        let [plain, runnable, later] = ["plain", "runnable", "later"].map(|d| {
            let dir = dirs.path().join(d);
            std::fs::create_dir(&dir).expect("dir");
            dir
        });
        std::fs::write(plain.join("roost-probe"), "").expect("write");
        for dir in [&runnable, &later] {
            let p = dir.join("roost-probe");
            std::fs::write(&p, "#!/bin/sh\n").expect("write");
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
        let path = std::env::join_paths([
            PathBuf::from("relative"),
            plain.clone(),
            runnable.clone(),
            later,
        ])
        .expect("join");
        let found = find_on_path("roost-probe", &path);
        let none = find_on_path("roost-probe-absent", &path);
        assert_eq!(found, Some(runnable.join("roost-probe")));
        assert_eq!(none, None);
    }

    /// A git that blocks (here on a FIFO it was asked to hash) is killed at
    /// its deadline and reported; nothing waits for it.
    #[test]
    fn a_git_past_its_deadline_is_killed_and_reported() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("mkdir");
        let fifo = ws.join("pipe");
        let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
        assert!(made.success());
        let shadow = Shadow::open(&dir.path().join("cp"), &ws)
            .expect("open")
            .with_deadline(Duration::from_millis(300));
        let e = shadow
            .run(None, &["hash-object", "pipe"], "hash-object")
            .expect_err("it blocks on the FIFO");
        assert!(matches!(e, ShadowError::Overran { .. }), "{e}");
        assert!(e.to_string().contains("was stopped"), "{e}");
        // The repository still works.
        assert_eq!(
            shadow
                .text(None, &["write-tree"], "write-tree")
                .expect("write-tree"),
            EMPTY_TREE
        );
    }
}
