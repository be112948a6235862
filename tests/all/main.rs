//! Every end-to-end test of Roost, as one test binary (one link of
//! wasmtime instead of one per suite), on the shared support crate
//! `roost-tests`: real components built from `plugins/` and
//! `tests/fixtures/`, the scripted provider, real SQLite files, real HTTP
//! servers on 127.0.0.1, the real `roost` binary.

// Test code: a panic is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp;
mod approvals;
mod bad_plugins;
mod capability_properties;
mod chat_commands;
mod checkpoints;
mod cli;
mod cli_frictions;
mod cli_options;
mod command_doors;
mod command_locks;
mod command_policy;
mod commands;
mod condensation;
mod conformance;
mod crash;
mod delegation;
mod docs;
mod egress;
mod engine;
mod first_run;
mod fixtures;
mod fs_tools;
mod fuzz_replay;
mod hooks;
mod host_escapes;
mod limits;
mod line_reader;
mod llm_providers;
mod mcp_client;
mod mcp_conformance;
mod mcp_packages;
mod mcp_serve;
mod one_door;
mod parallel;
mod plugin_install;
mod plugin_registry;
mod plugin_sources;
mod plugin_templates;
mod postgres;
mod sandbox;
mod sandbox_promises;
mod scene;
mod scope;
mod served;
mod server;
mod session;
mod session_service;
mod skills;
mod snapshots;
mod sse_server;
mod task_loop;
mod telemetry;
mod web_ui;
