//! Host services every plugin may use: logging and progress reports.

use crate::bindings::roost::plugin::host as wit_host;

pub use wit_host::LogLevel;

/// Log a line through the host, attributed to this plugin.
pub fn log(level: LogLevel, message: &str) {
    wit_host::log(level, message);
}

/// Log at info level.
pub fn info(message: &str) {
    log(LogLevel::Info, message);
}

/// Log at warn level.
pub fn warn(message: &str) {
    log(LogLevel::Warn, message);
}

/// Report progress of a long call; `fraction` is 0.0..=1.0 when known.
pub fn progress(message: &str, fraction: Option<f32>) {
    wit_host::progress(message, fraction);
}
