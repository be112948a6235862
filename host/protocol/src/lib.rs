//! What Roost's front-ends (the CLI, the HTTP server, later MCP and ACP)
//! and its engine say to each other, and nothing else: a task's spec and
//! status, its events in their envelope (task id, per-task seq), the
//! questions it asks a person and their answers, tool specs, results and
//! error codes, the kinds of what a task records, and how its events are
//! shown to a person ([`display`]). Plain data (serde,
//! with a JSON Schema from schemars); no wasmtime, no SQL, so a front-end
//! can depend on it alone.
//!
//! [`schema`] is the JSON Schema of all of it; `docs/protocol.schema.json`
//! is its committed copy, which a test keeps equal to the code.

#![forbid(unsafe_code)]

pub mod api;
pub mod asks;
pub mod checkpoints;
pub mod conversation;
pub mod display;
pub mod errors;
pub mod events;
pub mod groups;
pub mod records;
pub mod task;
pub mod todos;
pub mod tool;

pub use asks::{Answer, Approval, Ask, CompletionAnswer};
pub use checkpoints::{Checkpoint, RestoreMode, RestoreReport};
pub use errors::{EngineErrorCode, ErrorBody};
pub use events::{Envelope, TaskEvent};
pub use groups::{GroupRecord, GroupResult, GroupStatus, GroupStrategy, GroupTask};
pub use records::{HookVerdict, TraceKind, UiKind, UiRow, UiSubtype};
pub use task::{
    ApprovalPolicy, DelegationLimits, Endpoint, Grant, Inherited, TaskSettings, TaskSpec,
    TaskStatus, Usage,
};
pub use todos::{TodoItem, TodoState};
pub use tool::{ErrorCode, ToolAnnotations, ToolError, ToolGroup, ToolOutput, ToolSpec};

use schemars::JsonSchema;

/// Every type of the protocol, under one root (only its definitions
/// matter: the schema is a catalogue).
#[derive(JsonSchema)]
#[allow(dead_code)]
struct Protocol {
    task_spec: TaskSpec,
    task_status: TaskStatus,
    task_settings: TaskSettings,
    envelope: Envelope,
    ask: Ask,
    answer: Answer,
    tool_spec: ToolSpec,
    group: GroupRecord,
    checkpoint: Checkpoint,
    restore_mode: RestoreMode,
    restore_report: RestoreReport,
    tool_output: ToolOutput,
    tool_error: ToolError,
    error_body: ErrorBody,
    ui_row: UiRow,
    trace_kind: TraceKind,
    hook_verdict: HookVerdict,
    create_task: api::CreateTask,
    task_view: api::TaskView,
    task_list: api::TaskList,
    decision: api::Decision,
    ask_view: api::AskView,
    display_item: display::DisplayItem,
    todo_item: TodoItem,
}

/// The JSON Schema of the whole protocol, pretty-printed, as committed
/// in `docs/protocol.schema.json`.
pub fn schema() -> String {
    let schema = schemars::schema_for!(Protocol);
    sorted_pretty(&serde_json::to_value(&schema).unwrap_or_default())
}

/// `value` pretty-printed with every object's keys sorted, then a newline:
/// a committed document reads the same whether the build's JSON objects
/// keep insertion order (`serde_json/preserve_order`, which a dependency
/// may turn on) or not.
pub fn sorted_pretty(value: &serde_json::Value) -> String {
    fn sorted(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                serde_json::Value::Object(
                    keys.into_iter()
                        .filter_map(|k| m.get(k).map(|v| (k.clone(), sorted(v))))
                        .collect(),
                )
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let mut text = serde_json::to_string_pretty(&sorted(value)).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    /// The committed schema is the code's: regenerate it with
    /// `ROOST_WRITE_SCHEMA=1 cargo test -p roost-protocol` after changing
    /// a type.
    #[test]
    fn the_committed_schema_matches_the_code() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../docs/protocol.schema.json");
        let now = super::schema();
        if std::env::var_os("ROOST_WRITE_SCHEMA").is_some() {
            std::fs::write(&path, &now).expect("write the schema");
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == now,
            "docs/protocol.schema.json is not the protocol's schema; regenerate it with \
             ROOST_WRITE_SCHEMA=1 cargo test -p roost-protocol"
        );
    }
}
