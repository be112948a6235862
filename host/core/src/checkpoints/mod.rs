//! Checkpoints: before the first change of each turn — a file tool, a
//! plugin's write, a command — the workspace is snapshotted into its
//! [`shadow`] repository (a turn that changes nothing costs no new
//! checkpoint), with where the conversation stood. After every change the
//! task's own view (its head) is updated too, so a restore knows what the
//! task changed since a checkpoint — commands included — and what someone
//! else changed since: that is a conflict, reported and left alone unless
//! forced. A task's checkpoints are its own: concurrent tasks on one
//! workspace keep separate indexes and refs.
//!
//! What a snapshot holds is decided by Roost ([`select`]): what the
//! workspace's `.gitignore` files leave in, less what Roost always keeps
//! out (`.rooignore`d paths, `.orchestration/`, `.git`, files over
//! [`MAX_FILE_BYTES`], special files), which no `.gitignore` line can bring
//! back. A restore puts back regular files (their executable bit from the
//! checkpoint, their other permission bits as they are) and symbolic links
//! as links, through the workspace's directory handles.

mod index;
pub mod select;
pub mod shadow;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub use select::MAX_FILE_BYTES;
use select::{Exclusions, SelectError, Selection};
use shadow::{Shadow, ShadowError, TreeEntry};

use crate::store::{CheckpointRecord, Store, StoreError};
use roost_protocol::{RestoreMode, RestoreReport};
use roost_sandbox::capability::dirfd::Kind;
use roost_sandbox::capability::{RelPath, Workspace, WorkspaceError};

/// Why a checkpoint operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The shadow repository failed.
    #[error(transparent)]
    Shadow(#[from] ShadowError),
    /// The workspace could not be walked.
    #[error("cannot take a checkpoint: {0}")]
    Walk(#[from] SelectError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No such checkpoint.
    #[error("task {task} has no checkpoint {id} (`roost checkpoints list {task}` lists them)")]
    Unknown {
        /// The task.
        task: String,
        /// The id asked for.
        id: u32,
    },
    /// A file could not be written back.
    #[error("cannot restore {path}: {why}")]
    Write {
        /// The file.
        path: String,
        /// Why.
        why: String,
    },
}

/// The checkpoints of every workspace, kept in the data directory.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    root: PathBuf,
}

impl Checkpoints {
    /// Checkpoints kept under `data_dir/checkpoints/`.
    pub fn new(data_dir: &Path) -> Self {
        Self {
            root: data_dir.join("checkpoints"),
        }
    }

    fn shadow(&self, ws: &Workspace) -> Result<Shadow, CheckpointError> {
        use std::os::fd::AsFd;
        let held = ws
            .root()
            .as_fd()
            .try_clone_to_owned()
            .map_err(ShadowError::from)?;
        Ok(Shadow::open(&self.root, ws.host_path())?.held_by(held))
    }

    /// What a snapshot of `ws` holds now, with the exclusions it was
    /// chosen by.
    fn select(&self, ws: &Workspace) -> Result<(Selection, Exclusions), CheckpointError> {
        let exclusions = Exclusions::of(ws);
        let selection = select::select(ws, &exclusions, !shadow::git_honours_attr_source())?;
        Ok((selection, exclusions))
    }

    /// The workspace as `task`'s checkpoint would hold it now (its tree
    /// id): most of a checkpoint's cost.
    pub fn snapshot(
        &self,
        task: &str,
        ws: &Workspace,
    ) -> Result<(Shadow, String), CheckpointError> {
        let shadow = self.shadow(ws)?;
        let (selection, _) = self.select(ws)?;
        let tree = shadow.stage(task, &selection, None)?;
        Ok((shadow, tree))
    }

