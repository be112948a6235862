//! Roost's core: the agent task loop and everything it needs above the
//! sandbox layer (`roost-sandbox`). No command-line or HTTP code lives here.
//!
//! [`engine`] runs many tasks at once, addressable by id; front-ends drive
//! it through [`session`] (who may see a task, creating, following with
//! replay, answering, cancelling). A tool call goes down once: front-end → [`engine`] →
//! [`task`] (the loop) → [`call`] (the agent — services and tool
//! registry — and the one dispatch: gates, hooks, approval, write
//! session) → [`tools`] (the executor: host-native,
//! component, …) → the after stage, back in [`call`]. Below them: [`turn`]
//! (what the dispatch and the tools know of the task a call belongs to:
//! the services, its context, its run state), no module importing one
//! above it,
//! [`asks`] (what a task asks a person, the one ask path, the answers),
//! [`control`] (cancel and queued messages), [`llm`] (providers, stream
//! decoding, tool-call assembly: the `roost-llm` crate), [`modes`] (modes, hook registry),
//! [`skills`] (skill folders found, checked, watched; their components),
//! [`intents`] (intents, trace), [`store`] (SQLite or PostgreSQL: the
//! `roost-store` crate), [`commands`] and [`mcp`] (the OS sandbox for
//! processes, the MCP client hub: crates of their own), [`events`] (the event
//! stream and its log), and [`first_party`] (the components that ship
//! inside the binary); [`config`] is the deployment's config file (provider
//! profiles) every front-end reads; [`install`] holds third-party plugins:
//! manifests, grants, upgrades.

#![forbid(unsafe_code)]

pub mod asks;
pub mod call;
pub mod checkpoints;
pub use roost_commands as commands;
pub mod config;
pub mod control;
pub mod engine;
pub mod events;
pub mod first_party;
pub mod install;
pub mod intents;
pub use roost_llm as llm;
pub use roost_mcp as mcp;
pub mod modes;
pub mod session;
pub mod skills;
pub use roost_store as store;
pub mod task;
pub mod telemetry;
pub mod tools;
pub mod turn;
