//! What an edit would do, shown before a person approves it (as Roo and
//! Codex show a diff, not the call's JSON). The call is dry-run by the very
//! tool that will run it, against a scratch directory holding copies of the
//! files it declares, so the preview is the tool's own result whatever its
//! logic, and the workspace is not touched.

use std::path::Path;

use serde_json::Value;

use super::snapshot::{self, FileState};
use crate::tools::ToolSpec;
use roost_sandbox::capability::{Grant, Limits, Workspace};
use roost_sandbox::plugins::{LoadedPlugin, PluginEngine};

/// At most this many lines of a preview are shown; the rest is counted.
const MAX_PREVIEW_LINES: usize = 400;

/// The diff `spec`'s call with `args` would make to the declared files in
/// `ws`, or why it cannot be shown: `None` when the tool declares no files
/// (nothing to preview; the arguments are shown instead).
pub(crate) async fn edit_preview(
    engine: &PluginEngine,
    plugin: &LoadedPlugin,
    spec: &ToolSpec,
    args: &Value,
    ws: &Workspace,
    limits: Limits,
) -> Option<String> {
    let before = snapshot::before(ws, spec, args);
    if before.is_empty() {
        return None;
    }
    let scratch = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            return Some(format!(
                "(no preview: cannot make a scratch directory: {e})"
            ));
        }
    };
    if let Err(why) = copy_declared(&before, scratch.path()) {
        return Some(format!("(no preview: {why})"));
    }
    let grant = Grant::new(scratch.path()).read().write(".").limits(limits);
    let result = engine
        .call(plugin, &spec.name, &args.to_string(), &grant)
        .await;
    let after = match Workspace::open(scratch.path()) {
        Ok(scratch_ws) => snapshot::after(&scratch_ws, &before),
        Err(e) => return Some(format!("(no preview: {e})")),
    };
    Some(match (result, snapshot::diff(&before, &after)) {
        (Err(e), _) => format!("(the call would fail: {}: {})", e.code, e.message),
        (Ok(_), Some(diff)) => clip(&diff),
        (Ok(_), None) => "(no change to the declared files)".to_owned(),
    })
}

/// Writes the declared files' current content (or nothing, for an absent
/// file) under `scratch`, at the same relative paths, through the
/// workspace layer. A file the host could not read in full cannot be
/// previewed.
fn copy_declared(before: &snapshot::Snapshot, scratch: &Path) -> Result<(), String> {
    let scratch = Workspace::open(scratch).map_err(|e| e.to_string())?;
    for (rel, state) in before {
        match state {
            FileState::Absent => {}
            FileState::File {
                bytes: Some(bytes),
                mode,
                ..
            } => {
                let path = scratch.normalize(rel).map_err(|e| e.to_string())?;
                scratch
                    .create_file(&path, bytes, *mode)
                    .map_err(|e| e.to_string())?;
            }
            FileState::File { size, .. } => {
                return Err(format!("{rel} is too large to preview ({size} bytes)"));
            }
            FileState::Unreadable(why) => return Err(format!("{rel}: {why}")),
        }
    }
    Ok(())
}

/// `text` cut to [`MAX_PREVIEW_LINES`] lines, saying how many were left out.
fn clip(text: &str) -> String {
    let total = text.lines().count();
    if total <= MAX_PREVIEW_LINES {
        return text.to_owned();
    }
    let mut out: String = text
        .lines()
        .take(MAX_PREVIEW_LINES)
        .flat_map(|l| [l, "\n"])
        .collect();
    out.push_str(&format!(
        "… {} more lines not shown\n",
        total - MAX_PREVIEW_LINES
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_previews_are_clipped_with_a_count() {
        let text = "+x\n".repeat(MAX_PREVIEW_LINES + 7);
        let c = clip(&text);
        assert_eq!(c.lines().count(), MAX_PREVIEW_LINES + 1);
        assert!(c.ends_with("… 7 more lines not shown\n"), "{c}");
        assert_eq!(clip("+a\n"), "+a\n");
    }
}
