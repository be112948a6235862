//! Roost host library: runs every tool as a WebAssembly component in a
//! sandbox whose file access is exactly what the call's grant allows.
//!
//! One module per concept: [`tools`] (specs, results, registry),
//! [`capability`] (grants → WASI sandbox), [`plugins`] (engine, component
//! cache, calls), [`cli`] (the `roost` command line).

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
