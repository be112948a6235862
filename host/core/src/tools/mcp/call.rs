//! One MCP server tool as the model calls it, `mcp__<server>__<tool>`:
//! destructive unless its server marks it `readOnlyHint` (so it then needs
//! an active intent and is traced with its arguments and result size),
//! approved like any `mcp` call unless its entry's `alwaysAllow` names it,
//! bounded by its server's timeout, its result cleaned of terminal escapes
//! and cut at a cap (the whole kept for `read_mcp_output`). A server's
//! failure or timeout is an error result, never a stuck task.

use std::sync::Arc;

use serde_json::Value;

use crate::commands::OutputLimits;
use crate::mcp::limits::{self, ToolInfo};
use crate::mcp::{CallError, McpServer, WorkspaceMcp};
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::turn::{RunState, TaskError};
use roost_protocol::{ErrorCode, ToolGroup, ToolSpec};

/// Bytes of a result the model gets whole; past it, its head and tail.
pub(super) const MAX_RESULT: usize = 64 * 1024;
/// Bytes of an oversized result's head and of its tail.
const SHOWN_HALF: usize = 8 * 1024;
/// Largest result kept for paging.
const MAX_SAVED: u64 = 64 << 20;

/// A tool of an MCP server.
pub(super) struct McpTool {
    spec: ToolSpec,
    provider: String,
    server: Arc<McpServer>,
    info: ToolInfo,
    servers: Arc<WorkspaceMcp>,
    /// Offered only once `search_tools` found it.
    pub(super) deferred: bool,
}

impl McpTool {
    pub(super) fn new(server: Arc<McpServer>, info: ToolInfo, servers: Arc<WorkspaceMcp>) -> Self {
        let spec = ToolSpec {
            name: info.offered.clone(),
            description: format!(
                "[MCP server `{}`, tool `{}`] {}",
                server.name(),
                info.name,
                info.description
            ),
            args_schema: info.schema.clone(),
            group: ToolGroup::Mcp,
            destructive: !info.read_only,
            path_args: vec![],
            annotations: Default::default(),
        };
        Self {
            spec,
            provider: format!("mcp:{}", server.name()),
            server,
            info,
            servers,
            deferred: false,
        }
    }

    pub(super) fn spec_ref(&self) -> &ToolSpec {
        &self.spec
    }
}

/// The text of a `tools/call` result (a JSON object as the protocol has
/// it: what a server sent, outside input), and whether the server calls it
/// an error.
pub fn result_text(result: &Value) -> (String, bool) {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts: Vec<String> = Vec::new();
    for c in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let s = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        match s("type") {
            "text" => parts.push(s("text").to_owned()),
            kind @ ("image" | "audio") => parts.push(format!(
                "[{kind} content: {}, {} bytes of base64 not shown]",
                limits::clean_line(s("mimeType"), 64),
                s("data").len()
            )),
            "resource" => {
                let r = c.get("resource").cloned().unwrap_or(Value::Null);
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                match r.get("text").and_then(Value::as_str) {
                    Some(t) => {
                        parts.push(format!("[resource {}]\n{t}", limits::clean_line(uri, 256)))
                    }
                    None => parts.push(format!(
                        "[resource {}: binary, not shown]",
                        limits::clean_line(uri, 256)
                    )),
                }
            }
            "resource_link" => parts.push(format!(
                "[resource link: {} {}]",
                limits::clean_line(s("uri"), 256),
                limits::clean_line(s("name"), 128)
            )),
            other => parts.push(format!(
                "[{} content not shown]",
                limits::clean_line(other, 32)
            )),
        }
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        parts.push(structured.to_string());
    }
    (parts.join("\n"), is_error)
}

/// A server's failure as the model's result.
pub(super) fn failure(e: &CallError) -> Outcome {
    let code = match e {
        CallError::Timeout(..) | CallError::TooLarge(..) => ErrorCode::LimitExceeded,
        _ => ErrorCode::Internal,
    };
    Outcome::error(code, limits::clean_text(&e.to_string(), 4000))
}

#[async_trait::async_trait]
impl ToolExecutor for McpTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> crate::tools::ToolKind {
        crate::tools::ToolKind::Mcp
    }

    fn provider(&self) -> &str {
        &self.provider
    }

    fn deferred(&self) -> bool {
        self.deferred
    }

    /// `alwaysAllow` tools run without asking; the gates before approval
    /// (mode, intent, hooks) still apply.
    fn needs(&self, _state: &RunState, _args: &Value) -> Needs {
        if self.info.always_allow {
            Needs::Nothing
        } else {
            Needs::Approval(ToolGroup::Mcp)
        }
    }

    async fn run(&self, call: Invocation<'_>) -> Result<Outcome, TaskError> {
        let args = match call.args {
            Value::Object(m) => m.clone(),
            Value::Null => serde_json::Map::new(),
            _ => return Ok(Outcome::mistake("the arguments must be a JSON object")),
        };
        let result = match self.server.call(&self.info.name, args).await {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(task = %call.ctx.task.id, tool = %self.spec.name, "{e}");
                return Ok(failure(&e));
            }
        };
        let (text, is_error) = result_text(&result);
        let total = text.len();
        let text = if total > MAX_RESULT {
            self.spill(call.ctx.task.id.as_str(), call.call_id, &text)
        } else {
            limits::clean_text(&text, MAX_RESULT)
        };
        let mut outcome = if is_error {
            Outcome::error(ErrorCode::Internal, text)
        } else {
            Outcome::ok(text)
        };
        if self.mutates(call.state, call.args) {
            outcome.detail = Some(format!(
                "MCP server `{}` tool `{}`: result {total} bytes{}",
                self.server.name(),
                self.info.name,
                if is_error { " (an error)" } else { "" }
            ));
        }
        Ok(outcome)
    }
}

impl McpTool {
    /// Keep the whole of an oversized result; the model gets its head and
    /// tail and the id to page it.
    fn spill(&self, task: &str, call_id: &str, text: &str) -> String {
        let limits = OutputLimits {
            model_half: SHOWN_HALF,
            live: 0,
            saved: MAX_SAVED,
        };
        match self.servers.outputs.start(task, call_id, limits) {
            Ok(mut capture) => {
                let cleaned = limits::clean_text(text, usize::MAX);
                capture.push(cleaned.as_bytes());
                capture.finish().text
            }
            Err(e) => {
                tracing::warn!("an oversized MCP result is not saved: {e}");
                let mut head = limits::clean_text(text, MAX_RESULT);
                head.push_str(&format!(
                    "\n[… the result was {} bytes; the rest could not be saved]",
                    text.len()
                ));
                head
            }
        }
    }
}
