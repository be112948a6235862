//! `tools/list` and `tools/call`: Roost's component tools (first-party and
//! installed), each call made through the engine's direct-call path —
//! the path gate, the plugin's install-time ceiling, the write session and
//! the sandbox with the server's grant — and, for destructive calls in a
//! workspace with intents on, traced as a task's call is.

use std::path::Path;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

use super::Shared;
use roost_core::call::direct::DirectCall;
use roost_core::call::paths;
use roost_core::intents::{self, FileChange, Trace, TraceEntry};
use roost_core::tools::{RegisteredTool, ToolError, ToolOutput, ToolSpec};
use roost_protocol::TraceKind;
use roost_sandbox::capability::{RooIgnore, Workspace};

/// Largest declared file read before and after a call to trace its
/// change; a larger one is named in the entry's detail instead.
const MAX_TRACED_FILE: u64 = 16 << 20;
/// The mode a call outside a task is traced under.
const MODE: &str = "mcp";

/// Every tool a call outside a task can run: the component tools.
/// Host-native tools talk to a person or a task and are not offered.
pub(super) fn list(shared: &Shared) -> Vec<Tool> {
    shared
        .agent
        .registry
        .iter()
        .filter(|t| t.component().is_some())
        .map(|t| tool_of(&t.spec))
        .collect()
}

/// The MCP form of a tool spec: its schema as `inputSchema`, its
/// annotations from what Roost knows of it.
fn tool_of(spec: &ToolSpec) -> Tool {
    let mut schema: JsonObject = match &spec.args_schema {
        Value::Object(o) => o.clone(),
        _ => JsonObject::new(),
    };
    // MCP wants an object schema; Roost's tools take an object of args.
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".to_owned()));
    let mut annotations = ToolAnnotations::new()
        .read_only(!spec.destructive)
        .destructive(spec.destructive)
        .idempotent(spec.annotations.idempotent)
        .open_world(spec.annotations.open_world);
    annotations.title = spec.annotations.title.clone();
    Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        Arc::new(schema),
    )
    .with_annotations(annotations)
}

/// Call `name` with `args` for `caller` (who the trace names).
pub(super) async fn call(
    shared: &Shared,
    name: &str,
    args: Option<JsonObject>,
    caller: &str,
) -> Result<CallToolResult, ErrorData> {
    let Some(tool) = shared
        .agent
        .registry
        .get(name)
        .filter(|t| t.component().is_some())
    else {
        return Err(ErrorData::invalid_params(
            format!("unknown tool `{name}`"),
            None,
        ));
    };
    let mut args = Value::Object(args.unwrap_or_default());
    // Invalid arguments are the caller's to fix: a tool error it reads
    // (as MCP asks since 2025-11-25), not a protocol error.
    if let Some(why) = tool.validator.explain(name, &args) {
        return Ok(refusal(why));
    }
    let workspace = shared.grant.workspace();
    let ws = match Workspace::open(workspace) {
        Ok(ws) => ws,
        Err(e) => return Ok(refusal(format!("cannot open the workspace: {e}"))),
    };
    // Declared paths normalised (and refused) as the call will be, so the
    // trace names what was written.
    if let Err(r) = paths::check(&ws, &RooIgnore::load_in(&ws), &tool.spec, &mut args) {
        return Ok(refusal(r.message));
    }
    if let Some(why) = outside_intent(shared, tool, &args) {
        return Ok(refusal(why));
    }
    let destructive = tool.spec.destructive;
    let before = if destructive {
        declared(&ws, &tool.spec, &args)
    } else {
        Vec::new()
    };
    let (read, write) = access(shared, tool);
    let config = &shared.agent.config;
    let outcome = shared
        .agent
        .call_direct(DirectCall {
            name,
            args: args.clone(),
            workspace,
            read,
            write,
            limits: config.limits,
            network: None,
            guard_budget: config.guard_budget,
        })
        .await;
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return Ok(refusal(e.to_string())),
    };
    if intents::enabled_in(&ws) && (destructive || !outcome.network.is_empty()) {
        let mut entry = TraceEntry::now(
            if destructive {
                TraceKind::Mutation
            } else {
                TraceKind::Network
            },
            caller,
            shared.grant.intent_id(),
            MODE,
            name,
            &args,
        );
        let (files, skipped) = changes(&ws, before);
        entry.files = files;
        entry.detail = detail(&outcome.result, &skipped);
        entry.network = outcome.network;
        append(workspace, &entry);
    }
    Ok(match outcome.result {
        Ok(out) => success(out),
        Err(e) => failure(&e),
    })
}

