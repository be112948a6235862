//! Where a component's compiled code comes from, in order: the sealed
//! artifact the build precompiled (first-party components), the
//! component cache, or a compile (kept in the cache) — and the notice a
//! front-end gives before a compile, which takes seconds.

// wasmtime deserializes a sealed, verified artifact (`Component::deserialize`).
#![allow(unsafe_code)]

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use roost_engine_config::Sealed;
use wasmtime::component::{Component, InstancePre};

use super::PluginEngine;
use super::cache::CacheOutcome;
use super::error::PluginError;
use super::state::CallState;

/// Told when an engine really compiles a component (not one the build
/// precompiled or the cache holds): that takes seconds — a minute for a
/// JavaScript or Python component — and a front-end shows progress.
pub trait CompileWatch: Send + Sync {
    /// Compiling `component` (`bytes` long) starts.
    fn started(&self, component: &str, bytes: usize);
    /// It ended (`ok`: compiled; else the error is reported by the caller).
    fn finished(&self, component: &str, ok: bool);
}

impl PluginEngine {
    /// Tell `watch` about every compile from now on.
    pub fn watch_compiles(&self, watch: Arc<dyn CompileWatch>) {
        if let Ok(mut slot) = self.compile_watch.lock() {
            *slot = Some(watch);
        }
    }

    /// The compiled form of `bytes`: the build's sealed artifact when one
    /// verifies and suits this engine, else the cache's, else a compile
    /// (kept in the cache). Exposed for benchmarks and tests.
    pub fn compile(
        &self,
        name: &str,
        bytes: &[u8],
    ) -> Result<(Component, CacheOutcome), PluginError> {
        self.compile_known(name, bytes, &blake3::hash(bytes))
    }

    /// [`Self::compile`] for bytes whose BLAKE3 hash `id` the caller has.
    fn compile_known(
        &self,
        name: &str,
        bytes: &[u8],
        id: &blake3::Hash,
    ) -> Result<(Component, CacheOutcome), PluginError> {
        if let Some(c) = self.load_prebuilt(name, id) {
            return Ok((c, CacheOutcome::Prebuilt));
        }
        if let Some(c) = self.cache.as_ref().and_then(|c| c.load(&self.engine, id)) {
            return Ok((c, CacheOutcome::Hit));
        }
        let watch = self.compile_watch.lock().ok().and_then(|w| w.clone());
        if let Some(w) = &watch {
            w.started(name, bytes.len());
        }
        let compiled = Component::new(&self.engine, bytes);
        if let Some(w) = &watch {
            w.finished(name, compiled.is_ok());
        }
        let component = compiled.map_err(|e| PluginError::Compile {
            plugin: name.to_owned(),
            detail: format!("{e:#}"),
        })?;
        if let Some(cache) = &self.cache {
            cache.store_compiled(id, &component);
        }
        Ok((component, CacheOutcome::Compiled))
    }

    /// The build's precompiled artifact of the component `id`, if there is
    /// one whose seal verifies and which wasmtime accepts for this engine.
    fn load_prebuilt(&self, name: &str, id: &blake3::Hash) -> Option<Component> {
        let file = self.prebuilt.get(id)?;
        let sealed = match Sealed::open(file.as_ref(), id) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(
                    plugin = name,
                    "precompiled artifact unusable ({e}); compiling"
                );
                return None;
            }
        };
        // SAFETY: the artifact comes from this program's own build, which
        // precompiled it with `roost_engine_config::config()`, the config
        // this engine was created from; its seal binds it to these
        // component bytes and verified just now, so it is intact. wasmtime
        // checks its version, target, CPU features and tunables against
        // this engine and refuses a mismatch, which falls back to a compile.
        match unsafe { Component::deserialize(&self.engine, sealed.artifact()) } {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(
                    plugin = name,
                    "precompiled artifact does not suit this engine ({e:#}); compiling"
                );
                None
            }
        }
    }

    /// Check, compile (or load) and link a component of any Roost world,
    /// whose BLAKE3 hash is `id`; the caller checks the world's exports.
    pub(super) fn prepare(
        &self,
        name: &str,
        bytes: &[u8],
        id: &blake3::Hash,
    ) -> Result<(InstancePre<CallState>, CacheOutcome), PluginError> {
        super::engine::check_header(name, bytes)?;
        let (component, outcome) = self.compile_known(name, bytes, id)?;
        self.linker
            .instantiate_pre(&component)
            .map(|pre| (pre, outcome))
            .map_err(|e| PluginError::UnsatisfiedImport {
                plugin: name.to_owned(),
                detail: format!("{e:#}"),
            })
    }
}

/// A component's prepared instance (`P`: a tool plugin's or a hook's) and
/// where its code came from: made at load, or on first use, with the
/// component's bytes kept until then.
pub(super) struct Deferred<P> {
    ready: OnceLock<(P, CacheOutcome)>,
    bytes: Option<Cow<'static, [u8]>>,
}

impl<P> Deferred<P> {
    /// Prepared already.
    pub(super) fn ready(pre: P, outcome: CacheOutcome) -> Self {
        Self {
            ready: OnceLock::from((pre, outcome)),
            bytes: None,
        }
    }

    /// To be prepared from `bytes` on first use.
    pub(super) fn later(bytes: Cow<'static, [u8]>) -> Self {
        Self {
            ready: OnceLock::new(),
            bytes: Some(bytes),
        }
    }

    /// The bytes kept for a later preparation.
    pub(super) fn bytes(&self) -> Option<&[u8]> {
        self.bytes.as_deref()
    }

    /// Where its code came from; `None` until it is prepared.
    pub(super) fn outcome(&self) -> Option<CacheOutcome> {
        self.ready.get().map(|(_, outcome)| *outcome)
    }

    /// The prepared instance, made now by `prepare` from the kept bytes if
    /// it is not yet (`kind` and `name` name it in the error when no bytes
    /// were kept). Two first uses at once may both prepare; one is kept.
    pub(super) fn get(
        &self,
        kind: &str,
        name: &str,
        prepare: impl FnOnce(&[u8]) -> Result<(P, CacheOutcome), PluginError>,
    ) -> Result<&(P, CacheOutcome), PluginError> {
        if let Some(ready) = self.ready.get() {
            return Ok(ready);
        }
        let bytes = self.bytes().ok_or_else(|| {
            PluginError::Engine(format!("{kind} `{name}` was loaded without its component"))
        })?;
        let ready = prepare(bytes)?;
        Ok(self.ready.get_or_init(|| ready))
    }
}
