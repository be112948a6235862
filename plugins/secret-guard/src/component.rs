//! WebAssembly component glue: converts the WIT `mode-hook` types to plain
//! ones and calls [`crate::decide`]. Kept thin so the logic stays testable
//! natively.

wit_bindgen::generate!({ world: "mode-hook", path: "../../wit" });

use exports::roost::plugin::hook::Guest;
use roost::plugin::types::{PreToolDecision, ToolCall, ToolGroup, ToolOutcome};

/// The exported hook.
struct SecretGuard;

impl Guest for SecretGuard {
    fn pre_tool(call: ToolCall) -> PreToolDecision {
        let is_edit = matches!(call.group, ToolGroup::Edit);
        match crate::decide(
            &call.tool,
            is_edit,
            call.destructive,
            &call.args,
            &call.paths,
        ) {
            crate::Decision::Allow => PreToolDecision::Allow,
            crate::Decision::Deny(reason) => PreToolDecision::Deny(reason),
        }
    }

    fn post_tool(_call: ToolCall, _outcome: ToolOutcome) {}

    fn prompt_contribution(_mode: String) -> Option<String> {
        Some(crate::PROMPT_CONTRIBUTION.to_owned())
    }
}

export!(SecretGuard);