    /// Before the first change of a turn of `task`: a checkpoint, unless
    /// the workspace is as the last one left it.
    pub fn before_turn(
        &self,
        store: &Store,
        task: &str,
        ws: &Workspace,
    ) -> Result<Option<CheckpointRecord>, CheckpointError> {
        let (shadow, tree) = self.snapshot(task, ws)?;
        let last = store.last_checkpoint(task)?;
        if last.as_ref().is_some_and(|l| l.tree == tree) {
            return Ok(None);
        }
        let (api_seq, ui_seq, replies) = store.turn_start(task)?;
        let turn = replies.max(1);
        let commit = shadow.commit(
            &tree,
            last.as_ref().map(|l| l.commit.as_str()),
            &format!("roost checkpoint of task {task}, turn {turn}"),
        )?;
        let record = store.add_checkpoint(task, turn, &commit, &tree, api_seq, ui_seq)?;
        shadow.set_refs(task, &[&record.view.id.to_string(), "head"], &commit)?;
        Ok(Some(record))
    }

    /// After `task` changed `paths` (workspace-relative files, created,
    /// changed or removed): the task's view of them is what it left, and
    /// nothing else (another task's writes meanwhile are not its own).
    pub fn after_change(
        &self,
        task: &str,
        ws: &Workspace,
        paths: &[String],
    ) -> Result<(), CheckpointError> {
        let shadow = self.shadow(ws)?;
        let (selection, _) = self.select(ws)?;
        let tree = shadow.stage(task, &selection, Some(paths))?;
        let commit = shadow.commit(
            &tree,
            None,
            &format!("roost: task {task} as it left the workspace"),
        )?;
        shadow.set_ref(task, "head", &commit)?;
        Ok(())
    }

    fn record(
        &self,
        store: &Store,
        task: &str,
        id: u32,
    ) -> Result<CheckpointRecord, CheckpointError> {
        store
            .checkpoint(task, id)?
            .ok_or_else(|| CheckpointError::Unknown {
                task: task.to_owned(),
                id,
            })
    }

    /// The workspace now, as a tree (the task's own view untouched).
    fn now(
        &self,
        shadow: &Shadow,
        task: &str,
        selection: &Selection,
    ) -> Result<String, CheckpointError> {
        let scratch = format!("{task}-now-{}", uuid::Uuid::now_v7().simple());
        // From the task's index: only what changed since is hashed again.
        shadow.copy_index(task, &scratch);
        let tree = shadow.stage(&scratch, selection, None);
        shadow.forget_index(&scratch);
        Ok(tree?)
    }

    /// What changed in the workspace since checkpoint `id` of `task`.
    pub fn diff(
        &self,
        store: &Store,
        task: &str,
        id: u32,
        ws: &Workspace,
    ) -> Result<String, CheckpointError> {
        let cp = self.record(store, task, id)?;
        let shadow = self.shadow(ws)?;
        let (selection, _) = self.select(ws)?;
        let now = self.now(&shadow, task, &selection)?;
        Ok(shadow.diff(&cp.tree, &now)?)
    }

