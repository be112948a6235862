//! Roost's core: the agent task loop and everything it needs above the
//! sandbox layer (`roost-sandbox`). No command-line or HTTP code lives here.
//!
//! [`engine`] runs many tasks at once, addressable by id; it is what
//! front-ends drive. One module per concept below it: [`task`] (the loop,
//! the tool registry with its executors, the call pipeline of gates and
//! execution, host-native tools, asks), [`asks`] (what a task asks a
//! person, and the answers), [`llm`] (providers, stream decoding, tool-call
//! assembly), [`tools`] (specs, results, reserved names, argument
//! validation), [`modes`] (modes, hook registry), [`intents`] (intents,
//! trace), [`store`] (SQLite), [`events`] (the event stream and its log), and
//! [`first_party`] (the components that ship inside the binary); [`config`]
//! is the deployment's config file (provider profiles) every front-end reads;
//! [`install`] holds third-party plugins: manifests, grants, upgrades.

pub mod asks;
pub mod config;
pub mod engine;
pub mod events;
pub mod first_party;
pub mod install;
pub mod intents;
pub mod llm;
pub mod modes;
pub mod store;
pub mod task;
pub mod tools;