/// What a call may use: the server's grant, at most what the plugin was
/// granted at install (a plugin without read or write access gets none
/// rather than a refusal), and write access only for a tool that writes.
fn access<'a>(shared: &'a Shared, tool: &RegisteredTool) -> (bool, &'a [std::path::PathBuf]) {
    let read = shared.grant.read() && tool.access.read;
    let write = if tool.spec.destructive && tool.access.write {
        shared.grant.write()
    } else {
        &[]
    };
    (read, write)
}

/// Under an intent, a destructive call's declared paths must lie in its
/// scope (the intent gate a task's call passes); the refusal when not.
fn outside_intent(shared: &Shared, tool: &RegisteredTool, args: &Value) -> Option<String> {
    let scope = shared.grant.scope()?;
    if !tool.spec.destructive {
        return None;
    }
    tool.spec
        .path_args
        .iter()
        .filter_map(|a| args.get(a).and_then(Value::as_str))
        .find(|p| !scope.allows(p))
        .map(|p| {
            format!(
                "`{p}` is outside the owned_scope of intent {}: this server may not change it",
                scope.intent()
            )
        })
}

/// A declared file's content before the call (`None`: no file), or why it
/// was not read.
type Before = (String, Result<Option<Vec<u8>>, String>);

fn read_declared(ws: &Workspace, rel: &str) -> Result<Option<Vec<u8>>, String> {
    let path = ws.normalize(rel).map_err(|e| e.to_string())?;
    ws.read(&path, MAX_TRACED_FILE).map_err(|e| e.to_string())
}

/// The files `spec`'s path arguments name, as they are now.
fn declared(ws: &Workspace, spec: &ToolSpec, args: &Value) -> Vec<Before> {
    spec.path_args
        .iter()
        .filter_map(|a| args.get(a).and_then(Value::as_str))
        .map(|p| (p.to_owned(), read_declared(ws, p)))
        .collect()
}

/// What changed in the declared files, and those that could not be
/// compared (too large, unreadable).
fn changes(ws: &Workspace, before: Vec<Before>) -> (Vec<FileChange>, Vec<String>) {
    let (mut files, mut skipped) = (Vec::new(), Vec::new());
    for (rel, old) in before {
        let new = read_declared(ws, &rel);
        match (old, new) {
            (Ok(old), Ok(new)) => {
                files.extend(FileChange::between(&rel, old.as_deref(), new.as_deref()));
            }
            (Err(why), _) | (_, Err(why)) => skipped.push(format!("{rel}: not compared ({why})")),
        }
    }
    (files, skipped)
}

/// The entry's detail: the error, if the call failed, and files left out.
fn detail(result: &Result<ToolOutput, ToolError>, skipped: &[String]) -> Option<String> {
    let mut parts: Vec<String> = skipped.to_vec();
    match result {
        Ok(out) => parts.insert(0, format!("result {} bytes", out.text.len())),
        Err(e) => parts.insert(0, format!("error {}: {}", e.code, e.message)),
    }
    Some(parts.join("; "))
}

/// Append to the workspace's trace; a failure is logged, not the call's.
fn append(workspace: &Path, entry: &TraceEntry) {
    if let Err(e) = Trace::of(workspace).append(entry) {
        tracing::error!(
            tool = %entry.tool,
            "cannot append to .orchestration/agent_trace.jsonl: {e}; this call is not in the trace"
        );
    }
}

fn success(out: ToolOutput) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(out.text)])
}

/// A tool's error, as `roost tool call` prints it.
fn failure(e: &ToolError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "error [{}]: {}",
        e.code, e.message
    ))])
}

/// A call Roost refused before or around running it.
fn refusal(why: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(why.into())])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use roost_core::tools::ToolGroup;

    #[test]
    fn annotations_come_from_the_spec() {
        let mut spec = ToolSpec {
            name: "write_to_file".into(),
            description: "Write a file.".into(),
            args_schema: serde_json::json!({"properties": {"path": {"type": "string"}}}),
            group: ToolGroup::Edit,
            destructive: true,
            path_args: vec!["path".into()],
            annotations: Default::default(),
        };
        spec.annotations.idempotent = true;
        let t = serde_json::to_value(tool_of(&spec)).expect("json");
        assert_eq!(t["inputSchema"]["type"], "object");
        assert_eq!(t["annotations"]["readOnlyHint"], false);
        assert_eq!(t["annotations"]["destructiveHint"], true);
        assert_eq!(t["annotations"]["idempotentHint"], true);
        spec.destructive = false;
        let t = serde_json::to_value(tool_of(&spec)).expect("json");
        assert_eq!(t["annotations"]["readOnlyHint"], true);
        assert_eq!(t["annotations"]["destructiveHint"], false);
    }
}
