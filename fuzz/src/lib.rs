//! Roost's fuzz targets: one per kind of outside input, each a
//! `run(&[u8])` that drives the production parser (and what reads its
//! result) and asserts what must hold for any input. `fuzz_targets/`
//! wraps each for libFuzzer (`cargo fuzz run NAME`); `scripts/fuzz.sh`
//! runs them all. A crash is fixed where the bug is, with a regression
//! test in the ordinary suite.

pub mod acp;
pub mod command_policy;
pub mod command_policy_bash;
pub mod config_toml;
pub mod error_body;
pub mod http_api;
pub mod input;
pub mod intents;
pub mod mcp_client;
pub mod mcp_config;
pub mod mcp_server;
pub mod modes;
pub mod peer;
pub mod plugin_manifest;
pub mod registry;
pub mod scratch;
pub mod skill_manifest;
pub mod sse_stream;
pub mod tool_args;
