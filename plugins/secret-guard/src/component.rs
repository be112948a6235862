//! The component: [`crate::decide`] as a mode hook, through the hook SDK.
//! Kept thin so the logic stays testable natively.

use roost_hook_sdk::{Call, Decision, Group, Hook};

/// The exported hook.
struct SecretGuard;

impl Hook for SecretGuard {
    fn pre_tool(call: &Call) -> Decision {
        let is_edit = matches!(call.group, Group::Edit);
        match crate::decide(
            &call.tool,
            is_edit,
            call.destructive,
            &call.raw_args,
            &call.paths,
        ) {
            crate::Decision::Allow => Decision::Allow,
            crate::Decision::Deny(reason) => Decision::Deny(reason),
        }
    }

    fn prompt_contribution(_mode: &str) -> Option<String> {
        Some(crate::PROMPT_CONTRIBUTION.to_owned())
    }
}

roost_hook_sdk::export_hook!(SecretGuard);
