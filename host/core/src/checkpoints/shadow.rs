//! A workspace's shadow repository: a bare git repository in Roost's data
//! directory whose work tree is the workspace, driven through the `git`
//! binary. Never the user's `.git`: the workspace need not be a
//! repository at all, and one that is is not touched. Each task keeps its
//! own index (so concurrent tasks on one workspace never disturb each
//! other) and its own refs; objects are shared. `.gitignore` is honoured
//! as git honours it, `.rooignore` and files over the size cap are
//! excluded, and `.git/` and `.orchestration/` are never part of a
//! snapshot.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

/// Held while a shadow repository is made.
static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Largest file a snapshot keeps; larger ones are left as they are.
pub const MAX_FILE_BYTES: u64 = 32 << 20;

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
    /// The file system failed.
    #[error("checkpoint store: {0}")]
    Io(#[from] std::io::Error),
}

/// One workspace's shadow repository.
#[derive(Debug, Clone)]
pub struct Shadow {
    git_dir: PathBuf,
    work_tree: PathBuf,
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
        };
        if !shadow.git_dir.join("HEAD").is_file() {
            // Two tasks starting on one workspace at once make it once
            // (another process may still race: then its HEAD is there).
            let _one = INIT.lock().unwrap_or_else(|p| p.into_inner());
            if shadow.git_dir.join("HEAD").is_file() {
                return Ok(shadow);
            }
            std::fs::create_dir_all(&shadow.git_dir)?;
            let out = Command::new("git")
                .args(["init", "--bare", "--quiet"])
                .arg(&shadow.git_dir)
                .env_clear()
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .stdin(Stdio::null())
                .output()
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => ShadowError::NoGit,
                    _ => ShadowError::Io(e),
                })?;
            if !out.status.success() && !shadow.git_dir.join("HEAD").is_file() {
                return Err(ShadowError::Git {
                    what: "init".into(),
                    why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
                });
            }
        }
        Ok(shadow)
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

    fn command(&self, index: Option<&Path>) -> Command {
        let mut c = Command::new("git");
        c.arg("--git-dir")
            .arg(&self.git_dir)
            .arg("--work-tree")
            .arg(&self.work_tree)
            .args([
                "-c",
                "core.autocrlf=false",
                "-c",
                "core.safecrlf=false",
                "-c",
                "core.fileMode=true",
                "-c",
                "core.quotePath=false",
                "-c",
                "core.hooksPath=/dev/null",
                "-c",
                "gc.auto=0",
                "-c",
                "commit.gpgSign=false",
                "-c",
                "user.name=Roost",
                "-c",
                "user.email=roost@localhost",
            ])
            .current_dir(&self.work_tree)
            // The user's git configuration has no say over the shadow.
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null());
        if let Some(i) = index {
            c.env("GIT_INDEX_FILE", i);
        }
        c
    }

    fn run(&self, index: Option<&Path>, args: &[&str], what: &str) -> Result<Vec<u8>, ShadowError> {
        let out = self
            .command(index)
            .args(args)
            .output()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => ShadowError::NoGit,
                _ => ShadowError::Io(e),
            })?;
        if !out.status.success() {
            return Err(ShadowError::Git {
                what: what.to_owned(),
                why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
        }
        Ok(out.stdout)
    }

    fn text(&self, index: Option<&Path>, args: &[&str], what: &str) -> Result<String, ShadowError> {
        Ok(String::from_utf8_lossy(&self.run(index, args, what)?)
            .trim()
            .to_owned())
    }

    /// What no snapshot holds: `.git/`, `.orchestration/`, what
    /// `.rooignore` names, and `large` files (workspace-relative).
    pub fn set_excludes(&self, rooignore: &str, large: &[String]) -> Result<(), ShadowError> {
        let mut text = String::from("/.git/\n.git\n/.orchestration/\n");
        for line in rooignore.lines() {
            text.push_str(line);
            text.push('\n');
        }
        for f in large {
            // Anchored and escaped: a name is a name, not a pattern.
            let escaped: String = f
                .chars()
                .flat_map(|c| match c {
                    '*' | '?' | '[' | ']' | '\\' | '!' | '#' | ' ' => vec!['\\', c],
                    c => vec![c],
                })
                .collect();
            text.push('/');
            text.push_str(&escaped);
            text.push('\n');
        }
        let info = self.git_dir.join("info");
        std::fs::create_dir_all(&info)?;
        let path = info.join("exclude");
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            return Ok(());
        }
        // Another task's snapshot may read it meanwhile: replace it whole.
        let tmp = info.join(format!("exclude.{}", uuid::Uuid::now_v7().simple()));
        std::fs::File::create(&tmp)?.write_all(text.as_bytes())?;
        std::fs::rename(&tmp, &path)?;
        Ok(())
    }

    /// Stage the workspace (or only `paths`) into `task`'s index and
    /// return the tree it makes.
    pub fn snapshot(&self, task: &str, paths: Option<&[String]>) -> Result<String, ShadowError> {
        let index = self.index(task);
        let mut args = vec!["add", "--all", "--ignore-errors", "--"];
        match paths {
            Some(p) if !p.is_empty() => args.extend(p.iter().map(String::as_str)),
            _ => args.push("."),
        }
        // `--ignore-errors` goes on past a file it cannot read; git still
        // exits 1 then, with the index written: the tree is what it could.
        let out = self
            .command(Some(&index))
            .args(&args)
            .output()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => ShadowError::NoGit,
                _ => ShadowError::Io(e),
            })?;
        if !out.status.success() && !index.is_file() {
            return Err(ShadowError::Git {
                what: "add".into(),
                why: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            });
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
        self.run(
            None,
            &["update-ref", &task_ref(task, name), commit],
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

    /// The file `path` in tree `tree`: its bytes and mode, `None` when the
    /// tree has no file there.
    pub fn file(&self, tree: &str, path: &str) -> Result<Option<(Vec<u8>, u32)>, ShadowError> {
        let listing = self.run(None, &["ls-tree", "-z", tree, "--", path], "ls-tree")?;
        let Some(entry) = listing.split(|b| *b == 0).find(|e| !e.is_empty()) else {
            return Ok(None);
        };
        let entry = String::from_utf8_lossy(entry);
        // `<mode> <type> <sha>\t<path>`
        let mut head = entry.split('\t').next().unwrap_or_default().split(' ');
        let (Some(mode), Some(kind), Some(sha)) = (head.next(), head.next(), head.next()) else {
            return Ok(None);
        };
        if kind != "blob" {
            return Ok(None);
        }
        let mode = u32::from_str_radix(mode, 8).unwrap_or(0o100644);
        let bytes = self.run(None, &["cat-file", "blob", sha], "cat-file")?;
        Ok(Some((bytes, mode)))
    }
}
