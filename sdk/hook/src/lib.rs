//! Roost mode-hook SDK: write a hook (world `mode-hook`) as one Rust type
//! implementing [`Hook`] over plain types; the SDK generates the WIT glue
//! and converts calls, decisions and outcomes. A separate crate from
//! `roost-sdk` because a component built with both would have to export
//! both worlds.
//!
//! ```ignore
//! use roost_hook_sdk::{Call, Decision, Hook};
//! struct NoTmp;
//! impl Hook for NoTmp {
//!     fn pre_tool(call: &Call) -> Decision {
//!         if call.changes_files() && call.paths.iter().any(|p| p.starts_with("tmp/")) {
//!             Decision::Deny("tmp/ is scratch space; write elsewhere".into())
//!         } else {
//!             Decision::Allow
//!         }
//!     }
//! }
//! roost_hook_sdk::export_hook!(NoTmp);
//! ```

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "mode-hook",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "__export_mode_hook",
        default_bindings_module: "roost_hook_sdk::bindings",
    });
}

use bindings::exports::roost::plugin::hook as wit_hook;
use bindings::roost::plugin::host as wit_host;
use bindings::roost::plugin::types as wit;

pub use wit::{ErrorCode, ToolGroup as Group};
pub use wit_host::LogLevel;

/// A tool call the host is about to run (or has run), as a hook sees it.
#[derive(Debug, Clone)]
pub struct Call {
    /// Tool name, e.g. `write_to_file`.
    pub tool: String,
    /// The tool's group.
    pub group: Group,
    /// Whether the tool changes state.
    pub destructive: bool,
    /// Arguments exactly as the host sent them (JSON text).
    pub raw_args: String,
    /// Parsed on first use: most hooks decide on the tool and paths alone,
    /// and parsing runs on every call.
    parsed: std::cell::OnceCell<serde_json::Value>,
    /// Slug of the active mode.
    pub mode: String,
    /// Active intent, if any.
    pub intent_id: Option<String>,
    /// Workspace-relative paths the call declares.
    pub paths: Vec<String>,
}

impl Call {
    /// Whether the call may change files: edit tools and anything marked
    /// destructive. Most guards only care about these.
    pub fn changes_files(&self) -> bool {
        self.destructive || matches!(self.group, Group::Edit)
    }

    /// The arguments, parsed; `Null` when the host sent text that is not
    /// JSON.
    pub fn args(&self) -> &serde_json::Value {
        self.parsed
            .get_or_init(|| serde_json::from_str(&self.raw_args).unwrap_or(serde_json::Value::Null))
    }

    fn from_wit(c: wit::ToolCall) -> Self {
        Self {
            tool: c.tool,
            group: c.group,
            destructive: c.destructive,
            raw_args: c.args,
            parsed: std::cell::OnceCell::new(),
            mode: c.mode,
            intent_id: c.intent_id,
            paths: c.paths,
        }
    }
}

/// A pre-tool verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Let the call run.
    Allow,
    /// Refuse it; the reason goes to the model.
    Deny(String),
    /// Put this question to the user; a yes lets the call run.
    Ask(String),
    /// Run it with these arguments instead (the host checks them again).
    Rewrite(serde_json::Value),
}

/// What a call did, for post-tool hooks.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The tool's text output, or its error code and message.
    pub result: Result<String, (ErrorCode, String)>,
    /// Workspace-relative paths the call changed.
    pub changed_paths: Vec<String>,
}

/// A mode hook. Only `pre_tool` is required.
pub trait Hook {
    /// Decide on a call before it runs.
    fn pre_tool(call: &Call) -> Decision;
    /// Observe a call after it ran.
    fn post_tool(_call: &Call, _outcome: &Outcome) {}
    /// Text added to the system prompt while `mode` is active.
    fn prompt_contribution(_mode: &str) -> Option<String> {
        None
    }
}

/// Write a line to the host's log, attributed to this hook.
pub fn log(level: LogLevel, message: &str) {
    wit_host::log(level, message);
}

#[doc(hidden)]
pub struct Exported<H: Hook>(std::marker::PhantomData<H>);

impl<H: Hook> wit_hook::Guest for Exported<H> {
    fn pre_tool(call: wit::ToolCall) -> wit::PreToolDecision {
        match H::pre_tool(&Call::from_wit(call)) {
            Decision::Allow => wit::PreToolDecision::Allow,
            Decision::Deny(r) => wit::PreToolDecision::Deny(r),
            Decision::Ask(q) => wit::PreToolDecision::Ask(q),
            Decision::Rewrite(v) => wit::PreToolDecision::Rewrite(v.to_string()),
        }
    }

    fn post_tool(call: wit::ToolCall, outcome: wit::ToolOutcome) {
        let result = match outcome.outcome {
            Ok(o) => Ok(o.text),
            Err(e) => Err((e.code, e.message)),
        };
        H::post_tool(
            &Call::from_wit(call),
            &Outcome {
                result,
                changed_paths: outcome.changed_paths,
            },
        );
    }

    fn prompt_contribution(mode: String) -> Option<String> {
        H::prompt_contribution(&mode)
    }
}

/// Export a type implementing [`Hook`] as the component's `mode-hook`.
#[macro_export]
macro_rules! export_hook {
    ($hook:ty) => {
        #[allow(dead_code)]
        type __RoostHookExport = $crate::Exported<$hook>;
        // Exports exist only in the component; natively (unit tests of a
        // hook's logic) there is nothing to export to.
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_mode_hook!(__RoostHookExport with_types_in $crate::bindings);
    };
}
