//! Components built against `roost:plugin@0.1.0` (`wit/compat/v0.1.0`):
//! their bindings, their host interface answered by the latest one, and
//! their types turned into the latest ones. A 0.1.0 tool has no
//! annotations; everything else maps one to one.

use super::tool_plugin::roost::plugin::{host as latest_host, types as latest};
use crate::plugins::state::CallState;

/// World `tool-plugin` of `roost:plugin@0.1.0`.
pub mod tool_plugin {
    wasmtime::component::bindgen!({
        world: "tool-plugin",
        path: "../../wit/compat/v0.1.0",
        exports: { default: async },
    });
}

/// World `mode-hook` of `roost:plugin@0.1.0`.
pub mod mode_hook {
    wasmtime::component::bindgen!({
        world: "mode-hook",
        path: "../../wit/compat/v0.1.0",
        exports: { default: async },
        with: {
            "roost:plugin/types": super::tool_plugin::roost::plugin::types,
            "roost:plugin/host": super::tool_plugin::roost::plugin::host,
        },
    });
}

/// World `skill` of `roost:plugin@0.1.0` (no filesystem yet).
pub mod skill {
    wasmtime::component::bindgen!({
        world: "skill",
        path: "../../wit/compat/v0.1.0",
        exports: { default: async },
        with: {
            "roost:plugin/types": super::tool_plugin::roost::plugin::types,
            "roost:plugin/host": super::tool_plugin::roost::plugin::host,
        },
    });
}

use tool_plugin::roost::plugin::{host, types};

impl types::Host for CallState {}

/// The 0.1.0 host interface is the latest one's, types converted.
impl host::Host for CallState {
    fn log(&mut self, level: host::LogLevel, message: String) {
        latest_host::Host::log(self, level.into(), message);
    }

    fn progress(&mut self, message: String, fraction: Option<f32>) {
        latest_host::Host::progress(self, message, fraction);
    }

    fn workspace(&mut self) -> host::WorkspaceInfo {
        let w = latest_host::Host::workspace(self);
        host::WorkspaceInfo {
            root: w.root,
            readable: w.readable,
            write_roots: w.write_roots,
        }
    }
}

impl From<host::LogLevel> for latest_host::LogLevel {
    fn from(l: host::LogLevel) -> Self {
        match l {
            host::LogLevel::Trace => Self::Trace,
            host::LogLevel::Debug => Self::Debug,
            host::LogLevel::Info => Self::Info,
            host::LogLevel::Warn => Self::Warn,
            host::LogLevel::Error => Self::Error,
        }
    }
}

impl From<types::ToolGroup> for latest::ToolGroup {
    fn from(g: types::ToolGroup) -> Self {
        match g {
            types::ToolGroup::Read => Self::Read,
            types::ToolGroup::Edit => Self::Edit,
            types::ToolGroup::Command => Self::Command,
            types::ToolGroup::Browser => Self::Browser,
            types::ToolGroup::Mcp => Self::Mcp,
            types::ToolGroup::Modes => Self::Modes,
        }
    }
}

impl From<latest::ToolGroup> for types::ToolGroup {
    fn from(g: latest::ToolGroup) -> Self {
        match g {
            latest::ToolGroup::Read => Self::Read,
            latest::ToolGroup::Edit => Self::Edit,
            latest::ToolGroup::Command => Self::Command,
            latest::ToolGroup::Browser => Self::Browser,
            latest::ToolGroup::Mcp => Self::Mcp,
            latest::ToolGroup::Modes => Self::Modes,
        }
    }
}

impl From<types::ToolSpec> for latest::ToolSpec {
    fn from(s: types::ToolSpec) -> Self {
        Self {
            name: s.name,
            description: s.description,
            args_schema: s.args_schema,
            group: s.group.into(),
            destructive: s.destructive,
            path_args: s.path_args,
            annotations: latest::ToolAnnotations {
                title: None,
                idempotent: false,
                open_world: false,
            },
        }
    }
}

impl From<types::ErrorCode> for latest::ErrorCode {
    fn from(c: types::ErrorCode) -> Self {
        match c {
            types::ErrorCode::InvalidArgs => Self::InvalidArgs,
            types::ErrorCode::NotFound => Self::NotFound,
            types::ErrorCode::PermissionDenied => Self::PermissionDenied,
            types::ErrorCode::LimitExceeded => Self::LimitExceeded,
            types::ErrorCode::Internal => Self::Internal,
        }
    }
}

impl From<latest::ErrorCode> for types::ErrorCode {
    fn from(c: latest::ErrorCode) -> Self {
        match c {
            latest::ErrorCode::InvalidArgs => Self::InvalidArgs,
            latest::ErrorCode::NotFound => Self::NotFound,
            latest::ErrorCode::PermissionDenied => Self::PermissionDenied,
            latest::ErrorCode::LimitExceeded => Self::LimitExceeded,
            latest::ErrorCode::Internal => Self::Internal,
        }
    }
}

impl From<types::ToolOutput> for latest::ToolOutput {
    fn from(o: types::ToolOutput) -> Self {
        Self {
            text: o.text,
            data: o.data,
        }
    }
}

impl From<latest::ToolOutput> for types::ToolOutput {
    fn from(o: latest::ToolOutput) -> Self {
        Self {
            text: o.text,
            data: o.data,
        }
    }
}

impl From<types::ToolError> for latest::ToolError {
    fn from(e: types::ToolError) -> Self {
        Self {
            code: e.code.into(),
            message: e.message,
        }
    }
}

impl From<latest::ToolError> for types::ToolError {
    fn from(e: latest::ToolError) -> Self {
        Self {
            code: e.code.into(),
            message: e.message,
        }
    }
}

impl From<latest::ToolCall> for types::ToolCall {
    fn from(c: latest::ToolCall) -> Self {
        Self {
            tool: c.tool,
            group: c.group.into(),
            destructive: c.destructive,
            args: c.args,
            mode: c.mode,
            intent_id: c.intent_id,
            paths: c.paths,
        }
    }
}

impl From<types::PreToolDecision> for latest::PreToolDecision {
    fn from(d: types::PreToolDecision) -> Self {
        match d {
            types::PreToolDecision::Allow => Self::Allow,
            types::PreToolDecision::Deny(r) => Self::Deny(r),
            types::PreToolDecision::Ask(q) => Self::Ask(q),
            types::PreToolDecision::Rewrite(a) => Self::Rewrite(a),
        }
    }
}

impl From<latest::ToolOutcome> for types::ToolOutcome {
    fn from(o: latest::ToolOutcome) -> Self {
        Self {
            outcome: o.outcome.map(Into::into).map_err(Into::into),
            changed_paths: o.changed_paths,
        }
    }
}

impl From<types::SkillEntry> for latest::SkillEntry {
    fn from(e: types::SkillEntry) -> Self {
        Self {
            name: e.name,
            description: e.description,
            args_schema: e.args_schema,
        }
    }
}

impl From<types::SkillMetadata> for latest::SkillMetadata {
    fn from(m: types::SkillMetadata) -> Self {
        Self {
            name: m.name,
            description: m.description,
            entries: m.entries.into_iter().map(Into::into).collect(),
        }
    }
}
