//! `read_command_output(id, offset?)`: a page of the whole output of one
//! of the task's own commands, kept in the data directory when the model
//! got only its head and tail (Roo's command output paging).

use serde::Deserialize;
use serde_json::{Value, json};

use crate::commands::{CommandHost, OutputError, OutputStore};
use crate::tools::HOST;
use crate::tools::executor::{Invocation, Needs, Outcome, ToolExecutor};
use crate::tools::host_spec;
use crate::turn::{RunState, TaskError};
use roost_protocol::{ErrorCode, ToolGroup, ToolSpec};

/// Name of the tool that pages a command's output.
pub const NAME: &str = "read_command_output";

/// Bytes of one page.
const PAGE: usize = 32 * 1024;

/// A tool that pages saved outputs: `read_command_output` over commands'
/// outputs, `read_mcp_output` over MCP tools' oversized results.
pub(in crate::tools) struct PagedOutput {
    spec: ToolSpec,
    outputs: OutputStore,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    id: String,
    #[serde(default)]
    offset: Option<u64>,
}

impl PagedOutput {
    /// The tool `name` in `group` over `outputs`; `id_from` says where the
    /// model got an output's id.
    pub(in crate::tools) fn new(
        name: &str,
        description: &str,
        id_from: &str,
        group: ToolGroup,
        outputs: OutputStore,
    ) -> Self {
        Self {
            spec: host_spec(
                name,
                group,
                description,
                json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": format!("The output's id, as {id_from} gave it.")},
                        "offset": {"type": "integer", "minimum": 0, "description": "Byte offset to read from (default 0)."}
                    },
                    "required": ["id"],
                    "additionalProperties": false
                }),
            ),
            outputs,
        }
    }

    /// `read_command_output` over `host`'s outputs.
    pub(super) fn commands(host: &CommandHost) -> Self {
        Self::new(
            NAME,
            "Read the whole output of a command this task ran, a page at a time: \
             execute_command gives the output's id, and where it left bytes out, the offset to go on from.",
            "execute_command",
            ToolGroup::Command,
            host.outputs.clone(),
        )
    }
}

#[async_trait::async_trait]
impl ToolExecutor for PagedOutput {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn kind(&self) -> crate::tools::ToolKind {
        crate::tools::ToolKind::Command
    }

    fn provider(&self) -> &str {
        HOST
    }

    /// Reading what its own calls produced needs no one's approval.
    fn needs(&self, _state: &RunState, _args: &Value) -> Needs {
        Needs::Nothing
    }

    async fn run(&self, call: Invocation<'_>) -> Result<Outcome, TaskError> {
        let a: Args = match serde_json::from_value(call.args.clone()) {
            Ok(a) => a,
            Err(e) => return Ok(Outcome::mistake(e.to_string())),
        };
        Ok(page(
            &self.outputs,
            &call.ctx.task.id,
            &a.id,
            a.offset.unwrap_or(0),
            &self.spec.name,
        ))
    }
}

/// A page of the output `id` of `task`'s in `outputs`, for the model,
/// with the call of `pager` that reads on.
fn page(outputs: &OutputStore, task: &str, id: &str, offset: u64, pager: &str) -> Outcome {
    match outputs.page(task, id, offset, PAGE) {
        Ok((text, size)) => {
            let end = offset
                .min(size)
                .saturating_add(u64::try_from(text.len()).unwrap_or(0));
            let mut out = format!(
                "[output {id}: bytes {}–{end} of {size}]\n{text}",
                offset.min(size)
            );
            if end < size {
                out.push_str(&format!("\n[more: {pager}(id: \"{id}\", offset: {end})]"));
            }
            Outcome::ok(out)
        }
        Err(e @ OutputError::Unknown(_)) => Outcome::mistake(e.to_string()),
        Err(e) => Outcome::error(ErrorCode::Internal, e.to_string()),
    }
}
