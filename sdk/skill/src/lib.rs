//! Roost skill SDK: write a skill's scripts (world `skill`) as plain Rust
//! functions with typed arguments. The SDK derives each entry's JSON
//! schema (the host checks calls against it before the component runs),
//! answers `metadata`, dispatches `run`, and maps errors onto the WIT
//! types. Build it as `skill.wasm` beside the skill's `SKILL.md`; the
//! model runs an entry with `run_skill`, after approval, in a sandbox that
//! sees the workspace read-only at `/workspace` and may write only where
//! the call's grant allows. A separate crate from `roost-sdk` because a
//! component exports one world.
//!
//! ```ignore
//! use roost_skill_sdk::{Entry, Output};
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Args { path: String }
//! fn count_lines(a: Args) -> roost_skill_sdk::EntryResult {
//!     let text = std::fs::read_to_string(format!("/workspace/{}", a.path))
//!         .map_err(|e| roost_skill_sdk::Error::io(&a.path, &e))?;
//!     Ok(Output::text(text.lines().count().to_string()))
//! }
//! roost_skill_sdk::export_skill!("line-counter", "Counts lines", || vec![
//!     Entry::new("count", "Count the lines of a file", count_lines),
//! ]);
//! ```

#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        world: "skill",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "__export_skill",
        default_bindings_module: "roost_skill_sdk::bindings",
        generate_all,
    });
}

use std::sync::OnceLock;

use bindings::exports::roost::plugin::skill_runner as wit_runner;
use bindings::roost::plugin::types as wit;
use serde::de::DeserializeOwned;

pub use wit::ErrorCode;

/// An entry's failure: a code the host can act on and a message for the
/// model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// Category of the failure.
    pub code: ErrorCode,
    /// Explanation shown to the model.
    pub message: String,
}

impl Error {
    /// An error with an explicit code.
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

    /// Anything else.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, message)
    }

    /// An I/O error on `path`, with the closest code (a write outside the
    /// call's grant is `permission-denied`).
    pub fn io(path: &str, err: &std::io::Error) -> Self {
        use std::io::ErrorKind as K;
        let code = match err.kind() {
            K::NotFound => ErrorCode::NotFound,
            K::PermissionDenied | K::ReadOnlyFilesystem => ErrorCode::PermissionDenied,
            K::InvalidInput | K::InvalidFilename => ErrorCode::InvalidArgs,
            _ => ErrorCode::Internal,
        };
        Self::new(code, format!("{path}: {err}"))
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}: {}", self.code, self.message)
    }
}

impl std::error::Error for Error {}

/// What an entry returns: text for the model, optionally structured JSON.
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

/// What an entry function returns.
pub type EntryResult = Result<Output, Error>;

type Handler = Box<dyn Fn(&str) -> EntryResult + Send + Sync>;

/// One callable entry: its name, description, schema and typed function.
pub struct Entry {
    name: String,
    description: String,
    /// Derived only when the host asks for the metadata: every run is a
    /// fresh instance.
    schema: fn() -> String,
    handler: Handler,
}

fn schema_json<A: schemars::JsonSchema>() -> String {
    serde_json::to_string(&schemars::schema_for!(A)).unwrap_or_else(|_| "{}".into())
}

impl Entry {
    /// An entry whose arguments deserialize into `A`; its JSON schema comes
    /// from `A`'s `JsonSchema` derive.
    pub fn new<A, F>(name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema,
        F: Fn(A) -> EntryResult + Send + Sync + 'static,
    {
        let entry = name.to_owned();
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            schema: schema_json::<A>,
            handler: Box::new(move |raw: &str| {
                let args: A = serde_json::from_str(raw).map_err(|e| {
                    Error::invalid_args(format!("invalid arguments for {entry}: {e}"))
                })?;
                f(args)
            }),
        }
    }
}

#[doc(hidden)]
pub struct Skill {
    name: &'static str,
    description: &'static str,
    entries: OnceLock<Vec<Entry>>,
    build: fn() -> Vec<Entry>,
}

impl Skill {
    #[doc(hidden)]
    pub const fn new(
        name: &'static str,
        description: &'static str,
        build: fn() -> Vec<Entry>,
    ) -> Self {
        Self {
            name,
            description,
            entries: OnceLock::new(),
            build,
        }
    }

    fn entries(&self) -> &[Entry] {
        self.entries.get_or_init(self.build)
    }

    #[doc(hidden)]
    pub fn metadata(&self) -> wit::SkillMetadata {
        wit::SkillMetadata {
            name: self.name.to_owned(),
            description: self.description.to_owned(),
            entries: self
                .entries()
                .iter()
                .map(|e| wit::SkillEntry {
                    name: e.name.clone(),
                    description: e.description.clone(),
                    args_schema: (e.schema)(),
                })
                .collect(),
        }
    }

    #[doc(hidden)]
    pub fn run(&self, entry: &str, args: &str) -> Result<wit::ToolOutput, wit::ToolError> {
        let found = self
            .entries()
            .iter()
            .find(|e| e.name == entry)
            .ok_or_else(|| wit::ToolError {
                code: ErrorCode::NotFound,
                message: format!("skill `{}` has no entry `{entry}`", self.name),
            })?;
        match (found.handler)(args) {
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
pub trait SkillHolder {
    fn skill() -> &'static Skill;
}

#[doc(hidden)]
pub struct Exported<S: SkillHolder>(std::marker::PhantomData<S>);

impl<S: SkillHolder> wit_runner::Guest for Exported<S> {
    fn metadata() -> wit::SkillMetadata {
        S::skill().metadata()
    }

    fn run(entry: String, args: String) -> Result<wit::ToolOutput, wit::ToolError> {
        S::skill().run(&entry, &args)
    }
}

/// Export a skill component: its name (as its `SKILL.md` says), its
/// description, and a function (or closure without captures) returning its
/// entries, run once per instance on first use.
#[macro_export]
macro_rules! export_skill {
    ($name:expr, $description:expr, $build:expr) => {
        struct __RoostSkill;
        impl $crate::SkillHolder for __RoostSkill {
            fn skill() -> &'static $crate::Skill {
                static SKILL: $crate::Skill = $crate::Skill::new($name, $description, $build);
                &SKILL
            }
        }
        #[allow(dead_code)]
        type __RoostSkillExport = $crate::Exported<__RoostSkill>;
        // Exports exist only in the component; natively (unit tests of a
        // skill's logic) there is nothing to export to.
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_skill!(__RoostSkillExport with_types_in $crate::bindings);
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        n: u32,
    }

    fn double(a: Args) -> EntryResult {
        Ok(Output::text((a.n * 2).to_string()))
    }

    static SKILL: Skill = Skill::new("doubler", "Doubles", || {
        vec![Entry::new("double", "Double n", double)]
    });

    #[test]
    fn metadata_and_runs_go_through_the_typed_entries() {
        let m = SKILL.metadata();
        assert_eq!(m.name, "doubler");
        assert_eq!(m.entries.len(), 1);
        assert!(m.entries[0].args_schema.contains("\"n\""));
        let out = SKILL.run("double", r#"{"n":21}"#).expect("runs");
        assert_eq!(out.text, "42");
        let bad = SKILL.run("double", r#"{"n":"x"}"#).expect_err("bad args");
        assert_eq!(bad.code, ErrorCode::InvalidArgs);
        let none = SKILL.run("triple", "{}").expect_err("no entry");
        assert_eq!(none.code, ErrorCode::NotFound);
    }
}
