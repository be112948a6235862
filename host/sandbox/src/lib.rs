//! Roost's sandbox layer: runs tool plugins and mode hooks as WebAssembly
//! components whose file access is exactly what a call's grant allows. It
//! knows nothing of tasks, models or modes.
//!
//! [`capability`] turns grants into WASI (preopened directories, limits),
//! guards writes and is the one way the host touches a workspace;
//! [`plugins`] is the engine: component cache, linker, tool and hook calls
//! under deadlines; [`tool`] holds the types of the plugin contract.

// No unsafe code but in the modules that say why they need it.
#![deny(unsafe_code)]

pub mod capability;
pub mod plugins;
pub mod tool;
