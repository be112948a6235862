//! Checkpoints: before the first change of each turn — a file tool, a
//! plugin's write, a command — the workspace is snapshotted into its
//! [`shadow`] repository (a turn that changes nothing costs no new
//! checkpoint), with where the conversation stood. After every change the
//! task's own view (its head) is updated too, so a restore knows what the
//! task changed since a checkpoint — commands included — and what someone
//! else changed since: that is a conflict, reported and left alone unless
//! forced. A task's checkpoints are its own: concurrent tasks on one
//! workspace keep separate indexes and refs.

pub mod shadow;

use std::path::{Path, PathBuf};

use shadow::{MAX_FILE_BYTES, Shadow, ShadowError};

use crate::store::{CheckpointRecord, Store, StoreError};
use roost_protocol::{RestoreMode, RestoreReport};
use roost_sandbox::capability::dirfd::Kind;
use roost_sandbox::capability::{RelPath, TreeStat, Workspace};

/// Why a checkpoint operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The shadow repository failed.
    #[error(transparent)]
    Shadow(#[from] ShadowError),
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

/// The most files a workspace walk looks at for files over the size cap.
const MAX_WALKED: usize = 500_000;

impl Checkpoints {
    /// Checkpoints kept under `data_dir/checkpoints/`.
    pub fn new(data_dir: &Path) -> Self {
        Self {
            root: data_dir.join("checkpoints"),
        }
    }

    fn shadow(&self, ws: &Workspace) -> Result<Shadow, CheckpointError> {
        let shadow = Shadow::open(&self.root, ws.host_path())?;
        let rooignore = ws
            .read_text(".rooignore", 1 << 20)
            .ok()
            .flatten()
            .unwrap_or_default();
        shadow.set_excludes(&rooignore, &large_files(ws))?;
        Ok(shadow)
    }

    /// The workspace as `task`'s checkpoint would hold it now (its tree
    /// id): most of a checkpoint's cost.
    pub fn snapshot(
        &self,
        task: &str,
        ws: &Workspace,
    ) -> Result<(Shadow, String), CheckpointError> {
        let shadow = self.shadow(ws)?;
        let tree = shadow.snapshot(task, None)?;
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
        shadow.set_ref(task, &record.view.id.to_string(), &commit)?;
        shadow.set_ref(task, "head", &commit)?;
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
        let tree = shadow.snapshot(task, Some(paths))?;
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
    fn now(&self, shadow: &Shadow, task: &str) -> Result<String, CheckpointError> {
        let scratch = format!("{task}-now-{}", uuid::Uuid::now_v7().simple());
        // From the task's index: only what changed since is hashed again.
        shadow.copy_index(task, &scratch);
        let tree = shadow.snapshot(&scratch, None);
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
        let now = self.now(&shadow, task)?;
        Ok(shadow.diff(&cp.tree, &now)?)
    }

    /// Bring back checkpoint `id` of `task`: the files the task changed
    /// since (commands' changes included), the conversation, or both. A
    /// file someone else changed since the task last did is a conflict,
    /// left alone unless `force`.
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
            let head = shadow
                .get_ref(task, "head")
                .map(|c| shadow.tree_of(&c))
                .transpose()?
                .unwrap_or_else(|| cp.tree.clone());
            let now = self.now(&shadow, task)?;
            let ours = shadow.changed(&cp.tree, &head)?;
            let theirs = shadow.changed(&head, &now)?;
            for path in ours {
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
                let write = |e: roost_sandbox::capability::WorkspaceError| CheckpointError::Write {
                    path: path.clone(),
                    why: e.to_string(),
                };
                match shadow.file(&cp.tree, &path)? {
                    Some((bytes, mode)) => {
                        ws.replace_file(&rel, &bytes, mode & 0o777).map_err(write)?;
                        report.restored.push(path);
                    }
                    None => {
                        ws.remove_file(&rel).map_err(write)?;
                        report.removed.push(path);
                    }
                }
            }
            // The task's view is the workspace as the restore left it.
            let tree = shadow.snapshot(task, None)?;
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

/// Workspace-relative paths of files over the size cap, found through
/// the workspace layer (no link followed, no content read: a hostile
/// `.gitignore` or `.rooignore` linked to `/dev/zero` is never opened).
fn large_files(ws: &Workspace) -> Vec<String> {
    let listed = TreeStat::take(
        ws,
        &[RelPath::root()],
        &[".git", ".orchestration"],
        MAX_WALKED,
    )
    .unwrap_or_default();
    listed
        .iter()
        .filter(|(_, st)| st.kind == Kind::File && st.size > MAX_FILE_BYTES)
        .map(|(p, _)| p.to_owned())
        .collect()
}
