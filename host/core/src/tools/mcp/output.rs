//! `read_mcp_output(id, offset?)`: a page of an MCP tool's result that
//! was too large for the model to get whole, kept in the data directory.
//! A task reads only its own calls' results.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::mcp::WorkspaceMcp;
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::turn::{RunState, TaskError};
use roost_protocol::{ToolGroup, ToolSpec};

/// Name of the tool that pages an MCP result.
pub const NAME: &str = "read_mcp_output";

/// The `read_mcp_output` tool.
pub(super) struct ReadMcpOutput {
    spec: ToolSpec,
    servers: Arc<WorkspaceMcp>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    id: String,
    #[serde(default)]
    offset: Option<u64>,
}

impl ReadMcpOutput {
    pub(super) fn new(servers: Arc<WorkspaceMcp>) -> Self {
        Self {
            spec: ToolSpec {
                name: NAME.into(),
                description:
                    "Read the whole result of an MCP tool call that was too large to show, \
                    a page at a time: the cut result gives its id and the offset to go on from."
                        .into(),
                args_schema: json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The result's id, as the cut result gave it."},
                        "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to read from (default 0)."}
                    },
                    "required": ["id"],
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

#[async_trait::async_trait]
impl ToolExecutor for ReadMcpOutput {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn provider(&self) -> &str {
        HOST
    }

    /// Reading what its own calls returned needs no one's approval.
    fn needs(&self, _state: &RunState, _args: &Value) -> Needs {
        Needs::Nothing
    }

    async fn run(&self, call: Invocation<'_>) -> Result<Outcome, TaskError> {
        let a: Args = match serde_json::from_value(call.args.clone()) {
            Ok(a) => a,
            Err(e) => return Ok(Outcome::mistake(e.to_string())),
        };
        Ok(crate::tools::command::read_output::page(
            &self.servers.outputs,
            &call.ctx.task.id,
            &a.id,
            a.offset.unwrap_or(0),
            NAME,
        ))
    }
}
