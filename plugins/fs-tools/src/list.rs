//! `list_files`: a directory's entries, honouring .gitignore and .rooignore.

use std::path::Path;
use std::sync::Arc;

use ignore::WalkBuilder;
use roost_sdk::{Output, ToolError, ToolResult, workspace};
use serde::Deserialize;

use crate::links::{Guard, Refused, relative};

pub const DESCRIPTION: &str = "List files and directories under a workspace directory (directories end \
with '/'). recursive lists the whole tree; otherwise only the top level. Entries ignored by .gitignore \
or .rooignore are left out, and so are .git and symlinks leading to ignored paths or out of the \
workspace. At most `limit` entries (default 200) are returned.";

/// Arguments of `list_files`.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListArgs {
    /// Workspace-relative directory ("." for the workspace root).
    pub path: String,
    /// List recursively.
    #[serde(default)]
    pub recursive: bool,
    /// Maximum number of entries.
    #[schemars(range(min = 1))]
    pub limit: Option<usize>,
}

/// A walker over `dir` (inside the workspace `guard` checks) with Roo's
/// filters: ignore files honoured even outside git repositories, hidden
/// files shown, `.git` skipped. Symlinks are not followed, and one is left
/// out unless its target is inside the workspace, resolvable and not
/// `.rooignore`d. If `dir` itself is reached through a symlink, every entry
/// is checked against `.rooignore` at its real location. Refused if `dir`
/// really is outside the workspace, unresolvable or ignored.
pub fn walker(
    guard: &Arc<Guard>,
    dir: &Path,
    max_depth: Option<usize>,
) -> Result<WalkBuilder, Refused> {
    let start = guard.check(dir, false)?;
    let g = Arc::clone(guard);
    let dir_owned = dir.to_owned();
    let mut b = WalkBuilder::new(dir);
    b.hidden(false)
        .require_git(false)
        .add_custom_ignore_filename(".rooignore")
        .max_depth(max_depth)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |e| {
            if e.file_name() == ".git" {
                return false;
            }
            if e.depth() == 0 {
                return true;
            }
            if e.path_is_symlink() {
                return g.allows_symlink(e.path());
            }
            if !start.via_link {
                return true;
            }
            // The walker matched ignore files against the link's name;
            // match the real place too.
            let Ok(sub) = e.path().strip_prefix(&dir_owned) else {
                return false;
            };
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            !g.blocks(&start.rel.join(sub), is_dir, true)
        });
    Ok(b)
}

/// The entries under `dir` (workspace at `root`), root-relative,
/// directories ending in '/', at most `limit`; and whether there were more.
pub fn list_in(
    root: &Path,
    dir: &Path,
    recursive: bool,
    limit: usize,
) -> Result<(Vec<String>, bool), Refused> {
    let guard = Arc::new(Guard::new(root));
    let mut entries = Vec::new();
    let mut truncated = false;
    for result in walker(&guard, dir, if recursive { None } else { Some(1) })?.build() {
        let Ok(entry) = result else { continue };
        if entry.depth() == 0 {
            continue;
        }
        if entries.len() >= limit {
            truncated = true;
            break;
        }
        let mut rel = relative(root, entry.path());
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            rel.push('/');
        }
        entries.push(rel);
    }
    Ok((entries, truncated))
}

pub fn list_files(a: ListArgs) -> ToolResult {
    let dir = workspace::resolve(&a.path)?;
    let meta = std::fs::metadata(&dir).map_err(|e| ToolError::io(&a.path, &e))?;
    if !meta.is_dir() {
        return Err(ToolError::invalid_args(format!(
            "{} is not a directory",
            a.path
        )));
    }
    let limit = a.limit.unwrap_or(200);
    let (entries, truncated) = list_in(Path::new(workspace::ROOT), &dir, a.recursive, limit)
        .map_err(|r| r.error(&a.path))?;
    let mut text = if entries.is_empty() {
        "No files found.".to_owned()
    } else {
        entries.join("\n")
    };
    if truncated {
        text.push_str(&format!(
            "\n\n(File list truncated at {limit} entries. Use list_files on specific subdirectories to see more.)"
        ));
    }
    Ok(Output::text(text)
        .with_data(serde_json::json!({"path": a.path, "entries": entries, "truncated": truncated})))
}