    /// Bring back checkpoint `id` of `task`: the files the task changed
    /// since (commands' changes included), the conversation, or both. A
    /// file someone else changed since the task last did is a conflict,
    /// left alone unless `force`. Nothing Roost keeps out of snapshots now
    /// is written, whatever an older checkpoint holds.
    pub fn restore(
        &self,
        store: &Store,
        task: &str,
        id: u32,
        ws: &Workspace,
        mode: RestoreMode,
        force: bool,
    ) -> Result<RestoreReport, CheckpointError> {
        let cp = self.record(store, task, id)?;
        let mut report = RestoreReport {
            checkpoint: id,
            ..RestoreReport::default()
        };
        if mode != RestoreMode::ConversationOnly {
            let shadow = self.shadow(ws)?;
            let (selection, exclusions) = self.select(ws)?;
            let head = shadow
                .get_ref(task, "head")
                .map(|c| shadow.tree_of(&c))
                .transpose()?
                .unwrap_or_else(|| cp.tree.clone());
            let now = self.now(&shadow, task, &selection)?;
            let ours = shadow.changed(&cp.tree, &head)?;
            let theirs = shadow.changed(&head, &now)?;
            for path in ours {
                if exclusions.excludes(&path) {
                    continue;
                }
                if theirs.contains(&path) {
                    report.conflicts.push(path.clone());
                    if !force {
                        continue;
                    }
                }
                let rel = RelPath::parse(&path).map_err(|e| CheckpointError::Write {
                    path: path.clone(),
                    why: e.to_string(),
                })?;
                let write = |e: WorkspaceError| CheckpointError::Write {
                    path: path.clone(),
                    why: e.to_string(),
                };
                match shadow.entry(&cp.tree, &path)? {
                    TreeEntry::File { bytes, executable } => {
                        let mode = file_mode(ws, &rel, executable);
                        ws.replace_file(&rel, &bytes, mode).map_err(write)?;
                        report.restored.push(path);
                    }
                    TreeEntry::Symlink(target) => {
                        put_symlink(ws, &rel, &target).map_err(write)?;
                        report.restored.push(path);
                    }
                    TreeEntry::Missing => {
                        ws.remove_file(&rel).map_err(write)?;
                        report.removed.push(path);
                    }
                    TreeEntry::Other => {}
                }
            }
            // The task's view is the workspace as the restore left it.
            let (selection, _) = self.select(ws)?;
            let tree = shadow.stage(task, &selection, None)?;
            let commit = shadow.commit(
                &tree,
                None,
                &format!("roost: task {task} restored to checkpoint {id}"),
            )?;
            shadow.set_ref(task, "head", &commit)?;
        }
        if mode != RestoreMode::FilesOnly {
            store.truncate_conversation(task, cp.api_seq, cp.ui_seq)?;
            report.conversation = true;
        }
        Ok(report)
    }
}

/// The permission bits a restored file gets. Git keeps only whether a
/// file is executable, so a file still there keeps its own bits (a 0600
/// secret stays 0600), with the executable bits set where it is readable
/// or cleared as the checkpoint says; a file that is gone comes back 0644
/// or 0755. Set-id bits are never restored.
fn file_mode(ws: &Workspace, rel: &RelPath, executable: bool) -> u32 {
    let current = split(rel).and_then(|(parent, name)| {
        let st = ws.dir(&parent).ok()?.stat_opt(name).ok().flatten()?;
        (st.kind == Kind::File).then_some(st.mode & 0o777)
    });
    match (current, executable) {
        (Some(m), true) => m | ((m & 0o444) >> 2),
        (Some(m), false) => m & !0o111,
        (None, true) => 0o755,
        (None, false) => 0o644,
    }
}

/// `rel`'s parent directory and last component (`None` for the root).
fn split(rel: &RelPath) -> Option<(RelPath, &OsStr)> {
    let parts = rel.parts();
    let (name, above) = parts.split_last()?;
    let parent = above.iter().fold(RelPath::root(), |p, c| p.join(c));
    Some((parent, name))
}

/// Put a symbolic link to `target` (stored as given, never resolved) at
/// `rel` in place of the file or link there, creating missing parent
/// directories: every step through directory handles, no link followed.
fn put_symlink(ws: &Workspace, rel: &RelPath, target: &[u8]) -> Result<(), WorkspaceError> {
    let Some((parent, name)) = split(rel) else {
        return Err(WorkspaceError::Outside { path: ".".into() });
    };
    ws.ensure_dir(&parent)?;
    let dir = ws.dir(&parent)?;
    let io = |cause| WorkspaceError::Io {
        path: rel.as_string(),
        cause,
    };
    match dir.stat_opt(name).map_err(io)? {
        Some(st) if st.kind == Kind::Dir => {
            return Err(WorkspaceError::WrongKind {
                path: rel.as_string(),
                kind: Kind::Dir.word(),
                wanted: "a file or symbolic link",
            });
        }
        Some(_) => dir.remove_file(name).map_err(io)?,
        None => {}
    }
    dir.symlink(Path::new(OsStr::from_bytes(target)), name)
        .map_err(io)
}
