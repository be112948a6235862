//! The component runtime: one [`PluginEngine`] per process compiles each
//! plugin once (cached on disk), keeps an `InstancePre` per plugin, and runs
//! every call in a fresh `Store` sandboxed by the call's grant and bounded by
//! its limits. Mode hooks and skill components run the same way ([`hook`],
//! [`skill`]). A tool call's
//! `wasi:http` requests go through [`http`]: checked against its grant and
//! sent by the host, each recorded for the trace.

mod bindings;
mod cache;
mod compile;
mod component_file;
mod deferred;
mod engine;
mod error;
mod hidden_paths;
mod hook;
mod http;
mod preopens;
mod runtime;
mod skill;
mod special_files;
mod state;

pub use cache::{CacheOutcome, ComponentCache};
pub use component_file::ComponentFile;
pub use deferred::CompileWatch;
pub use engine::{CallReport, EngineConfig, LoadedPlugin, PluginEngine, WIT_VERSIONS};
pub use error::PluginError;
pub use hook::{HookCall, HookDecision, LoadedHook};
pub use http::{NetworkLog, NetworkRecord, NetworkReport, Resolve, Resolved, SystemResolver};
pub use skill::{LoadedSkill, SkillEntry};
