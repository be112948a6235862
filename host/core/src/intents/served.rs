//! The workspace's intents file and its trace as a front-end serves them
//! (the MCP server's `roost://` resources): each reached by handle inside
//! the workspace, following no link, bounded.

use std::ffi::OsStr;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::ORCHESTRATION_DIR;
use roost_sandbox::capability::{RelPath, Workspace};

/// The intents file's name in `.orchestration/`.
pub const INTENTS_FILE: &str = "active_intents.yaml";
/// The trace's name in `.orchestration/`.
pub const TRACE_FILE: &str = "agent_trace.jsonl";
/// Largest intents file served.
pub const MAX_INTENTS: u64 = 1 << 20;

/// The sizes of the sidecars a workspace has (regular files only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sidecars {
    /// `active_intents.yaml`.
    pub intents: Option<u64>,
    /// `agent_trace.jsonl`.
    pub trace: Option<u64>,
}

/// Which sidecars `workspace` has (none when it cannot be opened).
pub fn sidecars(workspace: &Path) -> Sidecars {
    let Ok(ws) = Workspace::open(workspace) else {
        return Sidecars::default();
    };
    Sidecars {
        intents: size(&ws, INTENTS_FILE),
        trace: size(&ws, TRACE_FILE),
    }
}

fn size(ws: &Workspace, name: &str) -> Option<u64> {
    let dir = ws.dir(&RelPath::parse(ORCHESTRATION_DIR).ok()?).ok()?;
    let f = dir.open_read(OsStr::new(name)).ok()?;
    f.metadata().ok().map(|m| m.len())
}

/// The intents file's text (`None`: there is none), at most
/// [`MAX_INTENTS`] bytes.
pub fn intents_text(workspace: &Path) -> Result<Option<String>, String> {
    let ws = Workspace::open(workspace).map_err(|e| e.to_string())?;
    ws.read_text_strict(&format!("{ORCHESTRATION_DIR}/{INTENTS_FILE}"), MAX_INTENTS)
        .map_err(|e| e.to_string())
}

/// The trace's last `tail` bytes from its first whole line (`None`: there
/// is no trace).
pub fn trace_tail(workspace: &Path, tail: u64) -> Result<Option<String>, String> {
    let ws = Workspace::open(workspace).map_err(|e| e.to_string())?;
    let Ok(rel) = RelPath::parse(ORCHESTRATION_DIR) else {
        return Ok(None);
    };
    let Ok(dir) = ws.dir(&rel) else {
        return Ok(None);
    };
    let mut f = match dir.open_read(OsStr::new(TRACE_FILE)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{ORCHESTRATION_DIR}/{TRACE_FILE}: {e}")),
    };
    let len = f.metadata().map_err(|e| e.to_string())?.len();
    let start = len.saturating_sub(tail);
    f.seek(SeekFrom::Start(start)).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    f.take(tail)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&bytes);
    // Cut mid-line: drop the partial first line.
    let text = if start > 0 {
        text.split_once('\n').map_or("", |(_, rest)| rest)
    } else {
        &text
    };
    Ok(Some(text.to_owned()))
}
