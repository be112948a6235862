//! Roost plugin SDK: write a tool plugin as plain Rust functions with typed
//! arguments; the SDK derives each tool's JSON schema, dispatches calls and
//! maps errors onto the `roost:plugin` WIT types.
//!
//! ```ignore
//! use roost_sdk::{Group, Output, Tool, ToolError};
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Args { text: String }
//! fn echo(a: Args) -> Result<Output, ToolError> { Ok(Output::text(a.text)) }
//! roost_sdk::export_tools!(|| vec![Tool::new("echo", "Echo text", Group::Read, echo)]);
//! ```

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "tool-plugin",
        path: "../wit",
        pub_export_macro: true,
        export_macro_name: "__export_tool_plugin",
        default_bindings_module: "roost_sdk::bindings",
        generate_all,
    });
}

pub mod host;
pub mod http;
pub mod workspace;

use std::sync::OnceLock;

use bindings::exports::roost::plugin::tool as wit_tool;
use bindings::roost::plugin::types as wit;
use serde::de::DeserializeOwned;

pub use wit::ErrorCode;
/// Tool group, re-exported under a short name for plugin authors.
pub use wit::ToolGroup as Group;

/// A tool error: a code the host can act on plus a message for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// Category of the failure.
    pub code: ErrorCode,
    /// Explanation shown to the model.
    pub message: String,
}

impl ToolError {
    /// Error with an explicit code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
    /// The arguments were wrong.
    pub fn invalid_args(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgs, message)
    }
    /// Something named does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }
    /// The sandbox refused.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PermissionDenied, message)
    }
    /// A limit was hit.
    pub fn limit_exceeded(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::LimitExceeded, message)
    }
    /// Anything else.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }
    /// Map an I/O error on `path` to the closest code, keeping the path in
    /// the message so the model knows which file failed.
    pub fn io(path: &str, err: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        // In a call granted no read access the workspace is not mounted:
        // every path is "not found"; say what is really going on.
        #[cfg(target_family = "wasm")]
        if err.kind() == K::NotFound && !workspace::info().readable {
            return Self::new(
                ErrorCode::PermissionDenied,
                format!("{path}: this call has no read access to the workspace"),
            );
        }
        let code = match err.kind() {
            K::NotFound => ErrorCode::NotFound,
            K::PermissionDenied | K::ReadOnlyFilesystem => ErrorCode::PermissionDenied,
            K::InvalidInput | K::InvalidFilename => ErrorCode::InvalidArgs,
            _ => ErrorCode::Internal,
        };
        Self::new(code, format!("{path}: {}", io_words(err)))
    }
}

/// An I/O error in words, without the raw `(os error N)` (WASI's numbers
/// differ from the host's and mean nothing to a model or a user).
fn io_words(err: &std::io::Error) -> String {
    use std::io::ErrorKind as K;
    let words = match err.kind() {
        K::NotFound => "no such file or directory",
        K::PermissionDenied => "permission denied (outside this call's grant)",
        K::ReadOnlyFilesystem => "read-only here (outside this call's write grant)",
        K::AlreadyExists => "already exists",
        K::NotADirectory => "a path component is not a directory",
        K::IsADirectory => "is a directory",
        K::DirectoryNotEmpty => "directory not empty",
        K::InvalidFilename => "invalid file name",
        K::StorageFull => "no space left on the device",
        K::FileTooLarge => "file too large",
        _ => "",
    };
    if !words.is_empty() {
        return words.to_owned();
    }
    let text = err.to_string();
    match text.find(" (os error ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}: {}", self.code, self.message)
    }
}

impl std::error::Error for ToolError {}

/// What a tool returns: text for the model, optionally structured JSON.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    /// Text for the model.
    pub text: String,
    /// Structured result for front-ends and hooks.
    pub data: Option<serde_json::Value>,
}

impl Output {
    /// Plain text output.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            data: None,
        }
    }
    /// Attach structured data.
    pub fn with_data(mut self, data: serde_json::Value) -> Self {
        self.data = Some(data);
        self
    }
}

/// Result type of a tool function.
pub type ToolResult = Result<Output, ToolError>;

type Handler = Box<dyn Fn(&str) -> ToolResult + Send + Sync>;

fn schema_json<A: schemars::JsonSchema>() -> String {
    serde_json::to_string(&schemars::schema_for!(A)).unwrap_or_else(|_| "{}".into())
}

/// One tool: its spec plus the typed function that runs it.
pub struct Tool {
    name: String,
    description: String,
    group: Group,
    destructive: bool,
    path_args: Vec<String>,
    title: Option<String>,
    idempotent: bool,
    open_world: bool,
    /// Derived only when the host lists the tools: every call runs in a
    /// fresh instance, so eager schema generation would cost every call.
    schema: fn() -> String,
    handler: Handler,
}

