//! The tools of native commands, offered when the deployment turns
//! commands on: [`execute_command`](execute) runs a line in the OS
//! sandbox, [`read_command_output`](read_output) pages what one printed.
//! Each is a [`ToolExecutor`](super::ToolExecutor) like any tool and goes
//! through the one dispatch.

pub(super) mod execute;
pub(super) mod read_output;

use std::sync::Arc;

use super::access::Access;
use super::registry::{RegisteredTool, RegistryError};
use crate::commands::CommandHost;

pub use execute::NAME as EXECUTE_COMMAND;
pub use read_output::NAME as READ_COMMAND_OUTPUT;

/// The command tools over `host`.
pub fn tools(host: &Arc<CommandHost>) -> Result<Vec<RegisteredTool>, RegistryError> {
    Ok(vec![
        RegisteredTool::new(
            Arc::new(execute::ExecuteCommand::new(Arc::clone(host))),
            Access::FULL,
        )?,
        RegisteredTool::new(
            Arc::new(read_output::PagedOutput::commands(host)),
            Access::FULL,
        )?,
    ])
}
