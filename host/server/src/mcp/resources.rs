//! `resources/list` and `resources/read`: the workspace's intents
//! (`roost://intents`, the `active_intents.yaml` as written) and trace
//! (`roost://trace`, the last MiB of `agent_trace.jsonl`, whole lines),
//! and its skills ([`super::skills`]). The sidecars are read through the
//! workspace layer: regular files reached without a link, bounded.

use rmcp::ErrorData;
use rmcp::model::{ReadResourceResult, Resource, ResourceContents};

use super::{Shared, skills};
use roost_core::intents::served;

/// The intents resource.
pub(super) const INTENTS_URI: &str = "roost://intents";
/// The trace resource.
pub(super) const TRACE_URI: &str = "roost://trace";
/// The tail of the trace served.
const TRACE_TAIL: u64 = 1 << 20;

/// Every resource: the sidecars the workspace has, the skills index and
/// every skill's files.
pub(super) fn list(shared: &Shared) -> Vec<Resource> {
    let mut out = Vec::new();
    let sidecars = served::sidecars(shared.grant.workspace());
    if let Some(size) = sidecars.intents {
        out.push(
            Resource::new(INTENTS_URI, "intents")
                .with_description("The workspace's intents (.orchestration/active_intents.yaml)")
                .with_mime_type("application/yaml")
                .with_size(size),
        );
    }
    if let Some(size) = sidecars.trace {
        out.push(
            Resource::new(TRACE_URI, "trace")
                .with_description(
                    "The workspace's agent trace (.orchestration/agent_trace.jsonl), its last MiB",
                )
                .with_mime_type("application/x-ndjson")
                .with_size(size.min(TRACE_TAIL)),
        );
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
            let workspace = shared.grant.workspace();
            let read = if uri == INTENTS_URI {
                served::intents_text(workspace)
            } else {
                served::trace_tail(workspace, TRACE_TAIL)
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