impl Tool {
    /// A tool whose arguments deserialize into `A`; the JSON schema comes
    /// from `A`'s `JsonSchema` derive.
    pub fn new<A, F>(name: &str, description: &str, group: Group, f: F) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema,
        F: Fn(A) -> ToolResult + Send + Sync + 'static,
    {
        let tool_name = name.to_owned();
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            group,
            destructive: matches!(group, Group::Edit | Group::Command),
            path_args: Vec::new(),
            title: None,
            idempotent: false,
            open_world: false,
            schema: schema_json::<A>,
            handler: Box::new(move |raw: &str| {
                let args: A = serde_json::from_str(raw).map_err(|e| {
                    ToolError::invalid_args(format!("invalid arguments for {tool_name}: {e}"))
                })?;
                f(args)
            }),
        }
    }

    /// Name the arguments that hold workspace-relative paths.
    pub fn paths(mut self, names: &[&str]) -> Self {
        self.path_args = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Override the destructive flag (edit and command tools default to true).
    pub fn destructive(mut self, yes: bool) -> Self {
        self.destructive = yes;
        self
    }

    /// A human-readable name, for lists and approval prompts.
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.to_owned());
        self
    }

    /// Say that calling it again with the same arguments changes nothing.
    pub fn idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }

    /// Say that it reaches the network ([`http`]); it works only where the
    /// plugin was granted hosts.
    pub fn open_world(mut self) -> Self {
        self.open_world = true;
        self
    }

    fn spec(&self) -> wit::ToolSpec {
        wit::ToolSpec {
            name: self.name.clone(),
            description: self.description.clone(),
            args_schema: (self.schema)(),
            group: self.group,
            destructive: self.destructive,
            path_args: self.path_args.clone(),
            annotations: wit::ToolAnnotations {
                title: self.title.clone(),
                idempotent: self.idempotent,
                open_world: self.open_world,
            },
        }
    }
}

#[doc(hidden)]
pub struct Registry {
    tools: OnceLock<Vec<Tool>>,
    build: fn() -> Vec<Tool>,
}

impl Registry {
    #[doc(hidden)]
    pub const fn new(build: fn() -> Vec<Tool>) -> Self {
        Self {
            tools: OnceLock::new(),
            build,
        }
    }

    fn tools(&self) -> &[Tool] {
        self.tools.get_or_init(self.build)
    }

    #[doc(hidden)]
    pub fn specs(&self) -> Vec<wit::ToolSpec> {
        self.tools().iter().map(Tool::spec).collect()
    }

    #[doc(hidden)]
    pub fn call(&self, name: &str, args: &str) -> Result<wit::ToolOutput, wit::ToolError> {
        let tool = self
            .tools()
            .iter()
            .find(|t| t.name == name)
            .ok_or_else(|| wit::ToolError {
                code: ErrorCode::NotFound,
                message: format!("unknown tool: {name}"),
            })?;
        match (tool.handler)(args) {
            Ok(out) => Ok(wit::ToolOutput {
                text: out.text,
                data: out.data.map(|d| d.to_string()),
            }),
            Err(e) => Err(wit::ToolError {
                code: e.code,
                message: e.message,
            }),
        }
    }
}

#[doc(hidden)]
pub trait RegistryHolder {
    fn registry() -> &'static Registry;
}

#[doc(hidden)]
pub struct Exported<R: RegistryHolder>(std::marker::PhantomData<R>);

impl<R: RegistryHolder> wit_tool::Guest for Exported<R> {
    fn tools() -> Vec<wit::ToolSpec> {
        R::registry().specs()
    }
    fn call(name: String, args: String) -> Result<wit::ToolOutput, wit::ToolError> {
        R::registry().call(&name, &args)
    }
}

/// Export a tool plugin. Pass a function (or closure without captures)
/// returning the plugin's tools; it runs once per instance, on first use.
#[macro_export]
macro_rules! export_tools {
    ($build:expr) => {
        struct __RoostTools;
        impl $crate::RegistryHolder for __RoostTools {
            fn registry() -> &'static $crate::Registry {
                static REGISTRY: $crate::Registry = $crate::Registry::new($build);
                &REGISTRY
            }
        }
        #[allow(dead_code)]
        type __RoostExport = $crate::Exported<__RoostTools>;
        // Exports exist only in the component; natively (unit tests of a
        // plugin's logic) there is nothing to export to.
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_tool_plugin!(__RoostExport with_types_in $crate::bindings);
    };
}
