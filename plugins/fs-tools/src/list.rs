//! `list_files`: a directory's entries, honouring .gitignore and .rooignore.

use ignore::WalkBuilder;
use roost_sdk::{Output, ToolError, ToolResult, workspace};
use serde::Deserialize;

pub const DESCRIPTION: &str = "List files and directories under a workspace directory (directories end \
with '/'). recursive lists the whole tree; otherwise only the top level. Entries ignored by .gitignore \
or .rooignore are left out, and so is .git. At most `limit` entries (default 200) are returned.";

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

/// A walker over `dir` with Roo's filters: ignore files honoured even
/// outside git repositories, hidden files shown, `.git` skipped.
pub fn walker(dir: &std::path::Path, max_depth: Option<usize>) -> WalkBuilder {
    let mut b = WalkBuilder::new(dir);
    b.hidden(false)
        .require_git(false)
        .add_custom_ignore_filename(".rooignore")
        .max_depth(max_depth)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|e| e.file_name() != ".git");
    b
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
    let mut entries = Vec::new();
    let mut truncated = false;
    for result in walker(&dir, if a.recursive { None } else { Some(1) }).build() {
        let Ok(entry) = result else { continue };
        if entry.depth() == 0 {
            continue;
        }
        if entries.len() >= limit {
            truncated = true;
            break;
        }
        let mut rel = workspace::relative(entry.path());
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            rel.push('/');
        }
        entries.push(rel);
    }
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
