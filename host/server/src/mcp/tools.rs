//! `tools/list` and `tools/call`: Roost's component tools (first-party and
//! installed), each call made through the one dispatch every call takes
//! (`roost_core::call::direct`), under the grant the server started with.

use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

use super::Shared;
use roost_core::call::direct::DirectCall;
use roost_core::tools::{ToolError, ToolOutput, ToolSpec};

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

/// Call `name` with `args` for `caller` (who the trace names), through
/// the one dispatch a task's calls take (`Agent::call_direct`): the path,
/// mode, schema and intent gates, the grant's mode hooks, the write
/// session and the trace. A call the dispatch refuses is a tool error the
/// caller reads (as MCP asks since 2025-11-25), not a protocol error.
pub(super) async fn call(
    shared: &Shared,
    name: &str,
    args: Option<JsonObject>,
    caller: &str,
    traceparent: Option<&str>,
) -> Result<CallToolResult, ErrorData> {
    if shared
        .agent
        .registry
        .get(name)
        .filter(|t| t.component().is_some())
        .is_none()
    {
        return Err(ErrorData::invalid_params(
            format!("unknown tool `{name}`"),
            None,
        ));
    }
    let config = &shared.agent.config;
    let outcome = shared
        .agent
        .call_direct(DirectCall {
            caller,
            name,
            args: Value::Object(args.unwrap_or_default()),
            grant: &shared.grant,
            limits: config.limits,
            network: None,
            guard_budget: config.guard_budget,
            traceparent,
        })
        .await;
    Ok(match outcome {
        Ok(o) => match o.result {
            Ok(out) => success(out),
            Err(e) => failure(&e),
        },
        Err(e) => refusal(e.to_string()),
    })
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
