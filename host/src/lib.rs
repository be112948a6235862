//! Roost host library: runs the agent task loop and every tool and mode
//! hook as a WebAssembly component in a sandbox whose file access is exactly
//! what the call's grant allows.
//!
//! One module per concept: [`task`] (loop, gates, hook gate, approvals),
//! [`llm`] (providers, stream decoding, tool-call assembly), [`tools`]
//! (specs, results, registry), [`plugins`] (engine, component cache, tool
//! and hook calls), [`capability`] (grants → WASI sandbox, write guard,
//! `.rooignore`), [`modes`] (modes, hook registry), [`intents`] (intents,
//! trace), [`store`] (SQLite), [`events`], [`cli`] (the `roost` command line).

pub mod capability;
pub mod cli;
pub mod events;
pub mod intents;
pub mod llm;
pub mod modes;
pub mod plugins;
pub mod store;
pub mod task;
pub mod tools;
