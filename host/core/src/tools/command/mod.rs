//! The tools of native commands, offered when the deployment turns
//! commands on: [`execute_command`](execute) runs a line in the OS
//! sandbox, [`read_command_output`](read_output) pages what one printed.
//! Each is a [`ToolExecutor`](super::ToolExecutor) like any tool and goes
//! through the one dispatch.

pub(super) mod execute;
pub(super) mod read_output;

use std::sync::Arc;

use super::access::Access;
use super::executor::ToolExecutor;
use super::registry::RegisteredTool;
use crate::commands::CommandHost;

pub use execute::NAME as EXECUTE_COMMAND;
pub use read_output::NAME as READ_COMMAND_OUTPUT;

/// The command tools over `host`.
pub fn tools(host: &Arc<CommandHost>) -> Vec<RegisteredTool> {
    // Their schemas are the host's own (the tests below compile them):
    // compiled on a call's first need, not at every start.
    executors(host)
        .into_iter()
        .map(|e| RegisteredTool::known(e, Access::FULL))
        .collect()
}

fn executors(host: &Arc<CommandHost>) -> Vec<Arc<dyn ToolExecutor>> {
    vec![
        Arc::new(execute::ExecuteCommand::new(Arc::clone(host))),
        Arc::new(read_output::PagedOutput::commands(host)),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::commands::CommandsConfig;
    use crate::tools::ArgsValidator;

    /// The command tools' schemas are compiled on a call's first need, not
    /// at registration: each must compile, and refuse what it should.
    #[test]
    fn every_command_tool_schema_compiles() {
        let data = tempfile::tempdir().expect("tempdir");
        let host = CommandHost::new(
            &CommandsConfig::default(),
            &BTreeMap::new(),
            data.path(),
            Vec::new(),
            crate::config::SecretStore::default(),
        )
        .expect("command host");
        let tools = executors(&Arc::new(host));
        assert_eq!(tools.len(), 2);
        for t in tools {
            let spec = t.spec();
            let v = ArgsValidator::new(&spec.args_schema)
                .unwrap_or_else(|e| panic!("{}: {e}", spec.name));
            assert!(
                v.check(&serde_json::json!({})).is_err(),
                "{} accepts no arguments at all",
                spec.name
            );
        }
    }
}
