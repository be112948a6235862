//! Roost's sandbox layer: runs tool plugins and mode hooks as WebAssembly
//! components whose file access is exactly what a call's grant allows. It
//! knows nothing of tasks, models or modes.
//!
//! [`capability`] turns grants into WASI (preopened directories, limits),
//! guards writes and is the one way the host touches a workspace;
//! [`plugins`] is the engine: component cache, linker, tool and hook calls
//! under deadlines; [`tool`] holds the types of the plugin contract;
//! [`secrets`] is where the host finds the secrets a grant may carry (to
//! plugins' requests, commands and MCP servers alike).

// No unsafe code but in the modules that say why they need it.
#![deny(unsafe_code)]

pub mod capability;
pub mod plugins;
pub mod secrets;
pub mod tool;
pub mod watch;
