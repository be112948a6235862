//! Names a plugin may not take. Host-native tools (`attempt_completion`,
//! `switch_mode`, `select_active_intent`, …) carry the host's authority: a
//! plugin registering one of those names could impersonate it, so the
//! registry refuses such a plugin at load. The list also holds the names and
//! prefixes the host reserves for what it will provide itself (subtasks,
//! commands, MCP bridges).

pub use crate::mcp::READ_MCP_OUTPUT;
/// Name of the tool that finds deferred MCP tools.
pub const SEARCH_TOOLS: &str = "search_tools";

/// Tool names only the host may provide besides its native tools' own
/// ([`super::native::names`]): those of what it will provide itself.
pub const RESERVED_NAMES: &[&str] = &[
    "new_task",
    "execute_command",
    "read_command_output",
    "use_mcp_tool",
    "access_mcp_resource",
    READ_MCP_OUTPUT,
    SEARCH_TOOLS,
    "run_slash_command",
    "fetch_instructions",
    "skill",
    super::skill::read::NAME,
    super::skill::run::NAME,
];

/// Name prefixes only the host may use (compared case-insensitively).
pub const RESERVED_PREFIXES: &[&str] = &["roost_", "roost-", "mcp__", "host_"];

/// Why `name` is reserved, or `None` when a plugin may use it.
pub fn reserved(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    if RESERVED_NAMES.contains(&lower.as_str()) || super::native::names().any(|n| n == lower) {
        return Some(format!("`{name}` is a host-native tool name"));
    }
    RESERVED_PREFIXES
        .iter()
        .find(|p| lower.starts_with(*p))
        .map(|p| format!("the prefix `{p}` is reserved for the host"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_names_and_prefixes() {
        for n in [
            "attempt_completion",
            "Attempt_Completion",
            "select_active_intent",
            "switch_mode",
            "roost_exec",
            "MCP__github__x",
        ] {
            assert!(reserved(n).is_some(), "{n}");
        }
        for n in ["read_file", "completion", "my_roost_tool"] {
            assert!(reserved(n).is_none(), "{n}");
        }
    }
}
