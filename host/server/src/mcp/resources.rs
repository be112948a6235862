//! `resources/list` and `resources/read`: the workspace's intents
//! (`roost://intents`, the `active_intents.yaml` as written) and trace
//! (`roost://trace`, the last MiB of `agent_trace.jsonl`, whole lines),
//! and its skills ([`super::skills`]). The sidecars are read through the
//! workspace layer: regular files reached without a link, bounded.

use std::ffi::OsStr;
use std::io::{Read, Seek, SeekFrom};

use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents};

use super::{Shared, skills};
use roost_core::intents::ORCHESTRATION_DIR;
use roost_sandbox::capability::{RelPath, Workspace};

/// The intents resource.
pub(super) const INTENTS_URI: &str = "roost://intents";
/// The trace resource.
pub(super) const TRACE_URI: &str = "roost://trace";
const INTENTS_FILE: &str = "active_intents.yaml";
const TRACE_FILE: &str = "agent_trace.jsonl";
/// Largest intents file served.
const MAX_INTENTS: u64 = 1 << 20;
/// The tail of the trace served.
const TRACE_TAIL: u64 = 1 << 20;

/// Every resource: the sidecars the workspace has, the skills index and
/// every skill's files.
pub(super) fn list(shared: &Shared) -> Vec<Resource> {
    let mut out = Vec::new();
    if let Ok(ws) = Workspace::open(shared.grant.workspace()) {
        if let Some(size) = sidecar_size(&ws, INTENTS_FILE) {
            out.push(
                Resource::new(INTENTS_URI, "intents")
                    .with_description(
                        "The workspace's intents (.orchestration/active_intents.yaml)",
                    )
                    .with_mime_type("application/yaml")
                    .with_size(size),
            );
        }
        if let Some(size) = sidecar_size(&ws, TRACE_FILE) {
            out.push(
                Resource::new(TRACE_URI, "trace")
                    .with_description(
                        "The workspace's agent trace (.orchestration/agent_trace.jsonl), its last MiB",
                    )
                    .with_mime_type("application/x-ndjson")
                    .with_size(size.min(TRACE_TAIL)),
            );
        }
    }
    let skills = shared.skills();
    out.push(
        Resource::new(skills::INDEX_URI, "skills-index")
            .with_description("The skills this server serves (Agent Skills discovery index)")
            .with_mime_type("application/json"),
    );
    out.extend(skills::resources(&skills));
    out
}

/// The resource at `uri`.
pub(super) fn read(shared: &Shared, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let not_found = || ErrorData::resource_not_found(format!("no resource {uri}"), None);
    let text = |text: String, mime: &str| {
        Ok(ReadResourceResult::new(vec![
            ResourceContents::text(text, uri).with_mime_type(mime),
        ]))
    };
    match uri {
        INTENTS_URI | TRACE_URI => {
            let ws = Workspace::open(shared.grant.workspace())
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            let read = if uri == INTENTS_URI {
                read_intents(&ws)
            } else {
                read_trace(&ws)
            };
            match read {
                Ok(Some(t)) if uri == INTENTS_URI => text(t, "application/yaml"),
                Ok(Some(t)) => text(t, "application/x-ndjson"),
                Ok(None) => Err(not_found()),
                Err(e) => Err(ErrorData::internal_error(e, None)),
            }
        }
        skills::INDEX_URI => text(skills::index(&shared.skills()), "application/json"),
        _ => {
            let (name, rel) = skills::parse_uri(uri).ok_or_else(not_found)?;
            let served = shared.skills();
            let skill = served
                .iter()
                .find(|s| s.name() == name)
                .ok_or_else(not_found)?;
            let contents = skills::contents(skill, &rel, uri).ok_or_else(not_found)?;
            Ok(ReadResourceResult::new(vec![contents]))
        }
    }
}

/// The size of an orchestration sidecar, when it is a regular file.
fn sidecar_size(ws: &Workspace, name: &str) -> Option<u64> {
    let dir = ws.dir(&RelPath::parse(ORCHESTRATION_DIR).ok()?).ok()?;
    let f = dir.open_read(OsStr::new(name)).ok()?;
    f.metadata().ok().map(|m| m.len())
}

fn read_intents(ws: &Workspace) -> Result<Option<String>, String> {
    ws.read_text_strict(&format!("{ORCHESTRATION_DIR}/{INTENTS_FILE}"), MAX_INTENTS)
        .map_err(|e| e.to_string())
}

/// The trace's last [`TRACE_TAIL`] bytes, from the first whole line.
fn read_trace(ws: &Workspace) -> Result<Option<String>, String> {
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
    let start = len.saturating_sub(TRACE_TAIL);
    f.seek(SeekFrom::Start(start)).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    f.take(TRACE_TAIL)
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
