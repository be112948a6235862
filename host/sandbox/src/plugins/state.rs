//! The data of one call's `Store`: its WASI context, its `wasi:http`
//! context and hooks (the network it was granted), the host interface the
//! plugin imports, and the limiter that records which limit was hit.

use std::collections::HashMap;
use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, StoreLimits};
use wasmtime_wasi::filesystem::Dir;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::tool_plugin::roost::plugin::{host, types};
use super::http::EgressHooks;
use crate::capability::wasi::Sandbox;
use crate::capability::{GUEST_WORKSPACE, Hidden};

/// Longest log line a plugin may send; longer ones are cut.
const MAX_LOG_BYTES: usize = 4096;
/// Log lines a single call may send before the host drops the rest.
const MAX_LOG_LINES: u32 = 1000;

/// Store data of one call.
pub struct CallState {
    pub(crate) plugin: String,
    pub(crate) wasi: WasiCtx,
    pub(crate) table: ResourceTable,
    pub(crate) http: WasiHttpCtx,
    pub(crate) http_hooks: EgressHooks,
    pub(crate) limiter: CallLimiter,
    pub(crate) readable: bool,
    /// The directories `get-directories` gives the guest (see
    /// `plugins::preopens`).
    pub(crate) mounts: Vec<(Dir, String)>,
    pub(crate) write_roots: Vec<String>,
    /// What `.rooignore` hides from this call (`None`: nothing).
    pub(crate) hidden: Option<Arc<Hidden>>,
    /// The workspace place of each open directory listing, to leave hidden
    /// entries out of it.
    pub(crate) listings: HashMap<u32, String>,
    log_lines: u32,
}

impl CallState {
    /// The state of one call of `plugin` in `sandbox`.
    pub(crate) fn new(
        plugin: &str,
        sandbox: Sandbox,
        http_hooks: EgressHooks,
        limiter: CallLimiter,
        readable: bool,
    ) -> Self {
        Self {
            plugin: plugin.to_owned(),
            wasi: sandbox.ctx,
            table: ResourceTable::new(),
            http: WasiHttpCtx::new(),
            http_hooks,
            limiter,
            readable,
            mounts: sandbox.mounts,
            write_roots: sandbox.write_roots,
            hidden: sandbox.hidden,
            listings: Default::default(),
            log_lines: 0,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_hooks,
        }
    }
}

impl types::Host for CallState {}

impl host::Host for CallState {
    fn log(&mut self, level: host::LogLevel, message: String) {
        self.log_lines += 1;
        if self.log_lines > MAX_LOG_LINES {
            return;
        }
        let redacted = redact_for_log(&message);
        let msg = cut(&redacted, MAX_LOG_BYTES);
        let plugin = self.plugin.as_str();
        match level {
            host::LogLevel::Trace => tracing::trace!(plugin, "{msg}"),
            host::LogLevel::Debug => tracing::debug!(plugin, "{msg}"),
            host::LogLevel::Info => tracing::info!(plugin, "{msg}"),
            host::LogLevel::Warn => tracing::warn!(plugin, "{msg}"),
            host::LogLevel::Error => tracing::error!(plugin, "{msg}"),
        }
    }

    fn progress(&mut self, message: String, fraction: Option<f32>) {
        let redacted = redact_for_log(&message);
        let msg = cut(&redacted, MAX_LOG_BYTES);
        tracing::debug!(plugin = self.plugin.as_str(), ?fraction, "progress: {msg}");
    }

    fn workspace(&mut self) -> host::WorkspaceInfo {
        host::WorkspaceInfo {
            root: GUEST_WORKSPACE.to_owned(),
            readable: self.readable,
            write_roots: self.write_roots.clone(),
        }
    }
}

/// Cut `s` to at most `max` bytes on a character boundary.
/// A plugin's log text with credentials redacted before the final cut (so
/// none is left half-shown), scanning a bounded prefix: what lies beyond
/// four times the log limit is never logged.
fn redact_for_log(message: &str) -> std::borrow::Cow<'_, str> {
    roost_secrets::redact(cut(message, 4 * MAX_LOG_BYTES))
}

pub(crate) fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Store limits plus a record of whether memory growth was refused, so a
/// trap after a refused growth can be reported as `limit-exceeded`.
pub struct CallLimiter {
    inner: StoreLimits,
    pub(crate) memory_refused: bool,
}

impl CallLimiter {
    pub(crate) fn new(inner: StoreLimits) -> Self {
        Self {
            inner,
            memory_refused: false,
        }
    }
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let ok = self.inner.memory_growing(current, desired, maximum)?;
        if !ok {
            self.memory_refused = true;
        }
        Ok(ok)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let ok = self.inner.table_growing(current, desired, maximum)?;
        if !ok {
            self.memory_refused = true;
        }
        Ok(ok)
    }

    fn instances(&self) -> usize {
        self.inner.instances()
    }

    fn tables(&self) -> usize {
        self.inner.tables()
    }

    fn memories(&self) -> usize {
        self.inner.memories()
    }
}
