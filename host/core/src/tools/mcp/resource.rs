//! Roo's `access_mcp_resource(server_name, uri)`: read a resource a
//! connected MCP server offers (a `skill://` file of a server's skills
//! among them: read, never run). Read-only; approved like any `mcp` call.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use super::call::{MAX_RESULT, failure};
use crate::mcp::WorkspaceMcp;
use crate::mcp::limits;
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Outcome, ToolExecutor};
use crate::turn::TaskError;
use roost_protocol::{ToolGroup, ToolSpec};

/// Name of the tool.
pub const NAME: &str = "access_mcp_resource";

/// The `access_mcp_resource` tool.
pub(super) struct AccessMcpResource {
    spec: ToolSpec,
    servers: Arc<WorkspaceMcp>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    server_name: String,
    uri: String,
}

impl AccessMcpResource {
    pub(super) fn new(servers: Arc<WorkspaceMcp>) -> Self {
        let mut description =
            "Read a resource (a file, a document, a skill's instructions) that a \
            connected MCP server offers, by the server's name and the resource's URI."
                .to_owned();
        // Skills the servers offer are named, with their server, so the
        // model can read them; they never run on their own.
        let mut skills = Vec::new();
        for s in servers.servers.values() {
            for name in crate::mcp::server::skills_in(&s.resources())
                .into_iter()
                .take(50)
            {
                skills.push(format!(
                    "{} (server `{}`, uri skill://{}/SKILL.md)",
                    limits::clean_line(&name, 64),
                    s.name(),
                    limits::clean_line(&name, 64)
                ));
            }
        }
        if !skills.is_empty() {
            description.push_str(" Skills the servers offer: ");
            description.push_str(&skills.join("; "));
            description.push('.');
        }
        Self {
            spec: ToolSpec {
                name: NAME.into(),
                description,
                args_schema: json!({
                    "type": "object",
                    "properties": {
                        "server_name": {"type": "string", "description": "The MCP server's name."},
                        "uri": {"type": "string", "description": "The resource's URI."}
                    },
                    "required": ["server_name", "uri"],
                    "additionalProperties": false
                }),
                group: ToolGroup::Mcp,
                destructive: false,
                path_args: vec![],
                annotations: Default::default(),
            },
            servers,
        }
    }
}

/// The text of a `resources/read` result.
fn contents_text(result: &Value) -> String {
    let mut parts = Vec::new();
    for c in result
        .get("contents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let uri = c.get("uri").and_then(Value::as_str).unwrap_or("");
        match c.get("text").and_then(Value::as_str) {
            Some(t) => parts.push(format!("[{}]\n{t}", limits::clean_line(uri, 256))),
            None => parts.push(format!(
                "[{}: binary ({}), not shown]",
                limits::clean_line(uri, 256),
                limits::clean_line(c.get("mimeType").and_then(Value::as_str).unwrap_or("?"), 64)
            )),
        }
    }
    parts.join("\n")
}

#[async_trait::async_trait]
impl ToolExecutor for AccessMcpResource {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> crate::tools::ToolKind {
        crate::tools::ToolKind::Mcp
    }

    fn provider(&self) -> &str {
        HOST
    }

    async fn run(&self, call: Invocation<'_>) -> Result<Outcome, TaskError> {
        let a: Args = match serde_json::from_value(call.args.clone()) {
            Ok(a) => a,
            Err(e) => return Ok(Outcome::mistake(e.to_string())),
        };
        let Some(server) = self.servers.servers.get(&a.server_name) else {
            let names: Vec<&str> = self.servers.servers.keys().map(String::as_str).collect();
            return Ok(Outcome::mistake(format!(
                "there is no MCP server `{}`; servers: {}",
                limits::clean_line(&a.server_name, 64),
                names.join(", ")
            )));
        };
        match server.read_resource(&a.uri).await {
            Ok(r) => Ok(Outcome::ok(limits::clean_text(
                &contents_text(&r),
                MAX_RESULT,
            ))),
            Err(e) => Ok(failure(&e)),
        }
    }
}
